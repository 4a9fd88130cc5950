#!/usr/bin/env python3
"""Where the checks' time goes in a step: two torch-profiler Chrome traces of the same steps, one
without lockstep's checks and one with them (ci/gpu-checks.sh, check `cost`; docs/PERFORMANCE.md).

  ci/gpu-profile-breakdown.py --without A.json --with B.json [--tensors N] [--name NAME]
                              [--json OUT.json] [--markdown OUT.md]

Each trace holds the same number of steps, each inside a user range named `profile.step`
(bench/torch_profile.cc for lockstep-bench, ci/gpu-ddp-step.py for the probe). lockstep's own work
is inside user ranges named `lockstep.*` (the rank's capture and write, the digest, the probe's
hooks). Per step, averaged over the steps of each trace:

  step            the step's wall time on the host, the median of the steps (the first profiled
                  step also pays the profiler's start); without, with, difference;
  lockstep        the time inside lockstep's outermost ranges, split exclusively into
                    sync      waiting for the device: cuda*Synchronize and blocking cudaMemcpy;
                    launch    kernel launch calls (cudaLaunchKernel*, cuLaunchKernel*);
                    copy      asynchronous copies and sets queued (cudaMemcpyAsync, cudaMemset*);
                    runtime   every other CUDA runtime or driver call (events, attributes, allocation);
                    ops       LibTorch operators on the host outside those calls (dispatch, CPU work);
                    host      the rest: lockstep's own host code (per tensor with --tensors);
  elsewhere       step difference - lockstep: what the checks cost outside their ranges (the
                  recording communicator, a device kept busier, noise);
  gpu             kernels, copies and sets on the device: counts, microseconds, copied bytes, and
                  the kernels whose count differs between the traces (lockstep's own among them).

Exit status 0, or 2 when a trace is missing, unreadable or has no `profile.step` range."""
import argparse
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

STEP = "profile.step"
OWN = "lockstep."
SYNC = re.compile(r"Synchronize|^cudaMemcpy$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$")
LAUNCH = re.compile(r"Launch")
COPY = re.compile(r"Memcpy|Memset")
PARTS = ("sync", "launch", "copy", "runtime", "ops", "host")


class TraceError(Exception):
    pass


def load(path):
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise TraceError(f"{path}: cannot read the trace: {e}") from None
    events = doc.get("traceEvents", doc) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceError(f"{path}: no traceEvents list")
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e:
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
        except (TypeError, ValueError):
            continue
        out.append({"cat": str(e.get("cat", "")).lower(), "name": str(e.get("name", "")),
                    "ts": ts, "end": ts + dur, "tid": e.get("tid"), "pid": e.get("pid"),
                    "args": e.get("args") or {}})
    return out


