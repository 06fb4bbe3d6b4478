"""EmbeddingShardingPlanner of the test double: a deterministic planner of our own (the rules
are in tests/tools/fake_torchrec/README.md), and a record of its inputs
(FAKE_TORCHREC_RECORD=FILE: one JSON line per plan() call)."""
import json
import os

from torchrec.distributed.planner.types import PlannerError, Shard, ShardingOption, Storage
from torchrec.distributed.types import EmbeddingModuleShardingPlan, EnumerableShardingSpec, \
    ParameterSharding, Placement, ShardingPlan, ShardMetadata
from torchrec.modules.embedding_configs import DATA_TYPE_BYTES

ALL_TYPES = ("data_parallel", "table_wise", "row_wise", "column_wise")
SMALL_ROWS = 8          # fewer rows than this: data_parallel


def _blocks(n, parts):
    """[(start, length)] of n cut in blocks of ceil(n / parts), empty ones left out"""
    b = -(-n // parts)
    return [(i * b, min(n, (i + 1) * b) - i * b) for i in range(parts) if i * b < n]


class EmbeddingShardingPlanner:
    def __init__(self, topology=None, batch_size=None, enumerator=None, storage_reservation=None,
                 proposer=None, partitioner=None, performance_model=None, stats=None,
                 constraints=None, debug=True, **kwargs):
        if kwargs:
            raise TypeError("fake EmbeddingShardingPlanner: unexpected arguments %s"
                            % sorted(kwargs))
        if topology is None:
            raise TypeError("fake EmbeddingShardingPlanner: give it a topology")
        self._topology = topology
        self._batch_size = batch_size
        self._enumerator = enumerator
        self._storage_reservation = storage_reservation
        self._constraints = constraints or {}
        self._debug = debug
        self._best_plan = None
        self._num_proposals = 0

    # ---- what it was given ---------------------------------------------------------------
    def _record(self, module, sharders):
        path = os.environ.get("FAKE_TORCHREC_RECORD")
        if not path:
            return
        topo, res, enum = self._topology, self._storage_reservation, self._enumerator
        tables = []
        for cfg, w in module.table_weights():
            c = self._constraints.get(cfg.name)
            tables.append({
                "name": cfg.name, "feature_names": cfg.feature_names,
                "num_embeddings": cfg.num_embeddings, "embedding_dim": cfg.embedding_dim,
                "data_type": cfg.data_type.name,
                "pooling_factors": c.pooling_factors if c else None,
                "sharding_types": c.sharding_types if c else None,
                "compute_kernels": c.compute_kernels if c else None,
                "optimizer_classes": [k.__name__ for k in getattr(w, "_optimizer_classes", [])],
                "device": str(w.device)})
        ests = enum.estimators if enum is not None else []
        pipes = [e.pipeline_type for e in ests if hasattr(e, "pipeline_type")]
        doc = {
            "world_size": topo.world_size, "local_world_size": topo.local_world_size,
            "compute_device": topo.compute_device, "hbm_cap": topo.hbm_cap_given,
            "batch_size": self._batch_size,
            "enumerator_batch_size": enum.batch_size if enum is not None else None,
            "storage_reservation": None if res is None else {
                "class": type(res).__name__, "percentage": res._percentage,
                "dense_tensor_estimate": res._dense_tensor_estimate},
            "pipeline_type": pipes[0].name if pipes and pipes[0] is not None else None,
            "estimators": [type(e).__name__ for e in ests],
            "sharders": [type(s).__name__ for s in sharders],
            "debug": self._debug,
            "tables": tables}
        with open(path, "a") as f:
            f.write(json.dumps(doc) + "\n")

    # ---- the plan ------------------------------------------------------------------------
    def plan(self, module, sharders):
        self._record(module, sharders)
        topo = self._topology
        K, L, dev = topo.world_size, topo.local_world_size, topo.compute_device
        cfgs = module.embedding_bag_configs()
        largest = max(cfgs, key=lambda c: c.num_embeddings * c.embedding_dim).name if cfgs else None
        nxt = 0
        mem = [0.0] * K
        options = []
        plan = EmbeddingModuleShardingPlan()
        for cfg in cfgs:
            c = self._constraints.get(cfg.name)
            types = list(c.sharding_types) if c and c.sharding_types else list(ALL_TYPES)
            kernels = list(c.compute_kernels) if c and c.compute_kernels else None
            rows, dim = cfg.num_embeddings, cfg.embedding_dim
            size = DATA_TYPE_BYTES[cfg.data_type]
            sharded = [k for k in (kernels or ["fused"]) if k != "dense"]
            if rows < SMALL_ROWS and "data_parallel" in types and (kernels is None
                                                                   or "dense" in kernels):
                st = "data_parallel"
            elif cfg.name == largest and "row_wise" in types:
                st = "row_wise"
            elif "table_wise" in types:
                st = "table_wise"
            elif "row_wise" in types:
                st = "row_wise"
            elif "column_wise" in types:
                st = "column_wise"
            else:
                raise PlannerError("fake torchrec planner: table %s: none of the sharding types "
                                   "%s is one the test double plans" % (cfg.name, types))
            if st == "data_parallel":
                kern = "dense"
                pieces = [(r, [0, 0], [rows, dim]) for r in range(K)]
            else:
                if not sharded:
                    raise PlannerError("fake torchrec planner: table %s: no kernel but dense in %s"
                                       % (cfg.name, kernels))
                kern = sharded[0]
                if st == "table_wise":
                    pieces = [(nxt % K, [0, 0], [rows, dim])]
                    nxt += 1
                elif st == "row_wise":
                    pieces = [(r, [r0, 0], [n, dim]) for r, (r0, n) in enumerate(_blocks(rows, K))]
                else:
                    pieces = [(r, [0, c0], [rows, n])
                              for r, (c0, n) in enumerate(_blocks(dim, min(K, dim)))]
            shards = []
            for r, off, sz in pieces:
                b = sz[0] * sz[1] * size
                mem[r] += b
                shards.append(Shard(size=sz, offset=off, rank=r, storage=Storage(hbm=int(b))))
            options.append(ShardingOption(cfg.name, st, kern, shards))
            spec = None if st == "data_parallel" else EnumerableShardingSpec([
                ShardMetadata(shard_offsets=s.offset, shard_sizes=s.size,
                              placement=Placement(s.rank, "%s:%d" % (dev, s.rank % L)))
                for s in shards])
            plan[cfg.name] = ParameterSharding(sharding_type=st, compute_kernel=kern,
                                               ranks=[s.rank for s in shards], sharding_spec=spec)
        res = self._storage_reservation
        usable = topo.hbm_cap
        if res is not None:
            usable = usable * (1 - res._percentage) - (res._dense_tensor_estimate or 0)
        for r, b in enumerate(mem):
            if b > usable:
                raise PlannerError("fake torchrec planner: rank %d needs %d bytes, over its %d "
                                   "usable bytes of HBM" % (r, b, usable))
        self._best_plan = options
        self._num_proposals = 1
        return ShardingPlan({"": plan})
