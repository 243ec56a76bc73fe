"""bench/allocator/soak: does RSS stay flat over a long run with the default allocator setting?

  /usr/bin/python3 bench/allocator/soak.py BUILD_DIR [minutes=20] [mode=single|ddp]

Trains the Fashion-MNIST CNN (examples/fashion_mnist/cnn.yaml) for `minutes` with everything that
allocates from other threads switched on: 2 loader threads, asynchronous checkpoints every 200
steps (the writer thread's snapshot copies), and in `ddp` mode two workers under `unitrain launch`
(gradient buckets, Gloo's threads). Samples every process's VmRSS every 5 s and prints, per
process, RSS after warm-up (the first 10% of the run), at the end, and the largest growth between
the two halves of the post-warm-up run; a flat run grows by a few MB at most.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def workers(launcher_pid):
    """The unitrain processes of the run: the process itself, or launch's children."""
    try:
        with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
            kids = [int(p) for p in f.read().split()]
    except OSError:
        kids = []
    return kids or [launcher_pid]


def main():
    build = os.path.abspath(sys.argv[1])
    minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    mode = sys.argv[3] if len(sys.argv) > 3 else "single"
    tmp = tempfile.mkdtemp(prefix="unitrain-soak-")
    train = ["train", os.path.join(SOURCE, "examples/fashion_mnist/cnn.yaml"), "--run_dir",
             os.path.join(tmp, "run"), "--train.max_length", "1000 epochs", "--data.loader.workers",
             "2", "--checkpoint.every", "200 steps", "--checkpoint.async", "true",
             "--checkpoint.keep_last", "2", "--log.progress_bar", "false"]
    cmd = [os.path.join(build, "unitrain")]
    if mode == "ddp":
        cmd += ["launch", "--nproc-per-node", "2", "--master-port", "29633", "--log-dir",
                os.path.join(tmp, "logs"), "--"] + train + ["--train.threads", "1"]
    else:
        cmd += train
    log = open(os.path.join(tmp, "out.log"), "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=SOURCE)
    samples = {}  # pid -> [(t, rss)]
    start = time.time()
    end = start + minutes * 60
    try:
        while time.time() < end and p.poll() is None:
            t = time.time() - start
            for pid in workers(p.pid):
                v = rss_mb(pid)
                if v is not None:
                    samples.setdefault(pid, []).append((t, v))
            time.sleep(5)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=300)
        log.close()
    if p.returncode not in (0, 128 + signal.SIGTERM, -signal.SIGTERM):
        sys.exit(f"the run failed ({p.returncode}); see {tmp}/out.log")
    print(f"{mode}, {minutes:g} min, samples every 5 s ({tmp}/out.log)")
    print(f"{'pid':>8} {'after warm-up MB':>17} {'end MB':>8} {'max MB':>8} {'growth 2nd half MB':>19}")
    for pid, s in samples.items():
        warm = [v for t, v in s if t >= 0.1 * minutes * 60]
        if len(warm) < 4:
            continue
        half = len(warm) // 2
        growth = max(warm[half:]) - max(warm[:half])
        print(f"{pid:>8} {warm[0]:17.0f} {warm[-1]:8.0f} {max(warm):8.0f} {growth:19.1f}")


if __name__ == "__main__":
    main()
