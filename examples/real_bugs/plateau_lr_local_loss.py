"""ReduceLROnPlateau stepped with each rank's own validation loss: the learning rates drift apart.

Source: https://github.com/lucidrains/DALLE-pytorch/issues/268 (DALLE-pytorch; "It seems that the
learning rate for each process(GPU) is not synchronized").
Original bug: under Horovod on 3 GPUs, `ReduceLROnPlateau.step(loss)` was given each process's local
loss, so each process reduced its learning rate at its own time; the maintainers' fix was to pass the
averaged loss (`avg_loss`) so that every process makes the same decision.
This program: DDP on 3 ranks, each with its own validation batch, `ReduceLROnPlateau(patience=0)`
stepped after every optimizer step with the local validation loss. Rank 1's local loss is the first
to stop improving (after step 5; ranks 0 and 2 keep theirs): step 6 is the first update made with
different learning rates (the step whose record carries the different lr, and whose weights differ). The fix (`plateau_lr_local_loss_fixed.py`)
steps every scheduler with the all-reduced mean, as upstream does. Onset: step 6, rank 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 8


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.0)
    data = torch.Generator().manual_seed(600 + rank)
    w_true = torch.randn(6, 1, generator=torch.Generator().manual_seed(7))
    x_val = torch.randn(32, 6, generator=data)
    y_val = x_val @ w_true + 0.5 * torch.randn(32, 1, generator=data)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(32, 6, generator=data)
        nn.functional.mse_loss(model(x), x @ w_true).backward()
        optimizer.step()
        with torch.no_grad():
            val = nn.functional.mse_loss(model.module(x_val), y_val)
        if fixed:
            dist.all_reduce(val)
            val /= world
        scheduler.step(val.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
