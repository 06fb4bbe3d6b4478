#!/usr/bin/env python3
"""plan_train.py - what `make plan` measures the model's tables training with: the weights'
type and the optimizer (as-bench --weights-type, --optimizer; lib/kernels/ebopt.h).

usage: python3 pipelines/plan_train.py CONFIG --device D [--ngpu N] [--weights W] [--optimizer O]

       python3 pipelines/plan_train.py --report CONFIG WEIGHTS OPTIMIZER

Prints one line, "WEIGHTS OPTIMIZER", as-bench's values. --weights takes fp16, fp32, bf16,
config (each table's data_type in the config: as-bench --weights-type tables) or auto (the
default); --optimizer sgd, exact_rowwise_adagrad, adam, config (the config's
topology.optimizer) or auto. auto: what the config trains (config), on the CPU and on a GPU
alike (the typed CUDA kernels, fp32 / bf16 weights with Adagrad or Adam, passed their
bit-exact tests on an NVIDIA H200 on 2026-11-30; docs/GPU.md), so --device and --ngpu,
accepted as make plan passes them, no longer change the answer. The config's optimizer
maps onto the kernels': sgd and exact_sgd to sgd, rowwise_adagrad and
exact_rowwise_adagrad to exact_rowwise_adagrad, adam to adam; another (adagrad,
exact_adagrad, partial_rowwise_adam) is exit 3 naming what to give instead, as is a table of
int8, int4 or int2 weights, and (--weights config) tables of more than one type: a cost model
is fitted on the costs of one kind of kernel (as-costfit refuses a cost dataset of several), so
such a model is refused before anything is measured, saying to give one type (WEIGHTS=fp32,
fp16 or bf16). The config's data_type and optimizer are read as as-convert reads them (lib/data/
modelcfg.c): strings, in any case ("FP32", "SGD"); data_type fp32 when not given, optimizer sgd.
A config it cannot read, or one as-convert would refuse for these fields (not JSON, no
topology or tables, a data_type or optimizer that is not a string or not a known name), is
exit 1 with one line saying what is wrong; exit 2 on bad arguments; 3 also when standard
output cannot be written. Only the standard library.

--report: the paragraph make plan's report gives what was measured, from the resolved values
(WEIGHTS: fp16, fp32, bf16 or tables; OPTIMIZER: sgd, exact_rowwise_adagrad or adam).
"""
import json
import re
import sys

import plan_io

PROG = "plan_train"
KERNEL_OPT = {"sgd": "sgd", "exact_sgd": "sgd", "rowwise_adagrad": "exact_rowwise_adagrad",
              "exact_rowwise_adagrad": "exact_rowwise_adagrad", "adam": "adam"}
TYPES = ("fp16", "fp32", "bf16")
WORDS = {"sgd": "exact SGD", "exact_rowwise_adagrad": "exact row-wise Adagrad (one fp32 state per row)",
         "adam": "Adam (two fp32 moments per weight)"}
# what as-convert accepts (lib/data/modelcfg.c: dtypes[], optimizers[]; case-insensitive, ASCII)
DTYPES = ("fp32", "fp16", "bf16", "int8", "int4", "int2")
OPTIMIZERS = ("sgd", "exact_sgd", "adam", "partial_rowwise_adam", "adagrad", "exact_adagrad", "rowwise_adagrad",
              "exact_rowwise_adagrad")
MAX_BYTES = 64 << 20      # a config's bytes at most (as-convert's MCFG_MAX_FILE)
plan_io.PROG = PROG
safe, say, usage, fail, emit, _show = plan_io.safe, plan_io.say, plan_io.usage, plan_io.fail, plan_io.emit, plan_io.show


def _lower(s):
    """ASCII lower case, as strcasecmp compares"""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _enum(where, d, key, names, default, maxlen):
    """d[key] as as-convert's get_enum reads it: absent the default; a string of at most
    maxlen bytes without NUL, one of names in any (ASCII) case; stored lower case"""
    if key not in d:
        return default
    v = d[key]
    if not isinstance(v, str):
        fail("%s%s: must be a string, not %s" % (where, key, _show(v)))
    if "\0" in v or len(v.encode("utf-8", "surrogatepass")) > maxlen:
        fail("%s%s: unknown value %s (one of %s)" % (where, key, _show(v), ", ".join(names)))
    lv = _lower(v)
    if lv not in names:
        fail("%s%s: unknown value %s (one of %s)" % (where, key, _show(v), ", ".join(names)))
    return lv


