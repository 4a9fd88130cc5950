"""The probe under what real DDP programs do: static_graph, a user's own comm hook (which
replaces DDP's built-in all-reduce), two optimizers stepping different layers, a scheduler.
Clean: no finding, and the hook's all-reduces are recorded at every step."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def averaging_hook(state, bucket):
    # Synchronous, with a future completed here: torch 1.13's `work.get_future().then(python_fn)`
    # leaves a Python callback that a gloo worker thread destroys, taking the GIL, after DDP has
    # moved on; at exit that races the interpreter (SIGABRT) or the Reducer's destructor joining
    # that thread under the GIL (a hang), with or without the probe. Not what this case tests.
    tensor = bucket.buffer().div_(dist.get_world_size())
    dist.all_reduce(tensor)
    done = torch.futures.Future()
    done.set_result(tensor)
    return done


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model, static_graph=True)
    ddp.register_comm_hook(None, averaging_hook)
    first = torch.optim.SGD(model[0].parameters(), lr=0.05, momentum=0.9)
    second = torch.optim.Adam(model[2].parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(second, gamma=0.9)
    data = torch.Generator().manual_seed(100 + rank)
    for step in range(1, 5):
        first.zero_grad()
        second.zero_grad()
        x = torch.randn(8, 16, generator=data)
        nn.functional.mse_loss(ddp(x), torch.zeros(8, 4)).backward()
        first.step()
        second.step()
        scheduler.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
