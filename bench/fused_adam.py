"""bench/fused_adam: Adam's fused CPU step (the default) against LibTorch's op-by-op step, whole
runs interleaved (bench/whole_runs.py).

  /usr/bin/python3 bench/fused_adam.py BUILD_DIR [rounds=3]

Cases: the MLP 784-1024-1024-10 (synthetic, batch 64, 200 steps), the Fashion-MNIST demo's CNN
(300 steps) and the Moby-Dick char transformer (60 steps; examples/moby_dick/prepare.sh first),
at 1 and 2 threads; variants: `optimizer.args.fused` true and false.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whole_runs  # noqa: E402


def main():
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    todo = whole_runs.standard_cases(build, tempfile.mkdtemp(prefix="unitrain-bench-fused-"))
    whole_runs.compare(todo, {f"fused {v}": {"args": ["--optimizer.args.fused", v]}
                              for v in ("true", "false")}, rounds)


if __name__ == "__main__":
    main()
