#!/usr/bin/env bats
# as-bench on the CPU path (CI has no GPU): sampling, shards, plan pass-through, refusals,
# and the GNU parallel fan-out with resume.
load test_helper/common

FAST="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1"
PLAN='\x86\xa4kind\xa4plan\xa4task\x03\xa3alg\xa1x\xa6shards\x03\xa6tables\x93\x00\x01\x02\xa6assign\x93\x00\x01\x00'
SHARD='\x82\xa4kind\xa5shard\xa6tables\x92\x04\x05'
OTHER='\x82\xa4kind\xa5other\xa1x\x2a'

pool() { as-convert --synth --preset tiny -o "$T/pool.ast"; }

@test "as-bench --help and --version" {
    run as-bench --help
    assert_success
    assert_output --partial "usage: as-bench"
    assert_output --partial "--part I/N"
    run as-bench --version
    assert_success
}

@test "as-bench: usage and environment errors" {
    run as-bench --sample 3
    assert_failure 2
    assert_output --partial "--tables FILE is required"
    pool
    run as-bench --tables "$T/pool.ast" --sample 3 --device tpu
    assert_failure 2
    run as-bench --tables "$T/pool.ast" --sample 3 --runs 4 --trim 2
    assert_failure 2
    run as-bench --tables "$T/pool.ast" --sample 3 --part 3/2
    assert_failure 2
    if ! as-show --version | grep -q '[1-9][0-9]* working device'; then
        run as-bench --tables "$T/pool.ast" --sample 3 --device cuda
        assert_failure 3
        assert_output --partial "no working CUDA device"
    fi
}

@test "as-bench --sample: cost records with the protocol's statistics" {
    pool
    as-bench --tables "$T/pool.ast" --sample 6 --max-tables 3 --seed 2 $FAST -o "$T/c.ast"
    run as-show --count "$T/c.ast"
    assert_line "cost	6"
    run sh -c "as-show --kind cost '$T/c.ast' | jq -e -s 'all(.[]; .device_kind == \"cpu\" and .cost_ms > 0
        and .min_ms <= .cost_ms and .cost_ms <= .max_ms and .min_ms <= .median_ms and .median_ms <= .max_ms
        and (.tables | length) >= 1 and (.tables | length) <= 3 and .protocol == [1,3,1] and .error == null
        and .threads == 1 and .gbps > 0 and (.fwd_ms + .bwd_ms) > 0 and .origin == \"sample\")'"
    assert_success
    # the same seed draws the same shards
    as-bench --tables "$T/pool.ast" --sample 6 --max-tables 3 --seed 2 $FAST -o "$T/d.ast"
    [ "$(as-show --kind cost "$T/c.ast" | jq -c .tables)" = "$(as-show --kind cost "$T/d.ast" | jq -c .tables)" ]
}

@test "as-bench --draw-only: the shards --sample would measure, as shard records, none measured" {
    pool
    as-bench --tables "$T/pool.ast" --sample 12 --max-tables 3 --seed 4 --singles --sample-pieces 0.5 --piece-blocks 2,4 \
        --draw-only -o "$T/s.ast"
    run as-show --count "$T/s.ast"
    assert_line "shard	44"
    refute_line --partial "cost"
    as-bench --tables "$T/pool.ast" --sample 12 --max-tables 3 --seed 4 --singles --sample-pieces 0.5 --piece-blocks 2,4 $FAST -o "$T/c.ast"
    # the same draws, pieces included, in the same order; measured as input they give the costs
    [ "$(as-show --kind cost "$T/c.ast" | jq -c '[.tables, .pieces]')" = "$(as-show --kind shard "$T/s.ast" | jq -c '[.tables, .pieces]')" ]
    [ "$(as-show --kind shard "$T/s.ast" | jq -c 'select(.pieces != null)' | wc -l)" -gt 0 ]
    as-bench --tables "$T/pool.ast" $FAST "$T/s.ast" -o "$T/d.ast"
    [ "$(as-show --kind cost "$T/c.ast" | jq -c '[.tables, .pieces]')" = "$(as-show --kind cost "$T/d.ast" | jq -c '[.tables, .pieces]')" ]
    run as-bench --tables "$T/pool.ast" --draw-only "$T/s.ast"
    assert_failure 2
    assert_output --partial "--draw-only needs --sample N"
}

@test "as-bench --col-singles N: the N heaviest tables' column half and quarter alone, after the same draws" {
    pool
    local d="--sample 12 --max-tables 3 --seed 4 --singles --sample-pieces 0.5 --piece-blocks 2,4"
    # shellcheck disable=SC2086
    as-bench --tables "$T/pool.ast" $d --draw-only -q -o "$T/a.ast"
    # shellcheck disable=SC2086
    as-bench --tables "$T/pool.ast" $d --col-singles 3 --draw-only -q -o "$T/b.ast"
    local na nb
    na=$(as-show --no-header "$T/a.ast" | wc -l)
    nb=$(as-show --no-header "$T/b.ast" | wc -l)
    # the draws first, unchanged
    diff <(as-show --no-header "$T/a.ast") <(as-show --no-header "$T/b.ast" | head -n "$na")
    # then, heaviest table first (lookups x dim, the lower id on ties; a dim that is a multiple
    # of 8 has a half, of 16 a quarter too), each alone: [id, width, dim]
    as-show --kind table "$T/pool.ast" | jq -rs '[.[] | select(.dim % 8 == 0)] | sort_by([-(.lookups * .dim), .id]) | .[0:3][] |
        "\(.id) \(.dim / 2) \(.dim)", (select(.dim % 16 == 0) | "\(.id) \(.dim / 4) \(.dim)")' > "$T/want.txt"
    as-show --no-header "$T/b.ast" | tail -n $((nb - na)) | jq -r '"\(.tables[0]) \(.pieces[0][1] - .pieces[0][0]) \(.tables | length)"' > "$T/got1.txt"
    [ "$(awk '{print $3}' "$T/got1.txt" | sort -u)" = 1 ]
    [ "$(awk '{print $1, $2}' "$T/got1.txt")" = "$(awk '{print $1, $2}' "$T/want.txt")" ]
    [ -s "$T/want.txt" ]
    # every column single starts at column 0 and spans all rows
    [ "$(as-show --no-header "$T/b.ast" | tail -n $((nb - na)) | jq -c 'select(.pieces[0][0] != 0 or .pieces[0][2] != 0)' | wc -l)" -eq 0 ]
    run as-bench --tables "$T/pool.ast" --col-singles 2 "$T/a.ast"
    assert_failure 2
    assert_output --partial "--col-singles needs --sample N"
    run as-bench --tables "$T/pool.ast" --sample 2 --col-singles x
    assert_failure 2
}

@test "as-bench: plans pass on with a cost per shard; shards give costs; others pass through" {
    pool
    make_stream "$HDR$PLAN$SHARD$OTHER" > "$T/in.ast"
    as-bench --tables "$T/pool.ast" $FAST "$T/in.ast" -o "$T/out.ast"
    run as-show --count "$T/out.ast"
    assert_line "cost	3"
    assert_line "plan	1"
    assert_line "other	1"
    run sh -c "as-show --kind plan '$T/out.ast' | jq -c '[.task, .alg, .shards, .tables, .assign, (.cost_ms | length), (.cost_ms[0] > 0), (.cost_ms[1] > 0), .cost_ms[2], .cost_kind]'"
    assert_output '[3,"x",3,[0,1,2],[0,1,0],3,true,true,0,"measured"]'
    run sh -c "as-show --kind cost '$T/out.ast' | jq -c '[.origin, .task, .shard, .tables]'"
    assert_line --index 0 '["plan",3,0,[0,2]]'
    assert_line --index 1 '["plan",3,1,[1]]'
    assert_line --index 2 '["shard",-1,-1,[4,5]]'
    run as-show --kind other "$T/out.ast"
    assert_output '{"kind":"other","x":42}'
}

