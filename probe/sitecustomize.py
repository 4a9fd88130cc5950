"""lockstep's probe, loaded by the interpreter at start when this folder is on PYTHONPATH (as
`lockstep exec` puts it). Does nothing unless LOCKSTEP_PROBE=1; then it patches torch when the
program imports it (lockstep/_startup.py, lockstep/_auto.py). A sitecustomize of the program's own
environment, which this file shadows, is run first, as it would have been. (`pip install` of the
probe's package attaches by a .pth file instead, and installs no sitecustomize: docs/PROBE.md.)
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_shadowed_sitecustomize():
    others = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _run_shadowed_sitecustomize()
finally:
    if os.environ.get("LOCKSTEP_PROBE") == "1":
        from lockstep import _startup

        _startup.install()
