"""Clean control for nanogpt_sync_flag_after_forward.py: the flag set before the forward pass, the
fix of https://github.com/karpathy/build-nanogpt/pull/30 (and what nanoGPT's train.py does)."""
import nanogpt_sync_flag_after_forward as bug

if __name__ == "__main__":
    bug.main(fixed=True)
