#!/usr/bin/env python3
"""run-spread.py - how far the same plans measured in several as-bench runs disagree.

usage: python3 run-spread.py run1.jsonl run2.jsonl [run3.jsonl ...]
       python3 run-spread.py --passes run.jsonl

Each argument is one run's measured plans: as-bench's output stream itself (read through
as-show: $AS_SHOW, else as-show on PATH, else the repository's bin/as-show), or its plans as
JSON lines (as-show --full --kind plan RUN.ast); - is standard input. With --passes, one
file whose plans were measured in passes (as-bench --passes N: `cost_pass_ms`): each pass is
taken as a run. Exit 1 on input that is neither, naming the file and line; 2 usage.

Plans are matched across runs by (task, alg, occurrence). Per shard, each plan's overall level is
taken out first: x[r][k] = log cost[r][k] - mean_k log cost[r][k] (run r, shard k), so a
run that is uniformly slower does not count; the shard's between-run figure is then
exp(x[r][k] - x[0][k]) - 1 for every later run r against the first (two runs: the
relative difference of the second against the first). Printed: the standard deviation and
the largest absolute value of those figures over all shards, and per algorithm the mean
balance (min/max cost) of each run, and how many task pairs of algorithms are ordered
differently by balance in some run than in the first.

Only the standard library: the tests and pipelines run on a fresh Debian machine.
"""
import json
import math
import os
import shutil
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def fail(msg):
    sys.stderr.write("run-spread: %s\n" % msg)
    sys.exit(1)


def as_show():
    if os.environ.get("AS_SHOW"):
        return os.environ["AS_SHOW"]
    found = shutil.which("as-show")
    if found:
        return found
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bin", "as-show")


def text_of(path):
    """the file's plans as JSON-lines text: an autoshard stream through as-show"""
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if data[:4] == ZSTD_MAGIC:
        try:
            out = subprocess.run([as_show(), "--full", "--kind", "plan", "-"], input=data, capture_output=True)
        except OSError as e:
            fail("%s: an autoshard stream, but as-show cannot run (%s): build the tools or set AS_SHOW" % (path, e.strerror))
        if out.returncode:
            fail("%s: %s" % (path, out.stderr.decode(errors="replace").strip()))
        data = out.stdout
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        fail("%s: neither an autoshard stream nor JSON lines" % path)


def load(path, field="cost_ms"):
    plans, seen = {}, {}
    for n, line in enumerate(text_of(path).splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            r = json.loads(line)
        except ValueError:
            fail("%s: line %d: not JSON (expected as-show's JSON lines or an autoshard stream)" % (path, n))
        if not isinstance(r, dict):
            fail("%s: line %d: not a record (a JSON object)" % (path, n))
        if r.get("kind") != "plan":
            continue
        key0 = (r.get("task"), r.get("alg"))
        occ = seen.get(key0, 0)
        seen[key0] = occ + 1
        plans[key0 + (occ,)] = r.get(field)
    return plans


def load_passes(path):
    both = load(path, "cost_pass_ms")
    npass = max((len(v) for v in both.values() if isinstance(v, list)), default=0)
    if npass < 2:
        sys.stderr.write("run-spread: %s: no plan carries cost_pass_ms of 2 passes or more (as-bench --passes)\n" % path)
        sys.exit(1)
    return [{k: (v[p] if isinstance(v, list) and len(v) == npass else None) for k, v in both.items()} for p in range(npass)]


def balance(c):
    if not isinstance(c, list) or not c or not all(isinstance(x, (int, float)) for x in c):
        return float("nan")
    return min(c) / max(c) if min(c) > 0 else float("nan")


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    runs = load_passes(argv[2]) if argv[1] == "--passes" else [load(p) for p in argv[1:]]
    keys = [k for k in runs[0] if all(k in r for r in runs[1:])]
    diffs = []
    for k in keys:
        cs = [r[k] for r in runs]
        if any(not isinstance(c, list) or len(c) != len(cs[0]) or any(not isinstance(v, (int, float)) or v <= 0 for v in c) for c in cs):
            continue
        xs = []
        for c in cs:
            lg = [math.log(v) for v in c]
            m = sum(lg) / len(lg)
            xs.append([v - m for v in lg])
        for r in range(1, len(xs)):
            diffs.extend(math.exp(xs[r][j] - xs[0][j]) - 1 for j in range(len(xs[0])))
    if not diffs:
        sys.stderr.write("run-spread: no plan measured in every run\n")
        return 1
    sd = math.sqrt(sum(d * d for d in diffs) / len(diffs))
    print("plans in every run: %d, shard comparisons: %d" % (len(keys), len(diffs)))
    print("per shard, plan level taken out: std %.2f %%, max |diff| %.2f %%" % (100 * sd, 100 * max(abs(d) for d in diffs)))
    algs = sorted({k[1] for k in keys})
    for a in algs:
        bals = []
        for r in runs:
            v = [balance(r[k]) for k in keys if k[1] == a and isinstance(r[k], list) and all(isinstance(x, (int, float)) for x in r[k])]
            bals.append(sum(v) / len(v) if v else float("nan"))
        print("  %-28s balance per run: %s" % (a, " ".join("%.1f" % (100 * b) for b in bals)))
    flips = pairs = 0
    tasks = sorted({k[0] for k in keys})
    for t in tasks:
        ks = [k for k in keys if k[0] == t]
        for i in range(len(ks)):
            for j in range(i + 1, len(ks)):
                d0 = balance(runs[0][ks[i]]) - balance(runs[0][ks[j]])
                pairs += 1
                if any((balance(r[ks[i]]) - balance(r[ks[j]])) * d0 < 0 for r in runs[1:]):
                    flips += 1
    print("task pairs of plans ordered by balance: %d, in another order in a later run: %d" % (pairs, flips))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:   # the reader stopped early (| head): not an error
        sys.stderr.close()
        sys.exit(0)
