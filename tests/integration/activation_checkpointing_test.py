"""Activation checkpointing with the real binary: a transformer_lm with dropout trains to the same
weights, bit for bit, with model.activation_checkpointing on and off — in one process, under
bf16-mixed and with two processes — and a model without blocks is refused before training."""
import os

import torch

import common
from common import run

CONFIG = """
run_dir: {run_dir}
seed: 3
model:
  type: transformer_lm
  args: {{vocab: 50, d_model: 32, layers: 3, heads: 4, seq_len: 16, dropout: 0.1}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 16}}}}
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003, args: {{weight_decay: 0.01}}}}
train: {{max_length: 12 steps, log_every: 4 steps, threads: 1, clip_grad_norm: 1.0}}
checkpoint: {{enabled: true, every: 6 steps}}
"""


class ActivationCheckpointing(common.Case):
    def config(self, name):
        data = os.path.join(self.dir, "tokens.bin")
        if not os.path.exists(data):
            g = torch.Generator().manual_seed(0)
            ids = torch.randint(50, (4000,), generator=g, dtype=torch.int32).numpy().astype("<u2")
            with open(data, "wb") as f:
                f.write(ids.tobytes())
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=data))
        return cfg, run_dir

    def train(self, name, *args, world=1, port=0):
        cfg, run_dir = self.config(name)
        if world == 1:
            code, out = run(["train", cfg] + list(args))
        else:
            code, out = run(["launch", "--nproc-per-node", str(world), "--master-port", str(port),
                             "--", "train", cfg] + list(args))
        self.assertEqual(code, 0, out)
        return run_dir

    def assert_same_weights(self, a, b):
        wa, wb = self.final_weights(a), self.final_weights(b)
        self.assertEqual(list(wa), list(wb))
        for k in wa:
            self.assertTrue(torch.equal(wa[k], wb[k]),
                            f"{k}: max difference {(wa[k] - wb[k]).abs().max().item()}")

    def test_results_equal_the_run_without_bitwise(self):
        on = ["--model.activation_checkpointing.enabled", "true"]
        cases = [("fp32", [], 1), ("every2", ["--model.activation_checkpointing.every", "2"], 1),
                 ("bf16", ["--train.precision", "bf16-mixed"], 1), ("ddp", [], 2)]
        for name, extra, world in cases:
            with self.subTest(name):
                base = extra if name != "every2" else []
                plain = self.train(name + "-plain", *base, world=world, port=29701)
                recomputed = self.train(name + "-ac", *(on + extra), world=world, port=29702)
                self.assert_same_weights(plain, recomputed)

    def test_switched_on_when_resuming_goes_on_exactly(self):
        whole = self.train("whole")
        cfg, half = self.config("half")
        code, out = run(["train", cfg, "--train.max_length", "6 steps"])
        self.assertEqual(code, 0, out)
        code, out = run(["train", cfg, "--model.activation_checkpointing.enabled", "true"])
        self.assertEqual(code, 0, out)
        self.assertIn("resum", out)
        self.assertIn("activation checkpointing: every block", out)
        self.assert_same_weights(whole, half)

    def test_a_model_without_blocks_is_refused(self):
        cfg, _ = self.config("mlp")
        code, out = run(["train", cfg, "--model.type", "mlp", "--model.args", "{sizes: [16, 50]}",
                         "--model.activation_checkpointing.enabled", "true"])
        self.assertEqual(code, 2, out)
        self.assertIn("model.activation_checkpointing.enabled: model type 'mlp' has no blocks", out)
        self.assertNotIn("frame #", out)


if __name__ == "__main__":
    common.main()
