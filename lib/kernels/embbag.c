/* embbag.c - the CPU half of the fused multi-table embedding-bag op (see embbag.h):
 * shard validation, OpenMP forward and backward + exact SGD (fp16 conversion: half.h),
 * naive single-threaded references, and error-returning CUDA stubs for builds without CUDA.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * Numerics (identical in the fast paths and the references, so they agree bit for bit):
 *   forward   out = 0.0f, then += float(row) for each lookup of the bag in lookup order;
 *   backward  the row's lookups in ascending lookup order, cut into chunks of AS_EB_CHUNK
 *             (embbag.h); per chunk P = 0.0f, then += grad[bag] for each of its lookups in
 *             order; G = P of the first chunk, then G += P of each later chunk in order (a
 *             row with at most AS_EB_CHUNK lookups: G is the plain sequential sum);
 *             W = half(float(W) - (lr * G)) with the product rounded to fp32 before the
 *             subtraction (no fused multiply-add) and one round-to-nearest-even to fp16.
 * On x86 the hot loops use F16C + AVX through function target attributes chosen at run time
 * (the build does not need -mf16c); elsewhere, or when forced, portable bit-twiddling code.
 *
 * Backward: per table, keys (row << 32 | bag) are built in lookup order and sorted by an LSD
 * radix sort over only the ceil(log2 E_t) row bits, in passes of at most 11 bits. The sort
 * is stable, so within a row the lookups stay in ascending lookup (= ascending bag) order.
 * Each run of equal rows is reduced into a D-wide fp32 sum and the row is updated once. On
 * x86 (every weight type and optimizer, fp16 + SGD included: the typed backward below) a
 * run's sum is kept 64 columns at a time in registers and SGD and Adam update those columns
 * straight from them; row-wise Adagrad first needs the row's sum of squares, so its sum
 * goes through a row buffer in L1; runs of more than AS_EB_CHUNK lookups are summed chunk
 * by chunk. The portable path reduces into a buffer, its long runs found by probing every
 * AS_EB_CHUNK-th sorted key. Threads split every table's lookups into contiguous ranges
 * (per-thread histograms keep the parallel sort stable and deterministic) and then own the
 * runs that start in their range, so no two threads touch the same row. Results do not depend on the
 * thread count. Library code: no printing, no exit. */
#include "embbag.h"
#include "errbuf.h"
#include "half.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) || defined(__clang__)
#define AS_EB_X86 1
#include <immintrin.h>
#endif
#endif

/* W - lr*G must not become a fused multiply-add: the references and the SIMD path round
 * the product first. (No target used below enables FMA; this keeps it so everywhere.) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* exported for tests only (not part of embbag.h) */
int as_eb_cpu_simd(int mode);

/* software prefetch distances, in lookups (measured on a 2-core EPYC VM, cold caches):
 * the forward wants more rows in flight when rows are short */
#define PF_FWD(D) ((D) <= 64 ? 32 : 16)
#define PF_DIST 16         /* backward */
#define BLK_V 8            /* 8-float vectors per register block (64 columns) */
#define RADIX_MAX_BITS 11
#define HIST_STRIDE ((1 << RADIX_MAX_BITS) + 16)   /* padded: no false sharing */


/* ---- SIMD dispatch -------------------------------------------------------------------- */

#ifdef AS_EB_X86
#define AS_F16C __attribute__((target("avx,f16c")))
#define AS_F16C_INLINE static inline __attribute__((always_inline, target("avx,f16c")))
#endif

static int simd_forced_off;   /* tests: as_eb_cpu_simd(0) */

static int use_f16c(void)
{
    return as_half_cpu_f16c() && !__atomic_load_n(&simd_forced_off, __ATOMIC_RELAXED);
}

/* mode 0: force the portable path; 1: use F16C when the CPU has it; < 0: query only.
 * Returns 1 when the F16C path is in use afterwards. */
int as_eb_cpu_simd(int mode)
{
    if (mode == 0) __atomic_store_n(&simd_forced_off, 1, __ATOMIC_RELAXED);
    else if (mode > 0) __atomic_store_n(&simd_forced_off, 0, __ATOMIC_RELAXED);
    return use_f16c();
}

/* ---- validation ----------------------------------------------------------------------- */

typedef struct { int64_t lo, hi; int32_t t; } wregion;

