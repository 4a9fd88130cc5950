"""Clean training with Hugging Face Accelerate, the way its documentation writes a loop: an
`Accelerator` with gradient accumulation, `accelerator.prepare` of the model, optimizer, data
loader and LR scheduler, `accelerator.accumulate(model)`, `accelerator.backward(loss)` and
`accelerator.clip_grad_norm_` when the gradients sync. A tiny MLP built in code, synthetic data,
nothing downloaded. Every rank holds the same weights after every step: lockstep finds nothing.

Run it as any torchrun program: `lockstep exec --ranks 2 --out runs -- python3 clean_accelerate.py`
(or `lockstep exec --launcher accelerate ...`, which starts it with `accelerate launch`).
"""
import os

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))  # optimizer steps
ACCUMULATE = 2
BATCH = 8


def main():
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=ACCUMULATE)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    # Enough samples for STEPS optimizer steps on every rank; the prepared loader shards them.
    samples = STEPS * ACCUMULATE * BATCH * accelerator.num_processes
    data = torch.Generator().manual_seed(100)
    dataset = TensorDataset(torch.randn(samples, 16, generator=data), torch.randn(samples, 4, generator=data))
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(1))
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    model.train()
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), max_norm=0.5)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    accelerator.end_training()


if __name__ == "__main__":
    main()
