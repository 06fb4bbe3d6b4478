#!/usr/bin/env bats
# The Python helpers of `make plan` (pipelines/plan_choose.py, plan_train.py, plan_scale.py,
# torchrec_plan.py --check, torchrec_planner.py's arguments) on hostile input, issue 50 ("nothing
# lost, nothing silently wrong"): every error one line `SCRIPT: ...` with its exit code (1 bad
# data, 2 usage, 3 standard output or an output file that cannot be written), never a
# traceback, and refused up front rather than late: plan_choose.py takes as-eval's CSV of
# plans measured in one pass (no per-pass columns) and labels holding commas (quoted);
# plan_train.py refuses a config whose tables mix weight types before anything is measured and
# reads data_type / optimizer in any case, as as-convert does; plan_scale.py refuses sizes that
# are no integers (1e400, NaN); torchrec_planner.py's summary escapes control characters in
# table names.
load test_helper/common

P="$ROOT/pipelines"

# once per file: a tiny model's plans measured in one pass and in two (as-bench, the fake
# noise quiet), and as-eval's CSV plans tables of both, communication charged and not
setup_file() {
    D="$BATS_FILE_TMPDIR"
    cat > "$D/tiny.json" <<'JSON'
{"name": "tiny", "module_path": "model.ebc",
 "topology": {"world_size": 2, "local_size": 2, "hbm_gib": 1, "batch_size_per_rank": 64, "optimizer": "sgd"},
 "tables": [
  {"name": "big", "num_embeddings": 2000, "embedding_dim": 16, "pooling_factor": 4},
  {"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2},
  {"name": "b", "num_embeddings": 500, "embedding_dim": 16, "pooling_factor": 1},
  {"name": "c", "num_embeddings": 100, "embedding_dim": 8, "pooling_factor": 1}
 ]}
JSON
    as-convert --config "$D/tiny.json" -o "$D/pool.ast"
    as-features "$D/pool.ast" --model-task -o "$D/ft.ast"
    as-plan --alg lookup-greedy,size-greedy,random --plans-only "$D/ft.ast" -o "$D/plans.ast"
    for n in 1 2; do
        AS_BENCH_FAKE_NOISE=quiet as-bench --tables "$D/pool.ast" --device cpu --passes $n --window 0 \
            --warmup 1 --runs 3 --trim 1 --flush 1M "$D/plans.ast" -o "$D/m$n.ast" 2> /dev/null
        as-eval --format csv --table plans "$D/m$n.ast" -o "$D/c$n.csv"
        as-eval --comm-gbps 0 --format csv --table plans "$D/m$n.ast" -o "$D/k$n.csv"
    done
}

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$BATS_FILE_TMPDIR"
}

# no_traceback: $output holds no Python traceback
no_traceback() {
    refute_output --partial Traceback
    refute_output --partial 'File "'
}

# one_line PREFIX: $output is one line, starting with PREFIX (the script's name and ': ')
one_line() {
    no_traceback
    [ "${#lines[@]}" -eq 1 ] || fail "not one line: $output"
    [[ "${lines[0]}" == "$1"* ]] || fail "not a '$1' line: ${lines[0]}"
}

# run_closed CMD...: CMD with standard output closed; run_full CMD...: to /dev/full
run_closed() { run bash -c '"$@" >&-' _ "$@"; }
run_full() { run bash -c '"$@" > /dev/full' _ "$@"; }

# edit_csv IN OUT 'CODE': as-eval's CSV IN with its rows (`rows`, a list of dicts, and `head`,
# the header) edited by the Python statements CODE, written properly quoted to OUT
edit_csv() {
    python3 - "$1" "$2" "$3" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    rd = csv.DictReader(f)
    head, rows = list(rd.fieldnames), list(rd)
exec(sys.argv[3])
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, head, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
PY
}

# ---- plan_choose.py ----------------------------------------------------------------------

