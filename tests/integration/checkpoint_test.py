"""Checkpoints, exact resume, stops and faults: the real binary on real data.

Python's torch (python3-torch) reads what unitrain wrote: checkpoints' model.pt
(eval_export_test.py: eval, exported state dicts and TorchScript files).
"""
import glob
import gzip
import json
import os
import shutil
import signal
import subprocess
import time
import zlib

import torch

import common
from common import wait_for, run, write, read_jsonl

# Digits (1438 train examples after the 20% split): batch 32 and accumulation 2 make 45
# micro-batches per epoch (the last one partial) and 23 optimizer steps; checkpoints every
# 150 samples land inside epochs and inside accumulation windows.
CONFIG = f"""
name: ckpt
seed: 7
model: {{type: mlp, args: {{sizes: [64, 48, 10], dropout: 0.1}}}}
objective:
  losses: [{{type: cross_entropy, prediction: logits, target: y}}]
  metrics: [{{type: accuracy, name: acc}}]
data:
  train: {{type: csv, args: {{path: {common.DIGITS}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: 32, shuffle: true, workers: 2}}
optimizer: {{type: adamw, lr: 3.0e-3, args: {{weight_decay: 0.01}}}}
scheduler: {{type: cosine, args: {{warmup: 10 steps}}}}
train:
  max_length: 4 epochs
  accumulation_steps: 2
  log_every: 5 steps
  val_every: 20 steps
  threads: 1
checkpoint: {{every: 150 samples, keep_last: 0}}
"""


# Per-example random transforms read by 2 loader threads (Fashion-MNIST's test images: 9000
# train examples after the split, 141 steps an epoch): a resume must read the same augmented
# batches (data.transforms draws from (seed, epoch, index)).
TRANSFORM_CONFIG = f"""
name: ckpt-transforms
seed: 3
model: {{type: mlp, args: {{sizes: [784, 32, 10]}}}}
objective:
  losses: [{{type: cross_entropy, prediction: logits, target: y}}]
  metrics: [{{type: accuracy, name: acc}}]
data:
  train:
    type: idx
    args: {{images: {common.FASHION}/t10k-images-idx3-ubyte.gz,
            labels: {common.FASHION}/t10k-labels-idx1-ubyte.gz}}
  validation_ratio: 0.1
  transforms:
    train:
      - {{type: random_crop, args: {{size: [28], padding: 3}}}}
      - {{type: horizontal_flip}}
      - {{type: random_erasing, args: {{p: 0.3}}}}
      - {{type: normalize, args: {{mean: [0.29], std: [0.35]}}}}
    val: [{{type: normalize, args: {{mean: [0.29], std: [0.35]}}}}]
  loader: {{batch_size: 32, shuffle: true, workers: 2}}
optimizer: {{type: adam, lr: 1.0e-3}}
train:
  max_length: 2 epochs
  accumulation_steps: 2
  log_every: 10 steps
  val_every: 50 steps
  threads: 1  # bitwise needs the same intra-op threads in both runs (auto follows the load)
checkpoint: {{every: 1000 samples, keep_last: 0}}
"""


def without_time(events):
    return [{k: v for k, v in e.items() if k != "time"} for e in events]


def load(path):
    return torch.load(path)


def state_of(ckpt):
    with open(os.path.join(ckpt, "trainer_state.json")) as f:
        return json.load(f)["state"]


def checkpoints(run_dir):
    """Complete step folders, oldest first."""
    dirs = glob.glob(os.path.join(run_dir, "checkpoints", "step-*"))
    return sorted(dirs, key=lambda d: int(d.rsplit("-", 1)[1]))


def assert_same_tensors(case, a, b):
    case.assertEqual(list(a.keys()), list(b.keys()))
    for k in a:
        case.assertTrue(torch.equal(a[k], b[k]), f"{k} differs")


