# stages.mk - the recipes the demo (demo.mk) and `make plan` (plan.mk) share: one cost-dataset
# recipe and one measurement recipe, each on the GPUs in parallel (pipelines/bench-fanout,
# GNU parallel) where there are several, else as-bench on DEVICE. Included by both; they set
# BIN, DEVICE, BENCH_OPTS, PROGRESS, PASSES, SEED, NCOST, MAXT, PIECE_OPTS and REF_LEVEL, and
# may set BENCH_ENV (a prefix of the measuring runs' commands, e.g. plan.mk's env setting the
# OpenMP wait policy).
# Each measuring run's standard error is shown as it comes and kept beside its output, OUT's
# name with -bench.txt for .ast (what as-bench said of the machine: its quiet-machine check,
# noise and drift), written with it. The knobs both share are set here: COL_SINGLES,
# SPLIT_COLS, COSTS, ACTIVE_BUDGET, ACTIVE_OPTS.

# GPUs on this host; more than one: the shards are fanned out over them
NGPU   ?= $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
FANOUT := $(shell test "$(NGPU)" -gt 1 2>/dev/null && echo yes)

# $(call as_bench_run,TABLES,OPTIONS,INPUT,OUT): as-bench over INPUT (empty: a sample) into OUT,
# fanned out over the GPUs with FANOUT
# (BENCH_EXTRA: options the including file adds, e.g. plan.mk's --row-cap)
BENCH_ENV ?=
as_bench_run = $(BENCH_ENV) $(if $(FANOUT),pipelines/bench-fanout --tables $(1) --devices gpu -o $(4) $(3) -- $(2) $(BENCH_OPTS) $(BENCH_EXTRA),$(BIN)/as-bench --tables $(1) --device $(DEVICE) $(2) $(BENCH_OPTS) $(BENCH_EXTRA) $(PROGRESS) $(3) -o $(4))

# $(call bench_logged,COMMAND,LOG): COMMAND with its standard error (and output) shown as it
# comes and kept in LOG.tmp; its exit status kept (LOG.rc meanwhile), and on failure no
# LOG.tmp left
bench_logged = { { $(1); echo $$? > $(2).rc; } 2>&1 | tee $(2).tmp >&2; }; \
	r=$$(cat $(2).rc 2>/dev/null || echo 1); rm -f $(2).rc; [ "$$r" = 0 ] || { rm -f $(2).tmp; exit $$r; }

# the column halves and quarters of the COL_SINGLES heaviest tables (lookups x dim) measured
# alone in the cost dataset (as-bench --col-singles; not counted in its budget): on a CPU a
# half costs far more than half its table, which random shards rarely show the cost model
COL_SINGLES ?= 8
# the most column pieces a split makes (as-plan --split-cols): the most the cost dataset
# measured (as-bench --sample-pieces draws column halves and quarters: 4,
# AS_BSAMPLE_MAX_COLS), so that no split rests on the cost model's extrapolation to narrower
# pieces than it has seen; 0 (or no pieces drawn, SAMPLE_PIECES=0): as the dims allow
SPLIT_COLS ?= $(if $(filter-out 0,$(SAMPLE_PIECES)),4,0)

# How the cost dataset's shards are chosen: COSTS=active (default) measures every table alone,
# 2 x ACTIVE_BUDGET/5 random shards and ACTIVE_BUDGET/5 more to validate on, then batches of
# ACTIVE_BUDGET/10 where an ensemble of 3 cost models disagrees most, until the validation R²
# stops rising (by more than 0.002 for 2 rounds) or ACTIVE_BUDGET shards are measured
# (at least 3; pipelines/active-costs; ACTIVE_OPTS: its other options, e.g. --patience 3); on the one
# device DEVICE, not fanned out. COSTS=random: NCOST random shards (the fixed dataset of
# before). Either way OUT's name with -active.md holds a summary for the report: how many
# shards were measured, and why the loop stopped (docs/RESULTS.md "Active cost dataset")
COSTS ?= active
ACTIVE_BUDGET ?= $(shell n=$$(( $(NCOST) / 2 )); [ $$n -ge 3 ] || n=3; echo $$n)
ACTIVE_OPTS ?=
ifneq ($(filter-out active random,$(COSTS)),)
$(error COSTS=$(COSTS) is not active or random)
endif
# $(call active_run,TABLES,FEATURES,OUT,SUMMARY): pipelines/active-costs into OUT
active_run = $(BENCH_ENV) pipelines/active-costs --bin $(BIN) --tables $(1) --features $(2) --device $(DEVICE) --seed $(SEED) \
	--budget $(ACTIVE_BUDGET) --max-tables $(MAXT) --col-singles $(COL_SINGLES) --sample-opts "$(PIECE_OPTS)" --bench-opts "$(BENCH_OPTS) $(BENCH_EXTRA)" \
	$(ACTIVE_OPTS) $(PROGRESS) --summary $(4) -o $(3)

