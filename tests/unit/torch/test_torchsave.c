/* test_torchsave.c - unit tests for lib/torch/torchsave.c and lib/torch/pickle.c: the 100 real
 * torch.save fixtures (plain and gzip), hand-built zip / ZIP64 / legacy files (strides,
 * shared storages, views, special floats, nested containers), and hostile input (every
 * truncation, random byte flips, disallowed globals, huge lengths, bad directories); the
 * limits on what one input may make (tensors, gzip expansion, spooled bytes) and
 * as-convert's refusal of expanded and repeated data tensors (lib/data/convert.c).
 */
#include "unit.h"
#include "common.h"
#include "torchsave.h"
#include "pickle.h"
#include "convert.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---------------------------------------------------------------- helpers */

typedef struct { uint8_t *p; size_t n, cap; } bb;

static void bput(bb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void bbyte(bb *b, int c) { uint8_t x = (uint8_t)c; bput(b, &x, 1); }
static void bu16(bb *b, uint32_t v) { bbyte(b, v & 255); bbyte(b, v >> 8 & 255); }
static void bu32(bb *b, uint32_t v) { bu16(b, v & 0xffff); bu16(b, v >> 16); }
static void bu64(bb *b, uint64_t v) { bu32(b, (uint32_t)v); bu32(b, (uint32_t)(v >> 32)); }
static void bfree(bb *b) { free(b->p); memset(b, 0, sizeof *b); }

/* pickle pieces */
static void pstr(bb *b, const char *s) { bbyte(b, 'X'); bu32(b, (uint32_t)strlen(s)); bput(b, s, strlen(s)); }
static void pint(bb *b, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) { bbyte(b, 'J'); bu32(b, (uint32_t)v); }
    else { bbyte(b, 0x8a); bbyte(b, 8); bu64(b, (uint64_t)v); }
}
static void pglobal(bb *b, const char *m, const char *n)
{
    bbyte(b, 'c'); bput(b, m, strlen(m)); bbyte(b, '\n'); bput(b, n, strlen(n)); bbyte(b, '\n');
}
static void pints(bb *b, int n, const int64_t *v)
{
    bbyte(b, '(');
    for (int i = 0; i < n; i++) pint(b, v[i]);
    bbyte(b, 't');
}
static void pproto(bb *b) { bbyte(b, 0x80); bbyte(b, 2); }

/* a tensor rebuild; view: NULL, or {key, offset, size} for legacy view metadata;
 * legacy: add the 6th persistent-id field */
typedef struct { const char *key; int64_t off, size; } view_md;
static void ptensor_x(bb *b, const char *cls, const char *key, int64_t numel, int64_t off, int nd,
                      const int64_t *shape, const int64_t *stride, int legacy, const view_md *view,
                      const char *v3dtype)
{
    pglobal(b, "torch._utils", v3dtype ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2");
    bbyte(b, '(');
    bbyte(b, '(');
    pstr(b, "storage");
    pglobal(b, "torch", cls);
    pstr(b, key);
    pstr(b, "cpu");
    pint(b, numel);
    if (view) { bbyte(b, '('); pstr(b, view->key); pint(b, view->off); pint(b, view->size); bbyte(b, 't'); }
    else if (legacy) bbyte(b, 'N');
    bbyte(b, 't');
    bbyte(b, 'Q');
    pint(b, off);
    pints(b, nd, shape);
    pints(b, nd, stride);
    bbyte(b, 0x89);
    pglobal(b, "collections", "OrderedDict");
    bbyte(b, ')');
    bbyte(b, 'R');
    if (v3dtype) pglobal(b, "torch", v3dtype);
    bbyte(b, 't');
    bbyte(b, 'R');
}
static void ptensor(bb *b, const char *cls, const char *key, int64_t numel, int64_t off, int nd,
                    const int64_t *shape, const int64_t *stride)
{
    ptensor_x(b, cls, key, numel, off, nd, shape, stride, 0, NULL, NULL);
}

static const char *tpath(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", ut_tmpdir(), name);
    return buf[k];
}

static void write_file(const char *path, const void *d, size_t n)
{
    unlink(path);   /* rewriting by truncation makes ext4 flush (auto_da_alloc): slow */
    FILE *fp = fopen(path, "wb");
    if (!fp) abort();
    if (n && fwrite(d, 1, n, fp) != n) abort();
    fclose(fp);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *d = malloc(sz ? (size_t)sz : 1);
    if (fread(d, 1, (size_t)sz, fp) != (size_t)sz) abort();
    fclose(fp);
    *n = (size_t)sz;
    return d;
}

/* zip writer: stored entries (method overridable), FB padding in local headers only,
 * optional forced ZIP64 fields, optional hole of `gap` bytes before the last entry */
typedef struct { const char *name; const void *data; size_t len; int method; } zent;
enum { Z_FORCE64 = 1 };

static int write_zip(const char *path, const zent *e, int n, int flags, uint64_t gap)
{
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    uint64_t off = 0, lho[32];
    bb cd = {0};
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (i == n - 1) off += gap;
        bb h = {0};
        size_t nl = strlen(e[i].name);
        size_t pad = (64 - (off + 30 + nl + 4) % 64) % 64;
        bu32(&h, 0x04034b50); bu16(&h, 45); bu16(&h, 0x0808); bu16(&h, (uint32_t)e[i].method);
        bu32(&h, 0); bu32(&h, 0); bu32(&h, 0); bu32(&h, 0);
        bu16(&h, (uint32_t)nl); bu16(&h, (uint32_t)(pad + 4));
        bput(&h, e[i].name, nl);
        bu16(&h, 0x4246); bu16(&h, (uint32_t)pad);
        for (size_t k = 0; k < pad; k++) bbyte(&h, 'Z');
        bput(&h, e[i].data, e[i].len);
        if (pwrite(fd, h.p, h.n, (off_t)off) != (ssize_t)h.n) rc = -1;
        lho[i] = off;
        off += h.n;
        bfree(&h);
    }
    uint64_t cdoff = off;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        int big = (flags & Z_FORCE64) || lho[i] >= 0xffffffffu;
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
        bu32(&cd, 0x02014b50); bu16(&cd, 45); bu16(&cd, 45); bu16(&cd, 0x0808); bu16(&cd, (uint32_t)e[i].method);
        bu32(&cd, 0); bu32(&cd, crc);
        bu32(&cd, big ? 0xffffffffu : (uint32_t)e[i].len); bu32(&cd, big ? 0xffffffffu : (uint32_t)e[i].len);
        bu16(&cd, (uint32_t)nl); bu16(&cd, big ? 28 : 0); bu16(&cd, 0);
        bu16(&cd, 0); bu16(&cd, 0); bu32(&cd, 0);
        bu32(&cd, big ? 0xffffffffu : (uint32_t)lho[i]);
        bput(&cd, e[i].name, nl);
        if (big) { bu16(&cd, 1); bu16(&cd, 24); bu64(&cd, e[i].len); bu64(&cd, e[i].len); bu64(&cd, lho[i]); }
    }
    uint64_t cdsize = cd.n, z64 = cdoff + cd.n;
    int sat = (flags & Z_FORCE64) || cdoff >= 0xffffffffu;
    bu32(&cd, 0x06064b50); bu64(&cd, 44); bu16(&cd, 45); bu16(&cd, 45); bu32(&cd, 0); bu32(&cd, 0);
    bu64(&cd, (uint64_t)n); bu64(&cd, (uint64_t)n); bu64(&cd, cdsize); bu64(&cd, cdoff);
    bu32(&cd, 0x07064b50); bu32(&cd, 0); bu64(&cd, z64); bu32(&cd, 1);
    bu32(&cd, 0x06054b50); bu16(&cd, 0); bu16(&cd, 0);
    bu16(&cd, sat ? 0xffff : (uint32_t)n); bu16(&cd, sat ? 0xffff : (uint32_t)n);
    bu32(&cd, sat ? 0xffffffffu : (uint32_t)cdsize); bu32(&cd, sat ? 0xffffffffu : (uint32_t)cdoff);
    bu16(&cd, 0);
    if (pwrite(fd, cd.p, cd.n, (off_t)cdoff) != (ssize_t)cd.n) rc = -1;
    bfree(&cd);
    close(fd);
    return rc;
}

/* a torch-like zip with archive/data.pkl, storages archive/data/<key>, archive/version */
static int write_torch_zip(const char *path, const bb *pkl, int ns, const char **keys, const void **data,
                           const size_t *len, int flags, uint64_t gap)
{
    zent e[32];
    char names[32][64];
    int n = 0;
    e[n++] = (zent){"archive/data.pkl", pkl->p, pkl->n, 0};
    e[n++] = (zent){"archive/version", "3\n", 2, 0};
    for (int i = 0; i < ns; i++) {
        snprintf(names[i], sizeof names[i], "archive/data/%s", keys[i]);
        e[n++] = (zent){names[i], data[i], len[i], 0};
    }
    return write_zip(path, e, n, flags, gap);
}

