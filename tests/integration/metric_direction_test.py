"""Monitored metrics improve the way they declare: a plugin metric `wer` registered as
lower-is-better picks the lowest value as `best` and early-stops on that side; `cer`, registered
without a direction, is refused at start unless the mode is set; a monitored name one typo from
a declared one is refused at start with the name it was probably meant to be."""
import os

import common
from common import run, read_jsonl

CONFIG = f"""
name: direction
seed: 5
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective:
  losses: [{{type: cross_entropy, prediction: logits, target: y}}]
  metrics: [{{type: wer}}, {{type: cer}}, {{type: accuracy, name: acc}}]
data:
  train: {{type: csv, args: {{path: {common.DIGITS}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: 64, shuffle: true, workers: 1}}
optimizer: {{type: sgd, lr: 0.05}}
train:
  max_length: 3 epochs
  log_every: 5 steps
  val_every: 5 steps
checkpoint: {{every: 5 steps, keep_last: 0}}
"""


def plugin():
    """The test plugin with the metrics wer and cer (tests/metrics/error_rate_metric_plugin.cpp)."""
    return os.path.join(common.BUILD, "tests", "libunitrain_test_metrics.so")


def stops_after(values, lower_is_better, patience):
    """How many validations EarlyStopping runs before it stops (len(values) if it does not)."""
    best, stalls = None, 0
    for i, v in enumerate(values):
        if best is None or (v < best if lower_is_better else v > best):
            best, stalls = v, 0
        else:
            stalls += 1
            if stalls >= patience:
                return i + 1
    return len(values)


class MetricDirectionTest(common.Case):
    def train(self, name, *args):
        cfg = common.write(os.path.join(self.dir, "run.yaml"), CONFIG)
        run_dir = os.path.join(self.dir, name)
        code, out = run(["train", cfg, "--plugin", plugin(), "--run_dir", run_dir] + list(args))
        return code, out, run_dir

    def val_events(self, run_dir):
        return [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/wer" in e]

    def test_best_is_the_lowest_of_a_lower_is_better_plugin_metric(self):
        code, out, run_dir = self.train("best", "--checkpoint.best.metric", "val/wer")
        self.assertEqual(code, 0, out)
        events = self.val_events(run_dir)
        lowest = min(events, key=lambda e: (e["val/wer"], e["step"]))
        self.assertLess(lowest["val/wer"], events[0]["val/wer"])  # it did fall
        best = os.path.realpath(os.path.join(run_dir, "checkpoints", "best"))
        self.assertEqual(os.path.basename(best), f"step-{lowest['step']}")

    def test_early_stopping_watches_the_declared_side(self):
        code, out, run_dir = self.train("early", "--early_stopping.metric", "val/wer",
                                        "--early_stopping.patience", "2")
        self.assertEqual(code, 0, out)
        values = [e["val/wer"] for e in self.val_events(run_dir)]
        # A run that never stops has 3 epochs of validations: compare with that run's values.
        code, out, full_dir = self.train("full")
        self.assertEqual(code, 0, out)
        full = [e["val/wer"] for e in self.val_events(full_dir)]
        expected = stops_after(full, lower_is_better=True, patience=2)
        self.assertNotEqual(expected, stops_after(full, lower_is_better=False, patience=2))
        self.assertEqual(len(values), expected, (values, full))

    def test_a_metric_without_a_direction_needs_a_mode(self):
        for key, mode_key in (("checkpoint.best.metric", "checkpoint.best.mode"),
                              ("early_stopping.metric", "early_stopping.mode")):
            code, out, run_dir = self.train("cer-" + key, "--" + key, "val/cer")
            self.assertEqual(code, 2, out)
            self.assertIn(f"{key}: val/cer has no declared direction", out)
            self.assertIn(f"set {mode_key}: min or max", out)
            self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints", "step-5")), out)
            # The same run folder, with the mode set: it trains.
            code, out, _ = self.train("cer-" + key, "--" + key, "val/cer", "--" + mode_key, "min",
                                      "--train.max_length", "10 steps")
            self.assertEqual(code, 0, out)

    def test_a_typo_in_a_monitored_metric_is_caught_at_start_with_a_suggestion(self):
        for key in ("checkpoint.best.metric", "early_stopping.metric"):
            code, out, run_dir = self.train("typo-" + key, "--" + key, "val/accc")
            self.assertEqual(code, 2, out)
            self.assertIn(f"{key}: val/accc is not a metric the module declares; did you mean "
                          "val/acc?", out)
            self.assertNotIn("step 5 |", out)  # before anything trained
            self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)
        # With the mode given the direction needs no declaration, but a name one edit from a
        # declared one that nothing declares is still a typo (it used to train an epoch first).
        for key, mode in (("checkpoint.best", "max"), ("early_stopping", "max")):
            code, out, run_dir = self.train("typo-mode-" + key, f"--{key}.metric", "val/accc",
                                            f"--{key}.mode", mode)
            self.assertEqual(code, 2, out)
            self.assertIn(f"{key}.metric: val/accc is not a metric the module declares; did you "
                          "mean val/acc?", out)
            self.assertNotIn("step 5 |", out)
            self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)


if __name__ == "__main__":
    common.main()
