/* table.h - the `table` record (docs/FORMAT.md): its writer and its reader.
 * Dimension letters: B batch, L pooling, D dim, E rows.
 *
 * A `table` record carries one embedding table's batch of lookups: id, rows (E = max index
 * + 1, at least 1), batch (B), lookups, pooling (lookups / B), dim (D), source, offsets (B+1
 * entries from 0) and indices (lookups row ids). as-convert writes them; as-features and
 * as-bench read them.
 */
#ifndef AS_TABLE_H
#define AS_TABLE_H

#include <stdint.h>
#include <string.h>

#include "stream.h"

/* Write one table record. offsets: B+1 re-based values (offsets[0] = 0); indices: lookups
 * values, int32 or int64 (idx_dt). rows is computed by the caller. Offsets go out as int32
 * when lookups < 2^31 - 1, else int64. */
void as_write_table(as_writer *w, int64_t id, int64_t rows, int64_t batch, int64_t dim,
                    const int64_t *offsets, const void *indices, as_dtype idx_dt, const char *source);

/* A table's identity in a model (as-convert --config): its name, its weights' data type and
 * the features that look it up; written into the record when given */
typedef struct {
    const char *name;               /* non-empty */
    const char *data_type;          /* "fp32", "fp16", ... */
    const char (*features)[128];    /* feature names */
    int nfeatures;
} as_table_meta;

/* Bytes per element of a table's weights of data type `name` (any case): fp32 4, fp16 2, bf16
 * 2, int8 1, int4 0.5, int2 0.25; 0 for any other name. The one list of the types a model
 * config may give a table (as-convert --config) and a table or features record may carry;
 * the kernels' weight types (fp16, fp32, bf16) by their names and sizes in ebshard.h. */
double as_table_dtype_bytes(const char *name);
/* The data_type of a table or features record into buf (len >= 8), lower case: absent, buf ""
 * and 0; a string naming one of those types (any case), 0; anything else (nil, "", a number,
 * an unknown or unsafe name) -1 with err ("data_type 7 is not a data type (fp32, ...)"). */
int as_table_data_type(const msgpack_object *rec, char *buf, size_t len, char *err, size_t errlen);

/* as_write_table, with `name`, `data_type` and `feature_names` from meta (NULL: none) */
void as_write_table_meta(as_writer *w, int64_t id, int64_t rows, int64_t batch, int64_t dim, const int64_t *offsets,
                         const void *indices, as_dtype idx_dt, const char *source, const as_table_meta *meta);

/* Parse a `table` record into its arrays, validating it against the schema: id, rows, dim
 * within their limits (reclimits.h), batch >= 1, lookups >= 0, the weight size rows x dim
 * representable; offsets and indices int32 or int64, one-dimensional, offsets [batch+1]
 * starting at 0, never decreasing and ending at lookups, indices [lookups]. The indices'
 * range [0, rows) is not checked here (the consumer meets every index anyway:
 * as_features_compute, as-bench's pool, as_bpool_load); an index outside it is bad data
 * (exit 1) for every tool, reported with as_table_index_error. source (may be NULL) gets the
 * record's source or "". 0 ok; -1 with err ("table 7: offsets decrease at bag 3"). */
int as_table_parse(const msgpack_object *rec, int64_t *id, int64_t *rows, int64_t *batch, int64_t *dim,
                   as_array *offsets, as_array *indices, char *source, size_t srclen, char *err, size_t errlen);
/* the message for index i of table id, v, outside [0, rows): "table 7: indices[6] = 4 is
 * outside [0, rows = 4)" (every reader of table records words it so) */
void as_table_index_error(char *err, size_t errlen, int64_t id, int64_t i, int64_t v, int64_t rows);

/* element i of a parsed table's offsets or indices (int32 or int64, as as_table_parse
 * checked; the data may be unaligned) */
static inline int64_t as_table_at(const as_array *a, int64_t i)
{
    if (a->dtype == AS_DT_I32) { int32_t v; memcpy(&v, (const char *)a->data + 4 * i, 4); return v; }
    int64_t v;
    memcpy(&v, (const char *)a->data + 8 * i, 8);
    return v;
}

#endif