@test "plan_choose.py: as-eval's CSV of plans measured in one pass (no per-pass columns) is chosen from" {
    # as-eval leaves the per-pass columns out for one pass
    run head -1 "$D/c1.csv"
    refute_output --partial "passes"
    head -1 "$D/c2.csv" | grep -q ",passes,balance_pass_lo,balance_pass_hi,pass_flip,max_ms_passes"
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --out-alg "$T/a"
    assert_success
    no_traceback
    assert_output --partial "## The chosen plan: \`$(cat "$T/a")\`"
    refute_output --partial "passes made apart"
    grep -qx "0,0,test,$(cat "$T/a"),.*" "$D/c1.csv"
    # the rule on the one pass's figures: the fastest, or a simpler one within the tie (random's
    # plan relabelled as a split one)
    edit_csv "$D/c1.csv" "$T/c.csv" 'ms = {"random": "0.499", "lookup-greedy": "0.5", "size-greedy": "1.0"}
for r in rows: r["max_ms"] = ms[r["alg"]]; r["alg"] = {"random": "cost-greedy+split"}.get(r["alg"], r["alg"])'
    edit_csv "$D/k1.csv" "$T/k.csv" 'for r in rows: r["alg"] = {"random": "cost-greedy+split"}.get(r["alg"], r["alg"])'
    run python3 "$P/plan_choose.py" "$T/c.csv" "$T/k.csv" --tie 0 --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = cost-greedy+split ]
    run python3 "$P/plan_choose.py" "$T/c.csv" "$T/k.csv" --tie 0.01 --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = lookup-greedy ]
    assert_output --partial "the simplest plan within 1 % of the fastest (\`cost-greedy+split\`, 0.4990 ms)"
    # two passes as before, and three: each pass's slowest shard read
    run python3 "$P/plan_choose.py" "$D/c2.csv" "$D/k2.csv"
    assert_success
    assert_output --partial "The plans were measured in 2 passes made apart"
    edit_csv "$D/c2.csv" "$T/c3.csv" 'for r in rows: r["passes"] = "3"; r["max_ms_passes"] = ";".join([r["max_ms"]] * 3)'
    run python3 "$P/plan_choose.py" "$T/c3.csv" "$T/c3.csv"
    assert_success
    assert_output --partial "The plans were measured in 3 passes made apart"
}

@test "make plan PASSES=1: measured once, the choice made on as-eval's table without per-pass columns" {
    run timeout 600 env AS_BENCH_FAKE_NOISE=quiet make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$D/tiny.json" \
        OUT="$T/out" NCOST=20 MAXT=3 BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 1M" DEVICE=cpu PROGRESS= \
        MODEL_GATE= TORCHREC_SRC= PASSES=1
    assert_success
    no_traceback
    assert_output --partial "## The chosen plan: \`$(cat "$T/out/plan-tiny/chosen.txt")\`"
    refute_output --partial "passes made apart"
    [ "$(jq -r .alg "$T/out/plan-tiny/plan.json")" = "$(cat "$T/out/plan-tiny/chosen.txt")" ]
}

@test "plan_choose.py: a label holding a comma or quotes (a quoted CSV field) is read whole and chosen" {
    edit_csv "$D/c1.csv" "$T/c.csv" 'rows[0]["alg"] = "a,b"; rows[0]["max_ms"] = "0.01"; rows[1]["alg"] = "say \"hi\", x"'
    edit_csv "$D/k1.csv" "$T/k.csv" 'rows[0]["alg"] = "a,b"; rows[1]["alg"] = "say \"hi\", x"'
    grep -q '^0,0,test,"a,b",' "$T/c.csv"
    run python3 "$P/plan_choose.py" "$T/c.csv" "$T/k.csv" --out-alg "$T/a"
    assert_success
    no_traceback
    assert_output --partial '## The chosen plan: `a,b`'
    [ "$(cat "$T/a")" = "a,b" ]
    # loadable by label, one a line
    printf 'say "hi", x\n' > "$T/ld"
    run python3 "$P/plan_choose.py" "$T/c.csv" "$T/k.csv" --loadable "$T/ld" --out-alg "$T/a"
    assert_success
    [ "$(cat "$T/a")" = 'say "hi", x' ]
    assert_output --partial '`a,b` measured'
    # the comma unquoted (the row one field longer than the header): refused, saying so
    sed 's/^0,0,test,"a,b",/0,0,test,a,b,/' "$T/c.csv" > "$T/u.csv"
    run python3 "$P/plan_choose.py" "$T/u.csv" "$T/k.csv"
    assert_failure 1
    one_line "plan_choose: "
    assert_output --partial "plan_choose: $T/u.csv: line 2: 21 fields, the header has 20 (a label holding a comma must be quoted)"
}

