"""Callbacks with the real binary: the order hooks fire in (one process and two), a callback
that throws, the built-in callbacks from YAML, EMA's exact resume and the timer's pause."""
import json
import os
import re

import torch

import common
from common import run, read_jsonl

CONFIG = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 16, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {train}, header: false, target: "64"}}}}
  val: {{type: csv, args: {{path: {val}, header: false, target: "64"}}}}
  loader: {{batch_size: 4, workers: 0, shuffle: false}}
optimizer: {{type: sgd, lr: 0.05}}
train: {{max_length: {length}, accumulation_steps: 2, log_every: 1 step, val_every: 2 steps,
        clip_grad_norm: 1.0, threads: 1}}
checkpoint: {{every: 2 steps}}
callbacks: {callbacks}
"""



def plugin():
    """The test plugin with the callbacks record_hooks and slow_steps."""
    return common.test_plugin()

# 150 ms after each optimizer step: the timer's budget of 1 s ends a run of 24 steps early.
SLOW_STEPS = {"type": "slow_steps", "args": {"ms": 150}}

MICRO = ["train_batch_start", "before_backward", "after_backward"]
WINDOW_END = ["before_gradient_sync", "after_gradient_sync", "before_clip", "after_clip(norm)",
              "before_optimizer_step", "after_optimizer_step", "before_zero_grad", "after_zero_grad"]
VALIDATION = ["validation_start", "validation_batch_start", "validation_batch_end", "validation_end"]


def expected(rank):
    """Two steps of two micro-batches in one epoch: log each step, validate and save at step 2
    (the epoch's last: its save follows the epoch's end, and holds the epoch as completed)."""
    step = MICRO + ["train_batch_end"] + MICRO + WINDOW_END + ["train_batch_end", "step_end",
                                                             "before_log", "log"]
    out = ["fit_start", "train_start", "epoch_start"] + step + step + VALIDATION + ["epoch_end"]
    if rank == 0:
        out.append("save_checkpoint")  # rank 0 writes checkpoints
    return out + ["train_end", "fit_end"]


def digits_rows(path, first, count):
    import gzip
    with gzip.open(common.DIGITS, "rt") as f:
        lines = f.readlines()[first:first + count]
    with open(path, "w") as f:
        f.writelines(lines)
    return path


class CallbacksTest(common.Case):
    def config(self, name, callbacks, train_rows=16, length="1 epoch", extra=""):
        train = digits_rows(os.path.join(self.dir, name + "-train.csv"), 0, train_rows)
        val = digits_rows(os.path.join(self.dir, name + "-val.csv"), 100, 4)
        run_dir = os.path.join(self.dir, name)
        text = CONFIG.format(run_dir=run_dir, train=train, val=val, length=length,
                             callbacks=callbacks) + extra
        return common.write(os.path.join(self.dir, name + ".yaml"), text), run_dir

    def recorder(self, name, **args):
        args["file"] = os.path.join(self.dir, name)
        return {"type": "record_hooks", "args": args}

    def hooks(self, name, rank=0):
        with open(os.path.join(self.dir, name) + ".rank-%d" % rank) as f:
            return f.read().split()

    def test_hook_order_in_one_process(self):
        cfg, _ = self.config("one", json.dumps([self.recorder("one")]))
        code, out = run(["train", cfg, "--plugin", plugin()])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.hooks("one"), expected(0))

    def test_hook_order_in_two_processes(self):
        # 32 rows: each rank reads 16, the same steps as one process with 16.
        cfg, _ = self.config("two", json.dumps([self.recorder("two")]), train_rows=32)
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29571", "--", "train",
                         cfg, "--plugin", plugin()])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.hooks("two", 0), expected(0))
        self.assertEqual(self.hooks("two", 1), expected(1))

    def test_a_stop_asked_on_one_rank_ends_every_rank_at_the_same_step(self):
        # In on_step_end of step 1: shared with step 2's gradients, every rank ends after step 2.
        # In on_validation_end (step 2): agreed right after the validation pass.
        for hook, port in (("step_end", "29573"), ("validation_end", "29574")):
            name = "stop-" + hook
            cfg, run_dir = self.config(name, json.dumps([self.recorder(name, stop_in=hook,
                                                                        stop_rank=1)]),
                                       train_rows=32, length="3 epochs")
            code, out = run(["launch", "--nproc-per-node", "2", "--master-port", port, "--",
                             "train", cfg, "--plugin", plugin()])
            self.assertEqual(code, 0, out)
            summary = self.summary(run_dir)
            self.assertEqual((summary["status"], summary["step"]), ("stopped early", 2), hook)
            for rank in (0, 1):
                self.assertEqual(self.hooks(name, rank).count("step_end"), 2, (hook, rank))

    def test_a_callback_that_throws_is_named_after_the_others_on_exception(self):
        callbacks = [self.recorder("first", fail_in="step_end"), self.recorder("second")]
        cfg, run_dir = self.config("fail", json.dumps(callbacks))
        code, out = run(["train", cfg, "--plugin", plugin()])
        self.assertEqual(code, 1, out)
        self.assertIn("callback 'record_hooks' failed in on_step_end: asked to fail in step_end", out)
        first, second = self.hooks("first"), self.hooks("second")
        self.assertEqual(first[-1], "step_end")  # it threw there, and was not asked again
        self.assertNotIn("exception", first)
        self.assertEqual(second[-2:], ["train_batch_end", "exception"])  # never saw step_end

    def test_builtin_callbacks_from_yaml(self):
        callbacks = [{"type": "lr_monitor"}, {"type": "grad_norm", "args": {"per_parameter": True}},
                     {"type": "throughput", "args": {"tokens": "x"}},
                     {"type": "model_summary"}, {"type": "ema", "args": {"decay": 0.9}}]
        cfg, run_dir = self.config("builtin", json.dumps(callbacks))
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        train = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "train/loss" in e]
        self.assertEqual(len(train), 2)
        for e in train:
            self.assertEqual(e["train/lr-group0"], 0.05)
            self.assertGreater(e["train/grad_norm"], 0)
            self.assertGreater(e["train/grad_norm/layers.0.weight"], 0)
            self.assertGreater(e["train/samples_per_s"], 0)
            self.assertGreater(e["train/tokens_per_s"], e["train/samples_per_s"])  # 64 per sample
            self.assertLessEqual(e["train/step_ms_p50"], e["train/step_ms_max"])
        with open(os.path.join(run_dir, "train.log")) as f:
            log = f.read()
        self.assertRegex(log, r"model summary .*\n.*module .*params .*trainable .*frozen")
        self.assertIn("1210 parameters: 1210 trainable, 0 frozen", log)
        ema = torch.load(os.path.join(run_dir, "checkpoints", "step-2", "extra-ema.pt"))
        model = torch.load(os.path.join(run_dir, "checkpoints", "step-2", "model.pt"))
        self.assertEqual(sorted(ema), sorted(k for k in model if k.endswith(("weight", "bias"))))
        for k in ema:  # an average of the start and two steps: near, not equal, to the weights
            self.assertFalse(torch.equal(ema[k], model[k]), k)

    def test_ema_resumes_exactly(self):
        ema = json.dumps([{"type": "ema", "args": {"decay": 0.8}}])
        cfg, straight = self.config("straight", ema, train_rows=32, length="4 steps")
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        cfg, resumed = self.config("resumed", ema, train_rows=32, length="2 steps")
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        code, out = run(["train", cfg, "--train.max_length", "4 steps"])
        self.assertEqual(code, 0, out)
        a = torch.load(os.path.join(straight, "checkpoints", "step-4", "extra-ema.pt"))
        b = torch.load(os.path.join(resumed, "checkpoints", "step-4", "extra-ema.pt"))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        val = lambda d: [e["val/loss"] for e in read_jsonl(os.path.join(d, "metrics.jsonl"))
                         if "val/loss" in e]
        self.assertEqual(val(straight), val(resumed))

    def summary(self, run_dir):
        with open(os.path.join(run_dir, "results", "summary.json")) as f:
            return json.load(f)

    def last_state(self, run_dir):
        with open(os.path.join(self.summary(run_dir)["checkpoints"]["last"], "trainer_state.json")) as f:
            return json.load(f)["state"]

    def test_timer_pauses_with_a_checkpoint_that_resumes(self):
        timer = json.dumps([{"type": "timer", "args": {"budget": "1s"}}, SLOW_STEPS])
        cfg, run_dir = self.config("timer", timer, train_rows=64, length="3 epochs")
        code, out = run(["train", cfg, "--plugin", plugin()])
        self.assertEqual(code, 75, out)  # checkpoint.on_signal.exit_code: resume me
        self.assertIn("timer: the time budget of 1 s is spent (after 1.", out)
        self.assertIn("exit 75 (checkpoint.on_signal.exit_code): run the same command to resume",
                      out)
        summary = self.summary(run_dir)
        self.assertTrue(summary["status"].startswith("paused: timer"), summary["status"])
        state = self.last_state(run_dir)
        self.assertEqual(state["step"], summary["step"])  # the checkpoint is where it paused
        self.assertLess(state["step"], 24)
        self.assertFalse(state["stopped"])
        code, out = run(["train", cfg, "--callbacks", "[]"])  # again, without the budget
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from", out)
        self.assertEqual(self.summary(run_dir)["status"], "finished")
        self.assertEqual(self.summary(run_dir)["step"], 24)

    def test_timer_in_two_processes_pauses_every_rank_at_one_step(self):
        timer = json.dumps([{"type": "timer", "args": {"budget": "1s"}}, SLOW_STEPS])
        cfg, run_dir = self.config("timer2", timer, train_rows=128, length="3 epochs")
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29572", "--", "train",
                         cfg, "--plugin", plugin()])
        self.assertEqual(code, 75, out)  # every worker's resume code, passed on by the launcher
        summary = self.summary(run_dir)
        self.assertTrue(summary["status"].startswith("paused: "), summary["status"])
        self.assertEqual(self.last_state(run_dir)["step"], summary["step"])
        self.assertLess(summary["step"], 24)
        # Both ranks ended at the same step (the launcher reports each worker's exit).
        ends = re.findall(r"paused: (\d+) steps", out)
        self.assertEqual(len(ends), 1, out)  # rank 1 logs to its own file
        with open(os.path.join(run_dir, "logs", "train-rank-1.log")) as f:
            self.assertIn("paused: %s steps" % ends[0], f.read())


if __name__ == "__main__":
    common.main()
