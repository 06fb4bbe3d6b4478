/* plan.c - sharding plans: the registry's dispatch and as_plan_make (configuration checked,
 * TorchRec's pinned blocks placed, the planner called, data-parallel tables, predictions),
 * the planners' shared arithmetic (keys, order, fits, bytes), the autoshard planner's entry,
 * the 2D rank map. The planners are plangreedy.c and planrandom.c, the records planrec.c.
 * Dimension letters: T tables of a task, K shards, W world size, G = W/K replicas. */
#include "plan.h"
#include "pins.h"
#include "common.h"
#include "modelcfg.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the registry (planners.def): each planner is defined in its own module */
#define AS_PLANNER(E, name, ident) extern const as_planner as_planner_##ident;
#include "planners.def"
#undef AS_PLANNER

static const as_planner *const PLANNERS[AS_ALG_COUNT] = {
#define AS_PLANNER(E, name, ident) &as_planner_##ident,
#include "planners.def"
#undef AS_PLANNER
};

const as_planner *as_planner_of(as_alg a)
{
    return (unsigned)a < AS_ALG_COUNT ? PLANNERS[a] : NULL;
}

double as_plan_key(as_alg a, const as_features *f)
{
    const as_planner *pl = as_planner_of(a);
    return pl && pl->key ? pl->key(f) : 0;
}

double as_plan_item_key(const as_plan_cfg *c, const as_features *f, const float *rep)
{
    const as_planner *pl = as_planner_of(c->alg);
    if (pl && pl->key_cost) return c->model->head(c->model->ctx, rep);
    return as_plan_key(c->alg, f);
}

void as_plan_items_init(as_plan_items *it, const as_plan_model *m, const as_features *const *t, int64_t n,
                        const float *rep, as_arena *A)
{
    memset(it, 0, sizeof *it);
    it->m = m;
    it->n = n;
    it->R = m->rep;
    it->split = m->hid > 0 && m->pre && m->post;
    it->W = it->split ? m->hid : it->R;
    const size_t n1 = (size_t)(n ? n : 1);
    if (!rep) {
        float *r = A ? as_arena_take(A, n1 * (size_t)it->R * sizeof *r) : (it->own_rep = as_malloc(n1 * (size_t)it->R * sizeof *r));
        for (int64_t i = 0; i < n; i++) m->embed(m->ctx, t[i], r + (size_t)i * it->R);
        rep = r;
    }
    it->rep = rep;
    it->w = rep;
    if (it->split) {
        float *w = A ? as_arena_take(A, n1 * (size_t)it->W * sizeof *w) : (it->own_w = as_malloc(n1 * (size_t)it->W * sizeof *w));
        for (int64_t i = 0; i < n; i++) m->pre(m->ctx, rep + (size_t)i * it->R, w + (size_t)i * it->W);
        it->w = w;
    }
}

double as_plan_items_cost(const as_plan_items *it, const float *v)
{
    return it->split ? it->m->post(it->m->ctx, v) : it->m->head(it->m->ctx, v);
}

void as_plan_items_free(as_plan_items *it)
{
    if (!it) return;
    free(it->own_rep);
    free(it->own_w);
    memset(it, 0, sizeof *it);
}

void as_plan_put(as_plan_ctx *x, int64_t i, int64_t k)
{
    x->p->assign[i] = k;
    x->p->mem[k] += x->bytes[i];
    x->p->count[k]++;
}

void as_plan_unplaced(as_plan_ctx *x, int64_t i)
{
    x->p->infeasible[x->p->ninfeasible++] = x->t[i]->id;
}

uint64_t as_plan_table_bytes(const as_features *f)
{
    if (as_features_has_mem(f)) return as_trmem_total(&f->mem);
    return f->bytes_fp16 > 0 ? (uint64_t)f->bytes_fp16 : (uint64_t)f->rows * (uint64_t)f->dim * 2;
}

