#!/usr/bin/env bats
# as-plan --import: TorchRec plans (as-plan --format torchrec JSON lines) read back into
# `plan` records: export -> import round trips of --alg torchrec plans (row-wise pieces),
# --split-tables plans and a model config's plans; the derived fields; every error on
# hand-made hostile documents; the command line.
load test_helper/common

# once per file: a small synthetic pool, 3 tasks of 8 tables on 4 shards with the features
# of 2 and 4 row blocks, a cost model, and the plans to export
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --tables 12 --batch 64 --row-scale 0.001 --seed 1 -o "$D/pool.ast"
    as-features "$D/pool.ast" --row-pieces 2,4 --tasks 3 --task-tables 8 --shards 4 --seed 0 -o "$D/ft.ast"
    as-bench --tables "$D/pool.ast" --sample 20 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 \
        --trim 1 --flush 8M --threads 1 -q -o "$D/c.ast"
    cat "$D/ft.ast" "$D/c.ast" | as-costfit --seed 0 -q -o "$D/m.ast"
    # TorchRec's planner (row_wise pieces) and every heuristic, split
    as-plan --alg torchrec --no-dp --model "$D/m.ast" --plans-only -q "$D/ft.ast" -o "$D/tr.ast"
    as-plan --alg all --model "$D/m.ast" --split-tables --split-ms 0 --plans-only -q "$D/ft.ast" -o "$D/sp.ast"
    as-plan --export "$D/tr.ast" --format torchrec -q "$D/ft.ast" > "$D/tr.json"
    as-plan --export "$D/sp.ast" --format torchrec -q "$D/ft.ast" > "$D/sp.json"
    head -1 "$D/tr.json" > "$D/one.json"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

