/* torchsave.c - read torch.save files in C, without Python; see torchsave.h.
 * No dimension letters: tensors here are generic (shape, stride, storage offset).
 *
 * Structure: input (plain file, or gzip / pipe spooled into an unlinked temporary file),
 * then the zip walker (EOCD, ZIP64 locator and record, central directory, local headers) or
 * the legacy walker (magic, protocol, sys_info, object, keys, raw storages), both running
 * the restricted pickle interpreter of pickle.c with the torch hooks below, then a walk of
 * the object graph collecting tensors, then element reads with pread.
 */
#include "torchsave.h"
#include "common.h"
#include "pickle.h"
#include "half.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TS_CHUNK (1 << 20)            /* element reads: largest buffer */
#define TS_SPOOL (1 << 18)            /* spooling: input and output buffers */
#define TS_MAX_CD ((uint64_t)1 << 28) /* central directory bytes */
#define TS_MAX_DEPTH 64               /* object graph nesting */
#define TS_MAX_VISITS (1 << 22)       /* tensor/container visits (shared subtrees count again) */
#define TS_MAX_TENSORS (1 << 22)
#define TS_MAX_KEY 1024

/* global ids for the pickle hooks */
enum { G_V2 = 1, G_V3, G_PARAM, G_ODICT, G_STORAGE = 100, G_DTYPE = 200 };
/* hook-made object kinds: x.a storage index, x.b view offset, x.c view numel (-1: whole) */
enum { K_STORAGE = AS_PK_USER, K_TENSOR /* x.a record index */ };

typedef struct {
    char *key;
    pt_dtype dtype;
    int64_t numel;
    uint64_t nbytes;
    uint64_t offset;   /* file offset of the bytes */
    int have;          /* offset known */
} ts_storage;

typedef struct {
    char *name;
    uint64_t lho, size, csize;
    int method, flags;
} ts_entry;

struct pt_file {
    int fd;
    uint64_t size;
    int fmt;           /* 0 zip, 1 zip64, 2 legacy */
    int gz;
    const char *root_kind;
    pt_tensor *tensors;
    int ntensors, captensors;
    int *order;        /* tensor indices sorted by path (then index), for pt_find */
    pt_limits lim;
    pt_tensor *recs;   /* tensors as made by the rebuild calls (no path yet) */
    int nrecs, caprecs;
    ts_storage *st;
    int nst, capst;
    int *ht;           /* storage key hash table: index + 1, 0 empty */
    size_t htcap;
    uint8_t *buf;      /* read buffer of bufcap bytes (TS_CHUNK, less for small files) */
    size_t bufcap;
    char *err;
    size_t errlen;
};

