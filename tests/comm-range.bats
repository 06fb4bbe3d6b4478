#!/usr/bin/env bats
# Communication a user can trust (issue 52): their cluster's own collectives from nccl-tests'
# output (--comm-model nccl:FILE,...; the published runs of tests/fixtures/nccl, SOURCES.md),
# hosts of 8 H100 (h100-ib) and TorchRec's own estimate (torchrec), hostile nccl-tests files,
# and how far a choice holds as the communication's cost changes (as-eval --table range),
# checked by planning on both sides of the crossing it names.
load test_helper/common
load test_helper/tinyplan

setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    local R="$BATS_TEST_DIRNAME/.."
    as-convert --config "$R/pipelines/models/dlrm-dcnv2-criteo1tb.json" -q | as-features --model-task --row-pieces 2,4 -q -o "$D/ft.ast"
    as-plan -q --model "$R/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" \
        --import "$R/pipelines/data/h100-make-plan/dcnv2-torchrec-own.json" --plans-only "$D/ft.ast" -o "$D/own.ast"
    # the published 8-rank run of each collective, and the same 16 times slower (every time
    # x 16, every bandwidth / 16: a slower fabric, derived here from the published files)
    local c
    for c in alltoall reduce_scatter all_gather all_reduce; do
        python3 - "$R/tests/fixtures/nccl/h100x8-$c.txt" "$D/slow16-$c.txt" <<'PY'
import sys
out = []
for line in open(sys.argv[1]):
    t = line.split()
    if len(t) == 13 and t[0].isdigit():
        for b in (5, 9):
            t[b], t[b + 1], t[b + 2] = "%.2f" % (float(t[b]) * 16), "%.4f" % (float(t[b + 1]) / 16), "%.4f" % (float(t[b + 2]) / 16)
        line = "  ".join(t) + "\n"
    out.append(line)
open(sys.argv[2], "w").write("".join(out))
PY
    done
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

fix() {
    echo "$ROOT/tests/fixtures/nccl/$1"
}

published8() {
    echo "nccl:$(fix h100x8-alltoall.txt),$(fix h100x8-reduce_scatter.txt),$(fix h100x8-all_gather.txt),$(fix h100x8-all_reduce.txt)"
}

slow8() {
    echo "nccl:$D/slow16-alltoall.txt,$D/slow16-reduce_scatter.txt,$D/slow16-all_gather.txt,$D/slow16-all_reduce.txt"
}

# DLRM-DCNv2's candidates as make plan makes them (table-wise, split and refined, TorchRec's
# planner refined, TorchRec's own plan), planned under the model $1; into $T/all.ast with the
# features
plan_dcnv2() {
    local M="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast"
    as-plan -q --alg all,torchrec --model "$M" --plans-only "$D/ft.ast" -o "$T/t.ast"
    # no time budget: the same plans on any machine
    as-plan -q --alg cost-greedy,lookup-greedy,size-lookup-greedy --model "$M" --split-tables --refine --comm-model "$1" \
        --split-ms 0 --refine-ms 0 --plans-only "$D/ft.ast" -o "$T/s.ast"
    as-plan -q --alg torchrec --model "$M" --refine --comm-model "$1" --refine-ms 0 --plans-only "$D/ft.ast" -o "$T/tr.ast"
    cat "$D/ft.ast" "$T/t.ast" "$T/s.ast" "$T/tr.ast" "$D/own.ast" > "$T/all.ast"
}

# the winner under model $1 (as-eval --table range's choice at 1x), and its row pieces' count
winner() {
    as-eval --model "$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" --comm-model "$1" --format csv --table range \
        "$T/all.ast" | awk -F, '$3 == "chosen" { print $7 }'
}
row_pieces() {
    as-show -k plan "$T/all.ast" | jq -r --arg a "$1" 'select(.alg == $a) | [(.comm_rw_bytes // [])[] | select(. > 0)] | length'
}
# the shards holding pieces (row or column) of the plan labelled $1
pieces() {
    as-show -k plan "$T/all.ast" | jq -r --arg a "$1" 'select(.alg == $a) | [((.comm_rw_bytes // []) + (.comm_cw_bytes // []))[] | select(. > 0)] | length'
}

