/* test_embbag.c - the CPU embedding-bag op (fp16 conversion: test_half.c): fast forward and backward + SGD
 * against the naive references bit for bit (uniform and skewed indices, empty bags, one-row
 * tables, dims that are not multiples of 8, mixed dims, 1 and 2 threads, portable and F16C
 * paths, 1-3 radix passes), the backward's chunked summation order (a hot row of ~5,900
 * lookups, runs of exactly 1, C-1, C, C+1, 2C, 2C+1 and 3C+7 lookups for C = AS_EB_CHUNK)
 * against an oracle written out in the test, with data that tells that order apart from
 * the plain sum and from chunks of C-1 and C+1, a hand-computed case, a finite-difference
 * gradient check, padded and permuted weight layouts (same results as packed, padding
 * untouched), and validation messages (overlapping and out-of-range layouts refused).
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. */
#include "unit.h"
#include "embbag.h"
#include "half.h"
#include "common.h"
#include "shardgen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* test hook exported by lib/kernels/embbag.c (not in embbag.h) */
int as_eb_cpu_simd(int mode);

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* ---- synthetic shards ----------------------------------------------------------------- */

enum { DIST_UNIFORM, DIST_HOT, DIST_POW };

typedef tsup_shard tshard;   /* tests/support/shardgen.h */

/* pooling uniform in [0, maxL]; empty_pct% of bags forced empty */
static void ts_make(tshard *x, int T, int64_t B, const int32_t *dims, const int64_t *rows,
                    int maxL, int empty_pct, int dist, uint64_t seed)
{
    as_rng r;
    as_rng_seed(&r, seed, 0);
    CHECK(tsup_shard_layout(x, T, B, rows, 0, dims, 0) == 0);
    for (int64_t k = 0; k < T * B; k++) {
        int64_t L = (int64_t)as_rng_below(&r, 100) < empty_pct ? 0 : (int64_t)as_rng_below(&r, (uint64_t)maxL + 1);
        x->offsets[k + 1] = x->offsets[k] + L;
    }
    CHECK(tsup_shard_data(x, T, B) == 0);
    for (int64_t k = 0; k < T * B; k++) {
        int64_t E = rows[k / B];
        for (int64_t p = x->offsets[k]; p < x->offsets[k + 1]; p++) {
            int64_t v;
            if (dist == DIST_HOT) v = as_rng_below(&r, 10) < 8 ? E / 2 : (int64_t)as_rng_below(&r, (uint64_t)E);
            else if (dist == DIST_POW) v = (int64_t)(E * pow(as_rng_uniform(&r), 4.0));
            else v = (int64_t)as_rng_below(&r, (uint64_t)E);
            x->indices[p] = (int32_t)(v < E ? v : E - 1);
        }
    }
    for (int64_t i = 0; i < x->nW; i++) {   /* random sign, exponent 2^-5 .. 2^2, mantissa */
        uint64_t u = as_rng_next(&r);
        x->W[i] = (uint16_t)((u & 0x83ffu) | ((10 + (u >> 32) % 8) << 10));
    }
    for (int64_t i = 0; i < B * x->sumD; i++) x->grad[i] = (float)(as_rng_uniform(&r) * 2 - 1);
}

static void ts_free(tshard *x) { tsup_shard_free(x); }

