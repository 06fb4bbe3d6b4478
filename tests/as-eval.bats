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
    assert_output --partial "t-interval of the mean log"
    assert_output --partial "  verdict  the closing summary in words"
    assert_output --partial ".svg or .pdf; anything else is a usage error"
    assert_output --partial "      --singles FILE     single-table \`cost\` records"
    assert_output --partial "its floor, printed as it is (measurement noise can put it below 1). A task is"
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
    # --comm-gbps: 0 (not charged) or a rate in [0.001, 1e6] GiB/s; a rate that a double
    # cannot hold (1e-308 underflows) or that makes every cost infinite is refused saying so
    for g in 1e-308 1e-5 -1 2e6 1e999 inf x; do
        run as-eval --comm-gbps "$g" /dev/null
        assert_failure 2
        assert_output --partial "as-eval: --comm-gbps: '$g' is neither 0 (communication not charged) nor a rate in [0.001, 1e+06] GiB/s"
    done
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
    assert_output "alg,cost_kind,plans,infeasible,unmeasured,over,n_balance,balance_mean,balance_std,n_speedup,speedup_mean,speedup_std,max_ms_mean,balance_lo,balance_hi,speedup_geomean,speedup_lo,speedup_hi,shards,noisy_shards,noisy_plans,n_floor,max_over_floor_mean,at_floor,model_plans,model_weak,model_unjudged
random,measured,2,0,0,plans,2,0.5,0,2,1,0,5,0.5,0.5,1,1,1,,,,0,,0,0,0,0
lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3,0,1,1.63299316,0.124239179,21.4639754,,,,0,,0,0,0,0"
    run as-eval --format csv --table plans "$T/p.ast"
    assert_line --index 2 "0,0,,lookup-greedy,2,2,measured,3,3,3,1,1.33333333,,,true,,,,,"
    assert_line --index 3 "0,1,,lookup-greedy,3,3,measured,3,1,2,0.333333333,2,,,true,,,,,"
    # speedups 4/3 and 2: geometric mean √(8/3) = 1.633, interval exp(mean log ± t(1)·s/√2)
    # with t(1) = 12.706; balance 2/3 ± 12.706·(1/3): clipped to [0, 100] %
    run as-eval --format markdown --table summary "$T/p.ast"
    assert_line "| lookup-greedy | 2 | 0 | 66.7 ± 33.3 | [0.0, 100.0] | 1.633 | [0.124, 21.464] | 3.0000 |"
    run as-eval --table shards,summary "$T/p.ast"
    assert_line --regexp '^ +0 +1 lookup-greedy +2 +1 +3\.0000 +n/a$'
    assert_line --regexp '^lookup-greedy +2 +0 +66\.7 ± 33\.3 +\[0\.0, 100\.0\] +1\.633 +\[0\.124, 21\.464\] +3\.0000$'
}

@test "as-eval: runs from several files or seeds; concatenated input is one run" {
    make_stream "$HDR$PLANS" > "$T/a.ast"
    make_stream "$HDR$(PL 0 random measured 2 2)$(PL 0 lookup-greedy measured 1 2)" > "$T/b.ast"
    # two runs: lookup balance over runs = mean(2/3, 1/2) = 7/12 ± 1/12; speedup: geometric
    # mean of the runs' geometric means √(8/3) and 1 = (8/3)^(1/4) = 1.27788621
    run sh -c "as-eval --format csv --table summary --over runs '$T/a.ast' '$T/b.ast' | grep ^lookup"
    assert_output "lookup-greedy,measured,3,0,0,runs,2,0.583333333,0.0833333333,2,1.33333333,0.333333333,2.5,0,1,1.27788621,0.0566735872,28.8140074,,,,0,,0,0,0,0"
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
    # the model's held-out quality (its costfit-report) next to the estimates
    run as-eval --model "$T/m.ast" --table summary "$T/measured.ast"
    assert_line --regexp '^# cost model: held-out R² -?[0-9.]+, MAPE [0-9.]+ %, MAE [0-9.e-]+ ms on [0-9]+ shards \(split shards[^)]*\); linear baseline R² '
    # an old unconstrained model (output linear) whose every prediction is below 0 (b4, the
    # last parameter, set to -1000): the estimates count as 0 ms, said once on stderr, never
    # printed negative (communication not charged: the kernel figures alone)
    cat "$T/ft.ast" "$T/measured.ast" | as-costfit --epochs 10 --output-form linear -q -o "$T/lin.ast"
    zstd -dc "$T/lin.ast" | python3 -c "
import struct, sys
b = bytearray(sys.stdin.buffer.read())
i = b.index(b'\xa4data', b.index(b'params')) + 5
n, o = {0xc4: (b[i + 1], 2), 0xc5: (struct.unpack('>H', b[i + 1:i + 3])[0], 3), 0xc6: (struct.unpack('>I', b[i + 1:i + 5])[0], 5)}[b[i]]
b[i + o + n - 4:i + o + n] = struct.pack('<f', -1000.0)
sys.stdout.buffer.write(b)" | zstd -q -c > "$T/neg.ast"
    run as-eval --model "$T/neg.ast" --comm-gbps 0 --table plans,summary,verdict "$T/measured.ast"
    assert_success
    assert_line "as-eval: warning: 30 of 30 estimated shard costs were negative (an unconstrained cost model); counted as 0 ms"
    assert_line "# note: 30 of 30 estimated shard costs were negative (the cost model's output is unconstrained) and are counted as 0 ms"
    refute_output --regexp '(^| )-[0-9]+\.[0-9]+ '
    run sh -c "as-eval --model '$T/neg.ast' --comm-gbps 0 --format csv --table plans '$T/measured.ast' -q | tail -n +2 | cut -d, -f8-12 | sort -u"
    assert_output "0,0,0,,"
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
    assert_line --index 2 "lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3,0,1,1.63299316,0.124239179,21.4639754,,,,0,,0,0,0,0"
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

# ---- noise, ranking, the cost model's quality, negative costs, plot formats (issue 12) -----
# NP TASK ALG COSTS SPREADS NOISY: a measured plan of len(COSTS) shards (table k on shard k)
# with as-bench's noise fields (a Python expression for tests/test_helper/mp.py)
NP() {
    echo "{'kind':'plan','task':$1,'alg':'$2','shards':len($3),'tables':list(range(len($3))),'assign':list(range(len($3))),'cost_ms':$3,'cost_kind':'measured','cost_device':'cpu: test','cost_spread':$4,'cost_noisy':$5,'noise_threshold':0.05}"
}
Q='[0.01,0.01]'
F='[False,False]'
# three tasks: cost-greedy's balances 0.9, 0.8, 0.85, autoshard's 0.5, 0.6, 0.55 (differences
# 0.4, 0.2, 0.3: mean 0.3, paired 95 % interval 0.3 ± t(2)·0.1/√3 = [0.052, 0.548]); random
# 0.25; autoshard's slowest shard 5 ms, cost-greedy's 4 ms: a speedup of 1.25x
# NOISY_AS: autoshard's spreads and flags on task 0 and 1 (default: quiet)
ranked_plans() {
    local s0=${1:-$Q} n0=${2:-$F} s1=${3:-$Q} n1=${4:-$F}
    mp_stream "$(NP 0 random '[8.0,2.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F")" "$(NP 0 autoshard '[5.0,2.5]' "$s0" "$n0")" \
              "$(NP 1 random '[8.0,2.0]' "$Q" "$F")" "$(NP 1 cost-greedy '[4.0,3.2]' "$Q" "$F")" "$(NP 1 autoshard '[5.0,3.0]' "$s1" "$n1")" \
              "$(NP 2 random '[8.0,2.0]' "$Q" "$F")" "$(NP 2 cost-greedy '[4.0,3.4]' "$Q" "$F")" "$(NP 2 autoshard '[5.0,2.75]' "$Q" "$F")"
}

