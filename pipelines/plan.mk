# plan.mk - your model planned by its measured cost, end to end: `make plan MODEL=config.json`.
# Run through `make plan` (which installs dependencies and builds first), or directly:
#   make -f pipelines/plan.mk [MODEL=pipelines/models/dlrm-criteo-kaggle.json] [DEVICE=auto]
#        [OUT=pipelines/out] [SHARDS=K] [MEM_CAP=BYTES] [ROW_CAP=R|none|auto] [BATCH=B|config|auto]
# File targets under $(OUT)/plan-NAME (NAME: the config's file name): re-running redoes only
# what changed, and a stage that fails or is interrupted leaves no file behind (each tool
# writes its output atomically), so the next run resumes there.
#
#   tables     as-convert --config          the config's tables (its lookups files, else
#                                           synthetic lookups of its pooling factors)
#   features   as-features --model-task     features (with row pieces) and the one task:
#                                           the config's ranks and HBM (SHARDS, MEM_CAP)
#   costs      as-bench --sample --singles  a cost dataset of the model's own tables: every
#                                           table alone and NCOST drawn shards of 1..MAXT
#                                           items, whole tables and pieces (over the GPUs
#                                           with GNU parallel where there are several; the
#                                           recipe the demo shares, pipelines/stages.mk)
#   rows.md    pipelines/row-curve          with a row cap (ROW_CAP): the largest capped table
#                                           alone over cap/8 ... all its rows, measured
#   model      as-costfit                   the cost model (its quality gate: MODEL_GATE)
#   plans      as-plan                      every planner table-wise (ALGS, TorchRec's
#                                           included), SPLIT_ALGS with --split-tables and with
#                                           --split-tables --refine, REPLICATE_ALGS with
#                                           --replicate --refine, table-wise and split
#                                           (data-parallel tables), and TorchRec's own
#                                           planner's plan where its source is at hand
#                                           (TORCHREC_SRC; pipelines/torchrec_planner.py),
#                                           or its plan made elsewhere (OWN_JSON)
#   first      as-bench                     every candidate measured once (one pass)
#   repaired   as-plan --repair             REPAIR_ALGS's plans refined on those measured
#                                           costs (ALG+split+refine+measured)
#   measured   as-bench                     every candidate, the repaired too, measured together, in PASSES
#                                           passes made apart, each piece alone for the floor (stages.mk, as the demo)
#   choice     as-eval, plan_choose.py      of the plans TorchRec can load, the one with the
#                                           fastest slowest rank, communication charged
#                                           (COMM_GBPS, or COMM_MODEL); a simpler plan within TIE of it, or
#                                           one it does not beat in every pass, wins
#   plan.json  as-plan --export             the chosen plan in TorchRec's form, checked by
#                                           pipelines/torchrec_plan.py --check --config
#   report.md  as-eval                      the verdict, the candidates, the chosen plan rank
#                                           by rank, the cost model's quality
#
# A table larger than the measuring device's memory: with ROW_CAP (auto on the CPU for tables
# above 1 GiB) it is measured over that many rows, and rows.md shows, measured, how its cost
# changes with its rows up to all of them; without, the cost stage stops, naming the table and
# what it needs (as-bench refuses a shard that does not fit).

