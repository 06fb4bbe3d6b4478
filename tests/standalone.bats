#!/usr/bin/env bats
# The repository stands alone: nothing the tests, the demo or CI run reads outside the clone.
load test_helper/common

@test "standalone: no test, pipeline, build or CI file reads a folder outside the repository" {
    cd "$ROOT"
    command -v git >/dev/null && [ -d .git ] || skip "not a git checkout"
    run sh -c "git ls-files -- tests pipelines cmd lib Makefile .ci | grep -v '^tests/standalone.bats$' |
               xargs grep -lE '\.\./shared|/work/shared' 2>/dev/null"
    [ -z "$output" ] || { echo "files that read outside the repository: $output"; false; }
}

@test "standalone: the torch.save fixtures and the H100 cost set are in the repository" {
    n=$(ls "$ROOT"/tests/fixtures/torch-save/pt/tensor_*_proto[1-5]*.pt | wc -l)
    [ "$n" -eq 100 ]
    for f in README.md costs.ast features-tasks.ast; do
        [ -s "$ROOT/pipelines/data/h100-full-s0/$f" ]
    done
    # the cost set reads whole: 1,214 cost records, 856 tables, 100 tasks
    run as-show -c "$ROOT/pipelines/data/h100-full-s0/costs.ast" "$ROOT/pipelines/data/h100-full-s0/features-tasks.ast"
    assert_success
    assert_line "cost	1214"
    assert_line "features	856"
    assert_line "task	100"
}

@test "standalone: the H200 measurements read whole and evaluate without a GPU" {
    D="$ROOT/pipelines/data/h200-full-s0"
    run as-show -c "$D/costs.ast"
    assert_success
    assert_line "cost	1456"
    run as-show -c "$D/measured-plans.ast" "$D/measured-plans-h100model.ast"
    assert_success
    assert_line "plan	220"
    assert_line "cost	1760"
    # every plan's shards are measured: as-eval finds 10 plans per algorithm and the singles
    run as-eval --singles "$D/costs.ast" --table summary "$D/measured-plans.ast"
    assert_success
    assert_output --partial "costs measured on NVIDIA H200"
    assert_line --regexp '^cost-greedy\+split\+refine +10 +0 '
}

@test "layers: every module of lib/ is in docs/ARCHITECTURE.md's layers, none includes up a layer or a later stage, no circle" {
    run python3 "$ROOT/tests/tools/check-layers.py" "$ROOT"
    assert_success
    assert_output --regexp '^check-layers: [0-9]+ modules in [0-9]+ folders of 4 layers, [0-9]+ includes between them: none up a layer, none against the order of 6 stages, no circle$'
    run python3 "$ROOT/tests/tools/check-layers.py" "$ROOT" --stages
    assert_success
    assert_line --regexp '^check-layers: stage arrows: [0-9]+ \(.*\); against the order: 0 \(none\); folder loops: 0 \(none\)$'
    # the check finds what it must: an include up a layer, one from a stage to a later stage,
    # a circle, a module in no layer, a file outside the folders, a folder of two layers, a
    # module in two folders
    cp -r "$ROOT/lib" "$ROOT/docs" "$T/"
    mkdir -p "$T/tests/tools"
    printf '#include "planrun.h"\n' >> "$T/lib/records/stream.c"
    printf '#include "stream.h"\n' >> "$T/lib/records/reclimits.c"
    printf '#include "evalinput.h"\n' >> "$T/lib/model/costpredict.c"
    printf 'int x;\n' > "$T/lib/plan/zzz.c"
    printf 'int y;\n' > "$T/lib/loose.c"
    cp "$T/lib/records/table.h" "$T/lib/plan/table.h"
    mv "$T/lib/core/errbuf.c" "$T/lib/plan/"
    mv "$T/lib/records/planners.def" "$T/lib/eval/"
    run python3 "$ROOT/tests/tools/check-layers.py" "$T"
    assert_failure 1
    assert_line "check-layers: lib/zzz: in no layer of docs/ARCHITECTURE.md"
    assert_line "check-layers: lib/records/stream.c (layer 2) includes planrun.h (layer 3): up a layer"
    assert_line --regexp '^check-layers: circle: .*reclimits -> stream.*'
    assert_line "check-layers: lib/model/costpredict.c (stage model) includes lib/eval/evalinput.h (stage eval, a later one): against the stages' order (data -> bench -> model -> plan -> rl -> eval)"
    run python3 "$ROOT/tests/tools/check-layers.py" "$T" --stages
    assert_line --regexp "^check-layers: stage arrows: [0-9]+ \(.*\); against the order: 1 \(model->eval\); folder loops: 1 \(eval<->model\)$"
    assert_line "check-layers: lib/loose.c: not in a folder of lib/ (one per layer and stage: docs/ARCHITECTURE.md)"
    assert_line "check-layers: lib/table: in folders ['plan', 'records']"
    assert_line "check-layers: lib/plan/: modules of layers [1, 2, 3] (a folder holds one layer's)"
    assert_line "check-layers: lib/records/planlabel.h (layer 2) includes lib/eval/planners.def (layer 3): up a layer"
}

