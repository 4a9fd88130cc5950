"""DDP training of a small attention model whose attention forward builds a new process group
("to find its peers") once the model is warmed up, at step 3, on every rank: the shape of the
PyTorch/XLA multi-slice bug (pytorch/xla#8812, #8954), where tracing the flash-attention forward
ran device discovery a second time and multi-slice jobs failed or hung. Nothing diverges: the
replicas stay identical. lockstep's `discovery_count` names the call (torch.new_group), the step
and the line of `forward` it came from, on every rank."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.calls = 0
        self.peers = None

    def forward(self, x):
        self.calls += 1
        if self.calls == BUG_STEP and self.peers is None:
            # The bug: a code path taken only once the model is warm asks who its peers are again.
            self.peers = dist.new_group(ranks=list(range(dist.get_world_size())))
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, d))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), Attention(32, 4), nn.Linear(32, 8))
    ddp = DDP(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(4, 6, 8, generator=data)
        nn.functional.mse_loss(ddp(x), torch.zeros(4, 6, 8)).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
