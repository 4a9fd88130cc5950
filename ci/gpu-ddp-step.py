"""The probe's per-step cost on the GPU (ci/gpu-checks.sh, check `cost`): a plain PyTorch DDP
program on CUDA and NCCL, one rank per GPU, that trains an MLP of about 10M parameters (the size
bench/probe_overhead.py uses on the CPU) for WARMUP + STEPS steps with AdamW and times each
training step (zero_grad, forward, backward, optimizer step) between two device
synchronizations, so that the step's kernels are inside its time. ci/gpu-checks.sh runs it bare
under torchrun and under `lockstep exec` (the probe records every step), alternating, and the
ratio of the medians is what the probe costs a CUDA DDP step. Then STEPS more steps back to back,
with one synchronization before and one after (`in_a_row_s`: that time over STEPS): a training
loop as it runs between two loggings, the host free to run ahead of the device, where work the
probe defers to another stream (LOCKSTEP_ASYNC_CAPTURE=1) can overlap the next steps, which a step
timed between two synchronizations cannot show. Rank 0 prints one line:
`ddp-step {"step_s": <median>, "in_a_row_s": <mean>, "steps": N, "world_size": W, "parameters": P}`.

DDP_STEP_MODEL=gpt trains a realistic model instead (issue 47's ">= 300M parameters, a step of
>= 100 ms"): a GPT-like stack of DDP_STEP_LAYERS (24) pre-norm transformer layers of width
DDP_STEP_WIDTH (1024; 16 heads, feed-forward 4x), a DDP_STEP_VOCAB (32768) token embedding and an
untied output layer, about 370M parameters, on DDP_STEP_BATCH (8) sequences of DDP_STEP_SEQ (512)
random tokens per rank, cross-entropy against random targets.

With DDP_STEP_PROFILE=PATH, PROFILE_STEPS (5) more steps run after the timed ones under the torch
profiler (CPU and CUDA activities), each inside a `profile.step` range, and rank 0 writes the
Chrome trace to PATH: the cost check profiles the program bare and under the probe, and
ci/gpu-profile-breakdown.py says where the difference goes. The timed steps are not profiled.
DDP_STEP_DEVICE=cpu runs the same program on the CPU over gloo (the CPU test of this script and of
the breakdown, tests/ci_files_test.cc)."""
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
PROFILE_STEPS = int(os.environ.get("DDP_STEP_PROFILE_STEPS", "5"))
MODEL = os.environ.get("DDP_STEP_MODEL", "mlp")
GPT = MODEL == "gpt"
WIDTH = int(os.environ.get("DDP_STEP_WIDTH", "1024" if GPT else "1120"))
BATCH = int(os.environ.get("DDP_STEP_BATCH", "8" if GPT else "256"))
LAYERS = int(os.environ.get("DDP_STEP_LAYERS", "24"))
SEQ = int(os.environ.get("DDP_STEP_SEQ", "512"))
VOCAB = int(os.environ.get("DDP_STEP_VOCAB", "32768"))


class Gpt(nn.Module):
    """Token embedding, LAYERS pre-norm transformer layers, a final norm and the output layer."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, nhead=max(1, WIDTH // 64), dim_feedforward=4 * WIDTH,
                                           dropout=0.0, batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        return self.head(self.norm(self.layers(self.embed(tokens))))


def main():
    local = int(os.environ["LOCAL_RANK"])
    on_cpu = os.environ.get("DDP_STEP_DEVICE", "cuda") == "cpu"
    if on_cpu:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    else:
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)

    def synchronize():
        if not on_cpu:
            torch.cuda.synchronize()

    torch.manual_seed(0)
    if GPT:
        model = Gpt().to(device)
    else:
        layers = []
        for _ in range(8):
            layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(WIDTH, 10)).to(device)
    ddp = DDP(model, device_ids=None if on_cpu else [local])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    data = torch.Generator(device=device).manual_seed(100 + dist.get_rank())
    times = []

    def batch():
        if GPT:
            return torch.randint(VOCAB, (2, BATCH, SEQ), device=device, generator=data)
        return torch.randn(BATCH, WIDTH, device=device, generator=data)

    def step(x):
        optimizer.zero_grad()
        if GPT:
            logits = ddp(x[0])
            nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[1].reshape(-1)).backward()
        else:
            ddp(x).square().mean().backward()
        optimizer.step()

    def train_step():
        x = batch()
        synchronize()
        t0 = time.perf_counter()
        step(x)
        synchronize()
        return time.perf_counter() - t0

    for i in range(WARMUP + STEPS):
        seconds = train_step()
        if i >= WARMUP:
            times.append(seconds)
    synchronize()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        step(batch())
    synchronize()
    in_a_row = (time.perf_counter() - t0) / STEPS
    profile_to = os.environ.get("DDP_STEP_PROFILE")
    if profile_to:
        from torch.profiler import ProfilerActivity, profile, record_function

        activities = [ProfilerActivity.CPU] + ([] if on_cpu else [ProfilerActivity.CUDA])
        with profile(activities=activities) as prof:
            for _ in range(PROFILE_STEPS):
                with record_function("profile.step"):
                    train_step()
        if dist.get_rank() == 0:
            prof.export_chrome_trace(profile_to)
            # The export says nothing when it cannot write (a folder missing): the check must know.
            if not os.path.isfile(profile_to):
                raise SystemExit(f"ddp-step: the profile was not written to {profile_to}")
    if dist.get_rank() == 0:
        print("ddp-step " + json.dumps({"step_s": statistics.median(times), "in_a_row_s": in_a_row, "steps": len(times),
                                        "world_size": dist.get_world_size(),
                                        "parameters": sum(p.numel() for p in model.parameters())}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
