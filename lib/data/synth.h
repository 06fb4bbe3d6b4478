/* synth.h - a MetaSyn-like synthetic pool of embedding tables, with no input file.
 * Dimension letters: B batch, L pooling, E rows (hash size), T tables.
 *
 * Calibrated to the published statistics of MetaSyn's 856-table file (see
 * docs/SYNTH.md for how close it comes): hash sizes max/mean/min 12.5M / 4.1M / 1,
 * power-law pooling factors (mean 15, max ~193, some tables 0), and power-law index reuse
 * whose whole-pool histogram of distinct-row access counts matches the published one.
 * Every table is generated from (seed, table id) alone, so any subset, in any order, on
 * any machine, gives the same tables.
 */
#ifndef AS_SYNTH_H
#define AS_SYNTH_H

#include <stdint.h>

typedef struct {
    int64_t tables;      /* T, default 856 */
    int64_t batch;       /* B, default 65536 */
    uint64_t seed;       /* default 0 */
    double row_scale;    /* multiplies every hash size (default 1.0; laptops/tests: 0.01) */
    double pool_scale;   /* multiplies every pooling factor (default 1.0) */
} as_synth_cfg;

void as_synth_defaults(as_synth_cfg *c);

/* one generated table; arrays malloc'd, free with as_synth_free */
typedef struct {
    int64_t id;          /* table id, 0..T-1 */
    int64_t rows;        /* E = max index + 1 (>= 1); the hash size */
    int64_t batch;       /* B */
    int64_t lookups;     /* total indices = offsets[B] */
    int64_t *offsets;    /* B+1 entries, offsets[0] = 0, non-decreasing */
    int32_t *indices;    /* lookups entries, each in [0, rows) */
} as_synth_table;

/* the table-level parameters behind table t; they depend on (seed, t, row_scale,
 * pool_scale) only - never on batch or tables (beyond t < tables) */
typedef struct {
    int64_t hash;        /* E the indices are drawn from, >= 1 (measured rows <= hash) */
    double pooling;      /* mean bag length L (0: an empty table), pool_scale applied */
    double zipf;         /* head exponent s: rank r (0-based) has weight (r+1)^-s ... */
    double zipf2;        /* ... up to the knee, then falls off with exponent s2 >= s */
    double knee;         /* K >= 1: weight(r) = K^(s2-s) (r+1)^-s2 for r+1 > K */
} as_synth_params;

/* Returns 0, or -EINVAL for a bad config or t out of range. */
int as_synth_table_params(const as_synth_cfg *c, int64_t t, as_synth_params *p);

/* Generate table t (0 <= t < c->tables). Deterministic in (c, t); bag b of a batch-B
 * table equals bag b of the same table made with a larger batch. rows is max index + 1,
 * or 1 for a table with no lookups. Returns 0 on success, -EINVAL for a bad config or t,
 * -ENOMEM when out of memory (out is then empty; as_synth_free on it is safe). */
int as_synth_table_gen(const as_synth_cfg *c, int64_t t, as_synth_table *out);
/* One table's lookups from its parameters p alone (as_synth_table_gen is this with table t's
 * parameters and stream 3t): B bags, geometric lengths of mean p->pooling, or with fixed
 * every bag exactly p->pooling long (an integer); rows ranked by the broken power law of
 * p (zipf = zipf2 and knee >= hash: a plain Zipf of exponent zipf; 0: uniform) and
 * permuted over [0, hash). Seeded by (seed, stream + 1) and (seed, stream + 2). out->id is
 * 0 and out->rows max index + 1. Returns 0, -EINVAL for bad parameters (hash outside
 * 1..2^31-1, B outside 1..2^40, a fixed pooling that is not an integer, ...), -ENOMEM. */
int as_synth_gen(const as_synth_params *p, int64_t B, uint64_t seed, uint64_t stream, int fixed, as_synth_table *out);
void as_synth_free(as_synth_table *tb);

#endif
