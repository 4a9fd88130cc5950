"""Clean control for hashseed_buffer_order.py: buffers registered in `sorted` order, the fix of
https://github.com/huggingface/transformers/pull/48162 (the same per-rank hash seeds)."""
import os
import sys

if os.environ.get("REAL_BUGS_HASHSEED_SET") != "1":
    os.environ["REAL_BUGS_HASHSEED_SET"] = "1"
    os.environ["PYTHONHASHSEED"] = str((0, 1, 3, 4)[int(os.environ.get("RANK", "0")) % 4])
    os.execv(sys.executable, [sys.executable] + sys.argv)

import hashseed_buffer_order as bug  # noqa: E402

if __name__ == "__main__":
    bug.main(fixed=True)
