/* policy.c - the LSTM policy-value network of policy.h: parameters, episodes (actor and
 * greedy planner), the learner's replay with V-trace and backpropagation through time, and
 * the `policy` record. Dimension letters: T tables, L steps taken, K shards, F features,
 * H LSTM hidden, R rows of the batched head (L x K). */
#include "policy.h"
#include "pins.h"

#include "costmodel.h"
#include "nn.h"
#include "reclimits.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F AS_NFEATURES
#define NCF AS_POLICY_NCF

enum {
    B_EW1, B_EB1, B_EW2, B_EB2, B_SW, B_SB, B_L1WI, B_L1WH, B_L1B, B_L2WI, B_L2WH, B_L2B, B_CW, B_CB,
    B_HW1, B_HB1, B_HW2, B_HB2, B_HW3, B_HB3, B_HW4, B_HB4, B_VW1, B_VB1, B_VW2, B_VB2, B_COUNT
};
static const char *const BLOCK_NAMES[B_COUNT] = {
    "ew1", "eb1", "ew2", "eb2", "sw", "sb", "l1wi", "l1wh", "l1b", "l2wi", "l2wh", "l2b", "cw", "cb",
    "hw1", "hb1", "hw2", "hb2", "hw3", "hb3", "hw4", "hb4", "vw1", "vb1", "vw2", "vb2",
};

struct as_policy {
    as_policy_dims d;
    int64_t n;
    float *p;
    int64_t at[B_COUNT + 1];        /* offsets of the blocks; at[B_COUNT] = n */
    double mean[3], std[3];         /* z-scores of dim, rows, pooling */
    int log_feats;
    uint32_t drop;                  /* features left out (its cost model's, costmodel.h) */
    int nocost;                     /* 1: the state without the cost model (as_policy_drop_cost) */
    as_policy_info info;
};

static void layout(as_policy *q)
{
    const as_policy_dims *d = &q->d;
    int64_t len[B_COUNT] = {
        (int64_t)d->e1 * d->f, d->e1, (int64_t)d->e2 * d->e1, d->e2,
        d->sd, d->sd,
        4LL * d->h * (d->e2 + d->sd), 4LL * d->h * d->h, 4LL * d->h,
        4LL * d->h * d->h, 4LL * d->h * d->h, 4LL * d->h,
        (int64_t)d->cd * NCF, d->cd,
        (int64_t)d->p1 * 3 * d->h, d->p1, (int64_t)d->p2 * d->p1, d->p2, (int64_t)d->p3 * d->p2, d->p3, d->p3, 1,
        (int64_t)d->vh * d->h, d->vh, d->vh, 1,
    };
    int64_t o = 0;
    for (int i = 0; i < B_COUNT; i++) { q->at[i] = o; o += len[i]; }
    q->at[B_COUNT] = o;
    q->n = o;
}

static as_policy *alloc_policy(const as_policy_dims *d)
{
    as_policy *q = as_calloc(1, sizeof *q);
    q->d = *d;
    layout(q);
    q->p = as_calloc((size_t)q->n, sizeof *q->p);
    for (int k = 0; k < 3; k++) { q->mean[k] = 0; q->std[k] = 1; }
    snprintf(q->info.reward, sizeof q->info.reward, "model");
    q->info.selected_episode = -1;
    return q;
}

#define P(q, b) ((q)->p + (q)->at[b])

/* the one rule on a policy's sizes (the reader's and as_policy_new's): each in
 * 1..AS_POLICY_MAX_DIM, 21 features, E2 + CD = H; 0, or -1 with err */
static int dims_check(const as_policy_dims *d, char *err, size_t errlen)
{
    static const char *const names[10] = { "F", "E1", "E2", "SD", "H", "CD", "P1", "P2", "P3", "VH" };
    int dv[10] = { d->f, d->e1, d->e2, d->sd, d->h, d->cd, d->p1, d->p2, d->p3, d->vh };
    for (int i = 0; i < 10; i++)
        if (dv[i] < 1 || dv[i] > AS_POLICY_MAX_DIM) {
            snprintf(err, errlen, "size %d of dims (%s) is %d, not in 1..%d", i, names[i], dv[i], AS_POLICY_MAX_DIM);
            return -1;
        }
    if (d->f != F || d->e2 + d->cd != d->h) {
        snprintf(err, errlen, "inconsistent dims (features %d, encoder %d + cost %d != hidden %d)", d->f, d->e2, d->cd, d->h);
        return -1;
    }
    return 0;
}

as_policy *as_policy_new(const as_costmodel *cm, uint64_t seed, char *err, size_t errlen)
{
    as_policy_dims d = { F, 128, 32, 32, 64, 32, 128, 128, 64, 64 };
    if (cm) { d.e1 = as_costmodel_cmeta(cm)->h1; d.e2 = as_costmodel_cmeta(cm)->h2; }
    d.cd = d.h - d.e2 > 0 ? d.h - d.e2 : 32;
    if (d.e2 + d.cd != d.h) d.h = d.e2 + d.cd;
    char e2[256];
    if (dims_check(&d, e2, sizeof e2)) {
        snprintf(err, errlen, "the cost model's hidden sizes H1 %d, H2 %d make a policy of %s; the policy's encoder "
                 "copies them: H1 at most %d, H2 at most %d", d.e1, d.e2, e2, AS_POLICY_MAX_DIM, AS_POLICY_MAX_DIM - 32);
        return NULL;
    }
    as_policy *q = alloc_policy(&d);
    uint64_t st = seed ^ 0x706f6c6963790000ULL;   /* "policy" */
    as_nn_init_linear(P(q, B_EW1), P(q, B_EB1), d.f, d.e1, &st);
    as_nn_init_linear(P(q, B_EW2), P(q, B_EB2), d.e1, d.e2, &st);
    as_nn_init_linear(P(q, B_SW), P(q, B_SB), 1, d.sd, &st);
    /* PyTorch's LSTM init: every weight and bias U(-1/sqrt(H), 1/sqrt(H)) */
    double k = 1.0 / sqrt((double)d.h);
    for (int b = B_L1WI; b <= B_L2B; b++)
        for (int64_t i = q->at[b]; i < q->at[b + 1]; i++)
            q->p[i] = (float)(k * (2.0 * ((double)(as_splitmix64(&st) >> 11) * 0x1.0p-53) - 1.0));
    as_nn_init_linear(P(q, B_CW), P(q, B_CB), NCF, d.cd, &st);
    as_nn_init_linear(P(q, B_HW1), P(q, B_HB1), 3 * d.h, d.p1, &st);
    as_nn_init_linear(P(q, B_HW2), P(q, B_HB2), d.p1, d.p2, &st);
    as_nn_init_linear(P(q, B_HW3), P(q, B_HB3), d.p2, d.p3, &st);
    as_nn_init_linear(P(q, B_HW4), P(q, B_HB4), d.p3, 1, &st);
    as_nn_init_linear(P(q, B_VW1), P(q, B_VB1), d.h, d.vh, &st);
    as_nn_init_linear(P(q, B_VW2), P(q, B_VB2), d.vh, 1, &st);
    if (cm) {
        /* the cost model's table MLP: w1[H1,F] b1 w2[H2,H1] b2 at the front of its buffer */
        const float *cp = as_costmodel_params((as_costmodel *)cm, NULL);
        memcpy(P(q, B_EW1), cp, (size_t)(q->at[B_SW] - q->at[B_EW1]) * sizeof(float));
        const as_costmodel_info *ci = as_costmodel_cmeta(cm);
        for (int c = 0; c < 3; c++) { q->mean[c] = ci->mean[c]; q->std[c] = ci->std[c]; }
        q->log_feats = ci->log_feats;
        q->drop = ci->drop;
    }
    q->info.seed = seed;
    return q;
}

void as_policy_drop_cost(as_policy *q)
{
    const as_policy_dims *d = &q->d;
    uint64_t st = q->info.seed ^ 0x6e6f636f73740000ULL;   /* "nocost" */
    as_nn_init_linear(P(q, B_EW1), P(q, B_EB1), d->f, d->e1, &st);
    as_nn_init_linear(P(q, B_EW2), P(q, B_EB2), d->e1, d->e2, &st);
    q->nocost = 1;
}

int as_policy_cost_state(const as_policy *q) { return !q->nocost; }

as_policy *as_policy_clone(const as_policy *p)
{
    as_policy *q = alloc_policy(&p->d);
    memcpy(q->p, p->p, (size_t)p->n * sizeof *q->p);
    memcpy(q->mean, p->mean, sizeof q->mean);
    memcpy(q->std, p->std, sizeof q->std);
    q->log_feats = p->log_feats;
    q->drop = p->drop;
    q->nocost = p->nocost;
    q->info = p->info;
    return q;
}

void as_policy_free(as_policy *p)
{
    if (!p) return;
    free(p->p);
    free(p);
}

