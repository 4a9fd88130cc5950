"""Clean data parallelism without DDP: the initial weights are broadcast from rank 0, then every
step all-reduces each gradient, divides it by the world size and steps SGD with momentum.
lockstep finds nothing."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = int(os.environ.get("EXAMPLE_STEPS", "6"))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different on purpose: the broadcast below makes them equal
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8))
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
