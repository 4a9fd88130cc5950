#!/usr/bin/env bash
# ci/toolchain-check.sh [--compiler g++-13] [--source DIR] [--build-dir DIR] [--jobs N]
#
# The objects lockstep injects into other processes (the probe's extension, the PMPI wrappers,
# the NCCL profiler plugin, the CUPTI subscriber, the process log), built the way the first GPU
# machine built them: g++ >= 13 with a library folder that holds only libstdc++.a, so each object
# carries its own copy of libstdc++ (issue 35: there every program under `lockstep exec` died of
# SIGSEGV). Runs in the Debian 13 root of ci/distro-root.sh (g++ 13 is not in Debian 12), in a
# build folder of its own (default <source>/build-trixie-static; the root's ccache keeps a rebuild
# cheap), only the targets the checks need; then:
#   - injected_object.*: each object exports its entry points and nothing else;
#   - injected_object_workload.*: each object at work in a program that links libstdc++ shared
#     (numbers formatted through streams, exceptions across the boundary, std::filesystem);
#   - ProbeCases.*: the probe catalog, real 2-rank DDP (and FSDP, ZeRO, subgroup) programs under
#     the probe, judged by lockstep's checkers;
#   - LibstdcxxFirstTest.*: a program linking LibTorch, built where -lstdc++ finds only the
#     archive, still binds std::filesystem to the system's libstdc++ (not LibTorch's copies).
#
# --source DIR builds another checkout (it must lie inside this repository, the folder the root
# sees), e.g. a worktree of an older commit, to see these tests fail there.
#
# Exit status: 0 all passed; 1 a check failed; 3 a problem of the setup (no such compiler, the
# build failed). When debootstrap cannot make the root (no debootstrap, not root, no archive), it
# prints a line starting with SKIP and the reason, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
dist=trixie
compiler=g++-13
source_dir=$repo
build_dir=
jobs=${LOCKSTEP_JOBS:-2}
inside=0
die() { echo "toolchain-check: $*" >&2; exit 3; }
while (($#)); do
  case $1 in
    --compiler) compiler=${2:?}; shift 2 ;;
    --source) source_dir=$(cd "${2:?}" && pwd -P) || die "no folder $2"; shift 2 ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --inside) inside=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
