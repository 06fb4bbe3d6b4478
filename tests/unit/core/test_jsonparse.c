/* test_jsonparse.c - the strict JSON decoder (lib/core/jsonparse.h): every type and its msgpack
 * mapping (int64 edges, floats, -0), strings and their escapes (surrogate pairs, \u0000),
 * containers read with stream.h's accessors, each strictness rule as an error with its line
 * and column, repeated keys (small and large objects), the depth limit, every prefix of a
 * document, large inputs, and the round trip through json.h's printer. Inputs are copied
 * into buffers of their exact size, so that a read past the end shows under ASan. */
#include "unit.h"

#include "json.h"
#include "jsonparse.h"
#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* parse s[0..n) from an exact-size copy; returns as_jsonp_parse's result */
static int jp(msgpack_zone *z, const char *s, size_t n, msgpack_object *o, char *err, size_t errlen)
{
    char *c = malloc(n ? n : 1);
    if (n) memcpy(c, s, n);
    int rc = as_jsonp_parse(c, n, z, o, err, errlen);
    free(c);
    return rc;
}

/* a NUL-terminated document: 0 or -1, err (256 bytes) set */
static int jps(msgpack_zone *z, const char *s, msgpack_object *o, char *err)
{
    return jp(z, s, strlen(s), o, err, 256);
}

static int str_is(const msgpack_object *o, const char *s, size_t n)
{
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && !memcmp(o->via.str.ptr, s, n);
}

/* print o with as_json_print; malloc'd text */
static char *print(const msgpack_object *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_json_print(f, o, 1, 0);
    fclose(f);
    return buf;
}

TEST(jsonp_scalars)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[256];

    CHECK_EQ_I64(jps(&z, "null", &o, err), 0);
    CHECK(o.type == MSGPACK_OBJECT_NIL);
    CHECK_EQ_I64(jps(&z, " \t\r\n true \n", &o, err), 0);
    CHECK(o.type == MSGPACK_OBJECT_BOOLEAN && o.via.boolean);
    CHECK_EQ_I64(jps(&z, "false", &o, err), 0);
    CHECK(o.type == MSGPACK_OBJECT_BOOLEAN && !o.via.boolean);

    struct { const char *in; int type; int64_t i; uint64_t u; } ints[] = {
        { "0", MSGPACK_OBJECT_POSITIVE_INTEGER, 0, 0 },
        { "-0", MSGPACK_OBJECT_POSITIVE_INTEGER, 0, 0 },
        { "42", MSGPACK_OBJECT_POSITIVE_INTEGER, 0, 42 },
        { "-1", MSGPACK_OBJECT_NEGATIVE_INTEGER, -1, 0 },
        { "9223372036854775807", MSGPACK_OBJECT_POSITIVE_INTEGER, 0, (uint64_t)INT64_MAX },
        { "-9223372036854775807", MSGPACK_OBJECT_NEGATIVE_INTEGER, -INT64_MAX, 0 },
        { "-9223372036854775808", MSGPACK_OBJECT_NEGATIVE_INTEGER, INT64_MIN, 0 },
    };
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        err[0] = 0;
        if (!CHECK_EQ_I64(jps(&z, ints[k].in, &o, err), 0)) fprintf(stderr, "  %s: %s\n", ints[k].in, err);
        CHECK_EQ_I64(o.type, ints[k].type);
        if (o.type == MSGPACK_OBJECT_POSITIVE_INTEGER) CHECK(o.via.u64 == ints[k].u);
        else CHECK_EQ_I64(o.via.i64, ints[k].i);
    }

    /* anything else is a double: fractions, exponents, integers beyond int64 */
    struct { const char *in; double v; } flts[] = {
        { "1.5", 1.5 }, { "-2.5e-3", -2.5e-3 }, { "1E2", 100.0 }, { "1e+2", 100.0 }, { "0.1", 0.1 },
        { "6.02E23", 6.02e23 }, { "1e-400", 0.0 }, { "123.456e-7", 123.456e-7 },
        { "9223372036854775808", 9223372036854775808.0 },
        { "18446744073709551615", 18446744073709551615.0 },
        { "-9223372036854775809", -9223372036854775809.0 },
        { "123456789012345678901234567890", 123456789012345678901234567890.0 },
    };
    for (size_t k = 0; k < sizeof flts / sizeof *flts; k++) {
        err[0] = 0;
        if (!CHECK_EQ_I64(jps(&z, flts[k].in, &o, err), 0)) fprintf(stderr, "  %s: %s\n", flts[k].in, err);
        CHECK_EQ_I64(o.type, MSGPACK_OBJECT_FLOAT64);
        if (!CHECK(o.via.f64 == flts[k].v)) fprintf(stderr, "  %s: %.17g\n", flts[k].in, o.via.f64);
    }
    CHECK_EQ_I64(jps(&z, "-0.0", &o, err), 0);
    CHECK(o.type == MSGPACK_OBJECT_FLOAT64 && o.via.f64 == 0.0 && signbit(o.via.f64));
    msgpack_zone_destroy(&z);
}

