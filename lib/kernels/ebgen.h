/* ebgen.h - the data as-bench measures a shard on, made the same way on the CPU
 * (ebgen.c, OpenMP) and on a CUDA device (embbag.cu): generated fp16 weights and fp32
 * gradients, and a shard assembled from tables of a pool (layout, concatenated bags).
 * Dimension letters: B batch, D dim, E rows, T tables.
 *
 * Generated values come from a counter-based hash, so each element is a pure function of
 * (seed, table id, element) and does not depend on where, in which order or by how many
 * threads it is computed:
 *   weight of table `id`, row r, column j (element e = r*D + j of the table):
 *       h = bits(key(seed, id, WEIGHTS), e / 4), the 16 bits (e % 4)*16.. of h, made a small
 *       fp16 value: sign random, exponent 7..10, mantissa random: |w| in [2^-8, 2^-4)
 *   gradient of table `id`, bag b, column j (element e = b*D + j of the table's [B, D] block):
 *       h = bits(key(seed, id, GRADS), e / 2), u = the top 24 bits of the 32-bit half (e % 2)
 *       of h, g = (u * 2^-24 - 0.5f) * 0.01f: uniform in [-0.005, 0.005)
 * key() and bits() are splitmix64 finalisers over 64-bit integers: exact everywhere. In
 * as_ebg_grad only the final multiply rounds (u * 2^-24 and the subtraction are exact in
 * fp32), so a fused multiply-add cannot change the result either: host and device agree
 * bit for bit. The functions below are `static inline` in C and `__host__ __device__` under
 * nvcc, so the CPU fill and the CUDA kernels share this one definition.
 *
 * Shard assembly (as_ebg_layout, as_ebg_gather): d_off packed; every table's weights start
 * at a multiple of AS_EBG_W_ALIGN elements (64 bytes: a cache line on the CPU, and the
 * GPU forward's 16-byte vector loads apply to every table whose dim allows them); the
 * padding between tables is zero. Bags are
 * concatenated table-major: offsets[t*B + b] = (lookups of tables before t) + offsets_t[b],
 * indices appended in table order. */
#ifndef AS_EBGEN_H
#define AS_EBGEN_H

#include <stddef.h>
#include <stdint.h>

#include "ebshard.h"

#ifdef __CUDACC__
#define AS_EBG_FN static __host__ __device__ __forceinline__
#else
#define AS_EBG_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define AS_EBG_W_ALIGN 32     /* elements: table starts in W (64 bytes, a cache line) */
#define AS_EBG_WEIGHTS 0u     /* streams of a table's key */
#define AS_EBG_GRADS 1u

AS_EBG_FN uint64_t as_ebg_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* the key of one stream (AS_EBG_WEIGHTS or AS_EBG_GRADS) of table `id` under `seed` */
AS_EBG_FN uint64_t as_ebg_key(uint64_t seed, int64_t id, uint32_t stream)
{
    uint64_t k = as_ebg_mix(seed ^ 0x6a09e667f3bcc909ULL);
    return as_ebg_mix(k + ((uint64_t)id * 2u + stream + 1u) * 0x9e3779b97f4a7c15ULL);
}

/* 64 random bits number `c` of the stream with key `key` */
AS_EBG_FN uint64_t as_ebg_bits(uint64_t key, uint64_t c)
{
    return as_ebg_mix(key ^ ((c + 1u) * 0xd1b54a32d192ed03ULL));
}

/* 16 random bits -> a small fp16 weight: sign, exponent 7..10, 10 mantissa bits */
AS_EBG_FN uint16_t as_ebg_half(uint32_t h16)
{
    return (uint16_t)((h16 & 0x83ffu) | ((7u + ((h16 >> 10) & 3u)) << 10));
}

/* weight element e (= row*D + col) of the table whose weight key is wkey */
AS_EBG_FN uint16_t as_ebg_weight(uint64_t wkey, uint64_t e)
{
    uint64_t h = as_ebg_bits(wkey, e >> 2);
    return as_ebg_half((uint32_t)(h >> (16u * (unsigned)(e & 3u))) & 0xffffu);
}