/* legacy: magic, protocol, sys_info, the object pickle (with PROTO and STOP), keys, storages */
static void write_legacy(const char *path, const bb *obj, int ns, const char **keys, const void **data,
                         const int64_t *count, const size_t *len)
{
    static const uint8_t magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    bb b = {0};
    pproto(&b); bbyte(&b, 0x8a); bbyte(&b, 10); bput(&b, magic, 10); bbyte(&b, '.');
    pproto(&b); bbyte(&b, 'M'); bu16(&b, 1001); bbyte(&b, '.');
    pproto(&b); bbyte(&b, '}'); bbyte(&b, '('); pstr(&b, "protocol_version"); bbyte(&b, 'M'); bu16(&b, 1001);
    pstr(&b, "little_endian"); bbyte(&b, 0x88); bbyte(&b, 'u'); bbyte(&b, '.');
    bput(&b, obj->p, obj->n);
    pproto(&b); bbyte(&b, ']'); bbyte(&b, '(');
    for (int i = 0; i < ns; i++) pstr(&b, keys[i]);
    bbyte(&b, 'e'); bbyte(&b, '.');
    for (int i = 0; i < ns; i++) { bu64(&b, (uint64_t)count[i]); bput(&b, data[i], len[i]); }
    write_file(path, b.p, b.n);
    bfree(&b);
}

static void gzip_file(const char *src, const char *dst)
{
    size_t n;
    uint8_t *d = read_file(src, &n);
    unlink(dst);
    gzFile g = gzopen(dst, "wb");
    if (!d || !g) abort();
    gzwrite(g, d, (unsigned)n);
    gzclose(g);
    free(d);
}

static uint64_t rng_state = 12345;
static uint64_t rnd(void) { return as_splitmix64(&rng_state); }

/* open must fail with a message containing want (NULL: any message) */
static int open_fails(const char *path, const char *want)
{
    char err[256] = "";
    pt_file *f = pt_open(path, err, sizeof err);
    if (f) { pt_close(f); fprintf(stderr, "  expected failure opening %s\n", path); return 0; }
    if (!err[0]) return 0;
    if (want && !strstr(err, want)) { fprintf(stderr, "  error '%s' lacks '%s'\n", err, want); return 0; }
    return 1;
}

/* ---------------------------------------------------------------- the 100 real fixtures */

static const char *dtypes[] = {"int8", "int16", "int32", "int64", "uint8", "bool", "float16", "float32", "float64", "bfloat16"};
static const pt_dtype dtype_ids[] = {PT_INT8, PT_INT16, PT_INT32, PT_INT64, PT_UINT8, PT_BOOL, PT_FLOAT16, PT_FLOAT32, PT_FLOAT64, PT_BFLOAT16};

static void expected(int di, double v[4])
{
    static const double ints[4] = {1, -2, 3, -4}, u8[4] = {1, 10, 100, 255}, bools[4] = {1, 0, 1, 0};
    static const double f16[4] = {1.2001953125, -3.400390625, 5.6015625, -7.80078125};
    static const double bf16[4] = {1.203125, -3.40625, 5.59375, -7.8125};
    static const double f64[4] = {1.2, -3.4, 5.6, -7.8};
    for (int i = 0; i < 4; i++) {
        switch (dtype_ids[di]) {
        case PT_UINT8: v[i] = u8[i]; break;
        case PT_BOOL: v[i] = bools[i]; break;
        case PT_FLOAT16: v[i] = f16[i]; break;
        case PT_BFLOAT16: v[i] = bf16[i]; break;
        case PT_FLOAT32: v[i] = (float)f64[i]; break;
        case PT_FLOAT64: v[i] = f64[i]; break;
        default: v[i] = ints[i]; break;
        }
    }
}

static void check_fixture(const char *path, int di, const char *fmt)
{
    char err[256] = "";
    pt_file *f = pt_open(path, err, sizeof err);
    if (!CHECK(f)) { fprintf(stderr, "  %s: %s\n", path, err); return; }
    CHECK_STR(pt_format(f), fmt);
    CHECK_STR(pt_root_kind(f), "tensor");
    CHECK_EQ_I64(pt_ntensors(f), 1);
    CHECK_EQ_I64(pt_nstorages(f), 1);
    const pt_tensor *t = pt_get(f, 0);
    CHECK(t && !pt_get(f, 1) && !pt_get(f, -1));
    if (!t) { pt_close(f); return; }
    CHECK_STR(t->path, "");
    CHECK_EQ_I64(pt_find(f, ""), 0);
    CHECK_EQ_I64(t->dtype, dtype_ids[di]);
    CHECK_STR(pt_dtype_name(t->dtype), dtypes[di]);
    CHECK_EQ_I64(t->ndim, 1);
    CHECK_EQ_I64(t->shape[0], 4);
    CHECK_EQ_I64(t->stride[0], 1);
    CHECK_EQ_I64(t->storage_offset, 0);
    CHECK_EQ_I64(t->numel, 4);
    double want[4], got[4];
    int64_t gi[4];
    expected(di, want);
    CHECK(pt_read_f64(f, 0, 0, 4, got, err, sizeof err) == 0);
    CHECK(pt_read_i64(f, 0, 0, 4, gi, err, sizeof err) == 0);
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(got[i], want[i], 0);
        CHECK_EQ_I64(gi[i], (int64_t)want[i]);   /* truncation toward zero */
    }
    /* a partial read */
    CHECK(pt_read_f64(f, 0, 2, 2, got, err, sizeof err) == 0);
    CHECK_NEAR(got[0], want[2], 0);
    CHECK_NEAR(got[1], want[3], 0);
    uint8_t raw[32];
    CHECK(pt_read_raw(f, 0, 0, 4, raw, err, sizeof err) == 0);
    if (dtype_ids[di] == PT_INT32) CHECK_EQ_I64(raw[4] | raw[5] << 8, 0xfffe);
    pt_close(f);
}

TEST(torchsave_fixtures_all)
{
    char rel[128];
    int n = 0;
    for (int di = 0; di < 10; di++)
        for (int proto = 1; proto <= 5; proto++)
            for (int zip = 0; zip < 2; zip++) {
                snprintf(rel, sizeof rel, "pt/tensor_%s_proto%d%s.pt", dtypes[di], proto, zip ? "_zip" : "");
                check_fixture(ut_fixture(rel), di, zip ? "zip" : "legacy");
                n++;
            }
    CHECK_EQ_I64(n, 100);
}

TEST(torchsave_fixtures_gzip)
{
    char rel[128], name[128];
    for (int di = 0; di < 10; di++)
        for (int proto = 1; proto <= 5; proto++)
            for (int zip = 0; zip < 2; zip++) {
                snprintf(rel, sizeof rel, "pt/tensor_%s_proto%d%s.pt", dtypes[di], proto, zip ? "_zip" : "");
                snprintf(name, sizeof name, "g_%s_%d_%d.pt.gz", dtypes[di], proto, zip);
                gzip_file(ut_fixture(rel), tpath(name));
                check_fixture(tpath(name), di, zip ? "zip (gzip)" : "legacy (gzip)");
            }
}

TEST(torchsave_gzip_multimember_and_padding)
{
    size_t n;
    uint8_t *d = read_file(ut_fixture("pt/tensor_int32_proto2_zip.pt"), &n);
    CHECK(d);
    if (!d) return;
    const char *p = tpath("multi.pt.gz");
    gzFile g = gzopen(p, "wb");
    gzwrite(g, d, (unsigned)(n / 3));
    gzclose(g);
    g = gzopen(p, "ab");   /* appends a second member */
    gzwrite(g, d + n / 3, (unsigned)(n - n / 3));
    gzclose(g);
    check_fixture(p, 2, "zip (gzip)");
    /* trailing zero padding is accepted, trailing garbage is not */
    size_t gn;
    uint8_t *gz = read_file(p, &gn);
    uint8_t *pad = calloc(gn + 100, 1);
    memcpy(pad, gz, gn);
    write_file(tpath("pad.pt.gz"), pad, gn + 100);
    check_fixture(tpath("pad.pt.gz"), 2, "zip (gzip)");
    memcpy(pad + gn, "garbage", 7);
    write_file(tpath("garbage.pt.gz"), pad, gn + 7);
    CHECK(open_fails(tpath("garbage.pt.gz"), "gzip"));
    /* every truncation of the gzip file fails */
    for (size_t l = 0; l < gn; l++) {
        write_file(tpath("gztrunc.pt.gz"), gz, l);
        if (!CHECK(open_fails(tpath("gztrunc.pt.gz"), NULL))) { fprintf(stderr, "  gzip prefix %zu\n", l); break; }
    }
    write_file(tpath("gztrunc.pt.gz"), gz, gn - 5);
    CHECK(open_fails(tpath("gztrunc.pt.gz"), "gzip: truncated"));
    free(pad);
    free(gz);
    free(d);
}

