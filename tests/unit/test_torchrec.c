/* test_torchrec.c - `--alg torchrec` (lib/torchrec.h) on hand-made tables: the perf formulas
 * against numbers worked out by hand from TorchRec's estimator terms, the partitioner's
 * placement, row_wise and column_wise choices where the model says they pay, memory caps,
 * determinism, and the cover of every table. */
#include "unit.h"

#include "common.h"
#include "featindex.h"
#include "plan.h"
#include "torchrec.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows, int64_t lookups, int64_t batch)
{
    return tsup_features(id, dim, rows, (double)lookups / (double)batch, batch, lookups);
}

/* the row blocks of t in n, lookups shared out by rows (as as-features --row-pieces writes
 * them for a uniform table) */
static void add_rows(as_featidx *x, const as_features *t, int64_t n)
{
    as_piece bl[64];
    const int64_t k = as_piece_row_blocks(t->rows, t->dim, n, bl);
    for (int64_t j = 0; j < k; j++) {
        as_features g = F(t->id, t->dim, bl[j].r1 - bl[j].r0, t->lookups * (bl[j].r1 - bl[j].r0) / t->rows, t->batch);
        g.piece = bl[j];
        as_featidx_add(x, &g);
    }
}

TEST(torchrec_perf_by_hand)
{
    /* K 8, batch 4096 (512 per rank), pooling 1, d 128, fp16: in 32768 B, lookups 1 MiB,
       out 1 MiB; fwd = 2129920 / (897 x 2^30 / 1000) ms; comms 2 x 1 MiB / (600 x 2^30 / 1000) */
    const double hbm = 897.0 * 1073741824.0 / 1000.0, intra = 600.0 * 1073741824.0 / 1000.0;
    double want = 3.0 * 2129920.0 / hbm + 2.0 * 1048576.0 / intra;
    CHECK_NEAR(as_tr_perf(0, 4096, 4096, 128, 8), want, 1e-12);
    CHECK_NEAR(want, 0.0098895, 1e-6);
    /* d 64: penalty 1.15; d 16: penalty 1.75 and lookups read at 32 columns */
    want = 3.0 * (32768.0 + 4096.0 * 64 * 2 + 4096.0 * 64 * 2) * 1.15 / hbm + 2.0 * 4096.0 * 64 * 2 / intra;
    CHECK_NEAR(as_tr_perf(0, 4096, 4096, 64, 8), want, 1e-12);
    want = 3.0 * (32768.0 + 4096.0 * 32 * 2 + 4096.0 * 16 * 2) * 1.75 / hbm + 2.0 * 4096.0 * 16 * 2 / intra;
    CHECK_NEAR(as_tr_perf(0, 4096, 4096, 16, 8), want, 1e-12);
    /* row_wise: ids and lookups divided by K, outputs whole, plus the batched copy */
    want = 3.0 * (4096.0 / 8 * 8 + 4096.0 / 8 * 128 * 2 + 4096.0 * 128 * 2) / hbm + 2.0 * 1048576.0 / intra +
           2.455 * 1048576.0 / hbm;
    CHECK_NEAR(as_tr_perf(1, 4096, 4096, 128, 8), want, 1e-12);
}

/* plan f[0..n) on K with cap; returns the rating; items/assign/info out */
static double tr(const as_features *f, int64_t n, int64_t K, uint64_t cap, const as_featidx *ft, as_features **items,
                 int64_t *ni, int64_t **assign, as_tr_info *info)
{
    const as_features *t[16];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_plan_cfg c = { AS_ALG_TORCHREC, K, cap, 1, 0, NULL, NULL, 0, NULL };
    char err[256] = "";
    int rc = as_tr_plan(&c, ft, t, n, items, ni, assign, info, err, sizeof err);
    if (rc) fprintf(stderr, "  %s\n", err);
    CHECK_EQ_I64(rc, 0);
    return info->rating;
}

TEST(torchrec_table_wise_greedy_placement)
{
    /* no row blocks known, dims <= 128: table_wise only; the partitioner places by memory,
       descending, each on the GPU of least perf so far */
    as_features f[4] = { F(0, 64, 4000, 100000, 1000), F(1, 64, 1000, 400000, 1000), F(2, 64, 3000, 100000, 1000),
                         F(3, 64, 2000, 100000, 1000) };
    as_featidx ft;
    memset(&ft, 0, sizeof ft);
    char err[128];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items;
    int64_t ni, *a;
    as_tr_info info;
    double r = tr(f, 4, 2, 0, &ft, &items, &ni, &a, &info);
    CHECK_EQ_I64(ni, 4);
    CHECK_EQ_I64(info.no_rows, 4);   /* no row blocks' features: no row_wise option, said */
    /* by memory: table 0 (GPU 0), 2 (GPU 1), 3 (the lighter: GPU 0 and 1 tie? 0 holds 0,
       1 holds 2: equal perf, so GPU 0), 1 (GPU 1) */
    CHECK_EQ_I64(a[0], 0);
    CHECK_EQ_I64(a[2], 1);
    CHECK_EQ_I64(a[3], 0);
    CHECK_EQ_I64(a[1], 1);
    const double p0 = as_tr_perf(0, 100000, 1000, 64, 2), p1 = as_tr_perf(0, 400000, 1000, 64, 2);
    CHECK_NEAR(r, p0 + p1, 1e-12);
    for (int64_t j = 0; j < ni; j++) CHECK(as_piece_whole(&items[j].piece));
    free(items);
    free(a);
    as_featidx_free(&ft);
}

