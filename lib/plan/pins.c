/* pins.c - the blocks of TorchRec's row_wise, pinned to their ranks; see pins.h */
#include "pins.h"
#include "common.h"
#include "piece.h"
#include "comm.h"

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

/* the host for a table-row-wise table of `work` lookups: the least loaded (ties: the lowest) */
static int64_t least_host(double *load, int64_t H, double work)
{
    int64_t h = 0;
    for (int64_t q = 1; q < H; q++)
        if (load[q] < load[h]) h = q;
    load[h] += work;
    return h;
}

/* a table-row-wise table: its items idx[a..b) and the bytes it moves */
typedef struct {
    int64_t a, b;
    double work;
} twrw_group;

static int by_work(const void *x, const void *y)
{
    const twrw_group *g = x, *h = y;
    if (g->work != h->work) return g->work > h->work ? -1 : 1;
    return (g->a > h->a) - (g->a < h->a);
}

int64_t as_plan_pins_hosts(const as_features *const *t, int64_t n, int64_t K, int64_t L, const double *work, int64_t *pin,
                           unsigned char *twrw)
{
    int64_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        pin[i] = -1;
        if (twrw) twrw[i] = 0;
        any += !as_piece_whole(&t[i]->piece);
    }
    if (!any || K < 2) return 0;
    const int hosts = L >= 2 && K > L && K % L == 0;
    /* the items that are pieces, by table and first row */
    int64_t *idx = as_malloc((size_t)any * sizeof *idx), m = 0, made = 0, ng = 0;
    twrw_group *g = as_malloc((size_t)any * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        if (!as_piece_whole(&t[i]->piece)) idx[m++] = i;
    qsort_r(idx, (size_t)m, sizeof *idx, by_id_row, (void *)t);
    for (int64_t a = 0; a < m;) {
        int64_t b = a + 1;
        while (b < m && t[idx[b]]->id == t[idx[a]]->id) b++;
        /* a table of at most L rows is cut the same both ways: table_row_wise under hosts */
        const int tw = hosts && row_wise_group(t, idx + a, b - a, L);
        if (!tw && row_wise_group(t, idx + a, b - a, K))
            for (int64_t q = a; q < b; q++) { pin[idx[q]] = q - a; made++; }
        else if (tw) {
            /* its work (work[], else its bytes in and out, comm.h: what its host pays for it) */
            g[ng] = (twrw_group){ a, b, 0 };
            for (int64_t q = a; q < b; q++) {
                double in, out;
                as_comm_bytes(t[idx[q]], &in, &out);
                g[ng].work += work ? work[idx[q]] : in + out;
            }
            ng++;
        }
        a = b;
    }
    /* the heaviest first, each onto the host that moves the fewest bytes so far */
    qsort(g, (size_t)ng, sizeof *g, by_work);
    const int64_t H = hosts ? K / L : 1;
    double *load = as_calloc((size_t)H, sizeof *load);
    for (int64_t j = 0; j < ng; j++) {
        const int64_t h = least_host(load, H, g[j].work);
        for (int64_t q = g[j].a; q < g[j].b; q++) {
            pin[idx[q]] = h * L + (q - g[j].a);
            if (twrw) twrw[idx[q]] = 1;
            made++;
        }
    }
    free(g);
    free(idx);
    free(load);
    return made;
}

int64_t as_plan_pins(const as_features *const *t, int64_t n, int64_t K, int64_t *pin)
{
    return as_plan_pins_hosts(t, n, K, 0, NULL, pin, NULL);
}
