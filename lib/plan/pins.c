/* pins.c - the blocks of TorchRec's row_wise, pinned to their ranks; see pins.h */
#include "pins.h"
#include "common.h"
#include "piece.h"

#include <stdlib.h>

/* order of items (ctx: the items): table id, then first row */
static int by_id_row(const void *a, const void *b, void *ctx)
{
    const as_features *const *t = ctx;
    const as_features *x = t[*(const int64_t *)a], *y = t[*(const int64_t *)b];
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    const int64_t rx = x->piece.r0, ry = y->piece.r0;
    return rx < ry ? -1 : rx > ry;
}

/* the items idx[0..m) of one table (sorted by first row): 1 when they are its K row_wise
 * blocks, all columns each */
static int row_wise_group(const as_features *const *t, const int64_t *idx, int64_t m, int64_t K)
{
    if (m < 2 || K < 2) return 0;
    int64_t rows = 0;
    for (int64_t q = 0; q < m; q++) {
        const as_features *f = t[idx[q]];
        const as_piece *p = &f->piece;
        /* a row piece of all columns: [0, dim) columns of its table (a column piece's c0 > 0
           or a width other than the others') */
        if (as_piece_whole(p) || p->c0 != 0 || p->c1 != f->dim) return 0;
        if (q && f->dim != t[idx[0]]->dim) return 0;
        if (p->r1 > rows) rows = p->r1;
    }
    const int64_t block = (rows + K - 1) / K;
    for (int64_t q = 0; q < m; q++) {
        const as_piece *p = &t[idx[q]]->piece;
        const int64_t r1 = (q + 1) * block < rows ? (q + 1) * block : rows;
        if (p->r0 != q * block || p->r1 != r1) return 0;
    }
    return m * block >= rows && (m - 1) * block < rows;
}

int64_t as_plan_pins(const as_features *const *t, int64_t n, int64_t K, int64_t *pin)
{
    int64_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        pin[i] = -1;
        any += !as_piece_whole(&t[i]->piece);
    }
    if (!any || K < 2) return 0;
    /* the items that are pieces, by table and first row */
    int64_t *idx = as_malloc((size_t)any * sizeof *idx), m = 0, made = 0;
    for (int64_t i = 0; i < n; i++)
        if (!as_piece_whole(&t[i]->piece)) idx[m++] = i;
    qsort_r(idx, (size_t)m, sizeof *idx, by_id_row, (void *)t);
    for (int64_t a = 0; a < m;) {
        int64_t b = a + 1;
        while (b < m && t[idx[b]]->id == t[idx[a]]->id) b++;
        if (row_wise_group(t, idx + a, b - a, K))
            for (int64_t q = a; q < b; q++) { pin[idx[q]] = q - a; made++; }
        a = b;
    }
    free(idx);
    return made;
}
