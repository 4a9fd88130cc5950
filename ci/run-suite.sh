#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the default scenario suite on local ranks
# and writes the reports under out/. Exits non-zero on any failure (exit codes: docs/CLI.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$build_dir/bin/lockstep" validate scenarios/