@test "as-eval --table verdict: a resolved ranking in words, by how much, over random, the noise" {
    ranked_plans > "$T/p.ast"
    run as-eval --table verdict --format markdown "$T/p.ast"
    assert_success
    assert_line "**Verdict** (costs measured on cpu: test; 3 tasks)"
    assert_line --partial "- **cost-greedy** won on measured balance: mean 85.0 % (95 % CI 72.6 to 97.4 %), speedup over random 2.000x"
    assert_line --partial "- Ahead of the runner-up, **autoshard** (mean balance 55.0 %): +30.0 points of balance (paired 95 % CI +5.2 to +54.8 over 3 tasks) and a speedup of 1.250x over it"
    assert_output --partial "The ranking is resolved: the interval lies above 0 and 0 of their 12 shards are noisy."
    assert_line --partial "- Ahead of **random** (mean balance 25.0 %): +60.0 points of balance"
    assert_line "- Measurement noise: 0 of 18 measured shards (0.0 %) stayed noisy after re-measuring (spread above 5.0 %); median spread 1.0 % over 18 shards; 0 of 9 plans rest on a noisy shard."
    assert_line "- Ranking by mean balance (> resolved, ≈ not resolved: too noisy, too few tasks or a tie): cost-greedy (85.0 %) > autoshard (55.0 %) > random (25.0 %)."
    refute_output --partial "too noisy to"
    # the learned policy against the greedy planner by the same model, and which to trust
    assert_line "- The learned policy against the greedy planner: **autoshard** against **cost-greedy** (mean balance 85.0 %): -30.0 points of balance (paired 95 % CI -54.8 to -5.2 over 3 tasks) and a speedup of 0.800x over it (geometric mean, 95 % CI 0.800x to 0.800x): **the greedy planner beat the learned policy**; trust cost-greedy's plans."
    run as-eval --table verdict --format csv "$T/p.ast"
    assert_line --index 1 "cost-greedy,autoshard,resolved,3,0.3,0.0515862288,0.548413771,1.25,1.25,1.25,18,0,0.01,0.05,,,,cost-greedy > autoshard > random,3,0,0,0.02,"
    # the plots' file names close the verdict
    as-eval --table verdict --plot "$T/p.svg" "$T/p.ast" -o "$T/v.txt"
    grep -q "^- Plots: $T/p.svg (balance, speedup, per-shard costs)\.$" "$T/v.txt"
}

# NPP TASK ALG COSTS PASS1: a plan measured in 2 passes, pass 0 its COSTS, pass 1 PASS1
NPP() {
    echo "{'kind':'plan','task':$1,'alg':'$2','shards':len($3),'tables':list(range(len($3))),'assign':list(range(len($3))),'cost_ms':$3,'cost_kind':'measured','cost_device':'cpu: test','cost_spread':[0.01]*len($3),'cost_noisy':[False]*len($3),'noise_threshold':0.05,'cost_pass_ms':[$3,$4],'cost_pass_spread':[0.02]*len($3)}"
}
# ranked_plans' costs measured in 2 passes: pass 1 the same plans 10 % slower, but autoshard's
# (AS1: its pass-1 costs on tasks 0, 1, 2; default: 10 % slower too)
pass_plans() {
    local a0=${1:-'[5.5,2.75]'} a1=${2:-'[5.5,3.3]'} a2=${3:-'[5.5,3.025]'}
    mp_stream "$(NPP 0 random '[8.0,2.0]' '[8.8,2.2]')" "$(NPP 0 cost-greedy '[4.0,3.6]' '[4.4,3.96]')" "$(NPP 0 autoshard '[5.0,2.5]' "$a0")" \
              "$(NPP 1 random '[8.0,2.0]' '[8.8,2.2]')" "$(NPP 1 cost-greedy '[4.0,3.2]' '[4.4,3.52]')" "$(NPP 1 autoshard '[5.0,3.0]' "$a1")" \
              "$(NPP 2 random '[8.0,2.0]' '[8.8,2.2]')" "$(NPP 2 cost-greedy '[4.0,3.4]' '[4.4,3.74]')" "$(NPP 2 autoshard '[5.0,2.75]' "$a2")"
}

@test "as-eval: plans measured in passes: a lead that holds in every pass is resolved and said so; one a pass reverses is not; flips marked; bad passes refused" {
    pass_plans > "$T/p.ast"
    run as-eval --table verdict "$T/p.ast"
    assert_success
    assert_output --partial "The ranking is resolved: the interval lies above 0 and 0 of their 12 shards are noisy. It holds between measurements too: the plans were measured in 2 passes made apart (in time and in fresh memory), and the lead is above 0 in every one of them (+30.0 to +30.0 points)."
    refute_output --partial "not that between measurements"
    run as-eval --table summary "$T/p.ast"
    assert_line --regexp '^cost-greedy +3 +0 .* \[85\.0, 85\.0\] '
    assert_output --partial "passes lo-hi: the mean balance of each pass"
    run sh -c "as-eval --table summary --format csv '$T/p.ast' | head -1"
    assert_output --partial ",passes,balance_pass_lo,balance_pass_hi,pass_flips"
    # the plans table: each pass's slowest shard (task 0's cost-greedy: 4.0 then 4.4 ms)
    run sh -c "as-eval --table plans --format csv '$T/p.ast'"
    assert_line --partial ",passes,balance_pass_lo,balance_pass_hi,pass_flip,max_ms_passes"
    assert_line --regexp '^0,0,,cost-greedy,.*,2,0\.9,0\.9,false,4;4\.4$'
    # pass 1 measures autoshard's plans at 95 % balance: over the combined costs cost-greedy
    # still leads every task, but pass 1 reverses it: not resolved, each task's pair flips
    pass_plans '[5.0,4.75]' '[5.0,4.75]' '[5.0,4.75]' > "$T/f.ast"
    run as-eval --table verdict "$T/f.ast"
    assert_success
    assert_output --partial "These measurements cannot rank cost-greedy and autoshard: over the tasks the interval lies above 0, but the plans were measured in 2 passes made apart (in time and in fresh memory) and the lead does not hold in every one (-10.0 to +30.0 points): the variation between measurements reverses it; on 3 of the 3 tasks the two plans' order flips between passes."
    assert_output --partial "cost-greedy"
    refute_output --partial "The ranking is resolved"
    run as-eval --table plans "$T/f.ast"
    assert_line --regexp '^ +0 +0 cost-greedy .* 90\.0-90\.0% ↕ '
    assert_output --partial "↕: its order against another plan of the same task flips between passes"
    run sh -c "as-eval --table shards --format csv '$T/f.ast' | sed -n 2p"
    assert_output --regexp ',0\.02,false$'
    # autoshard's task 0 in pass 1 slowest on its other shard: both its shards marked
    pass_plans '[2.0,4.75]' > "$T/s.ast"
    run sh -c "as-eval --table shards --format csv '$T/s.ast' | grep '^0,0,autoshard,' | cut -d, -f12"
    assert_output "$(printf 'true\ntrue')"
    run as-eval --table shards "$T/s.ast"
    assert_line --regexp '^ +0 +0 autoshard +0 .* 2\.0 ↕$'
    assert_output --partial "↕: the slowest shard of its plan in some passes but not in all"
    # malformed passes are bad data naming the field
    for bad in "'x'" "[[1.0,2.0]]" "[[1.0,2.0],[1.0]]" "[[1.0,2.0],[1.0,-2.0]]" "[[1.0,2.0],[1.0,0.0]]"; do
        mp_edit "$T/p.ast" "for r in kind('plan'): r['cost_pass_ms'] = $bad" > "$T/bad.ast"
        run as-eval "$T/bad.ast"
        assert_failure 1
        assert_output --partial 'cost_pass_ms'
    done
}

