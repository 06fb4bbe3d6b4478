# tinyplan.bash - make plan at a tiny scale, for tests/plan.bats and tests/plan-guard.bats:
# tiny_config writes a 6-table model config (2 ranks) to $D/tiny.json; mkplan runs
# pipelines/plan.mk on it into $D/out with few and short measurements (the fake timer quiet
# unless FAKE gives another AS_BENCH_FAKE_NOISE), its arguments added to make's.

tiny_config() {
    cat > "$D/tiny.json" <<'JSON'
{"name": "tiny", "module_path": "model.ebc",
 "topology": {"world_size": 2, "local_size": 2, "hbm_gib": 1, "batch_size_per_rank": 64, "optimizer": "sgd"},
 "tables": [
  {"name": "big", "num_embeddings": 20000, "embedding_dim": 32, "pooling_factor": 8},
  {"name": "mid", "num_embeddings": 5000, "embedding_dim": 32, "pooling_factor": 4},
  {"name": "a", "num_embeddings": 1000, "embedding_dim": 16, "pooling_factor": 2},
  {"name": "b", "num_embeddings": 500, "embedding_dim": 16, "pooling_factor": 1},
  {"name": "c", "num_embeddings": 100, "embedding_dim": 8, "pooling_factor": 1},
  {"name": "d", "num_embeddings": 10, "embedding_dim": 8, "pooling_factor": 1}
 ]}
JSON
}

mkplan() {
    AS_BENCH_FAKE_NOISE=${FAKE:-quiet} make -s -C "$ROOT" -f pipelines/plan.mk BIN="$BIN" MODEL="$D/tiny.json" OUT="$D/out" \
        NCOST=30 MAXT=4 BENCH_OPTS="--warmup 1 --runs 3 --trim 1 --flush 8M" DEVICE=cpu PROGRESS= MODEL_GATE= TORCHREC_SRC= "$@"
}
