#!/usr/bin/env bats
# Hostile records (issue 11, items 4, 5, 6 and 8): fields that overflow products, ask for
# huge allocations, smuggle NaN/Inf or negative costs, or amplify a small input; each must be
# bad data (exit 1) naming the input and the record, never exit 3, a crash or a silently
# wrong result. The records are crafted with tests/test_helper/mp.py.
load test_helper/common

FAST="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1"
# cap the address space (KB) of a command run with sh -c, so an allocation sized by a hostile
# field fails; not under AddressSanitizer (make asan), which reserves terabytes up front
vlim() { [ -n "$ASAN_OPTIONS" ] || printf 'ulimit -v %s; ' "$1"; }

# a table record: table ID ROWS DIM (3 lookups in 2 bags on rows 0 and 1)
table() {
    printf '{"kind":"table","id":%s,"rows":%s,"batch":2,"lookups":3,"dim":%s,"source":"t",' "$1" "$2" "$3"
    printf '"offsets":arr("int32",[3],[0,1,3]),"indices":arr("int32",[3],[0,1,1])}'
}
# a features record: feat ID DIM ROWS POOLING SIZE
feat() {
    printf '{"kind":"features","id":%s,"dim":%s,"rows":%s,"pooling":%s,"size":%s,"bins":[1]+[0]*16}' "$1" "$2" "$3" "$4" "$5"
}
TASK='{"kind":"task","id":0,"shards":2,"tables":[0,1],"split":"train"}'

# a real pool, its features, measured costs and a cost model, made once for the file
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --preset tiny -o "$D/pool.ast"
    as-features "$D/pool.ast" -o "$D/f.ast"
    as-bench --tables "$D/pool.ast" --sample 24 --max-tables 3 $FAST -q -o "$D/c.ast"
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 2 -o "$D/m.ast"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

@test "hostile: a dim of 2^62 is refused, not turned into size 0" {
    mp_stream "$(table 0 1000 '2**62')" > "$T/t.ast"
    run as-features "$T/t.ast"
    assert_failure 1
    assert_output --partial "t.ast: record 2: table 0: 'dim' = 4611686018427387904 exceeds the limit of 65536 dim per table (AS_MAX_DIM raises it)"
    # rows x dim past 2^40 elements even within each limit
    mp_stream "$(table 0 '2**30' '2**12')" > "$T/t2.ast"
    run as-features "$T/t2.ast"
    assert_failure 1
    assert_output --partial "record 2: table 0: rows x dim = 1073741824 x 4096 exceeds the limit of 2^40"
}

@test "hostile: as-bench refuses a dim of 2^32+4 instead of measuring dim 4" {
    mp_stream "$(table 0 10 '2**32+4')" > "$T/pool.ast"
    mp_stream '{"kind":"shard","tables":[0]}' > "$T/s.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s.ast"
    assert_failure 1
    assert_output --partial "pool.ast: record 2: table 0: 'dim' = 4294967300 exceeds the limit"
}

@test "hostile: rows of 1e12 are bad data (exit 1), not out of memory (exit 3)" {
    mp_stream "$(table 0 '10**12' 16)" > "$T/t.ast"
    run as-features "$T/t.ast"
    assert_failure 1
    assert_output --partial "record 2: table 0: 'rows' = 1000000000000 exceeds the limit of 68719476736 rows per table (AS_MAX_ROWS raises it)"
    # a table of 2^36 rows with 3 lookups is fine: its features cost what its lookups cost
    mp_stream "$(table 0 '2**36' 16)" > "$T/big.ast"
    run sh -c "$(vlim 2000000)as-features '$T/big.ast' | as-show --no-header | jq -c '[.rows,.distinct,.bins[0:2],.bytes_fp16]'"
    assert_success
    assert_output '[68719476736,2,[0.5,0.5],2199023255552]'
}

@test "hostile: table ids beyond the limit (1e12, 2^63-1) are exit 1, not a huge allocation or an overflow" {
    mp_stream "$(table 0 10 8)" > "$T/pool.ast"
    mp_stream '{"kind":"shard","tables":[0,10**12]}' > "$T/s.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s.ast"
    assert_failure 1
    assert_output --partial "s.ast: record 2: shard: tables[1] = 1000000000000 exceeds the largest table id 1048575 (AS_MAX_TABLE_ID raises it)"
    mp_stream '{"kind":"shard","tables":[2**63-1]}' > "$T/s2.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s2.ast"
    assert_failure 1
    assert_output --partial "tables[0] = 9223372036854775807 exceeds the largest table id"
    mp_stream "$(table '10**12' 10 8)" > "$T/pool2.ast"
    run as-bench --tables "$T/pool2.ast" --sample 1 $FAST
    assert_failure 1
    assert_output --partial "pool2.ast: record 2: table: 'id' = 1000000000000 exceeds the limit"
    mp_stream "$(feat '10**12' 8 10 1 0)" > "$T/f.ast"
    run as-plan --alg random "$T/f.ast"
    assert_failure 1
    assert_output --partial "f.ast: record 2: features: 'id' = 1000000000000 exceeds the limit"
}

