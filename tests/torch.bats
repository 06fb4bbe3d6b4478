#!/usr/bin/env bats
# torch.save interop against real PyTorch: tests/tools/torch_check.py (torch.load reads
# every file the test writer produces, as-convert reads what torch.save writes; path, dtype,
# shape, layout and values compared tensor by tensor). PyTorch comes from Debian's
# python3-torch, which `make deps` installs, so this runs in CI on every submission; a
# missing PyTorch is a failure, not a skip. $AS_PYTHON names another interpreter.
load test_helper/common

# torch_python (test_helper/common.bash): the first python3 that imports torch

@test "torch_check.py: torch.load and torch.save interoperate with ptwrite and as-convert" {
    py="$(torch_python)" || fail "no python3 with PyTorch: install python3-torch (make deps, as root)"
    run env AS_BIN="$BIN" AS_TOOLS="$TOOLS" "$py" "$ROOT/tests/tools/torch_check.py"
    assert_success
    refute_output --partial "FAIL"
    assert_output --partial "ok   as-convert reads torch.save strided (legacy"
    assert_output --partial "ok   as-convert converts a torch.save'd MetaSyn-shaped tuple"
}

@test "bench-torch.py --cpu: torch.nn.EmbeddingBag + SGD on bench-kernel's shards, ratios joined" {
    py="$(torch_python)" || fail "no python3 with PyTorch: install python3-torch (make deps, as root)"
    bench-kernel --cpu --threads 1 --tables 2 --rows 500 --batch 32 --dims 8 --pooling 2 --no-mixed \
        --iters 2 --warmup 0 --drop 0 --flush-mb 1 --dump "$T" > "$T/kernel.tsv"
    for opts in "" "--dtype float32 --sparse" "--dtype float32 --sparse --optim adam" "--dtype float32 --optim adam"; do
        run "$py" "$ROOT/pipelines/bench-torch.py" --cpu --threads 1 $opts --dir "$T" --kernel-tsv "$T/kernel.tsv"
        assert_success
        assert_line --partial "flush 1 MiB"
        assert_line --partial "# protocol: 0 warm-up, 2 timed"
        # both shards, the torch and kernel times and the ratios filled and positive (column 9,
        # the kernel's GB/s, may print as 0.0 for a shard this small)
        printf '%s\n' "$output" | awk -F'\t' '
            /^d8-l2-/ { n++; for (i = 2; i <= 12; i++) if (i != 9 && !($i + 0 > 0)) { print "bad: " $0; exit 1 } }
            END { if (n != 2) { print n " rows"; exit 1 } }'
    done
}