float *as_policy_params(as_policy *p, int64_t *n) { if (n) *n = p->n; return p->p; }
const as_policy_dims *as_policy_cdims(const as_policy *p) { return &p->d; }
as_policy_info *as_policy_meta(as_policy *p) { return &p->info; }
const as_policy_info *as_policy_cmeta(const as_policy *p) { return &p->info; }

const char *as_policy_block(const as_policy *p, int i, int64_t *off, int64_t *len)
{
    if (i < 0 || i >= B_COUNT) return NULL;
    if (off) *off = p->at[i];
    if (len) *len = p->at[i + 1] - p->at[i];
    return BLOCK_NAMES[i];
}

void as_policy_table_vector(const as_policy *p, const as_features *f, float out[F])
{
    double v[F];
    as_features_vector(f, v);
    for (int k = 0; k < 3; k++) {
        double x = p->log_feats ? log1p(v[k]) : v[k];
        v[k] = (x - p->mean[k]) / p->std[k];
    }
    for (int k = 0; k < F; k++) out[k] = p->drop >> k & 1 ? 0.0f : (float)v[k];
}

void as_traj_free(as_traj *t)
{
    if (!t) return;
    free(t->x);
    free(t->cf);
    free(t->mask);
    free(t->act);
    free(t->logp);
    memset(t, 0, sizeof *t);
}

/* a trajectory of n tables on K shards to record into: with keep, its arrays kept when they
 * hold that many (cap_n, cap_k); else made anew (without keep t's old content is garbage);
 * everything else cleared */
static void traj_begin(as_traj *t, int64_t n, int64_t K, int keep)
{
    if (!keep) memset(t, 0, sizeof *t);
    if (!t->x || n > t->cap_n || K > t->cap_k) {
        as_traj_free(t);
        const size_t nn = (size_t)(n ? n : 1);
        t->x = as_malloc(nn * F * sizeof *t->x);
        t->cf = as_malloc(nn * K * NCF * sizeof *t->cf);
        t->mask = as_malloc(nn * K);
        t->act = as_malloc(nn * sizeof *t->act);
        t->logp = as_malloc(nn * sizeof *t->logp);
        t->cap_n = n;
        t->cap_k = K;
    }
    const as_traj old = *t;
    memset(t, 0, sizeof *t);
    t->x = old.x; t->cf = old.cf; t->mask = old.mask; t->act = old.act; t->logp = old.logp;
    t->cap_n = old.cap_n;
    t->cap_k = old.cap_k;
    t->T = (int)n;
    t->K = (int)K;
}

/* ---- shared pieces of the forward pass ----------------------------------------------------- */

static void relu_inplace(float *x, int64_t n) { as_nn_relu_fwd(x, x, n); }

/* encoder over N rows: a1[N,E1], e[N,E2] */
static void encode(const as_policy *q, float *a1, float *e, const float *x, int N)
{
    const as_policy_dims *d = &q->d;
    as_nn_linear_fwd(a1, x, P(q, B_EW1), P(q, B_EB1), N, d->f, d->e1);
    relu_inplace(a1, (int64_t)N * d->e1);
    as_nn_linear_fwd(e, a1, P(q, B_EW2), P(q, B_EB2), N, d->e1, d->e2);
    relu_inplace(e, (int64_t)N * d->e2);
}

/* u[N,SD] = relu(sw * frac + sb) for fractions fr[N] */
static void step_mlp(const as_policy *q, float *u, const float *fr, int N)
{
    as_nn_linear_fwd(u, fr, P(q, B_SW), P(q, B_SB), N, 1, q->d.sd);
    relu_inplace(u, (int64_t)N * q->d.sd);
}

/* the head over R rows of Z[R,3H]: q1[R,P1], q2[R,P2], q3[R,P3], logit[R] */
static void head_fwd(const as_policy *q, float *q1, float *q2, float *q3, float *logit, const float *Z, int R)
{
    const as_policy_dims *d = &q->d;
    as_nn_linear_fwd(q1, Z, P(q, B_HW1), P(q, B_HB1), R, 3 * d->h, d->p1);
    relu_inplace(q1, (int64_t)R * d->p1);
    as_nn_linear_fwd(q2, q1, P(q, B_HW2), P(q, B_HB2), R, d->p1, d->p2);
    relu_inplace(q2, (int64_t)R * d->p2);
    as_nn_linear_fwd(q3, q2, P(q, B_HW3), P(q, B_HB3), R, d->p2, d->p3);
    relu_inplace(q3, (int64_t)R * d->p3);
    as_nn_linear_fwd(logit, q3, P(q, B_HW4), P(q, B_HB4), R, d->p3, 1);
}

/* Z row = [s | a | s*a], a = [E | c] */
static void build_z(float *Z, const float *s, const float *E, const float *c, int e2, int cd)
{
    int h = e2 + cd;
    memcpy(Z, s, (size_t)h * sizeof *Z);
    memcpy(Z + h, E, (size_t)e2 * sizeof *Z);
    memcpy(Z + h + e2, c, (size_t)cd * sizeof *Z);
    for (int j = 0; j < h; j++) Z[2 * h + j] = s[j] * Z[h + j];
}

/* masked log-softmax of logit[K] into lp[K] (-INFINITY where masked); returns 0, or -1 when
 * nothing is allowed */
static int log_softmax(float *lp, const float *logit, const uint8_t *mask, int K)
{
    float mx = -INFINITY;
    for (int k = 0; k < K; k++) if (mask[k] && logit[k] > mx) mx = logit[k];
    if (mx == -INFINITY) return -1;
    double s = 0;
    for (int k = 0; k < K; k++) if (mask[k]) s += exp((double)(logit[k] - mx));
    float ls = (float)log(s);
    for (int k = 0; k < K; k++) lp[k] = mask[k] ? logit[k] - mx - ls : -INFINITY;
    return 0;
}

/* ---- episodes ------------------------------------------------------------------------------ */

/* a rollout's buffers, allocated once per rollout (nothing is allocated per step) */
typedef struct {
    int R, E2, H, CD, XW;
    int64_t n, K;
    /* per table (task order, or step order for x, a1, e) */
    float *rep;                     /* [n,R] cost-model representations */
    double *single;                 /* [n] each table's predicted cost alone */
    uint64_t *bytes;                /* [n] */
    int64_t *order;                 /* [n] step order (as_plan_order) */
    float *x, *a1, *e;              /* [n,F], [n,E1], [n,E2] the policy's encoder */
    as_plan_items it;               /* the tables' vectors (plan.h): rep, or pre of it with a
                                       split head (it.split, width it.W) */
    /* per shard: the episode state */
    float *csum, *Es, *Vs, *WE;     /* [K,R] rep sums, [K,E2] encoder sums, [K,W] pre sums,
                                       [K,P1] hw1's E block times E_k */
    double *pnow, *pafter;          /* [K] predicted cost now, after this step's table */
    uint64_t *mem;
    int64_t *cnt;
    /* per step */
    float *cf, *cu, *X1;            /* [K,NCF], [K,CD], [K,XW] */
    float *base, *wtmp;             /* [P1] */
    float *h1, *c1, *h2, *c2, *h1n, *c1n, *h2n, *c2n, *g, *xin, *u, *tmp;
    float *ws;                      /* the LSTM's and the step's vectors, one block */
    float *q1, *q2, *q3, *logit, *lp;
    uint8_t *mask;
    int nocost;                     /* the policy's state without the cost model */
} rollout_bufs;

/* the buffers of a rollout of ro's task, the tables' representations, single costs, step
   order and encoding computed; *ref the mean single cost per shard and *left their sum */
