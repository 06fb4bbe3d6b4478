/* featurize.c - table features; see featurize.h. Dimension letters: B batch, E rows. */
#include "featurize.h"
#include "common.h"
#include "reclimits.h"
#include "table.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void as_feat_scratch_free(as_feat_scratch *s)
{
    if (!s) return;
    free(s->count);
    s->count = NULL;
    s->cap = 0;
}

/* count accesses: pass 1 increments, pass 2 reads and clears (so the array stays zero) */
#define COUNT_LOOP(T) do { \
    const unsigned char *p = (const unsigned char *)indices->data; \
    for (int64_t i = 0; i < n; i++) { \
        T v; memcpy(&v, p + (size_t)i * sizeof(T), sizeof(T)); \
        if ((uint64_t)v >= (uint64_t)rows) { bad = i; break; } \
        cnt[v]++; \
    } \
    if (bad >= 0) { \
        for (int64_t i = 0; i < bad; i++) { T v; memcpy(&v, p + (size_t)i * sizeof(T), sizeof(T)); cnt[v] = 0; } \
        break; \
    } \
    for (int64_t i = 0; i < n; i++) { \
        T v; memcpy(&v, p + (size_t)i * sizeof(T), sizeof(T)); \
        uint32_t c = cnt[v]; \
        if (c) { int k = as_count_bin(c); dist[k]++; look[k] += c; cnt[v] = 0; } \
    } \
} while (0)

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* the access-count bins from a sorted copy of the indices (memory: 8 bytes per lookup);
   returns the position of the first index outside [0, rows), or -1 */
static int64_t count_sorted(const as_array *indices, int64_t rows, uint64_t *dist, uint64_t *look)
{
    int64_t n = indices->n;
    uint64_t *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        int64_t x = as_table_at(indices, i);
        if ((uint64_t)x >= (uint64_t)rows) { free(v); return i; }
        v[i] = (uint64_t)x;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1;
        while (j < n && v[j] == v[i]) j++;
        uint64_t c = (uint64_t)(j - i);
        int k = as_count_bin(c);
        dist[k]++;
        look[k] += c;
        i = j;
    }
    free(v);
    return -1;
}

int as_features_compute(as_features *f, as_feat_scratch *s, int64_t id, int64_t rows, int64_t dim,
                        const as_array *offsets, const as_array *indices, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    int64_t B = offsets->n - 1, n = indices->n;
    f->id = id;
    f->rows = rows;
    f->dim = dim;
    f->batch = B;
    f->lookups = n;
    f->pooling = B > 0 ? (double)n / (double)B : 0;
    if (as_table_bytes(rows, dim, 2, &f->bytes_fp16, err, errlen) || as_table_bytes(rows, dim, 4, &f->bytes_fp32, err, errlen)) {
        char e2[256];
        snprintf(e2, sizeof e2, "%s", err);
        snprintf(err, errlen, "table %" PRId64 ": %s", id, e2);
        return -1;
    }
    f->size_gib = (double)f->bytes_fp16 / (double)(1ULL << 30);
    int64_t prev = 0;
    for (int64_t b = 1; b <= B; b++) {
        int64_t o = as_table_at(offsets, b);
        if (o < prev) {
            snprintf(err, errlen, "table %" PRId64 ": offsets[%" PRId64 "] = %" PRId64 " is less than offsets[%" PRId64 "] = %" PRId64,
                     id, b, o, b - 1, prev);
            return -1;
        }
        if (o - prev > f->max_bag) f->max_bag = o - prev;
        prev = o;
    }
    /* an access count over 2^32 - 1 would wrap: impossible below 2^32 lookups per table */
    if (n >= (int64_t)UINT32_MAX) { snprintf(err, errlen, "table %" PRId64 ": too many lookups", id); return -1; }
    uint64_t dist[AS_NBINS] = { 0 }, look[AS_NBINS] = { 0 };
    int64_t bad = -1;
    /* a count per row while that stays small or proportional to the lookups; else sort the
       indices, so what a table costs is bounded by its record, whatever its `rows` says */
    int dense = s->mode == 1 || (s->mode == 0 && (rows <= AS_FEAT_DENSE_ROWS || rows / 16 <= n));
    if (dense) {
        if (rows > s->cap) {
            free(s->count);
            s->count = as_calloc((size_t)rows, sizeof *s->count);
            s->cap = rows;
        }
        uint32_t *cnt = s->count;
        do {
            if (indices->dtype == AS_DT_I32) COUNT_LOOP(int32_t);
            else COUNT_LOOP(int64_t);
        } while (0);
    } else {
        bad = count_sorted(indices, rows, dist, look);
    }
    if (bad >= 0) {
        as_table_index_error(err, errlen, id, bad, as_table_at(indices, bad), rows);
        return -1;
    }
    uint64_t distinct = 0;
    for (int k = 0; k < AS_NBINS; k++) distinct += dist[k];
    f->distinct = (int64_t)distinct;
    for (int k = 0; k < AS_NBINS; k++) {
        f->bins[k] = distinct ? (double)dist[k] / (double)distinct : 0;
        f->lookup_bins[k] = n ? (double)look[k] / (double)n : 0;
    }
    return 0;
}

