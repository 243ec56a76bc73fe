#!/bin/bash
# The GPU tests on a machine whose only LibTorch is the one inside a CUDA `pip install torch` and
# which has no package registry (as the GPU machines lent to this project: Ubuntu 24.04, PyTorch
# 2.11+cu130, nvcc, no apt). Two steps:
#   tests/gpu/wheel_torch.sh prepare   # here (Debian 12, root): downloads into .gpu/ the Debian
#                                      # packages of unitrain's other libraries, Gloo's headers
#                                      # and the test data (about 50 MB; .gpu/ is git-ignored)
#   tests/gpu/wheel_torch.sh run       # there, from the checkout's root with .gpu/ beside it:
#                                      # unpacks what the machine lacks, builds against the
#                                      # wheel's LibTorch, runs tests/gpu/gpu_test.py test by test
# Logs go to $OUT (or .gpu/out). docs/gpu.md says what such a build needs and why.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
packages="libyaml-cpp-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev libhdf5-dev
  hdf5-helpers libisal-dev libprotobuf-dev protobuf-compiler libsentencepiece-dev libpng-dev
  libturbojpeg0-dev libjpeg-dev libgtest-dev libgmock-dev zlib1g-dev"
# The base system's own libraries and what only other packages' -dev files need.
base='^(catch2|gcc-12-base|googletest|libc-dev-bin|libc6|libc6-dev|libcrypt-dev|libcrypt1|libcurl3-nss|libcurl4|libcurl4-gnutls-dev|libcurl4-nss-dev|libcurl4-openssl-dev|libdb5.3|libgcc-s1|libgfortran5|libgomp1|libhdf5-fortran-102|libhdf5-hl-fortran-100|libnsl-dev|libnsl2|libnspr4|libnss3|libquadmath0|libsqlite3-0|libssl-dev|libstdc\+\+6|libtirpc-common|libtirpc-dev|libtirpc3|linux-libc-dev|nss-plugin-pem|rpcsvc-proto|zlib1g)$'

prepare() {
  grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/.gpu/" >>.git/info/exclude; }
  rm -rf .gpu && mkdir -p .gpu/deb .gpu/data .gpu/inc
  # shellcheck disable=SC2086
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances $packages | grep -v '^[ <]' | sort -u | grep -Ev "$base" |
    (cd .gpu/deb && xargs apt-get download >/dev/null) || exit 1
  cp /usr/share/datasets/fashion-mnist/*.gz \
    /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz .gpu/data/ || exit 1
  # Gloo's headers (ProcessGroupGloo.hpp includes them; the wheel has none): Debian 13's, from
  # scripts/test-libtorch2's root when it exists, else Debian 12's libgloo-dev.
  if [ -d /var/cache/unitrain/trixie-root/usr/include/gloo ]; then
    cp -r /var/cache/unitrain/trixie-root/usr/include/gloo .gpu/inc/
  else
    (cd .gpu && apt-get download libgloo-dev >/dev/null && dpkg-deb -x libgloo-dev_*.deb x &&
      mv x/usr/include/gloo inc/ && rm -rf x libgloo-dev_*.deb) || exit 1
  fi
  du -sh .gpu
}

out=${OUT:-$root/.gpu/out}
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }

# Unpacks what the machine lacks and builds the command into build-gpu/.
build() {
  stamp facts
  head -2 /etc/os-release; nproc; gcc --version | head -1; nvidia-smi -L
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'
  stamp "libraries the machine lacks"
  local d=/opt/unitrain-deps f so
  mkdir -p $d
  for f in .gpu/deb/*.deb; do dpkg-deb -x "$f" $d; done
  if [ -d $d/lib ]; then cp -an $d/lib/. $d/usr/lib/ && rm -rf $d/lib; fi
  for so in $(find $d -name 'lib*.so.*'); do  # keep only what the machine does not have
    if ldconfig -p | grep -qF "	$(basename "$so") ("; then rm -f "$so"; fi
  done
  cp -rn $d/usr/. /usr/ && ldconfig
  cp -rn .gpu/inc/gloo /usr/include/
  local nccl
  nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' \
    2>/dev/null)/include/nccl.h
  [ -e /usr/local/cuda/include/nccl.h ] || [ ! -e "$nccl" ] || cp "$nccl" /usr/local/cuda/include/
  mkdir -p /usr/share/datasets/fashion-mnist /usr/lib/python3/dist-packages/sklearn/datasets/data
  cp .gpu/data/*idx*.gz /usr/share/datasets/fashion-mnist/
  cp .gpu/data/digits.csv.gz /usr/lib/python3/dist-packages/sklearn/datasets/data/
  stamp configure
  export PATH=/usr/local/cuda/bin:$PATH
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda \
    -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
    >"$out/cmake.txt" 2>&1 || { tail -30 "$out/cmake.txt"; exit 1; }
  stamp build
  ninja -C build-gpu -k 0 unitrain_cli >"$out/build.txt" 2>&1 ||
    { grep -E "error|FAILED" "$out/build.txt" | head -60; exit 1; }
}

# tests/gpu/gpu_test.py test by test, against build-gpu/.
tests() {
  stamp "gpu tests"
  export PYTHONUNBUFFERED=1
  local status=0 t
  for t in $(grep -o 'def test_[a-z_]*' tests/gpu/gpu_test.py | cut -c5-); do
    stamp "$t"
    timeout 300 python3 tests/gpu/gpu_test.py build-gpu/unitrain build-gpu "Gpu.$t" \
      >>"$out/gpu_test.txt" 2>&1 || status=1
    tail -3 "$out/gpu_test.txt"
  done
  stamp "done (exit $status)"
  exit $status
}

logged() { mkdir -p "$out" && exec > >(tee -a "$out/log.txt") 2>&1; }
case "${1:-}" in
  prepare) prepare ;;
  run) logged && build && tests ;;
  build) logged && build ;;  # bench/gpu/run.sh: build, its benchmarks, then the tests
  tests) logged && tests ;;
  *) echo "usage: tests/gpu/wheel_torch.sh prepare | run | build | tests" >&2; exit 2 ;;
esac
