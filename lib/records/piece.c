/* piece.c - pieces of tables; see piece.h */
#include "piece.h"
#include "common.h"
#include "reclimits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

as_piece as_piece_full(const as_piece *p, int64_t rows, int64_t dim)
{
    if (!as_piece_whole(p)) return *p;
    as_piece f = { 0, dim, 0, rows };
    return f;
}

int as_piece_covers(const as_piece *p, int64_t rows, int64_t dim)
{
    as_piece f = as_piece_full(p, rows, dim);
    return f.c0 == 0 && f.c1 == dim && f.r0 == 0 && f.r1 == rows;
}

int as_piece_cmp(const as_piece *a, const as_piece *b)
{
    const int64_t x[4] = { a->c0, a->c1, a->r0, a->r1 }, y[4] = { b->c0, b->c1, b->r0, b->r1 };
    for (int i = 0; i < 4; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

int as_piece_eq(const as_piece *a, const as_piece *b)
{
    return as_piece_cmp(a, b) == 0;
}

static int obj_i64(const msgpack_object *x, int64_t *v)
{
    if (x->type == MSGPACK_OBJECT_POSITIVE_INTEGER && x->via.u64 <= INT64_MAX) { *v = (int64_t)x->via.u64; return 0; }
    if (x->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) { *v = x->via.i64; return 0; }
    return -1;
}

int as_piece_parse(const msgpack_object *o, as_piece *p, char *err, size_t errlen)
{
    *p = AS_PIECE_WHOLE;
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4) {
        snprintf(err, errlen, "a piece must be nil (the whole table) or [c0, c1, r0, r1]");
        return -1;
    }
    int64_t v[4];
    static const char *const name[4] = { "c0", "c1", "r0", "r1" };
    for (int i = 0; i < 4; i++)
        if (obj_i64(&o->via.array.ptr[i], &v[i]) || v[i] < 0) {
            snprintf(err, errlen, "%s of a piece is not a non-negative integer", name[i]);
            return -1;
        }
    const int64_t maxd = as_limit(AS_LIM_DIM), maxr = as_limit(AS_LIM_ROWS);
    if (v[1] <= v[0] || v[1] > maxd) {
        snprintf(err, errlen, "piece columns [%" PRId64 ", %" PRId64 ") are not a range within 0..%" PRId64 " (%s)", v[0], v[1],
                 maxd, as_limit_env(AS_LIM_DIM));
        return -1;
    }
    if (v[3] <= v[2] || v[3] > maxr) {
        snprintf(err, errlen, "piece rows [%" PRId64 ", %" PRId64 ") are not a range within 0..%" PRId64 " (%s)", v[2], v[3], maxr,
                 as_limit_env(AS_LIM_ROWS));
        return -1;
    }
    p->c0 = v[0];
    p->c1 = v[1];
    p->r0 = v[2];
    p->r1 = v[3];
    return 0;
}

int as_field_pieces(const msgpack_object *map, const char *key, int64_t n, as_piece **out, char *err, size_t errlen)
{
    *out = NULL;
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != n) {
        snprintf(err, errlen, "'%s' must be a list of %" PRId64 " pieces, one per table entry", key, n);
        return -1;
    }
    as_piece *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        char e2[256];
        if (as_piece_parse(&o->via.array.ptr[i], &v[i], e2, sizeof e2)) {
            snprintf(err, errlen, "%s[%" PRId64 "]: %s", key, i, e2);
            free(v);
            return -1;
        }
    }
    *out = v;
    return 0;
}

int as_pieces_any(const as_piece *p, int64_t n)
{
    if (!p) return 0;
    for (int64_t i = 0; i < n; i++)
        if (!as_piece_whole(&p[i])) return 1;
    return 0;
}

void as_pack_piece(msgpack_packer *pk, const as_piece *p)
{
    if (!p || as_piece_whole(p)) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_array(pk, 4);
    msgpack_pack_int64(pk, p->c0);
    msgpack_pack_int64(pk, p->c1);
    msgpack_pack_int64(pk, p->r0);
    msgpack_pack_int64(pk, p->r1);
}

void as_pack_pieces(msgpack_packer *pk, const as_piece *p, int64_t n)
{
    msgpack_pack_array(pk, (uint32_t)n);
    for (int64_t i = 0; i < n; i++) as_pack_piece(pk, p ? &p[i] : NULL);
}

