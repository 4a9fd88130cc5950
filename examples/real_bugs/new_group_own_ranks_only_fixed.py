"""Clean control for new_group_own_ranks_only.py: every rank makes every group of the hierarchy, in
one order, and keeps the two it is in, as torch.distributed asks
(https://github.com/pytorch/pytorch/issues/130102)."""
import new_group_own_ranks_only as bug

if __name__ == "__main__":
    bug.main(fixed=True)
