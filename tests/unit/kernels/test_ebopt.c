/* test_ebopt.c - the op with weight types and optimizers (lib/kernels/ebopt.h), its CPU reference:
 * all fp16 with SGD is embbag.h's op bit for bit; a mixed fp32 / fp16 / bf16 shard's forward
 * and stores; the summed gradient against finite differences of the loss; row-wise Adagrad
 * and Adam against a direct computation in double over two steps; the layout and state
 * checks; names and constants. */
#include "unit.h"

#include "ebopt.h"
#include "embbag.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* three tables, 4 bags: t0 fp32 5 x 4 at unit 0 (40 units), t1 fp16 6 x 3 at unit 40 (18
   units), 2 units of padding, t2 bf16 4 x 8 at unit 60 (32 units); 92 units in all. Row 2
   of t0 is looked up three times (twice in bag 1), row 0 of t1 never */
static const int64_t ROWS[3] = { 5, 6, 4 };
static const int32_t DIMS[3] = { 4, 3, 8 };
static const int64_t WOFF[4] = { 0, 40, 60, 92 };
static const int32_t DOFF[4] = { 0, 4, 7, 15 };
static const int64_t OFFS[13] = { 0, 2, 4, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15 };
static const int32_t IDX[15] = { 2, 4, 2, 2, 0, 1, 5, 1, 3, 5, 1, 3, 3, 0, 1 };
static const uint8_t DT[3] = { AS_EB_F32, AS_EB_F16, AS_EB_BF16 };

static as_eb_shard shard(void)
{
    return (as_eb_shard){ 3, 4, ROWS, DIMS, WOFF, DOFF, OFFS, IDX };
}

/* weights k/8 - 1 (exact in every type), gradients with a few bits */
static uint16_t *weights(const as_eb_shard *s)
{
    uint16_t *W = calloc((size_t)s->w_off[s->T], sizeof *W);
    for (int32_t t = 0; t < s->T; t++)
        for (int64_t e = 0; e < s->rows[t] * s->dims[t]; e++) as_eb_weight_set(W, s, DT, t, e, (float)((e * 5 + t) % 17) / 8.0f - 1.0f);
    return W;
}

static float *grads(const as_eb_shard *s)
{
    const int64_t n = s->B * s->d_off[s->T];
    float *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++) g[i] = (float)((i * 7919) % 23 - 11) / 16.0f + 0.001f * (float)(i % 5);
    return g;
}

TEST(ebopt_names_state_prepare)
{
    as_eb_dtype d;
    as_eb_optim o;
    CHECK_EQ_I64(as_eb_dtype_parse("fp32", &d), 0);
    CHECK_EQ_I64(d, AS_EB_F32);
    CHECK_EQ_I64(as_eb_dtype_parse("bf16", &d), 0);
    CHECK_EQ_I64(d, AS_EB_BF16);
    CHECK_EQ_I64(as_eb_dtype_parse("int8", &d), -1);
    CHECK_EQ_I64(as_eb_optim_parse("exact_rowwise_adagrad", &o), 0);
    CHECK_EQ_I64(o, AS_EB_ROWWISE_ADAGRAD);
    CHECK_EQ_I64(as_eb_optim_parse("rowwise_adagrad", &o), 0);
    CHECK_EQ_I64(as_eb_optim_parse("adam", &o), 0);
    CHECK_EQ_I64(o, AS_EB_ADAM);
    CHECK_EQ_I64(as_eb_optim_parse("lamb", &o), -1);
    CHECK_STR(as_eb_optim_name(AS_EB_SGD), "sgd");
    CHECK_STR(as_eb_dtype_name(AS_EB_F16), "fp16");
    CHECK_EQ_I64(as_eb_dtype_units(AS_EB_F32), 2);
    CHECK_EQ_I64(as_eb_dtype_units(AS_EB_BF16), 1);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_SGD, 10, 4), 0);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ROWWISE_ADAGRAD, 10, 4), 10);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ADAM, 10, 4), 80);
    char err[256];
    as_eb_opt a = { AS_EB_ADAM, 0.01f, 1e-8f, 0.9f, 0.999f, 1, 0, 0 };
    CHECK_EQ_I64(as_eb_opt_prepare(&a, err, sizeof err), 0);
    CHECK(a.c1 == (float)(1.0 - 0.9f) && a.c2 == (float)(1.0 - (double)0.999f));
    a.step = 2;
    CHECK_EQ_I64(as_eb_opt_prepare(&a, err, sizeof err), 0);
    CHECK(a.c1 == (float)(1.0 - (double)0.9f * (double)0.9f));
    a.step = 0;
    CHECK_EQ_I64(as_eb_opt_prepare(&a, err, sizeof err), -1);
    CHECK(strstr(err, "step 0") != NULL);
    a.step = 1;
    a.beta1 = 1.0f;
    CHECK_EQ_I64(as_eb_opt_prepare(&a, err, sizeof err), -1);
    as_eb_opt g = { AS_EB_ROWWISE_ADAGRAD, NAN, 1e-8f, 0, 0, 0, 0, 0 };
    CHECK_EQ_I64(as_eb_opt_prepare(&g, err, sizeof err), -1);
    g.lr = 0.1f;
    g.eps = -1;
    CHECK_EQ_I64(as_eb_opt_prepare(&g, err, sizeof err), -1);
    g.eps = 1e-8f;
    CHECK_EQ_I64(as_eb_opt_prepare(&g, err, sizeof err), 0);
    CHECK(g.c1 == 1.0f && g.c2 == 1.0f);
}

