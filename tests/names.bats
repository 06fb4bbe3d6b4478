#!/usr/bin/env bats
# Issue 50, "nothing lost, nothing silently wrong": one rule for names and labels (a table's
# name, a plan's alg and split, cost_device, cost_weights_type, cost_optimizer, comm_model, a
# table's data_type: as_name_bad, lib/core/msgobj.h; bad_name in pipelines/torchrec_plan.py),
# refused at the door with exit 1; messages never carry a control character raw; as-eval's
# CSV quoted (RFC 4180); --replicate's plans name their comm_model; --export --format text
# prints a refined plan's own figures; as-bench refuses a table's bad data_type as bad data.
load test_helper/common

setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --preset tiny --seed 0 -o "$D/pool.ast"
    as-features "$D/pool.ast" --tasks 4 --task-tables 8 --shards 3 --seed 0 -o "$D/ft.ast"
    as-bench --tables "$D/pool.ast" --sample 30 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 \
        --trim 1 --flush 8M --threads 1 -q -o "$D/c.ast"
    cat "$D/ft.ast" "$D/c.ast" | as-costfit --seed 0 -q -o "$D/m.ast"
}

# a model config of the given tables (a JSON array body) into $T/c.json
cfg() {
    printf '{"name": "t", "module_path": "sparse.ebc", "topology": {"world_size": 2, "local_size": 2, "hbm_gib": 16, "batch_size_per_rank": 8}, "tables": [%s]}\n' "$1" > "$T/c.json"
}

# a measured plan of two shards, tables 0 and 1, label $1 (a Python expression), extra fields $2
plan() {
    mp_stream "{'kind':'plan','task':0,'alg':$1,'shards':2,'tables':[0,1],'assign':[0,1],'cost_ms':[2.0,1.0],'cost_kind':'measured'${2:+,$2}}"
}

# no raw control character (C0 but the line ends, DEL, the C1 bytes of UTF-8, U+2028/9) in $output
assert_no_ctrl() {
    run python3 -c 'import sys, re; t = sys.stdin.read(); sys.exit(1 if re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", t) else 0)' <<< "$output"
    assert_success
}

@test "names: as-convert --config refuses a table name with U+2028, as torchrec_plan.py does (one rule)" {
    cfg '{"name": "a\u2028b", "num_embeddings": 100, "embedding_dim": 8}'
    run as-convert --config "$T/c.json" -o "$T/x.ast"
    assert_failure 1
    assert_output --partial "table 0"
    assert_output --partial "name: holds a line separator (U+2028 at offset 1)"
    assert_no_ctrl
    [ ! -e "$T/x.ast" ]
    # the same name in torchrec_plan.py's config reader: refused too
    run python3 -c "import sys; sys.path.insert(0, '$ROOT/pipelines'); import torchrec_plan as t; print(t.bad_name('a\u2028b'), t.bad_name('a'), t.bad_name('caf\u00e9'))"
    assert_output "holds a line separator (U+2028 at offset 1) None None"
    # U+2029 and a C1 control too; a printable non-ASCII name passes
    cfg '{"name": "a\u2029b", "num_embeddings": 100, "embedding_dim": 8}'
    run as-convert --config "$T/c.json" -o "$T/x.ast"
    assert_failure 1
    assert_output --partial "U+2029"
    cfg '{"name": "caf\u00e9 \u20ac", "num_embeddings": 100, "embedding_dim": 8}'
    run as-convert --config "$T/c.json" -o "$T/x.ast"
    assert_success
    # the config's module_path (TorchRec's JSON carries it; torchrec_plan.py refuses it too)
    sed -i 's/"sparse.ebc"/"sparse\\u001b[2J.ebc"/' "$T/c.json"
    run as-convert --config "$T/c.json" -o "$T/y.ast"
    assert_failure 1
    assert_output --partial "module_path: holds a control character (byte 0x1b at offset 6)"
    assert_no_ctrl
}

@test "names: a table or features record whose name holds U+2028 is refused by as-features and as-plan" {
    as-convert --synth --preset tiny --seed 0 -o "$T/p.ast"
    mp_edit "$T/p.ast" "kind('table')[1]['name'] = 'x\u2028y'" > "$T/bad.ast"
    run as-features "$T/bad.ast" -o "$T/f.ast"
    assert_failure 1
    assert_output --partial "table 1: name: holds a line separator (U+2028"
    mp_edit "$BATS_FILE_TMPDIR/ft.ast" "kind('features')[0]['name'] = 'x\u2029y'" > "$T/badf.ast"
    run as-plan --alg size-greedy "$T/badf.ast" -o "$T/pl.ast"
    assert_failure 1
    assert_output --partial "name: holds a line separator (U+2029"
}

