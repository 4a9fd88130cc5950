"""The pytorch/examples imagenet story on CPU: the process group is initialized, each rank reads
its own shard of the data, but the model is never wrapped in DistributedDataParallel (the script
wraps it only on a GPU), so no gradient is ever all-reduced and every rank trains a model of its
own. lockstep's `replica_weights` names every parameter at step 1, with the cause: no gradient
all-reduce was issued on any rank in step 1.

The script's GPU road (the model wrapped in DDP on CUDA) is clean, and on a GPU machine it also
left this CPU data on the host (the first GPU run, 2026-11-26: every rank stopped on a device
mismatch). The catalog tells the CPU story on any machine; EXAMPLE_GPU_ROAD=1 takes the GPU road,
the data moved to the model's device as the script does there."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = int(os.environ.get("EXAMPLE_STEPS", "3"))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights everywhere, as a seeded script has
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    device = torch.device("cpu")
    gpu_road = os.environ.get("EXAMPLE_GPU_ROAD") == "1" and torch.cuda.is_available()
    if gpu_road:  # the script's only road to DDP
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
        model = nn.parallel.DistributedDataParallel(model.to(device), device_ids=[device.index])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own shard
    for _ in range(STEPS):
        x = torch.randn(16, 32, generator=data)
        y = torch.randint(0, 10, (16,), generator=data)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