comma  := ,
BIN    ?= bin
OUT    ?= pipelines/out
MODEL  ?= pipelines/models/dlrm-criteo-kaggle.json
DEVICE ?= auto
SEED   ?= 0
# overrides of the config's topology: ranks, bytes per rank
SHARDS ?=
MEM_CAP ?=
# what the tables are measured over (pipelines/plan_scale.py): ROW_CAP (as-bench --row-cap: a
# number of rows, none, or auto) and BATCH (the lookups per table: a number, config, or auto).
# auto: on a GPU every table whole at the config's batch; on the CPU, rows capped at 1,048,576
# when a table holds more than 1 GiB of fp16 weights, and the batch halved until a full
# iteration is at most 2,097,152 lookups (DLRM-DCNv2: 8,192 of 65,536). The memory model
# keeps the config's batch; the report says what was approximated, with how a capped table's
# cost changes with its rows, measured (pipelines/row-curve)
ROW_CAP ?= auto
BATCH  ?= auto
# what the tables are measured training with (pipelines/plan_train.py; as-bench --weights-type,
# --optimizer): WEIGHTS fp16, fp32, bf16, config (each table's data_type) or auto; OPTIMIZER
# sgd, exact_rowwise_adagrad, adam, config (the config's topology.optimizer) or auto. auto:
# on the CPU the config's (the Kaggle DLRM fp32 + SGD, DLRM-DCNv2 fp32 + exact row-wise
# Adagrad); on a GPU fp16 + SGD until the typed CUDA kernels have run on a GPU (config asks
# for them; docs/GPU.md). The report says which
WEIGHTS ?= auto
OPTIMIZER ?= auto
ROW_PIECES ?= 2,4,8
# the cost dataset: drawn shards, their largest item count, the share of items drawn as pieces
NCOST  ?= 400
MAXT   ?= 8
SAMPLE_PIECES ?= 0.3
ALGS   ?= all,torchrec
SPLIT_ALGS ?= cost-greedy,lookup-greedy,size-lookup-greedy
# the plans that get a measured repair round (as-plan --repair --alg: labels, or algorithms
# for all their variants): by default the refined split plans (ALG+split+refine); empty: none.
# (A repaired ALG+split and its ALG+split+refine would both be labelled
# ALG+split+refine+measured, which as-plan refuses: name one of the two)
REPAIR_ALGS ?= $(if $(SPLIT_ALGS),$(subst $(comma),+split+refine$(comma),$(SPLIT_ALGS))+split+refine)
# planners whose plans are also made with replicated (data-parallel) tables, table-wise and
# split, refined: ALG+dp+refine, ALG+split+dp+refine (empty: none)
REPLICATE_ALGS ?= cost-greedy
# the split search's row splits: none (column splits only) keeps every plan one TorchRec's
# generators can load (its row_wise takes only K equal blocks, block i on rank i); 2,4,8
# lets it place row blocks anywhere, which may measure faster but TorchRec cannot run: such
# plans are measured and reported, never chosen
SPLIT_ROWS ?= none
# the cost model's quality gate (as-plan --min-model-r2): a weak model (held-out R² below 0.9 or
# below the straight line's) is said in the report and marks the plans it placed; it does not
# stop the run, since every candidate is measured and the choice rests on the measurement (on
# a GPU the Kaggle model's shards all cost 0.07-0.18 ms, launch-bound, and its model can come
# out weak); MODEL_GATE=--require-model-quality stops at the plans instead
MODEL_GATE ?=
BENCH_OPTS ?= --warmup 5 --runs 10 --trim 2 --flush 64M
PASSES ?= 2
COMM_GBPS ?= 600
# or an alpha-beta model of the communication (as-plan and as-eval --comm-model): nvlink8 (one
# host of 8 NVLink 4 GPUs, published NCCL constants, at most 8 ranks) or your cluster's own
# A/B,A/B,A/B (alpha us / bus GB/s of the all-to-all, reduce-scatter, all-reduce, from
# nccl-tests); empty: COMM_GBPS, every byte at one rate. The report shows each candidate's
# communication by sharding type under it, and under nvlink8 beside COMM_GBPS
COMM_MODEL ?=
COMM := $(if $(COMM_MODEL),--comm-model $(COMM_MODEL),--comm-gbps $(COMM_GBPS))
COMM_WORDS := $(if $(COMM_MODEL),by the alpha-beta model $(COMM_MODEL),at $(COMM_GBPS) GiB/s)
TIE    ?= 0.01
# TorchRec's source (a checkout of meta-pytorch/torchrec) for its own planner's plan; empty:
# none (the report says so). Its plan is imported as it is, data_parallel tables included
TORCHREC_SRC ?= $(AS_TORCHREC_SRC)
# or its plan made before, elsewhere (pipelines/torchrec_planner.py's JSON for this model and
# topology; a GPU machine has no TorchRec source): imported as it is, instead of planning
OWN_JSON ?=
PYTHON ?= $(shell for p in /usr/bin/python3 python3; do $$p -c 'import torch' 2>/dev/null && { echo $$p; break; }; done)
PROGRESS ?= --progress

NAME := $(basename $(notdir $(MODEL)))
D    := $(OUT)/plan-$(NAME)
TOPO := $(if $(SHARDS),--shards $(SHARDS)) $(if $(MEM_CAP),--mem-cap $(MEM_CAP))
PIECE_OPTS := $(if $(filter-out 0,$(SAMPLE_PIECES)),--sample-pieces $(SAMPLE_PIECES) --piece-blocks $(ROW_PIECES))
REF_LEVEL := --reference-level $(D)/costs.ast
include pipelines/stages.mk

