/* costmodel.c - the paper's shard cost model on the nn.h layers: forward, backward,
 * training, prediction and the `model` record. Dimension letters: F features (21), R table
 * rows of a batch (sum of the shards' table counts), S shards of a batch, H1/H2/H3 hidden.
 *
 *   z1[R,H1] = X W1^T + b1, a1 = relu(z1)      per table (shared weights)
 *   z2[R,H2] = a1 W2^T + b2, a2 = relu(z2)
 *   p[S,H2]  = sum of a2's rows per shard
 *   z3[S,H3] = p W3^T + b3,  a3 = relu(z3)
 *   z[S]     = a3 W4^T + b4
 *   cost     = y_scale * softplus(z) | y_scale * exp(z) | y_scale * z   (output form)
 * Training applies softplus on the device (as_nn_ops.softplus_fwd/bwd) so the MSE sees the
 * cost; the log form trains z against log(cost / y_scale) with the plain MSE, no extra op.
 */
#include "costmodel.h"

#include "common.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F AS_NFEATURES

struct as_costmodel {
    as_costmodel_info info;
    int64_t nparams;
    float *params;
    struct { int64_t w1, b1, w2, b2, w3, b3, w4, b4; } at;   /* offsets into params */
};

static const char *feature_names[F] = {
    "dim", "rows", "pooling", "size", "bin0", "bin1", "bin2", "bin3", "bin4", "bin5", "bin6",
    "bin7", "bin8", "bin9", "bin10", "bin11", "bin12", "bin13", "bin14", "bin15", "bin16",
};

const char *as_costmodel_feature_name(int i) { return i >= 0 && i < F ? feature_names[i] : NULL; }

static const char *output_names[AS_CM_OUT_COUNT] = { "linear", "softplus", "log" };

const char *as_costmodel_output_name(int o) { return o >= 0 && o < AS_CM_OUT_COUNT ? output_names[o] : NULL; }

int as_costmodel_output_parse(const char *s)
{
    for (int o = 0; o < AS_CM_OUT_COUNT; o++) if (!strcmp(s, output_names[o])) return o;
    return -1;
}

double as_costmodel_out(const as_costmodel *m, double z)
{
    double ys = m->info.y_scale, v;
    switch (m->info.output) {
    case AS_CM_OUT_SOFTPLUS: {
        double u = AS_COSTMODEL_SOFTPLUS_BETA * z;
        v = ys * (u > 0 ? u + log1p(exp(-u)) : log1p(exp(u))) / AS_COSTMODEL_SOFTPLUS_BETA;
        break;
    }
    case AS_CM_OUT_LOG: v = ys * exp(z < AS_COSTMODEL_MAX_LOG ? z : AS_COSTMODEL_MAX_LOG); break;
    default: v = ys * z; break;
    }
    /* +0, never -0 (printf shows "-0.0000"); a NaN z (a broken model) is 0 as well */
    return v > 0 ? (v < DBL_MAX ? v : DBL_MAX) : 0.0;
}

as_costmodel_metrics as_costmodel_metrics_of(const double *y, const double *p, const char *mask, int64_t n)
{
    as_costmodel_metrics m = { 0, 0, 0, 0, 0 };
    double sy = 0, ape = 0;
    int64_t nape = 0;
    for (int64_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double e = p[i] - y[i];
        m.n++;
        m.mae += fabs(e);
        m.mse += e * e;
        sy += y[i];
        if (y[i] != 0) { ape += fabs(e / y[i]); nape++; }
    }
    if (m.n == 0) return (as_costmodel_metrics){ 0, NAN, NAN, NAN, NAN };
    double mean = sy / m.n, sst = 0;
    for (int64_t i = 0; i < n; i++)
        if (!mask || mask[i]) sst += (y[i] - mean) * (y[i] - mean);
    m.r2 = sst > 0 ? 1 - m.mse / sst : NAN;   /* m.mse is still the sum of squares */
    m.mae /= m.n;
    m.mse /= m.n;
    m.mape = nape ? 100 * ape / nape : NAN;
    return m;
}

static int64_t layout(as_costmodel *m)
{
    int h1 = m->info.h1, h2 = m->info.h2, h3 = m->info.h3;
    int64_t o = 0;
    m->at.w1 = o; o += (int64_t)h1 * F;
    m->at.b1 = o; o += h1;
    m->at.w2 = o; o += (int64_t)h2 * h1;
    m->at.b2 = o; o += h2;
    m->at.w3 = o; o += (int64_t)h3 * h2;
    m->at.b3 = o; o += h3;
    m->at.w4 = o; o += h3;
    m->at.b4 = o; o += 1;
    return o;
}

static as_costmodel *alloc_model(int h1, int h2, int h3)
{
    as_costmodel *m = as_calloc(1, sizeof *m);
    m->info.h1 = h1;
    m->info.h2 = h2;
    m->info.h3 = h3;
    m->nparams = layout(m);
    m->params = as_calloc((size_t)m->nparams, sizeof *m->params);
    for (int k = 0; k < 3; k++) { m->info.mean[k] = 0; m->info.std[k] = 1; }
    m->info.y_scale = 1;
    snprintf(m->info.split, sizeof m->info.split, "none");
    return m;
}

as_costmodel *as_costmodel_new(int h1, int h2, int h3, uint64_t seed)
{
    as_costmodel *m = alloc_model(h1, h2, h3);
    uint64_t st = seed ^ 0x636f73746d6f646cULL;   /* "costmodl" */
    float *p = m->params;
    as_nn_init_linear(p + m->at.w1, p + m->at.b1, F, h1, &st);
    as_nn_init_linear(p + m->at.w2, p + m->at.b2, h1, h2, &st);
    as_nn_init_linear(p + m->at.w3, p + m->at.b3, h2, h3, &st);
    as_nn_init_linear(p + m->at.w4, p + m->at.b4, h3, 1, &st);
    m->info.seed = seed;
    return m;
}

void as_costmodel_free(as_costmodel *m)
{
    if (!m) return;
    free(m->info.losses);
    free(m->params);
    free(m);
}

as_costmodel_info *as_costmodel_meta(as_costmodel *m) { return &m->info; }
const as_costmodel_info *as_costmodel_cmeta(const as_costmodel *m) { return &m->info; }
float *as_costmodel_params(as_costmodel *m, int64_t *n) { if (n) *n = m->nparams; return m->params; }
const char *as_costmodel_device(const as_costmodel *m) { return m->info.cost_device; }

/* the raw 21-vector, with dim, rows and pooling through log1p when the model asks for it */
static void raw_vector(int log_feats, const as_features *f, double v[F])
{
    as_features_vector(f, v);
    if (log_feats)
        for (int k = 0; k < 3; k++) v[k] = log1p(v[k]);
}

