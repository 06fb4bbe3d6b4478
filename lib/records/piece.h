/* piece.h - pieces of tables: a column range [c0, c1) and a row range [r0, r1) of one table.
 * Dimension letters: B batch, D dim, E rows, T entries of a plan, shard or cost record.
 *
 * A whole table is the piece with c1 == 0 (AS_PIECE_WHOLE); resolved against a table's
 * size (as_piece_full) it is [0, D) x [0, E). A column piece sees all of its table's
 * lookups over c1 - c0 columns. A row piece sees only the lookups whose row lies in
 * [r0, r1) (as_piece_rows_data: the bags keep their order, rows are rebased to r - r0) and
 * its pooled outputs are partial sums, as TorchRec's row-wise sharding computes them: the
 * pieces' outputs summed give the table's.
 *
 * In records (docs/FORMAT.md) a plan, shard or cost record may carry `pieces`, parallel to
 * its `tables`: nil for a whole table, else [c0, c1, r0, r1]; without `pieces` every entry
 * is a whole table (a record of before reads as it did). A features record may carry one
 * `piece`. The pieces of one table in a plan cover it exactly once (as_pieces_check_cover:
 * no overlap, no gap; with the tables' sizes, as_pieces_check_dims: nothing outside the
 * table and the cover reaches its last column and row).
 */
#ifndef AS_PIECE_H
#define AS_PIECE_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

typedef struct {
    int64_t c0, c1, r0, r1;     /* c1 == 0: the whole table (then all four are 0) */
} as_piece;

#define AS_PIECE_WHOLE ((as_piece){ 0, 0, 0, 0 })

static inline int as_piece_whole(const as_piece *p) { return p->c1 == 0; }

/* p resolved against a table of rows x dim: a whole piece becomes [0, dim) x [0, rows) */
as_piece as_piece_full(const as_piece *p, int64_t rows, int64_t dim);
/* 1 when p (resolved) is all of a table of rows x dim */
int as_piece_covers(const as_piece *p, int64_t rows, int64_t dim);
/* order: table-major by (c0, c1, r0, r1), the whole piece first; <0, 0, >0 */
int as_piece_cmp(const as_piece *a, const as_piece *b);
int as_piece_eq(const as_piece *a, const as_piece *b);

/* Parse one piece: nil (the whole table) or an array of 4 integers [c0, c1, r0, r1] with
 * 0 <= c0 < c1 <= AS_MAX_DIM and 0 <= r0 < r1 <= AS_MAX_ROWS. 0, or -1 with err */
int as_piece_parse(const msgpack_object *o, as_piece *p, char *err, size_t errlen);
/* The optional field `key` of map: an array of exactly n pieces (as_piece_parse). Absent or
 * nil: *out = NULL (every entry whole), 0. Else *out malloc'd [n]. 0, or -1 with err
 * ("pieces[3]: c1 = 0 is not above c0 = 0") */
int as_field_pieces(const msgpack_object *map, const char *key, int64_t n, as_piece **out, char *err, size_t errlen);
/* 1 when some entry of p[0..n) is not whole (p NULL: 0) */
int as_pieces_any(const as_piece *p, int64_t n);
/* pack one piece (nil when whole) / the array of n (p NULL: n nils) */
void as_pack_piece(msgpack_packer *pk, const as_piece *p);
void as_pack_pieces(msgpack_packer *pk, const as_piece *p, int64_t n);

/* p within a table of rows x dim (c1 <= dim, r1 <= rows); 0, or -1 with err naming the table */
int as_piece_check(int64_t id, const as_piece *p, int64_t rows, int64_t dim, char *err, size_t errlen);
/* The entries ids[0..n) with pieces p (NULL: all whole): every table's entries cover a
 * rectangle [0, C) x [0, R) exactly once, C and R their largest c1 and r1 (a whole entry is
 * the table: with another entry of its table it overlaps). 0, or -1 with err ("table 3:
 * pieces [0:16, 0:100) and [8:32, 0:100) overlap"; "... leave a gap"). At most
 * AS_PIECES_PER_TABLE entries of one table. */
#define AS_PIECES_PER_TABLE 4096
int as_pieces_check_cover(const int64_t *ids, const as_piece *p, int64_t n, char *err, size_t errlen);
/* with the tables' sizes: every piece within its table and every table's cover reaching its
 * dim and rows. size(ctx, id, &rows, &dim) gives a table's size, 0, or -1 when unknown
 * (an error naming the table). Call after as_pieces_check_cover. */
int as_pieces_check_dims(const int64_t *ids, const as_piece *p, int64_t n,
                         int (*size)(void *ctx, int64_t id, int64_t *rows, int64_t *dim), void *ctx,
                         char *err, size_t errlen);

/* "t3", or "t3[c 0:16, r 0:500)" for messages; returns buf */
const char *as_piece_name(char *buf, size_t len, int64_t id, const as_piece *p);
/* as_piece_name with the table's name in place of "t<id>" when name is not NULL or "" */
const char *as_piece_label(char *buf, size_t len, const char *name, int64_t id, const as_piece *p);

/* A row piece's lookups: of the bags offsets[0..B] over indices (int32 row ids), those in
 * [r0, r1) rebased to r - r0, bag by bag in order, into off_out[B+1] and idx_out (room for
 * the count a call with both NULL returns; NULL: not written). Returns the count. */
int64_t as_piece_rows_data(const int64_t *offsets, const int32_t *indices, int64_t B, int64_t r0, int64_t r1,
                           int64_t *off_out, int32_t *idx_out);

/* The row blocks of a table of `rows` rows cut in n (TorchRec's row-wise blocks): block
 * ceil(rows / n), piece j = [j*block, min(rows, (j+1)*block)). Returns the blocks made
 * (fewer than n when rows < n * block leaves the last ones empty), each into out[j]
 * (whole columns: c0 = 0, c1 = dim). */
int64_t as_piece_row_blocks(int64_t rows, int64_t dim, int64_t n, as_piece *out);

#endif
