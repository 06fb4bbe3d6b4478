/* test_stream.c - the record stream: round trips, concatenation, and every way input can
 * be bad (not zstd, empty, truncated at every byte, malformed, over the cap, wrong version,
 * array lengths that disagree with dtype x shape). */
#include "unit.h"
#include "stream.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static char *tpath(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ & 7];
    snprintf(b, 512, "%s/%s", ut_tmpdir(), name);
    return b;
}

static void write_sample(const char *path, int nrec, int with_header)
{
    as_writer *w = as_writer_open(path, 3, 0);
    if (with_header) as_writer_header(w, "test", 0, NULL);
    for (int i = 0; i < nrec; i++) {
        msgpack_packer *pk = as_writer_pk(w);
        msgpack_pack_map(pk, 4);
        as_pack_kv_str(pk, "kind", i % 2 ? "odd" : "even");
        as_pack_kv_i64(pk, "i", i);
        as_pack_kv_f64(pk, "x", i * 0.5);
        int32_t v[100];
        for (int k = 0; k < 100; k++) v[k] = i * 1000 + k;
        int64_t shape[2] = { 10, 10 };
        as_pack_kv_array(pk, "v", AS_DT_I32, v, 2, shape);
        as_writer_end_record(w);
    }
    as_writer_close(w);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)sz + 1);
    *n = fread(p, 1, (size_t)sz, f);
    fclose(f);
    return p;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* read everything; returns records read, or -1 on error (msg copied) */
static int read_all(const char *path, char *msg, size_t len)
{
    as_reader *r = as_reader_open(path);
    if (!r) return -2;
    as_record rec;
    int n = 0, rc;
    while ((rc = as_reader_next(r, &rec)) == 1) n++;
    if (rc < 0) { snprintf(msg, len, "%s", as_reader_error(r)); n = -1; }
    as_reader_close(r);
    return n;
}

TEST(stream_round_trip)
{
    const char *p = tpath("rt.ast");
    write_sample(p, 50, 1);
    as_reader *r = as_reader_open(p);
    CHECK(r != NULL);
    as_record rec;
    CHECK_EQ_I64(as_reader_next(r, &rec), 1);
    CHECK(as_rec_is(&rec, "header"));
    char tool[32];
    CHECK(as_obj_str(&rec.obj, "tool", tool, sizeof tool) == 0);
    CHECK_STR(tool, "test");
    for (int i = 0; i < 50; i++) {
        CHECK_EQ_I64(as_reader_next(r, &rec), 1);
        CHECK(as_rec_is(&rec, i % 2 ? "odd" : "even"));
        CHECK_EQ_I64(rec.index, i + 2);
        int64_t v;
        double x;
        CHECK(as_obj_i64(&rec.obj, "i", &v) == 0);
        CHECK_EQ_I64(v, i);
        CHECK(as_obj_f64(&rec.obj, "x", &x) == 0);
        CHECK_NEAR(x, i * 0.5, 0);
        as_array a;
        char err[256];
        CHECK(as_obj_array(&rec.obj, "v", &a, err, sizeof err) == 0);
        CHECK_EQ_I64(a.dtype, AS_DT_I32);
        CHECK_EQ_I64(a.ndim, 2);
        CHECK_EQ_I64(a.n, 100);
        int64_t vals[100];
        as_array_get_i64(&a, 0, 100, vals);
        CHECK_EQ_I64(vals[0], i * 1000);
        CHECK_EQ_I64(vals[99], i * 1000 + 99);
    }
    CHECK_EQ_I64(as_reader_next(r, &rec), 0);
    as_reader_close(r);
}

TEST(stream_pass_through_raw_is_identical)
{
    const char *p = tpath("pt-in.ast"), *q = tpath("pt-out.ast");
    write_sample(p, 20, 1);
    as_reader *r = as_reader_open(p);
    as_writer *w = as_writer_open(q, 3, 0);
    as_record rec;
    while (as_reader_next(r, &rec) == 1) as_writer_raw(w, rec.raw, rec.rawlen);
    as_reader_close(r);
    as_writer_close(w);
    /* decompressed contents identical */
    size_t n1, n2;
    unsigned char *a = slurp(p, &n1), *b = slurp(q, &n2);
    unsigned long long d1 = ZSTD_getFrameContentSize(a, n1), d2 = ZSTD_getFrameContentSize(b, n2);
    (void)d1; (void)d2;
    char *u1 = malloc(1 << 20), *u2 = malloc(1 << 20);
    size_t m1 = ZSTD_decompress(u1, 1 << 20, a, n1), m2 = ZSTD_decompress(u2, 1 << 20, b, n2);
    CHECK(!ZSTD_isError(m1) && !ZSTD_isError(m2));
    CHECK_EQ_I64(m1, m2);
    CHECK(m1 == m2 && memcmp(u1, u2, m1) == 0);
    free(a); free(b); free(u1); free(u2);
}

