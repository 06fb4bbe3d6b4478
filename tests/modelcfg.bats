#!/usr/bin/env bats
# Model configs (as-convert --config): the shipped configs, their tables' names and sizes
# through as-features and as-plan to the TorchRec JSON, and bad configs as clear errors.
load test_helper/common

MODELS="$ROOT/pipelines/models"

# write a config with the given tables (a JSON array body) and topology
cfg() {
    local topo="${2:-\"world_size\": 4, \"local_size\": 2, \"hbm_gib\": 16, \"batch_size_per_rank\": 64}"
    printf '{"name": "t", "module_path": "sparse.ebc", "topology": {%s}, "tables": [%s]}\n' "$topo" "$1" > "$T/c.json"
}

@test "as-convert --config: the shipped configs give their 26 named tables, sizes and fixed bags" {
    for m in dlrm-dcnv2-criteo1tb dlrm-criteo-kaggle; do
        run as-convert --config "$MODELS/$m.json" --batch 256 -o "$T/$m.ast"
        assert_success
        run as-show --count "$T/$m.ast"
        assert_line "model-config	1"
        assert_line "table	26"
        # names, rows and dims as the file gives them, in its order; every bag exactly its
        # pooling factor long (fixed bags)
        diff <(jq -c '.tables[] | [.name, .num_embeddings, .embedding_dim, .pooling_factor, .feature_names, .data_type]' "$MODELS/$m.json") \
             <(as-show --kind table "$T/$m.ast" | jq -c '[.name, .rows, .dim, (.lookups / .batch), .feature_names, .data_type]')
        run sh -c "as-show --kind table '$T/$m.ast' | jq -c '[.id, .batch]' | jq -s -c 'map(.[0]) == [range(26)] and (map(.[1]) | unique) == [256]'"
        assert_output true
    done
    # the topology record
    run sh -c "as-show --kind model-config '$T/dlrm-dcnv2-criteo1tb.ast' | jq -c '[.world_size, .local_size, .hbm_bytes, .batch_size_per_rank, .optimizer, .pipeline, .module_path, .tables, .batch, .dense_bytes]'"
    # dense_bytes: 6 x 4 bytes x 16044545 dense parameters (TorchRec's DLRM_DCN of the reference)
    assert_output '[8,8,85899345920,8192,"exact_rowwise_adagrad","train_sparse_dist","model.sparse_arch.embedding_bag_collection",26,256,385069080]'
    # without --batch: batch_size_per_rank x world_size bags; the same seed, the same lookups
    as-convert --config "$MODELS/dlrm-criteo-kaggle.json" -o "$T/k1.ast"
    as-convert --config "$MODELS/dlrm-criteo-kaggle.json" -o "$T/k2.ast"
    run sh -c "as-show --kind table '$T/k1.ast' | jq -c .batch | sort -u"
    assert_output 16384
    cmp <(canon "$T/k1.ast") <(canon "$T/k2.ast")
    as-convert --config "$MODELS/dlrm-criteo-kaggle.json" --seed 1 -o "$T/k3.ast"
    ! cmp -s <(canon "$T/k1.ast") <(canon "$T/k3.ast")
}

@test "as-convert --config: pooling, bags and skew of the synthetic lookups" {
    cfg '{"name": "geo", "num_embeddings": 100000, "embedding_dim": 8, "pooling_factor": 20},
         {"name": "uni", "num_embeddings": 100000, "embedding_dim": 8, "pooling_factor": 20, "bag": "fixed", "skew": 0},
         {"name": "hot", "num_embeddings": 100000, "embedding_dim": 8, "pooling_factor": 20, "bag": "fixed", "skew": 2}'
    as-convert --config "$T/c.json" | as-features -o "$T/f.ast"
    # geometric bags: mean about 20, lengths vary; fixed: every bag 20 long
    run sh -c "as-show --kind features '$T/f.ast' | jq -c '[.name, (.pooling > 18 and .pooling < 22), .max_bag > 20]'"
    assert_line '["geo",true,true]'
    assert_line '["uni",true,false]'
    # skew 0: the 5120 lookups over 100000 rows are nearly all distinct; skew 2: a few hot rows
    run sh -c "as-show --kind features '$T/f.ast' | jq -r 'select(.name != \"geo\") | [.name, .distinct] | @tsv'"
    uni=$(echo "$output" | awk '$1 == "uni" {print $2}')
    hot=$(echo "$output" | awk '$1 == "hot" {print $2}')
    [ "$uni" -gt 4800 ] && [ "$hot" -lt 1000 ]
}

