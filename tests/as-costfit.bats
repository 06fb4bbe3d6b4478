#!/usr/bin/env bats
# as-costfit: training on a real small pipeline (CPU costs), prediction, --init, the held-out
# report, bad input and the CLI contract.
load test_helper/common

FAST="--device cpu --warmup 1 --runs 3 --trim 1 --threads 1"

# one pool, its features and 60 measured shards, made once for the whole file
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --preset tiny -o "$D/pool.ast"
    as-features "$D/pool.ast" -o "$D/f.ast"
    as-bench --tables "$D/pool.ast" --sample 60 --max-tables 4 $FAST -o "$D/c.ast"
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 30 -o "$D/m.ast"
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

@test "as-costfit --help and --version" {
    run as-costfit --help
    assert_success
    assert_output --partial "usage: as-costfit"
    assert_output --partial "--split tables"
    assert_output --partial "--predict MODEL"
    run as-costfit --version
    assert_success
}

@test "as-costfit: usage errors are exit 2" {
    run as-costfit --bogus
    assert_failure 2
    run as-costfit --epochs 0
    assert_failure 2
    run as-costfit --hidden 1,2
    assert_failure 2
    run as-costfit --split rows
    assert_failure 2
    run as-costfit --test-frac 1.5
    assert_failure 2
    run as-costfit --device tpu "$D/f.ast"
    assert_failure 2
    run as-costfit --predict "$D/m.ast" --init "$D/m.ast"
    assert_failure 2
}

@test "as-costfit: empty, non-zstd and truncated input are exit 1; TTY and /dev/full refused" {
    run as-costfit -o "$T/m.ast" < /dev/null
    assert_failure 1
    [ ! -e "$T/m.ast" ]
    echo hello > "$T/x"
    run as-costfit "$T/x" -o "$T/m.ast"
    assert_failure 1
    cat "$D/f.ast" "$D/c.ast" > "$T/all.ast"
    head -c $(( $(stat -c %s "$T/all.ast") - 100 )) "$T/all.ast" > "$T/cut.ast"
    run as-costfit "$T/cut.ast" -o "$T/m.ast"
    assert_failure 1
    [ ! -e "$T/m.ast" ]
    run_tty "as-costfit --epochs 1 '$T/all.ast'"
    assert_failure 2
    run as-costfit --epochs 1 "$T/all.ast" -o /dev/full
    assert_failure 3
    run sh -c "as-costfit --epochs 1 '$T/all.ast' > /dev/full"
    assert_failure 3
    # no usable costs (only features)
    run as-costfit "$D/f.ast"
    assert_failure 1
    assert_output --partial "no usable"
}

@test "as-costfit: the model and report records of the small pipeline" {
    run sh -c "as-show --count '$D/m.ast'"
    assert_line "model	1"
    assert_line "costfit-report	1"
    run sh -c "as-show --kind model '$D/m.ast' | jq -c '[.model, .format_version, (.features|length), .features[0:4], .layers, .nparams, .params.shape, .cost_device_kind, .train_device, .epochs, (.losses.shape[0]), (.norm_std|length), .split]'"
    assert_output '["costmodel",1,21,["dim","rows","pooling","size"],[21,128,32,64,1],9121,[9121],"cpu","cpu",30,30,3,"shards"]'
    run sh -c "as-show --full --kind costfit-report '$D/m.ast' | jq -e '(.train_shards + .test_shards) == 60 and .test_shards > 0
        and (.test_measured.data | length) == .test_shards and (.test_pred.shape[0]) == .test_shards
        and .model.test.n == .test_shards and (.model.test.mae >= 0) and (.linear.test.mae >= 0)
        and .sum_single.coverage >= 0 and .sum_single.coverage <= 1 and .noise.mean_rel_std >= 0'"
    assert_success
}

