"""Clean control for no_initial_broadcast.py: see its docstring for the fix."""
import no_initial_broadcast as bug

if __name__ == "__main__":
    bug.main(fixed=True)
