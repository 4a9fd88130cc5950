"""A loss-spike guard decided on each rank's own loss: every rank runs forward and backward (DDP
all-reduces the gradients), then skips `optimizer.step()` when its local loss is above a limit.
At step 3 rank 2's batch spikes, so rank 2 alone skips the update the others take: its weights
fall one update behind, silently (no collective is skipped, nothing hangs). The guard is a
common pattern (skip a step on a bad batch); it must decide on a value every rank agrees on (the
all-reduced loss), as examples/real_bugs/nan_loss_skip_one_rank_fixed.py does with its flag.
lockstep names rank 2 at step 3 and, because rank 2's gradients recorded as step 3 are the
others' of step 4, the cause says it skipped an optimizer step."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
SPIKE_STEP, SPIKE_RANK, LIMIT = 3, 2, 50.0


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(300 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(16, 8, generator=data), torch.randn(16, 1, generator=data)
        if step == SPIKE_STEP and rank == SPIKE_RANK:
            y = y * 100.0  # an outlier batch
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        if loss.item() > LIMIT:  # the bug: a local decision
            continue
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
