#!/bin/bash
# Models bigger than one process: 4 workers, each given at most 1000 MB of memory (a memory
# cgroup each: examples/zero3_memory/limited.sh; run as root), train examples/zero3_memory/lm.yaml
# — 56.9M parameters, whose weights, gradients and Adam moments (910 MB) no worker can hold.
# Plain data parallelism (distributed.zero: 0) is killed by the kernel's OOM killer;
# distributed.zero: 3 keeps a quarter of that state on each worker and trains.
#   examples/zero3_memory/run.sh            (from the repository root, after building)
# UNITRAIN_BIN (default build/unitrain), UNITRAIN_WORKER_MEMORY (default 1000M) and
# UNITRAIN_RUNS (where the run folders go; default runs) override.
set -u
cd "$(dirname "$0")/../.."
bin=${UNITRAIN_BIN:-build/unitrain}
export UNITRAIN_WORKER_MEMORY=${UNITRAIN_WORKER_MEMORY:-1000M}
[ -e examples/data/generated/moby_dick.txt ] || examples/moby_dick/prepare.sh || exit 1
status=0
for zero in 0 3; do
  echo "== distributed.zero: $zero, 4 workers of at most $UNITRAIN_WORKER_MEMORY each"
  runs=${UNITRAIN_RUNS:-runs}
  "$bin" launch --nproc-per-node 4 --master-port "${UNITRAIN_PORT:-29795}" \
    --log-dir "$runs/zero3-memory-$zero/logs" --exec -- \
    examples/zero3_memory/limited.sh "$bin" train examples/zero3_memory/lm.yaml \
    --run_dir "$runs/zero3-memory-$zero" --distributed.zero "$zero" "$@"
  code=$?
  echo "== distributed.zero: $zero: exit code $code"
  if [ "$zero" = 3 ]; then status=$code; fi
done
exit $status