@test "as-costfit: deterministic for a seed on the CPU; --report FILE" {
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 20 --seed 4 -o "$T/a.ast"
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 20 --seed 4 --report "$T/r.ast" -o "$T/b.ast"
    [ "$(as-show --kind model "$T/a.ast" | jq -c .params)" = "$(as-show --kind model "$T/b.ast" | jq -c .params)" ]
    run as-show --count "$T/b.ast"
    refute_line --partial "costfit-report"
    run as-show --count "$T/r.ast"
    assert_line "costfit-report	1"
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 20 --seed 5 -o "$T/c.ast"
    [ "$(as-show --kind model "$T/a.ast" | jq -c .params)" != "$(as-show --kind model "$T/c.ast" | jq -c .params)" ]
}

@test "as-costfit --split tables: train and test shards use disjoint table halves" {
    cat "$D/f.ast" "$D/c.ast" | as-costfit --epochs 5 --split tables -o "$T/m.ast" 2> "$T/err"
    grep -q "split by tables" "$T/err"
    run sh -c "as-show --kind costfit-report '$T/m.ast' | jq -e '.split == \"tables\" and (.train_shards + .test_shards + .dropped_shards) == 60 and .dropped_shards > 0'"
    assert_success
}

@test "as-costfit --predict: shards, costs and plans get pred_ms; other records pass" {
    PLAN='\x86\xa4kind\xa4plan\xa4task\x03\xa3alg\xa1x\xa6shards\x03\xa6tables\x93\x00\x01\x02\xa6assign\x93\x00\x01\x00'
    SHARD='\x82\xa4kind\xa5shard\xa6tables\x92\x04\x05'
    OTHER='\x82\xa4kind\xa5other\xa1x\x2a'
    make_stream "$HDR$PLAN$SHARD$OTHER" > "$T/in.ast"
    cat "$D/f.ast" "$T/in.ast" "$D/c.ast" | as-costfit --predict "$D/m.ast" -o "$T/out.ast"
    run as-show --count "$T/out.ast"
    assert_line "features	32"
    assert_line "cost	60"
    assert_line "plan	1"
    assert_line "shard	1"
    assert_line "other	1"
    run sh -c "as-show --kind plan '$T/out.ast' | jq -c '[.task, .assign, (.pred_ms|length), (.pred_ms[0] > 0), .pred_ms[2], (.pred_max_ms == (.pred_ms|max))]'"
    assert_output '[3,[0,1,0],3,true,0,true]'
    run sh -c "as-show --kind shard '$T/out.ast' | jq -c '[.tables, (.pred_ms > 0)]'"
    assert_output '[[4,5],true]'
    run sh -c "as-show --kind cost '$T/out.ast' | jq -e -s 'all(.[]; .pred_ms > 0)'"
    assert_success
    run as-show --kind other "$T/out.ast"
    assert_output '{"kind":"other","x":42}'
    # predicting twice replaces pred_ms (no duplicate keys)
    as-costfit --predict "$D/m.ast" "$T/out.ast" | as-show --kind shard | jq -e 'keys == ["kind","pred_ms","tables"]'
}

