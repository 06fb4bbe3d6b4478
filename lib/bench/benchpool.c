/* benchpool.c - as-bench's pool of table data; see benchpool.h.
 * Dimension letters: B batch, E rows, D dim. */
#include "benchpool.h"
#include "common.h"
#include "msgobj.h"
#include "stream.h"
#include "table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pool of table data ------------------------------------------------------- */

static void pool_add(as_bpool *p, const as_btable *t)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->t = as_realloc(p->t, (size_t)p->cap * sizeof *p->t);
    }
    p->t[p->n++] = *t;
}

/* a table record's offsets and indices into t (t->lookups of them), checked: offsets that
 * decrease, an index outside [0, rows) (bad data, as in as-features: one rule for every
 * reader of table records, table.h, never a shard's `error`) or one that does not fit int32.
 * 0, or -1 with err (the arrays freed) */
static int table_data(as_btable *t, const as_array *off, const as_array *idx, const char *file, uint64_t recno,
                      char *err, size_t errlen)
{
    t->offsets = as_malloc((size_t)(t->batch + 1) * sizeof *t->offsets);
    as_array_get_i64(off, 0, t->batch + 1, t->offsets);
    for (int64_t b = 0; b < t->batch; b++)
        if (t->offsets[b + 1] < t->offsets[b]) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": table %" PRId64 ": offsets decrease at bag %" PRId64, file, recno, t->id, b);
            free(t->offsets);
            return -1;
        }
    t->indices = as_malloc((size_t)(t->lookups ? t->lookups : 1) * sizeof *t->indices);
    int64_t bad = -1, badv = 0;
    if (idx->dtype == AS_DT_I32) {
        memcpy(t->indices, idx->data, (size_t)t->lookups * 4);
        for (int64_t i = 0; i < t->lookups && bad < 0; i++)
            if ((uint64_t)(int64_t)t->indices[i] >= (uint64_t)t->rows) { bad = i; badv = t->indices[i]; }
    } else {
        for (int64_t i = 0; i < t->lookups && bad < 0; i++) {
            int64_t v;
            as_array_get_i64(idx, i, 1, &v);
            if ((uint64_t)v >= (uint64_t)t->rows) { bad = i; badv = v; break; }
            if (v > INT32_MAX) {
                snprintf(err, errlen, "%s: record %" PRIu64 ": table %" PRId64 ": index %" PRId64 " does not fit int32", file, recno, t->id, v);
                free(t->offsets);
                free(t->indices);
                return -1;
            }
            t->indices[i] = (int32_t)v;
        }
    }
    if (bad >= 0) {
        char e2[512];
        as_table_index_error(e2, sizeof e2, t->id, bad, badv, t->rows);
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", file, recno, e2);
        free(t->offsets);
        free(t->indices);
        return -1;
    }
    return 0;
}

/* what as_bpool_load's record step needs */
typedef struct {
    as_bpool *p;
    const char *file;
    const uint8_t *want;
    int64_t want_n;
    int ids_only;
} pool_load;

/* one record (as_record_fn's shape): a wanted `table` record into the pool, others skipped */
static int pool_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    (void)r;
    pool_load *x = ctx;
    if (!as_rec_is(rec, "table")) return 0;
    as_btable t;
    memset(&t, 0, sizeof t);
    as_array off, idx;
    char e2[512];
    if (as_table_parse(&rec->obj, &t.id, &t.rows, &t.batch, &t.dim, &off, &idx, NULL, 0, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", x->file, rec->index, e2);
        return -1;
    }
    if (x->want && (t.id >= x->want_n || !x->want[t.id])) return 0;
    if (as_table_data_type(&rec->obj, t.data_type, sizeof t.data_type, e2, sizeof e2)) {   /* one rule: table.h */
        snprintf(err, errlen, "%s: record %" PRIu64 ": table %" PRId64 ": %s", x->file, rec->index, t.id, e2);
        return -1;
    }
    t.lookups = idx.n;
    if (!x->ids_only && table_data(&t, &off, &idx, x->file, rec->index, err, errlen)) return -1;
    pool_add(x->p, &t);
    return 0;
}

/* the id index of the loaded tables; -1 with err when an id appears twice */
static int pool_index(as_bpool *p, const char *file, char *err, size_t errlen)
{
    /* ids are at most AS_MAX_TABLE_ID (as_table_parse): maxid + 1 cannot overflow */
    p->maxid = -1;
    for (int64_t i = 0; i < p->n; i++) if (p->t[i].id > p->maxid) p->maxid = p->t[i].id;
    p->index = as_calloc((size_t)(p->maxid + 1), sizeof *p->index);
    for (int64_t i = 0; i < p->n; i++) {
        if (p->index[p->t[i].id]) {
            snprintf(err, errlen, "%s: table %" PRId64 " appears twice", file, p->t[i].id);
            return -1;
        }
        p->index[p->t[i].id] = i + 1;
    }
    return 0;
}

