"""Uneven inputs under DDP: the rank with one more batch waits in an all-reduce nobody joins.

Source: https://github.com/pytorch/pytorch/issues/33148 (PyTorch; "Support uneven DDP inputs": "DDP
instances processing more input batches will hang, as the peer with least input batch will not join
those additional allreduce operations").
Original bug: a sampler that splits a dataset whose size is not divisible by the world size gives
the ranks different numbers of batches (e.g. k2-fsa/snowfall#152 with lhotse's partitioning); the
rank with more batches blocks in its extra step's gradient all-reduce. PyTorch's answer is the Join
context manager (`model.join()`, PR 42577), in which a rank that ran out of data shadows the others'
collectives.
This program: DDP on 2 ranks, rank 0 holds 4 batches and rank 1 holds 5; after the loop both ranks
meet in a barrier before the checkpoint. Rank 1's step 5 all-reduce meets rank 0's barrier. The fix
(`uneven_inputs_hang_fixed.py`) wraps the loop in `model.join()`. Onset: step 5 (rank 0 has no fifth
batch), rank 0.
"""
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1400 + rank)
    batches = [(torch.randn(6, 4, generator=data), torch.randn(6, 1, generator=data)) for _ in range(4 + rank)]
    with model.join() if fixed else contextlib.nullcontext():
        for x, y in batches:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    dist.barrier()  # before the checkpoint
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
