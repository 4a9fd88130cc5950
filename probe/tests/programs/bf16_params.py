"""A model kept in bfloat16 (parameters, gradients and Adam's state), as mixed-precision programs
keep theirs, trained under DDP: nothing is wrong, so no finding. The probe sums the 16-bit norms
with the digests (since 2026-11-29), so with LOCKSTEP_ASYNC_CAPTURE these lists are deferred as
float32 ones are (probe_catalog_test's DeferredCaptureRecordsWhatTheSynchronousOneDoes*).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4), nn.LayerNorm(4)).to(torch.bfloat16)
    ddp = DDP(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(4):
        optimizer.zero_grad()
        x = torch.randn(8, 8, generator=data).to(torch.bfloat16)
        nn.functional.mse_loss(ddp(x).float(), torch.zeros(8, 4)).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