@test "as-bench: bad input is a clear error" {
    pool
    make_stream "$HDR"'\x82\xa4kind\xa5shard\xa6tables\x92\x04\x63' > "$T/s.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s.ast"
    assert_failure 1
    assert_output --partial "table 99 is not in the table data"
    make_stream "$HDR"'\x81\xa4kind\xa5shard' > "$T/s2.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s2.ast"
    assert_failure 1
    assert_output --partial "record 2: shard: 'tables' must be a list of table ids"
    make_stream "$HDR"'\x84\xa4kind\xa4plan\xa6shards\x02\xa6tables\x92\x00\x01\xa6assign\x92\x00\x05' > "$T/p.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/p.ast"
    assert_failure 1
    assert_output --partial "assign[1] = 5 is not a shard of 0..1"
    head -c 3000 "$T/pool.ast" > "$T/cut.ast"
    make_stream "$HDR$SHARD" > "$T/ok.ast"
    run as-bench --tables "$T/cut.ast" $FAST "$T/ok.ast"
    assert_failure 1
    run as-bench --tables "$T/pool.ast" $FAST < /dev/null
    assert_failure 1
    run as-bench --tables "$T/nope.ast" $FAST "$T/ok.ast"
    assert_failure 1
}

@test "as-bench: a shard that does not fit is reported, not crashed on" {
    pool
    make_stream "$HDR$SHARD" > "$T/in.ast"
    # what the process (32 MiB), the table data and the 1 MiB sweep leave: too little
    run as-bench --tables "$T/pool.ast" $FAST --flush 1M --max-mem 33992K "$T/in.ast" -o "$T/out.ast"
    assert_success
    assert_output --partial "not measured: does not fit"
    run sh -c "as-show --kind cost '$T/out.ast' | jq -c '[.cost_ms, (.error | startswith(\"does not fit\"))]'"
    assert_output '[null,true]'
}

@test "as-bench: TTY refused, write errors exit 3" {
    pool
    run_tty "as-bench --tables '$T/pool.ast' --sample 1 $FAST"
    assert_failure 2
    run as-bench --tables "$T/pool.ast" --sample 1 $FAST -o /dev/full
    assert_failure 3
}

@test "as-bench --part: the parts together are the whole" {
    pool
    as-bench --tables "$T/pool.ast" --sample 5 --seed 1 $FAST -o "$T/all.ast"
    as-bench --tables "$T/pool.ast" --sample 5 --seed 1 $FAST --part 1/2 -o "$T/p1.ast"
    as-bench --tables "$T/pool.ast" --sample 5 --seed 1 $FAST --part 2/2 -o "$T/p2.ast"
    [ "$(as-show --kind cost "$T/all.ast" | jq -c .tables | sort)" = "$(cat "$T/p1.ast" "$T/p2.ast" | as-show --kind cost | jq -c .tables | sort)" ]
}

@test "as-bench --part: the header records the arguments as given" {
    pool
    as-bench --tables "$T/pool.ast" --sample 2 $FAST --part 1/2 -q -o "$T/p1.ast"
    run sh -c "as-show --kind header '$T/p1.ast' | jq -c '.args[-5:]'"
    assert_output '["--part","1/2","-q","-o","'"$T"'/p1.ast"]'
}

@test "as-bench: numbers with white space, and a reference naming a table twice, are usage errors" {
    pool
    for opt in "--interleave= 5" "--interleave=5 " "--runs= 3" "--max-mem= 1G" "--noise-threshold= 0.1" "--sample-from= 1,2"; do
        run as-bench --tables "$T/pool.ast" --sample 2 $FAST "$opt"
        assert_failure 2
        assert_output --partial "${opt%%=*}"
    done
    run as-bench --tables "$T/pool.ast" --sample 2 $FAST --reference 1,1,1
    assert_failure 2
    assert_output --partial "--reference: table 1 is listed twice"
    run as-bench --tables "$T/pool.ast" --sample 2 $FAST --reference 0-3,2
    assert_failure 2
    assert_output --partial "--reference: table 2 is listed twice"
}

@test "as-bench: an index outside its table's rows is bad data (exit 1) naming the table, as in as-features" {
    # table 1: rows 1, but indices [0, 1, 1]
    mp_stream '{"kind":"table","id":0,"rows":4,"batch":2,"lookups":3,"dim":8,"source":"t","offsets":arr("int32",[3],[0,1,3]),"indices":arr("int32",[3],[0,1,3])}' \
              '{"kind":"table","id":1,"rows":1,"batch":2,"lookups":3,"dim":8,"source":"t","offsets":arr("int32",[3],[0,1,3]),"indices":arr("int32",[3],[0,1,1])}' \
              '{"kind":"table","id":2,"rows":9,"batch":2,"lookups":3,"dim":8,"source":"t","offsets":arr("int64",[3],[0,1,3]),"indices":arr("int64",[3],[0,1,-2])}' > "$T/bad.ast"
    msg="record 3: table 1: indices[1] = 1 is outside [0, rows = 1)"
    run as-features "$T/bad.ast" -o /dev/null
    assert_failure 1
    assert_output --partial "$msg"
    mp_stream '{"kind":"shard","tables":[0,1]}' > "$T/s.ast"
    run as-bench --tables "$T/bad.ast" $FAST --no-calibrate "$T/s.ast" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "$T/bad.ast: $msg"
    [ ! -e "$T/out.ast" ]
    run as-bench --tables "$T/bad.ast" $FAST --no-calibrate --sample 3 -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "$msg"
    # int64 indices: a negative one
    mp_stream '{"kind":"shard","tables":[2]}' > "$T/s2.ast"
    run as-bench --tables "$T/bad.ast" $FAST --no-calibrate --reference none "$T/s2.ast" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "record 4: table 2: indices[2] = -2 is outside [0, rows = 9)"
    # a table no shard uses is not loaded, so not refused
    mp_stream '{"kind":"shard","tables":[0]}' > "$T/s0.ast"
    run as-bench --tables "$T/bad.ast" $FAST --no-calibrate --reference none -q "$T/s0.ast" -o "$T/out.ast"
    assert_success
}

# ---- memory (issue 23): a group holds its tables once and stays within --max-mem ----------------

# peak RSS in KiB of a command (GNU time); under AddressSanitizer (make asan) the figures mean
# nothing, so the bounds below are not checked there
peak_rss() {
    local out=$1
    shift
    /usr/bin/time -f %M -o "$out" "$@"
}

@test "as-bench --max-mem: a plan of 2,000 one-table shards stays within the budget, measured in parts" {
    # 2,000 tables of 32 bags, about 370 MB of weights in all: far more than 64M
    as-convert --synth --tables 2000 --batch 32 --row-scale 0.001 --seed 1 -o "$T/p.ast"
    mp_stream '{"kind":"plan","task":0,"alg":"x","shards":2000,"tables":list(range(2000)),"assign":list(range(2000))}' > "$T/plan.ast"
    mp_stream '{"kind":"shard","tables":[0]}' > "$T/one.ast"
    opts="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1 --flush 1M --no-calibrate --noise-threshold 0 -q"
    peak_rss "$T/base" as-bench --tables "$T/p.ast" $opts --max-mem 64M "$T/one.ast" -o "$T/one-out.ast"
    peak_rss "$T/rss" as-bench --tables "$T/p.ast" $opts --max-mem 64M "$T/plan.ast" -o "$T/out.ast"
    # every shard measured; the plan in parts (its shards fewer together than 2,000); the
    # plan passes on with a cost for each
    run sh -c "as-show --kind cost '$T/out.ast' | jq -s -c '[length, all(.[]; .cost_ms > 0 and .error == null), (map(.together) | max < 2000), (map(.together) | min > 1)]'"
    assert_output '[2000,true,true,true]'
    run sh -c "as-show --kind plan '$T/out.ast' | jq -c '[(.cost_ms | length), all(.cost_ms[]; . > 0)]'"
    assert_output '[2000,true]'
    # peak RSS: the budget above what one shard's run takes (code, buffers), 8 MiB to spare
    # (before issue 23: 397 MiB, every part's data kept to the end of the plan)
    if [ -z "$ASAN_OPTIONS" ]; then
        base=$(cat "$T/base") rss=$(cat "$T/rss")
        [ "$rss" -lt $((base + 64 * 1024 + 8 * 1024)) ] || fail "peak RSS $rss KiB, one shard's run $base KiB, budget 64 MiB"
    fi
    # -v says how the budget is shared out
    run sh -c "as-bench --tables '$T/p.ast' $opts --max-mem 64M -v '$T/one.ast' -o '$T/one-out.ast' 2>&1"
    assert_line --regexp '^as-bench: memory: budget 64\.0 MiB \(--max-mem\): process 32\.0 MiB, table data [0-9.]+ MiB, cache-flush sweep 1\.0 MiB, shard data at most [0-9.]+ MiB, [0-9.]+ MiB for shards set up together$'
}

