/* msgobj.c - looking inside msgpack objects: typed map fields and array maps; see msgobj.h */
#include "msgobj.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int as_obj_streq(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && !memcmp(o->via.str.ptr, s, n);
}

int as_obj_num(const msgpack_object *o, double *v)
{
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32: case MSGPACK_OBJECT_FLOAT64: *v = o->via.f64; return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *v = (double)o->via.u64; return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *v = (double)o->via.i64; return 0;
    case MSGPACK_OBJECT_NIL: *v = NAN; return 1;
    default: return -1;
    }
}

const char *as_name_bad(const char *s, size_t n, char *why, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    if (!n) { snprintf(why, len, "is empty"); return why; }
    for (size_t i = 0; i < n;) {
        const unsigned c = u[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(why, len, "holds a control character (byte 0x%02x at offset %zu)", c, i);
            return why;
        }
        if (c < 0x80) { i++; continue; }
        /* a UTF-8 sequence: its length, its first continuation byte's range (no overlong
           forms, no surrogates, nothing above U+10FFFF) */
        size_t m;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) m = 2;
        else if (c >= 0xe0 && c <= 0xef) { m = 3; if (c == 0xe0) lo = 0xa0; if (c == 0xed) hi = 0x9f; }
        else if (c >= 0xf0 && c <= 0xf4) { m = 4; if (c == 0xf0) lo = 0x90; if (c == 0xf4) hi = 0x8f; }
        else m = 0;
        int ok = m && i + m <= n && u[i + 1] >= lo && u[i + 1] <= hi;
        for (size_t k = 2; ok && k < m; k++) ok = u[i + k] >= 0x80 && u[i + k] <= 0xbf;
        if (!ok) {
            snprintf(why, len, "is not valid UTF-8 (byte 0x%02x at offset %zu)", c, i);
            return why;
        }
        if (c == 0xc2 && u[i + 1] <= 0x9f) {   /* U+0080-U+009F: C1 controls (0x9b: CSI) */
            snprintf(why, len, "holds a control character (U+%04X at offset %zu)", u[i + 1], i);
            return why;
        }
        if (c == 0xe2 && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {   /* line, paragraph separator */
            snprintf(why, len, "holds a line separator (U+%04X at offset %zu)", 0x2000u + (u[i + 2] - 0x80u), i);
            return why;
        }
        i += m;
    }
    return NULL;
}

int as_obj_name(const msgpack_object *map, const char *key, char *buf, size_t len, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    char why[96];
    buf[0] = 0;
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 1;
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= len) {
        snprintf(err, errlen, "%s: not a name (a string of 1-%zu bytes)", key, len - 1);
        return -1;
    }
    if (as_name_bad(o->via.str.ptr, o->via.str.size, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", key, why);
        return -1;
    }
    memcpy(buf, o->via.str.ptr, o->via.str.size);
    buf[o->via.str.size] = 0;
    return 0;
}

const msgpack_object *as_obj_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP) return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n && !memcmp(kv->key.via.str.ptr, key, n))
            return &kv->val;
    }
    return NULL;
}

int as_obj_i64(const msgpack_object *map, const char *key, int64_t *out)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return -1;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > INT64_MAX) return -1;
        *out = (int64_t)o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) { *out = o->via.i64; return 0; }
    return -1;
}

int as_obj_f64(const msgpack_object *map, const char *key, double *out)
{
    const msgpack_object *o = as_obj_get(map, key);
    double v;
    if (!o || as_obj_num(o, &v)) return -1;   /* nil is not a number here */
    *out = v;
    return 0;
}

int as_obj_f64_list(const msgpack_object *map, const char *key, double *out, int n)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != n) return -1;
    for (int i = 0; i < n; i++)
        if (as_obj_num(&o->via.array.ptr[i], &out[i])) return -1;
    return 0;
}

int as_obj_str(const msgpack_object *map, const char *key, char *buf, size_t len)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type != MSGPACK_OBJECT_STR || len == 0) return -1;
    size_t n = o->via.str.size < len - 1 ? o->via.str.size : len - 1;
    memcpy(buf, o->via.str.ptr, n);
    buf[n] = 0;
    return 0;
}

static const char *dt_names[AS_DT_COUNT] = {
    "uint8", "int8", "int16", "int32", "int64", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64"
};
static const size_t dt_sizes[AS_DT_COUNT] = { 1, 1, 2, 4, 8, 4, 8, 2, 2, 4, 8 };

const char *as_dtype_name(as_dtype d) { return (unsigned)d < AS_DT_COUNT ? dt_names[d] : "?"; }
size_t as_dtype_size(as_dtype d) { return (unsigned)d < AS_DT_COUNT ? dt_sizes[d] : 0; }

int as_dtype_parse(const char *s, size_t n, as_dtype *out)
{
    for (int i = 0; i < AS_DT_COUNT; i++)
        if (strlen(dt_names[i]) == n && !memcmp(dt_names[i], s, n)) { *out = (as_dtype)i; return 0; }
    return -1;
}