@test "as-convert --config | as-features --model-task | as-plan --format torchrec: names, module path, local size" {
    as-convert --config "$MODELS/dlrm-criteo-kaggle.json" --batch 256 | as-features --model-task -o "$T/f.ast"
    # one test task: every table onto world_size shards under the HBM left by TorchRec's
    # reservation: int(0.85 x 80 GiB) - 6 x 4 x 475985 dense parameters - ceil(26 x 2048
    # ids x 8) x 20 = 73014444032 - 11423640 - 8519680
    run sh -c "as-show --kind task '$T/f.ast' | jq -c '[.split, .shards, .mem_cap, (.tables | length)]'"
    assert_output '["test",8,72994500712,26]'
    run sh -c "as-show --kind features '$T/f.ast' | jq -r .name | head -2"
    assert_output $'t_cat_0\nt_cat_1'
    as-plan --alg size-lookup-greedy,torchrec --format torchrec "$T/f.ast" -o "$T/p.json"
    run sh -c "jq -c '[.module, .local_size, (.plan[.module] | keys | length), (.plan[.module] | has(\"t_cat_25\"))]' '$T/p.json' | sort -u"
    assert_output '["model.sparse_arch.embedding_bag_collection",8,26,true]'
    run /usr/bin/python3 "$ROOT/pipelines/torchrec_plan.py" "$T/p.json"
    assert_success
    # TorchRec's defaults replicate two tiny tables (data_parallel: every rank)
    assert_line --partial 'task 0 torchrec model.sparse_arch.embedding_bag_collection: 26 tables (2 data_parallel, 24 table_wise)'
    # the options still win over the config
    as-plan --alg size-lookup-greedy --format torchrec --module ebc --local-size 4 "$T/f.ast" -o "$T/p2.json"
    run jq -c '[.module, .local_size]' "$T/p2.json"
    assert_output '["ebc",4]'
    # --shards and --mem-cap override the config's topology
    as-convert --config "$MODELS/dlrm-criteo-kaggle.json" --batch 64 | as-features --model-task --shards 4 --mem-cap 1G -o "$T/f4.ast"
    run sh -c "as-show --kind task '$T/f4.ast' | jq -c '[.shards, .mem_cap]'"
    assert_output '[4,1073741824]'
    # without a model-config record, --model-task needs --shards
    as-convert --synth --preset tiny -o "$T/pool.ast"
    run as-features --model-task "$T/pool.ast" -o "$T/x.ast"
    assert_failure 1
    assert_output --partial 'no model-config record'
    as-features --model-task --shards 3 "$T/pool.ast" -o "$T/x.ast"
    run sh -c "as-show --kind task '$T/x.ast' | jq -c '[.shards, (.tables | length)]'"
    assert_output '[3,32]'
    run as-features --model-task --tasks 3 "$T/pool.ast"
    assert_failure 2
}

@test "as-convert --config: a bad config is exit 1 naming the table and the field, nothing written" {
    ok='{"name": "a", "num_embeddings": 10, "embedding_dim": 4}'
    check() {   # check MESSAGE: the config in $T/c.json fails with exit 1 and MESSAGE
        run as-convert --config "$T/c.json" -o "$T/out.ast"
        assert_failure 1
        assert_output --partial "$1"
        [ ! -e "$T/out.ast" ]
    }
    cfg "$ok, {\"name\": \"b\", \"embedding_dim\": 4}"
    check 'c.json: table 1 ("b"): num_embeddings: missing (required)'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": -5, \"embedding_dim\": 4}"
    check 'table 1 ("b"): num_embeddings: must be an integer in 1..2147483647'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 0}"
    check 'table 1 ("b"): embedding_dim: must be an integer in 1..'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 2.5}"
    check 'table 1 ("b"): embedding_dim: must be an integer'
    cfg "$ok, {\"name\": \"c\", \"num_embeddings\": 5, \"embedding_dim\": 4}, {\"name\": \"a\", \"num_embeddings\": 5, \"embedding_dim\": 4}"
    check 'table 2 ("a"): name: repeats the name of table 0'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"data_type\": \"fp64\"}"
    check 'table 1 ("b"): data_type: unknown data type "fp64"'
    cfg "$ok, {\"name\": \"b\", \"num_embedding\": 5, \"embedding_dim\": 4}"
    check 'table 1 ("b"): unknown field "num_embedding"'
    cfg "$ok, {\"num_embeddings\": 5, \"embedding_dim\": 4}"
    check 'table 1: name: missing (required)'
    cfg "$ok, {\"name\": \"\", \"num_embeddings\": 5, \"embedding_dim\": 4}"
    check 'table 1: name: is empty'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"pooling_factor\": 2.5, \"bag\": \"fixed\"}"
    check 'table 1 ("b"): bag: "fixed" needs an integer pooling_factor'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"bag\": \"poisson\"}"
    check 'table 1 ("b"): bag: unknown value "poisson"'
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"feature_names\": []}"
    check 'table 1 ("b"): feature_names: must be an array of 1..64 strings'
    cfg "$ok"  '"world_size": 0, "batch_size_per_rank": 8'
    check 'topology: world_size: must be an integer in 1..65536'
    cfg "$ok"  '"world_size": 6, "local_size": 4, "batch_size_per_rank": 8'
    check 'topology: local_size: 4 does not divide world_size 6'
    cfg "$ok"  '"world_size": 2'
    check 'topology: batch_size_per_rank: missing (required)'
    cfg "$ok"  '"world_size": 2, "batch_size_per_rank": 8, "optimizer": "rmsprop"'
    check 'topology: optimizer: unknown value "rmsprop"'
    cfg "$ok"  '"world_size": 2, "batch_size_per_rank": 8, "hbm": 80'
    check 'topology: unknown field "hbm"'
    cfg "$ok"  '"world_size": 2, "batch_size_per_rank": 8, "dense_parameters": -1'
    check 'topology: dense_parameters: must be an integer in 0..'
    cfg "$ok"  '"world_size": 2, "batch_size_per_rank": 8, "dense_tensor_estimate": 1.5'
    check 'topology: dense_tensor_estimate: must be an integer in 0..'
    cfg "$ok"  '"world_size": 64, "batch_size_per_rank": 1000000'
    check 'topology: batch_size_per_rank: times world_size is above 16777216'
    printf '{"topology": {"world_size": 1, "batch_size_per_rank": 1}}' > "$T/c.json"
    check 'tables: missing (required)'
    printf '{"topology": {"world_size": 1, "batch_size_per_rank": 1}, "tables": []}' > "$T/c.json"
    check 'tables: must be an array of 1..'
    printf '[1, 2]' > "$T/c.json"
    check 'the config must be a JSON object'
    # JSON syntax: the line and column
    printf '{"topology": {"world_size": 1,\n  "batch_size_per_rank": 1,},\n "tables": []}' > "$T/c.json"
    check 'c.json: line 2, column 28:'
    printf '{"topology": {"world_size": 1, "batch' > "$T/c.json"
    check 'c.json: line 1, column'
    : > "$T/c.json"
    check 'c.json:'
    # a UTF-8 byte order mark before the config is named as such
    printf '\xef\xbb\xbf{"topology": {"world_size": 1, "batch_size_per_rank": 1}, "tables": [%s]}' "$ok" > "$T/c.json"
    check 'c.json: line 1, column 1: a UTF-8 byte order mark (bytes EF BB BF) starts the text: JSON has none'
    # lookups that no record could hold: refused up front naming the product, not an out of
    # memory after generating (65536 x 256 x 10000 = 1.7e11 lookups)
    cfg '{"name": "a", "num_embeddings": 100, "embedding_dim": 16, "pooling_factor": 10000}' '"world_size": 65536, "batch_size_per_rank": 256'
    SECONDS=0
    check 'c.json: table 0 ("a"): pooling_factor: 10000 x batch_size_per_rank 256 x world_size 65536 = 1.68e+11 lookups'
    assert_output --partial 'above the 2147483648-byte cap on one record (AS_MAX_RECORD)'
    [ "$SECONDS" -lt 10 ]
    cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 100, \"embedding_dim\": 16, \"pooling_factor\": 100}" '"world_size": 8, "batch_size_per_rank": 4096'
    run as-convert --config "$T/c.json" --batch 16777216 -o "$T/out.ast"
    assert_failure 1
    assert_output --partial 'table 1 ("b"): pooling_factor: 100 x batch 16777216 (--batch) = 1.68e+09 lookups'
    [ ! -e "$T/out.ast" ]
    AS_MAX_RECORD=1M run as-convert --config "$T/c.json" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial 'table 1 ("b"): pooling_factor: 100 x batch_size_per_rank 4096 x world_size 8 = 3.28e+06 lookups'
    assert_output --partial 'above the 1048576-byte cap'
    run as-convert --config "$T/c.json" -o "$T/out.ast"
    assert_success
    rm "$T/out.ast"
    run as-convert --config "$T/missing.json" -o "$T/out.ast"
    assert_failure 1
    assert_output --partial 'missing.json: No such file or directory'
}

