"""A stop request seen by rank 0 and "synchronized" with a barrier: the ranks leave the loop at
different steps.

Source: https://github.com/talmolab/sleap-nn/pull/471 (sleap-nn; "Fix TrainingControllerZMQ DDP
stop: use reduce_boolean_decision").
Original bug: a "Stop Early" command arrived (over ZMQ) at rank 0 only, which set
`trainer.should_stop`; the callback then called `trainer.strategy.barrier()`, which "synchronises
execution position across ranks but does not propagate the value": after the barrier rank 0 left
the training loop and the other ranks went on into the next step's collectives, a 30-second NCCL
deadlock. The fix uses `reduce_boolean_decision`.
This program: DDP on 3 ranks; rank 0 receives the stop request after step 2, every rank then calls
`dist.barrier()`; ranks 1 and 2 start step 3 (its gradient all-reduce) while rank 0 waits in the
barrier before the final checkpoint. The fix (`stop_flag_barrier_fixed.py`) all-reduces the flag
(MAX), as `reduce_boolean_decision(all=False)` does. Onset: step 3, rank 0.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
STOP_REQUEST_AFTER = 2


def main(fixed=False):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 2)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(1300 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        x, y = torch.randn(8, 5, generator=data), torch.randn(8, 2, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        should_stop = torch.tensor(float(rank == 0 and step == STOP_REQUEST_AFTER))  # the command reaches rank 0
        if fixed:
            dist.all_reduce(should_stop, op=dist.ReduceOp.MAX)
        else:
            dist.barrier()  # positions synchronized, the flag is not
        if should_stop.item() > 0:
            break
    dist.barrier()  # on_train_end: every rank, before the checkpoint
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
