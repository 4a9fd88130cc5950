"""Where in the program a call came from: a short stack of the program's own frames.

Two users: a discovery record's `where` (probe.record_discovery), and a collective's: the probe
wraps torch.distributed's collective functions (install, from _auto.py) so that each collective
the program calls carries, in its begin record, the line that called it. When ranks part ways
(`collective_order`: rank 0 broadcasts where the others wait in a barrier), the finding then says
which line of the program each side was at, also when the collective came from inside torch
(DDP's buffer broadcast in a forward only rank 0 ran).

A frame is the program's unless its file is torch's, another installed package's (a
site-packages or dist-packages folder: Lightning, DeepSpeed), the probe's, or the standard
library's. A collective's site names the program's innermost frames and, first, the library frame
that made the call where a library made it: under Lightning, `self.log(..., sync_dist=True)`'s
line in the user's module, not only Lightning's own. A site is computed once per distinct stack
and kept: a training loop calls the same few sites every step, and a frame walk
with dictionary lookups is what each call costs.
"""

import functools
import os
import sys
import threading

_PROGRAM, _TORCH, _LIBRARY, _SKIPPED = 0, 1, 2, 3
_PACKAGES = ("site-packages" + os.sep, "dist-packages" + os.sep)
_KINDS = {}            # co_filename -> kind
_TORCH_DIR = None      # torch's package folder, with a trailing separator
_SKIPPED_DIRS = None   # the probe's and the standard library's folders
_SITES = {}            # a collective's stack key -> its text
_MAX_SITES = 4096      # a program that makes stacks without end gets its cache cleared
_FRAMES = 3            # program frames in a site
_tls = threading.local()


def _dirs():
    global _TORCH_DIR, _SKIPPED_DIRS
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        _TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    _SKIPPED_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep, stdlib)


def _kind(filename):
    kind = _KINDS.get(filename)
    if kind is not None:
        return kind
    if _SKIPPED_DIRS is None or _TORCH_DIR is None:
        _dirs()
    path = os.path.abspath(filename)
    if _TORCH_DIR is not None and path.startswith(_TORCH_DIR):
        kind = _TORCH
    elif path.startswith(_SKIPPED_DIRS[0]):
        kind = _SKIPPED
    elif any(p in path for p in _PACKAGES):
        kind = _LIBRARY  # before the standard library: a venv's or conda's packages may lie in its folder
    elif path.startswith(_SKIPPED_DIRS[1]) or filename.startswith("<frozen "):
        kind = _SKIPPED
    else:
        kind = _PROGRAM
    _KINDS[filename] = kind
    return kind


def _frame_text(code, line):
    return "%s:%d in %s" % (os.path.basename(code.co_filename), line, code.co_name)


def program_stack(limit=_FRAMES, depth=1):
    """The innermost `limit` frames of the program, from the caller's frame `depth` levels up,
    innermost first: "model.py:41 in forward < train.py:80 in main"."""
    frames = []
    f = sys._getframe(depth + 1)
    while f is not None and len(frames) < limit:
        if _kind(f.f_code.co_filename) in (_PROGRAM, _LIBRARY):
            frames.append(_frame_text(f.f_code, f.f_lineno))
        f = f.f_back
    return " < ".join(frames)


def _caller_text(code, line):
    """A library frame that made a call: "torch nn/parallel/distributed.py:2172 in
    _distributed_broadcast_coalesced", "lightning/pytorch/strategies/ddp.py:367 in reduce"."""
    path = os.path.abspath(code.co_filename)
    if _TORCH_DIR is not None and path.startswith(_TORCH_DIR):
        where = "torch " + path[len(_TORCH_DIR):]
    else:
        cut = max(path.rfind(p) + len(p) if p in path else -1 for p in _PACKAGES)
        where = path[cut:] if cut > 0 else os.path.basename(path)
    return "%s:%d in %s" % (where, line, code.co_name)


def collective_site(depth=1):
    """Where the collective being called was called from, from the caller's frame `depth` levels
    up: the program's innermost frames and, first, when a library made the call (DDP's forward,
    Lightning's log), the library frame that did: "torch nn/parallel/distributed.py:2172 in
    _distributed_broadcast_coalesced < train.py:24 in main". A stack without a frame of the
    program (all of it installed packages): its innermost library frames."""
    f = sys._getframe(depth + 1)
    caller = None  # the library frame that made the call, when a library did
    program = []   # the program's frames: code, line, code, line, ...
    outside = []   # the innermost library frames, for a stack without the program's
    while f is not None and len(program) < 2 * _FRAMES:
        code = f.f_code
        kind = _KINDS.get(code.co_filename)
        if kind is None:
            kind = _kind(code.co_filename)
        if kind == _PROGRAM:
            program += (code, f.f_lineno)
        elif kind != _SKIPPED:
            if caller is None and not program:
                caller = (code, f.f_lineno)
            if len(outside) < 2 * _FRAMES:
                outside += (code, f.f_lineno)
        f = f.f_back
    key = (caller, *program) if program else (None, *outside)
    text = _SITES.get(key)
    if text is None:
        if program:
            frames = [_frame_text(key[i], key[i + 1]) for i in range(1, len(key), 2)]
            if caller is not None:
                frames.insert(0, _caller_text(*caller))
        else:
            frames = [_caller_text(key[i], key[i + 1]) for i in range(1, len(key), 2)]
        text = " < ".join(frames)
        if len(_SITES) >= _MAX_SITES:
            _SITES.clear()
        _SITES[key] = text
    return text


# The collective functions of torch.distributed a program or a library calls from Python, and
# DDP's parameter and buffer broadcast. Collectives issued from C++ (DDP's gradient buckets,
# functional collectives) pass no Python frame of their own and carry no site.
COLLECTIVES = (
    "all_reduce", "all_reduce_coalesced", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "_all_gather_base", "all_gather_coalesced", "all_gather_object", "gather", "gather_object", "scatter",
    "scatter_object_list", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "broadcast_object_list", "_broadcast_coalesced",
)


def wrap_collective(original, recording, find_site=collective_site):
    """`original` with its site (`find_site()`) handed to the probe's compiled part around the
    call, while `recording()` returns that part (a trace is open): the recording backend writes
    the site into the collective's begin record. A collective function that calls another
    (broadcast_object_list calls broadcast) keeps the outer call's site, the program's. Finding
    the site never fails the call."""

    @functools.wraps(original)
    def collective(*args, **kwargs):
        if getattr(_tls, "inside", False):
            return original(*args, **kwargs)
        try:
            ext = recording()
            if ext is not None:
                ext.set_collective_site(find_site())
        except Exception:  # noqa: BLE001 -- the program's call goes on without a site
            ext = None
        if ext is None:
            return original(*args, **kwargs)
        _tls.inside = True
        try:
            return original(*args, **kwargs)
        finally:
            _tls.inside = False
            ext.set_collective_site("")

    return collective
