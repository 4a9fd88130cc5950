#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for the multi-host tests (issue 46): Debian 12's own
# Slurm 22.05 (slurmctld, slurmd, slurm-client) and munge, each host a set of Linux namespaces.
#
#   ci/slurm-cluster.sh up N                  # login + compute nodes node0..node{N-1}; refuses if up
#   ci/slurm-cluster.sh down                  # stops and removes everything it made; exit 0 if not up
#   ci/slurm-cluster.sh exec HOST -- CMD...   # CMD inside HOST (login, node0, ..., fabric); its exit code
#   ci/slurm-cluster.sh pids HOST             # root-namespace PIDs of HOST's processes but its init
#   ci/slurm-cluster.sh status                # which hosts are up, and sinfo
#   ci/slurm-cluster.sh link HOST down|up     # unplug / replug HOST's cable at the switch (a lost node)
#   ci/slurm-cluster.sh deps                  # install the Debian packages if missing (up does too)
#
# Must run as root. Variables: LOCKSTEP_SLURM_STATE (the state folder, default
# /tmp/lockstep-slurm-cluster; one cluster per state folder), LOCKSTEP_SLURM_SUBNET (the first three
# octets of the /24, default 10.77.0), LOCKSTEP_SLURM_CPUS (CPUs per node, default 8).
#
# The hosts. Each host is one long-lived init process (a small reaper, PID 1 of the host's PID
# namespace; its root-namespace PID is in STATE/hosts/HOST/init.pid) started by
# `unshare --net --uts --ipc --mount --pid --fork --mount-proc`, so it has its own network, host
# name, System V IPC, mounts and processes; `exec` enters them with nsenter.
#   fabric   the switch: a bridge (br0) and one veth per host, no address; no other host sees it
#   login    SUBNET.2: slurmctld, munged, and where users run salloc/srun/sbatch
#   nodeK    SUBNET.(10+K): slurmd
# Addresses are SUBNET.0/24 on the bridge only: no default route, no route out, no NAT. The root
# network namespace has no interface on the bridge at all (nothing is created there), so nothing
# in the cluster can reach this machine's network and the cluster disappears with its processes.
#
# Mounts in each host's mount namespace (private propagation; all of them vanish with the host):
#   /tmp            STATE/hosts/HOST/tmp, the host's local disk (no other host sees it)
#   /run            STATE/hosts/HOST/run (pid files); /dev/shm a tmpfs of its own; /sys its own sysfs
#   /var/lib/slurm  STATE/hosts/HOST/lib (slurmctld's state, slurmd's spool); /var/log/slurm its logs
#   /etc/slurm      STATE/etc/slurm (slurm.conf, the same for all hosts; SLURM_CONF is set by exec)
#   /etc/hosts      STATE/etc/hosts: every host name to its bridge address (the own name too, not
#                   127.0.1.1: gloo and TCPStore resolve the host name to pick their interface)
#   /run/munge      STATE/munge/run: the socket of the one munged, which runs on login as user munge
#                   with its own key (STATE/munge/etc, bound to /etc/munge on login only). A
#                   path-named Unix socket is reached through a bind mount from any network
#                   namespace, so every host's slurmd and srun use this one daemon.
# Everything else (/work, /usr, the build folder and its .venv, /home, /etc/passwd) is shared, as a
# cluster's shared file system would be. The default state folder is under /tmp, which no host sees.
#
# Slurm: slurm.conf in STATE/etc/slurm: proctrack/linuxproc, task/none (no cgroups), select/cons_tres
# with whole nodes per job (OverSubscribe=EXCLUSIVE: srun -N2 -n4 puts 2 tasks on each node) and
# several steps per node (srun --overlap), CPUs=8 per node however many the machine has,
# PrologFlags=Alloc (avoids a slurmd crash, see slurm.conf), SlurmdTimeout=10 (a lost node is "not
# responding" within about 10 s and DOWN after about 17 s; a replugged one is back within about a
# minute, or at once with `scontrol update nodename=X state=resume`), ReturnToService=2,
# MpiDefault=none (srun --mpi=pmix works: the pmix plugin is in slurm-wlm-basic-plugins and loads
# libpmix-dev's libpmix.so), SlurmUser root (jobs run as root or as any user of the shared
# /etc/passwd). Each slurmd runs in its own namespaces, so Debian's build (one slurmd per host: fixed
# pid file, spool, port 6818) needs no --enable-multiple-slurmd. Logs: STATE/hosts/*/log/,
# STATE/munge/log/; the daemons' own output in STATE/hosts/*/daemons.log.
#
# A failing `up` says which step failed, prints the logs' last lines and removes what it made
# (LOCKSTEP_SLURM_KEEP_ON_FAILURE=1 leaves it for a look; `down` removes it then).
set -euo pipefail

