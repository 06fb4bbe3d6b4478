#!/usr/bin/env bats
# The TorchRec export: golden JSON of hand-made plans of every sharding type (as-plan
# --export), the helper's verdict and its generator calls on them, the round trip of the
# shipped configs, --export's filters and errors, and a check against TorchRec itself that
# runs wherever torchrec imports.
load test_helper/common

G="$ROOT/tests/fixtures/golden"

# the golden model's features (row blocks of 2 and 4) and its hand-made plans
golden_input() {
    as-convert --config "$G/torchrec-config.json" | as-features --row-pieces 2,4 -o "$T/f.ast"
    local exprs=()
    while IFS= read -r line; do exprs+=("$line"); done < "$G/torchrec-plans.py"
    mp_stream "${exprs[@]}" > "$T/plans.ast"
}

@test "golden: hand-made plans of every sharding type export to the JSON written by hand" {
    golden_input
    as-plan --export "$T/plans.ast" --format torchrec "$T/f.ast" > "$T/out.json" 2> "$T/err"
    diff "$T/out.json" "$G/torchrec-plans.json"
    grep -qx "as-plan: --export: 6 plans written, 0 of other tasks or algorithms passed over" "$T/err"
    # the helper's verdict: four convert, two (row blocks on other ranks, a grid) cannot
    as-plan --export "$T/plans.ast" --format torchrec -q "$T/f.ast" > "$T/p.json"
    { python3 "$ROOT/pipelines/torchrec_plan.py" --check "$T/p.json" > "$T/o" 2> "$T/e"; echo "exit $?" > "$T/x"; } || true
    diff <(cat "$T/o" "$T/e" "$T/x") "$G/torchrec-plans.check"
    # the generator calls of the four, against the test double of TorchRec's signatures
    run env PYTHONPATH="$ROOT/tests/fixtures/fake_torchrec:$ROOT/pipelines" python3 -c '
import json, sys
import torchrec_plan as tp
for doc in tp.load_plans(sys.argv[1]):
    try:
        p = tp.sharding_plan(doc, "EBC").plan[doc["module"]]
    except ValueError as e:
        continue
    print(doc["alg"], p["local_size"], p["world_size"], p["device_type"], json.dumps(p["per_param"], sort_keys=True))
' "$T/p.json"
    assert_success
    diff <(printf '%s\n' "$output") "$G/torchrec-plans.calls"
    # the check against TorchRec itself (the last test, where torchrec imports) compiles here
    python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
        "$ROOT/tests/fixtures/torchrec_real/real_check.py" "$T/real_check.pyc"
}

@test "round trip: a shipped config planned straight to JSON and planned, stored, exported give the same JSON" {
    for m in dlrm-criteo-kaggle dlrm-dcnv2-criteo1tb; do
        as-convert --config "$ROOT/pipelines/models/$m.json" --batch 64 | as-features --row-pieces 8 | as-features --model-task -o "$T/f.ast"
        as-plan --alg size-lookup-greedy,torchrec --format torchrec "$T/f.ast" > "$T/direct.json"
        as-plan --alg size-lookup-greedy,torchrec --plans-only "$T/f.ast" -o "$T/p.ast"
        as-plan --export "$T/p.ast" --format torchrec -q "$T/f.ast" > "$T/export.json"
        [ -s "$T/direct.json" ]
        cmp "$T/direct.json" "$T/export.json"
        # every table by its name in the config, every plan convertible
        run sh -c "jq -c '.plan[.module] | keys | length' '$T/export.json' | sort -u"
        assert_output 26
        run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$T/export.json"
        assert_success
    done
}

