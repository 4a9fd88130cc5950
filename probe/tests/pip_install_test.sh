#!/usr/bin/env bash
# The probe as a user installs it (docs/PROBE.md): `pip install --no-build-isolation probe/` into a
# fresh virtual environment that sees the build's Python packages (torch, scikit-build-core) but
# not the build's staged probe; the installed package is imported from that environment, a probe
# program runs under torchrun with LOCKSTEP_PROBE=1 (the package's .pth attaches it, no
# sitecustomize, no PYTHONPATH), and `lockstep check` judges the traces it wrote.
#
#   pip_install_test.sh PYTHON SOURCE_DIR LOCKSTEP WORK_DIR [HIDE]
#
# HIDE builds the package on a machine without something the build machine has (issue 35), in a
# mount namespace of its own (unshare -m: root, or a user namespace) with empty folders mounted
# over it; only the install runs there (lockstep itself needs MPI):
#   mpi   no MPI: Open MPI's and MPICH's folders hidden, no mpicc on PATH;
#   cuda  no CUDA toolkit beside a pip CUDA torch (the wheel brings the runtime, not nvcc):
#         /usr/local/cuda hidden, no nvcc on PATH, CUDA_HOME/CUDA_PATH/CUDACXX unset; the installed
#         extension must then need no CUDA library of the toolkit.
#
# WORK_DIR/build is the package's CMake build folder, kept between runs (scikit-build-core's
# build-dir), so a rerun compiles only what changed; with ccache on PATH the compiler goes through
# it, so a fresh build folder (a fresh clone in CI) costs cache hits after the first.
set -euo pipefail
python=$1 src=$2 lockstep=$3 work=$4 hide=${5:-none}
case $hide in none|mpi|cuda) ;; *) echo "pip_install_test.sh: HIDE must be none, mpi or cuda, not '$hide'"; exit 2 ;; esac
if [[ $hide != none ]] && ! unshare -m true 2>/dev/null; then
  echo "SKIP: cannot hide $hide: unshare -m needs root or a user namespace here"; exit 77
fi
venv=$work/venv traces=$work/traces out=$work/check
rm -rf "$venv" "$traces" "$out"
mkdir -p "$work"
step() { echo "== $*"; }

step "a fresh environment whose site-packages lists $python's (torch) and nothing of the build"
"$python" -m venv "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$python" -c 'import site; print("\n".join(site.getsitepackages()))' > "$site/lockstep_test_parent_site.pth"
unset PYTHONPATH LOCKSTEP_PROBE LOCKSTEP_TRACE_DIR LOCKSTEP_RUN_NAME
"$venv/bin/python" -c 'import torch' || { echo "torch is not importable in the test environment"; exit 1; }
if "$venv/bin/python" -c 'import lockstep' 2>/dev/null; then
  echo "lockstep is importable before the install: the test would not test the package"; exit 1
fi

step "pip install --no-build-isolation $src/probe${hide:+ (hidden: $hide)}"
settings=(--config-settings=build-dir="$work/build")
if command -v ccache >/dev/null 2>&1; then
  settings+=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER="$src/ci/ccache-launcher.sh"
             --config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$src/ci/ccache-launcher.sh"
             --config-settings=cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER="$src/ci/ccache-launcher.sh")
  export CCACHE_BASEDIR=$src
fi
# LOCKSTEP_JOBS, as for ci/build.sh, caps the package build's parallel jobs (scikit-build-core
# passes CMAKE_BUILD_PARALLEL_LEVEL on to the build).
if [[ -n ${LOCKSTEP_JOBS:-} ]]; then export CMAKE_BUILD_PARALLEL_LEVEL=$LOCKSTEP_JOBS; fi
install=("$venv/bin/python" -m pip install -v --no-build-isolation --no-deps --no-index --disable-pip-version-check
         "${settings[@]}" "$src/probe")
# What the hidden thing looks like, to mount an empty folder over: every folder that exists.
hidden=() tools=() on_path=
case $hide in
  mpi) tools=(mpicc mpicxx mpiexec mpirun) on_path=mpi
       for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/mpich /usr/include/x86_64-linux-gnu/mpich \
                /usr/lib/x86_64-linux-gnu/fortran /usr/include/openmpi /usr/include/mpich /etc/openmpi /usr/lib64/openmpi /usr/lib64/mpich; do
         [[ -d $d ]] && hidden+=("$d")
       done ;;
  cuda) tools=(nvcc) on_path=cuda
        for d in /usr/local/cuda /usr/local/cuda-*; do [[ -d $d ]] && hidden+=("$d"); done
        unset CUDA_HOME CUDA_PATH CUDACXX CUDAToolkit_ROOT ;;
