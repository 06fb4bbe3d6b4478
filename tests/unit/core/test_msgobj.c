/* test_msgobj.c - the msgpack getters (lib/core/msgobj.h) on records packed here: typed fields,
 * numbers of every msgpack kind and nil, strings, number lists, array maps (good, short data,
 * bad shape); names that are safe to print (as_name_bad); and the error-buffer helper
 * (lib/core/errbuf.h). */
#include "unit.h"

#include "errbuf.h"
#include "msgobj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void kstr(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

TEST(msgobj_fields)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 8);
    kstr(&pk, "i"); msgpack_pack_int64(&pk, -5);
    kstr(&pk, "u"); msgpack_pack_uint64(&pk, UINT64_MAX);
    kstr(&pk, "f"); msgpack_pack_double(&pk, 2.5);
    kstr(&pk, "s"); kstr(&pk, "hello");
    kstr(&pk, "n"); msgpack_pack_nil(&pk);
    kstr(&pk, "l"); msgpack_pack_array(&pk, 3); msgpack_pack_int64(&pk, 1); msgpack_pack_double(&pk, 0.5); msgpack_pack_int64(&pk, -2);
    kstr(&pk, "a");
    int32_t v[3] = { 7, -1, 3 };
    msgpack_pack_map(&pk, 3);
    kstr(&pk, "dtype"); kstr(&pk, "int32");
    kstr(&pk, "shape"); msgpack_pack_array(&pk, 1); msgpack_pack_int64(&pk, 3);
    kstr(&pk, "data"); msgpack_pack_bin(&pk, sizeof v); msgpack_pack_bin_body(&pk, v, sizeof v);
    kstr(&pk, "bad");
    msgpack_pack_map(&pk, 3);
    kstr(&pk, "dtype"); kstr(&pk, "int32");
    kstr(&pk, "shape"); msgpack_pack_array(&pk, 1); msgpack_pack_int64(&pk, 4);
    kstr(&pk, "data"); msgpack_pack_bin(&pk, sizeof v); msgpack_pack_bin_body(&pk, v, sizeof v);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *o = &up.data;

    int64_t i = 0;
    double d = 0;
    CHECK(as_obj_i64(o, "i", &i) == 0 && i == -5);
    CHECK(as_obj_i64(o, "u", &i) == -1);           /* above INT64_MAX */
    CHECK(as_obj_i64(o, "f", &i) == -1);           /* not an integer */
    CHECK(as_obj_i64(o, "missing", &i) == -1);
    CHECK(as_obj_f64(o, "i", &d) == 0 && d == -5);  /* integers read as numbers */
    CHECK(as_obj_f64(o, "f", &d) == 0 && d == 2.5);
    CHECK(as_obj_f64(o, "n", &d) == -1);           /* nil is not a number here */
    CHECK(as_obj_f64(o, "s", &d) == -1);
    CHECK(as_obj_num(as_obj_get(o, "n"), &d) == 1 && isnan(d));
    CHECK(as_obj_num(as_obj_get(o, "u"), &d) == 0 && d == (double)UINT64_MAX);
    CHECK(as_obj_num(as_obj_get(o, "s"), &d) == -1);
    char buf[4];
    CHECK(as_obj_str(o, "s", buf, sizeof buf) == 0 && !strcmp(buf, "hel"));   /* truncated */
    CHECK(as_obj_str(o, "i", buf, sizeof buf) == -1);
    CHECK(as_obj_streq(as_obj_get(o, "s"), "hello") && !as_obj_streq(as_obj_get(o, "s"), "hell"));
    double l[3];
    CHECK(as_obj_f64_list(o, "l", l, 3) == 0 && l[0] == 1 && l[1] == 0.5 && l[2] == -2);
    CHECK(as_obj_f64_list(o, "l", l, 2) == -1);    /* the length must match */
    as_array a;
    char err[256] = "";
    CHECK(as_obj_array(o, "a", &a, err, sizeof err) == 0 && a.dtype == AS_DT_I32 && a.n == 3);
    int64_t g[3];
    as_array_get_i64(&a, 0, 3, g);
    CHECK(g[0] == 7 && g[1] == -1 && g[2] == 3);
    CHECK(as_obj_array(o, "bad", &a, err, sizeof err) == -1);
    CHECK(strstr(err, "field 'bad': 12 data bytes but shape x int32 needs 16") != NULL);
    CHECK(as_obj_array(o, "i", &a, err, sizeof err) == -1 && strstr(err, "not an array map"));
    CHECK(as_obj_get(as_obj_get(o, "i"), "x") == NULL);   /* not a map */
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(errbuf_fills_or_skips)
{
    char b[8];
    as_errbuf(b, sizeof b, "table %d: %s", 7, "bad");
    CHECK_STR(b, "table 7");                     /* truncated to the buffer */
    as_errbuf(NULL, 10, "x");                    /* no buffer: nothing */
    b[0] = 'z';
    as_errbuf(b, 0, "x");
    CHECK(b[0] == 'z');
}

/* names printed raw in text tables: control characters (C0, DEL, C1) and bytes that are not
 * UTF-8 are refused, any other UTF-8 kept */
TEST(name_bad_refuses_control_characters)
{
    char why[128];
    CHECK(as_name_bad("cat_3", 5, why, sizeof why) == NULL);
    CHECK(as_name_bad("t\xc3\xa9l\xc3\xa9phone \xe2\x82\xac \xf0\x9f\x98\x80", 20, why, sizeof why) == NULL);
    CHECK(as_name_bad("\xc2\xa0", 2, why, sizeof why) == NULL);               /* U+00A0: after the C1 block */
    CHECK(as_name_bad("a\x1b[31mRED", 9, why, sizeof why) == why);
    CHECK_STR(why, "holds a control character (byte 0x1b at offset 1)");
    CHECK(as_name_bad("b\nc", 3, why, sizeof why) != NULL);
    CHECK_STR(why, "holds a control character (byte 0x0a at offset 1)");
    CHECK(as_name_bad("a\tb", 3, why, sizeof why) != NULL);
    CHECK(as_name_bad("x\x7f", 2, why, sizeof why) != NULL);
    CHECK_STR(why, "holds a control character (byte 0x7f at offset 1)");
    CHECK(as_name_bad("a\0b", 3, why, sizeof why) != NULL);
    CHECK_STR(why, "holds a control character (byte 0x00 at offset 1)");
    CHECK(as_name_bad("ab\xc2\x9b" "31m", 7, why, sizeof why) != NULL);       /* U+009B: the C1 CSI */
    CHECK_STR(why, "holds a control character (U+009B at offset 2)");
    CHECK(as_name_bad("a\x9b" "31m", 5, why, sizeof why) != NULL);            /* a lone 8-bit CSI */
    CHECK_STR(why, "is not valid UTF-8 (byte 0x9b at offset 1)");
    CHECK(as_name_bad("\xc3", 1, why, sizeof why) != NULL);                   /* cut short */
    CHECK(as_name_bad("\xc0\xaf", 2, why, sizeof why) != NULL);               /* overlong */
    CHECK(as_name_bad("\xe0\x80\xaf", 3, why, sizeof why) != NULL);           /* overlong */
    CHECK(as_name_bad("\xed\xa0\x80", 3, why, sizeof why) != NULL);           /* a surrogate */
    CHECK(as_name_bad("\xf4\x90\x80\x80", 4, why, sizeof why) != NULL);       /* above U+10FFFF */
    CHECK(as_name_bad("", 0, why, sizeof why) != NULL);
    CHECK_STR(why, "is empty");
}
