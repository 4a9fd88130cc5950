"""A small DDP program that says where it runs: each rank prints its torchrun variables and host
(the multi-host tests read them from the rank logs lockstep gathers), then trains a few steps."""
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    print("world: RANK=%s LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s WORLD_SIZE=%s MASTER_ADDR=%s host=%s" % (
        os.environ.get("RANK"), os.environ.get("LOCAL_RANK"), os.environ.get("LOCAL_WORLD_SIZE"),
        os.environ.get("WORLD_SIZE"), os.environ.get("MASTER_ADDR"), socket.gethostname()), flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(dist.get_rank())
    for _ in range(int(os.environ.get("DDP_WORLD_STEPS", "4"))):
        optimizer.zero_grad()
        model(torch.randn(8, 16, generator=data)).square().mean().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
