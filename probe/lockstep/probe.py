"""lockstep's probe for PyTorch programs (docs/PROBE.md).

After every optimizer step it writes, through the project's own C++ trace writer and digest
(the _lockstep_probe extension), one step record per rank: the digest, numel, dtype and norm of
every parameter, every gradient as the optimizer saw it, every buffer and every optimizer-state
tensor, named after the owning module; the loss where the program reports one. Every collective
the rank issues goes through a recording backend (_lockstep_probe.Session.install_recording_backends), DDP's
gradient-bucket all-reduces included. The trace is the one `lockstep-rank` writes, so lockstep's
checkers judge it unchanged.

Two ways in:
  * automatic: LOCKSTEP_PROBE=1 and this folder on PYTHONPATH (what `lockstep exec` does); the
    sitecustomize next to this package patches torch when the program imports it (_auto.py);
  * explicit: ``from lockstep import probe; probe.attach(model, optimizer)`` after
    ``init_process_group`` and before wrapping the model in DDP, then ``probe.step(loss=...)``
    after each ``optimizer.step()``.

When a step record is written: the gradients and the optimizer state are digested right after
the optimizer step (the program may zero the gradients before anything else happens), the
parameters and buffers at the end of the step, i.e. just before the next forward pass of a
known model, before an optimizer steps a second time, at probe.step(), or at exit. So a weight
edited after optimizer.step() shows in that step's record, and several optimizers stepping in
one iteration make one record.
"""

import atexit
import gc
import os
import socket
import sys
import threading
import time
import weakref

from lockstep import _sites

__all__ = ["attach", "step", "enabled", "busy_seconds", "ProbeError"]


class ProbeError(RuntimeError):
    """The probe cannot do what it was asked (a harness error, never a finding)."""


def _say(message):
    sys.stderr.write("lockstep probe: %s\n" % message)
    sys.stderr.flush()


def _ext():
    try:
        from lockstep import _lockstep_probe  # the compiled part, staged next to this file
    except ImportError as e:
        raise ProbeError("cannot load the compiled part of the probe: %s" % e) from None
    return _lockstep_probe


class _State:
    """Everything the probe knows about this process. One per process (``_STATE``)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.session = None          # _lockstep_probe.Session once torch.distributed is up
        self.failed = None           # first error of the probe itself: recording stops
        # Held until exit, not weakly: the last step's record is written at exit, after the
        # program's main() let go of its model and optimizer.
        self.models = []             # modules (DDP's inner module), discovery order
        self.hooked_models = weakref.WeakSet()
        # Wrapped modules of DDPs that broadcast buffers at their forward: their last record,
        # written with no forward after it, holds buffers no broadcast has made equal yet.
        self.broadcasting = weakref.WeakSet()
        self.optimizers = []         # attach order
        self.manual = weakref.WeakSet()  # optimizers recorded through probe.step() only
        self.names = {}              # id(param) -> name
        self.discovered = weakref.WeakSet()  # optimizers whose params were looked for in gc
        self.stepped = set()         # id(optimizer) stepped since the last record
        # The optimizer whose step is running: one that steps inside it is its inner optimizer
        # (ZeroRedundancyOptimizer steps a local AdamW over its shard), part of the same step.
        self.outer_step = None
        self.parts = []              # Captured grads and optimizer state of the pending step
        self.lr = None
        # The pending step's optimizer settings, "opt<i>.group<g>.<setting>" -> value, and the
        # gradient clipping it ran with (clip_grad_norm_'s max_norm, norm_type), written with it.
        self.settings = {}
        self.clip = None
        self.clip_norm = None        # the norm that clipping returned (note_clip_norm), or None
        self.initial_written = False  # step 0's record (_write_initial_record)
        # Two ranks have no majority to name the rank whose weights went astray: each then digests
        # the parameters its optimizer just stepped (`watched`, a Captured), and its record says
        # which of them changed before it was written (_watch_update).
        self.watch_update = False
        self.watched = None
        self.losses = []             # the step's losses: floats, or _PendingLoss of CUDA ones
        self.steps = 0               # step records written
        self.in_step = False         # the program is between its first forward/backward and the record
        self.uncaught = False        # the program died of an exception: no footer (a crash)
        self.uncaught_error = None   # that exception
        self.wrapped_groups = {}     # "<group>:<device>" -> the ProcessGroup whose backend is wrapped
        self.replicas = None         # _replicas.ReplicaGroups: which ranks must hold each tensor
        # The lists of tensors a record captures, reused while they hold (_capture_lists.py).
        self.structure = None        # _capture_lists.Structure, once the trace opens
        self.model_lists = None      # _capture_lists.ModelLists
        self.optimizer_lists = {}    # id(optimizer) -> _capture_lists.OptimizerLists
        self.meshes = []             # DeviceMeshes made before the trace opened (note_mesh)
        # The pending step's replicated inputs of tensor-parallel modules (_tp_inputs.py):
        # (id(Watched), slot) -> (Watched, slot, [Captured of each forward]), in first-forward order.
        self.tp_inputs = {}
        # The pending step's training forward passes of the hooked models (trace 2.5 `forwards`),
        # counted from the first model hooked on: its hook counts them (a record written at exit,
        # when the model may be gone from hooked_models, still has its count).
        self.forwards = 0
        self.counting_forwards = False
        # Time spent in the probe's hooks on the program's threads (wall, and CPU of the calling
        # thread): what bench/probe_overhead.py reports as the probe's direct cost.
        self.busy_s = 0.0
        self.busy_cpu_s = 0.0
        # The process that opened the session (a process forked from it holds a copy it must not
        # end), and whether its end was recorded (_at_exit runs once).
        self.session_pid = None
        self.ended = False


_STATE = _State()


def enabled():
    """Whether a trace is being written in this process."""
    return _STATE.session is not None and _STATE.failed is None


def busy_seconds():
    """(wall, CPU) seconds this process spent in the probe's hooks so far."""
    return _STATE.busy_s, _STATE.busy_cpu_s