/* bitwise comparison, reporting the first difference */
static int same_f32(const float *a, const float *b, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (fbits(a[i]) != fbits(b[i])) {
            fprintf(stderr, "  %s: first difference at %lld: %a vs %a\n", what, (long long)i, (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

static int same_f16(const uint16_t *a, const uint16_t *b, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "  %s: first difference at %lld: %04x vs %04x\n", what, (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* fast forward and backward against the references, threads 1 and 2, F16C and portable */
static void check_against_ref(tshard *x, const char *name)
{
    char err[256];
    if (!CHECK(as_eb_validate(&x->s, err, sizeof err) == 0)) fprintf(stderr, "  %s: %s\n", name, err);
    const int64_t nout = x->s.B * x->sumD;
    float *ref = malloc(sizeof(float) * (size_t)(nout + 1));
    float *out = malloc(sizeof(float) * (size_t)(nout + 1));
    uint16_t *Wref = malloc(2 * (size_t)(x->nW + 1)), *Wf = malloc(2 * (size_t)(x->nW + 1));
    as_eb_forward_ref(ref, x->W, &x->s);
    memcpy(Wref, x->W, 2 * (size_t)x->nW);
    as_eb_backward_sgd_ref(Wref, x->grad, &x->s, 0.25f);
    CHECK(memcmp(Wref, x->W, 2 * (size_t)x->nW) != 0 || x->nidx == 0);   /* it did something */
    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&x->s);
    CHECK(ws != NULL);
    int simd_modes[2] = { 1, 0 };
    for (int m = 0; m < 2; m++) {
        as_eb_cpu_simd(simd_modes[m]);
        for (int nt = 1; nt <= 2; nt++) {
            char what[160];
            snprintf(what, sizeof what, "%s forward simd=%d threads=%d", name, as_eb_cpu_simd(-1), nt);
            for (int64_t i = 0; i < nout; i++) out[i] = NAN;
            as_eb_forward_cpu(out, x->W, &x->s, nt);
            CHECK(same_f32(out, ref, nout, what));
            snprintf(what, sizeof what, "%s backward simd=%d threads=%d", name, as_eb_cpu_simd(-1), nt);
            memcpy(Wf, x->W, 2 * (size_t)x->nW);
            as_eb_backward_sgd_cpu(Wf, x->grad, &x->s, 0.25f, ws, nt);
            CHECK(same_f16(Wf, Wref, x->nW, what));
        }
    }
    as_eb_cpu_simd(1);
    as_eb_cpu_ws_free(ws);
    free(ref); free(out); free(Wref); free(Wf);
}

TEST(eb_fast_matches_ref_uniform)
{
    tshard x;
    ts_make(&x, 1, 64, (const int32_t[]){ 16 }, (const int64_t[]){ 1000 }, 20, 0, DIST_UNIFORM, 1);
    check_against_ref(&x, "uniform D16");
    ts_free(&x);
    ts_make(&x, 2, 48, (const int32_t[]){ 32, 128 }, (const int64_t[]){ 5000, 300 }, 25, 5, DIST_UNIFORM, 2);
    check_against_ref(&x, "uniform D32+D128");
    ts_free(&x);
}

TEST(eb_fast_matches_ref_skewed)
{
    tshard x;
    ts_make(&x, 3, 64, (const int32_t[]){ 1, 3, 17 }, (const int64_t[]){ 100, 50, 1000 }, 30, 10, DIST_HOT, 3);
    check_against_ref(&x, "hot row D1/3/17");
    ts_free(&x);
    ts_make(&x, 2, 64, (const int32_t[]){ 33, 64 }, (const int64_t[]){ 20000, 4096 }, 30, 10, DIST_POW, 4);
    check_against_ref(&x, "power law D33/64");
    ts_free(&x);
}

TEST(eb_fast_matches_ref_edge_shapes)
{
    tshard x;
    /* many empty bags, one-row tables, mixed dims incl. multi-block with and without tails */
    ts_make(&x, 5, 40, (const int32_t[]){ 33, 8, 72, 1, 203 }, (const int64_t[]){ 7, 1, 300, 1, 90 },
            12, 50, DIST_UNIFORM, 5);
    check_against_ref(&x, "edge shapes");
    ts_free(&x);
    /* a single bag of a single one-row table */
    ts_make(&x, 1, 1, (const int32_t[]){ 5 }, (const int64_t[]){ 1 }, 9, 0, DIST_UNIFORM, 6);
    check_against_ref(&x, "one bag one row");
    ts_free(&x);
    /* every bag empty */
    ts_make(&x, 2, 16, (const int32_t[]){ 4, 9 }, (const int64_t[]){ 3, 3 }, 5, 100, DIST_UNIFORM, 7);
    check_against_ref(&x, "all empty");
    ts_free(&x);
    /* big tables: 23 and 12 row bits (3 and 2 radix passes); D 200 = 25 vectors */
    ts_make(&x, 2, 128, (const int32_t[]){ 1, 200 }, (const int64_t[]){ 5000000, 2500 }, 24, 5, DIST_POW, 8);
    check_against_ref(&x, "radix passes");
    ts_free(&x);
}

/* ---- the chunked summation order of the backward (embbag.h, AS_EB_CHUNK) ---------------- */

/* the backward written out plainly, independent of lib/kernels/embbag.c: per table, per row, the
 * row's lookups in ascending lookup order; per column P = 0.0f + g + g ... over each chunk
 * of `chunk` lookups, G = P_0, G += P_1, ...; W = half(float(W) - lr*G) with lr*G rounded
 * to fp32 first. chunk = INT64_MAX gives the plain sequential sum. */
static void oracle_backward(uint16_t *W, const float *grad, const as_eb_shard *s, float lr, int64_t chunk)
{
    const int64_t B = s->B, sumD = s->d_off[s->T];
    for (int32_t t = 0; t < s->T; t++) {
        const int64_t E = s->rows[t], D = s->dims[t];
        const int64_t p0 = s->offsets[(int64_t)t * B], p1 = s->offsets[(int64_t)(t + 1) * B], n = p1 - p0;
        int64_t *bag = malloc(sizeof(int64_t) * (size_t)(n + 1));      /* bag of each lookup */
        int64_t *first = calloc((size_t)E + 1, sizeof(int64_t));       /* counting sort by row */
        int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1));
        for (int64_t b = 0; b < B; b++)
            for (int64_t p = s->offsets[t * B + b]; p < s->offsets[t * B + b + 1]; p++) bag[p - p0] = b;
        for (int64_t p = 0; p < n; p++) first[s->indices[p0 + p] + 1]++;
        for (int64_t r = 0; r < E; r++) first[r + 1] += first[r];
        int64_t *fill = malloc(sizeof(int64_t) * (size_t)(E + 1));
        memcpy(fill, first, sizeof(int64_t) * (size_t)(E + 1));
        for (int64_t p = 0; p < n; p++) order[fill[s->indices[p0 + p]]++] = p;   /* ascending p */
        for (int64_t r = 0; r < E; r++) {
            const int64_t *lk = order + first[r], cnt = first[r + 1] - first[r];
            if (cnt == 0) continue;
            for (int64_t j = 0; j < D; j++) {
                float G = 0.0f;
                for (int64_t k0 = 0; k0 < cnt;) {
                    const int64_t e = cnt - k0 > chunk ? k0 + chunk : cnt;
                    float P = 0.0f;
                    for (int64_t k = k0; k < e; k++) P += grad[bag[lk[k]] * sumD + s->d_off[t] + j];
                    G = k0 == 0 ? P : G + P;
                    k0 = e;
                }
                uint16_t *w = W + s->w_off[t] + r * D + j;
                volatile float u = lr * G;
                *w = as_float_to_half(as_half_to_float(*w) - u);
            }
        }
        free(bag); free(first); free(order); free(fill);
    }
}

/* the reference and the fast path (F16C and portable, 1 and 2 threads) against the oracle
 * at AS_EB_CHUNK, bit for bit; and the data must tell that order apart from the plain sum
 * and from chunks of AS_EB_CHUNK -+ 1 (else this test could not see a wrong order) */
static void check_chunked(tshard *x, float lr, const char *name)
{
    char err[256];
    if (!CHECK(as_eb_validate(&x->s, err, sizeof err) == 0)) fprintf(stderr, "  %s: %s\n", name, err);
    const size_t wb = 2 * (size_t)(x->nW + 1);
    uint16_t *Wref = malloc(wb), *Wf = malloc(wb), *Wo = malloc(wb);
    memcpy(Wref, x->W, wb);
    as_eb_backward_sgd_ref(Wref, x->grad, &x->s, lr);
    memcpy(Wo, x->W, wb);
    oracle_backward(Wo, x->grad, &x->s, lr, AS_EB_CHUNK);
    char what[160];
    snprintf(what, sizeof what, "%s: reference vs the chunked order written out", name);
    CHECK(same_f16(Wref, Wo, x->nW, what));
    const int64_t other[3] = { INT64_MAX, AS_EB_CHUNK - 1, AS_EB_CHUNK + 1 };
    for (int k = 0; k < 3; k++) {
        memcpy(Wo, x->W, wb);
        oracle_backward(Wo, x->grad, &x->s, lr, other[k]);
        if (!CHECK(memcmp(Wo, Wref, 2 * (size_t)x->nW) != 0))
            fprintf(stderr, "  %s: chunks of %lld give the same weights as %d\n", name, (long long)other[k],
                    AS_EB_CHUNK);
    }
    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&x->s);
    CHECK(ws != NULL);
    for (int m = 1; m >= 0; m--) {
        as_eb_cpu_simd(m);
        for (int nt = 1; nt <= 2; nt++) {
            snprintf(what, sizeof what, "%s: fast simd=%d threads=%d vs reference", name, as_eb_cpu_simd(-1), nt);
            memcpy(Wf, x->W, wb);
            as_eb_backward_sgd_cpu(Wf, x->grad, &x->s, lr, ws, nt);
            CHECK(same_f16(Wf, Wref, x->nW, what));
        }
    }
    as_eb_cpu_simd(1);
    as_eb_cpu_ws_free(ws);
    free(Wref); free(Wf); free(Wo);
}

TEST(eb_chunked_order_hot_row)
{
    /* table 0: row 5 takes ~80% of ~7,200 lookups (a run of ~10 chunks), D 72 = a 64-column
     * block, an 8-column block and no tail; table 1: 9 rows of ~800 lookups (2-chunk runs),
     * D 19 = two vectors and a 3-column tail */
    tshard x;
    const int64_t B = 900, hot = 5;
    ts_make(&x, 2, B, (const int32_t[]){ 72, 19 }, (const int64_t[]){ 40, 9 }, 16, 0, DIST_UNIFORM, 21);
    as_rng r;
    as_rng_seed(&r, 22, 0);
    const int64_t *o = x.offsets;
    int64_t nhot = 0, bf = -1, bl = -1;
    for (int64_t p = 0; p < o[B]; p++) {
        x.indices[p] = as_rng_below(&r, 10) < 8 ? (int32_t)hot : (int32_t)(hot + 1 + as_rng_below(&r, 39)) % 40;
        nhot += x.indices[p] == hot;
    }
    /* the first and last bags holding the hot row hold it once; their gradients in table 0
     * are +2^24 and -2^24: the plain sum absorbs every other gradient of the row into 2^24
     * and then cancels to 0, the chunked sum keeps the later chunks' gradients */
    for (int64_t b = 0; b < B; b++)
        for (int64_t p = o[b]; p < o[b + 1]; p++)
            if (x.indices[p] == hot) {
                if (bf < 0) bf = b;
                bl = b;
            }
    CHECK(bf >= 0 && bl > bf);
    const int64_t ends[2] = { bf, bl };
    for (int e = 0; e < 2; e++) {
        int seen = 0;
        for (int64_t p = o[ends[e]]; p < o[ends[e] + 1]; p++)
            if (x.indices[p] == hot && seen++) {
                x.indices[p] = (int32_t)hot + 1;
                nhot--;
            }
        for (int64_t j = 0; j < 72; j++) x.grad[ends[e] * x.sumD + j] = e ? -0x1p24f : 0x1p24f;
    }
    CHECK(nhot > 10 * AS_EB_CHUNK - 200);
    fprintf(stderr, "  hot row: %lld lookups\n", (long long)nhot);
    check_chunked(&x, 0x1p-10f, "hot row");
    ts_free(&x);
}

TEST(eb_chunked_order_run_lengths)
{
    /* rows hit exactly 1, C-1, C, C+1, 2C, 2C+1, 3C+7 and 2 times (C = AS_EB_CHUNK), one
     * lookup per bag, in shuffled order; D 24 (vectors only) and D 5 (tail only). Each row's
     * gradients climb to +64 per lookup for its first half and -64 for its second, plus
     * noise: partial sums reach ~64*n/2 while G is ~1, so rounding differences between
     * summation orders show in the fp16 weights (lr 1) */
    const int64_t C = AS_EB_CHUNK;
    const int64_t len[8] = { 1, C - 1, C, C + 1, 2 * C, 2 * C + 1, 3 * C + 7, 2 };
    int64_t N = 0;
    for (int i = 0; i < 8; i++) N += len[i];
    tshard x;
    ts_make(&x, 2, N, (const int32_t[]){ 24, 5 }, (const int64_t[]){ 8, 8 }, 1, 0, DIST_UNIFORM, 23);
    /* one lookup per bag: rebuild offsets and indices */
    free(x.indices);
    x.nidx = 2 * N;
    x.indices = malloc(sizeof(int32_t) * (size_t)(x.nidx + 1));
    for (int64_t k = 0; k <= 2 * N; k++) x.offsets[k] = k;
    x.s.offsets = x.offsets;
    x.s.indices = x.indices;
    as_rng r;
    as_rng_seed(&r, 24, 0);
    for (int t = 0; t < 2; t++) {
        int32_t *idx = x.indices + t * N;
        int64_t p = 0;
        for (int i = 0; i < 8; i++)
            for (int64_t k = 0; k < len[i]; k++) idx[p++] = i;
        for (int64_t i = N - 1; i > 0; i--) {   /* Fisher-Yates */
            int64_t j = (int64_t)as_rng_below(&r, (uint64_t)i + 1);
            int32_t tmp = idx[i]; idx[i] = idx[j]; idx[j] = tmp;
        }
        int64_t seen[8] = { 0 };
        for (int64_t b = 0; b < N; b++) {
            const int32_t row = idx[b];
            const float sign = 2 * seen[row]++ < len[row] ? 64.0f : -64.0f;
            for (int64_t j = 0; j < x.dims[t]; j++)
                x.grad[b * x.sumD + x.d_off[t] + j] = sign + (float)(as_rng_uniform(&r) - 0.5) * 0.25f;
        }
    }
    check_chunked(&x, 1.0f, "run lengths");
    ts_free(&x);
}

/* ---- hand-computed case --------------------------------------------------------------- */

TEST(eb_hand_computed)
{
    /* table 0: E=3, D=2; table 1: E=2, D=3; B=2; sumD=5 */
    const int64_t rows[2] = { 3, 2 };
    const int32_t dims[2] = { 2, 3 };
    const int64_t w_off[3] = { 0, 6, 12 };
    const int32_t d_off[3] = { 0, 2, 5 };
    /* bags: (0,0)=[0,2] (0,1)=[1,1,2] (1,0)=[] (1,1)=[1,0] */
    const int64_t offsets[5] = { 0, 2, 5, 5, 7 };
    const int32_t indices[7] = { 0, 2, 1, 1, 2, 1, 0 };
    const float wf[12] = { 1, 2, 0.5f, -1, -2, 4,      /* table 0 rows 0..2 */
                           3, 0.25f, -0.5f, 8, 1, 2 }; /* table 1 rows 0..1 */
    uint16_t W[12], W2[12];
    for (int i = 0; i < 12; i++) W[i] = as_float_to_half(wf[i]);
    as_eb_shard s = { 2, 2, rows, dims, w_off, d_off, offsets, indices };
    char err[128];
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);
    /* out [2, 5]: b=0: (row0 + row2 of table 0), empty bag of table 1;
                   b=1: (row1 + row1 + row2 of table 0), (row1 + row0 of table 1) */
    const float want[10] = { 1 - 2, 2 + 4, 0, 0, 0,
                             0.5f + 0.5f - 2, -1 - 1 + 4, 8 + 3, 1 + 0.25f, 2 - 0.5f };
    float out[10], outr[10];
    as_eb_forward_ref(outr, W, &s);
    as_eb_forward_cpu(out, W, &s, 2);
    for (int i = 0; i < 10; i++) { CHECK(outr[i] == want[i]); CHECK(out[i] == want[i]); }

    /* grad [2, 5]; lr = 0.5 */
    const float g[10] = { 1, 2, 3, 4, 5,
                          -1, 0.5f, 6, 7, 8 };
    /* table 0: row 0 <- bag 0: G=(1,2); row 1 <- bag 1 twice: G=(-2,1); row 2 <- bags 0,1: G=(0,2.5)
       table 1: row 0 <- bag 1: G=(6,7,8); row 1 <- bag 1: G=(6,7,8) */
    const float wantW[12] = { 1 - 0.5f, 2 - 1, 0.5f + 1, -1 - 0.5f, -2 - 0, 4 - 1.25f,
                              3 - 3, 0.25f - 3.5f, -0.5f - 4, 8 - 3, 1 - 3.5f, 2 - 4 };
    memcpy(W2, W, sizeof W);
    as_eb_backward_sgd_ref(W2, g, &s, 0.5f);
    for (int i = 0; i < 12; i++) CHECK(as_half_to_float(W2[i]) == wantW[i]);
    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&s);
    memcpy(W2, W, sizeof W);
    as_eb_backward_sgd_cpu(W2, g, &s, 0.5f, ws, 2);
    for (int i = 0; i < 12; i++) CHECK(as_half_to_float(W2[i]) == wantW[i]);
    as_eb_cpu_ws_free(ws);
}