TEST(ebopt_validate_typed)
{
    as_eb_shard s = shard();
    char err[256];
    const int64_t st_ag[4] = { 0, 5, 11, 15 };
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_SGD, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_ROWWISE_ADAGRAD, st_ag, err, sizeof err), 0);
    /* Adagrad without state, or too little of it */
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_ROWWISE_ADAGRAD, NULL, err, sizeof err), -1);
    const int64_t st_short[4] = { 0, 5, 10, 14 };
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_ROWWISE_ADAGRAD, st_short, err, sizeof err), -1);
    CHECK(strstr(err, "table 1") != NULL);
    const int64_t st_adam[4] = { 0, 40, 76, 140 };
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_ADAM, st_adam, err, sizeof err), 0);
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_ADAM, st_ag, err, sizeof err), -1);
    /* t0 fp32 takes 40 units: t1 at unit 20 would overlap it (as fp16 it would not) */
    const int64_t woff2[4] = { 0, 20, 60, 92 };
    s.w_off = woff2;
    CHECK_EQ_I64(as_eb_validate(&s, err, sizeof err), 0);
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_SGD, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "overlap") != NULL);
    /* a fp32 table at an odd unit */
    const int64_t woff3[4] = { 1, 41, 60, 93 };
    s.w_off = woff3;
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_SGD, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "not 4-byte aligned") != NULL);
    s.w_off = WOFF;
    const uint8_t bad[3] = { AS_EB_F32, 7, AS_EB_F16 };
    CHECK_EQ_I64(as_eb_validate_typed(&s, bad, AS_EB_SGD, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "unknown weight type 7") != NULL);
    /* an index out of range is still caught */
    int32_t idx[15];
    memcpy(idx, IDX, sizeof idx);
    idx[14] = 4;
    s.indices = idx;
    CHECK_EQ_I64(as_eb_validate_typed(&s, DT, AS_EB_SGD, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "out-of-range") != NULL);
}

/* every table fp16 (dtype NULL) with SGD: embbag.h's op bit for bit, a hot row's chunks
   included (1200 lookups of one row: 3 chunks) */
TEST(ebopt_fp16_sgd_is_the_op)
{
    enum { B = 600, E = 50, D = 12 };
    int64_t rows[1] = { E }, woff[2] = { 0, E * D }, *off = malloc((B + 1) * sizeof *off);
    int32_t dims[1] = { D }, doff[2] = { 0, D }, *idx = malloc(3 * B * sizeof *idx);
    for (int b = 0; b <= B; b++) off[b] = 3 * b;
    for (int i = 0; i < 3 * B; i++) idx[i] = i % 3 == 2 ? (i * 13) % E : 7;
    as_eb_shard s = { 1, B, rows, dims, woff, doff, off, idx };
    char err[256];
    CHECK_EQ_I64(as_eb_validate_typed(&s, NULL, AS_EB_SGD, NULL, err, sizeof err), 0);
    uint16_t *W1 = malloc(E * D * sizeof *W1), *W2 = malloc(E * D * sizeof *W2);
    for (int e = 0; e < E * D; e++) W1[e] = W2[e] = as_float_to_half((float)(e % 29) / 16.0f - 0.9f);
    float *g = malloc((size_t)B * D * sizeof *g), *o1 = malloc((size_t)B * D * sizeof *o1), *o2 = malloc((size_t)B * D * sizeof *o2);
    for (int i = 0; i < B * D; i++) g[i] = (float)((i * 31) % 97) / 64.0f - 0.7f;
    as_eb_forward_ref(o1, W1, &s);
    as_eb_forward_typed_ref(o2, W2, &s, NULL);
    CHECK(!memcmp(o1, o2, (size_t)B * D * sizeof *o1));
    const as_eb_opt sgd = { AS_EB_SGD, 0.05f, 0, 0, 0, 0, 1, 1 };
    as_eb_backward_sgd_ref(W1, g, &s, 0.05f);
    as_eb_backward_typed_ref(W2, NULL, g, &s, NULL, NULL, &sgd);
    CHECK(!memcmp(W1, W2, E * D * sizeof *W1));
    free(W1); free(W2); free(g); free(o1); free(o2); free(off); free(idx);
}