uint64_t as_plan_dp_bytes(const as_features *f, int64_t K)
{
    if (!as_features_has_mem(f)) return as_plan_table_bytes(f);
    const as_trmem *x = &f->mem;
    const double io = as_trmem_io(x);
    return (uint64_t)llround(x->weights + x->optimizer + io / (double)(K > 0 ? K : 1));
}

double as_plan_dp_comm_bytes(const as_features *f, int64_t K)
{
    const double e = f->data_type[0] ? as_mcfg_dtype_bytes(f->data_type) : 2;
    return as_plan_dp_allreduce_bytes(f->rows, f->dim, e > 0 ? e : 2, K);
}

/* sort order: key descending, then bytes descending, then id descending */
typedef struct {
    const double *key;
    const uint64_t *bytes;
    const as_features *const *t;
} order_ctx;

static int order_cmp(const void *a, const void *b, void *arg)
{
    const order_ctx *c = arg;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (c->key[i] != c->key[j]) return c->key[i] > c->key[j] ? -1 : 1;
    if (c->bytes[i] != c->bytes[j]) return c->bytes[i] > c->bytes[j] ? -1 : 1;
    if (c->t[i]->id != c->t[j]->id) return c->t[i]->id > c->t[j]->id ? -1 : 1;
    return 0;
}

void as_plan_order(int64_t *order, const double *key, const uint64_t *bytes, const as_features *const *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) order[i] = i;
    order_ctx oc = { key, bytes, t };
    qsort_r(order, (size_t)n, sizeof *order, order_cmp, &oc);
}

int as_plan_fits(uint64_t cap, uint64_t used, uint64_t b)
{
    return cap == 0 || (used <= cap && b <= cap - used);
}

void as_plan_free(as_plan *p)
{
    if (!p) return;
    free(p->assign);
    free(p->mem);
    free(p->count);
    free(p->key);
    free(p->pred);
    free(p->infeasible);
    free(p->pieces);
    memset(p, 0, sizeof *p);
}

/* the configuration makes a plan: shards, a known planner, the model or policy it needs,
 * a model with a representation; 0 ok, -1 with err */
static int check_cfg(const as_plan_cfg *c, char *err, size_t errlen)
{
    if (c->shards < 1) { snprintf(err, errlen, "a plan needs at least one shard"); return -1; }
    const as_planner *pl = as_planner_of(c->alg);
    if (!pl) { snprintf(err, errlen, "unknown algorithm"); return -1; }
    const as_plan_model *m = c->model;
    if ((pl->needs & AS_PLANNER_MODEL) && !m) { snprintf(err, errlen, "%s needs a cost model", as_alg_name(c->alg)); return -1; }
    if ((pl->needs & (AS_PLANNER_POLICY | AS_PLANNER_PLACEMENT)) && (!c->policy || !c->policy->place)) {
        snprintf(err, errlen, "%s needs %s", as_alg_name(c->alg), pl->needs & AS_PLANNER_POLICY ? "a policy" : "its placement");
        return -1;
    }
    if (m && (m->rep < 1 || !m->embed || !m->head)) {
        snprintf(err, errlen, "cost model: representation width %d", m->rep);
        return -1;
    }
    return 0;
}

/* a data-parallel entry of a placement: the whole table on every shard; 0 ok, -1 with err */
static int put_dp(as_plan_ctx *x, int64_t i, char *err, size_t errlen)
{
    const as_features *f = x->t[i];
    const int64_t K = x->c->shards;
    if (!as_piece_whole(&f->piece)) {
        snprintf(err, errlen, "policy made a piece of table %" PRId64 " data parallel", f->id);
        return -1;
    }
    x->p->assign[i] = AS_DP;
    x->p->ndp++;
    const uint64_t b = as_plan_dp_bytes(f, K);
    for (int64_t k = 0; k < K; k++) {
        x->p->mem[k] += b;
        if (x->c->mem_cap && x->p->mem[k] > x->c->mem_cap) {
            snprintf(err, errlen, "policy put data-parallel table %" PRId64 " over shard %" PRId64 "'s cap", f->id, k);
            return -1;
        }
    }
    return 0;
}

