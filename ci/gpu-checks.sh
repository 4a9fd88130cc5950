#!/usr/bin/env bash
# Every GPU check in one command, on a machine with an NVIDIA GPU, the CUDA toolkit and a pip
# torch built with CUDA (docs/GPU.md). It needs no network when given --deps:
#   ci/gpu-checks.sh [--deps DIR] [--build-dir DIR] [--torch-dir DIR] [--only LIST] [--no-doc]
#                    [--build-only [--targets LIST]]
#   --deps DIR     Debian packages fetched beforehand by ci/gpu-deps.sh (no apt, no network here):
#                  unpacked with dpkg -x into BUILD_DIR/deps-root (never /), CMake pointed at it,
#                  and only the shared libraries this machine lacks taken from there.
#                  Without --deps, ci/install-deps.sh installs them with apt.
#   --build-dir    default build-gpu
#   --torch-dir    a LibTorch's cmake folder; default: the one of the python3 that has torch
#   --only LIST    comma-separated subset of: digest,digest_bandwidth,sdpa,nccl,suite,selftest,probe,cupti,
#                  nccl_plugin,cost,cost_large
#   --build-only   configure and build, then stop (no GPU needed: ci/gpu-offline-test.sh uses it)
#   --targets LIST build only those (comma-separated) instead of everything; `--targets checks`:
#                  the programs and libraries the checks use, and nothing else (a lent machine)
#   --no-build     run the checks on the build of an earlier call as it is (no configure, no build)
#   --out DIR      logs and results.jsonl (default out/gpu); outside the working tree on a machine
#                  that lays the tree anew on each call, so that results accumulate across calls
#   --deadline S   the whole call's budget in seconds, from its start: each check's limit is also
#                  what is left of it, and a check that cannot start fails with that reason
#   --no-doc       do not rewrite docs/GPU.md and docs/gpu-results.json
#   --check-timeout SECONDS  wall-clock limit of each check (default 420); one that runs over
#                  fails with that reason and the next check runs
# The checks, each an entry of docs/gpu-results.json:
#   digest            CUDA digest bit-identical to the CPU on odd sizes and offsets, and the norms'
#                     sums of squares to the CPU's definition (ctest -L gpu)
#   digest_bandwidth  digest of 1 and 4 GiB against a device-to-device copy (target x_copy >= 0.8);
#                     a step's capture and the norms' kernel alone, recorded
#   sdpa              SDPA (flash kernel on CUDA) against naive attention, bf16 and fp32, fwd+bwd
#   nccl              the NCCL communicator, one rank per GPU (np 1; np 2 needs two GPUs)
#   suite             host staging of CUDA tensors (HostStagingCommunicatorCudaTest), then
#                     ci/gpu-suite.sh: lockstep run scenarios/clean --launcher local --device cuda,
#                     gloo at each scenario's ranks (sharing the GPUs), nccl at --ranks <GPUs>
#   selftest          every injection caught at its onset on CUDA (gloo --device cuda; nccl too
#                     when the machine has a GPU for each rank of the catalog)
#   probe             the Python probe with this machine's torch: its own cases (CUDA tensors
#                     digested on the device among them) and the example catalog through
#                     `lockstep exec` (ctest -L probe)
#   cupti             the CUPTI discovery recorder (liblockstep_cupti.so): its GPU test, then clean
#                     programs under `lockstep exec --recorders cuda`: they run, record cuda.* at
#                     start-up only, and give no discovery_count finding
#   nccl_plugin       the NCCL profiler plugin (liblockstep_nccl_profiler.so) under this torch's
#                     NCCL: ci/gpu-nccl-program.py under `lockstep exec`, one rank per GPU, with
#                     --recorders nccl and none: no finding, nccl.comm_init at start-up only, NCCL's
#                     all-reduces in the trace as the probe saw them, each ended; figures: the
#                     timed all-reduce loop with the plugin against without it
#   cost              what the checks cost per step on the GPU, as ratios: the default transformer
#                     on CUDA with the default checks against none, paired step by step in one
#                     process (lockstep-bench BM_CudaStepOverhead), and a CUDA DDP program
#                     (ci/gpu-ddp-step.py, NCCL, one rank per GPU) under `lockstep exec` against the
#                     same program bare under torchrun, alternating; docs/PERFORMANCE.md's GPU
#                     paragraph is filled from these figures
#   cost_large        the probe's cost on a realistic model (ci/gpu-ddp-step.py's GPT-like model,
#                     about 370M parameters), bare, under `lockstep exec` and with its digests
#                     deferred, once each; run last, alone
# Every check runs even when one before it failed, each with its own time limit, and says why it
# failed in one line; a build error fails only the checks whose programs did not build. Results
# accumulate in out/gpu/results.jsonl across calls (--only replaces just those checks), so the
# checks can be split over several calls of a machine lent for minutes (docs/GPU.md).
# Logs and JSON stay in out/gpu/. Exit status: 0 every check passed, 1 one failed, 2 usage error,
# 3 the machine cannot run them (no GPU, no CUDA torch) or the build failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build-gpu
deps=""
torch_dir=""
all_checks=(digest digest_bandwidth sdpa nccl suite selftest probe cupti nccl_plugin cost cost_large)
only=$(IFS=,; echo "${all_checks[*]}")  # every check, in this order, unless --only says fewer
build_only=0
no_build=0
deadline=""
out=""
targets=""
write_doc=1
check_timeout=420
while [[ $# -gt 0 ]]; do
  case "$1" in
    --deps) deps=${2:?--deps needs a folder}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a folder}; shift 2 ;;
    --torch-dir) torch_dir=${2:?--torch-dir needs a folder}; shift 2 ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    --deadline) deadline=${2:?--deadline needs seconds}; shift 2
      [[ $deadline =~ ^[1-9][0-9]*$ ]] || { echo "ci/gpu-checks.sh: --deadline: expected whole seconds, got '$deadline'" >&2; exit 2; } ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --targets) targets=${2:?--targets needs a list}; shift 2 ;;
    --no-doc) write_doc=0; shift ;;
    --check-timeout) check_timeout=${2:?--check-timeout needs seconds}; shift 2
      [[ $check_timeout =~ ^[1-9][0-9]*$ ]] || { echo "ci/gpu-checks.sh: --check-timeout: expected whole seconds, got '$check_timeout'" >&2; exit 2; } ;;
    -h|--help) sed -n '2,/^set -euo pipefail/{/^#/p}' "$0"; exit 0 ;;
    *) echo "ci/gpu-checks.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a wanted <<<"$only"
for c in "${wanted[@]}"; do
  [[ " ${all_checks[*]} " == *" $c "* ]] || { echo "ci/gpu-checks.sh: --only: unknown check '$c' (known: ${all_checks[*]})" >&2; exit 2; }
done
want() { [[ ",$only," == *",$1,"* ]]; }
if [[ -n $deps && ! -d $deps ]]; then
  echo "ci/gpu-checks.sh: --deps $deps: no such folder (make it with ci/gpu-deps.sh)" >&2; exit 2
fi
build_dir=$(realpath -m "$build_dir")
out=$(realpath -m "${out:-$root/out/gpu}")
mkdir -p "$out"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
deadline_at=""
[[ -n $deadline ]] && deadline_at=$(( $(date +%s) + deadline ))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1
# A Python program that dies of a signal prints its Python stack (the 2026-11-26 run's nccl_plugin
# program died of SIGSEGV with an empty log).
export PYTHONFAULTHANDLER=1

fail() { echo "ci/gpu-checks.sh: $*" >&2; exit 3; }

# The interpreter that has torch: the first python3 on PATH may be another one. --build-only with
# --torch-dir needs none (the offline test here has Debian's LibTorch but maybe no python torch).
python=""
for p in ${PYTHON:-} python3 /opt/torch/.venv/bin/python3 "$root/.venv/bin/python" /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then python=$(command -v "$p"); break; fi
done
if [[ -z $python && ! ( $build_only -eq 1 && -n $torch_dir ) ]]; then
  fail "no python3 with torch found (set PYTHON=/path/to/python3)"
fi

gpu="none"
torch_version="(from $torch_dir)" torch_cuda=none
if [[ $build_only -eq 0 ]]; then
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this machine has no NVIDIA driver"
  gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1) ||
    fail "nvidia-smi sees no GPU"
fi
if [[ -n $python ]]; then
  torch_info=$("$python" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.compiled_with_cxx11_abi())')
  read -r torch_version torch_cuda torch_sees_gpu torch_abi <<<"$torch_info"
  if [[ $build_only -eq 0 ]]; then
    [[ $torch_cuda != None ]] || fail "torch $torch_version is a CPU build"
    [[ $torch_sees_gpu == True ]] || fail "torch $torch_version does not see the GPU"
  fi
  # Debian's yaml-cpp, gtest and benchmark use the C++11 string ABI; a wheel built with the old
  # one cannot link against them.
  [[ $torch_abi == True ]] || fail "torch $torch_version was built with the pre-C++11 string ABI; use a wheel with the new ABI (torch >= 2.7)"
  if [[ -z $torch_dir ]]; then
    torch_dir=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch
  fi
fi
[[ -f $torch_dir/TorchConfig.cmake ]] || fail "no TorchConfig.cmake in $torch_dir"

