"""`importlib.util.find_spec("torch")` first (the spec thrown away), then `importlib.import_module`
of torch.nn, then `from torch import nn`: the lookup must not use up the probe's import hook. See
import_order_train.py for the loop and its bug switch."""
import importlib
import importlib.util
import os
import sys

if importlib.util.find_spec("torch") is None:
    sys.exit("torch is not installed")
if importlib.util.find_spec("torch") is None:  # twice: a second lookup is no different
    sys.exit("torch is not installed")
importlib.import_module("torch.nn")
from torch import nn  # noqa: E402,F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_order_train import train  # noqa: E402

if __name__ == "__main__":
    train()