# ----------------------------------------------------------------------------- the trace file

def _trace_dir():
    return os.environ.get("LOCKSTEP_TRACE_DIR", "")


def open_trace(torch, trace_dir=None):
    """Opens rank-<RANK>.trace once torch.distributed is initialized; wraps the world group."""
    st = _STATE
    with st.lock:
        if st.session is not None or st.failed is not None:
            return st.session
        dist = torch.distributed
        if not dist.is_available() or not dist.is_initialized():
            raise ProbeError("torch.distributed is not initialized: call init_process_group first")
        trace_dir = trace_dir or _trace_dir()
        if not trace_dir:
            raise ProbeError("no trace directory: set LOCKSTEP_TRACE_DIR (lockstep exec does)")
        ext = _ext()
        rank = dist.get_rank()
        backend = str(dist.get_backend())
        device = "cpu"
        if backend == "nccl" and torch.cuda.is_available():
            device = "cuda:%d" % torch.cuda.current_device()
        header = {
            "rank": rank,
            "world_size": dist.get_world_size(),
            "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "device": device,
            "backend": backend,
            "scenario_id": os.environ.get("LOCKSTEP_RUN_NAME", ""),
            "versions": {
                "python_torch": str(torch.__version__),
                "probe_torch_built": ext.TORCH_VERSION_BUILT,
                "python": "%d.%d.%d" % sys.version_info[:3],
                "torch_cuda": str(torch.version.cuda or "none"),
                "torch_nccl": _nccl_version(torch),
            },
        }
        # A rank of a world the program started itself (multiprocessing.Process): its spawning's folder.
        from lockstep import _spawn

        try:
            trace_dir = _spawn.self_started_trace_dir(dist, trace_dir)
        except Exception as e:  # noqa: BLE001 -- the store failed: the plain folder, which exec reports
            _say("cannot agree on a spawning folder with the other ranks: %s: %s" % (type(e).__name__, e))
        path = os.path.join(trace_dir, ext.trace_file_name(rank))
        try:
            st.session = ext.open_session(path, header)
        except RuntimeError as e:
            raise ProbeError(str(e)) from None
        st.session_pid = os.getpid()
        from lockstep import _replicas

        st.replicas = _replicas.ReplicaGroups(st.session, dist.get_world_size())
        from lockstep import _capture_lists

        st.structure = _capture_lists.Structure()
        st.structure.install(torch)
        st.model_lists = _capture_lists.ModelLists()
        # One more digest of the stepped parameters per step (on CUDA, one more copy back): on by
        # default where it is the only way to a culprit; LOCKSTEP_WATCH_UPDATE=0 turns it off.
        st.watch_update = dist.get_world_size() == 2 and os.environ.get("LOCKSTEP_WATCH_UPDATE", "1") != "0"
        for mesh in st.meshes:
            st.replicas.note_mesh(mesh)
        st.meshes = []
        atexit.register(_at_exit)
        _chain_excepthook()
        from lockstep import _groups

        _groups.wrap_world(torch, st.session, st.wrapped_groups)
        return st.session


def ensure_trace(torch, seen_at):
    """Opens the trace at the first sign of an initialized torch.distributed that came through no
    entry point the probe patched (an init_process_group bound by name before the probe
    attached, a library's own start of the world group): `seen_at` names that sign. The world
    group is wrapped as usual, and so are the groups made before it (a DeviceMesh's)."""
    st = _STATE
    if st.session is not None or st.failed is not None:
        return
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    try:
        open_trace(torch)
    except ProbeError as e:
        _say(str(e))
        return
    _say("torch.distributed was initialized by a call the probe did not see; its trace opened at %s" % seen_at)
    record_discovery("torch.init_process_group")
    c10d = dist.distributed_c10d
    try:
        from lockstep import _groups

        world = c10d._get_default_group()
        with st.lock:
            for pg in list(getattr(c10d._world, "pg_map", {}).keys()):
                if pg is not world:
                    _groups.wrap_subgroup(torch, st.session, pg, st.wrapped_groups)
    except Exception as e:  # noqa: BLE001 -- the program keeps its unrecorded groups
        _fail("wrapping the groups made before the trace opened: %s: %s" % (type(e).__name__, e))


