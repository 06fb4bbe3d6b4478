/* test_ebgen.c - the benchmark's generated data (lib/kernels/ebgen.c): the counter-based hash of
 * weights and gradients, the shard layout, the concatenation of bags, the table check.
 * Dimension letters: B batch, D dim, E rows, T tables. */
#include "common.h"
#include "ebgen.h"
#include "ebopt.h"
#include "embbag.h"
#include "half.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the functions are pinned: device and host share them, and recorded costs were measured
 * on their values, so any change must be deliberate (update these and say so) */
TEST(ebgen_known_values)
{
    uint64_t k = as_ebg_key(0, 0, AS_EBG_WEIGHTS), k2 = as_ebg_key(12345, 77, AS_EBG_GRADS);
    CHECK(k == 0x93118a61ed9e9e14ULL);
    CHECK(k2 == 0x72f1859a0fa83348ULL);
    CHECK(as_ebg_bits(k, 0) == 0xa706a2fa72706143ULL);
    CHECK_EQ_I64(as_ebg_weight(k, 0), 0x1d43);
    CHECK_EQ_I64(as_ebg_weight(k, 5), 0xa222);
    CHECK_EQ_I64(as_ebg_weight(k2, 1000001), 0xa77d);
    float g0 = as_ebg_grad(k2, 0), g1 = as_ebg_grad(k2, 3);
    uint32_t u0, u1;
    memcpy(&u0, &g0, 4);
    memcpy(&u1, &g1, 4);
    CHECK_EQ_I64(u0, 0x3a1033cd);
    CHECK_EQ_I64(u1, 0xbb5293eb);
    /* streams and tables are distinct keys */
    CHECK(as_ebg_key(0, 0, AS_EBG_WEIGHTS) != as_ebg_key(0, 0, AS_EBG_GRADS));
    CHECK(as_ebg_key(0, 1, AS_EBG_WEIGHTS) != as_ebg_key(0, 0, AS_EBG_GRADS));
    CHECK(as_ebg_key(1, 0, AS_EBG_WEIGHTS) != as_ebg_key(0, 0, AS_EBG_WEIGHTS));
}

/* the value distribution as-bench has always used: |w| in [2^-8, 2^-4), random sign, grads
 * uniform in [-0.005, 0.005) */
