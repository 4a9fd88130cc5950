#!/usr/bin/env bash
# ci/distro-check.sh DIST
#
# Tries lockstep on another Debian release as a new user would: inside the root of
# ci/distro-root.sh DIST (made with debootstrap on first use, then kept), it clones this
# repository's HEAD into a fresh folder, and there runs `ci/install-deps.sh` and the README's two
# commands, `ci/run-suite.sh` (the default suite and the self-test) and `ci/run-tests.sh` (ctest,
# then the short fuzz run). The clone has its own .venv, build/ and out/, as a user's would; the
# host's build folder and .venv are never used. ccache inside the root keeps later runs short.
#
# Writes, under ${LOCKSTEP_DISTRO_CHECK_OUT:-out/distro-check} of this checkout:
#   DIST-<UTC date>.log  everything the steps printed
#   DIST-<UTC date>.md   the report: the root's toolchain, each step's result and time, and the
#                        figures (scenarios passed, injections caught at onset, false positives,
#                        ctest's counts)
# Exit status: 0 when every step passed, 1 when one failed (the report says which), 3 when the
# root could not be made or entered.
#
# Needs root (debootstrap, mount, chroot). The steps take about as long as .ci/run does on this
# machine plus the install of torch into the clone's .venv: 30 to 60 minutes on 2 shared cores.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: ci/distro-check.sh DIST (e.g. trixie)" >&2; exit 3; }
dist=$1
repo=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${LOCKSTEP_DISTRO_CACHE:-/var/cache/lockstep/distro}
stamp=$(date -u +%Y-%m-%dT%H%MZ)
out_dir=${LOCKSTEP_DISTRO_CHECK_OUT:-$repo/out/distro-check}
mkdir -p "$out_dir"
log=$out_dir/$dist-$stamp.log
report=$out_dir/$dist-$stamp.md
sha=$(git -C "$repo" rev-parse HEAD)
short=$(git -C "$repo" rev-parse --short HEAD)
if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
  echo "distro-check: note: uncommitted changes are not checked; the clone is of HEAD ($short)" | tee -a "$log"
fi

echo "distro-check: $dist, HEAD $short, log $log" | tee -a "$log"
# The root first (its own steps are not part of the check's times).
"$repo/ci/distro-root.sh" "$dist" true 2>&1 | tee -a "$log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "distro-check: the $dist root could not be made (above)" | tee -a "$log"; exit 3; }

# The clone: a folder of the root's /root that this script owns (its marker file), replaced on
# every run so that nothing of an earlier run is reused except ccache and pip's download cache.
work_in_root=/root/lockstep-distro-check
work=$cache/$dist$work_in_root
if [[ -e $work ]]; then
  [[ -e $work/.lockstep-distro-check ]] ||
    { echo "distro-check: $work exists but was not made by this script; not touching it" | tee -a "$log"; exit 3; }
  # Nothing is mounted below it (ci/distro-root.sh mounts only system folders and the repository),
  # and --one-file-system keeps rm inside it regardless.
  if grep -q " ${work}[/ ]" /proc/self/mounts; then
    echo "distro-check: something is mounted below $work; not removing it" | tee -a "$log"; exit 3
  fi
  rm -rf --one-file-system "$work"
fi
mkdir -p "$work"
: >"$work/.lockstep-distro-check"
git clone --quiet --no-hardlinks "$repo" "$work/lockstep" 2>&1 | tee -a "$log"
git -C "$work/lockstep" checkout --quiet --detach "$sha"

# The steps, inside the root, each timed; a failed step does not stop the next (a user would read
# every failure), but fails the check. LOCKSTEP_VENV is cleared: a new user's .venv is the clone's.
steps=(install-deps run-suite run-tests)
inner=$(cat <<'SH'
set -uo pipefail
unset LOCKSTEP_VENV
cd "$1/lockstep"
echo "== the root: $(. /etc/os-release && echo "$PRETTY_NAME"); $(g++ --version | head -1); $(python3 --version);" \
  "$(cmake --version | head -1); $(mpirun --version 2>/dev/null | head -1); $(dpkg-query -W -f='libstdc++6 ${Version}' libstdc++6)"
for step in install-deps run-suite run-tests; do
  echo "== step $step: start $(date -u +%FT%TZ)"
  start=$(date +%s)
  ci/$step.sh
  rc=$?
  echo "== step $step: exit $rc, $(( $(date +%s) - start )) s"
done
SH
)
"$repo/ci/distro-root.sh" "$dist" -- bash -c "$inner" distro-check "$work_in_root" 2>&1 | tee -a "$log" || true

# The report, from the log.
field() { grep -m1 -E "$1" "$log" | sed -E "s/$2/\1/" || true; }
root_line=$(grep -m1 '^== the root: ' "$log" | sed 's/^== the root: //' || true)
status=0
{
  echo "# lockstep on $dist: $(date -u +%F)"
  echo
  echo "- checked: $sha (\`ci/distro-check.sh $dist\`, a clone of HEAD inside the root)"
  echo "- root: ${root_line:-unknown}"
  echo "- machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "- log: $(basename "$log")"
  echo
  echo "| step | result | time |"
  echo "| --- | --- | --- |"
  for step in "${steps[@]}"; do
    line=$(grep -m1 "^== step $step: exit" "$log" || true)
    if [[ -z $line ]]; then
      echo "| ci/$step.sh | did not run | - |"; status=1; continue
    fi
    rc=$(sed -E 's/.*exit ([0-9]+),.*/\1/' <<<"$line")
    secs=$(sed -E 's/.*, ([0-9]+) s$/\1/' <<<"$line")
    [[ $rc == 0 ]] || status=1
    echo "| ci/$step.sh | $([[ $rc == 0 ]] && echo passed || echo "FAILED (exit $rc)") | $((secs / 60)) min $((secs % 60)) s |"
  done
  echo
  echo "Figures:"
  echo
  echo "- suite: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | head -1 || true)"
  echo "- self-test: $(field ' injections caught at onset' '^(.*)$')"
  echo "- $(field '^False positives: ' '^(.*)$')"
  echo "- ctest: $(grep -E '^ctest: ' "$log" | tail -1 | sed 's/^ctest: //' || true)"
  echo "- ctest's summary: $(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1 || true)"
  failed=$(grep -E '^[[:space:]]+[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)' "$log" || true)
  if [[ -n $failed ]]; then
    echo
    echo "Failed tests:"
    echo
    sed 's/^[[:space:]]*/- /' <<<"$failed"
  fi
} >"$report"
cat "$report"
exit "$status"
