"""The lists of tensors a step record captures, reused from step to step (issue 47, item 4).

Building them walks every module of every model (`named_parameters`, `named_buffers`), asks
`_replicas` for each tensor's group, detaches it and names its optimizer state: about 4 us a
tensor on a 2-core machine, paid on the training thread every step, where digesting a small
tensor's bytes costs less. So a list is built that way once and reused while the objects it was
built from are the same objects: the modules' parameter and buffer dicts' values, the
optimizers' param groups, the optimizer state's values, the gradients' types. Checking that is
an identity comparison per tensor, run in C (`_lockstep_probe.same_values` over each module's
dicts, each param group's list, each state dict; `map(operator.is_, ...)` over lists already
made), with no LibTorch call: per step the Python side touches lists, not tensors. The
gradients, a new tensor each at every step, are read from the parameters in C++ (`GradientList`,
probe/gradient_list.h), while the parameters holding one are those of the last step.

What that comparison cannot see is watched for by a key that every list carries:
  * a module added to a model (`add_module`, a submodule assigned): torch's global registration
    hooks count every parameter, buffer and submodule registered anywhere (`Structure`); with a
    torch that lacks them every list is built anew every step, as before;
  * which ranks share a tensor (`_replicas.ReplicaGroups.version`: a pipeline mesh, pipeline
    stages or FSDP1's groups found later);
  * the models and optimizers the probe knows, and the names it knows (a model found later).

The lists hold the parameters and state tensors themselves, not detached views of them: a
`p.data = ...` between steps is read as it is then, and the capture reads bytes without autograd
(capture_list.cc). A DTensor's local shard and replica group are read at every step
(`_local_tensor`, a dict hit in `_replicas`): its placements are not the lists' to assume.
"""

import operator
import sys

_is = operator.is_


def same_objects(a, b):
    """Whether two lists hold the same objects in the same order (identity, never `==`: a
    tensor's `==` compares values)."""
    return a is not None and b is not None and len(a) == len(b) and all(map(_is, a, b))


class Structure:
    """Counts the parameters, buffers and submodules registered in any module of the process
    (torch's global registration hooks): a changed count means a model's walk may find other
    tensors than the lists hold."""

    def __init__(self):
        self.version = 0
        self.available = False
        self._handles = []

    def install(self, torch):
        if self.available:
            return
        module = sys.modules.get("torch.nn.modules.module") or getattr(torch.nn.modules, "module", None)
        names = ("register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
                 "register_module_module_registration_hook")
        hooks = [getattr(module, n, None) for n in names]
        if any(h is None for h in hooks):
            return  # torch before 2.0: no lists are reused

        def changed(*_args):
            self.version += 1

        self._handles = [h(changed) for h in hooks]
        self.available = True


# What `TensorList.dtensors[i]` says of entry i.
PLAIN = 0          # a tensor, read as it is
DTENSOR = 1        # a DTensor: its local shard read, its group looked up at every capture
DTENSOR_ALONE = 2  # a DTensor whose group the list fixes (a buffer no broadcast made equal)


class TensorList:
    """One kind's tensors as a capture takes them: names, the objects to read, replica group
    ids. `dtensors[i]`: what entry i is (PLAIN, DTENSOR, DTENSOR_ALONE); `None` when every entry
    is PLAIN."""

    __slots__ = ("names", "objects", "groups", "dtensors", "_native")

    def __init__(self, names, objects, groups, dtensors):
        self.names = names
        self.objects = objects
        self.groups = groups
        self.dtensors = dtensors if any(dtensors) else None
        self._native = {}  # (kind, replicated) -> _lockstep_probe.CaptureList

    def capture(self, session, kind, replicated, replicas, objects=None):
        """The list's tensors as they are now (`objects`: this step's, in the list's order),
        digested: a Captured. Without DTensors, through a native list made once (probe/
        capture_list.h: names and groups converted once, digest seeds kept)."""
        names, tensors, groups = self.now(replicas, objects)
        if self.dtensors is not None:
            return session.capture(kind, names, tensors, replicated, groups, deferrable=True)
        native = self._native.get((kind, replicated))
        if native is None:
            native = self._native[(kind, replicated)] = session.capture_list(kind, names, replicated, groups)
        return native.capture(tensors)

    def now(self, replicas, objects=None):
        """(names, tensors, groups) to capture, reading `objects` (this step's, in the list's
        order) or the list's own."""
        objects = self.objects if objects is None else objects
        if self.dtensors is None:
            return self.names, objects, self.groups
        tensors, groups = list(objects), list(self.groups)
        for i, what in enumerate(self.dtensors):
            if what != PLAIN:
                tensors[i], gid = replicas.local_of_dtensor(objects[i])
                if what == DTENSOR:
                    groups[i] = gid
        return self.names, tensors, groups


def is_dtensor(tensor):
    dtensor = sys.modules.get("torch.distributed.tensor")
    return dtensor is not None and isinstance(tensor, dtensor.DTensor)


def entry(replicas, tensor, param, models):
    """(object to keep, group id, PLAIN or DTENSOR) of one tensor, as `replicas.of` says."""
    if is_dtensor(tensor):
        return tensor, replicas.local_of_dtensor(tensor)[1], DTENSOR
    _, gid = replicas.of(tensor, param, models)
    return tensor, gid, PLAIN


