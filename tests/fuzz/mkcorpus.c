/* mkcorpus.c - write the seed corpus of the fuzz targets: tests/fuzz/corpus/<target>/.
 * Dimension letters: B batch, T tables.
 *
 *   mkcorpus DIR      (make fuzz-corpus: DIR = tests/fuzz/corpus)
 *
 * Small valid inputs of every kind each decoder reads (so mutants reach deep code), and the
 * hostile inputs of issue 11 as regression seeds (also used by tests/as-convert.bats):
 *   convert/stride0-tables.pt    1 KB: offsets and lengths expanded (stride 0) to a million
 *                                tables of batch 1 (the old as-convert wrote them all)
 *   convert/stride0-batch.pt     one table of batch 2^31 from expanded tensors (the old
 *                                as-convert allocated and filled 2 x 16 GiB)
 *   convert/shared-storage.pt    the prototype's dict whose 1000 tables are one tensor
 *                                (4 KB of indices written a thousand times)
 *   torchsave/dag-tensors.pt     a tensor in 20 levels of shared tuples: 2^20 paths (the
 *                                old reader listed them all, 430 MB)
 * Everything is built from scratch (a small zip writer and pickle builder below, the
 * stream writer of lib/), so the corpus is reproducible without PyTorch.
 */
#include "common.h"
#include "convert.h"
#include "costmodel.h"
#include "fuzz_rl.h"
#include "policy.h"
#include "rl.h"
#include "stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* ---------------------------------------------------------------- byte buffers */

typedef struct { uint8_t *p; size_t n, cap; } buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u8(buf *b, int v) { uint8_t x = (uint8_t)v; put(b, &x, 1); }
static void u16(buf *b, uint32_t v) { u8(b, (int)(v & 255)); u8(b, (int)(v >> 8 & 255)); }
static void u32(buf *b, uint32_t v) { u16(b, v & 0xffff); u16(b, v >> 16); }
static void u64(buf *b, uint64_t v) { u32(b, (uint32_t)v); u32(b, (uint32_t)(v >> 32)); }
static void bfree(buf *b) { free(b->p); memset(b, 0, sizeof *b); }

static const char *outdir;

static void save(const char *target, const char *name, const void *d, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) {
        fprintf(stderr, "mkcorpus: %s: %s\n", path, strerror(errno));
        exit(3);
    }
}

static buf gzip(const buf *in)
{
    buf out = {0};
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, in->n) + 64;
    out.p = malloc(cap);
    out.cap = cap;
    z.next_in = in->p;
    z.avail_in = (uInt)in->n;
    z.next_out = out.p;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    out.n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* ---------------------------------------------------------------- pickles (protocol 2) */

static void p_proto(buf *b, int v) { u8(b, 0x80); u8(b, v); }
static void p_str(buf *b, const char *s) { u8(b, 'X'); u32(b, (uint32_t)strlen(s)); put(b, s, strlen(s)); }
static void p_int(buf *b, int64_t v)
{
    if (v >= 0 && v < 256) { u8(b, 'K'); u8(b, (int)v); }
    else if (v >= INT32_MIN && v <= INT32_MAX) { u8(b, 'J'); u32(b, (uint32_t)v); }
    else { u8(b, 0x8a); u8(b, 8); u64(b, (uint64_t)v); }   /* LONG1 */
}
static void p_global(buf *b, const char *m, const char *n)
{
    u8(b, 'c'); put(b, m, strlen(m)); u8(b, '\n'); put(b, n, strlen(n)); u8(b, '\n');
}
static void p_ints(buf *b, int n, const int64_t *v)
{
    u8(b, '(');
    for (int i = 0; i < n; i++) p_int(b, v[i]);
    u8(b, 't');
}
/* torch._utils._rebuild_tensor_v2(storage, off, size, stride, False, OrderedDict()) with
 * the persistent id ('storage', torch.<cls>, key, 'cpu', numel[, None for legacy]) */
static void p_tensor(buf *b, const char *cls, const char *key, int64_t numel, int64_t off, int nd,
                     const int64_t *shape, const int64_t *stride, int legacy)
{
    p_global(b, "torch._utils", "_rebuild_tensor_v2");
    u8(b, '(');
    u8(b, '(');
    p_str(b, "storage");
    p_global(b, "torch", cls);
    p_str(b, key);
    p_str(b, "cpu");
    p_int(b, numel);
    if (legacy) u8(b, 'N');
    u8(b, 't');
    u8(b, 'Q');                      /* BINPERSID */
    p_int(b, off);
    p_ints(b, nd, shape);
    p_ints(b, nd, stride);
    u8(b, 0x89);                     /* NEWFALSE */
    p_global(b, "collections", "OrderedDict");
    u8(b, ')');
    u8(b, 'R');
    u8(b, 't');
    u8(b, 'R');
}
static void p_tensor1(buf *b, const char *cls, const char *key, int64_t numel, int legacy)
{
    int64_t sh[1] = { numel }, st[1] = { 1 };
    p_tensor(b, cls, key, numel, 0, 1, sh, st, legacy);
}

/* ---------------------------------------------------------------- zip and torch.save files */

typedef struct { const char *name; const void *data; size_t len; } zent;

static buf zip(const zent *e, int n)
{
    buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len), lho = (uint32_t)z.n;
        size_t nl = strlen(e[i].name);
        u32(&z, 0x04034b50); u16(&z, 20); u16(&z, 0); u16(&z, 0); u32(&z, 0);
        u32(&z, crc); u32(&z, (uint32_t)e[i].len); u32(&z, (uint32_t)e[i].len);
        u16(&z, (uint32_t)nl); u16(&z, 0);
        put(&z, e[i].name, nl);
        put(&z, e[i].data, e[i].len);
        u32(&cd, 0x02014b50); u16(&cd, 20); u16(&cd, 20); u16(&cd, 0); u16(&cd, 0); u32(&cd, 0);
        u32(&cd, crc); u32(&cd, (uint32_t)e[i].len); u32(&cd, (uint32_t)e[i].len);
        u16(&cd, (uint32_t)nl); u16(&cd, 0); u16(&cd, 0); u16(&cd, 0); u16(&cd, 0); u32(&cd, 0);
        u32(&cd, lho);
        put(&cd, e[i].name, nl);
    }
    uint32_t cdoff = (uint32_t)z.n;
    put(&z, cd.p, cd.n);
    u32(&z, 0x06054b50); u16(&z, 0); u16(&z, 0); u16(&z, (uint32_t)n); u16(&z, (uint32_t)n);
    u32(&z, (uint32_t)cd.n); u32(&z, cdoff); u16(&z, 0);
    bfree(&cd);
    return z;
}