static void rollout_init(rollout_bufs *w, const as_policy *q, const as_rollout *ro, as_arena *A, double *ref, double *left)
{
    const as_policy_dims *d = &q->d;
    const as_plan_model *cm = ro->cm;
    const int64_t n = ro->n, K = ro->K;
    const size_t nn = (size_t)(n ? n : 1);
    memset(w, 0, sizeof *w);
    w->n = n;
    w->K = K;
    w->nocost = q->nocost;
    w->R = cm->rep;
    w->E2 = d->e2;
    w->H = d->h;
    w->CD = d->cd;
    w->XW = w->CD + w->H;                                     /* [cu | s*a] columns of hw1 */
    /* the cost model's head split: pre of every table, running pre of every shard */
    const int R = w->R;
    w->rep = as_arena_take(A, nn * R * sizeof *w->rep);
    w->single = as_arena_take(A, nn * sizeof *w->single);
    w->bytes = as_arena_take(A, nn * sizeof *w->bytes);
    w->order = as_arena_take(A, nn * sizeof *w->order);
    double r = 0;
    for (int64_t i = 0; i < n; i++) {
        cm->embed(cm->ctx, ro->t[i], w->rep + (size_t)i * R);
        w->single[i] = cm->head(cm->ctx, w->rep + (size_t)i * R);
        w->bytes[i] = as_plan_table_bytes(ro->t[i]);
        r += w->single[i];
    }
    *left = r;
    r /= (double)K;
    *ref = !(r > 0) || !isfinite(r) ? 1 : r;
    as_plan_order(w->order, w->single, w->bytes, ro->t, n);
    /* policy encoder over the tables in step order */
    w->x = as_arena_take(A, nn * F * sizeof *w->x);
    for (int64_t s = 0; s < n; s++) as_policy_table_vector(q, ro->t[w->order[s]], w->x + (size_t)s * F);
    w->a1 = as_arena_take(A, nn * d->e1 * sizeof *w->a1);
    w->e = as_arena_take(A, nn * w->E2 * sizeof *w->e);
    encode(q, w->a1, w->e, w->x, (int)n);
    /* episode state */
    w->csum = as_arena_ztake(A, ((size_t)K * R) * sizeof *w->csum);
    w->Es = as_arena_ztake(A, ((size_t)K * w->E2) * sizeof *w->Es);
    w->pnow = as_arena_ztake(A, ((size_t)K) * sizeof *w->pnow);
    w->pafter = as_arena_take(A, (size_t)K * sizeof *w->pafter);
    w->mem = as_arena_ztake(A, ((size_t)K) * sizeof *w->mem);
    w->cnt = as_arena_ztake(A, ((size_t)K) * sizeof *w->cnt);
    w->cf = as_arena_take(A, (size_t)K * NCF * sizeof *w->cf);
    w->cu = as_arena_take(A, (size_t)K * w->CD * sizeof *w->cu);
    w->X1 = as_arena_take(A, (size_t)K * w->XW * sizeof *w->X1);
    w->WE = as_arena_ztake(A, ((size_t)K * d->p1) * sizeof *w->WE);
    w->base = as_arena_take(A, (size_t)d->p1 * sizeof *w->base);
    w->wtmp = as_arena_take(A, (size_t)d->p1 * sizeof *w->wtmp);
    /* the step's vectors, sized from the policy and the cost model: both LSTM layers' state
     * before and after the step (h, c: H each), the gates (4H), the LSTM input [e | u]
     * (E2 + SD), the step feature u (SD), and one summed representation of the cost model
     * (R, or its pre's width with the split head) */
    const int H = w->H;
    as_plan_items_init(&w->it, cm, ro->t, n, w->rep, A);
    size_t TW = (size_t)(R > w->it.W ? R : w->it.W);
    w->ws = as_arena_take(A, ((size_t)12 * H + (size_t)(w->E2 + d->sd) + (size_t)d->sd + TW) * sizeof *w->ws);
    w->h1 = w->ws; w->c1 = w->h1 + H; w->h2 = w->c1 + H; w->c2 = w->h2 + H; w->h1n = w->c2 + H; w->c1n = w->h1n + H;
    w->h2n = w->c1n + H; w->c2n = w->h2n + H; w->g = w->c2n + H; w->xin = w->g + 4 * (size_t)H;
    w->u = w->xin + w->E2 + d->sd; w->tmp = w->u + d->sd;
    w->Vs = w->it.split ? as_arena_ztake(A, (size_t)K * w->it.W * sizeof *w->Vs) : NULL;
    w->q1 = as_arena_take(A, (size_t)K * d->p1 * sizeof *w->q1);
    w->q2 = as_arena_take(A, (size_t)K * d->p2 * sizeof *w->q2);
    w->q3 = as_arena_take(A, (size_t)K * d->p3 * sizeof *w->q3);
    w->logit = as_arena_take(A, (size_t)K * sizeof *w->logit);
    w->lp = as_arena_take(A, (size_t)K * sizeof *w->lp);
    w->mask = as_arena_take(A, (size_t)K);
}

/* step s's state: the step feature and both LSTM layers over [e_s | u] */
static void rollout_state(rollout_bufs *w, const as_policy *q, int64_t s, int first)
{
    const as_policy_dims *d = &q->d;
    const int E2 = w->E2, H = w->H;
    float fr = (float)((double)s / (double)w->n);
    step_mlp(q, w->u, &fr, 1);
    memcpy(w->xin, w->e + (size_t)s * E2, (size_t)E2 * sizeof *w->xin);
    memcpy(w->xin + E2, w->u, (size_t)d->sd * sizeof *w->xin);
    as_nn_lstm_fwd(w->h1n, w->c1n, w->g, w->xin, first ? NULL : w->h1, first ? NULL : w->c1, P(q, B_L1WI), P(q, B_L1WH),
                   P(q, B_L1B), 1, E2 + d->sd, H);
    as_nn_lstm_fwd(w->h2n, w->c2n, w->g, w->h1n, first ? NULL : w->h2, first ? NULL : w->c2, P(q, B_L2WI), P(q, B_L2WH),
                   P(q, B_L2B), 1, H, H);
    memcpy(w->h1, w->h1n, (size_t)H * sizeof *w->h1);
    memcpy(w->c1, w->c1n, (size_t)H * sizeof *w->c1);
    memcpy(w->h2, w->h2n, (size_t)H * sizeof *w->h2);
    memcpy(w->c2, w->c2n, (size_t)H * sizeof *w->c2);
}

/* table j's candidate shards: where it fits (mask), each shard's predicted cost with it
   (pafter), the cost features (cf) against the episode's scale; returns how many fit */
static int rollout_costs(rollout_bufs *w, uint64_t cap, int64_t j, double ref, double left)
{
    const int64_t K = w->K;
    const int W = w->it.W;
    double mx = 0, mn = INFINITY, amax = 0, amin = INFINITY;
    int nok = 0;
    for (int64_t k = 0; k < K; k++) { if (w->pnow[k] > mx) mx = w->pnow[k]; if (w->pnow[k] < mn) mn = w->pnow[k]; }
    /* the shards' sums of the tables' vectors: of pre with a split head, else of rep */
    const float *S = w->it.split ? w->Vs : w->csum, *xj = w->it.w + (size_t)j * W;
    for (int64_t k = 0; k < K; k++) {
        w->mask[k] = (uint8_t)as_plan_fits(cap, w->mem[k], w->bytes[j]);
        nok += w->mask[k];
        const float *sk = S + (size_t)k * W;
        for (int r = 0; r < W; r++) w->tmp[r] = sk[r] + xj[r];
        w->pafter[k] = as_plan_items_cost(&w->it, w->tmp);
        if (w->mask[k]) { if (w->pafter[k] > amax) amax = w->pafter[k]; if (w->pafter[k] < amin) amin = w->pafter[k]; }
    }
    double sc = amax > 0 && isfinite(amax) ? amax : ref, spread = amax - amin;
    for (int64_t k = 0; k < K; k++) {
        float *c = w->cf + (size_t)k * NCF;
        c[0] = (float)(w->pnow[k] / sc);
        c[1] = (float)(w->pafter[k] / sc);
        c[2] = (float)(mx / sc);
        c[3] = cap ? (float)((double)w->mem[k] / (double)cap) : 0.0f;
        c[4] = (float)(mn / sc);
        c[5] = (float)(left / (ref * (double)K));
        c[6] = spread > 0 && w->mask[k] ? (float)((w->pafter[k] - amin) / spread) : 0.0f;
        if (w->nocost) c[0] = c[1] = c[2] = c[4] = c[5] = c[6] = 0.0f;   /* the shard's memory alone */
    }
    return nok;
}

/* the head over every shard: the log-probabilities lp of placing the step's table there */
static void rollout_logits(rollout_bufs *w, const as_policy *q)
{
    const as_policy_dims *d = &q->d;
    const int64_t K = w->K;
    const int E2 = w->E2, H = w->H, CD = w->CD, XW = w->XW;
    const float *hw1 = P(q, B_HW1);
    as_nn_linear_fwd(w->cu, w->cf, P(q, B_CW), P(q, B_CB), (int)K, NCF, CD);
    relu_inplace(w->cu, K * CD);
    /* the head's first layer in parts: hw1 [s | E | cu | s*a] = hw1_s s (once per step)
     * + hw1_E E_k (kept per shard) + hw1_[cu|s*a] [cu_k | s*a_k] (one product over K) */
    as_nn_linear_fwd_ld(w->base, w->h2, hw1, 3 * H, P(q, B_HB1), 1, H, d->p1);
    for (int64_t k = 0; k < K; k++) {
        float *xr = w->X1 + (size_t)k * XW;
        const float *Ek = w->Es + (size_t)k * E2, *ck = w->cu + (size_t)k * CD;
        memcpy(xr, ck, (size_t)CD * sizeof *xr);
        for (int r = 0; r < E2; r++) xr[CD + r] = w->h2[r] * Ek[r];
        for (int r = 0; r < CD; r++) xr[CD + E2 + r] = w->h2[E2 + r] * ck[r];
    }
    as_nn_linear_fwd_ld(w->q1, w->X1, hw1 + H + E2, 3 * H, NULL, (int)K, XW, d->p1);
    for (int64_t k = 0; k < K; k++) {
        float *row = w->q1 + (size_t)k * d->p1;
        const float *we = w->WE + (size_t)k * d->p1;
        for (int o = 0; o < d->p1; o++) { float v = row[o] + w->base[o] + we[o]; row[o] = v > 0 ? v : 0.0f; }
    }
    as_nn_linear_fwd(w->q2, w->q1, P(q, B_HW2), P(q, B_HB2), (int)K, d->p1, d->p2);
    relu_inplace(w->q2, K * d->p2);
    as_nn_linear_fwd(w->q3, w->q2, P(q, B_HW3), P(q, B_HB3), (int)K, d->p2, d->p3);
    relu_inplace(w->q3, K * d->p3);
    as_nn_linear_fwd(w->logit, w->q3, P(q, B_HW4), P(q, B_HB4), (int)K, d->p3, 1);
    log_softmax(w->lp, w->logit, w->mask, (int)K);
}

