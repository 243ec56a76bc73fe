"""`unitrain checkpoint inspect | verify | merge` with the real binary, on a 2-process ZeRO-1 run."""
import gzip
import json
import os
import shutil

import torch

import common
from common import run

CONFIG = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 48, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 32, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003}}
train: {{max_length: 20 steps, log_every: 5 steps, threads: 1}}
checkpoint: {{enabled: true, every: 10 steps}}
"""


class CheckpointTools(common.Case):
    def setUp(self):
        super().setUp()
        data = os.path.join(self.dir, "digits.csv")
        with gzip.open(common.DIGITS, "rt") as f:
            common.write(data, "".join(f.readlines()[:960]))
        self.run_dir = os.path.join(self.dir, "run")
        self.cfg = common.write(os.path.join(self.dir, "run.yaml"),
                                CONFIG.format(run_dir=self.run_dir, data=data))
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29641", "--",
                         "train", self.cfg, "--distributed.zero", "1"])
        self.assertEqual(code, 0, out)
        self.step = os.path.join(self.run_dir, "checkpoints", "step-20")

    def test_inspect_as_text_and_json(self):
        code, out = run(["checkpoint", "inspect", self.run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("step 20, epoch 1 completed, 1280 samples seen, batch 5 of its epoch", out)
        self.assertIn("2 process(es), batch 32 per process, accumulation 1, distributed.zero 1", out)
        self.assertIn("train/loss=", out)
        self.assertIn("optimizer-rank-1.pt", out)
        code, out = run(["checkpoint", "inspect", self.step, "--json"])
        self.assertEqual(code, 0, out)
        j = json.loads(out)
        self.assertEqual((j["step"], j["world_size"], j["zero"]), (20, 2, 1))
        self.assertEqual(j["files"]["model.pt"], os.path.getsize(os.path.join(self.step, "model.pt")))
        with open(os.path.join(self.step, "trainer_state.json")) as f:
            self.assertEqual(j["config_hash"], json.load(f)["config_hash"])

    def test_verify_names_a_corrupt_file_and_exits_1(self):
        code, out = run(["checkpoint", "verify", self.run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("step-10: ok", out)
        self.assertIn("step-20: ok", out)
        copy = os.path.join(self.dir, "copy")
        shutil.copytree(self.step, copy)
        with open(os.path.join(copy, "optimizer-rank-1.pt"), "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0xFF]))
        code, out = run(["checkpoint", "verify", copy])
        self.assertEqual(code, 1, out)
        self.assertIn("optimizer-rank-1.pt is corrupt", out)
        code, out = run(["checkpoint", "verify", os.path.join(self.dir, "missing")])
        self.assertEqual(code, 2, out)
        self.assertIn("does not exist", out)

    def test_merge_gives_one_optimizer_file_that_torch_loads_and_one_process_resumes(self):
        merged = os.path.join(self.dir, "merged")
        code, out = run(["checkpoint", "merge", self.step, "--out", merged])
        self.assertEqual(code, 0, out)
        self.assertFalse(any(n.startswith("optimizer-rank-") for n in os.listdir(merged)))
        whole = torch.load(os.path.join(merged, "optimizer.pt"))
        parts = [torch.load(os.path.join(self.step, f"optimizer-rank-{r}.pt")) for r in (0, 1)]
        self.assertEqual(sorted(whole["state"], key=int), [str(i) for i in range(6)])
        for part in parts:
            self.assertEqual(part["groups"], whole["groups"])
            for index, entries in part["state"].items():
                for name, value in entries.items():
                    if torch.is_tensor(value):
                        self.assertTrue(torch.equal(value, whole["state"][index][name]), name)
                    else:
                        self.assertEqual(value, whole["state"][index][name])
        code, out = run(["checkpoint", "verify", merged])
        self.assertEqual(code, 0, out)
        # Never over an existing folder; bad input exits 2, as everywhere.
        code, out = run(["checkpoint", "merge", self.step, "--out", merged])
        self.assertEqual(code, 2, out)
        self.assertIn("exists already", out)
        code, out = run(["checkpoint", "merge", self.step, "--out",
                         os.path.join(self.dir, "missing", "m")])
        self.assertEqual(code, 2, out)
        self.assertIn(os.path.join(self.dir, "missing") + " does not exist", out)
        code, out = run(["checkpoint", "merge", merged, "--out", os.path.join(self.dir, "again")])
        self.assertEqual(code, 2, out)
        self.assertIn("nothing to merge", out)
        # One process resumes from it (the global batch kept: accumulation 2) and trains on.
        code, out = run(["train", self.cfg, "--checkpoint.resume", merged, "--train.max_length",
                         "30 steps"])
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from " + merged + ": epoch 1, step 20, batch 10 of the epoch", out)
        self.assertIn("train.accumulation_steps 1 -> 2", out)
        self.assertIn("done: 30 steps", out)


if __name__ == "__main__":
    common.main()
