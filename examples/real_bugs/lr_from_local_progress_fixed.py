"""Clean control for lr_from_local_progress.py: see its docstring for the fix."""
import lr_from_local_progress as bug

if __name__ == "__main__":
    bug.main(fixed=True)
