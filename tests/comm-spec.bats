#!/usr/bin/env bats
# The communication charge a plan is made with and the one it records (lib/records/comm.h):
# --comm-model specs written with spaces or other spellings of their numbers, or longer than
# the record's old 80-byte cut, are recorded in their canonical form, the very model planned
# with, which as-plan --repair and --export read back and as-eval names the same way; a plan
# record's comm_gbps or comm_model that is not a charge is refused by --repair and --export
# (exit 1 naming the record and the field), never read as 0.
load test_helper/common

# once per file: a small synthetic pool, 2 tasks of 8 tables on 4 shards with the features of
# 2 row blocks, a cost model
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --tables 12 --batch 64 --row-scale 0.001 --seed 1 -o "$D/pool.ast"
    as-features "$D/pool.ast" --row-pieces 2 --tasks 2 --task-tables 8 --shards 4 --seed 0 -o "$D/ft.ast"
    as-bench --tables "$D/pool.ast" --sample 20 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 \
        --trim 1 --flush 8M --threads 1 -q -o "$D/c.ast"
    cat "$D/ft.ast" "$D/c.ast" | as-costfit --seed 0 -q -o "$D/m.ast"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

# split plans of lookup-greedy charged by the model $1, into $2
split_plans() {
    as-plan --alg lookup-greedy --model "$D/m.ast" --split-tables --split-ms 0 --comm-model "$1" --plans-only -q \
        "$D/ft.ast" -o "$2"
}
# the plans' records without the command line and the planning time
plan_fields() {
    as-show --no-header -k plan --full "$1" | jq -c 'del(.plan_ms, .options.plan_ms, .args)'
}
# the distinct comm_model values of a stream's plans
models() {
    as-show --no-header -k plan "$1" | jq -r .comm_model | sort -u
}

@test "--comm-model: spaces around the value and its numbers, other spellings: the canonical form recorded, the same plans" {
    split_plans nvlink8 "$T/nv.ast"
    split_plans "1/2,3/4,5/6" "$T/ab.ast"
    split_plans "10/370,3.5/4,5/6" "$T/c.ast"
    for spec in " nvlink8 " "	nvlink8"; do
        split_plans "$spec" "$T/x.ast"
        [ "$(models "$T/x.ast")" = nvlink8 ]
        diff <(plan_fields "$T/nv.ast") <(plan_fields "$T/x.ast")
    done
    for spec in "1/2, 3/4,5/6" " 1 / 2 ,3/4 , 5/6 " "1/2,3/4,5/6 "; do
        split_plans "$spec" "$T/x.ast"
        [ "$(models "$T/x.ast")" = "1/2,3/4,5/6" ]
        diff <(plan_fields "$T/ab.ast") <(plan_fields "$T/x.ast")
        # --export reads the record's model back: the same TorchRec plans
        as-plan --export "$T/x.ast" --format torchrec -q "$D/ft.ast" > "$T/x.json"
        as-plan --export "$T/ab.ast" --format torchrec -q "$D/ft.ast" | cmp - "$T/x.json"
    done
    split_plans "1e1/370.0,3.50/4e0,5/6" "$T/x.ast"
    [ "$(models "$T/x.ast")" = "10/370,3.5/4,5/6" ]
    diff <(plan_fields "$T/c.ast") <(plan_fields "$T/x.ast")
    # inside a number, a space is an error
    run as-plan --alg lookup-greedy --model "$D/m.ast" --split-tables --comm-model "1 0/2,3/4,5/6" "$D/ft.ast"
    assert_failure 2
    assert_output --partial "--comm-model: '1 0/2,3/4,5/6': the all-to-all's alpha is not a number"
}

