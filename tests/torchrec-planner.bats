#!/usr/bin/env bats
# pipelines/torchrec_planner.py (TorchRec's own planner on an as-features stream's tasks, issue
# 38, item 2) with a test double of TorchRec: tests/tools/fake_torchrec (its README has the
# double's planning rules, which these tests predict, and its record of the planner's inputs,
# FAKE_TORCHREC_RECORD). TorchRec itself cannot be installed here; the double is found through
# --torchrec-src like TorchRec's source. The script needs a python3 with torch (python3-torch,
# `make deps`): torch_python of test_helper/common. AS_TORCHREC_PLANNER: another copy of the
# script to test.
load test_helper/common

TP="${AS_TORCHREC_PLANNER:-$ROOT/pipelines/torchrec_planner.py}"
FAKE="$ROOT/tests/tools/fake_torchrec"
MODULE=model.sparse_arch.embedding_bag_collection

# once per file: a small synthetic pool, 3 tasks of 8 tables on 4 shards (row pieces of 2 and
# 4 blocks), and the DLRM Kaggle model config's task (26 tables on 8 ranks, row pieces of 8)
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --tables 12 --batch 64 --row-scale 0.001 --seed 1 -o "$D/pool.ast"
    as-features "$D/pool.ast" --row-pieces 2,4 --tasks 3 --task-tables 8 --shards 4 --seed 0 -o "$D/ft.ast"
    as-convert --config "$ROOT/pipelines/models/dlrm-criteo-kaggle.json" |
        as-features --model-task --row-pieces 8 -o "$D/mf.ast"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
    PY=$(torch_python) || skip "no python3 with torch (python3-torch: make deps)"
    PY=$(command -v "$PY")
    export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the double's folder of the checkout
}

# planner ARGS...: the script with the double, its inputs recorded in $T/rec.json (run: $status,
# $output with stderr)
planner() {
    run env FAKE_TORCHREC_RECORD="$T/rec.json" "$PY" "$TP" --torchrec-src "$FAKE" "$@"
}

# placement FILE: per task one line "task: table:sharding_type:kernel:ranks ..." in the plan's order
placement() {
    jq -r '"\(.task): " + ([.plan[.module] | to_entries[] |
        "\(.key):\(.value.sharding_type):\(.value.compute_kernel):\(.value.ranks | map(tostring) | join(","))"] | join(" "))' "$1"
}

# the shards of table TABLE in FILE's task TASK: "r0,c0 rows,cols placement" each
shards() {
    jq -r --argjson k "$2" --arg t "$3" 'select(.task == $k) | .plan[.module][$t].shards[] |
        "\(.shard_offsets | map(tostring) | join(",")) \(.shard_sizes | map(tostring) | join(",")) \(.placement)"' "$1"
}

# no_traceback: every line of $output is the script's own (or a summary line), no Python traceback
no_traceback() {
    refute_output --partial Traceback
    refute_output --partial 'File "'
}

@test "torchrec_planner.py: --help, usage errors (exit 2)" {
    run "$PY" "$TP" --help
    assert_success
    assert_output --partial "--torchrec-src"
    assert_output --partial "Exit: 0 ok"
    planner --sharding-types table_wise,diagonal "$D/ft.ast"
    assert_failure 2
    assert_output --partial "torchrec_planner: --sharding-types: unknown sharding type 'diagonal'"
    planner --kernels fused,turbo "$D/ft.ast"
    assert_failure 2
    assert_output --partial "torchrec_planner: --kernels: unknown kernel 'turbo'"
    planner --alg "" "$D/ft.ast"
    assert_failure 2
    planner --split all "$D/ft.ast" -o "$D/ft.ast"
    assert_failure 2
    assert_output "torchrec_planner: -o names the input"
    planner --reservation none "$D/ft.ast"
    assert_failure 2
    [ ! -e "$T/rec.json" ]
}

