"""Validation on rank 0 only, through the DDP wrapper: its forward broadcasts buffers the other ranks never join.

Source: https://github.com/pytorch/pytorch/issues/54059 (PyTorch; "Using torch.distributed.barrier()
makes the whole code hang").
Original bug: a DDP training loop runs validation under `if gpu == 0:` through the DDP-wrapped model,
then `dist.barrier()`; the job hangs there. The maintainers found why: DDP's forward, on rank 0
alone, syncs the module's buffers (a broadcast of its BatchNorm statistics) while the other ranks
are already in the barrier, so the two collectives pair up wrongly and wait forever; the fix is to
validate through `model.module(...)` (also jpata/particleflow PR 233, same hang, same fix).
This program: DDP on 3 ranks over a model with BatchNorm; after step 3 rank 0 validates through
`model(x)` under `torch.no_grad()`, then every rank meets in `dist.barrier()`. Rank 0's forward
broadcasts the buffers where ranks 1 and 2 run the barrier. The fix (`ddp_rank0_eval_through_wrapper_fixed.py`)
validates through `model.module`, as the thread advises. Onset: step 3, rank 0.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
VALIDATE_AFTER = 3


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)
    x_val, y_val = torch.randn(32, 4, generator=data), torch.randint(0, 3, (32,), generator=data)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(16, 4, generator=data), torch.randint(0, 3, (16,), generator=data)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        if step == VALIDATE_AFTER:
            if rank == 0:
                model.eval()
                with torch.no_grad():
                    net = model.module if fixed else model
                    accuracy = (net(x_val).argmax(1) == y_val).float().mean()
                print("rank 0 validation accuracy %.2f after step %d" % (accuracy, step), flush=True)
                model.train()
            dist.barrier()  # every rank waits for rank 0's validation
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
