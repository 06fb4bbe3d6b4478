/* ptwrite.c - a small torch.save WRITER, for tests and benchmarks only.
 * Dimension letters: B batch, T tables.
 *
 * Writes the synthetic pool of lib/data/synth.h (tables 0..T-1) as a file shaped exactly like
 * PyTorch's own torch.save output, so lib/torch/torchsave.c and torch.load can both read it.
 *
 *   ptwrite metasyn   MetaSyn's layout (dlrm_datasets embedding_bag/ files): a TUPLE
 *                     (indices, offsets, lengths): indices 1-D, every table's indices
 *                     concatenated table-major; offsets 1-D with T*B+1 global entries (table t
 *                     bag b is indices[offsets[t*B+b] : offsets[t*B+b+1]]); lengths [T, B],
 *                     stride (B, 1). Default dtypes as MetaSyn: int32, int64, int32.
 *   ptwrite prototype the AutoShard prototype's processed file (daochenzha/autoshard,
 *                     gen_dlrm_data.py, process_data + main): torch.save of the dict
 *                     {"lS_offsets": [per-table offsets], "lS_indices": [per-table indices]}
 *                     (that key order). process_data slices offsets[t*B : (t+1)*B + 1] and
 *                     subtracts its first element, so each table's offsets tensor has B+1
 *                     entries starting at 0 and ENDING WITH THE TABLE'S TOTAL (DLRM's lS_o
 *                     without the total would be B entries; the prototype keeps it:
 *                     autoshard/bench.py get_data uses batch_size = offsets[0].shape[0] - 1
 *                     and x[1:]). Slicing keeps MetaSyn's dtypes, so the defaults are int64
 *                     offsets and int32 indices; every tensor has its own storage (.cpu()
 *                     of a CUDA slice copies), offset 0.
 *
 * Zip format (default), as PyTorch's PyTorchStreamWriter/miniz writes it:
 *   entries <prefix>/data.pkl, <prefix>/data/<key> (keys "0", "1", ... in the order the
 *   pickler meets the storages, entries written in lexicographic key order like
 *   torch.save's sorted()), <prefix>/version = "3\n", optionally
 *   <prefix>/.data/serialization_id. All STORED; version needed 0; time/date 0; flags 0x0808
 *   (UTF-8 names, bit 3) with crc = 0 and sizes = 0 in the local header and a data descriptor
 *   (16 bytes; 24 with 64-bit sizes when the entry carries a local ZIP64 extra); empty
 *   entries have flags 0x0800 and no descriptor. A local ZIP64 extra (0x0001) is written
 *   like miniz when size >= 0xFFFFFFFF (uncompressed size, then compressed size 0) and/or
 *   the header offset >= 0xFFFFFFFF (offset); then the "FB" (0x4246) extra pads the data to
 *   a 64-byte boundary. Central directory with real crc/sizes (32-bit fields clamped to
 *   0xFFFFFFFF plus a ZIP64 extra holding the big ones), then always the ZIP64 end record
 *   (made by 0x031E, needed 45) and locator, then the classic end record (values clamped to
 *   0xFFFF / 0xFFFFFFFF).
 *
 * Legacy format (--format legacy, torch < 1.6 or _use_new_zipfile_serialization=False):
 *   pickles of the magic number (LONG1), the protocol version 1001 and the sys_info dict,
 *   the object pickle (persistent ids ('storage', torch.XStorage, key, 'cpu', numel, None),
 *   keys look like CPython addresses), the pickled sorted list of keys, then per key an
 *   int64 element count and the raw little-endian bytes.
 *
 * The object pickle is protocol 2 with the memo exactly as Python's pickler fills it
 * (BINPUT after every GLOBAL, string, tuple, list, dict and REDUCE; BINGET for a repeated
 * global or string): each tensor is torch._utils._rebuild_tensor_v2(storage, 0, size,
 * stride, False, collections.OrderedDict()).
 *
 * Memory stays bounded (one table at a time): a first pass generates every table once,
 * writing offsets and lengths (and, unless --regen, the indices) to unlinked temporary
 * files in $TMPDIR; the file is then written in one forward pass (no seeks, so --gzip and
 * standard output work), storages streamed in chunks with zlib's incremental crc32.
 * With --regen the indices are not spilled but generated again (twice the generation time,
 * no temporary copy of the indices).
 */
#include "common.h"
#include "synth.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (1u << 20)

static const char *usage_line =
    "usage: ptwrite metasyn|prototype [options] [-o FILE]\n";

static const char *help_text =
    "Write the synthetic pool (lib/data/synth.h) as a torch.save file, for tests.\n"
    "\n"
    "Commands:\n"
    "  metasyn     MetaSyn's layout: tuple (indices, offsets, lengths); indices 1-D\n"
    "              table-major, offsets T*B+1 global, lengths [T, B]\n"
    "  prototype   the AutoShard prototype's processed data.pt: dict {'lS_offsets':\n"
    "              [T tensors of B+1 offsets from 0], 'lS_indices': [T tensors]}\n"
    "\n"
    "Pool options:\n"
    "  --tables N          tables T (default 856)\n"
    "  --batch B           bags per table B (default 65536)\n"
    "  --seed S            generator seed (default 0)\n"
    "  --row-scale X       multiply every hash size (default 1.0)\n"
    "  --pool-scale Y      multiply every pooling factor (default 1.0)\n"
    "File options:\n"
    "  --format zip|legacy torch.save format (default zip)\n"
    "  --gzip              gzip the whole file (level 1)\n"
    "  --prefix NAME       zip folder of the entries (default archive)\n"
    "  --serialization-id  also write <prefix>/.data/serialization_id (zip)\n"
    "  --indices-dtype int32|int64   (default int32)\n"
    "  --offsets-dtype int64|int32   (default int64)\n"
    "  --lengths-dtype int32|int64   (default int32; metasyn only)\n"
    "  --regen             generate the tables again instead of spilling the indices\n"
    "                      to a temporary file in $TMPDIR\n"
    "  --corrupt KIND      (metasyn) inject exactly one fault:\n"
    "      offsets-first     offsets[0] = 1 (diff(offsets) then disagrees with\n"
    "                        lengths at bag 0 too)\n"
    "      offsets-decrease  one offset in the middle of table 1 (bag B/2) is one less\n"
    "                        than its predecessor (needs T >= 2; diff(offsets) then\n"
    "                        disagrees with lengths around it too)\n"
    "      offsets-last      the last offset is numel(indices) + 1 (and the last\n"
    "                        bag's length disagrees with diff(offsets))\n"
    "      lengths-mismatch  lengths[t][B/2] of table t = 1 (0 if T = 1) is one more\n"
    "                        than diff(offsets)\n"
    "      negative-index    the middle index of the first non-empty table is -1\n"
    "                        -v names the table, bag and position\n"
    "Common options:\n"
    "  -o, --output FILE   write FILE (a temporary name, then rename) instead of stdout\n"
    "      --force         write binary output even to a terminal\n"
    "  -q, --quiet         no messages but errors\n"
    "  -v, --verbose       say what is written and what was corrupted\n"
    "  -h, --help          this help\n"
    "      --version       version\n"
    "\n"
    "Exit status: 0 success, 1 bad data (e.g. offsets overflow int32), 2 usage error,\n"
    "3 environment failure (write error, out of memory).\n";

