"""Clean control for ddp_converted_after_wrap.py: the module converted before it is wrapped in DDP
(https://github.com/pytorch/pytorch/issues/104336)."""
import ddp_converted_after_wrap as bug

if __name__ == "__main__":
    bug.main(fixed=True)
