# plan.mk - your model planned by its measured cost, end to end: `make plan MODEL=config.json`.
# Run through `make plan` (which installs dependencies and builds first), or directly:
#   make -f pipelines/plan.mk [MODEL=pipelines/models/dlrm-criteo-kaggle.json] [DEVICE=auto]
#        [OUT=pipelines/out] [SHARDS=K] [MEM_CAP=BYTES] [ROW_CAP=R|none|auto] [BATCH=B|config|auto]
# File targets under $(OUT)/plan-NAME (NAME: the config's file name, characters other than
# letters, digits and ._+,=@~- as _): re-running redoes only what changed, and a stage that
# fails or is interrupted leaves no file behind (each tool writes its output atomically), so
# the next run resumes there. What changed: a stage's inputs, the tools, and the knobs that
# decide it (each stage's in $(D)/knobs-STAGE.txt, scale.txt and comm.txt, rewritten only when
# they change) and the content of the input files (the config, its lookups files, OWN_JSON:
# by their SHA-256, not their times). One run at a time in a run directory: the whole run
# holds a lock on it ($(D)/.plan.lock, which names its pid and start), and a second run into
# it is refused at once, naming the first. OUT holds only letters, digits and /._+,=@~-
# (make and the shell split file names at spaces, quotes, ...); MODEL and OWN_JSON may hold
# any. The report says what as-bench said of the machine while it measured (each measuring
# stage's standard error is kept beside its output, STAGE-bench.txt), in bold when it looked
# loaded; the measuring runs' OpenMP wait policy is BENCH_OMP's (below).
#
#   tables     as-convert --config          the config's tables (its lookups files, else
#                                           synthetic lookups of its pooling factors)
#   features   as-features --model-task     features (with row pieces) and the one task:
#                                           the config's ranks and HBM (SHARDS, MEM_CAP)
#   costs      pipelines/active-costs       a cost dataset of the model's own tables: every
#              (as-bench, as-costfit        table alone, the COL_SINGLES heaviest tables'
#              --select)                    column halves and quarters alone, and shards of
#                                           1..MAXT items, whole
#                                           tables and pieces, chosen where an ensemble of
#                                           cost models disagrees most, until its validation
#                                           R² stops rising or ACTIVE_BUDGET (NCOST/2) are
#                                           measured (COSTS=active); COSTS=random: NCOST
#                                           drawn shards (as-bench --sample --singles, over
#                                           the GPUs with GNU parallel where there are
#                                           several); the recipe the demo shares,
#                                           pipelines/stages.mk
#   rows.md    pipelines/row-curve          with a row cap (ROW_CAP): the largest capped table
#                                           alone over cap/8 ... all its rows, measured
#   model      as-costfit                   the cost model (its quality gate: MODEL_GATE)
#   plans      as-plan                      every planner table-wise (ALGS, TorchRec's
#                                           included), SPLIT_ALGS with --split-tables (column
#                                           pieces of at most SPLIT_COLS, and TorchRec's
#                                           row_wise: SPLIT_ROWS; from
#                                           TorchRec's splits too) and with
#                                           --split-tables --refine, REPLICATE_ALGS with
#                                           --replicate --refine, table-wise and split
#                                           (data-parallel tables), TorchRec's planner's
#                                           plan refined (torchrec+refine: its row_wise
#                                           blocks stay on their ranks), and TorchRec's own
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
#                                           (COMM_GBPS, or COMM); a simpler plan within TIE of it, or
#                                           one it does not beat in every pass, wins; unless
#                                           another wins somewhere in the plausible range of
#                                           the communication's cost (as-eval --table range:
#                                           0.5x-2x its bandwidths and latency, RANGE_MODELS),
#                                           then the candidate of the least worst case
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
# the config's, on the CPU and on a GPU (the Kaggle DLRM fp32 + SGD, DLRM-DCNv2 fp32 + exact
# row-wise Adagrad; the typed CUDA kernels passed their bit-exact tests on an H200,
# docs/GPU.md). The report says which
WEIGHTS ?= auto
OPTIMIZER ?= auto
ROW_PIECES ?= 2,4,8
# the cost dataset: drawn shards (COSTS=random; COSTS=active, the default, measures at most
# ACTIVE_BUDGET = NCOST/2 of them: pipelines/stages.mk), their largest item count, the share of
# items drawn as pieces
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
# the split search's row splits (as-plan --split-rows): row_wise, TorchRec's own (K blocks of
# ceil(rows / K) rows, block i on rank i: every plan stays one TorchRec's generators load),
# beside equal column pieces on any ranks; none: column splits only; block counts (2,4,8) let
# it place row blocks anywhere, which may measure faster but TorchRec cannot run: such plans
# are measured and reported, never chosen
SPLIT_ROWS ?= row_wise
# the cost model's quality gate (as-plan --min-model-r2): a weak model (held-out R² below 0.9 or
# below the straight line's) is said in the report and marks the plans it placed; it does not
# stop the run, since every candidate is measured and the choice rests on the measurement (on
# a GPU the Kaggle model's shards all cost 0.07-0.18 ms, launch-bound, and its model can come
# out weak); MODEL_GATE=--require-model-quality stops at the plans instead
MODEL_GATE ?=
BENCH_OPTS ?= --warmup 5 --runs 10 --trim 2 --flush 64M
# OpenMP's wait policy for the measuring runs (as-bench, row-curve: OMP_WAIT_POLICY), chosen
# when the cost dataset is measured and kept for every measurement after it (costs-omp.txt),
# so that the run's costs share one scale: passive, active, default (the OpenMP library's:
# threads spin at barriers a while), or auto: passive when other processes keep more than
# 25 % of this run's CPUs busy as the cost dataset begins, else default. Threads spinning
# against other processes on their cores stretch a kernel many times over (the project's 2-core
# VM with two `yes` running: a 6-table model's plan shards 98-103 ms spinning, 2.4-5.5 ms
# passive, 1.3-2.5 ms quiet), while on a quiet machine waking passive threads costs the
# smallest shards most (0.05-0.11 ms spinning, 0.39-0.67 ms passive; docs/USAGE.md)
BENCH_OMP ?= auto
PASSES ?= 2
COMM_GBPS ?= 600
# or a model of each collective the plans' sharding types run (as-plan and as-eval --comm-model;
# lib/records/comm.h): nvlink8 (one host of 8 NVLink 4 GPUs, published NCCL constants, at most
# 8 ranks), h100-ib (hosts of 8 H100 over 400 Gb/s InfiniBand, 8 or a multiple of 8 ranks),
# torchrec[:L] (TorchRec's planner's own estimate), your cluster's own nccl-tests output
# nccl:FILE,FILE,... (alltoall_perf and reduce_scatter_perf / all_gather_perf /
# all_reduce_perf, run on the plan's ranks; a2a=FILE names a file's collective), or alpha us /
# bus GB/s of the all-to-all, the ring and the all-reduce A/B,A/B,A/B; any of them with
# @bw=X,a2a-bw=X,lat=Y (bandwidths and latencies scaled). Empty: COMM_GBPS, every byte at one
# rate. COMM_MODEL is the old name of COMM. The report shows each candidate's communication
# by sharding type under it (and under nvlink8 beside COMM_GBPS), and how far the choice holds
# as the model's bandwidths and latency change (as-eval --table range)
COMM_MODEL ?=
COMM ?= $(COMM_MODEL)
COMM_FLAGS = $(if $(COMM),--comm-model $(call sq,$(COMM)),--comm-gbps $(COMM_GBPS))
COMM_WORDS = $(if $(COMM),by $(COMM),at $(COMM_GBPS) GiB/s)
# the files of an nccl: model, by their content (a file rewritten redoes the plans)
COMM_FILES := $(if $(filter nccl:%,$(COMM)),$(foreach f,$(subst $(comma), ,$(patsubst nccl:%,%,$(firstword $(subst @, ,$(COMM))))),$(lastword $(subst =, ,$(f)))))
COMM_SUM := $(if $(COMM_FILES),$(firstword $(shell cat $(COMM_FILES) 2>/dev/null | sha256sum)))
# the other models the choice's worst case runs over besides COMM's plausible range (as-eval
# --range-model; one that does not hold for the plan's ranks is left out, said): TorchRec's
# estimate for hosts of 8 GPUs and the published presets, unless COMM is the cluster's own
# measured collectives (nccl:...), which then stand alone
RANGE_MODELS ?= $(if $(filter nccl:%,$(COMM)),,torchrec:8 nvlink8 h100-ib)
TIE    ?= 0.01
# TorchRec's source (a checkout of meta-pytorch/torchrec) for its own planner's plan; empty:
# none (the report says so). Its plan is imported as it is, data_parallel tables included
TORCHREC_SRC ?= $(AS_TORCHREC_SRC)
# or its plan made before, elsewhere (pipelines/torchrec_planner.py's JSON for this model and
# topology; a GPU machine has no TorchRec source): imported as it is, instead of planning
OWN_JSON ?=
PYTHON ?= $(shell pipelines/find-torch-python)
PROGRESS ?= --progress

