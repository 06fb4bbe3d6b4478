#!/usr/bin/env python3
"""plan_scale.py - what `make plan` measures a model's tables over: the row cap and the batch.

usage: python3 pipelines/plan_scale.py CONFIG --device D [--ngpu N] [--row-cap R] [--batch B]

       python3 pipelines/plan_scale.py --report CONFIG CAP BATCH < features.jsonl

Prints one line, "ROW_CAP BATCH" (0 0: every table at full size, at the config's batch), for
pipelines/plan.mk. --row-cap and --batch take a number (as given), "none" / "config" (0), or
"auto" (the default): on a GPU (--device cuda*, or auto with --ngpu above 0) nothing is
approximated; on the CPU (--device cpu, or auto without a GPU):
  - rows capped at 1,048,576 (as-bench --row-cap) when the model's largest table holds more
    than 1 GiB of fp16 weights: each table above it is measured over that many rows (256 MiB at
    dim 128, 8x the VM's last-level cache), its lookups' distinct rows kept apart;
  - the batch measured at the config's (batch_size_per_rank x world_size) halved until its
    lookups per iteration (batch x the tables' pooling factors) are at most 2,097,152, a
    multiple of the world size; the memory model keeps the config's batch.
A CPU with 2 cores measures ~20 M lookups a second (fwd + bwd + SGD at dim 128): the
DLRM-DCNv2 config's 14 M lookups a batch would take hours for a cost dataset. The config's
sizes are read as as-convert reads them: world_size, batch_size_per_rank, num_embeddings and
embedding_dim JSON integers of at least 1, pooling_factor a finite number >= 0 (1 when not
given); anything else (1e400, NaN, 64.5, a string) is a config it cannot read. Exit 1 with one
line on a config it cannot read, 2 on bad arguments, 3 when standard output cannot be written.
Only the standard library.

--report: the paragraph make plan's report opens its "What this run approximated" section
with, from the resolved CAP and BATCH (0: none, the config's) and the features' records
(as-show --kind features: the tables' names and rows), one JSON object a line on standard
input; exit 1 naming the line on input it cannot use.
"""
import re
import sys

import aspipe

PROG = "plan_scale"
CAP_ROWS = 1048576
CAP_ABOVE_BYTES = 1 << 30
MAX_LOOKUPS = 2097152
MAX_BYTES = aspipe.MAX_CONFIG  # a config's bytes at most (as-convert's MCFG_MAX_FILE); a line of features
aspipe.set_prog(PROG)
safe, say, usage, fail, emit, _show = aspipe.safe, aspipe.say, aspipe.usage, aspipe.fail, aspipe.emit, aspipe.show


def value(arg, name, none_word):
    if arg in ("auto", ""):
        return None
    if arg == none_word or arg == "none":
        return 0
    if not re.fullmatch(r"[0-9]{1,18}", arg):
        usage("%s: '%s' is not a number, auto or %s" % (name, arg, none_word))
    v = int(arg)
    if v < 1:
        usage("%s: '%s' is not a number above 0" % (name, arg))
    return v


class Bad(ValueError):
    """a config or a record that cannot be used"""


def parse(text):
    """one JSON document, strictly: no NaN / Infinity, no number beyond a double"""
    try:
        return aspipe.parse_json(text)
    except ValueError as e:
        raise Bad(str(e)) from None


def integer(d, key, where, lo=1, default=None):
    """d[key]: a JSON integer >= lo (as-convert's get_int: 64.0 and 1e3 are not integers)"""
    try:
        return aspipe.integer(d, key, where, lo, default)
    except ValueError as e:
        raise Bad(str(e)) from None


def config(path):
    """(batch, world, the largest table's fp16 bytes, the pooling factors' sum) of a model
    config (aspipe.read_config), or Bad saying what is wrong"""
    try:
        c = aspipe.read_config(path)
    except ValueError as e:
        raise Bad(str(e)) from None
    topo = c["topology"]
    world = integer(topo, "world_size", "topology: ")
    batch = integer(topo, "batch_size_per_rank", "topology: ") * world
    big, pooling = 0, 0.0
    for i, t in enumerate(c["tables"]):
        where = aspipe.table_where(i, t)
        big = max(big, integer(t, "num_embeddings", where) * integer(t, "embedding_dim", where) * 2)
        p = t.get("pooling_factor", 1)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1e300:
            raise Bad("%spooling_factor: must be a number of at least 0, not %s" % (where, _show(p)))
        pooling += p
    return batch, world, big, pooling


