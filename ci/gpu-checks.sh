#!/usr/bin/env bash
# Every GPU check in one command, on a machine with an NVIDIA GPU, the CUDA toolkit and a pip
# torch built with CUDA (docs/GPU.md):
#   ci/gpu-checks.sh [--build-dir DIR] [--no-doc]
# 1. configures DIR (default build-gpu) against the pip wheel's LibTorch:
#      -DTorch_DIR=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')/Torch
#    and builds the GPU tests and lockstep-bench;
# 2. runs the tests labelled gpu (the CUDA digest against the CPU digest on random buffers of odd
#    sizes, aligned and not; CUDA tensors through DigestTensor), the NCCL communicator test
#    (np 1 and 2; np 2 needs two GPUs and skips otherwise) and the CPU-side test of the kernel's
#    logic;
# 3. runs the GPU digest benchmark against a device-to-device copy (1 and 4 GiB);
# 4. writes the results, with the date and the machine, into docs/GPU.md (between the
#    "gpu-checks results" markers) unless --no-doc. Logs and JSON stay in out/gpu/.
# Exit status: 0 when every check passed, 1 when one failed, 2 on a usage error, 3 when the
# machine cannot run the checks (no GPU, no CUDA torch) or the build failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build-gpu
write_doc=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --no-doc) write_doc=0; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "ci/gpu-checks.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build_dir=$(realpath -m "$build_dir")
out=$root/out/gpu
mkdir -p "$out"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1

fail() { echo "ci/gpu-checks.sh: $*" >&2; exit 3; }
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this machine has no NVIDIA driver"
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1) ||
  fail "nvidia-smi sees no GPU"
torch_info=$(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.compiled_with_cxx11_abi())') ||
  fail "python3 has no torch (pip install torch with CUDA)"
read -r torch_version torch_cuda torch_sees_gpu torch_abi <<<"$torch_info"
[[ $torch_cuda != None ]] || fail "torch $torch_version is a CPU build"
[[ $torch_sees_gpu == True ]] || fail "torch $torch_version does not see the GPU"
# Debian's yaml-cpp, gtest and benchmark use the C++11 string ABI; a wheel built with the old one
# cannot link against them.
[[ $torch_abi == True ]] || fail "torch $torch_version was built with the pre-C++11 string ABI; use a wheel with the new ABI (torch >= 2.7)"
torch_dir=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch

"$root/ci/install-deps.sh"
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTorch_DIR="$torch_dir" \
  -DLOCKSTEP_ENABLE_CUDA=ON -DLOCKSTEP_BUILD_BENCH=ON >"$out/configure.log" 2>&1 ||
  { tail -n 30 "$out/configure.log" >&2; fail "configure failed (see $out/configure.log)"; }
grep -q "CUDA none" "$out/configure.log" && fail "CMake found no CUDA toolkit (see $out/configure.log)"
targets=(cuda_digest_test cuda_tensor_digest_test digest_kernel_test lockstep-bench)
grep -q "NCCL none" "$out/configure.log" || targets+=(comm_nccl_test)
if ! cmake --build "$build_dir" --target "${targets[@]}" --parallel "${LOCKSTEP_JOBS:-$(nproc)}" >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  fail "build failed (see $out/build.log)"
fi

status=0
# -L gpu: every test labelled gpu; -R: the NCCL communicator and the CPU-side kernel logic.
ctest --test-dir "$build_dir" -L gpu --output-on-failure 2>&1 | tee "$out/ctest-gpu.log" || status=1
ctest --test-dir "$build_dir" -R 'comm_nccl_test|^(Xxh3PortTest|DigestKernelLogicTest)\.' --output-on-failure 2>&1 |
  tee "$out/ctest-nccl.log" || status=1
"$build_dir/bin/lockstep-bench" --benchmark_filter=Cuda --benchmark_out="$out/cuda_bench.json" \
  --benchmark_out_format=json 2>&1 | tee "$out/bench.log" || status=1

summary=$(python3 - "$out" <<'PY'
import json, re, sys
from pathlib import Path
out = Path(sys.argv[1])
lines = []
for log in ("ctest-gpu.log", "ctest-nccl.log"):
    text = (out / log).read_text()
    m = re.search(r"\d+% tests passed, \d+ tests failed out of \d+", text)
    lines.append(f"- `{log}`: {m.group(0) if m else 'no ctest summary (see the log)'}")
    skipped = [l.strip() for l in text.splitlines() if "Skipped" in l or "***Not Run" in l]
    lines += [f"  - {s}" for s in skipped]
try:
    doc = json.loads((out / "cuda_bench.json").read_text())
    lines += ["", "| benchmark | time (ms) | GB/s | x_copy | x_copy_traffic |", "|---|---|---|---|---|"]
    for b in doc["benchmarks"]:
        if b.get("error_occurred"):
            lines.append(f"| {b['name']} | error: {b.get('error_message', '?')} | | | |")
            continue
        gbps = b.get("bytes_per_second", 0) / 1e9
        lines.append(f"| {b['name']} | {b['real_time']:.3f} | {gbps:.1f} | {b.get('x_copy', float('nan')):.2f} "
                     f"| {b.get('x_copy_traffic', float('nan')):.2f} |")
except (OSError, ValueError) as e:
    lines.append(f"benchmark output unreadable: {e}")
print("\n".join(lines))
PY
)
echo "$summary"

if [[ $write_doc -eq 1 ]]; then
  doc=$root/docs/GPU.md
  block=$(cat <<EOF
<!-- gpu-checks results: written by ci/gpu-checks.sh, do not edit by hand -->
Run on $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $gpu; torch $torch_version (CUDA $torch_cuda);
exit status $status.

$summary
<!-- end gpu-checks results -->
EOF
)
  python3 - "$doc" "$block" <<'PY'
import re, sys
from pathlib import Path
doc, block = Path(sys.argv[1]), sys.argv[2]
text = doc.read_text() if doc.exists() else "# GPU checks\n"
pattern = re.compile(r"<!-- gpu-checks results.*?<!-- end gpu-checks results -->", re.S)
text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
doc.write_text(text)
PY
  echo "results written to docs/GPU.md"
fi
exit $status
