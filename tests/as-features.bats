#!/usr/bin/env bats
# as-features: features of tables computed by hand, pass-through, tasks, the CLI contract.
load test_helper/common

# {"kind":"table","id":7,"rows":10,"batch":4,"lookups":8,"dim":16,
#  "offsets":int32[0,3,3,7,8],"indices":int32[1,1,2,3,1,1,4,1]}
I32() { for v in "$@"; do printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $(((v >> 8) & 255)) $(((v >> 16) & 255)) $(((v >> 24) & 255)); done; }
TABLE='\x88\xa4kind\xa5table\xa2id\x07\xa4rows\x0a\xa5batch\x04\xa7lookups\x08\xa3dim\x10'\
'\xa7offsets\x83\xa5dtype\xa5int32\xa5shape\x91\x05\xa4data\xc4\x14'"$(I32 0 3 3 7 8)"\
'\xa7indices\x83\xa5dtype\xa5int32\xa5shape\x91\x08\xa4data\xc4\x20'"$(I32 1 1 2 3 1 1 4 1)"

@test "as-features --help and --version" {
    run as-features --help
    assert_success
    assert_output --partial "usage: as-features"
    assert_output --partial "--unseen-ratio"
    run as-features --version
    assert_success
}

@test "as-features: usage errors are exit 2" {
    run as-features --bogus
    assert_failure 2
    run as-features --tasks 10 --shards 0
    assert_failure 2
    run as-features --shards 4
    assert_failure 2
    assert_output --partial "need --tasks"
    run as-features --tasks 10 --test-tasks 11
    assert_failure 2
    run as-features --tasks 10 --mem-cap 2X
    assert_failure 2
    run as-features --tasks 10 --unseen-ratio 1.5
    assert_failure 2
    # tasks the other tools would refuse: over the record limits, unless the limit is raised
    run as-features --tasks 10 --shards 65537
    assert_failure 2
    assert_output --partial "AS_MAX_SHARDS"
    run as-features --tasks 10 --task-tables 65537
    assert_failure 2
    assert_output --partial "AS_MAX_TABLES"
    run env AS_MAX_SHARDS=70000 as-features --tasks 10 --shards 65537 < /dev/null
    assert_failure 1
    assert_output --partial "empty input"
}

@test "as-features: empty, non-zstd and truncated input are exit 1; TTY and /dev/full refused" {
    run as-features < /dev/null
    assert_failure 1
    echo hello > "$T/x"
    run as-features "$T/x"
    assert_failure 1
    as-convert --synth --preset tiny --first 3 -o "$T/t.ast"
    head -c 2000 "$T/t.ast" > "$T/cut.ast"
    run as-features "$T/cut.ast" -o "$T/out.ast"
    assert_failure 1
    [ ! -e "$T/out.ast" ]
    run_tty "as-features '$T/t.ast'"
    assert_failure 2
    run as-features "$T/t.ast" -o /dev/full
    assert_failure 3
}

@test "as-features: a hand-made table gives the hand-computed features" {
    make_stream "$HDR$TABLE" > "$T/h.ast"
    run sh -c "as-features '$T/h.ast' | as-show --no-header | jq -c '[.kind,.id,.dim,.rows,.pooling,.lookups,.distinct,.max_bag,.mean_bag,.bytes_fp16,.bytes_fp32]'"
    assert_success
    assert_output '["features",7,16,10,2,8,4,4,2,320,640]'
    run sh -c "as-features '$T/h.ast' | as-show --no-header | jq -c '[.bins, .lookup_bins, (.features | length), .features[0:3], .features[3] * 1073741824, .size * 1073741824]'"
    assert_output '[[0.75,0,0,0.25,0,0,0,0,0,0,0,0,0,0,0,0,0],[0.375,0,0,0.625,0,0,0,0,0,0,0,0,0,0,0,0,0],21,[16,10,2],320,320]'
}

@test "as-features: a table whose index exceeds rows is exit 1 naming the record" {
    bad=$(echo "$TABLE" | sed 's/\\xa4rows\\x0a/\\xa4rows\\x04/')
    make_stream "$HDR$bad" > "$T/b.ast"
    run as-features "$T/b.ast"
    assert_failure 1
    assert_output --partial "record 2: table 7: indices[6] = 4 is outside [0, rows = 4)"
}

@test "as-features: pipeline from as-convert; bins sum to 1; features and other records pass through" {
    as-convert --synth --preset tiny | as-features -o "$T/f.ast"
    run as-show --count "$T/f.ast"
    assert_line "features	32"
    run sh -c "as-show --no-header '$T/f.ast' | jq -e -s 'all(.[]; (.bins | add) as \$s |
        (if .lookups > 0 then (\$s - 1 | fabs) < 1e-9 else \$s == 0 end) and (.features | length) == 21
        and .features[0] == .dim and .features[1] == .rows and .features[4:] == .bins)'"
    assert_success
    # features in, the same features out; an unknown kind passes unchanged
    make_stream "$HDR"'\x82\xa4kind\xa5other\xa1x\x2a' > "$T/o.ast"
    cat "$T/f.ast" "$T/o.ast" | as-features -o "$T/f2.ast"
    [ "$(as-show --no-header --kind features "$T/f2.ast")" = "$(as-show --no-header "$T/f.ast")" ]
    run as-show --kind other "$T/f2.ast"
    assert_output '{"kind":"other","x":42}'
}

