#!/usr/bin/env bats
# pieces of tables end to end: as-features --row-pieces, as-bench measuring plans of row and
# column pieces (their cost records' lookups are the pieces' features'), bad pieces refused,
# as-plan --split-tables (its usage errors; its plans measured by as-bench, estimated by
# as-eval --model, never predicted slower than the unsplit plan of the same algorithm by the
# search's score: the kernel plus the communication it charges).
load test_helper/common

# once per file: a tiny pool of 6 tables, 3 tasks of 4 tables on 2 shards, with and without
# the row pieces of 2 and 4 blocks; a small cost model
setup_file() {
    D="$BATS_FILE_TMPDIR"
    export PATH="${AS_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH"
    as-convert --synth --tables 6 --batch 64 --row-scale 0.001 --seed 1 -o "$D/pool.ast"
    as-features "$D/pool.ast" --tasks 3 --task-tables 4 --shards 2 --seed 0 -o "$D/ft.ast"
    as-features "$D/pool.ast" --row-pieces 2,4 --tasks 3 --task-tables 4 --shards 2 --seed 0 -o "$D/ftr.ast"
    as-bench --tables "$D/pool.ast" --sample 12 --max-tables 4 --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q -o "$D/c.ast"
    cat "$D/ftr.ast" "$D/c.ast" | as-costfit --epochs 20 --seed 0 -q -o "$D/m.ast" 2> /dev/null
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

# features of the pool as JSON lines
feats() { as-show --no-header --kind features "$@"; }

@test "as-features --row-pieces N: TorchRec's blocks, each table's pieces sum to its lookups" {
    for n in 2 4; do
        as-features "$D/pool.ast" --row-pieces $n -o "$T/r$n.ast"
        # per table with pieces: [lookups of the whole, sum of the pieces', number of pieces,
        # the blocks tile [0, rows) in order with block ceil(rows/n), all columns]
        run sh -c "as-show --no-header --kind features '$T/r$n.ast' | jq -s -e --argjson n $n '
            (map(select(.piece == null))) as \$w
            | (map(select(.piece != null))) as \$p
            | (\$p | length) > 0
              and all(\$w[]; . as \$t | [\$p[] | select(.id == \$t.id)] as \$q
                | if \$t.rows < 2 then (\$q | length) == 0
                  else ((\$t.rows + \$n - 1) / \$n | floor) as \$b
                    | (\$q | map(.lookups) | add) == \$t.lookups
                      and (\$q | length) == ((\$t.rows + \$b - 1) / \$b | floor)
                      and all(range(0; \$q | length); . as \$j | \$q[\$j].piece == [0, \$t.dim, \$j * \$b, ([(\$j + 1) * \$b, \$t.rows] | min)]
                            and \$q[\$j].rows == \$q[\$j].piece[3] - \$q[\$j].piece[2] and \$q[\$j].dim == \$t.dim and \$q[\$j].batch == \$t.batch)
                  end)'"
        assert_success
    done
    # the whole tables' records and the tasks are as without --row-pieces
    run diff <(canon --kind task "$D/ft.ast") <(canon --kind task "$D/ftr.ast")
    assert_success
    [ -n "$(canon --kind task "$D/ftr.ast")" ]
    run diff <(feats "$D/ft.ast" | jq -c 'del(.piece)') <(feats "$D/ftr.ast" | jq -c 'select(.piece == null) | del(.piece)')
    assert_success
    # 2,4 writes both cuts: as many piece records as the two runs together
    [ "$(feats "$D/ftr.ast" | jq -c 'select(.piece != null)' | wc -l)" -eq \
      "$(cat "$T/r2.ast" "$T/r4.ast" | as-show --no-header --kind features | jq -c 'select(.piece != null)' | wc -l)" ]
    run as-features "$D/pool.ast" --row-pieces 1
    assert_failure 2
    run as-features "$D/pool.ast" --row-pieces 2,x
    assert_failure 2
}

# a plan of task 0 (tables 1 2 4 5) with explicit pieces: PIECES is a Python list for the
# entries TABLES (Python list) on shards ASSIGN
plan_of() {
    mp_stream "{'kind':'plan','task':0,'alg':'size-greedy','shards':2,'tables':$1,'assign':$2,'pieces':$3}"
}

@test "as-bench measures a plan of row and column pieces; its cost records' lookups are the pieces' features'" {
    # table 2 (2943 x 32) in two column pieces, table 4 (5413 x 16) in its 4 row blocks
    plan_of "[2,2,4,4,4,4,1,5]" "[0,1,0,1,0,1,0,1]" \
        "[[0,16,0,2943],[16,32,0,2943],[0,16,0,1354],[0,16,1354,2708],[0,16,2708,4062],[0,16,4062,5413],None,None]" > "$T/plan.ast"
    # the sizes this plan assumes
    run sh -c "as-show --no-header --kind features '$D/ft.ast' | jq -r 'select(.id == 2 or .id == 4) | [.id, .rows, .dim] | @tsv'"
    assert_output $'2\t2943\t32\n4\t5413\t16'
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/plan.ast" -o "$T/b.ast"
    run sh -c "as-show --no-header --kind cost '$T/b.ast' | jq -c '[.shard, .tables, .pieces]'"
    assert_output '[0,[2,4,4,1],[[0,16,0,2943],[0,16,0,1354],[0,16,2708,4062],null]]
[1,[2,4,4,5],[[16,32,0,2943],[0,16,1354,2708],[0,16,4062,5413],null]]'
    # lookups: a column piece sees all its table's (or row piece's), a row piece its block's;
    # sum_dim: the pieces' columns
    run sh -c "as-show --no-header '$D/ftr.ast' '$T/b.ast' | jq -s -e '
        (map(select(.kind == \"features\"))) as \$f
        | (\$f | map(select(.piece == null)) | map({key: (.id | tostring), value: .}) | from_entries) as \$w
        | [.[] | select(.kind == \"cost\")] as \$c
        | (\$c | length) == 2
          and all(\$c[]; . as \$r
            | ([range(0; \$r.tables | length) | . as \$i | \$w[\$r.tables[\$i] | tostring] as \$t | \$r.pieces[\$i] as \$p
                | if \$p == null or (\$p[2] == 0 and \$p[3] == \$t.rows) then \$t.lookups
                  else ([\$f[] | select(.id == \$t.id and .piece == [0, \$t.dim, \$p[2], \$p[3]]) | .lookups] | if length == 1 then .[0] else error(\"no piece\") end)
                  end] | add) == \$r.lookups
              and ([range(0; \$r.tables | length) | . as \$i | \$r.pieces[\$i] as \$p
                | if \$p == null then \$w[\$r.tables[\$i] | tostring].dim else \$p[1] - \$p[0] end] | add) == \$r.sum_dim)'"
    assert_success
    # not vacuous: the shards' lookups differ from the whole tables' sums
    run sh -c "as-show --no-header --kind cost '$T/b.ast' | jq -r .lookups | paste -sd' '"
    assert_output '752 518'
    # the plan record keeps its pieces, measured
    run sh -c "as-show --no-header --kind plan '$T/b.ast' | jq -c '[.pieces[1], (.cost_ms | length), .cost_kind]'"
    assert_output '[[16,32,0,2943],2,"measured"]'
}

@test "bad pieces are exit 1 with a message naming the table (as-bench, as-eval)" {
    run_bad() {
        plan_of "[2,2,1,4,5]" "[0,1,0,1,1]" "$1+[None,None,None]" > "$T/bad.ast"
        run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 1 --trim 0 --threads 1 -q "$T/bad.ast" -o "$T/out.ast"
        assert_failure 1
        assert_output --partial "table 2"
        assert_output --partial "$2"
        [ ! -s "$T/out.ast" ] || [ -z "$(as-show --no-header --kind cost "$T/out.ast" 2> /dev/null)" ]
    }
    run_bad "[[0,16,0,2943],[8,32,0,2943]]" "overlap"
    run_bad "[[0,16,0,2943],[0,16,0,2943]]" "overlap"
    run_bad "[[0,16,0,2943],[20,32,0,2943]]" "gap"
    run_bad "[[0,32,0,1000],[0,32,1000,2900]]" "gap"
    run_bad "[[0,16,0,2943],[16,40,0,2943]]" "outside"
    run_bad "[[0,32,0,1000],[0,32,1000,2950]]" "outside"
    run_bad "[None,[16,32,0,2943]]" "whole"
    # one piece alone not from row 0
    run_bad "[[0,32,1,2943],[0,32,1,2943]]" "overlap"
    plan_of "[2,1,4,5]" "[0,0,1,1]" "[[0,32,5,2943],None,None,None]" > "$T/bad.ast"
    run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 1 --trim 0 --threads 1 -q "$T/bad.ast" -o /dev/null
    assert_failure 1
    assert_output --partial "table 2"
    # a table listed twice without pieces
    mp_stream "{'kind':'plan','task':0,'alg':'size-greedy','shards':2,'tables':[2,2,1],'assign':[0,1,0]}" > "$T/bad.ast"
    run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 1 --trim 0 --threads 1 -q "$T/bad.ast" -o /dev/null
    assert_failure 1
    assert_output --partial "table 2"
    # as-eval reads the plans the same way
    plan_of "[2,2,1,4,5]" "[0,1,0,1,1]" "[[0,16,0,2943],[8,32,0,2943],None,None,None]" > "$T/bad.ast"
    run as-eval --model "$D/m.ast" "$D/ftr.ast" "$T/bad.ast"
    assert_failure 1
    assert_output --partial "table 2"
    assert_output --partial "overlap"
    # pieces not parallel to the tables, a malformed piece
    plan_of "[2,2,1]" "[0,1,0]" "[[0,16,0,2943],[16,32,0,2943]]" > "$T/bad.ast"
    run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 1 --trim 0 --threads 1 -q "$T/bad.ast" -o /dev/null
    assert_failure 1
    assert_output --partial "pieces"
    plan_of "[2,2,1]" "[0,1,0]" "[[0,16,0,2943],[32,16,0,2943],None]" > "$T/bad.ast"
    run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 1 --trim 0 --threads 1 -q "$T/bad.ast" -o /dev/null
    assert_failure 1
    assert_output --partial "pieces[1]"
}

@test "as-plan --split-tables: usage errors are exit 2" {
    run as-plan --alg all --split-tables "$D/ftr.ast"
    assert_failure 2
    assert_output --partial "--split-tables needs --model"
    for o in "--split-ms 10" "--split-steps 2" "--split-beam 2" "--split-cands 2"; do
        run as-plan --alg all --model "$D/m.ast" $o "$D/ftr.ast"
        assert_failure 2
        assert_output --partial "needs --split-tables"
    done
    run as-plan --alg all --model "$D/m.ast" --comm-gbps 10 "$D/ftr.ast"
    assert_failure 2
    assert_output --partial "needs --split-tables"
    for o in "--split-ms -1" "--split-steps 0" "--split-beam 0" "--split-cands x"; do
        run as-plan --alg all --model "$D/m.ast" --split-tables $o "$D/ftr.ast"
        assert_failure 2
    done
}

@test "as-plan --split-tables: ALG+split plans of pieces, measured by as-bench, estimated by as-eval, never predicted slower" {
    as-plan --alg all --model "$D/m.ast" --split-tables --plans-only "$D/ftr.ast" -o "$T/ps.ast"
    as-plan --alg all --model "$D/m.ast" --plans-only "$D/ftr.ast" -o "$T/pu.ast"
    # every algorithm on every task, labelled +split
    run sh -c "as-show --kind plan '$T/ps.ast' | jq -r .alg | sort | uniq -c | awk '{ print \$1, \$2 }'"
    assert_output "3 cost-greedy+split
3 dim-greedy+split
3 lookup-greedy+split
3 random+split
3 size-greedy+split
3 size-lookup-greedy+split"
    # not vacuous: some plans split tables (by columns or rows, as the measured model has it)
    run sh -c "as-show --kind plan '$T/ps.ast' | jq -s '[.[] | .pieces // [] | .[] | select(. != null)] | [length, (map(select(.[2] > 0)) | length), (map(select(.[0] > 0)) | length)]' | jq -e '.[0] > 0'"
    assert_success
    # each split plan scores at most its unsplit plan (same task, same algorithm) by what the
    # search promises (lib/plan/split.h): its score, the slowest shard's predicted kernel plus
    # the communication it charges (the default 600 GiB/s: a shard's bytes / G plus every
    # shard's / K / G, as-eval's charge, checked below against as-eval's max); feasible, pieces
    # parallel to the tables, the same tables. Not pred_ms alone: a placement under the
    # charge whose kernel is slower but whose traffic saves more is the better plan (the
    # kernel alone is compared under --comm-gbps 0, next)
    jq_score='def score($g): . as $p | ([$p.comm_in_bytes, $p.comm_out_bytes] | transpose | map(add)) as $b
        | ($b | add) as $all | [range(0; $p.shards) | $p.pred_ms[.] + $b[.] / $g + $all / $p.shards / $g] | max;
        (600 * 1073741824 / 1000) as $g'
    as-show --kind plan "$T/ps.ast" "$T/pu.ast" > "$T/psu.json"
    run jq -s -e "$jq_score"'
        | (map(select(.alg | endswith("+split")))) as $s | (map(select(.alg | endswith("+split") | not))) as $u
        | ($s | length) == 18 and ($u | length) == 18
          and all($s[]; . as $a | [$u[] | select(.task == $a.task and .alg + "+split" == $a.alg)] as $b
              | ($b | length) == 1 and $a.comm_gbps == 600 and ($a | score($g)) <= ($b[0] | score($g)) * (1 + 1e-12)
                and $a.feasible
                and ($a.pieces == null or ($a.pieces | length) == ($a.tables | length))
                and ($a.tables | unique) == ($b[0].tables | unique))' "$T/psu.json"
    assert_success
    # that score is as-eval's estimate at its default charge, plan by plan
    run sh -c "as-eval --model '$D/m.ast' --format csv '$D/ftr.ast' '$T/ps.ast' '$T/pu.ast' | awk -F, 'NR > 1 && NF == 20 { print \$2, \$4, \$8 }' | LC_ALL=C sort > '$T/evalc.txt'
        jq -s -r '$jq_score | .[] | [.task, .alg, score(\$g)] | @tsv' '$T/psu.json' | LC_ALL=C sort > '$T/scorec.txt'
        paste -d' ' '$T/evalc.txt' '$T/scorec.txt' | awk '{ if (\$1 != \$4 || \$2 != \$5) { print \"mismatch\", \$0; exit 1 }
            d = \$3 - \$6; if (d < 0) d = -d; if (d > 1e-6 * \$6 + 1e-9) { print \"differs\", \$0; exit 1 }; n++ } END { print n }'"
    assert_success
    assert_output 36
    # communication not charged (--comm-gbps 0): the score is the kernel alone, the search's
    # root the unsplit plan itself: each split plan's pred_ms max at most its unsplit plan's
    as-plan --alg all --model "$D/m.ast" --split-tables --comm-gbps 0 --plans-only "$D/ftr.ast" -o "$T/ps0.ast"
    run sh -c "as-show --kind plan '$T/ps0.ast' '$T/pu.ast' | jq -s -e '
        (map(select(.alg | endswith(\"+split\")))) as \$s | (map(select(.alg | endswith(\"+split\") | not))) as \$u
        | (\$s | length) == 18 and (\$u | length) == 18
          and all(\$s[]; . as \$a | [\$u[] | select(.task == \$a.task and .alg + \"+split\" == \$a.alg)] as \$b
              | (\$b | length) == 1 and (\$a.pred_ms | max) <= (\$b[0].pred_ms | max) * (1 + 1e-12) and \$a.feasible
                and (\$a.pieces == null or (\$a.pieces | length) == (\$a.tables | length))
                and (\$a.tables | unique) == (\$b[0].tables | unique))'"
    assert_success
    # as-eval --model estimates them: exit 0, the same max as pred_ms
    run as-eval --model "$D/m.ast" --format csv "$D/ftr.ast" "$T/ps.ast"
    assert_success
    assert_output --partial "+split"
    run sh -c "as-eval --model '$D/m.ast' --comm-gbps 0 --format csv '$D/ftr.ast' '$T/ps.ast' | awk -F, 'NR > 1 && NF == 20 { print \$2, \$4, \$8 }' | sort > '$T/eval.txt'
        as-show --kind plan '$T/ps.ast' | jq -r '[.task, .alg, (.pred_ms | max)] | @tsv' | sort > '$T/pred.txt'
        paste -d' ' '$T/eval.txt' '$T/pred.txt' | awk '{ if (\$1 != \$4 || \$2 != \$5) { print \"mismatch\", \$0; exit 1 }
            d = \$3 - \$6; if (d < 0) d = -d; if (d > 1e-6 * \$6 + 1e-9) { print \"differs\", \$0; exit 1 }; n++ } END { print n }'"
    assert_success
    assert_output 18
    # as-bench measures the plans with pieces
    as-show --kind plan "$T/ps.ast" > /dev/null
    as-plan --alg lookup-greedy,size-lookup-greedy --model "$D/m.ast" --split-tables --plans-only "$D/ftr.ast" -o "$T/ls.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/ls.ast" -o "$T/b.ast"
    run sh -c "as-show --no-header --kind plan '$T/b.ast' | jq -s -e 'length == 6 and all(.[]; (.alg | endswith(\"+split\")) and .cost_kind == \"measured\" and (.cost_ms | length) == 2)
        and any(.[]; .pieces != null)'"
    assert_success
    # the cost records of pieces name them
    run sh -c "as-show --no-header --kind cost '$T/b.ast' | jq -s -e 'any(.[]; .pieces != null and any(.pieces[]; . != null))'"
    assert_success
    # deterministic
    as-plan --alg all --model "$D/m.ast" --split-tables --plans-only "$D/ftr.ast" -o "$T/ps2.ast"
    run diff <(as-show --kind plan "$T/ps.ast" | jq -c 'del(.plan_ms, .split_info.ms)') <(as-show --kind plan "$T/ps2.ast" | jq -c 'del(.plan_ms, .split_info.ms)')
    assert_success
}

@test "as-plan --split-tables without row pieces' features splits by columns only" {
    as-plan --alg all --model "$D/m.ast" --split-tables --plans-only "$D/ft.ast" -o "$T/pc.ast"
    as-show --no-header --kind features "$D/ft.ast" | jq -s . > "$T/f.json"
    # not vacuous: some table is split
    run sh -c "as-show --kind plan '$T/pc.ast' | jq -s -e 'any(.[]; .pieces != null)'"
    assert_success
    run sh -c "as-show --kind plan '$T/pc.ast' | jq -s -e --slurpfile f '$T/f.json' '
        (\$f[0] | map({key: (.id | tostring), value: .rows}) | from_entries) as \$rows
        | all(.[]; . as \$p | .pieces == null
            or all(range(0; \$p.tables | length); \$p.pieces[.] == null or (\$p.pieces[.][2] == 0 and \$p.pieces[.][3] == \$rows[\$p.tables[.] | tostring])))'"
    assert_success
}

@test "as-plan --split-tables --split-rows none: column splits only, with the row pieces' features given; usage" {
    as-plan --alg all --model "$D/m.ast" --split-tables --split-rows none --plans-only "$D/ftr.ast" -o "$T/pn.ast"
    as-show --no-header --kind features "$D/ft.ast" | jq -s . > "$T/f.json"
    run sh -c "as-show --kind plan '$T/pn.ast' | jq -s -e --slurpfile f '$T/f.json' '
        (\$f[0] | map({key: (.id | tostring), value: .rows}) | from_entries) as \$rows
        | all(.[]; . as \$p | .pieces == null
            or all(range(0; \$p.tables | length); \$p.pieces[.] == null or (\$p.pieces[.][2] == 0 and \$p.pieces[.][3] == \$rows[\$p.tables[.] | tostring])))'"
    assert_success
    # a list of block counts is taken (the features have blocks of 2 and 4)
    as-plan --alg all --model "$D/m.ast" --split-tables --split-rows 2,4 --plans-only "$D/ftr.ast" -o "$T/p2.ast"
    for bad in "4,2" "1" "x" "2,,4" ""; do
        run as-plan --alg all --model "$D/m.ast" --split-tables --split-rows "$bad" "$D/ftr.ast"
        [ "$status" -eq 2 ]
    done
    run as-plan --alg all --model "$D/m.ast" --split-rows none "$D/ftr.ast"
    [ "$status" -eq 2 ]
    assert_output --partial "needs --split-tables"
}

@test "as-plan --split-tables --format torchrec: a split table is one key with a shard per piece that tile it" {
    run sh -c "as-plan --alg all --model '$D/m.ast' --split-tables --format torchrec '$D/ftr.ast' > '$T/tr.jsonl'"
    assert_success
    [ -s "$T/tr.jsonl" ]
    # every key: as many ranks as shards, the shards' areas sum to the rectangle they span,
    # a table of several shards is not table_wise, a table of one is
    run sh -c "jq -c '.plan[] | to_entries[] | .value | [ (.ranks|length) == (.shards|length),
        ([.shards[] | .shard_sizes[0] * .shard_sizes[1]] | add) ==
          (([.shards[] | .shard_offsets[0] + .shard_sizes[0]] | max) * ([.shards[] | .shard_offsets[1] + .shard_sizes[1]] | max)),
        ((.shards|length) > 1) == (.sharding_type != \"table_wise\")]' '$T/tr.jsonl' | sort -u"
    assert_output '[true,true,true]'
    # some table is split somewhere (the model of this file splits: test above)
    [ "$(jq -c '.plan[] | to_entries[] | select(.value.sharding_type != "table_wise")' "$T/tr.jsonl" | wc -l)" -gt 0 ]
    # the stream's pieces and the JSON's shards agree for the first split plan
    as-plan --alg all --model "$D/m.ast" --split-tables "$D/ftr.ast" -o "$T/sp.ast"
    n_stream=$(as-show --kind plan "$T/sp.ast" | jq -s '[.[] | .pieces // [] | map(select(. != null)) | length] | add')
    n_json=$(jq -s '[.[] | .plan[] | to_entries[] | select(.value.sharding_type != "table_wise") | .value.shards | length] | add' "$T/tr.jsonl")
    [ "$n_stream" -eq "$n_json" ]
}

@test "as-plan --alg torchrec: TorchRec's planner as a baseline; its row blocks on GPU i, measured, exported, deterministic" {
    as-plan --alg torchrec --model "$D/m.ast" --plans-only "$D/ftr.ast" -o "$T/tr.ast"
    run sh -c "as-show --kind plan '$T/tr.ast' | jq -r .alg | sort | uniq -c | awk '{ print \$1, \$2 }'"
    assert_output "3 torchrec"
    # every plan feasible, pieces parallel to the tables; a row_wise table's blocks are
    # block i on shard i (2 shards: ceil(rows / 2) rows each)
    run sh -c "as-show --kind plan '$T/tr.ast' | jq -s -e 'all(.[]; .feasible and (.pieces == null or (.pieces | length) == (.tables | length)))'"
    assert_success
    run sh -c "as-show --kind plan '$T/tr.ast' | jq -c '. as \$p | [range(0; .tables | length) | select(\$p.pieces != null and \$p.pieces[.] != null)
        | [\$p.tables[.], \$p.pieces[.][2], \$p.assign[.]]] | group_by(.[0]) | map(to_entries | all(.value[2] == .key))' | jq -s -e 'flatten | all'"
    assert_success
    # not vacuous: some tables go row_wise here
    run sh -c "as-show --kind plan '$T/tr.ast' | jq -s -e 'any(.[]; .pieces != null)'"
    assert_success
    # the same twice
    as-plan --alg torchrec --model "$D/m.ast" --plans-only "$D/ftr.ast" -o "$T/tr2.ast"
    run diff <(canon --kind plan "$T/tr.ast" | jq -c 'del(.plan_ms)') <(canon --kind plan "$T/tr2.ast" | jq -c 'del(.plan_ms)')
    assert_success
    # without the row blocks' features: no row_wise, said on stderr
    run as-plan --alg torchrec --plans-only "$D/ft.ast" -o "$T/tw.ast"
    assert_success
    assert_output --partial "without a row_wise option"
    run sh -c "as-show --kind plan '$T/tw.ast' | jq -s -e 'all(.[]; .pieces == null)'"
    assert_success
    # measured and evaluated with the others; TorchRec JSON
    as-plan --alg all,torchrec --model "$D/m.ast" --plans-only "$D/ftr.ast" -o "$T/all.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/all.ast" -o "$T/m.ast"
    run as-eval --table summary "$T/m.ast"
    assert_success
    assert_line --regexp '^torchrec +3 +0 '
    run sh -c "as-plan --alg torchrec --model '$D/m.ast' --format torchrec '$D/ftr.ast' | jq -e 'length > 0'"
    assert_success
}

@test "as-bench --piece-singles: every distinct piece of the plans measured alone; as-eval's floor of split plans from them" {
    as-bench -q --tables "$D/pool.ast" --device cpu --sample 1 --singles --warmup 1 --runs 2 --trim 0 --threads 1 -o "$T/singles.ast"
    as-plan -q --alg torchrec,lookup-greedy --model "$D/m.ast" --plans-only "$D/ftr.ast" -o "$T/p.ast"
    as-bench -q --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 --piece-singles "$T/p.ast" -o "$T/m.ast"
    # one cost record of origin shard per distinct (table, piece) of the plans, that piece alone
    want=$(as-show --kind plan "$T/p.ast" | jq -c '. as $p | range(0; .tables | length) | select($p.pieces != null and $p.pieces[.] != null) | [$p.tables[.], $p.pieces[.]]' | sort -u)
    [ -n "$want" ]
    got=$(as-show --kind cost "$T/m.ast" | jq -c 'select(.origin == "shard") | [.tables[0], .pieces[0]]' | sort)
    [ "$got" = "$want" ]
    run sh -c "as-show --kind cost '$T/m.ast' | jq -s -e 'map(select(.origin == \"shard\")) | all(.[]; (.tables | length) == 1 and .cost_ms > 0)'"
    assert_success
    # with the tables' singles, every plan's floor is known, split ones included; the torchrec
    # plans' floor is their costliest item alone (a piece or a whole table)
    run sh -c "as-eval --singles '$T/singles.ast' --format csv --table plans '$T/m.ast' | awk -F, 'NR > 1 && \$4 == \"torchrec\" { print (\$18 != \"\" ? \"known\" : \"unknown\") }' | sort -u"
    assert_output "known"
    # without --piece-singles a split plan's floor stays unknown, never guessed
    as-bench -q --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 "$T/p.ast" -o "$T/m0.ast"
    run sh -c "as-eval --singles '$T/singles.ast' --format csv --table plans '$T/m0.ast' | awk -F, 'NR > 1 && \$4 == \"torchrec\" && \$18 != \"\"' | wc -l"
    # (a torchrec plan without any split table has a known floor; those with pieces do not)
    n_split=$(as-show --kind plan "$T/p.ast" | jq -s '[.[] | select(.alg == "torchrec" and .pieces != null)] | length')
    n_all=$(as-show --kind plan "$T/p.ast" | jq -s '[.[] | select(.alg == "torchrec")] | length')
    [ "$n_split" -gt 0 ]
    [ "$output" -eq $((n_all - n_split)) ]
    # usage
    run as-bench --tables "$D/pool.ast" --device cpu --sample 2 --piece-singles
    assert_failure 2
}

@test "as-plan --repair: measured plans rebuilt and refined on their measured costs; labels, kept originals, caps, errors" {
    as-plan --alg all --model "$D/m.ast" --split-tables --plans-only "$D/ftr.ast" -o "$T/ps.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/ps.ast" -o "$T/meas.ast"
    # usage: a model is needed; --refine and --split-tables are not taken; a missing file
    run as-plan --repair "$T/meas.ast" "$D/ftr.ast"
    [ "$status" -eq 2 ]
    assert_output --partial "--repair needs --model"
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --refine "$D/ftr.ast"
    [ "$status" -eq 2 ]
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --split-tables "$D/ftr.ast"
    [ "$status" -eq 2 ]
    run as-plan --model "$D/m.ast" --repair "$T/nothere.ast" "$D/ftr.ast"
    [ "$status" -ne 0 ]
    # cost-greedy's plans, as they were and refined: the originals come back unchanged
    run as-plan --alg cost-greedy --model "$D/m.ast" --repair "$T/meas.ast" --keep-unrefined --plans-only "$D/ftr.ast" -o "$T/rep.ast"
    assert_success
    assert_output --partial "3 measured plans refined on their measured costs"
    run sh -c "as-show --kind plan '$T/rep.ast' | jq -r .alg | sort | uniq -c | awk '{print \$2, \$1}'"
    assert_output $'cost-greedy+split 3\ncost-greedy+split+refine+measured 3'
    for k in 0 1 2; do
        a=$(as-show --kind plan "$T/meas.ast" | jq -c "select(.task == $k and .alg == \"cost-greedy+split\") | [.tables, .pieces, .assign]")
        b=$(as-show --kind plan "$T/rep.ast" | jq -c "select(.task == $k and .alg == \"cost-greedy+split\") | [.tables, .pieces, .assign]")
        [ -n "$a" ] && [ "$a" = "$b" ]
        # the repaired plan holds the same items (tables and pieces), each placed once
        c=$(as-show --kind plan "$T/rep.ast" | jq -c "select(.task == $k and .alg == \"cost-greedy+split+refine+measured\") | [.tables, .pieces]")
        [ "$(jq -c '.[0:2]' <<< "$a")" = "$c" ]
    done
    # every plan measured and repaired (18), deterministic, measurable again, under a cap
    as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only "$D/ftr.ast" -o "$T/all.ast"
    as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only "$D/ftr.ast" -o "$T/all2.ast"
    [ "$(as-show --kind plan "$T/all.ast" | jq -c '[.alg, .assign]')" = "$(as-show --kind plan "$T/all2.ast" | jq -c '[.alg, .assign]')" ]
    [ "$(as-show --kind plan "$T/all.ast" | jq -r .alg | grep -c '+refine+measured$')" -eq 18 ]
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 2 --trim 0 --threads 1 -q "$T/all.ast" -o "$T/m2.ast"
    [ "$(as-show --kind plan "$T/m2.ast" | jq -r .cost_kind | sort -u)" = "measured" ]
    cap=$(as-show --kind plan "$T/meas.ast" | jq -s '[.[].mem_bytes | max] | max')
    as-plan --model "$D/m.ast" --repair "$T/meas.ast" --mem-cap "$cap" --plans-only "$D/ftr.ast" -o "$T/cap.ast"
    [ "$(as-show --kind plan "$T/cap.ast" | jq --argjson c "$cap" '[.mem_bytes[] | select(. > $c)] | length' | sort -u)" = "0" ]
    # a cap the measured plans break: exit 1 naming the plan and the shard
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --mem-cap $((cap - 1)) --plans-only "$D/ftr.ast" -o "$T/cap2.ast"
    [ "$status" -eq 1 ]
    assert_output --partial "bytes, over the $((cap - 1))-byte cap of --mem-cap"
    # a second round on repaired plans: +measured2; --repair-round picks one round's plans
    as-plan --model "$D/m.ast" --repair "$T/m2.ast" --plans-only "$D/ftr.ast" -o "$T/r2.ast"
    [ "$(as-show --kind plan "$T/r2.ast" | jq -r .alg | grep -c '+refine+measured2$')" -eq 18 ]
    cat "$T/meas.ast" "$T/m2.ast" > "$T/both.ast"
    run as-plan --model "$D/m.ast" --repair "$T/both.ast" --repair-round 2 --keep-unrefined --plans-only "$D/ftr.ast" -o "$T/rr.ast"
    assert_success
    run sh -c "as-show --kind plan '$T/rr.ast' | jq -r .alg | sed 's/.*+refine+//' | sort | uniq -c | awk '{print \$2, \$1}'"
    assert_output $'measured 18\nmeasured2 18'
    run as-plan --model "$D/m.ast" --repair "$T/both.ast" --repair-round 1 --plans-only "$D/ftr.ast" -o "$T/r1.ast"
    assert_success
    [ "$(as-show --kind plan "$T/r1.ast" | jq -r .alg | grep -c '+refine+measured$')" -eq 18 ]
    run as-plan --model "$D/m.ast" --repair-round 2 "$D/ftr.ast"
    [ "$status" -eq 2 ]
    # hostile measured records: exit 1 naming the record, nothing written
    mp_edit "$T/meas.ast" "kind('plan')[0]['cost_ms'] = [1.0]" > "$T/h1.ast"
    mp_edit "$T/meas.ast" "kind('plan')[0]['cost_ms'] = 'x'" > "$T/h2.ast"
    mp_edit "$T/meas.ast" "kind('plan')[0]['alg'] = 'nonsense+split'" > "$T/h3.ast"
    mp_edit "$T/meas.ast" "kind('plan')[0]['assign'][0] = 99" > "$T/h4.ast"
    mp_edit "$T/meas.ast" "p = kind('plan')[0]; p['cost_ms'] = [None] * len(p['cost_ms'])" > "$T/h5.ast"
    mp_edit "$T/meas.ast" "kind('plan')[0]['comm_gbps'] = -5.0" > "$T/h6.ast"
    for h in h1 h2 h3 h4; do
        run as-plan --model "$D/m.ast" --repair "$T/$h.ast" --plans-only "$D/ftr.ast" -o "$T/$h.out"
        [ "$status" -eq 1 ]
        assert_output --partial "record"
        [ ! -e "$T/$h.out" ]
    done
    head -c 300 "$T/meas.ast" > "$T/trunc.ast"
    run as-plan --model "$D/m.ast" --repair "$T/trunc.ast" --plans-only "$D/ftr.ast" -o "$T/tr.out"
    [ "$status" -eq 1 ]
    # costs all missing: the model's own costs (scale 1)
    run as-plan --model "$D/m.ast" --repair "$T/h5.ast" --plans-only "$D/ftr.ast" -o "$T/h5.out"
    assert_success
    # a bad bandwidth is bad data, never read as no charge
    run as-plan --model "$D/m.ast" --repair "$T/h6.ast" --plans-only "$D/ftr.ast" -o "$T/h6.out"
    [ "$status" -eq 1 ]
    assert_output --partial "'comm_gbps' = -5, not a bandwidth"
    [ ! -e "$T/h6.out" ]
    # plans not measured are skipped; pieces without features are an error naming them
    run as-plan --model "$D/m.ast" --repair "$T/ps.ast" --plans-only "$D/ftr.ast" -o "$T/none.ast"
    assert_success
    assert_output --partial "18 without measured costs"
    run as-plan --model "$D/m.ast" --repair "$T/meas.ast" --plans-only "$D/ft.ast" -o "$T/bad.ast"
    if as-show --kind plan "$T/meas.ast" | jq -e -s '[.[].pieces // [] | .[] | select(. != null and .[2] > 0)] | length > 0' > /dev/null; then
        [ "$status" -eq 1 ]
        assert_output --partial "has no features in the input"
    fi
}

# issue 36: the plans of size-greedy, "measured" by hand (each shard's cost its prediction,
# times f0 on shard 0), into $2; $1 the plans
measured_by_hand() {
    mp_edit "$1" "for r in kind('plan'): r['cost_ms'] = [x * (${3:-1} if k == 0 else 1) for k, x in enumerate(r['pred_ms'])]; r['cost_kind'] = 'measured'; r['cost_device'] = 'cpu'" > "$2"
}

@test "as-plan --repair --alg: labels as --export takes them; an imported plan is skipped under a filter, refused without" {
    as-plan --alg all --model "$D/m.ast" --split-tables --plans-only "$D/ftr.ast" -o "$T/ps.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/ps.ast" -o "$T/meas.ast"
    run as-plan --alg =cost-greedy+split --model "$D/m.ast" --repair "$T/meas.ast" --plans-only "$D/ftr.ast" -o "$T/r1.ast"
    assert_success
    [ "$(as-show --kind plan "$T/r1.ast" | jq -r .alg | sort | uniq -c | awk '{print $2, $1}')" = "cost-greedy+split+refine+measured 3" ]
    as-plan --alg cost-greedy+split,=lookup-greedy+split --model "$D/m.ast" --repair "$T/meas.ast" --plans-only "$D/ftr.ast" -o "$T/r2.ast"
    [ "$(as-show --kind plan "$T/r2.ast" | jq -r .alg | sort -u | tr '\n' ' ')" = "cost-greedy+split+refine+measured lookup-greedy+split+refine+measured " ]
    # a plan not of ours (TorchRec's own, imported): skipped with --alg, an error without
    mp_edit "$T/meas.ast" "for c in kind('plan'):
    if c['alg'] == 'random+split': c['alg'] = 'torchrec-own'" > "$T/own.ast"
    run as-plan --alg cost-greedy --model "$D/m.ast" --repair "$T/own.ast" --plans-only "$D/ftr.ast" -o "$T/r3.ast"
    assert_success
    [ "$(as-show --kind plan "$T/r3.ast" | jq -r .alg | sort -u)" = "cost-greedy+split+refine+measured" ]
    run as-plan --model "$D/m.ast" --repair "$T/own.ast" --plans-only "$D/ftr.ast" -o "$T/r4.ast"
    assert_failure 1
    assert_output --partial "unknown algorithm 'torchrec-own'"
    # ALG+split and ALG+split+refine would both be repaired as ALG+split+refine+measured: refused
    as-plan --alg cost-greedy --model "$D/m.ast" --split-tables --refine --plans-only "$D/ftr.ast" -o "$T/pr.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/pr.ast" -o "$T/measr.ast"
    cat "$T/meas.ast" "$T/measr.ast" > "$T/both.ast"
    run as-plan --alg cost-greedy --model "$D/m.ast" --repair "$T/both.ast" --plans-only "$D/ftr.ast" -o "$T/r5.ast"
    assert_failure 1
    assert_output --partial "its repair would be labelled cost-greedy+split+refine+measured, as the repair of cost-greedy+split of the same task: pick one with --alg"
    [ ! -e "$T/r5.ast" ]
    run as-plan --alg =cost-greedy+split+refine --model "$D/m.ast" --repair "$T/both.ast" --plans-only "$D/ftr.ast" -o "$T/r5.ast"
    assert_success
    # a bad label is a usage error
    run as-plan --alg size-greedy,= --model "$D/m.ast" --repair "$T/meas.ast" "$D/ftr.ast"
    assert_failure 2
    run as-plan --alg nosuch+split --model "$D/m.ast" --repair "$T/meas.ast" "$D/ftr.ast"
    assert_failure 2
}

@test "as-plan --repair keeps the plan's own cap: plans made under --mem-cap are refined under it, one over it is refused (issue 36)" {
    as-plan --alg size-greedy --model "$D/m.ast" --min-model-r2 off --mem-cap 700000 --plans-only "$D/ftr.ast" -o "$T/cap.ast" 2> /dev/null
    [ "$(as-show --kind plan "$T/cap.ast" | jq -r '[.mem_cap, .feasible] | @tsv' | sort -u)" = $'700000\ttrue' ]
    # shard 0 measured ten times slower than predicted: the search moves work off it
    measured_by_hand "$T/cap.ast" "$T/mcap.ast" 10
    run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/mcap.ast" --plans-only "$D/ftr.ast" -o "$T/rep.ast"
    assert_success
    [ "$(as-show --kind plan "$T/rep.ast" | jq -r '[.mem_cap, .feasible] | @tsv' | sort -u)" = $'700000\ttrue' ]
    [ "$(as-show --kind plan "$T/rep.ast" | jq -s '[.[].mem_bytes[] | select(. > 700000)] | length')" = 0 ]
    # --mem-cap still overrides the plan's own
    run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/mcap.ast" --mem-cap 2M --plans-only "$D/ftr.ast" -o "$T/rep2.ast"
    assert_success
    [ "$(as-show --kind plan "$T/rep2.ast" | jq -r .mem_cap | sort -u)" = 2097152 ]
    # a measured plan over its own cap: exit 1 naming it, as --export does
    mp_edit "$T/mcap.ast" "kind('plan')[0]['mem_cap'] = 1000" > "$T/over.ast"
    run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/over.ast" --plans-only "$D/ftr.ast" -o "$T/rep3.ast"
    assert_failure 1
    assert_output --partial "$T/over.ast: record 2: plan of task 0 (size-greedy): shard 0 holds"
    assert_output --partial "bytes, over the 1000-byte cap of the plan"
    [ ! -e "$T/rep3.ast" ]
}

@test "as-plan --export, --repair, as-eval and as-costfit --predict check a plan's pieces against the tables' sizes from the features (issue 36)" {
    rows=$(feats "$D/ftr.ast" | jq -s '[.[] | select(.id == 5 and .piece == null)][0].rows')
    dim=$(feats "$D/ftr.ast" | jq -s '[.[] | select(.id == 5 and .piece == null)][0].dim')
    half=$(( (rows + 1) / 2 ))
    as-plan --alg size-greedy --model "$D/m.ast" --min-model-r2 off --plans-only "$D/ftr.ast" -o "$T/p.ast" 2> /dev/null
    # one measured plan whose only entry is one piece of table 5
    one() {
        mp_edit "$T/p.ast" "p = kind('plan')[0]; p['tables'] = [5]; p['assign'] = [0]; p['pieces'] = [$1]; p.pop('item_pred_ms', None); p['mem_cap'] = 0; p['cost_ms'] = [1.0] * p['shards']; p['cost_kind'] = 'measured'; recs[:] = [r for r in recs if r.get('kind') != 'plan' or r is p]"
    }
    one "[0, $dim, 0, $half]" > "$T/half.ast"
    one "[0, $((dim / 2)), 0, $rows]" > "$T/col.ast"
    one "[0, $((2 * dim)), 0, $rows]" > "$T/past.ast"
    one "[0, $dim, 0, $rows]" > "$T/all.ast"
    gap_half="table 5: its pieces cover columns 0..$dim x rows 0..$half of $dim x $rows (a gap)"
    gap_col="table 5: its pieces cover columns 0..$((dim / 2)) x rows 0..$rows of $dim x $rows (a gap)"
    past="piece t5[c 0:$((2 * dim)), r 0:$rows) lies outside table 5 ($rows rows x $dim columns)"
    for f in half col past; do
        want=gap_$f; [ $f = past ] && want=past
        msg="$T/$f.ast: record 2: plan of task 0 (size-greedy): ${!want}"
        run as-plan --export "$T/$f.ast" --format torchrec "$D/ftr.ast"
        assert_failure 1
        assert_output "as-plan: $msg"
        run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/$f.ast" --plans-only "$D/ftr.ast" -o "$T/$f.out"
        assert_failure 1
        assert_output "as-plan: $msg"
        [ ! -e "$T/$f.out" ]
        run as-eval "$D/ftr.ast" "$T/$f.ast"
        assert_failure 1
        assert_output "as-eval: $msg"
        run as-costfit --predict "$D/m.ast" "$D/ftr.ast" "$T/$f.ast" -o "$T/$f.pred"
        assert_failure 1
        assert_output "as-costfit: $msg"
        [ ! -e "$T/$f.pred" ]
    done
    # the piece that is the whole table passes everywhere
    run as-plan --export "$T/all.ast" --format torchrec "$D/ftr.ast"
    assert_success
    run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/all.ast" --plans-only "$D/ftr.ast" -o "$T/all.out"
    assert_success
    run as-eval "$D/ftr.ast" "$T/all.ast"
    assert_success
    run as-costfit --predict "$D/m.ast" "$D/ftr.ast" "$T/all.ast" -o "$T/all.pred"
    assert_success
}

@test "as-plan --repair refuses measured costs that are not numbers >= 0 or nil, naming cost_ms[k], as as-eval does (issue 36)" {
    as-plan --alg size-greedy --model "$D/m.ast" --min-model-r2 off --plans-only "$D/ftr.ast" -o "$T/p.ast" 2> /dev/null
    i=0
    for v in "[nan, 1.0]" "[-1.0, 1.0]" "['x', 1.0]" "[inf, 1.0]" "[nan, nan]"; do
        i=$((i + 1))
        measured_by_hand "$T/p.ast" "$T/mm.ast"
        mp_edit "$T/mm.ast" "kind('plan')[0]['cost_ms'] = $v" > "$T/h$i.ast"
        run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/h$i.ast" --plans-only "$D/ftr.ast" -o "$T/h$i.out"
        assert_failure 1
        assert_output --regexp "^as-plan: $T/h$i.ast: record 2: plan of task 0: (measured )?cost_ms\[0\] is (not finite|negative|not a number or nil)"
        [ ! -e "$T/h$i.out" ]
        rep=${output#as-plan: }
        run as-eval "$T/h$i.ast"
        assert_failure 1
        [ "${output#as-eval: }" = "$rep" ]
    done
}

@test "as-plan --repair and --export, as-bench and as-costfit --predict read plans through as-eval's strict reader: the same hostile record refused the same way (issue 36)" {
    as-plan --alg size-greedy --model "$D/m.ast" --min-model-r2 off --split-tables --plans-only "$D/ftr.ast" -o "$T/p.ast" 2> /dev/null
    measured_by_hand "$T/p.ast" "$T/mm.ast"
    i=0
    for e in "p['alg'] = 'size-greedy\\x00x'" "p['alg'] = 'size-greedy+split' + 'x' * 60" "p['alg'] = '+' * 10000" \
             "p['task'] = None" "p['task'] = -1" "p['shards'] = 3; p['cost_ms'] = p['cost_ms'] + [1.0]" \
             "p['mem_cap'] = -1" "p['names'] = ['a']" "p['pred_ms'] = [1.0]" "p['item_pred_ms'] = [1.0]" \
             "p['mem_terms'] = {'weights': [1], 'optimizer': [1], 'pipeline': [1]}"; do
        i=$((i + 1))
        mp_edit "$T/mm.ast" "p = kind('plan')[0]; $e" > "$T/h$i.ast"
        run as-eval "$T/h$i.ast"
        assert_failure 1
        assert_output --partial "as-eval: $T/h$i.ast: record 2: plan"
        ev=${output#as-eval: }
        run as-plan --model "$D/m.ast" --min-model-r2 off --repair "$T/h$i.ast" --plans-only "$D/ftr.ast" -o "$T/h$i.out"
        assert_failure 1
        [ "$output" = "as-plan: $ev" ]
        [ ! -e "$T/h$i.out" ]
        run as-plan --export "$T/h$i.ast" --format text "$D/ftr.ast"
        assert_failure 1
        [ "$output" = "as-plan: $ev" ]
        # the measuring tools read the same way what they pass on: as-bench before it
        # measures (it replaces the cost fields), as-costfit --predict (it replaces pred_ms)
        run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/h$i.ast" -o "$T/b$i.ast"
        assert_failure 1
        [ "$output" = "as-bench: $ev" ]
        [ ! -e "$T/b$i.ast" ]
        case "$e" in *"'pred_ms'"*) continue ;; esac
        run as-costfit --predict "$D/m.ast" "$D/ftr.ast" "$T/h$i.ast" -o "$T/c$i.ast"
        assert_failure 1
        [ "$output" = "as-costfit: $ev" ]
        [ ! -e "$T/c$i.ast" ]
    done
    # what they replace is not read: stale cost fields of another length are measured over,
    # a stale pred_ms predicted over; a bare plan (no task, no alg) is measured
    mp_edit "$T/mm.ast" "p = kind('plan')[0]; p['cost_ms'] = [1.0]; p['cost_pass_ms'] = 'x'; p['cost_noisy'] = 3" > "$T/stale.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/stale.ast" -o "$T/stale-b.ast"
    [ "$(as-show -k plan "$T/stale-b.ast" | jq -c '.cost_ms | length' | sort -u)" = 2 ]
    mp_edit "$T/mm.ast" "p = kind('plan')[0]; p['pred_ms'] = [1.0]" > "$T/stale2.ast"
    as-costfit --predict "$D/m.ast" "$D/ftr.ast" "$T/stale2.ast" -o "$T/stale-c.ast"
    [ "$(as-show -k plan "$T/stale-c.ast" | jq -c '.pred_ms | length' | sort -u)" = 2 ]
    mp_edit "$T/mm.ast" "p = kind('plan')[0]; del p['task']; del p['alg']" > "$T/bare.ast"
    as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/bare.ast" -o "$T/bare-b.ast"
    mp_edit "$T/mm.ast" "p = kind('plan')[0]; p['alg'] = ''" > "$T/empty.ast"
    run as-bench --tables "$D/pool.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q "$T/empty.ast" -o "$T/empty-b.ast"
    assert_failure 1
    assert_output --partial "'alg' is empty"
}
