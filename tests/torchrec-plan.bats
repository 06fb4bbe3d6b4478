#!/usr/bin/env bats
# pipelines/torchrec_plan.py --check on hostile input (issue 36, items 4, 6 and 7): every
# error one line `torchrec_plan: ...` and exit 1, never a traceback; world_size and the shards
# of a table bounded, so that no input loops or allocates without bound; --config checks each
# table's shards against its num_embeddings x embedding_dim; a fuzz loop over hostile JSON
# (tests/tools/fuzz_torchrec_plan.py, tests/fuzz/README.md). AS_TORCHREC_PLAN: another copy
# of the helper to test (an older one, to see these tests fail on it).
load test_helper/common

TP="${AS_TORCHREC_PLAN:-$ROOT/pipelines/torchrec_plan.py}"
G="$ROOT/tests/fixtures/golden"

# a plan of two tables on 2 ranks, table-wise: t1 (100 x 16) and t5 (10227 x 32)
PLAN='{"task":0,"alg":"size-greedy","feasible":true,"world_size":2,"local_size":8,"module":"","plan":{"":{"t1":{"sharding_type":"table_wise","compute_kernel":"fused","ranks":[0],"shards":[{"shard_offsets":[0,0],"shard_sizes":[100,16],"placement":"rank:0/cuda:0"}]},"t5":{"sharding_type":"table_wise","compute_kernel":"fused","ranks":[1],"shards":[{"shard_offsets":[0,0],"shard_sizes":[10227,32],"placement":"rank:1/cuda:1"}]}}}}'
CFG='{"topology":{"world_size":2,"batch_size_per_rank":16},"tables":[{"name":"t1","num_embeddings":100,"embedding_dim":16},{"name":"t5","num_embeddings":10227,"embedding_dim":32}]}'

# refused TEXT MESSAGE [OPTIONS...]: --check on TEXT (a file) exits 1 within 30 s, no traceback,
# every line `torchrec_plan: ...`, one of them `torchrec_plan: MESSAGE` (in.json's path left out)
refused() {
    local text=$1 msg=$2
    shift 2
    printf '%s\n' "$text" > "$T/in.json"
    run timeout 30 python3 "$TP" --check "$@" "$T/in.json"
    refute_output --partial Traceback
    assert_failure 1
    [ "${#lines[@]}" -ge 1 ] || fail "no message"
    for l in "${lines[@]}"; do [[ "$l" == "torchrec_plan: "* ]] || fail "not a torchrec_plan line: $l"; done
    assert_line "torchrec_plan: ${msg//@/$T/in.json}"
}

# jqp FILTER: the plan edited by a jq filter
jqp() {
    jq -c "$1" <<< "$PLAN"
}

@test "torchrec_plan.py --check: what was a traceback (issue 36, item 6) is one line and exit 1" {
    refused '5' '@: line 1: not a JSON object but 5'
    refused 'null' '@: line 1: not a JSON object but null'
    refused '"plan"' '@: line 1: not a JSON object but "plan"'
    refused '[{"plan": {}}]' '@: line 1: not a JSON object but a list of 1'
    refused '{}' "@: line 1: no 'plan' object"
    refused "$(head -c 100000 /dev/zero | tr '\0' '[')" '@: line 1: not JSON: nested too deeply'
    refused "${PLAN/\"world_size\":2/\"world_size\":Infinity}" '@: line 1: not JSON: Infinity is not JSON'
    refused "${PLAN/\"world_size\":2/\"world_size\":NaN}" '@: line 1: not JSON: NaN is not JSON'
    refused "${PLAN/\"world_size\":2/\"world_size\":1e999}" '@: line 1: world_size inf is not an integer in 1..65536'
    refused "$(jqp '.world_size = "2"')" '@: line 1: world_size "2" is not an integer in 1..65536'
    refused "$(jqp 'del(.world_size)')" "@: line 1: no 'world_size'"
    refused "$(jqp '.plan = [1]')" "@: line 1: 'plan' is [1], not an object {module: {table: sharding}}"
    refused "$(jqp '.plan = "x"')" "@: line 1: 'plan' is \"x\", not an object {module: {table: sharding}}"
    refused "$(jqp '.plan = null')" "@: line 1: 'plan' is null, not an object {module: {table: sharding}}"
    refused "$(jqp '.plan[""] = []')" '@: line 1: plan "" is [], not an object {table: sharding}'
    refused "$(jqp '.plan[""].t5 = "x"')" '@: line 1: t5: the sharding is "x", not an object'
    refused "$(jqp '.plan[""].t5 = null')" '@: line 1: t5: the sharding is null, not an object'
    # a table's sharding: the plan refused, named, and counted
    refused "$(jqp '.plan[""].t5.shards[0].shard_sizes = []')" \
        'task 0 size-greedy: t5: shard 0: shard_sizes is [], not [rows, columns] (integers >= 1)'
    assert_line 'torchrec_plan: 1 of 1 plans cannot go through construct_module_sharding_plan'
    refused "$(jqp '.plan[""].t5.shards[0].shard_offsets = [0]')" \
        'task 0 size-greedy: t5: shard 0: shard_offsets is [0], not [row, column] (integers >= 0)'
    refused "$(jqp '.plan[""].t5.shards[0].shard_sizes = null')" \
        'task 0 size-greedy: t5: shard 0: shard_sizes is null, not [rows, columns] (integers >= 1)'
    refused "$(jqp '.plan[""].t5.shards = "x"')" 'task 0 size-greedy: t5: shards is "x", not a list of shards'
    refused "$(jqp '.plan[""].t5.ranks = null')" 'task 0 size-greedy: t5: ranks is null, not a list of ranks'
    refused "$(jqp '.plan[""].t5.ranks = [1.5]')" 'task 0 size-greedy: t5: rank 1.5 is not an integer'
    refused "$(jqp '.plan[""].t5.shards[0].placement = "rank:0/cuda:0"')" \
        'task 0 size-greedy: t5: shard 0: placement "rank:0/cuda:0" is not rank:1/cuda:1 (its rank 1)'
    refused "$(jqp '.module = "sparse.ebc"')" \
        "task 0 size-greedy: module \"sparse.ebc\" is not a key of 'plan' (it has 1: \"\")"
    # standard input, as the issue ran it
    run sh -c "printf '5\n' | python3 '$TP' --check"
    assert_failure 1
    assert_output 'torchrec_plan: -: line 1: not a JSON object but 5'
    # and the plan itself still converts
    printf '%s\n' "$PLAN" > "$T/p.json"
    run python3 "$TP" --check "$T/p.json"
    assert_success
    assert_output 'task 0 size-greedy (the model itself): 2 tables (2 table_wise); tables per rank 0:1 1:1'
}

