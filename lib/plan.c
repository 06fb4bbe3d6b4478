/* plan.c - sharding plans: heuristics, cost-model greedy, 2D rank map, plan records.
 * Dimension letters: T tables of a task, K shards, W world size, G = W/K replicas. */
#include "plan.h"
#include "comm.h"
#include "common.h"
#include "json.h"
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

/* the label a plan record or rendering carries: the meta's own, else the algorithm's */
static const char *meta_label(const as_plan *p, const as_plan_meta *m, char *buf, size_t len)
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

/* the pipeline's buffers of TorchRec's memory model: the total less weights and optimizer */
static double trmem_io(const as_trmem *x)
{
    return (double)as_trmem_total(x) - x->weights - x->optimizer;
}

uint64_t as_plan_dp_bytes(const as_features *f, int64_t K)
{
    if (!as_features_has_mem(f)) return as_plan_table_bytes(f);
    const as_trmem *x = &f->mem;
    const double io = trmem_io(x);
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
    as_rng_seed(&rng, c->seed, (uint64_t)c->stream);
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
        for (int64_t i = 0; i < G; i++) out[i] = k * G + i;
    return G;
}

/* ---- records ---------------------------------------------------------------------------- */

void as_ptask_free(as_ptask *t)
{
    if (!t) return;
    free(t->tables);
    memset(t, 0, sizeof *t);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int as_ptask_read(const msgpack_object *rec, as_ptask *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char e2[512];
    if (as_field_i64(rec, "id", 0, INT64_MAX, &t->id, e2, sizeof e2)) {
        snprintf(err, errlen, "task: %s", e2);
        return -1;
    }
    int64_t cap = 0;
    if (as_field_lim(rec, "shards", 1, AS_LIM_SHARDS, &t->shards, e2, sizeof e2) ||
        as_field_i64_opt(rec, "mem_cap", 0, INT64_MAX, &cap, e2, sizeof e2) ||
        as_field_table_ids(rec, "tables", &t->tables, &t->ntables, e2, sizeof e2) ||
        as_check_pairs(t->ntables, t->shards, e2, sizeof e2)) {
        snprintf(err, errlen, "task %" PRId64 ": %s", t->id, e2);
        as_ptask_free(t);
        return -1;
    }
    t->mem_cap = (uint64_t)cap;
    if (t->ntables == 0) {
        snprintf(err, errlen, "task %" PRId64 ": 'tables' must be a non-empty list of table ids", t->id);
        as_ptask_free(t);
        return -1;
    }
    as_obj_str(rec, "split", t->split, sizeof t->split);
    int64_t n = t->ntables;
    int64_t *s = as_malloc((size_t)n * sizeof *s);
    memcpy(s, t->tables, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_i64);
    for (int64_t i = 1; i < n; i++)
        if (s[i] == s[i - 1]) {
            snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " is listed twice", t->id, s[i]);
            free(s);
            as_ptask_free(t);
            return -1;
        }
    free(s);
    return 0;
}

void as_planrec_free(as_planrec *p)
{
    if (!p) return;
    free(p->tables);
    free(p->pieces);
    free(p->assign);
    memset(p, 0, sizeof *p);
}