@test "the double's plans: per task the predicted sharding types, kernels, ranks and shards" {
    planner --split all "$D/ft.ast" -o "$T/out.json"
    assert_success
    no_traceback
    assert_line --regexp "^torchrec_planner: TorchRec imported from $FAKE in [0-9.]+ s$"
    assert_line "  sharding types: data_parallel 1, row_wise 1, table_wise 6"
    assert_line "  every rank (data_parallel): t1"
    [ "$(wc -l < "$T/out.json")" -eq 3 ]
    # the tasks' tables in the task's order; t1 (1 row) and t10 (27 rows): fewer than 8 rows is
    # data_parallel; t5 (10227 x 32) the largest of every task: row_wise on all 4 ranks; the
    # rest table_wise round-robin
    run placement "$T/out.json"
    assert_line "0: t1:data_parallel:dense:0,1,2,3 t2:table_wise:fused:0 t5:row_wise:fused:0,1,2,3 t6:table_wise:fused:1 t7:table_wise:fused:2 t8:table_wise:fused:3 t10:table_wise:fused:0 t11:table_wise:fused:1"
    assert_line "1: t0:table_wise:fused:0 t2:table_wise:fused:1 t3:table_wise:fused:2 t5:row_wise:fused:0,1,2,3 t7:table_wise:fused:3 t8:table_wise:fused:0 t10:table_wise:fused:1 t11:table_wise:fused:2"
    assert_line "2: t0:table_wise:fused:0 t1:data_parallel:dense:0,1,2,3 t2:table_wise:fused:1 t3:table_wise:fused:2 t5:row_wise:fused:0,1,2,3 t6:table_wise:fused:3 t8:table_wise:fused:0 t10:table_wise:fused:1"
    [ "${#lines[@]}" -eq 3 ]
    # the documents' fields; TorchRec's row-wise blocks of ceil(10227 / 4) rows; a table-wise
    # table whole on its rank; data_parallel: no shards
    run jq -c '[.task, .alg, .feasible, .world_size, .local_size, .module, (.plan | keys)]' "$T/out.json"
    assert_output "$(printf '[%s,"torchrec-own",true,4,4,"",[""]]\n' 0 1 2)"
    run shards "$T/out.json" 0 t5
    assert_output "$(printf '%s\n' '0,0 2557,32 rank:0/cuda:0' '2557,0 2557,32 rank:1/cuda:1' \
        '5114,0 2557,32 rank:2/cuda:2' '7671,0 2556,32 rank:3/cuda:3')"
    run shards "$T/out.json" 1 t3
    assert_output "0,0 3516,32 rank:2/cuda:2"
    run jq -c '.plan[""].t1.shards' "$T/out.json"
    assert_output "$(printf '[]\nnull\n[]')"
    # --task N: that task alone, as in the whole run; --alg labels it
    planner --task 2 --alg trec "$D/ft.ast" -o "$T/two.json"
    assert_success
    run jq -c '{task, alg}' "$T/two.json"
    assert_output '{"task":2,"alg":"trec"}'
    diff <(jq -c .plan "$T/two.json") <(jq -c 'select(.task == 2) | .plan' "$T/out.json")
}