TEST(jsonp_strings)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[256];
    struct { const char *in; const char *want; size_t n; } s[] = {
        { "\"\"", "", 0 },
        { "\"abc\"", "abc", 3 },
        { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8 },
        { "\"caf\\u00e9\"", "caf\xc3\xa9", 5 },
        { "\"\\u20AC\\u20ac\"", "\xe2\x82\xac\xe2\x82\xac", 6 },
        { "\"\\u0041\\u007f\\u0080\\u07FF\\u0800\\uFFFF\"", "A\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf", 12 },
        { "\"\\uD83D\\uDE00\"", "\xf0\x9f\x98\x80", 4 },
        { "\"\\ud800\\udc00|\\uDBFF\\uDFFF\"", "\xf0\x90\x80\x80|\xf4\x8f\xbf\xbf", 9 },
        { "\"raw caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \x7f\"",
          "raw caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \x7f", 25 },
        { "\"a\\u0000b\"", "a\0b", 3 },
        { "\"\\u0000\"", "\0", 1 },
    };
    for (size_t k = 0; k < sizeof s / sizeof *s; k++) {
        err[0] = 0;
        if (!CHECK_EQ_I64(jps(&z, s[k].in, &o, err), 0)) fprintf(stderr, "  %s: %s\n", s[k].in, err);
        if (!CHECK(str_is(&o, s[k].want, s[k].n))) fprintf(stderr, "  case %zu: %s\n", k, s[k].in);
    }
    msgpack_zone_destroy(&z);
}

TEST(jsonp_containers)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[256];
    const char *doc = "{\"zeta\": 1, \"alpha\": [1, -2, 2.5, \"x\", null, true, {}, []],\n"
                      " \"obj\": {\"name\": \"tables\", \"k\": -7}, \"\": \"empty key\"}";
    if (!CHECK_EQ_I64(jps(&z, doc, &o, err), 0)) fprintf(stderr, "  %s\n", err);
    CHECK(o.type == MSGPACK_OBJECT_MAP);
    CHECK_EQ_I64(o.via.map.size, 4);
    /* the order of the text */
    CHECK(str_is(&o.via.map.ptr[0].key, "zeta", 4));
    CHECK(str_is(&o.via.map.ptr[1].key, "alpha", 5));
    CHECK(str_is(&o.via.map.ptr[2].key, "obj", 3));
    CHECK(str_is(&o.via.map.ptr[3].key, "", 0));
    int64_t v = 0;
    CHECK_EQ_I64(as_obj_i64(&o, "zeta", &v), 0);
    CHECK_EQ_I64(v, 1);
    const msgpack_object *a = as_obj_get(&o, "alpha");
    CHECK(a && a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 8);
    if (a && a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 8) {
        const msgpack_object *e = a->via.array.ptr;
        CHECK(e[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && e[0].via.u64 == 1);
        CHECK(e[1].type == MSGPACK_OBJECT_NEGATIVE_INTEGER && e[1].via.i64 == -2);
        CHECK(e[2].type == MSGPACK_OBJECT_FLOAT64 && e[2].via.f64 == 2.5);
        CHECK(str_is(&e[3], "x", 1));
        CHECK(e[4].type == MSGPACK_OBJECT_NIL);
        CHECK(e[5].type == MSGPACK_OBJECT_BOOLEAN && e[5].via.boolean);
        CHECK(e[6].type == MSGPACK_OBJECT_MAP && e[6].via.map.size == 0);
        CHECK(e[7].type == MSGPACK_OBJECT_ARRAY && e[7].via.array.size == 0);
    }
    const msgpack_object *ob = as_obj_get(&o, "obj");
    char name[32];
    CHECK_EQ_I64(as_obj_str(ob, "name", name, sizeof name), 0);
    CHECK_STR(name, "tables");
    double d = 0;
    CHECK_EQ_I64(as_obj_f64(ob, "k", &d), 0);
    CHECK(d == -7.0);
    CHECK(as_obj_streq(as_obj_get(&o, ""), "empty key"));
    CHECK(as_obj_get(&o, "missing") == NULL);

    /* keys are compared by their decoded bytes: "a" and "\u0061" are one key; "a" and
       "a\u0000" are two */
    CHECK_EQ_I64(jps(&z, "{\"a\": 1, \"a\\u0000\": 2, \"b\": 3}", &o, err), 0);
    CHECK_EQ_I64(jps(&z, "{\"a\": 1, \"\\u0061\": 2}", &o, err), -1);
    CHECK(strstr(err, "line 1, column 10: duplicate key \"a\"") != NULL);
    msgpack_zone_destroy(&z);
}

