"""Clean control for early_stop_one_rank.py: the stop decision all-reduced, so every rank stops at the
same step (https://github.com/Lightning-AI/pytorch-lightning/issues/379, fixed in Lightning PR 2467)."""
import early_stop_one_rank as bug

if __name__ == "__main__":
    bug.main(fixed=True)
