"""Writes byte_tokenizer/tokenizer.json: a Hugging Face tokenizer whose ids are a text's UTF-8
bytes (id b = byte b), the ids examples/moby_dick/prepare.sh writes into moby_dick.u16.bin. GPT-2's
byte-level layout (each byte as a printable character, no merges), so `tokenizer(text)` in
transformers, `unitrain generate` and `eval --text` read and write the tiny GPT-2's ids.
  /usr/bin/python3 examples/finetune/make_byte_tokenizer.py"""
import json
import os


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (tokenizers' ByteLevel alphabet)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def main():
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": None,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": {c: b for b, c in bytes_to_unicode().items()}, "merges": []},
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "byte_tokenizer")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
