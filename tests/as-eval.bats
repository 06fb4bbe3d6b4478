#!/usr/bin/env bats
# as-eval: figures checked by hand, runs, refusals, the whole pipeline at a tiny scale and
# the plots.
load test_helper/common

hx() { printf '\\x%02x' "$1"; }
s() { printf '%s' "$(hx $((0xa0 + ${#1})))$1"; }
# PL TASK ALG KIND COST... : a plan of K = number of costs, table k on shard k
PL() {
    local task=$1 alg=$2 kind=$3; shift 3
    local K=$# ids="" c=""
    for ((k = 0; k < K; k++)); do ids="$ids$(hx $k)"; done
    for v in "$@"; do c="$c$(hx "$v")"; done
    printf '%s' '\x88'"$(s kind)$(s plan)$(s task)$(hx "$task")$(s alg)$(s "$alg")$(s shards)$(hx $K)$(s tables)$(hx $((0x90 + K)))$ids$(s assign)$(hx $((0x90 + K)))$ids$(s cost_ms)$(hx $((0x90 + K)))$c$(s cost_kind)$(s "$kind")"
}
# task 0: random [4,2], lookup [3,3]; task 1: random [6,3,3], lookup [2,1,3]
PLANS="$(PL 0 random measured 4 2)$(PL 0 lookup-greedy measured 3 3)$(PL 1 lookup-greedy measured 2 1 3)$(PL 1 random measured 6 3 3)"

@test "as-eval --help and --version" {
    run as-eval --help
    assert_success
    assert_output --partial "usage: as-eval"
    assert_output --partial "never mixed"
    run as-eval --version
    assert_success
}

@test "as-eval: usage errors are exit 2" {
    run as-eval --bogus
    assert_failure 2
    run as-eval --format html
    assert_failure 2
    run as-eval --table plots
    assert_failure 2
    run as-eval --over seeds
    assert_failure 2
    run as-eval --plot-task 3
    assert_failure 2
}

@test "as-eval: empty, non-zstd, truncated input exit 1; /dev/full exit 3; a terminal is fine" {
    run as-eval < /dev/null
    assert_failure 1
    echo hello > "$T/x"
    run as-eval "$T/x"
    assert_failure 1
    make_stream "$HDR$PLANS" > "$T/p.ast"
    head -c 30 "$T/p.ast" > "$T/cut.ast"
    run as-eval "$T/cut.ast"
    assert_failure 1
    run as-eval "$T/p.ast" -o /dev/full
    assert_failure 3
    run_tty "as-eval '$T/p.ast'"
    assert_success
    assert_output --partial "costs measured"
    make_stream "$HDR"'\x82\xa4kind\xa5other\xa1x\x2a' > "$T/o.ast"
    run as-eval "$T/o.ast"
    assert_failure 1
    assert_output --partial "no plan records"
}

@test "as-eval: the hand-made plans give the hand-computed figures" {
    make_stream "$HDR$PLANS" > "$T/p.ast"
    run as-eval --format csv --table summary "$T/p.ast"
    assert_success
    assert_output "alg,cost_kind,plans,infeasible,unmeasured,over,n_balance,balance_mean,balance_std,n_speedup,speedup_mean,speedup_std,max_ms_mean
random,measured,2,0,0,plans,2,0.5,0,2,1,0,5
lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3"
    run as-eval --format csv --table plans "$T/p.ast"
    assert_line --index 2 "0,0,,lookup-greedy,2,2,measured,3,3,3,1,1.33333333,,,true"
    assert_line --index 3 "0,1,,lookup-greedy,3,3,measured,3,1,2,0.333333333,2,,,true"
    run as-eval --format markdown --table summary "$T/p.ast"
    assert_line "| lookup-greedy | 2 | 0 | 66.7 ± 33.3 | 1.667 ± 0.333 | 3.0000 |"
    run as-eval --table shards,summary "$T/p.ast"
    assert_line --regexp '^ +0 +1 lookup-greedy +2 +1 +3\.0000 +n/a$'
    assert_line --regexp '^lookup-greedy +2 +0 +66\.7 ± 33\.3 +1\.667 ± 0\.333 +3\.0000$'
}

