#!/usr/bin/env bats
# make plan (pipelines/plan.mk): a model config planned by its measured cost, at a tiny scale
# (6 tables onto 2 ranks, few and short measurements): every stage, the choice, plan.json,
# the report, the resume, bad input; and pipelines/plan_choose.py's rule on hand-made tables
load test_helper/common

setup_file() {
    export D="$BATS_FILE_TMPDIR"
    cat > "$D/tiny.json" <<'JSON'
{"name": "tiny", "module_path": "model.ebc",
 "topology": {"world_size": 2, "local_size": 2, "hbm_gib": 1, "batch_size_per_rank": 64, "optimizer": "sgd"},
 "tables": [
  {"name": "big", "num_embeddings": 20000, "embedding_dim": 32, "pooling_factor": 8},
  {"name": "mid", "num_embeddings": 5000, "embedding_dim": 32, "pooling_factor": 4},
  {"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2},
  {"name": "b", "num_embeddings": 500, "embedding_dim": 16, "pooling_factor": 1},
  {"name": "c", "num_embeddings": 100, "embedding_dim": 8, "pooling_factor": 1},
  {"name": "d", "num_embeddings": 10, "embedding_dim": 8, "pooling_factor": 1}
 ]}
JSON
}

# make plan at the tiny scale, the measurement quick (the fake timer keeps it quiet)
mkplan() {
    AS_BENCH_FAKE_NOISE=quiet make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$D/tiny.json" OUT="$D/out" \
        NCOST=30 MAXT=4 BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 8M" DEVICE=cpu PROGRESS= MODEL_GATE= TORCHREC_SRC= "$@"
}

@test "make plan: every stage, the chosen plan among those TorchRec can load, plan.json checked, the report compares it" {
    run mkplan
    assert_success
    P="$D/out/plan-tiny"
    for f in pool.ast ft.ast costs.ast model.ast own.ast plans.ast measured.ast choice.md chosen.txt plan.json report.md; do
        [ -e "$P/$f" ] || fail "$f missing"
    done
    [ -z "$(compgen -G "$P/*.tmp*")" ]
    chosen=$(cat "$P/chosen.txt")
    # the chosen plan is one of the measured candidates, and the exported plan is it
    as-show -k plan "$P/measured.ast" | jq -r .alg | grep -qxF "$chosen"
    [ "$(jq -r .alg "$P/plan.json")" = "$chosen" ]
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check --config "$D/tiny.json" "$P/plan.json"
    assert_success
    # the candidates: table-wise, TorchRec's planner, split (column splits: SPLIT_ROWS none)
    algs=$(as-show -k plan "$P/measured.ast" | jq -r .alg | sort | tr '\n' ' ')
    [[ "$algs" == *"torchrec "* && "$algs" == *"cost-greedy+split+refine "* && "$algs" == *"size-lookup-greedy "* ]]
    # no row pieces but the torchrec plan's own (K blocks, block i on rank i)
    [ "$(as-show -k plan "$P/measured.ast" | jq -c 'select(.alg != "torchrec") | .pieces // [] | .[] | select(. != null) | select(.[2] != 0)' | wc -l)" -eq 0 ]
    # the report: the chosen plan named, compared with TorchRec's planner, the candidates' tables
    grep -qF "## The chosen plan: \`$chosen\`" "$P/report.md"
    [ "$chosen" = torchrec ] || grep -qF "against TorchRec's planner as we run it (\`torchrec\`)" "$P/report.md"
    grep -qF "## The candidates, kernel alone" "$P/report.md"
    grep -qF "## The chosen plan, rank by rank" "$P/report.md"
    grep -q "^Model config: .*tiny.json; device: cpu" "$P/report.md"
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