/* the mixed shard's forward: each bag the exact sum of its rows (every weight k/8 - 1 and at
   most 3 lookups a bag: exact in fp32); stores round once to the table's type */
TEST(ebopt_forward_mixed_types)
{
    as_eb_shard s = shard();
    uint16_t *W = weights(&s);
    float out[4 * 15];
    as_eb_forward_typed_ref(out, W, &s, DT);
    for (int32_t t = 0; t < 3; t++)
        for (int64_t b = 0; b < 4; b++)
            for (int64_t j = 0; j < DIMS[t]; j++) {
                double want = 0;
                for (int64_t p = OFFS[t * 4 + b]; p < OFFS[t * 4 + b + 1]; p++)
                    want += (double)(((IDX[p] * DIMS[t] + j) * 5 + t) % 17) / 8.0 - 1.0;
                CHECK_NEAR(out[b * 15 + DOFF[t] + j], want, 0);
            }
    /* the padding between t1 and t2 is never written */
    CHECK(W[58] == 0 && W[59] == 0);
    /* a store rounds once to the type: 0.1f as fp32, fp16 and bf16 */
    as_eb_weight_set(W, &s, DT, 0, 3, 0.1f);
    CHECK(as_eb_weight_get(W, &s, DT, 0, 3) == 0.1f);
    as_eb_weight_set(W, &s, DT, 1, 3, 0.1f);
    CHECK(as_eb_weight_get(W, &s, DT, 1, 3) == as_half_to_float(as_float_to_half(0.1f)));
    as_eb_weight_set(W, &s, DT, 2, 3, 0.1f);
    CHECK(as_eb_weight_get(W, &s, DT, 2, 3) == as_bf16_to_float(as_float_to_bf16(0.1f)));
    CHECK(as_eb_weight_get(W, &s, DT, 2, 3) != as_eb_weight_get(W, &s, DT, 1, 3));
    free(W);
}

/* the loss L = sum of out x grad (in double, from the forward); its derivative in a weight */
static double loss(const uint16_t *W, const as_eb_shard *s, const float *g)
{
    float out[4 * 15];
    as_eb_forward_typed_ref(out, W, s, DT);
    double L = 0;
    for (int i = 0; i < 4 * 15; i++) L += (double)out[i] * g[i];
    return L;
}

/* SGD at lr 1 on the fp32 table moves each weight by its summed gradient: it matches the
   loss's finite differences; untouched rows do not move */
TEST(ebopt_gradient_against_finite_differences)
{
    as_eb_shard s = shard();
    uint16_t *W = weights(&s), *W0 = weights(&s), *Wp = weights(&s);
    float *g = grads(&s);
    const as_eb_opt sgd = { AS_EB_SGD, 1.0f, 0, 0, 0, 0, 1, 1 };
    as_eb_backward_typed_ref(W, NULL, g, &s, DT, NULL, &sgd);
    const double h = 0.25;   /* the loss is linear in a weight: exact up to rounding */
    for (int64_t e = 0; e < ROWS[0] * DIMS[0]; e++) {
        const float w0 = as_eb_weight_get(W0, &s, DT, 0, e);
        as_eb_weight_set(Wp, &s, DT, 0, e, w0 + (float)h);
        const double up = loss(Wp, &s, g);
        as_eb_weight_set(Wp, &s, DT, 0, e, w0 - (float)h);
        const double dn = loss(Wp, &s, g);
        as_eb_weight_set(Wp, &s, DT, 0, e, w0);
        const double fd = (up - dn) / (2 * h), moved = (double)w0 - as_eb_weight_get(W, &s, DT, 0, e);
        CHECK_NEAR(moved, fd, 1e-5 * (1 + fabs(fd)));
    }
    /* row 0 of t1 is looked up nowhere: unchanged, bit for bit */
    CHECK(!memcmp(W + 40, W0 + 40, 3 * sizeof *W));
    free(W); free(W0); free(Wp); free(g);
}