/* the action: cost-greedy (teacher), drawn (rng) or the most likely shard */
static int64_t rollout_choose(const rollout_bufs *w, const as_rollout *ro)
{
    const int64_t K = w->K;
    int64_t a = -1;
    if (ro->teacher) {
        for (int64_t k = 0; k < K; k++)
            if (w->mask[k] && (a < 0 || w->pafter[k] < w->pafter[a] || (w->pafter[k] == w->pafter[a] && w->mem[k] < w->mem[a])))
                a = k;
    } else if (ro->rng) {
        double r = as_rng_uniform(ro->rng), acc = 0;
        for (int64_t k = 0; k < K; k++) {
            if (!w->mask[k]) continue;
            a = k;
            acc += exp((double)w->lp[k]);
            if (r < acc) break;
        }
    } else {
        for (int64_t k = 0; k < K; k++)
            if (w->mask[k] && (a < 0 || w->lp[k] > w->lp[a])) a = k;
    }
    return a;
}

/* table j (step s) onto shard a: the episode state updated */
static void rollout_apply(rollout_bufs *w, const as_policy *q, int64_t s, int64_t j, int64_t a)
{
    const as_policy_dims *d = &q->d;
    const int R = w->R, E2 = w->E2, W = w->it.W, H = w->H;
    w->mem[a] += w->bytes[j];
    w->cnt[a]++;
    float *cs = w->csum + (size_t)a * R;
    const float *rj = w->rep + (size_t)j * R;
    for (int r = 0; r < R; r++) cs[r] += rj[r];
    float *Ea = w->Es + (size_t)a * E2;
    const float *ej = w->e + (size_t)s * E2;
    for (int r = 0; r < E2; r++) Ea[r] += ej[r];
    as_nn_linear_fwd_ld(w->wtmp, ej, P(q, B_HW1) + H, 3 * H, NULL, 1, E2, d->p1);
    float *wa = w->WE + (size_t)a * d->p1;
    for (int o = 0; o < d->p1; o++) wa[o] += w->wtmp[o];
    if (w->it.split) {
        float *va = w->Vs + (size_t)a * W;
        const float *uj = w->it.w + (size_t)j * W;
        for (int r = 0; r < W; r++) va[r] += uj[r];
    }
    w->pnow[a] = w->pafter[a];
}

int as_policy_rollout(const as_policy *q, as_rollout *ro, char *err, size_t errlen)
{
    const as_plan_model *cm = ro->cm;
    int64_t n = ro->n, K = ro->K;
    ro->feasible = 0;
    ro->pred_balance = 0;
    if (K < 1 || n < 0 || n > INT32_MAX / 2 || K > INT32_MAX / 2) { snprintf(err, errlen, "bad task size"); return -1; }
    if (!cm) { snprintf(err, errlen, "the policy needs a cost model"); return -1; }
    if (cm->rep < 1) { snprintf(err, errlen, "cost model: representation width %d", cm->rep); return -1; }
    if (ro->tr && !ro->rng) { snprintf(err, errlen, "recording needs sampling"); return -1; }
    as_arena own = { 0 }, *A = ro->ws ? ro->ws : &own;
    rollout_bufs w;
    double ref, left;
    rollout_init(&w, q, ro, A, &ref, &left);
    as_traj *tr = ro->tr;
    if (tr) {
        traj_begin(tr, n, K, ro->keep_tr);
        memcpy(tr->x, w.x, (size_t)n * F * sizeof *tr->x);
    }
    for (int64_t i = 0; i < n; i++) ro->assign[i] = -1;
    int feasible = 1;
    for (int64_t s = 0; s < n; s++) {
        int64_t j = w.order[s];
        rollout_state(&w, q, s, s == 0);
        int nok = rollout_costs(&w, ro->cap, j, ref, left);
        if (ro->pin && ro->pin[j] >= 0) {
            /* TorchRec's row_wise block: its rank or nowhere */
            for (int64_t k = 0; k < K; k++)
                if (k != ro->pin[j]) w.mask[k] = 0;
            nok = w.mask[ro->pin[j]];
        }
        left -= w.single[j];
        if (!nok) {
            feasible = 0;
            if (tr) break;   /* training: the episode ends here */
            continue;        /* planning: leave it unplaced, go on */
        }
        rollout_logits(&w, q);
        const int64_t a = rollout_choose(&w, ro);
        if (tr) {
            int L = tr->L;
            memcpy(tr->cf + (size_t)L * K * NCF, w.cf, (size_t)K * NCF * sizeof *w.cf);
            memcpy(tr->mask + (size_t)L * K, w.mask, (size_t)K);
            tr->act[L] = (int32_t)a;
            tr->logp[L] = w.lp[a];
            tr->L++;
        }
        ro->assign[j] = a;
        rollout_apply(&w, q, s, j, a);
    }
    ro->feasible = feasible;
    double pmin = INFINITY, pmax = 0;
    for (int64_t k = 0; k < K; k++) {
        double v = w.cnt[k] ? cm->head(cm->ctx, w.csum + (size_t)k * w.R) : 0;
        if (ro->pred) ro->pred[k] = v;
        if (v < pmin) pmin = v;
        if (v > pmax) pmax = v;
    }
    ro->pred_balance = feasible && pmax > 0 ? pmin / pmax : 0;
    if (tr) {
        tr->feasible = feasible;
        tr->pred_balance = ro->pred_balance;
        tr->reward = feasible ? (float)ro->pred_balance : -1.0f;
    }
    if (A == &own) as_arena_free(&own);
    else as_arena_reset(A);
    return 0;
}

int as_policy_auto_samples(int64_t n, int64_t K)
{
    if (n < 1 || K < 1 || K > AS_POLICY_SAMPLE_BUDGET || n > AS_POLICY_SAMPLE_BUDGET / (48 + K)) return 1;
    int64_t s = AS_POLICY_SAMPLE_BUDGET / (n * (48 + K));
    return s < 1 ? 1 : s > AS_POLICY_MAX_SAMPLES ? AS_POLICY_MAX_SAMPLES : (int)s;
}

static double max_of(const double *v, int64_t K)
{
    double m = 0;
    for (int64_t k = 0; k < K; k++)
        if (v[k] > m) m = v[k];
    return m;
}

int as_policy_samples(void *ctx, int64_t n, int64_t K)
{
    const as_policy_planner *pp = ctx;
    return pp->samples > 0 ? pp->samples : as_policy_auto_samples(n, K);
}

int as_policy_place(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                    char *err, size_t errlen)
{
    const as_policy_planner *pp = ctx;
    if (K < 1 || K > INT32_MAX / 2) { snprintf(err, errlen, "bad task size"); return -1; }
    double *pred = as_malloc((size_t)K * sizeof *pred);
    as_arena ws = { 0 };   /* the samples' rollouts share their buffers */
    int64_t *pin = as_malloc((size_t)(n ? n : 1) * sizeof *pin);
    const int64_t *pins = as_plan_pins(t, n, K, pin) ? pin : NULL;
    as_rollout ro = { .cm = pp->cm, .t = t, .n = n, .K = K, .cap = cap, .assign = assign, .pred = pred, .ws = &ws,
                      .pin = pins };
    int rc = as_policy_rollout(pp->pol, &ro, err, errlen);
    int S = pp->samples > 0 ? pp->samples : as_policy_auto_samples(n, K);
    if (rc || S <= 1) {
        as_arena_free(&ws);
        free(pred);
        free(pin);
        return rc;
    }
    int best_f = ro.feasible;
    double best_b = ro.pred_balance, best_m = max_of(pred, K);
    /* the draws' stream: the task's table ids (FNV-1a), so a task gets the same plan
     * wherever it appears */
    uint64_t hsh = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) hsh = (hsh ^ (uint64_t)t[i]->id) * 1099511628211ull;
    as_rng rng;
    as_rng_seed(&rng, pp->seed, hsh);
    int64_t *cand = as_malloc((size_t)(n ? n : 1) * sizeof *cand);
    for (int s = 1; s < S && rc == 0; s++) {
        as_rollout rs = { .cm = pp->cm, .t = t, .n = n, .K = K, .cap = cap, .assign = cand, .pred = pred, .rng = &rng,
                          .ws = &ws, .pin = pins };
        rc = as_policy_rollout(pp->pol, &rs, err, errlen);
        if (rc) break;
        double m = max_of(pred, K);
        int better = rs.feasible > best_f ||
                     (rs.feasible == best_f && (rs.pred_balance > best_b || (rs.pred_balance == best_b && m < best_m)));
        if (!better) continue;
        best_f = rs.feasible;
        best_b = rs.pred_balance;
        best_m = m;
        memcpy(assign, cand, (size_t)n * sizeof *assign);
    }
    free(cand);
    free(pred);
    free(pin);
    as_arena_free(&ws);
    return rc;
}

