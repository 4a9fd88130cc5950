"""An MPI program whose attention forward builds a new MPI communicator ("its heads' group") once
the model is warm, at step 3, on every rank: the MPI form of the re-discovery bug of multi-slice
jobs (pytorch/xla#8812, #8954), where a code path reached only after warm-up asked the job who
is there a second time. MPI_Comm_split is collective over the old communicator: here every rank
does it, so nothing hangs and the replicas stay identical; one rank taking the path alone would
hang the others. Run unchanged under `lockstep exec --launcher mpirun`: the PMPI recorder that
exec preloads names the call (mpi.comm_split), the step and the rank."""
import os
import socket

from mpi4py import MPI

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
BUG_STEP = 3


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.calls = 0
        self.head_group = None

    def forward(self, x):
        self.calls += 1
        if self.calls == BUG_STEP and self.head_group is None:
            # The bug: a path taken only once the model is warm builds a communicator again.
            world = MPI.COMM_WORLD
            self.head_group = world.Split(color=0, key=world.Get_rank())
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, d))


def main():
    world = MPI.COMM_WORLD
    port = None
    if world.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(world.bcast(port, root=0))
    dist.init_process_group("gloo", rank=world.Get_rank(), world_size=world.Get_size())
    torch.manual_seed(0)
    attention = Attention(32, 4)
    model = nn.Sequential(nn.Linear(8, 32), attention, nn.Linear(32, 8))
    ddp = DDP(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(100 + world.Get_rank())
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(4, 6, 8, generator=data)
        nn.functional.mse_loss(ddp(x), torch.zeros(4, 6, 8)).backward()
        optimizer.step()
    if attention.head_group is not None:
        attention.head_group.Free()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