@test "as-costfit --select: the candidates an ensemble disagrees on most, measured or repeated ones left out" {
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 30 --seed 7 -o "$T/m2.ast"
    as-convert --synth --preset tiny -o "$T/pool.ast"
    as-bench --tables "$T/pool.ast" --sample 80 --max-tables 4 --seed 9 --draw-only -q -o "$T/cand.ast"
    # a candidate of a measured shard's tables (in another order) is never chosen
    first=$(as-show --kind cost "$D/c.ast" | jq -c 'select((.tables | length) > 1) | .tables | reverse' | head -1)
    python3 "$ROOT/tests/test_helper/mp.py" "{\"kind\":\"shard\",\"tables\":$first}" | zstd -q -c > "$T/dup.ast"
    cat "$D/f.ast" "$D/c.ast" "$T/dup.ast" "$T/cand.ast" | as-costfit --select 6 --ensemble "$D/m.ast" --ensemble "$T/m2.ast" -o "$T/sel.ast"
    run as-show --count "$T/sel.ast"
    assert_line "shard	6"
    refute_line --partial "features"
    ! as-show --kind shard "$T/sel.ast" | jq -c .tables | grep -qxF "$first"
    # the chosen spread is the two models' half difference, the largest of the candidates'
    # (ties aside), and the chosen keep their input order
    for m in "$D/m.ast" "$T/m2.ast"; do as-costfit --predict "$m" "$D/f.ast" "$T/cand.ast" | as-show --kind shard | jq -c .pred_ms; done > "$T/p"
    as-show --kind shard "$T/sel.ast" | jq -c '[.tables, .pieces, .pred_ms, .pred_sd_ms]' > "$T/chosen"
    as-show --kind shard "$T/cand.ast" | jq -c '[.tables, .pieces]' > "$T/all"
    as-show --kind cost "$D/c.ast" | jq -c '.tables | sort' > "$T/measured"
    run python3 - "$T/p" "$T/chosen" "$T/all" "$T/measured" <<'PY'
import json, sys
p = [json.loads(l) for l in open(sys.argv[1])]
n = len(p) // 2
a, b = p[:n], p[n:]
chosen = [json.loads(l) for l in open(sys.argv[2])]
cands = [json.loads(l) for l in open(sys.argv[3])]
measured = {tuple(json.loads(l)) for l in open(sys.argv[4])}
key = lambda c: (tuple(sorted(zip(c[0], [json.dumps(x) for x in (c[1] or [None] * len(c[0]))]))))
sd = [abs(x - y) / 2 for x, y in zip(a, b)]
pos, seen, kept = [], set(), []
for i, c in enumerate(cands):
    k = key(c)
    whole = c[1] is None or all(x is None for x in c[1])
    if k in seen or (whole and tuple(sorted(c[0])) in measured):
        seen.add(k)
        continue
    seen.add(k)
    kept.append(i)
for c in chosen:
    i = next(i for i in kept if [cands[i][0], cands[i][1]] == [c[0], c[1]])
    pos.append(i)
    assert abs(c[3] - sd[i]) < 1e-6 * max(1, sd[i]), (c, sd[i])
    assert abs(c[2] - (a[i] + b[i]) / 2) < 1e-6 * max(1, c[2])
assert pos == sorted(pos), pos
least = min(sd[i] for i in pos)
assert all(sd[i] <= least + 1e-9 for i in kept if i not in pos), "a larger spread left out"
print("ok")
PY
    assert_output "ok"
    # usage: an ensemble of at least two, and only with --select
    run as-costfit --select 3 --ensemble "$D/m.ast" "$D/f.ast"
    assert_failure 2
    assert_output --partial "--select needs --ensemble MODEL at least twice"
    run as-costfit --ensemble "$D/m.ast" --ensemble "$T/m2.ast" "$D/f.ast"
    assert_failure 2
    run as-costfit --select 3 --ensemble "$D/m.ast" --ensemble "$T/m2.ast" --predict "$D/m.ast" "$D/f.ast"
    assert_failure 2
}

@test "as-costfit: costs or shards of tables without features are exit 1" {
    run sh -c "as-costfit --epochs 1 '$D/c.ast' -o '$T/m.ast'"
    assert_failure 1
    assert_output --partial "has no \`features\` record"
    [ ! -e "$T/m.ast" ]
    make_stream "$HDR"'\x82\xa4kind\xa5shard\xa6tables\x92\x04\x63' > "$T/s.ast"
    run sh -c "cat '$D/f.ast' '$T/s.ast' | as-costfit --predict '$D/m.ast'"
    assert_failure 1
    assert_output --partial "table 99 has no"
}

@test "as-costfit: bad model files are exit 1" {
    head -c 2000 "$D/m.ast" > "$T/cut.ast"
    run sh -c "as-costfit --predict '$T/cut.ast' '$D/f.ast' > /dev/null"
    assert_failure 1
    run sh -c "as-costfit --predict '$D/f.ast' '$D/f.ast' > /dev/null"
    assert_failure 1
    assert_output --partial "no \`model\` record"
    run sh -c "as-costfit --init '$T/cut.ast' '$D/f.ast' '$D/c.ast' > /dev/null"
    assert_failure 1
    run sh -c "as-costfit --predict '$T/absent.ast' '$D/f.ast' > /dev/null"
    assert_failure 1
}

