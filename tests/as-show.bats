#!/usr/bin/env bats
# as-show: the generic stream printer; every failure mode of the stream reader.
load test_helper/common

@test "as-show --help and --version print to stdout and exit 0" {
    run as-show --help
    assert_success
    assert_output --partial "usage: as-show"
    assert_output --partial "Exit status"
    run as-show --version
    assert_success
    assert_line --index 0 --regexp '^as-show [0-9]+\.[0-9]+\.[0-9]+$'
    assert_output --partial "stream schema autoshard v1"
}

@test "as-show: a bad option is a usage error (exit 2)" {
    run as-show --bogus
    assert_failure 2
    assert_output --partial "usage: as-show"
    run as-show --head abc
    assert_failure 2
}

@test "as-show: empty input is exit 1" {
    run as-show < /dev/null
    assert_failure 1
    assert_output --partial "empty input"
}

@test "as-show: non-zstd input is exit 1 with a clear message" {
    echo '{"kind":"table"}' > "$T/x.json"
    run as-show "$T/x.json"
    assert_failure 1
    assert_output "as-show: $T/x.json: not an autoshard stream (no zstd frame magic)"
}

@test "as-show: golden output of a hand-made stream" {
    # header, then {"kind":"t","id":7,"x":1.5,"a":{"dtype":"int32","shape":[3],"data":bin(1,2,-1)},"s":[1,"two",null,true]}
    make_stream "$HDR"'\x85\xa4kind\xa1t\xa2id\x07\xa1x\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\xa1a\x83\xa5dtype\xa5int32\xa5shape\x91\x03\xa4data\xc4\x0c\x01\x00\x00\x00\x02\x00\x00\x00\xff\xff\xff\xff\xa1s\x94\x01\xa3two\xc0\xc3' > "$T/g.ast"
    run as-show "$T/g.ast"
    assert_success
    assert_line --index 0 '{"kind":"header","schema":"autoshard","version":1,"tool":"bats"}'
    assert_line --index 1 '{"kind":"t","id":7,"x":1.5,"a":{"dtype":"int32","shape":[3],"head":[1,2,-1]},"s":[1,"two",null,true]}'
    run as-show --full --no-header "$T/g.ast"
    assert_output '{"kind":"t","id":7,"x":1.5,"a":{"dtype":"int32","shape":[3],"data":[1,2,-1]},"s":[1,"two",null,true]}'
    run as-show --head 1 --kind t "$T/g.ast"
    assert_output '{"kind":"t","id":7,"x":1.5,"a":{"dtype":"int32","shape":[3],"head":[1]},"s":[1,"two",null,true]}'
}

@test "as-show: concatenated streams are one valid input" {
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\x01' > "$T/a.ast"
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\x02' > "$T/b.ast"
    cat "$T/a.ast" "$T/b.ast" > "$T/ab.ast"
    run as-show --count "$T/ab.ast"
    assert_success
    assert_line "header	2"
    assert_line "t	2"
    run as-show --kind t "$T/a.ast" "$T/b.ast"
    assert_line --index 1 '{"kind":"t","id":2}'
}

@test "as-show: truncated input is exit 1, whatever the cut" {
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\x01' > "$T/a.ast"
    size=$(stat -c %s "$T/a.ast")
    for cut in 1 5 10 $((size/2)) $((size-1)); do
        head -c "$cut" "$T/a.ast" > "$T/cut.ast"
        run as-show "$T/cut.ast"
        assert_failure 1
    done
    # a record cut short inside a valid zstd frame
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2' > "$T/short.ast"
    run as-show "$T/short.ast"
    assert_failure 1
    assert_output --partial "record 2: truncated record"
}

@test "as-show: malformed records, unknown versions and oversized records are exit 1" {
    make_stream '\x84\xa4kind\xa6header\xa6schema\xa9autoshard\xa7version\x07\xa4tool\xa1x' > "$T/v.ast"
    run as-show "$T/v.ast"
    assert_failure 1
    assert_output --partial "record 1: unsupported stream version 7"
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\xc1' > "$T/m.ast"
    run as-show "$T/m.ast"
    assert_failure 1
    assert_output --partial "record 2: malformed msgpack"
    make_stream '\x81\xa4kind\xa1t' > "$T/h.ast"
    run as-show "$T/h.ast"
    assert_failure 1
    assert_output --partial "does not start with a header"
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\xc4\x40'"$(printf '%064d' 0)" > "$T/big.ast"
    AS_MAX_RECORD=70 run as-show "$T/big.ast"
    assert_failure 1
    assert_output --partial "record 2"
    assert_output --partial "cap"
}

