"""Whole `unitrain` runs compared under variants (environment or command-line changes),
interleaved round by round so that machine noise hits every variant alike. Used by
bench/allocator/run.py and bench/precision/run.py.

A case is a command; a variant is {"env": {...}, "args": [...]}: the environment it adds and
the arguments appended to the command (after `--` for `launch`, so they reach the workers).
Reported per (case, variant): the median training throughput (samples/s from the `done:` line:
the loop's own time) and the median peak RSS (wait4's ru_maxrss; for `launch`, the largest
worker's "peak RSS" line).
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SYNTHETIC = """
run_dir: {run_dir}
seed: 1
model: {model}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: synthetic, args: {{n: {n}, {shape}, classes: {classes}}}}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: adam, lr: 1.0e-3}}
train: {{max_length: {steps} steps, threads: {threads}, log_every: 100000 steps}}
checkpoint: {{enabled: false}}
log: {{trackers: []}}
"""

MLP_BIG = ("{type: mlp, args: {sizes: [784, 1024, 1024, 10]}}", "features: 784", 10, 64, 200)


def synthetic(tmp, name, threads, model, shape, classes, batch, steps, world=1):
    path = os.path.join(tmp, f"{name}-{threads}.yaml")
    with open(path, "w") as f:
        f.write(SYNTHETIC.format(run_dir=os.path.join(tmp, f"run-{name}-{threads}"), model=model,
                                 shape=shape, classes=classes, batch=batch, steps=steps,
                                 n=steps * batch * world, threads=threads))
    return path


def example(unitrain, tmp, name, yaml, steps, threads):
    """An example config for `steps` steps: checkpoints, trackers, validation and test off."""
    return [unitrain, "train", os.path.join(SOURCE, yaml), "--run_dir",
            os.path.join(tmp, f"{name}-{threads}"), "--checkpoint.enabled", "false",
            "--train.max_length", f"{steps} steps", "--train.threads", str(threads),
            "--log.trackers", "[]", "--data.test", "null", "--train.val_every", "100000 steps"]


def standard_cases(build, tmp, threads=(1, 2)):
    """The MLP 784-1024-1024-10 (synthetic), the Fashion-MNIST CNN demo (300 steps) and the
    Moby-Dick char transformer (60 steps; run examples/moby_dick/prepare.sh first)."""
    unitrain = os.path.join(build, "unitrain")
    out = {}
    for t in threads:
        out[f"mlp-big t{t}"] = [unitrain, "train", synthetic(tmp, "mlp", t, *MLP_BIG)]
        out[f"cnn t{t}"] = example(unitrain, tmp, "cnn", "examples/fashion_mnist/cnn.yaml", 300, t)
        out[f"lm t{t}"] = example(unitrain, tmp, "lm", "examples/moby_dick/char_lm.yaml", 60, t)
    return out


def run_once(cmd, variant):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(variant.get("env", {}))
    cmd = list(cmd) + list(variant.get("args", []))
    with tempfile.TemporaryFile(mode="w+") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=SOURCE)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read()
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{text[-3000:]}")
    m = re.search(r"done: \d+ steps, \d+ epochs? completed, (\d+) samples in ([0-9.]+) s", text)
    if not m:
        sys.exit(f"no 'done:' line from {' '.join(cmd)}:\n{text[-3000:]}")
    # For launch, ru_maxrss of the launcher's wait is its own; the workers' peaks are in their
    # "peak RSS" line (the Trainer logs it), so take the largest reported.
    peaks = [int(v) for v in re.findall(r"peak RSS (\d+) MB", text)]
    rss_mb = max(peaks) if peaks else usage.ru_maxrss / 1024.0
    return int(m.group(1)) / float(m.group(2)), rss_mb


def compare(todo, variants, rounds):
    """Runs every case of `todo` (name -> command) under every variant of `variants` (name ->
    variant), `rounds` times interleaved (the order of the variants rotating); prints each run as it ends (stderr), then the table
    and the ratios to the first variant."""
    names = list(variants)
    results = {(c, v): [] for c in todo for v in names}
    for r in range(rounds):
        # Each round starts with another variant, so that none always runs right after the same.
        order = names[r % len(names):] + names[:r % len(names)]
        for case, cmd in todo.items():
            for v in order:
                results[(case, v)].append(run_once(cmd, variants[v]))
                rate, rss = results[(case, v)][-1]
                # Each run as it ends, so that an interrupted bench keeps its numbers.
                print(f"round {r + 1} {case} {v}: {rate:.1f} samples/s, {rss:.0f} MB",
                      file=sys.stderr, flush=True)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    print(f"{'case':18}" + "".join(f" | {v + ' samples/s':>18} {'RSS MB':>7}" for v in names))
    for case in todo:
        row = f"{case:18}"
        for v in names:
            rate = statistics.median(x[0] for x in results[(case, v)])
            rss = statistics.median(x[1] for x in results[(case, v)])
            row += f" | {rate:18.1f} {rss:7.0f}"
        print(row)
    base = names[0]
    print(f"\nthroughput relative to {base} (median of per-round ratios):")
    for case in todo:
        ratios = []
        for v in names[1:]:
            per_round = [a[0] / b[0] for a, b in zip(results[(case, v)], results[(case, base)])]
            ratios.append(f"{v} {statistics.median(per_round):.2f}x")
        print(f"  {case:18} " + "  ".join(ratios))
    return results
