"""Which ranks must hold a tensor bit-identically: its replica group (docs/PROBE.md, "Sharded and
model-parallel programs"). The checkers compare a tensor within its group only.

  * A DTensor on a DeviceMesh: the ranks whose mesh coordinates equal this rank's on every mesh
    dim whose placement is not Replicate (Shard and _StridedShard make ranks hold different
    pieces; a Partial tensor holds addends and is not compared at all). When the DTensor's mesh
    is a submesh (mesh["dp"] of a (dp, tp) mesh, as FSDP2 over tensor parallel uses), the root
    mesh's other dims hold the same tensor too: they count as Replicate, except a dim named for
    pipeline parallelism, whose ranks hold other stages.
  * An FSDP1 parameter (FlatParameter, or a view into one with use_orig_params): its replicate
    group under HYBRID_SHARD (also where FSDP1 clamped it to NO_SHARD over a one-rank shard
    group, a (N, 1) mesh), its process group under NO_SHARD, none (not compared) otherwise.
  * A plain tensor: every rank (a DDP program), or, once the program made a DeviceMesh with a dim
    named for pipeline parallelism, the ranks of this rank's stage (same coordinate on that dim).
    A plain tensor of a program with torch.distributed.pipelining stages but no such mesh: this
    rank's alone (its peers hold other stages, and which ranks share one is not known).

A group is defined once (session.define_replica_group) and named by a small id per tensor, 0 for
every rank and -1 for "compared with no other rank"; the trace writes each group once.
"""

import sys

# Mesh dim names that mean pipeline stages (torchtitan's "pp", Megatron's "pipeline", ...).
PIPELINE_DIMS = ("pp", "pipe", "pipeline", "pipeline_parallel")

WORLD = 0
ALONE = -1


def _names(mesh):
    names = getattr(mesh, "mesh_dim_names", None)
    return tuple(names) if names else tuple(str(d) for d in range(mesh.ndim))  # "mesh dim 0"


def _label(names, dims):
    if not dims:
        return ""
    return ("mesh dim " if len(dims) == 1 else "mesh dims ") + ", ".join(names[d] for d in dims)


def _ranks_at(mesh, fixed):
    """World ranks of `mesh` whose coordinate equals this rank's on the dims in `fixed`."""
    coord = mesh.get_coordinate()
    if coord is None:
        return None
    index = tuple(coord[d] if d in fixed else slice(None) for d in range(mesh.ndim))
    return sorted(int(r) for r in mesh.mesh[index].flatten().tolist())


