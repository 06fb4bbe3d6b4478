/* test_json.c - msgpack printed as JSON (lib/core/json.h): strings escaped, numbers (NaN and
 * infinities as null, float32 values at their own precision), maps and arrays, array maps
 * summarised or in full, other binary data as its length. */
#include "unit.h"

#include "json.h"
#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *printed(void (*fn)(FILE *, void *), void *ctx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, ctx);
    fclose(f);
    return buf;
}

static void p_str(FILE *f, void *ctx) { const char *s = ctx; as_json_string(f, s, strlen(s)); }
static void p_nan(FILE *f, void *ctx) { (void)ctx; as_json_double(f, NAN, 0); fputc(' ', f); as_json_double(f, -INFINITY, 0); }
static void p_f32(FILE *f, void *ctx) { (void)ctx; as_json_double(f, (double)0.1f, 1); fputc(' ', f); as_json_double(f, 0.1, 0); }
static void p_obj(FILE *f, void *ctx) { as_json_print(f, ctx, 0, 2); }
static void p_full(FILE *f, void *ctx) { as_json_print(f, ctx, 1, 2); }

TEST(json_scalars)
{
    char *s = printed(p_str, "a\"b\\c\n\x01");
    CHECK_STR(s, "\"a\\\"b\\\\c\\n\\u0001\"");
    free(s);
    s = printed(p_nan, NULL);
    CHECK_STR(s, "null null");
    free(s);
    s = printed(p_f32, NULL);
    CHECK_STR(s, "0.1 0.1");      /* a float32 0.1 prints as 0.1, not 0.10000000149011612 */
    free(s);
}

TEST(json_records)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "kind", "t");
    int32_t v[4] = { 5, 6, 7, 8 };
    int64_t shape[1] = { 4 };
    as_pack_kv_array(&pk, "a", AS_DT_I32, v, 1, shape);
    as_pack_str(&pk, "b");
    msgpack_pack_bin(&pk, 3);
    msgpack_pack_bin_body(&pk, "xyz", 3);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
    char *s = printed(p_obj, &up.data);
    CHECK(strstr(s, "\"kind\":\"t\"") != NULL);
    CHECK(strstr(s, "\"dtype\":\"int32\"") != NULL && strstr(s, "\"shape\":[4]") != NULL);
    CHECK(strstr(s, "\"head\":[5,6]") != NULL);       /* summarised: the first 2 values */
    CHECK(strstr(s, "{\"bin_bytes\":3}") != NULL);
    free(s);
    s = printed(p_full, &up.data);
    CHECK(strstr(s, "\"data\":[5,6,7,8]") != NULL);   /* full: every value */
    free(s);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}
