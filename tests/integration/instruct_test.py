"""Instruction fine-tuning and generation with the real binary, on make_folders.py's tiny gpt2 and
llama folders and a word-level tokenizer written here: the `instruct` dataset (packed, segments to
the model) trains from YAML and the loss falls; `generate` from the run equals `generate` from its
`export --format hf` folder, with and without the KV cache; a kill -9 on 2 processes resumes
bitwise; `eval --text` reports perplexity; the `generate` callback writes samples."""
import glob
import json
import math
import shutil
import os
import signal
import subprocess
import sys

import torch

import common
import tensorboard_test
from common import run, wait_for

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ["<unk>", "Q", "A", ":", "what", "is", "the", "color", "of", "sky", "grass", "sun", "snow",
         "blue", "green", "yellow", "white", "night", "coal", "black", "fire", "red"]
PAIRS = [("sky", "blue"), ("grass", "green"), ("sun", "yellow"), ("snow", "white"),
         ("night", "black"), ("coal", "black"), ("fire", "red")]

CONFIG = """
run_dir: {run_dir}
seed: 3
model: {{type: {type}, args: {{pretrained: {folder}}}}}
objective: {{inputs: [x, segments], losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: instruct, args: {{paths: [{data}], tokenizer: {folder}/tokenizer.json, template: "Q : {{prompt}} A :", max_length: 40, pack: true}}}}
  validation_ratio: 0.2
  collate: {{type: pad}}
  loader: {{batch_size: 2, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 1.0e-2}}
train: {{max_length: {steps} steps, log_every: 1 steps, val_every: 100 steps, threads: 1, loss_average: tokens}}
checkpoint: {{enabled: true, every: 4 steps}}
"""