int as_bpool_load(as_bpool *p, const char *file, const uint8_t *want, int64_t want_n, int ids_only,
                  char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    pool_load x = { p, file, want, want_n, ids_only };
    char *files[] = { (char *)file };
    if (as_read_records(files, 1, pool_rec, &x, err, errlen) || pool_index(p, file, err, errlen)) {
        as_bpool_free(p);
        return -1;
    }
    return 0;
}

const as_btable *as_bpool_get(const as_bpool *p, int64_t id)
{
    if (id < 0 || id > p->maxid || !p->index[id]) return NULL;
    return &p->t[p->index[id] - 1];
}

uint64_t as_bpool_bytes(const as_bpool *p)
{
    uint64_t b = (uint64_t)p->cap * sizeof *p->t + (uint64_t)(p->index ? p->maxid + 1 : 0) * sizeof *p->index;
    for (int64_t i = 0; i < p->n; i++) {
        const as_btable *t = &p->t[i];
        if (!t->offsets) continue;
        if (t->borrowed != AS_BT_BORROW_ALL) b += (uint64_t)(t->batch + 1) * sizeof *t->offsets;
        if (!t->borrowed) b += (uint64_t)(t->lookups ? t->lookups : 1) * sizeof *t->indices;
        if (t->cap_indices) b += (uint64_t)(t->lookups ? t->lookups : 1) * sizeof *t->cap_indices;
    }
    return b;
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int64_t as_rowcap_remap(const int32_t *in, int64_t n, int64_t cap, int32_t *out, int64_t *kept)
{
    if (kept) *kept = 0;
    if (n <= 0) return 0;
    int32_t *u = as_malloc((size_t)n * sizeof *u);
    memcpy(u, in, (size_t)n * sizeof *u);
    qsort(u, (size_t)n, sizeof *u, cmp_i32);
    int64_t D = 0;
    for (int64_t i = 0; i < n; i++)
        if (!D || u[i] != u[D - 1]) u[D++] = u[i];
    for (int64_t i = 0; i < n; i++) {
        /* the rank of in[i] among the distinct rows: binary search */
        int64_t lo = 0, hi = D - 1;
        const int32_t v = in[i];
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (u[mid] < v) lo = mid + 1; else hi = mid;
        }
        out[i] = (int32_t)((__int128)lo * cap / D);
    }
    free(u);
    if (kept) *kept = D < cap ? D : cap;
    return D;
}

int64_t as_bpool_cap_rows(as_bpool *p, int64_t cap)
{
    if (cap <= 0) return 0;
    int64_t k = 0;
    for (int64_t i = 0; i < p->n; i++) {
        as_btable *t = &p->t[i];
        if (t->rows <= cap || t->cap_rows || !t->offsets) continue;
        t->cap_indices = as_malloc((size_t)(t->lookups ? t->lookups : 1) * sizeof *t->cap_indices);
        t->cap_distinct = as_rowcap_remap(t->indices, t->lookups, cap, t->cap_indices, &t->cap_kept);
        t->cap_rows = cap;
        k++;
    }
    return k;
}

/* add table d made from a loaded one (a piece, a slice) under the next free id; returns it */
static int64_t pool_add_made(as_bpool *p, as_btable *d)
{
    d->id = p->maxid + 1;
    pool_add(p, d);
    p->maxid = d->id;
    p->index = as_realloc(p->index, (size_t)(p->maxid + 1) * sizeof *p->index);
    p->index[d->id] = p->n;
    return d->id;
}

