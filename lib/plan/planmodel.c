/* planmodel.c - the cost model as the planners see it; see planmodel.h */
#include "planmodel.h"

static void cm_embed(void *ctx, const as_features *f, float *out) { as_costmodel_embed(ctx, f, out); }
static double cm_head(void *ctx, const float *sum) { return as_costmodel_head(ctx, sum); }
static void cm_pre(void *ctx, const float *sum, float *out) { as_costmodel_head_pre(ctx, sum, out); }
static double cm_post(void *ctx, const float *z) { return as_costmodel_head_post(ctx, z); }

/* the same over a memo (ctx: the as_embed_memo, which names its model) */
static void mm_embed(void *ctx, const as_features *f, float *out) { as_embed_memo_get(ctx, f, out); }
static double mm_head(void *ctx, const float *sum) { return as_costmodel_head(as_embed_memo_model(ctx), sum); }
static void mm_pre(void *ctx, const float *sum, float *out) { as_costmodel_head_pre(as_embed_memo_model(ctx), sum, out); }
static double mm_post(void *ctx, const float *z) { return as_costmodel_head_post(as_embed_memo_model(ctx), z); }

void as_plan_model_of(as_plan_model *pm, const as_costmodel *cm)
{
    pm->ctx = (void *)cm;
    pm->rep = as_costmodel_rep(cm);
    pm->embed = cm_embed;
    pm->head = cm_head;
    pm->hid = as_costmodel_cmeta(cm)->h3;
    pm->pre = pm->hid ? cm_pre : NULL;
    pm->post = pm->hid ? cm_post : NULL;
}

void as_plan_model_memo(as_plan_model *pm, as_embed_memo *memo)
{
    as_plan_model_of(pm, as_embed_memo_model(memo));
    pm->ctx = memo;
    pm->embed = mm_embed;
    pm->head = mm_head;
    pm->pre = pm->hid ? mm_pre : NULL;
    pm->post = pm->hid ? mm_post : NULL;
}