@test "the double's inputs: tables, rows, dims, pooling, data types, batch per rank, world size, cap as the stream says" {
    planner --split all "$D/ft.ast" -o "$T/out.json"
    assert_success
    [ "$(wc -l < "$T/rec.json")" -eq 3 ]
    # what the stream says, per task: its tables in order (t<id>, rows, dim, pooling; fp16, the
    # synthetic pools' weights), K shards, the batch over K, no cap (mem_cap 0: TorchRec's default)
    as-show --no-header --full "$D/ft.ast" | jq -sc '
        (map(select(.kind == "features" and .piece == null)) | INDEX(.id | tostring)) as $f |
        .[] | select(.kind == "task") |
        {world_size: .shards, local_world_size: .shards, compute_device: "cuda",
         hbm_cap: (if .mem_cap == 0 then null else .mem_cap end),
         batch_size: ((.tables | map($f[tostring].batch) | max) / .shards | round),
         tables: [.tables[] | $f[tostring] | {name: "t\(.id)", feature_names: ["t\(.id)"],
                  num_embeddings: .rows, embedding_dim: .dim, data_type: "FP16",
                  pooling_factors: [.pooling]}]}' > "$T/want"
    jq -c '{world_size, local_world_size, compute_device, hbm_cap, batch_size,
            tables: [.tables[] | {name, feature_names, num_embeddings, embedding_dim, data_type,
                                  pooling_factors}]}' "$T/rec.json" > "$T/got"
    diff "$T/want" "$T/got"
    # the rest of what it was given: TorchRec's defaults but the reservation (none: the
    # task's cap is all the tables'), no constraints, no optimizer, the meta device
    run jq -c '[.enumerator_batch_size == .batch_size, .storage_reservation, .pipeline_type,
                .estimators, .sharders, .debug] + ([.tables[] | [.sharding_types, .compute_kernels,
                .optimizer_classes, .device]] | unique)' "$T/rec.json"
    assert_line '[true,{"class":"FixedPercentageStorageReservation","percentage":0,"dense_tensor_estimate":null},"NONE",["EmbeddingPerfEstimator","EmbeddingStorageEstimator"],["EmbeddingBagCollectionSharder"],false,[null,null,[],"meta"]]'
    [ "$(printf '%s\n' "$output" | sort -u | wc -l)" -eq 1 ]
    # --sharding-types and --kernels: constraints on every table
    rm "$T/rec.json"
    planner --task 0 --sharding-types table_wise,row_wise --kernels fused,dense "$D/ft.ast" -o "$T/out.json"
    assert_success
    run jq -c '[.tables[] | [.sharding_types, .compute_kernels]] | unique' "$T/rec.json"
    assert_output '[[["table_wise","row_wise"],["fused","dense"]]]'
    run placement "$T/out.json"
    assert_output "0: t1:table_wise:fused:0 t2:table_wise:fused:1 t5:row_wise:fused:0,1,2,3 t6:table_wise:fused:2 t7:table_wise:fused:3 t8:table_wise:fused:0 t10:table_wise:fused:1 t11:table_wise:fused:2"
}

