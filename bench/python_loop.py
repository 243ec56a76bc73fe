"""bench/python_loop: unitrain against a plain Python PyTorch training loop, run the way a Python
user runs it (python3 script.py: glibc's malloc defaults, no LD_PRELOAD).

  /usr/bin/python3 bench/python_loop.py build/unitrain [rounds=3] [threads=1,2]

Cases, each at every thread count (torch.set_num_threads / train.threads):
  mlp  MLP 784-1024-1024-10 (ReLU), Adam 1e-3, batch 64, 200 steps on synthetic data
  cnn  the Fashion-MNIST demo's CNN (examples/fashion_mnist/cnn.yaml: conv3x3 32/64 + ReLU +
       maxpool, fc 128, dropout 0.25), Adam 1e-3, batch 64, 300 steps on the real training images
       (scaled to [0, 1] as the idx dataset does), shuffled
Python: a DataLoader over a TensorDataset (shuffle, batch 64), zero_grad / forward / cross_entropy
/ backward / step; timed from the first step to the last. unitrain: `unitrain train` with the
same model, data, optimizer, batch and threads; samples/s from its `done:` line (the training
loop's own time). Rounds interleave the two; reported: medians and the median per-round ratio.
"""
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "bench", "ddp"))
from reference import Cnn  # noqa: E402  (unitrain's built-in cnn, in PyTorch)
FASHION = "/usr/share/datasets/fashion-mnist"
STEPS = {"mlp": 200, "cnn": 300}

MLP_YAML = """
run_dir: {run_dir}
seed: 1
model: {{type: mlp, args: {{sizes: [784, 1024, 1024, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: synthetic, args: {{n: {n}, features: 784, classes: 10}}}}
  loader: {{batch_size: 64, shuffle: true}}
optimizer: {{type: adam, lr: 1.0e-3}}
train: {{max_length: {steps} steps, threads: {threads}, log_every: 100000 steps}}
checkpoint: {{enabled: false}}
log: {{trackers: []}}
"""


def idx(path):
    with gzip.open(path) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return numpy.frombuffer(data, dtype=numpy.uint8, offset=4 + 4 * dims).reshape(shape)


def python_loop(case, threads):
    if threads > 0:  # 0: torch's default, as a Python user gets it
        torch.set_num_threads(threads)
    torch.manual_seed(1)
    steps = STEPS[case]
    if case == "mlp":
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        x = torch.randn(steps * 64, 784)
        y = torch.randint(0, 10, (steps * 64,))
    else:
        model = Cnn(dropout=0.25)  # the demo's cnn keeps the model's default dropout
        x = torch.from_numpy(idx(f"{FASHION}/train-images-idx3-ubyte.gz").astype(numpy.float32) / 255.0)
        x = x.unsqueeze(1)
        y = torch.from_numpy(idx(f"{FASHION}/train-labels-idx1-ubyte.gz").astype(numpy.int64))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64,
                                         shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    done = 0
    start = None
    while done < steps:
        for xb, yb in loader:
            if start is None:
                start = time.perf_counter()
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
            done += 1
            if done == steps:
                break
    return steps * 64 / (time.perf_counter() - start)


def unitrain_run(binary, case, threads, tmp):
    run_dir = os.path.join(tmp, f"{case}-{threads}")
    if case == "mlp":
        cfg = os.path.join(tmp, f"mlp-{threads}.yaml")
        with open(cfg, "w") as f:
            f.write(MLP_YAML.format(run_dir=run_dir, n=STEPS["mlp"] * 64, steps=STEPS["mlp"],
                                    threads=threads))
        cmd = [binary, "train", cfg]
    else:
        cmd = [binary, "train", os.path.join(SOURCE, "examples/fashion_mnist/cnn.yaml"), "--run_dir",
               run_dir, "--train.max_length", f"{STEPS['cnn']} steps", "--train.threads", str(threads),
               "--checkpoint.enabled", "false", "--log.trackers", "[]", "--data.test", "null",
               "--data.validation_ratio", "0", "--scheduler.type", "constant"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=SOURCE)
    out = p.stdout + p.stderr
    m = re.search(r"done: \d+ steps, \d+ epochs? completed, (\d+) samples in ([0-9.]+) s", out)
    if p.returncode != 0 or not m:
        sys.exit(f"unitrain failed ({p.returncode}): {' '.join(cmd)}\n{out[-3000:]}")
    return int(m.group(1)) / float(m.group(2))


def main():
    binary = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    thread_counts = [int(t) for t in (sys.argv[3] if len(sys.argv) > 3 else "1,2").split(",")]
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-pyloop-")
    print(f"{'case':10} {'python samples/s':>17} {'unitrain samples/s':>19} {'unitrain/python':>16}")
    for case in ("mlp", "cnn"):
        for threads in thread_counts:
            py, ut, ratios = [], [], []
            for _ in range(rounds):
                # Each Python measurement in a fresh interpreter: a Python user's process.
                env = {k: v for k, v in os.environ.items()
                       if k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX")}
                r = subprocess.run([sys.executable, __file__, "--python-only", case, str(threads)],
                                   capture_output=True, text=True, check=True, env=env)
                py.append(float(r.stdout.strip()))
                ut.append(unitrain_run(binary, case, threads, tmp))
                ratios.append(ut[-1] / py[-1])
            print(f"{case + ' t' + str(threads):10} {statistics.median(py):17.1f} "
                  f"{statistics.median(ut):19.1f} {statistics.median(ratios):15.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--python-only":
        print(f"{python_loop(sys.argv[2], int(sys.argv[3])):.3f}")
    else:
        main()