@test "as-costfit --init continues training; error and null costs are skipped with a count" {
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --init "$D/m.ast" --epochs 7 -o "$T/m2.ast"
    run sh -c "as-show --kind model '$T/m2.ast' | jq -c '[.epochs, .losses.shape[0], .layers]'"
    assert_output '[37,37,[21,128,32,64,1]]'
    run as-costfit --init "$D/m.ast" --hidden 8,8,8 "$D/f.ast"
    assert_failure 2
    # a cost with an error and one with nil cost_ms
    E1='\x83\xa4kind\xa4cost\xa6tables\x91\x01\xa5error\xa4oops'
    E2='\x84\xa4kind\xa4cost\xa6tables\x91\x01\xa7cost_ms\xc0\xa5error\xc0'
    make_stream "$HDR$E1$E2" > "$T/e.ast"
    run sh -c "cat '$D/f.ast' '$D/c.ast' '$T/e.ast' | as-costfit --epochs 1 -o '$T/m3.ast'"
    assert_success
    assert_output --partial "skipped 2 cost record(s)"
}

@test "as-costfit: concatenated input, features after costs" {
    run sh -c "cat '$D/c.ast' '$D/f.ast' | as-costfit -q --epochs 2 | as-show --count"
    assert_success
    assert_line "model	1"
    assert_line "header	1"
}

@test "as-costfit --log-features: the transform is stored, reloaded and used by --predict and as-plan" {
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 20 --log-features -o "$T/mlog.ast"
    run sh -c "as-show --kind model '$T/mlog.ast' | jq -r .transform"
    assert_output "log1p"
    run sh -c "as-show --kind model '$D/m.ast' | jq -r .transform"
    assert_output "none"
    # predictions through the model file equal the report's own test predictions
    run sh -c "cat '$D/f.ast' '$D/c.ast' | as-costfit --predict '$T/mlog.ast' | as-show --kind cost | jq -e -s 'all(.[]; .pred_ms >= 0)'"
    assert_success
    as-features "$D/pool.ast" --tasks 2 --task-tables 8 --shards 2 -o "$T/ft.ast"
    run as-plan --alg cost-greedy --model "$T/mlog.ast" "$T/ft.ast" -o "$T/p.ast"
    assert_success
    # an unknown transform is refused
    zstd -dc "$T/mlog.ast" | perl -pe 's/log1p/logXp/g' | zstd -q -c > "$T/bad.ast"
    run sh -c "cat '$D/f.ast' '$D/c.ast' | as-costfit --predict '$T/bad.ast'"
    assert_failure 1
    assert_output --partial "unknown feature transform 'logXp'"
}

# ---- -o and --report: atomic, never over an input; messages (issue 11) -----------------------

@test "as-costfit: killed mid-write (SIGTERM, SIGINT) of the model, the report and --predict, old files intact" {
    echo precious > "$T/old"
    for sig in TERM INT; do
        cp "$T/old" "$T/out.ast"
        kill_mid_write $sig "$T/out.ast" as-costfit --epochs 5 "$D/f.ast" "$D/c.ast" -o "$T/out.ast"
        assert_killed_intact $sig "$T/out.ast" "$T/old"
        grep -q "model test" "$T/kill.err"   # the temporary came after training and evaluation
        cp "$T/old" "$T/rep.ast"
        cp "$T/old" "$T/out.ast"
        kill_mid_write $sig "$T/rep.ast" as-costfit -q --epochs 5 --report "$T/rep.ast" "$D/f.ast" "$D/c.ast" -o "$T/out.ast"
        assert_killed_intact $sig "$T/rep.ast" "$T/old"
        assert_killed_intact $sig "$T/out.ast" "$T/old"
        cp "$T/old" "$T/out.ast"
        kill_mid_write $sig "$T/out.ast" as-costfit --predict "$D/m.ast" "$D/f.ast" "$D/c.ast" -o "$T/out.ast"
        assert_killed_intact $sig "$T/out.ast" "$T/old"
    done
}

