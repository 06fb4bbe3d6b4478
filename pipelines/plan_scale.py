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
DLRM-DCNv2 config's 14 M lookups a batch would take hours for a cost dataset. Exit 1 with a
message on a config it cannot read, 2 on bad arguments. Only the standard library.

--report: the paragraph make plan's report opens its "What this run approximated" section
with, from the resolved CAP and BATCH (0: none, the config's) and the features' records
(as-show --kind features: the tables' names and rows).
"""
import json
import sys

CAP_ROWS = 1048576
CAP_ABOVE_BYTES = 1 << 30
MAX_LOOKUPS = 2097152


def usage(msg):
    sys.stderr.write("plan_scale: %s\n" % msg)
    sys.exit(2)


def value(arg, name, none_word):
    if arg in ("auto", ""):
        return None
    if arg == none_word or arg == "none":
        return 0
    try:
        v = int(arg)
    except ValueError:
        usage("%s: '%s' is not a number, auto or %s" % (name, arg, none_word))
    if v < 1:
        usage("%s: '%s' is not a number above 0" % (name, arg))
    return v


def report(argv):
    if len(argv) != 5:
        usage("--report CONFIG CAP BATCH")
    cfg, cap, b = argv[2], int(argv[3]), int(argv[4])
    tabs = []
    for line in sys.stdin:
        r = json.loads(line)
        if r.get("kind") == "features" and r.get("piece") is None:
            tabs.append((r.get("name") or "t%d" % r["id"], int(r["rows"]), int(r.get("dim") or 0)))
    try:
        with open(cfg) as f:
            topo = json.load(f)["topology"]
        batch = int(topo["batch_size_per_rank"]) * int(topo["world_size"])
    except (OSError, ValueError, KeyError, TypeError):
        batch = 0
    said = False
    if cap:
        big = [t for t in tabs if t[1] > cap]
        print("- **Rows capped at %d** (as-bench --row-cap; ROW_CAP): %d table%s above it, %s, and their pieces above "
              "it were measured over %d rows, their lookups' distinct rows spread over them in order (which lookups "
              "share a row kept); the features, the memory model and the plans keep every row. How such a table's cost "
              "changes with its rows, measured below, says how far the capped costs are from the whole tables'." %
              (cap, len(big), "" if len(big) == 1 else "s",
               ", ".join("%s (%d rows)" % (n, r) for n, r, d in big) or "none", cap))
        said = True
    if b:
        print("- **Measured at a batch of %d** (BATCH), not the config's %d: every table's lookups are those of %d "
              "samples, so the costs are about %.3gx the config's batch's. The memory model keeps the config's batch; "
              "the communication is modelled at the measured batch (the ids and pooled outputs scale with it, the "
              "all-reduce of data-parallel tables does not, so it weighs %.3gx more against the kernels than at the "
              "config's batch)." % (b, batch, b, b / batch if batch else float("nan"), batch / b if batch else float("nan")))
        said = True
    if not said:
        print("Nothing: every table was measured whole, at the config's batch.")
    print()
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if argv[1] == "--report":
        return report(argv)
    cfg, opts, i = argv[1], {"--device": "auto", "--ngpu": "0", "--row-cap": "auto", "--batch": "auto"}, 2
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            usage("unknown option or missing value: %s" % argv[i])
        opts[argv[i]] = argv[i + 1]
        i += 2
    try:
        with open(cfg) as f:
            c = json.load(f)
        topo = c["topology"]
        tables = c["tables"]
        batch = int(topo["batch_size_per_rank"]) * int(topo["world_size"])
        world = int(topo["world_size"])
        big = max(int(t["num_embeddings"]) * int(t["embedding_dim"]) * 2 for t in tables)
        pooling = sum(float(t.get("pooling_factor", 1)) for t in tables)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("plan_scale: %s: cannot read the config (%s)\n" % (cfg, e))
        return 1
    try:
        ngpu = int(opts["--ngpu"] or 0)
    except ValueError:
        ngpu = 0
    dev = opts["--device"]
    cpu = dev == "cpu" or (dev == "auto" and ngpu == 0)
    cap = value(opts["--row-cap"], "ROW_CAP", "none")
    b = value(opts["--batch"], "BATCH", "config")
    if cap is None:
        cap = CAP_ROWS if cpu and big > CAP_ABOVE_BYTES else 0
    if b is None:
        b = 0
        if cpu and batch * pooling > MAX_LOOKUPS:
            m = batch
            while m * pooling > MAX_LOOKUPS and m // 2 >= world and (m // 2) % world == 0:
                m //= 2
            b = m if m != batch else 0
    print(cap, b)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