static _Noreturn void usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void usage_err(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", as_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%sTry 'ptwrite --help' for more information.\n", usage_line);
    exit(AS_EXIT_USAGE);
}

/* ---- little-endian helpers ------------------------------------------------------------ */

static void le16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void le64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

/* ---- output sink: a file or gzip stream, written strictly forward ---------------------- */

typedef struct {
    int fd;
    gzFile gz;
    uint8_t *buf;
    size_t len;
    uint64_t pos;            /* bytes written so far (uncompressed) */
    const char *name;        /* for messages */
} sink;

static void sk_flush(sink *s)
{
    if (!s->len) return;
    if (s->gz) {
        if (gzwrite(s->gz, s->buf, (unsigned)s->len) != (int)s->len) {
            int e; const char *m = gzerror(s->gz, &e);
            as_die(AS_EXIT_ENV, "%s: write error: %s", s->name, e == Z_ERRNO ? strerror(errno) : m);
        }
    } else {
        size_t off = 0;
        while (off < s->len) {
            ssize_t w = write(s->fd, s->buf + off, s->len - off);
            if (w < 0) {
                if (errno == EINTR) continue;
                as_die(AS_EXIT_ENV, "%s: write error: %s", s->name, strerror(errno));
            }
            off += (size_t)w;
        }
    }
    s->len = 0;
}

static void sk_write(sink *s, const void *p, size_t n)
{
    const uint8_t *q = p;
    s->pos += n;
    while (n) {
        size_t k = CHUNK - s->len;
        if (k > n) k = n;
        memcpy(s->buf + s->len, q, k);
        s->len += k; q += k; n -= k;
        if (s->len == CHUNK) sk_flush(s);
    }
}

/* ---- zip writer ------------------------------------------------------------------------ */

typedef struct {
    char *name;
    uint64_t ofs, size;
    uint32_t crc;
    uint16_t flags;
} zent;

typedef struct {
    sink *s;
    zent *e;
    size_t n, cap;
    /* the open entry */
    uint64_t written;
    uint32_t crc;
    int local64;
} zipw;

#define U32MAX 0xFFFFFFFFull

static void zw_begin(zipw *z, const char *name, uint64_t size)
{
    if (z->n == z->cap) {
        z->cap = z->cap ? 2 * z->cap : 64;
        z->e = as_realloc(z->e, z->cap * sizeof *z->e);
    }
    zent *e = &z->e[z->n++];
    size_t nl = strlen(name);
    if (nl > 0xFFFF) as_die(AS_EXIT_USAGE, "entry name too long");
    e->name = as_strdup(name);
    e->ofs = z->s->pos;
    e->size = size;
    e->crc = 0;
    e->flags = size ? 0x0808 : 0x0800;
    z->written = 0;
    z->crc = (uint32_t)crc32(0L, Z_NULL, 0);

    /* local ZIP64 extra, as miniz writes it */
    uint8_t x64[4 + 24];
    size_t x64n = 0;
    int bigsz = size >= U32MAX, bigofs = e->ofs >= U32MAX;
    z->local64 = bigsz || bigofs;
    if (z->local64) {
        x64n = 4;
        if (bigsz) { le64(x64 + x64n, size); le64(x64 + x64n + 8, 0); x64n += 16; }
        if (bigofs) { le64(x64 + x64n, e->ofs); x64n += 8; }
        le16(x64, 0x0001);
        le16(x64 + 2, (uint32_t)(x64n - 4));
    }
    /* "FB" padding so the data starts on a 64-byte boundary (PyTorch's getPadding) */
    uint64_t start = e->ofs + 30 + nl + x64n + 4;
    size_t pad = (size_t)((64 - start % 64) % 64);

    uint8_t h[30];
    le32(h, 0x04034b50);
    le16(h + 4, 0);              /* version needed: miniz writes 0 for STORED */
    le16(h + 6, e->flags);
    le16(h + 8, 0);              /* method STORED */
    le16(h + 10, 0);             /* time */
    le16(h + 12, 0);             /* date */
    le32(h + 14, 0);             /* crc, sizes: in the data descriptor */
    le32(h + 18, 0);
    le32(h + 22, 0);
    le16(h + 26, (uint32_t)nl);
    le16(h + 28, (uint32_t)(x64n + 4 + pad));
    sk_write(z->s, h, 30);
    sk_write(z->s, name, nl);
    if (x64n) sk_write(z->s, x64, x64n);
    uint8_t fb[4 + 64];
    le16(fb, 0x4246);
    le16(fb + 2, (uint32_t)pad);
    memset(fb + 4, 'Z', pad);
    sk_write(z->s, fb, 4 + pad);
    if (z->s->pos % 64) as_die(AS_EXIT_ENV, "internal error: misaligned entry %s", name);
}

static void zw_data(zipw *z, const void *p, size_t n)
{
    const uint8_t *q = p;
    size_t off = 0;
    while (off < n) {
        size_t k = n - off > (1u << 30) ? (1u << 30) : n - off;
        z->crc = (uint32_t)crc32(z->crc, q + off, (uInt)k);
        off += k;
    }
    z->written += n;
    sk_write(z->s, p, n);
}

static void zw_end(zipw *z)
{
    zent *e = &z->e[z->n - 1];
    if (z->written != e->size)
        as_die(AS_EXIT_ENV, "internal error: entry %s: wrote %" PRIu64 " of %" PRIu64 " bytes",
               e->name, z->written, e->size);
    e->crc = z->crc;
    if (!e->size) return;       /* empty entries carry no descriptor */
    uint8_t d[24];
    le32(d, 0x08074b50);
    le32(d + 4, e->crc);
    if (z->local64) {
        le64(d + 8, e->size);
        le64(d + 16, e->size);
        sk_write(z->s, d, 24);
    } else {
        le32(d + 8, (uint32_t)e->size);
        le32(d + 12, (uint32_t)e->size);
        sk_write(z->s, d, 16);
    }
}

static void zw_entry_mem(zipw *z, const char *name, const void *p, size_t n)
{
    zw_begin(z, name, n);
    zw_data(z, p, n);
    zw_end(z);
}

