#!/usr/bin/env python3
"""TorchScript modules for torchscript_model_test.cpp, written into the folder given as argv[1].

  digits_mlp.pt       examples/torchscript/make_model.py's model (run from here: one Python
  digits_check.pt     start-up for the whole test), and its example input x and output y

  dict_net.pt         nested submodules, a BatchNorm (buffers), Dropout, a top-level parameter;
                      forward(x [N, 4]) -> {"logits": [N, 3], "embedding": [N, 8]}
  dict_net.names.txt  its named_parameters() names, one a line, in order
  tuple_net.pt        forward(x [N, 4], shift: Optional[Tensor] = None) -> (y [N, 2], y.sum(1))
  traced_net.pt       torch.jit.trace of a Sequential(Linear(4, 3), Tanh) -> [N, 3]
  traced_check.pt     buffers x [2, 4] and y = traced_net(x)

Run by the test with /usr/bin/python3 (torch 1.13.1).
"""
import os
import sys
from typing import Dict, Optional, Tuple

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "torchscript"))
import make_model  # noqa: E402


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class DictNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.encoder = Encoder()
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.drop(self.encoder(x))
        return {"logits": self.head(h) * self.scale, "embedding": h}


class TupleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor,
                shift: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(x)
        if shift is not None:
            y = y + shift
        return y, y.sum(1)


class Check(nn.Module):
    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        self.register_buffer("x", x)
        self.register_buffer("y", y)


def main() -> None:
    out = sys.argv[1]
    make_model.export(os.path.join(out, "digits_mlp.pt"), os.path.join(out, "digits_check.pt"))
    torch.manual_seed(0)
    net = DictNet()
    torch.jit.script(net).save(os.path.join(out, "dict_net.pt"))
    with open(os.path.join(out, "dict_net.names.txt"), "w") as f:
        f.writelines(name + "\n" for name, _ in net.named_parameters())
    torch.jit.script(TupleNet()).save(os.path.join(out, "tuple_net.pt"))
    seq = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    x = torch.randn(2, 4)
    traced = torch.jit.trace(seq, x)
    traced.save(os.path.join(out, "traced_net.pt"))
    with torch.no_grad():
        torch.jit.script(Check(x, seq(x))).save(os.path.join(out, "traced_check.pt"))


if __name__ == "__main__":
    main()
