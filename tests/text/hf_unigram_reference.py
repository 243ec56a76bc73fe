"""The Unigram/Precompiled parity fixture (hf_unigram_references.sh runs it): SentencePiece models
trained on Moby-Dick, converted to tokenizer.json as transformers does, and the texts the
tests encode, with SentencePiece's own ids as a second opinion.

python3 hf_unigram_reference.py MOBY_DICK_TXT OUT writes
  OUT/spm/unigram.model         Unigram, 2,000 pieces, nmt_nfkc (so a precompiled_charsmap),
                                T5's ids: <pad> 0, </s> 1, <unk> 2, no <s>
  OUT/spm/unigram_bytes.model   the same with byte_fallback (256 <0xXX> pieces)
  OUT/t5, OUT/t5_current        unigram.model as tokenizer.json (spm_to_tokenizer_json.py's
                                layouts t5 and t5_current)
  OUT/spm_direct                unigram_bytes.model as tokenizer.json (layout spm_direct)
  OUT/texts.jsonl               {"text", "sentencepiece": unigram.model's ids} per line:
                                Moby-Dick lines, texts NFKC changes, unknown characters,
                                whitespace runs and added tokens, then fuzzed text drawn with a
                                fixed seed
"""

import json
import os
import random
import subprocess
import sys

import sentencepiece as spm

HANDPICKED = [
    "", " ", "  ", "\n", "\t", "a", "Call me Ishmael.",
    "  leading spaces", "trailing spaces   ", "many     spaces   between", "tab\tand\nnewline",
    "a\r\nb", "\r\n", "line one\r\nline two", " \u00a0non-breaking\u00a0space", "ideographic\u3000space",
    "\uff28\uff45\uff4c\uff4c\uff4f\u3000\uff37\uff4f\uff52\uff4c\uff44\uff01",  # full-width
    "\uff11\uff12\uff13 \uff41\uff42\uff43", "\ufb01nd the \ufb02ag \ufb00 \ufb03 \ufb06",  # ligatures
    "\u2460\u2461\u2462 \u2474 \u2488", "\u337b \u3392 \u33a1", "\u00bd \u00bc \u2153", "\u2122 \u2120 \u2116",
    "\u212b \u2126 \u212a", "e\u0301 cafe\u0301 \u00e9", "\uff45\u0301", "a\u0308o\u0308u\u0308",
    "\ud55c\uad6d\uc5b4", "\u1100\u1161\u11a8", "\u767d\u9be8 \u6355\u9be8", "\u3053\u3093\u306b\u3061\u306f",
    "\uff76\uff9e\uff77\uff9e \uff8a\uff9f", "\uff76", "\uff9e", "\U0001f40b whale \U0001f44d\U0001f3fd",
    "\U0001f1eb\U0001f1f7", "\u2764\ufe0f", "a\u200bb\u200cc\u200dd", "soft\u00adhyphen", "ctrl\u0001\u0002x",
    "del\x7f", "bell\u0007", "<unk>", "</s>", "<pad> x", "<extra_id_0> the <extra_id_99>",
    "a<unk>b</s>c", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u03b1\u03b2\u03b3 \u0391\u0392\u0393",
    "\u041c\u043e\u0431\u0438 \u0414\u0438\u043a", "\u0928\u092e\u0938\u094d\u0924\u0947",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", "\u01c5 \u017f \u216b \u2167", "\U0001d400\U0001d401\U0001d402 \U0001d7ce",
    "x\u00b2 H\u2082O \u00b0C \u2103", "``quoted'' \u201csmart\u201d \u2018single\u2019",
    "em\u2014dash en\u2013dash\u2026", "3.14159 1,000,000", "....", "!!!???", "Ahab's   \t\n  whale",
    "\u00c5ngstr\u00f6m \u00c6sir \u0152uvre", "na\u00efve fa\u00e7ade r\u00e9sum\u00e9",
    "\u2f00\u2f01 \u2e80", "\ufe30 \ufe35 \ufe59", "\u3131\u314f", "\u00a8 \u00b4 \u00b8",
    "\ufdfa", "\u0385", "\u1e9b\u0323", "\u2002en\u2003em\u2009thin\u200ahair",
    "\U00020000\U0002a6d6", "\ue000 private use", "\ufffd replacement", "\u0300 leading mark",
    "q\u0307\u0323", "\u0644\u0627", "\ufefb", "\u00ff\u0178", "\u24b6\u24d0",
]

POOL = list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 .,;:'\"!?-") + [
    "  ", "   ", "\t", "\n", "\u00a0", "\u3000", "\uff21", "\uff41", "\uff10", "\ufb01", "\ufb02",
    "\u2460", "\u00bd", "\u2122", "\u212b", "e\u0301", "\u0301", "\u00e9", "\ud55c", "\u767d",
    "\uff76\uff9e", "\U0001f40b", "\u200b", "\u00ad", "\u0001", "\u2026", "\u201c", "\u2014",
    "<unk>", "</s>", "<extra_id_3>", "\r\n", "\u0928\u094d", "\u03b1", "\u0416", "\U0001d400",
    "\u2163", "\u00b2", "\u33a1", "\u01c5", "\u017f", "\u1100\u1161",
]


def moby_lines(path):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    picked = lines[100::80][:220]
    # Whole paragraphs too: several lines joined by their newlines.
    picked += ["\n".join(lines[i:i + 5]) for i in range(3000, 3000 + 30 * 97, 97)]
    return picked


def fuzzed(words, count, seed=61):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 24)):
            parts.append(rng.choice(words) if rng.random() < 0.4 else rng.choice(POOL))
        out.append("".join(parts))
    return out


def train(moby, prefix, byte_fallback):
    spm.SentencePieceTrainer.train(
        input=moby, model_prefix=prefix, model_type="unigram", vocab_size=2000,
        normalization_rule_name="nmt_nfkc", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        byte_fallback=byte_fallback, num_threads=1, minloglevel=2)


def main():
    moby, out = sys.argv[1:3]
    here = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(os.path.join(out, "spm"), exist_ok=True)
    train(moby, os.path.join(out, "spm", "unigram"), False)
    train(moby, os.path.join(out, "spm", "unigram_bytes"), True)
    for layout, model in (("t5", "unigram"), ("t5_current", "unigram"),
                          ("spm_direct", "unigram_bytes")):
        os.makedirs(os.path.join(out, layout), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(here, "spm_to_tokenizer_json.py"), layout,
                        os.path.join(out, "spm", model + ".model"),
                        os.path.join(out, layout, "tokenizer.json")], check=True)
    lines = moby_lines(moby)
    words = sorted({w for line in lines for w in line.split()})
    texts = HANDPICKED + lines + fuzzed(words, 120)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "spm", "unigram.model"))
    with open(os.path.join(out, "texts.jsonl"), "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"text": text, "sentencepiece": sp.encode(text)}) + "\n")


if __name__ == "__main__":
    main()
