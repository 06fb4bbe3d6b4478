/* benchpool.h - as-bench's pool of table data: the `table` records of a file (offsets and
 * indices, checked), looked up by id, and the pieces and bag slices of tables measured as
 * tables of their own. Dimension letters: B batch, E rows, D dim. */
#ifndef AS_BENCHPOOL_H
#define AS_BENCHPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "piece.h"

/* one table's data, loaded from a `table` record */
typedef struct {
    int64_t id, rows, batch, dim, lookups;
    int64_t *offsets;      /* B+1 */
    int32_t *indices;      /* lookups */
    int is_piece;          /* 0: a table loaded from the file (or a slice); 1: a piece of
                            * table `parent` (as_bpool_piece), whose id is a number above
                            * every loaded one */
    int64_t parent;        /* a piece's or a slice's table */
    as_piece piece;        /* the piece (resolved: c1 > 0) when is_piece */
    int64_t b0, b1;        /* a bag slice of table `parent` (as_bpool_slice): its bags
                            * [b0, b1), all its rows and dim; b1 == 0: not a slice (all bags) */
    int borrowed;          /* what is the parent's, not the table's own (not freed with it):
                            * AS_BT_BORROW_ALL offsets and indices (a piece of all its rows),
                            * AS_BT_BORROW_INDICES indices only (a slice: its own rebased
                            * offsets, its indices those of the parent's from offsets[b0]) */
    int64_t cap_rows;      /* measured over this many rows instead of `rows` (as_bpool_cap_rows;
                            * 0: not capped, measured whole) */
    int32_t *cap_indices;  /* then its lookups remapped into [0, cap_rows) (owned) */
    int64_t cap_distinct;  /* then the distinct rows its lookups name, and of them */
    int64_t cap_kept;      /* the distinct rows kept distinct under the cap */
    char data_type[8];     /* its record's data_type ("" none): what as-bench --weights-type
                            * tables measures (a piece or slice: its table's) */
} as_btable;
enum { AS_BT_BORROW_ALL = 1, AS_BT_BORROW_INDICES = 2 };

/* the rows and indices a table is measured with: capped, or its own */
static inline int64_t as_bt_mrows(const as_btable *t) { return t->cap_rows ? t->cap_rows : t->rows; }
static inline const int32_t *as_bt_mindices(const as_btable *t) { return t->cap_rows ? t->cap_indices : t->indices; }

/* a pool of loaded tables, looked up by id */
typedef struct {
    as_btable *t;
    int64_t n, cap;
    int64_t *index;        /* id -> position + 1 (0 = absent), size maxid+1 */
    int64_t maxid;
} as_bpool;

/* Load the table records of FILE whose ids are wanted (want == NULL: all). ids_only: keep
 * only the metadata (no offsets/indices). Without ids_only every index of a loaded table is
 * checked against its rows: one outside [0, rows) is an error naming the file, the record
 * and the table (as_table_index_error; bad data, as in as-features). Returns 0, or -1 with
 * err (as_read_records: "FILE: strerror" for a file that cannot be opened). */
int as_bpool_load(as_bpool *p, const char *file, const uint8_t *want, int64_t want_n, int ids_only,
                  char *err, size_t errlen);
const as_btable *as_bpool_get(const as_bpool *p, int64_t id);
/* The id under which piece q of loaded table `table` is measured: the table's own id when q
 * is all of it; else a piece table, made on first use and found again after: its rows are
 * r1 - r0 and its dim c1 - c0, its bags the table's lookups whose row lies in [r0, r1),
 * rebased (as_piece_rows_data; a piece of all rows shares the table's arrays). Its id is
 * above every loaded id (as_btable.parent and .piece say what it is). Make every piece
 * before a session is created on the pool (its tables must not move after). Returns the
 * id, or -1 with err (the table is not loaded; the piece lies outside it). */
int64_t as_bpool_piece(as_bpool *p, int64_t table, const as_piece *q, char *err, size_t errlen);
/* the id of piece q of table `table` made before (as_bpool_piece), the table's id when q is
 * all of it, or -1 */
int64_t as_bpool_piece_id(const as_bpool *p, int64_t table, const as_piece *q);
/* The id under which bags [b0, b1) of loaded table `table` are measured (data parallel: a
 * shard looks up its share of the batch, as_plan_dp_bags): the table's own id when they are
 * all its bags; else a slice table, made on first use and found again after: batch b1 - b0,
 * the table's rows and dim, its offsets those of bags b0..b1 rebased to start at 0 and its
 * indices the table's (borrowed, not copied). Its id is above every loaded id (as_btable
 * .parent, .b0 and .b1 say what it is). Make every slice before a session is created on the
 * pool. Returns the id, or -1 with err (the table is not loaded or is a piece or a slice;
 * the bags are empty or lie outside its batch). */
int64_t as_bpool_slice(as_bpool *p, int64_t table, int64_t b0, int64_t b1, char *err, size_t errlen);
/* the id of slice [b0, b1) of table `table` made before (as_bpool_slice), the table's id
 * when it is all its bags, or -1 */
int64_t as_bpool_slice_id(const as_bpool *p, int64_t table, int64_t b0, int64_t b1);
/* the table and piece an id of the pool stands for (a loaded table: itself, whole; a slice:
 * its table, whole) */
void as_bpool_origin(const as_bpool *p, int64_t id, int64_t *table, as_piece *q);
/* The row cap (as-bench --row-cap): every table of the pool (loaded, piece or slice) with more
 * than `cap` rows is measured over `cap` rows: its lookups' distinct rows, in ascending order,
 * remapped evenly over [0, cap) (as_rowcap_remap), so that which lookups share a row, and the
 * rows' order, are kept when they are at most `cap` (else neighbours share one); its own
 * data is kept for everything else (pieces, ids, features). Call it after every piece and
 * slice is made and before a session is created on the pool. Returns the number of tables
 * capped (out of memory is fatal, as everywhere). cap <= 0: nothing. */
int64_t as_bpool_cap_rows(as_bpool *p, int64_t cap);
/* in[0..n) remapped into out[0..n) in [0, cap): the D distinct rows sorted, the k-th to
 * floor(k * cap / D) (all distinct when D <= cap; neighbours share when D > cap). Returns D;
 * *kept gets the distinct rows after the map (min(D, cap)). out may be in. */
int64_t as_rowcap_remap(const int32_t *in, int64_t n, int64_t cap, int32_t *out, int64_t *kept);
/* bytes the pool holds (its tables' offsets and indices, descriptors, id index) */
uint64_t as_bpool_bytes(const as_bpool *p);
void as_bpool_free(as_bpool *p);          /* NULL: nothing */

#endif