@test "as-bench: a group holds the tables its shards share once: the default interleave peaks near --interleave 1" {
    # 4 tables of 0.7-10 MB, 16 sampled shards of up to 4 of them: every group names them all
    as-convert --synth --tables 4 --batch 64 --row-scale 0.02 --seed 3 -o "$T/p4.ast"
    opts="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1 --flush 1M --no-calibrate --noise-threshold 0 -q --sample 16 --max-tables 4"
    peak_rss "$T/r16" as-bench --tables "$T/p4.ast" $opts -o "$T/c16.ast"
    peak_rss "$T/r1" as-bench --tables "$T/p4.ast" $opts --interleave 1 -o "$T/c1.ast"
    run sh -c "as-show --kind cost '$T/c16.ast' | jq -c .together | sort -u"
    assert_output '17'
    # before issue 23: 244 MB against 50 MB (each shard its own copy of its tables)
    if [ -z "$ASAN_OPTIONS" ]; then
        r16=$(cat "$T/r16") r1=$(cat "$T/r1")
        [ $((r16 * 10)) -le $((r1 * 13)) ] || fail "peak RSS $r16 KiB interleaved, $r1 KiB one at a time"
    fi
    # the same shards and costs' shape either way
    [ "$(as-show --kind cost "$T/c16.ast" | jq -c '[.tables, .lookups, .bytes]')" = "$(as-show --kind cost "$T/c1.ast" | jq -c '[.tables, .lookups, .bytes]')" ]
}

@test "as-bench --max-mem: a budget the process, the table data and the flush sweep take whole is a usage error that says why" {
    pool
    make_stream "$HDR$SHARD" > "$T/in.ast"
    run as-bench --tables "$T/pool.ast" $FAST --flush 1M --max-mem 33M "$T/in.ast" -o "$T/out.ast"
    assert_failure 2
    assert_output --regexp "--max-mem 33M leaves nothing for the shards: the process \(32\.0 MiB\), the table data \([0-9.]+ MiB\) and the cache-flush sweep \(--flush, 1\.0 MiB\) take it"
    [ ! -e "$T/out.ast" ]
    # a few KiB left: too little for the shard, which is an error record naming the share-out
    run as-bench --tables "$T/pool.ast" $FAST --flush 1M --max-mem 33992K "$T/in.ast" -o "$T/out.ast"
    assert_success
    assert_output --partial "not measured: does not fit: needs "
    assert_output --regexp ", the budget of 33\.2 MiB leaves [0-9.]+ KiB beside the process, the table data and the cache-flush sweep"
    # --help says what the budget bounds and its default
    run as-bench --help
    assert_output --partial "the table data loaded from"
    assert_output --partial "Default: a shard alone may use half the memory"
    assert_output --partial "A group holds each of its tables once"
}

@test "bench-fanout: CPU job slots with GNU parallel; resume after a killed job redoes nothing finished" {
    pool
    as-bench --tables "$T/pool.ast" --sample 8 --seed 4 $FAST -o "$T/ref.ast"
    # a benchmark wrapper that logs each part and kills itself on part 3 while a marker exists
    cat > "$T/bench" <<WRAP
#!/bin/sh
part=\$(echo "\$@" | sed 's/.*--part \([0-9]*\).*/\1/')
echo "\$part" >> "$T/calls"
if [ "\$part" = 3 ] && [ -e "$T/kill-me" ]; then kill -9 \$\$; fi
exec as-bench "\$@"
WRAP
    chmod +x "$T/bench"
    touch "$T/kill-me"
    run "$ROOT/pipelines/bench-fanout" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 \
        --bench "$T/bench" -o "$T/out.ast" -- --sample 8 --seed 4 $FAST
    assert_failure
    [ ! -e "$T/out.ast" ]
    [ "$(grep -c '^3$' "$T/calls")" -eq 2 ]       # two attempts (--retries 2)
    rm "$T/kill-me"
    : > "$T/calls"
    run "$ROOT/pipelines/bench-fanout" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 4 \
        --bench "$T/bench" -o "$T/out.ast" --resume -- --sample 8 --seed 4 $FAST
    assert_success
    [ "$(cat "$T/calls")" = "3" ]                    # only the failed part ran again
    [ "$(as-show --kind cost "$T/ref.ast" | jq -c .tables | sort)" = "$(as-show --kind cost "$T/out.ast" | jq -c .tables | sort)" ]
    run as-show --count "$T/out.ast"
    assert_line "cost	8"
}

@test "bench-fanout: two levels over an sshloginfile with the local host" {
    pool
    make_stream "$HDR$PLAN$SHARD$OTHER" > "$T/in.ast"
    echo ":" > "$T/hosts"
    "$ROOT/pipelines/bench-fanout" --tables "$T/pool.ast" --devices cpu --jobs 2 --parts 3 \
        --sshloginfile "$T/hosts" -o "$T/out.ast" "$T/in.ast" -- $FAST
    run as-show --count "$T/out.ast"
    assert_line "plan	1"
    assert_line "cost	3"
    assert_line "other	1"
    [ -f "$T/out.ast.parts/hosts.joblog" ]
}

@test "as-bench: an infeasible plan's unplaced tables (assign -1) are left out, the rest measured" {
    pool
    make_stream "$HDR"'\x84\xa4kind\xa4plan\xa6shards\x02\xa6tables\x93\x00\x01\x02\xa6assign\x93\x00\xff\x01' > "$T/p.ast"
    run sh -c "as-bench --tables '$T/pool.ast' $FAST -q '$T/p.ast' | as-show --kind cost | jq -c .tables"
    assert_success
    assert_output '[0]
[2]'
}

@test "as-bench: a plan's data-parallel table (assign -2) is measured on every shard's share of the batch and added" {
    pool
    # K = 3: table 0 on shard 0, table 2 on shard 1, table 1 data parallel; shard 2 holds
    # only its share of table 1's bags
    mp_stream '{"kind":"plan","task":1,"alg":"x","shards":3,"tables":[0,1,2],"assign":[0,-2,1],"cost_dp_ms":[9]}' > "$T/p.ast"
    as-bench --tables "$T/pool.ast" $FAST -q "$T/p.ast" -o "$T/out.ast"
    # a cost record for each shard's own tables only (a slice of the batch is no shape of the
    # cost dataset)
    run sh -c "as-show --kind cost '$T/out.ast' | jq -c '[.shard, .tables]'"
    assert_output '[0,[0]]
[1,[2]]'
    # cost_ms = its tables' cost + its data-parallel part, cost_dp_ms (the old one replaced);
    # shard 2's is all data parallel
    as-show "$T/out.ast" > "$T/out.json"
    run jq -s -c '(map(select(.kind == "cost") | .cost_ms)) as $own | .[] | select(.kind == "plan") | . as $p
        | [(.cost_ms | length), (.cost_dp_ms | length), all(.cost_dp_ms[]; . > 0),
           ([0, 1] | all(. as $k | ($own[$k] + $p.cost_dp_ms[$k] - $p.cost_ms[$k]) | (if . < 0 then -. else . end) < 1e-12)),
           .cost_ms[2] == .cost_dp_ms[2]]' "$T/out.json"
    assert_output '[3,3,true,true,true]'
}

