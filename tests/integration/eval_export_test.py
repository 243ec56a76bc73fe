"""`unitrain eval` and `unitrain export` of a real run's checkpoints: Python's torch
(python3-torch) reads and runs the exported state dicts and TorchScript files."""
import json
import os

import numpy
import torch
import yaml

import common
from common import read_jsonl, run, write
from checkpoint_test import CONFIG, assert_same_tensors, load


class EvalExport(common.Case):
    def setUp(self):
        super().setUp()
        self.cfg = write(os.path.join(self.dir, "run.yaml"), CONFIG)
        self.run_dir = os.path.join(self.dir, "run")
        code, out = run(["train", self.cfg, "--run_dir", self.run_dir, "--train.max_length", "2 epochs",
                         "--checkpoint.every", "20 steps", "--checkpoint.best.metric", "val/acc"])
        self.assertEqual(code, 0, out)

    def test_eval_reproduces_the_logged_validation(self):
        code, out = run(["eval", self.cfg, "--run_dir", self.run_dir])
        self.assertEqual(code, 0, out)
        with open(os.path.join(self.run_dir, "results", "val.json")) as f:
            result = json.load(f)
        best = os.path.realpath(os.path.join(self.run_dir, "checkpoints", "best"))
        self.assertEqual(result["checkpoint"], best)
        logged = next(e for e in read_jsonl(os.path.join(self.run_dir, "metrics.jsonl"))
                      if e["step"] == result["step"] and "val/acc" in e)
        self.assertEqual(result["examples"], 359)
        self.assertAlmostEqual(result["metrics"]["val/acc"], logged["val/acc"], places=9)
        self.assertAlmostEqual(result["metrics"]["val/loss"], logged["val/loss"], places=6)

        code, out = run(["eval", self.cfg, "--run_dir", self.run_dir, "--split", "test"])
        self.assertEqual(code, 2, out)
        self.assertIn("data.test", out)
        code, out = run(["eval", self.cfg, "--run_dir", self.run_dir, "--checkpoint",
                         os.path.join(self.dir, "nowhere")])
        self.assertEqual(code, 2, out)
        self.assertIn("nowhere", out)

    def test_export_state_dict_and_torchscript_run_in_python(self):
        sd_file = os.path.join(self.dir, "model.pt")
        code, out = run(["export", self.cfg, "--run_dir", self.run_dir, "--checkpoint", "last",
                         "--format", "state_dict", "--out", sd_file])
        self.assertEqual(code, 0, out)
        sd = torch.load(sd_file)
        last = os.path.realpath(os.path.join(self.run_dir, "checkpoints", "last"))
        assert_same_tensors(self, sd, load(os.path.join(last, "model.pt")))
        # A folder that is not there is named as given (not a temporary file), exit 2.
        code, out = run(["export", self.cfg, "--run_dir", self.run_dir, "--out",
                         os.path.join(self.dir, "missing", "x.pt")])
        self.assertEqual(code, 2, out)
        self.assertIn(os.path.join(self.dir, "missing") + " does not exist", out)
        self.assertNotIn(".tmp", out)

        ts_file = os.path.join(self.dir, "model.ts")
        code, out = run(["export", self.cfg, "--run_dir", self.run_dir, "--checkpoint", "last",
                         "--format", "torchscript", "--out", ts_file])
        self.assertEqual(code, 0, out)
        scripted = torch.jit.load(ts_file)
        # data.normalize was on: the checkpoint's config holds the statistics training used, and
        # the exported module applies them to raw inputs before the model.
        with open(os.path.join(last, "config.yaml")) as f:
            norm = yaml.safe_load(f)["data"]["normalize"]
        self.assertEqual(len(norm["mean"]), 64)
        mean = torch.tensor(norm["mean"], dtype=torch.float64).float()
        inv_std = (1.0 / torch.tensor(norm["std"], dtype=torch.float64)).float()
        self.assertTrue(torch.equal(scripted.input_mean, mean))
        self.assertTrue(torch.equal(scripted.input_inv_std, inv_std))
        x = torch.rand(5, 64) * 16
        z = (x - mean) * inv_std
        expected = torch.relu(z @ sd["layers.0.weight"].T + sd["layers.0.bias"]) @ sd["layers.1.weight"].T \
            + sd["layers.1.bias"]
        self.assertTrue(torch.allclose(scripted(x), expected, atol=1e-5))

    def test_exported_model_scores_raw_inputs_as_eval_does(self):
        # The whole digits file, unnormalised, as the test split: unitrain eval normalises it
        # with the train statistics; the exported model must give the same accuracy on raw rows.
        code, out = run(["eval", self.cfg, "--run_dir", self.run_dir, "--checkpoint", "last",
                         "--split", "test", "--data.test",
                         f"{{type: csv, args: {{path: {common.DIGITS}, header: false, target: '64'}}}}"])
        self.assertEqual(code, 0, out)
        with open(os.path.join(self.run_dir, "results", "test.json")) as f:
            evaluated = json.load(f)["metrics"]["test/acc"]
        ts_file = os.path.join(self.dir, "model.ts")
        code, out = run(["export", self.cfg, "--run_dir", self.run_dir, "--checkpoint", "last",
                         "--format", "torchscript", "--out", ts_file])
        self.assertEqual(code, 0, out)
        self.assertIn("give it raw inputs", out)
        rows = numpy.loadtxt(common.DIGITS, delimiter=",", dtype=numpy.float32)
        x, y = torch.from_numpy(rows[:, :64]), torch.from_numpy(rows[:, 64]).long()
        with torch.no_grad():
            acc = (torch.jit.load(ts_file)(x).argmax(1) == y).double().mean().item()
        self.assertAlmostEqual(acc, evaluated, places=9)
        self.assertGreater(acc, 0.7)  # a small MLP after 2 epochs

    def test_init_from_a_python_state_dict(self):
        sd = load(os.path.join(self.run_dir, "checkpoints", "last", "model.pt"))
        good = os.path.join(self.dir, "good.pt")
        torch.save(sd, good)
        run_dir = os.path.join(self.dir, "init")
        code, out = run(["train", self.cfg, "--run_dir", run_dir, "--model.init_from", good,
                         "--train.test_mode", "true"])
        self.assertEqual(code, 0, out)

        partial = dict(sd)
        del partial["layers.1.bias"]
        partial["extra.weight"] = torch.zeros(3)
        bad = os.path.join(self.dir, "partial.pt")
        torch.save(partial, bad)
        code, out = run(["train", self.cfg, "--run_dir", run_dir, "--model.init_from", bad,
                         "--checkpoint.resume", "none", "--train.test_mode", "true"])
        self.assertEqual(code, 2, out)
        self.assertIn("layers.1.bias", out)
        self.assertIn("extra.weight", out)
        code, out = run(["train", self.cfg, "--run_dir", run_dir, "--model.init_from", bad,
                         "--model.init_strict", "false", "--checkpoint.resume", "none",
                         "--train.test_mode", "true"])
        self.assertEqual(code, 0, out)

        shapes = dict(sd)
        shapes["layers.0.weight"] = torch.zeros(10, 10)
        torch.save(shapes, bad)
        code, out = run(["train", self.cfg, "--run_dir", run_dir, "--model.init_from", bad,
                         "--model.init_strict", "false", "--checkpoint.resume", "none"])
        self.assertEqual(code, 2, out)
        self.assertIn("layers.0.weight", out)