@test "as-convert --config: usage errors are exit 2" {
    cfg '{"name": "a", "num_embeddings": 10, "embedding_dim": 4}'
    run as-convert --config "$T/c.json" --synth
    assert_failure 2
    assert_output --partial '--config excludes --synth'
    run as-convert --config "$T/c.json" --dims 8
    assert_failure 2
    assert_output --partial '--config takes its tables'
    run as-convert --config "$T/c.json" some.pt
    assert_failure 2
    assert_output --partial '--config takes no input file'
    # the config is an input: -o naming it (either order, another name for it, standard
    # input) is refused before any work and the config is kept
    cp "$T/c.json" "$T/c0.json"
    run as-convert --config "$T/c.json" -o "$T/c.json"
    assert_failure 2
    assert_output --partial "-o $T/c.json: it is also an input (--config $T/c.json)"
    cmp "$T/c.json" "$T/c0.json"
    run as-convert -o "$T/c.json" --config "$T/c.json"
    assert_failure 2
    assert_output --partial 'it is also an input'
    ln -s c.json "$T/link.json"
    run as-convert --config "$T/link.json" -o "$T/c.json"
    assert_failure 2
    assert_output --partial 'it is also an input'
    run sh -c "as-convert --config - -o '$T/c.json' < '$T/c.json'"
    assert_failure 2
    assert_output --partial 'it is also an input (<stdin>)'
    cmp "$T/c.json" "$T/c0.json"
    [ -z "$(ls "$T" | grep '\.tmp\.')" ]
    run as-convert --help
    assert_output --partial '--config FILE'
}

