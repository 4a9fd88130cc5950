#!/usr/bin/env python3
"""Per-step overhead of lockstep's Python probe on a real PyTorch DDP training step.

Runs the same DDP program (an MLP of about 10M parameters, AdamW, gloo on CPU) as N ranks, once
without the probe and once with it (LOCKSTEP_PROBE=1, the staged probe on PYTHONPATH), in
alternating order, `--repeats` times each, all in this one invocation. Every rank times each
training step inside the program (zero_grad, forward, backward, optimizer step; the probe's
step record is written in the next step's forward pre-hook, so it is inside the timed steps);
the first `--warmup` steps are dropped. Reports the median step time of each variant and the
median of the per-repeat ratios, for wall time and for the process's CPU time (all its threads):
on a machine shared with other work, wall time mostly measures the others' load, CPU time what
the step itself cost.

The yardstick (issue 38): after every step of the probed run, each rank also times one read of
exactly the bytes the probe digests (its parameters, gradients, optimizer state and buffers; the
byte count is checked against the probe's own trace) with the extension's `read_seconds` (the
loop of harness/trace/read_yardstick.h). `probe_over_read` is the median over the kept steps of
the probe's own CPU time in that step (its thread, in its hooks) over that step's read (the same
thread's CPU time): 1.0 would be the price of reading the state once. CPU time, because on a
machine shared with other work both wall times mostly measure the others' load.

  .venv/bin/python bench/probe_overhead.py --stage build/python   # 2 ranks, 30 steps, 5 repeats
  .venv/bin/python bench/probe_overhead.py --stage build/python --markdown  # the row for docs/PERFORMANCE.md
  .venv/bin/python bench/probe_overhead.py --stage build/python --model fsdp2  # the same MLP under FSDP2
  .venv/bin/python bench/probe_overhead.py --stage build/python --model deep --width 64 --layers 64 --batch 32
      # 64 small Linear+LayerNorm layers (1280 tensors a record): the probe's cost per tensor

With --model fsdp2 the MLP is sharded with `fully_shard` over a 1-D mesh of all ranks: every
parameter, gradient and moment is a DTensor whose replica group the probe derives (one lookup per
tensor, the group written once), and each rank digests its shard only.
"""
import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile


def worker(args):
    import time

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    width = args.width
    if args.model == "deep":
        # Many small tensors: the probe's work per tensor, not the bytes it reads, is the cost.
        layers = []
        for _ in range(args.layers):
            layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU()]
        model = nn.Sequential(*layers)
    else:
        model = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, 2 * width), nn.ReLU(),
                              nn.Linear(2 * width, width))
    params = sum(p.numel() for p in model.parameters())
    if args.model == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        ddp = fully_shard(model, mesh=mesh)
    else:
        ddp = DDP(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    data = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, width, generator=data)
    y = torch.randn(args.batch, width, generator=data)
    # The probe's own time in its hooks (this rank's), read after every step: its direct cost per
    # step, over the kept steps only (the first steps pay one-time costs: finding the models,
    # imports). A step's record is written in the next step's first forward pre-hook, so each
    # kept step holds one record's worth of work.
    busy_now = lambda: (0.0, 0.0)  # noqa: E731
    if os.environ.get("LOCKSTEP_PROBE") == "1":
        from lockstep import probe

        busy_now = probe.busy_seconds
    read_seconds = None
    if os.environ.get("LOCKSTEP_PROBE") == "1":
        from lockstep import _lockstep_probe

        read_seconds = _lockstep_probe.read_seconds
    times, cpu, busy, reads = [], [], [], []
    read_bytes = 0
    for _ in range(args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        busy.append(list(busy_now()))
        if read_seconds:
            state = digested_tensors(model, optimizer)
            read_bytes = sum(t.numel() * t.element_size() for t in state)
            reads.append(list(read_seconds(state)))
    dist.barrier()
    with open(os.path.join(args.out, "times-%d.json" % rank), "w") as f:
        json.dump({"params": params, "times": times, "cpu": cpu, "busy": busy, "reads": reads,
                   "read_bytes": read_bytes}, f)
    dist.destroy_process_group()


def digested_tensors(model, optimizer):
    """What the probe digests after a step, as this rank holds it (a DTensor's local shard):
    parameters, their gradients, the optimizer's state tensors, buffers; contiguous CPU tensors."""
    import torch

    def local(t):
        return t.to_local() if hasattr(t, "to_local") else t

    out = [local(p.detach()) for p in model.parameters()]
    out += [local(p.grad) for p in model.parameters() if p.grad is not None]
    for st in optimizer.state.values():
        out += [local(v) for v in st.values() if isinstance(v, torch.Tensor)]
    out += [local(b) for b in model.buffers()]
    return [t.contiguous() for t in out]


def traced_bytes(trace):
    """Bytes of the tensors the last `tensors` record of a trace lists (numel x dtype size)."""
    size = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
    total = None
    with open(trace, errors="replace") as f:
        for line in f:
            if line.startswith('{"type":"tensors"'):
                total = sum(t["numel"] * size[t["dtype"]] for t in json.loads(line)["tensors"])
    return total


def run_variant(args, probe, workdir, port):
    out = tempfile.mkdtemp(dir=workdir)
    env = dict(os.environ)
    env.pop("LOCKSTEP_PROBE", None)
    env.update({"WORLD_SIZE": str(args.ranks), "LOCAL_WORLD_SIZE": str(args.ranks), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port), "OMP_NUM_THREADS": str(args.threads)})
    if probe:
        env["LOCKSTEP_PROBE"] = "1"
        env["LOCKSTEP_TRACE_DIR"] = os.path.join(out, "traces")
        env["LOCKSTEP_RUN_NAME"] = "probe_overhead"
        env["PYTHONPATH"] = os.path.abspath(args.stage) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    procs = []
    for r in range(args.ranks):
        env_r = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--out", out, "--steps", str(args.steps),
               "--width", str(args.width), "--batch", str(args.batch), "--threads", str(args.threads),
               "--model", args.model, "--layers", str(args.layers)]
        procs.append(subprocess.Popen(cmd, env=env_r))
    for p in procs:
        if p.wait() != 0:
            sys.exit("probe_overhead: a rank failed (exit %d)" % p.returncode)
    with open(os.path.join(out, "times-0.json")) as f:
        result = json.load(f)
    if probe:
        trace = os.path.join(out, "traces", "rank-0.trace")
        # Step 0 is the initial state (docs/TRACE.md), written as the first optimizer step begins.
        steps = sum(1 for line in open(trace, errors="replace")
                    if line.startswith('{"type":"step"') and not line.startswith('{"type":"step","step":0,'))
        if steps != args.steps:
            sys.exit("probe_overhead: the probe recorded %d steps, not %d" % (steps, args.steps))
        traced = traced_bytes(trace)
        if traced != result["read_bytes"]:
            sys.exit("probe_overhead: the yardstick read %s bytes, the probe digested %s" % (result["read_bytes"], traced))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", default="build/python", help="the staged probe (<build>/python)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--width", type=int, default=1120, help="MLP width: 1120 gives 10.0M parameters")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--model", choices=("ddp", "fsdp2", "deep"), default="ddp",
                    help="how the MLP is data-parallel; deep: --layers small layers under DDP")
    ap.add_argument("--layers", type=int, default=64, help="--model deep: Linear+LayerNorm layers (4 tensors each)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not os.path.isdir(os.path.join(args.stage, "lockstep")):
        sys.exit("probe_overhead: no staged probe in %s (build the lockstep_probe target)" % args.stage)
    workdir = tempfile.mkdtemp(prefix="probe_overhead.")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    off_all, on_all, ratios, cpu_ratios, direct, direct_cpu, one_time = [], [], [], [], [], [], []
    over_read, read_ms = [], []
    params = 0
    for repeat in range(args.repeats):
        order = (False, True) if repeat % 2 == 0 else (True, False)
        medians, cpu_medians = {}, {}
        for probe in order:
            r = run_variant(args, probe, workdir, port + repeat * 2 + int(probe))
            params = r["params"]
            kept = r["times"][args.warmup:]
            medians[probe] = statistics.median(kept)
            cpu_medians[probe] = statistics.median(r["cpu"][args.warmup:])
            if probe:
                # busy[i] is the running total after step i; the kept steps' share of it.
                first, last = r["busy"][args.warmup - 1] if args.warmup else [0.0, 0.0], r["busy"][-1]
                kept_steps = args.steps - args.warmup
                busy_wall, busy_cpu = ((b - a) / kept_steps for a, b in zip(first, last))
                # What the warm-up steps cost beyond as many steady ones: the probe's one-time work.
                one_time.append(first[0] - busy_wall * args.warmup)
                # Step i's own probe CPU time (in its hooks) over step i's read of the same bytes.
                busy = r["busy"]
                pairs = [((busy[i][1] - busy[i - 1][1]), r["reads"][i][1]) for i in range(max(args.warmup, 1), args.steps)]
                over_read.append(statistics.median(b / rd for b, rd in pairs if rd > 0))
                read_ms.append(statistics.median(rd for _, rd in pairs) * 1e3)
                read_mb = r["read_bytes"] / 1e6
            (on_all if probe else off_all).extend(kept)
        ratios.append(medians[True] / medians[False])
        cpu_ratios.append(cpu_medians[True] / cpu_medians[False])
        direct.append(busy_wall / medians[False])
        direct_cpu.append(busy_cpu / cpu_medians[False])
        print("repeat %d: without %.1f ms, with %.1f ms per step (%+.2f%%); CPU time %.1f / %.1f ms (%+.2f%%)" % (
            repeat + 1, medians[False] * 1e3, medians[True] * 1e3, (ratios[-1] - 1) * 100,
            cpu_medians[False] * 1e3, cpu_medians[True] * 1e3, (cpu_ratios[-1] - 1) * 100), flush=True)
        print("          the probe's own time per step: %.1f ms wall, %.1f ms CPU = %.2f%% / %.2f%% of the step "
              "without it" % (busy_wall * 1e3, busy_cpu * 1e3, direct[-1] * 100, direct_cpu[-1] * 100), flush=True)
        print("          one read of the %.0f MB it digests: %.1f ms CPU; probe_over_read %.2f" % (
            read_mb, read_ms[-1], over_read[-1]), flush=True)
    off, on = statistics.median(off_all), statistics.median(on_all)
    ratio = statistics.median(ratios)
    cpu_ratio = statistics.median(cpu_ratios)
    direct_ratio, direct_cpu_ratio = statistics.median(direct), statistics.median(direct_cpu)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch

    shape = "%.1fM-parameter MLP" % (params / 1e6) if args.model != "deep" else (
        "%d-layer MLP of width %d (%.2fM parameters, %d tensors)" % (args.layers, args.width, params / 1e6, 4 * args.layers))
    summary = ("%s, AdamW, %s on gloo, %d ranks x %d thread(s), batch %d per rank: "
               "%.1f ms per step without the probe, %.1f ms with it: wall-time overhead %+.2f%%, CPU-time "
               "overhead %+.2f%% (medians of %d paired repeats); the probe's own time in its hooks: %.2f%% of the "
               "step's wall time, %.2f%% of its CPU time, plus %.0f ms once in the first steps; probe_over_read %.2f "
               "(its CPU time per step over one read of the %.0f MB it digests, %.1f ms)" % (
                   shape, "FSDP2" if args.model == "fsdp2" else "DDP", args.ranks, args.threads, args.batch, off * 1e3, on * 1e3, (ratio - 1) * 100,
                   (cpu_ratio - 1) * 100, args.repeats, direct_ratio * 100, direct_cpu_ratio * 100,
                   statistics.median(one_time) * 1e3 if one_time else 0.0, statistics.median(over_read), read_mb,
                   statistics.median(read_ms)))
    print(summary)
    if args.markdown:
        print("| %s | %s, %d cores, torch %s | %s |" % (
            datetime.datetime.utcnow().strftime("%Y-%m-%d"), cpu, os.cpu_count(), torch.__version__, summary))


if __name__ == "__main__":
    main()
