"""LoRA (model.lora) with the real binary on tiny GPT-2 and Llama folders (make_folders.py): step
0's loss is the base model's to the bit, only the adapters train and the loss falls, checkpoints
hold the adapters alone, a kill -9 resumes bitwise, `export --format hf` writes PEFT's adapter
folder and `--merge` the base with W + (alpha / r) B A; two processes with ZeRO 2, bf16-mixed and
activation checkpointing resume bitwise after rank 1 is killed -9, as ZeRO 3 does after a stop; bad settings and a changed base are refused by name."""
import glob
import json
import math
import os
import signal
import subprocess
import sys

import torch
import yaml

import common
from common import run, read_jsonl, wait_for

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "tests", "models", "hf"))
import safetensors_io  # noqa: E402

TARGETS = {"gpt2": "[c_attn, c_fc]", "llama": "[q_proj, v_proj, down_proj]"}
CONFIG = """
run_dir: {run_dir}
seed: 5
model:
  type: {type}
  args: {{pretrained: {folder}}}
  lora: {lora}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 12}}}}
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.03}}
train: {{max_length: 8 steps, log_every: 1 step, threads: 1}}
checkpoint: {{enabled: true, every: 4 steps}}
"""


class Lora(common.Case):
    def setUp(self):
        super().setUp()
        self.folders = os.path.join(self.dir, "folders")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests/models/hf/make_folders.py"),
                        self.folders], check=True, stdout=subprocess.DEVNULL)
        self.data = os.path.join(self.dir, "tokens.bin")
        # A repeated phrase of 13 tokens: learnable in a few steps.
        phrase = torch.randint(96, (13,), generator=torch.Generator().manual_seed(3))
        with open(self.data, "wb") as f:
            f.write(phrase.repeat(120).numpy().astype("<u2").tobytes())

    def config(self, name, type, lora=None):
        lora = lora or "{r: 4, alpha: 8, target_modules: %s}" % TARGETS[type]
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, type=type, folder=os.path.join(self.folders, type), data=self.data,
            lora=lora)), run_dir

    def losses(self, run_dir):
        return [e["train/loss"] for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                if "train/loss" in e]

    def adapters(self, run_dir):
        return torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))

    def train_killed_at_step_4_then_resumed(self, cfg, run_dir):
        p = subprocess.Popen([common.BIN, "train", cfg] + common.slow_steps(400),
                             stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.assertTrue(wait_for(lambda: os.path.exists(
            os.path.join(run_dir, "checkpoints", "step-4", "MANIFEST.json"))))
        p.kill()  # SIGKILL: no save, no clean-up
        self.assertEqual(p.wait(timeout=60), -signal.SIGKILL)
        code, out = run(["train", cfg] + common.slow_steps(0))
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from", out)

    def check_peft_folder(self, type, out_dir, adapters):
        with open(os.path.join(out_dir, "adapter_config.json")) as f:
            cfg = json.load(f)
        expect = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 4, "lora_alpha": 8,
                  "lora_dropout": 0, "bias": "none", "use_rslora": False,
                  "fan_in_fan_out": type == "gpt2",
                  "base_model_name_or_path": os.path.join(self.folders, type),
                  "target_modules": sorted(TARGETS[type].strip("[]").split(", "))}
        self.assertEqual({k: cfg[k] for k in expect}, expect)
        peft = safetensors_io.read_safetensors(os.path.join(out_dir, "adapter_model.safetensors"))
        self.assertEqual(sorted(peft), sorted("base_model.model." + k for k in adapters))
        for k, t in adapters.items():
            self.assertTrue(torch.equal(peft["base_model.model." + k], t), k)
        return peft

    def check_merged(self, type, merged_dir, peft):
        base = safetensors_io.read_folder(os.path.join(self.folders, type))
        merged = safetensors_io.read_folder(merged_dir)
        self.assertEqual(sorted(base), sorted(merged))
        adapted = set()
        for k in peft:
            if ".lora_A." not in k:
                continue
            layer = k[len("base_model.model."):-len(".lora_A.weight")]
            a, b = peft[k], peft[k.replace("lora_A", "lora_B")]
            delta = (b @ a) * (8 / 4)  # get_delta_weight: transpose(B A, fan_in_fan_out) * scaling
            name = layer + ".weight"
            adapted.add(name)
            want = base[name] + (delta.t() if type == "gpt2" else delta)
            self.assertTrue(torch.allclose(merged[name], want, atol=1e-6), name)
        for name in set(base) - adapted:
            self.assertTrue(torch.equal(merged[name], base[name]), name)

    def test_gpt2_and_llama_adapters_train_resume_after_kill_and_export_as_peft(self):
        for type in ("gpt2", "llama"):
            with self.subTest(type=type):
                cfg, base_dir = self.config(f"{type}-base", type, lora="null")
                code, out = run(["train", cfg, "--train.max_length", "1 step"])
                self.assertEqual(code, 0, out)
                cfg, straight = self.config(f"{type}-lora", type)
                code, out = run(["train", cfg])
                self.assertEqual(code, 0, out)
                self.assertIn("model.lora: adapters of rank 4", out)
                losses = self.losses(straight)
                self.assertEqual(losses[0], self.losses(base_dir)[0])  # B = 0: the base model
                self.assertLess(max(losses[-2:]), 0.8 * losses[0])
                adapters = self.adapters(straight)
                self.assertTrue(adapters and all(".lora_" in k for k in adapters), list(adapters))
                step = os.path.join(straight, "checkpoints", "last")
                self.assertTrue(os.path.exists(os.path.join(step, "frozen_weights.json")))
                cfg_k, killed = self.config(f"{type}-killed", type)
                self.train_killed_at_step_4_then_resumed(cfg_k, killed)
                for k, t in self.adapters(killed).items():
                    self.assertTrue(torch.equal(t, adapters[k]), k)
                peft_dir, merged_dir = (os.path.join(self.dir, f"{type}-{w}") for w in ("peft", "merged"))
                code, out = run(["export", cfg, "--format", "hf", "--out", peft_dir])
                self.assertEqual(code, 0, out)
                peft = self.check_peft_folder(type, peft_dir, adapters)
                code, out = run(["export", cfg, "--format", "hf", "--merge", "--out", merged_dir])
                self.assertEqual(code, 0, out)
                self.check_merged(type, merged_dir, peft)
                # The adapter continues a run of its own (model.init_from): step 0 is its end.
                cfg, again = self.config(f"{type}-again", type)
                code, out = run(["train", cfg, "--model.init_from", peft_dir,
                                 "--train.max_length", "1 step", "--optimizer.lr", "1e-30"])
                self.assertEqual(code, 0, out)
                self.assertIn("adapter tensors loaded", out)

    def test_two_processes_zero2_bf16_checkpointing_kill_and_zero3_resume_bitwise(self):
        more = ["--distributed.zero", "2", "--train.precision", "bf16-mixed",
                "--model.activation_checkpointing.enabled", "true"]
        finals = []
        for name, port in (("base", 29868), ("straight", 29871), ("halves", 29874)):
            cfg, run_dir = self.config(name, "llama", lora="null" if name == "base" else None)
            launch = ["launch", "--nproc-per-node", "2", "--master-port", str(port), "--", "train",
                      cfg] + more
            if name == "base":
                code, out = run(launch + ["--train.max_length", "4 steps"])
                self.assertEqual(code, 0, out)
            if name == "halves":  # rank 1 killed -9 once step 4's checkpoint is complete
                p = subprocess.Popen([common.BIN] + launch + common.slow_steps(400),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                self.assertTrue(wait_for(lambda: os.path.exists(
                    os.path.join(run_dir, "checkpoints", "step-4", "MANIFEST.json"))))
                os.kill(common.pid_of_rank(1, cfg), signal.SIGKILL)
                out = p.communicate(timeout=120)[0]
                self.assertNotEqual(p.returncode, 0, out)
                self.assertIn("killed by signal 9", out)
            if name == "base":
                base = self.losses(run_dir)
                continue
            code, out = run(launch)
            self.assertEqual(code, 0, out)
            finals.append(self.adapters(run_dir))
            losses = self.losses(run_dir)
            self.assertEqual(losses[0], base[0])  # step 0: the base model, on 2 processes too
            self.assertLess(max(losses[-2:]), 0.8 * losses[0])
        self.assertEqual(sorted(finals[0]), sorted(finals[1]))
        for k in finals[0]:
            self.assertTrue(torch.equal(finals[0][k], finals[1][k]), k)
        # ZeRO 3: the base built in parts, the adapters in their blocks' units; bitwise resume.
        zero3 = []
        for name, port in (("z3-straight", 29877), ("z3-halves", 29880)):
            cfg, run_dir = self.config(name, "llama")
            launch = ["launch", "--nproc-per-node", "2", "--master-port", str(port), "--", "train",
                      cfg, "--distributed.zero", "3", "--callbacks", "[{type: ema}]"]
            if name == "z3-halves":
                code, out = run(launch + ["--train.max_length", "4 steps"])
                self.assertEqual(code, 0, out)
            code, out = run(launch)
            self.assertEqual(code, 0, out)
            self.assertIn("built in parts", out)
            losses = self.losses(run_dir)
            zero3.append(losses)
        self.assertEqual(zero3[0], zero3[1])
        self.assertLess(max(zero3[0][-2:]), 0.8 * zero3[0][0])
        # Its checkpoints hold the adapters' parts alone and fingerprint the base as any run's.
        last = os.path.join(run_dir, "checkpoints", "last")
        self.assertTrue(os.path.exists(os.path.join(last, "frozen_weights.json")))
        base = os.path.getsize(os.path.join(self.folders, "llama", "model.safetensors"))
        for kind in ("model", "ema"):  # the ema callback's average: of the adapters alone too
            files = glob.glob(os.path.join(last, kind + "-shard-rank-*.pt"))
            self.assertEqual(len(files), 2, os.listdir(last))
            parts = sum(os.path.getsize(f) for f in files)
            self.assertLess(parts, base / 5, (kind, parts, base))
        peft_dir = os.path.join(self.dir, "z3-peft")
        code, out = run(["export", cfg, "--format", "hf", "--out", peft_dir])
        self.assertEqual(code, 0, out)
        # What was read, said as it is: the adapters, from the ranks' parts.
        self.assertRegex(out, r"loaded 12 trained tensors from checkpoint \S+ \(model-shard-rank-0"
                              r"\.pt, \.\.\.: the ranks' parts\); the frozen base's \d+ as")
        peft = safetensors_io.read_safetensors(os.path.join(peft_dir, "adapter_model.safetensors"))
        self.assertEqual(len(peft), 2 * 3 * 2)  # 2 blocks x 3 targets x (A, B)
        # The adapter starts a run of its own (model.init_from) with ZeRO 3, the base built in
        # parts: as without ZeRO 3.
        from_adapter = []
        for zero, port in (("3", 29883), ("0", 29886)):
            cfg2, run_dir2 = self.config("from-peft-zero" + zero, "llama")
            code, out = run(["launch", "--nproc-per-node", "2", "--master-port", str(port), "--",
                             "train", cfg2, "--distributed.zero", zero, "--model.init_from",
                             peft_dir, "--train.max_length", "2 steps"])
            self.assertEqual(code, 0, out)
            self.assertIn("12 adapter tensors loaded", out)
            from_adapter.append(self.losses(run_dir2))
        self.assertEqual(from_adapter[0], from_adapter[1])
        # Resumed on 1 process (its parts re-cut, the base as built), and without ZeRO 3.
        for zero, steps in (("3", "10 steps"), ("0", "12 steps")):
            code, out = run(["train", cfg, "--distributed.zero", zero,
                             "--train.max_length", steps])
            self.assertEqual(code, 0, out)
            self.assertIn("resumed from", out)

    def card(self, folder):
        """README.md's front matter (YAML between the --- lines) and its text."""
        with open(os.path.join(folder, "README.md")) as f:
            _, front, text = f.read().split("---\n", 2)
        return yaml.safe_load(front), text

    def test_all_linear_regex_and_modules_to_save_export_with_tokenizer_and_card(self):
        llama = os.path.join(self.folders, "llama")
        tokenizer = {"tokenizer.json": {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
            "decoder": None,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2},
                      "unk_token": "[UNK]"}},
            "tokenizer_config.json": {"eos_token": "b", "model_max_length": 64},
            "special_tokens_map.json": {"eos_token": "b"}}
        for name, content in tokenizer.items():
            common.write(os.path.join(llama, name), json.dumps(content))
        lora = "{r: 4, alpha: 8, target_modules: all-linear, modules_to_save: [lm_head]}"
        cfg, run_dir = self.config("all", "llama", lora=lora)
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        self.assertIn("adapters of rank 4 on 14 layers (scaling 2), modules_to_save lm_head", out)
        trained = self.adapters(run_dir)
        base = safetensors_io.read_folder(llama)
        self.assertFalse(torch.equal(trained["lm_head.weight"], base["lm_head.weight"]))
        self.assertEqual(len(trained), 2 * 14 + 1)
        peft_dir, merged_dir = (os.path.join(self.dir, "all-" + w) for w in ("peft", "merged"))
        code, out = run(["export", cfg, "--format", "hf", "--out", peft_dir])
        self.assertEqual(code, 0, out)
        with open(os.path.join(peft_dir, "adapter_config.json")) as f:
            adapter = json.load(f)
        self.assertEqual(adapter["target_modules"], sorted(
            ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
        self.assertEqual(adapter["modules_to_save"], ["lm_head"])
        peft = safetensors_io.read_safetensors(os.path.join(peft_dir, "adapter_model.safetensors"))
        # PEFT's names: its ModulesToSaveWrapper's "modules_to_save.default." left out.
        self.assertEqual(sorted(peft), sorted("base_model.model." + k for k in trained))
        self.assertTrue(torch.equal(peft["base_model.model.lm_head.weight"], trained["lm_head.weight"]))
        for name in tokenizer:
            with open(os.path.join(peft_dir, name)) as a, open(os.path.join(llama, name)) as b:
                self.assertEqual(a.read(), b.read(), name)
        front, text = self.card(peft_dir)
        self.assertEqual(front["library_name"], "peft")
        self.assertEqual(front["base_model"], llama)
        self.assertIn("base_model:adapter:" + llama, front["tags"])
        self.assertIn("r 4, lora_alpha 8", text)
        self.assertIn("modules_to_save (trained in full): lm_head", text)
        self.assertIn("Trained for 8 steps", text)
        code, out = run(["export", cfg, "--format", "hf", "--merge", "--out", merged_dir])
        self.assertEqual(code, 0, out)
        merged = safetensors_io.read_folder(merged_dir)
        self.assertTrue(torch.equal(merged["lm_head.weight"], trained["lm_head.weight"]))
        self.assertTrue(os.path.exists(os.path.join(merged_dir, "tokenizer_config.json")))
        self.assertEqual(self.card(merged_dir)[0]["library_name"], "transformers")
        # The folder comes back as a run's start: lm_head's trained values with the adapters.
        cfg2, _ = self.config("all-again", "llama", lora=lora)
        code, out = run(["train", cfg2, "--model.init_from", peft_dir, "--train.max_length",
                         "1 step", "--optimizer.lr", "1e-30"])
        self.assertEqual(code, 0, out)
        self.assertIn("29 adapter tensors loaded", out)
        cfg3, _ = self.config("all-other", "llama", lora=lora)
        code, out = run(["train", cfg3, "--model.init_from", peft_dir,
                         "--model.lora.modules_to_save", "[]"])
        self.assertEqual(code, 2, out)
        self.assertIn('adapter_config.json: modules_to_save is ["lm_head"], '
                      "model.lora.modules_to_save is []", out)
        # A regular expression matches whole names (PEFT's re.fullmatch).
        cfg, _ = self.config("regex", "llama",
                             lora=r"{r: 4, alpha: 8, target_modules: '.*\.(q_proj|v_proj)'}")
        code, out = run(["train", cfg, "--train.max_length", "1 step"])
        self.assertEqual(code, 0, out)
        self.assertIn("adapters of rank 4 on 4 layers", out)
        code, out = run(["train", cfg, "--model.lora.target_modules", "q_proj"])
        self.assertEqual(code, 2, out)
        self.assertIn("model.lora.target_modules: 'q_proj' matches no layer's whole name", out)
        # A tied head's embedding cannot be trained apart from it as PEFT would.
        tied = self.config("tied", "llama", lora="{r: 4, target_modules: [q_proj], "
                           "modules_to_save: [embed_tokens]}")[0]
        code, out = run(["train", tied, "--model.args.pretrained",
                         os.path.join(self.folders, "llama_tied_bias")])
        self.assertEqual(code, 2, out)
        self.assertIn("model.lora.modules_to_save: model.embed_tokens holds the token embedding "
                      "that the tied output head also computes with", out)

    def test_bad_settings_and_a_changed_base_are_refused_by_name(self):
        cfg, run_dir = self.config("bad", "llama", lora="{r: 4, target_modules: [q_projj]}")
        code, out = run(["train", cfg])
        self.assertEqual(code, 2, out)
        self.assertIn("model.lora.target_modules: 'q_projj' names no layer", out)
        cfg, run_dir = self.config("changed", "llama")
        code, out = run(["train", cfg, "--train.max_length", "4 steps"])
        self.assertEqual(code, 0, out)
        code, out = run(["export", cfg, "--format", "safetensors", "--merge", "--out",
                         os.path.join(self.dir, "m.safetensors")])
        self.assertEqual(code, 2, out)
        self.assertIn("--merge: only --format hf", out)
        peft_dir = os.path.join(self.dir, "changed-peft")
        code, out = run(["export", cfg, "--format", "hf", "--out", peft_dir])
        self.assertEqual(code, 0, out)
        other, _ = self.config("other-r", "llama", lora="{r: 2, alpha: 8, target_modules: [q_proj]}")
        code, out = run(["train", other, "--model.init_from", peft_dir])
        self.assertEqual(code, 2, out)
        self.assertIn("adapter_config.json: r is 4, model.lora.r is 2", out)
        weights = os.path.join(self.folders, "llama", "model.safetensors")
        w = safetensors_io.read_safetensors(weights)
        w["model.norm.weight"] = w["model.norm.weight"] * 2
        safetensors_io.write_safetensors(weights, w)
        before = common.folder_hash(run_dir)
        code, out = run(["train", cfg, "--train.max_length", "12 steps"])
        self.assertEqual(code, 2, out)
        self.assertIn("frozen_weights.json", out)
        self.assertIn("changed since", out)
        self.assertEqual(common.folder_hash(run_dir), before)  # refused before it wrote a byte


if __name__ == "__main__":
    common.main()
