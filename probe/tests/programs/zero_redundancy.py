"""ZeroRedundancyOptimizer (ZeRO-1 in torch.distributed.optim): each rank keeps the AdamW state of
its own shard of the parameters only, so the probe records that state as not replicated; the
parameters, all-gathered after every step, stay compared. A clean run has no finding."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model)
    optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp(torch.randn(8, 16, generator=data)), torch.zeros(8, 4))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
