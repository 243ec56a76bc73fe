"""bench/zero: ZeRO stages 1-3 and activation checkpointing against plain data parallelism.

  /usr/bin/python3 bench/zero/run.py BUILD_DIR [steps=6] [worlds=1,2,3] [stages=0,1,2,3]
  /usr/bin/python3 bench/zero/run.py BUILD_DIR prefetch [steps=6] [world=2] [rounds=3]

The Moby-Dick char transformer at d_model 512, 8 layers, 8 heads (25M parameters; run
examples/moby_dick/prepare.sh first), AdamW, batch 16 per process, 1 thread per process, for
W = 1 (one process) and W = 2, 3 (`unitrain launch`) with distributed.zero 0, 1 and 2. Per rank:
the optimizer-state bytes the run reports at its end ("optimizer state on rank R: N bytes") and
the peak RSS ("peak RSS N MB" of its `done:` line), the parameter bytes it keeps ("parameters on
rank R: N bytes of M" with zero 3; the whole model otherwise) and the model state it keeps:
parameters + gradients + Adam's two moments (gradients: the whole model's for zero 0 and 1, the
parameters it owns for zero 2 — half its Adam bytes — and its parts for zero 3); per run:
training samples/s (all ranks, the loop's own time). Zero 0 and 3 also run with
model.activation_checkpointing on ("ac"). On this 2-core machine W > 2 oversubscribes the
cores: compare rows of one W, not across W.

`prefetch`: zero 3 with distributed.prefetch on and off (the next unit's gather launched while one
computes, or each unit gathered when it runs), alternated for `rounds` pairs at one W: samples/s
of each and their ratio.
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


def one_run(build, tmp, world, zero, steps, port, ac=False, extra=()):
    run_dir = os.path.join(tmp, f"w{world}-z{zero}" + ("-ac" if ac else "") + "".join(extra))
    train = ["train", "examples/moby_dick/char_lm.yaml", "--run_dir", run_dir,
             "--checkpoint.enabled", "false", "--train.max_length", f"{steps} steps",
             "--train.threads", "1", "--log.trackers", "[]", "--data.test", "null",
             "--train.val_every", "100000 steps", "--data.loader.batch_size", "16",
             "--model.args.d_model", "512", "--model.args.layers", "8", "--model.args.heads", "8",
             "--distributed.zero", str(zero),
             "--model.activation_checkpointing.enabled", "true" if ac else "false"] + list(extra)
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
    whole = int(re.search(r"model transformer_lm: (\d+) parameters", logs[0]).group(1)) * 4
    params = []
    for r, log in enumerate(logs):
        found = re.findall(rf"parameters on rank {r}: (\d+) bytes", log)
        params.append(int(found[-1]) if found else whole)
    opt = [s if s is not None else 2 * whole for s in state]
    grads = [whole if zero < 2 else (o // 2 if zero == 2 else p) for o, p in zip(opt, params)]
    model_state = [p + g + o for p, g, o in zip(params, grads, opt)]
    return rate, rss, state, params, model_state, " ".join(cmd[1:])


def prefetch_pairs(build, steps, world, rounds):
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-prefetch-")
    print("| round | samples/s, prefetch on | samples/s, prefetch off | on / off |")
    print("|---|---|---|---|")
    port, ratios = 29651, []
    for r in range(rounds):
        rates = {}
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            extra = ("--distributed.prefetch", "true" if on else "false")
            rates[on] = one_run(build, tmp, world, 3, steps, port, extra=extra)[0]
            port += 1
        ratios.append(rates[True] / rates[False])
        print(f"| {r + 1} | {rates[True]:.1f} | {rates[False]:.1f} | {ratios[-1]:.2f} |",
              flush=True)
    print(f"\nmedian on / off: {sorted(ratios)[len(ratios) // 2]:.2f}")


def main():
    build = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "prefetch":
        args = sys.argv[3:]
        return prefetch_pairs(build, int(args[0]) if args else 6,
                              int(args[1]) if len(args) > 1 else 2,
                              int(args[2]) if len(args) > 2 else 3)
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    worlds = [int(w) for w in (sys.argv[3] if len(sys.argv) > 3 else "1,2,3").split(",")]
    stages = [int(z) for z in (sys.argv[4] if len(sys.argv) > 4 else "0,1,2,3").split(",")]
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-zero-")
    print("| W | zero | ac | parameter bytes per rank | model state MB per rank (x plain) | "
          "optimizer state bytes per rank | peak RSS MB per rank | samples/s |")
    print("|---|---|---|---|---|---|---|---|")
    port = 29601
    for world in worlds:
        plain_state = None
        for zero in ((0,) if world == 1 else stages):
            for ac in ((False, True) if zero in (0, 3) else (False,)):
                rate, rss, state, params, model_state, cmd = one_run(build, tmp, world, zero,
                                                                     steps, port, ac)
                port += 1
                if zero == 0 and not ac:
                    plain_state = model_state[0]
                ratio = f" ({max(model_state) / plain_state:.2f}x)" if plain_state else ""
                shown = "(all)" if state[0] is None else ", ".join(map(str, state))
                print(f"| {world} | {zero} | {'on' if ac else 'off'} | "
                      f"{', '.join(map(str, params))} | "
                      f"{', '.join(f'{m / 1e6:.0f}' for m in model_state)}{ratio} | {shown} | "
                      f"{', '.join(map(str, rss))} | {rate:.1f} |", flush=True)
                print(f"  ({cmd})", file=sys.stderr)


if __name__ == "__main__":
    main()