/* ---- finite differences --------------------------------------------------------------- */

/* loss = sum_{b,j} out[b,j] * g[b,j] with the forward in double on float weights */
static double fd_loss(const float *Wf, const tshard *x)
{
    double loss = 0;
    const as_eb_shard *s = &x->s;
    for (int t = 0; t < s->T; t++)
        for (int64_t b = 0; b < s->B; b++) {
            int64_t k = t * s->B + b;
            for (int64_t p = s->offsets[k]; p < s->offsets[k + 1]; p++)
                for (int j = 0; j < s->dims[t]; j++)
                    loss += (double)Wf[s->w_off[t] + (int64_t)s->indices[p] * s->dims[t] + j] *
                            x->grad[b * x->sumD + s->d_off[t] + j];
        }
    return loss;
}

TEST(eb_gradient_finite_differences)
{
    tshard x;
    ts_make(&x, 2, 32, (const int32_t[]){ 5, 12 }, (const int64_t[]){ 40, 9 }, 10, 10, DIST_HOT, 9);
    /* small weights so the fp16 update keeps G to ~11 bits: G = (W - W') / lr */
    for (int64_t i = 0; i < x.nW; i++) x.W[i] = as_float_to_half(as_half_to_float(x.W[i]) / 64);
    float *Wf = malloc(sizeof(float) * (size_t)x.nW);
    for (int64_t i = 0; i < x.nW; i++) Wf[i] = as_half_to_float(x.W[i]);
    uint16_t *W2 = malloc(2 * (size_t)x.nW);
    memcpy(W2, x.W, 2 * (size_t)x.nW);
    const float lr = 1.0f;
    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&x.s);
    as_eb_backward_sgd_cpu(W2, x.grad, &x.s, lr, ws, 2);
    as_eb_cpu_ws_free(ws);
    /* every element of the smaller tables: rows hit many times, once, and never */
    const double h = 0x1p-6;
    int checked = 0, untouched = 0;
    for (int64_t e = 0; e < x.nW; e++) {
        float keep = Wf[e];
        Wf[e] = keep + (float)h;
        double lp = fd_loss(Wf, &x);
        Wf[e] = keep - (float)h;
        double lm = fd_loss(Wf, &x);
        Wf[e] = keep;
        double fd = (lp - lm) / (2 * h);
        double G = ((double)keep - as_half_to_float(W2[e])) / lr;
        if (fd == 0) { untouched++; CHECK_EQ_I64(W2[e], x.W[e]); continue; }
        CHECK_NEAR(G, fd, 2e-3 * fmax(1.0, fabs(fd)));
        checked++;
    }
    CHECK(checked > 100);
    CHECK(untouched > 0);
    free(Wf); free(W2);
    ts_free(&x);
}