def explain_no_trace():
    """At exit of a rank that wrote no trace: one line saying what the probe saw, which `lockstep
    exec` quotes instead of guessing (harness/runner/judge.cc)."""
    st = _STATE
    if st.session is not None or st.failed is not None or not _trace_dir():
        return
    # Only a rank of the job: not torchrun's or accelerate's own process, not a spawned worker.
    if not any(os.environ.get(v) for v in ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK")):
        return
    try:
        import multiprocessing

        if multiprocessing.parent_process() is not None:
            return
    except Exception:  # noqa: BLE001
        pass
    # The launcher of its own ranks (mp.spawn, multiprocessing.Process): they wrote the traces, in
    # spawn-<k>/ (_spawn.py).
    from lockstep import _spawn

    if _spawn.spawned(_trace_dir()):
        return
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None and dist.is_available() and dist.is_initialized():
        _say("no trace: torch.distributed was initialized (backend %s) but the probe saw no model, optimizer "
             "step or backward pass of this rank" % dist.get_backend())
    else:
        _say("no trace: this process imported torch (the probe attached) but never initialized torch.distributed")


def _nccl_version(torch):
    """The NCCL that this torch runs with ("2.27.3"), or "none" (a build without it)."""
    try:
        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - a CPU-only torch raises whatever its stub raises
        return "none"
    return ".".join(str(part) for part in v) if isinstance(v, tuple) else str(v)


def _fail(error):
    """A probe error: said on stderr, written as the footer's status (a harness error for
    lockstep, outcome `error`), and the probe stops recording; the program goes on."""
    st = _STATE
    if st.failed is not None:
        return
    st.failed = str(error)
    _say(st.failed)
    if st.session is not None:
        try:
            st.session.footer(st.steps, "lockstep probe: " + st.failed)
        except RuntimeError:
            pass


def _chain_excepthook():
    previous = sys.excepthook

    def hook(kind, value, tb):
        _STATE.uncaught = True
        _STATE.uncaught_error = value
        previous(kind, value, tb)

    sys.excepthook = hook


def end_of_process():
    """The end of a process multiprocessing started, once it has run (_spawn.py): under the fork
    start method it leaves by os._exit, without the exit handlers, so the trace's last record and
    footer are written here. Only by the process that opened the trace, not by one forked from it
    (a data loader's worker)."""
    st = _STATE
    if st.session is not None and st.session_pid == os.getpid():
        _at_exit()


def _at_exit():
    st = _STATE
    if st.ended:
        return
    st.ended = True
    if st.session is None or st.failed is not None:
        _let_go()
        return
    try:
        with st.lock:
            if st.stepped:
                _write_record(None, last=True)
            # The steps whose digests were deferred (LOCKSTEP_ASYNC_CAPTURE), crash or not: the
            # steps before a crash were completed, and are recorded as the synchronous capture
            # records them.
            st.session.flush_captures(True)
            err = st.session.record_error()
            if err:
                _fail(err)
                return
            # An uncaught exception is the program's crash: no footer, as for a killed rank.
            # Unless a collective failed because a peer died: then the footer says so, and
            # lockstep names the peer that died, not this rank (docs/LAUNCHER.md).
            if not st.uncaught:
                st.session.footer(st.steps, "ok")
            elif _lost_peer(st.uncaught_error):
                st.session.footer(st.steps, "communication: " + _first_line(st.uncaught_error))
    except Exception as e:  # noqa: BLE001 -- at exit nothing may escape
        _fail(e)
    finally:
        _let_go()


def _let_go():
    """After the last record: the probe lets go of the process groups it wrapped and of the
    optimizers it held for that record. An optimizer may hold a process group
    (ZeroRedundancyOptimizer's); held by the probe into the interpreter's finalization, the
    group's gloo worker threads met a finalizing interpreter (std::terminate: SIGABRT after a
    clean run, one run in three). Let go here, in atexit, the group dies while Python still runs.
    The models stay held: a module holds no group (DDP's wrapper, which does, is not kept), and
    freeing them here made a plain program abort at exit in two runs of six, for reasons not
    found (probe/tests/programs/user_sitecustomize.py)."""
    st = _STATE
    forget_groups()
    with st.lock:
        st.optimizers.clear()
        st.optimizer_lists.clear()  # they hold their optimizers (and the state they captured)
    # The works of the last collectives, held by the recording backend so that no backend worker
    # thread drops one last during the interpreter's finalization (held_works.h: SIGABRT at
    # exit, one run in three of examples/accelerate_test_script.py), go here. A worker lets go
    # microseconds after a work ends; the wait is bounded because a program may itself hold a
    # Work until exit (an async_op handle in a global), which no wait would see released.
    try:
        _ext().let_go_of_works(2.0)
    except Exception as e:  # noqa: BLE001 -- at exit nothing may escape
        _fail(e)


# What a c10d backend says when the other end of a collective went away (gloo's TCP pairs, NCCL's
# remote error): the survivor's exception is the echo of a peer's death.
_LOST_PEER_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe",
                      "remote process exited")


def _lost_peer(error):
    return isinstance(error, RuntimeError) and any(m in str(error) for m in _LOST_PEER_MARKERS)


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def forget_groups(groups=None):
    """Lets go of the process groups the probe wrapped (all, or those in `groups`), so each is
    destroyed when the program lets go of it, as without the probe. Held until the interpreter's
    finalization instead, a gloo group's worker threads meet a finalizing interpreter, which
    ends them mid-unwind (std::terminate, SIGABRT after a clean run)."""
    st = _STATE
    with st.lock:
        for name in list(st.wrapped_groups):
            if groups is None or any(st.wrapped_groups[name] is g for g in groups):
                del st.wrapped_groups[name]


