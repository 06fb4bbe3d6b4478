/* fuzz_stream.c - the record stream reader (lib/records/stream.c: zstd frames, msgpack records,
 * the header check, the record size cap) and typed arrays inside records (as_obj_array,
 * as_array_get_*). Input: a mode byte, then a stream or raw msgpack records (fuzz.h). */
#include "fuzz.h"
#include "stream.h"

#include <stdlib.h>

/* look into every value of a record that is an array map {"dtype","shape","data"} */
static void arrays(const msgpack_object *rec)
{
    if (rec->type != MSGPACK_OBJECT_MAP) return;
    for (uint32_t i = 0; i < rec->via.map.size; i++) {
        const msgpack_object_kv *kv = &rec->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size >= 64) continue;
        char key[64];
        memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
        key[kv->key.via.str.size] = 0;
        as_array a;
        char err[256];
        if (as_obj_array(rec, key, &a, err, sizeof err)) continue;
        int64_t n = a.n < 16 ? a.n : 16;
        int64_t iv[16];
        double dv[16];
        if (n > 0) {
            as_array_get_i64(&a, 0, n, iv);
            as_array_get_f64(&a, a.n - n, n, dv);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* records up to 64 MiB: enough for any seed, and a small zstd frame may not make the
       reader buffer gigabytes (AS_MAX_RECORD's default is 2 GiB) */
    setenv("AS_MAX_RECORD", "64M", 0);
    size_t n;
    uint8_t *bytes = fz_stream_bytes(data, size, &n);
    if (!bytes) return 0;
    FILE *f = n ? fmemopen(bytes, n, "rb") : fopen("/dev/null", "rb");
    if (!f) { free(bytes); return 0; }
    as_reader *r = as_reader_from_file(f, "fuzz");
    as_record rec;
    int rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        arrays(&rec.obj);
        (void)as_rec_is(&rec, "table");
    }
    if (rc < 0 && !as_reader_error(r)[0]) abort();   /* an error always has a message */
    as_reader_close(r);
    fclose(f);
    free(bytes);
    return 0;
}
