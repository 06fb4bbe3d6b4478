#!/usr/bin/python3
"""costfit-kinds.py - which cost model measures shards of several training kinds better: one
model per kind (what as-costfit enforces: it refuses a mix), or one model over all kinds with
the kind as two more per-table features (weight bytes 2 or 4; the optimizer's state floats
per weight: SGD 0, row-wise Adagrad 1/dim, Adam 2), or one over all kinds without them.
An experiment (issue 40), not a stage: the same network as lib/model/costmodel.h (per table the
features -> 128 -> 32, ReLU, summed over the shard's tables -> 64 -> 1), as-costfit's
default output form and loss ("softplus": cost = y_scale softplus(20 z) / 20, y_scale the
mean training cost, MSE of cost / y_scale), z-scored dim/rows/pooling, Adam at 1e-3, batches
of 512 shards, written here in PyTorch (Debian's python3-torch) so that every arm is the
same code.

usage: pipelines/costfit-kinds.py --features FT.ast KIND=COSTS.ast... [--epochs N] [--seeds S]
                                  [--test-frac F] [--bin DIR]

KIND is WEIGHTS+OPTIMIZER (fp16+sgd, fp32+exact_rowwise_adagrad, ...): the cost records of
COSTS.ast (as-bench --weights-type WEIGHTS --optimizer OPTIMIZER; the same --sample/--seed
for every kind, so the same shards) are that kind's. The shards are split once into training
and test shards by their table lists (the same split for every kind; --test-frac, default
0.2); each arm is trained with --seeds seeds (default 3) and judged on every kind's test
shards: R^2 of the costs and MAPE. Prints a markdown table; exit 2 on bad arguments.
"""
import math
import sys

import aspipe

torch = None          # imported in main (--help and usage errors need no torch)
OPT_STATE = {"sgd": lambda d: 0.0, "exact_rowwise_adagrad": lambda d: 1.0 / d, "adam": lambda d: 2.0}
aspipe.set_prog("costfit-kinds")
usage = aspipe.usage


def records(path, kind, bindir):
    """the records of one kind of path, through bindir/as-show (aspipe.records); exit 1 naming
    the file when as-show cannot read it"""
    try:
        return aspipe.records(kind, path, full=False, exe=bindir + "/as-show")
    except ValueError as e:
        aspipe.fail(e)


def _arg_error(message):
    """argparse's usage errors in this script's words"""
    opt = aspipe.missing_value(message)
    return "%s needs a value" % opt if opt else None


def parse(argv):
    ap = aspipe.ArgumentParser(prog="costfit-kinds.py", description=__doc__, error_hook=_arg_error,
                               usage="%(prog)s --features FT.ast KIND=COSTS.ast... [--epochs N] [--seeds S] "
                                     "[--test-frac F] [--bin DIR]")
    ap.add_argument("kinds", nargs="*", metavar="KIND=COSTS.ast",
                    help="WEIGHTS+OPTIMIZER=the cost records measured in that kind (at least two)")
    ap.add_argument("--features", metavar="FT.ast", help="the tables' features (as-features)")
    ap.add_argument("--epochs", metavar="N", help="training epochs of every arm (default 300)")
    ap.add_argument("--seeds", metavar="S", help="seeds of every arm (default 3)")
    ap.add_argument("--test-frac", metavar="F", help="the test shards' share (default 0.2)")
    ap.add_argument("--bin", metavar="DIR", default="bin", help="the tools (default bin)")
    a, extra = ap.parse_known_args(argv[1:])
    o = {"features": a.features, "kinds": [], "epochs": 300, "seeds": 3, "test_frac": 0.2, "bin": a.bin}
    for key, conv, opt in (("epochs", int, "--epochs"), ("seeds", int, "--seeds"), ("test_frac", float, "--test-frac")):
        v = getattr(a, key)
        if v is not None:
            try:
                o[key] = conv(v)
            except ValueError:
                usage("bad value for %s: %s" % (opt, v))
    for x in a.kinds + extra:
        if "=" in x and "+" in x.split("=", 1)[0]:
            k, p = x.split("=", 1)
            w, opt = k.split("+", 1)
            if w not in ("fp16", "fp32", "bf16") or opt not in OPT_STATE:
                usage("unknown kind %s (WEIGHTS+OPTIMIZER)" % k)
            o["kinds"].append((k, w, opt, p))
        else:
            usage("unknown argument %s (see --help)" % x)
    if not o["features"] or len(o["kinds"]) < 2:
        usage("--features and at least two KIND=COSTS.ast are needed")
    return o


def net_class():
    """the network (lib/model/costmodel.h's shape), a torch.nn.Module"""
    class Net(torch.nn.Module):
        def __init__(self, F):
            super().__init__()
            self.t1, self.t2 = torch.nn.Linear(F, 128), torch.nn.Linear(128, 32)
            self.s1, self.s2 = torch.nn.Linear(32, 64), torch.nn.Linear(64, 1)

        def forward(self, x, seg, n):
            h = torch.relu(self.t2(torch.relu(self.t1(x))))
            s = torch.zeros(n, 32, dtype=h.dtype).index_add_(0, seg, h)
            return self.s2(torch.relu(self.s1(s))).squeeze(1)
    return Net


