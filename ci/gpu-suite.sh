#!/usr/bin/env bash
# The default scenario suite on CUDA: what ci/gpu-checks.sh's `suite` check runs, and what the
# GitHub Actions workflow for GPU runners runs with `gpu-suite: true` (docs/CI.md), so users get
# exactly what was run on the project's GPU machine:
#   ci/gpu-suite.sh [--bin DIR] [--out DIR] [--scenarios PATH]
#   --bin        where lockstep is (default build/bin)
#   --out        run directories go to OUT/suite-gloo and OUT/suite-nccl (default out)
#   --scenarios  default scenarios/clean
# 1. gloo: every scenario at its own number of ranks, the ranks sharing the machine's GPUs
#    (CUDA tensors; the gloo transport stages them through host memory);
# 2. nccl: one rank per GPU (--ranks = the number of GPUs; NCCL takes no two ranks on one GPU).
# Both with the local launcher, JUnit and Markdown reports beside report.json.
# Exit status: the worse of the two runs' (0 passed, 1 a check failed, 2 bad input, 3 harness).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
out=$root/out
scenarios=$root/scenarios/clean
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --scenarios) scenarios=${2:?--scenarios needs a path}; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "ci/gpu-suite.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $bin/lockstep ]] || { echo "ci/gpu-suite.sh: no lockstep in $bin (build first)" >&2; exit 3; }
command -v nvidia-smi >/dev/null || { echo "ci/gpu-suite.sh: nvidia-smi not found: no NVIDIA driver" >&2; exit 3; }
gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
[[ $gpus -ge 1 ]] || { echo "ci/gpu-suite.sh: nvidia-smi lists no GPU" >&2; exit 3; }
mkdir -p "$out"

worst=0
for backend in gloo nccl; do
  dir=$out/suite-$backend
  ranks=()
  [[ $backend == nccl ]] && ranks=(--ranks "$gpus")
  echo "ci/gpu-suite.sh: $backend${ranks[*]:+ ${ranks[*]}} on $gpus GPU(s) -> $dir"
  rc=0
  "$bin/lockstep" run "$scenarios" --launcher local --backend "$backend" --device cuda "${ranks[@]}" \
    --out "$dir" --junit "$dir/junit.xml" --markdown "$dir/summary.md" || rc=$?
  [[ $rc -gt $worst ]] && worst=$rc
done
exit "$worst"
