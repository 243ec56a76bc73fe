"""bench/ddp: data-parallel training on this 2-core machine.

  /usr/bin/python3 bench/ddp/run.py build/unitrain [steps=200]

For the MLP 784-1024-1024-10 and the CNN (conv 32/64, fc 128) on synthetic 28x28 data, batch 64
per process, Adam, 1 thread per process:
  - unitrain 1 worker (`train`) against 2 workers (`launch --nproc-per-node 2`): samples/s
    (from the `done:` line: the training loop's own time) and scaling efficiency
    (2-worker samples/s / (2 x 1-worker samples/s));
  - PyTorch's Python DDP with Gloo (bench/ddp/reference.py under torchrun), same model, batch,
    threads and steps: samples/s, and unitrain's 2-worker throughput as a ratio of it.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "mlp": ("{type: mlp, args: {sizes: [784, 1024, 1024, 10]}}", "features: 784"),
    "cnn": ("{type: cnn, args: {channels: [32, 64], hidden: 128, classes: 10, dropout: 0.0}}",
            "shape: [1, 28, 28]"),
}
CONFIG = """
run_dir: {run_dir}
seed: 1
model: {model}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: synthetic, args: {{n: {n}, {shape}, classes: 10}}}}
  loader: {{batch_size: 64, workers: 0, shuffle: true}}
optimizer: {{type: adam, lr: 1.0e-3}}
train: {{max_length: {steps} steps, threads: 1, log_every: 1000 steps}}
checkpoint: {{enabled: false}}
log: {{trackers: []}}
"""


def samples_per_s(out):
    m = re.search(r"done: (\d+) steps, \d+ epochs? completed, (\d+) samples in ([0-9.]+) s", out)
    if not m:
        sys.exit("no 'done:' line in:\n" + out)
    return int(m.group(2)) / float(m.group(3))


def main():
    binary = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-ddp-")
    for name, (model, shape) in MODELS.items():
        results = {}
        for workers in (1, 2):
            cfg = os.path.join(tmp, f"{name}-{workers}.yaml")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(run_dir=os.path.join(tmp, f"{name}-{workers}"), model=model,
                                      shape=shape, n=steps * 64 * workers, steps=steps))
            cmd = [binary, "train", cfg] if workers == 1 else [
                binary, "launch", "--nproc-per-node", "2", "--master-port", "29591", "--log-dir",
                os.path.join(tmp, "logs"), "--", "train", cfg]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            if out.returncode != 0:
                sys.exit(out.stdout + out.stderr)
            results[workers] = samples_per_s(out.stdout + out.stderr)
        ref = subprocess.run(["torchrun", "--nproc_per_node", "2", "--master_port", "29592",
                              "--redirects", "1", "--tee", "1", os.path.join(HERE, "reference.py"),
                              "--model", name, "--steps", str(steps)],
                             capture_output=True, text=True, timeout=3600)
        m = re.search(r"samples/s ([0-9.]+)", ref.stdout + ref.stderr)
        if ref.returncode != 0 or not m:
            sys.exit(ref.stdout + ref.stderr)
        python_ddp = float(m.group(1))
        eff = results[2] / (2 * results[1])
        print(f"{name}: unitrain 1 worker {results[1]:8.1f} samples/s | 2 workers {results[2]:8.1f} "
              f"samples/s | scaling efficiency {eff:.2f} | Python DDP (Gloo) 2 workers "
              f"{python_ddp:8.1f} samples/s | unitrain/Python {results[2] / python_ddp:.2f}x")


if __name__ == "__main__":
    main()
