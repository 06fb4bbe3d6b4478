#!/usr/bin/env python3
"""plan_train.py - what `make plan` measures the model's tables training with: the weights'
type and the optimizer (as-bench --weights-type, --optimizer; lib/kernels/ebopt.h).

usage: python3 pipelines/plan_train.py CONFIG --device D [--ngpu N] [--weights W] [--optimizer O]

       python3 pipelines/plan_train.py --report CONFIG WEIGHTS OPTIMIZER

Prints one line, "WEIGHTS OPTIMIZER", as-bench's values. --weights takes fp16, fp32, bf16,
config (each table's data_type in the config: as-bench --weights-type tables) or auto (the
default); --optimizer sgd, exact_rowwise_adagrad, adam, config (the config's
topology.optimizer) or auto. auto: on the CPU (--device cpu, or auto without a GPU) what the
config trains (config); on a GPU fp16 and sgd, until the typed CUDA kernels (fp32 / bf16
weights, Adagrad, Adam) have run on a GPU (docs/GPU.md): config asks for them. The
config's optimizer maps onto the kernels': sgd and exact_sgd to sgd, rowwise_adagrad and
exact_rowwise_adagrad to exact_rowwise_adagrad, adam to adam; another (adagrad,
exact_adagrad, partial_rowwise_adam) is exit 3 naming what to give instead, as is a table of
int8, int4 or int2 weights; a config it cannot read exit 1 (as-convert says what is wrong with
it); exit 2 on bad arguments. Only the standard library.

--report: the paragraph make plan's report gives what was measured, from the resolved values.
"""
import json
import sys

KERNEL_OPT = {"sgd": "sgd", "exact_sgd": "sgd", "rowwise_adagrad": "exact_rowwise_adagrad",
              "exact_rowwise_adagrad": "exact_rowwise_adagrad", "adam": "adam"}
TYPES = ("fp16", "fp32", "bf16")
WORDS = {"sgd": "exact SGD", "exact_rowwise_adagrad": "exact row-wise Adagrad (one fp32 state per row)",
         "adam": "Adam (two fp32 moments per weight)"}


def usage(msg):
    sys.stderr.write("plan_train: %s\n" % msg)
    sys.exit(2)


def fail(msg, code=1):
    sys.stderr.write("plan_train: %s\n" % msg)
    sys.exit(code)


def load(path):
    try:
        with open(path) as f:
            cfg = json.load(f)
        return cfg.get("topology", {}).get("optimizer", "sgd"), [t.get("data_type", "fp32") for t in cfg["tables"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        fail("%s: %s" % (path, e))


def report(argv):
    if len(argv) != 5:
        usage("--report CONFIG WEIGHTS OPTIMIZER")
    opt, types = load(argv[2])
    w, o = argv[3], argv[4]
    kinds = sorted(set(types))
    weights = "each table's weights in its config's type (%s)" % ", ".join(kinds) if w == "tables" else "%s weights" % w
    print("Measured training: %s, updated by %s (as-bench --weights-type %s --optimizer %s; lib/kernels/ebopt.h)." %
          (weights, WORDS[o], w, o))
    trains = KERNEL_OPT.get(opt, opt)
    if (w != "tables" and set(types) != {w}) or trains != o:
        print("The model trains %s weights with %s: these costs are not of its own kernel (WEIGHTS or OPTIMIZER "
              "given, or a GPU, where `make plan` measures fp16 with SGD until the typed CUDA kernels have run on a "
              "GPU: WEIGHTS=config OPTIMIZER=config measures the model's with them; on the CPU `make plan` measures "
              "the model's by default)." % ("/".join(kinds), opt))
    print()


def main(argv):
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
    try:
        ngpu = int(opts["--ngpu"] or 0)
    except ValueError:
        ngpu = 0
    dev = opts["--device"]
    gpu = dev.startswith("cuda") or (dev == "auto" and ngpu > 0)
    opt, types = load(argv[1])
    w, o = opts["--weights"], opts["--optimizer"]
    if w == "auto":
        w = "fp16" if gpu else "config"
    if o == "auto":
        o = "sgd" if gpu else "config"
    if w == "config":
        bad = sorted(set(t for t in types if t not in TYPES))
        if bad:
            fail("%s: tables of %s weights: the kernels measure fp32, fp16 and bf16 (give WEIGHTS=fp16|fp32|bf16)" %
                 (argv[1], ", ".join(bad)), 3)
        w = "tables"
    elif w not in TYPES:
        usage("--weights: '%s' is not fp16, fp32, bf16, config or auto" % w)
    if o == "config":
        if opt not in KERNEL_OPT:
            fail("%s: its optimizer %s is not among the kernels' (sgd, exact_rowwise_adagrad, adam): give "
                 "OPTIMIZER= one of them" % (argv[1], opt), 3)
        o = KERNEL_OPT[opt]
    elif o not in WORDS:
        usage("--optimizer: '%s' is not sgd, exact_rowwise_adagrad, adam, config or auto" % o)
    print(w, o)


if __name__ == "__main__":
    main(sys.argv)