self=$(readlink -f "$0")
state=${LOCKSTEP_SLURM_STATE:-/tmp/lockstep-slurm-cluster}
subnet=${LOCKSTEP_SLURM_SUBNET:-10.77.0}
cpus=${LOCKSTEP_SLURM_CPUS:-8}
marker=.lockstep-slurm-cluster
packages=(slurmctld slurmd slurm-client munge libpmix-dev)
up_timeout=${LOCKSTEP_SLURM_UP_TIMEOUT:-60}

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

usage() {
  sed -n '2,11p' "$self" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

host_addr() {
  case $1 in
    login) echo "$subnet.2" ;;
    node[0-9]*) echo "$subnet.$((10 + ${1#node}))" ;;
    *) return 1 ;;
  esac
}

# --- hosts' init (runs as PID 1 of a new set of namespaces) ---------------------------------------

# The reaper every host ends as: PID 1 of the host's PID namespace adopts every orphan (daemons,
# steps' leftovers, `exec`'s children once nsenter is gone) and must reap them.
reaper='import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)'

host_init() {
  local st=$1 host=$2
  local d=$st/hosts/$host
  hostname "$host"
  ip link set lo up
  if [[ -w /proc/sys/net/ipv6/conf/default/disable_ipv6 ]]; then
    echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6   # eth0 (created later) IPv4 only
  fi
  if [[ $host != fabric ]]; then
    mount --bind "$d/run" /run
    mount --bind "$st/munge/run" /run/munge
    mount --bind "$st/etc/slurm" /etc/slurm
    mount --bind "$st/etc/hosts" /etc/hosts
    mount --bind "$d/lib" /var/lib/slurm
    mount --bind "$d/log" /var/log/slurm
    if [[ $host == login ]]; then
      mount --bind "$st/munge/etc" /etc/munge
      mount --bind "$st/munge/lib" /var/lib/munge
      mount --bind "$st/munge/log" /var/log/munge
    fi
    mount -t tmpfs -o mode=1777,size=50% lockstep-shm /dev/shm
    # A sysfs of the host's network namespace (/sys/class/net: its own eth0), with the machine's
    # cgroup mounts moved onto it (Debian's slurmd initializes its cgroup plugin even with
    # proctrack/linuxproc and task/none, and gives up if /sys/fs/cgroup is not mounted).
    mkdir -p /run/.cgroup
    if mountpoint -q /sys/fs/cgroup && mount --rbind /sys/fs/cgroup /run/.cgroup; then
      if mount -t sysfs lockstep-sysfs /sys 2>/dev/null; then
        mount --move /run/.cgroup /sys/fs/cgroup
      else
        umount -R /run/.cgroup
      fi
    fi
    rmdir /run/.cgroup 2>/dev/null || true
    mount --bind "$d/tmp" /tmp   # last: STATE may be under /tmp
  fi
  echo ready
  local python=/usr/bin/python3
  [[ -x $python ]] || python=python3
  exec "$python" -c "$reaper" __init "$st" "$host"
}

# --- helpers in the root namespace ---------------------------------------------------------------

# The init PID of HOST if that init is alive and ours (its command line names this state folder).
init_pid() {
  local f=$state/hosts/$1/init.pid pid
  [[ -r $f ]] || return 1
  pid=$(<"$f")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "__init $state $1 " || return 1
  echo "$pid"
}

