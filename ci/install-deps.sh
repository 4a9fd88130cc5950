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
)
if [[ "${LOCKSTEP_WITH_BROWSER:-0}" == 1 ]]; then
  packages+=(chromium)                # the HTML report's browser test
fi

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
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
