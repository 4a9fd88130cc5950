"""Ranks a program starts itself with multiprocessing's default start method on Linux (fork), as
a `multiprocessing.Process` subclass with a `run` of its own: each child leaves by os._exit, without
exit handlers, and its own run() bypasses Process.run. Every rank's trace must still end with its
last step and a clean-exit footer (the probe ends it after _bootstrap), and exec judges one world,
spawning 1 (Worker). With SELF_STARTED_RAISE_RANK=r, rank r raises at step 3: a crash of that rank
only (its peer's all-reduce fails after it), though the program exits 0."""
import multiprocessing
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 5
RAISE_RANK = int(os.environ.get("SELF_STARTED_RAISE_RANK", "-1"))


class Worker(multiprocessing.Process):
    def __init__(self, rank, world, port):
        super().__init__()
        self.rank, self.world, self.port = rank, world, port

    def run(self):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % self.port, rank=self.rank,
                                world_size=self.world)
        torch.manual_seed(0)
        model = nn.Linear(8, 4)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(self.rank)
        for step in range(1, STEPS + 1):
            if self.rank == RAISE_RANK and step == 3:
                raise RuntimeError("rank %d: bad batch at step %d" % (self.rank, step))
            optimizer.zero_grad()
            nn.functional.mse_loss(model(torch.randn(4, 8, generator=g)), torch.randn(4, 4, generator=g)).backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= self.world
            optimizer.step()
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    assert multiprocessing.get_start_method() == "fork"
    port = free_port()
    workers = [Worker(r, 2, port) for r in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
