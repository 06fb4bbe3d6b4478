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
import sys

import aspipe

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
aspipe.set_prog("run-spread")
fail = aspipe.fail


def text_of(path):
    """the file's plans as JSON-lines text: an autoshard stream through as-show (aspipe)"""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if data[:4] == ZSTD_MAGIC:
        exe = aspipe.as_show() or os.path.join(os.path.dirname(aspipe.HERE), "bin", "as-show")
        try:
            data = aspipe.show_text("-", "plan", full=True, data=data, exe=exe)
        except aspipe.ShowError as e:
            if e.os_error is not None:
                fail("%s: an autoshard stream, but as-show cannot run (%s): build the tools or set AS_SHOW"
                     % (path, e.os_error.strerror))
            fail("%s: %s" % (path, e))
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
        fail("%s: no plan carries cost_pass_ms of 2 passes or more (as-bench --passes)" % path)
    return [{k: (v[p] if isinstance(v, list) and len(v) == npass else None) for k, v in both.items()} for p in range(npass)]


def balance(c):
    if not isinstance(c, list) or not c or not all(isinstance(x, (int, float)) for x in c):
        return float("nan")
    return min(c) / max(c) if min(c) > 0 else float("nan")


def parser():
    ap = aspipe.ArgumentParser(prog="run-spread.py", description=__doc__,
                               usage="%(prog)s run1.jsonl run2.jsonl [run3.jsonl ...]\n       %(prog)s --passes run.jsonl")
    ap.add_argument("runs", nargs="*", metavar="RUN", help="one run's measured plans: as-bench's stream or its JSON "
                                                            "lines (- : standard input)")
    ap.add_argument("--passes", metavar="RUN", help="one run measured in passes (as-bench --passes N): each pass a run")
    return ap


def main(argv):
    ap = parser()
    a = ap.parse_args(argv[1:])
    if a.passes is None and len(a.runs) < 2:
        ap.print_help()                  # (as before: the usage on standard output, exit 2)
        return 2
    runs = load_passes(a.passes) if a.passes is not None else [load(p) for p in a.runs]
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
        fail("no plan measured in every run")
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
