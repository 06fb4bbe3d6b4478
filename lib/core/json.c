/* json.c - msgpack to JSON; see json.h */
#include "json.h"
#include "msgobj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void as_json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

void as_json_double(FILE *f, double v, int is_float32)
{
    if (!isfinite(v)) { fputs("null", f); return; }
    char buf[64];
    /* shortest form that reads back to the same value */
    for (int prec = is_float32 ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (is_float32 ? (float)back == (float)v : back == v) break;
    }
    /* keep it a JSON number that reads as a float */
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    fputs(buf, f);
}

static int is_array_map(const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size != 3) return 0;
    const msgpack_object *d = as_obj_get(o, "data"), *dt = as_obj_get(o, "dtype"), *sh = as_obj_get(o, "shape");
    return d && dt && sh && d->type == MSGPACK_OBJECT_BIN && dt->type == MSGPACK_OBJECT_STR && sh->type == MSGPACK_OBJECT_ARRAY;
}

static void print_values(FILE *f, const as_array *a, int64_t n)
{
    fputc('[', f);
    int isf = a->dtype == AS_DT_F16 || a->dtype == AS_DT_BF16 || a->dtype == AS_DT_F32 || a->dtype == AS_DT_F64;
    int64_t chunk = 4096;
    int64_t *iv = isf ? NULL : malloc((size_t)chunk * sizeof *iv);
    double *dv = isf ? malloc((size_t)chunk * sizeof *dv) : NULL;
    for (int64_t s = 0; s < n; s += chunk) {
        int64_t m = n - s < chunk ? n - s : chunk;
        if (isf) as_array_get_f64(a, s, m, dv);
        else as_array_get_i64(a, s, m, iv);
        for (int64_t i = 0; i < m; i++) {
            if (s + i) fputc(',', f);
            if (isf) as_json_double(f, dv[i], a->dtype != AS_DT_F64);
            else if (a->dtype == AS_DT_U64 && iv[i] < 0) fprintf(f, "%llu", (unsigned long long)iv[i]);
            else fprintf(f, "%lld", (long long)iv[i]);
        }
    }
    fputc(']', f);
    free(iv);
    free(dv);
}

void as_json_print(FILE *f, const msgpack_object *o, int full, int head)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: fputs("null", f); break;
    case MSGPACK_OBJECT_BOOLEAN: fputs(o->via.boolean ? "true" : "false", f); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: fprintf(f, "%llu", (unsigned long long)o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: fprintf(f, "%lld", (long long)o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32: as_json_double(f, o->via.f64, 1); break;
    case MSGPACK_OBJECT_FLOAT64: as_json_double(f, o->via.f64, 0); break;
    case MSGPACK_OBJECT_STR: as_json_string(f, o->via.str.ptr, o->via.str.size); break;
    case MSGPACK_OBJECT_BIN: fprintf(f, "{\"bin_bytes\":%u}", o->via.bin.size); break;
    case MSGPACK_OBJECT_EXT: fprintf(f, "{\"ext_type\":%d,\"ext_bytes\":%u}", o->via.ext.type, o->via.ext.size); break;
    case MSGPACK_OBJECT_ARRAY:
        fputc('[', f);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i) fputc(',', f);
            as_json_print(f, &o->via.array.ptr[i], full, head);
        }
        fputc(']', f);
        break;
    case MSGPACK_OBJECT_MAP:
        if (is_array_map(o)) {
            as_array a;
            char err[256];
            msgpack_object wrap;
            msgpack_object_kv kv;
            kv.key.type = MSGPACK_OBJECT_STR;
            kv.key.via.str.ptr = "a";
            kv.key.via.str.size = 1;
            kv.val = *o;
            wrap.type = MSGPACK_OBJECT_MAP;
            wrap.via.map.size = 1;
            wrap.via.map.ptr = &kv;
            if (as_obj_array(&wrap, "a", &a, err, sizeof err) == 0) {
                fprintf(f, "{\"dtype\":\"%s\",\"shape\":[", as_dtype_name(a.dtype));
                for (int i = 0; i < a.ndim; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)a.shape[i]);
                if (full) {
                    fputs("],\"data\":", f);
                    print_values(f, &a, a.n);
                } else {
                    fputs("],\"head\":", f);
                    print_values(f, &a, a.n < head ? a.n : head);
                }
                fputc('}', f);
                break;
            }
        }
        fputc('{', f);
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (i) fputc(',', f);
            if (kv->key.type == MSGPACK_OBJECT_STR) as_json_string(f, kv->key.via.str.ptr, kv->key.via.str.size);
            else {
                /* JSON keys must be strings: print the key as JSON text inside a string */
                char *buf = NULL;
                size_t len = 0;
                FILE *m = open_memstream(&buf, &len);
                if (m) {
                    as_json_print(m, &kv->key, 0, 0);
                    fclose(m);
                    as_json_string(f, buf, len);
                    free(buf);
                }
            }
            fputc(':', f);
            as_json_print(f, &kv->val, full, head);
        }
        fputc('}', f);
        break;
    }
}