/* ---- V-trace ------------------------------------------------------------------------------- */

void as_vtrace(float *vs, float *adv, const float *logrho, const float *r, const float *done, const float *V,
               float bootstrap, int L, const as_vtrace_cfg *c)
{
    double acc = 0, vnext = bootstrap;   /* vs_{t+1} */
    for (int t = L - 1; t >= 0; t--) {
        double rho = exp((double)logrho[t]);
        double rh = rho < c->rho_bar ? rho : c->rho_bar, ct = rho < c->c_bar ? rho : c->c_bar;
        double gt = c->gamma * (1.0 - done[t]);
        double Vn = t + 1 < L ? V[t + 1] : bootstrap;
        double delta = rh * (r[t] + gt * Vn - V[t]);
        acc = delta + gt * ct * acc;
        double v = V[t] + acc;
        adv[t] = (float)(rh * (r[t] + gt * vnext - V[t]));
        vs[t] = (float)v;
        vnext = v;
    }
}

/* ---- the learner: replay, loss, backward --------------------------------------------------- */

/* a recorded trajectory's activations in the forward pass of the learner (replay), and the
   loss's targets: what the backward pass reads. Dimension letters as the policy's; Rr = L x K
   (step, shard) rows. */
typedef struct {
    int L, K, T, IN;
    int64_t Rr;
    float *a1, *e;                  /* [L,E1], [L,E2] the encoder */
    float *fr, *u, *xin;            /* [L], [L,SD], [L,IN] the step feature, the LSTM input */
    float *h1, *c1, *g1, *h2, *c2, *g2;   /* [L,H] states, [L,4H] gates of both layers */
    float *Es, *cu, *Z;             /* [Rr,E2] encoder sums, [Rr,CD] cost features, [Rr,3H] head input */
    float *q1, *q2, *q3, *logit;    /* [Rr,P1..P3], [Rr] the head */
    float *w1, *V;                  /* [L,VH], [L] the value head */
    float *lp, *logrho, *rw, *done, *vs, *adv;   /* [Rr], [L] ... the loss and its V-trace targets */
} replay_acts;

/* the forward pass over trajectory tr into a (its buffers taken from A) */
static void replay_fwd(replay_acts *a, const as_policy *q, const as_traj *tr, as_arena *A)
{
    const as_policy_dims *d = &q->d;
    const int L = tr->L, K = tr->K, E1 = d->e1, E2 = d->e2, H = d->h, CD = d->cd, SD = d->sd;
    const size_t f = sizeof(float);
    a->L = L; a->K = K; a->T = tr->T;
    a->Rr = (int64_t)L * K;
    a->IN = E2 + SD;
    const int64_t Rr = a->Rr;
    const int IN = a->IN;
    a->a1 = as_arena_take(A, (size_t)L * E1 * f);
    a->e = as_arena_take(A, (size_t)L * E2 * f);
    encode(q, a->a1, a->e, tr->x, L);
    a->fr = as_arena_take(A, (size_t)L * f);
    a->u = as_arena_take(A, (size_t)L * SD * f);
    for (int t = 0; t < L; t++) a->fr[t] = (float)((double)t / (double)a->T);
    step_mlp(q, a->u, a->fr, L);
    a->xin = as_arena_take(A, (size_t)L * IN * f);
    for (int t = 0; t < L; t++) {
        memcpy(a->xin + (size_t)t * IN, a->e + (size_t)t * E2, (size_t)E2 * f);
        memcpy(a->xin + (size_t)t * IN + E2, a->u + (size_t)t * SD, (size_t)SD * f);
    }
    a->h1 = as_arena_take(A, (size_t)L * H * f); a->c1 = as_arena_take(A, (size_t)L * H * f); a->g1 = as_arena_take(A, (size_t)L * 4 * H * f);
    a->h2 = as_arena_take(A, (size_t)L * H * f); a->c2 = as_arena_take(A, (size_t)L * H * f); a->g2 = as_arena_take(A, (size_t)L * 4 * H * f);
    for (int t = 0; t < L; t++) {
        size_t o = (size_t)t * H, op = (size_t)(t - 1) * H;
        as_nn_lstm_fwd(a->h1 + o, a->c1 + o, a->g1 + 4 * o, a->xin + (size_t)t * IN, t ? a->h1 + op : NULL,
                       t ? a->c1 + op : NULL, P(q, B_L1WI), P(q, B_L1WH), P(q, B_L1B), 1, IN, H);
        as_nn_lstm_fwd(a->h2 + o, a->c2 + o, a->g2 + 4 * o, a->h1 + o, t ? a->h2 + op : NULL, t ? a->c2 + op : NULL,
                       P(q, B_L2WI), P(q, B_L2WH), P(q, B_L2B), 1, H, H);
    }
    /* encoder sums per (step, shard) before the step's action */
    a->Es = as_arena_ztake(A, ((size_t)Rr * E2) * f);
    for (int t = 1; t < L; t++) {
        memcpy(a->Es + (size_t)t * K * E2, a->Es + (size_t)(t - 1) * K * E2, (size_t)K * E2 * f);
        float *dst = a->Es + ((size_t)t * K + tr->act[t - 1]) * E2;
        const float *src = a->e + (size_t)(t - 1) * E2;
        for (int j = 0; j < E2; j++) dst[j] += src[j];
    }
    a->cu = as_arena_take(A, (size_t)Rr * CD * f);
    as_nn_linear_fwd(a->cu, tr->cf, P(q, B_CW), P(q, B_CB), (int)Rr, NCF, CD);
    relu_inplace(a->cu, Rr * CD);
    a->Z = as_arena_take(A, (size_t)Rr * 3 * H * f);
    for (int t = 0; t < L; t++)
        for (int k = 0; k < K; k++) {
            size_t r = (size_t)t * K + k;
            build_z(a->Z + r * 3 * H, a->h2 + (size_t)t * H, a->Es + r * E2, a->cu + r * CD, E2, CD);
        }
    a->q1 = as_arena_take(A, (size_t)Rr * d->p1 * f); a->q2 = as_arena_take(A, (size_t)Rr * d->p2 * f);
    a->q3 = as_arena_take(A, (size_t)Rr * d->p3 * f); a->logit = as_arena_take(A, (size_t)Rr * f);
    head_fwd(q, a->q1, a->q2, a->q3, a->logit, a->Z, (int)Rr);
    a->w1 = as_arena_take(A, (size_t)L * d->vh * f);
    a->V = as_arena_take(A, (size_t)L * f);
    as_nn_linear_fwd(a->w1, a->h2, P(q, B_VW1), P(q, B_VB1), L, H, d->vh);
    relu_inplace(a->w1, (int64_t)L * d->vh);
    as_nn_linear_fwd(a->V, a->w1, P(q, B_VW2), P(q, B_VB2), L, d->vh, 1);
    a->lp = as_arena_take(A, (size_t)Rr * f);
    a->logrho = as_arena_take(A, (size_t)L * f); a->rw = as_arena_ztake(A, ((size_t)L) * f); a->done = as_arena_ztake(A, ((size_t)L) * f);
    a->vs = as_arena_take(A, (size_t)L * f); a->adv = as_arena_take(A, (size_t)L * f);
}

/* the loss of a forward pass: the log-probabilities, the V-trace targets (or the test's fixed
   ones), policy-gradient, value and entropy terms; counted into st (may be NULL) */
static double replay_loss(replay_acts *a, const as_traj *tr, const as_vtrace_cfg *vc, as_policy_stats *st)
{
    const int L = a->L, K = a->K;
    double ent = 0, rho_sum = 0;
    for (int t = 0; t < L; t++) {
        float *l = a->lp + (size_t)t * K;
        log_softmax(l, a->logit + (size_t)t * K, tr->mask + (size_t)t * K, K);
        a->logrho[t] = l[tr->act[t]] - tr->logp[t];
        rho_sum += exp((double)a->logrho[t]);
        for (int k = 0; k < K; k++) if (tr->mask[(size_t)t * K + k]) ent -= exp((double)l[k]) * l[k];
    }
    a->rw[L - 1] = tr->reward;
    a->done[L - 1] = 1;
    as_vtrace(a->vs, a->adv, a->logrho, a->rw, a->done, a->V, 0.0f, L, vc);
    if (tr->fixed_vs) memcpy(a->vs, tr->fixed_vs, (size_t)L * sizeof(float));
    if (tr->fixed_adv) memcpy(a->adv, tr->fixed_adv, (size_t)L * sizeof(float));
    double pg = 0, vl = 0, el = 0;
    for (int t = 0; t < L; t++) {
        pg -= (double)a->lp[(size_t)t * K + tr->act[t]] * a->adv[t];
        double dv = (double)a->vs[t] - a->V[t];
        vl += 0.5 * vc->baseline * dv * dv;
        for (int k = 0; k < K; k++) {
            size_t r = (size_t)t * K + k;
            if (tr->mask[r]) el += vc->entropy * exp((double)a->lp[r]) * a->lp[r];
        }
    }
    double loss = pg + vl + el;
    if (st) {
        st->loss += loss; st->pg += pg; st->value += vl; st->entropy += ent;
        st->rho_mean += rho_sum; st->steps += L; st->episodes++; st->reward += tr->reward;
    }
    return loss;
}

