#!/usr/bin/env bats
# Every plan our planners make is one TorchRec loads (issue 51): TorchRec's sharding forms are
# the search's moves (row_wise: K blocks, block i on rank i, pinned; column pieces on any
# ranks), on the Kaggle DLRM, DLRM-DCNv2 and the demo's synthetic tasks, with the cost models
# measured on an H100 and an H200 that the repository keeps (pipelines/data/).
load test_helper/common

setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    local R="$BATS_TEST_DIRNAME/.." m
    for m in dlrm-criteo-kaggle dlrm-dcnv2-criteo1tb; do
        # the config's tables at a small batch; row pieces of 2 and 4 blocks, and the task's
        # 8 (TorchRec's row_wise) cut by --model-task without being listed
        as-convert --config "$R/pipelines/models/$m.json" --batch 256 -q | as-features --model-task --row-pieces 2,4 -q -o "$D/$m.ast"
    done
    as-convert --synth --preset small --seed 0 -q -o "$D/pool.ast"
    as-features "$D/pool.ast" --row-pieces 2,4,8 --tasks 6 --test-tasks 3 --task-tables 80 --seed 0 -q -o "$D/demo.ast"
    cat "$D/demo.ast" "$R/pipelines/data/h200-demo/costs-s0.ast" | as-costfit --seed 0 -q -o "$D/demo-model.ast"
}

# the plans of FEATURES under MODEL with the comm options: every planner split, replicated and
# refined, TorchRec's plan refined; then each exported and checked by torchrec_plan.py
plans_of() {
    local ft=$1 model=$2
    shift 2
    as-plan -q --alg all --model "$model" --split-tables --refine --replicate --split test "$@" "$ft" -o "$T/p1.ast"
    as-plan -q --alg all --model "$model" --split-tables --refine --split test "$@" "$ft" -o "$T/p2.ast"
    as-plan -q --alg torchrec --model "$model" --refine --split test "$@" "$ft" -o "$T/p3.ast"
    cat "$T/p1.ast" "$T/p2.ast" "$T/p3.ast" > "$T/plans.ast"
}

check_loadable() {
    local ft=$1
    shift
    as-plan -q --export "$T/plans.ast" --format torchrec "$ft" > "$T/plans.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$@" "$T/plans.json"
    assert_success
    refute_output --partial "cannot go through"
    # as many plans checked as made, and some of them split a table row_wise
    [ "$(grep -c '^task ' <<< "$output")" -eq "$(as-show --no-header -k plan "$T/plans.ast" | wc -l)" ]
    grep -q ' row_wise, ' <<< "$output" || grep -q '[1-9][0-9]* row_wise' <<< "$output"
}