def write_tokenizer(folder, vocab_size):
    """A word-level tokenizer.json of `vocab_size` tokens (WORDS, fillers, <eos> last) and a
    tokenizer_config.json naming <eos>, into the model folder (export copies them)."""
    words = WORDS + [f"w{i}" for i in range(vocab_size - len(WORDS) - 1)] + ["<eos>"]
    special = lambda i, w: {"id": i, "content": w, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": True}
    tok = {"version": "1.0", "added_tokens": [special(0, "<unk>"), special(vocab_size - 1, "<eos>")],
           "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
           "decoder": None,
           "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)}, "unk_token": "<unk>"}}
    common.write(os.path.join(folder, "tokenizer.json"), json.dumps(tok))
    common.write(os.path.join(folder, "tokenizer_config.json"), json.dumps({"eos_token": "<eos>"}))


class Instruct(common.Case):
    def setUp(self):
        super().setUp()
        self.folders = os.path.join(self.dir, "folders")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests/models/hf/make_folders.py"),
                        self.folders], check=True, stdout=subprocess.DEVNULL)
        write_tokenizer(os.path.join(self.folders, "gpt2"), 96)
        write_tokenizer(os.path.join(self.folders, "llama"), 128)
        lines = [{"prompt": f"what is the color of {thing}", "response": color} for thing, color in PAIRS]
        lines += [{"prompt": f"the color of {thing}", "response": f"{color} {color}"} for thing, color in PAIRS]
        self.data = common.write(os.path.join(self.dir, "instruct.jsonl"),
                                 "".join(json.dumps(l) + "\n" for l in lines * 2))

    def config(self, name, type, steps=16):
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, type=type, folder=os.path.join(self.folders, type), data=self.data,
            steps=steps))
        return cfg, run_dir

    def generate(self, source, *more):
        p = subprocess.run([common.BIN, "generate", source, "--prompt", "what is the color of grass",
                            "--template", "Q : {prompt} A :", "--max-new-tokens", "6", "--json"]
                           + list(more), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        # JSON alone on stdout; what was loaded on stderr.
        self.assertEqual(len(p.stdout.strip().splitlines()), 1, p.stdout)
        self.assertIn("loaded ", p.stderr)
        return json.loads(p.stdout)

    def test_finetune_then_generate_from_the_run_and_its_export(self):
        for type in ("gpt2", "llama"):
            with self.subTest(type=type):
                cfg, run_dir = self.config(type, type)
                code, out = run(["train", cfg])
                self.assertEqual(code, 0, out)
                losses = [e["train/loss"] for e in common.read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                          if "train/loss" in e]
                self.assertLess(sum(losses[-4:]) / 4, 0.5 * sum(losses[:4]) / 4, losses)
                g = self.generate(run_dir)
                self.assertEqual(g["ids"], self.generate(run_dir, "--no-cache")["ids"])
                # A product on stdout: `> out.txt` gets the completion alone, the loading lines
                # go to stderr.
                p = subprocess.run([common.BIN, "generate", run_dir, "--prompt", "what is the color of grass",
                                    "--template", "Q : {prompt} A :", "--max-new-tokens", "6"],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual((p.returncode, p.stdout), (0, g["completion"] + "\n"), p.stderr)
                # Without --template, a run's prompt goes into its train set's template, as the
                # generate callback puts it.
                p = subprocess.run([common.BIN, "generate", run_dir, "--prompt", "what is the color of grass",
                                    "--max-new-tokens", "6"], capture_output=True, text=True, timeout=300)
                self.assertEqual((p.returncode, p.stdout), (0, g["completion"] + "\n"), p.stderr)
                folder = os.path.join(self.dir, type + "-hf")
                code, out = run(["export", cfg, "--format", "hf", "--out", folder])
                self.assertEqual(code, 0, out)
                self.assertEqual(self.generate(folder)["ids"], g["ids"])
                self.assertEqual(g["completion"].split()[0], "green", g)
                text = common.write(os.path.join(self.dir, "qa.txt"), "".join(
                    f"Q : what is the color of {thing} A : {color}\n" for thing, color in PAIRS * 6))
                code, out = run(["eval", cfg, "--text", text])
                self.assertEqual(code, 0, out)
                with open(os.path.join(run_dir, "results", "perplexity.json")) as f:
                    got = json.load(f)
                self.assertAlmostEqual(got["perplexity"], self.perplexity(folder, text), delta=1e-4 * got["perplexity"])
                code, out = run(["eval", cfg, "--text", text, "--window", "100000"])
                self.assertEqual(code, 2, out)
                self.assertRegex(out, r"--window 100000 is longer than the model's context of \d+ tokens")

    def test_lora_on_packed_instruction_data_generates_as_its_merged_export(self):
        # The two halves of issue 49 together: LoRA adapters trained on packed instruction
        # data; generation from the run (adapters apart) equals generation from the merged
        # Hugging Face folder, with and without the KV cache.
        cfg, run_dir = self.config("lora", "llama", steps=12)
        code, out = run(["train", cfg, "--model.lora", "{r: 4, alpha: 8, target_modules: [q_proj, v_proj, down_proj]}"])
        self.assertEqual(code, 0, out)
        g = self.generate(run_dir)
        # The adapters took part: the run no longer answers as its base folder does.
        self.assertNotEqual(g["ids"], self.generate(os.path.join(self.folders, "llama"))["ids"])
        self.assertEqual(g["ids"], self.generate(run_dir, "--no-cache")["ids"])
        merged = os.path.join(self.dir, "lora-merged")
        code, out = run(["export", cfg, "--format", "hf", "--merge", "--out", merged])
        self.assertEqual(code, 0, out)
        self.assertEqual(self.generate(merged)["ids"], g["ids"])

    def test_bad_input_is_named_with_exit_2(self):
        folder = os.path.join(self.folders, "gpt2")
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": "<eos>", "chat_template":
                       "{% if messages[0].role != 'user' %}{{ raise_exception('A chat starts with "
                       "the user') }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"}, f)
        chat = common.write(os.path.join(self.dir, "chat.jsonl"),
                            json.dumps({"messages": [{"role": "assistant", "content": "blue"}]}) + "\n")
        cfg, _ = self.config("chat", "gpt2")
        for args, message in (
                (["train", cfg, "--data.train.args.paths", f"[{chat}]"],
                 "chat.jsonl' line 1: the chat_template of " + os.path.join(folder, "tokenizer_config.json")
                 + ", line 1: the template raised: A chat starts with the user"),
                (["generate", folder, "--prompt", "sky", "--max-new-tokens", "70"], "exceed the model's 64 positions"),
                (["generate", folder, "--prompt", "sky", "--template", "{question}"], "--template: '{question}' has '{question}'"),
                (["generate", self.dir, "--prompt", "sky"], "is neither a Hugging Face folder"),
                # Another model's tokenizer (llama's 128 words; gpt2 embeds 96): said before
                # any weight is read.
                (["train", cfg, "--data.train.args.tokenizer",
                  os.path.join(self.folders, "llama", "tokenizer.json")],
                 "data.train holds token id 127, but the model (model.type gpt2) embeds ids "
                 "below its vocab_size 96")):
            code, out = run(args)
            self.assertEqual(code, 2, out)
            self.assertIn(message, out)
            if "holds token id" in message:
                self.assertNotIn("tensors from model.args.pretrained", out)

    @staticmethod
    def perplexity(folder, text):
        """Debian's PyTorch on the exported folder (tests/models/hf/reference.py's forward): windows
        of 64 + 1 tokens overlapping by one, every token after the first predicted once."""
        sys.path.insert(0, os.path.join(SOURCE, "tests", "models", "hf"))
        import reference
        import safetensors_io
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(folder, "tokenizer.json")) as f:
            vocab = json.load(f)["model"]["vocab"]
        with open(text) as f:
            ids = [vocab[w] for line in f for w in line.split()]
        weights = {n: t.float() for n, t in safetensors_io.read_folder(folder).items()}
        forward = {"gpt2": reference.gpt2_forward, "llama": reference.llama_forward}[cfg["model_type"]]
        nll = 0.0
        with torch.no_grad():
            for start in range(0, len(ids) - 1, 64):
                piece = torch.tensor([ids[start:start + 65]])
                logits = forward(cfg, weights, piece[:, :-1])[0].double()
                nll += torch.nn.functional.cross_entropy(logits, piece[0, 1:], reduction="sum").item()
        return math.exp(nll / (len(ids) - 1))

    def test_token_average_makes_accumulation_exact(self):
        """Batches of 2 equal 2 micro-batches of 1 with loss_average tokens (llama: no dropout);
        with samples they differ (the windows' micro-batches hold different response counts). SGD: an
        update is proportional to the gradient (Adam's first steps would hide a scale)."""
        weights = {}
        for name, more in (("whole", []), ("halves", ["--data.loader.batch_size", "1", "--train.accumulation_steps", "2"]),
                           ("samples", ["--data.loader.batch_size", "1", "--train.accumulation_steps", "2",
                                        "--train.loss_average", "samples"])):
            cfg, run_dir = self.config(name, "llama", steps=4)
            code, out = run(["train", cfg, "--optimizer.type", "sgd", "--optimizer.lr", "0.5"] + more)
            self.assertEqual(code, 0, out)
            weights[name] = self.final_weights(run_dir)
        # Equal but for the order of float additions (a sum over 2 examples, or 2 sums of 1):
        # a few float32 roundings after 4 steps at lr 0.5; "samples" differs by over 1e-4.
        self.assert_weights_close(weights["whole"], weights["halves"], rtol=0, atol=5e-6)
        self.assertFalse(all(torch.allclose(weights["whole"][k], weights["samples"][k], rtol=0, atol=1e-4)
                             for k in weights["whole"]))

    def test_resume_inside_a_window_counts_its_tokens_again(self):
        """A checkpoint inside an accumulation window (every 3 samples, windows of 2 x 1): the
        resumed run reads the window's first micro-batch again to count its tokens, bitwise."""
        more = ["--data.loader.batch_size", "1", "--train.accumulation_steps", "2",
                "--checkpoint.every", "3 samples", "--checkpoint.keep_last", "0"]
        cfg, full = self.config("mid", "llama", steps=4)
        code, out = run(["train", cfg] + more)
        self.assertEqual(code, 0, out)
        steps = sorted(glob.glob(os.path.join(full, "checkpoints", "step-*")), key=lambda d: int(d.rsplit("-", 1)[1]))
        state = lambda d: json.load(open(os.path.join(d, "trainer_state.json")))["state"]
        inside = next(d for d in steps if state(d)["micro_in_window"] == 1)
        part = os.path.join(self.dir, "mid-part")
        shutil.copytree(full, part, symlinks=True)
        for d in glob.glob(os.path.join(part, "checkpoints", "step-*")):
            if int(d.rsplit("-", 1)[1]) > state(inside)["step"]:
                shutil.rmtree(d)
        code, out = run(["train", cfg, "--run_dir", part, "--checkpoint.resume",
                         os.path.join(part, "checkpoints", os.path.basename(inside))] + more)
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from", out)
        a = torch.load(os.path.join(full, "checkpoints", "last", "model.pt"))
        b = torch.load(os.path.join(part, "checkpoints", "last", "model.pt"))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)

    def test_two_processes_killed_resume_bitwise_and_the_generate_callback(self):
        generate = '{type: generate, args: {prompts: ["what is the color of sky"], max_new_tokens: 3}}'
        slow = "{type: slow_steps, args: {ms: 300}}"
        more = ["--plugin", common.test_plugin(), "--train.val_every", "4 steps"]
        cfg, straight = self.config("straight", "llama", steps=8)
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", "29871", "--", "train",
                         cfg, "--callbacks", f"[{generate}]"] + more)
        self.assertEqual(code, 0, out)
        losses = [e["train/loss"] for e in common.read_jsonl(os.path.join(straight, "metrics.jsonl"))
                  if "train/loss" in e]
        self.assertLess(sum(losses[-2:]), 0.7 * sum(losses[:2]), losses)
        samples = common.read_jsonl(os.path.join(straight, "samples.jsonl"))
        self.assertEqual([s["step"] for s in samples], [4, 8])
        self.assertIn("generate (step 4): what is the color of sky -> ", out)
        events = glob.glob(os.path.join(straight, "tensorboard", "events.out.tfevents.*.samples"))
        self.assertEqual(len(events), 1)
        texts = tensorboard_test.plugin_values(tensorboard_test.read_events(self, events[0]), "text")
        self.assertEqual([(tag, step) for tag, step, _ in texts], [("samples/0", 4), ("samples/0", 8)])
        self.assertIn(samples[-1]["completion"], texts[-1][2].tensor.string_val[0].decode())
        cfg, killed = self.config("killed", "llama", steps=8)
        args = ["launch", "--nproc-per-node", "2", "--master-port", "29875", "--", "train", cfg,
                "--callbacks", f"[{generate}, {slow}]"] + more
        p = subprocess.Popen([common.BIN] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertTrue(wait_for(lambda: os.path.isdir(os.path.join(killed, "checkpoints", "step-4"))))
        os.kill(common.pid_of_rank(1, cfg), signal.SIGKILL)
        p.communicate(timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(os.path.isdir(os.path.join(killed, "checkpoints", "step-8")))
        code, out = run(args)
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from", out)
        a, b = self.final_weights(straight, "--plugin", common.test_plugin()), \
            self.final_weights(killed, "--plugin", common.test_plugin())
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)


if __name__ == "__main__":
    common.main()
