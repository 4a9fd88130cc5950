"""Early stopping decided on each rank's own validation metric, in a program that starts its own
ranks with `torch.multiprocessing.spawn`: one rank leaves the training loop and the others hang.

The bug is Lightning's issue 379 (https://github.com/Lightning-AI/pytorch-lightning/issues/379,
"Early stopping with ddp bug"), whose `ddp` backend started its processes with mp.spawn, as
PyTorch's DDP tutorial does: "if the stop condition is met in one or more subprocess but not in all
subprocess, the corresponding subprocess are stop but the others ones are still running and the
training hangs". The same program as examples/real_bugs/early_stop_one_rank.py, started the
tutorial's way (`python early_stop_one_rank_spawn.py`, one process spawning 3 ranks):

    lockstep exec --ranks 1 --out runs -- python3 early_stop_one_rank_spawn.py

Rank 2 reaches the threshold after step 5 and waits in the barrier before the model is saved, while
ranks 0 and 1 run step 6's gradient all-reduce. The launched process records nothing while it
waits for its ranks: lockstep's watchdog follows the spawned world, and judges the hang there after
--hang-timeout, naming spawning 1 (its sidecar: 20 s).
"""
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 3
STEPS = 10
THRESHOLD = 0.9  # validation accuracy


def train(rank, world_size, port):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world_size)
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    centers = torch.randn(3, 4, generator=torch.Generator().manual_seed(3))
    data = torch.Generator().manual_seed(1200 + rank)

    def batch(n):
        y = torch.randint(0, 3, (n,), generator=data)
        return centers[y] + 0.8 * torch.randn(n, 4, generator=data), y

    x_val, y_val = batch(20)  # this rank's own validation set
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = batch(16)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            accuracy = (model.module(x_val).argmax(1) == y_val).float().mean()
        if accuracy >= THRESHOLD:  # this rank's own decision: the bug
            print("rank %d stops after step %d (validation accuracy %.2f)" % (rank, step, accuracy), flush=True)
            break
    dist.barrier()  # every rank, before rank 0 saves the model
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    mp.spawn(train, args=(WORLD, free_port()), nprocs=WORLD)
