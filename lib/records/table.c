/* table.c - the `table` record's writer and reader; see table.h.
 * Dimension letters: B batch, E rows, D dim. */
#include "table.h"
#include "common.h"
#include "ebshard.h"
#include "reclimits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* the data types a table may have: the kernels' weight types (ebshard.h: their names and
 * sizes, fp16, fp32, bf16), then the integer types only the memory models know */
static const struct { const char *name; double bytes; } int_dtypes[] = {
    { "int8", 1 }, { "int4", 0.5 }, { "int2", 0.25 },
};
#define DTYPE_LIST "fp32, fp16, bf16, int8, int4, int2"

/* data type `name` (any case): its name as records write it, *bytes its bytes per element;
 * NULL when it is none */
static const char *dtype_find(const char *name, double *bytes)
{
    for (int d = 0; name && d < AS_EB_NDTYPE; d++)
        if (!strcasecmp(name, as_eb_dtype_name((as_eb_dtype)d))) {
            *bytes = as_eb_dtype_bytes((as_eb_dtype)d);
            return as_eb_dtype_name((as_eb_dtype)d);
        }
    for (size_t i = 0; name && i < sizeof int_dtypes / sizeof int_dtypes[0]; i++)
        if (!strcasecmp(name, int_dtypes[i].name)) {
            *bytes = int_dtypes[i].bytes;
            return int_dtypes[i].name;
        }
    return NULL;
}

double as_table_dtype_bytes(const char *name)
{
    double b = 0;
    return dtype_find(name, &b) ? b : 0;
}

int as_table_data_type(const msgpack_object *rec, char *buf, size_t len, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "data_type");
    buf[0] = 0;
    if (!o) return 0;
    char v[8] = "", why[96];
    if (o->type == MSGPACK_OBJECT_STR && o->via.str.size < sizeof v && o->via.str.size < len &&
        !as_name_bad(o->via.str.ptr, o->via.str.size, why, sizeof why)) {
        memcpy(v, o->via.str.ptr, o->via.str.size);
        v[o->via.str.size] = 0;
        double b;
        const char *name = dtype_find(v, &b);
        if (name) {
            snprintf(buf, len, "%s", name);
            return 0;
        }
    }
    const uint32_t n = o->type == MSGPACK_OBJECT_STR ? o->via.str.size : 0;
    if (o->type == MSGPACK_OBJECT_STR && !n) snprintf(err, errlen, "data_type is \"\", not a data type (%s)", DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_STR && as_name_bad(o->via.str.ptr, n, why, sizeof why))
        snprintf(err, errlen, "data_type %s, not a data type (%s)", why, DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_STR && n <= 32)
        snprintf(err, errlen, "data_type \"%.*s\" is not a data type (%s)", (int)n, o->via.str.ptr, DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_STR)
        snprintf(err, errlen, "data_type is a string of %" PRIu32 " bytes, not a data type (%s)", n, DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        snprintf(err, errlen, "data_type is %" PRIu64 ", not a data type (%s)", o->via.u64, DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        snprintf(err, errlen, "data_type is %" PRId64 ", not a data type (%s)", o->via.i64, DTYPE_LIST);
    else if (o->type == MSGPACK_OBJECT_NIL) snprintf(err, errlen, "data_type is nil, not a data type (%s)", DTYPE_LIST);
    else snprintf(err, errlen, "data_type is not a string naming a data type (%s)", DTYPE_LIST);
    return -1;
}

void as_write_table(as_writer *w, int64_t id, int64_t rows, int64_t batch, int64_t dim,
                    const int64_t *offsets, const void *indices, as_dtype idx_dt, const char *source)
{
    as_write_table_meta(w, id, rows, batch, dim, offsets, indices, idx_dt, source, NULL);
}

void as_write_table_meta(as_writer *w, int64_t id, int64_t rows, int64_t batch, int64_t dim, const int64_t *offsets,
                         const void *indices, as_dtype idx_dt, const char *source, const as_table_meta *meta)
{
    int64_t lookups = offsets[batch];
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 10 + (meta ? 3 : 0));
    as_pack_kv_str(pk, "kind", "table");
    as_pack_kv_i64(pk, "id", id);
    as_pack_kv_i64(pk, "rows", rows);
    as_pack_kv_i64(pk, "batch", batch);
    as_pack_kv_i64(pk, "lookups", lookups);
    as_pack_kv_f64(pk, "pooling", batch ? (double)lookups / (double)batch : 0.0);
    as_pack_kv_i64(pk, "dim", dim);
    as_pack_kv_str(pk, "source", source ? source : "");
    if (meta) {
        as_pack_kv_str(pk, "name", meta->name);
        as_pack_kv_str(pk, "data_type", meta->data_type);
        as_pack_str(pk, "feature_names");
        msgpack_pack_array(pk, (size_t)meta->nfeatures);
        for (int i = 0; i < meta->nfeatures; i++) as_pack_str(pk, meta->features[i]);
    }
    int64_t oshape = batch + 1, ishape = lookups;
    if (lookups < INT32_MAX) {
        /* offsets fit int32: halve their size */
        int32_t *o32 = as_malloc((size_t)oshape * sizeof *o32);
        for (int64_t b = 0; b <= batch; b++) o32[b] = (int32_t)offsets[b];
        as_writer_kv_array(w, "offsets", AS_DT_I32, o32, 1, &oshape);
        free(o32);
    } else {
        as_writer_kv_array(w, "offsets", AS_DT_I64, offsets, 1, &oshape);
    }
    as_writer_kv_array(w, "indices", idx_dt, indices, 1, &ishape);
    as_writer_end_record(w);
}

