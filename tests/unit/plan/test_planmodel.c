/* test_planmodel.c - the cost model as the planners see it (lib/plan/planmodel.h): each of
 * as_plan_model's calls is the cost model's own (the same bits), the split head is there when
 * the model has one (h3 > 0), and the memoised form gives the same numbers, each table
 * embedded once. */
#include "unit.h"

#include "costmodel.h"
#include "fixtures.h"
#include "planmodel.h"

#include <math.h>
#include <string.h>

enum { H1 = 16, H2 = 8, H3 = 4, N = 6 };

static as_costmodel *model(int h3)
{
    as_costmodel *m = as_costmodel_new(H1, H2, h3, 3);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->mean[0] = 24, in->std[0] = 8;
    in->mean[1] = 1e6, in->std[1] = 5e5;
    in->mean[2] = 15, in->std[2] = 9;
    in->y_scale = 2;
    return m;
}

static void tables(as_features *f, const as_features **p)
{
    as_rng r;
    as_rng_seed(&r, 5, 0);
    for (int i = 0; i < N; i++) { f[i] = tsup_random_features(&r, i); p[i] = &f[i]; }
}

/* the same function, so the same bits: compare exactly */
static void check_same(const as_plan_model *pm, const as_costmodel *cm, const as_features *const *p)
{
    float a[H2], b[H2], sum[H2] = { 0 };
    for (int i = 0; i < N; i++) {
        pm->embed(pm->ctx, p[i], a);
        as_costmodel_embed(cm, p[i], b);
        CHECK(!memcmp(a, b, sizeof a));
        for (int d = 0; d < H2; d++) sum[d] += a[d];
    }
    CHECK(pm->head(pm->ctx, sum) == as_costmodel_head(cm, sum));
    /* the head of a sum is the model's prediction of the shard (up to float rounding) */
    const double want = as_costmodel_predict(cm, p, N);
    CHECK_NEAR(pm->head(pm->ctx, sum), want, 1e-4 * (fabs(want) + 1));
    if (!pm->hid) return;
    float z[H3], zc[H3];
    pm->pre(pm->ctx, sum, z);
    as_costmodel_head_pre(cm, sum, zc);
    CHECK(!memcmp(z, zc, sizeof z));
    CHECK(pm->post(pm->ctx, z) == as_costmodel_head_post(cm, zc));
    CHECK_NEAR(pm->post(pm->ctx, z), pm->head(pm->ctx, sum), 1e-5 * (fabs(want) + 1));
}

TEST(planmodel_of)
{
    as_costmodel *cm = model(H3);
    as_features f[N];
    const as_features *p[N];
    tables(f, p);
    as_plan_model pm;
    memset(&pm, 0xff, sizeof pm);
    as_plan_model_of(&pm, cm);
    CHECK(pm.ctx == cm);
    CHECK_EQ_I64(pm.rep, H2);
    CHECK_EQ_I64(pm.hid, H3);
    CHECK(pm.embed && pm.head && pm.pre && pm.post);
    check_same(&pm, cm, p);
    as_costmodel_free(cm);
}

/* a model without the third layer (h3 0): no split head; the planners then use head alone */
TEST(planmodel_of_no_split)
{
    as_costmodel *cm = model(0);
    as_features f[N];
    const as_features *p[N];
    tables(f, p);
    as_plan_model pm;
    memset(&pm, 0xff, sizeof pm);
    as_plan_model_of(&pm, cm);
    CHECK_EQ_I64(pm.hid, 0);
    CHECK(pm.pre == NULL && pm.post == NULL);
    check_same(&pm, cm, p);
    as_costmodel_free(cm);
}

/* over a memo: ctx is the memo, the numbers are the model's, and a table met again is a hit */
TEST(planmodel_memo)
{
    for (int h3 = 0; h3 <= H3; h3 += H3) {
        as_costmodel *cm = model(h3);
        as_features f[N];
        const as_features *p[N];
        tables(f, p);
        as_embed_memo *memo = as_embed_memo_new(cm, 8);
        as_plan_model pm;
        memset(&pm, 0xff, sizeof pm);
        as_plan_model_memo(&pm, memo);
        CHECK(pm.ctx == (void *)memo);
        CHECK_EQ_I64(pm.rep, H2);
        CHECK_EQ_I64(pm.hid, h3);
        CHECK(h3 ? pm.pre && pm.post : !pm.pre && !pm.post);
        check_same(&pm, cm, p);
        int64_t hits, misses;
        as_embed_memo_stats(memo, &hits, &misses);
        CHECK_EQ_I64(hits, 0);
        CHECK_EQ_I64(misses, N);
        float a[H2];
        pm.embed(pm.ctx, p[2], a);   /* again: from the memo */
        as_embed_memo_stats(memo, &hits, &misses);
        CHECK_EQ_I64(hits, 1);
        CHECK_EQ_I64(misses, N);
        as_embed_memo_free(memo);
        as_costmodel_free(cm);
    }
}

/* a planner on either form makes the same plan with the same predictions (the memo's numbers
 * are the model's bits) */
TEST(planmodel_cost_greedy_same_plan)
{
    as_costmodel *cm = model(H3);
    as_features f[N];
    const as_features *p[N];
    tables(f, p);
    as_embed_memo *memo = as_embed_memo_new(cm, 8);
    as_plan_model a, b;
    as_plan_model_of(&a, cm);
    as_plan_model_memo(&b, memo);
    as_plan_cfg c = { .alg = AS_ALG_COST, .shards = 3, .model = &a };
    as_plan pa, pb;
    char err[256];
    CHECK_EQ_I64(as_plan_make(&pa, &c, p, N, err, sizeof err), 0);
    c.model = &b;
    CHECK_EQ_I64(as_plan_make(&pb, &c, p, N, err, sizeof err), 0);
    CHECK(!memcmp(pa.assign, pb.assign, N * sizeof *pa.assign));
    for (int k = 0; k < 3; k++) {
        CHECK(pa.pred[k] == pb.pred[k]);
        const as_features *sh[N];
        int n = 0;
        for (int i = 0; i < N; i++) if (pa.assign[i] == k) sh[n++] = p[i];
        const double want = n ? as_costmodel_predict(cm, sh, n) : 0;
        CHECK_NEAR(pa.pred[k], want, 1e-4 * (fabs(want) + 1));
    }
    as_plan_free(&pa);
    as_plan_free(&pb);
    as_embed_memo_free(memo);
    as_costmodel_free(cm);
}
