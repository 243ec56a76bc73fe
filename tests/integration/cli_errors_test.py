"""Bad input gives a clear error naming the key/file/value and exit code 2; never a crash."""
import os
import shutil

import common
from common import run, write

MLP_DIGITS = """
name: t
model: {type: mlp, args: {sizes: [64, 32, 10]}}
objective: {losses: [{type: cross_entropy}], metrics: [{type: accuracy}]}
data:
  train: {type: csv, args: {path: %s, header: false, target: "64"}}
  loader: {batch_size: 32, workers: 0}
train: {max_length: 1 epoch}
""" % common.DIGITS


class CliErrors(common.Case):
    def expect_usage_error(self, yaml_text, *needles, extra=()):
        cfg = write(os.path.join(self.dir, "run.yaml"), yaml_text)
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "run")] + list(extra))
        self.assertEqual(code, 2, out)
        for n in needles:
            self.assertIn(n, out)
        self.assertNotIn("terminate called", out)
        return out

    def test_unknown_key_with_suggestion(self):
        self.expect_usage_error(MLP_DIGITS + "optimiser: {lr: 0.1}\n", "unknown key 'optimiser'",
                                "did you mean 'optimizer'")

    def test_a_top_level_section_written_inside_another_is_pointed_to(self):
        self.expect_usage_error(MLP_DIGITS, "unknown key 'train.early_stopping': early_stopping is "
                                "a key of the config's top level, not of train",
                                extra=["--train.early_stopping.metric", "val/loss"])

    def test_a_sweep_file_to_train_and_a_run_config_to_sweep_say_which_file_it_is(self):
        sweep = os.path.join(common.SOURCE, "examples/digits/sweep.yaml")
        code, out = run(["train", sweep])
        self.assertEqual(code, 2, out)
        self.assertIn("is a sweep file (it has base: and space:), not a run's config: run it "
                      "with `unitrain sweep", out)
        cfg = write(os.path.join(self.dir, "run.yaml"), MLP_DIGITS)
        code, out = run(["sweep", cfg])
        self.assertEqual(code, 2, out)
        self.assertIn("is a run's config (it has model:, data: or train:), not a sweep file", out)

    def test_wrong_type(self):
        self.expect_usage_error(MLP_DIGITS, "data.loader.batch_size: expected int, got 'many'",
                                extra=["--data.loader.batch_size", "many"])

    def test_zero_and_negative_values(self):
        self.expect_usage_error(MLP_DIGITS, "optimizer.lr must be > 0, got -0.1",
                                extra=["--optimizer.lr", "-0.1"])
        self.expect_usage_error(MLP_DIGITS, "data.loader.batch_size must be > 0, got 0",
                                extra=["--data.loader.batch_size", "0"])

    def test_a_run_folder_started_elsewhere_is_named_where_a_path_is_not_found(self):
        started = os.path.join(self.dir, "started")
        os.makedirs(started)
        shutil.copy(common.DIGITS, os.path.join(started, "digits.csv.gz"))
        cfg = write(os.path.join(started, "run.yaml"), MLP_DIGITS.replace(
            common.DIGITS, "digits.csv.gz") + "run_dir: run\n")
        code, out = run(["train", cfg, "--train.max_length", "1 step"], cwd=started)
        self.assertEqual(code, 0, out)
        folder = os.path.join(started, "run")
        # From another folder: the relative data path is not found there, and the note says why.
        code, out = run(["eval", folder, "--split", "val"], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("was started in " + started, out)
        # An error about anything else is not given the note.
        code, out = run(["eval", folder, "--optimizer.lr", "-1"], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertNotIn("was started in", out)
        # A copy of the folder is the same run: its folder is no setting it trained with.
        copy = os.path.join(started, "copy")
        shutil.copytree(folder, copy)
        code, out = run(["train", copy], cwd=started)
        self.assertEqual(code, 0, out)
        self.assertIn("training already complete", out)
        self.assertNotIn("other settings", out)

    def test_a_command_option_out_of_range_says_its_bound(self):
        cfg = write(os.path.join(self.dir, "bounds.yaml"), MLP_DIGITS)
        for words, said in ((["eval", cfg, "--text", cfg, "--window", "-5"],
                             "--window: -5 is less than 0"),
                            (["export", cfg, "--format", "hf", "--out", "x", "--max-shard-size",
                              "0"], "--max-shard-size: 0 is not more than 0"),
                            (["export", cfg, "--format", "hf", "--out", "x", "--max-shard-size",
                              "2x"], "--max-shard-size: '2x' is not a number")):
            code, out = run(words)
            self.assertEqual(code, 2, out)
            self.assertIn(said, out)
            self.assertNotIn("179769313486", out)

    def test_a_gpu_where_there_is_none_names_the_key_and_what_the_build_has(self):
        out = self.expect_usage_error(MLP_DIGITS, "train.device: cuda asks for a GPU, but this "
                                      "LibTorch (", "was built without CUDA (CPU only); use "
                                      "train.device: cpu", extra=["--train.device", "cuda"])
        self.assertNotIn("device: ", out.replace("train.device: ", ""))  # nothing started
        # A refusal changes nothing on disk: no run folder holding only its lock file.
        self.assertFalse(os.path.exists(os.path.join(self.dir, "run")), os.listdir(self.dir))
        self.expect_usage_error(MLP_DIGITS, "train.device: 'gpu' is not a device: write cpu, "
                                "cuda, cuda:N", extra=["--train.device", "gpu"])
        # auto trains on the CPU here, and says so.
        cfg = write(os.path.join(self.dir, "auto.yaml"), MLP_DIGITS)
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "auto")])
        self.assertEqual(code, 0, out)
        self.assertIn("device: cpu\n", out)
        self.assertNotIn("deterministic: on", out)
        self.assertNotIn("memory", out.split("done: ")[1].split("\n")[0])  # no device peak
        # Pinned batches serve copies to a GPU: asked for on the CPU, the key is named.
        self.expect_usage_error(MLP_DIGITS, "data.loader.pin_memory: true pins batches for "
                                "copies to a GPU, but the run's device (train.device) is the CPU",
                                extra=["--data.loader.pin_memory", "true"])

    def test_a_name_that_is_not_utf8_is_refused_with_its_bytes_escaped(self):
        # --name with the byte 0xff (Python passes the surrogate escape as that raw byte); the
        # output is decoded strictly, so a raw byte in it fails the run() below.
        code, out = run(["train", write(os.path.join(self.dir, "ok.yaml"), MLP_DIGITS),
                         "--name", "run\udcff", "--train.max_length", "1 step"], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("name must be valid UTF-8 text (it names the run folder); got 'run\\xff'",
                      out)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "runs")), out)
        # The same byte in the YAML file.
        cfg = os.path.join(self.dir, "bytes.yaml")
        with open(cfg, "wb") as f:
            f.write(MLP_DIGITS.replace("name: t", "name: caf\xe9").encode("latin-1"))
        code, out = run(["train", cfg], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("got 'caf\\xe9'", out)
        # Bytes that are not UTF-8 in any other value a message echoes come out escaped too.
        code, out = run(["train", cfg, "--name", "ok", "--optimizer.type", "adam\udcfe"],
                        cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("unknown optimizer 'adam\\xfe'", out)

    def test_unknown_component_lists_known(self):
        self.expect_usage_error(MLP_DIGITS.replace("type: mlp", "type: mlpp"),
                                "unknown model 'mlpp' at model.type", "known:", "transformer_lm")

    def test_missing_data_file(self):
        self.expect_usage_error(MLP_DIGITS.replace(common.DIGITS, "/nonexistent/digits.csv"),
                                "/nonexistent/digits.csv")

    def test_csv_non_numeric_cell_names_line_and_column(self):
        csv = write(os.path.join(self.dir, "bad.csv"), "a,b,label\n1,2,0\n3,oops,1\n")
        out = self.expect_usage_error(MLP_DIGITS.replace(common.DIGITS, csv)
                                      .replace('header: false, target: "64"', "target: label"),
                                      "bad.csv", "line 3", "oops")
        self.assertTrue("column 2" in out or "column 'b'" in out or "'b'" in out, out)
        # A number float32 cannot hold would become inf: refused as nan is, named.
        big = write(os.path.join(self.dir, "big.csv"), "a,b,label\n1,2,0\n3,1e39,1\n")
        self.expect_usage_error(MLP_DIGITS.replace(common.DIGITS, big)
                                .replace('header: false, target: "64"', "target: label"),
                                "big.csv' line 3, column 2 ('b'): 1e39 is outside float32's range")

    def test_a_name_is_one_folder_name(self):
        for name in ("../escape", "a/b", ".."):
            code, out = run(["train", write(os.path.join(self.dir, "ok.yaml"), MLP_DIGITS),
                             "--name", name], cwd=self.dir)
            self.assertEqual(code, 2, out)
            self.assertIn(f"name '{name}' must be one folder name", out)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "runs")))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "escape")))

    def test_model_output_shape_not_fitting_target(self):
        out = self.expect_usage_error(MLP_DIGITS.replace("[64, 32, 10]", "[64, 32, 3]")
                                      .replace("cross_entropy", "mse"), "mse", "[32, 3]", "[32]")

    def test_init_from_a_torchscript_file_names_the_fix_without_a_backtrace(self):
        import torch
        script = os.path.join(self.dir, "net.pt")
        torch.jit.script(torch.nn.Linear(64, 10)).save(script)
        out = self.expect_usage_error(MLP_DIGITS, "model.init_from " + script,
                                      "is a TorchScript module", "--format state_dict",
                                      extra=["--model.init_from", script])
        self.assertNotIn("frame #", out)
        self.assertNotIn("Exception raised from", out)

    def test_dataset_smaller_than_one_batch_with_drop_last(self):
        csv = write(os.path.join(self.dir, "tiny.csv"), "a,label\n1,0\n2,1\n")
        self.expect_usage_error(MLP_DIGITS.replace(common.DIGITS, csv)
                                .replace('header: false, target: "64"', "target: label")
                                .replace("workers: 0", "workers: 0, drop_last: true"),
                                "batch_size", "32", "2")

    def test_empty_config_and_empty_data_file(self):
        self.expect_usage_error("\n", "is empty")
        csv = write(os.path.join(self.dir, "empty.csv"), "")
        self.expect_usage_error(MLP_DIGITS.replace(common.DIGITS, csv), "empty.csv")

    def test_broken_yaml_names_the_line(self):
        self.expect_usage_error("name: t\nmodel: {type: mlp\ntrain: {}\n", "run.yaml:", "broken YAML")

    def test_a_second_yaml_document_is_refused_naming_its_line(self):
        # Before, the keys after `---` were ignored without a word.
        self.expect_usage_error(MLP_DIGITS + "---\noptimizer: {type: sgd, lr: 0.5}\n",
                                "a second YAML document")

    def test_train_without_a_file_is_an_error_like_the_others(self):
        code, out = run(["train"])
        self.assertEqual(code, 2, out)
        self.assertIn("error: config is required (unitrain train --help says what it takes)", out)

    def test_far_more_reader_threads_than_cpus_are_said(self):
        cfg = write(os.path.join(self.dir, "run.yaml"), MLP_DIGITS)
        cpus = len(os.sched_getaffinity(0))
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "run"),
                         "--data.loader.workers", str(8 * cpus + 1),
                         "--train.max_length", "1 steps"])
        self.assertEqual(code, 0, out)
        self.assertIn(f"data.loader.workers {8 * cpus + 1}: this process may use {cpus} CPU", out)

    def test_missing_config_file(self):
        code, out = run(["train", os.path.join(self.dir, "none.yaml")])
        self.assertEqual(code, 2, out)
        self.assertIn("none.yaml' does not exist", out)

    def test_nothing_saved_is_overwritten_by_a_failed_start(self):
        run_dir = os.path.join(self.dir, "run")
        keep = write(os.path.join(run_dir, "metrics.jsonl"), '{"step": 1}\n')
        self.expect_usage_error(MLP_DIGITS + "optimiser: {}\n", "unknown key")
        with open(keep) as f:
            self.assertEqual(f.read(), '{"step": 1}\n')

    def test_a_monitored_validation_metric_without_validation_data(self):
        # Said at start (nothing written), not after a silent run whose best is NaN.
        for extra, key in ((["--checkpoint.best.metric", "val/accuracy"], "checkpoint.best.metric"),
                           (["--early_stopping.metric", "val/loss"], "early_stopping.metric")):
            out = self.expect_usage_error(MLP_DIGITS, f"{key}: '", "is a validation metric, but "
                                          "this run has no validation data",
                                          "data.validation_ratio", extra=extra)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "run", "config.yaml")), out)
        # With validation data it trains.
        cfg = write(os.path.join(self.dir, "val.yaml"),
                    MLP_DIGITS.replace("  loader:", "  validation_ratio: 0.2\n  loader:"))
        code, out = run(["train", cfg, "--run_dir", os.path.join(self.dir, "ok"),
                         "--checkpoint.best.metric", "val/accuracy"])
        self.assertEqual(code, 0, out)

    def test_help_on_every_subcommand(self):
        for sub in ([], ["train"], ["config"], ["list"]):
            code, out = run(sub + ["--help"])
            self.assertEqual(code, 0, out)
            self.assertIn("Usage", out)


if __name__ == "__main__":
    common.main()
