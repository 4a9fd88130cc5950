"""The probe's lists of tensors are reused from step to step (lockstep/_capture_lists.py): every
change below, made after an optimizer step on one rank, must show in that step's record as a
fresh walk of the models and the optimizer would show it. Under DDP the all-reduced gradients
keep every other tensor equal, so each change is its own finding:
  * step 2, rank 1: a weight's storage replaced (`p.data = ...`): the same Parameter object;
  * step 3, rank 2: a buffer replaced by writing the module's dict directly (as FSDP2 swaps its
    parameters), which no registration hook sees;
  * step 3, every rank: b.weight's gradient dropped before the optimizer's step (Adam skips the
    parameter): step 3's records hold no gradient of it, step 4's hold it again (the gradients
    are read by a native list while the same parameters hold one: probe/gradient_list.h);
  * step 4, rank 0: an Adam moment replaced by a new tensor. The state is captured right after
    the optimizer's step, so the new tensor is first read at step 5;
  * step 5, every rank: a submodule added (`setattr`), initialized alike on ranks 0 and 1 only:
    its weights are in the records from step 5 on (probe_catalog_test reads the traces; the
    replica checker names the first weights that differ, step 2's, only).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 4)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.b(torch.relu(self.a(x))) * self.scale


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Net()
    ddp = DDP(model, broadcast_buffers=False)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, 7):
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(torch.randn(8, 8, generator=data)), torch.zeros(8, 4)).backward()
        if step == 3:
            model.b.weight.grad = None
        optimizer.step()
        with torch.no_grad():
            if step == 2 and rank == 1:
                model.a.weight.data = model.a.weight.data.clone().add_(1e-3)
            if step == 3 and rank == 2:
                model._buffers["scale"] = torch.full((4,), 1.001)
            if step == 4 and rank == 0:
                state = optimizer.state[model.b.bias]
                state["exp_avg"] = state["exp_avg"] + 1e-3
            if step == 5:
                torch.manual_seed(7 if rank < 2 else 8)
                model.extra = nn.Linear(2, 2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
