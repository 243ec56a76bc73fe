"""Data bigger than memory with the real binary: a 30 GB token file (sparse: 2 M real ids at its
start, then holes that cost no disk) trains with a shuffle and a validation split, with a peak
memory close to the same run's on a 1 MB file (no scan of the ids, no list of the 250 M
windows), and a run killed with SIGKILL resumes bitwise equal to one that was never stopped."""
import os
import signal
import subprocess

import common
from common import wait_for

BIG = 30 << 30  # bytes: more than this machine's 24 GB of memory

CONFIG = """
run_dir: {run_dir}
seed: 3
model:
  type: transformer_lm
  args: {{vocab: 256, d_model: 32, layers: 1, heads: 2, seq_len: 64, dropout: 0.0}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, dtype: uint16, seq_len: 64, vocab_size: 256}}}}
  validation_ratio: 0.00000001
  loader: {{batch_size: 8, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003}}
train: {{max_length: 12 steps, log_every: 2 steps, val_every: 6 steps, threads: 1}}
checkpoint: {{every: 4 steps}}
"""


# Written by a child process: this one stays small (no numpy or torch imported before the
# measurements), because a child's ru_maxrss counts the image it was forked from.
WRITE_TOKENS = """
import os, sys
import numpy as np
path, size = sys.argv[1], int(sys.argv[2])
ids = np.random.default_rng(0).integers(0, 256, size=min(size // 2, 2 << 20))
ids.astype(np.uint16).tofile(path)
os.truncate(path, size)
"""


def peak_rss_mb(args):
    """Runs `unitrain args...` and returns (exit code, output, its peak RSS in MB)."""
    p = subprocess.Popen([common.BIN] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, out, usage.ru_maxrss / 1024  # KiB on Linux


class BigData(common.Case):
    def token_file(self, name, size):
        """2 M ids below 256 (seeded), then zeros up to `size` bytes as a hole."""
        path = os.path.join(self.dir, name)
        subprocess.run(["/usr/bin/python3", "-c", WRITE_TOKENS, path, str(size)], check=True)
        return path

    def config(self, name, data):
        run_dir = os.path.join(self.dir, name)
        return common.write(run_dir + ".yaml", CONFIG.format(run_dir=run_dir, data=data)), run_dir

    def command(self, cfg):
        return ["train", cfg] + common.slow_steps(250)  # time for a kill between saves

    def test_a_file_larger_than_memory_trains_in_small_memory_and_resumes_exactly(self):
        big = self.token_file("big.bin", BIG)
        self.assertGreater(BIG, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        small_cfg, _ = self.config("small", self.token_file("small.bin", 1 << 20))
        code, out, small_mb = peak_rss_mb(self.command(small_cfg))
        self.assertEqual(code, 0, out)
        self.assertLess(small_mb, 1000, out)  # the binary's own, not this process's image

        cfg, run_dir = self.config("whole", big)
        code, out, big_mb = peak_rss_mb(self.command(cfg))
        self.assertEqual(code, 0, out)
        windows = (BIG // 2 - 1 - 64) // 64 + 1
        held = max(1, round(1e-8 * windows))
        self.assertIn(f"{windows - held} train, {held} val", out)
        # A list of the windows alone would be 1.9 GB; the file 30 GB.
        self.assertLess(big_mb, small_mb + 150, f"peak RSS {big_mb:.0f} MB, 1 MB file {small_mb:.0f} MB")
        whole = self.final_weights(run_dir, "--plugin", common.test_plugin())

        cfg, run_dir = self.config("killed", big)
        p = subprocess.Popen([common.BIN] + self.command(cfg), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        step8 = os.path.join(run_dir, "checkpoints", "step-8", "MANIFEST.json")
        self.assertTrue(wait_for(lambda: os.path.exists(step8)))
        p.send_signal(signal.SIGKILL)
        p.wait()
        code, out = common.run(self.command(cfg))
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from " + os.path.join(run_dir, "checkpoints", "step-"), out)
        resumed = self.final_weights(run_dir, "--plugin", common.test_plugin())
        import torch  # after the measurements (see WRITE_TOKENS)
        self.assertEqual(list(whole), list(resumed))
        for k in whole:
            self.assertTrue(torch.equal(whole[k], resumed[k]), k)  # exact resume: bitwise


if __name__ == "__main__":
    common.main()