static int wregion_cmp(const void *a, const void *b)
{
    const wregion *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* the layout rule of embbag.h: every table's region [w_off[t], w_off[t] + E_t*D_t) inside
 * [0, w_off[T]), no two regions overlapping (any order, gaps allowed). Rows and dims are
 * already checked (>= 1, E_t*D_t does not overflow). */
static int validate_w_layout(const as_eb_shard *s, char *err, size_t errlen)
{
    const int32_t T = s->T;
    const int64_t total = s->w_off[T];
    if (total < 0) {
        as_errbuf(err, errlen, "w_off[%d] = %lld (the weight buffer's size) is negative", (int)T, (long long)total);
        return -1;
    }
    int ordered = 1;   /* tables in W in table order: the common case needs no sort */
    for (int32_t t = 0; t < T; t++) {
        const int64_t lo = s->w_off[t], n = s->rows[t] * (int64_t)s->dims[t];
        if (lo < 0) {
            as_errbuf(err, errlen, "table %d: w_off[%d] = %lld is negative", (int)t, (int)t, (long long)lo);
            return -1;
        }
        if (lo > total || n > total - lo) {
            as_errbuf(err, errlen, "table %d: weights at w_off[%d] = %lld, rows x dim = %lld, end past the weight "
                    "buffer's w_off[%d] = %lld elements", (int)t, (int)t, (long long)lo, (long long)n, (int)T,
                    (long long)total);
            return -1;
        }
        if (t > 0 && s->w_off[t - 1] + s->rows[t - 1] * (int64_t)s->dims[t - 1] > lo) ordered = 0;
    }
    if (ordered) return 0;
    /* sort the regions by start: two regions overlap iff some pair adjacent in that order does */
    wregion *r = malloc((size_t)T * sizeof *r);
    if (!r) { as_errbuf(err, errlen, "out of memory checking the weight layout"); return -1; }
    for (int32_t t = 0; t < T; t++) {
        r[t].lo = s->w_off[t];
        r[t].hi = s->w_off[t] + s->rows[t] * (int64_t)s->dims[t];
        r[t].t = t;
    }
    qsort(r, (size_t)T, sizeof *r, wregion_cmp);
    int rc = 0;
    for (int32_t k = 1; k < T; k++)
        if (r[k - 1].hi > r[k].lo) {
            const wregion *a = &r[k - 1], *b = &r[k];
            if (a->t > b->t) { const wregion *x = a; a = b; b = x; }
            as_errbuf(err, errlen, "tables %d and %d overlap in the weights: [%lld, %lld) and [%lld, %lld)", (int)a->t,
                    (int)b->t, (long long)a->lo, (long long)a->hi, (long long)b->lo, (long long)b->hi);
            rc = -1;
            break;
        }
    free(r);
    return rc;
}

int as_eb_validate(const as_eb_shard *s, char *err, size_t errlen)
{
    if (!s) { as_errbuf(err, errlen, "no shard"); return -1; }
    if (s->T < 0) { as_errbuf(err, errlen, "bad table count %d", (int)s->T); return -1; }
    if (s->B < 0) { as_errbuf(err, errlen, "bad batch size %lld", (long long)s->B); return -1; }
    if (!s->rows || !s->dims || !s->w_off || !s->d_off || !s->offsets ||
        (!s->indices && s->offsets[(int64_t)s->T * s->B] > 0)) {
        as_errbuf(err, errlen, "shard has a missing array");
        return -1;
    }
    const int32_t T = s->T;
    const int64_t B = s->B;
    if (s->d_off[0] != 0) {
        as_errbuf(err, errlen, "d_off[0] = %d, must be 0", (int)s->d_off[0]);
        return -1;
    }
    for (int32_t t = 0; t < T; t++) {
        int64_t E = s->rows[t];
        int32_t D = s->dims[t];
        if (E < 1) { as_errbuf(err, errlen, "table %d: rows = %lld, must be >= 1", (int)t, (long long)E); return -1; }
        if (D < 1) { as_errbuf(err, errlen, "table %d: dim = %d, must be >= 1", (int)t, (int)D); return -1; }
        if (E > INT64_MAX / D) { as_errbuf(err, errlen, "table %d: rows x dim overflows", (int)t); return -1; }
        if ((int64_t)s->d_off[t + 1] - s->d_off[t] != D) {
            as_errbuf(err, errlen, "table %d: d_off[%d] - d_off[%d] = %lld, expected dim = %d",
                    (int)t, (int)t + 1, (int)t, (long long)s->d_off[t + 1] - s->d_off[t], (int)D);
            return -1;
        }
    }
    if (validate_w_layout(s, err, errlen)) return -1;
    const int64_t nbags = (int64_t)T * B;
    if (s->offsets[0] != 0) {
        as_errbuf(err, errlen, "offsets[0] = %lld, must be 0", (long long)s->offsets[0]);
        return -1;
    }
    for (int64_t k = 0; k < nbags; k++) {
        if (s->offsets[k + 1] < s->offsets[k]) {
            as_errbuf(err, errlen, "offsets decrease: table %lld, bag %lld: offsets[%lld] = %lld < offsets[%lld] = %lld",
                    (long long)(k / B), (long long)(k % B), (long long)(k + 1), (long long)s->offsets[k + 1],
                    (long long)k, (long long)s->offsets[k]);
            return -1;
        }
    }
    for (int64_t k = 0; k < nbags; k++) {
        const int64_t E = s->rows[k / B];
        for (int64_t p = s->offsets[k]; p < s->offsets[k + 1]; p++) {
            int32_t r = s->indices[p];
            if (r < 0 || r >= E) {
                as_errbuf(err, errlen, "%s index: table %lld, bag %lld, position %lld (indices[%lld]) = %d, "
                        "table has %lld rows", r < 0 ? "negative" : "out-of-range",
                        (long long)(k / B), (long long)(k % B), (long long)(p - s->offsets[k]),
                        (long long)p, (int)r, (long long)E);
                return -1;
            }
        }
    }
    return 0;
}

/* ---- references ----------------------------------------------------------------------- */

void as_eb_forward_ref(float *out, const uint16_t *W, const as_eb_shard *s)
{
    const int64_t B = s->B, sumD = s->d_off[s->T];
    for (int32_t t = 0; t < s->T; t++) {
        const int64_t D = s->dims[t];
        const uint16_t *Wt = W + s->w_off[t];
        for (int64_t b = 0; b < B; b++) {
            float *o = out + b * sumD + s->d_off[t];
            for (int64_t j = 0; j < D; j++) o[j] = 0.0f;
            const int64_t k = (int64_t)t * B + b;
            for (int64_t p = s->offsets[k]; p < s->offsets[k + 1]; p++) {
                const uint16_t *row = Wt + (int64_t)s->indices[p] * D;
                for (int64_t j = 0; j < D; j++) o[j] += as_half_to_float_soft(row[j]);
            }
        }
    }
}

/* one table, no allocation: for each lookup that is the first of its row, walk that row's
 * lookups in ascending order (64 columns at a time), summing each chunk of AS_EB_CHUNK
 * lookups from 0.0f and adding the chunk sums left to right (embbag.h), then update */
static void bwd_ref_table(uint16_t *W, const float *grad, const as_eb_shard *s, float lr, int32_t t)
{
    const int64_t B = s->B, D = s->dims[t], sumD = s->d_off[s->T];
    const int64_t *off = s->offsets + (int64_t)t * B;
    const int32_t *idx = s->indices;
    const float *gt = grad + s->d_off[t];
    uint16_t *Wt = W + s->w_off[t];
    for (int64_t bi = 0; bi < B; bi++) {
        for (int64_t i = off[bi]; i < off[bi + 1]; i++) {
            const int32_t r = idx[i];
            int seen = 0;
            for (int64_t q = off[0]; q < i && !seen; q++) seen = idx[q] == r;
            if (seen) continue;
            for (int64_t c0 = 0; c0 < D; c0 += 64) {
                const int64_t w = D - c0 < 64 ? D - c0 : 64;
                float acc[64], part[64];
                int64_t m = 0, chunks = 0;   /* lookups in the open chunk; chunks closed */
                for (int64_t bk = bi; bk < B; bk++)
                    for (int64_t k = bk == bi ? i : off[bk]; k < off[bk + 1]; k++) {
                        if (idx[k] != r) continue;
                        if (m == 0)
                            for (int64_t j = 0; j < w; j++) part[j] = 0.0f;
                        for (int64_t j = 0; j < w; j++) part[j] += gt[bk * sumD + c0 + j];
                        if (++m == AS_EB_CHUNK) {
                            for (int64_t j = 0; j < w; j++) acc[j] = chunks ? acc[j] + part[j] : part[j];
                            chunks++;
                            m = 0;
                        }
                    }
                if (m > 0)
                    for (int64_t j = 0; j < w; j++) acc[j] = chunks ? acc[j] + part[j] : part[j];
                uint16_t *wr = Wt + (int64_t)r * D + c0;
                for (int64_t j = 0; j < w; j++) {
                    const float u = lr * acc[j];
                    wr[j] = as_float_to_half_soft(as_half_to_float_soft(wr[j]) - u);
                }
            }
        }
    }
}

void as_eb_backward_sgd_ref(uint16_t *W, const float *grad, const as_eb_shard *s, float lr)
{
    for (int32_t t = 0; t < s->T; t++) bwd_ref_table(W, grad, s, lr, t);
}

/* ---- prefetch helpers ----------------------------------------------------------------- */

static inline void prefetch_range(const void *p, size_t bytes, int write)
{
    const char *c = (const char *)p;
    for (size_t o = 0; o < bytes; o += 64) {
        if (write) __builtin_prefetch(c + o, 1, 3);
        else __builtin_prefetch(c + o, 0, 3);
    }
    if (write) __builtin_prefetch(c + bytes - 1, 1, 3);
    else __builtin_prefetch(c + bytes - 1, 0, 3);
}

/* ---- forward -------------------------------------------------------------------------- */

/* one bag: idx[0..n) its lookups; idx[n..avail) the rest of the table (prefetch targets) */
static void fwd_bag_soft(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx, int64_t n,
                         int64_t avail)
{
    for (int64_t j = 0; j < D; j++) o[j] = 0.0f;
    const size_t rowbytes = (size_t)D * 2;
    const int64_t pf = PF_FWD(D);
    for (int64_t i = 0; i < n; i++) {
        if (i + pf < avail) prefetch_range(Wt + (int64_t)idx[i + pf] * D, rowbytes, 0);
        const uint16_t *row = Wt + (int64_t)idx[i] * D;
        for (int64_t j = 0; j < D; j++) o[j] += as_half_to_float_soft(row[j]);
    }
}

#ifdef AS_EB_X86
/* columns [c0, c0 + 8*nv) of one bag in nv ymm accumulators; nv is a literal at each call */
AS_F16C_INLINE void fwd_blk_f16c(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx,
                                 int64_t n, int64_t avail, int64_t c0, const int nv)
{
    __m256 acc[BLK_V];
    for (int v = 0; v < nv; v++) acc[v] = _mm256_setzero_ps();
    const size_t pfbytes = (size_t)(D - c0) * 2;
    const int64_t pf = PF_FWD(D);
    for (int64_t i = 0; i < n; i++) {
        if (i + pf < avail) prefetch_range(Wt + (int64_t)idx[i + pf] * D + c0, pfbytes, 0);
        const uint16_t *row = Wt + (int64_t)idx[i] * D + c0;
        for (int v = 0; v < nv; v++)
            acc[v] = _mm256_add_ps(acc[v], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 8 * v))));
    }
    for (int v = 0; v < nv; v++) _mm256_storeu_ps(o + c0 + 8 * v, acc[v]);
}

AS_F16C static void fwd_bag_f16c(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx,
                                 int64_t n, int64_t avail)
{
    const int64_t D8 = D & ~(int64_t)7;
    for (int64_t c0 = 0; c0 < D8; c0 += 8 * BLK_V) {
        int64_t nv = (D8 - c0) / 8;
        switch (nv < BLK_V ? nv : BLK_V) {
        case 1: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 1); break;
        case 2: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 2); break;
        case 3: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 3); break;
        case 4: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 4); break;
        case 5: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 5); break;
        case 6: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 6); break;
        case 7: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 7); break;
        default: fwd_blk_f16c(o, Wt, D, idx, n, avail, c0, 8); break;
        }
    }
    if (D8 < D) {   /* 1..7 tail columns, scalar */
        const int64_t w = D - D8;
        float acc[8] = { 0 };
        for (int64_t i = 0; i < n; i++) {
            if (D8 == 0 && i + PF_FWD(D) < avail)
                prefetch_range(Wt + (int64_t)idx[i + PF_FWD(D)] * D, (size_t)D * 2, 0);
            const uint16_t *row = Wt + (int64_t)idx[i] * D + D8;
            for (int64_t j = 0; j < w; j++) acc[j] += _cvtsh_ss(row[j]);
        }
        for (int64_t j = 0; j < w; j++) o[D8 + j] = acc[j];
    }
}
#endif

