"""Muon's distributed step skips a parameter without a gradient: that rank also skips the all_gather
that every other rank makes for it.

Source: https://github.com/KellerJordan/Muon/issues/37 (Muon; "Multi-GPU Training Hangs When
Skipping Parameters with `p.grad is None`").
Original bug: Muon's distributed step gives parameter `base_i + rank` to each rank, orthogonalizes its
update, then all-gathers the updated parameters of the block. The user added `if p.grad is None:
continue` for parameters that take no part in the loss; it worked on one GPU and hung on several:
the rank whose parameter had no gradient skipped the block's `all_gather`. Upstream Muon now gives
such a parameter a zero gradient instead ("Force synchronization").
This program: Muon's round-robin update with Newton-Schulz orthogonalization (as in the repository)
over four 16x16 weights, one of which (an auxiliary head) is unused in training; gradients averaged
with a hand-written all-reduce over the parameters that have one; 2 ranks. The unused weight falls to
rank 1, which skips the second block's all_gather while rank 0 makes it. The fix
(`muon_skip_none_grad_fixed.py`) is upstream's zero gradient. Onset: step 1, rank 1.
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 3
DIM = 16


def zeropower_via_newtonschulz5(G, steps=5):
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G / (G.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.02, momentum=0.95, fixed=False):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        self.fixed = fixed

    @torch.no_grad()
    def step(self):
        rank, world = dist.get_rank(), dist.get_world_size()
        for group in self.param_groups:
            params = group["params"]
            params_pad = params + [torch.empty_like(params[-1])] * (world - len(params) % world)
            for base_i in range(len(params))[::world]:
                if base_i + rank < len(params):
                    p = params[base_i + rank]
                    if p.grad is None:
                        if not self.fixed:
                            continue  # the change: this rank now skips the all_gather below
                        p.grad = torch.zeros_like(p)  # upstream: force synchronization
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    buf = state["momentum_buffer"]
                    buf.lerp_(p.grad, 1 - group["momentum"])
                    update = zeropower_via_newtonschulz5(p.grad.lerp(buf, group["momentum"]))
                    p.add_(update, alpha=-group["lr"])
                dist.all_gather(params_pad[base_i:base_i + world], params_pad[base_i + rank])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1, self.w2, self.w3 = (nn.Linear(DIM, DIM, bias=False) for _ in range(3))
        self.aux_head = nn.Linear(DIM, DIM, bias=False)  # used only at evaluation

    def forward(self, x):
        return self.w3(torch.relu(self.w2(torch.relu(self.w1(x)))))


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Net()
    optimizer = Muon([model.w1.weight, model.w2.weight, model.w3.weight, model.aux_head.weight], fixed=fixed)
    data = torch.Generator().manual_seed(1800 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x, y = torch.randn(8, DIM, generator=data), torch.randn(8, DIM, generator=data)
        nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
