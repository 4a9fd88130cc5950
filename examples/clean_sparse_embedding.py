"""nn.Embedding(sparse=True) under DDP with SGD: its gradient is a sparse tensor (all-reduced by
allreduce_sparse). The probe digests it as its dense values: a clean run, no finding (it was a
probe internal error)."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 8, sparse=True)
        self.head = nn.Linear(8, 1)

    def forward(self, ids):
        return self.head(self.embedding(ids).mean(dim=1))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(Model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(10 + rank)
    for _ in range(3):
        optimizer.zero_grad()
        ids = torch.randint(0, 50, (4, 6), generator=data)
        loss = model(ids).pow(2).mean()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