TEST(ebgen_distribution)
{
    const int64_t n = 1 << 20;
    uint64_t wk = as_ebg_key(3, 42, AS_EBG_WEIGHTS), gk = as_ebg_key(3, 42, AS_EBG_GRADS);
    int64_t neg = 0, bad = 0, exp_seen[32] = {0};
    double sum = 0;
    for (int64_t e = 0; e < n; e++) {
        uint16_t h = as_ebg_weight(wk, (uint64_t)e);
        float f = as_half_to_float(h);
        float a = fabsf(f);
        if (!(a >= 1.0f / 256 && a < 1.0f / 16)) bad++;
        if (f < 0) neg++;
        exp_seen[(h >> 10) & 31]++;
        sum += f;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(neg > n / 2 - n / 100 && neg < n / 2 + n / 100);
    for (int x = 7; x <= 10; x++) CHECK(exp_seen[x] > n / 4 - n / 50 && exp_seen[x] < n / 4 + n / 50);
    CHECK(fabs(sum / n) < 2e-4);
    double gs = 0, g2 = 0, gmin = 1, gmax = -1;
    for (int64_t e = 0; e < n; e++) {
        float g = as_ebg_grad(gk, (uint64_t)e);
        if (!(g >= -0.005f && g < 0.005f)) bad++;
        gs += g;
        g2 += (double)g * g;
        if (g < gmin) gmin = g;
        if (g > gmax) gmax = g;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(fabs(gs / n) < 5e-5);
    CHECK_NEAR(g2 / n, 0.01 * 0.01 / 12, 0.01 * 0.01 / 12 * 0.02);   /* variance of U(-0.005, 0.005) */
    CHECK(gmin < -0.00499 && gmax > 0.00499);
}

/* ---- a small pool --------------------------------------------------------------------------- */

typedef struct {
    as_eb_table t[8];
    int64_t *off[8];
    int32_t *ind[8];
} pool_t;

/* n tables of batch B: dims and rows as given, bags of 0..lmax lookups */
static void mk_pool(pool_t *p, int n, int64_t B, const int64_t *dims, const int64_t *rows, int lmax, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < n; i++) {
        p->off[i] = malloc(sizeof(int64_t) * (size_t)(B + 1));
        p->off[i][0] = 0;
        for (int64_t b = 0; b < B; b++) p->off[i][b + 1] = p->off[i][b] + (int64_t)(as_splitmix64(&seed) % (uint64_t)(lmax + 1));
        int64_t L = p->off[i][B];
        p->ind[i] = malloc(sizeof(int32_t) * (size_t)(L + 1));
        for (int64_t k = 0; k < L; k++) p->ind[i][k] = (int32_t)(as_splitmix64(&seed) % (uint64_t)rows[i]);
        as_eb_table t = { 100 + i, rows[i], B, dims[i], L, p->off[i], p->ind[i] };
        p->t[i] = t;
    }
}

static void free_pool(pool_t *p)
{
    for (int i = 0; i < 8; i++) { free(p->off[i]); free(p->ind[i]); }
}

TEST(ebgen_layout_aligned_packed_valid)
{
    pool_t p;
    int64_t dims[5] = {1, 3, 16, 33, 8}, rows[5] = {7, 5, 10, 3, 1};
    mk_pool(&p, 5, 20, dims, rows, 4, 1);
    const as_eb_table *tb[5] = {&p.t[0], &p.t[1], &p.t[2], &p.t[3], &p.t[4]};
    int64_t r[5], wo[6];
    int32_t d[5], doff[6];
    int64_t total = as_ebg_layout(tb, 5, r, d, wo, doff);
    CHECK_EQ_I64(total, wo[5]);
    CHECK_EQ_I64(wo[0], 0);
    for (int t = 0; t < 5; t++) {
        CHECK_EQ_I64(r[t], rows[t]);
        CHECK_EQ_I64(d[t], dims[t]);
        CHECK_EQ_I64(wo[t] % AS_EBG_W_ALIGN, 0);
        CHECK(wo[t] + rows[t] * dims[t] <= wo[t + 1]);
        CHECK(wo[t + 1] - (wo[t] + rows[t] * dims[t]) < AS_EBG_W_ALIGN);   /* padding only to the next multiple */
        CHECK_EQ_I64(doff[t + 1] - doff[t], dims[t]);
    }
    CHECK_EQ_I64(total % AS_EBG_W_ALIGN, 0);
    CHECK_EQ_I64(doff[0], 0);
    /* the assembled shard is valid by embbag.h's rules */
    int64_t off[5 * 20 + 1];
    int32_t ind[5 * 20 * 4 + 1];
    as_ebg_gather(off, ind, tb, 5, 20, 1);
    as_eb_shard s = {5, 20, r, d, wo, doff, off, ind};
    char err[256] = "";
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);
    free_pool(&p);
}

/* the typed layout: each table's region its elements times its type's units, starts
   aligned (so fp32 at an even unit), valid by ebopt.h's rules; all fp16 is as_ebg_layout */
TEST(ebgen_layout_typed)
{
    pool_t p;
    int64_t dims[4] = {3, 16, 33, 8}, rows[4] = {5, 10, 3, 1};
    mk_pool(&p, 4, 20, dims, rows, 4, 2);
    const as_eb_table *tb[4] = {&p.t[0], &p.t[1], &p.t[2], &p.t[3]};
    const uint8_t dt[4] = {AS_EB_BF16, AS_EB_F32, AS_EB_F32, AS_EB_F16}, f16[4] = {0, 0, 0, 0};
    int64_t r[4], wo[5], wo16[5];
    int32_t d[4], doff[5];
    const int64_t total = as_ebg_layout_typed(tb, 4, dt, r, d, wo, doff);
    CHECK_EQ_I64(total, wo[4]);
    for (int t = 0; t < 4; t++) {
        const int64_t need = rows[t] * dims[t] * (dt[t] == AS_EB_F32 ? 2 : 1);
        CHECK_EQ_I64(wo[t] % AS_EBG_W_ALIGN, 0);
        CHECK(wo[t] + need <= wo[t + 1] && wo[t + 1] - (wo[t] + need) < AS_EBG_W_ALIGN);
        CHECK_EQ_I64(r[t], rows[t]);
        CHECK_EQ_I64(doff[t + 1] - doff[t], dims[t]);
    }
    int64_t off[4 * 20 + 1];
    int32_t ind[4 * 20 * 4 + 1];
    as_ebg_gather(off, ind, tb, 4, 20, 1);
    as_eb_shard s = {4, 20, r, d, wo, doff, off, ind};
    char err[256] = "";
    CHECK(as_eb_validate_typed(&s, dt, AS_EB_SGD, NULL, err, sizeof err) == 0);
    as_ebg_layout_typed(tb, 4, f16, r, d, wo, doff);
    as_ebg_layout(tb, 4, r, d, wo16, doff);
    CHECK(!memcmp(wo, wo16, sizeof wo));
    free_pool(&p);
}

