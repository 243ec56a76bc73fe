#!/bin/sh
# The CUDA build's code cannot run here, but it must compile against the API it targets: a
# syntax-only compile, with UNITRAIN_CUDA and the c10d backends defined, of every source and
# header under src/ and apps/ that mentions UNITRAIN_CUDA (the NCCL process group, the GPU facts
# of the engine, ...) against CUDA's headers (nccl.h included) and Debian's LibTorch headers.
# LibTorch's CUDA build generates c10/cuda/impl/cuda_cmake_macros.h, which a CPU-only LibTorch
# lacks: a one-line stand-in.
#   cuda_syntax_check.sh CXX SOURCE_DIR CUDA_INCLUDE_DIR WORK_DIR
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
files=$(cd "$src" && grep -rl --include='*.cpp' --include='*.h' UNITRAIN_CUDA src apps | sort)
if [ -z "$files" ]; then
  echo "no source mentions UNITRAIN_CUDA under $src/src or $src/apps"
  exit 1
fi
for f in $files; do
  echo "compiling $f with UNITRAIN_CUDA"
  # A header through a one-line file that includes it (its #pragma once then reads as usual).
  echo "#include \"$src/$f\"" | "$cxx" -std=c++17 -fsyntax-only -x c++ \
    -DUNITRAIN_CUDA -DUSE_C10D_NCCL -DUSE_C10D_GLOO \
    -I"$src/src" -I"$work" -I"$cuda" -I/usr/include/torch/csrc/api/include -
done
echo "ok: $(echo "$files" | wc -l) files"
