"""torch.distributed's discovery calls as the probe records them: init_process_group and a
group per rank at start-up, then a new_group right after the optimizer step of step 2, on every
rank: the call after start-up that discovery_count names. (new_subgroups, which makes its groups
through new_group and is recorded once, needs CUDA in torch 1.13: cuda_weight_edit.py calls it.)"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for r in range(dist.get_world_size()):
        dist.new_group([r])  # collective: every rank makes every group
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, 5):
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(torch.randn(4, 8, generator=data)), torch.zeros(4, 2)).backward()
        optimizer.step()
        if step == 2:
            dist.new_group(list(range(dist.get_world_size())))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
