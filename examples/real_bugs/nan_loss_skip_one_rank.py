"""A non-finite loss skipped on the rank that sees it: that rank leaves out a backward pass (and its
gradient all-reduce).

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/5243 (Lightning; "Returning None
from training_step with multi GPU DDP training").
Original bug: skipping a batch whose loss is NaN/inf (returning None from `training_step`) works on
one device, but under DDP only the rank with the bad batch skips its backward; the others enter the
gradient all-reduce and wait (the same pattern in ai2cm/ace#849 and Project-MONAI reviews). The fix
proposed upstream (Lightning PR 5359, "skip_if_any") decides the skip on all ranks together.
This program: DDP on 3 ranks; at step 3 rank 2's batch holds a NaN, so rank 2 skips backward and
optimizer step while ranks 0 and 1 all-reduce step 3's gradients. The fix
(`nan_loss_skip_one_rank_fixed.py`) all-reduces the skip flag (MAX) so that every rank skips step 3.
Onset: step 3, rank 2.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 5
BAD_STEP = 3


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(7, 14), nn.ReLU(), nn.Linear(14, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1600 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(8, 7, generator=data), torch.randn(8, 1, generator=data)
        if rank == 2 and step == BAD_STEP:
            y[3] = float("nan")  # a corrupt label
        loss = nn.functional.mse_loss(model(x), y)
        skip = torch.tensor(float(not torch.isfinite(loss)))
        if fixed:
            dist.all_reduce(skip, op=dist.ReduceOp.MAX)
        if skip.item() > 0:
            continue  # skip the bad batch
        loss.backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
