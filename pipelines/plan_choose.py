#!/usr/bin/env python3
"""plan_choose.py - choose a model's plan on its measurement and say why, for `make plan`.

usage: python3 pipelines/plan_choose.py MEASURED.csv KERNEL.csv [--tie F] [--loadable FILE]
                                        [--out-alg FILE]
       python3 pipelines/plan_choose.py --robust RANGE.csv [--tie F] [--out-alg FILE]

--chosen ALG (with the two tables): ALG is the choice, a loadable candidate, whatever the rule
says (make plan: the robust pick of --robust); the verdict says so.

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
--out-alg FILE gets the chosen label alone.

With --robust, RANGE.csv is `as-eval --format csv --table range` of the candidates with the
choice made (--chosen): the choice stays when it is the best (within --tie) at every point of
the plausible range (every collective's bandwidth, the all-to-all's alone and every call's
latency from 0.5x to 2x the model's) and under the other models given (--range-model);
otherwise the candidate whose worst case (its slowest rank over the best candidate's, the
largest over those points and models) is least is chosen instead, and --out-alg FILE is
rewritten with it. Prints a paragraph saying which, with the worst cases.

The tables are read as CSV (RFC 4180: a label holding a comma or a quote is a quoted field)
and checked before anything is chosen: UTF-8 text, as-eval's columns (the per-pass ones,
passes, balance_pass_lo, balance_pass_hi and max_ms_passes, only when the plans were measured
in 2 passes or more: as-eval leaves them out for one pass), each row as many fields as the
header, every figure a finite number or empty (not measured), as many per-pass figures as
passes, labels without control characters. Exit 0 with the choice; 1 on input it cannot use
(a missing or unreadable file, not as-eval's table), with one line `plan_choose: ...`; 2 on
bad arguments; 3 when standard output or --out-alg FILE cannot be written. Only the standard
library.
"""
import csv
import io
import math
import re
import sys

import aspipe

PROG = "plan_choose"
MAX_BYTES = 64 << 20      # bytes of one CSV table or --loadable file
NEED = ("task", "alg", "max_ms", "feasible", "balance")
PASS_COLS = ("passes", "balance_pass_lo", "balance_pass_hi")
aspipe.PROG = PROG
safe, say, fail, stdout_failed, emit = aspipe.safe, aspipe.say, aspipe.fail, aspipe.stdout_failed, aspipe.emit


USAGE_LINE = ("usage: python3 pipelines/plan_choose.py MEASURED.csv KERNEL.csv [--tie F] "
              "[--loadable FILE] [--out-alg FILE] (--help for more)")


def usage(msg):
    say(msg)
    if sys.stderr is not None:
        try:
            sys.stderr.write(USAGE_LINE + "\n")
        except (OSError, ValueError):
            pass
    sys.exit(2)


def read_text(path, what="a file"):
    """the UTF-8 text of a file, or exit 1 saying why not"""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        fail("%s: %s" % (path, e.strerror or e))
    if len(raw) > MAX_BYTES:
        fail("%s: larger than %d bytes: not %s" % (path, MAX_BYTES, what))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("%s: not UTF-8 text (byte %d): not %s" % (path, e.start + 1, what))


def number(path, line, col, v, alg):
    """a figure of as-eval's table: a finite number, or NaN for an empty field (not measured)"""
    if v == "":
        return float("nan")
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not math.isfinite(x):
        fail("%s: line %d (%s): %s '%s' is not a number" % (path, line, alg, col, v))
    return x


def label_bad(a):
    """an empty label, or one with a control character (as-eval's labels never are: as_name_bad)"""
    return not a or aspipe.CTRL.search(a) is not None


TABLE = "as-eval's CSV plans table (as-eval --format csv --table plans)"