# $(call sq,TEXT): TEXT as one word for the shell (in single quotes)
sq = '$(subst ','\'',$(1))'
QMODEL := $(call sq,$(MODEL))
# COMM checked before anything is measured: a model as-eval would refuse (a bad spec, an
# nccl-tests file cut short or of a failed run) stops here, with as-eval's message
ifneq ($(strip $(COMM)),)
COMM_ERR := $(shell $(BIN)/as-eval --comm-model $(call sq,$(COMM)) --table comm /dev/null 2>&1 | grep -m1 -e '--comm-model:')
ifneq ($(COMM_ERR),)
$(error make plan: COMM: $(COMM_ERR))
endif
endif
# NAME: the config's file name without its extension; a character make or the shell would
# split a file name at (a space, a quote, ...) becomes _
NAME := $(shell printf '%s' $(QMODEL) | sed -e 's|.*/||' -e 's|\.[^.]*$$||' | LC_ALL=C tr -c 'A-Za-z0-9._+,=@~\200-\377-' '_')
D    := $(OUT)/plan-$(NAME)
# OUT names the run's files in make's rules and its recipes' commands, where a space, a quote
# or a pattern character splits or changes them: refused before anything is made
ifneq ($(shell printf '%s' $(call sq,$(OUT)) | LC_ALL=C tr -d 'A-Za-z0-9/._+,=@~\200-\377-'),)
$(error make plan: OUT must not contain spaces, quotes or characters other than letters, digits and /._+,=@~- (make and the shell split file names there): $(OUT))
endif
ifeq ($(strip $(MODEL)),)
$(error make plan: MODEL is empty: give a model config (e.g. pipelines/models/dlrm-criteo-kaggle.json))
endif