@test "plan_choose.py: bad per-pass columns are bad data (exit 1) naming the line and the column" {
    bad() {
        edit_csv "$D/c2.csv" "$T/b.csv" "$1"
        run python3 "$P/plan_choose.py" "$T/b.csv" "$D/k2.csv"
        assert_failure 1
        one_line "plan_choose: $T/b.csv: "
        assert_output --partial "$2"
    }
    bad 'rows[0]["balance_pass_lo"] = "x"' "line 2 ($(sed -n 2p "$D/c2.csv" | cut -d, -f4)): balance_pass_lo 'x' is not a number"
    bad 'rows[1]["passes"] = "two"' "passes 'two' is not a count of passes"
    bad 'rows[1]["max_ms_passes"] = "1;x"' "max_ms_passes 'x' is not a number"
    bad 'rows[1]["max_ms_passes"] = "1;2;3"' "max_ms_passes '1;2;3' is not 2 numbers (passes 2) separated by ';'"
    bad 'rows[2]["balance_pass_hi"] = "inf"' "balance_pass_hi 'inf' is not a number"
    bad 'rows[0]["max_ms"] = "nan"' "max_ms 'nan' is not a number"
    bad 'head.remove("balance_pass_hi")' "per-pass columns passes, balance_pass_lo without balance_pass_hi"
    bad 'rows[0]["feasible"] = "yes"' "feasible 'yes' is neither true nor false"
}

@test "plan_choose.py: unreadable input is one line and exit 1: non-UTF-8, empty, a header alone, missing, a directory" {
    { printf '\xff\xfe'; cat "$D/c1.csv"; } > "$T/n.csv"
    run python3 "$P/plan_choose.py" "$T/n.csv" "$D/k1.csv"
    assert_failure 1
    one_line "plan_choose: $T/n.csv: not UTF-8 text (byte 1)"
    : > "$T/e.csv"
    run python3 "$P/plan_choose.py" "$T/e.csv" "$D/k1.csv"
    assert_failure 1
    one_line "plan_choose: $T/e.csv: empty: not as-eval's CSV plans table"
    head -1 "$D/c1.csv" > "$T/h.csv"
    run python3 "$P/plan_choose.py" "$T/h.csv" "$D/k1.csv"
    assert_failure 1
    one_line "plan_choose: $T/h.csv: no plan in the table"
    run python3 "$P/plan_choose.py" "$T/missing.csv" "$D/k1.csv"
    assert_failure 1
    one_line "plan_choose: $T/missing.csv: No such file or directory"
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --loadable "$T/missing"
    assert_failure 1
    one_line "plan_choose: $T/missing: No such file or directory"
    printf '\xff\n' > "$T/ld"
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --loadable "$T/ld"
    assert_failure 1
    one_line "plan_choose: $T/ld: not UTF-8 text"
    run python3 "$P/plan_choose.py" "$T" "$D/k1.csv"
    assert_failure 1
    one_line "plan_choose: $T: Is a directory"
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --bogus
    assert_failure 2
    no_traceback
}

@test "plan_choose.py: standard output and --out-alg that cannot be written are exit 3 (closed, /dev/full, a directory)" {
    run_full python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv"
    assert_failure 3
    one_line "plan_choose: standard output: No space left on device"
    run_closed python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv"
    assert_failure 3
    one_line "plan_choose: standard output: closed"
    run_full python3 "$P/plan_choose.py" --help
    assert_failure 3
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --out-alg /dev/full
    assert_failure 3
    assert_line "plan_choose: --out-alg /dev/full: No space left on device"
    no_traceback
    run python3 "$P/plan_choose.py" "$D/c1.csv" "$D/k1.csv" --out-alg "$T"
    assert_failure 3
    assert_line "plan_choose: --out-alg $T: Is a directory"
    no_traceback
}

# ---- plan_train.py -----------------------------------------------------------------------

# cfgt OPTIMIZER TYPE...: $T/c.json, a config of one table per TYPE (- : no data_type), the
# TYPEs given as JSON values
cfgt() {
    local opt=$1 i=0 tabs="" dt
    shift
    for dt in "$@"; do
        tabs="$tabs${tabs:+, }{\"name\": \"t$i\", \"num_embeddings\": 10, \"embedding_dim\": 4$([ "$dt" = - ] || echo ", \"data_type\": $dt")}"
        i=$((i + 1))
    done
    printf '{"topology": {"world_size": 2, "batch_size_per_rank": 8, "optimizer": %s}, "tables": [%s]}\n' "$opt" "$tabs" > "$T/c.json"
}

