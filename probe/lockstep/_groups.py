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
    name = "group[%s]" % ",".join(str(r) for r in ranks) if ranks is not None else "group%d" % len(wrapped)
    _wrap_backends(torch, session, pg, name, wrapped)
    return pg
