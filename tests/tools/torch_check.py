#!/usr/bin/env python3
"""torch_check.py - cross-check our torch.save reader and writer against real PyTorch.

Needs a machine with PyTorch (the GPU machines have it); run from the repository root after
`make`:  python3 tests/tools/torch_check.py [--big]
1. torch.load reads every variant our test writer (build/tools/ptwrite) produces: MetaSyn
   zip and legacy, gzip'd (through gzip.open), the prototype dict; values agree with
   `as-convert --dump`.
2. as-convert reads what torch.save writes: every dtype, a non-contiguous view, tensors that
   share one storage at different offsets, a nested dict/list, both the zip and the legacy
   format, and a MetaSyn-shaped tuple whose table records must equal a conversion done here
   in Python.
3. --big: a MetaSyn-shaped tuple over 4 GB saved by torch.save (ZIP64), converted whole.
Prints one line per check and exits non-zero on the first mismatch.
"""
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PTWRITE = os.path.join(ROOT, "build", "tools", "ptwrite")
CONVERT = os.path.join(ROOT, "bin", "as-convert")
SHOW = os.path.join(ROOT, "bin", "as-show")


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw).stdout


def dump(path):
    """as-convert --dump -> {path: (dtype, shape, [values as text])}"""
    out = {}
    for line in run(CONVERT, "--dump", path).decode().splitlines():
        p, dt, shape, *vals = line.split("\t")
        out[p] = (dt, shape, vals[0].split(" ") if vals and vals[0] else [])
    return out


def fmt(t):
    if t.dtype == torch.bool:
        return ["true" if v else "false" for v in t.flatten().tolist()]
    if t.dtype.is_floating_point:
        return [float(v) for v in t.flatten().to(torch.float64).tolist()]
    return [str(v) for v in t.flatten().tolist()]


def same(got, t):
    want = fmt(t)
    if t.dtype.is_floating_point:
        return len(got) == len(want) and all(
            torch.tensor(float(g), dtype=torch.float64).to(t.dtype).item() == w for g, w in zip(got, want))
    return got == want


def check(name, ok):
    print(("ok   " if ok else "FAIL ") + name, flush=True)
    if not ok:
        sys.exit(1)


def walk(obj, path=""):
    if isinstance(obj, torch.Tensor):
        yield (path or "."), obj
    elif isinstance(obj, (tuple, list)):
        for i, v in enumerate(obj):
            yield from walk(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, f"{path}[{k!r}]")


def table_records(path, *extra):
    recs = run(SHOW, "--no-header", "--full", "-", input=run(CONVERT, path, *extra))
    return [json.loads(l) for l in recs.decode().splitlines()]


def main():
    big = "--big" in sys.argv
    tmp = tempfile.mkdtemp(prefix="as-torch-check-")
    pool = ["--tables", "5", "--batch", "32", "--row-scale", "0.001", "--seed", "3"]
    # 1. torch.load reads our writer's files
    for variant, extra in [("zip", []), ("legacy", ["--format", "legacy"]), ("gzip", ["--gzip"]),
                           ("prototype", None)]:
        f = os.path.join(tmp, f"w-{variant}.pt")
        if extra is None:
            run(PTWRITE, "prototype", *pool, "-o", f)
        else:
            run(PTWRITE, "metasyn", *pool, *extra, "-o", f)
        if variant == "gzip":
            with gzip.open(f, "rb") as g:
                obj = torch.load(io.BytesIO(g.read()), weights_only=True)
        else:
            obj = torch.load(f, weights_only=True)
        ours = dump(f)
        ok = True
        for p, t in walk(obj):
            dt, shape, vals = ours.get(p, (None, None, None))
            ok &= dt == str(t.dtype).replace("torch.", "") and same(vals, t)
        check(f"torch.load reads ptwrite {variant} ({len(ours)} tensors agree with as-convert --dump)", ok and len(ours) > 0)
    # 2. as-convert reads torch.save's files
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) * 0.5 - 3
    store = torch.arange(100, dtype=torch.int64)
    objs = {
        "dtypes": {str(d): (torch.tensor([1, -2, 3, -4]) if d.is_signed or d.is_floating_point
                            else torch.tensor([1, 0, 1, 1])).to(d)
                   for d in [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
                             torch.float16, torch.bfloat16, torch.float32, torch.float64]},
        "strided": [base.t(), base[:, ::2], base[1:3, 2:5]],
        "shared": (store[10:20], store[50:55], store.view(10, 10)[2:4, 3]),
        "nested": {"a": [torch.ones(2, 3), {"b": torch.zeros(1)}], "c": (torch.tensor(7),)},
    }
    for name, obj in objs.items():
        for fmtname, zipfmt in [("zip", True), ("legacy", False)]:
            f = os.path.join(tmp, f"t-{name}-{fmtname}.pt")
            torch.save(obj, f, _use_new_zipfile_serialization=zipfmt)
            ours = dump(f)
            ok = True
            for p, t in walk(obj):
                dt, shape, vals = ours.get(p, (None, None, None))
                ok &= dt == str(t.dtype).replace("torch.", "") and same(vals, t)
            check(f"as-convert reads torch.save {name} ({fmtname})", ok)
    # MetaSyn-shaped tuple
    T, B = 4, 16
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(0, 6, (T, B), generator=g, dtype=torch.int32)
    offsets = torch.zeros(T * B + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.flatten().to(torch.int64), 0)
    indices = torch.randint(0, 1000, (int(offsets[-1]),), generator=g, dtype=torch.int32)
    f = os.path.join(tmp, "metasyn.pt")
    torch.save((indices, offsets, lengths), f)
    recs = table_records(f)
    ok = len(recs) == T
    for t, r in enumerate(recs):
        lo, hi = int(offsets[t * B]), int(offsets[t * B + B])
        ok &= r["id"] == t and r["batch"] == B and r["lookups"] == hi - lo
        ok &= r["offsets"]["data"] == (offsets[t * B:t * B + B + 1] - lo).tolist()
        ok &= r["indices"]["data"] == indices[lo:hi].tolist()
        ok &= r["rows"] == (int(indices[lo:hi].max()) + 1 if hi > lo else 1)
    check("as-convert converts a torch.save'd MetaSyn-shaped tuple", ok)
    if big:
        n = (4 << 30) // 4 + 12345          # > 4 GiB of int32 indices
        T, B = 2, 1 << 20
        lengths = torch.full((T, B), n // (T * B), dtype=torch.int32)
        lengths[-1, -1] += n - int(lengths.sum())
        offsets = torch.zeros(T * B + 1, dtype=torch.int64)
        offsets[1:] = torch.cumsum(lengths.flatten().to(torch.int64), 0)
        indices = (torch.arange(n, dtype=torch.int64) % 1000003).to(torch.int32)
        f = os.path.join(tmp, "big.pt")
        torch.save((indices, offsets, lengths), f)
        del indices
        out = run(CONVERT, "--list", f).decode()
        check(f"as-convert --list reads a {os.path.getsize(f) >> 20} MiB torch.save file", f"[{n}]" in out)
        run(CONVERT, f, "-o", os.path.join(tmp, "big.ast"))
        counts = run(SHOW, "--count", os.path.join(tmp, "big.ast")).decode()
        check("as-convert converts it", "table\t2" in counts)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
