#!/usr/bin/env python3
"""Runs a unitrain TorchScript export once in Python and prints JSON:
{"output_shape": [...], "output_dtype": "...", "training": false, "state_dict": [keys...]}.

Usage: torchscript_export_check.py FILE DIM... [--dtype float|long]
The input is torch.randn(DIM...) (float) or torch.zeros(DIM..., dtype=long) (token ids).
"""
import argparse
import json

import torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("file")
parser.add_argument("shape", type=int, nargs="+")
parser.add_argument("--dtype", choices=["float", "long"], default="float")
args = parser.parse_args()

module = torch.jit.load(args.file, map_location="cpu")
if args.dtype == "long":
    x = torch.zeros(args.shape, dtype=torch.long)
else:
    x = torch.randn(args.shape)
with torch.no_grad():
    y = module(x)
print(json.dumps({
    "output_shape": list(y.shape),
    "output_dtype": str(y.dtype).replace("torch.", ""),
    "training": module.training,
    "state_dict": list(module.state_dict().keys()),
}))