/* the summed gradient of row r of table t, in double */
static void grad_d(double *G, const float *g, int32_t t, int32_t r)
{
    for (int j = 0; j < DIMS[t]; j++) G[j] = 0;
    for (int64_t b = 0; b < 4; b++)
        for (int64_t p = OFFS[t * 4 + b]; p < OFFS[t * 4 + b + 1]; p++)
            if (IDX[p] == r) for (int j = 0; j < DIMS[t]; j++) G[j] += g[b * 15 + DOFF[t] + j];
}

static int touched(int32_t t, int32_t r)
{
    for (int64_t p = OFFS[t * 4]; p < OFFS[t * 4 + 4]; p++) if (IDX[p] == r) return 1;
    return 0;
}

/* two steps of row-wise Adagrad against the formula in double: the state gains the mean
   squared gradient of each touched row, the row moves by lr / (sqrt(state) + eps) x G; a
   fp16 / bf16 weight lands within half a unit of its type of the exact value */
TEST(ebopt_rowwise_adagrad_direct)
{
    as_eb_shard s = shard();
    uint16_t *W = weights(&s);
    float *g = grads(&s), S[15];
    const int64_t st[4] = { 0, 5, 11, 15 };
    for (int i = 0; i < 15; i++) S[i] = 0.5f;
    as_eb_opt o = { AS_EB_ROWWISE_ADAGRAD, 0.1f, 1e-3f, 0, 0, 0, 0, 0 };
    char err[256];
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
    double w[3][64], sd[15];
    for (int32_t t = 0; t < 3; t++) for (int64_t e = 0; e < ROWS[t] * DIMS[t]; e++) w[t][e] = as_eb_weight_get(W, &s, DT, t, e);
    for (int i = 0; i < 15; i++) sd[i] = 0.5;
    for (int step = 0; step < 2; step++) {
        as_eb_backward_typed_ref(W, S, g, &s, DT, st, &o);
        for (int32_t t = 0; t < 3; t++)
            for (int32_t r = 0; r < ROWS[t]; r++) {
                if (!touched(t, r)) continue;
                double G[8], q = 0;
                grad_d(G, g, t, r);
                for (int j = 0; j < DIMS[t]; j++) q += G[j] * G[j];
                sd[st[t] + r] += q / DIMS[t];
                const double m = 0.1 / (sqrt(sd[st[t] + r]) + 1e-3);
                for (int j = 0; j < DIMS[t]; j++) w[t][r * DIMS[t] + j] -= m * G[j];
            }
        for (int i = 0; i < 15; i++) CHECK_NEAR(S[i], sd[i], 1e-5 * sd[i]);
        /* the fp32 table tracks the exact values; the others are rounded each step, so
           they are compared with the exact step from their own previous value */
        for (int64_t e = 0; e < 20; e++) CHECK_NEAR(as_eb_weight_get(W, &s, DT, 0, e), w[0][e], 1e-5);
        for (int32_t t = 1; t < 3; t++)
            for (int64_t e = 0; e < ROWS[t] * DIMS[t]; e++) {
                const double got = as_eb_weight_get(W, &s, DT, t, e);
                const double ulp = t == 1 ? ldexp(1, -10) : ldexp(1, -7);
                CHECK(fabs(got - w[t][e]) <= ulp * fmax(1, fabs(w[t][e])));
                w[t][e] = got;
            }
    }
    /* untouched: t1's row 0 and its state */
    CHECK(S[5] == 0.5f);
    free(W); free(g);
}

/* two steps of Adam against the formula in double (moments, bias corrections); at step 1 a
   weight with a gradient well above eps moves by about lr, Adam's signature */
