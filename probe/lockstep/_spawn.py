"""Programs that start their own ranks (issue 48): ``torch.multiprocessing.spawn`` and
``start_processes``, as PyTorch's DDP tutorials do (``mp.spawn(demo_basic, nprocs=2)``), and
``multiprocessing.Process`` started once per rank, as its "Writing Distributed Applications"
tutorial does.

Under ``lockstep exec --ranks 1`` the process lockstep starts is the program's launcher, not a
rank: each call of spawn is one *spawning*, a world of its own. Spawning k (1, 2, ...) gets its own
folder, ``<trace dir>/spawn-<k>/``, made before its processes start: it holds ``spawning.json``
(what was spawned) and the traces its ranks write there (their LOCKSTEP_TRACE_DIR), so a program
that spawns three times leaves three worlds, none overwriting another. ``lockstep exec`` judges
each as a world of the size its ranks declared at init_process_group (harness/runner/judge.cc).
The spawned processes get the environment of a program started as one plain process: lockstep's
RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE (the one launched rank's) are taken out of it.

A world started with ``multiprocessing.Process`` has no one call to patch: each of its ranks
finds out that it is one when it initializes its process group (a process multiprocessing started
from the launched process, declaring a world of several ranks where lockstep launched one). Its
rank 0 then makes the spawning's folder and tells the others through the group's own store
(``self_started_trace_dir``). Such a rank that raises is marked as crashed (multiprocessing
catches the exception and exits 1, and the launched process does not hear of it).

Under ``--ranks N`` with N > 1 every launched copy would spawn a world of its own, all of them on
the program's fixed port: the spawn is refused instead, before any process starts.
``<trace dir>/spawn-refused.json`` says so to lockstep, which reports the run as not checkable
(exit 3) with the truth: run it with --ranks 1.
"""

import datetime
import functools
import json
import os
import sys
import threading

from lockstep import probe

# What the spawned processes must not inherit from lockstep's launch of the program.
_LAUNCHED_RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                            "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID")

_lock = threading.Lock()
_spawnings = 0      # spawnings started by this process
_in_spawn = threading.local()

SPAWNING_ENV = "LOCKSTEP_SPAWNING"  # in a spawned rank: which spawning it belongs to
# The world lockstep launched, which the program cannot change (harness/launcher/launch_spec.h).
_LAUNCHED_WORLD_ENV = "LOCKSTEP_EXPECT_WORLD_SIZE"
# The key under which rank 0 of a world started with multiprocessing.Process tells its peers
# which spawning they are (in their process group's store).
_STORE_KEY = "lockstep/spawning"
_STORE_WAIT_S = 300


def _function_name(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None)
    return name if not module or module in ("__main__", "__mp_main__") else "%s.%s" % (module, name)


def _launched_world():
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def _write_json(path, payload):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f)
        f.write("\n")
    os.replace(tmp, path)


def _refuse(trace_dir, fn, nprocs):
    """A copy of a program launched on several ranks is about to start ranks of its own: stop
    here, before any process starts, and say why to lockstep and to the user."""
    world = _launched_world()
    rank = os.environ.get("RANK", "0")
    message = ("the program starts its own ranks with torch.multiprocessing.spawn (%d processes of %s), and "
               "lockstep started it on %d ranks: each copy would start a world of its own; run it with --ranks 1"
               % (nprocs, _function_name(fn), world))
    try:
        _write_json(os.path.join(trace_dir, "spawn-refused.json"),
                    {"launched_ranks": world, "rank": int(rank) if rank.isdigit() else 0,
                     "function": _function_name(fn), "nprocs": nprocs, "message": message})
    except OSError as e:
        probe._say("cannot write spawn-refused.json: %s" % e)
    probe._say(message)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(3)  # not an exception the program could catch and go on after


