"""Resuming from a checkpoint on rank 0 only: the optimizer state differs across the replicas.

Source: https://github.com/vllm-project/speculators/pull/926 (speculators; "When using ddp, ckpt is
not resumed correctly. Only rank0 loads ckpt").
Original bug: on resume only rank 0 loaded the checkpoint. DDP's construction broadcasts rank 0's
parameters, so the weights looked fine, but the AdamW moments and step counts were loaded on rank 0
alone: the first update after resuming differs between rank 0 and the others.
This program: a checkpoint made by a short single-process pre-training (the same bytes on every
rank, as a file on shared storage would be), then DDP on 3 ranks where only rank 0 loads the model
and optimizer state before wrapping. The fix (`resume_optimizer_rank0_fixed.py`) loads on every rank,
as the PR does. Onset: step 1 (the first update after resuming), rank 0.
"""
import io

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 3


def make_model():
    return nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.Linear(16, 3))


def checkpoint_bytes():
    """What the earlier run saved: model and AdamW state after 3 steps."""
    torch.manual_seed(0)
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(42)
    for _ in range(3):
        optimizer.zero_grad()
        x, y = torch.randn(8, 10, generator=data), torch.randint(0, 3, (8,), generator=data)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buf)
    return buf.getvalue()


def main(fixed=False):
    # The earlier run's checkpoint exists before this job starts, as a file on shared storage
    # would: made before the process group, its 3 pre-training steps are not this job's steps
    # (made after it, the probe would number them 1-3 and the first update after resuming 4).
    checkpoint = torch.load(io.BytesIO(checkpoint_bytes()))
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(100 + rank)  # a fresh process's own initialization, before the resume
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    if fixed or rank == 0:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    ddp = DDP(model)
    data = torch.Generator().manual_seed(1100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, 10, generator=data), torch.randint(0, 3, (8,), generator=data)
        nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