@test "every plan of --split-tables --refine --replicate on the Kaggle DLRM and DLRM-DCNv2 loads in TorchRec (600 GiB/s and nvlink8)" {
    D="$BATS_FILE_TMPDIR"
    local m
    for m in dlrm-criteo-kaggle:kaggle-run2 dlrm-dcnv2-criteo1tb:dcnv2-run1; do
        local cfg=${m%%:*} run=${m##*:}
        for comm in "--comm-gbps 600" "--comm-model nvlink8"; do
            # shellcheck disable=SC2086
            plans_of "$D/$cfg.ast" "$ROOT/pipelines/data/h100-make-plan/$run/model.ast" $comm
            check_loadable "$D/$cfg.ast" --config "$ROOT/pipelines/models/$cfg.json"
        done
    done
}

@test "every plan of --split-tables --refine --replicate on the demo's test tasks loads in TorchRec" {
    D="$BATS_FILE_TMPDIR"
    plans_of "$D/demo.ast" "$D/demo-model.ast" --comm-gbps 600
    check_loadable "$D/demo.ast"
    # the learned policy keeps the row_wise blocks on their ranks too
    as-rl -q --model "$D/demo-model.ast" --seed 3 --episodes 8 "$D/demo.ast" -o "$D/pol.ast"
    as-plan -q --alg autoshard --policy "$D/pol.ast" --model "$D/demo-model.ast" --split-tables --refine --split test \
        "$D/demo.ast" -o "$T/plans.ast"
    as-plan -q --export "$T/plans.ast" --format torchrec "$D/demo.ast" > "$T/plans.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$T/plans.json"
    assert_success
}

@test "row blocks placed freely only by --split-rows N, said on stderr; TorchRec refuses such plans" {
    D="$BATS_FILE_TMPDIR"
    local ft="$D/dlrm-dcnv2-criteo1tb.ast" model="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast"
    run as-plan --alg cost-greedy --model "$model" --split-tables --split-rows 2,4 --split-seed none "$ft" -o "$T/free.ast"
    assert_success
    assert_output --partial "make plans TorchRec cannot load"
    as-plan -q --export "$T/free.ast" --format torchrec "$ft" > "$T/free.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/free.json"
    assert_failure
    assert_output --partial "block i on rank i"
    # the default (row_wise) and none say nothing of it
    run as-plan --alg cost-greedy --model "$model" --split-tables --split-rows none "$ft" -o "$T/none.ast"
    assert_success
    refute_output --partial "cannot load"
    run as-plan --alg cost-greedy --model "$model" --split-tables --split-rows bad "$ft"
    assert_failure 2
    assert_output --partial "--split-rows: 'bad' is not row_wise, none or a block count"
    run as-plan --alg cost-greedy --model "$model" --split-tables --split-seed maybe "$ft"
    assert_failure 2
    assert_output --partial "--split-seed: 'maybe' is not auto, torchrec or none"
}

# the narrowest column piece of the plans in FILE (every DLRM-DCNv2 table is 128 wide)
narrowest_cols() {
    as-show --no-header -k plan "$1" | python3 -c 'import json, sys
w = [p[1] - p[0] for l in sys.stdin for p in (json.loads(l).get("pieces") or []) if p and p[1] - p[0] < 128]
print(min(w) if w else 128)'
}

@test "--split-cols N: column splits of at most N pieces; make plan and the demo give the most the cost dataset draws" {
    D="$BATS_FILE_TMPDIR"
    local ft="$D/dlrm-dcnv2-criteo1tb.ast" model="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" n
    # unbounded, this model splits a table in more than 2 pieces (pieces narrower than 64)
    as-plan -q --alg cost-greedy,lookup-greedy --model "$model" --split-tables --split-rows none --split-ms 0 "$ft" -o "$T/all.ast"
    [ "$(narrowest_cols "$T/all.ast")" -lt 64 ]
    for n in 2 4; do
        as-plan -q --alg cost-greedy,lookup-greedy --model "$model" --split-tables --split-rows none --split-ms 0 \
            --split-cols "$n" "$ft" -o "$T/c$n.ast"
        [ "$(narrowest_cols "$T/c$n.ast")" -ge $((128 / n)) ]
    done
    # 0 is the default: as the dims allow
    as-plan -q --alg cost-greedy,lookup-greedy --model "$model" --split-tables --split-rows none --split-ms 0 \
        --split-cols 0 "$ft" -o "$T/c0.ast"
    cmp <(as-show --no-header -k plan "$T/all.ast" | sed 's/"plan_ms":[0-9.e+-]*//') \
        <(as-show --no-header -k plan "$T/c0.ast" | sed 's/"plan_ms":[0-9.e+-]*//')
    run as-plan --alg cost-greedy --model "$model" --split-tables --split-cols 65 "$ft"
    assert_failure 2
    assert_output --partial "--split-cols"
    # make plan passes the most column pieces its cost dataset draws (halves and quarters:
    # 4) when it draws pieces, else 0
    as-convert --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" --batch 16 -q -o "$T/pool.ast"
    as-bench --tables "$T/pool.ast" --sample 300 --max-tables 4 --sample-pieces 1 --draw-only -q -o "$T/drawn.ast"
    local widest
    widest=$(as-show --no-header "$T/drawn.ast" | python3 -c 'import json, sys
w = [p[1] - p[0] for l in sys.stdin for p in (json.loads(l).get("pieces") or []) if p and p[1] - p[0] < 128]
print(128 // min(w))')
    printf 'include pipelines/plan.mk\nshow-cols: ; @echo "cols=$(SPLIT_COLS)"\n' > "$T/show.mk"
    run make -s -C "$ROOT" -f "$T/show.mk" show-cols MODEL=pipelines/models/dlrm-criteo-kaggle.json OUT="$T/o"
    assert_output --partial "cols=$widest"
    run make -s -C "$ROOT" -f "$T/show.mk" show-cols MODEL=pipelines/models/dlrm-criteo-kaggle.json OUT="$T/o" SAMPLE_PIECES=0
    assert_output --partial "cols=0"
    printf 'include pipelines/demo.mk\nshow-cols: ; @echo "cols=$(SPLIT_COLS)"\n' > "$T/showd.mk"
    run make -s -C "$ROOT" -f "$T/showd.mk" show-cols
    assert_output --partial "cols=$widest"
}

@test "a plan's slowest rank with communication is the same number in as-plan and as-eval" {
    D="$BATS_FILE_TMPDIR"
    local ft="$D/dlrm-dcnv2-criteo1tb.ast" model="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" comm
    for comm in "--comm-gbps 600" "--comm-model nvlink8"; do
        # shellcheck disable=SC2086
        as-plan -q --alg lookup-greedy,cost-greedy --model "$model" --split-tables --refine $comm "$ft" -o "$T/p.ast"
        # shellcheck disable=SC2086
        as-plan -q --alg lookup-greedy,cost-greedy --model "$model" --split-tables --refine $comm --format text "$ft" |
            sed -n 's/.*predicted with communication .*: slowest shard [0-9]* \([0-9.]*\) ms.*/\1/p' > "$T/plan.txt"
        # shellcheck disable=SC2086
        as-eval --model "$model" $comm --format csv --table plans "$T/p.ast" 2> /dev/null |
            python3 -c 'import csv, sys; [print("%.4f" % float(r["max_ms"])) for r in csv.DictReader(sys.stdin)]' > "$T/eval.txt"
        [ "$(wc -l < "$T/plan.txt")" -eq 2 ]
        diff "$T/plan.txt" "$T/eval.txt"
    done
}