@test "torchrec_plan.py --check: strict JSON, names without control characters, bounded lines" {
    refused "$(printf '\357\273\277%s' "$PLAN")" '@: line 1: begins with a UTF-8 byte order mark (not JSON: remove it)'
    refused "$(printf '{"plan": \377}')" '@: line 1: not UTF-8 text (byte 10)'
    refused "${PLAN/\"task\":0/\"task\":0,\"task\":1}" '@: line 1: not JSON: key "task" repeated in an object'
    refused "${PLAN/\"t1\":/\"t5\":}" '@: line 1: not JSON: key "t5" repeated in an object'
    refused "${PLAN/\"task\":0/\"task\":1$(printf '%05000d' 0)}" '@: line 1: not JSON: an integer of 5001 digits (at most 1000)'
    refused "$(jqp '.task = -1')" '@: line 1: task -1 is not an integer in 0..9223372036854775807'
    refused "$(jqp '.alg = "size-greedy\u0000x"')" \
        '@: line 1: alg "size-greedy\u0000x" is not an algorithm label (printable, 1..63 bytes)'
    refused "$(jqp '.plan[""]["a\u001b[31mRED\nb"] = .plan[""].t5')" \
        '@: line 1: plan "": table "a\u001b[31mRED\nb": a control character or an unpaired surrogate in the name'
    refused "$(jqp '.feasible = false')" '@: line 1: feasible is false, not true (as-plan writes feasible plans only)'
    refused "$(jqp '.plan = {}')" "@: line 1: 'plan' is empty (no module)"
    refused "$(jqp '.dmp_collection = {world_size: 4, sharding_group_size: 2, replicas: 2, shard_ranks: [[0, 1], [3, 2]]}')" \
        '@: line 1: dmp_collection: shard_ranks is not 2 lists of 2 ranks, shard k on ranks k*2 + i'
    printf '%s\n' "$(jqp '.dmp_collection = {world_size: 4, sharding_group_size: 2, replicas: 2, shard_ranks: [[0, 1], [2, 3]]}')" > "$T/d.json"
    run python3 "$TP" --check "$T/d.json"
    assert_success
    # a file without newlines (/dev/zero) is refused at 64 MiB, not read until memory runs out
    run sh -c "ulimit -v 2000000; timeout 60 python3 '$TP' --check /dev/zero"
    assert_failure 1
    assert_output 'torchrec_plan: /dev/zero: line 1: longer than 67108864 bytes (one plan a line)'
    # standard output that cannot be written: exit 3, one line
    run sh -c "python3 '$TP' --check '$T/d.json' > /dev/full"
    assert_failure 3
    assert_output 'torchrec_plan: standard output: No space left on device'
}

@test "torchrec_plan.py --check: world_size and a table's shards bounded (issue 36, item 7: a loop over 10^12 ranks, a MemoryError at 10^9)" {
    SECONDS=0
    for w in 1000000000000 1000000000 65537 0 -1; do
        refused "$(jqp ".world_size = $w")" "@: line 1: world_size $w is not an integer in 1..65536"
    done
    refused "$(jqp '.dmp_collection = {world_size: 1000000000000, sharding_group_size: 2, replicas: 500000000000, shard_ranks: []}')" \
        '@: line 1: dmp_collection: world_size 1000000000000 is not an integer in 1..65536'
    refused "$(jqp '.local_size = 1000000000000')" '@: line 1: local_size 1000000000000 is not an integer in 1..65536'
    # 65537 shards of one table (column pieces of width 1 on rank 0)
    refused "$(jqp '.plan[""].t5 = {sharding_type: "column_wise", ranks: [range(65537) | 0],
                                    shards: [range(65537) as $i | {shard_offsets: [0, $i], shard_sizes: [10227, 1]}]}')" \
        'task 0 size-greedy: t5: 65537 shards, more than 65536'
    local t5='"shard_offsets":[0,0],"shard_sizes":[10227,32]'
    refused "${PLAN/"$t5"/\"shard_offsets\":[1,0],\"shard_sizes\":[9223372036854775807,32]}" \
        'task 0 size-greedy: t5: shard 0 ends past 2^63 - 1'
    refused "${PLAN/"$t5"/\"shard_offsets\":[0,0],\"shard_sizes\":[9223372036854775808,32]}" \
        'task 0 size-greedy: t5: shard 0: shard_sizes is [9223372036854775808, 32], not [rows, columns] (integers >= 1)'
    # the bounds themselves: 65536 ranks counted, a table of 2^63 - 1 rows
    printf '%s\n' "$(jqp '.world_size = 65536')" > "$T/w.json"
    run timeout 30 python3 "$TP" --check "$T/w.json"
    assert_success
    assert_output --partial ' 65534:0 65535:0'
    printf '%s\n' "${PLAN/"$t5"/\"shard_offsets\":[0,0],\"shard_sizes\":[9223372036854775807,32]}" > "$T/w.json"
    run python3 "$TP" --check "$T/w.json"
    assert_success
    # AS_MAX_SHARDS moves the bound as it does for the C tools (lib/records/reclimits.c: up to 2^20)
    jqp '.world_size = 100000' > "$T/w.json"
    refused "$(cat "$T/w.json")" '@: line 1: world_size 100000 is not an integer in 1..65536'
    run env AS_MAX_SHARDS=131072 python3 "$TP" --check "$T/w.json"
    assert_success
    assert_output --partial ' 99999:0'
    run env AS_MAX_SHARDS=2000000 python3 "$TP" --check "$T/w.json"
    assert_failure 2
    assert_output 'torchrec_plan: AS_MAX_SHARDS: "2000000" is not a count in 1..1048576 (the limit on shards per plan)'
    [ "$SECONDS" -lt 60 ] || fail "took $SECONDS s"
}

