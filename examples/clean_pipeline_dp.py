"""Pipeline parallel x data parallel on a 2x2 mesh (pp x dp), gloo on CPU: torch.distributed.
pipelining runs two stages of an MLP (GPipe, 2 micro-batches), each stage a DDP over its dp
pair. Each rank holds its stage's layers only: lockstep compares a stage's tensors among the
ranks of that stage ({0, 1} and {2, 3}, mesh dim dp), as the mesh dim named "pp" says, and does
not call the other stage's layers missing. No finding."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))


def main():
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
    stage_index = mesh.get_local_rank("pp")
    torch.manual_seed(0)
    full = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    part = full[:3] if stage_index == 0 else full[3:]
    part = DDP(part, process_group=mesh.get_group("dp"))
    stage = PipelineStage(part, stage_index, 2, torch.device("cpu"), group=mesh.get_group("pp"))
    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=nn.functional.mse_loss)
    optimizer = torch.optim.AdamW(part.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + mesh.get_local_rank("dp"))
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        y = torch.randn(8, 4, generator=data)
        if stage_index == 0:
            schedule.step(x)
        else:
            schedule.step(target=y)
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