/* archive/data.pkl, archive/version, archive/data/<key> for storage keys "0", "1", ... */
static buf torch_zip(const buf *pkl, int ns, const void *const *data, const size_t *len)
{
    zent e[16];
    char names[16][32];
    int n = 0;
    e[n++] = (zent){ "archive/data.pkl", pkl->p, pkl->n };
    for (int i = 0; i < ns; i++) {
        snprintf(names[i], sizeof names[i], "archive/data/%d", i);
        e[n++] = (zent){ names[i], data[i], len[i] };
    }
    e[n++] = (zent){ "archive/version", "3\n", 2 };
    return zip(e, n);
}

/* the legacy format: magic, protocol 1001, sys_info, the object, keys, storages */
static buf torch_legacy(const buf *obj, int ns, const void *const *data, const size_t *len, const int64_t *count)
{
    static const uint8_t magic[10] = { 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };
    buf b = {0};
    p_proto(&b, 2); u8(&b, 0x8a); u8(&b, 10); put(&b, magic, 10); u8(&b, '.');
    p_proto(&b, 2); u8(&b, 'M'); u16(&b, 1001); u8(&b, '.');
    p_proto(&b, 2); u8(&b, '}'); u8(&b, '('); p_str(&b, "protocol_version"); u8(&b, 'M'); u16(&b, 1001);
    p_str(&b, "little_endian"); u8(&b, 0x88); u8(&b, 'u'); u8(&b, '.');
    put(&b, obj->p, obj->n);
    p_proto(&b, 2); u8(&b, ']'); u8(&b, '(');
    for (int i = 0; i < ns; i++) { char k[16]; snprintf(k, sizeof k, "%d", i); p_str(&b, k); }
    u8(&b, 'e'); u8(&b, '.');
    for (int i = 0; i < ns; i++) { u64(&b, (uint64_t)count[i]); put(&b, data[i], len[i]); }
    return b;
}

static void save_buf(const char *target, const char *name, buf *b, int keep)
{
    save(target, name, b->p, b->n);
    if (!keep) bfree(b);
}

/* ---------------------------------------------------------------- torch.save seeds */

/* a tiny MetaSyn file: T = 2 tables, B = 3; lengths [[1,0,2],[2,1,0]] */
static const int32_t ms_idx[6] = { 0, 3, 1, 2, 2, 0 };
static const int64_t ms_off[7] = { 0, 1, 1, 3, 5, 6, 6 };
static const int32_t ms_len[6] = { 1, 0, 2, 2, 1, 0 };

static buf metasyn_pickle(int legacy)
{
    buf p = {0};
    int64_t lsh[2] = { 2, 3 }, lst[2] = { 3, 1 };
    p_proto(&p, 2);
    p_tensor1(&p, "IntStorage", "0", 6, legacy);
    p_tensor1(&p, "LongStorage", "1", 7, legacy);
    p_tensor(&p, "IntStorage", "2", 6, 0, 2, lsh, lst, legacy);
    u8(&p, 0x87);   /* TUPLE3 */
    u8(&p, '.');
    return p;
}

/* the MetaSyn tuple: a pickle, zip (plain and gzip) and legacy files */
static void metasyn_seeds(void)
{
    const void *d[3] = { ms_idx, ms_off, ms_len };
    size_t l[3] = { sizeof ms_idx, sizeof ms_off, sizeof ms_len };
    int64_t cnt[3] = { 6, 7, 6 };

    buf p = metasyn_pickle(0);
    save("pickle", "metasyn.pkl", p.p, p.n);
    buf z = torch_zip(&p, 3, d, l);
    save("torchsave", "metasyn-zip.pt", z.p, z.n);
    save("convert", "metasyn-zip.pt", z.p, z.n);
    buf g = gzip(&z);
    save("torchsave", "metasyn-zip.pt.gz", g.p, g.n);
    save("convert", "metasyn-zip.pt.gz", g.p, g.n);
    bfree(&g);
    bfree(&z);
    bfree(&p);

    p = metasyn_pickle(1);
    buf lg = torch_legacy(&p, 3, d, l, cnt);
    save("torchsave", "metasyn-legacy.pt", lg.p, lg.n);
    save("convert", "metasyn-legacy.pt", lg.p, lg.n);
    bfree(&lg);
    bfree(&p);
}

/* the prototype's dict: {'lS_offsets': [o0, o1], 'lS_indices': [i0, i1]}, offsets with
   the table's total (B + 1 entries), int64; indices int32 */