static void zw_finish(zipw *z)
{
    uint64_t cd_ofs = z->s->pos;
    for (size_t i = 0; i < z->n; i++) {
        zent *e = &z->e[i];
        size_t nl = strlen(e->name);
        uint8_t x64[4 + 24];
        size_t x64n = 0;
        int bigsz = e->size >= U32MAX, bigofs = e->ofs >= U32MAX;
        if (bigsz || bigofs) {
            x64n = 4;
            if (bigsz) { le64(x64 + x64n, e->size); le64(x64 + x64n + 8, e->size); x64n += 16; }
            if (bigofs) { le64(x64 + x64n, e->ofs); x64n += 8; }
            le16(x64, 0x0001);
            le16(x64 + 2, (uint32_t)(x64n - 4));
        }
        uint8_t h[46];
        le32(h, 0x02014b50);
        le16(h + 4, 0);                  /* version made by */
        le16(h + 6, 0);                  /* version needed */
        le16(h + 8, e->flags);
        le16(h + 10, 0);                 /* STORED */
        le16(h + 12, 0);
        le16(h + 14, 0);
        le32(h + 16, e->crc);
        le32(h + 20, (uint32_t)(bigsz ? U32MAX : e->size));
        le32(h + 24, (uint32_t)(bigsz ? U32MAX : e->size));
        le16(h + 28, (uint32_t)nl);
        le16(h + 30, (uint32_t)x64n);
        le16(h + 32, 0);                 /* comment */
        le16(h + 34, 0);                 /* disk */
        le16(h + 36, 0);                 /* internal attributes */
        le32(h + 38, 0);                 /* external attributes */
        le32(h + 42, (uint32_t)(bigofs ? U32MAX : e->ofs));
        sk_write(z->s, h, 46);
        sk_write(z->s, e->name, nl);
        if (x64n) sk_write(z->s, x64, x64n);
    }
    uint64_t cd_size = z->s->pos - cd_ofs;
    uint64_t z64_ofs = z->s->pos;
    uint8_t r[56];
    le32(r, 0x06064b50);
    le64(r + 4, 44);
    le16(r + 12, 0x031E);
    le16(r + 14, 0x002D);
    le32(r + 16, 0);
    le32(r + 20, 0);
    le64(r + 24, z->n);
    le64(r + 32, z->n);
    le64(r + 40, cd_size);
    le64(r + 48, cd_ofs);
    sk_write(z->s, r, 56);
    uint8_t l[20];
    le32(l, 0x07064b50);
    le32(l + 4, 0);
    le64(l + 8, z64_ofs);
    le32(l + 16, 1);
    sk_write(z->s, l, 20);
    uint8_t c[22];
    le32(c, 0x06054b50);
    le16(c + 4, 0);
    le16(c + 6, 0);
    le16(c + 8, (uint32_t)(z->n >= 0xFFFF ? 0xFFFF : z->n));
    le16(c + 10, (uint32_t)(z->n >= 0xFFFF ? 0xFFFF : z->n));
    le32(c + 12, (uint32_t)(cd_size >= U32MAX ? U32MAX : cd_size));
    le32(c + 16, (uint32_t)(cd_ofs >= U32MAX ? U32MAX : cd_ofs));
    le16(c + 20, 0);
    sk_write(z->s, c, 22);
    for (size_t i = 0; i < z->n; i++) free(z->e[i].name);
    free(z->e);
    z->e = NULL;
    z->n = z->cap = 0;
}

/* ---- pickle writer (protocol 2, memo like CPython's pickler) --------------------------- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
    uint32_t memo;             /* next memo index */
    char **mkeys;              /* memoised globals and strings, by content */
    uint32_t *mids;
    size_t nm, capm;
} pkl;

static void pk_bytes(pkl *p, const void *s, size_t n)
{
    if (p->n + n > p->cap) {
        while (p->n + n > p->cap) p->cap = p->cap ? 2 * p->cap : 4096;
        p->b = as_realloc(p->b, p->cap);
    }
    memcpy(p->b + p->n, s, n);
    p->n += n;
}
static void pk_op(pkl *p, uint8_t op) { pk_bytes(p, &op, 1); }

static void pk_reset(pkl *p)
{
    for (size_t i = 0; i < p->nm; i++) free(p->mkeys[i]);
    p->nm = 0;
    p->n = 0;
    p->memo = 0;
}

static void pk_free(pkl *p)
{
    pk_reset(p);
    free(p->b);
    free(p->mkeys);
    free(p->mids);
    memset(p, 0, sizeof *p);
}

/* BINPUT / LONG_BINPUT: memoise the object just built */
static uint32_t pk_put(pkl *p)
{
    uint32_t i = p->memo++;
    if (i < 256) { uint8_t o[2] = { 'q', (uint8_t)i }; pk_bytes(p, o, 2); }
    else { uint8_t o[5] = { 'r' }; le32(o + 1, i); pk_bytes(p, o, 5); }
    return i;
}

static void pk_get(pkl *p, uint32_t i)
{
    if (i < 256) { uint8_t o[2] = { 'h', (uint8_t)i }; pk_bytes(p, o, 2); }
    else { uint8_t o[5] = { 'j' }; le32(o + 1, i); pk_bytes(p, o, 5); }
}

static int pk_memo_find(pkl *p, const char *key, uint32_t *id)
{
    for (size_t i = 0; i < p->nm; i++)
        if (!strcmp(p->mkeys[i], key)) { *id = p->mids[i]; return 1; }
    return 0;
}

static void pk_memo_add(pkl *p, const char *key, uint32_t id)
{
    if (p->nm == p->capm) {
        p->capm = p->capm ? 2 * p->capm : 32;
        p->mkeys = as_realloc(p->mkeys, p->capm * sizeof *p->mkeys);
        p->mids = as_realloc(p->mids, p->capm * sizeof *p->mids);
    }
    p->mkeys[p->nm] = as_strdup(key);
    p->mids[p->nm++] = id;
}

static void pk_proto(pkl *p) { uint8_t o[2] = { 0x80, 2 }; pk_bytes(p, o, 2); }
static void pk_stop(pkl *p) { pk_op(p, '.'); }

/* GLOBAL 'mod\nname\n', memoised (repeats become BINGET) */
static void pk_global(pkl *p, const char *mod, const char *name)
{
    char key[256];
    snprintf(key, sizeof key, "G%s\n%s", mod, name);
    uint32_t id;
    if (pk_memo_find(p, key, &id)) { pk_get(p, id); return; }
    pk_op(p, 'c');
    pk_bytes(p, mod, strlen(mod));
    pk_op(p, '\n');
    pk_bytes(p, name, strlen(name));
    pk_op(p, '\n');
    pk_memo_add(p, key, pk_put(p));
}

/* BINUNICODE (protocol 2 has no SHORT_BINUNICODE), memoised; equal literals are one
 * object in the real pickler ('storage', 'cpu'), so memoising by content matches it */
static void pk_str(pkl *p, const char *s)
{
    char key[512];
    snprintf(key, sizeof key, "S%s", s);
    uint32_t id;
    if (pk_memo_find(p, key, &id)) { pk_get(p, id); return; }
    size_t n = strlen(s);
    uint8_t o[5] = { 'X' };
    le32(o + 1, (uint32_t)n);
    pk_bytes(p, o, 5);
    pk_bytes(p, s, n);
    pk_memo_add(p, key, pk_put(p));
}

