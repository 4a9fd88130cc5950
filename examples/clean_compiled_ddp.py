"""Clean training of a `torch.compile`d DDP model, the way PyTorch's documentation combines them:
wrap the model in DDP, then compile the wrapper (TorchDynamo splits the graph at DDP's bucket
boundaries so that the gradient all-reduces still overlap the backward pass). A tiny MLP built in
code, synthetic data, gloo on CPU, the default (inductor) backend. Every rank holds the same
weights after every step: lockstep finds nothing.

Run it as any torchrun program: `lockstep exec --ranks 2 --out runs -- python3 clean_compiled_ddp.py`.
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    compiled = torch.compile(DDP(model))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(compiled(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