TEST(ebopt_adam_direct)
{
    as_eb_shard s = shard();
    uint16_t *W = weights(&s);
    float *g = grads(&s);
    const int64_t st[4] = { 0, 40, 76, 140 };
    float *S = calloc(140, sizeof *S);
    double m[140] = { 0 }, v[140] = { 0 }, w[20];
    for (int64_t e = 0; e < 20; e++) w[e] = as_eb_weight_get(W, &s, DT, 0, e);
    char err[256];
    for (int step = 1; step <= 2; step++) {
        as_eb_opt o = { AS_EB_ADAM, 0.01f, 1e-8f, 0.9f, 0.999f, step, 0, 0 };
        CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
        const double before = as_eb_weight_get(W, &s, DT, 0, 2 * 4);
        as_eb_backward_typed_ref(W, S, g, &s, DT, st, &o);
        const double c1 = 1 - pow(0.9f, step), c2 = 1 - pow(0.999f, step);
        for (int32_t r = 0; r < ROWS[0]; r++) {
            if (!touched(0, r)) continue;
            double G[8];
            grad_d(G, g, 0, r);
            for (int j = 0; j < 4; j++) {
                const int e = r * 4 + j;
                m[e] = 0.9f * m[e] + (1 - 0.9f) * G[j];
                v[e] = 0.999f * v[e] + (1 - 0.999f) * G[j] * G[j];
                w[e] -= 0.01f * (m[e] / c1) / (sqrt(v[e] / c2) + 1e-8);
            }
        }
        for (int e = 0; e < 20; e++) {
            CHECK_NEAR(S[e], m[e], 1e-5 * (1 + fabs(m[e])));
            CHECK_NEAR(S[20 + e], v[e], 1e-5 * (1 + fabs(v[e])));
            CHECK_NEAR(as_eb_weight_get(W, &s, DT, 0, e), w[e], 1e-5);
        }
        if (step == 1) CHECK_NEAR(fabs(as_eb_weight_get(W, &s, DT, 0, 2 * 4) - before), 0.01, 1e-6);
    }
    /* t1's untouched row 0: moments still 0 */
    for (int j = 0; j < 3; j++) CHECK(S[40 + j] == 0.0f && S[40 + 18 + j] == 0.0f);
    free(W); free(g); free(S);
}

/* the canonical order of the summed gradient, where it shows: one fp32 row looked up 1024
   times, the first gradient 1.0, the other 1023 3 x 2^-26 (0.375 of 1.0's unit in the last
   place). Chunk 0 adds 511 of them to 1.0 one at a time, each lost (1.0); chunk 1 sums 512
   of them from 0.0f exactly (3 x 2^-17); G = 1 + 3 x 2^-17. A plain sequential sum would
   give 1.0, chunks of another size something else */
TEST(ebopt_gradient_canonical_chunks)
{
    enum { B = 1024 };
    int64_t rows[1] = { 2 }, woff[2] = { 0, 4 }, *off = malloc((B + 1) * sizeof *off);
    int32_t dims[1] = { 1 }, doff[2] = { 0, 1 }, *idx = calloc(B, sizeof *idx);
    for (int b = 0; b <= B; b++) off[b] = b;
    as_eb_shard s = { 1, B, rows, dims, woff, doff, off, idx };
    const uint8_t f32[1] = { AS_EB_F32 };
    char err[256];
    CHECK_EQ_I64(as_eb_validate_typed(&s, f32, AS_EB_SGD, NULL, err, sizeof err), 0);
    CHECK(AS_EB_CHUNK == 512);
    uint16_t W[4] = { 0 };
    float *g = malloc(B * sizeof *g);
    g[0] = 1.0f;
    for (int b = 1; b < B; b++) g[b] = 3.0f * 0x1p-26f;
    const as_eb_opt sgd = { AS_EB_SGD, 1.0f, 0, 0, 0, 0, 1, 1 };
    as_eb_backward_typed_ref(W, NULL, g, &s, f32, NULL, &sgd);
    CHECK(as_eb_weight_get(W, &s, f32, 0, 0) == -(1.0f + 3.0f * 0x1p-17f));
    CHECK(as_eb_weight_get(W, &s, f32, 0, 1) == 0.0f);   /* row 1: untouched */
    free(off); free(idx); free(g);
}

/* exported by embbag.c for tests: 0 forces the portable path, 1 lets F16C be used, -1 asks */
int as_eb_cpu_simd(int mode);

/* a shard of 4 tables of the given types and dims D[4], skewed lookups (a hot row of > 2 chunks in table
   0), the layout in units with padding, weights and state filled from a seed */
