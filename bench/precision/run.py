"""bench/precision: fp32 against bf16-mixed and bf16-true, whole runs, interleaved.

  /usr/bin/python3 bench/precision/run.py BUILD_DIR [rounds=3] [precisions=fp32,bf16-mixed,bf16-true] [case filter]
  /usr/bin/python3 bench/precision/run.py BUILD_DIR accuracy [precision=bf16-mixed]

Cases (bench/whole_runs.py): the MLP 784-1024-1024-10 (synthetic, Adam, batch 64, 200 steps), the
Fashion-MNIST demo's CNN (300 steps) and the Moby-Dick char transformer LM (60 steps; run
examples/moby_dick/prepare.sh first), at 1 and 2 intra-op threads, and the same transformer at
d_model 512 with 8 layers (8 steps, 2 threads): samples/s of the training loop and peak RSS per
precision. `accuracy` trains the whole Fashion-MNIST demo
(examples/fashion_mnist/cnn.yaml) in the given precision and prints its test accuracy.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import whole_runs  # noqa: E402


def accuracy(build, precision):
    run_dir = tempfile.mkdtemp(prefix="unitrain-bench-precision-demo-")
    cmd = [os.path.join(build, "unitrain"), "train", "examples/fashion_mnist/cnn.yaml", "--run_dir",
           run_dir, "--train.precision", precision]
    p = subprocess.run(cmd, cwd=whole_runs.SOURCE, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(p.stdout + p.stderr)
    with open(os.path.join(run_dir, "results", "test.json")) as f:
        test = json.load(f)
    print(" ".join(cmd))
    print(f"{precision}: {json.dumps(test)}")


def main():
    build = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "accuracy":
        return accuracy(build, sys.argv[3] if len(sys.argv) > 3 else "bf16-mixed")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["fp32", "bf16-mixed", "bf16-true"]
    only = sys.argv[4] if len(sys.argv) > 4 else ""
    tmp = tempfile.mkdtemp(prefix="unitrain-bench-precision-")
    todo = whole_runs.standard_cases(build, tmp)
    # A transformer whose weights and optimizer state outweigh LibTorch's own ~250 MB: d_model
    # 512, 8 layers (25M parameters: 100 MB in float32), where bf16-true's halving shows.
    todo["lm-512x8 t2"] = whole_runs.example(
        os.path.join(build, "unitrain"), tmp, "lm-big", "examples/moby_dick/char_lm.yaml", 8, 2) + [
        "--model.args.d_model", "512", "--model.args.layers", "8", "--model.args.heads", "8"]
    todo = {k: v for k, v in todo.items() if only in k}
    whole_runs.compare(todo, {p: {"args": ["--train.precision", p]} for p in names}, rounds)


if __name__ == "__main__":
    main()