# ---- one run at a time in $(D) ---------------------------------------------------------
# The whole run holds a lock on its directory: this makefile runs itself again under flock(1)
# on $(D)/.plan.lock (AS_PLAN_LOCK_HELD names the lock it holds), which names the holder's pid
# and start; a second run into the same directory is refused at once, naming the first. The
# lock goes with the processes (a killed run leaves none behind). `make -f pipelines/plan.mk
# plan-check` only checks OUT, MODEL and that no run holds the directory (`make plan` asks
# before it builds the tools).
LOCK := $(D)/.plan.lock
# the lock on file descriptor 9, or exit 1 naming its holder (its pid, a moment to write it)
lock_take = mkdir -p $(D) && exec 9>>$(LOCK) && { flock -n 9 || { \
	  for i in 1 2 3 4 5 6 7 8 9 10; do who=$$(cat $(LOCK) 2>/dev/null); p=$${who\#pid }; p=$${p%%,*}; \
	    [ -n "$$p" ] && [ -d "/proc/$$p" ] && break; sleep 0.1; done; \
	  [ -z "$$p" ] || [ -d "/proc/$$p" ] || who="$$who; it has ended, but a process it started still holds the lock"; \
	  echo "make plan: $(D) is in use by another make plan ($${who:-its pid unknown}): wait for it to end, or give another OUT" >&2; \
	  exit 1; }; }
ifneq ($(AS_PLAN_LOCK_HELD),$(abspath $(LOCK)))
PLAN_GOALS := $(filter-out plan-check,$(or $(MAKECMDGOALS),plan-run))
.DEFAULT_GOAL := plan-run
.PHONY: plan-check plan-lock $(PLAN_GOALS)
plan-check:
	@$(lock_take)
ifneq ($(PLAN_GOALS),)
$(PLAN_GOALS): plan-lock ; @:
plan-lock:
	@$(lock_take) && date -u "+pid $$$$, started %Y-%m-%d %H:%M:%S UTC" > $(LOCK) && \
	exec $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) AS_PLAN_LOCK_HELD=$(abspath $(LOCK)) $(PLAN_GOALS)
endif
else
.DEFAULT_GOAL := plan-run

TOPO := $(if $(SHARDS),--shards $(SHARDS)) $(if $(MEM_CAP),--mem-cap $(MEM_CAP))
PIECE_OPTS := $(if $(filter-out 0,$(SAMPLE_PIECES)),--sample-pieces $(SAMPLE_PIECES) --piece-blocks $(ROW_PIECES))
# the cost dataset's reference level, where it has one (stages.mk's ref_level)
REF_LEVEL := $$(cat $(D)/costs-ref.txt)
# the measuring runs' environment: the wait policy the cost dataset chose (costs-omp.txt)
BENCH_ENV := env $$(head -n 1 $(D)/costs-omp.txt 2>/dev/null)
include pipelines/stages.mk
NGPU_N := $(or $(NGPU),0)

ifneq ($(filter-out auto passive active default,$(BENCH_OMP)),)
$(error make plan: BENCH_OMP=$(BENCH_OMP) is not auto, passive, active or default)
endif

# the row cap and the batch measured: "CAP BATCH STATUS" (0: none, the config's); a config it
# cannot read leaves both 0 (as-convert says what is wrong with it); a bad value stops here
SCALE := $(shell python3 pipelines/plan_scale.py $(QMODEL) --device $(DEVICE) --ngpu $(NGPU_N) --row-cap $(ROW_CAP) --batch $(BATCH); echo $$?)
ifeq ($(lastword $(SCALE)),2)
$(error make plan: bad ROW_CAP=$(ROW_CAP) or BATCH=$(BATCH) (above))
endif
CAP_EFF   := $(if $(filter 0,$(lastword $(SCALE))),$(word 1,$(SCALE)),0)
BATCH_EFF := $(if $(filter 0,$(lastword $(SCALE))),$(word 2,$(SCALE)),0)
# the weights' type and the optimizer measured: "WTYPE OPTIM STATUS"
TRAIN := $(shell python3 pipelines/plan_train.py $(QMODEL) --device $(DEVICE) --ngpu $(NGPU_N) --weights $(WEIGHTS) --optimizer $(OPTIMIZER); echo $$?)
ifeq ($(lastword $(TRAIN)),2)
$(error make plan: bad WEIGHTS=$(WEIGHTS) or OPTIMIZER=$(OPTIMIZER) (above))
endif
ifeq ($(lastword $(TRAIN)),3)
$(error make plan: the model cannot be measured as it trains (above))
endif
WTYPE_EFF := $(if $(filter 0,$(lastword $(TRAIN))),$(word 1,$(TRAIN)),fp16)
OPTIM_EFF := $(if $(filter 0,$(lastword $(TRAIN))),$(word 2,$(TRAIN)),sgd)
BENCH_EXTRA := $(if $(filter-out 0,$(CAP_EFF)),--row-cap $(CAP_EFF)) --weights-type $(WTYPE_EFF) --optimizer $(OPTIM_EFF)
ROWCAP_HINT := or measure it over fewer rows (ROW_CAP=ROWS; as-bench --row-cap)