@test "as-bench: the summary on stderr gives shards/s and the busy fraction; -q silences it" {
    pool
    run sh -c "as-bench --tables '$T/pool.ast' --sample 6 --max-tables 3 --seed 3 $FAST --flush 1M -o '$T/c.ast' 2>&1"
    assert_success
    assert_line --partial "as-bench: 6 shards in "
    line=$(printf '%s\n' "$output" | grep 'shards/s')
    # shards/s is the count over the loop's seconds; the busy fraction a percentage in (0, 100]
    secs=$(printf '%s\n' "$line" | sed 's/.* shards in \([0-9.]*\) s: .*/\1/')
    rate=$(printf '%s\n' "$line" | sed 's/.* s: \([0-9.]*\) shards\/s.*/\1/')
    busy=$(printf '%s\n' "$line" | sed 's/.*device busy \([0-9.]*\) %.*/\1/')
    # (both printed to 0.01: the true values lie within 0.005 of them and multiply to 6; a
    # fixed band around 6 fails when the loop takes a few hundredths of a second)
    [ "$(echo "($rate - 0.005) * ($secs - 0.005) <= 6 && ($rate + 0.005) * ($secs + 0.005) >= 6" | bc -l)" = 1 ]
    [ "$(echo "$busy > 0 && $busy <= 100" | bc -l)" = 1 ]
    assert_line --partial "warm-up + timed kernels"
    # the same shards: the summary goes to stderr only, the records are unchanged in kind and count
    run as-show --count "$T/c.ast"
    assert_line "cost	6"
    run sh -c "as-bench --tables '$T/pool.ast' --sample 2 $FAST -q -o '$T/d.ast' 2>&1"
    assert_success
    assert_output ""
    # --no-resident is a CUDA option; the CPU takes it and measures as usual
    run as-bench --tables "$T/pool.ast" --sample 2 $FAST --no-resident -q -o "$T/e.ast"
    assert_success
    run as-show --count "$T/e.ast"
    assert_line "cost	2"
}

# ---- -o: atomic and late, never over an input; usage errors (issue 11) -----------------------

@test "as-bench: killed mid-write (SIGTERM, SIGINT), the old -o file is intact; the temporary comes after the work" {
    pool
    echo precious > "$T/old"
    for sig in TERM INT; do
        cp "$T/old" "$T/out.ast"
        kill_mid_write $sig "$T/out.ast" as-bench --tables "$T/pool.ast" --sample 6 --max-tables 3 $FAST -o "$T/out.ast"
        assert_killed_intact $sig "$T/out.ast" "$T/old"
        # the first byte reached the temporary only after every shard was measured
        grep -q "shards/s" "$T/kill.err"
    done
}

@test "as-bench: -o onto --tables or an input is refused before measuring; a missing value is not an unknown option" {
    pool
    cp "$T/pool.ast" "$T/orig.ast"
    run as-bench --tables "$T/pool.ast" --sample 3 $FAST -o "$T/pool.ast"
    assert_failure 2
    assert_output --partial "it is also an input"
    cmp "$T/pool.ast" "$T/orig.ast"
    make_stream "$HDR$SHARD" > "$T/s.ast"
    cp "$T/s.ast" "$T/s0.ast"
    run as-bench --tables "$T/pool.ast" $FAST "$T/s.ast" -o "$T/s.ast"
    assert_failure 2
    cmp "$T/s.ast" "$T/s0.ast"
    run as-bench --tables
    assert_failure 2
    assert_output --partial "option --tables needs a value"
    refute_output --partial "unknown option"
    run as-bench --tables "$T/pool.ast" --sample 3 $FAST -o ''
    assert_failure 2
    assert_output --partial "empty file name"
    refute_output --partial "shards/s"
}

# ---- noise-aware measurement (issue 12): noise injected through the fake timer -----------------

NOISE="--device cpu --warmup 1 --runs 5 --trim 1 --threads 1 --flush 1M --no-calibrate"

@test "as-bench --help documents the noise options and the fake timer" {
    run as-bench --help
    assert_success
    for w in --noise-threshold --retries --window --no-calibrate AS_BENCH_FAKE_NOISE "lowest spread"; do
        assert_output --partial -- "$w"
    done
}

@test "as-bench: noise options and a bad AS_BENCH_FAKE_NOISE are usage errors" {
    pool
    run as-bench --tables "$T/pool.ast" --sample 1 $NOISE --noise-threshold -0.1
    assert_failure 2
    run as-bench --tables "$T/pool.ast" --sample 1 $NOISE --retries x
    assert_failure 2
    run as-bench --tables "$T/pool.ast" --sample 1 $NOISE --window -1
    assert_failure 2
    AS_BENCH_FAKE_NOISE=sometimes run as-bench --tables "$T/pool.ast" --sample 1 $NOISE
    assert_failure 2
    assert_output --partial "AS_BENCH_FAKE_NOISE: 'sometimes' is not quiet, first, always"
    AS_BENCH_FAKE_NOISE=first,factor=0.5 run as-bench --tables "$T/pool.ast" --sample 1 $NOISE
    assert_failure 2
}

@test "as-bench: a shard noisy on its first attempt is measured again and ends quiet with attempts 2" {
    pool
    run sh -c "AS_BENCH_FAKE_NOISE=first as-bench --tables '$T/pool.ast' --sample 6 --max-tables 3 --seed 2 $NOISE -o '$T/c.ast' 2>&1"
    assert_success
    assert_line --regexp '^as-bench: noise: 6 shards with a spread, median spread 0\.[0-9] %; 6 re-measured \(6 extra attempts, [0-9.]+ s\), 0 noisy \(spread above 10\.0 % after up to 2 re-measurements\)$'
    refute_output --partial "warning"
    # the kept attempt is the quiet second one: the fake clock's 0.1 ms + 1e-5 ms per lookup, within its 1 % jitter
    run sh -c "as-show --kind cost '$T/c.ast' | jq -e -s 'length == 6 and all(.[]; .attempts == 2 and .noisy == false
        and .spread >= 0 and .spread < 0.01 and (.cost_ms / (0.1 + 1e-5 * .lookups)) >= 1 and (.cost_ms / (0.1 + 1e-5 * .lookups)) < 1.01)'"
    assert_success
}

