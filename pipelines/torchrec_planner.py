#!/usr/bin/env python3
"""torchrec_planner.py - run TorchRec's OWN planner (EmbeddingShardingPlanner) on the tables of
autoshard tasks and write its plans as `as-plan --format torchrec` JSON lines (docs/FORMAT.md,
"TorchRec plans"), for `as-plan --import` and measuring beside our plans (issue 38).

Usage:
    python3 pipelines/torchrec_planner.py [FEATURES.ast | -] [--task N] [--split test|train|all]
        [-o OUT.json] [--alg NAME] [--torchrec-src DIR] [--reservation task-cap|torchrec]
        [--kernels LIST] [--sharding-types LIST]

Input: an as-features stream (a file or standard input), read through `as-show --full` (found
on PATH, else in bin/ of the repository this script is in; AS_SHOW names it explicitly).
Records used: `model-config` (optional), `task`, and the whole-table `features` records
(row / column pieces, records with a `piece`, are skipped: TorchRec's planner makes its own).

TorchRec itself is not installed here: its source is found by --torchrec-src DIR, else the
environment variable AS_TORCHREC_SRC, else an importable `torchrec`; exit 2 when it cannot be
imported. It runs with torch 1.13 (CPU) on the meta device: the modules TorchRec imports that
are missing here (fbgemm_gpu, tqdm, pyre_extensions, torchx, iopath, tensordict, torchmetrics,
hypothesis, pandas, and torch 2.x modules such as torch.distributed.device_mesh / _tensor /
tensor / checkpoint / _functional_collectives / _composable, torch 1.13's sharded_tensor) are
replaced by permissive stand-ins made by this script (a sys.meta_path finder), and names torch
1.13 lacks are given as dummies. None of TorchRec's code is part of this script. The planner's
own arithmetic (enumerator, estimators, proposers, partitioner) is TorchRec's, unchanged.

Mapping of a task onto TorchRec's planner inputs (as lib/plan/plantorchrec.c reads TorchRec):
  - one EmbeddingBagConfig per table: name = the table's `name` (a model config's) else
    "t<id>", feature_names [name], num_embeddings = rows, embedding_dim = dim, data_type =
    the table's `data_type` (a model config's) else FP16 (the synthetic pools' weights);
  - ParameterConstraints(pooling_factors=[pooling]) per table (pooling: mean lookups per bag);
  - Topology(world_size = K (the task's shards), local_world_size = min(K, the model config's
    local_size, else K), compute_device "cuda", hbm_cap = see --reservation);
  - batch_size = per-rank batch = the features' batch / K (rounded, at least 1);
  - optimizer (model configs): TorchRec's planner takes it from the parameters'
    `_optimizer_classes` (set by apply_optimizer_in_backward), so each weight gets
    sgd/exact_sgd -> torch.optim.SGD (state x0), adam -> torch.optim.Adam (x2),
    rowwise_adagrad/exact_rowwise_adagrad -> torchrec.optim.RowWiseAdagrad (x1/dim),
    adagrad/exact_adagrad/partial_rowwise_adam -> torchrec.optim.Adagrad (x1, TorchRec's
    "anything else"); synthetic pools: no optimizer (TorchRec's default: weights only).
    The sharder's fused_params are left at TorchRec's defaults (they hold no optimizer for
    the planner's memory model);
  - pipeline (model configs): the model config's pipeline as EmbeddingStorageEstimator's
    pipeline_type (none, train_base, train_sparse_dist, train_prefetch_sparse_dist); else none;
  - --reservation task-cap (default): hbm_cap = the task's mem_cap and no further reservation
    (FixedPercentageStorageReservation(0)): for a model config the task's cap already is the
    HBM less TorchRec's heuristic reservation (as-features --model-task: 0.85 x HBM - dense
    bytes - 20 x 8 x ids per rank), so it would otherwise be taken twice;
    --reservation torchrec: hbm_cap = the model config's hbm_bytes (else the task's cap) with
    TorchRec's default HeuristicalStorageReservation(0.15, dense_tensor_estimate = the model
    config's dense_bytes).
    A task's mem_cap of 0 (no cap: the synthetic pools' default) leaves TorchRec's default
    HBM_CAP (32 GB);
  - --sharding-types LIST: ParameterConstraints(sharding_types=LIST) for every table, e.g.
    table_wise,column_wise,row_wise: a plan without data_parallel tables (then not
    TorchRec's free choice: give it another --alg label); default: no constraint;
  - --kernels LIST: ParameterConstraints(compute_kernels=LIST) for every table, e.g.
    fused,dense to keep every table in HBM (TorchRec otherwise picks fused_uvm_caching for
    some one-row tables of the synthetic pools); default: no constraint.
  Everything else is TorchRec's default (proposers, GreedyPerfPartitioner, its default perf
  estimator, the sharding types and compute kernels it enumerates, constants).

Output: one JSON line per task, written after the whole task is planned:
  {"task": id, "alg": ALG, "feasible": true, "world_size": K, "local_size": L, "module": M,
   "plan": {M: {table: {"sharding_type": ..., "compute_kernel": ..., "ranks": [...],
                        "shards": [{"shard_offsets": [r0, c0], "shard_sizes": [rows, cols],
                                    "placement": "rank:r/cuda:r%L"}]}}}}
  M is the model config's module_path, else "". compute_kernel is TorchRec's (fused; dense
  for data_parallel; others where it picks them). data_parallel tables: "ranks" every rank
  and "shards" [] (TorchRec gives no shards for them), as as-plan --import and
  pipelines/torchrec_plan.py take them. Stderr: per task the counts of sharding types, per
  rank its tables, and the planning time.
Tests: tests/torchrec-planner.bats, with a test double of TorchRec of our own
(tests/tools/fake_torchrec, given as --torchrec-src; its README has its planning rules).

Exit: 0 ok; 1 bad input (naming the record) or TorchRec's planner failed on a task; 2 TorchRec
cannot be imported or bad usage; 3 the output cannot be written.
"""
import argparse
import importlib.abc
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import time
import types
from collections import Counter

