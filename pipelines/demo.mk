# demo.mk - the main job on an embedded default: a synthetic MetaSyn-like pool.
# Run through `make demo` (which installs dependencies and builds first), or directly:
#   make -f pipelines/demo.mk [PRESET=small|tiny|full] [SEED=0] [OUT=pipelines/out]
# File targets: re-running only redoes what changed.
#
# Today the job is: generate the pool (as-convert --synth) -> the stream file, then print
# what it holds (as-show). Later stages (features, bench, costfit, plan, eval) join here.

BIN    ?= bin
OUT    ?= pipelines/out
PRESET ?= small
SEED   ?= 0

POOL := $(OUT)/pool-$(PRESET)-s$(SEED).ast

.PHONY: demo-run
demo-run: $(OUT)/pool-summary-$(PRESET)-s$(SEED).txt
	@cat $<

$(POOL): $(BIN)/as-convert
	@mkdir -p $(OUT)
	$(BIN)/as-convert --synth --preset $(PRESET) --seed $(SEED) -o $@

$(OUT)/pool-summary-$(PRESET)-s$(SEED).txt: $(POOL) $(BIN)/as-show pipelines/pool-summary.jq
	@{ $(BIN)/as-show --version | tail -1; \
	   echo "pool: $(POOL) ($$(stat -c %s $(POOL)) bytes)"; \
	   $(BIN)/as-show --no-header --head 0 $(POOL) | jq -rs -f pipelines/pool-summary.jq; \
	 } > $@.tmp && mv $@.tmp $@