/* 32 random bits -> a gradient in [-0.005, 0.005) */
AS_EBG_FN float as_ebg_gradf(uint32_t h32)
{
    float u = (float)(h32 >> 8) * 5.9604644775390625e-8f;   /* 2^-24: exact */
    return (u - 0.5f) * 0.01f;                              /* exact, then one rounding */
}

/* gradient element e (= bag*D + col) of the table whose gradient key is gkey */
AS_EBG_FN float as_ebg_grad(uint64_t gkey, uint64_t e)
{
    uint64_t h = as_ebg_bits(gkey, e >> 1);
    return as_ebg_gradf((uint32_t)(h >> (32u * (unsigned)(e & 1u))));
}

/* ---- CPU (ebgen.c) ------------------------------------------------------------------------ */

/* rows, dims, w_off [T+1] and d_off [T+1] of the shard made of tabs[0..T) (the layout
 * above); returns w_off[T], the elements of W (padding included) */
int64_t as_ebg_layout(const as_eb_table *const *tabs, int32_t T, int64_t *rows, int32_t *dims, int64_t *w_off,
                      int32_t *d_off);
/* as_ebg_layout in 2-byte units for the typed op (ebopt.h): table t of type dt[t] takes rows x
 * dim x as_eb_dtype_units(dt[t]) units, its start rounded up to AS_EBG_W_ALIGN units (so a
 * fp32 table starts at an even unit); returns w_off[T]. dt NULL: every table fp16 (one unit
 * an element), which is as_ebg_layout. The device context lays a typed
 * shard out this way (as_eb_gpu_ctx_set_kind), and as-bench its host copies of one. */
int64_t as_ebg_layout_typed(const as_eb_table *const *tabs, int32_t T, const uint8_t *dt, int64_t *rows, int32_t *dims,
                            int64_t *w_off, int32_t *d_off);

/* the concatenated offsets [T*B + 1] and indices [sum of lookups] of tabs[0..T), which all
 * have batch B. The CPU reference of the device gather. nthreads <= 0: OpenMP's default */
void as_ebg_gather(int64_t *offsets, int32_t *indices, const as_eb_table *const *tabs, int32_t T, int64_t B,
                   int nthreads);

/* W [w_off[T]] of shard s: table t's region from its table id ids[t] (above), every other
 * element zero. The regions must be in table order (w_off[t] + E_t*D_t <= w_off[t+1], as
 * as_ebg_layout makes them); otherwise W is zeroed first. */
void as_ebg_fill_weights(uint16_t *W, const as_eb_shard *s, const int64_t *ids, uint64_t seed, int nthreads);

/* W of a typed shard (as_ebg_layout_typed's layout, w_off in 2-byte units): table t's region
 * holds the values as_ebg_fill_weights gives it, in its type dt[t] (ebshard.h; dt NULL: every
 * table fp16, as_ebg_fill_weights): fp16 as they are, fp32 widened (exactly), bf16 that fp32
 * rounded to nearest even; every other unit zero.
 * The regions must be in table order; otherwise W is zeroed first. */
void as_ebg_fill_weights_typed(uint16_t *W, const as_eb_shard *s, const uint8_t *dt, const int64_t *ids, uint64_t seed,
                               int nthreads);

/* grad [B, sumD] of shard s: columns d_off[t].. of row b from table ids[t]'s stream, element
 * b*D_t + j (above) */
void as_ebg_fill_grad(float *grad, const as_eb_shard *s, const int64_t *ids, uint64_t seed, int nthreads);

/* one pool table on its own: rows and dim >= 1, batch >= 0, offsets start at 0, never
 * decrease and end at `lookups`, every index in [0, rows). 0, or -1 with err naming table
 * `id`, the bag and the position */
int as_ebg_check_table(const as_eb_table *t, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
