#!/usr/bin/env bash
# lockstep on the project's own Slurm cluster (ci/slurm-cluster.sh: 2 nodes x 2 ranks, each host a
# set of namespaces), as a user runs it: from the login host, which sees none of the nodes'
# processes, with --out on the login host's own disk (its private /tmp), which no node sees
# (issue 46's acceptance; docs/LAUNCHER.md, "Several hosts").
#
#   tests/multihost/lockstep_cluster_test.sh up|down          # the cluster the cases share (ctest fixture)
#   tests/multihost/lockstep_cluster_test.sh CASE [REPEATS]   # one case, REPEATS times (default: 1,
#                                                             # 3 in the soak tier, LOCKSTEP_SOAK=1)
#
# CASEs: suite, mpi, exec, weight_edit, remote_hang, rank_killed, node_lost, interrupt, scancel, torchrun,
# mpirun_allocation, sbatch, selftest. After every run of a case, nothing of the launch may be left on any host
# (looked for in each host's process namespace), nor an allocation. Exit 77 (ctest's skip) where
# the cluster cannot run (not root, no namespaces, no Slurm packages).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LOCKSTEP_BUILD_DIR:-$root/build}
cluster=$root/ci/slurm-cluster.sh
export LOCKSTEP_SLURM_STATE=${LOCKSTEP_SLURM_STATE:-/tmp/lockstep-multihost-tests}
python=${LOCKSTEP_PYTHON:-$root/.venv/bin/python}
scenarios=$root/tests/multihost/scenarios
programs=$root/tests/multihost/programs

skip() { echo "SKIP: $*"; exit 77; }
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
on() { "$cluster" exec "$@"; }               # on HOST -- CMD...
lockstep() { on login -- "$build/bin/lockstep" "$@"; }

usable() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (namespaces, a bridge, Slurm's daemons)"
  unshare --net --uts --ipc --mount --pid --fork --mount-proc true 2>/dev/null ||
    skip "cannot create namespaces here"
  [[ -x $build/bin/lockstep && -x $build/bin/lockstep-agent ]] || { echo "FAIL: no lockstep in $build/bin"; exit 1; }
}

# A field of a scenario of a report on the login host: report FILE PYTHON-EXPRESSION-OF-s
report() {
  on login -- "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["scenarios"][0]
print(eval(sys.argv[2]))' "$1" "$2"
}

# Nothing of any launch left: on the nodes only slurmd and the cluster's own; on login no srun,
# lockstep or marked process; no allocation left.
nothing_left() {
  local what=$1 host p cmd left=""
  for host in node0 node1 login; do
    for p in $("$cluster" pids "$host" 2>/dev/null); do
      cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
      case $cmd in
        slurmd*|slurmctld*|*munged*|"") continue ;;
      esac
      if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -q '^LOCKSTEP_LAUNCH_ID=' ||
         [[ $cmd == *lockstep* || $cmd == srun* || $cmd == salloc* ]]; then
        left+=" $host:$p($cmd)"
      fi
    done
  done
  local jobs
  jobs=$(on login -- squeue -h -o '%i %j %T' 2>/dev/null)
  if [[ -z $left && -z $jobs ]]; then
    pass "$what: nothing left on node0, node1, login; no allocation"
  else
    fail "$what: left behind:${left:- none} ${jobs:+jobs: $jobs}"
  fi
}

# Every host named in the report: rank_hosts has node0 and node1.
both_hosts() {
  local file=$1 what=$2 hosts
  hosts=$(report "$file" 'sorted(set(s.get("rank_hosts", {}).values()))')
  [[ $hosts == "['node0', 'node1']" ]] && pass "$what: report.json names node0 and node1" ||
    fail "$what: report.json's hosts are $hosts"
}

# Runs `lockstep ARGS...` on login; sets rc and took (seconds).
run_timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  took=$(python3 -c "print(round($t1 - $t0, 1))")
}

