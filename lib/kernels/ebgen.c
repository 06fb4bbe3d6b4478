/* ebgen.c - the CPU half of ebgen.h: shard layout and concatenation, the hash fill of
 * weights and gradients (OpenMP), the check of one pool table.
 * Dimension letters: B batch, D dim, E rows, T tables. */
#include "ebgen.h"
#include "errbuf.h"
#include "half.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>


static int nthr(int nthreads) { return nthreads > 0 ? nthreads : omp_get_max_threads(); }

int64_t as_ebg_layout(const as_eb_table *const *tabs, int32_t T, int64_t *rows, int32_t *dims, int64_t *w_off,
                      int32_t *d_off)
{
    return as_ebg_layout_typed(tabs, T, NULL, rows, dims, w_off, d_off);
}

int64_t as_ebg_layout_typed(const as_eb_table *const *tabs, int32_t T, const uint8_t *dt, int64_t *rows, int32_t *dims,
                            int64_t *w_off, int32_t *d_off)
{
    int64_t wo = 0;
    int32_t dof = 0;
    for (int32_t t = 0; t < T; t++) {
        rows[t] = tabs[t]->rows;
        dims[t] = (int32_t)tabs[t]->dim;
        w_off[t] = wo;
        d_off[t] = dof;
        wo += tabs[t]->rows * tabs[t]->dim * (dt ? as_eb_dtype_units((as_eb_dtype)dt[t]) : 1);
        wo = (wo + AS_EBG_W_ALIGN - 1) / AS_EBG_W_ALIGN * AS_EBG_W_ALIGN;
        dof += dims[t];
    }
    w_off[T] = wo;
    d_off[T] = dof;
    return wo;
}

void as_ebg_gather(int64_t *offsets, int32_t *indices, const as_eb_table *const *tabs, int32_t T, int64_t B,
                   int nthreads)
{
    int64_t base = 0;
    for (int32_t t = 0; t < T; t++) {
        const int64_t *o = tabs[t]->offsets;
        int64_t *d = offsets + (int64_t)t * B;
        for (int64_t b = 0; b < B; b++) d[b] = base + o[b];
        base += tabs[t]->lookups;
    }
    offsets[(int64_t)T * B] = base;
    /* the indices: the bulk of the bytes, copied in parallel chunks */
    const int64_t CH = (int64_t)1 << 20;
#pragma omp parallel num_threads(nthr(nthreads))
    {
        int64_t dst = 0;
        for (int32_t t = 0; t < T; t++) {
            const int64_t n = tabs[t]->lookups, nch = (n + CH - 1) / CH;
#pragma omp for schedule(static) nowait
            for (int64_t c = 0; c < nch; c++) {
                const int64_t a = c * CH, len = n - a < CH ? n - a : CH;
                memcpy(indices + dst + a, tabs[t]->indices + a, (size_t)len * sizeof *indices);
            }
            dst += n;
        }
    }
}

/* a generated fp16 weight (as_ebg_half: always a normal number) widened to fp32's bits,
 * exactly: the exponent rebiased (15 -> 127), the mantissa moved up */
static inline uint32_t gen_half_f32_bits(uint16_t h)
{
    return ((uint32_t)(h & 0x8000u) << 16) | (((uint32_t)(h & 0x7fffu) + (112u << 10)) << 13);
}

/* weight h (a generated fp16) as bf16: its fp32 rounded to nearest even */
static inline uint16_t gen_half_bf16(uint16_t h)
{
    const uint32_t f = gen_half_f32_bits(h);
    float x;
    memcpy(&x, &f, 4);
    return as_float_to_bf16_soft(x);
}

/* elements a block of the fill: 64 hashes' 16-bit parts, then turned into weights of the
 * table's type in loops of a fixed length the compiler vectorizes */
#define FILL_BLK 256