/* backward through the head and the value head: the gradients of their parameters into G,
   d loss / d (the LSTM's top state) into ds[L,H] and d loss / d (the encoder sums) into
   dE[Rr,E2] (both zeroed by the caller); the cost-feature layer's gradients too */
static void replay_bwd_heads(const replay_acts *a, const as_policy *q, const as_traj *tr, const as_vtrace_cfg *vc,
                             float *G, float *ds, float *dE, as_arena *A)
{
    const as_policy_dims *d = &q->d;
    const int L = a->L, K = a->K, E2 = d->e2, H = d->h, CD = d->cd;
    const int64_t Rr = a->Rr;
    const size_t f = sizeof(float);
    /* d loss / d logit and d loss / d V */
    float *dlogit = as_arena_ztake(A, ((size_t)Rr) * f), *dV = as_arena_take(A, (size_t)L * f);
    for (int t = 0; t < L; t++) {
        const float *l = a->lp + (size_t)t * K;
        const uint8_t *m = tr->mask + (size_t)t * K;
        double Hs = 0;
        for (int k = 0; k < K; k++) if (m[k]) Hs += exp((double)l[k]) * l[k];
        for (int k = 0; k < K; k++) {
            if (!m[k]) continue;
            double pk = exp((double)l[k]);
            double gk = -a->adv[t] * ((k == tr->act[t]) - pk) + vc->entropy * pk * ((double)l[k] - Hs);
            dlogit[(size_t)t * K + k] = (float)gk;
        }
        dV[t] = vc->baseline * (a->V[t] - a->vs[t]);
    }
    /* head */
    float *dq3 = as_arena_ztake(A, ((size_t)Rr * d->p3) * f), *dq2 = as_arena_ztake(A, ((size_t)Rr * d->p2) * f);
    float *dq1 = as_arena_ztake(A, ((size_t)Rr * d->p1) * f), *dZ = as_arena_ztake(A, ((size_t)Rr * 3 * H) * f);
    as_nn_linear_bwd(dq3, G + q->at[B_HW4], G + q->at[B_HB4], dlogit, a->q3, P(q, B_HW4), (int)Rr, d->p3, 1);
    for (int64_t i = 0; i < Rr * d->p3; i++) if (!(a->q3[i] > 0)) dq3[i] = 0;
    as_nn_linear_bwd(dq2, G + q->at[B_HW3], G + q->at[B_HB3], dq3, a->q2, P(q, B_HW3), (int)Rr, d->p2, d->p3);
    for (int64_t i = 0; i < Rr * d->p2; i++) if (!(a->q2[i] > 0)) dq2[i] = 0;
    as_nn_linear_bwd(dq1, G + q->at[B_HW2], G + q->at[B_HB2], dq2, a->q1, P(q, B_HW2), (int)Rr, d->p1, d->p2);
    for (int64_t i = 0; i < Rr * d->p1; i++) if (!(a->q1[i] > 0)) dq1[i] = 0;
    as_nn_linear_bwd(dZ, G + q->at[B_HW1], G + q->at[B_HB1], dq1, a->Z, P(q, B_HW1), (int)Rr, 3 * H, d->p1);
    /* split dZ into ds and dA */
    float *dcu = as_arena_ztake(A, ((size_t)Rr * CD) * f);
    for (int t = 0; t < L; t++) {
        const float *s = a->h2 + (size_t)t * H;
        float *dst = ds + (size_t)t * H;
        for (int k = 0; k < K; k++) {
            size_t r = (size_t)t * K + k;
            const float *z = dZ + r * 3 * H, *A = a->Z + r * 3 * H + H;
            for (int j = 0; j < H; j++) {
                dst[j] += z[j] + z[2 * H + j] * A[j];
                float da = z[H + j] + z[2 * H + j] * s[j];
                if (j < E2) dE[r * E2 + j] = da;
                else dcu[r * CD + (j - E2)] = a->cu[r * CD + (j - E2)] > 0 ? da : 0.0f;
            }
        }
    }
    as_nn_linear_bwd(NULL, G + q->at[B_CW], G + q->at[B_CB], dcu, tr->cf, P(q, B_CW), (int)Rr, NCF, CD);
    /* value head */
    float *dw1 = as_arena_ztake(A, ((size_t)L * d->vh) * f);
    as_nn_linear_bwd(dw1, G + q->at[B_VW2], G + q->at[B_VB2], dV, a->w1, P(q, B_VW2), L, d->vh, 1);
    for (int64_t i = 0; i < (int64_t)L * d->vh; i++) if (!(a->w1[i] > 0)) dw1[i] = 0;
    as_nn_linear_bwd(ds, G + q->at[B_VW1], G + q->at[B_VB1], dw1, a->h2, P(q, B_VW1), L, H, d->vh);
}

/* backward through both LSTM layers over time, from ds[L,H] (the top state's gradient) to
   dxin[L,IN] (zeroed by the caller), the layers' gradients into G */
static void replay_bwd_lstm(const replay_acts *a, const as_policy *q, float *G, const float *ds, float *dxin, as_arena *A)
{
    const int L = a->L, H = q->d.h, IN = a->IN;
    const size_t f = sizeof(float);
    float *dh1 = as_arena_ztake(A, ((size_t)L * H) * f), *dz = as_arena_take(A, (size_t)4 * H * f);
    float *dhc = as_arena_ztake(A, ((size_t)H) * f), *dcc = as_arena_ztake(A, ((size_t)H) * f), *dh = as_arena_take(A, (size_t)H * f);
    float *dhp = as_arena_ztake(A, ((size_t)H) * f), *dcp = as_arena_ztake(A, ((size_t)H) * f);
    for (int t = L - 1; t >= 0; t--) {   /* layer 2 */
        size_t o = (size_t)t * H, op = (size_t)(t - 1) * H;
        for (int j = 0; j < H; j++) dh[j] = ds[o + j] + dhc[j];
        memset(dhp, 0, (size_t)H * f);
        memset(dcp, 0, (size_t)H * f);
        as_nn_lstm_bwd(dh1 + o, t ? dhp : NULL, t ? dcp : NULL, G + q->at[B_L2WI], G + q->at[B_L2WH], G + q->at[B_L2B],
                       dz, dh, dcc, a->g2 + 4 * o, a->c2 + o, t ? a->c2 + op : NULL, a->h1 + o, t ? a->h2 + op : NULL,
                       P(q, B_L2WI), P(q, B_L2WH), 1, H, H);
        memcpy(dhc, dhp, (size_t)H * f);
        memcpy(dcc, dcp, (size_t)H * f);
    }
    memset(dhc, 0, (size_t)H * f);
    memset(dcc, 0, (size_t)H * f);
    for (int t = L - 1; t >= 0; t--) {   /* layer 1 */
        size_t o = (size_t)t * H, op = (size_t)(t - 1) * H;
        for (int j = 0; j < H; j++) dh[j] = dh1[o + j] + dhc[j];
        memset(dhp, 0, (size_t)H * f);
        memset(dcp, 0, (size_t)H * f);
        as_nn_lstm_bwd(dxin + (size_t)t * IN, t ? dhp : NULL, t ? dcp : NULL, G + q->at[B_L1WI], G + q->at[B_L1WH],
                       G + q->at[B_L1B], dz, dh, dcc, a->g1 + 4 * o, a->c1 + o, t ? a->c1 + op : NULL, a->xin + (size_t)t * IN,
                       t ? a->h1 + op : NULL, P(q, B_L1WI), P(q, B_L1WH), 1, IN, H);
        memcpy(dhc, dhp, (size_t)H * f);
        memcpy(dcc, dcp, (size_t)H * f);
    }
}

/* backward through the encoder and the step feature: the encoder sums' gradient dE[Rr,E2]
   (a step's table is in the sums of every later step on its shard) and the LSTM input's
   dxin[L,IN] = [e | u], the layers' gradients into G */
