"""DDP training where rank 0 alone all-reduces its loss for logging at step 3 (an `if rank == 0:`
around a metric that needs every rank). Rank 0's collective sequence now runs one ahead of the
others: its next DDP bucket all-reduce meets their metric-less sequence, and the job errors or
hangs. lockstep's `collective_order` names the extra all_reduce(float32, 1) of rank 0 at step 3
against the others' bucket all-reduce."""
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
    ddp = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        if rank == 0 and step == BUG_STEP:
            metric = loss.detach().clone()
            dist.all_reduce(metric)
            print("mean loss", metric.item() / dist.get_world_size(), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
