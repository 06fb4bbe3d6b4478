#!/usr/bin/env bats
# The planner registry (lib/records/planners.def): a new planner is one file and one line. A copy
# of the sources gets tests/fixtures/toy_planner/plantoy.c in lib/plan/ and its line in the
# registry, nothing else; built, the toy is in as-plan's --help, --alg and `all`, in
# as-bench's measured plans and as-eval's tables, and in the TorchRec export; the other
# planners' plans stay the same as the repository's tools make them.
load test_helper/common

setup_file() {
    D="$BATS_FILE_TMPDIR"
    mkdir -p "$D/src"
    cp -r "$ROOT/lib" "$ROOT/cmd" "$ROOT/Makefile" "$D/src/"
    cp "$ROOT/tests/fixtures/toy_planner/plantoy.c" "$D/src/lib/plan/"
    echo 'AS_PLANNER(TOY, "toy", toy)' >> "$D/src/lib/records/planners.def"
    # without CUDA and optimisation: the build takes seconds (a make of its own: not the
    # variables of a make that runs the tests, e.g. make asan's BUILD and BIN)
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
        make -s -C "$D/src" -j2 NVCC= OPT=-O0 bin/as-plan bin/as-eval bin/as-bench bin/as-show > "$D/build.log" 2>&1
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --preset tiny --seed 0 -o "$D/pool.ast"
    as-features "$D/pool.ast" --tasks 2 --task-tables 7 --shards 3 --seed 0 -o "$D/ft.ast"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
    B="$D/src/bin"
}

@test "registry: the copy with the toy planner built (one file, one line)" {
    [ -x "$B/as-plan" ] || fail "$(cat "$D/build.log")"
    run diff <(cd "$ROOT" && find lib -type f | sort) <(cd "$D/src" && find lib -type f | sort)
    assert_output --partial "> lib/plan/plantoy.c"
    [ "$(echo "$output" | grep -c '^[<>]')" -eq 1 ]
    [ "$(diff "$ROOT/lib/records/planners.def" "$D/src/lib/records/planners.def" | grep -c '^>')" -eq 1 ]
}

@test "registry: the toy planner in as-plan --help, --alg toy and --alg all; the other planners' plans unchanged" {
    run "$B/as-plan" --help
    assert_success
    assert_line --regexp '^  toy +round robin: table i on shard i mod K'
    # round robin over 3 shards, no cap: 0 1 2 0 1 2 0 on each task of 7 tables
    "$B/as-plan" --alg toy --plans-only -q "$D/ft.ast" -o "$T/toy.ast"
    run sh -c "as-show --no-header -k plan '$T/toy.ast' | jq -c '[.task, .alg, .assign, .feasible]'"
    assert_output '[0,"toy",[0,1,2,0,1,2,0],true]
[1,"toy",[0,1,2,0,1,2,0],true]'
    run sh -c "'$B/as-plan' --alg all --plans-only -q '$D/ft.ast' | as-show --no-header -k plan | jq -r .alg | sort -u | tr '\n' ' '"
    assert_output "dim-greedy lookup-greedy random size-greedy size-lookup-greedy toy "
    # with a cap the toy skips shards where a table does not fit, and leaves it unplaced where none fits
    run "$B/as-plan" --alg toy --mem-cap 1K --plans-only -q "$D/ft.ast" -o "$T/cap.ast"
    assert_failure 1
    assert_output --partial "2 of 2 plans infeasible"
    # the repository's tools know no toy; the other planners plan as they did
    run as-plan --alg toy "$D/ft.ast"
    assert_failure 2
    assert_output --partial "unknown algorithm 'toy'"
    run diff <(as-plan --alg all --plans-only -q "$D/ft.ast" | as-show --no-header -k plan | jq -c 'del(.plan_ms)') \
        <("$B/as-plan" --alg all --plans-only -q "$D/ft.ast" | as-show --no-header -k plan | jq -c 'select(.alg != "toy") | del(.plan_ms)')
    assert_success
}

@test "registry: the toy's plans measured by as-bench, in as-eval's tables after the registry's planners, exported to TorchRec" {
    "$B/as-plan" --alg toy,size-greedy --plans-only -q "$D/ft.ast" -o "$T/p.ast"
    "$B/as-bench" --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/p.ast" -o "$T/m.ast"
    run sh -c "'$B/as-eval' --format csv --table plans '$T/m.ast' | awk -F, 'NR > 1 { print \$2, \$4, \$7 }'"
    assert_output "0 size-greedy measured
0 toy measured
1 size-greedy measured
1 toy measured"
    # the summary per algorithm: the registry's order (size-greedy before the toy's line)
    run sh -c "'$B/as-eval' --table summary '$T/m.ast' | awk '/^(size-greedy|toy) / { print \$1, \$2 }'"
    assert_output "size-greedy 2
toy 2"
    "$B/as-plan" --export "$T/m.ast" --alg toy --format torchrec -q "$D/ft.ast" > "$T/toy.json"
    run sh -c "jq -c '[.task, .alg, ([.plan[\"\"][] | .ranks[0]] | sort)]' '$T/toy.json'"
    assert_output '[0,"toy",[0,0,0,1,1,2,2]]
[1,"toy",[0,0,0,1,1,2,2]]'
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$T/toy.json"
    assert_success
}