def _same_values(owners, attr, item, seen):
    from lockstep import _lockstep_probe

    return seen is not None and _lockstep_probe.same_values(owners, attr, item, seen)


class ModelLists:
    """The parameters and buffers of the known models (and the parameters only optimizers hold),
    reused while every module's dicts and every optimizer's param groups hold the same objects."""

    def __init__(self):
        self._key = None
        self._modules = None
        self._params_seen = None    # every module's _parameters values, in module order
        self._buffers_seen = None   # every module's _buffers values
        self._groups_seen = None    # every optimizer's param groups' params
        self.params = None
        self.buffers = None

    def _still(self, key, optimizers):
        if key is None or key != self._key or self._modules is None:
            return False
        groups = [g for opt in optimizers for g in opt.param_groups]
        return (_same_values(self._modules, "_parameters", False, self._params_seen) and
                _same_values(self._modules, "_buffers", False, self._buffers_seen) and
                _same_values(groups, "params", True, self._groups_seen))

    def get(self, key, models, optimizers, build_params, build_buffers):
        """The current (params, buffers) TensorLists; `key` None: built anew, not kept."""
        if not self._still(key, optimizers):
            self._key = None
            self._modules = [m for model in models for m in model.modules()]
            self._params_seen = [p for m in self._modules for p in m._parameters.values()]
            self._buffers_seen = [b for m in self._modules for b in m._buffers.values()]
            self._groups_seen = [p for opt in optimizers for g in opt.param_groups for p in g["params"]]
            self.params, self.buffers = build_params(), build_buffers()
            self._key = key
        return self.params, self.buffers


class OptimizerLists:
    """One optimizer's gradients and state tensors after its step, and the parameters it stepped
    (what `_watch_update` digests). The parameters are reused while its param groups hold the
    same objects; the gradients' names and groups while the same parameters hold a gradient, of
    the same type (a new gradient tensor every step is the rule: `zero_grad` sets them to None;
    a native list reads them from the parameters); the state's while it holds the same objects
    (optimizers update their state in place)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self._key = None
        self.params = None         # [p] in param-group order
        self.slots = None          # [(group index, param index)] of each
        self.watched = None        # TensorList of the named parameters, each once
        self._grad_types = None
        self.grads = None          # TensorList; objects: None (this step's gradients are read)
        self._grad_native = None   # _lockstep_probe.GradientList of `grads`; None: none yet; False: none
        self._grad_present = None  # indexes into params of the gradients present
        self._state_keys = None    # the state's keys and dicts when _param_dicts was found
        self._state_dicts = None
        self._param_dicts = None   # each parameter's state dict (None: none yet)
        self._state_seen = None    # the state's values when `states` was built
        self.states = None         # TensorList

    def params_now(self, key, build):
        if key is None or key != self._key or not _same_values(self.optimizer.param_groups, "params", True, self.params):
            self._key = None
            self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
            self.slots = [(gi, pi) for gi, g in enumerate(self.optimizer.param_groups)
                          for pi in range(len(g["params"]))]
            self.watched = build()
            self._grad_types = self._grad_native = self._state_seen = self._state_keys = None
            self._key = key
        return self.params

    def capture_grads(self, session, replicas, build):
        """This step's gradients, digested: a Captured. While the parameters holding a gradient
        are those of the last step, the native gradient list reads them itself (probe/
        gradient_list.h: `grad()` in C++, no Python object per gradient); otherwise they are read
        and listed here, and a new native list made (none for DTensor gradients: their local shards
        and groups are read at every capture)."""
        native = self._grad_native
        if native:
            captured = native.capture()
            if captured is not None:
                return captured
            self._grad_native = None
        grads, present = self.grads_now(build)
        if self.grads.dtensors is None and self._grad_native is None:
            held = [False] * len(self.params)
            for i in self._grad_present:
                held[i] = True
            native = session.gradient_list(self.grads.names, self.params, held, True, self.grads.groups)
            captured = native.capture()
            if captured is not None:
                self._grad_native = native
                return captured
            # C++ sees other gradients than `p.grad` does (a subclass's own `grad`): read here
            # until the list changes.
            self._grad_native = False
        return grads.capture(session, "grad", True, replicas, present)

    def grads_now(self, build):
        """This step's gradients: (TensorList, the gradients present in its order)."""
        grads = [p.grad for p in self.params]
        types = list(map(type, grads))
        if types != self._grad_types:
            self._grad_types = self._grad_native = None
            self._grad_present = [i for i, g in enumerate(grads) if g is not None]
            self.grads = build(self._grad_present, grads)
            self._grad_types = types
        present = grads if len(self._grad_present) == len(grads) else [grads[i] for i in self._grad_present]
        return self.grads, present

    def states_now(self, state, build):
        """The state after this step: a TensorList. The state's dicts are found by
        parameter once; while the state maps the same keys to the same dicts (C-level walks:
        a tensor's hash is a Python call), they are the parameters' still."""
        keys, dicts = list(state), list(state.values())
        if not (same_objects(keys, self._state_keys) and same_objects(dicts, self._state_dicts)):
            self._state_seen = None
            self._param_dicts = [state.get(p) for p in self.params]
            self._state_keys, self._state_dicts = keys, dicts
        if not _same_values(self._param_dicts, "", False, self._state_seen):
            self._state_seen = None
            self.states = build(self._param_dicts)
            self._state_seen = [v for d in self._param_dicts if d for v in d.values()]
        return self.states
