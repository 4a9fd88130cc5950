"""What the probe counts as a step's training forward passes (trace 2.5 `forwards`): every rank
accumulates two micro-batches a step under DDP (the first under no_sync), so each record says 2;
rank 0 alone also runs forwards that train nothing after each optimizer step (one under
torch.no_grad(), one under torch.inference_mode()), which are not counted, so the ranks' counts
agree and `forward_passes` stays quiet. Step 0 (before any update) has no count.

Each rank also prints each step's loss as the trace must hold it: its micro-batches' losses added
in the order of their backward calls ("step-loss <step> <float.hex>"), for the test to compare.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
MICRO_BATCHES = 2


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp = DDP(nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(700 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        total = None
        for micro in range(MICRO_BATCHES):
            x, y = torch.randn(8, 6, generator=data), torch.randn(8, 1, generator=data)
            if micro < MICRO_BATCHES - 1:
                with ddp.no_sync():
                    loss = nn.functional.mse_loss(ddp(x), y) / MICRO_BATCHES
                    loss.backward()
            else:
                loss = nn.functional.mse_loss(ddp(x), y) / MICRO_BATCHES
                loss.backward()
            total = float(loss) if total is None else total + float(loss)
        print("step-loss %d %s" % (step, total.hex()), flush=True)
        optimizer.step()
        if rank == 0:
            probe = torch.randn(4, 6, generator=data)
            with torch.no_grad():
                ddp(probe)
            with torch.inference_mode():
                ddp(probe)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
