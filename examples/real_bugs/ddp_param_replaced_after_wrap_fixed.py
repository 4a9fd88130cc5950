"""Clean control for ddp_param_replaced_after_wrap.py: the head replaced before the model is wrapped,
as the maintainers advise in https://github.com/pytorch/pytorch/issues/12603."""
import ddp_param_replaced_after_wrap as bug

if __name__ == "__main__":
    bug.main(fixed=True)