int as_planrec_read(const msgpack_object *rec, as_planrec *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->task = -1;
    char e2[512];
    if (as_field_i64_opt(rec, "task", -1, INT64_MAX, &p->task, e2, sizeof e2)) {
        snprintf(err, errlen, "plan: %s", e2);
        return -1;
    }
    p->has_task = as_obj_get(rec, "task") != NULL;
    if (as_field_lim(rec, "shards", 1, AS_LIM_SHARDS, &p->shards, e2, sizeof e2) ||
        as_field_table_ids(rec, "tables", &p->tables, &p->n, e2, sizeof e2) ||
        as_check_pairs(p->n, p->shards, e2, sizeof e2) ||
        as_field_assign(rec, "assign", p->n, p->shards, &p->assign, &p->unplaced, e2, sizeof e2) ||
        as_field_pieces(rec, "pieces", p->n, &p->pieces, e2, sizeof e2) ||
        as_pieces_check_cover(p->tables, p->pieces, p->n, e2, sizeof e2)) {
        snprintf(err, errlen, "plan of task %" PRId64 ": %s", p->task, e2);
        as_planrec_free(p);
        return -1;
    }
    for (int64_t i = 0; i < p->n; i++) {
        if (p->assign[i] != AS_DP) continue;
        p->ndp++;
        if (p->pieces && !as_piece_whole(&p->pieces[i])) {
            char nb[96];
            snprintf(err, errlen, "plan of task %" PRId64 ": entry %" PRId64 " (%s) is data parallel (assign -2) but a piece: "
                     "a data-parallel table is held whole by every shard", p->task, i, as_piece_name(nb, sizeof nb, p->tables[i], &p->pieces[i]));
            as_planrec_free(p);
            return -1;
        }
    }
    return 0;
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

void as_planrec_group(const as_planrec *p, int64_t *start, int64_t *order)
{
    as_plan_group(start, order, p->assign, p->n, p->shards);
}

/* each shard's ids in and pooled outputs out (forward) and their gradients (backward):
   comm_in_bytes, comm_out_bytes, comm_gbps */
static void pack_comm(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m, const as_shtype *type)
{
    const int64_t K = p->shards;
    double *in = as_calloc((size_t)K + 1, sizeof *in), *out = as_calloc((size_t)K + 1, sizeof *out);
    double *rw = as_calloc((size_t)K + 1, sizeof *rw), *cw = as_calloc((size_t)K + 1, sizeof *cw);
    int rows = 0, cols = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->assign[i] >= 0) {
            double bi, bo;
            as_comm_bytes(m->items[i], &bi, &bo);
            in[p->assign[i]] += bi;
            out[p->assign[i]] += bo;
            if (type[i] == AS_SH_RW) {
                rw[p->assign[i]] += bi + bo;
                rows = 1;
            } else if (type[i] == AS_SH_CW) {
                cw[p->assign[i]] += bi + bo;
                cols = 1;
            }
        }
    as_pack_str(pk, "comm_in_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)in[k]);
    as_pack_str(pk, "comm_out_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)out[k]);
    as_pack_kv_f64(pk, "comm_gbps", p->comm_gbps);
    if (p->comm_model) as_pack_kv_str(pk, "comm_model", p->comm_model);
    if (rows) {
        /* the row pieces' share: their ids and their partial sums (reduce-scattered) */
        as_pack_str(pk, "comm_rw_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)rw[k]);
    }
    if (cols) {
        /* the column pieces' share: TorchRec's column_wise has its own all-to-alls */
        as_pack_str(pk, "comm_cw_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)cw[k]);
    }
    if (p->ndp) {
        /* the all-reduce of the data-parallel tables' gradients: every shard sends as much */
        double ar = 0;
        for (int64_t i = 0; i < p->n; i++)
            if (p->assign[i] == AS_DP) ar += as_plan_dp_comm_bytes(m->items[i], K);
        as_pack_str(pk, "comm_ar_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)ar);
    }
    free(in);
    free(out);
    free(rw);
    free(cw);
}

/* TorchRec's memory model per shard, by term (trmem.h): mem_terms */
static void pack_mem_terms(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m)
{
    const int64_t K = p->shards;
    double *v = as_calloc((size_t)(3 * K + 1), sizeof *v);
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t k = p->assign[i];
        if ((k < 0 && k != AS_DP) || !as_features_has_mem(m->items[i])) continue;
        const as_trmem *x = &m->items[i]->mem;
        const double io = trmem_io(x);
        /* a data-parallel table on every shard, its buffers for 1/K of the batch */
        for (int64_t j = k == AS_DP ? 0 : k; j < (k == AS_DP ? K : k + 1); j++) {
            v[j] += x->weights;
            v[K + j] += x->optimizer;
            v[2 * K + j] += k == AS_DP ? io / (double)K : io;
        }
    }
    static const char *const term[3] = { "weights", "optimizer", "pipeline" };
    as_pack_str(pk, "mem_terms");
    msgpack_pack_map(pk, 3);
    for (int j = 0; j < 3; j++) {
        as_pack_str(pk, term[j]);
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_uint64(pk, (uint64_t)llround(v[j * K + k]));
    }
    free(v);
}

/* options, plan_ms and (refined plans) refine */
static void pack_options(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m)
{
    const as_plan_refined *rf = &p->refine;
    as_pack_str(pk, "options");
    msgpack_pack_map(pk, 3 + (m->model ? 1 : 0) + (m->policy ? 1 : 0) + (m->policy && m->samples > 0 ? 1 : 0) +
                             (rf->done ? 2 : 0));
    as_pack_kv_i64(pk, "seed", (int64_t)m->seed);
    as_pack_kv_i64(pk, "mem_cap", (int64_t)m->mem_cap);
    as_pack_kv_i64(pk, "world_size", m->world);
    if (m->model) as_pack_kv_str(pk, "model", m->model);
    if (m->policy) as_pack_kv_str(pk, "policy", m->policy);
    if (m->policy && m->samples > 0) as_pack_kv_i64(pk, "samples", m->samples);
    if (rf->done) {
        as_pack_kv_f64(pk, "refine_ms", rf->budget_ms);
        as_pack_kv_i64(pk, "refine_steps", rf->budget_steps);
    }
    as_pack_kv_f64(pk, "plan_ms", p->plan_ms);
    if (rf->done) {
        as_pack_str(pk, "refine");
        msgpack_pack_map(pk, 6);
        as_pack_kv_i64(pk, "moves", rf->moves);
        as_pack_kv_i64(pk, "swaps", rf->swaps);
        as_pack_kv_i64(pk, "placed", rf->placed);
        as_pack_kv_f64(pk, "ms", rf->ms);
        as_pack_kv_f64(pk, "pred_max_before", rf->max_before);
        as_pack_kv_str(pk, "stop", rf->stop ? rf->stop : "optimum");
    }
}

/* each item's sharding type (malloc'd [n]); *rows, *cols: whether a row or a column piece
   is placed (their bytes go apart: comm_rw_bytes, comm_cw_bytes) */
static as_shtype *item_types(const as_plan *p, const as_plan_meta *m, int *rows, int *cols)
{
    as_shtype *type = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *type);
    as_comm_types(m->items, p->n, type);
    for (int64_t i = 0; i < p->n; i++) {
        *rows |= type[i] == AS_SH_RW && p->assign[i] >= 0;
        *cols |= type[i] == AS_SH_CW && p->assign[i] >= 0;
    }
    return type;
}

void as_plan_write(as_writer *w, const as_plan *p, const as_plan_meta *m)
{
    msgpack_packer *pk = as_writer_pk(w);
    int64_t K = p->shards;
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    const as_plan_refined *rf = &p->refine;
    const int pieces = p->pieces && as_pieces_any(p->pieces, p->n);
    const int comm = m->items != NULL;
    int names = 0, terms = 0;
    for (int64_t i = 0; comm && i < p->n; i++) {
        names |= m->items[i]->name[0] != 0;
        terms |= as_features_has_mem(m->items[i]);
    }
    const int ipred = m->item_pred != NULL;
    int rows = 0, cols = 0;
    as_shtype *type = comm ? item_types(p, m, &rows, &cols) : NULL;
    uint32_t nf = 14 + (p->pred ? 1 : 0) + (m->task->split[0] ? 1 : 0) + (G > 0 ? 1 : 0) +
                  (m->model_device ? 1 : 0) + (rf->done ? 1 : 0) + pieces + 3 * comm + (comm && p->ndp) + (comm && p->comm_model) + rows + cols + names + terms + ipred +
                  (m->model_quality ? 1 : 0);
    char label[64];
    msgpack_pack_map(pk, nf);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", m->task->id);
    as_pack_kv_str(pk, "alg", meta_label(p, m, label, sizeof label));
    as_pack_kv_i64(pk, "shards", K);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)p->n);
    for (int64_t i = 0; i < p->n; i++) msgpack_pack_int64(pk, m->task->tables[i]);
    if (pieces) {
        as_pack_str(pk, "pieces");
        as_pack_pieces(pk, p->pieces, p->n);
    }
    if (comm) pack_comm(pk, p, m, type);
    free(type);
    if (names) {
        /* a model's tables by name (as-convert --config), for readers without its features */
        as_pack_str(pk, "names");
        msgpack_pack_array(pk, (size_t)p->n);
        for (int64_t i = 0; i < p->n; i++) as_pack_str(pk, m->items[i]->name);
    }
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, (size_t)p->n);
    for (int64_t i = 0; i < p->n; i++) msgpack_pack_int64(pk, p->assign[i]);
    if (ipred) {
        as_pack_str(pk, "item_pred_ms");
        msgpack_pack_array(pk, (size_t)p->n);
        for (int64_t i = 0; i < p->n; i++) msgpack_pack_double(pk, m->item_pred[i]);
    }
    as_pack_str(pk, "counts");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, p->count[k]);
    as_pack_str(pk, "mem_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_uint64(pk, p->mem[k]);
    as_pack_kv_i64(pk, "mem_cap", (int64_t)m->mem_cap);
    if (terms) pack_mem_terms(pk, p, m);
    if (p->pred) {
        as_pack_str(pk, "pred_ms");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_double(pk, p->pred[k]);
    }
    if (m->model_device) as_pack_kv_str(pk, "pred_device", m->model_device);
    if (m->model_quality) as_mgate_pack(pk, m->model_quality);
    as_pack_kv_i64(pk, "seed", (int64_t)m->seed);
    pack_options(pk, p, m);
    as_pack_str(pk, "feasible");
    if (p->feasible) msgpack_pack_true(pk); else msgpack_pack_false(pk);
    as_pack_str(pk, "infeasible_tables");
    msgpack_pack_array(pk, (size_t)p->ninfeasible);
    for (int64_t i = 0; i < p->ninfeasible; i++) msgpack_pack_int64(pk, p->infeasible[i]);
    if (m->task->split[0]) as_pack_kv_str(pk, "split", m->task->split);
    if (G > 0) {
        as_pack_str(pk, "ranks");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) {
            msgpack_pack_array(pk, (size_t)G);
            for (int64_t i = 0; i < G; i++) msgpack_pack_int64(pk, k * G + i);
        }
    }
    as_writer_end_record(w);
}

