"""DDP training that makes a process group for an evaluation metric every step and destroys it
right after (Megatron-LM PR #6902 leaked about 20 groups per such cycle). Each new_group after
start-up is a discovery call in the middle of training; lockstep's `discovery_count` names them
from step 1 on every rank, and counts the groups destroyed after start-up beside them."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    ddp = DDP(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        metrics = dist.new_group(list(range(dist.get_world_size())))  # the bug: a group per step
        total = loss.detach().clone()
        dist.all_reduce(total, group=metrics)
        dist.destroy_process_group(metrics)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
