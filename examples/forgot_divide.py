"""A manual all-reduce loop where the last rank forgets to divide the summed gradient by the
world size from step 4 on (a refactoring that dropped `/ world` on one code path). That rank
steps with a 3x gradient: lockstep's `synced_grads` names it at step 4."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = int(os.environ.get("EXAMPLE_STEPS", "6"))
BUG_STEP = 4


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            if not (rank == world - 1 and step >= BUG_STEP):
                p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
