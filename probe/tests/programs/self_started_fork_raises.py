"""self_started_fork.py with rank 1 raising at step 3 (SELF_STARTED_RAISE_RANK)."""
import os
import runpy

os.environ["SELF_STARTED_RAISE_RANK"] = "1"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "self_started_fork.py"), run_name="__main__")
