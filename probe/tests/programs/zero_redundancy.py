"""ZeroRedundancyOptimizer (ZeRO-1 in torch.distributed.optim): each rank keeps the AdamW state of
its own shard of the parameters only, so the probe records that state as not replicated; the
parameters, all-gathered after every step, stay compared. A clean run has no finding.

The optimizer holds a gloo group, which must not outlive the interpreter's finalization (a run in
three aborted at exit when the probe held it): once main() returned, only the probe holds it, and
the probe must have let go of it in its own at-exit hook. An at-exit check registered before the
probe's (so run after it) exits 3 if the optimizer is still alive then."""
import atexit
import gc
import os
import sys
import weakref

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

_optimizers = []  # weak references


def _check_let_go():
    gc.collect()
    if any(ref() is not None for ref in _optimizers):
        sys.stderr.write("zero_redundancy.py: the optimizer is still alive after the probe's at-exit hook\n")
        sys.stderr.flush()
        os._exit(3)


atexit.register(_check_let_go)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model)
    optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    _optimizers.append(weakref.ref(optimizer))
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp(torch.randn(8, 16, generator=data)), torch.zeros(8, 4))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