def report(cfg, cap_arg, batch_arg):
    for a, name in ((cap_arg, "CAP"), (batch_arg, "BATCH")):
        if not re.fullmatch(r"[0-9]{1,18}", a):
            usage("--report: %s '%s' is not a number (0: none)" % (name, a))
    cap, b = int(cap_arg), int(batch_arg)
    if sys.stdin is None:
        fail("standard input: closed (the features' records: as-show --kind features)")
    tabs = []
    n = 0
    try:
        while True:
            raw = sys.stdin.buffer.readline(MAX_BYTES + 1)
            if not raw:
                break
            n += 1
            where = "standard input: line %d: " % n
            if len(raw) > MAX_BYTES:
                raise Bad("%slonger than %d bytes" % (where, MAX_BYTES))
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise Bad("%snot UTF-8 text (byte %d)" % (where, e.start + 1)) from None
            if not line.strip():
                continue
            try:
                r = parse(line)
            except Bad as e:
                raise Bad(where + str(e)) from None
            if not isinstance(r, dict):
                raise Bad("%snot a record (a JSON object) but %s" % (where, _show(r)))
            if r.get("kind") != "features" or r.get("piece") is not None:
                continue
            name = r.get("name")
            if name is None:
                name = "t%d" % integer(r, "id", where, lo=0)
            elif not isinstance(name, str) or not name:
                raise Bad("%sname: must be a non-empty string, not %s" % (where, _show(name)))
            rows = integer(r, "rows", where)
            tabs.append((name, rows))
    except OSError as e:
        fail("standard input: cannot read: %s" % (e.strerror or e))
    except Bad as e:
        fail(str(e))
    try:
        batch = config(cfg)[0]
    except Bad as e:
        fail("%s: cannot read the config (%s)" % (cfg, e))
    lines = []
    if cap:
        big = [t for t in tabs if t[1] > cap]
        lines.append("- **Rows capped at %d** (as-bench --row-cap; ROW_CAP): %d table%s above it, %s, and their pieces "
                     "above it were measured over %d rows, their lookups' distinct rows spread over them in order (which "
                     "lookups share a row kept); the features, the memory model and the plans keep every row. How such a "
                     "table's cost changes with its rows, measured below, says how far the capped costs are from the "
                     "whole tables'." %
                     (cap, len(big), "" if len(big) == 1 else "s",
                      ", ".join("%s (%d rows)" % (safe(n), r) for n, r in big) or "none", cap))
    if b:
        lines.append("- **Measured at a batch of %d** (BATCH), not the config's %d: every table's lookups are those of %d "
                     "samples, so the costs are about %.3gx the config's batch's. The memory model keeps the config's "
                     "batch; the communication is modelled at the measured batch (the ids and pooled outputs scale with "
                     "it, the all-reduce of data-parallel tables does not, so it weighs %.3gx more against the kernels "
                     "than at the config's batch)." % (b, batch, b, b / batch, batch / b))
    if not lines:
        lines.append("Nothing: every table was measured whole, at the config's batch.")
    emit("\n".join(lines) + "\n\n")
    return 0


def _arg_error(message):
    """argparse's usage errors in this script's words"""
    if "--report" in message and "expected 3 arguments" in message:
        return "--report CONFIG CAP BATCH"
    opt = aspipe.missing_value(message)
    return "unknown option or missing value: %s" % opt if opt else None


def parser():
    ap = aspipe.ArgumentParser(prog="plan_scale.py", description=__doc__, error_hook=_arg_error,
                               usage="%(prog)s CONFIG --device D [--ngpu N] [--row-cap R] [--batch B]\n"
                                     "       %(prog)s --report CONFIG CAP BATCH < features.jsonl")
    ap.add_argument("config", nargs="?", metavar="CONFIG", help="the model config (docs/FORMAT.md \"Model configs\")")
    ap.add_argument("--device", default="auto", metavar="D", help="cpu, cuda[:N] or auto (default auto)")
    ap.add_argument("--ngpu", default="0", metavar="N", help="GPUs found (auto: above 0 is a GPU; default 0)")
    ap.add_argument("--row-cap", default="auto", metavar="R", help="rows measured at most: a number, none or auto")
    ap.add_argument("--batch", default="auto", metavar="B", help="the batch measured: a number, config or auto")
    ap.add_argument("--report", nargs=3, metavar=("CONFIG", "CAP", "BATCH"),
                    help="the report's paragraph from the resolved CAP and BATCH (0: none), the features' "
                         "records on standard input")
    return ap


def main(argv):
    ap = parser()
    if len(argv) < 2:
        ap.print_help()
        return 0
    a, extra = ap.parse_known_args(argv[1:])
    if extra:
        usage("unknown option or missing value: %s" % extra[0])
    if a.report is not None:
        if a.config is not None:
            usage("--report CONFIG CAP BATCH")
        return report(*a.report)
    if a.config is None:
        usage("CONFIG --device D [--ngpu N] [--row-cap R] [--batch B]")
    cfg = a.config
    opts = {"--device": a.device, "--ngpu": a.ngpu, "--row-cap": a.row_cap, "--batch": a.batch}
    ng = opts["--ngpu"]
    if ng and not re.fullmatch(r"[0-9]{1,6}", ng):
        usage("--ngpu: '%s' is not a count of GPUs" % ng)
    cap = value(opts["--row-cap"], "ROW_CAP", "none")
    b = value(opts["--batch"], "BATCH", "config")
    if sys.stdout is None:
        emit("")                         # exit 3: nowhere to say the values
    try:
        batch, world, big, pooling = config(cfg)
    except Bad as e:
        fail("%s: cannot read the config (%s)" % (cfg, e))
    ngpu = int(ng or 0)
    dev = opts["--device"]
    cpu = dev == "cpu" or (dev == "auto" and ngpu == 0)
    if cap is None:
        cap = CAP_ROWS if cpu and big > CAP_ABOVE_BYTES else 0
    if b is None:
        b = 0
        if cpu and batch * pooling > MAX_LOOKUPS:
            m = batch
            while m * pooling > MAX_LOOKUPS and m // 2 >= world and (m // 2) % world == 0:
                m //= 2
            b = m if m != batch else 0
    emit("%d %d\n" % (cap, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
