/* refine.c - local search on the cost model after any planning algorithm (refine.h).
 * Dimension letters: T items of a plan, K shards, W the width of a shard's summed vector. */
#include "refine.h"
#include "common.h"
#include "objective.h"
#include "pins.h"
#include "split.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-6   /* a step must gain more than one part in a million */

/* the local search's state over a plan: the items, the shards' sums and costs */
typedef struct {
    const as_plan_items *pi;        /* the items' vectors (plan.h): post of pre sums, or head
                                       of rep sums */
    int W;
    int64_t n, K;
    uint64_t cap;
    const float *w;                 /* [T][W] each item's vector */
    const uint64_t *bytes;          /* [T] */
    const double *kv;               /* [T] each item's key */
    double *S;                      /* [K][W] each shard's sum of its items' vectors */
    double *cost;                   /* [K] the search's predicted cost of each shard */
    float *tmp;                     /* [W] */
    int64_t *assign, *count;        /* p's */
    uint64_t *mem;
    double *key;
    unsigned char *dirty;           /* [K] shards a step or a placement changed */
    const double *cm;               /* [T] each item's communication (ms), NULL: none */
    double *csum;                   /* [K] the sum of cm over each shard's items */
    const double *scale;            /* [K] factors on the kernel cost (cfg shard_scale), NULL: 1 */
    const int64_t *pin;             /* [T] TorchRec's row_wise blocks' ranks (pins.h): never
                                       moved; -1 for the others */
    as_objective *obj;              /* the plan's communication (objective.h), NULL: none */
    double shared;                  /* the communication every shard pays alike (0: none) */
} search_state;

/* the communication of shard k with item add added and item sub taken off */
static double comm_with(const search_state *x, int64_t k, int64_t add, int64_t sub)
{
    if (!x->cm) return 0;
    return x->shared + x->csum[k] + (add >= 0 ? x->cm[add] : 0) - (sub >= 0 ? x->cm[sub] : 0);
}

/* the predicted kernel cost of the vector in tmp on shard k */
static double eval_tmp(const search_state *x, int64_t k)
{
    const double v = as_plan_items_cost(x->pi, x->tmp);
    return x->scale ? x->scale[k] * v : v;
}

/* the predicted cost of shard k with item add added and item sub taken off (-1: none);
 * cnt: the items it would then hold (0: cost 0) */
static double cost_with(const search_state *x, int64_t k, int64_t add, int64_t sub, int64_t cnt)
{
    if (cnt == 0) return x->shared;
    const int W = x->W;
    const double *s = x->S + (size_t)k * W;
    const float *a = add >= 0 ? x->w + (size_t)add * W : NULL, *b = sub >= 0 ? x->w + (size_t)sub * W : NULL;
    if (a && b) for (int d = 0; d < W; d++) x->tmp[d] = (float)(s[d] + a[d] - b[d]);
    else if (a) for (int d = 0; d < W; d++) x->tmp[d] = (float)(s[d] + a[d]);
    else if (b) for (int d = 0; d < W; d++) x->tmp[d] = (float)(s[d] - b[d]);
    else for (int d = 0; d < W; d++) x->tmp[d] = (float)s[d];
    return eval_tmp(x, k) + comm_with(x, k, add, sub);
}

/* item i onto shard k (from -1: an unplaced item) */
static void put(search_state *x, int64_t i, int64_t k)
{
    const int W = x->W;
    const float *wi = x->w + (size_t)i * W;
    int64_t from = x->assign[i];
    if (from >= 0) {
        double *s = x->S + (size_t)from * W;
        x->count[from]--;
        if (x->cm) x->csum[from] = x->count[from] ? x->csum[from] - x->cm[i] : 0;
        x->mem[from] -= x->bytes[i];
        x->key[from] -= x->kv[i];
        if (x->count[from]) for (int d = 0; d < W; d++) s[d] -= wi[d];
        else memset(s, 0, (size_t)W * sizeof *s);   /* empty: exactly nothing left */
        x->dirty[from] = 1;
    }
    double *s = x->S + (size_t)k * W;
    for (int d = 0; d < W; d++) s[d] += wi[d];
    if (x->cm) x->csum[k] += x->cm[i];
    x->count[k]++;
    x->mem[k] += x->bytes[i];
    x->key[k] += x->kv[i];
    x->assign[i] = k;
    x->dirty[k] = 1;
}