@test "as-eval: runs from several files or seeds; concatenated input is one run" {
    make_stream "$HDR$PLANS" > "$T/a.ast"
    make_stream "$HDR$(PL 0 random measured 2 2)$(PL 0 lookup-greedy measured 1 2)" > "$T/b.ast"
    # two runs: lookup balance over runs = mean(2/3, 1/2) = 7/12 ± 1/12
    run sh -c "as-eval --format csv --table summary --over runs '$T/a.ast' '$T/b.ast' | grep ^lookup"
    assert_output "lookup-greedy,measured,3,0,0,runs,2,0.583333333,0.0833333333,2,1.33333333,0.333333333,2.5"
    # one concatenated stream is one run: task 0 has two random plans, the first counts
    run sh -c "cat '$T/a.ast' '$T/b.ast' | as-eval --format csv --table summary --over runs | grep ^lookup"
    assert_output --regexp '^lookup-greedy,measured,3,0,0,runs,1,'
}

@test "as-eval: refuses plans without costs and a mix of measured and estimated costs" {
    make_stream "$HDR$(PL 0 random measured 4 2)$(PL 0 lookup-greedy estimated 3 3)" > "$T/m.ast"
    run as-eval "$T/m.ast"
    assert_failure 1
    assert_output --partial "mixes measured and estimated"
    make_stream "$HDR"'\x86\xa4kind\xa4plan\xa4task\x03\xa3alg\xa1x\xa6shards\x01\xa6tables\x91\x00\xa6assign\x91\x00' > "$T/n.ast"
    run as-eval "$T/n.ast"
    assert_failure 1
    assert_output --partial "has no costs"
}

@test "as-eval: the whole pipeline at a tiny scale, estimated costs and plots" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 2 --task-tables 10 --shards 3 -o "$T/ft.ast"
    as-plan --alg all "$T/ft.ast" -o "$T/plans.ast"
    as-bench --tables "$T/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/plans.ast" -o "$T/measured.ast"
    run as-eval "$T/measured.ast"
    assert_success
    assert_output --partial "costs measured on cpu"
    for a in random size-greedy dim-greedy lookup-greedy size-lookup-greedy; do
        assert_line --regexp "^$a +2 +0 "
    done
    run sh -c "as-eval --format csv --table plans '$T/measured.ast' | tail -n +2 | awk -F, '\$12 != \"\" && \$11 >= 0 && \$11 <= 1' | wc -l"
    assert_output 10
    # a cost model trained on the measured shards; its estimates are labelled as such
    cat "$T/ft.ast" "$T/measured.ast" | as-costfit --epochs 10 -q -o "$T/m.ast"
    run as-eval --model "$T/m.ast" "$T/measured.ast"
    assert_success
    assert_output --partial "costs estimated by the cost model"
    refute_output --partial "measured;"
    run sh -c "as-eval --model '$T/m.ast' --format csv --table summary '$T/measured.ast' | cut -d, -f2 | sort -u"
    assert_output "cost_kind
estimated"
    # plots, with the cost model's predicted-vs-measured report
    as-eval "$T/measured.ast" "$T/m.ast" --plot "$T/p.png" --plot-task 1 -q > /dev/null
    [ "$(head -c 4 "$T/p.png" | od -An -c | tr -d ' ')" = "211PNG" ]
}