@test "TorchRec's memory model: the terms of a table and its row blocks by hand, the cap, the planners count it" {
    # a: 1000 x 16 fp32, 2 ids per sample (fixed bags); b: 8 x 32 fp16, 1 id; 64 samples per
    # rank, 4 ranks, Adam (2 x the weights), train_sparse_dist (2 x the input buffer)
    printf '%s\n' '{"topology": {"world_size": 4, "hbm_gib": 16, "batch_size_per_rank": 64, "optimizer": "adam", "pipeline": "train_sparse_dist"},' \
        '"tables": [{"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2, "bag": "fixed"},' \
        '{"name": "b", "num_embeddings": 8, "embedding_dim": 32, "data_type": "fp16", "pooling_factor": 1, "bag": "fixed"}]}' > "$T/m.json"
    as-convert --config "$T/m.json" | as-features --model-task --row-pieces 2 -o "$T/f.ast"
    run sh -c "as-show --kind features '$T/f.ast' | jq -c '[.id, .piece, .torchrec_memory.weights, .torchrec_memory.optimizer, .torchrec_memory.input, .torchrec_memory.output, .torchrec_memory.total]'"
    # weights 1000*16*4 = 64000, Adam 128000, input 2*64*4*8 = 4096, output 64*4*16*4 = 16384
    # (ephemeral under the pipeline: not counted), total 64000 + 128000 + 2*4096 = 200192;
    # a row-wise block: its 500 rows, input 2*64*8 = 1024 (TorchRec's row-wise io), 98048
    assert_line '[0,null,64000,128000,4096,16384,200192]'
    assert_line '[0,[0,16,0,500],32000,64000,1024,16384,98048]'
    # b: 8*32*2 = 512, 1024, input 64*4*8 = 2048, 512 + 1024 + 4096 = 5632
    assert_line '[1,null,512,1024,2048,16384,5632]'
    # the cap: int(0.85 * 16 GiB) = 14602888806 less the ids' 20 copies, ceil((128 + 64) * 8) * 20 = 30720
    run sh -c "as-show --kind task '$T/f.ast' | jq -c .mem_cap"
    assert_output 14602858086
    # the planners count it: a plan's shards hold the tables' totals
    as-plan --alg size-greedy --plans-only "$T/f.ast" -o "$T/p.ast"
    run sh -c "as-show --kind plan '$T/p.ast' | jq -c '.mem_bytes | map(select(. > 0)) | sort'"
    assert_output '[5632,200192]'
    # the text report: the memory of every shard by term, tables by name; the totals in MiB:
    # weights 64512, optimizer 129024, pipeline io 2 x (4096 + 2048) bytes
    run as-plan --alg size-greedy --format text "$T/f.ast"
    assert_success
    assert_line --partial "memory by term (TorchRec's model"
    assert_line --regexp '^  total +0\.062 +0\.123 +0\.012 +0\.196$'
    assert_output --partial ' a'
    # the same task from the features stream (as-features over its own output): the same cap
    run sh -c "as-features '$T/f.ast' --drop-tasks --model-task | as-show --kind task | jq -c .mem_cap"
    assert_output 14602858086
    # under a cap of 200191 bytes table a fits nowhere (its fp16 weights, 32000, would)
    as-features "$T/f.ast" --drop-tasks --model-task --mem-cap 200191 -o "$T/f2.ast"
    run sh -c "as-plan --alg size-greedy --plans-only '$T/f2.ast' 2>/dev/null | as-show --kind plan | jq -c '[.feasible, .infeasible_tables]'"
    assert_output '[false,[0]]'
    # row-wise Adagrad: 1 / dim of the weights; the none pipeline: input + output
    sed -e 's/"adam"/"rowwise_adagrad"/' -e 's/"train_sparse_dist"/"none"/' "$T/m.json" > "$T/m2.json"
    as-convert --config "$T/m2.json" | as-features -o "$T/f3.ast"
    run sh -c "as-show --kind features '$T/f3.ast' | jq -c '[.torchrec_memory.optimizer, .torchrec_memory.total]' | head -1"
    assert_output '[4000,88480]'    # 64000 / 16; 64000 + 4000 + 4096 + 16384
    # the dense part of the reservation: 6 x 4 bytes per dense parameter, or the user's
    # dense_tensor_estimate in its place; one that leaves nothing is an error saying so
    sed -e 's/"pipeline": "train_sparse_dist"/&, "dense_parameters": 1000000/' "$T/m.json" > "$T/m4.json"
    run sh -c "as-convert --config '$T/m4.json' | as-features --model-task | as-show --kind task | jq -c .mem_cap"
    assert_output $((14602858086 - 24000000))
    sed -e 's/"pipeline": "train_sparse_dist"/&, "dense_parameters": 1000000, "dense_tensor_estimate": 5000/' "$T/m.json" > "$T/m5.json"
    run sh -c "as-convert --config '$T/m5.json' | as-features --model-task | as-show --kind task | jq -c .mem_cap"
    assert_output $((14602858086 - 5000))
    sed -e 's/"pipeline": "train_sparse_dist"/&, "dense_tensor_estimate": 14602858086/' "$T/m.json" > "$T/m6.json"
    run sh -c "as-convert --config '$T/m6.json' | as-features --model-task -o '$T/none.ast'"
    assert_failure 1
    assert_output --partial "14602858086 bytes for the dense part"
    assert_output --partial "leaves nothing for the tables"
    # tables without a model config: no memory model, fp16 weights as before
    as-convert --synth --preset tiny | as-features -o "$T/s.ast"
    run sh -c "as-show --kind features '$T/s.ast' | jq -c .torchrec_memory | sort -u"
    assert_output 'null'
}

@test "hostile: a features record's torchrec_memory that is not a map of numbers in range is exit 1 naming it" {
    printf '%s\n' '{"topology": {"world_size": 2, "batch_size_per_rank": 8}, "tables": [{"name": "a", "num_embeddings": 10, "embedding_dim": 4}]}' > "$T/m.json"
    as-convert --config "$T/m.json" | as-features --model-task -o "$T/f.ast"
    # the features record edited by Python statements on it (r), through the helper's own
    # msgpack reader and writer (tests/test_helper/mp.py: no msgpack module needed)
    for edit in 'r["torchrec_memory"] = "x"' 'r["torchrec_memory"]["weights"] = -1' \
                'r["torchrec_memory"]["input_factor"] = 7' 'del r["torchrec_memory"]["output"]'; do
        mp_edit "$T/f.ast" "for r in kind('features'): $edit" > "$T/bad.ast"
        run as-plan --alg size-greedy "$T/bad.ast"
        assert_failure 1
        assert_output --partial 'features of table 0: torchrec_memory'
    done
    # unedited, the same route plans
    mp_edit "$T/f.ast" 'pass' > "$T/ok.ast"
    run as-plan --alg size-greedy --plans-only "$T/ok.ast" -o "$T/p.ast"
    assert_success
}

@test "torchrec_plan.py against a stand-in module built with torch: module path, missing and extra tables, sizes" {
    py="$(torch_python)" || fail "no python3 with PyTorch: install python3-torch (make deps, as root)"
    printf '%s\n' '{"module_path": "model.sparse_arch.embedding_bag_collection", "topology": {"world_size": 2, "batch_size_per_rank": 8},' \
        '"tables": [{"name": "a", "num_embeddings": 100, "embedding_dim": 16}, {"name": "b", "num_embeddings": 8, "embedding_dim": 32}]}' > "$T/m.json"
    as-convert --config "$T/m.json" | as-features --model-task | as-plan --alg size-greedy --format torchrec -o "$T/p.json"
    chk() { run env PYTHONPATH="$ROOT/pipelines" "$py" "$ROOT/tests/fixtures/torchrec_standin/standin_check.py" "$T/p.json" "$@"; }
    chk 'a:100:16,b:8:32'
    assert_success
    assert_output ok
    chk 'a:100:16,b:8:32' 'doc["module"] = "model.sparse.embedding_bag_collection"'
    assert_failure 1
    assert_output --partial "module path 'model.sparse.embedding_bag_collection': the model has no 'sparse' there"
    chk 'a:100:16'
    assert_failure 1
    assert_output --partial "model.sparse_arch.embedding_bag_collection.b: the plan's table is not a table of the module"
    chk 'a:100:16,b:8:32,c:5:4'
    assert_failure 1
    assert_output --partial "embedding_bag_collection.c: the module's table has no sharding in the plan"
    chk 'a:99:16,b:8:32'
    assert_failure 1
    assert_output --partial "embedding_bag_collection.a: the plan's shards cover 100 x 16 (1600 elements), the module's table is 99 x 16"
    # uneven column pieces that do not sum to the dim
    chk 'a:100:16,b:8:32' 'd = doc["plan"][doc["module"]]["a"]; d["shards"] = [{"shard_offsets": [0, 0], "shard_sizes": [100, 8], "placement": "rank:0/cuda:0"}, {"shard_offsets": [0, 8], "shard_sizes": [100, 4], "placement": "rank:1/cuda:1"}]; d["ranks"] = [0, 1]; d["sharding_type"] = "column_wise"'
    assert_failure 1
    assert_output --partial "embedding_bag_collection.a: the plan's shards cover 100 x 12 (1200 elements), the module's table is 100 x 16"
}

