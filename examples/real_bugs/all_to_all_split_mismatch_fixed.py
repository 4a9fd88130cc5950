"""Clean control for all_to_all_split_mismatch.py: see its docstring for the fix."""
import all_to_all_split_mismatch as bug

if __name__ == "__main__":
    bug.main(fixed=True)