def read(path):
    """{alg: row} of as-eval's CSV plans table, each figure checked, or exit 1 naming what is wrong"""
    text = read_text(path, TABLE)
    rd = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = []
        for rec in rd:
            if rec:                     # (a blank line: none)
                rows.append((rd.line_num, rec))
    except csv.Error as e:
        fail("%s: line %d: not CSV (%s): not %s" % (path, rd.line_num, e, TABLE))
    if not rows:
        fail("%s: empty: not %s" % (path, TABLE))
    head = rows[0][1]
    if len(set(head)) != len(head):
        fail("%s: a column named twice in the header: not %s" % (path, TABLE))
    miss = [c for c in NEED if c not in head]
    if miss:
        fail("%s: no column %s: not %s" % (path, ", ".join(miss), TABLE))
    have_pass = [c for c in PASS_COLS if c in head]
    if have_pass and len(have_pass) != len(PASS_COLS):
        fail("%s: per-pass columns %s without %s: not %s" % (
            path, ", ".join(have_pass), ", ".join(c for c in PASS_COLS if c not in head), TABLE))
    if not have_pass and "max_ms_passes" in head:
        fail("%s: a max_ms_passes column without passes: not %s" % (path, TABLE))
    if len(rows) == 1:
        fail("%s: no plan in the table (its header alone)" % path)
    out = {}
    task = None
    for line, rec in rows[1:]:
        if len(rec) != len(head):
            fail("%s: line %d: %d fields, the header has %d (a label holding a comma must be quoted): not %s" % (
                path, line, len(rec), len(head), TABLE))
        r = dict(zip(head, rec))
        alg = r["alg"]
        if label_bad(alg):
            fail("%s: line %d: plan label '%s': empty or a control character in it" % (path, line, alg))
        if task is None:
            task = r["task"]
        elif r["task"] != task:
            fail("%s: plans of several tasks (%s, %s): a model config's plans are of one task" % (path, task, r["task"]))
        if alg in out:
            fail("%s: line %d: two plans labelled %s" % (path, line, alg))
        if r["feasible"] not in ("true", "false"):
            fail("%s: line %d (%s): feasible '%s' is neither true nor false" % (path, line, alg, r["feasible"]))
        row = dict(r, line=line, max=number(path, line, "max_ms", r["max_ms"], alg),
                   bal=number(path, line, "balance", r["balance"], alg), npass=1, pmax=[],
                   plo=float("nan"), phi=float("nan"))
        if have_pass:
            v = r["passes"]
            if v == "":
                n = 1
            elif not re.fullmatch(r"[0-9]{1,6}", v):
                fail("%s: line %d (%s): passes '%s' is not a count of passes" % (path, line, alg, v))
            else:
                n = int(v)
            row["npass"] = max(n, 1)
            row["plo"] = number(path, line, "balance_pass_lo", r["balance_pass_lo"], alg)
            row["phi"] = number(path, line, "balance_pass_hi", r["balance_pass_hi"], alg)
            mp = r.get("max_ms_passes", "")
            if mp != "":
                pm = [number(path, line, "max_ms_passes", x, alg) for x in mp.split(";")]
                if any(x != x for x in pm) or len(pm) != n:
                    fail("%s: line %d (%s): max_ms_passes '%s' is not %d numbers (passes %s) separated by ';'"
                         % (path, line, alg, mp, n, v))
                row["pmax"] = pm
        out[alg] = row
    return task, out


def read_loadable(path):
    """the labels of a --loadable file, one a line"""
    text = read_text(path, "a file of plan labels, one a line")
    return {l for l in text.split("\n") for l in [l.rstrip("\r")] if l}


def simplicity(alg):
    """how far a plan is from its planner's table-wise plan: one for each of split tables,
    replicated (data-parallel) tables and the refinement"""
    return sum(m in alg for m in ("+split", "+dp", "+refine", "+measured"))


def usable(r):
    return r["feasible"] == "true" and math.isfinite(r["max"]) and r["max"] > 0


def code(s):
    """a label as markdown code: `s`, or `` s `` when it holds a backtick"""
    return "`` %s ``" % s if "`" in s else "`%s`" % s


def write_alg(path, alg):
    """--out-alg FILE: the chosen label alone, or exit 3"""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(alg + "\n")
    except OSError as e:
        fail("--out-alg %s: %s" % (path, e.strerror or e), 3)


