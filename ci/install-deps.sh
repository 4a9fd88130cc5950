#!/usr/bin/env bash
# Installs what lockstep needs, only what is missing (idempotent): Debian/Ubuntu packages with apt,
# then torch and the other Python packages of ci/requirements.txt from PyPI into the repository's
# virtual environment (.venv, or $LOCKSTEP_VENV), whose torch is the one LibTorch and the one
# Python torch of the build, the probe and the tests. CUDA and NCCL are not installed here: they
# are used when present (/usr/local/cuda).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgloo-dev                         # the gloo headers c10d's ProcessGroupGloo.hpp includes (torch's
                                      # wheel ships c10d's headers but not gloo's)
  libopenmpi-dev openmpi-bin          # the mpi backend and the launcher
  libyaml-cpp-dev                     # scenario files
  libgtest-dev libgmock-dev           # tests
  libbenchmark-dev                    # lockstep-bench
  nlohmann-json3-dev libxxhash-dev libcli11-dev libssl-dev
  libjs-chart.js                      # plots inlined into the HTML report
  libxml2-utils                       # xmllint: JUnit report checked against fixtures/reports/junit.xsd
  chromium                            # headless: the HTML report's browser test (tests/html_browser_test)
  python3-dev python3-venv            # the virtual environment that holds torch, and the probe's
                                      # compiled part (probe/, docs/PROBE.md)
  python3-mpi4py                      # an MPI program under `lockstep exec` (examples/split_in_forward_mpi.py)
  clang                               # libFuzzer: the fuzz targets of fuzz/ (ci/fuzz.sh)
  libclang-rt-dev                     # libFuzzer's runtime: clang only recommends it on Debian 13
  ccache                              # a second build tree (a fresh clone, the fuzz tree) is cheap
  slurmctld slurmd slurm-client munge # a real Slurm cluster in namespaces on this machine
                                      # (ci/slurm-cluster.sh, the multihost tests)
  libpmix-dev                         # its libpmix.so, which Slurm's pmix plugin loads (srun --mpi=pmix)
)

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${LOCKSTEP_VENV:-$root/.venv}

# The Python packages: a virtual environment of Debian's python3 (its headers are python3-dev's),
# with the system's site-packages visible for python3-mpi4py, which must match the system's Open
# MPI. pip is asked only when a pinned version is not what is installed.
install_python_packages() {
  if [[ ! -x $venv/bin/python ]]; then
    echo "install-deps: creating the virtual environment $venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
  fi
  if ! "$venv/bin/python" - "$root/ci/requirements.txt" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, _, pinned = line.partition("==")
    try:
        if version(name) != pinned:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
  then
    echo "install-deps: pip install -r ci/requirements.txt into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$root/ci/requirements.txt"
  fi
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  install_python_packages
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
# Ubuntu ships Chromium only as a snap, which does not run in containers: without it the browser
# test is left out instead of this script failing.
for optional in chromium; do
  if [[ " ${missing[*]} " == *" $optional "* ]] && ! has_candidate "$optional"; then
    echo "install-deps: no $optional package in this distribution; the tests that need it will skip"
    kept=()
    for p in "${missing[@]}"; do [[ $p == "$optional" ]] || kept+=("$p"); done
    missing=("${kept[@]}")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
install_python_packages
