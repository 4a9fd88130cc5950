"""A faulty variant of PyTorch's DDP tutorial (examples/ddp_tutorial_spawn.py): the program starts
its own ranks with `torch.multiprocessing.spawn`, twice. The first spawning is the tutorial's
demo_basic, clean. The second trains from a checkpoint and then "resumes" from it on rank 0 only:
rank 0 saved the model before the first step, every rank steps once, and rank 0 alone loads the
checkpoint back (the load guarded by the same `if rank == 0` as the save), so its weights go back
to the start while rank 1 keeps its update. Adapted for CPU and gloo as ddp_tutorial_spawn.py is.

    lockstep exec --ranks 1 --out runs -- python3 ddp_tutorial_spawn_resume_rank0.py

lockstep judges each spawning as a world of its own: the first passes, the second's replicas
differ after its first step, and the finding names spawning 2 (demo_checkpoint).
"""
import os
import tempfile
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
import torch.multiprocessing as mp

from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '12356'
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def train_step(ddp_model, optimizer):
    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    nn.MSELoss()(outputs, labels).backward()
    optimizer.step()


def demo_basic(rank, world_size):
    setup(rank, world_size)
    ddp_model = DDP(ToyModel())
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    train_step(ddp_model, optimizer)
    cleanup()


def demo_checkpoint(rank, world_size):
    setup(rank, world_size)
    ddp_model = DDP(ToyModel())
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.1)
    CHECKPOINT_PATH = os.path.join(tempfile.gettempdir(), "resume_rank0.%d.checkpoint" % os.getppid())
    if rank == 0:
        torch.save(ddp_model.state_dict(), CHECKPOINT_PATH)
    dist.barrier()
    train_step(ddp_model, optimizer)
    # The bug: the resume is guarded like the save, so rank 0 alone goes back to the checkpoint.
    if rank == 0:
        ddp_model.load_state_dict(torch.load(CHECKPOINT_PATH))
    train_step(ddp_model, optimizer)
    train_step(ddp_model, optimizer)
    dist.barrier()
    if rank == 0:
        os.remove(CHECKPOINT_PATH)
    cleanup()


def run_demo(demo_fn, world_size):
    mp.spawn(demo_fn, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    run_demo(demo_basic, 2)
    run_demo(demo_checkpoint, 2)
