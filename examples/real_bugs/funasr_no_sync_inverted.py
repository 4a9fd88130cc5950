"""`no_sync()` on the wrong micro-batches: the first one synchronized, the last one not.

Source: https://github.com/modelscope/FunASR/pull/3472 (FunASR).
Original bug: the DeepSpeed/DDP trainer chose `model.no_sync()` with `batch_idx % accum_grad != 0`,
so it all-reduced the FIRST micro-batch of each accumulation window and skipped the all-reduce on the
micro-batch right before `optimizer.step()`. The reviewer's two-rank CPU/gloo reproduction left the
accumulated gradients rank-local (4.0 vs 7.0).
This program: the same condition, 2 micro-batches per step, SGD with momentum, 3 ranks; the fix
(`funasr_no_sync_inverted_fixed.py`) is the PR's `(batch_idx + 1) % accum_grad`. Onset: step 1.
"""
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
ACCUM = 2


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(200 + rank)
    for batch_idx in range(STEPS * ACCUM):
        sync_now = (batch_idx + 1) % ACCUM == 0 if fixed else batch_idx % ACCUM == 0
        with contextlib.nullcontext() if sync_now else model.no_sync():
            x, y = torch.randn(10, 12, generator=data), torch.randint(0, 3, (10,), generator=data)
            (nn.functional.cross_entropy(model(x), y) / ACCUM).backward()
        if (batch_idx + 1) % ACCUM == 0:
            optimizer.step()
            optimizer.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