void as_costmodel_table_vector(const as_costmodel *m, const as_features *f, double v[F])
{
    raw_vector(m->info.log_feats, f, v);
    for (int k = 0; k < 3; k++) v[k] = (v[k] - m->info.mean[k]) / m->info.std[k];
    for (int k = 0; k < F && m->info.drop; k++)
        if (m->info.drop >> k & 1) v[k] = 0;
}

int as_costmodel_drop_parse(const char *list, uint32_t *mask, char *err, size_t errlen)
{
    static const struct { const char *name; int lo, hi; } groups[] = {
        { "dim", 0, 0 }, { "rows", 1, 1 }, { "pooling", 2, 2 }, { "size", 3, 3 }, { "distribution", 4, F - 1 },
    };
    *mask = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        int hit = 0;
        for (size_t g = 0; g < sizeof groups / sizeof groups[0] && !hit; g++)
            if (strlen(groups[g].name) == n && !strncmp(p, groups[g].name, n)) {
                for (int k = groups[g].lo; k <= groups[g].hi; k++) *mask |= 1u << k;
                hit = 1;
            }
        for (int k = 0; k < F && !hit; k++)
            if (strlen(feature_names[k]) == n && !strncmp(p, feature_names[k], n)) *mask |= 1u << k, hit = 1;
        if (!hit) {
            snprintf(err, errlen, "'%.*s' is not a feature group (dim, rows, pooling, size, distribution) or a "
                     "feature's name (dim, rows, pooling, size, bin0..bin16)", (int)(n < 64 ? n : 64), p);
            return -1;
        }
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

/* the normalised 21-vector of a table */
static void featvec(const as_costmodel *m, const as_features *f, float *out)
{
    double v[F];
    as_costmodel_table_vector(m, f, v);
    for (int k = 0; k < F; k++) out[k] = (float)v[k];
}

/* ---- incremental prediction (costmodel.h) -------------------------------------------------- */

int as_costmodel_rep(const as_costmodel *m) { return m->info.h2; }

/* the representation of the normalised vector x: the shared MLP, out[h2] */
static void embed_vec(const as_costmodel *m, const float x[F], float *out)
{
    const int h1 = m->info.h1, h2 = m->info.h2;
    const float *w1 = m->params + m->at.w1, *b1 = m->params + m->at.b1;
    const float *w2 = m->params + m->at.w2, *b2 = m->params + m->at.b2;
    float *a1 = as_malloc((size_t)h1 * sizeof *a1);
    for (int o = 0; o < h1; o++) {
        float s = b1[o];
        const float *w = w1 + (size_t)o * F;
        for (int i = 0; i < F; i++) s += w[i] * x[i];
        a1[o] = s > 0 ? s : 0;
    }
    for (int o = 0; o < h2; o++) {
        float s = b2[o];
        const float *w = w2 + (size_t)o * h1;
        for (int i = 0; i < h1; i++) s += w[i] * a1[i];
        out[o] = s > 0 ? s : 0;
    }
    free(a1);
}

void as_costmodel_embed(const as_costmodel *m, const as_features *f, float *out)
{
    float x[F];
    featvec(m, f, x);
    embed_vec(m, x, out);
}

struct as_embed_memo {
    const as_costmodel *m;
    pthread_mutex_t lock;           /* the split search's threads share it */
    int64_t mask;                   /* entries - 1 (a power of two) */
    int R;
    uint8_t *used;                  /* [entries] */
    float *key, *rep;               /* [entries, F], [entries, R] */
    int64_t hits, misses;
};

as_embed_memo *as_embed_memo_new(const as_costmodel *m, int bits)
{
    if (bits < 1) bits = 1;
    if (bits > 24) bits = 24;
    as_embed_memo *c = as_calloc(1, sizeof *c);
    const size_t E = (size_t)1 << bits;
    c->m = m;
    pthread_mutex_init(&c->lock, NULL);
    c->mask = (int64_t)E - 1;
    c->R = m->info.h2;
    c->used = as_calloc(E, 1);
    c->key = as_malloc(E * F * sizeof *c->key);
    c->rep = as_malloc(E * (size_t)c->R * sizeof *c->rep);
    return c;
}

void as_embed_memo_free(as_embed_memo *c)
{
    if (!c) return;
    pthread_mutex_destroy(&c->lock);
    free(c->used);
    free(c->key);
    free(c->rep);
    free(c);
}

const as_costmodel *as_embed_memo_model(const as_embed_memo *c) { return c->m; }

void as_embed_memo_stats(const as_embed_memo *c, int64_t *hits, int64_t *misses)
{
    *hits = c->hits;
    *misses = c->misses;
}

void as_embed_memo_get(as_embed_memo *c, const as_features *f, float *out)
{
    float x[F];
    featvec(c->m, f, x);
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < sizeof x; i++) h = (h ^ b[i]) * 1099511628211ull;
    const int64_t e = (int64_t)(h ^ (h >> 29)) & c->mask;
    float *key = c->key + (size_t)e * F, *rep = c->rep + (size_t)e * c->R;
    pthread_mutex_lock(&c->lock);
    const int hit = c->used[e] && !memcmp(key, x, sizeof x);
    if (hit) {
        c->hits++;
        memcpy(out, rep, (size_t)c->R * sizeof *out);
    }
    pthread_mutex_unlock(&c->lock);
    if (hit) return;
    embed_vec(c->m, x, out);   /* outside the lock: the slow part */
    pthread_mutex_lock(&c->lock);
    c->misses++;
    memcpy(key, x, sizeof x);
    memcpy(rep, out, (size_t)c->R * sizeof *out);
    c->used[e] = 1;
    pthread_mutex_unlock(&c->lock);
}

void as_costmodel_head_pre(const as_costmodel *m, const float *sum, float *out)
{
    const int h2 = m->info.h2, h3 = m->info.h3;
    const float *w3 = m->params + m->at.w3;
    for (int o = 0; o < h3; o++) {
        float s = 0;
        const float *w = w3 + (size_t)o * h2;
        for (int i = 0; i < h2; i++) s += w[i] * sum[i];
        out[o] = s;
    }
}

double as_costmodel_head_post(const as_costmodel *m, const float *z)
{
    const int h3 = m->info.h3;
    const float *b3 = m->params + m->at.b3, *w4 = m->params + m->at.w4, *b4 = m->params + m->at.b4;
    float y = b4[0];
    for (int o = 0; o < h3; o++) {
        float s = z[o] + b3[o];
        if (s > 0) y += w4[o] * s;
    }
    return as_costmodel_out(m, (double)y);
}

