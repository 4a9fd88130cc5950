#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build_dir"
ctest --output-on-failure --parallel "${LOCKSTEP_TEST_JOBS:-$(nproc)}" "$@"
