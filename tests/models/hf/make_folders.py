#!/usr/bin/python3
"""Writes tiny random Hugging Face model folders as transformers' save_pretrained lays them out.

  /usr/bin/python3 tests/models/hf/make_folders.py OUT_DIR

Each OUT_DIR/<name>/ holds config.json, generation_config.json and the weights in safetensors
(written by safetensors_io.py: there is no transformers or safetensors package here):
  gpt2/             GPT2LMHeadModel's names (`transformer.` prefix), tied head: no lm_head.weight
  gpt2_noprefix/    the same weights as the hub's original gpt2 names them (no prefix) with the
                    old causal-mask buffers h.{i}.attn.bias / masked_bias, and the hub's older
                    config.json (no torch_dtype, n_inner, tie_word_embeddings, scale_attn_*)
  llama/            LlamaForCausalLM: grouped-query attention, head_dim 16 != hidden 32 / 4 heads,
                    Llama 3 rope_scaling, untied lm_head.weight, float32
  llama_tied_bias/  tied head, q/k/v/o and MLP biases, no head_dim key, no rope_scaling, weights
                    stored as bf16, the old self_attn.rotary_emb.inv_freq buffers
  llama_sharded/    llama/'s weights in two shards with model.safetensors.index.json
Seeded: the same OUT_DIR contents every run.
"""
import json
import os
import sys

import torch

from safetensors_io import write_safetensors

# Matrices are drawn with std 0.2, not HF's initializer_range 0.02: at 0.02 the attention scores are
# ~0.01, attention is a near-uniform average, and a wrong scale, mask or rotary phase moves the
# logits by less than a parity test's tolerance. Norm weights are 1 + 0.1 * randn and every bias is
# 0.1 * randn, so a missing or misplaced one shows too.
STD = 0.2

VERSION = "4.46.0"

GPT2 = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 95, "embd_pdrop": 0.1, "eos_token_id": 95, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 64, "n_embd": 32, "n_head": 4,
    "n_inner": None, "n_layer": 2, "n_positions": 64, "reorder_and_upcast_attn": False,
    "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
    "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
    "summary_type": "cls_index", "summary_use_proj": True, "tie_word_embeddings": True,
    "torch_dtype": "float32", "transformers_version": VERSION, "use_cache": True, "vocab_size": 96,
}

# The hub's original gpt2/config.json (2019): fewer keys; a loader takes HF's defaults for the rest.
GPT2_HUB = {k: v for k, v in GPT2.items()
            if k not in ("n_inner", "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx",
                         "scale_attn_weights", "tie_word_embeddings", "torch_dtype",
                         "transformers_version", "use_cache")}
GPT2_HUB["task_specific_params"] = {"text-generation": {"do_sample": True, "max_length": 50}}

LLAMA = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": [2, 3], "head_dim": 16, "hidden_act": "silu",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
    "max_position_embeddings": 64, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 16, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
    "transformers_version": VERSION, "use_cache": True, "vocab_size": 128,
}

# As transformers 4.41 wrote it: mlp_bias exists, head_dim does not yet (hidden / heads = 12).
LLAMA_TIED_BIAS = {k: v for k, v in LLAMA.items() if k != "head_dim"}
LLAMA_TIED_BIAS.update({
    "attention_bias": True, "eos_token_id": 2, "hidden_size": 48, "intermediate_size": 80,
    "mlp_bias": True, "num_key_value_heads": 4, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
    "vocab_size": 112,
})

# Qwen2Config as transformers writes it (Qwen2.5-0.5B's shape of keys): q/k/v biases (o without),
# a tied head, sliding-window keys present but off.
QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 90,
    "eos_token_id": 91, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
    "intermediate_size": 64, "max_position_embeddings": 64, "max_window_layers": 2,
    "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": 32, "tie_word_embeddings": True, "torch_dtype": "float32",
    "transformers_version": "4.46.0", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 96,
}