@test "a model config (DLRM Kaggle): names, fp32, cap, optimizer, pipeline, reservation; its plan" {
    planner "$D/mf.ast" -o "$T/out.json"
    assert_success
    no_traceback
    # the model config's task: 26 tables by name, fp32, 8 ranks of 16384 / 8, the task's cap,
    # SGD, train_sparse_dist; the tables' shapes and pooling as the features say
    as-show --no-header --full "$D/mf.ast" | jq -sc '
        (map(select(.kind == "features" and .piece == null)) | INDEX(.id | tostring)) as $f |
        (.[] | select(.kind == "model-config")) as $c | .[] | select(.kind == "task") |
        {world_size: .shards, local_world_size: $c.local_size, hbm_cap: .mem_cap,
         batch_size: ($f["0"].batch / .shards), pipeline_type: ($c.pipeline | ascii_upcase),
         tables: [.tables[] | $f[tostring] | {name, feature_names: [.name], num_embeddings: .rows,
                  embedding_dim: .dim, data_type: (.data_type | ascii_upcase),
                  pooling_factors: [.pooling], optimizer_classes: ["SGD"]}]}' > "$T/want"
    jq -c '{world_size, local_world_size, hbm_cap, batch_size, pipeline_type,
            tables: [.tables[] | {name, feature_names, num_embeddings, embedding_dim, data_type,
                                  pooling_factors, optimizer_classes}]}' "$T/rec.json" > "$T/got"
    diff "$T/want" "$T/got"
    run jq -c '[.world_size, .hbm_cap, .batch_size, (.tables | length), .tables[0].name, .tables[0].data_type]' "$T/rec.json"
    assert_output '[8,72994500712,2048,26,"t_cat_0","FP32"]'
    run jq -c .storage_reservation "$T/rec.json"
    assert_output '{"class":"FixedPercentageStorageReservation","percentage":0,"dense_tensor_estimate":null}'
    # its plan under the module path: t_cat_8 (3 rows) and t_cat_19 (4) data_parallel, t_cat_2
    # (10131227 rows) row_wise in blocks of 1266404, the 23 others table-wise round-robin
    run jq -c '[.module, (.plan | keys), .world_size, .local_size]' "$T/out.json"
    assert_output "[\"$MODULE\",[\"$MODULE\"],8,8]"
    run placement "$T/out.json"
    assert_output --partial "0: t_cat_0:table_wise:fused:0 t_cat_1:table_wise:fused:1 t_cat_2:row_wise:fused:0,1,2,3,4,5,6,7 t_cat_3:table_wise:fused:2 "
    assert_output --partial " t_cat_8:data_parallel:dense:0,1,2,3,4,5,6,7 t_cat_9:table_wise:fused:7 "
    assert_output --partial " t_cat_19:data_parallel:dense:0,1,2,3,4,5,6,7 t_cat_20:table_wise:fused:1 "
    assert_output --regexp " t_cat_25:table_wise:fused:6$"
    run shards "$T/out.json" 0 t_cat_2
    assert_line --index 0 "0,0 1266404,16 rank:0/cuda:0"
    assert_line --index 7 "8864828,0 1266399,16 rank:7/cuda:7"
    [ "${#lines[@]}" -eq 8 ]
    # --reservation torchrec: the model's HBM, TorchRec's heuristic 15 % and its dense bytes
    rm "$T/rec.json"
    planner --reservation torchrec "$D/mf.ast" -o "$T/out2.json"
    assert_success
    assert_output --partial "HeuristicalStorageReservation, optimizer SGD, pipeline TRAIN_SPARSE_DIST"
    want=$(as-show --no-header --full -k model-config "$D/mf.ast" |
        jq -c '[.hbm_bytes, {class: "HeuristicalStorageReservation", percentage: 0.15, dense_tensor_estimate: .dense_bytes}]')
    run jq -c '[.hbm_cap, .storage_reservation]' "$T/rec.json"
    assert_output "$want"
    cmp "$T/out.json" "$T/out2.json"
}

@test "the plans import: data_parallel tables on every shard (assign -2); without them one plan per task covering every table" {
    planner --split all "$D/ft.ast" -o "$T/dp.json"
    assert_success
    run as-plan --import "$T/dp.json" --plans-only "$D/ft.ast" -o "$T/dp.ast"
    assert_success
    assert_output "as-plan: --import: 3 TorchRec plans imported"
    # task 0: t1 data_parallel (one entry, -2), t5 in its 4 row blocks
    run sh -c "as-show --no-header -k plan '$T/dp.ast' | jq -c 'select(.task == 0) | [.tables, .assign] | transpose | map(select(.[1] == -2))'"
    assert_output '[[1,-2]]'
    # --sharding-types without data_parallel: the import takes all three plans
    planner --split all --sharding-types table_wise,row_wise,column_wise "$D/ft.ast" -o "$T/out.json"
    assert_success
    run as-plan --import "$T/out.json" --plans-only "$D/ft.ast" -o "$T/imp.ast"
    assert_success
    assert_output "as-plan: --import: 3 TorchRec plans imported"
    run as-show -c "$T/imp.ast"
    assert_line "plan	3"
    # each plan covers exactly its task's tables, feasible, labelled by --alg's default
    diff <(as-show --no-header -k task "$D/ft.ast" | jq -c '[.id, (.tables | sort)]') \
         <(as-show --no-header -k plan "$T/imp.ast" | jq -c '[.task, (.tables | unique)]')
    run sh -c "as-show --no-header -k plan '$T/imp.ast' | jq -c '[.alg, .feasible, .shards]' | sort -u"
    assert_output '["torchrec-own",true,4]'
    # the placement as predicted: t1 now table-wise, t5 in its 4 row blocks on ranks 0..3
    run sh -c "as-show --no-header -k plan '$T/imp.ast' | jq -c 'select(.task == 0) | [.tables, .pieces, .assign] | transpose'"
    assert_output '[[1,null,0],[2,null,1],[5,[0,32,0,2557],0],[5,[0,32,2557,5114],1],[5,[0,32,5114,7671],2],[5,[0,32,7671,10227],3],[6,null,2],[7,null,3],[8,null,0],[10,null,1],[11,null,2]]'
    # the model config's plan (row blocks of 8) imports too, every one of its 26 tables
    planner --sharding-types table_wise,row_wise "$D/mf.ast" -o "$T/m.json"
    assert_success
    run as-plan --import "$T/m.json" --plans-only "$D/mf.ast" -o "$T/m.ast"
    assert_success
    run sh -c "as-show --no-header -k plan '$T/m.ast' | jq -c '[.task, (.tables | unique | length), (.names | unique | length)]'"
    assert_output '[0,26,26]'
}

