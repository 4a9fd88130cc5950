#!/usr/bin/env bash
# One call of a lent GPU machine (issue 39; docs/GPU.md, "On a machine lent for minutes"): the
# whole ci/gpu-checks.sh within one device call of 10 minutes, and what explains it copied to $OUT.
#   ci/gpu-lent-run.sh [--only LIST] [--no-build] [--budget SECONDS] [--seed FILE] [--targets LIST]
#   --only LIST    rerun just these checks (a second call on the warm machine)
#   --no-build     with --only: the build of the call before as it is (the working tree is laid
#                  anew on each call; rebuilding would recompile everything); on a fresh machine,
#                  which has none, the --targets are built instead
#   --budget S     seconds for gpu-checks.sh, build included (default 540): each check's limit is
#                  also what is left of it, so the results and docs are written in time
#   --targets LIST what to build (gpu-checks.sh's --targets; default `checks`, all the checks need):
#                  fewer for a rerun of some checks on a fresh machine, where the build is the cost
#   --seed FILE    a results.jsonl of an earlier call (its $OUT copy, carried in) to start from when
#                  this machine has none: a rerun of some checks on a fresh machine then writes the
#                  docs with every check, the rerun ones replaced (gpu-checks.sh's --only)
# The machine (2026-11-26): Ubuntu 24.04, g++ 13.3 in /opt/gcc/bin, torch in /opt/torch/.venv (its
# cmake and ninja too), nvcc in /usr/local/cuda/bin, no apt, no network; .debs/ (ci/gpu-deps.sh)
# comes in the device tool's carry. The build goes to /root/build-gpu and the logs and
# results.jsonl to /root/gpu-out, outside the working tree, so that a second call finds them.
# $OUT gets at most 8 files: toolchain.txt (what issue 35 needs to know about the compiler and the
# probe extension's libraries), results.jsonl, GPU.md, gpu-results.json, PERFORMANCE.md and
# gpu-logs.tar.gz (the logs and reports of every check and the cost check's torch profiles, no
# rank traces; under 16 MiB), and for a crash
# of the cost or nccl_plugin check its native stack (bench-stack.txt, nccl-stack.txt). A short table of
# the checks is printed last. Exit status: gpu-checks.sh's.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=() no_build=() budget=540 seed="" targets=checks
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only=(--only "${2:?--only needs a list}"); shift 2 ;;
    --no-build) no_build=(--no-build); shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --seed) seed=${2:?--seed needs a file}; shift 2 ;;
    --targets) targets=${2:?--targets needs a list}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "ci/gpu-lent-run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $budget =~ ^[1-9][0-9]*$ ]] || { echo "ci/gpu-lent-run.sh: --budget: expected whole seconds" >&2; exit 2; }
out_dir=${OUT:-$root/out/lent}
mkdir -p "$out_dir"
build=${LOCKSTEP_LENT_BUILD:-/root/build-gpu}
results=${LOCKSTEP_LENT_OUT:-/root/gpu-out}
mkdir -p "$results"
if [[ -n $seed ]]; then
  [[ -f $seed ]] || { echo "ci/gpu-lent-run.sh: --seed: no file $seed" >&2; exit 2; }
  [[ -s $results/results.jsonl ]] || cp "$seed" "$results/results.jsonl"
fi

# The image's toolchain first: its g++ (the one CMake picked on the first run), then the venv's
# cmake and ninja, then nvcc.
for d in /usr/local/cuda/bin /opt/torch/.venv/bin /opt/gcc/bin; do
  [[ -d $d ]] && PATH=$d:$PATH
done
export PATH
[[ -x /opt/torch/.venv/bin/python3 ]] && export PYTHON=/opt/torch/.venv/bin/python3
python=${PYTHON:-python3}

facts=$out_dir/toolchain.txt
{
  echo "== date"; date -u
  echo "== nvidia-smi -L"; nvidia-smi -L 2>&1
  echo "== g++ --version ($(command -v g++))"; g++ --version 2>&1 | head -n 1
  echo "== g++ -print-file-name=libstdc++.so"; lib=$(g++ -print-file-name=libstdc++.so 2>&1); echo "$lib -> $(realpath "$lib" 2>&1)"
  echo "== ls /opt/gcc/lib*"; ls -d /opt/gcc/lib* 2>&1; ls /opt/gcc/lib*/libstdc++.so* /opt/gcc/lib*/libgcc_s.so* 2>&1
  echo "== system libstdc++"; ls -l /usr/lib/x86_64-linux-gnu/libstdc++.so.6* 2>&1
  echo "== torch"; "$python" -c 'import torch, sys; print(sys.executable, torch.__version__, torch.version.cuda, torch.cuda.is_available())' 2>&1
  echo "== cmake, ninja, nvcc"; cmake --version 2>&1 | head -n 1; ninja --version 2>&1; nvcc --version 2>&1 | tail -n 1
} >"$facts" 2>&1
cat "$facts"