# ----------------------------------------------------------------------------- names

def add_model(model):
    """Records `model`'s parameters and buffers under their names (DDP's `module.` stripped)."""
    st = _STATE
    inner = getattr(model, "module", None)
    import torch

    if isinstance(model, torch.nn.parallel.DistributedDataParallel) and inner is not None:
        target = inner
    else:
        target = model
    with st.lock:
        if any(m is target for m in st.models):
            return
        st.models.append(target)
        for name, p in target.named_parameters():
            st.names.setdefault(id(p), name)
        if model not in st.hooked_models:
            # The end of a step is the next forward pass: that is where its record is written.
            # Under torch.compile the hook must run as Python, never be traced: TorchDynamo would
            # otherwise trace into the probe (graph breaks at its clock and lock, guards on its
            # state) and replay its side effects instead of running them.
            hook = _before_forward
            compiler = getattr(torch, "compiler", None)
            if compiler is not None and hasattr(compiler, "disable"):
                hook = compiler.disable(hook)
            # First among the module's hooks: FSDP2's own gathers the full parameters, and the
            # record is of the shards this rank holds.
            boundary = _step_boundary_module(model, target, torch)
            if boundary is not model:
                st.broadcasting.add(target)
            boundary.register_forward_pre_hook(hook, prepend=True)
            st.hooked_models.add(model)
            st.counting_forwards = True


def _step_boundary_module(model, inner, torch):
    """The module whose forward pre-hook ends a step. DDP with `broadcast_buffers` (its default)
    copies rank 0's buffers to every rank at the start of its forward, before its module runs: a
    BatchNorm's statistics differ between an optimizer step and the next forward by design, and
    are made equal there (bn_buffers_not_broadcast_fixed in examples/real_bugs). The record is
    written after that broadcast, in the wrapped module's hook, so it holds what the next step
    trains with. Without buffers to broadcast, DDP's own hook is the boundary, as for any module."""
    if (isinstance(model, torch.nn.parallel.DistributedDataParallel) and model is not inner
            and getattr(model, "broadcast_buffers", False) and any(True for _ in inner.buffers())):
        return inner
    return model


def _discover_models(optimizer):
    """Names for an optimizer's parameters that no known model owns: the largest module alive
    that holds them (a manual all-reduce loop has no DDP to find it by)."""
    import torch

    st = _STATE
    st.discovered.add(optimizer)
    wanted = {id(p) for g in optimizer.param_groups for p in g["params"]} - set(st.names)
    if not wanted:
        return
    candidates = []
    for obj in gc.get_objects():
        # type(), not isinstance(): some objects warn when their __class__ is read (reduce_op).
        if issubclass(type(obj), torch.nn.Module) and not issubclass(type(obj), torch.nn.parallel.DistributedDataParallel):
            ids = {id(p) for p in obj.parameters()}
            hit = len(ids & wanted)
            if hit:
                candidates.append((hit, len(ids), type(obj).__name__, obj))
    # The module that covers the most of them (the whole model, not one of its layers).
    candidates.sort(key=lambda c: (-c[0], -c[1], c[2]))
    if candidates:
        add_model(candidates[0][3])


def _param_name(optimizer_index, group_index, param_index, p):
    name = _STATE.names.get(id(p))
    if name is None:
        name = "optimizer%d.group%d.param%d" % (optimizer_index, group_index, param_index)
        _STATE.names[id(p)] = name
    return name


# ----------------------------------------------------------------------------- recording

def _optimizer_index(optimizer):
    st = _STATE
    for i, opt in enumerate(st.optimizers):
        if opt is optimizer:
            return i
    st.optimizers.append(optimizer)
    return len(st.optimizers) - 1


def _zero_redundancy(optimizer):
    # Looked up, not imported: importing torch.distributed.optim costs about 170 ms, and a program
    # that never imported it holds no ZeroRedundancyOptimizer.
    module = sys.modules.get("torch.distributed.optim.zero_redundancy_optimizer")
    return module is not None and isinstance(optimizer, module.ZeroRedundancyOptimizer)


def _capture_optimizer(optimizer):
    """Gradients as the optimizer saw them and its state, right after its step."""
    st = _STATE
    index = _optimizer_index(optimizer)
    if optimizer not in st.discovered:
        _discover_models(optimizer)
    replicas = st.replicas
    replicas.read_stages()
    sharded = _zero_redundancy(optimizer)
    # ZeroRedundancyOptimizer's own `state` stays empty: its shard's state is its local optimizer's.
    state = optimizer.optim.state if sharded else optimizer.state
    lists = _optimizer_lists(optimizer, index)
    s = st.session
    st.parts.append(lists.capture_grads(s, replicas, lambda present, grads: _grad_list(lists, index, present, grads)))
    # ZeroRedundancyOptimizer keeps each rank's shard of the state: not compared across ranks.
    states = lists.states_now(state, lambda dicts: _state_list(lists, index, dicts))
    st.parts.append(states.capture(s, "optimizer_state", not sharded, replicas))
    import torch

    _capture_settings(torch, index, optimizer)
    if st.lr is None and optimizer.param_groups:
        lr = optimizer.param_groups[0].get("lr")
        if isinstance(lr, torch.Tensor):
            lr = lr.item()
        st.lr = float(lr) if lr is not None else None