@test "the documented pipeline: as-convert --config (DLRM-DCNv2) | as-features --model-task | as-plan --format torchrec | torchrec_plan.py --check" {
    run sh -c "as-convert --config '$ROOT/pipelines/models/dlrm-dcnv2-criteo1tb.json' --batch 1024 | as-features --model-task |
               as-plan --alg torchrec,size-lookup-greedy --format torchrec 2>/dev/null | python3 '$ROOT/pipelines/torchrec_plan.py' --check"
    assert_success
    assert_line 'task 0 torchrec model.sparse_arch.embedding_bag_collection: 26 tables (26 table_wise); tables per rank 0:1 1:1 2:4 3:4 4:4 5:4 6:4 7:4'
    assert_line --partial 'task 0 size-lookup-greedy model.sparse_arch.embedding_bag_collection: 26 tables (26 table_wise)'
    # no plan in the input (e.g. as-plan failed before it): an error, not an empty success
    run sh -c "printf '' | python3 '$ROOT/pipelines/torchrec_plan.py' --check"
    assert_failure 1
    assert_output --partial 'no plan'
}

@test "as-convert --config: a table's lookups from a torch.save file (MetaSyn), its errors" {
    ptwrite metasyn --tables 6 --batch 64 --row-scale 0.001 --seed 5 -o "$T/m.pt"
    as-convert "$T/m.pt" --seed 5 -o "$T/m.ast"
    # the file beside the config, named relative to it; the synthetic table at the same batch
    mkdir "$T/cfg"
    mv "$T/m.pt" "$T/cfg/m.pt"
    cfgl() { printf '{"topology": {"world_size": 2, "batch_size_per_rank": 32}, "tables": [{"name": "x", %s}, {"name": "y", "num_embeddings": 50, "embedding_dim": 4}]}\n' "$1" > "$T/cfg/c.json"; }
    cfgl '"num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "m.pt", "table": 2}'
    ( cd "$T" && as-convert --config cfg/c.json -o "$T/c.ast" )
    run sh -c "as-show --kind table '$T/c.ast' | jq -c '[.id, .name, .rows, .dim, .batch, .source]'"
    assert_line '[0,"x",100000,8,64,"m.pt"]'
    assert_line '[1,"y",50,4,64,"c.json"]'
    # table 2 of the file, bag for bag
    cmp <(as-show --full --kind table "$T/c.ast" | head -1 | jq -c '[.offsets, .indices, .lookups]') \
        <(as-show --full --kind table "$T/m.ast" | jq -c 'select(.id == 2) | [.offsets, .indices, .lookups]')
    # errors name the table
    cfgl '"num_embeddings": 100, "embedding_dim": 8, "lookups": {"file": "m.pt", "table": 2}'
    run as-convert --config "$T/cfg/c.json" -o "$T/bad.ast"
    assert_failure 1
    assert_output --partial 'c.json: table 0 ("x"): lookups: '
    assert_output --partial 'm.pt: table 2 of the file has index'
    assert_output --partial 'not below num_embeddings 100'
    cfgl '"num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "m.pt", "table": 9}'
    run as-convert --config "$T/cfg/c.json" -o "$T/bad.ast"
    assert_failure 1
    assert_output --partial 'lookups: '
    assert_output --partial 'm.pt: table 9 does not exist (the file has 6 tables)'
    cfgl '"num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "none.pt", "table": 0}'
    run as-convert --config "$T/cfg/c.json" -o "$T/bad.ast"
    assert_failure 1
    assert_output --partial 'table 0 ("x"): lookups: '
    assert_output --partial 'none.pt: cannot open'
    cfgl '"num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "m.pt"}'
    run as-convert --config "$T/cfg/c.json" -o "$T/bad.ast"
    assert_failure 1
    assert_output --partial 'table 0 ("x"): lookups: table: missing (required)'
    [ ! -e "$T/bad.ast" ]
    # the lookups file is an input: -o naming it is refused before any work, the file kept
    cfgl '"num_embeddings": 100000, "embedding_dim": 8, "lookups": {"file": "m.pt", "table": 2}'
    cp "$T/cfg/m.pt" "$T/m0.pt"
    run as-convert --config "$T/cfg/c.json" -o "$T/cfg/m.pt"
    assert_failure 2
    assert_output --partial "-o $T/cfg/m.pt: it is also an input (the lookups of table 0 (\"x\") of $T/cfg/c.json)"
    cmp "$T/cfg/m.pt" "$T/m0.pt"
    run sh -c "cd '$T/cfg' && as-convert --config c.json -o ./m.pt"
    assert_failure 2
    assert_output --partial 'it is also an input (the lookups of table 0'
    cmp "$T/cfg/m.pt" "$T/m0.pt"
    [ -z "$(ls "$T/cfg" | grep '\.tmp\.')" ]
    # a device or a FIFO as the lookups file is refused at once, not spooled or waited for
    # (AS_MAX_SPOOL only bounds what a reader that spooled it would write)
    mkfifo "$T/cfg/fifo"
    for f in /dev/zero /dev/urandom "$T/cfg/fifo"; do
        cfgl "\"num_embeddings\": 100000, \"embedding_dim\": 8, \"lookups\": {\"file\": \"$f\", \"table\": 0}"
        run timeout 20 env AS_MAX_SPOOL=64M as-convert --config "$T/cfg/c.json" -o "$T/bad.ast"
        assert_failure 1
        assert_output --partial "table 0 (\"x\"): lookups: $f: is a"
        assert_output --partial 'not a regular file'
    done
    [ ! -e "$T/bad.ast" ]
}

