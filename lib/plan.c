/* plan.c - sharding plans: heuristics, cost-model greedy, 2D rank map, plan records.
 * Dimension letters: T tables of a task, K shards, W world size, G = W/K replicas. */
#include "plan.h"
#include "common.h"
#include "modelcfg.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *as_plan_alg_label(const as_plan *p, as_alg a, char *buf, size_t len)
{
    return as_plan_label_format(a, p && p->split, p && p->replicated, p && p->refine.done, p ? p->measured : 0, buf, len);
}

const char *as_plan_meta_label(const as_plan *p, const as_plan_meta *m, char *buf, size_t len)
{
    return m->label ? m->label : as_plan_alg_label(p, m->alg, buf, len);
}

double as_plan_key(as_alg a, const as_features *f)
{
    switch (a) {
    case AS_ALG_SIZE: return (double)f->rows * (double)f->dim;
    case AS_ALG_DIM: return (double)f->dim;
    case AS_ALG_LOOKUP: return (double)f->dim * f->pooling;
    case AS_ALG_SIZE_LOOKUP: return (double)f->dim * f->pooling * log10((double)f->rows);
    default: return 0;
    }
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

/* the configuration makes a plan: shards, a known algorithm, the model or policy it needs,
 * a model with a representation; 0 ok, -1 with err */
static int check_cfg(const as_plan_cfg *c, char *err, size_t errlen)
{
    if (c->shards < 1) { snprintf(err, errlen, "a plan needs at least one shard"); return -1; }
    if ((unsigned)c->alg >= AS_ALG_COUNT) { snprintf(err, errlen, "unknown algorithm"); return -1; }
    const as_plan_model *m = c->model;
    if (c->alg == AS_ALG_COST && !m) { snprintf(err, errlen, "cost-greedy needs a cost model"); return -1; }
    if ((c->alg == AS_ALG_AUTOSHARD || c->alg == AS_ALG_TORCHREC) && (!c->policy || !c->policy->place)) {
        snprintf(err, errlen, "%s", c->alg == AS_ALG_AUTOSHARD ? "autoshard needs a policy" : "torchrec needs its placement");
        return -1;
    }
    if (m && (m->rep < 1 || !m->embed || !m->head)) {
        snprintf(err, errlen, "cost model: representation width %d", m->rep);
        return -1;
    }
    return 0;
}

/* random: each table, in input order, on a uniformly drawn shard among those it fits */
static void make_random(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, const uint64_t *bytes)
{
    const int64_t K = c->shards;
    as_rng rng;
    as_rng_seed(&rng, c->seed, (uint64_t)c->rng_stream);
    int64_t *ok = as_malloc((size_t)K * sizeof *ok);
    for (int64_t i = 0; i < n; i++) {
        int64_t nok = 0, k;
        for (k = 0; k < K; k++) if (as_plan_fits(c->mem_cap, p->mem[k], bytes[i])) ok[nok++] = k;
        if (!nok) { p->infeasible[p->ninfeasible++] = t[i]->id; continue; }
        k = ok[as_rng_below(&rng, (uint64_t)nok)];
        p->assign[i] = k;
        p->mem[k] += bytes[i];
        p->count[k]++;
    }
    free(ok);
}

/* autoshard, torchrec: the policy's placement, checked (shards in range, caps kept);
 * 0 ok, -1 with err */
static int make_placed(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, const uint64_t *bytes,
                       char *err, size_t errlen)
{
    const int64_t K = c->shards;
    int64_t *a = as_malloc((size_t)(n ? n : 1) * sizeof *a);
    int rc = c->policy->place(c->policy->ctx, t, n, K, c->mem_cap, a, err, errlen);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (a[i] < AS_DP || a[i] >= K) { snprintf(err, errlen, "policy put table %" PRId64 " on shard %" PRId64, t[i]->id, a[i]); rc = -1; break; }
        if (a[i] == -1) { p->infeasible[p->ninfeasible++] = t[i]->id; continue; }
        if (a[i] == AS_DP) {
            /* data parallel: the table on every shard */
            if (!as_piece_whole(&t[i]->piece)) { snprintf(err, errlen, "policy made a piece of table %" PRId64 " data parallel", t[i]->id); rc = -1; break; }
            p->assign[i] = AS_DP;
            p->ndp++;
            const uint64_t b = as_plan_dp_bytes(t[i], K);
            for (int64_t k = 0; k < K && rc == 0; k++) {
                p->mem[k] += b;
                if (c->mem_cap && p->mem[k] > c->mem_cap) {
                    snprintf(err, errlen, "policy put data-parallel table %" PRId64 " over shard %" PRId64 "'s cap", t[i]->id, k);
                    rc = -1;
                }
            }
            continue;
        }
        p->assign[i] = a[i];
        p->mem[a[i]] += bytes[i];
        p->count[a[i]]++;
        if (c->mem_cap && p->mem[a[i]] > c->mem_cap) {
            snprintf(err, errlen, "policy put table %" PRId64 " over shard %" PRId64 "'s cap", t[i]->id, a[i]);
            rc = -1;
        }
    }
    free(a);
    return rc;
}

