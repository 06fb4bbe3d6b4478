#!/usr/bin/env python3
"""plan_choose.py - choose a model's plan on its measurement and say why, for `make plan`.

usage: python3 pipelines/plan_choose.py MEASURED.csv KERNEL.csv [--tie F] [--loadable FILE]
                                        [--out-alg FILE]

MEASURED.csv is `as-eval --format csv --table plans` of the measured plans with communication
charged (as-eval's default, --comm-gbps); KERNEL.csv the same with --comm-gbps 0 (the kernel
alone). Every plan must be of one task (a model config's one task). The chosen plan has the
lowest slowest rank (max_ms) with communication charged; a simpler plan within --tie (default
0.01: 1 %) of it, or one it does not beat in every pass (as-bench --passes: as-eval's
max_ms_passes), is chosen instead, simplest first: a table-wise plan (no '+' in its label),
then one with split tables (+split), then a refined one (+split+refine), then one repaired on
its measurement (+measured: as-plan --repair); plans a planner of
ours did not make (torchrec, torchrec-own and other imports) are candidates like the others.
Infeasible plans and plans with an unmeasured shard are never chosen; with --loadable FILE
(one label per line: the plans TorchRec can load, as torchrec_plan.py --check says), neither
are the others, and the verdict names a faster plan TorchRec cannot load when there is one.

Prints the verdict as markdown (the chosen plan against TorchRec's planner (`torchrec`), TorchRec's
own plan (`torchrec-own`, when measured) and the best table-wise plan, by how much, with and
without the communication, and whether the measurement's passes agree) on standard output;
--out-alg FILE gets the chosen label alone. Exit 1 with a message on input it cannot use.
Only the standard library.
"""
import csv
import sys


def fail(msg):
    sys.stderr.write("plan_choose: %s\n" % msg)
    sys.exit(1)


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    need = {"task", "alg", "max_ms", "feasible", "passes", "balance_pass_lo", "balance_pass_hi", "balance"}
    if not rows or not need.issubset(rows[0].keys()):
        fail("%s: not as-eval's CSV plans table (as-eval --format csv --table plans)" % path)
    if len({r["task"] for r in rows}) != 1:
        fail("%s: plans of several tasks: a model config's plans are of one task" % path)
    out = {}
    for r in rows:
        if r["alg"] in out:
            fail("%s: two plans labelled %s" % (path, r["alg"]))
        try:
            mx = float(r["max_ms"]) if r["max_ms"] else float("nan")
        except ValueError:
            fail("%s: %s: max_ms '%s' is not a number" % (path, r["alg"], r["max_ms"]))
        passes = []
        for v in (r.get("max_ms_passes") or "").split(";"):
            try:
                passes.append(float(v))
            except ValueError:
                passes = []
                break
        out[r["alg"]] = dict(r, max=mx, pmax=passes)
    return out


def simplicity(alg):
    """how far a plan is from its planner's table-wise plan: one for each of split tables,
    replicated (data-parallel) tables and the refinement"""
    return sum(m in alg for m in ("+split", "+dp", "+refine", "+measured"))


def usable(r):
    return r["feasible"] == "true" and r["max"] == r["max"] and r["max"] > 0