static const char *dtype_names[PT_NDTYPES] = {
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"};
static const size_t dtype_sizes[PT_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};

const char *pt_dtype_name(pt_dtype d)
{
    return (unsigned)d < PT_NDTYPES ? dtype_names[d] : "unknown";
}

size_t pt_dtype_size(pt_dtype d)
{
    return (unsigned)d < PT_NDTYPES ? dtype_sizes[d] : 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
#define FFAIL(f, ...) fail((f)->err, (f)->errlen, __VA_ARGS__)

static uint16_t rd16(const uint8_t *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t rd32(const uint8_t *b) { return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t rd64(const uint8_t *b) { return rd32(b) | (uint64_t)rd32(b + 4) << 32; }

/* pread exactly n bytes; -1 with err on error or end of file */
static int pread_all(pt_file *f, void *buf, size_t n, uint64_t off, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(f->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail(err, errlen, "read error: %s", strerror(errno));
        if (r == 0) return fail(err, errlen, "unexpected end of file at byte %llu", (unsigned long long)(off + got));
        got += (size_t)r;
    }
    return 0;
}

/* ---------------------------------------------------------------- input: spooling */

static int write_all(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t read_some(int fd, uint8_t *b, size_t n)
{
    for (;;) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

static int make_tmp(const char **dirp, char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    *dirp = dir;
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
#endif
    char tmpl[4096];
    if (snprintf(tmpl, sizeof tmpl, "%s/as-torchsave-XXXXXX", dir) >= (int)sizeof tmpl)
        return fail(err, errlen, "temporary directory name too long");
    int t = mkstemp(tmpl);
    if (t < 0) return fail(err, errlen, "cannot create a temporary file in %s: %s", dir, strerror(errno));
    unlink(tmpl);
    return t;
}

/* the spooled output may not outgrow the limits: max_spool bytes in all, and for gzip
 * max_ratio times the compressed bytes consumed once past PT_RATIO_FREE */
static int spool_check(const pt_limits *lim, int gz, uint64_t out, uint64_t in, char *err, size_t errlen)
{
    if (lim->max_spool && out > lim->max_spool)
        return fail(err, errlen, "%s is larger than %llu bytes (AS_MAX_SPOOL, the limit on a gzip'd or piped "
                    "input spooled into $TMPDIR)", gz ? "the decompressed input" : "the piped input",
                    (unsigned long long)lim->max_spool);
    if (gz && lim->max_ratio > 0 && out > PT_RATIO_FREE && (double)out > lim->max_ratio * (double)in)
        return fail(err, errlen, "gzip: %llu compressed bytes expand to more than %llu (over %g times; a gzip bomb?); "
                    "AS_MAX_GZIP_RATIO raises the limit", (unsigned long long)in, (unsigned long long)out, lim->max_ratio);
    return 0;
}

/* spool's copying: from in_fd into the temporary out (in $TMPDIR dir) through the buffers in
 * and ob (TS_SPOOL bytes each); nin, nout: the bytes read and written so far */
typedef struct {
    int in_fd, out;
    const char *dir;
    const pt_limits *lim;
    uint8_t *in, *ob;
    uint64_t nin, nout;
} spool_io;

/* a plain input copied as it is, starting with the `have` bytes already in s->in; 0, -1 or
 * -2 as spool */
static int spool_plain(spool_io *s, size_t have, char *err, size_t errlen)
{
    for (;;) {
        s->nout += have;
        if (spool_check(s->lim, 0, s->nout, s->nin, err, errlen)) return -1;
        if (have && write_all(s->out, s->in, have)) {
            fail(err, errlen, "cannot write a temporary file in %s: %s", s->dir, strerror(errno));
            return -2;
        }
        ssize_t r = read_some(s->in_fd, s->in, TS_SPOOL);
        if (r < 0) { fail(err, errlen, "read error: %s", strerror(errno)); return -1; }
        if (r == 0) break;
        have = (size_t)r;
        s->nin += have;
    }
    return 0;
}

/* a gzip input inflated (all members, zero padding between them ignored), starting with the
 * `have` bytes already in s->in; 0, -1 or -2 as spool */
static int spool_gzip(spool_io *s, size_t have, char *err, size_t errlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return fail(err, errlen, "gzip: cannot initialise zlib");
    int rc = -1;
    zs.next_in = s->in;
    zs.avail_in = (uInt)have;
    int in_member = 1, eof = 0;
    for (;;) {
        if (zs.avail_in == 0 && !eof) {
            ssize_t r = read_some(s->in_fd, s->in, TS_SPOOL);
            if (r < 0) { fail(err, errlen, "read error: %s", strerror(errno)); goto done; }
            if (r == 0) eof = 1;
            zs.next_in = s->in;
            zs.avail_in = (uInt)r;
            s->nin += (uint64_t)r;
        }
        if (zs.avail_in == 0 && eof) {
            if (in_member) { fail(err, errlen, "gzip: truncated input (unexpected end of compressed data)"); goto done; }
            break;
        }
        if (!in_member) {
            /* between members: zero padding is ignored, anything else must be a member */
            if (zs.next_in[0] == 0) { zs.next_in++; zs.avail_in--; continue; }
            if (inflateReset(&zs) != Z_OK) { fail(err, errlen, "gzip: zlib reset failed"); goto done; }
            in_member = 1;
        }
        zs.next_out = s->ob;
        zs.avail_out = TS_SPOOL;
        int zr = inflate(&zs, Z_NO_FLUSH);
        size_t produced = TS_SPOOL - zs.avail_out;
        s->nout += produced;
        if (spool_check(s->lim, 1, s->nout, s->nin - zs.avail_in, err, errlen)) goto done;
        if (produced && write_all(s->out, s->ob, produced)) {
            fail(err, errlen, "cannot write a temporary file in %s: %s", s->dir, strerror(errno));
            rc = -2;
            goto done;
        }
        if (zr == Z_STREAM_END) in_member = 0;
        else if (zr == Z_BUF_ERROR) { if (zs.avail_in && !produced) { fail(err, errlen, "gzip: corrupt data"); goto done; } }
        else if (zr != Z_OK) {
            fail(err, errlen, "gzip: corrupt data: %s", zs.msg ? zs.msg : "inflate failed");
            goto done;
        }
    }
    rc = 0;
done:
    inflateEnd(&zs);
    return rc;
}

/* the first two bytes of a torch.save file: a zip archive ("PK"), or the legacy format's
 * pickled magic number (protocol 2-5: PROTO 2..5; protocol 0 and 1: "L1195...L") */
static int torch_start(const uint8_t *b)
{
    return (b[0] == 'P' && b[1] == 'K') || (b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) || (b[0] == 'L' && b[1] == '1');
}

/* copy in_fd (from its current position) into an unlinked temporary file, inflating gzip
 * (all members) when it starts with 1f 8b, within the limits. Returns the temporary fd, -1
 * for bad input (or a limit passed) or -2 when the environment failed (no temporary file in
 * $TMPDIR, a full disk, no memory). */
static int spool(int in_fd, const pt_limits *lim, int *gz, char *err, size_t errlen)
{
    spool_io s = { in_fd, -1, NULL, lim, NULL, NULL, 0, 0 };
    s.in = malloc(TS_SPOOL);
    s.ob = malloc(TS_SPOOL);
    int rc = -1;
    if (!s.in || !s.ob) { fail(err, errlen, "out of memory"); rc = -2; goto done; }

    /* first bytes decide */
    size_t have = 0;
    while (have < 2) {
        ssize_t r = read_some(in_fd, s.in + have, TS_SPOOL - have);
        if (r < 0) { fail(err, errlen, "read error: %s", strerror(errno)); goto done; }
        if (r == 0) break;
        have += (size_t)r;
    }
    s.nin = have;
    *gz = have >= 2 && s.in[0] == 0x1f && s.in[1] == 0x8b;
    /* a plain input that cannot be torch.save data (/dev/zero, /dev/urandom, text) is refused
     * on its first bytes, not spooled up to AS_MAX_SPOOL first */
    if (!*gz && have >= 2 && !torch_start(s.in)) {
        fail(err, errlen, "not a torch.save file (it starts with bytes %02x %02x: neither a zip archive, the legacy "
             "magic number nor gzip)", s.in[0], s.in[1]);
        goto done;
    }
    /* the temporary only now: input refused on its first bytes leaves $TMPDIR alone */
    s.out = make_tmp(&s.dir, err, errlen);
    if (s.out < 0) { rc = -2; goto done; }
    rc = *gz ? spool_gzip(&s, have, err, errlen) : spool_plain(&s, have, err, errlen);
done:
    free(s.in);
    free(s.ob);
    if (rc) {
        if (s.out >= 0) close(s.out);
        return rc;
    }
    return s.out;
}

/* ---------------------------------------------------------------- storages and hooks */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int storage_find(pt_file *f, const char *key)
{
    if (!f->htcap) return -1;
    for (size_t i = hash_str(key) & (f->htcap - 1);; i = (i + 1) & (f->htcap - 1)) {
        if (!f->ht[i]) return -1;
        if (!strcmp(f->st[f->ht[i] - 1].key, key)) return f->ht[i] - 1;
    }
}

static int ht_insert(pt_file *f, int idx)
{
    if ((size_t)(f->nst + 1) * 2 > f->htcap) {
        size_t nc = f->htcap ? 2 * f->htcap : 64;
        int *nh = calloc(nc, sizeof *nh);
        if (!nh) return -1;
        for (size_t j = 0; j < f->htcap; j++)
            if (f->ht[j]) {
                size_t i = hash_str(f->st[f->ht[j] - 1].key) & (nc - 1);
                while (nh[i]) i = (i + 1) & (nc - 1);
                nh[i] = f->ht[j];
            }
        free(f->ht);
        f->ht = nh;
        f->htcap = nc;
    }
    size_t i = hash_str(f->st[idx].key) & (f->htcap - 1);
    while (f->ht[i]) i = (i + 1) & (f->htcap - 1);
    f->ht[i] = idx + 1;
    return 0;
}

static const struct { const char *name; pt_dtype d; } storage_classes[] = {
    {"FloatStorage", PT_FLOAT32}, {"HalfStorage", PT_FLOAT16}, {"BFloat16Storage", PT_BFLOAT16},
    {"DoubleStorage", PT_FLOAT64}, {"LongStorage", PT_INT64}, {"IntStorage", PT_INT32},
    {"ShortStorage", PT_INT16}, {"CharStorage", PT_INT8}, {"ByteStorage", PT_UINT8},
    {"BoolStorage", PT_BOOL}, {"UntypedStorage", PT_UINT8},
};

static const struct { const char *name; pt_dtype d; } dtype_globals[] = {
    {"bool", PT_BOOL}, {"uint8", PT_UINT8}, {"int8", PT_INT8}, {"int16", PT_INT16},
    {"short", PT_INT16}, {"int32", PT_INT32}, {"int", PT_INT32}, {"int64", PT_INT64},
    {"long", PT_INT64}, {"float16", PT_FLOAT16}, {"half", PT_FLOAT16}, {"bfloat16", PT_BFLOAT16},
    {"float32", PT_FLOAT32}, {"float", PT_FLOAT32}, {"float64", PT_FLOAT64}, {"double", PT_FLOAT64},
};

static as_pickle_obj *h_find_class(as_pickle *p, void *ctx, const char *module, const char *name)
{
    (void)ctx;
    int id = 0;
    if (!strcmp(module, "torch._utils")) {
        if (!strcmp(name, "_rebuild_tensor_v2")) id = G_V2;
        else if (!strcmp(name, "_rebuild_tensor_v3")) id = G_V3;
        else if (!strcmp(name, "_rebuild_parameter") || !strcmp(name, "_rebuild_parameter_with_state")) id = G_PARAM;
    } else if (!strcmp(module, "collections")) {
        if (!strcmp(name, "OrderedDict")) id = G_ODICT;
    } else if (!strcmp(module, "torch") || !strcmp(module, "torch.storage")) {
        for (size_t i = 0; i < sizeof storage_classes / sizeof *storage_classes; i++)
            if (!strcmp(name, storage_classes[i].name) && (module[5] == 0 || !strcmp(name, "UntypedStorage")))
                id = G_STORAGE + storage_classes[i].d;
        if (!module[5])
            for (size_t i = 0; i < sizeof dtype_globals / sizeof *dtype_globals; i++)
                if (!strcmp(name, dtype_globals[i].name)) id = G_DTYPE + dtype_globals[i].d;
    }
    if (!id) return as_pickle_fail(p, "global '%s %s' is not allowed", module, name);
    return as_pickle_global(p, module, name, id);
}

static int is_int(const as_pickle_obj *o) { return o && o->kind == AS_PK_INT; }

static as_pickle_obj *h_persistent_load(as_pickle *p, void *ctx, as_pickle_obj *pid)
{
    pt_file *f = ctx;
    if (pid->kind != AS_PK_TUPLE || pid->u.c.n < 5 || !as_pickle_is_str(pid->u.c.v[0], "storage"))
        return as_pickle_fail(p, "persistent id is not a ('storage', ...) tuple");
    as_pickle_obj **v = pid->u.c.v;
    if (v[1]->kind != AS_PK_GLOBAL || v[1]->tag < G_STORAGE || v[1]->tag >= G_STORAGE + PT_NDTYPES)
        return as_pickle_fail(p, "persistent id: storage type is not a supported storage class");
    pt_dtype dt = (pt_dtype)(v[1]->tag - G_STORAGE);
    char key[TS_MAX_KEY + 1];
    if (v[2]->kind == AS_PK_STR) {
        if (v[2]->u.s.len > TS_MAX_KEY || strlen(v[2]->u.s.p) != v[2]->u.s.len)
            return as_pickle_fail(p, "persistent id: bad storage key");
        memcpy(key, v[2]->u.s.p, v[2]->u.s.len + 1);
    } else if (is_int(v[2])) {
        snprintf(key, sizeof key, "%lld", (long long)v[2]->u.i);
    } else {
        return as_pickle_fail(p, "persistent id: storage key is a %s", as_pickle_kind_name(v[2]->kind));
    }
    if (!is_int(v[4]) || v[4]->u.i < 0)
        return as_pickle_fail(p, "persistent id: storage '%s' has a bad element count", key);
    int64_t numel = v[4]->u.i;
    if ((uint64_t)numel > (uint64_t)INT64_MAX / dtype_sizes[dt])
        return as_pickle_fail(p, "persistent id: storage '%s' is too large", key);
    int64_t voff = 0, vnumel = -1;
    if (pid->u.c.n >= 6 && v[5]->kind != AS_PK_NONE) {
        as_pickle_obj *vm = v[5];
        if (vm->kind != AS_PK_TUPLE || vm->u.c.n != 3 || !is_int(vm->u.c.v[1]) || !is_int(vm->u.c.v[2]))
            return as_pickle_fail(p, "persistent id: bad view metadata for storage '%s'", key);
        voff = vm->u.c.v[1]->u.i;
        vnumel = vm->u.c.v[2]->u.i;
        if (voff < 0 || vnumel < 0 || voff > numel || vnumel > numel - voff)
            return as_pickle_fail(p, "persistent id: view [%lld, +%lld) lies outside storage '%s' of %lld elements",
                                  (long long)voff, (long long)vnumel, key, (long long)numel);
    }
    int idx = storage_find(f, key);
    if (idx >= 0) {
        if (f->st[idx].dtype != dt || f->st[idx].numel != numel)
            return as_pickle_fail(p, "storage '%s' appears with different types or sizes", key);
    } else {
        if (f->nst == f->capst) {
            int nc = f->capst ? 2 * f->capst : 16;
            if (nc > TS_MAX_TENSORS) return as_pickle_fail(p, "too many storages");
            ts_storage *ns = realloc(f->st, (size_t)nc * sizeof *ns);
            if (!ns) return as_pickle_fail(p, "out of memory");
            f->st = ns;
            f->capst = nc;
        }
        ts_storage *s = &f->st[f->nst];
        memset(s, 0, sizeof *s);
        s->key = strdup(key);
        if (!s->key) return as_pickle_fail(p, "out of memory");
        s->dtype = dt;
        s->numel = numel;
        s->nbytes = (uint64_t)numel * dtype_sizes[dt];
        idx = f->nst++;
        if (ht_insert(f, idx)) return as_pickle_fail(p, "out of memory");
    }
    as_pickle_obj *o = as_pickle_obj_new(p, K_STORAGE);
    if (!o) return NULL;
    o->u.x.a = idx;
    o->u.x.b = voff;
    o->u.x.c = vnumel;
    return o;
}

static as_pickle_obj *make_tensor(as_pickle *p, pt_file *f, as_pickle_obj **v, int has_dtype, as_pickle_obj *dto)
{
    pt_tensor t;
    memset(&t, 0, sizeof t);
    as_pickle_obj *so = v[0], *off = v[1], *size = v[2], *stride = v[3];
    if (so->kind != K_STORAGE) return as_pickle_fail(p, "tensor rebuild: first argument is a %s, not a storage", as_pickle_kind_name(so->kind));
    ts_storage *st = &f->st[so->u.x.a];
    t.storage = (int)so->u.x.a;
    t.dtype = st->dtype;
    if (has_dtype) {
        if (dto->kind != AS_PK_GLOBAL || dto->tag < G_DTYPE || dto->tag >= G_DTYPE + PT_NDTYPES)
            return as_pickle_fail(p, "tensor rebuild: unsupported dtype argument");
        t.dtype = (pt_dtype)(dto->tag - G_DTYPE);
    }
    if (!is_int(off) || off->u.i < 0) return as_pickle_fail(p, "tensor: bad storage offset");
    if (size->kind != AS_PK_TUPLE && size->kind != AS_PK_LIST) return as_pickle_fail(p, "tensor: size is not a tuple");
    if (stride->kind != AS_PK_TUPLE && stride->kind != AS_PK_LIST) return as_pickle_fail(p, "tensor: stride is not a tuple");
    if (size->u.c.n > PT_MAX_DIMS) return as_pickle_fail(p, "tensor: %u dimensions (at most %d supported)", size->u.c.n, PT_MAX_DIMS);
    if (stride->u.c.n != size->u.c.n) return as_pickle_fail(p, "tensor: size has %u dimensions, stride %u", size->u.c.n, stride->u.c.n);
    t.ndim = (int)size->u.c.n;
    int64_t numel = 1;
    for (int d = 0; d < t.ndim; d++) {
        as_pickle_obj *a = size->u.c.v[d], *b = stride->u.c.v[d];
        if (!is_int(a) || a->u.i < 0) return as_pickle_fail(p, "tensor: bad size in dimension %d", d);
        if (!is_int(b) || b->u.i < 0) return as_pickle_fail(p, "tensor: bad stride in dimension %d", d);
        t.shape[d] = a->u.i;
        t.stride[d] = b->u.i;
        if (__builtin_mul_overflow(numel, t.shape[d], &numel)) return as_pickle_fail(p, "tensor: too many elements");
    }
    t.numel = numel;
    size_t es = dtype_sizes[t.dtype], ses = dtype_sizes[st->dtype];
    int64_t voff = so->u.x.b;
    uint64_t cap = so->u.x.c >= 0 ? (uint64_t)so->u.x.c * ses : st->nbytes;   /* bytes */
    if (voff && es != ses) return as_pickle_fail(p, "tensor: storage view with a different dtype");
    t.storage_offset = off->u.i;
    if (numel > 0) {
        int64_t ext = off->u.i;
        for (int d = 0; d < t.ndim; d++) {
            int64_t m;
            if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &m) || __builtin_add_overflow(ext, m, &ext))
                return as_pickle_fail(p, "tensor: extent overflows");
        }
        uint64_t bytes;
        if (ext == INT64_MAX || __builtin_mul_overflow((uint64_t)ext + 1, (uint64_t)es, &bytes) || bytes > cap)
            return as_pickle_fail(p, "tensor: extent (offset %lld, last element %lld) lies outside storage '%s' of %llu bytes",
                                  (long long)off->u.i, (long long)ext, st->key, (unsigned long long)cap);
    }
    if (__builtin_add_overflow(t.storage_offset, voff, &t.storage_offset)) return as_pickle_fail(p, "tensor: bad storage offset");
    if (f->lim.max_tensors && f->nrecs >= f->lim.max_tensors)
        return as_pickle_fail(p, "more than %lld tensors (AS_MAX_TENSORS raises the limit)", (long long)f->lim.max_tensors);
    if (f->nrecs == f->caprecs) {
        int nc = f->caprecs ? 2 * f->caprecs : 16;
        if (nc > TS_MAX_TENSORS) return as_pickle_fail(p, "too many tensors");
        pt_tensor *nr = realloc(f->recs, (size_t)nc * sizeof *nr);
        if (!nr) return as_pickle_fail(p, "out of memory");
        f->recs = nr;
        f->caprecs = nc;
    }
    f->recs[f->nrecs] = t;
    as_pickle_obj *o = as_pickle_obj_new(p, K_TENSOR);
    if (!o) return NULL;
    o->u.x.a = f->nrecs++;
    return o;
}

static as_pickle_obj *h_call(as_pickle *p, void *ctx, as_pickle_obj *fn, as_pickle_obj *args)
{
    pt_file *f = ctx;
    uint32_t n = args->u.c.n;
    as_pickle_obj **v = args->u.c.v;
    switch (fn->tag) {
    case G_ODICT:
        if (n) return as_pickle_fail(p, "OrderedDict with arguments is not supported");
        return as_pickle_obj_new(p, AS_PK_DICT);
    case G_V2:
        if (n != 6 && n != 7) return as_pickle_fail(p, "_rebuild_tensor_v2 takes 6 or 7 arguments, not %u", n);
        return make_tensor(p, f, v, 0, NULL);
    case G_V3:
        if (n != 7 && n != 8) return as_pickle_fail(p, "_rebuild_tensor_v3 takes 7 or 8 arguments, not %u", n);
        return make_tensor(p, f, v, 1, v[6]);
    case G_PARAM:
        if (n < 1 || v[0]->kind != K_TENSOR) return as_pickle_fail(p, "_rebuild_parameter: first argument is not a tensor");
        return v[0];
    default:
        return as_pickle_fail(p, "calling '%s' is not supported", fn->u.s.p);
    }
}

/* ---------------------------------------------------------------- object graph walk */

typedef struct {
    pt_file *f;
    char path[1024];
    size_t len;
    int overflow;
    long visits;
} walker;

static void wput(walker *w, const char *s, size_t n)
{
    if (w->overflow) return;
    if (n >= sizeof w->path - w->len) { w->overflow = 1; return; }
    memcpy(w->path + w->len, s, n);
    w->len += n;
    w->path[w->len] = 0;
}

static void wputc(walker *w, char c) { wput(w, &c, 1); }

static void wint(walker *w, int64_t v)
{
    char b[24];
    int k = sizeof b;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do b[--k] = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) b[--k] = '-';
    wput(w, b + k, sizeof b - (size_t)k);
}

/* Python repr of a str/bytes key */
static void wrepr(walker *w, const as_pickle_obj *k)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)k->u.s.p;
    size_t n = k->u.s.len;
    int bytes = k->kind == AS_PK_BYTES;
    char q = '\'';
    if (memchr(s, '\'', n) && !memchr(s, '"', n)) q = '"';
    if (bytes) wputc(w, 'b');
    wputc(w, q);
    for (size_t i = 0; i < n && !w->overflow; i++) {
        unsigned c = s[i];
        if (c == (unsigned char)q || c == '\\') { wputc(w, '\\'); wputc(w, (char)c); }
        else if (c == '\n') wput(w, "\\n", 2);
        else if (c == '\r') wput(w, "\\r", 2);
        else if (c == '\t') wput(w, "\\t", 2);
        else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            wput(w, e, 4);
        } else wputc(w, (char)c);
    }
    wputc(w, q);
}

