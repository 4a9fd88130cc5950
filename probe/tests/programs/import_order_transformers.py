"""transformers imported before torch, as any Hugging Face script does: transformers asks
`importlib.util.find_spec("torch")` (and others) before it imports torch. The probe must still
attach when torch is really imported. See import_order_train.py for the loop and its bug switch."""
import os
import sys

import transformers  # noqa: F401 -- first, before anything imports torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_order_train import train  # noqa: E402

if __name__ == "__main__":
    train()
