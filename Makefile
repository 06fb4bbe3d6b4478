# autoshard - top-level build.
#   make            build every tool into bin/ (CUDA objects too when nvcc is found)
#   make test       install missing dependencies (as root), build, run unit + bats tests
#                   (the unit tests under each OpenBLAS kernel family the CPU runs too)
#   make demo       the main job on an embedded default (synthetic pool)
#   make deps       install missing Debian packages (root) or print the apt-get line
#   make asan       build with AddressSanitizer/UBSan into build-asan/ and run the tests
#                   (unit, bats, and the fuzz targets over their seed corpus: fuzz-replay)
#   make fuzz       libFuzzer runs of every decoder's fuzz target (tests/fuzz), FUZZ_TIME
#                   seconds each (default 10), with clang; without clang, the replay below
#   make fuzz-replay  every fuzz target over tests/fuzz/corpus/<target>/ and 48 mutants of
#                   each seed, with $(CC) (any compiler; seconds)
#   make install    the tools, their man pages, as-torchrec-plan, the model configs and the
#                   docs under $(DESTDIR)$(PREFIX); make uninstall removes them
# Variables: CC, CFLAGS, NVCC (empty to disable CUDA), CUDA_SM (default 90), PREFIX,
#   CLANG (for make fuzz), FUZZ_TIME.

PREFIX   ?= /usr/local
CC       ?= cc
BUILD    ?= build
BIN      ?= bin
CUDA_SM  ?= 90
OPT      ?= -O2
SAN      ?=

NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
MSGPACK_PC := $(shell pkg-config --exists msgpack-c 2>/dev/null && echo msgpack-c || echo msgpack)
PKGS := libzstd $(MSGPACK_PC) zlib openblas
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS  ?= $(OPT) -g
# lib/ has a folder per layer and stage (docs/ARCHITECTURE.md); modules include each other
# by file name, every folder on the include path
LIB_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard lib/*/*.c lib/*/*.h lib/*/*.cu))))
LIB_INC  := $(addprefix -I,$(LIB_DIRS))
LIB_HDR  := $(wildcard lib/*/*.h lib/*/*.def)
override CFLAGS  += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -fno-strict-aliasing -D_GNU_SOURCE -fopenmp $(LIB_INC) $(PKG_CFLAGS) $(SAN)
override LDFLAGS += -fopenmp $(SAN)
override LDLIBS  += $(PKG_LIBS) -lm -lpthread

LIB_SRC  := $(wildcard lib/*/*.c)
CU_SRC   := $(wildcard lib/*/*.cu)
LIB_OBJ  := $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
ifneq ($(NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  CU_OBJ  := $(CU_SRC:lib/%.cu=$(BUILD)/cuda/%.o)
  override CFLAGS  += -DAS_HAVE_CUDA -I$(CUDA_HOME)/include
  override LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart_static -ldl -lrt -lstdc++
  NVFLAGS ?= -O3 -std=c++17 -lineinfo -gencode arch=compute_$(CUDA_SM),code=sm_$(CUDA_SM) $(LIB_INC) -DAS_HAVE_CUDA
endif
LIBA     := $(BUILD)/libautoshard.a

TOOLS    := $(notdir $(wildcard cmd/as-*))
TOOL_BIN := $(TOOLS:%=$(BIN)/%)
# the runner, and a test file per module in the folder of lib/ its module is in
UNIT_SRC := $(wildcard tests/unit/*.c tests/unit/*/*.c)
UNIT_OBJ := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/unit/%.o)
TT_SRC   := $(wildcard tests/tools/*.c)
# test support (tests/support: shared PRNG and shard builders), linked into test binaries only
SUP_SRC  := $(wildcard tests/support/*.c)
SUP_OBJ  := $(SUP_SRC:tests/support/%.c=$(BUILD)/support/%.o)
SUPA     := $(BUILD)/libtestsupport.a
GPU_SRC  := $(wildcard tests/gpu/*.c)
GPU_OBJ  := $(GPU_SRC:tests/gpu/%.c=$(BUILD)/gpu/%.o)
TT_BIN   := $(TT_SRC:tests/tools/%.c=$(BUILD)/tools/%)
FUZZ_TARGETS := stream pickle torchsave convert policy checkpoint pieces jsonparse modelcfg records trplanread comm nccl
FUZZ_REPLAY  := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay-%)
CLANG    ?= $(shell command -v clang 2>/dev/null || command -v clang-14 2>/dev/null)
FUZZ_TIME ?= 10
SAN_ENV  := ASAN_OPTIONS=detect_leaks=0:exitcode=86 UBSAN_OPTIONS=halt_on_error=1:exitcode=86

.PHONY: all test unit unit-blas bats deps demo plan asan install uninstall clean check-deps gpu-test fuzz fuzz-replay fuzz-corpus
.DEFAULT_GOAL := all

all: $(TOOL_BIN) $(TT_BIN)

$(BUILD)/lib/%.o: lib/%.c $(LIB_HDR) | check-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/cuda/%.o: lib/%.cu $(LIB_HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c -o $@ $<

$(LIBA): $(LIB_OBJ) $(CU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/%: cmd/%/main.c $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

$(BUILD)/support/%.o: tests/support/%.c $(wildcard tests/support/*.h) $(LIB_HDR) | check-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/support -c -o $@ $<

$(SUPA): $(SUP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/unit/%.o: tests/unit/%.c tests/unit/unit.h $(wildcard tests/support/*.h) $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit -Itests/support -c -o $@ $<

$(BUILD)/unit-tests: $(UNIT_OBJ) $(SUPA) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJ) $(SUPA) $(LIBA) $(LDLIBS)

$(BUILD)/tools/%: tests/tools/%.c $(wildcard tests/support/*.h) $(SUPA) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/support $(LDFLAGS) -o $@ $< $(SUPA) $(LIBA) $(LDLIBS)

# fuzz targets (tests/fuzz/README.md): a replay driver for any compiler, libFuzzer with clang
$(BUILD)/fuzz/replay-%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h tests/fuzz/fuzz_rl.h $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/fuzz $(LDFLAGS) -o $@ tests/fuzz/fuzz_$*.c tests/fuzz/replay.c $(LIBA) $(LDLIBS)

$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/fuzz_rl.h $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/fuzz $(LDFLAGS) -fsanitize=fuzzer -o $@ tests/fuzz/fuzz_$*.c $(LIBA) $(LDLIBS)

$(BUILD)/fuzz/mkcorpus: tests/fuzz/mkcorpus.c tests/fuzz/fuzz_rl.h $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

$(BUILD)/gpu/%.o: tests/gpu/%.c tests/unit/unit.h $(wildcard tests/support/*.h) $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit -Itests/support -c -o $@ $<

$(BUILD)/gpu-tests: $(GPU_OBJ) $(BUILD)/unit/runner.o $(SUPA) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(GPU_OBJ) $(BUILD)/unit/runner.o $(SUPA) $(LIBA) $(LDLIBS)

# GPU tests: CUDA results against the CPU reference, then again under compute-sanitizer.
# Needs nvcc at build time and a GPU at run time (CI has neither GPU nor runs this).
gpu-test: all $(BUILD)/gpu-tests
	@test -n "$(NVCC)" || { echo "gpu-test: nvcc not found; CUDA code was not built" >&2; exit 3; }
	$(BUILD)/gpu-tests
	@if command -v compute-sanitizer >/dev/null 2>&1; then \
	  compute-sanitizer --tool memcheck --error-exitcode 9 $(BUILD)/gpu-tests small && \
	  compute-sanitizer --tool racecheck --error-exitcode 9 $(BUILD)/gpu-tests small; \
	else echo "gpu-test: compute-sanitizer not found, sanitizer runs skipped"; fi

# ---- dependencies --------------------------------------------------------------------
DEB_PKGS := build-essential pkg-config libzstd-dev libmsgpack-dev zlib1g-dev libopenblas-dev \
            parallel bats bats-assert bats-support gnuplot-nox zstd jq bsdutils bc time python3
# installed without their Recommends: python3-torch (Debian's PyTorch 1.13, CPU; about 630 MB
# with its dependencies) is for tests/torch.bats and pipelines/bench-torch.py; its Recommends
# (libtorch-dev, ninja-build, pybind11-dev) are not needed
DEB_PKGS_NOREC := python3-torch

deps:
	@missing=""; norec=""; \
	for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	for p in $(DEB_PKGS_NOREC); do dpkg -s $$p >/dev/null 2>&1 || norec="$$norec $$p"; done; \
	if [ -z "$$missing$$norec" ]; then echo "deps: all present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing$$missing$$norec"; \
	  inst() { { [ -z "$$missing" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; } && \
	           { [ -z "$$norec" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$norec >/dev/null; }; }; \
	  inst || { apt-get update -q >/dev/null && inst; } || \
	  { echo "deps: apt-get install failed" >&2; exit 3; }; \
	else echo "deps: missing:$$missing$$norec"; \
	  [ -z "$$missing" ] || echo "run: sudo apt-get install -y$$missing"; \
	  [ -z "$$norec" ] || echo "run: sudo apt-get install -y --no-install-recommends$$norec"; exit 3; fi

check-deps:
	@pkg-config --exists $(PKGS) || { echo "missing libraries ($(PKGS)); run 'make deps' (as root)" >&2; exit 3; }

# ---- tests ---------------------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit-tests
	@$(MAKE) --no-print-directory unit unit-blas bats

unit: $(BUILD)/unit-tests
	$(BUILD)/unit-tests

# the unit tests again under each OpenBLAS kernel family this CPU runs (OPENBLAS_CORETYPE:
# SkylakeX, Haswell, Sandybridge; tests/tools/openblas-coretypes): OpenBLAS picks one by the
# CPU, each rounds its own way, and a test must hold under every one a user's machine picks
unit-blas: $(BUILD)/unit-tests
	@types=$$(tests/tools/openblas-coretypes); \
	[ -n "$$types" ] || echo "unit-blas: no x86-64 OpenBLAS kernel family to choose on this CPU"; \
	for t in $$types; do \
	  OPENBLAS_CORETYPE=$$t $(BUILD)/unit-tests > $(BUILD)/unit-$$t.log 2>&1; rc=$$?; \
	  echo "unit tests under OPENBLAS_CORETYPE=$$t: $$(tail -1 $(BUILD)/unit-$$t.log)"; \
	  [ $$rc = 0 ] || { grep -B3 '^FAIL' $(BUILD)/unit-$$t.log; echo "unit-blas: failed under $$t (all of it: $(BUILD)/unit-$$t.log)" >&2; exit 1; }; \
	done

bats: all
	bats tests/

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT=-O1 NVCC= \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  all build-asan/unit-tests $(FUZZ_TARGETS:%=build-asan/fuzz/replay-%)
	$(SAN_ENV) build-asan/unit-tests
	@for t in $(FUZZ_TARGETS); do $(SAN_ENV) build-asan/fuzz/replay-$$t tests/fuzz/corpus/$$t || exit 1; done
	AS_BIN=$(CURDIR)/build-asan/bin AS_TOOLS=$(CURDIR)/build-asan/tools $(SAN_ENV) bats tests/

# the seed corpus, replayed with mutants by whatever compiler builds the project
fuzz-replay: $(FUZZ_REPLAY)
	@for t in $(FUZZ_TARGETS); do $(SAN_ENV) $(BUILD)/fuzz/replay-$$t tests/fuzz/corpus/$$t || exit 1; done

# libFuzzer (clang): new inputs go to build-fuzz/corpus/<target>, the seeds stay untouched;
# crashes are written as build-fuzz/crash-* (replay one with build-fuzz/fuzz/fuzz-<t> FILE)
fuzz:
ifneq ($(CLANG),)
	$(MAKE) BUILD=build-fuzz BIN=build-fuzz/bin CC=$(CLANG) OPT=-O1 NVCC= \
	  SAN="-fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  $(FUZZ_TARGETS:%=build-fuzz/fuzz/fuzz-%)
	@for t in $(FUZZ_TARGETS); do mkdir -p build-fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_TIME) s"; \
	  $(SAN_ENV) build-fuzz/fuzz/fuzz-$$t -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -malloc_limit_mb=1024 \
	    -timeout=10 -print_final_stats=0 -artifact_prefix=build-fuzz/crash-$$t- \
	    build-fuzz/corpus/$$t tests/fuzz/corpus/$$t 2>build-fuzz/$$t.log || { tail -40 build-fuzz/$$t.log; exit 1; }; \
	  tail -1 build-fuzz/$$t.log; done
else
	@echo "fuzz: clang not found (set CLANG=...); replaying the seed corpus with $(CC) instead" >&2
	$(MAKE) --no-print-directory BUILD=build-asan BIN=build-asan/bin OPT=-O1 NVCC= \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" fuzz-replay
endif

# regenerate tests/fuzz/corpus from tests/fuzz/mkcorpus.c (the files are checked in)
fuzz-corpus: $(BUILD)/fuzz/mkcorpus
	$(BUILD)/fuzz/mkcorpus tests/fuzz/corpus

# ---- the main job --------------------------------------------------------------------
demo: deps
	@$(MAKE) --no-print-directory all
	$(MAKE) --no-print-directory -f pipelines/demo.mk BIN=$(BIN)

# your model planned by its measured cost (pipelines/plan.mk: MODEL=config.json, default the
# Kaggle DLRM; DEVICE, OUT, SHARDS, MEM_CAP, ROW_CAP, BATCH, TORCHREC_SRC, OWN_JSON). OUT and
# MODEL are checked, and a run already in the run directory refuses this one, before the
# tools are built (plan-check); the run itself holds the directory's lock throughout
plan: deps
	@$(MAKE) --no-print-directory -f pipelines/plan.mk BIN=$(BIN) plan-check
	@$(MAKE) --no-print-directory all
	$(MAKE) --no-print-directory -f pipelines/plan.mk BIN=$(BIN)

# where a Debian user looks: the tools and as-torchrec-plan (pipelines/torchrec_plan.py) in
# bin, their man pages (from --help, pipelines/mkman) in share/man/man1, the model configs in
# share/autoshard/models, the helper as a module in share/autoshard/python, the docs in
# share/doc/autoshard; uninstall removes exactly these
SHARE_DIR := $(PREFIX)/share/autoshard
DOC_DIR   := $(PREFIX)/share/doc/autoshard
MAN_DIR   := $(PREFIX)/share/man/man1
MODELS    := $(wildcard pipelines/models/*.json)
DOCS      := README.md $(wildcard docs/*.md)
DOC_FILES := $(notdir $(DOCS))
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MAN_DIR) $(DESTDIR)$(SHARE_DIR)/models $(DESTDIR)$(SHARE_DIR)/python \
	  $(DESTDIR)$(DOC_DIR)
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 pipelines/torchrec_plan.py $(DESTDIR)$(PREFIX)/bin/as-torchrec-plan
	install -m 644 pipelines/torchrec_plan.py $(DESTDIR)$(SHARE_DIR)/python/
	install -m 644 $(MODELS) $(DESTDIR)$(SHARE_DIR)/models/
	install -m 644 $(DOCS) $(DESTDIR)$(DOC_DIR)/
	@v=$$($(BIN)/as-show --version | sed -n '1s/^as-show //p'); \
	for t in $(TOOLS); do PREFIX=$(PREFIX) pipelines/mkman $(BIN)/$$t "$$v" > $(DESTDIR)$(MAN_DIR)/$$t.1 || exit 1; \
	  chmod 644 $(DESTDIR)$(MAN_DIR)/$$t.1; done

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/bin/as-torchrec-plan \
	  $(TOOLS:%=$(DESTDIR)$(MAN_DIR)/%.1) $(DESTDIR)$(SHARE_DIR)/python/torchrec_plan.py \
	  $(MODELS:pipelines/models/%=$(DESTDIR)$(SHARE_DIR)/models/%) $(DOC_FILES:%=$(DESTDIR)$(DOC_DIR)/%)
	-rmdir $(DESTDIR)$(SHARE_DIR)/models $(DESTDIR)$(SHARE_DIR)/python $(DESTDIR)$(SHARE_DIR) $(DESTDIR)$(DOC_DIR) 2>/dev/null

clean:
	rm -rf $(BUILD) $(BIN) build-asan build-fuzz