class EmaEvalExport(common.Case):
    """With the ema callback, validation (and so the best checkpoint) uses the averaged
    weights: eval and export reproduce that by default; --weights trained gives model.pt."""

    def test_eval_and_export_read_the_runs_own_settings_not_the_yaml_given(self):
        """A run trained without input normalization, evaluated with the YAML that normalizes
        (the example's, naming the run by --run_dir): the run's own settings shape the model's
        inputs (the logged accuracy again, not a worse one written without a word), and the
        difference is said; the YAML may still choose what evaluation is (the batch size)."""
        cfg = write(os.path.join(self.dir, "run.yaml"), CONFIG)
        run_dir = os.path.join(self.dir, "raw-inputs")
        code, out = run(["train", cfg, "--run_dir", run_dir, "--train.max_length", "2 epochs",
                         "--data.normalize.enabled", "false"])
        self.assertEqual(code, 0, out)
        code, out = run(["eval", cfg, "--run_dir", run_dir, "--checkpoint", "last",
                         "--data.loader.batch_size", "7"])
        self.assertEqual(code, 0, out)
        self.assertIn("eval: data.normalize.enabled is false in the run", out)
        with open(os.path.join(run_dir, "results", "val.json")) as f:
            result = json.load(f)
        logged = next(e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                      if e["step"] == result["step"] and "val/acc" in e)
        self.assertAlmostEqual(result["metrics"]["val/acc"], logged["val/acc"], places=9)
        out_file = os.path.join(self.dir, "raw-inputs.ts")
        code, out = run(["export", cfg, "--run_dir", run_dir, "--checkpoint", "last",
                         "--format", "torchscript", "--out", out_file])
        self.assertEqual(code, 0, out)
        self.assertIn("export: data.normalize.enabled is false in the run", out)
        self.assertNotIn("normalizes its input", out)  # the run's model takes raw inputs

    def test_eval_and_export_use_the_weights_validation_used(self):
        cfg = write(os.path.join(self.dir, "run.yaml"), CONFIG)
        run_dir = os.path.join(self.dir, "ema")
        code, out = run(["train", cfg, "--run_dir", run_dir, "--train.max_length", "2 epochs",
                         "--checkpoint.best.metric", "val/acc", "--checkpoint.every", "1 epoch",
                         "--callbacks", "[{type: ema, args: {decay: 0.9}}]"])
        self.assertEqual(code, 0, out)
        best = os.path.realpath(os.path.join(run_dir, "checkpoints", "best"))
        averaged = load(os.path.join(best, "extra-ema.pt"))
        trained = load(os.path.join(best, "model.pt"))

        code, out = run(["eval", cfg, "--run_dir", run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("weights: the ema callback's", out)
        with open(os.path.join(run_dir, "results", "val.json")) as f:
            result = json.load(f)
        logged = next(e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                      if e["step"] == result["step"] and "val/acc" in e)
        self.assertAlmostEqual(result["metrics"]["val/loss"], logged["val/loss"], places=6)
        self.assertAlmostEqual(result["metrics"]["val/acc"], logged["val/acc"], places=9)

        code, out = run(["eval", cfg, "--run_dir", run_dir, "--weights", "trained"])
        self.assertEqual(code, 0, out)
        with open(os.path.join(run_dir, "results", "val.json")) as f:
            raw = json.load(f)
        self.assertNotAlmostEqual(raw["metrics"]["val/loss"], logged["val/loss"], places=6)

        out_file = os.path.join(self.dir, "ema.pt")
        code, out = run(["export", cfg, "--run_dir", run_dir, "--checkpoint", "best",
                         "--out", out_file])
        self.assertEqual(code, 0, out)
        exported = torch.load(out_file)
        for name, tensor in averaged.items():
            self.assertTrue(torch.equal(exported[name], tensor), name)
        self.assertFalse(all(torch.equal(exported[n], trained[n]) for n in averaged))
        code, out = run(["export", cfg, "--run_dir", run_dir, "--checkpoint", "best",
                         "--weights", "trained", "--out", os.path.join(self.dir, "raw.pt")])
        self.assertEqual(code, 0, out)
        assert_same_tensors(self, torch.load(os.path.join(self.dir, "raw.pt")), trained)

        code, out = run(["eval", cfg, "--run_dir", run_dir, "--weights", "raw"])
        self.assertEqual(code, 2, out)
        self.assertIn("--weights raw: give validated", out)


if __name__ == "__main__":
    common.main()