@test "hostile: shards of 1e8 or 1e12 in a plan are refused by as-bench, as-eval and as-costfit" {
    mp_stream "$(table 0 10 8)" > "$T/pool.ast"
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":10**8,"tables":[0],"assign":[0]}' > "$T/p.ast"
    [ "$(stat -c %s "$T/p.ast")" -lt 600 ]
    run sh -c "$(vlim 2000000)as-bench --tables '$T/pool.ast' $FAST '$T/p.ast'"
    assert_failure 1
    assert_output --partial "p.ast: record 2: plan of task 0: 'shards' = 100000000 exceeds the limit of 65536 shards per task or plan (AS_MAX_SHARDS raises it)"
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":10**12,"tables":[0],"assign":[0],"cost_ms":[1.0],"cost_kind":"measured"}' > "$T/p2.ast"
    run as-eval "$T/p2.ast"
    assert_failure 1
    assert_output --partial "p2.ast: record 2: plan of task 0: 'shards' = 1000000000000 exceeds the limit"
    mp_stream "$(feat 0 8 10 1 0)" > "$T/f.ast"
    run as-costfit --predict "$D/m.ast" "$T/f.ast" "$T/p2.ast"
    assert_failure 1
    assert_output --partial "p2.ast: record 2: plan of task 0: 'shards' = 1000000000000 exceeds the limit"
    # the limit can be raised for a real need
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":70000,"tables":[0],"assign":[69999]}' > "$T/p3.ast"
    run as-bench --tables "$T/pool.ast" $FAST -q "$T/p3.ast" -o /dev/null
    assert_failure 1
    AS_MAX_SHARDS=70000 run as-bench --tables "$T/pool.ast" $FAST -q "$T/p3.ast" -o /dev/null
    assert_success
    AS_MAX_SHARDS=0 run as-bench --tables "$T/pool.ast" $FAST -q "$T/p3.ast" -o /dev/null
    assert_failure 2
    assert_output --partial "AS_MAX_SHARDS: '0' is not a count"
}

@test "hostile: tasks over the shard, table and pair limits are refused by as-plan" {
    mp_stream "$(feat 0 8 10 1 0)" "$(feat 1 8 10 1 0)" '{"kind":"task","id":4,"shards":10**12,"tables":[0,1]}' > "$T/t.ast"
    run as-plan --alg random "$T/t.ast"
    assert_failure 1
    assert_output --partial "t.ast: record 4: task 4: 'shards' = 1000000000000 exceeds the limit"
    mp_stream "$(feat 0 8 10 1 0)" '{"kind":"task","id":4,"shards":2,"tables":list(range(70000))}' > "$T/t2.ast"
    run as-plan --alg random "$T/t2.ast"
    assert_failure 1
    assert_output --partial "record 3: task 4: 'tables' lists 70000 tables, more than the limit of 65536"
    mp_stream "$(feat 0 8 10 1 0)" '{"kind":"task","id":4,"shards":65536,"tables":list(range(65536))}' > "$T/t3.ast"
    run as-plan --alg random "$T/t3.ast"
    assert_failure 1
    assert_output --partial "record 3: task 4: 65536 tables x 65536 shards exceeds the limit of 4194304"
}

@test "hostile: shards x a huge --mem-cap does not wrap to a cap of 0 bytes" {
    run sh -c "as-features '$D/f.ast' --drop-tasks --tasks 2 --test-tasks 1 --task-tables 16 --shards 16 --mem-cap 1073741824G | as-show --kind task | grep -o '\"shards\":16,\"mem_cap\":[0-9]*'"
    assert_success
    assert_output '"shards":16,"mem_cap":1152921504606846976
"shards":16,"mem_cap":1152921504606846976'
}

@test "hostile: as-plan with tasks but no features record at all" {
    mp_stream "$TASK" > "$T/t.ast"
    run as-plan --alg random "$T/t.ast"
    assert_failure 1
    assert_output --partial "task 0: table 0 has no features record in the input"
}

