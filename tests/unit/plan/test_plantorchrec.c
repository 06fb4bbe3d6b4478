/* test_plantorchrec.c - `--alg torchrec` (lib/plan/plantorchrec.h) on hand-made tables: the perf formulas
 * against numbers worked out by hand from TorchRec's estimator terms, the partitioner's
 * placement, row_wise and column_wise choices where the model says they pay, memory caps
 * (TorchRec's storage estimate), determinism, the cover of every table, and a tie that
 * TorchRec's proposal order decides (its UVM kernels in the greedy walks; issue 38). Where a
 * test pins ranks and ratings (and the caps' bounds) they are TorchRec's own planner's, run
 * on the same tables through pipelines/torchrec_planner.py's mapping. */
#include "unit.h"

#include "common.h"
#include "featindex.h"
#include "plan.h"
#include "plantorchrec.h"
#include "reclimits.h"
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

/* plan f[0..n) on K with cap, data_parallel among the options when dp; returns the rating;
 * items/assign/info out */
static double tr_dp(const as_features *f, int64_t n, int64_t K, uint64_t cap, const as_featidx *ft, as_features **items,
                    int64_t *ni, int64_t **assign, as_tr_info *info, int dp)
{
    const as_features *t[16];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_plan_cfg c = { AS_ALG_TORCHREC, K, cap, 1, 0, NULL, NULL, 0, NULL, !dp, NULL };
    char err[256] = "";
    int rc = as_tr_plan(&c, ft, t, n, items, ni, assign, info, err, sizeof err);
    if (rc) fprintf(stderr, "  %s\n", err);
    CHECK_EQ_I64(rc, 0);
    return info->rating;
}

/* tr_dp without data_parallel: the tests below were checked against TorchRec's own planner
 * with --sharding-types table_wise,column_wise,row_wise */
static double tr(const as_features *f, int64_t n, int64_t K, uint64_t cap, const as_featidx *ft, as_features **items,
                 int64_t *ni, int64_t **assign, as_tr_info *info)
{
    return tr_dp(f, n, K, cap, ft, items, ni, assign, info, 0);
}

TEST(torchrec_data_parallel_small_hot_table)
{
    /* A tiny table of many lookups costs little to replicate (an all-reduce of 4 x 16 x 2
       bytes) and saves its all-to-all: TorchRec's perf model makes it data_parallel, one item
       on every GPU (AS_DP), while the large table stays table_wise; a table of a million rows
       would all-reduce 32 MB and stays table_wise. Without data_parallel (--no-dp) all
       three are placed whole. Rating: the large tables' GPUs plus the replicated table's
       share; data_parallel perf by hand (DataParallelEvaluator, K 2, b 2048, d 16, fp16):
       fwd (2048 x 8 + 2048 x 16 x 2 x 2) / (0.5 HBM), bwd 2 fwd + 128 B / (12.5 GiB/s x 2)
       + 9.22 x 128 B / (0.5 HBM). */
    as_features f[3] = { F(0, 16, 4, 40960, 4096), F(1, 16, 100000, 4096, 4096), F(2, 16, 1000000, 4096, 4096) };
    as_featidx ft;
    memset(&ft, 0, sizeof ft);
    char err[128];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items;
    int64_t ni, *a;
    as_tr_info info;
    double r = tr_dp(f, 3, 2, 0, &ft, &items, &ni, &a, &info, 1);
    CHECK(isfinite(r));
    CHECK_EQ_I64(info.data_parallel, 1);
    CHECK_EQ_I64(ni, 3);
    for (int64_t j = 0; j < ni; j++) {
        CHECK(as_piece_whole(&items[j].piece));
        if (items[j].id == 0) CHECK_EQ_I64(a[j], AS_DP);
        else CHECK(a[j] == 0 || a[j] == 1);
    }
    const double hbm = 897.0 * 1073741824.0 / 1000.0, cross = 12.5 * 1073741824.0 / 1000.0;
    const double fwd = (2048.0 * 10 * 8 + 2048.0 * 10 * 16 * 2 + 2048.0 * 16 * 2) / (0.5 * hbm);
    const double dp = 3 * fwd + 128.0 / (cross * 2) + 9.22 * 128.0 / (0.5 * hbm);
    /* the rating is a GPU's sum: one of the two large tables' table_wise perf plus dp */
    const double tw1 = as_tr_perf(0, 4096, 4096, 16, 2);
    CHECK_NEAR(r, tw1 + dp, 1e-9);
    free(items);
    free(a);
    r = tr_dp(f, 3, 2, 0, &ft, &items, &ni, &a, &info, 0);
    CHECK_EQ_I64(info.data_parallel, 0);
    for (int64_t j = 0; j < ni; j++) CHECK(a[j] == 0 || a[j] == 1);
    free(items);
    free(a);
    as_featidx_free(&ft);
}

