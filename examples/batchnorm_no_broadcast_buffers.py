"""BatchNorm under DDP with broadcast_buffers=False: each rank normalizes its own batches, so the
running statistics drift apart from the first step while the weights stay equal. lockstep's
`buffers` checker names bn.running_mean / running_var at step 1."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "4"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.fc(x))))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp = DDP(Net(), broadcast_buffers=False)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 16, generator=data) + rank  # each rank sees its own distribution
        y = torch.randn(16, 4, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