int64_t as_bpool_piece(as_bpool *p, int64_t table, const as_piece *q, char *err, size_t errlen)
{
    const as_btable *t = as_bpool_get(p, table);
    if (!t || t->is_piece || t->b1) {
        snprintf(err, errlen, "table %" PRId64 " is not in the table data", table);
        return -1;
    }
    if (as_piece_check(table, q, t->rows, t->dim, err, errlen)) return -1;
    if (as_piece_covers(q, t->rows, t->dim)) return table;
    for (int64_t i = 0; i < p->n; i++)
        if (p->t[i].is_piece && p->t[i].parent == table && as_piece_eq(&p->t[i].piece, q)) return p->t[i].id;
    as_btable d = *t;
    d.is_piece = 1;
    d.parent = table;
    d.piece = *q;
    d.dim = q->c1 - q->c0;
    d.rows = q->r1 - q->r0;
    d.borrowed = 0;
    d.cap_rows = d.cap_distinct = d.cap_kept = 0;   /* capped after, itself */
    d.cap_indices = NULL;
    if (!t->offsets) {
        d.offsets = NULL;
        d.indices = NULL;
    } else if (q->r0 == 0 && q->r1 == t->rows) {
        d.borrowed = AS_BT_BORROW_ALL;
    } else {
        d.lookups = as_piece_rows_data(t->offsets, t->indices, t->batch, q->r0, q->r1, NULL, NULL);
        d.offsets = as_malloc((size_t)(t->batch + 1) * sizeof *d.offsets);
        d.indices = as_malloc((size_t)(d.lookups ? d.lookups : 1) * sizeof *d.indices);
        as_piece_rows_data(t->offsets, t->indices, t->batch, q->r0, q->r1, d.offsets, d.indices);
    }
    return pool_add_made(p, &d);
}

int64_t as_bpool_piece_id(const as_bpool *p, int64_t table, const as_piece *q)
{
    const as_btable *t = as_bpool_get(p, table);
    if (!t || t->is_piece || t->b1) return -1;
    if (as_piece_covers(q, t->rows, t->dim)) return table;
    for (int64_t i = 0; i < p->n; i++)
        if (p->t[i].is_piece && p->t[i].parent == table && as_piece_eq(&p->t[i].piece, q)) return p->t[i].id;
    return -1;
}

int64_t as_bpool_slice(as_bpool *p, int64_t table, int64_t b0, int64_t b1, char *err, size_t errlen)
{
    const as_btable *t = as_bpool_get(p, table);
    if (!t || t->is_piece || t->b1) {
        snprintf(err, errlen, "table %" PRId64 " is not in the table data", table);
        return -1;
    }
    if (!(b0 >= 0 && b0 < b1 && b1 <= t->batch)) {
        snprintf(err, errlen, "bags [%" PRId64 ", %" PRId64 ") of table %" PRId64 ": not a non-empty range of its batch of %" PRId64,
                 b0, b1, table, t->batch);
        return -1;
    }
    const int64_t v = as_bpool_slice_id(p, table, b0, b1);
    if (v >= 0) return v;
    as_btable d = *t;
    d.parent = table;
    d.b0 = b0;
    d.b1 = b1;
    d.batch = b1 - b0;
    d.borrowed = 0;
    d.cap_rows = d.cap_distinct = d.cap_kept = 0;   /* capped after, itself */
    d.cap_indices = NULL;
    if (t->offsets) {
        /* its own offsets, rebased; its indices a window of the table's */
        const int64_t o0 = t->offsets[b0];
        d.lookups = t->offsets[b1] - o0;
        d.offsets = as_malloc((size_t)(d.batch + 1) * sizeof *d.offsets);
        for (int64_t b = 0; b <= d.batch; b++) d.offsets[b] = t->offsets[b0 + b] - o0;
        d.indices = t->indices + o0;
        d.borrowed = AS_BT_BORROW_INDICES;
    } else {
        d.lookups = 0;      /* metadata only (ids_only): no data to slice */
    }
    return pool_add_made(p, &d);
}

int64_t as_bpool_slice_id(const as_bpool *p, int64_t table, int64_t b0, int64_t b1)
{
    const as_btable *t = as_bpool_get(p, table);
    if (!t || t->is_piece || t->b1) return -1;
    if (b0 == 0 && b1 == t->batch) return table;
    for (int64_t i = 0; i < p->n; i++)
        if (p->t[i].b1 && p->t[i].parent == table && p->t[i].b0 == b0 && p->t[i].b1 == b1) return p->t[i].id;
    return -1;
}

void as_bpool_origin(const as_bpool *p, int64_t id, int64_t *table, as_piece *q)
{
    const as_btable *t = as_bpool_get(p, id);
    *table = t && (t->is_piece || t->b1) ? t->parent : id;
    *q = t && t->is_piece ? t->piece : AS_PIECE_WHOLE;
}

void as_bpool_free(as_bpool *p)
{
    if (!p) return;
    for (int64_t i = 0; i < p->n; i++) {
        if (p->t[i].borrowed != AS_BT_BORROW_ALL) free(p->t[i].offsets);
        if (!p->t[i].borrowed) free(p->t[i].indices);
        free(p->t[i].cap_indices);
    }
    free(p->t);
    free(p->index);
    memset(p, 0, sizeof *p);
}
