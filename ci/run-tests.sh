#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
# mpirun as root (CI containers), 4 ranks on 2 cores, and no UCX probe (~200 ms per start).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
       OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1
cd "$build_dir"
ctest --output-on-failure --parallel "${LOCKSTEP_TEST_JOBS:-$(nproc)}" "$@"