/* ---- workspace misuse falls back to the reference ------------------------------------- */

TEST(eb_backward_without_workspace)
{
    tshard x, y;
    ts_make(&x, 2, 32, (const int32_t[]){ 7, 16 }, (const int64_t[]){ 50, 60 }, 10, 0, DIST_HOT, 10);
    ts_make(&y, 1, 4, (const int32_t[]){ 4 }, (const int64_t[]){ 5 }, 2, 0, DIST_UNIFORM, 11);
    uint16_t *a = malloc(2 * (size_t)x.nW), *b = malloc(2 * (size_t)x.nW);
    memcpy(a, x.W, 2 * (size_t)x.nW);
    as_eb_backward_sgd_ref(a, x.grad, &x.s, 0.5f);
    memcpy(b, x.W, 2 * (size_t)x.nW);
    as_eb_backward_sgd_cpu(b, x.grad, &x.s, 0.5f, NULL, 2);
    CHECK(same_f16(a, b, x.nW, "no workspace"));
    as_eb_cpu_ws *small = as_eb_cpu_ws_new(&y.s);   /* too small for x */
    memcpy(b, x.W, 2 * (size_t)x.nW);
    as_eb_backward_sgd_cpu(b, x.grad, &x.s, 0.5f, small, 2);
    CHECK(same_f16(a, b, x.nW, "small workspace"));
    as_eb_cpu_ws_free(small);
    free(a); free(b);
    ts_free(&x); ts_free(&y);
}