@test "names: as-eval refuses an alg, split, cost_device, cost_weights_type, cost_optimizer or comm_model that breaks the rule, naming the field" {
    plan "'size-greedy\u2028x'" > "$T/a.ast"
    run as-eval "$T/a.ast"
    assert_failure 1
    assert_output --partial "record 2: plan of task 0: 'alg' holds a line separator (U+2028"
    plan "'size-greedy\x1b[31mRED'" > "$T/a.ast"
    run as-eval --format csv "$T/a.ast"
    assert_failure 1
    assert_output --partial "'alg' holds a control character (byte 0x1b at offset 11)"
    assert_no_ctrl
    # a newline in alg used to forge a CSV row (max_ms 0.001): refused
    plan "'a\n0,0,,forged,2,2,measured,0.001'" > "$T/a.ast"
    run as-eval --format csv --table plans "$T/a.ast"
    assert_failure 1
    assert_output --partial "'alg' holds a control character (byte 0x0a at offset 1)"
    refute_output --partial "forged"
    for f in split cost_device cost_weights_type cost_optimizer comm_model; do
        plan "'size-greedy'" "'$f':'x\x07y'" > "$T/a.ast"
        run as-eval "$T/a.ast"
        assert_failure 1
        assert_output --partial "plan of task 0: '$f' holds a control character (byte 0x07 at offset 1)"
    done
    # a label is not empty (as-bench's cost_* fields may be: no shard measured)
    for f in split comm_model; do
        plan "'size-greedy'" "'$f':''" > "$T/a.ast"
        run as-eval "$T/a.ast"
        assert_failure 1
        assert_output --partial "'$f' is empty"
    done
    plan "'size-greedy'" "'cost_device':''" > "$T/a.ast"
    run as-eval -q "$T/a.ast"
    assert_success
    # as-plan --export and as-bench read plans with the same reader
    plan "'size-greedy'" "'split':'te\u2028st'" > "$T/a.ast"
    run as-plan --export "$T/a.ast" --format text "$BATS_FILE_TMPDIR/ft.ast"
    assert_failure 1
    assert_output --partial "'split' holds a line separator"
    run as-bench --tables "$BATS_FILE_TMPDIR/pool.ast" --device cpu -q "$T/a.ast" -o "$T/b.ast"
    assert_failure 1
    assert_output --partial "'split' holds a line separator"
}

@test "names: a task whose split breaks the rule is refused by as-plan" {
    mp_edit "$BATS_FILE_TMPDIR/ft.ast" "kind('task')[0]['split'] = 'tr\x1bain'" > "$T/t.ast"
    run as-plan --alg size-greedy "$T/t.ast" -o "$T/pl.ast"
    assert_failure 1
    assert_output --partial "task 0: split: holds a control character (byte 0x1b at offset 2)"
    assert_no_ctrl
}

@test "names: messages and usage errors escape control characters from the data and the command line" {
    run as-eval --format "$(printf 'x\033[2Jy')" /dev/null
    assert_failure 2
    assert_output --partial 'x\x1b[2Jy'
    assert_no_ctrl
    run as-eval "$(printf '/nonexistent/a\nb\302\233c')"
    assert_failure
    assert_output --partial '/nonexistent/a\nb\u009bc'
    assert_no_ctrl
}

@test "names: as-eval's CSV quotes a label with a comma and a quote (RFC 4180): it round-trips through Python's csv" {
    plan "'own,\"json\" \u00e9'" > "$T/a.ast"
    plan "'size-greedy'" "'split':'te,st'" > "$T/b.ast"
    for t in plans shards summary ranks; do
        run sh -c "cat '$T/a.ast' '$T/b.ast' | as-eval -q --format csv --table $t > '$T/$t.csv'"
        assert_success
        run python3 -c "
import csv, sys
rows = list(csv.reader(open('$T/$t.csv', newline='')))
head = rows[0]
assert all(len(r) == len(head) for r in rows if r), [len(r) for r in rows]
algs = sorted(r[head.index('alg')] for r in rows[1:] if r)
print(algs)
if 'split' in head: print(sorted(r[head.index('split')] for r in rows[1:] if r))"
        assert_success
        assert_line --partial "'own,\"json\" é'"
        assert_line --partial "'size-greedy'"
    done
    run python3 -c "
import csv
rows = list(csv.reader(open('$T/plans.csv', newline='')))
print(sorted(r[rows[0].index('split')] for r in rows[1:]))"
    assert_output "['', 'te,st']"
    # the verdict's fields of several labels are quoted whole
    run sh -c "cat '$T/a.ast' '$T/b.ast' | as-eval -q --format csv --table verdict"
    assert_success
    run python3 -c "
import csv, io, sys
rows = list(csv.reader(io.StringIO(sys.argv[1])))
assert len(rows) == 2 and len(rows[0]) == len(rows[1]), rows
print(sorted([rows[1][rows[0].index('winner')], rows[1][rows[0].index('runner_up')]]))" "$output"
    assert_output "['own,\"json\" é', 'size-greedy']"
    # markdown: a '|' in a label is escaped, not a new cell
    plan "'a|b'" > "$T/c.ast"
    run sh -c "as-eval -q --format markdown --table plans '$T/c.ast' | grep -F 'a\\|b'"
    assert_success
}