TEST(torchrec_row_wise_for_a_dominant_table_and_caps)
{
    /* one table of 50x the lookups of the rest: row_wise (its blocks known) puts a share on
       every GPU; block i on GPU i, the blocks cover the table */
    as_features f[4] = { F(0, 64, 8000, 5000000, 1000), F(1, 64, 1000, 100000, 1000), F(2, 64, 1000, 100000, 1000),
                         F(3, 64, 1000, 100000, 1000) };
    as_featidx ft;
    memset(&ft, 0, sizeof ft);
    for (int i = 0; i < 4; i++) as_featidx_add(&ft, &f[i]);
    add_rows(&ft, &f[0], 4);
    char err[128];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items;
    int64_t ni, *a;
    as_tr_info info;
    double r = tr(f, 4, 4, 0, &ft, &items, &ni, &a, &info);
    CHECK(isfinite(r));
    CHECK_EQ_I64(info.row_wise, 1);
    CHECK_EQ_I64(ni, 7);
    int64_t rows = 0;
    for (int64_t j = 0, b = 0; j < ni; j++)
        if (items[j].id == 0) {
            CHECK(!as_piece_whole(&items[j].piece));
            CHECK_EQ_I64(items[j].piece.r0, rows);
            rows = items[j].piece.r1;
            CHECK_EQ_I64(a[j], b);
            b++;
        }
    CHECK_EQ_I64(rows, 8000);
    /* its rating: table_wise alone on a GPU would cost more than a row block plus a table */
    CHECK(r < as_tr_perf(0, 5000000, 1000, 64, 4));
    /* deterministic */
    as_features *items2;
    int64_t ni2, *a2;
    as_tr_info info2;
    CHECK_NEAR(tr(f, 4, 4, 0, &ft, &items2, &ni2, &a2, &info2), r, 0);
    CHECK_EQ_I64(ni2, ni);
    for (int64_t j = 0; j < ni; j++) CHECK_EQ_I64(a2[j], a[j]);
    free(items2);
    free(a2);
    /* a cap below table 0 whole (1024000 B) but above one of its blocks (256000 B) plus one
       small table (128000 B): feasible only row_wise with the small tables spread */
    free(items);
    free(a);
    const uint64_t cap = 400000;
    r = tr(f, 4, 4, cap, &ft, &items, &ni, &a, &info);
    uint64_t used[4] = { 0 };
    for (int64_t j = 0; j < ni; j++)
        if (a[j] >= 0) used[a[j]] += (uint64_t)as_plan_table_bytes(&items[j]);
    for (int k = 0; k < 4; k++) CHECK(used[k] <= cap);
    CHECK(isfinite(r));
    /* a cap nothing fits under: no feasible proposal, unplaced items */
    free(items);
    free(a);
    r = tr(f, 4, 4, 1000, &ft, &items, &ni, &a, &info);
    CHECK(isnan(r));
    CHECK_EQ_I64(info.feasible, 0);
    int unplaced = 0;
    for (int64_t j = 0; j < ni; j++) unplaced += a[j] < 0;
    CHECK(unplaced > 0);
    free(items);
    free(a);
    as_featidx_free(&ft);
}

TEST(torchrec_column_wise_cuts_wide_tables)
{
    /* dim 512: column_wise in pieces of 128 (the smallest divisor >= 128, a multiple of 4);
       with two GPUs and one wide hot table the pieces spread */
    as_features f[2] = { F(0, 512, 1000, 2000000, 1000), F(1, 16, 1000, 1000, 1000) };
    as_featidx ft;
    memset(&ft, 0, sizeof ft);
    char err[128];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items;
    int64_t ni, *a;
    as_tr_info info;
    double r = tr(f, 2, 2, 0, &ft, &items, &ni, &a, &info);
    CHECK(isfinite(r));
    CHECK_EQ_I64(info.column_wise, 1);
    CHECK_EQ_I64(ni, 5);
    int on[2] = { 0, 0 };
    for (int64_t j = 0; j < ni; j++)
        if (items[j].id == 0) {
            CHECK_EQ_I64(items[j].piece.c1 - items[j].piece.c0, 128);
            CHECK_EQ_I64(items[j].dim, 128);
            on[a[j]]++;
        }
    CHECK(on[0] >= 1 && on[1] >= 1);
    free(items);
    free(a);
    as_featidx_free(&ft);
}
