#!/usr/bin/env python3
"""PyTorch equivalents of the built-in models; prints the parameter counts the C++ tests expect.

Run: /usr/bin/python3 tests/models/param_counts.py   (torch 1.13.1). Output, checked into the
tests (mlp_test.cpp, cnn_test.cpp, transformer_lm_test.cpp):
  mlp [64, 256, 10]: 19210
  mlp [10, 7, 5, 3]: 135
  cnn default: 421642
  cnn in 3, image [12, 10], channels [8, 16], batch_norm, hidden 20, classes 5: 3461
  transformer_lm vocab 50, d_model 32, layers 2, heads 4, seq_len 16, ff_mult 4: 29234
"""
import torch
from torch import nn


def count(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def mlp(sizes):
    return nn.Sequential(*[nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])


def cnn(in_channels=1, image_size=(28, 28), channels=(32, 64), batch_norm=False, hidden=128,
        classes=10):
    layers, c, (h, w) = [], in_channels, image_size
    for out in channels:
        layers.append(nn.Conv2d(c, out, 3, padding=1, bias=not batch_norm))
        if batch_norm:
            layers.append(nn.BatchNorm2d(out))
        layers += [nn.ReLU(), nn.MaxPool2d(2)]
        c, h, w = out, h // 2, w // 2
    layers += [nn.Flatten(), nn.Linear(c * h * w, hidden), nn.ReLU(), nn.Linear(hidden, classes)]
    return nn.Sequential(*layers)


class Block(nn.Module):
    def __init__(self, d, ff_mult):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.proj = nn.Linear(d, ff_mult * d), nn.Linear(ff_mult * d, d)


def transformer_lm(vocab, d_model, layers, seq_len, ff_mult):
    return nn.ModuleList([nn.Embedding(vocab, d_model), nn.Embedding(seq_len, d_model)] +
                         [Block(d_model, ff_mult) for _ in range(layers)] +
                         [nn.LayerNorm(d_model), nn.Linear(d_model, vocab)])


print("mlp [64, 256, 10]:", count(mlp([64, 256, 10])))
print("mlp [10, 7, 5, 3]:", count(mlp([10, 7, 5, 3])))
print("cnn default:", count(cnn()))
print("cnn in 3, image [12, 10], channels [8, 16], batch_norm, hidden 20, classes 5:",
      count(cnn(3, (12, 10), (8, 16), True, 20, 5)))
print("transformer_lm vocab 50, d_model 32, layers 2, heads 4, seq_len 16, ff_mult 4:",
      count(transformer_lm(50, 32, 2, 16, 4)))
