"""PyTorch's own Python DDP (Gloo) on the same models, batch and threads as bench/ddp/run.py's
unitrain runs; started by torchrun. Prints one line: samples/s over all ranks."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    """unitrain's built-in cnn: conv3x3+ReLU+maxpool2 blocks of 32 and 64, fc 128, head 10, and
    (as its `dropout` argument) dropout before fc and head; bench/python_loop.py uses it too."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)])
        self.fc = nn.Linear(64 * 7 * 7, 128)
        self.head = nn.Linear(128, 10)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        for conv in self.convs:
            x = F.max_pool2d(F.relu(conv(x)), 2)
        x = F.relu(self.fc(self.drop(x.flatten(1))))
        return self.head(self.drop(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    if a.model == "mlp":
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        x = torch.randn(a.steps * a.batch, 784)
    else:
        model = Cnn()
        x = torch.randn(a.steps * a.batch, 1, 28, 28)
    y = torch.randint(0, 10, (a.steps * a.batch,))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    dist.barrier()
    t0 = time.perf_counter()
    for s in range(a.steps):
        xb, yb = x[s * a.batch:(s + 1) * a.batch], y[s * a.batch:(s + 1) * a.batch]
        opt.zero_grad()
        F.cross_entropy(ddp(xb), yb).backward()
        opt.step()
    dist.barrier()
    took = time.perf_counter() - t0
    if dist.get_rank() == 0:
        print(f"samples/s {a.steps * a.batch * dist.get_world_size() / took:.1f} in {took:.2f} s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