double as_costmodel_head(const as_costmodel *m, const float *sum)
{
    const int h2 = m->info.h2, h3 = m->info.h3;
    const float *w3 = m->params + m->at.w3, *b3 = m->params + m->at.b3;
    const float *w4 = m->params + m->at.w4, *b4 = m->params + m->at.b4;
    float y = b4[0];
    for (int o = 0; o < h3; o++) {
        float s = b3[o];
        const float *w = w3 + (size_t)o * h2;
        for (int i = 0; i < h2; i++) s += w[i] * sum[i];
        if (s > 0) y += w4[o] * s;
    }
    return as_costmodel_out(m, (double)y);
}

void as_costmodel_fit_stats(as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, double y_scale)
{
    char *seen = as_calloc((size_t)d->ntab + 1, 1);
    double s[3] = { 0 }, s2[3] = { 0 }, cs = 0, cl = 0;
    int64_t ncl = 0;
    int64_t nt = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = shards ? shards[i] : i;
        if (d->cost) cs += d->cost[k];
        if (d->cost && d->cost[k] > 0) { cl += log(d->cost[k]); ncl++; }
        for (int64_t j = d->off[k]; j < d->off[k + 1]; j++) {
            int64_t t = d->idx[j];
            if (seen[t]) continue;
            seen[t] = 1;
            double v[F];
            raw_vector(m->info.log_feats, &d->tab[t], v);
            for (int c = 0; c < 3; c++) { s[c] += v[c]; s2[c] += v[c] * v[c]; }
            nt++;
        }
    }
    free(seen);
    for (int c = 0; c < 3; c++) {
        double mu = nt ? s[c] / nt : 0, var = nt ? s2[c] / nt - mu * mu : 1;
        double sd = var > 0 ? sqrt(var) : 0;
        m->info.mean[c] = mu;
        m->info.std[c] = sd > 1e-12 * (fabs(mu) + 1) ? sd : 1;   /* a constant feature: just centre it */
    }
    m->info.train_tables = nt;
    if (y_scale > 0) m->info.y_scale = y_scale;
    else if (m->info.output == AS_CM_OUT_LOG) m->info.y_scale = ncl > 0 ? exp(cl / ncl) : 1;   /* targets centred on 0 */
    else m->info.y_scale = (n > 0 && cs > 0) ? cs / n : 1;
}

/* ---- forward / backward on a batch, through an ops table ---------------------------------- */

typedef struct {
    const as_nn_ops *o;
    int64_t maxR, maxS;
    float *X, *a1, *a2, *p, *a3, *y, *t;         /* activations (device) */
    float *da1, *dz1, *da2, *dz2, *dp, *da3, *dz3, *dy, *dz4;
    int32_t *off;
} cm_buf;

static void buf_alloc(cm_buf *b, const as_nn_ops *o, const as_costmodel *m, int64_t maxR, int64_t maxS, int train)
{
    memset(b, 0, sizeof *b);
    b->o = o;
    b->maxR = maxR;
    b->maxS = maxS;
    size_t fs = sizeof(float);
    int h1 = m->info.h1, h2 = m->info.h2, h3 = m->info.h3;
    b->X = o->alloc((size_t)maxR * F * fs);
    b->a1 = o->alloc((size_t)maxR * h1 * fs);
    b->a2 = o->alloc((size_t)maxR * h2 * fs);
    b->p = o->alloc((size_t)maxS * h2 * fs);
    b->a3 = o->alloc((size_t)maxS * h3 * fs);
    b->y = o->alloc((size_t)maxS * fs);
    b->off = o->alloc((size_t)(maxS + 1) * sizeof(int32_t));
    if (train) {
        b->t = o->alloc((size_t)maxS * fs);
        b->da1 = o->alloc((size_t)maxR * h1 * fs);
        b->dz1 = o->alloc((size_t)maxR * h1 * fs);
        b->da2 = o->alloc((size_t)maxR * h2 * fs);
        b->dz2 = o->alloc((size_t)maxR * h2 * fs);
        b->dp = o->alloc((size_t)maxS * h2 * fs);
        b->da3 = o->alloc((size_t)maxS * h3 * fs);
        b->dz3 = o->alloc((size_t)maxS * h3 * fs);
        b->dy = o->alloc((size_t)maxS * fs);
        b->dz4 = o->alloc((size_t)maxS * fs);
    }
}

static void buf_free(cm_buf *b)
{
    float *all[] = { b->X, b->a1, b->a2, b->p, b->a3, b->y, b->t, b->da1, b->dz1, b->da2, b->dz2, b->dp, b->da3, b->dz3, b->dy, b->dz4 };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) if (all[i]) b->o->free(all[i]);
    if (b->off) b->o->free(b->off);
}

/* P: parameters on the ops' device. X, off already in b. b->y gets z, or with train set
 * what the loss compares: softplus(z) for the softplus form, z for the others. */
static void forward(const as_costmodel *m, const float *P, cm_buf *b, int R, int S, int train)
{
    const as_nn_ops *o = b->o;
    int h1 = m->info.h1, h2 = m->info.h2, h3 = m->info.h3;
    o->linear_fwd(b->a1, b->X, P + m->at.w1, P + m->at.b1, R, F, h1);
    o->relu_fwd(b->a1, b->a1, (int64_t)R * h1);
    o->linear_fwd(b->a2, b->a1, P + m->at.w2, P + m->at.b2, R, h1, h2);
    o->relu_fwd(b->a2, b->a2, (int64_t)R * h2);
    o->sumpool_fwd(b->p, b->a2, b->off, S, h2);
    o->linear_fwd(b->a3, b->p, P + m->at.w3, P + m->at.b3, S, h2, h3);
    o->relu_fwd(b->a3, b->a3, (int64_t)S * h3);
    o->linear_fwd(b->y, b->a3, P + m->at.w4, P + m->at.b4, S, h3, 1);
    if (train && m->info.output == AS_CM_OUT_SOFTPLUS) o->softplus_fwd(b->y, b->y, S, (float)AS_COSTMODEL_SOFTPLUS_BETA);
}

/* gradients of the MSE of y against b->t (after forward with train set), accumulated into G
 * (zeroed by the caller) */