/* CPython's save_long: BININT1 / BININT2 / BININT, else LONG1 (minimal two's complement) */
static void pk_int(pkl *p, int64_t v)
{
    if (v >= 0 && v <= 0xFF) { uint8_t o[2] = { 'K', (uint8_t)v }; pk_bytes(p, o, 2); return; }
    if (v >= 0 && v <= 0xFFFF) { uint8_t o[3] = { 'M' }; le16(o + 1, (uint32_t)v); pk_bytes(p, o, 3); return; }
    if (v >= INT32_MIN && v <= INT32_MAX) { uint8_t o[5] = { 'J' }; le32(o + 1, (uint32_t)v); pk_bytes(p, o, 5); return; }
    uint8_t o[10] = { 0x8a };
    int nb = 8;
    uint64_t u = (uint64_t)v;
    /* drop redundant sign bytes */
    while (nb > 1) {
        uint8_t top = (uint8_t)(u >> (8 * (nb - 1)));
        uint8_t next = (uint8_t)(u >> (8 * (nb - 2)));
        if ((top == 0x00 && !(next & 0x80)) || (top == 0xFF && (next & 0x80))) nb--;
        else break;
    }
    o[1] = (uint8_t)nb;
    for (int i = 0; i < nb; i++) o[2 + i] = (uint8_t)(u >> (8 * i));
    pk_bytes(p, o, 2 + (size_t)nb);
}

/* a tuple of small ints (size / stride) */
static void pk_int_tuple(pkl *p, const int64_t *v, int n)
{
    if (n == 0) { pk_op(p, ')'); return; }
    if (n > 3) pk_op(p, '(');
    for (int i = 0; i < n; i++) pk_int(p, v[i]);
    pk_op(p, n == 1 ? 0x85 : n == 2 ? 0x86 : n == 3 ? 0x87 : 't');
    pk_put(p);
}

/* ---- storages and tensors -------------------------------------------------------------- */

typedef struct {
    char key[32];
    int esize;              /* 4 or 8 */
    int64_t numel;
} pt_storage;

typedef struct {
    int storage;
    int ndim;
    int64_t size[2], stride[2];
} pt_tensor_desc;

static void pk_tensor(pkl *p, const pt_storage *st, const pt_tensor_desc *t, int legacy)
{
    const pt_storage *s = &st[t->storage];
    pk_global(p, "torch._utils", "_rebuild_tensor_v2");
    pk_op(p, '(');
    /* persistent id */
    pk_op(p, '(');
    pk_str(p, "storage");
    pk_global(p, "torch", s->esize == 8 ? "LongStorage" : "IntStorage");
    pk_str(p, s->key);
    pk_str(p, "cpu");
    pk_int(p, s->numel);
    if (legacy) pk_op(p, 'N');
    pk_op(p, 't');
    pk_put(p);
    pk_op(p, 'Q');          /* BINPERSID */
    pk_int(p, 0);           /* storage_offset */
    pk_int_tuple(p, t->size, t->ndim);
    pk_int_tuple(p, t->stride, t->ndim);
    pk_op(p, 0x89);         /* requires_grad False */
    pk_global(p, "collections", "OrderedDict");
    pk_op(p, ')');
    pk_op(p, 'R');
    pk_put(p);
    pk_op(p, 't');
    pk_put(p);
    pk_op(p, 'R');
    pk_put(p);
}

/* a list of tensors: EMPTY_LIST, BINPUT, then batches of 1000 (APPENDS, or APPEND for one) */
static void pk_tensor_list(pkl *p, const pt_storage *st, const pt_tensor_desc *t, int n, int legacy)
{
    pk_op(p, ']');
    pk_put(p);
    for (int i = 0; i < n; i += 1000) {
        int k = n - i < 1000 ? n - i : 1000;
        if (k > 1) pk_op(p, '(');
        for (int j = 0; j < k; j++) pk_tensor(p, st, &t[i + j], legacy);
        pk_op(p, k > 1 ? 'e' : 'a');
    }
}

/* ---- temporary files ------------------------------------------------------------------- */

typedef struct {
    int fd;
    uint8_t *buf;
    size_t len;
    uint64_t size;
} tmpf;

static void tf_open(tmpf *t)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/ptwrite.XXXXXX", dir);
    t->fd = mkstemp(path);
    if (t->fd < 0) as_die(AS_EXIT_ENV, "%s: cannot create a temporary file: %s", path, strerror(errno));
    unlink(path);
    t->buf = as_malloc(CHUNK);
    t->len = 0;
    t->size = 0;
}

static void tf_flush(tmpf *t)
{
    size_t off = 0;
    while (off < t->len) {
        ssize_t w = write(t->fd, t->buf + off, t->len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            as_die(AS_EXIT_ENV, "temporary file: write error: %s", strerror(errno));
        }
        off += (size_t)w;
    }
    t->len = 0;
}

static void tf_write(tmpf *t, const void *p, size_t n)
{
    const uint8_t *q = p;
    t->size += n;
    while (n) {
        size_t k = CHUNK - t->len;
        if (k > n) k = n;
        memcpy(t->buf + t->len, q, k);
        t->len += k; q += k; n -= k;
        if (t->len == CHUNK) tf_flush(t);
    }
}

static void tf_close(tmpf *t)
{
    if (t->fd >= 0) close(t->fd);
    free(t->buf);
    t->fd = -1;
    t->buf = NULL;
}

/* ---- the job --------------------------------------------------------------------------- */

enum { CMD_METASYN, CMD_PROTOTYPE };
enum { C_NONE, C_OFF_FIRST, C_OFF_DECREASE, C_OFF_LAST, C_LEN_MISMATCH, C_NEG_INDEX };
static const char *corrupt_names[] = { "none", "offsets-first", "offsets-decrease", "offsets-last",
                                       "lengths-mismatch", "negative-index" };

typedef struct {
    int cmd, legacy, gzip, regen, serial_id, corrupt;
    int isz, osz, lsz;              /* element sizes: indices, offsets, lengths */
    const char *prefix;
    as_synth_cfg cfg;
    int64_t T, B;
    int64_t *lookups;               /* per table */
    int64_t numel;                  /* all indices */
    tmpf tidx, toff, tlen;
    /* negative-index target */
    int64_t neg_table, neg_pos, neg_bag;
    /* output */
    zipw zw;
    sink *s;
} job;

static void gen_table(const job *j, int64_t t, as_synth_table *tb)
{
    int rc = as_synth_table_gen(&j->cfg, t, tb);
    if (rc == -ENOMEM) as_die(AS_EXIT_ENV, "table %" PRId64 ": out of memory", t);
    if (rc) as_die(AS_EXIT_USAGE, "table %" PRId64 ": the generator refused the configuration (%d)", t, rc);
    if (tb->batch != j->B || tb->offsets[0] != 0 || tb->offsets[j->B] != tb->lookups)
        as_die(AS_EXIT_DATA, "table %" PRId64 ": the generator broke its invariants", t);
}

/* convert n int64 values (+ add) to esize-byte little-endian ints, through a sink callback */
typedef void (*put_fn)(void *ctx, const void *p, size_t n);

static void put_i64_as(put_fn put, void *ctx, const int64_t *v, size_t n, int64_t add, int esize)
{
    static uint8_t buf[CHUNK];
    size_t per = CHUNK / (size_t)esize;
    for (size_t i = 0; i < n; i += per) {
        size_t k = n - i < per ? n - i : per;
        if (esize == 8) {
            int64_t *o = (int64_t *)buf;
            for (size_t q = 0; q < k; q++) o[q] = v[i + q] + add;
        } else {
            int32_t *o = (int32_t *)buf;
            for (size_t q = 0; q < k; q++) o[q] = (int32_t)(v[i + q] + add);
        }
        put(ctx, buf, k * (size_t)esize);
    }
}

