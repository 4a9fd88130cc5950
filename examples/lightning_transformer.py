"""Lightning's Trainer transformer example re-created: Lightning-AI/pytorch-lightning
examples/pytorch/basics/transformer.py at 7f0c3436 (Apache-2.0), small enough for CPU.

What it keeps: a LightningModule around Lightning's demo `Transformer`
(lightning.pytorch.demos) with training_step, validation_step and test_step that each
`self.log` their next-token NLL loss (prog_bar=True, not synced, as upstream), SGD lr 0.1,
`Trainer(gradient_clip_val=0.25)`, `random_split` into train, validation and test sets,
`trainer.fit(model, train, val)` and then `trainer.test(model, test)`: so a validation loop runs
between epochs and a test loop after training, both without gradient collectives. What it
changes: WikiText2 (a download) becomes a synthetic token stream built in code, the model is
shrunk (32 wide, one layer each side, vocabulary 16), the Trainer is told what the catalog runs
(`strategy="ddp"`, `accelerator="cpu"`, `devices` from torchrun's LOCAL_WORLD_SIZE, as
clean_lightning.py explains) and trains EXAMPLE_EPOCHS (default 2) short epochs instead of 20,
without logger, checkpoints or progress bar (files and terminal noise a test does not want).

Every rank starts from the same seed, DDP averages the gradients, every rank clips the same
averaged gradients: the replicas stay identical and lockstep finds nothing.

    lockstep exec --ranks 2 --out runs -- python3 lightning_transformer.py
"""
import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.demos import Transformer
from torch.utils.data import DataLoader, Dataset, random_split

EPOCHS = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
VOCAB = 16
BLOCK = 12  # tokens per sample (WikiText2's demo dataset uses 35)
BATCH = 4


class SyntheticText(Dataset):
    """(input, target) pairs of BLOCK tokens, target shifted by one, cut from one token stream,
    the way lightning.pytorch.demos.WikiText2 serves its corpus; token 0 at every other position,
    so gradient clipping at 0.25 bites at the start as it does on real text."""

    def __init__(self, tokens=1000, seed=7):
        g = torch.Generator().manual_seed(seed)
        words = torch.randint(1, VOCAB, (tokens,), generator=g)
        words[::2] = 0
        self.data = words

    def __len__(self):
        return (len(self.data) - 1) // BLOCK

    def __getitem__(self, index):
        start = index * BLOCK
        return self.data[start:start + BLOCK], self.data[start + 1:start + BLOCK + 1]


class LanguageModel(L.LightningModule):
    def __init__(self, vocab_size):
        super().__init__()
        self.model = Transformer(vocab_size=vocab_size, ninp=32, nhead=2, nhid=32, nlayers=1)

    def _loss(self, batch):
        input, target = batch
        output = self.model(input, target)
        return F.nll_loss(output, target.view(-1))

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("val_loss", loss, prog_bar=True)
        return loss

    def test_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("test_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    L.seed_everything(42)
    dataset = SyntheticText()
    n = len(dataset)
    # No generator, as upstream: seed_everything makes the split the same on every rank.
    train_dataset, val_dataset, test_dataset = random_split(dataset, [n - 16, 8, 8])
    train_dataloader = DataLoader(train_dataset, batch_size=BATCH, shuffle=True)
    val_dataloader = DataLoader(val_dataset, batch_size=BATCH, shuffle=False)
    test_dataloader = DataLoader(test_dataset, batch_size=BATCH, shuffle=False)

    model = LanguageModel(vocab_size=VOCAB)
    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = L.Trainer(strategy="ddp", accelerator="cpu", devices=devices, gradient_clip_val=0.25,
                        max_epochs=EPOCHS, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, train_dataloader, val_dataloader)
    trainer.test(model, test_dataloader)


if __name__ == "__main__":
    main()
