"""Issue 46's check against Hugging Face's own code, for a machine that has `transformers` (the
GPU machine's image has transformers, tokenizers and safetensors; this one has none of them):

  python3 tests/gpu/hf_transformers_fixtures.py OUT [TOKENIZERS] [EXPORT_DIR]

1. Builds tiny GPT-2 and Llama models with transformers' own classes (seeded, float32, CPU so
   that the numbers do not depend on the GPU's kernels), saves each with save_pretrained into
   OUT/<name>/ and writes OUT/<name>/reference.safetensors: `ids` [2, 12], `logits`, `loss`
   (labels = ids, transformers' own shift) and `grad.<name>` for every parameter. The same layout
   as tests/models/hf/reference.py writes, so hf_causal_lm_test.cpp can compare against either.
2. With TOKENIZERS (examples/data/generated/tokenizers: gpt2/ and llama3/ tokenizer.json and
   cases.jsonl, made by tests/text/hf_tokenizer_references.sh), writes OUT/tokenizer_ids.jsonl:
   the Rust `tokenizers` library's ids (add_special_tokens true) for every case, as the fixture
   the C++ reader's ids are compared with.
3. With EXPORT_DIR (a folder `unitrain export --format hf` wrote), loads it with
   AutoModelForCausalLM.from_pretrained and writes OUT/export_logits.safetensors: its logits on
   `ids` (from OUT/<its model_type>/reference.safetensors), for the C++ side to compare with its
   own.
Keep what comes back under 1 MB: the models are tiny on purpose.
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file


def ids_for(vocab):
    g = torch.Generator().manual_seed(7)
    return torch.randint(0, vocab, (2, 12), generator=g)


def reference(model, folder, vocab):
    ids = ids_for(vocab)
    model.zero_grad()
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    tensors = {"ids": ids, "logits": out.logits.detach().contiguous(),
               "loss": out.loss.detach().reshape([])}
    for name, p in model.named_parameters():
        if p.grad is not None:
            tensors["grad." + name] = p.grad.detach().contiguous()
    save_file(tensors, os.path.join(folder, "reference.safetensors"))


def make_models(out):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(46)
    made = {
        "gpt2": GPT2LMHeadModel(GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=2,
                                          n_head=4, activation_function="gelu_new",
                                          initializer_range=0.2)),
        "llama": LlamaForCausalLM(LlamaConfig(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=500000.0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
            tie_word_embeddings=False, initializer_range=0.2)),
    }
    for name, model in made.items():
        model.eval()  # dropout off: the reference's forward
        with torch.no_grad():  # norms and biases away from 1 and 0, so a bug in them shows
            for pname, p in model.named_parameters():
                if p.dim() == 1:
                    p.add_(torch.randn_like(p) * 0.1)
        folder = os.path.join(out, name)
        model.save_pretrained(folder, safe_serialization=True)
        reference(model, folder, model.config.vocab_size)


def tokenizer_ids(out, refs):
    from tokenizers import Tokenizer
    with open(os.path.join(refs, "cases.jsonl"), encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    toks = {name: Tokenizer.from_file(os.path.join(refs, name, "tokenizer.json"))
            for name in ("gpt2", "llama3")}
    with open(os.path.join(out, "tokenizer_ids.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            row = {"text": c["text"]}
            for name, tok in toks.items():
                row[name] = tok.encode(c["text"], add_special_tokens=True).ids
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def export_logits(out, export_dir):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(export_dir, torch_dtype=torch.float32)
    model.eval()
    ref = load_file(os.path.join(out, model.config.model_type, "reference.safetensors"))
    with torch.no_grad():
        logits = model(input_ids=ref["ids"]).logits.contiguous()
    save_file({"ids": ref["ids"], "logits": logits},
              os.path.join(out, "export_logits.safetensors"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make_models(out)
    if len(sys.argv) > 2:
        tokenizer_ids(out, sys.argv[2])
    if len(sys.argv) > 3:
        export_logits(out, sys.argv[3])
    print("written:", sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
