/* replicate.c - our planners' data-parallel tables; see replicate.h. */
#include "replicate.h"

#include "comm.h"
#include "common.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the search's state: each shard's summed embedding and bytes, the data-parallel sum */
typedef struct {
    const as_plan_model *m;
    int64_t n, K;
    int R;
    double gbps;
    uint64_t cap;
    const float *rep;       /* [n x R] the items' embeddings */
    double *S;              /* [K x R] each shard's own items' sum */
    double *D;              /* [R] the data-parallel items' sum */
    float *tmp;             /* [R] */
    double *own;            /* [K] each shard's all-to-all bytes */
    double all, ar;         /* their sum; the all-reduce bytes a shard sends */
    double *kern;           /* [K] head of each shard's sum (0 when empty) */
    double dp;              /* head of D / K (0 when none) */
    /* the alpha-beta model (NULL: the bandwidth gbps): own and all are then the table-wise
       bytes alone (what replication moves), fix [K] each shard's time of the column and row
       pieces' bytes, has their types' presence for the alphas */
    const as_comm_model *ab;
    double *fix;
    int has[AS_NSH];
} rstate;

static double head_of(rstate *x, const double *s, const float *plus, double sign)
{
    for (int d = 0; d < x->R; d++) x->tmp[d] = (float)(s[d] + (plus ? sign * plus[d] : 0.0));
    return x->m->head(x->m->ctx, x->tmp);
}

/* the objective with shard s's kernel ks, the data-parallel part dp, shard s's own bytes
 * less `less`, the all-to-all total less `less` and the all-reduce bytes ar */
static double objective(const rstate *x, int64_t s, double ks, double dp, double less, double ar)
{
    double mx = 0;
    for (int64_t k = 0; k < x->K; k++) {
        double v = (k == s ? ks : x->kern[k]) + dp;
        if (x->ab) {
            /* the table-wise bytes less the candidate's, the pieces' fixed part, the
               all-reduce; the alphas of the types the plan then has */
            double b[AS_NSH] = { (k == s ? x->own[k] - less : x->own[k]) + (x->all - less) / (double)x->K, 0, 0, ar };
            int has[AS_NSH] = { x->all - less > 0, x->has[AS_SH_CW], x->has[AS_SH_RW], ar > 0 || dp > 0 };
            v += as_comm_shard_ms(x->ab, x->K, b, has, NULL) + x->fix[k];
        } else if (x->gbps > 0) {
            const double bps = x->gbps * 1073741824.0 / 1e3;   /* bytes per ms */
            v += ((k == s ? x->own[k] - less : x->own[k]) + (x->all - less) / (double)x->K + ar) / bps;
        }
        if (v > mx) mx = v;
    }
    return mx;
}

/* item i made data parallel fits: its table on every shard, its own bytes off shard s */
static int fits(const as_plan *p, uint64_t cap, int64_t s, uint64_t own, uint64_t dpb)
{
    for (int64_t k = 0; k < p->shards; k++) {
        const uint64_t base = k == s ? p->mem[k] - own : p->mem[k];
        if (!as_plan_fits(cap, base, dpb)) return 0;
    }
    return 1;
}

/* the best item to replicate: its index (-1: none lowers cur), its objective in *best */
static int64_t best_step(rstate *x, const as_plan *p, const as_features *const *t, double cur, double *best)
{
    int64_t pick = -1;
    *best = cur;
    for (int64_t i = 0; i < x->n; i++) {
        const int64_t s = p->assign[i];
        if (s < 0 || !as_piece_whole(&t[i]->piece)) continue;
        if (!fits(p, x->cap, s, as_plan_table_bytes(t[i]), as_plan_dp_bytes(t[i], x->K))) continue;
        const float *ri = x->rep + (size_t)i * x->R;
        const double ks = p->count[s] > 1 ? head_of(x, x->S + (size_t)s * x->R, ri, -1.0) : 0;
        const double dp = head_of(x, x->D, ri, 1.0) / (double)x->K;
        double bi = 0, bo = 0;
        as_comm_bytes(t[i], &bi, &bo);
        const double v = objective(x, s, ks, dp, bi + bo, x->ar + as_plan_dp_comm_bytes(t[i], x->K));
        if (v < *best * (1 - 1e-6) && (pick < 0 || v < *best)) {
            pick = i;
            *best = v;
        }
    }
    return pick;
}