@test "hostile: NaN and Inf pooling or size, and bins outside [0,1], are bad data" {
    for bad in "$(feat 0 8 10 nan 0)" "$(feat 0 8 10 inf 0)" "$(feat 0 8 10 1 nan)" "$(feat 0 8 10 1 -inf)" "$(feat 0 8 10 -1 0)"; do
        mp_stream "$bad" "$(feat 1 8 10 1 0)" "$TASK" > "$T/f.ast"
        run as-plan --alg size-greedy "$T/f.ast"
        assert_failure 1
        assert_output --partial "f.ast: record 2: features of table 0: '"
    done
    mp_stream "$(feat 0 8 10 nan 0)" > "$T/f.ast"
    run as-features "$T/f.ast"
    assert_failure 1
    assert_output --partial "record 2: features of table 0: 'pooling' is not finite (nan)"
    mp_stream '{"kind":"features","id":0,"dim":8,"rows":10,"pooling":1,"size":0,"bins":[2.0]+[0]*16}' > "$T/b.ast"
    run as-features "$T/b.ast"
    assert_failure 1
    assert_output --partial "'bins[0]' = 2 is outside 0..1"
}

@test "hostile: NaN, infinite, negative and zero costs are refused as training data" {
    mp_stream "$(feat 0 8 10 1 0)" > "$T/f.ast"
    for c in nan inf -inf -1.5 0 0.0; do
        mp_stream "{\"kind\":\"cost\",\"tables\":[0],\"cost_ms\":$c,\"error\":None}" > "$T/c.ast"
        run as-costfit --epochs 1 -o "$T/m.ast" "$T/f.ast" "$T/c.ast"
        assert_failure 1
        assert_output --partial "c.ast: record 2: cost: 'cost_ms'"
        [ ! -e "$T/m.ast" ]
    done
    # a cost not measured (nil, or with an error) is still skipped, not an error
    mp_stream '{"kind":"cost","tables":[0],"cost_ms":None,"error":"oops"}' > "$T/c.ast"
    run as-costfit --epochs 1 -o "$T/m.ast" "$D/f.ast" "$D/c.ast" "$T/c.ast"
    assert_success
    assert_output --partial "skipped 1 cost record(s)"
    # plans: an infinite shard cost is refused, nil is "not measured"
    mp_stream '{"kind":"plan","task":0,"alg":"random","shards":2,"tables":[0,1],"assign":[0,1],"cost_ms":[1.0,inf],"cost_kind":"measured"}' > "$T/p.ast"
    run as-eval "$T/p.ast"
    assert_failure 1
    assert_output --partial "p.ast: record 2: plan of task 0: cost_ms[1] is not finite"
}

@test "hostile: as-costfit --predict takes the infeasible plans as-plan writes" {
    # a cap that leaves tables unplaced: as-plan exits 1 but writes the plans
    run sh -c "as-features '$D/f.ast' --drop-tasks --tasks 1 --test-tasks 0 --task-tables 8 --shards 2 | as-plan --alg size-greedy --mem-cap 600K --plans-only -o '$T/p.ast'"
    assert_failure 1
    assert_output --partial "plan infeasible"
    as-show --kind plan "$T/p.ast" | jq -e '.feasible == false and (.assign | index(-1)) != null'
    run sh -c "as-costfit -q --predict '$D/m.ast' '$D/f.ast' '$T/p.ast' | as-show --kind plan | jq -c '[(.pred_ms | length), (.pred_ms | map(type == \"number\") | all), .pred_max_ms]'"
    assert_success
    assert_output '[2,true,null]'
    # by hand: shard 0 holds table 0, shard 1 is empty, table 1 is unplaced
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":2,"tables":[0,1],"assign":[0,-1]}' > "$T/h.ast"
    run sh -c "as-costfit -q --predict '$D/m.ast' '$D/f.ast' '$T/h.ast' | as-show --kind plan | jq -c '[(.pred_ms[0] != 0), .pred_ms[1], .pred_max_ms]'"
    assert_success
    assert_output '[true,0,null]'
    mp_stream '{"kind":"shard","tables":[0]}' > "$T/s.ast"
    single=$(as-costfit -q --predict "$D/m.ast" "$D/f.ast" "$T/s.ast" | as-show --kind shard | jq .pred_ms)
    run sh -c "as-costfit -q --predict '$D/m.ast' '$D/f.ast' '$T/h.ast' | as-show --kind plan | jq .pred_ms[0]"
    assert_output "$single"
    # -2: table 1 data parallel, on both shards: each shard gains its cost alone / 2
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":2,"tables":[0,1],"assign":[0,-2]}' > "$T/dp.ast"
    mp_stream '{"kind":"shard","tables":[1]}' > "$T/s1.ast"
    one=$(as-costfit -q --predict "$D/m.ast" "$D/f.ast" "$T/s1.ast" | as-show --kind shard | jq .pred_ms)
    run sh -c "as-costfit -q --predict '$D/m.ast' '$D/f.ast' '$T/dp.ast' | as-show --kind plan |
        jq -c --argjson s0 $single --argjson s1 $one '[(.pred_ms[0] - \$s0 - \$s1 / 2 | fabs < 1e-9), (.pred_ms[1] - \$s1 / 2 | fabs < 1e-9), .pred_max_ms == .pred_ms[0]]'"
    assert_success
    assert_output '[true,true,true]'
    # assign entries below -2 or past the shards are still refused
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":2,"tables":[0,1],"assign":[0,-3]}' > "$T/b.ast"
    run as-costfit --predict "$D/m.ast" "$D/f.ast" "$T/b.ast"
    assert_failure 1
    assert_output --partial "b.ast: record 2: plan of task 0: assign[1] = -3 is not a shard of 0..1, -1 (unplaced) or -2 (data parallel)"
}

