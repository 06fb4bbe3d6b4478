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
and row_wise (world_size blocks of ceil(rows / world_size) rows, block i on rank i);
data_parallel tables (as-plan writes "ranks" every rank and no "shards") convert to
data_parallel(); other splits are an error naming the table (see _expressible).

Command line (checks a file, or standard input: every plan converts; prints each plan's
per-rank table counts; needs no torchrec; exit 1 when a plan cannot be converted):
    python3 pipelines/torchrec_plan.py [--check] [plans.json | -] [--task N] [--alg NAME]
                                       [--config MODEL.json]
--config: the model config the plans were made from (as-convert --config's JSON): with the
sizes of its tables (num_embeddings x embedding_dim) known, every table of a plan must be one
of the config's and its shards must cover exactly the whole table (a table_wise shard of half
the rows is an error naming the table). A plan may hold a subset of the config's tables.

Every input is checked before it is used, so that no input makes it fail other than with one
line `torchrec_plan: ...` on stderr and exit 1 (3: out of memory, or standard output cannot
be written), loop or allocate without bound. The bounds: world_size and local_size 1..65536
(MAX_WORLD: a model config's topology bound and as-plan's shards per plan, docs/FORMAT.md;
AS_MAX_SHARDS raises it up to 1048576 as it does for the C tools), at most 65536 shards per
table or MAX_WORLD if that is more (MAX_SHARDS), offsets, sizes and their ends within 0..2^63-1, task ids 0..2^63-1, algorithm
labels of at most 63 bytes, lines of at most 64 MiB (MAX_LINE), strict JSON: no NaN or
Infinity, no key repeated in an object, integers of at most 1,000 digits, nesting as deep as
Python's recursion limit allows (an error beyond). tests/tools/fuzz_torchrec_plan.py runs
--check on many hostile inputs (tests/fuzz/README.md).
"""
import argparse
import json
import os
import re
import sys
from collections import Counter

MAX_WORLD = 65536          # world_size, local_size, dmp_collection's world_size (AS_MAX_SHARDS)
MAX_SHARDS = 65536         # shards of one table (at least MAX_WORLD)
HARD_MAX_WORLD = 1 << 20   # AS_MAX_SHARDS's hard maximum (lib/records/reclimits.c)
MAX_I64 = 2**63 - 1        # offsets, sizes and their ends; task ids
MAX_LINE = 64 << 20        # bytes of one line of plans (and of a --config file)
MAX_DIGITS = 1000          # digits of a JSON integer
MAX_ALG = 63               # bytes of an algorithm label (as-plan's labels fit 64 with the NUL)


# ---- messages ----------------------------------------------------------------------------

def _show(v, limit=60):
    """a JSON value as a message shows it: short, one line, no control characters"""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        if len(v) <= 4 and not any(isinstance(x, (list, dict)) for x in v):
            return "[" + ", ".join(_show(x, 20) for x in v) + "]"
        return f"a list of {len(v)}"
    if isinstance(v, int):
        return str(v) if v.bit_length() <= 64 else f"an integer of {v.bit_length()} bits"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v[:limit]) + ("..." if len(v) > limit else "")
    return type(v).__name__


def _name(s, limit=200):
    """a name (table, module, algorithm, file) for a message: as it is when printable, else
    JSON-escaped, so that no control character reaches the terminal; cut at `limit`"""
    if not isinstance(s, str):
        return _show(s)
    if s.isprintable() and len(s) <= limit:
        return s
    return json.dumps(s[:limit]) + ("..." if len(s) > limit else "")


def _qual(module, name):
    """a table's name qualified by its collection's path ("" : the model itself)"""
    return f"{_name(module)}.{_name(name)}" if module else _name(name)


_CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_BADNAME = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")   # refused in names


def bad_name(s):
    """why s is not a name (a table's name, a plan's alg label, ...), None when it is one: THE
    rule of every name and label of autoshard's records, as the C tools check it (as_name_bad,
    lib/core/msgobj.h): a non-empty string, no C0 or C1 control character, DEL, U+2028 or
    U+2029, no unpaired surrogate (C: valid UTF-8)"""
    if not isinstance(s, str):
        return f"is {_show(s)}, not a string"
    if not s:
        return "is empty"
    m = _BADNAME.search(s)
    if m:
        c = m.group()
        what = "an unpaired surrogate" if "\ud800" <= c <= "\udfff" else \
            "a line separator" if c in "\u2028\u2029" else "a control character"
        return f"holds {what} (U+{ord(m.group()):04X} at offset {m.start()})"
    return None


def _err(msg):
    """one line on stderr: torchrec_plan: msg (control characters escaped)"""
    msg = _CTRL.sub(lambda m: json.dumps(m.group())[1:-1], str(msg))
    if sys.stderr is not None:           # (closed: print would write to standard output)
        try:
            print(f"torchrec_plan: {msg}", file=sys.stderr)
        except (OSError, ValueError):
            pass


# ---- strict JSON -------------------------------------------------------------------------

def _no_constant(c):
    raise ValueError(f"{c} is not JSON")


def _int(s):
    if len(s) > MAX_DIGITS + 1:
        raise ValueError(f"an integer of {len(s.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(s)


def _object(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"key {_show(k)} repeated in an object")
        d[k] = v
    return d


def parse_json(text, where):
    """one JSON document of `text`, strictly (no NaN / Infinity, no repeated key, integers of
    at most MAX_DIGITS digits), or ValueError `where: not JSON: ...`"""
    if text.startswith("\ufeff"):
        raise ValueError(f"{where}: begins with a UTF-8 byte order mark (not JSON: remove it)")
    try:
        return json.loads(text, parse_int=_int, parse_constant=_no_constant, object_pairs_hook=_object)
    except RecursionError:
        raise ValueError(f"{where}: not JSON: nested too deeply") from None
    except ValueError as e:          # json.JSONDecodeError, and the hooks' errors
        raise ValueError(f"{where}: not JSON: {e}") from None


def _open(path):
    if path == "-" and sys.stdin is None:        # started with standard input closed (<&-)
        raise ValueError("standard input: closed")
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False) if path == "-" else open(path, "rb")
    except OSError as e:
        raise ValueError(f"{_name(path)}: cannot open: {e.strerror}") from None


def _decode(raw, where):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not UTF-8 text (byte {e.start + 1})") from None


def _read_lines(path):
    """(line number, text) of each line of a file ("-": standard input), each at most MAX_LINE
    bytes: a file without newlines (/dev/zero) is an error, not a line without end"""
    with _open(path) as f:
        n = 0
        while True:
            try:
                raw = f.readline(MAX_LINE + 1)
            except OSError as e:
                raise ValueError(f"{_name(path)}: cannot read: {e.strerror}") from None
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                raise ValueError(f"{_name(path)}: line {n}: longer than {MAX_LINE} bytes (one plan a line)")
            yield n, _decode(raw, f"{_name(path)}: line {n}")


# ---- the shape of a plan document --------------------------------------------------------

def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _int_field(d, key, lo, hi, where, required=True):
    if key not in d:
        if required:
            raise ValueError(f"{where}: no '{key}'")
        return None
    v = d[key]
    if not _is_int(v) or not lo <= v <= hi:
        raise ValueError(f"{where}: {key} {_show(v)} is not an integer in {lo}..{hi}")
    return v


def check_doc(doc, where="plan"):
    """ValueError unless `doc` is shaped as as-plan writes one plan: an object whose `plan` is
    {module: {table: object}}, world_size in 1..MAX_WORLD, local_size (when given) too, task
    (when given) an integer >= 0, alg (when given) a printable string of at most MAX_ALG bytes,
    module (when given) a string, no control character in it or in a table name, feasible
    (when given) true, dmp_collection (when given) the replicas of the sharding group as
    as-plan writes them. Each table's sharding is
    checked when it is used (_sharding), naming the table."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: not a JSON object but {_show(doc)}")
    if "plan" not in doc:
        raise ValueError(f"{where}: no 'plan' object")
    plan = doc["plan"]
    if not isinstance(plan, dict):
        raise ValueError(f"{where}: 'plan' is {_show(plan)}, not an object {{module: {{table: sharding}}}}")
    if not plan:
        raise ValueError(f"{where}: 'plan' is empty (no module)")
    for module, tables in plan.items():
        if _BADNAME.search(module):
            raise ValueError(f"{where}: plan {_show(module)}: a control character or an unpaired surrogate "
                             "in the module path")
        if not isinstance(tables, dict):
            raise ValueError(f"{where}: plan {_show(module)} is {_show(tables)}, not an object {{table: sharding}}")
        for name, ps in tables.items():
            if not name:
                raise ValueError(f"{where}: plan {_show(module)} has a table named \"\"")
            if bad_name(name):
                raise ValueError(f"{where}: plan {_show(module)}: table {_show(name)}: a control character or an "
                                 "unpaired surrogate in the name")
            if not isinstance(ps, dict):
                raise ValueError(f"{where}: {_qual(module, name)}: the sharding is {_show(ps)}, not an object")
    world = _int_field(doc, "world_size", 1, MAX_WORLD, where)
    _int_field(doc, "local_size", 1, MAX_WORLD, where, required=False)
    _int_field(doc, "task", 0, MAX_I64, where, required=False)
    if "alg" in doc:
        alg = doc["alg"]
        if bad_name(alg) or len(alg.encode("utf-8", "replace")) > MAX_ALG:
            raise ValueError(f"{where}: alg {_show(alg)} is not an algorithm label (printable, 1..{MAX_ALG} bytes)")
    if "module" in doc:
        m = doc["module"]
        if not isinstance(m, str) or _BADNAME.search(m):
            raise ValueError(f"{where}: module {_show(m)} is not a module path (a string without control characters)")
    if "feasible" in doc and doc["feasible"] is not True:
        raise ValueError(f"{where}: feasible is {_show(doc['feasible'])}, not true (as-plan writes feasible plans only)")
    if "dmp_collection" in doc:
        dc = doc["dmp_collection"]
        w = f"{where}: dmp_collection"
        if not isinstance(dc, dict):
            raise ValueError(f"{w} is {_show(dc)}, not an object")
        W = _int_field(dc, "world_size", 1, MAX_WORLD, w)
        if W % world:
            raise ValueError(f"{w}: world_size {W} is not a multiple of the plan's world_size {world}")
        G = W // world
        if dc.get("sharding_group_size") != world or dc.get("replicas") != G or \
                not _is_int(dc.get("sharding_group_size")) or not _is_int(dc.get("replicas")):
            raise ValueError(f"{w}: sharding_group_size {_show(dc.get('sharding_group_size'))} and replicas "
                             f"{_show(dc.get('replicas'))} are not {world} and {G} (world_size {W} / {world})")
        sr = dc.get("shard_ranks")
        if not isinstance(sr, list) or len(sr) != world or \
                any(not isinstance(rs, list) or not all(_is_int(x) for x in rs) or rs != [k * G + i for i in range(G)]
                    for k, rs in enumerate(sr)):
            raise ValueError(f"{w}: shard_ranks is not {world} lists of {G} ranks, shard k on ranks k*{G} + i")
    return doc


