#!/usr/bin/env bash
# Analysis at scale (docs/PERFORMANCE.md#analysis-at-scale): writes a synthetic run with
# lockstep-synthetic-run (default 64 ranks x 1000 steps x 300 tensors, rank 17 diverging at step
# 400 so the timing includes a finding) and times `lockstep check` on it with /usr/bin/time -v.
#   bench/check_scale.sh [--build-dir DIR] [--out DIR] [--ranks R] [--steps S] [--tensors T]
#                        [--diverge-rank R --diverge-step S | --clean] [--baseline BIN] [--keep]
# Prints and writes OUT/check_scale.md: wall time, peak RSS, bytes on disk, tensor records read
# per second. --baseline BIN also times another `lockstep` binary on the same traces (one that
# reads them whole, for the before/after figure; it must read the format they are in).
# Targets (issue 15): under 60 s and under 1 GiB of peak RSS at the default size. The traces are
# deleted afterwards unless --keep (about 0.8 GB at the default size in lockstep.trace/2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${LOCKSTEP_BUILD_DIR:-$root/build}
out_dir=$root/out/check_scale
ranks=64 steps=1000 tensors=300 diverge_rank=17 diverge_step=400
baseline="" keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --out) out_dir=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --tensors) tensors=$2; shift 2 ;;
    --diverge-rank) diverge_rank=$2; shift 2 ;;
    --diverge-step) diverge_step=$2; shift 2 ;;
    --clean) diverge_rank=-1; diverge_step=-1; shift ;;
    --baseline) baseline=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench/check_scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build_dir=$(realpath -m "$build_dir")
out_dir=$(realpath -m "$out_dir")
[[ -x /usr/bin/time ]] || { echo "bench/check_scale.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
if [[ ! -x "$build_dir/bin/lockstep" || ! -x "$build_dir/bin/lockstep-synthetic-run" ]]; then
  cmake --build "$build_dir" --target lockstep lockstep-synthetic-run --parallel "${LOCKSTEP_JOBS:-$(nproc)}"
fi
bin=$build_dir/bin
traces=$out_dir/synthetic
rm -rf "$traces" "$out_dir/report" && mkdir -p "$traces"

diverge=()
if [[ $diverge_rank -ge 0 ]]; then diverge=(--diverge-rank "$diverge_rank" --diverge-step "$diverge_step"); fi
echo "== writing $ranks ranks x $steps steps x $tensors tensors to $traces"
t0=$(date +%s.%N)
"$bin/lockstep-synthetic-run" --out "$traces" --ranks "$ranks" --steps "$steps" --tensors "$tensors" "${diverge[@]}"
t1=$(date +%s.%N)
bytes=$(du -sb "$traces" | cut -f1)
records=$((ranks * (steps + 1) * tensors))
echo "   written in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s: $bytes bytes, $records tensor records ($(awk -v b="$bytes" -v r="$records" 'BEGIN { printf "%.1f", b / r }') bytes each)"

# Times one `lockstep check` (exit 1 is a finding, as expected with a divergence); prints a table row.
time_check() {
  local label=$1 lockstep=$2 log=$out_dir/$1.time
  local rc=0
  /usr/bin/time -v "$lockstep" check "$traces" >"$out_dir/$label.out" 2>"$log" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "bench/check_scale.sh: $label: lockstep check exited $rc" >&2; tail -20 "$out_dir/$label.out" "$log" >&2; exit 3
  fi
  local wall rss_kb
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$log")
  rss_kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")
  awk -v l="$label" -v w="$wall" -v k="$rss_kb" -v r="$records" -v b="$bytes" -v rc="$rc" 'BEGIN {
    printf "| %s | %.1f | %.0f | %.2f | %.0f | %.1f | %s |\n", l, w, k / 1024, b / 1e9, r / w, b / w / 1e6, rc == 1 ? "finding" : "pass" }'
}

{
  echo "lockstep check of $ranks ranks x $steps steps x $tensors tensors ($(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "| binary | wall s | peak RSS MiB | GB on disk | tensor records/s | MB/s | verdict |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  time_check lockstep "$bin/lockstep"
  if [[ -n "$baseline" ]]; then time_check baseline "$baseline"; fi
} | tee "$out_dir/check_scale.md"
grep -m1 -A1 "replica_weights" "$out_dir/lockstep.out" || true
if [[ $keep -eq 0 ]]; then rm -rf "$traces"; fi
