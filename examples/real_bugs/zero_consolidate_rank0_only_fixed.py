"""Clean control for zero_consolidate_rank0_only.py: `consolidate_state_dict(to=0)` on every rank, the
state saved on rank 0 (https://github.com/pytorch/pytorch/pull/60285)."""
import zero_consolidate_rank0_only as bug

if __name__ == "__main__":
    bug.main(fixed=True)
