"""Tensor parallelism the way torch's own tutorial program does it (pytorch/examples
distributed/tensor_parallelism/tensor_parallel_example.py, re-created here): the program never
calls init_process_group; `init_device_mesh` starts torch.distributed itself (device_mesh.py
imports init_process_group by name), and a two-layer MLP is split Megatron-style over the mesh,
ColwiseParallel in, RowwiseParallel out. Every rank feeds the same input (seeded per iteration, as
the tutorial does). What must agree across the ranks: out_proj's bias, which RowwiseParallel
keeps whole (replicated) on every rank, with its gradient and AdamW moments; the weight shards
differ by design and are not compared. No finding; the report counts the replicated tensors
compared."""
import os

import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

STEPS = int(os.environ.get("EXAMPLE_STEPS", "6"))


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))


def build():
    """The mesh over every rank and the parallelized model with its optimizer."""
    mesh = init_device_mesh("cpu", (int(os.environ["WORLD_SIZE"]),))
    torch.manual_seed(0)  # the same initial weights on every rank before they are split
    model = parallelize_module(ToyModel(), mesh, {"in_proj": ColwiseParallel(), "out_proj": RowwiseParallel()})
    # After parallelize_module, which replaces the parameters with DTensors.
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.25, foreach=True)
    return mesh, model, optimizer


def train(mesh, model, optimizer, after_step=None):
    for i in range(1, STEPS + 1):
        torch.manual_seed(i)  # the same batch on every TP rank
        x = torch.rand(20, 10)
        model(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        if after_step is not None:
            after_step(i)


def main():
    mesh, model, optimizer = build()
    train(mesh, model, optimizer)


if __name__ == "__main__":
    main()