@test "as-bench: an always-noisy shard ends noisy after retries + 1 attempts; --retries 0 flags only; --noise-threshold 0 neither" {
    pool
    run sh -c "AS_BENCH_FAKE_NOISE=always as-bench --tables '$T/pool.ast' --sample 6 --max-tables 3 $NOISE -o '$T/c.ast' 2>&1"
    assert_success
    assert_line --partial "noise: 6 shards with a spread, median spread 1"
    assert_line --regexp "6 re-measured \(12 extra attempts, [0-9.]+ s\), 6 noisy \(spread above 10.0 % after up to 2 re-measurements\)$"
    assert_line "as-bench: warning: 6 of 6 shards (100 %) are still noisy (spread above 10.0 %) after up to 2 re-measurements: the machine looks busy; their costs (flagged \`noisy\`) may not rank plans reliably: measure again on a quiet machine"
    run sh -c "as-show --kind cost '$T/c.ast' | jq -c '[.attempts, .noisy, .spread > 0.1]' | sort -u"
    assert_output '[3,true,true]'
    AS_BENCH_FAKE_NOISE=always as-bench --tables "$T/pool.ast" --sample 3 $NOISE --retries 4 -q -o "$T/c4.ast"
    run sh -c "as-show --kind cost '$T/c4.ast' | jq -c '[.attempts, .noisy]' | sort -u"
    assert_output '[5,true]'
    run sh -c "AS_BENCH_FAKE_NOISE=always as-bench --tables '$T/pool.ast' --sample 3 $NOISE --retries 0 -o '$T/c0.ast' 2>&1"
    assert_line --regexp "0 re-measured \(0 extra attempts, 0.00 s\), 3 noisy \(spread above 10.0 % after up to 0 re-measurements\)$"
    run sh -c "as-show --kind cost '$T/c0.ast' | jq -c '[.attempts, .noisy]' | sort -u"
    assert_output '[1,true]'
    run sh -c "AS_BENCH_FAKE_NOISE=always as-bench --tables '$T/pool.ast' --sample 3 $NOISE --noise-threshold 0 -o '$T/t0.ast' 2>&1"
    assert_line --partial "; no threshold: nothing re-measured or flagged"
    refute_output --partial "warning"
    run sh -c "as-show --kind cost '$T/t0.ast' | jq -c '[.attempts, .noisy, .spread > 0.1]' | sort -u"
    assert_output '[1,false,true]'
    # a threshold above the injected spread (about 1.1): nothing re-measured
    AS_BENCH_FAKE_NOISE=always as-bench --tables "$T/pool.ast" --sample 3 $NOISE --noise-threshold 3 -q -o "$T/t3.ast"
    run sh -c "as-show --kind cost '$T/t3.ast' | jq -c '[.attempts, .noisy]' | sort -u"
    assert_output '[1,false]'
}

@test "as-bench: some shards noisy: exactly those are re-measured; the summary counts them; fewer than 2 kept runs: no spread" {
    pool
    run sh -c "AS_BENCH_FAKE_NOISE=always,shards=0.5 as-bench --tables '$T/pool.ast' --sample 20 --max-tables 3 $NOISE -o '$T/c.ast' 2>&1"
    assert_success
    summary=$output
    n=$(as-show --kind cost "$T/c.ast" | jq -s 'map(select(.noisy)) | length')
    [ "$n" -gt 0 ] && [ "$n" -lt 20 ]
    # noisy ones: 3 attempts; the others: 1, quiet
    run sh -c "as-show --kind cost '$T/c.ast' | jq -c 'if .noisy then [.attempts, (.spread > 0.1)] else [.attempts, (.spread < 0.01)] end' | sort -u"
    assert_output '[1,true]
[3,true]'
    printf '%s\n' "$summary" | grep -qE "; $n re-measured \($((2 * n)) extra attempts, [0-9.]+ s\), $n noisy \(spread above 10.0 %"
    # runs 3, trim 1: one run kept, no spread: nil, never re-measured, never noisy
    AS_BENCH_FAKE_NOISE=always as-bench --tables "$T/pool.ast" --sample 3 $FAST --no-calibrate -q -o "$T/r3.ast"
    run sh -c "as-show --kind cost '$T/r3.ast' | jq -c '[.spread, .attempts, .noisy]' | sort -u"
    assert_output '[null,1,false]'
}

@test "as-bench: windows and rounds keep the output order and the pass-through; plans carry cost_spread, cost_noisy, noise_threshold" {
    pool
    mp_stream '{"kind":"other","x":1}' \
        '{"kind":"plan","task":3,"alg":"x","shards":3,"tables":[0,1,2],"assign":[0,1,0],"cost_spread":[9],"noise_threshold":7}' \
        '{"kind":"shard","tables":[4,5]}' '{"kind":"other","x":2}' '{"kind":"shard","tables":[6]}' \
        '{"kind":"plan","task":4,"alg":"y","shards":2,"tables":[7,8,9],"assign":[1,1,1]}' '{"kind":"other","x":3}' > "$T/in.ast"
    for wnd in 1 2 3 0 64; do
        AS_BENCH_FAKE_NOISE=first,shards=0.5 as-bench --tables "$T/pool.ast" $NOISE --reference none --window $wnd "$T/in.ast" -o "$T/w$wnd.ast" -q
        as-show --no-header "$T/w$wnd.ast" | jq -c 'del(.together)' > "$T/w$wnd.json"
    done
    # (without the reference shard, whose drift correction is tested below)
    # the fake clock makes the figures deterministic: every window gives the same records
    # (but for how many shards were measured together: a window's)
    for wnd in 1 2 3 0; do cmp "$T/w$wnd.json" "$T/w64.json"; done
    # the same one at a time (--interleave 1)
    AS_BENCH_FAKE_NOISE=first,shards=0.5 as-bench --tables "$T/pool.ast" $NOISE --reference none --interleave 1 "$T/in.ast" -o "$T/i1.ast" -q
    as-show --no-header "$T/i1.ast" | jq -c 'del(.together)' | cmp - "$T/w64.json"
    run sh -c "as-show --kind cost '$T/i1.ast' | jq -c .together | sort -u"
    assert_output '1'
    # quiet: the window's 5 shards (2 of one plan, 2 bare ones, 1 of another plan) together;
    # --interleave 2: each plan whole, the bare shards as a pair
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" $NOISE --reference none "$T/in.ast" -o "$T/q.ast" -q
    run sh -c "as-show --kind cost '$T/q.ast' | jq -c .together | sort -u"
    assert_output '5'
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" $NOISE --reference none --interleave 2 "$T/in.ast" -o "$T/q2.ast" -q
    run sh -c "as-show --kind cost '$T/q2.ast' | jq -c '[.task, .shard, .together]' | tr '\n' ' '"
    assert_output '[3,0,2] [3,1,2] [-1,-1,2] [-1,-1,2] [4,1,1] '
    run as-bench --tables "$T/pool.ast" --interleave 0 "$T/in.ast"
    assert_failure 2
    assert_output --partial '--interleave'
    run jq -c '[.kind, .x, .task, .shard]' "$T/w64.json"
    assert_output '["other",1,null,null]
["cost",null,3,0]
["cost",null,3,1]
["plan",null,3,null]
["cost",null,-1,-1]
["other",2,null,null]
["cost",null,-1,-1]
["cost",null,4,1]
["plan",null,4,null]
["other",3,null,null]'
    # the plans: arrays of K, nil spread and false noisy for an empty shard, the kept (quiet)
    # attempts' spreads, the threshold used; fields already in the input are replaced
    run jq -c 'select(.kind == "plan") | [(.cost_ms | length), .cost_ms, (.cost_spread | map(if . == null then null else . < 0.01 end)), .cost_noisy, .noise_threshold]' "$T/w64.json"
    assert_line --index 0 --regexp '^\[3,\[[0-9.e-]+,[0-9.e-]+,0\],\[true,true,null\],\[false,false,false\],0\.1\]$'
    assert_line --index 1 --regexp '^\[2,\[0,[0-9.e-]+\],\[null,true\],\[false,false\],0\.1\]$'
    # an always-noisy plan: its non-empty shards flagged; the threshold used is recorded
    AS_BENCH_FAKE_NOISE=always as-bench --tables "$T/pool.ast" $NOISE --noise-threshold 0.25 "$T/in.ast" -q -o "$T/a.ast"
    run sh -c "as-show --kind plan '$T/a.ast' | jq -c '[.cost_noisy, .noise_threshold, (.cost_spread | map(. != null))]'"
    assert_line --index 0 '[[true,true,false],0.25,[true,true,false]]'
    assert_line --index 1 '[[false,true],0.25,[false,true]]'
}

