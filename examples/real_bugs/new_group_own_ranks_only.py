"""Each rank makes only the process groups it belongs to: ranks that asked for different groups
meet in one rendezvous, and a hierarchical all-reduce sums over ranks nobody asked for.

Source: https://github.com/pytorch/pytorch/issues/130102 (PyTorch; "Distributed hangs when doing
hierachical communication").
Original bug: on 4 ranks, ranks 0 and 3 call `new_group([0, 3])` and ranks 1 and 2
`new_group([1, 2])`, each only the group it is in, then a barrier on it: "the barrier only
considers the first two processes reaching it but not their ranks", and the run hangs or passes
depending on who arrives first. torch.distributed's documentation asks every rank to enter
`new_group` for every group, members or not, in the same order. The same mistake is behind
pytorch/pytorch#25390 (pairs made per rank from a permutation) and #38375 (each half of 8 GPUs
making its own half's group: "Broken pipe").
This program: data parallelism over 4 ranks laid out as 2 nodes of 2, with a hierarchical gradient
all-reduce, within the node and then across nodes, over groups each rank makes for itself (its
node, and its peers on the other node); then SGD. A group's rendezvous in the store is named by how
many groups the rank made before it: every rank's node group is its first, so the four ranks meet
as one group of two pairs, paired by who comes first. Without lockstep the run fails in a
connection ("Connection closed by peer") or completes with gradients summed over the wrong ranks
and the replicas apart; which one varies from run to run. The fix
(`new_group_own_ranks_only_fixed.py`) makes every group on every rank, in one order. Onset:
start-up (step 0), on every rank.
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 3


def hierarchical_groups(rank, fixed):
    """(the rank's node group, its group across nodes)."""
    if fixed:  # every rank makes every group, in one order, and keeps its own
        nodes = [dist.new_group([0, 1]), dist.new_group([2, 3])]
        peers = [dist.new_group([0, 2]), dist.new_group([1, 3])]
        return nodes[rank // 2], peers[rank % 2]
    node = dist.new_group([0, 1] if rank < 2 else [2, 3])  # the bug: only the groups it is in
    peer = dist.new_group([0, 2] if rank % 2 == 0 else [1, 3])
    return node, peer


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 4, "laid out as 2 nodes of 2 ranks"
    node, peer = hierarchical_groups(rank, fixed)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        optimizer.zero_grad()
        x = torch.randn(8, 16, generator=data)
        nn.functional.mse_loss(model(x), torch.zeros(8, 4)).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, group=node)
            dist.all_reduce(p.grad, group=peer)
            p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