TEST(stream_concatenated_inputs)
{
    const char *p = tpath("c1.ast"), *q = tpath("c2.ast"), *pq = tpath("c12.ast");
    write_sample(p, 3, 1);
    write_sample(q, 4, 1);
    size_t n1, n2;
    unsigned char *a = slurp(p, &n1), *b = slurp(q, &n2);
    unsigned char *c = malloc(n1 + n2);
    memcpy(c, a, n1);
    memcpy(c + n1, b, n2);
    spit(pq, c, n1 + n2);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(pq, msg, sizeof msg), 3 + 1 + 4 + 1);
    free(a); free(b); free(c);
}

TEST(stream_truncated_at_every_byte)
{
    const char *p = tpath("tr.ast"), *q = tpath("tr-cut.ast");
    write_sample(p, 6, 1);
    size_t n;
    unsigned char *a = slurp(p, &n);
    int bad = 0;
    for (size_t cut = 0; cut < n; cut++) {
        spit(q, a, cut);
        char msg[512] = "";
        int rc = read_all(q, msg, sizeof msg);
        if (rc != -1) { bad++; fprintf(stderr, "  cut at %zu of %zu: rc %d\n", cut, n, rc); }
        else if (cut == 0) CHECK(strstr(msg, "empty input") != NULL);
    }
    CHECK_EQ_I64(bad, 0);
    free(a);
}

TEST(stream_not_zstd)
{
    const char *q = tpath("nz.ast");
    spit(q, "{\"kind\":\"table\"}\n", 17);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "not an autoshard stream") != NULL);
}

TEST(stream_corrupt_bytes_never_crash)
{
    const char *p = tpath("fz.ast"), *q = tpath("fz-mut.ast");
    write_sample(p, 8, 1);
    size_t n;
    unsigned char *a = slurp(p, &n);
    unsigned char *m = malloc(n);
    as_rng r;
    as_rng_seed(&r, 7, 1);
    int ok = 0, err = 0;
    for (int it = 0; it < 1500; it++) {
        memcpy(m, a, n);
        int flips = 1 + (int)as_rng_below(&r, 4);
        for (int k = 0; k < flips; k++) m[as_rng_below(&r, n)] ^= (unsigned char)(1 + as_rng_below(&r, 255));
        spit(q, m, n);
        char msg[512];
        int rc = read_all(q, msg, sizeof msg);
        if (rc < 0) err++; else ok++;
    }
    /* zstd checksums catch nearly all corruption */
    CHECK(err > 1400);
    free(a);
    free(m);
}

/* compress raw msgpack bytes into a one-frame file */
static void write_raw_stream(const char *path, const void *mp, size_t n)
{
    size_t cap = ZSTD_compressBound(n);
    void *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, mp, n, 3);
    spit(path, z, zn);
    free(z);
}

static size_t pack_header(msgpack_sbuffer *sb, int version)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    as_pack_kv_str(&pk, "kind", "header");
    as_pack_kv_str(&pk, "schema", "autoshard");
    as_pack_kv_i64(&pk, "version", version);
    as_pack_kv_str(&pk, "tool", "t");
    return sb->size;
}

TEST(stream_unknown_version)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_header(&sb, 99);
    const char *q = tpath("ver.ast");
    write_raw_stream(q, sb.data, sb.size);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "unsupported stream version 99") != NULL);
    CHECK(strstr(msg, "record 1") != NULL);
    msgpack_sbuffer_destroy(&sb);
}

TEST(stream_missing_header_and_kind)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    as_pack_kv_str(&pk, "kind", "table");
    const char *q = tpath("nohdr.ast");
    write_raw_stream(q, sb.data, sb.size);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "does not start with a header") != NULL);

    msgpack_sbuffer_clear(&sb);
    pack_header(&sb, 1);
    msgpack_pack_map(&pk, 1);
    as_pack_kv_i64(&pk, "x", 1);
    write_raw_stream(q, sb.data, sb.size);
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "record 2") != NULL && strstr(msg, "kind") != NULL);

    msgpack_sbuffer_clear(&sb);
    pack_header(&sb, 1);
    msgpack_pack_int(&pk, 5);
    write_raw_stream(q, sb.data, sb.size);
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "not a map") != NULL);
    msgpack_sbuffer_destroy(&sb);
}

