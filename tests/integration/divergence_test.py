"""Rollback on divergence (train.on_nonfinite: rollback, train.divergence): a non-finite loss or
a loss spike restores the last checkpoint and training goes on after the batches that led there,
bitwise as a run on data without those batches; a resume after a rollback is exact; one batch
poisoned for both of 2 processes rolls both back at the same step; max_rollbacks ends the run."""
import csv
import json
import os
import random

import common
import tensorboard_test
from common import run

# 1280 rows of a separable 8-feature problem, read in order in batches of 16 (80 a epoch); a
# checkpoint every 10 steps, so a divergence at step 40 rolls back to step 30.
CONFIG = """
run_dir: {run_dir}
seed: 3
model: {{type: mlp, args: {{sizes: [8, 32, 2]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "8"}}}}
  loader: {{batch_size: 16, workers: 0, shuffle: false}}
optimizer: {{type: sgd, lr: 0.1}}
train: {{max_length: 50 steps, log_every: 10 steps, threads: 1}}
checkpoint: {{every: 10 steps, keep_last: 100}}
"""
ROWS, BATCH = 1280, 16
BAD = range(39 * BATCH, 40 * BATCH)        # batch 40 (step 40 of one process)
SKIPPED = range(30 * BATCH, 40 * BATCH)    # what the rollback to step 30 skips


def rows():
    rng = random.Random(0)
    w = [rng.gauss(0, 1) for _ in range(8)]
    out = []
    for _ in range(ROWS):
        x = [rng.gauss(0, 1) for _ in range(8)]
        out.append((x, int(sum(a * b for a, b in zip(x, w)) > 0)))
    return out


def csv_text(data):
    return "".join(",".join(f"{v:.6f}" for v in x) + f",{y}\n" for x, y in data)