@test "as-eval: noisy shards are marked, counted per plan and algorithm; too noisy to rank is said plainly" {
    # autoshard's slowest shard stayed noisy on tasks 0 and 1: 2 of the 12 shards of the pair
    ranked_plans '[0.3,0.01]' '[True,False]' '[0.4,None]' '[True,False]' > "$T/p.ast"
    run as-eval --table plans,shards,summary,verdict "$T/p.ast"
    assert_success
    assert_line --regexp '^ +0 +0 autoshard +2 +5\.0000 +2\.5000 +3\.7500 +50\.0%\* +1\.600 .* yes +1$'
    assert_line --regexp '^ +0 +0 cost-greedy +2 .* 90\.0% +2\.000 .* yes +0$'
    assert_line "* its slowest or fastest shard stayed noisy after as-bench's re-measuring: its balance and speedup are not trustworthy"
    assert_line --regexp '^ +0 +0 autoshard +0 +1 +5\.0000 +n/a +30\.0 +yes$'
    assert_line --regexp '^ +0 +1 autoshard +1 +1 +3\.0000 +n/a +n/a +$'
    assert_line --regexp '^autoshard +3 +0 .* 2/6$'
    assert_output --partial "The measurements were too noisy to rank cost-greedy and autoshard: 2 of their 12 shards (16.7 %) stayed noisy, more than 10 %."
    assert_output --partial "cost-greedy (85.0 %) ≈ autoshard (55.0 %) ≈ random (25.0 %)."   # autoshard: 2 of 12 noisy against random too
    assert_output --partial "2 of 18 measured shards (11.1 %) stayed noisy after re-measuring (spread above 5.0 %); median spread 1.0 % over 17 shards; 2 of 9 plans rest on a noisy shard (marked * in the plans table)."
    run as-eval --table plans --format csv "$T/p.ast"
    assert_line --index 3 "0,0,,autoshard,2,2,measured,5,2.5,3.75,0.5,1.6,,,true,1,true,,,"
    run as-eval --table shards --format csv "$T/p.ast"
    assert_line --index 3 "0,0,cost-greedy,0,1,measured,4,,0.01,false"
    assert_line --index 5 "0,0,autoshard,0,1,measured,5,,0.3,true"
    assert_line --index 12 "0,1,autoshard,1,1,measured,3,,,false"
    run as-eval --table plans --format markdown "$T/p.ast"
    assert_line "| 0 | 0 | autoshard | 2 | 5.0000 | 2.5000 | 3.7500 | 50.0%* | 1.600 | n/a | n/a | yes | 1 |"
    assert_line "\\* its slowest or fastest shard stayed noisy after as-bench's re-measuring: its balance and speedup are not trustworthy"
    # a quiet pair whose interval includes 0 cannot be ranked either; autoshard's task 2 balance
    # 0.95: differences 0.4, 0.2, -0.1
    mp_stream "$(NP 0 random '[8.0,2.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F")" "$(NP 0 autoshard '[5.0,2.5]' "$Q" "$F")" \
              "$(NP 1 random '[8.0,2.0]' "$Q" "$F")" "$(NP 1 cost-greedy '[4.0,3.2]' "$Q" "$F")" "$(NP 1 autoshard '[5.0,3.0]' "$Q" "$F")" \
              "$(NP 2 random '[8.0,2.0]' "$Q" "$F")" "$(NP 2 cost-greedy '[4.0,3.4]' "$Q" "$F")" "$(NP 2 autoshard '[5.0,4.75]' "$Q" "$F")" > "$T/z.ast"
    run as-eval --table verdict "$T/z.ast"
    assert_output --partial "These measurements cannot rank cost-greedy and autoshard: the interval of their balance difference includes 0, so the difference is within the variation over tasks and the measurement noise."
    # files without the noise fields: no marks, no noise columns, the noise unknown
    make_stream "$HDR$PLANS" > "$T/old.ast"
    run as-eval --table plans,shards,summary,verdict "$T/old.ast"
    assert_success
    refute_output --partial "noisy shards"
    refute_output --partial "%*"
    assert_output --partial "Measurement noise: unknown (the plans carry no cost_spread or cost_noisy"
    # a bad noise field is bad data
    mp_stream "$(NP 0 random '[8.0,2.0]' '[0.1]' "$F")" > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "record 2: plan of task 0: 'cost_spread' must be a list with one entry per shard"
}

@test "as-eval: the cost model's held-out quality next to the plans; worse than a straight line is said in words" {
    ranked_plans > "$T/p.ast"
    M="{'kind':'model','model':'costmodel','output':'softplus','heldout':{'split':'shards','test_shards':100,'model':{'n':100,'mae':0.5,'mse':0.4,'mape':40.0,'r2':-0.15},'linear':{'n':100,'mae':0.3,'mse':0.2,'mape':25.0,'r2':0.4},'sum_single':None}}"
    R="{'kind':'costfit-report','split':'tables','test_shards':50,'model':{'test':{'n':50,'mae':0.1,'mse':0.02,'mape':9.5,'r2':0.95}},'linear':{'test':{'n':50,'mae':0.2,'mse':0.05,'mape':20.0,'r2':0.85}}}"
    mp_stream "$M" > "$T/model.ast"
    mp_stream "$R" > "$T/report.ast"
    run sh -c "cat '$T/p.ast' '$T/model.ast' | as-eval --format markdown --table plans,summary,verdict"
    assert_success
    assert_line "**Cost model:** held-out R² -0.150, MAPE 40.0 %, MAE 0.5 ms on 100 shards (split shards, output softplus); linear baseline R² 0.400, MAPE 25.0 %, MAE 0.3 ms"
    assert_line "**Warning:** the cost model predicts held-out shards worse than a straight line; its estimates, and the plans built on them, should not be trusted."
    assert_output --partial "- Cost model: held-out R² -0.150, MAPE 40.0 %, MAE 0.5 ms on 100 shards (split shards, output softplus); linear baseline R² 0.400, MAPE 25.0 %, MAE 0.3 ms. **The cost model predicts held-out shards worse than a straight line; its estimates, and the plans built on them, should not be trusted**."
    # an older model file: the costfit-report's model.test and linear.test; a model record
    # with heldout wins over a report
    run sh -c "cat '$T/p.ast' '$T/report.ast' | as-eval --table summary"
    assert_line "# cost model: held-out R² 0.950, MAPE 9.5 %, MAE 0.1 ms on 50 shards (split tables); linear baseline R² 0.850, MAPE 20.0 %, MAE 0.2 ms"
    refute_output --partial "WARNING"
    run sh -c "cat '$T/p.ast' '$T/report.ast' '$T/model.ast' | as-eval --table verdict"
    assert_output --partial "- Cost model: held-out R² -0.150"
    run sh -c "cat '$T/p.ast' '$T/report.ast' | as-eval --table verdict"
    assert_output --partial "linear baseline R² 0.850, MAPE 20.0 %, MAE 0.2 ms: better than the straight line."
    # a malformed heldout is bad data
    mp_stream "{'kind':'model','heldout':3}" > "$T/badm.ast"
    run sh -c "cat '$T/p.ast' '$T/badm.ast' | as-eval"
    assert_failure 1
    assert_output --partial "<stdin>: record 12: model record: 'heldout' is not a map or nil"
}

# ---- the plans' model_quality: as-plan's quality gate on the cost model (issue 37) ----------
# mq MAP: a plan of NP with model_quality MAP (a Python expression)
mq() { sed "s/}\$/,'model_quality':$1}/"; }
WEAK="{'r2':0.41,'linear_r2':0.3,'min_r2':0.9,'weak':True}"
GOOD="{'r2':0.97,'linear_r2':0.87,'min_r2':0.9,'weak':False}"

