#!/usr/bin/env bats
# as-convert: torch.save reading (--list/--dump on real files), MetaSyn/prototype conversion
# with validation, the synthetic pool, and the command-line contract.
load test_helper/common

@test "as-convert --help and --version" {
    run as-convert --help
    assert_success
    assert_output --partial "usage: as-convert"
    assert_output --partial "--synth"
    assert_output --partial "Exit status"
    run as-convert --version
    assert_success
    assert_line --index 0 --regexp '^as-convert [0-9.]+$'
}

@test "as-convert: usage errors are exit 2" {
    run as-convert --bogus
    assert_failure 2
    run as-convert
    assert_failure 2
    assert_output --partial "no input file"
    run as-convert --synth --dims 16,x
    assert_failure 2
    run as-convert --synth --batch 0
    assert_failure 2
    run as-convert --synth --list
    assert_failure 2
    run as-convert --synth some.pt
    assert_failure 2
    run as-convert --tables 1,,2 x.pt
    assert_failure 2
    run as-convert --synth --preset huge
    assert_failure 2
}

@test "as-convert: refuses to write binary to a terminal" {
    run_tty as-convert --synth --preset tiny
    assert_failure 2
    assert_output --partial "refusing to write binary output to a terminal"
}

@test "as-convert: a write error is exit 3 and leaves no partial file" {
    run sh -c 'as-convert --synth --preset tiny > /dev/full'
    assert_failure 3
    run as-convert --synth --preset tiny -o /dev/full
    assert_failure 3
    mkdir "$T/ro" && chmod 500 "$T/ro"
    if [ "$(id -u)" != 0 ]; then
        run as-convert --synth --preset tiny -o "$T/ro/x.ast"
        assert_failure 3
    fi
}

@test "as-convert: empty, non-torch and missing inputs are exit 1" {
    : > "$T/empty.pt"
    run as-convert "$T/empty.pt"
    assert_failure 1
    assert_output --regexp "^as-convert: $T/empty.pt: "
    echo "hello world, not a torch file" > "$T/text.pt"
    run as-convert --list "$T/text.pt"
    assert_failure 1
    run as-convert --list "$T/none.pt"
    assert_failure 1
    run as-convert - < /dev/null
    assert_failure 1
}

