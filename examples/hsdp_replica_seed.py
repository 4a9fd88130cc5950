"""HSDP on a 2x2 mesh (replicate x shard) whose second replica (ranks 2 and 3) seeds its model
with another seed: FSDP2 does not broadcast parameters at start, so the replicas start from
"completely different parameters" (OLMo-core PR #319) and, averaging the same gradients, stay
apart. lockstep's `replica_weights` finds it at the first step recorded (step 1), within the
replica groups {0, 2} and {1, 3} on mesh dim replicate, and names ranks 2 and 3."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    replica = mesh.get_local_rank("replicate")
    torch.manual_seed(replica)  # the bug: one seed per replica instead of one for all
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(16, 32, generator=data)
        y = torch.randn(16, 8, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