cmake_args=(-DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" -DLOCKSTEP_ENABLE_CUDA=ON -DLOCKSTEP_BUILD_BENCH=ON)
# The machine's own torch, as CI's .venv is on CPU machines (cmake/LockstepDependencies.cmake): its
# interpreter builds and runs the probe, its wheel gives LibTorch.
if [[ -n $python ]]; then cmake_args+=(-DLOCKSTEP_PYTHON="$python"); fi
# ccache where installed (as ci/build.sh): the offline test here rebuilds what the main build has.
if command -v ccache >/dev/null 2>&1 && [[ ${LOCKSTEP_CCACHE:-1} != 0 ]]; then
  cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER="$root/ci/ccache-launcher.sh" -DCMAKE_CXX_COMPILER_LAUNCHER="$root/ci/ccache-launcher.sh"
               -DCMAKE_CUDA_COMPILER_LAUNCHER="$root/ci/ccache-launcher.sh")
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
fi
prefix_path=()

# NCCL from the nvidia-nccl wheel when the CUDA prefix has none: the wheel ships libnccl.so.2 but
# no libnccl.so for the linker, so a folder of links stands in for an NCCL install.
# wheel_dir HEADER: the folder of an NVIDIA wheel holding include/HEADER and lib/ (nvidia/nccl,
# nvidia/cudnn; CUDA 13's wheels may nest them as nvidia/cu13), or nothing.
wheel_dir() {
  [[ -n $python ]] || return 0
  "$python" - "$1" 2>/dev/null <<'PY' || true
import glob, os, sys
import nvidia
for base in nvidia.__path__:
    for header in sorted(glob.glob(os.path.join(base, "**", "include", sys.argv[1]), recursive=True)):
        folder = os.path.dirname(os.path.dirname(header))
        if os.path.isdir(os.path.join(folder, "lib")):
            print(folder)
            raise SystemExit
PY
}
nccl_wheel=$(wheel_dir nccl.h)
if [[ -n $nccl_wheel && -f $nccl_wheel/include/nccl.h && -z ${NCCL_HOME:-} ]]; then
  mkdir -p "$build_dir/nccl/lib"
  ln -sfn "$nccl_wheel/include" "$build_dir/nccl/include"
  so=$(ls "$nccl_wheel"/lib/libnccl.so* | head -n 1)
  ln -sf "$so" "$build_dir/nccl/lib/libnccl.so"
  export NCCL_HOME=$build_dir/nccl
  export LD_LIBRARY_PATH=$nccl_wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# The Debian packages of --deps: unpacked into a prefix of our own, never into /.
