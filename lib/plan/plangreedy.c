/* plangreedy.c - the greedy planners: the paper's four heuristics and cost-greedy.
 *
 * Heuristics: the items by descending key (as_plan_order: ties larger bytes, then larger
 * id), each onto the shard with the smallest running sum of keys among those where it
 * still fits under the cap (ties: smaller bytes sum, then lower shard id). cost-greedy:
 * the items by the model's predicted cost alone, each where the model's predicted cost of
 * the resulting shard is lowest (the shards' summed representations, or the sums of pre
 * with a split head), ties as above. */
#include "plan.h"
#include "common.h"
#include "objective.h"

#include <math.h>
#include <stdlib.h>

/* cost-greedy's communication (c->comm_gbps or a model of each collective, c->comm_model): each item's own
   part (objective.h as_obj_own_ms) and each shard's sum of it; the part every shard pays alike
   does not choose between shards */
typedef struct {
    double *own;            /* [n] */
    double *sum;            /* [K] */
} greedy_comm;

/* the shard with the lowest value of item i where it fits (-1: none); it: cost-greedy's
 * items, its value the model's cost of the shard with the item (sw: the shards' sums of the
 * items' vectors; tmp one of them) plus, with gc->own, the shard's own communication with it;
 * NULL: the heuristics', the shard's key sum */
static int64_t best_shard(const as_plan_ctx *x, int64_t i, const as_plan_items *it, const float *sw, float *tmp,
                          const greedy_comm *gc)
{
    const as_plan *p = x->p;
    const int64_t K = x->c->shards;
    int64_t best = -1;
    double bestv = 0;
    for (int64_t k = 0; k < K; k++) {
        if (!as_plan_fits(x->c->mem_cap, p->mem[k], x->bytes[i])) continue;
        double v = p->key[k];
        if (it) {
            const int W = it->W;
            const float *s = sw + (size_t)k * W, *r = it->w + (size_t)i * W;
            for (int d = 0; d < W; d++) tmp[d] = s[d] + r[d];
            v = as_plan_items_cost(it, tmp);
            if (gc->own) v += gc->sum[k] + gc->own[i];
        }
        if (best < 0 || v < bestv || (v == bestv && p->mem[k] < p->mem[best])) { best = k; bestv = v; }
    }
    return best;
}

static int make_greedy(as_plan_ctx *x, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    const as_plan_cfg *c = x->c;
    const int by_cost = as_planner_of(c->alg)->key_cost;
    const int64_t n = x->n, K = c->shards;
    const int R = c->model ? c->model->rep : 0;
    double *key = as_malloc((size_t)(n ? n : 1) * sizeof *key);
    /* cost-greedy: the items' vectors, the shards' sums of them (the representations' sums
       themselves, or with a split head sums of pre of their own), one sum at a time */
    as_plan_items it = { 0 };
    float *psum = NULL, *tmp = NULL;
    if (by_cost) {
        as_plan_items_init(&it, c->model, x->t, n, x->rep, NULL);
        if (it.split) psum = as_calloc((size_t)K * it.W, sizeof *psum);
        tmp = as_malloc((size_t)it.W * sizeof *tmp);
    }
    const float *sw = psum ? psum : x->sum;
    greedy_comm gc = { 0 };
    if (by_cost && (c->comm_gbps > 0 || (c->comm_model && c->comm_model->ab))) {
        as_plan_cfg cc = *c;
        cc.model = NULL;
        as_objective o;
        as_obj_init(&o, &cc, x->t, n);
        gc.own = as_malloc((size_t)(n ? n : 1) * sizeof *gc.own);
        gc.sum = as_calloc((size_t)K, sizeof *gc.sum);
        for (int64_t i = 0; i < n; i++) gc.own[i] = as_obj_own_ms(&o, i);
        as_obj_free(&o);
    }
    for (int64_t i = 0; i < n; i++) key[i] = as_plan_item_key(c, x->t[i], x->rep ? x->rep + (size_t)i * R : NULL);
    int64_t *order = as_malloc((size_t)(n ? n : 1) * sizeof *order);
    as_plan_order(order, key, x->bytes, x->t, n);
    for (int64_t q = 0; q < 2 * n; q++) {
        /* the pinned items (on their ranks already) first, into the shards' sums, then the
           others placed around them */
        const int64_t i = order[q % n];
        if (as_plan_pinned(x, i) != (q < n) || (q < n && x->p->assign[i] < 0)) continue;
        const int64_t best = q < n ? x->p->assign[i] : best_shard(x, i, by_cost ? &it : NULL, sw, tmp, &gc);
        if (best < 0) { as_plan_unplaced(x, i); continue; }
        if (q >= n) as_plan_put(x, i, best);
        x->p->key[best] += key[i];
        if (gc.own) gc.sum[best] += gc.own[i];
        if (!by_cost) continue;
        float *s = x->sum + (size_t)best * R;
        const float *r = x->rep + (size_t)i * R;
        for (int d = 0; d < R; d++) s[d] += r[d];
        if (psum) {
            float *ps = psum + (size_t)best * it.W;
            const float *pr = it.w + (size_t)i * it.W;
            for (int d = 0; d < it.W; d++) ps[d] += pr[d];
        }
    }
    x->summed = by_cost;
    as_plan_items_free(&it);
    free(order);
    free(key);
    free(psum);
    free(tmp);
    free(gc.own);
    free(gc.sum);
    return 0;
}

static double key_size(const as_features *f) { return (double)f->rows * (double)f->dim; }
static double key_dim(const as_features *f) { return (double)f->dim; }
static double key_lookup(const as_features *f) { return (double)f->dim * f->pooling; }
static double key_size_lookup(const as_features *f) { return (double)f->dim * f->pooling * log10((double)f->rows); }

const as_planner as_planner_size_greedy = {
    .help = "key rows*dim      \\  sort by key, descending (ties: larger bytes, then",
    .key = key_size, .make = make_greedy,
};
const as_planner as_planner_dim_greedy = {
    .help = "key dim            | larger table id); each table goes to the shard",
    .key = key_dim, .make = make_greedy,
};
const as_planner as_planner_lookup_greedy = {
    .help = "key dim*pooling    | with the smallest key sum where it fits (ties:",
    .key = key_lookup, .make = make_greedy,
};
const as_planner as_planner_size_lookup_greedy = {
    .help = "key dim*pooling*log10(rows) / smaller bytes sum, then lower shard)",
    .key = key_size_lookup, .make = make_greedy,
};
const as_planner as_planner_cost_greedy = {
    .needs = AS_PLANNER_MODEL,
    .help = "tables by predicted single-table cost, descending; each where the\n"
            "predicted cost of the resulting shard is lowest (needs --model)",
    .key_cost = 1, .make = make_greedy,
};
