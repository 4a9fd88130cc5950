"""A `torch.compile`d DDP model where rank 1 edits a weight in place right after the optimizer
step of step 3 (a debugging hook left in that nudges one entry). The compiled graph reads the
parameters as they are, and DDP never re-broadcasts them, so the replicas stay apart from then on:
lockstep's `replica_weights` names 0.weight on rank 1 at step 3.

Otherwise as clean_compiled_ddp.py: DDP wrapped, then compiled (inductor), a tiny MLP, synthetic
data, gloo on CPU.
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    compiled = torch.compile(DDP(model))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(compiled(x), y).backward()
        optimizer.step()
        if rank == 1 and step == BUG_STEP:
            with torch.no_grad():
                model[0].weight[0, 0] += 1e-3
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