/* inputs that must fail, with a piece of the message (line and column included) */
TEST(jsonp_errors)
{
    static const struct { const char *in; size_t n; const char *want; } bad[] = {
        /* structure */
        { "", 0, "line 1, column 1: unexpected end of input, expected a value" },
        { "  \n ", 0, "line 2, column 2: unexpected end of input, expected a value" },
        { "1 2", 0, "line 1, column 3: unexpected data after the value" },
        { "{} {}", 0, "line 1, column 4: unexpected data after the value" },
        { "[] ]", 0, "line 1, column 4: unexpected data after the value" },
        { "[1,2,]", 0, "line 1, column 6: expected a value after ',' (trailing commas" },
        { "{\"a\":1,}", 0, "line 1, column 8: expected a string key after ',' (trailing commas" },
        { "[1,,2]", 0, "line 1, column 4: expected a value" },
        { "[,1]", 0, "line 1, column 2: expected a value" },
        { "{,}", 0, "line 1, column 2: expected a string key or '}'" },
        { "{1:2}", 0, "line 1, column 2: expected a string key or '}'" },
        { "{\"a\" 1}", 0, "line 1, column 6: expected ':' after a key" },
        { "{\"a\":}", 0, "line 1, column 6: expected a value" },
        { "[1 2]", 0, "line 1, column 4: expected ',' or ']' after an element" },
        { "{\"a\":1 \"b\":2}", 0, "line 1, column 8: expected ',' or '}' after a member" },
        { "{\n  \"a\": 1,\n  \"b\": 2\n  \"c\": 3\n}", 0, "line 4, column 3: expected ',' or '}' after a member" },
        { "[1}", 0, "line 1, column 3: expected ',' or ']' after an element" },
        { "{\"a\":1]", 0, "line 1, column 7: expected ',' or '}' after a member" },
        { "]", 0, "line 1, column 1: expected a value" },
        /* comments, quotes, literals */
        { "// c\n1", 0, "line 1, column 1: expected a value (comments are not allowed)" },
        { "[/* x */ 1]", 0, "line 1, column 2: expected a value (comments are not allowed)" },
        { "[1 // c\n]", 0, "line 1, column 4: expected ',' or ']' after an element" },
        { "{\"a\":1, // c\n\"b\":2}", 0, "line 1, column 9: expected a string key (comments are not allowed)" },
        { "{'a':1}", 0, "line 1, column 2: expected a string key in double quotes" },
        { "['a']", 0, "line 1, column 2: expected a value (strings take double quotes)" },
        { "NaN", 0, "line 1, column 1: expected a value" },
        { "[Infinity]", 0, "line 1, column 2: expected a value" },
        { "-Infinity", 0, "line 1, column 2: invalid number: expected a digit after '-'" },
        { "nan", 0, "line 1, column 1: invalid literal" },
        { "True", 0, "line 1, column 1: expected a value" },
        { "nul", 0, "line 1, column 1: invalid literal" },
        { "[tru]", 0, "line 1, column 2: invalid literal" },
        { "truex", 0, "line 1, column 5: unexpected data after the value" },
        { "\xef\xbb\xbf{}", 0, "line 1, column 1: a UTF-8 byte order mark (bytes EF BB BF) starts the text: JSON has none" },
        { "\xff\xfe{\0}\0", 6, "line 1, column 1: a UTF-16 byte order mark (bytes FF FE)" },
        { "\xef\xbb", 0, "line 1, column 1: expected a value" },
        { "\f1", 0, "line 1, column 1: expected a value" },
        /* numbers */
        { "01", 0, "line 1, column 2: invalid number: leading zero" },
        { "[-012]", 0, "line 1, column 4: invalid number: leading zero" },
        { "00", 0, "line 1, column 2: invalid number: leading zero" },
        { "+1", 0, "line 1, column 1: invalid number" },
        { ".5", 0, "line 1, column 1: invalid number" },
        { "[1.]", 0, "line 1, column 4: invalid number: expected a digit after '.'" },
        { "1.e5", 0, "line 1, column 3: invalid number: expected a digit after '.'" },
        { "1e", 0, "line 1, column 3: invalid number: expected a digit in the exponent" },
        { "1e+", 0, "line 1, column 4: invalid number: expected a digit in the exponent" },
        { "-", 0, "line 1, column 2: invalid number: expected a digit after '-'" },
        { "- 1", 0, "line 1, column 2: invalid number: expected a digit after '-'" },
        { "0x10", 0, "line 1, column 2: unexpected data after the value" },
        { "1.5.3", 0, "line 1, column 4: unexpected data after the value" },
        { "[1e400]", 0, "line 1, column 2: number out of range" },
        { "-1e400", 0, "line 1, column 1: number out of range" },
        /* strings */
        { "[\"abc", 0, "line 1, column 2: unterminated string" },
        { "[\"ab\\", 0, "line 1, column 2: unterminated string" },
        { "\"\\u12", 0, "line 1, column 1: unterminated string" },
        { "\"\\uD83D\\uDE", 0, "line 1, column 1: unterminated string" },
        { "\"\xe2\x82", 0, "line 1, column 1: unterminated string" },
        { "\"a\tb\"", 0, "line 1, column 3: control character 0x09 in a string" },
        { "{\n  \"k\": \"a\nb\"\n}", 0, "line 2, column 10: control character 0x0A in a string" },
        { "\"\x1f\"", 0, "line 1, column 2: control character 0x1F" },
        { "\"\\x\"", 0, "line 1, column 2: invalid escape '\\x'" },
        { "\"ab\\'\"", 0, "line 1, column 4: invalid escape '\\''" },
        { "\"\\u12G4\"", 0, "line 1, column 2: invalid \\u escape: expected 4 hex digits" },
        { "\"\\u00\"", 0, "line 1, column 2: invalid \\u escape" },
        { "\"\\uD800\"", 0, "line 1, column 2: lone surrogate \\uD800" },
        { "\"ab\\uDC00\"", 0, "line 1, column 4: lone surrogate \\uDC00" },
        { "\"\\uD800\\u0041\"", 0, "line 1, column 2: lone surrogate \\uD800" },
        { "\"\\uD800x\"", 0, "line 1, column 2: lone surrogate \\uD800" },
        { "\"\\uD800\\uD800\"", 0, "line 1, column 2: lone surrogate \\uD800" },
        { "\"\\uD800\\uZZZZ\"", 0, "line 1, column 8: invalid \\u escape" },
        { "\"\xc0\x80\"", 0, "line 1, column 2: invalid UTF-8 in a string" },
        { "\"\xc1\xbf\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\xe0\x80\x80\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\xed\xa0\x80\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"a\xf5\x80\x80\x80\"", 0, "line 1, column 3: invalid UTF-8" },
        { "\"\xf4\x90\x80\x80\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\xf0\x80\x80\x80\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\x80\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\xe2\x82\"", 0, "line 1, column 2: invalid UTF-8" },
        { "\"\xff\"", 0, "line 1, column 2: invalid UTF-8" },
        /* NUL bytes */
        { "\"a\0b\"", 5, "line 1, column 3: NUL byte in a string" },
        { "[1,\0]", 5, "line 1, column 4: unexpected NUL byte" },
        { "1\0", 2, "line 1, column 2: unexpected NUL byte after the value" },
        { "\0", 1, "line 1, column 1: unexpected NUL byte" },
        { "{\0}", 3, "line 1, column 2: unexpected NUL byte" },
        { "[1\0]", 4, "line 1, column 3: expected ',' or ']' after an element" },
        /* repeated keys: the second occurrence */
        { "{\"name\":1,\n \"x\":2, \"name\":3}", 0, "line 2, column 9: duplicate key \"name\"" },
        { "{\"a\":1,\"b\":{\"a\":2,\"b\":3},\"b\":4}", 0, "line 1, column 26: duplicate key \"b\"" },
        { "{\"q\\\"\\u0001\":1,\"q\\\"\\u0001\":2}", 0, "duplicate key \"q\\\"\\u0001\"" },
        /* truncation */
        { "[1, [2", 0, "line 1, column 7: unexpected end of input, expected ',' or ']' after an element" },
        { "{\"a\":", 0, "line 1, column 6: unexpected end of input, expected a value" },
        { "{\"a\"", 0, "line 1, column 5: unexpected end of input, expected ':' after a key" },
        { "{\"a\":1,", 0, "line 1, column 8: unexpected end of input, expected a string key" },
        { "{\"a\":1\n", 0, "line 2, column 1: unexpected end of input, expected ',' or '}' after a member" },
    };
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        const size_t n = bad[k].n ? bad[k].n : strlen(bad[k].in);
        char err[256] = "";
        msgpack_object o;
        o.type = MSGPACK_OBJECT_ARRAY;
        const int rc = jp(&z, bad[k].in, n, &o, err, sizeof err);
        if (!CHECK_EQ_I64(rc, -1)) fprintf(stderr, "  case %zu accepted\n", k);
        CHECK(o.type == MSGPACK_OBJECT_NIL);
        if (!strstr(err, bad[k].want)) {
            fprintf(stderr, "  case %zu:\n", k);
            CHECK_STR(err, bad[k].want);
        }
    }
    msgpack_zone_destroy(&z);
}

