/* featurize.c - table features; see featurize.h. Dimension letters: B batch, E rows. */
#include "featurize.h"
#include "common.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void as_feat_scratch_free(as_feat_scratch *s)
{
    free(s->count);
    s->count = NULL;
    s->cap = 0;
}

/* offsets and indices of a parsed table are int32 or int64 (as_table_parse checks): read
   them directly, this is on the per-bag path */
static int64_t get_at(const as_array *a, int64_t i)
{
    if (a->dtype == AS_DT_I32) { int32_t v; memcpy(&v, (const char *)a->data + 4 * i, 4); return v; }
    int64_t v;
    memcpy(&v, (const char *)a->data + 8 * i, 8);
    return v;
}

int as_table_parse(const msgpack_object *rec, int64_t *id, int64_t *rows, int64_t *batch, int64_t *dim,
                   as_array *offsets, as_array *indices, char *source, size_t srclen, char *err, size_t errlen)
{
    int64_t lookups;
    if (as_obj_i64(rec, "id", id) || *id < 0) { snprintf(err, errlen, "table: missing or bad 'id'"); return -1; }
    if (as_obj_i64(rec, "rows", rows) || *rows < 1) { snprintf(err, errlen, "table %" PRId64 ": missing or bad 'rows'", *id); return -1; }
    if (as_obj_i64(rec, "batch", batch) || *batch < 1) { snprintf(err, errlen, "table %" PRId64 ": missing or bad 'batch'", *id); return -1; }
    if (as_obj_i64(rec, "dim", dim) || *dim < 1) { snprintf(err, errlen, "table %" PRId64 ": missing or bad 'dim'", *id); return -1; }
    if (as_obj_i64(rec, "lookups", &lookups) || lookups < 0) { snprintf(err, errlen, "table %" PRId64 ": missing or bad 'lookups'", *id); return -1; }
    if (source && as_obj_str(rec, "source", source, srclen)) source[0] = 0;
    char e2[256];
    if (as_obj_array(rec, "offsets", offsets, e2, sizeof e2) || as_obj_array(rec, "indices", indices, e2, sizeof e2)) {
        snprintf(err, errlen, "table %" PRId64 ": %s", *id, e2);
        return -1;
    }
    if ((offsets->dtype != AS_DT_I32 && offsets->dtype != AS_DT_I64) || (indices->dtype != AS_DT_I32 && indices->dtype != AS_DT_I64)) {
        snprintf(err, errlen, "table %" PRId64 ": offsets and indices must be int32 or int64", *id);
        return -1;
    }
    if (offsets->ndim != 1 || offsets->n != *batch + 1) {
        snprintf(err, errlen, "table %" PRId64 ": offsets has %" PRId64 " entries, expected batch + 1 = %" PRId64, *id, offsets->n, *batch + 1);
        return -1;
    }
    if (indices->ndim != 1 || indices->n != lookups) {
        snprintf(err, errlen, "table %" PRId64 ": indices has %" PRId64 " entries but lookups is %" PRId64, *id, indices->n, lookups);
        return -1;
    }
    if (get_at(offsets, 0) != 0 || get_at(offsets, *batch) != lookups) {
        snprintf(err, errlen, "table %" PRId64 ": offsets must start at 0 and end at lookups (%" PRId64 ")", *id, lookups);
        return -1;
    }
    return 0;
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
    f->bytes_fp16 = rows * dim * 2;
    f->bytes_fp32 = rows * dim * 4;
    f->size_gib = (double)f->bytes_fp16 / (double)(1ULL << 30);
    int64_t prev = 0;
    for (int64_t b = 1; b <= B; b++) {
        int64_t o = get_at(offsets, b);
        if (o < prev) {
            snprintf(err, errlen, "table %" PRId64 ": offsets[%" PRId64 "] = %" PRId64 " is less than offsets[%" PRId64 "] = %" PRId64,
                     id, b, o, b - 1, prev);
            return -1;
        }
        if (o - prev > f->max_bag) f->max_bag = o - prev;
        prev = o;
    }
    if (rows > s->cap) {
        free(s->count);
        s->count = as_calloc((size_t)rows, sizeof *s->count);
        s->cap = rows;
    }
    /* an access count over 2^32 - 1 would wrap: impossible below 2^32 lookups per table */
    if (n >= (int64_t)UINT32_MAX) { snprintf(err, errlen, "table %" PRId64 ": too many lookups", id); return -1; }
    uint32_t *cnt = s->count;
    uint64_t dist[AS_NBINS] = { 0 }, look[AS_NBINS] = { 0 };
    int64_t bad = -1;
    do {
        if (indices->dtype == AS_DT_I32) COUNT_LOOP(int32_t);
        else COUNT_LOOP(int64_t);
    } while (0);
    if (bad >= 0) {
        snprintf(err, errlen, "table %" PRId64 ": indices[%" PRId64 "] = %" PRId64 " is outside [0, rows = %" PRId64 ")",
                 id, bad, get_at(indices, bad), rows);
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
    msgpack_pack_map(pk, 17);
    as_pack_kv_str(pk, "kind", "features");
    as_pack_kv_i64(pk, "id", f->id);
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
    as_writer_end_record(w);
}

int as_features_read(const msgpack_object *rec, as_features *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    if (as_obj_i64(rec, "id", &f->id) || as_obj_i64(rec, "dim", &f->dim) || as_obj_i64(rec, "rows", &f->rows) ||
        as_obj_f64(rec, "pooling", &f->pooling) || as_obj_f64(rec, "size", &f->size_gib) ||
        as_obj_f64_list(rec, "bins", f->bins, AS_NBINS)) {
        snprintf(err, errlen, "features record lacks one of id, dim, rows, pooling, size, bins[17]");
        return -1;
    }
    if (f->id < 0 || f->dim < 1 || f->rows < 1 || f->pooling < 0 || f->size_gib < 0) {
        snprintf(err, errlen, "features record %" PRId64 " has an out-of-range id, dim, rows, pooling or size", f->id);
        return -1;
    }
    as_obj_i64(rec, "batch", &f->batch);
    as_obj_i64(rec, "lookups", &f->lookups);
    as_obj_i64(rec, "distinct", &f->distinct);
    as_obj_i64(rec, "max_bag", &f->max_bag);
    as_obj_f64_list(rec, "lookup_bins", f->lookup_bins, AS_NBINS);
    if (as_obj_i64(rec, "bytes_fp16", &f->bytes_fp16)) f->bytes_fp16 = f->rows * f->dim * 2;
    if (as_obj_i64(rec, "bytes_fp32", &f->bytes_fp32)) f->bytes_fp32 = f->rows * f->dim * 4;
    as_obj_str(rec, "source", f->source, sizeof f->source);
    return 0;
}
