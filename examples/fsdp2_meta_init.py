"""FSDP2 the way pytorch/examples' distributed/FSDP2/example.py trains (re-created here, on CPU
with gloo, 2 ranks): a small transformer built on the meta device, `fully_shard` on every layer
and on the root, `to_empty()` and then every module's own `reset_parameters()` (the initialization
the upstream example leaves out for its layers, whose weights then hold whatever memory
to_empty() gave them: NaN losses, which lockstep's `finite` names), Adam, `clip_grad_norm_`.
On 2 ranks every parameter, gradient and Adam moment is a shard no other rank holds: there is no
replicated parameter to compare, and lockstep's pass says so ("no parameter had a replica to
compare") instead of a bare pass. No finding."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

STEPS = int(os.environ.get("EXAMPLE_STEPS", "5"))
VOCAB, DIM, LAYERS, SEQ, BATCH = 128, 32, 2, 16, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm(x))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.output = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.output(x)


def initialize(model):
    """Every module's own initialization, after to_empty(): the embeddings, each layer's norms,
    attention and MLP, and the output. (nn.MultiheadAttention keeps its own _reset_parameters.)"""
    torch.manual_seed(0)  # the same full tensors on every rank, before each keeps its shard
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
        elif isinstance(module, nn.MultiheadAttention):
            module._reset_parameters()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with torch.device("meta"):
        model = Transformer()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    model.to_empty(device="cpu")
    with torch.no_grad():
        initialize(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=data)
        loss = model(tokens).float().logsumexp(-1).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
