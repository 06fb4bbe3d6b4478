#!/usr/bin/env bats
# The learned policy's pipelines (issue 53): pipelines/q3-ablation (AutoShard's Table 2: the
# ablations) and pipelines/policy-vs-greedy (autoshard+split+refine against
# cost-greedy+split+refine, seen and unseen tables) on the stored H200 cost data of the demo's
# seed 0, with policies of a few episodes: every variant made, the tables in shape, the
# ablated models and policies saying what they leave out; usage errors exit 2.
load test_helper/common

P="$ROOT/pipelines"

@test "q3-ablation: every variant beside the paper's figures, the ablated models and policies recorded" {
    run "$P/q3-ablation" --seeds 0 --episodes 8 --out "$T/q3"
    assert_success
    assert_line "| variant | balance, mean ± std over tasks (estimated) | speedup over random (geomean) | per seed: balance | paper (Table 2) |"
    for v in "w/o cost modeling" "greedy with the cost model" "w/o dimension feature" "w/o hash size feature" \
             "w/o pooling factor feature" "w/o size feature" "w/o distribution features" "full version" \
             "full version, trained on pieces too"; do
        assert_output --regexp "\| $v[^|]* \| [0-9.]+ ± [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|"
    done
    assert_output --partial "| 45.9 % ± 1.9, 1.271 |"
    [ "$(as-show --kind model "$T/q3/s0/cm-pooling.ast" | jq -c .dropped_features)" = '["pooling"]' ]
    [ "$(as-show --kind policy "$T/q3/s0/pol-pooling.ast" | jq -c .dropped_features)" = '["pooling"]' ]
    [ "$(as-show --kind policy "$T/q3/s0/pol-nocost.ast" | jq -r .cost_state)" = none ]
    [ "$(as-show --kind policy "$T/q3/s0/pol-full.ast" | jq -r .cost_state)" = null ]
    # every plan file holds random's and the variant's 10 test plans
    [ "$(as-show --kind plan "$T/q3/s0/greedy.ast" | jq -r .alg | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" = "10cost-greedy 10random " ]
    # a second run finds everything made and prints the same table
    run "$P/q3-ablation" --seeds 0 --episodes 8 --out "$T/q3"
    assert_success
}

@test "policy-vs-greedy: both planners with splitting and refinement, seen and unseen tables, kernel and communication" {
    run "$P/policy-vs-greedy" --seeds 0 --episodes 8 --out "$T/pvg"
    assert_success
    assert_output --regexp "\| seen, estimated \| 0 \| [0-9.]+ %, [0-9.]+ \| [0-9.]+ %, [0-9.]+ \| [-+][0-9.]+ \| (yes|\*\*no\*\*) \| [0-9.]+ / [0-9.]+ %, [-+][0-9.]+ \|"
    assert_output --regexp "\| unseen, estimated \| 0 \|"
    # the unseen tasks: 56 tables from the pool's second half, the policy trained on its first
    [ "$(as-show --kind task "$T/pvg/s0/ftu.ast" | jq -c 'select(.split == "test") | .tables | length' | sort -u)" = 56 ]
    [ "$(as-show --kind plan "$T/pvg/s0/seen.ast" | jq -r .alg | sort -u | tr '\n' ' ')" = "autoshard+split+refine cost-greedy+split+refine " ]
}

@test "q3-ablation and policy-vs-greedy: usage errors exit 2, --help exits 0" {
    for s in q3-ablation policy-vs-greedy; do
        run "$P/$s" --bogus
        assert_failure 2
        assert_output --partial "$s: unknown option '--bogus'"
        run "$P/$s" --episodes x
        assert_failure 2
        run "$P/$s" --help
        assert_success
        assert_output --partial "$s"
    done
}
