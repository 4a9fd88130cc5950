"""The training loop the import-order programs (import_order_*.py) share, imported by them only
after they have imported what comes before torch in their order. DDP on two ranks, gloo; with
IMPORT_ORDER_BUG=1 rank 1 edits 0.weight in place after the optimizer step of step 2, which the
probe reports as `replica_weights` at step 2 -- proof that torch was instrumented, not merely that
the program ran."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BUG_STEP = 2


def train(steps=4):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    bug = os.environ.get("IMPORT_ORDER_BUG") == "1"
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        nn.functional.mse_loss(ddp(x), torch.zeros(8, 4)).backward()
        optimizer.step()
        if bug and rank == 1 and step == BUG_STEP:
            with torch.no_grad():
                model[0].weight[0, 0] += 1e-3
    dist.destroy_process_group()