TEST(jsonp_err_buffer)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[12];
    memset(err, 'x', sizeof err);
    CHECK_EQ_I64(jp(&z, "[1,]", 4, &o, err, sizeof err), -1);
    CHECK_STR(err, "line 1, col");    /* truncated, terminated */
    CHECK_EQ_I64(jp(&z, "[1,]", 4, &o, NULL, 0), -1);
    CHECK_EQ_I64(jp(&z, "[1,]", 4, &o, err, 0), -1);
    CHECK_EQ_I64(jp(&z, "[1]", 3, &o, NULL, 0), 0);
    /* a long repeated key is cut in the message, never inside a character */
    char doc[400];
    char key[120] = "a";
    for (int k = 0; k < 30; k++) strcat(key, "\xe2\x82\xac");   /* 'a', then 90 bytes of euros */
    snprintf(doc, sizeof doc, "{\"%s\":1,\"%s\":2}", key, key);
    char e2[256];
    CHECK_EQ_I64(jp(&z, doc, strlen(doc), &o, e2, sizeof e2), -1);
    char want[128];
    snprintf(want, sizeof want, "duplicate key \"%.46s...\"", key);   /* byte 48 is inside a euro: 'a' and 15 of them */
    if (!strstr(e2, want)) CHECK_STR(e2, want);
    msgpack_zone_destroy(&z);
}

