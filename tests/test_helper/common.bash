# common.bash - shared set-up for the bats suite.
# AS_BIN / AS_TOOLS point at the binaries under test (default: bin/ and build/tools/).
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BIN="${AS_BIN:-$ROOT/bin}"
TOOLS="${AS_TOOLS:-$ROOT/build/tools}"
FIXTURES="${AS_FIXTURES:-$ROOT/../shared/fixtures/torch-save}"
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

# a stream of hand-made records: the header, then one record per Python expression (see
# tests/test_helper/mp.py: arr(), u64(), nils(), nan, inf), compressed with zstd
mp_stream() {
    { printf "$HDR"; python3 "$ROOT/tests/test_helper/mp.py" "$@"; } | zstd -q -c
}
