#!/usr/bin/env bats
# make plan (pipelines/plan.mk) hands back only this run's answer: one run at a time in a run
# directory; a changed knob or input file redoes the stages it decides, and only those; the
# report says when the machine was loaded; a cost dataset without a reference level does not
# wedge the run; an imported plan labelled as one of ours is refused at the door; an OUT make cannot
# name is refused, a MODEL with spaces and quotes works. At the tiny scale of tests/plan.bats.
load test_helper/common
load test_helper/tinyplan

setup_file() {
    export D="$BATS_FILE_TMPDIR"
    tiny_config
}

# the whole run once, in $D/out (the first test makes it beside a second run); copied into $1
base_copy() {
    [ -e "$D/out/plan-tiny/report.md" ] || mkplan > /dev/null 2>&1
    rm -rf "$1"
    cp -rp "$D/out" "$1"
}

# the stages `make -n` lists (their "== " lines), one a line, in order
STAGES='tables of|features and|cost dataset|cost model|TorchRec.s own planner|plans:|every candidate measured once|measured repair|every candidate measured,|the choice|report'
stages() {
    grep -oE "== ($STAGES)" | sed 's/^== //'
}

@test "make plan: a second run into the same directory is refused at once, naming the first; the first's answer is its own; no stale lock" {
    P="$D/out/plan-tiny"
    mkplan > "$T/a.out" 2>&1 &
    a=$!
    # the first run holds the directory once its lock names it
    for i in $(seq 200); do grep -q '^pid ' "$P/.plan.lock" 2> /dev/null && break; sleep 0.05; done
    t0=$(date +%s)
    run mkplan SEED=1
    t1=$(date +%s)
    assert_failure
    pid=$(sed -n 's/^pid \([0-9]*\), .*/\1/p' "$P/.plan.lock")
    [ -n "$pid" ]
    assert_output --regexp "make plan: $P is in use by another make plan \(pid $pid, started [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC\): wait for it to end, or give another OUT"
    [ $((t1 - t0)) -le 5 ]
    wait "$a" || { cat "$T/a.out"; false; }
    # every file of the run is the first run's (SEED 0): nothing of the second's
    [ -s "$P/report.md" ] && [ -s "$P/plan.json" ]
    [ "$(as-show -k plan "$P/measured.ast" | jq -r .seed | sort -u)" = 0 ]
    grep -qx 'SEED=0' "$P/knobs-tables.txt"
    # the lock left behind names a process that has ended: it does not block
    [ ! -d "/proc/$pid" ]
    run mkplan
    assert_success
    refute_output --partial "== "
    # nor does a run killed outright (its lock goes with its processes); a run is then let in
    # (here: to its tables)
    AS_BENCH_FAKE_NOISE=quiet setsid make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$D/tiny.json" OUT="$D/out-kill" \
        NCOST=30 MAXT=4 DEVICE=cpu PROGRESS= TORCHREC_SRC= > /dev/null 2>&1 &
    k=$!
    for i in $(seq 200); do grep -q '^pid ' "$D/out-kill/plan-tiny/.plan.lock" 2> /dev/null && break; sleep 0.05; done
    run mkplan OUT="$D/out-kill" plan-check
    assert_failure
    assert_output --partial "is in use by another make plan"
    holder=$(sed -n 's/^pid \([0-9]*\), .*/\1/p' "$D/out-kill/plan-tiny/.plan.lock")
    pgid=$(ps -o pgid= -p "$holder" | tr -d ' ')
    [ -n "$pgid" ] && [ "$pgid" != "$(ps -o pgid= -p $$ | tr -d ' ')" ]
    kill -KILL -- "-$pgid"
    wait "$k" || true
    sleep 0.2
    run mkplan OUT="$D/out-kill" plan-check
    assert_success
    run mkplan OUT="$D/out-kill" "$D/out-kill/plan-tiny/pool.ast"
    assert_success
    refute_output --partial "in use"
}