const char *as_piece_name(char *buf, size_t len, int64_t id, const as_piece *p)
{
    if (!p || as_piece_whole(p)) snprintf(buf, len, "t%" PRId64, id);
    else
        snprintf(buf, len, "t%" PRId64 "[c %" PRId64 ":%" PRId64 ", r %" PRId64 ":%" PRId64 ")", id, p->c0, p->c1, p->r0,
                 p->r1);
    return buf;
}

const char *as_piece_label(char *buf, size_t len, const char *name, int64_t id, const as_piece *p)
{
    if (!name || !name[0]) return as_piece_name(buf, len, id, p);
    if (!p || as_piece_whole(p)) snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s[c %" PRId64 ":%" PRId64 ", r %" PRId64 ":%" PRId64 ")", name, p->c0, p->c1, p->r0, p->r1);
    return buf;
}

int as_piece_check(int64_t id, const as_piece *p, int64_t rows, int64_t dim, char *err, size_t errlen)
{
    if (as_piece_whole(p) || (p->c1 <= dim && p->r1 <= rows)) return 0;
    char nb[96];
    snprintf(err, errlen, "piece %s lies outside table %" PRId64 " (%" PRId64 " rows x %" PRId64 " columns)",
             as_piece_name(nb, sizeof nb, id, p), id, rows, dim);
    return -1;
}

/* entry positions sorted by (table id, piece) */
typedef struct {
    const int64_t *ids;
    const as_piece *p;
} cover_ctx;
static cover_ctx g_cover;   /* qsort has no context argument; only as_pieces_* use it */

static int cmp_entry(const void *a, const void *b)
{
    const int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (g_cover.ids[i] != g_cover.ids[j]) return g_cover.ids[i] < g_cover.ids[j] ? -1 : 1;
    const as_piece w = AS_PIECE_WHOLE;
    int c = as_piece_cmp(g_cover.p ? &g_cover.p[i] : &w, g_cover.p ? &g_cover.p[j] : &w);
    return c ? c : (i < j ? -1 : i > j);
}

/* positions 0..n-1 of the entries grouped by table (malloc'd) */
static int64_t *sorted_entries(const int64_t *ids, const as_piece *p, int64_t n)
{
    int64_t *ord = as_malloc((size_t)(n ? n : 1) * sizeof *ord);
    for (int64_t i = 0; i < n; i++) ord[i] = i;
    g_cover.ids = ids;
    g_cover.p = p;
    qsort(ord, (size_t)n, sizeof *ord, cmp_entry);
    return ord;
}

int as_pieces_check_cover(const int64_t *ids, const as_piece *p, int64_t n, char *err, size_t errlen)
{
    if (!p) {
        /* every entry whole: a table listed twice overlaps itself */
        int64_t *ord = sorted_entries(ids, NULL, n);
        for (int64_t i = 1; i < n; i++)
            if (ids[ord[i]] == ids[ord[i - 1]]) {
                snprintf(err, errlen, "table %" PRId64 " is listed twice (its entries overlap)", ids[ord[i]]);
                free(ord);
                return -1;
            }
        free(ord);
        return 0;
    }
    int64_t *ord = sorted_entries(ids, p, n);
    int rc = 0;
    for (int64_t s = 0; s < n && !rc;) {
        int64_t e = s + 1;
        while (e < n && ids[ord[e]] == ids[ord[s]]) e++;
        const int64_t id = ids[ord[s]], m = e - s;
        if (m > 1) {
            if (m > AS_PIECES_PER_TABLE) {
                snprintf(err, errlen, "table %" PRId64 " has %" PRId64 " pieces, more than %d", id, m, AS_PIECES_PER_TABLE);
                rc = -1;
                break;
            }
            /* a whole entry sorts first */
            if (as_piece_whole(&p[ord[s]])) {
                snprintf(err, errlen, "table %" PRId64 " is listed whole and in %" PRId64 " more entries (they overlap)", id, m - 1);
                rc = -1;
                break;
            }
            int64_t C = 0, R = 0;
            unsigned __int128 area = 0;
            for (int64_t a = s; a < e; a++) {
                const as_piece *x = &p[ord[a]];
                if (x->c1 > C) C = x->c1;
                if (x->r1 > R) R = x->r1;
                area += (unsigned __int128)(x->c1 - x->c0) * (unsigned __int128)(x->r1 - x->r0);
            }
            for (int64_t a = s; a < e && !rc; a++)
                for (int64_t b = a + 1; b < e; b++) {
                    const as_piece *x = &p[ord[a]], *y = &p[ord[b]];
                    if (x->c0 < y->c1 && y->c0 < x->c1 && x->r0 < y->r1 && y->r0 < x->r1) {
                        char na[96], nb[96];
                        snprintf(err, errlen, "table %" PRId64 ": pieces %s and %s overlap", id, as_piece_name(na, sizeof na, id, x),
                                 as_piece_name(nb, sizeof nb, id, y));
                        rc = -1;
                        break;
                    }
                }
            if (!rc && area != (unsigned __int128)C * (unsigned __int128)R) {
                snprintf(err, errlen, "table %" PRId64 ": its %" PRId64 " pieces leave a gap in columns 0..%" PRId64 " x rows 0..%" PRId64,
                         id, m, C, R);
                rc = -1;
            }
        } else if (!as_piece_whole(&p[ord[s]]) && (p[ord[s]].c0 || p[ord[s]].r0)) {
            /* one piece alone covers its table only from the first column and row */
            char na[96];
            snprintf(err, errlen, "table %" PRId64 ": its only piece %s leaves a gap before it", id,
                     as_piece_name(na, sizeof na, id, &p[ord[s]]));
            rc = -1;
        }
        s = e;
    }
    free(ord);
    return rc;
}