/* ---- text outputs ----------------------------------------------------------------------- */

/* the ids of shard k's tables (as_plan_group's start, order), at most max of them */
static void print_ids(FILE *f, const int64_t *start, const int64_t *order, const as_features *const *t, int64_t k,
                      int max)
{
    for (int64_t q = start[k]; q < start[k + 1]; q++) {
        if (q - start[k] == max) { fprintf(f, ",..."); return; }
        /* a model's tables by name (as-convert --config), others by id */
        if (t[order[q]]->name[0]) fprintf(f, "%s%s", q > start[k] ? "," : "", t[order[q]]->name);
        else fprintf(f, "%s%" PRId64, q > start[k] ? "," : "", t[order[q]]->id);
    }
    if (start[k + 1] == start[k]) fputc('-', f);
}

/* the memory of every shard by TorchRec's terms, when its items carry them (trmem.h) */
static void print_mem_terms(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t,
                            const int64_t *start, const int64_t *order)
{
    int any = 0;
    for (int64_t i = 0; i < p->n && !any; i++) any = as_features_has_mem(t[i]);
    if (!any) return;
    const double MiB = 1024.0 * 1024.0;
    fprintf(f, "  memory by term (TorchRec's model: weights in their data type, optimizer state, pipeline buffers), MiB\n");
    fprintf(f, "  %5s %12s %12s %12s %12s %7s\n", "shard", "weights", "optimizer", "pipeline io", "total", "cap %");
    double tw = 0, to = 0, ti = 0;
    for (int64_t k = 0; k < p->shards; k++) {
        double w = 0, o = 0, io = 0;
        for (int64_t q = start[k]; q < start[k + 1]; q++) {
            const as_trmem *x = &t[order[q]]->mem;
            w += x->weights;
            o += x->optimizer;
            io += trmem_io(x);
        }
        for (int64_t i = 0; i < p->n; i++) {
            if (p->assign[i] != AS_DP) continue;
            const as_trmem *x = &t[i]->mem;   /* data parallel: whole, its buffers for 1/K of the batch */
            w += x->weights;
            o += x->optimizer;
            io += trmem_io(x) / (double)p->shards;
        }
        tw += w;
        to += o;
        ti += io;
        fprintf(f, "  %5" PRId64 " %12.3f %12.3f %12.3f %12.3f ", k, w / MiB, o / MiB, io / MiB, (w + o + io) / MiB);
        if (m->mem_cap) fprintf(f, "%6.1f%%\n", 100.0 * (w + o + io) / (double)m->mem_cap);
        else fprintf(f, "%7s\n", "-");
    }
    fprintf(f, "  %5s %12.3f %12.3f %12.3f %12.3f\n", "total", tw / MiB, to / MiB, ti / MiB, (tw + to + ti) / MiB);
}