@test "--comm-model: a spec over 80 bytes is recorded whole (canonical), --export and --repair read the same model" {
    long="000000000000000000000000000000000000000000000000000000000000000000000000000000000000001/2,3/4,5/6"
    [ "${#long}" -gt 80 ]
    split_plans "$long" "$T/l.ast"
    [ "$(models "$T/l.ast")" = "1/2,3/4,5/6" ]
    run as-plan --export "$T/l.ast" --format torchrec -q "$D/ft.ast"
    assert_success
    # measured and repaired: the record's model charged again, and written again
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --flush 8M --threads 1 -q "$T/l.ast" \
        -o "$T/meas.ast"
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only -q "$D/ft.ast" -o "$T/rep.ast"
    assert_success
    [ "$(models "$T/rep.ast")" = "1/2,3/4,5/6" ]
    # a canonical form longer than a record's name may be: refused when given, never cut
    run as-plan --alg lookup-greedy --model "$D/m.ast" --split-tables --comm-model "nccl:$(printf 'a%.0s' {1..1100})" "$D/ft.ast"
    assert_failure 2
    assert_output --partial "is longer than 1023 bytes (shorter paths, please)"
}

@test "as-eval --comm-model: a spaced spec charges and names the model as its canonical form does" {
    split_plans nvlink8 "$T/nv.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --flush 8M --threads 1 -q "$T/nv.ast" \
        -o "$T/meas.ast"
    as-eval --comm-model "1/2,3/4,5/6" "$T/meas.ast" > "$T/canon.txt"
    grep -q "1/2,3/4,5/6" "$T/canon.txt"
    for spec in "1/2, 3/4,5/6" " 1/2,3/4,5/6 " "1/2,3/4,5/6e0"; do
        as-eval --comm-model "$spec" "$T/meas.ast" > "$T/x.txt"
        diff "$T/canon.txt" "$T/x.txt"
    done
    as-eval --comm-model " nvlink8 " "$T/meas.ast" > "$T/x.txt"
    diff "$T/x.txt" <(as-eval --comm-model nvlink8 "$T/meas.ast")
}

@test "a plan record's comm_gbps or comm_model that is not a charge: --repair and --export refuse it, naming the record and field" {
    as-plan --alg lookup-greedy --model "$D/m.ast" --split-tables --split-ms 0 --plans-only -q "$D/ft.ast" -o "$T/p.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --flush 8M --threads 1 -q "$T/p.ast" \
        -o "$T/meas.ast"
    # unedited, both take it
    as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only -q "$D/ft.ast" -o "$T/ok.ast"
    as-plan --export "$T/meas.ast" --format torchrec -q "$D/ft.ast" > /dev/null
    for v in -5 'float("nan")' '"600"' None 1e9 '"x" * 200'; do
        key=comm_gbps
        case "$v" in '"x"'*) key=comm_model ;; esac
        mp_edit "$T/meas.ast" "kind('plan')[0]['$key'] = $v" > "$T/bad.ast"
        run as-plan --model "$D/m.ast" --repair "$T/bad.ast" --plans-only -q "$D/ft.ast" -o "$T/out.ast"
        assert_failure 1
        assert_output --regexp "bad.ast: record [0-9]+: plan of task 0( \(lookup-greedy\+split\))?: '$key' "
        [ ! -e "$T/out.ast" ]
        run as-plan --export "$T/bad.ast" --format torchrec -q "$D/ft.ast"
        assert_failure 1
        assert_output --regexp "bad.ast: record [0-9]+: plan of task 0( \(lookup-greedy\+split\))?: '$key' "
    done
    mp_edit "$T/meas.ast" "kind('plan')[0]['comm_gbps'] = -5" > "$T/bad.ast"
    run as-plan --export "$T/bad.ast" --format torchrec -q "$D/ft.ast"
    assert_output --partial "'comm_gbps' = -5, not a bandwidth (0: not charged, or GiB/s in [0.001, 1e+06])"
    mp_edit "$T/meas.ast" "kind('plan')[0]['comm_gbps'] = 'fast'" > "$T/bad.ast"
    run as-plan --export "$T/bad.ast" --format torchrec -q "$D/ft.ast"
    assert_output --partial "'comm_gbps' is a string, not a bandwidth"
}