# ---- training curves (as-rl --log) ---------------------------------------------------------
# float64 values as msgpack bytes
F025='\xcb\x3f\xd0\x00\x00\x00\x00\x00\x00'
F05='\xcb\x3f\xe0\x00\x00\x00\x00\x00\x00'
F075='\xcb\x3f\xe8\x00\x00\x00\x00\x00\x00'
F1='\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00'
F15='\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00'
FM1='\xcb\xbf\xf0\x00\x00\x00\x00\x00\x00'
FNAN='\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00'
# TR EPISODE EVALS WALL REWARD PRED [KEY VALUE]... : a train record of a run with bench rewards
TR() {
    local ep=$1 ev=$2 wall=$3 rew=$4 pred=$5 extra=""; shift 5
    local n=$((7 + $# / 2))
    while (($#)); do extra="$extra$(s "$1")$2"; shift 2; done
    printf '%s' "$(hx $((0x80 + n)))$(s kind)$(s train)$(s episode)$(hx "$ep")$(s evals)$(hx "$ev")$(s wall_s)$wall$(s reward_source)$(s bench)$(s reward)$rew$(s pred_balance)$pred$extra"
}
# update 1 had no feasible episode (reward -1, pred_balance NaN); update 2 was evaluated
LOG="$(TR 8 3 "$F05" "$FM1" "$FNAN")$(TR 16 9 "$F1" "$F05" "$F075" meas_balance "$F05" eval_pred_balance "$F075" eval_meas_balance "$F05")$(TR 24 12 "$F15" "$F025" "$F05" meas_balance "$F025")"

@test "as-eval --table curve: a hand-made training log; train records alone are valid input for the curve only" {
    make_stream "$HDR$LOG" > "$T/log.ast"
    run as-eval --table curve --format csv "$T/log.ast"
    assert_success
    assert_output "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance
16,1,9,0.5,0.75,0.75,0.5"
    run as-eval --table curve --format markdown "$T/log.ast"
    assert_success
    assert_output --partial "(3 train records, reward bench;"
    assert_line "| 16 | 1.000 | 9 | 0.5000 | 0.7500 | 0.7500 | 0.5000 |"
    run as-eval --table curve "$T/log.ast"
    assert_line --regexp '^ +16 +1\.000 +9 +0\.5000 +0\.7500 +0\.7500 +0\.5000$'
    # plans asked for (the default tables, or --plot): still exit 1
    run as-eval "$T/log.ast"
    assert_failure 1
    assert_output --partial "no plan records in the input (a training log: --table curve or --curve FILE.png)"
    run as-eval --table curve,summary "$T/log.ast"
    assert_failure 1
    run as-eval --table curve --plot "$T/p.png" "$T/log.ast"
    assert_failure 1
    # the curve asked for without train records
    make_stream "$HDR$PLANS" > "$T/p.ast"
    run as-eval --table curve "$T/p.ast"
    assert_failure 1
    assert_output --partial "no train records"
    # plans and a log in one stream: both tables, CSV ones separated by an empty line
    run sh -c "cat '$T/p.ast' '$T/log.ast' | as-eval --table summary,curve --format csv"
    assert_success
    assert_line --index 2 "lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3"
    assert_line --index 3 "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance"
    [ "$(printf '%s\n' "$output" | sed -n 4p)" = "" ]
    # a bad train record names its record number
    make_stream "$HDR$LOG"'\x83\xa4kind\xa5train\xa7episode\x20\xa5evals\x01' > "$T/bad.ast"
    run as-eval --table curve "$T/bad.ast"
    assert_failure 1
    assert_output --partial "record 5: train record of episode 32: needs a number 'wall_s'"
    # the plot: every series, with the reward where no episode was feasible
    run as-eval --curve "$T/c.png" -q "$T/log.ast"
    assert_success
    assert_output ""
    [ "$(head -c 4 "$T/c.png" | od -An -c | tr -d ' ')" = "211PNG" ]
}

@test "as-eval --curve: usage errors; gnuplot missing is exit 3" {
    run as-eval --curve ""
    assert_failure 2
    run as-eval --table curve,loss
    assert_failure 2
    make_stream "$HDR$LOG" > "$T/log.ast"
    run env PATH="$BIN" as-eval --curve "$T/c.png" "$T/log.ast"
    assert_failure 3
    assert_output --partial "gnuplot not found"
    [ ! -e "$T/c.png" ]
}

@test "as-eval --curve and --table curve: the training log of as-rl at a tiny scale" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 6 --task-tables 10 --shards 3 -o "$T/ft.ast"
    as-bench --tables "$T/pool.ast" --sample 20 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 --trim 1 \
        --flush 8M --threads 1 -q -o "$T/costs.ast"
    cat "$T/ft.ast" "$T/costs.ast" | as-costfit -q -o "$T/m.ast"
    # evaluations every 16 episodes, measured on the CPU: 6 updates of 8, 3 evaluations
    as-rl --model "$T/m.ast" --episodes 48 --eval-every 16 --eval-tasks 2 --tables "$T/pool.ast" --device cpu \
        --warmup 1 --runs 3 --trim 1 --flush 8M --threads 1 -q --log "$T/log.ast" "$T/ft.ast" -o "$T/pol.ast"
    run as-show --count "$T/log.ast"
    assert_line "train	6"
    run as-eval --table curve --format csv "$T/log.ast"
    assert_success
    assert_line --index 0 "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance"
    [ "${#lines[@]}" -eq 4 ]
    run sh -c "as-eval --table curve --format csv '$T/log.ast' | tail -n +2 | awk -F, '\$2 > 0 && \$3 > 0 && \$6 != \"\" && \$6 >= 0 && \$6 <= 1 && \$7 != \"\" && \$7 >= 0 && \$7 <= 1 { print \$1 }' | tr '\n' ' '"
    assert_output "16 32 48 "
    as-eval --curve "$T/c.png" -q "$T/log.ast"
    [ "$(head -c 4 "$T/c.png" | od -An -c | tr -d ' ')" = "211PNG" ]
    # without evaluations: every Nth record up to the last (24 updates of 2 -> every 2nd)
    as-rl --model "$T/m.ast" --episodes 48 --batch 2 -q --log "$T/log2.ast" "$T/ft.ast" -o "$T/pol2.ast"
    run sh -c "as-eval --table curve --format csv '$T/log2.ast' | tail -n +2 | cut -d, -f1 | tr '\n' ' '"
    assert_output "4 8 12 16 20 24 28 32 36 40 44 48 "
    run as-eval --table curve "$T/log2.ast"
    assert_output --partial "one record in 2, ending with the last"
    # a policy file and the plans it makes pass through: the curve of a log next to plans
    as-plan --alg autoshard --policy "$T/pol.ast" "$T/ft.ast" -o "$T/plans.ast"
    run sh -c "cat '$T/plans.ast' '$T/log.ast' | as-eval --model '$T/m.ast' --table summary,curve --curve '$T/c2.png' -q"
    assert_success
    assert_output --partial "autoshard"
    assert_output --partial "Training curve (6 train records, reward model;"
    [ -s "$T/c2.png" ]
}

# ---- -o: atomic, never over an input; messages (issue 11) ------------------------------------

@test "as-eval: killed mid-write (SIGTERM, SIGINT), the old -o file is intact and no temporary is left" {
    make_stream "$HDR$PLANS" > "$T/p.ast"
    echo precious > "$T/old"
    for sig in TERM INT; do
        for fmt in text markdown csv; do
            cp "$T/old" "$T/out.txt"
            kill_mid_write $sig "$T/out.txt" as-eval --format $fmt --table plans,shards,summary "$T/p.ast" -o "$T/out.txt"
            assert_killed_intact $sig "$T/out.txt" "$T/old"
        done
    done
}

@test "as-eval -o: bad data keeps the old file; -o onto an input or the model is refused; a bad model is named once" {
    make_stream "$HDR$PLANS" > "$T/p.ast"
    echo precious > "$T/out.txt"
    head -c 30 "$T/p.ast" > "$T/cut.ast"
    run as-eval "$T/p.ast" "$T/cut.ast" -o "$T/out.txt"
    assert_failure 1
    [ "$(cat "$T/out.txt")" = precious ]
    [ -z "$(compgen -G "$T/out.txt.tmp.*")" ]
    cp "$T/p.ast" "$T/orig.ast"
    run as-eval "$T/p.ast" -o "$T/p.ast"
    assert_failure 2
    assert_output --partial "it is also an input"
    cmp "$T/p.ast" "$T/orig.ast"
    echo junk > "$T/bad.model"
    run as-eval --model "$T/bad.model" "$T/p.ast" -o "$T/bad.model"
    assert_failure 2
    run as-eval --model "$T/bad.model" "$T/p.ast"
    assert_failure 1
    [ "$(grep -o "$T/bad.model" <<< "$output" | wc -l)" -eq 1 ]
    as-eval "$T/p.ast" -o "$T/out.txt"
    [ "$(as-eval "$T/p.ast")" = "$(cat "$T/out.txt")" ]
}

@test "as-eval: a missing option value and an empty -o are usage errors" {
    run as-eval --format
    assert_failure 2
    assert_output --partial "option --format needs a value"
    refute_output --partial "unknown option"
    run as-eval -o
    assert_failure 2
    assert_output --partial "option -o needs a value"
    make_stream "$HDR$PLANS" > "$T/p.ast"
    run as-eval "$T/p.ast" -o ''
    assert_failure 2
    assert_output --partial "empty file name"
}
