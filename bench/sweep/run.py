"""bench/sweep: ASHA against the full grid, and parallel: 2 against parallel: 1, on digits.

  /usr/bin/python3 bench/sweep/run.py build/unitrain [workdir]

The space: 16 configurations of the digits MLP (examples/digits/mlp.yaml's model and data, a
constant learning rate): optimizer.lr x optimizer.args.weight_decay x model.args.dropout, 4 x 2 x
2 grid points. Runs, one after the other:
  grid       strategy grid: each of the 16 trained 9 epochs (parallel: 1)
  asha       strategy asha over the same 16 points (grid keys: trial k is point k), rungs of 1,
             3 and 9 epochs, reduction factor 3 (parallel: 1)
  grid-par2  the grid again with parallel: 2 (each trial gets train.threads 1)
Prints the best val/acc and the optimizer steps of grid and asha (ASHA's goal: within 1% of the
grid's best with <= 40% of its steps), and the wall time of the grid with parallel 1 and 2.
"""
import json
import os
import sys
import tempfile
import time
import subprocess

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

BASE = """
name: bench-sweep
seed: 42
model: {type: mlp, args: {sizes: [64, 256, 10], activation: relu, dropout: 0.1}}
objective:
  losses: [{type: cross_entropy}]
  metrics: [{type: accuracy, name: acc}]
data:
  train: {type: csv, args: {path: %s, header: false, target: "64"}}
  validation_ratio: 0.2
  normalize: {enabled: true}
  loader: {batch_size: 64, shuffle: true}
optimizer: {type: adamw, lr: 1.0e-3, args: {weight_decay: 0.01}}
train: {max_length: 9 epochs, log_every: 1 epoch, val_every: 1 epoch}
""" % DIGITS

SWEEP = """
name: %(name)s
base: %(base)s
sweep_dir: %(folder)s
space:
  optimizer.lr: {grid: [3.0e-4, 1.0e-3, 3.0e-3, 1.0e-2]}
  optimizer.args.weight_decay: {grid: [0.0, 0.1]}
  model.args.dropout: {grid: [0.0, 0.3]}
metric: val/acc
mode: max
strategy: %(strategy)s
max_trials: 16
parallel: %(parallel)d
asha: {min_length: 1 epoch, max_length: 9 epochs, reduction_factor: 3}
"""


def sweep(binary, work, name, strategy, parallel):
    folder = os.path.join(work, name)
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write(SWEEP % dict(name=name, base=os.path.join(work, "base.yaml"), folder=folder,
                             strategy=strategy, parallel=parallel))
    start = time.monotonic()
    subprocess.run([binary, "sweep", path], check=True, capture_output=True, text=True)
    seconds = time.monotonic() - start
    with open(os.path.join(folder, "results.json")) as f:
        trials = json.load(f)["trials"]
    best = max(t["metric"] for t in trials if t["rung"] == max(u["rung"] for u in trials))
    return {"best": best, "steps": sum(t["steps"] for t in trials), "seconds": seconds,
            "trials": trials}


def main():
    binary = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="unitrain-bench-sweep-")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "base.yaml"), "w") as f:
        f.write(BASE)
    grid = sweep(binary, work, "grid", "grid", 1)
    asha = sweep(binary, work, "asha", "asha", 1)
    par2 = sweep(binary, work, "grid-par2", "grid", 2)
    promoted = [sum(1 for t in asha["trials"] if t["rung"] >= r) for r in range(3)]
    print("| sweep | best val/acc | optimizer steps | wall time (s) |")
    print("|---|---|---|---|")
    print("| grid, 16 x 9 epochs, parallel 1 | %.4f | %d | %.1f |" % (grid["best"], grid["steps"],
                                                                     grid["seconds"]))
    print("| asha, rungs 1/3/9 epochs, parallel 1 | %.4f | %d (%.0f%% of the grid's) | %.1f |" % (
        asha["best"], asha["steps"], 100.0 * asha["steps"] / grid["steps"], asha["seconds"]))
    print("| grid, parallel 2 | %.4f | %d | %.1f (%.2fx parallel 1) |" % (
        par2["best"], par2["steps"], par2["seconds"], grid["seconds"] / par2["seconds"]))
    print()
    print("asha: trials reaching rung 0/1/2: %s; best within %.2f%% of the grid's best" % (
        "/".join(map(str, promoted)), 100.0 * (grid["best"] - asha["best"]) / grid["best"]))


if __name__ == "__main__":
    main()
