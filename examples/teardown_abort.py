"""DDP training that completes on every rank, then one rank aborts in teardown.

The model trains for 4 steps on 2 ranks, every replica identical; each rank destroys its process
group and returns from main(). Then rank 1 dies of SIGABRT in an exit handler: the pattern of a
native library's shutdown that aborts after a clean run (a backend's worker thread meeting a
finalizing interpreter, a logger's flush on a closed socket). The handler is registered before
init_process_group, so it runs after the handlers registered later (the probe's, which writes the
last step's record and the trace footer): rank 1's records are complete when it dies. lockstep's
`teardown` names rank 1 after its last step, with training complete; `crash` says nothing.
"""
import atexit
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
ABORTING_RANK = 1

if int(os.environ.get("RANK", "0")) == ABORTING_RANK:
    atexit.register(os.abort)  # runs last: atexit handlers run in reverse order of registration


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(200 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        nn.functional.mse_loss(model(x), torch.zeros(8, 4)).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
