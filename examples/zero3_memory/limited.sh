#!/bin/bash
# Runs one worker ("$@") with a memory limit of its own: UNITRAIN_WORKER_MEMORY bytes (e.g. 600M),
# in a memory cgroup made for it — cgroup v1's memory controller (/sys/fs/cgroup/memory) where
# the machine has it, else cgroup v2 (memory.max). Needs root. Used as the worker program of
# `unitrain launch --exec`, so that every worker gets the limit:
#   build/unitrain launch --nproc-per-node 4 --exec -- examples/zero3_memory/limited.sh \
#       build/unitrain train examples/zero3_memory/lm.yaml --distributed.zero 3
# A worker that needs more is killed by the kernel's OOM killer (the launcher reports its
# signal 9). The cgroup is removed when the worker ends.
set -u
limit=${UNITRAIN_WORKER_MEMORY:?set UNITRAIN_WORKER_MEMORY to the limit, e.g. 600M}
name="unitrain-worker-${RANK:-0}-$$"
if [ ! -d /sys/fs/cgroup/memory ] && [ ! -e /sys/fs/cgroup/cgroup.controllers ]; then
  echo "limited.sh: no cgroup filesystem under /sys/fs/cgroup (under \`ip netns exec\`, which" \
       "mounts a sysfs of its own, run the launcher with \`nsenter --net=/var/run/netns/NAME\`" \
       "instead)" >&2
  exit 1
fi
if [ -d /sys/fs/cgroup/memory ]; then
  root=/sys/fs/cgroup/memory
  group="$root/$name"
  mkdir "$group" || exit 1
  echo "$limit" > "$group/memory.limit_in_bytes" || exit 1
  # With swap, the limit would push pages out instead of ending the worker: count swap too.
  if [ -e "$group/memory.memsw.limit_in_bytes" ]; then
    echo "$limit" > "$group/memory.memsw.limit_in_bytes" 2>/dev/null || true
  fi
  echo "cgroup v1 $group: memory.limit_in_bytes $(cat "$group/memory.limit_in_bytes")" >&2
else
  root=/sys/fs/cgroup
  group="$root/$name"
  mkdir "$group" || exit 1
  echo "$limit" > "$group/memory.max" || exit 1
  echo 0 > "$group/memory.swap.max" 2>/dev/null || true
  echo "cgroup v2 $group: memory.max $(cat "$group/memory.max")" >&2
fi
echo $$ > "$group/cgroup.procs" || exit 1
"$@" &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM INT
trap 'kill -USR1 $child 2>/dev/null' USR1
wait $child
code=$?
while kill -0 $child 2>/dev/null; do wait $child; code=$?; done
echo $$ > "$root/cgroup.procs"
rmdir "$group" 2>/dev/null
exit $code