class Divergence(common.Case):
    def setUp(self):
        super().setUp()
        data = rows()
        # Non-finite: features so large that the first layer overflows to inf.
        overflow = [([3e38] * 8, y) if i in BAD else (x, y) for i, (x, y) in enumerate(data)]
        # A spike: inputs x 1000 with the labels flipped (a loss in the hundreds).
        spike = [([v * 1000 for v in x], 1 - y) if i in BAD else (x, y)
                 for i, (x, y) in enumerate(data)]
        clean_without = [r for i, r in enumerate(data) if i not in SKIPPED]
        self.data = {}
        for name, d in [("overflow", overflow), ("spike", spike), ("without", clean_without)]:
            self.data[name] = common.write(os.path.join(self.dir, name + ".csv"), csv_text(d))

    def train(self, name, data, *args):
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=self.data[data]))
        code, out = run(["train", cfg] + list(args))
        return code, out, run_dir

    def weights(self, run_dir):
        import torch
        return torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))

    def assert_same_weights(self, a, b):
        import torch
        wa, wb = self.weights(a), self.weights(b)
        self.assertEqual(list(wa), list(wb))
        for k in wa:
            self.assertTrue(torch.equal(wa[k], wb[k]), k)

    def summary(self, run_dir):
        with open(os.path.join(run_dir, "results", "summary.json")) as f:
            return json.load(f)

    def assert_logs_read_as_one_run(self, run_dir, rolled_back_to):
        """metrics.jsonl, metrics.csv and TensorBoard hold no step twice: the steps after the
        checkpoint that were abandoned left them, as a restart's do; the rollback stays as an
        event at the checkpoint's step; TensorBoard's second file starts after it."""
        events = common.read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        self.assertEqual([(e["step"], e["train/rollbacks"]) for e in events
                          if "train/rollbacks" in e], [(rolled_back_to, 1)])
        for key in ("train/loss", "train/lr"):
            steps = [e["step"] for e in events if key in e]
            self.assertEqual(steps, sorted(set(steps)), key)
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
        csv_steps = [int(r["step"]) for r in rows if r["train/loss"]]
        self.assertEqual(csv_steps, [e["step"] for e in events if "train/loss" in e])
        times = [e["time"] for e in events]
        self.assertEqual(times, sorted(times))  # one clock: no step back in time either
        files = tensorboard_test.event_files(run_dir)
        self.assertEqual(len(files), 2, files)
        first, second = (tensorboard_test.read_events(self, f) for f in files)
        starts = [e for e in second if e.WhichOneof("what") == "session_log"]
        self.assertEqual([e.step for e in starts], [rolled_back_to + 1])
        # What TensorBoard shows (the first file up to the checkpoint, as the START in the
        # second tells it, then the second) is metrics.jsonl.
        kept = [(t, s) for t, s, _, _ in tensorboard_test.scalars(first) if s <= rolled_back_to]
        seen = kept + [(t, s) for t, s, _, _ in tensorboard_test.scalars(second)]
        self.assertEqual(sorted(seen), sorted((k, e["step"]) for e in events for k in e
                                              if k not in ("step", "epoch", "samples", "time")))

    def test_a_non_finite_loss_rolls_back_and_equals_a_run_without_the_skipped_batches(self):
        code, out, rolled = self.train("rolled", "overflow", "--train.on_nonfinite", "rollback",
                                       "--log.trackers", "[console, jsonl, csv, tensorboard]")
        self.assertEqual(code, 0, out)
        self.assertIn("non-finite loss at step 40", out)
        self.assertIn("rolled back to step 30; training goes on from epoch 0 batch 40 "
                      "(10 batches of each process skipped)", out)
        self.assertEqual(self.summary(rolled)["rollbacks"], 1)
        self.assert_logs_read_as_one_run(rolled, 30)
        code, out = run(["report", rolled])  # the run's status says it; a chart of rollbacks
        self.assertEqual(code, 0, out)
        with open(os.path.join(rolled, "report.html")) as f:
            page = f.read()
        self.assertIn("finished (1 rollback)", page)
        self.assertIn("rollbacks", page)
        code, out, clean = self.train("clean", "without")
        self.assertEqual(code, 0, out)
        self.assert_same_weights(rolled, clean)
        # Without rollback the same data stops the run, as before.
        code, out, _ = self.train("stops", "overflow")
        self.assertEqual(code, 1, out)
        self.assertIn("non-finite loss at step 40", out)

    def test_a_spike_rolls_back_scales_the_lr_and_resumes_exactly_after(self):
        spike = ["--train.divergence.spike_factor", "5", "--train.divergence.window", "10"]
        code, out, rolled = self.train("rolled", "spike", *spike)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"loss spike at step 40: loss [0-9.]+ is above 5 x [0-9.]+, the "
                              r"mean of the last 10 steps: rolled back to step 30")
        # The warning that explains the rollback comes before the restore's own line.
        self.assertLess(out.index("loss spike at step 40"),
                        out.index("rolled back to " + os.path.join(rolled, "checkpoints")), out)
        code, out, clean = self.train("clean", "without")
        self.assert_same_weights(rolled, clean)
        # lr_factor: the rest of the run at half the lr; a resume after the rollback keeps it.
        code, out, halved = self.train("halved", "spike", *spike,
                                       "--train.divergence.lr_factor", "0.5")
        self.assertEqual(code, 0, out)
        self.assertIn("learning rates x 0.5", out)
        last = [e for e in common.read_jsonl(os.path.join(halved, "metrics.jsonl"))
                if "train/lr" in e][-1]
        self.assertAlmostEqual(last["train/lr"], 0.05)
        code, out, resumed = self.train(
            "resumed", "spike", *spike, "--train.divergence.lr_factor", "0.5",
            "--checkpoint.resume", os.path.join(halved, "checkpoints", "step-40"))
        self.assertEqual(code, 0, out)
        self.assert_same_weights(halved, resumed)
        # skip: the update of step 40 alone is skipped; stop: exit 1 naming the spike.
        code, out, _ = self.train("skipped", "spike", *spike, "--train.divergence.action", "skip")
        self.assertEqual(code, 0, out)
        self.assertIn("loss spike at step 40", out)
        self.assertIn("the update is skipped", out)
        code, out, _ = self.train("stopped", "spike", *spike, "--train.divergence.action", "stop")
        self.assertEqual(code, 1, out)
        self.assertIn("loss spike at step 40", out)

    def test_max_rollbacks_ends_the_run_with_exit_1(self):
        code, out, _ = self.train("limited", "overflow", "--train.on_nonfinite", "rollback",
                                  "--train.divergence.max_rollbacks", "0")
        self.assertEqual(code, 1, out)
        self.assertIn("non-finite loss at step 40", out)
        self.assertIn("train.divergence.max_rollbacks is 0", out)

    def test_rollback_needs_checkpoints(self):
        code, out, run_dir = self.train("nockpt", "overflow", "--train.on_nonfinite", "rollback",
                                        "--checkpoint.enabled", "false")
        self.assertEqual(code, 2, out)
        self.assertIn("train.on_nonfinite: rollback restores the run's last checkpoint, but "
                      "checkpoint.enabled is false", out)

    def test_two_processes_roll_back_together(self):
        # Each step of 2 processes reads 32 rows: the bad rows fall in step 20 on both ranks.
        run_dir = os.path.join(self.dir, "dp")
        cfg = common.write(os.path.join(self.dir, "dp.yaml"),
                           CONFIG.format(run_dir=run_dir, data=self.data["spike"]))
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29581", "--",
                         "train", cfg, "--train.divergence.spike_factor", "5",
                         "--train.divergence.window", "5", "--train.max_length", "30 steps"])
        self.assertEqual(code, 0, out)
        self.assertIn("loss spike at step 20", out)
        self.assertIn("rolled back to step 10", out)
        with open(os.path.join(run_dir, "logs", "rank-1.log")) as f:
            self.assertIn("rolled back to step 10", f.read())
        self.assertEqual(self.summary(run_dir)["rollbacks"], 1)


if __name__ == "__main__":
    common.main()