@test "as-eval: plans placed with a cost model as-plan marked weak are named in the verdict and the summary; a hostile model_quality is bad data" {
    # ranked_plans' figures; cost-greedy's plans placed by a weak model, autoshard's by a good one
    mp_stream "$(NP 0 random '[8.0,2.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F" | mq "$WEAK")" "$(NP 0 autoshard '[5.0,2.5]' "$Q" "$F" | mq "$GOOD")" \
              "$(NP 1 random '[8.0,2.0]' "$Q" "$F")" "$(NP 1 cost-greedy '[4.0,3.2]' "$Q" "$F" | mq "$WEAK")" "$(NP 1 autoshard '[5.0,3.0]' "$Q" "$F" | mq "$GOOD")" \
              "$(NP 2 random '[8.0,2.0]' "$Q" "$F")" "$(NP 2 cost-greedy '[4.0,3.4]' "$Q" "$F" | mq "$WEAK")" "$(NP 2 autoshard '[5.0,2.75]' "$Q" "$F" | mq "$GOOD")" > "$T/p.ast"
    run as-eval --table summary,verdict "$T/p.ast"
    assert_success
    assert_line "- Weak cost model: the plans of cost-greedy (3 plans) were placed with a cost model as-plan marked weak (model_quality; held-out R² 0.410, below the threshold 0.9): their balance, and their place in the ranking, rest on a weak model."
    assert_line "- The cost model that placed the other plans of autoshard passed as-plan's quality gate (model_quality; held-out R² 0.970, threshold 0.9, linear baseline 0.870)."
    # the summary's cost model column: weak, ok, blank for random (placed without one)
    assert_line --regexp '^cost-greedy +3 +0 .* 0/6 +weak$'
    assert_line --regexp '^autoshard +3 +0 .* 0/6 +ok$'
    assert_line --regexp '^random +3 +0 .* 0/6 +$'
    assert_output --partial "; cost model: what as-plan's quality gate said of the cost model that placed the plans (their model_quality)"
    run as-eval --table verdict --format markdown "$T/p.ast"
    assert_line --partial "- **Weak cost model:** the plans of cost-greedy (3 plans) were placed"
    assert_line --partial "**their balance, and their place in the ranking, rest on a weak model**."
    # CSV: the verdict's weak_model_algs, the summary's counts
    run as-eval --table verdict --format csv "$T/p.ast"
    assert_line --index 0 --regexp ',floor_margin,weak_model_algs$'
    assert_line --index 1 --regexp ',cost-greedy > autoshard > random,3,0,0,0\.02,cost-greedy$'
    run sh -c "as-eval --table summary --format csv '$T/p.ast' | cut -d, -f1,25-"
    assert_output $'alg,model_plans,model_weak,model_unjudged\nrandom,0,0,0\ncost-greedy,3,3,0\nautoshard,3,0,0'
    # a plan placed by a model of unjudged quality (no held-out R²)
    mp_stream "$(NP 0 random '[8.0,2.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F" | mq "{'r2':None,'linear_r2':None,'min_r2':0.9,'weak':None}")" > "$T/u.ast"
    run as-eval --table verdict "$T/u.ast"
    assert_line "- The plans of cost-greedy (1 plan) were placed with a cost model whose quality as-plan did not judge (model_quality weak nil: no held-out R² in the model, or as-plan --min-model-r2 off)."
    refute_output --partial "Weak cost model"
    # hostile values: bad data naming the record and the field
    for v in "3" "{'r2':'high','weak':None}" "{'r2':0.41,'linear_r2':0.3,'min_r2':0.9,'weak':False}" \
             "{'r2':0.95,'linear_r2':0.3,'min_r2':2,'weak':False}" "{'r2':0.95,'min_r2':0.9,'weak':'no'}" "{'r2':nan,'min_r2':0.9,'weak':True}"; do
        mp_stream "$(NP 0 random '[8.0,2.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F" | mq "$v")" > "$T/bad.ast"
        run as-eval --table verdict "$T/bad.ast"
        assert_failure 1
        assert_output --regexp "bad.ast: record 3: plan of task 0: ('model_quality' is not a map|model_quality\.(r2|min_r2|weak) )"
    done
    mp_stream "$(NP 0 cost-greedy '[4.0,3.6]' "$Q" "$F" | mq "{'r2':0.41,'linear_r2':0.3,'min_r2':0.9,'weak':False}")" > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "bad.ast: record 2: plan of task 0: model_quality.weak is false, which its r2, linear_r2 and min_r2 do not say"
}

@test "as-eval: never a negative cost: measured ones are refused, estimated ones count as 0 and it is said once" {
    mp_stream "$(NP 0 random '[8.0,-2.0]' "$Q" "$F")" > "$T/neg.ast"
    run as-eval "$T/neg.ast"
    assert_failure 1
    assert_output --partial "plan of task 0: measured cost_ms[1] is negative (-2 ms): a measured time cannot be; bad data"
    E() { echo "{'kind':'plan','task':$1,'alg':'$2','shards':2,'tables':[0,1],'assign':[0,1],'cost_ms':$3,'cost_kind':'estimated'}"; }
    mp_stream "$(E 0 random '[8.0,-2.0]')" "$(E 0 cost-greedy '[4.0,3.0]')" "$(E 1 random '[-1.0,-2.0]')" > "$T/est.ast"
    run as-eval --table plans,summary,verdict --format csv "$T/est.ast" -q
    assert_success
    refute_output --regexp '(^|,)-[0-9]'
    assert_line --index 1 "0,0,,random,2,2,estimated,8,0,4,0,1,,,true,,,,,"
    run as-eval --table plans,verdict "$T/est.ast"
    assert_success
    refute_output --regexp '(^| )-[0-9]'
    [ "$(grep -c "3 of 6 estimated shard costs were negative" <<< "$output")" -eq 3 ]   # stderr once, the header, the verdict
    assert_line "as-eval: warning: 3 of 6 estimated shard costs were negative (an unconstrained cost model); counted as 0 ms"
}

@test "as-eval --plot and --curve: the extension names the format (png, svg, pdf); a 100x outlier gets a log axis" {
    # task 0: random's shard 0 is 100 times the smallest shard
    mp_stream "$(NP 0 random '[100.0,1.0]' "$Q" "$F")" "$(NP 0 cost-greedy '[2.0,1.5]' "$Q" "$F")" \
              "$(NP 1 random '[4.0,1.0]' "$Q" "$F")" "$(NP 1 cost-greedy '[2.0,2.0]' "$Q" "$F")" > "$T/o.ast"
    run as-eval --table summary --plot "$T/p.svg" "$T/o.ast"
    assert_success
    grep -q '^<svg' "$T/p.svg"
    grep -q "Balance (measured costs): mean ± std, clipped to 0-100 %" "$T/p.svg"
    grep -q "Speedup over random (measured): geomean, 95 % CI" "$T/p.svg"
    grep -q "Task 0: cost per shard (measured), log scale: the costs span 100x" "$T/p.svg"
    # task 1 spans 4x: a linear axis
    as-eval --table summary --plot "$T/q.SVG" --plot-task 1 "$T/o.ast" > /dev/null
    grep -q "Task 1: cost per shard (measured)<" "$T/q.SVG"
    ! grep -q "log scale: the costs" "$T/q.SVG"
    as-eval --table summary --plot "$T/p.pdf" "$T/o.ast" > /dev/null
    [ "$(head -c 4 "$T/p.pdf")" = "%PDF" ]
    as-eval --table summary --plot "$T/p.png" "$T/o.ast" > /dev/null
    [ "$(head -c 4 "$T/p.png" | od -An -c | tr -d ' ')" = "211PNG" ]
    for opt in --plot --curve; do
        for bad in p.jpg p.eps p png.x; do
            run as-eval $opt "$T/$bad" "$T/o.ast"
            assert_failure 2
            assert_output --partial "as-eval: $opt: '$T/$bad': the extension names the format; use .png, .svg or .pdf"
            [ ! -e "$T/$bad" ]
        done
    done
    make_stream "$HDR$LOG" > "$T/log.ast"
    as-eval --curve "$T/c.svg" -q "$T/log.ast"
    grep -q "Training curve (reward: bench): balance vs episodes" "$T/c.svg"
    as-eval --curve "$T/c.pdf" -q "$T/log.ast"
    [ "$(head -c 4 "$T/c.pdf")" = "%PDF" ]
}

@test "as-eval --plot: each algorithm's bars in a colour of its own (12 algorithms: 12 colours, where gnuplot's cycle has 8), past 20 a fill pattern" {
    recs=()
    for i in $(seq 1 12); do recs+=("$(NP 0 "alg$i" "[$i.0,1.0]" "$Q" "$F")"); done
    mp_stream "${recs[@]}" > "$T/a12.ast"
    as-eval --table summary --plot "$T/a12.svg" "$T/a12.ast" > /dev/null
    # the first 12 of evalplot.c's colours, as gnuplot's SVG writes them
    for c in "31, 119, 180" "255, 127,  14" " 44, 160,  44" "214,  39,  40" "148, 103, 189" "140,  86,  75" \
             "227, 119, 194" "127, 127, 127" "188, 189,  34" " 23, 190, 207" "174, 199, 232" "255, 187, 120"; do
        grep -qF "rgb($(printf '%3s' "${c%%,*}"),${c#*,})" "$T/a12.svg" || { echo "colour rgb($c) missing"; false; }
    done
    recs=()
    for i in $(seq 1 21); do recs+=("$(NP 0 "alg$i" "[$i.0,1.0]" "$Q" "$F")"); done
    mp_stream "${recs[@]}" > "$T/a21.ast"
    as-eval --table summary --plot "$T/a21.svg" "$T/a21.ast" > /dev/null
    grep -q "<pattern" "$T/a21.svg"
    ! grep -q "<pattern" "$T/a12.svg"
}

