"""Automatic attachment (LOCKSTEP_PROBE=1, through sitecustomize): patches torch right after the
program imports it, so the program needs no change.

  init_process_group  -> opens rank-<RANK>.trace and wraps the world group (_groups.py); a
                         discovery record (torch.init_process_group). Patched in every module
                         that bound it by name (torch.distributed.device_mesh does); a world
                         group started some other way opens the trace at the first mesh, DDP,
                         optimizer step or backward pass (probe.ensure_trace)
  new_group           -> wraps the new group; a discovery record (torch.new_group) whose `comm` says
                         which group was asked for (_groups.describe_group_call: group_agreement
                         compares them across ranks)
  new_subgroups(_by_enumeration) -> one discovery record (torch.new_subgroups) for all its groups
  destroy_process_group -> lets go of the wrapped groups it destroys (they die when the program's do);
                         of one group (not the world's): a discovery record (torch.destroy_process_group)
  init_device_mesh, DeviceMesh(...) -> one discovery record (torch.init_device_mesh) for the mesh
                         and its groups, which are wrapped; a mesh with a pipeline dim tells the
                         probe which ranks hold a plain tensor (_replicas.py); the first mesh
                         patches the tensor-parallel styles' _apply (ColwiseParallel,
                         RowwiseParallel, SequenceParallel, PrepareModuleInput): the inputs they
                         declare Replicate are digested at each forward (_tp_inputs.py)
  DistributedDataParallel.__init__ -> the model's names, and its forward marks the end of a step
                         (its wrapped module's, after the buffer broadcast, when it broadcasts buffers)
  Join.__exit__       -> the end of the rank's last step (model.join(): uneven inputs)
  optimizer steps     -> the global step pre/post hooks of torch.optim (and each param group's
                         settings: lr, betas, momentum, weight_decay, eps)
  clip_grad_norm_     -> the step's max_norm and norm_type, and the norm it returned (torch.nn.utils,
                         wherever bound by name)
  all_reduce, broadcast, barrier, ... and DDP's _broadcast_coalesced -> where the program called
                         each collective, into its begin record (_sites.py; wherever bound by name)
  Tensor.backward     -> the loss (the scalar the program calls backward on)
  torch.autograd.backward of one scalar -> the loss too (pipelining's last stage calls it so)
"""

import atexit
import functools
import importlib
import sys
import threading

from lockstep import probe

_installed = False
_tls = threading.local()


def _rebind(original, replacement, name):
    """Every module that bound `original` by name (torch/distributed/device_mesh.py imports
    init_process_group and new_group from distributed_c10d) gets `replacement`: patching the
    defining module alone leaves those copies unseen."""
    for module in list(sys.modules.values()):
        try:
            # The module's own namespace: a module __getattr__ (lazy imports, deprecation
            # warnings) is not asked.
            if vars(module).get(name) is original:
                setattr(module, name, replacement)
        except Exception:  # noqa: BLE001 -- a module without a namespace keeps its own
            continue


def _patch_init_process_group(torch):
    dist = torch.distributed
    c10d = dist.distributed_c10d
    original = c10d.init_process_group

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            probe.open_trace(torch)
        except probe.ProbeError as e:
            probe._say(str(e))
        probe.record_discovery("torch.init_process_group")
        return result

    _rebind(original, init_process_group, "init_process_group")

    def make_group_maker(original_maker, fname):
        @functools.wraps(original_maker)
        def maker(*args, **kwargs):
            # Recorded as it is entered: a rank that waits in it for ranks that never make the
            # same group (a rendezvous of ranks that asked for different groups) has asked for it.
            if not getattr(_tls, "in_subgroups", False):  # new_subgroups and meshes record themselves, once
                from lockstep import _groups

                probe.record_discovery("torch.new_group",
                                       _groups.describe_group_call(torch, fname, original_maker, args, kwargs))
            pg = original_maker(*args, **kwargs)
            st = probe._STATE
            if st.session is None or st.failed is not None:
                return pg
            try:
                from lockstep import _groups

                with st.lock:
                    return _groups.wrap_subgroup(torch, st.session, pg, st.wrapped_groups)
            except Exception as e:  # noqa: BLE001 -- the program keeps its unrecorded group
                probe._fail("wrapping %s: %s: %s" % (fname, type(e).__name__, e))
                return pg

        return maker

    # DeviceMesh makes its groups through the names it imported (new_group, or split_group where
    # the world group is bound to a device): those too, so a mesh's collectives are recorded.
    for fname in ("new_group", "split_group"):
        original_maker = getattr(c10d, fname, None)
        if original_maker is not None:
            _rebind(original_maker, make_group_maker(original_maker, fname), fname)

    # new_subgroups(_by_enumeration) make their groups through new_group: one call, one record.
    for fname in ("new_subgroups", "new_subgroups_by_enumeration"):
        original_sub = getattr(c10d, fname, None)
        if original_sub is None:
            continue

        def make(original_sub, fname):
            @functools.wraps(original_sub)
            def subgroups(*args, **kwargs):
                if getattr(_tls, "in_subgroups", False):  # one subgroups call inside another
                    return original_sub(*args, **kwargs)
                from lockstep import _groups

                probe.record_discovery("torch.new_subgroups",
                                       _groups.describe_group_call(torch, fname, original_sub, args, kwargs))
                _tls.in_subgroups = True
                try:
                    return original_sub(*args, **kwargs)
                finally:
                    _tls.in_subgroups = False

            return subgroups

        wrapped = make(original_sub, fname)
        setattr(c10d, fname, wrapped)
        if hasattr(dist, fname):
            setattr(dist, fname, wrapped)

    original_destroy = c10d.destroy_process_group

    @functools.wraps(original_destroy)
    def destroy_process_group(group=None, *args, **kwargs):
        # The groups it destroys: the given one, or every group with the world.
        doomed = None if group is None or group is getattr(c10d.GroupMember, "WORLD", None) else [group]
        if doomed is not None:  # the world's end is the program's; one group's, part of its churn
            probe.record_discovery("torch.destroy_process_group")
        result = original_destroy(group, *args, **kwargs)
        probe.forget_groups(doomed)
        return result

    c10d.destroy_process_group = destroy_process_group
    dist.destroy_process_group = destroy_process_group


