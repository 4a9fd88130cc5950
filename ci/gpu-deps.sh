#!/usr/bin/env bash
# Downloads, on a machine with Debian's archive, every Debian package the GPU build needs that the
# GPU machine lacks (it has nvcc, CMake, ninja, a pip torch with CUDA and NCCL, but no apt and no
# network), so that one `ci/gpu-checks.sh --deps DIR` call there can build and run everything:
#   ci/gpu-deps.sh [DIR]            (default .debs/, git-ignored)
# DIR gets the .deb files and packages.txt (name, version, why). Nothing is installed here.
# The packages are what the build links or includes (yaml-cpp, GoogleTest, Google Benchmark,
# nlohmann-json, xxHash, CLI11, gloo headers as a fallback, Open MPI: every program links libmpi;
# Chart.js, which reports/CMakeLists.txt reads at configure time to inline it in the HTML report)
# plus the shared libraries they load, except the C and C++ runtime (libc6, libstdc++6,
# libgcc-s1): those of the GPU machine are newer and must never be shadowed. At unpack time
# gpu-checks.sh puts a library of DIR on the search path only where the machine lacks that soname.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.debs}
case "$dir" in -h|--help) sed -n '2,12p' "$0"; exit 0 ;; esac
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Headers, CMake configs and link-time symlinks: taken as they are, without their own -dev
# dependencies (compilers, autotools), which the build does not use.
dev_packages=(
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libxxhash-dev libcli11-dev libopenmpi-dev libgloo-dev
  libjs-chart.js
)
# Run-time libraries and programs: taken with every package they depend on, recursively.
runtime_roots=(libyaml-cpp0.7 libbenchmark1debian libxxhash0 libopenmpi3 openmpi-bin openmpi-common)
# Never taken: the C/C++ runtime and packaging machinery every machine has in a newer version.
never='^(libc6|libc-bin|libstdc\+\+6|libgcc-s1|gcc-[0-9]+-base|debconf|cdebconf|dpkg|perl-base|debianutils|install-info|adduser|passwd|libpam.*|libdebian-installer4|libnewt0\.52|libslang2|libtextwrap1|libselinux1|libsemanage.*|libsepol2|libaudit.*|libcap-ng0|libcrypt1|libdb5\.3|libgloo0)$'

if ! apt-cache show libopenmpi3 >/dev/null 2>&1; then
  echo "ci/gpu-deps.sh: apt knows no libopenmpi3: run 'apt-get update' first (Debian 12 archive)" >&2
  exit 3
fi
mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${runtime_roots[@]}" | grep -v '^[ <]' | sort -u)
packages=()
for p in "${dev_packages[@]}" "${closure[@]}"; do
  [[ $p =~ $never ]] && continue
  packages+=("$p")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)

cd "$dir"
rm -f -- *.deb.partial
echo "ci/gpu-deps.sh: downloading ${#packages[@]} packages into $dir"
apt-get download -qq "${packages[@]}"
: >packages.txt
for p in "${packages[@]}"; do
  v=$(apt-cache show --no-all-versions "$p" | awk '/^Version:/{print $2; exit}')
  why=runtime
  for d in "${dev_packages[@]}"; do [[ $d == "$p" ]] && why=build; done
  echo "$p $v $why" >>packages.txt
done
n=$(ls -1 ./*.deb | wc -l)
size=$(du -sh . | cut -f1)
echo "ci/gpu-deps.sh: $n packages, $size, listed in $dir/packages.txt"
echo "on the GPU machine: ci/gpu-checks.sh --deps $(realpath --relative-to="$root" "$dir")  (name the folder in the device tool's carry)"