case_suite() {
  local out=/tmp/suite-$1
  run_timed lockstep run "$root/scenarios/clean" --launcher srun --nodes 2 --ntasks-per-node 2 --backend gloo --out "$out"
  [[ $rc -eq 0 ]] && pass "suite: 8 clean scenarios passed (${took} s)" || { fail "suite: exit $rc"; cat "$log"; }
  local all
  all=$(on login -- "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(all(sorted(set(s.get("rank_hosts", {}).values())) == ["node0", "node1"] for s in d["scenarios"]), len(d["scenarios"]))' "$out/report.json")
  [[ $all == "True 8" ]] && pass "suite: every scenario ran on node0 and node1" || fail "suite: hosts: $all"
}

# MPI ranks through srun --mpi=pmix (the scenario's own backend, mpi).
case_mpi() {
  local out=/tmp/mpi-$1
  run_timed lockstep run "$root/scenarios/clean/ddp_mlp.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 --out "$out"
  [[ $rc -eq 0 ]] && pass "mpi: ddp_mlp on MPI through srun --mpi=pmix passed (${took} s)" || { fail "mpi: exit $rc"; cat "$log"; }
  both_hosts "$out/report.json" mpi
  local backend
  backend=$(report "$out/report.json" 's["backend"]')
  [[ $backend == mpi ]] && pass "mpi: the backend was mpi" || fail "mpi: backend $backend"
}

case_exec() {
  local out=/tmp/exec-$1
  run_timed lockstep exec --launcher srun --nodes 2 --ntasks-per-node 2 --ranks 4 --out "$out" -- "$python" "$programs/ddp_world.py"
  [[ $rc -eq 0 ]] && pass "exec: the DDP program passed (${took} s)" || { fail "exec: exit $rc"; cat "$log"; }
  both_hosts "$out/report.json" exec
  # torchrun's variables per node, and the rendezvous at node0's routable address.
  local world
  world=$(on login -- sh -c "cat $out/ddp_world/logs/rank-*.log" | grep '^world:' | sort)
  local want_addr
  want_addr=$(on login -- getent hosts node0 | awk '{print $1}')
  for r in 0 1 2 3; do
    local line host=node$((r / 2))
    line=$(grep "RANK=$r " <<<"$world")
    if [[ $line == *"LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 WORLD_SIZE=4 MASTER_ADDR=$want_addr host=$host"* ]]; then
      pass "exec: rank $r on $host: LOCAL_RANK $((r % 2)), LOCAL_WORLD_SIZE 2, MASTER_ADDR $want_addr"
    else
      fail "exec: rank $r: '$line'"
    fi
  done
}

case_weight_edit() {
  local out=/tmp/weight-$1
  run_timed lockstep run "$scenarios/weight_edit_rank3.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 --out "$out"
  # The scenario expects replica_weights at step 3 on rank 3: caught as expected is exit 0 (xfail).
  [[ $rc -eq 0 ]] && pass "weight_edit: caught at step 3 on rank 3 (xfail, ${took} s)" || { fail "weight_edit: exit $rc"; cat "$log"; }
  local m
  m=$(report "$out/report.json" 's["findings"][0]["message"]')
  [[ $m == *"[rank 3 on node1]"* ]] && pass "weight_edit: the finding names rank 3 on node1" || fail "weight_edit: $m"
}

case_remote_hang() {
  local out=/tmp/hang-$1 timeout_s=10
  run_timed lockstep run "$scenarios/hang_rank3.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 --out "$out"
  [[ $rc -eq 0 ]] && pass "remote_hang: a hang naming rank 3 (xfail)" || { fail "remote_hang: exit $rc"; cat "$log"; }
  python3 -c "import sys; sys.exit(0 if $took <= $timeout_s + 30 else 1)" &&
    pass "remote_hang: judged in ${took} s (hang timeout ${timeout_s} s + 30 s at most)" ||
    fail "remote_hang: took ${took} s"
}

case_rank_killed() {
  local out=/tmp/killed-$1
  run_timed lockstep run "$scenarios/crash_rank3.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 --out "$out"
  [[ $rc -eq 0 ]] && pass "rank_killed: a crash of rank 3 at step 3 (xfail, ${took} s)" || { fail "rank_killed: exit $rc"; cat "$log"; }
  local checkers
  checkers=$(report "$out/report.json" 'sorted(f["checker"] for f in s["findings"])')
  [[ $checkers == "['crash']" ]] && pass "rank_killed: a crash, no lost node" || fail "rank_killed: findings $checkers"
  local m
  m=$(report "$out/report.json" 's["findings"][0]["message"]')
  [[ $m == *"[rank 3 on node1]"* ]] && pass "rank_killed: names rank 3 on node1" || fail "rank_killed: $m"
}

case_node_lost() {
  local out=/tmp/lost-$1 i size=0 t_cut t_end
  on login -- "$build/bin/lockstep" run "$scenarios/long_ddp.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 \
    --out "$out" >"$log" 2>&1 &
  local launcher=$!
  # Mid-run: rank 3's trace (streamed to the login host) has grown.
  for i in $(seq 1 120); do
    size=$(on login -- stat -c %s "$out/long_ddp/traces/rank-3.trace" 2>/dev/null || echo 0)
    [[ ${size:-0} -gt 100000 ]] && break
    sleep 0.5
  done
  [[ ${size:-0} -gt 100000 ]] || { fail "node_lost: the run never got going"; kill "$launcher"; wait; cat "$log"; return; }
  # node1 lost: its cable out and its processes of the launch killed (slurmd, unreachable, lives on).
  t_cut=$(date +%s.%N)
  "$cluster" link node1 down
  local p
  for p in $("$cluster" pids node1); do
    [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") == slurmd* ]] || kill -9 "$p" 2>/dev/null
  done
  wait "$launcher"
  rc=$?
  t_end=$(date +%s.%N)
  took=$(python3 -c "print(round($t_end - $t_cut, 1))")
  [[ $rc -eq 1 ]] && pass "node_lost: exit 1" || { fail "node_lost: exit $rc"; cat "$log"; }
  python3 -c "import sys; sys.exit(0 if $took <= 60 else 1)" && pass "node_lost: judged ${took} s after the cut" ||
    fail "node_lost: ${took} s after the cut"
  local f
  f=$(report "$out/report.json" '[(f["checker"], f["ranks"], f["details"].get("host")) for f in s["findings"]]')
  [[ $f == "[('node_lost', [2, 3], 'node1')]" ]] && pass "node_lost: node1 lost with ranks 2, 3, no survivor blamed" ||
    fail "node_lost: findings $f"
  local judged
  judged=$(report "$out/report.json" '[(v["checker"], v["outcome"]) for v in s["checkers"] if v["checker"] == "replica_weights"] + [s["steps"] > 0]')
  [[ $judged == "[('replica_weights', 'pass'), True]" ]] && pass "node_lost: the steps every rank reached were checked" ||
    fail "node_lost: $judged"
  # Slurm still believes in node1 (SlurmdTimeout): give the next case a whole cluster again.
  "$cluster" down >/dev/null 2>&1
  "$cluster" up 2 >/dev/null 2>&1 || fail "node_lost: the cluster did not come back up"
}

# A long run, left once rank 3's trace (streamed to the login host) has grown; starts it in the
# background (its pid in $launcher) into out dir $1.
start_long_run() {
  local out=$1 i size=0
  on login -- "$build/bin/lockstep" run "$scenarios/long_ddp.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 \
    --out "$out" >"$log" 2>&1 &
  launcher=$!
  for i in $(seq 1 120); do
    size=$(on login -- stat -c %s "$out/long_ddp/traces/rank-3.trace" 2>/dev/null || echo 0)
    [[ ${size:-0} -gt 100000 ]] && return 0
    sleep 0.5
  done
  return 1
}

case_interrupt() {
  local out=/tmp/interrupt-$1
  start_long_run "$out" || { fail "interrupt: the run never got going"; kill "$launcher"; wait; cat "$log"; return; }
  on login -- pkill -INT -f "lockstep run $scenarios/long_ddp.yaml"
  wait "$launcher"
  rc=$?
  [[ $rc -eq 3 ]] && pass "interrupt: SIGINT to lockstep on the login host: exit 3" || { fail "interrupt: exit $rc"; cat "$log"; }
  local reason
  reason=$(report "$out/report.json" 's["reason"]')
  [[ $reason == "interrupted (SIGINT/SIGTERM); the ranks were stopped" ]] && pass "interrupt: said so" ||
    fail "interrupt: reason '$reason'"
}

case_scancel() {
  local out=/tmp/scancel-$1
  start_long_run "$out" || { fail "scancel: the run never got going"; kill "$launcher"; wait; cat "$log"; return; }
  on login -- sh -c 'scancel $(squeue -h -o %i)'
  wait "$launcher"
  rc=$?
  [[ $rc -eq 3 ]] && pass "scancel: the job cancelled under lockstep: exit 3" || { fail "scancel: exit $rc"; cat "$log"; }
  local reason f
  reason=$(report "$out/report.json" 's["reason"]')
  [[ $reason == "the Slurm job "*" was cancelled or ended"* ]] && pass "scancel: no lost node, the job's end said" ||
    fail "scancel: reason '$reason'"
  f=$(report "$out/report.json" '[f["checker"] for f in s["findings"]]')
  [[ $f == "[]" ]] && pass "scancel: no finding against the ranks" || fail "scancel: findings $f"
}

case_torchrun() {
  local out=/tmp/torchrun-$1
  run_timed on login -- env "PATH=$(dirname "$python"):$PATH" "$build/bin/lockstep" exec --launcher torchrun --nodes 2 \
    --ntasks-per-node 2 --ranks 4 --out "$out" -- "$python" "$programs/ddp_world.py"
  [[ $rc -eq 0 ]] && pass "torchrun: one torchrun per node, the program passed (${took} s)" || { fail "torchrun: exit $rc"; cat "$log"; }
  both_hosts "$out/report.json" torchrun
}

case_mpirun_allocation() {
  local out=/tmp/mpirun-$1
  run_timed on login -- env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 salloc -N2 --ntasks-per-node=2 \
    "$build/bin/lockstep" exec --launcher mpirun --nodes 2 --ranks 4 --out "$out" -- "$python" "$programs/ddp_world.py"
  [[ $rc -eq 0 ]] && pass "mpirun_allocation: mpirun inside salloc, the program passed (${took} s)" ||
    { fail "mpirun_allocation: exit $rc"; cat "$log"; }
  both_hosts "$out/report.json" mpirun_allocation
}

case_sbatch() {
  # A batch job's folder is on the shared file system (the nodes run the script there): the build's.
  local dir=$build/tests/multihost/sbatch-$1
  rm -rf "$dir" && mkdir -p "$dir"
  run_timed on login -- sh -c "cd '$dir' && sbatch --wait --export=ALL,LOCKSTEP_ROOT=$root,LOCKSTEP_BUILD_DIR=$build,LOCKSTEP_OUT=$dir/out \
    $root/ci/slurm/lockstep.sbatch $scenarios/weight_edit_rank3.yaml"
  [[ $rc -eq 0 ]] && pass "sbatch: ci/slurm/lockstep.sbatch ran to its report (${took} s)" || { fail "sbatch: exit $rc"; cat "$log" "$dir"/*.out; }
  [[ -f $dir/out/report.json && -f $dir/out/junit.xml ]] && pass "sbatch: report.json and junit.xml written" ||
    fail "sbatch: no report in $dir/out"
}

case_selftest() {
  local out=/tmp/selftest-$1
  run_timed lockstep selftest "$root/scenarios/inject" --clean "$root/scenarios/clean" --repeats 1 --launcher srun \
    --nodes 2 --ntasks-per-node 2 --backend gloo --out "$out"
  local caught fp
  caught=$(grep -E '^[0-9]+ of [0-9]+ injections caught at onset on the right rank' "$log" | tail -n 1)
  fp=$(grep -E '^False positives: ' "$log" | tail -n 1)
  [[ $rc -eq 0 ]] && pass "selftest: exit 0 (${took} s): $caught $fp" || { fail "selftest: exit $rc: $caught $fp"; tail -n 40 "$log"; }
  [[ $caught =~ ^([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] || fail "selftest: $caught"
  [[ $fp == "False positives: 0 in"* ]] || fail "selftest: $fp"
}

main() {
  local what=${1:?"usage: $0 up|down|CASE [REPEATS]"}
  case $what in
    up)
      usable
      "$cluster" deps >/dev/null 2>&1 || skip "the Slurm packages are missing and could not be installed"
      "$cluster" down >/dev/null 2>&1
      "$cluster" up 2 || { echo "FAIL: the cluster did not come up"; exit 1; }
      exit 0 ;;
    down)
      "$cluster" down
      exit 0 ;;
  esac
  declare -F "case_$what" >/dev/null || { echo "no case $what"; exit 2; }
  usable
  "$cluster" status >/dev/null 2>&1 || skip "no cluster up at $LOCKSTEP_SLURM_STATE (the multihost_cluster fixture brings it up)"
  local soak_repeats=1 k
  [[ ${LOCKSTEP_SOAK:-0} == 1 ]] && soak_repeats=3
  local repeats=${2:-$soak_repeats}
  log=$(mktemp)
  for k in $(seq 1 "$repeats"); do
    echo "--- $what, repeat $k of $repeats"
    "case_$what" "$k"
    nothing_left "$what $k"
  done
  rm -f "$log"
  echo "$what: $failures failure(s)"
  ((failures == 0))
}

main "$@"
