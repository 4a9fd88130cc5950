#!/usr/bin/env python3
"""What the probe's collective sites cost a collective called from Python (probe/lockstep/_sites.py).

The probe wraps torch.distributed's collective functions so that each begin record says which line
of the program called it. This measures that wrapper alone: one process, a gloo world of one rank
with the probe attached (LOCKSTEP_PROBE=1, the staged probe on PYTHONPATH), a 1-element
all_reduce called through the wrapped `dist.all_reduce` and through the function it wraps
(`__wrapped__`), both recorded by the probe's backend, in blocks ordered site, plain, plain, site
(a drift cancels out), `--repeats` times.
Timed in the calling thread's CPU time, where the wrapper's work is (gloo runs the reduction on a
worker thread the caller waits for): on a machine shared with other work, wall time mostly
measures the others' load. The difference of the medians is the site's price per collective; the
ratio is against the whole recorded call, as the calling thread pays it. `--depth` program frames sit above the call (a training loop calls collectives a
few functions deep; the walk stops after 3 program frames).

  .venv/bin/python bench/collective_site_cost.py --stage build/python
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def child(args):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=0, world_size=1)
    wrapped = dist.all_reduce
    original = getattr(wrapped, "__wrapped__", None)
    if original is None or not getattr(wrapped, "_lockstep_site", False):
        sys.exit("the probe did not wrap torch.distributed.all_reduce: is it attached?")
    t = torch.zeros(1)

    def at_depth(n, fn):
        if n > 0:
            return at_depth(n - 1, fn)
        t0 = time.thread_time()
        for _ in range(args.calls):
            fn(t)
        return (time.thread_time() - t0) / args.calls

    for fn in (wrapped, original):  # warm-up: the site cache, the allocator
        at_depth(args.depth, fn)
    per_call = {"site": [], "plain": []}
    for _ in range(args.repeats):  # in the order site, plain, plain, site: a drift cancels out
        first = at_depth(args.depth, wrapped)
        per_call["plain"].append((at_depth(args.depth, original) + at_depth(args.depth, original)) / 2)
        per_call["site"].append((first + at_depth(args.depth, wrapped)) / 2)
    # The wrapper alone, around a function that does nothing: the frame walk, the cache lookup
    # and the two calls into the extension, without the collective's noise.
    from lockstep import _sites, probe

    def nothing(tensor):
        return None

    ext = probe._ext()
    sited_nothing = _sites.wrap_collective(nothing, lambda: ext, probe.collective_site)
    alone = {"site": [], "plain": []}
    for _ in range(args.repeats):
        first = at_depth(args.depth, sited_nothing)
        alone["plain"].append((at_depth(args.depth, nothing) + at_depth(args.depth, nothing)) / 2)
        alone["site"].append((first + at_depth(args.depth, sited_nothing)) / 2)
    dist.destroy_process_group()
    site, plain = statistics.median(per_call["site"]), statistics.median(per_call["plain"])
    print("torch %s, gloo, 1 rank, all_reduce of 1 float32, %d calls x %d repeats, %d program frames above"
          % (torch.__version__, args.calls, args.repeats, args.depth))
    print("recorded call without a site: %.2f us of the calling thread's CPU (median)" % (plain * 1e6))
    print("recorded call with its site:  %.2f us of the calling thread's CPU (median)" % (site * 1e6))
    print("the site's price: %.2f us a collective (x%.3f the recorded call)" % ((site - plain) * 1e6, site / plain))
    wrapper = statistics.median(alone["site"]) - statistics.median(alone["plain"])
    print("the wrapper alone, around a function that does nothing: %.2f us a call" % (wrapper * 1e6))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="build/python", help="the staged probe (lockstep/ and sitecustomize.py)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    stage = os.path.abspath(args.stage)
    if not os.path.isfile(os.path.join(stage, "lockstep", "_sites.py")):
        sys.exit("no staged probe at %s (build the lockstep_probe target)" % stage)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="lockstep-site-cost-") as traces:
        env = dict(os.environ, LOCKSTEP_PROBE="1", LOCKSTEP_TRACE_DIR=traces, MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                   PYTHONPATH=os.pathsep.join(p for p in (stage, os.environ.get("PYTHONPATH", "")) if p))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--calls", str(args.calls),
               "--repeats", str(args.repeats), "--depth", str(args.depth)]
        return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
