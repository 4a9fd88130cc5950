"""FSDP1 HYBRID_SHARD on a (N, 1) mesh: the replicas never synchronize their gradients.

Source: https://github.com/verl-project/verl/issues/7493 (verl; PyTorch side:
https://github.com/pytorch/pytorch/issues/154888, closed as not planned for FSDP1).
Original bug: verl built a 2-D mesh (ddp, fsdp) and chose HYBRID_SHARD; with fsdp_size=1 FSDP1
clamps the strategy to NO_SHARD but keeps reducing gradients over the size-1 shard group, so ranks on
the replicate dim never synchronize, silently (found in production on 3 trainer GPUs).
This program: FSDP1 with `device_mesh=(world, 1)` and HYBRID_SHARD on 2 ranks with different data
(checked on torch 2.11/gloo: the parameters differ after the first step). The fix
(`fsdp1_hybrid_shard_size1_fixed.py`) is the fallback of verl's PR #7494: NO_SHARD over the whole
data-parallel group when the shard dim has size 1. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy

STEPS = 4


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world, 1), mesh_dim_names=("ddp", "fsdp"))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    if fixed:
        model = FSDP(model, device_mesh=mesh["ddp"], sharding_strategy=ShardingStrategy.NO_SHARD,
                     use_orig_params=True, device_id=torch.device("cpu"))
    else:
        model = FSDP(model, device_mesh=mesh, sharding_strategy=ShardingStrategy.HYBRID_SHARD,
                     use_orig_params=True, device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(500 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        model(torch.randn(4, 8, generator=data)).pow(2).mean().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