def union(intervals):
    """Sorted, merged copy of [(start, end)]."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        elif e > s:
            merged.append([s, e])
    return merged


def length(intervals):
    return sum(e - s for s, e in intervals)


def clip(intervals, windows):
    """The parts of merged `intervals` that lie inside merged `windows`."""
    out, j = [], 0
    for s, e in intervals:
        while j < len(windows) and windows[j][1] <= s:
            j += 1
        k = j
        while k < len(windows) and windows[k][0] < e:
            lo, hi = max(s, windows[k][0]), min(e, windows[k][1])
            if hi > lo:
                out.append([lo, hi])
            k += 1
    return out


def minus(intervals, holes):
    """Merged `intervals` less merged `holes`."""
    out = []
    for s, e in intervals:
        cur = s
        for hs, he in holes:
            if he <= cur or hs >= e:
                continue
            if hs > cur:
                out.append([cur, hs])
            cur = max(cur, he)
        if cur < e:
            out.append([cur, e])
    return out


def runtime_kind(name):
    if SYNC.search(name):
        return "sync"
    if LAUNCH.search(name):
        return "launch"
    if COPY.search(name):
        return "copy"
    return "runtime"


def summarize(path):
    events = load(path)
    steps = [e for e in events if e["cat"] == "user_annotation" and e["name"] == STEP]
    if not steps:
        raise TraceError(f"{path}: no `{STEP}` range (was the trace made by a profiled step loop?)")
    n = len(steps)
    host_tid = Counter((e["pid"], e["tid"]) for e in steps).most_common(1)[0][0]
    windows = union((e["ts"], e["end"]) for e in steps)
    on_host = [e for e in events if (e["pid"], e["tid"]) == host_tid]
    # lockstep's outermost ranges (a range inside another one of its own counts once).
    own = union((e["ts"], e["end"]) for e in on_host if e["cat"] == "user_annotation" and e["name"].startswith(OWN))
    own = clip(own, windows)
    calls = [e for e in on_host if e["cat"] in ("cuda_runtime", "cuda_driver")]
    parts, counts = {}, {}
    taken = []
    for kind in ("sync", "launch", "copy", "runtime"):
        mine = [e for e in calls if runtime_kind(e["name"]) == kind]
        spans = clip(union((e["ts"], e["end"]) for e in mine), own)
        spans = minus(spans, union(taken))
        parts[kind] = length(spans)
        counts[kind] = sum(1 for e in mine if any(s <= e["ts"] < t for s, t in own))
        taken += spans
    # Operators that lockstep's code called (they begin inside its ranges); an operator around a
    # range (a collective's record made inside the operator that issued it) is the step's own.
    inner = [e for e in on_host if e["cat"] == "cpu_op" and any(s <= e["ts"] < t for s, t in own)]
    ops = minus(clip(union((e["ts"], e["end"]) for e in inner), own), union(taken))
    parts["ops"] = length(ops)
    counts["ops"] = len(inner)
    own_total = length(own)
    parts["host"] = max(0.0, own_total - sum(parts[k] for k in ("sync", "launch", "copy", "runtime", "ops")))
    gpu = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    first, last = windows[0][0], windows[-1][1]
    # Device work that starts after the first step began and before the last one ended (a step's
    # kernels can end after its host range does: the host range ends at its last launch, or at a
    # synchronization that waited for them).
    gpu = [e for e in gpu if first <= e["ts"] <= last]
    kernels = [e for e in gpu if e["cat"] == "kernel"]
    copies = [e for e in gpu if e["cat"] == "gpu_memcpy"]
    sets = [e for e in gpu if e["cat"] == "gpu_memset"]
    copy_bytes = 0
    for e in copies:
        try:
            copy_bytes += int(e["args"].get("bytes", 0))
        except (TypeError, ValueError):
            pass
    kernel_names = Counter(e["name"] for e in kernels)
    per = 1.0 / n
    return {
        "path": str(path), "steps": n,
        "step_us": statistics.median(e["end"] - e["ts"] for e in steps),
        "lockstep_us": own_total * per,
        "parts_us": {k: parts[k] * per for k in PARTS},
        "calls": {k: counts[k] * per for k in ("sync", "launch", "copy", "runtime", "ops")},
        "gpu": {"kernels": len(kernels) * per, "kernel_us": sum(e["end"] - e["ts"] for e in kernels) * per,
                "copies": len(copies) * per, "copy_us": sum(e["end"] - e["ts"] for e in copies) * per,
                "copy_bytes": copy_bytes * per, "sets": len(sets) * per,
                "busy_us": length(union((e["ts"], e["end"]) for e in gpu)) * per},
        "kernel_names": {k: v * per for k, v in kernel_names.items()},
    }


def compare(without, with_, tensors=None):
    diff = with_["step_us"] - without["step_us"]
    own = with_["lockstep_us"] - without["lockstep_us"]
    names = set(without["kernel_names"]) | set(with_["kernel_names"])
    moved = {k: round(with_["kernel_names"].get(k, 0) - without["kernel_names"].get(k, 0), 2) for k in names}
    moved = {k: v for k, v in sorted(moved.items(), key=lambda kv: -abs(kv[1])) if abs(v) >= 0.5}
    out = {
        "steps": [without["steps"], with_["steps"]],
        "step_us": [round(without["step_us"], 1), round(with_["step_us"], 1)],
        "step_diff_us": round(diff, 1),
        "x_step": round(with_["step_us"] / without["step_us"], 3) if without["step_us"] > 0 else None,
        "lockstep_us": round(own, 1),
        "parts_us": {k: round(with_["parts_us"][k] - without["parts_us"][k], 1) for k in PARTS},
        "calls_per_step": {k: round(with_["calls"][k] - without["calls"][k], 1) for k in with_["calls"]},
        "elsewhere_us": round(diff - own, 1),
        "gpu": {k: [round(without["gpu"][k], 1), round(with_["gpu"][k], 1)] for k in with_["gpu"]},
        "kernels_moved": moved,
    }
    if tensors:
        out["tensors"] = tensors
        out["host_us_per_tensor"] = round(out["parts_us"]["host"] / tensors, 3)
        out["lockstep_us_per_tensor"] = round(own / tensors, 3)
    return out


def markdown(name, c):
    p, calls, g = c["parts_us"], c["calls_per_step"], c["gpu"]
    per_tensor = f" ({c['host_us_per_tensor']} us a tensor over {c['tensors']})" if "tensors" in c else ""
    rows = [
        f"| {name}: per step of {c['steps'][1]} profiled (step: median; parts: mean) | us |",
        "|---|---:|",
        f"| step without checks / with | {c['step_us'][0]} / {c['step_us'][1]} (x{c['x_step']}) |",
        f"| **difference** (profiled: the profiler's own cost included) | **{c['step_diff_us']}** |",
        f"| inside lockstep's ranges | {c['lockstep_us']} |",
        f"| - waiting for the device (synchronize, blocking copies: {calls['sync']} a step) | {p['sync']} |",
        f"| - kernel launches ({calls['launch']} a step) | {p['launch']} |",
        f"| - copies and sets queued ({calls['copy']} a step) | {p['copy']} |",
        f"| - other CUDA calls ({calls['runtime']} a step) | {p['runtime']} |",
        f"| - LibTorch operators on the host ({calls['ops']} a step) | {p['ops']} |",
        f"| - lockstep's own host code{per_tensor} | {p['host']} |",
        f"| outside lockstep's ranges (the step itself slower) | {c['elsewhere_us']} |",
        f"| GPU kernels a step, without / with | {g['kernels'][0]} / {g['kernels'][1]} |",
        f"| GPU kernel time, without / with | {g['kernel_us'][0]} / {g['kernel_us'][1]} |",
        f"| GPU copies a step (bytes), without / with | {g['copies'][0]} ({int(g['copy_bytes'][0])}) / "
        f"{g['copies'][1]} ({int(g['copy_bytes'][1])}) |",
        f"| GPU busy, without / with | {g['busy_us'][0]} / {g['busy_us'][1]} |",
    ]
    if c["kernels_moved"]:
        moved = ", ".join(f"`{k[:60]}` {v:+g}" for k, v in list(c["kernels_moved"].items())[:6])
        rows.append(f"| kernels a step that differ | {moved} |")
    return "\n".join(rows) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--without", required=True)
    ap.add_argument("--with", dest="with_", required=True)
    ap.add_argument("--tensors", type=int)
    ap.add_argument("--name", default="profile")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    try:
        c = compare(summarize(args.without), summarize(args.with_), args.tensors)
    except TraceError as e:
        print(f"gpu-profile-breakdown: {e}", file=sys.stderr)
        return 2
    c["name"] = args.name
    if args.json:
        Path(args.json).write_text(json.dumps(c, indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(args.name, c))
    print(json.dumps(c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