void as_eb_forward_cpu(float *out, const uint16_t *W, const as_eb_shard *s, int nthreads)
{
    const int64_t B = s->B, nbags = (int64_t)s->T * B, sumD = s->d_off[s->T];
    if (nbags == 0) return;
    const int hw = use_f16c();
    const int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16)
    for (int64_t k = 0; k < nbags; k++) {
        const int64_t t = k / B, b = k - t * B;
        const int64_t D = s->dims[t];
        const uint16_t *Wt = W + s->w_off[t];
        float *o = out + b * sumD + s->d_off[t];
        const int64_t p0 = s->offsets[k], n = s->offsets[k + 1] - p0;
        const int64_t avail = s->offsets[(t + 1) * B] - p0;
        const int32_t *idx = s->indices + p0;
#ifdef AS_EB_X86
        if (hw) { fwd_bag_f16c(o, Wt, D, idx, n, avail); continue; }
#else
        (void)hw;
#endif
        fwd_bag_soft(o, Wt, D, idx, n, avail);
    }
}

/* ---- backward + SGD ------------------------------------------------------------------- */

struct as_eb_cpu_ws {
    int64_t cap_n;      /* lookups of the largest table */
    int64_t cap_D;      /* largest dim */
    int cap_thr;        /* threads the histograms and accumulators are sized for */
    uint64_t *keys[2];  /* (row << 32) | bag */
    int64_t *hist;      /* [cap_thr][HIST_STRIDE] */
    float *acc;         /* [cap_thr][acc_stride]: run sum, then chunk sum (portable path) */
    int64_t acc_stride;
};

static int64_t table_lookups(const as_eb_shard *s, int32_t t)
{
    return s->offsets[(int64_t)(t + 1) * s->B] - s->offsets[(int64_t)t * s->B];
}

static int ws_threads(void)
{
    int thr = omp_get_max_threads(), np = omp_get_num_procs();
    thr = thr > np ? thr : np;
    return thr < 1 ? 1 : thr;
}

size_t as_eb_cpu_ws_size(int64_t n, int64_t D)
{
    const size_t nk = (size_t)(n > 0 ? n : 1), thr = (size_t)ws_threads();
    const int64_t stride = 2 * ((D + 15) & ~(int64_t)15);
    return 2 * (((nk * 8 + 63) / 64) * 64) + thr * HIST_STRIDE * sizeof(int64_t) +
           thr * (size_t)(stride > 0 ? stride : 16) * sizeof(float);
}

as_eb_cpu_ws *as_eb_cpu_ws_new(const as_eb_shard *s)
{
    if (!s || s->B > (int64_t)UINT32_MAX) return NULL;
    as_eb_cpu_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    for (int32_t t = 0; t < s->T; t++) {
        int64_t n = table_lookups(s, t);
        if (n > ws->cap_n) ws->cap_n = n;
        if (s->dims[t] > ws->cap_D) ws->cap_D = s->dims[t];
    }
    ws->cap_thr = ws_threads();
    ws->acc_stride = 2 * ((ws->cap_D + 15) & ~(int64_t)15);
    size_t nk = (size_t)(ws->cap_n > 0 ? ws->cap_n : 1);
    ws->keys[0] = aligned_alloc(64, ((nk * 8 + 63) / 64) * 64);
    ws->keys[1] = aligned_alloc(64, ((nk * 8 + 63) / 64) * 64);
    ws->hist = aligned_alloc(64, (size_t)ws->cap_thr * HIST_STRIDE * sizeof(int64_t));
    ws->acc = aligned_alloc(64, (size_t)ws->cap_thr * (size_t)(ws->acc_stride > 0 ? ws->acc_stride : 16) * sizeof(float));
    if (!ws->keys[0] || !ws->keys[1] || !ws->hist || !ws->acc) {
        as_eb_cpu_ws_free(ws);
        return NULL;
    }
    return ws;
}

void as_eb_cpu_ws_free(as_eb_cpu_ws *ws)
{
    if (!ws) return;
    free(ws->keys[0]);
    free(ws->keys[1]);
    free(ws->hist);
    free(ws->acc);
    free(ws);
}

#define KEY_ROW(k) ((int64_t)((k) >> 32))
#define KEY_BAG(k) ((int64_t)(uint32_t)(k))

/* runs of keys[r0..r1) (run starts; a run may extend past r1), each of at most AS_EB_CHUNK
 * lookups (bwd_runs splits the longer ones off), portable */
static void bwd_runs_soft(uint16_t *Wt, const float *gt, int64_t sumD, int64_t D, const uint64_t *keys,
                          int64_t r0, int64_t r1, int64_t n, float lr, float *acc)
{
    const size_t gbytes = (size_t)D * 4, wbytes = (size_t)D * 2;
    int64_t i = r0;
    while (i < r1) {
        const int64_t row = KEY_ROW(keys[i]);
        for (int64_t j = 0; j < D; j++) acc[j] = 0.0f;
        int64_t k = i;
        for (; k < n && KEY_ROW(keys[k]) == row; k++) {
            if (k + PF_DIST < n) {
                prefetch_range(gt + KEY_BAG(keys[k + PF_DIST]) * sumD, gbytes, 0);
                prefetch_range(Wt + KEY_ROW(keys[k + PF_DIST]) * D, wbytes, 1);
            }
            const float *g = gt + KEY_BAG(keys[k]) * sumD;
            for (int64_t j = 0; j < D; j++) acc[j] += g[j];
        }
        uint16_t *w = Wt + row * D;
        for (int64_t j = 0; j < D; j++) {
            const float u = lr * acc[j];
            w[j] = as_float_to_half_soft(as_half_to_float_soft(w[j]) - u);
        }
        i = k;
    }
}

/* one run keys[i..j) of more than AS_EB_CHUNK lookups, portable, chunk by chunk: each
 * chunk's sum from 0.0f in part, added into acc (the first chunk's sum is acc itself) */
static void bwd_long_soft(uint16_t *Wt, const float *gt, int64_t sumD, int64_t D, const uint64_t *keys,
                          int64_t i, int64_t j, int64_t n, float lr, float *acc, float *part)
{
    const size_t gbytes = (size_t)D * 4, wbytes = (size_t)D * 2;
    for (int64_t k0 = i; k0 < j; k0 += AS_EB_CHUNK) {
        const int64_t k1 = j - k0 > AS_EB_CHUNK ? k0 + AS_EB_CHUNK : j;
        float *p = k0 == i ? acc : part;
        for (int64_t c = 0; c < D; c++) p[c] = 0.0f;
        for (int64_t k = k0; k < k1; k++) {
            if (k + PF_DIST < n) {
                prefetch_range(gt + KEY_BAG(keys[k + PF_DIST]) * sumD, gbytes, 0);
                prefetch_range(Wt + KEY_ROW(keys[k + PF_DIST]) * D, wbytes, 1);
            }
            const float *g = gt + KEY_BAG(keys[k]) * sumD;
            for (int64_t c = 0; c < D; c++) p[c] += g[c];
        }
        if (p != acc)
            for (int64_t c = 0; c < D; c++) acc[c] += part[c];
    }
    uint16_t *w = Wt + KEY_ROW(keys[i]) * D;
    for (int64_t c = 0; c < D; c++) {
        const float u = lr * acc[c];
        w[c] = as_float_to_half_soft(as_half_to_float_soft(w[c]) - u);
    }
}

/* ---- weight types (ebopt.h): an element of a table of type d, and its store ------------ */

/* the step of one weight from its summed gradient g (ebopt.h's rules): SGD lr * g, row-wise
 * Adagrad m * g (m its row's multiplier), Adam its quotient with the weight's moments m1, m2
 * updated; what the portable path and the x86 path's tail columns share */
static inline float opt_step(const as_eb_opt *o, float m, float g, float *m1, float *m2)
{
    if (o->kind == AS_EB_ROWWISE_ADAGRAD) return m * g;
    if (o->kind == AS_EB_ADAM) {
        *m1 = o->beta1 * *m1 + (1.0f - o->beta1) * g;
        *m2 = o->beta2 * *m2 + (1.0f - o->beta2) * (g * g);
        return o->lr * ((*m1 / o->c1) / (sqrtf(*m2 / o->c2) + o->eps));
    }
    return o->lr * g;
}