/* ---- validation ----------------------------------------------------------------------- */

static int expect_invalid(const as_eb_shard *s, const char *want)
{
    char err[256] = "";
    int rc = as_eb_validate(s, err, sizeof err);
    if (rc != -1 || !strstr(err, want)) {
        fprintf(stderr, "  validate: rc %d, message \"%s\", want \"%s\"\n", rc, err, want);
        return 0;
    }
    return 1;
}

TEST(eb_validate_messages)
{
    const int64_t rows[2] = { 3, 2 };
    const int32_t dims[2] = { 2, 3 };
    const int64_t w_off[3] = { 0, 6, 12 };
    const int32_t d_off[3] = { 0, 2, 5 };
    int64_t offsets[5] = { 0, 2, 5, 5, 7 };
    int32_t indices[7] = { 0, 2, 1, 1, 2, 1, 0 };
    as_eb_shard s = { 2, 2, rows, dims, w_off, d_off, offsets, indices };
    char err[256];
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);

    indices[4] = 3;   /* table 0 has 3 rows; bag (0,1) position 2 */
    CHECK(expect_invalid(&s, "out-of-range index: table 0, bag 1, position 2 (indices[4]) = 3, table has 3 rows"));
    indices[4] = 2;
    indices[6] = -1;  /* table 1, bag 1, position 1 */
    CHECK(expect_invalid(&s, "negative index: table 1, bag 1, position 1 (indices[6]) = -1"));
    indices[6] = 2;   /* table 1 has only 2 rows */
    CHECK(expect_invalid(&s, "out-of-range index: table 1, bag 1, position 1"));
    indices[6] = 0;
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);

    offsets[2] = 1;   /* bag (0,1) = [5 .. 1): decreasing */
    CHECK(expect_invalid(&s, "offsets decrease: table 0, bag 1: offsets[2] = 1 < offsets[1] = 2"));
    offsets[2] = 5;
    offsets[0] = 1;
    CHECK(expect_invalid(&s, "offsets[0] = 1, must be 0"));
    offsets[0] = 0;

    const int64_t rows0[2] = { 3, 0 };
    s.rows = rows0;
    CHECK(expect_invalid(&s, "table 1: rows = 0"));
    s.rows = rows;
    const int32_t dims0[2] = { 0, 3 };
    s.dims = dims0;
    CHECK(expect_invalid(&s, "table 0: dim = 0"));
    s.dims = dims;
    const int64_t w_bad[3] = { 0, 6, 11 };
    s.w_off = w_bad;
    CHECK(expect_invalid(&s, "table 1: weights at w_off[1] = 6, rows x dim = 6, end past the weight buffer's "
                             "w_off[2] = 11 elements"));
    s.w_off = w_off;
    const int32_t d_bad[3] = { 0, 3, 5 };
    s.d_off = d_bad;
    CHECK(expect_invalid(&s, "table 0: d_off[1] - d_off[0] = 3, expected dim = 2"));
    s.d_off = d_off;
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);
    /* a tiny error buffer is never overrun */
    indices[0] = 9;
    char tiny[8];
    CHECK(as_eb_validate(&s, tiny, sizeof tiny) == -1);
    CHECK(strlen(tiny) == 7);
    CHECK(as_eb_validate(&s, NULL, 0) == -1);
}

