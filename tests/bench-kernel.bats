#!/usr/bin/env bats
# build/tools/bench-kernel --cpu: the CPU path of the embedding-bag micro-benchmark over a
# grid of shards (the GPU path needs a GPU: docs/GPU.md), and its --dump files for
# pipelines/bench-torch.py (tests/torch.bats runs that part).
load test_helper/common

TINY="--cpu --threads 2 --tables 2 --rows 1000 --batch 64 --dims 8,24 --pooling 1,3 --iters 3 --warmup 1 --drop 1 --flush-mb 1"

@test "bench-kernel --cpu: one row per shard, positive times, protocol in the header" {
    run bench-kernel $TINY
    assert_success
    assert_line "# threads: 2"
    assert_line "# flush_mib: 1"
    assert_line --partial "# protocol: 1 warm-up, 3 timed"
    # 2 dims + mixed, x 2 poolings x 2 distributions
    rows="$(printf '%s\n' "$output" | grep -Ec '^(d8|d24|mixed)-l[13]-(uniform|powerlaw)'$'\t')"
    [ "$rows" = 12 ]
    # name dims pooling dist lookups unique fwd_ms ... bwd_ms (column 12) ... total_ms (17)
    printf '%s\n' "$output" | awk -F'\t' '/^(d|mixed)/ {
        if ($5 != 64 * 2 * $3 || $7 <= 0 || $12 <= 0 || $17 <= 0) { print "bad row: " $0; exit 1 } }'
}

@test "bench-kernel --cpu --dump: index, JSON and raw offsets/indices for each shard" {
    run bench-kernel $TINY --only d8-l3 --dump "$T"
    assert_success
    run cat "$T/index.txt"
    assert_output $'d8-l3-uniform\nd8-l3-powerlaw'
    # offsets: T*B+1 int64; indices: T*B*L int32
    [ "$(stat -c %s "$T/d8-l3-uniform.offsets.i64")" = $(( (2 * 64 + 1) * 8 )) ]
    [ "$(stat -c %s "$T/d8-l3-uniform.indices.i32")" = $(( 2 * 64 * 3 * 4 )) ]
    run jq -c '[.T, .B, .pooling, .rows, .dims, .lookups]' "$T/d8-l3-powerlaw.json"
    assert_output '[2,64,3,[1000,1000],[8,8],384]'
}

@test "bench-kernel: bad option and bad value are usage errors" {
    run bench-kernel --threads x
    assert_failure 2
    run bench-kernel --bogus
    assert_failure 2
}

@test "bench-kernel --cpu --weights --optimizer: the typed kernels timed, said in the header; without a GPU the CUDA path says so" {
    for k in "fp32 exact_rowwise_adagrad" "bf16 adam" "fp16 adam"; do
        set -- $k
        run bench-kernel $TINY --only d24-l3 --weights "$1" --optimizer "$2"
        assert_success
        assert_line "# weights: $1  optimizer: $2 (lib/kernels/ebopt.h)"
        printf '%s\n' "$output" | awk -F'\t' '/^d24-l3/ { n++; if ($7 <= 0 || $12 <= 0) exit 1 } END { exit n != 2 }'
    done
    run bench-kernel $TINY --weights fp64
    assert_failure 2
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        run bench-kernel --weights fp32 --optimizer adam --quick
        assert_failure 3
        assert_output --partial "no CUDA device"
    fi
}
