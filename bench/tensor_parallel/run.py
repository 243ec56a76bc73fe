"""bench/tensor_parallel: a transformer_lm cut over 2 processes against one process and against
data parallelism, on this machine (CPU, Gloo).

  /usr/bin/python3 bench/tensor_parallel/run.py build/unitrain [steps=40] [d_model=256]
  /usr/bin/python3 bench/tensor_parallel/run.py build/unitrain STEPS D_MODEL reproducible

The second form measures what bitwise reproducibility over plans costs: distributed.reproducible
(1 micro-shard of the 8 sequences) on one process and under TP 2, without chunks (one process
only: TP refuses it) and with distributed.reproducible_chunks 2 and 8.

The same model (d_model D, 4 layers, 8 heads, vocab 4096, context 128), data, AdamW and 1 thread a
process, batch 8 sequences of 128 tokens per step:
  - one process (`train`);
  - TP 2 (`launch --nproc-per-node 2`, distributed.tensor_parallel: 2): each process computes half
    of every layer for the whole batch;
  - DP 2 (`launch --nproc-per-node 2`, batch 4 a process): each process computes the whole model
    for half the batch.
Time per step comes from the `done:` line (the loop's own time, first steps included). The
bytes each plan sends per step are computed from the model's sizes: TP's all-reduces of the
activations (forward: one a block's attention, one its feed-forward, one the embedding, the
loss's three small ones; backward: the column-parallel layers' input gradients and the
embedding's), DP's all-reduce of every gradient.
"""
import os
import re
import subprocess
import sys
import tempfile

CONFIG = """
run_dir: {run_dir}
seed: 1
model:
  type: transformer_lm
  args: {{vocab: 4096, d_model: {d}, layers: 4, heads: 8, seq_len: 128, dropout: 0.0}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 128}}}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 1.0e-3}}
train: {{max_length: {steps} steps, threads: 1, log_every: 1000 steps}}
checkpoint: {{enabled: false}}
log: {{trackers: []}}
"""


def seconds(out):
    m = re.search(r"done: (\d+) steps, .* in ([0-9.]+) s", out)
    if not m:
        sys.exit("no 'done:' line in:\n" + out)
    return float(m.group(2)) / int(m.group(1))


def main():
    binary = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    d = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-tp-")
    data = os.path.join(tmp, "tokens.bin")
    import random
    rng = random.Random(0)
    with open(data, "wb") as f:
        f.write(bytes(b for _ in range(200000) for b in rng.randrange(4096).to_bytes(2, "little")))
    plans = {"one process": (1, 8, []), "TP 2": (2, 8, ["--distributed.tensor_parallel", "2"]),
             "DP 2": (2, 4, [])}
    reproducible = len(sys.argv) > 4 and sys.argv[4] == "reproducible"
    if reproducible:
        rep = ["--distributed.reproducible", "1"]
        tp = ["--distributed.tensor_parallel", "2"]
        plans = {"one process": (1, 8, []), "TP 2": (2, 8, tp),
                 "one, reproducible": (1, 8, rep)}
        for c in ("2", "8"):
            chunks = rep + ["--distributed.reproducible_chunks", c]
            plans[f"one, C {c}"] = (1, 8, chunks)
            plans[f"TP 2, C {c}"] = (2, 8, chunks + tp)
    times = {}
    for name, (workers, batch, extra) in plans.items():
        run_dir = os.path.join(tmp, name.replace(" ", "-"))
        cfg = run_dir + ".yaml"
        with open(cfg, "w") as f:
            f.write(CONFIG.format(run_dir=run_dir, d=d, data=data, batch=batch, steps=steps))
        cmd = [binary, "train", cfg] + extra
        if workers > 1:
            cmd = [binary, "launch", "--nproc-per-node", str(workers), "--"] + cmd[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            sys.exit(out.stdout + out.stderr)
        times[name] = seconds(out.stdout + out.stderr)
    tokens, layers, vocab = 8 * 128, 4, 4096
    params = vocab * d + 128 * d + layers * (12 * d * d + 13 * d) + 2 * d + vocab * d + vocab
    act = tokens * d * 4  # one float32 activation [tokens, d]
    # TP, per process: forward 2 a block + the embedding's, backward 2 a block (fc's and qkv's
    # input gradients) + the head's input gradient; the loss's [tokens, 2] sums and row max.
    tp_bytes = (2 * layers + 1) * act + (2 * layers + 1) * act + tokens * 3 * 4
    dp_bytes = params * 4
    one = times["one process"]
    print(f"transformer_lm d_model {d}, 4 layers, vocab 4096, 8 x 128 tokens a step, {steps} steps")
    if reproducible:
        for name, t in times.items():
            base = times["TP 2" if name.startswith("TP") else "one process"]
            print(f"  {name:18s} {1000 * t:8.1f} ms/step  ({t / base:.2f}x its plan without)")
        return
    for name, t in times.items():
        print(f"  {name:12s} {1000 * t:8.1f} ms/step  ({one / t:.2f}x one process)")
    print(f"  bytes all-reduced per step and process: TP 2 {tp_bytes / 1e6:.1f} MB "
          f"(activations), DP 2 {dp_bytes / 1e6:.1f} MB (gradients)")


if __name__ == "__main__":
    main()