@test "make plan: a changed knob redoes the stages it decides, from the first of them, and none before it" {
    # PASSES=3 measures again (the costs kept) and the report says 3 passes; again: nothing
    base_copy "$D/out-passes"
    P="$D/out-passes/plan-tiny"
    c0=$(stat -c %Y.%N "$P/costs.ast")
    run mkplan OUT="$D/out-passes" PASSES=3
    assert_success
    assert_output --partial "== every candidate measured, the repaired ones with them, 3 passes"
    refute_output --partial "== cost dataset"
    refute_output --partial "== measured repair"
    [ "$(stat -c %Y.%N "$P/costs.ast")" = "$c0" ]
    grep -qF "The plans were measured in 3 passes made apart" "$P/report.md"
    run mkplan OUT="$D/out-passes" PASSES=3
    assert_success
    refute_output --partial "== "
    # every knob, by what make -n would redo (which changes nothing): the same knobs, nothing
    base_copy "$D/out-knobs"
    run mkplan OUT="$D/out-knobs" -n
    assert_success
    [ -z "$(stages <<< "$output")" ]
    # each knob: KNOB=VALUE, then the first stage it redoes (the stages before it are kept)
    while IFS='|' read -r knob first; do
        run mkplan OUT="$D/out-knobs" -n "$knob"
        assert_success
        got=$(stages <<< "$output" | head -1)
        [ "$got" = "$first" ] || fail "$knob: redoes from '$got', not '$first'"
    done <<'EOF'
SEED=1|tables of
ROW_PIECES=2,4|features and
MEM_CAP=900000000|features and
ROW_CAP=10000|tables of
NCOST=31|cost dataset
MAXT=3|cost dataset
SAMPLE_PIECES=0.2|cost dataset
COL_SINGLES=2|cost dataset
BENCH_OPTS=--warmup 1 --runs 4 --trim 1 --flush 8M|cost dataset
BENCH_OMP=passive|cost dataset
OWN_JSON=/dev/null|TorchRec's own planner
MODEL_GATE=--require-model-quality|plans:
ALGS=all|plans:
SPLIT_ALGS=cost-greedy|plans:
SPLIT_ROWS=2,4|plans:
SPLIT_COLS=2|plans:
REPLICATE_ALGS=|plans:
COMM_MODEL=nvlink8|plans:
REPAIR_ALGS=cost-greedy+split+refine|measured repair
PASSES=3|every candidate measured,
TIE=0.02|the choice
EOF
    # TIE: the choice and the report, nothing measured
    run mkplan OUT="$D/out-knobs" -n TIE=0.02
    [ "$(stages <<< "$output" | tr '\n' ,)" = "the choice,report," ]
}

@test "make plan: input files count by their content: a config, its lookups file or OWN_JSON changed to an older file is read again" {
    base_copy "$D/out-in"
    P="$D/out-in/plan-tiny"
    # the same config elsewhere, older: its content is the same, the tables kept
    mkdir -p "$D/m2"
    cp "$D/tiny.json" "$D/m2/tiny.json"
    touch -d '2001-01-01' "$D/m2/tiny.json"
    run mkplan OUT="$D/out-in" MODEL="$D/m2/tiny.json" "$P/ft.ast"
    assert_success
    refute_output --partial "== "
    # another content, older than every file of the run: the tables again
    l0=$(as-show --kind table "$P/pool.ast" | jq 'select(.name == "mid") | .lookups')
    sed -i 's/"pooling_factor": 4}/"pooling_factor": 5}/' "$D/m2/tiny.json"
    touch -d '2001-01-01' "$D/m2/tiny.json"
    run mkplan OUT="$D/out-in" MODEL="$D/m2/tiny.json" "$P/ft.ast"
    assert_success
    assert_output --partial "== tables of $D/m2/tiny.json"
    [ "$(as-show --kind table "$P/pool.ast" | jq 'select(.name == "mid") | .lookups')" != "$l0" ]
    # a lookups file (named relative to its config) swapped for an older one of other lookups:
    # the tables again
    mkdir -p "$D/lk"
    ptwrite metasyn --tables 3 --batch 64 --row-scale 0.001 --seed 5 -o "$D/lk/m.pt"
    ptwrite metasyn --tables 3 --batch 64 --row-scale 0.001 --seed 6 -o "$D/lk/m6.pt"
    touch -d '2001-01-01' "$D/lk/m6.pt"
    printf '{"topology": {"world_size": 2, "batch_size_per_rank": 32}, "tables": [{"name": "x", "num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "m.pt", "table": 2}}, {"name": "y", "num_embeddings": 50, "embedding_dim": 4}]}\n' > "$D/lk/lk.json"
    run mkplan OUT="$D/out-lk" MODEL="$D/lk/lk.json" "$D/out-lk/plan-lk/pool.ast"
    assert_success
    assert_output --partial "== tables of $D/lk/lk.json"
    s0=$(as-show --full --kind table "$D/out-lk/plan-lk/pool.ast" | head -1 | md5sum)
    run mkplan OUT="$D/out-lk" MODEL="$D/lk/lk.json" "$D/out-lk/plan-lk/pool.ast"
    refute_output --partial "== "
    mv "$D/lk/m6.pt" "$D/lk/m.pt"
    run mkplan OUT="$D/out-lk" MODEL="$D/lk/lk.json" "$D/out-lk/plan-lk/pool.ast"
    assert_success
    assert_output --partial "== tables of $D/lk/lk.json"
    [ "$(as-show --full --kind table "$D/out-lk/plan-lk/pool.ast" | head -1 | md5sum)" != "$s0" ]
    # OWN_JSON imported, then swapped for an older file of another plan: imported again
    as-plan -q --export "$P/measured.ast" --task 0 --alg =torchrec --format torchrec "$P/ft.ast" | jq -c '.alg = "torchrec-own"' > "$D/own.json"
    run mkplan OUT="$D/out-in" OWN_JSON="$D/own.json" "$P/own.ast"
    assert_success
    [ "$(as-show -k plan "$P/own.ast" | jq -r .alg)" = torchrec-own ]
    as-plan -q --export "$P/measured.ast" --task 0 --alg =cost-greedy --format torchrec "$P/ft.ast" | jq -c '.alg = "torchrec-own"' > "$D/own2.json"
    touch -d '2001-01-01' "$D/own2.json"
    mv "$D/own2.json" "$D/own.json"
    run mkplan OUT="$D/out-in" OWN_JSON="$D/own.json" "$P/own.ast"
    assert_success
    assert_output --partial "== TorchRec's own planner (its plan from $D/own.json)"
    [ "$(as-show -k plan "$P/own.ast" | jq -c .assign)" = "$(as-show -k plan "$P/measured.ast" | jq -c 'select(.alg == "cost-greedy") | .assign')" ]
}