/* item i replicated: the plan and the state follow */
static void apply(rstate *x, as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t i)
{
    const int64_t s = p->assign[i];
    const float *ri = x->rep + (size_t)i * x->R;
    double *Ss = x->S + (size_t)s * x->R;
    for (int d = 0; d < x->R; d++) {
        Ss[d] -= ri[d];
        x->D[d] += ri[d];
    }
    p->assign[i] = AS_DP;
    p->ndp++;
    p->count[s]--;
    p->key[s] -= as_plan_item_key(c, t[i], ri);
    const uint64_t dpb = as_plan_dp_bytes(t[i], x->K);
    p->mem[s] -= as_plan_table_bytes(t[i]);
    for (int64_t k = 0; k < x->K; k++) p->mem[k] += dpb;
    double bi = 0, bo = 0;
    as_comm_bytes(t[i], &bi, &bo);
    x->own[s] -= bi + bo;
    x->all -= bi + bo;
    x->ar += as_plan_dp_comm_bytes(t[i], x->K);
    x->kern[s] = p->count[s] ? head_of(x, Ss, NULL, 0) : 0;
    x->dp = head_of(x, x->D, NULL, 0) / (double)x->K;
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
    float *rep = as_malloc((size_t)(n ? n : 1) * (size_t)R * sizeof *rep);
    for (int64_t i = 0; i < n; i++) m->embed(m->ctx, t[i], rep + (size_t)i * R);
    rstate x = { m, n, K, R, gbps, c->mem_cap, rep, as_calloc((size_t)K * (size_t)R, sizeof(double)),
                 as_calloc((size_t)R, sizeof(double)), as_malloc((size_t)R * sizeof(float)),
                 as_calloc((size_t)K, sizeof(double)), 0, 0, as_calloc((size_t)K, sizeof(double)), 0,
                 c->comm_model && c->comm_model->ab ? c->comm_model : NULL, as_calloc((size_t)K, sizeof(double)), { 0 } };
    as_shtype *type = as_malloc((size_t)(n ? n : 1) * sizeof *type);
    as_comm_types(t, n, type);
    double *pw = as_calloc((size_t)K * 2, sizeof(double)), pall[2] = { 0, 0 };   /* column, row pieces' bytes */
    for (int64_t i = 0; i < n; i++) {
        const int64_t a = p->assign[i];
        if (a == -1) continue;
        double *dst = a == AS_DP ? x.D : x.S + (size_t)a * R;
        for (int d = 0; d < R; d++) dst[d] += rep[(size_t)i * R + d];
        if (a == AS_DP) {
            x.ar += as_plan_dp_comm_bytes(t[i], K);
            continue;
        }
        double bi = 0, bo = 0;
        as_comm_bytes(t[i], &bi, &bo);
        if (x.ab && type[i] != AS_SH_TW) {
            const int j = type[i] == AS_SH_CW ? 0 : 1;
            pw[(size_t)a * 2 + j] += bi + bo;
            pall[j] += bi + bo;
            x.has[type[i]] = 1;
            continue;
        }
        x.own[a] += bi + bo;
        x.all += bi + bo;
    }
    for (int64_t k = 0; x.ab && k < K; k++) {
        x.fix[k] = as_comm_item_ms(x.ab, K, AS_SH_CW, pw[k * 2] + pall[0] / (double)K) +
                   as_comm_item_ms(x.ab, K, AS_SH_RW, pw[k * 2 + 1] + pall[1] / (double)K);
    }
    free(type);
    free(pw);
    for (int64_t k = 0; k < K; k++) x.kern[k] = p->count[k] ? head_of(&x, x.S + (size_t)k * R, NULL, 0) : 0;
    x.dp = p->ndp ? head_of(&x, x.D, NULL, 0) / (double)K : 0;
    double cur = objective(&x, -1, 0, x.dp, 0, x.ar), next;
    int64_t i;
    while ((i = best_step(&x, p, t, cur, &next)) >= 0) {
        apply(&x, p, c, t, i);
        cur = next;
        (*made)++;
    }
    /* pred as as_plan_make computes it (float sums in plan order) */
    if (p->pred) {
        float *sum = as_calloc((size_t)K * (size_t)R, sizeof *sum);
        for (int64_t j = 0; j < n; j++)
            if (p->assign[j] >= 0)
                for (int d = 0; d < R; d++) sum[(size_t)p->assign[j] * R + d] += rep[(size_t)j * R + d];
        const double dp = as_plan_dp_pred(m, p->assign, rep, n, K);
        for (int64_t k = 0; k < K; k++) p->pred[k] = (p->count[k] ? m->head(m->ctx, sum + (size_t)k * R) : 0) + dp;
        free(sum);
    }
    p->replicated = 1;
    if (x.ab) {   /* the record says what charged it (comm_model, docs/FORMAT.md), split plan or not */
        p->comm_model = x.ab->name;
        p->comm_gbps = 0;
    }
    p->plan_ms += (as_now() - t0) * 1e3;
    free(rep); free(x.S); free(x.D); free(x.tmp); free(x.own); free(x.kern); free(x.fix);
    return 0;
}
