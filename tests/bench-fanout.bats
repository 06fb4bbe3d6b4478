#!/usr/bin/env bats
# pipelines/bench-fanout: a --resume must continue the same run (parameters recorded in
# WORKDIR/params, a mismatch refused with exit 2), and the jobs die with the fan-out even
# after a kill -9 of its process group. (The basic fan-out and resume are in as-bench.bats.)
load test_helper/common

FAST="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1 --flush 64K"
FANOUT="$ROOT/pipelines/bench-fanout"

pool() { as-convert --synth --preset tiny -o "$T/pool.ast"; }

# a benchmark wrapper that fails part 2 while $T/fail exists
failing_bench() {
    cat > "$T/bench" <<WRAP
#!/bin/sh
case "\$*" in *"--part 2/"*) [ -e "$T/fail" ] && exit 1 ;; esac
exec as-bench "\$@"
WRAP
    chmod +x "$T/bench"
    touch "$T/fail"
}

@test "bench-fanout --help: the whole header, the exit codes included" {
    run "$FANOUT" --help
    assert_success
    assert_line --index 0 "bench-fanout - run as-bench over many devices and hosts with GNU parallel."
    assert_output --partial "WORKDIR/params"
    assert_output --partial "--resume included), 3 environment"
    run "$FANOUT" --bogus
    assert_failure 2
}

@test "bench-fanout --resume: other --parts, --sample or input are refused (exit 2, naming them)" {
    pool
    failing_bench
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 --bench "$T/bench" \
        -o "$T/out.ast" -- --sample 8 --seed 4 $FAST
    assert_failure
    [ -f "$T/out.ast.parts/params" ]
    rm "$T/fail"
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 3 --bench "$T/bench" \
        -o "$T/out.ast" --resume -- --sample 8 --seed 4 $FAST
    assert_failure 2
    assert_output --partial "--parts: was '4', now '3'"
    refute_output --partial "options"
    [ ! -e "$T/out.ast" ]
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 --bench "$T/bench" \
        -o "$T/out.ast" --resume -- --sample 10 --seed 4 $FAST
    assert_failure 2
    assert_output --partial "the as-bench options (after --): was '--sample 8 --seed 4"
    refute_output --partial "--parts:"
    as-convert --synth --preset tiny --seed 9 -o "$T/pool.ast"     # the tables changed
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 --bench "$T/bench" \
        -o "$T/out.ast" --resume -- --sample 8 --seed 4 $FAST
    assert_failure 2
    assert_output --partial "--tables: was '$T/pool.ast ("
    [ ! -e "$T/out.ast" ]
}

@test "bench-fanout --resume: the same parameters (other --jobs) finish the run; a fresh run drops old parts" {
    pool
    as-bench --tables "$T/pool.ast" --sample 8 --seed 4 $FAST -o "$T/ref.ast"
    failing_bench
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 --bench "$T/bench" \
        -o "$T/out.ast" -- --sample 8 --seed 4 $FAST
    assert_failure
    rm "$T/fail"
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 1 --parts 4 --bench "$T/bench" \
        -o "$T/out.ast" --resume -- --sample 8 --seed 4 $FAST
    assert_success
    [ "$(as-show --kind cost "$T/ref.ast" | jq -c .tables | sort)" = "$(as-show --kind cost "$T/out.ast" | jq -c .tables | sort)" ]
    # a fresh run with fewer parts into the same WORKDIR: the old part 4 must not survive
    [ -f "$T/out.ast.parts/part-4.ast" ]
    "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 2 -o "$T/out.ast" -- --sample 8 --seed 4 $FAST
    [ ! -e "$T/out.ast.parts/part-4.ast" ]
    run as-show --count "$T/out.ast"
    assert_line "cost	8"
    grep -q "^parts	2$" "$T/out.ast.parts/params"
    # parts without a record of their parameters (an older bench-fanout) are not resumed
    rm "$T/out.ast.parts/params"
    run "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 2 -o "$T/out.ast" --resume -- --sample 8 --seed 4 $FAST
    assert_failure 2
    assert_output --partial "no record of their parameters"
}

# the process is running (not gone, not a zombie)
running() {
    local line
    read -r line < "/proc/$1/stat" 2>/dev/null || return 1
    line=${line##*) }
    [ "${line%% *}" != Z ]
}

# start bench-fanout in a session (and process group) of its own with a benchmark that
# records its pid and sleeps; wait for N jobs; kill -9 the group; every job must be gone
kill_group_and_check() {
    local n=$1; shift
    cat > "$T/bench" <<WRAP
#!/bin/sh
echo \$\$ >> "$T/pids"
exec sleep 300
WRAP
    chmod +x "$T/bench"
    : > "$T/pids"
    setsid "$FANOUT" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 2 --bench "$T/bench" \
        -o "$T/out.ast" "$@" -- --sample 2 $FAST > "$T/log" 2>&1 3>&- &
    local pid=$! i p
    for ((i = 0; i < 200 && $(wc -l < "$T/pids") < n; i++)); do sleep 0.1; done
    [ "$(wc -l < "$T/pids")" -eq "$n" ]
    for p in $(cat "$T/pids"); do running "$p"; done
    kill -9 -- "-$pid"
    wait "$pid" || true
    # the watchdog polls once a second, then TERM, KILL after 2 s at most (two levels: twice)
    for ((i = 0; i < 100; i++)); do
        left=""
        for p in $(cat "$T/pids"); do running "$p" && left="$left $p"; done
        [ -n "$left" ] || break
        sleep 0.1
    done
    if [ -n "$left" ]; then
        kill $left 2>/dev/null || true
        echo "jobs still running 10 s after kill -9 of the fan-out's process group:$left" >&2
        return 1
    fi
}

@test "bench-fanout: kill -9 of its process group ends the running jobs" {
    pool
    kill_group_and_check 2
}

@test "bench-fanout: kill -9 of its process group ends the jobs of a two-level run (local host)" {
    pool
    echo ":" > "$T/hosts"
    kill_group_and_check 2 --sshloginfile "$T/hosts"
}

teardown() {
    # never leave sleeping jobs behind, whatever happened
    if [ -f "$T/pids" ]; then
        for p in $(cat "$T/pids"); do kill "$p" 2>/dev/null || true; done
    fi
}