@test "torchrec_plan.py --check --config: each table's shards cover exactly the config's table (issue 36, item 4)" {
    printf '%s\n' "$CFG" > "$T/c.json"
    printf '%s\n' "$PLAN" > "$T/p.json"
    run python3 "$TP" --check --config "$T/c.json" "$T/p.json"
    assert_success
    assert_output 'task 0 size-greedy (the model itself): 2 tables (2 table_wise); tables per rank 0:1 1:1'
    # table t5 (10227 x 32) given the single piece [0,32,0,5114]: half its rows
    jqp '.plan[""].t5.shards[0].shard_sizes = [5114, 32]' > "$T/half.json"
    run python3 "$TP" --check "$T/half.json"       # without the sizes, nothing to compare it with
    assert_success
    run python3 "$TP" --check --config "$T/c.json" "$T/half.json"
    assert_failure 1
    assert_output "torchrec_plan: task 0 size-greedy: t5: the plan's shards cover 5114 x 32 (163648 elements), the config's table is 10227 x 32 (num_embeddings x embedding_dim)
torchrec_plan: 1 of 1 plans cannot go through construct_module_sharding_plan"
    # half the columns; column pieces short of the dim; row blocks short of the rows; past the table
    refused "$(jqp '.plan[""].t5.shards[0].shard_sizes = [10227, 16]')" \
        "task 0 size-greedy: t5: the plan's shards cover 10227 x 16 (163632 elements), the config's table is 10227 x 32 (num_embeddings x embedding_dim)" \
        --config "$T/c.json"
    refused "$(jqp '.plan[""].t5 = {sharding_type: "column_wise", ranks: [0, 1], shards: [{shard_offsets: [0, 0], shard_sizes: [10227, 8]}, {shard_offsets: [0, 8], shard_sizes: [10227, 8]}]}')" \
        "task 0 size-greedy: t5: the plan's shards cover 10227 x 16 (163632 elements), the config's table is 10227 x 32 (num_embeddings x embedding_dim)" \
        --config "$T/c.json"
    refused "$(jqp '.plan[""].t5 = {sharding_type: "row_wise", ranks: [0, 1], shards: [{shard_offsets: [0, 0], shard_sizes: [2557, 32]}, {shard_offsets: [2557, 0], shard_sizes: [2557, 32]}]}')" \
        "task 0 size-greedy: t5: the plan's shards cover 5114 x 32 (163648 elements), the config's table is 10227 x 32 (num_embeddings x embedding_dim)" \
        --config "$T/c.json"
    refused "$(jqp '.plan[""].t1.shards[0].shard_sizes = [100, 64]')" \
        "task 0 size-greedy: t1: the plan's shards cover 100 x 64 (6400 elements), the config's table is 100 x 16 (num_embeddings x embedding_dim)" \
        --config "$T/c.json"
    refused "$(jqp '.plan[""].t9 = .plan[""].t5')" 'task 0 size-greedy: t9: not a table of the config (it has 2: t1, t5)' \
        --config "$T/c.json"
    # a plan of some of the config's tables passes (a task's subset)
    jqp 'del(.plan[""].t1)' > "$T/sub.json"
    run python3 "$TP" --check --config "$T/c.json" "$T/sub.json"
    assert_success
    # the config itself checked
    run python3 "$TP" --check --config /nonexistent/c.json "$T/p.json"
    assert_failure 1
    assert_output 'torchrec_plan: /nonexistent/c.json: cannot open: No such file or directory'
    printf '%s\n' "${CFG/10227/\"10227\"}" > "$T/bad.json"
    refused "$PLAN" "$T/bad.json: table 1: num_embeddings \"10227\" is not an integer in 1..9223372036854775807" --config "$T/bad.json"
    printf '%s\n' "${CFG/\"t1\"/\"t5\"}" > "$T/bad.json"
    refused "$PLAN" "$T/bad.json: table 1: name \"t5\" repeated" --config "$T/bad.json"
    printf '[]\n' > "$T/bad.json"
    refused "$PLAN" "$T/bad.json: not a model config (an object with a list of tables)" --config "$T/bad.json"
    # the golden plans with their config: the verdict they have without it
    { python3 "$TP" --check --config "$G/torchrec-config.json" "$G/torchrec-plans.json" > "$T/o" 2> "$T/e"; echo "exit $?" > "$T/x"; } || true
    diff <(cat "$T/o" "$T/e" "$T/x") "$G/torchrec-plans.check"
    # the documented pipeline, checked against its config
    run sh -c "as-convert --config '$G/torchrec-config.json' | as-features --row-pieces 2,4 | as-features --model-task |
               as-plan --alg torchrec,size-greedy --format torchrec 2> /dev/null | python3 '$TP' --check --config '$G/torchrec-config.json'"
    assert_success
    assert_line --partial 'task 0 torchrec sparse.ebc: 3 tables'
}