# the row cap and the batch measured: "CAP BATCH STATUS" (0: none, the config's); a config it
# cannot read leaves both 0 (as-convert says what is wrong with it); a bad value stops here
SCALE := $(shell python3 pipelines/plan_scale.py $(MODEL) --device $(DEVICE) --ngpu $(or $(NGPU),0) --row-cap $(ROW_CAP) --batch $(BATCH); echo $$?)
ifeq ($(lastword $(SCALE)),2)
$(error make plan: bad ROW_CAP=$(ROW_CAP) or BATCH=$(BATCH) (above))
endif
CAP_EFF   := $(if $(filter 0,$(lastword $(SCALE))),$(word 1,$(SCALE)),0)
BATCH_EFF := $(if $(filter 0,$(lastword $(SCALE))),$(word 2,$(SCALE)),0)
# the weights' type and the optimizer measured: "WTYPE OPTIM STATUS"
TRAIN := $(shell python3 pipelines/plan_train.py $(MODEL) --device $(DEVICE) --ngpu $(or $(NGPU),0) --weights $(WEIGHTS) --optimizer $(OPTIMIZER); echo $$?)
ifeq ($(lastword $(TRAIN)),2)
$(error make plan: bad WEIGHTS=$(WEIGHTS) or OPTIMIZER=$(OPTIMIZER) (above))
endif
ifeq ($(lastword $(TRAIN)),3)
$(error make plan: the model trains what the kernels cannot measure yet (above))
endif
WTYPE_EFF := $(if $(filter 0,$(lastword $(TRAIN))),$(word 1,$(TRAIN)),fp16)
OPTIM_EFF := $(if $(filter 0,$(lastword $(TRAIN))),$(word 2,$(TRAIN)),sgd)
BENCH_EXTRA := $(if $(filter-out 0,$(CAP_EFF)),--row-cap $(CAP_EFF)) --weights-type $(WTYPE_EFF) --optimizer $(OPTIM_EFF)
ROWCAP_HINT := or measure it over fewer rows (ROW_CAP=ROWS; as-bench --row-cap)

.PHONY: plan-run
plan-run: $(D)/report.md $(D)/plan.json
	@cat $(D)/report.md
	@echo
	@echo "the chosen plan for TorchRec: $(D)/plan.json (pipelines/torchrec_plan.py loads it); all files under $(D)"

# what is measured over (ROW_CAP, BATCH as resolved) and with (WEIGHTS, OPTIMIZER): rewritten
# only when it changes, so that a change redoes everything from the tables on, and nothing
# else does
.PHONY: FORCE
$(D)/scale.txt: FORCE
	@mkdir -p $(D)
	@echo "row_cap $(CAP_EFF) batch $(BATCH_EFF) weights $(WTYPE_EFF) optimizer $(OPTIM_EFF)" | cmp -s - $@ || \
	  echo "row_cap $(CAP_EFF) batch $(BATCH_EFF) weights $(WTYPE_EFF) optimizer $(OPTIM_EFF)" > $@

# the communication charge (COMM_GBPS or COMM_MODEL): rewritten only when it changes, so that
# a change redoes the plans and what follows them
$(D)/comm.txt: FORCE
	@mkdir -p $(D)
	@echo "$(COMM)" | cmp -s - $@ || echo "$(COMM)" > $@

$(D)/pool.ast: $(MODEL) $(BIN)/as-convert $(D)/scale.txt
	@mkdir -p $(D)
	@echo "== tables of $(MODEL)$(if $(filter-out 0,$(BATCH_EFF)), (measured at a batch of $(BATCH_EFF)))"
	$(BIN)/as-convert --config $(MODEL) $(if $(filter-out 0,$(BATCH_EFF)),--batch $(BATCH_EFF)) --seed $(SEED) -o $@

$(D)/ft.ast: $(D)/pool.ast $(BIN)/as-features
	@echo "== features and the model's task"
	$(BIN)/as-features $< --model-task --row-pieces $(ROW_PIECES) $(TOPO) -o $@

# every table must be measurable alone on the device: one that is not (too large for it)
# stops here, named with why, rather than leaving its plans unmeasured
$(D)/costs.ast: $(D)/pool.ast $(D)/ft.ast $(BIN)/as-bench
	@echo "== cost dataset of the model's tables: each alone, $(NCOST) drawn shards of 1..$(MAXT) items$(if $(FANOUT), on $(NGPU) GPUs)"
	$(call cost_dataset,$<,$(D)/ft.ast,$@,make plan,$(ROWCAP_HINT))

# how a capped table's cost changes with its rows, measured (with a row cap; else empty)
$(D)/rows.md: $(D)/pool.ast $(D)/costs.ast
	@echo "== $(if $(filter-out 0,$(CAP_EFF)),how the largest capped table's cost changes with its rows,rows: nothing capped)"
