"""DDP steps with a metric all-reduce each, under the torch profiler: the probe's work to find
where the program called the collective is in a range of its own, `lockstep.probe.collective_site`,
beside the recording backend's `lockstep.probe.collective_record` (what a GPU run's profile
breakdown counts as lockstep's, ci/gpu-profile-breakdown.py). The program checks its own profile
and fails if either is missing. Clean: no finding."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    ddp = DDP(nn.Linear(8, 4))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(10 + dist.get_rank())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            optimizer.zero_grad()
            loss = ddp(torch.randn(6, 8, generator=data)).pow(2).mean()
            loss.backward()
            optimizer.step()
            metric = loss.detach().reshape(1)
            dist.all_reduce(metric)
    names = {e.key for e in prof.key_averages()}
    for wanted in ("lockstep.probe.collective_site", "lockstep.probe.collective_record"):
        if wanted not in names:
            raise SystemExit("no %s range in the profile; lockstep ranges: %s"
                             % (wanted, sorted(n for n in names if n.startswith("lockstep"))))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