@test "hostile: a second model record is refused" {
    cat "$D/m.ast" "$D/m.ast" > "$T/m2.ast"
    n=$(as-show -c --no-header "$D/m.ast" | awk '{s += $2} END {print s + 1}')
    run sh -c "as-costfit --predict '$T/m2.ast' '$D/f.ast' > /dev/null"
    assert_failure 1
    assert_output --partial "m2.ast: record $((n + 2)): a second \`model\` record"
    run sh -c "as-costfit --predict '$D/m.ast' '$D/f.ast' > /dev/null"
    assert_success
}

@test "hostile: a model declaring 65536^3 layers is refused before any allocation" {
    P='{"kind":"model","model":"costmodel","format_version":1,"features":["dim","rows","pooling","size"]+["bin%d" % i for i in range(17)],"zscored":["dim","rows","pooling"],"norm_mean":[0,0,0],"norm_std":[1,1,1],"y_scale":1.0,"layers":[21,65536,65536,65536,1],"nparams":9121,"params":arr("float32",[2],[0,0])}'
    mp_stream "$P" > "$T/m.ast"
    run sh -c "$(vlim 1000000)as-costfit --predict '$T/m.ast' /dev/null"
    assert_failure 1
    assert_output --partial "m.ast: record 2: cost model record: nparams does not match layers [21, 65536, 65536, 65536, 1] (8591572993 parameters)"
    mp_stream "${P/9121/8591572993}" > "$T/m2.ast"
    run sh -c "$(vlim 1000000)as-costfit --predict '$T/m2.ast' /dev/null"
    assert_failure 1
    assert_output --partial "m2.ast: record 2: cost model record: params must be float32 [8591572993]"
}

@test "hostile: as-show -c counts every kind, however many and however long" {
    args=()
    for i in $(seq 300); do args+=("{\"kind\":\"k$i\"}"); done
    mp_stream "${args[@]}" > "$T/k.ast"
    run sh -c "as-show -c '$T/k.ast' | wc -l"
    assert_output 301
    run sh -c "as-show -c '$T/k.ast' | tail -1"
    assert_output "$(printf 'k300\t1')"
    long=$(printf 'x%.0s' $(seq 100))
    mp_stream "{\"kind\":\"${long}a\"}" "{\"kind\":\"${long}b\"}" "{\"kind\":\"${long}a\"}" > "$T/l.ast"
    run as-show -c --no-header "$T/l.ast"
    assert_success
    assert_output "$(printf '%sa\t2\n%sb\t1' "$long" "$long")"
}

@test "hostile: a small stream of nils cannot make as-show take gigabytes" {
    mp_stream '{"kind":"x","pad":nils(5000000)}' > "$T/n.ast"
    [ "$(stat -c %s "$T/n.ast")" -lt 4000 ]
    run sh -c "$(vlim 1000000)as-show -c '$T/n.ast'"
    assert_failure 1
    assert_output --partial "n.ast: record 2: record holds more than 4194304 msgpack objects, the limit (AS_MAX_OBJECTS raises it)"
    AS_MAX_OBJECTS=8M run as-show -c --no-header "$T/n.ast"
    assert_success
    assert_output "$(printf 'x\t1')"
}
