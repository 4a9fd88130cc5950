"""DDP training where, after step 3, rank 1 alone all-reduces a metric (a leftover of debugging
code, guarded by `if rank == 1`) while rank 0 goes on to wait for the next batch from a queue its
producer never fills (a data-loading deadlock). Rank 1 waits forever in an all-reduce that rank 0
never calls, and rank 0 waits on nothing that moves: neither records progress nor uses CPU.
lockstep's watchdog calls it a hang after --hang-timeout (its sidecar: 5 s): `hang` names rank 0,
the rank that never reached rank 1's all-reduce, at step 3 (the step
whose record rank 0 never finished)."""
import os
import queue

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "6"))
BUG_STEP = 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    batches = queue.Queue()
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        y = torch.randn(8, 4, generator=data)
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        if step == BUG_STEP:
            if rank == 1:
                metric = loss.detach().clone()
                dist.all_reduce(metric)  # rank 0 never calls it
            else:
                batches.get()  # never filled
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
