/* featindex.c - `features` records by table id; see featindex.h. Dimension letters: T tables. */
#include "featindex.h"
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_featidx_add(as_featidx *x, const as_features *f)
{
    if (!as_piece_whole(&f->piece)) {
        if (x->npc == x->pccap) {
            x->pccap = x->pccap ? 2 * x->pccap : 256;
            x->pc = as_realloc(x->pc, (size_t)x->pccap * sizeof *x->pc);
        }
        x->pc[x->npc++] = *f;
        return;
    }
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->f = as_realloc(x->f, (size_t)x->cap * sizeof *x->f);
    }
    x->f[x->n++] = *f;
}

int as_featidx_read(as_featidx *x, const as_record *rec, const char *name, char *err, size_t errlen)
{
    as_features f;
    char e2[768];
    if (as_features_read(&rec->obj, &f, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", name, rec->index, e2);
        return -1;
    }
    as_featidx_add(x, &f);
    return 0;
}

int as_features_same(const as_features *a, const as_features *b)
{
    /* the numbers compared as bytes: the rule is "equal to the bit" */
#define SAME(field) (!memcmp(&a->field, &b->field, sizeof a->field))
    return SAME(piece) && SAME(rows) && SAME(batch) && SAME(lookups) && SAME(dim) && SAME(distinct) && SAME(max_bag) &&
           SAME(pooling) && SAME(size_gib) && SAME(bins) && SAME(lookup_bins) && SAME(bytes_fp16) && SAME(bytes_fp32) && SAME(mem);
#undef SAME
}

/* records by id, then input position: the first record of an id comes first */
static const as_features *g_recs;
static int cmp_pos(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb, x = g_recs[a].id, y = g_recs[b].id;
    if (x != y) return x < y ? -1 : 1;
    int c = as_piece_cmp(&g_recs[a].piece, &g_recs[b].piece);
    if (c) return c;
    return (a > b) - (a < b);
}

/* sort recs[0..*n) by (id, piece), then input position; keep the first of each key */
static int dedupe(as_features **recs, int64_t *n, int64_t *cap, char *err, size_t errlen);

int as_featidx_build(as_featidx *x, char *err, size_t errlen)
{
    return dedupe(&x->f, &x->n, &x->cap, err, errlen) || dedupe(&x->pc, &x->npc, &x->pccap, err, errlen) ? -1 : 0;
}

static int dedupe(as_features **recs, int64_t *np, int64_t *capp, char *err, size_t errlen)
{
    as_featidx xx = { *recs, *np, *capp, NULL, 0, 0 }, *x = &xx;
    int64_t n = x->n;
    int64_t *pos = as_malloc((size_t)(n + 1) * sizeof *pos);
    for (int64_t i = 0; i < n; i++) pos[i] = i;
    g_recs = x->f;
    if (n > 1) qsort(pos, (size_t)n, sizeof *pos, cmp_pos);
    as_features *u = as_malloc((size_t)(n + 1) * sizeof *u);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const as_features *f = &x->f[pos[i]];
        if (m > 0 && u[m - 1].id == f->id && as_piece_eq(&u[m - 1].piece, &f->piece)) {
            if (!as_features_same(&u[m - 1], f)) {
                char nb[96];
                snprintf(err, errlen, "%s %s has two different `features` records (features of two pools mixed?)",
                         as_piece_whole(&f->piece) ? "table" : "piece", as_piece_name(nb, sizeof nb, f->id, &f->piece) + 1);
                free(pos);
                free(u);
                return -1;
            }
            continue;
        }
        u[m++] = *f;
    }
    free(pos);
    free(x->f);
    *recs = u;
    *np = *capp = m;
    return 0;
}

int64_t as_featidx_find(const as_featidx *x, int64_t id)
{
    int64_t lo = 0, hi = x->n - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2, v = x->f[mid].id;
        if (v == id) return mid;
        if (v < id) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

const as_features *as_featidx_get(const as_featidx *x, int64_t id)
{
    int64_t k = as_featidx_find(x, id);
    return k < 0 ? NULL : &x->f[k];
}

static const as_features *find_piece(const as_featidx *x, int64_t id, const as_piece *p)
{
    int64_t lo = 0, hi = x->npc - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const as_features *v = &x->pc[mid];
        int c = v->id != id ? (v->id < id ? -1 : 1) : as_piece_cmp(&v->piece, p);
        if (!c) return v;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

int as_featidx_piece(const as_featidx *x, int64_t id, const as_piece *p, as_features *out)
{
    const as_features *t = as_featidx_get(x, id);
    if (as_piece_whole(p) || (t && as_piece_covers(p, t->rows, t->dim))) {
        if (!t) return -1;
        *out = *t;
        return 0;
    }
    const as_features *r = find_piece(x, id, p);
    if (r) {
        *out = *r;
        return 0;
    }
    /* a column piece: of the table (all rows), or of the row piece with all columns */
    if (t && p->r0 == 0 && p->r1 == t->rows) return as_features_cols(out, t, p->c0, p->c1);
    if (t) {
        as_piece rp = { 0, t->dim, p->r0, p->r1 };
        if ((r = find_piece(x, id, &rp))) return as_features_cols(out, r, p->c0, p->c1);
    }
    return -1;
}

/* a table's size for as_pieces_check_dims: its whole-table record's */
static int featidx_size(void *ctx, int64_t id, int64_t *rows, int64_t *dim)
{
    const as_features *t = as_featidx_get(ctx, id);
    if (!t) return -1;
    *rows = t->rows;
    *dim = t->dim;
    return 0;
}

int as_featidx_check_cover(const as_featidx *x, const int64_t *ids, const as_piece *p, int64_t n, char *err,
                           size_t errlen)
{
    if (!p) return 0;   /* whole tables only: nothing outside a table, no gap */
    /* the entries of the tables whose size is known */
    int64_t *kid = as_malloc((size_t)(n ? n : 1) * sizeof *kid), m = 0;
    as_piece *kp = as_malloc((size_t)(n ? n : 1) * sizeof *kp);
    for (int64_t i = 0; i < n; i++)
        if (as_featidx_get(x, ids[i])) {
            kid[m] = ids[i];
            kp[m++] = p[i];
        }
    int rc = as_pieces_check_dims(kid, kp, m, featidx_size, (void *)x, err, errlen);
    free(kid);
    free(kp);
    return rc;
}

void as_featidx_free(as_featidx *x)
{
    if (!x) return;
    free(x->pc);
    free(x->f);
    memset(x, 0, sizeof *x);
}
