#!/usr/bin/env python3
"""torchrec_plan.py - turn `as-plan --format torchrec` output into a TorchRec ShardingPlan.

as-plan writes one JSON document per line, one per (task, algorithm):
  {"task": 3, "alg": "lookup-greedy", "world_size": K, "local_size": L, "module": "",
   "dmp_collection": {...}  (only with --world-size),
   "plan": {"": {"t17": {"sharding_type": "table_wise", "compute_kernel": "fused",
            "ranks": [r], "shards": [{"shard_offsets": [0, 0], "shard_sizes": [rows, dim],
            "placement": "rank:r/cuda:r%L"}]}, ...}}}
Tables are keyed by their names in the model when the plan came from a model config
(as-convert --config, which also gives the module path); otherwise they are named "t<id>":
name the EmbeddingBagConfigs of your EmbeddingBagCollection the same way (or pass --rename).
world_size is the sharding group's size K: under 2D parallelism
(DMPCollection) this is the plan of one group, which DMPCollection replicates and remaps to
global ranks (dmp_collection.shard_ranks lists them: shard k on ranks k*G + i).

Library use:
    from torchrec_plan import load_plans, sharding_plan
    doc = load_plans("plans.json", task=3, alg="lookup-greedy")
    ebc = resolve_module(doc, model)         # the (unsharded) EmbeddingBagCollection at
                                             # doc["module"] in the model
    plan = sharding_plan(doc, ebc)           # checks first (check_module): every table by
                                             # name and size against the module's, errors
                                             # naming the table
    model = DistributedModelParallel(model, plan=plan, ...)   # or DMPCollection(...)

Split tables (as-plan --split-tables, --alg torchrec) convert where TorchRec's generators
can express them: column_wise (equal widths on any ranks, uneven ones on ranks 0, 1, ...)
and row_wise (world_size blocks of ceil(rows / world_size) rows, block i on rank i); other
splits are an error naming the table (see _expressible).

Command line (checks a file, or standard input: every plan converts; prints each plan's
per-rank table counts; needs no torchrec; exit 1 when a plan cannot be converted):
    python3 pipelines/torchrec_plan.py [--check] [plans.json | -] [--task N] [--alg NAME]
"""
import argparse
import json
import sys
from collections import Counter


def load_plans(path, task=None, alg=None):
    """The plans of a file (JSON lines), filtered by task and algorithm. With both given,
    returns the one matching plan (a dict); otherwise the list."""
    docs = []
    with (open(path) if path != "-" else open(sys.stdin.fileno(), closefd=False)) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {n}: not JSON: {e}") from None
            if "plan" not in d:
                raise ValueError(f"{path}: line {n}: no 'plan' object")
            if (task is None or d.get("task") == task) and (alg is None or d.get("alg") == alg):
                docs.append(d)
    if task is not None and alg is not None:
        if len(docs) != 1:
            raise ValueError(f"{path}: {len(docs)} plans for task {task}, alg {alg}")
        return docs[0]
    return docs


def _qual(module, name):
    """a table's name qualified by its collection's path ("" : the model itself)"""
    return f"{module}.{name}" if module else name


