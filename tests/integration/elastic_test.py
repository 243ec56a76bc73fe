"""Resume at another world size with the real binary: a checkpoint of W processes continues on W'
with the same global batch, ending where a run of W' processes from the start ends (1e-5
relative), its loss curve continuing."""
import gzip
import os

import common
from common import run, read_jsonl

# No dropout and SGD: the only difference between the runs is the order of float additions
# (which ranks sum which samples), which SGD keeps at rounding level.
CONFIG = """
run_dir: {run_dir}
seed: 11
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, args: {{momentum: 0.9}}}}
train: {{max_length: 30 steps, log_every: 5 steps, threads: 1, {batching}}}
checkpoint: {{enabled: true, every: 15 steps}}
"""


class Elastic(common.Case):
    port = 29620

    def config(self, name, batch=16, batching="global_batch_size: 96"):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:960]))  # 10 steps of 96 per epoch
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, data=data, batch=batch, batching=batching)), run_dir

    def train(self, world, cfg, *args):
        Elastic.port += 1
        cmd = ["train", cfg] + list(args)
        if world > 1:
            cmd = ["launch", "--nproc-per-node", str(world), "--master-port", str(Elastic.port),
                   "--"] + cmd
        code, out = run(cmd)
        self.assertEqual(code, 0, out)
        return out

    def check(self, before, after, zero="0", **config):
        cfg, ref = self.config(f"ref-{before}-{after}-{zero}", **config)
        self.train(after, cfg, "--distributed.zero", zero)
        cfg, run_dir = self.config(f"run-{before}-{after}-{zero}", **config)
        self.train(before, cfg, "--train.max_length", "15 steps", "--distributed.zero", zero)
        out = self.train(after, cfg, "--distributed.zero", zero)
        self.assertIn("resumed from", out)
        if before != after:
            self.assertIn(f"resuming on {after} process(es) a checkpoint written by {before}", out)
        self.assert_weights_close(self.final_weights(ref), self.final_weights(run_dir), 1e-5, 1e-6)
        # The loss curve continues: one event per 5 steps, never restarting, close to the
        # reference's after the resume.
        ea = [e for e in read_jsonl(os.path.join(ref, "metrics.jsonl")) if "train/loss" in e]
        eb = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "train/loss" in e]
        self.assertEqual([e["step"] for e in eb], [5, 10, 15, 20, 25, 30])
        self.assertEqual([e["samples"] for e in eb], [e["samples"] for e in ea])
        for x, y in zip(ea, eb):
            self.assertAlmostEqual(x["train/loss"], y["train/loss"], places=4)
        return out

    def test_two_processes_resume_on_one(self):
        self.check(2, 1)

    def test_one_process_resumes_on_two(self):
        self.check(1, 2)

    def test_two_processes_resume_on_three_with_sharded_optimizer_state(self):
        self.check(2, 3, zero="1")

    def test_the_accumulation_keeps_the_global_batch(self):
        # No global_batch_size: 2 x 32 x 1 per step; one process accumulates 2 x 32. The
        # reference is that layout from the start.
        cfg, ref = self.config("acc-ref", batch=32, batching="accumulation_steps: 2")
        self.train(1, cfg)
        cfg, run_dir = self.config("acc-run", batch=32, batching="accumulation_steps: 1")
        self.train(2, cfg, "--train.max_length", "15 steps")
        out = self.train(1, cfg)
        self.assertIn("(train.accumulation_steps 1 -> 2)", out)
        self.assert_weights_close(self.final_weights(ref), self.final_weights(run_dir), 1e-5, 1e-6)

    def test_a_global_batch_that_does_not_split_is_refused_before_anything_changes(self):
        cfg, run_dir = self.config("odd", batch=32, batching="accumulation_steps: 1")
        self.train(2, cfg, "--train.max_length", "15 steps")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            before = f.read()
        Elastic.port += 1
        code, out = run(["launch", "--nproc-per-node", "3", "--master-port", str(Elastic.port),
                         "--", "train", cfg])
        self.assertNotEqual(code, 0, out)
        self.assertIn("its global batch of 64 samples per step", out)
        self.assertIn("resume on 1, 2, 4", out)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            self.assertEqual(f.read(), before)


if __name__ == "__main__":
    common.main()
