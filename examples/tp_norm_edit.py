"""Tensor parallel + data parallel on a 2x2 mesh (dp x tp), as clean_tp_dp.py, where rank 1 edits
its copy of the final LayerNorm's weight after the optimizer step of step 3 (a debugging hook
left in). That norm is replicated over tp: ranks 0 and 1 must hold the same shard of it, and now
do not, the divergence of pytorch/pytorch#119343. lockstep's `replica_weights` names 1.weight on
rank 1 at step 3, within its replica group {0, 1} on mesh dim tp; the gradients and moments
of the norms computed from it drift after."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh

from clean_tp_dp import DIM, build

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(0)
    model = build(mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + mesh.get_local_rank("dp"))
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(4, 6, DIM, generator=data)
        y = torch.randn(4, 6, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        if rank == 1 and step == BUG_STEP:
            with torch.no_grad():
                model[1].weight.to_local()[0] += 1e-3
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