TEST(stream_malformed_msgpack)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_header(&sb, 1);
    const char *q = tpath("mal.ast");
    /* reserved byte */
    msgpack_sbuffer_write(&sb, "\x81\xc1", 2);
    write_raw_stream(q, sb.data, sb.size);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "record 2") != NULL);
    /* a claimed 4 GB array with no elements: truncated, not a huge allocation */
    msgpack_sbuffer_clear(&sb);
    pack_header(&sb, 1);
    msgpack_sbuffer_write(&sb, "\x81\xa1k\xdd\xff\xff\xff\xff", 8);
    write_raw_stream(q, sb.data, sb.size);
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    /* deep nesting */
    msgpack_sbuffer_clear(&sb);
    pack_header(&sb, 1);
    for (int i = 0; i < 100; i++) msgpack_sbuffer_write(&sb, "\x91", 1);
    msgpack_sbuffer_write(&sb, "\x01", 1);
    write_raw_stream(q, sb.data, sb.size);
    CHECK_EQ_I64(read_all(q, msg, sizeof msg), -1);
    CHECK(strstr(msg, "nesting") != NULL);
    msgpack_sbuffer_destroy(&sb);
}

TEST(stream_record_over_cap)
{
    const char *p = tpath("cap.ast");
    write_sample(p, 3, 1);
    setenv("AS_MAX_RECORD", "200", 1);
    char msg[512] = "";
    CHECK_EQ_I64(read_all(p, msg, sizeof msg), -1);
    CHECK(strstr(msg, "cap") != NULL);
    CHECK(strstr(msg, "record 2") != NULL);
    unsetenv("AS_MAX_RECORD");
    CHECK_EQ_I64(read_all(p, msg, sizeof msg), 4);
}

TEST(stream_array_length_disagrees)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    as_pack_kv_str(&pk, "kind", "x");
    as_pack_str(&pk, "a");
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "dtype", "int32");
    as_pack_str(&pk, "shape");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 5);
    as_pack_str(&pk, "data");
    msgpack_pack_bin(&pk, 16);
    msgpack_pack_bin_body(&pk, "0123456789abcdef", 16);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    as_array a;
    char err[256] = "";
    CHECK_EQ_I64(as_obj_array(&up.data, "a", &a, err, sizeof err), -1);
    CHECK(strstr(err, "16 data bytes") != NULL);
    CHECK_EQ_I64(as_obj_array(&up.data, "nope", &a, err, sizeof err), -1);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(stream_large_record_streams_through)
{
    /* a 24 MB array: bigger than every internal buffer step */
    const char *p = tpath("big.ast");
    int64_t n = 6 << 20;
    int32_t *v = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(i * 2654435761u);
    as_writer *w = as_writer_open(p, 1, 0);
    as_writer_header(w, "t", 0, NULL);
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2);
    as_pack_kv_str(pk, "kind", "big");
    as_pack_kv_array(pk, "v", AS_DT_I32, v, 1, &n);
    as_writer_end_record(w);
    as_writer_close(w);
    as_reader *r = as_reader_open(p);
    as_record rec;
    CHECK_EQ_I64(as_reader_next(r, &rec), 1);
    CHECK_EQ_I64(as_reader_next(r, &rec), 1);
    as_array a;
    char err[256];
    CHECK(as_obj_array(&rec.obj, "v", &a, err, sizeof err) == 0);
    CHECK_EQ_I64(a.n, n);
    CHECK(memcmp(a.data, v, (size_t)n * 4) == 0);
    CHECK_EQ_I64(as_reader_next(r, &rec), 0);
    as_reader_close(r);
    free(v);
}