def _capture(kind, tensor_list):
    """A TensorList's tensors as they are now, digested (replicated within their groups)."""
    st = _STATE
    return tensor_list.capture(st.session, kind, True, st.replicas)


def _lists_key():
    """What every reused list of tensors (_capture_lists.py) was built under; None: reuse none."""
    st = _STATE
    if not st.structure.available:
        return None
    return (st.structure.version, len(st.models), len(st.optimizers), len(st.names), st.replicas.version)


def _optimizer_lists(optimizer, index):
    """The optimizer's reused lists, its parameters checked against its param groups now."""
    from lockstep import _capture_lists

    st = _STATE
    lists = st.optimizer_lists.get(id(optimizer))
    if lists is None or lists.optimizer is not optimizer:
        lists = st.optimizer_lists[id(optimizer)] = _capture_lists.OptimizerLists(optimizer)
    lists.params_now(_lists_key(), lambda: _watched_list(lists))
    return lists


def _watched_list(lists):
    """The parameters an optimizer steps that a model names, each once (_watch_update)."""
    from lockstep import _capture_lists

    st = _STATE
    names, objects, groups, dtensors, seen = [], [], [], [], set()
    for p in lists.params:
        name = st.names.get(id(p))
        if name is None or id(p) in seen:
            continue  # a parameter no model names: the record would not name it alike
        seen.add(id(p))
        obj, gid, dt = _capture_lists.entry(st.replicas, p, p, st.models)
        names.append(name)
        objects.append(obj)
        groups.append(gid)
        dtensors.append(dt)
    return _capture_lists.TensorList(names, objects, groups, dtensors)


def _grad_list(lists, index, present, grads):
    """The names and groups of the gradients present (indexes into the optimizer's params)."""
    from lockstep import _capture_lists

    st = _STATE
    names, groups, dtensors = [], [], []
    for i in present:
        p = lists.params[i]
        gi, pi = lists.slots[i]
        _, gid, dt = _capture_lists.entry(st.replicas, grads[i], p, st.models)
        names.append(_param_name(index, gi, pi, p))
        groups.append(gid)
        dtensors.append(dt)
    return _capture_lists.TensorList(names, None, groups, dtensors)


def _state_list(lists, index, dicts):
    """The optimizer state's tensors after its step, each named <param>#<key>."""
    import torch

    from lockstep import _capture_lists

    st = _STATE
    names, objects, groups, dtensors = [], [], [], []
    for i, d in enumerate(dicts):
        if not d:
            continue
        p = lists.params[i]
        gi, pi = lists.slots[i]
        name = _param_name(index, gi, pi, p)
        for key, value in d.items():
            if isinstance(value, torch.Tensor):
                obj, gid, dt = _capture_lists.entry(st.replicas, value, p, st.models)
                names.append("%s#%s" % (name, key))
                objects.append(obj)
                groups.append(gid)
                dtensors.append(dt)
    return _capture_lists.TensorList(names, objects, groups, dtensors)


# The settings of a param group that every replica must share (docs/TRACE.md), and the names they
# are recorded under: a pair (Adam's betas) as two.
_SETTINGS = (("lr", ("lr",)), ("betas", ("beta1", "beta2")), ("momentum", ("momentum",)),
             ("weight_decay", ("weight_decay",)), ("eps", ("eps",)))


def _setting_value(torch, value):
    """A setting as a float: a number, or a one-element tensor (capturable Adam's lr); None for
    anything else (absent, None, a schedule object), which is not recorded."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach().item())
    return None


def _capture_settings(torch, index, optimizer):
    """The settings each param group ran this step with (the scheduler steps after the optimizer,
    so they are read right after its step): the first capture of the step is kept."""
    st = _STATE
    for gi, group in enumerate(optimizer.param_groups):
        for key, names in _SETTINGS:
            value = group.get(key)
            values = value if isinstance(value, (tuple, list)) else (value,)
            if len(values) != len(names):
                continue
            for name, v in zip(names, values):
                number = _setting_value(torch, v)
                if number is not None:
                    st.settings.setdefault("opt%d.group%d.%s" % (index, gi, name), number)


def _model_lists(last=False):
    """(params, buffers) TensorLists of the known models: every parameter a record holds, each
    once, as this rank's local part: the known models' under their names, then those an optimizer
    steps that no model holds (named optimizer<i>.group<g>.param<j>); then every buffer. `last`:
    the buffers of a model whose DDP broadcasts them are this rank's own (_write_record)."""
    st = _STATE
    if last:
        return _param_list(), _buffer_list(last=True)
    return st.model_lists.get(_lists_key(), st.models, st.optimizers, _param_list, _buffer_list)


def _param_list():
    from lockstep import _capture_lists

    st = _STATE
    names, objects, groups, dtensors, seen = [], [], [], [], set()

    def add(name, p):
        obj, gid, dt = _capture_lists.entry(st.replicas, p, p, st.models)
        names.append(name)
        objects.append(obj)
        groups.append(gid)
        dtensors.append(dt)

    for model in st.models:
        for name, p in model.named_parameters():
            if id(p) not in seen:
                seen.add(id(p))
                add(name, p)
    for opt in st.optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    add(st.names.get(id(p), "param%d" % len(names)), p)
    return _capture_lists.TensorList(names, objects, groups, dtensors)


