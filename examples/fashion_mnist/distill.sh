#!/usr/bin/env bash
# Distils the CNN of cnn.yaml into the small MLP of distill.yaml and prints three test accuracies:
# the teacher's, the student's, and the same MLP's trained on the labels alone.
#   examples/fashion_mnist/distill.sh [UNITRAIN] [RUNS] [--key value]...
# UNITRAIN: the unitrain binary (default: unitrain on the PATH); RUNS: the folder of the three runs
# (default: runs). The --key value overrides go to all three trainings, e.g. --train.max_length
# "1 epoch" for a quick look. A finished run is not trained again (it resumes as complete).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
unitrain=${1:-unitrain}
runs=${2:-runs}
shift $(($# < 2 ? $# : 2))
teacher="$runs/fashion-cnn"

"$unitrain" train "$here/cnn.yaml" --run_dir "$teacher" "$@"
"$unitrain" train "$here/distill.yaml" --run_dir "$runs/fashion-distill" \
  --objective.teacher.weights "$teacher/checkpoints/last" "$@"
# The baseline: the same student, data and steps, without the teacher.
"$unitrain" train "$here/distill.yaml" --run_dir "$runs/fashion-mlp" --objective.teacher null \
  --objective.losses "[{type: cross_entropy, prediction: logits, target: y}]" "$@"

test_acc() { sed -n 's/.*"test\/acc": \([0-9.e-]*\).*/\1/p' "$1/results/test.json"; }
echo "test accuracy, teacher (CNN):           $(test_acc "$teacher")"
echo "test accuracy, student (MLP, distilled): $(test_acc "$runs/fashion-distill")"
echo "test accuracy, MLP without the teacher:  $(test_acc "$runs/fashion-mlp")"
