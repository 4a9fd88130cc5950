"""Lightning Fabric's language-model example re-created: Lightning-AI/pytorch-lightning
examples/fabric/language_model/train.py at 7f0c3436 (Apache-2.0), small enough for CPU.

What it keeps: `L.Fabric()` with `fabric.setup(model, optimizer)` and
`fabric.setup_dataloaders(train, val)` (so DDP and a DistributedSampler per loader), Lightning's
demo `Transformer` (lightning.pytorch.demos) trained with next-token NLL, SGD lr 0.1,
`fabric.backward(loss)`, `fabric.clip_gradients(model, optimizer, clip_val=0.25)` before every
optimizer step, and a validation loop without collectives after every epoch (model.eval(),
no_grad, model.train()). What it changes: WikiText2 (a download) becomes a synthetic token stream
built in code, the model is shrunk (32 wide, one layer each side, vocabulary 16) and it trains
EXAMPLE_EPOCHS (default 2) short epochs instead of 20 long ones. The stream repeats token 0 at
every other position, so at the start the decoder bias's gradient for token 0 (about -0.4) is
beyond clip_val and clipping really changes the update, as it does with WikiText2's frequent tokens.

This is the program that gave a false `hang` under the local launcher before hangs were decided
from what the ranks are doing (issue 37): validation is a phase with no collective. Clean: the
ranks start from the same weights, DDP averages the gradients, every rank clips the same averaged
gradients, and the replicas stay identical: lockstep finds nothing.

fabric_clip_on_rank0_only.py runs it with the bug issue 37 tried: `fabric.clip_gradients` on
rank 0 only.

    lockstep exec --ranks 2 --out runs -- python3 fabric_language_model.py
"""
import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.demos import Transformer
from torch.utils.data import DataLoader, Dataset, random_split

EPOCHS = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
CLIP_RANK0_ONLY = False  # fabric_clip_on_rank0_only.py sets it
VOCAB = 16
BLOCK = 12  # tokens per sample (WikiText2's demo dataset uses 35)
BATCH = 4


class SyntheticText(Dataset):
    """(input, target) pairs of BLOCK tokens, target shifted by one, cut from one token stream,
    the way lightning.pytorch.demos.WikiText2 serves its corpus."""

    def __init__(self, tokens=1200, seed=7):
        g = torch.Generator().manual_seed(seed)
        words = torch.randint(1, VOCAB, (tokens,), generator=g)
        words[::2] = 0  # a frequent token, as "the" and "," are in text
        self.data = words

    def __len__(self):
        return (len(self.data) - 1) // BLOCK

    def __getitem__(self, index):
        start = index * BLOCK
        return self.data[start:start + BLOCK], self.data[start + 1:start + BLOCK + 1]


def main():
    L.seed_everything(42)
    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    # Explicitly CPU: the catalog runs with gloo; `devices` is what torchrun's environment says
    # this node runs (Fabric then joins that world instead of launching its own processes).
    fabric = L.Fabric(accelerator="cpu", strategy="ddp" if devices > 1 else "auto", devices=devices)
    fabric.launch()

    dataset = SyntheticText()
    train_dataloader, val_dataloader = get_dataloaders(dataset)
    model = Transformer(vocab_size=VOCAB, ninp=32, nhead=2, nhid=32, nlayers=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    model, optimizer = fabric.setup(model, optimizer)
    train_dataloader, val_dataloader = fabric.setup_dataloaders(train_dataloader, val_dataloader)
    train(fabric, model, optimizer, train_dataloader, val_dataloader)


def train(fabric, model, optimizer, train_dataloader, val_dataloader):
    for epoch in range(EPOCHS):
        train_epoch(fabric, model, optimizer, train_dataloader, epoch)
        val_loss = validate(fabric, model, val_dataloader)
        fabric.print(f"val loss {val_loss.item():.4f}")


def train_epoch(fabric, model, optimizer, train_dataloader, epoch):
    for batch_idx, (input, target) in enumerate(train_dataloader):
        output = model(input, target)
        loss = F.nll_loss(output, target.view(-1))
        fabric.backward(loss)
        if not CLIP_RANK0_ONLY or fabric.global_rank == 0:
            fabric.clip_gradients(model, optimizer, clip_val=0.25)
        optimizer.step()
        optimizer.zero_grad()
        if batch_idx % 4 == 0:
            fabric.print(f"epoch: {epoch} - iteration: {batch_idx} - loss {loss.item():.4f}")


@torch.no_grad()
def validate(fabric, model, val_dataloader):
    fabric.print("Validating ...")
    model.eval()
    losses = torch.zeros(len(val_dataloader))
    for k, (input, target) in enumerate(val_dataloader):
        output = model(input, target)
        losses[k] = F.nll_loss(output, target.view(-1)).item()
    model.train()
    return losses.mean()


def get_dataloaders(dataset):
    n = len(dataset)
    generator = torch.Generator().manual_seed(42)
    train_dataset, val_dataset = random_split(dataset, [n - 20, 20], generator=generator)
    train_dataloader = DataLoader(train_dataset, batch_size=BATCH, shuffle=True)
    val_dataloader = DataLoader(val_dataset, batch_size=BATCH, shuffle=False)
    return train_dataloader, val_dataloader


if __name__ == "__main__":
    main()
