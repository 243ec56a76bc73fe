"""Defaults that stay fast on a machine other programs use: threads from the CPUs left free,
small data read inline, checkpoints no more often than they are worth."""
import glob
import os
import subprocess
import time

import common
from common import run

DIGITS = """
name: defaults
run_dir: {run_dir}
seed: 1
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 64}}
optimizer: {{type: adam, lr: 1.0e-3}}
train: {{max_length: {epochs} epochs, log_every: 1 epoch}}
checkpoint: {{keep_last: 0}}
"""


class BusyDefaults(common.Case):
    def config(self, name="run", epochs=3):
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"),
                            DIGITS.format(run_dir=run_dir, data=common.DIGITS, epochs=epochs)), run_dir

    def steps_saved(self, run_dir):
        return sorted(int(os.path.basename(d)[5:])
                      for d in glob.glob(os.path.join(run_dir, "checkpoints", "step-*")))

    def test_auto_threads_keep_their_count_and_sleep_beside_other_programs(self):
        cfg, _ = self.config()
        cpus = len(os.sched_getaffinity(0))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
                for _ in range(max(1, len(os.sched_getaffinity(0)) - 1))]
        try:
            time.sleep(0.5)
            p = subprocess.run([common.BIN, "train", cfg], capture_output=True, text=True, env=env)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        # The count is the CPUs this process may use, whatever their load (it is part of the
        # arithmetic); the waits follow the load.
        self.assertIn(f"threads {cpus} (auto: {cpus} CPUs usable by this process", out)
        self.assertIn("kept for the whole run, whatever the load", out)
        self.assertIn(f"; precision fp32, threads {cpus}, reader threads 0", out)
        if cpus > 1:  # the team's place follows the load
            self.assertIn("placement: follows other programs' load (they kept ", out)
            self.assertIn(f"sleeping while they wait); the count stays {cpus}", out)
        # A placement of the environment's own is the user's choice, kept (libgomp binds the
        # first thread to one CPU: two threads given).
        p = subprocess.run([common.BIN, "train", cfg, "--checkpoint.resume", "none",
                            "--train.threads", "2"],
                           capture_output=True, text=True, env=dict(env, OMP_PROC_BIND="true"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        if cpus > 1:
            self.assertIn("placement: as the OpenMP runtime's settings say (OMP_PROC_BIND=true "
                          "is set)", p.stdout + p.stderr)
        # A number, or OMP_NUM_THREADS, is kept as given.
        code, out = run(["train", cfg, "--train.threads", "2", "--checkpoint.resume", "none"])
        self.assertEqual(code, 0, out)
        self.assertIn("threads 2 (train.threads)", out)
        code, out = run(["train", cfg, "--checkpoint.resume", "none"], env={"OMP_NUM_THREADS": "1"})
        self.assertEqual(code, 0, out)
        self.assertIn("threads 1 (OMP_NUM_THREADS=1; train.threads: auto follows it)", out)

    def test_a_small_npz_is_read_inline(self):
        import numpy
        rng = numpy.random.default_rng(0)
        path = os.path.join(self.dir, "small.npz")
        numpy.savez(path, x=rng.standard_normal((442, 10)).astype(numpy.float32),
                    y=rng.standard_normal((442, 1)).astype(numpy.float32))
        cfg = common.write(os.path.join(self.dir, "npz.yaml"), f"""
run_dir: {os.path.join(self.dir, "npz")}
model: {{type: mlp, args: {{sizes: [10, 16, 1]}}}}
objective: {{losses: [{{type: mse}}]}}
data:
  train: {{type: npz, args: {{path: {path}}}}}
  loader: {{batch_size: 32}}
train: {{max_length: 2 epochs}}
""")
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        self.assertIn("reader threads 0,", out)

    def test_checkpoints_every_auto_save_when_it_is_worth_it(self):
        # Epochs of a fraction of a second: only the final save by default...
        cfg, run_dir = self.config(epochs=4)
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.steps_saved(run_dir), [116])  # 29 steps an epoch
        # ...every epoch once the least time between saves has passed (0 s here)...
        cfg, run_dir = self.config("min0", epochs=4)
        code, out = run(["train", cfg, "--checkpoint.auto_min_seconds", "0"])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.steps_saved(run_dir), [29, 58, 87, 116])
        # ...and an explicit period exactly.
        cfg, run_dir = self.config("explicit", epochs=4)
        code, out = run(["train", cfg, "--checkpoint.every", "2 epochs"])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.steps_saved(run_dir), [58, 116])

    def test_a_long_epoch_is_saved_inside_it(self):
        # 40 ms a step, 29 steps an epoch: a save at least every 0.3 s lands inside epochs.
        cfg, run_dir = self.config("long", epochs=1)
        code, out = run(["train", cfg, "--checkpoint.auto_min_seconds", "0.1",
                         "--checkpoint.auto_max_seconds", "0.3"] + common.slow_steps(40))
        self.assertEqual(code, 0, out)
        inside = [s for s in self.steps_saved(run_dir) if s % 29 != 0]
        self.assertGreaterEqual(len(inside), 2, self.steps_saved(run_dir))
        for step_dir in glob.glob(os.path.join(run_dir, "checkpoints", "step-*")):
            self.assertEqual(common.manifest_problems(step_dir), [], step_dir)

    def test_ranks_agree_on_rank_zeros_clock(self):
        cfg, run_dir = self.config("ranks", epochs=3)
        code, out = run(["launch", "--nproc-per-node", "2", "--", "train", cfg,
                         "--checkpoint.auto_min_seconds", "0", "--distributed.timeout", "60"])
        self.assertEqual(code, 0, out)
        # 1797 rows over 2 ranks of 64: 15 steps an epoch.
        self.assertEqual(self.steps_saved(run_dir), [15, 30, 45])


if __name__ == "__main__":
    common.main()