# $(call cost_dataset,TABLES,FEATURES,OUT,WHO[,HINT]): every table alone, then the drawn shards
# of 1..MAXT items (pieces too: PIECE_OPTS), by COSTS; a table the device could not measure
# alone stops it, named (by its name in FEATURES) with what to do (and HINT) in lines that
# start "WHO: ", nothing written
define cost_dataset
	$(if $(filter random,$(COSTS)),$(call bench_logged,$(call as_bench_run,$(1),--sample $(NCOST) --max-tables $(MAXT) --singles --col-singles $(COL_SINGLES) --seed $(SEED) $(PIECE_OPTS),,$(3).tmp),$(basename $(3))-bench.txt) && echo "The cost dataset: $(NCOST) random shards measured and every table alone (COSTS=random)." > $(basename $(3))-active.md,$(call bench_logged,$(call active_run,$(1),$(2),$(3).tmp,$(basename $(3))-active.md),$(basename $(3))-bench.txt))
	{ $(BIN)/as-show --kind features $(2); $(BIN)/as-show --kind cost $(3).tmp; } | python3 -c 'import json, sys; \
	  rs = [json.loads(l) for l in sys.stdin]; \
	  names = {r["id"]: r.get("name") or "t%d" % r["id"] for r in rs if r["kind"] == "features" and r.get("piece") is None}; \
	  bad = [r for r in rs if r["kind"] == "cost" and r.get("origin") == "single" and r.get("error")]; \
	  [sys.stderr.write("$(4): table %s could not be measured alone on this device: %s\n" % (names.get(r["tables"][0], r["tables"][0]), r["error"])) for r in bad]; \
	  bad and sys.stderr.write("$(4): its plans could not be measured; measure on a device with the memory (DEVICE=cuda on a GPU that holds the table) or give as-bench more (--max-mem in BENCH_OPTS)$(if $(5),$(comma) $(5))\n"); \
	  sys.exit(1 if bad else 0)' || { rm -f $(3).tmp $(basename $(3))-bench.txt.tmp; exit 1; }
	mv $(basename $(3))-bench.txt.tmp $(basename $(3))-bench.txt && mv $(3).tmp $(3)
endef

# $(call measure_plans,TABLES,PLANS,OUT): every shard of every plan, and every piece of the
# split plans alone (their floor), in PASSES passes made apart, on the cost dataset's scale
define measure_plans
	$(call bench_logged,$(call as_bench_run,$(1),--piece-singles --passes $(PASSES) --window 0 $(REF_LEVEL),$(2),$(3).tmp),$(basename $(3))-bench.txt)
	mv $(basename $(3))-bench.txt.tmp $(basename $(3))-bench.txt && mv $(3).tmp $(3)
endef

# $(call ref_level,COSTS,OUT,WHO): OUT holds as-bench's option to correct later measurements to
# the cost dataset COSTS's reference level (--reference-level COSTS), or nothing when COSTS has
# none (its reference shard never measured quiet: a busy machine), said in a line "WHO: ...":
# the later measurements then keep their own levels rather than failing on it (the including
# file's REF_LEVEL is $$(cat OUT))
define ref_level
	$(BIN)/as-show --kind cost $(1) | python3 -c 'import json, sys; \
	  ok = any(isinstance(r.get("reference"), dict) and (r["reference"].get("level_ms") or 0) > 0 for r in map(json.loads, sys.stdin)); \
	  ok or sys.stderr.write("$(3): the cost dataset has no reference level (its reference shard never measured quiet: the machine looks busy): the measurements after it keep their own levels, not corrected to its scale (delete $(1) to measure it again on a quieter machine)\n"); \
	  sys.stdout.write("--reference-level $(1)\n" if ok else "")' > $(2).tmp && mv $(2).tmp $(2)
endef
