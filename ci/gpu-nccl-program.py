"""The NCCL profiler plugin's GPU check (ci/gpu-checks.sh, check nccl_plugin): a plain
torch.distributed program on NCCL, one rank per GPU, that trains a small DDP model for STEPS
steps and after each optimizer step issues ALLREDUCES small all-reduces of its own, timing them
between two device synchronizations. ci/gpu-checks.sh runs it under `lockstep exec` twice,
`--recorders none` and `--recorders nccl`: the second run's traces must hold NCCL's own view
(groups nccl:<hash>) of the all-reduces the probe saw on the default group, each ended, with
every nccl.comm_init at start-up; the ratio of the two timed loops is what the plugin and its
records cost per collective. Rank 0 prints one line: `nccl-check {"allreduce_s": ..., ...}`."""
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("NCCL_CHECK_STEPS", "5"))
ALLREDUCES = int(os.environ.get("NCCL_CHECK_ALLREDUCES", "400"))


def main():
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    # device_id: the communicator is made now, at start-up, not at the first collective.
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).to(device)
    ddp = DDP(model, device_ids=[local])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2)
    data = torch.Generator(device=device).manual_seed(100 + dist.get_rank())
    small = torch.ones(256, device=device)
    timed_s = 0.0
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(32, 64, device=device, generator=data)
        ddp(x).square().mean().backward()
        optimizer.step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ALLREDUCES):
            dist.all_reduce(small)
        torch.cuda.synchronize()
        timed_s += time.perf_counter() - t0
    if dist.get_rank() == 0:
        print("nccl-check " + json.dumps({"allreduce_s": timed_s, "allreduces": STEPS * ALLREDUCES,
                                          "world_size": dist.get_world_size()}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
