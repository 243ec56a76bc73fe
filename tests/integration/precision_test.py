"""train.precision with the real binary: bf16-mixed and bf16-true train (also a transformer with
LayerNorm, also data-parallel), fp16-mixed is refused on a CPU before anything is written.
Exact resume in every precision: checkpoint_test.py."""
import os

import torch

import common
from common import run, read_jsonl, write

DIGITS_MLP = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 64, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.1, args: {{momentum: 0.9}}}}
train: {{max_length: 3 epochs, log_every: 10 steps, threads: 1}}
checkpoint: {{every: null}}
"""

TEXT = "Call me Ishmael. Some years ago, never mind how long precisely, having little money. " * 60

CHAR_LM = """
run_dir: {run_dir}
seed: 1
model: {{type: transformer_lm, args: {{vocab: 64, d_model: 32, layers: 1, heads: 2, seq_len: 32, dropout: 0.0}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: text_chars, args: {{path: {text}, seq_len: 32}}}}
  loader: {{batch_size: 16, workers: 0}}
optimizer: {{type: adamw, lr: 1.0e-2}}
train: {{max_length: 60 steps, log_every: 10 steps, threads: 1, precision: bf16-mixed}}
checkpoint: {{enabled: false}}
"""


class Precision(common.Case):
    def digits(self, name, batch=64, *args, launch=0):
        run_dir = os.path.join(self.dir, name)
        cfg = write(os.path.join(self.dir, name + ".yaml"),
                    DIGITS_MLP.format(run_dir=run_dir, data=common.DIGITS, batch=batch))
        cmd = ["train", cfg] + list(args)
        if launch:
            cmd = ["launch", "--nproc-per-node", str(launch), "--master-port", "29571", "--"] + cmd
        code, out = run(cmd)
        return code, out, run_dir

    def final_model(self, run_dir):
        return torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))

    def val_accuracy(self, run_dir):
        return [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/accuracy" in e][-1]["val/accuracy"]

    def test_fp16_mixed_is_refused_on_the_cpu_before_the_run_folder_changes(self):
        code, out, run_dir = self.digits("fp16", 64, "--train.precision", "fp16-mixed")
        self.assertEqual(code, 2, out)
        self.assertIn("train.precision: fp16-mixed needs a CUDA device", out)
        self.assertIn("bf16-mixed", out)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)
        code, out, _ = self.digits("typo", 64, "--train.precision", "bf16")
        self.assertEqual(code, 2, out)
        self.assertIn("train.precision", out)
        self.assertIn("bf16-mixed", out)

    def test_bf16_modes_learn_digits_and_save_float32_weights(self):
        accuracy = {}
        for precision in ("fp32", "bf16-mixed", "bf16-true"):
            code, out, run_dir = self.digits(precision, 64, "--train.precision", precision)
            self.assertEqual(code, 0, out)
            self.assertIn(f"optimizer steps; precision {precision}, threads ", out)  # said at start
            # What bfloat16 costs on this CPU, measured at start (a CPU without bf16
            # instructions can be several times slower than fp32: said, with fp32 suggested).
            said = "a bfloat16 matrix product takes" in out
            self.assertEqual(said, precision != "fp32", out)
            if said and "train.precision: fp32" in out:
                self.assertIn("train.precision bf16: ", out)
            accuracy[precision] = self.val_accuracy(run_dir)
            model = self.final_model(run_dir)
            self.assertEqual({t.dtype for t in model.values()}, {torch.float32}, precision)
        for precision, acc in accuracy.items():
            self.assertGreater(acc, 0.9, f"{precision}: {accuracy}")
        self.assertLess(abs(accuracy["bf16-mixed"] - accuracy["fp32"]), 0.05, accuracy)

    def test_bf16_true_data_parallel_follows_one_process(self):
        # Gloo has no bfloat16: the gradient buckets are reduced as float32 and rounded once.
        code, out, one = self.digits("one", 64, "--train.precision", "bf16-true")
        self.assertEqual(code, 0, out)
        code, out, two = self.digits("two", 32, "--train.precision", "bf16-true", launch=2)
        self.assertEqual(code, 0, out)
        a, b = self.final_model(one), self.final_model(two)
        for k in a:
            # bfloat16 gradients of a batch of 64 against two of 32, averaged: rounding apart.
            diff = (a[k] - b[k]).abs().max().item()
            self.assertLess(diff, 0.05 * a[k].abs().max().item() + 1e-3, f"{k}: {diff}")
        self.assertGreater(self.val_accuracy(two), 0.9)

    def test_a_transformer_with_layer_norm_trains_under_bf16_mixed(self):
        text = write(os.path.join(self.dir, "text.txt"), TEXT)
        run_dir = os.path.join(self.dir, "lm")
        cfg = write(os.path.join(self.dir, "lm.yaml"), CHAR_LM.format(run_dir=run_dir, text=text))
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        losses = [e["train/loss"] for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "train/loss" in e]
        self.assertLess(losses[-1], 0.5 * losses[0], losses)


if __name__ == "__main__":
    common.main()
