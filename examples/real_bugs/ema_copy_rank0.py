"""EMA kept on rank 0 only, with `update_model_with_ema_every`: only rank 0's model gets the EMA
weights.

Source: https://github.com/lucidrains/ema-pytorch/issues/9 (ema-pytorch; "Using EMA in a DDP setup").
Original bug: the maintainer's answer was to update the EMA on rank 0 only; commenters then pointed
out that with `update_model_with_ema_every` the EMA copies its weights into the online model, which
then happens on rank 0 alone: "model copys on other devices should not know the updated
parameters". The DDP replicas silently diverge at the first copy and never agree again.
This program: an EMA with ema-pytorch's semantics (lerp every step, copy into the online model every
3 steps) updated on rank 0 only, under DDP on 3 ranks. The copy happens after step 3's optimizer
step. The fix (`ema_copy_rank0_fixed.py`) updates the EMA on every rank (the replicas are identical, so
their EMAs are too). Onset: step 3, rank 0.
"""
import copy

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 5


class EMA:
    """The part of ema_pytorch.EMA this needs: beta, update_model_with_ema_every."""

    def __init__(self, model, beta=0.9, update_model_with_ema_every=3):
        self.online, self.ema_model = model, copy.deepcopy(model)
        self.beta, self.every, self.step = beta, update_model_with_ema_every, 0

    @torch.no_grad()
    def update(self):
        self.step += 1
        for e, p in zip(self.ema_model.parameters(), self.online.parameters()):
            e.lerp_(p, 1.0 - self.beta)
        if self.step % self.every == 0:
            for e, p in zip(self.ema_model.parameters(), self.online.parameters()):
                p.copy_(e)


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.SiLU(), nn.Linear(12, 2))
    ddp = DDP(model)
    ema = EMA(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(900 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, 6, generator=data), torch.randn(8, 2, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
        if fixed or rank == 0:
            ema.update()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