def _expressible(module, name, ps, world):
    """(generator name, keyword arguments) of TorchRec's sharding_plan.py that reproduce the
    sharding ps of table `name` (as-plan's JSON), or ValueError naming the table. TorchRec's
    public generators (torchrec/distributed/sharding_plan.py, meta-pytorch/torchrec, read
    2026-11-26) express: table_wise(rank); column_wise(ranks) with equal column widths on any
    ranks (reused ranks allowed), or column_wise(size_per_rank) with the widths on ranks
    0, 1, ... in order; row_wise() with world_size blocks of ceil(rows / world_size) rows,
    block i on rank i. Anything else (row pieces on other ranks, uneven column pieces on other
    ranks, grid shards) cannot go through construct_module_sharding_plan."""
    where = _qual(module, name)
    kind = ps.get("sharding_type")
    shards = ps.get("shards") or []
    ranks = [int(r) for r in ps.get("ranks", [])]
    ck = ps.get("compute_kernel")
    if not shards or len(shards) != len(ranks):
        raise ValueError(f"{where}: {len(shards)} shards for {len(ranks)} ranks")
    for r in ranks:
        if not 0 <= r < world:
            raise ValueError(f"{where}: rank {r} is not in 0..{world - 1}")
    offs = [tuple(int(x) for x in sh["shard_offsets"]) for sh in shards]
    sizes = [tuple(int(x) for x in sh["shard_sizes"]) for sh in shards]
    if kind == "table_wise":
        if len(ranks) != 1 or offs[0] != (0, 0):
            raise ValueError(f"{where}: table_wise with {len(ranks)} shards")
        return "table_wise", {"rank": ranks[0], "compute_kernel": ck}
    order = sorted(range(len(shards)), key=lambda i: (offs[i][0], offs[i][1]))
    offs = [offs[i] for i in order]
    sizes = [sizes[i] for i in order]
    ranks = [ranks[i] for i in order]
    if kind == "column_wise":
        rows = sizes[0][0]
        col = 0
        for (r0, c0), (nr, nc) in zip(offs, sizes):
            if r0 != 0 or nr != rows or c0 != col or nc < 1:
                raise ValueError(f"{where}: column_wise shards do not tile the columns in order")
            col += nc
        widths = [nc for (_, nc) in sizes]
        if len(set(widths)) == 1:
            return "column_wise", {"ranks": ranks, "compute_kernel": ck}
        if ranks == list(range(len(ranks))):
            return "column_wise", {"size_per_rank": widths, "compute_kernel": ck}
        raise ValueError(f"{where}: column pieces of widths {widths} on ranks {ranks}: TorchRec's column_wise "
                         "takes uneven widths (size_per_rank) only on ranks 0, 1, ... in order")
    if kind == "row_wise":
        cols = sizes[0][1]
        rows = sum(nr for (nr, _) in sizes)
        block = -(-rows // world)
        want = [(i * block, min(block, rows - i * block)) for i in range(world) if i * block < rows]
        got = [(r0, nr) for (r0, _), (nr, nc) in zip(offs, sizes)]
        if any(c0 != 0 or nc != cols for (_, c0), (_, nc) in zip(offs, sizes)) or got != want or \
                ranks != list(range(len(ranks))):
            raise ValueError(f"{where}: row pieces {[f'{r0}+{nr}' for r0, nr in got]} on ranks {ranks}: TorchRec's "
                             f"row_wise places {world} blocks of {block} rows, block i on rank i; this split "
                             "cannot go through construct_module_sharding_plan")
        return "row_wise", {"compute_kernel": ck}
    raise ValueError(f"{where}: {kind} shardings are not converted")


def table_shardings(doc):
    """{module: {table: (generator name, kwargs)}} of one plan document; ValueError names the
    first table TorchRec's generators cannot express (see _expressible)."""
    world = int(doc["world_size"])
    return {module: {name: _expressible(module, name, ps, world) for name, ps in tables.items()}
            for module, tables in doc["plan"].items()}


def table_ranks(doc):
    """{module: {table: [ranks]}} from one plan document (as written, no conversion)."""
    return {module: {name: [int(r) for r in ps.get("ranks", [])] for name, ps in tables.items()}
            for module, tables in doc["plan"].items()}


def _module_tables(module, fqn):
    """{name: (num_embeddings, embedding_dim)} of an EmbeddingBagCollection: its
    embedding_bag_configs(), or (a stand-in built with torch) its embedding_bags ModuleDict
    of nn.EmbeddingBag, whose weights give the sizes."""
    if hasattr(module, "embedding_bag_configs"):
        cfgs = module.embedding_bag_configs()
        return {c.name: (int(c.num_embeddings), int(c.embedding_dim)) for c in cfgs}
    bags = getattr(module, "embedding_bags", None)
    if bags is None and hasattr(module, "items"):
        bags = module        # the collection's ModuleDict itself (as-plan's default path)
    if bags is not None and hasattr(bags, "items"):
        return {name: tuple(int(x) for x in bag.weight.shape) for name, bag in bags.items()}
    raise ValueError(f"module '{fqn}' is not an EmbeddingBagCollection (no embedding_bag_configs(), "
                     "no embedding_bags)")


def resolve_module(doc, model):
    """The module at doc["module"] inside model ("" or the model's own path: model itself),
    or ValueError naming the first missing attribute."""
    fqn = doc["module"]
    m = model
    for part in [p for p in fqn.split(".") if p] if fqn else []:
        if not hasattr(m, part):
            if part == fqn.split(".")[0] and (hasattr(m, "embedding_bag_configs") or hasattr(m, "embedding_bags")):
                return m      # given the collection itself
            raise ValueError(f"module path '{fqn}': the model has no '{part}' there (as-plan --module, or the "
                             "config's module_path, names the EmbeddingBagCollection's path in the model)")
        m = getattr(m, part)
    return m


def check_module(doc, module, rename=None):
    """Check one plan document against the module's tables before converting it: every table
    of the plan is a table of the module and the other way round, and each table's shards
    tile exactly its num_embeddings x embedding_dim. ValueError naming the table."""
    fqn = doc["module"]
    have = _module_tables(module, fqn)
    plan = {(rename or {}).get(k, k): v for k, v in doc["plan"][fqn].items()}
    for name in plan:
        if name not in have:
            raise ValueError(f"{_qual(fqn, name)}: the plan's table is not a table of the module (it has "
                             f"{len(have)}: {', '.join(sorted(have)[:5])}{', ...' if len(have) > 5 else ''})")
    for name in have:
        if name not in plan:
            raise ValueError(f"{_qual(fqn, name)}: the module's table has no sharding in the plan")
    for name, ps in plan.items():
        rows, dim = have[name]
        shards = ps.get("shards") or []
        if not shards:
            raise ValueError(f"{_qual(fqn, name)}: no shards in the plan")
        area = sum(int(s["shard_sizes"][0]) * int(s["shard_sizes"][1]) for s in shards)
        r1 = max(int(s["shard_offsets"][0]) + int(s["shard_sizes"][0]) for s in shards)
        c1 = max(int(s["shard_offsets"][1]) + int(s["shard_sizes"][1]) for s in shards)
        if (r1, c1) != (rows, dim) or area != rows * dim:
            raise ValueError(f"{_qual(fqn, name)}: the plan's shards cover {r1} x {c1} ({area} elements), the module's "
                             f"table is {rows} x {dim} (num_embeddings x embedding_dim)")


def sharding_plan(doc, module, device_type="cuda", rename=None):
    """A torchrec ShardingPlan for `module` (the unsharded EmbeddingBagCollection named by
    doc["module"]) from one plan document, through construct_module_sharding_plan with the
    generators table_shardings() chose (compute_kernel passed on). rename maps as-plan's
    table names ("t17") to the module's; tables of the module absent from the plan are an
    error (construct_module_sharding_plan asserts that the keys are its parameters)."""
    from torchrec.distributed import sharding_plan as sp
    from torchrec.distributed.types import ShardingPlan

    fqn = doc["module"]
    if not isinstance(module, str):      # (the test double passes a name, not a module)
        check_module(doc, module, rename)
    specs = table_shardings(doc)[fqn]
    if rename:
        specs = {rename.get(k, k): v for k, v in specs.items()}
    per_param = {name: getattr(sp, gen)(**kw) for name, (gen, kw) in specs.items()}
    plan = sp.construct_module_sharding_plan(
        module,
        per_param_sharding=per_param,
        local_size=int(doc["local_size"]),
        world_size=int(doc["world_size"]),
        device_type=device_type,
    )
    return ShardingPlan({fqn: plan})


def main():
    ap = argparse.ArgumentParser(description="check as-plan --format torchrec output")
    ap.add_argument("file", nargs="?", default="-", help="as-plan --format torchrec output (default: standard input)")
    ap.add_argument("--check", action="store_true",
                    help="check that every plan converts (what the command line always does; needs no torchrec)")
    ap.add_argument("--task", type=int)
    ap.add_argument("--alg")
    a = ap.parse_args()
    try:
        docs = load_plans(a.file, a.task, a.alg)
    except (OSError, ValueError) as e:
        print(f"torchrec_plan: {e}", file=sys.stderr)
        return 1
    if isinstance(docs, dict):
        docs = [docs]
    if not docs:
        print(f"torchrec_plan: {a.file}: no plan{' of that task and algorithm' if a.task is not None or a.alg else ''}",
              file=sys.stderr)
        return 1
    bad = 0
    for d in docs:
        try:
            shardings = table_shardings(d)
        except (KeyError, TypeError, ValueError) as e:
            print(f"torchrec_plan: task {d.get('task')} {d.get('alg')}: {e}", file=sys.stderr)
            bad += 1
            continue
        for module, tr in table_ranks(d).items():
            per_rank = Counter(r for rs in tr.values() for r in set(rs))
            kinds = Counter(g for g, _ in shardings[module].values())
            counts = " ".join(f"{r}:{per_rank.get(r, 0)}" for r in range(int(d["world_size"])))
            how = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            print(f"task {d.get('task')} {d.get('alg')} {module or '(the model itself)'}: {len(tr)} tables ({how}); "
                  f"tables per rank {counts}")
    if bad:
        print(f"torchrec_plan: {bad} of {len(docs)} plans cannot go through construct_module_sharding_plan",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