int as_pieces_check_dims(const int64_t *ids, const as_piece *p, int64_t n,
                         int (*size)(void *ctx, int64_t id, int64_t *rows, int64_t *dim), void *ctx,
                         char *err, size_t errlen)
{
    if (!p) return 0;
    int64_t *ord = sorted_entries(ids, p, n);
    int rc = 0;
    for (int64_t s = 0; s < n && !rc;) {
        int64_t e = s + 1;
        while (e < n && ids[ord[e]] == ids[ord[s]]) e++;
        const int64_t id = ids[ord[s]];
        int64_t rows, dim, C = 0, R = 0, whole = 0;
        if (size(ctx, id, &rows, &dim)) {
            snprintf(err, errlen, "table %" PRId64 ": its size is unknown (no table or features record)", id);
            rc = -1;
            break;
        }
        for (int64_t a = s; a < e && !rc; a++) {
            const as_piece *x = &p[ord[a]];
            if (as_piece_whole(x)) { whole = 1; continue; }
            if (as_piece_check(id, x, rows, dim, err, errlen)) rc = -1;
            if (x->c1 > C) C = x->c1;
            if (x->r1 > R) R = x->r1;
        }
        if (!rc && !whole && (C != dim || R != rows)) {
            snprintf(err, errlen, "table %" PRId64 ": its pieces cover columns 0..%" PRId64 " x rows 0..%" PRId64 " of %" PRId64 " x %" PRId64
                     " (a gap)", id, C, R, dim, rows);
            rc = -1;
        }
        s = e;
    }
    free(ord);
    return rc;
}

int64_t as_piece_rows_data(const int64_t *offsets, const int32_t *indices, int64_t B, int64_t r0, int64_t r1,
                           int64_t *off_out, int32_t *idx_out)
{
    int64_t m = 0;
    if (off_out) off_out[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t j = offsets[b]; j < offsets[b + 1]; j++) {
            const int64_t r = indices[j];
            if (r < r0 || r >= r1) continue;
            if (idx_out) idx_out[m] = (int32_t)(r - r0);
            m++;
        }
        if (off_out) off_out[b + 1] = m;
    }
    return m;
}

int64_t as_piece_row_blocks(int64_t rows, int64_t dim, int64_t n, as_piece *out)
{
    if (n < 1 || rows < 1) return 0;
    const int64_t block = rows / n + (rows % n != 0);
    int64_t k = 0;
    for (int64_t j = 0; j < n; j++) {
        const int64_t r0 = j * block, r1 = r0 + block < rows ? r0 + block : rows;
        if (r0 >= rows) break;
        as_piece q = { 0, dim, r0, r1 };
        out[k++] = q;
    }
    return k;
}
