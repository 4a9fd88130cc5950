"""`broadcast_buffers=False`: every rank keeps its own BatchNorm running statistics.

Source: https://github.com/open-mmlab/mmdetection/issues/2539 (mmdetection; "`broadcast_buffers=False`
makes BN buffers different on each GPU. Why not set to `True`?").
Original bug: mmdetection's test/train tools wrapped the detector with
`DistributedDataParallel(..., broadcast_buffers=False)` (also maskrcnn-benchmark, issue 692), so each
GPU's BatchNorm `running_mean`/`running_var` followed its own data; the weights stayed in sync but
the checkpointed statistics depended on which rank saved them, and evaluation differed by rank.
This program: a small conv net with BatchNorm under DDP with `broadcast_buffers=False`, 3 ranks with
different data. The fix (`bn_buffers_not_broadcast_fixed.py`) is DDP's default,
`broadcast_buffers=True` (rank 0's buffers every forward), what the issue asks for. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    ddp = DDP(model, broadcast_buffers=fixed)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(700 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(6, 3, 8, 8, generator=data), torch.randint(0, 5, (6,), generator=data)
        nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
