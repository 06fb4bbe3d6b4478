#!/usr/bin/env python3
"""torchrec_plan.py - turn `as-plan --format torchrec` output into a TorchRec ShardingPlan.

as-plan writes one JSON document per line, one per (task, algorithm):
  {"task": 3, "alg": "lookup-greedy", "world_size": K, "local_size": L, "module": "embedding_bags",
   "dmp_collection": {...}  (only with --world-size),
   "plan": {"embedding_bags": {"t17": {"sharding_type": "table_wise", "compute_kernel": "fused",
            "ranks": [r], "shards": [{"shard_offsets": [0, 0], "shard_sizes": [rows, dim],
            "placement": "rank:r/cuda:r%L"}]}, ...}}}
Tables are named "t<id>"; name the EmbeddingBagConfigs of your EmbeddingBagCollection the same
way (or pass --rename). world_size is the sharding group's size K: under 2D parallelism
(DMPCollection) this is the plan of one group, which DMPCollection replicates and remaps to
global ranks (dmp_collection.shard_ranks lists them: shard k on ranks k*G + i).

Library use:
    from torchrec_plan import load_plans, sharding_plan
    doc = load_plans("plans.json", task=3, alg="lookup-greedy")
    plan = sharding_plan(doc, ebc)           # ebc: the (unsharded) EmbeddingBagCollection
    model = DistributedModelParallel(model, plan=plan, ...)   # or DMPCollection(...)

Command line (checks a file, prints each plan's per-rank table counts; needs no torchrec):
    python3 pipelines/torchrec_plan.py plans.json [--task N] [--alg NAME]
"""
import argparse
import json
import sys
from collections import Counter


def load_plans(path, task=None, alg=None):
    """The plans of a file (JSON lines), filtered by task and algorithm. With both given,
    returns the one matching plan (a dict); otherwise the list."""
    docs = []
    with open(path) as f:
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


def table_ranks(doc):
    """{module: {table: rank}} from one plan document."""
    out = {}
    for module, tables in doc["plan"].items():
        out[module] = {}
        for name, ps in tables.items():
            if ps.get("sharding_type") != "table_wise" or len(ps.get("ranks", [])) != 1:
                raise ValueError(f"{module}.{name}: {ps.get('sharding_type')} (a table split by as-plan --split-tables): "
                                 "this script converts table_wise shardings only so far")
            out[module][name] = int(ps["ranks"][0])
    return out


def sharding_plan(doc, module, device_type="cuda", rename=None):
    """A torchrec ShardingPlan for `module` (the unsharded EmbeddingBagCollection named by
    doc["module"]) from one plan document. rename maps as-plan's table names ("t17") to the
    module's; tables of the module absent from the plan are an error."""
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingPlan

    fqn = doc["module"]
    ranks = table_ranks(doc)[fqn]
    if rename:
        ranks = {rename.get(k, k): v for k, v in ranks.items()}
    per_param = {name: table_wise(rank=r) for name, r in ranks.items()}
    plan = construct_module_sharding_plan(
        module,
        per_param_sharding=per_param,
        local_size=int(doc["local_size"]),
        world_size=int(doc["world_size"]),
        device_type=device_type,
    )
    return ShardingPlan({fqn: plan})


def main():
    ap = argparse.ArgumentParser(description="check as-plan --format torchrec output")
    ap.add_argument("file")
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
    for d in docs:
        for module, tr in table_ranks(d).items():
            per_rank = Counter(tr.values())
            counts = " ".join(f"{r}:{per_rank.get(r, 0)}" for r in range(int(d["world_size"])))
            print(f"task {d.get('task')} {d.get('alg')} {module}: {len(tr)} tables; tables per rank {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
