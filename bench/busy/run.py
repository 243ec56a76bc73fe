"""bench/busy: unitrain's default settings on a busy machine, against the best manual thread
count and against the same work in Python PyTorch with its defaults.

  /usr/bin/python3 bench/busy/run.py build/unitrain [rounds=3] [hogs=0,1,2]

For each number of "hogs" (CPU-bound processes running beside the training: `sh -c 'while :;
do :; done'`, as another user's job would be), each case runs as:
  auto     unitrain with its defaults (train.threads: auto)
  t1, t2   unitrain with train.threads 1 and 2 (the manual settings; "best" is the faster)
  python   the same model, data, optimizer and batch in a plain PyTorch loop, as a Python user
           runs it (python3 script.py; torch's default thread count)
  py2      the same with torch.set_num_threads(2) (torch's default where it counts 2 cores)
OMP_* and GOMP_* variables are removed from every run's environment (defaults are measured).
Cases: bench/python_loop.py's mlp (784-1024-1024-10, synthetic, 200 steps) and cnn (the
Fashion-MNIST demo's CNN, 300 steps). Throughput in samples/s of the training loop (unitrain's
`done:` line; Python from its first step to its last); rounds interleave the variants.
Reported per case: medians, auto / best manual (goal >= 1/1.3 = 0.77) and auto / python (goal
>= 2 on a busy machine).
"""
import os
import statistics
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "bench"))
import python_loop  # noqa: E402


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "GOMP_")) and k not in ("LD_PRELOAD",)}


def python_run(case, threads=0):
    env = clean_env()
    r = subprocess.run([sys.executable, os.path.join(SOURCE, "bench", "python_loop.py"),
                        "--python-only", case, str(threads)], capture_output=True, text=True,
                       check=True, env=env)
    return float(r.stdout.strip())


def main():
    binary = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    hog_counts = [int(h) for h in (sys.argv[3] if len(sys.argv) > 3 else "0,1,2").split(",")]
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-busy-")
    os.environ.clear()
    os.environ.update(clean_env())
    print(f"{'hogs':>4} {'case':5} {'auto':>8} {'t1':>8} {'t2':>8} {'python':>8} {'py2':>8} "
          f"{'auto/best':>10} {'auto/python':>12}   (samples/s, medians of {rounds})", flush=True)
    for hogs in hog_counts:
        procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
        try:
            for case in ("mlp", "cnn"):
                runs = {"auto": [], "t1": [], "t2": [], "python": [], "py2": []}
                for _ in range(rounds):
                    runs["auto"].append(python_loop.unitrain_run(binary, case, "auto", tmp))
                    runs["t1"].append(python_loop.unitrain_run(binary, case, 1, tmp))
                    runs["t2"].append(python_loop.unitrain_run(binary, case, 2, tmp))
                    runs["python"].append(python_run(case))
                    runs["py2"].append(python_run(case, 2))
                m = {k: statistics.median(v) for k, v in runs.items()}
                best = max(m["t1"], m["t2"])
                print(f"{hogs:4} {case:5} {m['auto']:8.0f} {m['t1']:8.0f} {m['t2']:8.0f} "
                      f"{m['python']:8.0f} {m['py2']:8.0f} {m['auto'] / best:10.2f} "
                      f"{m['auto'] / m['python']:12.2f}",
                      flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
