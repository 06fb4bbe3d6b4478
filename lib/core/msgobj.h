/* msgobj.h - looking inside msgpack objects: a map's fields by key with types checked, and
 * autoshard's array maps {"dtype", "shape", "data"} (docs/FORMAT.md, "Arrays"). A foundation
 * (layer 1): it depends on msgpack-c and half.h only, so that the record readers and the
 * limits of what a record may make (reclimits) can use it without the stream.
 * Nothing here allocates or prints; errors return -1 (with a message where a buffer is given). */
#ifndef AS_MSGOBJ_H
#define AS_MSGOBJ_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

/* value of key in a map, or NULL */
const msgpack_object *as_obj_get(const msgpack_object *map, const char *key);
/* typed getters: 0 ok, -1 missing or wrong type / out of range */
int as_obj_i64(const msgpack_object *map, const char *key, int64_t *out);
int as_obj_f64(const msgpack_object *map, const char *key, double *out);   /* ints accepted */
/* string into buf (NUL-terminated, truncated to len-1); 0 ok */
int as_obj_str(const msgpack_object *map, const char *key, char *buf, size_t len);
/* a msgpack array of exactly n numbers (ints or floats) into out; 0 ok */
int as_obj_f64_list(const msgpack_object *map, const char *key, double *out, int n);
int as_obj_streq(const msgpack_object *o, const char *s);   /* o is a str equal to s */
/* a msgpack number (int or float) into *v: 0 ok, 1 nil (*v NaN), -1 not a number */
int as_obj_num(const msgpack_object *o, double *v);

/* Why s[0..n) is not a printable name: THE rule for every name and label of the records (a
 * table's name, a feature name, a plan's alg and split, cost_device, cost_weights_type,
 * cost_optimizer, comm_model, a table's data_type: printed raw in text tables, so a terminal
 * must not read it as commands, and one line of a log or a JSON document). NULL when it is one
 * (n >= 1, valid UTF-8 (so no surrogate), no control character: C0 U+0000-U+001F, DEL
 * U+007F, C1 U+0080-U+009F, nor the line and paragraph separators U+2028, U+2029), else a
 * phrase in why ("holds a control character (byte 0x1b at offset 1)"), which is returned.
 * pipelines/torchrec_plan.py's bad_name() is the same rule in Python. */
const char *as_name_bad(const char *s, size_t n, char *why, size_t len);
/* the name under key (absent or nil: 1, buf ""): a string of 1..len-1 bytes that
 * as_name_bad passes into buf (0), else -1 with err ("name: holds a control character ...") */
int as_obj_name(const msgpack_object *map, const char *key, char *buf, size_t len, char *err, size_t errlen);

typedef enum {
    AS_DT_U8, AS_DT_I8, AS_DT_I16, AS_DT_I32, AS_DT_I64, AS_DT_U32, AS_DT_U64,
    AS_DT_F16, AS_DT_BF16, AS_DT_F32, AS_DT_F64, AS_DT_COUNT
} as_dtype;

const char *as_dtype_name(as_dtype d);   /* "uint8", "int32", "float16", ... */
size_t as_dtype_size(as_dtype d);
int as_dtype_parse(const char *s, size_t n, as_dtype *out);

#define AS_ARRAY_MAX_DIMS 8
typedef struct {
    as_dtype dtype;
    int ndim;
    int64_t shape[AS_ARRAY_MAX_DIMS];
    int64_t n;              /* number of elements = product of shape */
    const void *data;       /* unaligned, little-endian; points into the record */
    size_t nbytes;
} as_array;

/* Parse the array stored under key. Validates dtype, shape and that the bin length is
 * exactly n * dtype size. 0 ok, -1 with err filled ("field 'indices': ..."). */
int as_obj_array(const msgpack_object *map, const char *key, as_array *a, char *err, size_t errlen);
/* copy element range [start, start+n) converted to int64 / double (integer or float dtypes) */
void as_array_get_i64(const as_array *a, int64_t start, int64_t n, int64_t *out);
void as_array_get_f64(const as_array *a, int64_t start, int64_t n, double *out);

#endif