/* "[[...[]...]]" (map 0) or {"a":{"a":...{}...}} (map 1) of the given depth */
static char *nest(int depth, int map)
{
    char *s = malloc((size_t)depth * 6 + 1), *w = s;
    for (int k = 0; k < depth; k++) w += sprintf(w, "%s", map ? (k + 1 < depth ? "{\"a\":" : "{") : "[");
    for (int k = 0; k < depth; k++) *w++ = map ? '}' : ']';
    *w = 0;
    return s;
}

TEST(jsonp_depth)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[256];
    for (int map = 0; map < 2; map++) {
        char *s = nest(AS_JSONP_MAX_DEPTH, map);
        err[0] = 0;
        if (!CHECK_EQ_I64(jps(&z, s, &o, err), 0)) fprintf(stderr, "  %s\n", err);
        const msgpack_object *x = &o;
        int d = 1;
        while (map ? x->type == MSGPACK_OBJECT_MAP && x->via.map.size == 1 : x->type == MSGPACK_OBJECT_ARRAY && x->via.array.size == 1) {
            x = map ? &x->via.map.ptr[0].val : &x->via.array.ptr[0];
            d++;
        }
        CHECK_EQ_I64(d, AS_JSONP_MAX_DEPTH);
        CHECK(map ? x->type == MSGPACK_OBJECT_MAP && x->via.map.size == 0 : x->type == MSGPACK_OBJECT_ARRAY && x->via.array.size == 0);
        free(s);
        s = nest(AS_JSONP_MAX_DEPTH + 1, map);
        CHECK_EQ_I64(jps(&z, s, &o, err), -1);
        char want[64];
        /* the 65th bracket: column 65 of [[[..., column 64 * 5 + 1 of {"a":{"a":... */
        snprintf(want, sizeof want, "line 1, column %d: nesting deeper than 64", map ? 64 * 5 + 1 : 65);
        if (!strstr(err, want)) CHECK_STR(err, want);
        free(s);
    }
    /* a million brackets: one error, no recursion */
    const size_t n = 1 << 20;
    char *deep = malloc(n);
    memset(deep, '[', n);
    CHECK_EQ_I64(jp(&z, deep, n, &o, err, sizeof err), -1);
    CHECK(strstr(err, "column 65: nesting deeper than 64") != NULL);
    free(deep);
    msgpack_zone_destroy(&z);
}

