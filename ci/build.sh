#!/usr/bin/env bash
# Configures and builds lockstep into ${LOCKSTEP_BUILD_DIR:-build}. Extra arguments go to cmake
# at configure time (e.g. -DTorch_DIR=... for another LibTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${LOCKSTEP_BUILD_DIR:-build}
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build_dir/Makefile" ]]; then generator=(-G Ninja); fi
# ccache, where installed, makes a second build tree (a fresh clone, the fuzz tree) cheap.
# Paths below the checkout are hashed relative to it (CCACHE_BASEDIR), so clones in other folders
# share the cache.
# The LibTorch translation units include a precompiled header (target_precompile_headers), which
# ccache caches only when told to be sloppy about it (ci/ccache-launcher.sh): without that they were
# compiled anew in every build tree, about 45 of them at 20-60 s each.
launcher=()
if command -v ccache >/dev/null 2>&1 && [[ ${LOCKSTEP_CCACHE:-1} != 0 ]]; then
  ccache_launcher="$(pwd)/ci/ccache-launcher.sh"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_launcher"
            -DCMAKE_CUDA_COMPILER_LAUNCHER="$ccache_launcher")
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
fi
# The torch of the build is the one ci/install-deps.sh installed: into $LOCKSTEP_VENV when that is
# set (CMake alone would look only for the repository's .venv).
python=()
if [[ -n ${LOCKSTEP_VENV:-} ]]; then python=(-DLOCKSTEP_PYTHON="$LOCKSTEP_VENV/bin/python"); fi
cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" "${python[@]}" -DCMAKE_BUILD_TYPE=${LOCKSTEP_BUILD_TYPE:-Release} "$@"
# LibTorch translation units take ~1.5 GiB each to compile: one job per core is safe on 24 GiB.
cmake --build "$build_dir" --parallel "${LOCKSTEP_JOBS:-$(nproc)}"