TEST(ebgen_gather_matches_concatenation)
{
    /* one table of 2.6M lookups spans several of the parallel copy's 1M chunks */
    pool_t p;
    int64_t dims[3] = {4, 8, 2}, rows[3] = {1000, 50, 3};
    mk_pool(&p, 3, 4096, dims, rows, 12, 2);
    /* replace table 1 with a big one: 640 lookups per bag */
    free(p.off[1]);
    free(p.ind[1]);
    int64_t B = 4096, L = 640 * B;
    p.off[1] = malloc(sizeof(int64_t) * (size_t)(B + 1));
    p.ind[1] = malloc(sizeof(int32_t) * (size_t)L);
    for (int64_t b = 0; b <= B; b++) p.off[1][b] = 640 * b;
    for (int64_t k = 0; k < L; k++) p.ind[1][k] = (int32_t)(k % 50);
    p.t[1].offsets = p.off[1];
    p.t[1].indices = p.ind[1];
    p.t[1].lookups = L;
    const as_eb_table *tb[3] = {&p.t[2], &p.t[1], &p.t[0]};   /* any order */
    int64_t n = 0;
    for (int t = 0; t < 3; t++) n += tb[t]->lookups;
    int64_t *ref_off = malloc(sizeof(int64_t) * (size_t)(3 * B + 1)), *off = malloc(sizeof(int64_t) * (size_t)(3 * B + 1));
    int32_t *ref_ind = malloc(sizeof(int32_t) * (size_t)n), *ind = malloc(sizeof(int32_t) * (size_t)n);
    int64_t base = 0;
    for (int t = 0; t < 3; t++) {
        for (int64_t b = 0; b < B; b++) ref_off[t * B + b] = base + tb[t]->offsets[b];
        for (int64_t k = 0; k < tb[t]->lookups; k++) ref_ind[base + k] = tb[t]->indices[k];
        base += tb[t]->lookups;
    }
    ref_off[3 * B] = base;
    for (int th = 1; th <= 3; th++) {
        memset(off, 0xff, sizeof(int64_t) * (size_t)(3 * B + 1));
        memset(ind, 0xff, sizeof(int32_t) * (size_t)n);
        as_ebg_gather(off, ind, tb, 3, B, th);
        CHECK(memcmp(off, ref_off, sizeof(int64_t) * (size_t)(3 * B + 1)) == 0);
        CHECK(memcmp(ind, ref_ind, sizeof(int32_t) * (size_t)n) == 0);
    }
    free(ref_off); free(off); free(ref_ind); free(ind);
    free_pool(&p);
}

/* a shard of the pool's tables in the given order, with its own arrays */
typedef struct {
    as_eb_shard s;
    int64_t rows[8], w_off[9], ids[8];
    int32_t dims[8], d_off[9];
} shard_t;

static void mk_shard(shard_t *h, const pool_t *p, const int *which, int T)
{
    const as_eb_table *tb[8];
    for (int t = 0; t < T; t++) { tb[t] = &p->t[which[t]]; h->ids[t] = tb[t]->id; }
    as_ebg_layout(tb, T, h->rows, h->dims, h->w_off, h->d_off);
    as_eb_shard s = {T, tb[0]->batch, h->rows, h->dims, h->w_off, h->d_off, NULL, NULL};
    h->s = s;
}

