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
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import whole_runs  # noqa: E402

LIB = "/usr/lib/x86_64-linux-gnu"
VARIANTS = {
    "system": {"UNITRAIN_MALLOC": "system"},
    "tuned": {},
    "tunables": {"UNITRAIN_MALLOC": "system", "GLIBC_TUNABLES":
                 "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"},
    "jemalloc": {"UNITRAIN_MALLOC": "system", "LD_PRELOAD": f"{LIB}/libjemalloc.so.2"},
    "tcmalloc": {"UNITRAIN_MALLOC": "system", "LD_PRELOAD": f"{LIB}/libtcmalloc_minimal.so.4"},
}


def cases(build, tmp):
    out = whole_runs.standard_cases(build, tmp)
    ddp_cfg = whole_runs.synthetic(tmp, "mlp-ddp", 1, *whole_runs.MLP_BIG, world=2)
    out["ddp mlp-big 2x1"] = [os.path.join(build, "unitrain"), "launch", "--nproc-per-node", "2",
                              "--master-port", "29613", "--log-dir", os.path.join(tmp, "logs"),
                              "--", "train", ddp_cfg]
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    names = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] != "all" else list(VARIANTS)
    only = sys.argv[4] if len(sys.argv) > 4 else ""
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-alloc-")
    todo = {k: v for k, v in cases(build, tmp).items() if only in k or only == "all"}
    whole_runs.compare(todo, {v: {"env": VARIANTS[v]} for v in names}, rounds)


if __name__ == "__main__":
    main()