static inline float tw_get(const uint16_t *Wt, as_eb_dtype d, int64_t e)
{
    if (d == AS_EB_F32) return ((const float *)Wt)[e];
    return d == AS_EB_BF16 ? as_bf16_to_float_soft(Wt[e]) : as_half_to_float_soft(Wt[e]);
}

static inline void tw_set(uint16_t *Wt, as_eb_dtype d, int64_t e, float v)
{
    if (d == AS_EB_F32) ((float *)Wt)[e] = v;
    else Wt[e] = d == AS_EB_BF16 ? as_float_to_bf16_soft(v) : as_float_to_half_soft(v);
}

#ifdef AS_EB_X86
/* 8 bf16 at p as floats (the bits shifted up: exact) */
AS_F16C_INLINE __m256 bf16x8(const uint16_t *p)
{
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    const __m128i lo = _mm_slli_epi32(_mm_cvtepu16_epi32(h), 16), hi = _mm_slli_epi32(_mm_cvtepu16_epi32(_mm_srli_si128(h, 8)), 16);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_castsi128_ps(lo)), _mm_castsi128_ps(hi), 1);
}

/* 4 floats rounded to bf16 as as_float_to_bf16_soft rounds them (to nearest even; a NaN
 * quieted: (u >> 16) | 0x40 is (u | 0x400000) >> 16), in the low half of each 32-bit lane */
AS_F16C_INLINE __m128i bf16r4(__m128 x)
{
    const __m128i u = _mm_castps_si128(x);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(u, _mm_set1_epi32(0x7fffffff)), _mm_set1_epi32(0x7f800000));
    const __m128i odd = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
    const __m128i r = _mm_add_epi32(u, _mm_add_epi32(_mm_set1_epi32(0x7fff), odd));
    return _mm_srli_epi32(_mm_blendv_epi8(r, _mm_or_si128(u, _mm_set1_epi32(0x400000)), nan), 16);
}

/* the 8 weights of a table of type d from element e, as floats, and the store of 8 floats
 * rounded to the type (w: the table's start in 2-byte units); d is a literal at each call */
AS_F16C_INLINE __m256 wld8(const uint16_t *w, const as_eb_dtype d, int64_t e)
{
    if (d == AS_EB_F32) return _mm256_loadu_ps((const float *)w + e);
    if (d == AS_EB_BF16) return bf16x8(w + e);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + e)));
}

AS_F16C_INLINE void wst8(uint16_t *w, const as_eb_dtype d, int64_t e, __m256 x)
{
    if (d == AS_EB_F32) _mm256_storeu_ps((float *)w + e, x);
    else if (d == AS_EB_BF16)
        _mm_storeu_si128((__m128i *)(w + e), _mm_packus_epi32(bf16r4(_mm256_castps256_ps128(x)), bf16r4(_mm256_extractf128_ps(x, 1))));
    else _mm_storeu_si128((__m128i *)(w + e), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

/* ---- the typed backward, register-blocked (x86): the fp16 + SGD path's blocking for every
 * weight type and optimizer. A run of at most AS_EB_CHUNK lookups sums its gradient 64
 * columns at a time in registers; SGD and Adam then update those columns from the
 * registers (the optimizer fused into the write-back), row-wise Adagrad stores them (its
 * step needs the whole row's sum of squares first). Longer runs sum chunk by chunk into
 * memory. The tail columns (D mod 8) are summed and updated in scalar code. Every
 * operation is the reference's (ebopt.h), one fp32 operation each, so the results are its
 * bits. */
typedef struct {
    uint16_t *Wt;       /* the table's weights (2-byte units) */
    float *St;          /* its optimizer state */
    const float *gt;    /* its gradient columns: gt + bag * sumD */
    const uint64_t *keys;
    const as_eb_opt *o;
    float *G;           /* the row's summed gradient, round32(D) floats, zero beyond D */
    int64_t sumD, D, E, n;
} tctx;

/* prefetch row r's weights and state for a later update (d, ok literals) */
AS_F16C_INLINE void tpf_row(const tctx *x, int64_t r, const as_eb_dtype d, const as_eb_optim ok)
{
    const int64_t units = d == AS_EB_F32 ? 2 : 1;
    prefetch_range(x->Wt + r * x->D * units, (size_t)(x->D * 2 * units), 1);
    if (ok == AS_EB_ROWWISE_ADAGRAD) __builtin_prefetch(x->St + r, 1, 3);
    else if (ok == AS_EB_ADAM) {
        prefetch_range(x->St + r * x->D, (size_t)x->D * 4, 1);
        prefetch_range(x->St + (x->E + r) * x->D, (size_t)x->D * 4, 1);
    }
}

/* the lookups keys[k0..k1) added into a[0..nv) (columns [c0, c0 + 8*nv)), in order */
#define TSUM_AVX(k0, k1)                                                                          \
    for (int64_t k = (k0); k < (k1); k++) {                                                       \
        if (k + PF_DIST < x->n) {                                                                 \
            prefetch_range(x->gt + KEY_BAG(x->keys[k + PF_DIST]) * x->sumD + c0, gbytes, 0);       \
            if (c0 == 0) tpf_row(x, KEY_ROW(x->keys[k + PF_DIST]), d, ok);                         \
        }                                                                                         \
        const float *g = x->gt + KEY_BAG(x->keys[k]) * x->sumD + c0;                              \
        for (int v = 0; v < nv; v++) a[v] = _mm256_add_ps(a[v], _mm256_loadu_ps(g + 8 * v));      \
    }

/* columns [c0, c0 + 8*nv) of the run keys[i..j): summed in registers (chunked = 1: chunk by
 * chunk, each chunk from zero, the chunks' sums added left to right in x->G); then SGD and
 * Adam update them from the registers (fused = 1), else they are stored in x->G. nv, d,
 * ok, chunked and fused are literals */
AS_F16C_INLINE void tblk(const tctx *x, int64_t i, int64_t j, int64_t c0, const int nv, const as_eb_dtype d,
                         const as_eb_optim ok, const int chunked, const int fused)
{
    __m256 a[BLK_V];
    for (int v = 0; v < nv; v++) a[v] = _mm256_setzero_ps();
    const size_t gbytes = (size_t)(x->D - c0) * 4;
    if (!chunked) {
        TSUM_AVX(i, j)
    } else {
        float *G = x->G + c0;
        TSUM_AVX(i, i + AS_EB_CHUNK)
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(G + 8 * v, a[v]);
        for (int64_t k0 = i + AS_EB_CHUNK; k0 < j; k0 += AS_EB_CHUNK) {
            const int64_t k1 = j - k0 > AS_EB_CHUNK ? k0 + AS_EB_CHUNK : j;
            for (int v = 0; v < nv; v++) a[v] = _mm256_setzero_ps();
            TSUM_AVX(k0, k1)
            for (int v = 0; v < nv; v++) _mm256_storeu_ps(G + 8 * v, _mm256_add_ps(_mm256_loadu_ps(G + 8 * v), a[v]));
        }
        return;
    }
    if (!fused) {
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(x->G + c0 + 8 * v, a[v]);
        return;
    }
    const int64_t row = KEY_ROW(x->keys[i]), e = row * x->D + c0;
    const as_eb_opt *o = x->o;
    if (ok == AS_EB_ADAM) {
        float *m1 = x->St + e, *m2 = x->St + x->E * x->D + e;
        const __m256 b1 = _mm256_set1_ps(o->beta1), b2 = _mm256_set1_ps(o->beta2), a1 = _mm256_set1_ps(1.0f - o->beta1),
                     a2 = _mm256_set1_ps(1.0f - o->beta2), c1 = _mm256_set1_ps(o->c1), c2 = _mm256_set1_ps(o->c2),
                     eps = _mm256_set1_ps(o->eps), lr = _mm256_set1_ps(o->lr);
        for (int v = 0; v < nv; v++) {
            const __m256 p = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m1 + 8 * v)), _mm256_mul_ps(a1, a[v]));
            const __m256 q = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(m2 + 8 * v)), _mm256_mul_ps(a2, _mm256_mul_ps(a[v], a[v])));
            _mm256_storeu_ps(m1 + 8 * v, p);
            _mm256_storeu_ps(m2 + 8 * v, q);
            const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(q, c2)), eps);
            const __m256 u = _mm256_mul_ps(lr, _mm256_div_ps(_mm256_div_ps(p, c1), den));
            wst8(x->Wt, d, e + 8 * v, _mm256_sub_ps(wld8(x->Wt, d, e + 8 * v), u));
        }
    } else {
        const __m256 lr = _mm256_set1_ps(o->lr);
        for (int v = 0; v < nv; v++)
            wst8(x->Wt, d, e + 8 * v, _mm256_sub_ps(wld8(x->Wt, d, e + 8 * v), _mm256_mul_ps(lr, a[v])));
    }
}

