"""Training runs of the real binary on real data, and the config/list subcommands."""
import csv
import json
import os
import common
from common import run, write, read_jsonl


class Train(common.Case):
    def test_digits_mlp_reaches_known_accuracy(self):
        run_dir = os.path.join(self.dir, "digits")
        code, out = run(["train", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                         "--run_dir", run_dir], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        vals = [e for e in events if "val/acc" in e]
        self.assertEqual(len(vals), 20, out)
        self.assertGreaterEqual(vals[-1]["val/acc"], 0.95, out)
        self.assertLess(vals[-1]["val/loss"], vals[0]["val/loss"])
        trains = [e for e in events if "train/loss" in e]
        for key in ("step", "epoch", "samples", "time", "train/lr", "train/acc", "train/top3"):
            self.assertIn(key, trains[-1])
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(events))
        self.assertIn("val/acc", rows[0])
        self.assertTrue(os.path.exists(os.path.join(run_dir, "config.yaml")))
        with open(os.path.join(run_dir, "train.log")) as f:
            self.assertIn("BLAS", f.read())

    def test_same_seed_same_metrics_whatever_the_workers(self):
        logs = []
        for workers in ("0", "3"):
            run_dir = os.path.join(self.dir, "w" + workers)
            code, out = run(["train", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                             "--run_dir", run_dir, "--train.max_length", "3 epochs",
                             "--data.loader.workers", workers,
                             # the same intra-op threads in both runs (auto follows the load,
                             # and reductions round by thread count)
                             "--train.threads", "2"])
            self.assertEqual(code, 0, out)
            logs.append([{k: v for k, v in e.items() if k != "time"}
                         for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))])
        self.assertEqual(logs[0], logs[1])

    def test_test_mode_runs_one_batch(self):
        run_dir = os.path.join(self.dir, "tm")
        code, out = run(["train", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                         "--run_dir", run_dir, "--train.test_mode", "true"])
        self.assertEqual(code, 0, out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        self.assertEqual(max(e["step"] for e in events), 1)

    def test_config_prints_resolved_config_with_precedence(self):
        code, out = run(["config", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                         "--optimizer.lr", "0.5", "--set", "train.log_every=3st"])
        self.assertEqual(code, 0, out)
        self.assertIn("lr: 0.5", out)                  # command line beats YAML (2e-3)
        self.assertIn("log_every: 3 steps", out)       # canonical duration
        self.assertIn("accumulation_steps: 1", out)    # default filled in
        self.assertIn("run_dir: runs/digits-mlp", out)  # ${name} interpolated

    def test_list_shows_every_kind(self):
        code, out = run(["list"])
        self.assertEqual(code, 0, out)
        for word in ("model:", "mlp", "cnn", "transformer_lm", "torchscript", "dataset:", "csv",
                     "idx", "text_chars", "synthetic", "loss:", "cross_entropy", "metric:",
                     "perplexity", "optimizer:", "lbfgs", "scheduler:", "one_cycle",
                     "reduce_on_plateau", "regularizer:"):
            self.assertIn(word, out)

    def test_config_reference_in_docs_is_up_to_date(self):
        code, out = run(["config", "--reference"])
        self.assertEqual(code, 0, out)
        with open(os.path.join(common.SOURCE, "docs/config.md")) as f:
            self.assertEqual(f.read(), out, "docs/config.md is stale: regenerate it with "
                             "`build/unitrain config --reference > docs/config.md`")


if __name__ == "__main__":
    common.main()
