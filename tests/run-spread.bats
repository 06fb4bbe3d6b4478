#!/usr/bin/env bats
# pipelines/run-spread.py: how far the same plans measured in several runs disagree (per
# shard, each plan's level taken out), from hand-made measured plans whose figures are known
load test_helper/common

RS() { python3 "$ROOT/pipelines/run-spread.py" "$@"; }

# a measured plan record as a JSON line: task, alg, costs
plan() { printf '{"kind":"plan","task":%s,"alg":"%s","shards":2,"cost_ms":%s}\n' "$1" "$2" "$3"; }

@test "run-spread: a run uniformly slower does not count; one shard 21 % slower against its plan does, as known" {
    { plan 0 a '[1.0, 2.0]'; plan 0 b '[1.0, 1.0]'; } > "$T/r1.jsonl"
    { plan 0 a '[2.0, 4.0]'; plan 0 b '[3.0, 3.0]'; } > "$T/r2.jsonl"
    run RS "$T/r1.jsonl" "$T/r2.jsonl"
    assert_success
    assert_line "plans in every run: 2, shard comparisons: 4"
    assert_line "per shard, plan level taken out: std 0.00 %, max |diff| 0.00 %"
    assert_line --partial "in another order in a later run: 0"
    # b's second shard 1.21x: its level sqrt(1.21) = 1.1, so the shards move by 1/1.1 and 1.1
    { plan 0 a '[1.0, 2.0]'; plan 0 b '[1.0, 1.21]'; } > "$T/r3.jsonl"
    run RS "$T/r1.jsonl" "$T/r3.jsonl"
    assert_success
    # diffs: 0, 0, -0.0909, +0.1: RMS sqrt((0.0909^2 + 0.1^2) / 4) = 6.76 %
    assert_line "per shard, plan level taken out: std 6.76 %, max |diff| 10.00 %"
    assert_line "  b                            balance per run: 100.0 82.6"
}

@test "run-spread: plans that change order by balance between runs are counted; --passes takes each pass as a run" {
    { plan 0 a '[1.0, 2.0]'; plan 0 b '[1.0, 1.5]'; } > "$T/r1.jsonl"
    { plan 0 a '[1.0, 1.2]'; plan 0 b '[1.0, 1.5]'; } > "$T/r2.jsonl"
    run RS "$T/r1.jsonl" "$T/r2.jsonl"
    assert_success
    assert_line "task pairs of plans ordered by balance: 1, in another order in a later run: 1"
    printf '{"kind":"plan","task":0,"alg":"a","shards":2,"cost_pass_ms":[[1.0,2.0],[2.0,4.0]]}\n' > "$T/p.jsonl"
    run RS --passes "$T/p.jsonl"
    assert_success
    assert_line "per shard, plan level taken out: std 0.00 %, max |diff| 0.00 %"
    printf '{"kind":"plan","task":0,"alg":"a","shards":2,"cost_ms":[1.0,2.0]}\n' > "$T/one.jsonl"
    run RS --passes "$T/one.jsonl"
    assert_failure 1
    assert_output --partial "no plan carries cost_pass_ms of 2 passes or more"
}

@test "run-spread: as-bench's stream is read directly, with the same result as its JSON lines; bad input is exit 1 naming it" {
    { plan 0 a '[1.0, 2.0]'; plan 0 b '[1.0, 1.21]'; } > "$T/r1.jsonl"
    { plan 0 a '[1.0, 2.0]'; plan 0 b '[1.0, 1.0]'; } > "$T/r2.jsonl"
    # the same plans as a stream: as-plan writes them, a hand edit sets the costs
    as-convert --synth --tables 4 --batch 16 --row-scale 0.001 --seed 1 -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 1 --task-tables 4 --shards 2 --seed 0 -o "$T/ft.ast"
    as-plan --alg size-greedy,lookup-greedy --plans-only "$T/ft.ast" -o "$T/p.ast"
    mp_edit "$T/p.ast" "ps = kind('plan'); ps[0]['cost_ms'] = [1.0, 2.0]; ps[1]['cost_ms'] = [1.0, 1.21]" > "$T/s1.ast"
    mp_edit "$T/p.ast" "ps = kind('plan'); ps[0]['cost_ms'] = [1.0, 2.0]; ps[1]['cost_ms'] = [1.0, 1.0]" > "$T/s2.ast"
    run RS "$T/s1.ast" "$T/s2.ast"
    assert_success
    assert_line "per shard, plan level taken out: std 6.76 %, max |diff| 10.00 %"
    as-show --full --kind plan "$T/s1.ast" > "$T/s1.jsonl"
    run RS "$T/s1.jsonl" - < "$T/s2.ast"
    assert_success
    assert_line "per shard, plan level taken out: std 6.76 %, max |diff| 10.00 %"
    echo 'not json' > "$T/bad.txt"
    run RS "$T/bad.txt" "$T/r2.jsonl"
    assert_failure 1
    assert_output "run-spread: $T/bad.txt: line 1: not JSON (expected as-show's JSON lines or an autoshard stream)"
    head -c 64 /dev/urandom | sed 's/^/\xff/' > "$T/rnd"
    run RS "$T/rnd" "$T/r2.jsonl"
    assert_failure 1
    assert_output --partial "neither an autoshard stream nor JSON lines"
    head -c 30 "$T/s1.ast" > "$T/cut.ast"
    run RS "$T/cut.ast" "$T/r2.jsonl"
    assert_failure 1
    assert_output --partial "run-spread: $T/cut.ast: as-show:"
    run RS "$T/missing" "$T/r2.jsonl"
    assert_failure 1
    assert_output "run-spread: $T/missing: No such file or directory"
    run RS "$T/r1.jsonl"
    [ "$status" -eq 2 ]
    printf '[1]\n' > "$T/arr.jsonl"
    run RS "$T/arr.jsonl" "$T/r2.jsonl"
    assert_failure 1
    assert_output --partial "line 1: not a record"
}
