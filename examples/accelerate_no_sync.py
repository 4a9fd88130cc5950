"""Gradient accumulation with Accelerate's `no_sync`, in the manner of huggingface/accelerate's own
test_utils/scripts/test_sync.py (re-created here): an `Accelerator()` built with no arguments, as a
user writes it (no `cpu=True`), a model and optimizer through `accelerator.prepare`, micro-batches
under `accelerator.no_sync(model)` whose gradients stay local, then one synchronized backward and
an optimizer step. Started by `accelerate launch` (`lockstep exec --launcher accelerate`): on a
machine without a GPU the ranks must still train together (ACCELERATE_USE_CPU, docs/LAUNCHER.md);
the program checks that it is distributed and that the gradients agree after each sync, and
lockstep finds nothing."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from accelerate import Accelerator

STEPS = int(os.environ.get("EXAMPLE_STEPS", "4"))
ACCUMULATE = 2


def main():
    accelerator = Accelerator()
    if accelerator.num_processes < 2 or not dist.is_initialized():
        raise SystemExit("accelerate_no_sync: not distributed (%d process): each rank would train alone"
                         % accelerator.num_processes)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    model, optimizer = accelerator.prepare(model, optimizer)
    data = torch.Generator().manual_seed(100 + accelerator.process_index)
    for _ in range(STEPS):
        for _ in range(ACCUMULATE - 1):
            with accelerator.no_sync(model):
                x, y = torch.randn(4, 8, generator=data), torch.randn(4, 1, generator=data)
                accelerator.backward(nn.functional.mse_loss(model(x), y))
        x, y = torch.randn(4, 8, generator=data), torch.randn(4, 1, generator=data)
        accelerator.backward(nn.functional.mse_loss(model(x), y))
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
