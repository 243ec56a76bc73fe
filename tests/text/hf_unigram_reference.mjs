// The Unigram/Precompiled parity references from Hugging Face's own Rust tokenizers (npm's
// `tokenizers`, the Node binding): each text of OUT/texts.jsonl (hf_unigram_reference.py) encoded
// without special tokens by OUT/t5, OUT/t5_current and OUT/spm_direct's tokenizer.json, and the
// ids decoded back.
//
// node hf_unigram_reference.mjs OUT writes OUT/cases.jsonl: {"text", "sentencepiece", "t5": ids,
// "t5_decoded": text, ...} per line.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const out = process.argv[2];
const dir = path.join(out, "npm/node_modules/tokenizers");
const { Tokenizer } = await import(pathToFileURL(path.resolve(dir, "index.js")).href);
const names = ["t5", "t5_current", "spm_direct"];
const tokenizers = {};
for (const name of names) {
  tokenizers[name] = Tokenizer.fromFile(path.join(out, name, "tokenizer.json"));
}
const lines = [];
for (const line of fs.readFileSync(path.join(out, "texts.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  for (const name of names) {
    const enc = await tokenizers[name].encode(c.text, null, { addSpecialTokens: false });
    c[name] = Array.from(enc.getIds());
    c[`${name}_decoded`] = await tokenizers[name].decode(c[name], false);
  }
  lines.push(JSON.stringify(c));
}
fs.writeFileSync(path.join(out, "cases.jsonl"), lines.join("\n") + "\n");
