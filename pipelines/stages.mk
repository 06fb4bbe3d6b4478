# stages.mk - the recipes the demo (demo.mk) and `make plan` (plan.mk) share: one cost-dataset
# recipe and one measurement recipe, each on the GPUs in parallel (pipelines/bench-fanout,
# GNU parallel) where there are several, else as-bench on DEVICE. Included by both; they set
# BIN, DEVICE, BENCH_OPTS, PROGRESS, PASSES, SEED, NCOST, MAXT, PIECE_OPTS and REF_LEVEL.

# GPUs on this host; more than one: the shards are fanned out over them
NGPU   ?= $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
FANOUT := $(shell test "$(NGPU)" -gt 1 2>/dev/null && echo yes)

# $(call as_bench_run,TABLES,OPTIONS,INPUT,OUT): as-bench over INPUT (empty: a sample) into OUT,
# fanned out over the GPUs with FANOUT
# (BENCH_EXTRA: options the including file adds, e.g. plan.mk's --row-cap)
as_bench_run = $(if $(FANOUT),pipelines/bench-fanout --tables $(1) --devices gpu -o $(4) $(3) -- $(2) $(BENCH_OPTS) $(BENCH_EXTRA),$(BIN)/as-bench --tables $(1) --device $(DEVICE) $(2) $(BENCH_OPTS) $(BENCH_EXTRA) $(PROGRESS) $(3) -o $(4))

# $(call cost_dataset,TABLES,FEATURES,OUT,WHO[,HINT]): every table alone, then NCOST drawn shards
# of 1..MAXT items (pieces too: PIECE_OPTS); a table the device could not measure alone stops
# it, named (by its name in FEATURES) with what to do (and HINT) in lines that start "WHO: ",
# nothing written
define cost_dataset
	$(call as_bench_run,$(1),--sample $(NCOST) --max-tables $(MAXT) --singles --seed $(SEED) $(PIECE_OPTS),,$(3).tmp)
	{ $(BIN)/as-show --kind features $(2); $(BIN)/as-show --kind cost $(3).tmp; } | python3 -c 'import json, sys; \
	  rs = [json.loads(l) for l in sys.stdin]; \
	  names = {r["id"]: r.get("name") or "t%d" % r["id"] for r in rs if r["kind"] == "features" and r.get("piece") is None}; \
	  bad = [r for r in rs if r["kind"] == "cost" and r.get("origin") == "single" and r.get("error")]; \
	  [sys.stderr.write("$(4): table %s could not be measured alone on this device: %s\n" % (names.get(r["tables"][0], r["tables"][0]), r["error"])) for r in bad]; \
	  bad and sys.stderr.write("$(4): its plans could not be measured; measure on a device with the memory (DEVICE=cuda on a GPU that holds the table) or give as-bench more (--max-mem in BENCH_OPTS)$(if $(5),$(comma) $(5))\n"); \
	  sys.exit(1 if bad else 0)' || { rm -f $(3).tmp; exit 1; }
	mv $(3).tmp $(3)
endef

# $(call measure_plans,TABLES,PLANS,OUT): every shard of every plan, and every piece of the
# split plans alone (their floor), in PASSES passes made apart, on the cost dataset's scale
define measure_plans
	$(call as_bench_run,$(1),--piece-singles --passes $(PASSES) --window 0 $(REF_LEVEL),$(2),$(3).tmp)
	mv $(3).tmp $(3)
endef
