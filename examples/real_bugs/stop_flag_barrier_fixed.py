"""Clean control for stop_flag_barrier.py: the stop flag all-reduced, as `reduce_boolean_decision`
does in https://github.com/talmolab/sleap-nn/pull/471."""
import stop_flag_barrier as bug

if __name__ == "__main__":
    bug.main(fixed=True)