@test "as-eval: --plot and --curve may not replace an input, -o or each other" {
    make_stream "$HDR$PLANS" > "$T/p.ast"
    cp "$T/p.ast" "$T/p.png"
    for opt in --plot --curve; do
        run as-eval $opt "$T/p.png" "$T/p.png"
        assert_failure 2
        assert_output --partial "$opt $T/p.png: it is also an input ($T/p.png)"
        run sh -c "as-eval $opt '$T/p.png' < '$T/p.png'"
        assert_failure 2
        assert_output --partial "it is also an input (<stdin>)"
        run as-eval --model "$T/p.png" $opt "$T/p.png" "$T/p.ast"
        assert_failure 2
        assert_output --partial "it is also an input (--model $T/p.png)"
        run as-eval $opt "$T/x.png" "$T/p.ast" -o "$T/x.png"
        assert_failure 2
        assert_output --partial "the same file as -o"
    done
    run as-eval --plot "$T/x.png" --curve "$T/x.png" "$T/p.ast"
    assert_failure 2
    assert_output --partial "--curve $T/x.png: the same file as --plot"
    cmp "$T/p.png" "$T/p.ast"
}

# ---- the floor: the costliest table alone (lib/eval/evalfloor.h) ---------------------------------
# FP TASK ALG TABLES ASSIGN COSTS [KIND]: a plan over the given tables
FP() {
    echo "{'kind':'plan','task':$1,'alg':'$2','shards':len($5),'tables':$3,'assign':$4,'cost_ms':$5,'cost_kind':'${6:-measured}','cost_device':'cpu: test'}"
}
# SC TABLE COST [DEVICE]: a single-table cost record as as-bench --singles writes it
SC() { echo "{'kind':'cost','tables':[$1],'origin':'single','task':-1,'shard':-1,'cost_ms':$2,'device':'${3:-cpu: test}'}"; }
# task 0 over tables 10-12, floor 6 (table 10: the median of 5, 7, 6): random 8, cost-greedy 6.1
#   (1.7 % above the floor: floor-bound with the 2 % margin, not with 0)
# task 1 over tables 20-23, floor 3 (table 23: the median of 2 and 4): random 7, cost-greedy 5
# task 2 over tables 30-31: table 31 was not measured alone, its floor is unknown
floor_plans() {
    mp_stream "$(FP 0 random '[10,11,12]' '[0,0,1]' '[8.0,2.0]' $1)" "$(FP 0 cost-greedy '[10,11,12]' '[0,1,1]' '[6.1,3.0]' $1)" \
              "$(FP 1 random '[20,21,22,23]' '[0,0,0,1]' '[7.0,3.0]' $1)" "$(FP 1 cost-greedy '[20,21,22,23]' '[0,0,1,1]' '[5.0,5.0]' $1)" \
              "$(FP 2 random '[30,31]' '[0,1]' '[3.0,1.0]' $1)" "$(FP 2 cost-greedy '[30,31]' '[0,1]' '[2.0,2.0]' $1)"
}
floor_singles() {
    mp_stream "$(SC 10 5.0 "$1")" "$(SC 10 7.0 "$1")" "$(SC 10 6.0 "$1")" "$(SC 11 2.0 "$1")" "$(SC 12 1.0 "$1")" \
              "{'kind':'cost','tables':[10,11],'cost_ms':9.0,'device':'cpu: test'}" \
              "$(SC 20 3.0 "$1")" "$(SC 21 3.0 "$1")" "$(SC 22 2.0 "$1")" "$(SC 23 2.0 "$1")" "$(SC 23 4.0 "$1")" "$(SC 30 1.0 "$1")" \
              "{'kind':'cost','tables':[31],'cost_ms':None,'error':'does not fit','device':'cpu: test'}"
}
FLOOR_BOUND_1="Floor-bound: 1 of 2 tasks (the best plan's slowest shard is at most 2 % above the floor, the costliest table measured alone, or below it): in those, no table-wise plan can go below the floor, whatever the planner, so balance and speedup cannot improve much; splitting tables is what can; the floor is unknown for 1 more task (tables without a single-table cost)."

@test "as-eval: the floor of measured plans from single-table cost records: per plan, per algorithm, floor-bound tasks, the verdict" {
    floor_plans > "$T/p.ast"
    floor_singles > "$T/s.ast"
    run sh -c "cat '$T/p.ast' '$T/s.ast' | as-eval --table plans,summary,verdict"
    assert_success
    assert_line --regexp '^ +0 +0 cost-greedy +2 +6\.1000 +3\.0000 +4\.5500 +49\.2% +1\.311 +6\.0000 +1\.017 +n/a +n/a +yes$'
    assert_line --regexp '^ +0 +1 random +2 +7\.0000 +3\.0000 +5\.0000 +42\.9% +1\.000 +3\.0000 +2\.333 +n/a +n/a +yes$'
    assert_line --regexp '^ +0 +2 cost-greedy +2 +2\.0000 +2\.0000 +2\.0000 +100\.0% +1\.500 +n/a +n/a +n/a +n/a +yes$'
    assert_line "floor: the costliest of the task's tables alone (the median of each table's single-table cost records), no table-wise plan can go below it; max/floor: the slowest shard over it (below 1: measurement noise); n/a: a table without a single cost"
    # max/floor: cost-greedy (6.1/6 + 5/3)/2, random (8/6 + 7/3)/2; at floor: 6.1 <= 6 x 1.02
    assert_line --regexp '^cost-greedy +3 +0 .* +4\.3667 +1\.342 +1/2$'
    assert_line --regexp '^random +3 +0 .* +6\.0000 +1\.833 +0/2$'
    assert_output --partial "; max/floor: mean slowest shard over the task's floor (the costliest table alone); at floor: plans whose slowest shard is at most 2 % above their floor, of those with a known floor"
    assert_line "$FLOOR_BOUND_1"
    assert_line "- $FLOOR_BOUND_1"
    # CSV: the floor, max/floor and at floor of every plan; per algorithm; the counts in the verdict
    run sh -c "cat '$T/p.ast' '$T/s.ast' | as-eval --format csv --table plans,summary,verdict"
    assert_success
    assert_line --index 0 --partial ",noisy_shards,rests_on_noisy,floor_ms,max_over_floor,at_floor"
    assert_line --index 2 "0,0,,cost-greedy,2,3,measured,6.1,3,4.55,0.491803279,1.31147541,,,true,,,6,1.01666667,true"
    assert_line --index 3 "0,1,,random,2,4,measured,7,3,5,0.428571429,1,,,true,,,3,2.33333333,false"
    assert_line --index 6 "0,2,,cost-greedy,2,2,measured,2,2,2,1,1.5,,,true,,,,,"
    assert_line --regexp '^cost-greedy,measured,3,.*,,,,2,1.34166667,1,0,0,0$'
    assert_line --regexp '^random,measured,3,.*,,,,2,1.83333333,0,0,0,0$'
    assert_line --regexp '^cost-greedy,random,.*,cost-greedy ≈ random,3,2,1,0.02,$'
    # markdown
    run sh -c "cat '$T/p.ast' '$T/s.ast' | as-eval --format markdown --table plans,summary,verdict"
    assert_line "| run | task | alg | K | max | min | mean | balance (%) | speedup | floor | max/floor | mem max (MiB) | mem min (MiB) | feasible |"
    assert_line "| 0 | 0 | cost-greedy | 2 | 6.1000 | 3.0000 | 4.5500 | 49.2% | 1.311 | 6.0000 | 1.017 | n/a | n/a | yes |"
    assert_line --regexp '^\| cost-greedy \| 3 \| 0 \| .* \| 4\.3667 \| 1\.342 \| 1/2 \|$'
    assert_line "**${FLOOR_BOUND_1/Floor-bound: 1 of 2 tasks/Floor-bound: 1 of 2 tasks**}"
    assert_line "- **${FLOOR_BOUND_1/Floor-bound: 1 of 2 tasks/Floor-bound: 1 of 2 tasks**}"
    # --singles FILE: the same report
    [ "$(as-eval --singles "$T/s.ast" --table plans,summary,verdict "$T/p.ast")" = "$(cat "$T/p.ast" "$T/s.ast" | as-eval --table plans,summary,verdict)" ]
    # the margin: 0 (6.1 > 6: no task floor-bound), 0.7 (5 <= 3 x 1.7: both)
    run as-eval --singles "$T/s.ast" --floor-margin 0 --table summary,verdict "$T/p.ast"
    assert_success
    assert_line --regexp '^cost-greedy +3 +0 .* +1\.342 +0/2$'
    assert_line "- Floor-bound: 0 of 2 tasks (the best plan's slowest shard is at or below the floor, the costliest table measured alone): every best plan is above its floor, so table-wise planning still has room; the floor is unknown for 1 more task (tables without a single-table cost)."
    run as-eval --singles "$T/s.ast" --floor-margin 0.7 --table verdict "$T/p.ast"
    assert_output --partial "- Floor-bound: 2 of 2 tasks (the best plan's slowest shard is at most 70 % above the floor"
    for bad in -0.1 1.5 x ''; do
        run as-eval --singles "$T/s.ast" --floor-margin "$bad" "$T/p.ast"
        assert_failure 2
    done
    # over two runs the count is over task runs
    run as-eval --singles "$T/s.ast" --table verdict "$T/p.ast" "$T/p.ast"
    assert_output --partial "- Floor-bound: 2 of 4 task runs ("
}