static void check_stdin(const char *src, int gz)
{
    size_t n;
    uint8_t *d = read_file(src, &n);
    int pfd[2], saved = dup(0);
    if (!d || pipe(pfd)) { CHECK(0); return; }
    CHECK(n < 60000);
    CHECK(write(pfd[1], d, n) == (ssize_t)n);
    close(pfd[1]);
    dup2(pfd[0], 0);
    close(pfd[0]);
    char err[256] = "";
    pt_file *f = pt_open("-", err, sizeof err);
    if (saved >= 0) { dup2(saved, 0); close(saved); }
    else close(0);
    if (!CHECK(f)) { fprintf(stderr, "  %s\n", err); free(d); return; }
    CHECK_STR(pt_format(f), gz ? "zip (gzip)" : "zip");
    int64_t v[4];
    CHECK(pt_read_i64(f, 0, 0, 4, v, err, sizeof err) == 0);
    CHECK_EQ_I64(v[0], 1);
    CHECK_EQ_I64(v[3], -4);
    pt_close(f);
    free(d);
}

TEST(torchsave_stdin_pipe)
{
    check_stdin(ut_fixture("pt/tensor_int64_proto3_zip.pt"), 0);
    gzip_file(ut_fixture("pt/tensor_int64_proto3_zip.pt"), tpath("stdin.pt.gz"));
    check_stdin(tpath("stdin.pt.gz"), 1);
}

/* ---------------------------------------------------------------- hostile input */

TEST(torchsave_truncated_everywhere)
{
    const char *names[] = {"pt/tensor_int32_proto1.pt", "pt/tensor_int32_proto2_zip.pt",
                           "pt/tensor_float16_proto5_zip.pt", "pt/tensor_bool_proto4.pt",
                           "pt/tensor_float64_proto5.pt", "pt/tensor_int8_proto1_zip.pt"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        size_t n;
        uint8_t *d = read_file(ut_fixture(names[k]), &n);
        CHECK(d && n > 100);
        if (!d) continue;
        for (size_t l = 0; l < n; l++) {
            write_file(tpath("trunc.pt"), d, l);
            if (!CHECK(open_fails(tpath("trunc.pt"), NULL))) { fprintf(stderr, "  %s prefix %zu opened\n", names[k], l); break; }
        }
        free(d);
    }
}

TEST(torchsave_random_mutations)
{
    const char *names[] = {"pt/tensor_int32_proto1.pt", "pt/tensor_int64_proto2_zip.pt",
                           "pt/tensor_float16_proto5_zip.pt", "pt/tensor_bfloat16_proto3.pt",
                           "pt/tensor_uint8_proto4.pt", "pt/tensor_float32_proto1_zip.pt"};
    int opened = 0, total = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        size_t n;
        uint8_t *d = read_file(ut_fixture(names[k]), &n);
        if (!CHECK(d)) continue;
        uint8_t *m = malloc(n);
        for (int it = 0; it < 600; it++) {
            memcpy(m, d, n);
            int flips = 1 + (int)(rnd() % 4);
            for (int j = 0; j < flips; j++) {
                size_t at = rnd() % n;
                switch (rnd() % 3) {
                case 0: m[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
                case 1: m[at] = (uint8_t)rnd(); break;
                default: m[at] = (rnd() & 1) ? 0xff : 0x00; break;
                }
            }
            write_file(tpath("mut.pt"), m, n);
            char err[256] = "";
            pt_file *f = pt_open(tpath("mut.pt"), err, sizeof err);
            total++;
            if (!f) { CHECK(err[0]); continue; }
            opened++;
            for (int i = 0; i < pt_ntensors(f); i++) {
                const pt_tensor *t = pt_get(f, i);
                int64_t cnt = t->numel < 64 ? t->numel : 64, iv[64];
                double dv[64];
                pt_read_i64(f, i, 0, cnt, iv, err, sizeof err);
                pt_read_f64(f, i, t->numel - cnt, cnt, dv, err, sizeof err);
            }
            pt_close(f);
        }
        free(m);
        free(d);
    }
    CHECK_EQ_I64(total, 3600);
    CHECK(opened > 0);   /* some flips land in harmless bytes */
}

static void zip_with_pickle(const char *path, const bb *pkl)
{
    static const int32_t vals[4] = {1, 2, 3, 4};
    const char *keys[] = {"0"};
    const void *data[] = {vals};
    size_t len[] = {16};
    CHECK(write_torch_zip(path, pkl, 1, keys, data, len, 0, 0) == 0);
}

TEST(torchsave_disallowed_globals)
{
    bb b = {0};
    pproto(&b);
    pglobal(&b, "os", "system");
    bbyte(&b, '('); pstr(&b, "echo pwned"); bbyte(&b, 't'); bbyte(&b, 'R'); bbyte(&b, '.');
    zip_with_pickle(tpath("os.pt"), &b);
    CHECK(open_fails(tpath("os.pt"), "pickle: global 'os system' is not allowed"));
    bfree(&b);
    /* STACK_GLOBAL, protocol 4 */
    bbyte(&b, 0x80); bbyte(&b, 4);
    bbyte(&b, 0x8c); bbyte(&b, 5); bput(&b, "posix", 5);
    bbyte(&b, 0x8c); bbyte(&b, 6); bput(&b, "system", 6);
    bbyte(&b, 0x93); bbyte(&b, '.');
    zip_with_pickle(tpath("posix.pt"), &b);
    CHECK(open_fails(tpath("posix.pt"), "global 'posix system' is not allowed"));
    bfree(&b);
    /* an allowed class used as a function */
    pproto(&b);
    pglobal(&b, "torch", "FloatStorage");
    bbyte(&b, ')'); bbyte(&b, 'R'); bbyte(&b, '.');
    zip_with_pickle(tpath("call.pt"), &b);
    CHECK(open_fails(tpath("call.pt"), "not supported"));
    bfree(&b);
    /* builtins.eval via legacy */
    pproto(&b);
    pglobal(&b, "builtins", "eval");
    bbyte(&b, '.');
    write_legacy(tpath("eval.pt"), &b, 0, NULL, NULL, NULL, NULL);
    CHECK(open_fails(tpath("eval.pt"), "global 'builtins eval' is not allowed"));
    bfree(&b);
    /* INST / OBJ / EXT opcodes */
    const char *ops[] = {"(ios\nsystem\n.", "(co\nsystem\no.", "\x82\x01."};
    for (int i = 0; i < 3; i++) {
        bput(&b, ops[i], strlen(ops[i]));
        zip_with_pickle(tpath("ops.pt"), &b);
        CHECK(open_fails(tpath("ops.pt"), "pickle:"));
        bfree(&b);
    }
}

TEST(torchsave_huge_lengths)
{
    /* each pickle claims far more than it has, or indexes far out */
    const uint8_t cases[][16] = {
        {0x80, 2, 'X', 0xf0, 0xff, 0xff, 0xff, 'a', '.'},                 /* BINUNICODE 4 GB */
        {0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x40, 'a', '.'},             /* BINUNICODE8 2^62 */
        {0x80, 4, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '.'}, /* BINBYTES8 2^64-1 */
        {0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0x7f, '.'},                     /* LONG4 2 GB */
        {0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0xff, '.'},                     /* LONG4 negative */
        {0x80, 2, 'N', 'r', 0xff, 0xff, 0xff, 0xff, '.'},                 /* LONG_BINPUT 4e9 */
        {0x80, 2, 'j', 0x00, 0x00, 0x10, 0x00, '.'},                      /* LONG_BINGET unset */
        {0x80, 4, 0x95, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'N', '.'}, /* FRAME 2^64-1 */
        {0x80, 2, 'T', 0x00, 0x00, 0x00, 0x80, '.'},                      /* BINSTRING negative */
        {0x80, 2, 'a', '.'},                                              /* APPEND on empty stack */
        {0x80, 2, 'u', '.'},                                              /* SETITEMS without mark */
        {0x80, 9, 'N', '.'},                                              /* protocol 9 */
        {0x80, 2, 0xff, '.'},                                             /* unknown opcode */
        {0x80, 2, 'N', 'N', 't', '.'},                                    /* TUPLE without mark */
        {0x80, 2, '.'},                                                   /* STOP on empty stack */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bb b = {0};
        size_t len = 16;
        while (len > 1 && cases[i][len - 1] == 0) len--;   /* every case ends in '.' */
        bput(&b, cases[i], len);
        zip_with_pickle(tpath("huge.pt"), &b);
        if (!CHECK(open_fails(tpath("huge.pt"), "pickle:"))) fprintf(stderr, "  case %zu\n", i);
        bfree(&b);
    }
    /* a storage claiming 2^60 elements: the entry size cannot match */
    bb b = {0};
    int64_t sh[1] = {4}, st[1] = {1};
    pproto(&b);
    ptensor(&b, "IntStorage", "0", (int64_t)1 << 60, 0, 1, sh, st);
    bbyte(&b, '.');
    zip_with_pickle(tpath("bigstorage.pt"), &b);
    CHECK(open_fails(tpath("bigstorage.pt"), "holds 16 bytes"));
    bfree(&b);
    pproto(&b);
    ptensor(&b, "LongStorage", "0", INT64_MAX / 4, 0, 1, sh, st);
    bbyte(&b, '.');
    zip_with_pickle(tpath("bigstorage2.pt"), &b);
    CHECK(open_fails(tpath("bigstorage2.pt"), "too large"));
    bfree(&b);
}