# Qwen3Config: an explicit head_dim wider than hidden / heads, q_norm and k_norm, no biases.
QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 90, "eos_token_id": 91, "head_dim": 16, "hidden_act": "silu",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
    "max_position_embeddings": 64, "max_window_layers": 2, "model_type": "qwen3",
    "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.51.0",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 96,
}

# MistralConfig (Mistral 7B v0.1's keys): a sliding window of 5 tokens, shorter than the
# references' 12, so that the window shows.
MISTRAL = {
    "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "head_dim": None, "hidden_act": "silu", "hidden_size": 32,
    "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
    "model_type": "mistral", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 5,
    "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.46.0",
    "use_cache": True, "vocab_size": 96,
}

# GemmaConfig (Gemma 2B's keys): a tied head, head_dim wider than hidden / heads, the original
# files' hidden_act "gelu" beside hidden_activation.
GEMMA = {
    "architectures": ["GemmaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 2, "eos_token_id": 1, "head_dim": 16, "hidden_act": "gelu",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "initializer_range": 0.02,
    "intermediate_size": 64, "max_position_embeddings": 64, "model_type": "gemma",
    "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1, "pad_token_id": 0,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": True, "torch_dtype": "float32", "transformers_version": "4.46.0",
    "use_cache": True, "vocab_size": 96,
}

# Gemma2Config (Gemma 2 2B's keys): soft caps small enough to bite on these scores and logits,
# query_pre_attn_scalar other than head_dim, a sliding window of 5 on the even layers (of 3).
GEMMA2 = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": 0.5, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": [1, 95], "final_logit_softcapping": 0.8, "head_dim": 16,
    "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
    "max_position_embeddings": 64, "model_type": "gemma2", "num_attention_heads": 4,
    "num_hidden_layers": 3, "num_key_value_heads": 2, "pad_token_id": 0,
    "query_pre_attn_scalar": 24, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
    "sliding_window": 5, "tie_word_embeddings": True, "torch_dtype": "float32",
    "transformers_version": "4.46.0", "use_cache": True, "vocab_size": 96,
}

# Gemma3TextConfig (Gemma 3 1B's keys): q/k norms, local layers (every layer but each third:
# sliding_window_pattern 3) with rope_local_base_freq, the global ones with rope_theta and a
# linear rope_scaling, a sliding window of 5.
GEMMA3_TEXT = {
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": [1, 95], "final_logit_softcapping": None, "head_dim": 16,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "initializer_range": 0.02,
    "intermediate_size": 64, "max_position_embeddings": 64, "model_type": "gemma3_text",
    "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 2.0, "rope_type": "linear"},
    "rope_theta": 1000000.0, "sliding_window": 5, "sliding_window_pattern": 3,
    "tie_word_embeddings": True, "torch_dtype": "float32", "transformers_version": "4.50.0",
    "use_cache": True, "vocab_size": 96,
}

