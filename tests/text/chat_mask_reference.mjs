// The assistant masks an SFT run on chat lines must give, from Hugging Face's own Rust
// tokenizers (the `tokenizers` Node binding): each conversation of OUT/cases.jsonl rendered
// without the generation prompt (Python's jinja2 output), tokenized whole without special
// tokens added (apply_chat_template(tokenize=True)), a token trained when its offsets overlap an
// assistant turn's span (TRL's prefix spans, as transformers' assistant mask marks the tokens
// holding a span's characters).
//
// node chat_mask_reference.mjs OUT writes OUT/masks.jsonl: {template, case, ids, trained} for
// the templates below, the cases that render without the generation prompt and whose turns are
// all found by prefixes.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const out = process.argv[2];
const dir = path.join(out, "npm/node_modules/tokenizers");
const { Tokenizer } = await import(pathToFileURL(path.resolve(dir, "index.js")).href);
const templates = ["llama3_1", "qwen2_5", "gemma3"];
const tokenizers = {};
for (const name of templates) {
  tokenizers[name] = Tokenizer.fromFile(path.join(out, name, "tokenizer.json"));
}
const lines = [];
for (const line of fs.readFileSync(path.join(out, "cases.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  if (!templates.includes(c.template) || c.error || c.vars.add_generation_prompt) continue;
  const spans = c.prefix_spans.map((s) => s.span);
  if (spans.length === 0 || spans.some((s) => s === null)) continue;
  const enc = await tokenizers[c.template].encode(c.output, null, { addSpecialTokens: false });
  // Offsets are code points: UTF-8 bytes, as the spans are.
  const bytes = [0];
  for (const ch of Array.from(c.output)) bytes.push(bytes[bytes.length - 1] + Buffer.byteLength(ch));
  const trained = enc.getOffsets().map(([a, b]) => {
    const [from, to] = [bytes[a], bytes[b]];
    return spans.some(([s, e]) => from < e && to > s) ? 1 : 0;
  });
  lines.push(JSON.stringify({ template: c.template, case: c.case, ids: enc.getIds(), trained }));
}
fs.writeFileSync(path.join(out, "masks.jsonl"), lines.join("\n") + "\n");
console.log(`chat_mask_reference: ${lines.length} masks`);
