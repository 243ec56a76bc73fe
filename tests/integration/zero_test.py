"""ZeRO stage 1 with the real binary: sharded optimizer state trains exactly as plain data
parallelism, each rank holds ~1/W of the state, checkpoints hold one partition per rank, and
resume (same world size, zero switched on or off, after a rank killed mid-save) is exact."""
import glob
import gzip
import os
import re
import signal
import subprocess
import time

import torch

import common
from common import run

CONFIG = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 48, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 32, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003, args: {{weight_decay: 0.01}}}}
train: {{max_length: {steps} steps, log_every: 5 steps, threads: 1}}
checkpoint: {{enabled: true, every: null}}
"""


class Zero(common.Case):
    def config(self, name, steps=30):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                lines = f.readlines()[:960]
            common.write(data, "".join(lines))
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=data, steps=steps))
        return cfg, run_dir

    def launch(self, world, port, cfg, *args):
        code, out = run(["launch", "--nproc-per-node", str(world), "--master-port", str(port),
                         "--", "train", cfg] + list(args))
        self.assertEqual(code, 0, out)
        return out

    def state_bytes(self, run_dir, world):
        """Each rank's optimizer-state bytes, from its log."""
        out = []
        for r in range(world):
            log = os.path.join(run_dir, "train.log" if r == 0 else f"logs/train-rank-{r}.log")
            with open(log) as f:
                found = re.findall(rf"optimizer state on rank {r}: (\d+) bytes", f.read())
            self.assertTrue(found, log)
            out.append(int(found[-1]))
        return out

    def assert_equal_weights(self, a, b):
        self.assertEqual(list(a), list(b))
        for k in a:
            # The owner of each parameter steps it with the same kernel on the same reduced
            # gradient as every rank does without sharding: equal bits are expected; the issue's
            # bar is 1e-6 relative.
            self.assertTrue(torch.allclose(a[k], b[k], rtol=1e-6, atol=0),
                            f"{k}: max difference {(a[k] - b[k]).abs().max().item()}")

    def test_zero1_trains_as_plain_data_parallel_with_a_partition_per_rank(self):
        for world, port in ((2, 29581), (3, 29583)):
            with self.subTest(world=world):
                cfg, plain = self.config(f"plain{world}")
                self.launch(world, port, cfg)
                cfg, zero = self.config(f"zero{world}")
                self.launch(world, port + 1, cfg, "--distributed.zero", "1")
                self.assert_equal_weights(self.final_weights(plain), self.final_weights(zero))

                whole = self.state_bytes(plain, world)
                parts = self.state_bytes(zero, world)
                self.assertEqual(len(set(whole)), 1, whole)  # plain: every rank holds it all
                self.assertEqual(sum(parts), whole[0], parts)
                largest = 2 * 4 * 64 * 48  # Adam's two moments of the largest weight
                for p in parts:
                    self.assertLessEqual(abs(p - whole[0] / world), largest, parts)

                step = os.path.join(zero, "checkpoints", "last")
                self.assertFalse(os.path.exists(os.path.join(step, "optimizer.pt")))
                indices = []
                for r in range(world):
                    part = torch.load(os.path.join(step, f"optimizer-rank-{r}.pt"))
                    self.assertEqual(part["type"], "adamw")
                    indices += [int(i) for i in part["state"]]
                self.assertEqual(sorted(indices), list(range(6)))  # each parameter once
                with open(os.path.join(step, "trainer_state.json")) as f:
                    self.assertIn('"zero": 1', f.read())

    def test_zero2_trains_as_plain_data_parallel_with_clipping_and_accumulation(self):
        for world, port, accumulation in ((2, 29592, 1), (3, 29594, 1), (2, 29600, 2)):
            with self.subTest(world=world, accumulation=accumulation):
                clip = ["--train.clip_grad_norm", "0.5", "--train.accumulation_steps",
                        str(accumulation)]
                cfg, plain = self.config(f"plain2-{world}-{accumulation}")
                self.launch(world, port, cfg, *clip)
                cfg, zero = self.config(f"zero2-{world}-{accumulation}")
                out = self.launch(world, port + 1, cfg, "--distributed.zero", "2", *clip)
                # Gloo's reduce may add the ranks' gradients in another order than its
                # all-reduce, and the clipping norm is summed per rank: rounding only, which
                # Adam's normalisation carries into the weights (measured: 2e-7 with the
                # Fisher-Yates data order, 1.1e-6 with the Feistel one, accumulation 2).
                a, b = self.final_weights(plain), self.final_weights(zero)
                for k in a:
                    worst = ((a[k] - b[k]).abs().max() / a[k].abs().max()).item()
                    self.assertLess(worst, 3e-6, k)
                whole, parts = self.state_bytes(plain, world), self.state_bytes(zero, world)
                self.assertEqual(sum(parts), whole[0], parts)
                with open(os.path.join(zero, "checkpoints", "last", "trainer_state.json")) as f:
                    self.assertIn('"zero": 2', f.read())

    def test_zero2_resume_is_bitwise_exact(self):
        cfg, ref = self.config("zero2-ref")
        self.launch(2, 29597, cfg, "--distributed.zero", "2")
        cfg, run_dir = self.config("zero2-resumed")
        self.launch(2, 29598, cfg, "--distributed.zero", "2", "--train.max_length", "15 steps")
        out = self.launch(2, 29599, cfg, "--distributed.zero", "2")
        self.assertIn("resumed from", out)
        a, b = self.final_weights(ref), self.final_weights(run_dir)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)

    def test_zero2_refuses_bf16_true_naming_the_keys(self):
        cfg, _ = self.config("zero2-bf16")
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29596", "--",
                         "train", cfg, "--distributed.zero", "2", "--train.precision", "bf16-true"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("train.precision: bf16-true does not work with distributed.zero: 2", out)
        self.assertIn("fp32 or bf16-mixed", out)
        self.assertIn("distributed.zero: 1", out)

    def test_zero_switched_on_and_off_on_resume_continues_exactly(self):
        cfg, ref = self.config("ref", steps=40)
        self.launch(2, 29585, cfg)
        cfg, run_dir = self.config("switched", steps=20)
        self.launch(2, 29586, cfg)
        out = self.launch(2, 29587, cfg, "--train.max_length", "30 steps", "--distributed.zero", "1")
        self.assertIn("resumed from", out)
        self.assertTrue(os.path.exists(os.path.join(run_dir, "checkpoints", "step-30",
                                                    "optimizer-rank-1.pt")))
        out = self.launch(2, 29588, cfg, "--train.max_length", "40 steps")  # zero back to 0
        self.assertIn("resumed from", out)
        a, b = self.final_weights(ref), self.final_weights(run_dir)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)

    def checkpoints_are_complete(self, run_dir):
        """The names of the step folders, each checked against its manifest."""
        steps = glob.glob(os.path.join(run_dir, "checkpoints", "step-*"))
        for step in steps:
            self.assertEqual(common.manifest_problems(step), [], step)
        return sorted(os.path.basename(s) for s in steps)

    def test_a_rank_killed_mid_save_leaves_the_previous_checkpoint_and_resume_is_exact(self):
        cfg, run_dir = self.config("killed", steps=40)
        args = ["train", cfg, "--distributed.zero", "1", "--checkpoint.every", "10 steps",
                "--distributed.timeout", "20"]
        env = dict(os.environ, UNITRAIN_TEST_CHECKPOINT_PAUSE_MS="300")
        p = subprocess.Popen([common.BIN, "launch", "--nproc-per-node", "2", "--master-port",
                              "29589", "--grace-period", "5", "--"] + args,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        ckpts = os.path.join(run_dir, "checkpoints")
        self.assertTrue(common.wait_for(lambda: os.path.exists(os.path.join(ckpts, "step-10"))))
        # Rank 0 is writing the next one (paused between its files): kill it there.
        self.assertTrue(common.wait_for(lambda: glob.glob(os.path.join(ckpts, ".partial-step-20-*"))))
        rank0 = common.pid_of_rank(0, cfg)
        self.assertIsNotNone(rank0)
        os.kill(rank0, signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 128 + 9, out)  # the killed rank's, as a shell says it
        self.assertEqual(self.checkpoints_are_complete(run_dir), ["step-10"])

        out = self.launch(2, 29590, *args[1:])
        self.assertIn("resumed from", out)
        self.assertIn("step-10", out)
        cfg_ref, ref = self.config("ref-killed", steps=40)
        self.launch(2, 29591, cfg_ref, "--distributed.zero", "1")
        a, b = self.final_weights(ref), self.final_weights(run_dir)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)


if __name__ == "__main__":
    common.main()