/* place every unplaced item (u[0..*nu), in order) that fits somewhere now, where the
 * resulting shard's cost is lowest (ties: smaller bytes, then lower shard); returns how many */
static int64_t place_unplaced(search_state *x, int64_t *u, int64_t *nu)
{
    int64_t placed = 0, keep = 0;
    for (int64_t q = 0; q < *nu; q++) {
        int64_t i = u[q], best = -1;
        double bv = 0;
        for (int64_t k = 0; k < x->K; k++) {
            if (!as_plan_fits(x->cap, x->mem[k], x->bytes[i]) || (x->pin[i] >= 0 && k != x->pin[i])) continue;
            double v = cost_with(x, k, i, -1, x->count[k] + 1);
            if (best < 0 || v < bv || (v == bv && x->mem[k] < x->mem[best])) { best = k; bv = v; }
        }
        if (best < 0) { u[keep++] = i; continue; }
        put(x, i, best);
        x->cost[best] = bv;
        placed++;
        if (x->obj) {
            /* the plan's totals grew: every shard's shared communication with them */
            as_obj_put(x->obj, i, best);
            const double sh = as_obj_shared_ms(x->obj), d = sh - x->shared;
            for (int64_t k = 0; k < x->K; k++) x->cost[k] += d;
            x->shared = sh;
        }
    }
    *nu = keep;
    return placed;
}

/* the best improving step found so far */
typedef struct {
    int kind;                       /* 0 none, 1 move, 2 swap */
    int64_t i, b, j;                /* item i of a to shard b (swap: item j of b to a) */
    double ca, cb, max, ss;
} cand;

typedef struct {
    int64_t a;
    double M, SS, tolM, tolS;
    int64_t top[3];                 /* the three costliest shards (ties: lower id), -1: none */
} stepctx;

/* the costliest shard other than a and b (-INFINITY when there is none) */
static double rest_max(const search_state *x, const stepctx *s, int64_t b)
{
    for (int q = 0; q < 3; q++) {
        int64_t k = s->top[q];
        if (k < 0) break;
        if (k != s->a && k != b) return x->cost[k];
    }
    return -INFINITY;
}

static void consider(const search_state *x, const stepctx *s, cand *c, int kind, int64_t i, int64_t b, int64_t j, double ca,
                     double cb)
{
    double mx = ca > cb ? ca : cb, r = rest_max(x, s, b);
    if (r > mx) mx = r;
    if (!(mx <= s->M)) return;
    double ca0 = x->cost[s->a], cb0 = x->cost[b];
    double ss = s->SS - ca0 * ca0 - cb0 * cb0 + ca * ca + cb * cb;
    if (!(mx < s->M - s->tolM || ss < s->SS - s->tolS)) return;
    if (c->kind && !(mx < c->max || (mx == c->max && ss < c->ss))) return;
    *c = (cand){ kind, i, b, j, ca, cb, mx, ss };
}

static int out_of_time(double t0, double budget_ms)
{
    return budget_ms > 0 && (as_now() - t0) * 1e3 >= budget_ms;
}

/* shard k's predicted cost of plan p from its items' embeddings rep[n][R] (fs[R] scratch),
   as as_plan_make computes it; 0 for an empty shard */
static double shard_pred(const as_plan_model *m, const as_plan *p, const float *rep, int64_t k, float *fs)
{
    const int R = m->rep;
    memset(fs, 0, (size_t)R * sizeof *fs);
    for (int64_t i = 0; i < p->n; i++)
        if (p->assign[i] == k)
            for (int d = 0; d < R; d++) fs[d] += rep[(size_t)i * R + d];
    /* the data-parallel tables' kernel on every shard: the same for all, so the search's
       steps (which never move them) compare shards without it */
    return (p->count[k] ? m->head(m->ctx, fs) : 0) + (p->ndp ? as_plan_dp_pred(m, p->assign, rep, p->n, p->shards) : 0);
}