TEST(torchrec_table_wise_greedy_placement)
{
    /* no row blocks known, dims <= 128: table_wise only; the partitioner places by TorchRec's
       storage estimate, descending, each on the GPU of least perf so far. That estimate holds
       the ids' buffer (pooling x batch per rank x K x 8 bytes) besides the weights, so table 1
       (400 lookups a sample) comes first though its weights are the smallest: the weights
       alone would give 0, 2, 3, 1 and GPUs 0, 1, 0, 1 (as before issue 38). TorchRec's own
       planner (pipelines/torchrec_planner.py's mapping, --sharding-types
       table_wise,column_wise) gives these ranks and this rating. */
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
    CHECK_EQ_I64(info.uvm, 0);
    /* table 1 (GPU 0), then 0, 2 and 3 each on GPU 1: its perf stays below table 1's */
    CHECK_EQ_I64(a[1], 0);
    CHECK_EQ_I64(a[0], 1);
    CHECK_EQ_I64(a[2], 1);
    CHECK_EQ_I64(a[3], 1);
    const double p0 = as_tr_perf(0, 100000, 1000, 64, 2), p1 = as_tr_perf(0, 400000, 1000, 64, 2);
    CHECK(3 * p0 < p1);
    CHECK_NEAR(r, p1, 1e-12);
    CHECK_NEAR(r, 0.1957172, 1e-7);   /* TorchRec's rating of its plan */
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
    /* The cap counts TorchRec's storage estimate (fp16 weights, and the ids' and outputs'
       buffers: batch 250 a rank) as well as our bytes. Table 0 whole: 1024000 B of weights,
       5000 x 250 x 4 x 8 B of ids, 250 x 4 x 64 x 2 B of outputs, 41.152 MB; a row block of
       it: 256000 + 5000 x 250 x 8 + 128000 B, 10.384 MB; a small table whole: 128000 +
       800000 + 128000 B, 1.056 MB. A cap of 12 MB: feasible only with table 0 row_wise and
       at most one small table a GPU. (Before issue 38 the cap counted the weights alone: a
       cap of 400000 B did this.) */
    free(items);
    free(a);
    const uint64_t cap = 12000000;
    r = tr(f, 4, 4, cap, &ft, &items, &ni, &a, &info);
    CHECK(isfinite(r));
    CHECK_EQ_I64(info.row_wise, 1);
    uint64_t used[4] = { 0 };
    int small[4] = { 0 };
    for (int64_t j = 0; j < ni; j++) {
        CHECK(a[j] >= 0);
        if (a[j] < 0) continue;
        used[a[j]] += (uint64_t)as_plan_table_bytes(&items[j]);
        if (items[j].id != 0) small[a[j]]++;
    }
    for (int k = 0; k < 4; k++) {
        CHECK(used[k] <= cap);
        CHECK(small[k] <= 1);
    }
    /* 11 MB: infeasible, though our bytes (the weights) would fit many times over. Just
       below a row block and a small table (11.44 MB) is not enough: with the UVM kernels
       (weights in host memory, TorchRec's estimate counts the buffers alone in HBM) the
       least a GPU must hold is a row block of table 0 at fused_uvm (10.128 MB) and a small
       table at fused_uvm (0.928 MB), 11.056 MB */
    free(items);
    free(a);
    r = tr(f, 4, 4, 11000000, &ft, &items, &ni, &a, &info);
    CHECK(isnan(r));
    CHECK_EQ_I64(info.feasible, 0);
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
            CHECK_EQ_I64(a[j], (items[j].piece.c0 / 128) % 2);   /* TorchRec's: 0, 1, 0, 1 */
            on[a[j]]++;
        } else
            CHECK_EQ_I64(a[j], 0);                                  /* and table 1 on 0 */
    CHECK(on[0] >= 1 && on[1] >= 1);
    CHECK_NEAR(r, 3.29306999, 1e-7);                                /* its rating */
    free(items);
    free(a);
    as_featidx_free(&ft);
}