esac
start=$(date +%s)
if [[ $hide == none ]]; then
  "${install[@]}" 2>&1 | tee "$work/install.log"
else
  # Nothing of the hidden thing on PATH either (a wrapper there would answer for it).
  path=$(tr ':' '\n' <<<"$PATH" | grep -v -e "$on_path" | paste -sd:)
  # A tool that stays on PATH (Debian's mpicc lives in /usr/bin) gets a stub that fails, mounted
  # over the file it leads to.
  printf '#!/bin/sh\necho "hidden by pip_install_test.sh" >&2\nexit 127\n' > "$work/hidden-tool"
  chmod +x "$work/hidden-tool"
  unshare -m bash -euo pipefail -c '
    stub=$1 tools=$2 n=$3; shift 3
    for d in "${@:1:$n}"; do mount -t tmpfs -o ro,size=1m lockstep-hidden "$d"; done
    shift "$n"
    for tool in $tools; do
      if where=$(command -v "$tool"); then mount --bind "$stub" "$(readlink -f "$where")"; fi
      if "$tool" --version >/dev/null 2>&1; then echo "$tool still runs"; exit 1; fi
    done
    exec "$@"' hide "$work/hidden-tool" "${tools[*]}" "${#hidden[@]}" "${hidden[@]}" env PATH="$path" "${install[@]}" 2>&1 | tee "$work/install.log"
fi
echo "install took $(( $(date +%s) - start )) s"
# What the installed objects need (docs/PROBE.md#toolchains: the command a user runs on theirs).
needed=$(for so in "$site"/lockstep/*.so; do readelf -d "$so" | grep NEEDED; done)
echo "$needed"
case $hide in
  mpi) grep -q "MPI none" "$work/install.log" || { echo "the package build saw an MPI although it was hidden"; exit 1; }
       if grep -q libmpi <<<"$needed"; then echo "the package needs libmpi although it was built without MPI"; exit 1; fi ;;
  cuda) grep -q "CUDA none" "$work/install.log" || { echo "the package build saw a CUDA toolkit although it was hidden"; exit 1; }
        if grep -q -e libcudart -e libnvrtc -e libcuda <<<"$needed"; then echo "the package needs a CUDA library although it was built without the toolkit"; exit 1; fi ;;
esac

step "the installed package, from the environment's site-packages"
cd "$work"  # not the source tree: nothing of probe/ on sys.path
"$venv/bin/python" - "$site" <<'EOF'
import os, sys
import lockstep, lockstep.probe
from lockstep import _lockstep_probe
site = os.path.realpath(sys.argv[1])
for module in (lockstep, _lockstep_probe):
    where = os.path.realpath(module.__file__)
    assert where.startswith(site + os.sep), "%s comes from %s, not %s" % (module.__name__, where, site)
assert os.path.isfile(os.path.join(site, "lockstep_probe.pth")), "no lockstep_probe.pth in " + site
assert not os.path.exists(os.path.join(site, "sitecustomize.py")), "the package must not install a sitecustomize"
print("lockstep from", os.path.dirname(lockstep.__file__))
EOF

step "a probe program under torchrun with LOCKSTEP_PROBE=1"
# DDP and a subgroup of its own. (Not comm_hook_static_graph.py: under torchrun, torch 2.11 itself
# aborts it at exit about every other run, "terminate called without an active exception", with
# the probe off as well.)
program=$src/probe/tests/programs/subgroup_collectives.py
LOCKSTEP_PROBE=1 LOCKSTEP_TRACE_DIR=$traces LOCKSTEP_RUN_NAME=pip_install \
  "$venv/bin/python" -m torch.distributed.run --standalone --nproc-per-node 3 "$program"
for r in 0 1 2; do
  trace=$traces/rank-$r.trace
  [[ -s $trace ]] || { echo "no trace from rank $r: the probe did not attach"; ls -la "$traces" || true; exit 1; }
  grep -q '"type":"step"' "$trace" || { echo "$trace has no step record"; exit 1; }
  grep -q '"op":"all_reduce"' "$trace" || { echo "$trace has no all_reduce record"; exit 1; }
done

step "lockstep check $traces"
"$lockstep" check "$traces" --out "$out"
grep -q '"outcome": "pass"' "$out/report.json" || { echo "report.json does not pass:"; cat "$out/report.json"; exit 1; }
echo "pip install test: ok"