static void wkey(walker *w, const as_pickle_obj *k)
{
    char b[40];
    switch (k->kind) {
    case AS_PK_STR: case AS_PK_BYTES: wrepr(w, k); break;
    case AS_PK_INT: wint(w, k->u.i); break;
    case AS_PK_BOOL: wput(w, k->u.i ? "True" : "False", k->u.i ? 4 : 5); break;
    case AS_PK_NONE: wput(w, "None", 4); break;
    case AS_PK_FLOAT: snprintf(b, sizeof b, "%.17g", k->u.f); wput(w, b, strlen(b)); break;
    default: snprintf(b, sizeof b, "<%s>", as_pickle_kind_name(k->kind)); wput(w, b, strlen(b)); break;
    }
}

/* only tensors and containers are walked; other values are skipped without cost */
static int is_node(const as_pickle_obj *o)
{
    return o->kind == K_TENSOR || o->kind == AS_PK_TUPLE || o->kind == AS_PK_LIST || o->kind == AS_PK_DICT;
}

static int walk(walker *w, const as_pickle_obj *o, int depth)
{
    pt_file *f = w->f;
    if (++w->visits > TS_MAX_VISITS) return FFAIL(f, "pickle: object graph too large (shared or cyclic containers)");
    if (depth > TS_MAX_DEPTH) return FFAIL(f, "pickle: objects nested deeper than %d levels (or cyclic)", TS_MAX_DEPTH);
    if (o->kind == K_TENSOR) {
        if (w->overflow || w->len >= sizeof f->tensors[0].path)
            return FFAIL(f, "pickle: tensor path longer than %zu characters", sizeof f->tensors[0].path - 1);
        if (f->lim.max_tensors && f->ntensors >= f->lim.max_tensors)
            return FFAIL(f, "pickle: more than %lld tensors in the object (shared containers count once per path; "
                         "AS_MAX_TENSORS raises the limit)", (long long)f->lim.max_tensors);
        if (f->ntensors == f->captensors) {
            int nc = f->captensors ? 2 * f->captensors : 16;
            if (nc > TS_MAX_TENSORS) return FFAIL(f, "too many tensors");
            pt_tensor *nt = realloc(f->tensors, (size_t)nc * sizeof *nt);
            if (!nt) return FFAIL(f, "out of memory");
            f->tensors = nt;
            f->captensors = nc;
        }
        pt_tensor *t = &f->tensors[f->ntensors++];
        *t = f->recs[o->u.x.a];
        memcpy(t->path, w->path, w->len + 1);
        return 0;
    }
    size_t len = w->len;
    int ovf = w->overflow, dict = o->kind == AS_PK_DICT;
    for (uint32_t i = dict; i < o->u.c.n; i += 1 + dict) {
        const as_pickle_obj *v = o->u.c.v[i];
        if (!is_node(v)) continue;
        wputc(w, '[');
        if (dict) wkey(w, o->u.c.v[i - 1]);
        else wint(w, i);
        wputc(w, ']');
        if (walk(w, v, depth + 1)) return -1;
        w->len = len;
        w->overflow = ovf;
        w->path[len] = 0;
    }
    return 0;
}