/* the greedy algorithms: tables by descending key (as_plan_order), each onto the shard it
 * fits with the lowest value (the shard's key; cost-greedy: the model's cost of the shard
 * with the table, summed representations, or sums of pre with a split head); rep, sum: the
 * model's representations of the tables and the shards' sums (cost-greedy) */
static void make_greedy(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, const uint64_t *bytes,
                        const float *rep, float *sum)
{
    const int64_t K = c->shards;
    const as_plan_model *m = c->model;
    const int R = m ? m->rep : 0;
    double *key = as_malloc((size_t)(n ? n : 1) * sizeof *key);
    /* cost-greedy with a split head: pre of every table (rows 0..n) and shard (n..n+K) */
    int HD = c->alg == AS_ALG_COST && m->pre && m->post && m->hid > 0 ? m->hid : 0;
    /* one summed representation (R), or one sum of pre (HD) */
    float *tmp = c->alg == AS_ALG_COST ? as_malloc((size_t)(R > HD ? R : HD) * sizeof *tmp) : NULL;
    float *pre = HD ? as_calloc((size_t)(n + K) * HD, sizeof *pre) : NULL;
    for (int64_t i = 0; HD && i < n; i++) m->pre(m->ctx, rep + (size_t)i * R, pre + (size_t)i * HD);
    for (int64_t i = 0; i < n; i++)
        key[i] = c->alg == AS_ALG_COST ? m->head(m->ctx, rep + (size_t)i * R) : as_plan_key(c->alg, t[i]);
    int64_t *order = as_malloc((size_t)(n ? n : 1) * sizeof *order);
    as_plan_order(order, key, bytes, t, n);
    for (int64_t q = 0; q < n; q++) {
        int64_t i = order[q], best = -1;
        double bestv = 0;
        for (int64_t k = 0; k < K; k++) {
            if (!as_plan_fits(c->mem_cap, p->mem[k], bytes[i])) continue;
            double v;
            if (c->alg == AS_ALG_COST && pre) {
                const float *s = pre + (size_t)(n + k) * HD, *r = pre + (size_t)i * HD;
                for (int d = 0; d < HD; d++) tmp[d] = s[d] + r[d];
                v = m->post(m->ctx, tmp);
            } else if (c->alg == AS_ALG_COST) {
                const float *s = sum + (size_t)k * R, *r = rep + (size_t)i * R;
                for (int d = 0; d < R; d++) tmp[d] = s[d] + r[d];
                v = m->head(m->ctx, tmp);
            } else {
                v = p->key[k];
            }
            if (best < 0 || v < bestv || (v == bestv && p->mem[k] < p->mem[best])) { best = k; bestv = v; }
        }
        if (best < 0) { p->infeasible[p->ninfeasible++] = t[i]->id; continue; }
        p->assign[i] = best;
        p->mem[best] += bytes[i];
        p->count[best]++;
        p->key[best] += key[i];
        if (c->alg == AS_ALG_COST) {
            float *s = sum + (size_t)best * R;
            const float *r = rep + (size_t)i * R;
            for (int d = 0; d < R; d++) s[d] += r[d];
            if (pre) {
                float *ps = pre + (size_t)(n + best) * HD;
                const float *pr = pre + (size_t)i * HD;
                for (int d = 0; d < HD; d++) ps[d] += pr[d];
            }
        }
    }
    free(order);
    free(key);
    free(pre);
    free(tmp);
}