class Checkpoints(common.Case):
    base = CONFIG

    def config(self, extra=""):
        return write(os.path.join(self.dir, "run.yaml"), self.base + extra)

    def train(self, run_dir, *args, expect=0, env=None):
        code, out = run(["train", self.config(), "--run_dir", run_dir] + list(args), env=env)
        self.assertEqual(code, expect, out)
        return out

    def full_run(self, name="full", *args):
        run_dir = os.path.join(self.dir, name)
        self.train(run_dir, *args)
        return run_dir

    def assert_resume_is_exact(self, *args, tag=""):
        """A run resumed mid-epoch, mid-window equals the run trained straight through."""
        full = self.full_run(tag + "full", *args)
        ckpts = checkpoints(full)
        self.assertGreater(len(ckpts), 10)
        # A checkpoint inside the second epoch and inside an accumulation window.
        chosen = next(c for c in ckpts
                      if state_of(c)["epoch"] == 1 and state_of(c)["micro_in_window"] == 1
                      and state_of(c)["batch_in_epoch"] > 0)
        k = state_of(chosen)["step"]
        self.assertTrue(os.path.exists(os.path.join(chosen, "grads.pt")))

        part = os.path.join(self.dir, tag + "part")
        shutil.copytree(full, part, symlinks=True)
        for c in checkpoints(part):
            if int(c.rsplit("-", 1)[1]) > k:
                shutil.rmtree(c)
        resumed_from = os.path.join(part, "checkpoints", os.path.basename(chosen))
        out = self.train(part, "--checkpoint.resume", resumed_from, *args)
        self.assertIn("resumed from", out)
        self.assertIn(f"step {k}", out)

        last_full, last_part = checkpoints(full)[-1], checkpoints(part)[-1]
        self.assertEqual(os.path.basename(last_full), os.path.basename(last_part))
        assert_same_tensors(self, load(os.path.join(last_full, "model.pt")),
                            load(os.path.join(last_part, "model.pt")))
        a = without_time(read_jsonl(os.path.join(full, "metrics.jsonl")))
        b = without_time(read_jsonl(os.path.join(part, "metrics.jsonl")))
        self.assertGreater(len([e for e in a if e["step"] > k]), 5)
        self.assertEqual(a, b)
        return full

    def test_resume_mid_epoch_mid_window_is_bitwise_exact(self):
        self.assert_resume_is_exact()

    def test_resume_with_random_transforms_in_two_threads_is_bitwise_exact(self):
        self.base = TRANSFORM_CONFIG
        self.assert_resume_is_exact(tag="transforms")

    def test_resume_is_bitwise_exact_in_every_precision(self):
        for precision in ("bf16-mixed", "bf16-true"):
            with self.subTest(precision=precision):
                full = self.assert_resume_is_exact("--train.precision", precision, tag=precision)
                # bf16-true's model.pt holds the float32 master weights.
                model = load(os.path.join(checkpoints(full)[-1], "model.pt"))
                self.assertEqual({t.dtype for t in model.values()}, {torch.float32})

    def test_checkpoint_files_are_python_readable_with_state_dict_names(self):
        full = self.full_run("full", "--train.max_length", "1 epoch")
        last = os.path.realpath(os.path.join(full, "checkpoints", "last"))
        self.assertEqual(last, checkpoints(full)[-1])
        model = load(os.path.join(last, "model.pt"))
        self.assertEqual({k: tuple(v.shape) for k, v in model.items()},
                         {"layers.0.weight": (48, 64), "layers.0.bias": (48,),
                          "layers.1.weight": (10, 48), "layers.1.bias": (10,)})
        self.assertEqual(common.manifest_problems(last), [])
        with open(os.path.join(last, "trainer_state.json")) as f:
            ts = json.load(f)
        self.assertEqual(ts["state"]["epoch"], 1)
        self.assertEqual(ts["state"]["step"], 23)
        self.assertIn("config_hash", ts)
        # The optimizer's group options read as PyTorch's optimizer.state_dict() shows them.
        opt = load(os.path.join(last, "optimizer.pt"))
        self.assertEqual(opt["type"], "adamw")
        options = opt["groups"][0]["options"]
        logged = [e["train/lr"] for e in read_jsonl(os.path.join(full, "metrics.jsonl")) if "train/lr" in e]
        # train/lr is the lr the last step used; the optimizer holds the next step's (the cosine
        # decays on past it).
        self.assertLess(options["lr"], logged[-1])
        self.assertGreaterEqual(options["lr"], 0.0)
        self.assertEqual(options["betas"], (0.9, 0.999))
        self.assertEqual(options["weight_decay"], 0.01)
        self.assertFalse(options["amsgrad"])

    def test_keep_last_best_and_threshold(self):
        run_dir = self.full_run("keep", "--checkpoint.keep_last", "2",
                                "--checkpoint.best.metric", "val/acc",
                                "--checkpoint.every", "20 steps")
        events = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/acc" in e]
        best_step = max(events, key=lambda e: (e["val/acc"], -e["step"]))["step"]
        best = os.path.realpath(os.path.join(run_dir, "checkpoints", "best"))
        self.assertEqual(os.path.basename(best), f"step-{best_step}")
        names = {os.path.basename(c) for c in checkpoints(run_dir)}
        # Saved at 20, 40, 60, 80 and 92 (the final one, 4 epochs x 23 steps): the newest two
        # and the best remain.
        self.assertEqual(names, {"step-80", "step-92", f"step-{best_step}"})

        high = self.full_run("high", "--checkpoint.best.metric", "val/acc",
                             "--checkpoint.best.threshold", "0.999")
        self.assertFalse(os.path.lexists(os.path.join(high, "checkpoints", "best")))

    def test_async_saves_the_same_checkpoints(self):
        sync = self.full_run("sync", "--train.max_length", "2 epochs")
        # Async saves copy parameters and optimizer state on the writer thread while training
        # runs its next forward and backward; the delay makes those copies come after the next
        # optimizer step unless training waits for them (the snapshot fence).
        asyn = os.path.join(self.dir, "async")
        self.train(asyn, "--train.max_length", "2 epochs", "--checkpoint.async", "true",
                   env=dict(os.environ, UNITRAIN_TEST_SNAPSHOT_DELAY_MS="150"))
        self.assertEqual([os.path.basename(c) for c in checkpoints(sync)],
                         [os.path.basename(c) for c in checkpoints(asyn)])

        def optimizer_tensors(path):
            state = load(path)["state"]
            return {f"{i}/{k}": v for i, fields in state.items() for k, v in fields.items()
                    if isinstance(v, torch.Tensor)}

        for a, b in zip(checkpoints(sync), checkpoints(asyn)):
            assert_same_tensors(self, load(os.path.join(a, "model.pt")), load(os.path.join(b, "model.pt")))
            assert_same_tensors(self, optimizer_tensors(os.path.join(a, "optimizer.pt")),
                                optimizer_tensors(os.path.join(b, "optimizer.pt")))

    def test_auto_resume_continues_and_completed_run_does_not_retrain(self):
        run_dir = os.path.join(self.dir, "auto")
        self.train(run_dir, "--train.max_length", "2 epochs")
        out = self.train(run_dir, "--train.max_length", "3 epochs", "--optimizer.lr", "0.02")
        self.assertIn("train.max_length", out)  # the changed key is reported
        self.assertIn("resumed from", out)
        # A key that changes training besides the length is a warning, said once.
        self.assertEqual(out.count("warning: config changed since the checkpoint: optimizer.lr"),
                         1, out)
        self.assertNotIn("warning: config changed since the checkpoint: train.max_length", out)
        self.assertEqual(state_of(checkpoints(run_dir)[-1])["step"], 69)
        out = self.train(run_dir, "--train.max_length", "3 epochs", "--optimizer.lr", "0.02")
        self.assertIn("already complete", out)
        # A rerun that trains nothing changes nothing of the run's config (it says 3 epochs).
        out = self.train(run_dir, "--train.max_length", "2 epochs", "--optimizer.lr", "0.02")
        self.assertIn("already complete", out)
        with open(os.path.join(run_dir, "config.yaml")) as f:
            self.assertIn("max_length: 3 epochs", f.read())
        # none: a fresh run; the earlier one's files are archived, not lost.
        self.train(run_dir, "--train.max_length", "1 epoch", "--checkpoint.resume", "none")
        self.assertEqual(state_of(checkpoints(run_dir)[-1])["step"], 23)
        archived = glob.glob(os.path.join(run_dir, "history", "*", "checkpoints", "step-69"))
        self.assertEqual(len(archived), 1)

    def test_resume_refuses_changes_that_cannot_work(self):
        # A refused resume leaves every byte of the run folder as it was (but the lock file's
        # record of who held it last): refused by the config, or by a checkpoint that does not
        # fit the data (an epoch now shorter than where it stopped), before anything is written.
        run_dir = os.path.join(self.dir, "refuse")
        self.train(run_dir, "--train.max_length", "1 epoch")
        for key, value in (("--model.args.sizes", "[64, 32, 10]"), ("--optimizer.type", "sgd"),
                           ("--data.loader.batch_size", "16")):
            before = common.folder_hash(run_dir)
            code, out = run(["train", self.config(), "--run_dir", run_dir, key, value,
                             "--train.max_length", "2 epochs"])
            self.assertEqual(code, 2, out)
            self.assertIn(key[2:], out)
            self.assertEqual(common.folder_hash(run_dir), before, key)
        data = os.path.join(self.dir, "digits.csv")
        with gzip.open(common.DIGITS, "rt") as f:
            rows = f.readlines()
        write(data, "".join(rows))
        short = os.path.join(self.dir, "short")
        more = ["--data.train.args.path", data, "--data.normalize.enabled", "false"]
        self.train(short, "--train.max_length", "10 steps", *more)  # micro-batch 20 of 45
        write(data, "".join(rows[:300]))  # 240 examples to train on: 8 micro-batches an epoch
        before = common.folder_hash(short)
        code, out = run(["train", self.config(), "--run_dir", short, "--train.max_length",
                         "20 steps"] + more)
        self.assertEqual(code, 2, out)
        self.assertIn("stopped at batch 20 of an epoch that now has 8 batches", out)
        self.assertEqual(common.folder_hash(short), before)
        # The lr can change on resume.
        out = self.train(run_dir, "--optimizer.lr", "1e-3", "--train.max_length", "2 epochs")
        self.assertIn("optimizer.lr", out)
        self.assertIn("resumed from", out)

    def test_corrupt_checkpoint_explicit_fails_auto_falls_back(self):
        run_dir = os.path.join(self.dir, "corrupt")
        self.train(run_dir, "--train.max_length", "1 epoch", "--checkpoint.every", "10 steps")
        ckpts = checkpoints(run_dir)
        newest, previous = ckpts[-1], ckpts[-2]
        model = os.path.join(newest, "model.pt")
        with open(model, "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 0xFF]))
        code, out = run(["train", self.config(), "--run_dir", run_dir, "--train.max_length", "2 epochs",
                         "--checkpoint.resume", newest])
        self.assertEqual(code, 2, out)
        self.assertIn("model.pt", out)
        self.assertIn("CRC-32", out)

        # A truncated file (found by its size, before any checksum): also skipped, and each
        # skipped checkpoint is named with what is wrong with it.
        with open(os.path.join(previous, "model.pt"), "r+b") as f:
            f.truncate(100)
        out = self.train(run_dir, "--train.max_length", "2 epochs")
        self.assertIn("skipping checkpoint %s: it is damaged (checkpoint file %s/model.pt is "
                      "corrupt (CRC-32" % (newest, newest), out)
        self.assertIn("skipping checkpoint %s: it is damaged (checkpoint file %s/model.pt has "
                      "100 bytes" % (previous, previous), out)
        self.assertEqual(out.count("skipping checkpoint"), 2, out)  # once each
        fallback = ckpts[-3]
        self.assertIn("resumed from " + fallback, out)

    def test_sigterm_and_sigint_save_and_exit_then_resume_exactly(self):
        full = self.full_run("full", "--checkpoint.every", "null", "--train.max_length", "30 epochs")
        for sig in (signal.SIGTERM, signal.SIGINT):
            run_dir = os.path.join(self.dir, f"sig{int(sig)}")
            p = subprocess.Popen([common.BIN, "train", self.config(), "--run_dir", run_dir,
                                  "--checkpoint.every", "null", "--train.max_length", "30 epochs"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            metrics = os.path.join(run_dir, "metrics.jsonl")
            self.assertTrue(wait_for(lambda: os.path.exists(metrics) and len(read_jsonl(metrics)) >= 4))
            p.send_signal(sig)
            out = p.communicate(timeout=120)[0]
            self.assertEqual(p.returncode, 130 if sig == signal.SIGINT else 75, out)  # on_signal.exit_code
            ckpts = checkpoints(run_dir)
            self.assertEqual(len(ckpts), 1, out)
            self.assertLess(state_of(ckpts[0])["step"], 690, out)
            out = self.train(run_dir, "--checkpoint.every", "null", "--train.max_length", "30 epochs")
            self.assertIn("resumed from", out)
            assert_same_tensors(self, load(os.path.join(checkpoints(full)[-1], "model.pt")),
                                load(os.path.join(checkpoints(run_dir)[-1], "model.pt")))
            self.assertEqual(without_time(read_jsonl(os.path.join(full, "metrics.jsonl"))),
                             without_time(read_jsonl(metrics)))

    def test_a_fast_double_ctrl_c_shows_both_acknowledgements(self):
        run_dir = os.path.join(self.dir, "double")
        # Steps of 300 ms: the second Ctrl-C (50 ms after the first, apart enough not to merge
        # with it) comes while the first still waits for its step to end.
        p = subprocess.Popen([common.BIN, "train", self.config(), "--run_dir", run_dir,
                              "--checkpoint.every", "null", "--train.max_length", "30 epochs"]
                             + common.slow_steps(300),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(metrics) and len(read_jsonl(metrics)) >= 2))
        p.send_signal(signal.SIGINT)
        time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out = p.communicate(timeout=120)[0]
        self.assertIn("interrupt: stopping after this step with a checkpoint", out)
        self.assertIn("second interrupt: exiting now, without a checkpoint", out)
        self.assertLess(out.index("interrupt: stopping"), out.index("second interrupt"), out)
        self.assertEqual(p.returncode, 130, out)

    def test_sigkill_during_a_save_keeps_the_previous_checkpoint(self):
        run_dir = os.path.join(self.dir, "kill")
        p = subprocess.Popen([common.BIN, "train", self.config(), "--run_dir", run_dir,
                              "--checkpoint.every", "10 steps"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, UNITRAIN_TEST_CHECKPOINT_PAUSE_MS="200"))
        root = os.path.join(run_dir, "checkpoints")
        partial = lambda: glob.glob(os.path.join(root, ".partial-*"))
        # Wait until the second save is being written (the first is complete).
        self.assertTrue(wait_for(lambda: len(checkpoints(run_dir)) >= 1 and partial()))
        p.kill()
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertTrue(partial())
        complete = checkpoints(run_dir)
        self.assertEqual(len(complete), 1)
        out = self.train(run_dir, "--checkpoint.every", "10 steps")
        self.assertIn("resumed from " + complete[0], out)
        self.assertIn("incomplete checkpoint", out)
        self.assertEqual(partial(), [])
        self.assertEqual(state_of(checkpoints(run_dir)[-1])["step"], 92)

    def test_unwritable_run_dir_and_full_disk(self):
        mnt = os.path.join(self.dir, "mnt")
        os.makedirs(mnt)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", mnt])
        self.assertEqual(mounted.returncode, 0, "cannot mount a tmpfs (run the tests as root, as "
                         "scripts/test does in CI)")
        try:
            # A disk that fills during the run: a clear error, the older checkpoints intact.
            run_dir = os.path.join(mnt, "full")
            code, out = run(["train", self.config(), "--run_dir", run_dir,
                             "--checkpoint.every", "5 steps"])
            self.assertEqual(code, 1, out)
            self.assertIn("No space left", out)
            ckpts = checkpoints(run_dir)
            self.assertGreaterEqual(len(ckpts), 1, out)
            for c in ckpts:
                load(os.path.join(c, "model.pt"))
                with open(os.path.join(c, "MANIFEST.json")) as f:
                    for name, entry in json.load(f)["files"].items():
                        with open(os.path.join(c, name), "rb") as g:
                            self.assertEqual(zlib.crc32(g.read()), entry["crc32"])
            # Read-only: fail at start, naming the path, before any training.
            subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
            ro_dir = os.path.join(mnt, "ro")
            code, out = run(["train", self.config(), "--run_dir", ro_dir])
            self.assertEqual(code, 2, out)
            self.assertIn(ro_dir, out)
            self.assertNotIn("step 5", out)
        finally:
            subprocess.run(["umount", mnt])

    def test_early_stopping(self):
        # val/loss falls, so with mode max it never improves: stop after patience validations.
        run_dir = self.full_run("early", "--early_stopping.metric", "val/loss",
                                "--early_stopping.mode", "max", "--early_stopping.patience", "2")
        vals = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/loss" in e]
        self.assertEqual(len(vals), 3)
        self.assertEqual(state_of(checkpoints(run_dir)[-1])["step"], 60)


if __name__ == "__main__":
    common.main()