static int collect(pt_file *f, const as_pickle_obj *root)
{
    switch (root->kind) {
    case K_TENSOR: f->root_kind = "tensor"; break;
    case AS_PK_TUPLE: f->root_kind = "tuple"; break;
    case AS_PK_LIST: f->root_kind = "list"; break;
    case AS_PK_DICT: f->root_kind = "dict"; break;
    default: f->root_kind = "other"; break;
    }
    if (!is_node(root)) return 0;
    walker *w = calloc(1, sizeof *w);
    if (!w) return FFAIL(f, "out of memory");
    w->f = f;
    int r = walk(w, root, 0);
    free(w);
    return r;
}

/* ---------------------------------------------------------------- zip */

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const ts_entry *)a)->name, ((const ts_entry *)b)->name);
}

static ts_entry *entry_find(ts_entry *e, size_t n, const char *name)
{
    ts_entry key = {.name = (char *)name};
    return bsearch(&key, e, n, sizeof *e, entry_cmp);
}

/* data offset of a stored entry, checked to lie inside the file */
static int entry_data(pt_file *f, const ts_entry *e, uint64_t *data)
{
    uint8_t h[30];
    if (e->method != 0)
        return FFAIL(f, "zip: entry '%s' is compressed (method %d); only stored entries are supported", e->name, e->method);
    if (e->flags & 1) return FFAIL(f, "zip: entry '%s' is encrypted", e->name);
    if (e->csize != e->size) return FFAIL(f, "zip: entry '%s' is stored but its sizes differ", e->name);
    if (pread_all(f, h, 30, e->lho, f->err, f->errlen)) return -1;
    if (rd32(h) != 0x04034b50) return FFAIL(f, "zip: entry '%s' has no local header at byte %llu", e->name, (unsigned long long)e->lho);
    uint64_t d = e->lho + 30 + rd16(h + 26) + rd16(h + 28);
    if (d > f->size || e->size > f->size - d) return FFAIL(f, "zip: entry '%s' lies outside the file", e->name);
    *data = d;
    return 0;
}