/* a step's context: the slowest shard a, the three slowest, the sum of squares, tolerances */
static stepctx step_of(const search_state *x)
{
    stepctx s = { 0, 0, 0, 0, 0, { -1, -1, -1 } };
    for (int64_t k = 0; k < x->K; k++) {
        double v = x->cost[k];
        s.SS += v * v;
        for (int q = 0; q < 3; q++)
            if (s.top[q] < 0 || v > x->cost[s.top[q]]) {
                for (int r = 2; r > q; r--) s.top[r] = s.top[r - 1];
                s.top[q] = k;
                break;
            }
    }
    s.a = s.top[0];
    s.M = x->cost[s.a];
    s.tolM = REL_TOL * fabs(s.M);
    s.tolS = REL_TOL * s.SS;
    return s;
}

/* the best move of an item of the slowest shard to another shard into *best (items grouped
   by shard: start, order); 1 when the time budget ran out, else 0 */
static int best_move(const search_state *x, const stepctx *s, cand *best, const int64_t *start, const int64_t *order, double t0,
                     double budget_ms)
{
    const int64_t a = s->a;
    for (int64_t q = start[a]; q < start[a + 1]; q++) {
        int64_t i = order[q];
        if (out_of_time(t0, budget_ms)) return 1;
        if (x->pin[i] >= 0) continue;
        double ca = cost_with(x, a, -1, i, x->count[a] - 1);
        if (!(ca <= s->M)) continue;
        for (int64_t b = 0; b < x->K; b++) {
            if (b == a || !as_plan_fits(x->cap, x->mem[b], x->bytes[i])) continue;
            double cb = cost_with(x, b, i, -1, x->count[b] + 1);
            if (cb <= s->M) consider(x, s, best, 1, i, b, -1, ca, cb);
        }
    }
    return 0;
}

/* the best swap of an item of the slowest shard with one of another shard into *best (when
 * no move improves). The inner loop is the search's hot spot: a without i (da) and b with i
 * (eb) are formed once, so a candidate costs one float vector sum and one head evaluation
 * per shard. 1 when the time budget ran out, else 0 */
static int best_swap(search_state *x, const stepctx *s, cand *best, const int64_t *start, const int64_t *order, float *da,
                     float *eb, double t0, double budget_ms)
{
    const int64_t a = s->a;
    const int W = x->W;
    const double *cm = x->cm, *csum = x->csum;
    for (int64_t q = start[a]; q < start[a + 1] && !best->kind; q++) {
        int64_t i = order[q];
        if (out_of_time(t0, budget_ms)) return 1;
        if (x->pin[i] >= 0) continue;
        const float *wi = x->w + (size_t)i * W;
        const double *sa = x->S + (size_t)a * W;
        for (int d = 0; d < W; d++) da[d] = (float)(sa[d] - wi[d]);
        for (int64_t b = 0; b < x->K; b++) {
            if (b == a || start[b + 1] == start[b]) continue;
            const double *sb = x->S + (size_t)b * W;
            for (int d = 0; d < W; d++) eb[d] = (float)(sb[d] + wi[d]);
            for (int64_t r = start[b]; r < start[b + 1]; r++) {
                int64_t j = order[r];
                if (x->pin[j] >= 0) continue;
                if (!as_plan_fits(x->cap, x->mem[a] - x->bytes[i], x->bytes[j]) ||
                    !as_plan_fits(x->cap, x->mem[b] - x->bytes[j], x->bytes[i]))
                    continue;
                const float *wj = x->w + (size_t)j * W;
                for (int d = 0; d < W; d++) x->tmp[d] = eb[d] - wj[d];
                double cb = eval_tmp(x, b) + (cm ? x->shared + csum[b] + cm[i] - cm[j] : 0);
                if (!(cb <= s->M)) continue;
                for (int d = 0; d < W; d++) x->tmp[d] = da[d] + wj[d];
                double ca = eval_tmp(x, a) + (cm ? x->shared + csum[a] - cm[i] + cm[j] : 0);
                if (ca <= s->M) consider(x, s, best, 2, i, b, j, ca, cb);
            }
        }
    }
    return 0;
}

/* the items unplaced in p (assign -1) into u, in the order of p->infeasible (ids may
   repeat: each entry takes the first unplaced item of its id not taken yet), those not
   listed after; returns how many */
