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
import re
import sys

import aspipe

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
aspipe.set_prog(PROG)
safe, say, usage, fail, emit, _show = aspipe.safe, aspipe.say, aspipe.usage, aspipe.fail, aspipe.emit, aspipe.show


def load(path):
    """(the config's optimizer, [each table's data_type]), both lower case, or exit 1 saying
    what is wrong with the config (aspipe.read_config; data_type and optimizer as as-convert's
    get_enum reads them: aspipe.enum)"""
    try:
        cfg = aspipe.read_config(path)
        opt = aspipe.enum(cfg["topology"], "optimizer", "topology: ", OPTIMIZERS, "sgd", 63)
        types = [aspipe.enum(t, "data_type", aspipe.table_where(i, t), DTYPES, "fp32", 15)
                 for i, t in enumerate(cfg["tables"])]
    except ValueError as e:
        fail("%s: %s" % (path, e))
    return opt, types


def report(path, w, o):
    if w != "tables" and w not in TYPES:
        usage("--report: WEIGHTS '%s' is not fp16, fp32, bf16 or tables" % w)
    if o not in WORDS:
        usage("--report: OPTIMIZER '%s' is not sgd, exact_rowwise_adagrad or adam" % o)
    opt, types = load(path)
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


USAGE = "CONFIG --device D [--ngpu N] [--weights W] [--optimizer O]"


def _arg_error(message):
    """argparse's usage errors in this script's words"""
    if "--report" in message and "expected 3 arguments" in message:
        return "--report CONFIG WEIGHTS OPTIMIZER"
    if "required" in message:
        return USAGE
    opt = aspipe.missing_value(message)
    return "unknown option or missing value: %s" % opt if opt else None


def parser():
    ap = aspipe.ArgumentParser(prog="plan_train.py", description=__doc__, error_hook=_arg_error,
                               usage="%(prog)s " + USAGE + "\n       %(prog)s --report CONFIG WEIGHTS OPTIMIZER")
    ap.add_argument("config", nargs="?", metavar="CONFIG", help="the model config (docs/FORMAT.md \"Model configs\")")
    ap.add_argument("--device", default="auto", metavar="D", help="accepted as make plan passes it (no longer changes the answer)")
    ap.add_argument("--ngpu", default="0", metavar="N", help="accepted as make plan passes it (a count of GPUs)")
    ap.add_argument("--weights", default="auto", metavar="W", help="fp16, fp32, bf16, config or auto (default auto: config)")
    ap.add_argument("--optimizer", default="auto", metavar="O",
                    help="sgd, exact_rowwise_adagrad, adam, config or auto (default auto: config)")
    ap.add_argument("--report", nargs=3, metavar=("CONFIG", "WEIGHTS", "OPTIMIZER"),
                    help="the report's paragraph from the resolved WEIGHTS and OPTIMIZER")
    return ap


def main(argv):
    ap = parser()
    a, extra = ap.parse_known_args(argv[1:])
    if a.report is not None:
        if a.config is not None or extra:
            usage("--report CONFIG WEIGHTS OPTIMIZER")
        return report(*a.report)
    if a.config is None or a.config.startswith("--"):
        usage(USAGE)
    if extra:
        usage("unknown option or missing value: %s" % extra[0])
    ng = a.ngpu
    if ng and not re.fullmatch(r"[0-9]{1,6}", ng):
        usage("--ngpu: '%s' is not a count of GPUs" % ng)
    opts = {"--weights": a.weights, "--optimizer": a.optimizer}
    cfg = a.config
    w, o = opts["--weights"], opts["--optimizer"]
    if w not in TYPES + ("config", "auto"):
        usage("--weights: '%s' is not fp16, fp32, bf16, config or auto" % w)
    if o not in tuple(WORDS) + ("config", "auto"):
        usage("--optimizer: '%s' is not sgd, exact_rowwise_adagrad, adam, config or auto" % o)
    if sys.stdout is None:
        emit("")                         # exit 3: nowhere to say the values
    opt, types = load(cfg)
    if w == "auto":
        w = "config"
    if o == "auto":
        o = "config"
    if w == "config":
        bad = sorted(set(t for t in types if t not in TYPES))
        if bad:
            fail("%s: tables of %s weights: the kernels measure fp32, fp16 and bf16 (give WEIGHTS=fp16|fp32|bf16)" %
                 (cfg, ", ".join(bad)), 3)
        kinds = sorted(set(types))
        if len(kinds) > 1:
            fail("%s: tables of %d weight types (%s): a cost model fits the costs of one (as-costfit), so the "
                 "model cannot be measured in its own types: give WEIGHTS=fp32, fp16 or bf16 to measure every table "
                 "in that one" % (cfg, len(kinds), ", ".join(kinds)), 3)
        w = "tables"
    if o == "config":
        if opt not in KERNEL_OPT:
            fail("%s: its optimizer %s is not among the kernels' (sgd, exact_rowwise_adagrad, adam): give "
                 "OPTIMIZER= one of them" % (cfg, opt), 3)
        o = KERNEL_OPT[opt]
    emit("%s %s\n" % (w, o))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