static void prototype_seeds(void)
{
    static const int64_t po[8] = { 0, 1, 1, 3, 0, 2, 3, 3 };
    static const int32_t pi[6] = { 4, 0, 1, 1, 2, 0 };
    buf p = {0};
    p_proto(&p, 2);
    u8(&p, '}'); u8(&p, '(');
    p_str(&p, "lS_offsets");
    u8(&p, ']'); u8(&p, '(');
    int64_t sh4[1] = { 4 }, st1[1] = { 1 }, sh3[1] = { 3 };
    p_tensor(&p, "LongStorage", "0", 8, 0, 1, sh4, st1, 0);
    p_tensor(&p, "LongStorage", "0", 8, 4, 1, sh4, st1, 0);   /* a view into one storage */
    u8(&p, 'e');
    p_str(&p, "lS_indices");
    u8(&p, ']'); u8(&p, '(');
    p_tensor(&p, "IntStorage", "1", 6, 0, 1, sh3, st1, 0);
    p_tensor(&p, "IntStorage", "1", 6, 3, 1, sh3, st1, 0);
    u8(&p, 'e');
    u8(&p, 'u'); u8(&p, '.');
    save("pickle", "prototype.pkl", p.p, p.n);
    const void *pd[2] = { po, pi };
    size_t pl[2] = { sizeof po, sizeof pi };
    buf z = torch_zip(&p, 2, pd, pl);
    save("torchsave", "prototype.pt", z.p, z.n);
    save("convert", "prototype.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);
}

/* strides, an offset, a 0-dim scalar, float16 and float64, v3 with a dtype */
static void strided_seed(void)
{
    static const uint16_t h[6] = { 0x3c00, 0xc000, 0x7c00, 0x0001, 0x7e00, 0x8000 };
    static const double f8[4] = { 1.5, -2.25, 1e300, -0.0 };
    int64_t s23[2] = { 2, 3 }, t13[2] = { 1, 2 }, s2[1] = { 2 }, t2[1] = { 2 }, st1[1] = { 1 };
    buf p = {0};
    p_proto(&p, 2);
    u8(&p, '(');
    p_tensor(&p, "HalfStorage", "0", 6, 0, 2, s23, t13, 0);     /* transposed */
    p_tensor(&p, "DoubleStorage", "1", 4, 1, 1, s2, t2, 0);     /* offset and stride 2 */
    p_tensor(&p, "DoubleStorage", "1", 4, 3, 0, s2, t2, 0);     /* a scalar */
    p_global(&p, "torch._utils", "_rebuild_tensor_v3");
    u8(&p, '('); u8(&p, '('); p_str(&p, "storage"); p_global(&p, "torch", "UntypedStorage"); p_str(&p, "2");
    p_str(&p, "cpu"); p_int(&p, 12); u8(&p, 't'); u8(&p, 'Q'); p_int(&p, 0); p_ints(&p, 1, s23);
    p_ints(&p, 1, st1); u8(&p, 0x89); p_global(&p, "collections", "OrderedDict"); u8(&p, ')'); u8(&p, 'R');
    p_global(&p, "torch", "int16"); u8(&p, 't'); u8(&p, 'R');
    u8(&p, 'l'); u8(&p, '.');   /* LIST */
    static const uint8_t bytes12[12] = { 1, 0, 0xff, 0xff, 0, 0x80, 0xff, 0x7f, 9, 9, 9, 9 };
    const void *sd[3] = { h, f8, bytes12 };
    size_t sl[3] = { sizeof h, sizeof f8, sizeof bytes12 };
    buf z = torch_zip(&p, 3, sd, sl);
    save("torchsave", "strided.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);
}

/* ---- hostile: expanded data tensors (stride 0): a million tables of batch 1, and one
   table of batch 2^31 */
static void stride0_seeds(void)
{
    static const int32_t zero32[1] = { 0 };
    static const int64_t zero64[1] = { 0 };
    const void *zd[3] = { zero32, zero64, zero32 };
    size_t zl[3] = { 0, 8, 4 };
    int64_t e0[1] = { 0 }, s0[1] = { 0 }, s00[2] = { 0, 0 }, st1[1] = { 1 };
    int64_t osh[1] = { 1000001 }, lsh[2] = { 1000000, 1 };
    buf p = {0};
    p_proto(&p, 2);
    p_tensor(&p, "IntStorage", "0", 0, 0, 1, e0, st1, 0);          /* no indices */
    p_tensor(&p, "LongStorage", "1", 1, 0, 1, osh, s0, 0);         /* offsets: 0 repeated */
    p_tensor(&p, "IntStorage", "2", 1, 0, 2, lsh, s00, 0);         /* lengths: 0 repeated */
    u8(&p, 0x87); u8(&p, '.');
    buf z = torch_zip(&p, 3, zd, zl);
    save("convert", "stride0-tables.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);

    int64_t bsh[1] = { ((int64_t)1 << 31) + 1 }, blsh[2] = { 1, (int64_t)1 << 31 };
    p_proto(&p, 2);
    p_tensor(&p, "IntStorage", "0", 0, 0, 1, e0, st1, 0);
    p_tensor(&p, "LongStorage", "1", 1, 0, 1, bsh, s0, 0);
    p_tensor(&p, "IntStorage", "2", 1, 0, 2, blsh, s00, 0);
    u8(&p, 0x87); u8(&p, '.');
    z = torch_zip(&p, 3, zd, zl);
    save("convert", "stride0-batch.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);
}

/* ---- hostile: one stored table referenced a thousand times (memo BINPUT/BINGET) */
static void shared_storage_seed(void)
{
    int32_t many[1024];
    for (int i = 0; i < 1024; i++) many[i] = (i * 37) % 1000;
    static const int64_t one_off[2] = { 0, 1024 };
    int64_t sh2[1] = { 2 }, sh1024[1] = { 1024 }, st1[1] = { 1 };
    buf p = {0};
    p_proto(&p, 2);
    u8(&p, '}'); u8(&p, '(');
    p_str(&p, "lS_offsets");
    u8(&p, ']'); u8(&p, '(');
    p_tensor(&p, "LongStorage", "0", 2, 0, 1, sh2, st1, 0);
    u8(&p, 'q'); u8(&p, 1);                                          /* BINPUT 1 */
    for (int i = 1; i < 1000; i++) { u8(&p, 'h'); u8(&p, 1); }       /* BINGET 1 */
    u8(&p, 'e');
    p_str(&p, "lS_indices");
    u8(&p, ']'); u8(&p, '(');
    p_tensor(&p, "IntStorage", "1", 1024, 0, 1, sh1024, st1, 0);
    u8(&p, 'q'); u8(&p, 2);
    for (int i = 1; i < 1000; i++) { u8(&p, 'h'); u8(&p, 2); }
    u8(&p, 'e');
    u8(&p, 'u'); u8(&p, '.');
    const void *md[2] = { one_off, many };
    size_t ml[2] = { sizeof one_off, sizeof many };
    buf z = torch_zip(&p, 2, md, ml);
    save("convert", "shared-storage.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);
}

/* ---- hostile: 2^20 paths to one tensor through 20 levels of shared tuples */
static void dag_seeds(void)
{
    static const int32_t four[4] = { 1, 2, 3, 4 };
    int64_t sh4b[1] = { 4 }, st1[1] = { 1 };
    buf p = {0};
    p_proto(&p, 2);
    p_tensor(&p, "IntStorage", "0", 4, 0, 1, sh4b, st1, 0);
    for (int i = 0; i < 20; i++) { u8(&p, '2'); u8(&p, 0x86); }      /* DUP, TUPLE2 */
    u8(&p, '.');
    save("pickle", "dag.pkl", p.p, p.n);
    const void *fd4[1] = { four };
    size_t fl4[1] = { sizeof four };
    buf z = torch_zip(&p, 1, fd4, fl4);
    save("torchsave", "dag-tensors.pt", z.p, z.n);
    bfree(&z);
    bfree(&p);
}

/* pickles of other protocols: 0 (text opcodes), 4 (FRAME, MEMOIZE, STACK_GLOBAL) */
static void protocol_seeds(void)
{
    static const char text[] =
        "(dp0\nVname\np1\nVvalue\np2\nsVn\np3\nI42\nsVf\np4\nF-1.5\nsVl\np5\n(lp6\nL12345678901234567890L\n"
        "aI01\naNasg3\ng1\ns.";
    save("pickle", "protocol0.pkl", text, sizeof text - 1);
    buf p = {0};
    p_proto(&p, 4);
    u8(&p, 0x95); u64(&p, 0);   /* FRAME, length patched below */
    size_t fstart = p.n;
    u8(&p, 0x8c); u8(&p, 12); put(&p, "torch._utils", 12); u8(&p, 0x94);
    u8(&p, 0x8c); u8(&p, 6); put(&p, "thing1", 6); u8(&p, 0x94);
    u8(&p, 0x93); u8(&p, 0x94);                                      /* STACK_GLOBAL, MEMOIZE */
    u8(&p, '('); u8(&p, 'G'); { uint8_t be[8] = { 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18 }; put(&p, be, 8); }
    u8(&p, 0x8a); u8(&p, 9); { uint8_t big[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 0x80 }; put(&p, big, 9); }
    u8(&p, 'C'); u8(&p, 3); put(&p, "abc", 3);                         /* SHORT_BINBYTES */
    u8(&p, 0x88); u8(&p, 'N'); u8(&p, 'M'); u16(&p, 65535);
    u8(&p, 't'); u8(&p, 0x94); u8(&p, 'R'); u8(&p, 'h'); u8(&p, 0); u8(&p, 0x86); u8(&p, '.');
    uint64_t flen = p.n - fstart;
    for (int i = 0; i < 8; i++) p.p[fstart - 8 + (size_t)i] = (uint8_t)(flen >> (8 * i));
    save("pickle", "protocol4.pkl", p.p, p.n);
    bfree(&p);
}

static void torch_seeds(void)
{
    metasyn_seeds();
    prototype_seeds();
    strided_seed();
    stride0_seeds();
    shared_storage_seed();
    dag_seeds();
    protocol_seeds();
}

/* ---------------------------------------------------------------- streams and models */

/* Stream seeds start with the mode byte of fuzz.h: 01 + the stream (NAME.ast), and
 * 00 + its raw msgpack records (NAME.msgpack). Returns the stream's bytes. */
static int64_t header_run_id;   /* set: the header names this run (as-rl's checkpoints) */

static buf stream_file(const char *target, const char *name, void (*fill)(as_writer *))
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.%s.tmp", outdir, name);
    as_writer *w = as_writer_open(path, 1, 0);   /* level 1: a small window, quick to fuzz */
    if (header_run_id) as_rl_log_header(w, 0, NULL, header_run_id);
    else as_writer_header(w, "mkcorpus", 0, NULL);
    fill(w);
    as_writer_close(w);
    buf s = {0}, seed = {0}, raw = {0};
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    uint8_t tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) put(&s, tmp, r);
    fclose(f);
    as_reader *rd = as_reader_open(path);
    as_record rec;
    u8(&raw, 0);
    while (as_reader_next(rd, &rec) == 1) put(&raw, rec.raw, rec.rawlen);
    as_reader_close(rd);
    unlink(path);
    char nm[256];
    u8(&seed, 1);
    put(&seed, s.p, s.n);
    snprintf(nm, sizeof nm, "%s.ast", name);
    save_buf(target, nm, &seed, 0);
    snprintf(nm, sizeof nm, "%s.msgpack", name);
    save_buf(target, nm, &raw, 0);
    return s;
}

static void fill_tables(as_writer *w)
{
    static const int64_t off[4] = { 0, 1, 1, 3 };
    static const int32_t idx[3] = { 2, 0, 7 };
    as_write_table(w, 0, 8, 3, 16, off, idx, AS_DT_I32, "seed");
    static const int64_t off2[3] = { 0, 2, 4 };
    static const int64_t idx2[4] = { 1, 1, 0, 5 };
    as_write_table(w, 1, 6, 2, 32, off2, idx2, AS_DT_I64, "seed");
    /* a record of another kind with nested values and small arrays of several dtypes */
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 6);
    as_pack_kv_str(pk, "kind", "other");
    double v[3] = { 0.5, -1, 1e300 };
    as_pack_kv_f64_list(pk, "list", v, 3);
    uint16_t hf[4] = { 0x3c00, 0x7c00, 0xfc00, 0x7e00 };
    int64_t s22[2] = { 2, 2 }, s3[1] = { 3 };
    as_pack_kv_array(pk, "half", AS_DT_F16, hf, 2, s22);
    uint64_t u[3] = { 0, 1, UINT64_MAX };
    as_pack_kv_array(pk, "u64", AS_DT_U64, u, 1, s3);
    int8_t i8[3] = { -128, 0, 127 };
    as_pack_kv_array(pk, "i8", AS_DT_I8, i8, 1, s3);
    as_pack_str(pk, "nested");
    msgpack_pack_map(pk, 1);
    as_pack_kv_i64(pk, "x", -1);
    as_writer_end_record(w);
}

static void fill_model(as_writer *w)
{
    as_costmodel *m = as_costmodel_new(1, 1, 1, 3);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->y_scale = 1;
    for (int i = 0; i < 3; i++) { in->mean[i] = 0; in->std[i] = 1; }
    as_costmodel_write(m, w);
    as_costmodel_free(m);
}

/* a policy record of the smallest dims (the layout of lib/rl/policy.c) */
static void pack_policy(msgpack_packer *pk)
{
    int d[10] = { AS_NFEATURES, 1, 1, 1, 2, 1, 1, 1, 1, 1 };   /* f e1 e2 sd h cd p1 p2 p3 vh */
    int f = d[0], e1 = d[1], e2 = d[2], sd = d[3], h = d[4], cd = d[5], p1 = d[6], p2 = d[7], p3 = d[8], vh = d[9];
    int64_t n = (int64_t)e1 * f + e1 + e2 * e1 + e2 + 2 * sd + 4LL * h * (e2 + sd) + 4LL * h * h + 4LL * h +
                4LL * h * h + 4LL * h * h + 4LL * h + (int64_t)cd * AS_POLICY_NCF + cd + (int64_t)p1 * 3 * h + p1 +
                (int64_t)p2 * p1 + p2 + (int64_t)p3 * p2 + p3 + p3 + 1 + (int64_t)vh * h + vh + vh + 1;
    float *prm = malloc((size_t)n * sizeof *prm);
    for (int64_t i = 0; i < n; i++) prm[i] = (float)((i * 7) % 13 - 6) / 16.0f;
    msgpack_pack_map(pk, 12);
    as_pack_kv_str(pk, "kind", "policy");
    as_pack_kv_str(pk, "policy", "autoshard-lstm");
    as_pack_kv_i64(pk, "format_version", AS_POLICY_VERSION);
    as_pack_str(pk, "features");
    msgpack_pack_array(pk, AS_NFEATURES);
    for (int i = 0; i < AS_NFEATURES; i++) as_pack_str(pk, as_costmodel_feature_name(i));
    as_pack_kv_str(pk, "transform", "log1p");
    double mean[3] = { 1, 2, 3 }, sdv[3] = { 1, 1, 0.5 };
    as_pack_kv_f64_list(pk, "norm_mean", mean, 3);
    as_pack_kv_f64_list(pk, "norm_std", sdv, 3);
    as_pack_str(pk, "dims");
    msgpack_pack_array(pk, 10);
    for (int i = 0; i < 10; i++) msgpack_pack_int(pk, d[i]);
    as_pack_kv_i64(pk, "cost_features", AS_POLICY_NCF);
    as_pack_kv_i64(pk, "nparams", n);
    as_pack_kv_array(pk, "params", AS_DT_F32, prm, 1, &n);
    as_pack_kv_i64(pk, "seed", 5);
    free(prm);
}

/* ... and its cost model */
static void fill_policy(as_writer *w)
{
    pack_policy(as_writer_pk(w));
    as_writer_end_record(w);
    fill_model(w);
}

/* ---------------------------------------------------------------- checkpoints */

/* a copy of map o into pk with the value of field key (present) replaced by v */
static void repack(msgpack_packer *pk, const msgpack_object *o, const char *key, msgpack_object v)
{
    msgpack_pack_map(pk, o->via.map.size);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        msgpack_pack_object(pk, kv->key);
        msgpack_pack_object(pk, as_obj_streq(&kv->key, key) ? v : kv->val);
    }
}

static as_record *ck_recs;   /* the checkpoint of checkpoint_seeds, its wall times fixed */
static int ck_n;

/* the records of the checkpoint, one of them changed: record `at` (-1: none) with field key
 * set to v, record `dup` (-1: none) written twice */
static void fill_ck(as_writer *w, int at, const char *key, msgpack_object v, int dup)
{
    for (int i = 0; i < ck_n; i++) {
        if (i == 0) continue;   /* the header: stream_file's */
        if (i == at) {
            repack(as_writer_pk(w), &ck_recs[i].obj, key, v);
            as_writer_end_record(w);
        } else as_writer_raw(w, ck_recs[i].raw, ck_recs[i].rawlen);
        if (i == dup) as_writer_raw(w, ck_recs[i].raw, ck_recs[i].rawlen);
    }
}
static int ck_rec(const char *kind)
{
    for (int i = 0; i < ck_n; i++) if (as_rec_is(&ck_recs[i], kind)) return i;
    abort();
}
static const msgpack_object none = { .type = MSGPACK_OBJECT_NIL };
static void fill_ck_plain(as_writer *w) { fill_ck(w, -1, "", none, -1); }
static void fill_ck_two_buffers(as_writer *w) { fill_ck(w, -1, "", none, ck_rec("rl_buffer")); }
static void fill_ck_neg_episodes(as_writer *w)
{
    msgpack_object v = { .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -4 };
    fill_ck(w, ck_rec("policy"), "episodes", v, -1);
}

/* the smallest policy, read back from pack_policy's record */
static as_policy *checkpoint_policy(void)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_policy(&pk);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    as_policy *pol = NULL;
    char err[512];
    if (msgpack_unpack_next(&u, sb.data, sb.size, NULL) != MSGPACK_UNPACK_SUCCESS || as_policy_read(&pol, &u.data, err, sizeof err))
        abort();
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
    return pol;
}

