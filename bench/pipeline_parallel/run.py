"""bench/pipeline_parallel: a transformer_lm cut into 2 pipeline stages against one process, data
parallelism and tensor parallelism, on this machine (CPU, Gloo), and each stage's measured idle
share against 1F1B's bubble (P - 1) / (M + P - 1).

  /usr/bin/python3 bench/pipeline_parallel/run.py build/unitrain [steps=30] [d_model=256]
  /usr/bin/python3 bench/pipeline_parallel/run.py build/unitrain STEPS D_MODEL reproducible

The second form adds distributed.reproducible: 4 (the 4 micro-batches its micro-shards) to one
process and to PP 2 with M = 4: what summing each stage's micro-shards in shard order costs.

The same model (d_model D, 4 layers, 8 heads, vocab 4096, context 128), data, AdamW and 1 thread a
process, 8 sequences of 128 tokens per optimizer step:
  - one process, the 8 sequences as M micro-batches (train.accumulation_steps: M);
  - PP 2 (`launch --nproc-per-node 2`, distributed.pipeline_parallel: 2) with M = 2, 4 and 8:
    each stage computes its units (the cut balanced by cost) for every micro-batch;
  - DP 2 (batch 4 a process) and TP 2 (batch 8), for the comparison.
Time per step comes from the `done:` line (the loop's own time, first steps included); each
stage's wait for the other (the bubble, the imbalance of the cut and the messages' latency) from
its `pipeline stage` line, against the forwards' and backwards' time. The bytes a pipeline sends
per step: each micro-batch's activation [tokens, D] forward and its gradient back, at each of
the P - 1 cuts.
"""
import glob
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
train: {{max_length: {steps} steps, threads: 1, log_every: 1000 steps, accumulation_steps: {m}}}
checkpoint: {{enabled: false}}
log: {{trackers: []}}
"""

WAIT = re.compile(r"pipeline stage (\d+) of \d+ \(units [^)]*\): waited ([0-9.]+) s for the other "
                  r"stages in ([0-9.]+) s")


def seconds(out):
    m = re.search(r"done: (\d+) steps, .* in ([0-9.]+) s", out)
    if not m:
        sys.exit("no 'done:' line in:\n" + out)
    return float(m.group(2)) / int(m.group(1))


def idle_shares(run_dir):
    """Each stage's waited / busy seconds, from every rank's log."""
    shares = {}
    logs = [os.path.join(run_dir, "train.log")] + glob.glob(os.path.join(run_dir, "logs",
                                                                          "train-rank-*.log"))
    for log in logs:
        with open(log) as f:
            for m in WAIT.finditer(f.read()):
                shares[int(m.group(1))] = float(m.group(2)) / float(m.group(3))
    return shares


def main():
    binary = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    d = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-pp-")
    data = os.path.join(tmp, "tokens.bin")
    import random
    rng = random.Random(0)
    with open(data, "wb") as f:
        f.write(bytes(b for _ in range(200000) for b in rng.randrange(4096).to_bytes(2, "little")))
    pp = ["--distributed.pipeline_parallel", "2"]
    # name: (workers, batch a process, micro-batches a step, extra words)
    plans = {"one process, M 4": (1, 2, 4, []),
             "PP 2, M 2": (2, 4, 2, pp), "PP 2, M 4": (2, 2, 4, pp), "PP 2, M 8": (2, 1, 8, pp),
             "DP 2": (2, 4, 1, []), "TP 2": (2, 8, 1, ["--distributed.tensor_parallel", "2"])}
    if len(sys.argv) > 4 and sys.argv[4] == "reproducible":
        rep = ["--distributed.reproducible", "4"]  # (accumulation 4: its G / W)
        plans = {"one process, M 4": (1, 2, 4, []), "one, reproducible": (1, 2, 4, rep),
                 "PP 2, M 4": (2, 2, 4, pp), "PP 2, reproducible": (2, 2, 4, pp + rep)}
    times, shares = {}, {}
    for name, (workers, batch, m, extra) in plans.items():
        run_dir = os.path.join(tmp, re.sub(r"[^A-Za-z0-9]+", "-", name))
        cfg = run_dir + ".yaml"
        with open(cfg, "w") as f:
            f.write(CONFIG.format(run_dir=run_dir, d=d, data=data, batch=batch, steps=steps, m=m))
        cmd = [binary, "train", cfg] + extra
        if workers > 1:
            cmd = [binary, "launch", "--nproc-per-node", str(workers), "--"] + cmd[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            sys.exit(out.stdout + out.stderr)
        times[name] = seconds(out.stdout + out.stderr)
        shares[name] = idle_shares(run_dir)
    one = times["one process, M 4"]
    print(f"transformer_lm d_model {d}, 4 layers, vocab 4096, 8 x 128 tokens a step, {steps} steps")
    for name, t in times.items():
        line = f"  {name:18s} {1000 * t:8.1f} ms/step  ({one / t:.2f}x one process)"
        if shares[name]:
            m = plans[name][2]
            idle = ", ".join(f"stage {s} {100 * v:.0f}%" for s, v in sorted(shares[name].items()))
            line += f"; idle {idle} (1F1B's bubble {100 / (m + 1):.0f}%)"
        print(line)
    tokens = 8 * 128
    print(f"  bytes a pipeline sends per step: {2 * tokens * d * 4 / 1e6:.1f} MB over its one cut "
          f"(each micro-batch's activation forward, its gradient back)")


if __name__ == "__main__":
    main()