void as_features_vector(const as_features *f, double out[AS_NFEATURES])
{
    out[0] = (double)f->dim;
    out[1] = (double)f->rows;
    out[2] = f->pooling;
    out[3] = f->size_gib;
    for (int k = 0; k < AS_NBINS; k++) out[4 + k] = f->bins[k];
}

static void pack_f64s(msgpack_packer *pk, const char *k, const double *v, int n)
{
    as_pack_str(pk, k);
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_double(pk, v[i]);
}

void as_features_write(as_writer *w, const as_features *f)
{
    msgpack_packer *pk = as_writer_pk(w);
    double vec[AS_NFEATURES];
    as_features_vector(f, vec);
    const int piece = !as_piece_whole(&f->piece);
    const int mem = as_features_has_mem(f);
    msgpack_pack_map(pk, 17 + piece + (f->name[0] != 0) + (f->data_type[0] != 0) + mem);
    as_pack_kv_str(pk, "kind", "features");
    as_pack_kv_i64(pk, "id", f->id);
    if (piece) {
        as_pack_str(pk, "piece");
        as_pack_piece(pk, &f->piece);
    }
    as_pack_kv_i64(pk, "dim", f->dim);
    as_pack_kv_i64(pk, "rows", f->rows);
    as_pack_kv_f64(pk, "pooling", f->pooling);
    as_pack_kv_f64(pk, "size", f->size_gib);
    pack_f64s(pk, "bins", f->bins, AS_NBINS);
    pack_f64s(pk, "features", vec, AS_NFEATURES);
    as_pack_kv_i64(pk, "batch", f->batch);
    as_pack_kv_i64(pk, "lookups", f->lookups);
    as_pack_kv_i64(pk, "distinct", f->distinct);
    pack_f64s(pk, "lookup_bins", f->lookup_bins, AS_NBINS);
    as_pack_kv_i64(pk, "max_bag", f->max_bag);
    as_pack_kv_f64(pk, "mean_bag", f->pooling);
    as_pack_kv_i64(pk, "bytes_fp16", f->bytes_fp16);
    as_pack_kv_i64(pk, "bytes_fp32", f->bytes_fp32);
    as_pack_kv_str(pk, "source", f->source);
    if (f->name[0]) as_pack_kv_str(pk, "name", f->name);
    if (f->data_type[0]) as_pack_kv_str(pk, "data_type", f->data_type);
    if (mem) {
        as_pack_str(pk, "torchrec_memory");
        msgpack_pack_map(pk, 7);
        as_pack_kv_f64(pk, "weights", f->mem.weights);
        as_pack_kv_f64(pk, "optimizer", f->mem.optimizer);
        as_pack_kv_f64(pk, "input", f->mem.input);
        as_pack_kv_f64(pk, "output", f->mem.output);
        as_pack_kv_f64(pk, "input_factor", f->mem.in_factor);
        as_pack_kv_f64(pk, "output_factor", f->mem.out_factor);
        as_pack_str(pk, "total");
        msgpack_pack_uint64(pk, as_trmem_total(&f->mem));
    }
    as_writer_end_record(w);
}