@test "as-eval: without single costs the report works and says the floor is unknown; singles of another device are not used" {
    make_stream "$HDR$PLANS" > "$T/p.ast"
    run as-eval --table plans,summary,verdict "$T/p.ast"
    assert_success
    assert_line "floor: unknown (no single-table cost for the tasks' tables: give the cost dataset of as-bench --singles with --singles FILE or in the input)"
    assert_line "Floor: unknown for all 2 tasks: no single-table cost for their tables (give the cost dataset of as-bench --singles with --singles FILE or in the input)."
    assert_line "- Floor: unknown for all 2 tasks: no single-table cost for their tables (give the cost dataset of as-bench --singles with --singles FILE or in the input)."
    refute_output --partial "max/floor"
    run as-eval --format csv --table verdict "$T/p.ast"
    assert_line --index 1 --regexp ',2,0,0,0\.02,$'
    # single costs measured on another device: said, and not used
    floor_plans > "$T/fp.ast"
    floor_singles "gpu: other" > "$T/gpu.ast"
    run as-eval --singles "$T/gpu.ast" --table plans,verdict "$T/fp.ast"
    assert_success
    assert_line "as-eval: warning: 11 single-table cost records were measured on another device than the plans (cpu: test); the floor does not use them"
    assert_output --partial "- Floor: unknown for all 3 tasks: no single-table cost"
    # estimated costs without the model that made them: the floor is unknown; measured singles are not used
    floor_plans estimated > "$T/est.ast"
    floor_singles > "$T/s.ast"
    run as-eval --singles "$T/s.ast" --table plans,verdict "$T/est.ast"
    assert_success
    assert_line "as-eval: --singles $T/s.ast: not used: the plans' costs are estimated; give the model with --model for their floor"
    assert_line "floor: unknown (estimated costs without the cost model that made them: give it with --model to price each table alone)"
    assert_line "- Floor: unknown for all 3 tasks: no cost model prices the tables alone (give the model with --model)."
}

@test "as-eval: a bad single-table cost record is bad data; --singles refusals" {
    floor_plans > "$T/p.ast"
    mp_stream "{'kind':'cost','tables':[10],'cost_ms':-1.0}" > "$T/bad.ast"
    run sh -c "cat '$T/p.ast' '$T/bad.ast' | as-eval"
    assert_failure 1
    assert_output --partial "<stdin>: record 9: cost: 'cost_ms' = -1 is not a positive cost"
    run as-eval --singles "$T/bad.ast" "$T/p.ast"
    assert_failure 1
    assert_output --partial "$T/bad.ast: record 2: cost: 'cost_ms' = -1 is not a positive cost"
    mp_stream "{'kind':'cost','tables':'x','cost_ms':1.0}" > "$T/bad2.ast"
    run as-eval --singles "$T/bad2.ast" "$T/p.ast"
    assert_failure 1
    assert_output --partial "$T/bad2.ast: record 2: cost: "
    run as-eval --singles "$T/missing.ast" "$T/p.ast"
    assert_failure 1
    assert_output --partial "$T/missing.ast: No such file or directory"
    echo hello > "$T/x"
    run as-eval --singles "$T/x" "$T/p.ast"
    assert_failure 1
    run as-eval --singles '' "$T/p.ast"
    assert_failure 2
    run as-eval --singles "$T/p.ast" "$T/p.ast" -o "$T/p.ast"
    assert_failure 2
}

@test "as-eval: floors at a tiny scale: measured (medians of as-bench --singles) and estimated (the model on each table alone), checked independently" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 2 --task-tables 6 --shards 2 -o "$T/ft.ast"
    as-bench --tables "$T/pool.ast" --sample 10 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 --trim 1 \
        --flush 8M --threads 1 -q -o "$T/costs.ast"
    cat "$T/ft.ast" "$T/costs.ast" | as-costfit --epochs 10 -q -o "$T/m.ast"
    as-plan --alg all "$T/ft.ast" -o "$T/plans.ast"
    as-bench --tables "$T/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --flush 8M --threads 1 -q "$T/plans.ast" -o "$T/measured.ast"
    # measured: per task the largest median of a table's single-table cost records (those of
    # costs.ast and the one-table shards of the measured plans)
    as-show --kind cost --kind plan "$T/costs.ast" "$T/measured.ast" | python3 -c "
import json, statistics, sys
single, tables, devices = {}, {}, set()
recs = [json.loads(l) for l in sys.stdin]
for r in recs:
    if r['kind'] == 'plan':
        tables[r['task']] = r['tables']
        devices.add(r['cost_device'])
assert len(devices) == 1
for r in recs:
    if r['kind'] == 'cost' and len(r['tables']) == 1 and r.get('cost_ms') is not None and r['device'] in devices:
        single.setdefault(r['tables'][0], []).append(r['cost_ms'])
for t in sorted(tables):
    print(t, repr(max(statistics.median(single[i]) for i in tables[t])))" > "$T/want-measured"
    as-eval --singles "$T/costs.ast" --format csv --table plans "$T/measured.ast" | tail -n +2 | cut -d, -f2,18 | sort -u | tr , ' ' > "$T/got-measured"
    [ "$(wc -l < "$T/got-measured")" -eq 2 ]
    paste -d' ' "$T/want-measured" "$T/got-measured" | awk '{ if ($1 != $3 || ($2 - $4) > 1e-6 * $2 || ($4 - $2) > 1e-6 * $2) exit 1 }'
    run as-eval --singles "$T/costs.ast" --table verdict "$T/measured.ast"
    assert_line --regexp '^- Floor-bound: [0-2] of 2 tasks \(the best plan.s slowest shard is at most 2 % above the floor, the costliest table measured alone, or below it\)'
    # estimated: the model's prediction for each table alone (as-costfit --predict on one-table shards)
    mapfile -t one < <(as-show --kind plan "$T/plans.ast" | jq -r 'select(.alg == "random") | .task as $t | .tables[] | "{\"kind\":\"shard\",\"task\":\($t),\"tables\":[\(.)]}"')
    mp_stream "${one[@]}" > "$T/one.ast"
    cat "$T/ft.ast" "$T/one.ast" | as-costfit --predict "$T/m.ast" | as-show --kind shard | jq -rs 'group_by(.task)[] | "\(.[0].task) \(max_by(.pred_ms).pred_ms)"' > "$T/want-est"
    cat "$T/ft.ast" "$T/plans.ast" | as-eval --model "$T/m.ast" --format csv --table plans | tail -n +2 | cut -d, -f2,18 | sort -u | tr , ' ' > "$T/got-est"
    [ "$(wc -l < "$T/got-est")" -eq 2 ]
    paste -d' ' "$T/want-est" "$T/got-est" | awk '{ if ($1 != $3 || ($2 - $4) > 1e-6 * $2 || ($4 - $2) > 1e-6 * $2) exit 1 }'
    run sh -c "cat '$T/ft.ast' '$T/plans.ast' | as-eval --model '$T/m.ast' --table plans,verdict"
    assert_success
    assert_output --partial "floor: the costliest of the task's tables alone (the cost model's prediction for each table alone), no table-wise plan can go below it; max/floor: the slowest shard over it"
    assert_line --regexp '^- Floor-bound: [0-2] of 2 tasks \(the best plan.s slowest shard is at or below the floor, the costliest table predicted alone\)'
    # every plan has its max/floor
    n=$(as-show --kind plan "$T/plans.ast" | wc -l)
    run sh -c "cat '$T/ft.ast' '$T/plans.ast' | as-eval --model '$T/m.ast' --format csv --table plans | tail -n +2 | cut -d, -f19 | grep -c ."
    assert_output "$n"
}

