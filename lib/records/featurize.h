/* featurize.h - the per-table features of the cost model and the RL policy (21, the paper's
 * order) plus cheap extras, computed in one pass over a table's batch of lookups.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * The 17 index-distribution bins: for every distinct row touched in the batch, count its
 * accesses c >= 1; bin k holds c in (2^(k-1), 2^k] for k = 0..15 (bin 0 is (0,1]) and
 * bin 16 holds c > 32768. bins[k] = fraction of distinct rows in bin k (sums to 1, or all
 * 0 for a table with no lookups); lookup_bins[k] = fraction of lookups that hit a row
 * of bin k. Size = rows x dim x 2 bytes (fp16 weights) in GiB (2^30 bytes).
 */
#ifndef AS_FEATURIZE_H
#define AS_FEATURIZE_H

#include <stdint.h>

#include "piece.h"
#include "stream.h"
#include "trmem.h"
#include "table.h"   /* the table record as_features_compute reads (as_table_parse) */

#define AS_NBINS 17
#define AS_NFEATURES 21   /* dim, rows, pooling, size, 17 bins */

typedef struct {
    int64_t id, rows, batch, lookups, dim, distinct, max_bag;
    double pooling;                  /* lookups / batch */
    double size_gib;                 /* rows * dim * 2 / 2^30 */
    double bins[AS_NBINS];           /* fraction of distinct rows per access-count bin */
    double lookup_bins[AS_NBINS];    /* fraction of lookups per bin */
    int64_t bytes_fp16, bytes_fp32;  /* weight bytes */
    char source[128];
    char name[128];                  /* the table's name in its model ("" none: as-convert
                                      * --config gives one) */
    char data_type[8];               /* its weights' data type there ("" not given) */
    as_trmem mem;                    /* TorchRec's memory model of this table (or piece) as
                                      * one shard (trmem.h; all 0: not given, the planners
                                      * then count its fp16 weights) */
    as_piece piece;                  /* the piece of table `id` these describe (whole: the
                                      * table); dim and rows are the piece's: c1 - c0, r1 - r0 */
} as_features;

/* bin of an access count c >= 1 */
static inline int as_count_bin(uint64_t c)
{
    if (c <= 1) return 0;
    int k = 64 - __builtin_clzll(c - 1);
    return k < AS_NBINS - 1 ? k : AS_NBINS - 1;
}

/* reusable scratch: a count per row, kept zero between tables. A table of more rows than
 * AS_FEAT_DENSE_ROWS and more than 16 per lookup is counted from a sorted copy of its
 * indices instead (same features; memory bounded by the lookups, not the rows). */
#define AS_FEAT_DENSE_ROWS ((int64_t)1 << 26)
typedef struct {
    uint32_t *count;
    int64_t cap;
    int mode;               /* 0 auto, 1 always the count per row, 2 always sort (tests) */
} as_feat_scratch;

void as_feat_scratch_free(as_feat_scratch *s);

/* Compute the features of a table from its lookups, as as_table_parse (table.h) returns
 * them. indices: `lookups` row ids (int32 or int64 little-endian, possibly unaligned),
 * offsets: B+1 entries (int32 or int64).
 * Returns 0, or -1 with err set when an index falls outside [0, rows). */
int as_features_compute(as_features *f, as_feat_scratch *s, int64_t id, int64_t rows, int64_t dim,
                        const as_array *offsets, const as_array *indices, char *err, size_t errlen);

/* The features of the row piece [r0, r1) (all columns) of the table of as_features_compute's
 * arguments: computed from the lookups whose row lies in the range (exact counts, bins and
 * bags; rows r1 - r0, indices rebased), with f->piece set (whole when the range is all of
 * the table). 0, or -1 with err (a bad range or table, as as_features_compute). */
int as_features_row_piece(as_features *f, as_feat_scratch *s, int64_t id, int64_t rows, int64_t dim,
                          const as_array *offsets, const as_array *indices, int64_t r0, int64_t r1,
                          char *err, size_t errlen);

/* The features of the column piece [c0, c1) of f (a whole table, or a piece of all its
 * columns: f->piece.c0 == 0): the same lookups and bins over c1 - c0 columns; dim, size
 * and weight bytes follow. 0, or -1 when [c0, c1) is not within f's columns or f is itself
 * a piece of some columns only. */
/* the features carry TorchRec's memory model (f->mem) */
int as_features_has_mem(const as_features *f);
int as_features_cols(as_features *out, const as_features *f, int64_t c0, int64_t c1);

/* the 21-vector in the paper's order: dim, rows, pooling, size, bins */
void as_features_vector(const as_features *f, double out[AS_NFEATURES]);

/* write / read a `features` record */
void as_features_write(as_writer *w, const as_features *f);
int as_features_read(const msgpack_object *rec, as_features *f, char *err, size_t errlen);

#endif