static void backward(const as_costmodel *m, const float *P, float *G, cm_buf *b, int R, int S)
{
    const as_nn_ops *o = b->o;
    int h1 = m->info.h1, h2 = m->info.h2, h3 = m->info.h3;
    size_t fs = sizeof(float);
    o->zero(b->dy, (size_t)S * fs);
    o->zero(b->da3, (size_t)S * h3 * fs);
    o->zero(b->dz3, (size_t)S * h3 * fs);
    o->zero(b->dp, (size_t)S * h2 * fs);
    o->zero(b->da2, (size_t)R * h2 * fs);
    o->zero(b->dz2, (size_t)R * h2 * fs);
    o->zero(b->da1, (size_t)R * h1 * fs);
    o->zero(b->dz1, (size_t)R * h1 * fs);
    o->mse_bwd(b->dy, b->y, b->t, S);
    const float *dz = b->dy;
    if (m->info.output == AS_CM_OUT_SOFTPLUS) {
        o->zero(b->dz4, (size_t)S * fs);
        o->softplus_bwd(b->dz4, b->dy, b->y, S, (float)AS_COSTMODEL_SOFTPLUS_BETA);
        dz = b->dz4;
    }
    o->linear_bwd(b->da3, G + m->at.w4, G + m->at.b4, dz, b->a3, P + m->at.w4, S, h3, 1);
    o->relu_bwd(b->dz3, b->da3, b->a3, (int64_t)S * h3);
    o->linear_bwd(b->dp, G + m->at.w3, G + m->at.b3, b->dz3, b->p, P + m->at.w3, S, h2, h3);
    o->sumpool_bwd(b->da2, b->dp, b->off, S, h2);
    o->relu_bwd(b->dz2, b->da2, b->a2, (int64_t)R * h2);
    o->linear_bwd(b->da1, G + m->at.w2, G + m->at.b2, b->dz2, b->a1, P + m->at.w2, R, h1, h2);
    o->relu_bwd(b->dz1, b->da1, b->a1, (int64_t)R * h1);
    o->linear_bwd(NULL, G + m->at.w1, G + m->at.b1, b->dz1, b->X, P + m->at.w1, R, F, h1);
}

/* what the network's training output is compared with for a measured cost */
static double target(const as_costmodel *m, double cost)
{
    double r = cost / m->info.y_scale;
    if (m->info.output == AS_CM_OUT_LOG) return log(r > 1e-30 ? r : 1e-30);
    return r;
}

/* the training loss in the units the model reports: ms^2, or squared logs */
static double loss_units(const as_costmodel *m)
{
    return m->info.output == AS_CM_OUT_LOG ? 1.0 : m->info.y_scale * m->info.y_scale;
}

/* host staging of a batch: X rows, offsets, targets; returns R */
static int stage(const as_costmodel *m, const as_costset *d, const int64_t *sh, int S, float *hX, int32_t *hoff,
                 float *ht)
{
    int R = 0;
    hoff[0] = 0;
    for (int s = 0; s < S; s++) {
        int64_t k = sh ? sh[s] : s;
        for (int64_t j = d->off[k]; j < d->off[k + 1]; j++) featvec(m, &d->tab[d->idx[j]], hX + (size_t)R++ * F);
        hoff[s + 1] = R;
        if (ht) ht[s] = (float)target(m, d->cost[k]);
    }
    return R;
}

/* ---- prediction (CPU) ---------------------------------------------------------------------- */

double as_costmodel_predict(const as_costmodel *m, const as_features *const *f, int n)
{
    if (n <= 0) return 0;
    as_features *tab = as_malloc((size_t)n * sizeof *tab);
    int64_t off[2] = { 0, n }, *idx = as_malloc((size_t)n * sizeof *idx);
    for (int i = 0; i < n; i++) { tab[i] = *f[i]; idx[i] = i; }
    as_costset d = { tab, n, off, idx, NULL, 1 };
    double y;
    as_costmodel_predict_batch(m, &d, NULL, 1, &y);
    free(tab);
    free(idx);
    return y;
}

void as_costmodel_predict_batch(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n,
                                double *out)
{
    as_costmodel_z_batch(m, d, shards, n, out);
    for (int64_t s = 0; s < n; s++) {
        int64_t k = shards ? shards[s] : s;
        out[s] = d->off[k + 1] > d->off[k] ? as_costmodel_out(m, out[s]) : 0.0;
    }
}

void as_costmodel_z_batch(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, double *out)
{
    const int64_t CH = 4096;   /* shards per chunk */
    int64_t maxS = n < CH ? n : CH, maxR = 0;
    if (n <= 0) return;
    for (int64_t c = 0; c < n; c += CH) {
        int64_t r = 0;
        for (int64_t s = c; s < n && s < c + CH; s++) {
            int64_t k = shards ? shards[s] : s;
            r += d->off[k + 1] - d->off[k];
        }
        if (r > maxR) maxR = r;
    }
    cm_buf b;
    buf_alloc(&b, as_nn_cpu(), m, maxR > 0 ? maxR : 1, maxS, 0);
    int64_t *sh = as_malloc((size_t)maxS * sizeof *sh);
    for (int64_t c = 0; c < n; c += CH) {
        int S = (int)(n - c < CH ? n - c : CH);
        for (int s = 0; s < S; s++) sh[s] = shards ? shards[c + s] : c + s;
        int R = stage(m, d, sh, S, b.X, b.off, NULL);
        forward(m, m->params, &b, R, S, 0);
        for (int s = 0; s < S; s++) {
            int64_t k = sh[s];
            out[c + s] = d->off[k + 1] > d->off[k] ? (double)b.y[s] : 0.0;
        }
    }
    free(sh);
    buf_free(&b);
}

double as_costmodel_loss_grad(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, float *grad)
{
    if (n <= 0) return 0;
    int64_t R = 0;
    for (int64_t s = 0; s < n; s++) {
        int64_t k = shards ? shards[s] : s;
        R += d->off[k + 1] - d->off[k];
    }
    cm_buf b;
    buf_alloc(&b, as_nn_cpu(), m, R > 0 ? R : 1, n, 1);
    int64_t *sh = as_malloc((size_t)n * sizeof *sh);
    for (int64_t s = 0; s < n; s++) sh[s] = shards ? shards[s] : s;
    stage(m, d, sh, (int)n, b.X, b.off, b.t);
    forward(m, m->params, &b, (int)R, (int)n, 1);
    double loss = as_nn_mse_fwd(b.y, b.t, (int)n);
    if (grad) backward(m, m->params, grad, &b, (int)R, (int)n);
    free(sh);
    buf_free(&b);
    return loss;
}

/* ---- training ------------------------------------------------------------------------------- */

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* the most table rows a batch of B of the n shards can hold: the B largest shards' */
static int64_t max_batch_rows(const as_costset *d, const int64_t *shards, int64_t n, int B)
{
    int64_t *sz = as_malloc((size_t)n * sizeof *sz), maxR = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = shards ? shards[i] : i;
        sz[i] = d->off[k + 1] - d->off[k];
    }
    qsort(sz, (size_t)n, sizeof *sz, cmp_desc);
    for (int i = 0; i < B; i++) maxR += sz[i];
    free(sz);
    return maxR;
}