def _sharding(where, ps, world, local=None):
    """(sharding_type, ranks, shard offsets, shard sizes, compute_kernel) of one table's
    sharding ps, each checked (ranks in 0..world-1, one per shard, at most MAX_SHARDS; offsets
    [row, column] >= 0 and sizes [rows, columns] >= 1 within 0..2^63-1; placement, when given,
    rank:r/cuda:r%local_size), or ValueError naming the table (`where`)"""
    kind = ps.get("sharding_type")
    if not isinstance(kind, str):
        raise ValueError(f"{where}: sharding_type is {_show(kind)}, not a string")
    ck = ps.get("compute_kernel")
    if "compute_kernel" in ps and not isinstance(ck, str):
        raise ValueError(f"{where}: compute_kernel is {_show(ck)}, not a string")
    ranks = ps.get("ranks", [])
    shards = ps.get("shards") or []
    if not isinstance(ranks, list):
        raise ValueError(f"{where}: ranks is {_show(ranks)}, not a list of ranks")
    if not isinstance(shards, list):
        raise ValueError(f"{where}: shards is {_show(shards)}, not a list of shards")
    if kind == "data_parallel":
        # the table whole on every rank: no shards (TorchRec's sharding_spec is None), ranks
        # every rank once (or not given)
        if shards:
            raise ValueError(f"{where}: data_parallel with {len(shards)} shards: it has none (whole on every rank)")
        if ranks and sorted(r if _is_int(r) else -1 for r in ranks) != list(range(world)):
            raise ValueError(f"{where}: data_parallel on ranks {_show(ranks)}, not every rank 0..{world - 1} once")
        return kind, list(range(world)), [], [], ck
    if len(shards) > MAX_SHARDS:
        raise ValueError(f"{where}: {len(shards)} shards, more than {MAX_SHARDS}")
    if not shards or len(shards) != len(ranks):
        raise ValueError(f"{where}: {len(shards)} shards for {len(ranks)} ranks")
    for r in ranks:
        if not _is_int(r):
            raise ValueError(f"{where}: rank {_show(r)} is not an integer")
        if not 0 <= r < world:
            raise ValueError(f"{where}: rank {_show(r)} is not in 0..{world - 1}")
    offs, sizes = [], []
    for i, (sh, r) in enumerate(zip(shards, ranks)):
        if not isinstance(sh, dict):
            raise ValueError(f"{where}: shard {i} is {_show(sh)}, not an object")
        o, z = sh.get("shard_offsets"), sh.get("shard_sizes")
        if not isinstance(o, list) or len(o) != 2 or not all(_is_int(x) and 0 <= x <= MAX_I64 for x in o):
            raise ValueError(f"{where}: shard {i}: shard_offsets is {_show(o)}, not [row, column] (integers >= 0)")
        if not isinstance(z, list) or len(z) != 2 or not all(_is_int(x) and 1 <= x <= MAX_I64 for x in z):
            raise ValueError(f"{where}: shard {i}: shard_sizes is {_show(z)}, not [rows, columns] (integers >= 1)")
        if o[0] + z[0] > MAX_I64 or o[1] + z[1] > MAX_I64:
            raise ValueError(f"{where}: shard {i} ends past 2^63 - 1")
        if "placement" in sh:
            p = sh["placement"]
            want = f"rank:{r}/cuda:{r % local}" if local else None
            if not isinstance(p, str) or (p != want if want else not p.startswith(f"rank:{r}/")):
                raise ValueError(f"{where}: shard {i}: placement {_show(p)} is not "
                                 f"{want or f'rank:{r}/...'} (its rank {r})")
        offs.append((o[0], o[1]))
        sizes.append((z[0], z[1]))
    return kind, ranks, offs, sizes, ck