@test "plan_train.py: tables of several weight types are refused before measuring (exit 3), saying to give one" {
    cfgt '"sgd"' '"fp32"' '"fp16"' '"bf16"' -
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    one_line "plan_train: $T/c.json: tables of 3 weight types (bf16, fp16, fp32)"
    assert_output --partial "give WEIGHTS=fp32, fp16 or bf16"
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu --weights config
    assert_failure 3
    # one type given: measured in it; on a GPU auto is the config's too, refused alike
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu --weights fp32
    assert_success
    assert_output "fp32 sgd"
    run python3 "$P/plan_train.py" "$T/c.json" --device cuda
    assert_failure 3
    one_line "plan_train: $T/c.json: tables of 3 weight types (bf16, fp16, fp32)"
    # one type in two spellings is one type
    cfgt '"sgd"' '"fp16"' '"FP16"' '"Fp16"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_success
    assert_output "tables sgd"
    cfgt '"sgd"' '"fp32"' -
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_output "tables sgd"
}

@test "make plan: a config mixing weight types stops before the tables are made, plan_train.py saying why" {
    cfgt '"sgd"' '"fp32"' '"fp16"'
    run timeout 120 make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$T/c.json" OUT="$T/out" DEVICE=cpu \
        NCOST=10 MAXT=2 BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 1M" PROGRESS= TORCHREC_SRC= PASSES=1
    assert_failure
    assert_output --partial "plan_train: $T/c.json: tables of 2 weight types (fp16, fp32)"
    [ ! -e "$T/out/plan-c/pool.ast" ]
    [ ! -e "$T/out/plan-c/costs.ast" ]
}