/* as_costmodel_train's buffers: the device's parameters, gradients and Adam moments (pb
   bytes each), a batch's activations, its staging on the host, the shards' order */
typedef struct {
    const as_nn_ops *o;
    size_t pb;
    float *P, *G, *M1, *M2;
    cm_buf b;
    float *hX, *ht, *hy;
    int32_t *hoff;
    int64_t *perm, *sh;
} cm_train;

static void train_begin(cm_train *t, const as_nn_ops *o, const as_costmodel *m, int64_t maxR, int B, const int64_t *shards,
                        int64_t n)
{
    t->o = o;
    t->pb = (size_t)m->nparams * sizeof(float);
    t->P = o->alloc(t->pb); t->G = o->alloc(t->pb); t->M1 = o->alloc(t->pb); t->M2 = o->alloc(t->pb);
    o->upload(t->P, m->params, t->pb);
    buf_alloc(&t->b, o, m, maxR, B, 1);
    t->hX = as_malloc((size_t)maxR * F * sizeof *t->hX);
    t->ht = as_malloc((size_t)B * sizeof *t->ht);
    t->hy = as_malloc((size_t)B * sizeof *t->hy);
    t->hoff = as_malloc((size_t)(B + 1) * sizeof *t->hoff);
    t->perm = as_malloc((size_t)n * sizeof *t->perm);
    t->sh = as_malloc((size_t)B * sizeof *t->sh);
    for (int64_t i = 0; i < n; i++) t->perm[i] = shards ? shards[i] : i;
}

static void train_end(cm_train *t)
{
    buf_free(&t->b);
    t->o->free(t->P); t->o->free(t->G); t->o->free(t->M1); t->o->free(t->M2);
    free(t->hX); free(t->ht); free(t->hy); free(t->hoff); free(t->perm); free(t->sh);
}

/* a new epoch's order of the shards (Fisher-Yates) */
static void shuffle(int64_t *perm, int64_t n, as_rng *r)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)as_rng_below(r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* training step `step` (from 0) on the S shards t->sh: staged and uploaded, forward,
   backward, clipped, an Adam step; *loss: the batch's loss in cost units (ysc2: their
   scale). 0, or -1 when the device failed (nothing was computed) */
static int train_step(cm_train *t, const as_costmodel *m, const as_costset *d, int S, const as_costfit_opts *opt,
                      const as_nn_adam_cfg *ac, int64_t step, double ysc2, double *loss)
{
    const as_nn_ops *o = t->o;
    int R = stage(m, d, t->sh, S, t->hX, t->hoff, t->ht);
    o->upload(t->b.X, t->hX, (size_t)R * F * sizeof(float));
    o->upload(t->b.off, t->hoff, (size_t)(S + 1) * sizeof(int32_t));
    o->upload(t->b.t, t->ht, (size_t)S * sizeof(float));
    o->zero(t->G, t->pb);
    forward(m, t->P, &t->b, R, S, 1);
    backward(m, t->P, t->G, &t->b, R, S);
    if (opt->clip > 0) as_nn_clip_ops(o, t->G, m->nparams, opt->clip);
    o->adam(t->P, t->G, t->M1, t->M2, m->nparams, ac, step + 1);
    o->download(t->hy, t->b.y, (size_t)S * sizeof(float));
    if (o->error()) return -1;
    *loss = as_nn_mse_fwd(t->hy, t->ht, S) * ysc2;
    return 0;
}

/* the trained parameters back when the last epoch's loss is finite, and the training's
   figures into the model's info; 1 when the model was trained (0: err says why, or the
   training loop did) */
static int train_finish(as_costmodel *m, cm_train *t, const as_costfit_opts *opt, int64_t steps, int64_t epochs_done,
                        char *err, size_t errlen)
{
    const as_nn_ops *o = t->o;
    int ok = m->info.nlosses > 0 && isfinite(m->info.losses[m->info.nlosses - 1]);
    o->sync();
    if (ok) o->download(m->params, t->P, t->pb);
    if (o->error()) {   /* an environment failure (exit 3), not a data one */
        snprintf(err, errlen, "%s", o->error());
        ok = 0;
    }
    m->info.steps += steps;
    m->info.epochs += epochs_done;
    m->info.batch = opt->batch;
    m->info.lr = opt->lr;
    m->info.clip = opt->clip;
    m->info.seed = opt->seed;
    snprintf(m->info.train_device, sizeof m->info.train_device, "%s", o->name);
    return ok;
}

int as_costmodel_train(as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n,
                       const as_costfit_opts *opt, char *err, size_t errlen)
{
    if (n <= 0) { snprintf(err, errlen, "no training shards"); return -1; }
    if (!d->cost) { snprintf(err, errlen, "training needs costs"); return -1; }
    if (opt->batch < 1) { snprintf(err, errlen, "batch must be at least 1"); return -1; }
    const as_nn_ops *o = opt->ops ? opt->ops : as_nn_cpu();
    int B = opt->batch < n ? opt->batch : (int)n;
    int64_t per_epoch = (n + B - 1) / B;
    int64_t steps = opt->steps > 0 ? opt->steps : opt->epochs * per_epoch;
    int64_t maxR = max_batch_rows(d, shards, n, B);
    if (maxR > INT32_MAX / 256) { snprintf(err, errlen, "batch of %" PRId64 " table rows is too large", maxR); return -1; }
    if (maxR == 0) maxR = 1;

    cm_train t;
    train_begin(&t, o, m, maxR, B, shards, n);
    as_rng r;
    as_rng_seed(&r, opt->seed, 0x73687566666c65ULL ^ (uint64_t)m->info.steps);   /* "shuffle" */
    as_nn_adam_cfg ac = AS_NN_ADAM_DEFAULT((float)opt->lr);
    int64_t epochs_done = (steps + per_epoch - 1) / per_epoch;
    m->info.losses = as_realloc(m->info.losses, (size_t)(m->info.nlosses + epochs_done + 1) * sizeof(double));
    double ysc2 = loss_units(m), ep_loss = 0;
    int64_t ep_n = 0, pos = n, bi = 0, done = 0;
    /* early stopping: the validation loss every `every` steps, the best parameters kept */
    const int64_t every = opt->eval_every > 0 ? opt->eval_every : per_epoch;
    as_costfit_stop st = { 0, 0, 0, INFINITY, NAN, 0 };
    float *best = opt->nval > 0 ? as_malloc(t.pb) : NULL;
    for (int64_t step = 0; step < steps; step++) {
        if (pos >= n) {   /* a new epoch */
            shuffle(t.perm, n, &r);
            pos = 0;
            bi = 0;
        }
        /* the epoch's per_epoch batches of equal size, the first n % per_epoch one larger */
        int S = (int)(n / per_epoch + (bi < n % per_epoch));
        bi++;
        memcpy(t.sh, t.perm + pos, (size_t)S * sizeof *t.sh);
        pos += S;
        double loss;
        if (train_step(&t, m, d, S, opt, &ac, step, ysc2, &loss)) break;   /* the device failed */
        done = step + 1;
        ep_loss += loss * S;
        ep_n += S;
        int stop = 0;
        if (best && isfinite(loss) && (done % every == 0 || done == steps)) {
            o->download(m->params, t.P, t.pb);
            if (o->error()) break;
            const double v = as_costmodel_loss_grad(m, d, opt->val, opt->nval, NULL);
            if (st.evals++ == 0) st.first_loss = v;
            if (v < st.best_loss) {
                st.best_loss = v;
                st.best_step = done;
                memcpy(best, m->params, t.pb);
            }
            const int64_t wait = opt->patience > st.best_step / 2 ? opt->patience : st.best_step / 2;
            stop = done >= opt->min_steps && done - st.best_step >= wait;
        }
        if (pos >= n || done == steps || stop) {
            m->info.losses[m->info.nlosses++] = ep_loss / (double)ep_n;
            ep_loss = 0;
            ep_n = 0;
        }
        if (opt->progress) opt->progress(opt->ctx, done, steps, loss);
        if (!isfinite(loss)) {
            snprintf(err, errlen, "training diverged at step %" PRId64 " (loss %g); try a smaller --lr or --clip", step + 1, loss);
            break;
        }
        if (stop) {
            st.early = 1;
            break;
        }
    }
    int ok = train_finish(m, &t, opt, done, (done + per_epoch - 1) / per_epoch, err, errlen);
    if (ok && best && st.best_step > 0) memcpy(m->params, best, t.pb);
    st.ran = done;
    if (opt->stop) *opt->stop = st;
    free(best);
    train_end(&t);
    return ok ? 0 : -1;
}

