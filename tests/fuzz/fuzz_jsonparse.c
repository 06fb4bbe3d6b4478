/* fuzz_jsonparse.c - the strict JSON decoder (lib/core/jsonparse.h). Input: JSON text, as it is.
 * A rejected input must come with a "line L, column C: ..." message; an accepted one is
 * printed with json.h's printer, and that text must parse again and print the same (the
 * printer's output is JSON the decoder accepts, and decoding loses nothing the printer
 * shows). The whole input is also parsed with a 1-byte message buffer. */
#include "fuzz.h"
#include "json.h"
#include "jsonparse.h"

#include <stdlib.h>

static char *print(const msgpack_object *o, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f) abort();
    as_json_print(f, o, 1, 0);
    if (fclose(f)) abort();
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    msgpack_zone z;
    if (!msgpack_zone_init(&z, 4096)) return 0;
    msgpack_object o;
    err[0] = 0;
    const int rc = as_jsonp_parse((const char *)data, size, &z, &o, err, sizeof err);
    if (rc) {
        if (rc != -1 || o.type != MSGPACK_OBJECT_NIL || strncmp(err, "line ", 5) || !strstr(err, ", column ")) abort();
    } else {
        size_t n1, n2;
        char *t1 = print(&o, &n1);
        msgpack_zone z2;
        if (!msgpack_zone_init(&z2, 4096)) abort();
        msgpack_object o2;
        if (as_jsonp_parse(t1, n1, &z2, &o2, err, sizeof err)) abort();
        char *t2 = print(&o2, &n2);
        if (n1 != n2 || memcmp(t1, t2, n1)) abort();
        free(t1);
        free(t2);
        msgpack_zone_destroy(&z2);
    }
    char tiny[1] = { 'x' };
    if (as_jsonp_parse((const char *)data, size, &z, &o, tiny, sizeof tiny) != rc || tiny[0]) abort();
    msgpack_zone_destroy(&z);
    return 0;
}