TEST(ebgen_fill_is_the_hash_everywhere)
{
    pool_t p;
    int64_t dims[4] = {5, 16, 1, 7}, rows[4] = {301, 64, 9, 33};
    mk_pool(&p, 4, 37, dims, rows, 3, 3);
    shard_t h;
    mk_shard(&h, &p, (const int[]){0, 1, 2, 3}, 4);
    const int64_t wn = h.w_off[4], gn = 37 * h.d_off[4];
    uint16_t *W = malloc(2 * (size_t)wn), *W2 = malloc(2 * (size_t)wn);
    float *G = malloc(4 * (size_t)gn), *G2 = malloc(4 * (size_t)gn);
    memset(W, 0xee, 2 * (size_t)wn);
    as_ebg_fill_weights(W, &h.s, h.ids, 9, 1);
    as_ebg_fill_grad(G, &h.s, h.ids, 9, 1);
    /* every element is the definition's value; padding zero */
    int64_t bad = 0;
    for (int t = 0; t < 4; t++) {
        uint64_t wk = as_ebg_key(9, h.ids[t], AS_EBG_WEIGHTS), gk = as_ebg_key(9, h.ids[t], AS_EBG_GRADS);
        for (int64_t r = 0; r < rows[t]; r++)
            for (int64_t j = 0; j < dims[t]; j++)
                bad += W[h.w_off[t] + r * dims[t] + j] != as_ebg_weight(wk, (uint64_t)(r * dims[t] + j));
        for (int64_t e = h.w_off[t] + rows[t] * dims[t]; e < h.w_off[t + 1]; e++) bad += W[e] != 0;
        for (int64_t b = 0; b < 37; b++)
            for (int64_t j = 0; j < dims[t]; j++) {
                float v = G[b * h.d_off[4] + h.d_off[t] + j], want = as_ebg_grad(gk, (uint64_t)(b * dims[t] + j));
                bad += memcmp(&v, &want, 4) != 0;
            }
    }
    CHECK_EQ_I64(bad, 0);
    /* the thread count does not matter */
    for (int th = 2; th <= 4; th++) {
        memset(W2, 0x55, 2 * (size_t)wn);
        memset(G2, 0x55, 4 * (size_t)gn);
        as_ebg_fill_weights(W2, &h.s, h.ids, 9, th);
        as_ebg_fill_grad(G2, &h.s, h.ids, 9, th);
        CHECK(memcmp(W, W2, 2 * (size_t)wn) == 0);
        CHECK(memcmp(G, G2, 4 * (size_t)gn) == 0);
    }
    /* a table's values do not depend on the shard it is in: table 3 alone equals its part above */
    shard_t h1;
    mk_shard(&h1, &p, (const int[]){3}, 1);
    uint16_t W1[33 * 7 + AS_EBG_W_ALIGN];
    float G1[37 * 7];
    as_ebg_fill_weights(W1, &h1.s, h1.ids, 9, 2);
    as_ebg_fill_grad(G1, &h1.s, h1.ids, 9, 2);
    CHECK(memcmp(W1, W + h.w_off[3], 2 * 33 * 7) == 0);
    bad = 0;
    for (int64_t b = 0; b < 37; b++) bad += memcmp(G1 + b * 7, G + b * h.d_off[4] + h.d_off[3], 4 * 7) != 0;
    CHECK_EQ_I64(bad, 0);
    /* the seed and the table id change the values */
    as_ebg_fill_weights(W2, &h.s, h.ids, 10, 1);
    CHECK(memcmp(W, W2, 2 * (size_t)(rows[0] * dims[0])) != 0);
    int64_t ids2[4] = {h.ids[1], h.ids[0], h.ids[2], h.ids[3]};
    as_ebg_fill_weights(W2, &h.s, ids2, 9, 1);
    CHECK(memcmp(W, W2, 2 * (size_t)(rows[0] * dims[0])) != 0);
    free(W); free(W2); free(G); free(G2);
    free_pool(&p);
}

