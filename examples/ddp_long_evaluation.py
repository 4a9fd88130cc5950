"""A correct DDP program with an evaluation phase between two training steps, as real jobs have
(validation, checkpointing, data loading): for EXAMPLE_EVAL_S seconds (default 8) every rank runs
forward passes over held-out data under torch.no_grad() and records nothing, no collective, no
step. No rank waits on another, so this is no hang however long the phase lasts under
`lockstep exec` (up to --quiet-timeout, 1800 s by default), even with --hang-timeout far shorter
than the phase (its sidecar sets 2 s). No finding.

    lockstep exec --ranks 2 --out runs -- python3 ddp_long_evaluation.py
    EXAMPLE_EVAL_S=45 lockstep exec --ranks 2 --out runs -- python3 ddp_long_evaluation.py
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "4"))
EVAL_AFTER_STEP = 2
EVAL_S = float(os.environ.get("EXAMPLE_EVAL_S", "8"))


def evaluate(model, seconds):
    """Forward passes until `seconds` of wall time have passed (a validation set's worth)."""
    held_out = torch.Generator().manual_seed(7)
    total, batches = 0.0, 0
    deadline = time.monotonic() + seconds
    with torch.no_grad():
        while time.monotonic() < deadline:
            x = torch.randn(256, 64, generator=held_out)
            total += float(model(x).square().mean())
            batches += 1
    return total / max(batches, 1)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(32, 64, generator=data)
        y = torch.randn(32, 8, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
        if step == EVAL_AFTER_STEP:
            # The module itself, not DDP's forward: no collective in the phase.
            print("rank %d: evaluation after step %d: loss %.4f" % (rank, step, evaluate(model, EVAL_S)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
