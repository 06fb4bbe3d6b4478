/* half.c - fp16 / bf16 <-> fp32 conversion and F16C detection; see half.h. */
#include "half.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) || defined(__clang__)
#define AS_HALF_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif
#endif

#if defined(__F16C__) && defined(AS_HALF_X86)
float as_half_to_float(uint16_t h) { return _cvtsh_ss(h); }
uint16_t as_float_to_half(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
#else
float as_half_to_float(uint16_t h) { return as_half_to_float_soft(h); }
uint16_t as_float_to_half(float f) { return as_float_to_half_soft(f); }
#endif

float as_bf16_to_float(uint16_t h) { return as_bf16_to_float_soft(h); }

uint16_t as_float_to_bf16(float f) { return as_float_to_bf16_soft(f); }

#ifdef AS_HALF_X86
/* CPUID.1:ECX F16C (29), AVX (28), OSXSAVE (27), and the OS saves YMM state (XCR0 1,2) */
static int detect_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 29)) || !(c & (1u << 28)) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
}

int as_half_cpu_f16c(void)
{
    static int detected = -1;
    int d = __atomic_load_n(&detected, __ATOMIC_RELAXED);
    if (d < 0) {
        d = detect_f16c();
        __atomic_store_n(&detected, d, __ATOMIC_RELAXED);
    }
    return d;
}

__attribute__((target("avx,f16c"))) static void h2f_hw(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; i++) out[i] = _cvtsh_ss(in[i]);
}

__attribute__((target("avx,f16c"))) static void f2h_hw(uint16_t *out, const float *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) out[i] = (uint16_t)_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT);
}

int as_half_to_float_hw(float *out, const uint16_t *in, size_t n)
{
    if (!as_half_cpu_f16c()) return -1;
    h2f_hw(out, in, n);
    return 0;
}

int as_float_to_half_hw(uint16_t *out, const float *in, size_t n)
{
    if (!as_half_cpu_f16c()) return -1;
    f2h_hw(out, in, n);
    return 0;
}
#else
int as_half_cpu_f16c(void) { return 0; }
int as_half_to_float_hw(float *out, const uint16_t *in, size_t n) { (void)out; (void)in; (void)n; return -1; }
int as_float_to_half_hw(uint16_t *out, const float *in, size_t n) { (void)out; (void)in; (void)n; return -1; }
#endif
