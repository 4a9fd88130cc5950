"""BLOOM's layer norms drift apart across tensor-parallel ranks: the random state differs per rank.

Source: https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/271 ("Sync layer norm"; the
reproduction is PR 270, "Script to reproduce diverging layer_norm weights", and the root cause PR 276,
"Make dataloader use another random generator").
Original bug: during BLOOM-176B pre-training the layer-norm weights, which every tensor-parallel rank
holds whole and updates from its own (supposedly identical) gradient, were found to differ across
the TP ranks (the checkpoints disagreed). Root cause (PR 276): only TP rank 0 built the data loader,
whose iterator draws its base seed from the default torch generator, so the TP ranks' random
states, and with them their dropout masks, differed; the replicated layer norm after the dropout then
got different gradients on each TP rank.
This program: 2 ranks, one TP group over a DeviceMesh ("tp"); TP rank 0 iterates a shuffled
DataLoader (one batch an epoch) and broadcasts the batch, as Megatron's `broadcast_data` does;
embedding, dropout and LayerNorm are replicated (plain tensors), the MLP is Colwise/Rowwise. The fix
(`bloom_tp_layernorm_drift_fixed.py`) gives the DataLoader its own generator (PR 276). Onset: step 1,
both TP ranks (a group of two: nothing says which one is right).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.utils.data import DataLoader, TensorDataset

STEPS = 4
VOCAB, DIM, SEQ, BATCH = 64, 16, 6, 8


class Block(nn.Module):
    def __init__(self, with_norm):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.drop = nn.Dropout(0.2)
        self.norm = nn.LayerNorm(DIM) if with_norm else nn.Identity()
        self.up = nn.Linear(DIM, 4 * DIM, bias=False)
        self.down = nn.Linear(4 * DIM, DIM, bias=False)

    def forward(self, tokens):
        return self.down(torch.relu(self.up(self.norm(self.drop(self.embed(tokens))))))


def train(fixed, with_norm):
    """The shared loop of this program and of tp_dropout_rng_rank0.py (the same bug with nothing
    trained that is replicated: no layer norm, the embedding frozen)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
    torch.manual_seed(1234)  # the same seed on every TP rank, as Megatron sets it
    model = parallelize_module(Block(with_norm), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    model.embed.weight.requires_grad_(with_norm)  # without the norm: a frozen (pretrained) embedding
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    targets = torch.randn(VOCAB, DIM, generator=torch.Generator().manual_seed(5))
    loader = None
    if rank == 0:  # only TP rank 0 reads data
        dataset = TensorDataset(torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(9)))
        own = torch.Generator().manual_seed(4321) if fixed else None
        loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, generator=own)
    for _ in range(STEPS):
        tokens = torch.empty(BATCH, SEQ, dtype=torch.long)
        if loader is not None:
            tokens = next(iter(loader))[0]  # a new epoch: its iterator draws seeds from `generator`
        dist.broadcast(tokens, src=0)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(tokens), targets[tokens]).backward()
        optimizer.step()
    dist.destroy_process_group()


def main(fixed=False):
    train(fixed, with_norm=True)


if __name__ == "__main__":
    main()