/* what makes the predicted slowest shard slow: its items by their predicted cost alone */
static void print_slowest(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t)
{
    int64_t K = p->shards, s = 0, n = 0;
    for (int64_t k = 1; k < K; k++)
        if (p->pred[k] > p->pred[s]) s = k;
    int64_t *it = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *it);
    double sum = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->assign[i] == s) {
            /* insertion, costliest first (ties: input order) */
            int64_t q = n++;
            while (q > 0 && m->item_pred[it[q - 1]] < m->item_pred[i]) { it[q] = it[q - 1]; q--; }
            it[q] = i;
            sum += m->item_pred[i];
        }
    fprintf(f, "  slowest shard %" PRId64 " (predicted %.4f ms): its items alone", s, p->pred[s]);
    for (int64_t q = 0; q < n && q < 5; q++) {
        char lb[200];
        const as_features *x = t[it[q]];
        fprintf(f, "%s %s %.4f ms (%.0f%%)", q ? "," : "", as_piece_label(lb, sizeof lb, x->name, x->id, &x->piece),
                m->item_pred[it[q]], sum > 0 ? 100.0 * m->item_pred[it[q]] / sum : 0.0);
    }
    if (n > 5) fprintf(f, ", %" PRId64 " more", n - 5);
    fprintf(f, "%s\n", n ? "" : " -");
    free(it);
}

