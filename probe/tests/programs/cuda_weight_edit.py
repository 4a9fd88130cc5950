"""CUDA tensors (needs a GPU): DDP over gloo with the model on the GPU, the ranks sharing it when
there are fewer GPUs than ranks. The probe digests the parameters, gradients and AdamW state where
they live, with the project's CUDA kernel. Rank 2 nudges a weight after step 2; the probe catches
it at step 2 as it does on the CPU. Rank 1's loss at step 3 is NaN, its gradients are not: the
probe reads a CUDA loss when the step's record is written, not when backward is called (probe.py,
_PendingLoss), and must still give the NaN to step 3. The subgroups made at start-up are no
finding."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    # A group per rank at start-up, through new_subgroups (torch 1.13 allows it only with CUDA):
    # one discovery record, allowed at start-up, no finding.
    dist.new_subgroups(group_size=1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    ddp = DDP(model, device_ids=[device.index])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator(device=device).manual_seed(100 + rank)
    for step in range(1, 5):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data, device=device)
        loss = nn.functional.mse_loss(ddp(x), torch.zeros(8, 4, device=device))
        if rank == 1 and step == 3:
            loss = loss + torch.tensor(float("nan"), device=device)  # no gradient flows into it
        loss.backward()
        optimizer.step()
        if rank == 2 and step == 2:
            with torch.no_grad():
                model[2].bias.add_(1e-3)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
