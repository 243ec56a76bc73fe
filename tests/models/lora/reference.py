#!/usr/bin/python3
"""Reference LoRA forward and backward for tests/models/lora_test.cpp, in Debian's PyTorch.

  /usr/bin/python3 tests/models/lora/reference.py OUT.safetensors

PEFT's LoRA Linear (peft/tuners/lora/layer.py, Linear.forward with dropout off) written out:
  result = base(x) + lora_B(lora_A(dropout(x))) * scaling,
  lora_A, lora_B nn.Linear without bias (A [r, in], B [out, r]), scaling = lora_alpha / r, or
  lora_alpha / sqrt(r) with use_rslora. base is nn.Linear (W [out, in]) or, for GPT-2's Conv1D
  (fan_in_fan_out), x @ W + b with W [in, out]. Merging adds transpose(B @ A, fan_in_fan_out) *
  scaling to W (get_delta_weight).
Cases (name: in, out, r, alpha, rslora, fan_in_fan_out):
  linear: 5, 7, 3, 6.0, False, False      conv1d: 6, 4, 2, 5.0, False, True
  rslora: 5, 7, 4, 8.0, True, False
For each, tensors <case>.{x [2, 3, in], weight, bias, lora_A, lora_B, y, grad_x, grad_weight_A,
grad_weight_B, merged_weight}, where the gradients are of (y * g).sum() with g = <case>.g, and B is
random (not zero) so that every term shows.
"""
import math
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/hf")
from safetensors_io import write_safetensors  # noqa: E402

CASES = {
    "linear": (5, 7, 3, 6.0, False, False),
    "conv1d": (6, 4, 2, 5.0, False, True),
    "rslora": (5, 7, 4, 8.0, True, False),
}


def case(name, n_in, n_out, r, alpha, rslora, fan_in_fan_out, gen):
    scaling = alpha / math.sqrt(r) if rslora else alpha / r
    x = torch.randn(2, 3, n_in, generator=gen, requires_grad=True)
    w = torch.randn(*((n_in, n_out) if fan_in_fan_out else (n_out, n_in)), generator=gen)
    b = torch.randn(n_out, generator=gen)
    a = torch.randn(r, n_in, generator=gen, requires_grad=True)
    bb = torch.randn(n_out, r, generator=gen, requires_grad=True)
    g = torch.randn(2, 3, n_out, generator=gen)
    base = F.linear(x, w.t() if fan_in_fan_out else w, b)
    y = base + F.linear(F.linear(x, a), bb) * scaling
    (y * g).sum().backward()
    delta = (bb @ a).detach() * scaling
    merged = w + (delta.t() if fan_in_fan_out else delta)
    # The merged layer computes y (no dropout): checked here, then in C++.
    assert torch.allclose(F.linear(x, merged.t() if fan_in_fan_out else merged, b), y, atol=1e-5)
    out = {"x": x.detach(), "weight": w, "bias": b, "lora_A": a.detach(), "lora_B": bb.detach(),
           "g": g, "y": y.detach(), "grad_x": x.grad, "grad_weight_A": a.grad,
           "grad_weight_B": bb.grad, "merged_weight": merged}
    return {f"{name}.{k}": v.contiguous() for k, v in out.items()}


def main():
    gen = torch.Generator().manual_seed(49)
    tensors = {}
    for name, args in CASES.items():
        tensors.update(case(name, *args, gen))
    write_safetensors(sys.argv[1], tensors)


if __name__ == "__main__":
    main()