/* the layout rule of embbag.h: regions inside W, no overlap; order and gaps are free */
TEST(eb_validate_weight_layouts)
{
    /* sizes 6, 6 and 2 elements */
    const int64_t rows[3] = { 3, 2, 1 };
    const int32_t dims[3] = { 2, 3, 2 };
    const int32_t d_off2[3] = { 0, 2, 5 }, d_off3[4] = { 0, 2, 5, 7 };
    const int64_t offsets[7] = { 0 };   /* no lookups */
    as_eb_shard s2 = { 2, 2, rows, dims, NULL, d_off2, offsets, NULL };
    as_eb_shard s3 = { 3, 2, rows, dims, NULL, d_off3, offsets, NULL };
    char err[256];
    const int64_t good2[][3] = {
        { 0, 6, 12 },      /* packed */
        { 0, 7, 13 },      /* a gap between */
        { 6, 0, 12 },      /* reversed, touching */
        { 1, 9, 20 },      /* gaps before, between and after */
        { 14, 0, 20 },     /* reversed with gaps */
    };
    for (size_t i = 0; i < sizeof good2 / sizeof good2[0]; i++) {
        s2.w_off = good2[i];
        err[0] = 0;
        if (!CHECK(as_eb_validate(&s2, err, sizeof err) == 0)) fprintf(stderr, "  layout %zu: %s\n", i, err);
    }
    const int64_t good3[4] = { 8, 16, 0, 22 };   /* table 2 first, table 0 after a gap */
    s3.w_off = good3;
    CHECK(as_eb_validate(&s3, err, sizeof err) == 0);

    const int64_t over1[3] = { 0, 5, 12 };
    s2.w_off = over1;
    CHECK(expect_invalid(&s2, "tables 0 and 1 overlap in the weights: [0, 6) and [5, 11)"));
    const int64_t over2[3] = { 6, 1, 12 };       /* reversed, one element shared */
    s2.w_off = over2;
    CHECK(expect_invalid(&s2, "tables 0 and 1 overlap in the weights: [6, 12) and [1, 7)"));
    const int64_t same[3] = { 3, 3, 12 };
    s2.w_off = same;
    CHECK(expect_invalid(&s2, "tables 0 and 1 overlap in the weights: [3, 9) and [3, 9)"));
    const int64_t inside[4] = { 0, 10, 2, 16 };  /* table 2 inside table 0; 1 is in between */
    s3.w_off = inside;
    CHECK(expect_invalid(&s3, "tables 0 and 2 overlap in the weights: [0, 6) and [2, 4)"));
    const int64_t inside2[4] = { 10, 0, 3, 16 };  /* table 2 inside table 1, table 0 after */
    s3.w_off = inside2;
    CHECK(expect_invalid(&s3, "tables 1 and 2 overlap in the weights: [0, 6) and [3, 5)"));

    const int64_t past[3] = { 7, 0, 12 };
    s2.w_off = past;
    CHECK(expect_invalid(&s2, "table 0: weights at w_off[0] = 7, rows x dim = 6, end past the weight buffer's "
                              "w_off[2] = 12 elements"));
    const int64_t beyond[3] = { 13, 0, 12 };
    s2.w_off = beyond;
    CHECK(expect_invalid(&s2, "table 0: weights at w_off[0] = 13"));
    const int64_t wrap[3] = { INT64_MAX - 2, 0, INT64_MAX };   /* lo + size overflows int64 */
    s2.w_off = wrap;
    CHECK(expect_invalid(&s2, "table 0: weights at w_off[0] = 9223372036854775805, rows x dim = 6, end past"));
    const int64_t neg[3] = { -1, 6, 12 };
    s2.w_off = neg;
    CHECK(expect_invalid(&s2, "table 0: w_off[0] = -1 is negative"));
    const int64_t negtot[3] = { 0, 6, -1 };
    s2.w_off = negtot;
    CHECK(expect_invalid(&s2, "w_off[2] = -1 (the weight buffer's size) is negative"));
    const int64_t small[3] = { 0, 6, 11 };       /* packed offsets, one element short */
    s2.w_off = small;
    CHECK(expect_invalid(&s2, "table 1: weights at w_off[1] = 6, rows x dim = 6, end past"));
}