/* as-rl halted at episode 4 of 8, its checkpoint written to path */
static void train_checkpoint(const char *path)
{
    as_policy *pol = checkpoint_policy();
    char err[512];
    as_costmodel *cm = as_costmodel_new(1, 1, 1, 3);
    as_costmodel_info *ci = as_costmodel_meta(cm);
    ci->y_scale = 1;
    for (int i = 0; i < 3; i++) { ci->mean[i] = 0; ci->std[i] = 100; }
    as_features f[FZ_T];
    const as_features *ft[FZ_NTASK * FZ_TASK_T];
    as_rl_task tasks[FZ_NTASK];
    fz_rl_data(f, ft, tasks);
    static const int64_t seed_off[3] = { 0, 2, 3 }, seed_pos[3] = { 0, 1, 4 };
    static const double seed_cost[2] = { 1.5, 0.7 };
    as_rl_cfg c;
    memset(&c, 0, sizeof c);
    c.episodes = 8; c.halt_after = 4; c.actors = 1; c.seed = 1;
    c.lr = 1e-3; c.entropy = 0.01; c.baseline = 0.5; c.clip = 40; c.batch = 2;
    c.cost_steps = 2; c.cost_batch = 4; c.buffer = 8; c.select_every = 2; c.select_tasks = 2;
    c.nseed = 2; c.seed_off = seed_off; c.seed_pos = seed_pos; c.seed_cost = seed_cost;
    c.feat = f; c.nfeat = FZ_T; c.ckpt = path; c.run_id = 12345;
    if (as_rl_train(pol, cm, tasks, FZ_NTASK, &c, NULL, err, sizeof err) != 1) { fprintf(stderr, "mkcorpus: %s\n", err); exit(3); }
    as_policy_free(pol);
    as_costmodel_free(cm);
}

