/* half.h - fp16 (IEEE binary16) and bfloat16 <-> fp32 conversion, round to nearest even,
 * subnormals, infinities and NaNs handled. The weights of the embedding-bag op are fp16
 * (embbag.h); torch.save tensors and stream arrays may be fp16 or bf16 (torchsave.h,
 * stream.h). Plain C, no I/O; usable from C++ (CUDA sources) too.
 *
 * as_half_to_float / as_float_to_half use the F16C instructions when the build targets them
 * (-mf16c), else the portable code below, which gives the same bits: NaNs are quieted and
 * keep their sign and top payload bits, as F16C does.
 */
#ifndef AS_HALF_H
#define AS_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

float as_half_to_float(uint16_t h);
uint16_t as_float_to_half(float f);
/* bfloat16 is the top half of a float32; NaNs stay NaN (quieted) */
float as_bf16_to_float(uint16_t h);
uint16_t as_float_to_bf16(float f);

/* the portable conversions, inline for hot loops (embbag.c's references and its path for
 * CPUs without F16C); bit-identical to the F16C instructions */
static inline float as_half_to_float_soft(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    float f;
    if (e == 0x1f) u = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0);
    else if (e) u = sign | ((e + 112) << 23) | (m << 13);
    else {   /* zero or subnormal m * 2^-24: exact in fp32 (a normal number or zero) */
        f = (float)m * 0x1p-24f;
        memcpy(&u, &f, 4);
        u |= sign;
    }
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t as_float_to_half_soft(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u)                       /* inf or nan (quieted, top payload bits) */
        return (uint16_t)(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0));
    uint32_t e = x >> 23;
    if (e >= 143) return (uint16_t)(sign | 0x7c00u);  /* >= 2^16: overflow */
    if (e >= 113) {                                   /* normal half (or rounds up to inf) */
        uint32_t h = ((e - 112) << 10) | ((x >> 13) & 0x3ffu);
        uint32_t rem = x & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;   /* carry may reach inf */
        return (uint16_t)(sign | h);
    }
    if (e < 102) return sign;                         /* < 2^-25: rounds to zero */
    /* subnormal half: value = m * 2^(e-150), in units of 2^-24 that is m >> (126 - e) */
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    uint32_t sh = 126 - e;                            /* 14 .. 24 */
    uint32_t h = m >> sh, rem = m & ((1u << sh) - 1), halfw = 1u << (sh - 1);
    if (rem > halfw || (rem == halfw && (h & 1))) h++; /* may become the smallest normal */
    return (uint16_t)(sign | h);
}

/* bfloat16 <-> fp32 inline, for hot loops: the same bits as as_bf16_to_float / as_float_to_bf16 */
static inline float as_bf16_to_float_soft(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t as_float_to_bf16_soft(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* 1 when this CPU has F16C and AVX and the OS saves the YMM registers (x86; 0 elsewhere).
 * Detected once; embbag.c dispatches its hot loops on it. */
int as_half_cpu_f16c(void);
/* n conversions with the F16C instructions, whatever the build flags (tests compare them
 * with the portable ones); 0, or -1 when the CPU (or the architecture) has no F16C */
int as_half_to_float_hw(float *out, const uint16_t *in, size_t n);
int as_float_to_half_hw(uint16_t *out, const float *in, size_t n);

#ifdef __cplusplus
}
#endif

#endif
