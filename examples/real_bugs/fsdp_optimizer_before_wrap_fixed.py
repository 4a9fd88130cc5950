"""Clean control for fsdp_optimizer_before_wrap.py: see its docstring for the fix."""
import fsdp_optimizer_before_wrap as bug

if __name__ == "__main__":
    bug.main(fixed=True)
