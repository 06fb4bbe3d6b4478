#!/usr/bin/env python3
"""active-replay.py - the active loop's choice replayed on one measured random dataset.

Takes run-to-run drift out of pipelines/active-vs-random's comparison: the shards come from
ONE as-bench run, the random dataset DIR/NAME-rand.ast (singles + N random shards), and all
three models are scored on DIR/NAME-test.ast as there. The loop's pool is that run's shards:
its first 80 random shards start (init), the next 40 validate (counted, trained on at the
end, as pipelines/active-costs does), and rounds of 20 are chosen by `as-costfit --select`
(3 fits, seeds 100*S+1..3, each holding out 20 %) from the rest of the run's shards, to
200 (the budget; the stopping rule is not replayed). Prints a markdown row:
  | NAME | S | R² all N | R² first 200 | R² replayed active 200 | shards |
The models: `as-costfit --seed S --test-frac 0`; the held-out shards of a table set (with its
pieces) the random dataset holds are left out, as in active-vs-random.
  python3 pipelines/active-replay.py NAME FT DIR SEED [BIN] [--one-run RANDOM,HELDOUT]
        [--loop INIT,VAL,BATCH] [--fits N] [--average] [--explore K] [--ensemble K] [--diverse M]
        [--budget N] [--fit-opts OPTS] [--keep DIR]

--one-run RANDOM,HELDOUT: everything from the one run NAME-rand.ast, measured with more random
shards than the dataset compared (e.g. `as-bench --sample 1150 --singles`): its last HELDOUT
random shards are the held-out set (NAME-test.ast is not read), its first RANDOM (with the
singles) the random dataset, and the loop chooses from every random shard after the first INIT + VAL (120)
but the held-out ones, so from more than the random dataset holds, as the real loop draws
4,000. The row's "R² all" is then the random RANDOM's.

--loop INIT,VAL,BATCH: the loop's random start, validation set and round size (default
80,40,20, pipelines/active-costs' at a budget of 200). --explore K: K of each round's BATCH taken at random (the candidates as drawn), the rest by
the ensemble's disagreement (default 0). --diverse M: the round's batch picked from the M x BATCH most disputed, each next one by its
spread times one less its largest table overlap (Jaccard) with those picked before it in the
round (default: the BATCH most disputed). --ensemble K: the models of the ensemble (default 3,
as active-costs). --fits N: each of the three datasets
fitted N times (seeds S, S+1000, ...) and the mean R² printed, so that the fit's own spread
(0.005-0.01 on the Kaggle DLRM's 26 tables) does not decide the comparison (default 1).
--average: with --fits N, the R² of the N fits' mean prediction instead of their mean R².
--budget N: the active dataset's random and chosen shards (default 200; the singles are
measured in both datasets and not counted); the "first" column is then the first N.
--fit-opts OPTS: as-costfit's options for every fit (e.g. "--steps 600"). --keep DIR: the
random, first, active and held-out records written to DIR/NAME-{random,first,active,heldout}.ast.
The records are written again with tests/test_helper/mp.py's encoder (standard library).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import aspipe

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mp", os.path.join(here, "..", "tests", "test_helper", "mp.py"))
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)


def counts(n, low):
    """an argparse type: n comma-separated integers, each >= low"""
    def parse(text):
        try:
            v = tuple(int(x) for x in text.split(","))
        except ValueError:
            v = ()
        if len(v) != n or min(v) < low:
            raise argparse.ArgumentTypeError("'%s' is not %d comma-separated counts >= %d" % (text, n, low))
        return v
    return parse


ap = argparse.ArgumentParser(prog="active-replay.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("name", metavar="NAME")
ap.add_argument("ft", metavar="FT")
ap.add_argument("top", metavar="DIR")
ap.add_argument("seed", metavar="SEED", type=int)
ap.add_argument("bin", metavar="BIN", nargs="?", default="bin")
ap.add_argument("--one-run", metavar="RANDOM,HELDOUT", type=counts(2, 1))
ap.add_argument("--loop", metavar="INIT,VAL,BATCH", type=counts(3, 1), default=(80, 40, 20))
ap.add_argument("--fits", metavar="N", type=lambda t: counts(1, 1)(t)[0], default=1)
ap.add_argument("--explore", metavar="K", type=lambda t: counts(1, 0)(t)[0], default=0)
ap.add_argument("--ensemble", metavar="K", type=lambda t: counts(1, 2)(t)[0], default=3)
ap.add_argument("--average", action="store_true")
ap.add_argument("--budget", metavar="N", type=lambda t: counts(1, 2)(t)[0], default=200)
ap.add_argument("--keep", metavar="DIR")
ap.add_argument("--fit-opts", metavar="OPTS", default="")
ap.add_argument("--diverse", metavar="M", type=lambda t: counts(1, 1)(t)[0], default=0)
a = ap.parse_args()
if a.fits > 100:
    ap.error("--fits: at most 100")
if a.one_run and a.one_run[0] < a.budget:
    ap.error("--one-run: RANDOM must be at least the --budget (the random dataset compared)")
name, ft, top, seed, W, one, loop, nfits = a.name, a.ft, a.top, a.seed, a.bin, a.one_run, a.loop, a.fits
if a.explore > a.loop[2]:
    ap.error("--explore: at most the round's BATCH")
d = tempfile.mkdtemp()


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, check=True).stdout


def show(f):
    """the cost records of f, every field (aspipe.records: as-show --full -k cost)"""
    return aspipe.records("cost", f, exe="%s/as-show" % W)


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
    sh("cat %s %s/tr.ast | %s/as-costfit -q --seed %d %s %s -o %s" % (ft, d, W, s, a.fit_opts, extra, f))


def preds(model, f, seen):
    """(measured, predicted) ms of the held-out shards of f a training set has not seen"""
    rs = [json.loads(l) for l in sh("%s/as-costfit -q --predict %s %s %s | %s/as-show -k cost" % (W, model, ft, f, W)).splitlines()]
    rs = [r for r in rs if r.get("cost_ms") and key(r) not in seen]
    return [r["cost_ms"] for r in rs], [r["pred_ms"] for r in rs]


def r2of(y, p):
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
while len(init) + len(val) + len(chosen) + NB <= a.budget:
    ens = ""
    for k in range(1, a.ensemble + 1):
        fit(S + init + chosen, seed * 100 + k, "%s/m%d.ast" % (d, k))
        ens += " --ensemble %s/m%d.ast" % (d, k)
    left = [r for r in pool if r not in chosen]
    # --explore K: the round's first K of the candidates as they were drawn (random), the
    # other BATCH - K where the ensemble disagrees most
    rnd, left = left[:a.explore], left[a.explore:]
    write([dict({"kind": "shard", "tables": r["tables"]}, **({"pieces": r["pieces"]} if r.get("pieces") else {})) for r in left], d + "/cand.ast")
    write(S + init + chosen + val, d + "/meas.ast")
    nb = NB - a.explore
    sel = [json.loads(l) for l in sh("cat %s %s/meas.ast %s/cand.ast | %s/as-costfit -q --select %d%s | %s/as-show -k shard"
                                     % (ft, d, d, W, nb * max(1, a.diverse), ens, W)).splitlines()] if nb > 0 else []
    if a.diverse > 1:
        # --diverse M: of the M x batch most disputed, greedily the one of the largest spread
        # times (1 - its largest table overlap, Jaccard, with those taken this round)
        take, cands = [], [(r["pred_sd_ms"], set(r["tables"]), r) for r in sel]
        while cands and len(take) < nb:
            def score(c):
                ov = max((len(c[1] & t[1]) / len(c[1] | t[1]) for t in take), default=0)
                return c[0] * (1 - ov)
            best = max(cands, key=score)
            cands.remove(best)
            take.append(best)
        sel = [t[2] for t in take]
    ks = {key(r) for r in sel}
    chosen += rnd + [r for r in left if key(r) in ks][:nb]
n = len(init) + len(val) + len(chosen)
res = []
if a.keep:
    os.makedirs(a.keep, exist_ok=True)
    for nm, recs in (("random", R), ("first", S + P[:n]), ("active", S + init + val + chosen), ("heldout", H if one else show(test))):
        write(recs, "%s/%s-%s.ast" % (a.keep, name, nm))
for recs in (R, S + P[:n], S + init + val + chosen):
    v, ps = [], []
    for q in range(nfits):
        fit(recs, seed + 1000 * q, d + "/m.ast", "--test-frac 0")
        ys, p = preds(d + "/m.ast", test, seen)
        ps.append(p)
        v.append(r2of(ys, p))
    res.append(sum(v) / len(v))
    if a.average:
        res[-1] = r2of(ys, [sum(c) / len(c) for c in zip(*ps)])
print("| %s | %d | %.4f | %.4f | %.4f | %d |" % (name, seed, res[0], res[1], res[2], n))
sh("rm -rf " + d)
