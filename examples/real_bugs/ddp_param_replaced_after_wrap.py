"""A parameter replaced after the model was wrapped in DDP: its gradient is never all-reduced.

Source: https://github.com/pytorch/pytorch/issues/12603 (PyTorch; "DistributedDataParallel does not
get the same grad at all").
Original bug: the program assigned a new `nn.Parameter` to a module after constructing DDP. DDP had
registered its gradient hooks (and buckets) on the old parameter, so the new one's gradient stayed
rank-local and the replicas drifted apart, silently (maintainer: "the backward hook call-back
function has actually already registered on the old parameter").
This program: a classifier head re-initialized after wrapping (a common fine-tuning pattern), with
`find_unused_parameters=True` as many trainers set it (without it, torch 2.11 raises at step 2 that
the old parameter got no gradient); 3 ranks with different data. The fix
(`ddp_param_replaced_after_wrap_fixed.py`) replaces the head before wrapping. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 4))

    def new_head():
        torch.manual_seed(1)
        model[2].weight = nn.Parameter(torch.randn(4, 20) * 0.05)

    if fixed:
        new_head()
    ddp = DDP(model, find_unused_parameters=True)
    if not fixed:
        new_head()  # after DDP registered its hooks on the old weight
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(300 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, 10, generator=data), torch.randn(8, 4, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