@test "functions: none of lib/ or cmd/ over 80 lines of code; the check finds one that is" {
    run python3 "$ROOT/tests/tools/check-functions.py" "$ROOT"
    assert_success
    assert_output --regexp '^check-functions: [0-9]+ functions in [0-9]+ files, none over 80 lines$'
    mkdir -p "$T/lib/x" "$T/cmd"
    { printf 'static int long_one(void)\n{\n'; for i in $(seq 81); do printf '    x++;\n'; done; printf '}\n'; } > "$T/lib/x/a.c"
    run python3 "$ROOT/tests/tools/check-functions.py" "$T"
    assert_failure 1
    assert_output "check-functions: lib/x/a.c:1: static int long_one(void): 81 lines"
}

# a fresh machine has Python's standard library and what `make deps` installs, nothing more:
# tests/tools/py_imports.py finds every import of the tests' and pipelines' Python (.py files,
# python3 -c strings and heredocs in shell files) and its allow-list agrees with the Makefile's
@test "standalone: every Python module the tests import is the standard library's, the repository's or make deps'" {
    run /usr/bin/python3 "$ROOT/tests/tools/py_imports.py" "$ROOT"
    assert_success
    assert_output --regexp '^py_imports: [0-9]+ files, [0-9]+ Python sources, [0-9]+ imports: all from the standard library, the repository or make deps$'
}

@test "standalone: py_imports.py names the file and module of an import make deps does not provide" {
    mkdir -p "$T/tests/test_helper" "$T/pipelines"
    # the modules' names in variables, so that the check of the repository does not find them here
    mp=msgpack ym=yaml
    printf 'import json\nimport torch\nfrom mp import enc\n\n\ndef f():\n    import %s\n' "$mp" > "$T/pipelines/x.py"
    printf 'def enc(o):\n    return o\n' > "$T/tests/test_helper/mp.py"
    printf '%s\n' '@test "t" {' "    # it's a comment" "    python3 -c 'import sys, $ym; print(1)'" \
        '    run sh -c "printf x | python3 -c '"'"'import numpy, sys'"'"'"' '}' > "$T/tests/t.bats"
    printf '%s\n' 'f() {' '    python3 - "$1" <<'"'EOF'"'' 'import os' "from $mp import packb" 'EOF' '}' > "$T/tests/test_helper/h.bash"
    sed 's/python3-torch//' "$ROOT/Makefile" > "$T/Makefile"
    run /usr/bin/python3 "$ROOT/tests/tools/py_imports.py" "$T"
    assert_failure 1
    assert_line --regexp "^py_imports: pipelines/x\.py:7: imports 'msgpack': not the standard library"
    assert_line --regexp "^py_imports: tests/t\.bats:3: imports 'yaml': not the standard library"
    assert_line --regexp "^py_imports: tests/test_helper/h\.bash:4: imports 'msgpack': not the standard library"
    assert_line "py_imports: Makefile: make deps does not install python3-torch, which brings 'torch'"
    assert_line "py_imports: Makefile: make deps does not install python3-torch, which brings 'numpy'"
    [ "${#lines[@]}" -eq 5 ]
    # with the Makefile's packages, only the three imports
    cp "$ROOT/Makefile" "$T/Makefile"
    run /usr/bin/python3 "$ROOT/tests/tools/py_imports.py" "$T"
    assert_failure 1
    [ "${#lines[@]}" -eq 3 ]
    refute_output --partial Makefile
}