def _patch_device_mesh(torch):
    """A mesh that builds its process groups (init_device_mesh, or DeviceMesh(...) made by the
    program) is one discovery call; a submesh sliced from one builds none and is not."""
    mesh_module = sys.modules.get("torch.distributed.device_mesh")
    DeviceMesh = getattr(mesh_module, "DeviceMesh", None)
    if DeviceMesh is None or not isinstance(DeviceMesh, type):
        return  # a torch without distributed (DeviceMesh is then a stub)
    original = DeviceMesh.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        _patch_tensor_parallel(torch)
        if not kwargs.get("_init_backend", True) or getattr(_tls, "in_subgroups", False):
            return original(self, *args, **kwargs)
        _tls.in_subgroups = True
        try:
            original(self, *args, **kwargs)
        finally:
            _tls.in_subgroups = False
        probe.ensure_trace(torch, "the first DeviceMesh")
        from lockstep import _groups

        probe.record_discovery("torch.init_device_mesh", _groups.describe_mesh(self))
        probe.note_mesh(self)

    DeviceMesh.__init__ = __init__


_tp_patched = False


def _patch_tensor_parallel(torch):
    """Each tensor-parallel style's _apply, once: the module it parallelizes is watched
    (probe.watch_tp_module). At the first DeviceMesh, not at install: tensor parallelism needs a
    mesh, and importing the styles costs about 0.6 s that a program without one never pays."""
    global _tp_patched
    if _tp_patched:
        return
    _tp_patched = True
    try:
        style = importlib.import_module("torch.distributed.tensor.parallel.style")
    except Exception:  # noqa: BLE001 -- a torch without DTensor: nothing to watch
        return
    for cls_name in ("ColwiseParallel", "RowwiseParallel", "SequenceParallel", "PrepareModuleInput"):
        cls = getattr(style, cls_name, None)
        original = getattr(cls, "_apply", None) if isinstance(cls, type) else None
        if original is None or "_apply" not in vars(cls):
            continue

        def make(original):
            @functools.wraps(original)
            def _apply(self, module, device_mesh, *args, **kwargs):
                result = original(self, module, device_mesh, *args, **kwargs)
                if probe.enabled():
                    try:
                        probe.watch_tp_module(result if isinstance(result, torch.nn.Module) else module, self,
                                              device_mesh)
                    except Exception as e:  # noqa: BLE001 -- the program keeps its unwatched module
                        probe._fail("watching a tensor-parallel module: %s: %s" % (type(e).__name__, e))
                return result

            return _apply

        cls._apply = make(original)


def _patch_ddp(torch):
    DDP = torch.nn.parallel.DistributedDataParallel
    original = DDP.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        probe.ensure_trace(torch, "the first DistributedDataParallel")
        if probe.enabled():
            try:
                probe.add_model(self)
            except Exception as e:  # noqa: BLE001
                probe._fail("registering a DDP model: %s: %s" % (type(e).__name__, e))

    DDP.__init__ = __init__


