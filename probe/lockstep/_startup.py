"""The hook that attaches the probe when a program imports torch (LOCKSTEP_PROBE=1). Installed at
interpreter start by one of two roads: the build's sitecustomize.py (`lockstep exec` puts
<build>/python first on PYTHONPATH), or the `lockstep_probe.pth` file that `pip install` of the
probe's package puts into site-packages. Both may run in one interpreter (exec of a program whose
environment has the package installed): the hook is installed once.

A lookup of torch is not an import of it: transformers asks `importlib.util.find_spec("torch")`
long before anything imports torch, and throws the spec away.
So the hook stays on `sys.meta_path` through any number of lookups, hands out a spec whose loader
attaches the probe once the torch package has executed, and removes itself only then (issue 48).
"""

import atexit
import importlib.abc
import sys
import threading


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds `torch` like the other finders, then patches it once its import has finished."""

    def __init__(self):
        # A finder after this one may itself ask importlib for torch's spec (which would come back
        # here): that inner lookup is answered by the others alone, per thread.
        self._looking = threading.local()

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or getattr(self._looking, "on", False):
            return None
        self._looking.on = True
        try:
            spec = _find_with_the_others(self, name, path, target)
        finally:
            self._looking.on = False
        if spec is None or spec.loader is None:
            return spec
        # Every lookup gets a loader of its own that attaches after executing torch; a spec the
        # caller throws away takes its loader with it and leaves this hook in place.
        spec.loader = _attaching_loader(self, spec.loader)
        return spec


def _find_with_the_others(hook, name, path, target):
    """torch's spec as the import system would find it without this hook: the finders after it on
    sys.meta_path, in order (PathFinder, or an editable install's finder)."""
    for finder in list(sys.meta_path):
        if finder is hook or isinstance(finder, _AfterTorchImport):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(name, path, target)
        if spec is not None:
            return spec
    return None


class _Loader(importlib.abc.Loader):
    """torch's own loader, with the probe attached after `exec_module`. Everything else (get_data,
    get_resource_reader, is_package, ...: importlib.resources and inspect use them through
    `torch.__loader__`) is the wrapped loader's."""

    def __init__(self, hook, loader):
        self._hook = hook
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        self._loader.exec_module(module)  # an import that fails leaves the hook for the retry
        _torch_executed(self._hook, module)


def _attaching_loader(hook, loader):
    return loader if isinstance(loader, _Loader) else _Loader(hook, loader)


_removing = threading.Lock()


def _torch_executed(hook, torch):
    """torch has run its package body (in whichever thread imported it): the hook has done its work."""
    with _removing:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
    _attach(torch)


def _attach(torch):
    try:
        from lockstep import _auto

        _auto.install(torch)
    except Exception as e:  # noqa: BLE001 -- a broken probe must not break the program
        sys.stderr.write("lockstep probe: not attached: %s: %s\n" % (type(e).__name__, e))


def _say_if_torch_slipped_past(hook):
    """At exit: torch imported while the hook was still waiting for it means some loader bypassed
    the import system's finders; say so rather than leave `lockstep exec` to guess at a signal."""
    if hook in sys.meta_path and "torch" in sys.modules:
        sys.stderr.write("lockstep probe: not attached: torch was imported without passing through the probe's "
                         "import hook (a custom loader?), so it was not instrumented; the explicit API (lockstep.probe.attach) still works\n")
        sys.stderr.flush()


def install():
    """Attaches when torch is imported (now, if it already is). A second call does nothing."""
    if any(isinstance(f, _AfterTorchImport) for f in sys.meta_path):
        return
    if "torch" in sys.modules:
        _attach(sys.modules["torch"])  # _auto.install is itself idempotent
        return
    hook = _AfterTorchImport()
    sys.meta_path.insert(0, hook)
    atexit.register(_say_if_torch_slipped_past, hook)