/* ---- the `model` record ------------------------------------------------------------------------ */

static void pack_num(msgpack_packer *pk, double v)
{
    if (isfinite(v)) msgpack_pack_double(pk, v);
    else msgpack_pack_nil(pk);
}

/* {"n", "mae", "mse", "mape", "r2"} (+ "coverage" when coverage is not NULL); nil when undefined */
static void pack_metrics(msgpack_packer *pk, const char *k, const as_costmodel_metrics *m, const double *coverage)
{
    as_pack_str(pk, k);
    msgpack_pack_map(pk, coverage ? 6 : 5);
    as_pack_kv_i64(pk, "n", m->n);
    as_pack_str(pk, "mae"); pack_num(pk, m->mae);
    as_pack_str(pk, "mse"); pack_num(pk, m->mse);
    as_pack_str(pk, "mape"); pack_num(pk, m->mape);
    as_pack_str(pk, "r2"); pack_num(pk, m->r2);
    if (coverage) { as_pack_str(pk, "coverage"); pack_num(pk, *coverage); }
}

static void pack_heldout(msgpack_packer *pk, const as_costmodel_heldout *h)
{
    as_pack_str(pk, "heldout");
    if (!h->present) { msgpack_pack_nil(pk); return; }
    msgpack_pack_map(pk, 5);
    as_pack_kv_str(pk, "split", h->split);
    as_pack_kv_i64(pk, "test_shards", h->test_shards);
    pack_metrics(pk, "model", &h->model, NULL);
    pack_metrics(pk, "linear", &h->linear, NULL);
    pack_metrics(pk, "sum_single", &h->sum_single, &h->coverage);
}

/* a number or nil (NAN) under key; 0 ok, -1 missing or another type */
static int num_or_nil(const msgpack_object *map, const char *key, double *out)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (o && o->type == MSGPACK_OBJECT_NIL) { *out = NAN; return 0; }
    return as_obj_f64(map, key, out);
}

static int read_metrics(const msgpack_object *h, const char *key, as_costmodel_metrics *m, double *coverage)
{
    const msgpack_object *o = as_obj_get(h, key);
    if (!o || o->type != MSGPACK_OBJECT_MAP || as_obj_i64(o, "n", &m->n) || m->n < 0 || num_or_nil(o, "mae", &m->mae) ||
        num_or_nil(o, "mse", &m->mse) || num_or_nil(o, "mape", &m->mape) || num_or_nil(o, "r2", &m->r2))
        return -1;
    if (coverage && num_or_nil(o, "coverage", coverage)) return -1;
    return 0;
}

/* the `heldout` field: absent or nil = not present; 0 ok, -1 malformed */
static int read_heldout(const msgpack_object *rec, as_costmodel_heldout *h)
{
    memset(h, 0, sizeof *h);
    const msgpack_object *o = as_obj_get(rec, "heldout");
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_MAP || as_obj_str(o, "split", h->split, sizeof h->split) ||
        as_obj_i64(o, "test_shards", &h->test_shards) || h->test_shards < 0 || read_metrics(o, "model", &h->model, NULL) ||
        read_metrics(o, "linear", &h->linear, NULL) || read_metrics(o, "sum_single", &h->sum_single, &h->coverage))
        return -1;
    h->present = 1;
    return 0;
}

void as_pack_drop(msgpack_packer *pk, uint32_t drop)
{
    int n = 0;
    for (int k = 0; k < F; k++) n += drop >> k & 1;
    as_pack_str(pk, "dropped_features");
    msgpack_pack_array(pk, (size_t)n);
    for (int k = 0; k < F; k++)
        if (drop >> k & 1) as_pack_str(pk, feature_names[k]);
}

int as_read_drop(const msgpack_object *rec, const char *what, uint32_t *drop, char *err, size_t errlen)
{
    *drop = 0;
    const msgpack_object *o = as_obj_get(rec, "dropped_features");
    if (!o) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > F) {
        snprintf(err, errlen, "%s: 'dropped_features' is not a list of at most %d feature names", what, F);
        return -1;
    }
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        const msgpack_object *x = &o->via.array.ptr[i];
        int k = 0;
        if (x->type == MSGPACK_OBJECT_STR)
            for (; k < F; k++)
                if (strlen(feature_names[k]) == x->via.str.size && !memcmp(feature_names[k], x->via.str.ptr, x->via.str.size)) break;
        if (x->type != MSGPACK_OBJECT_STR || k == F) {
            snprintf(err, errlen, "%s: dropped_features[%u] is not a feature's name", what, i);
            return -1;
        }
        *drop |= 1u << k;
    }
    return 0;
}