static void put_i32_as(put_fn put, void *ctx, const int32_t *v, size_t n, int esize)
{
    if (esize == 4) { put(ctx, v, n * 4); return; }
    static int64_t buf[CHUNK / 8];
    for (size_t i = 0; i < n; i += CHUNK / 8) {
        size_t k = n - i < CHUNK / 8 ? n - i : CHUNK / 8;
        for (size_t q = 0; q < k; q++) buf[q] = v[i + q];
        put(ctx, buf, k * 8);
    }
}

static void put_tmp(void *ctx, const void *p, size_t n) { tf_write(ctx, p, n); }

static void put_out(void *ctx, const void *p, size_t n)
{
    job *j = ctx;
    if (j->legacy) sk_write(j->s, p, n);
    else zw_data(&j->zw, p, n);
}

/* the bag holding position pos of a table: offsets[b] <= pos < offsets[b+1] */
static int64_t bag_of(const as_synth_table *tb, int64_t pos)
{
    int64_t lo = 0, hi = tb->batch - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (tb->offsets[mid] <= pos) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* apply negative-index to this table's indices if it is the target */
static void maybe_neg_index(job *j, as_synth_table *tb, int64_t base)
{
    if (j->corrupt != C_NEG_INDEX || tb->id != j->neg_table) return;
    tb->indices[j->neg_pos] = -1;
    as_debug("corrupt negative-index: table %" PRId64 " bag %" PRId64 " position %" PRId64
             " in the table (indices[%" PRId64 "]) = -1", tb->id, j->neg_bag, j->neg_pos, base + j->neg_pos);
}

/* metasyn: table t's B global offsets and B lengths to the temporary files, with the
 * offsets and lengths faults; *last is the last global offset written (tmp: B+1 scratch) */
static void spill_metasyn_table(job *j, const as_synth_table *tb, int64_t t, int64_t base,
                                int64_t *tmp, int64_t *last)
{
    const int64_t T = j->T, B = j->B;
    const int64_t lm_table = T >= 2 ? 1 : 0;
    /* offsets: B entries per table (the total comes at the end) */
    for (int64_t b = 0; b < B; b++) tmp[b] = base + tb->offsets[b];
    if (j->corrupt == C_OFF_FIRST && t == 0) {
        tmp[0] = 1;
        as_debug("corrupt offsets-first: table 0 bag 0: offsets[0] = 1 (was 0)");
    }
    if (j->corrupt == C_OFF_DECREASE && t == 1) {
        int64_t b = B / 2;
        int64_t prev = b > 0 ? tmp[b - 1] : *last;
        as_debug("corrupt offsets-decrease: table 1 bag %" PRId64 ": offsets[%" PRId64 "] = %"
                 PRId64 " (was %" PRId64 ", predecessor %" PRId64 ")",
                 b, B + b, prev - 1, tmp[b], prev);
        tmp[b] = prev - 1;
    }
    if (j->osz == 4 && base + tb->lookups > INT32_MAX)
        as_die(AS_EXIT_DATA, "offsets exceed int32 (table %" PRId64 "); use --offsets-dtype int64", t);
    put_i64_as(put_tmp, &j->toff, tmp, (size_t)B, 0, j->osz);
    *last = tmp[B - 1];
    /* lengths */
    for (int64_t b = 0; b < B; b++) tmp[b] = tb->offsets[b + 1] - tb->offsets[b];
    if (j->corrupt == C_LEN_MISMATCH && t == lm_table) {
        int64_t b = B / 2;
        as_debug("corrupt lengths-mismatch: table %" PRId64 " bag %" PRId64 ": lengths[%" PRId64
                 "][%" PRId64 "] = %" PRId64 " (diff(offsets) = %" PRId64 ", flat position %" PRId64 ")",
                 t, b, t, b, tmp[b] + 1, tmp[b], t * B + b);
        tmp[b] += 1;
    }
    put_i64_as(put_tmp, &j->tlen, tmp, (size_t)B, 0, j->lsz);
}

/* metasyn: the final global offset (numel, or numel + 1 with offsets-last) */
static void spill_metasyn_total(job *j, int64_t base)
{
    int64_t fin = base;
    if (j->corrupt == C_OFF_LAST) {
        fin = base + 1;
        as_debug("corrupt offsets-last: offsets[%" PRId64 "] = %" PRId64 " (numel of indices %" PRId64 ")",
                 j->T * j->B, fin, base);
    }
    if (j->osz == 4 && fin > INT32_MAX)
        as_die(AS_EXIT_DATA, "offsets exceed int32; use --offsets-dtype int64");
    put_i64_as(put_tmp, &j->toff, &fin, 1, 0, j->osz);
    tf_flush(&j->tlen);
}

/* pass 1: every table once; offsets/lengths (and indices unless --regen) to temp files */
static void pass1(job *j)
{
    const int64_t T = j->T, B = j->B;
    j->lookups = as_calloc((size_t)T, sizeof *j->lookups);
    tf_open(&j->toff);
    if (j->cmd == CMD_METASYN) tf_open(&j->tlen);
    if (!j->regen) tf_open(&j->tidx);
    j->neg_table = -1;
    int64_t base = 0;
    int64_t last = 0;               /* last global offset written (metasyn) */
    int64_t *tmp = as_malloc((size_t)(B + 1) * sizeof *tmp);
    double t0 = as_now();
    for (int64_t t = 0; t < T; t++) {
        as_synth_table tb;
        gen_table(j, t, &tb);
        j->lookups[t] = tb.lookups;
        if (j->corrupt == C_NEG_INDEX && j->neg_table < 0 && tb.lookups > 0) {
            j->neg_table = t;
            j->neg_pos = tb.lookups / 2;
            j->neg_bag = bag_of(&tb, j->neg_pos);
        }
        if (j->cmd == CMD_METASYN) spill_metasyn_table(j, &tb, t, base, tmp, &last);
        else {
            if (j->osz == 4 && tb.lookups > INT32_MAX)
                as_die(AS_EXIT_DATA, "table %" PRId64 ": offsets exceed int32; use --offsets-dtype int64", t);
            put_i64_as(put_tmp, &j->toff, tb.offsets, (size_t)B + 1, 0, j->osz);
        }
        if (!j->regen) {
            maybe_neg_index(j, &tb, base);
            put_i32_as(put_tmp, &j->tidx, tb.indices, (size_t)tb.lookups, j->isz);
        }
        base += tb.lookups;
        as_synth_free(&tb);
        if (as_verbosity >= 2 && (t + 1) % 64 == 0)
            as_debug("generated %" PRId64 "/%" PRId64 " tables, %" PRId64 " indices, %.1f s",
                     t + 1, T, base, as_now() - t0);
    }
    j->numel = base;
    if (j->cmd == CMD_METASYN) spill_metasyn_total(j, base);
    if (j->corrupt == C_NEG_INDEX && j->neg_table < 0)
        as_die(AS_EXIT_USAGE, "--corrupt negative-index: the pool has no indices");
    tf_flush(&j->toff);
    if (!j->regen) tf_flush(&j->tidx);
    free(tmp);
    as_debug("pass 1: %" PRId64 " tables, %" PRId64 " indices, %.1f s", T, base, as_now() - t0);
}

/* copy [ofs, ofs+n) of a temp file to the output */
static void copy_tmp(job *j, tmpf *t, uint64_t ofs, uint64_t n)
{
    static uint8_t buf[CHUNK];
    while (n) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        ssize_t r = pread(t->fd, buf, k, (off_t)ofs);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) as_die(AS_EXIT_ENV, "temporary file: read error: %s", r < 0 ? strerror(errno) : "short file");
        put_out(j, buf, (size_t)r);
        ofs += (uint64_t)r;
        n -= (uint64_t)r;
    }
}