@test "plan_train.py: data_type and optimizer in any case, as as-convert reads them; a non-string is one line, exit 1" {
    cfgt '"SGD"' '"FP32"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_success
    assert_output "tables sgd"
    as-convert --config "$T/c.json" -o /dev/null
    cfgt '"Exact_RowWise_Adagrad"' '"BF16"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_output "tables exact_rowwise_adagrad"
    run python3 "$P/plan_train.py" --report "$T/c.json" tables exact_rowwise_adagrad
    assert_success
    assert_output --partial "each table's weights in its config's type (bf16), updated by exact row-wise Adagrad"
    refute_output --partial "not of its own kernel"
    cfgt '"ADAGRAD"' '"FP32"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    assert_output --partial "its optimizer adagrad is not among the kernels'"
    cfgt '"sgd"' '"INT8"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    assert_output --partial "tables of int8 weights"
    # what as-convert refuses is a config it cannot read: exit 1, one line
    cfgt '"sgd"' 32
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/c.json: table 0 (\"t0\"): data_type: must be a string, not 32"
    run python3 "$P/plan_train.py" --report "$T/c.json" fp16 sgd
    assert_failure 1
    one_line "plan_train: $T/c.json: table 0 (\"t0\"): data_type: must be a string"
    cfgt '"sgd"' '["fp32"]'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/c.json: table 0 (\"t0\"): data_type: must be a string, not an array"
    cfgt '"sgd"' '"fp64"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/c.json: table 0 (\"t0\"): data_type: unknown value \"fp64\""
    cfgt 7 '"fp32"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/c.json: topology: optimizer: must be a string, not 7"
    cfgt '"sgd!"' '"fp32"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/c.json: topology: optimizer: unknown value"
}

@test "plan_train.py: hostile configs and arguments are one line with the right exit code, never a traceback" {
    conf() {
        printf '%s' "$1" > "$T/h.json"
        run python3 "$P/plan_train.py" "$T/h.json" --device cpu
        assert_failure 1
        one_line "plan_train: $T/h.json: $2"
    }
    conf '{"topology": {"world_size": 2}, "tables": [{"name": "a", "num_e' "not JSON"
    conf '[{"topology": {}}]' "the config must be a JSON object, not an array"
    conf '{"topology": [], "tables": [{}]}' "topology: must be an object, not an array"
    conf '{"topology": {}, "tables": {"a": {}}}' "tables: must be an array of 1 or more tables, not an object"
    conf '{"topology": {}, "tables": []}' "tables: must be an array of 1 or more tables, not an empty one"
    conf '{"topology": {}, "tables": [["fp32"]]}' "table 0: must be an object, not an array"
    conf '{"topology": {}, "tables": [{"num_embeddings": 1e400}]}' "not JSON: number 1e400 out of range"
    conf '{"topology": {}, "tables": [{"num_embeddings": NaN}]}' "not JSON: NaN is not JSON"
    conf '{"tables": [{}]}' "topology: missing (required)"
    printf '{"topology": {}, "tables": [{"data_type": "\xff"}]}' > "$T/h.json"
    run python3 "$P/plan_train.py" "$T/h.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/h.json: not UTF-8 text"
    run python3 "$P/plan_train.py" "$T" --device cpu
    assert_failure 1
    one_line "plan_train: $T: Is a directory"
    run python3 "$P/plan_train.py" "$T/missing.json" --device cpu
    assert_failure 1
    one_line "plan_train: $T/missing.json: No such file or directory"
    # arguments: exit 2; --report's values too
    cfgt '"sgd"' '"fp32"'
    run python3 "$P/plan_train.py" "$T/c.json" --device cpu --ngpu lots
    assert_failure 2
    one_line "plan_train: --ngpu: 'lots' is not a count of GPUs"
    run python3 "$P/plan_train.py" --report "$T/c.json" fp16 rmsprop
    assert_failure 2
    one_line "plan_train: --report: OPTIMIZER 'rmsprop' is not sgd, exact_rowwise_adagrad or adam"
    run python3 "$P/plan_train.py" --report "$T/c.json" fp64 sgd
    assert_failure 2
    one_line "plan_train: --report: WEIGHTS 'fp64' is not fp16, fp32, bf16 or tables"
    run python3 "$P/plan_train.py" --report "$T/missing.json" fp16 sgd
    assert_failure 1
    one_line "plan_train: $T/missing.json: No such file or directory"
    run python3 "$P/plan_train.py" --report "$T/c.json" fp16
    assert_failure 2
    no_traceback
    # standard output: closed or full is exit 3, both ways
    run_full python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    one_line "plan_train: standard output: No space left on device"
    run_closed python3 "$P/plan_train.py" "$T/c.json" --device cpu
    assert_failure 3
    one_line "plan_train: standard output: closed"
    run_full python3 "$P/plan_train.py" --report "$T/c.json" fp16 sgd
    assert_failure 3
    one_line "plan_train: standard output: No space left on device"
    run_closed python3 "$P/plan_train.py" --report "$T/c.json" fp16 sgd
    assert_failure 3
    one_line "plan_train: standard output: closed"
}

# ---- plan_scale.py -----------------------------------------------------------------------

# scfg WORLD BATCH ROWS DIM POOLING: $T/s.json, one table (the values as JSON text)
scfg() {
    printf '{"topology": {"world_size": %s, "batch_size_per_rank": %s}, "tables": [{"name": "a", "num_embeddings": %s, "embedding_dim": %s, "pooling_factor": %s}]}\n' "$@" > "$T/s.json"
}

@test "plan_scale.py: sizes that are no integers (1e400, NaN, Infinity, 64.5, a string, 0) are a config it cannot read, one line, exit 1" {
    bad() {
        scfg "$@"
        run python3 "$P/plan_scale.py" "$T/s.json" --device cpu
        assert_failure 1
        one_line "plan_scale: $T/s.json: cannot read the config ("
    }
    bad 2 64 1e400 16 1
    assert_output --partial "number 1e400 out of range"
    bad 2 64 1000 1e400 1
    bad 2 1e400 1000 16 1
    bad 1e400 64 1000 16 1
    bad 2 64 1000 16 1e400
    bad 2 64 NaN 16 1
    assert_output --partial "NaN is not JSON"
    bad 2 64 1000 Infinity 1
    bad 2 64 1000 16 -Infinity
    bad 2 64.5 1000 16 1
    assert_output --partial "topology: batch_size_per_rank: must be an integer of at least 1, not 64.5"
    bad 2 64 '"1000"' 16 1
    assert_output --partial "table 0 (\"a\"): num_embeddings: must be an integer of at least 1, not \"1000\""
    bad 0 64 1000 16 1
    assert_output --partial "topology: world_size: must be an integer of at least 1, not 0"
    bad 2 64 1000 16 '"x"'
    bad 2 64 1000 16 -1
    bad 2 64 1e3 16 1
    printf '{"topology": {"world_size": 2, "batch_size_per_rank": 64}, "tables": [[1]]}' > "$T/s.json"
    run python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_failure 1
    one_line "plan_scale: $T/s.json: cannot read the config (table 0: must be an object, not an array)"
    printf '{"topology": {"world_size": 2, "batch_size_per_rank": 64}, "tables": []}' > "$T/s.json"
    run python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_failure 1
    one_line "plan_scale: $T/s.json: cannot read the config (tables: must be an array of 1 or more tables, not an empty one)"
    # the good ones as before; a huge integer is one (as-convert says it is too large)
    scfg 2 64 1000 16 1
    run python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_success
    assert_output "0 0"
    scfg 2 64 100000000000000000000000000000 16 1
    run python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_output "1048576 0"
    # standard output: exit 3
    scfg 2 64 1000 16 1
    run_full python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_failure 3
    one_line "plan_scale: standard output: No space left on device"
    run_closed python3 "$P/plan_scale.py" "$T/s.json" --device cpu
    assert_failure 3
    one_line "plan_scale: standard output: closed"
    run python3 "$P/plan_scale.py" "$T/s.json" --device cpu --ngpu x
    assert_failure 2
    no_traceback
}

@test "plan_scale.py --report: bad arguments exit 2, bad records exit 1 naming the line, standard output exit 3; names escaped" {
    scfg 2 64 1000 16 1
    F='{"kind": "features", "id": 0, "name": "a", "rows": 1000, "dim": 16}'
    rep() { run python3 "$P/plan_scale.py" --report "$T/s.json" "$@"; }
    rep 500 32 <<< "$F"
    assert_success
    assert_output --partial "**Rows capped at 500** (as-bench --row-cap; ROW_CAP): 1 table above it, a (1000 rows)"
    assert_output --partial "**Measured at a batch of 32** (BATCH), not the config's 128"
    rep x 0 <<< "$F"
    assert_failure 2
    one_line "plan_scale: --report: CAP 'x' is not a number (0: none)"
    rep 0 -5 <<< "$F"
    assert_failure 2
    one_line "plan_scale: --report: BATCH '-5' is not a number"
    rep 500 0 <<< '{"kind": "feat'
    assert_failure 1
    one_line "plan_scale: standard input: line 1: not JSON"
    rep 500 0 <<< "$F
[1, 2]"
    assert_failure 1
    one_line "plan_scale: standard input: line 2: not a record (a JSON object) but an array"
    rep 500 0 <<< '{"kind": "features", "id": 0}'
    assert_failure 1
    one_line "plan_scale: standard input: line 1: rows: missing (required)"
    rep 500 0 <<< '{"kind": "features", "rows": 5}'
    assert_failure 1
    one_line "plan_scale: standard input: line 1: id: missing (required)"
    rep 500 0 <<< '{"kind": "features", "id": 0, "rows": 1e400}'
    assert_failure 1
    one_line "plan_scale: standard input: line 1: not JSON: number 1e400 out of range"
    rep 500 0 <<< '{"kind": "features", "id": 0, "rows": "many"}'
    assert_failure 1
    one_line "plan_scale: standard input: line 1: rows: must be an integer of at least 1"
    printf '\xff\n' > "$T/bin"
    rep 500 0 < "$T/bin"
    assert_failure 1
    one_line "plan_scale: standard input: line 1: not UTF-8 text (byte 1)"
    run bash -c 'python3 "$1" --report "$2" 500 0 <&-' _ "$P/plan_scale.py" "$T/s.json"
    assert_failure 1
    one_line "plan_scale: standard input: closed"
    rep 500 0 < /dev/null
    assert_success
    # the config unreadable, or /dev/full
    run python3 "$P/plan_scale.py" --report "$T/missing.json" 0 32 <<< "$F"
    assert_failure 1
    one_line "plan_scale: $T/missing.json: cannot read the config (No such file or directory)"
    printf '%s\n' "$F" > "$T/f.jsonl"
    run bash -c 'python3 "$1" --report "$2" 500 0 < "$3" > /dev/full' _ "$P/plan_scale.py" "$T/s.json" "$T/f.jsonl"
    assert_failure 3
    one_line "plan_scale: standard output: No space left on device"
    # a name with control characters reaches the report escaped
    rep 500 0 <<< '{"kind": "features", "id": 0, "name": "a\u001b[31m\nb", "rows": 1000}'
    assert_success
    assert_output --partial 'a\x1b[31m\nb (1000 rows)'
    [[ "$output" != *$'\e'* ]]
}

# ---- torchrec_plan.py --check --------------------------------------------------------------

@test "torchrec_plan.py --check: standard output closed or full is exit 3, standard input closed exit 1, --help to /dev/full exit 3" {
    as-plan --export "$D/plans.ast" --task 0 --alg =random --format torchrec "$D/ft.ast" -o "$T/p.json"
    run python3 "$P/torchrec_plan.py" --check --config "$D/tiny.json" "$T/p.json"
    assert_success
    run_closed python3 "$P/torchrec_plan.py" --check --config "$D/tiny.json" "$T/p.json"
    assert_failure 3
    one_line "torchrec_plan: standard output: closed"
    run_full python3 "$P/torchrec_plan.py" --check --config "$D/tiny.json" "$T/p.json"
    assert_failure 3
    one_line "torchrec_plan: standard output: No space left on device"
    run bash -c 'python3 "$1" --check --config "$2" - <&-' _ "$P/torchrec_plan.py" "$D/tiny.json"
    assert_failure 1
    one_line "torchrec_plan: standard input: closed"
    run_full python3 "$P/torchrec_plan.py" --help
    assert_failure 3
    one_line "torchrec_plan: standard output: No space left on device"
    run_closed python3 "$P/torchrec_plan.py" --help
    assert_failure 3
    # stderr closed: still the exit code, nothing on standard output
    run bash -c 'python3 "$1" --check "$2" 2>&-' _ "$P/torchrec_plan.py" "$T/missing.json"
    assert_failure 1
    assert_output ""
}

# ---- torchrec_planner.py -------------------------------------------------------------------

# planner ARGS...: torchrec_planner.py with the test double of TorchRec (needs a python3 with
# torch: skipped without)
planner() {
    local py
    py=$(torch_python) || skip "no python3 with torch (python3-torch: make deps)"
    run env PYTHONDONTWRITEBYTECODE=1 "$py" "$P/torchrec_planner.py" --torchrec-src "$ROOT/tests/tools/fake_torchrec" "$@"
}

@test "torchrec_planner.py: control characters in table names never reach the terminal: the summary escapes them" {
    mp_edit "$D/ft.ast" 'for r in kind("features"): r["name"] = r["name"] + "\x1b[31m\u2028\x85z" if r.get("name") else None' > "$T/ctl.ast"
    planner "$T/ctl.ast" --split all -o "$T/o.json"
    assert_success
    no_traceback
    assert_output --partial 'big\x1b[31m\u2028\x85z'
    [[ "$output" != *$'\e'* ]] || fail "an escape character reached the output"
    [[ "$output" != *$'\u2028'* ]] || fail "U+2028 reached the output"
    [[ "$output" != *$'\u0085'* ]] || fail "U+0085 reached the output"
    # the plan keeps the names as they are (JSON-escaped)
    [ "$(jq -r '.plan[.module] | keys[]' "$T/o.json" | grep -c $'\e\\[31m')" -eq 4 ]
}

@test "torchrec_planner.py: hostile arguments are one line with exit 2 or 3, never a traceback" {
    planner "$D/ft.ast" --alg $'\xff' -o "$T/o.json"
    assert_failure 2
    one_line "torchrec_planner: --alg: '\\udcff' is not a plan label"
    planner "$D/ft.ast" --alg $'a\xc2\x85' -o "$T/o.json"
    assert_failure 2
    one_line "torchrec_planner: --alg: "
    # standard output (no -o) closed: refused before planning; standard input closed
    local py
    py=$(torch_python)
    run bash -c '"$1" "$2" "$3" --torchrec-src "$4" --split all >&-' _ "$py" "$P/torchrec_planner.py" "$D/ft.ast" "$ROOT/tests/tools/fake_torchrec"
    assert_failure 3
    one_line "torchrec_planner: standard output: closed (give -o FILE)"
    run bash -c '"$1" "$2" --torchrec-src "$3" --split all -o "$4" <&-' _ "$py" "$P/torchrec_planner.py" "$ROOT/tests/tools/fake_torchrec" "$T/o.json"
    assert_failure 1
    one_line "torchrec_planner: standard input: closed"
    run_full "$py" "$P/torchrec_planner.py" --help
    assert_failure 3
    one_line "torchrec_planner: standard output: No space left on device"
    run_closed "$py" "$P/torchrec_planner.py" --help
    assert_failure 3
    one_line "torchrec_planner: standard output: closed"
}