/* the 8-column blocks of columns [0, D & ~7) of the run keys[i..j), BLK_V at a time, each
 * tblk call with its block count as a literal */
AS_F16C_INLINE void tblocks(const tctx *x, int64_t i, int64_t j, const as_eb_dtype d, const as_eb_optim ok,
                            const int chunked, const int fused)
{
    const int64_t D8 = x->D & ~(int64_t)7;
    for (int64_t c0 = 0; c0 < D8; c0 += 8 * BLK_V) {
        const int64_t nv = (D8 - c0) / 8;
        switch (nv < BLK_V ? nv : BLK_V) {
        case 1: tblk(x, i, j, c0, 1, d, ok, chunked, fused); break;
        case 2: tblk(x, i, j, c0, 2, d, ok, chunked, fused); break;
        case 3: tblk(x, i, j, c0, 3, d, ok, chunked, fused); break;
        case 4: tblk(x, i, j, c0, 4, d, ok, chunked, fused); break;
        case 5: tblk(x, i, j, c0, 5, d, ok, chunked, fused); break;
        case 6: tblk(x, i, j, c0, 6, d, ok, chunked, fused); break;
        case 7: tblk(x, i, j, c0, 7, d, ok, chunked, fused); break;
        default: tblk(x, i, j, c0, 8, d, ok, chunked, fused); break;
        }
    }
}

/* the tail columns [D & ~7, D) of the run keys[i..j) into x->G, in the canonical order */
AS_F16C_INLINE void ttail_sum(const tctx *x, int64_t i, int64_t j)
{
    const int64_t D = x->D, D8 = D & ~(int64_t)7;
    float *G = x->G;
    for (int64_t k0 = i; k0 < j; k0 += AS_EB_CHUNK) {
        const int64_t k1 = j - k0 > AS_EB_CHUNK ? k0 + AS_EB_CHUNK : j;
        float part[8] = { 0 };
        for (int64_t k = k0; k < k1; k++) {
            const float *g = x->gt + KEY_BAG(x->keys[k]) * x->sumD;
            for (int64_t c = D8; c < D; c++) part[c - D8] += g[c];
        }
        for (int64_t c = D8; c < D; c++) G[c] = k0 == i ? part[c - D8] : G[c] + part[c - D8];
    }
}

/* columns [c0, D) of row `row` updated from x->G, one column at a time (m: row-wise
 * Adagrad's multiplier) */
AS_F16C_INLINE void tupd_scalar(const tctx *x, int64_t row, int64_t c0, as_eb_dtype d, float m)
{
    const as_eb_opt *o = x->o;
    const int64_t D = x->D, e0 = row * D;
    const float *G = x->G;
    float *m1 = o->kind == AS_EB_ADAM ? x->St + e0 : NULL, *m2 = m1 ? x->St + x->E * D + e0 : NULL;
    for (int64_t c = c0; c < D; c++) {
        const float u = opt_step(o, m, G[c], m1 ? m1 + c : NULL, m2 ? m2 + c : NULL);
        tw_set(x->Wt, d, e0 + c, tw_get(x->Wt, d, e0 + c) - u);
    }
}

/* row-wise Adagrad's sum of squares of x->G in a warp's order (as_eb_row_sumsq): vector v
 * of 8 columns is lanes 8*(v mod 4) .. +7, so P[v mod 4] += G_v * G_v in ascending v is
 * each lane's partial (columns past D are zero: they add +0); the butterfly's steps 16
 * and 8 are P0 + P2, P1 + P3 and their sum, steps 4, 2, 1 within the 8 lanes; fp
 * addition commutes, so lane 0 after the steps is the same value */