/* the end of central directory record (ZIP64's when there is one): the number of entries,
 * the central directory's size and offset, checked to lie inside the file; *saturated: the
 * classic record's fields overflowed. 0 or -1 with f->err */
static int zip_eocd(pt_file *f, uint64_t *nent, uint64_t *cdsize, uint64_t *cdoff, int *saturated)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    uint8_t *tail = NULL;
    int rc = -1;
    if (f->size < 22) { fail(err, errlen, "zip: file too short (truncated?)"); goto out; }
    size_t tl = f->size < 22 + 65535 + 20 ? (size_t)f->size : 22 + 65535 + 20;
    uint64_t tbase = f->size - tl;
    tail = malloc(tl);
    if (!tail) { fail(err, errlen, "out of memory"); goto out; }
    if (pread_all(f, tail, tl, tbase, err, errlen)) goto out;
    int64_t ep = -1;
    for (int64_t i = (int64_t)tl - 22; i >= 0; i--)
        if (rd32(tail + i) == 0x06054b50 && tbase + (uint64_t)i + 22 + rd16(tail + i + 20) <= f->size) { ep = i; break; }
    if (ep < 0) { fail(err, errlen, "zip: end of central directory not found (truncated file?)"); goto out; }
    const uint8_t *e = tail + ep;
    uint64_t eocd = tbase + (uint64_t)ep;
    *nent = rd16(e + 10), *cdsize = rd32(e + 12), *cdoff = rd32(e + 16);
    *saturated = *nent == 0xffff || *cdsize == 0xffffffff || *cdoff == 0xffffffff;
    if (rd16(e + 4) != 0 && rd16(e + 4) != 0xffff) { fail(err, errlen, "zip: multi-disk archives are not supported"); goto out; }
    int have64 = ep >= 20 && rd32(e - 20) == 0x07064b50;
    if (have64) {
        uint64_t z = rd64(e - 20 + 8);
        uint8_t r[56];
        if (z > eocd - 20 || eocd - 20 - z < 56) { fail(err, errlen, "zip: ZIP64 end of central directory lies outside the file"); goto out; }
        if (pread_all(f, r, 56, z, err, errlen)) goto out;
        if (rd32(r) != 0x06064b50) { fail(err, errlen, "zip: bad ZIP64 end of central directory record"); goto out; }
        *nent = rd64(r + 32);
        *cdsize = rd64(r + 40);
        *cdoff = rd64(r + 48);
        eocd = z;
    } else if (*saturated) {
        fail(err, errlen, "zip: ZIP64 end of central directory locator is missing");
        goto out;
    }
    if (*cdoff > eocd || *cdsize > eocd - *cdoff) { fail(err, errlen, "zip: central directory lies outside the file"); goto out; }
    if (*cdsize > TS_MAX_CD) { fail(err, errlen, "zip: central directory of %llu bytes is too large", (unsigned long long)*cdsize); goto out; }
    if (*nent > *cdsize / 46) { fail(err, errlen, "zip: central directory claims %llu entries in %llu bytes", (unsigned long long)*nent, (unsigned long long)*cdsize); goto out; }
    rc = 0;
out:
    free(tail);
    return rc;
}

/* the sizes and offset of en that are saturated (ws, wc, wo) from the ZIP64 extra field
 * among the xl bytes of extra fields at x; 0, or -1 when it is missing or short */
static int zip64_extra(ts_entry *en, const uint8_t *x, size_t xl, int ws, int wc, int wo)
{
    const uint8_t *xe = x + xl;
    int found = 0;
    while (xe - x >= 4) {
        unsigned id = rd16(x), sz = rd16(x + 2);
        if ((size_t)(xe - x - 4) < sz) break;
        if (id == 1) {
            const uint8_t *q = x + 4, *qe = q + sz;
            found = 1;
            if (ws) { if (qe - q < 8) { found = 0; break; } en->size = rd64(q); q += 8; }
            if (wc) { if (qe - q < 8) { found = 0; break; } en->csize = rd64(q); q += 8; }
            if (wo) { if (qe - q < 8) { found = 0; break; } en->lho = rd64(q); q += 8; }
            break;
        }
        x += 4 + sz;
    }
    return found ? 0 : -1;
}

/* central directory entry i at cd + *pos (cdsize bytes in all) into en, its name malloc'd
 * (en->name stays NULL when that failed); *need64 set when it needs ZIP64's fields, *pos
 * moved past it. 0 or -1 with f->err */
static int zip_entry(pt_file *f, const uint8_t *cd, uint64_t cdsize, size_t *pos, size_t i, ts_entry *en, int *need64)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    if (cdsize - *pos < 46 || rd32(cd + *pos) != 0x02014b50) return fail(err, errlen, "zip: central directory entry %zu is malformed", i);
    const uint8_t *c = cd + *pos;
    size_t nl = rd16(c + 28), xl = rd16(c + 30), cl = rd16(c + 32);
    if (cdsize - *pos - 46 < nl + xl + cl) return fail(err, errlen, "zip: central directory entry %zu is malformed", i);
    en->flags = rd16(c + 8);
    en->method = rd16(c + 10);
    en->csize = rd32(c + 20);
    en->size = rd32(c + 24);
    en->lho = rd32(c + 42);
    en->name = malloc(nl + 1);
    if (!en->name) return fail(err, errlen, "out of memory");
    memcpy(en->name, c + 46, nl);
    en->name[nl] = 0;
    if (strlen(en->name) != nl) return fail(err, errlen, "zip: central directory entry %zu has a bad name", i);
    int ws = en->size == 0xffffffff, wc = en->csize == 0xffffffff, wo = en->lho == 0xffffffff;
    if (ws || wc || wo) {
        *need64 = 1;
        if (zip64_extra(en, c + 46 + nl, xl, ws, wc, wo))
            return fail(err, errlen, "zip: central directory entry %zu lacks its ZIP64 extra field", i);
    }
    if (en->lho > f->size || f->size - en->lho < 30 || en->csize > f->size)
        return fail(err, errlen, "zip: central directory entry %zu lies outside the file", i);
    *pos += 46 + nl + xl + cl;
    return 0;
}

/* a zip file's entries, sorted by name */
typedef struct {
    ts_entry *ents;
    size_t nents;
} zip_dir;

static void zip_dir_free(zip_dir *z)
{
    for (size_t i = 0; i < z->nents; i++) free(z->ents[i].name);
    free(z->ents);
}

/* the central directory read into z (f->fmt: 1 when it needs ZIP64), sorted, no name twice;
 * 0 or -1 with f->err (z holds what was read: zip_dir_free) */
static int zip_directory(pt_file *f, zip_dir *z)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    uint64_t nent, cdsize, cdoff;
    int saturated;
    if (zip_eocd(f, &nent, &cdsize, &cdoff, &saturated)) return -1;
    int rc = -1;
    uint8_t *cd = malloc(cdsize ? cdsize : 1);
    z->ents = calloc(nent ? nent : 1, sizeof *z->ents);
    if (!cd || !z->ents) { fail(err, errlen, "out of memory"); goto out; }
    if (pread_all(f, cd, cdsize, cdoff, err, errlen)) goto out;
    int need64 = saturated;
    size_t pos = 0;
    while (z->nents < nent) {
        int r = zip_entry(f, cd, cdsize, &pos, z->nents, &z->ents[z->nents], &need64);
        if (z->ents[z->nents].name) z->nents++;
        if (r) goto out;
    }
    f->fmt = need64 ? 1 : 0;
    qsort(z->ents, z->nents, sizeof *z->ents, entry_cmp);
    for (size_t i = 1; i < z->nents; i++)
        if (!strcmp(z->ents[i].name, z->ents[i - 1].name)) { fail(err, errlen, "zip: duplicate entry '%s'", z->ents[i].name); goto out; }
    rc = 0;
