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