# BENCH_OMP: the measuring runs' OMP_WAIT_POLICY, two lines: the environment (empty: the
# library's default) and what was chosen, why (for the report)
define OMP_POLICY_PY
import os, sys, time
want = sys.argv[1]
def busy(cpus):
    b = t = 0
    with open("/proc/stat") as f:
        for line in f:
            v = line.split()
            if v and v[0][:3] == "cpu" and v[0][3:].isdigit() and int(v[0][3:]) in cpus:
                n = [int(x) for x in v[1:9]]
                t += sum(n)
                b += sum(n) - n[3] - (n[4] if len(n) > 4 else 0)
    return b, t
if want == "auto":
    cpus = os.sched_getaffinity(0)
    try:
        b0, t0 = busy(cpus)
        time.sleep(0.5)
        b1, t1 = busy(cpus)
        other = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
    except OSError:
        other = -1.0
    seen = "other processes used %.0f %% of the %d CPUs this run may use as the cost dataset began" % (100 * other, len(cpus)) if other >= 0 else "/proc/stat unreadable"
    if other > 0.25:
        print("OMP_WAIT_POLICY=passive")
        print("OpenMP wait policy: passive (BENCH_OMP=auto: %s, above 25 %%; threads spinning against them stretch the kernels)" % seen)
    else:
        print("")
        print("OpenMP wait policy: the library default, spinning (BENCH_OMP=auto: %s)" % seen)
elif want in ("passive", "active"):
    print("OMP_WAIT_POLICY=" + want)
    print("OpenMP wait policy: %s (BENCH_OMP=%s)" % (want, want))
elif want in ("default", ""):
    print("")
    print("OpenMP wait policy: the library default, spinning (BENCH_OMP=%s)" % want)
else:
    sys.stderr.write("make plan: BENCH_OMP=%s is not auto, passive, active or default\n" % want)
    sys.exit(2)
endef
export OMP_POLICY_PY

# ---- what decides a redo ----------------------------------------------------------------
# The input files by their content, never their times: the config, its lookups files (PATH
# relative to its folder) and OWN_JSON, each by its SHA-256 ("missing" when it cannot be
# read: the stage that reads it says why). A sum is kept in $(D)/.input-sums.json with the
# file's device, inode, size, mtime and ctime, and read again only when one of them changed
# (a file swapped for another, even an older one, has another inode or ctime).
# Prints "CONFIG LOOKUPS OWN": the config's sum, one sum over its lookups files' ("none":
# it has none), OWN_JSON's ("none": not given): aspipe.input_sums, the config read by
# aspipe.read_config (one it cannot read names no lookups files: as-convert says why).
QOWN := $(call sq,$(OWN_JSON))
INPUT_SUMS := $(shell python3 pipelines/aspipe.py input-sums $(D)/.input-sums.json $(QMODEL) $(QOWN))
CONFIG_SUM  := $(word 1,$(INPUT_SUMS))
LOOKUPS_SUM := $(word 2,$(INPUT_SUMS))
OWN_SUM     := $(word 3,$(INPUT_SUMS))
TORCHREC_REV := $(if $(TORCHREC_SRC),$(or $(shell git -C $(call sq,$(TORCHREC_SRC)) rev-parse HEAD 2>/dev/null),unknown))

# $(call stamp,FILE,WORDS): $(D)/FILE holds the shell words WORDS, one a line, rewritten only
# when they change (it then depends on FORCE): what depends on it is redone then, and only
# then. Each stage depends on the stamps of exactly the knobs that decide it.
.PHONY: FORCE
define stamp_rule
$(1):$(if $(shell printf '%s\n' $(2) | cmp -s - $(call sq,$(1)) 2>/dev/null || echo changed), FORCE)
	@mkdir -p $$(@D)
	@printf '%s\n' $(subst $$,$$$$,$(2)) > $$@.tmp && mv $$@.tmp $$@
endef
stamp = $(eval $(call stamp_rule,$(D)/$(1),$(2)))
# $(call knobs,NAMES): each variable NAME as the word 'NAME=value'
knobs = $(foreach k,$(1),$(call sq,$(k)=$($(k))))