int as_obj_array(const msgpack_object *map, const char *key, as_array *a, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) { snprintf(err, errlen, "missing field '%s'", key); return -1; }
    if (o->type != MSGPACK_OBJECT_MAP) { snprintf(err, errlen, "field '%s' is not an array map", key); return -1; }
    const msgpack_object *dt = as_obj_get(o, "dtype"), *sh = as_obj_get(o, "shape"), *d = as_obj_get(o, "data");
    if (!dt || dt->type != MSGPACK_OBJECT_STR || as_dtype_parse(dt->via.str.ptr, dt->via.str.size, &a->dtype)) {
        snprintf(err, errlen, "field '%s': missing or unknown dtype", key); return -1;
    }
    if (!sh || sh->type != MSGPACK_OBJECT_ARRAY || sh->via.array.size > AS_ARRAY_MAX_DIMS) {
        snprintf(err, errlen, "field '%s': missing or bad shape", key); return -1;
    }
    if (!d || (d->type != MSGPACK_OBJECT_BIN && d->type != MSGPACK_OBJECT_STR)) {
        snprintf(err, errlen, "field '%s': data is not bin", key); return -1;
    }
    a->ndim = (int)sh->via.array.size;
    uint64_t n = 1;
    for (int i = 0; i < a->ndim; i++) {
        const msgpack_object *x = &sh->via.array.ptr[i];
        if (x->type != MSGPACK_OBJECT_POSITIVE_INTEGER || x->via.u64 > ((uint64_t)1 << 48)) {
            snprintf(err, errlen, "field '%s': bad shape entry %d", key, i); return -1;
        }
        a->shape[i] = (int64_t)x->via.u64;
        if (x->via.u64 && n > ((uint64_t)1 << 48) / x->via.u64) { snprintf(err, errlen, "field '%s': shape too large", key); return -1; }
        n *= x->via.u64;
    }
    a->n = (int64_t)n;
    a->data = d->type == MSGPACK_OBJECT_BIN ? (const void *)d->via.bin.ptr : (const void *)d->via.str.ptr;
    a->nbytes = d->type == MSGPACK_OBJECT_BIN ? d->via.bin.size : d->via.str.size;
    if ((uint64_t)a->nbytes != n * as_dtype_size(a->dtype)) {
        snprintf(err, errlen, "field '%s': %zu data bytes but shape x %s needs %llu", key, a->nbytes,
                 as_dtype_name(a->dtype), (unsigned long long)(n * as_dtype_size(a->dtype)));
        return -1;
    }
    return 0;
}

#define GET_LOOP(T, conv) do { const unsigned char *p = (const unsigned char *)a->data + (size_t)start * sizeof(T); \
    for (int64_t i = 0; i < n; i++) { T v; memcpy(&v, p + (size_t)i * sizeof(T), sizeof(T)); out[i] = conv; } } while (0)

/* float to int64: toward zero, saturating, NaN -> 0 (a plain cast of inf or 1e30 is
 * undefined behaviour; found by tests/fuzz/fuzz_stream.c) */
static int64_t f2i64(double d)
{
    if (d != d) return 0;
    if (d >= 9223372036854775808.0) return INT64_MAX;
    if (d < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

void as_array_get_i64(const as_array *a, int64_t start, int64_t n, int64_t *out)
{
    switch (a->dtype) {
    case AS_DT_U8: GET_LOOP(uint8_t, (int64_t)v); break;
    case AS_DT_I8: GET_LOOP(int8_t, (int64_t)v); break;
    case AS_DT_I16: GET_LOOP(int16_t, (int64_t)v); break;
    case AS_DT_I32: GET_LOOP(int32_t, (int64_t)v); break;
    case AS_DT_I64: if (n) memcpy(out, (const char *)a->data + (size_t)start * 8, (size_t)n * 8); break;
    case AS_DT_U32: GET_LOOP(uint32_t, (int64_t)v); break;
    case AS_DT_U64: GET_LOOP(uint64_t, (int64_t)v); break;
    case AS_DT_F16: GET_LOOP(uint16_t, f2i64(as_half_to_float(v))); break;
    case AS_DT_BF16: GET_LOOP(uint16_t, f2i64(as_bf16_to_float(v))); break;
    case AS_DT_F32: GET_LOOP(float, f2i64(v)); break;
    case AS_DT_F64: GET_LOOP(double, f2i64(v)); break;
    default: break;
    }
}

void as_array_get_f64(const as_array *a, int64_t start, int64_t n, double *out)
{
    switch (a->dtype) {
    case AS_DT_U8: GET_LOOP(uint8_t, (double)v); break;
    case AS_DT_I8: GET_LOOP(int8_t, (double)v); break;
    case AS_DT_I16: GET_LOOP(int16_t, (double)v); break;
    case AS_DT_I32: GET_LOOP(int32_t, (double)v); break;
    case AS_DT_I64: GET_LOOP(int64_t, (double)v); break;
    case AS_DT_U32: GET_LOOP(uint32_t, (double)v); break;
    case AS_DT_U64: GET_LOOP(uint64_t, (double)v); break;
    case AS_DT_F16: GET_LOOP(uint16_t, as_half_to_float(v)); break;
    case AS_DT_BF16: GET_LOOP(uint16_t, as_bf16_to_float(v)); break;
    case AS_DT_F32: GET_LOOP(float, (double)v); break;
    case AS_DT_F64: GET_LOOP(double, v); break;
    default: break;
    }
}
