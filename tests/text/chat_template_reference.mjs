// A second opinion on chat_template_reference.py's renderings: @huggingface/jinja (the
// JavaScript Jinja that transformers.js renders chat templates with) renders every case of
// OUT/cases.jsonl from the same template, special tokens and variables.
//
// node chat_template_reference.mjs OUT writes OUT/js_report.json: how many cases render as
// Python rendered them ("equal"), raise in both ("both_error"), or differ ("differ"), overall
// and per template, with the first few differences of each template (case, the first differing
// character index and both texts around it). Python is the reference; a difference is reported,
// not a failure.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const out = process.argv[2];
const jinjaDir = path.join(out, "npm/node_modules/@huggingface/jinja");
const { Template } = await import(pathToFileURL(path.resolve(jinjaDir, "dist/index.js")).href);
const jinjaVersion = JSON.parse(fs.readFileSync(path.join(jinjaDir, "package.json"))).version;
const DIFFS_KEPT = 3;

// strftime_now reads jinja_cases.py's frozen clock, 2024-07-26 10:30:00 local time: the
// library's strftime_now formats `new Date()`, and cannot be replaced through render()'s
// variables (a global may not be declared twice), so Date without arguments is that moment.
const RealDate = Date;
const FROZEN = new RealDate(2024, 6, 26, 10, 30, 0).getTime();
globalThis.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length ? args : [FROZEN]));
  }
  static now() {
    return FROZEN;
  }
};
// Its month names come from Intl's default locale: Python's C locale spells them in English.
const RealDateTimeFormat = Intl.DateTimeFormat;
Intl.DateTimeFormat = function (locales, options) {
  return new RealDateTimeFormat(locales ?? "en-US", options);
};

function readJson(...parts) {
  return JSON.parse(fs.readFileSync(path.join(out, ...parts), "utf-8"));
}

// One template's renderer: a function of the variables giving {output} or {error}.
function renderer(name) {
  const config = readJson(name, "tokenizer_config.json");
  const tokens = readJson(name, "special_tokens.json");
  let template;
  try {
    template = new Template(config.chat_template);
  } catch (e) {
    return () => ({ error: "parse: " + e.message });
  }
  return (vars) => {
    try {
      return { output: template.render({ ...tokens, ...vars }) };
    } catch (e) {
      return { error: e.message };
    }
  };
}

function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

const total = { cases: 0, equal: 0, both_error: 0, differ: 0 };
const templates = {};
const renderers = {};
const lines = fs.readFileSync(path.join(out, "cases.jsonl"), "utf-8").split("\n").filter(Boolean);
for (const line of lines) {
  const c = JSON.parse(line);
  renderers[c.template] ??= renderer(c.template);
  const t = (templates[c.template] ??= { cases: 0, equal: 0, both_error: 0, differ: 0, diffs: [] });
  const js = renderers[c.template](c.vars);
  let kind;
  if (c.error !== undefined && js.error !== undefined) kind = "both_error";
  else if (c.output !== undefined && js.output === c.output) kind = "equal";
  else kind = "differ";
  for (const counts of [total, t]) {
    counts.cases++;
    counts[kind]++;
  }
  if (kind === "differ" && t.diffs.length < DIFFS_KEPT) {
    const diff = { case: c.case };
    if (c.error !== undefined) diff.python_error = c.error.message;
    if (js.error !== undefined) diff.js_error = js.error;
    if (c.output !== undefined && js.output !== undefined) {
      const at = firstDifference(c.output, js.output);
      diff.at = at;
      diff.python = c.output.slice(Math.max(0, at - 40), at + 40);
      diff.js = js.output.slice(Math.max(0, at - 40), at + 40);
    }
    t.diffs.push(diff);
  }
}
const report = { jinja: jinjaVersion, ...total, templates };
fs.writeFileSync(path.join(out, "js_report.json"), JSON.stringify(report, null, 1) + "\n");
console.log(`${out}/js_report.json: ${total.cases} cases, ${total.equal} equal, ` +
  `${total.both_error} both raise, ${total.differ} differ`);