out:
    free(cd);
    return rc;
}

/* "<prefix>/byteorder", when there is one, must say little; name holds "<prefix>/" (plen
 * bytes) and room for more. 0 or -1 with f->err */
static int zip_byteorder(pt_file *f, const zip_dir *z, char *name, size_t plen)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    strcpy(name + plen, "byteorder");
    const ts_entry *bo = entry_find(z->ents, z->nents, name);
    if (!bo) return 0;
    uint64_t d;
    char b[16] = {0};
    if (entry_data(f, bo, &d)) return -1;
    if (bo->size >= sizeof b) return fail(err, errlen, "zip: bad byteorder entry");
    if (pread_all(f, b, bo->size, d, err, errlen)) return -1;
    if (!strcmp(b, "big")) return fail(err, errlen, "zip: big-endian file (byteorder 'big') is not supported");
    if (strcmp(b, "little")) return fail(err, errlen, "zip: unknown byteorder '%.15s'", b);
    return 0;
}

/* every storage the pickle named found at its entry "<prefix>/data/KEY" with its size; name
 * (namesize bytes) holds "<prefix>/" (plen bytes). 0 or -1 with f->err */
static int zip_storages(pt_file *f, const zip_dir *z, char *name, size_t namesize, size_t plen)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    for (int s = 0; s < f->nst; s++) {
        ts_storage *st = &f->st[s];
        snprintf(name + plen, namesize - plen, "data/%s", st->key);
        const ts_entry *en = entry_find(z->ents, z->nents, name);
        if (!en) return fail(err, errlen, "zip: storage '%s' has no entry '%s'", st->key, name);
        if (entry_data(f, en, &st->offset)) return -1;
        if (en->size != st->nbytes)
            return fail(err, errlen, "zip: storage '%s' holds %llu bytes, the pickle says %llu (%lld x %s)", st->key,
                        (unsigned long long)en->size, (unsigned long long)st->nbytes, (long long)st->numel,
                        pt_dtype_name(st->dtype));
        st->have = 1;
    }
    return 0;
}

static int open_zip(pt_file *f, as_pickle *p)
{
    char *err = f->err;
    size_t errlen = f->errlen;
    zip_dir z = { NULL, 0 };
    int rc = -1;
    if (zip_directory(f, &z)) goto out;
    /* the prefix folder: the entry "<prefix>/data.pkl" */
    const ts_entry *pkl = NULL;
    for (size_t i = 0; i < z.nents && !pkl; i++) {
        const char *s = strchr(z.ents[i].name, '/');
        if (s && s != z.ents[i].name && !strcmp(s, "/data.pkl")) pkl = &z.ents[i];
    }
    if (!pkl) { fail(err, errlen, "zip: no '<prefix>/data.pkl' entry (not a torch.save file?)"); goto out; }
    size_t plen = strlen(pkl->name) - strlen("data.pkl");   /* includes the slash */
    char name[TS_MAX_KEY + 600];
    if (plen + 32 > sizeof name) { fail(err, errlen, "zip: prefix too long"); goto out; }
    memcpy(name, pkl->name, plen);
    if (zip_byteorder(f, &z, name, plen)) goto out;
    uint64_t d;
    if (entry_data(f, pkl, &d)) goto out;
    as_pickle_obj *root = as_pickle_load(p, NULL, 0, f->fd, d, d + pkl->size, NULL);
    if (!root) { fail(err, errlen, "%s", as_pickle_error(p)); goto out; }
    if (zip_storages(f, &z, name, sizeof name, plen)) goto out;
    rc = collect(f, root);
out:
    zip_dir_free(&z);
    return rc;
}

/* ---------------------------------------------------------------- legacy */

static const __int128 LEGACY_MAGIC = ((__int128)0x1950 << 64) | (__int128)0xa86a20f9469cfc6cull;

static int open_legacy(pt_file *f, as_pickle *p)
{
    uint64_t pos = 0;
    as_pickle_obj *o = as_pickle_load(p, NULL, 0, f->fd, 0, f->size, &pos);
    if (!o || !((o->kind == AS_PK_BIGINT && o->u.big == LEGACY_MAGIC)))
        return FFAIL(f, "not a torch.save file (neither a zip archive nor the legacy magic number)");
    o = as_pickle_load(p, NULL, 0, f->fd, pos, f->size, &pos);
    if (!o) return FFAIL(f, "legacy: %s", as_pickle_error(p));
    if (!is_int(o) || o->u.i != 1001) return FFAIL(f, "legacy: unsupported protocol version");
    o = as_pickle_load(p, NULL, 0, f->fd, pos, f->size, &pos);
    if (!o) return FFAIL(f, "legacy: %s", as_pickle_error(p));
    if (o->kind == AS_PK_DICT)
        for (uint32_t i = 0; i + 1 < o->u.c.n; i += 2)
            if (as_pickle_is_str(o->u.c.v[i], "little_endian") && o->u.c.v[i + 1]->kind == AS_PK_BOOL && !o->u.c.v[i + 1]->u.i)
                return FFAIL(f, "legacy: big-endian file is not supported");
    as_pickle_obj *root = as_pickle_load(p, NULL, 0, f->fd, pos, f->size, &pos);
    if (!root) return fail(f->err, f->errlen, "%s", as_pickle_error(p));
    o = as_pickle_load(p, NULL, 0, f->fd, pos, f->size, &pos);
    if (!o) return FFAIL(f, "legacy: storage keys: %s", as_pickle_error(p));
    if (o->kind != AS_PK_LIST && o->kind != AS_PK_TUPLE) return FFAIL(f, "legacy: storage keys are not a list");
    for (uint32_t i = 0; i < o->u.c.n; i++) {
        as_pickle_obj *k = o->u.c.v[i];
        char key[TS_MAX_KEY + 1];
        if (k->kind == AS_PK_STR && k->u.s.len <= TS_MAX_KEY) memcpy(key, k->u.s.p, k->u.s.len + 1);
        else if (is_int(k)) snprintf(key, sizeof key, "%lld", (long long)k->u.i);
        else return FFAIL(f, "legacy: storage key %u is not a string", i);
        int s = storage_find(f, key);
        if (s < 0) return FFAIL(f, "legacy: storage '%s' is not used by the object", key);
        ts_storage *st = &f->st[s];
        if (st->have) return FFAIL(f, "legacy: storage '%s' is listed twice", key);
        uint8_t b[8];
        if (pos > f->size || f->size - pos < 8) return FFAIL(f, "legacy: storage '%s': truncated file", key);
        if (pread_all(f, b, 8, pos, f->err, f->errlen)) return -1;
        int64_t cnt = (int64_t)rd64(b);
        if (cnt != st->numel)
            return FFAIL(f, "legacy: storage '%s' holds %lld elements, the pickle says %lld", key, (long long)cnt, (long long)st->numel);
        pos += 8;
        if (st->nbytes > f->size - pos) return FFAIL(f, "legacy: storage '%s' runs past the end of the file (truncated?)", key);
        st->offset = pos;
        st->have = 1;
        pos += st->nbytes;
    }
    for (int s = 0; s < f->nst; s++)
        if (!f->st[s].have) return FFAIL(f, "legacy: storage '%s' has no data", f->st[s].key);
    f->fmt = 2;
    return collect(f, root);
}

/* ---------------------------------------------------------------- open / close */