static void replay_bwd_encoder(const replay_acts *a, const as_policy *q, const as_traj *tr, float *G, const float *dE,
                             const float *dxin, as_arena *A)
{
    const as_policy_dims *d = &q->d;
    const int L = a->L, K = a->K, E1 = d->e1, E2 = d->e2, SD = d->sd, IN = a->IN;
    const size_t f = sizeof(float);
    float *de = as_arena_ztake(A, ((size_t)L * E2) * f), *acc = as_arena_ztake(A, ((size_t)K * E2) * f);
    for (int t = L - 1; t >= 0; t--) {
        const float *ga = acc + (size_t)tr->act[t] * E2;
        for (int j = 0; j < E2; j++) de[(size_t)t * E2 + j] += ga[j];
        for (int k = 0; k < K; k++) {
            const float *src = dE + ((size_t)t * K + k) * E2;
            float *dst = acc + (size_t)k * E2;
            for (int j = 0; j < E2; j++) dst[j] += src[j];
        }
    }
    float *du = as_arena_ztake(A, ((size_t)L * SD) * f);
    for (int t = 0; t < L; t++)
        for (int j = 0; j < SD; j++)   /* xin = [e | u] */
            du[(size_t)t * SD + j] = a->u[(size_t)t * SD + j] > 0 ? dxin[(size_t)t * IN + E2 + j] : 0.0f;
    for (int t = 0; t < L; t++)
        for (int j = 0; j < E2; j++) de[(size_t)t * E2 + j] += dxin[(size_t)t * IN + j];
    as_nn_linear_bwd(NULL, G + q->at[B_SW], G + q->at[B_SB], du, a->fr, P(q, B_SW), L, 1, SD);
    for (int64_t i = 0; i < (int64_t)L * E2; i++) if (!(a->e[i] > 0)) de[i] = 0;
    float *da1 = as_arena_ztake(A, ((size_t)L * E1) * f);
    as_nn_linear_bwd(da1, G + q->at[B_EW2], G + q->at[B_EB2], de, a->a1, P(q, B_EW2), L, E1, E2);
    for (int64_t i = 0; i < (int64_t)L * E1; i++) if (!(a->a1[i] > 0)) da1[i] = 0;
    as_nn_linear_bwd(NULL, G + q->at[B_EW1], G + q->at[B_EB1], da1, tr->x, P(q, B_EW1), L, d->f, E1);
}

/* one trajectory: forward, loss, and (G not NULL) backward, its gradient added into G */
static double replay(const as_policy *q, as_traj *tr, const as_vtrace_cfg *vc, float *G, as_policy_stats *st,
                     as_arena *A)
{
    if (tr->L <= 0) return 0;
    replay_acts a;
    replay_fwd(&a, q, tr, A);
    double loss = replay_loss(&a, tr, vc, st);
    if (G) {
        const size_t f = sizeof(float);
        float *ds = as_arena_ztake(A, ((size_t)a.L * q->d.h) * f), *dE = as_arena_ztake(A, ((size_t)a.Rr * q->d.e2) * f);
        float *dxin = as_arena_ztake(A, ((size_t)a.L * a.IN) * f);
        replay_bwd_heads(&a, q, tr, vc, G, ds, dE, A);
        replay_bwd_lstm(&a, q, G, ds, dxin, A);
        replay_bwd_encoder(&a, q, tr, G, dE, dxin, A);
    }
    as_arena_reset(A);
    return loss;
}

void as_policy_replay_logp(const as_policy *q, const as_traj *tr, float *logp, as_arena *ws)
{
    if (tr->L <= 0) return;
    as_arena own = { 0 }, *A = ws ? ws : &own;
    replay_acts a;
    replay_fwd(&a, q, tr, A);
    for (int t = 0; t < a.L; t++) {
        float *l = a.lp + (size_t)t * a.K;
        log_softmax(l, a.logit + (size_t)t * a.K, tr->mask + (size_t)t * a.K, a.K);
        logp[t] = l[tr->act[t]];
    }
    as_arena_reset(A);
    as_arena_free(&own);
}

double as_policy_loss_grad(const as_policy *p, as_traj *const *tr, int n, const as_vtrace_cfg *c, float *grad,
                           as_policy_stats *st, as_arena *ws)
{
    as_arena own = { 0 }, *A = ws ? ws : &own;
    double loss = 0;
    for (int i = 0; i < n; i++) loss += replay(p, tr[i], c, grad, st, A);
    as_arena_free(&own);
    return loss;
}

/* ---- records --------------------------------------------------------------------------------- */

#define POLICY_FIELDS 29

void as_policy_write(const as_policy *q, as_writer *w, int nextra, void (*extra)(msgpack_packer *, void *), void *ctx)
{
    const as_policy_info *in = &q->info;
    const as_policy_dims *d = &q->d;
    msgpack_packer *pk = as_writer_pk(w);
    int sel = in->selected_episode >= 0;
    msgpack_pack_map(pk, (size_t)(POLICY_FIELDS + 3 * sel + (q->drop != 0) + q->nocost + (extra ? nextra : 0)));
    as_pack_kv_str(pk, "kind", "policy");
    as_pack_kv_str(pk, "policy", "autoshard-lstm");
    as_pack_kv_i64(pk, "format_version", AS_POLICY_VERSION);
    as_pack_str(pk, "features");
    msgpack_pack_array(pk, F);
    for (int i = 0; i < F; i++) as_pack_str(pk, as_costmodel_feature_name(i));
    as_pack_kv_str(pk, "transform", q->log_feats ? "log1p" : "none");
    as_pack_kv_f64_list(pk, "norm_mean", q->mean, 3);
    as_pack_kv_f64_list(pk, "norm_std", q->std, 3);
    if (q->drop) as_pack_drop(pk, q->drop);
    if (q->nocost) as_pack_kv_str(pk, "cost_state", "none");
    as_pack_str(pk, "dims");
    int dv[10] = { d->f, d->e1, d->e2, d->sd, d->h, d->cd, d->p1, d->p2, d->p3, d->vh };
    msgpack_pack_array(pk, 10);
    for (int i = 0; i < 10; i++) msgpack_pack_int(pk, dv[i]);
    as_pack_kv_i64(pk, "cost_features", NCF);
    as_pack_str(pk, "param_order");
    msgpack_pack_array(pk, B_COUNT);
    for (int i = 0; i < B_COUNT; i++) as_pack_str(pk, BLOCK_NAMES[i]);
    as_pack_kv_i64(pk, "nparams", q->n);
    int64_t shape[1] = { q->n };
    as_pack_kv_array(pk, "params", AS_DT_F32, q->p, 1, shape);
    as_pack_kv_i64(pk, "seed", (int64_t)in->seed);
    as_pack_kv_i64(pk, "episodes", in->episodes);
    as_pack_kv_i64(pk, "updates", in->updates);
    as_pack_kv_i64(pk, "steps", in->steps);
    as_pack_kv_i64(pk, "evals", in->evals);
    as_pack_kv_str(pk, "reward", in->reward);
    as_pack_kv_i64(pk, "train_tasks", in->train_tasks);
    as_pack_kv_i64(pk, "task_tables", in->task_tables);
    as_pack_kv_i64(pk, "task_shards", in->task_shards);
    as_pack_kv_f64(pk, "lr", in->lr);
    as_pack_kv_f64(pk, "entropy_cost", in->entropy);
    as_pack_kv_f64(pk, "baseline_cost", in->baseline);
    as_pack_kv_f64(pk, "clip", in->clip);
    as_pack_kv_i64(pk, "batch", in->batch);
    as_pack_kv_i64(pk, "actors", in->actors);
    as_pack_kv_f64(pk, "final_reward", in->final_reward);
    if (sel) {
        as_pack_kv_i64(pk, "selected_episode", in->selected_episode);
        as_pack_kv_f64(pk, "selected_balance", in->selected_balance);
        as_pack_kv_i64(pk, "select_tasks", in->select_tasks);
    }
    as_pack_kv_str(pk, "order", "predicted single-table cost, descending");
    if (extra) extra(pk, ctx);
    as_writer_end_record(w);
}

static int get_i64(const msgpack_object *rec, const char *k, int64_t *v, char *err, size_t errlen)
{
    if (as_obj_i64(rec, k, v)) { snprintf(err, errlen, "policy record: field '%s' missing or not an integer", k); return -1; }
    return 0;
}

/* the record's dims: ten sizes in 1..AS_POLICY_MAX_DIM that fit together; 0 or -1 with err */
static int read_dims(const msgpack_object *rec, as_policy_dims *d, char *err, size_t errlen)
{
    const msgpack_object *dm = as_obj_get(rec, "dims");
    if (!dm || dm->type != MSGPACK_OBJECT_ARRAY || dm->via.array.size != 10) {
        snprintf(err, errlen, "policy record: dims must be 10 sizes");
        return -1;
    }
    int dv[10];
    for (int i = 0; i < 10; i++) {
        const msgpack_object *x = &dm->via.array.ptr[i];
        if (x->type != MSGPACK_OBJECT_POSITIVE_INTEGER || x->via.u64 < 1 || x->via.u64 > AS_POLICY_MAX_DIM) {
            snprintf(err, errlen, "policy record: size %d of dims is not in 1..%d", i, AS_POLICY_MAX_DIM);
            return -1;
        }
        dv[i] = (int)x->via.u64;
    }
    *d = (as_policy_dims){ dv[0], dv[1], dv[2], dv[3], dv[4], dv[5], dv[6], dv[7], dv[8], dv[9] };
    char e3[256];
    if (dims_check(d, e3, sizeof e3)) { snprintf(err, errlen, "policy record: %s", e3); return -1; }
    return 0;
}