@test "as-plan --export: labels and tasks chosen, measured plans, the plan's own cap, errors" {
    golden_input
    # --alg: a label with '+' exactly, a bare algorithm every label of it; --task
    run sh -c "as-plan --export '$T/plans.ast' --alg cost-greedy+split,torchrec --format torchrec -q '$T/f.ast' | jq -r .alg"
    assert_output $'cost-greedy+split\ntorchrec'
    run sh -c "as-plan --export '$T/plans.ast' --alg dim-greedy --format torchrec -q '$T/f.ast' | jq -r .alg"
    assert_output 'dim-greedy+split+refine+measured'
    run as-plan --export "$T/plans.ast" --task 3 --format torchrec "$T/f.ast"
    assert_failure 1
    assert_output --partial "--export: no plan of $T/plans.ast matches --alg / --task"
    # text: the plan as it is, its label kept
    run as-plan --export "$T/plans.ast" --alg lookup-greedy+split+refine --format text "$T/f.ast"
    assert_success
    assert_line --regexp '^task 0 \(test\)  lookup-greedy\+split\+refine  4 tables on 4 shards  no memory cap  feasible'
    # measured plans (as-bench's output) export as they were planned
    as-convert --config "$G/torchrec-config.json" -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 1 --test-tasks 1 --task-tables 3 --shards 2 --seed 0 -o "$T/ft.ast"
    as-plan --alg lookup-greedy,size-greedy --plans-only "$T/ft.ast" -o "$T/pl.ast"
    as-bench --tables "$T/pool.ast" "$T/pl.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q -o "$T/pm.ast"
    cmp <(as-plan --alg lookup-greedy,size-greedy --format torchrec "$T/ft.ast") \
        <(as-plan --export "$T/pm.ast" --format torchrec -q "$T/ft.ast")
    # the cap: the plan's own mem_cap or --mem-cap; a shard over it is an error naming it
    run as-plan --export "$T/plans.ast" --alg size-greedy --mem-cap 1000 --format torchrec "$T/f.ast"
    assert_failure 1
    assert_output --partial "plan of task 0 (size-greedy): shard 0 holds"
    assert_output --partial "over the 1000-byte cap of --mem-cap"
    # a piece without features
    as-convert --config "$G/torchrec-config.json" | as-features -o "$T/f1.ast"
    run as-plan --export "$T/plans.ast" --format torchrec "$T/f1.ast"
    assert_failure 1
    assert_output --partial "record 5: plan of task 0 (torchrec): t0[c 0:64, r 0:250) has no features in the input (as-features --row-pieces"
    # usage
    run as-plan --export "$T/plans.ast" "$T/f.ast"
    assert_failure 2
    assert_output --partial "--export needs --format torchrec or text"
    run as-plan --export "$T/plans.ast" --repair "$T/plans.ast" --format text "$T/f.ast"
    assert_failure 2
    run as-plan --export "$T/plans.ast" --split-tables --format text "$T/f.ast"
    assert_failure 2
    assert_output --partial "--export writes plans as they are"
    run as-plan --export "$T/plans.ast" --alg nosuch+split --format text "$T/f.ast"
    assert_failure 2
    assert_output --partial "--alg: 'nosuch+split' is not an algorithm or a plan label"
    run as-plan --alg random --task 0 "$T/f.ast"
    assert_failure 2
    assert_output --partial "--task needs --export FILE"
    run as-plan --alg random "$T/f.ast"
    assert_failure 1
    assert_output --partial "no task records in the input"
}

# TorchRec cannot be installed on autoshard's machines; where it imports (AS_TORCHREC_PYTHON
# names the interpreter, else python3), the golden plans and a shipped config's plans go
# through TorchRec's own construct_module_sharding_plan and are compared shard by shard.
@test "needs torchrec: the exported plans through TorchRec's own construct_module_sharding_plan" {
    py="${AS_TORCHREC_PYTHON:-python3}"
    "$py" -c 'import torchrec' >/dev/null 2>&1 || skip "torchrec does not import in $py (install TorchRec, or set AS_TORCHREC_PYTHON)"
    golden_input
    as-plan --export "$T/plans.ast" --format torchrec -q "$T/f.ast" > "$T/p.json"
    run "$py" "$ROOT/tests/fixtures/torchrec_real/real_check.py" "$G/torchrec-config.json" "$T/p.json"
    assert_success
    [ "$(grep -c "TorchRec's plan matches" <<< "$output")" -eq 4 ]
    [ "$(grep -c ": refused (sparse.ebc.u" <<< "$output")" -eq 2 ]
    as-convert --config "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" --batch 64 | as-features --row-pieces 8 |
        as-features --model-task | as-plan --alg torchrec,size-lookup-greedy --format torchrec > "$T/d.json"
    run "$py" "$ROOT/tests/fixtures/torchrec_real/real_check.py" "$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json" "$T/d.json"
    assert_success
    [ "$(grep -c "TorchRec's plan matches (26 tables)" <<< "$output")" -eq 2 ]
    # our planners' split, replicated and refined plans (TorchRec's row_wise among their moves,
    # column pieces on any ranks; issue 51), with the H100 cost models the repository keeps
    local m
    for m in dlrm-criteo-kaggle:kaggle-run2 dlrm-dcnv2-criteo1tb:dcnv2-run1; do
        as-convert --config "$ROOT/pipelines/models/${m%%:*}.json" --batch 64 | as-features --model-task --row-pieces 2,4 |
            as-plan --alg all --model "$ROOT/pipelines/data/h100-make-plan/${m##*:}/model.ast" --split-tables --refine \
                --replicate --comm-gbps 600 --format torchrec > "$T/s.json"
        run "$py" "$ROOT/tests/fixtures/torchrec_real/real_check.py" "$ROOT/pipelines/models/${m%%:*}.json" "$T/s.json"
        assert_success
        [ "$(grep -c "TorchRec's plan matches (26 tables)" <<< "$output")" -eq "$(wc -l < "$T/s.json")" ]
    done
}
