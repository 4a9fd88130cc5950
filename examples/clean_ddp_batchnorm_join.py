"""Clean DDP training with BatchNorm and uneven inputs: DDP's default `broadcast_buffers=True` (rank
0's running statistics copied to every rank at the start of each forward) and the loop inside
`model.join()` (PyTorch's answer to ranks with different numbers of batches: a rank that ran out
shadows the others' gradient all-reduces, and the last rank to join gives every rank its final
weights). Between an optimizer step and the next forward each rank's statistics are its own, and
the rank with one more batch steps once alone: both are by design, and lockstep finds nothing.

Run it as any torchrun program, e.g. `lockstep exec --ranks 3 --out runs -- python3 clean_ddp_batchnorm_join.py`.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(500 + rank)
    batches = [(torch.randn(6, 3, 8, 8, generator=data), torch.randint(0, 5, (6,), generator=data))
               for _ in range(4 + rank)]  # rank r has 4 + r batches
    with ddp.join():
        for x, y in batches:
            optimizer.zero_grad()
            nn.functional.cross_entropy(ddp(x), y).backward()
            optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