@test "names: as-plan --replicate --comm-model: table-wise plans (no --split-tables) carry comm_model" {
    D="$BATS_FILE_TMPDIR"
    as-plan -q --alg cost-greedy --model "$D/m.ast" --replicate --comm-model nvlink8 --plans-only "$D/ft.ast" -o "$T/dp.ast"
    run sh -c "as-show --no-header -k plan --full '$T/dp.ast' | jq -c '[.comm_model, .comm_gbps]' | sort -u"
    assert_output '["nvlink8",0]'
}

@test "names: as-plan --export --format text prints a refined plan's own moves, swaps and predicted max before" {
    D="$BATS_FILE_TMPDIR"
    as-plan -q --alg size-greedy --model "$D/m.ast" --refine --plans-only "$D/ft.ast" -o "$T/r.ast"
    # set figures no rebuild could invent
    mp_edit "$T/r.ast" "
for r in kind('plan'):
    r['refine'].update({'moves': 3, 'swaps': 1, 'placed': 0, 'ms': 0.25, 'pred_max_before': 36.83, 'stop': 'steps'})" > "$T/r2.ast"
    run as-plan --export "$T/r2.ast" --task 0 --model "$D/m.ast" --format text "$D/ft.ast"
    assert_success
    assert_line "  refined: 3 moves, 1 swap in 0.250 ms (step budget spent); predicted max before 36.8300 ms"
    # a refine map of the wrong shape is bad data
    mp_edit "$T/r.ast" "kind('plan')[0]['refine']['swaps'] = -1" > "$T/r3.ast"
    run as-plan --export "$T/r3.ast" --model "$D/m.ast" --format text "$D/ft.ast"
    assert_failure 1
    assert_output --partial "refine: 'swaps' = -1 is outside"
}

@test "names: a plan's negative mem_bytes is refused, not read as 0" {
    plan "'size-greedy'" "'mem_bytes':[100,-5]" > "$T/a.ast"
    run as-eval "$T/a.ast"
    assert_failure 1
    assert_output --partial "record 2: plan of task 0: mem_bytes[1] is -5, not a byte count >= 0"
}

@test "names: as-bench refuses a table's data_type of 7, nil or \"\" with exit 1 naming the table, and int8 under --weights-type tables; FP16 is fp16" {
    D="$BATS_FILE_TMPDIR"
    as-plan -q --alg size-greedy --plans-only "$D/ft.ast" -o "$T/all.ast"
    mp_edit "$T/all.ast" "recs[:] = [r for r in recs if r.get('kind') != 'plan' or r['task'] == 0]" > "$T/p.ast"
    T0=$(as-show --no-header -k plan "$T/p.ast" | jq '.tables[0]')
    for v in 7 None "''" "'fp1\x1b6'"; do
        mp_edit "$D/pool.ast" "[r.__setitem__('data_type', $v) for r in kind('table') if r['id'] == $T0]" > "$T/pool.ast"
        run as-bench --tables "$T/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/p.ast" -o "$T/m.ast"
        assert_failure 1
        assert_output --partial "table $T0: data_type"
        assert_output --partial "not a data type (fp32, fp16, bf16, int8, int4, int2)"
        assert_no_ctrl
        # as-features refuses it too
        run as-features "$T/pool.ast" -o "$T/f.ast"
        assert_failure 1
        assert_output --partial "table $T0: data_type"
    done
    # a type as-convert accepts but the kernels do not measure: bad data (1), not the environment (3)
    mp_edit "$D/pool.ast" "[r.__setitem__('data_type', 'int8') for r in kind('table') if r['id'] == $T0]" > "$T/pool.ast"
    run as-bench --tables "$T/pool.ast" --weights-type tables --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/p.ast" -o "$T/m.ast"
    assert_failure 1
    assert_output --partial "table $T0: its weights are int8; the kernels measure fp32, fp16 and bf16"
    # any case, as as-convert --config accepts it: FP16 is measured as fp16
    mp_edit "$D/pool.ast" "[r.__setitem__('data_type', 'FP16') for r in kind('table')]" > "$T/pool.ast"
    run as-bench --tables "$T/pool.ast" --weights-type tables --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/p.ast" -o "$T/m.ast"
    assert_success
    # (fp16 with SGD is the default kind: no cost_weights_type written)
    run sh -c "as-show --no-header -k plan '$T/m.ast' | jq -c '[.cost_weights_type, (.cost_ms | length)]' | sort -u"
    assert_output '[null,3]'
}

