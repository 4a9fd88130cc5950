"""A DDP-wrapped module converted (`.cpu()`/`.cuda()`, here `.double()`) after wrapping: gradient
synchronization silently stops.

Source: https://github.com/pytorch/pytorch/issues/104336 (PyTorch; also
https://github.com/Lightning-AI/pytorch-lightning/issues/17937 for Fabric).
Original bug: moving a DDP-wrapped model to the CPU and back to the GPU (to free memory for a faiss
index) made every later `backward()` skip the gradient all-reduce, "without throwing any
warning/error": the model was "effectively trained on a single device".
This program: the same mechanism on the CPU: `Module._apply` after DDP's construction swaps every
parameter's data (`.double()`), and the reducer's buckets keep the old storage, so each rank keeps its
own gradient (checked on torch 2.11/gloo). 3 ranks with different data. The fix
(`ddp_converted_after_wrap_fixed.py`) converts the module before wrapping it. Onset: step 1.
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
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    if fixed:
        model.double()
    ddp = DDP(model)
    if not fixed:
        ddp.double()  # converted after wrapping
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(400 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(16, 8, generator=data, dtype=torch.float64)
        y = torch.randn(16, 1, generator=data, dtype=torch.float64)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
