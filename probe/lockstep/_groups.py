"""Puts the probe's recording process group between torch.distributed and its backend, so every
collective of the rank is recorded, DDP's gradient-bucket all-reduces included (DDP's Reducer
calls the C++ process group it was given, never Python).

A ProcessGroup dispatches each collective to the Backend registered for the tensors' device
type; the wrapper is a Backend registered in place of each one, so the ProcessGroup object (and
every reference the program holds: the default group, DDP's, a DeviceMesh's) stays the same.
"""


def _wrap_backends(torch, session, pg, name, wrapped):
    """Wraps each backend of `pg` (one per device type) in place (_lockstep_probe's
    install_recording_backends says how, and why under another backend type)."""
    for device in session.install_recording_backends(pg, name):
        wrapped[name + ":" + device] = pg


def wrap_world(torch, session, wrapped):
    c10d = torch.distributed.distributed_c10d
    _wrap_backends(torch, session, c10d._get_default_group(), "world", wrapped)


def wrap_subgroup(torch, session, pg, wrapped):
    """A group from new_group (None or a non-member marker are returned as they are)."""
    c10d = torch.distributed.distributed_c10d
    if not isinstance(pg, c10d.ProcessGroup):
        return pg
    # Every member names the group the same: by its ranks in the world (the registry's name is a
    # counter that a rank-local new_group call would shift).
    try:
        ranks = sorted(torch.distributed.get_process_group_ranks(pg))
    except (AttributeError, KeyError, TypeError, RuntimeError):
        ranks = None
    name = "group" + _rank_list(ranks) if ranks is not None else "group%d" % len(wrapped)
    _wrap_backends(torch, session, pg, name, wrapped)
    return pg


def _rank_list(ranks):
    return "[" + ",".join(str(r) for r in sorted(int(r) for r in ranks)) + "]"


def describe_group_call(torch, fname, original, args, kwargs):
    """What a call that makes process groups asked for, the same text on every rank that asks
    alike: recorded as its discovery record's `comm` and compared across ranks by group_agreement
    (torch.distributed wants every rank of the world in each such call, in the same order, with
    the same arguments, members or not). "" when the arguments cannot be read.

      new_group([3, 0], backend="gloo")                 -> "group[0,3] gloo"
      new_group([0, 3], use_local_synchronization=True) -> "group[0,3] local" (members only)
      split_group(split_ranks=[[0, 1], [2, 3]])         -> "split[[0,1],[2,3]]"
      new_subgroups(2)                                  -> "subgroups of 2"
      new_subgroups_by_enumeration([[0, 1], [2, 3]])    -> "subgroups [[0,1],[2,3]]"
    """
    import inspect

    # Runs in the program's own call, outside the probe's guard: whatever goes wrong here leaves
    # the call undescribed, never failed.
    try:
        bound = inspect.signature(original).bind_partial(*args, **kwargs).arguments
        if fname == "new_group":
            ranks = bound.get("ranks")
            if ranks is None:  # the whole world, as a group of its own
                ranks = range(torch.distributed.get_world_size())
            text = "group" + _rank_list(ranks)
            backend = bound.get("backend")
            if backend is not None:
                text += " " + str(backend).lower()
            if bound.get("use_local_synchronization"):
                text += " local"
            return text
        if fname == "split_group":
            split = bound.get("split_ranks")
            return "split[" + ",".join(_rank_list(g) for g in (split or [])) + "]"
        if fname == "new_subgroups":
            size = bound.get("group_size")
            return "subgroups of %s" % (int(size) if size is not None else "the local devices")
        if fname == "new_subgroups_by_enumeration":
            lists = bound.get("ranks_per_subgroup_list") or []
            return "subgroups [" + ",".join(_rank_list(g) for g in lists) + "]"
    except Exception:  # noqa: BLE001 -- see above
        return ""
    return ""


def describe_mesh(mesh):
    """A DeviceMesh's ranks and dim names: "mesh[[0,1],[2,3]] dims=dp,tp" ("" when unreadable)."""
    def text(x):
        return "[" + ",".join(text(v) for v in x) + "]" if isinstance(x, list) else str(int(x))

    try:
        names = getattr(mesh, "mesh_dim_names", None)
        return "mesh" + text(mesh.mesh.tolist()) + (" dims=" + ",".join(str(n) for n in names) if names else "")
    except Exception:  # noqa: BLE001 -- as describe_group_call's
        return ""