void as_plan_print_text(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t)
{
    int64_t K = p->shards;
    const double MiB = 1024.0 * 1024.0;
    char label[64];
    fprintf(f, "task %" PRId64 "%s%s%s  %s  %" PRId64 " tables on %" PRId64 " shards  ", m->task->id,
            m->task->split[0] ? " (" : "", m->task->split, m->task->split[0] ? ")" : "",
            meta_label(p, m, label, sizeof label), p->n, K);
    if (m->mem_cap) fprintf(f, "cap %.1f MiB/shard  ", m->mem_cap / MiB);
    else fprintf(f, "no memory cap  ");
    fprintf(f, "%s  planned in %.3f ms\n", p->feasible ? "feasible" : "INFEASIBLE", p->plan_ms);
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    fprintf(f, "  %5s %6s %12s %7s %12s %10s  %s\n", "shard", "tables", "memory MiB", "cap %", "key sum",
            p->pred ? "pred ms" : "", G > 0 ? "ranks  table ids" : "table ids");
    uint64_t tot = 0;
    int64_t *start = as_malloc((size_t)(K + 1) * sizeof *start);
    int64_t *order = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *order);
    as_plan_group(start, order, p->assign, p->n, K);
    for (int64_t k = 0; k < K; k++) {
        tot += p->mem[k];
        fprintf(f, "  %5" PRId64 " %6" PRId64 " %12.3f ", k, p->count[k], p->mem[k] / MiB);
        if (m->mem_cap) fprintf(f, "%6.1f%%", 100.0 * (double)p->mem[k] / (double)m->mem_cap);
        else fprintf(f, "%7s", "-");
        fprintf(f, " %12.6g ", p->key[k]);
        if (p->pred) fprintf(f, "%10.4f  ", p->pred[k]);
        else fprintf(f, "%10s  ", "");
        if (G > 0) {
            fputc('[', f);
            for (int64_t i = 0; i < G && i < 8; i++) fprintf(f, "%s%" PRId64, i ? "," : "", k * G + i);
            fprintf(f, "%s]  ", G > 8 ? ",..." : "");
        }
        print_ids(f, start, order, t, k, 16);
        fputc('\n', f);
    }
    if (p->ndp) {
        /* data parallel: on every shard (their memory is in every shard's above) */
        fprintf(f, "  %5s %6" PRId64 " %12s %7s %12s %10s  ", "every", p->ndp, "", "", "", "");
        for (int64_t i = 0, q = 0; i < p->n; i++) {
            if (p->assign[i] != AS_DP) continue;
            if (q++ == 16) { fprintf(f, ",..."); break; }
            if (t[i]->name[0]) fprintf(f, "%s%s", q > 1 ? "," : "", t[i]->name);
            else fprintf(f, "%s%" PRId64, q > 1 ? "," : "", t[i]->id);
        }
        fprintf(f, " (data parallel)\n");
    }
    fprintf(f, "  %5s %6" PRId64 " %12.3f\n", "total", p->n - p->ninfeasible, tot / MiB);
    print_mem_terms(f, p, m, t, start, order);
    free(start);
    free(order);
    if (p->pred && K > 0) {
        double mx = p->pred[0], mn = p->pred[0], s = 0;
        for (int64_t k = 0; k < K; k++) {
            if (p->pred[k] > mx) mx = p->pred[k];
            if (p->pred[k] < mn) mn = p->pred[k];
            s += p->pred[k];
        }
        fprintf(f, "  predicted (estimated): max %.4f ms, min %.4f ms, mean %.4f ms, balance %.1f%%\n", mx, mn, s / K,
                mx > 0 ? 100.0 * mn / mx : 100.0);
    }
    if (p->pred && m->item_pred && K > 0) print_slowest(f, p, m, t);
    if (p->refine.done) {
        const as_plan_refined *r = &p->refine;
        fprintf(f, "  refined: %" PRId64 " move%s, %" PRId64 " swap%s", r->moves, r->moves == 1 ? "" : "s", r->swaps,
                r->swaps == 1 ? "" : "s");
        if (r->placed) fprintf(f, ", %" PRId64 " unplaced table%s placed", r->placed, r->placed == 1 ? "" : "s");
        fprintf(f, " in %.3f ms (%s); predicted max before %.4f ms\n", r->ms,
                !r->stop || !strcmp(r->stop, "optimum") ? "local optimum" : !strcmp(r->stop, "time") ? "time budget spent"
                                                                                                   : "step budget spent",
                r->max_before);
    }
    if (p->ninfeasible) {
        fprintf(f, "  fit on no shard:");
        for (int64_t i = 0; i < p->ninfeasible; i++) fprintf(f, " %" PRId64, p->infeasible[i]);
        fputc('\n', f);
    }
    fputc('\n', f);
}