TEST(torchsave_graph_limits)
{
    bb b = {0};
    /* 1000 nested lists */
    pproto(&b);
    for (int i = 0; i < 1000; i++) bbyte(&b, ']');
    for (int i = 0; i < 999; i++) bbyte(&b, 'a');
    bbyte(&b, '.');
    zip_with_pickle(tpath("deep.pt"), &b);
    CHECK(open_fails(tpath("deep.pt"), "nested deeper"));
    bfree(&b);
    /* a list containing itself */
    pproto(&b);
    bbyte(&b, ']'); bbyte(&b, 'q'); bbyte(&b, 0); bbyte(&b, 'h'); bbyte(&b, 0); bbyte(&b, 'a'); bbyte(&b, '.');
    zip_with_pickle(tpath("cycle.pt"), &b);
    CHECK(open_fails(tpath("cycle.pt"), "nested deeper"));
    bfree(&b);
    /* 2^40 paths through 40 shared levels */
    pproto(&b);
    bbyte(&b, ']');
    for (int i = 0; i < 40; i++) { bbyte(&b, '2'); bbyte(&b, 0x86); }   /* DUP, TUPLE2 */
    bbyte(&b, '.');
    zip_with_pickle(tpath("dag.pt"), &b);
    CHECK(open_fails(tpath("dag.pt"), "too large"));
    bfree(&b);
    /* 100000 marks */
    pproto(&b);
    for (int i = 0; i < 100000; i++) bbyte(&b, '(');
    bbyte(&b, 'N'); bbyte(&b, '.');
    zip_with_pickle(tpath("marks.pt"), &b);
    CHECK(open_fails(tpath("marks.pt"), "marks"));
    bfree(&b);
}

TEST(torchsave_bad_zip_directories)
{
    size_t n;
    uint8_t *d = read_file(ut_fixture("pt/tensor_int32_proto2_zip.pt"), &n);
    if (!CHECK(d)) return;
    uint8_t *m = malloc(n);
    /* find the central directory and the end records */
    size_t cd = 0, eocd = 0, loc = 0;
    for (size_t i = 0; i + 4 <= n; i++) {
        uint32_t s = d[i] | d[i + 1] << 8 | d[i + 2] << 16 | (uint32_t)d[i + 3] << 24;
        if (s == 0x02014b50 && !cd) cd = i;
        if (s == 0x06054b50) eocd = i;
        if (s == 0x07064b50) loc = i;
    }
    CHECK(cd && eocd && loc);
    /* entry's local header offset far outside */
    memcpy(m, d, n);
    m[cd + 42] = 0xf0; m[cd + 43] = 0xff; m[cd + 44] = 0xff; m[cd + 45] = 0x7f;
    write_file(tpath("cdout.pt"), m, n);
    CHECK(open_fails(tpath("cdout.pt"), "central directory entry 0 lies outside the file"));
    /* ZIP64 record offset outside */
    memcpy(m, d, n);
    m[loc + 8] = 0xff; m[loc + 12] = 0xff;
    write_file(tpath("z64out.pt"), m, n);
    CHECK(open_fails(tpath("z64out.pt"), "outside"));
    /* ZIP64 record's central directory offset outside */
    memcpy(m, d, n);
    size_t z64 = m[loc + 8] | m[loc + 9] << 8 | (size_t)m[loc + 10] << 16;
    m[z64 + 48 + 5] = 0x10;
    write_file(tpath("cdoff.pt"), m, n);
    CHECK(open_fails(tpath("cdoff.pt"), "central directory lies outside the file"));
    /* entry count larger than the directory can hold */
    memcpy(m, d, n);
    m[z64 + 32 + 3] = 0x10;
    write_file(tpath("count.pt"), m, n);
    CHECK(open_fails(tpath("count.pt"), "entries"));
    /* local header signature broken */
    memcpy(m, d, n);
    m[0] = 'Q';
    write_file(tpath("lh.pt"), m, n);
    CHECK(open_fails(tpath("lh.pt"), NULL));
    /* no EOCD at all */
    write_file(tpath("noeocd.pt"), d, eocd);
    CHECK(open_fails(tpath("noeocd.pt"), "end of central directory not found"));
    free(m);
    free(d);
    /* not torch files */
    write_file(tpath("empty.pt"), "", 0);
    CHECK(open_fails(tpath("empty.pt"), "empty file"));
    write_file(tpath("text.pt"), "hello world\n", 12);
    CHECK(open_fails(tpath("text.pt"), "not a torch.save file"));
    CHECK(open_fails(tpath("does-not-exist.pt"), "cannot open"));
    CHECK(open_fails(ut_tmpdir(), "directory"));
}

/* ---------------------------------------------------------------- hand-built files */

static int32_t iv12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const uint16_t f16bits[8] = {0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x8000};
static const uint16_t bf16bits[4] = {0x0001, 0x7f80, 0xff81, 0x3f80};

/* root: OrderedDict {'a': A[3,4], 'b': [B = A^T, C strided], 'c': (D expanded, 5, None, 'x'),
 * "it's": {7: H f16, True: G bf16}} ; storages '0' (int32 x12), '1' (f16 x8), '2' (bf16 x4) */
static void build_object(bb *b, int legacy)
{
    int64_t s34[2] = {3, 4}, t34[2] = {4, 1}, s43[2] = {4, 3}, t43[2] = {1, 4};
    int64_t s22[2] = {2, 2}, t22[2] = {6, 2}, s23[2] = {2, 3}, t23[2] = {0, 1};
    int64_t s8[1] = {8}, t8[1] = {1}, s4[1] = {4}, t4[1] = {1};
    pproto(b);
    pglobal(b, "collections", "OrderedDict");
    bbyte(b, ')'); bbyte(b, 'R');
    bbyte(b, '(');
    pstr(b, "a");
    ptensor_x(b, "IntStorage", "0", 12, 0, 2, s34, t34, legacy, NULL, NULL);
    pstr(b, "b");
    bbyte(b, ']'); bbyte(b, '(');
    ptensor_x(b, "IntStorage", "0", 12, 0, 2, s43, t43, legacy, NULL, NULL);
    ptensor_x(b, "IntStorage", "0", 12, 2, 2, s22, t22, legacy, NULL, NULL);
    bbyte(b, 'e');
    pstr(b, "c");
    bbyte(b, '(');
    ptensor_x(b, "IntStorage", "0", 12, 5, 2, s23, t23, legacy, NULL, NULL);
    pint(b, 5); bbyte(b, 'N'); pstr(b, "x");
    bbyte(b, 't');
    pstr(b, "it's");
    bbyte(b, '}'); bbyte(b, '(');
    pint(b, 7);
    ptensor_x(b, "HalfStorage", "1", 8, 0, 1, s8, t8, legacy, NULL, NULL);
    bbyte(b, 0x88);
    ptensor_x(b, "BFloat16Storage", "2", 4, 0, 1, s4, t4, legacy, NULL, NULL);
    bbyte(b, 'u');
    bbyte(b, 'u');
    bbyte(b, '}'); bbyte(b, 'b');   /* BUILD with a state: ignored */
    bbyte(b, '.');
}

