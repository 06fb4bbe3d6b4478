/* test_half.c - fp16 and bf16 conversion (lib/core/half.c): every half round-trips, the
 * portable code against the F16C instructions (every half, the midpoints between
 * neighbours, random bit patterns), rounding ties, subnormals, overflow, NaN; bf16 by hand. */
#include "unit.h"
#include "half.h"
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

TEST(half_every_value_round_trips)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = as_half_to_float((uint16_t)h);
        if (fbits(f) != fbits(as_half_to_float_soft((uint16_t)h))) bad++;
        uint16_t back = as_float_to_half(f);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {   /* nan: stays nan, sign kept, quieted */
            if (!isnan(f) || back != (uint16_t)(h | 0x200)) bad++;
        } else if (back != h) {
            bad++;
        }
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(as_half_to_float(0x3c00) == 1.0f);
    CHECK(as_half_to_float(0xc000) == -2.0f);
    CHECK(as_half_to_float(0x7bff) == 65504.0f);
    CHECK(as_half_to_float(0x0001) == 0x1p-24f);
    CHECK(as_half_to_float(0x03ff) == 1023 * 0x1p-24f);
    CHECK(as_half_to_float(0x0400) == 0x1p-14f);
    CHECK(isinf(as_half_to_float(0x7c00)) && as_half_to_float(0x7c00) > 0);
    CHECK(isinf(as_half_to_float(0xfc00)) && as_half_to_float(0xfc00) < 0);
    CHECK_EQ_I64(fbits(as_half_to_float(0x8000)), 0x80000000u);
    CHECK(isnan(as_half_to_float(0x7e00)));
}

TEST(half_hw_matches_portable)
{
    static uint16_t h[65536];
    static float f[65536];
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    if (as_half_to_float_hw(f, h, 65536) != 0) {
        fprintf(stderr, "  (no F16C on this CPU: hardware comparison skipped)\n");
        return;
    }
    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) bad += fbits(f[i]) != fbits(as_half_to_float_soft((uint16_t)i));
    CHECK_EQ_I64(bad, 0);

    /* float -> half: every half, the midpoints to its neighbour and one float either side */
    enum { N = 1 << 16 };
    float *in = malloc(sizeof(float) * N * 5);
    uint16_t *hw = malloc(2 * N * 5);
    size_t n = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        float a = as_half_to_float_soft((uint16_t)i), b = as_half_to_float_soft((uint16_t)(i + 1));
        in[n++] = a;
        if (isfinite(a) && isfinite(b) && (i & 0x7fff) != 0x7fff) {
            float mid = (float)(((double)a + (double)b) / 2);   /* exact: 12-bit mantissas */
            in[n++] = mid;
            in[n++] = nextafterf(mid, INFINITY);
            in[n++] = nextafterf(mid, -INFINITY);
        }
    }
    CHECK(n <= (size_t)N * 5);
    if (as_float_to_half_hw(hw, in, n) == 0) {
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += hw[i] != as_float_to_half_soft(in[i]);
        CHECK_EQ_I64(bad, 0);
    }
    /* random bit patterns (all exponents, nans, float subnormals) */
    as_rng r;
    as_rng_seed(&r, 7, 0);
    bad = 0;
    for (int rep = 0; rep < 8; rep++) {
        for (size_t i = 0; i < (size_t)N; i++) {
            uint32_t u = (uint32_t)as_rng_next(&r);
            if (rep & 1) u = (u & 0x807fffffu) | ((uint32_t)(96 + as_rng_below(&r, 48)) << 23); /* near half range */
            in[i] = bitsf(u);
        }
        if (as_float_to_half_hw(hw, in, N) != 0) break;
        for (size_t i = 0; i < (size_t)N; i++) bad += hw[i] != as_float_to_half_soft(in[i]);
    }
    CHECK_EQ_I64(bad, 0);
    free(in);
    free(hw);
}