@test "as-convert --config: out of memory generating lookups is exit 3, as docs/USAGE.md defines it" {
    # 2^24 bags of 20 lookups: 1.3 GB of indices, within the cap on one record, not within
    # a 400 MB address space
    cfg '{"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 20}' '"world_size": 1, "batch_size_per_rank": 16777216'
    run bash -c 'ulimit -v 400000; as-convert --config "$1" -o "$2"' _ "$T/c.json" "$T/out.ast"
    assert_failure 3
    assert_output --partial 'c.json: table 0 ("a"): out of memory generating its lookups'
    [ ! -e "$T/out.ast" ]
}

@test "as-plan --format torchrec without a config or --module: the model is the collection itself (key \"\")" {
    as-convert --synth --preset tiny | as-features --tasks 3 --test-tasks 1 --task-tables 8 --shards 2 -o "$T/f.ast"
    as-plan --alg size-greedy --format torchrec --split test "$T/f.ast" -o "$T/p.json"
    run jq -c '[.module, (.plan | keys)]' "$T/p.json"
    assert_output '["",[""]]'
    run python3 "$ROOT/pipelines/torchrec_plan.py" --check "$T/p.json"
    assert_success
    assert_output --partial 'size-greedy (the model itself): 8 tables (8 table_wise)'
    # against a bare collection built with torch: resolve_module gives the collection back
    py="$(torch_python)" || fail "no python3 with PyTorch: install python3-torch (make deps, as root)"
    run env PYTHONPATH="$ROOT/pipelines:$ROOT/tests/fixtures/torchrec_standin" "$py" -c '
import sys, json, torch
import torchrec_plan as tp, standin_check as sc
doc = tp.load_plans(sys.argv[1])[0]
sizes = {n: (s["shards"][0]["shard_sizes"][0], s["shards"][0]["shard_sizes"][1]) for n, s in doc["plan"][""].items()}
ebc = sc.EBC(sizes)
tp.check_module(doc, tp.resolve_module(doc, ebc)); print("ok")
sizes[next(iter(sizes))] = (1, 1)
try:
    tp.check_module(doc, sc.EBC(sizes))
except ValueError as e:
    print(e)
' "$T/p.json"
    assert_success
    assert_line --index 0 ok
    assert_line --index 1 --regexp "^t[0-9]+: the plan's shards cover"
}

# a small model measured on the CPU: its pool, features with row blocks of 2, the model's
# task, single-table costs and a cost model (for the planner statistics)
small_model() {
    cfg '{"name": "big", "num_embeddings": 20000, "embedding_dim": 64, "pooling_factor": 16, "bag": "fixed"},
         {"name": "mid", "num_embeddings": 5000, "embedding_dim": 32, "pooling_factor": 4, "bag": "fixed"},
         {"name": "small", "num_embeddings": 500, "embedding_dim": 16, "pooling_factor": 2, "bag": "fixed"},
         {"name": "tiny", "num_embeddings": 100, "embedding_dim": 16, "pooling_factor": 1, "bag": "fixed"}' \
        '"world_size": 2, "batch_size_per_rank": 32, "optimizer": "adam", "pipeline": "train_sparse_dist"'
    as-convert --config "$T/c.json" -o "$T/pool.ast"
    as-features "$T/pool.ast" --row-pieces 2 | as-features --model-task -o "$T/f.ast"
    as-bench --tables "$T/pool.ast" --sample 10 --max-tables 3 --singles --device cpu --warmup 1 --runs 3 --trim 1 \
        --threads 1 -q -o "$T/c.ast"
    cat "$T/f.ast" "$T/c.ast" | as-costfit --seed 0 -q -o "$T/m.ast"
}