def _cover(where, offs, sizes, size, whose="the table"):
    """ValueError unless the shards' extent and area are exactly the table's rows x dim"""
    rows, dim = size
    area = sum(nr * nc for nr, nc in sizes)
    r1 = max(r0 + nr for (r0, _), (nr, _) in zip(offs, sizes))
    c1 = max(c0 + nc for (_, c0), (_, nc) in zip(offs, sizes))
    if (r1, c1) != (rows, dim) or area != rows * dim:
        raise ValueError(f"{where}: the plan's shards cover {r1} x {c1} ({area} elements), {whose} "
                         f"is {rows} x {dim} (num_embeddings x embedding_dim)")


# ---- conversion --------------------------------------------------------------------------

def _expressible(module, name, ps, world, size=None, local=None):
    """(generator name, keyword arguments) of TorchRec's sharding_plan.py that reproduce the
    sharding ps of table `name` (as-plan's JSON), or ValueError naming the table. TorchRec's
    public generators (torchrec/distributed/sharding_plan.py, meta-pytorch/torchrec, read
    2026-11-26) express: table_wise(rank); column_wise(ranks) with equal column widths on any
    ranks (reused ranks allowed), or column_wise(size_per_rank) with the widths on ranks
    0, 1, ... in order; row_wise() with world_size blocks of ceil(rows / world_size) rows,
    block i on rank i; table_row_wise(host_index) with local_size blocks of ceil(rows /
    local_size) rows on one host's ranks, block i on rank host x local_size + i (world_size a
    multiple of local_size above it); data_parallel() (the table whole on every rank). Anything else (row
    pieces on other ranks, uneven column pieces on other ranks, grid shards) cannot go
    through construct_module_sharding_plan. size: the table's
    (num_embeddings, embedding_dim) when known (--config): the shards must cover exactly it."""
    where = _qual(module, name)
    kind, ranks, offs, sizes, ck = _sharding(where, ps, world, local)
    if kind == "data_parallel":
        return "data_parallel", {}
    if size is not None:
        _cover(where, offs, sizes, size, "the config's table")
    if kind == "table_wise":
        if len(ranks) != 1 or offs[0] != (0, 0):
            raise ValueError(f"{where}: table_wise with {len(ranks)} shards")
        return "table_wise", {"rank": ranks[0], "compute_kernel": ck}
    order = sorted(range(len(offs)), key=lambda i: offs[i])
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
    if kind == "table_row_wise":
        # L blocks of ceil(rows / L) rows on the L ranks of one host h, block i on rank h L + i
        # (sharding_plan.py table_row_wise(host_index)); L the plan's local_size
        cols = sizes[0][1]
        rows = sum(nr for (nr, _) in sizes)
        if not local or world % local or world <= local:
            raise ValueError(f"{where}: table_row_wise needs hosts: a local_size L with world_size a multiple of L "
                             f"above it (world_size {world}, local_size {local})")
        block = -(-rows // local)
        want = [(i * block, min(block, rows - i * block)) for i in range(local) if i * block < rows]
        got = [(r0, nr) for (r0, _), (nr, nc) in zip(offs, sizes)]
        host = ranks[0] // local
        if any(c0 != 0 or nc != cols for (_, c0), (_, nc) in zip(offs, sizes)) or got != want or \
                ranks != [host * local + i for i in range(len(ranks))]:
            raise ValueError(f"{where}: row pieces {[f'{r0}+{nr}' for r0, nr in got]} on ranks {ranks}: TorchRec's "
                             f"table_row_wise places {local} blocks of {block} rows on one host's ranks, block i on "
                             "rank host x local_size + i")
        return "table_row_wise", {"host_index": host}
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
    raise ValueError(f"{where}: {_name(kind)} shardings are not converted")


def table_shardings(doc, sizes=None):
    """{module: {table: (generator name, kwargs)}} of one plan document; ValueError names the
    first table TorchRec's generators cannot express (see _expressible). sizes: {table name:
    (num_embeddings, embedding_dim)} (load_config_sizes), when known: every table of the plan
    must be one of them, its shards covering exactly it."""
    check_doc(doc)
    if "module" in doc:
        _planned_module(doc)
    world, local = doc["world_size"], doc.get("local_size")
    out = {}
    for module, tables in doc["plan"].items():
        out[module] = {}
        for name, ps in tables.items():
            size = None
            if sizes is not None:
                if name not in sizes:
                    raise ValueError(f"{_qual(module, name)}: not a table of the config (it has {len(sizes)}: "
                                     f"{', '.join(_name(n) for n in sorted(sizes)[:5])}{', ...' if len(sizes) > 5 else ''})")
                size = sizes[name]
            out[module][name] = _expressible(module, name, ps, world, size, local)
    return out


def table_ranks(doc):
    """{module: {table: [ranks]}} from one plan document (as written, no conversion)."""
    check_doc(doc)
    world, local = doc["world_size"], doc.get("local_size")
    return {module: {name: list(_sharding(_qual(module, name), ps, world, local)[1]) for name, ps in tables.items()}
            for module, tables in doc["plan"].items()}


def load_config_sizes(path):
    """{table name: (num_embeddings, embedding_dim)} of a model config (as-convert --config's
    JSON: tables[].name, num_embeddings, embedding_dim), or ValueError naming the file"""
    where = _name(path)
    with _open(path) as f:
        try:
            raw = f.read(MAX_LINE + 1)
        except OSError as e:
            raise ValueError(f"{where}: cannot read: {e.strerror}") from None
    if len(raw) > MAX_LINE:
        raise ValueError(f"{where}: longer than {MAX_LINE} bytes")
    cfg = parse_json(_decode(raw, where), where)
    tables = cfg.get("tables") if isinstance(cfg, dict) else None
    if not isinstance(tables, list) or not tables:
        raise ValueError(f"{where}: not a model config (an object with a list of tables)")
    sizes = {}
    for i, t in enumerate(tables):
        w = f"{where}: table {i}"
        if not isinstance(t, dict):
            raise ValueError(f"{w} is {_show(t)}, not an object")
        name = t.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{w}: name is {_show(name)}, not a non-empty string")
        if bad_name(name):
            raise ValueError(f"{w}: name {_show(name)}: a control character or an unpaired surrogate")
        if name in sizes:
            raise ValueError(f"{w}: name {_show(name)} repeated")
        sizes[name] = (_int_field(t, "num_embeddings", 1, MAX_I64, w), _int_field(t, "embedding_dim", 1, MAX_I64, w))
    return sizes


def load_plans(path, task=None, alg=None):
    """The plans of a file (JSON lines; "-": standard input), filtered by task and algorithm,
    each checked (check_doc). With both given, returns the one matching plan (a dict);
    otherwise the list. ValueError naming the file and line."""
    docs = []
    for n, line in _read_lines(path):
        line = line.strip(" \t\r\n")
        if not line:
            continue
        where = f"{_name(path)}: line {n}"
        d = check_doc(parse_json(line, where), where)
        if (task is None or d.get("task") == task) and (alg is None or d.get("alg") == alg):
            docs.append(d)
    if task is not None and alg is not None:
        if len(docs) != 1:
            raise ValueError(f"{_name(path)}: {len(docs)} plans for task {task}, alg {_name(alg)}")
        return docs[0]
    return docs


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
    raise ValueError(f"module '{_name(fqn)}' is not an EmbeddingBagCollection (no embedding_bag_configs(), "
                     "no embedding_bags)")


def _module_of(doc):
    check_doc(doc)
    if "module" not in doc:
        raise ValueError("the plan has no 'module' (the EmbeddingBagCollection's path in the model)")
    return doc["module"]


def _planned_module(doc):
    """doc["module"], which must be a key of doc["plan"]"""
    fqn = _module_of(doc)
    if fqn not in doc["plan"]:
        raise ValueError(f"module {_show(fqn)} is not a key of 'plan' (it has {len(doc['plan'])}: "
                         f"{', '.join(_show(m) for m in list(doc['plan'])[:5])})")
    return fqn


def resolve_module(doc, model):
    """The module at doc["module"] inside model ("" or the model's own path: model itself),
    or ValueError naming the first missing attribute."""
    fqn = _module_of(doc)
    m = model
    for part in [p for p in fqn.split(".") if p] if fqn else []:
        if not hasattr(m, part):
            if part == fqn.split(".")[0] and (hasattr(m, "embedding_bag_configs") or hasattr(m, "embedding_bags")):
                return m      # given the collection itself
            raise ValueError(f"module path '{_name(fqn)}': the model has no '{_name(part)}' there (as-plan --module, "
                             "or the config's module_path, names the EmbeddingBagCollection's path in the model)")
        m = getattr(m, part)
    return m


def _renamed(tables, rename):
    """the plan's {table: sharding} under rename ({as-plan name: module name}); ValueError
    when two tables would get one name"""
    out = {(rename or {}).get(k, k): v for k, v in tables.items()}
    if len(out) != len(tables):
        raise ValueError("rename gives two of the plan's tables the same name")
    return out


def check_module(doc, module, rename=None):
    """Check one plan document against the module's tables before converting it: every table
    of the plan is a table of the module and the other way round, and each table's shards
    tile exactly its num_embeddings x embedding_dim. ValueError naming the table."""
    fqn = _planned_module(doc)
    have = _module_tables(module, fqn)
    plan = _renamed(doc["plan"][fqn], rename)
    for name in plan:
        if name not in have:
            raise ValueError(f"{_qual(fqn, name)}: the plan's table is not a table of the module (it has "
                             f"{len(have)}: {', '.join(_name(n) for n in sorted(have)[:5])}"
                             f"{', ...' if len(have) > 5 else ''})")
    for name in have:
        if name not in plan:
            raise ValueError(f"{_qual(fqn, name)}: the module's table has no sharding in the plan")
    world, local = doc["world_size"], doc.get("local_size")
    for name, ps in plan.items():
        where = _qual(fqn, name)
        if not (ps.get("shards") or []):
            raise ValueError(f"{where}: no shards in the plan")
        _, _, offs, sizes, _ = _sharding(where, ps, world, local)
        _cover(where, offs, sizes, have[name], "the module's table")


def sharding_plan(doc, module, device_type="cuda", rename=None):
    """A torchrec ShardingPlan for `module` (the unsharded EmbeddingBagCollection named by
    doc["module"]) from one plan document, through construct_module_sharding_plan with the
    generators table_shardings() chose (compute_kernel passed on). rename maps as-plan's
    table names ("t17") to the module's; tables of the module absent from the plan are an
    error (construct_module_sharding_plan asserts that the keys are its parameters)."""
    from torchrec.distributed import sharding_plan as sp
    from torchrec.distributed.types import ShardingPlan

    fqn = _planned_module(doc)
    if "local_size" not in doc:
        raise ValueError("the plan has no 'local_size'")
    if not isinstance(module, str):      # (the test double passes a name, not a module)
        check_module(doc, module, rename)
    specs = _renamed(table_shardings(doc)[fqn], rename)
    per_param = {name: getattr(sp, gen)(**kw) for name, (gen, kw) in specs.items()}
    plan = sp.construct_module_sharding_plan(
        module,
        per_param_sharding=per_param,
        local_size=doc["local_size"],
        world_size=doc["world_size"],
        device_type=device_type,
    )
    return ShardingPlan({fqn: plan})


def _label(d):
    alg = d.get("alg")
    return f"task {d.get('task')} {_name(alg) if isinstance(alg, str) else alg}"


class _ArgumentParser(argparse.ArgumentParser):
    """argparse's, but --help that cannot be written to standard output is an error (exit 3:
    _run), not silently lost (argparse ignores the write's error)"""

    def _print_message(self, message, file=None):
        if message and file is not None and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)