TEST(half_float_to_half_rounding)
{
    struct { float f; uint16_t h; } c[] = {
        { 1.0f, 0x3c00 },
        { 1.0f + 0x1p-11f, 0x3c00 },                 /* tie -> even (down) */
        { 1.0f + 3 * 0x1p-11f, 0x3c02 },             /* tie -> even (up) */
        { 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 },      /* just above the tie */
        { 1.0f + 0x1p-11f - 0x1p-20f, 0x3c00 },      /* just below */
        { -1.0f - 3 * 0x1p-11f, 0xbc02 },
        { 0.1f, 0x2e66 },
        { 65504.0f, 0x7bff },
        { 65519.0f, 0x7bff },
        { 65520.0f, 0x7c00 },                        /* tie between max and 2^16 -> inf */
        { 1e10f, 0x7c00 },
        { -1e10f, 0xfc00 },
        { INFINITY, 0x7c00 },
        { -INFINITY, 0xfc00 },
        { 0.0f, 0x0000 },
        { -0.0f, 0x8000 },
        { 0x1p-14f, 0x0400 },                        /* smallest normal */
        { 0x1p-14f - 0x1p-25f, 0x0400 },             /* tie 0x3ff/0x400 -> even 0x400 */
        { 0x1p-14f - 3 * 0x1p-25f, 0x03fe },         /* tie 0x3fe/0x3ff -> even 0x3fe */
        { 0x1p-24f, 0x0001 },                        /* smallest subnormal */
        { 0x1p-25f, 0x0000 },                        /* tie 0/1 -> 0 */
        { 0x1p-25f + 0x1p-40f, 0x0001 },
        { -0x1p-25f, 0x8000 },
        { 3 * 0x1p-25f, 0x0002 },                    /* 1.5 units: tie 1/2 -> 2 */
        { 5 * 0x1p-25f, 0x0002 },                    /* 2.5 units: tie 2/3 -> 2 */
        { 0x1p-26f, 0x0000 },
        { 1e-45f, 0x0000 },                          /* float subnormal */
        { -1e-45f, 0x8000 },
        { 2049.0f, 0x6800 },                         /* 2048 + 1: tie -> 2048 */
        { 2051.0f, 0x6802 },                         /* tie -> 2052 */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        if (as_float_to_half(c[i].f) != c[i].h) {
            fprintf(stderr, "  case %zu: %a -> %04x, want %04x\n", i, (double)c[i].f,
                    as_float_to_half(c[i].f), c[i].h);
            CHECK(0);
        }
        CHECK_EQ_I64(as_float_to_half_soft(c[i].f), c[i].h);
    }
    CHECK_EQ_I64(as_float_to_half(NAN), 0x7e00);
    CHECK_EQ_I64(as_float_to_half(-NAN), 0xfe00);
    CHECK_EQ_I64(as_float_to_half(bitsf(0x7f800001u)), 0x7e00);   /* signalling -> quiet */
    CHECK_EQ_I64(as_float_to_half(bitsf(0x7fffe000u)), 0x7fff);   /* payload kept */

    /* random finite floats: the result is a nearest half, ties to the even one */
    as_rng r;
    as_rng_seed(&r, 11, 0);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f = (float)((as_rng_uniform(&r) * 2 - 1) * ldexp(1.0, (int)as_rng_below(&r, 44) - 27));
        if (!(fabsf(f) < 65520.0f)) continue;
        uint16_t h = as_float_to_half(f);
        double d = fabs((double)as_half_to_float(h) - f);
        uint16_t up = (uint16_t)(h + 1), dn = (uint16_t)(h - 1);
        if ((h & 0x7fff) != 0x7bff && fabs((double)as_half_to_float(up) - f) < d) bad++;
        if ((h & 0x7fff) != 0 && fabs((double)as_half_to_float(dn) - f) < d) bad++;
        if ((h & 0x7fff) != 0x7bff && fabs((double)as_half_to_float(up) - f) == d && (h & 1)) bad++;
        if ((h & 0x7fff) != 0 && fabs((double)as_half_to_float(dn) - f) == d && (h & 1)) bad++;
    }
    CHECK_EQ_I64(bad, 0);
}

/* bf16 is the top half of a float32: values by hand, ties to even, NaNs quieted */
TEST(half_bf16_by_hand)
{
    CHECK(as_bf16_to_float(0x3f80) == 1.0f);
    CHECK(as_bf16_to_float(0xc000) == -2.0f);
    CHECK(as_bf16_to_float(0x4049) == 3.140625f);        /* 0x40490000 */
    CHECK(as_bf16_to_float(0x0001) == 0x1p-133f);        /* 0x00010000: a float subnormal */
    CHECK(isinf(as_bf16_to_float(0xff80)) && as_bf16_to_float(0xff80) < 0);
    CHECK_EQ_I64(as_float_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_I64(as_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);              /* tie -> even (down) */
    CHECK_EQ_I64(as_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);          /* tie -> even (up) */
    CHECK_EQ_I64(as_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);   /* above the tie */
    CHECK_EQ_I64(as_float_to_bf16(-1.0f - 0x1p-8f + 0x1p-20f), 0xbf80);  /* below it */
    CHECK_EQ_I64(as_float_to_bf16(3.14159265f), 0x4049);                 /* 0x40490fdb */
    CHECK_EQ_I64(as_float_to_bf16(bitsf(0x7f7fffffu)), 0x7f80);          /* FLT_MAX -> inf */
    CHECK_EQ_I64(as_float_to_bf16(bitsf(0x7f7f7fffu)), 0x7f7f);          /* below the midpoint */
    CHECK_EQ_I64(as_float_to_bf16(bitsf(0x7f800001u)), 0x7fc0);          /* signalling -> quiet */
    CHECK_EQ_I64(as_float_to_bf16(bitsf(0xff800001u)), 0xffc0);
    CHECK_EQ_I64(as_float_to_bf16(bitsf(0x7fc00000u)), 0x7fc0);
    CHECK_EQ_I64(as_float_to_bf16(-0.0f), 0x8000);
    int bad = 0;   /* every bf16 but the NaNs comes back unchanged */
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
        bad += as_float_to_bf16(as_bf16_to_float((uint16_t)h)) != h;
    }
    CHECK_EQ_I64(bad, 0);
}