TEST(common_parsers)
{
    int64_t v;
    CHECK(as_parse_i64("42", 0, 100, &v) == 0 && v == 42);
    CHECK(as_parse_i64("42x", 0, 100, &v) == -1);
    CHECK(as_parse_i64("", 0, 100, &v) == -1);
    CHECK(as_parse_i64("101", 0, 100, &v) == -1);
    CHECK(as_parse_i64("99999999999999999999", 0, INT64_MAX, &v) == -1);
    uint64_t s;
    CHECK(as_parse_size("2G", &s) == 0 && s == 2ull << 30);
    CHECK(as_parse_size("1.5MiB", &s) == 0 && s == 3ull << 19);
    CHECK(as_parse_size("12", &s) == 0 && s == 12);
    CHECK(as_parse_size("12Q", &s) == -1);
    /* white space anywhere is not part of a number: strtoll and strtod would skip it in front */
    CHECK(as_parse_i64(" 5", 0, 100, &v) == -1);
    CHECK(as_parse_i64("\t5", 0, 100, &v) == -1);
    CHECK(as_parse_i64("\n5", 0, 100, &v) == -1);
    CHECK(as_parse_i64("5 ", 0, 100, &v) == -1);
    double d;
    CHECK(as_parse_f64(" 0.5", 0, 1, &d) == -1);
    CHECK(as_parse_f64("0.5", 0, 1, &d) == 0 && d == 0.5);
    CHECK(as_parse_size(" 2G", &s) == -1);
    int64_t *l;
    size_t n;
    CHECK(as_parse_i64_list("3,17,42", 0, 100, &l, &n) == 0 && n == 3 && l[2] == 42);
    free(l);
    CHECK(as_parse_i64_list("0-4,9", 0, 100, &l, &n) == 0 && n == 6 && l[4] == 4 && l[5] == 9);
    free(l);
    CHECK(as_parse_i64_list("1,,2", 0, 100, &l, &n) == -1);
    CHECK(as_parse_i64_list("1,", 0, 100, &l, &n) == -1);
    CHECK(as_parse_i64_list("5-3", 0, 100, &l, &n) == -1);
    CHECK(as_parse_i64_list("-1", 0, 100, &l, &n) == -1);
    CHECK(as_parse_i64_list("1, 2", 0, 100, &l, &n) == -1);
    CHECK(as_parse_i64_list(" 1-2", 0, 100, &l, &n) == -1);
}

TEST(common_rng_deterministic_and_unbiased)
{
    as_rng a, b;
    as_rng_seed(&a, 1, 2);
    as_rng_seed(&b, 1, 2);
    for (int i = 0; i < 100; i++) CHECK(as_rng_next(&a) == as_rng_next(&b));
    as_rng_seed(&b, 1, 3);
    CHECK(as_rng_next(&a) != as_rng_next(&b));
    int hist[3] = { 0, 0, 0 };
    for (int i = 0; i < 30000; i++) hist[as_rng_below(&a, 3)]++;
    for (int k = 0; k < 3; k++) CHECK(hist[k] > 9500 && hist[k] < 10500);
}

/* ---- as_read_records: the record loop of the tools ------------------------------------- */

typedef struct { int seen, stop_at; int64_t sum; } rr_ctx;

static int rr_count(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    rr_ctx *c = ctx;
    int64_t i = 0;
    c->seen++;
    if (as_obj_i64(&rec->obj, "i", &i) == 0) c->sum += i;
    if (c->seen == c->stop_at) { snprintf(err, errlen, "%s: record %d: stop", as_reader_name(r), (int)rec->index); return -1; }
    return 0;
}

TEST(stream_read_records)
{
    char *a = tpath("rr_a.ast"), *b = tpath("rr_b.ast"), err[1024], want[1200];
    write_sample(a, 3, 1);      /* header + i = 0, 1, 2 */
    write_sample(b, 2, 1);      /* header + i = 0, 1 */
    char *files[3] = { a, b, a };
    rr_ctx c = { 0, 0, 0 };
    CHECK(as_read_records(files, 3, rr_count, &c, err, sizeof err) == 0);
    CHECK_EQ_I64(c.seen, 4 + 3 + 4);            /* every record, the headers too, file by file */
    CHECK_EQ_I64(c.sum, 3 + 1 + 3);
    /* fn's -1 stops the loop with its message */
    rr_ctx s = { 0, 6, 0 };
    CHECK(as_read_records(files, 3, rr_count, &s, err, sizeof err) == -1);
    CHECK_EQ_I64(s.seen, 6);
    snprintf(want, sizeof want, "%s: record 2: stop", b);
    CHECK_STR(err, want);
    /* a file that cannot be opened: its name and why; the files before it were read */
    char *m = tpath("rr_missing.ast");
    char *f2[2] = { a, m };
    rr_ctx d = { 0, 0, 0 };
    CHECK(as_read_records(f2, 2, rr_count, &d, err, sizeof err) == -1);
    CHECK_EQ_I64(d.seen, 4);
    snprintf(want, sizeof want, "%s: No such file or directory", m);
    CHECK_STR(err, want);
    /* a bad stream: the reader's message */
    char *bad = tpath("rr_bad.ast");
    spit(bad, "not zstd at all", 15);
    char *f3[1] = { bad };
    CHECK(as_read_records(f3, 1, rr_count, &d, err, sizeof err) == -1);
    CHECK(strstr(err, bad) == err);
}