/* the checkpoint's records as raw msgpack, wall times fixed; the file removed */
static void read_checkpoint(const char *path, buf *raw)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    as_reader *r = as_reader_open(path);
    as_record rec;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_object wall = { .type = MSGPACK_OBJECT_FLOAT64, .via.f64 = 0.25 };
    while (as_reader_next(r, &rec) == 1) {
        msgpack_sbuffer_clear(&sb);
        if (as_obj_get(&rec.obj, "wall_s")) repack(&pk, &rec.obj, "wall_s", wall);
        else msgpack_pack_object(&pk, rec.obj);
        put(raw, sb.data, sb.size);
    }
    as_reader_close(r);
    unlink(path);
    msgpack_sbuffer_destroy(&sb);
}

/* ck_recs and ck_n: the records parsed again from the copy, which outlives the reader;
 * returns the unpacked objects they point into */
static msgpack_unpacked *parse_checkpoint(const buf *raw)
{
    size_t off = 0;
    msgpack_unpacked *objs = NULL;
    while (off < raw->n) {
        size_t at = off;
        objs = realloc(objs, (size_t)(ck_n + 1) * sizeof *objs);
        ck_recs = realloc(ck_recs, (size_t)(ck_n + 1) * sizeof *ck_recs);
        msgpack_unpacked_init(&objs[ck_n]);
        if (msgpack_unpack_next(&objs[ck_n], (const char *)raw->p, raw->n, &off) != MSGPACK_UNPACK_SUCCESS) abort();
        as_record *cr = &ck_recs[ck_n];
        memset(cr, 0, sizeof *cr);
        cr->obj = objs[ck_n].data;
        cr->raw = (const char *)raw->p + at;
        cr->rawlen = off - at;
        const msgpack_object *k = as_obj_get(&cr->obj, "kind");
        cr->kind = k->via.str.ptr;
        cr->kindlen = k->via.str.size;
        ck_n++;
    }
    return objs;
}

