"""Token dispatch with `all_to_all_single` where a rank assumes the split sizes instead of exchanging
them: the sizes do not match between sender and receiver.

Source: https://github.com/pytorch/pytorch/issues/117486 (PyTorch; "all_to_all_single stuck when use
specials output_split_sizes and input_split_sizes"; the diagnosis there: "split_sizes mismatch on
different ranks").
Original bug: an expert-parallel dispatch called `all_to_all_single` with `input_split_sizes` from its
router and `output_split_sizes` that did not equal what the peers were sending; with NCCL the
collective never completed (the send/recv pairs did not match). The fix in MoE code (Megatron,
torchtitan, DeepSpeed) is a first all-to-all of the counts, so each rank's output splits are the
transpose of the input splits.
This program: 2 ranks, an expert on each (one expert, replicated), a toy router that balances the tokens at step 1 and sends
4 of rank 1's 6 tokens to expert 0 from step 2 on; the bug sizes the receive buffer as if the tokens
were always split evenly, which holds at step 1 only. The fix (`all_to_all_split_mismatch_fixed.py`)
exchanges the counts first. Onset: step 2 (the first unbalanced dispatch); gloo then fails the
collective on rank 1 ("inLengthPerRank[myRank] == outLengthPerRank[myRank]") and rank 0 loses its
peer.
"""
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 3


def main(fixed=False):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    # One expert replicated on both ranks (expert-data parallel: its gradient all-reduced), so a clean
    # run has replicas to compare; the dispatch is the expert-parallel one.
    expert = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(expert.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(2500 + rank)
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        tokens = torch.randn(6, 4, generator=data)
        skewed = rank == 1 and step >= 2
        dest = torch.tensor([0, 0, 0, 0, 1, 1]) if skewed else torch.tensor([0, 1, 0, 1, 0, 1])
        order = torch.argsort(dest, stable=True)
        send_counts = torch.bincount(dest, minlength=world)
        if fixed:
            recv_counts = torch.empty_like(send_counts)
            dist.all_to_all_single(recv_counts, send_counts)
        else:
            recv_counts = torch.full((world,), len(tokens) // world)  # "balanced routing"
        received = torch.empty(int(recv_counts.sum()), 4)
        dist.all_to_all_single(received, tokens[order].contiguous(),
                               output_split_sizes=recv_counts.tolist(), input_split_sizes=send_counts.tolist())
        expert(received).pow(2).mean().backward()
        for p in expert.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