typedef struct {
    as_eb_shard s;
    int64_t rows[4], woff[5], st_off[5], *off;
    int32_t dims[4], doff[5], *idx;
    uint8_t dt[4];
    int64_t nw, ns;
} tshard;

static void tshard_make(tshard *x, const uint8_t *dt, as_eb_optim o, int64_t B, const int32_t *D)
{
    static const int64_t E[4] = { 40, 3, 1000, 7 };
    memset(x, 0, sizeof *x);
    int64_t u = 3, st = 0, n = 0;
    x->off = malloc((size_t)(4 * B + 1) * sizeof *x->off);
    x->idx = malloc((size_t)(4 * B * 4) * sizeof *x->idx);
    x->off[0] = 0;
    for (int t = 0; t < 4; t++) {
        x->rows[t] = E[t], x->dims[t] = D[t], x->dt[t] = dt[t];
        if (dt[t] == AS_EB_F32 && (u & 1)) u++;
        x->woff[t] = u;
        u += E[t] * D[t] * as_eb_dtype_units((as_eb_dtype)dt[t]) + 1;
        x->doff[t + 1] = x->doff[t] + D[t];
        x->st_off[t] = st;
        st += as_eb_opt_state(o, E[t], D[t]);
        for (int64_t b = 0; b < B; b++) {
            const int64_t len = (b * 7 + t) % 5;   /* 0..4 lookups, some bags empty */
            for (int64_t i = 0; i < len; i++)
                x->idx[n++] = (int32_t)(t == 0 && i < 2 ? 5 : (b * 131 + i * 17 + t) % E[t]);
            x->off[t * B + b + 1] = n;
        }
    }
    x->woff[4] = u;
    x->st_off[4] = st;
    x->nw = u, x->ns = st;
    x->s = (as_eb_shard){ 4, B, x->rows, x->dims, x->woff, x->doff, x->off, x->idx };
}

/* now and then a weight the rounding must treat as the reference does: NaN (with a
   payload), infinities, a value that rounds up to infinity in fp16 and bf16, a subnormal
   of fp32 (a zero in the 16-bit types), a tie; 0 for the ordinary ones */
static float special(int64_t e)
{
    static const uint32_t bits[] = { 0x7fc12345u, 0xff812345u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x477ff000u,
                                     0x00000123u, 0x3f808000u };
    if (e % 29 != 7) return 0.0f;
    float f;
    const uint32_t u = bits[(e / 29) % (int64_t)(sizeof bits / sizeof *bits)];
    memcpy(&f, &u, 4);
    return f;
}