/* a checkpoint of as-rl: the smallest policy and cost model, halted at episode 4 of 8 on the
 * tasks of fuzz_rl.h (batch 2, model selection every 2, two measured shards in the buffer);
 * its wall times fixed so the seeds are reproducible. Regression seeds: two rl_buffer
 * records (a heap overflow once) and negative episodes (a negative task index) */
static void checkpoint_seeds(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.ckpt.tmp", outdir);
    train_checkpoint(path);
    /* its records, wall times fixed */
    buf raw = {0};
    read_checkpoint(path, &raw);
    msgpack_unpacked *objs = parse_checkpoint(&raw);
    header_run_id = 12345;
    buf b = stream_file("checkpoint", "ckpt", fill_ck_plain);
    bfree(&b);
    b = stream_file("checkpoint", "two-buffers", fill_ck_two_buffers);
    bfree(&b);
    b = stream_file("checkpoint", "neg-episodes", fill_ck_neg_episodes);
    bfree(&b);
    header_run_id = 0;
    for (int i = 0; i < ck_n; i++) msgpack_unpacked_destroy(&objs[i]);
    free(objs);
    free(ck_recs);
    bfree(&raw);
}

static void stream_seeds(void)
{
    buf p = stream_file("policy", "policy", fill_policy);
    buf m = stream_file("policy", "model", fill_model);
    bfree(&p);
    bfree(&m);
    buf s = stream_file("stream", "tables", fill_tables);
    /* two streams concatenated, a truncated one, a skippable frame before a stream */
    buf c = {0};
    u8(&c, 1);
    put(&c, s.p, s.n);
    put(&c, s.p, s.n);
    save_buf("stream", "concat.ast", &c, 0);
    u8(&c, 1);
    put(&c, s.p, s.n * 2 / 3);
    save_buf("stream", "truncated.ast", &c, 0);
    u8(&c, 1);
    u32(&c, 0x184d2a50); u32(&c, 4); u32(&c, 0xdeadbeef);
    put(&c, s.p, s.n);
    save_buf("stream", "skippable.ast", &c, 0);
    bfree(&s);
}

/* ---------------------------------------------------------------- JSON seeds */

static void save_text(const char *target, const char *name, const char *s) { save(target, name, s, strlen(s)); }

