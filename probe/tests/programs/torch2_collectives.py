"""Every way a torch 2.x program issues a collective, each once per step on every rank, beside
DDP: the tensor forms (all_gather_into_tensor, reduce_scatter_tensor), the deprecated
_all_gather_base and _reduce_scatter_base, an object form (broadcast_object_list), and the functional collectives that DTensor and
torch.compile use (torch.distributed._functional_collectives, which reach the backend through
c10d's C++ ops, not through torch.distributed's Python API), their coalesced forms among them. The
optimizer steps through torch.optim's global step hooks, and the program ends with
destroy_process_group. Clean: the probe must record every one of them (the sidecar's
"collectives") and find nothing."""
import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    ddp = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)))
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(10 + rank)
    group = dist.group.WORLD
    for step in range(1, 5):
        optimizer.zero_grad()
        loss = ddp(torch.randn(6, 8, generator=data)).pow(2).mean()
        loss.backward()
        optimizer.step()

        # Metrics over the ranks, in each of torch 2.x's forms; every result is checked, so a
        # forward that lost data would fail the program itself.
        metric = loss.detach().reshape(1)
        gathered = torch.empty(world, dtype=metric.dtype)
        dist.all_gather_into_tensor(gathered, metric)
        scattered = torch.empty(1, dtype=metric.dtype)
        dist.reduce_scatter_tensor(scattered, gathered.clone())
        assert torch.allclose(scattered, world * gathered[rank])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both are deprecated aliases, still used by older code
            legacy = torch.empty(world, dtype=metric.dtype)
            dist._all_gather_base(legacy, metric)
            dist._reduce_scatter_base(torch.empty(1, dtype=metric.dtype), legacy.clone())
        assert torch.equal(legacy, gathered)
        # Functional collectives return AsyncCollectiveTensors; arithmetic waits for them.
        total = funcol.all_reduce(metric.clone(), "sum", group) + 0
        both = funcol.all_gather_tensor(metric.clone(), 0, group) + 0
        part = funcol.reduce_scatter_tensor(gathered.clone(), "sum", 0, group) + 0
        assert torch.allclose(total, gathered.sum().reshape(1))
        assert torch.equal(both, gathered)
        assert torch.allclose(part, world * gathered[rank])
        # Their coalesced forms: one call for a list (c10d's allgather_into_tensor_coalesced and
        # reduce_scatter_tensor_coalesced, which gloo implements; torch.distributed's
        # _coalescing_manager needs a backend with startCoalescing, which gloo is not).
        pair = funcol.all_gather_into_tensor_coalesced([metric.clone(), metric.clone()], group)
        assert all(torch.equal(p + 0, gathered) for p in pair)
        parts = funcol.reduce_scatter_tensor_coalesced([gathered.clone(), gathered.clone()], "sum", [0, 0], group)
        assert all(torch.allclose(p + 0, world * gathered[rank]) for p in parts)
        # An object form: broadcast_object_list calls broadcast twice (the sizes, then the bytes).
        note = [step] if rank == 0 else [None]
        dist.broadcast_object_list(note, src=0)
        assert note[0] == step
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