@test "make plan: the report says what as-bench said of the machine, in bold when it looked loaded; on a loaded machine the measuring threads wait passively" {
    base_copy "$D/out-noise"
    P="$D/out-noise/plan-tiny"
    # measured quiet (the base run): said, with as-bench's lines for each measuring stage
    grep -qF "## How the machine was while measuring" "$P/report.md"
    grep -qF "as-bench did not warn" "$P/report.md"
    grep -qF -- "- the cost dataset: \`as-bench: noise:" "$P/report.md"
    grep -qF -- "- the candidates measured in 2 passes: \`as-bench: drift:" "$P/report.md"
    ! grep -qF "looked loaded" "$P/report.md"
    # the tools, as-bench saying what OpenMP wait policy it was given (its time kept: nothing redone for it)
    mkdir -p "$T/bin"
    for t in "$BIN"/as-*; do ln -s "$t" "$T/bin/"; done
    rm "$T/bin/as-bench"
    printf '#!/bin/sh\necho "${OMP_WAIT_POLICY:-unset}" >> "%s"\nexec "%s" "$@"\n' "$T/omp.log" "$BIN/as-bench" > "$T/bin/as-bench"
    chmod +x "$T/bin/as-bench"
    touch -h -d '2001-01-01' "$T/bin/as-bench"
    run mkplan OUT="$D/out-noise" BIN="$T/bin" -n
    [ -z "$(stages <<< "$output")" ]
    # measured again from the costs on, on a machine as-bench's quiet-machine check finds loaded,
    # the threads told to wait passively: every measuring run is
    FAKE=quiet,calib=noisy,factor=3 run mkplan OUT="$D/out-noise" BIN="$T/bin" BENCH_OMP=passive
    assert_success
    assert_output --partial "== cost dataset"
    grep -qF "**The machine looked loaded while measuring**" "$P/report.md"
    grep -qF -- "- the cost dataset: \`as-bench: warning: quiet-machine check:" "$P/report.md"
    grep -qF -- "- the candidates measured in 2 passes: \`as-bench: warning: quiet-machine check:" "$P/report.md"
    grep -qF "the machine looks loaded" "$P/measured-bench.txt"
    grep -qF "OpenMP wait policy: passive (BENCH_OMP=passive)." "$P/report.md"
    # (the cost dataset's active loop runs as-bench once per round, and to draw its candidates)
    [ "$(sort -u "$T/omp.log")" = passive ] && [ "$(wc -l < "$T/omp.log")" -ge 3 ]
    # auto: passive when other processes keep this run's CPUs busy as the cost dataset begins
    rm "$P/costs.ast" "$T/omp.log"
    hogs=()
    for i in $(seq "$(nproc)"); do yes > /dev/null & hogs+=($!); done
    run mkplan OUT="$D/out-noise" BIN="$T/bin" BENCH_OMP=auto "$P/costs.ast"
    kill "${hogs[@]}"
    assert_success
    assert_output --regexp "OpenMP wait policy: passive \(BENCH_OMP=auto: other processes used [0-9]+ % of the [0-9]+ CPUs this run may use as the cost dataset began, above 25 %"
    [ "$(sort -u "$T/omp.log")" = passive ]
    # default: the library's own (OMP_WAIT_POLICY unset)
    rm "$P/costs.ast" "$T/omp.log"
    run mkplan OUT="$D/out-noise" BIN="$T/bin" BENCH_OMP=default "$P/costs.ast"
    assert_success
    [ "$(sort -u "$T/omp.log")" = unset ]
    run mkplan OUT="$D/out-noise" BENCH_OMP=spin
    assert_failure
    assert_output --partial "make plan: BENCH_OMP=spin is not auto, passive, active or default"
}