/* y = x with its tables moved within a new W: placed in the order `order`, gap[k] padding
 * elements before the k-th placed table and gap[T] after the last, the padding set to
 * `fill`. y shares everything else with x; free it with ts_free_layout. */
static void ts_relayout(tshard *y, const tshard *x, const int *order, const int64_t *gap, uint16_t fill)
{
    const int T = x->s.T;
    *y = *x;
    y->w_off = calloc((size_t)T + 1, sizeof(int64_t));
    int64_t pos = 0;
    for (int k = 0; k < T; k++) {
        const int t = order[k];
        pos += gap[k];
        y->w_off[t] = pos;
        pos += x->rows[t] * x->dims[t];
    }
    pos += gap[T];
    y->w_off[T] = pos;
    y->nW = pos;
    y->W = malloc(2 * (size_t)(pos + 1));
    for (int64_t i = 0; i < pos; i++) y->W[i] = fill;
    for (int t = 0; t < T; t++)
        memcpy(y->W + y->w_off[t], x->W + x->w_off[t], 2 * (size_t)(x->rows[t] * x->dims[t]));
    y->s.w_off = y->w_off;
}

static void ts_free_layout(tshard *y) { free(y->w_off); free(y->W); }

/* every element of W outside the tables' regions still holds `fill` */
static int padding_intact(const uint16_t *W, const tshard *y, uint16_t fill, const char *what)
{
    char *in = calloc((size_t)y->nW + 1, 1);
    for (int t = 0; t < y->s.T; t++) memset(in + y->w_off[t], 1, (size_t)(y->rows[t] * y->dims[t]));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < y->nW; i++)
        if (!in[i] && W[i] != fill) { if (first < 0) first = i; bad++; }
    if (bad) fprintf(stderr, "  %s: %lld padding elements changed, first at %lld\n", what, (long long)bad, (long long)first);
    free(in);
    return bad == 0;
}

/* table t of two layouts of the same shard holds the same weights */
static int same_tables(const uint16_t *Wa, const tshard *a, const uint16_t *Wb, const tshard *b, const char *what)
{
    int ok = 1;
    for (int t = 0; t < a->s.T && ok; t++)
        ok = same_f16(Wa + a->w_off[t], Wb + b->w_off[t], a->rows[t] * a->dims[t], what);
    return ok;
}