/* the model's prediction of each shard (pred) from the shards' summed representations
 * (summed here unless cost-greedy summed them while placing); empty shards: 0 */
static void model_pred(as_plan *p, const as_plan_cfg *c, int64_t n, const float *rep, float *sum)
{
    const as_plan_model *m = c->model;
    const int R = m->rep;
    const int64_t K = c->shards;
    if (c->alg != AS_ALG_COST)
        for (int64_t i = 0; i < n; i++) {
            if (p->assign[i] < 0) continue;
            float *s = sum + (size_t)p->assign[i] * R;
            const float *r = rep + (size_t)i * R;
            for (int d = 0; d < R; d++) s[d] += r[d];
        }
    p->pred = as_malloc((size_t)K * sizeof *p->pred);
    for (int64_t k = 0; k < K; k++) p->pred[k] = p->count[k] ? m->head(m->ctx, sum + (size_t)k * R) : 0;   /* empty: 0 */
    const double dp = as_plan_dp_pred(m, p->assign, rep, n, K);
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

    /* the model's table representations, when there is a model */
    int R = m ? m->rep : 0;
    float *rep = NULL, *sum = NULL;
    if (m) {
        rep = as_malloc((size_t)(n ? n : 1) * (size_t)R * sizeof *rep);
        sum = as_calloc((size_t)K * (size_t)R, sizeof *sum);
        for (int64_t i = 0; i < n; i++) m->embed(m->ctx, t[i], rep + (size_t)i * R);
    }

    if (c->alg == AS_ALG_RANDOM) {
        make_random(p, c, t, n, bytes);
    } else if (c->alg == AS_ALG_AUTOSHARD || c->alg == AS_ALG_TORCHREC) {
        if (make_placed(p, c, t, n, bytes, err, errlen)) {
            free(rep); free(sum); free(bytes);
            as_plan_free(p);
            return -1;
        }
    } else {
        make_greedy(p, c, t, n, bytes, rep, sum);
    }
    if (m) model_pred(p, c, n, rep, sum);
    p->feasible = p->ninfeasible == 0;
    free(rep);
    free(sum);
    free(bytes);
    p->plan_ms = (as_now() - t0) * 1e3;
    return 0;
}

int64_t as_plan_ranks(int64_t world, int64_t shards, int64_t k, int64_t *out)
{
    if (shards < 1 || world < shards || world % shards) return -1;
    int64_t G = world / shards;
    if (out)
        for (int64_t i = 0; i < G; i++) out[i] = as_plan_rank(G, k, i);
    return G;
}

void as_plan_dp_bags(int64_t B, int64_t K, int64_t k, int64_t *b0, int64_t *b1)
{
    const int64_t blk = K > 0 ? (B + K - 1) / K : B;
    *b0 = k * blk < B ? k * blk : B;
    *b1 = *b0 + blk < B ? *b0 + blk : B;
}

double as_plan_dp_allreduce_bytes(int64_t rows, int64_t dim, double elt, int64_t K)
{
    return K > 1 ? 2.0 * (double)(K - 1) / (double)K * (double)rows * (double)dim * elt : 0;
}

void as_plan_group(int64_t *start, int64_t *order, const int64_t *assign, int64_t n, int64_t K)
{
    for (int64_t k = 0; k <= K; k++) start[k] = 0;
    for (int64_t i = 0; i < n; i++)
        if (assign[i] >= 0) start[assign[i] + 1]++;
    for (int64_t k = 0; k < K; k++) start[k + 1] += start[k];
    if (!order) return;
    /* stable: tables of a shard keep their plan order */
    for (int64_t k = K; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
    for (int64_t i = 0; i < n; i++)
        if (assign[i] >= 0) order[start[assign[i] + 1]++] = i;
}
