#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the default scenario suite on local ranks
# and the self-test of the fault-injection catalog, and writes the reports under out/.
# Exits non-zero on any failure (exit codes: docs/CLI.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lockstep="$build_dir/bin/lockstep"

"$lockstep" validate scenarios/
status=0
"$lockstep" run scenarios/clean --out out/suite \
  --junit out/suite/junit.xml --markdown out/suite/summary.md --html out/suite/report.html || status=$?
"$lockstep" selftest scenarios/inject --clean scenarios/clean --repeats "${LOCKSTEP_SELFTEST_REPEATS:-5}" \
  --out out/selftest --junit out/selftest/junit.xml --html out/selftest/report.html || status=$?
echo "reports: out/suite/ (report.json, junit.xml, summary.md, report.html), out/selftest/ (detection.md, ...)"
exit "$status"
