#!/usr/bin/env bats
# MetaSyn-shaped torch.save files, written by the test writer (build/tools/ptwrite) from the
# synthetic pool, must convert to exactly the tables as-convert --synth generates.
load test_helper/common

POOL="--tables 6 --batch 64 --row-scale 0.001 --seed 5"

synth_canon() {
    as-convert --synth $POOL "$@" -o "$T/synth.ast"
    canon "$T/synth.ast"
}

@test "MetaSyn zip file: --list shows the tuple, conversion equals the synthetic pool" {
    ptwrite metasyn $POOL -o "$T/m.pt"
    run as-convert --list "$T/m.pt"
    assert_success
    assert_line --index 0 --regexp $'^\\[0\\]\tint32\t\\[[0-9]+\\]$'
    assert_line --index 1 $'[1]\tint64\t[385]'
    assert_line --index 2 $'[2]\tint32\t[6, 64]'
    as-convert "$T/m.pt" --seed 5 -o "$T/m.ast"
    [ "$(canon "$T/m.ast")" = "$(synth_canon)" ]
    run as-show --no-header "$T/m.ast"
    assert_line --index 0 --partial '"source":"m.pt"'
}

@test "MetaSyn: legacy format, gzip, stdin and other dtypes convert identically" {
    want="$(synth_canon)"
    ptwrite metasyn $POOL --format legacy -o "$T/l.pt"
    [ "$(as-convert "$T/l.pt" --seed 5 | canon)" = "$want" ]
    ptwrite metasyn $POOL --gzip -o "$T/g.pt.gz"
    [ "$(as-convert "$T/g.pt.gz" --seed 5 | canon)" = "$want" ]
    [ "$(as-convert - --seed 5 < "$T/g.pt.gz" | canon)" = "$want" ]
    ptwrite metasyn $POOL --format legacy --gzip -o "$T/lg.pt.gz"
    [ "$(cat "$T/lg.pt.gz" | as-convert - --seed 5 | canon)" = "$want" ]
    ptwrite metasyn $POOL --indices-dtype int64 --offsets-dtype int32 --lengths-dtype int64 --prefix fbgemm_t6 -o "$T/d.pt"
    [ "$(as-convert "$T/d.pt" --seed 5 | canon)" = "$want" ]
}

@test "MetaSyn: --tables and --first select tables by id, in the order given" {
    ptwrite metasyn $POOL -o "$T/m.pt"
    as-convert "$T/m.pt" --seed 5 -o "$T/all.ast"
    run sh -c "as-convert '$T/m.pt' --seed 5 --tables 4,1 | as-show --no-header | jq -r .id | tr '\n' ' '"
    assert_output "4 1 "
    canon "$T/all.ast" > "$T/all.txt"
    [ "$(as-convert "$T/m.pt" --seed 5 --tables 4,1 | canon)" = "$(sed -n 5p "$T/all.txt"; sed -n 2p "$T/all.txt")" ]
    [ "$(as-convert "$T/m.pt" --seed 5 --first 2 | canon)" = "$(canon "$T/all.ast" | head -2)" ]
    run as-convert "$T/m.pt" --tables 6
    assert_failure 1
    assert_output --partial "table 6 does not exist (the file has 6 tables)"
}

@test "MetaSyn: the prototype's processed file converts identically" {
    ptwrite prototype $POOL -o "$T/p.pt"
    run as-convert --list "$T/p.pt"
    assert_line --index 0 --regexp $"^\\['lS_offsets'\\]\\[0\\]	int64	\\[65\\]$"
    [ "$(as-convert "$T/p.pt" --seed 5 | canon)" = "$(synth_canon)" ]
}

@test "MetaSyn: each kind of corrupt offsets/lengths/indices is exit 1 naming the first violation" {
    ptwrite metasyn $POOL --corrupt offsets-first -o "$T/c1.pt"
    run as-convert "$T/c1.pt"
    assert_failure 1
    assert_output --partial "offsets[0] = 1, expected 0"
    ptwrite metasyn $POOL --corrupt offsets-decrease -o "$T/c2.pt"
    run as-convert "$T/c2.pt"
    assert_failure 1
    assert_output --regexp "offsets\[[0-9]+\] = [0-9]+ is less than offsets\[[0-9]+\] = [0-9]+ \(table 1, bag 3[12]\)"
    ptwrite metasyn $POOL --corrupt offsets-last -o "$T/c3.pt"
    run as-convert "$T/c3.pt"
    assert_failure 1
    assert_output --partial "(the last) differs from the number of indices"
    ptwrite metasyn $POOL --corrupt lengths-mismatch -o "$T/c4.pt"
    run as-convert "$T/c4.pt"
    assert_failure 1
    assert_output --regexp "lengths\[1\]\[32\] = [0-9]+ but offsets give [0-9]+"
    ptwrite metasyn $POOL --corrupt negative-index -o "$T/c5.pt"
    run as-convert "$T/c5.pt"
    assert_failure 1
    assert_output --regexp "indices\[[0-9]+\] = -1 is negative \(table [0-9]+, lookup [0-9]+\)"
    # nothing half-written is left behind
    run as-convert "$T/c5.pt" -o "$T/out.ast"
    assert_failure 1
    [ ! -e "$T/out.ast" ]
    [ -z "$(ls "$T" | grep tmp)" ]
}

@test "MetaSyn: a truncated or bit-flipped file is exit 1, never a crash" {
    ptwrite metasyn $POOL -o "$T/m.pt"
    size=$(stat -c %s "$T/m.pt")
    for cut in 100 1000 $((size/2)) $((size-200)) $((size-1)); do
        head -c "$cut" "$T/m.pt" > "$T/cut.pt"
        run as-convert "$T/cut.pt" -o "$T/cut.ast"
        assert_failure 1
    done
    gzip -c "$T/m.pt" | head -c 3000 > "$T/cut.pt.gz"
    run as-convert "$T/cut.pt.gz" -o "$T/cut.ast"
    assert_failure 1
    for seed in 1 2 3 4 5 6 7 8; do
        python3 -c "
import random, sys
b = bytearray(open(sys.argv[1], 'rb').read()); r = random.Random(int(sys.argv[3]))
for _ in range(4): b[r.randrange(len(b))] ^= r.randrange(1, 256)
open(sys.argv[2], 'wb').write(b)" "$T/m.pt" "$T/flip.pt" "$seed"
        run as-convert "$T/flip.pt" -o "$T/flip.ast"
        [ "$status" -eq 0 ] || [ "$status" -eq 1 ]
    done
}
