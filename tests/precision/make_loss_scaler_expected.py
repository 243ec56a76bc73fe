"""Expected values for loss_scaler_test.cpp: the scale sequence of PyTorch's GradScaler.

  /usr/bin/python3 tests/precision/make_loss_scaler_expected.py > tests/precision/loss_scaler_expected.json

GradScaler.update() runs torch._amp_update_scale_, whose kernel exists for CUDA only in
PyTorch 1.13 (this machine has none), so its arithmetic is written out here as the kernel
(aten/src/ATen/native/cuda/AmpKernels.cu) does it: a float32 scale times a double factor,
stored as float32; growth only when the grown scale is finite. Initial values come from
GradScaler itself, and the unscaled gradients from torch's own float32 multiplication by
GradScaler's inverse scale (`scale.double().reciprocal().float()`).
"""
import inspect
import json
import math

import numpy as np
import torch


def update(scale, tracker, found_inf, growth, backoff, interval):
    if found_inf:
        return np.float32(np.float64(scale) * backoff), 0
    successful = tracker + 1
    if successful == interval:
        with np.errstate(over="ignore"):
            grown = np.float32(np.float64(scale) * growth)
        return (grown if math.isfinite(grown) else scale), 0
    return scale, successful


def sequence(init, growth, backoff, interval, pattern):
    scale, tracker, out = np.float32(init), 0, []
    for found in pattern:
        scale, tracker = update(scale, tracker, found, growth, backoff, interval)
        out.append([float(scale), tracker])
    return out


defaults = {k: v.default for k, v in inspect.signature(torch.cuda.amp.GradScaler).parameters.items()
            if k != "enabled"}
cases = []
pattern = [False] * 4 + [True] + [False] * 3 + [True, True] + [False] * 7
cases.append({"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 3, "found_inf": pattern})
cases.append({"init_scale": 1000.0, "growth_factor": 1.7, "backoff_factor": 0.3,
              "growth_interval": 2, "found_inf": [False, False, True, False, False, False, True, False, False]})
cases.append({"init_scale": 2.0 ** 127, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 1, "found_inf": [False, False, True, False]})
for c in cases:
    c["expected"] = sequence(c["init_scale"], c["growth_factor"], c["backoff_factor"],
                             c["growth_interval"], c["found_inf"])

grads = torch.tensor([1.5, -3.0, 1e-3, 12345.678, -0.1], dtype=torch.float32)
unscale = []
for scale in (65536.0, 1000.0, 0.75):
    inv = torch.tensor(scale, dtype=torch.float32).double().reciprocal().float()
    unscale.append({"scale": scale, "grads": grads.tolist(), "unscaled": (grads * inv).tolist()})

print(json.dumps({
    "gradscaler_defaults": defaults,
    "updates": cases,
    "unscale": unscale,
}, indent=1))