/* the first bag b whose offsets decrease (offsets[b+1] < offsets[b]), or -1 */
#define FIRST_DECREASE(T) do { \
    const unsigned char *p = (const unsigned char *)a->data; \
    T prev, v; \
    memcpy(&prev, p, sizeof(T)); \
    for (int64_t b = 0; b < B; b++) { \
        memcpy(&v, p + (size_t)(b + 1) * sizeof(T), sizeof(T)); \
        if (v < prev) return b; \
        prev = v; \
    } \
} while (0)

static int64_t first_decrease(const as_array *a, int64_t B)
{
    if (a->dtype == AS_DT_I32) FIRST_DECREASE(int32_t);
    else FIRST_DECREASE(int64_t);
    return -1;
}

int as_table_parse(const msgpack_object *rec, int64_t *id, int64_t *rows, int64_t *batch, int64_t *dim,
                   as_array *offsets, as_array *indices, char *source, size_t srclen, char *err, size_t errlen)
{
    int64_t lookups, bytes;
    char e2[256];
    if (as_field_lim(rec, "id", 0, AS_LIM_TABLE_ID, id, e2, sizeof e2)) { snprintf(err, errlen, "table: %s", e2); return -1; }
    if (as_field_lim(rec, "rows", 1, AS_LIM_ROWS, rows, e2, sizeof e2) ||
        as_field_i64(rec, "batch", 1, INT64_MAX - 1, batch, e2, sizeof e2) ||
        as_field_lim(rec, "dim", 1, AS_LIM_DIM, dim, e2, sizeof e2) ||
        as_field_i64(rec, "lookups", 0, INT64_MAX, &lookups, e2, sizeof e2) ||
        as_table_bytes(*rows, *dim, 4, &bytes, e2, sizeof e2)) {
        snprintf(err, errlen, "table %" PRId64 ": %s", *id, e2);
        return -1;
    }
    if (source && as_obj_str(rec, "source", source, srclen)) source[0] = 0;
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
    if (as_table_at(offsets, 0) != 0 || as_table_at(offsets, *batch) != lookups) {
        snprintf(err, errlen, "table %" PRId64 ": offsets must start at 0 and end at lookups (%" PRId64 ")", *id, lookups);
        return -1;
    }
    int64_t b = first_decrease(offsets, *batch);
    if (b >= 0) {
        snprintf(err, errlen, "table %" PRId64 ": offsets decrease at bag %" PRId64, *id, b);
        return -1;
    }
    return 0;
}

void as_table_index_error(char *err, size_t errlen, int64_t id, int64_t i, int64_t v, int64_t rows)
{
    snprintf(err, errlen, "table %" PRId64 ": indices[%" PRId64 "] = %" PRId64 " is outside [0, rows = %" PRId64 ")", id, i,
             v, rows);
}