def table_vec(f, w, opt, with_kind, stats):
    v = list(f["features"])
    for j in range(3):
        v[j] = (v[j] - stats[0][j]) / stats[1][j]
    if with_kind:
        v += [4.0 if w == "fp32" else 2.0, OPT_STATE[opt](f["dim"])]
    return v


def batch(shards, feats, with_kind, stats):
    xs, seg = [], []
    for k, (tables, w, opt, _) in enumerate(shards):
        for t in tables:
            xs.append(table_vec(feats[t], w, opt, with_kind, stats))
            seg.append(k)
    return (torch.tensor(xs, dtype=torch.float64), torch.tensor(seg, dtype=torch.long),
            torch.tensor([s[3] for s in shards], dtype=torch.float64))


def train(shards, feats, with_kind, stats, epochs, seed):
    torch.manual_seed(seed)
    F = 21 + (2 if with_kind else 0)
    net = net_class()(F).double()
    y_scale = sum(s[3] for s in shards) / len(shards)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(shards), generator=g).tolist()
        for b0 in range(0, len(shards), 512):
            part = [shards[i] for i in perm[b0:b0 + 512]]
            x, seg, y = batch(part, feats, with_kind, stats)
            z = net(x, seg, len(part))
            loss = ((torch.nn.functional.softplus(20.0 * z) / 20.0 - y / y_scale) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net, y_scale


def judge(net, y_scale, shards, feats, with_kind, stats):
    with torch.no_grad():
        x, seg, y = batch(shards, feats, with_kind, stats)
        p = y_scale * torch.nn.functional.softplus(20.0 * net(x, seg, len(shards))) / 20.0
    mse = float(((p - y) ** 2).mean())
    var = float(((y - y.mean()) ** 2).mean())
    return 1 - mse / var, 100.0 * float((torch.abs(p - y) / y).mean())


def main(argv):
    global torch
    o = parse(argv)
    try:
        import torch as _torch
    except ImportError as e:
        aspipe.fail("cannot import torch (%s): run with a python3 that has torch (Debian's python3-torch)" % e, 3)
    torch = _torch
    feats = {r["id"]: r for r in records(o["features"], "features", o["bin"]) if r.get("piece") is None}
    data = {}
    for k, w, opt, path in o["kinds"]:
        rs = [r for r in records(path, "cost", o["bin"]) if r.get("cost_ms") and not r.get("error")
              and r.get("pieces") is None]
        got = {(r.get("weights_type") or "fp16", r.get("optimizer") or "sgd") for r in rs}
        if got - {(w, opt), ("mixed", opt)}:
            usage("%s: its records measured %s, not %s" % (path, sorted(got), k))
        data[k] = {tuple(r["tables"]): r["cost_ms"] for r in rs if all(t in feats for t in r["tables"])}
    common = sorted(set.intersection(*(set(d) for d in data.values())))
    g = torch.Generator().manual_seed(12345)
    perm = torch.randperm(len(common), generator=g).tolist()
    ntest = int(len(common) * o["test_frac"])
    test = {common[i] for i in perm[:ntest]}
    train_keys = [common[i] for i in perm[ntest:]]
    # the z-score statistics of dim, rows, pooling over the training shards' tables
    tabs = sorted({t for key in train_keys for t in key})
    stats = [[0.0] * 3, [1.0] * 3]
    for j in range(3):
        v = [feats[t]["features"][j] for t in tabs]
        m = sum(v) / len(v)
        sd = math.sqrt(sum((x - m) ** 2 for x in v) / len(v)) or 1.0
        stats[0][j], stats[1][j] = m, sd
    sh = {k: ([(list(key), w, opt, data[k][key]) for key in train_keys],
              [(list(key), w, opt, data[k][key]) for key in sorted(test)]) for k, w, opt, _ in o["kinds"]}
    arms = [("one model per kind", "own", False), ("one model, kind as features", "joint", True),
            ("one model, kind not given", "joint", False)]
    res = {}
    for name, how, wk in arms:
        for seed in range(o["seeds"]):
            if how == "joint":
                net, ys = train([s for k in sh for s in sh[k][0]], feats, wk, stats, o["epochs"], seed)
            for k in sh:
                if how == "own":
                    net, ys = train(sh[k][0], feats, wk, stats, o["epochs"], seed)
                res.setdefault((name, k), []).append(judge(net, ys, sh[k][1], feats, wk, stats))
    print("%d shards measured in every kind: %d training, %d test; %d seeds, %d epochs\n" %
          (len(common), len(train_keys), ntest, o["seeds"], o["epochs"]))
    print("| model | " + " | ".join("%s R² | MAPE" % k for k, *_ in o["kinds"]) + " |")
    print("|---|" + "---|---|" * len(o["kinds"]))
    for name, _, _ in arms:
        cells = []
        for k, *_ in o["kinds"]:
            v = res[(name, k)]
            r2 = [a for a, _ in v]
            mp = [b for _, b in v]
            cells.append("%.3f (%.3f-%.3f) | %.1f %%" % (sum(r2) / len(r2), min(r2), max(r2), sum(mp) / len(mp)))
        print("| %s | %s |" % (name, " | ".join(cells)))


if __name__ == "__main__":
    main(sys.argv)
