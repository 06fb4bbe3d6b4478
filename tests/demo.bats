#!/usr/bin/env bats
# The main job (pipelines/demo.mk) end to end at a tiny scale, on the CPU.
load test_helper/common

@test "main job: convert -> features/tasks -> costs -> model -> plans -> measured -> report" {
    # MODEL_GATE=: 25 shards make a weak cost model; the demo's gate would stop it (below)
    args=(BIN="$BIN" OUT="$T/out" PRESET=tiny TASKS=12 TEST_TASKS=2 TASK_TABLES=20 NCOST=25 MAXT=3 MODEL_GATE=
          DEVICE=cpu EPISODES=48 EVAL_EVERY=16 EVAL_TASKS=2 REFINE_EVERY=16 REFINE_TASKS=2 REPAIR_ROUNDS=2
          BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 8M --threads 1")
    run make -s -C "$ROOT" -f pipelines/demo.mk "${args[@]}"
    assert_success
    assert_output --partial "Measured repair"
    d="$T/out/tiny-s0"
    for f in pool ft costs model policy train refit-measured model-refit plans measured repaired repaired2; do [ -s "$d/$f.ast" ]; done
    [ -s "$d/plots.png" ] && [ -s "$d/curve.png" ]
    for alg in random size-greedy dim-greedy lookup-greedy size-lookup-greedy cost-greedy autoshard torchrec; do
        assert_output --partial "$alg"
    done
    # the cost dataset chosen where the cost model was least sure (NCOST=25: a budget of 12)
    grep -qE "^The cost dataset was measured by active learning \(pipelines/active-costs, seed 0\): [0-9]+ shards measured \(budget 12\)" "$d/report.md"
    # every task's floor from the cost dataset's singles (as-bench --singles measured every table)
    grep -q '^| run | task | alg | K | max | min | mean | balance (%) | balance per pass (%) | speedup | floor | max/floor |' "$d/report.md"
    # the plans measured in 2 passes (PASSES=2): each pass's costs, and the verdict ranks on them
    run sh -c "as-show --kind plan '$d/measured.ast' | jq -c '[(.cost_pass_ms | length), (.cost_pass_spread | length) == .shards]' | sort -u"
    assert_output '[2,true]'
    grep -q 'passes lo-hi: the mean balance of each pass' "$d/report.md"
    grep -q '^- \*\*Floor-bound: [0-2] of 2 tasks\*\* (the best plan.s slowest shard is at most 2 % above the floor' "$d/report.md"
    [ "$(grep -c 'Floor: unknown' "$d/report.md")" -eq 0 ]
    # split plans too: every piece of them measured alone (as-bench --piece-singles)
    [ "$(as-show --kind cost "$d/measured.ast" | jq -c 'select(.origin == "shard" and .pieces != null)' | wc -l)" -gt 0 ]
    run sh -c "as-eval --singles '$d/costs.ast' --format csv --table plans '$d/measured.ast' | awk -F, 'NR > 1 && \$18 == \"\"' | wc -l"
    assert_output 0
    # every algorithm (7), torchrec, and cost-greedy, autoshard with --split-tables --refine, on 2 tasks
    run as-show --count "$d/plans.ast"
    assert_line "plan	20"
    for alg in cost-greedy+split+refine autoshard+split+refine torchrec; do
        [ "$(as-show --kind plan "$d/measured.ast" | jq -r .alg | grep -cxF "$alg")" -eq 2 ]
    done
    # the cost model refit: cost-greedy's split plans of the 10 training tasks (none of the test
    # tasks) measured, their 80 shards added to the cost dataset; every test plan uses that model
    run sh -c "as-show --kind plan '$d/refit-measured.ast' | jq -r '[.split, .alg] | @tsv' | sort | uniq -c | awk '{print \$2, \$3, \$1}'"
    assert_output 'train cost-greedy+split+refine 10'
    n0=$(as-show --kind costfit-report "$d/model.ast" | jq .costs)
    n1=$(as-show --kind costfit-report "$d/model-refit.ast" | jq .costs)
    m=$(as-show --kind cost "$d/refit-measured.ast" | jq -c 'select(.origin == "plan")' | wc -l)
    [ "$m" -gt 0 ] && [ "$n1" -eq $((n0 + m)) ]
    run sh -c "as-show --kind plan '$d/plans.ast' | jq -r .options.model | sort -u"
    assert_output "$d/model-refit.ast"
    # the features hold the row pieces of 2, 4 and 8 blocks
    [ "$(as-show --kind features "$d/ft.ast" | jq -c 'select(.piece != null)' | wc -l)" -gt 0 ]
    # the policy trained with measured refinement (rounds at 16 and 32, not at the end)
    run sh -c "as-show --kind train '$d/train.ast' | jq -c 'select(.refine_round) | [.episode, .refine_plans]'"
    assert_output $'[16,2]\n[32,2]'
    # measured repair: cost-greedy's, autoshard's (table-wise and split) and torchrec's plans
    # as they were and refined on their measured costs, measured in one run, and its report
    run sh -c "as-show --kind plan '$d/repaired.ast' | jq -r .alg | sort | uniq -c | awk '{print \$2, \$1}'"
    assert_output $'autoshard 2\nautoshard+refine+measured 2\nautoshard+split+refine 2\nautoshard+split+refine+measured 2\ncost-greedy 2\ncost-greedy+refine+measured 2\ncost-greedy+split+refine 2\ncost-greedy+split+refine+measured 2\ntorchrec 2\ntorchrec+refine+measured 2'
    grep -q '^## Measured repair' "$d/repair.md"
    # round 2: round 1's plans as they were and repaired again, in another run
    run sh -c "as-show --kind plan '$d/repaired2.ast' | jq -r .alg | sed 's/.*+measured/measured/' | sort | uniq -c | awk '{print \$2, \$1}'"
    assert_output $'measured 10\nmeasured2 10'
    grep -q '^## Measured repair round 2' "$d/repair.md"
    grep -q '^| cost-greedy+split+refine+measured |' "$d/repair.md"
    # the plans the cost model placed carry its quality, and the verdict says what it was
    [ "$(as-show --kind plan "$d/plans.ast" | jq -r 'select(.alg | test("^cost-greedy|[+]")) | .model_quality.weak' | sort -u | grep -vc '^true$\|^false$')" -eq 0 ]
    grep -q '^- \*\*Weak cost model:\*\* the plans of \|^- The cost model that placed the plans of ' "$d/report.md"
    # nothing changed: nothing is redone
    run make -q -C "$ROOT" -f pipelines/demo.mk "${args[@]}" "$d/report.md" "$d/repair.md"
    assert_success
    # the demo's quality gate (MODEL_GATE's default, as-plan --require-model-quality): a model
    # whose held-out R² is below 0.9 stops it before any plan, in words
    mp_edit "$d/model-refit.ast" "h = kind('model')[0]['heldout']; h['model']['r2'] = 0.41; h['linear']['r2'] = 0.3" > "$T/weak.ast"
    cp "$d/model-refit.ast" "$T/good.ast"
    cp "$T/weak.ast" "$d/model-refit.ast"
    rm "$d/plans.ast"
    gated=()
    for a in "${args[@]}"; do [ "$a" = MODEL_GATE= ] || gated+=("$a"); done
    run make -s -C "$ROOT" -f pipelines/demo.mk "${gated[@]}" "$d/plans.ast"
    assert_failure
    assert_output --partial "as-plan: $d/model-refit.ast: the cost model's held-out R² is 0.410, below 0.9 (--min-model-r2): plans made with it rest on a weak model; --require-model-quality: no plan made"
    [ ! -e "$d/plans.ast" ] && [ ! -e "$d/plans.ast.table" ]
    # TorchRec's own planner where its source is at hand (here its test double): its plans of
    # the 2 test tasks imported as torchrec-own beside ours
    cp "$T/good.ast" "$d/model-refit.ast"
    run make -s -C "$ROOT" -f pipelines/demo.mk "${args[@]}" TORCHREC_SRC="$ROOT/tests/tools/fake_torchrec" "$d/plans.ast"
    assert_success
    [ "$(as-show --kind plan "$d/plans.ast" | jq -r .alg | grep -cxF torchrec-own)" -eq 2 ]
    [ "$(as-show --kind plan "$d/plans.ast" | jq -r .alg | grep -cxF torchrec)" -eq 2 ]
}