@test "nccl: a slower fabric turns the choice from a row-wise plan to a table-wise one, at the crossing the range names (within 10 %)" {
    # the published H100 runs: the fastest plan splits tables row-wise
    plan_dcnv2 "$(published8)"
    w=$(winner "$(published8)")
    [ "$(row_pieces "$w")" -gt 0 ]
    # 16 times slower: a table-wise plan (no piece) wins
    plan_dcnv2 "$(slow8)"
    w=$(winner "$(slow8)")
    [[ "$w" != *"+split"* && "$w" != torchrec* ]]
    [ "$(row_pieces "$w")" -eq 0 ]
    # the range under the slower model: the segment where the table-wise choice ends and a
    # split plan begins, along every collective's bandwidth
    as-eval --model "$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" --comm-model "$(slow8)" --format csv \
        --table range "$T/all.ast" > "$T/range.csv"
    x=$(awk -F, -v w="$w" '$3 == "segment" && $4 == "bw" && $7 == w { print $6 }' "$T/range.csv" | head -1)
    [ -n "$x" ]
    python3 -c "import sys; x = float(sys.argv[1]); sys.exit(0 if 1 < x < 16 else 1)" "$x"
    # the same in words, with the all-to-all's bandwidth at the crossing
    run as-eval --model "$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" --comm-model "$(slow8)" --table range "$T/all.ast"
    assert_success
    assert_output --partial "every collective's bandwidth (x the model's; in brackets the all-to-all's, GB/s busbw"
    assert_output --partial "$w from "
    # planning on both sides of it (every candidate planned again under the model scaled):
    # 10 % below, the table-wise plan still wins; 10 % above, a split plan does
    below=$(python3 -c "print('%.4g' % (float('$x') * 0.9))")
    above=$(python3 -c "print('%.4g' % (float('$x') * 1.1))")
    plan_dcnv2 "$(slow8)@bw=$below"
    wb=$(winner "$(slow8)@bw=$below")
    [ "$(pieces "$wb")" -eq 0 ]
    plan_dcnv2 "$(slow8)@bw=$above"
    wa=$(winner "$(slow8)@bw=$above")
    [ "$(pieces "$wa")" -gt 0 ]
}

@test "nccl: the published runs charge plans; hostile nccl-tests files exit 1 naming the file and line, nothing planned" {
    local M="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast"
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "$(published8)" --plans-only "$D/ft.ast" -o "$T/p.ast"
    assert_success
    [ "$(as-show -k plan "$T/p.ast" | jq -r .comm_model)" = "$(published8 | sed -e 's|nccl:|nccl:a2a=|' -e 's|,\([^,]*reduce_scatter\)|,rs=\1|' -e 's|,\([^,]*all_gather\)|,ag=\1|' -e 's|,\([^,]*all_reduce\)|,ar=\1|')" ]
    # measured on 8 ranks: a plan of 16 is refused
    as-convert --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" -q | as-features --model-task --shards 16 -q -o "$T/ft16.ast"
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "$(published8)" --plans-only "$T/ft16.ast"
    assert_failure
    assert_output --partial "was measured on 8 ranks, not the plan's 16"
    # hostile: cut in a line, cut before the trailer, a column missing, a failed run
    A=$(fix h100x8-alltoall.txt)
    head -c 2000 "$A" > "$T/cut-line.txt"
    grep -v "Avg bus bandwidth" "$A" > "$T/cut-tail.txt"
    sed -e '0,/ double /s/ double    none/ none/' "$A" > "$T/columns.txt"
    sed -e '0,/       0   /s/       0   / 17   /' "$A" > "$T/wrong.txt"
    for f in cut-line cut-tail columns wrong; do
        rm -f "$T/out.ast"
        run as-plan -q --alg cost-greedy --model "$M" --split-tables \
            --comm-model "nccl:a2a=$T/$f.txt,$(fix h100x8-reduce_scatter.txt)" --plans-only "$D/ft.ast" -o "$T/out.ast"
        assert_failure 1
        [ "${#lines[@]}" -eq 1 ]
        assert_output --partial "--comm-model: $T/$f.txt"
        [ ! -e "$T/out.ast" ]
        run as-eval --comm-model "nccl:a2a=$T/$f.txt,$(fix h100x8-reduce_scatter.txt)" "$T/p.ast"
        assert_failure 1
    done
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "nccl:$T/cut-line.txt" "$D/ft.ast"
    assert_output --regexp "cut-line.txt:[0-9]+: "
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "nccl:a2a=$T/wrong.txt,$(fix h100x8-all_reduce.txt)" "$D/ft.ast"
    assert_output --regexp "wrong.txt:[0-9]+: #wrong = 17 in the out-of-place run"
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "nccl:a2a=$T/cut-tail.txt,$(fix h100x8-all_reduce.txt)" "$D/ft.ast"
    assert_output --partial "cut-tail.txt: no trailer"
    # the all-to-all alone, or a file named for another collective than its content's
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "nccl:$A" "$D/ft.ast"
    assert_failure 2
    assert_output --partial "give alltoall_perf's output and one of reduce_scatter_perf"
    run as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model "nccl:ar=$A,$(fix h100x8-all_reduce.txt)" "$D/ft.ast"
    assert_failure 1
    assert_output --partial "it is alltoall_perf's output, given as ar"
}