int pt_limits_init(pt_limits *l, char *err, size_t errlen)
{
    l->max_spool = PT_DEFAULT_MAX_SPOOL;
    l->max_ratio = PT_DEFAULT_MAX_RATIO;
    l->max_tensors = PT_DEFAULT_MAX_TENSORS;
    const char *e = getenv("AS_MAX_SPOOL");
    if (e && *e && as_parse_size(e, &l->max_spool))
        return fail(err, errlen, "AS_MAX_SPOOL: '%s' is not a size in bytes (e.g. 64G; 0 = no limit)", e);
    if ((e = getenv("AS_MAX_GZIP_RATIO")) && *e) {
        char *end;
        errno = 0;
        double v = strtod(e, &end);
        if (errno || end == e || *end || !(v >= 0) || !isfinite(v))
            return fail(err, errlen, "AS_MAX_GZIP_RATIO: '%s' is not a ratio (e.g. 1000; 0 = no limit)", e);
        l->max_ratio = v;
    }
    if ((e = getenv("AS_MAX_TENSORS")) && *e) {
        char *end;
        errno = 0;
        long long v = strtoll(e, &end, 10);
        if (errno || end == e || *end || v < 0 || v > INT32_MAX)
            return fail(err, errlen, "AS_MAX_TENSORS: '%s' is not a count in [0, %d] (0 = no limit)", e, INT32_MAX);
        l->max_tensors = v;
    }
    return 0;
}

/* what a file that is not a regular one is, for messages */
static const char *file_kind(mode_t m)
{
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    return "an unknown kind of file";
}

static int order_cmp(const void *a, const void *b, void *ctx)
{
    const pt_tensor *t = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    int c = strcmp(t[i].path, t[j].path);
    return c ? c : (i > j) - (i < j);
}

pt_file *pt_open(const char *path, char *err, size_t errlen)
{
    return pt_open_code(path, NULL, NULL, err, errlen);
}

pt_file *pt_open_limits(const char *path, const pt_limits *lim, char *err, size_t errlen)
{
    return pt_open_code(path, lim, NULL, err, errlen);
}

/* the input of pt_open_code: standard input (path NULL or "-") or the named regular file
 * (*own: opened here), its stat in *sb; the fd, or -1 with err (and *code for a usage
 * error), nothing left open */
static int open_input(const char *path, struct stat *sb, int *own, int *code, char *err, size_t errlen)
{
    int in;
    *own = 0;
    if (!path || !strcmp(path, "-")) in = STDIN_FILENO;
    else {
        /* O_NONBLOCK: a FIFO without a writer opens at once (and is refused below) instead
         * of blocking the open forever */
        in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (in < 0) { fail(err, errlen, "cannot open: %s", strerror(errno)); return -1; }
        *own = 1;
    }
    if (fstat(in, sb)) fail(err, errlen, "cannot stat: %s", strerror(errno));
    else if (S_ISDIR(sb->st_mode)) fail(err, errlen, "is a directory");
    else if (*own && !S_ISREG(sb->st_mode)) {
        /* a named input is read by position; a device or a FIFO would be spooled whole (up
         * to AS_MAX_SPOOL of /dev/zero) or block forever */
        fail(err, errlen, "is %s, not a regular file (a named input is read by position, not streamed)", file_kind(sb->st_mode));
        *code = AS_EXIT_USAGE;
    } else {
        const int fl = *own ? fcntl(in, F_GETFL) : 0;
        if (!*own || (fl >= 0 && fcntl(in, F_SETFL, fl & ~O_NONBLOCK) >= 0)) return in;
        fail(err, errlen, "cannot read: %s", strerror(errno));
    }
    if (*own) close(in);
    *own = 0;
    return -1;
}

pt_file *pt_open_code(const char *path, const pt_limits *lim, int *code, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    int code_unused;
    if (!code) code = &code_unused;
    *code = AS_EXIT_DATA;
    pt_file *f = calloc(1, sizeof *f);
    if (!f) { fail(err, errlen, "out of memory"); *code = AS_EXIT_ENV; return NULL; }
    f->fd = -1;
    if (lim) f->lim = *lim;
    else if (pt_limits_init(&f->lim, err, errlen)) { free(f); return NULL; }
    if (f->lim.max_tensors <= 0 || f->lim.max_tensors > TS_MAX_TENSORS) f->lim.max_tensors = TS_MAX_TENSORS;
    f->err = err;
    f->errlen = errlen;
    as_pickle *p = NULL;
    int own = 0;
    struct stat sb;
    int in = open_input(path, &sb, &own, code, err, errlen);
    if (in < 0) goto bad;
    uint8_t m[4] = {0};
    int seekable = S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode);
    if (seekable) {
        ssize_t r = pread(in, m, 2, 0);
        if (r < 0) { fail(err, errlen, "read error: %s", strerror(errno)); goto bad; }
        if (r == 2 && m[0] == 0x1f && m[1] == 0x8b) {
            if (lseek(in, 0, SEEK_SET) < 0) { fail(err, errlen, "cannot seek: %s", strerror(errno)); goto bad; }
            seekable = 0;
        }
    }
    if (seekable) {
        f->fd = in;
        own = 0;
    } else {
        f->fd = spool(in, &f->lim, &f->gz, err, errlen);
        if (f->fd < 0) {
            if (f->fd == -2) *code = AS_EXIT_ENV;
            f->fd = -1;
            goto bad;
        }
        if (fstat(f->fd, &sb)) { fail(err, errlen, "cannot stat: %s", strerror(errno)); goto bad; }
    }
    if (f->fd == in && !S_ISREG(sb.st_mode)) {
        off_t e = lseek(f->fd, 0, SEEK_END);
        if (e < 0) { fail(err, errlen, "cannot seek: %s", strerror(errno)); goto bad; }
        f->size = (uint64_t)e;
    } else {
        f->size = (uint64_t)sb.st_size;
    }
    if (f->size == 0) { fail(err, errlen, f->gz ? "gzip: empty after decompression" : "empty file"); goto bad; }
    ssize_t r = pread(f->fd, m, f->size < 4 ? (size_t)f->size : 4, 0);
    if (r < 0) { fail(err, errlen, "read error: %s", strerror(errno)); goto bad; }
    as_pickle_hooks hooks = {f, h_find_class, h_persistent_load, h_call};
    p = as_pickle_new(&hooks);
    if (!p) { fail(err, errlen, "out of memory"); goto bad; }
    int rc = (m[0] == 'P' && m[1] == 'K') ? open_zip(f, p) : open_legacy(f, p);
    if (rc) goto bad;
    if (!(f->order = malloc(((size_t)f->ntensors + 1) * sizeof *f->order))) { fail(err, errlen, "out of memory"); goto bad; }
    for (int i = 0; i < f->ntensors; i++) f->order[i] = i;
    qsort_r(f->order, (size_t)f->ntensors, sizeof *f->order, order_cmp, f->tensors);
    as_pickle_free(p);
    free(f->recs);
    f->recs = NULL;
    free(f->ht);
    f->ht = NULL;
    f->err = NULL;
    f->errlen = 0;
    if (own) close(in);
    return f;
bad:
    if (err && errlen && !err[0]) fail(err, errlen, "cannot read the file");
    as_pickle_free(p);
    if (own) close(in);
    pt_close(f);
    return NULL;
}

void pt_close(pt_file *f)
{
    if (!f) return;
    if (f->fd >= 0 && f->fd != STDIN_FILENO) close(f->fd);
    for (int i = 0; i < f->nst; i++) free(f->st[i].key);
    free(f->st);
    free(f->ht);
    free(f->recs);
    free(f->tensors);
    free(f->order);
    free(f->buf);
    free(f);
}

uint64_t pt_size(const pt_file *f) { return f->size; }

int pt_ntensors(const pt_file *f) { return f->ntensors; }

const pt_tensor *pt_get(const pt_file *f, int i)
{
    return i >= 0 && i < f->ntensors ? &f->tensors[i] : NULL;
}

int pt_find(const pt_file *f, const char *path)
{
    /* the first in file order among equal paths (a dict may repeat a key) */
    size_t lo = 0, hi = (size_t)f->ntensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(f->tensors[f->order[mid]].path, path) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < (size_t)f->ntensors && !strcmp(f->tensors[f->order[lo]].path, path) ? f->order[lo] : -1;
}