@test "as-costfit: -o onto an input or the --init model is refused; an empty -o or --report before any work" {
    cp "$D/m.ast" "$T/m.ast"
    run as-costfit --init "$T/m.ast" "$D/f.ast" "$D/c.ast" -o "$T/m.ast"
    assert_failure 2
    assert_output --partial "it is also an input"
    cmp "$T/m.ast" "$D/m.ast"
    cp "$D/c.ast" "$T/c.ast"
    run as-costfit "$D/f.ast" "$T/c.ast" -o "$T/c.ast"
    assert_failure 2
    cmp "$T/c.ast" "$D/c.ast"
    run as-costfit --predict "$T/m.ast" "$D/f.ast" -o "$T/m.ast"
    assert_failure 2
    run as-costfit "$D/f.ast" "$D/c.ast" -o ''
    assert_failure 2
    assert_output --partial "empty file name"
    run as-costfit "$D/f.ast" "$D/c.ast" --report '' -o "$T/x.ast"
    assert_failure 2
    assert_output --partial "--report: empty file name"
    [ ! -e "$T/x.ast" ]
    run as-costfit --epochs
    assert_failure 2
    assert_output --partial "option --epochs needs a value"
    refute_output --partial "unknown option"
}

@test "as-costfit: standard input is called <stdin> in every message" {
    # costs without features, from standard input: training and --predict name the record
    run sh -c "as-costfit -q < '$D/c.ast' > /dev/null"
    assert_failure 1
    assert_output --partial "<stdin>: record"
    refute_output --partial "-: record"
    run sh -c "as-costfit --predict '$D/m.ast' < '$D/c.ast' > /dev/null"
    assert_failure 1
    assert_output --partial "<stdin>: record"
    refute_output --partial "-: record"
    run sh -c "as-costfit -q - < '$D/c.ast' > /dev/null"
    assert_output --partial "<stdin>: record"
}

# ---- constrained output, the held-out record, never-negative predictions (issue 12) ---------

# a legacy (no `output` field: linear) model, weights by hand, hidden sizes 1: a table's one
# hidden unit is dim/32 (1 for the tiny pool's 32-wide tables, 0.5 for 16-wide), the shard
# sums them and z = sum - 1.5; y_scale 1. A shard of one 32-wide table has raw output -0.5 ms.
LEGACY='{"kind":"model","model":"costmodel","format_version":1,"features":["dim","rows","pooling","size"]+["bin%d" % i for i in range(17)],"zscored":["dim","rows","pooling"],"norm_mean":[0,0,0],"norm_std":[1,1,1],"y_scale":1.0,"layers":[21,1,1,1,1],"nparams":28,"params":arr("float32",[28],[1/32]+[0]*20+[0,1,0,1,0,1,-1.5])}'

@test "as-costfit --output-form: softplus by default; stored, reloaded; bad values and --init are usage errors" {
    run sh -c "as-show --kind model '$D/m.ast' | jq -r .output"
    assert_output "softplus"
    for f in log linear; do
        cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 20 --output-form $f -o "$T/m-$f.ast"
        run sh -c "as-show --kind model '$T/m-$f.ast' | jq -r .output"
        assert_output "$f"
        run sh -c "cat '$D/f.ast' '$D/c.ast' | as-costfit --predict '$T/m-$f.ast' | as-show --kind cost | jq -e -s 'all(.[]; .pred_ms >= 0) and any(.[]; .pred_ms > 0)'"
        assert_success
    done
    run as-costfit --output-form relu "$D/f.ast"
    assert_failure 2
    assert_output --partial "'relu' is not softplus, log or linear"
    run as-costfit --init "$D/m.ast" --output-form log "$D/f.ast" "$D/c.ast"
    assert_failure 2
    run as-costfit --predict "$D/m.ast" --output-form log "$D/f.ast"
    assert_failure 2
    # --init keeps the form
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --init "$T/m-log.ast" --epochs 2 -o "$T/m2.ast"
    run sh -c "as-show --kind model '$T/m2.ast' | jq -r .output"
    assert_output "log"
}