/* the cost features' transform (tr: none or log1p) and normalisation statistics (finite,
   std > 0); 0 or -1 with err */
static int read_norm(const msgpack_object *rec, char tr[16], double mean[3], double sd[3], char *err, size_t errlen)
{
    if (as_obj_str(rec, "transform", tr, 16) || (strcmp(tr, "none") && strcmp(tr, "log1p"))) {
        snprintf(err, errlen, "policy record: transform must be none or log1p");
        return -1;
    }
    if (as_obj_f64_list(rec, "norm_mean", mean, 3) || as_obj_f64_list(rec, "norm_std", sd, 3)) {
        snprintf(err, errlen, "policy record: norm_mean / norm_std must be 3 numbers");
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (!isfinite(mean[i]) || !isfinite(sd[i]) || !(sd[i] > 0)) {
            snprintf(err, errlen, "policy record: normalisation statistics must be finite, std > 0");
            return -1;
        }
    return 0;
}

/* what the policy knows about its training: each field optional (a policy file needs none of
   them to plan) and range-checked when present; as-rl's checkpoints require them (rl.c) and
   continue training from them. 0 or -1 with err */
static int read_info(const msgpack_object *rec, as_policy_info *in, char *err, size_t errlen)
{
    int64_t v = 0;
    char e2[256];
    static const char *const rewards[] = { "model", "bench", NULL };
    if (as_field_i64_opt(rec, "seed", 0, INT64_MAX, &v, e2, sizeof e2) ||
        as_field_i64_opt(rec, "episodes", 0, AS_POLICY_MAX_EPISODES, &in->episodes, e2, sizeof e2) ||
        as_field_i64_opt(rec, "updates", 0, in->episodes, &in->updates, e2, sizeof e2) ||
        as_field_i64_opt(rec, "steps", 0, INT64_MAX / 2, &in->steps, e2, sizeof e2) ||
        as_field_i64_opt(rec, "evals", 0, INT64_MAX / 2, &in->evals, e2, sizeof e2) ||
        as_field_str_opt(rec, "reward", rewards, in->reward, sizeof in->reward, e2, sizeof e2) ||
        as_field_i64_opt(rec, "train_tasks", 0, INT64_MAX, &in->train_tasks, e2, sizeof e2) ||
        as_field_i64_opt(rec, "task_tables", 0, INT64_MAX, &in->task_tables, e2, sizeof e2) ||
        as_field_i64_opt(rec, "task_shards", 0, INT64_MAX, &in->task_shards, e2, sizeof e2) ||
        as_field_f64_opt(rec, "lr", 0, AS_POLICY_MAX_LR, &in->lr, e2, sizeof e2) ||
        as_field_f64_opt(rec, "entropy_cost", 0, AS_POLICY_MAX_LOSS_COST, &in->entropy, e2, sizeof e2) ||
        as_field_f64_opt(rec, "baseline_cost", 0, AS_POLICY_MAX_LOSS_COST, &in->baseline, e2, sizeof e2) ||
        as_field_f64_opt(rec, "clip", 0, AS_POLICY_MAX_CLIP, &in->clip, e2, sizeof e2) ||
        as_field_i64_opt(rec, "batch", 1, AS_POLICY_MAX_BATCH, &in->batch, e2, sizeof e2) ||
        as_field_i64_opt(rec, "actors", 1, AS_POLICY_MAX_ACTORS, &in->actors, e2, sizeof e2) ||
        as_field_f64_opt(rec, "final_reward", -1, 1, &in->final_reward, e2, sizeof e2)) {
        snprintf(err, errlen, "policy record: %s", e2);
        return -1;
    }
    in->seed = (uint64_t)v;
    if (as_obj_get(rec, "selected_episode")) {
        if (as_field_i64(rec, "selected_episode", 0, in->episodes, &in->selected_episode, e2, sizeof e2) ||
            as_field_f64(rec, "selected_balance", 0, 1, &in->selected_balance, e2, sizeof e2) ||
            as_field_i64(rec, "select_tasks", 1, INT64_MAX, &in->select_tasks, e2, sizeof e2)) {
            snprintf(err, errlen, "policy record: model selection: %s", e2);
            in->selected_episode = -1;
            return -1;
        }
    }
    return 0;
}

int as_policy_read(as_policy **out, const msgpack_object *rec, char *err, size_t errlen)
{
    *out = NULL;
    if (as_net_header_check(rec, "policy", "autoshard-lstm", AS_POLICY_VERSION, "policy", err, errlen)) return -1;
    int64_t ncf;
    if (get_i64(rec, "cost_features", &ncf, err, errlen)) return -1;
    if (ncf != NCF) { snprintf(err, errlen, "policy uses %" PRId64 " cost features; this build uses %d", ncf, NCF); return -1; }
    as_policy_dims d;
    if (read_dims(rec, &d, err, errlen)) return -1;
    char tr[16];
    double mean[3], sd[3];
    if (read_norm(rec, tr, mean, sd, err, errlen)) return -1;
    /* what dims need, checked against nparams and the params the record carries before
       anything is allocated */
    as_policy shape = { .d = d };
    layout(&shape);
    int64_t np;
    as_array a;
    char e2[256];
    if (get_i64(rec, "nparams", &np, err, errlen)) return -1;
    if (np != shape.n) { snprintf(err, errlen, "policy record: nparams %" PRId64 " but dims need %" PRId64, np, shape.n); return -1; }
    if (as_obj_array(rec, "params", &a, e2, sizeof e2)) { snprintf(err, errlen, "policy record: %s", e2); return -1; }
    if (a.dtype != AS_DT_F32 || a.ndim != 1 || a.n != shape.n) {
        snprintf(err, errlen, "policy record: params must be float32 [%" PRId64 "]", shape.n);
        return -1;
    }
    as_policy *q = alloc_policy(&d);
    memcpy(q->p, a.data, (size_t)q->n * sizeof *q->p);
    for (int64_t i = 0; i < q->n; i++)
        if (!isfinite(q->p[i])) { snprintf(err, errlen, "policy record: parameter %" PRId64 " is not finite", i); goto bad; }
    q->log_feats = !strcmp(tr, "log1p");
    memcpy(q->mean, mean, sizeof q->mean);
    memcpy(q->std, sd, sizeof q->std);
    if (as_read_drop(rec, "policy record", &q->drop, err, errlen)) goto bad;
    if (as_obj_get(rec, "cost_state")) {
        char cs[16];
        if (as_obj_str(rec, "cost_state", cs, sizeof cs) || strcmp(cs, "none")) {
            snprintf(err, errlen, "policy record: cost_state must be \"none\" where present");
            goto bad;
        }
        q->nocost = 1;
    }
    if (read_info(rec, &q->info, err, errlen)) goto bad;
    *out = q;
    return 0;
bad:
    as_policy_free(q);
    return -1;
}

/* as_policy_load's record loop: the first `policy` and the first `model` record, as wanted */
typedef struct {
    as_policy *pol;
    as_costmodel *m;
    int want_pol, want_m;
} load_ctx;

static int load_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    load_ctx *x = ctx;
    char e2[512];
    if (x->want_pol && !x->pol && as_rec_is(rec, "policy")) {
        if (as_policy_read(&x->pol, &rec->obj, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
    } else if (x->want_m && !x->m && as_rec_is(rec, "model")) {
        if (as_costmodel_read(&x->m, &rec->obj, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
    }
    return 0;
}

int as_policy_load(const char *path, as_policy **p, as_costmodel **cm, char *err, size_t errlen)
{
    if (p) *p = NULL;
    if (cm) *cm = NULL;
    if (!path || !strcmp(path, "-")) {   /* a policy is a file, never standard input */
        snprintf(err, errlen, "%s: %s", path ? path : "(null)", strerror(ENOENT));
        return -1;
    }
    load_ctx x = { NULL, NULL, p != NULL, cm != NULL };
    char *files[1] = { (char *)path };
    int bad = as_read_records(files, 1, load_rec, &x, err, errlen) != 0;
    if (!bad && p && !x.pol) { snprintf(err, errlen, "%s: no `policy` record (not a policy file; make one with as-rl)", path); bad = 1; }
    if (!bad && cm && !x.m) { snprintf(err, errlen, "%s: no `model` record (the policy's cost model is missing)", path); bad = 1; }
    if (bad) {
        as_policy_free(x.pol);
        as_costmodel_free(x.m);
        return -1;
    }
    if (p) *p = x.pol;
    if (cm) *cm = x.m;
    return 0;
}
