"""A clean data-parallel program that is an MPI program as well, as jobs started by mpirun often
are: mpi4py starts MPI at import (MPI_Init_thread), rank 0 picks the rendezvous port and
broadcasts it over MPI, torch.distributed trains a DDP model on gloo, and the loss is averaged
over MPI for the log. Under `lockstep exec --launcher mpirun` the PMPI recorder (preloaded by
exec) records MPI's start-up call on every rank and nothing after it: no finding."""
import os
import socket

from mpi4py import MPI  # MPI_Init_thread, at start-up

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))


def rendezvous_port(comm):
    """A free port chosen by rank 0 and told to all: no fixed port for concurrent jobs to share."""
    port = None
    if comm.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    return comm.bcast(port, root=0)


def main():
    world = MPI.COMM_WORLD
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(rendezvous_port(world))
    dist.init_process_group("gloo", rank=world.Get_rank(), world_size=world.Get_size())
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2, momentum=0.9)
    data = torch.Generator().manual_seed(100 + world.Get_rank())
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x = torch.randn(4, 8, generator=data)
        loss = nn.functional.mse_loss(ddp(x), torch.zeros(4, 8))
        loss.backward()
        optimizer.step()
        mean_loss = world.allreduce(loss.item(), op=MPI.SUM) / world.Get_size()
        if world.Get_rank() == 0:
            print("step %d loss %.4f" % (step, mean_loss), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
