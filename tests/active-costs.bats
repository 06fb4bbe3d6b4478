#!/usr/bin/env bats
# pipelines/active-costs: the cost dataset measured where an ensemble of cost models disagrees
# most (the fake timer, a tiny pool, short fits: seconds); its stopping rules, the summary,
# determinism under a seed, usage errors.
load test_helper/common

# the pool (tiny preset: 32 tables) and its features with row pieces, once for the file
setup_file() {
    as-convert --synth --preset tiny -o "$BATS_FILE_TMPDIR/pool.ast"
    as-features "$BATS_FILE_TMPDIR/pool.ast" --row-pieces 2,4 -o "$BATS_FILE_TMPDIR/ft.ast"
}

# active ARGS...: the loop on the tiny pool into $T/c.ast, summary $T/c.md
active() {
    D="$BATS_FILE_TMPDIR"
    AS_BENCH_FAKE_NOISE=quiet "$ROOT/pipelines/active-costs" --bin "$BIN" --tables "$D/pool.ast" --features "$D/ft.ast" \
        --max-tables 4 --candidates 60 --fit-opts "--epochs 20" --bench-opts "--warmup 1 --runs 3 --trim 1 --flush 1M --threads 1 --no-calibrate -q" \
        --sample-opts "--sample-pieces 0.3 --piece-blocks 2,4" -o "$T/c.ast" --summary "$T/c.md" "$@"
}

@test "active-costs: to the budget, every table alone, the chosen batches measured, the summary says why it stopped" {
    run active --budget 14 --init 4 --val 3 --batch 2 --patience 100
    assert_success
    assert_output --partial "active-costs: round 0: 7 shards measured of the budget 14, validation R²"
    assert_output --partial "ETA at most"
    assert_output --partial "active-costs: stopped after round 3, 13 shards measured (and every table alone): budget: the next batch of 2 would pass 14"
    # 32 singles, 4 + 3 random, 3 batches of 2: one stream of cost records, each measured once
    run as-show --count "$T/c.ast"
    assert_line "cost	45"
    [ "$(as-show --kind cost "$T/c.ast" | jq -c 'select(.origin == "single")' | wc -l)" -eq 32 ]
    [ "$(as-show --kind cost "$T/c.ast" | jq -c 'select(.origin == "shard")' | wc -l)" -eq 9 ]
    # in order: round 0, the 3 batches, the validation set; a chosen shard was measured nowhere
    # else (its tables and pieces; the random draws may repeat each other, as --sample does)
    as-show --kind cost "$T/c.ast" | jq -c '[(.tables | sort), .pieces]' > "$T/keys"
    for i in $(seq 37 42); do [ "$(grep -cxF "$(sed -n "${i}p" "$T/keys")" "$T/keys")" -eq 1 ]; done
    # on one scale: the validation set and every batch corrected to round 0's reference level
    # (as-bench --reference-level: the fake timer's levels are alike anyway, so its arguments)
    [ "$(as-show --kind cost "$T/c.ast" | jq -c '.reference.level_ms' | sort -u | wc -l)" -eq 1 ]
    run sh -c "as-show --kind header '$T/c.ast' | jq -c '[(.args | any(.[]; . == \"--reference-level\")), (.args | any(.[]; . == \"--singles\"))]'"
    assert_output "$(printf '%s\n' '[false,true]' '[true,false]' '[true,false]' '[true,false]' '[true,false]')"
    grep -qF "13 shards measured (budget 14) and every table alone; stopped: budget" "$T/c.md"
    [ "$(grep -c '^| [0-9] |' "$T/c.md")" -eq 4 ]
    # as-costfit trains on it as on a random dataset
    cat "$BATS_FILE_TMPDIR/ft.ast" "$T/c.ast" | as-costfit -q --epochs 5 -o "$T/m.ast"
}

@test "active-costs --col-singles N: round 0 also measures the N heaviest tables' column half and quarter alone, outside the budget" {
    run active --budget 14 --init 4 --val 3 --batch 2 --patience 100 --col-singles 2
    assert_success
    assert_output --partial "round 0: every table alone and 4 random shards, the column halves and quarters of the 2 heaviest tables alone"
    assert_output --partial "stopped after round 3, 13 shards measured (and every table alone, 4 column halves and quarters of the heaviest tables alone): budget"
    # the tiny pool's dims are multiples of 16: a half and a quarter of each of 2 tables,
    # one table each, from column 0, in round 0's stream (after its random shards)
    run as-show --count "$T/c.ast"
    assert_line "cost	49"
    [ "$(as-show --kind cost "$T/c.ast" | sed -n '37,40p' | jq -c 'select((.tables | length) == 1 and .pieces[0][0] == 0)' | wc -l)" -eq 4 ]
    grep -qF "13 shards measured (budget 14) and every table alone, 4 column halves and quarters of the heaviest tables alone; stopped" "$T/c.md"
    grep -qF "| 0 | every table alone, 4 column halves and quarters of the heaviest tables alone, 4 random, 3 random to validate on |" "$T/c.md"
    run "$ROOT/pipelines/active-costs" --tables x --features y -o z --col-singles two
    assert_failure 2
}

@test "active-costs: stops when the validation R² no longer rises, and the same seed chooses the same shards" {
    run active --budget 30 --init 4 --val 3 --batch 2 --tol 5 --patience 2 --seed 3
    assert_success
    # R² cannot rise by more than 5: two rounds without gain stop it
    assert_output --partial "stopped after round 2, 11 shards measured (and every table alone): no longer improving"
    grep -qF "stopped: no longer improving: the validation R² has not risen by more than 5 above its best for 2 rounds" "$T/c.md"
    as-show --kind cost "$T/c.ast" | jq -c '[.tables, .pieces]' > "$T/a"
    mv "$T/c.ast" "$T/first.ast"
    run active --budget 30 --init 4 --val 3 --batch 2 --tol 5 --patience 2 --seed 3
    assert_success
    as-show --kind cost "$T/c.ast" | jq -c '[.tables, .pieces]' | cmp - "$T/a"
}

@test "active-costs: by default 2/5 of the budget random to start, 1/5 to validate on" {
    run active --budget 20 --batch 20
    assert_success
    # 8 random + 4 to validate, then a batch of 20 would pass the budget
    assert_output --partial "active-costs: round 0: 12 shards measured of the budget 20"
    assert_output --partial "stopped after round 0, 12 shards measured"
}

@test "active-costs: --help, usage errors are exit 2, a failing stage exit 1 and nothing written" {
    run "$ROOT/pipelines/active-costs" --help
    assert_success
    assert_output --partial "pipelines/active-costs --tables POOL --features FT -o OUT"
    run "$ROOT/pipelines/active-costs" --tables "$BATS_FILE_TMPDIR/pool.ast" --features "$BATS_FILE_TMPDIR/ft.ast"
    assert_failure 2
    run active --budget 2
    assert_failure 2
    assert_output --partial "--budget must be at least 3"
    run active --budget 10 --init 9 --val 3
    assert_failure 2
    run active --ensemble 1
    assert_failure 2
    run active --bogus
    assert_failure 2
    run active --budget 10 --bench-opts "--runs 0"
    assert_failure 1
    assert_output --partial "active-costs: round 0: as-bench failed"
    [ ! -e "$T/c.ast" ] && [ ! -e "$T/c.md" ]
}
