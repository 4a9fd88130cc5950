"""A Lightning bug from its issue tracker (Lightning-AI/pytorch-lightning#9237, "Manual Optimization
does not synchronize gradients in DDP"): manual optimization (`self.automatic_optimization =
False`) with a plain `loss.backward()` in `training_step` where Lightning's documentation says
`self.manual_backward(loss)`. Lightning runs `training_step` inside DDP's forward and, in manual
optimization, turns off DDP's own preparation of the backward pass (`require_backward_grad_sync`
is set to False after the inner forward): `manual_backward` prepares DDP's reducer instead
(`prepare_for_backward`, then the backward). A plain `loss.backward()` skips that, so DDP's
gradient hooks find a reducer that expects no backward and return: no gradient all-reduce is
issued, and every rank steps with the gradients of its own shard of the batch. The job runs to
the end without an error, each rank training a model of its own.

lockstep's `replica_weights` names every parameter at step 1 (first: `net.0.weight`); every rank
differs from every other (no majority among 3 ranks), so the ranks outside rank 0's group, 1 and
2, are named. `synced_grads` reports the unsynced gradients at step 1 too. The trace shows why:
no rank issues a float32 all-reduce in any step (with `self.manual_backward(loss)` each rank
issues one gradient all_reduce(float32, 676, sum) per step).

Otherwise as clean_lightning.py: `Trainer(strategy="ddp", accelerator="cpu")`, a tiny MLP,
synthetic data.
"""
import os

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BATCH = 8


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        optimizer.zero_grad()
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        loss.backward()  # the bug: Lightning's manual optimization needs self.manual_backward(loss)
        optimizer.step()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-2)


def main():
    L.seed_everything(0, verbose=False)
    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    samples = STEPS * BATCH * devices
    data = torch.Generator().manual_seed(100)
    dataset = TensorDataset(torch.randn(samples, 16, generator=data), torch.randn(samples, 4, generator=data))
    trainer = L.Trainer(strategy="ddp", accelerator="cpu", devices=devices, max_steps=STEPS, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(), DataLoader(dataset, batch_size=BATCH, shuffle=True))


if __name__ == "__main__":
    main()
