#!/usr/bin/python3
"""bench/data/big_data: start-up time (to the first optimizer step) and peak RSS of `unitrain
train` against the size of its token file: 1 MB, 1 GB, and 30 GB sparse (`truncate`: more than
this machine's memory, no disk).

    /usr/bin/python3 bench/data/big_data.py build/unitrain [runs=3]

The 1 MB and 1 GB files are real uint16 ids below 256 (seeded); the 30 GB one starts with 50 M
of them, then a hole. The run: a tiny
transformer_lm (vocab 256, d_model 32, 1 layer, seq_len 64), `type: tokens` with vocab_size,
shuffle, a validation split (validation_ratio 1e-8: a few windows), 5 steps of batch 8, log_every
1 step, checkpoints off, 1 thread. The first step is seen when run_dir/metrics.jsonl gets its
first line (polled every millisecond); the peak RSS is the child's ru_maxrss (os.wait4). Medians
of `runs`, the sizes interleaved.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """
seed: 3
model:
  type: transformer_lm
  args: {{vocab: 256, d_model: 32, layers: 1, heads: 2, seq_len: 64, dropout: 0.0}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, dtype: uint16, seq_len: 64, vocab_size: 256}}}}
  validation_ratio: 0.00000001
  loader: {{batch_size: 8, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003}}
train: {{max_length: 5 steps, log_every: 1 step, val_every: 5 steps, threads: 1}}
checkpoint: {{enabled: false}}
"""

SIZES = [("1 MB", 1 << 20, False), ("1 GB", 1 << 30, False), ("30 GB sparse", 30 << 30, True)]


# Run in a child process: this one stays small (no numpy), because a child's ru_maxrss counts
# the image it was forked from.
WRITE_TOKENS = """
import os, sys
import numpy as np
path, size, ids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
with open(path, "wb") as f:
    for start in range(0, ids, 10_000_000):
        rng.integers(0, 256, size=min(10_000_000, ids - start)).astype(np.uint16).tofile(f)
os.truncate(path, size)
"""


def token_file(path, size, sparse):
    """`size` bytes of ids; a sparse one has 50 M ids and then a hole."""
    ids = 50_000_000 if sparse else size // 2
    subprocess.run(["/usr/bin/python3", "-c", WRITE_TOKENS, path, str(size), str(ids)], check=True)


def one_run(binary, config, run_dir):
    """(seconds to the first step, peak RSS in MB, wall seconds) of one `unitrain train`."""
    shutil.rmtree(run_dir, ignore_errors=True)
    metrics = os.path.join(run_dir, "metrics.jsonl")
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "train", config, "--run_dir", run_dir],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    while first is None and p.poll() is None:
        if os.path.exists(metrics) and os.path.getsize(metrics) > 0:
            first = time.perf_counter() - t0
        time.sleep(0.001)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"unitrain train {config} failed")
    return first if first is not None else wall, usage.ru_maxrss / 1024, wall


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory(prefix="unitrain-bigdata-") as tmp:
        configs = []
        for name, size, sparse in SIZES:
            stem = name.replace(" ", "_")  # 1_MB, 1_GB, 30_GB_sparse
            data = os.path.join(tmp, stem + ".bin")
            token_file(data, size, sparse)
            config = os.path.join(tmp, stem + ".yaml")
            with open(config, "w") as f:
                f.write(CONFIG.format(data=data))
            configs.append(config)
        results = {name: [] for name, _, _ in SIZES}
        for _ in range(runs):
            for (name, _, _), config in zip(SIZES, configs):
                results[name].append(one_run(binary, config, os.path.join(tmp, "run")))
    print("| token file | first step (s) | peak RSS (MB) | whole run (s) |")
    print("|---|---|---|---|")
    for name, _, _ in SIZES:
        r = results[name]
        print(f"| {name} | {statistics.median(x[0] for x in r):.2f} | "
              f"{statistics.median(x[1] for x in r):.0f} | "
              f"{statistics.median(x[2] for x in r):.2f} |")


if __name__ == "__main__":
    main()
