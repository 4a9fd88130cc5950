"""DDP gradient accumulation with `require_backward_grad_sync` set after the forward pass.

Source: https://github.com/karpathy/build-nanogpt/pull/30 (build-nanogpt; Karpathy: "I think nanoGPT
is broken too, then").
Original bug: the training loop set `model.require_backward_grad_sync = (micro_step ==
grad_accum_steps - 1)` between the forward and the backward pass. DDP reads the flag in its forward
(that is where it prepares the reducer), so the last micro-step ran its forward with the flag still
False and its backward all-reduced nothing: each rank stepped with the all-reduced first micro-batch
plus its own local last micro-batch. The loss was visibly worse than with one micro-step.
This program: the same loop (2 micro-steps, AdamW) on 3 ranks with different data; the fix
(`main(fixed=True)`, `nanogpt_sync_flag_after_forward_fixed.py`) sets the flag before the forward,
as the upstream PR does. Onset: step 1 (the first optimizer step uses unsynchronized gradients).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
ACCUM = 2


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1000 + rank)
    for _ in range(STEPS):
        for micro_step in range(ACCUM):
            x, y = torch.randn(8, 16, generator=data), torch.randn(8, 16, generator=data)
            if fixed:
                model.require_backward_grad_sync = micro_step == ACCUM - 1
            loss = nn.functional.mse_loss(model(x), y) / ACCUM
            if not fixed:
                model.require_backward_grad_sync = micro_step == ACCUM - 1  # too late: the forward ran
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
