"""Clean control for fsdp_local_clip_grad_norm.py: see its docstring for the fix."""
import fsdp_local_clip_grad_norm as bug

if __name__ == "__main__":
    bug.main(fixed=True)