def read_range(path):
    """as-eval --table range's CSV: {'chosen': alg, 'robust': (alg, holds), 'worst': {alg: x}}"""
    text = read_text(path)
    rows = list(csv.DictReader(io.StringIO(text)))
    need = ("run", "task", "what", "knob", "x_from", "x_to", "alg", "value")
    if not rows or any(k not in rows[0] for k in need):
        fail("%s: not as-eval's CSV range table (columns %s)" % (safe(path), ",".join(need)))
    out = {"chosen": None, "robust": None, "worst": {}}
    tasks = set()
    for i, r in enumerate(rows, 2):
        tasks.add((r["run"], r["task"]))
        a = r["alg"] or ""
        if label_bad(a):
            fail("%s:%d: a label with control characters" % (safe(path), i))
        try:
            v = float(r["value"])
        except (TypeError, ValueError):
            fail("%s:%d: value %s is not a number" % (safe(path), i, safe(r["value"])))
        if not math.isfinite(v):
            fail("%s:%d: value %s is not a finite number" % (safe(path), i, safe(r["value"])))
        if r["what"] == "chosen":
            out["chosen"] = a
        elif r["what"] == "robust":
            out["robust"] = (a, v >= 1)
        elif r["what"] == "worst":
            out["worst"][a] = v
    if len(tasks) != 1:
        fail("%s: %d tasks: the range of one model's task" % (safe(path), len(tasks)))
    if out["chosen"] is None or out["robust"] is None or out["chosen"] not in out["worst"] \
            or out["robust"][0] not in out["worst"]:
        fail("%s: no chosen, robust and worst rows: not as-eval's range of a choice" % safe(path))
    return out


def robust(path, tie, out_alg):
    """--robust: keep the choice, or pick the candidate of the least worst case"""
    r = read_range(path)
    chosen, (pick, holds) = r["chosen"], r["robust"]
    w = r["worst"]
    lines = ["", "### How far the choice holds", ""]
    if holds:
        lines.append("The choice %s is the best candidate TorchRec can load (within %.0f %%) at every point of the "
                     "plausible range (every collective's bandwidth, the all-to-all's alone and every call's latency "
                     "from 0.5x to 2x the model's) and under the other models: it holds." % (code(chosen), 100 * tie))
    else:
        others = sorted(((x, a) for a, x in w.items() if a != chosen))
        near = ", ".join("%s %.3fx" % (code(a), x) for x, a in others[:3])
        lines.append("In part of the plausible range (every collective's bandwidth, the all-to-all's alone and every "
                     "call's latency from 0.5x to 2x the model's) or under another model, another candidate is the "
                     "faster. Each candidate's worst case, its slowest rank over the best one's: %s %.3fx; %s." % (
                         code(chosen), w[chosen], near))
        if pick != chosen:
            lines.append("")
            lines.append("**The choice is %s instead of %s**: its worst case (%.3fx the best) is less than %s's "
                         "(%.3fx). The rule: the measured choice stays when it holds over the plausible range and "
                         "the other models; else the candidate of the least worst case is chosen." % (
                             code(pick), code(chosen), w[pick], code(chosen), w[chosen]))
        else:
            lines.append("")
            lines.append("The choice keeps the least worst case of the candidates: it stays.")
    emit("\n".join(lines) + "\n")
    if out_alg and pick != chosen and not holds:
        write_alg(out_alg, pick)
    return 0


def _arg_error(message):
    """argparse's usage errors in this script's words"""
    opt = aspipe.missing_value(message)
    return "%s needs a value" % opt if opt else None


def parser():
    ap = aspipe.ArgumentParser(prog="plan_choose.py", description=__doc__, error_hook=_arg_error, hint=USAGE_LINE,
                               usage="%(prog)s MEASURED.csv KERNEL.csv [--tie F] [--loadable FILE] [--out-alg FILE] "
                                     "[--chosen ALG]\n       %(prog)s --robust RANGE.csv [--tie F] [--out-alg FILE]")
    ap.add_argument("tables", nargs="*", metavar="TABLE.csv",
                    help="MEASURED.csv and KERNEL.csv: as-eval --format csv --table plans, communication charged and not")
    ap.add_argument("--tie", metavar="F", help="a simpler plan within F of the fastest is chosen (default 0.01)")
    ap.add_argument("--loadable", metavar="FILE", help="the labels TorchRec can load, one a line: only they are chosen")
    ap.add_argument("--out-alg", metavar="FILE", help="gets the chosen label alone")
    ap.add_argument("--chosen", metavar="ALG", help="ALG is the choice (a loadable candidate); the verdict says so")
    ap.add_argument("--robust", metavar="RANGE.csv",
                    help="as-eval --table range of the candidates: keep the choice or pick the least worst case")
    return ap