@test "no TorchRec: exit 2 and one line saying where it was looked for" {
    mkdir "$T/empty"
    planner --split all "$D/ft.ast" -o "$T/out.json" --torchrec-src "$T/empty"
    assert_failure 2
    assert_output --partial "torchrec_planner: --torchrec-src / AS_TORCHREC_SRC '$T/empty': no torchrec/ package in it"
    [ "${#lines[@]}" -eq 1 ]
    # AS_TORCHREC_SRC the same way; and it finds the double as --torchrec-src does
    run env AS_TORCHREC_SRC="$T/empty" "$PY" "$TP" --split all "$D/ft.ast"
    assert_failure 2
    assert_output --partial "'$T/empty': no torchrec/ package in it"
    run env AS_TORCHREC_SRC="$FAKE" "$PY" "$TP" --task 0 "$D/ft.ast" -o "$T/env.json"
    assert_success
    [ "$(wc -l < "$T/env.json")" -eq 1 ]
    # a torchrec/ without the planner: exit 2 naming what is missing
    mkdir -p "$T/broken/torchrec"
    cp "$FAKE/torchrec/__init__.py" "$T/broken/torchrec/"
    cp -r "$FAKE/torchrec/modules" "$T/broken/torchrec/"
    planner --split all "$D/ft.ast" --torchrec-src "$T/broken"
    assert_failure 2
    no_traceback
    assert_output "torchrec_planner: cannot import TorchRec's planner from $T/broken: ModuleNotFoundError: No module named 'torchrec.distributed' (give its source with --torchrec-src DIR or AS_TORCHREC_SRC)"
    # none given, none installed
    if ! "$PY" -c 'import torchrec' 2>/dev/null; then
        run env -u AS_TORCHREC_SRC "$PY" "$TP" --split all "$D/ft.ast" -o "$T/out.json"
        assert_failure 2
        assert_output "torchrec_planner: cannot import TorchRec's planner from the installed torchrec: ModuleNotFoundError: No module named 'torchrec' (give its source with --torchrec-src DIR or AS_TORCHREC_SRC)"
    fi
    # no torch at all (the interpreter without its site packages)
    if ! "$PY" -S -E -c 'import torch' 2>/dev/null; then
        run "$PY" -S -E "$TP" --split all "$D/ft.ast" --torchrec-src "$FAKE"
        assert_failure 2
        assert_output --regexp "^torchrec_planner: cannot import torch \(.*\): run with a python3 that has torch$"
    fi
    [ ! -e "$T/out.json" ]
}

