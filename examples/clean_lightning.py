"""Clean training with PyTorch Lightning the way its documentation writes it: a LightningModule
(a tiny MLP built in code, synthetic data, nothing downloaded) and
`Trainer(strategy="ddp", accelerator="cpu")`. Every rank holds the same weights after every
step: lockstep finds nothing.

Under `lockstep exec` (or torchrun) the ranks are already started, with torchrun's RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK: Lightning detects that environment
(TorchElasticEnvironment) and runs as this process's rank instead of spawning its own, so
`devices` must be the number of processes per node the environment gives.
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
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


def main():
    L.seed_everything(0, verbose=False)
    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    samples = STEPS * BATCH * devices
    data = torch.Generator().manual_seed(100)
    dataset = TensorDataset(torch.randn(samples, 16, generator=data), torch.randn(samples, 4, generator=data))
    trainer = L.Trainer(strategy="ddp", accelerator="cpu", devices=devices, max_steps=STEPS,
                        gradient_clip_val=0.5, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(), DataLoader(dataset, batch_size=BATCH, shuffle=True))


if __name__ == "__main__":
    main()
