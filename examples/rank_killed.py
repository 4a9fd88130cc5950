"""DDP where one rank is killed mid-step (the kernel's OOM killer, a node failure): rank 1 dies
by SIGKILL in step 3, after its forward pass. The survivors fail their next gradient all-reduce
("Connection closed by peer") and die of that exception. lockstep's `crash` names rank 1 at
step 3, and the survivors as what they are: ranks that lost a peer, not crashes of their own."""
import os
import signal

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
KILLED_RANK, KILL_STEP = 1, 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        loss = nn.functional.mse_loss(model(x), torch.zeros(16, 8))
        if rank == KILLED_RANK and step == KILL_STEP:
            os.kill(os.getpid(), signal.SIGKILL)
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
