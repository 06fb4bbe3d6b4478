/* ebopt.c - the op with weight types and optimizers: the CPU reference; see ebopt.h */
#include "ebopt.h"

#include "common.h"
#include "embbag.h"
#include "errbuf.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* every product and sum is rounded on its own (ebopt.h): no fused multiply-add, whatever
   the target */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static as_eb_dtype dt(const uint8_t *dtype, int32_t t) { return dtype ? (as_eb_dtype)dtype[t] : AS_EB_F16; }

/* the state regions: inside one buffer of st_off[T] floats, each of its table's size, in
   order (non-decreasing offsets) so none overlaps */
static int validate_state(const as_eb_shard *s, as_eb_optim o, const int64_t *st_off, char *err, size_t errlen)
{
    if (o == AS_EB_SGD) return 0;
    if (!st_off) { as_errbuf(err, errlen, "%s needs its state offsets", as_eb_optim_name(o)); return -1; }
    if (st_off[0] < 0) { as_errbuf(err, errlen, "state offset of table 0 is %lld, below 0", (long long)st_off[0]); return -1; }
    for (int32_t t = 0; t < s->T; t++) {
        const int64_t need = as_eb_opt_state(o, s->rows[t], s->dims[t]);
        if (st_off[t + 1] < st_off[t] || st_off[t + 1] - st_off[t] < need) {
            as_errbuf(err, errlen, "table %d: state [%lld, %lld) holds fewer than the %lld floats %s needs", (int)t,
                      (long long)st_off[t], (long long)st_off[t + 1], (long long)need, as_eb_optim_name(o));
            return -1;
        }
    }
    return 0;
}

int as_eb_validate_typed(const as_eb_shard *s, const uint8_t *dtype, as_eb_optim o, const int64_t *st_off, char *err,
                         size_t errlen)
{
    if (!s || s->T < 0 || !s->dims || !s->w_off) return as_eb_validate(s, err, errlen);
    if (o < 0 || o >= AS_EB_NOPTIM) { as_errbuf(err, errlen, "unknown optimizer %d", (int)o); return -1; }
    const int32_t T = s->T;
    /* the layout in units: a shadow shard whose fp32 tables are twice as wide */
    int32_t *dims = as_malloc((size_t)(T ? T : 1) * sizeof *dims), *d_off = as_malloc((size_t)(T + 1) * sizeof *d_off);
    d_off[0] = 0;
    int rc = 0;
    for (int32_t t = 0; t < T && !rc; t++) {
        const as_eb_dtype d = dt(dtype, t);
        if (d < 0 || d >= AS_EB_NDTYPE) {
            as_errbuf(err, errlen, "table %d: unknown weight type %d", (int)t, (int)d);
            rc = -1;
        } else if (d == AS_EB_F32 && (s->w_off[t] & 1)) {
            as_errbuf(err, errlen, "table %d: fp32 weights at unit %lld, not 4-byte aligned (an even unit)", (int)t,
                      (long long)s->w_off[t]);
            rc = -1;
        } else if (s->dims[t] > INT32_MAX / 2 || d_off[t] > INT32_MAX - 2 * s->dims[t]) {
            as_errbuf(err, errlen, "table %d: dim %d too large", (int)t, (int)s->dims[t]);
            rc = -1;
        } else {
            dims[t] = s->dims[t] * as_eb_dtype_units(d);
            d_off[t + 1] = d_off[t] + dims[t];
        }
    }
    if (!rc) {
        as_eb_shard u = *s;
        u.dims = dims;
        u.d_off = d_off;
        rc = as_eb_validate(&u, err, errlen);
    }
    free(dims);
    free(d_off);
    return rc ? rc : validate_state(s, o, st_off, err, errlen);
}

float as_eb_weight_get(const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int32_t t, int64_t e)
{
    const uint16_t *p = W + s->w_off[t];
    switch (dt(dtype, t)) {
    case AS_EB_F32: {
        float f;
        memcpy(&f, p + 2 * e, 4);
        return f;
    }
    case AS_EB_BF16: return as_bf16_to_float(p[e]);
    default: return as_half_to_float_soft(p[e]);
    }
}

void as_eb_weight_set(uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int32_t t, int64_t e, float v)
{
    uint16_t *p = W + s->w_off[t];
    switch (dt(dtype, t)) {
    case AS_EB_F32: memcpy(p + 2 * e, &v, 4); break;
    case AS_EB_BF16: p[e] = as_float_to_bf16(v); break;
    default: p[e] = as_float_to_half_soft(v);
    }
}

