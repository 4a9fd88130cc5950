"""Process groups as group_agreement judges them: ranks 1 and 2 make a group with
use_local_synchronization (its members alone may, and do), then ranks 0 and 1 make one for a
pair metric without it, which every rank of the world should have entered: rank 2 never does, and
ends cleanly. Both groups work in this run (nothing made after them shifts the others' names), so
the only sign is the group rank 2 never made, named at start-up."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank in (1, 2):
        dist.new_group([2, 1], use_local_synchronization=True)  # members only, as it allows
    pair = dist.new_group([0, 1]) if rank < 2 else None  # the bug: rank 2 never enters it
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(3):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp(torch.randn(4, 8, generator=data)), torch.zeros(4, 2))
        loss.backward()
        optimizer.step()
        if pair is not None:
            metric = loss.detach().clone()
            dist.all_reduce(metric, group=pair)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