# what is measured over (ROW_CAP, BATCH as resolved) and with (WEIGHTS, OPTIMIZER): a change
# redoes everything from the tables on
$(call stamp,scale.txt,$(call sq,row_cap $(CAP_EFF) batch $(BATCH_EFF) weights $(WTYPE_EFF) optimizer $(OPTIM_EFF)))
# the communication charge (COMM_GBPS or COMM_MODEL): the plans and what follows them
$(call stamp,comm.txt,$(call sq,$(COMM_FLAGS) $(COMM_SUM)))
$(call stamp,knobs-tables.txt,$(call knobs,CONFIG_SUM LOOKUPS_SUM SEED))
$(call stamp,knobs-features.txt,$(call knobs,ROW_PIECES SHARDS MEM_CAP))
$(call stamp,knobs-costs.txt,$(call knobs,COSTS NCOST ACTIVE_BUDGET ACTIVE_OPTS MAXT SEED SAMPLE_PIECES COL_SINGLES ROW_PIECES BENCH_OPTS BENCH_OMP DEVICE NGPU_N))
$(call stamp,knobs-rows.txt,$(call knobs,BENCH_OPTS DEVICE))
$(call stamp,knobs-model.txt,$(call knobs,SEED))
$(call stamp,knobs-own.txt,$(call knobs,OWN_JSON OWN_SUM TORCHREC_SRC $(if $(TORCHREC_SRC),TORCHREC_REV PYTHON)))
$(call stamp,knobs-plans.txt,$(call knobs,ALGS SPLIT_ALGS SPLIT_ROWS SPLIT_COLS REPLICATE_ALGS MODEL_GATE SEED))
$(call stamp,knobs-first.txt,$(call knobs,BENCH_OPTS DEVICE NGPU_N))
$(call stamp,knobs-repaired.txt,$(call knobs,REPAIR_ALGS MODEL_GATE SEED))
$(call stamp,knobs-measured.txt,$(call knobs,PASSES BENCH_OPTS DEVICE NGPU_N))
$(call stamp,knobs-choice.txt,$(call knobs,TIE CONFIG_SUM RANGE_MODELS))
$(call stamp,knobs-report.txt,$(call knobs,MODEL CONFIG_SUM))

# our planners' names (the registry, lib/records/planners.def): an imported plan labelled as
# one of theirs (ALG, or ALG+...) would share a label with one of our candidates
PLANNERS := $(shell sed -n 's/^AS_PLANNER.[A-Z_]*, *"\([^"]*\)".*/\1/p' lib/records/planners.def)
# $(call own_labels,PLANS,WHERE): PLANS (imported) refused, and removed, when a plan's label
# is one of our planners' (WHERE names the file; aspipe.own_labels)
own_labels = $(BIN)/as-show -k plan $(1) | python3 pipelines/aspipe.py own-labels $(call sq,$(2)) '$(PLANNERS)' || { rm -f $(1); exit 1; }

.PHONY: plan-run
plan-run: $(D)/report.md $(D)/plan.json
	@cat $(D)/report.md
	@echo
	@echo "the chosen plan for TorchRec: $(D)/plan.json (pipelines/torchrec_plan.py loads it); all files under $(D)"

$(D)/pool.ast: $(BIN)/as-convert $(D)/scale.txt $(D)/knobs-tables.txt
	@mkdir -p $(D)
	@printf '%s%s\n' "== tables of " $(call sq,$(MODEL)$(if $(filter-out 0,$(BATCH_EFF)), (measured at a batch of $(BATCH_EFF))))
	$(BIN)/as-convert --config $(QMODEL) $(if $(filter-out 0,$(BATCH_EFF)),--batch $(BATCH_EFF)) --seed $(SEED) $(PROGRESS) -o $@

$(D)/ft.ast: $(D)/pool.ast $(BIN)/as-features $(D)/knobs-features.txt
	@echo "== features and the model's task"
	$(BIN)/as-features $< --model-task --row-pieces $(ROW_PIECES) $(TOPO) $(PROGRESS) -o $@

# every table must be measurable alone on the device: one that is not (too large for it)
# stops here, named with why, rather than leaving its plans unmeasured; so does a dataset
# without a reference level (stages.mk), which the measurements after it are corrected to
$(D)/costs.ast: $(D)/pool.ast $(D)/ft.ast $(BIN)/as-bench $(D)/knobs-costs.txt
	@echo "== cost dataset of the model's tables: each alone, $(if $(filter random,$(COSTS)),$(NCOST) drawn shards of 1..$(MAXT) items$(if $(FANOUT), on $(NGPU) GPUs),shards of 1..$(MAXT) items chosen where the cost model is least sure (at most $(ACTIVE_BUDGET)))"
	@python3 -c "$$OMP_POLICY_PY" $(call sq,$(BENCH_OMP)) > $(D)/costs-omp.txt || { rm -f $(D)/costs-omp.txt; exit 1; }
	@sed -n 2p $(D)/costs-omp.txt
	$(call cost_dataset,$<,$(D)/ft.ast,$@,make plan,$(ROWCAP_HINT))

# how a capped table's cost changes with its rows, measured (with a row cap; else empty)
$(D)/rows.md: $(D)/pool.ast $(D)/costs.ast $(D)/knobs-rows.txt
	@echo "== $(if $(filter-out 0,$(CAP_EFF)),how the largest capped table's cost changes with its rows,rows: nothing capped)"
