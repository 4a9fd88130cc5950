"""FSDP2 with its data-parallel replicas synchronized by hand (HSDP the way older trainers wrote
it): each parameter is sharded over "shard" of a 2x2 (replicate x shard) mesh, and after the
backward pass the program all-reduces every gradient shard across "replicate" itself. A
gradient-accumulation counter that is off by one skips that reduction at step 3, so each replica
steps on its own half of the batch. lockstep's `synced_grads` finds the gradients apart within
the replica groups {0, 2} and {1, 3} on mesh dim replicate at step 3 (the replicate dim is the
root mesh's: the shards' own mesh is mesh["shard"]); the weights and Adam moments follow."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    replicas = mesh.get_group("replicate")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    fully_shard(model, mesh=mesh["shard"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        if step != BUG_STEP:  # the bug: the accumulation counter skips the sync of step 3
            for p in model.parameters():
                local = p.grad.to_local()
                dist.all_reduce(local, group=replicas)
                local.div_(2)
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
