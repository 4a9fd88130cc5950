"""A declared module left out of the forward pass under DDP without `find_unused_parameters`: the
first step's gradients are not all-reduced, then DDP raises.

Source: https://github.com/pytorch/pytorch/issues/112152 (PyTorch; "DDP backpropagated gradients not
the same across all gpus when forward inference not using all declared modules").
Original bug: the DDP tutorial's ToyModel with `forward` returning `self.net2(x)` only: net1's
parameters get no gradient, DDP's reducer waits for them, the bucket holding net2's gradients is
never reduced, and "the backpropagated gradients are not the same for models in different GPUS, as
well as the updated weights". The next iteration fails with DDP's "Expected to have finished
reduction in the prior iteration" error.
This program: the tutorial's ToyModel (net1 unused) on 2 ranks with different data and SGD. Step 1's
update is made from rank-local gradients; step 2's forward raises on every rank. The fix
(`ddp_unused_module_fixed.py`) passes `find_unused_parameters=True`. Onset: step 1 (silent), step 2
(the error).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 3


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(x)  # net1 declared but not used


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(ToyModel(), find_unused_parameters=fixed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(2100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(torch.randn(20, 10, generator=data)), torch.randn(20, 5, generator=data))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
