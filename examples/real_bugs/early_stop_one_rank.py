"""Early stopping decided on each rank's own validation metric: one rank leaves the training loop.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/379 (Lightning; "Early stopping
with ddp bug").
Original bug: with distributed mode ddp, "if the stop condition is met in one or more subprocess but
not in all subprocess, the corresponding subprocess are stop but the others ones are still running
and the training hangs". The callback compared each process's own validation metric with the
threshold; Lightning's fix (PR 2467) all-reduces the decision so that every process stops together.
This program: DDP on 3 ranks, each with its own validation set; a threshold-stopping check (accuracy
>= 0.9, as the issue's ThresholdStopping) after every step. Rank 2 reaches it after step 5, the
others later; ranks 0 and 1 run step 6's gradient all-reduce while rank 2 waits in the barrier
before the model is saved. The fix (`early_stop_one_rank_fixed.py`) all-reduces the stop flag (any
rank stops: all stop), as Lightning does. Onset: step 6 (the step rank 2 never starts), rank 2.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 10
THRESHOLD = 0.9  # validation accuracy


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    centers = torch.randn(3, 4, generator=torch.Generator().manual_seed(3))
    data = torch.Generator().manual_seed(1200 + rank)

    def batch(n):
        y = torch.randint(0, 3, (n,), generator=data)
        return centers[y] + 0.8 * torch.randn(n, 4, generator=data), y

    x_val, y_val = batch(20)  # this rank's own validation set
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = batch(16)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            accuracy = (model.module(x_val).argmax(1) == y_val).float().mean()
        stop = (accuracy >= THRESHOLD).float()
        if fixed:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() > 0:
            print("rank %d stops after step %d (validation accuracy %.2f)" % (rank, _ + 1, accuracy), flush=True)
            break
    dist.barrier()  # every rank, before rank 0 saves the model
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
