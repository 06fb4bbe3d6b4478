#!/usr/bin/env python3
"""fuzz_torchrec_plan.py - run `torchrec_plan.py --check` on many hostile inputs.

    fuzz_torchrec_plan.py [--cases N] [--seed S] [--timeout SEC] [--mem MIB] [--jobs J]
                          [--keep DIR] [--script PATH] [--python EXE] [--list] [-v]

Writes each input to a file and runs `PYTHON SCRIPT --check FILE` (some cases with --config
CONFIG, some through standard input) in a child limited to --mem MiB of address space and
--timeout seconds. A run fails when it
  - runs past the timeout (a loop without bound) or is killed by a signal;
  - exits other than 0 or 1, or prints a Python traceback;
  - writes to stderr anything but lines `torchrec_plan: ...` (exit 1 with none, or exit 0
    with some, fail too), or to stdout anything but the per-plan lines `task ...`;
  - disagrees with what the case knows: a valid plan made here (every table_wise,
    column_wise and row_wise shape TorchRec's generators express, with and without its
    config) must pass, and a known-bad one (the tracebacks, hangs and silent acceptances of
    issue 36, a field of another JSON type than as-plan writes, a required field deleted,
    truncated JSON, deep nesting, huge numbers, NaN / Infinity, a repeated key, a half table
    with its config, ...) must exit 1. Cases that only mutate bytes or values of the same
    type must exit 0 or 1.
The first cases are the fixed ones (--list names them), then random ones from --seed. Each
failing input is kept as DIR/fail-SEED-N.json (and .cfg.json for its config); exit 1 when
any case failed, naming each; one summary line otherwise. Standard library only.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "pipelines", "torchrec_plan.py")

OK, BAD, ANY = 0, 1, None      # what a case expects: exit 0, exit 1, either

# the children's environment: the bounds at their defaults
ENV = {k: v for k, v in os.environ.items() if k != "AS_MAX_SHARDS"}

# the child: its address space limited (--mem MiB), no core dump, then the helper as a script
BOOT = ("import resource, runpy, sys; n = int(sys.argv[1]) << 20; "
        "resource.setrlimit(resource.RLIMIT_AS, (n, n)); resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
        "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')")


class Raw:
    """JSON text put in as it is (what json.dumps cannot write, or writes slowly)"""

    def __init__(self, text, bad=False, jtype="raw"):
        self.text, self.bad, self.jtype = text, bad, jtype


class Pairs:
    """an object written from its pairs, keys possibly repeated"""

    def __init__(self, pairs):
        self.pairs = pairs


def dump(v):
    """JSON text of v (Raw and Pairs allowed anywhere; NaN / Infinity as Python writes them)"""
    out = []

    def w(x):
        if isinstance(x, Raw):
            out.append(x.text)
        elif isinstance(x, Pairs):
            out.append("{")
            for i, (k, y) in enumerate(x.pairs):
                out.append(("," if i else "") + json.dumps(k) + ":")
                w(y)
            out.append("}")
        elif isinstance(x, dict):
            w(Pairs(list(x.items())))
        elif isinstance(x, list):
            out.append("[")
            for i, y in enumerate(x):
                if i:
                    out.append(",")
                w(y)
            out.append("]")
        else:
            out.append(json.dumps(x))
    w(v)
    return "".join(out)


def jtype(v):
    if isinstance(v, Raw):
        return v.jtype
    if isinstance(v, (dict, Pairs)):
        return "object"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    return {str: "str", list: "list"}.get(type(v), "?")


# ---- valid plans, as as-plan writes them ----------------------------------------------------

def valid_plan(rng, world=None):
    """(doc, config) of a random plan that converts: table_wise, column_wise (equal widths on
    any ranks, uneven ones on ranks 0, 1, ...) and row_wise (world_size blocks, block i on
    rank i) tables, optionally 2D parallel (dmp_collection)"""
    K = world or rng.choice([1, 2, 3, 4, 4, 8, rng.randint(1, 24)])
    L = rng.choice([1, 2, 4, 8, K])
    module = rng.choice(["", "sparse.ebc", "model.sparse_arch.embedding_bag_collection"])
    tables, cfg = {}, []
    for t in range(rng.randint(1, 6)):
        name = rng.choice([f"t{t}", f"t_cat_{t}", f"table-{t}.é"])
        rows = rng.choice([1, 7, 100, 10227, rng.randint(1, 10**7)])
        dim = 4 * rng.randint(1, 64)
        kinds = ["table_wise"] + (["column_wise"] if dim >= 8 else []) + (["row_wise"] if rows >= K and K > 1 else [])
        kind = rng.choice(kinds)
        if kind == "table_wise":
            pieces = [((0, 0), (rows, dim), rng.randrange(K))]
        elif kind == "column_wise":
            n = rng.choice([d for d in (2, 4) if dim % (4 * d) == 0] or [2])
            if dim % n == 0 and rng.random() < 0.6:
                w = dim // n
                pieces = [((0, i * w), (rows, w), rng.randrange(K)) for i in range(n)]
            else:
                n = min(n, K) if K > 1 else 1
                if n < 2:
                    pieces = [((0, 0), (rows, dim), 0)]
                    kind = "table_wise"
                else:
                    cut = sorted(rng.sample(range(1, dim), n - 1))
                    edges = [0] + cut + [dim]
                    pieces = [((0, edges[i]), (rows, edges[i + 1] - edges[i]), i) for i in range(n)]
        else:
            block = -(-rows // K)
            pieces = [((i * block, 0), (min(block, rows - i * block), dim), i) for i in range(K) if i * block < rows]
        tables[name] = {"sharding_type": kind, "compute_kernel": "fused", "ranks": [r for _, _, r in pieces],
                        "shards": [{"shard_offsets": list(o), "shard_sizes": list(z), "placement": f"rank:{r}/cuda:{r % L}"}
                                   for o, z, r in pieces]}
        cfg.append({"name": name, "num_embeddings": rows, "embedding_dim": dim})
    doc = {"task": rng.randint(0, 99), "alg": rng.choice(["size-greedy", "torchrec", "cost-greedy+split+refine+measured"]),
           "feasible": True, "world_size": K, "local_size": L, "module": module}
    if rng.random() < 0.25:
        G = rng.choice([2, 3])
        doc["dmp_collection"] = {"world_size": K * G, "sharding_group_size": K, "replicas": G,
                                 "shard_ranks": [[k * G + i for i in range(G)] for k in range(K)]}
    doc["plan"] = {module: tables}
    return doc, {"module_path": module, "topology": {"world_size": K, "batch_size_per_rank": 16}, "tables": cfg}


def with_table(doc, ps, name="x"):
    d = json.loads(json.dumps(doc))
    d["plan"][d["module"]][name] = ps
    return d


def base():
    """the plan of issue 36's examples: table t5 of 10227 x 32 (and t1) on 2 ranks"""
    doc = {"task": 0, "alg": "size-greedy", "feasible": True, "world_size": 2, "local_size": 8, "module": "",
           "plan": {"": {"t1": {"sharding_type": "table_wise", "compute_kernel": "fused", "ranks": [0],
                                "shards": [{"shard_offsets": [0, 0], "shard_sizes": [100, 16], "placement": "rank:0/cuda:0"}]},
                         "t5": {"sharding_type": "table_wise", "compute_kernel": "fused", "ranks": [1],
                                "shards": [{"shard_offsets": [0, 0], "shard_sizes": [10227, 32],
                                            "placement": "rank:1/cuda:1"}]}}}}
    cfg = {"topology": {"world_size": 2, "batch_size_per_rank": 16},
           "tables": [{"name": "t1", "num_embeddings": 100, "embedding_dim": 16},
                      {"name": "t5", "num_embeddings": 10227, "embedding_dim": 32}]}
    return doc, cfg