@test "as-features --tasks: the paper's split, deterministic, disjoint" {
    as-convert --synth --preset tiny -o "$T/t.ast"
    as-features "$T/t.ast" --tasks 20 --task-tables 8 --seed 3 -o "$T/a.ast"
    as-features "$T/t.ast" --tasks 20 --task-tables 8 --seed 3 -o "$T/b.ast"
    as-features "$T/t.ast" --tasks 20 --task-tables 8 --seed 4 -o "$T/c.ast"
    [ "$(as-show --kind task "$T/a.ast")" = "$(as-show --kind task "$T/b.ast")" ]
    [ "$(as-show --kind task "$T/a.ast")" != "$(as-show --kind task "$T/c.ast")" ]
    run sh -c "as-show --kind task '$T/a.ast' | jq -r '[.split, .shards, (.tables | length), (.tables | unique | length)] | @tsv' | sort | uniq -c"
    assert_line --regexp '^ +18 train	1	8	8$'
    assert_line --regexp '^ +2 test	1	8	8$'
    run sh -c "as-show --kind task '$T/a.ast' | jq -s -e '(map(select(.split == \"train\") | .tables)) as \$tr |
        all(.[] | select(.split == \"test\"); .tables as \$t | all(\$tr[]; . != \$t))'"
    assert_success
    # from a features stream, the same tasks
    as-features "$T/t.ast" -o "$T/f.ast"
    [ "$(as-features "$T/f.ast" --tasks 20 --task-tables 8 --seed 3 | as-show --kind task)" = "$(as-show --kind task "$T/a.ast")" ]
}

@test "as-features --tasks: the transfer setting draws unseen tables from the second half" {
    as-convert --synth --preset tiny | as-features --tasks 10 --test-tasks 5 --task-tables 10 --unseen-ratio 0.4 -o "$T/a.ast"
    run sh -c "as-show --kind task '$T/a.ast' | jq -r '[.split, .setting, .unseen, ([.tables[] | select(. >= 16)] | length)] | @tsv' | sort -u"
    assert_output "test	transfer	4	4
train	transfer	0	0"
}

@test "as-features --tasks: impossible tasks are exit 1 with a clear message" {
    as-convert --synth --preset tiny -o "$T/t.ast"
    run as-features "$T/t.ast" --tasks 5 --task-tables 40
    assert_failure 1
    assert_output --partial "needs at least that many in the pool, which has 32"
    run as-features "$T/t.ast" --tasks 5 --task-tables 10 --mem-cap 1K
    assert_failure 1
    assert_output --partial "memory cap"
    make_stream "$HDR"'\x82\xa4kind\xa5other\xa1x\x2a' > "$T/o.ast"
    run as-features "$T/o.ast" --tasks 5
    assert_failure 1
    assert_output --partial "no tables or features"
}

@test "as-features: concatenated input" {
    as-convert --synth --preset tiny --first 3 -o "$T/a.ast"
    as-convert --synth --preset tiny --tables 5 --seed 9 -o "$T/b.ast"
    run sh -c "cat '$T/a.ast' '$T/b.ast' | as-features | as-show --count"
    assert_line "features	8"
    assert_line "header	1"
}

@test "as-features --drop-tasks: new tasks over a features stream replace its old ones" {
    as-convert --synth --preset tiny | as-features --tasks 10 --task-tables 8 --seed 0 -o "$T/f.ast"
    run as-show --count "$T/f.ast"
    assert_line "task	10"
    # without the flag the old tasks pass through next to the new ones
    as-features --tasks 4 --task-tables 16 --seed 1 "$T/f.ast" -o "$T/g.ast"
    run as-show --count "$T/g.ast"
    assert_line "task	14"
    as-features --drop-tasks --tasks 4 --task-tables 16 --seed 1 "$T/f.ast" -o "$T/h.ast"
    run as-show --count "$T/h.ast"
    assert_line "task	4"
    run sh -c "as-show --kind task '$T/h.ast' | jq -r '.tables | length' | sort -u"
    assert_output "16"
    # the features themselves pass unchanged
    [ "$(as-show --kind features "$T/f.ast" | md5sum)" = "$(as-show --kind features "$T/h.ast" | md5sum)" ]
}

# ---- -o: atomic, never over an input; usage errors (issue 11) --------------------------------

@test "as-features: killed mid-write (SIGTERM, SIGINT), the old -o file is intact and no temporary is left" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    echo precious > "$T/old"
    for sig in TERM INT; do
        cp "$T/old" "$T/out.ast"
        kill_mid_write $sig "$T/out.ast" as-features "$T/pool.ast" --tasks 50 --task-tables 10 -o "$T/out.ast"
        assert_killed_intact $sig "$T/out.ast" "$T/old"
    done
}

@test "as-features: -o onto an input is refused; bad data keeps the old -o file" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    cp "$T/pool.ast" "$T/orig.ast"
    run as-features "$T/pool.ast" -o "$T/pool.ast"
    assert_failure 2
    assert_output --partial "it is also an input"
    cmp "$T/pool.ast" "$T/orig.ast"
    echo precious > "$T/out.ast"
    head -c 20000 "$T/pool.ast" > "$T/cut.ast"
    run as-features "$T/pool.ast" "$T/cut.ast" -o "$T/out.ast"
    assert_failure 1
    [ "$(cat "$T/out.ast")" = precious ]
    [ -z "$(compgen -G "$T/out.ast.tmp.*")" ]
}

@test "as-features: a missing option value and an empty -o are usage errors" {
    run as-features --tasks
    assert_failure 2
    assert_output --partial "option --tasks needs a value"
    refute_output --partial "unknown option"
    run as-features -o
    assert_failure 2
    assert_output --partial "option -o needs a value"
    run as-features -o '' < /dev/null
    assert_failure 2
    assert_output --partial "empty file name"
}