static int64_t unplaced_order(const as_plan *p, const as_features *const *t, int64_t n, int64_t *u)
{
    int64_t nu = 0;
    unsigned char *taken = as_calloc((size_t)(n ? n : 1), 1);
    for (int64_t q = 0; q < p->ninfeasible; q++)
        for (int64_t i = 0; i < n; i++)
            if (p->assign[i] == -1 && !taken[i] && t[i]->id == p->infeasible[q]) { taken[i] = 1; u[nu++] = i; break; }
    for (int64_t i = 0; i < n; i++)
        if (p->assign[i] == -1 && !taken[i]) u[nu++] = i;   /* not listed: after the listed ones */
    free(taken);
    return nu;
}

/* a plan's placement as it came, to go back to */
typedef struct {
    int64_t *assign, *count;
    uint64_t *mem;
    double *key;
} saved;

static saved plan_save(const as_plan *p)
{
    const int64_t n = p->n, K = p->shards;
    saved v = { as_malloc((size_t)(n ? n : 1) * sizeof *v.assign), as_malloc((size_t)K * sizeof *v.count),
                as_malloc((size_t)K * sizeof *v.mem), as_malloc((size_t)K * sizeof *v.key) };
    memcpy(v.assign, p->assign, (size_t)n * sizeof *v.assign);
    memcpy(v.count, p->count, (size_t)K * sizeof *v.count);
    memcpy(v.mem, p->mem, (size_t)K * sizeof *v.mem);
    memcpy(v.key, p->key, (size_t)K * sizeof *v.key);
    return v;
}

static void plan_restore(as_plan *p, const saved *v)
{
    memcpy(p->assign, v->assign, (size_t)p->n * sizeof *v->assign);
    memcpy(p->count, v->count, (size_t)p->shards * sizeof *v->count);
    memcpy(p->mem, v->mem, (size_t)p->shards * sizeof *v->mem);
    memcpy(p->key, v->key, (size_t)p->shards * sizeof *v->key);
}

static void saved_free(saved *v)
{
    free(v->assign);
    free(v->count);
    free(v->mem);
    free(v->key);
}

/* the model and the plan fit refining: a cost model with a representation, a plan of the
 * n tables on the configuration's shards, budgets not negative; 0 ok, -1 with err */
static int check_args(const as_plan *p, const as_plan_cfg *c, int64_t n, double budget_ms, int64_t budget_steps,
                      char *err, size_t errlen)
{
    const as_plan_model *m = c->model;
    if (!m) { snprintf(err, errlen, "refine needs a cost model"); return -1; }
    if (m->rep < 1 || !m->embed || !m->head) {
        snprintf(err, errlen, "cost model: representation width %d", m->rep);
        return -1;
    }
    if (p->n != n || p->shards != c->shards || c->shards < 1) {
        snprintf(err, errlen, "refine: a plan of %" PRId64 " tables on %" PRId64 " shards, not %" PRId64 " on %" PRId64,
                 p->n, p->shards, n, c->shards);
        return -1;
    }
    if (!(budget_ms >= 0) || budget_steps < 0) { snprintf(err, errlen, "refine: a negative budget"); return -1; }
    return 0;
}

/* what the search knows of each item, computed once */
typedef struct {
    as_plan_items pi;               /* each item's embedding rep[T][R] and vector w[T][W]
                                       (rep itself when not split; plan.h) */
    uint64_t *bytes;                /* [T] */
    double *kv;                     /* [T] each item's key */
    double *cm, *csum;              /* [T] each item's own communication (as_obj_own_ms), [K] each
                                       shard's sum; NULL when not charged */
    as_objective *obj;              /* the plan's communication, NULL when not charged */
    int64_t *pin;                   /* [T] pinned items' ranks, -1 (pins.h) */
} items;

/* each item's embedding, vector, bytes and key; its communication and each shard's sum
 * of it, when charged */