def edit(doc, fn):
    d = json.loads(json.dumps(doc))
    fn(d)
    return d


def t5(d):
    return d["plan"][""]["t5"]


def fixed_cases():
    """(name, text, config text or None, expected, via stdin) of the fixed cases"""
    doc, cfg = base()
    c = json.dumps(cfg)
    deep = "[" * 100000
    cases = [
        # issue 36, item 6: each a traceback before
        ("number", "5", None, BAD),
        ("null", "null", None, BAD),
        ("string plan", '"plan"', None, BAD),
        ("10^5 nested [", deep, None, BAD),
        ("world_size Infinity", dump(edit(doc, lambda d: d.update(world_size=Raw("Infinity")))), None, BAD),
        ("world_size NaN", dump(edit(doc, lambda d: d.update(world_size=Raw("NaN")))), None, BAD),
        ("world_size 1e999", dump(edit(doc, lambda d: d.update(world_size=Raw("1e999")))), None, BAD),
        ("plan a list", dump(edit(doc, lambda d: d.update(plan=[1]))), None, BAD),
        ("plan a string", dump(edit(doc, lambda d: d.update(plan="x"))), None, BAD),
        ("plan null", dump(edit(doc, lambda d: d.update(plan=None))), None, BAD),
        ("module's tables a list", dump(edit(doc, lambda d: d["plan"].update({"": []}))), None, BAD),
        ("table entry a string", dump(edit(doc, lambda d: d["plan"][""].update(t5="x"))), None, BAD),
        ("table entry null", dump(edit(doc, lambda d: d["plan"][""].update(t5=None))), None, BAD),
        ("shard_sizes []", dump(edit(doc, lambda d: t5(d)["shards"][0].update(shard_sizes=[]))), None, BAD),
        ("one-element shard_offsets", dump(edit(doc, lambda d: t5(d)["shards"][0].update(shard_offsets=[0]))), None, BAD),
        ("shard_sizes null", dump(edit(doc, lambda d: t5(d)["shards"][0].update(shard_sizes=None))), None, BAD),
        ("shards a string", dump(edit(doc, lambda d: t5(d).update(shards="x"))), None, BAD),
        ("ranks null", dump(edit(doc, lambda d: t5(d).update(ranks=None))), None, BAD),
        ("rank a float", dump(edit(doc, lambda d: t5(d).update(ranks=[1.5]))), None, BAD),
        ("a list of plans", dump([doc]), None, BAD),
        ("empty object", "{}", None, BAD),
        ("true", "true", None, BAD),
        ("no world_size", dump(edit(doc, lambda d: d.pop("world_size"))), None, BAD),
        ("world_size a string", dump(edit(doc, lambda d: d.update(world_size="2"))), None, BAD),
        # issue 36, item 7: a loop over range(world) (minutes), a MemoryError
        ("world_size 10^12", dump(edit(doc, lambda d: d.update(world_size=10**12))), None, BAD),
        ("world_size 10^9 table-wise", dump(edit(doc, lambda d: d.update(world_size=10**9))), None, BAD),
        ("world_size 65537", dump(edit(doc, lambda d: d.update(world_size=65537))), None, BAD),
        ("world_size 0", dump(edit(doc, lambda d: d.update(world_size=0))), None, BAD),
        ("65537 shards", dump(edit(doc, lambda d: t5(d).update(
            sharding_type="column_wise", ranks=[0] * 65537,
            shards=[{"shard_offsets": [0, i], "shard_sizes": [1, 1]} for i in range(65537)]))), None, BAD),
        # issue 36, item 4: half of table t5 (10227 x 32) as a table_wise shard, with its config
        ("half a table, config", dump(edit(doc, lambda d: t5(d)["shards"][0].update(shard_sizes=[5114, 32]))), c, BAD),
        ("half the columns, config", dump(edit(doc, lambda d: t5(d)["shards"][0].update(shard_sizes=[10227, 16]))), c, BAD),
        ("a table not in the config", dump(edit(doc, lambda d: d["plan"][""].update(t9=t5(d)))), c, BAD),
        ("the plan, config", dump(doc), c, OK),
        ("the plan, no config", dump(doc), None, OK),
        ("the plan, CRLF and blank lines", "\r\n" + dump(doc) + "\r\n\r\n", None, OK),
        ("world_size 65536", dump(edit(doc, lambda d: d.update(world_size=65536))), None, OK),
        # other hostile text
        ("empty", "", None, BAD),
        ("blank lines", "\n \n\t\n", None, BAD),
        ("byte order mark", "\ufeff" + dump(doc), None, BAD),
        ("not UTF-8", dump(doc)[:20] + "\udcff" + dump(doc)[20:], None, BAD),
        ("NUL bytes", "\0" * 64, None, BAD),
        ("a repeated key", dump(Pairs([("world_size", 2), ("world_size", 2)] + [(k, v) for k, v in doc.items()
                                                                                 if k != "world_size"])), None, BAD),
        ("a repeated table", dump(doc).replace('"t1":', '"t5":'), None, BAD),
        ("5000 digits", dump(edit(doc, lambda d: d.update(task=Raw("1" * 5000)))), None, BAD),
        ("deep object", dump(edit(doc, lambda d: d.update(extra=Raw('{"a":' * 50000 + "1" + "}" * 50000)))), None, BAD),
        ("control characters in a name", dump(edit(doc, lambda d: d["plan"][""].update({"a\u001b[31mRED\nx": t5(d)}))), None, BAD),
        ("a lone surrogate in a name", dump(edit(doc, lambda d: d["plan"][""].update({"\ud800": t5(d)}))), None, BAD),
        ("alg with a NUL", dump(edit(doc, lambda d: d.update(alg="size-greedy\u0000x"))), None, BAD),
        ("alg of 10^4 +", dump(edit(doc, lambda d: d.update(alg="+" * 10000))), None, BAD),
        ("task -1", dump(edit(doc, lambda d: d.update(task=-1))), None, BAD),
        ("truncated", dump(doc)[:-1], None, BAD),
        ("a valid plan then a truncated one", dump(doc) + "\n" + dump(doc)[:40], None, BAD),
        ("config not JSON", dump(doc), "{", BAD),
        ("config a list", dump(doc), "[]", BAD),
        ("config rows a string", dump(doc), c.replace("10227", '"10227"'), BAD),
        ("config rows 1e999", dump(doc), c.replace("10227", "1e999"), BAD),
        ("config deep", dump(doc), deep, BAD),
    ]
    out = [(n, t, cf, e, False) for n, t, cf, e in cases]
    out.append(("number through standard input", "5", None, BAD, True))
    out.append(("the plan through standard input", dump(doc), None, OK, True))
    return out


