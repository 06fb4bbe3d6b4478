/* shardgen.h - test support: the seeded PRNG and the synthetic-shard scaffolding shared by
 * the embedding-bag tests and benchmarks (tests/unit/kernels/test_embbag.c, tests/gpu/
 * test_gpu_embbag.c, tests/tools/bench-kernel.c). Linked from build/libtestsupport.a into
 * the test binaries and test tools, never into the tools of cmd/.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * A builder lays a shard out (tsup_shard_layout), fills offsets[0..T*B] its own way,
 * allocates the rest (tsup_shard_data) and fills indices, W and grad; each caller keeps its
 * own bag sizes, row distribution and weight pattern, so its random streams (and with them
 * the shards a benchmark has measured) stay what they were.
 */
#ifndef AS_TESTS_SHARDGEN_H
#define AS_TESTS_SHARDGEN_H

#include <stdint.h>

#include "embbag.h"

/* ---- a seeded stream in one uint64_t state: as_splitmix64 (common.h) ----------------------- */
/* [0, 1) with 53 bits */
double tsup_unif(uint64_t *state);
/* as_splitmix64() % n, 0 when n is 0 (slightly biased for huge n: fine for tests) */
uint64_t tsup_below(uint64_t *state, uint64_t n);
/* n floats uniform in [-1, 1): (float)(2 u - 1) */
void tsup_fill_unit(float *v, int64_t n, uint64_t *state);

/* ---- Zipf rows ------------------------------------------------------------------------------ */
/* rank ~ continuous Zipf with exponent alpha (!= 1) on [1, E] by its inverse CDF, then
 * scattered over the rows by the multiplicative permutation rank * 2654435761 mod E */
typedef struct { int64_t E; double c1, ia; } tsup_zipf;
void tsup_zipf_init(tsup_zipf *z, int64_t E, double alpha);
/* the row for u uniform in [0, 1) */
int64_t tsup_zipf_row(const tsup_zipf *z, double u);

/* ---- shards ------------------------------------------------------------------------------- */
typedef struct {
    as_eb_shard s;                 /* points into the arrays below (set by tsup_shard_data) */
    int64_t *rows, *w_off, *offsets;
    int32_t *dims, *d_off, *indices;
    uint16_t *W;
    float *grad;
    int64_t nW, sumD, nidx;        /* w_off[T], d_off[T], offsets[T*B] */
} tsup_shard;

/* zero *x, then allocate rows, dims, w_off, d_off ([T+1]) and offsets ([T*B+1], zeroed) and
 * lay the tables out: rows[t] = rows ? rows[t] : E, dims[t] = dims[t], table t's weights at
 * w_off[t] with w_pad elements after each table, packed d_off. 0, or -1 out of memory (what
 * was allocated stays for tsup_shard_free). */
int tsup_shard_layout(tsup_shard *x, int T, int64_t B, const int64_t *rows, int64_t E, const int32_t *dims,
                      int64_t w_pad);
/* after offsets[0..T*B] are filled: nidx = offsets[T*B]; allocate indices [nidx], W [nW]
 * and grad [B*sumD] (uninitialised, each one element longer so empty is fine) and point s
 * at the arrays. 0, or -1 out of memory. */
int tsup_shard_data(tsup_shard *x, int T, int64_t B);
/* free the arrays (x itself is the caller's) and zero *x */
void tsup_shard_free(tsup_shard *x);

#endif