if [[ -n $deps ]]; then
  deps=$(cd "$deps" && pwd)
  ls "$deps"/*.deb >/dev/null 2>&1 || fail "--deps $deps holds no .deb files (make them with ci/gpu-deps.sh)"
  droot=$build_dir/deps-root
  if [[ -e $droot && ! -f $droot/.lockstep-deps-root ]]; then
    fail "$droot exists and was not made by this script; not touching it"
  fi
  rm -rf "$droot"
  mkdir -p "$droot"
  touch "$droot/.lockstep-deps-root"
  for f in "$deps"/*.deb; do
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$f" "$droot"
    else  # a .deb is an ar archive holding data.tar.*
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$f" && tar -xf data.tar.* -C "$droot" && rm -rf "$tmp")
    fi
  done
  arch_lib=$droot/usr/lib/x86_64-linux-gnu
  # A library of the prefix must never shadow the machine's own (newer) copy, neither through the
  # library path nor through the RUNPATH CMake gives the programs: where the machine has the
  # soname (and its file), the prefix's copy becomes a link to the machine's. What is left in the
  # prefix is only what the machine lacks.
  have=$(ldconfig -p 2>/dev/null | awk '{print $1, $NF}')
  # ldconfig lists sonames (libzstd.so.1): the names programs load, which the packages ship as
  # links to the real file. Re-pointing such a link at the machine's file is enough.
  lacking=()
  for lib in "$arch_lib"/lib*.so.* "$arch_lib"/openmpi/lib/lib*.so.*; do
    [[ -e $lib ]] || continue
    name=$(basename "$lib")
    path=$(awk -v n="$name" '$1 == n {print $2; exit}' <<<"$have")
    if [[ -n $path && -e $path ]]; then ln -sfn "$(realpath "$path")" "$lib"
    elif [[ -L $lib ]]; then lacking+=("$name"); fi
  done
  echo "ci/gpu-checks.sh: from --deps, this machine lacks: ${lacking[*]:-nothing}"
  export LD_LIBRARY_PATH=$arch_lib:$arch_lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$droot/usr/bin:$PATH
  # Open MPI finds its help files, plugins and mpirun's orted from its install prefix.
  export OPAL_PREFIX=$droot/usr PMIX_INSTALL_PREFIX=$arch_lib/pmix2
  # mpirun is an alternatives link that only the package's install script makes.
  [[ -e $droot/usr/bin/mpirun ]] || ln -s mpirun.openmpi "$droot/usr/bin/mpirun"
  prefix_path+=("$droot/usr")
  # Chart.js (libjs-chart.js), which reports/CMakeLists.txt inlines: the configure looks for it in
  # /usr/share/javascript, which the GPU machine lacks (the first GPU run stopped there).
  for c in chart.umd.js chart.umd.min.js chart.min.js Chart.min.js; do
    if [[ -f $droot/usr/share/javascript/chart.js/$c ]]; then cmake_args+=(-DLOCKSTEP_CHARTJS_PATH="$droot/usr/share/javascript/chart.js/$c"); break; fi
  done
  mpi_inc=$arch_lib/openmpi/include
  cmake_args+=(-DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR="$mpi_inc" -DMPI_C_LIB_NAMES=mpi
               -DMPI_mpi_LIBRARY="$arch_lib/openmpi/lib/libmpi.so"
               -DMPIEXEC_EXECUTABLE="$droot/usr/bin/orterun"
               -DCMAKE_LIBRARY_PATH="$arch_lib" -DCMAKE_INCLUDE_PATH="$droot/usr/include")
elif [[ $no_build -eq 0 ]]; then
  "$root/ci/install-deps.sh"
fi
if [[ ${#prefix_path[@]} -gt 0 ]]; then
  cmake_args+=(-DCMAKE_PREFIX_PATH="$(IFS=';'; echo "${prefix_path[*]}")")
fi

# cuDNN from the nvidia-cudnn wheel that a pip torch depends on: the wheel's TorchConfig looks for
# cuDNN when it was built with it, and the wheel's copy is the one torch loads at run time.
cudnn_wheel=$(wheel_dir cudnn.h)
if [[ -n $cudnn_wheel && -f $cudnn_wheel/include/cudnn.h ]]; then
  cudnn_lib=$(ls "$cudnn_wheel"/lib/libcudnn.so* 2>/dev/null | head -n 1)
  [[ -n $cudnn_lib ]] && cmake_args+=(-DCUDNN_INCLUDE_PATH="$cudnn_wheel/include" -DCUDNN_LIBRARY_PATH="$cudnn_lib")
fi

if [[ $no_build -eq 1 ]]; then
  # A rerun on a warm machine: the build of the call before, as it is (the working tree is laid
  # anew on each call, and new file times would make the build recompile everything).
  [[ -f $build_dir/CMakeCache.txt && -f $out/configure.log ]] ||
    fail "--no-build: no earlier build in $build_dir with its configure.log in $out"
  build_failed=0
  echo "ci/gpu-checks.sh: --no-build: the programs of $build_dir as they are"
else
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f $build_dir/Makefile ]]; then generator=(-G Ninja); fi
echo "ci/gpu-checks.sh: configuring $build_dir (torch $torch_version, CUDA $torch_cuda)"
# LibTorch 2.x's CMake config has failed on CUDA toolkits without libnvToolsExt (CUDA >= 12.9,
# header-only NVTX 3: pytorch#152756) and on machines without cuDNN. If the first configure
# fails, the second turns both off: NVTX 3 from the toolkit stands in for nvToolsExt
# (LOCKSTEP_TORCH_NVTX3_SHIM, cmake/LockstepDependencies.cmake) and cuDNN is not looked for
# (lockstep calls no cuDNN; LibTorch loads its own copy at run time).
fallback_args=(-DUSE_SYSTEM_NVTX=ON -DLOCKSTEP_TORCH_NVTX3_SHIM=ON -DCAFFE2_USE_CUDNN=OFF)
if ! cmake -S "$root" -B "$build_dir" "${generator[@]}" "${cmake_args[@]}" >"$out/configure.log" 2>&1; then
  echo "ci/gpu-checks.sh: configure failed; the last lines of out/gpu/configure.log:" >&2
  grep -E "CMake Error|Could NOT|nvToolsExt|nvtx|cuDNN|CUDNN" "$out/configure.log" | head -n 12 >&2 || true
  echo "ci/gpu-checks.sh: configuring again with ${fallback_args[*]}" >&2
  rm -f "$build_dir/CMakeCache.txt"
  cmake -S "$root" -B "$build_dir" "${generator[@]}" "${cmake_args[@]}" "${fallback_args[@]}" \
    >"$out/configure-fallback.log" 2>&1 ||
    { tail -n 40 "$out/configure-fallback.log" >&2; fail "configure failed twice (see out/gpu/configure.log and configure-fallback.log)"; }
  cp "$out/configure-fallback.log" "$out/configure.log"
fi
grep -E "^-- lockstep: " "$out/configure.log" || true
if [[ $build_only -eq 0 ]] && grep -q "CUDA none" "$out/configure.log"; then
  fail "CMake found no CUDA toolkit (see $out/configure.log)"
fi
# What the checks run: their test programs (ctest lists and runs only what was built), lockstep and
# its rank and tensor programs, the probe and the native recorders `lockstep exec` loads.
check_targets=lockstep,lockstep-rank,lockstep-tensors,comm_test,cuda_digest_test,cuda_tensor_digest_test
check_targets+=,digest_kernel_test,lockstep-bench,models_test,comm_nccl_test,lockstep_probe,probe_catalog_test
check_targets+=,example_catalog_exec_test,lockstep_process_log,lockstep_pmpi,lockstep_cupti,cupti_discovery_gpu_test
check_targets+=,lockstep_nccl_profiler,work_completion_test,profile_ranges_test
check_targets+=,cuda_capture_device_test,capture_pipeline_test,step_recorder_test
[[ $targets == checks ]] && targets=$check_targets
echo "ci/gpu-checks.sh: building${targets:+ $targets}"
target_args=()
if [[ -n $targets ]]; then IFS=, read -r -a t <<<"$targets"; target_args=(--target "${t[@]}"); fi
# Keep going past a file that does not compile (a LibTorch 2.x API change, say): every program
# that can be built is, and only the checks that need a missing one fail.
keep_going=(-k)
[[ -f $build_dir/build.ninja ]] && keep_going=(-k 0)
build_failed=0
if ! cmake --build "$build_dir" "${target_args[@]}" --parallel "${LOCKSTEP_JOBS:-$(nproc)}" -- "${keep_going[@]}" \
    >"$out/build.log" 2>&1; then
  build_failed=1
  echo "ci/gpu-checks.sh: the build failed; the first errors (all in out/gpu/build.log):" >&2
  grep -E "error:|Error [0-9]|FAILED:" "$out/build.log" | head -n 30 >&2 || true
fi
# A LibTorch whose headers need C++20 (PyTorch announced it for 2.12/2.13): build as C++20.
if [[ $build_failed -eq 1 ]] && grep -q "C++20 or later compatible compiler is required" "$out/build.log"; then
  echo "ci/gpu-checks.sh: this LibTorch's headers need C++20; building with -DCMAKE_CXX_STANDARD=20" >&2
  cp "$out/build.log" "$out/build-cxx17.log"
  build_failed=0
  { cmake -S "$root" -B "$build_dir" -DCMAKE_CXX_STANDARD=20 >>"$out/configure.log" 2>&1 &&
    cmake --build "$build_dir" "${target_args[@]}" --parallel "${LOCKSTEP_JOBS:-$(nproc)}" -- "${keep_going[@]}" \
      >"$out/build.log" 2>&1; } || build_failed=1
fi
# A LibTorch whose c10d headers need a newer gloo than the only gloo headers found (a wheel that
# ships none, with Debian's from --deps) fails in gloo_communicator.cc: build without the gloo
# backend then, so that everything else still runs (the gloo suite and self-test fail, saying so).
if [[ $build_failed -eq 1 ]] && grep -q "gloo_communicator.cc" "$out/build.log" && grep -q "error:" "$out/build.log"; then
  echo "ci/gpu-checks.sh: gloo_communicator.cc did not compile against $(grep -o 'gloo headers from [^ ]*' "$out/configure.log" || echo 'the gloo headers found'); building without the gloo backend" >&2
  cp "$out/build.log" "$out/build-with-gloo.log"
  build_failed=0
  { cmake -S "$root" -B "$build_dir" -DLOCKSTEP_ENABLE_GLOO=OFF >>"$out/configure.log" 2>&1 &&
    cmake --build "$build_dir" "${target_args[@]}" --parallel "${LOCKSTEP_JOBS:-$(nproc)}" -- "${keep_going[@]}" \
      >"$out/build.log" 2>&1; } || build_failed=1
  [[ $build_failed -eq 0 ]] || grep -E "error:|FAILED:" "$out/build.log" | head -n 30 >&2 || true
fi
fi  # --no-build
if [[ $build_only -eq 1 ]]; then
  [[ $build_failed -eq 0 ]] || fail "build failed (see $out/build.log)"
  echo "ci/gpu-checks.sh: configured and built $build_dir (--build-only)"
  exit 0
fi

bin=$build_dir/bin
results=$out/results.jsonl
# Results of earlier calls stay, except those of the checks this call runs.
if [[ -f $results ]]; then
  "$python" - "$results" "$only" <<'PY'
import json, sys
path, only = sys.argv[1], set(sys.argv[2].split(","))
rows = [l for l in open(path) if l.strip() and json.loads(l)["check"] not in only]
open(path, "w").writelines(rows)
PY
fi
touch "$results"
status=0
[[ $build_failed -eq 0 ]] || status=3
# record CHECK OUTCOME DETAIL [JSON-FIGURES [JSON-TESTS]]: TESTS, the names of the tests or runs the
# check judged, go into results.jsonl with it (a check says what it ran, not only that it passed).
# Each row says when it was judged and how long its check took (since the previous row, or since
# the build): results of several calls, on fresh machines, are told apart, and the next call's
# --deadline can be planned from them.
check_clock=$(date +%s)
record() {
  local now seconds
  now=$(date +%s); seconds=$(( now - check_clock )); check_clock=$now
  "$python" - "$results" "$seconds" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$@" <<'PY'
import json, sys
path, seconds, at, check, outcome, detail = sys.argv[1:7]
figures = json.loads(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else {}
tests = json.loads(sys.argv[8]) if len(sys.argv) > 8 and sys.argv[8] else []
with open(path, "a") as f:
    f.write(json.dumps({"check": check, "outcome": outcome, "detail": detail, "figures": figures,
                        "tests": tests, "seconds": int(seconds), "at": at}) + "\n")
PY
  [[ $2 == passed ]] || status=1
  echo "ci/gpu-checks.sh: $1: $2 ($3)"
}
# read_verdict JSON: splits a check's verdict, {"problems": [...], "figures": {...}}, into $problems
# (joined by "; ", empty when none) and $figures (JSON, for record).
read_verdict() {
  problems=$("$python" -c 'import json,sys; print("; ".join(json.loads(sys.argv[1])["problems"]))' "$1")
  figures=$("$python" -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["figures"]))' "$1")
}
# needs CHECK PROGRAM...: records CHECK as failed when one of its programs did not build.
needs() {
  local check=$1 p; shift
  for p in "$@"; do
    if [[ ! -x $bin/$p ]]; then record "$check" failed "$p was not built (see out/gpu/build.log)"; return 1; fi
  done
}
# bounded LOG COMMAND...: runs COMMAND with the check time limit, output to out/gpu/LOG; its exit
# status, 124 when it ran out of time (said on stderr at once), 125 when the --deadline left no
# time to start it.
# With --deadline, the limit is also what is left of the whole call: a check that cannot start
# in time fails at once ("ran past"), and the results and docs are still written at the end.
bounded() {
  local log=$1 rc=0 limit=$check_timeout left; shift
  if [[ -n $deadline_at ]]; then
    left=$(( deadline_at - $(date +%s) ))
    (( left < limit )) && limit=$left
    if (( limit < 5 )); then
      echo "ci/gpu-checks.sh: $*: not started, the --deadline has passed" | tee "$out/$log" >&2
      return 125
    fi
  fi
  timeout --kill-after=10 "$limit" "$@" >"$out/$log" 2>&1 || rc=$?
  [[ $rc -eq 124 || $rc -eq 137 ]] && echo "ci/gpu-checks.sh: $* ran past its limit of $limit s" >&2
  return $rc
}
# judge_ctest LOG REQUIRED...: ci/gpu-judge-ctest.py's verdict (JSON) on out/gpu/LOG, with the
# `ctest -N` listing of the same selection beside it (LOG.list): every listed test and every
# REQUIRED one (full names, space-separated) must have run and passed, none skipped.
judge_ctest() {
  local log=$1; shift
  "$python" "$root/ci/gpu-judge-ctest.py" --log "$out/$log" --listed "$out/$log.list" --require "$*" || true
}
# verdict_field JSON KEY: one field of a verdict, as text (lists and objects as JSON).
verdict_field() {
  "$python" -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2], ""); print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}
# ctest_selection LOG REQUIRED ARGS...: lists (ctest -N) and runs (ctest -V) the selection ARGS
# into out/gpu/LOG(.list); sets $ctest_verdict (the judge's JSON) and $ctest_rc.
ctest_selection() {
  local log=$1 required=$2; shift 2
  ctest_rc=0
  ctest --test-dir "$build_dir" -N "$@" >"$out/$log.list" 2>&1 || true
  bounded "$log" ctest --test-dir "$build_dir" -V --timeout "$check_timeout" "$@" || ctest_rc=$?
  ctest_verdict=$(judge_ctest "$log" $required)
  [[ -n $ctest_verdict ]] || ctest_verdict='{"outcome": "failed", "detail": "the judge printed nothing", "tests": []}'
  if [[ $ctest_rc -eq 125 ]]; then
    ctest_verdict=$("$python" -c 'import json,sys; v=json.loads(sys.argv[1]); v["outcome"]="failed"; v["detail"]="not started: the --deadline had passed; "+v["detail"]; print(json.dumps(v))' "$ctest_verdict")
  elif [[ $ctest_rc -eq 124 || $ctest_rc -eq 137 ]]; then
    ctest_verdict=$("$python" -c 'import json,sys; v=json.loads(sys.argv[1]); v["outcome"]="failed"; v["detail"]="ran past "+sys.argv[2]+" s; "+v["detail"]; print(json.dumps(v))' "$ctest_verdict" "$check_timeout")
  elif [[ $ctest_rc -ne 0 ]]; then
    ctest_verdict=$("$python" -c 'import json,sys; v=json.loads(sys.argv[1]); v["outcome"]="failed"; v["detail"]="ctest exit "+sys.argv[2]+"; "+v["detail"]; print(json.dumps(v))' "$ctest_verdict" "$ctest_rc")
  fi
}
# run_ctest CHECK LOG REQUIRED ARGS...: the check passes only as the judge says (see above).
run_ctest() {
  local check=$1 log=$2 required=$3; shift 3
  ctest_selection "$log" "$required" "$@"
  local outcome detail
  outcome=$(verdict_field "$ctest_verdict" outcome)
  detail=$(verdict_field "$ctest_verdict" detail)
  [[ $outcome == passed ]] || detail="$detail; see out/gpu/$log"
  record "$check" "$outcome" "$detail" "$(verdict_field "$ctest_verdict" counts)" "$(verdict_field "$ctest_verdict" tests)"
}

# The GPU tests each check must have run and passed, by full name (ctest -N lists them in a CUDA
# build): a selection regex alone once matched only CPU tests and passed (the first GPU run's sdpa
# check). A test renamed in the source fails its check here until this list follows.
digest_gpu_tests="CudaDigestTest.MatchesCpuOnOddSizes CudaDigestTest.DtypeAndShapeArePartOfTheDigest
  CudaDigestTest.OnAStreamAfterQueuedWork CudaDigestTest.HostPointerIsAnError
  CudaDigestTest.NullPointerWithBytesIsAnError CudaDigestTest.ManyBuffersInOneLaunch
  CudaTensorDigestTest.DeviceTensorsDigestLikeTheirCpuCopies CudaTensorDigestTest.ViewsAndDtypesOnTheDevice
  CudaTensorDigestTest.RecordOfADeviceTensor CudaTensorDigestTest.OneBatchForAStepEqualsThePerTensorPath
  CudaDigestTest.SquareSumsAreTheCpuDefinitionBitForBit CudaDigestTest.SquareSumsOfMisalignedOrUnmarkedBuffersAreRefused
  CudaTensorDigestTest.NormsAreTheCpuCopysBitForBit CudaDigestTest.KeptMemoryServesCallsOfEverySizeAndFromTwoThreads
  CudaCaptureDeviceTest.DigestsAndNormsAreTheCpusBits CudaCaptureDeviceTest.TheHostNeverWaitsForTheTrainingStream
  CudaCaptureDeviceTest.StepsLandInOrderAcrossSlots CudaStepRecorderTest.AsyncCaptureWritesTheSynchronousRecords
  CudaStepRecorderTest.RepeatedCapturesRecordWhatThePerTensorPathRecords"
sdpa_gpu_tests="AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCuda"
staging_gpu_tests="HostStagingCommunicatorCudaTest.CudaTensorsReachTheBackendOnlyInHostMemory"
probe_gpu_tests="ProbeCases.CudaTensorsAreDigestedOnTheDevice ProbeCases.CudaTensorsAreDigestedOnTheDeviceDeferred
  DeferredStepsTest.CudaListsLandWithTheDefinitionsBits"
cupti_gpu_tests="CuptiDiscoveryGpuTest.RecordsEachDeviceCountOnceAndTheFirstInit"
ctest_jobs=$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))

if want digest && needs digest cuda_digest_test digest_kernel_test cuda_capture_device_test step_recorder_test; then
  # gtest_discover_tests names each test Suite.Name: the suites of the digest test programs and of
  # the asynchronous capture (issue 47: its CUDA device, and the pipeline's ordering on threads);
  # the GPU ones are named, so that a selection of the CPU ones alone cannot pass.
  run_ctest digest ctest-digest.log "$digest_gpu_tests" \
    -R '^(CudaDigestTest|CudaTensorDigestTest|Xxh3PortTest|DigestKernelLogicTest|ChunkSquaresLogicTest|CudaCaptureDeviceTest|CapturePipelineTest|CudaStepRecorderTest)\.'
fi

if want digest_bandwidth && needs digest_bandwidth lockstep-bench; then
  rc=0
  # Only the benchmarks of this check: a bare "Cuda" also ran BM_CudaStepOverhead (the cost check's),
  # whose crash on the 2026-11-26 run took this check down with it. BM_CudaCapture (a step's
  # capture of many small and of a few large CUDA tensors, issue 38) and BM_CudaSquareSums (the
  # norms' kernel alone, since 2026-12-07) are recorded, not judged.
  bounded bench.log "$bin/lockstep-bench" --benchmark_filter='^BM_Cuda(Digest|MemcpyD2D|Capture|SquareSums)/' --benchmark_out="$out/cuda_bench.json" \
    --benchmark_out_format=json || rc=$?
  figures=$("$python" - "$out/cuda_bench.json" <<'PY' || true
import json, sys
doc = json.load(open(sys.argv[1]))
fig = {}
for b in doc["benchmarks"]:
    if b.get("error_occurred"):
        continue
    if b["name"].startswith("BM_CudaCapture"):
        size = {"list:0": "small", "list:1": "large", "list:2": "small_bf16"}.get(b["name"].split("/")[1], "other")
        fig[f"capture_{size}_x_copy"] = round(b["x_copy"], 3)
        fig[f"capture_{size}_x_per_tensor"] = round(b["x_per_tensor"], 2)
        fig[f"capture_{size}_us"] = round(b["capture_us"], 1)
        continue
    if b["name"].startswith("BM_CudaSquareSums"):
        mib = int(b["name"].split("bytes:")[1].split("/")[0]) >> 20
        fig[f"squares_gbps_{mib}mib"] = round(b["squares_gbps"], 1)
        fig[f"squares_x_copy_{mib}mib"] = round(b["x_copy"], 3)
        fig[f"squares_us_{mib}mib"] = round(b["squares_us"], 1)
        continue
    if not b["name"].startswith("BM_CudaDigest"):
        continue
    gib = int(b["name"].split("bytes:")[1].split("/")[0]) >> 30
    fig[f"x_copy_{gib}gib"] = round(b["x_copy"], 3)
    fig[f"digest_gbps_{gib}gib"] = round(b["bytes_per_second"] / 1e9, 1)
print(json.dumps(fig))
PY
)
  if [[ $rc -ne 0 || -z $figures ]]; then
    record digest_bandwidth failed "lockstep-bench failed; see out/gpu/bench.log"
  elif "$python" -c 'import json,sys; f=json.loads(sys.argv[1]); sys.exit(0 if f and all(v >= 0.8 for k, v in f.items() if k.startswith("x_copy")) else 1)' "$figures"; then
    record digest_bandwidth passed "x_copy >= 0.8 at 1 and 4 GiB" "$figures"
  else
    record digest_bandwidth failed "x_copy under 0.8 (target)" "$figures"
  fi
fi

# The per-step cost of the checks on the GPU, as ratios measured in this one call (the machine's
# speed cancels): lockstep's own checks on the default transformer, and the probe on a DDP step.
if want cost && needs cost lockstep lockstep-bench; then
  rm -rf "$out/cost"
  mkdir -p "$out/cost/profile"
  rc=0
  # After its timed steps, 5 steps of each trainer under the torch profiler (bench/torch_profile.h).
  LOCKSTEP_BENCH_PROFILE_DIR="$out/cost/profile" bounded cost-bench.log "$bin/lockstep-bench" \
    --benchmark_filter='^BM_CudaStepOverhead/' --benchmark_out="$out/cost/step_overhead.json" \
    --benchmark_out_format=json || rc=$?
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
  cost_ranks=$(( gpus < 1 ? 1 : (gpus > 4 ? 4 : gpus) ))
  # Bare under torchrun, then under lockstep exec (the probe), then under lockstep exec with the
  # probe's digests deferred to a side stream (LOCKSTEP_ASYNC_CAPTURE=1, probe/deferred_steps.h),
  # twice each, alternating; the first pair profiles 5 steps after its timed ones (rank 0's trace;
  # ci/gpu-ddp-step.py).
  for repeat in 1 2; do
    profile_none="" profile_probe=""
    [[ $repeat -eq 1 ]] && profile_none=$out/cost/profile/ddp-none.json profile_probe=$out/cost/profile/ddp-probe.json
    DDP_STEP_PROFILE=$profile_none bounded "cost-bare-$repeat.log" "$python" -m torch.distributed.run --standalone \
      --nproc-per-node "$cost_ranks" "$root/ci/gpu-ddp-step.py" || true
    DDP_STEP_PROFILE=$profile_probe bounded "cost-exec-$repeat.log" "$bin/lockstep" exec --ranks "$cost_ranks" \
      --launcher local --recorders none --name "ddp_step$repeat" --out "$out/cost/exec$repeat" \
      -- "$python" "$root/ci/gpu-ddp-step.py" || true
    LOCKSTEP_ASYNC_CAPTURE=1 bounded "cost-deferred-$repeat.log" "$bin/lockstep" exec --ranks "$cost_ranks" \
      --launcher local --recorders none --name "ddp_step_deferred$repeat" --out "$out/cost/deferred$repeat" \
      -- "$python" "$root/ci/gpu-ddp-step.py" || true
  done
  verdict=$("$python" - "$out" "$rc" "$root/ci/gpu-profile-breakdown.py" <<'PY'
import json, statistics, subprocess, sys
from pathlib import Path
out, bench_rc, breakdown = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
problems, figures, tests = [], {}, []
try:
    doc = json.loads((out / "cost/step_overhead.json").read_text())
    rows = [b for b in doc["benchmarks"] if b["name"].startswith("BM_CudaStepOverhead/default_transformer")]
    if not rows or rows[0].get("error_occurred"):
        problems.append("BM_CudaStepOverhead: " + (rows[0].get("error_message", "error") if rows else "did not run"))
    else:
        b = rows[0]
        tests.append(b["name"])
        figures["transformer_step_ms_none"] = round(b["step_ms"], 3)
        figures["transformer_step_ms_checks"] = round(b["checks_ms"], 3)
        figures["transformer_x_checks"] = round(1 + b["overhead_pct"] / 100, 3)
        figures["transformer_overhead_pct"] = round(b["overhead_pct"], 1)
        figures["transformer_direct_pct"] = round(b["direct_pct"], 1)
        figures["transformer_tensors"] = int(b["tensors"])
        if "async_overhead_pct" in b:
            # The same steps with lockstep-rank's asynchronous capture (LOCKSTEP_ASYNC_CAPTURE=1).
            figures["transformer_x_checks_async"] = round(1 + b["async_overhead_pct"] / 100, 3)
except (OSError, ValueError, KeyError) as e:
    problems.append(f"lockstep-bench (exit {bench_rc}) left no figures: {e}")

sys.path.insert(0, str(Path(breakdown).parent))
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
from gpu_ddp_runs import ddp_step, under_exec  # ci/gpu_ddp_runs.py

pairs, deferred_pairs = [], []
for repeat in (1, 2):
    bare = ddp_step(out / f"cost-bare-{repeat}.log")
    if bare is None:
        problems.append(f"bare run {repeat} printed no ddp-step line (see out/gpu/cost-bare-{repeat}.log)")
    under = under_exec(out / "cost" / f"exec{repeat}", f"exec{repeat}", f"cost-exec-{repeat}.log", problems, tests)
    deferred = under_exec(out / "cost" / f"deferred{repeat}", f"deferred{repeat}", f"cost-deferred-{repeat}.log",
                          problems, tests)
    if bare and under:
        pairs.append((bare, under))
    if bare and deferred:
        deferred_pairs.append((bare, deferred))
if pairs:
    figures["ddp_step_ms_bare"] = round(statistics.median(b["step_s"] for b, _ in pairs) * 1e3, 3)
    figures["ddp_step_ms_probe"] = round(statistics.median(u["step_s"] for _, u in pairs) * 1e3, 3)
    figures["ddp_x_probe"] = round(statistics.median(u["step_s"] / b["step_s"] for b, u in pairs), 3)
    figures["ddp_ranks"] = pairs[0][0]["world_size"]
    figures["ddp_parameters"] = pairs[0][0]["parameters"]
if deferred_pairs:
    figures["ddp_step_ms_probe_deferred"] = round(statistics.median(u["step_s"] for _, u in deferred_pairs) * 1e3, 3)
    figures["ddp_x_probe_deferred"] = round(statistics.median(u["step_s"] / b["step_s"] for b, u in deferred_pairs), 3)
# The same steps back to back, one synchronization at the end (ci/gpu-ddp-step.py's in_a_row_s):
# where the deferred digests can overlap the next steps.
for name, these in (("ddp_x_probe_in_a_row", pairs), ("ddp_x_probe_deferred_in_a_row", deferred_pairs)):
    ratios = [u["in_a_row_s"] / b["in_a_row_s"] for b, u in these if "in_a_row_s" in b and "in_a_row_s" in u]
    if ratios:
        figures[name] = round(statistics.median(ratios), 3)
if pairs and all("in_a_row_s" in b for b, _ in pairs):
    figures["ddp_in_a_row_ms_bare"] = round(statistics.median(b["in_a_row_s"] for b, _ in pairs) * 1e3, 3)
# The profiles: where the difference goes (ci/gpu-profile-breakdown.py; its tables go into
# docs/PERFORMANCE.md beside the ratios).
profile = out / "cost/profile"
for name, none, checks, tensors in (("transformer", "cuda-default_transformer-none.json",
                                     "cuda-default_transformer-checks.json", figures.get("transformer_tensors")),
                                    ("ddp", "ddp-none.json", "ddp-probe.json", None)):
    args = [sys.executable, breakdown, "--without", str(profile / none), "--with", str(profile / checks),
            "--name", name, "--json", str(profile / f"{name}.json"), "--markdown", str(profile / f"{name}.md")]
    if tensors:
        args += ["--tensors", str(tensors)]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        problems.append(f"profile {name}: " + (run.stderr.strip() or f"exit {run.returncode}")[:200])
        continue
    c = json.loads(run.stdout)
    tests.append(f"profile:{name}")
    figures[f"{name}_profile"] = {k: c[k] for k in ("step_diff_us", "lockstep_us", "parts_us", "elsewhere_us",
                                                  "calls_per_step") if k in c}
print(json.dumps({"problems": problems, "figures": figures, "tests": tests}))
PY
) || verdict='{"problems": ["could not read the cost runs in out/gpu/cost"], "figures": {}, "tests": []}'
  read_verdict "$verdict"
  if [[ -z $problems ]]; then
    record cost passed "measured: the default checks on the CUDA transformer and the probe on a CUDA DDP step ($cost_ranks rank(s)), as ratios" "$figures" "$(verdict_field "$verdict" tests)"
  else
    record cost failed "$problems; see out/gpu/cost-*.log and out/gpu/cost" "$figures" "$(verdict_field "$verdict" tests)"
  fi
fi


# The probe check (the longest, about 4 minutes on 16 cores, mostly Python ranks on the CPU) runs
# in the background after the sdpa and nccl checks, beside the checks after them, once the cost
# check has measured alone:
# in a row they did not fit one call of a lent machine (2026-11-27: the probe was cut after 42 s).
# It records its own row when it ends; the docs are written after it.
probe_check() {
  # Built only when this machine's python3 imports the torch whose LibTorch the build links
  # (probe/CMakeLists.txt); its test programs exist only then, and configure said why not.
  why=$(grep -o "the Python probe is not built: .*" "$out/configure.log" | head -n 1 || true)
  if [[ -n $why ]]; then record probe failed "$why"
  elif needs probe lockstep probe_catalog_test example_catalog_exec_test; then
    # The MPI examples need an mpi4py built for Open MPI (the MPI of the carried mpirun); with
    # another they skip, and a skip fails a check here, so they are left out, and said so.
    # The pip-install tests build the package anew with pip and scikit-build-core (minutes each,
    # and the machine has no network for a missing build backend): they prove the install route,
    # not the GPU, and run in CI (probe/tests/pip_install_test.sh); left out here, and said so.
    left_out='probe_pip_install.*'
    echo "ci/gpu-checks.sh: probe: the pip-install tests are left out (CI runs them)"
    if ! "$python" -c 'import mpi4py, sys; mpi4py.rc.initialize = False; from mpi4py import MPI; sys.exit("Open MPI" not in MPI.Get_library_version())' >/dev/null 2>&1; then
      echo "ci/gpu-checks.sh: probe: this python's mpi4py is missing or not Open MPI's: the MPI examples are left out"
      left_out="$left_out|ExampleCatalogExec\.(CleanMpiDdp|SplitInForwardMpi)"
    fi
    # Each test runs 2-4 Python ranks, mostly waiting on one another; beside the other checks, one
    # test per 2 cores. Each example once (LOCKSTEP_SOAK unset): their repeats (3-5, a clean
    # verdict's stability) need more than the check's limit here (the third run, with repeats,
    # finished 21 of 59 tests in 240 s on 16 cores) and run in the soak tier on the CPU machines;
    # one run of each shows the probe works with this machine's toolchain, torch and CUDA.
    probe_jobs=$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))
    LOCKSTEP_SOAK=0 run_ctest probe ctest-probe.log "$probe_gpu_tests" -L probe -j "$probe_jobs" -E "^($left_out)\$"
  fi
}

if want sdpa && needs sdpa models_test; then
  # The CUDA attention test (flash and SDPA against float64 naive attention, fp32 and bf16, forward
  # and backward on the device) is the point of the check; the CPU ones run beside it.
  run_ctest sdpa ctest-sdpa.log "$sdpa_gpu_tests" -R '^(SdpaAttention|AttentionPaths)\.'
fi

if want nccl && needs nccl comm_nccl_test; then
  # np 2 needs two GPUs (NCCL takes no two ranks on one); on one GPU it would only skip.
  nccl_np='^comm_nccl_test\.np1$' nccl_required=comm_nccl_test.np1
  if [[ $(nvidia-smi -L | grep -c '^GPU ' || true) -ge 2 ]]; then
    nccl_np='^comm_nccl_test\.np[12]$' nccl_required="comm_nccl_test.np1 comm_nccl_test.np2"
  fi
  # -V output lets the judge see gtest's [  SKIPPED ] under mpirun (ctest counts it as passed).
  run_ctest nccl ctest-nccl.log "$nccl_required" -R "$nccl_np"
fi

probe_pid=""
# Started after sdpa and nccl: beside the probe's 8 jobs of Python ranks, the CPU attention tests
# (torch on every core) took 134 s instead of 5 and the check ran past its limit (2026-11-28).
if want probe; then
  # Its limit is what the deadline leaves, not --check-timeout: it ends with the others anyway
  # (about 280 s of 8 jobs for the 63 tests, by the 2026-11-27 run's 36 job-seconds a test).
  (
    status=0
    check_clock=$(date +%s)
    [[ -n $deadline_at ]] && check_timeout=$(( deadline_at - check_clock ))
    probe_check
    exit $status
  ) &
  probe_pid=$!
fi

if want suite && needs suite lockstep lockstep-rank comm_test; then
  # First the decorator that carries CUDA tensors over gloo and mpi, on its own: a failure there
  # explains a failing gloo suite.
  ctest_selection ctest-staging.log "$staging_gpu_tests" -R '^HostStagingCommunicatorCudaTest\.'
  staging="staging: $(verdict_field "$ctest_verdict" detail)"
  rc=0
  [[ $(verdict_field "$ctest_verdict" outcome) == passed ]] || rc=1
  rm -rf "$out/suite-gloo" "$out/suite-nccl"
  bounded suite.log "$root/ci/gpu-suite.sh" --bin "$bin" --out "$out" || rc=$?
  # What ran, from the reports: each backend must have run (and passed) at least one scenario, and
  # the GPUs each needs are said (gloo: its ranks share the GPUs; nccl: one GPU per rank).
  verdict=$("$python" - "$out" "$root/scenarios/clean" <<'PY'
import json, sys
from pathlib import Path
out, clean = Path(sys.argv[1]), Path(sys.argv[2])
expected = len([f for f in clean.rglob("*.yaml") if f.name != "lockstep.defaults.yaml"])
problems, figures, tests = [], {}, []
for backend in ("gloo", "nccl"):
    report = out / f"suite-{backend}" / "report.json"
    if not report.exists():
        problems.append(f"{backend}: no report.json (nothing ran)")
        continue
    scenarios = json.loads(report.read_text()).get("scenarios", [])
    passed = [s for s in scenarios if s.get("outcome") == "pass"]
    figures[f"{backend}_ran"] = len(scenarios)
    figures[f"{backend}_passed"] = len(passed)
    figures[f"{backend}_gpus_needed"] = 1 if backend == "gloo" else max((s.get("ranks", 0) for s in scenarios), default=0)
    tests += [f"{backend}:{s.get('id')}@{s.get('ranks')}" for s in scenarios]
    if not scenarios:
        problems.append(f"{backend}: no scenario ran")
    if len(passed) != len(scenarios):
        problems.append(f"{backend}: {len(scenarios) - len(passed)} of {len(scenarios)} failed: "
                        + ", ".join(f"{s.get('id')} ({s.get('outcome')})" for s in scenarios if s.get("outcome") != "pass"))
if figures.get("gloo_ran", 0) != expected:
    problems.append(f"gloo ran {figures.get('gloo_ran', 0)} of the {expected} clean scenarios")
print(json.dumps({"problems": problems, "figures": figures, "tests": tests}))
PY
) || verdict='{"problems": ["could not read out/gpu/suite-*/report.json"], "figures": {}, "tests": []}'
  read_verdict "$verdict"
  detail=$(grep -E "^ci/gpu-suite.sh: .*(GPU|leaving out|exit)" "$out/suite.log" | tr '\n' ' ' | cut -c1-500)
  if [[ $rc -eq 0 && -z $problems ]]; then record suite passed "$staging; $detail" "$figures" "$(verdict_field "$verdict" tests)"
  else record suite failed "exit $rc: $staging; ${problems:+$problems; }$detail; see out/gpu/suite.log and ctest-staging.log" "$figures" "$(verdict_field "$verdict" tests)"; fi