@test "as-show: a write error is exit 3" {
    make_stream "$HDR" > "$T/a.ast"
    run as-show "$T/a.ast" -o /dev/full
    assert_failure 3
    run sh -c "as-show '$T/a.ast' > /dev/full"
    assert_failure 3
}

@test "as-show: a missing file is exit 1" {
    run as-show "$T/nope.ast"
    assert_failure 1
    assert_output --partial "No such file"
}

# ---- -o: atomic, never over an input (issue 11) ---------------------------------------------

@test "as-show -o: a failed run leaves the old file as it was, no temporary" {
    echo precious > "$T/out.txt"
    run as-show "$T/nonexistent.ast" -o "$T/out.txt"
    assert_failure 1
    [ "$(cat "$T/out.txt")" = precious ]
    # bad data after some records were printed: the old file stays, the partial text is dropped
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\x01' > "$T/a.ast"
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2' > "$T/short.ast"
    run as-show "$T/a.ast" "$T/short.ast" -o "$T/out.txt"
    assert_failure 1
    [ "$(cat "$T/out.txt")" = precious ]
    [ -z "$(compgen -G "$T/out.txt.tmp.*")" ]
    # success replaces it; an empty result is an empty file
    as-show "$T/a.ast" -o "$T/out.txt"
    [ "$(wc -l < "$T/out.txt")" -eq 2 ]
    as-show --kind none "$T/a.ast" -o "$T/out.txt"
    [ ! -s "$T/out.txt" ]
}

@test "as-show -o onto an input is refused (exit 2): the same path, a hard link, standard input" {
    make_stream "$HDR"'\x82\xa4kind\xa1t\xa2id\x01' > "$T/in.ast"
    cp "$T/in.ast" "$T/orig.ast"
    run as-show "$T/in.ast" -o "$T/in.ast"
    assert_failure 2
    assert_output --partial "it is also an input"
    cmp "$T/in.ast" "$T/orig.ast"
    ln "$T/in.ast" "$T/link.ast"
    run as-show "$T/link.ast" -o "$T/in.ast"
    assert_failure 2
    run sh -c "as-show -o '$T/in.ast' < '$T/in.ast'"
    assert_failure 2
    assert_output --partial "<stdin>"
    run sh -c "as-show - -o '$T/in.ast' < '$T/in.ast'"
    assert_failure 2
    cmp "$T/in.ast" "$T/orig.ast"
}

@test "as-show: killed mid-write (SIGTERM, SIGINT, SIGHUP), the old -o file is intact and no temporary is left" {
    as-convert --synth --preset tiny -o "$T/in.ast"
    echo precious > "$T/old"
    for sig in TERM INT HUP; do
        cp "$T/old" "$T/out.txt"
        kill_mid_write $sig "$T/out.txt" as-show --full "$T/in.ast" -o "$T/out.txt"
        assert_killed_intact $sig "$T/out.txt" "$T/old"
    done
    # no old file: none afterwards
    rm "$T/out.txt"
    kill_mid_write TERM "$T/out.txt" as-show --full "$T/in.ast" -o "$T/out.txt"
    [ "$status" -eq 143 ] && [ ! -e "$T/out.txt" ] && [ -z "$(compgen -G "$T/out.txt.tmp.*")" ]
}

@test "as-show: killed for real while writing a large -o (no test hook), the old file is intact" {
    as-convert --synth --preset small -o "$T/in.ast"
    echo precious > "$T/old"
    for sig in TERM INT; do
        cp "$T/old" "$T/out.txt"
        KILL_HOOK=0 kill_mid_write $sig "$T/out.txt" as-show --full "$T/in.ast" -o "$T/out.txt"
        assert_killed_intact $sig "$T/out.txt" "$T/old"
    done
}

@test "as-show: a missing option value, an empty or unusable -o are reported before any work" {
    run as-show -o
    assert_failure 2
    assert_output --partial "option -o needs a value"
    refute_output --partial "unknown option"
    run as-show --kind
    assert_failure 2
    assert_output --partial "option --kind needs a value"
    run as-show --head
    assert_failure 2
    assert_output --partial "option --head needs a value"
    make_stream "$HDR" > "$T/a.ast"
    run as-show "$T/a.ast" -o ''
    assert_failure 2
    assert_output --partial "empty file name"
    run as-show "$T/a.ast" -o "$T"
    assert_failure 2
    assert_output --partial "is a directory"
    run as-show "$T/a.ast" -o "$T/no/such/dir/out.txt"
    assert_failure 3
    assert_output --partial "No such file or directory"
}