def _new_spawning(trace_dir, function, nprocs, start_method):
    """The next spawning's folder, spawn-<k> with the first k not taken (made exclusively: a
    program may start worlds both ways, from several processes), and its spawning.json. Returns
    (k, folder)."""
    k = 1
    while True:
        folder = os.path.join(trace_dir, "spawn-%d" % k)
        try:
            os.mkdir(folder)
            break
        except FileExistsError:
            k += 1
    _write_json(os.path.join(folder, "spawning.json"),
                {"spawning": k, "function": function, "nprocs": nprocs, "start_method": start_method})
    return k, folder


def _start_spawning(trace_dir, fn, nprocs, start_method):
    """Spawning k's folder and its spawning.json; the environment its processes inherit. Returns
    what to restore afterwards."""
    global _spawnings
    with _lock:
        _spawnings += 1
    k, folder = _new_spawning(trace_dir, _function_name(fn), nprocs, start_method)
    saved = {v: os.environ.get(v) for v in _LAUNCHED_RANK_VARIABLES + ("LOCKSTEP_TRACE_DIR", SPAWNING_ENV)}
    for v in _LAUNCHED_RANK_VARIABLES:
        os.environ.pop(v, None)
    os.environ["LOCKSTEP_TRACE_DIR"] = folder
    os.environ[SPAWNING_ENV] = str(k)
    return saved


def _restore(saved):
    for v, value in saved.items():
        if value is None:
            os.environ.pop(v, None)
        else:
            os.environ[v] = value


class _SpawnedFunction:
    """The program's function as its spawned ranks run it. torch's _wrap catches what the function
    raises (to hand the traceback to the launcher) and exits with code 1, so the interpreter's
    excepthook never sees it: the probe would write a clean-exit footer for a rank that crashed.
    Pickled by reference like the function itself (this module is on the ranks' PYTHONPATH)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        try:
            return self.fn(*args, **kwargs)
        except BaseException as e:
            _mark_uncaught(e)
            raise


def _wrap(original):
    @functools.wraps(original)
    def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn", *more, **kwargs):
        trace_dir = probe._trace_dir()
        # Only the process lockstep launched: a spawned rank that spawns again, or spawn's own
        # call of start_processes, is left alone.
        if (not trace_dir or os.environ.get(SPAWNING_ENV) or getattr(_in_spawn, "on", False)
                or probe._STATE.session is not None):
            return original(fn, args, nprocs, join, daemon, start_method, *more, **kwargs)
        if _launched_world() > 1:
            _refuse(trace_dir, fn, nprocs)
        saved = _start_spawning(trace_dir, fn, nprocs, start_method)
        _in_spawn.on = True
        try:
            return original(_SpawnedFunction(fn), args, nprocs, join, daemon, start_method, *more, **kwargs)
        finally:
            _in_spawn.on = False
            _restore(saved)

    return start_processes


def spawned(trace_dir=""):
    """Whether this process started ranks of its own (explain_no_trace: the launcher of its own
    ranks writes no trace of its own, and that is no fault): spawnings it made, or a spawning
    folder under `trace_dir` (ranks it started with multiprocessing.Process make their own)."""
    if _spawnings:
        return True
    try:
        return any(name.startswith("spawn-") for name in os.listdir(trace_dir)) if trace_dir else False
    except OSError:
        return False


def self_started_trace_dir(dist, trace_dir):
    """Where this rank's trace goes: `trace_dir`, or, for a rank of a world the program started
    itself with multiprocessing.Process under `lockstep exec --ranks 1`, that world's spawning
    folder. Such a rank is a process multiprocessing started (from the launched process, or from
    one of its children) that declares a world of several ranks where lockstep launched one and no
    spawn of torch's gave it a folder. Its rank 0 makes the folder and sets the spawning's number
    in the group's store; the others wait for it there. Called once the process group is up."""
    if os.environ.get(SPAWNING_ENV) or os.environ.get(_LAUNCHED_WORLD_ENV) != "1" or dist.get_world_size() <= 1:
        return trace_dir
    import multiprocessing

    if multiprocessing.parent_process() is None:
        return trace_dir
    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        # Its target, or a Process subclass with a run() of its own.
        process = multiprocessing.current_process()
        target = getattr(process, "_target", None)
        try:
            k, folder = _new_spawning(trace_dir, _function_name(target if target is not None else type(process)),
                                      dist.get_world_size(), multiprocessing.get_start_method(allow_none=True) or "")
        except BaseException:
            store.set(_STORE_KEY, "0")  # the others must not wait for a folder that never comes
            raise
        store.set(_STORE_KEY, str(k))
    else:
        # Rank 0 sets it right after the same init_process_group; bounded, so that the probe never
        # holds the program up: without it, the plain folder (exec then reports the extra ranks).
        store.wait([_STORE_KEY], datetime.timedelta(seconds=_STORE_WAIT_S))
        k = int(store.get(_STORE_KEY).decode())
        if k <= 0:
            raise RuntimeError("rank 0 could not make the spawning's folder")
        folder = os.path.join(trace_dir, "spawn-%d" % k)
    # Its own spawns are left alone, as a spawned rank's are (_wrap).
    os.environ[SPAWNING_ENV] = str(k)
    return folder


