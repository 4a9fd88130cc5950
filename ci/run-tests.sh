#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the tests with ctest, then lists each
# skipped test with its reason (a GPU-only test on a machine without a GPU, say).
#
# Two tiers (docs/CI.md, "The soak tier"): by default every test but those labelled `soak`, each
# example program once and each multihost case once, within the 45 minutes CI gives a push;
# LOCKSTEP_SOAK=1 (the nightly job) runs every test, the real-bug corpus and the examples with their
# sidecars' repeats, the multihost cases 3 times and the self-test on the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export LOCKSTEP_SOAK=${LOCKSTEP_SOAK:-0}
[[ $LOCKSTEP_SOAK == 0 || $LOCKSTEP_SOAK == 1 ]] || { echo "LOCKSTEP_SOAK must be 0 or 1, not '$LOCKSTEP_SOAK'" >&2; exit 2; }
tier=(-LE soak)
[[ $LOCKSTEP_SOAK == 1 ]] && tier=()
phases=()
phase_start=$SECONDS
phase_done() { phases+=("$1 $((SECONDS - phase_start)) s"); phase_start=$SECONDS; }
ci/install-deps.sh
phase_done install
ci/build.sh
phase_done build
build_dir=${LOCKSTEP_BUILD_DIR:-build}
# mpirun as root (CI containers), 4 ranks on 2 cores, and no UCX probe (~200 ms per start).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
       OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1
cd "$build_dir"
rc=0
ctest --output-on-failure --parallel "${LOCKSTEP_TEST_JOBS:-$(nproc)}" "${tier[@]}" "$@" | tee ctest-output.log || rc=$?
phase_done ctest

# gtest prints "<file>:<line>: Skipped" and the reason before "[  SKIPPED ] <test>".
echo
echo "Skipped tests and why:"
awk '/: Skipped$/ {getline reason; pending = reason; next}
     /^\[  SKIPPED \]/ && pending != "" {sub(/^\[  SKIPPED \] /, ""); sub(/ \(.*$/, ""); print "  " $0 ": " pending; pending = ""}' \
  Testing/Temporary/LastTest.log | sort -u
passed=$(grep -c "   Passed " ctest-output.log || true)
failed=$(grep -cE "\*\*\*(Failed|Timeout|Exception)|Not Run" ctest-output.log || true)
skipped=$(grep -c "\*\*\*Skipped" ctest-output.log || true)

# A short, bounded fuzz run of the readers of untrusted input (ci/fuzz.sh; 0 seconds skips it).
# ctest has already replayed their seed corpus and every kept crash (fuzz_replay.*).
fuzz_seconds=${LOCKSTEP_FUZZ_SECONDS:-10}
if [[ $fuzz_seconds != 0 ]]; then
  cd "$root"
  if ! ci/fuzz.sh "$fuzz_seconds"; then
    echo "fuzz: a fuzz target found a crash or did not build (above)"
    rc=1
  fi
  phase_done fuzz
fi
# The objects lockstep injects into users' processes, built as the GPU machine's toolchain built
# them (g++ 13 finding only libstdc++.a) in the Debian 13 root of ci/distro-root.sh, at work there
# (docs/CI.md#the-toolchain-check; issue 35). The root is made once and kept on the machine; where
# debootstrap cannot make it the script says SKIP and why. LOCKSTEP_TOOLCHAIN_CHECK=0 leaves it out.
if [[ ${LOCKSTEP_TOOLCHAIN_CHECK:-1} != 0 ]]; then
  cd "$root"
  if ! ci/toolchain-check.sh; then
    echo "toolchain-check: the injected objects failed under the static-libstdc++ toolchain (above)"
    rc=1
  fi
  phase_done toolchain-check
fi

# The closing line CI reads: the plain count, last.
echo
echo "time: ${phases[*]} (tier: $([[ $LOCKSTEP_SOAK == 1 ]] && echo soak || echo push))"
echo "ctest: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
