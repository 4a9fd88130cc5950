"""Clean control for resume_optimizer_rank0.py: every rank loads the checkpoint, the fix of
https://github.com/vllm-project/speculators/pull/926."""
import resume_optimizer_rank0 as bug

if __name__ == "__main__":
    bug.main(fixed=True)