def _patch_join(torch):
    # torch.nn.parallel imports it: patching it costs no import.
    join = importlib.import_module("torch.distributed.algorithms.join")
    original = join.Join.__exit__

    @functools.wraps(original)
    def __exit__(self, *args, **kwargs):
        if probe.enabled():
            probe.leaving_join()
        return original(self, *args, **kwargs)

    join.Join.__exit__ = __exit__


def _patch_optimizers(torch):
    # torch.optim deletes its submodule names from its namespace: take the module itself.
    optimizer_module = importlib.import_module("torch.optim.optimizer")
    def pre_hook(opt, args, kwargs):
        probe.ensure_trace(torch, "the first optimizer step")
        probe.before_optimizer_step(opt)

    optimizer_module.register_optimizer_step_pre_hook(pre_hook)
    optimizer_module.register_optimizer_step_post_hook(lambda opt, args, kwargs: probe.after_optimizer_step(opt))


def _patch_clip_grad_norm(torch):
    # The max_norm each step clips with, compared across replicas (optimizer_settings). Rebound
    # wherever it was bound by name (torch.nn.utils imports it from its clip_grad module).
    clip_grad = importlib.import_module("torch.nn.utils.clip_grad")
    original = clip_grad.clip_grad_norm_

    @functools.wraps(original)
    def clip_grad_norm_(parameters, max_norm, norm_type=2.0, *args, **kwargs):
        if not probe.enabled():
            return original(parameters, max_norm, norm_type, *args, **kwargs)
        clipping = probe.note_clip(max_norm, norm_type)
        # The norm it returns, compared across the ranks of one model (a sharded model's ranks
        # that clip each shard by its own norm disagree on it).
        total_norm = original(parameters, max_norm, norm_type, *args, **kwargs)
        if clipping:
            probe.note_clip_norm(total_norm)
        return total_norm

    _rebind(original, clip_grad_norm_, "clip_grad_norm_")


def _patch_backward(torch):
    original = torch.Tensor.backward

    @functools.wraps(original)
    def backward(self, *args, **kwargs):
        probe.ensure_trace(torch, "the first backward pass")
        if probe.enabled():
            probe.note_backward(self)
        _tls.in_backward = True  # Tensor.backward calls torch.autograd.backward: one loss, not two
        try:
            return original(self, *args, **kwargs)
        finally:
            _tls.in_backward = False

    torch.Tensor.backward = backward

    # torch.autograd.backward(loss), as torch.distributed.pipelining's last stage calls it: a
    # single scalar with no gradient given is the loss too.
    original_autograd = torch.autograd.backward

    @functools.wraps(original_autograd)
    def autograd_backward(tensors, grad_tensors=None, *args, **kwargs):
        if probe.enabled() and not getattr(_tls, "in_backward", False):
            one = tensors[0] if isinstance(tensors, (list, tuple)) and len(tensors) == 1 else tensors
            grads = grad_tensors
            if isinstance(grads, (list, tuple)) and len(grads) == 1:
                grads = grads[0]
            if isinstance(one, torch.Tensor) and grads is None and one.numel() == 1:
                probe.note_backward(one)
        return original_autograd(tensors, grad_tensors, *args, **kwargs)

    torch.autograd.backward = autograd_backward


def _patch_collectives(torch):
    from lockstep import _sites

    loaded = []

    def recording():
        """The compiled part while a trace is open (loaded by then), else None."""
        st = probe._STATE
        if st.session is None or st.failed is not None:
            return None
        if not loaded:
            loaded.append(probe._ext())
        return loaded[0]

    for namespace in (torch.distributed.distributed_c10d, torch.distributed):
        for name in _sites.COLLECTIVES:
            original = vars(namespace).get(name)
            if callable(original) and not hasattr(original, "_lockstep_site"):
                wrapped = _sites.wrap_collective(original, recording, probe.collective_site)
                wrapped._lockstep_site = True
                _rebind(original, wrapped, name)


def install(torch):
    """Patches `torch` (called once, right after it was imported)."""
    global _installed
    if _installed:
        return
    _installed = True
    import torch.distributed  # noqa: F401 -- the submodules patched below
    import torch.distributed.device_mesh  # noqa: F401
    import torch.nn.parallel  # noqa: F401
    import torch.optim.optimizer  # noqa: F401

    _patch_init_process_group(torch)
    _patch_device_mesh(torch)
    _patch_collectives(torch)
    atexit.register(probe.explain_no_trace)
    _patch_ddp(torch)
    _patch_join(torch)
    _patch_optimizers(torch)
    _patch_clip_grad_norm(torch)
    _patch_backward(torch)
    # A program that starts its own ranks (mp.spawn): each spawning its own world (_spawn.py).
    from lockstep import _spawn

    _spawn.install(torch)
