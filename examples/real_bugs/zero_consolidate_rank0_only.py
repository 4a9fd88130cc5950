"""ZeroRedundancyOptimizer's state consolidated on rank 0 only, for a checkpoint: a collective the other
ranks never call.

Source: https://github.com/pytorch/pytorch/pull/60285 (PyTorch, "Clean Up ZeRO"; the maintainer:
"users might call `.state_dict()` on one rank only (in practice they often will), which means that
you cannot consolidate at that point with any of the collectives"; also
https://github.com/pytorch/ignite/issues/2623: "This call needs to be issued on all ranks").
Original bug: `consolidate_state_dict(to=0)` gathers every rank's shard with broadcasts from each
rank; a checkpoint routine guarded by `if rank == 0:` calls it on rank 0 alone, so rank 0 issues
broadcasts that its peers answer with their next step's gradient all-reduces.
This program: DDP + ZeroRedundancyOptimizer(Adam) on 3 ranks; after step 2 rank 0 consolidates and
"saves" the optimizer state. The fix (`zero_consolidate_rank0_only_fixed.py`) consolidates on every
rank and saves on rank 0, as the documentation says. Onset: the consolidation after step 2's update,
rank 0.
"""
import io

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
CHECKPOINT_AFTER = 2


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
    data = torch.Generator().manual_seed(1700 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(8, 8, generator=data), torch.randn(8, 4, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        if step == CHECKPOINT_AFTER:
            if fixed or rank == 0:
                optimizer.consolidate_state_dict(to=0)
            if rank == 0:
                torch.save(optimizer.state_dict(), io.BytesIO())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
