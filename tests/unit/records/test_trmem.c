/* test_trmem.c - TorchRec's memory model of a shard (lib/records/trmem.h) on cases worked out by
 * hand: every optimizer and pipeline, table-, column- and row-wise shards, the cap. */
#include "unit.h"

#include "trmem.h"

TEST(trmem_table_wise_by_hand)
{
    as_trmem m;
    /* 1000 x 16 fp32, 2 ids per sample, 64 per rank, 4 ranks, Adam, train_sparse_dist */
    CHECK(as_trmem_shard(&m, 1000, 16, 16, 4, "adam", "train_sparse_dist", 2, 64, 4, 0) == 0);
    CHECK_NEAR(m.weights, 64000, 0);
    CHECK_NEAR(m.optimizer, 128000, 0);
    CHECK_NEAR(m.input, 4096, 0);       /* 2 x 64 x 4 x 8 */
    CHECK_NEAR(m.output, 16384, 0);     /* min(1, 2) x 64 x 4 x 16 x 4 */
    CHECK_EQ_I64(as_trmem_total(&m), 64000 + 128000 + 2 * 4096);
    /* the none pipeline: input + output; SGD: no state */
    CHECK(as_trmem_shard(&m, 1000, 16, 16, 4, "sgd", "none", 2, 64, 4, 0) == 0);
    CHECK_EQ_I64(as_trmem_total(&m), 64000 + 4096 + 16384);
    CHECK(as_trmem_shard(&m, 1000, 16, 16, 4, "exact_sgd", "train_base", 2, 64, 4, 0) == 0);
    CHECK_EQ_I64(as_trmem_total(&m), 64000 + 4096 + 16384);
    /* prefetch pipeline: 3 x input; row-wise Adagrad: 1 / D (ceil) */
    CHECK(as_trmem_shard(&m, 1000, 16, 16, 4, "exact_rowwise_adagrad", "train_prefetch_sparse_dist", 2, 64, 4, 0) == 0);
    CHECK_NEAR(m.optimizer, 4000, 0);
    CHECK_EQ_I64(as_trmem_total(&m), 64000 + 4000 + 3 * 4096);
    CHECK(as_trmem_shard(&m, 3, 7, 7, 2, "rowwise_adagrad", "none", 1, 1, 1, 0) == 0);
    CHECK_NEAR(m.optimizer, 6, 0);      /* ceil(42 / 7) */
    /* Adagrad and other optimizers: 1 x the weights */
    CHECK(as_trmem_shard(&m, 10, 4, 4, 0.5, "adagrad", "none", 0.5, 10, 2, 0) == 0);
    CHECK_NEAR(m.weights, 20, 0);       /* int4: half a byte per element */
    CHECK_NEAR(m.optimizer, 20, 0);
    CHECK_NEAR(m.input, 80, 0);         /* 0.5 x 10 x 2 x 8 */
    CHECK_NEAR(m.output, 20, 0);        /* min(1, 0.5) x 10 x 2 x 4 x 0.5 */
    /* unknown names */
    CHECK(as_trmem_shard(&m, 10, 4, 4, 2, "rmsprop", "none", 1, 1, 1, 0) == -1);
    CHECK(as_trmem_shard(&m, 10, 4, 4, 2, "sgd", "async", 1, 1, 1, 0) == -1);
}

TEST(trmem_row_and_column_shards)
{
    as_trmem m, c;
    /* a row-wise block of 500 rows: its weights, the ids of one rank's batch (TorchRec's
       row-wise io: L x B / W x W x 8), the full-width output */
    CHECK(as_trmem_shard(&m, 500, 16, 16, 4, "adam", "train_sparse_dist", 2, 64, 4, 1) == 0);
    CHECK_NEAR(m.weights, 32000, 0);
    CHECK_NEAR(m.input, 1024, 0);
    CHECK_NEAR(m.output, 16384, 0);
    /* a column quarter of a table-wise shard: weights, state, output / 4, every id */
    CHECK(as_trmem_shard(&m, 1000, 16, 16, 4, "adam", "none", 2, 64, 4, 0) == 0);
    as_trmem_cols(&c, &m, 4, 8, 16);
    CHECK_NEAR(c.weights, 16000, 0);
    CHECK_NEAR(c.optimizer, 32000, 0);
    CHECK_NEAR(c.output, 4096, 0);
    CHECK_NEAR(c.input, 4096, 0);
    as_trmem_cols(&c, &m, 0, 16, 16);
    CHECK_EQ_I64(as_trmem_total(&c), as_trmem_total(&m));
}

TEST(trmem_cap)
{
    /* int(0.85 x 16 GiB) = 14602888806, less ceil(192 x 8) x 20 */
    CHECK_EQ_I64(as_trmem_cap((uint64_t)16 << 30, 192, 0), 14602888806LL - 30720);
    CHECK_EQ_I64(as_trmem_cap(1000, 10, 0), 0);   /* 850 less 1600: nothing left */
    CHECK_EQ_I64(as_trmem_cap(100000, 0, 0), 85000);
    /* the dense part: 6 x the dense parameters' bytes (fp32: 24 bytes a parameter) */
    CHECK_EQ_I64(as_trmem_dense(1000, 4), 24000);
    CHECK_EQ_I64(as_trmem_dense(0, 4), 0);
    CHECK_EQ_I64(as_trmem_cap(100000, 0, 24000), 61000);
    CHECK_EQ_I64(as_trmem_cap(100000, 10, 84000), 0);   /* 85000 less 84000 and 1600: nothing left */
    CHECK_EQ_I64(as_trmem_cap(100000, 10, 80000), 85000 - 80000 - 1600);
}
