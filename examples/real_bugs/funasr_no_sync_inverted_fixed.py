"""Clean control for funasr_no_sync_inverted.py: `(batch_idx + 1) % accum_grad`, the fix of
https://github.com/modelscope/FunASR/pull/3472 (sync on the micro-batch before the optimizer step)."""
import funasr_no_sync_inverted as bug

if __name__ == "__main__":
    bug.main(fixed=True)
