"""accelerate and lightning imported before the program touches torch. Both import torch
themselves at once (no find_spec lookup first), so this order worked before issue 48 too: it
guards the hook against breaking the import made from inside a framework. See
import_order_train.py for the loop and its bug switch."""
import os
import sys

import accelerate  # noqa: F401
import lightning  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_order_train import train  # noqa: E402

if __name__ == "__main__":
    train()
