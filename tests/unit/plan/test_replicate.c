/* test_replicate.c - as_plan_replicate (lib/plan/replicate.h) on hand-made plans with answers
 * worked out by hand: a small hot table whose replication cuts the slowest shard, a large
 * one whose all-reduce forbids it, a memory cap that forbids it, the bookkeeping (memory,
 * counts, pred as as_plan_make computes it, the label). */
#include "unit.h"

#include "plan.h"
#include "reclimits.h"
#include "replicate.h"
#include "fixtures.h"

#include <math.h>
#include <string.h>

/* a linear hand-made model: a shard costs the sum of dim x pooling of its tables */
static void lin_embed(void *ctx, const as_features *f, float *out) { out[0] = (float)(f->dim * f->pooling); }
static double lin_head(void *ctx, const float *s) { return s[0]; }
static const as_plan_model LIN = { NULL, 1, lin_embed, lin_head, 0, NULL, NULL };

static int place_given(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                       char *err, size_t errlen)
{
    memcpy(assign, ctx, (size_t)n * sizeof *assign);
    return 0;
}

/* tables A (cost 1.0, 10 rows x 10), B (0.9, brows x 9), C (0.2, crows x 2); A and C on
 * shard 0, B on shard 1: predicted 1.2 and 0.9 */
static void three(as_features f[3], int64_t brows, int64_t crows)
{
    f[0] = tsup_features(0, 10, 10, 0.1, 0, 0);
    f[1] = tsup_features(1, 9, brows, 0.1, 0, 0);
    f[2] = tsup_features(2, 2, crows, 0.1, 0, 0);
}

static as_plan given(const as_features f[3], uint64_t cap, as_plan_cfg *c)
{
    static const int64_t a[3] = { 0, 1, 0 };
    static as_plan_policy pol = { (void *)a, place_given, 0, NULL, NULL };
    const as_features *p[3] = { &f[0], &f[1], &f[2] };
    *c = (as_plan_cfg){ AS_ALG_AUTOSHARD, 2, cap, 1, 0, &LIN, &pol, 0, NULL, 0, NULL };
    as_plan pl;
    char err[256];
    CHECK_EQ_I64(as_plan_make(&pl, c, p, 3, err, sizeof err), 0);
    return pl;
}

static int64_t replicate(as_plan *pl, const as_plan_cfg *c, const as_features f[3], double gbps)
{
    const as_features *p[3] = { &f[0], &f[1], &f[2] };
    int64_t made = -1;
    char err[256] = "";
    CHECK_EQ_I64(as_plan_replicate(pl, c, p, 3, gbps, &made, err, sizeof err), 0);
    return made;
}