ifneq ($(CAP_EFF),0)
	pipelines/row-curve --tables $< --cap $(CAP_EFF) --bin $(BIN) --device $(DEVICE) \
	  --bench-opts "$(BENCH_OPTS) --weights-type $(WTYPE_EFF) --optimizer $(OPTIM_EFF)" -o $@
else
	: > $@
endif

$(D)/model.ast: $(D)/ft.ast $(D)/costs.ast $(BIN)/as-costfit
	@echo "== cost model"
	cat $(D)/ft.ast $(D)/costs.ast | $(BIN)/as-costfit --seed $(SEED) $(PROGRESS) -o $@

# TorchRec's own planner's plan, where its source is at hand; else an empty file
$(D)/own.ast: $(D)/ft.ast $(D)/model.ast $(BIN)/as-plan $(OWN_JSON)
	@echo "== TorchRec's own planner$(if $(OWN_JSON), (its plan from $(OWN_JSON)),$(if $(TORCHREC_SRC),, (TORCHREC_SRC not set: left out)))"
	rm -f $@.json $@.tmp
ifneq ($(OWN_JSON),)
	$(BIN)/as-plan --model $(D)/model.ast --import $(OWN_JSON) --plans-only $(D)/ft.ast -o $@.tmp
	mv $@.tmp $@
else ifneq ($(TORCHREC_SRC),)
	AS_SHOW=$(BIN)/as-show $(PYTHON) pipelines/torchrec_planner.py $(D)/ft.ast --torchrec-src $(TORCHREC_SRC) -o $@.json
	$(BIN)/as-plan --model $(D)/model.ast --import $@.json --plans-only $(D)/ft.ast -o $@.tmp
	mv $@.tmp $@
else
	: > $@
endif

$(D)/plans.ast: $(D)/ft.ast $(D)/model.ast $(D)/own.ast $(D)/comm.txt $(BIN)/as-plan
	@echo "== plans: $(ALGS) table-wise$(if $(SPLIT_ALGS),; $(SPLIT_ALGS) with --split-tables, then with --refine)"
	$(BIN)/as-plan --alg $(ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) --plans-only $(D)/ft.ast -o $@.table
ifneq ($(SPLIT_ALGS),)
	$(BIN)/as-plan --alg $(SPLIT_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) $(COMM) $(D)/ft.ast -o $@.split
	$(BIN)/as-plan --alg $(SPLIT_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) --refine $(COMM) $(D)/ft.ast -o $@.refine
endif
ifneq ($(REPLICATE_ALGS),)
	$(BIN)/as-plan --alg $(REPLICATE_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) --plans-only \
	  --replicate --refine $(COMM) $(D)/ft.ast -o $@.dp
	$(BIN)/as-plan --alg $(REPLICATE_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) --replicate --refine $(COMM) $(D)/ft.ast -o $@.splitdp
endif
	cat $@.table $(if $(SPLIT_ALGS),$@.split $@.refine) $(if $(REPLICATE_ALGS),$@.dp $@.splitdp) $(D)/own.ast > $@.tmp && \
	  mv $@.tmp $@ && rm -f $@.table $@.split $@.refine $@.dp $@.splitdp

# the measured repair round: every candidate measured once, then REPAIR_ALGS's plans refined on
# their measured costs (as-plan --repair: ALG+refine+measured), which join the candidates
$(D)/first.ast: $(D)/plans.ast $(D)/costs.ast $(D)/pool.ast $(BIN)/as-bench
	@echo "== every candidate measured once, for the repair$(if $(FANOUT), on $(NGPU) GPUs)"
	$(call as_bench_run,$(D)/pool.ast,--window 0 $(REF_LEVEL),$<,$@.tmp)
	mv $@.tmp $@

$(D)/repaired.ast: $(D)/first.ast $(D)/ft.ast $(D)/model.ast $(BIN)/as-plan
	@echo "== measured repair: $(if $(REPAIR_ALGS),$(REPAIR_ALGS)'s plans refined on their measured costs,none (REPAIR_ALGS empty))"
ifneq ($(REPAIR_ALGS),)
	$(BIN)/as-plan --alg $(REPAIR_ALGS) --model $(D)/model.ast $(MODEL_GATE) --repair $< --seed $(SEED) --plans-only $(D)/ft.ast -o $@.tmp
	mv $@.tmp $@
else
	: > $@
endif

$(D)/candidates.ast: $(D)/plans.ast $(D)/repaired.ast
	cat $^ > $@.tmp && mv $@.tmp $@

$(D)/measured.ast: $(D)/candidates.ast $(D)/costs.ast $(D)/pool.ast $(BIN)/as-bench
	@echo "== every candidate measured, the repaired ones with them, $(PASSES) passes$(if $(FANOUT), on $(NGPU) GPUs)"
	$(call measure_plans,$(D)/pool.ast,$<,$@)

