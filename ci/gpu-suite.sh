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
# 2. nccl: one rank per GPU (--ranks = the number of GPUs; NCCL takes no two ranks on one GPU),
#    over the scenarios that world suits: a multi-slice scenario needs a multiple of its slices
#    (`lockstep run --ranks` refuses the others), so those are left out here, and said so.
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

# The scenario files a world of $1 ranks suits: `slices` (top-level key, default 1) divides it.
# The files of scenarios/ are flat YAML; a defaults file that set slices would be read too.
files_for_ranks() {
  local ranks=$1 f slices defaults
  while IFS= read -r f; do
    slices=$(awk '/^slices:/{print $2; exit}' "$f")
    # Only where a defaults file exists: awk's failure on a missing one stopped this function
    # under set -e, and the first GPU run's nccl suite ran nothing on one GPU.
    defaults=$(dirname "$f")/lockstep.defaults.yaml
    if [[ -z $slices && -f $defaults ]]; then slices=$(awk '/^slices:/{print $2; exit}' "$defaults"); fi
    if (( ranks % ${slices:-1} == 0 )); then echo "$f"
    else echo "ci/gpu-suite.sh: nccl: leaving out $f (slices ${slices} need a multiple of ${slices} GPUs, this machine has $ranks)" >&2; fi
  done < <(if [[ -d $scenarios ]]; then find "$scenarios" \( -name '*.yaml' -o -name '*.yml' \) ! -name lockstep.defaults.yaml | sort
           else echo "$scenarios"; fi)
}

worst=0
for backend in gloo nccl; do
  dir=$out/suite-$backend
  ranks=()
  inputs=("$scenarios")
  if [[ $backend == nccl ]]; then
    ranks=(--ranks "$gpus")
    mapfile -t inputs < <(files_for_ranks "$gpus")
    if [[ ${#inputs[@]} -eq 0 ]]; then
      echo "ci/gpu-suite.sh: nccl: no scenario of $scenarios suits $gpus rank(s)" >&2; worst=3; continue
    fi
  fi
  if [[ $backend == nccl ]]; then need="one GPU per rank: $gpus"; else need="the ranks share the $gpus GPU(s): 1 needed"; fi
  echo "ci/gpu-suite.sh: $backend${ranks[*]:+ ${ranks[*]}} on $gpus GPU(s) ($need), ${#inputs[@]} input(s) -> $dir"
  rc=0
  "$bin/lockstep" run "${inputs[@]}" --launcher local --backend "$backend" --device cuda "${ranks[@]}" \
    --out "$dir" --junit "$dir/junit.xml" --markdown "$dir/summary.md" || rc=$?
  echo "ci/gpu-suite.sh: $backend: exit $rc"
  [[ $rc -gt $worst ]] && worst=$rc
done
exit "$worst"
