"""The explicit API, without auto-attach: lockstep.probe.attach(model, optimizer) before DDP,
probe.step(loss=...) after each optimizer step. Rank 2 nudges a weight after step 2: the
explicit records catch it there like the automatic ones."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from lockstep import probe


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    probe.attach(model, optimizer)
    ddp = DDP(model)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, 5):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp(torch.randn(8, 16, generator=data)), torch.zeros(8, 4))
        loss.backward()
        optimizer.step()
        if rank == 2 and step == 2:
            with torch.no_grad():
                model[2].bias.add_(1e-3)
        probe.step(loss=loss)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