/* x[0..FILL_BLK) -> weights of type dt at Wt (its region in 2-byte units) + element e */
static void put_block(uint16_t *Wt, as_eb_dtype dt, int64_t e, const uint16_t *x)
{
    if (dt == AS_EB_F16) {
        uint16_t *o = Wt + e;
        for (int i = 0; i < FILL_BLK; i++) o[i] = as_ebg_half(x[i]);
    } else if (dt == AS_EB_F32) {
        uint32_t *o = (uint32_t *)Wt + e;
        for (int i = 0; i < FILL_BLK; i++) o[i] = gen_half_f32_bits(as_ebg_half(x[i]));
    } else {
        uint16_t *o = Wt + e;
        for (int i = 0; i < FILL_BLK; i++) o[i] = gen_half_bf16(as_ebg_half(x[i]));
    }
}

/* the elements [e0, e1) of one table's weights in type dt (Wt: its region in 2-byte units),
 * e0 a multiple of 4: element e is 16 bits of hash e / 4 (as_ebg_weight) */
static void fill_w_range_typed(uint16_t *Wt, as_eb_dtype dt, uint64_t key, int64_t e0, int64_t e1)
{
    uint16_t x[FILL_BLK];
    int64_t e = e0;
    for (; e < e1; e += FILL_BLK) {
        const int64_t n = e1 - e < FILL_BLK ? e1 - e : FILL_BLK;
        for (int64_t i = 0; i < n; i += 4) {
            const uint64_t h = as_ebg_bits(key, (uint64_t)(e + i) >> 2);
            x[i] = (uint16_t)h;
            x[i + 1] = (uint16_t)(h >> 16);
            x[i + 2] = (uint16_t)(h >> 32);
            x[i + 3] = (uint16_t)(h >> 48);
        }
        if (n == FILL_BLK) {
            put_block(Wt, dt, e, x);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {   /* the last, short block */
            const uint16_t w = as_ebg_half(x[i]);
            if (dt == AS_EB_F16) Wt[e + i] = w;
            else if (dt == AS_EB_F32) ((uint32_t *)Wt)[e + i] = gen_half_f32_bits(w);
            else Wt[e + i] = gen_half_bf16(w);
        }
    }
}

void as_ebg_fill_weights_typed(uint16_t *W, const as_eb_shard *s, const uint8_t *dt, const int64_t *ids, uint64_t seed,
                               int nthreads)
{
    const int32_t T = s->T;
    const int64_t total = s->w_off[T];
#define UNITS(t) (dt ? as_eb_dtype_units((as_eb_dtype)dt[t]) : 1)
    int ordered = T == 0 || s->w_off[0] >= 0;
    for (int32_t t = 0; t < T && ordered; t++)
        if (s->w_off[t] + s->rows[t] * (int64_t)s->dims[t] * UNITS(t) > s->w_off[t + 1]) ordered = 0;
    if (!ordered) memset(W, 0, (size_t)total * sizeof *W);
    else {
        /* only the padding: before the first table (all of W when T = 0) and after each */
        memset(W, 0, (size_t)s->w_off[0] * sizeof *W);
        for (int32_t t = 0; t < T; t++) {
            const int64_t end = s->w_off[t] + s->rows[t] * (int64_t)s->dims[t] * UNITS(t);
            memset(W + end, 0, (size_t)(s->w_off[t + 1] - end) * sizeof *W);
        }
    }
#undef UNITS
    const int64_t CH = (int64_t)1 << 16;   /* elements per work item, a multiple of 4 */
#pragma omp parallel num_threads(nthr(nthreads))
    for (int32_t t = 0; t < T; t++) {
        const int64_t n = s->rows[t] * (int64_t)s->dims[t], nch = (n + CH - 1) / CH;
        const uint64_t key = as_ebg_key(seed, ids[t], AS_EBG_WEIGHTS);
        uint16_t *Wt = W + s->w_off[t];
        const as_eb_dtype d = dt ? (as_eb_dtype)dt[t] : AS_EB_F16;
#pragma omp for schedule(static) nowait
        for (int64_t c = 0; c < nch; c++) fill_w_range_typed(Wt, d, key, c * CH, (c + 1) * CH < n ? (c + 1) * CH : n);
    }
}

void as_ebg_fill_weights(uint16_t *W, const as_eb_shard *s, const int64_t *ids, uint64_t seed, int nthreads)
{
    as_ebg_fill_weights_typed(W, s, NULL, ids, seed, nthreads);
}

void as_ebg_fill_grad(float *grad, const as_eb_shard *s, const int64_t *ids, uint64_t seed, int nthreads)
{
    const int32_t T = s->T;
    const int64_t B = s->B, sumD = s->d_off[T];
    uint64_t *keys = malloc((size_t)(T > 0 ? T : 1) * sizeof *keys);
    if (!keys) {
        /* no memory for the keys: compute them per row instead (same values) */
#pragma omp parallel for schedule(static) num_threads(nthr(nthreads))
        for (int64_t b = 0; b < B; b++)
            for (int32_t t = 0; t < T; t++) {
                const uint64_t key = as_ebg_key(seed, ids[t], AS_EBG_GRADS);
                const int64_t D = s->dims[t];
                for (int64_t j = 0; j < D; j++)
                    grad[b * sumD + s->d_off[t] + j] = as_ebg_grad(key, (uint64_t)(b * D + j));
            }
        return;
    }
    for (int32_t t = 0; t < T; t++) keys[t] = as_ebg_key(seed, ids[t], AS_EBG_GRADS);
#pragma omp parallel for schedule(static) num_threads(nthr(nthreads))
    for (int64_t b = 0; b < B; b++) {
        float *row = grad + b * sumD;
        for (int32_t t = 0; t < T; t++) {
            const int64_t D = s->dims[t];
            float *g = row + s->d_off[t];
            const uint64_t e0 = (uint64_t)(b * D), key = keys[t];
            int64_t j = 0;
            if (e0 & 1u) { g[0] = as_ebg_grad(key, e0); j = 1; }   /* odd start: second half of a pair */
            for (; j + 2 <= D; j += 2) {
                const uint64_t h = as_ebg_bits(key, (e0 + (uint64_t)j) >> 1);
                g[j] = as_ebg_gradf((uint32_t)h);
                g[j + 1] = as_ebg_gradf((uint32_t)(h >> 32));
            }
            if (j < D) g[j] = as_ebg_grad(key, e0 + (uint64_t)j);
        }
    }
    free(keys);
}

int as_ebg_check_table(const as_eb_table *t, char *err, size_t errlen)
{
    if (t->rows < 1 || t->dim < 1 || t->dim > INT32_MAX || t->batch < 0 || t->lookups < 0) {
        as_errbuf(err, errlen, "table %lld: rows %lld, dim %lld, batch %lld, lookups %lld out of range", (long long)t->id,
                (long long)t->rows, (long long)t->dim, (long long)t->batch, (long long)t->lookups);
        return -1;
    }
    if (!t->offsets || (t->lookups > 0 && !t->indices)) {
        as_errbuf(err, errlen, "table %lld: no offsets or indices", (long long)t->id);
        return -1;
    }
    const int64_t B = t->batch;
    if (t->offsets[0] != 0 || t->offsets[B] != t->lookups) {
        as_errbuf(err, errlen, "table %lld: offsets run from %lld to %lld, expected 0 to lookups = %lld", (long long)t->id,
                (long long)t->offsets[0], (long long)t->offsets[B], (long long)t->lookups);
        return -1;
    }
    for (int64_t b = 0; b < B; b++)
        if (t->offsets[b + 1] < t->offsets[b]) {
            as_errbuf(err, errlen, "table %lld: offsets decrease at bag %lld", (long long)t->id, (long long)b);
            return -1;
        }
    const int64_t E = t->rows;
    int64_t bad = -1;
    for (int64_t p = 0; p < t->lookups; p++)
        if ((uint64_t)(int64_t)t->indices[p] >= (uint64_t)E) { bad = p; break; }
    if (bad >= 0) {
        int64_t b = 0;
        while (t->offsets[b + 1] <= bad) b++;   /* the bag holding position bad */
        as_errbuf(err, errlen, "table %lld: %s index: bag %lld, position %lld (indices[%lld]) = %d, table has %lld rows",
                (long long)t->id, t->indices[bad] < 0 ? "negative" : "out-of-range", (long long)b,
                (long long)(bad - t->offsets[b]), (long long)bad, (int)t->indices[bad], (long long)E);
        return -1;
    }
    return 0;
}