const char *pt_root_kind(const pt_file *f) { return f->root_kind ? f->root_kind : "other"; }

const char *pt_format(const pt_file *f)
{
    static const char *names[2][3] = {{"zip", "zip64", "legacy"}, {"zip (gzip)", "zip64 (gzip)", "legacy (gzip)"}};
    return names[f->gz ? 1 : 0][f->fmt];
}

int pt_nstorages(const pt_file *f) { return f->nst; }

uint64_t pt_storage_bytes(const pt_file *f, int s) { return s >= 0 && s < f->nst ? f->st[s].nbytes : 0; }

/* ---------------------------------------------------------------- element reads */

enum { M_I64, M_F64, M_RAW };

static int64_t f2i(double d)
{
    if (d != d) return 0;
    if (d >= 9223372036854775808.0) return INT64_MAX;
    if (d < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

static double ld_f64(pt_dtype dt, const uint8_t *b)
{
    switch (dt) {
    case PT_BOOL: return b[0] != 0;
    case PT_UINT8: return b[0];
    case PT_INT8: return (int8_t)b[0];
    case PT_INT16: return (int16_t)rd16(b);
    case PT_INT32: return (int32_t)rd32(b);
    case PT_INT64: return (double)(int64_t)rd64(b);
    case PT_FLOAT16: return as_half_to_float(rd16(b));
    case PT_BFLOAT16: return as_bf16_to_float(rd16(b));
    case PT_FLOAT32: { uint32_t u = rd32(b); float x; memcpy(&x, &u, 4); return x; }
    case PT_FLOAT64: { uint64_t u = rd64(b); double x; memcpy(&x, &u, 8); return x; }
    default: return 0;
    }
}

static int64_t ld_i64(pt_dtype dt, const uint8_t *b)
{
    switch (dt) {
    case PT_BOOL: return b[0] != 0;
    case PT_UINT8: return b[0];
    case PT_INT8: return (int8_t)b[0];
    case PT_INT16: return (int16_t)rd16(b);
    case PT_INT32: return (int32_t)rd32(b);
    case PT_INT64: return (int64_t)rd64(b);
    default: return f2i(ld_f64(dt, b));
    }
}

/* convert n elements at src (step bytes apart) into out[0..n) */
static void convert(pt_dtype dt, const uint8_t *src, size_t step, size_t n, int mode, void *out)
{
    size_t es = dtype_sizes[dt];
    if (mode == M_RAW) {
        uint8_t *o = out;
        if (step == es) memcpy(o, src, n * es);
        else for (size_t k = 0; k < n; k++) memcpy(o + k * es, src + k * step, es);
        return;
    }
    if (mode == M_I64) {
        int64_t *o = out;
        switch (dt) {
        case PT_INT32: for (size_t k = 0; k < n; k++) o[k] = (int32_t)rd32(src + k * step); break;
        case PT_INT64: for (size_t k = 0; k < n; k++) o[k] = (int64_t)rd64(src + k * step); break;
        case PT_UINT8: for (size_t k = 0; k < n; k++) o[k] = src[k * step]; break;
        default: for (size_t k = 0; k < n; k++) o[k] = ld_i64(dt, src + k * step); break;
        }
    } else {
        double *o = out;
        switch (dt) {
        case PT_INT32: for (size_t k = 0; k < n; k++) o[k] = (int32_t)rd32(src + k * step); break;
        case PT_FLOAT32: for (size_t k = 0; k < n; k++) o[k] = ld_f64(PT_FLOAT32, src + k * step); break;
        default: for (size_t k = 0; k < n; k++) o[k] = ld_f64(dt, src + k * step); break;
        }
    }
}

static size_t out_size(int mode, pt_dtype dt) { return mode == M_RAW ? dtype_sizes[dt] : 8; }

/* n contiguous elements starting at storage element e (in tensor dtype units) */
static int read_run(pt_file *f, const pt_tensor *t, uint64_t base, int64_t e, int64_t n, int mode,
                    uint8_t *out, char *err, size_t errlen)
{
    size_t es = dtype_sizes[t->dtype], per = f->bufcap / es;
    if (mode == M_RAW)   /* the stored bytes as they are: straight into out, no copy */
        return n > 0 ? pread_all(f, out, (size_t)n * es, base + (uint64_t)e * es, err, errlen) : 0;
    while (n > 0) {
        size_t k = n < (int64_t)per ? (size_t)n : per;
        if (pread_all(f, f->buf, k * es, base + (uint64_t)e * es, err, errlen)) return -1;
        convert(t->dtype, f->buf, es, k, mode, out);
        out += k * out_size(mode, t->dtype);
        e += (int64_t)k;
        n -= (int64_t)k;
    }
    return 0;
}

static int read_elems(pt_file *f, int i, int64_t start, int64_t n, int mode, void *outv, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!f || i < 0 || i >= f->ntensors) return fail(err, errlen, "no tensor %d", i);
    const pt_tensor *t = &f->tensors[i];
    if (start < 0 || n < 0 || start > t->numel || n > t->numel - start)
        return fail(err, errlen, "elements [%lld, +%lld) are outside tensor '%s' of %lld elements",
                    (long long)start, (long long)n, t->path, (long long)t->numel);
    if (n == 0) return 0;
    if (!f->buf) {
        f->bufcap = f->size < TS_CHUNK ? (size_t)f->size + 8 : TS_CHUNK;
        if (!(f->buf = malloc(f->bufcap))) return fail(err, errlen, "out of memory");
    }
    const ts_storage *st = &f->st[t->storage];
    uint64_t base = st->offset;
    size_t es = dtype_sizes[t->dtype], os = out_size(mode, t->dtype);
    uint8_t *out = outv;
    int contig = 1;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (t->stride[d] != expect) contig = 0;
        expect *= t->shape[d];
    }
    if (contig || t->ndim == 0) return read_run(f, t, base, t->storage_offset + start, n, mode, out, err, errlen);

    int64_t idx[PT_MAX_DIMS];
    int64_t r = start;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = r % t->shape[d];
        r /= t->shape[d];
    }
    int last = t->ndim - 1;
    while (n > 0) {
        int64_t run = t->shape[last] - idx[last];
        if (run > n) run = n;
        int64_t e = t->storage_offset;
        for (int d = 0; d < t->ndim; d++) e += idx[d] * t->stride[d];
        int64_t s = t->stride[last];
        if (s == 1 || run == 1) {
            if (read_run(f, t, base, e, run, mode, out, err, errlen)) return -1;
        } else if ((uint64_t)((run - 1) * s + 1) * es <= f->bufcap) {
            size_t span = (size_t)((run - 1) * s + 1) * es;
            if (pread_all(f, f->buf, span, base + (uint64_t)e * es, err, errlen)) return -1;
            convert(t->dtype, f->buf, (size_t)s * es, (size_t)run, mode, out);
        } else {
            for (int64_t k = 0; k < run; k++) {
                uint8_t b[8];
                if (pread_all(f, b, es, base + (uint64_t)(e + k * s) * es, err, errlen)) return -1;
                convert(t->dtype, b, es, 1, mode, out + (size_t)k * os);
            }
        }
        out += (size_t)run * os;
        n -= run;
        idx[last] += run;
        for (int d = last; d > 0 && idx[d] == t->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
    return 0;
}

int pt_read_i64(pt_file *f, int i, int64_t start, int64_t n, int64_t *out, char *err, size_t errlen)
{
    return read_elems(f, i, start, n, M_I64, out, err, errlen);
}

int pt_read_f64(pt_file *f, int i, int64_t start, int64_t n, double *out, char *err, size_t errlen)
{
    return read_elems(f, i, start, n, M_F64, out, err, errlen);
}

int pt_read_raw(pt_file *f, int i, int64_t start, int64_t n, void *out, char *err, size_t errlen)
{
    return read_elems(f, i, start, n, M_RAW, out, err, errlen);
}