done
[[ $compiler =~ ^g\+\+-[0-9]+$ ]] || die "--compiler must name a versioned g++ (g++-13, g++-14), not '$compiler'"
case $source_dir/ in "$repo"/*) ;; *) die "--source $source_dir is not inside $repo, the folder the root sees" ;; esac
build_dir=${build_dir:-$source_dir/build-$dist-static}

if ((!inside)); then
  skip() { echo "SKIP: ci/toolchain-check.sh: $*"; exit 0; }
  [[ -x ci/distro-root.sh ]] || die "ci/distro-root.sh is missing: it makes the $dist root"
  ready=${LOCKSTEP_DISTRO_CACHE:-/var/cache/lockstep/distro}/$dist/.lockstep-root-ready
  if [[ ! -e $ready ]]; then
    [[ $(id -u) -eq 0 ]] || skip "the $dist root is not made yet and making it needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null || skip "the $dist root is not made yet and debootstrap is not installed (apt-get install debootstrap)"
    [[ -e /usr/share/debootstrap/scripts/$dist ]] || skip "this debootstrap does not know $dist"
    log=$(mktemp /tmp/toolchain-check-root.XXXXXX.log)
    echo "toolchain-check: making the $dist root with ci/distro-root.sh (once, then cached; log: $log)"
    if ! ci/distro-root.sh "$dist" -- true >"$log" 2>&1; then
      tail -n 20 "$log"
      [[ -e $ready ]] || skip "debootstrap could not make the $dist root (the last lines of $log are above)"
    fi
  fi
  args=(--inside --compiler "$compiler" --source "$source_dir" --build-dir "$build_dir" --jobs "$jobs")
  set +e
  ci/distro-root.sh "$dist" -- bash "$repo/ci/toolchain-check.sh" "${args[@]}"
  status=$?
  set -e
  exit "$status"
fi

# --- inside the root ------------------------------------------------------------------------------
cxx=$(command -v "$compiler") || die "no $compiler in the $dist root"
cc=$(command -v "${compiler/g++/gcc}") || die "no ${compiler/g++/gcc} in the $dist root"
major=$("$cxx" -dumpversion | cut -d. -f1)
((major >= 13)) || die "$compiler is GCC $major: the toolchains that showed issue 35 are GCC 13 and later"
archive=$("$cxx" -print-file-name=libstdc++.a)
[[ -f $archive ]] || die "$compiler has no libstdc++.a (apt-get install libstdc++-${major}-dev)"
# A folder with the archive and nothing else, searched before the compiler's own (-L comes first):
# -lstdc++ then resolves to the archive, as in the GPU image's /opt/gcc, for shared objects and
# programs alike. The objects lockstep injects carry the archive privately; programs must still
# load the system's libstdc++.so.6 first (cmake/LockstepLibstdcxxFirst.cmake finds it and says
# so at configure time): a program carrying the archive bound std::filesystem to LibTorch's copies
# and crashed on the GPU machine (libstdcxx_first_test, below).
static_dir=$build_dir/libstdc++-archive-only
mkdir -p "$static_dir"
cp -f "$archive" "$static_dir/libstdc++.a"
python=${LOCKSTEP_VENV:-/opt/lockstep-venv}/bin/python
[[ -x $python ]] || die "no $python in the $dist root (ci/distro-root.sh makes it)"
export CCACHE_BASEDIR=$source_dir
# The host's CUDA toolkit (mounted read-only by ci/distro-root.sh): a CUDA torch's CMake config
# needs nvcc, and the CUPTI subscriber is built only with CUPTI's headers.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
echo "== $(. /etc/os-release && echo "$PRETTY_NAME"), $("$cxx" --version | head -n1); libstdc++ found by -lstdc++: only $static_dir/libstdc++.a"
configure_log=$build_dir/toolchain-check-configure.log
cmake -S "$source_dir" -B "$build_dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_HOST_COMPILER="$cxx" \
  -DCMAKE_SHARED_LINKER_FLAGS="-L$static_dir" -DCMAKE_MODULE_LINKER_FLAGS="-L$static_dir" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$static_dir" \
  -DLOCKSTEP_PYTHON="$python" -DLOCKSTEP_BUILD_BENCH=OFF >"$configure_log" 2>&1 ||
  { tail -n 30 "$configure_log"; die "configure failed (log: $configure_log)"; }
grep "lockstep:" "$configure_log" || true
grep -q "finds only libstdc++.a for programs" "$configure_log" ||
  { echo "toolchain-check: FAILED: configure did not see that programs find only libstdc++.a (log: $configure_log)"; exit 1; }

targets=(lockstep_probe probe_catalog_test injected_object_workload lockstep_process_log lockstep_pmpi
         lockstep_nccl_profiler lockstep_leaky_object_for_test libstdcxx_first_test)
if grep -q "CUPTI discovery recorder" "$configure_log"; then targets+=(lockstep_cupti); fi
echo "== building ${targets[*]} (-j$jobs)"
start=$(date +%s)
build_log=$build_dir/toolchain-check-build.log
# The post-build export check of an unsafe object fails the build on purpose; the tests below then
# say which object. Any other build failure is the setup's.
set +e
cmake --build "$build_dir" --parallel "$jobs" --target "${targets[@]}" -- -k 0 >"$build_log" 2>&1
build_status=$?
set -e
grep -E "^-- lockstep: .*(libstdc\+\+|exports)" "$build_log" || true
if ((build_status != 0)); then
  if grep -q "beyond its entry points" "$build_log"; then
    echo "toolchain-check: FAILED: objects export more than their entry points (above; log: $build_log)"
    exit 1
  fi
  tail -n 40 "$build_log"
  die "the build failed (log: $build_log)"
fi
echo "built in $(( $(date +%s) - start )) s"

# What each object is: libstdc++ of its own (no NEEDED libstdc++.so.6) is what this check is about.
for object in "$build_dir"/lib/liblockstep_*.so "$build_dir"/python/lockstep/_lockstep_probe*.so; do
  [[ -e $object ]] || continue
  if readelf -d "$object" | grep -q 'NEEDED.*libstdc++'; then how="needs libstdc++.so.6"; else how="libstdc++ linked in"; fi
  echo "   $(basename "$object"): $how"
done

echo "== tests"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir "$build_dir" -R '^(injected_object|ProbeCases|LibstdcxxFirstTest)' -E 'CudaTensors' --output-on-failure \
  --timeout 900 -j "$jobs" || { echo "toolchain-check: FAILED (above)"; exit 1; }
echo "toolchain-check: passed ($compiler, libstdc++ linked into each injected object, $(. /etc/os-release && echo "$PRETTY_NAME"))"