# --no-build needs the build of an earlier call on this same machine; a machine given back between
# two calls (its 30 s of warmth spent on the transfers: the 2026-11-27 rerun) starts bare, and then
# the rerun builds what it needs rather than failing.
if [[ ${#no_build[@]} -gt 0 && ! ( -f $results/configure.log && -d $build ) ]]; then
  echo "ci/gpu-lent-run.sh: --no-build: this machine has no earlier build (a fresh machine): building --targets $targets"
  no_build=()
fi

deps=()
[[ -d $root/.debs ]] && deps=(--deps "$root/.debs")
[[ ${#deps[@]} -gt 0 ]] || echo "ci/gpu-lent-run.sh: no .debs/ in the working tree (name it in the device tool's carry)" >&2
rc=0
# The checks' limit: the budget's, the deadline cuts each one to what is left.
timeout --kill-after=15 $((budget + 20)) "$root/ci/gpu-checks.sh" "${deps[@]}" --build-dir "$build" --out "$results" \
  --targets "$targets" --deadline "$budget" --check-timeout 300 "${only[@]}" "${no_build[@]}" || rc=$?

# The probe extension the checks built: its NEEDED libraries and RUNPATH, and what they resolve to.
{
  ext=$(find "$build" -name '_lockstep_probe*.so' -type f 2>/dev/null | head -n 1)
  echo "== probe extension: ${ext:-not built}"
  if [[ -n $ext ]]; then
    readelf -d "$ext" 2>&1 | grep -E "NEEDED|RUNPATH|RPATH"
    ldd "$ext" 2>&1 | grep -E "stdc\+\+|gcc_s|torch|python|not found"
  fi
  # A program must load the system's libstdc++.so.6 first, not carry the archive
  # (cmake/LockstepLibstdcxxFirst.cmake): its NEEDED libstdc++ and what the configure step said.
  for program in "$build/bin/lockstep-bench" "$build/bin/lockstep-rank"; do
    [[ -x $program ]] || continue
    echo "== program: $program"
    readelf -d "$program" 2>&1 | grep -E "NEEDED.*(stdc\+\+|torch)" | head -n 3
    echo "   std:: symbols it defines for others: $(nm -D --defined-only "$program" 2>/dev/null | grep -c ' _ZNSt\| _ZSt')"
  done
  grep -h "libstdc++" "$results/configure.log" 2>/dev/null | head -n 3
} >>"$facts" 2>&1
tail -n 20 "$facts"

# A native stack for each crash the checks could not explain, while the build is at hand: with the
# PC at 0 (a call through a null pointer) bt has no frames, but the return address on top of the
# stack names the caller. Only for checks that failed; at most 45 s each.
outcome() {
  "$python" -c 'import json,sys; print(next((r["outcome"] for r in map(json.loads, open(sys.argv[1])) if r["check"] == sys.argv[2]), "absent"))' \
    "$results/results.jsonl" "$1" 2>/dev/null
}
native_stack() {  # native_stack FILE -- COMMAND...
  local file=$1; shift 2
  command -v cuda-gdb >/dev/null || { echo "no cuda-gdb" >"$file"; return; }
  timeout --kill-after=5 45 cuda-gdb -batch -ex run -ex bt -ex 'x/8a $sp' -ex 'info symbol *(void**)$sp' \
    -ex 'disassemble *(void**)$sp-32,*(void**)$sp+4' -ex 'info sharedlibrary' --args "$@" >"$file" 2>&1
}
if [[ $(outcome cost) == failed && -x $build/bin/lockstep-bench ]]; then
  native_stack "$out_dir/bench-stack.txt" -- "$build/bin/lockstep-bench" --benchmark_filter='^BM_CudaStepOverhead/'
fi
if [[ $(outcome nccl_plugin) == failed && -d $build/python/lockstep ]]; then
  mkdir -p "$results/diag-nccl"
  ( export LOCAL_RANK=0 RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29571 \
      LOCKSTEP_PROBE=1 LOCKSTEP_TRACE_DIR="$results/diag-nccl" PYTHONPATH="$build/python" PYTHONFAULTHANDLER=1 \
      NCCL_CHECK_STEPS=2 NCCL_CHECK_ALLREDUCES=4
    native_stack "$out_dir/nccl-stack.txt" -- "$python" "$root/ci/gpu-nccl-program.py" )
fi

# The probe tests' own runs (rank logs and reports) are kept in the build folder: a failed or
# hung example is explained by its ranks' logs.
mkdir -p "$results/probe-runs"
for d in example_catalog_exec_test probe_catalog_test; do
  [[ -d $build/$d ]] || continue
  (cd "$build" && find "$d" \( -name '*.log' -o -name 'report.json' \) -size -1024k -print0 |
     xargs -0 -r cp --parents -t "$results/probe-runs/") 2>/dev/null
done

cp "$results/results.jsonl" "$out_dir/" 2>/dev/null
for f in docs/GPU.md docs/gpu-results.json docs/PERFORMANCE.md; do cp "$root/$f" "$out_dir/" 2>/dev/null; done
# Every log and report, not the traces (they are large and the reports name what they hold), and
# the cost check's torch-profiler traces whatever their size (cost/profile: they compress tenfold).
(cd "$results" && find . -type f \( \( -name '*.log' -o -name '*.list' -o -name '*.json' -o -name '*.md' -o -name '*.xml' \) \
   ! -path '*/traces/*' -size -4M -o -path './cost/profile/*' \) -print0 | tar --null -czf "$out_dir/gpu-logs.tar.gz" -T - 2>/dev/null)
if [[ $(stat -c %s "$out_dir/gpu-logs.tar.gz" 2>/dev/null || echo 0) -gt 16000000 ]]; then
  (cd "$results" && find . -maxdepth 1 -name '*.log' -print0 | tar --null -czf "$out_dir/gpu-logs.tar.gz" -T -)
fi

"$python" - "$results/results.jsonl" <<'PY' || cat "$results/results.jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'check':17} {'outcome':8} {'ran':>4}  detail")
for r in rows:
    print(f"{r['check']:17} {r['outcome']:8} {len(r.get('tests', [])):>4}  {r['detail'][:110]}")
    if r["check"] == "cost" and r["figures"]:
        f = r["figures"]
        print(f"{'':31}x_checks {f.get('transformer_x_checks')}, x_probe {f.get('ddp_x_probe')}")
PY
echo "ci/gpu-lent-run.sh: gpu-checks.sh exit $rc"
exit $rc