/* regenerate table t and write its indices */
static void regen_indices(job *j, int64_t t, int64_t base)
{
    as_synth_table tb;
    gen_table(j, t, &tb);
    if (tb.lookups != j->lookups[t])
        as_die(AS_EXIT_DATA, "table %" PRId64 ": the generator is not deterministic", t);
    maybe_neg_index(j, &tb, base);
    put_i32_as(put_out, j, tb.indices, (size_t)tb.lookups, j->isz);
    as_synth_free(&tb);
}

/* stream the bytes of storage k */
static void write_storage(job *j, int k)
{
    const int64_t T = j->T, B = j->B;
    if (j->cmd == CMD_METASYN) {
        if (k == 0) {
            if (!j->regen) copy_tmp(j, &j->tidx, 0, j->tidx.size);
            else {
                int64_t base = 0;
                for (int64_t t = 0; t < T; t++) { regen_indices(j, t, base); base += j->lookups[t]; }
            }
        } else if (k == 1) copy_tmp(j, &j->toff, 0, j->toff.size);
        else copy_tmp(j, &j->tlen, 0, j->tlen.size);
        return;
    }
    if (k < T) {
        uint64_t per = (uint64_t)(B + 1) * (uint64_t)j->osz;
        copy_tmp(j, &j->toff, (uint64_t)k * per, per);
        return;
    }
    int64_t t = k - T;
    int64_t base = 0;
    for (int64_t q = 0; q < t; q++) base += j->lookups[q];
    if (!j->regen) copy_tmp(j, &j->tidx, (uint64_t)base * (uint64_t)j->isz, (uint64_t)j->lookups[t] * (uint64_t)j->isz);
    else regen_indices(j, t, base);
}

static char *g_tmpname;     /* the output's temporary name until it is renamed */
static void rm_tmpname(void) { if (g_tmpname) unlink(g_tmpname); }

static int cmp_key(const void *a, const void *b, void *ctx)
{
    const pt_storage *st = ctx;
    return strcmp(st[*(const int *)a].key, st[*(const int *)b].key);
}

/* the storages and tensors of the object: 3 for metasyn, 2*T for prototype (offsets first) */
static int describe_storages(const job *j, pt_storage **stp, pt_tensor_desc **tdp)
{
    const int64_t T = j->T, B = j->B;
    int ns = j->cmd == CMD_METASYN ? 3 : (int)(2 * T);
    pt_storage *st = as_calloc((size_t)ns, sizeof *st);
    pt_tensor_desc *td = as_calloc((size_t)ns, sizeof *td);
    if (j->cmd == CMD_METASYN) {
        st[0] = (pt_storage){ .esize = j->isz, .numel = j->numel };
        st[1] = (pt_storage){ .esize = j->osz, .numel = T * B + 1 };
        st[2] = (pt_storage){ .esize = j->lsz, .numel = T * B };
        td[0] = (pt_tensor_desc){ 0, 1, { j->numel }, { 1 } };
        td[1] = (pt_tensor_desc){ 1, 1, { T * B + 1 }, { 1 } };
        td[2] = (pt_tensor_desc){ 2, 2, { T, B }, { B, 1 } };
    } else {
        for (int64_t t = 0; t < T; t++) {
            st[t] = (pt_storage){ .esize = j->osz, .numel = B + 1 };
            td[t] = (pt_tensor_desc){ (int)t, 1, { B + 1 }, { 1 } };
            st[T + t] = (pt_storage){ .esize = j->isz, .numel = j->lookups[t] };
            td[T + t] = (pt_tensor_desc){ (int)(T + t), 1, { j->lookups[t] }, { 1 } };
        }
    }
    *stp = st;
    *tdp = td;
    return ns;
}

/* name the storages and return their order sorted by key (a new array) */
static int *storage_keys(const job *j, pt_storage *st, int ns)
{
    /* keys: "0", "1", ... (zip); address-like numbers of equal width (legacy) */
    for (int i = 0; i < ns; i++) {
        if (j->legacy) snprintf(st[i].key, sizeof st[i].key, "%" PRIu64, UINT64_C(94358417154048) + UINT64_C(4096) * (uint64_t)i);
        else snprintf(st[i].key, sizeof st[i].key, "%d", i);
    }
    int *order = as_malloc((size_t)ns * sizeof *order);
    for (int i = 0; i < ns; i++) order[i] = i;
    qsort_r(order, (size_t)ns, sizeof *order, cmp_key, st);
    return order;
}