static void check_padded_layout(tshard *x, const int *order, const int64_t *gap, const char *name)
{
    const uint16_t fill = 0x7dad;   /* a NaN no update produces */
    tshard y;
    ts_relayout(&y, x, order, gap, fill);
    char err[256] = "";
    if (!CHECK(as_eb_validate(&y.s, err, sizeof err) == 0)) fprintf(stderr, "  %s: %s\n", name, err);
    /* every CPU path against the reference on the padded layout */
    check_against_ref(&y, name);
    /* and the same results as the packed layout */
    const int64_t nout = x->s.B * x->sumD;
    float *a = malloc(sizeof(float) * (size_t)(nout + 1)), *b = malloc(sizeof(float) * (size_t)(nout + 1));
    uint16_t *Wa = malloc(2 * (size_t)(x->nW + 1)), *Wb = malloc(2 * (size_t)(y.nW + 1));
    as_eb_forward_ref(a, x->W, &x->s);
    as_eb_forward_cpu(b, y.W, &y.s, 2);
    CHECK(same_f32(b, a, nout, "padded vs packed forward"));
    as_eb_forward_ref(b, y.W, &y.s);
    CHECK(same_f32(b, a, nout, "padded vs packed forward (reference)"));
    memcpy(Wa, x->W, 2 * (size_t)x->nW);
    as_eb_backward_sgd_ref(Wa, x->grad, &x->s, 0.25f);
    memcpy(Wb, y.W, 2 * (size_t)y.nW);
    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&y.s);
    as_eb_backward_sgd_cpu(Wb, y.grad, &y.s, 0.25f, ws, 2);
    as_eb_cpu_ws_free(ws);
    CHECK(same_tables(Wa, x, Wb, &y, "padded vs packed backward"));
    CHECK(padding_intact(Wb, &y, fill, "backward"));
    memcpy(Wb, y.W, 2 * (size_t)y.nW);
    as_eb_backward_sgd_ref(Wb, y.grad, &y.s, 0.25f);
    CHECK(same_tables(Wa, x, Wb, &y, "padded vs packed backward (reference)"));
    CHECK(padding_intact(Wb, &y, fill, "backward (reference)"));
    free(a); free(b); free(Wa); free(Wb);
    ts_free_layout(&y);
}

TEST(eb_padded_layout_same_as_packed)
{
    tshard x;
    ts_make(&x, 4, 48, (const int32_t[]){ 3, 16, 1, 40 }, (const int64_t[]){ 50, 200, 7, 30 }, 20, 10, DIST_HOT, 12);
    /* table order, one padding element after every table (odd, misaligned starts: the
     * layout of the GPU odd-dims tests) */
    check_padded_layout(&x, (const int[]){ 0, 1, 2, 3 }, (const int64_t[]){ 0, 1, 1, 1, 1 }, "padded in order");
    /* out of table order: gaps before, between (one of 0: touching) and after */
    check_padded_layout(&x, (const int[]){ 2, 0, 3, 1 }, (const int64_t[]){ 5, 0, 3, 8, 11 }, "padded permuted");
    ts_free(&x);
    /* dims of whole 8-wide vectors, gaps of whole vectors: the SIMD paths on a padded W */
    ts_make(&x, 3, 64, (const int32_t[]){ 64, 8, 24 }, (const int64_t[]){ 301, 77, 1000 }, 25, 5, DIST_POW, 13);
    check_padded_layout(&x, (const int[]){ 1, 2, 0 }, (const int64_t[]){ 8, 8, 0, 16 }, "padded aligned");
    ts_free(&x);
}

#ifndef AS_HAVE_CUDA
TEST(eb_gpu_stubs_without_cuda)
{
    char err[128] = "";
    as_eb_gpu *g = (as_eb_gpu *)&err;
    const int64_t rows[1] = { 1 };
    const int32_t dims[1] = { 1 }, d_off[2] = { 0, 1 };
    const int64_t w_off[2] = { 0, 1 }, offsets[2] = { 0, 0 };
    as_eb_shard s = { 1, 1, rows, dims, w_off, d_off, offsets, NULL };
    CHECK(as_eb_gpu_create(&g, &s, NULL, NULL, 0, err, sizeof err) == -1);
    CHECK(g == NULL);
    CHECK_STR(err, "built without CUDA");
    float ms = 1;
    CHECK(as_eb_gpu_forward(NULL, &ms, err, sizeof err) == -1);
    CHECK(as_eb_gpu_backward_sgd(NULL, 0.1f, &ms, err, sizeof err) == -1);
    CHECK(as_eb_gpu_flush_cache(NULL, err, sizeof err) == -1);
    CHECK(as_eb_gpu_download(NULL, NULL, NULL, err, sizeof err) == -1);
    CHECK_EQ_I64(as_eb_gpu_bytes_needed(&s), 0);
    as_eb_gpu_destroy(NULL);
}
#endif