int as_features_read(const msgpack_object *rec, as_features *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    char e2[256];
    int64_t v;
    if (as_field_lim(rec, "id", 0, AS_LIM_TABLE_ID, &f->id, e2, sizeof e2)) {
        snprintf(err, errlen, "features: %s", e2);
        return -1;
    }
    /* the fields the planners and models use: range-checked here, once */
    if (as_field_lim(rec, "dim", 1, AS_LIM_DIM, &f->dim, e2, sizeof e2) ||
        as_field_lim(rec, "rows", 1, AS_LIM_ROWS, &f->rows, e2, sizeof e2) ||
        as_table_bytes(f->rows, f->dim, 4, &v, e2, sizeof e2) ||
        as_field_f64(rec, "pooling", 0, 1e15, &f->pooling, e2, sizeof e2) ||
        as_field_f64(rec, "size", 0, 1e15, &f->size_gib, e2, sizeof e2) ||
        as_field_f64_list(rec, "bins", AS_NBINS, 0, 1, f->bins, e2, sizeof e2) ||
        as_field_i64_opt(rec, "batch", 0, INT64_MAX, &f->batch, e2, sizeof e2) ||
        as_field_i64_opt(rec, "lookups", 0, INT64_MAX, &f->lookups, e2, sizeof e2) ||
        as_field_i64_opt(rec, "distinct", 0, INT64_MAX, &f->distinct, e2, sizeof e2) ||
        as_field_i64_opt(rec, "max_bag", 0, INT64_MAX, &f->max_bag, e2, sizeof e2)) {
        snprintf(err, errlen, "features of table %" PRId64 ": %s", f->id, e2);
        return -1;
    }
    if (as_obj_get(rec, "lookup_bins") && as_field_f64_list(rec, "lookup_bins", AS_NBINS, 0, 1, f->lookup_bins, e2, sizeof e2)) {
        snprintf(err, errlen, "features of table %" PRId64 ": %s", f->id, e2);
        return -1;
    }
    /* weight bytes: as written, or rows x dim x 2 / x 4; never more than the table holds at fp32 */
    as_table_bytes(f->rows, f->dim, 2, &f->bytes_fp16, e2, sizeof e2);
    as_table_bytes(f->rows, f->dim, 4, &f->bytes_fp32, e2, sizeof e2);
    if (as_field_i64_opt(rec, "bytes_fp16", 0, f->bytes_fp32, &f->bytes_fp16, e2, sizeof e2) ||
        as_field_i64_opt(rec, "bytes_fp32", 0, 2 * f->bytes_fp32, &f->bytes_fp32, e2, sizeof e2)) {
        snprintf(err, errlen, "features of table %" PRId64 ": %s", f->id, e2);
        return -1;
    }
    as_obj_str(rec, "source", f->source, sizeof f->source);
    if (as_obj_name(rec, "name", f->name, sizeof f->name, e2, sizeof e2) < 0) {   /* printed raw in plans' text */
        snprintf(err, errlen, "features of table %" PRId64 ": %s", f->id, e2);
        return -1;
    }
    if (as_table_data_type(rec, f->data_type, sizeof f->data_type, e2, sizeof e2)) {
        snprintf(err, errlen, "features of table %" PRId64 ": %s", f->id, e2);
        return -1;
    }
    const msgpack_object *mo = as_obj_get(rec, "torchrec_memory");
    if (mo && mo->type != MSGPACK_OBJECT_NIL) {
        if (mo->type != MSGPACK_OBJECT_MAP || as_field_f64(mo, "weights", 0, 1e18, &f->mem.weights, e2, sizeof e2) ||
            as_field_f64(mo, "optimizer", 0, 1e18, &f->mem.optimizer, e2, sizeof e2) ||
            as_field_f64(mo, "input", 0, 1e18, &f->mem.input, e2, sizeof e2) ||
            as_field_f64(mo, "output", 0, 1e18, &f->mem.output, e2, sizeof e2) ||
            as_field_f64(mo, "input_factor", 0, 3, &f->mem.in_factor, e2, sizeof e2) ||
            as_field_f64(mo, "output_factor", 0, 1, &f->mem.out_factor, e2, sizeof e2)) {
            snprintf(err, errlen, "features of table %" PRId64 ": torchrec_memory: %s", f->id,
                     mo->type != MSGPACK_OBJECT_MAP ? "not a map" : e2);
            return -1;
        }
    }
    const msgpack_object *po = as_obj_get(rec, "piece");
    if (po) {
        if (as_piece_parse(po, &f->piece, e2, sizeof e2)) {
            snprintf(err, errlen, "features of table %" PRId64 ": piece: %s", f->id, e2);
            return -1;
        }
        if (!as_piece_whole(&f->piece) && (f->dim != f->piece.c1 - f->piece.c0 || f->rows != f->piece.r1 - f->piece.r0)) {
            char nb[96];
            snprintf(err, errlen, "features of %s: dim %" PRId64 " and rows %" PRId64 " are not the piece's %" PRId64 " and %" PRId64,
                     as_piece_name(nb, sizeof nb, f->id, &f->piece), f->dim, f->rows, f->piece.c1 - f->piece.c0,
                     f->piece.r1 - f->piece.r0);
            return -1;
        }
    }
    return 0;
}