static items items_of(const as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n)
{
    const as_plan_model *m = c->model;
    const int64_t K = c->shards;
    const size_t n1 = (size_t)(n ? n : 1);
    items it = { 0 };
    as_plan_items_init(&it.pi, m, t, n, NULL, NULL);
    const int R = it.pi.R;
    it.bytes = as_malloc(n1 * sizeof *it.bytes);
    it.kv = as_malloc(n1 * sizeof *it.kv);
    it.pin = as_malloc(n1 * sizeof *it.pin);
    /* pinned: TorchRec's row_wise and table_row_wise blocks, on the hosts as_plan_make chose */
    double *work = as_plan_pin_work(c, t, n, it.pi.rep);
    as_plan_pins_hosts(t, n, K, as_comm_local(c->comm_model), work, it.pin, NULL);
    free(work);
    for (int64_t i = 0; i < n; i++) {
        it.bytes[i] = as_plan_table_bytes(t[i]);
        it.kv[i] = as_plan_item_key(c, t[i], it.pi.rep + (size_t)i * R);
    }
    const int ab = c->comm_model && c->comm_model->ab;
    if (c->comm_gbps > 0 || ab) {
        /* the one objective's communication (its kernels are the search's own) */
        const as_plan_cfg cc = { .shards = K, .comm_gbps = c->comm_gbps, .comm_model = c->comm_model };
        it.obj = as_malloc(sizeof *it.obj);
        as_obj_init(it.obj, &cc, t, n);
        as_obj_load(it.obj, p->assign);
        it.cm = as_malloc(n1 * sizeof *it.cm);
        it.csum = as_calloc((size_t)K, sizeof *it.csum);
        for (int64_t i = 0; i < n; i++) {
            it.cm[i] = as_obj_own_ms(it.obj, i);
            if (p->assign[i] >= 0) it.csum[p->assign[i]] += it.cm[i];
        }
    }
    return it;
}

static void items_free(items *it)
{
    free(it->cm);
    free(it->csum);
    as_obj_free(it->obj);
    free(it->obj);
    free(it->kv);
    free(it->pin);
    free(it->bytes);
    as_plan_items_free(&it->pi);
}

/* the search's state over p: each shard's summed vector and predicted cost */
static search_state search_state_of(as_plan *p, const as_plan_cfg *c, const items *it, int64_t n)
{
    const int64_t K = c->shards;
    const int W = it->pi.W;
    search_state x = { &it->pi, W, n, K, c->mem_cap, it->pi.w, it->bytes, it->kv,
             as_calloc((size_t)K * (size_t)W, sizeof(double)), as_malloc((size_t)K * sizeof(double)),
             as_malloc((size_t)W * sizeof(float)), p->assign, p->count, p->mem, p->key, as_calloc((size_t)K, 1), it->cm,
             it->csum, c->shard_scale, it->pin, it->obj, it->obj ? as_obj_shared_ms(it->obj) : 0 };
    for (int64_t i = 0; i < n; i++) {
        if (p->assign[i] < 0) continue;
        double *s = x.S + (size_t)p->assign[i] * W;
        const float *wi = it->pi.w + (size_t)i * W;
        for (int d = 0; d < W; d++) s[d] += wi[d];
    }
    for (int64_t k = 0; k < K; k++) x.cost[k] = cost_with(&x, k, -1, -1, p->count[k]);
    return x;
}

static void search_state_free(search_state *x)
{
    free(x->S);
    free(x->cost);
    free(x->tmp);
    free(x->dirty);
}

/* the steps: the unplaced items u[0..*nu) placed where they fit, then the slowest shard's
 * best move, else its best swap, until none gains, the budget is spent or there are fewer
 * than 2 shards; the steps taken into *moves, *swaps, *placed; returns why it stopped */
static const char *search(search_state *x, as_plan *p, int64_t *u, int64_t *nu, double t0, double budget_ms,
                          int64_t budget_steps, int64_t *moves, int64_t *swaps, int64_t *placed)
{
    const int64_t K = x->K, n = x->n;
    const int W = x->W;
    int64_t *start = as_malloc((size_t)(K + 2) * sizeof *start), *order = as_malloc((size_t)(n ? n : 1) * sizeof *order);
    const char *stop = "optimum";
    float *da = as_malloc((size_t)W * sizeof *da), *eb = as_malloc((size_t)W * sizeof *eb);
    for (;;) {
        if (*nu) *placed += place_unplaced(x, u, nu);
        if (budget_steps && *moves + *swaps >= budget_steps) { stop = "steps"; break; }
        if (out_of_time(t0, budget_ms)) { stop = "time"; break; }
        if (K < 2) break;
        const stepctx s = step_of(x);
        const int64_t a = s.a;
        as_plan_group(start, order, p->assign, n, K);
        cand best = { 0 };
        int late = best_move(x, &s, &best, start, order, t0, budget_ms);
        if (!best.kind && !late) late = best_swap(x, &s, &best, start, order, da, eb, t0, budget_ms);
        if (late) { stop = "time"; break; }
        if (!best.kind) break;
        put(x, best.i, best.b);
        if (best.kind == 2) { put(x, best.j, a); (*swaps)++; }
        else (*moves)++;
        x->cost[a] = best.ca;
        x->cost[best.b] = best.cb;
    }
    free(da);
    free(eb);
    free(start);
    free(order);
    return stop;
}