TEST(torchrec_row_wise_goes_to_the_largest_tables_as_in_torchrec)
{
    /* Issue 38, item 6: fourteen tables of one shape of perf (dim 16, one lookup a sample),
       rows from 3 to 100000, on 4 GPUs (too many tables for the grid search either way). The
       best rating puts two tables row_wise and the other twelve three a GPU; which two is
       decided by the order of the proposals. TorchRec's
       enumerator gives every sharding type three compute kernels (fused, fused_uvm_caching,
       fused_uvm), so its first greedy proposer (by depth: all row_wise first, then the table
       of the largest storage estimate moves on) walks the large tables through the UVM
       kernels before the small ones leave row_wise, and the first proposal of the best
       rating comes from the greedy proposer by sum: the two largest tables (5 and 9) row_wise.
       With fused kernels only (as before the fix) the first greedy proposer gets there first
       with the two smallest (tables 2 and 11, of 3 and 4 rows) row_wise. TorchRec's own
       planner (torchrec_planner.py's mapping, --sharding-types
       table_wise,row_wise,column_wise; with --kernels fused it gives tables 2 and 11
       row_wise) gives these sharding types, ranks and rating. */
    const int64_t rows[14] = { 700, 5000, 3, 6000, 20, 100000, 9000, 300, 2500, 80000, 12000, 4, 1500, 40000 };
    const int64_t rank[14] = { 3, 0, 3, 3, 1, -1, 2, 0, 1, -1, 1, 2, 2, 0 };   /* -1: row_wise */
    as_features f[14];
    as_featidx ft;
    memset(&ft, 0, sizeof ft);
    for (int i = 0; i < 14; i++) {
        f[i] = F(i, 16, rows[i], 4096, 4096);
        as_featidx_add(&ft, &f[i]);
    }
    for (int i = 0; i < 14; i++) add_rows(&ft, &f[i], 4);
    char err[128];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items;
    int64_t ni, *a;
    as_tr_info info;
    double r = tr(f, 14, 4, 0, &ft, &items, &ni, &a, &info);
    CHECK_NEAR(r, 0.0107403503, 1e-9);
    CHECK_EQ_I64(info.row_wise, 2);
    CHECK_EQ_I64(info.column_wise, 0);
    CHECK_EQ_I64(info.uvm, 0);
    CHECK_EQ_I64(ni, 20);
    int64_t blocks[14] = { 0 };
    for (int64_t j = 0; j < ni; j++) {
        const int64_t i = items[j].id;
        if (rank[i] < 0) {
            CHECK(!as_piece_whole(&items[j].piece));
            CHECK_EQ_I64(a[j], blocks[i]);   /* block b on GPU b */
            blocks[i]++;
        } else {
            CHECK(as_piece_whole(&items[j].piece));
            CHECK_EQ_I64(a[j], rank[i]);
        }
    }
    CHECK_EQ_I64(blocks[5], 4);
    CHECK_EQ_I64(blocks[9], 4);
    free(items);
    free(a);
    as_featidx_free(&ft);
}