TEST(ebopt_fast_cpu_path_is_the_reference)
{
    static const uint8_t types[4][4] = { { AS_EB_F32, AS_EB_F16, AS_EB_BF16, AS_EB_F32 }, { AS_EB_F32, AS_EB_F32, AS_EB_F32, AS_EB_F32 },
                                         { AS_EB_BF16, AS_EB_BF16, AS_EB_BF16, AS_EB_BF16 }, { AS_EB_F16, AS_EB_F16, AS_EB_F16, AS_EB_F16 } };
    /* dims of one, several and more than 8 vectors of 8, with and without tail columns,
       and a tail alone; table 0's hot row (more than 2 chunks) in 1 and in 2 blocks */
    static const int32_t dims[2][4] = { { 16, 5, 8, 33 }, { 72, 3, 64, 130 } };
    const int simd0 = as_eb_cpu_simd(-1);
    char err[256];
    for (int ty = 0; ty < 4; ty++)
        for (int o = 0; o < AS_EB_NOPTIM; o++)
            for (int thr = 1; thr <= 3; thr += 2) {
                tshard x;
                tshard_make(&x, types[ty], (as_eb_optim)o, 700, dims[(ty + o + thr / 3) & 1]);
                if (!CHECK_EQ_I64(as_eb_validate_typed(&x.s, x.dt, (as_eb_optim)o, x.st_off, err, sizeof err), 0)) {
                    printf("  %s\n", err);
                    continue;
                }
                uint16_t *W1 = calloc((size_t)x.nw, 2), *W2 = calloc((size_t)x.nw, 2);
                float *S1 = calloc((size_t)x.ns + 1, 4), *S2 = calloc((size_t)x.ns + 1, 4);
                for (int t = 0; t < 4; t++)
                    for (int64_t e = 0; e < x.rows[t] * x.dims[t]; e++)
                        as_eb_weight_set(W1, &x.s, x.dt, t, e, special(e) ? special(e)
                                                               : (float)((e * 2654435761u + t) % 1000) / 500.0f - 1.0f);
                memcpy(W2, W1, (size_t)x.nw * 2);
                for (int64_t i = 0; i < x.ns; i++) S1[i] = S2[i] = (float)(i % 7) * 0.01f;
                const int64_t no = 700 * x.doff[4];
                float *g = malloc((size_t)no * 4), *o1 = malloc((size_t)no * 4), *o2 = malloc((size_t)no * 4);
                for (int64_t i = 0; i < no; i++) g[i] = (float)((i * 40503u) % 2001) / 1000.0f - 1.0f + 1e-4f * (float)(i % 3);
                as_eb_opt op = { (as_eb_optim)o, 0.03f, 1e-6f, 0.9f, 0.999f, 3, 0, 0 };
                CHECK_EQ_I64(as_eb_opt_prepare(&op, err, sizeof err), 0);
                as_eb_cpu_simd(thr == 1 ? 0 : simd0);   /* the portable and the F16C forward */
                as_eb_forward_typed_ref(o1, W1, &x.s, x.dt);
                as_eb_forward_typed_cpu(o2, W2, &x.s, x.dt, thr);
                CHECK(!memcmp(o1, o2, (size_t)no * 4));
                /* two steps: the second starts from the first's weights and state */
                as_eb_cpu_ws *ws = thr == 1 ? NULL : as_eb_cpu_ws_new(&x.s);
                for (int step = 0; step < 2; step++) {
                    as_eb_backward_typed_ref(W1, S1, g, &x.s, x.dt, x.st_off, &op);
                    CHECK_EQ_I64(as_eb_backward_typed_cpu(W2, S2, g, &x.s, x.dt, x.st_off, &op, ws, thr), 0);
                }
                if (!CHECK(!memcmp(W1, W2, (size_t)x.nw * 2) && !memcmp(S1, S2, (size_t)x.ns * 4)))
                    printf("  types %d, %s, %d threads\n", ty, as_eb_optim_name((as_eb_optim)o), thr);
                as_eb_cpu_ws_free(ws);
                free(W1); free(W2); free(S1); free(S2); free(g); free(o1); free(o2); free(x.off); free(x.idx);
            }
    as_eb_cpu_simd(simd0);
}

/* the row-wise Adagrad's sum of squares in a warp's order, by hand: D = 40, G_j = j + 1; lane
   l's partial (l + 1)^2 + (l + 33)^2 for l < 8, (l + 1)^2 beyond; the butterfly of exact
   integers is their plain sum (all below 2^24: exact), 22140 */
TEST(ebopt_row_sumsq_order)
{
    float G[40];
    for (int j = 0; j < 40; j++) G[j] = (float)(j + 1);
    CHECK(as_eb_row_sumsq(G, 40) == 22140.0f);
    CHECK(as_eb_row_sumsq(G, 1) == 1.0f);
    CHECK(as_eb_row_sumsq(G, 0) == 0.0f);
    /* where the order shows: G = 1 at column 0, 2^-12 at the other 63 (squares 2^-24, half a
       unit of 1.0 in the last place). Left to right each small square is lost against 1.0.
       In the warp's order lane 0 holds 1 + 2^-24 = 1.0 (a tie, to even), lanes 1..31 2^-23
       each, and the butterfly adds the small partials together before they reach lane 0:
       the sum is above 1.0. The same tree, step by step, as the expected value */
    float H[64];
    H[0] = 1.0f;
    for (int j = 1; j < 64; j++) H[j] = 0x1p-12f;
    float p[32];
    for (int l = 0; l < 32; l++) p[l] = l == 0 ? (float)(1.0 + 0x1p-24) : 0x1p-23f;
    for (int o = 16; o >= 1; o /= 2) {
        float x[32];
        for (int l = 0; l < 32; l++) x[l] = p[l] + p[l ^ o];
        memcpy(p, x, sizeof p);
    }
    CHECK(as_eb_row_sumsq(H, 64) == p[0]);
    /* and it is not the left-to-right sum, which loses every small square against 1.0 */
    float seq = 0.0f;
    for (int j = 0; j < 64; j++) seq += H[j] * H[j];
    CHECK(seq == 1.0f);
    CHECK(p[0] > 1.0f);
}
