#!/usr/bin/env python3
"""active-replay.py - the active loop's choice replayed on one measured random dataset.

Takes run-to-run drift out of pipelines/active-vs-random's comparison: the shards come from
ONE as-bench run, the random dataset DIR/NAME-rand.ast (singles + N random shards), and all
three models are scored on DIR/NAME-test.ast as there. The loop's pool is that run's shards:
its first 100 random shards start (init), the next 40 validate (counted, trained on at the
end, as pipelines/active-costs does), and rounds of 20 are chosen by `as-costfit --select`
(3 fits, seeds 100*S+1..3, each holding out 20 %) from the rest of the run's shards, to
200 (the budget; the stopping rule is not replayed). Prints a markdown row:
  | NAME | S | R² all N | R² first 200 | R² replayed active 200 | shards |
The models: `as-costfit --seed S --test-frac 0`; the held-out shards of a table set (with its
pieces) the random dataset holds are left out, as in active-vs-random.
  python3 pipelines/active-replay.py NAME FT DIR SEED [BIN] [--one-run RANDOM,HELDOUT]
        [--loop INIT,VAL,BATCH] [--fits N]

--one-run RANDOM,HELDOUT: everything from the one run NAME-rand.ast, measured with more random
shards than the dataset compared (e.g. `as-bench --sample 1150 --singles`): its last HELDOUT
random shards are the held-out set (NAME-test.ast is not read), its first RANDOM (with the
singles) the random dataset, and the loop chooses from every random shard after the first 140
but the held-out ones, so from more than the random dataset holds, as the real loop draws
4,000. The row's "R² all" is then the random RANDOM's.

--loop INIT,VAL,BATCH: the loop's random start, validation set and round size (default
100,40,20, pipelines/active-costs' at a budget of 200). --fits N: each of the three datasets
fitted N times (seeds S, S+1000, ...) and the mean R² printed, so that the fit's own spread
(0.005-0.01 on the Kaggle DLRM's 26 tables) does not decide the comparison (default 1).
The records are written again with tests/test_helper/mp.py's encoder (standard library).
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mp", os.path.join(here, "..", "tests", "test_helper", "mp.py"))
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)
USAGE = "usage: active-replay.py NAME FT DIR SEED [BIN] [--one-run RANDOM,HELDOUT] [--loop INIT,VAL,BATCH] [--fits N]"


def usage(why=""):
    sys.stderr.write(USAGE + (" (%s)" % why if why else "") + "\n")
    sys.exit(2)


args = sys.argv[1:]
if args[:1] in (["-h"], ["--help"]):
    sys.stdout.write(__doc__)
    sys.exit(0)
one = None
if "--one-run" in args:
    i = args.index("--one-run")
    try:
        one = tuple(int(x) for x in args[i + 1].split(","))
        assert len(one) == 2 and one[0] >= 200 and one[1] > 0
    except (IndexError, ValueError, AssertionError):
        usage("RANDOM >= 200, HELDOUT >= 1")
    del args[i:i + 2]
loop, nfits = (100, 40, 20), 1
if "--loop" in args:
    i = args.index("--loop")
    try:
        loop = tuple(int(x) for x in args[i + 1].split(","))
        assert len(loop) == 3 and loop[0] >= 1 and loop[1] >= 1 and loop[2] >= 1
    except (IndexError, ValueError, AssertionError):
        usage("--loop INIT,VAL,BATCH: three counts >= 1")
    del args[i:i + 2]
if "--fits" in args:
    i = args.index("--fits")
    try:
        nfits = int(args[i + 1])
        assert 1 <= nfits <= 100
    except (IndexError, ValueError, AssertionError):
        usage("--fits N: 1 to 100")
    del args[i:i + 2]
if len(args) not in (4, 5):
    usage()
name, ft, top, seed = args[0], args[1], args[2], int(args[3])
W = args[4] if len(args) == 5 else "bin"
d = tempfile.mkdtemp()


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, check=True).stdout


def show(f):
    return [json.loads(l) for l in sh("%s/as-show --full -k cost %s" % (W, f)).splitlines()]


def key(r):
    pc = r.get("pieces") or [None] * len(r["tables"])
    return tuple(sorted((t, json.dumps(q if q and q[1] else None)) for t, q in zip(r["tables"], pc)))


def write(recs, f):
    raw = bytearray()
    for x in [{"kind": "header", "schema": "autoshard", "version": 1, "tool": "active-replay"}] + recs:
        mp.enc({k: v for k, v in x.items() if not (isinstance(v, dict) and "dtype" in v)}, raw)
    with open(f, "wb") as o:
        o.write(subprocess.run(["zstd", "-q", "-c"], input=bytes(raw), capture_output=True, check=True).stdout)


def fit(recs, s, f, extra=""):
    write(recs, d + "/tr.ast")
    sh("cat %s %s/tr.ast | %s/as-costfit -q --seed %d %s -o %s" % (ft, d, W, s, extra, f))


def r2(model, f, seen):
    rs = [json.loads(l) for l in sh("%s/as-costfit -q --predict %s %s %s | %s/as-show -k cost" % (W, model, ft, f, W)).splitlines()]
    rs = [r for r in rs if r.get("cost_ms") and key(r) not in seen]
    y = [r["cost_ms"] for r in rs]
    p = [r["pred_ms"] for r in rs]
    mu = sum(y) / len(y)
    return 1 - sum((a - b) ** 2 for a, b in zip(y, p)) / sum((a - mu) ** 2 for a in y)


R = [r for r in show("%s/%s-rand.ast" % (top, name)) if r.get("cost_ms") and not r.get("error")]
S = [r for r in R if r.get("origin") == "single"]
P = [r for r in R if r.get("origin") != "single"]
test = "%s/%s-test.ast" % (top, name)
if one:
    if len(P) < one[0] + one[1] or len(P) - one[1] <= loop[0] + loop[1]:
        sys.exit("active-replay: %s-rand.ast holds %d random shards, fewer than --one-run asks" % (name, len(P)))
    H, P = P[len(P) - one[1]:], P[:len(P) - one[1]]
    test = d + "/heldout.ast"
    write(H, test)
    R = S + P[:one[0]]
seen = {key(r) for r in S + P}
NI, NV, NB = loop
init, val, pool = P[:NI], P[NI:NI + NV], P[NI + NV:]
chosen = []
while len(init) + len(val) + len(chosen) + NB <= 200:
    ens = ""
    for k in (1, 2, 3):
        fit(S + init + chosen, seed * 100 + k, "%s/m%d.ast" % (d, k))
        ens += " --ensemble %s/m%d.ast" % (d, k)
    left = [r for r in pool if r not in chosen]
    write([dict({"kind": "shard", "tables": r["tables"]}, **({"pieces": r["pieces"]} if r.get("pieces") else {})) for r in left], d + "/cand.ast")
    write(S + init + chosen + val, d + "/meas.ast")
    ks = {key(json.loads(l)) for l in sh("cat %s %s/meas.ast %s/cand.ast | %s/as-costfit -q --select %d%s | %s/as-show -k shard"
                                           % (ft, d, d, W, NB, ens, W)).splitlines()}
    chosen += [r for r in left if key(r) in ks][:NB]
n = len(init) + len(val) + len(chosen)
res = []
for recs in (R, S + P[:n], S + init + val + chosen):
    v = []
    for q in range(nfits):
        fit(recs, seed + 1000 * q, d + "/m.ast", "--test-frac 0")
        v.append(r2(d + "/m.ast", test, seen))
    res.append(sum(v) / len(v))
print("| %s | %d | %.4f | %.4f | %.4f | %d |" % (name, seed, res[0], res[1], res[2], n))
sh("rm -rf " + d)
