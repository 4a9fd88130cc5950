"""The replicated inputs of tensor-parallel modules (the `tp_inputs` check, docs/CHECKERS.md).

A module parallelized by torch.distributed.tensor.parallel whose input is declared `Replicate`
(ColwiseParallel's default; RowwiseParallel or PrepareModuleInput given input_layouts Replicate)
must be fed the same input on every rank of its mesh: each rank multiplies its own weight shard by
it. Nothing else in a trace shows when they are not: the row-parallel all-reduce makes the outputs
equal again. _auto.py patches each parallel style's `_apply` (at the first DeviceMesh: importing
the styles costs ~0.6 s, which a program without a mesh never pays) to call `watch`, which puts a
forward pre-hook on the module, first among its hooks, so it sees the input as the program passed
it, before the style's own hook wraps it. Each forward digests each such input once (one tensor,
the probe's digest); the step's record folds a module input's digests into one
(StepRecord::tp_inputs) with the ranks that must agree: the style's mesh, in world ranks.

Declared inputs only: an input redistributed to Replicate from a shard (input_layouts Shard,
desired Replicate) is made equal by its own all-gather, asynchronously; digesting it would wait on
that gather and find what the collectives' own checks find.
"""

from lockstep import _replicas


def _is_replicate(placement):
    is_replicate = getattr(placement, "is_replicate", None)
    return placement is not None and is_replicate is not None and is_replicate()


def declared_slots(style):
    """The inputs `style` declares Replicate: positional indices ("0", "1", ...) and keyword
    names. SequenceParallel declares none (its input is sharded along the sequence)."""
    layouts = getattr(style, "input_layouts", None)
    if layouts is not None and not isinstance(layouts, (tuple, list)):
        layouts = (layouts,)
    slots = [str(i) for i, p in enumerate(layouts or ()) if _is_replicate(p)]
    kwargs = getattr(style, "input_kwarg_layouts", None) or {}
    slots += [k for k, p in kwargs.items() if _is_replicate(p)]
    return slots


def group_of(mesh):
    """(world ranks, label) of the ranks that must see the same input: every rank of the style's
    mesh (a 1-D TP mesh, or the TP slice of a larger one); None where no other rank shares it."""
    ranks = _replicas._ranks_at(mesh, set())
    if ranks is None or len(ranks) < 2:
        return None
    names = _replicas._names(mesh)
    return ranks, _replicas._label(names, list(range(mesh.ndim)))


class Watched:
    """One module whose declared-Replicate inputs are digested at each forward."""

    def __init__(self, module, slots, ranks, label):
        self.module = module
        self.slots = slots
        self.ranks = ranks
        self.label = label
        self.name = None  # the module's name in the program's model, found when first written

    def inputs(self, args, kwargs):
        """(slot, tensor) of each declared input this forward passes: a plain tensor as it is, a
        DTensor replicated on its whole mesh as its local tensor; anything else is skipped (a
        DTensor already sharded is no replica, and the style redistributes it)."""
        import torch

        dtensor = None
        out = []
        for slot in self.slots:
            value = args[int(slot)] if slot.isdigit() and int(slot) < len(args) else kwargs.get(slot)
            if not isinstance(value, torch.Tensor):
                continue
            if type(value) is not torch.Tensor:
                if dtensor is None:
                    import torch.distributed.tensor as dtensor
                if isinstance(value, dtensor.DTensor):
                    if not all(_is_replicate(p) for p in value.placements):
                        continue
                    value = value.to_local()
                    wait = getattr(value, "trigger_wait", None)  # an AsyncCollectiveTensor's result
                    if wait is not None:
                        value = wait()
            out.append((slot, value.detach()))
        return out


def name_in(models, module):
    """The module's qualified name in the first of `models` that holds it, or None."""
    for model in models:
        for name, m in model.named_modules():
            if m is module:
                return name or type(module).__name__
    return None