@test "h100-ib and torchrec: DLRM-DCNv2 on 2 and 8 hosts of 8, every plan loadable; the choice against TorchRec's own under each model" {
    local M="$ROOT/pipelines/data/h100-make-plan/dcnv2-run1/model.ast" K
    for K in 16 64; do
        as-convert --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" -q | as-features --model-task --shards "$K" -q -o "$T/ft.ast"
        as-plan -q --alg all,torchrec --model "$M" --plans-only "$T/ft.ast" -o "$T/t.ast"
        as-plan -q --alg cost-greedy,lookup-greedy --model "$M" --split-tables --refine --comm-model h100-ib --plans-only "$T/ft.ast" -o "$T/s.ast"
        cat "$T/t.ast" "$T/s.ast" > "$T/plans.ast"
        as-plan -q --export "$T/plans.ast" --format torchrec "$T/ft.ast" > "$T/plans.json"
        run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/plans.json"
        assert_success
        for m in h100-ib torchrec:8 "1/1,1/1,1/1"; do
            run bash -c 'cat "$1" "$2" | as-eval --model "$3" --comm-model "$4" --format csv --table range,comm --chosen cost-greedy+split+refine' _ "$T/ft.ast" "$T/plans.ast" "$M" "$m"
            assert_success
            assert_line --partial ",chosen,,,,cost-greedy+split+refine,1"
        done
    done
    # the converter: table_row_wise is L blocks on one host's ranks, with hosts
    run python3 - "$ROOT/pipelines" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import torchrec_plan as tp
ps = {"sharding_type": "table_row_wise", "ranks": [8, 9, 10, 11, 12, 13, 14, 15],
      "shards": [{"shard_offsets": [2 * i, 0], "shard_sizes": [2, 4]} for i in range(8)]}
assert tp._expressible("m", "t", ps, 32, (16, 4), 8) == ("table_row_wise", {"host_index": 1})
for ranks, world in (([8, 9, 10, 11, 12, 13, 14, 16], 32), ([0, 1, 2, 3, 4, 5, 6, 7], 8)):
    try:
        tp._expressible("m", "t", dict(ps, ranks=ranks), world, (16, 4), 8)
        sys.exit("accepted %s on %d" % (ranks, world))
    except ValueError as e:
        print(e)
PY
    assert_success
    assert_output --partial "table_row_wise places 8 blocks of 2 rows on one host's ranks"
    assert_output --partial "table_row_wise needs hosts"
    # TorchRec's own plan of 64 ranks imports as it is: its table_row_wise blocks of a 3-row
    # table (t_cat_5) are row_wise's blocks too, on another host's ranks (56-58), kept there
    as-convert --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" -q | as-features --model-task --shards 64 --row-pieces 2,4,8 -q -o "$T/ft64.ast"
    as-plan -q --model "$M" --import "$ROOT/pipelines/data/h100-make-plan/dcnv2-torchrec-own-64.json" --plans-only "$T/ft64.ast" -o "$T/own64.ast"
    [ "$(as-show -k plan "$T/own64.ast" | jq -c '[.tables as $t | .assign | to_entries[] | select($t[.key] == 5) | .value]')" = "[56,57,58]" ]
    # at 64 ranks under h100-ib the split search moves tables table_row_wise (L blocks on one
    # host), exported as TorchRec's table_row_wise and loaded; no slower than TorchRec's own
    as-plan -q --alg cost-greedy --model "$M" --split-tables --comm-model h100-ib --plans-only "$T/ft64.ast" -o "$T/tw.ast"
    as-plan -q --alg cost-greedy,lookup-greedy --model "$M" --split-tables --refine --replicate --comm-model h100-ib --plans-only \
        "$T/ft64.ast" -o "$T/twr.ast"
    as-plan -q --export "$T/twr.ast" --format torchrec "$T/ft64.ast" > "$T/twr.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/twr.json"
    assert_success
    as-plan -q --export "$T/tw.ast" --format torchrec "$T/ft64.ast" > "$T/tw.json"
    grep -q '"sharding_type":"table_row_wise"' "$T/tw.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/tw.json"
    assert_success
    assert_output --partial "table_row_wise"
    as-plan -q --model "$M" --import "$ROOT/pipelines/data/h100-make-plan/dcnv2-torchrec-own-64.json" --plans-only "$T/ft64.ast" -o "$T/own.ast"
    cat "$T/ft64.ast" "$T/tw.ast" "$T/own.ast" | as-eval --model "$M" --comm-model h100-ib --format csv --table plans > "$T/p.csv"
    python3 - "$T/p.csv" <<'PY'
import csv, sys
r = {x["alg"]: float(x["max_ms"]) for x in csv.DictReader(open(sys.argv[1]))}
sys.exit(0 if r["cost-greedy+split"] <= r["torchrec-own"] * 1.0001 else 1)
PY
    # TorchRec's own plans export as table_row_wise and load; one moved to other ranks does not
    as-plan -q --export "$T/own.ast" --format torchrec "$T/ft64.ast" > "$T/own.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/own.json"
    assert_success
    sed -e 's/"ranks":\[8,9,10,11,12,13,14,15\]/"ranks":[9,8,10,11,12,13,14,15]/' "$T/own.json" > "$T/bad.json"
    ! cmp -s "$T/own.json" "$T/bad.json"
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/bad.json"
    assert_failure
    assert_output --partial "cannot go through construct_module_sharding_plan"
    # nvlink8 is one host: refused for 16 ranks, named
    run bash -c 'cat "$1" "$2" | as-eval --model "$3" --comm-model nvlink8' _ "$T/ft.ast" "$T/plans.ast" "$M"
    assert_failure 1
    assert_output --partial "holds for one host of at most 8 GPUs, not 64 ranks"
}

