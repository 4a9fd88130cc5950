"""FSDP1 with HYBRID_SHARD over a 2x2 device mesh (replicate x shard), use_orig_params: each rank
holds a shard of every parameter (views into its FlatParameter) that the rank of the other
replica holding the same shard must equal. The probe records them with FSDP1's replicate group
({0, 2} or {1, 3}), so they are compared there and nowhere else; clean. The mesh is one
discovery call at start-up, and its groups' collectives (the replicas' all-reduce) are recorded."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy

STEPS = int(os.environ.get("EXAMPLE_STEPS", "3"))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    model = FSDP(model, sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_mesh=mesh, use_orig_params=True,
                 device_id=torch.device("cpu"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        model(torch.randn(8, 16, generator=data)).pow(2).mean().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
