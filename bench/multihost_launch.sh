#!/usr/bin/env bash
# What several hosts cost (issue 46; docs/PERFORMANCE.md, "Several hosts"), measured on the
# project's own Slurm cluster (ci/slurm-cluster.sh, 2 nodes x 2 ranks, from the login host):
#
#   bench/multihost_launch.sh [PAIRS]       # default 5 pairs; root only
#
#   launch    the same 4 ranks of lockstep-rank (a 20-step DDP scenario on gloo, one check) started
#             bare by `srun -N2 --ntasks-per-node=2` inside an allocation, against `lockstep run
#             --launcher srun --nodes 2 --ntasks-per-node 2` of the same scenario, which also asks
#             for its allocation, starts an agent per node, streams the traces to the login host
#             and checks them: pairs alternating, both whole processes timed, the ratio and the
#             difference of the medians;
#   bytes     what a rank's agent sends a step: its trace bytes over the steps it recorded (every
#             byte of the trace crosses once, in frames of a few dozen bytes' overhead), and the
#             fixed stream beside it (a CPU sample a rank a second, a heartbeat every 0.5 s).
#
# The time from a node's loss to the finding is the multihost_node_lost test's ("judged N s after
# the cut"). Prints one table; writes nothing outside its own cluster state and /tmp of its hosts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCKSTEP_BUILD_DIR:-$root/build}
cluster=$root/ci/slurm-cluster.sh
pairs=${1:-5}
export LOCKSTEP_SLURM_STATE=${LOCKSTEP_SLURM_STATE:-/tmp/lockstep-multihost-bench}
on() { "$cluster" exec "$@"; }

[[ $(id -u) -eq 0 ]] || { echo "bench/multihost_launch.sh: needs root (the cluster's namespaces)" >&2; exit 2; }
"$cluster" down >/dev/null 2>&1 || true
"$cluster" up 2 >/dev/null
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT

# The scenario: 20 steps of a small DDP MLP on gloo, the one check that reads every step.
scenario=$(mktemp -d)/bench.yaml
cat >"$scenario" <<'EOF'
description: "bench/multihost_launch.sh: 20 DDP steps on gloo"
ranks: 4
backend: gloo
steps: 20
seed: 5
model: {kind: mlp, layers: 2, hidden: 32, input_dim: 16, output_dim: 4}
data: {batch_per_rank: 4}
parallel: {mode: ddp, bucket_mb: 1, grad_accum: 1}
optimizer: {kind: sgd, lr: 0.05, momentum: 0.9}
checks: [replica_weights]
EOF
# The shared file system holds the scenario; lockstep-rank writes node-local traces when bare.
shared=$build/bench-multihost
rm -rf "$shared" && mkdir -p "$shared"
cp "$scenario" "$shared/bench.yaml"
"$build/bin/lockstep" validate "$shared/bench.yaml" >/dev/null

now() { date +%s.%N; }
bare_s=() lockstep_s=()
for k in $(seq 1 "$pairs"); do
  t0=$(now)
  # Bare: the ranks as srun starts them, MASTER_ADDR the first node, traces on each node's /tmp.
  on login -- salloc -N2 --ntasks-per-node=2 sh -c "srun -N2 --ntasks-per-node=2 --mpi=none sh -c \
    'export RANK=\$SLURM_PROCID WORLD_SIZE=4 MASTER_ADDR=node0 MASTER_PORT=29610; \
     exec $build/bin/lockstep-rank --scenario $shared/bench.yaml --trace-dir /tmp/bare-$k'" >/dev/null 2>&1
  t1=$(now)
  on login -- "$build/bin/lockstep" run "$shared/bench.yaml" --launcher srun --nodes 2 --ntasks-per-node 2 \
    --out "/tmp/lockstep-$k" >/dev/null 2>&1
  t2=$(now)
  bare_s+=("$(python3 -c "print($t1 - $t0)")")
  lockstep_s+=("$(python3 -c "print($t2 - $t1)")")
done

trace_bytes=$(on login -- stat -c %s /tmp/lockstep-1/bench/traces/rank-3.trace)
python3 - "$pairs" "$trace_bytes" "${bare_s[@]}" "${lockstep_s[@]}" <<'PY'
import statistics, sys
pairs, trace = int(sys.argv[1]), int(sys.argv[2])
bare = [float(x) for x in sys.argv[3:3 + pairs]]
lock = [float(x) for x in sys.argv[3 + pairs:3 + 2 * pairs]]
mb, ml = statistics.median(bare), statistics.median(lock)
print(f"pairs {pairs}; bare srun (salloc + 4 ranks) median {mb:.2f} s; lockstep run --launcher srun median {ml:.2f} s")
print(f"launch: x{ml / mb:.2f}, +{ml - mb:.2f} s (allocation, agents, streaming, stop, the check and the reports)")
print(f"bytes: rank 3's trace {trace} bytes over 21 records of steps 0-20: {trace / 21:.0f} bytes a step, "
      f"plus about 60 bytes a second of CPU samples a rank and 120 of heartbeats a node")
PY