def load(path):
    """(the config's optimizer, [each table's data_type]), both lower case, or exit 1 saying
    what is wrong with the config"""
    try:
        cfg = plan_io.read_json(path, MAX_BYTES)
    except ValueError as e:
        fail("%s: %s" % (path, e))
    if not isinstance(cfg, dict):
        fail("%s: the config must be a JSON object, not %s" % (path, _show(cfg)))
    topo = cfg.get("topology")
    if topo is None:
        fail("%s: topology: missing (required)" % path)
    if not isinstance(topo, dict):
        fail("%s: topology: must be an object, not %s" % (path, _show(topo)))
    opt = _enum("%s: topology: " % path, topo, "optimizer", OPTIMIZERS, "sgd", 63)
    tables = cfg.get("tables")
    if tables is None:
        fail("%s: tables: missing (required)" % path)
    if not isinstance(tables, list) or not tables:
        fail("%s: tables: must be an array of tables, not %s" % (path, "an empty one" if tables == [] else _show(tables)))
    types = []
    for i, t in enumerate(tables):
        if not isinstance(t, dict):
            fail("%s: table %d: must be an object, not %s" % (path, i, _show(t)))
        name = t.get("name")
        where = "%s: table %d%s: " % (path, i, " (%s)" % json.dumps(name) if isinstance(name, str) else "")
        types.append(_enum(where, t, "data_type", DTYPES, "fp32", 15))
    return opt, types


def report(argv):
    if len(argv) != 5:
        usage("--report CONFIG WEIGHTS OPTIMIZER")
    w, o = argv[3], argv[4]
    if w != "tables" and w not in TYPES:
        usage("--report: WEIGHTS '%s' is not fp16, fp32, bf16 or tables" % w)
    if o not in WORDS:
        usage("--report: OPTIMIZER '%s' is not sgd, exact_rowwise_adagrad or adam" % o)
    opt, types = load(argv[2])
    kinds = sorted(set(types))
    weights = "each table's weights in its config's type (%s)" % ", ".join(kinds) if w == "tables" else "%s weights" % w
    lines = ["Measured training: %s, updated by %s (as-bench --weights-type %s --optimizer %s; lib/kernels/ebopt.h)." %
             (weights, WORDS[o], w, o)]
    trains = KERNEL_OPT.get(opt, opt)
    if (w != "tables" and set(types) != {w}) or trains != o:
        lines.append("The model trains %s weights with %s: these costs are not of its own kernel (WEIGHTS or OPTIMIZER "
                     "given: `make plan` measures the model's own by default, WEIGHTS=auto OPTIMIZER=auto)." %
                     ("/".join(kinds), opt))
    emit("\n".join(lines) + "\n\n")
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        emit(__doc__)
        return 0
    if len(argv) > 1 and argv[1] == "--report":
        return report(argv)
    if len(argv) < 2 or argv[1].startswith("--"):
        usage("CONFIG --device D [--ngpu N] [--weights W] [--optimizer O]")
    opts = {"--device": "auto", "--ngpu": "0", "--weights": "auto", "--optimizer": "auto"}
    i = 2
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            usage("unknown option or missing value: %s" % argv[i])
        opts[argv[i]] = argv[i + 1]
        i += 2
    ng = opts["--ngpu"]
    if ng and not re.fullmatch(r"[0-9]{1,6}", ng):
        usage("--ngpu: '%s' is not a count of GPUs" % ng)
    w, o = opts["--weights"], opts["--optimizer"]
    if w not in TYPES + ("config", "auto"):
        usage("--weights: '%s' is not fp16, fp32, bf16, config or auto" % w)
    if o not in tuple(WORDS) + ("config", "auto"):
        usage("--optimizer: '%s' is not sgd, exact_rowwise_adagrad, adam, config or auto" % o)
    if sys.stdout is None:
        emit("")                         # exit 3: nowhere to say the values
    opt, types = load(argv[1])
    if w == "auto":
        w = "config"
    if o == "auto":
        o = "config"
    if w == "config":
        bad = sorted(set(t for t in types if t not in TYPES))
        if bad:
            fail("%s: tables of %s weights: the kernels measure fp32, fp16 and bf16 (give WEIGHTS=fp16|fp32|bf16)" %
                 (argv[1], ", ".join(bad)), 3)
        kinds = sorted(set(types))
        if len(kinds) > 1:
            fail("%s: tables of %d weight types (%s): a cost model fits the costs of one (as-costfit), so the "
                 "model cannot be measured in its own types: give WEIGHTS=fp32, fp16 or bf16 to measure every table "
                 "in that one" % (argv[1], len(kinds), ", ".join(kinds)), 3)
        w = "tables"
    if o == "config":
        if opt not in KERNEL_OPT:
            fail("%s: its optimizer %s is not among the kernels' (sgd, exact_rowwise_adagrad, adam): give "
                 "OPTIMIZER= one of them" % (argv[1], opt), 3)
        o = KERNEL_OPT[opt]
    emit("%s %s\n" % (w, o))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