/* model configs (as-convert --config): a small valid one with every field, and rejected ones */
static void modelcfg_seeds(void)
{
    save_text("modelcfg", "small.json",
              "{\"name\": \"m\", \"source\": \"hand-made\", \"module_path\": \"sparse.ebc\",\n"
              " \"topology\": {\"world_size\": 4, \"local_size\": 2, \"hbm_gib\": 16, \"batch_size_per_rank\": 64,\n"
              "              \"optimizer\": \"rowwise_adagrad\", \"pipeline\": \"train_sparse_dist\"},\n"
              " \"tables\": [{\"name\": \"a\", \"num_embeddings\": 1000, \"embedding_dim\": 16, \"feature_names\": [\"f0\", \"f1\"],\n"
              "             \"data_type\": \"FP16\", \"pooling_factor\": 3, \"bag\": \"fixed\", \"skew\": 1.2},\n"
              "            {\"name\": \"b\", \"num_embeddings\": 7, \"embedding_dim\": 4, \"pooling_factor\": 0.5, \"skew\": 0}]}\n");
    save_text("modelcfg", "dup-name.json",
              "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1},\n"
              " \"tables\": [{\"name\": \"a\", \"num_embeddings\": 1, \"embedding_dim\": 1},"
              " {\"name\": \"a\", \"num_embeddings\": 2, \"embedding_dim\": 2}]}\n");
    save_text("modelcfg", "bad-fields.json",
              "{\"topology\": {\"world_size\": 6, \"local_size\": 4, \"batch_size_per_rank\": 1},\n"
              " \"tables\": [{\"name\": \"a\", \"num_embedding\": -1, \"embedding_dim\": 0, \"data_type\": \"fp64\"}]}\n");
}

/* JSON text for lib/core/jsonparse.c: a configuration, every kind of value and escape, the
 * deepest nesting allowed, an object large enough for the sorted check of repeated keys,
 * and a few rejected ones */
static void json_seeds(void)
{
    save_text("jsonparse", "config.json",
              "{\n"
              "  \"schema\": \"autoshard\",\n"
              "  \"version\": 1,\n"
              "  \"device\": \"auto\",\n"
              "  \"shards\": 8,\n"
              "  \"tables\": [{\"id\": 0, \"rows\": 1000000, \"dim\": 64, \"pieces\": null},\n"
              "             {\"id\": 1, \"rows\": 5000, \"dim\": 128, \"pieces\": [[0, 64, 0, 5000], [64, 128, 0, 5000]]}],\n"
              "  \"lr\": 1e-3, \"mem_cap\": 8.5E9, \"seed\": -17,\n"
              "  \"flags\": {\"progress\": false, \"quiet\": true}\n"
              "}\n");
    save_text("jsonparse", "values.json",
              "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 9223372036854775808,\n"
              " 18446744073709551616, 1.5, -2.5e-3, 6.02E+23, 1e-400, 0.1, 123456789012345678901234567890,\n"
              " true, false, null, \"\", \"plain\", \"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\n"
              " \"caf\\u00e9 \\u20AC \\uD83D\\uDE00 \\u0000 \\uDBFF\\uDFFF\",\n"
              " \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \x7f\",\n"
              " {}, [], {\"\": [{}]}, {\"a\\u0000\": 1, \"a\": 2}]");
    /* nesting 64 deep, arrays and objects alternating */
    buf b = {0};
    for (int k = 0; k < 64; k++) put(&b, k % 2 ? "{\"d\":" : "[", k % 2 ? 5 : 1);
    put(&b, "1", 1);
    for (int k = 63; k >= 0; k--) put(&b, k % 2 ? "}" : "]", 1);
    save_buf("jsonparse", "deep.json", &b, 0);
    /* 40 keys (over the 16 that are compared pairwise) */
    char t[32];
    u8(&b, '{');
    for (int k = 0; k < 40; k++) {
        int w = snprintf(t, sizeof t, "%s\"key%d\": %d", k ? ", " : "", k, k * 7 - 100);
        put(&b, t, (size_t)w);
    }
    u8(&b, '}');
    save_buf("jsonparse", "keys.json", &b, 0);
    /* rejected: a trailing comma, a repeated key, a lone surrogate, a leading zero */
    save_text("jsonparse", "bad-comma.json", "{\"a\": [1, 2,], \"b\": 3}");
    save_text("jsonparse", "bad-dup.json", "{\"name\": 1,\n \"x\": {\"name\": 2}, \"name\": 3}");
    save_text("jsonparse", "bad-surrogate.json", "[\"\\uD800\\u0041\"]");
    save_text("jsonparse", "bad-number.json", "[01, +1, .5, 1., NaN]");
}

/* as-plan --import (fuzz_trplanread.c's tasks: task 5 of t1 (100 x 4, row blocks of 50 and 25
 * rows), emb_b (100 x 8) and t3 (10 x 2) on 2 shards; task 6 of t1 and t3 on 4): every
 * sharding type, data_parallel, a label, 2D ranks, several documents a file, and rejected
 * ones (a device that is not the rank's, local_size 2^62, a gap, a table of empty shards only,
 * a truncated line) */
#define TR_SHARD(r0, c0, rows, cols, rank, dev) \
    "{\"shard_offsets\":[" #r0 "," #c0 "],\"shard_sizes\":[" #rows "," #cols "],\"placement\":\"rank:" #rank "/cuda:" #dev "\"}"
#define TR_TW(name, rows, cols, rank, dev) \
    "\"" name "\":{\"sharding_type\":\"table_wise\",\"compute_kernel\":\"fused\",\"ranks\":[" #rank "],\"shards\":[" \
    TR_SHARD(0, 0, rows, cols, rank, dev) "]}"
#define TR_DOC5(rest) "{\"task\":5,\"alg\":\"torchrec-own\",\"feasible\":true,\"world_size\":2,\"local_size\":8," \
    "\"module\":\"\",\"plan\":{\"\":{" rest "}}}\n"
