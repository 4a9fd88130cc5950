"""Two ranks, the most common CI runner: rank 0 alone copies an EMA of the weights into its model
after the optimizer step of step 3 (ema-pytorch's `update_model_with_ema_every` run on rank 0
only: examples/real_bugs/ema_copy_rank0.py, there on 3 ranks). Two digests cannot say which rank
went astray; each rank's record of its own update can: the probe watches, at 2 ranks, which
parameters a rank wrote between its optimizer step and its next forward, and lockstep names rank
0 at step 3 with the cause `edited_after_update`."""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
COPY_EVERY = 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.SiLU(), nn.Linear(12, 2))
    ddp = DDP(model)
    ema = copy.deepcopy(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(900 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(8, 6, generator=data), torch.randn(8, 2, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
        if rank == 0:  # the bug: the EMA is kept, and copied back, on rank 0 only
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.lerp_(p, 0.1)
                if step % COPY_EVERY == 0:
                    for e, p in zip(ema.parameters(), model.parameters()):
                        p.copy_(e)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