int as_plan_make_placed(as_plan_ctx *x, char *err, size_t errlen)
{
    const as_plan_cfg *c = x->c;
    const int64_t K = c->shards, n = x->n;
    int64_t *a = as_malloc((size_t)(n ? n : 1) * sizeof *a);
    int rc = c->policy->place(c->policy->ctx, x->t, n, K, c->mem_cap, a, err, errlen);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const int64_t id = x->t[i]->id;
        if (a[i] < AS_DP || a[i] >= K) { snprintf(err, errlen, "policy put table %" PRId64 " on shard %" PRId64, id, a[i]); rc = -1; break; }
        /* a learned policy keeps TorchRec's row_wise blocks on their ranks; a placement given as
           it is (plan.h as_plan_policy.given) is not checked */
        if (as_plan_pinned(x, i) && !c->policy->given && a[i] != -1 && a[i] != x->pin[i]) {
            snprintf(err, errlen, "policy put row block %" PRId64 " of table %" PRId64 " (TorchRec's row_wise) on shard %"
                     PRId64 ", not its rank %" PRId64, x->pin[i], id, a[i], x->pin[i]);
            rc = -1;
            break;
        }
        if (a[i] == -1) { as_plan_unplaced(x, i); continue; }
        if (a[i] == AS_DP) { rc = put_dp(x, i, err, errlen); continue; }
        as_plan_put(x, i, a[i]);
        if (c->mem_cap && x->p->mem[a[i]] > c->mem_cap) {
            snprintf(err, errlen, "policy put table %" PRId64 " over shard %" PRId64 "'s cap", id, a[i]);
            rc = -1;
        }
    }
    free(a);
    return rc;
}

/* the autoshard planner: the learned policy's placement (as-plan gives it as c->policy; the
   policy itself is lib/rl/'s, behind that callback, so that planning does not depend on it) */
const as_planner as_planner_autoshard = {
    .needs = AS_PLANNER_POLICY,
    .help = "the learned policy (as-rl; needs --policy): tables in the cost-greedy\n"
            "order, each on the shard of the highest policy logit where it fits;\n"
            "with --samples N, N-1 more plans drawn from the policy and the one\n"
            "of best predicted balance kept",
    .make = as_plan_make_placed,
};

/* the model's prediction of each shard (pred) from the shards' summed representations
 * (summed here unless the planner summed them while placing); empty shards: 0 */
static void model_pred(as_plan_ctx *x)
{
    as_plan *p = x->p;
    const as_plan_model *m = x->c->model;
    const int R = m->rep;
    const int64_t K = x->c->shards;
    if (!x->summed)
        for (int64_t i = 0; i < x->n; i++) {
            if (p->assign[i] < 0) continue;
            float *s = x->sum + (size_t)p->assign[i] * R;
            const float *r = x->rep + (size_t)i * R;
            for (int d = 0; d < R; d++) s[d] += r[d];
        }
    p->pred = as_malloc((size_t)K * sizeof *p->pred);
    for (int64_t k = 0; k < K; k++) p->pred[k] = p->count[k] ? m->head(m->ctx, x->sum + (size_t)k * R) : 0;   /* empty: 0 */
    const double dp = as_plan_dp_pred(m, p->assign, x->rep, x->n, K);
    for (int64_t k = 0; k < K; k++) p->pred[k] += dp;
}

double as_plan_dp_pred(const as_plan_model *m, const int64_t *assign, const float *rep, int64_t n, int64_t K)
{
    const int R = m->rep;
    float *s = NULL;
    for (int64_t i = 0; i < n; i++) {
        if (assign[i] != AS_DP) continue;
        if (!s) s = as_calloc((size_t)R, sizeof *s);
        for (int d = 0; d < R; d++) s[d] += rep[(size_t)i * R + d];
    }
    if (!s) return 0;
    const double v = m->head(m->ctx, s) / (double)(K > 0 ? K : 1);
    free(s);
    return v;
}