@test "bad input: exit 1 naming the file or record, before TorchRec is imported" {
    printf 'hello\n' > "$T/text"
    planner "$T/text"
    assert_failure 1
    no_traceback
    assert_output --regexp "^torchrec_planner: $T/text: as-show --full failed \(exit 1\): .*not an autoshard stream"
    : > "$T/empty.ast"
    planner "$T/empty.ast"
    assert_failure 1
    assert_output --partial "torchrec_planner: $T/empty.ast: as-show --full failed (exit 1)"
    head -c 3000 "$D/ft.ast" > "$T/trunc.ast"
    planner --split all "$T/trunc.ast"
    assert_failure 1
    assert_output --partial "torchrec_planner: $T/trunc.ast: as-show --full failed (exit 1)"
    # a stream without tasks; a task whose table has no features record; a bad field
    planner "$D/pool.ast"
    assert_failure 1
    assert_output "torchrec_planner: $D/pool.ast: no task record (make tasks with as-features, e.g. --model-task)"
    mp_edit "$D/ft.ast" 'recs[:] = [r for r in recs if not (r.get("kind") == "features" and r.get("id") == 7)]' > "$T/nofeat.ast"
    planner --split all "$T/nofeat.ast"
    assert_failure 1
    assert_output --regexp "^torchrec_planner: $T/nofeat.ast: record [0-9]+ \(task 0\): table 7 has no \(whole-table\) features record$"
    mp_edit "$D/ft.ast" '[r.update(rows="many") for r in kind("features") if r["id"] == 2 and "piece" not in r]' > "$T/badrows.ast"
    planner --split all "$T/badrows.ast"
    assert_failure 1
    assert_output --regexp "^torchrec_planner: $T/badrows.ast: record [0-9]+ \(features, table 2\): 'rows' must be a number, got 'many'$"
    # none of these got as far as the planner
    [ ! -e "$T/rec.json" ]
    # standard input is read like a file
    planner --task 1 - < "$D/ft.ast"
    assert_success
    assert_output --partial '{"task":1,"alg":"torchrec-own"'
}

@test "--task not in the stream, --split without tasks, a task the planner fails: exit 1" {
    planner --task 7 "$D/ft.ast" -o "$T/out.json"
    assert_failure 1
    assert_output "torchrec_planner: $D/ft.ast: no task 7 (tasks: 0, 1, 2)"
    # as-features --tasks 3 makes training tasks only; the default --split is test
    planner "$D/ft.ast"
    assert_failure 1
    assert_output "torchrec_planner: $D/ft.ast: no task of split test"
    [ ! -e "$T/rec.json" ]
    [ ! -e "$T/out.json" ]
    # task 1 with a cap of 1000 bytes a rank: the planner fails on it, tasks 0 and 2 are planned
    mp_edit "$D/ft.ast" '[r.update(mem_cap=1000) for r in kind("task") if r["id"] == 1]' > "$T/cap.ast"
    planner --split all "$T/cap.ast" -o "$T/out.json"
    assert_failure 1
    no_traceback
    assert_line --regexp "^torchrec_planner: task 1: TorchRec's planner failed: PlannerError: fake torchrec planner: rank [0-3] needs [0-9]+ bytes, over its 1000 usable bytes of HBM$"
    assert_line "torchrec_planner: 1 of 3 tasks failed"
    run jq -c .task "$T/out.json"
    assert_output "$(printf '0\n2')"
    [ "$(jq -c .hbm_cap "$T/rec.json" | tr '\n' ' ')" = "null 1000 null " ]
}

