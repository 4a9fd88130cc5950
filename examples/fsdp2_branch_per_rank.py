"""FSDP2 (`fully_shard`) on 2 ranks, gloo on CPU: each rank picks its own branch between two
same-sized layers, each sharded on its own (rank 0 runs `left`, rank 1 `right`, from step 1).
Each rank reduce-scatters only the gradient of the branch it ran, so rank 0's reduce-scatter of
`left` meets rank 1's of `right`: the shapes are identical, gloo pairs them silently, each rank's
shard is a sum of two different layers' gradients, and the branch a rank skipped gets no gradient
there while its peer's shard of it does. No replica compares these shards (each rank holds its
own piece), so only which parameters received a gradient tells: `grad_presence` at step 1."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

STEPS = int(os.environ.get("EXAMPLE_STEPS", "3"))


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(16, 32)
        self.left = nn.Linear(32, 32)
        self.right = nn.Linear(32, 32)
        self.head = nn.Linear(32, 4)

    def forward(self, x, use_left):
        h = torch.relu(self.trunk(x))
        h = torch.relu(self.left(h) if use_left else self.right(h))
        return self.head(h)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("dp",))
    torch.manual_seed(0)
    model = Branchy()
    for layer in (model.trunk, model.left, model.right, model.head):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        y = torch.randn(8, 4, generator=data)
        # The bug: the branch is chosen from this rank's own state (here its rank; in the field a
        # per-rank routing decision or a data-dependent `if`), not agreed across the shard group.
        nn.functional.mse_loss(model(x, use_left=(rank == 0)), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