double *as_plan_pin_work(const as_plan_cfg *c, const as_features *const *t, int64_t n, const float *rep)
{
    const as_plan_model *m = c->model;
    if (!m || !rep || as_comm_local(c->comm_model) < 2) return NULL;
    double *w = as_malloc((size_t)(n ? n : 1) * sizeof *w);
    for (int64_t i = 0; i < n; i++) {
        double in, out;
        as_comm_bytes(t[i], &in, &out);
        w[i] = m->head(m->ctx, rep + (size_t)i * m->rep) + as_comm_item_ms(c->comm_model, c->shards, AS_SH_TWRW, in, out);
    }
    return w;
}

int as_plan_make(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n,
                 char *err, size_t errlen)
{
    double t0 = as_now();
    memset(p, 0, sizeof *p);
    int64_t K = c->shards;
    if (check_cfg(c, err, errlen)) return -1;
    const as_plan_model *m = c->model;
    p->n = n;
    p->shards = K;
    p->assign = as_malloc((size_t)(n ? n : 1) * sizeof *p->assign);
    p->mem = as_calloc((size_t)K, sizeof *p->mem);
    p->count = as_calloc((size_t)K, sizeof *p->count);
    p->key = as_calloc((size_t)K, sizeof *p->key);
    p->infeasible = as_malloc((size_t)(n ? n : 1) * sizeof *p->infeasible);
    uint64_t *bytes = as_malloc((size_t)(n ? n : 1) * sizeof *bytes);
    for (int64_t i = 0; i < n; i++) { bytes[i] = as_plan_table_bytes(t[i]); p->assign[i] = -1; }
    as_plan_ctx x = { .p = p, .c = c, .t = t, .n = n, .bytes = bytes };

    /* the model's item representations, when there is a model */
    if (m) {
        const int R = m->rep;
        float *rep = as_malloc((size_t)(n ? n : 1) * (size_t)R * sizeof *rep);
        x.sum = as_calloc((size_t)K * (size_t)R, sizeof *x.sum);
        for (int64_t i = 0; i < n; i++) m->embed(m->ctx, t[i], rep + (size_t)i * R);
        x.rep = rep;
    }
    /* TorchRec's row_wise blocks: on their ranks before the planner places the rest */
    int64_t *pin = as_malloc((size_t)(n ? n : 1) * sizeof *pin);
    double *work = as_plan_pin_work(c, t, n, x.rep);
    const int64_t npin = as_plan_pins_hosts(t, n, K, as_comm_local(c->comm_model), work, pin, NULL);
    free(work);
    if (npin) {
        x.pin = pin;
        if (!(as_planner_of(c->alg)->needs & (AS_PLANNER_POLICY | AS_PLANNER_PLACEMENT)))
            for (int64_t i = 0; i < n; i++) {
                if (pin[i] < 0) continue;
                if (as_plan_fits(c->mem_cap, p->mem[pin[i]], bytes[i])) as_plan_put(&x, i, pin[i]);
                else as_plan_unplaced(&x, i);
            }
    }
    int rc = as_planner_of(c->alg)->make(&x, err, errlen);
    free(pin);
    if (!rc && m) model_pred(&x);
    p->feasible = p->ninfeasible == 0;
    free((float *)x.rep);
    free(x.sum);
    free(bytes);
    if (rc) {
        as_plan_free(p);
        return -1;
    }
    p->plan_ms = (as_now() - t0) * 1e3;
    return 0;
}

double as_plan_dp_allreduce_bytes(int64_t rows, int64_t dim, double elt, int64_t K)
{
    return K > 1 ? 2.0 * (double)(K - 1) / (double)K * (double)rows * (double)dim * elt : 0;
}