AS_F16C static float tsumsq(const float *G, int64_t D)
{
    __m256 P[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    const int64_t nv = (D + 7) / 8;
    for (int64_t v = 0; v < nv; v++) {
        const __m256 g = _mm256_loadu_ps(G + 8 * v);
        P[v & 3] = _mm256_add_ps(P[v & 3], _mm256_mul_ps(g, g));
    }
    const __m256 s = _mm256_add_ps(_mm256_add_ps(P[0], P[2]), _mm256_add_ps(P[1], P[3]));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_shuffle_ps(h, h, _MM_SHUFFLE(1, 0, 3, 2)));
    h = _mm_add_ps(h, _mm_shuffle_ps(h, h, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(h);
}

/* row `row` updated from its whole gradient in x->G (runs longer than a chunk, and every
 * row-wise Adagrad row): the optimizer's step 8 columns at a time from memory, the tail in
 * scalar code; d and ok literals */
AS_F16C_INLINE void tupd_row(const tctx *x, int64_t row, const as_eb_dtype d, const as_eb_optim ok)
{
    const int64_t D = x->D, D8 = D & ~(int64_t)7, e0 = row * D;
    const as_eb_opt *o = x->o;
    float m = 0.0f;
    if (ok == AS_EB_ROWWISE_ADAGRAD) {
        const float q = tsumsq(x->G, D);
        x->St[row] = x->St[row] + q / (float)D;
        m = o->lr / (sqrtf(x->St[row]) + o->eps);
        const __m256 vm = _mm256_set1_ps(m);
        for (int64_t c = 0; c < D8; c += 8)
            wst8(x->Wt, d, e0 + c, _mm256_sub_ps(wld8(x->Wt, d, e0 + c), _mm256_mul_ps(vm, _mm256_loadu_ps(x->G + c))));
    } else if (ok == AS_EB_ADAM) {
        tupd_scalar(x, row, 0, d, 0.0f);   /* a hot row's step: rare, its sum dominates */
        return;
    } else {
        const __m256 lr = _mm256_set1_ps(o->lr);
        for (int64_t c = 0; c < D8; c += 8)
            wst8(x->Wt, d, e0 + c, _mm256_sub_ps(wld8(x->Wt, d, e0 + c), _mm256_mul_ps(lr, _mm256_loadu_ps(x->G + c))));
    }
    if (D8 < D) tupd_scalar(x, row, D8, d, m);
}

/* the runs starting in keys[r0..r1) (a run may extend past r1), d and ok literals */
AS_F16C_INLINE void truns_avx(const tctx *x, int64_t r0, int64_t r1, const as_eb_dtype d, const as_eb_optim ok)
{
    const int64_t D8 = x->D & ~(int64_t)7;
    int64_t i = r0;
    while (i < r1) {
        const int64_t row = KEY_ROW(x->keys[i]);
        int64_t j = i + 1;
        while (j < x->n && KEY_ROW(x->keys[j]) == row) j++;
        if (D8 < x->D) ttail_sum(x, i, j);
        if (j - i > AS_EB_CHUNK) {
            tblocks(x, i, j, d, ok, 1, 0);
            tupd_row(x, row, d, ok);
        } else if (ok == AS_EB_ROWWISE_ADAGRAD) {
            tblocks(x, i, j, d, ok, 0, 0);
            tupd_row(x, row, d, ok);
        } else {
            tblocks(x, i, j, d, ok, 0, 1);
            if (D8 < x->D) tupd_scalar(x, row, D8, d, 0.0f);
        }
        i = j;
    }
}

/* one function per weight type and optimizer, each with its literals inlined; the context
 * copied to a local, which no store through the weights or G can alias (the build has
 * -fno-strict-aliasing), so that its fields stay in registers */
#define TRUNS(NAME, D, OK)                                                                        \
    AS_F16C __attribute__((noinline)) static void NAME(const tctx *x0, int64_t r0, int64_t r1) \
    {                                                                                             \
        const tctx x = *x0;                                                                       \
        truns_avx(&x, r0, r1, D, OK);                                                             \
    }
TRUNS(truns_f16_sgd, AS_EB_F16, AS_EB_SGD)
TRUNS(truns_f16_adagrad, AS_EB_F16, AS_EB_ROWWISE_ADAGRAD)
TRUNS(truns_f16_adam, AS_EB_F16, AS_EB_ADAM)
TRUNS(truns_f32_sgd, AS_EB_F32, AS_EB_SGD)
TRUNS(truns_f32_adagrad, AS_EB_F32, AS_EB_ROWWISE_ADAGRAD)
TRUNS(truns_f32_adam, AS_EB_F32, AS_EB_ADAM)
TRUNS(truns_bf16_sgd, AS_EB_BF16, AS_EB_SGD)
TRUNS(truns_bf16_adagrad, AS_EB_BF16, AS_EB_ROWWISE_ADAGRAD)
TRUNS(truns_bf16_adam, AS_EB_BF16, AS_EB_ADAM)
#undef TRUNS

typedef void (*truns_fn)(const tctx *, int64_t, int64_t);
static const truns_fn truns_table[AS_EB_NDTYPE][AS_EB_NOPTIM] = {
    [AS_EB_F16] = { [AS_EB_SGD] = truns_f16_sgd, [AS_EB_ROWWISE_ADAGRAD] = truns_f16_adagrad, [AS_EB_ADAM] = truns_f16_adam },
    [AS_EB_F32] = { [AS_EB_SGD] = truns_f32_sgd, [AS_EB_ROWWISE_ADAGRAD] = truns_f32_adagrad, [AS_EB_ADAM] = truns_f32_adam },
    [AS_EB_BF16] = { [AS_EB_SGD] = truns_bf16_sgd, [AS_EB_ROWWISE_ADAGRAD] = truns_bf16_adagrad, [AS_EB_ADAM] = truns_bf16_adam },
};
#endif

/* the runs starting in keys[r0..r1) (r0 a run start; the last run may extend past r1),
 * portable: the stretches of runs of at most AS_EB_CHUNK lookups go to bwd_runs_soft, the
 * longer runs to bwd_long_soft. A run of more than AS_EB_CHUNK lookups holds a position p
 * that is a multiple of AS_EB_CHUNK (and p + 1), so probing the run around every such p
 * finds them all; between long runs, and on shards without any, that costs one probe per
 * AS_EB_CHUNK lookups. acc holds 2*round16(D) floats, the run's sum and a chunk's sum. */
__attribute__((noinline)) static void bwd_split_soft(uint16_t *Wt, const float *gt, int64_t sumD, int64_t D,
                                                     const uint64_t *keys, int64_t r0, int64_t r1, int64_t n,
                                                     float lr, float *acc)
{
    int64_t a = r0;   /* the next stretch of short runs starts here */
    for (int64_t p = (r0 + AS_EB_CHUNK - 1) / AS_EB_CHUNK * AS_EB_CHUNK; p < n; p += AS_EB_CHUNK) {
        if (p < a) continue;   /* inside the long run just done */
        const int64_t row = KEY_ROW(keys[p]);
        int64_t i = p, j = p + 1;
        while (i > r0 && KEY_ROW(keys[i - 1]) == row) i--;   /* r0 starts a run: no run crosses it */
        if (i >= r1) break;   /* this run and all later ones belong to the next thread */
        while (j < n && KEY_ROW(keys[j]) == row) j++;
        if (j - i <= AS_EB_CHUNK) continue;
        if (a < i) bwd_runs_soft(Wt, gt, sumD, D, keys, a, i, n, lr, acc);
        bwd_long_soft(Wt, gt, sumD, D, keys, i, j, n, lr, acc, acc + ((D + 15) & ~(int64_t)15));
        a = j;
    }
    if (a < r1) bwd_runs_soft(Wt, gt, sumD, D, keys, a, r1, n, lr, acc);
}

/* first run start at or after x (x itself when it starts a run) */
static int64_t run_start_at(const uint64_t *keys, int64_t x, int64_t n)
{
    if (x <= 0) return 0;
    while (x < n && KEY_ROW(keys[x]) == KEY_ROW(keys[x - 1])) x++;
    return x;
}

/* tables the workspace was not sized for (misuse) take the slow but exact reference path
 * here; 1 when any table is left for the fast path */
static int bwd_ref_unsized(uint16_t *W, const float *grad, const as_eb_shard *s, float lr, const as_eb_cpu_ws *ws)
{
    const int32_t T = s->T;
    const int64_t B = s->B;
    int any_fast = 0;
    for (int32_t t = 0; t < T; t++) {
        if (!ws || table_lookups(s, t) > ws->cap_n || s->dims[t] > ws->cap_D || B > (int64_t)UINT32_MAX)
            bwd_ref_table(W, grad, s, lr, t);
        else any_fast = 1;
    }
    return any_fast;
}

/* keys (row << 32 | bag) of one table's lookups [c0, c1) into src: find the bag of c0
 * (first b with off[b+1] > base+c0), then walk the bags */
static inline void bwd_keys(uint64_t *src, const int64_t *off, const int32_t *idx, int64_t B, int64_t c0, int64_t c1)
{
    const int64_t base = off[0];
    if (c0 < c1) {
        int64_t lo = 0, hi = B - 1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (off[mid + 1] - base > c0) hi = mid; else lo = mid + 1;
        }
        int64_t b = lo;
        for (int64_t p = c0; p < c1; p++) {
            while (off[b + 1] - base <= p) b++;
            src[p] = ((uint64_t)(uint32_t)idx[p] << 32) | (uint64_t)b;
        }
    }
}

/* LSD radix sort on the row bits only, by all nth threads of the team together (each with
 * its chunk [c0, c1) and its histogram hist), ping-ponging between ws->keys[0] and [1]; the
 * buffer that holds the sorted keys */
static inline uint64_t *bwd_sort(as_eb_cpu_ws *ws, int64_t *hist, int64_t E, int64_t c0, int64_t c1, int nth)
{
    uint64_t *src = ws->keys[0], *dst = ws->keys[1];
    int nbits = 0;
    while (nbits < 31 && ((int64_t)1 << nbits) < E) nbits++;   /* ceil(log2 E); rows < 2^31 */
    const int passes = (nbits + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
    const int dbits = passes ? (nbits + passes - 1) / passes : 0;
    const int64_t nbuck = (int64_t)1 << dbits;
    const uint64_t mask = (uint64_t)nbuck - 1;
    if (passes == 0) {
#pragma omp barrier
    }
    for (int pass = 0; pass < passes; pass++) {
        const int shift = 32 + pass * dbits;
        for (int64_t d = 0; d < nbuck; d++) hist[d] = 0;
        for (int64_t p = c0; p < c1; p++) hist[(src[p] >> shift) & mask]++;
#pragma omp barrier
#pragma omp single
        {
            int64_t pos = 0;
            for (int64_t d = 0; d < nbuck; d++)
                for (int th = 0; th < nth; th++) {
                    int64_t *h = ws->hist + (size_t)th * HIST_STRIDE + d;
                    int64_t c = *h;
                    *h = pos;
                    pos += c;
                }
        }   /* implicit barrier */
        for (int64_t p = c0; p < c1; p++) {
            const uint64_t key = src[p];
            dst[hist[(key >> shift) & mask]++] = key;
        }
#pragma omp barrier
        uint64_t *tmp = src; src = dst; dst = tmp;
    }
    return src;
}

void as_eb_backward_sgd_cpu(uint16_t *W, const float *grad, const as_eb_shard *s, float lr,
                            as_eb_cpu_ws *ws, int nthreads)
{
    const int32_t T = s->T;
    const int64_t B = s->B, sumD = s->d_off[T];
    if (T == 0 || B == 0) return;
    if (!bwd_ref_unsized(W, grad, s, lr, ws)) return;
    const int hw = use_f16c();
    const as_eb_opt sgd = { .kind = AS_EB_SGD, .lr = lr };
    int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
    if (nt > ws->cap_thr) nt = ws->cap_thr;

#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t *hist = ws->hist + (size_t)tid * HIST_STRIDE;
        float *acc = ws->acc + (size_t)tid * (size_t)ws->acc_stride;
        for (int32_t t = 0; t < T; t++) {
            const int64_t n = table_lookups(s, t), D = s->dims[t], E = s->rows[t];
            if (n == 0 || n > ws->cap_n || D > ws->cap_D) continue;   /* same in every thread */
            const int64_t *off = s->offsets + (int64_t)t * B;
            const int32_t *idx = s->indices + off[0];
            const int64_t c0 = n * tid / nth, c1 = n * (tid + 1) / nth;

            bwd_keys(ws->keys[0], off, idx, B, c0, c1);
            uint64_t *src = bwd_sort(ws, hist, E, c0, c1, nth);

            /* runs starting in this thread's chunk */
            const int64_t r0 = run_start_at(src, c0, n), r1 = run_start_at(src, c1, n);
            uint16_t *Wt = W + s->w_off[t];
            const float *gt = grad + s->d_off[t];
#ifdef AS_EB_X86
            if (hw) {   /* the typed path's fp16 + SGD: the same arithmetic */
                const tctx x = { Wt, NULL, gt, src, &sgd, acc, sumD, D, E, n };
                truns_f16_sgd(&x, r0, r1);
            } else
#else
            (void)hw;
#endif
            bwd_split_soft(Wt, gt, sumD, D, src, r0, r1, n, lr, acc);
#pragma omp barrier
        }
    }
}

/* ---- weight types and optimizers (ebopt.h's rules, bit for bit its reference) ---------- */

static int all_fp16(const as_eb_shard *s, const uint8_t *dtype)
{
    for (int32_t t = 0; dtype && t < s->T; t++)
        if (dtype[t] != AS_EB_F16) return 0;
    return 1;
}

/* one bag of a fp32 or bf16 table, portable */
static void fwd_bag_typed(float *o, const uint16_t *Wt, as_eb_dtype d, int64_t D, const int32_t *idx, int64_t n)
{
    for (int64_t j = 0; j < D; j++) o[j] = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const int64_t e0 = (int64_t)idx[i] * D;
        if (d == AS_EB_F32) {
            const float *row = (const float *)Wt + e0;
            for (int64_t j = 0; j < D; j++) o[j] += row[j];
        } else
            for (int64_t j = 0; j < D; j++) o[j] += as_bf16_to_float_soft(Wt[e0 + j]);
    }
}