def main(argv):
    args = argv[1:]
    tie, out_alg, loadable = 0.01, None, None
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        if a in ("--tie", "--out-alg", "--loadable"):
            if i + 1 >= len(args):
                sys.stderr.write("plan_choose: %s needs a value\n" % a)
                return 2
            if a == "--tie":
                try:
                    tie = float(args[i + 1])
                except ValueError:
                    tie = -1
                if not 0 <= tie <= 1:
                    sys.stderr.write("plan_choose: --tie must be a fraction in [0, 1]\n")
                    return 2
            elif a == "--loadable":
                try:
                    with open(args[i + 1]) as f:
                        loadable = {l.strip() for l in f if l.strip()}
                except OSError as e:
                    fail("%s: %s" % (args[i + 1], e.strerror))
            else:
                out_alg = args[i + 1]
            i += 2
            continue
        pos.append(a)
        i += 1
    if len(pos) != 2:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    comm, kern = read(pos[0]), read(pos[1])
    if set(comm) != set(kern):
        fail("the two tables hold different plans")
    measured = [a for a in comm if usable(comm[a])]
    cand = [a for a in measured if loadable is None or a in loadable]
    if not cand:
        fail("no plan is feasible, measured on every rank%s" % ("" if loadable is None else " and loadable by TorchRec"))
    first = min(cand, key=lambda a: (comm[a]["max"], simplicity(a), a))
    best = comm[first]["max"]
    def held(a):
        """the fastest plan is faster than a in every pass"""
        f, o = comm[first]["pmax"], comm[a]["pmax"]
        return len(f) >= 2 and len(f) == len(o) and all(x < y for x, y in zip(f, o))

    within = [a for a in cand if comm[a]["max"] <= best * (1 + tie) or
              (comm[first]["pmax"] and not held(a) and a != first)]
    chosen = min(within, key=lambda a: (simplicity(a), comm[a]["max"], a))
    c = comm[chosen]

    def faster(r):
        return "%.3fx faster" % r if r >= 1 else "%.3fx slower" % (1 / r)

    def vs(other, what):
        if other not in comm or not usable(comm[other]):
            return None
        o = comm[other]
        k0, k1 = kern[chosen]["max"], kern[other]["max"]
        return "- against %s (`%s`): %s with the communication (slowest rank %.4f against %.4f ms), " \
               "%s on the kernel alone (%.4f against %.4f ms)." % (
                   what, other, faster(o["max"] / c["max"]), c["max"], o["max"], faster(k1 / k0), k0, k1)

    lines = ["## The chosen plan: `%s`" % chosen, ""]
    lines.append("Chosen on its measurement: the lowest slowest rank with the communication charged "
                 "(%.4f ms; the kernel alone %.4f ms, balance %.1f %%)%s." % (
                     c["max"], kern[chosen]["max"], 100 * float(c["balance"] or "nan"),
                     "" if comm[chosen]["max"] <= best else
                     ", the simplest plan within %.0f %% of the fastest (`%s`, %.4f ms) or not beaten by it in "
                     "every pass" % (100 * tie, first, best)))
    lines.append("")
    tw = [a for a in cand if simplicity(a) == 0 and not a.startswith("torchrec")]
    for other, what in (("torchrec", "TorchRec's planner as we run it"), ("torchrec-own", "TorchRec's own planner")):
        s = vs(other, what)
        if s and other != chosen:
            lines.append(s)
    if tw:
        btw = min(tw, key=lambda a: comm[a]["max"])
        if btw != chosen:
            lines.append(vs(btw, "the best table-wise plan"))
    fastest = min(measured, key=lambda a: comm[a]["max"])
    if fastest not in cand and comm[fastest]["max"] < c["max"]:
        lines.append("- `%s` measured %s (slowest rank %.4f ms) but TorchRec cannot load it (its row blocks are "
                     "placed where TorchRec's row_wise cannot put them): not chosen."
                     % (fastest, faster(c["max"] / comm[fastest]["max"]), comm[fastest]["max"]))
    lines.append("")
    try:
        n = int(c["passes"] or 1)
    except ValueError:
        n = 1
    if n >= 2:
        lines.append("The plans were measured in %d passes made apart; the chosen plan's balance was %.1f-%.1f %% over them."
                     % (n, 100 * float(c["balance_pass_lo"]), 100 * float(c["balance_pass_hi"])))
    lines.append("Figures: measured kernel times; the communication is modelled (as-eval --comm-gbps), not measured.")
    sys.stdout.write("\n".join(lines) + "\n")
    if out_alg:
        with open(out_alg, "w") as f:
            f.write(chosen + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