# Every process of ours: the inits (by their command line, also those whose pid file was never
# written) and the unshare processes above them.
our_processes() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    if [[ $cmd == *" __init $state "* ]]; then echo "${p#/proc/}"; fi
  done
  cat "$state"/hosts/*/unshare.pid 2>/dev/null || true
}

# Closes every descriptor but 0, 1 and 2 (in the subshell that starts a long-lived process, which
# must not hold the caller's pipes open).
close_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

daemon_in() {   # daemon_in HOST CMD...: start a daemon in HOST, its output to HOST's daemons.log
  local h=$1
  (close_fds; in_host "$@") >>"$state/hosts/$h/daemons.log" 2>&1 </dev/null
}

in_host() {   # in_host HOST CMD...: CMD in HOST's namespaces, working directory /
  local pid
  pid=$(init_pid "$1") || { say "host $1 is not up"; return 1; }
  shift
  SLURM_CONF=/etc/slurm/slurm.conf nsenter --target "$pid" --net --uts --ipc --mount --pid -- "$@"
}

hosts_of_state() {   # the hosts this state folder has, fabric and login first
  local h
  [[ -d $state/hosts ]] || return 0
  for h in fabric login; do [[ -d $state/hosts/$h ]] && echo "$h"; done
  for h in "$state"/hosts/node*; do [[ -d $h ]] && basename "$h"; done | sort -V
}

missing_packages() {
  local p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

cmd_deps() {
  local missing
  mapfile -t missing < <(missing_packages)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "could not install ${missing[*]} with apt-get"
}

# --- down ------------------------------------------------------------------------------------------

cmd_down() {
  if [[ ! -e $state ]]; then
    return 0
  fi
  if [[ ! -e $state/$marker ]]; then
    die "$state exists but was not made by this script (no $marker in it); not touching it"
  fi
  local pids=() nslinks=() p h n
  for h in $(hosts_of_state); do
    if p=$(init_pid "$h"); then
      nslinks+=("$(readlink "/proc/$p/ns/pid" 2>/dev/null || true)")
    fi
  done
  mapfile -t pids < <(our_processes | sort -u)
  # SIGKILL to the init of a PID namespace kills every process in it; the unshare above each init
  # then exits (and would kill its init if it went first: --kill-child).
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for ((n = 0; n < 100; n++)); do
    local left=0
    for p in "${pids[@]}"; do [[ -e /proc/$p ]] && left=1; done
    if ((left == 0 && ${#nslinks[@]} > 0)); then
      for p in /proc/[0-9]*; do
        local l
        l=$(readlink "$p/ns/pid" 2>/dev/null) || continue
        for h in "${nslinks[@]}"; do [[ $l == "$h" && -n $h ]] && left=1; done
        ((left)) && break
      done
    fi
    ((left == 0)) && break
    sleep 0.1
  done
  ((left == 0)) || say "warning: some processes of the cluster did not exit"
  rm -rf --one-file-system "$state" || die "could not remove $state"
}

# --- up --------------------------------------------------------------------------------------------

write_config() {
  local n=$1 k
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    echo "$(host_addr login) login"
    for ((k = 0; k < n; k++)); do echo "$(host_addr "node$k") node$k"; done
  } >"$state/etc/hosts"
  cat >"$state/etc/slurm/slurm.conf" <<EOF
# Written by ci/slurm-cluster.sh: a test cluster in Linux namespaces on one machine.
ClusterName=lockstep
SlurmctldHost=login($(host_addr login))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# CPUs as configured below, whatever this machine has (oversubscribed: a test cluster).
SlurmdParameters=config_overrides
ReturnToService=2
# The job is set up on its nodes at allocation, not by its first step: Debian's slurmd 22.05.8
# corrupts its heap (abort in malloc, under nodelist_find) about once in 20 new jobs whose first
# two steps reach a node at the same moment (two srun --overlap at once after salloc).
PrologFlags=Alloc
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=5
TCPTimeout=2
KillWait=2
InactiveLimit=0
MinJobAge=60
BatchStartTimeout=10
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=/tmp
EOF
  for ((k = 0; k < n; k++)); do
    echo "NodeName=node$k NodeAddr=$(host_addr "node$k") CPUs=$cpus State=UNKNOWN"
  done >>"$state/etc/slurm/slurm.conf"
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE" \
    >>"$state/etc/slurm/slurm.conf"
}

start_host() {   # start_host HOST: its init, in the background; pid files written by wait_host
  local h=$1 d=$state/hosts/$1
  mkdir -p "$d"/{run/munge,lib/slurmctld,lib/slurmd,log,tmp}
  chmod 1777 "$d/tmp"
  # setsid: the cluster outlives this shell's session and its Ctrl-C; without a fork (a background
  # job is no group leader), so $! is unshare's PID. No descriptor of the caller's but the log.
  (close_fds; exec setsid unshare --net --uts --ipc --mount --pid --fork --mount-proc --kill-child \
    -- bash "$self" __init "$state" "$h") >"$d/init.log" 2>&1 </dev/null &
  echo $! >"$d/unshare.pid"
  disown $!
}

wait_host() {   # wait_host HOST: until its init has set the host up (prints "ready")
  local h=$1 d=$state/hosts/$1 u c n
  u=$(<"$d/unshare.pid")
  for ((n = 0; n < 200; n++)); do
    c=$(cat "/proc/$u/task/$u/children" 2>/dev/null || true)
    c=${c%% *}
    if [[ -n $c ]]; then echo "$c" >"$d/init.pid"; fi
    if grep -qx ready "$d/init.log" 2>/dev/null && [[ -s $d/init.pid ]]; then return 0; fi
    if [[ ! -e /proc/$u ]]; then break; fi
    sleep 0.05
  done
  say "host $h did not come up; its init said:"
  sed 's/^/  /' "$d/init.log" >&2 || true
  return 1
}

cable() {   # cable HOST: a veth from the switch to HOST's eth0, the address on it
  local h=$1 sw host
  sw=$(init_pid fabric) && host=$(init_pid "$h") || return 1
  ip link add name "v-$h" netns "$sw" type veth peer name eth0 netns "$host"
  nsenter --target "$sw" --net ip link set "v-$h" master br0 up
  nsenter --target "$host" --net ip addr add "$(host_addr "$h")/24" dev eth0
  nsenter --target "$host" --net ip link set eth0 up
}

show_logs() {
  local f
  for f in "$state"/hosts/*/log/*.log "$state"/munge/log/*.log "$state"/hosts/*/daemons.log; do
    [[ -s $f ]] || continue
    say "--- ${f#"$state"/} (last lines)"
    tail -n 15 "$f" | sed 's/^/  /' >&2
  done
}