def main(argv):
    a, extra = parser().parse_known_args(argv[1:])
    for x in extra:
        if x.startswith("-") and x != "-":
            usage("unknown option %s" % x)
    pos = a.tables + [x for x in extra]
    tie, out_alg, loadable, rng, forced = 0.01, a.out_alg, a.loadable, a.robust, a.chosen
    if a.tie is not None:
        try:
            tie = float(a.tie)
        except ValueError:
            tie = -1
        if not 0 <= tie <= 1:
            usage("--tie must be a fraction in [0, 1]")
    if out_alg is not None and not out_alg:
        usage("--out-alg needs a file name")
    if rng is not None:
        if pos or loadable is not None or forced is not None:
            usage("--robust RANGE.csv takes no other table, no --loadable, no --chosen")
        if sys.stdout is None:
            stdout_failed("closed")
        return robust(rng, tie, out_alg)
    if len(pos) != 2:
        usage("two tables, MEASURED.csv and KERNEL.csv, not %d" % len(pos))
    if sys.stdout is None:
        stdout_failed("closed")
    if loadable is not None:
        loadable = read_loadable(loadable)
    (t0, comm), (t1, kern) = read(pos[0]), read(pos[1])
    if set(comm) != set(kern):
        fail("the two tables hold different plans (%s has %d, %s %d)" % (pos[0], len(comm), pos[1], len(kern)))
    if t0 != t1:
        fail("the two tables are of different tasks (%s, %s)" % (t0, t1))
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
              (len(comm[first]["pmax"]) >= 2 and not held(a) and a != first)]
    chosen = min(within, key=lambda a: (simplicity(a), comm[a]["max"], a))
    by_rule = chosen
    if forced is not None and forced != chosen:
        if forced not in cand:
            fail("--chosen %s is not a candidate (feasible, measured%s)" % (safe(forced), "" if loadable is None else ", loadable"))
        chosen = forced
    c = comm[chosen]

    def faster(r):
        return "%.3fx faster" % r if r >= 1 else "%.3fx slower" % (1 / r)

    def vs(other, what):
        if other not in comm or not usable(comm[other]):
            return None
        o = comm[other]
        k0, k1 = kern[chosen]["max"], kern[other]["max"]
        kernel = "%s on the kernel alone (%.4f against %.4f ms)" % (faster(k1 / k0), k0, k1) \
            if k0 > 0 and k1 > 0 else "the kernel alone not measured for both"
        return "- against %s (%s): %s with the communication (slowest rank %.4f against %.4f ms), %s." % (
            what, code(other), faster(o["max"] / c["max"]), c["max"], o["max"], kernel)

    lines = ["## The chosen plan: %s" % code(chosen), ""]
    k = kern[chosen]["max"]
    lines.append("Chosen on its measurement: the lowest slowest rank with the communication charged "
                 "(%.4f ms; the kernel alone %s, balance %s)%s." % (
                     c["max"], "%.4f ms" % k if math.isfinite(k) else "not measured",
                     "%.1f %%" % (100 * c["bal"]) if math.isfinite(c["bal"]) else "n/a",
                     "" if comm[chosen]["max"] <= best else
                     ", the simplest plan within %.0f %% of the fastest (%s, %.4f ms) or not beaten by it in "
                     "every pass" % (100 * tie, code(first), best)))
    if chosen != by_rule:
        lines[-1] = ("Chosen for its worst case as the communication's cost changes (below), not on its measurement "
                     "alone: the rule on the measurement picks %s (%.4f ms); this plan %.4f ms (the kernel alone %s)." % (
                         code(by_rule), comm[by_rule]["max"], c["max"], "%.4f ms" % k if math.isfinite(k) else "not measured"))
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
        lines.append("- %s measured %s (slowest rank %.4f ms) but TorchRec cannot load it (its row blocks are "
                     "placed where TorchRec's row_wise cannot put them): not chosen."
                     % (code(fastest), faster(c["max"] / comm[fastest]["max"]), comm[fastest]["max"]))
    lines.append("")
    if c["npass"] >= 2 and math.isfinite(c["plo"]) and math.isfinite(c["phi"]):
        lines.append("The plans were measured in %d passes made apart; the chosen plan's balance was %.1f-%.1f %% over them."
                     % (c["npass"], 100 * c["plo"], 100 * c["phi"]))
    lines.append("Figures: measured kernel times; the communication is modelled (as-eval --comm-gbps or --comm-model), not measured.")
    emit("\n".join(lines) + "\n")
    if out_alg:
        write_alg(out_alg, chosen)
    return 0


if __name__ == "__main__":
    for _f in (sys.stdout, sys.stderr):       # a label never stops a message or the verdict
        try:
            _f.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass
    sys.exit(main(sys.argv))
