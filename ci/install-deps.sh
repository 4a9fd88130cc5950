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
# Ubuntu ships Chromium only as a snap, which does not run in containers: without a chromium
# package the browser test skips (and says why) instead of this script failing.
if [[ " ${missing[*]} " == *" chromium "* ]] && ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  echo "install-deps: no chromium package in this distribution; tests/html_browser_test will skip"
  kept=()
  for p in "${missing[@]}"; do [[ $p == chromium ]] || kept+=("$p"); done
  missing=("${kept[@]}")
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