def _buffer_list(last=False):
    from lockstep import _capture_lists
    from lockstep._replicas import ALONE

    st = _STATE
    names, objects, groups, dtensors = [], [], [], []
    for model in st.models:
        unsynced = last and model in st.broadcasting
        for name, b in model.named_buffers():
            obj, gid, dt = _capture_lists.entry(st.replicas, b, None, st.models)
            names.append(name)
            objects.append(obj)
            groups.append(ALONE if unsynced else gid)
            dtensors.append(_capture_lists.DTENSOR_ALONE if dt and unsynced else dt)
    return _capture_lists.TensorList(names, objects, groups, dtensors)


def _write_record(loss, last=False):
    """Writes the pending step: parameters and buffers now, with what the optimizers captured.
    `last`: no forward pass follows (exit, Join's exit), so the buffers of a DDP that broadcasts
    them were never made equal after this step: each rank's own (ALONE), not compared."""
    st = _STATE
    s = st.session
    replicas = st.replicas
    replicas.read_stages()
    params, buffers = _model_lists(last)
    parts = [_capture("param", params)] + st.parts + [_capture("buffer", buffers)]
    if loss is None:
        loss = _loss_total(st.losses)
    st.steps += 1
    settings = list(st.settings.items())
    if st.clip is not None:
        settings.append(("clip.max_norm", st.clip[0]))
        if st.clip[1] is not None:
            settings.append(("clip.norm_type", st.clip[1]))
        if st.clip_norm is not None:
            # Read here, not when clipping returned it: a CUDA norm's .item() waits for the
            # device, and the record's own digests wait for it at this point anyway.
            import torch

            norm = _setting_value(torch, st.clip_norm)
            if norm is not None:
                settings.append(("clip.total_norm", norm))
    # Counted only where a model's forwards are hooked: a program without one has nothing to count.
    forwards = st.forwards if st.counting_forwards else None
    s.write_step(st.steps, loss, st.lr, parts, settings, watched=st.watched, replicated_inputs=_pending_tp_inputs(),
                 forwards=forwards)
    st.forwards = 0
    st.watched = None
    st.tp_inputs = {}
    st.parts = []
    st.settings = {}
    st.clip = None
    st.clip_norm = None
    st.stepped = set()
    st.lr = None
    st.losses = []
    st.in_step = False
    s.step = st.steps + 1
    _ext().set_discovery_context("step", s.step)


def _profiling():
    """Whether a torch profiler is recording (torch.profiler.profile sets this flag on entry):
    then the probe's own work is named in its trace, so that a profile of a program under
    `lockstep exec` says which microseconds are the probe's (ci/gpu-profile-breakdown.py)."""
    prof = sys.modules.get("torch.autograd.profiler")
    return prof is not None and getattr(prof, "_is_profiler_enabled", False)


def _guard(fn):
    """Runs a probe action; an error in it stops the probe (never the program)."""
    label = "lockstep.probe." + fn.__name__.strip("_")

    def run(*args, **kwargs):
        st = _STATE
        if st.session is None or st.failed is not None:
            return None
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            with st.lock:
                if _profiling():
                    import torch

                    with torch.autograd.profiler.record_function(label):
                        return fn(*args, **kwargs)
                return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 -- the program must not die of its probe
            _fail("%s: %s" % (type(e).__name__, e))
            return None
        finally:
            st.busy_s += time.perf_counter() - t0
            st.busy_cpu_s += time.thread_time() - c0

    return run


def _start_of_step():
    """The program began a step (a forward pass or backward of a known model): collectives from
    now on belong to it, and a heartbeat says the rank is alive at its start (as lockstep-rank's)."""
    st = _STATE
    if not st.in_step:
        st.in_step = True
        if st.session.step == 0:
            st.session.step = 1
        st.session.heartbeat()


def _pending_tp_inputs():
    """The pending step's tensor-parallel inputs as write_step takes them, each module named in
    the program's model (found once, at its first record)."""
    from lockstep import _tp_inputs

    st = _STATE
    out = []
    for watched, slot, captured in st.tp_inputs.values():
        if watched.name is None:
            watched.name = _tp_inputs.name_in(st.models, watched.module)
        name = watched.name or type(watched.module).__name__  # a module of no model the probe knows
        out.append((name, slot, watched.ranks, watched.label, captured))
    return out


def watch_tp_module(module, style, mesh):
    """A module a tensor-parallel style was applied to (_auto.py): its inputs declared Replicate
    are digested at each of its forwards, by a pre-hook that runs before the style's own."""
    from lockstep import _tp_inputs

    slots = _tp_inputs.declared_slots(style)
    group = _tp_inputs.group_of(mesh) if slots else None
    if group is None:
        return
    watched = _tp_inputs.Watched(module, slots, group[0], group[1])

    def hook(_module, args, kwargs):
        _note_tp_forward(watched, args, kwargs)

    import torch

    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "disable"):
        hook = compiler.disable(hook)  # run as Python, never traced (add_model says why)
    module.register_forward_pre_hook(hook, prepend=True, with_kwargs=True)


