"""A restart across two machines with the real binary: `unitrain launch --nnodes 2` in two network
namespaces, a worker killed on machine 1, then one on machine 0; both launchers restart their
workers together, each round meets in its own keys, and the run ends bitwise where an
uninterrupted run ends."""
import os
import signal
import time

import torch

import common
from common import run

# A small transformer under bf16-mixed with ZeRO 1 (each rank saves its optimizer partition), as
# users of several machines train; a checkpoint every 5 steps.
CONFIG = """
run_dir: {run_dir}
seed: 7
model:
  type: transformer_lm
  args: {{vocab: 50, d_model: 32, layers: 2, heads: 4, seq_len: 16, dropout: 0.1}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 16}}}}
  loader: {{batch_size: 4, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003, args: {{weight_decay: 0.01}}}}
train: {{max_length: 30 steps, log_every: 5 steps, threads: 1, precision: bf16-mixed}}
checkpoint: {{enabled: true, every: 5 steps}}
distributed: {{zero: 1, timeout: 20}}
"""

PORT = 29641


class RestartAcrossMachines(common.Case):
    def config(self, name):
        data = os.path.join(self.dir, "tokens.bin")
        if not os.path.exists(data):
            g = torch.Generator().manual_seed(0)
            ids = torch.randint(50, (8000,), generator=g, dtype=torch.int32).numpy().astype("<u2")
            with open(data, "wb") as f:
                f.write(ids.tobytes())
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"),
                            CONFIG.format(run_dir=run_dir, data=data)), run_dir

    def kill_rank_once_saved(self, rank, cfg, run_dir, step):
        """SIGKILL of worker `rank` once checkpoint `step` is complete; its pid."""
        ckpt = os.path.join(run_dir, "checkpoints", f"step-{step}")
        self.assertTrue(common.wait_for(lambda: os.path.exists(ckpt), timeout=120),
                        f"no checkpoint of step {step} appeared")
        pid = common.pid_of_rank(rank, cfg)
        self.assertIsNotNone(pid)
        os.kill(pid, signal.SIGKILL)
        return pid

    def test_a_worker_killed_on_each_machine_restarts_both_and_ends_as_uninterrupted(self):
        cfg, run_dir = self.config("restarted")
        t0 = time.time()
        with common.Machines(self, "10.78.0") as machines:
            procs = [machines.launch(node, [
                "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                "--master-addr", machines.addrs[0], "--master-port", str(PORT),
                "--max-restarts", "2", "--grace-period", "5", "--", "train", cfg] +
                common.slow_steps(150)) for node in (0, 1)]
            try:
                # Round 0: rank 2 on machine 1 after step 10; round 1: rank 0 (machine 0) after
                # step 20.
                self.kill_rank_once_saved(2, cfg, run_dir, 10)
                self.kill_rank_once_saved(0, cfg, run_dir, 20)
                outs = [p.communicate(timeout=300)[0] for p in procs]
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
        took = time.time() - t0
        for node, (p, out) in enumerate(zip(procs, outs)):
            self.assertEqual(p.returncode, 0, f"machine {node}:\n{out}")
            self.assertIn("restarting the workers (restart 1 of 2) after rank 2 on machine 1 was "
                          "killed by signal 9", out)
            self.assertIn("restarting the workers (restart 2 of 2) after rank 0 on machine 0 was "
                          "killed by signal 9", out)
            self.assertNotIn("could not connect", out)
        # Machine 0's launcher stopped its workers for machine 1's failure, and the other way.
        self.assertIn("the round was ended elsewhere", outs[0])
        self.assertIn("the round was ended elsewhere", outs[1])
        with open(os.path.join(run_dir, "train.log")) as f:
            log = f.read()
        self.assertIn("resumed from", log)
        self.assertLess(took, 150, outs)

        # The same 4 workers on one machine, never stopped: bitwise the same weights.
        ref_cfg, ref_dir = self.config("uninterrupted")
        code, out = run(["launch", "--nproc-per-node", "4", "--", "train", ref_cfg])
        self.assertEqual(code, 0, out)
        self.assert_weights_equal(self.final_weights(ref_dir),
                                  self.final_weights(run_dir, "--plugin", common.test_plugin()))


if __name__ == "__main__":
    common.main()