# ---- random cases ---------------------------------------------------------------------------

def hostile(rng):
    """a hostile JSON value (Python value or Raw text)"""
    return rng.choice([
        None, True, False, 0, -1, 1, 3, 2**31, 2**63, -2**63 - 1, 10**12, 10**30, 1.5, -0.0, 4.0, 1e308,
        "", "x", "4", "\u0000", "a\u001b[31m", "rank:0/cuda:0", "table_wise", "row_wise", "grid_shard",
        [], [1], [0, 0], [-1, 5], [[]], [None, None], {}, {"a": 1}, {"": {}},
        Raw("1e999", jtype="float"), Raw("-1e999", jtype="float"), Raw("NaN", bad=True), Raw("Infinity", bad=True),
        Raw("-Infinity", bad=True), Raw("1" + "0" * 5000, bad=True), Raw("[" * 100000, bad=True),
        Raw("[" * 3000 + "]" * 3000, jtype="list"), Raw('"\\ud800"', jtype="str"),
        list(range(rng.choice([1000, 100000]))), "x" * 100000, [0] * 70000,
    ])


def random_value(rng, depth=0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice([None, True, 0, -5, 7, 2**70, 0.5, "plan", "world_size", "", "t1"])
    if r < 0.7:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["plan", "world_size", "local_size", "module", "task", "alg", "shards", "ranks", "sharding_type",
            "shard_offsets", "shard_sizes", "", "t1"]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def paths(v, at=()):
    """every (path, value) inside v (not v itself)"""
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            out.append((at + (k,), x))
            out += paths(x, at + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.append((at + (i,), x))
            out += paths(x, at + (i,))
    return out


def container(doc, path):
    c = doc
    for k in path[:-1]:
        c = c[k]
    return c


# keys as-plan always writes that --check needs (deleting one must fail)
REQUIRED = {"plan", "world_size", "sharding_type", "shards", "shard_offsets", "shard_sizes", "ranks",
            "sharding_group_size", "replicas", "shard_ranks"}


def random_case(rng, i):
    """(name, text, config text or None, expected, via stdin)"""
    kind = rng.choice(["valid", "valid", "valid-config", "replace", "replace", "replace", "delete", "add",
                       "truncate", "bytes", "random", "multi", "config-mutate", "half-config"])
    doc, cfg = valid_plan(rng)
    stdin = rng.random() < 0.1
    if kind == "valid":
        return kind, dump(doc), None, OK, stdin
    if kind == "valid-config":
        return kind, dump(doc), dump(cfg), OK, stdin
    if kind == "replace":
        path, old = rng.choice(paths(doc))
        new = hostile(rng)
        container(doc, path)[path[-1]] = new
        # a field of another JSON type than as-plan writes, or text no JSON reader takes: exit 1
        bad = (isinstance(new, Raw) and new.bad) or jtype(new) != jtype(old)
        return f"replace {'.'.join(map(str, path))}", dump(doc), None, BAD if bad else ANY, stdin
    if kind == "delete":
        path, _ = rng.choice(paths(doc))
        c = container(doc, path)
        del c[path[-1]]
        key = path[-1]
        in_list = isinstance(key, int)
        parent = path[-2] if len(path) > 1 else None
        if in_list and parent in ("shard_offsets", "shard_sizes", "ranks", "shards", "shard_ranks"):
            exp = BAD            # a list one short
        elif in_list:
            exp = BAD if parent is not None and len(path) > 2 and path[-3] == "shard_ranks" else ANY
        elif key in REQUIRED:
            exp = BAD
        elif len(path) <= 3 and key not in ("task", "alg", "feasible", "local_size", "module", "dmp_collection",
                                            "compute_kernel", "placement"):
            exp = ANY            # a module or a table gone
        else:
            exp = OK             # an optional field gone
        return f"delete {'.'.join(map(str, path))}", dump(doc), None, exp, stdin
    if kind == "add":
        path, v = rng.choice([(p, x) for p, x in paths(doc) if isinstance(x, dict)] or [((), doc)])
        v["unknown_field"] = hostile(rng)
        bad = isinstance(v["unknown_field"], Raw) and v["unknown_field"].bad
        return "add a field", dump(doc), None, BAD if bad else ANY, stdin
    if kind == "truncate":
        t = dump(doc)
        return "truncate", t[:rng.randrange(len(t))], None, BAD, stdin
    if kind == "bytes":
        t = bytearray(dump(doc).encode())
        for _ in range(rng.randint(1, 8)):
            p = rng.randrange(len(t))
            op = rng.randrange(4)
            if op == 0:
                t[p] = rng.randrange(256)
            elif op == 1:
                t[p:p] = bytes([rng.choice([0, 0x1b, 0x0a, 0x0d, 0xff, 0xc3, 0x22, 0x5c, 0x7b, 0x5b])])
            elif op == 2:
                del t[p:p + rng.randint(1, 16)]
            else:
                q = rng.randrange(len(t))
                t[p:p] = t[q:q + rng.randint(1, 64)]
        return "bytes", t.decode("utf-8", "surrogateescape"), None, ANY, stdin
    if kind == "random":
        v = random_value(rng)
        return "random structure", dump(v), None, BAD if not isinstance(v, dict) or "plan" not in v else ANY, stdin
    if kind == "multi":
        docs = [valid_plan(rng)[0] for _ in range(rng.randint(1, 4))]
        bad = rng.random() < 0.5
        if bad:
            j = rng.randrange(len(docs))
            docs[j]["world_size"] = rng.choice([0, -3, 10**12, "4", None, 1.5, Raw("Infinity", bad=True)])
        return "several plans", "\n".join(dump(d) for d in docs) + "\n", None, BAD if bad else OK, stdin
    if kind == "config-mutate":
        path, old = rng.choice(paths(cfg))
        new = hostile(rng)
        container(cfg, path)[path[-1]] = new
        bad = (isinstance(new, Raw) and new.bad) or (path[-1] in ("tables", "name", "num_embeddings", "embedding_dim")
                                                     or (len(path) == 2 and path[0] == "tables")) and jtype(new) != jtype(old)
        return f"config {'.'.join(map(str, path))}", dump(doc), dump(cfg), BAD if bad else ANY, stdin
    # half-config: a table's shards no longer cover its config's size
    t = rng.choice(cfg["tables"])
    t["num_embeddings" if rng.random() < 0.5 else "embedding_dim"] += rng.choice([1, 5, 10**6])
    return "shards short of the config's table", dump(doc), dump(cfg), BAD, stdin


# ---- running ----------------------------------------------------------------------------------

def run_case(args, n, case, tmp):
    name, text, cfg, expected, stdin = case
    data = text.encode("utf-8", "surrogateescape")
    path = os.path.join(tmp, f"case-{n}.json")
    with open(path, "wb") as f:
        f.write(data)
    cmd = [args.python, "-c", BOOT, str(args.mem), args.script, "--check"]
    if cfg is not None:
        cpath = os.path.join(tmp, f"case-{n}.cfg.json")
        with open(cpath, "wb") as f:
            f.write(cfg.encode("utf-8", "surrogateescape"))
        cmd += ["--config", cpath]
    cmd.append("-" if stdin else path)
    t0 = time.monotonic()
    try:
        with open(path, "rb") if stdin else open(os.devnull, "rb") as fin:
            p = subprocess.run(cmd, stdin=fin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout,
                               env=ENV)
    except subprocess.TimeoutExpired:
        return name, f"ran past {args.timeout} s", time.monotonic() - t0, ""
    dt = time.monotonic() - t0
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    why = None
    if p.returncode < 0:
        why = f"killed by signal {-p.returncode}"
    elif "Traceback (most recent call last)" in err:
        why = "a Python traceback"
    elif p.returncode not in (0, 1):
        why = f"exit {p.returncode}"
    elif any(not ln.startswith("torchrec_plan: ") for ln in err.splitlines()):
        why = "a stderr line that is not 'torchrec_plan: ...'"
    elif p.returncode == 1 and not err:
        why = "exit 1 without a message"
    elif p.returncode == 0 and err:
        why = "exit 0 with a message"
    elif any(not ln.startswith("task ") for ln in out.splitlines()):
        why = "a stdout line that is not 'task ...'"
    elif expected is not None and p.returncode != expected:
        why = f"exit {p.returncode}, expected {expected}"
    return name, why, dt, (err.splitlines() or [""])[-1][:300]


def main():
    ap = argparse.ArgumentParser(description="run torchrec_plan.py --check on hostile inputs")
    ap.add_argument("--cases", type=int, default=300, help="cases in all, the fixed ones first (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=10, help="seconds per case (default 10)")
    ap.add_argument("--mem", type=int, default=1024, help="MiB of address space per case (default 1024)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    ap.add_argument("--keep", default=tempfile.gettempdir(), help="where failing inputs are kept (default $TMPDIR)")
    ap.add_argument("--script", default=SCRIPT, help="the helper under test (default pipelines/torchrec_plan.py)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs it (default this one)")
    ap.add_argument("--list", action="store_true", help="name the fixed cases and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per case")
    a = ap.parse_args()
    fixed = fixed_cases()
    if a.list:
        for c in fixed:
            print(c[0])
        return 0
    if a.cases < 1 or a.timeout <= 0 or a.mem < 64 or a.jobs < 1:
        ap.error("--cases, --jobs >= 1, --timeout > 0, --mem >= 64")
    rng = random.Random(a.seed)
    cases = fixed[:a.cases] + [random_case(rng, i) for i in range(max(0, a.cases - len(fixed)))]
    t0 = time.monotonic()
    failed = 0
    slowest = (0.0, "")
    with tempfile.TemporaryDirectory(prefix="fuzz_torchrec_plan.") as tmp, ThreadPoolExecutor(a.jobs) as ex:
        results = ex.map(lambda nc: run_case(a, nc[0], nc[1], tmp), enumerate(cases))
        for n, (case, (name, why, dt, last)) in enumerate(zip(cases, results)):
            slowest = max(slowest, (dt, name))
            if a.verbose:
                print(f"case {n} ({name}): {why or 'ok'}, {dt:.2f} s: {last}")
            if why:
                failed += 1
                keep = os.path.join(a.keep, f"fail-{a.seed}-{n}.json")
                with open(keep, "wb") as f:
                    f.write(case[1].encode("utf-8", "surrogateescape"))
                if case[2] is not None:
                    with open(keep[:-5] + ".cfg.json", "wb") as f:
                        f.write(case[2].encode("utf-8", "surrogateescape"))
                print(f"fuzz_torchrec_plan: case {n} ({name}{', standard input' if case[4] else ''}"
                      f"{', with a config' if case[2] is not None else ''}): {why}; input kept in {keep}"
                      f"{'; stderr: ' + last if last else ''}", file=sys.stderr)
    print(f"fuzz_torchrec_plan: {len(cases)} cases ({min(len(fixed), len(cases))} fixed, seed {a.seed}), "
          f"{failed} failed, {time.monotonic() - t0:.1f} s (slowest {slowest[0]:.2f} s: {slowest[1]})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