@test "as-bench --passes: each window measured N times, each shard's passes combined; errors" {
    pool
    # quiet and without drift every pass gives the same figures: the same costs
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" --sample 16 --seed 3 $NOISE --reference none -q -o "$T/p1.ast"
    run sh -c "AS_BENCH_FAKE_NOISE=quiet as-bench --tables '$T/pool.ast' --sample 16 --seed 3 $NOISE --reference none --passes 3 -o '$T/p3.ast' 2>&1"
    assert_success
    assert_line --partial '16 shards in'
    assert_line --regexp '0 re-measured \(0 extra attempts'
    run sh -c "as-show --kind cost '$T/p3.ast' | jq -c '[.passes, .attempts]' | sort -u"
    assert_output '[3,3]'
    run sh -c "as-show --kind cost '$T/p1.ast' | jq -c '[.passes, .attempts]' | sort -u"
    assert_output '[1,1]'
    # each pass apart: pass_ms (3 equal figures here) and their spread; nil with one pass
    run sh -c "as-show --kind cost '$T/p3.ast' | jq -c '[(.pass_ms | length), (.pass_ms[0] == .pass_ms[2]), (.pass_spread < 1e-9)]' | sort -u"
    assert_output '[3,true,true]'
    run sh -c "as-show --kind cost '$T/p1.ast' | jq -c '[.pass_ms, .pass_spread]' | sort -u"
    assert_output '[null,null]'
    run bash -c "paste -d' ' <(as-show --kind cost '$T/p1.ast' | jq .cost_ms) <(as-show --kind cost '$T/p3.ast' | jq .cost_ms) |
               awk '{ d = \$1 / \$2 - 1; if (d < 0) d = -d; if (d > 1e-12) bad++ } END { print bad + 0 }'"
    assert_output '0'
    # the fake drift: each group slower by its own factor; the passes of a shard fall in
    # different groups and their geometric mean narrows the spread of the costs
    ratio='map(.cost_ms / (0.1 + 1e-5 * .lookups)) | (max / min)'
    AS_BENCH_FAKE_NOISE=quiet,drift=2 as-bench --tables "$T/pool.ast" --sample 40 --seed 3 $NOISE --interleave 4 --reference none -q -o "$T/d1.ast"
    AS_BENCH_FAKE_NOISE=quiet,drift=2 as-bench --tables "$T/pool.ast" --sample 40 --seed 3 $NOISE --interleave 4 --reference none --passes 4 -q -o "$T/d4.ast"
    r1=$(as-show --kind cost "$T/d1.ast" | jq -s "$ratio")
    r4=$(as-show --kind cost "$T/d4.ast" | jq -s "$ratio")
    run awk -v a="$r1" -v b="$r4" 'BEGIN { print (b < a && a > 1.3) ? "narrower" : "not: " a " " b }'
    assert_output narrower
    for bad in 0 101 x; do
        run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --passes $bad
        assert_failure 2
        assert_output --partial '--passes'
    done
}

@test "as-bench --reference: each group times the reference shard too; costs divided by its drift; none, ids, errors" {
    pool
    # the fake timer's drift: each group of shards slower by its own factor in 1..1.5
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,drift=1.5 as-bench --tables '$T/pool.ast' --sample 40 --seed 3 $NOISE --interleave 8 -o '$T/auto.ast' 2>&1"
    assert_success
    assert_line --regexp '^as-bench: drift: reference shard \(tables [0-9]+,[0-9]+,[0-9]+,[0-9]+\) at [0-9.e-]+ ms; 40 shard\(s\) corrected by factors [0-9.]+ to [0-9.]+$'
    AS_BENCH_FAKE_NOISE=quiet,drift=1.5 as-bench --tables "$T/pool.ast" --sample 40 --seed 3 $NOISE --interleave 8 --reference none -q -o "$T/none.ast"
    # quiet cost = 0.1 ms + 1e-5 ms per lookup (1 % jitter): corrected, every shard sits on
    # one scale; raw, the groups' factors spread them
    ratio='map(.cost_ms / (0.1 + 1e-5 * .lookups)) | (max / min)'
    run sh -c "as-show --kind cost '$T/auto.ast' | jq -s '$ratio < 1.03'"
    assert_output true
    run sh -c "as-show --kind cost '$T/none.ast' | jq -s '$ratio > 1.1'"
    assert_output true
    # drift: the factor (nil without a reference); together: the group and its reference
    run sh -c "as-show --kind cost '$T/auto.ast' | jq -c '[(.drift > 0.5 and .drift < 2), .together]' | sort -u"
    assert_output '[true,9]'
    run sh -c "as-show --kind cost '$T/none.ast' | jq -c '[.drift, .together]' | sort -u"
    assert_output '[null,8]'
    # without drift the correction is exactly 1: the same costs as without a reference
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" --sample 12 $NOISE -q -o "$T/q1.ast"
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" --sample 12 $NOISE --reference none -q -o "$T/q0.ast"
    run sh -c "as-show --kind cost '$T/q1.ast' | jq -c .drift | sort -u"
    assert_output '1'
    diff <(as-show --kind cost "$T/q1.ast" | jq -c '[.tables, .cost_ms, .fwd_ms, .gbps]') \
         <(as-show --kind cost "$T/q0.ast" | jq -c '[.tables, .cost_ms, .fwd_ms, .gbps]')
    # given ids; ids not in the table data, or not ids: usage errors naming the option
    run sh -c "AS_BENCH_FAKE_NOISE=quiet as-bench --tables '$T/pool.ast' --sample 4 $NOISE --reference 0,2 -o '$T/r02.ast' 2>&1"
    assert_success
    assert_line --partial 'drift: reference shard (tables 0,2) at'
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference 0,99999
    assert_failure 2
    assert_output --partial '--reference: table 99999 is not in'
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference some
    assert_failure 2
    assert_output --partial "--reference: 'some' is not auto, none or a list of table ids"
    # a reference noisy on its first attempt corrects nothing there: the shards it was with
    # keep their raw times (drift nil); no level from noisy references
    AS_BENCH_FAKE_NOISE=always as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference 0 -q -o "$T/an.ast"
    run sh -c "as-show --kind cost '$T/an.ast' | jq -c .drift | sort -u"
    assert_output 'null'
}

@test "as-bench --drift-bound: a reference 100x slow is re-measured, and refused (not applied, flagged) when it stays so" {
    pool
    spread='map(.cost_ms / (0.1 + 1e-5 * .lookups)) | (max / min)'
    # 24 one-shard units, 6 groups of 4 (0-5); group 1's reference 100x slow on the fake timer
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" --sample 24 --seed 3 $NOISE --interleave 4 -q -o "$T/q.ast"
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,spike=1:100 as-bench --tables '$T/pool.ast' --sample 24 --seed 3 $NOISE --interleave 4 -o '$T/s.ast' 2>&1"
    assert_success
    refute_output --partial 'refused'
    # re-measured once (the retry group's reference is sound), every cost on the quiet scale
    run sh -c "as-show --kind cost '$T/s.ast' | jq -c '[.attempts, .drift_refused, (.drift != null)]' | sort | uniq -c | awk '{ print \$1, \$2 }'"
    assert_line '20 [1,false,true]'
    assert_line '4 [2,false,true]'
    run bash -c "paste -d' ' <(as-show --kind cost '$T/q.ast' | jq .cost_ms) <(as-show --kind cost '$T/s.ast' | jq .cost_ms) |
               awk '{ d = \$2 / \$1 - 1; if (d < 0) d = -d; if (d > 0.03) bad++ } END { print NR, bad + 0 }'"
    assert_output '24 0'
    # it stays so (groups 1, and 6 and 7: its re-measuring rounds): refused, raw times, flagged, said
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,spike=1/6/7:100 as-bench --tables '$T/pool.ast' --sample 24 --seed 3 $NOISE --interleave 4 -o '$T/r.ast' 2>&1"
    assert_success
    assert_output --regexp 'drift: [1-3] group\(s\) refused: their reference measured (99|10[0-9])[.0-9]*x to (99|10[0-9])[.0-9]*x the level of its window, outside 0.5x-2x \(--drift-bound\) after up to 2 re-measuring round\(s\).*their 4 shard\(s\) keep their raw times \(drift_refused\)'
    run sh -c "as-show --kind cost '$T/r.ast' | jq -c '[.drift_refused, .drift]' | sort | uniq -c | awk '{ print \$1, \$2 }'"
    assert_line '20 [false,1]'
    assert_line '4 [true,null]'
    # the raw times of the refused shards are the quiet ones (the spike hit only the reference)
    run sh -c "as-show --kind cost '$T/r.ast' | jq -s '$spread'"
    run awk -v r="$output" 'BEGIN { print (r < 1.03) ? "same scale" : "not: " r }'
    assert_output 'same scale'
    # without the bound the factor of 100 is applied: those shards 100x too cheap
    AS_BENCH_FAKE_NOISE=quiet,spike=1/6/7:100 as-bench --tables "$T/pool.ast" --sample 24 --seed 3 $NOISE --interleave 4 --drift-bound 0 -q -o "$T/n.ast"
    run sh -c "as-show --kind cost '$T/n.ast' | jq -s '$spread'"
    run awk -v r="$output" 'BEGIN { print (r > 50) ? "wrecked" : "not: " r }'
    assert_output 'wrecked'
    # --retries 0: flagged at once; a level given (--reference-level) does not move the bound's level
    AS_BENCH_FAKE_NOISE=quiet,spike=1:100 as-bench --tables "$T/pool.ast" --sample 24 --seed 3 $NOISE --interleave 4 --retries 0 --reference-level 0.05 -q -o "$T/z.ast"
    run sh -c "as-show --kind cost '$T/z.ast' | jq -c '[.drift_refused, .attempts]' | sort | uniq -c | awk '{ print \$1, \$2 }'"
    assert_line '20 [false,1]'
    assert_line '4 [true,1]'
    for bad in 1 0.5 -1 x 1001; do
        run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --drift-bound $bad
        assert_failure 2
        assert_output --partial '--drift-bound'
    done
    run env AS_BENCH_FAKE_NOISE=spike=x:3 as-bench --tables "$T/pool.ast" --sample 1 $NOISE
    assert_failure 2
    assert_output --partial 'spike= takes GROUPS:FACTOR'
}

