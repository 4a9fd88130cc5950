"""A program whose environment has its own sitecustomize (probe/tests/programs/user_site): it
must still run under the probe's, and the probe still attaches. Clean manual all-reduce loop."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    if os.environ.get("USER_SITECUSTOMIZE_RAN") != "1":
        sys.exit("the user's sitecustomize did not run")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for step in range(1, 4):
        optimizer.zero_grad()
        model(torch.randn(4, 8, generator=data)).pow(2).mean().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