@test "as-convert --list and --dump read every real torch.save fixture" {
    n=0
    for f in "$FIXTURES"/pt/*.pt; do
        b=$(basename "$f" .pt)
        dt=${b#tensor_}; dt=${dt%%_proto*}
        case $dt in
            int8|int16|int32|int64) want="1 -2 3 -4" ;;
            uint8) want="1 10 100 255" ;;
            bool) want="true false true false" ;;
            *) want="1.2 -3.4 5.6 -7.8" ;;
        esac
        run as-convert --list "$f"
        assert_success
        assert_output ".	$dt	[4]"
        run as-convert --dump "$f"
        assert_success
        assert_output ".	$dt	[4]	$want"
        n=$((n+1))
    done
    [ "$n" -eq 100 ]
}

@test "as-convert: gzip'd and piped torch.save files read the same" {
    f="$FIXTURES/pt/tensor_float16_proto2_zip.pt"
    gzip -c "$f" > "$T/x.pt.gz"
    run as-convert --dump "$T/x.pt.gz"
    assert_success
    assert_output ".	float16	[4]	1.2 -3.4 5.6 -7.8"
    run sh -c "cat '$FIXTURES/pt/tensor_int64_proto1.pt' | as-convert --dump -"
    assert_success
    assert_output ".	int64	[4]	1 -2 3 -4"
}

@test "as-convert: truncated torch.save files are exit 1, never a crash" {
    for f in "$FIXTURES/pt/tensor_int32_proto2_zip.pt" "$FIXTURES/pt/tensor_int32_proto2.pt"; do
        size=$(stat -c %s "$f")
        for cut in 0 1 10 $((size/3)) $((size/2)) $((size-30)) $((size-1)); do
            head -c "$cut" "$f" > "$T/cut.pt"
            run as-convert --dump "$T/cut.pt"
            assert_failure 1
        done
    done
}

@test "as-convert --synth: valid tables, deterministic for a seed" {
    as-convert --synth --preset tiny -o "$T/a.ast"
    as-convert --synth --preset tiny > "$T/b.ast"
    as-convert --synth --preset tiny --seed 1 -o "$T/c.ast"
    run as-show --count "$T/a.ast"
    assert_line "table	32"
    [ "$(canon "$T/a.ast")" = "$(canon "$T/b.ast")" ]
    [ "$(canon "$T/a.ast")" != "$(canon "$T/c.ast")" ]
    # invariants of every table record
    run sh -c "as-show --full --no-header '$T/a.ast' | jq -e -s 'all(.[];
        .kind == \"table\" and .batch == 512 and (.offsets.shape == [513]) and .offsets.data[0] == 0
        and .offsets.data[-1] == .lookups and (.indices.shape == [.lookups])
        and ((.indices.data | max // 0) < .rows) and ((.indices.data | min // 0) >= 0)
        and (.pooling - .lookups / .batch | fabs) < 1e-12 and (.dim == 16 or .dim == 32))'"
    assert_success
    # both default dims occur
    run sh -c "as-show --no-header '$T/a.ast' | jq -r .dim | sort -u | tr '\n' ' '"
    assert_output "16 32 "
}

@test "as-convert --synth: --first and the pool size select the same tables" {
    as-convert --synth --preset tiny -o "$T/all.ast"
    as-convert --synth --preset tiny --first 5 -o "$T/first.ast"
    [ "$(canon "$T/first.ast")" = "$(canon "$T/all.ast" | head -5)" ]
    as-convert --synth --preset tiny --dims 64 --first 3 -o "$T/d.ast"
    run sh -c "as-show --no-header '$T/d.ast' | jq -r .dim | sort -u"
    assert_output "64"
}

@test "as-convert: concatenated outputs are one valid stream" {
    as-convert --synth --preset tiny --first 2 -o "$T/a.ast"
    as-convert --synth --preset tiny --seed 3 --first 3 -o "$T/b.ast"
    run sh -c "cat '$T/a.ast' '$T/b.ast' | as-show --count"
    assert_success
    assert_line "header	2"
    assert_line "table	5"
}

@test "as-convert: zstd level 1 on one thread per core by default; the same records at any level, the same bytes at any thread count" {
    ptwrite metasyn --tables 6 --batch 4096 --row-scale 0.01 --seed 5 -o "$T/m.pt"
    run as-convert -v "$T/m.pt" -o "$T/a.ast"
    assert_success
    n=$(nproc)
    assert_output --partial "as-convert: zstd level 1, $(( n > 16 ? 16 : n )) compression thread(s)"
    # the records are those of level 3 in the calling thread (the tools' other default)
    run env AS_ZSTD_LEVEL=3 AS_ZSTD_WORKERS=0 as-convert -v "$T/m.pt" -o "$T/b.ast"
    assert_output --partial "as-convert: zstd level 3, 0 compression thread(s)"
    cmp <(canon "$T/a.ast") <(canon "$T/b.ast")
    [ "$(as-show --count "$T/a.ast")" = "$(printf 'header\t1\ntable\t6')" ]
    # any number of threads gives the same bytes (the command line, in the header, kept)
    as-convert "$T/m.pt" > "$T/w.ast"
    AS_ZSTD_WORKERS=1 as-convert "$T/m.pt" > "$T/w1.ast"
    AS_ZSTD_WORKERS=3 as-convert "$T/m.pt" > "$T/w3.ast"
    cmp "$T/w.ast" "$T/w1.ast"
    cmp "$T/w.ast" "$T/w3.ast"
    # the options win over the environment
    run env AS_ZSTD_LEVEL=3 AS_ZSTD_WORKERS=0 as-convert -v --zstd-level 2 --zstd-workers 2 "$T/m.pt" -o "$T/c.ast"
    assert_output --partial "as-convert: zstd level 2, 2 compression thread(s)"
    cmp <(canon "$T/a.ast") <(canon "$T/c.ast")
    # --help says so; the other tools keep level 3 in the calling thread
    run as-convert --help
    assert_output --partial "(default 1;"
    assert_output --partial "compression threads (default: one per core, at most 16;"
    run as-show --help
    assert_output --partial "(default 3;"
    assert_output --partial "compression threads (default 0 = in the calling thread;"
}

@test "pipelines/bench-convert: as-convert and zstd -T0 -1 side by side, the ratio of their throughputs" {
    command -v zstd > /dev/null || skip "no zstd command"
    run "$ROOT/pipelines/bench-convert" --tables 3 --batch 2048 --repeats 2 --dir "$T/bench"
    assert_success
    assert_line --regexp '^input: .*metasyn-t3-b2048\.pt, [0-9]+ bytes'
    [ "$(printf '%s\n' "$output" | grep -Ec '^[12] +as-convert +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+$')" = 2 ]
    [ "$(printf '%s\n' "$output" | grep -Ec '^[12] +zstd -T0 -1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+$')" = 2 ]
    assert_line --regexp '^as-convert / zstd -T0 -1 throughput: median [0-9.]+ \(min [0-9.]+, max [0-9.]+, 2 runs\)$'
    [ ! -e "$T/bench" ]
    run "$ROOT/pipelines/bench-convert" --repeats 0
    assert_failure 2
    run "$ROOT/pipelines/bench-convert" --also "$T/none"
    assert_failure 2
    # --also BIN: another build in the same runs, its own ratio
    run "$ROOT/pipelines/bench-convert" --tables 2 --batch 512 --repeats 1 --also "$(command -v as-convert)" --dir "$T/bench"
    assert_success
    assert_line --regexp '^1 +also +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+  \(.*as-convert\)$'
    assert_line --regexp '^.*as-convert / zstd -T0 -1 throughput: median [0-9.]+ \(min [0-9.]+, max [0-9.]+, 1 runs\)$'
}

# ---- -o: atomic, never over an input; exit codes (issue 11) ----------------------------------

@test "as-convert: killed mid-write (SIGTERM, SIGINT), the old -o file is intact and no temporary is left" {
    ptwrite metasyn --tables 6 --batch 64 --row-scale 0.001 --seed 5 -o "$T/m.pt"
    echo precious > "$T/old"
    for sig in TERM INT; do
        for mode in "--synth --preset tiny" "$T/m.pt" "--list $T/m.pt" "--dump $T/m.pt"; do
            cp "$T/old" "$T/out"
            kill_mid_write $sig "$T/out" as-convert $mode -o "$T/out"
            assert_killed_intact $sig "$T/out" "$T/old"
        done
    done
}

@test "as-convert --list/--dump -o: an error leaves the old file; -o onto the input is refused" {
    ptwrite metasyn --tables 6 --batch 64 --row-scale 0.001 --seed 5 -o "$T/m.pt"
    echo precious > "$T/out.txt"
    run as-convert --dump "$T/none.pt" -o "$T/out.txt"
    assert_failure 1
    [ "$(cat "$T/out.txt")" = precious ]
    cp "$T/m.pt" "$T/orig.pt"
    run as-convert --list "$T/m.pt" -o "$T/m.pt"
    assert_failure 2
    assert_output --partial "it is also an input"
    run as-convert "$T/m.pt" -o "$T/m.pt"
    assert_failure 2
    cmp "$T/m.pt" "$T/orig.pt"
    as-convert --dump "$T/m.pt" -o "$T/out.txt"
    [ "$(as-convert --dump "$T/m.pt")" = "$(cat "$T/out.txt")" ]
}

@test "as-convert: a missing or full TMPDIR is an environment failure (exit 3), not bad data" {
    ptwrite metasyn --tables 6 --batch 512 --row-scale 0.001 --seed 5 --gzip -o "$T/m.pt.gz"
    run env TMPDIR="$T/no-such-dir" as-convert --list "$T/m.pt.gz"
    assert_failure 3
    assert_output --partial "$T/no-such-dir"
    run sh -c "gzip -dc '$T/m.pt.gz' | TMPDIR='$T/no-such-dir' as-convert --list -"
    assert_failure 3
    # a full disk: writes past the file-size limit fail (EFBIG) once SIGXFSZ is ignored
    [ "$(gzip -dc "$T/m.pt.gz" | wc -c)" -gt 65536 ]
    run bash -c "trap '' XFSZ; ulimit -f 32; TMPDIR='$T' as-convert --list '$T/m.pt.gz'"
    assert_failure 3
    assert_output --partial "cannot write a temporary file"
    # and with room, the same input is fine
    TMPDIR="$T" as-convert --list "$T/m.pt.gz" > /dev/null
}

@test "as-convert: a missing option value and an empty -o are usage errors before any work" {
    run as-convert --synth --dims
    assert_failure 2
    assert_output --partial "option --dims needs a value"
    refute_output --partial "unknown option"
    run as-convert --synth -o
    assert_failure 2
    assert_output --partial "option -o needs a value"
    run as-convert --synth -o ''
    assert_failure 2
    assert_output --partial "empty file name"
    run as-convert --synth --output=
    assert_failure 2
}

# ---- limits on what one input may make (issue 11); the hostile files are seeds of the
# fuzz corpus, written by tests/fuzz/mkcorpus.c
HOSTILE="$ROOT/tests/fuzz/corpus"

@test "as-convert: expanded (stride-0) data tensors are refused, exit 1" {
    # 946 bytes: offsets and lengths expanded to a million tables (the old converter wrote them all)
    run as-convert "$HOSTILE/convert/stride0-tables.pt" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "offsets ([1]) has stride 0 in dimension 0 of size 1000001: an expanded tensor"
    [ ! -e "$T/out.ast" ]
    # batch 2^31 from two stored zeros (the old converter allocated and filled 2 x 16 GiB)
    run timeout 20 as-convert "$HOSTILE/convert/stride0-batch.pt" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "has stride 0"
    # --list shows them; --dump refuses 2^32 repeated elements but prints a small expansion
    run as-convert --list "$HOSTILE/convert/stride0-batch.pt"
    assert_success
    assert_line $'[1]\tint64\t[2147483649]\tstride=(0) offset=0'
    run timeout 20 as-convert --dump "$HOSTILE/convert/stride0-batch.pt"
    assert_failure 1
    assert_output --partial "elements allowed any file)"
}

@test "as-convert: a table stored once and referenced a thousand times is refused, exit 1" {
    run as-convert "$HOSTILE/convert/shared-storage.pt" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial "lS_indices and lS_offsets hold 4112000 bytes of data but their storages only 4112: overlapping, shared"
    [ ! -e "$T/out.ast" ]
    # the same layout stored honestly converts
    run as-convert "$HOSTILE/convert/prototype.pt" -o "$T/p.ast"
    assert_success
    run as-show --count "$T/p.ast"
    assert_line "table	2"
}

@test "as-convert: 2^20 paths to one tensor stop at AS_MAX_TENSORS (65536), exit 1" {
    # 524 bytes; the old reader listed a million tensors (430 MB)
    run sh -c 'as-convert --list "$1" > "$2"' _ "$HOSTILE/torchsave/dag-tensors.pt" "$T/list.txt"
    assert_failure 1
    [ ! -s "$T/list.txt" ]
    assert_output --partial "more than 65536 tensors in the object"
    assert_output --partial "AS_MAX_TENSORS raises the limit"
    run env AS_MAX_TENSORS=2 as-convert --list "$HOSTILE/convert/metasyn-zip.pt"
    assert_failure 1
    assert_output --partial "more than 2 tensors"
    run env AS_MAX_TENSORS=3 as-convert --list "$HOSTILE/convert/metasyn-zip.pt"
    assert_success
    run env AS_MAX_TENSORS=many as-convert --list "$HOSTILE/convert/metasyn-zip.pt"
    assert_failure 2
    assert_output --partial "AS_MAX_TENSORS: 'many'"
}

@test "as-convert: a gzip bomb stops at AS_MAX_GZIP_RATIO, before filling TMPDIR; AS_MAX_SPOOL" {
    head -c 64M /dev/zero | gzip -1 > "$T/bomb.pt.gz"
    [ "$(stat -c %s "$T/bomb.pt.gz")" -lt 1000000 ]
    mkdir "$T/tmp"
    # at most 32 MiB per file (the old reader spooled all 64 MiB and died of SIGXFSZ)
    run bash -c 'ulimit -f 32768; TMPDIR="$1" as-convert --list "$2"' _ "$T/tmp" "$T/bomb.pt.gz"
    assert_failure 1
    assert_output --partial "gzip: "
    assert_output --partial "a gzip bomb?); AS_MAX_GZIP_RATIO raises the limit"
    run bash -c 'ulimit -f 32768; TMPDIR="$1" as-convert --list - < "$2"' _ "$T/tmp" "$T/bomb.pt.gz"
    assert_failure 1
    assert_output --partial "a gzip bomb?"
    # raised, the zeros are spooled and found not to be torch.save data
    run env TMPDIR="$T/tmp" AS_MAX_GZIP_RATIO=2000 as-convert --list "$T/bomb.pt.gz"
    assert_failure 1
    assert_output --partial "not a torch.save file"
    run env TMPDIR="$T/tmp" AS_MAX_GZIP_RATIO=0 AS_MAX_SPOOL=10M as-convert --list "$T/bomb.pt.gz"
    assert_failure 1
    assert_output --partial "the decompressed input is larger than 10485760 bytes (AS_MAX_SPOOL"
    # piped plain input is spooled too, and bounded the same way
    run sh -c "cat '$HOSTILE/convert/metasyn-zip.pt' | AS_MAX_SPOOL=1K as-convert --list -"
    assert_failure 1
    assert_output --partial "the piped input is larger than 1024 bytes"
    run sh -c "cat '$HOSTILE/convert/metasyn-zip.pt' | AS_MAX_SPOOL=2K as-convert --list -"
    assert_success
    run env AS_MAX_SPOOL=lots as-convert --list "$HOSTILE/convert/metasyn-zip.pt"
    assert_failure 2
    [ -z "$(ls -A "$T/tmp")" ]
}

@test "as-convert: a device or a FIFO named as input is refused at once; piped bytes that are no torch.save file are not spooled" {
    # named: /dev/zero was spooled up to AS_MAX_SPOOL, a FIFO without a writer blocked forever
    # (AS_MAX_SPOOL=64M only keeps a reader that would spool it short)
    mkfifo "$T/fifo"
    for f in /dev/zero /dev/urandom "$T/fifo"; do
        for mode in "" --list --dump; do
            run timeout 20 env AS_MAX_SPOOL=64M as-convert $mode "$f" -o "$T/out"
            assert_failure 2
            assert_output --partial "as-convert: $f: is a"
            assert_output --partial ", not a regular file"
            assert_output --partial "stream it on standard input: as-convert $mode${mode:+ }- < $f"
        done
    done
    run timeout 20 as-convert --list "$T/fifo"
    assert_failure 2
    assert_output --partial "$T/fifo: is a FIFO, not a regular file"
    [ ! -e "$T/out" ]
    # piped: refused on its first bytes, before a temporary file is made (none can be here)
    run timeout 20 env TMPDIR="$T/no-such-dir" as-convert --list - < /dev/zero
    assert_failure 1
    assert_output --partial "<stdin>: not a torch.save file (it starts with bytes 00 00"
    run sh -c "printf 'hello world' | TMPDIR='$T/no-such-dir' as-convert -"
    assert_failure 1
    assert_output --partial "<stdin>: not a torch.save file (it starts with bytes 68 65"
    # what a FIFO's writer streams is read as ever, every kind of torch.save file
    ptwrite metasyn --tables 6 --batch 64 --row-scale 0.001 --seed 5 -o "$T/m.pt"
    as-convert "$T/m.pt" -o "$T/m.ast"
    cat "$T/m.pt" > "$T/fifo" &
    as-convert - < "$T/fifo" -o "$T/m2.ast"
    wait
    cmp <(canon "$T/m.ast") <(canon "$T/m2.ast")
    for f in "$FIXTURES/pt/tensor_int64_proto1.pt" "$FIXTURES/pt/tensor_int32_proto2.pt" "$FIXTURES/pt/tensor_int32_proto5.pt" \
             "$FIXTURES/pt/tensor_int32_proto2_zip.pt"; do
        run sh -c "cat '$f' | as-convert --dump -"
        assert_success
        assert_output --partial "1 -2 3 -4"
    done
    # the default bound on what a piped input may spool
    run as-convert --help
    assert_output --partial 'AS_MAX_SPOOL       bytes a gzip'"'"'d or piped input may take in $TMPDIR (default 16G)'
}
