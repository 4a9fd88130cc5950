"""An LR scheduler stepped on rank 0 only (under `if rank == 0:`, beside its logging): from the next
step on, rank 0 trains with another learning rate than its replicas.

The first steps here train nothing (the loss is masked to zero while a warm-up flag is set: every
gradient is zero, so every replica's weights stay equal), which is where a weight comparison is
blind: `optimizer_settings` names rank 0's learning rate at step 2, the first step that runs with
it, and `replica_weights` sees the weights part only at step 4, the first step with a gradient.

Run it as any torchrun program, e.g. `lockstep exec --ranks 3 --out runs -- python3 scheduler_on_rank0_only.py`.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 5
WARMUP = 3  # steps whose loss is masked out


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    data = torch.Generator().manual_seed(300 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(16, 8, generator=data), torch.randn(16, 1, generator=data)
        mask = 0.0 if step <= WARMUP else 1.0
        (mask * nn.functional.mse_loss(ddp(x), y)).backward()
        optimizer.step()
        if rank == 0:  # the bug: only the logging rank steps its schedule
            scheduler.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
