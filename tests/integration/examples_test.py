"""Every example in examples/ runs and does what its comment says."""
import os
import re
import subprocess
import common
from common import run, read_jsonl


def last(events, key):
    return [e[key] for e in events if key in e][-1]


class Examples(common.Case):
    def test_library_example_trains_its_own_module_and_is_safe_to_run_again(self):
        exe = os.path.join(common.BUILD, "examples", "library_classifier")
        outs = []
        for _ in range(3):
            p = subprocess.run([exe, os.path.join(self.dir, "lib")], capture_output=True, text=True,
                               timeout=900)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            outs.append(p.stdout + p.stderr)
        first = re.search(r"step (\d+) val/acc ([0-9.]+)", outs[0])
        self.assertIsNotNone(first, outs[0])
        self.assertNotIn("already complete", outs[0])
        # It builds its model and data from its own code and reads the config's keys it sets.
        self.assertNotIn("nothing in this program read", outs[0])
        self.assertIn("reached val/acc", outs[0])  # its callback stopped it
        # Run again, the stopped run is complete: nothing trains, the same step and accuracy.
        for out in outs[1:]:
            self.assertIn(f"already complete: step {first.group(1)} val/acc {first.group(2)}", out)
            self.assertNotIn("reached val/acc", out)
        # Its last checkpoint read back by evaluate.cpp: the accuracy its last validation had,
        # and a state_dict that Python reads.
        exe = os.path.join(common.BUILD, "examples", "library_evaluate")
        p = subprocess.run([exe, os.path.join(self.dir, "lib")], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("loaded 4 of 4 tensors", p.stdout)
        acc = float(re.search(r"^val/acc (\S+)$", p.stdout, re.M).group(1))
        events = read_jsonl(os.path.join(self.dir, "lib", "metrics.jsonl"))
        self.assertAlmostEqual(acc, last(events, "val/acc"), delta=1e-6)
        import torch
        state = torch.load(os.path.join(self.dir, "lib", "classifier.pt"))
        self.assertEqual({k: tuple(v.shape) for k, v in state.items()},
                         {"net.layers.0.weight": (128, 64), "net.layers.0.bias": (128,),
                          "net.layers.1.weight": (10, 128), "net.layers.1.bias": (10,)})
        p = subprocess.run([exe, os.path.join(self.dir, "lib"), "best"], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)  # no best: a config error
        self.assertIn("checkpoints/best", p.stderr)

    def test_gan_example_steps_its_own_optimizers_on_one_and_two_processes(self):
        exe = os.path.join(common.BUILD, "examples", "library_gan")
        one = os.path.join(self.dir, "gan1")
        p = subprocess.run([exe, one], capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"rank 0 step 580 weights sum")
        step = os.path.join(one, "checkpoints", "step-580")
        for f in ["module-optimizer-discriminator.pt", "module-optimizer-generator.pt",
                  "module-schedule-generator.json"]:
            self.assertTrue(os.path.exists(os.path.join(step, f)), f)
        events = [e for e in read_jsonl(os.path.join(one, "metrics.jsonl")) if "train/g_loss" in e]
        lrs = [e["train/lr-generator"] for e in events]
        self.assertEqual(lrs, sorted(lrs, reverse=True))  # the generator's cosine schedule
        self.assertLess(lrs[-1], lrs[0])
        self.assertEqual({e["train/lr-discriminator"] for e in events}, {2e-3})
        # Two processes: each backward averaged over the ranks, so both hold the same weights
        # although each drew its own noise (zero_grad() works on the gradients it gets).
        two = os.path.join(self.dir, "gan2")
        code, out = run(["launch", "--exec", "--nproc-per-node", "2", "--master-port", "29654",
                         "--", exe, two])
        self.assertEqual(code, 0, out)
        sums = re.findall(r"rank (\d) step 300 weights sum (\S+)", out)
        self.assertEqual(sorted(r for r, _ in sums), ["0", "1"], out)
        self.assertEqual(sums[0][1], sums[1][1], out)

    def test_split_example_cuts_its_own_model_over_processes(self):
        # examples/library/split.cpp: tensor-parallel layers and units for a pipeline. PP 2 is
        # one process's run to the bit (the same sums in the same order); TP 2 and TP 2 x PP 2
        # sum the cut layers' parts in another order: the same curve to rounding.
        exe = os.path.join(common.BUILD, "examples", "library_split")
        p = subprocess.run([exe, os.path.join(self.dir, "split1")], capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        one = float(re.search(r"rank 0 step 115 val/loss (\S+)", p.stdout).group(1))
        self.assertLess(one, 0.2)
        for name, world, plan, port in (("pp", 2, ["1", "2"], "29661"), ("tp", 2, ["2"], "29662"),
                                        ("both", 4, ["2", "2"], "29663")):
            with self.subTest(name):
                code, out = run(["launch", "--exec", "--nproc-per-node", str(world),
                                 "--master-port", port, "--", exe,
                                 os.path.join(self.dir, "split-" + name)] + plan)
                self.assertEqual(code, 0, out)
                losses = re.findall(r"rank \d step 115 val/loss (\S+)", out)
                self.assertEqual(len(losses), world, out)
                self.assertEqual(len(set(losses)), 1, out)  # every process says the same
                if name == "pp":
                    self.assertEqual(float(losses[0]), one)
                self.assertLess(abs(float(losses[0]) - one), 5e-3, out)
        self.assertIn("this process: stage 1 (units 1 to 2), the loss", out)

    def test_plugin_registers_a_model_usable_from_yaml(self):
        plugin = os.path.join(common.BUILD, "examples", "libunitrain_example_plugin.so")
        code, out = run(["list", "--plugin", plugin])
        self.assertEqual(code, 0, out)
        self.assertIn("gated_mlp", out)
        run_dir = os.path.join(self.dir, "gated")
        code, out = run(["train", "examples/plugin/digits_gated.yaml", "--plugin", plugin,
                         "--run_dir", run_dir], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertNotIn("nothing in this program read", out)  # the YAML path reads every key
        self.assertGreaterEqual(last(read_jsonl(os.path.join(run_dir, "metrics.jsonl")), "val/acc"), 0.93)
        code, out = run(["list", "--plugin", "/nonexistent/libx.so"])
        self.assertEqual(code, 2, out)
        self.assertIn("/nonexistent/libx.so", out)

    def test_torchscript_model_from_python_is_trained(self):
        model = os.path.join(self.dir, "digits_mlp.pt")
        subprocess.run(["/usr/bin/python3", os.path.join(common.SOURCE, "examples/torchscript/make_model.py"),
                        model], check=True, timeout=300)
        run_dir = os.path.join(self.dir, "ts")
        code, out = run(["train", "examples/torchscript/digits.yaml", "--model.args.path", model,
                         "--run_dir", run_dir], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertNotIn("nothing in this program read", out)  # the YAML path reads every key
        self.assertGreaterEqual(last(read_jsonl(os.path.join(run_dir, "metrics.jsonl")), "val/acc"), 0.93)

    def test_char_lm_does_what_its_comment_says(self):
        # examples/moby_dick/char_lm.yaml promises numbers for its first 100 steps; those steps
        # are the warmup, which does not depend on max_length, so a 100-step run of the example
        # as written takes exactly the path of the full run.
        text = os.path.join(common.SOURCE, "examples/data/generated/moby_dick.txt")
        if not os.path.exists(text):
            subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                           timeout=600)
        with open(os.path.join(common.SOURCE, "examples/moby_dick/char_lm.yaml")) as f:
            comment = f.read()
        self.assertIn("to below 2.6 at step 100", comment)
        run_dir = os.path.join(self.dir, "lm")
        # One intra-op thread: with ctest running tests side by side, OpenMP threads that spin
        # while waiting make 2-thread runs many times slower on 2 cores; the numbers differ
        # from a 2-thread run only in rounding.
        code, out = run(["train", "examples/moby_dick/char_lm.yaml", "--run_dir", run_dir,
                         "--train.max_length", "100 steps", "--train.threads", "1"],
                        cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertNotIn("nothing in this program read", out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        losses = {e["step"]: e["train/loss"] for e in events if "train/loss" in e}
        self.assertGreater(losses[50], 3.0, losses)  # from ~4.4 (uniform over 85 bytes) ...
        self.assertLess(losses[50], 4.4, losses)
        self.assertLess(losses[100], 2.6, losses)    # ... to below 2.6 at step 100
        self.assertLess(last(events, "val/ppl"), 16.0)  # validated at the run's last step


    def test_tokens_lm_trains_on_the_memory_mapped_token_file(self):
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       timeout=600)  # writes moby_dick.u16.bin beside the text if missing
        run_dir = os.path.join(self.dir, "tokens")
        code, out = run(["train", "examples/moby_dick/tokens_lm.yaml", "--run_dir", run_dir,
                         "--train.max_length", "100 steps", "--train.threads", "1",
                         "--train.log_every", "25 steps"], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("data: 9226 train, 188 val", out)  # char_lm.yaml's windows
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        losses = {e["step"]: e["train/loss"] for e in events if "train/loss" in e}
        self.assertGreater(losses[25], 4.0, losses)  # from ~5.5 (uniform over 256 ids) ...
        self.assertLess(losses[100], 2.7, losses)    # ... to about 2.5 at step 100

    def test_finetune_example_starts_from_the_folder_it_exported(self):
        # docs/finetune.md's walk-through, shortened: pretrain, export as a Hugging Face folder,
        # fine-tune from it (model.args.pretrained), export again.
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       timeout=600)
        pre, folder = os.path.join(self.dir, "pre"), os.path.join(self.dir, "tiny-gpt2")
        short = ["--train.threads", "1", "--train.log_every", "5 steps"]
        code, out = run(["train", "examples/finetune/pretrain.yaml", "--run_dir", pre,
                         "--train.max_length", "40 steps"] + short, cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        code, out = run(["export", "examples/finetune/pretrain.yaml", "--run_dir", pre,
                         "--format", "hf", "--out", folder], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        # The byte-level tokenizer.json the run names travels with the folder.
        self.assertTrue(os.path.exists(os.path.join(folder, "tokenizer.json")))
        fine = os.path.join(self.dir, "fine")
        code, out = run(["train", "examples/finetune/finetune.yaml", "--run_dir", fine,
                         "--model.args.pretrained", folder, "--train.max_length", "5 steps"]
                        + short, cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("loaded 28 of 28 tensors from model.args.pretrained", out)
        pre_loss = [e["train/loss"] for e in read_jsonl(os.path.join(pre, "metrics.jsonl"))
                    if "train/loss" in e]
        fine_loss = [e["train/loss"] for e in read_jsonl(os.path.join(fine, "metrics.jsonl"))
                     if "train/loss" in e]
        self.assertGreater(pre_loss[0], 5.0, pre_loss)  # a fresh model: ~5.5 over 256 ids
        self.assertLess(fine_loss[0], pre_loss[-1] + 0.2, (pre_loss, fine_loss))  # where it left off
        code, out = run(["export", "examples/finetune/finetune.yaml", "--run_dir", fine,
                         "--model.args.pretrained", folder, "--format", "hf", "--out",
                         os.path.join(self.dir, "fine-folder")], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "fine-folder", "model.safetensors")))
        # The run folder in place of the YAML: its config.yaml, the overrides it trained with
        # included.
        code, out = run(["export", fine, "--format", "hf", "--out",
                         os.path.join(self.dir, "fine-folder-2")], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        with open(os.path.join(self.dir, "fine-folder", "model.safetensors"), "rb") as a, \
                open(os.path.join(self.dir, "fine-folder-2", "model.safetensors"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        # The docs' own runs generate: the completion alone on stdout, the loading on stderr.
        p = subprocess.run([common.BIN, "generate", fine, "--prompt", "Call me",
                            "--max-new-tokens", "8"], capture_output=True, text=True,
                           cwd=common.SOURCE, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(p.stdout.endswith("\n"), (p.stdout, p.stderr))  # a completion, a line
        for said in ["checkpoint", "loaded", "warning", "tensors"]:
            self.assertNotIn(said, p.stdout)
        # examples/finetune/lora.yaml on the same folder: adapters only, exported as PEFT's.
        lora = os.path.join(self.dir, "lora")
        given = ["--run_dir", lora, "--model.args.pretrained", folder]
        code, out = run(["train", "examples/finetune/lora.yaml", "--train.max_length", "5 steps"]
                        + given + short, cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("model.lora: adapters of rank 8 on", out)
        code, out = run(["export", "examples/finetune/lora.yaml", "--format", "hf", "--out",
                         os.path.join(self.dir, "lora-adapter")] + given, cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "lora-adapter",
                                                    "adapter_model.safetensors")))

    def test_text_lm_trains_on_paragraphs_with_its_own_tokenizer(self):
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       timeout=600)  # writes moby_dick.paragraphs.jsonl beside the text if missing
        with open(os.path.join(common.SOURCE, "examples/moby_dick/text_lm.yaml")) as f:
            example = f.read()
        self.assertIn("to about 5.9 at step 100", example)
        # The example's own commands, with the tokenizer written to this test's folder.
        prefix = os.path.join(self.dir, "moby_dick_sp")
        code, out = run(["tokenizer", "train", "--input",
                         "examples/data/generated/moby_dick.paragraphs.jsonl", "--vocab-size", "4000",
                         "--out", prefix], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("2557 texts", out)
        run_dir = os.path.join(self.dir, "text")
        code, out = run(["train", "examples/moby_dick/text_lm.yaml", "--run_dir", run_dir,
                         "--data.train.args.tokenizer", prefix + ".model",
                         "--train.max_length", "100 steps", "--train.threads", "1",
                         "--train.log_every", "25 steps"], cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn("data: 2506 train, 51 val", out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        losses = {e["step"]: e["train/loss"] for e in events if "train/loss" in e}
        self.assertGreater(losses[25], 7.5, losses)  # from ~8.3 (uniform over 4000 pieces) ...
        self.assertLess(losses[100], 6.2, losses)    # ... to about 5.9 at step 100
        self.assertLess(last(events, "val/ppl"), 600)


if __name__ == "__main__":
    common.main()