TEST(replicate_small_hot_table_cuts_the_slowest_shard)
{
    /* C replicated: shard 0 = 1.0 + 0.2/2 = 1.1, shard 1 = 0.9 + 0.1 = 1.0 (max 1.2 -> 1.1);
       then A would give 0.6 and 1.5, B 1.55 and 0.55: no more */
    as_features f[3];
    three(f, 10, 100);
    as_plan_cfg c;
    as_plan pl = given(f, 0, &c);
    CHECK_NEAR(pl.pred[0], 1.2, 1e-6);
    CHECK_EQ_I64(replicate(&pl, &c, f, 0), 1);
    CHECK_EQ_I64(pl.assign[2], AS_DP);
    CHECK_EQ_I64(pl.assign[0], 0);
    CHECK_EQ_I64(pl.assign[1], 1);
    CHECK_EQ_I64(pl.ndp, 1);
    CHECK_EQ_I64(pl.count[0], 1);
    CHECK_EQ_I64(pl.count[1], 1);
    CHECK_NEAR(pl.pred[0], 1.1, 1e-6);
    CHECK_NEAR(pl.pred[1], 1.0, 1e-6);
    /* C's fp16 weights on both shards */
    CHECK_EQ_I64((int64_t)pl.mem[0], 10 * 10 * 2 + 100 * 2 * 2);
    CHECK_EQ_I64((int64_t)pl.mem[1], 10 * 9 * 2 + 100 * 2 * 2);
    char lb[64];
    CHECK_STR(as_plan_alg_label(&pl, AS_ALG_COST, lb, sizeof lb), "cost-greedy+dp");
    /* pred as as_plan_make computes it from the same placement */
    as_plan_policy pol = { pl.assign, place_given, 0, NULL, NULL };
    as_plan_cfg c2 = c;
    c2.policy = &pol;
    const as_features *p[3] = { &f[0], &f[1], &f[2] };
    as_plan again;
    char err[256];
    CHECK_EQ_I64(as_plan_make(&again, &c2, p, 3, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) {
        CHECK_NEAR(again.pred[k], pl.pred[k], 1e-12);
        CHECK_EQ_I64((int64_t)again.mem[k], (int64_t)pl.mem[k]);
    }
    as_plan_free(&again);
    as_plan_free(&pl);
}

TEST(replicate_large_table_not_when_its_allreduce_costs_more)
{
    /* C of 10^8 rows: its all-reduce, 2 x 1/2 x 10^8 x 2 x 2 bytes at 600 GiB/s, is 0.62 ms
       on every shard: 1.1 + 0.62 > 1.2, so nothing is replicated; at 100 rows it is */
    as_features f[3];
    three(f, 10, 100000000);
    as_plan_cfg c;
    as_plan pl = given(f, 0, &c);
    CHECK_EQ_I64(replicate(&pl, &c, f, 600), 0);
    CHECK_EQ_I64(pl.ndp, 0);
    CHECK_EQ_I64(pl.assign[2], 0);
    CHECK_NEAR(pl.pred[0], 1.2, 1e-6);
    CHECK(pl.replicated);   /* searched: "+dp" all the same */
    as_plan_free(&pl);
    three(f, 10, 100);
    pl = given(f, 0, &c);
    CHECK_EQ_I64(replicate(&pl, &c, f, 600), 1);
    CHECK_EQ_I64(pl.assign[2], AS_DP);
    as_plan_free(&pl);
}

/* the alpha-beta model (lib/records/comm.h): the first data-parallel table pays the all-reduce's
   alpha on every shard. Bytes made free (10^6 GB/s), the all-to-all's alpha 0: C's
   replication saves 0.1 on the slowest shard (1.2 -> 1.1), so an all-reduce alpha of 50 us
   (0.05 ms) lets it and one of 200 us (1.1 + 0.2 > 1.2) does not */
TEST(replicate_alpha_beta_pays_the_allreduce_alpha)
{
    as_features f[3];
    as_comm_model m;
    char err[256];
    three(f, 10, 100);
    as_plan_cfg c;
    as_plan pl = given(f, 0, &c);
    CHECK_EQ_I64(as_comm_model_parse("0/1e6,0/1e6,50/1e6", &m, err, sizeof err), 0);
    c.comm_model = &m;
    CHECK_EQ_I64(replicate(&pl, &c, f, 0), 1);
    CHECK_EQ_I64(pl.assign[2], AS_DP);
    as_plan_free(&pl);
    pl = given(f, 0, &c);
    CHECK_EQ_I64(as_comm_model_parse("0/1e6,0/1e6,200/1e6", &m, err, sizeof err), 0);
    c.comm_model = &m;
    CHECK_EQ_I64(replicate(&pl, &c, f, 0), 0);
    CHECK_EQ_I64(pl.ndp, 0);
    as_plan_free(&pl);
    /* the bandwidth given beside it is not charged: the model is */
    pl = given(f, 0, &c);
    c.comm_model = &m;
    CHECK_EQ_I64(replicate(&pl, &c, f, 1e-6), 0);
    as_plan_free(&pl);
}

TEST(replicate_keeps_the_memory_cap)
{
    /* B of 1000 rows (18000 bytes) on shard 1: C's 400 bytes more would pass a cap of 18300,
       so C stays; under 18400 it fits and is replicated */
    as_features f[3];
    three(f, 1000, 100);
    as_plan_cfg c;
    as_plan pl = given(f, 18300, &c);
    CHECK_EQ_I64(replicate(&pl, &c, f, 0), 0);
    CHECK_EQ_I64(pl.assign[2], 0);
    as_plan_free(&pl);
    pl = given(f, 18400, &c);
    CHECK_EQ_I64(replicate(&pl, &c, f, 0), 1);
    CHECK_EQ_I64(pl.assign[2], AS_DP);
    CHECK((int64_t)pl.mem[1] <= 18400);
    as_plan_free(&pl);
}

TEST(replicate_errors)
{
    as_features f[3];
    three(f, 10, 100);
    as_plan_cfg c;
    as_plan pl = given(f, 0, &c);
    as_plan_cfg nomodel = c;
    nomodel.model = NULL;
    const as_features *p[3] = { &f[0], &f[1], &f[2] };
    int64_t made;
    char err[256];
    CHECK_EQ_I64(as_plan_replicate(&pl, &nomodel, p, 3, 0, &made, err, sizeof err), -1);
    CHECK_STR(err, "replication needs a cost model");
    CHECK_EQ_I64(as_plan_replicate(&pl, &c, p, 2, 0, &made, err, sizeof err), -1);
    CHECK_STR(err, "replication: 2 items for a plan of 3");
    as_plan_free(&pl);
}
