"""torch imported first from a thread other than the main one (a data-loading or warm-up thread),
after a find_spec lookup on the main thread. See import_order_train.py for the loop and its bug
switch."""
import importlib.util
import os
import sys
import threading

importlib.util.find_spec("torch")
imported = threading.Thread(target=lambda: __import__("torch"))
imported.start()
imported.join()
if "torch" not in sys.modules:
    sys.exit("the thread did not import torch")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_order_train import train  # noqa: E402

if __name__ == "__main__":
    train()
