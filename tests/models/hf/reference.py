#!/usr/bin/python3
"""Reference forward and backward of the folders make_folders.py writes, for the C++ parity tests.

  /usr/bin/python3 tests/models/hf/reference.py FOLDERS_DIR

Writes FOLDERS_DIR/<folder>/reference.safetensors: `ids` (I64 [2, 12]), `logits` (F32 [2, 12, V]),
`loss` (F32 []: Hugging Face's causal LM loss, the mean cross entropy of logits[:, :-1] against
ids[:, 1:]) and `grad.<name>` (F32) for every parameter as the folder's file names it (buffers
have none; a tied head's gradient is on the embedding, which autograd sums over both uses).

There is no `transformers` here: the forward is written from Hugging Face's modeling equations
(modeling_gpt2.py, modeling_llama.py), in float32 with dropout off, on the weights read back from
the folder's safetensors files (bf16 read as float32):
  GPT-2: x = wte[ids] + wpe[positions]; pre-LayerNorm blocks x += attn(ln_1(x)), x += mlp(ln_2(x));
    Conv1D is x @ W + b with W [in, out]; attention softmax(q k^T / sqrt(head_dim)) v under a
    causal mask; mlp c_proj(gelu_new(c_fc(x))), gelu_new the tanh GELU
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); ln_f; logits = x @ wte^T (tied).
  Llama: RMSNorm x * rsqrt(mean(x^2) + eps) * weight (in float32); rotary embeddings in rotate_half
    layout, q * cos + rotate_half(q) * sin with cos/sin of cat(freqs, freqs) and inverse
    frequencies 1 / theta^(arange(0, head_dim, 2) / head_dim), Llama 3's rope_scaling applied as
    _compute_llama3_parameters does; grouped-query attention (each k/v head serves
    heads / kv_heads query heads), scaled by 1/sqrt(head_dim); SwiGLU down(silu(gate(x)) * up(x));
    q/k/v/o and MLP biases when the config has them; head_dim from the config or hidden / heads;
    final norm; lm_head, or the embedding when tied.
self_check() at the end tests the pieces against second computations and hand values.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

from safetensors_io import read_folder, read_safetensors, write_safetensors

FOLDERS = ("gpt2", "gpt2_noprefix", "llama", "llama_tied_bias", "llama_sharded", "qwen2", "qwen3",
           "mistral", "gemma", "phi3", "gemma2", "gemma3_text")


def causal_attention(scores, v, window=None):
    """softmax(scores) v over [batch, heads, tokens, ...], each token seeing itself and earlier
    ones (with a sliding `window`: the last `window` of them, itself included, as Mistral's mask
    in transformers: key j hidden from query i when j <= i - window). Hidden scores get the
    dtype's lowest value, as HF's eager attention does."""
    t = scores.size(-1)
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    if window:
        allowed &= ~torch.ones(t, t, dtype=torch.bool).tril(diagonal=-window)
    scores = torch.where(allowed, scores, torch.tensor(torch.finfo(scores.dtype).min))
    return torch.softmax(scores, dim=-1) @ v


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gpt2_forward(cfg, w, ids):
    # The hub's original file has no `transformer.` prefix.
    p = "" if "wte.weight" in w else "transformer."
    assert cfg.get("activation_function", "gelu_new") == "gelu_new"
    assert not cfg.get("scale_attn_by_inverse_layer_idx") and not cfg.get("reorder_and_upcast_attn")
    assert cfg.get("scale_attn_weights", True)
    e, heads = cfg["n_embd"], cfg["n_head"]
    hd = e // heads
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    b, t = ids.shape

    def layer_norm(x, name):
        return F.layer_norm(x, (e,), w[name + ".weight"], w[name + ".bias"], eps)

    def conv1d(x, name):
        return x @ w[name + ".weight"] + w[name + ".bias"]

    def split_heads(x):
        return x.view(b, t, heads, hd).transpose(1, 2)

    x = w[p + "wte.weight"][ids] + w[p + "wpe.weight"][torch.arange(t)]
    for i in range(cfg["n_layer"]):
        h = f"{p}h.{i}."
        q, k, v = conv1d(layer_norm(x, h + "ln_1"), h + "attn.c_attn").split(e, dim=-1)
        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        # HF divides by sqrt(head_dim) here, and multiplies by head_dim ** -0.5 in Llama.
        y = causal_attention(q @ k.transpose(-1, -2) / math.sqrt(hd), v)
        x = x + conv1d(y.transpose(1, 2).reshape(b, t, e), h + "attn.c_proj")
        y = gelu_new(conv1d(layer_norm(x, h + "ln_2"), h + "mlp.c_fc"))
        x = x + conv1d(y, h + "mlp.c_proj")
    return layer_norm(x, p + "ln_f") @ w[p + "wte.weight"].t()


def rms_norm(x, weight, eps, plus_one=False):
    """HF's LlamaRMSNorm: the statistics in float32, cast back to x's dtype, times the weight.
    GemmaRMSNorm (`plus_one`): times (1 + weight) in float32, then cast."""
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    if plus_one:
        return (x32 * (1.0 + weight.float())).to(x.dtype)
    return weight * x32.to(x.dtype)


def llama3_inv_freq(inv_freq, scaling):
    """Llama 3's rope_scaling, as transformers' _compute_llama3_parameters computes it."""
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv_freq
    # Long wavelengths are divided by factor, short ones kept, the ones between interpolated.
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_inv_freq(cfg, hd, theta=None, scaled=True):
    theta = cfg["rope_theta"] if theta is None else theta
    inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd)
    scaling = cfg.get("rope_scaling") if scaled else None
    if not scaling:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / scaling["factor"]
    assert kind == "llama3", f"rope_scaling type {kind} is not written here"
    return llama3_inv_freq(inv_freq, scaling)


def rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def rope_cos_sin(inv_freq, t):
    freqs = torch.arange(t).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x, n_rep):
    """[b, kv_heads, t, d] -> [b, kv_heads * n_rep, t, d]: kv head j serves query heads
    j * n_rep ... j * n_rep + n_rep - 1 (HF's expand-and-reshape)."""
    b, kv_heads, t, d = x.shape
    return x[:, :, None].expand(b, kv_heads, n_rep, t, d).reshape(b, kv_heads * n_rep, t, d)


def softcapped_attention(scores, v, cap, window=None):
    """Gemma 2's eager attention (modeling_gemma2.py): the scaled scores soft-capped,
    cap * tanh(scores / cap), before the (sliding-window) causal mask and the softmax."""
    if cap:
        scores = torch.tanh(scores / cap) * cap
    return causal_attention(scores, v, window)


def gemma2_layer_sliding(cfg, i):
    """Gemma 2's and 3's layer kinds: layer_types, else Gemma 2's even layers and Gemma 3's
    (i + 1) % sliding_window_pattern != 0 local."""
    if cfg.get("layer_types"):
        return cfg["layer_types"][i] == "sliding_attention"
    if cfg["model_type"] == "gemma2":
        return i % 2 == 0
    return (i + 1) % cfg.get("sliding_window_pattern", 6) != 0


def llama_forward(cfg, w, ids):
    """LlamaForCausalLM's forward (modeling_llama.py); Qwen2's (modeling_qwen2.py) is the same with
    q/k/v biases, Qwen3's (modeling_qwen3.py) adds q_norm and k_norm, an RMSNorm over each head's
    query and key before the rotation; Gemma's (modeling_gemma.py) scales the embeddings by
    sqrt(hidden_size), its norms by (1 + weight), and gates the MLP with the tanh GELU. Gemma 2
    (modeling_gemma2.py) adds norms after the attention and around the MLP, scales the scores by
    query_pre_attn_scalar^-1/2, soft-caps them (attn_logit_softcapping) and the logits
    (final_logit_softcapping), and its even layers attend within sliding_window; Gemma 3's text
    model (modeling_gemma3.py) has q_norm/k_norm (Gemma's RMSNorm), no soft caps, and its local
    layers (five in six) take rope_local_base_freq unscaled."""
    family = cfg["model_type"]
    gemmas = ("gemma", "gemma2", "gemma3_text")
    assert family in gemmas or cfg.get("hidden_act", "silu") == "silu"
    assert cfg.get("pretraining_tp", 1) == 1 and cfg.get("hidden_activation") in (None, "gelu_pytorch_tanh")
    assert not cfg.get("use_sliding_window", False)
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or h // heads
    eps = cfg["rms_norm_eps"]
    gemma = family in gemmas
    sandwich = family in ("gemma2", "gemma3_text")
    norm = lambda x, weight: rms_norm(x, weight, eps, plus_one=gemma)
    act = (lambda x: F.gelu(x, approximate="tanh")) if gemma else F.silu
    b, t = ids.shape
    cos, sin = rope_cos_sin(rope_inv_freq(cfg, hd), t)
    if family == "gemma3_text":  # the local layers' rotation
        local_cos, local_sin = rope_cos_sin(
            rope_inv_freq(cfg, hd, cfg["rope_local_base_freq"], scaled=False), t)
    scaling = cfg["query_pre_attn_scalar"] ** -0.5 if sandwich else hd ** -0.5

    def linear(x, name):
        if cfg["model_type"] == "phi3":  # q, k, v and gate, up are slices of fused weights
            layer, _, kind = name.rpartition(".")
            fused = {"q_proj": ("qkv_proj", 0), "k_proj": ("qkv_proj", 1),
                     "v_proj": ("qkv_proj", 2), "gate_proj": ("gate_up_proj", 0),
                     "up_proj": ("gate_up_proj", 1)}.get(kind)
            if fused:
                weight = w[f"{layer}.{fused[0]}.weight"]
                sizes = ([heads * hd, kv_heads * hd, kv_heads * hd] if fused[0] == "qkv_proj"
                         else [weight.size(0) // 2] * 2)
                return F.linear(x, weight.split(sizes)[fused[1]])
        return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))

    def split_heads(x, n):
        return x.view(b, t, n, hd).transpose(1, 2)

    x = w["model.embed_tokens.weight"][ids]
    if gemma:  # the normalizer is rounded to the embeddings' dtype first
        x = x * torch.tensor(h ** 0.5, dtype=x.dtype)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = norm(x, w[p + "input_layernorm.weight"])
        q = split_heads(linear(a, p + "self_attn.q_proj"), heads)
        k = split_heads(linear(a, p + "self_attn.k_proj"), kv_heads)
        if family in ("qwen3", "gemma3_text"):
            q = norm(q, w[p + "self_attn.q_norm.weight"])
            k = norm(k, w[p + "self_attn.k_norm.weight"])
        sliding = sandwich and gemma2_layer_sliding(cfg, i)
        c, s = (local_cos, local_sin) if sliding and family == "gemma3_text" else (cos, sin)
        q, k = apply_rope(q, c, s), apply_rope(k, c, s)
        v = split_heads(linear(a, p + "self_attn.v_proj"), kv_heads)
        k, v = repeat_kv(k, heads // kv_heads), repeat_kv(v, heads // kv_heads)
        window = (cfg.get("sliding_window") if family in ("mistral", "phi3") or sliding
                  else None)
        y = softcapped_attention(q @ k.transpose(-1, -2) * scaling, v,
                                 cfg.get("attn_logit_softcapping"), window)
        y = linear(y.transpose(1, 2).reshape(b, t, heads * hd), p + "self_attn.o_proj")
        if sandwich:
            x = x + norm(y, w[p + "post_attention_layernorm.weight"])
            m = norm(x, w[p + "pre_feedforward_layernorm.weight"])
        else:
            x = x + y
            m = norm(x, w[p + "post_attention_layernorm.weight"])
        gated = linear(act(linear(m, p + "mlp.gate_proj")) * linear(m, p + "mlp.up_proj"),
                       p + "mlp.down_proj")
        x = x + (norm(gated, w[p + "post_feedforward_layernorm.weight"]) if sandwich else gated)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    logits = norm(x, w["model.norm.weight"]) @ head.t()
    cap = cfg.get("final_logit_softcapping")
    return torch.tanh(logits / cap) * cap if cap else logits


def is_buffer(name):
    """Tensors old versions saved that are not parameters (and a loader skips). GPT-2's mask buffer
    is `h.{i}.attn.bias`; the Conv1D biases end in `c_attn.bias` / `c_proj.bias` and stay."""
    return name.endswith((".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq"))


def reference(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    forward = {"gpt2": gpt2_forward, "llama": llama_forward, "qwen2": llama_forward,
               "qwen3": llama_forward, "mistral": llama_forward,
               "gemma": llama_forward, "phi3": llama_forward, "gemma2": llama_forward,
               "gemma3_text": llama_forward}[cfg["model_type"]]
    params = {n: t.float().requires_grad_() for n, t in read_folder(folder).items()
              if not is_buffer(n)}
    ids = torch.randint(0, cfg["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(7))
    logits = forward(cfg, params, ids)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    loss.backward()
    out = {"ids": ids, "logits": logits.detach(), "loss": loss.detach()}
    for name, t in params.items():
        assert t.grad is not None, f"{folder}: {name} takes no part in the forward"
        out["grad." + name] = t.grad
    write_safetensors(os.path.join(folder, "reference.safetensors"), out)
    return out


def assert_same(a, b, rename=lambda name: name):
    assert {rename(n) for n in a} == set(b), sorted(set(b) ^ {rename(n) for n in a})
    for name, t in a.items():
        assert torch.equal(t, b[rename(name)]), name


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: reference.py FOLDERS_DIR")
    self_check()
    refs = {name: reference(os.path.join(sys.argv[1], name)) for name in FOLDERS}
    # Same weights under other names, or split over files: the same numbers.
    assert_same(refs["gpt2_noprefix"], refs["gpt2"], lambda n: n.replace("grad.", "grad.transformer."))
    assert_same(refs["llama_sharded"], refs["llama"])
    # Read the files back: the writer and reader agree.
    for name, ref in refs.items():
        assert_same(read_safetensors(os.path.join(sys.argv[1], name, "reference.safetensors")), ref)
    for name, ref in refs.items():
        print(f"{name}: loss {ref['loss'].item():.6f}, logits {list(ref['logits'].shape)}, "
              f"{sum(n.startswith('grad.') for n in ref)} gradients")


def self_check():
    """The pieces above against second computations and values worked out by hand."""
    torch.manual_seed(0)
    # Attention: the masked softmax equals, per query, a plain softmax over the keys up to it.
    q, k, v = torch.randn(3, 2, 3, 5, 4).unbind(0)
    got = causal_attention(q @ k.transpose(-1, -2) * 0.5, v)
    for i in range(5):
        scores = (q[..., i:i + 1, :] @ k[..., :i + 1, :].transpose(-1, -2)) * 0.5
        assert torch.allclose(got[..., i:i + 1, :], torch.softmax(scores, -1) @ v[..., :i + 1, :],
                              atol=1e-6)
    # gelu_new is PyTorch's tanh GELU; Conv1D is a Linear with the weight transposed.
    x = torch.linspace(-4, 4, 17)
    assert torch.allclose(gelu_new(x), F.gelu(x, approximate="tanh"), atol=1e-6)
    x, weight, b = torch.randn(2, 4), torch.randn(4, 6), torch.randn(6)
    assert torch.allclose(x @ weight + b, F.linear(x, weight.t(), b), atol=1e-6)
    # RMSNorm of [3, 4]: mean square 12.5.
    got = rms_norm(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 2.0]), eps=0.5)
    assert torch.allclose(got, torch.tensor([3.0, 8.0]) / math.sqrt(13.0))
    # Rotary embedding, head_dim 4, theta 10000: inv_freq [1, 0.01]; rotate_half pairs (0, 2), (1, 3).
    inv_freq = rope_inv_freq({"rope_theta": 10000.0}, 4)
    assert torch.allclose(inv_freq, torch.tensor([1.0, 0.01]))
    cos, sin = rope_cos_sin(inv_freq, 3)
    got = apply_rope(torch.tensor([1.0, 2.0, 3.0, 4.0]).expand(3, 4), cos, sin)
    for pos in range(3):
        c0, s0, c1, s1 = (math.cos(pos), math.sin(pos), math.cos(pos / 100), math.sin(pos / 100))
        hand = [1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 3 * c0 + 1 * s0, 4 * c1 + 2 * s1]
        assert torch.allclose(got[pos], torch.tensor(hand), atol=1e-6), pos
    # Llama 3 scaling with original 16, factors 1 and 4: wavelengths under 4 keep their frequency,
    # over 16 are divided by 8, between them mix with smooth = (16 / wavelen - 1) / 3.
    scaling = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16}
    got = llama3_inv_freq(torch.tensor([4.0, 1.0, 0.1]), scaling)
    smooth = (16 / (2 * math.pi) - 1) / 3
    assert torch.allclose(got, torch.tensor([4.0, (1 - smooth) / 8 + smooth, 0.1 / 8]))
    # A window of 2: each token sees itself and the one before.
    scores, v = torch.zeros(1, 1, 4, 4), torch.eye(4).view(1, 1, 4, 4)
    want = torch.tensor([[1, 0, 0, 0], [.5, .5, 0, 0], [0, .5, .5, 0], [0, 0, .5, .5]])
    assert torch.allclose(causal_attention(scores, v, window=2)[0, 0], want)
    # repeat_kv: query head j uses kv head j // n_rep.
    kv = torch.randn(2, 2, 3, 4)
    repeated = repeat_kv(kv, 3)
    assert all(torch.equal(repeated[:, j], kv[:, j // 3]) for j in range(6))


if __name__ == "__main__":
    main()