/* legacy: the three pickles before the object (magic number, protocol version, sys_info) */
static void write_legacy_preamble(job *j, pkl *p)
{
    static const uint8_t magic[] = { 0x80, 2, 0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.' };
    sk_write(j->s, magic, sizeof magic);
    pk_proto(p); pk_int(p, 1001); pk_stop(p);
    sk_write(j->s, p->b, p->n); pk_reset(p);
    pk_proto(p);
    pk_op(p, '}'); pk_put(p); pk_op(p, '(');
    pk_str(p, "protocol_version"); pk_int(p, 1001);
    pk_str(p, "little_endian"); pk_op(p, 0x88);
    pk_str(p, "type_sizes");
    pk_op(p, '}'); pk_put(p); pk_op(p, '(');
    pk_str(p, "short"); pk_int(p, 2);
    pk_str(p, "int"); pk_int(p, 4);
    pk_str(p, "long"); pk_int(p, 4);
    pk_op(p, 'u'); pk_op(p, 'u'); pk_stop(p);
    sk_write(j->s, p->b, p->n); pk_reset(p);
}

/* the object pickle: metasyn's tuple or the prototype's dict */
static void pickle_object(const job *j, pkl *p, const pt_storage *st, const pt_tensor_desc *td)
{
    const int64_t T = j->T;
    pk_proto(p);
    if (j->cmd == CMD_METASYN) {
        for (int i = 0; i < 3; i++) pk_tensor(p, st, &td[i], j->legacy);
        pk_op(p, 0x87);
        pk_put(p);
    } else {
        pk_op(p, '}'); pk_put(p); pk_op(p, '(');
        pk_str(p, "lS_offsets");
        pk_tensor_list(p, st, td, (int)T, j->legacy);
        pk_str(p, "lS_indices");
        pk_tensor_list(p, st, td + T, (int)T, j->legacy);
        pk_op(p, 'u');
    }
    pk_stop(p);
}

/* legacy: the object pickle, the pickled sorted keys, then per key a count and the bytes */
static void write_legacy_rest(job *j, pkl *p, const pt_storage *st, const int *order, int ns)
{
    sk_write(j->s, p->b, p->n); pk_reset(p);
    /* sorted keys */
    pk_proto(p);
    pk_op(p, ']'); pk_put(p);
    for (int i = 0; i < ns; i += 1000) {
        int k = ns - i < 1000 ? ns - i : 1000;
        if (k > 1) pk_op(p, '(');
        for (int q = 0; q < k; q++) pk_str(p, st[order[i + q]].key);
        pk_op(p, k > 1 ? 'e' : 'a');
    }
    pk_stop(p);
    sk_write(j->s, p->b, p->n);
    for (int i = 0; i < ns; i++) {
        const pt_storage *s = &st[order[i]];
        uint8_t cnt[8];
        le64(cnt, (uint64_t)s->numel);
        sk_write(j->s, cnt, 8);
        uint64_t before = j->s->pos;
        write_storage(j, order[i]);
        if (j->s->pos - before != (uint64_t)s->numel * (uint64_t)s->esize)
            as_die(AS_EXIT_ENV, "internal error: storage %s has the wrong size", s->key);
    }
}

/* zip: <prefix>/.data/serialization_id, a 20-digit decimal id as torch 2.x writes; derived
 * from the seed */
static void write_serialization_id(job *j)
{
    char name[4096];
    uint64_t sm = j->cfg.seed ^ 0x5054575249544531ull;
    char id[32];
    uint64_t hi = as_splitmix64(&sm) % UINT64_C(10000000000);
    uint64_t lo = as_splitmix64(&sm) % UINT64_C(10000000000);
    snprintf(id, sizeof id, "%010" PRIu64 "%010" PRIu64, hi, lo);
    snprintf(name, sizeof name, "%s/.data/serialization_id", j->prefix);
    zw_entry_mem(&j->zw, name, id, strlen(id));
}

/* zip: data.pkl, the storages in key order, version, the optional id, the directory */
static void write_zip_rest(job *j, const pkl *p, const pt_storage *st, const int *order, int ns)
{
    char name[4096];
    snprintf(name, sizeof name, "%s/data.pkl", j->prefix);
    zw_entry_mem(&j->zw, name, p->b, p->n);
    for (int i = 0; i < ns; i++) {
        const pt_storage *s = &st[order[i]];
        snprintf(name, sizeof name, "%s/data/%s", j->prefix, s->key);
        zw_begin(&j->zw, name, (uint64_t)s->numel * (uint64_t)s->esize);
        write_storage(j, order[i]);
        zw_end(&j->zw);
    }
    snprintf(name, sizeof name, "%s/version", j->prefix);
    zw_entry_mem(&j->zw, name, "3\n", 2);
    if (j->serial_id) write_serialization_id(j);
    zw_finish(&j->zw);
}

static void write_file(job *j)
{
    pt_storage *st;
    pt_tensor_desc *td;
    int ns = describe_storages(j, &st, &td);
    int *order = storage_keys(j, st, ns);

    pkl p = { 0 };
    if (j->legacy) write_legacy_preamble(j, &p);
    pickle_object(j, &p, st, td);
    if (j->legacy) write_legacy_rest(j, &p, st, order, ns);
    else write_zip_rest(j, &p, st, order, ns);
    pk_free(&p);
    free(order);
    free(st);
    free(td);
}

/* ---- command line ---------------------------------------------------------------------- */

enum {
    O_TABLES = 1100, O_BATCH, O_SEED, O_ROWS, O_POOL, O_FORMAT, O_GZIP, O_IDT, O_ODT, O_LDT,
    O_PREFIX, O_CORRUPT, O_REGEN, O_SERIAL, O_FORCE, O_VERSION
};

static int parse_dtype(const char *opt, const char *arg)
{
    if (!strcmp(arg, "int32")) return 4;
    if (!strcmp(arg, "int64")) return 8;
    usage_err("%s: expected int32 or int64, got '%s'", opt, arg);
}

static int64_t parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi)
{
    int64_t v;
    if (as_parse_i64(arg, lo, hi, &v))
        usage_err("%s: expected an integer in [%" PRId64 ", %" PRId64 "], got '%s'", opt, lo, hi, arg);
    return v;
}

