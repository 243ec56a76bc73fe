"""bench/zero: optimizer-state sharding (distributed.zero: 1) against plain data parallelism.

  /usr/bin/python3 bench/zero/run.py BUILD_DIR [steps=6] [worlds=1,2,3]

The Moby-Dick char transformer at d_model 512, 8 layers, 8 heads (25M parameters; run
examples/moby_dick/prepare.sh first), AdamW, batch 16 per process, 1 thread per process, for
W = 1 (one process) and W = 2, 3 (`unitrain launch`) with distributed.zero 0, 1 and 2. Per rank:
the optimizer-state bytes the run reports at its end ("optimizer state on rank R: N bytes") and
the peak RSS ("peak RSS N MB" of its `done:` line); per run: training samples/s (all ranks, the
loop's own time). On this 2-core machine W = 3 oversubscribes the cores: compare zero 0 and 1 at
the same W, not across W.
"""
import os
import re
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rank_logs(run_dir, world):
    out = []
    for r in range(world):
        path = os.path.join(run_dir, "train.log" if r == 0 else f"logs/train-rank-{r}.log")
        with open(path) as f:
            out.append(f.read())
    return out


def one_run(build, tmp, world, zero, steps, port):
    run_dir = os.path.join(tmp, f"w{world}-z{zero}")
    train = ["train", "examples/moby_dick/char_lm.yaml", "--run_dir", run_dir,
             "--checkpoint.enabled", "false", "--train.max_length", f"{steps} steps",
             "--train.threads", "1", "--log.trackers", "[]", "--data.test", "null",
             "--train.val_every", "100000 steps", "--data.loader.batch_size", "16",
             "--model.args.d_model", "512", "--model.args.layers", "8", "--model.args.heads", "8",
             "--distributed.zero", str(zero)]
    binary = os.path.join(build, "unitrain")
    cmd = [binary] + train if world == 1 else [
        binary, "launch", "--nproc-per-node", str(world), "--master-port", str(port), "--"] + train
    p = subprocess.run(cmd, cwd=SOURCE, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{(p.stdout + p.stderr)[-3000:]}")
    logs = rank_logs(run_dir, world)
    m = re.search(r"done: \d+ steps, \d+ epochs? completed, (\d+) samples in ([0-9.]+) s", logs[0])
    rate = int(m.group(1)) / float(m.group(2))
    rss = [int(re.findall(r"peak RSS (\d+) MB", log)[-1]) for log in logs]
    if world == 1:  # one process reports no per-rank line: its optimizer holds everything
        state = [None]
    else:
        state = [int(re.findall(rf"optimizer state on rank {r}: (\d+) bytes", log)[-1])
                 for r, log in enumerate(logs)]
    return rate, rss, state, " ".join(cmd[1:])


def main():
    build = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    worlds = [int(w) for w in (sys.argv[3] if len(sys.argv) > 3 else "1,2,3").split(",")]
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-zero-")
    print("| W | zero | optimizer state bytes per rank | peak RSS MB per rank | samples/s |")
    print("|---|---|---|---|---|")
    port = 29601
    for world in worlds:
        for zero in ((0,) if world == 1 else (0, 1, 2)):
            rate, rss, state, cmd = one_run(build, tmp, world, zero, steps, port)
            port += 1
            shown = "(all: see W=2 zero 0)" if state[0] is None else ", ".join(map(str, state))
            print(f"| {world} | {zero} | {shown} | {', '.join(map(str, rss))} | {rate:.1f} |",
                  flush=True)
            print(f"  ({cmd})", file=sys.stderr)


if __name__ == "__main__":
    main()