static void trplanread_seeds(void)
{
    const char *tw5 = TR_DOC5(TR_TW("t1", 100, 4, 1, 1) "," TR_TW("emb_b", 100, 8, 0, 0) "," TR_TW("t3", 10, 2, 1, 1));
    save_text("trplanread", "table-wise.json", tw5);
    save_text("trplanread", "column-dp.json",
              TR_DOC5("\"t1\":{\"sharding_type\":\"column_wise\",\"compute_kernel\":\"fused\",\"ranks\":[1,0],\"shards\":["
                      TR_SHARD(0, 0, 100, 2, 1, 1) "," TR_SHARD(0, 2, 100, 2, 0, 0) "]},"
                      "\"emb_b\":{\"sharding_type\":\"data_parallel\",\"compute_kernel\":\"dense\",\"ranks\":[0,1],\"shards\":[]},"
                      TR_TW("t3", 10, 2, 1, 1)));
    const char *rw6 = "{\"task\":6,\"world_size\":4,\"local_size\":2,\"dmp_collection\":{\"world_size\":8,"
                      "\"sharding_group_size\":4,\"replicas\":2,\"shard_ranks\":[[0,1],[2,3],[4,5],[6,7]]},"
                      "\"plan\":{\"\":{\"t1\":{\"sharding_type\":\"row_wise\",\"compute_kernel\":\"fused\",\"ranks\":[0,1,2,3],"
                      "\"shards\":[" TR_SHARD(0, 0, 25, 4, 0, 0) "," TR_SHARD(25, 0, 25, 4, 1, 1) "," TR_SHARD(50, 0, 25, 4, 2, 0) ","
                      TR_SHARD(75, 0, 25, 4, 3, 1) "]}," TR_TW("t3", 10, 2, 3, 1) "}}}\n";
    save_text("trplanread", "row-wise-2d.json", rw6);
    save_text("trplanread", "grid.json",
              "{\"task\":5,\"world_size\":2,\"plan\":{\"\":{\"t1\":{\"sharding_type\":\"grid_shard\",\"ranks\":[0,1,1,0,1],"
              "\"shards\":[" TR_SHARD(0, 0, 50, 2, 0, 0) "," TR_SHARD(0, 2, 50, 2, 1, 1) "," TR_SHARD(50, 0, 50, 2, 1, 1) ","
              TR_SHARD(50, 2, 50, 2, 0, 0) "," TR_SHARD(100, 0, 0, 4, 1, 1) "]}," TR_TW("emb_b", 100, 8, 0, 0) ","
              TR_TW("t3", 10, 2, 0, 0) "}}}\n");
    char both[4096];
    snprintf(both, sizeof both, "%s\n%s", tw5, rw6);
    save_text("trplanread", "two-docs.json", both);
    save_text("trplanread", "bad-device.json",
              TR_DOC5(TR_TW("t1", 100, 4, 1, 0) "," TR_TW("emb_b", 100, 8, 0, 0) "," TR_TW("t3", 10, 2, 1, 1)));
    save_text("trplanread", "bad-local-size.json",
              "{\"task\":5,\"world_size\":2,\"local_size\":4611686018427387904,\"plan\":{\"\":{" TR_TW("t1", 100, 4, 1, 1)
              "," TR_TW("emb_b", 100, 8, 0, 0) "," TR_TW("t3", 10, 2, 1, 1) "}}}\n");
    save_text("trplanread", "bad-gap.json",
              TR_DOC5(TR_TW("t1", 90, 4, 1, 1) "," TR_TW("emb_b", 100, 8, 0, 0) "," TR_TW("t3", 10, 2, 1, 1)));
    /* found by fuzz_trplanread: t1's only shard is empty; it was imported without t1 */
    save_text("trplanread", "bad-empty-table.json",
              TR_DOC5(TR_TW("t1", 100, 0, 1, 1) "," TR_TW("emb_b", 100, 8, 0, 0) "," TR_TW("t3", 10, 2, 1, 1)));
    save_text("trplanread", "bad-truncated.json", "{\"task\":5,\"world_size\":2,\"plan\":{\"\":{\"t1\":{\"sharding_t");
}

/* a plan record's communication charge, good and bad, as records of a stream */
static void fill_comm(as_writer *w)
{
    static const char *const models[] = { NULL, "nvlink8", "1/2,3/4,5/6", " 1e1/0x10, 3/4,5/6", "1/2,3/4", NULL };
    static const double gbps[] = { 600, 0, 0, 0, 0, -5 };
    for (int i = 0; i < 6; i++) {
        msgpack_packer *pk = as_writer_pk(w);
        msgpack_pack_map(pk, models[i] ? 3 : 2);
        as_pack_kv_str(pk, "kind", "plan");
        as_pack_kv_f64(pk, "comm_gbps", gbps[i]);
        if (models[i]) as_pack_kv_str(pk, "comm_model", models[i]);
        as_writer_end_record(w);
    }
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_str(pk, "comm_gbps", "600");
    as_writer_end_record(w);
}

/* --comm-model specs (mode byte 2: the text follows) and plan records' charges (a stream) */
static void comm_seeds(void)
{
    static const struct { const char *name, *spec; } specs[] = {
        { "nvlink8", "nvlink8" }, { "spaced-nvlink8", " nvlink8 " }, { "ab", "10.5/370,10.8/370,15/480" },
        { "ab-spaced", "1/2, 3/4 ,5/6e0" }, { "ab-hex", "0x10/1e1,0/0.001,1e6/1e+06" },
        { "ab-long", "0000000000000000000000000000000000000000000000000000000000000000000000000000000000001/2,3/4,5/6" },
        { "too-long", "1.2345678901234567e-5/2.2345678901234567e-5,3.2345678901234567e-5/4.2345678901234567e-5,"
                      "5.2345678901234567e-5/6.2345678901234567e-5" },
        { "bad-sep", "1/100;2/200;3/300" }, { "bad-nan", "nan/1,2/2,3/3" },
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        buf b = {0};
        u8(&b, 2);
        put(&b, specs[i].spec, strlen(specs[i].spec));
        char nm[64];
        snprintf(nm, sizeof nm, "%s.spec", specs[i].name);
        save_buf("comm", nm, &b, 0);
    }
    buf s = stream_file("comm", "records", fill_comm);
    bfree(&s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mkcorpus DIR\n");
        return 2;
    }
    outdir = argv[1];
    mkdir(outdir, 0755);
    torch_seeds();
    stream_seeds();
    checkpoint_seeds();
    json_seeds();
    modelcfg_seeds();
    trplanread_seeds();
    comm_seeds();
    return 0;
}
