/* featindex.c - `features` records by table id; see featindex.h. Dimension letters: T tables. */
#include "featindex.h"
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_featidx_add(as_featidx *x, const as_features *f)
{
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
    return SAME(rows) && SAME(batch) && SAME(lookups) && SAME(dim) && SAME(distinct) && SAME(max_bag) &&
           SAME(pooling) && SAME(size_gib) && SAME(bins) && SAME(lookup_bins) && SAME(bytes_fp16) && SAME(bytes_fp32);
#undef SAME
}

/* records by id, then input position: the first record of an id comes first */
static const as_features *g_recs;
static int cmp_pos(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb, x = g_recs[a].id, y = g_recs[b].id;
    if (x != y) return x < y ? -1 : 1;
    return (a > b) - (a < b);
}

int as_featidx_build(as_featidx *x, char *err, size_t errlen)
{
    int64_t n = x->n;
    int64_t *pos = as_malloc((size_t)(n + 1) * sizeof *pos);
    for (int64_t i = 0; i < n; i++) pos[i] = i;
    g_recs = x->f;
    if (n > 1) qsort(pos, (size_t)n, sizeof *pos, cmp_pos);
    as_features *u = as_malloc((size_t)(n + 1) * sizeof *u);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const as_features *f = &x->f[pos[i]];
        if (m > 0 && u[m - 1].id == f->id) {
            if (!as_features_same(&u[m - 1], f)) {
                snprintf(err, errlen, "table %" PRId64 " has two different `features` records (features of two pools mixed?)",
                         f->id);
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
    x->f = u;
    x->n = x->cap = m;
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

void as_featidx_free(as_featidx *x)
{
    free(x->f);
    memset(x, 0, sizeof *x);
}
