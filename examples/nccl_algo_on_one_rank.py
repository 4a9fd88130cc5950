"""One rank runs with another NCCL algorithm than the others: a node whose environment (a module
file, a job script) sets NCCL_ALGO=Tree where the rest use Ring. Nothing fails at once; the sums
are taken in another order on that rank, and on a real GPU cluster such mismatches hang or drift.
The variable is set before torch is imported, as an environment would set it; lockstep's
`config_agreement` reads every rank's trace header and names rank 2. (The run itself is on gloo,
which ignores the variable, so the example runs anywhere.)"""
import os

if os.environ.get("RANK") == "2":
    os.environ["NCCL_ALGO"] = "Tree"
else:
    os.environ["NCCL_ALGO"] = "Ring"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(3):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(torch.randn(8, 16, generator=data)), torch.zeros(8, 4))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