# a plan stream's records without the planning time (the import's is 0) and the quality of
# the model that placed it (an imported plan was placed elsewhere); the predicted costs apart
# (same_preds)
fields() {
    as-show --no-header -k plan --full "$1" | jq -c 'del(.plan_ms, .options.plan_ms, .model_quality, .pred_ms, .item_pred_ms)'
}
# two streams' plans predict the same shard and item costs, to float rounding: a cost is
# predicted by the model over a batch of shards, and how BLAS rounds depends on the batch and
# on its kernel family (OPENBLAS_CORETYPE), so a re-prediction may differ in the last bits
same_preds() {
    python3 -c '
import json, sys
a, b = ([r.get(k) for r in map(json.loads, open(f)) for k in ("pred_ms", "item_pred_ms")] for f in sys.argv[1:3])
assert len(a) == len(b), (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    assert (x is None) == (y is None) and (x is None or len(x) == len(y)), (i, x, y)
    for u, v in zip(x or [], y or []):
        assert abs(u - v) <= 1e-6 * max(abs(u), abs(v)), (i, x, y)
' <(as-show --no-header -k plan --full "$1") <(as-show --no-header -k plan --full "$2")
}
# a plan's placement: its (table, piece, shard) entries, sorted
entries() {
    as-show --no-header -k plan --full "$1" |
        jq -c '{task, alg, e: ([.tables, (.pieces // [range(.tables | length) | null]), .assign] | transpose | sort)}'
}

@test "as-plan --import: --help, usage errors" {
    run as-plan --help
    assert_success
    assert_output --partial "--import FILE"
    assert_output --partial "torchrec-import"
    run as-plan --import "$D/one.json" --alg all "$D/ft.ast"
    assert_failure 2
    assert_output --partial "no --alg planner runs with it"
    run as-plan --import "$D/one.json" --export "$D/tr.ast" --format torchrec "$D/ft.ast"
    assert_failure 2
    run as-plan --import "$D/one.json" --split-tables --model "$D/m.ast" "$D/ft.ast"
    assert_failure 2
    run as-plan --import "" "$D/ft.ast"
    assert_failure 2
    run as-plan --import "$T/none.json" "$D/ft.ast"
    assert_failure 1
    assert_output --partial "none.json"
    # - : standard input, when the input stream is a named file
    run sh -c "as-plan --import - --plans-only -q '$D/ft.ast' < '$D/one.json' | as-show -c -k plan"
    assert_output "plan	1"
    run sh -c "as-plan --import - < '$D/one.json'"
    assert_failure 2
    assert_output --partial "--import -: standard input is the input stream already"
}

@test "round trip: --alg torchrec plans (row_wise pieces) export and import to the same plans" {
    # the export holds row_wise tables
    run sh -c "jq -r '.plan[\"\"][].sharding_type' '$D/tr.json' | sort -u | tr '\n' ' '"
    assert_output --partial "row_wise"
    as-plan --import "$D/tr.json" --model "$D/m.ast" --plans-only "$D/ft.ast" -o "$T/imp.ast" 2> "$T/err"
    grep -qx "as-plan: --import: 3 TorchRec plans imported" "$T/err"
    # every field as the planner wrote it: assign, pieces, counts, memory, communication,
    # pred_ms, item_pred_ms, names, cap, options, split
    diff <(fields "$D/tr.ast") <(fields "$T/imp.ast")
    same_preds "$D/tr.ast" "$T/imp.ast"
    run sh -c "as-show --no-header -k plan '$T/imp.ast' | jq -c '.pieces | map(select(. != null)) | length'"
    refute_line 0
    # and imported plans export to the same JSON again
    as-plan --import "$D/tr.json" --format torchrec -q "$D/ft.ast" | cmp - "$D/tr.json"
}

@test "round trip: --split-tables plans export and import to the same placements and pieces" {
    as-plan --import "$D/sp.json" --model "$D/m.ast" --plans-only -q "$D/ft.ast" -o "$T/imp.ast"
    diff <(entries "$D/sp.ast") <(entries "$T/imp.ast")
    [ "$(entries "$T/imp.ast" | wc -l)" -eq 18 ]
    # the same derived fields (a split label keeps the split search's communication charge)
    diff <(fields "$D/sp.ast") <(fields "$T/imp.ast")
    same_preds "$D/sp.ast" "$T/imp.ast"
    as-plan --import "$D/sp.json" --format torchrec -q "$D/ft.ast" | cmp - "$D/sp.json"
}

@test "round trip: a model config's plans (names, TorchRec memory terms) and its split plans" {
    as-convert --config "$ROOT/pipelines/models/dlrm-criteo-kaggle.json" | as-features --model-task --row-pieces 8 -o "$T/mf.ast"
    as-plan --alg all,torchrec --plans-only -q "$T/mf.ast" -o "$T/p.ast"
    as-plan --alg torchrec,lookup-greedy --model "$D/m.ast" --split-tables --split-ms 0 --plans-only -q "$T/mf.ast" -o "$T/s.ast"
    for x in p s; do
        as-plan --export "$T/$x.ast" --format torchrec -q "$T/mf.ast" > "$T/$x.json"
        as-plan --import "$T/$x.json" --plans-only -q "$T/mf.ast" -o "$T/$x.imp.ast"
        diff <(entries "$T/$x.ast") <(entries "$T/$x.imp.ast")
    done
    # tables by name, the module path, TorchRec's memory terms
    jq -e '.plan | keys == ["model.sparse_arch.embedding_bag_collection"]' "$T/p.json" | head -1 | grep -qx true
    diff <(fields "$T/p.ast") <(fields "$T/p.imp.ast")
    same_preds "$T/p.ast" "$T/p.imp.ast"
    run sh -c "as-show --no-header -k plan '$T/p.imp.ast' | jq -r '(.names[0]), (.mem_terms | keys | join(\",\"))' | sort -u"
    assert_line "t_cat_0"
    assert_line "optimizer,pipeline,weights"
    # pieces from the row blocks of the model's tables
    run sh -c "as-show --no-header -k plan '$T/s.imp.ast' | jq -c '.pieces | map(select(. != null)) | length'"
    refute_line 0
}

@test "as-plan --import: the document's label, else torchrec-import; input passes through; 2D ranks" {
    jq -c 'del(.alg)' "$D/one.json" > "$T/a.json"
    jq -c '.alg = "torchrec-planner"' "$D/one.json" >> "$T/a.json"
    printf '\n  \n' >> "$T/a.json"   # blank lines are skipped
    as-plan --import "$T/a.json" -q "$D/ft.ast" -o "$T/out.ast"
    run sh -c "as-show --no-header -k plan '$T/out.ast' | jq -r .alg"
    assert_output "$(printf 'torchrec-import\ntorchrec-planner')"
    # features and tasks pass through, as with every as-plan run
    run sh -c "as-show -c '$T/out.ast' | sort"
    assert_line --partial "task	3"
    assert_line --partial "plan	2"
    # --world-size, and a document's own dmp_collection
    as-plan --import "$D/one.json" --world-size 8 --format torchrec -q "$D/ft.ast" > "$T/w.json"
    jq -e '.dmp_collection.world_size == 8' "$T/w.json"
    run sh -c "as-plan --import '$T/w.json' --plans-only -q '$D/ft.ast' | as-show --no-header | jq -c .ranks"
    assert_output "[[0,1],[2,3],[4,5],[6,7]]"
}

# the error as-plan --import gives on one hostile document (line 1 of $T/bad.json)
bad() {
    printf '%s\n' "$1" > "$T/bad.json"
    run as-plan --import "$T/bad.json" --plans-only -q "$D/ft.ast" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "$T/bad.json: line ${2:-1}: "
    [ ! -e "$T/out.ast" ]
}

@test "as-plan --import: bad JSON, a task not in the input, world_size, tables unknown, foreign or missing" {
    local doc
    doc="$(cat "$D/one.json")"
    bad "${doc%?}"   # truncated: its last '}' missing
    assert_output --partial "line 1: bad JSON: column ${#doc}: unexpected end of input"
    bad "${doc:0:300}"
    assert_output --partial "line 1: bad JSON: column"
    bad '[1, 2]'
    assert_output --partial "not a JSON object"
    bad "$(jq -c '.task = 99' "$D/one.json")"
    assert_output --partial "task 99 (torchrec): not in the input"
    bad "$(jq -c 'del(.task)' "$D/one.json")"
    assert_output --partial "'task' is missing"
    bad "$(jq -c '.world_size = 8' "$D/one.json")"
    assert_output --partial "'world_size' = 8 but the task has 4 shards"
    bad "$(jq -c '.plan[""].t99 = .plan[""].t1' "$D/one.json")"
    assert_output --partial "table 't99': unknown"
    # table 3 is in the pool, not in task 0
    bad "$(jq -c '.plan[""].t3 = .plan[""].t1' "$D/one.json")"
    assert_output --partial "table 't3': not one of task 0's tables"
    bad "$(jq -c 'del(.plan[""].t1)' "$D/one.json")"
    assert_output --partial "table 't1' of task 0 is missing from the plan"
    bad "$(jq -c '.module = "m"' "$D/one.json")"
    assert_output --partial "'plan' holds module '', not the document's 'module' 'm'"
    # the document's line: a good one first
    bad "$(cat "$D/one.json"; jq -c '.task = 99' "$D/one.json")" 2
}

@test "as-plan --import: ranks, overlap, gap, shards outside the table, sharding types, data_parallel" {
    bad "$(jq -c '.plan[""].t1.shards[0].placement = "rank:4/cuda:4" | .plan[""].t1.ranks = [4]' "$D/one.json")"
    assert_output --partial "table 't1': shards[0]: placement 'rank:4/cuda:4': rank 4 is outside 0..3"
    bad "$(jq -c '.plan[""].t1.shards[0].placement = "gpu 2"' "$D/one.json")"
    assert_output --partial "table 't1': shards[0]: 'placement' 'gpu 2' is not \"rank:R/cuda:D\""
    bad "$(jq -c '.plan[""].t1.ranks = [1]' "$D/one.json")"
    assert_output --partial "table 't1': ranks[0] = 1 but shards[0] is placed on rank 2"
    # t7: 4 row blocks of 2891, 2891, 2891, 2890 rows
    bad "$(jq -c '.plan[""].t7.shards[1].shard_offsets = [2000, 0]' "$D/one.json")"
    assert_output --partial "table 't7': shards do not tile it exactly: table 7: pieces"
    assert_output --partial "overlap"
    bad "$(jq -c '.plan[""].t7.shards[1].shard_sizes = [2000, 16]' "$D/one.json")"
    assert_output --partial "table 't7': shards do not tile it exactly"
    assert_output --partial "gap"
    bad "$(jq -c '.plan[""].t2.shards[0].shard_sizes = [100, 32]' "$D/one.json")"
    assert_output --partial "table 't2': shards do not tile it exactly"
    bad "$(jq -c '.plan[""].t2.shards[0].shard_sizes = [3000, 32]' "$D/one.json")"
    assert_output --partial "table 't2': shards[0]: rows 0..3000 x columns 0..32 reach outside the table's 2943 rows x 32 columns"
    bad "$(jq -c '.plan[""].t2.shards[0].shard_sizes = [-1, 32]' "$D/one.json")"
    assert_output --partial "table 't2': shards[0]: 'shard_sizes' is not [rows, columns] of integers >= 0"
    bad "$(jq -c '.plan[""].t7.sharding_type = "column_wise"' "$D/one.json")"
    assert_output --partial "table 't7': shards[0]: a column_wise shard of rows 0..2891, not all 11563 rows"
    bad "$(jq -c '.plan[""].t7.sharding_type = "table_wise"' "$D/one.json")"
    assert_output --partial "table 't7': table_wise with more than one shard"
    bad "$(jq -c '.plan[""].t1.sharding_type = "diagonal"' "$D/one.json")"
    assert_output --partial "table 't1': sharding_type 'diagonal' is not table_wise"
    bad "$(jq -c '.plan[""].t1 = {"sharding_type": "data_parallel", "compute_kernel": "dense", "ranks": [0, 1, 2], "shards": []}' "$D/one.json")"
    assert_output --partial "table 't1': data_parallel: 'ranks' is not an array of all 4 ranks"
    bad "$(jq -c '.plan[""].t1 = {"sharding_type": "data_parallel", "compute_kernel": "dense", "ranks": [0, 1, 2, 2], "shards": []}' "$D/one.json")"
    assert_output --partial "table 't1': data_parallel: ranks[3] = 2 is not a rank of 0..3 listed once"
    bad "$(jq -c '.plan[""].t1 = {"sharding_type": "data_parallel", "ranks": [0, 1, 2, 3], "shards": [{"shard_offsets": [0, 0], "shard_sizes": [1, 1], "placement": "rank:0/cuda:0"}]}' "$D/one.json")"
    assert_output --partial "table 't1': data_parallel with 'shards'"
}

@test "as-plan --import: the cap, row pieces without features, empty shards, kernels, empty input" {
    run as-plan --import "$D/one.json" --mem-cap 100K --plans-only -q "$D/ft.ast"
    assert_failure 1
    assert_output --partial "one.json: line 1: plan of task 0 (torchrec): shard 0 holds"
    assert_output --partial "-byte cap of --mem-cap"
    # row blocks without their features (as-features without --row-pieces)
    as-features "$D/pool.ast" --tasks 3 --task-tables 8 --shards 4 --seed 0 -o "$T/f0.ast"
    run as-plan --import "$D/one.json" --plans-only -q "$T/f0.ast"
    assert_failure 1
    assert_output --partial "has no features in the input (as-features --row-pieces for row pieces)"
    # an empty shard (TorchRec's last row blocks of a small table) holds nothing
    jq -c '.plan[""].t1.shards += [{"shard_offsets": [1, 0], "shard_sizes": [0, 16], "placement": "rank:3/cuda:3"}] | .plan[""].t1.ranks += [3]' \
        "$D/one.json" > "$T/e.json"
    as-plan --import "$T/e.json" --plans-only -q "$D/ft.ast" -o "$T/e.ast"
    diff <(entries "$T/e.ast") <(as-plan --import "$D/one.json" --plans-only -q "$D/ft.ast" | entries -)
    # a kernel we do not model: a warning
    jq -c '.plan[""].t1.compute_kernel = "fused_uvm_caching"' "$D/one.json" > "$T/k.json"
    run as-plan --import "$T/k.json" --plans-only -q "$D/ft.ast" -o "$T/k.ast"
    assert_success
    assert_output --partial "warning: $T/k.json: line 1: task 0 (torchrec): 1 table of a compute_kernel other than fused or dense"
    : > "$T/empty.json"
    run as-plan --import "$T/empty.json" -q "$D/ft.ast" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "--import: no TorchRec plan in the file"
    run sh -c "as-plan --import '$D/one.json' '$D/ft.ast' > /dev/full"
    assert_failure 3
}

@test "as-plan --export: =LABEL selects that label exactly, an imported plan's too, which is exported as it is" {
    sed 's/"alg":"torchrec"/"alg":"torchrec-own"/' "$D/one.json" > "$T/own.json"
    as-plan --import "$T/own.json" --plans-only -q "$D/ft.ast" -o "$T/own.ast"
    cat "$D/tr.ast" "$T/own.ast" > "$T/both.ast"
    # a bare algorithm: its labels, not the imported one's
    run as-plan --export "$T/both.ast" --task 0 --alg torchrec --format torchrec -q "$D/ft.ast"
    assert_success
    [ "$(echo "$output" | jq -r .alg)" = torchrec ]
    run as-plan --export "$T/both.ast" --task 0 --alg =torchrec-own --format torchrec -q "$D/ft.ast"
    assert_success
    [ "$(echo "$output" | jq -r .alg)" = torchrec-own ]
    # the imported plan goes out as it came in
    [ "$(echo "$output" | jq -cS .plan)" = "$(jq -cS .plan "$T/own.json")" ]
    # =NAME: a table-wise label alone, not its +split variants
    run as-plan --export "$D/sp.ast" --task 0 --alg =size-greedy+split --format torchrec -q "$D/ft.ast"
    assert_success
    [ "$(echo "$output" | jq -r .alg)" = size-greedy+split ]
    as-plan --alg size-greedy --plans-only -q "$D/ft.ast" -o "$T/tw.ast"
    cat "$T/tw.ast" "$D/sp.ast" > "$T/mix.ast"
    run as-plan --export "$T/mix.ast" --task 0 --alg =size-greedy --format torchrec -q "$D/ft.ast"
    assert_success
    [ "$(echo "$output" | jq -r .alg)" = size-greedy ]
    run as-plan --export "$T/mix.ast" --task 0 --alg size-greedy --format torchrec -q "$D/ft.ast"
    [ "$(echo "$output" | jq -r .alg | sort | tr '\n' ' ')" = "size-greedy size-greedy+split " ]
    run as-plan --export "$T/mix.ast" --alg = --format torchrec "$D/ft.ast"
    [ "$status" -eq 2 ]
    assert_output --partial "'=' needs a plan label"
}

@test "as-plan --import: a data_parallel table: on every shard (assign -2), its memory on each, its all-reduce; exported back as it came" {
    jq -c '.plan[""].t1 = {"sharding_type": "data_parallel", "compute_kernel": "dense", "ranks": [0, 1, 2, 3], "shards": []} | .alg = "own"' \
        "$D/one.json" > "$T/dp.json"
    run as-plan --model "$D/m.ast" --import "$T/dp.json" --plans-only -q "$D/ft.ast" -o "$T/dp.ast"
    assert_success
    # t1 (60 x 8 ... its size from its features) once, on -2; the other tables where they were
    run sh -c "as-show --no-header -k plan --full '$T/dp.ast' | jq -c '[.tables, .assign] | transpose | map(select(.[1] == -2))'"
    assert_output '[[1,-2]]'
    # its fp16 weights on every shard: against the plan it came from (t1 table_wise on rank
    # r), every shard holds t1's bytes more, rank r the same
    t1=$(as-show --no-header -k features --full "$D/ft.ast" | jq -s '[.[] | select(.id == 1 and .piece == null)][0] | .rows * .dim * 2')
    r=$(jq '.plan[""].t1.ranks[0]' "$D/one.json")
    as-plan --import "$D/one.json" --plans-only -q "$D/ft.ast" -o "$T/orig.ast"
    orig=$(as-show --no-header -k plan --full "$T/orig.ast" | jq -c .mem_bytes)
    run sh -c "as-show --no-header -k plan --full '$T/dp.ast' | jq -c --argjson t1 $t1 --argjson r $r --argjson o '$orig' \
        '[range(.shards) as \$k | .mem_bytes[\$k] - \$o[\$k] - (if \$k == \$r then 0 else \$t1 end)]'"
    assert_output '[0,0,0,0]'
    # its ring all-reduce: 2 (K-1)/K x rows x dim x 2 bytes, the same on every shard
    ar=$(as-show --no-header -k features --full "$D/ft.ast" | jq -s '[.[] | select(.id == 1 and .piece == null)][0] | 2 * 3 / 4 * .rows * .dim * 2 | floor')
    run sh -c "as-show --no-header -k plan --full '$T/dp.ast' | jq -c '.comm_ar_bytes'"
    assert_output "[$ar,$ar,$ar,$ar]"
    # every shard's prediction holds t1's share: its item prediction is the one of t1 alone / 4
    run sh -c "as-show --no-header -k plan --full '$T/dp.ast' | jq -c '[.tables, .assign, .item_pred_ms] | transpose | map(select(.[1] == -2))[0][2] > 0'"
    assert_output true
    # exported: the same document as imported, t1 data_parallel on every rank, no shards
    run as-plan --export "$T/dp.ast" --format torchrec -q "$D/ft.ast"
    assert_success
    [ "$(printf '%s\n' "$output" | jq -cS '.plan')" = "$(jq -cS '.plan' "$T/dp.json")" ]
    printf '%s\n' "$output" | python3 "$BATS_TEST_DIRNAME/../pipelines/torchrec_plan.py" --check - > "$T/check.txt"
    run cat "$T/check.txt"
    assert_output --partial "1 data_parallel"
}

@test "as-plan --import: /dev/zero (no newline, ever) is an error after the 64 MiB line cap, in bounded memory" {
    # 2 GiB of address space: the old unbounded read of a line died of it
    run sh -c "ulimit -v 2097152; as-plan --import /dev/zero --plans-only -q '$D/ft.ast' -o '$T/out.ast'"
    assert_failure 1
    assert_output "as-plan: /dev/zero: line 1: longer than 64 MiB (one TorchRec plan a line, as as-plan --format torchrec writes them)"
    [ ! -e "$T/out.ast" ]
    # a document of exactly one line over the cap, after a good one: its line named
    { cat "$D/one.json"; head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' '; } > "$T/big.json"
    run sh -c "ulimit -v 2097152; as-plan --import '$T/big.json' --plans-only -q '$D/ft.ast' -o '$T/out.ast'"
    assert_failure 1
    assert_output --partial "big.json: line 2: longer than 64 MiB"
}

# as-plan --import and pipelines/torchrec_plan.py --check on the document $1 (a file): both
# accept it (ok) or both refuse it (bad, and as-plan's message holds $3)
both() {
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$1"
    if [ "$2" = ok ]; then assert_success; else assert_failure 1; fi
    run as-plan --import "$1" --plans-only -q "$D/ft.ast" -o "$T/out.ast"
    if [ "$2" = ok ]; then assert_success; rm "$T/out.ast"; else assert_failure 1; assert_output --partial "$3"; fi
}

@test "as-plan --import: placements and local_size refused exactly as torchrec_plan.py --check refuses them" {
    both "$D/one.json" ok
    # t1 is table_wise on rank 2: TorchRec places it on cuda:2 % local_size
    jq -c '.plan[""].t1.shards[0].placement = "rank:2/cuda:0"' "$D/one.json" > "$T/p.json"
    both "$T/p.json" bad "line 1: task 0 (torchrec): table 't1': shards[0]: placement 'rank:2/cuda:0' is not rank:2/cuda:2: TorchRec places rank 2 on its host's GPU 2 (rank % local_size 8)"
    # with local_size 2, rank 2 is cuda:0 and cuda:2 is wrong
    jq -c '.local_size = 2' "$T/p.json" > "$T/p2.json"
    both "$T/p2.json" bad "table 't2': shards[0]: placement 'rank:3/cuda:3' is not rank:3/cuda:1"
    jq -c '.local_size = 2 | (.plan[""][].shards[]?.placement) |= (capture("rank:(?<r>[0-9]+)") | "rank:\(.r)/cuda:\(.r | tonumber % 2)")' \
        "$D/one.json" > "$T/l2.json"
    both "$T/l2.json" ok
    # without local_size, any device of the shard's rank
    jq -c 'del(.local_size) | .plan[""].t1.shards[0].placement = "rank:2/cuda:7"' "$D/one.json" > "$T/nl.json"
    both "$T/nl.json" ok
    # local_size in 1..65536 (AS_MAX_SHARDS): 2^62, 0, -1, 65537, a string refused
    for v in 4611686018427387904 0 -1 65537 '"8"'; do
        sed "s/\"local_size\":8,/\"local_size\":$v,/" "$D/one.json" > "$T/ls.json"
        both "$T/ls.json" bad "line 1: task 0 (torchrec): 'local_size' = "
    done
    assert_output --partial "'local_size' = '8' is not an integer in 1..65536"
    sed 's/"local_size":8,/"local_size":65536,/' "$D/one.json" > "$T/ls.json"
    both "$T/ls.json" ok
    # a sharded table without its ranks (one per shard): refused by both
    jq -c 'del(.plan[""].t1.ranks)' "$D/one.json" > "$T/nr.json"
    both "$T/nr.json" bad "table 't1': 'ranks' is missing, not an array of 1 ranks, one per shard"
}

@test "as-plan --help and trplanread.h: data_parallel tables are imported (on every shard), not refused" {
    run as-plan --help
    assert_success
    refute_output --partial "cannot be"
    assert_output --partial "A data_parallel table"
    assert_output --partial "is imported on every shard (assign -2)"
    run grep -c "are an error" "$ROOT/lib/plan/trplanread.h"
    assert_output 0
}

@test "as-plan --repair without --alg on measured plans with an imported one: says to pass --alg, and which" {
    sed 's/"alg":"torchrec"/"alg":"torchrec-own"/' "$D/one.json" > "$T/own.json"
    as-plan --import "$T/own.json" --plans-only -q "$D/ft.ast" -o "$T/own.ast"
    as-plan --alg lookup-greedy --plans-only -q "$D/ft.ast" -o "$T/lg.ast"
    cat "$T/lg.ast" "$T/own.ast" > "$T/both.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --flush 8M --threads 1 -q "$T/both.ast" \
        -o "$T/meas.ast"
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only -q "$D/ft.ast" -o "$T/r.ast"
    assert_failure 1
    assert_output --partial "plan of task 0: unknown algorithm 'torchrec-own' (an imported plan's?): --repair rebuilds only the plans of our algorithms (random, size-greedy,"
    assert_output --partial "pass --alg with those to repair, e.g. --alg all,torchrec"
    # as it says: the imported plan skipped, ours repaired
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --alg all,torchrec --plans-only -q "$D/ft.ast" -o "$T/r.ast"
    assert_success
    [ "$(as-show --no-header -k plan "$T/r.ast" | jq -r .alg | sort -u)" = "lookup-greedy+refine+measured" ]
}

@test "as-plan --import: a table whose every shard is empty is refused, not left out of the plan" {
    # found by tests/fuzz/fuzz_trplanread.c: t1's one shard of 0 columns was skipped, t1 lost
    bad "$(jq -c '.plan[""].t1.shards[0].shard_sizes[1] = 0' "$D/one.json")"
    assert_output --partial "table 't1': every shard is empty (0 rows or columns): none holds its 1 rows x 16 columns"
    # an empty shard beside one that holds the table is still skipped (TorchRec's last row blocks)
    jq -c '.plan[""].t1.shards += [{"shard_offsets": [1, 0], "shard_sizes": [0, 16], "placement": "rank:3/cuda:3"}] | .plan[""].t1.ranks += [3]' \
        "$D/one.json" > "$T/e.json"
    run as-plan --import "$T/e.json" --plans-only -q "$D/ft.ast" -o "$T/e.ast"
    assert_success
}
