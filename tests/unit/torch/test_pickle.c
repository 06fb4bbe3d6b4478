/* test_pickle.c - unit tests for lib/torch/pickle.c on hand-written pickle byte strings: numbers
 * (binary and text forms, big integers, floats), strings and bytes, tuples, lists, dicts and
 * sets, the memo (PUT/GET in their binary, long and text forms, MEMOIZE), the load position
 * of several pickles in one buffer and a file's byte range; and input it must refuse
 * (truncated strings, a missing STOP, stack underflow, an unknown opcode, globals without a
 * hook, an unset memo entry, a protocol above 5).
 */
#include "unit.h"
#include "pickle.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a pickle written as a C string literal (its NUL not counted) */
#define PK(s) (s), (sizeof(s) - 1)

static as_pickle_obj *load(as_pickle *p, const char *b, size_t n)
{
    return as_pickle_load(p, b, n, -1, 0, 0, NULL);
}

/* the load is refused with an error naming `what` */
static void refused(const char *b, size_t n, const char *what)
{
    as_pickle *p = as_pickle_new(NULL);
    CHECK(load(p, b, n) == NULL);
    CHECK(!strncmp(as_pickle_error(p), "pickle: ", 8));
    if (!strstr(as_pickle_error(p), what)) fprintf(stderr, "  error: %s (wanted '%s')\n", as_pickle_error(p), what);
    CHECK(strstr(as_pickle_error(p), what) != NULL);
    as_pickle_free(p);
}

TEST(pickle_ints)
{
    as_pickle *p = as_pickle_new(NULL);
    as_pickle_obj *o = load(p, PK("\x80\x02K\x05."));          /* BININT1 */
    CHECK(o && o->kind == AS_PK_INT && o->u.i == 5);
    o = load(p, PK("\x80\x02M\x34\x12."));                       /* BININT2 */
    CHECK(o && o->kind == AS_PK_INT && o->u.i == 0x1234);
    o = load(p, PK("\x80\x02J\xfe\xff\xff\xff."));               /* BININT: -2 */
    CHECK(o && o->kind == AS_PK_INT && o->u.i == -2);
    o = load(p, PK("\x80\x02\x8a\x01\xff."));                    /* LONG1: -1 */
    CHECK(o && o->kind == AS_PK_INT && o->u.i == -1);
    o = load(p, PK("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."));   /* 2^64 */
    CHECK(o && o->kind == AS_PK_BIGINT && o->u.big == (__int128)1 << 64);
    o = load(p, PK("I123\n."));                                   /* protocol 0 */
    CHECK(o && o->kind == AS_PK_INT && o->u.i == 123);
    o = load(p, PK("L-77L\n."));
    CHECK(o && o->kind == AS_PK_INT && o->u.i == -77);
    o = load(p, PK("I01\n."));                                    /* protocol 0's True */
    CHECK(o && o->kind == AS_PK_BOOL && o->u.i == 1);
    o = load(p, PK("\x80\x02\x88."));
    CHECK(o && o->kind == AS_PK_BOOL && o->u.i == 1);
    o = load(p, PK("\x80\x02N."));
    CHECK(o && o->kind == AS_PK_NONE);
    as_pickle_free(p);
}

TEST(pickle_floats)
{
    as_pickle *p = as_pickle_new(NULL);
    as_pickle_obj *o = load(p, PK("\x80\x02G\x3f\xf8\x00\x00\x00\x00\x00\x00."));   /* 1.5, big-endian */
    CHECK(o && o->kind == AS_PK_FLOAT && o->u.f == 1.5);
    o = load(p, PK("F-0.25\n."));
    CHECK(o && o->kind == AS_PK_FLOAT && o->u.f == -0.25);
    as_pickle_free(p);
}

