"""Tiny Hugging Face model folders and their reference outputs, for hf_causal_lm_test.cpp.

  /usr/bin/python3 tests/models/hf_reference.py OUT_DIR

Writes OUT_DIR/<name>/ as transformers' save_pretrained lays a folder out (config.json,
generation_config.json, model.safetensors or shards with model.safetensors.index.json) and
OUT_DIR/<name>/reference.safetensors: `ids` [2, 12], `logits`, `loss` (the causal LM loss: mean
cross entropy of logits[:, :-1] against ids[:, 1:]) and `grad.<name>` of every tensor of the file.

There is no `transformers` here (no PyPI): the forward below is written from Hugging Face's
modeling equations (modeling_gpt2.py, modeling_llama.py), in float32 with dropout off:
  GPT-2: wte + wpe; blocks x + attn(ln_1(x)), x + mlp(ln_2(x)); Conv1D is x @ W + b with W
    [in, out]; attention scaled by 1/sqrt(head_dim) under a causal mask; gelu_new is the tanh
    GELU; ln_f; the head is wte (tied).
  Llama: RMSNorm x * rsqrt(mean(x^2) + eps) in float32, times the weight; rotary embeddings in
    rotate_half layout (q * cos + rotate_half(q) * sin, cos/sin of cat(freqs, freqs)), inverse
    frequencies 1 / theta^(2i / head_dim) with Llama 3's rope_scaling as
    _compute_llama3_parameters does; grouped-query attention (k/v heads repeated); SwiGLU
    down(silu(gate(x)) * up(x)); optional biases; explicit head_dim; lm_head or tied.
Folders: gpt2 (GPT2LMHeadModel's names), gpt2_noprefix (the hub file's names, with the old
causal-mask buffers), llama (GQA, head_dim 16 != 32 / 4, Llama 3 rope scaling, untied),
llama_tied_bias (tied, biases, weights stored as bf16, old rotary inv_freq buffers),
llama_sharded (llama's weights in two shards with an index).
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}
BACK = {v: k for k, v in DTYPES.items()}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        b, e = h["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        dtype = BACK[h["dtype"]]
        if dtype == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(raw, dtype=dtype)
        out[name] = t.reshape(h["shape"]).clone()
    return out


def read_folder(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"))
    out = {}
    for f in sorted(set(json.load(open(index))["weight_map"].values())):
        out.update(read_safetensors(os.path.join(folder, f)))
    return out


def randn(g, *shape, std=0.02, mean=0.0):
    return torch.randn(*shape, generator=g) * std + mean


def gpt2_weights(cfg, g):
    e, inner = cfg["n_embd"], 4 * cfg["n_embd"]
    w = {"transformer.wte.weight": randn(g, cfg["vocab_size"], e),
         "transformer.wpe.weight": randn(g, cfg["n_positions"], e)}
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        for norm in ("ln_1", "ln_2"):  # not 1 and 0: a wrong norm shows
            w[p + norm + ".weight"] = randn(g, e, std=0.1, mean=1.0)
            w[p + norm + ".bias"] = randn(g, e, std=0.1)
        for name, shape in (("attn.c_attn", (e, 3 * e)), ("attn.c_proj", (e, e)),
                            ("mlp.c_fc", (e, inner)), ("mlp.c_proj", (inner, e))):
            w[p + name + ".weight"] = randn(g, *shape, std=0.1)
            w[p + name + ".bias"] = randn(g, shape[1], std=0.1)
    w["transformer.ln_f.weight"] = randn(g, e, std=0.1, mean=1.0)
    w["transformer.ln_f.bias"] = randn(g, e, std=0.1)
    return w


def gpt2_forward(cfg, w, ids):
    p = "transformer."
    e, heads = cfg["n_embd"], cfg["n_head"]
    d = e // heads
    b, t = ids.shape
    x = w[p + "wte.weight"][ids] + w[p + "wpe.weight"][torch.arange(t)]
    ln = lambda x, n: torch.nn.functional.layer_norm(x, (e,), w[n + ".weight"], w[n + ".bias"],
                                                     cfg["layer_norm_epsilon"])
    conv1d = lambda x, n: x @ w[n + ".weight"] + w[n + ".bias"]
    gelu_new = lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    for i in range(cfg["n_layer"]):
        h = f"{p}h.{i}."
        q, k, v = conv1d(ln(x, h + "ln_1"), h + "attn.c_attn").split(e, dim=2)
        q, k, v = (m.view(b, t, heads, d).transpose(1, 2) for m in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        scores = scores.masked_fill(~mask, float("-inf"))
        y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, e)
        x = x + conv1d(y, h + "attn.c_proj")
        x = x + conv1d(gelu_new(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc")), h + "mlp.c_proj")
    return ln(x, p + "ln_f") @ w[p + "wte.weight"].t()


def llama_weights(cfg, g, bias):
    hsz, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or hsz // heads
    w = {"model.embed_tokens.weight": randn(g, v, hsz)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, (o, n) in (("self_attn.q_proj", (heads * hd, hsz)), ("self_attn.k_proj", (kv * hd, hsz)),
                             ("self_attn.v_proj", (kv * hd, hsz)), ("self_attn.o_proj", (hsz, heads * hd)),
                             ("mlp.gate_proj", (inter, hsz)), ("mlp.up_proj", (inter, hsz)),
                             ("mlp.down_proj", (hsz, inter))):
            w[p + name + ".weight"] = randn(g, o, n, std=0.1)
            if bias:
                w[p + name + ".bias"] = randn(g, o, std=0.1)
        w[p + "input_layernorm.weight"] = randn(g, hsz, std=0.1, mean=1.0)
        w[p + "post_attention_layernorm.weight"] = randn(g, hsz, std=0.1, mean=1.0)
    w["model.norm.weight"] = randn(g, hsz, std=0.1, mean=1.0)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = randn(g, v, hsz, std=0.1)
    return w


def llama_inv_freq(cfg, hd):
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    s = cfg.get("rope_scaling")
    if not s:
        return inv
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def llama_forward(cfg, w, ids):
    hsz, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or hsz // heads
    eps = cfg["rms_norm_eps"]
    b, t = ids.shape
    rms = lambda x, n: w[n] * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps))
    lin = lambda x, n: x @ w[n + ".weight"].t() + (w[n + ".bias"] if n + ".bias" in w else 0)
    freqs = torch.arange(t).float()[:, None] * llama_inv_freq(cfg, hd)[None, :]
    emb = torch.cat((freqs, freqs), -1)
    cos, sin = emb.cos(), emb.sin()
    rotate_half = lambda x: torch.cat((-x[..., hd // 2:], x[..., :hd // 2]), -1)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    x = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = rms(x, p + "input_layernorm.weight")
        q = lin(a, p + "self_attn.q_proj").view(b, t, heads, hd).transpose(1, 2)
        k = lin(a, p + "self_attn.k_proj").view(b, t, kv, hd).transpose(1, 2)
        v = lin(a, p + "self_attn.v_proj").view(b, t, kv, hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(heads // kv, 1), v.repeat_interleave(heads // kv, 1)
        scores = (q @ k.transpose(-1, -2)) * hd ** -0.5
        y = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
        x = x + lin(y.transpose(1, 2).reshape(b, t, heads * hd), p + "self_attn.o_proj")
        m = rms(x, p + "post_attention_layernorm.weight")
        x = x + lin(torch.nn.functional.silu(lin(m, p + "mlp.gate_proj")) * lin(m, p + "mlp.up_proj"),
                    p + "mlp.down_proj")
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return rms(x, "model.norm.weight") @ head.t()


GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 96,
        "n_positions": 32, "n_ctx": 32, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_inner": None,
        "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
        "layer_norm_epsilon": 1e-05, "initializer_range": 0.02, "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
        "summary_type": "cls_index", "use_cache": True, "bos_token_id": 95, "eos_token_id": 95,
        "torch_dtype": "float32", "transformers_version": "4.46.0"}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 112,
         "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-05,
         "rope_theta": 500000.0,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
         "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
         "pretraining_tp": 1, "tie_word_embeddings": False, "initializer_range": 0.02,
         "bos_token_id": 1, "eos_token_id": [2, 3], "use_cache": True, "torch_dtype": "float32",
         "transformers_version": "4.46.0"}
LLAMA_TIED = dict(LLAMA, num_key_value_heads=4, rope_scaling=None, rope_theta=10000.0,
                  attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                  torch_dtype="bfloat16", bos_token_id=1, eos_token_id=2)
del LLAMA_TIED["head_dim"]


def save(folder, cfg, weights, shards=1):
    os.makedirs(folder, exist_ok=True)
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"), indent=2)
    eos = cfg["eos_token_id"]
    json.dump({"bos_token_id": cfg["bos_token_id"], "eos_token_id": eos,
               "transformers_version": cfg["transformers_version"]},
              open(os.path.join(folder, "generation_config.json"), "w"), indent=2)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights)
        return
    names = list(weights)
    half = len(names) // 2
    weight_map, total = {}, 0
    for i, part in enumerate((names[:half], names[half:])):
        file = f"model-{i + 1:05d}-of-00002.safetensors"
        write_safetensors(os.path.join(folder, file), {n: weights[n] for n in part})
        for n in part:
            weight_map[n] = file
            total += weights[n].numel() * weights[n].element_size()
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(folder, "model.safetensors.index.json"), "w"), indent=2)


def reference(folder, forward, cfg, ids):
    """Outputs of the weights as the folder holds them (bf16 read as float32)."""
    file_weights = read_folder(folder)
    w = {n: t.float().requires_grad_(True) for n, t in file_weights.items()}
    logits = forward(cfg, w, ids)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)),
                                             ids[:, 1:].reshape(-1))
    loss.backward()
    out = {"ids": ids, "logits": logits.detach(), "loss": loss.detach()}
    out.update({"grad." + n: t.grad for n, t in w.items() if t.grad is not None})
    write_safetensors(os.path.join(folder, "reference.safetensors"), out)
    return out


def main():
    out = sys.argv[1]
    g = torch.Generator().manual_seed(46)
    ids = torch.randint(0, 96, (2, 12), generator=g)

    w = gpt2_weights(GPT2, g)
    save(os.path.join(out, "gpt2"), GPT2, w)
    ref = reference(os.path.join(out, "gpt2"), gpt2_forward, GPT2, ids)
    # The hub's gpt2 file: GPT2Model's names, and the causal-mask buffers a loader skips.
    hub = {n[len("transformer."):]: t for n, t in w.items()}
    p = GPT2["n_positions"]
    for i in range(GPT2["n_layer"]):
        hub[f"h.{i}.attn.bias"] = torch.ones(p, p).tril().view(1, 1, p, p)
        hub[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    save(os.path.join(out, "gpt2_noprefix"), GPT2, hub)
    write_safetensors(os.path.join(out, "gpt2_noprefix", "reference.safetensors"),
                      {k if not k.startswith("grad.") else "grad." + k[len("grad.transformer."):]: v
                       for k, v in ref.items()})

    w = llama_weights(LLAMA, g, bias=False)
    save(os.path.join(out, "llama"), LLAMA, w)
    ref = reference(os.path.join(out, "llama"), llama_forward, LLAMA, ids)
    save(os.path.join(out, "llama_sharded"), LLAMA, w, shards=2)
    again = reference(os.path.join(out, "llama_sharded"), llama_forward, LLAMA, ids)
    assert torch.equal(again["logits"], ref["logits"])

    w = llama_weights(LLAMA_TIED, g, bias=True)
    w = {n: t.bfloat16() for n, t in w.items()}
    inv = llama_inv_freq(LLAMA_TIED, LLAMA_TIED["hidden_size"] // LLAMA_TIED["num_attention_heads"])
    for i in range(LLAMA_TIED["num_hidden_layers"]):
        w[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = inv
    save(os.path.join(out, "llama_tied_bias"), LLAMA_TIED, w)
    forward = lambda cfg, w, ids: llama_forward(
        cfg, {n: t for n, t in w.items() if not n.endswith("inv_freq")}, ids)
    reference(os.path.join(out, "llama_tied_bias"), forward, LLAMA_TIED, ids)
    self_check()


def self_check():
    """Pieces checked against values worked out by hand."""
    cfg = {"rope_theta": 10000.0, "rope_scaling": None}
    assert torch.allclose(llama_inv_freq(cfg, 4), torch.tensor([1.0, 0.01]))
    x = torch.tensor([[3.0, 4.0]])  # mean square 12.5
    w = {"n": torch.tensor([1.0, 2.0])}
    rms = w["n"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)))
    assert torch.allclose(rms, torch.tensor([[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)]]))


if __name__ == "__main__":
    main()
