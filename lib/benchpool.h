/* benchpool.h - as-bench's pool of table data: the `table` records of a file (offsets and
 * indices, checked), looked up by id, and the pieces of tables measured as tables of their
 * own. Dimension letters: B batch, E rows, D dim. */
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
    int is_piece;          /* 0: a table loaded from the file; 1: a piece of table `parent`
                            * (as_bpool_piece), whose id is a number above every loaded one */
    int64_t parent;
    as_piece piece;        /* the piece (resolved: c1 > 0) when is_piece */
    int borrowed;          /* offsets and indices are the parent's (a piece of all its rows) */
} as_btable;

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
/* the table and piece an id of the pool stands for (a loaded table: itself, whole) */
void as_bpool_origin(const as_bpool *p, int64_t id, int64_t *table, as_piece *q);
/* bytes the pool holds (its tables' offsets and indices, descriptors, id index) */
uint64_t as_bpool_bytes(const as_bpool *p);
void as_bpool_free(as_bpool *p);          /* NULL: nothing */

#endif
