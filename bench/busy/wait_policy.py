"""bench/busy/wait_policy: what OpenMP's wait policy and the thread count do to a run, quiet and
beside CPU-bound programs — the measurement behind `train.threads: auto` (docs/performance.md,
"A busy machine").

  /usr/bin/python3 bench/busy/wait_policy.py build/unitrain HOGS ROUNDS CONFIG LENGTH [SPIN...]

Runs `unitrain train CONFIG --train.max_length LENGTH` (checkpoints, trackers, test and
validation off) with train.threads 1 and 2, and with 2 threads under each SPIN: 0 means
OMP_WAIT_POLICY=PASSIVE, a number GOMP_SPINCOUNT=<number> (libgomp's default spins ~300000
times before sleeping). HOGS processes `while :; do :; done` run beside it. Whole-command wall
time, median of ROUNDS, and its ratio to 1 thread. E.g.
  wait_policy.py build/unitrain 1 3 examples/digits/mlp.yaml "100 epochs" 0 1000 10000
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    binary, hogs, rounds, config, length = (os.path.abspath(sys.argv[1]), int(sys.argv[2]),
                                            int(sys.argv[3]), sys.argv[4], sys.argv[5])
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-wait-")

    def command(threads):
        return [binary, "train", os.path.join(SOURCE, config), "--run_dir",
                os.path.join(tmp, f"run-{threads}"), "--checkpoint.enabled", "false",
                "--log.trackers", "[]", "--train.threads", str(threads), "--checkpoint.resume",
                "none", "--train.max_length", length, "--data.test", "null",
                "--train.val_every", "100000 steps"]

    variants = {"t1": (1, {}), "t2": (2, {})}
    for spin in sys.argv[6:]:
        variants[f"t2 spin {spin}"] = (2, {"OMP_WAIT_POLICY": "PASSIVE"} if spin == "0"
                                       else {"GOMP_SPINCOUNT": spin})
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
    times = {k: [] for k in variants}
    try:
        for _ in range(rounds):
            for name, (threads, extra) in variants.items():
                env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
                env.update(extra)
                start = time.time()
                subprocess.run(command(threads), env=env, capture_output=True, check=True)
                times[name].append(time.time() - start)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    one = statistics.median(times["t1"])
    for name, t in times.items():
        m = statistics.median(t)
        print(f"{config} hogs {hogs} {name:14} {m:7.2f} s  {m / one:5.2f}x t1", flush=True)


if __name__ == "__main__":
    main()