class ReplicaGroups:
    """Group ids of this process's tensors, each group defined once in the session."""

    def __init__(self, session, world_size):
        self._session = session
        self._world = list(range(world_size))
        self._ids = {}        # (ranks, label) -> id
        self._layouts = {}    # (id(mesh), placements) -> (mesh, id): the mesh held so its id stays its own
        self._fsdp1 = {}      # id(param) -> (param, id)
        self._fsdp1_seen = set()  # id() of FSDP1 modules already read
        self.plain = WORLD    # the group of a plain tensor
        self._stage = {}      # id(tensor) -> tensor: the pipeline stages' parameters and buffers
        self._stages_read = False
        # Counts the changes that may give a tensor already looked up another group: the probe's
        # reused lists of tensors (_capture_lists.py) are built anew when it moves.
        self.version = 0

    def _define(self, ranks, label):
        if ranks is None or len(ranks) < 2:
            return ALONE
        if ranks == self._world:
            return WORLD
        key = (tuple(ranks), label)
        gid = self._ids.get(key)
        if gid is None:
            gid = len(self._ids) + 1
            self._ids[key] = gid
            self._session.define_replica_group(gid, list(ranks), label)
        return gid

    # ------------------------------------------------------------------ meshes

    def note_mesh(self, mesh):
        """A DeviceMesh the program made: with a pipeline dim, plain tensors belong to a stage."""
        names = getattr(mesh, "mesh_dim_names", None) or ()
        pipeline = [d for d, n in enumerate(names) if n in PIPELINE_DIMS]
        if not pipeline:
            return
        ranks = _ranks_at(mesh, set(pipeline))
        free = [d for d in range(mesh.ndim) if d not in pipeline]
        self.plain = self._define(ranks, _label(_names(mesh), free))
        self.version += 1

    def _of_dtensor(self, tensor):
        mesh = tensor.device_mesh
        placements = tuple(tensor.placements)
        key = (id(mesh), placements)
        hit = self._layouts.get(key)
        if hit is not None and hit[0] is mesh:
            return hit[1]
        if any(p.is_partial() for p in placements):
            gid = ALONE  # addends of a sum still to be reduced: no two ranks need agree
        else:
            gid = self._derive(mesh, placements)
        self._layouts[key] = (mesh, gid)
        return gid

    def _derive(self, mesh, placements):
        names = _names(mesh)
        sharded = {names[d] for d, p in enumerate(placements) if not p.is_replicate()}
        root = mesh
        get_root = getattr(mesh, "_get_root_mesh", None)
        if get_root is not None:
            candidate = get_root()
            # The root's dims stand for the submesh's only when the submesh's are named among
            # them (a flattened dim, "dp_shard_cp", is not): then read the group in the root.
            own = set(getattr(mesh, "mesh_dim_names", None) or ())
            if candidate is not mesh and own and own <= set(getattr(candidate, "mesh_dim_names", None) or ()):
                root = candidate
        root_names = _names(root)
        fixed = {d for d, n in enumerate(root_names) if n in sharded or n in PIPELINE_DIMS}
        free = [d for d in range(root.ndim) if d not in fixed]
        return self._define(_ranks_at(root, fixed), _label(root_names, free))

    # ------------------------------------------------------------------ FSDP1

    def _read_fsdp1(self, models):
        fsdp = sys.modules.get("torch.distributed.fsdp.fully_sharded_data_parallel")
        if fsdp is None:
            return
        FSDP, strategies = fsdp.FullyShardedDataParallel, fsdp.ShardingStrategy
        import torch.distributed as dist

        for model in models:
            for module in model.modules():
                if not isinstance(module, FSDP) or id(module) in self._fsdp1_seen:
                    continue
                self._fsdp1_seen.add(id(module))
                strategy = module.sharding_strategy
                inter = getattr(module, "_inter_node_pg", None)
                if inter is not None and strategy == strategies.NO_SHARD and module.process_group.size() == 1:
                    # HYBRID_SHARD over a shard group of one rank (a (N, 1) mesh): FSDP1 clamps the
                    # strategy to NO_SHARD but keeps the replicate group it made, and each rank's
                    # flat parameter is the whole model, to be held alike across that group.
                    strategy = strategies.HYBRID_SHARD
                if strategy in (strategies.HYBRID_SHARD, strategies._HYBRID_SHARD_ZERO2):
                    ranks = sorted(dist.get_process_group_ranks(inter)) if inter is not None else None
                    gid = self._define(ranks, "FSDP1 HYBRID_SHARD replicate group")
                elif strategy == strategies.NO_SHARD:
                    ranks = sorted(dist.get_process_group_ranks(module.process_group))
                    gid = self._define(ranks, "FSDP1 NO_SHARD group")
                else:
                    gid = ALONE
                handle = getattr(module, "_handle", None)
                flat = getattr(handle, "flat_param", None)
                if flat is None:
                    continue
                held = [flat] + list(getattr(flat, "_params", None) or [])
                for p in held:
                    self._fsdp1[id(p)] = (p, gid)
                self.version += 1

    # ------------------------------------------------------------------ pipeline stages

    def read_stages(self):
        """Finds the program's torch.distributed.pipelining stages, once: at its first optimizer
        step, when they are built (a program that never imported pipelining searches nothing)."""
        if self._stages_read:
            return
        self._stages_read = True
        module = sys.modules.get("torch.distributed.pipelining.stage")
        base = getattr(module, "_PipelineStageBase", None)
        if base is None:
            return
        import gc

        for obj in gc.get_objects():
            if issubclass(type(obj), base):
                submod = getattr(obj, "submod", None)
                if submod is None:
                    continue
                for t in list(submod.parameters()) + list(submod.buffers()):
                    self._stage[id(t)] = t
                self.version += 1

    def has_stages(self):
        """Whether the program runs torch.distributed.pipelining stages or has a pipeline mesh
        dim: its ranks train different parts of the model (read_stages first)."""
        return bool(self._stage) or self.plain != WORLD

    # ------------------------------------------------------------------ any tensor

    def local_of_dtensor(self, tensor):
        """(its local shard, its group id) of a DTensor: what `of` gives, without the autograd
        function `to_local()` runs where gradients are enabled (the capture reads bytes only)."""
        return tensor._local_tensor, self._of_dtensor(tensor)

    def of(self, tensor, param=None, models=()):
        """(the tensor to digest, its group id) for a parameter, buffer, or (with `param`, the
        parameter it belongs to) a gradient or optimizer-state tensor."""
        dtensor = sys.modules.get("torch.distributed.tensor")
        if dtensor is not None and isinstance(tensor, dtensor.DTensor):
            return tensor.to_local().detach(), self._of_dtensor(tensor)
        owner = tensor if param is None else param
        if getattr(owner, "_fsdp_flattened", False):
            hit = self._fsdp1.get(id(owner))
            if hit is None or hit[0] is not owner:
                self._read_fsdp1(models)
                hit = self._fsdp1.get(id(owner))
            return tensor, (hit[1] if hit is not None and hit[0] is owner else ALONE)
        if param is not None and dtensor is not None and isinstance(param, dtensor.DTensor) and tensor.dim() > 0:
            return tensor, ALONE  # a plain piece of a DTensor parameter's state: this rank's alone
        if self.plain == WORLD and self._stage:
            # A pipeline program without a mesh to say which ranks share a stage: its stages'
            # tensors, and the unused copies of other stages' layers it may keep, are this rank's.
            return tensor, ALONE
        return tensor, self.plain
