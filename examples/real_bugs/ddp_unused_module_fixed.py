"""Clean control for ddp_unused_module.py: see its docstring for the fix."""
import ddp_unused_module as bug

if __name__ == "__main__":
    bug.main(fixed=True)
