#!/usr/bin/env bash
# The Unigram and Precompiled parity tests' references: trains two SentencePiece Unigram models on
# Moby-Dick with Debian's python3-sentencepiece, converts them to tokenizer.json as transformers
# does (hf_unigram_reference.py, spm_to_tokenizer_json.py), installs Hugging Face's Rust
# tokenizers from npm into OUT/npm once and has them encode and decode the texts
# (hf_unigram_reference.mjs): OUT/t5, OUT/t5_current, OUT/spm_direct and OUT/cases.jsonl. OUT
# defaults to examples/data/generated/unigram_tokenizers (not committed). Skips the work when OUT
# was made by this version of the scripts (the stamp: a hash of this script, the .py files and
# the .mjs); exits non-zero when npm, node or python cannot do it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/examples/data/generated/unigram_tokenizers}
here="$root/tests/text"
stamp=$(cat "$0" "$here/hf_unigram_reference.py" "$here/spm_to_tokenizer_json.py" \
  "$here/hf_unigram_reference.mjs" | sha256sum | cut -c1-16)
# The unit tests may ask at once from several processes: one makes them, the others wait.
mkdir -p "$out"
exec 9>"$out.lock"
flock 9
[ -s "$out/cases.jsonl" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && exit 0
command -v npm >/dev/null || { echo "npm is needed: apt-get install -y npm" >&2; exit 1; }
/usr/bin/python3 -c "import sentencepiece, google.protobuf" || {
  echo "python3-sentencepiece and python3-protobuf are needed: scripts/lib.sh" >&2
  exit 1
}
moby=$("$root/examples/moby_dick/prepare.sh" | tail -1)
mkdir -p "$out/npm"
rm -f "$out/stamp"
npm install --silent --no-audit --no-fund --prefix "$out/npm" tokenizers@0.23.2 >/dev/null
/usr/bin/python3 "$here/hf_unigram_reference.py" "$moby" "$out"
node "$here/hf_unigram_reference.mjs" "$out"
echo "$stamp" > "$out/stamp"
