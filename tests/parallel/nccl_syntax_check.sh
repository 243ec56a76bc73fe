#!/bin/sh
# The GPU path cannot run here, but it must compile against the API it targets: a syntax-only
# compile of the NCCL process group (and of process_group.cpp with it) against CUDA's headers
# (nccl.h included) and Debian's c10d headers. LibTorch's CUDA build generates
# c10/cuda/impl/cuda_cmake_macros.h, which a CPU-only LibTorch lacks: a one-line stand-in.
#   nccl_syntax_check.sh CXX SOURCE_DIR CUDA_INCLUDE_DIR WORK_DIR
set -eu
cxx=$1 src=$2 cuda=$3 work=$4
for h in nccl.h cuda_runtime_api.h; do
  if [ ! -f "$cuda/$h" ]; then
    echo "skipped: no $cuda/$h (set UNITRAIN_CUDA_INCLUDE to CUDA's include folder)"
    exit 77
  fi
done
mkdir -p "$work/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$work/c10/cuda/impl/cuda_cmake_macros.h"
for f in nccl_group.cpp process_group.cpp; do
  echo "compiling src/unitrain/parallel/$f with UNITRAIN_CUDA"
  "$cxx" -std=c++17 -fsyntax-only -DUNITRAIN_CUDA -DUSE_C10D_NCCL -DUSE_C10D_GLOO \
    -I"$src/src" -I"$work" -I"$cuda" -I/usr/include/torch/csrc/api/include "$src/src/unitrain/parallel/$f"
done
echo "ok"