#ifdef AS_EB_X86
/* columns [c0, c0 + 8*nv) of one bag of a table of type d in nv ymm accumulators (the fp16
 * forward's register blocking, fwd_blk_f16c, for any type); nv and d are literals */
AS_F16C_INLINE void fwd_blk_typed(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx, int64_t n,
                                  int64_t avail, int64_t c0, const int nv, const as_eb_dtype d)
{
    __m256 acc[BLK_V];
    for (int v = 0; v < nv; v++) acc[v] = _mm256_setzero_ps();
    const int64_t units = d == AS_EB_F32 ? 2 : 1;
    const size_t pfbytes = (size_t)(D - c0) * 2 * units;
    const int64_t pf = PF_FWD(D * units);
    for (int64_t i = 0; i < n; i++) {
        if (i + pf < avail) prefetch_range(Wt + ((int64_t)idx[i + pf] * D + c0) * units, pfbytes, 0);
        const int64_t e = (int64_t)idx[i] * D + c0;
        for (int v = 0; v < nv; v++) acc[v] = _mm256_add_ps(acc[v], wld8(Wt, d, e + 8 * v));
    }
    for (int v = 0; v < nv; v++) _mm256_storeu_ps(o + c0 + 8 * v, acc[v]);
}

/* one bag of a fp32 or bf16 table (d a literal): 64 columns at a time in registers, each
 * column's sum in lookup order; the 1..7 tail columns scalar */
AS_F16C_INLINE void fwd_bag_typed_blocks(float *o, const uint16_t *Wt, const as_eb_dtype d, int64_t D, const int32_t *idx,
                                         int64_t n, int64_t avail)
{
    const int64_t D8 = D & ~(int64_t)7;
    for (int64_t c0 = 0; c0 < D8; c0 += 8 * BLK_V) {
        const int64_t nv = (D8 - c0) / 8;
        switch (nv < BLK_V ? nv : BLK_V) {
        case 1: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 1, d); break;
        case 2: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 2, d); break;
        case 3: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 3, d); break;
        case 4: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 4, d); break;
        case 5: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 5, d); break;
        case 6: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 6, d); break;
        case 7: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 7, d); break;
        default: fwd_blk_typed(o, Wt, D, idx, n, avail, c0, 8, d); break;
        }
    }
    if (D8 < D) {
        float acc[8] = { 0 };
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = D8; j < D; j++) acc[j - D8] += tw_get(Wt, d, (int64_t)idx[i] * D + j);
        for (int64_t j = D8; j < D; j++) o[j] = acc[j - D8];
    }
}

AS_F16C static void fwd_bag_f32_avx(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx, int64_t n, int64_t avail)
{
    fwd_bag_typed_blocks(o, Wt, AS_EB_F32, D, idx, n, avail);
}

AS_F16C static void fwd_bag_bf16_avx(float *o, const uint16_t *Wt, int64_t D, const int32_t *idx, int64_t n, int64_t avail)
{
    fwd_bag_typed_blocks(o, Wt, AS_EB_BF16, D, idx, n, avail);
}

#endif

void as_eb_forward_typed_cpu(float *out, const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int nthreads)
{
    if (all_fp16(s, dtype)) { as_eb_forward_cpu(out, W, s, nthreads); return; }
    const int64_t B = s->B, nbags = (int64_t)s->T * B, sumD = s->d_off[s->T];
    const int hw = use_f16c();
    const int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16)
    for (int64_t k = 0; k < nbags; k++) {
        const int64_t t = k / B, b = k - t * B, D = s->dims[t];
        const as_eb_dtype d = (as_eb_dtype)dtype[t];
        const uint16_t *Wt = W + s->w_off[t];
        float *o = out + b * sumD + s->d_off[t];
        const int64_t p0 = s->offsets[k], n = s->offsets[k + 1] - p0, avail = s->offsets[(t + 1) * B] - p0;
        const int32_t *idx = s->indices + p0;
#ifdef AS_EB_X86
        if (hw) {
            if (d == AS_EB_F16) fwd_bag_f16c(o, Wt, D, idx, n, avail);
            else if (d == AS_EB_F32) fwd_bag_f32_avx(o, Wt, D, idx, n, avail);
            else fwd_bag_bf16_avx(o, Wt, D, idx, n, avail);
            continue;
        }
#else
        (void)hw;
#endif
        if (d != AS_EB_F16) fwd_bag_typed(o, Wt, d, D, idx, n);
        else fwd_bag_soft(o, Wt, D, idx, n, avail);
    }
}

float as_eb_row_sumsq(const float *G, int64_t D)
{
    float p[32], x[32];
    for (int l = 0; l < 32; l++) {
        p[l] = 0.0f;
        for (int64_t j = l; j < D; j += 32) p[l] += G[j] * G[j];
    }
    for (int o = 16; o >= 1; o /= 2) {
        for (int l = 0; l < 32; l++) x[l] = p[l] + p[l ^ o];
        memcpy(p, x, sizeof p);
    }
    return p[0];
}

/* the step of every weight of a row from its summed gradient G into u (ebopt.h's rules, the
 * optimizer's state St updated): SGD lr * G; row-wise Adagrad m * G; Adam its quotient */
static void row_step(float *u, float *St, const float *G, int64_t D, int64_t E, int64_t row, const as_eb_opt *o)
{
    const int64_t e0 = row * D;
    switch (o->kind) {
    case AS_EB_ROWWISE_ADAGRAD: {
        const float q = as_eb_row_sumsq(G, D);
        St[row] = St[row] + q / (float)D;
        const float m = o->lr / (sqrtf(St[row]) + o->eps);
        for (int64_t j = 0; j < D; j++) u[j] = opt_step(o, m, G[j], NULL, NULL);
        break;
    }
    case AS_EB_ADAM: {
        float *m1 = St + e0, *m2 = St + E * D + e0;
        for (int64_t j = 0; j < D; j++) u[j] = opt_step(o, 0.0f, G[j], m1 + j, m2 + j);
        break;
    }
    default:
        for (int64_t j = 0; j < D; j++) u[j] = opt_step(o, 0.0f, G[j], NULL, NULL);
    }
}

/* the runs starting in keys[r0..r1) (a run may extend past r1), portable: each row's G in
 * the canonical order (chunks of AS_EB_CHUNK from 0.0f in part, their sums added left to
 * right in acc), then its step (into part) and the row updated */