@test "as-eval --comm-gbps: each shard charged its bytes plus 1/K of all, only when every plan carries them; floors stay kernel" {
    # 2 shards, measured kernel 1 ms and 2 ms; bytes: shard 0 2^30 (in) + 2^30 (out), shard 1
    # 0 + 2^30: at 1 GiB/s shard 0 gains 2 s + 3/2 s, shard 1 1 s + 3/2 s
    P() { echo "{'kind':'plan','task':$1,'alg':'$2','shards':2,'tables':[0,1],'assign':[0,1],'cost_ms':$3,'cost_kind':'measured','comm_in_bytes':$4,'comm_out_bytes':$5}"; }
    G=1073741824
    mp_stream "$(P 0 random '[1.0,2.0]' "[$G,0]" "[$G,$G]")" > "$T/p.ast"
    run sh -c "as-eval --comm-gbps 1 --format csv --table plans '$T/p.ast'"
    assert_success
    # max 3501 ms (shard 0: 1 + 3500), min 2502 (shard 1: 2 + 2500)
    assert_output --partial "3501"
    assert_output --partial "2502"
    run as-eval --comm-gbps 1 "$T/p.ast"
    assert_output --partial "communication: measured kernel costs plus communication modelled at 1 GiB/s"
    # 0: reported, not charged: the kernel figures
    run sh -c "as-eval --comm-gbps 0 --format csv --table plans '$T/p.ast'"
    assert_success
    refute_output --partial "3501"
    run as-eval --comm-gbps 0 "$T/p.ast"
    assert_output --partial "not charged (--comm-gbps 0)"
    # a plan without the bytes beside one with them: nothing charged, said on stderr and above
    mp_stream "$(P 0 random '[1.0,2.0]' "[$G,0]" "[$G,$G]")" \
        "{'kind':'plan','task':0,'alg':'size-greedy','shards':2,'tables':[0,1],'assign':[1,0],'cost_ms':[1.5,1.5],'cost_kind':'measured'}" > "$T/mix.ast"
    run sh -c "as-eval --comm-gbps 1 --format csv --table plans '$T/mix.ast'"
    assert_success
    refute_output --partial "3501"
    run as-eval --comm-gbps 1 "$T/mix.ast"
    assert_output --partial "1 plans carry no communication bytes"
    # bad bytes are bad input; a bad bandwidth a usage error
    mp_stream "$(P 0 random '[1.0,2.0]' "[-1,0]" "[0,0]")" > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "comm_in_bytes[0]"
    mp_stream "$(P 0 random '[1.0,2.0]' "[1,0]" "None")" > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "come together"
    run as-eval --comm-gbps -1 "$T/p.ast"
    assert_failure 2
    # the floor (table 1 alone: 1.5 ms) compares the kernel: max/floor = 2 / 1.5, not 3501 / 1.5
    mp_stream "{'kind':'cost','tables':[1],'cost_ms':1.5,'device':'cpu: test'}" "{'kind':'cost','tables':[0],'cost_ms':1.0,'device':'cpu: test'}" > "$T/s.ast"
    run sh -c "as-eval --comm-gbps 1 --singles '$T/s.ast' --format csv --table summary '$T/p.ast'"
    assert_success
    assert_output --partial ",1.33333"
}

