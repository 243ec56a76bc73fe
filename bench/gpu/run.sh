#!/bin/bash
# The GPU measurement in one call: unitrain against a plain PyTorch loop and PyTorch Lightning
# (eager and torch.compile) on three workloads (bench/gpu/bench.py says which and how), with the
# GPU tests, in at most 9 minutes, build included.
#   bench/gpu/run.sh gpu   # on a lent GPU machine (pip wheel's LibTorch, no package registry),
#                          # from the checkout's root with .gpu/ beside it (tests/gpu/wheel_torch.sh
#                          # prepare made it here): build, benchmarks, GPU tests
#   bench/gpu/run.sh cpu   # here: the same benchmarks at small sizes on the CPU against Debian's
#                          # PyTorch, with build/unitrain (scripts/test builds it): checks the harness
# Results in $OUT (or .gpu/bench): table.md, results.json, log.txt; the GPU tests' logs beside them.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
export OUT=${OUT:-$root/.gpu/bench}
mkdir -p "$OUT"
start=$(date +%s)
left() {  # seconds left of a budget of $1 (at least 60)
  local n=$((${1} - ($(date +%s) - start)))
  echo $((n < 60 ? 60 : n))
}

case "${1:-}" in
  gpu)
    tests/gpu/wheel_torch.sh build || exit 1
    # The table first (what is left of 7 minutes), then the GPU tests (about 2 minutes).
    timeout "$(left 420)" python3 bench/gpu/bench.py --unitrain build-gpu/unitrain --device cuda \
      --out "$OUT" --timeout 150 2>&1 | tee -a "$OUT/log.txt"
    bench=${PIPESTATUS[0]}
    tests/gpu/wheel_torch.sh tests
    tests=$?
    echo "== $(($(date +%s) - start)) s: done (tests exit $tests, bench exit $bench)"
    [ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
    ;;
  cpu)
    [ -x build/unitrain ] || { echo "build/unitrain is missing: run scripts/test (or scripts/demo) first" >&2; exit 1; }
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} /usr/bin/python3 bench/gpu/bench.py \
      --unitrain build/unitrain --device cpu --out "$OUT" --timeout 300 2>&1 | tee "$OUT/log.txt"
    exit "${PIPESTATUS[0]}"
    ;;
  *)
    echo "usage: bench/gpu/run.sh gpu | cpu" >&2
    exit 2
    ;;
esac
