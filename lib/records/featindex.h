/* featindex.h - `features` records by table id: the one index through which every tool
 * joins table ids (of costs, shards, tasks, plans) to their features. Dimension letters:
 * T tables.
 *
 * Use: as_featidx_add every `features` record as it is read, as_featidx_build once, then
 * as_featidx_find / as_featidx_get (binary search). After the build, f[0..n) holds the
 * distinct tables in ascending id order.
 *
 * Duplicates: one table id may come in several records (a features stream given twice,
 * the features of one pool computed again). They must describe the same table: every
 * number the record carries (dim, rows, pooling, size, the 17 bins, batch, lookups,
 * distinct, max_bag, the 17 lookup bins, bytes_fp16, bytes_fp32) equal to the bit; only
 * `source`, the name of the pool file, may differ. The first such record in input order is
 * kept. Two records of one id that differ in any number are an error: features of two
 * pools mixed. (This is the rule of every tool; before it, as-costfit compared the 21 model
 * features, as-plan dim, rows, pooling and bytes_fp16, and as-eval nothing.)
 */
#ifndef AS_FEATINDEX_H
#define AS_FEATINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "featurize.h"

typedef struct {
    as_features *f;   /* records as added; after as_featidx_build the distinct ones by id */
    int64_t n, cap;   /* n: records added; after the build, distinct tables */
    as_features *pc;  /* the records of pieces (a `piece` that is not the whole table), kept
                       * apart: f holds whole tables only. After the build the distinct ones
                       * by (id, piece), under the same rule for duplicates */
    int64_t npc, pccap;
} as_featidx;

/* append a copy of one record (before the build) */
void as_featidx_add(as_featidx *x, const as_features *f);
/* parse the `features` record rec of the input `name` (as_features_read) and add it; 0, or
 * -1 with err ("NAME: record N: features of table 3: 'rows' = 0 is outside ...") */
int as_featidx_read(as_featidx *x, const as_record *rec, const char *name, char *err, size_t errlen);
/* sort by id, drop duplicates under the rule above; 0, or -1 with err ("table 7 has two
 * different `features` records (features of two pools mixed?)"). Call once (on a built
 * index it changes nothing). */
int as_featidx_build(as_featidx *x, char *err, size_t errlen);
/* position of table id in f[0..n) after the build, or -1 */
int64_t as_featidx_find(const as_featidx *x, int64_t id);
/* its features, or NULL */
const as_features *as_featidx_get(const as_featidx *x, int64_t id);
/* The features of piece p of table id: the table's (p whole), a piece's record, or derived
 * from either for a column piece (as_features_cols: of the table, or of the record of the
 * row piece with all its columns). 0 with *out filled, or -1 when neither is known. */
int as_featidx_piece(const as_featidx *x, int64_t id, const as_piece *p, as_features *out);
/* The cover of a plan's entries ids[0..n) with pieces p (NULL: all whole) checked against
 * the sizes of the tables x knows (after the build; as_pieces_check_dims): every piece
 * within its table and every table's pieces reaching its last column and row. A table x has
 * no whole-table record of is not checked (the reader that needs its features says so).
 * Call after as_pieces_check_cover. 0, or -1 with err ("table 5: its pieces cover columns
 * 0..32 x rows 0..5114 of 32 x 10227 (a gap)"). */
int as_featidx_check_cover(const as_featidx *x, const int64_t *ids, const as_piece *p, int64_t n, char *err,
                           size_t errlen);
/* 1 when a and b describe the same table under the rule above (ids not compared) */
int as_features_same(const as_features *a, const as_features *b);
void as_featidx_free(as_featidx *x);   /* NULL: nothing */

#endif