def main():
    global MAX_WORLD, MAX_SHARDS
    ap = _ArgumentParser(prog="torchrec_plan", description="check as-plan --format torchrec output "
                                 "(exit 0: every plan converts, 1: bad input or a plan that does not, 2: usage, "
                                 "3: out of memory or a write error)")
    ap.add_argument("file", nargs="?", default="-", help="as-plan --format torchrec output (default: standard input)")
    ap.add_argument("--check", action="store_true",
                    help="check that every plan converts (what the command line always does; needs no torchrec)")
    ap.add_argument("--task", type=int)
    ap.add_argument("--alg")
    ap.add_argument("--config", metavar="MODEL.json",
                    help="the model config of the plans (as-convert --config): each table's shards must cover "
                         "exactly its num_embeddings x embedding_dim")
    a = ap.parse_args()
    env = os.environ.get("AS_MAX_SHARDS", "")
    if env:                              # as the C tools read it (lib/records/reclimits.c)
        if not re.fullmatch(r"[0-9]{1,8}", env) or not 1 <= int(env) <= HARD_MAX_WORLD:
            _err(f"AS_MAX_SHARDS: {_show(env)} is not a count in 1..{HARD_MAX_WORLD} (the limit on shards per plan)")
            return 2
        MAX_WORLD = int(env)
        MAX_SHARDS = max(MAX_SHARDS, MAX_WORLD)
    try:
        sizes = load_config_sizes(a.config) if a.config is not None else None
        docs = load_plans(a.file, a.task, a.alg)
    except ValueError as e:
        _err(e)
        return 1
    if isinstance(docs, dict):
        docs = [docs]
    if not docs:
        _err(f"{_name(a.file)}: no plan{' of that task and algorithm' if a.task is not None or a.alg else ''}")
        return 1
    bad = 0
    for d in docs:
        try:
            shardings = table_shardings(d, sizes)
        except ValueError as e:
            _err(f"{_label(d)}: {e}")
            bad += 1
            continue
        for module, tr in table_ranks(d).items():
            per_rank = Counter(r for rs in tr.values() for r in set(rs))
            kinds = Counter(g for g, _ in shardings[module].values())
            counts = " ".join(f"{r}:{per_rank.get(r, 0)}" for r in range(d["world_size"]))
            how = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            print(f"{_label(d)} {_name(module) if module else '(the model itself)'}: {len(tr)} tables ({how}); "
                  f"tables per rank {counts}")
    if bad:
        _err(f"{bad} of {len(docs)} plans cannot go through construct_module_sharding_plan")
        return 1
    return 0


def _run():
    for f in (sys.stdout, sys.stderr):   # names are escaped already; never an encoding error
        try:
            f.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass
    if sys.stdout is None:               # started with standard output closed (>&-)
        _err("standard output: closed")
        return 3
    try:
        try:
            rc = main()
        except SystemExit as e:          # argparse: --help (0), a usage error (2): flushed below too
            rc = e.code if isinstance(e.code, int) else 0 if e.code is None else 2
        sys.stdout.flush()
    except MemoryError:
        _err("out of memory")
        rc = 3
    except OSError as e:                 # standard output (a full disk, a closed pipe)
        _err(f"standard output: {e.strerror or e}")
        rc = 3
    if rc == 3:
        try:                             # no second error when Python flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
    return rc


if __name__ == "__main__":
    sys.exit(_run())
