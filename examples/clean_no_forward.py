"""A clean program without a module forward: plain tensors with requires_grad, gradients
all-reduced by hand, SGD. Its steps and losses come from backward() and the optimizer step
alone: no finding (the last step's loss was NaN), and every recorded loss is the one of its own
step (they landed one step late). The program checks the second itself at its end, from its
own trace: a wrong loss exits 1, a crash of this rank."""
import json
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    w = torch.randn(8, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([w, b], lr=0.1)
    data = torch.Generator().manual_seed(7)  # the same batches on every rank: the same losses
    losses = []
    for _ in range(5):
        x = torch.randn(16, 8, generator=data)
        optimizer.zero_grad()
        loss = ((x @ w + b) ** 2).mean()
        loss.backward()
        for p in (w, b):
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
        losses.append(loss.item())
    dist.barrier()
    # Steps 1..4 are on disk by now (the last one is written at exit).
    path = os.path.join(os.environ["LOCKSTEP_TRACE_DIR"], "rank-%d.trace" % rank)
    recorded = {}
    # A trace being written ends at its first zero byte (docs/TRACE.md: its writer reserves the
    # file ahead of its records).
    with open(path, "rb") as f:
        data = f.read().split(b"\0", 1)[0].decode()
    for line in data.splitlines():
        if line:
            record = json.loads(line)
            if record.get("type") == "step" and record.get("step", 0) >= 1:
                recorded[record["step"]] = record.get("loss")
    for step in range(1, 5):
        got = recorded.get(step)
        if got is None or abs(float(got) - losses[step - 1]) > 1e-6 * max(1.0, abs(losses[step - 1])):
            print("clean_no_forward.py: step %d recorded loss %r, the program's was %r" % (step, got, losses[step - 1]),
                  file=sys.stderr)
            sys.exit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