void as_costmodel_write(const as_costmodel *m, as_writer *w)
{
    const as_costmodel_info *in = &m->info;
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 30 + (in->drop != 0));
    as_pack_kv_str(pk, "kind", "model");
    as_pack_kv_str(pk, "model", "costmodel");
    as_pack_kv_i64(pk, "format_version", AS_COSTMODEL_VERSION);
    as_pack_str(pk, "features");
    msgpack_pack_array(pk, F);
    for (int i = 0; i < F; i++) as_pack_str(pk, feature_names[i]);
    as_pack_str(pk, "zscored");
    msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++) as_pack_str(pk, feature_names[i]);
    as_pack_kv_str(pk, "transform", in->log_feats ? "log1p" : "none");
    as_pack_kv_f64_list(pk, "norm_mean", in->mean, 3);
    as_pack_kv_f64_list(pk, "norm_std", in->std, 3);
    if (in->drop) as_pack_drop(pk, in->drop);
    as_pack_kv_f64(pk, "y_scale", in->y_scale);
    as_pack_kv_str(pk, "output", as_costmodel_output_name(in->output));
    as_pack_str(pk, "layers");
    msgpack_pack_array(pk, 5);
    msgpack_pack_int(pk, F);
    msgpack_pack_int(pk, in->h1);
    msgpack_pack_int(pk, in->h2);
    msgpack_pack_int(pk, in->h3);
    msgpack_pack_int(pk, 1);
    as_pack_str(pk, "param_order");
    msgpack_pack_array(pk, 8);
    const char *names[8] = { "w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4" };
    for (int i = 0; i < 8; i++) as_pack_str(pk, names[i]);
    as_pack_kv_i64(pk, "nparams", m->nparams);
    int64_t shape[1] = { m->nparams };
    as_pack_kv_array(pk, "params", AS_DT_F32, m->params, 1, shape);
    as_pack_kv_str(pk, "cost_device", in->cost_device);
    as_pack_kv_str(pk, "cost_device_kind", in->cost_device_kind);
    as_pack_kv_str(pk, "train_device", in->train_device);
    as_pack_kv_i64(pk, "seed", (int64_t)in->seed);
    as_pack_kv_i64(pk, "steps", in->steps);
    as_pack_kv_i64(pk, "epochs", in->epochs);
    as_pack_kv_i64(pk, "batch", in->batch);
    as_pack_kv_f64(pk, "lr", in->lr);
    as_pack_kv_f64(pk, "clip", in->clip);
    int64_t ls[1] = { in->nlosses };
    as_pack_kv_array(pk, "losses", AS_DT_F64, in->losses ? (const void *)in->losses : (const void *)"", 1, ls);
    as_pack_kv_f64(pk, "final_loss", in->nlosses ? in->losses[in->nlosses - 1] : NAN);
    as_pack_kv_i64(pk, "train_shards", in->train_shards);
    as_pack_kv_i64(pk, "test_shards", in->test_shards);
    as_pack_kv_i64(pk, "train_tables", in->train_tables);
    as_pack_kv_str(pk, "split", in->split);
    pack_heldout(pk, &in->heldout);
    as_writer_end_record(w);
}


int as_net_header_check(const msgpack_object *rec, const char *kind, const char *name, int version, const char *what,
                        char *err, size_t errlen)
{
    char s[256];
    int64_t ver;
    if (!as_obj_get(rec, "kind") || !as_obj_streq(as_obj_get(rec, "kind"), kind) ||
        as_obj_str(rec, kind, s, sizeof s) || strcmp(s, name)) {
        snprintf(err, errlen, "not a %s record (kind \"%s\", %s \"%s\")", what, kind, kind, name);
        return -1;
    }
    if (as_obj_i64(rec, "format_version", &ver)) { snprintf(err, errlen, "%s record has no format_version", what); return -1; }
    if (ver != version) {
        snprintf(err, errlen, "%s format version %" PRId64 "; this build reads version %d", what, ver, version);
        return -1;
    }
    const msgpack_object *fo = as_obj_get(rec, "features");
    if (!fo || fo->type != MSGPACK_OBJECT_ARRAY) { snprintf(err, errlen, "%s record has no feature list", what); return -1; }
    int same = fo->via.array.size == F;
    for (int i = 0; same && i < F; i++) same = as_obj_streq(&fo->via.array.ptr[i], feature_names[i]);
    if (!same) {
        snprintf(err, errlen, "%s was trained on a different feature order (%u features); this build uses "
                 "[dim, rows, pooling, size, bin0..bin16]", what, fo->via.array.size);
        return -1;
    }
    return 0;
}

/* the record's layers: [21, H1, H2, H3, 1], each in 1..65536; 0 or -1 with err */
static int read_layers(const msgpack_object *rec, int64_t L[5], char *err, size_t errlen)
{
    const msgpack_object *lo = as_obj_get(rec, "layers");
    if (!lo || lo->type != MSGPACK_OBJECT_ARRAY || lo->via.array.size != 5) { snprintf(err, errlen, "cost model record: layers must be 5 sizes"); return -1; }
    for (int i = 0; i < 5; i++) {
        const msgpack_object *x = &lo->via.array.ptr[i];
        if (x->type != MSGPACK_OBJECT_POSITIVE_INTEGER || x->via.u64 < 1 || x->via.u64 > 65536) {
            snprintf(err, errlen, "cost model record: layer size %d is not in 1..65536", i);
            return -1;
        }
        L[i] = (int64_t)x->via.u64;
    }
    if (L[0] != F || L[4] != 1) { snprintf(err, errlen, "cost model record: layers must be [21, H1, H2, H3, 1]"); return -1; }
    return 0;
}

/* the features' normalisation statistics and transform, the costs' y-scale and the output
   form (absent: the first models' unconstrained output) into m; 0 or -1 with err */
