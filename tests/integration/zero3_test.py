"""ZeRO stage 3 with the real binary: a transformer_lm with its parameters sharded over 2 and 3
processes trains as plain data parallelism does (within 1e-6 of each tensor's scale, with
clipping, two optimizer groups and accumulation), each rank keeping ~1/W of the parameters;
(SGD with momentum: Adam turns the rounding noise of gradients that are zero in exact arithmetic
— attention's key bias — into steps of lr, which differ between any two reduction orders, ZeRO 2's
too: 2e-4 of that bias's scale after 12 steps);
the ema callback averages the parts (validation, eval and export use the average, as without
ZeRO 3) and bf16-true steps float32 masters of the parts; resume is bitwise at the same world
size and re-cuts the parts (and the average) at another, and a run without ZeRO 3 (one process)
resumes from the parts, merged or not, and one with it from a checkpoint without parts; `checkpoint merge`, `export` and `eval` read the parts; a model without units is refused before training."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import torch

import common
from common import run

# bf16-true, ZeRO 3 against plain data parallelism after 12 steps, of each tensor's scale: the
# bfloat16 gradients are averaged in another order (measured 7.5e-3, on small biases).
BF16_TRUE_BOUND = 2e-2

CONFIG = """
run_dir: {run_dir}
seed: 7
model:
  type: transformer_lm
  args: {{vocab: 64, d_model: 32, layers: 3, heads: 4, seq_len: 16, dropout: 0.1}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 16}}}}
  validation_ratio: 0.1
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, no_decay_bias_norm: true,
            args: {{momentum: 0.9, nesterov: true, weight_decay: 0.01}}}}
train: {{max_length: {steps} steps, log_every: 4 steps, val_every: 6 steps, threads: 1,
         clip_grad_norm: 0.5}}