/* every prefix of a document fails cleanly; only the whole parses */
TEST(jsonp_prefixes)
{
    const char *doc =
        "{\n"
        "  \"name\": \"embedding \\\"tables\\\"\",\n"
        "  \"n\": 12345, \"neg\": -9223372036854775808, \"big\": 18446744073709551616,\n"
        "  \"f\": [1.5, -0.25e-3, 6.02E23, 0, -0],\n"
        "  \"flags\": {\"on\": true, \"off\": false, \"none\": null},\n"
        "  \"unicode\": \"caf\\u00e9 \\ud83d\\ude00 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\n"
        "  \"esc\": \"\\b\\f\\n\\r\\t\\/\\\\\\u0000\",\n"
        "  \"empty\": [{}, [], \"\"],\n"
        "  \"nested\": [[[1], [2, [3]]], {\"k\": {\"k\": [null]}}]\n"
        "}";
    const size_t n = strlen(doc);
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    msgpack_object o;
    char err[256];
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        err[0] = 0;
        if (jp(&z, doc, k, &o, err, sizeof err) != -1 || strncmp(err, "line ", 5) || o.type != MSGPACK_OBJECT_NIL) {
            if (!bad++) fprintf(stderr, "  prefix of %zu bytes: \"%s\"\n", k, err);
        }
    }
    CHECK_EQ_I64(bad, 0);
    if (!CHECK_EQ_I64(jp(&z, doc, n, &o, err, sizeof err), 0)) fprintf(stderr, "  %s\n", err);
    CHECK(o.type == MSGPACK_OBJECT_MAP && o.via.map.size == 10);
    CHECK(str_is(as_obj_get(&o, "name"), "embedding \"tables\"", 18));
    CHECK(str_is(as_obj_get(&o, "unicode"), "caf\xc3\xa9 \xf0\x9f\x98\x80 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 25));
    CHECK(str_is(as_obj_get(&o, "esc"), "\b\f\n\r\t/\\\0", 8));
    const msgpack_object *big = as_obj_get(&o, "big");
    CHECK(big && big->type == MSGPACK_OBJECT_FLOAT64 && big->via.f64 == 18446744073709551616.0);
    msgpack_zone_destroy(&z);
}

TEST(jsonp_large)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 1 << 16);
    msgpack_object o;
    char err[256];
    /* ~1 MB array of numbers */
    size_t cap = (1 << 20) + 64, n = 0;
    char *s = malloc(cap);
    s[n++] = '[';
    int64_t count = 0;
    while (n < (1 << 20)) {
        if (count) s[n++] = ',';
        if (count % 4 == 3) n += (size_t)sprintf(s + n, "%lld.25", (long long)count);
        else n += (size_t)sprintf(s + n, "%lld", (long long)(count % 2 ? -count : count));
        count++;
    }
    s[n++] = ']';
    if (!CHECK_EQ_I64(jp(&z, s, n, &o, err, sizeof err), 0)) fprintf(stderr, "  %s\n", err);
    CHECK(o.type == MSGPACK_OBJECT_ARRAY);
    CHECK_EQ_I64(o.via.array.size, count);
    if (o.type == MSGPACK_OBJECT_ARRAY && (int64_t)o.via.array.size == count) {
        const msgpack_object *e = o.via.array.ptr;
        CHECK(e[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && e[0].via.u64 == 0);
        CHECK(e[1].type == MSGPACK_OBJECT_NEGATIVE_INTEGER && e[1].via.i64 == -1);
        CHECK(e[1000].type == MSGPACK_OBJECT_POSITIVE_INTEGER && e[1000].via.u64 == 1000);
        CHECK(e[1003].type == MSGPACK_OBJECT_FLOAT64 && e[1003].via.f64 == 1003.25);
        CHECK(e[count - 1].type != MSGPACK_OBJECT_NIL);
    }
    free(s);

    /* an object of 20000 keys (the sorted check of repeats), then the same with a repeat */
    const int m = 20000;
    cap = (size_t)m * 24 + 64;
    s = malloc(cap);
    n = 0;
    s[n++] = '{';
    for (int k = 0; k < m; k++) n += (size_t)sprintf(s + n, "%s\"k%d\":%d", k ? "," : "", k, k);
    s[n++] = '}';
    if (!CHECK_EQ_I64(jp(&z, s, n, &o, err, sizeof err), 0)) fprintf(stderr, "  %s\n", err);
    CHECK(o.type == MSGPACK_OBJECT_MAP && o.via.map.size == (uint32_t)m);
    int64_t v = -1;
    CHECK_EQ_I64(as_obj_i64(&o, "k12345", &v), 0);
    CHECK_EQ_I64(v, 12345);
    /* repeats: the earliest in the text is named ("k19", before "k7" and "k19" again) */
    n--;
    const size_t at19 = n + 1;
    n += (size_t)sprintf(s + n, ",\"k19\":0,\"k7\":0,\"k19\":1}");
    CHECK_EQ_I64(jp(&z, s, n, &o, err, sizeof err), -1);
    char want[96];
    snprintf(want, sizeof want, "line 1, column %zu: duplicate key \"k19\"", at19 + 1);
    if (!strstr(err, want)) CHECK_STR(err, want);
    free(s);

    /* a 1 MB string with an escape every 100 bytes */
    n = 0;
    s = malloc((1 << 20) + 64);
    s[n++] = '"';
    size_t want_len = 0;
    while (n < (1 << 20)) {
        memset(s + n, 'x', 94);
        n += 94;
        memcpy(s + n, "\\u00e9", 6);
        n += 6;
        want_len += 96;
    }
    s[n++] = '"';
    CHECK_EQ_I64(jp(&z, s, n, &o, err, sizeof err), 0);
    CHECK(o.type == MSGPACK_OBJECT_STR && o.via.str.size == want_len);
    free(s);
    msgpack_zone_destroy(&z);
}

