"""bench/allocator: how the process keeps (or returns) freed memory, measured on whole runs.

  /usr/bin/python3 bench/allocator/run.py BUILD_DIR [rounds=3] [variants=all] [cases=all]

Every case runs as a separate process under each allocator variant, interleaved round by round
(so machine noise hits all variants alike); reported: the median training throughput (samples/s
from the `done:` line: the training loop's own time) and the median peak RSS of the process
(wait4's ru_maxrss; for `launch`, the largest worker).

Variants (comma-separated names for the third argument):
  system    glibc malloc with its defaults (UNITRAIN_MALLOC=system turns unitrain's own setting off)
  tuned     glibc told at start-up to keep freed memory: unitrain's default (`mallopt`, see
            src/unitrain/core/memory.h)
  tunables  the same through the environment (GLIBC_TUNABLES), what a user could do by hand
  jemalloc  Debian's libjemalloc2 through LD_PRELOAD
  tcmalloc  Debian's libtcmalloc-minimal4 through LD_PRELOAD
Cases: mlp-big (MLP 784-1024-1024-10, Adam, batch 64, synthetic), cnn (the Fashion-MNIST demo's
CNN on the real data, 300 steps, checkpoints off), lm (examples/moby_dick/char_lm.yaml, 60 steps;
run examples/moby_dick/prepare.sh first), each at 1 and 2 intra-op threads; ddp (mlp-big, 2
workers of 1 thread via launch).
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = "/usr/lib/x86_64-linux-gnu"
VARIANTS = {
    "system": {"UNITRAIN_MALLOC": "system"},
    "tuned": {},
    "tunables": {"UNITRAIN_MALLOC": "system", "GLIBC_TUNABLES":
                 "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"},
    "jemalloc": {"UNITRAIN_MALLOC": "system", "LD_PRELOAD": f"{LIB}/libjemalloc.so.2"},
    "tcmalloc": {"UNITRAIN_MALLOC": "system", "LD_PRELOAD": f"{LIB}/libtcmalloc_minimal.so.4"},
}

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


def synthetic(tmp, name, threads, model, shape, classes, batch, steps, world=1):
    path = os.path.join(tmp, f"{name}-{threads}.yaml")
    with open(path, "w") as f:
        f.write(SYNTHETIC.format(run_dir=os.path.join(tmp, f"run-{name}-{threads}"), model=model,
                                 shape=shape, classes=classes, batch=batch, steps=steps,
                                 n=steps * batch * world, threads=threads))
    return path


def cases(build, tmp):
    unitrain = os.path.join(build, "unitrain")
    mlp = ("{type: mlp, args: {sizes: [784, 1024, 1024, 10]}}", "features: 784", 10, 64, 200)
    out = {}
    for threads in (1, 2):
        out[f"mlp-big t{threads}"] = [unitrain, "train", synthetic(tmp, "mlp", threads, *mlp)]
        out[f"cnn t{threads}"] = [
            unitrain, "train", os.path.join(SOURCE, "examples/fashion_mnist/cnn.yaml"),
            "--run_dir", os.path.join(tmp, f"cnn-{threads}"), "--checkpoint.enabled", "false",
            "--train.max_length", "300 steps", "--train.threads", str(threads),
            "--log.trackers", "[]", "--data.test", "null", "--train.val_every", "100000 steps"]
        out[f"lm t{threads}"] = [
            unitrain, "train", os.path.join(SOURCE, "examples/moby_dick/char_lm.yaml"),
            "--run_dir", os.path.join(tmp, f"lm-{threads}"), "--checkpoint.enabled", "false",
            "--train.max_length", "60 steps", "--train.threads", str(threads),
            "--log.trackers", "[]", "--train.val_every", "100000 steps"]
    ddp_cfg = synthetic(tmp, "mlp-ddp", 1, *mlp, world=2)
    out["ddp mlp-big 2x1"] = [unitrain, "launch", "--nproc-per-node", "2", "--master-port", "29613",
                              "--log-dir", os.path.join(tmp, "logs"), "--", "train", ddp_cfg]
    return out


def run_once(cmd, env_extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
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


def main():
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    names = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] != "all" else list(VARIANTS)
    only = sys.argv[4] if len(sys.argv) > 4 else ""
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-alloc-")
    todo = {k: v for k, v in cases(build, tmp).items() if only in k or only == "all"}
    results = {(c, v): [] for c in todo for v in names}
    for r in range(rounds):
        for case, cmd in todo.items():
            for v in names:
                results[(case, v)].append(run_once(cmd, VARIANTS[v]))
                rate, rss = results[(case, v)][-1]
                # Each run as it ends (stderr), so that an interrupted bench keeps its numbers.
                print(f"round {r + 1} {case} {v}: {rate:.1f} samples/s, {rss:.0f} MB",
                      file=sys.stderr, flush=True)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    head = f"{'case':18}" + "".join(f" | {v + ' samples/s':>18} {'RSS MB':>7}" for v in names)
    print(head)
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


if __name__ == "__main__":
    main()
