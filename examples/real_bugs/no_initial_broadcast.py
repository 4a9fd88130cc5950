"""Gradients averaged every step but the initial weights never broadcast: each rank trains its own
random initialization.

Source: https://github.com/horovod/horovod/issues/672 (Horovod; "Train model on 4-gpu, the model
parameters from different devices are different").
Original bug: the user averaged gradients with Horovod's DistributedOptimizer but did not broadcast
the initial variables from rank 0; the maintainer: "Horovod syncs the _gradients_ between machines,
so if the parameters themselves are already out of sync (for example, through random
initialization), then the parameters will be different even if the gradients are the same".
This program: the Horovod pattern in plain torch.distributed on 2 ranks: each rank seeds with its
rank (as per-rank data augmentation code does) before building the model, and an optimizer wrapper
all-reduces and averages every gradient before SGD's step. The fix (`no_initial_broadcast_fixed.py`)
broadcasts the parameters from rank 0 first (`hvd.broadcast_parameters`). Onset: step 0 (the
weights differ before the first step; the first update is made from them).
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 4


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # per-rank randomness, meant for the augmentation
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    if fixed:
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(2200 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(16, 8, generator=data)),
                                    torch.randint(0, 2, (16,), generator=data)).backward()
        for p in model.parameters():  # DistributedOptimizer: average every gradient
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