/* parse, print with as_json_print, compare with the expected (compact) text */
TEST(jsonp_roundtrip_printer)
{
    static const struct { const char *in, *out; } docs[] = {
        { "{\"name\":\"x\",\"n\":[1,-2,3.5,true,false,null],\"o\":{\"e\":{},\"a\":[]},\"s\":\"a\\\"b\\\\c\\nd\\t\\u0001\\u007f\xc3\xa9\xf0\x9f\x98\x80\"}", NULL },
        { "[9223372036854775807,-9223372036854775808,1e+300,-0.5,0.1,2.5e-07,[[[]]]]", NULL },
        { "\"\\u0000x\"", NULL },
        { "{\"dtype\":\"int32\",\"shape\":[2],\"data\":[1,2]}", NULL },
        { " { \"a\" : [ 1 , 2.0 , 1E2 , \"\\/\\u00e9\\uD83D\\uDE00\" ] ,\n\t\"b\" : { } } ",
          "{\"a\":[1,2.0,100.0,\"/\xc3\xa9\xf0\x9f\x98\x80\"],\"b\":{}}" },
        { "-0", "0" },
    };
    msgpack_zone z;
    msgpack_zone_init(&z, 4096);
    for (size_t k = 0; k < sizeof docs / sizeof *docs; k++) {
        msgpack_object o;
        char err[256] = "";
        if (!CHECK_EQ_I64(jps(&z, docs[k].in, &o, err), 0)) { fprintf(stderr, "  %s\n", err); continue; }
        char *t = print(&o);
        CHECK_STR(t, docs[k].out ? docs[k].out : docs[k].in);
        /* and the printed text parses to the same printed text */
        msgpack_object o2;
        CHECK_EQ_I64(jps(&z, t, &o2, err), 0);
        char *t2 = print(&o2);
        CHECK_STR(t2, t);
        free(t);
        free(t2);
    }
    msgpack_zone_destroy(&z);
}