TEST(ebgen_fill_unordered_layout_zeroes_the_rest)
{
    /* tables placed in reverse order with gaps: every element outside a region is zero */
    pool_t p;
    int64_t dims[2] = {3, 4}, rows[2] = {5, 6};
    mk_pool(&p, 2, 4, dims, rows, 2, 4);
    int64_t r[2] = {5, 6}, wo[3] = {40, 3, 60}, ids[2] = {100, 101};
    int32_t d[2] = {3, 4}, doff[3] = {0, 3, 7};
    as_eb_shard s = {2, 4, r, d, wo, doff, NULL, NULL};
    uint16_t W[60];
    memset(W, 0xab, sizeof W);
    as_ebg_fill_weights(W, &s, ids, 1, 2);
    uint64_t k0 = as_ebg_key(1, 100, AS_EBG_WEIGHTS), k1 = as_ebg_key(1, 101, AS_EBG_WEIGHTS);
    int64_t bad = 0;
    for (int64_t e = 0; e < 60; e++) {
        uint16_t want = 0;
        if (e >= 40 && e < 55) want = as_ebg_weight(k0, (uint64_t)(e - 40));
        if (e >= 3 && e < 27) want = as_ebg_weight(k1, (uint64_t)(e - 3));
        bad += W[e] != want;
    }
    CHECK_EQ_I64(bad, 0);
    /* in order, with a gap before the first table and between them */
    int64_t wo2[3] = {5, 21, 50};
    s.w_off = wo2;
    memset(W, 0xab, sizeof W);
    as_ebg_fill_weights(W, &s, ids, 1, 2);
    bad = 0;
    for (int64_t e = 0; e < 50; e++) {
        uint16_t want = 0;
        if (e >= 5 && e < 20) want = as_ebg_weight(k0, (uint64_t)(e - 5));
        if (e >= 21 && e < 45) want = as_ebg_weight(k1, (uint64_t)(e - 21));
        bad += W[e] != want;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(W[50], 0xabab);   /* nothing past w_off[T] */
    free_pool(&p);
}

TEST(ebgen_fill_typed_is_the_fp16_fill_in_each_type)
{
    /* an fp16, an fp32 and a bf16 table in the typed layout (rows x dim x units, starts
     * aligned), with sizes that leave a tail of fewer than 4 elements: each region holds the
     * fp16 fill's values, widened exactly or rounded to bf16; padding zero; nothing past the
     * end; any thread count the same bits; the unordered layout zeroes the rest */
    pool_t p;
    int64_t dims[3] = {5, 7, 3}, rows[3] = {301, 65, 9};
    mk_pool(&p, 3, 6, dims, rows, 2, 2);
    const as_eb_table *tb[3] = {&p.t[0], &p.t[1], &p.t[2]};
    const uint8_t dt[3] = {AS_EB_F16, AS_EB_F32, AS_EB_BF16};
    int64_t r[3], wo[4], ids[3] = {p.t[0].id, p.t[1].id, p.t[2].id};
    int32_t d[3], doff[4];
    const int64_t wn = as_ebg_layout_typed(tb, 3, dt, r, d, wo, doff);
    CHECK(wo[1] % 2 == 0);
    as_eb_shard s = {3, 6, r, d, wo, doff, NULL, NULL};
    uint16_t *W = malloc(2 * (size_t)(wn + 8)), *W2 = malloc(2 * (size_t)(wn + 8));
    memset(W, 0xab, 2 * (size_t)(wn + 8));
    as_ebg_fill_weights_typed(W, &s, dt, ids, 7, 1);
    int64_t bad = 0;
    for (int t = 0; t < 3; t++) {
        const uint64_t k = as_ebg_key(7, ids[t], AS_EBG_WEIGHTS);
        const int64_t n = rows[t] * dims[t], u = as_eb_dtype_units((as_eb_dtype)dt[t]);
        for (int64_t e = 0; e < n; e++) {
            const uint16_t h = as_ebg_weight(k, (uint64_t)e);
            if (dt[t] == AS_EB_F16) bad += W[wo[t] + e] != h;
            else if (dt[t] == AS_EB_BF16) bad += W[wo[t] + e] != as_float_to_bf16_soft(as_half_to_float_soft(h));
            else {
                float v, want = as_half_to_float_soft(h);
                memcpy(&v, W + wo[t] + 2 * e, 4);
                bad += memcmp(&v, &want, 4) != 0;
            }
        }
        for (int64_t e = wo[t] + n * u; e < wo[t + 1]; e++) bad += W[e] != 0;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(W[wn], 0xabab);
    for (int th = 2; th <= 3; th++) {
        memset(W2, 0x55, 2 * (size_t)wn);
        as_ebg_fill_weights_typed(W2, &s, dt, ids, 7, th);
        CHECK(memcmp(W, W2, 2 * (size_t)wn) == 0);
    }
    /* every table fp16: the untyped fill's bits */
    const uint8_t h16[3] = {AS_EB_F16, AS_EB_F16, AS_EB_F16};
    int64_t wo16[4];
    const int64_t wn16 = as_ebg_layout_typed(tb, 3, h16, r, d, wo16, doff);
    s.w_off = wo16;
    as_ebg_fill_weights_typed(W, &s, h16, ids, 7, 2);
    as_ebg_fill_weights(W2, &s, ids, 7, 2);
    CHECK(memcmp(W, W2, 2 * (size_t)wn16) == 0);
    /* out of order (the bf16 table before the fp32 one in W): the rest zeroed, each region's values */
    int64_t wun[4] = {200, 10, 1120, 1130};
    const uint8_t dt2[3] = {AS_EB_F32, AS_EB_BF16, AS_EB_F16};
    int64_t r2[3] = {65, 9, 1}, ids2[3] = {ids[1], ids[2], ids[0]};
    int32_t d2[3] = {7, 3, 5};
    as_eb_shard s2 = {3, 6, r2, d2, wun, doff, NULL, NULL};
    uint16_t *W3 = malloc(2 * 1130);
    memset(W3, 0xab, 2 * 1130);
    as_ebg_fill_weights_typed(W3, &s2, dt2, ids2, 7, 2);
    bad = 0;
    for (int64_t e = 0; e < 1130; e++) {
        int t = e >= 200 && e < 1110 ? 0 : e >= 10 && e < 37 ? 1 : e >= 1120 && e < 1125 ? 2 : -1;
        if (t < 0) { bad += W3[e] != 0; continue; }
        const uint64_t k = as_ebg_key(7, ids2[t], AS_EBG_WEIGHTS);
        const int64_t x = t == 0 ? (e - 200) / 2 : e - wun[t];
        const uint16_t h = as_ebg_weight(k, (uint64_t)x);
        if (t == 2) bad += W3[e] != h;
        else if (t == 1) bad += W3[e] != as_float_to_bf16_soft(as_half_to_float_soft(h));
        else {
            const float want = as_half_to_float_soft(h);
            uint16_t half[2];
            memcpy(half, &want, 4);
            bad += W3[e] != half[(e - 200) % 2];
        }
    }
    CHECK_EQ_I64(bad, 0);
    free(W3);
    free(W); free(W2);
    free_pool(&p);
}

TEST(ebgen_check_table)
{
    pool_t p;
    int64_t dims[1] = {4}, rows[1] = {10};
    mk_pool(&p, 1, 8, dims, rows, 5, 5);
    char err[256] = "";
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == 0);
    int64_t L = p.t[0].lookups;
    CHECK(L > 2);
    /* an out-of-range index: named with the table id, the bag and the position */
    int32_t keep = p.ind[0][L - 1];
    p.ind[0][L - 1] = 10;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == -1);
    CHECK(strstr(err, "table 100") != NULL);
    CHECK(strstr(err, "out-of-range") != NULL);
    int64_t b = 7;
    while (p.off[0][b] > L - 1) b--;
    char want[64];
    snprintf(want, sizeof want, "bag %lld", (long long)b);
    CHECK(strstr(err, want) != NULL);
    p.ind[0][L - 1] = -1;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == -1);
    CHECK(strstr(err, "negative") != NULL);
    p.ind[0][L - 1] = keep;
    /* offsets that decrease, or do not end at lookups */
    int64_t o3 = p.off[0][3];
    p.off[0][3] = p.off[0][4] + 1;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == -1);
    CHECK(strstr(err, "decrease") != NULL);
    p.off[0][3] = o3;
    p.t[0].lookups = L + 1;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == -1);
    CHECK(strstr(err, "lookups") != NULL);
    p.t[0].lookups = L;
    p.t[0].rows = 0;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == -1);
    p.t[0].rows = 10;
    CHECK(as_ebg_check_table(&p.t[0], err, sizeof err) == 0);
    free_pool(&p);
}