@test "as-show: AS_SHOW, else PATH, else bin/ of the repository; write errors exit 3" {
    # AS_SHOW unset, no as-show on PATH: the repository's bin/as-show
    [ -x "$ROOT/bin/as-show" ] || skip "no bin/as-show (make)"
    ! PATH=/usr/bin:/bin command -v as-show > /dev/null || skip "an as-show in /usr/bin or /bin"
    run env -u AS_SHOW PATH=/usr/bin:/bin FAKE_TORCHREC_RECORD="$T/rec.json" "$PY" "$TP" \
        --torchrec-src "$FAKE" --task 0 "$D/ft.ast" -o "$T/bin.json"
    assert_success
    [ "$(wc -l < "$T/bin.json")" -eq 1 ]
    # an as-show on PATH comes first (one that notes its use)
    mkdir "$T/path"
    printf '#!/bin/sh\necho used >> "%s"\nexec "%s" "$@"\n' "$T/used" "$(command -v as-show)" > "$T/path/as-show"
    chmod +x "$T/path/as-show"
    run env -u AS_SHOW PATH="$T/path:/usr/bin:/bin" "$PY" "$TP" --torchrec-src "$FAKE" --task 0 "$D/ft.ast" -o "$T/path.json"
    assert_success
    [ "$(cat "$T/used")" = used ]
    cmp "$T/bin.json" "$T/path.json"
    # AS_SHOW names it; one that cannot run is exit 2
    run env AS_SHOW="$T/path/as-show" "$PY" "$TP" --torchrec-src "$FAKE" --task 0 "$D/ft.ast" -o "$T/env.json"
    assert_success
    [ "$(wc -l < "$T/used")" -eq 2 ]
    run env AS_SHOW="$T/nonexistent" "$PY" "$TP" --torchrec-src "$FAKE" --task 0 "$D/ft.ast"
    assert_failure 2
    assert_output --partial "torchrec_planner: cannot run $T/nonexistent: "
    # a copy of the script outside the repository, no as-show anywhere: exit 2 saying so
    mkdir -p "$T/repo/pipelines"
    cp "$TP" "$(dirname "$TP")/aspipe.py" "$T/repo/pipelines/"
    run env -u AS_SHOW PATH=/usr/bin:/bin "$PY" "$T/repo/pipelines/torchrec_planner.py" "$D/ft.ast"
    assert_failure 2
    assert_output "torchrec_planner: as-show not found (not on PATH, not in $T/repo/bin; build with make, or set AS_SHOW)"
    # write errors: exit 3, one line
    planner --task 0 "$D/ft.ast" -o /dev/full
    assert_failure 3
    assert_line "torchrec_planner: /dev/full: write error: No space left on device"
    no_traceback
    run sh -c "FAKE_TORCHREC_RECORD='$T/rec.json' '$PY' '$TP' --torchrec-src '$FAKE' --task 0 '$D/ft.ast' > /dev/full"
    assert_failure 3
    assert_line "torchrec_planner: standard output: write error: No space left on device"
    planner --task 0 "$D/ft.ast" -o "$T/no/such/dir/out.json"
    assert_failure 3
    assert_line "torchrec_planner: -o $T/no/such/dir/out.json: No such file or directory"
}

# the double against the real thing, where TorchRec's source is at hand (AS_TORCHREC_SRC, as the
# script reads it; skipped otherwise): the same script runs, and its plans import as the double's
@test "real TorchRec (AS_TORCHREC_SRC): the script runs on it and its plans import, with data_parallel and without" {
    [ -n "${AS_TORCHREC_SRC:-}" ] || skip "AS_TORCHREC_SRC not set (TorchRec's source)"
    run "$PY" "$TP" --split all --sharding-types table_wise,row_wise,column_wise "$D/ft.ast" -o "$T/real.json"
    assert_success
    no_traceback
    run jq -c '[.task, .world_size, (.plan[""] | keys | length)]' "$T/real.json"
    assert_output "$(printf '[%s,4,8]\n' 0 1 2)"
    run as-plan --import "$T/real.json" --plans-only "$D/ft.ast" -o "$T/imp.ast"
    assert_success
    assert_output "as-plan: --import: 3 TorchRec plans imported"
    # its defaults: data_parallel among the types; those plans import too
    run "$PY" "$TP" --split all "$D/ft.ast" -o "$T/real-dp.json"
    assert_success
    run as-plan --import "$T/real-dp.json" --plans-only "$D/ft.ast" -o "$T/imp-dp.ast"
    assert_success
    assert_output "as-plan: --import: 3 TorchRec plans imported"
}
