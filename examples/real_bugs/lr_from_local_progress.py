"""Learning rate computed from each rank's own data-loader progress: the ranks' learning rates, and
then their weights, drift apart.

Source: https://github.com/karpathy/nanochat/pull/857 (nanochat; "Fix LR divergence across ranks in
SFT").
Original bug: in nanochat's epoch-based SFT the learning-rate multiplier came from `progress`, the
fraction of the dataset this rank's loader had consumed; the loader packs conversations of different
lengths, so one rank's progress ran ahead of another's and "LR can diverge between ranks" (the
reproduction prints a different multiplier per rank). DDP keeps the gradients equal, but each rank
then applies them with its own step size.
This program: DDP on 2 ranks with AdamW; each rank packs variable-length documents into batches of
at most 24 tokens (its own documents, as a sharded loader gives them) and computes the LR multiplier
from the documents it consumed over its share of the dataset. The multipliers differ from step 1
(the ranks packed different numbers of documents). The fix (`lr_from_local_progress_fixed.py`) takes the progress all-reduced (max)
across the ranks, as the maintainer's step-based schedule makes it identical. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 5
DOCS = 40  # this rank's share of the dataset


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 1)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(2000 + rank)
    lengths = torch.randint(2, 12, (DOCS,), generator=data).tolist()
    consumed = 0
    for _ in range(STEPS):
        # Pack whole documents up to 24 tokens: how many fit depends on this rank's lengths.
        tokens = 0
        while consumed < DOCS and tokens + lengths[consumed] <= 24:
            tokens += lengths[consumed]
            consumed += 1
        progress = torch.tensor(consumed / DOCS)
        if fixed:
            dist.all_reduce(progress, op=dist.ReduceOp.MAX)
        for group in optimizer.param_groups:
            group["lr"] = 1e-2 * (1.0 - float(progress))
        optimizer.zero_grad()
        x, y = torch.randn(tokens, 6, generator=data), torch.randn(tokens, 1, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
