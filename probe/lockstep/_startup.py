"""The hook that attaches the probe when a program imports torch (LOCKSTEP_PROBE=1). Installed at
interpreter start by one of two roads: the build's sitecustomize.py (`lockstep exec` puts
<build>/python first on PYTHONPATH), or the `lockstep_probe.pth` file that `pip install` of the
probe's package puts into site-packages. Both may run in one interpreter (exec of a program whose
environment has the package installed): the hook is installed once.
"""

import importlib.abc
import importlib.machinery
import sys


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
            _attach(module)

        spec.loader.exec_module = exec_module
        return spec


def _attach(torch):
    try:
        from lockstep import _auto

        _auto.install(torch)
    except Exception as e:  # noqa: BLE001 -- a broken probe must not break the program
        sys.stderr.write("lockstep probe: not attached: %s: %s\n" % (type(e).__name__, e))


def install():
    """Attaches when torch is imported (now, if it already is). A second call does nothing."""
    if any(isinstance(f, _AfterTorchImport) for f in sys.meta_path):
        return
    if "torch" in sys.modules:
        _attach(sys.modules["torch"])  # _auto.install is itself idempotent
        return
    sys.meta_path.insert(0, _AfterTorchImport())
