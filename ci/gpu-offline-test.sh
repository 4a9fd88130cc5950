#!/usr/bin/env bash
# Proves on this machine, without a GPU and without a network, that the GPU machine's build needs
# nothing beyond the packages ci/gpu-deps.sh fetched:
#   ci/gpu-offline-test.sh [DEPS_DIR]        (default .debs/; needs root for a mount namespace)
# In a private mount and network namespace (no network: only loopback), every file that the
# fetched build packages and the Open MPI stack installed on this machine is hidden (an overlay
# on /usr with a whiteout per file), so CMake, the compiler, the linker and mpirun can find them
# only in the prefix that `ci/gpu-checks.sh --deps` unpacks. Then it configures and builds the
# programs and tests that need each package (against the same PyPI torch wheel as the GPU
# machine's, from .venv), and runs them: the scenario loader tests (yaml-cpp, gtest), the digest
# tests (xxHash), the CLI (CLI11, nlohmann-json), the MPI collectives at np 2 with the relocated
# mpirun, the benchmark binary (Google Benchmark), and the native recorders `lockstep exec` loads
# (the PMPI preload links the prefix's libmpi).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$(realpath -m "${1:-$root/.debs}")
[[ -f $deps/packages.txt ]] || { echo "ci/gpu-offline-test.sh: $deps/packages.txt missing: run ci/gpu-deps.sh first" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "ci/gpu-offline-test.sh: needs root (unshare, mount)" >&2; exit 3; }
# The LibTorch of the GPU machine's kind: the PyPI wheel that ci/requirements.txt pins, from the
# repository's .venv (ci/install-deps.sh), whose python also builds the probe.
if [[ -z ${TORCH_DIR:-} ]]; then
  [[ -x $root/.venv/bin/python ]] || { echo "ci/gpu-offline-test.sh: no $root/.venv: run ci/install-deps.sh first" >&2; exit 2; }
  TORCH_DIR=$("$root/.venv/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch
  export PYTHON=$root/.venv/bin/python
fi
torch_dir=$TORCH_DIR
build_dir=${LOCKSTEP_OFFLINE_BUILD_DIR:-$root/build-offline}

# What the GPU machine lacks: the build packages and the MPI stack. The C library, zlib, OpenSSL
# and the like stay visible: every machine has them (the fetched copies are used there only where
# a soname is missing).
# Chart.js too: the configure reads it (reports/CMakeLists.txt) and the GPU machine has none.
hide='^(lib(yaml-cpp|gtest|gmock|benchmark|xxhash|cli11|gloo|openmpi|hwloc|event|pmix|fabric|ucx|ibverbs|rdmacm|psm|nl-|munge|xnvctrl|js-chart)|nlohmann-json|openmpi-|ibverbs-providers)'
work=$(mktemp -d /tmp/lockstep-offline.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper/usr" "$work/work"
hidden=0
hidden_packages=()
while read -r pkg _; do
  [[ $pkg =~ $hide ]] || continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
  hidden_packages+=("$pkg")
  while read -r f; do
    [[ $f == /usr/* ]] || continue
    [[ -d $f && ! -L $f ]] && continue
    [[ -e $f || -L $f ]] || continue
    mkdir -p "$work/upper$(dirname "$f")"
    mknod "$work/upper$f" c 0 0
    hidden=$((hidden + 1))
  done < <(dpkg -L "$pkg")
done <"$deps/packages.txt"
echo "ci/gpu-offline-test.sh: hiding $hidden files of this machine's copies of ${#hidden_packages[@]} fetched packages:"
printf '  %s\n' "${hidden_packages[@]}"
# Also whatever the configure reads from outside the toolchain that a package of the list did not
# bring: Chart.js must be hidden even where the list lacks libjs-chart.js (an older gpu-deps.sh),
# so that the configure fails here as it failed on the GPU machine.
if [[ -d /usr/share/javascript/chart.js ]] && [[ ! -e $work/upper/usr/share/javascript/chart.js ]]; then
  mkdir -p "$work/upper/usr/share/javascript"
  mknod "$work/upper/usr/share/javascript/chart.js" c 0 0
  echo "  /usr/share/javascript/chart.js (not in $deps/packages.txt)"
fi

targets=lockstep,scenario_loader_test,trace_test,comm_mpi_test,lockstep-bench,lockstep_pmpi,lockstep_nccl_profiler
# CUPTI's recorder is a target only where the CUDA toolkit has CUPTI (the GPU machine has it).
ls /usr/local/cuda/targets/*/lib/libcupti.so* >/dev/null 2>&1 && targets+=,lockstep_cupti
export root deps torch_dir build_dir work targets
unshare -m -n --propagation private bash -euo pipefail -c '
  ip link set lo up
  mount -t overlay overlay -o "lowerdir=/usr,upperdir=$work/upper/usr,workdir=$work/work" /usr
  for gone in /usr/include/yaml-cpp/yaml.h /usr/include/xxhash.h /usr/include/CLI/CLI.hpp \
              /usr/share/javascript/chart.js/chart.min.js \
              /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h /usr/bin/orterun; do
    if [[ -e $gone ]]; then echo "still visible: $gone" >&2; exit 3; fi
  done
  if getent hosts deb.debian.org >/dev/null 2>&1 || ping -c1 -W1 1.1.1.1 >/dev/null 2>&1; then
    echo "the network is still reachable" >&2; exit 3
  fi
  "$root/ci/gpu-checks.sh" --deps "$deps" --build-dir "$build_dir" --torch-dir "$torch_dir" \
    --build-only --targets "$targets"
  # The same environment gpu-checks.sh sets up, to run what was built.
  droot=$build_dir/deps-root
  lib=$droot/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib PATH=$droot/usr/bin:$PATH OPAL_PREFIX=$droot/usr PMIX_INSTALL_PREFIX=$lib/pmix2
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
         OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1
  echo "--- which mpirun: $(command -v mpirun)"
  "$build_dir/bin/lockstep" --version
  "$build_dir/bin/scenario_loader_test" --gtest_brief=1
  "$build_dir/bin/trace_test" --gtest_brief=1
  mpirun -np 2 "$build_dir/bin/comm_mpi_test" --gtest_brief=1
  "$build_dir/bin/lockstep-bench" --benchmark_filter='BM_Digest/bytes:1048576/threads:1' \
    --benchmark_min_time=0.01 | grep -q BM_Digest
  # The PMPI preload must resolve libmpi from the prefix alone (it is loaded into programs that
  # lockstep did not build, so a missing soname would only show up there).
  if ldd "$build_dir/lib/liblockstep_pmpi.so" | grep "not found"; then exit 1; fi
'
echo "ci/gpu-offline-test.sh: the GPU build configured, built and ran from the fetched packages alone"
