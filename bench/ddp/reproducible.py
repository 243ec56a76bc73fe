"""bench/ddp/reproducible.py: what distributed.reproducible costs on 2 processes.

  /usr/bin/python3 bench/ddp/reproducible.py build/unitrain [steps=150] [rounds=3]

bench/ddp's models (MLP 784-1024-1024-10, CNN conv 32/64 fc 128; synthetic 28x28, Adam, 1 thread
per process), 2 workers, a global batch of 128 per step:
  - G = 2: one micro-shard of 64 per process per step, against the default mode with batch 64;
  - G = 4: two micro-steps of 32 per process, against the default mode with batch 32 and
    train.accumulation_steps 2.
Each pair runs back to back, `rounds` times, in alternating order (the machine is shared): the
median samples/s of each (the `done:` line: the training loop's own time), their ratio, and rank
0's peak RSS.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import CONFIG, MODELS, samples_per_s  # noqa: E402


def peak_rss_mb(out):
    m = re.search(r"peak RSS (\d+) MB", out)
    return int(m.group(1)) if m else float("nan")


def main():
    binary = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-reproducible-")
    port = [29720]

    def train(name, model, shape, batch, extra):
        port[0] += 1
        run_dir = os.path.join(tmp, f"{name}-{port[0]}")
        cfg = os.path.join(tmp, f"{name}-{port[0]}.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(run_dir=run_dir, model=model, shape=shape, n=steps * 128,
                                  steps=steps).replace("batch_size: 64", f"batch_size: {batch}"))
        cmd = [binary, "launch", "--nproc-per-node", "2", "--master-port", str(port[0]),
               "--log-dir", os.path.join(tmp, "logs"), "--", "train", cfg] + extra
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            sys.exit(out.stdout + out.stderr)
        text = out.stdout + out.stderr
        return samples_per_s(text), peak_rss_mb(text)

    for name, (model, shape) in MODELS.items():
        for g, batch, accumulation in ((2, 64, 1), (4, 32, 2)):
            default, repro = [], []
            for r in range(rounds):
                pair = [("default", ["--train.accumulation_steps", str(accumulation)]),
                        ("reproducible", ["--distributed.reproducible", str(g)])]
                if r % 2:
                    pair.reverse()
                for kind, extra in pair:
                    (default if kind == "default" else repro).append(
                        train(f"{name}-{kind}", model, shape, batch, extra))
            d = statistics.median(s for s, _ in default)
            p = statistics.median(s for s, _ in repro)
            print(f"{name} G={g} (batch {batch} x {accumulation} micro-steps x 2 processes): "
                  f"default {d:8.1f} samples/s, RSS {default[-1][1]} MB | reproducible {p:8.1f} "
                  f"samples/s, RSS {repro[-1][1]} MB | reproducible/default {p / d:.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