# Phi3Config (Phi-3-mini-4k's keys): fused qkv_proj and gate_up_proj, grouped-query heads, a
# sliding window of 5 (the mini's is 2047).
PHI3 = {
    "architectures": ["Phi3ForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 95, "hidden_act": "silu",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
    "max_position_embeddings": 64, "model_type": "phi3", "num_attention_heads": 4,
    "num_hidden_layers": 2, "num_key_value_heads": 2, "original_max_position_embeddings": 64,
    "pad_token_id": 94, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 10000.0, "sliding_window": 5, "tie_word_embeddings": False,
    "torch_dtype": "float32", "transformers_version": "4.46.0", "use_cache": True,
    "vocab_size": 96,
}


def fuse_phi3(w):
    """Phi3ForCausalLM's names: q, k and v concatenated as qkv_proj, gate and up as gate_up_proj."""
    out = {}
    for name, t in w.items():
        if name.endswith(("k_proj.weight", "v_proj.weight", ".up_proj.weight")):
            continue  # in the fused weight, put where q_proj's or gate_proj's was
        if name.endswith("q_proj.weight"):
            p = name[:-len("q_proj.weight")]
            out[p + "qkv_proj.weight"] = torch.cat([w[p + x + "_proj.weight"] for x in "qkv"])
        elif name.endswith("gate_proj.weight"):
            p = name[:-len("gate_proj.weight")]
            out[p + "gate_up_proj.weight"] = torch.cat([t, w[p + "up_proj.weight"]])
        else:
            out[name] = t
    return out


def matrix(*shape):
    return torch.randn(*shape) * STD


def norm_weight(n):
    return 1 + 0.1 * torch.randn(n)


def bias(n):
    return 0.1 * torch.randn(n)


def gpt2_weights(cfg):
    """GPT2LMHeadModel's state dict in module order, less the tied lm_head.weight."""
    torch.manual_seed(1)
    e = cfg["n_embd"]
    inner = cfg.get("n_inner") or 4 * e
    w = {"transformer.wte.weight": matrix(cfg["vocab_size"], e),
         "transformer.wpe.weight": matrix(cfg["n_positions"], e)}
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        # Conv1D holds its weight as [in, out].
        layers = (("ln_1", None), ("attn.c_attn", (e, 3 * e)), ("attn.c_proj", (e, e)),
                  ("ln_2", None), ("mlp.c_fc", (e, inner)), ("mlp.c_proj", (inner, e)))
        for name, shape in layers:
            w[p + name + ".weight"] = norm_weight(e) if shape is None else matrix(*shape)
            w[p + name + ".bias"] = bias(e if shape is None else shape[1])
    w["transformer.ln_f.weight"] = norm_weight(e)
    w["transformer.ln_f.bias"] = bias(e)
    return w


def gpt2_hub_weights(cfg, w):
    """The hub file's names: GPT2Model's (no prefix), with the causal-mask buffers of old versions."""
    hub = {}
    p = cfg["n_positions"]
    for name, t in w.items():
        name = name[len("transformer."):]
        hub[name] = t
        if name.endswith(".ln_1.bias"):  # the buffers sat between ln_1 and c_attn in the state dict
            layer = name[:-len("ln_1.bias")]
            hub[layer + "attn.bias"] = torch.ones(p, p).tril().view(1, 1, p, p)
            hub[layer + "attn.masked_bias"] = torch.tensor(-1e4)
    return hub


def llama_weights(cfg, seed):
    """LlamaForCausalLM's state dict in module order (torch Linear: [out, in]); no lm_head if tied.
    Qwen2ForCausalLM's: q/k/v with biases; Qwen3ForCausalLM's: q_norm and k_norm after o_proj."""
    torch.manual_seed(seed)
    h, inter = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // heads
    qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    o_bias = cfg["model_type"] != "qwen2" and cfg.get("attention_bias", False)
    mlp_bias = cfg.get("mlp_bias", False)
    linears = (("self_attn.q_proj", heads * hd, h, qkv_bias),
               ("self_attn.k_proj", kv_heads * hd, h, qkv_bias),
               ("self_attn.v_proj", kv_heads * hd, h, qkv_bias),
               ("self_attn.o_proj", h, heads * hd, o_bias),
               ("mlp.gate_proj", inter, h, mlp_bias),
               ("mlp.up_proj", inter, h, mlp_bias),
               ("mlp.down_proj", h, inter, mlp_bias))
    w = {"model.embed_tokens.weight": matrix(cfg["vocab_size"], h)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, out, inp, has_bias in linears:
            w[p + name + ".weight"] = matrix(out, inp)
            if has_bias:
                w[p + name + ".bias"] = bias(out)
            if name == "self_attn.o_proj" and cfg["model_type"] in ("qwen3", "gemma3_text"):
                w[p + "self_attn.q_norm.weight"] = norm_weight(hd)
                w[p + "self_attn.k_norm.weight"] = norm_weight(hd)
        w[p + "input_layernorm.weight"] = norm_weight(h)
        w[p + "post_attention_layernorm.weight"] = norm_weight(h)
        if cfg["model_type"] in ("gemma2", "gemma3_text"):  # Gemma2DecoderLayer's order
            w[p + "pre_feedforward_layernorm.weight"] = norm_weight(h)
            w[p + "post_feedforward_layernorm.weight"] = norm_weight(h)
    w["model.norm.weight"] = norm_weight(h)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = matrix(cfg["vocab_size"], h)
    return w


def write_json(path, value):
    with open(path, "w") as f:  # as transformers writes its json files
        f.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def save(folder, cfg, weights, shards=1):
    """config.json, generation_config.json and the weights, in one file or `shards` files."""
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"), cfg)
    generation = {"_from_model_config": True, "bos_token_id": cfg["bos_token_id"],
                  "eos_token_id": cfg["eos_token_id"],
                  "transformers_version": cfg.get("transformers_version", "4.26.0.dev0")}
    write_json(os.path.join(folder, "generation_config.json"), generation)
    # The Rust writer orders a file's tensors by dtype, then name.
    ordered = lambda names: {n: weights[n] for n in sorted(names)}
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), ordered(weights))
        return
    # save_pretrained fills shards in state-dict order up to max_shard_size; here: half the bytes.
    size = lambda t: t.numel() * t.element_size()
    total = sum(size(t) for t in weights.values())
    parts, filled = [[] for _ in range(shards)], 0
    for name, t in weights.items():
        parts[min(filled * shards // total, shards - 1)].append(name)
        filled += size(t)
    weight_map = {}
    for i, names in enumerate(parts):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, file), ordered(names))
        weight_map.update({n: file for n in names})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    write_json(os.path.join(folder, "model.safetensors.index.json"), index)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_folders.py OUT_DIR")
    out = sys.argv[1]
    gpt2 = gpt2_weights(GPT2)
    save(os.path.join(out, "gpt2"), GPT2, gpt2)
    save(os.path.join(out, "gpt2_noprefix"), GPT2_HUB, gpt2_hub_weights(GPT2, gpt2))

    llama = llama_weights(LLAMA, seed=2)
    save(os.path.join(out, "llama"), LLAMA, llama)
    save(os.path.join(out, "llama_sharded"), LLAMA, llama, shards=2)

    # Module.to(bfloat16) converts the buffers too, so the old inv_freq buffers are bf16 as well.
    cfg = LLAMA_TIED_BIAS
    tied = llama_weights(cfg, seed=3)
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    inv_freq = 1.0 / cfg["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd)
    for i in range(cfg["num_hidden_layers"]):
        tied[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = inv_freq
    save(os.path.join(out, "llama_tied_bias"), cfg, {n: t.bfloat16() for n, t in tied.items()})

    save(os.path.join(out, "qwen2"), QWEN2, llama_weights(QWEN2, seed=4))
    save(os.path.join(out, "qwen3"), QWEN3, llama_weights(QWEN3, seed=5))
    save(os.path.join(out, "mistral"), MISTRAL, llama_weights(MISTRAL, seed=6))
    # GemmaRMSNorm holds w - 1: weights around 0, not 1.
    gemma = llama_weights(GEMMA, seed=7)
    save(os.path.join(out, "phi3"), PHI3, fuse_phi3(llama_weights(PHI3, seed=8)))
    save(os.path.join(out, "gemma"), GEMMA,
         {n: t - 1 if n.endswith("norm.weight") else t for n, t in gemma.items()})
    for name, cfg, seed in (("gemma2", GEMMA2, 9), ("gemma3_text", GEMMA3_TEXT, 10)):
        save(os.path.join(out, name), cfg,
             {n: t - 1 if n.endswith("norm.weight") else t
              for n, t in llama_weights(cfg, seed=seed).items()})


if __name__ == "__main__":
    main()
