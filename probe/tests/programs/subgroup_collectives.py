"""Ranks 0 and 1 also all-reduce in a subgroup of their own every step (rank 2 is no member):
legitimate, so no finding; the probe records those under the subgroup's name, apart from the
world's DDP all-reduces."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    pair = dist.new_group([0, 1])
    torch.manual_seed(0)
    ddp = DDP(nn.Linear(8, 2))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for step in range(1, 4):
        optimizer.zero_grad()
        loss = ddp(torch.randn(4, 8, generator=data)).pow(2).mean()
        loss.backward()
        optimizer.step()
        if rank in (0, 1):
            metric = loss.detach().clone()
            dist.all_reduce(metric, group=pair)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
