"""lockstep's probe, loaded by the interpreter at start when this folder is on PYTHONPATH (as
`lockstep exec` puts it). Does nothing unless LOCKSTEP_PROBE=1; then it patches torch when the
program imports it (lockstep/_auto.py). A sitecustomize of the program's own environment, which
this file shadows, is run first, as it would have been.
"""

import importlib.abc
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


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds `torch` like the other finders, then patches it once its import has finished."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            try:
                from lockstep import _auto

                _auto.install(module)
            except Exception as e:  # noqa: BLE001 -- a broken probe must not break the program
                sys.stderr.write("lockstep probe: not attached: %s: %s\n" % (type(e).__name__, e))

        spec.loader.exec_module = exec_module
        return spec


try:
    _run_shadowed_sitecustomize()
finally:
    if os.environ.get("LOCKSTEP_PROBE") == "1":
        sys.meta_path.insert(0, _AfterTorchImport())
