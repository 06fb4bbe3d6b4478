#!/usr/bin/env bats
# make plan (pipelines/plan.mk): a model config planned by its measured cost, at a tiny scale
# (6 tables onto 2 ranks, few and short measurements): every stage, the choice, plan.json,
# the report, the resume, bad input; and pipelines/plan_choose.py's rule on hand-made tables
load test_helper/common
load test_helper/tinyplan

setup_file() {
    export D="$BATS_FILE_TMPDIR"
    tiny_config
}

@test "make plan: every stage, the chosen plan among those TorchRec can load, plan.json checked, the report compares it" {
    run mkplan PROGRESS=--progress
    assert_success
    # progress with an ETA on every stage that takes a while (a log gets a line every 10 s
    # and one at the end of each tool's run; the check of each candidate a line each)
    assert_output --partial "as-bench: shards done in"
    assert_output --partial "as-costfit: "
    assert_output --partial "as-plan: plans done in"
    assert_output --regexp "make plan: loadable\? 2/[0-9]+: [^ ]+ \([0-9]+s, ETA [0-9]+s\)"
    P="$D/out/plan-tiny"
    for f in pool.ast ft.ast costs.ast model.ast own.ast plans.ast first.ast repaired.ast candidates.ast measured.ast choice.md chosen.txt plan.json report.md; do
        [ -e "$P/$f" ] || fail "$f missing"
    done
    [ -z "$(compgen -G "$P/*.tmp*")" ]
    chosen=$(cat "$P/chosen.txt")
    # the chosen plan is one of the measured candidates, and the exported plan is it
    as-show -k plan "$P/measured.ast" | jq -r .alg | grep -qxF "$chosen"
    [ "$(jq -r .alg "$P/plan.json")" = "$chosen" ]
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$D/tiny.json" "$P/plan.json"
    assert_success
    # the candidates: table-wise, TorchRec's planner, split (column pieces and row_wise)
    algs=$(as-show -k plan "$P/measured.ast" | jq -r .alg | sort | tr '\n' ' ')
    [[ "$algs" == *"torchrec "* && "$algs" == *"cost-greedy+split+refine "* && "$algs" == *"size-lookup-greedy "* ]]
    # the measured repair round: our split planners' plans refined on their measured costs,
    # measured with the others (and the originals measured once before, for it)
    [[ "$algs" == *"cost-greedy+split+refine+measured "* && "$algs" == *"lookup-greedy+split+refine+measured "* ]]
    [ "$(as-show -k plan "$P/first.ast" | jq -r .alg | grep -c measured)" -eq 0 ]
    [ "$(as-show -k plan "$P/repaired.ast" | jq -r .alg | grep -vc '+measured$')" -eq 0 ]
    # TorchRec's plan refined is a candidate; every candidate is one TorchRec loads: row pieces
    # only as its row_wise (K blocks, block i on rank i), column pieces anywhere
    [[ "$algs" == *"torchrec+refine "* ]]
    run bash -c 'as-plan -q --export "$1/measured.ast" --format torchrec "$1/ft.ast" | python3 "$2/pipelines/torchrec_plan.py" --check --config "$3/tiny.json"' _ "$P" "$ROOT" "$D"
    assert_success
    # the report: the chosen plan named, compared with TorchRec's planner, the candidates' tables
    grep -qF "## The chosen plan: \`$chosen\`" "$P/report.md"
    [ "$chosen" = torchrec ] || grep -qF "against TorchRec's planner as we run it (\`torchrec\`)" "$P/report.md"
    grep -qF "## The candidates, kernel alone" "$P/report.md"
    grep -qF "## The chosen plan, rank by rank" "$P/report.md"
    grep -q "^Model config: .*tiny.json; device: cpu" "$P/report.md"
    # each candidate's communication by sharding type, at COMM_GBPS and by nvlink8's alphas
    # and betas (TorchRec's plan row-wise shards a table: its row-wise column is above 0)
    grep -qF "## Communication by sharding type" "$P/report.md"
    grep -qF "by sharding type**, modelled at 600 GiB/s" "$P/report.md"
    grep -qF "by sharding type**, modelled by nvlink8 (each call its latency" "$P/report.md"
    grep -E '^\| 0 \| 0 \| torchrec \|' "$P/report.md" | head -1 | awk -F'|' '{ ok = ($9 + 0 > 0) } END { exit !ok }'
    # nothing approximated on the CPU for so small a model (ROW_CAP and BATCH auto)
    [ "$(cat "$P/scale.txt")" = "row_cap 0 batch 0 weights tables optimizer sgd" ]
    grep -qF "Nothing: every table was measured whole, at the config's batch." "$P/report.md"
    # what the tables trained with: the config's fp32 weights (its default) and SGD, on the CPU
    grep -qF "## What this run measured" "$P/report.md"
    # the cost dataset chosen where the cost model was least sure (COSTS=active, the default):
    # how many shards, each round, why it stopped; the knobs tracked
    # (and, COL_SINGLES=8, the column half and quarter of each table whose width allows: the
    # tiny config's 32- and 16-wide tables both, its 8-wide ones a half: 10)
    grep -qE "^The cost dataset was measured by active learning \(pipelines/active-costs, seed 0\): [0-9]+ shards measured \(budget 15\) and every table alone, 10 column halves and quarters of the heaviest tables alone; stopped: (budget|no longer improving)" "$P/report.md"
    grep -qF "| 0 | every table alone, 10 column halves and quarters of the heaviest tables alone, 6 random, 3 random to validate on | 9 |" "$P/report.md"
    grep -qx "COSTS=active" "$P/knobs-costs.txt" && grep -qx "ACTIVE_BUDGET=15" "$P/knobs-costs.txt"
    grep -qF "Measured training: each table's weights in its config's type (fp32), updated by exact SGD" "$P/report.md"
    [ "$(as-show -k cost "$P/costs.ast" | jq -r '[.weights_type, .optimizer] | join(" ")' | sort -u)" = "fp32 sgd" ]
    # a weak cost model (MODEL_GATE empty, the default) is said at the top when, and only when,
    # plans it placed are among the candidates
    weak=$(as-eval --comm-gbps 0 --format csv --table summary "$P/measured.ast" | python3 -c 'import csv, sys; print(sum(int(r["model_weak"] or 0) for r in csv.DictReader(sys.stdin)))')
    if [ "$weak" -gt 0 ]; then grep -qF "**The cost model is weak**" "$P/report.md"; else ! grep -qF "cost model is weak" "$P/report.md"; fi
}

@test "make plan OWN_JSON=: TorchRec's own plan made elsewhere is imported as it is, as torchrec-own, and redoes what follows" {
    mkplan > /dev/null 2>&1
    cp -rp "$D/out" "$D/out-own"
    P="$D/out-own/plan-tiny"
    # a TorchRec plan JSON of this model (here our torchrec plan's export, as torchrec_planner.py writes one)
    as-plan -q --export "$P/measured.ast" --task 0 --alg =torchrec --format torchrec "$P/ft.ast" | jq -c '.alg = "torchrec-own"' > "$D/own.json"
    run mkplan OUT="$D/out-own" OWN_JSON="$D/own.json"
    assert_success
    assert_output --partial "== TorchRec's own planner (its plan from $D/own.json)"
    refute_output --partial "== cost dataset"
    [ "$(as-show -k plan "$P/own.ast" | jq -r .alg)" = torchrec-own ]
    as-show -k plan "$P/measured.ast" | jq -r .alg | grep -qx torchrec-own
    grep -qF "against TorchRec's own planner (\`torchrec-own\`)" "$P/report.md"
    # its placement is the one in the file
    [ "$(as-show -k plan "$P/own.ast" | jq -c .assign)" = "$(as-show -k plan "$P/measured.ast" | jq -c 'select(.alg == "torchrec") | .assign')" ]
    # a file that is not a TorchRec plan: as-plan's message; the imported plan before it kept whole
    sum0=$(md5sum < "$P/own.ast")
    echo '{"plan": 1}' > "$D/bad-own.json"
    run mkplan OUT="$D/out-own" OWN_JSON="$D/bad-own.json"
    assert_failure
    assert_output --partial "as-plan"
    [ "$(md5sum < "$P/own.ast")" = "$sum0" ]
    [ -z "$(compgen -G "$P/*.tmp*")" ]
    # under another SEED the imported plan is of the same run as ours (its seed), so the
    # choice's range step sees one run: chosen and reported
    run mkplan OUT="$D/out-own" OWN_JSON="$D/own.json" SEED=1
    assert_success
    [ "$(as-show -k plan "$P/own.ast" | jq -r .seed)" = 1 ]
    grep -qF "against TorchRec's own planner (\`torchrec-own\`)" "$P/report.md"
}

@test "make plan: a second run does nothing; a removed stage is redone with what follows it, not before it" {
    mkplan > /dev/null 2>&1
    P="$D/out/plan-tiny"
    run mkplan
    assert_success
    refute_output --partial "== "
    c0=$(stat -c %Y.%N "$P/costs.ast")
    rm "$P/measured.ast"
    run mkplan
    assert_success
    assert_output --partial "== every candidate measured"
    assert_output --partial "== the choice"
    refute_output --partial "== cost dataset"
    [ "$(stat -c %Y.%N "$P/costs.ast")" = "$c0" ]
    # another communication charge (COMM_MODEL): the plans and what follows are redone, the
    # costs kept; the split search's plans carry the model, the report names it
    run mkplan COMM_MODEL=nvlink8
    assert_success
    assert_output --partial "== plans"
    refute_output --partial "== cost dataset"
    [ "$(stat -c %Y.%N "$P/costs.ast")" = "$c0" ]
    [ "$(as-show -k plan "$P/plans.ast" | jq -r 'select(.alg | test("split")) | .comm_model' | sort -u)" = nvlink8 ]
    grep -qF "## The candidates, communication charged by nvlink8" "$P/report.md"
    run mkplan COMM_MODEL=nvlink8
    refute_output --partial "== "
}

@test "make plan: a config that does not parse, a cap no table fits, a table the device cannot hold: a message naming it, nothing half-written" {
    echo '{"topology": {"world_size": 2}, "tables": [' > "$D/bad.json"
    run make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$D/bad.json" OUT="$D/out" DEVICE=cpu PROGRESS=
    assert_failure
    assert_output --partial "as-convert: $D/bad.json"
    [ ! -e "$D/out/plan-bad/pool.ast" ]
    [ -z "$(compgen -G "$D/out/plan-bad/*.tmp*")" ]
    run mkplan OUT="$D/out2" MEM_CAP=1000
    assert_failure
    assert_output --partial "fit on no shard under the 1000-byte cap"
    [ ! -e "$D/out2/plan-tiny/plans.ast" ]
    [ ! -e "$D/out2/plan-tiny/plan.json" ]
    [ -z "$(compgen -G "$D/out2/plan-tiny/*.tmp*")" ]
    # a table the measuring device cannot hold (here: as-bench's --max-mem): named, with why
    sed 's/"num_embeddings": 20000,/"num_embeddings": 2000000,/' "$D/tiny.json" > "$D/big.json"
    run mkplan OUT="$D/out3" MODEL="$D/big.json" BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 8M --max-mem 96M"
    assert_failure
    assert_output --partial "make plan: table big could not be measured alone on this device: does not fit: needs"
    assert_output --partial "measure on a device with the memory"
    [ ! -e "$D/out3/plan-big/costs.ast" ]
    [ -z "$(compgen -G "$D/out3/plan-big/*.tmp*")" ]
}

# as-eval's CSV plans table, by hand: alg, max_ms, balance
csvrow() { printf '0,0,test,%s,2,6,measured,%s,0.1,0.1,%s,1,1,1,%s,0,false,,,,2,%s,%s,false\n' "$1" "$2" "$3" "${4:-true}" "$3" "$3"; }
CSVHEAD='run,task,split,alg,shards,tables,cost_kind,max_ms,min_ms,mean_ms,balance,speedup,mem_max_bytes,mem_min_bytes,feasible,noisy_shards,rests_on_noisy,floor_ms,max_over_floor,at_floor,passes,balance_pass_lo,balance_pass_hi,pass_flip'

@test "plan_choose.py: the fastest loadable plan; a simpler one within the tie; infeasible and unloadable plans never" {
    { echo "$CSVHEAD"; csvrow cost-greedy 2.0 0.5; csvrow cost-greedy+split 1.0 0.9; csvrow cost-greedy+split+refine 0.995 0.95
      csvrow torchrec 1.5 0.8; csvrow lookup-greedy 0.5 0.9 false; } > "$T/c.csv"
    cp "$T/c.csv" "$T/k.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --out-alg "$T/a"
    assert_success
    # +split+refine is 0.5 % faster than +split: within the 1 % tie, the simpler wins
    [ "$(cat "$T/a")" = cost-greedy+split ]
    assert_output --partial "the simplest plan within 1 % of the fastest (\`cost-greedy+split+refine\`"
    assert_output --partial "against TorchRec's planner as we run it (\`torchrec\`): 1.500x faster"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --tie 0 --out-alg "$T/a"
    [ "$(cat "$T/a")" = cost-greedy+split+refine ]
    printf 'cost-greedy\ntorchrec\n' > "$T/ld"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --loadable "$T/ld" --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = torchrec ]
    assert_output --partial "\`cost-greedy+split+refine\` measured 1.508x faster (slowest rank 0.9950 ms) but TorchRec cannot load it"
    : > "$T/none"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --loadable "$T/none"
    assert_failure 1
    assert_output --partial "no plan is feasible, measured on every rank and loadable by TorchRec"
    echo "x,y" > "$T/bad.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/bad.csv" "$T/k.csv"
    assert_failure 1
    assert_output --partial "not as-eval's CSV plans table"
    # with each pass's slowest shard: a lead that does not hold in every pass is no lead
    H2="$CSVHEAD,max_ms_passes"
    { echo "$H2"; echo "$(csvrow cost-greedy 1.10 0.8),1.05;1.15"; echo "$(csvrow cost-greedy+split 1.0 0.9),0.98;1.02"; } > "$T/p.csv"
    cp "$T/p.csv" "$T/pk.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/p.csv" "$T/pk.csv" --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = cost-greedy+split ]
    { echo "$H2"; echo "$(csvrow cost-greedy 1.10 0.8),1.01;1.19"; echo "$(csvrow cost-greedy+split 1.0 0.9),1.02;0.98"; } > "$T/p.csv"
    cp "$T/p.csv" "$T/pk.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/p.csv" "$T/pk.csv" --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = cost-greedy ]
    assert_output --partial "or not beaten by it in every pass"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv"
    [ "$status" -eq 2 ]
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --tie 2
    [ "$status" -eq 2 ]
}

@test "plan_choose.py --robust: the choice stays where it holds, else the candidate of the least worst case; --chosen says why" {
    RH="run,task,what,knob,x_from,x_to,alg,value"
    # the chosen holds: nothing rewritten
    printf '%s\n' "$RH" "0,0,chosen,,,,a,1" "0,0,worst,,,,a,1" "0,0,worst,,,,b,1.2" "0,0,robust,,,,a,1" > "$T/r.csv"
    echo a > "$T/a"
    run python3 "$ROOT/pipelines/plan_choose.py" --robust "$T/r.csv" --out-alg "$T/a"
    assert_success
    assert_output --partial "The choice \`a\` is the best candidate TorchRec can load (within 1 %)"
    [ "$(cat "$T/a")" = a ]
    # another wins in part of the range and has the lesser worst case: it is chosen
    printf '%s\n' "$RH" "0,0,chosen,,,,a,1" "0,0,segment,bw,0.0625,0.7,b,0" "0,0,worst,,,,a,1.3" "0,0,worst,,,,b,1.05" \
        "0,0,robust,,,,b,0" > "$T/r.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" --robust "$T/r.csv" --out-alg "$T/a"
    assert_success
    assert_output --partial "**The choice is \`b\` instead of \`a\`**: its worst case (1.050x the best) is less than \`a\`'s (1.300x)"
    [ "$(cat "$T/a")" = b ]
    # ... the verdict then says the choice is not the measured one
    { echo "$CSVHEAD"; csvrow a 1.0 0.9; csvrow b 1.1 0.8; } > "$T/c.csv"
    cp "$T/c.csv" "$T/k.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --chosen b
    assert_success
    assert_output --partial "## The chosen plan: \`b\`"
    assert_output --partial "Chosen for its worst case as the communication's cost changes (below), not on its measurement alone: the rule on the measurement picks \`a\`"
    run python3 "$ROOT/pipelines/plan_choose.py" "$T/c.csv" "$T/k.csv" --chosen zz
    assert_failure 1
    # not as-eval's range: refused
    printf 'x,y\n1,2\n' > "$T/bad.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" --robust "$T/bad.csv"
    assert_failure 1
    assert_output --partial "not as-eval's CSV range table"
    printf '%s\n' "$RH" "0,0,worst,,,,a,1" > "$T/bad.csv"
    run python3 "$ROOT/pipelines/plan_choose.py" --robust "$T/bad.csv"
    assert_failure 1
    assert_output --partial "no chosen, robust and worst rows"
    run python3 "$ROOT/pipelines/plan_choose.py" --robust "$T/r.csv" "$T/c.csv"
    [ "$status" -eq 2 ]
}

@test "make plan ROW_CAP= BATCH=: tables above the cap measured over it, at a smaller batch; the report says so, with the measured row curve" {
    mkplan > /dev/null 2>&1
    run mkplan OUT="$D/out-cap" ROW_CAP=8000 BATCH=64
    assert_success
    P="$D/out-cap/plan-tiny"
    # what it measured over: recorded; the pool at the batch; costs and plans under the cap
    [ "$(cat "$P/scale.txt")" = "row_cap 8000 batch 64 weights tables optimizer sgd" ]
    [ "$(as-show --kind table "$P/pool.ast" | jq -s -c 'map(.batch) | unique')" = "[64]" ]
    [ "$(as-show --kind cost "$P/costs.ast" | jq -s -c 'map(.row_cap) | unique')" = "[8000]" ]
    as-show --kind plan "$P/measured.ast" | jq -e -s 'length > 0 and all(.cost_row_cap == 8000)'
    # only the table above the cap is capped; the memory model keeps the config's batch (its
    # output buffers; the input's ids follow the pooling measured on the lookups)
    as-show --kind cost "$P/costs.ast" | jq -e -s 'map(select(.origin == "single")) | all(.capped == (if .tables == [0] then 1 else 0 end))'
    m1=$(as-show --kind features "$D/out/plan-tiny/ft.ast" | jq -c 'select(.name == "big" and .piece == null) | .torchrec_memory | [.weights, .output]')
    m2=$(as-show --kind features "$P/ft.ast" | jq -c 'select(.name == "big" and .piece == null) | .torchrec_memory | [.weights, .output]')
    [ -n "$m1" ] && [ "$m1" = "$m2" ]
    # the report: what was approximated, the capped table named, the row curve measured
    grep -qF "## What this run approximated" "$P/report.md"
    grep -qF "**Rows capped at 8000**" "$P/report.md"
    grep -qF "1 table above it, big (20000 rows)" "$P/report.md"
    grep -qF "**Measured at a batch of 64** (BATCH), not the config's 128" "$P/report.md"
    grep -qF "| 8000 (the cap) |" "$P/report.md"
    grep -qF "| 20000 (all) |" "$P/report.md"
    # the same values again: nothing redone; another cap: everything from the tables on
    run mkplan OUT="$D/out-cap" ROW_CAP=8000 BATCH=64
    assert_success
    refute_output --partial "== "
    run mkplan OUT="$D/out-cap" ROW_CAP=10000 BATCH=64
    assert_success
    assert_output --partial "== tables of"
    [ "$(cat "$P/scale.txt")" = "row_cap 10000 batch 64 weights tables optimizer sgd" ]
    # bad values stop before anything is made
    run mkplan OUT="$D/out-bad" ROW_CAP=lots
    assert_failure
    assert_output --partial "ROW_CAP: 'lots' is not a number, auto or none"
    assert_output --partial "make plan: bad ROW_CAP=lots"
    [ ! -e "$D/out-bad/plan-tiny/pool.ast" ]
}

@test "plan_scale.py: auto approximates on the CPU only, for models too large for it; numbers and none/config as given" {
    S="$ROOT/pipelines/plan_scale.py"
    M="$ROOT/pipelines/models"
    [ "$(python3 "$S" "$M/dlrm-dcnv2-criteo1tb.json" --device cpu)" = "1048576 8192" ]
    [ "$(python3 "$S" "$M/dlrm-dcnv2-criteo1tb.json" --device auto --ngpu 0)" = "1048576 8192" ]
    [ "$(python3 "$S" "$M/dlrm-dcnv2-criteo1tb.json" --device auto --ngpu 2)" = "0 0" ]
    [ "$(python3 "$S" "$M/dlrm-dcnv2-criteo1tb.json" --device cuda)" = "0 0" ]
    [ "$(python3 "$S" "$M/dlrm-criteo-kaggle.json" --device cpu)" = "0 0" ]
    [ "$(python3 "$S" "$M/dlrm-dcnv2-criteo1tb.json" --device cpu --row-cap none --batch config)" = "0 0" ]
    [ "$(python3 "$S" "$M/dlrm-criteo-kaggle.json" --device cuda --row-cap 1000 --batch 512)" = "1000 512" ]
    run python3 "$S" "$M/dlrm-criteo-kaggle.json" --device cpu --batch 0
    [ "$status" -eq 2 ]
    run python3 "$S" "$D/missing.json" --device cpu
    [ "$status" -eq 1 ]
    assert_output --partial "cannot read the config"
}

@test "row-curve: a capped table measured over each number of rows up to all of them, on one scale" {
    cat > "$D/big.json" <<'JSON'
{"topology": {"world_size": 2, "batch_size_per_rank": 64},
 "tables": [{"name": "big", "num_embeddings": 400000, "embedding_dim": 16, "pooling_factor": 4},
            {"name": "s1", "num_embeddings": 100, "embedding_dim": 8}, {"name": "s2", "num_embeddings": 300, "embedding_dim": 8}]}
JSON
    as-convert --config "$D/big.json" -o "$D/big.ast"
    AS_BENCH_FAKE_NOISE=quiet run "$ROOT/pipelines/row-curve" --tables "$D/big.ast" --cap 80000 --bin "$BIN" \
        --bench-opts "--warmup 1 --runs 3 --trim 1 --threads 1" -o "$D/curve.md"
    assert_success
    # cap/8, cap/4, cap/2, the cap, 2 cap, 4 cap and all 400,000 rows (the fake timer: the same cost)
    assert_output --partial "row-curve: point 1/7: 10000 rows ("
    assert_output --regexp "row-curve: point 7/7: 400000 rows \([0-9]+s, ETA [0-9]+s\)"
    run grep -c '^| [0-9]' "$D/curve.md"
    assert_output 7
    grep -qF "Table big (id 0, 400000 rows x 16)" "$D/curve.md"
    grep -qF "| 10000 | 0 MiB |" "$D/curve.md" || grep -qF "| 10000 |" "$D/curve.md"
    grep -qF "| 80000 (the cap) |" "$D/curve.md"
    grep -qF "| 400000 (all) |" "$D/curve.md"
    grep -qF "Above the cap the cost moved by +0.0 % at most (3 sizes measured up to 400000 rows)." "$D/curve.md"
    # no table above the cap; usage
    run "$ROOT/pipelines/row-curve" --tables "$D/big.ast" --cap 500000 --bin "$BIN"
    assert_failure 1
    assert_output --partial "no table has more than 500000 rows"
    run "$ROOT/pipelines/row-curve" --tables "$D/big.ast" --bin "$BIN"
    assert_failure 2
}

@test "plan_train.py: auto is the config's on the CPU and on a GPU; optimizers mapped onto the kernels'; what they lack refused" {
    cfg() { printf '{"topology": {"world_size": 2, "optimizer": "%s"}, "tables": [{"name": "a", "num_embeddings": 10, "embedding_dim": 4%s}]}' "$1" "$2" > "$T/c.json"; }
    cfg exact_rowwise_adagrad ""
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu
    assert_output "tables exact_rowwise_adagrad"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cuda:0
    assert_output "tables exact_rowwise_adagrad"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device auto --ngpu 2
    assert_output "tables exact_rowwise_adagrad"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cuda:0 --weights fp16 --optimizer sgd
    assert_output "fp16 sgd"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device auto --ngpu 0 --weights bf16 --optimizer adam
    assert_output "bf16 adam"
    cfg rowwise_adagrad ""
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu
    assert_output "tables exact_rowwise_adagrad"
    cfg exact_sgd ""
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu
    assert_output "tables sgd"
    # what the kernels lack: exit 3, naming what to give
    cfg adagrad ""
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    assert_output --partial "its optimizer adagrad is not among the kernels' (sgd, exact_rowwise_adagrad, adam)"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu --optimizer sgd
    assert_output "tables sgd"
    cfg sgd ', "data_type": "int8"'
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    assert_output --partial "tables of int8 weights"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu --weights fp16
    assert_output "fp16 sgd"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/c.json" --device cpu --weights fp64
    assert_failure 2
    echo '{"tables": ' > "$T/bad.json"
    run python3 "$ROOT/pipelines/plan_train.py" "$T/bad.json" --device cpu
    assert_failure 1
    # the report: what was measured, and when it is not what the model trains
    cfg exact_rowwise_adagrad ', "data_type": "fp32"'
    run python3 "$ROOT/pipelines/plan_train.py" --report "$T/c.json" tables exact_rowwise_adagrad
    assert_output --partial "each table's weights in its config's type (fp32), updated by exact row-wise Adagrad"
    refute_output --partial "not of its own kernel"
    run python3 "$ROOT/pipelines/plan_train.py" --report "$T/c.json" fp16 sgd
    assert_output --partial "fp16 weights, updated by exact SGD"
    assert_output --partial "The model trains fp32 weights with exact_rowwise_adagrad: these costs are not of its own kernel"
}