@_guard
def _note_tp_forward(watched, args, kwargs):
    st = _STATE
    # A forward of a model whose root the probe has not hooked (yet) begins a step, as a hooked
    # root's does: the pending record first, so this forward's inputs count in the next one.
    if st.stepped:
        _write_record(None)
    _start_of_step()
    for slot, tensor in watched.inputs(args, kwargs):
        entry = st.tp_inputs.get((id(watched), slot))
        if entry is None:
            entry = st.tp_inputs[(id(watched), slot)] = (watched, slot, [])
        entry[2].append(st.session.capture("param", [slot], [tensor]))


@_guard
def _before_forward_locked(training):
    st = _STATE
    if st.stepped:
        _write_record(None)
    _start_of_step()
    if training:
        st.forwards += 1


def _before_forward(module, inputs):
    # A training forward: the module in train() mode, with autograd recording. An evaluation
    # (no_grad, inference_mode, eval()) that only some ranks run is no difference of the step.
    _before_forward_locked(module.training and sys.modules["torch"].is_grad_enabled())


def _write_initial_record(optimizer):
    """Step 0 (docs/TRACE.md: the state after initialization and the initial broadcast), written
    as the first optimizer step begins, before it updates anything: the parameters every optimizer
    and model known by then hold, so weights that differ before any update (never broadcast,
    loaded on one rank) are named at step 0, and a difference that starts at step 1 is known to
    have started there. Parameters only: a step's gradients and optimizer state do not exist yet,
    and buffers have already moved in this step's forward (BatchNorm's running statistics, which
    DDP broadcasts only at the next forward). A module materialized at its first forward (lazy
    modules, FSDP's sharding at first use) is in its trained shape by then."""
    st = _STATE
    st.initial_written = True
    _optimizer_index(optimizer)
    if optimizer not in st.discovered:
        _discover_models(optimizer)
    st.replicas.read_stages()
    params, _ = _model_lists()
    if params.names:
        st.session.write_step(0, None, None, [_capture("param", params)], [])


@_guard
def before_optimizer_step(optimizer):
    st = _STATE
    if optimizer in st.manual:
        return
    if st.outer_step is not None and st.outer_step is not optimizer:
        return  # an inner optimizer: its outer one records the step
    st.outer_step = optimizer
    if st.steps == 0 and not st.initial_written and not st.stepped:
        _write_initial_record(optimizer)
    # The same optimizer stepping again with no forward pass seen in between: the previous step
    # ended (a model the probe does not know ran its forward).
    if id(optimizer) in st.stepped:
        _write_record(None)
    _start_of_step()


@_guard
def after_optimizer_step(optimizer):
    st = _STATE
    if optimizer in st.manual or optimizer is not st.outer_step:
        return
    st.outer_step = None
    _capture_optimizer(optimizer)
    if st.watch_update:
        _watch_update(optimizer)
    st.stepped.add(id(optimizer))


def _watch_update(optimizer):
    """The parameters `optimizer` just stepped, digested as the record will digest them (this
    rank's local part, under the record's names). The record, written at the next forward, says
    which changed in between: at 2 ranks the one that did is the side whose weights went astray
    (an EMA copied back, a checkpoint loaded, an edit on one rank), where the digests alone could
    not say which side is wrong (checkers/replica_comparison.cc)."""
    st = _STATE
    lists = _optimizer_lists(optimizer, _optimizer_index(optimizer))
    st.watched = _capture("param", lists.watched)


@_guard
def leaving_join():
    """A rank leaves its training loop under `Join` (`model.join()`, DDP's answer to uneven inputs,
    examples/real_bugs/uneven_inputs_hang_fixed.py): its last step ended. Join's exit then shadows
    the other ranks' remaining collectives and, once all have joined, copies the last joiner's
    weights to every rank (DDP's final model sync). The record of this rank's last step is
    written here, before that copy, or it would hold another rank's later weights."""
    if _STATE.stepped:
        _write_record(None, last=True)


class _PendingLoss:
    """A CUDA loss on its way to the host: copied into pinned memory on its stream, behind the
    work that computes it, and read when the step's record is written. float() of a CUDA tensor
    waits for the device, and before every backward that leaves the device idle while the host
    begins the backward. When the record is written the loss has long been computed: a
    synchronous capture has waited for the whole step by then."""

    __slots__ = ("_host", "_copied")

    def __init__(self, torch, tensor):
        stream = torch.cuda.current_stream(tensor.device)
        self._host = torch.empty((), dtype=tensor.dtype, pin_memory=True)
        self._host.copy_(tensor.reshape(()), non_blocking=True)
        self._copied = torch.cuda.Event()
        self._copied.record(stream)

    def value(self):
        self._copied.synchronize()
        return float(self._host)


def _loss_value(tensor):
    """A loss's value for the record: a float, or a _PendingLoss where reading it would wait for a
    CUDA device. A tensor subclass (a DTensor loss of loss_parallel) is read as float() reads it,
    and so is a loss computed while a CUDA graph is being captured (no copy is queued into it)."""
    if tensor.device.type == "cuda":
        import torch

        if type(tensor) is torch.Tensor and not torch.cuda.is_current_stream_capturing():
            try:
                return _PendingLoss(torch, tensor)
            except RuntimeError:
                pass  # no pinned memory to be had: read now, waiting for the device, as before
    return float(tensor)