fi

# The CUPTI recorder is quiet on clean runs (the top rule: never cry wolf): loaded by the driver
# into each rank of clean programs, the CPU examples (no cuInit: it never loads, and nothing
# changes) and a CUDA one (cuda_weight_edit.py: its findings are replica_weights at step 2 and
# finite at step 3, and none may be discovery_count; device counts after start-up are queries,
# allowed). Its figures: the cuda.* calls per rank, to hold against the program.
if want cupti; then
  cupti_lib=$build_dir/lib/liblockstep_cupti.so
  if [[ ! -f $cupti_lib ]]; then record cupti failed "liblockstep_cupti.so was not built (CUPTI not found? see out/gpu/configure.log)"
  elif needs cupti lockstep cupti_discovery_gpu_test; then
    rc=0
    ctest_selection ctest-cupti.log "$cupti_gpu_tests" -R '^CuptiDiscoveryGpuTest\.'
    cupti_detail="gpu test: $(verdict_field "$ctest_verdict" detail)"
    [[ $(verdict_field "$ctest_verdict" outcome) == passed ]] || rc=1
    rm -rf "$out/cupti"
    for prog in examples/clean_ddp_adamw.py examples/clean_manual_allreduce.py probe/tests/programs/cuda_weight_edit.py; do
      name=$(basename "$prog" .py)
      # The exit status is the program's findings (cuda_weight_edit has two); report.json is read below.
      bounded "cupti-exec-$name.log" "$bin/lockstep" exec --ranks 3 --recorders cuda \
        --launcher local --out "$out/cupti/$name" -- "$python" "$root/$prog" || true
    done
    verdict=$("$python" - "$out/cupti" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
problems, figures = [], {}
for run in sorted(p for p in out.iterdir() if p.is_dir()):
    report = run / "report.json"
    if not report.exists():
        problems.append(f"{run.name}: no report.json")
        continue
    for scenario in json.loads(report.read_text()).get("scenarios", []):
        for f in scenario.get("findings", []):
            if f.get("checker") == "discovery_count":
                problems.append(f"{run.name}: discovery_count finding: {f.get('message', '')[:200]}")
    for log in run.glob("*/logs/rank-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("lockstep cupti:"):
                problems.append(f"{run.name}/{log.name}: {line}")
    for trace in sorted(run.glob("*/traces/rank-*.trace")):
        calls = {"cuda.init": 0, "cuda.device_count": 0}
        later_counts = 0
        for line in trace.read_text(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "discovery" and str(r.get("name", "")).startswith("cuda."):
                calls[r["name"]] = calls.get(r["name"], 0) + 1
                # A device count is a query (docs/CHECKERS.md#discovery_count): allowed at any step
                # (cuBLAS asks at the first matmul), counted as a figure. cuInit runs once.
                if r["name"] == "cuda.device_count" and r.get("phase") != "startup":
                    later_counts += 1
        if calls["cuda.init"] > 1:
            problems.append(f"{run.name}/{trace.name}: {calls['cuda.init']} cuda.init records, expected at most 1")
        rank = trace.stem.split("-")[-1]
        figures[f"{run.name}_rank{rank}_cuda_device_count_after_startup"] = later_counts
        figures[f"{run.name}_rank{rank}_cuda_init"] = calls["cuda.init"]
        figures[f"{run.name}_rank{rank}_cuda_device_count"] = calls["cuda.device_count"]
        if run.name == "cuda_weight_edit" and calls["cuda.init"] != 1:
            problems.append(f"{run.name}/{trace.name}: {calls['cuda.init']} cuda.init records, expected 1 (did the driver load the recorder?)")
print(json.dumps({"problems": problems, "figures": figures}))
PY
) || verdict='{"problems": ["could not read the runs in out/gpu/cupti"], "figures": {}}'
    read_verdict "$verdict"
    if [[ $rc -eq 0 && -z $problems ]]; then record cupti passed "$cupti_detail; clean programs quiet under the recorder" "$figures"
    else record cupti failed "$cupti_detail; ${problems:-ctest failed}; see out/gpu/ctest-cupti.log, cupti-exec-*.log, out/gpu/cupti" "$figures"; fi
  fi
fi

# NCCL's own view of the collectives (the profiler plugin), checked against what the probe saw of
# the same program, and its cost: the program's timed all-reduce loop with the plugin loaded
# against the same loop without it, in the same call (a ratio, not a time).
if want nccl_plugin; then
  plugin_lib=$build_dir/lib/liblockstep_nccl_profiler.so
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
  plugin_ranks=$(( gpus < 1 ? 1 : (gpus > 4 ? 4 : gpus) ))
  if [[ ! -f $plugin_lib ]]; then record nccl_plugin failed "liblockstep_nccl_profiler.so was not built (see out/gpu/build.log)"
  elif needs nccl_plugin lockstep; then
    rm -rf "$out/nccl_plugin"
    # Twice each, alternating, so that a warm-up effect does not land on one side only.
    for repeat in 1 2; do
      for recorders in none nccl; do
        bounded "nccl-plugin-$recorders-$repeat.log" "$bin/lockstep" exec --ranks "$plugin_ranks" --launcher local \
          --recorders "$recorders" --name "nccl_$recorders$repeat" --out "$out/nccl_plugin/$recorders$repeat" \
          -- "$python" "$root/ci/gpu-nccl-program.py" || true
      done
    done
    verdict=$("$python" - "$out/nccl_plugin" "$plugin_ranks" <<'PY'
import json, statistics, sys
from pathlib import Path
out, world = Path(sys.argv[1]), int(sys.argv[2])
problems, figures, loop = [], {}, {"none": [], "nccl": []}
for run in sorted(p for p in out.iterdir() if p.is_dir()):
    side = "nccl" if run.name.startswith("nccl") else "none"
    report = run / "report.json"
    if not report.exists():
        problems.append(f"{run.name}: no report.json")
        continue
    for scenario in json.loads(report.read_text()).get("scenarios", []):
        if scenario.get("outcome") != "pass":
            problems.append(f"{run.name}: outcome {scenario.get('outcome')}: "
                            + "; ".join(f.get("message", "")[:160] for f in scenario.get("findings", [])))
    for log in run.glob("*/logs/rank-0.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("nccl-check "):
                loop[side].append(json.loads(line[len("nccl-check "):])["allreduce_s"])
            if line.startswith("lockstep nccl profiler:"):
                problems.append(f"{run.name}/{log.name}: {line}")
    if side != "nccl":
        continue
    for trace in sorted(run.glob("*/traces/rank-*.trace")):
        rank = trace.stem.split("-")[-1]
        inits, probe_ar, nccl_ar, open_nccl = 0, [], [], {}
        for line in trace.read_text(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            kind = r.get("type")
            if kind == "discovery" and r.get("name") == "nccl.comm_init":
                inits += 1
                if r.get("phase") != "startup":
                    problems.append(f"{run.name}/{trace.name}: nccl.comm_init in phase {r.get('phase')} at step {r.get('step')}")
            elif kind == "collective_begin":
                group = str(r.get("group", ""))
                key = (r.get("op"), r.get("count"), r.get("dtype"))
                if group.startswith("nccl:"):
                    open_nccl[(group, r.get("seq"))] = True
                    if r.get("op") == "all_reduce":
                        nccl_ar.append(key)
                elif group == "world" and r.get("op") == "all_reduce":
                    probe_ar.append(key)
            elif kind == "collective_end" and str(r.get("group", "")).startswith("nccl:"):
                open_nccl.pop((r.get("group"), r.get("seq")), None)
        if inits == 0:
            problems.append(f"{run.name}/{trace.name}: no nccl.comm_init (did NCCL load the plugin?)")
        if world == 1 and not nccl_ar:
            # NCCL runs a one-rank collective as a local copy (ncclLaunchOneRank), before any task
            # is planned: no profiler event. Not a loss of the plugin; the match needs 2 GPUs.
            figures["one_rank_all_reduces_unprofiled"] = len(probe_ar)
        elif nccl_ar != probe_ar:
            problems.append(f"{run.name}/{trace.name}: NCCL saw {len(nccl_ar)} all-reduces, the probe {len(probe_ar)}"
                            + ("" if len(nccl_ar) != len(probe_ar) else " (same number, different op/count/dtype)"))
        if open_nccl:
            problems.append(f"{run.name}/{trace.name}: {len(open_nccl)} NCCL collectives never ended")
        figures[f"rank{rank}_nccl_comm_init"] = inits
        figures[f"rank{rank}_nccl_all_reduces"] = len(nccl_ar)
if loop["none"] and loop["nccl"]:
    figures["loop_s_without_plugin"] = round(statistics.median(loop["none"]), 4)
    figures["loop_s_with_plugin"] = round(statistics.median(loop["nccl"]), 4)
    figures["x_without_plugin"] = round(statistics.median(loop["nccl"]) / statistics.median(loop["none"]), 3)
else:
    problems.append("no timed loop printed (see the rank-0 logs)")
print(json.dumps({"problems": problems, "figures": figures}))
PY
) || verdict='{"problems": ["could not read the runs in out/gpu/nccl_plugin"], "figures": {}}'
    read_verdict "$verdict"
    nccl_plugin_detail="$plugin_ranks rank(s): NCCL's all-reduces match the probe's, comm_init at start-up"
    if [[ $plugin_ranks -eq 1 ]]; then
      nccl_plugin_detail="1 rank (1 GPU): NCCL loaded the plugin (nccl.comm_init at start-up, no plugin error) and the timed loop ran under it; NCCL runs a one-rank all-reduce as a local copy that reaches no profiler (ncclLaunchOneRank), so matching NCCL's all-reduces to the probe's needs 2 GPUs"
    fi
    if [[ -z $problems ]]; then record nccl_plugin passed "$nccl_plugin_detail" "$figures"
    else record nccl_plugin failed "$problems; see out/gpu/nccl-plugin-*.log and out/gpu/nccl_plugin" "$figures"; fi
  fi
fi

if want selftest && needs selftest lockstep lockstep-rank; then
  # The catalog as `lockstep selftest` reads it: scenarios/inject and its sub-folders, every *.yaml
  # but the defaults files. nccl takes one GPU per rank: the catalog's largest world decides
  # whether it can run here (a rank count left to a defaults file counts too).
  catalog=$root/scenarios/inject
  mapfile -t catalog_files < <(find "$catalog" -name '*.yaml' ! -name lockstep.defaults.yaml | sort)
  catalog_ranks=0
  for f in "${catalog_files[@]}"; do
    r=$(awk '/^ranks:/{print $2; exit}' "$f")
    [[ -z $r && -f $(dirname "$f")/lockstep.defaults.yaml ]] && r=$(awk '/^ranks:/{print $2; exit}' "$(dirname "$f")/lockstep.defaults.yaml")
    [[ ${r:-0} -gt $catalog_ranks ]] && catalog_ranks=$r
  done
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
  backends=(gloo)
  [[ $gpus -ge $catalog_ranks ]] && backends+=(nccl)
  rc=0 detail=""
  [[ ${#catalog_files[@]} -gt 0 ]] || { rc=3; detail="no injection scenario under $catalog; "; }
  # One selftest per sub-folder of the catalog, side by side (16 cores; the GPU shared): a folder
  # holds a hang injection that takes its hang timeout, so in a row they would not fit a lent
  # machine's call. The clean scenarios run once, with the first folder.
  mapfile -t parts < <(find "$catalog" -mindepth 1 -maxdepth 1 -type d | sort)
  [[ ${#parts[@]} -gt 0 ]] || parts=("$catalog")
  for backend in "${backends[@]}"; do
    pids=() i=0
    for part in "${parts[@]}"; do
      repeats=0; [[ $i -eq 0 ]] && repeats=1
      name=$(basename "$part")
      rm -rf "$out/selftest-$backend-$name"
      bounded "selftest-$backend-$name.log" "$bin/lockstep" selftest "$part" --clean "$root/scenarios/clean" \
        --launcher local --backend "$backend" --device cuda --repeats "$repeats" --out "$out/selftest-$backend-$name" &
      pids+=($!); i=$((i + 1))
    done
    i=0
    for part in "${parts[@]}"; do
      brc=0; wait "${pids[$i]}" || brc=$?
      name=$(basename "$part")
      detail="$detail$backend/$name: exit $brc; "
      [[ $brc -eq 0 ]] || rc=$brc
      i=$((i + 1))
    done
  done
  verdict=$("$python" - "$out" "${#catalog_files[@]}" "${backends[@]}" <<'PY'
import json, sys
from pathlib import Path
out, expected, backends = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
problems, figures, tests = [], {}, []
for backend in backends:
    inject = clean = fp = 0
    for report in sorted(out.glob(f"selftest-{backend}-*/report.json")):
        for s in json.loads(report.read_text()).get("scenarios", []):
            sid = str(s.get("id", ""))
            if "#" in sid:
                clean += 1
                if s.get("outcome") != "pass":
                    fp += 1
            else:
                inject += 1
                tests.append(f"{backend}:{sid}")
    figures[f"{backend}_injections_judged"] = inject
    figures[f"{backend}_clean_runs"] = clean
    figures[f"{backend}_false_positives"] = fp
    if inject != expected:
        problems.append(f"{backend}: {inject} of the catalog's {expected} injections judged")
    if clean == 0:
        problems.append(f"{backend}: no clean run")
print(json.dumps({"problems": problems, "figures": figures, "tests": tests}))
PY
) || verdict='{"problems": ["could not read out/gpu/selftest-*/report.json"], "figures": {}, "tests": []}'
  read_verdict "$verdict"
  [[ " ${backends[*]} " == *" nccl "* ]] || detail="${detail}nccl not run: the catalog needs $catalog_ranks GPUs (one per rank), this machine has $gpus; "
  if [[ $rc -eq 0 && -z $problems ]]; then record selftest passed "$detail" "$figures" "$(verdict_field "$verdict" tests)"
  else record selftest failed "$detail${problems:+$problems; }see out/gpu/selftest-*.log and their detection.md" "$figures" "$(verdict_field "$verdict" tests)"; fi
fi

if [[ -n $probe_pid ]]; then
  wait "$probe_pid" || status=1
fi

# The probe on a realistic model (issue 47's ">= 300M parameters, a step of >= 100 ms"): the
# GPT-like model of ci/gpu-ddp-step.py (DDP_STEP_MODEL=gpt), bare under torchrun, under `lockstep
# exec` and under it with the digests deferred (LOCKSTEP_ASYNC_CAPTURE=1), once each. Last and
# alone, as the cost check measures: its runs are the longest, and whatever ran out of time before
# it has its figures already.
if want cost_large && needs cost_large lockstep; then
  rm -rf "$out/cost_large"
  mkdir -p "$out/cost_large"
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
  cost_ranks=$(( gpus < 1 ? 1 : (gpus > 4 ? 4 : gpus) ))
  gpt_env=(DDP_STEP_MODEL=gpt DDP_STEP_WARMUP=2 DDP_STEP_STEPS=8)
  bounded cost-large-bare.log env "${gpt_env[@]}" "$python" -m torch.distributed.run --standalone \
    --nproc-per-node "$cost_ranks" "$root/ci/gpu-ddp-step.py" || true
  bounded cost-large-exec.log env "${gpt_env[@]}" "$bin/lockstep" exec --ranks "$cost_ranks" \
    --launcher local --recorders none --name gpt_step --out "$out/cost_large/exec" \
    -- "$python" "$root/ci/gpu-ddp-step.py" || true
  bounded cost-large-deferred.log env LOCKSTEP_ASYNC_CAPTURE=1 "${gpt_env[@]}" "$bin/lockstep" exec \
    --ranks "$cost_ranks" --launcher local --recorders none --name gpt_step_deferred --out "$out/cost_large/deferred" \
    -- "$python" "$root/ci/gpu-ddp-step.py" || true
  verdict=$("$python" - "$out" "$root/ci" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
sys.path.insert(0, sys.argv[2])
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
from gpu_ddp_runs import ddp_step, under_exec  # ci/gpu_ddp_runs.py
problems, figures, tests = [], {}, []
bare = ddp_step(out / "cost-large-bare.log")
if bare is None:
    problems.append("the bare run printed no ddp-step line (see out/gpu/cost-large-bare.log)")
runs = (("gpt_x_probe", under_exec(out / "cost_large/exec", "exec", "cost-large-exec.log", problems, tests)),
        ("gpt_x_probe_deferred", under_exec(out / "cost_large/deferred", "deferred", "cost-large-deferred.log",
                                            problems, tests)))
if bare:
    figures["gpt_parameters"] = bare["parameters"]
    figures["gpt_ranks"] = bare["world_size"]
    figures["gpt_step_ms_bare"] = round(bare["step_s"] * 1e3, 3)
    for name, under in runs:
        if under:
            figures[name] = round(under["step_s"] / bare["step_s"], 3)
            figures[name + "_in_a_row"] = round(under["in_a_row_s"] / bare["in_a_row_s"], 3)
print(json.dumps({"problems": problems, "figures": figures, "tests": tests}))
PY
) || verdict='{"problems": ["could not read the runs in out/gpu/cost_large"], "figures": {}, "tests": []}'
  read_verdict "$verdict"
  if [[ -z $problems ]]; then
    record cost_large passed "measured: the probe on a GPT-like model of ci/gpu-ddp-step.py ($cost_ranks rank(s)), as ratios" "$figures" "$(verdict_field "$verdict" tests)"
  else
    record cost_large failed "$problems; see out/gpu/cost-large-*.log and out/gpu/cost_large" "$figures" "$(verdict_field "$verdict" tests)"
  fi
fi

nccl_version=$(awk '/^-- lockstep: /{for(i=1;i<=NF;i++) if($i=="NCCL") print $(i+1)}' "$out/configure.log" | tr -d ',')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
if [[ $write_doc -eq 1 ]]; then
  "$python" - "$root" "$results" "$started" "$gpu" "$driver" "$torch_version" "$torch_cuda" "${nccl_version:-none}" "$(hostname)" <<'PY'
import json, re, sys
from pathlib import Path
root, results, started, gpu, driver, torch_v, cuda_v, nccl_v, host = sys.argv[1:10]
rows = [json.loads(l) for l in Path(results).read_text().splitlines() if l.strip()]
machine = {"gpu": gpu, "driver": driver, "torch": torch_v, "cuda": cuda_v, "nccl": nccl_v, "host": host}
summary = {"schema": "lockstep.gpu-results/1", "date": started, "machine": machine,
           "checks": {r["check"]: {"outcome": r["outcome"], "detail": r["detail"], "figures": r["figures"],
                                   "ran": r.get("tests", []), "seconds": r.get("seconds"), "at": r.get("at")}
                      for r in rows}}
(Path(root) / "docs/gpu-results.json").write_text(json.dumps(summary, indent=2) + "\n")
lines = [f"Run on {started} on {gpu}; driver {driver}; torch {torch_v} (CUDA {cuda_v}); NCCL {nccl_v}.", "",
         "| check | outcome | ran | s | at | detail | figures |", "|---|---|---|---|---|---|---|"]
for r in rows:
    figs = ", ".join(f"{k} {v}" for k, v in r["figures"].items())
    ran = len(r.get("tests", []))
    lines.append(f"| {r['check']} | {r['outcome']} | {ran} | {r.get('seconds', '')} | {r.get('at', '')} | "
                 f"{r['detail'].replace('|', '/')} | {figs} |")
block = ("<!-- gpu-checks results: written by ci/gpu-checks.sh, do not edit by hand -->\n" + "\n".join(lines)
         + "\n<!-- end gpu-checks results -->")
doc = Path(root) / "docs/GPU.md"
text = doc.read_text() if doc.exists() else "# GPU checks\n"
pattern = re.compile(r"<!-- gpu-checks results.*?<!-- end gpu-checks results -->", re.S)
text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
doc.write_text(text)

# docs/PERFORMANCE.md's GPU paragraph, from the cost check's figures (left as it is without them).
cost = next((r for r in rows if r["check"] == "cost"), None)
f = cost["figures"] if cost else {}
perf = Path(root) / "docs/PERFORMANCE.md"
if perf.exists() and "transformer_x_checks" in f:
    ddp = (f"A CUDA DDP step ({f['ddp_parameters'] / 1e6:.1f}M-parameter MLP, AdamW, NCCL, {f['ddp_ranks']} rank(s)) "
           f"took {f['ddp_step_ms_bare']} ms bare under torchrun and {f['ddp_step_ms_probe']} ms under "
           f"`lockstep exec` (the probe): **x{f['ddp_x_probe']}**."
           if "ddp_x_probe" in f else "The CUDA DDP program gave no figure (see docs/gpu-results.json).")
    if "ddp_x_probe_deferred" in f:
        ddp += (f" With the probe's digests deferred to a side stream (`LOCKSTEP_ASYNC_CAPTURE=1`): "
                f"{f['ddp_step_ms_probe_deferred']} ms, **x{f['ddp_x_probe_deferred']}**.")
    if "ddp_x_probe_in_a_row" in f:
        ddp += (f" The same steps back to back, one synchronization at the end ({f.get('ddp_in_a_row_ms_bare')} ms a "
                f"step bare): **x{f['ddp_x_probe_in_a_row']}** under the probe"
                + (f", **x{f['ddp_x_probe_deferred_in_a_row']}** deferred" if "ddp_x_probe_deferred_in_a_row" in f
                   else "") + ".")
    large = next((r["figures"] for r in rows if r["check"] == "cost_large"), {})
    if "gpt_x_probe" in large:
        g = large
        ddp += (f" A realistic model (check `cost_large`: ci/gpu-ddp-step.py's GPT-like model, "
                f"{g['gpt_parameters'] / 1e6:.0f}M parameters, {g['gpt_ranks']} rank(s), {g['gpt_step_ms_bare']} ms a "
                f"step bare): **x{g['gpt_x_probe']}** under the probe (x{g['gpt_x_probe_in_a_row']} back to back)"
                + (f", **x{g['gpt_x_probe_deferred']}** deferred (x{g['gpt_x_probe_deferred_in_a_row']} back to back)"
                   if "gpt_x_probe_deferred" in g else "") + ".")
    para = (f"Measured on {started} on {gpu} (torch {torch_v}, CUDA {cuda_v}), one call of `ci/gpu-checks.sh`, "
            f"check `cost`, both sides in the same call. The default transformer on CUDA "
            f"({f['transformer_tensors']} tensors, 1 rank, `BM_CudaStepOverhead`, paired step by step): "
            f"{f['transformer_step_ms_none']} ms a step without checks, {f['transformer_step_ms_checks']} ms "
            f"with the default checks: **x{f['transformer_x_checks']}** (overhead {f['transformer_overhead_pct']}%, "
            f"the check sections timed directly {f['transformer_direct_pct']}%)"
            + (f"; with the asynchronous capture (`LOCKSTEP_ASYNC_CAPTURE=1`) **x{f['transformer_x_checks_async']}**"
               if "transformer_x_checks_async" in f else "") + ". " + ddp)
    # The profiles' tables (check cost, ci/gpu-profile-breakdown.py): where the difference goes.
    tables = [p.read_text() for p in (Path(results).parent / "cost/profile" / f"{n}.md" for n in ("transformer", "ddp"))
              if p.exists()]
    if tables:
        para += ("\n\nWhere the difference goes, from 5 steps of each side under the torch profiler "
                 "(`ci/gpu-profile-breakdown.py`; lockstep's work is in its `lockstep.*` ranges):\n\n"
                 + "\n".join(tables).rstrip("\n"))
    block = ("<!-- gpu-cost: written by ci/gpu-checks.sh (check cost), do not edit by hand -->\n" + para
             + "\n<!-- end gpu-cost -->")
    ptext = perf.read_text()
    pat = re.compile(r"<!-- gpu-cost.*?<!-- end gpu-cost -->", re.S)
    if pat.search(ptext):
        perf.write_text(pat.sub(lambda _: block, ptext))
PY
  echo "ci/gpu-checks.sh: results written to docs/GPU.md and docs/gpu-results.json"
fi
cat "$results"
exit $status