@test "as-bench --reference-level: costs of a later run corrected to an earlier run's level; its errors" {
    pool
    # the records carry the run's reference: its tables and level (none without a reference)
    AS_BENCH_FAKE_NOISE=quiet,drift=1.5 as-bench --tables "$T/pool.ast" --sample 24 --seed 3 $NOISE --interleave 8 -q -o "$T/a.ast"
    run sh -c "as-show --kind cost '$T/a.ast' | jq -c '[(.reference.tables | length), (.reference.level_ms > 0)]' | sort -u"
    assert_output '[4,true]'
    AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference none -q -o "$T/none.ast"
    run sh -c "as-show --kind cost '$T/none.ast' | jq -c .reference | sort -u"
    assert_output 'null'
    # a level in ms: every cost divided by its group's reference over that level
    AS_BENCH_FAKE_NOISE=quiet,drift=1.5 as-bench --tables "$T/pool.ast" --sample 24 --seed 3 $NOISE --interleave 8 --reference-level 0.05 -q -o "$T/l.ast"
    run sh -c "as-show --kind cost '$T/l.ast' | jq -c .reference.level_ms | sort -u"
    assert_output '0.05'
    # the same shards corrected to a level L and to 0.05 differ by 0.05 / L, shard by shard
    L=$(as-show --kind cost "$T/a.ast" | jq -s '.[0].reference.level_ms')
    run bash -c "paste -d' ' <(as-show --kind cost '$T/a.ast' | jq .cost_ms) <(as-show --kind cost '$T/l.ast' | jq .cost_ms) |
               awk -v L=$L '{ d = (\$2 / \$1) / (0.05 / L) - 1; if (d < 0) d = -d; if (d > 0.03) bad++ } END { print NR, bad + 0 }'"
    assert_output '24 0'
    # a file: its level, kept whatever this run's first window measures
    AS_BENCH_FAKE_NOISE=quiet,drift=1.5 as-bench --tables "$T/pool.ast" --sample 8 --seed 9 $NOISE --interleave 4 --reference-level "$T/l.ast" -q -o "$T/b.ast"
    run sh -c "as-show --kind cost '$T/b.ast' | jq -c .reference.level_ms | sort -u"
    assert_output '0.05'
    # errors: no reference (usage), another reference shard, a file without a level, not a level
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference none --reference-level "$T/a.ast"
    assert_failure 2
    assert_output --partial '--reference-level needs a reference shard'
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference 0,2 --reference-level "$T/a.ast"
    assert_failure 1
    assert_output --partial 'this run'"'"'s is 0,2: their levels are not comparable'
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference-level "$T/none.ast"
    assert_failure 1
    assert_output --partial 'no cost record carries a reference level'
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference-level -1
    assert_failure 2
    assert_output --partial "--reference-level: '-1' is not a level in [1e-06, 1e+06] ms"
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference-level "$T/missing.ast"
    assert_failure 1
    assert_output --partial 'missing.ast'
    # a number is a level, never a file name, and a level is 1e-6..1e6 ms: 1e-308 underflows,
    # 1e308 would make costs of 1e307 ms
    for L in 1e-308 1e308 1e-7 2e6 inf 1e999; do
        run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference-level "$L" -o "$T/x.ast"
        assert_failure 2
        assert_output --partial "--reference-level: '$L' is not a level in [1e-06, 1e+06] ms (a number is a level, not a file name)"
        [ ! -e "$T/x.ast" ]
    done
    # an earlier run's level out of those bounds is bad data
    mp_edit "$T/l.ast" "for c in kind('cost'): c['reference']['level_ms'] = 1e308" > "$T/huge.ast"
    run as-bench --tables "$T/pool.ast" --sample 4 $NOISE --reference-level "$T/huge.ast"
    assert_failure 1
    assert_output --partial '`reference` is not {"tables": [ids], "level_ms": a level in [1e-06, 1e+06] ms}'
}

@test "as-bench: the quiet-machine check warns when the fake timer makes it noisy; --no-calibrate and -q silence it" {
    pool
    opts="--device cpu --warmup 1 --runs 5 --trim 1 --flush 1M --sample 2"
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,calib=noisy as-bench --tables '$T/pool.ast' $opts -o '$T/c.ast' 2>&1"
    assert_success
    assert_line --regexp '^as-bench: warning: quiet-machine check: a fixed CPU kernel on [0-9]+ threads?: 30 runs, median .* ms, spread [0-9.]+ %, slowest [0-9.]+x the median: the machine looks loaded \(spread above 5 %\); the costs will be noisy$'
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,calib=noisy as-bench --tables '$T/pool.ast' $opts --no-calibrate -o '$T/c.ast' 2>&1"
    refute_output --partial "quiet-machine check"
    run sh -c "AS_BENCH_FAKE_NOISE=quiet,calib=noisy as-bench --tables '$T/pool.ast' $opts -q -o '$T/c.ast' 2>&1"
    assert_output ""
    # quiet: a line under -v only
    run sh -c "AS_BENCH_FAKE_NOISE=quiet as-bench --tables '$T/pool.ast' $opts -o '$T/c.ast' 2>&1"
    refute_output --partial "quiet-machine check"
    run sh -c "AS_BENCH_FAKE_NOISE=quiet as-bench --tables '$T/pool.ast' $opts -v -o '$T/c.ast' 2>&1"
    assert_line --regexp '^as-bench: quiet-machine check: .*: quiet$'
    # the real timer: the check runs and reports (its verdict depends on the machine)
    run sh -c "as-bench --tables '$T/pool.ast' $opts -v -o '$T/c.ast' 2>&1"
    assert_success
    assert_line --partial "quiet-machine check: a fixed CPU kernel"
}

# a config with one table far larger than the others (2 M rows x 32: 128 MiB of fp16 weights)
bigcfg() {
    cat > "$T/big.json" <<'JSON'
{"topology": {"world_size": 2, "batch_size_per_rank": 128},
 "tables": [{"name": "big", "num_embeddings": 2000000, "embedding_dim": 32, "pooling_factor": 4},
            {"name": "small", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2}]}
JSON
    as-convert --config "$T/big.json" -o "$T/big.ast"
}

