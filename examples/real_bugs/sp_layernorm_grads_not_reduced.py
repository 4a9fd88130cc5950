"""Sequence parallelism without the all-reduce of the layer norm's gradients over the TP group: the
norm's weights, replicated on every TP rank, drift apart.

Source: https://github.com/NVIDIA/Megatron-LM/issues/1446 (Megatron-LM; "final_layernorm gradient
mismatch when TP+SP enabled"; the same gap in gpt-neox's first SP attempt,
https://github.com/EleutherAI/gpt-neox/pull/1257: "convergence is very poor because the grads of the
LNs are not synchronized over TP ranks").
Original bug: with `--tensor-model-parallel-size > 1 --sequence-parallel`, each TP rank runs the layer
norm on its own slice of the sequence, so the norm's weight gradient is a partial sum; Megatron must
all-reduce it over the TP group (`allreduce_layernorm_grads`). In the report the `main_grad` of
`final_layernorm` differed on the 4 TP ranks before `optimizer.step()`; when the all-reduce is missed
the replicated weights stop being replicas.
This program: a hand-written Megatron-style block on 2 TP ranks: a LayerNorm on the rank's half of
the sequence (replicated weight), an all-gather of the sequence (reduce-scatter in backward), then a
projection every rank holds whole (it stands in for the column-parallel linear, whose plain-tensor
shards a checker could not tell from diverged replicas); every rank computes the same loss on the
gathered sequence. The bug skips the TP all-reduce of the norm's gradients; the fix
(`sp_layernorm_grads_not_reduced_fixed.py`) makes it. Onset: step 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 4
SEQ, HIDDEN, OUT = 8, 6, 4


class _GatherSeq(torch.autograd.Function):
    """All-gather along the sequence in forward; the matching reduce-scatter in backward."""

    @staticmethod
    def forward(ctx, x):
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts, dim=0)

    @staticmethod
    def backward(ctx, grad):
        chunks = list(grad.contiguous().chunk(dist.get_world_size(), dim=0))
        out = torch.empty_like(chunks[0])
        dist.reduce_scatter(out, [c.contiguous() for c in chunks])
        return out


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    norm = nn.LayerNorm(HIDDEN)  # replicated on every TP rank
    proj = nn.Linear(HIDDEN, OUT, bias=False)  # replicated: same input (gathered), same gradient
    optimizer = torch.optim.SGD(list(norm.parameters()) + list(proj.parameters()), lr=0.1)
    data = torch.Generator().manual_seed(1900)  # the same batch on every TP rank
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(SEQ, HIDDEN, generator=data) * 2 + 1
        target = torch.randn(SEQ, OUT, generator=data)
        local = x.chunk(world, dim=0)[rank]  # sequence parallel: this rank's tokens
        y = proj(_GatherSeq.apply(norm(local)))
        nn.functional.mse_loss(y, target).backward()
        if fixed:
            # Megatron's allreduce_layernorm_grads: the norm saw only this rank's tokens.
            for p in norm.parameters():
                dist.all_reduce(p.grad)
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
