#!/usr/bin/env bats
# pipelines/gpu-pack and pipelines/gpu-verify: what runs without a GPU (usage, packing,
# the refusal on a machine without one); the GPU half runs on a lent GPU (docs/GPU.md).
load test_helper/common

@test "gpu-pack / gpu-verify: --help, unknown options and bad values are usage errors" {
    run "$ROOT/pipelines/gpu-pack" --help
    assert_success
    assert_output --partial "gpu-verify --pack"
    run "$ROOT/pipelines/gpu-pack" --bogus
    [ "$status" -eq 2 ]
    run "$ROOT/pipelines/gpu-pack" --dir /tmp/outside
    [ "$status" -eq 2 ]
    assert_output --partial "inside the repository"
    run "$ROOT/pipelines/gpu-pack" --add "$T/missing.ast"
    [ "$status" -eq 2 ]
    run "$ROOT/pipelines/gpu-verify" --help
    assert_success
    assert_output --partial "--deadline"
    run "$ROOT/pipelines/gpu-verify" --deadline soon --out "$T/o"
    [ "$status" -eq 2 ]
    run "$ROOT/pipelines/gpu-verify" --plans "$T/missing.ast" --out "$T/o"
    [ "$status" -eq 2 ]
    run "$ROOT/pipelines/gpu-verify" --kernel-base "$T/missing" --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "no such file"
    run "$ROOT/pipelines/gpu-verify" --help
    assert_output --partial "--kernel-base"
    assert_output --partial "--model CONFIG"
    assert_output --partial "--demo-seeds"
    # the model steps: the config and plans must exist; --import / --model-plans need --model
    run "$ROOT/pipelines/gpu-verify" --model "$T/missing.json" --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "no such file"
    echo '{}' > "$T/own.json"
    run "$ROOT/pipelines/gpu-verify" --import "$T/own.json" --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "need --model"
    run "$ROOT/pipelines/gpu-verify" --model-plans "$T/own.json" --out "$T/o"
    [ "$status" -eq 2 ]
    run "$ROOT/pipelines/gpu-verify" --demo-seeds 0,x --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "bad --demo-seeds"
    run "$ROOT/pipelines/gpu-verify" --model-sample 0 --out "$T/o"
    [ "$status" -eq 2 ]
    # --make-plan CONFIG[,OWN.json]: both files must exist
    run "$ROOT/pipelines/gpu-verify" --make-plan "$T/own.json,$T/missing-own.json" --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "no such file: $T/missing-own.json"
    run "$ROOT/pipelines/gpu-verify" --make-plan "$T/missing.json" --out "$T/o"
    [ "$status" -eq 2 ]
    assert_output --partial "no such file: $T/missing.json"
    run "$ROOT/pipelines/gpu-verify" --help
    assert_output --partial "--make-plan CONFIG[,OWN.json]"
}

@test "gpu-verify: a pack without the tools, or a machine without a GPU, is an environment error (3)" {
    mkdir -p "$T/empty/bin"
    run "$ROOT/pipelines/gpu-verify" --pack "$T/empty" --out "$T/o1"
    [ "$status" -eq 3 ]
    assert_output --partial "missing"
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && skip "this machine has a GPU"
    # the checkout's own build, no pack: stops at the GPU check, after writing its log
    [ -x "$ROOT/build/gpu-tests" ] || skip "build/gpu-tests not built (no nvcc)"
    run "$ROOT/pipelines/gpu-verify" --pack "$T/none" --out "$T/o2"
    [ "$status" -eq 3 ]
    assert_output --partial "no GPU"
    [ -s "$T/o2/log.txt" ]
}

@test "gpu-pack: the tools and GPU tests stripped, the libraries they load that a CUDA image may lack" {
    command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || skip "no nvcc: the CUDA code is not built"
    [ -x "$ROOT/build/gpu-tests" ] || skip "build/gpu-tests not built"
    d=".gpu-bats-$$"
    run "$ROOT/pipelines/gpu-pack" --no-build --dir "$d" --add "$ROOT/pipelines/data/h200-full-s0/README.md"
    assert_success
    for t in as-bench as-convert as-costfit gpu-tests bench-kernel; do [ -x "$ROOT/$d/bin/$t" ]; done
    [ -f "$ROOT/$d/README.md" ]
    ls "$ROOT/$d/lib" | grep -q '^libzstd'
    ls "$ROOT/$d/lib" | grep -q '^libmsgpackc'
    # no C runtime, no CUDA library
    ! ls "$ROOT/$d/lib" | grep -Eq '^(libc|libstdc\+\+|libcublas)'
    ex="$(git -C "$ROOT" rev-parse --git-dir)/info/exclude"
    grep -qxF "/$d/" "$ex"
    rm -rf "${ROOT:?}/$d"
    sed -i "\|^/$d/\$|d" "$ex"
}
