"""The optimizer built before the model is wrapped in FSDP (`use_orig_params=False`): it holds the
parameters FSDP replaced by its flat parameter, and training stalls on every rank.

Source: https://github.com/huggingface/accelerate/issues/3256 (Accelerate; "Model Training Stalls
with FSDP when `fsdp_use_orig_params=False` due to inconsistent model-optimizer state", found by the
TrainCheck team; also https://github.com/huggingface/accelerate/issues/3209).
Original bug: the training script created AdamW on the model's parameters and then passed both to
`accelerator.prepare`, which wrapped the model in FSDP; with `use_orig_params=False` FSDP flattens
the parameters into a FlatParameter and `prepare` did not re-point the optimizer. "The `step` api of
the optimizer was not updating the model" and `zero_grad` had nothing to clear: the loss stayed flat,
with no error, on every rank alike.
This program: FSDP1 FULL_SHARD with `use_orig_params=False` on 2 ranks, AdamW created from the
unwrapped module; the loss never moves. The fix (`fsdp_optimizer_before_wrap_fixed.py`) creates the
optimizer from the wrapped model. Onset: step 1 (the first step that updates nothing).
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
    module = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    if not fixed:
        optimizer = torch.optim.AdamW(module.parameters(), lr=1e-2)  # before the wrap
    model = FSDP(module, sharding_strategy=ShardingStrategy.FULL_SHARD, use_orig_params=False,
                 device_id=torch.device("cpu"))
    if fixed:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(2300 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, 8, generator=data), torch.randn(8, 4, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
