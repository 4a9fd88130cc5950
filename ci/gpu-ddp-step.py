"""The probe's per-step cost on the GPU (ci/gpu-checks.sh, check `cost`): a plain PyTorch DDP
program on CUDA and NCCL, one rank per GPU, that trains an MLP of about 10M parameters (the size
bench/probe_overhead.py uses on the CPU) for WARMUP + STEPS steps with AdamW and times each
training step (zero_grad, forward, backward, optimizer step) between two device
synchronizations, so that the step's kernels are inside its time. ci/gpu-checks.sh runs it bare
under torchrun and under `lockstep exec` (the probe records every step), alternating, and the
ratio of the medians is what the probe costs a CUDA DDP step. Rank 0 prints one line:
`ddp-step {"step_s": <median>, "steps": N, "world_size": W, "parameters": P}`."""
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("DDP_STEP_STEPS", "40"))
WARMUP = int(os.environ.get("DDP_STEP_WARMUP", "5"))
WIDTH = int(os.environ.get("DDP_STEP_WIDTH", "1120"))
BATCH = int(os.environ.get("DDP_STEP_BATCH", "256"))


def main():
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, 10)).to(device)
    ddp = DDP(model, device_ids=[local])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    data = torch.Generator(device=device).manual_seed(100 + dist.get_rank())
    times = []
    for step in range(WARMUP + STEPS):
        x = torch.randn(BATCH, WIDTH, device=device, generator=data)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        optimizer.zero_grad()
        ddp(x).square().mean().backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= WARMUP:
            times.append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        print("ddp-step " + json.dumps({"step_s": statistics.median(times), "steps": len(times),
                                        "world_size": dist.get_world_size(),
                                        "parameters": sum(p.numel() for p in model.parameters())}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