checkpoint: {{enabled: true, every: 6 steps}}
"""


class Zero3(common.Case):
    def config(self, name, steps=12):
        data = common.random_tokens(os.path.join(self.dir, "tokens.bin"), 64, 6000)
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=data, steps=steps))
        return cfg, run_dir

    def launch(self, world, port, cfg, *args, expect=0):
        code, out = run(["launch", "--nproc-per-node", str(world), "--master-port", str(port),
                         "--", "train", cfg] + list(args))
        self.assertEqual(code, expect, out)
        return out

    def assert_close(self, a, b, worst_allowed):
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            worst = ((a[k] - b[k]).abs().max() / a[k].abs().max()).item()
            self.assertLess(worst, worst_allowed, k)

    def test_trains_as_plain_data_parallel_with_a_part_per_rank(self):
        cases = ((2, 29721, 1), (3, 29723, 1), (2, 29725, 2))
        for world, port, accumulation in cases:
            with self.subTest(world=world, accumulation=accumulation):
                extra = ["--train.accumulation_steps", str(accumulation)]
                cfg, plain = self.config(f"plain-{world}-{accumulation}")
                self.launch(world, port, cfg, *extra)
                cfg, zero = self.config(f"zero3-{world}-{accumulation}")
                self.launch(world, port + 1, cfg, "--distributed.zero", "3", *extra)
                # The reduce to each part adds the ranks' gradients in another order than the
                # all-reduce: rounding only.
                self.assert_close(self.final_weights(plain), self.final_weights(zero), 1e-6)
                with open(os.path.join(plain, "metrics.jsonl")) as f:
                    plain_val = [l for l in f if '"val/loss"' in l]
                with open(os.path.join(zero, "metrics.jsonl")) as f:
                    zero_val = [l for l in f if '"val/loss"' in l]
                self.assertEqual(len(plain_val), len(zero_val))
                parts = []
                for r in range(world):
                    log = os.path.join(zero, "train.log" if r == 0 else f"logs/train-rank-{r}.log")
                    with open(log) as f:
                        found = re.findall(rf"parameters on rank {r}: (\d+) bytes of (\d+)",
                                           f.read())
                    self.assertTrue(found, log)
                    parts.append((int(found[-1][0]), int(found[-1][1])))
                whole = parts[0][1]
                for mine, _ in parts:  # an equal part of each flat, padded to the world size
                    self.assertLessEqual(mine, whole / world + 4 * 4 * 16 * world)
                step = os.path.join(zero, "checkpoints", "last")
                self.assertTrue(os.path.exists(os.path.join(step, "model-shards.json")))
                self.assertFalse(os.path.exists(os.path.join(step, "model.pt")))
        # Small units joined (embeddings + block 0, block 1, block 2 + norm and head): the same
        # training, fewer gathers; a resume is bitwise.
        cfg, joined = self.config("zero3-joined")
        more = ["--distributed.zero", "3", "--distributed.unit_min_params", "10000",
                "--train.accumulation_steps", "2"]
        self.launch(2, 29772, cfg, *more, "--train.max_length", "6 steps")
        self.launch(2, 29773, cfg, *more)
        with open(os.path.join(joined, "train.log")) as f:
            self.assertIn("in 3 units (distributed.zero: 3)", f.read())
        self.assert_close(self.final_weights(os.path.join(self.dir, "plain-2-2")),
                          self.final_weights(joined), 1e-6)
        cfg, straight = self.config("zero3-joined-straight")
        self.launch(2, 29774, cfg, *more)
        a, b = self.final_weights(straight), self.final_weights(joined)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)

    def test_resume_is_bitwise_at_the_same_world_size_and_recut_at_another(self):
        cfg, ref = self.config("ref")
        self.launch(2, 29731, cfg, "--distributed.zero", "3")
        cfg, half = self.config("half")
        self.launch(2, 29732, cfg, "--distributed.zero", "3", "--train.max_length", "6 steps")
        out = self.launch(2, 29733, cfg, "--distributed.zero", "3")
        self.assertIn("resumed from", out)
        a, b = self.final_weights(ref), self.final_weights(half)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        # With the prefetch of the next unit (auto: off with Gloo): the same run, bitwise.
        cfg, fetched = self.config("prefetch")
        self.launch(2, 29775, cfg, "--distributed.zero", "3", "--distributed.prefetch", "true")
        c = self.final_weights(fetched)
        for k in a:
            self.assertTrue(torch.equal(a[k], c[k]), k)

        # 2 -> 4 processes (the global batch of 16 kept: 4 a process): as plain data
        # parallelism going from 2 to 4 (the weights and the momentum re-cut, not restarted).
        finals = {}
        for zero, port in (("3", 29734), ("0", 29736)):
            cfg, run_dir = self.config("to4-zero" + zero)
            self.launch(2, port, cfg, "--distributed.zero", zero, "--train.max_length", "6 steps")
            out = self.launch(4, port + 1, cfg, "--distributed.zero", zero)
            self.assertIn("resumed from", out)
            finals[zero] = self.final_weights(run_dir)
        self.assert_close(finals["0"], finals["3"], 1e-5)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "to4-zero3", "checkpoints",
                                                    "step-12", "model-shard-rank-3.pt")))
        # A run without ZeRO 3 takes the parts too, each parameter's momentum cut out of its
        # flat: 2 processes with zero 3, then 1 process from the checkpoint as it is and merged
        # (`checkpoint merge`), and 2 processes with zero 0, each as the same run without
        # zero 3 throughout.
        cfg, plain = self.config("to1-plain")
        self.launch(2, 29803, cfg, "--train.max_length", "6 steps")
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        one_process = self.final_weights(plain)
        cfg, sharded = self.config("to1-zero3")
        self.launch(2, 29804, cfg, "--distributed.zero", "3", "--train.max_length", "6 steps")
        step6 = os.path.join(sharded, "checkpoints", "step-6")
        merged = os.path.join(self.dir, "to1-merged")
        code, out = run(["checkpoint", "merge", step6, "--out", merged])
        self.assertEqual(code, 0, out)
        for name, source in (("unmerged", step6), ("merged", merged)):
            cfg, run_dir = self.config("to1-from-" + name)
            code, out = run(["train", cfg, "--checkpoint.resume", source])
            self.assertEqual(code, 0, out)
            self.assertIn("resumed from", out)
            self.assert_close(one_process, self.final_weights(run_dir), 1e-5)
        cfg, run_dir = self.config("to-zero0")
        out = self.launch(2, 29805, cfg, "--distributed.zero", "0", "--checkpoint.resume", step6)
        self.assertIn("resumed from", out)
        self.assert_close(a, self.final_weights(run_dir), 1e-5)
        # And the other way: a run with ZeRO 3 takes a checkpoint of one without it (one
        # process, where zero: 3 shards nothing), each flat's momentum cut out of the
        # parameters', as the run that goes on without ZeRO 3.
        cfg, alone = self.config("one-process")
        code, out = run(["train", cfg, "--distributed.zero", "3", "--train.max_length", "6 steps"])
        self.assertEqual(code, 0, out)
        alone6 = os.path.join(alone, "checkpoints", "step-6")
        finals = {}
        for zero, port in (("0", 29806), ("3", 29807)):
            cfg, run_dir = self.config("from-one-zero" + zero)
            out = self.launch(2, port, cfg, "--distributed.zero", zero,
                              "--checkpoint.resume", alone6)
            self.assertIn("resumed from", out)
            finals[zero] = self.final_weights(run_dir)
        self.assert_close(finals["0"], finals["3"], 1e-5)

    def test_merge_export_and_eval_read_the_parts(self):
        cfg, run_dir = self.config("tools")
        self.launch(2, 29741, cfg, "--distributed.zero", "3")
        exported = self.final_weights(run_dir)
        merged = os.path.join(self.dir, "merged")
        code, out = run(["checkpoint", "merge", os.path.join(run_dir, "checkpoints", "last"),
                         "--out", merged])
        self.assertEqual(code, 0, out)
        model = torch.load(os.path.join(merged, "model.pt"))
        self.assertEqual(sorted(model), sorted(exported))
        for k in model:
            self.assertTrue(torch.equal(model[k], exported[k]), k)
        code, out = run(["eval", cfg, "--checkpoint", "last"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"val/loss \d")
        # A new run starts from the checkpoint's weights, in parts or merged (a folder wherever
        # a weights file is taken).
        for i, source in enumerate((os.path.join(run_dir, "checkpoints", "last"), merged)):
            code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, f"fine-tune-{i}"),
                             "--model.init_from", source, "--train.max_length", "1 step"])
            self.assertEqual(code, 0, out)
            self.assertIn("loaded %d of %d tensors" % (len(model), len(model)), out)
        # On 2 processes with ZeRO 3 the model is built in parts and model.init_from loads into
        # them: the same training as plain data parallelism from the same weights.
        finals = []
        for i, zero in enumerate(("0", "3")):
            fine = os.path.join(self.dir, f"fine-tune-zero{zero}")
            self.launch(2, 29745 + i, cfg, "--run_dir", fine, "--model.init_from", merged,
                        "--train.max_length", "2 steps", "--distributed.zero", zero)
            finals.append(self.final_weights(fine))
            with open(os.path.join(fine, "train.log")) as f:
                said = "; built in parts: this process keeps its 1/2 of each unit" in f.read()
            self.assertEqual(said, zero == "3", fine)
        self.assert_close(finals[0], finals[1], 1e-6)

    def test_a_process_lost_inside_the_model_is_named_not_blamed_on_the_module(self):
        # ZeRO 3's collectives run inside forward and backward: a killed worker fails them there.
        cfg, run_dir = self.config("lost", steps=2000)
        log = os.path.join(self.dir, "lost.log")

        def said():
            with open(log) as f:
                return f.read()

        with open(log, "w") as f:
            p = subprocess.Popen([common.BIN, "launch", "--nproc-per-node", "3", "--master-port",
                                  "29757", "--", "train", cfg, "--distributed.zero", "3",
                                  "--distributed.timeout", "5"] + common.slow_steps(20),
                                 stdout=f, stderr=subprocess.STDOUT)
        try:
            self.assertTrue(common.wait_for(lambda: "training: " in said(), 120), said())
            time.sleep(2)  # a few steps in
            victim = common.pid_of_rank(2, cfg)
            self.assertIsNotNone(victim, said())
            os.kill(victim, signal.SIGKILL)
            p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out = said()
        # Inside forward or backward (most of a step) it is said so; a collective outside the
        # module's code (the step's decision) fails with its own message.
        self.assertRegex(out, r"\[rank [01]\] error: (lost a process in the (module's "
                              r"training_step|backward of the loss training_step returned) at "
                              r"step \d+: )?\w+ #\d+")  # (no "rank N:" after the launcher's prefix)
        self.assertIn("did not arrive: rank 2: last seen", out)
        self.assertNotIn("detached tensors", out)
        self.assertNotIn("training_step at step", out.replace("lost a process in the module's "
                                                              "training_step at step", ""))

    def ema_average(self, run_dir):
        """The last checkpoint's ema average: extra-ema.pt, or its parts merged by
        `checkpoint merge` (which writes extra-ema.pt)."""
        last = os.path.join(run_dir, "checkpoints", "last")
        path = os.path.join(last, "extra-ema.pt")
        if not os.path.exists(path):
            self.assertTrue(os.path.exists(os.path.join(last, "ema-shard-rank-1.pt")))
            merged = os.path.join(run_dir, "merged")
            code, out = run(["checkpoint", "merge", last, "--out", merged])
            self.assertEqual(code, 0, out)
            path = os.path.join(merged, "extra-ema.pt")
        return torch.load(path)

    def val_losses(self, run_dir):
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return [json.loads(l)["val/loss"] for l in f if '"val/loss"' in l]

    def test_ema_and_bf16_true_train_as_plain_data_parallel(self):
        ema = ["--callbacks", "[{type: ema, args: {decay: 0.8}}]"]
        cfg, plain = self.config("ema-plain")
        self.launch(2, 29761, cfg, *ema)
        cfg, zero = self.config("ema-zero3")
        self.launch(2, 29762, cfg, "--distributed.zero", "3", *ema)
        self.assert_close(self.ema_average(plain), self.ema_average(zero), 1e-6)
        # Validation ran with the average: the same losses.
        a, b = self.val_losses(plain), self.val_losses(zero)
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            self.assertAlmostEqual(x, y, delta=1e-5)
        # export and eval take the average (--weights validated) from the parts.
        self.assert_close(self.final_weights(plain), self.final_weights(zero), 1e-6)
        # eval evaluates the average too (one process, the whole validation split: as the plain
        # run's checkpoint evaluates), not the trained weights.
        evaluated = {}
        for run_dir, weights in ((plain, "validated"), (zero, "validated"), (zero, "trained")):
            code, out = run(["eval", os.path.join(run_dir, "config.yaml"), "--checkpoint", "last",
                             "--weights", weights])
            self.assertEqual(code, 0, out)
            with open(os.path.join(run_dir, "results", "val.json")) as f:
                evaluated[run_dir, weights] = json.load(f)["metrics"]["val/loss"]
        self.assertAlmostEqual(evaluated[plain, "validated"], evaluated[zero, "validated"],
                               delta=1e-5)
        self.assertNotAlmostEqual(evaluated[zero, "validated"], evaluated[zero, "trained"],
                                  delta=1e-4)

        # bf16-true: the parts' float32 masters step and are saved (model.pt merged is float32,
        # as without ZeRO 3); bfloat16 gradients reduced in another order round differently.
        finals = {}
        for zero_stage, port in (("0", 29763), ("3", 29764)):
            cfg, run_dir = self.config("bf16-true-zero" + zero_stage)
            self.launch(2, port, cfg, "--distributed.zero", zero_stage, "--train.precision",
                        "bf16-true", *ema)
            finals[zero_stage] = self.final_weights(run_dir, "--weights", "trained")
            self.assertTrue(all(t.dtype == torch.float32 for t in finals[zero_stage].values()))
            # The masters' own values, finer than bfloat16 (not bfloat16 weights widened).
            self.assertTrue(any(not torch.equal(t, t.bfloat16().float())
                                for t in finals[zero_stage].values()))
        self.assert_close(finals["0"], finals["3"], BF16_TRUE_BOUND)

    def test_ema_and_bf16_true_resume_bitwise_and_recut(self):
        args = ["--distributed.zero", "3", "--train.precision", "bf16-true", "--callbacks",
                "[{type: ema, args: {decay: 0.8}}]"]
        cfg, ref = self.config("ema-ref")
        self.launch(2, 29765, cfg, *args)
        cfg, half = self.config("ema-half")
        self.launch(2, 29766, cfg, *args, "--train.max_length", "6 steps")
        out = self.launch(2, 29767, cfg, *args)
        self.assertIn("resumed from", out)
        for a, b in ((self.final_weights(ref, "--weights", "trained"),
                      self.final_weights(half, "--weights", "trained")),
                     (self.ema_average(ref), self.ema_average(half))):
            self.assertEqual(sorted(a), sorted(b))
            for k in a:
                self.assertTrue(torch.equal(a[k], b[k]), k)
        # 2 -> 4 processes: the average re-cut as the weights are (plain does the same).
        finals = {}
        for zero, port in (("3", 29768), ("0", 29770)):
            cfg, run_dir = self.config("ema-to4-zero" + zero)
            more = ["--callbacks", "[{type: ema, args: {decay: 0.8}}]"]
            self.launch(2, port, cfg, "--distributed.zero", zero, *more,
                        "--train.max_length", "6 steps")
            out = self.launch(4, port + 1, cfg, "--distributed.zero", zero, *more)
            self.assertIn("resumed from", out)
            finals[zero] = self.ema_average(run_dir)
        self.assert_close(finals["0"], finals["3"], 1e-5)

    def test_what_it_cannot_do_is_refused_before_training(self):
        cfg, _ = self.config("refused")
        scripted = os.path.join(self.dir, "scripted.pt")
        subprocess.run([sys.executable, os.path.join(common.SOURCE, "examples", "torchscript",
                                                     "make_model.py"), scripted], check=True)
        cases = [
            (["--model.type", "mlp", "--model.args", "{sizes: [16, 64]}"],
             "distributed.zero: 3 shards a model by its units"),
            (["--model", f"{{type: torchscript, args: {{path: {scripted}}}}}"],
             "distributed.zero: 3 with model.type: torchscript: the scripted forward runs as one"),
        ]
        for i, (args, message) in enumerate(cases):
            with self.subTest(args=args):
                # Each worker: a config error (exit 2), which the launcher passes on.
                out = self.launch(2, 29751 + i, cfg, "--distributed.zero", "3", *args, expect=2)
                self.assertIn("exited with status 2", out)
                self.assertIn(message, out)
                self.assertNotIn("frame #", out)


if __name__ == "__main__":
    common.main()
