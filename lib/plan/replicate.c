/* replicate.c - our planners' data-parallel tables; see replicate.h. */
#include "replicate.h"

#include "comm.h"
#include "common.h"
#include "objective.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* item i made data parallel fits: its table on every shard, its own bytes off shard s */
static int fits(const as_plan *p, uint64_t cap, int64_t s, uint64_t own, uint64_t dpb)
{
    for (int64_t k = 0; k < p->shards; k++) {
        const uint64_t base = k == s ? p->mem[k] - own : p->mem[k];
        if (!as_plan_fits(cap, base, dpb)) return 0;
    }
    return 1;
}

/* the best item to replicate: its index (-1: none lowers cur), its objective in *best; each
   candidate tried in the objective and put back */
static int64_t best_step(as_objective *o, const as_plan *p, const as_plan_cfg *c, const as_features *const *t, double cur,
                         double *best)
{
    int64_t pick = -1;
    *best = cur;
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t s = p->assign[i];
        if (s < 0 || !as_piece_whole(&t[i]->piece)) continue;
        if (!fits(p, c->mem_cap, s, as_plan_table_bytes(t[i]), as_plan_dp_bytes(t[i], p->shards))) continue;
        as_obj_take(o, i);
        as_obj_put(o, i, AS_DP);
        const double v = as_obj_max(o, NULL, NULL);
        as_obj_take(o, i);
        as_obj_put(o, i, s);
        if (v < *best * (1 - 1e-6) && (pick < 0 || v < *best)) {
            pick = i;
            *best = v;
        }
    }
    return pick;
}

/* item i replicated: the plan and the objective follow */
static void apply(as_objective *o, as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t i)
{
    const int64_t s = p->assign[i], K = p->shards;
    as_obj_take(o, i);
    as_obj_put(o, i, AS_DP);
    p->assign[i] = AS_DP;
    p->ndp++;
    p->count[s]--;
    p->key[s] -= as_plan_item_key(c, t[i], o->it.rep + (size_t)i * o->R);
    const uint64_t dpb = as_plan_dp_bytes(t[i], K);
    p->mem[s] -= as_plan_table_bytes(t[i]);
    for (int64_t k = 0; k < K; k++) p->mem[k] += dpb;
}

int as_plan_replicate(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, double gbps,
                      int64_t *made, char *err, size_t errlen)
{
    const double t0 = as_now();
    *made = 0;
    const as_plan_model *m = c->model;
    if (!m || m->rep < 1 || !m->embed || !m->head) { snprintf(err, errlen, "replication needs a cost model"); return -1; }
    if (n != p->n) { snprintf(err, errlen, "replication: %" PRId64 " items for a plan of %" PRId64, n, p->n); return -1; }
    const int64_t K = p->shards;
    const int R = m->rep;
    /* the one objective (objective.h): the bandwidth gbps, or c's model of each collective */
    as_plan_cfg cc = *c;
    cc.shards = K;
    cc.comm_gbps = gbps > 0 ? gbps : 0;
    cc.shard_scale = NULL;
    as_objective o;
    as_obj_init(&o, &cc, t, n);
    as_obj_load(&o, p->assign);
    double cur = as_obj_max(&o, NULL, NULL), next;
    int64_t i;
    while ((i = best_step(&o, p, c, t, cur, &next)) >= 0) {
        apply(&o, p, c, t, i);
        cur = next;
        (*made)++;
    }
    /* pred as as_plan_make computes it (float sums in plan order) */
    if (p->pred) {
        const float *rep = o.it.rep;
        float *sum = as_calloc((size_t)K * (size_t)R, sizeof *sum);
        for (int64_t j = 0; j < n; j++)
            if (p->assign[j] >= 0)
                for (int d = 0; d < R; d++) sum[(size_t)p->assign[j] * R + d] += rep[(size_t)j * R + d];
        const double dp = as_plan_dp_pred(m, p->assign, rep, n, K);
        for (int64_t k = 0; k < K; k++) p->pred[k] = (p->count[k] ? m->head(m->ctx, sum + (size_t)k * R) : 0) + dp;
        free(sum);
    }
    p->replicated = 1;
    if (c->comm_model && c->comm_model->ab) {   /* the record says what charged it (comm_model, docs/FORMAT.md) */
        p->comm_model = c->comm_model->name;
        p->comm_gbps = 0;
    }
    p->plan_ms += (as_now() - t0) * 1e3;
    as_obj_free(&o);
    return 0;
}