@test "as-plan writes every plan's communication bytes; as-eval charges them by default" {
    as-convert --synth --tables 12 --batch 64 --row-scale 0.001 --seed 3 -o "$T/pool.ast"
    as-features -q --tasks 2 --test-tasks 1 --task-tables 8 --shards 2 --seed 3 "$T/pool.ast" -o "$T/ft.ast"
    as-plan -q --alg random,lookup-greedy --plans-only "$T/ft.ast" -o "$T/p.ast"
    # ids 8 bytes a lookup, outputs 2 x batch x dim x 4 bytes, summed over each shard's tables
    run sh -c "as-show --kind features '$T/ft.ast' > '$T/f.json'; as-show --kind plan '$T/p.ast' | jq -c --slurpfile f '$T/f.json' '
        (\$f | map({key: (.id | tostring), value: .}) | from_entries) as \$F
        | [range(0; .shards)] as \$ks | . as \$p
        | [\$ks[] | . as \$k | [range(0; \$p.tables | length) | select(\$p.assign[.] == \$k) | \$F[\$p.tables[.] | tostring]]
           | [(map(.lookups * 8) | add // 0), (map(2 * .batch * .dim * 4) | add // 0)]]
        == [\$ks[] | [\$p.comm_in_bytes[.], \$p.comm_out_bytes[.]]]' | sort -u"
    assert_success
    assert_output "true"
    as-plan -q --alg random,lookup-greedy --plans-only "$T/ft.ast" | as-bench -q --tables "$T/pool.ast" --device cpu \
        --warmup 1 --runs 2 --trim 0 --threads 1 -o "$T/m.ast"
    run as-eval "$T/m.ast"
    assert_success
    assert_output --partial "communication modelled at 600 GiB/s"
}

@test "as-eval: a data-parallel table (assign -2) is on every rank, its all-reduce charged, its floor a slice" {
    # task 0: random table-wise [1, 3] ms; cost-greedy holds b data parallel on both ranks,
    # [1.5, 2] ms of which 0.5 each its slice, 2^20 bytes of all-reduce per rank: at 1 GiB/s
    # each rank gains 2^20 / 2^30 s = 0.9765625 ms (its own, no all-to-all bytes)
    mp_stream "{'kind':'plan','task':0,'alg':'random','shards':2,'tables':[0,1,2],'assign':[0,1,1],'names':['a','b','c'],'cost_ms':[1.0,3.0],'cost_kind':'measured','comm_in_bytes':[0,0],'comm_out_bytes':[0,0]}" \
        "{'kind':'plan','task':0,'alg':'cost-greedy','shards':2,'tables':[0,1,2],'assign':[0,-2,1],'names':['a','b','c'],'cost_ms':[1.5,2.0],'cost_kind':'measured','cost_dp_ms':[0.5,0.5],'comm_in_bytes':[0,0],'comm_out_bytes':[0,0],'comm_ar_bytes':[1048576,1048576]}" \
        "{'kind':'cost','tables':[0],'cost_ms':1.0}" "{'kind':'cost','tables':[1],'cost_ms':3.0}" "{'kind':'cost','tables':[2],'cost_ms':1.0}" > "$T/dp.ast"
    run as-eval --comm-gbps 1 --format csv --table plans "$T/dp.ast"
    assert_success
    # max 2 + 0.9765625, min 1.5 + 0.9765625; the floor: b alone over 2 ranks (1.5), the
    # kernel's 2 ms over it
    assert_output --partial "0,0,,cost-greedy,2,3,measured,2.9765625,2.4765625,2.7265625,"
    assert_output --partial ",1.5,1.33333333,false"
    # the ranks table lists b on both ranks, marked, and says what it is
    run as-eval --comm-gbps 1 --table ranks "$T/dp.ast"
    assert_success
    assert_output --partial "     0     2      0    2.4766  a, b (dp)"
    assert_output --partial " *   1     2      0    2.9766  b (dp), c"
    assert_output --partial "data parallel: 1 table on every rank, marked (dp) (each rank looks up its share of the batch; the gradients are all-reduced); all-reduce 1.049 MB sent per rank at most; their part of each rank's cost: 0.5000, 0.5000 ms"
    assert_output --partial "its items by their cost alone: b (dp) (measured 1.5000 ms, 60 %); c (measured 1.0000 ms, 40 %)"
    # the header names the all-reduce among what is charged
    assert_output --partial "each shard's own and its 1/K share of the all-to-all, and the all-reduce of the data-parallel tables' gradients;"
    # --table comm: the slowest rank's communication by collective: cost-greedy's rank 1,
    # kernel 2 ms, all-reduce 0.9765625 ms (33 %); random's none
    run as-eval --comm-gbps 1 --format csv --table comm "$T/dp.ast"
    assert_success
    assert_line "0,0,random,1,3,0,0,0,0,0,0"
    assert_line "0,0,cost-greedy,1,2,0,0,0,0.976562,0,32.81"
    run as-eval --comm-gbps 1 --format csv --table shards,ranks "$T/dp.ast"
    assert_success
    assert_output --partial "0,0,cost-greedy,1,2,measured,2.9765625,"
    assert_output --partial ',measured,2.9765625,measured,"b (dp);c",,1.5;1'
    # refused: a data-parallel piece; a cost_dp_ms above its shard's cost; all-reduce bytes
    # in a plan without data-parallel entries
    mp_edit "$T/dp.ast" 'recs[2]["pieces"] = [None, [0, 8, 0, 10], None]' > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "plan of task 0: entry 1 (t1[c 0:8, r 0:10)) is data parallel (assign -2) but a piece"
    mp_edit "$T/dp.ast" 'recs[2]["cost_dp_ms"] = [2.0, 0.5]' > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "cost_dp_ms[0] = 2 ms is above cost_ms[0] = 1.5 ms, of which it is a part; bad data"
    mp_edit "$T/dp.ast" 'recs[1]["comm_ar_bytes"] = [5, 5]' > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "comm_ar_bytes[0] is 5 but the plan has no data-parallel entries (assign -2) to all-reduce"
    # the row pieces' share of a shard's bytes cannot pass them
    mp_edit "$T/dp.ast" 'recs[1]["comm_rw_bytes"] = [1, 0]' > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "comm_rw_bytes[0] + comm_cw_bytes[0] is more than the shard's comm_in_bytes + comm_out_bytes"
}

@test "as-eval --comm-model: each sharding type's collectives, alpha per call plus bytes over their bus bandwidth" {
    # one plan of 4 ranks: table 0 whole on rank 0 (its bytes 4e6), table 1 in two column
    # pieces on ranks 1 and 2 (1e6 each), table 2 in two row pieces on ranks 2 and 3 (2e6
    # each), table 3 data parallel (all-reduce 8e5 bytes per rank); kernel 1 ms everywhere
    mp_stream "{'kind':'plan','task':0,'alg':'cost-greedy+split','shards':4,'tables':[0,1,1,2,2,3],'pieces':[None,[0,8,0,100],[8,16,0,100],[0,16,0,50],[0,16,50,100],None],'assign':[0,1,2,2,3,-2],'cost_ms':[1.0,1.0,1.0,1.0],'cost_kind':'measured','comm_in_bytes':[1000000,500000,1500000,1000000],'comm_out_bytes':[3000000,500000,1500000,1000000],'comm_rw_bytes':[0,0,2000000,2000000],'comm_cw_bytes':[0,1000000,1000000,0],'comm_ar_bytes':[800000,800000,800000,800000]}" > "$T/ab.ast"
    # alpha 10 / 20 / 30 us, beta 100 / 200 / 400 GB/s (1e5, 2e5, 4e5 bytes a us), 3/4 of a
    # message leaving its rank. The plan carries no ids' part of its pieces' bytes: split as
    # each shard's ids to outputs (rank 1 to 3: half and half). Each type's message at a rank:
    # the larger of its own and 1/4 of all, the ids in one call, the outputs in two. The
    # slowest, rank 0: table-wise ids max(1e6, 1e6 / 4), outputs max(3e6, 3e6 / 4) / 2 a call:
    # 3 x 10 us + (1e6 + 3e6) x 3/4 / 1e5 = 0.06 ms; column-wise (none of its own) ids 2.5e5,
    # outputs 1.25e5 a call: 30 + 3.75 = 0.03375; row-wise ids 5e5 all-to-all, outputs 2.5e5
    # reduce-scattered and all-gathered: 10 + 3.75 + 2 x (20 + 0.9375) = 0.055625;
    # data-parallel, the all-reduce of 8e5 x 4/6 bytes: 30 + 2 = 0.032 us: 0.181375 ms, 15.35 %
    # of 1.181375. The fastest, rank 1: 0.0375 + 0.0375 + 0.055625 + 0.032
    run as-eval --comm-model 10/100,20/200,30/400 --format csv --table comm "$T/ab.ast"
    assert_success
    assert_line "run,task,alg,rank,kernel_ms,table_wise_ms,column_wise_ms,row_wise_ms,data_parallel_ms,table_row_wise_ms,comm_pct"
    assert_line "0,0,cost-greedy+split,0,1,0.06,0.03375,0.055625,0.032,0,15.35"
    run as-eval --comm-model 10/100,20/200,30/400 --format csv --table plans "$T/ab.ast"
    assert_success
    assert_output --partial ",measured,1.181375,1.162625,"
    # the text says which model charged it
    run as-eval --comm-model 10/100,20/200,30/400 --table comm "$T/ab.ast"
    assert_success
    assert_output --partial "communication modelled by 10/100,20/200,30/400 (each call its latency plus its message over its bus bandwidth)"
    # nvlink8 holds for one host of 8 GPUs: a plan of 4 is charged, one of 16 refused
    run as-eval --comm-model nvlink8 --format csv --table comm "$T/ab.ast"
    assert_success
    mp_stream "{'kind':'plan','task':0,'alg':'random','shards':16,'tables':[0],'assign':[0],'cost_ms':[1.0$(printf ',0.0%.0s' {1..15})],'cost_kind':'measured','comm_in_bytes':[8$(printf ',0%.0s' {1..15})],'comm_out_bytes':[8$(printf ',0%.0s' {1..15})]}" > "$T/k16.ast"
    run as-eval --comm-model nvlink8 "$T/k16.ast"
    assert_failure 1
    assert_output --partial "holds for one host of at most 8 GPUs, not 16 ranks"
    run as-eval --comm-model 1/1,1/1,1/1 "$T/k16.ast"
    assert_success
    # usage: a bad model, or both models
    run as-eval --comm-model nvlink9 "$T/ab.ast"
    assert_failure 2
    assert_output --partial "--comm-model: 'nvlink9': the all-to-all's alpha is not a number"
    run as-eval --comm-model nvlink8 --comm-gbps 600 "$T/ab.ast"
    assert_failure 2
    assert_output --partial "--comm-model and --comm-gbps are two models of the communication: give one"
    # the pieces' shares cannot pass the shard's bytes together
    mp_edit "$T/ab.ast" 'recs[1]["comm_cw_bytes"] = [0, 1000000, 1000001, 0]' > "$T/bad.ast"
    run as-eval "$T/bad.ast"
    assert_failure 1
    assert_output --partial "comm_rw_bytes[2] + comm_cw_bytes[2] is more than the shard's comm_in_bytes + comm_out_bytes"
}

@test "as-bench measures plans with the kind they train (cost_weights_type, cost_optimizer); as-eval says so and warns on a mix" {
    as-convert --synth --preset tiny -o "$T/pool.ast"
    as-features "$T/pool.ast" --tasks 1 --task-tables 8 --shards 2 -o "$T/ft.ast"
    as-plan --alg size-greedy,dim-greedy "$T/ft.ast" -o "$T/plans.ast"
    B="--tables $T/pool.ast --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q"
    as-bench $B "$T/plans.ast" -o "$T/h.ast"
    as-bench $B --weights-type fp32 --optimizer exact_rowwise_adagrad "$T/plans.ast" -o "$T/f.ast"
    # fp16 + SGD (the default) writes no kind; another writes both
    run sh -c "as-show --kind plan '$T/h.ast' | jq -c '[.cost_weights_type, .cost_optimizer]' | sort -u"
    assert_output '[null,null]'
    run sh -c "as-show --kind plan '$T/f.ast' | jq -c '[.cost_weights_type, .cost_optimizer]' | sort -u"
    assert_output '["fp32","exact_rowwise_adagrad"]'
    # measured again as fp16 + SGD: the old kind goes
    as-bench $B "$T/f.ast" -o "$T/h2.ast"
    run sh -c "as-show --kind plan '$T/h2.ast' | jq -c '[.cost_weights_type, .cost_optimizer]' | sort -u"
    assert_output '[null,null]'
    run as-eval "$T/h.ast"
    assert_success
    refute_output --partial "training"
    run as-eval "$T/f.ast"
    assert_success
    assert_line --regexp '^# costs measured on .* \(training fp32 weights with exact_rowwise_adagrad\); 2 plans, 1 run$'
    refute_output --partial "warning"
    cat "$T/h.ast" "$T/f.ast" > "$T/mix.ast"
    run as-eval "$T/mix.ast"
    assert_success
    assert_output --partial "warning: the plans' costs were measured training different weight types or optimizers"
    assert_output --partial "(training different weight types or optimizers)"
}
