"""A run's life as a user meets it: finished runs stay finished, results land on disk, train.log
tells the whole story, and the console reads as one voice. The real binary on digits."""
import csv
import glob
import json
import os
import re
import signal
import subprocess

import common
from common import run, write, read_jsonl

CONFIG = f"""
name: life
seed: 3
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective:
  losses: [{{type: cross_entropy, prediction: logits, target: y}}]
  metrics: [{{type: accuracy, name: acc}}]
data:
  train: {{type: csv, args: {{path: {common.DIGITS}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: 64}}
optimizer: {{type: adamw, lr: 3.0e-3}}
train: {{max_length: 3 epochs, log_every: 10 steps, val_every: 1 epoch}}
"""


def summary(run_dir):
    with open(os.path.join(run_dir, "results", "summary.json")) as f:
        return json.load(f)


def step_folders(run_dir):
    return sorted(os.path.basename(d) for d in glob.glob(os.path.join(run_dir, "checkpoints", "step-*")))


class RunLifecycle(common.Case):
    def setUp(self):
        super().setUp()
        self.cfg = write(os.path.join(self.dir, "run.yaml"), CONFIG)
        self.run_dir = os.path.join(self.dir, "run")

    def train(self, *args, expect=0, run_dir=None):
        code, out = run(["train", self.cfg, "--run_dir", run_dir or self.run_dir] + list(args))
        self.assertEqual(code, expect, out)
        return out

    def test_a_finished_run_run_again_trains_nothing_and_says_how_to_start_anew(self):
        self.train()
        events = read_jsonl(os.path.join(self.run_dir, "metrics.jsonl"))
        folders = step_folders(self.run_dir)
        first = summary(self.run_dir)
        self.assertEqual(first["status"], "finished")
        self.assertEqual(first["epoch"], 3)
        self.assertGreater(first["final"]["val"]["val/acc"], 0.8)

        out = self.train()  # the same command: complete, nothing trained, exit 0
        self.assertIn("training already complete", out)
        self.assertIn(f"nothing trained: the run was complete at {first['step']} steps, 3 epochs",
                      out)
        self.assertNotIn("done:", out)  # no times or memory of a run that did nothing
        # run_dir is given, so --name would not change the folder: the advice is --run_dir.
        self.assertIn("--run_dir <new-folder>", out)
        self.assertNotIn("--name <new-name>", out)
        self.assertEqual(read_jsonl(os.path.join(self.run_dir, "metrics.jsonl")), events)
        self.assertEqual(step_folders(self.run_dir), folders)
        # The summary still describes the run, read from its checkpoint.
        again = summary(self.run_dir)
        self.assertEqual(again["final"], first["final"])
        self.assertEqual(again["step"], first["step"])

        out = self.train("--log.progress_bar", "false", "--data.loader.workers", "2")  # harmless
        self.assertIn("training already complete", out)

        # Changed settings of a finished run would train nothing: refused, naming the key and the way out.
        out = self.train("--optimizer.lr", "1e-3", expect=2)
        self.assertRegex(out, r"optimizer\.lr: [0-9.e-]+ -> 1e-3")
        self.assertIn("--run_dir <new-folder>", out)
        self.assertNotIn("--name <new-name>", out)
        self.assertIn("--checkpoint.resume none", out)
        self.assertEqual(read_jsonl(os.path.join(self.run_dir, "metrics.jsonl")), events)
        self.assertEqual(step_folders(self.run_dir), folders)

        # A longer max_length continues the run.
        out = self.train("--train.max_length", "4 epochs")
        self.assertIn("resumed from", out)
        self.assertEqual(summary(self.run_dir)["epoch"], 4)

    def test_a_run_started_with_resume_none_is_continued_by_the_same_command(self):
        """`--checkpoint.resume none` means "do not resume an earlier run": a run's own
        checkpoints are its own. Stopped by SIGTERM (exit 75, "run the same command to
        resume"), the same command continues it; once it finished, the same command starts
        over (the finished run moves to history/)."""
        cmd = ["train", self.cfg, "--run_dir", self.run_dir, "--checkpoint.resume", "none"]
        p = subprocess.Popen([common.BIN] + cmd + common.slow_steps(40), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        metrics = os.path.join(self.run_dir, "metrics.jsonl")
        self.assertTrue(common.wait_for(lambda: os.path.exists(metrics) and
                                        len(read_jsonl(metrics)) >= 2))
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=120)[0]
        self.assertEqual(p.returncode, 75, out)
        stopped_at = summary(self.run_dir)["step"]
        code, out = run(cmd + common.slow_steps(0))
        self.assertEqual(code, 0, out)
        self.assertIn("checkpoint.resume none: the run in %s stopped to be resumed" % self.run_dir,
                      out)
        self.assertIn("resumed from %s/checkpoints/step-%d" % (self.run_dir, stopped_at), out)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "history")), out)
        self.assertEqual(summary(self.run_dir)["status"], "finished")
        steps = [e["step"] for e in read_jsonl(metrics) if "train/loss" in e]
        self.assertEqual(steps, sorted(set(steps)), "the same steps logged twice: trained again")
        out = self.train("--checkpoint.resume", "none")  # a finished run: none starts over
        self.assertIn("run_dir held an earlier run: its files moved to", out)

    def test_a_one_off_resume_folder_is_not_written_into_the_runs_config(self):
        """Where to resume from is a fact of one invocation: after `--checkpoint.resume
        <folder>`, the run's config.yaml says auto, so that training its config.yaml further
        continues from its own newest checkpoint, not from that older folder again."""
        self.train("--checkpoint.every", "10 steps", "--checkpoint.keep_last", "10")
        older = os.path.join(self.run_dir, "checkpoints", step_folders(self.run_dir)[0])
        self.train("--checkpoint.resume", older, "--train.max_length", "4 epochs")
        with open(os.path.join(self.run_dir, "config.yaml")) as f:
            saved = f.read()
        self.assertEqual(re.findall(r"^\s+resume: (.*)$", saved, re.M), ["auto"], saved)
        newest = step_folders(self.run_dir)[-1]
        code, out = run(["train", os.path.join(self.run_dir, "config.yaml"),
                         "--train.max_length", "5 epochs"])
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from %s/checkpoints/%s" % (self.run_dir, newest), out)

    def test_the_new_run_advice_follows_how_run_dir_is_set(self):
        # run_dir left at its default runs/${name}: --name moves the run to a new folder.
        one_epoch = ["train", self.cfg, "--train.max_length", "1 epoch"]
        for _ in range(2):
            code, out = run(one_epoch, cwd=self.dir)
            self.assertEqual(code, 0, out)
        self.assertIn("training already complete", out)
        self.assertIn("--name <new-name> (its run_dir becomes runs/<new-name>)", out)
        code, out = run(one_epoch + ["--optimizer.lr", "1e-3"], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("--name <new-name>", out)
        code, out = run(one_epoch + ["--optimizer.lr", "1e-3", "--name", "other"], cwd=self.dir)
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.isdir(os.path.join(self.dir, "runs", "other", "checkpoints")))

        # run_dir set in the YAML: --name does not move it, so the advice is --run_dir.
        explicit = write(os.path.join(self.dir, "explicit.yaml"),
                         CONFIG + "run_dir: %s\n" % os.path.join(self.dir, "fixed"))
        for _ in range(2):
            code, out = run(["train", explicit, "--train.max_length", "1 epoch"], cwd=self.dir)
            self.assertEqual(code, 0, out)
        self.assertIn("training already complete", out)
        self.assertIn("--run_dir <new-folder>", out)
        self.assertNotIn("--name <new-name>", out)

    def test_an_early_stopped_run_is_complete(self):
        args = ["--early_stopping.metric", "val/loss", "--early_stopping.mode", "max",
                "--early_stopping.patience", "1", "--train.max_length", "10 epochs"]
        self.train(*args)
        first = summary(self.run_dir)
        self.assertEqual(first["status"], "stopped early")
        self.assertEqual(first["epoch"], 2)  # the second validation did not improve on the first
        folders = step_folders(self.run_dir)
        for _ in range(2):
            out = self.train(*args)
            self.assertIn("stopped early at step", out)
            self.assertEqual(step_folders(self.run_dir), folders)
            self.assertEqual(summary(self.run_dir)["step"], first["step"])

    def test_test_results_and_the_summary_land_on_disk(self):
        args = ["--data.test", f"{{type: csv, args: {{path: {common.DIGITS}, header: false, target: '64'}}}}",
                "--checkpoint.best.metric", "val/acc"]
        self.train(*args)
        events = read_jsonl(os.path.join(self.run_dir, "metrics.jsonl"))
        test = [e for e in events if "test/acc" in e]
        self.assertEqual(len(test), 1)
        self.assertEqual(test[0]["step"], summary(self.run_dir)["step"])  # at the run's last step
        with open(os.path.join(self.run_dir, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertAlmostEqual(float(rows[-1]["test/acc"]), test[0]["test/acc"], places=9)
        with open(os.path.join(self.run_dir, "results", "test.json")) as f:
            result = json.load(f)
        self.assertEqual(result["examples"], 1797)
        self.assertEqual(result["metrics"]["test/acc"], test[0]["test/acc"])
        s = summary(self.run_dir)
        self.assertEqual(s["test"]["test/acc"], test[0]["test/acc"])
        self.assertEqual(s["best"]["metric"], "val/acc")
        self.assertEqual(s["best"]["value"], max(e["val/acc"] for e in events if "val/acc" in e))
        self.assertEqual(s["checkpoints"]["best"],
                         os.path.realpath(os.path.join(self.run_dir, "checkpoints", "best")))
        self.assertEqual(s["checkpoints"]["last"],
                         os.path.realpath(os.path.join(self.run_dir, "checkpoints", "last")))
        # Run again: still exactly one test line (the checkpoint's log position drops the old one).
        self.train(*args)
        events = read_jsonl(os.path.join(self.run_dir, "metrics.jsonl"))
        self.assertEqual(len([e for e in events if "test/acc" in e]), 1)

    def test_train_log_holds_the_start_and_the_console_one_format(self):
        out = self.train("--scheduler.type", "linear", "--scheduler.args.warmup", "100 steps")
        with open(os.path.join(self.run_dir, "train.log")) as f:
            log = f.read()
        # What happened before the run folder existed is in the file too, in order.
        data_at = log.find("data: 1438 train, 359 val")
        model_at = log.find("model mlp: 2410 parameters")
        training_at = log.find("training: 1438 samples")
        self.assertTrue(0 <= data_at < model_at < training_at, log[:2000])
        # The warmup outlasts the run (3 epochs of 23 steps): a warning with both lengths.
        self.assertIn("warning: scheduler.args.warmup is '100 steps' = 100 optimizer steps, longer "
                      "than the whole run (69 optimizer steps)", out)
        self.assertIn("[warning] scheduler.args.warmup", log)
        # Console lines carry no spdlog timestamps or colours; constant pixels are one info line.
        for line in out.splitlines():
            self.assertFalse(re.match(r"^\[\d{4}-", line), line)
            self.assertNotIn("\x1b[", line)
        constant = [l for l in out.splitlines() if "constant" in l]
        self.assertEqual(len(constant), 1, constant)
        self.assertFalse(constant[0].startswith("warning"), constant[0])

    def test_epoch_reads_the_same_in_the_bar_the_lines_and_the_end(self):
        out = self.train("--log.progress_bar", "true", "--train.max_length", "2 epochs",
                         "--train.log_every", "5 steps")
        # Completed epochs, the one a step ends included: 23 steps per epoch, so step s says
        # s // 23 (step 46, the run's last, says 2 as the done line does).
        bars = [(int(s), int(e)) for e, s in re.findall(r"\x1b\[2Kepoch (\d+) \[[^]]*\] (\d+)/46",
                                                        out)]
        self.assertTrue(bars, out[-3000:])
        self.assertEqual([(s, s // 23) for s, e in bars], bars, out[-3000:])
        lines = [(int(s), int(e)) for s, e in re.findall(r"step (\d+) \| epoch (\d+) \|", out)]
        self.assertIn((5, 0), lines)   # step 5 is in the first epoch: epoch 0 (none completed)
        self.assertIn((25, 1), lines)  # 23 steps per epoch: step 25 is in the second
        self.assertIn((46, 2), lines)  # the last step ends the second
        self.assertEqual([(s, s // 23) for s, e in lines], lines)
        self.assertIn("2 epochs completed", out)


if __name__ == "__main__":
    common.main()