int as_features_cols(as_features *out, const as_features *f, int64_t c0, int64_t c1)
{
    if (!as_piece_whole(&f->piece) && (f->piece.c0 != 0 || f->piece.c1 - f->piece.c0 != f->dim)) return -1;
    if (c0 < 0 || c1 <= c0 || c1 > f->dim) return -1;
    const as_piece base = as_piece_full(&f->piece, f->rows, f->dim);
    char e2[64];
    *out = *f;
    out->dim = c1 - c0;
    if (!(as_piece_whole(&f->piece) && c0 == 0 && c1 == f->dim)) {
        out->piece.c0 = c0;
        out->piece.c1 = c1;
        out->piece.r0 = base.r0;
        out->piece.r1 = base.r1;
    }
    if (as_table_bytes(out->rows, out->dim, 2, &out->bytes_fp16, e2, sizeof e2) ||
        as_table_bytes(out->rows, out->dim, 4, &out->bytes_fp32, e2, sizeof e2))
        return -1;
    out->size_gib = (double)out->bytes_fp16 / (double)(1ULL << 30);
    if (as_features_has_mem(f)) as_trmem_cols(&out->mem, &f->mem, c0, c1, f->dim);
    return 0;
}

int as_features_has_mem(const as_features *f)
{
    return f->mem.weights > 0 || f->mem.optimizer > 0 || f->mem.input > 0 || f->mem.output > 0;
}

int as_features_row_piece(as_features *f, as_feat_scratch *s, int64_t id, int64_t rows, int64_t dim,
                          const as_array *offsets, const as_array *indices, int64_t r0, int64_t r1,
                          char *err, size_t errlen)
{
    if (r0 < 0 || r1 <= r0 || r1 > rows) {
        snprintf(err, errlen, "table %" PRId64 ": rows [%" PRId64 ", %" PRId64 ") are not a range within its %" PRId64 " rows", id, r0,
                 r1, rows);
        return -1;
    }
    const int64_t B = offsets->n - 1, n = indices->n;
    if (B < 0 || as_table_at(offsets, B) != n) {
        snprintf(err, errlen, "table %" PRId64 ": offsets and indices disagree", id);
        return -1;
    }
    /* the piece's bags: its lookups in order, rebased; int64 arrays (little-endian hosts) */
    int64_t *off = as_malloc((size_t)(B + 1) * sizeof *off), *idx = as_malloc((size_t)(n ? n : 1) * sizeof *idx), m = 0;
    off[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t e = as_table_at(offsets, b + 1);
        for (int64_t j = as_table_at(offsets, b); j < e && j < n; j++) {
            const int64_t r = as_table_at(indices, j);
            if (r >= r0 && r < r1) idx[m++] = r - r0;
        }
        off[b + 1] = m;
    }
    as_array ao = { .dtype = AS_DT_I64, .ndim = 1, .shape = { B + 1 }, .n = B + 1, .data = off, .nbytes = (size_t)(B + 1) * 8 };
    as_array ai = { .dtype = AS_DT_I64, .ndim = 1, .shape = { m }, .n = m, .data = idx, .nbytes = (size_t)m * 8 };
    const int rc = as_features_compute(f, s, id, r1 - r0, dim, &ao, &ai, err, errlen);
    free(off);
    free(idx);
    if (rc) return -1;
    if (!(r0 == 0 && r1 == rows)) {
        as_piece p = { 0, dim, r0, r1 };
        f->piece = p;
    }
    return 0;
}