@test "make plan COMM=nccl:...: plans with the cluster's tables, the report says how far the choice holds; new tables redo the plans" {
    D="$BATS_TEST_TMPDIR"
    tiny_config
    local nc
    nc=$(published8)
    run mkplan SHARDS=8 COMM="$nc"
    assert_success
    P="$D/out/plan-tiny"
    grep -qF "## How far the choice holds" "$P/report.md"
    grep -qF "**How far the choice holds**, task 0 (run 0), the choice \`$(cat "$P/chosen.txt")\`" "$P/report.md"
    grep -qF "### How far the choice holds" "$P/report.md"
    grep -qF "the cluster's nccl-tests tables: each call its measured time at its message" "$P/report.md"
    [ "$(as-show -k plan "$P/plans.ast" | jq -r 'select(.alg == "cost-greedy+split") | .comm_model')" = "nccl:a2a=$(fix h100x8-alltoall.txt),rs=$(fix h100x8-reduce_scatter.txt),ag=$(fix h100x8-all_gather.txt),ar=$(fix h100x8-all_reduce.txt)" ]
    # the tables' files by their content: the same names with other times redo the plans
    mkdir -p "$T/c"
    for c in alltoall reduce_scatter all_gather all_reduce; do cp "$(fix "h100x8-$c.txt")" "$T/c/h100x8-$c.txt"; done
    local local8="nccl:$T/c/h100x8-alltoall.txt,$T/c/h100x8-reduce_scatter.txt,$T/c/h100x8-all_gather.txt,$T/c/h100x8-all_reduce.txt"
    run mkplan SHARDS=8 COMM="$local8"
    assert_success
    cp "$T/c/h100x8-alltoall.txt" "$T/a2a.keep"
    cp "$BATS_FILE_TMPDIR/slow16-alltoall.txt" "$T/c/h100x8-alltoall.txt"
    run mkplan SHARDS=8 COMM="$local8"
    assert_success
    assert_output --partial "== plans:"
    # a file cut short: refused before anything is measured, naming the file and line
    head -c 1800 "$T/a2a.keep" > "$T/c/h100x8-alltoall.txt"
    rm -rf "$D/out2"
    run mkplan SHARDS=8 OUT="$D/out2" COMM="$local8"
    assert_failure
    assert_output --partial "make plan: COMM: as-eval: --comm-model: $T/c/h100x8-alltoall.txt:"
    [ ! -e "$D/out2/plan-tiny/costs.ast" ]
}
