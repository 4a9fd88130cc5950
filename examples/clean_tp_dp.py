"""Tensor parallel + data parallel on a 2x2 mesh (dp x tp), gloo on CPU: a small transformer
block whose attention and MLP projections are split over "tp" (ColwiseParallel in,
RowwiseParallel out) while its LayerNorms stay whole on every tp rank, and FSDP2 over "dp"
(the torchtitan layout). lockstep compares each tensor within the ranks that must hold it: a
norm's shard on the tp pair that holds it ({0, 1}, {2, 3}: mesh dim tp), a row-wise bias across
tp likewise, and no colwise weight shard at all. No finding."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
DIM, HEADS = 32, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = nn.LayerNorm(DIM)
        self.q = nn.Linear(DIM, DIM)
        self.k = nn.Linear(DIM, DIM)
        self.v = nn.Linear(DIM, DIM)
        self.out = nn.Linear(DIM, DIM)
        self.mlp_norm = nn.LayerNorm(DIM)
        self.up = nn.Linear(DIM, 4 * DIM)
        self.down = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        # Local heads: colwise q/k/v give each tp rank HEADS / tp of them.
        q, k, v = (proj(h).view(b, t, -1, DIM // HEADS).transpose(1, 2) for proj in (self.q, self.k, self.v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, -1))
        return x + self.down(nn.functional.gelu(self.up(self.mlp_norm(x))))


def build(mesh):
    model = nn.Sequential(Block(), nn.LayerNorm(DIM), nn.Linear(DIM, 8))
    plan = {"0.q": ColwiseParallel(), "0.k": ColwiseParallel(), "0.v": ColwiseParallel(),
            "0.out": RowwiseParallel(), "0.up": ColwiseParallel(), "0.down": RowwiseParallel()}
    parallelize_module(model, mesh["tp"], plan)
    fully_shard(model[0], mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return model


def main():
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(0)
    model = build(mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    # The tp ranks of one dp replica see the same batch.
    data = torch.Generator().manual_seed(100 + mesh.get_local_rank("dp"))
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(4, 6, DIM, generator=data)
        y = torch.randn(4, 6, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