TEST(pickle_strings)
{
    as_pickle *p = as_pickle_new(NULL);
    as_pickle_obj *o = load(p, PK("\x80\x04\x8c\x03" "abc."));             /* SHORT_BINUNICODE */
    CHECK(o && as_pickle_is_str(o, "abc") && o->u.s.len == 3);
    o = load(p, PK("\x80\x02X\x02\x00\x00\x00hi."));                         /* BINUNICODE */
    CHECK(o && as_pickle_is_str(o, "hi"));
    CHECK(!as_pickle_is_str(o, "h"));
    o = load(p, PK("\x80\x03" "C\x03\x00\x01\x02."));                        /* SHORT_BINBYTES */
    CHECK(o && o->kind == AS_PK_BYTES && o->u.s.len == 3 && o->u.s.p[2] == 2 && o->u.s.p[3] == 0);
    o = load(p, PK("\x80\x02\x8c\x00."));                                    /* empty */
    CHECK(o && as_pickle_is_str(o, ""));
    as_pickle_free(p);
}

TEST(pickle_containers)
{
    as_pickle *p = as_pickle_new(NULL);
    /* (1, 'x', (2,)) */
    as_pickle_obj *o = load(p, PK("\x80\x02(K\x01\x8c\x01xK\x02\x85t."));
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 3);
    if (o && o->kind == AS_PK_TUPLE && o->u.c.n == 3) {
        CHECK(o->u.c.v[0]->kind == AS_PK_INT && o->u.c.v[0]->u.i == 1);
        CHECK(as_pickle_is_str(o->u.c.v[1], "x"));
        CHECK(o->u.c.v[2]->kind == AS_PK_TUPLE && o->u.c.v[2]->u.c.n == 1 && o->u.c.v[2]->u.c.v[0]->u.i == 2);
    }
    o = load(p, PK("\x80\x02)."));
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 0);
    o = load(p, PK("\x80\x02K\x01K\x02K\x03\x87."));                         /* TUPLE3 */
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 3 && o->u.c.v[2]->u.i == 3);
    /* [7, 8, 9]: APPEND, then APPENDS */
    o = load(p, PK("\x80\x02]K\x07" "a(K\x08K\x09" "e."));
    CHECK(o && o->kind == AS_PK_LIST && o->u.c.n == 3 && o->u.c.v[0]->u.i == 7 && o->u.c.v[2]->u.i == 9);
    /* {'a': 1, 'b': 2}: SETITEM, then SETITEMS; keys and values alternate */
    o = load(p, PK("\x80\x02}\x8c\x01" "aK\x01s(\x8c\x01" "bK\x02u."));
    CHECK(o && o->kind == AS_PK_DICT && o->u.c.n == 4);
    if (o && o->kind == AS_PK_DICT && o->u.c.n == 4) {
        CHECK(as_pickle_is_str(o->u.c.v[0], "a") && o->u.c.v[1]->u.i == 1);
        CHECK(as_pickle_is_str(o->u.c.v[2], "b") && o->u.c.v[3]->u.i == 2);
    }
    o = load(p, PK("\x80\x04\x8f(K\x01K\x02\x90."));                         /* EMPTY_SET, ADDITEMS */
    CHECK(o && o->kind == AS_PK_SET && o->u.c.n == 2);
    /* POP and POP_MARK leave what was below */
    o = load(p, PK("\x80\x02K\x01K\x02\x30(K\x03K\x04\x31."));
    CHECK(o && o->kind == AS_PK_INT && o->u.i == 1);
    as_pickle_free(p);
}

