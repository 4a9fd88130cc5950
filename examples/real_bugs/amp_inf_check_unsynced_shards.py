"""Mixed precision with a sharded optimizer: each rank checks only its own shard for inf, so one rank
skips the step (and its broadcasts) while the others take it.

Source: https://github.com/facebookresearch/fairscale/issues/180 (fairscale; the hang is reproduced in
PR 179: "inf check on GPU1 -> finds infs -> skips optimizer step; inf check on GPU2 -> doesn't find
infs -> calls optimizer step and hangs").
Original bug: with ShardedDDP + OSS, gradients are reduced to the rank that owns each parameter, and
torch AMP's GradScaler looked for inf/NaN only in the gradients that rank holds. When an overflow
lands in one shard, only its owner skips `optimizer.step()`, which in OSS also broadcasts every
shard: the ranks' collectives no longer match. Fairscale's fix was a sharded grad scaler that
all-reduces `found_inf` (ShardedGradScaler).
This program: a hand-written OSS on 2 ranks (parameter i belongs to rank i % 2; gradients reduced to
the owner; the owner steps and every shard is broadcast from its owner); a loss-scaler-style check
of the owned gradients. At step 3 rank 1's batch carries an overflowed feature, whose gradient lands
in the first layer's weight, owned by rank 0: rank 0 skips its step and the broadcasts. The fix
(`amp_inf_check_unsynced_shards_fixed.py`) all-reduces the found-inf flag first. Onset: step 3,
rank 0.
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 5
OVERFLOW_STEP = 3


class ShardedSGD(torch.optim.Optimizer):
    """OSS's shape (fairscale's OSS is a torch.optim.Optimizer too): each rank updates the
    parameters it owns, then every shard is broadcast."""

    def __init__(self, params, lr, fixed):
        self.params = list(params)
        super().__init__(self.params, {"lr": lr})
        self.lr, self.fixed = lr, fixed
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def owner(self, i):
        return i % self.world

    def reduce_gradients(self):
        for i, p in enumerate(self.params):
            dist.reduce(p.grad, dst=self.owner(i))
            if self.owner(i) != self.rank:
                p.grad = None  # the non-owner frees it, as ShardedDDP does

    @torch.no_grad()
    def step(self):
        own = [p for i, p in enumerate(self.params) if self.owner(i) == self.rank]
        found_inf = torch.tensor(float(any(not torch.isfinite(p.grad).all() for p in own)))
        if self.fixed:
            dist.all_reduce(found_inf, op=dist.ReduceOp.MAX)
        if found_inf.item() > 0:
            return  # the scaler skips the step: no update, and no broadcast either
        for p in own:
            p.add_(p.grad, alpha=-self.lr / self.world)
        for i, p in enumerate(self.params):
            dist.broadcast(p, src=self.owner(i))

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 2))
    optimizer = ShardedSGD(model.parameters(), lr=0.1, fixed=fixed)
    data = torch.Generator().manual_seed(1500 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(8, 6, generator=data), torch.randn(8, 2, generator=data)
        if rank == 1 and step == OVERFLOW_STEP:
            x[0, 0] = float("inf")  # an overflow in one sample, as fp16 activations produce
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.reduce_gradients()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
