"""Clean control for nan_loss_skip_one_rank.py: the skip decided by all ranks together ("skip_if_any"
of Lightning PR 5359, https://github.com/Lightning-AI/pytorch-lightning/issues/5243)."""
import nan_loss_skip_one_rank as bug

if __name__ == "__main__":
    bug.main(fixed=True)
