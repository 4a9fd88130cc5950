#!/usr/bin/env bash
# Installs what lockstep needs from Debian/Ubuntu packages, only what is missing (idempotent).
# CUDA and NCCL are not installed here: they are used when present (/usr/local/cuda).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libgloo-dev            # LibTorch 1.13 (CPU) and the gloo headers c10d includes
  libopenmpi-dev openmpi-bin          # the mpi backend and the launcher
  libyaml-cpp-dev                     # scenario files
  libgtest-dev libgmock-dev           # tests
  libbenchmark-dev                    # lockstep-bench
  nlohmann-json3-dev libxxhash-dev libcli11-dev libssl-dev
  libjs-chart.js                      # plots inlined into the HTML report
  libxml2-utils                       # xmllint: JUnit report checked against fixtures/reports/junit.xsd
  chromium                            # headless: the HTML report's browser test (tests/html_browser_test)
  python3-torch                       # torch.load reads what `lockstep repro` saved (tests/repro_test);
                                      # the probe's Python torch (same LibTorch as libtorch-dev)
  python3-dev pybind11-dev            # the probe's compiled part (probe/, docs/PROBE.md)
  python3-mpi4py                      # an MPI program under `lockstep exec` (examples/split_in_forward_mpi.py)
  clang                               # libFuzzer: the fuzz targets of fuzz/ (ci/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# Whether the distribution has an installable package: its policy is read whole first. (Piped
# straight into `grep -q`, apt-cache dies of SIGPIPE when grep exits at the first match, and
# under pipefail that read as "no package": chromium was never installed.)
has_candidate() {
  local policy
  policy=$(apt-cache policy "$1" 2>/dev/null || true)
  [[ $policy =~ Candidate:\ [0-9] ]]
}
# Ubuntu ships Chromium only as a snap, which does not run in containers; a distribution without
# python3-torch has no torch.load to check and no torch for the probe. Without them the browser
# test, the Python half of the repro test and the probe (configure says why) are left out instead
# of this script failing.
for optional in chromium python3-torch; do
  if [[ " ${missing[*]} " == *" $optional "* ]] && ! has_candidate "$optional"; then
    echo "install-deps: no $optional package in this distribution; the tests that need it will skip"
    kept=()
    for p in "${missing[@]}"; do [[ $p == "$optional" ]] || kept+=("$p"); done
    missing=("${kept[@]}")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