@test "as-costfit: the model record's heldout equals the report's test metrics; nil with --test-frac 0" {
    run sh -c "as-show --kind model '$D/m.ast' > '$T/m.json' && as-show --kind costfit-report '$D/m.ast' > '$T/r.json' &&
        jq -e --slurpfile r '$T/r.json' '.heldout as \$h | \$r[0] as \$r |
            \$h.split == \"shards\" and \$h.split == \$r.split and \$h.test_shards == \$r.test_shards and \$h.test_shards > 0 and
            \$h.model == \$r.model.test and \$h.linear == \$r.linear.test and
            \$h.sum_single == (\$r.sum_single.test + {coverage: \$r.sum_single.coverage}) and
            (\$h.model | keys) == [\"mae\",\"mape\",\"mse\",\"n\",\"r2\"]' '$T/m.json'"
    assert_success
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 2 --test-frac 0 -o "$T/m0.ast"
    run sh -c "as-show --kind model '$T/m0.ast' | jq -c '[has(\"heldout\"), .heldout]'"
    assert_output '[true,null]'
    # --split tables: the split is named
    cat "$D/f.ast" "$D/c.ast" | as-costfit -q --epochs 2 --split tables -o "$T/mt.ast"
    run sh -c "as-show --kind model '$T/mt.ast' | jq -r .heldout.split"
    assert_output "tables"
}

@test "as-costfit: a warning when the model predicts held-out shards worse than the linear baseline, and only then" {
    # one optimiser step from the random init: a bad model by construction
    cat "$D/f.ast" "$D/c.ast" | as-costfit --steps 1 -o "$T/bad.ast" 2> "$T/err"
    run sh -c "as-show --kind model '$T/bad.ast' | jq -e '.heldout.model.r2 < .heldout.linear.r2'"
    assert_success
    grep -q "warning: the cost model predicts held-out shards worse than the linear baseline" "$T/err"
    # for other models: the warning appears exactly when the stored R^2 is below the baseline's
    for e in 5 100 400; do
        cat "$D/f.ast" "$D/c.ast" | as-costfit --epochs $e --seed 1 -o "$T/m$e.ast" 2> "$T/err$e"
        worse=$(as-show --kind model "$T/m$e.ast" | jq -r '.heldout.model.r2 < .heldout.linear.r2')
        if grep -q "worse than the linear baseline" "$T/err$e"; then [ "$worse" = true ]; else [ "$worse" = false ]; fi
    done
    # -q silences messages, not this warning
    run sh -c "cat '$D/f.ast' '$D/c.ast' | as-costfit -q --steps 1 -o '$T/bad2.ast'"
    assert_output --partial "worse than the linear baseline"
}

@test "as-costfit --predict and as-plan never show a negative cost, even for a legacy model with negative outputs" {
    mp_stream "$LEGACY" > "$T/legacy.ast"
    # hand-made shards: tables 0+1 (both 32 wide): 1 + 1 - 1.5 = 0.5 ms; table 3 (16 wide): -1 -> 0
    SH1='{"kind":"shard","tables":[0,1]}'
    SH2='{"kind":"shard","tables":[3]}'
    mp_stream "$SH1" "$SH2" > "$T/sh.ast"
    run sh -c "as-show --kind features '$D/f.ast' | jq -c 'select(.id == 0 or .id == 1 or .id == 3) | .dim'"
    assert_output "$(printf '32\n32\n16')"
    run sh -c "cat '$D/f.ast' '$T/sh.ast' | as-costfit -q --predict '$T/legacy.ast' | as-show --kind shard | jq -c .pred_ms"
    assert_output "$(printf '0.5\n0')"
    # every measured shard: >= 0, some clamped (raw output below 0), some not
    run sh -c "cat '$D/f.ast' '$D/c.ast' | as-costfit --predict '$T/legacy.ast' | as-show --kind cost | jq -e -s 'all(.[]; .pred_ms >= 0) and any(.[]; .pred_ms == 0) and any(.[]; .pred_ms > 0)'"
    assert_success
    # as-plan: cost-greedy and the others, text and stream: no negative number anywhere
    as-features "$D/pool.ast" --tasks 3 --task-tables 6 --shards 3 --seed 2 -o "$T/ft.ast"
    run as-plan --alg all --model "$T/legacy.ast" --format text "$T/ft.ast"
    assert_success
    assert_output --partial "predicted (estimated)"
    refute_output --regexp '(^|[ (,])-[0-9]'
    refute_output --partial "-0.0"
    run sh -c "as-plan --alg all --model '$T/legacy.ast' '$T/ft.ast' | as-show --kind plan | jq -e -s 'length > 0 and all(.[]; all(.pred_ms[]; . >= 0))'"
    assert_success
    # the plan's predicted costs through --predict as well
    run sh -c "as-plan --alg all --model '$T/legacy.ast' '$T/ft.ast' | cat '$D/f.ast' - | as-costfit --predict '$T/legacy.ast' | as-show --kind plan | jq -e -s 'all(.[]; all(.pred_ms[]; . >= 0) and .pred_max_ms >= 0)'"
    assert_success
}

@test "as-costfit: --report may not replace an input, the --init model or standard input" {
    cp "$D/m.ast" "$T/m.ast"; cp "$D/c.ast" "$T/c.ast"
    run as-costfit -q --epochs 2 --report "$T/c.ast" "$D/f.ast" "$T/c.ast" -o "$T/out.ast"
    assert_failure 2
    assert_output --partial "--report $T/c.ast: it is also an input ($T/c.ast)"
    run as-costfit -q --epochs 2 --init "$T/m.ast" --report "$T/m.ast" "$D/f.ast" "$D/c.ast" -o "$T/out.ast"
    assert_failure 2
    assert_output --partial "--report $T/m.ast: it is also an input (--init $T/m.ast)"
    run sh -c "cat '$D/f.ast' | as-costfit -q --epochs 2 --report '$T/c.ast' -o '$T/out.ast' < '$T/c.ast'"
    assert_failure 2
    assert_output --partial "it is also an input (<stdin>)"
    cmp "$T/m.ast" "$D/m.ast"; cmp "$T/c.ast" "$D/c.ast"
    [ ! -e "$T/out.ast" ]
}

@test "as-costfit: costs measured training different kinds (weights, optimizer) are refused: one model per kind" {
    AS_BENCH_FAKE_NOISE=quiet as-bench -q --tables "$D/pool.ast" --sample 5 --max-tables 3 $FAST --weights-type fp32 \
        --optimizer exact_rowwise_adagrad -o "$T/k.ast"
    run sh -c "cat '$D/f.ast' '$D/c.ast' '$T/k.ast' | as-costfit -q -o '$T/m.ast'"
    assert_failure 1
    assert_output --partial "the costs were measured training 2 different kinds ('fp16 + sgd', 'fp32 + exact_rowwise_adagrad'): different kernels; fit one model per kind"
    [ ! -e "$T/m.ast" ]
    # one kind alone fits
    run sh -c "cat '$D/f.ast' '$T/k.ast' '$T/k.ast' '$T/k.ast' | as-costfit -q --epochs 2 -o '$T/m.ast'"
    assert_success
}

# 300 cost records of 1..4 tables of the tiny pool (table sets drawn with a fixed seed), their
# cost a sum over the tables of dim x pooling and a constant: records like c.ast's first
synth_costs() {
    as-show --kind features "$D/f.ast" > "$T/f.json"
    mp_edit "$D/c.ast" '
import json, random
ft = {f["id"]: f for f in map(json.loads, open("'"$T/f.json"'"))}
ids = sorted(ft)
r = random.Random(5)
one = kind("cost")[0]
out = []
for k in range(300):
    ts = r.sample(ids, r.randint(1, 4))
    c = 0.05 + sum(0.0004 * ft[t]["dim"] * ft[t]["pooling"] for t in ts)
    out.append(dict(one, tables=ts, shard=k, cost_ms=c, median_ms=c))
recs[:] = [recs[0]] + out' > "$T/c300.ast"
}

@test "as-costfit --steps auto (the default): the step count chosen on validation parts, in the report" {
    synth_costs
    cat "$D/f.ast" "$T/c300.ast" | as-costfit --seed 3 --max-steps 800 --report "$T/r.ast" -o "$T/m.ast" 2> "$T/err"
    grep -q -- "--steps auto: the validation loss lowest at steps .* of 3 runs" "$T/err" || fail "$(cat "$T/err")"
    run sh -c "as-show '$T/r.ast' | jq -c 'select(.kind == \"costfit-report\") | .train_shards as \$n | [.steps_rule, .validation.folds, (.validation.runs | length), (.validation.runs | map((.best_step <= .ran) and (.ran <= 800) and (.ran % 10 == 0) and (.fit_shards + .val_shards == \$n) and (.val_shards >= 20) and (.loss_best <= .loss_first)) | all), ((.validation.runs | map(.val_shards) | add) <= \$n), (.validation.best_step == ((.validation.runs | map(.best_step) | add) / 3 | round)), (.steps == .validation.best_step)]'"
    assert_output '["auto",3,3,true,true,true,true]'
    # the model says the steps it was trained for
    [ "$(as-show --kind model "$T/m.ast" | jq .steps)" = "$(as-show "$T/r.ast" | jq 'select(.kind == "costfit-report") | .steps')" ]
    # deterministic for a seed
    cat "$D/f.ast" "$T/c300.ast" | as-costfit -q --seed 3 --max-steps 800 --report "$T/r2.ast" -o "$T/m2.ast"
    cmp <(as-show --kind model "$T/m.ast" | jq -c .params) <(as-show --kind model "$T/m2.ast" | jq -c .params)
    # the limit: not stopped before 100 steps and 200 without a fall, so 150 runs to it
    cat "$D/f.ast" "$T/c300.ast" | as-costfit -q --seed 3 --max-steps 150 --report "$T/r3.ast" -o "$T/m3.ast"
    run sh -c "as-show '$T/r3.ast' | jq -c 'select(.kind == \"costfit-report\") | [.validation.runs[] | [.ran, .early]]'"
    assert_output '[[150,false],[150,false],[150,false]]'
    # one run: the first part alone, as fold 0 of the three (the same best step)
    cat "$D/f.ast" "$T/c300.ast" | as-costfit -q --seed 3 --max-steps 800 --folds 1 --report "$T/r6.ast" -o "$T/m6.ast"
    [ "$(as-show "$T/r6.ast" | jq -c 'select(.kind == "costfit-report") | [.validation.folds, .validation.runs[0].best_step, .validation.best_step]')" = \
      "$(as-show "$T/r.ast" | jq -c 'select(.kind == "costfit-report") | [1, .validation.runs[0].best_step, .validation.runs[0].best_step]')" ]
    # 60 shards are too few for both parts: the epochs decide, no validation run
    cat "$D/f.ast" "$D/c.ast" | as-costfit --epochs 7 --steps auto --report "$T/r4.ast" -o "$T/m4.ast" 2> "$T/err"
    grep -q "too few for 3 validation parts" "$T/err" || fail "$(cat "$T/err")"
    run sh -c "as-show '$T/r4.ast' | jq -c 'select(.kind == \"costfit-report\") | [.steps_rule, .validation, (.steps == 7)]'"
    assert_output '["auto-epochs",null,true]'
    # fixed counts say so
    cat "$D/f.ast" "$T/c300.ast" | as-costfit -q --steps 40 --report "$T/r5.ast" -o "$T/m5.ast"
    run sh -c "as-show '$T/r5.ast' | jq -c 'select(.kind == \"costfit-report\") | [.steps_rule, .validation, .steps]'"
    assert_output '["steps",null,40]'
    # auto's options without auto, and bad values, are usage errors
    run as-costfit --epochs 5 --max-steps 10 "$D/f.ast"
    assert_failure 2
    assert_output --partial "--max-steps, --val-frac and --folds are --steps auto's"
    run as-costfit --steps 10 --folds 2 "$D/f.ast"
    assert_failure 2
    run as-costfit --folds 6 "$D/f.ast"
    assert_failure 2
    assert_output --partial "more than all the training shards"
    run as-costfit --folds 0 "$D/f.ast"
    assert_failure 2
    run as-costfit --steps 10 --val-frac 0.3 "$D/f.ast"
    assert_failure 2
    run as-costfit --steps often "$D/f.ast"
    assert_failure 2
    run as-costfit --val-frac 0.95 "$D/f.ast"
    assert_failure 2
}