/* the refined plan's pred (the changed shards' recomputed, as as_plan_make computes it),
 * or the input plan back (sv) when nothing was placed and rounding made the steps' gains a
 * loss over max_before; returns 1 when it went back */
static int settle(as_plan *p, const search_state *x, const float *rep, float *fs, double max_before, int64_t placed,
                  const saved *sv)
{
    const int64_t K = x->K;
    const double *sc = x->scale, *csum = x->csum;
    double *pred = as_malloc((size_t)K * sizeof *pred);
    memcpy(pred, p->pred, (size_t)K * sizeof *pred);
    double max_after = -INFINITY;
    for (int64_t k = 0; k < K; k++) {
        if (x->dirty[k]) pred[k] = shard_pred(x->pi->m, p, rep, k, fs);
        const double v = (sc ? sc[k] : 1) * pred[k] + (csum ? x->shared + (p->count[k] ? csum[k] : 0) : 0);
        if (v > max_after) max_after = v;
    }
    int back = 0;
    if (!placed && K && max_after > max_before) {
        /* rounding made the steps' gains a loss: the input plan stays */
        plan_restore(p, sv);
        back = 1;
    } else {
        memcpy(p->pred, pred, (size_t)K * sizeof *pred);
    }
    free(pred);
    return back;
}

int as_plan_refine(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, double budget_ms,
                   int64_t budget_steps, char *err, size_t errlen)
{
    double t0 = as_now();
    const as_plan_model *m = c->model;
    if (check_args(p, c, n, budget_ms, budget_steps, err, errlen)) return -1;
    const int64_t K = c->shards;

    /* each item's embedding, vector, bytes and key, and its communication when charged */
    items it = items_of(p, c, t, n);

    /* pred of the input (as as_plan_make computes it) when the plan was made without a model */
    float *fs = as_malloc((size_t)it.pi.R * sizeof *fs);
    if (!p->pred) {
        p->pred = as_malloc((size_t)K * sizeof *p->pred);
        for (int64_t k = 0; k < K; k++) p->pred[k] = shard_pred(m, p, it.pi.rep, k, fs);
    }
    const double *sc = c->shard_scale;
    double max_before = -INFINITY;
    for (int64_t k = 0; k < K; k++) {
        const double v = (sc ? sc[k] : 1) * p->pred[k] + (it.csum ? as_obj_shared_ms(it.obj) + (p->count[k] ? it.csum[k] : 0) : 0);
        if (v > max_before) max_before = v;
    }
    if (!K) max_before = 0;

    /* the input plan, to go back to */
    saved sv = plan_save(p);
    search_state x = search_state_of(p, c, &it, n);

    /* the unplaced items in the order of p->infeasible (ids may repeat: each entry takes the
     * first unplaced item of its id not taken yet) */
    int64_t *u = as_malloc((size_t)(n ? n : 1) * sizeof *u), nu = unplaced_order(p, t, n, u);
    int64_t moves = 0, swaps = 0, placed = 0;
    const char *stop = search(&x, p, u, &nu, t0, budget_ms, budget_steps, &moves, &swaps, &placed);

    if (settle(p, &x, it.pi.rep, fs, max_before, placed, &sv)) moves = swaps = 0;
    if (placed) {
        for (int64_t q = 0; q < nu; q++) p->infeasible[q] = t[u[q]]->id;
        p->ninfeasible = nu;
        p->feasible = nu == 0;
    }
    free(u);
    search_state_free(&x);
    saved_free(&sv);
    free(fs);
    items_free(&it);

    double ms = (as_now() - t0) * 1e3;
    p->refine = (as_plan_refined){ 1, moves, swaps, placed, ms, max_before, budget_ms, budget_steps, stop };
    p->plan_ms += ms;
    return 0;
}
