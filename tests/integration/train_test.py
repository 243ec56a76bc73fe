"""Training runs of the real binary on real data, and the config/list subcommands."""
import csv
import json
import os
import re
import shutil
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

    def test_iris_species_names_as_the_csv_target(self):
        # scikit-learn's iris with the species written as names: train/val files, names mapped
        # to the sorted classes and written to classes.json; eval reads them back.
        src = os.path.join(os.path.dirname(common.DIGITS), "iris.csv")
        with open(src) as f:
            species = f.readline().strip().split(",")[2:]
            rows = [line.strip().split(",") for line in f if line.strip()]
        header = "sepal_length,sepal_width,petal_length,petal_width,species\n"
        train = [r for i, r in enumerate(rows) if i % 5]
        val = [r for i, r in enumerate(rows) if i % 5 == 0 and r[4] != "2"]  # no virginica
        for name, part in (("train", train), ("val", val)):
            write(os.path.join(self.dir, name + ".csv"),
                  header + "".join(",".join(r[:4] + [species[int(r[4])]]) + "\n" for r in part))
        run_dir = os.path.join(self.dir, "iris")
        cfg = write(os.path.join(self.dir, "iris.yaml"), f"""
run_dir: {run_dir}
seed: 1
model: {{type: mlp, args: {{sizes: [4, 32, 3]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {self.dir}/train.csv, target: species}}}}
  val: {{type: csv, args: {{path: {self.dir}/val.csv, target: species}}}}
  normalize: {{enabled: true}}
  loader: {{batch_size: 16, workers: 0}}
optimizer: {{type: adam, lr: 0.01}}
train: {{max_length: 40 epochs, log_every: 50 steps, val_every: 10 epochs, threads: 1}}
""")
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        self.assertIn("column 'species' holds class names: 3 classes (setosa, versicolor, "
                      "virginica)", out)
        with open(os.path.join(run_dir, "classes.json")) as f:
            self.assertEqual(json.load(f)["classes"], ["setosa", "versicolor", "virginica"])
        vals = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/accuracy" in e]
        self.assertGreaterEqual(vals[-1]["val/accuracy"], 0.9, out)
        code, out = run(["eval", os.path.join(run_dir, "config.yaml"), "--checkpoint", "last"])
        self.assertEqual(code, 0, out)
        self.check_names_in_eval_and_export(run_dir, out)
        # A val name the training data lacks stops the run before training, naming the line.
        write(os.path.join(self.dir, "val.csv"), header + "5.0,3.0,1.0,0.2,setosa\n"
              "5.0,3.0,1.0,0.2,unknown\n")
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "bad")])
        self.assertEqual(code, 2, out)
        self.assertIn("val.csv' line 3, column 5 ('species'): class 'unknown' is not one of the 3 "
                      "classes (setosa, versicolor, virginica)", out)

    def check_names_in_eval_and_export(self, run_dir, eval_out):
        """The iris run's checkpoint keeps the species names: eval's per-class lines and results
        use them, exports keep them beside the model (and in safetensors' metadata); a checkpoint
        without them (an older one) shows class indices."""
        last = os.path.realpath(os.path.join(run_dir, "checkpoints", "last"))
        with open(os.path.join(last, "classes.json")) as f:
            self.assertEqual(json.load(f)["classes"], ["setosa", "versicolor", "virginica"])
        self.assertIn("per class:", eval_out)
        self.assertRegex(eval_out, r"setosa: \d+ of 10 right \(\d+\.\d%\)")
        self.assertRegex(eval_out, r"virginica: 0 of 0 right")
        with open(os.path.join(run_dir, "results", "val.json")) as f:
            results = json.load(f)
        self.assertEqual(sorted(results["per_class"]), ["setosa", "versicolor", "virginica"])
        self.assertEqual(results["per_class"]["setosa"]["examples"], 10)
        self.assertEqual(results["confusion"]["labels"], ["setosa", "versicolor", "virginica"])
        counts = results["confusion"]["counts"]
        self.assertEqual([sum(row) for row in counts], [10, 10, 0])
        right = sum(counts[i][i] for i in range(3)) / 20
        self.assertAlmostEqual(right, results["metrics"]["val/accuracy"], places=6)

        config = os.path.join(run_dir, "config.yaml")
        for fmt, out in (("state_dict", "iris.pt"), ("safetensors", "iris.safetensors"),
                         ("torchscript", "iris.ts")):
            out = os.path.join(self.dir, out)
            code, text = run(["export", config, "--format", fmt, "--out", out])
            self.assertEqual(code, 0, text)
            with open(os.path.splitext(out)[0] + ".classes.json") as f:
                self.assertEqual(json.load(f)["classes"], ["setosa", "versicolor", "virginica"])
        with open(os.path.join(self.dir, "iris.safetensors"), "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        self.assertEqual(json.loads(header["__metadata__"]["classes"]),
                         ["setosa", "versicolor", "virginica"])

        # A checkpoint from before the names were kept: the classes by index.
        old = os.path.join(self.dir, "old-checkpoint")
        shutil.copytree(last, old)
        os.remove(os.path.join(old, "classes.json"))
        with open(os.path.join(old, "MANIFEST.json")) as f:
            manifest = json.load(f)
        del manifest["files"]["classes.json"]
        with open(os.path.join(old, "MANIFEST.json"), "w") as f:
            json.dump(manifest, f)
        code, text = run(["eval", config, "--checkpoint", old])
        self.assertEqual(code, 0, text)
        self.assertRegex(text, r"  0: \d+ of 10 right")
        self.assertNotIn("setosa:", text)
        code, text = run(["export", config, "--checkpoint", old, "--out",
                          os.path.join(self.dir, "old.pt")])
        self.assertEqual(code, 0, text)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "old.classes.json")))

    def test_val_every_a_fraction_of_an_epoch(self):
        run_dir = os.path.join(self.dir, "halves")
        code, out = run(["train", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                         "--run_dir", run_dir, "--train.max_length", "1.5 epochs",
                         "--train.val_every", "0.5 epochs"], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        vals = [e["step"] for e in events if "val/acc" in e]
        b = int(re.search(r"(\d+) batches/epoch", out).group(1))
        # Validated at the first step past each half epoch, to the end of the 1.5 epochs.
        self.assertEqual(vals, [(b + 1) // 2, b, (3 * b + 1) // 2], out)
        with open(os.path.join(run_dir, "config.yaml")) as f:
            self.assertIn("val_every: 0.5 epochs", f.read())
        code, out = run(["train", os.path.join(common.SOURCE, "examples/digits/mlp.yaml"),
                         "--run_dir", run_dir + "2", "--train.val_every", "0.5 steps"],
                        cwd=common.SOURCE)
        self.assertEqual(code, 2, out)
        self.assertIn("a fraction is for epochs", out)

    def test_an_event_at_an_epochs_last_step_counts_that_epoch(self):
        # At an epoch's last step the epoch is complete: every event of that step (logs,
        # validations, checkpoints) says so, as the done line does, whatever the periods.
        mlp = os.path.join(common.SOURCE, "examples/digits/mlp.yaml")
        for log_every in ("0.5 epochs", "1 epoch", "23 steps"):
            run_dir = os.path.join(self.dir, "e" + log_every.replace(" ", ""))
            code, out = run(["train", mlp, "--run_dir", run_dir, "--train.max_length", "2 epochs",
                             "--train.val_every", "0.5 epochs", "--train.log_every", log_every,
                             "--checkpoint.every", "0.5 epochs", "--checkpoint.keep_last", "0",
                             "--train.threads", "1"], cwd=common.SOURCE)
            self.assertEqual(code, 0, out)
            b = int(re.search(r"(\d+) batches/epoch", out).group(1))
            self.assertIn("done: %d steps, 2 epochs completed" % (2 * b), out)
            events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
            epochs = {}
            for e in events:
                epochs.setdefault(e["step"], set()).add(e["epoch"])
            self.assertEqual(epochs[b], {1}, (log_every, events))
            self.assertEqual(epochs[2 * b], {2}, (log_every, events))
            self.assertEqual(epochs[(b + 1) // 2], {0}, (log_every, events))
            self.assertRegex(out, r"step %d \| epoch 2\b" % (2 * b))
            for step, epoch in ((b, 1), (2 * b, 2)):
                state = os.path.join(run_dir, "checkpoints", "step-%d" % step,
                                     "trainer_state.json")
                with open(state) as f:
                    self.assertEqual(json.load(f)["state"]["epoch"], epoch, state)
        # A run resumed from the checkpoint at the first epoch's end ends as one that never
        # stopped (the checkpoint holds the epoch as completed; nothing of it runs again).
        whole = os.path.join(self.dir, "e0.5epochs")
        resumed = os.path.join(self.dir, "resumed")
        shutil.copytree(whole, resumed, symlinks=True)
        for d in os.listdir(os.path.join(resumed, "checkpoints")):
            if d.startswith("step-") and int(d[5:]) > b:
                shutil.rmtree(os.path.join(resumed, "checkpoints", d))
        for link in ("last", "best"):
            if os.path.lexists(os.path.join(resumed, "checkpoints", link)):
                os.remove(os.path.join(resumed, "checkpoints", link))
        code, out = run(["train", mlp, "--run_dir", resumed, "--train.max_length", "2 epochs",
                         "--train.val_every", "0.5 epochs", "--train.log_every", "0.5 epochs",
                         "--checkpoint.every", "0.5 epochs", "--checkpoint.keep_last", "0",
                         "--train.threads", "1"], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from", out)
        self.assertIn("step-%d" % b, out)
        drop_time = lambda d: [{k: v for k, v in e.items() if k != "time"}
                               for e in read_jsonl(os.path.join(d, "metrics.jsonl"))]
        self.assertEqual(drop_time(resumed), drop_time(whole))

    def test_a_config_printed_by_config_trains_without_unread_key_warnings(self):
        # `unitrain config` (like a sweep's trial configs and best.yaml) writes `auto` for
        # train.threads, data.loader.workers, checkpoint.every and distributed.prefetch.
        code, text = run(["config", os.path.join(common.SOURCE, "examples/digits/mlp.yaml")])
        self.assertEqual(code, 0, text)
        for key in ("threads: auto", "workers: auto", "every: auto", "prefetch: auto"):
            self.assertIn(key, text)
        cfg = write(os.path.join(self.dir, "printed.yaml"), text)
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "printed"),
                         "--train.max_length", "2 steps", "--train.threads", "auto"])
        self.assertEqual(code, 0, out)
        self.assertNotIn("nothing in this program read", out)

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