@test "as-bench --row-cap: tables above it measured over that many rows; the records say so; memory follows the cap" {
    bigcfg
    AS_BENCH_FAKE_NOISE=quiet run as-bench --tables "$T/big.ast" $FAST --sample 2 --max-tables 2 --singles --row-cap 4096 -o "$T/c.ast"
    assert_success
    assert_output --partial "--row-cap 4096: 1 table or piece above it, measured over that many rows; every distinct row kept apart"
    # every record carries the cap; `capped` counts the shard's capped tables
    run sh -c "as-show --kind cost '$T/c.ast' | jq -c '[.origin, .tables, .row_cap, .capped]' | sort -u"
    assert_line '["single",[0],4096,1]'
    assert_line '["single",[1],4096,0]'
    AS_BENCH_FAKE_NOISE=quiet as-bench -q --tables "$T/big.ast" $FAST --sample 2 --max-tables 2 --singles -o "$T/u.ast"
    run sh -c "as-show --kind cost '$T/u.ast' | jq -c '[.row_cap, .capped]' | sort -u"
    assert_output '[null,0]'
    # the weights take the capped rows: big alone needs far less
    cb=$(as-show --kind cost "$T/c.ast" | jq -s 'map(select(.tables == [0]))[0].bytes')
    ub=$(as-show --kind cost "$T/u.ast" | jq -s 'map(select(.tables == [0]))[0].bytes')
    [ "$ub" -gt $((cb + 100000000)) ]
    # a budget the whole table does not fit, the capped one does
    run as-bench --tables "$T/big.ast" $FAST --flush 1M --sample 1 --max-tables 1 --sample-from 0 --max-mem 100M -o "$T/m.ast"
    assert_output --partial "does not fit"
    run as-bench --tables "$T/big.ast" $FAST --flush 1M --sample 1 --max-tables 1 --sample-from 0 --max-mem 100M --row-cap 65536 -o "$T/m.ast"
    assert_success
    [ "$(as-show --kind cost "$T/m.ast" | jq -c '[.error, .cost_ms > 0]')" = '[null,true]' ]
    # fewer rows than distinct rows: they share, and stderr says how many
    run as-bench --tables "$T/big.ast" $FAST --sample 1 --max-tables 1 --sample-from 0 --row-cap 16 -o "$T/s.ast"
    assert_success
    assert_output --regexp "--row-cap: [0-9]+ of [0-9]+ distinct rows of the capped tables merged into others"
    # a plan measured under a cap says so (cost_row_cap); without one, nil
    make_stream "$HDR"'\x86\xa4kind\xa4plan\xa4task\x00\xa3alg\xa1x\xa6shards\x02\xa6tables\x92\x00\x01\xa6assign\x92\x00\x01' > "$T/p.ast"
    AS_BENCH_FAKE_NOISE=quiet as-bench -q --tables "$T/big.ast" $FAST --row-cap 4096 "$T/p.ast" -o "$T/pm.ast"
    [ "$(as-show --kind plan "$T/pm.ast" | jq -c '[.cost_row_cap, (.cost_ms | length)]')" = '[4096,2]' ]
    AS_BENCH_FAKE_NOISE=quiet as-bench -q --tables "$T/big.ast" $FAST "$T/p.ast" -o "$T/pn.ast"
    [ "$(as-show --kind plan "$T/pn.ast" | jq -c .cost_row_cap)" = null ]
    # a reference level measured under another cap is not comparable; a bad cap is a usage error
    run as-bench --tables "$T/big.ast" $FAST --sample 2 --reference-level "$T/u.ast" --row-cap 4096 -o "$T/x.ast"
    assert_failure 1
    assert_output --partial "measured with --row-cap none, this run with 4096: their reference levels are not comparable"
    for bad in 0 -5 x 3000000000; do
        run as-bench --tables "$T/big.ast" $FAST --sample 1 --row-cap "$bad"
        assert_failure 2
        assert_output --partial "--row-cap"
    done
    run as-bench --help
    assert_output --partial "--row-cap R"
}

@test "as-bench --weights-type, --optimizer: the shards train as the model does; the records say so; memory follows" {
    pool
    opts="--tables $T/pool.ast $FAST --sample 4 --max-tables 3 --singles --seed 2"
    AS_BENCH_FAKE_NOISE=quiet as-bench -q $opts -o "$T/h.ast"
    AS_BENCH_FAKE_NOISE=quiet as-bench -q $opts --weights-type fp32 --optimizer exact_rowwise_adagrad -o "$T/f.ast"
    AS_BENCH_FAKE_NOISE=quiet as-bench -q $opts --weights-type fp32 --optimizer adam -o "$T/a.ast"
    # fp16 with SGD (the paper's protocol, the default) writes neither field; others both
    run sh -c "as-show --kind cost '$T/h.ast' | jq -c '[.weights_type, .optimizer, .error]' | sort -u"
    assert_output '[null,null,null]'
    run sh -c "as-show --kind cost '$T/f.ast' | jq -c '[.weights_type, .optimizer, .error, .cost_ms > 0]' | sort -u"
    assert_output '["fp32","exact_rowwise_adagrad",null,true]'
    # the same shards; each needs more memory in fp32, more again with Adam's two moments
    [ "$(as-show --kind cost "$T/h.ast" | jq -c .tables)" = "$(as-show --kind cost "$T/f.ast" | jq -c .tables)" ]
    as-show --kind cost "$T/h.ast" | jq .bytes > "$T/hb"
    as-show --kind cost "$T/f.ast" | jq .bytes > "$T/fb"
    as-show --kind cost "$T/a.ast" | jq .bytes > "$T/ab"
    run sh -c "paste '$T/hb' '$T/fb' '$T/ab' | awk '!(\$1 < \$2 && \$2 < \$3) { bad++ } END { print bad + 0, NR }'"
    assert_output --regexp "^0 [1-9][0-9]*$"
    # tables: each table's data_type from its record (a config's: fp32 unless it says)
    cat > "$T/m.json" <<'JSON'
{"topology": {"world_size": 2, "batch_size_per_rank": 64},
 "tables": [{"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2},
            {"name": "b", "num_embeddings": 500, "embedding_dim": 8, "pooling_factor": 1, "data_type": "bf16"}]}
JSON
    as-convert --config "$T/m.json" -o "$T/m.ast"
    AS_BENCH_FAKE_NOISE=quiet as-bench -q --tables "$T/m.ast" $FAST --sample 2 --max-tables 2 --singles --weights-type tables -o "$T/t.ast"
    run sh -c "as-show --kind cost '$T/t.ast' | jq -c '[.tables, .weights_type, .optimizer]' | sort -u"
    assert_line '[[0],"fp32","sgd"]'
    assert_line '[[1],"bf16","sgd"]'
    assert_line --regexp '^\[\[[01],[01]\],"mixed","sgd"\]$'
    # a type the kernels lack is refused, naming the table
    sed 's/"bf16"/"int8"/' "$T/m.json" > "$T/i.json"
    as-convert --config "$T/i.json" -o "$T/i.ast"
    run as-bench --tables "$T/i.ast" $FAST --sample 1 --weights-type tables -o "$T/x.ast"
    assert_failure
    assert_output --partial "table 1: its weights are int8; the kernels measure fp32, fp16 and bf16"
    run as-bench --tables "$T/i.ast" $FAST --sample 1 --weights-type fp16 -o "$T/x.ast"
    assert_success
    # usage
    run as-bench --tables "$T/pool.ast" --sample 1 --weights-type fp64
    assert_failure 2
    assert_output --partial "--weights-type: 'fp64' is not fp16, fp32, bf16 or tables"
    run as-bench --tables "$T/pool.ast" --sample 1 --optimizer lamb
    assert_failure 2
    assert_output --partial "--optimizer: 'lamb' is not sgd, exact_rowwise_adagrad or adam"
}
