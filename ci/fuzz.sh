#!/usr/bin/env bash
# Fuzzes the readers of untrusted input (docs/FUZZING.md): builds the libFuzzer targets of fuzz/
# with clang, AddressSanitizer and UBSan into ${LOCKSTEP_FUZZ_BUILD_DIR:-build-fuzz} (the readers
# instrumented too), then runs each target for SECONDS (default 60) on a working corpus seeded
# from fixtures/. A crash fails the script and leaves its input in <build>/artifacts/<target>/.
#
#   ci/fuzz.sh            # 60 s per target
#   ci/fuzz.sh 600        # the longer run before a release
#   ci/fuzz.sh 10         # the bounded run ci/run-tests.sh does
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build_dir=${LOCKSTEP_FUZZ_BUILD_DIR:-build-fuzz}
cxx=${LOCKSTEP_FUZZ_CXX:-clang++}
cc=${LOCKSTEP_FUZZ_CC:-clang}
targets=(scenario_loader trace_reader report_reader)

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: skipped: $cxx not found (install clang: ci/install-deps.sh)"
  exit 0
fi
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build_dir/Makefile" ]]; then generator=(-G Ninja); fi
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DLOCKSTEP_FUZZ_INSTRUMENT=ON \
  -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF -DLOCKSTEP_ENABLE_CUDA=OFF >"$build_dir/configure.log" 2>&1 || {
  cat "$build_dir/configure.log"
  exit 1
}
if ! grep -q "LOCKSTEP_HAVE_LIBFUZZER:INTERNAL=1" "$build_dir/CMakeCache.txt"; then
  echo "fuzz: skipped: $cxx cannot build -fsanitize=fuzzer targets"
  exit 0
fi
cmake --build "$build_dir" --parallel "${LOCKSTEP_JOBS:-$(nproc)}" --target "${targets[@]/%/_fuzzer}"

seeds_scenario_loader=(scenarios fixtures/bad_scenarios fixtures/scenario_defaults fixtures/e2e fixtures/fuzz/scenario_loader)
seeds_trace_reader=(fixtures/traces fixtures/fuzz/trace_reader)
seeds_report_reader=(fixtures/reports fixtures/fuzz/report_reader)

rc=0
for t in "${targets[@]}"; do
  corpus="$build_dir/corpus/$t"
  artifacts="$build_dir/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds_var="seeds_${t}[@]"
  echo "fuzz: $t for ${seconds} s"
  # The working corpus first (new inputs are written there), then the seeds, read only.
  if ! "$build_dir/bin/${t}_fuzzer" "$corpus" "${!seeds_var}" -max_total_time="$seconds" -max_len=65536 \
       -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" \
       >"$build_dir/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; the input is in $artifacts/, the log in $build_dir/$t.log:"
    tail -40 "$build_dir/$t.log"
    rc=1
  else
    grep -E "^stat::number_of_executed_units|^Done" "$build_dir/$t.log" | tr '\n' ' '
    echo
  fi
done
exit "$rc"
