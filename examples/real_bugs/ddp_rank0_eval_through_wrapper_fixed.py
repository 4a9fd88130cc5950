"""Clean control for ddp_rank0_eval_through_wrapper.py: rank 0 validates through `model.module`, so
its forward issues no collective (https://github.com/pytorch/pytorch/issues/54059, the fix its
thread gives)."""
import ddp_rank0_eval_through_wrapper as bug

if __name__ == "__main__":
    bug.main(fixed=True)
