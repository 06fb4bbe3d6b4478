# common.bash - shared set-up for the bats suite.
# AS_BIN / AS_TOOLS point at the binaries under test (default: bin/ and build/tools/).
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BIN="${AS_BIN:-$ROOT/bin}"
TOOLS="${AS_TOOLS:-$ROOT/build/tools}"
FIXTURES="${AS_FIXTURES:-$ROOT/tests/fixtures/torch-save}"
export PATH="$BIN:$TOOLS:$PATH"
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

setup() {
    T="$BATS_TEST_TMPDIR"
}

# run a command with stdout attached to a pseudo-terminal
run_tty() {
    run script -qec "$*" /dev/null
}

# a tiny stream made by hand: raw msgpack bytes (printf escapes) compressed with zstd
make_stream() {
    printf "$1" | zstd -q -c
}

# the msgpack header record {"kind":"header","schema":"autoshard","version":1,"tool":"bats"}
HDR='\x84\xa4kind\xa6header\xa6schema\xa9autoshard\xa7version\x01\xa4tool\xa4bats'

# strip the per-run fields (source, args) so streams from different producers compare
canon() {
    as-show --no-header --full "$@" | sed -e 's/"source":"[^"]*",//'
}

# kill_mid_write SIG DEST CMD...: run CMD, which writes DEST, in the background, send it SIG
# in the middle of writing DEST, let it run on and set $status to its exit status.
# "In the middle": stopped by the AS_TEST_OUT_STOP=1 hook of lib/records/output.c right after the
# first bytes reached a temporary; a build without the hook (or KILL_HOOK=0: a real race
# with a large output) is signalled as soon as DEST changes or a temporary DEST.tmp.*
# appears. SIGINT, SIGTERM and SIGHUP get their default
# action in CMD (a non-interactive shell starts background jobs with SIGINT ignored).
kill_mid_write() {
    local sig=$1 dest=$2 before pid state i
    shift 2
    before=$(cksum "$dest" 2> /dev/null || true)
    AS_TEST_OUT_STOP=${KILL_HOOK-1} env --default-signal=INT,TERM,HUP "$@" > "$BATS_TEST_TMPDIR/kill.out" 2> "$BATS_TEST_TMPDIR/kill.err" 3>&- &
    pid=$!
    for ((i = 0; i < 2000; i++)); do
        state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
        [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = T ] && break
        compgen -G "$dest.tmp.*" > /dev/null && break
        [ "$(cksum "$dest" 2> /dev/null || true)" != "$before" ] && break
        sleep 0.01
    done
    kill -s "$sig" "$pid" 2> /dev/null || true   # gone already: $status tells
    kill -s CONT "$pid" 2> /dev/null || true
    wait "$pid" && status=0 || status=$?
}

# after kill_mid_write: the tool died of SIG, DEST holds exactly OLDFILE's bytes and no
# temporary DEST.tmp.* is left
assert_killed_intact() {
    local sig=$1 dest=$2 old=$3
    [ "$status" -eq $((128 + $(kill -l "$sig"))) ] || fail "exit status $status, not death by SIG$sig ($(cat "$BATS_TEST_TMPDIR/kill.err"))"
    cmp -s "$dest" "$old" || fail "$dest changed: $(head -c 200 "$dest")"
    [ -z "$(compgen -G "$dest.tmp.*")" ] || fail "temporaries left: $(compgen -G "$dest.tmp.*")"
}

# a stream of hand-made records: the header, then one record per Python expression (see
# tests/test_helper/mp.py: arr(), u64(), nils(), nan, inf), compressed with zstd
mp_stream() {
    { printf "$HDR"; python3 "$ROOT/tests/test_helper/mp.py" "$@"; } | zstd -q -c
}

# mp_edit FILE 'CODE': FILE (a stream) with its records edited by the Python statements CODE
# (tests/test_helper/mp.py --edit: the list `recs`, kind(k), getarr(a), setarr(a, v)) to stdout
mp_edit() {
    zstd -dc "$1" | python3 "$ROOT/tests/test_helper/mp.py" --edit "$2" | zstd -q -c
}

# the first of $AS_PYTHON, /usr/bin/python3 (python3-torch), python3 that imports torch
# (pipelines/find-torch-python, as make plan, make demo and bench-kernel find it)
torch_python() {
    "$ROOT/pipelines/find-torch-python"
}