import aspipe

PROG = "torchrec_planner"


aspipe.set_prog(PROG)
# one line on stderr "torchrec_planner: ...", control characters escaped (\x1b, \n, \u2028,
# \udcff); die exits (1, or the code given)
_esc, note, die = aspipe.safe, aspipe.say, aspipe.fail


# ---- stand-ins for the modules TorchRec imports that are missing here -------------------

STUB_TOP = ("fbgemm_gpu", "tqdm", "pyre_extensions", "torchx", "iopath", "tensordict",
            "torchmetrics", "hypothesis", "pandas")
STUB_TORCH = ("torch.distributed.device_mesh", "torch.distributed.tensor",
              "torch.distributed._tensor", "torch.distributed.checkpoint",
              "torch.distributed._functional_collectives", "torch.distributed._composable",
              "torch.distributed._shard.sharded_tensor")


class _DummyMeta(type):
    """classes whose every missing attribute is another dummy class: enum members, nested
    names, decorators, base classes and type subscripts all work"""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        d = _dummy(name, cls.__module__)
        setattr(cls, name, d)
        return d

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return True


class _Dummy(metaclass=_DummyMeta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Dummy()

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def _dummy(name, module):
    return _DummyMeta(name, (_Dummy,), {"__module__": module, "__qualname__": name})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        d = _dummy(name, self.__name__)
        setattr(self, name, d)
        return d


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []          # a package: any submodule is a stand-in too
        return m

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        for n in self.names:
            if fullname == n or fullname.startswith(n + "."):
                return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def _patch_torch_module(m):
    """names a torch 1.13 module lacks: a dummy, made on demand (module-level __getattr__)"""
    if isinstance(m, _StubModule) or "__getattr__" in m.__dict__:
        return

    def __getattr__(name, _mod=m.__name__):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _dummy(name, _mod)

    try:
        m.__getattr__ = __getattr__
    except (AttributeError, TypeError):
        pass


class _TorchPatchFinder(importlib.abc.MetaPathFinder):
    """after the real import of a torch.* module, give it the permissive __getattr__"""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch.") or fullname.startswith("torchrec"):
            return None
        for f in sys.meta_path:
            if f is self or isinstance(f, _StubFinder):
                continue
            fs = getattr(f, "find_spec", None)
            if fs is None:
                continue
            spec = fs(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch_torch_module(module)


def install_standins():
    sys.meta_path.insert(0, _StubFinder(STUB_TOP + STUB_TORCH))
    # fbgemm_gpu ships as a namespace also through torch.ops: give it permissive ops
    import torch  # noqa: F401  (the real one; torch itself is complete enough)
    import torch.distributed  # noqa: F401
    if "import_module" not in type(torch.ops).__dict__:   # torch 1.13: torch.ops.X is a namespace
        try:
            torch.ops.import_module = lambda *a, **k: None
        except Exception:
            pass
    for name, m in list(sys.modules.items()):
        if (name == "torch" or name.startswith("torch.")) and isinstance(m, types.ModuleType):
            _patch_torch_module(m)
    sys.meta_path.insert(1, _TorchPatchFinder())


def import_torchrec(src):
    """-> a namespace of what we use from TorchRec, or exit 2 naming why not"""
    if src:
        if not os.path.isdir(os.path.join(src, "torchrec")):
            die("--torchrec-src / AS_TORCHREC_SRC %r: no torchrec/ package in it (extract "
                "TorchRec's source there, e.g. git archive of meta-pytorch/torchrec)" % src, 2)
        sys.path.insert(0, os.path.abspath(src))
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        die("cannot import torch (%s): run with a python3 that has torch" % e, 2)
    install_standins()
    import warnings
    warnings.filterwarnings("ignore")
    import logging
    logging.disable(logging.WARNING)
    try:
        from torchrec.modules.embedding_configs import EmbeddingBagConfig, DataType
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology, \
            ParameterConstraints
        from torchrec.distributed.planner.enumerators import EmbeddingEnumerator
        from torchrec.distributed.planner.shard_estimators import EmbeddingPerfEstimator, \
            EmbeddingStorageEstimator
        from torchrec.distributed.planner.storage_reservations import \
            FixedPercentageStorageReservation, HeuristicalStorageReservation
        from torchrec.distributed.types import PipelineType
        import torchrec.optim as trec_optim
        try:        # the default enumerator's perf estimator, made as it makes it
            from torchrec.distributed.planner.constants import DEFAULT_PERF_ESTIMATOR
            from torchrec.distributed.planner.estimator import EmbeddingPerfEstimatorFactory

            def perf_estimator(topology, constraints):
                return EmbeddingPerfEstimatorFactory.create(
                    DEFAULT_PERF_ESTIMATOR, topology=topology, constraints=constraints)
        except ImportError:     # older TorchRec: the class itself
            def perf_estimator(topology, constraints):
                return EmbeddingPerfEstimator(topology=topology, constraints=constraints)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        where = src or "the installed torchrec"
        if os.environ.get("AS_DEBUG"):
            import traceback
            traceback.print_exc()
        die("cannot import TorchRec's planner from %s: %s: %s (give its source with "
            "--torchrec-src DIR or AS_TORCHREC_SRC)" % (where, type(e).__name__, e), 2)
    return types.SimpleNamespace(
        torch=torch, EmbeddingBagConfig=EmbeddingBagConfig, DataType=DataType,
        EmbeddingBagCollection=EmbeddingBagCollection,
        EmbeddingBagCollectionSharder=EmbeddingBagCollectionSharder,
        EmbeddingShardingPlanner=EmbeddingShardingPlanner, Topology=Topology,
        ParameterConstraints=ParameterConstraints, EmbeddingEnumerator=EmbeddingEnumerator,
        perf_estimator=perf_estimator,
        EmbeddingStorageEstimator=EmbeddingStorageEstimator,
        FixedPercentageStorageReservation=FixedPercentageStorageReservation,
        HeuristicalStorageReservation=HeuristicalStorageReservation,
        PipelineType=PipelineType, trec_optim=trec_optim)


# ---- input --------------------------------------------------------------------------------

def find_as_show():
    """AS_SHOW, else as-show on PATH (the tests put the tools under test there), else the
    one in bin/ of the repository this script is in (aspipe.as_show); exit 2 when none"""
    here = os.path.dirname(os.path.abspath(__file__))
    exe = aspipe.as_show(here)
    if exe is None:
        die("as-show not found (not on PATH, not in %s; build with make, or set AS_SHOW)"
            % os.path.join(os.path.dirname(here), "bin"), 2)
    return exe


def read_records(path):
    exe = find_as_show()
    cmd = [exe, "--full", path if path != "-" else "-"]
    try:
        p = subprocess.run(cmd, stdin=sys.stdin.buffer if path == "-" else subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        die("cannot run %s: %s" % (exe, e), 2)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        die("%s: as-show --full failed (exit %d)%s" % (path, p.returncode,
            (": " + err[-1]) if err else ""))
    recs = []
    # one record a line, split at "\n" alone: str.splitlines() would also split inside a name
    # holding U+2028, U+0085 or \x1c..\x1e, which JSON strings may carry unescaped
    for i, line in enumerate(p.stdout.decode("utf-8", "replace").split("\n"), 1):
        if not line.strip():
            continue
        try:
            recs.append(json.loads(line))
        except ValueError as e:
            die("%s: record %d: not JSON from as-show (%s)" % (path, i, e))
    return recs


def _num(rec, key, where, kind=(int, float), lo=None, required=True, default=None):
    v = rec.get(key, None)
    if v is None:
        if required:
            die("%s: no %r" % (where, key))
        return default
    if isinstance(v, bool) or not isinstance(v, kind):
        die("%s: %r must be a number, got %r" % (where, key, v))
    if lo is not None and v < lo:
        die("%s: %r must be at least %s, got %r" % (where, key, lo, v))
    return v


DTYPES = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "int4": "INT4",
          "int2": "INT2"}
OPTIMIZERS = {"sgd": "SGD", "exact_sgd": "SGD", "adam": "Adam", "adagrad": "Adagrad",
              "exact_adagrad": "Adagrad", "partial_rowwise_adam": "Adagrad",
              "rowwise_adagrad": "RowWiseAdagrad", "exact_rowwise_adagrad": "RowWiseAdagrad"}
PIPELINES = {"none": "NONE", "train_base": "TRAIN_BASE", "train_sparse_dist": "TRAIN_SPARSE_DIST",
             "train_prefetch_sparse_dist": "TRAIN_PREFETCH_SPARSE_DIST"}


def parse_input(recs, path):
    config = None
    tables = {}
    tasks = []
    for i, r in enumerate(recs, 1):
        if not isinstance(r, dict):
            die("%s: record %d: not an object" % (path, i))
        kind = r.get("kind")
        where = "%s: record %d (%s)" % (path, i, kind)
        if kind == "model-config":
            if config is not None:
                die("%s: a second model-config record" % where)
            config = r
            for k in ("world_size", "local_size", "hbm_bytes"):
                _num(r, k, where, int, 0, required=False)
            if r.get("optimizer") is not None and r["optimizer"] not in OPTIMIZERS:
                die("%s: optimizer %r unknown (one of %s)" % (where, r["optimizer"],
                    ", ".join(sorted(OPTIMIZERS))))
            if r.get("pipeline") is not None and r["pipeline"] not in PIPELINES:
                die("%s: pipeline %r unknown (one of %s)" % (where, r["pipeline"],
                    ", ".join(sorted(PIPELINES))))
        elif kind == "features":
            if r.get("piece") is not None:
                continue        # a row / column piece: TorchRec's planner splits by itself
            tid = _num(r, "id", where, int, 0)
            where = "%s: record %d (features, table %d)" % (path, i, tid)
            if tid in tables:
                die("%s: table %d given twice" % (where, tid))
            t = {"id": tid,
                 "rows": _num(r, "rows", where, int, 1),
                 "dim": _num(r, "dim", where, int, 1),
                 "pooling": float(_num(r, "pooling", where, lo=0)),
                 "batch": _num(r, "batch", where, int, 1),
                 "name": r.get("name") or "t%d" % tid,
                 "data_type": r.get("data_type")}
            if not isinstance(t["name"], str):
                die("%s: name must be a string" % where)
            if t["data_type"] is not None and t["data_type"] not in DTYPES:
                die("%s: data_type %r unknown" % (where, t["data_type"]))
            tables[tid] = t
        elif kind == "task":
            tid = _num(r, "id", where, int, 0)
            where = "%s: record %d (task %d)" % (path, i, tid)
            ts = r.get("tables")
            if not isinstance(ts, list) or not ts or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in ts):
                die("%s: tables must be a non-empty array of table ids" % where)
            tasks.append({"id": tid, "split": r.get("split"), "tables": ts,
                          "K": _num(r, "shards", where, int, 1),
                          "cap": _num(r, "mem_cap", where, int, 0), "where": where})
    if not tasks:
        die("%s: no task record (make tasks with as-features, e.g. --model-task)" % path)
    for t in tasks:
        for x in t["tables"]:
            if x not in tables:
                die("%s: table %d has no (whole-table) features record" % (t["where"], x))
        names = Counter(tables[x]["name"] for x in t["tables"])
        dup = [n for n, c in names.items() if c > 1]
        if dup:
            die("%s: table name %r used by more than one table" % (t["where"], dup[0]))
    return config, tables, tasks


# ---- planning -----------------------------------------------------------------------------

def plan_task(tr, task, tables, config, reservation, kernels=None, stypes=None):
    torch = tr.torch
    K = task["K"]
    L = K
    if config and config.get("local_size"):
        L = min(K, config["local_size"])
    module = (config or {}).get("module_path") or ""
    ts = [tables[x] for x in task["tables"]]
    batches = {t["batch"] for t in ts}
    if len(batches) > 1:
        note("task %d: tables have different batches %s; using the largest"
             % (task["id"], sorted(batches)))
    per_rank = max(1, int(round(max(batches) / K)))

    cfgs = []
    constraints = {}
    for t in ts:
        dt = DTYPES[t["data_type"]] if (config and t["data_type"]) else "FP16"
        cfgs.append(tr.EmbeddingBagConfig(
            name=t["name"], embedding_dim=t["dim"], num_embeddings=t["rows"],
            feature_names=[t["name"]], data_type=getattr(tr.DataType, dt)))
        kw = {"compute_kernels": list(kernels)} if kernels else {}
        if stypes:
            kw["sharding_types"] = list(stypes)
        constraints[t["name"]] = tr.ParameterConstraints(pooling_factors=[t["pooling"]], **kw)
    ebc = tr.EmbeddingBagCollection(tables=cfgs, device=torch.device("meta"))

    opt = OPTIMIZERS.get((config or {}).get("optimizer") or "")
    if opt:
        cls = getattr(torch.optim, opt) if opt in ("SGD", "Adam") else getattr(tr.trec_optim, opt)
        for p in ebc.parameters():
            p._optimizer_classes = [cls]
    pipe = getattr(tr.PipelineType, PIPELINES.get((config or {}).get("pipeline") or "none",
                                                     "NONE"))

    if reservation == "torchrec":
        hbm = (config or {}).get("hbm_bytes") or task["cap"]
        res = tr.HeuristicalStorageReservation(
            percentage=0.15, dense_tensor_estimate=(config or {}).get("dense_bytes") or 0)
    else:
        hbm = task["cap"]
        res = tr.FixedPercentageStorageReservation(0.0)
    if not hbm:
        hbm = None       # no cap: TorchRec's default HBM_CAP
    topo_kw = dict(world_size=K, local_world_size=L, compute_device="cuda")
    if hbm:
        topo_kw["hbm_cap"] = hbm
    topology = tr.Topology(**topo_kw)
    enumerator = tr.EmbeddingEnumerator(
        topology=topology, batch_size=per_rank, constraints=constraints,
        estimator=[tr.perf_estimator(topology, constraints),
                   tr.EmbeddingStorageEstimator(topology=topology, constraints=constraints,
                                                pipeline_type=pipe)])
    planner = tr.EmbeddingShardingPlanner(
        topology=topology, batch_size=per_rank, enumerator=enumerator,
        storage_reservation=res, constraints=constraints, debug=False)
    t0 = time.time()
    plan = planner.plan(ebc, [tr.EmbeddingBagCollectionSharder()])
    ms = (time.time() - t0) * 1000.0
    params = plan.plan.get("") if hasattr(plan, "plan") else None
    if params is None:
        raise RuntimeError("TorchRec's plan has no module \"\" (got %r)"
                           % list(getattr(plan, "plan", {}).keys()))

    out = {}
    for t in ts:
        ps = params.get(t["name"]) if hasattr(params, "get") else params[t["name"]]
        if ps is None:
            raise RuntimeError("TorchRec's plan lacks table %r" % t["name"])
        st = str(ps.sharding_type)
        kern = str(ps.compute_kernel)
        shards = []
        ranks = []
        spec = ps.sharding_spec
        if spec is not None and getattr(spec, "shards", None):
            for sm in spec.shards:
                pl = sm.placement
                r = pl.rank()
                shards.append({"shard_offsets": [int(x) for x in sm.shard_offsets],
                               "shard_sizes": [int(x) for x in sm.shard_sizes],
                               "placement": "rank:%d/cuda:%d" % (r, r % L)})
                ranks.append(r)
        elif ps.ranks:
            ranks = [int(r) for r in ps.ranks]
        if st == "data_parallel" and not ranks:
            ranks = list(range(K))
        out[t["name"]] = {"sharding_type": st, "compute_kernel": kern, "ranks": ranks,
                          "shards": shards}
    # TorchRec's own estimate of HBM per rank (its best plan's shards), for the summary
    hbm_rank = None
    try:
        hbm_rank = [0] * K
        for so in planner._best_plan or []:
            for sh in so.shards:
                if sh.rank is not None and sh.storage is not None:
                    hbm_rank[sh.rank] += int(sh.storage.hbm)
    except Exception:  # noqa: BLE001  (private attribute; only informative)
        hbm_rank = None
    doc = {"task": task["id"], "world_size": K, "local_size": L, "module": module,
           "plan": {module: out}}
    info = {"ms": ms, "per_rank": per_rank, "hbm": hbm or "TorchRec's default",
            "hbm_rank": hbm_rank,
            "proposals": getattr(planner, "_num_proposals", None),
            "optimizer": opt or "none", "pipeline": pipe.name if hasattr(pipe, "name") else pipe,
            "reservation": type(res).__name__}
    return doc, info


def summary(doc, info, K):
    tabs = doc["plan"][doc["module"]]
    c = Counter(v["sharding_type"] for v in tabs.values())
    kc = Counter(v["compute_kernel"] for v in tabs.values())
    lines = ["task %d: %d tables on %d ranks (batch %d per rank, hbm_cap %s, %s, optimizer "
             "%s, pipeline %s): TorchRec planned it in %.0f ms, %s proposals"
             % (doc["task"], len(tabs), K, info["per_rank"], info["hbm"], info["reservation"],
                info["optimizer"], info["pipeline"], info["ms"], info["proposals"]),
             "  sharding types: " + ", ".join("%s %d" % kv for kv in sorted(c.items())),
             "  compute kernels: " + ", ".join("%s %d" % kv for kv in sorted(kc.items()))]
    per = {r: [] for r in range(K)}
    for name, v in tabs.items():
        if v["sharding_type"] == "data_parallel":
            continue
        if v["shards"]:
            for s in v["shards"]:
                r = int(s["placement"].split("/")[0].split(":")[1])
                tags = [x for x in (v["sharding_type"] if v["sharding_type"] != "table_wise"
                                     else "", v["compute_kernel"] if v["compute_kernel"] != "fused"
                                     else "") if x]
                tag = name + ("[%s]" % ",".join(tags) if tags else "")
                per.setdefault(r, []).append(tag)
        else:
            for r in v["ranks"]:
                per.setdefault(r, []).append(name)
    dp = [n for n, v in tabs.items() if v["sharding_type"] == "data_parallel"]
    hr = info.get("hbm_rank")
    for r in sorted(per):
        mem = (" (TorchRec's HBM estimate %.2f GB)" % (hr[r] / 1e9)) if hr and r < len(hr) else ""
        lines.append("  rank %d%s: %s" % (r, mem, " ".join(per[r]) or "-"))
    if dp:
        lines.append("  every rank (data_parallel): " + " ".join(dp))
    if sys.stderr is None:
        return
    try:                                 # the names' control characters escaped: none reach the terminal
        sys.stderr.write("\n".join(_esc(l) for l in lines) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _ArgumentParser(argparse.ArgumentParser):
    """argparse's, but --help that cannot be written to standard output (closed, full) is an
    error (exit 3: _run), neither lost nor sent to stderr"""

    def print_help(self, file=None):
        if file is None:
            if sys.stdout is None:
                raise OSError("closed")
            file = sys.stdout
        file.write(self.format_help())
        file.flush()


def main():
    ap = _ArgumentParser(
        prog="torchrec_planner.py",
        description="Run TorchRec's own EmbeddingShardingPlanner on autoshard tasks; write "
                    "its plans as `as-plan --format torchrec` JSON lines.",
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", nargs="?", default="-", help="as-features stream (default stdin)")
    ap.add_argument("--task", type=int, default=None, help="only task N")
    ap.add_argument("--split", choices=("test", "train", "all"), default="test")
    ap.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    ap.add_argument("--alg", default="torchrec-own")
    ap.add_argument("--torchrec-src", default=None)
    ap.add_argument("--reservation", choices=("task-cap", "torchrec"), default="task-cap")
    ap.add_argument("--kernels", default=None,
                    help="comma-separated TorchRec compute kernels every table may use "
                         "(ParameterConstraints.compute_kernels), e.g. fused,dense to keep every "
                         "table in HBM; default: TorchRec's own choice among all it enumerates")
    ap.add_argument("--sharding-types", default=None,
                    help="comma-separated sharding types every table may use "
                         "(ParameterConstraints.sharding_types), e.g. table_wise,column_wise,"
                         "row_wise for a plan without data_parallel tables (which as-plan "
                         "--import cannot take); default: TorchRec's own choice")
    a = ap.parse_args()
    stypes = None
    if a.sharding_types is not None:
        stypes = [k.strip() for k in a.sharding_types.split(",") if k.strip()]
        known = {"data_parallel", "table_wise", "column_wise", "row_wise", "table_row_wise",
                 "table_column_wise", "grid_shard"}
        bad = [k for k in stypes if k not in known]
        if not stypes or bad:
            die("--sharding-types: unknown sharding type %r (TorchRec's: %s)"
                % (bad[0] if bad else a.sharding_types, ", ".join(sorted(known))), 2)
    kernels = None
    if a.kernels is not None:
        kernels = [k.strip() for k in a.kernels.split(",") if k.strip()]
        known = {"dense", "fused", "fused_uvm", "fused_uvm_caching", "key_value",
                 "quant", "quant_uvm", "quant_uvm_caching", "ssd_virtual_table",
                 "dram_virtual_table", "customized_kernel"}
        bad = [k for k in kernels if k not in known]
        if not kernels or bad:
            die("--kernels: unknown kernel %r (TorchRec's: %s)"
                % (bad[0] if bad else a.kernels, ", ".join(sorted(known))), 2)
    if aspipe.CTRL.search(a.alg) or not (1 <= len(a.alg.encode()) <= 63):
        die("--alg: %r is not a plan label: 1-63 bytes of UTF-8 text without control characters" % a.alg, 2)
    if a.output == "-" and sys.stdout is None:
        die("standard output: closed (give -o FILE)", 3)
    if a.input == "-" and sys.stdin is None:
        die("standard input: closed")
    if a.output != "-" and a.input != "-" and os.path.exists(a.input) and \
            os.path.abspath(a.output) == os.path.abspath(a.input):
        die("-o names the input", 2)

    recs = read_records(a.input)
    config, tables, tasks = parse_input(recs, a.input)
    if a.task is not None:
        sel = [t for t in tasks if t["id"] == a.task]
        if not sel:
            die("%s: no task %d (tasks: %s)" % (a.input, a.task,
                ", ".join(str(t["id"]) for t in tasks[:20])))
    else:
        sel = [t for t in tasks if a.split == "all" or t["split"] == a.split]
        if not sel:
            die("%s: no task of split %s" % (a.input, a.split))

    src = a.torchrec_src or os.environ.get("AS_TORCHREC_SRC") or None
    t0 = time.time()
    tr = import_torchrec(src)
    note("TorchRec imported from %s in %.1f s" % (
        os.path.dirname(os.path.dirname(os.path.abspath(
            sys.modules["torchrec"].__file__ or "."))), time.time() - t0))

    try:
        out = sys.stdout if a.output == "-" else open(a.output, "w")
    except OSError as e:
        die("-o %s: %s" % (a.output, e.strerror or e), 3)
    failed = 0
    for task in sel:
        try:
            doc, info = plan_task(tr, task, tables, config, a.reservation, kernels, stypes)
        except Exception as e:  # noqa: BLE001
            if os.environ.get("AS_DEBUG"):
                import traceback
                traceback.print_exc()
            note("task %d: TorchRec's planner failed: %s: %s"
                 % (task["id"], type(e).__name__, str(e).strip().splitlines()[0][:2000]
                    if str(e).strip() else ""))
            failed += 1
            continue
        doc = {"task": doc["task"], "alg": a.alg, "feasible": True,
               "world_size": doc["world_size"], "local_size": doc["local_size"],
               "module": doc["module"], "plan": doc["plan"]}
        try:
            out.write(json.dumps(doc, separators=(",", ":")) + "\n")
            out.flush()
        except OSError as e:
            die("%s: write error: %s" % (a.output if a.output != "-" else "standard output",
                                         e.strerror or e), 3)
        summary(doc, info, task["K"])
    try:
        out.close()     # standard output too: its errors here, not at the interpreter's exit
    except OSError as e:
        die("%s: write error: %s" % (a.output if a.output != "-" else "standard output",
                                     e.strerror or e), 3)
    if failed:
        note("%d of %d tasks failed" % (failed, len(sel)))
        sys.exit(1)


def _run():
    """main(), and standard output checked at the end: exit 3 when it cannot be written"""
    try:
        main()
        if sys.stdout is not None and not sys.stdout.closed:
            sys.stdout.flush()
    except OSError as e:                 # --help to a closed or full standard output
        note("standard output: %s" % (e.strerror or e))
        try:                             # no second error when Python flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        except OSError:
            pass
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(_run())
