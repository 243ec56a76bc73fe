"""A SentencePiece .model as the tokenizer.json transformers makes of it, for the Unigram parity
tests (hf_unigram_references.sh says what runs it). Debian has no transformers: this writes the
JSON its converters (transformers/convert_slow_tokenizer.py) have the Rust tokenizers serialize,
reading the .model with SentencePiece's own protobuf module (sentencepiece_model_pb2, as
transformers' import_protobuf does).

python3 spm_to_tokenizer_json.py LAYOUT MODEL OUT_JSON, LAYOUT one of
  t5          T5Converter as the hub's google-t5 files have it (transformers 4.x): the Precompiled
              normalizer alone, WhitespaceSplit then Metaspace(add_prefix_space), the Metaspace
              decoder, "$A </s>", 100 <extra_id_N> tokens after the pieces (the last first)
  t5_current  T5Converter as transformers' SpmConverter writes it today: Precompiled, Strip
              (right), Replace(" {2,}" -> "▁"); Metaspace(prepend_scheme "always") pre-tokenizer
              and decoder; the same post-processor and extra ids
  spm_direct  SpmConverter.build_tokenizer_from_spm_proto (a .model with no tokenizer class):
              Precompiled then Replace(" " -> "▁"), no pre-tokenizer, the Unigram model with the
              .model's byte_fallback, the Replace/ByteFallback/Fuse decoder
"""

import base64
import json
import sys

from sentencepiece import sentencepiece_model_pb2

REPLACEMENT = "\u2581"
CONTROL, USER_DEFINED = 3, 4
EXTRA_IDS = 100


def added_token(token_id, content):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}


def t5_post_processor(eos_id):
    a = {"Sequence": {"id": "A", "type_id": 0}}
    b = {"Sequence": {"id": "B", "type_id": 0}}
    eos = {"SpecialToken": {"id": "</s>", "type_id": 0}}
    return {"type": "TemplateProcessing", "single": [a, eos], "pair": [a, eos, b, eos],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [eos_id], "tokens": ["</s>"]}}}


def convert(layout, proto):
    charsmap = base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode("ascii")
    precompiled = {"type": "Precompiled", "precompiled_charsmap": charsmap}
    vocab = [[p.piece, p.score] for p in proto.pieces]
    unk_id = proto.trainer_spec.unk_id
    # SpmConverter.tokenizer: control and user-defined pieces are added tokens, not normalized;
    # T5Tokenizer's special tokens (</s>, <unk>, <pad>, the extra ids) are saved as special ones.
    added = [added_token(i, p.piece) for i, p in enumerate(proto.pieces)
             if p.type in (CONTROL, USER_DEFINED) or i == unk_id]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None}
    if layout in ("t5", "t5_current"):
        first_extra = len(vocab)
        vocab += [[f"<extra_id_{i}>", 0.0] for i in range(EXTRA_IDS - 1, -1, -1)]
        added += [added_token(first_extra + k, vocab[first_extra + k][0])
                  for k in range(EXTRA_IDS)]
        eos_id = next(i for i, p in enumerate(proto.pieces) if p.piece == "</s>")
        tokenizer["added_tokens"] = added
        if layout == "t5":
            metaspace = {"type": "Metaspace", "replacement": REPLACEMENT, "add_prefix_space": True,
                         "prepend_scheme": "always"}
            tokenizer["normalizer"] = precompiled
            tokenizer["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                {"type": "WhitespaceSplit"}, metaspace]}
        else:
            metaspace = {"type": "Metaspace", "replacement": REPLACEMENT,
                         "prepend_scheme": "always", "split": True}
            tokenizer["normalizer"] = {"type": "Sequence", "normalizers": [
                precompiled,
                {"type": "Strip", "strip_left": False, "strip_right": True},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": REPLACEMENT}]}
            tokenizer["pre_tokenizer"] = metaspace
        tokenizer["post_processor"] = t5_post_processor(eos_id)
        tokenizer["decoder"] = metaspace
        tokenizer["model"] = {"type": "Unigram", "unk_id": unk_id, "vocab": vocab,
                              "byte_fallback": False}
    elif layout == "spm_direct":
        byte_fallback = proto.trainer_spec.byte_fallback
        replace = {"type": "Replace", "pattern": {"String": REPLACEMENT}, "content": " "}
        tokenizer["added_tokens"] = []
        tokenizer["normalizer"] = {"type": "Sequence", "normalizers": [
            precompiled, {"type": "Replace", "pattern": {"String": " "}, "content": REPLACEMENT}]}
        tokenizer["pre_tokenizer"] = None
        tokenizer["post_processor"] = None
        tokenizer["decoder"] = {"type": "Sequence", "decoders": (
            [replace, {"type": "ByteFallback"}, {"type": "Fuse"}] if byte_fallback else [replace])}
        tokenizer["model"] = {"type": "Unigram", "unk_id": unk_id, "vocab": vocab,
                              "byte_fallback": byte_fallback}
    else:
        raise SystemExit(f"unknown layout {layout!r}: t5, t5_current or spm_direct")
    return tokenizer


def main():
    layout, model, out = sys.argv[1:4]
    proto = sentencepiece_model_pb2.ModelProto()
    with open(model, "rb") as f:
        proto.ParseFromString(f.read())
    if proto.trainer_spec.model_type != 1:
        raise SystemExit(f"{model} is not a Unigram model (model_type {proto.trainer_spec.model_type})")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(convert(layout, proto), f, ensure_ascii=False)


if __name__ == "__main__":
    main()
