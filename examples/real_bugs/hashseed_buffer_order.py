"""Buffers registered in `set` order: DDP's start-up broadcast swaps them on some ranks.

Source: https://github.com/huggingface/transformers/pull/48162 (transformers; Gemma3 under
`accelerate launch` DDP on 4 GPUs: "some of the ranks always produced garbage tokens").
Original bug: the models registered one RoPE buffer per layer type in the order of
`list(set(config.layer_types))`. Python randomizes string hashing per process, so each rank got its
own order; DDP's `_sync_module_states` broadcasts buffers by position, not by name, so on the ranks
whose order differed from rank 0's the RoPE buffers were swapped. Setting `PYTHONHASHSEED=0` for every
process hid it; the fix registers them in a deterministic order.
This program: a small model with per-layer-type rotary frequencies registered in `set` order, under
DDP on 3 ranks. Each rank re-executes itself once with a fixed hash seed per rank (0, 1, 3: rank 1's
set order differs, checked on Python 3.11), so that the per-process randomness is the same in every
run. The fix (`hashseed_buffer_order_fixed.py`) is the PR's `sorted(...)`. Onset: step 1 (the
buffers differ from DDP's construction on), rank 1.
"""
import os
import sys

if os.environ.get("REAL_BUGS_HASHSEED_SET") != "1":
    os.environ["REAL_BUGS_HASHSEED_SET"] = "1"
    os.environ["PYTHONHASHSEED"] = str((0, 1, 3, 4)[int(os.environ.get("RANK", "0")) % 4])
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS = 3
DIM = 8


class Model(nn.Module):
    def __init__(self, fixed):
        super().__init__()
        self.layer_types = ["full_attention", "sliding_attention", "full_attention"]
        kinds = sorted(set(self.layer_types)) if fixed else list(set(self.layer_types))
        for kind in kinds:
            base = 10000.0 if kind == "full_attention" else 10.0
            self.register_buffer("inv_freq_" + kind, 1.0 / base ** (torch.arange(0, DIM, 2).float() / DIM))
        self.layers = nn.ModuleList(nn.Linear(DIM, DIM) for _ in self.layer_types)
        self.head = nn.Linear(DIM, 1)

    def forward(self, x):
        pos = torch.arange(x.shape[1]).float()[:, None]
        for kind, layer in zip(self.layer_types, self.layers):
            angles = pos * getattr(self, "inv_freq_" + kind)
            x = torch.tanh(layer(x * torch.cat([angles.cos(), angles.sin()], -1)))
        return self.head(x.mean(1))


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp = DDP(Model(fixed))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(800 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(4, 6, DIM, generator=data), torch.randn(4, 1, generator=data)
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
