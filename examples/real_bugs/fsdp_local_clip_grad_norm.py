"""`torch.nn.utils.clip_grad_norm_` on an FSDP1 model: each rank clips its gradient shard by the norm
of that shard alone.

Source: https://github.com/pytorch/pytorch/issues/72548 (PyTorch; "Implement clip_grad_norm for FSDP
models": "since parameters are sharded across ranks, simply using clip_grad_norm_ would be incorrect
as `model.parameters()` does not return the full set of unsharded parameters and thus gradient
clipping would be applied incorrectly"; the symptom in torchtitan,
https://github.com/pytorch/torchtitan/issues/766: "the `grad_norm` varies across different ranks").
Original bug: trainers kept the single-device `clip_grad_norm_(model.parameters(), max_norm)` after
switching to FSDP (FULL_SHARD, `use_orig_params=False`); the norm each rank computes is its own
shard's, so every shard is scaled by a different coefficient and the update is not the one the
unsharded model would take. No replica exists to disagree: the weights are sharded.
This program: FSDP1 FULL_SHARD on 2 ranks, a loss large enough that clipping (max_norm 0.5) always
acts; the fix (`fsdp_local_clip_grad_norm_fixed.py`) calls `model.clip_grad_norm_`, which all-reduces
the squared norms. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy

STEPS = 4


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = FSDP(nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)),
                 sharding_strategy=ShardingStrategy.FULL_SHARD, use_orig_params=False,
                 device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(2400 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, 8, generator=data), torch.randn(8, 4, generator=data) * 10
        nn.functional.mse_loss(model(x), y).backward()
        if fixed:
            model.clip_grad_norm_(0.5)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)  # this rank's shard only
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