static int read_scales(const msgpack_object *rec, as_costmodel *m, char *err, size_t errlen)
{
    if (as_obj_f64_list(rec, "norm_mean", m->info.mean, 3) || as_obj_f64_list(rec, "norm_std", m->info.std, 3) ||
        as_obj_f64(rec, "y_scale", &m->info.y_scale)) {
        snprintf(err, errlen, "cost model record: norm_mean[3], norm_std[3] and y_scale are required");
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (!(m->info.std[i] > 0) || !isfinite(m->info.mean[i])) { snprintf(err, errlen, "cost model record: bad normalisation statistics"); return -1; }
    char tr[32] = "none";
    const msgpack_object *tro = as_obj_get(rec, "transform");
    if (tro && as_obj_str(rec, "transform", tr, sizeof tr)) { snprintf(err, errlen, "cost model record: 'transform' is not a string"); return -1; }
    if (!strcmp(tr, "log1p")) m->info.log_feats = 1;
    else if (strcmp(tr, "none")) { snprintf(err, errlen, "cost model record: unknown feature transform '%s'", tr); return -1; }
    if (!(m->info.y_scale > 0) || !isfinite(m->info.y_scale)) { snprintf(err, errlen, "cost model record: bad y_scale"); return -1; }
    if (as_read_drop(rec, "cost model record", &m->info.drop, err, errlen)) return -1;
    char os[32] = "linear";
    if (as_obj_get(rec, "output") && as_obj_str(rec, "output", os, sizeof os)) {
        snprintf(err, errlen, "cost model record: 'output' is not a string");
        return -1;
    }
    if ((m->info.output = as_costmodel_output_parse(os)) < 0) {
        snprintf(err, errlen, "cost model record: unknown output form '%s' (linear, softplus, log)", os);
        return -1;
    }
    return 0;
}

/* the metadata, all optional: where the costs were measured and how the model was trained.
   Its names (devices, the split) reach reports and terminals: one that breaks the names' rule
   (as_name_bad) is refused; 0 or -1 with err */
static int read_meta(const msgpack_object *rec, as_costmodel *m, char *err, size_t errlen)
{
    static const char *const key[] = { "cost_device", "cost_device_kind", "train_device", "split" };
    char *const buf[] = { m->info.cost_device, m->info.cost_device_kind, m->info.train_device, m->info.split };
    const size_t len[] = { sizeof m->info.cost_device, sizeof m->info.cost_device_kind, sizeof m->info.train_device,
                           sizeof m->info.split };
    for (int k = 0; k < 4; k++) {
        char why[96];
        as_obj_str(rec, key[k], buf[k], len[k]);
        if (buf[k][0] && as_name_bad(buf[k], strlen(buf[k]), why, sizeof why)) {
            snprintf(err, errlen, "cost model record: '%s' %s", key[k], why);
            return -1;
        }
    }
    int64_t v;
    if (!as_obj_i64(rec, "seed", &v)) m->info.seed = (uint64_t)v;
    as_obj_i64(rec, "steps", &m->info.steps);
    as_obj_i64(rec, "epochs", &m->info.epochs);
    as_obj_i64(rec, "batch", &m->info.batch);
    as_obj_f64(rec, "lr", &m->info.lr);
    as_obj_f64(rec, "clip", &m->info.clip);
    as_obj_i64(rec, "train_shards", &m->info.train_shards);
    as_obj_i64(rec, "test_shards", &m->info.test_shards);
    as_obj_i64(rec, "train_tables", &m->info.train_tables);
    as_array a;
    char e2[256];
    if (as_obj_get(rec, "losses") && !as_obj_array(rec, "losses", &a, e2, sizeof e2) && a.ndim == 1 && a.n > 0 &&
        a.n < ((int64_t)1 << 28)) {
        m->info.losses = as_malloc((size_t)a.n * sizeof(double));
        as_array_get_f64(&a, 0, a.n, m->info.losses);
        m->info.nlosses = a.n;
    }
    return 0;
}

int as_costmodel_read(as_costmodel **out, const msgpack_object *rec, char *err, size_t errlen)
{
    *out = NULL;
    if (as_net_header_check(rec, "model", "costmodel", AS_COSTMODEL_VERSION, "cost model", err, errlen)) return -1;
    int64_t L[5];
    if (read_layers(rec, L, err, errlen)) return -1;
    /* the parameter count the layers need, checked against nparams and the params array the
       record actually carries before anything is allocated (layers alone may ask for 2^35) */
    as_costmodel shape = { .info = { .h1 = (int)L[1], .h2 = (int)L[2], .h3 = (int)L[3] } };
    int64_t need = layout(&shape), np;
    as_array a;
    char e2[256];
    if (as_obj_i64(rec, "nparams", &np) || np != need) {
        snprintf(err, errlen, "cost model record: nparams does not match layers [21, %d, %d, %d, 1] (%" PRId64 " parameters)",
                 shape.info.h1, shape.info.h2, shape.info.h3, need);
        return -1;
    }
    if (as_obj_array(rec, "params", &a, e2, sizeof e2)) { snprintf(err, errlen, "cost model record: %s", e2); return -1; }
    if (a.dtype != AS_DT_F32 || a.ndim != 1 || a.n != need) {
        snprintf(err, errlen, "cost model record: params must be float32 [%" PRId64 "]", need);
        return -1;
    }
    as_costmodel *m = alloc_model((int)L[1], (int)L[2], (int)L[3]);
    memcpy(m->params, a.data, (size_t)m->nparams * sizeof(float));   /* little-endian host */
    if (read_scales(rec, m, err, errlen)) goto fail;
    if (read_heldout(rec, &m->info.heldout)) {
        snprintf(err, errlen, "cost model record: 'heldout' is not nil or a map of split, test_shards and model, linear, "
                 "sum_single metrics");
        goto fail;
    }
    for (int64_t i = 0; i < m->nparams; i++)
        if (!isfinite(m->params[i])) { snprintf(err, errlen, "cost model record: parameter %" PRId64 " is not finite", i); goto fail; }
    if (read_meta(rec, m, err, errlen)) goto fail;
    *out = m;
    return 0;
fail:
    as_costmodel_free(m);
    return -1;
}

/* as_costmodel_load's record loop: the one `model` record */
typedef struct {
    as_costmodel *m;
    int n;
} load_ctx;

static int load_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    load_ctx *x = ctx;
    if (!as_rec_is(rec, "model")) return 0;
    if (++x->n > 1) {
        /* docs/FORMAT.md: a model stream holds one model; two would be ambiguous */
        snprintf(err, errlen, "%s: record %" PRIu64 ": a second `model` record (a model file holds exactly one)",
                 as_reader_name(r), rec->index);
        return -1;
    }
    char e2[512];
    if (as_costmodel_read(&x->m, &rec->obj, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
        return -1;
    }
    return 0;
}

int as_costmodel_load(as_costmodel **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    load_ctx x = { NULL, 0 };
    char *files[1] = { (char *)path };
    if (!path || !strcmp(path, "-")) {   /* a model is a file, never standard input */
        snprintf(err, errlen, "%s: %s", path ? path : "(null)", strerror(ENOENT));
        return -1;
    }
    if (as_read_records(files, 1, load_rec, &x, err, errlen)) {
        as_costmodel_free(x.m);
        return -1;
    }
    if (!x.m) {
        snprintf(err, errlen, "%s: no `model` record (not a cost model file)", path);
        return -1;
    }
    *out = x.m;
    return 0;
}
