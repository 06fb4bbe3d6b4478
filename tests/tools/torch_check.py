#!/usr/bin/env python3
"""torch_check.py - cross-check our torch.save reader and writer against real PyTorch.

Needs PyTorch (Debian's python3-torch, which `make deps` installs, or the GPU machines'
own); `make test` runs it through tests/torch.bats. By hand, after `make`:
    /usr/bin/python3 tests/tools/torch_check.py [--big]
The binaries are bin/as-convert, bin/as-show and build/tools/ptwrite under the repository
root, or under $AS_BIN and $AS_TOOLS when set (as the bats suite sets them).
Every tensor is compared by path, dtype, shape, layout (the `stride=(...) offset=N` field
that `--dump` prints for a view: non-contiguous, or starting past its storage's first
element) and values, and the number of tensors must match.
1. torch.load reads every variant our test writer (build/tools/ptwrite) produces: MetaSyn
   zip and legacy, gzip'd (through gzip.open), the prototype dict; they agree with
   `as-convert --dump`.
2. as-convert reads what torch.save writes: every dtype, non-contiguous views, tensors that
   share one storage at different offsets, a nested dict/list, empty and 0-d tensors, both
   the zip and the legacy format, and a MetaSyn-shaped tuple whose table records must equal
   a conversion done here in Python.
3. --big: a MetaSyn-shaped tuple over 4 GB saved by torch.save (ZIP64), converted whole.
Prints one line per check and exits non-zero on the first mismatch.
"""
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("AS_BIN") or os.path.join(ROOT, "bin")
TOOLS = os.environ.get("AS_TOOLS") or os.path.join(ROOT, "build", "tools")
PTWRITE = os.path.join(TOOLS, "ptwrite")
CONVERT = os.path.join(BIN, "as-convert")
SHOW = os.path.join(BIN, "as-show")


def run(*args, **kw):
    r = subprocess.run(args, capture_output=True, **kw)
    if r.returncode != 0:
        print("FAIL %s exited with %d: %s" % (" ".join(args), r.returncode, r.stderr.decode(errors="replace").strip()))
        sys.exit(1)
    return r.stdout


def dump(path):
    """as-convert --dump -> {path: (dtype, shape, layout, [values as text])}

    A line is path, dtype, shape, then for views a layout field `stride=(...) offset=N`,
    then the values (space-separated; the field is empty for an empty tensor)."""
    out = {}
    for line in run(CONVERT, "--dump", path).decode().splitlines():
        f = line.split("\t")
        if len(f) == 5 and f[3].startswith("stride="):
            p, dt, shape, layout, vals = f
        elif len(f) == 4:
            p, dt, shape, vals = f
            layout = ""
        else:
            raise ValueError("as-convert --dump %s: unexpected line %r" % (path, line[:200]))
        if p in out:
            raise ValueError("as-convert --dump %s: path %s twice" % (path, p))
        out[p] = (dt, shape, layout, vals.split(" ") if vals else [])
    return out


def layout(t):
    """the layout field as-convert prints: only for a view that is not contiguous (dims of
    size <= 1 do not count) or does not start at its storage's first element"""
    expect, contiguous = 1, True
    for size, stride in reversed(list(zip(t.shape, t.stride()))):
        if size > 1 and stride != expect:
            contiguous = False
        expect *= size
    if contiguous and t.storage_offset() == 0:
        return ""
    return "stride=(%s) offset=%d" % (", ".join(str(s) for s in t.stride()), t.storage_offset())


def agree(ours, obj, what):
    """every tensor of obj is in ours with the same dtype, shape, layout and values, and
    ours has no other tensor; prints the first disagreement"""
    tensors = list(walk(obj))
    if len(ours) != len(tensors):
        print("  %s: as-convert lists %d tensors, torch has %d" % (what, len(ours), len(tensors)))
        return False
    for p, t in tensors:
        if p not in ours:
            print("  %s: %s missing from as-convert --dump" % (what, p))
            return False
        dt, shape, lay, vals = ours[p]
        want = (str(t.dtype).replace("torch.", ""), "[%s]" % ", ".join(str(s) for s in t.shape), layout(t))
        if (dt, shape, lay) != want:
            print("  %s: %s: as-convert says %r, torch %r" % (what, p, (dt, shape, lay), want))
            return False
        if not same(vals, t):
            print("  %s: %s: values differ: as-convert %s, torch %s" % (what, p, vals[:8], fmt(t)[:8]))
            return False
    return True


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
    tmp = tempfile.mkdtemp(prefix="as-torch-check-")
    try:
        checks(tmp, "--big" in sys.argv)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def checks(tmp, big):
    for exe in (PTWRITE, CONVERT, SHOW):
        if not os.access(exe, os.X_OK):
            print("FAIL %s is missing (run make first)" % exe)
            sys.exit(1)
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
        ok = agree(ours, obj, variant)
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
        "empty": [torch.empty(0), torch.zeros(2, 0), torch.tensor(2.5), base[:, 5:], base[3]],
    }
    for name, obj in objs.items():
        for fmtname, zipfmt in [("zip", True), ("legacy", False)]:
            f = os.path.join(tmp, f"t-{name}-{fmtname}.pt")
            torch.save(obj, f, _use_new_zipfile_serialization=zipfmt)
            ours = dump(f)
            ok = agree(ours, obj, f"{name} ({fmtname})")
            check(f"as-convert reads torch.save {name} ({fmtname}, {len(ours)} tensors)", ok)
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


if __name__ == "__main__":
    main()