def _loss_total(losses):
    """The step's loss: its losses added in the order of their backward calls (None: none)."""
    total = None
    for loss in losses:
        value = loss if isinstance(loss, float) else loss.value()
        total = value if total is None else total + value
    return total


@_guard
def note_backward(tensor):
    """The loss: what the program calls backward() on (summed over accumulated micro-batches).
    A backward after an optimizer step begins the next step: the pending record is written
    first, with its own loss. A program with no module forward (plain tensors with
    requires_grad, a model called through a method) has no other step boundary before exit,
    and its losses would land one step late, summed with the next."""
    st = _STATE
    if st.stepped:
        _write_record(None)
    _start_of_step()
    if tensor.numel() == 1:
        st.losses.append(_loss_value(tensor.detach()))


@_guard
def note_clip(max_norm, norm_type):
    """torch.nn.utils.clip_grad_norm_ ran (_auto.py) with these: recorded with the step. A norm
    computed for logging only (max_norm infinite) clips nothing and is not recorded."""
    import math

    import torch

    max_norm = _setting_value(torch, max_norm)
    norm_type = _setting_value(torch, norm_type)
    if max_norm is None or math.isinf(max_norm):
        return False
    _STATE.clip = (max_norm, norm_type)
    _STATE.clip_norm = None
    return True


@_guard
def note_clip_norm(total_norm):
    """The gradient norm a clipping clip_grad_norm_ returned (one note_clip recorded: a norm for
    logging, max_norm infinite, changes no update and is not recorded), written
    with the step as `clip.total_norm` (since trace 2.4): the ranks of one sharded model that clip
    each shard by its own norm disagree on it, where no replica digest can (optimizer_settings).
    Not recorded where it cannot be read without a collective (a DTensor norm not yet reduced
    across its mesh, as FSDP2's is) or where ranks legitimately clip different models: pipeline
    stages, whose parameters the trace does not say apart from a sharded model's."""
    import torch

    st = _STATE
    dtensor = sys.modules.get("torch.distributed.tensor")
    if dtensor is not None and isinstance(total_norm, dtensor.DTensor):
        if not all(p.is_replicate() for p in total_norm.placements):
            return
        total_norm = total_norm.to_local()
    if st.replicas is not None:
        st.replicas.read_stages()
        if st.replicas.has_stages():
            return
    if isinstance(total_norm, torch.Tensor) and total_norm.numel() == 1:
        st.clip_norm = total_norm.detach()
    elif isinstance(total_norm, (int, float)) and not isinstance(total_norm, bool):
        st.clip_norm = float(total_norm)


# ----------------------------------------------------------------------------- discovery


def collective_site():
    """Where the program called the collective being issued (_sites.collective_site), in a range
    of its own under the torch profiler, as a hook's time is (_guard's). Not counted in
    busy_seconds, which is the hooks' time against one read of the state (bench/probe_overhead.py),
    and two more clock reads would cost a collective more than a tenth again."""
    if _profiling():
        import torch

        with torch.autograd.profiler.record_function("lockstep.probe.collective_site"):
            return _sites.collective_site()
    return _sites.collective_site()


@_guard
def record_discovery(name, comm=""):
    """A discovery call of the program (`torch.init_process_group`, `torch.new_group`, ...):
    recorded in the trace with the step the program is in, phase "startup" until its first
    optimizer step is done (the probe cannot tell where a program's set-up ends before that),
    "step" after it, where in the program it came from, and `comm`: what a group-making call
    asked for (_groups.describe_group_call), or ""."""
    st = _STATE
    startup = st.steps == 0 and not st.stepped
    _ext().record_discovery(name, "startup" if startup else "step", st.session.step, _sites.program_stack(), comm)


def note_mesh(mesh):
    """A DeviceMesh the program made (_auto.py): whether plain tensors belong to a pipeline stage."""
    st = _STATE
    with st.lock:
        if st.replicas is None:
            st.meshes.append(mesh)  # made before the trace opened: read when it does
            return
    _note_mesh_locked(mesh)


@_guard
def _note_mesh_locked(mesh):
    _STATE.replicas.note_mesh(mesh)


# ----------------------------------------------------------------------------- explicit API

def attach(model=None, optimizer=None, trace_dir=None):
    """Traces this process explicitly: `model` (a module or a DDP) and `optimizer` (one or a
    list). Call after init_process_group and, for DDP's own all-reduces to be recorded, before
    wrapping the model in DistributedDataParallel. Then call step() after every optimizer step."""
    import torch

    try:
        open_trace(torch, trace_dir)
    except ProbeError as e:
        _say(str(e))
        raise
    st = _STATE
    if model is not None:
        add_model(model)
    optimizers = optimizer if isinstance(optimizer, (list, tuple)) else [optimizer]
    with st.lock:
        for opt in optimizers:
            if opt is not None:
                _optimizer_index(opt)
                st.manual.add(opt)


def step(loss=None):
    """Writes the step record now: call it after optimizer.step() (before zero_grad)."""
    import torch

    st = _STATE
    if st.session is None or st.failed is not None:
        return

    @_guard
    def record():
        for opt in st.optimizers:
            if opt in st.manual:
                _capture_optimizer(opt)
        value = loss
        if isinstance(value, torch.Tensor):
            value = float(value.detach())
        _write_record(value)

    record()