def _mark_uncaught(e):
    """What a rank's process raised is its crash (the exception itself: a collective that failed
    for a lost peer is told apart by it). The first error stands: torch's spawn wrapper turns the
    target's own into SystemExit(1)."""
    if (not isinstance(e, SystemExit) or e.code not in (None, 0)) and not probe._STATE.uncaught:
        probe._STATE.uncaught = True
        probe._STATE.uncaught_error = e


def _end_after_bootstrap(original):
    """Process._bootstrap, which runs a process started by multiprocessing (its run(), a subclass's
    own too), catches what it raises and returns the exit code. What run() raises is marked as the
    process's crash (multiprocessing exits 1 without the interpreter's excepthook, and a rank's trace
    would end with a clean-exit footer); a code other than 0 is one where nothing was marked; and the
    trace is ended here (under the fork start method the process then leaves by os._exit, without
    the exit handlers that would end it)."""
    @functools.wraps(original)
    def _bootstrap(self, *args, **kwargs):
        run = self.run

        def marked_run():
            try:
                return run()
            except BaseException as e:
                _mark_uncaught(e)
                raise

        self.run = marked_run  # the instance's, called by _bootstrap as self.run()
        code = original(self, *args, **kwargs)
        if code not in (0, None):
            _mark_uncaught(RuntimeError("the process ended with exit code %s" % code))
        probe.end_of_process()
        return code

    _bootstrap._lockstep_spawn = True
    return _bootstrap


def install(torch):
    """Patches torch.multiprocessing.start_processes wherever it is bound by name (spawn() calls it
    through its module's global); spawn() itself goes through it. And multiprocessing's
    Process._bootstrap (_end_after_bootstrap), for the ranks of a world started with
    multiprocessing.Process."""
    import multiprocessing.process

    base = multiprocessing.process.BaseProcess
    if callable(getattr(base, "_bootstrap", None)) and not getattr(base._bootstrap, "_lockstep_spawn", False):
        base._bootstrap = _end_after_bootstrap(base._bootstrap)
    try:
        import torch.multiprocessing.spawn as spawn_module
    except Exception:  # noqa: BLE001 -- a torch without it: nothing to patch
        return
    spawn_module = sys.modules.get("torch.multiprocessing.spawn", spawn_module)
    original = getattr(spawn_module, "start_processes", None)
    if original is None or getattr(original, "_lockstep_spawn", False):
        return
    wrapped = _wrap(original)
    wrapped._lockstep_spawn = True
    for module in list(sys.modules.values()):
        try:
            if vars(module).get("start_processes") is original:
                setattr(module, "start_processes", wrapped)
        except Exception:  # noqa: BLE001
            continue
