"""Puts the probe's recording process group between torch.distributed and its backend, so every
collective of the rank is recorded, DDP's gradient-bucket all-reduces included (DDP's Reducer
calls the C++ process group it was given, never Python).

torch < 2.0: c10d backends are ProcessGroup subclasses; the wrapper is a ProcessGroup that
replaces the group object in distributed_c10d's tables, so the default group, get_rank(group),
get_backend(group) and DDP all see it. torch >= 2.0: a ProcessGroup dispatches each collective to
the Backend registered for the tensors' device type; the wrapper is a Backend registered in place
of each one, so the ProcessGroup object (and every reference the program holds) stays the same.
"""


def _major(torch):
    return int(str(torch.__version__).split(".")[0])


def _replace_in_tables(c10d, old, new):
    for table_name in ("_pg_map", "_pg_names", "_pg_group_ranks"):
        table = getattr(c10d, table_name, None)
        if isinstance(table, dict) and old in table:
            table[new] = table.pop(old)


def _wrap_backends(torch, session, pg, name, wrapped):
    """torch >= 2.0: wraps each backend of `pg` (one per device type) in place."""
    from lockstep import _lockstep_probe as ext

    C = torch._C._distributed_c10d
    types = {"gloo": "GLOO", "nccl": "NCCL", "mpi": "MPI", "ucc": "UCC"}
    for device in ("cpu", "cuda"):
        try:
            backend = pg._get_backend(torch.device(device))
        except RuntimeError:
            continue  # no backend for this device type in this group
        if ext.is_recording_group(backend):
            continue
        backend_name = backend.name() if hasattr(backend, "name") else pg.name()
        kind = getattr(C.ProcessGroup.BackendType, types.get(backend_name, "CUSTOM"))
        pg._register_backend(torch.device(device), kind, session.wrap_group(backend, name))
        wrapped[name + ":" + device] = pg


def wrap_world(torch, session, wrapped):
    c10d = torch.distributed.distributed_c10d
    pg = c10d._get_default_group()
    if _major(torch) >= 2:
        _wrap_backends(torch, session, pg, "world", wrapped)
        return
    new = session.wrap_group(pg, "world")
    _replace_in_tables(c10d, pg, new)
    c10d._update_default_pg(new)
    wrapped["world"] = new


def wrap_subgroup(torch, session, pg, wrapped):
    """A group from new_group (None or a non-member marker are returned as they are)."""
    c10d = torch.distributed.distributed_c10d
    if not isinstance(pg, c10d.ProcessGroup):
        return pg
    # Every member names the group the same: by its ranks in the world (the registry's name is a
    # counter that a rank-local new_group call would shift).
    try:
        if hasattr(torch.distributed, "get_process_group_ranks"):  # torch >= 2.0
            ranks = sorted(torch.distributed.get_process_group_ranks(pg))
        else:
            ranks = sorted(c10d._pg_group_ranks[pg].keys())
    except (AttributeError, KeyError, TypeError, RuntimeError):
        ranks = None
    name = "group[%s]" % ",".join(str(r) for r in ranks) if ranks is not None else "group%d" % len(wrapped)
    if _major(torch) >= 2:
        _wrap_backends(torch, session, pg, name, wrapped)
        return pg
    new = session.wrap_group(pg, name)
    _replace_in_tables(c10d, pg, new)
    wrapped[name] = new
    return new