TEST(pickle_memo)
{
    as_pickle *p = as_pickle_new(NULL);
    /* BINPUT 0, BINGET 0: the same object twice */
    as_pickle_obj *o = load(p, PK("\x80\x02\x8c\x01sq\x00h\x00\x86."));
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 2 && o->u.c.v[0] == o->u.c.v[1] && as_pickle_is_str(o->u.c.v[0], "s"));
    /* MEMOIZE (index 0), LONG_BINPUT 5, LONG_BINGET 5 and BINGET 0 */
    o = load(p, PK("\x80\x04K\x09\x94K\x0ar\x05\x00\x00\x00j\x05\x00\x00\x00h\x00\x87."));
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 3);
    if (o && o->kind == AS_PK_TUPLE && o->u.c.n == 3)
        CHECK(o->u.c.v[0]->u.i == 10 && o->u.c.v[1]->u.i == 10 && o->u.c.v[2]->u.i == 9);
    /* protocol 0: PUT and GET with decimal indices; DUP */
    o = load(p, PK("(I4\np12\ng12\n2t."));
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 3 && o->u.c.v[2]->u.i == 4);
    /* the memo starts empty with every load */
    CHECK(load(p, PK("\x80\x02h\x00.")) == NULL);
    CHECK(strstr(as_pickle_error(p), "memo entry 0 is not set") != NULL);
    as_pickle_free(p);
}

TEST(pickle_next_position_and_file_range)
{
    /* two pickles in one buffer: *next is where the second starts */
    static const char two[] = "\x80\x02K\x01.\x80\x02K\x02.";
    as_pickle *p = as_pickle_new(NULL);
    uint64_t next = 0;
    as_pickle_obj *o = as_pickle_load(p, two, sizeof two - 1, -1, 0, 0, &next);
    CHECK(o && o->u.i == 1);
    CHECK_EQ_I64(next, 5);
    o = as_pickle_load(p, two + next, sizeof two - 1 - next, -1, 0, 0, NULL);
    CHECK(o && o->u.i == 2);
    /* the same from a byte range of a file */
    char path[4096];
    snprintf(path, sizeof path, "%s/pk-two.pkl", ut_tmpdir());
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(two, 1, sizeof two - 1, f) == sizeof two - 1);
    if (f) fclose(f);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    o = as_pickle_load(p, NULL, 0, fd, 5, sizeof two - 1, &next);
    CHECK(o && o->kind == AS_PK_INT && o->u.i == 2);
    CHECK_EQ_I64(next, sizeof two - 1);
    /* a range that ends before the STOP */
    CHECK(as_pickle_load(p, NULL, 0, fd, 0, 4, NULL) == NULL);
    close(fd);
    as_pickle_free(p);
}

TEST(pickle_refuses_bad_input)
{
    refused(PK("\x80\x02X\x10\x00\x00\x00" "ab."), "runs past the end");   /* a string longer than the input */
    refused(PK("\x80\x02K\x05"), "");                                       /* no STOP */
    refused(PK("\x80\x02J\x01\x00"), "truncated");                          /* BININT cut short */
    refused(PK("\x80\x02\x30."), "stack underflow");                        /* POP of nothing */
    refused(PK("\x80\x02."), "stack underflow");                            /* STOP with nothing */
    refused(PK("\x80\x02t."), "no mark");                                   /* TUPLE without MARK */
    refused(PK("\x80\x06K\x01."), "unsupported protocol 6");
    refused(PK("\x80\x02\xff."), "unknown opcode 0xff");
    refused(PK("\x80\x02" "cos\nsystem\n."), "global 'os system' is not allowed");
    refused(PK("\x80\x02" "I12x\n."), "malformed integer");
    refused(PK("\x80\x02" "I12"), "line without newline");
    refused(PK("\x80\x02K\x01K\x02" "a."), "APPEND to a int");
    refused(PK("\x80\x02(K\x01" "d."), "odd number of items");
    refused(PK("\x80\x05\x97."), "out-of-band buffers");
    /* every truncation of a good pickle is refused */
    static const char good[] = "\x80\x02(K\x01\x8c\x03" "abcq\x00h\x00]K\x07" "a}\x8c\x01kK\x02st.";
    for (size_t n = 0; n + 1 < sizeof good; n++) {
        as_pickle *p = as_pickle_new(NULL);
        CHECK(load(p, good, n) == NULL);
        as_pickle_free(p);
    }
    as_pickle *p = as_pickle_new(NULL);
    as_pickle_obj *o = load(p, good, sizeof good - 1);
    CHECK(o && o->kind == AS_PK_TUPLE && o->u.c.n == 5);
    as_pickle_free(p);
}