void as_eb_forward_typed_ref(float *out, const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype)
{
    const int64_t B = s->B, sumD = s->d_off[s->T];
    for (int32_t t = 0; t < s->T; t++) {
        const int64_t D = s->dims[t];
        for (int64_t b = 0; b < B; b++) {
            float *o = out + b * sumD + s->d_off[t];
            for (int64_t j = 0; j < D; j++) o[j] = 0.0f;
            const int64_t k = (int64_t)t * B + b;
            for (int64_t p = s->offsets[k]; p < s->offsets[k + 1]; p++)
                for (int64_t j = 0; j < D; j++) o[j] += as_eb_weight_get(W, s, dtype, t, (int64_t)s->indices[p] * D + j);
        }
    }
}

/* row r of table t's summed gradient G[D] in the canonical order (embbag.h): its lookups
   ascending, in chunks of AS_EB_CHUNK summed from 0.0f, the chunk sums added left to right */
static void row_grad(float *G, float *part, const float *grad, const as_eb_shard *s, int32_t t, int32_t r)
{
    const int64_t B = s->B, D = s->dims[t], sumD = s->d_off[s->T];
    const int64_t *off = s->offsets + (int64_t)t * B;
    int64_t m = 0, chunks = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = off[b]; i < off[b + 1]; i++) {
            if (s->indices[i] != r) continue;
            if (m == 0) for (int64_t j = 0; j < D; j++) part[j] = 0.0f;
            const float *g = grad + b * sumD + s->d_off[t];
            for (int64_t j = 0; j < D; j++) part[j] += g[j];
            if (++m == AS_EB_CHUNK) {
                for (int64_t j = 0; j < D; j++) G[j] = chunks ? G[j] + part[j] : part[j];
                chunks++;
                m = 0;
            }
        }
    if (m) for (int64_t j = 0; j < D; j++) G[j] = chunks ? G[j] + part[j] : part[j];
}

/* the update of row r of table t from its gradient G (ebopt.h's rules) */
static void update_row(uint16_t *W, float *S, const float *G, const as_eb_shard *s, const uint8_t *dtype,
                       const int64_t *st_off, const as_eb_opt *o, int32_t t, int32_t r)
{
    const int64_t D = s->dims[t], e0 = (int64_t)r * D;
    if (o->kind == AS_EB_ROWWISE_ADAGRAD) {
        const float q = as_eb_row_sumsq(G, D);
        float *sr = S + st_off[t] + r;
        *sr = *sr + q / (float)D;
        const float m = o->lr / (sqrtf(*sr) + o->eps);
        for (int64_t j = 0; j < D; j++)
            as_eb_weight_set(W, s, dtype, t, e0 + j, as_eb_weight_get(W, s, dtype, t, e0 + j) - m * G[j]);
    } else if (o->kind == AS_EB_ADAM) {
        float *m1 = S + st_off[t] + e0, *m2 = S + st_off[t] + s->rows[t] * D + e0;
        const float a1 = 1.0f - o->beta1, a2 = 1.0f - o->beta2;
        for (int64_t j = 0; j < D; j++) {
            m1[j] = o->beta1 * m1[j] + a1 * G[j];
            m2[j] = o->beta2 * m2[j] + a2 * (G[j] * G[j]);
            const float step = o->lr * ((m1[j] / o->c1) / (sqrtf(m2[j] / o->c2) + o->eps));
            as_eb_weight_set(W, s, dtype, t, e0 + j, as_eb_weight_get(W, s, dtype, t, e0 + j) - step);
        }
    } else {
        for (int64_t j = 0; j < D; j++)
            as_eb_weight_set(W, s, dtype, t, e0 + j, as_eb_weight_get(W, s, dtype, t, e0 + j) - o->lr * G[j]);
    }
}

void as_eb_backward_typed_ref(uint16_t *W, float *S, const float *grad, const as_eb_shard *s, const uint8_t *dtype,
                              const int64_t *st_off, const as_eb_opt *o)
{
    int64_t Dmax = 1;
    for (int32_t t = 0; t < s->T; t++) if (s->dims[t] > Dmax) Dmax = s->dims[t];
    float *G = as_malloc((size_t)Dmax * sizeof *G), *part = as_malloc((size_t)Dmax * sizeof *part);
    for (int32_t t = 0; t < s->T; t++) {
        const int64_t *off = s->offsets + (int64_t)t * s->B;
        /* each row once, at its first lookup */
        for (int64_t i = off[0]; i < off[s->B]; i++) {
            const int32_t r = s->indices[i];
            int seen = 0;
            for (int64_t q = off[0]; q < i && !seen; q++) seen = s->indices[q] == r;
            if (seen) continue;
            row_grad(G, part, grad, s, t, r);
            update_row(W, S, G, s, dtype, st_off, o, t, r);
        }
    }
    free(G);
    free(part);
}