@test "fuzz: torchrec_plan.py --check on a few hundred hostile JSON inputs: no traceback, exit 0 or 1, bounded time" {
    run timeout 170 python3 "$ROOT/tests/tools/fuzz_torchrec_plan.py" --cases 200 --seed 1 --script "$TP" --keep "$T"
    assert_success
    assert_output --regexp '^fuzz_torchrec_plan: 200 cases \([0-9]+ fixed, seed 1\), 0 failed, '
}

@test "fuzz: the loop itself fails on a traceback, a hang, a wrong exit and a wrong verdict" {
    printf 'import sys\nraise TypeError("x")\n' > "$T/tb.py"
    printf 'import time\ntime.sleep(60)\n' > "$T/hang.py"
    printf 'import sys\nsys.exit(2)\n' > "$T/two.py"
    printf 'import sys\nsys.exit(0)\n' > "$T/zero.py"
    for s in tb hang two zero; do
        run timeout 60 python3 "$ROOT/tests/tools/fuzz_torchrec_plan.py" --cases 2 --timeout 2 --script "$T/$s.py" --keep "$T"
        assert_failure 1
        assert_line --regexp '^fuzz_torchrec_plan: 2 cases \(2 fixed, seed 0\), 2 failed, '
        case $s in
            tb) assert_line --regexp '^fuzz_torchrec_plan: case 0 \(number\): a Python traceback; input kept in ' ;;
            hang) assert_line --regexp '^fuzz_torchrec_plan: case 0 \(number\): ran past 2.0 s' ;;
            two) assert_line --regexp '^fuzz_torchrec_plan: case 0 \(number\): exit 2' ;;
            zero) assert_line --regexp '^fuzz_torchrec_plan: case 0 \(number\): exit 0, expected 1' ;;
        esac
    done
    [ "$(cat "$T/fail-0-0.json")" = 5 ]
}