static double parse_real(const char *opt, const char *arg, double lo, double hi)
{
    double v;
    if (as_parse_f64(arg, lo, hi, &v))
        usage_err("%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, arg);
    return v;
}

/* --prefix: trailing slashes dropped; a relative folder name */
static const char *parse_prefix(char *arg)
{
    size_t n = strlen(arg);
    while (n > 0 && arg[n - 1] == '/') arg[--n] = 0;
    if (!n || arg[0] == '/' || n > 1000) usage_err("--prefix: expected a folder name, got '%s'", arg);
    return arg;
}

/* --corrupt: the kind's index in corrupt_names */
static int parse_corrupt(const char *arg)
{
    int k = 0;
    for (int i = 1; i < (int)(sizeof corrupt_names / sizeof *corrupt_names); i++)
        if (!strcmp(arg, corrupt_names[i])) k = i;
    if (!k) usage_err("--corrupt: unknown kind '%s' (offsets-first, offsets-decrease, offsets-last, "
                      "lengths-mismatch, negative-index)", arg);
    return k;
}

/* exit after --help or --version: 0, or 3 when stdout cannot be written */
static _Noreturn void exit_after_stdout(void)
{
    if (fflush(stdout) || ferror(stdout)) exit(AS_EXIT_ENV);
    exit(0);
}

/* the option arguments into j, *out and *force; -h and --version exit here */
static void parse_options(int argc, char **argv, job *j, const char **out, int *force)
{
    static const struct option lo[] = {
        { "tables", required_argument, 0, O_TABLES },
        { "batch", required_argument, 0, O_BATCH },
        { "seed", required_argument, 0, O_SEED },
        { "row-scale", required_argument, 0, O_ROWS },
        { "pool-scale", required_argument, 0, O_POOL },
        { "format", required_argument, 0, O_FORMAT },
        { "gzip", no_argument, 0, O_GZIP },
        { "indices-dtype", required_argument, 0, O_IDT },
        { "offsets-dtype", required_argument, 0, O_ODT },
        { "lengths-dtype", required_argument, 0, O_LDT },
        { "prefix", required_argument, 0, O_PREFIX },
        { "corrupt", required_argument, 0, O_CORRUPT },
        { "regen", no_argument, 0, O_REGEN },
        { "serialization-id", no_argument, 0, O_SERIAL },
        { "output", required_argument, 0, 'o' },
        { "force", no_argument, 0, O_FORCE },
        { "quiet", no_argument, 0, 'q' },
        { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, O_VERSION },
        { 0, 0, 0, 0 }
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qvh", lo, NULL)) != -1) {
        switch (c) {
        case O_TABLES: j->cfg.tables = parse_int("--tables", optarg, 1, 1000000); break;
        case O_BATCH: j->cfg.batch = parse_int("--batch", optarg, 1, (int64_t)1 << 31); break;
        case O_SEED: j->cfg.seed = (uint64_t)parse_int("--seed", optarg, 0, INT64_MAX); break;
        case O_ROWS:
            j->cfg.row_scale = parse_real("--row-scale", optarg, 0, 1000);
            if (!(j->cfg.row_scale > 0)) usage_err("--row-scale: must be > 0");
            break;
        case O_POOL: j->cfg.pool_scale = parse_real("--pool-scale", optarg, 0, 1000); break;
        case O_FORMAT:
            if (!strcmp(optarg, "zip")) j->legacy = 0;
            else if (!strcmp(optarg, "legacy")) j->legacy = 1;
            else usage_err("--format: expected zip or legacy, got '%s'", optarg);
            break;
        case O_GZIP: j->gzip = 1; break;
        case O_IDT: j->isz = parse_dtype("--indices-dtype", optarg); break;
        case O_ODT: j->osz = parse_dtype("--offsets-dtype", optarg); break;
        case O_LDT: j->lsz = parse_dtype("--lengths-dtype", optarg); break;
        case O_PREFIX: j->prefix = parse_prefix(optarg); break;
        case O_CORRUPT: j->corrupt = parse_corrupt(optarg); break;
        case O_REGEN: j->regen = 1; break;
        case O_SERIAL: j->serial_id = 1; break;
        case 'o': *out = optarg; break;
        case O_FORCE: *force = 1; break;
        case 'q': as_verbosity = 0; break;
        case 'v': as_verbosity = 2; break;
        case 'h': fputs(usage_line, stdout); putchar('\n'); fputs(help_text, stdout);
                  exit_after_stdout();
        case O_VERSION: printf("ptwrite (autoshard test tool) %s\n", AS_VERSION);
                  exit_after_stdout();
        case ':': usage_err("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256) usage_err("unknown option '-%c'", optopt);
            usage_err("unknown option '%s'", argv[optind - 1]);
        }
    }
}

/* the command word and the checks between options; sets j->cmd, j->T and j->B */
static void parse_command(int argc, char **argv, job *j)
{
    if (optind >= argc) usage_err("missing command (metasyn or prototype)");
    if (!strcmp(argv[optind], "metasyn")) j->cmd = CMD_METASYN;
    else if (!strcmp(argv[optind], "prototype")) j->cmd = CMD_PROTOTYPE;
    else usage_err("unknown command '%s' (metasyn or prototype)", argv[optind]);
    if (optind + 1 < argc) usage_err("unexpected argument '%s'", argv[optind + 1]);
    if (j->corrupt && j->cmd != CMD_METASYN) usage_err("--corrupt applies to metasyn only");
    if (j->corrupt == C_OFF_DECREASE && j->cfg.tables < 2) usage_err("--corrupt offsets-decrease needs --tables >= 2");
    if (j->serial_id && j->legacy) usage_err("--serialization-id applies to the zip format only");
    if (j->cmd == CMD_PROTOTYPE && 2 * j->cfg.tables > INT32_MAX / 2) usage_err("--tables: too many");
    j->T = j->cfg.tables;
    j->B = j->cfg.batch;
}

/* where the file goes: FILE via a temporary name (o->tmpname), or stdout */
typedef struct {
    const char *out;        /* -o FILE, NULL for stdout */
    int use_stdout;
    char *tmpname;          /* the temporary name of FILE */
    int fd;
} output;

/* open the output: FILE via a temporary name, or stdout (never a terminal unless force) */
static void open_output(output *o, int force)
{
    const char *out = o->out;
    o->use_stdout = !out || !strcmp(out, "-");
    o->tmpname = NULL;
    struct stat ost;
    if (!o->use_stdout && stat(out, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        /* a device or fifo (/dev/full, /dev/null): write it in place, never rename over it */
        int fd = open(out, O_WRONLY);
        if (fd < 0) as_die(AS_EXIT_ENV, "%s: %s", out, strerror(errno));
        if (dup2(fd, STDOUT_FILENO) < 0) as_die(AS_EXIT_ENV, "%s: %s", out, strerror(errno));
        close(fd);
        o->use_stdout = 1;
        force = 1;
    }
    if (o->use_stdout) {
        if (isatty(STDOUT_FILENO) && !force)
            usage_err("refusing to write binary data to a terminal (use -o FILE or --force)");
        o->fd = STDOUT_FILENO;
    } else {
        size_t n = strlen(out) + 32;
        o->tmpname = as_malloc(n);
        snprintf(o->tmpname, n, "%s.tmp%ld", out, (long)getpid());
        o->fd = open(o->tmpname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o->fd < 0) as_die(AS_EXIT_ENV, "%s: %s", o->tmpname, strerror(errno));
        g_tmpname = o->tmpname;
        atexit(rm_tmpname);
    }
}

/* pass 2: the file through a sink on o->fd (gzip with --gzip), then FILE renamed into place */
static void write_output(job *j, const output *o)
{
    sink s = { .fd = o->fd, .buf = as_malloc(CHUNK), .name = o->use_stdout ? "<stdout>" : o->out };
    if (j->gzip) {
        int gfd = dup(o->fd);
        if (gfd < 0 || !(s.gz = gzdopen(gfd, "wb1"))) as_die(AS_EXIT_ENV, "%s: gzdopen failed", s.name);
        gzbuffer(s.gz, 1 << 20);
    }
    j->s = &s;
    j->zw.s = &s;
    as_debug("writing %s (%s%s): %" PRId64 " tables, batch %" PRId64 ", %" PRId64 " indices",
             s.name, j->legacy ? "legacy" : "zip", j->gzip ? ", gzip" : "", j->T, j->B, j->numel);
    double t0 = as_now();
    write_file(j);
    sk_flush(&s);
    if (s.gz) {
        int rc = gzclose(s.gz);
        if (rc != Z_OK)
            as_die(AS_EXIT_ENV, "%s: write error: %s", s.name, rc == Z_ERRNO ? strerror(errno) : "gzip failed");
    }
    if (!o->use_stdout) {
        if (close(o->fd)) as_die(AS_EXIT_ENV, "%s: %s", o->tmpname, strerror(errno));
        if (rename(o->tmpname, o->out)) as_die(AS_EXIT_ENV, "%s: %s", o->out, strerror(errno));
        g_tmpname = NULL;
    }
    as_debug("wrote %" PRIu64 " bytes (uncompressed) in %.1f s", s.pos, as_now() - t0);
    free(s.buf);
}

int main(int argc, char **argv)
{
    as_set_prog(argv[0]);
    job j;
    memset(&j, 0, sizeof j);
    as_synth_defaults(&j.cfg);
    j.isz = 4; j.osz = 8; j.lsz = 4;
    j.tidx.fd = j.toff.fd = j.tlen.fd = -1;
    j.prefix = "archive";
    output o = { 0 };
    int force = 0;
    parse_options(argc, argv, &j, &o.out, &force);
    parse_command(argc, argv, &j);
    open_output(&o, force);

    pass1(&j);
    write_output(&j, &o);

    tf_close(&j.toff);
    tf_close(&j.tlen);
    tf_close(&j.tidx);
    free(j.lookups);
    free(o.tmpname);
    return 0;
}
