"""Tensor-parallel ranks fed different inputs: dropout masks differ because only TP rank 0 drew
random numbers for its data loader.

Source: https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/276 (Megatron-DeepSpeed; "I
was able to reproduce the discrepancy in torch_rng_state across tp ranks, and this fixed it").
Original bug: the data-loader iterator, built on TP rank 0 only, consumed a draw of the default torch
generator, so the TP ranks' random states differed and the dropout that is supposed to be identical
on every TP rank (it acts on the replicated input of a column-parallel layer) used different masks.
Each TP rank then multiplied its weight shard by a different input.
This program: bloom_tp_layernorm_drift.py's loop with nothing replicated left to train: a frozen
(pretrained) embedding, the dropout, then the bias-free Colwise/Rowwise MLP, on 2 ranks. The
row-parallel all-reduce makes the output identical on both ranks and the frozen embedding never
changes, so nothing that replica digests compare differs, yet every step trains the weight shards on
inputs that disagree. What a check must compare is the replicated input of the TP region (DTensor
`Replicate` inputs across the TP group). Onset: step 1, both TP ranks.
"""
import bloom_tp_layernorm_drift as shared


def main(fixed=False):
    shared.train(fixed=fixed, with_norm=False)


if __name__ == "__main__":
    main()