@test "make plan: a cost dataset without a reference level does not wedge the run: the later measurements keep their own levels, said" {
    base_copy "$D/out-ref"
    P="$D/out-ref/plan-tiny"
    rm "$P/costs.ast"
    # every shard noisy, the reference shard too (2 runs kept: a spread): no reference level
    opts=(NCOST=5 "BENCH_OPTS=--warmup 1 --runs 4 --trim 1 --flush 8M")
    FAKE=always,factor=3 run mkplan OUT="$D/out-ref" "${opts[@]}" "$P/first.ast"
    assert_success
    assert_output --partial "make plan: the cost dataset has no reference level (its reference shard never measured quiet"
    as-show -k cost "$P/costs.ast" | jq -e -s 'all(.reference.level_ms | not)'
    [ -e "$P/costs-ref.txt" ] && [ ! -s "$P/costs-ref.txt" ]
    [ -s "$P/first.ast" ]
    [ -z "$(compgen -G "$P/*.tmp*")" ]
    [ -z "$(compgen -G "$P/*.rc")" ]
    # the report says so
    run mkplan OUT="$D/out-ref" "${opts[@]}" "$P/report.md"
    assert_success
    grep -q "^\*\*The cost dataset has no reference level\*\*" "$P/report.md"
    # measured again on a quiet machine: the later measurements are corrected to its level
    rm "$P/costs.ast"
    run mkplan OUT="$D/out-ref" "${opts[@]}" "$P/first.ast"
    assert_success
    refute_output --partial "has no reference level"
    as-show -k cost "$P/costs.ast" | jq -e -s 'any(.reference.level_ms > 0)'
    grep -qx -- "--reference-level $P/costs.ast" "$P/costs-ref.txt"
    [ -s "$P/first.ast" ]
}

@test "make plan OWN_JSON=: a plan labelled as one of our planners' is refused at the door, the imported plan before it kept" {
    base_copy "$D/out-own"
    P="$D/out-own/plan-tiny"
    sum0=$(md5sum < "$P/own.ast")
    for label in cost-greedy torchrec cost-greedy+split+refine; do
        as-plan -q --export "$P/measured.ast" --task 0 --alg =torchrec --format torchrec "$P/ft.ast" | jq -c --arg l "$label" '.alg = $l' > "$D/own-$label.json"
        run mkplan OUT="$D/out-own" OWN_JSON="$D/own-$label.json"
        assert_failure
        assert_output --partial "make plan: OWN_JSON $D/own-$label.json: its plan is labelled $label, as our planner ${label%%+*} labels its own plans"
        refute_output --partial "== plans"
        [ "$(md5sum < "$P/own.ast")" = "$sum0" ]
        [ -z "$(compgen -G "$P/*.tmp*")" ]
    done
}

@test "make plan: an OUT with a space or a quote is refused before anything is made; a MODEL with them works" {
    for out in "$D/my out" "$D/it's" "$D/say\"x\""; do
        run mkplan OUT="$out"
        assert_failure
        assert_output --partial "make plan: OUT must not contain spaces, quotes or characters other than letters, digits and /._+,=@~- (make and the shell split file names there): $out"
        [ ! -e "$out" ]
    done
    [ -z "$(compgen -G "$D/my*")" ] && [ -z "$(compgen -G "$D/it*")" ] && [ -z "$(compgen -G "$D/say*")" ]
    # a config whose path has spaces and quotes: planned, its run directory named with _ for them
    mkdir -p "$D/my models"
    M="$D/my models/it's \"tiny\".json"
    cp "$D/tiny.json" "$M"
    run mkplan OUT="$D/out-sp" MODEL="$M" SPLIT_ALGS= REPLICATE_ALGS= ALGS=cost-greedy,lookup-greedy,torchrec
    assert_success
    P="$D/out-sp/plan-it_s__tiny_"
    [ -s "$P/plan.json" ]
    grep -qF "Model config: $M; device: cpu" "$P/report.md"
    assert_output --partial "== tables of $M"
    [ "$(ls "$D/out-sp")" = "plan-it_s__tiny_" ]
    run mkplan OUT="$D/out-sp" MODEL="$M" SPLIT_ALGS= REPLICATE_ALGS= ALGS=cost-greedy,lookup-greedy,torchrec
    assert_success
    refute_output --partial "== "
}