static void bwd_runs_typed(uint16_t *Wt, float *St, const float *gt, int64_t sumD, int64_t D, int64_t E, as_eb_dtype d,
                           const as_eb_opt *o, const uint64_t *keys, int64_t r0, int64_t r1, int64_t n, float *acc,
                           float *part)
{
    int64_t i = r0;
    while (i < r1) {
        const int64_t row = KEY_ROW(keys[i]);
        int64_t k = i, m = 0, chunks = 0;
        for (; k < n && KEY_ROW(keys[k]) == row; k++) {
            if (k + PF_DIST < n) prefetch_range(gt + KEY_BAG(keys[k + PF_DIST]) * sumD, (size_t)D * 4, 0);
            if (m == 0) for (int64_t j = 0; j < D; j++) part[j] = 0.0f;
            const float *g = gt + KEY_BAG(keys[k]) * sumD;
            for (int64_t j = 0; j < D; j++) part[j] += g[j];
            if (++m == AS_EB_CHUNK) {
                for (int64_t j = 0; j < D; j++) acc[j] = chunks ? acc[j] + part[j] : part[j];
                chunks++;
                m = 0;
            }
        }
        if (m) for (int64_t j = 0; j < D; j++) acc[j] = chunks ? acc[j] + part[j] : part[j];
        row_step(part, St, acc, D, E, row, o);
        uint16_t *w = Wt + (d == AS_EB_F32 ? 2 : 1) * row * D;
        if (d == AS_EB_F32)
            for (int64_t j = 0; j < D; j++) ((float *)w)[j] -= part[j];
        else for (int64_t j = 0; j < D; j++) tw_set(w, d, j, tw_get(w, d, j) - part[j]);
        i = k;
    }
}

int as_eb_backward_typed_cpu(uint16_t *W, float *S, const float *grad, const as_eb_shard *s, const uint8_t *dtype,
                             const int64_t *st_off, const as_eb_opt *o, as_eb_cpu_ws *ws, int nthreads)
{
    const int32_t T = s->T;
    const int64_t B = s->B, sumD = s->d_off[T];
    if (T == 0 || B == 0) return 0;
    if (all_fp16(s, dtype) && o->kind == AS_EB_SGD) {
        as_eb_backward_sgd_cpu(W, grad, s, o->lr, ws, nthreads);
        return 0;
    }
    /* a workspace that does not fit the shard: one of its own for this call */
    as_eb_cpu_ws *own = NULL;
    int fits = ws != NULL && B <= (int64_t)UINT32_MAX;
    for (int32_t t = 0; fits && t < T; t++) fits = table_lookups(s, t) <= ws->cap_n && s->dims[t] <= ws->cap_D;
    if (!fits && !(ws = own = as_eb_cpu_ws_new(s))) return -1;
    int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
    if (nt > ws->cap_thr) nt = ws->cap_thr;
    const int hw = use_f16c();
    (void)hw;   /* no SIMD path off x86 */
#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t *hist = ws->hist + (size_t)tid * HIST_STRIDE;
        float *acc = ws->acc + (size_t)tid * (size_t)ws->acc_stride;
        for (int32_t t = 0; t < T; t++) {
            const int64_t n = table_lookups(s, t), D = s->dims[t], E = s->rows[t];
            if (n == 0) continue;   /* same in every thread */
            const int64_t *off = s->offsets + (int64_t)t * B;
            const int64_t c0 = n * tid / nth, c1 = n * (tid + 1) / nth;
            bwd_keys(ws->keys[0], off, s->indices + off[0], B, c0, c1);
            uint64_t *src = bwd_sort(ws, hist, E, c0, c1, nth);
            const int64_t r0 = run_start_at(src, c0, n), r1 = run_start_at(src, c1, n);
            const as_eb_dtype d = dtype ? (as_eb_dtype)dtype[t] : AS_EB_F16;
            float *St = S && st_off ? S + st_off[t] : NULL;
#ifdef AS_EB_X86
            if (hw) {
                for (int64_t c = D; c < ((D + 7) & ~(int64_t)7); c++) acc[c] = 0.0f;   /* tsumsq reads them */
                const tctx x = { W + s->w_off[t], St, grad + s->d_off[t], src, o, acc, sumD, D, E, n };
                truns_table[d][o->kind](&x, r0, r1);
            } else
#endif
            bwd_runs_typed(W + s->w_off[t], St, grad + s->d_off[t], sumD, D, E, d, o, src, r0, r1, n, acc,
                           acc + ((D + 15) & ~(int64_t)15));
#pragma omp barrier
        }
    }
    as_eb_cpu_ws_free(own);
    return 0;
}

/* ---- CUDA stubs ----------------------------------------------------------------------- */

#ifndef AS_HAVE_CUDA
size_t as_eb_gpu_bytes_needed(const as_eb_shard *s) { (void)s; return 0; }

int as_eb_gpu_create(as_eb_gpu **g, const as_eb_shard *s, const uint16_t *W, const float *grad,
                     int device, char *err, size_t errlen)
{
    (void)s; (void)W; (void)grad; (void)device;
    if (g) *g = NULL;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_forward(as_eb_gpu *g, float *ms, char *err, size_t errlen)
{
    (void)g;
    if (ms) *ms = 0;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_backward_sgd(as_eb_gpu *g, float lr, float *ms, char *err, size_t errlen)
{
    (void)g; (void)lr;
    if (ms) *ms = 0;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_flush_cache(as_eb_gpu *g, char *err, size_t errlen)
{
    (void)g;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_download(as_eb_gpu *g, float *out, uint16_t *W, char *err, size_t errlen)
{
    (void)g; (void)out; (void)W;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_download_inputs(as_eb_gpu *g, int64_t *offsets, int32_t *indices, float *grad, char *err,
                              size_t errlen)
{
    (void)g; (void)offsets; (void)indices; (void)grad;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_info(as_eb_gpu *g, char *name, size_t namelen, int *sm_clock_mhz, double *copy_gbps)
{
    (void)g;
    if (name && namelen) snprintf(name, namelen, "none (built without CUDA)");
    if (sm_clock_mhz) *sm_clock_mhz = 0;
    if (copy_gbps) *copy_gbps = 0;
    return -1;
}

void as_eb_gpu_destroy(as_eb_gpu *g) { (void)g; }

int as_eb_gpu_set_typed(as_eb_gpu *g, const as_eb_shard *s, const uint8_t *dtype, const as_eb_opt *o,
                        const int64_t *st_off, const float *S, char *err, size_t errlen)
{
    (void)g; (void)s; (void)dtype; (void)o; (void)st_off; (void)S;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_download_state(as_eb_gpu *g, float *S, char *err, size_t errlen)
{
    (void)g; (void)S;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_measure(as_eb_gpu *g, int warmup, int runs, float lr, double *fwd_ms, double *bwd_ms,
                      double *busy_ms, char *err, size_t errlen)
{
    (void)g; (void)warmup; (void)runs; (void)lr; (void)fwd_ms; (void)bwd_ms;
    if (busy_ms) *busy_ms = 0;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_measure_start(as_eb_gpu *g, int warmup, int runs, float lr, char *err, size_t errlen)
{
    (void)g; (void)warmup; (void)runs; (void)lr;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_measure_end(as_eb_gpu *g, double *fwd_ms, double *bwd_ms, double *busy_ms, char *err, size_t errlen)
{
    (void)g; (void)fwd_ms; (void)bwd_ms;
    if (busy_ms) *busy_ms = 0;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

void as_eb_gpu_overhead(const as_eb_gpu *g, double *setup_ms, double *flush_ms)
{
    (void)g;
    if (setup_ms) *setup_ms = 0;
    if (flush_ms) *flush_ms = 0;
}

int as_eb_gpu_ctx_create(as_eb_gpu_ctx **ctx, int device, const as_eb_table *tabs, int64_t ntab, int resident,
                         char *err, size_t errlen)
{
    (void)device; (void)tabs; (void)ntab; (void)resident;
    if (ctx) *ctx = NULL;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

int as_eb_gpu_ctx_resident(const as_eb_gpu_ctx *ctx) { (void)ctx; return 0; }

int as_eb_gpu_ctx_shard(as_eb_gpu_ctx *ctx, const int64_t *pos, int32_t T, uint64_t seed, as_eb_gpu **g,
                        char *err, size_t errlen)
{
    (void)ctx; (void)pos; (void)T; (void)seed;
    if (g) *g = NULL;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}

void as_eb_gpu_ctx_stats(const as_eb_gpu_ctx *ctx, size_t *bytes, int64_t *grows, int64_t *shards)
{
    (void)ctx;
    if (bytes) *bytes = 0;
    if (grows) *grows = 0;
    if (shards) *shards = 0;
}

void as_eb_gpu_ctx_destroy(as_eb_gpu_ctx *ctx) { (void)ctx; }

int as_eb_gpu_ctx_set_kind(as_eb_gpu_ctx *ctx, const uint8_t *dtype, const as_eb_opt *o, char *err, size_t errlen)
{
    (void)ctx; (void)dtype; (void)o;
    as_errbuf(err, errlen, "built without CUDA");
    return -1;
}
#endif
