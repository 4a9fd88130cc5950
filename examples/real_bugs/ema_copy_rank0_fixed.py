"""Clean control for ema_copy_rank0.py: the EMA updated on every rank
(https://github.com/lucidrains/ema-pytorch/issues/9)."""
import ema_copy_rank0 as bug

if __name__ == "__main__":
    bug.main(fixed=True)
