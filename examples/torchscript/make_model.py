#!/usr/bin/env python3
"""Exports a small classifier as TorchScript for `model: {type: torchscript, args: {path: ...}}`.

The model is a 64-32-10 MLP for the 8x8 digits data (64 features, 10 classes); its parameters
are named fc1.weight, fc1.bias, fc2.weight, fc2.bias as in its state_dict, and unitrain trains
them under those names.

    python3 examples/torchscript/make_model.py digits_mlp.pt
    python3 examples/torchscript/make_model.py digits_mlp.pt --check check.pt --seed 0

--check also saves a TorchScript module holding an example input `x` and the model's output
`y` on it (as buffers), so a C++ test can check that it computes the same.
Needs torch (tested with 1.13.1).
"""
import argparse
import os
from typing import Optional

import torch
from torch import nn


class DigitsMlp(nn.Module):
    def __init__(self, inputs: int = 64, hidden: int = 32, classes: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class Check(nn.Module):
    """Holds an input and the expected output, readable from C++ with torch::jit::load."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        self.register_buffer("x", x)
        self.register_buffer("y", y)

    def forward(self) -> torch.Tensor:
        return self.y


def export(out: str, check: Optional[str] = None, seed: int = 0) -> None:
    """Saves the scripted DigitsMlp to `out`, and an example input and output to `check`."""
    for path in (out, check):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.manual_seed(seed)
    model = torch.jit.script(DigitsMlp())
    model.save(out)
    print(f"saved {out}: " + ", ".join(model.state_dict().keys()))
    if check:
        model.eval()
        x = torch.randn(5, 64)
        with torch.no_grad():
            y = model(x)
        torch.jit.script(Check(x, y)).save(check)
        print(f"saved {check}: x {list(x.shape)}, y {list(y.shape)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="where to save the TorchScript model (.pt)")
    parser.add_argument("--check", help="also save an example input and output here")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    export(args.out, args.check, args.seed)


if __name__ == "__main__":
    main()
