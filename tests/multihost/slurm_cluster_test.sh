#!/usr/bin/env bash
# ci/slurm-cluster.sh end to end: a 2-node Slurm cluster in namespaces on this machine comes up,
# schedules, isolates its hosts as separate machines would be, notices a lost node, and goes away
# without a trace. Exit 77 (ctest's SKIP_RETURN_CODE) when it cannot run here: not root, no
# namespaces, or the Slurm packages missing and not installable.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$root/ci/slurm-cluster.sh
export LOCKSTEP_SLURM_STATE=/tmp/lockstep-slurm-test.$$
state=$LOCKSTEP_SLURM_STATE
slurmd_timeout=10   # slurm.conf's SlurmdTimeout (ci/slurm-cluster.sh)

skip() { echo "SKIP: $*"; exit 77; }
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
check() {   # check DESCRIPTION CMD...: passes when CMD exits 0
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
on() { "$cluster" exec "$@"; }   # on HOST -- CMD...
inits_of_state() {   # the hosts' inits of this test's cluster, by their command line
  local p
  for p in /proc/[0-9]*; do
    [[ $(tr '\0' ' ' 2>/dev/null <"$p/cmdline") == *"__init $state "* ]] && echo "${p#/proc/}"
  done
}

[[ $(id -u) -eq 0 ]] || skip "needs root (namespaces, a bridge, Slurm's daemons)"
for t in unshare nsenter ip setsid python3; do
  command -v "$t" >/dev/null || skip "$t is missing"
done
if ! unshare --net --uts --ipc --mount --pid --fork --mount-proc true 2>/dev/null; then
  skip "cannot create namespaces here (unshare --net --uts --ipc --mount --pid failed)"
fi
if ! deps_out=$("$cluster" deps 2>&1); then
  skip "the Slurm packages are missing and could not be installed: $deps_out"
fi

# On a failure the daemons' logs are kept (ctest runs this in <build>/tests/multihost).
logs=${LOCKSTEP_SLURM_TEST_LOGS:-$PWD/slurm_cluster_test-logs}
keep_logs() {
  if ((failures > 0)) && [[ -d $state/hosts ]]; then
    rm -rf "$logs" && mkdir -p "$logs" &&
      (cd "$state" && find hosts munge -name '*.log' -exec cp --parents {} "$logs" \;) &&
      echo "the cluster's logs: $logs"
  fi
}
cleanup() {
  keep_logs
  "$cluster" down >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- up ---------------------------------------------------------------------------------------------
t0=$(date +%s.%N)
if ! "$cluster" up 2; then
  echo "FAIL up 2"
  exit 1
fi
echo "up 2 took $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)") s"
again=$("$cluster" up 2 2>&1)
rc=$?
check "up refuses while the cluster is up (exit $rc: $again)" \
  bash -c '[[ $1 -ne 0 ]] && grep -q "already up" <<<"$2"' _ "$rc" "$again"
"$cluster" status

# --- Slurm ------------------------------------------------------------------------------------------
states=$(on login -- sinfo -h -N -o '%N %t' | sort -u)
check "sinfo on login: node0 and node1 idle ($(tr '\n' ' ' <<<"$states"))" \
  test "$states" == $'node0 idle\nnode1 idle'

hosts=$(on login -- timeout 60 srun -N2 -n4 hostname | sort | tr '\n' ' ')
check "srun -N2 -n4 hostname: node0 twice, node1 twice ($hosts)" test "$hosts" == "node0 node0 node1 node1 "

alloc=$(on login -- timeout 30 salloc -N2 --no-shell 2>&1)
job=$(grep -o 'Granted job allocation [0-9]*' <<<"$alloc" | grep -o '[0-9]*$')
if [[ -z $job ]]; then
  fail "salloc -N2 --no-shell: $alloc"
else
  pass "salloc -N2 --no-shell: job $job"
  # Each step waits for the other's file on node0: they finish only if both run at once.
  step() {
    on login -- timeout 30 srun --jobid="$job" --overlap -N1 -n1 -w node0 \
      sh -c "touch /tmp/step-$1; while [ ! -e /tmp/step-$2 ]; do sleep 0.1; done; echo step $1 \$SLURM_STEP_ID"
  }
  step a b >"$state.a" 2>&1 &
  pa=$!
  step b a >"$state.b" 2>&1 &
  pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  check "two concurrent srun --overlap steps in job $job (exit $ra, $rb: $(cat "$state.a" "$state.b" | tr '\n' ' '))" \
    test $ra -eq 0 -a $rb -eq 0
  rm -f "$state.a" "$state.b"
  on login -- scancel "$job"
fi

if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
  out=$(on login -- timeout 60 srun --mpi=pmix -N2 -n4 /usr/bin/python3 -c \
    'from mpi4py import MPI; c = MPI.COMM_WORLD; print(c.rank, c.size, MPI.Get_processor_name(), c.allreduce(c.rank + 1))' 2>&1 | sort)
  check "srun --mpi=pmix -N2 -n4: Open MPI allreduce across the nodes ($(tr '\n' ' ' <<<"$out"))" \
    test "$out" == $'0 4 node0 10\n1 4 node0 10\n2 4 node1 10\n3 4 node1 10'
else
  echo "skip srun --mpi=pmix (no python3-mpi4py)"
fi

# --- isolation --------------------------------------------------------------------------------------
on node1 -- sh -c 'sleep 4711 </dev/null >/dev/null 2>&1 &'
found=""
for p in $("$cluster" pids node1); do
  [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") == "sleep 4711 " ]] && found=$p
done
check "pids node1 lists the sleep started on node1 (root PID ${found:-none})" test -n "$found"
check "login does not see node1's sleep (pgrep)" bash -c '! "$1" exec login -- pgrep -f "sleep 4711" >/dev/null' _ "$cluster"
check "node0 does not see node1's sleep (pgrep)" bash -c '! "$1" exec node0 -- pgrep -f "sleep 4711" >/dev/null' _ "$cluster"
check "node1 sees its own sleep (pgrep)" on node1 -- pgrep -f "sleep 4711" >/dev/null
on node1 -- pkill -f "sleep 4711"

on node0 -- sh -c 'echo local > /tmp/node0-only'
check "a file in node0's /tmp is there on node0" on node0 -- test -e /tmp/node0-only
check "... and not on node1" on node1 -- test ! -e /tmp/node0-only
check "... and not on login" on login -- test ! -e /tmp/node0-only
check "the checkout is shared (login sees $root/ci)" on login -- test -x "$root/ci/slurm-cluster.sh"

check "exec passes the exit code" bash -c '"$1" exec node0 -- sh -c "exit 7"; [[ $? -eq 7 ]]' _ "$cluster"
check "exec passes stdin and stdout" bash -c '[[ $(echo through | "$1" exec node1 -- cat) == through ]]' _ "$cluster"

for h in login node0 node1; do
  addr=$(on "$h" -- getent hosts "$h" | awk '{print $1}')
  check "$h's own name resolves to its bridge address ($addr)" bash -c '[[ $1 == 10.* ]]' _ "$addr"
  routes=$(on "$h" -- ip -4 route show)
  check "$h has no default route (routes: $routes)" bash -c '! grep -q default <<<"$1" && [[ $(wc -l <<<"$1") -eq 1 ]]' _ "$routes"
done

# node0 reaches node1 by name over TCP: a file served by node1, fetched by node0.
on node1 -- sh -c 'echo "from node1" > /tmp/served; cd /tmp && exec python3 -m http.server 8765 --bind 0.0.0.0 </dev/null >/dev/null 2>&1 &'
got=$(on node0 -- python3 -c '
import time, urllib.request
for _ in range(100):
    try:
        print(urllib.request.urlopen("http://node1:8765/served", timeout=2).read().decode().strip()); break
    except OSError:
        time.sleep(0.1)' 2>&1)
check "node0 fetches http://node1:8765/ over the bridge ($got)" test "$got" == "from node1"
on node1 -- pkill -f "http.server 8765"

# --- a lost node ------------------------------------------------------------------------------------
"$cluster" link node1 down
start=$SECONDS
lost=""
while ((SECONDS - start <= slurmd_timeout + 15)); do
  s=$(on login -- sinfo -h -n node1 -o '%t')
  if [[ $s == *'*' || $s == down* ]]; then lost=$s; break; fi
  sleep 1
done
check "node1 unplugged: sinfo says '${lost:-still responding}' after $((SECONDS - start)) s (SlurmdTimeout $slurmd_timeout s)" test -n "$lost"
check "node0 still idle" test "$(on login -- sinfo -h -n node0 -o '%t')" == idle
"$cluster" link node1 up

# --- down -------------------------------------------------------------------------------------------
daemons=()
for h in login node0 node1; do
  for p in $("$cluster" pids "$h"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in slurmd | slurmctld | munged) daemons+=("$p") ;; esac
  done
done
inits=$(cat "$state"/hosts/*/init.pid "$state"/hosts/*/unshare.pid | tr '\n' ' ')
keep_logs
check "the daemons are there before down (${#daemons[@]}: slurmctld, munged, 2 slurmd)" test ${#daemons[@]} -eq 4
check "down" "$cluster" down
left=""
for p in "${daemons[@]}" $inits; do [[ -e /proc/$p ]] && left+=" $p"; done
check "down: no daemon or init left (pids ${daemons[*]} $inits)" test -z "$left"
check "down: the state folder is gone" test ! -e "$state"
check "down: no init of the cluster left" test -z "$(inits_of_state)"
check "down: no network namespace named by us" bash -c '! ip netns list | grep -q lockstep'
check "down twice" "$cluster" down

# Up again after down, and a failing up cleans up after itself.
check "up 1 after down" "$cluster" up 1
check "down again" "$cluster" down
fail_out=$(LOCKSTEP_SLURM_CPUS=bogus "$cluster" up 1 2>&1)
rc=$?
check "a failing up exits non-zero and says what failed (exit $rc)" \
  bash -c '[[ $1 -ne 0 ]] && grep -q "up failed while" <<<"$2"' _ "$rc" "$fail_out"
check "... and leaves nothing behind" test ! -e "$state" -a -z "$(inits_of_state)"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
