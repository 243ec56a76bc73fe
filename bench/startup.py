#!/usr/bin/python3
"""bench/startup: time from process start to the first optimizer step of `unitrain train`.

    /usr/bin/python3 bench/startup.py build/unitrain [runs=10]

Starts the real binary on the digits MLP (CSV read, split, normalisation, model built) with
log_every 1 step, and polls run_dir/metrics.jsonl every millisecond: the first line appears right
after step 1. Also times `unitrain --version` (process and library load only). Medians.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def first_step_seconds(binary, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    metrics = os.path.join(run_dir, "metrics.jsonl")
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "train", os.path.join(SOURCE, "examples/digits/mlp.yaml"),
                          "--run_dir", run_dir, "--train.log_every", "1 step",
                          "--train.max_length", "3 steps", "--checkpoint.enabled", "false"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = None
    while seen is None and p.poll() is None:
        if os.path.exists(metrics) and os.path.getsize(metrics) > 0:
            seen = time.perf_counter() - t0
        time.sleep(0.001)
    p.wait()
    return seen if seen is not None else time.perf_counter() - t0


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    with tempfile.TemporaryDirectory() as tmp:
        version = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
            version.append(time.perf_counter() - t0)
        first = [first_step_seconds(binary, os.path.join(tmp, "run")) for _ in range(runs)]
    print(f"unitrain --version:               median {statistics.median(version) * 1000:.0f} ms")
    print(f"process start -> first step done: median {statistics.median(first) * 1000:.0f} ms "
          f"(min {min(first) * 1000:.0f}, max {max(first) * 1000:.0f}; digits MLP, {runs} runs)")


if __name__ == "__main__":
    main()