@test "planner statistics: plan records carry names, item predictions and TorchRec's memory terms; as-plan's text names the slowest shard's items" {
    small_model
    as-plan --alg cost-greedy,torchrec --model "$T/m.ast" --plans-only "$T/f.ast" -o "$T/p.ast"
    # names of the entries; one prediction per entry; per shard each term the sum of its
    # items' torchrec_memory (pieces by their own features)
    run sh -c "as-show '$T/f.ast' '$T/p.ast' | jq -s -c '
        (map(select(.kind == \"features\")) | map({key: \"\(.id) \(.piece // null)\", value: .}) | from_entries) as \$F
        | map(select(.kind == \"plan\")) | map(. as \$p
          | [range(\$p.tables | length)] | map(\$F[\"\(\$p.tables[.]) \((\$p.pieces // [])[.] // null)\"]) as \$it
          | [\$p.alg, (\$p.names == (\$it | map(.name))), (\$p.item_pred_ms | length) == (\$p.tables | length),
             ([\"weights\", \"optimizer\"] | map(. as \$t | [range(\$p.shards)] | map(. as \$k
                | [range(\$it | length)] | map(select(\$p.assign[.] == \$k) | \$it[.].torchrec_memory[\$t]) | add // 0)
                == \$p.mem_terms[\$t]) | all),
             ([range(\$p.shards)] | map(\$p.mem_terms.weights[.] + \$p.mem_terms.optimizer[.] + \$p.mem_terms.pipeline[.]
                == \$p.mem_bytes[.]) | all)])[]'"
    assert_success
    assert_output $'["cost-greedy",true,true,true,true]\n["torchrec",true,true,true,true]'
    # the text: the slowest shard by prediction, its costliest item alone first, by name
    k=$(as-show --kind plan "$T/p.ast" | jq -r 'select(.alg == "cost-greedy") | .pred_ms | index(max)')
    name=$(as-show --kind plan "$T/p.ast" | jq -r --argjson k "$k" 'select(.alg == "cost-greedy") | . as $p
        | [range(.tables | length)] | map(select($p.assign[.] == $k)) | max_by($p.item_pred_ms[.]) as $i | $p.names[$i]')
    run as-plan --alg cost-greedy --model "$T/m.ast" --format text "$T/f.ast"
    assert_success
    assert_line --regexp "^  slowest shard $k \\(predicted [0-9.]+ ms\\): its items alone $name [0-9.]+ ms \\([0-9]+%\\)"
}

@test "planner statistics: as-eval --table ranks, measured and estimated, text, markdown and CSV" {
    small_model
    as-plan --alg cost-greedy,torchrec --model "$T/m.ast" --plans-only "$T/f.ast" -o "$T/p.ast"
    as-bench --tables "$T/pool.ast" "$T/p.ast" --device cpu --warmup 1 --runs 3 --trim 1 --threads 1 -q -o "$T/pm.ast"
    run as-eval --table ranks --singles "$T/c.ast" "$T/pm.ast"
    assert_success
    assert_line --partial "Ranks (costs measured"
    assert_line --regexp '^task 0 \(test\), torchrec, run 0: 2 ranks, costs measured on cpu.*, cap [0-9.]+ MiB per rank$'
    assert_line --regexp '^  rank items pieces  weights MiB optimizer MiB pipeline MiB    total MiB  cap %   pred ms   cost ms cost/pred  items$'
    # CSV: a row per rank; memory the sum of its terms; the slowest the rank of the highest
    # measured cost (communication charged as as-eval does by default)
    as-eval --table ranks --format csv --singles "$T/c.ast" "$T/pm.ast" > "$T/r.csv"
    run sh -c "tail -n +2 '$T/r.csv' | wc -l"
    assert_output 4
    run awk -F, 'NR > 1 && $7 + $8 + $9 != $10 {print "terms", NR} NR > 1 && $13 != "measured" {print "kind", NR}' "$T/r.csv"
    assert_output ""
    run as-eval --table ranks --singles "$T/c.ast" "$T/pm.ast"
    for alg in cost-greedy torchrec; do
        want=$(as-eval --table shards --format csv "$T/pm.ast" | awk -F, -v a="$alg" '$3 == a && ($7 > m || m == "") {m = $7; k = $4} END {print k}')
        got=$(awk -F, -v a="$alg" '$3 == a && $15 == "measured" {print $4}' "$T/r.csv")
        [ "$got" = "$want" ] || fail "$alg: slowest rank $got, not $want"
        grep -A6 -- ", $alg, run 0:" <<< "$output" | grep -Eq "^  slowest rank $want: [0-9.]+ ms measured \\(predicted [0-9.]+ ms\\), [0-9.]+x the mean rank; the next, rank [01], [0-9.]+ ms \\([0-9.]+ % faster\\)$" ||
            fail "$alg: no slowest-rank line for rank $want in: $output"
    done
    # the slowest rank's items by their cost alone: predicted share, and measured (the
    # whole tables' single costs of --singles)
    assert_line --regexp '^    its items by their cost alone: (big|mid|small|tiny)(\[c [0-9:]+, r [0-9:]+\))? \(predicted [0-9.]+ ms, [0-9]+ %; measured ([0-9.]+ ms|n/a)'
    # estimated by the plans' own model without communication: each cost is its prediction
    run sh -c "cat '$T/f.ast' '$T/p.ast' | as-eval --model '$T/m.ast' --comm-gbps 0 --table ranks --format csv | tail -n +2 | awk -F, '{d = \$14 - \$12; if (d < 0) d = -d; if (d > 1e-6 * \$12) print \"differs\", \$0}'"
    assert_success
    assert_output ""
    # markdown: a table per plan, the slowest rank marked
    run as-eval --table ranks --format markdown "$T/pm.ast"
    assert_success
    assert_line '| rank | items | pieces | weights (MiB) | optimizer (MiB) | pipeline (MiB) | total (MiB) | cap (%) | pred (ms) | cost (ms) | cost/pred | items |'
    [ "$(grep -c '(slowest) |' <<< "$output")" -eq 2 ]
    # plans without the planner's fields (an older as-plan): the table without those columns
    mp_edit "$T/pm.ast" "for p in kind('plan'):
    for k in ('names', 'item_pred_ms', 'mem_terms', 'pred_ms'): p.pop(k)" > "$T/old.ast"
    run as-eval --table ranks "$T/old.ast"
    assert_success
    assert_line --regexp '^  rank items pieces   memory MiB  cap %   cost ms  items$'
    assert_line --regexp '^    its items by their cost alone: t[0-3]'
    # a measured cost of 0 on a shard with entries is bad data (0 is an empty shard's)
    mp_edit "$T/pm.ast" "kind('plan')[0]['cost_ms'][0] = 0.0" > "$T/z.ast"
    run as-eval --table ranks "$T/z.ast"
    assert_failure 1
    assert_output --partial "plan of task 0: measured cost_ms[0] is 0 for a shard of"
    # one rank unmeasured (nil), predicted the slower: no slowest rank, since a prediction is
    # never compared with a measurement (the other plan keeps its measured slowest rank)
    mp_edit "$T/pm.ast" "p = kind('plan')[0]; p['cost_ms'][0] = None; p['pred_ms'] = [5.0, 1.0]" > "$T/nil.ast"
    run as-eval --table ranks "$T/nil.ast"
    assert_success
    assert_line "  no slowest rank: rank 0's cost is unknown (nil) and a prediction is not compared with the other ranks' measured costs"
    [ "$(grep -c '^ \*' <<< "$output")" -eq 1 ]
    refute_output --partial "ms predicted"
    run sh -c "as-eval --table ranks --format csv '$T/nil.ast' | awk -F, 'NR > 1 && \$15 != \"\" {print \$3, \$15}'"
    assert_output "torchrec measured"
}

@test "hostile: a plan's names, item_pred_ms or mem_terms of the wrong shape (or negative predictions) is exit 1 naming the field" {
    small_model
    as-plan --alg cost-greedy --model "$T/m.ast" --plans-only "$T/f.ast" -o "$T/p.ast"
    for edit in "p['names'] = p['names'][:-1]" "p['names'][0] = 7" "p['names'][0] = 'x' * 200" \
                "p['item_pred_ms'][0] = 'a'" "p['item_pred_ms'] = p['item_pred_ms'] + [1.0]" \
                "p['mem_terms'].pop('optimizer')" "p['mem_terms']['weights'][0] = -1" "p['mem_terms'] = 3" \
                "p['pred_ms'][0] = float('nan')" "p['pred_ms'][1] = -1.0" "p['item_pred_ms'][1] = -0.5"; do
        mp_edit "$T/p.ast" "p = kind('plan')[0]; $edit" > "$T/bad.ast"
        run sh -c "cat '$T/f.ast' '$T/bad.ast' | as-eval --model '$T/m.ast' --table ranks"
        assert_failure 1
        field=$(sed -E "s/^p\['([a-z_]+)'\].*/\1/" <<< "$edit")
        assert_output --partial "$field"
    done
}

@test "hostile: names with control characters (an escape sequence, a newline, C1, DEL) are refused by every reader of names" {
    # a config's table name and feature names: exit 1 naming the table and the field, the
    # name itself not printed
    ok='{"name": "a", "num_embeddings": 100, "embedding_dim": 16}'
    topo='"world_size": 2, "batch_size_per_rank": 16'
    for bad in 'a\u001b[31mRED:byte 0x1b at offset 1' 'b\nc:byte 0x0a at offset 1' 'd\u0007:byte 0x07 at offset 1' \
               'e\u007f:byte 0x7f at offset 1' 'f\u009b31m:U+009B at offset 1'; do
        name=${bad%%:*} where=${bad#*:}
        cfg "$ok, {\"name\": \"$name\", \"num_embeddings\": 100, \"embedding_dim\": 16}" "$topo"
        run as-convert --config "$T/c.json" -o "$T/out.ast"
        assert_failure 1
        assert_output --partial "c.json: table 1: name: holds a control character ($where)"
        [[ "$output" != *$'\e'* && "$output" != *RED* ]]
        [ ! -e "$T/out.ast" ]
        cfg "$ok, {\"name\": \"b\", \"num_embeddings\": 100, \"embedding_dim\": 16, \"feature_names\": [\"g\", \"$name\"]}" "$topo"
        run as-convert --config "$T/c.json" -o "$T/out.ast"
        assert_failure 1
        assert_output --partial "c.json: table 1 (\"b\"): feature_names: entry 1 holds a control character ($where)"
        [[ "$output" != *$'\e'* && "$output" != *RED* ]]
        [ ! -e "$T/out.ast" ]
    done
    # names that are UTF-8 text pass, printed as they are
    cfg "$ok, {\"name\": \"caf\\u00e9_\\u00a0x\", \"num_embeddings\": 100, \"embedding_dim\": 16, \"feature_names\": [\"\\u20ac\"]},
         {\"name\": \"c\", \"num_embeddings\": 300, \"embedding_dim\": 16}" "$topo"
    as-convert --config "$T/c.json" -o "$T/pool.ast"
    as-features "$T/pool.ast" | as-features --model-task -o "$T/f.ast"
    run as-plan --alg size-greedy --format text "$T/f.ast"
    assert_success
    assert_output --partial "$(printf 'caf\xc3\xa9_\xc2\xa0x')"
    as-plan --alg size-greedy --plans-only "$T/f.ast" -o "$T/p.ast"
    mp_edit "$T/p.ast" "for p in kind('plan'): p['cost_ms'] = [1.0, 2.0]; p['cost_kind'] = 'measured'" > "$T/pm.ast"
    run as-eval --table ranks "$T/pm.ast"
    assert_success
    assert_output --partial "$(printf 'caf\xc3\xa9_\xc2\xa0x')"
    # a stream's names: a table record's (as-features), a features record's (as-plan, its
    # text) and a plan's (as-eval --table ranks): exit 1 naming the field, nothing printed raw
    for name in "'a\\x1b[31mRED'" "'b\\nc'" "'d\\x9b31m'" "'e\\x7f'"; do
        mp_edit "$T/pool.ast" "kind('table')[1]['name'] = $name" > "$T/bad.ast"
        run as-features "$T/bad.ast" -o "$T/out.ast"
        assert_failure 1
        assert_output --partial "table 1: name: holds a control character"
        [ ! -e "$T/out.ast" ]
        mp_edit "$T/f.ast" "[r for r in kind('features') if r['id'] == 1][0]['name'] = $name" > "$T/bad.ast"
        run as-plan --alg size-greedy --format text "$T/bad.ast"
        assert_failure 1
        assert_output --partial "features of table 1: name: holds a control character"
        [[ "$output" != *$'\e'* && "$output" != *RED* ]]
        mp_edit "$T/pm.ast" "kind('plan')[0]['names'][1] = $name" > "$T/bad.ast"
        run as-eval --table ranks "$T/bad.ast"
        assert_failure 1
        assert_output --partial "names[1] holds a control character"
        [[ "$output" != *$'\e'* && "$output" != *RED* ]]
    done
}
