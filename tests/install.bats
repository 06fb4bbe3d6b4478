#!/usr/bin/env bats
# make install / make uninstall: the tools, their man pages, as-torchrec-plan, the model
# configs and the docs under DESTDIR/PREFIX, and nothing else touched.
load test_helper/common

@test "make install: tools, man pages, the TorchRec helper, model configs, docs; uninstall removes them all" {
    before=$(cd "$ROOT" && git status --porcelain 2>/dev/null | md5sum)
    run make -s -C "$ROOT" install DESTDIR="$T/root" PREFIX=/opt/as
    assert_success
    p="$T/root/opt/as"
    for t in as-convert as-features as-bench as-costfit as-rl as-plan as-eval as-show as-torchrec-plan; do [ -x "$p/bin/$t" ]; done
    for t in as-convert as-features as-bench as-costfit as-rl as-plan as-eval as-show; do
        head -1 "$p/share/man/man1/$t.1" | grep -q "^\.TH $(echo "$t" | tr a-z A-Z) 1 "
    done
    grep -q -- '\\-\\-config FILE' "$p/share/man/man1/as-convert.1"
    [ -f "$p/share/autoshard/models/dlrm-dcnv2-criteo1tb.json" ] && [ -f "$p/share/autoshard/python/torchrec_plan.py" ]
    [ -f "$p/share/doc/autoshard/README.md" ] && [ -f "$p/share/doc/autoshard/FORMAT.md" ]
    # the installed pieces work together: a shipped config to a TorchRec plan, checked
    "$p/bin/as-convert" --config "$p/share/autoshard/models/dlrm-criteo-kaggle.json" --batch 64 |
        "$p/bin/as-features" --model-task | "$p/bin/as-plan" --alg size-lookup-greedy --format torchrec -o "$T/p.json"
    run "$p/bin/as-torchrec-plan" "$T/p.json"
    assert_success
    assert_output --partial '26 tables (26 table_wise)'
    if command -v man >/dev/null 2>&1; then
        run sh -c "MANWIDTH=80 man -l '$p/share/man/man1/as-plan.1' 2>/dev/null | head -3"
        assert_output --partial 'AS-PLAN(1)'
    fi
    # uninstall: no file left under the prefix, the work tree as it was
    run make -s -C "$ROOT" uninstall DESTDIR="$T/root" PREFIX=/opt/as
    assert_success
    [ "$(find "$T/root" -type f | wc -l)" -eq 0 ]
    [ "$(cd "$ROOT" && git status --porcelain 2>/dev/null | md5sum)" = "$before" ]
}