step="checking"
up_failed() {   # up's EXIT trap: a failure anywhere (set -e) ends here
  local rc=$?
  trap - EXIT INT TERM
  set +e
  exec 1>&4 2>&3   # the caller's, whatever redirection the failing command had
  say "up failed while $step (exit $rc)"
  show_logs
  if [[ -n ${LOCKSTEP_SLURM_KEEP_ON_FAILURE:-} ]]; then
    say "LOCKSTEP_SLURM_KEEP_ON_FAILURE: left as it is; '$0 down' removes it"
  else
    cmd_down
  fi
  exit 1
}

cmd_up() {
  local n=${1:-}
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "usage: up N (1 to 200 compute nodes)"
  [[ $(id -u) -eq 0 ]] || die "must run as root (namespaces, bridge, daemons)"
  [[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "LOCKSTEP_SLURM_SUBNET must be three octets, e.g. 10.77.0"
  if [[ -e $state ]]; then
    if [[ ! -e $state/$marker ]]; then
      die "$state exists and is not a cluster's state folder; set LOCKSTEP_SLURM_STATE elsewhere"
    fi
    local h alive=()
    for h in $(hosts_of_state); do init_pid "$h" >/dev/null && alive+=("$h"); done
    if ((${#alive[@]} > 0)); then
      die "a cluster is already up (${alive[*]}; state $state): run '$0 down' first"
    fi
    say "removing the leftovers of a cluster that is no longer up ($state)"
    cmd_down
  fi
  if ip -4 route show | grep -q "^${subnet//./\\.}\."; then
    die "this machine already routes $subnet.0/24; choose another LOCKSTEP_SLURM_SUBNET"
  fi
  local t
  for t in unshare nsenter setsid ip python3 setpriv; do
    command -v "$t" >/dev/null || die "$t is missing"
  done
  cmd_deps
  for t in slurmctld slurmd munged sinfo srun; do
    command -v "$t" >/dev/null || die "$t is missing after installing ${packages[*]}"
  done

  local start=$SECONDS k h hosts=(fabric login)
  for ((k = 0; k < n; k++)); do hosts+=("node$k"); done
  mkdir -m 0755 "$state" || die "cannot create $state"
  touch "$state/$marker"
  exec 3>&2 4>&1
  trap up_failed EXIT
  trap 'step="$step (interrupted)"; exit 130' INT TERM

  step="writing the configuration and the munge key"
  mkdir -p "$state/etc/slurm" "$state/munge"/{etc,lib,log,run} "$state/hosts"
  write_config "$n"
  dd if=/dev/urandom of="$state/munge/etc/munge.key" bs=1024 count=1 status=none
  chmod 0700 "$state/munge/etc" "$state/munge/log" "$state/munge/lib"
  chmod 0755 "$state/munge/run"
  chmod 0400 "$state/munge/etc/munge.key"
  chown -R munge:munge "$state/munge"

  step="starting the hosts' namespaces"
  for h in "${hosts[@]}"; do start_host "$h"; done
  for h in "${hosts[@]}"; do wait_host "$h"; done

  step="wiring the network (bridge br0 in fabric, $subnet.0/24)"
  in_host fabric ip link add br0 type bridge
  in_host fabric ip link set br0 up
  for h in "${hosts[@]:1}"; do cable "$h"; done

  step="starting munged on login"
  daemon_in login setpriv --reuid=munge --regid=munge --clear-groups munged
  local cred
  cred=$(in_host login munge -n </dev/null)
  in_host login unmunge <<<"$cred" >/dev/null

  step="starting slurmctld on login"
  daemon_in login slurmctld
  step="starting slurmd on the nodes"
  local pids=()
  for ((k = 0; k < n; k++)); do
    daemon_in "node$k" slurmd &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k"; done

  step="waiting for the $n nodes to be idle in sinfo (${up_timeout} s)"
  local deadline=$((SECONDS + up_timeout)) states=""
  while :; do
    states=$(in_host login sinfo -h -N -o '%N %t' 2>/dev/null | sort -u || true)
    if [[ $(grep -c ' idle$' <<<"$states") -eq $n ]]; then break; fi
    if ((SECONDS >= deadline)); then
      say "node states: ${states:-none (slurmctld does not answer)}"
      false
    fi
    sleep 0.2
  done
  trap - EXIT INT TERM
  exec 3>&- 4>&-
  local nodes=node0
  ((n > 1)) && nodes="node[0-$((n - 1))]"
  say "up: login $(host_addr login) (slurmctld, munged), $nodes (slurmd), $subnet.0/24, $((SECONDS - start)) s; state $state"
}

# --- exec, pids, status, link ----------------------------------------------------------------------

cmd_exec() {
  local host=${1:-} pid
  [[ -n $host ]] || usage
  shift
  [[ ${1:-} == -- ]] && shift
  [[ $# -gt 0 ]] || usage
  pid=$(init_pid "$host") || die "host $host is not up (state $state)"
  # nsenter forks into the PID namespace, waits, and exits with the command's status (or dies of
  # its signal). The working directory is kept where the host has it (shared paths), else /.
  SLURM_CONF=/etc/slurm/slurm.conf exec nsenter --target "$pid" --net --uts --ipc --mount --pid -- \
    /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$PWD" "$@"
}

cmd_pids() {
  local host=${1:-} pid ns p
  [[ -n $host ]] || usage
  pid=$(init_pid "$host") || die "host $host is not up (state $state)"
  ns=$(readlink "/proc/$pid/ns/pid")
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == "$pid" ]] && continue
    [[ $(readlink "/proc/$p/ns/pid" 2>/dev/null) == "$ns" ]] && echo "$p"
  done | sort -n
}

cmd_status() {
  local h pid any=0
  if [[ ! -e $state/$marker ]]; then
    echo "no cluster (state $state)"
    return 1
  fi
  for h in $(hosts_of_state); do
    if pid=$(init_pid "$h"); then
      printf '%-8s up    init %-8s %s\n' "$h" "$pid" "$(host_addr "$h" || echo switch)"
      any=1
    else
      printf '%-8s DOWN\n' "$h"
    fi
  done
  ((any)) || return 1
  in_host login sinfo -N -o '%N %P %c %T' || true
}

cmd_link() {
  local host=${1:-} updown=${2:-}
  [[ -n $host && ( $updown == up || $updown == down ) ]] || usage
  in_host fabric ip link set "v-$host" "$updown"
}

case ${1:-} in
  __init) shift; host_init "$@" ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down ;;
  exec) shift; cmd_exec "$@" ;;
  pids) shift; cmd_pids "$@" ;;
  status) shift; cmd_status ;;
  link) shift; cmd_link "$@" ;;
  deps) shift; [[ $(id -u) -eq 0 ]] || die "must run as root"; cmd_deps ;;
  *) usage ;;
esac