# the candidates TorchRec can load (each exported and checked by torchrec_plan.py --check),
# then the choice among them
$(D)/choice.md: $(D)/measured.ast $(D)/ft.ast $(BIN)/as-eval $(BIN)/as-plan pipelines/plan_choose.py pipelines/torchrec_plan.py
	@echo "== the choice"
	$(BIN)/as-eval $(COMM) --format csv --table plans $< -o $@.comm.csv
	$(BIN)/as-eval --comm-gbps 0 --format csv --table plans $< -o $@.kernel.csv
	python3 -c 'import csv, sys; [print(r["alg"]) for r in csv.DictReader(open(sys.argv[1]))]' $@.comm.csv | while read -r a; do \
	  $(BIN)/as-plan -q --export $< --task 0 --alg "=$$a" --format torchrec $(D)/ft.ast | \
	    python3 pipelines/torchrec_plan.py --check --config $(MODEL) > /dev/null 2>&1 && echo "$$a"; \
	done > $@.loadable
	python3 pipelines/plan_choose.py $@.comm.csv $@.kernel.csv --tie $(TIE) --loadable $@.loadable --out-alg $(D)/chosen.txt > $@.tmp
	mv $@.tmp $@ && rm -f $@.comm.csv $@.kernel.csv $@.loadable

$(D)/plan.json: $(D)/choice.md $(D)/measured.ast $(D)/ft.ast $(BIN)/as-plan
	@echo "== the chosen plan in TorchRec's form"
	$(BIN)/as-plan --export $(D)/measured.ast --task 0 --alg "=$$(cat $(D)/chosen.txt)" --format torchrec $(D)/ft.ast -o $@.tmp
	python3 pipelines/torchrec_plan.py --check --config $(MODEL) $@.tmp > /dev/null
	mv $@.tmp $@

$(D)/report.md: $(D)/choice.md $(D)/measured.ast $(D)/model.ast $(D)/costs.ast $(D)/rows.md $(BIN)/as-eval
	@echo "== report"
	{ echo "# $(NAME): planned by its measured cost"; echo; \
	  echo "Model config: $(MODEL); device: $$($(BIN)/as-show -k plan $(D)/measured.ast | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("cost_device", "?"))')"; \
	  echo; cat $(D)/choice.md; echo; \
	  echo "## What this run measured"; echo; \
	  python3 pipelines/plan_train.py --report $(MODEL) $(WTYPE_EFF) $(OPTIM_EFF); \
	  echo "## What this run approximated"; echo; \
	  $(BIN)/as-show --kind features $(D)/ft.ast | python3 pipelines/plan_scale.py --report $(MODEL) $(CAP_EFF) $(BATCH_EFF); \
	  cat $(D)/rows.md; echo; \
	  $(BIN)/as-eval --comm-gbps 0 --format csv --table summary $(D)/measured.ast | python3 -c 'import csv, sys; \
	    w = [r["alg"] for r in csv.DictReader(sys.stdin) if int(r.get("model_weak") or 0)]; \
	    w and print("**The cost model is weak** (the verdict below says by how much): the plans of %s were placed with it; they are candidates like the others, and the choice above rests on their measurement, not on the model.\n" % ", ".join(w))'; \
	  echo "## The candidates, kernel alone"; echo; \
	  $(BIN)/as-eval --comm-gbps 0 --format markdown --table summary --singles $(D)/costs.ast $(D)/measured.ast; echo; \
	  echo "## The candidates, communication charged $(COMM_WORDS)"; echo; \
	  cat $(D)/measured.ast $(D)/model.ast | $(BIN)/as-eval $(COMM) --format markdown --table summary,verdict --singles $(D)/costs.ast; echo; \
	  echo "## Communication by sharding type"; echo; \
	  echo "Modelled, not measured: each candidate's slowest rank, its kernel and each sharding type's collectives (lib/records/comm.h)."; echo; \
	  $(BIN)/as-eval $(COMM) --format markdown --table comm $(D)/measured.ast; \
	  $(if $(COMM_MODEL),,$(BIN)/as-eval --comm-model nvlink8 --format markdown --table comm $(D)/measured.ast 2>&1 || true;) echo; \
	  echo "## The chosen plan, rank by rank"; echo; \
	  $(BIN)/as-plan --export $(D)/measured.ast --task 0 --alg "=$$(cat $(D)/chosen.txt)" --format text $(D)/ft.ast; \
	} > $@.tmp
	mv $@.tmp $@
