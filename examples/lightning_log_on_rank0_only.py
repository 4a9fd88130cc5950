"""A Lightning bug from its issue tracker (Lightning-AI/pytorch-lightning#19045, documented in
#19056): `self.log(..., sync_dist=True)` called on rank 0 only. With `sync_dist=True`, Lightning
all-reduces the value at the `self.log` call, so the all-reduce runs on rank 0 alone; the other
ranks go on to DDP's gradient all-reduce, and the job deadlocks. (The documented fix: call
`self.log` on every rank, or pass `rank_zero_only=True` instead of syncing.) Here rank 0 starts
logging its loss at step 3 (an `if self.global_rank == 0:` around the log call). Lightning's
sync is a barrier, then the all-reduce: lockstep's `collective_order` names rank 0's barrier() at
step 3 against the others' gradient all_reduce(float32, 676, sum), and the hang that follows.

Otherwise as clean_lightning.py: `Trainer(strategy="ddp", accelerator="cpu")`, a tiny MLP,
synthetic data.
"""
import os

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3  # 1-based: the third optimizer step
BATCH = 8


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        if self.global_rank == 0 and self.global_step + 1 >= BUG_STEP:
            self.log("train_loss", loss, sync_dist=True)  # the bug: a collective on rank 0 only
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