ifneq ($(CAP_EFF),0)
	$(BENCH_ENV) pipelines/row-curve --tables $< --cap $(CAP_EFF) --bin $(BIN) --device $(DEVICE) \
	  --bench-opts "$(BENCH_OPTS) --weights-type $(WTYPE_EFF) --optimizer $(OPTIM_EFF)" -o $@
else
	: > $@
endif

$(D)/model.ast: $(D)/ft.ast $(D)/costs.ast $(BIN)/as-costfit $(D)/knobs-model.txt
	@echo "== cost model"
	cat $(D)/ft.ast $(D)/costs.ast | $(BIN)/as-costfit --seed $(SEED) $(PROGRESS) -o $@

# TorchRec's own planner's plan, where its source is at hand; else an empty file. Its label
# must not be one of our planners' (own_labels)
$(D)/own.ast: $(D)/ft.ast $(D)/model.ast $(BIN)/as-plan $(D)/knobs-own.txt
	@printf '%s%s\n' "== TorchRec's own planner" $(call sq,$(if $(OWN_JSON), (its plan from $(OWN_JSON)),$(if $(TORCHREC_SRC),, (TORCHREC_SRC not set: left out))))
	rm -f $@.json $@.tmp
ifneq ($(OWN_JSON),)
	$(BIN)/as-plan --model $(D)/model.ast --import $(QOWN) --seed $(SEED) --plans-only $(D)/ft.ast -o $@.tmp
	$(call own_labels,$@.tmp,OWN_JSON $(OWN_JSON))
	mv $@.tmp $@
else ifneq ($(TORCHREC_SRC),)
	AS_SHOW=$(BIN)/as-show $(PYTHON) pipelines/torchrec_planner.py $(D)/ft.ast --torchrec-src $(call sq,$(TORCHREC_SRC)) -o $@.json
	$(BIN)/as-plan --model $(D)/model.ast --import $@.json --seed $(SEED) --plans-only $(D)/ft.ast -o $@.tmp
	$(call own_labels,$@.tmp,TorchRec's own planner's plan ($@.json))
	mv $@.tmp $@
else
	: > $@
endif

