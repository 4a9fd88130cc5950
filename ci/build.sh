#!/usr/bin/env bash
# Configures and builds lockstep into ${LOCKSTEP_BUILD_DIR:-build}. Extra arguments go to cmake
# at configure time (e.g. -DTorch_DIR=... for another LibTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${LOCKSTEP_BUILD_DIR:-build}
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build_dir/Makefile" ]]; then generator=(-G Ninja); fi
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=${LOCKSTEP_BUILD_TYPE:-Release} "$@"
# LibTorch translation units take ~1.5 GiB each to compile: one job per core is safe on 24 GiB.
cmake --build "$build_dir" --parallel "${LOCKSTEP_JOBS:-$(nproc)}"