int as_plan_print_torchrec(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t,
                           const as_torchrec_opts *o)
{
    if (!p->feasible) return -1;
    int64_t K = p->shards, L = o->local_size > 0 ? o->local_size : 8;
    char label[64];
    const char *lab = meta_label(p, m, label, sizeof label);
    fprintf(f, "{\"task\":%" PRId64 ",\"alg\":", m->task->id);
    as_json_string(f, lab, strlen(lab));
    fprintf(f, ",\"feasible\":true,\"world_size\":%" PRId64 ",\"local_size\":%" PRId64 ",\"module\":", K, L);
    as_json_string(f, o->module, strlen(o->module));
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    if (G > 0) {
        fprintf(f, ",\"dmp_collection\":{\"world_size\":%" PRId64 ",\"sharding_group_size\":%" PRId64
                   ",\"replicas\":%" PRId64 ",\"shard_ranks\":[", m->world, K, G);
        for (int64_t k = 0; k < K; k++) {
            fprintf(f, "%s[", k ? "," : "");
            for (int64_t i = 0; i < G; i++) fprintf(f, "%s%" PRId64, i ? "," : "", k * G + i);
            fputc(']', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, ",\"plan\":{");
    as_json_string(f, o->module, strlen(o->module));
    fprintf(f, ":{");
    /* a table per key, in the order of its first item; a split table's items are its shards,
       ordered by (r0, c0) */
    int64_t *ord = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *ord);
    uint8_t *done = as_calloc((size_t)(p->n ? p->n : 1), 1);
    int first = 1;
    for (int64_t i = 0; i < p->n; i++) {
        if (done[i]) continue;
        int64_t m = 0, rows = 0, dim = 0;
        int full_rows = 1, full_cols = 1;
        for (int64_t j = i; j < p->n; j++)
            if (!done[j] && t[j]->id == t[i]->id) {
                done[j] = 1;
                /* insertion by (r0, c0) */
                const as_piece a = as_piece_full(&t[j]->piece, t[j]->rows, t[j]->dim);
                int64_t q = m++;
                while (q > 0) {
                    const as_piece b = as_piece_full(&t[ord[q - 1]]->piece, t[ord[q - 1]]->rows, t[ord[q - 1]]->dim);
                    if (b.r0 < a.r0 || (b.r0 == a.r0 && b.c0 <= a.c0)) break;
                    ord[q] = ord[q - 1];
                    q--;
                }
                ord[q] = j;
                if (a.r1 > rows) rows = a.r1;
                if (a.c1 > dim) dim = a.c1;
            }
        for (int64_t q = 0; q < m; q++) {
            const as_piece a = as_piece_full(&t[ord[q]]->piece, t[ord[q]]->rows, t[ord[q]]->dim);
            if (a.r0 != 0 || a.r1 != rows) full_rows = 0;
            if (a.c0 != 0 || a.c1 != dim) full_cols = 0;
        }
        const char *type = m == 1 ? "table_wise" : full_rows ? "column_wise" : full_cols ? "row_wise" : "grid_shard";
        /* the table's name in its model (as-convert --config), else t<id> */
        if (!first) fputc(',', f);
        if (t[i]->name[0]) as_json_string(f, t[i]->name, strlen(t[i]->name));
        else fprintf(f, "\"t%" PRId64 "\"", t[i]->id);
        first = 0;
        if (p->assign[i] == AS_DP) {
            /* data parallel: on every rank, no shards (TorchRec's ParameterSharding has no
               sharding_spec for it); TorchRec's kernel for it is dense */
            fprintf(f, ":{\"sharding_type\":\"data_parallel\",\"compute_kernel\":\"dense\",\"ranks\":[");
            for (int64_t k = 0; k < K; k++) fprintf(f, "%s%" PRId64, k ? "," : "", k);
            fprintf(f, "],\"shards\":[]}");
            continue;
        }
        fprintf(f, ":{\"sharding_type\":\"%s\",\"compute_kernel\":\"fused\",\"ranks\":[", type);
        for (int64_t q = 0; q < m; q++) fprintf(f, "%s%" PRId64, q ? "," : "", p->assign[ord[q]]);
        fprintf(f, "],\"shards\":[");
        for (int64_t q = 0; q < m; q++) {
            const as_piece a = as_piece_full(&t[ord[q]]->piece, t[ord[q]]->rows, t[ord[q]]->dim);
            const int64_t r = p->assign[ord[q]];
            fprintf(f, "%s{\"shard_offsets\":[%" PRId64 ",%" PRId64 "],\"shard_sizes\":[%" PRId64 ",%" PRId64
                       "],\"placement\":\"rank:%" PRId64 "/cuda:%" PRId64 "\"}",
                    q ? "," : "", a.r0, a.c0, a.r1 - a.r0, a.c1 - a.c0, r, r % L);
        }
        fprintf(f, "]}");
    }
    free(ord);
    free(done);
    fprintf(f, "}}}\n");
    return 0;
}