static void check_object(pt_file *f)
{
    char err[256];
    CHECK_STR(pt_root_kind(f), "dict");
    CHECK_EQ_I64(pt_ntensors(f), 6);
    CHECK_EQ_I64(pt_nstorages(f), 3);
    const char *paths[6] = {"['a']", "['b'][0]", "['b'][1]", "['c'][0]", "[\"it's\"][7]", "[\"it's\"][True]"};
    for (int i = 0; i < 6; i++) CHECK_STR(pt_get(f, i)->path, paths[i]);
    CHECK_EQ_I64(pt_find(f, "['b'][1]"), 2);
    CHECK_EQ_I64(pt_find(f, "['zz']"), -1);
    for (int i = 0; i < 4; i++) CHECK_EQ_I64(pt_get(f, i)->storage, pt_get(f, 0)->storage);
    CHECK(pt_get(f, 4)->storage != pt_get(f, 0)->storage);
    int64_t v[12];
    double dv[12];
    /* A */
    CHECK(pt_read_i64(f, 0, 0, 12, v, err, sizeof err) == 0);
    for (int i = 0; i < 12; i++) CHECK_EQ_I64(v[i], i);
    /* B = A^T: B[i][j] = A[j][i] = 4j + i */
    CHECK(pt_read_i64(f, 1, 0, 12, v, err, sizeof err) == 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK_EQ_I64(v[i * 3 + j], 4 * j + i);
    CHECK(pt_read_f64(f, 1, 5, 4, dv, err, sizeof err) == 0);   /* B[1][2], B[2][0..2] */
    CHECK_NEAR(dv[0], 9, 0);
    CHECK_NEAR(dv[1], 2, 0);
    CHECK_NEAR(dv[3], 10, 0);
    /* C: offset 2, shape [2,2], stride [6,2] -> 2 4 8 10 */
    CHECK(pt_read_i64(f, 2, 0, 4, v, err, sizeof err) == 0);
    CHECK_EQ_I64(v[0], 2); CHECK_EQ_I64(v[1], 4); CHECK_EQ_I64(v[2], 8); CHECK_EQ_I64(v[3], 10);
    CHECK_EQ_I64(pt_get(f, 2)->storage_offset, 2);
    /* D: offset 5, shape [2,3], stride [0,1] -> 5 6 7 5 6 7 */
    CHECK(pt_read_i64(f, 3, 0, 6, v, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(v[i], 5 + i % 3);
    int32_t raw[6];
    CHECK(pt_read_raw(f, 3, 1, 5, raw, err, sizeof err) == 0);
    CHECK_EQ_I64(raw[0], 6); CHECK_EQ_I64(raw[4], 7);
    /* float16 specials */
    const pt_tensor *h = pt_get(f, 4);
    CHECK_EQ_I64(h->dtype, PT_FLOAT16);
    CHECK(pt_read_f64(f, 4, 0, 8, dv, err, sizeof err) == 0);
    CHECK_NEAR(dv[0], ldexp(1, -24), 0);              /* smallest subnormal */
    CHECK_NEAR(dv[1], ldexp(1023, -24), 0);           /* largest subnormal */
    CHECK_NEAR(dv[2], ldexp(1, -14), 0);              /* smallest normal */
    CHECK_NEAR(dv[3], 65504, 0);
    CHECK(isinf(dv[4]) && dv[4] > 0);
    CHECK(isinf(dv[5]) && dv[5] < 0);
    CHECK(isnan(dv[6]));
    CHECK(dv[7] == 0 && signbit(dv[7]));
    CHECK(pt_read_i64(f, 4, 0, 8, v, err, sizeof err) == 0);
    CHECK_EQ_I64(v[3], 65504);
    CHECK_EQ_I64(v[4], INT64_MAX);
    CHECK_EQ_I64(v[5], INT64_MIN);
    CHECK_EQ_I64(v[6], 0);
    /* bfloat16 specials */
    CHECK(pt_read_f64(f, 5, 0, 4, dv, err, sizeof err) == 0);
    CHECK_NEAR(dv[0], ldexp(1, -133), 0);
    CHECK(isinf(dv[1]));
    CHECK(isnan(dv[2]));
    CHECK_NEAR(dv[3], 1, 0);
    /* range errors */
    err[0] = 0;
    CHECK(pt_read_i64(f, 0, 10, 3, v, err, sizeof err) == -1 && err[0]);
    CHECK(pt_read_i64(f, 0, -1, 1, v, err, sizeof err) == -1);
    CHECK(pt_read_i64(f, 6, 0, 1, v, err, sizeof err) == -1);
    CHECK(pt_read_i64(f, 0, 12, 0, v, err, sizeof err) == 0);
}

static const char *obj_keys[3] = {"0", "1", "2"};
static const void *obj_data[3] = {iv12, f16bits, bf16bits};
static const size_t obj_len[3] = {48, 16, 8};

TEST(torchsave_handbuilt_zip)
{
    bb b = {0};
    build_object(&b, 0);
    char err[256];
    CHECK(write_torch_zip(tpath("obj.pt"), &b, 3, obj_keys, obj_data, obj_len, 0, 0) == 0);
    pt_file *f = pt_open(tpath("obj.pt"), err, sizeof err);
    if (CHECK(f)) { CHECK_STR(pt_format(f), "zip"); check_object(f); pt_close(f); }
    else fprintf(stderr, "  %s\n", err);
    /* the same with every ZIP64 field forced */
    CHECK(write_torch_zip(tpath("obj64.pt"), &b, 3, obj_keys, obj_data, obj_len, Z_FORCE64, 0) == 0);
    f = pt_open(tpath("obj64.pt"), err, sizeof err);
    if (CHECK(f)) { CHECK_STR(pt_format(f), "zip64"); check_object(f); pt_close(f); }
    else fprintf(stderr, "  %s\n", err);
    /* gzip of it */
    gzip_file(tpath("obj64.pt"), tpath("obj64.pt.gz"));
    f = pt_open(tpath("obj64.pt.gz"), err, sizeof err);
    if (CHECK(f)) { CHECK_STR(pt_format(f), "zip64 (gzip)"); check_object(f); pt_close(f); }
    bfree(&b);
}

TEST(torchsave_handbuilt_legacy)
{
    bb b = {0};
    build_object(&b, 1);
    char err[256];
    /* keys listed in a different order than they appear */
    const char *keys[3] = {"2", "0", "1"};
    const void *data[3] = {bf16bits, iv12, f16bits};
    const int64_t count[3] = {4, 12, 8};
    const size_t len[3] = {8, 48, 16};
    write_legacy(tpath("obj_legacy.pt"), &b, 3, keys, data, count, len);
    pt_file *f = pt_open(tpath("obj_legacy.pt"), err, sizeof err);
    if (CHECK(f)) { CHECK_STR(pt_format(f), "legacy"); check_object(f); pt_close(f); }
    else fprintf(stderr, "  %s\n", err);
    /* wrong element count */
    const int64_t bad[3] = {4, 11, 8};
    write_legacy(tpath("bad_legacy.pt"), &b, 3, keys, data, bad, len);
    CHECK(open_fails(tpath("bad_legacy.pt"), "holds 11 elements"));
    /* a key missing from the list */
    write_legacy(tpath("miss_legacy.pt"), &b, 2, keys, data, count, len);
    CHECK(open_fails(tpath("miss_legacy.pt"), "has no data"));
    bfree(&b);
    /* a storage view: root storage 'r' of 12 ints, view 'v' = r[4:10], tensor v[1:4] */
    int64_t s3[1] = {3}, t1[1] = {1};
    view_md vm = {"v", 4, 6};
    pproto(&b);
    bbyte(&b, '(');
    ptensor_x(&b, "IntStorage", "r", 12, 1, 1, s3, t1, 1, &vm, NULL);
    bbyte(&b, 'l'); bbyte(&b, '.');
    const char *rk[1] = {"r"};
    const void *rd[1] = {iv12};
    const int64_t rc[1] = {12};
    const size_t rl[1] = {48};
    write_legacy(tpath("view.pt"), &b, 1, rk, rd, rc, rl);
    f = pt_open(tpath("view.pt"), err, sizeof err);
    if (CHECK(f)) {
        int64_t v[3];
        CHECK_STR(pt_root_kind(f), "list");
        CHECK_STR(pt_get(f, 0)->path, "[0]");
        CHECK_EQ_I64(pt_get(f, 0)->storage_offset, 5);
        CHECK(pt_read_i64(f, 0, 0, 3, v, err, sizeof err) == 0);
        CHECK_EQ_I64(v[0], 5); CHECK_EQ_I64(v[2], 7);
        pt_close(f);
    } else fprintf(stderr, "  %s\n", err);
    bfree(&b);
    /* a tensor reaching past its view */
    int64_t s6[1] = {6};
    pproto(&b);
    ptensor_x(&b, "IntStorage", "r", 12, 1, 1, s6, t1, 1, &vm, NULL);
    bbyte(&b, '.');
    write_legacy(tpath("view2.pt"), &b, 1, rk, rd, rc, rl);
    CHECK(open_fails(tpath("view2.pt"), "outside"));
    bfree(&b);
}

TEST(torchsave_validation_errors)
{
    static const int32_t vals[4] = {1, 2, 3, 4};
    const char *keys[] = {"0"};
    const void *data[] = {vals};
    size_t len[] = {16};
    int64_t sh[9] = {2, 2, 1, 1, 1, 1, 1, 1, 1}, st[9] = {2, 1, 1, 1, 1, 1, 1, 1, 1};
    struct { int64_t off; int nd; int64_t s0, t0; const char *cls; const char *want; } c[] = {
        {1, 1, 4, 1, "IntStorage", "outside storage"},      /* offset 1 + 4 elements > 4 */
        {0, 1, 3, 2, "IntStorage", "outside storage"},      /* 0 + 2*2 = 4 -> 5 elements */
        {0, 9, 2, 2, "IntStorage", "dimensions"},
        {0, 1, 4, -1, "IntStorage", "stride"},
        {-1, 1, 4, 1, "IntStorage", "offset"},
        {0, 1, -4, 1, "IntStorage", "size"},
        {0, 1, 4, 1, "LongStorage", "holds 16 bytes"},      /* 4 x int64 != 16 bytes */
        {0, 1, 4, 1, "ComplexFloatStorage", "not allowed"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        bb b = {0};
        sh[0] = c[i].s0;
        st[0] = c[i].t0;
        pproto(&b);
        ptensor_x(&b, c[i].cls, "0", 4, c[i].off, c[i].nd, sh, st, 0, NULL, NULL);
        bbyte(&b, '.');
        CHECK(write_torch_zip(tpath("val.pt"), &b, 1, keys, data, len, 0, 0) == 0);
        if (!CHECK(open_fails(tpath("val.pt"), c[i].want))) fprintf(stderr, "  case %zu\n", i);
        bfree(&b);
    }
    /* extent exactly fits; an empty tensor may sit anywhere; v3 with a dtype */
    bb b = {0};
    int64_t s4[1] = {4}, t1[1] = {1}, s0[1] = {0};
    pproto(&b);
    bbyte(&b, '(');
    ptensor_x(&b, "IntStorage", "0", 4, 0, 1, s4, t1, 0, NULL, "int32");
    ptensor_x(&b, "IntStorage", "0", 4, 100, 1, s0, t1, 0, NULL, NULL);
    ptensor_x(&b, "IntStorage", "0", 4, 3, 0, s0, t1, 0, NULL, NULL);   /* 0-dim scalar */
    bbyte(&b, 't'); bbyte(&b, '.');
    CHECK(write_torch_zip(tpath("ok.pt"), &b, 1, keys, data, len, 0, 0) == 0);
    char err[256];
    pt_file *f = pt_open(tpath("ok.pt"), err, sizeof err);
    if (CHECK(f)) {
        int64_t v[4];
        CHECK_STR(pt_root_kind(f), "tuple");
        CHECK_EQ_I64(pt_ntensors(f), 3);
        CHECK_EQ_I64(pt_get(f, 1)->numel, 0);
        CHECK_EQ_I64(pt_get(f, 2)->ndim, 0);
        CHECK_EQ_I64(pt_get(f, 2)->numel, 1);
        CHECK(pt_read_i64(f, 0, 0, 4, v, err, sizeof err) == 0);
        CHECK_EQ_I64(v[3], 4);
        CHECK(pt_read_i64(f, 2, 0, 1, v, err, sizeof err) == 0);
        CHECK_EQ_I64(v[0], 4);
        pt_close(f);
    } else fprintf(stderr, "  %s\n", err);
    bfree(&b);
    /* compressed entry, big-endian byteorder, missing storage entry */
    int64_t sh1[1] = {4};
    pproto(&b);
    ptensor(&b, "IntStorage", "0", 4, 0, 1, sh1, t1);
    bbyte(&b, '.');
    zent e[4] = {{"archive/data.pkl", b.p, b.n, 0}, {"archive/data/0", vals, 16, 8}};
    CHECK(write_zip(tpath("deflate.pt"), e, 2, 0, 0) == 0);
    CHECK(open_fails(tpath("deflate.pt"), "compressed (method 8)"));
    e[1].method = 0;
    e[2] = (zent){"archive/byteorder", "big", 3, 0};
    CHECK(write_zip(tpath("big.pt"), e, 3, 0, 0) == 0);
    CHECK(open_fails(tpath("big.pt"), "big-endian"));
    e[2] = (zent){"archive/byteorder", "little", 6, 0};
    CHECK(write_zip(tpath("little.pt"), e, 3, 0, 0) == 0);
    f = pt_open(tpath("little.pt"), err, sizeof err);
    CHECK(f);
    pt_close(f);
    e[1].name = "archive/data/1";
    CHECK(write_zip(tpath("nostorage.pt"), e, 2, 0, 0) == 0);
    CHECK(open_fails(tpath("nostorage.pt"), "has no entry 'archive/data/0'"));
    e[0].name = "archive/data.pkx";
    CHECK(write_zip(tpath("nopkl.pt"), e, 2, 0, 0) == 0);
    CHECK(open_fails(tpath("nopkl.pt"), "data.pkl"));
    bfree(&b);
}

TEST(torchsave_protocol0_text_opcodes)
{
    /* a dict written with protocol-0 opcodes around a tensor from protocol-2 pieces */
    bb b = {0};
    int64_t s4[1] = {4}, t1[1] = {1};
    const char *pre = "(dp0\nS'n\\'ame'\np1\nI42\nsVuni\\u00e9\np2\nL123456789012345678901234L\nsS\"big\"\np3\nF1.5\ns";
    bput(&b, pre, strlen(pre));
    pstr(&b, "t");
    ptensor(&b, "IntStorage", "0", 4, 0, 1, s4, t1);
    bbyte(&b, 's');
    const char *post = "g1\nI01\nsVk\np9\nI5\nsI7\ng9\ns.";  /* d["n'ame"] = True; d['k'] = 5; d[7] = 'k' */
    bput(&b, post, strlen(post));
    zip_with_pickle(tpath("p0.pt"), &b);
    char err[256];
    pt_file *f = pt_open(tpath("p0.pt"), err, sizeof err);
    if (CHECK(f)) {
        CHECK_STR(pt_root_kind(f), "dict");
        CHECK(pt_ntensors(f) >= 1);
        CHECK_STR(pt_get(f, 0)->path, "['t']");
        pt_close(f);
    } else fprintf(stderr, "  %s\n", err);
    bfree(&b);
}

TEST(torchsave_large_contiguous_and_strided)
{
    /* 600 x 500 int32 (1.2 MB, crosses the read chunk) and a transposed view of it */
    enum { R = 600, C = 500 };
    int32_t *v = malloc(sizeof(int32_t) * R * C);
    for (int i = 0; i < R * C; i++) v[i] = i * 7 - 1000000;
    bb b = {0};
    int64_t s[2] = {R, C}, t[2] = {C, 1}, st[2] = {C, R}, tt[2] = {1, C};
    pproto(&b);
    bbyte(&b, '(');
    ptensor(&b, "IntStorage", "0", R * C, 0, 2, s, t);
    ptensor(&b, "IntStorage", "0", R * C, 0, 2, st, tt);
    bbyte(&b, 'l'); bbyte(&b, '.');
    const char *keys[] = {"0"};
    const void *data[] = {v};
    size_t len[] = {sizeof(int32_t) * R * C};
    CHECK(write_torch_zip(tpath("large.pt"), &b, 1, keys, data, len, 0, 0) == 0);
    char err[256];
    pt_file *f = pt_open(tpath("large.pt"), err, sizeof err);
    int64_t *out = malloc(sizeof(int64_t) * R * C);
    if (CHECK(f)) {
        CHECK(pt_read_i64(f, 0, 0, R * C, out, err, sizeof err) == 0);
        int bad = 0;
        for (int i = 0; i < R * C; i++) bad += out[i] != v[i];
        CHECK_EQ_I64(bad, 0);
        CHECK(pt_read_i64(f, 0, 12345, 200000, out, err, sizeof err) == 0);
        CHECK_EQ_I64(out[199999], v[212344]);
        /* transposed: T[i][j] = v[j*C + i], read a middle range */
        CHECK(pt_read_i64(f, 1, 777, 3000, out, err, sizeof err) == 0);
        bad = 0;
        for (int k = 0; k < 3000; k++) {
            int64_t l = 777 + k, i = l / R, j = l % R;
            bad += out[k] != v[j * C + i];
        }
        CHECK_EQ_I64(bad, 0);
        pt_close(f);
    } else fprintf(stderr, "  %s\n", err);
    free(out);
    free(v);
    bfree(&b);
}

TEST(torchsave_zip64_beyond_4gb)
{
    /* a sparse file whose storage entry starts past 4 GiB */
    static const int64_t vals[3] = {-5, 1LL << 40, 7};
    bb b = {0};
    int64_t s3[1] = {3}, t1[1] = {1};
    pproto(&b);
    ptensor(&b, "LongStorage", "0", 3, 0, 1, s3, t1);
    bbyte(&b, '.');
    const char *keys[] = {"0"};
    const void *data[] = {vals};
    size_t len[] = {24};
    if (write_torch_zip(tpath("sparse.pt"), &b, 1, keys, data, len, 0, (uint64_t)5 << 30)) {
        fprintf(stderr, "  (no sparse file support here: skipped)\n");
        bfree(&b);
        unlink(tpath("sparse.pt"));
        return;
    }
    char err[256];
    pt_file *f = pt_open(tpath("sparse.pt"), err, sizeof err);
    if (CHECK(f)) {
        int64_t v[3];
        CHECK_STR(pt_format(f), "zip64");
        CHECK(pt_read_i64(f, 0, 0, 3, v, err, sizeof err) == 0);
        CHECK_EQ_I64(v[0], -5);
        CHECK_EQ_I64(v[1], 1LL << 40);
        CHECK_EQ_I64(v[2], 7);
        pt_close(f);
    } else fprintf(stderr, "  %s\n", err);
    unlink(tpath("sparse.pt"));
    bfree(&b);
}

TEST(pickle_memory_source)
{
    /* the interpreter alone, from memory, no hooks: globals refused, containers built */
    as_pickle *p = as_pickle_new(NULL);
    const char ok[] = "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01]q\x02(K\x01\x8a\x09"
                      "\x00\x00\x00\x00\x00\x00\x00\x00\x01" "G?\xf8\x00\x00\x00\x00\x00\x00"
                      "eX\x01\x00\x00\x00" "bh\x02u.";
    uint64_t next = 0;
    as_pickle_obj *o = as_pickle_load(p, ok, sizeof ok - 1, -1, 0, 0, &next);
    if (CHECK(o)) {
        CHECK_EQ_I64(next, sizeof ok - 1);
        CHECK_EQ_I64(o->kind, AS_PK_DICT);
        CHECK_EQ_I64(o->u.c.n, 4);
        as_pickle_obj *l = o->u.c.v[1];
        CHECK(l->kind == AS_PK_LIST && l->u.c.n == 3);
        CHECK(o->u.c.v[3] == l);                         /* memo: the same object */
        CHECK(l->u.c.v[1]->kind == AS_PK_BIGINT);        /* 2^64 */
        CHECK(l->u.c.v[1]->u.big == (__int128)1 << 64);
        CHECK_NEAR(l->u.c.v[2]->u.f, 1.5, 0);
    } else fprintf(stderr, "  %s\n", as_pickle_error(p));
    CHECK(!as_pickle_load(p, "\x80\x02\x63os\nsystem\n.", 14, -1, 0, 0, NULL));
    CHECK(strstr(as_pickle_error(p), "global 'os system' is not allowed") != NULL);
    CHECK(!as_pickle_load(p, "\x80\x02K", 3, -1, 0, 0, NULL));
    CHECK(strstr(as_pickle_error(p), "truncated") != NULL);
    as_pickle_free(p);
}

/* ---------------------------------------------------------------- limits (issue 11) */

/* one tensor under `levels` levels of DUP + TUPLE2: 2^levels paths to it */
static void dag_pickle(bb *b, int levels)
{
    int64_t sh[1] = {4}, st[1] = {1};
    pproto(b);
    ptensor(b, "IntStorage", "0", 4, 0, 1, sh, st);
    for (int i = 0; i < levels; i++) { bbyte(b, '2'); bbyte(b, 0x86); }
    bbyte(b, '.');
}

static int opens_with(const char *path, const pt_limits *l, const char *want)
{
    char err[512] = "";
    pt_file *f = pt_open_limits(path, l, err, sizeof err);
    if (f) { pt_close(f); if (want) fprintf(stderr, "  %s opened; expected '%s'\n", path, want); return !want; }
    if (want && strstr(err, want)) return 1;
    fprintf(stderr, "  %s: '%s' (expected %s)\n", path, err, want ? want : "success");
    return 0;
}

TEST(torchsave_limit_tensors)
{
    pt_limits l;
    char err[256];
    CHECK(pt_limits_init(&l, err, sizeof err) == 0);
    CHECK_EQ_I64(l.max_tensors, 65536);
    bb b = {0};
    dag_pickle(&b, 12);   /* 4096 paths */
    zip_with_pickle(tpath("dag12.pt"), &b);
    bfree(&b);
    l.max_tensors = 4095;
    CHECK(opens_with(tpath("dag12.pt"), &l, "more than 4095 tensors"));
    l.max_tensors = 4096;
    pt_file *f = pt_open_limits(tpath("dag12.pt"), &l, err, sizeof err);
    if (CHECK(f)) {
        CHECK_EQ_I64(pt_ntensors(f), 4096);
        /* pt_find is a binary search now: every path is found at its own index */
        int bad = 0;
        for (int i = 0; i < pt_ntensors(f); i++) bad += pt_find(f, pt_get(f, i)->path) != i;
        CHECK_EQ_I64(bad, 0);
        CHECK_EQ_I64(pt_find(f, "[1][0][1][1][0][0][1][0][1][1][0][1]"), 0xb2d);
        CHECK_EQ_I64(pt_find(f, "[2]"), -1);
        CHECK_EQ_I64(pt_find(f, ""), -1);
        pt_close(f);
    }
    /* the default limit stops 2^20 paths (the old reader listed them: 430 MB) */
    dag_pickle(&b, 20);
    zip_with_pickle(tpath("dag20.pt"), &b);
    bfree(&b);
    CHECK(opens_with(tpath("dag20.pt"), NULL, "more than 65536 tensors"));
    /* rebuild calls count too, even when the object does not keep them */
    int64_t sh[1] = {4}, st[1] = {1};
    pproto(&b);
    bbyte(&b, '(');
    for (int i = 0; i < 10; i++) { ptensor(&b, "IntStorage", "0", 4, 0, 1, sh, st); bbyte(&b, '0'); }   /* POP */
    bbyte(&b, 't'); bbyte(&b, '.');
    zip_with_pickle(tpath("calls.pt"), &b);
    bfree(&b);
    l.max_tensors = 9;
    CHECK(opens_with(tpath("calls.pt"), &l, "more than 9 tensors"));
    l.max_tensors = 10;
    CHECK(opens_with(tpath("calls.pt"), &l, NULL));
    /* the environment */
    setenv("AS_MAX_TENSORS", "7", 1);
    setenv("AS_MAX_SPOOL", "1.5K", 1);
    setenv("AS_MAX_GZIP_RATIO", "0", 1);
    CHECK(pt_limits_init(&l, err, sizeof err) == 0);
    CHECK_EQ_I64(l.max_tensors, 7);
    CHECK_EQ_I64(l.max_spool, 1536);
    CHECK(l.max_ratio == 0);
    setenv("AS_MAX_TENSORS", "-1", 1);
    CHECK(pt_limits_init(&l, err, sizeof err) == -1 && strstr(err, "AS_MAX_TENSORS: '-1'"));
    unsetenv("AS_MAX_TENSORS");
    setenv("AS_MAX_GZIP_RATIO", "lots", 1);
    CHECK(pt_limits_init(&l, err, sizeof err) == -1 && strstr(err, "AS_MAX_GZIP_RATIO"));
    CHECK(!pt_open(tpath("calls.pt"), err, sizeof err) && strstr(err, "AS_MAX_GZIP_RATIO"));
    unsetenv("AS_MAX_GZIP_RATIO");
    setenv("AS_MAX_SPOOL", "12Q", 1);
    CHECK(pt_limits_init(&l, err, sizeof err) == -1 && strstr(err, "AS_MAX_SPOOL"));
    unsetenv("AS_MAX_SPOOL");
}

TEST(torchsave_limit_gzip_and_spool)
{
    /* a gzip bomb: 40 MiB of zeros in about 40 KB */
    size_t n = (size_t)40 << 20;
    uint8_t *zeros = calloc(1, n);
    const char *raw = tpath("zeros.bin"), *gz = tpath("bomb.pt.gz");
    write_file(raw, zeros, n);
    free(zeros);
    gzip_file(raw, gz);
    unlink(raw);
    struct stat sb;
    CHECK(stat(gz, &sb) == 0 && sb.st_size < (1 << 20));
    pt_limits l;
    char err[256];
    CHECK(pt_limits_init(&l, err, sizeof err) == 0);
    CHECK(opens_with(gz, &l, "a gzip bomb?"));
    CHECK(opens_with(gz, &l, "AS_MAX_GZIP_RATIO"));
    l.max_ratio = 0;                                    /* no ratio: spooled, then not torch */
    CHECK(opens_with(gz, &l, "not a torch.save file"));
    l.max_ratio = 2000;
    CHECK(opens_with(gz, &l, "not a torch.save file"));
    l.max_spool = (uint64_t)20 << 20;                   /* 20 MiB of TMPDIR at most */
    CHECK(opens_with(gz, &l, "larger than 20971520 bytes (AS_MAX_SPOOL"));
    /* a real gzip'd file is far below every limit; a tiny spool limit stops it */
    gzip_file(ut_fixture("pt/tensor_int32_proto2_zip.pt"), tpath("small.pt.gz"));
    CHECK(pt_limits_init(&l, err, sizeof err) == 0);
    CHECK(opens_with(tpath("small.pt.gz"), &l, NULL));
    l.max_spool = 100;
    CHECK(opens_with(tpath("small.pt.gz"), &l, "the decompressed input is larger than 100 bytes"));
    l.max_spool = 0;                                    /* 0: no limit */
    CHECK(opens_with(tpath("small.pt.gz"), &l, NULL));
}

/* convert f into /dev/null: tables written, or -1 with err */
static int64_t convert_null(pt_file *f, char *err, size_t errlen)
{
    int64_t dims[1] = {16};
    as_convert_opts o = { .dims = dims, .ndims = 1, .source = "test" };
    as_writer *w = as_writer_open("/dev/null", 1, 0);
    as_progress pr;
    memset(&pr, 0, sizeof pr);
    int64_t n = as_convert_torch(f, &o, w, &pr, err, errlen);
    as_writer_close(w);
    return n;
}

/* a MetaSyn tuple: indices int32 [ni] (stride 1), offsets int64 [no] stride os, lengths int32
 * [T, B] strides (l0, l1), storages of the given element counts (zeros) */
static const char *metasyn_file(const char *name, int64_t ni, int64_t no, int64_t os, int64_t T, int64_t B,
                                int64_t l0, int64_t l1, int64_t si, int64_t so, int64_t sl)
{
    bb b = {0};
    int64_t ish[1] = {ni}, ist[1] = {1}, osh[1] = {no}, ost[1] = {os}, lsh[2] = {T, B}, lst[2] = {l0, l1};
    pproto(&b);
    ptensor(&b, "IntStorage", "0", si, 0, 1, ish, ist);
    ptensor(&b, "LongStorage", "1", so, 0, 1, osh, ost);
    ptensor(&b, "IntStorage", "2", sl, 0, 2, lsh, lst);
    bbyte(&b, 0x87); bbyte(&b, '.');
    void *zi = calloc((size_t)si + 1, 4), *zo = calloc((size_t)so + 1, 8), *zl = calloc((size_t)sl + 1, 4);
    const char *keys[3] = {"0", "1", "2"};
    const void *data[3] = {zi, zo, zl};
    size_t len[3] = {(size_t)si * 4, (size_t)so * 8, (size_t)sl * 4};
    const char *path = tpath(name);
    CHECK(write_torch_zip(path, &b, 3, keys, data, len, 0, 0) == 0);
    free(zi); free(zo); free(zl);
    bfree(&b);
    return path;
}

TEST(convert_refuses_expanded_and_repeated_tensors)
{
    char err[512];
    /* zeros are valid MetaSyn data: 4 tables of batch 3 without lookups */
    pt_file *f = pt_open(metasyn_file("ok.pt", 0, 13, 1, 4, 3, 3, 1, 0, 13, 12), err, sizeof err);
    if (CHECK(f)) { CHECK_EQ_I64(convert_null(f, err, sizeof err), 4); pt_close(f); }
    /* the same tables from one stored offset and one stored length (stride 0): the old
       converter wrote every table; 1000 here, a million in the 1 KB file of the issue */
    f = pt_open(metasyn_file("s0.pt", 0, 1001, 0, 1000, 1, 0, 0, 0, 1, 1), err, sizeof err);
    if (CHECK(f)) {
        CHECK_EQ_I64(convert_null(f, err, sizeof err), -1);
        CHECK(strstr(err, "offsets ([1]) has stride 0 in dimension 0 of size 1001") != NULL);
        pt_close(f);
    }
    /* only lengths expanded */
    f = pt_open(metasyn_file("s0l.pt", 0, 13, 1, 4, 3, 0, 1, 0, 13, 3), err, sizeof err);
    if (CHECK(f)) {
        CHECK_EQ_I64(convert_null(f, err, sizeof err), -1);
        CHECK(strstr(err, "lengths ([2]) has stride 0 in dimension 0 of size 4") != NULL);
        pt_close(f);
    }
    /* overlapping strides without a 0: lengths [60, 60] over 119 stored values */
    f = pt_open(metasyn_file("ovl.pt", 0, 3601, 1, 60, 60, 1, 1, 0, 3601, 119), err, sizeof err);
    if (CHECK(f)) {
        CHECK_EQ_I64(convert_null(f, err, sizeof err), -1);
        CHECK(strstr(err, "hold 43208 bytes of data but their storages only 29284:") != NULL);
        pt_close(f);
    }
    /* no tables but a batch of 2^40: nothing to allocate (the old converter asked for 8 TB) */
    f = pt_open(metasyn_file("t0.pt", 0, 1, 1, 0, (int64_t)1 << 40, 1, 1, 0, 1, 0), err, sizeof err);
    if (CHECK(f)) { CHECK_EQ_I64(convert_null(f, err, sizeof err), 0); pt_close(f); }
    else fprintf(stderr, "  %s\n", err);
    /* the prototype's dict with one stored table referenced 50 times */
    static const int64_t off[3] = {0, 1, 3};
    static const int32_t idx[3] = {5, 6, 7};
    int64_t s3[1] = {3}, t1[1] = {1};
    bb b = {0};
    pproto(&b);
    bbyte(&b, '}'); bbyte(&b, '(');
    pstr(&b, "lS_offsets"); bbyte(&b, ']'); bbyte(&b, '(');
    ptensor(&b, "LongStorage", "0", 3, 0, 1, s3, t1);
    bbyte(&b, 'q'); bbyte(&b, 1);
    for (int i = 1; i < 50; i++) { bbyte(&b, 'h'); bbyte(&b, 1); }
    bbyte(&b, 'e');
    pstr(&b, "lS_indices"); bbyte(&b, ']'); bbyte(&b, '(');
    ptensor(&b, "IntStorage", "1", 3, 0, 1, s3, t1);
    bbyte(&b, 'q'); bbyte(&b, 2);
    for (int i = 1; i < 50; i++) { bbyte(&b, 'h'); bbyte(&b, 2); }
    bbyte(&b, 'e'); bbyte(&b, 'u'); bbyte(&b, '.');
    const char *keys[2] = {"0", "1"};
    const void *data[2] = {off, idx};
    size_t len[2] = {sizeof off, sizeof idx};
    CHECK(write_torch_zip(tpath("rep.pt"), &b, 2, keys, data, len, 0, 0) == 0);
    bfree(&b);
    f = pt_open(tpath("rep.pt"), err, sizeof err);
    if (CHECK(f)) {
        CHECK_EQ_I64(pt_ntensors(f), 100);
        CHECK_EQ_I64(convert_null(f, err, sizeof err), -1);
        CHECK(strstr(err, "lS_indices and lS_offsets hold 1800 bytes of data but their storages only 36:") != NULL);
        /* --dump prints it: 300 elements are under the free allowance */
        FILE *out = fopen("/dev/null", "w");
        CHECK(as_convert_dump(f, out, err, sizeof err) == 0);
        fclose(out);
        pt_close(f);
    }
    /* --dump of an expanded tensor of 2^31 elements is refused */
    f = pt_open(metasyn_file("big.pt", 0, (int64_t)1 << 31, 0, 1, 1, 0, 0, 0, 1, 1), err, sizeof err);
    if (CHECK(f)) {
        FILE *out = fopen("/dev/null", "w");
        CHECK(as_convert_dump(f, out, err, sizeof err) == -1);
        CHECK(strstr(err, "the tensors hold 17179869188 bytes of data but their storages only 12 (and more than the 1048576 elements allowed any file)") != NULL);
        fclose(out);
        pt_close(f);
    }
}