@test "names: as-eval refuses a model record whose held-out split breaks the rule (printed in the tables' heading)" {
    mp_edit "$BATS_FILE_TMPDIR/m.ast" "kind('model')[0]['heldout']['split'] = 'sh\x1bards'" > "$T/m.ast"
    plan "'size-greedy'" > "$T/a.ast"
    run sh -c "cat '$T/m.ast' '$T/a.ast' | as-eval -q"
    assert_failure 1
    assert_output --partial "record 2: model: 'split' holds a control character (byte 0x1b at offset 2)"
    assert_no_ctrl
    run sh -c "cat '$BATS_FILE_TMPDIR/m.ast' '$T/a.ast' | as-eval -q"
    assert_success
}

@test "names: as-plan --export --alg =LABEL takes a label with commas whole (it runs to the end of the list)" {
    D="$BATS_FILE_TMPDIR"
    as-plan --alg size-greedy,lookup-greedy --plans-only -q "$D/ft.ast" -o "$T/p.ast"
    mp_edit "$T/p.ast" "[p.__setitem__('alg', 'own,x') for p in kind('plan') if p['alg'] == 'lookup-greedy']" > "$T/q.ast"
    run as-plan -q --export "$T/q.ast" --task 0 --alg "=own,x" --format torchrec "$D/ft.ast"
    assert_success
    [ "$(jq -r .alg <<< "$output")" = "own,x" ]
    # after other tokens; the label alone, once
    run sh -c "as-plan -q --export '$T/q.ast' --alg 'size-greedy,=own,x' --format torchrec '$D/ft.ast' | jq -r .alg | sort | uniq -c"
    assert_success
    assert_line --regexp "^ +4 own,x$"
    assert_line --regexp "^ +4 size-greedy$"
    # a label exactly: =own is no plan
    run as-plan -q --export "$T/q.ast" --alg "=own" --format torchrec "$D/ft.ast"
    assert_failure 1
}

@test "names: as-eval --plot: a label with a double quote stays one column of gnuplot's data, its row plotted" {
    D="$BATS_FILE_TMPDIR"
    # a gnuplot that keeps the files of the plot it draws, then draws it
    real=$(command -v gnuplot)
    mkdir -p "$T/fake" "$T/keep"
    printf '#!/bin/sh\ncp "$(dirname "$1")"/* %s/\nexec %s "$@"\n' "$T/keep" "$real" > "$T/fake/gnuplot"
    chmod +x "$T/fake/gnuplot"
    plan "'a\"b c'" > "$T/a.ast"
    plan "'size-greedy'" > "$T/b.ast"
    cat "$T/a.ast" "$T/b.ast" > "$T/ab.ast"
    PATH="$T/fake:$PATH" as-eval -q --plot "$T/p.png" "$T/ab.ast" > /dev/null
    [ -s "$T/p.png" ]
    # gnuplot reads both rows' balance (column 3): before, the quote cut the label short and
    # shifted that row's numbers
    run "$real" -e "stats '$T/keep/summary.dat' using 3 nooutput; print STATS_records, STATS_invalid"
    assert_output "2 0"
}

@test "names: a cost record's device and a cost model's devices and split follow the names' rule (as-costfit, as-plan --model)" {
    D="$BATS_FILE_TMPDIR"
    mp_edit "$D/c.ast" "kind('cost')[0]['device'] = 'cpu\x1b[2J'" > "$T/c.ast"
    run sh -c "cat '$D/ft.ast' '$T/c.ast' | as-costfit --seed 0 -q -o '$T/m.ast'"
    assert_failure 1
    assert_output --partial "'device' holds a control character"
    assert_no_ctrl
    [ ! -e "$T/m.ast" ]
    for k in cost_device cost_device_kind train_device split; do
        mp_edit "$D/m.ast" "kind('model')[0]['$k'] = 'x\u2028y'" > "$T/m-$k.ast"
        run as-plan --alg cost-greedy --model "$T/m-$k.ast" --plans-only "$D/ft.ast" -o "$T/p.ast"
        assert_failure 1
        assert_output --partial "'$k' holds a line separator"
        assert_no_ctrl
        [ ! -e "$T/p.ast" ]
    done
    # the model as it was: read
    as-plan --alg cost-greedy --model "$D/m.ast" --plans-only -q "$D/ft.ast" -o "$T/p.ast"
}