$(D)/plans.ast: $(D)/ft.ast $(D)/model.ast $(D)/own.ast $(D)/comm.txt $(BIN)/as-plan $(D)/knobs-plans.txt
	@echo "== plans: $(ALGS) table-wise$(if $(SPLIT_ALGS),; $(SPLIT_ALGS) with --split-tables, then with --refine)"
	$(BIN)/as-plan --alg $(ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only $(D)/ft.ast -o $@.table
ifneq ($(SPLIT_ALGS),)
	$(BIN)/as-plan --alg $(SPLIT_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) --split-cols $(SPLIT_COLS) $(COMM_FLAGS) $(D)/ft.ast -o $@.split
	$(BIN)/as-plan --alg $(SPLIT_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) --split-cols $(SPLIT_COLS) --refine $(COMM_FLAGS) $(D)/ft.ast -o $@.refine
endif
ifneq ($(REPLICATE_ALGS),)
	$(BIN)/as-plan --alg $(REPLICATE_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only \
	  --replicate --refine $(COMM_FLAGS) $(D)/ft.ast -o $@.dp
	$(BIN)/as-plan --alg $(REPLICATE_ALGS) --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only \
	  --split-tables --split-rows $(SPLIT_ROWS) --split-cols $(SPLIT_COLS) --replicate --refine $(COMM_FLAGS) $(D)/ft.ast -o $@.splitdp
endif
ifneq ($(filter torchrec,$(subst $(comma), ,$(ALGS))),)
	$(BIN)/as-plan --alg torchrec --model $(D)/model.ast $(MODEL_GATE) --seed $(SEED) $(PROGRESS) --plans-only \
	  --refine $(COMM_FLAGS) $(D)/ft.ast -o $@.trrefine
endif
	cat $@.table $(if $(SPLIT_ALGS),$@.split $@.refine) $(if $(REPLICATE_ALGS),$@.dp $@.splitdp) \
	  $(if $(filter torchrec,$(subst $(comma), ,$(ALGS))),$@.trrefine) $(D)/own.ast > $@.tmp && \
	  mv $@.tmp $@ && rm -f $@.table $@.split $@.refine $@.dp $@.splitdp $@.trrefine

# the measured repair round: every candidate measured once, then REPAIR_ALGS's plans refined on
# their measured costs (as-plan --repair: ALG+refine+measured), which join the candidates
$(D)/costs-ref.txt: $(D)/costs.ast
	$(call ref_level,$<,$@,make plan)

$(D)/first.ast: $(D)/plans.ast $(D)/costs.ast $(D)/costs-ref.txt $(D)/pool.ast $(BIN)/as-bench $(D)/knobs-first.txt
	@echo "== every candidate measured once, for the repair$(if $(FANOUT), on $(NGPU) GPUs)"
	$(call bench_logged,$(call as_bench_run,$(D)/pool.ast,--window 0 $(REF_LEVEL),$<,$@.tmp),$(D)/first-bench.txt)
	mv $(D)/first-bench.txt.tmp $(D)/first-bench.txt && mv $@.tmp $@

$(D)/repaired.ast: $(D)/first.ast $(D)/ft.ast $(D)/model.ast $(BIN)/as-plan $(D)/knobs-repaired.txt
	@echo "== measured repair: $(if $(REPAIR_ALGS),$(REPAIR_ALGS)'s plans refined on their measured costs,none (REPAIR_ALGS empty))"
ifneq ($(REPAIR_ALGS),)
	$(BIN)/as-plan --alg $(REPAIR_ALGS) --model $(D)/model.ast $(MODEL_GATE) --repair $< --seed $(SEED) $(PROGRESS) --plans-only $(D)/ft.ast -o $@.tmp
	mv $@.tmp $@
else
	: > $@
endif

$(D)/candidates.ast: $(D)/plans.ast $(D)/repaired.ast
	cat $^ > $@.tmp && mv $@.tmp $@

$(D)/measured.ast: $(D)/candidates.ast $(D)/costs.ast $(D)/costs-ref.txt $(D)/pool.ast $(BIN)/as-bench $(D)/knobs-measured.txt
	@echo "== every candidate measured, the repaired ones with them, $(PASSES) passes$(if $(FANOUT), on $(NGPU) GPUs)"
	$(call measure_plans,$(D)/pool.ast,$<,$@)

# the candidates TorchRec can load (each exported and checked by torchrec_plan.py --check),
# then the choice among them
$(D)/choice.md: $(D)/measured.ast $(D)/ft.ast $(BIN)/as-eval $(BIN)/as-plan pipelines/plan_choose.py pipelines/torchrec_plan.py \
  $(D)/comm.txt $(D)/knobs-choice.txt
	@echo "== the choice"
	$(BIN)/as-eval $(COMM_FLAGS) --format csv --table plans $< -o $@.comm.csv
	$(BIN)/as-eval --comm-gbps 0 --format csv --table plans $< -o $@.kernel.csv
	python3 -c 'import csv, sys; [print(r["alg"]) for r in csv.DictReader(open(sys.argv[1]))]' $@.comm.csv > $@.algs
	n=$$(wc -l < $@.algs); i=0; t0=$$(date +%s); while IFS= read -r a; do \
	  i=$$((i + 1)); el=$$(($$(date +%s) - t0)); \
	  $(if $(PROGRESS),echo "make plan: loadable? $$i/$$n: $$a ($${el}s$$([ $$i -gt 1 ] && echo ", ETA $$((el * (n - i + 1) / (i - 1)))s"))" >&2;) \
	  $(BIN)/as-plan -q --export $< --task 0 --alg "=$$a" --format torchrec $(D)/ft.ast | \
	    python3 pipelines/torchrec_plan.py --check --config $(QMODEL) > /dev/null 2>&1 && echo "$$a"; \
	done < $@.algs > $(D)/loadable.txt
	python3 pipelines/plan_choose.py $@.comm.csv $@.kernel.csv --tie $(TIE) --loadable $(D)/loadable.txt --out-alg $(D)/chosen.txt > $@.first
	$(BIN)/as-eval $(COMM_FLAGS) --format csv --table range --candidates $(D)/loadable.txt --chosen "$$(cat $(D)/chosen.txt)" \
	  --tie $(TIE) $(foreach m,$(RANGE_MODELS),--range-model $(call sq,$(m))) $< -o $@.range.csv
	python3 pipelines/plan_choose.py --robust $@.range.csv --tie $(TIE) --out-alg $(D)/chosen.txt > $@.robust
	python3 pipelines/plan_choose.py $@.comm.csv $@.kernel.csv --tie $(TIE) --loadable $(D)/loadable.txt --chosen "$$(cat $(D)/chosen.txt)" > $@.first
	cat $@.first $@.robust > $@.tmp
	mv $@.tmp $@ && rm -f $@.comm.csv $@.kernel.csv $@.range.csv $@.first $@.robust $@.algs

$(D)/plan.json: $(D)/choice.md $(D)/measured.ast $(D)/ft.ast $(BIN)/as-plan
	@echo "== the chosen plan in TorchRec's form"
	$(BIN)/as-plan --export $(D)/measured.ast --task 0 --alg "=$$(cat $(D)/chosen.txt)" --format torchrec $(D)/ft.ast -o $@.tmp
	python3 pipelines/torchrec_plan.py --check --config $(QMODEL) $@.tmp > /dev/null
	mv $@.tmp $@

# what as-bench said of the machine while it measured (its quiet-machine check, its noise
# summary, the drift it corrected): loaded, the absolute times are not a quiet machine's
define BENCH_NOTE_PY
import re, sys
try:
    with open(sys.argv[1]) as f:
        omp = f.read().split("\n")[1].strip()
except (OSError, IndexError):
    omp = ""
stages = list(zip(sys.argv[2::2], sys.argv[3::2]))
keep = re.compile(r"as-bench(\[[^]]*\])?: (warning: |noise: |drift: )")
seen, loaded, found = [], False, 0
for what, path in stages:
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        continue
    found += 1
    for line in re.split(r"[\r\n]+", text):
        m = keep.search(line)
        if not m:
            continue
        line = line[m.start():].strip()
        if "warning: " in line or "refused" in line:
            loaded = True
        seen.append((what, line))
print("## How the machine was while measuring")
print()
if not found:
    print("Not recorded: these measurements were made before make plan kept what as-bench said of the machine.")
elif loaded:
    print("**The machine looked loaded while measuring**: as-bench warned (below). The times in this report are absolute times on a busy machine, slower and noisier than a quiet one gives (other work on its cores stretched the kernels), and may not be what the plans cost on a quiet one; plans measured together share the load better than their absolute times do. Measure again on a quiet machine for absolute times (delete costs.ast in the run directory: everything from it is measured again).")
else:
    print("as-bench did not warn: its quiet-machine check found the machine quiet, and at most 10 % of the shards stayed noisy.")
print()
if omp:
    print(omp + ".")
    print()
for what, line in seen:
    print("- %s: `%s`" % (what, line.replace(chr(96), chr(39))))
if found and not seen:
    print("- (as-bench said nothing of the machine: measured with -q or --no-calibrate)")
print()
endef
export BENCH_NOTE_PY

$(D)/report.md: $(D)/choice.md $(D)/measured.ast $(D)/model.ast $(D)/costs.ast $(D)/costs-ref.txt $(D)/rows.md $(BIN)/as-eval \
  $(D)/comm.txt $(D)/scale.txt $(D)/knobs-report.txt
	@echo "== report"
	{ echo "# $(NAME): planned by its measured cost"; echo; \
	  printf 'Model config: %s; device: %s\n' $(QMODEL) "$$($(BIN)/as-show -k plan $(D)/measured.ast | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("cost_device", "?"))')"; \
	  echo; cat $(D)/choice.md; echo; \
	  echo "## What this run measured"; echo; \
	  cat $(D)/costs-active.md 2>/dev/null && echo; \
	  python3 pipelines/plan_train.py --report $(QMODEL) $(WTYPE_EFF) $(OPTIM_EFF) || exit 1; \
	  echo "## What this run approximated"; echo; \
	  $(BIN)/as-show --kind features $(D)/ft.ast | python3 pipelines/plan_scale.py --report $(QMODEL) $(CAP_EFF) $(BATCH_EFF) || exit 1; \
	  cat $(D)/rows.md; echo; \
	  python3 -c "$$BENCH_NOTE_PY" $(D)/costs-omp.txt "the cost dataset" $(D)/costs-bench.txt "the candidates measured once" $(D)/first-bench.txt \
	    "the candidates measured in $(PASSES) passes" $(D)/measured-bench.txt; \
	  [ -s $(D)/costs-ref.txt ] || { echo "**The cost dataset has no reference level** (its reference shard never measured quiet: the machine looked busy), so the candidates' measurements keep their own levels, not corrected to the cost dataset's scale: compare the candidates with each other (they were measured together), not with the cost dataset's single-table costs."; echo; }; \
	  $(BIN)/as-eval --comm-gbps 0 --format csv --table summary $(D)/measured.ast | python3 -c 'import csv, sys; \
	    w = [r["alg"] for r in csv.DictReader(sys.stdin) if int(r.get("model_weak") or 0)]; \
	    w and print("**The cost model is weak** (the verdict below says by how much): the plans of %s were placed with it; they are candidates like the others, and the choice above rests on their measurement, not on the model.\n" % ", ".join(w))'; \
	  echo "## The candidates, kernel alone"; echo; \
	  $(BIN)/as-eval --comm-gbps 0 --format markdown --table summary --singles $(D)/costs.ast $(D)/measured.ast; echo; \
	  echo "## The candidates, communication charged $(COMM_WORDS)"; echo; \
	  cat $(D)/measured.ast $(D)/model.ast | $(BIN)/as-eval $(COMM_FLAGS) --format markdown --table summary,verdict --singles $(D)/costs.ast; echo; \
	  echo "## Communication by sharding type"; echo; \
	  echo "Modelled, not measured: each candidate's slowest rank, its kernel and each sharding type's collectives (lib/records/comm.h)."; echo; \
	  $(BIN)/as-eval $(COMM_FLAGS) --format markdown --table comm $(D)/measured.ast; \
	  $(if $(COMM),,$(BIN)/as-eval --comm-model nvlink8 --format markdown --table comm $(D)/measured.ast 2>&1 || true;) echo; \
	  echo "## How far the choice holds"; echo; \
	  echo "Modelled: each candidate TorchRec can load, its measured kernel plus its communication with the model's bandwidths (every collective's, the all-to-all's alone) and latency scaled from 1/16 to 16 times (as-eval --table range; the plausible range: 0.5x to 2x)."; echo; \
	  $(BIN)/as-eval $(COMM_FLAGS) --format markdown --table range --candidates $(D)/loadable.txt --chosen "$$(cat $(D)/chosen.txt)" \
	    --tie $(TIE) $(foreach m,$(RANGE_MODELS),--range-model $(call sq,$(m))) $(D)/measured.ast; \
	  echo "## The chosen plan, rank by rank"; echo; \
	  $(BIN)/as-plan --export $(D)/measured.ast --task 0 --alg "=$$(cat $(D)/chosen.txt)" --format text $(D)/ft.ast; \
	} > $@.tmp
	mv $@.tmp $@

endif
