"""Clean DDP training: AdamW, gradient clipping, an LR scheduler, a little gradient accumulation
under no_sync. Every rank holds the same weights after every step: lockstep finds nothing.

Run it as any torchrun program, e.g. `lockstep exec --ranks 3 --out runs -- python3 clean_ddp_adamw.py`.
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "6"))
ACCUMULATE = 2


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    ddp = DDP(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-2, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        for micro in range(ACCUMULATE):
            x = torch.randn(16, 32, generator=data)
            y = torch.randn(16, 8, generator=data)
            if micro < ACCUMULATE - 1:
                with ddp.no_sync():
                    (nn.functional.mse_loss(ddp(x), y) / ACCUMULATE).backward()
            else:
                (nn.functional.mse_loss(ddp(x), y) / ACCUMULATE).backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), max_norm=0.5)
        optimizer.step()
        scheduler.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
