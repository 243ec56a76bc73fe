"""bench/zero/phase_memory.py: each rank's peak anonymous memory per phase of a run.

  /usr/bin/python3 bench/zero/phase_memory.py RUN_DIR/train.log -- unitrain launch ... train ...

Runs the command; every 50 ms reads RssAnon of every `unitrain` process below it (its RANK from
its environment); then splits the samples at the first train.log line of each phase written
during the run ('model ', 'resuming on', 'data parallel', 'resumed from', 'training:', the first
'step ' line) and prints each rank's peak between them, in MB. RssAnon is the memory a memory
cgroup charges for a worker's own data: mapped checkpoint files and libraries are not in it.
"""
import datetime
import os
import re
import subprocess
import sys
import time

PHASES = ["model ", "data parallel", "resuming on", "resumed from", "training:", "step "]
LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\] \[\w+\] (.*)")


def children():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(parent, []).append(int(d))
    return kids


def descendants(pid):
    kids, out, todo = children(), [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def rank_and_anon(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() != "unitrain":
                return None
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        with open(f"/proc/{pid}/status") as f:
            anon = next(int(l.split()[1]) // 1024 for l in f if l.startswith("RssAnon:"))
        return int(env.get(b"RANK", b"0")), anon
    except (OSError, StopIteration, ValueError):
        return None


def phase_marks(log_path, since):
    marks = {}
    with open(log_path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            if t < since - 1:
                continue  # an earlier run's line
            for key in PHASES:
                if m.group(2).startswith(key) and key not in marks:
                    marks[key] = t
    return sorted(marks.items(), key=lambda kv: kv[1])


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    log_path, command = sys.argv[1], sys.argv[3:]
    start = time.time()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    samples = []  # (time, rank, MB)
    while process.poll() is None:
        now = time.time()
        for pid in descendants(process.pid):
            found = rank_and_anon(pid)
            if found:
                samples.append((now, *found))
        time.sleep(0.05)
    print("exit", process.returncode)
    edges = [("start", 0)] + phase_marks(log_path, start) + [("end", float("inf"))]
    print("phases at", ", ".join(f"'{k.strip()}' {t - start:.1f} s" for k, t in edges[1:-1]))
    for rank in sorted({r for _, r, _ in samples}):
        peaks = []
        for (k0, t0), (k1, t1) in zip(edges, edges[1:]):
            v = [mb for t, r, mb in samples if r == rank and t0 <= t < t1]
            if v:
                peaks.append(f"{k0.strip()} -> {k1.strip()}: {max(v)}")
        print(f"rank {rank}:", "; ".join(peaks))
    sys.exit(process.returncode)


if __name__ == "__main__":
    main()
