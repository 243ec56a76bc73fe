// The assistant masks an SFT run on chat lines must give, from Hugging Face's own Rust
// tokenizers (the `tokenizers` Node binding): each conversation of OUT/cases.jsonl rendered
// without the generation prompt (Python's jinja2 output), tokenized whole without special
// tokens added (apply_chat_template(tokenize=True)), a token trained when its offsets overlap an
// assistant turn's span (TRL's prefix spans, as transformers' assistant mask marks the tokens
// holding a span's characters).
//
// Llama 3's first template always ends with the assistant's header, so TRL's prefixes find none
// of its turns: there each assistant turn is read off the text itself, from the end of an
// "<|start_header_id|>assistant<|end_header_id|>\n\n" to the end of the "<|eot_id|>" that
// closes it (the last, dangling header closes none).
//
// node chat_mask_reference.mjs OUT writes OUT/masks.jsonl: {template, case, ids, trained} for
// the templates below, the cases that render without the generation prompt and whose turns are
// all found (by prefixes, or so for llama3).
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const out = process.argv[2];
const dir = path.join(out, "npm/node_modules/tokenizers");
const { Tokenizer } = await import(pathToFileURL(path.resolve(dir, "index.js")).href);
const templates = ["llama3", "llama3_1", "qwen2_5", "gemma3"];

/// Llama 3's assistant turns as UTF-8 byte spans of `text`, read off its markers.
function llama3Turns(text) {
  const header = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  const spans = [];
  for (let at = text.indexOf(header); at >= 0; at = text.indexOf(header, at + 1)) {
    const begin = at + header.length;
    const end = text.indexOf("<|eot_id|>", begin);
    if (end < 0) break;  // the dangling header the template always ends with
    const bytes = (s) => Buffer.byteLength(s);
    spans.push([bytes(text.slice(0, begin)), bytes(text.slice(0, end + "<|eot_id|>".length))]);
  }
  return spans;
}
const tokenizers = {};
for (const name of templates) {
  tokenizers[name] = Tokenizer.fromFile(path.join(out, name, "tokenizer.json"));
}
const lines = [];
for (const line of fs.readFileSync(path.join(out, "cases.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  if (!templates.includes(c.template) || c.error || c.vars.add_generation_prompt) continue;
  const spans = c.template === "llama3" ? llama3Turns(c.output) : c.prefix_spans.map((s) => s.span);
  if (spans.length === 0 || spans.some((s) => s === null)) continue;
  // Llama 3's: only conversations that start with the user (else the first turn has no prompt).
  if (c.template === "llama3" && spans.length !== c.prefix_spans.length) continue;
  if (c.template === "llama3" && c.vars.messages.find((m) => m.role !== "system").role !== "user") continue;
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
