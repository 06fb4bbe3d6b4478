/* stream.c - the zstd + msgpack record stream; see stream.h */
#include "stream.h"
#include "common.h"
#include "half.h"
#include "output.h"
#include "reclimits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "autoshard streams are little-endian; this host is not (add byte swapping)"
#endif

/* ==== reader ========================================================================= */

struct as_reader {
    FILE *f;
    int own;
    char name[512];
    ZSTD_DCtx *dctx;
    /* compressed input */
    unsigned char *in;
    size_t insize;
    ZSTD_inBuffer zin;
    int in_eof;
    int started;          /* saw at least one byte */
    size_t frame_left;    /* last ZSTD_decompressStream hint: 0 = at a frame boundary */
    int out_full;         /* last call filled its output: more may be buffered in zstd */
    /* decompressed bytes */
    char *buf;
    size_t cap, len, pos;
    uint64_t nrec;        /* records returned so far */
    int need_header;      /* next record must be a header */
    msgpack_unpacked up;
    char err[1600];
    size_t rec_cap;
    uint64_t max_objects;  /* msgpack objects per record (AS_MAX_OBJECTS) */
};

size_t as_record_cap(void)
{
    const char *e = getenv("AS_MAX_RECORD");
    uint64_t v;
    if (e && *e && as_parse_size(e, &v) == 0 && v > 0) return (size_t)v;
    return AS_RECORD_CAP_DEFAULT;
}

static as_reader *reader_new(FILE *f, const char *name, int own)
{
    as_reader *r = as_calloc(1, sizeof *r);
    r->f = f;
    r->own = own;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) as_oom("zstd");
    r->insize = ZSTD_DStreamInSize();
    r->in = as_malloc(r->insize);
    r->zin.src = r->in;
    r->need_header = 1;
    r->rec_cap = as_record_cap();
    r->max_objects = (uint64_t)as_limit(AS_LIM_OBJECTS);
    msgpack_unpacked_init(&r->up);
    return r;
}

static as_reader *reader_open(const char *path, char *err, size_t errlen)
{
    if (!path || !strcmp(path, "-")) return reader_new(stdin, "<stdin>", 0);
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return NULL; }
    return reader_new(f, path, 1);
}

as_reader *as_reader_open(const char *path)
{
    char err[1024];
    as_reader *r = reader_open(path, err, sizeof err);
    if (!r) as_err("%s", err);
    return r;
}

int as_read_records(char *const *files, int nfiles, as_record_fn fn, void *ctx, char *err, size_t errlen)
{
    static char *const none[] = { "-" };
    if (nfiles == 0) { files = none; nfiles = 1; }
    for (int fi = 0; fi < nfiles; fi++) {
        as_reader *r = reader_open(files[fi], err, errlen);
        if (!r) return -1;
        as_record rec;
        int rc;
        while ((rc = as_reader_next(r, &rec)) == 1)
            if (fn(ctx, r, &rec, err, errlen)) { as_reader_close(r); return -1; }
        if (rc < 0) snprintf(err, errlen, "%s", as_reader_error(r));
        as_reader_close(r);
        if (rc < 0) return -1;
    }
    return 0;
}

as_reader *as_reader_from_file(FILE *f, const char *name)
{
    return reader_new(f, name, 0);
}

void as_reader_close(as_reader *r)
{
    if (!r) return;
    if (r->own && r->f) fclose(r->f);
    ZSTD_freeDCtx(r->dctx);
    msgpack_unpacked_destroy(&r->up);
    free(r->in);
    free(r->buf);
    free(r);
}

const char *as_reader_error(const as_reader *r) { return r->err; }
const char *as_reader_name(const as_reader *r) { return r->name; }

__attribute__((format(printf, 2, 3)))
static int rfail(as_reader *r, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, sizeof r->err, "%s: record %llu: %s", r->name, (unsigned long long)(r->nrec + 1), msg);
    return -1;
}

/* Decompress at least `want` more bytes into buf (or until input ends).
 * Returns 1 if bytes were added, 0 at end of input, -1 on error. */
static int fill(as_reader *r, size_t want)
{
    size_t added = 0;
    size_t outstep = ZSTD_DStreamOutSize();
    while (added < want) {
        if (r->zin.pos == r->zin.size && !r->in_eof) {
            size_t n = fread(r->in, 1, r->insize, r->f);
            if (n == 0) {
                if (ferror(r->f)) return rfail(r, "read error: %s", strerror(errno));
                r->in_eof = 1;
            } else {
                if (!r->started) {
                    r->started = 1;
                    /* zstd frame magic 28 b5 2f fd, or a skippable frame 5? 2a 4d 18 */
                    int ok = n >= 4 && ((r->in[0] == 0x28 && r->in[1] == 0xb5 && r->in[2] == 0x2f && r->in[3] == 0xfd) ||
                                        ((r->in[0] & 0xf0) == 0x50 && r->in[1] == 0x2a && r->in[2] == 0x4d && r->in[3] == 0x18));
                    if (!ok) {
                        snprintf(r->err, sizeof r->err, "%s: not an autoshard stream (no zstd frame magic)", r->name);
                        return -1;
                    }
                }
                r->zin.size = n;
                r->zin.pos = 0;
            }
        }
        if (r->zin.pos == r->zin.size && r->in_eof && !r->out_full) {
            if (!r->started) {
                snprintf(r->err, sizeof r->err, "%s: empty input (expected an autoshard stream)", r->name);
                return -1;
            }
            if (r->frame_left != 0)
                return rfail(r, "truncated zstd frame (input ends inside a frame)");
            return added ? 1 : 0;
        }
        if (r->len + outstep > r->cap) {
            /* compact first, then grow */
            if (r->pos > 0) {
                memmove(r->buf, r->buf + r->pos, r->len - r->pos);
                r->len -= r->pos;
                r->pos = 0;
            }
            if (r->len + outstep > r->cap) {
                size_t nc = r->cap ? r->cap : (size_t)1 << 20;
                while (nc < r->len + outstep) nc *= 2;
                char *nb = realloc(r->buf, nc);
                if (!nb) return rfail(r, "out of memory growing the record buffer to %zu bytes", nc);
                r->buf = nb;
                r->cap = nc;
            }
        }
        ZSTD_outBuffer zout = { r->buf + r->len, r->cap - r->len, 0 };
        size_t rc = ZSTD_decompressStream(r->dctx, &zout, &r->zin);
        if (ZSTD_isError(rc)) return rfail(r, "corrupt zstd data: %s", ZSTD_getErrorName(rc));
        r->frame_left = rc;
        r->out_full = zout.pos == zout.size;
        r->len += zout.pos;
        added += zout.pos;
        if (rc == 0 && r->zin.pos < r->zin.size) {
            /* a new frame follows in the same input chunk: check it starts sanely */
        }
    }
    return 1;
}

/* Scan one msgpack object at p[0..n). Returns its size (>0), 0 if incomplete, or
 * (size_t)-1 if malformed (msg set). Never allocates; nesting limited to 32; at most maxobj
 * objects (the unpacker spends ~24 bytes on each, so a record of nils would otherwise cost
 * 24 times its size). */
static size_t scan(const unsigned char *p, size_t n, size_t cap, uint64_t maxobj, const char **msg)
{
    uint64_t stack[33];
    int depth = 0;
    uint64_t left = 1;      /* items left at the current level */
    uint64_t nobj = 0;
    size_t i = 0;
    for (;;) {
        while (left == 0) {
            if (depth == 0) return i;
            left = stack[--depth];
        }
        if (i >= n) return 0;
        if (++nobj > maxobj) { *msg = "too many msgpack objects"; return (size_t)-2; }
        unsigned b = p[i];
        uint64_t skip = 0, items = 0;
        size_t hdr = 1;
        int container = 0;
        if (b <= 0x7f || b >= 0xe0) { }
        else if (b >= 0x80 && b <= 0x8f) { items = 2 * (uint64_t)(b & 0x0f); container = 1; }
        else if (b >= 0x90 && b <= 0x9f) { items = b & 0x0f; container = 1; }
        else if (b >= 0xa0 && b <= 0xbf) { skip = b & 0x1f; }
        else {
            size_t need;
            switch (b) {
            case 0xc0: case 0xc2: case 0xc3: break;
            case 0xc1: *msg = "malformed msgpack (reserved byte 0xc1)"; return (size_t)-1;
            case 0xcc: case 0xd0: hdr = 2; break;
            case 0xcd: case 0xd1: hdr = 3; break;
            case 0xce: case 0xd2: case 0xca: hdr = 5; break;
            case 0xcf: case 0xd3: case 0xcb: hdr = 9; break;
            case 0xd4: hdr = 3; break;
            case 0xd5: hdr = 4; break;
            case 0xd6: hdr = 6; break;
            case 0xd7: hdr = 10; break;
            case 0xd8: hdr = 18; break;
            case 0xc4: case 0xd9: case 0xc7: need = 2; goto len8;
            case 0xc5: case 0xda: case 0xc8: need = 3; goto len16;
            case 0xc6: case 0xdb: case 0xc9: need = 5; goto len32;
            case 0xdc: need = 3; goto len16;
            case 0xdd: need = 5; goto len32;
            case 0xde: need = 3; goto len16;
            case 0xdf: need = 5; goto len32;
            default: *msg = "malformed msgpack"; return (size_t)-1;
            len8:
                if (i + need > n) return 0;
                skip = p[i + 1]; hdr = 2;
                if (b == 0xc7) { hdr = 3; }
                break;
            len16:
                if (i + need > n) return 0;
                skip = ((uint64_t)p[i + 1] << 8) | p[i + 2]; hdr = 3;
                if (b == 0xc8) hdr = 4;
                break;
            len32:
                if (i + need > n) return 0;
                skip = ((uint64_t)p[i + 1] << 24) | ((uint64_t)p[i + 2] << 16) | ((uint64_t)p[i + 3] << 8) | p[i + 4];
                hdr = 5;
                if (b == 0xc9) hdr = 6;
                break;
            }
            if (b == 0xdc || b == 0xdd) { items = skip; skip = 0; container = 1; }
            if (b == 0xde || b == 0xdf) { items = 2 * skip; skip = 0; container = 1; }
        }
        if (skip > cap || items > cap) { *msg = "a length field exceeds the record size cap"; return (size_t)-1; }
        if (i + hdr > n) return 0;
        i += hdr;
        if (skip) {
            if (skip > n - i) return 0;
            i += skip;
        }
        left--;
        if (container && items) {
            if (depth == 32) { *msg = "msgpack nesting deeper than 32 levels"; return (size_t)-1; }
            stack[depth++] = left;
            left = items;
        }
        if (i > cap) { *msg = "record exceeds the size cap"; return (size_t)-1; }
    }
}

static int check_header(as_reader *r, const msgpack_object *o)
{
    const msgpack_object *s = as_obj_get(o, "schema");
    if (!s || !as_obj_streq(s, AS_SCHEMA)) return rfail(r, "header does not name schema \"%s\"", AS_SCHEMA);
    int64_t v;
    if (as_obj_i64(o, "version", &v)) return rfail(r, "header has no integer version");
    if (v != AS_SCHEMA_VERSION)
        return rfail(r, "unsupported stream version %lld (this tool reads version %d)", (long long)v, AS_SCHEMA_VERSION);
    return 0;
}

int as_reader_next(as_reader *r, as_record *rec)
{
    if (r->err[0]) return -1;
    size_t want = 1;
    for (;;) {
        const char *msg = NULL;
        size_t avail = r->len - r->pos;
        size_t sz = avail ? scan((const unsigned char *)r->buf + r->pos, avail, r->rec_cap, r->max_objects, &msg) : 0;
        if (sz == (size_t)-1) return rfail(r, "%s", msg);
        if (sz == (size_t)-2)
            return rfail(r, "record holds more than %llu msgpack objects, the limit (%s raises it)",
                         (unsigned long long)r->max_objects, as_limit_env(AS_LIM_OBJECTS));
        if (sz > 0) break;
        if (avail > r->rec_cap) return rfail(r, "record exceeds the size cap of %zu bytes (set AS_MAX_RECORD to raise it)", r->rec_cap);
        /* grow geometrically so rescans stay linear overall */
        want = avail > want ? avail : want;
        int f = fill(r, want);
        if (f < 0) return -1;
        if (f == 0) {
            if (avail == 0) {
                if (r->nrec == 0 && !r->err[0])
                    return rfail(r, "stream holds no records");
                return 0;
            }
            return rfail(r, "truncated record (input ends after %zu of its bytes)", avail);
        }
    }
    const char *msg = NULL;
    size_t avail = r->len - r->pos;
    size_t sz = scan((const unsigned char *)r->buf + r->pos, avail, r->rec_cap, r->max_objects, &msg);
    size_t off = 0;
    msgpack_unpacked_destroy(&r->up);
    msgpack_unpacked_init(&r->up);
    msgpack_unpack_return ur = msgpack_unpack_next(&r->up, r->buf + r->pos, sz, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS || off != sz) return rfail(r, "malformed msgpack record");
    const msgpack_object *o = &r->up.data;
    if (o->type != MSGPACK_OBJECT_MAP) return rfail(r, "record is not a map");
    const msgpack_object *k = as_obj_get(o, "kind");
    if (!k || k->type != MSGPACK_OBJECT_STR || k->via.str.size == 0) return rfail(r, "record has no \"kind\" string");
    int is_header = k->via.str.size == 6 && !memcmp(k->via.str.ptr, "header", 6);
    if (r->need_header && !is_header) return rfail(r, "stream does not start with a header record");
    if (is_header && check_header(r, o)) return -1;
    r->need_header = 0;
    rec->obj = *o;
    rec->raw = r->buf + r->pos;
    rec->rawlen = sz;
    rec->kind = k->via.str.ptr;
    rec->kindlen = k->via.str.size;
    rec->index = ++r->nrec;
    r->pos += sz;
    /* after each zstd frame a new stream may begin (cat a b): it starts with a header */
    if (r->pos == r->len && r->frame_left == 0) {
        /* we cannot know whether a following frame starts a new stream or continues this
           one (writers may flush mid-stream); headers are accepted anywhere */
    }
    return 1;
}

int as_rec_is(const as_record *rec, const char *kind)
{
    size_t n = strlen(kind);
    return rec->kindlen == n && !memcmp(rec->kind, kind, n);
}

/* ==== writer ======================================================================== */

struct as_writer {
    as_out *o;          /* the file (a temporary renamed into place at close) or stdout */
    FILE *f;
    ZSTD_CCtx *cctx;
    unsigned char *out;
    size_t outsize;
    msgpack_sbuffer sb;
    msgpack_packer pk;
};

static _Noreturn void wdie(as_writer *w, const char *what)
{
    int e = as_out_error(w->o);
    if (!e) e = errno ? errno : EIO;
    const char *name = as_out_name(w->o);
    as_err("%s: %s: %s", name, what, strerror(e));
    as_out_abort(w->o);
    exit(AS_EXIT_ENV);
}

as_writer *as_writer_open(const char *path, int level, int workers)
{
    as_writer *w = as_calloc(1, sizeof *w);
    w->o = as_out_open(path);
    w->f = as_out_file(w->o);
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx) as_oom("zstd");
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level > 0 ? level : 3);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    if (workers > 0 && ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_nbWorkers, workers)))
        as_debug("this libzstd has no threads: compressing in the calling thread");
    w->outsize = ZSTD_CStreamOutSize();
    w->out = as_malloc(w->outsize);
    msgpack_sbuffer_init(&w->sb);
    msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);
    return w;
}

static void compress(as_writer *w, const void *p, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = { p, n, 0 };
    for (;;) {
        ZSTD_outBuffer out = { w->out, w->outsize, 0 };
        size_t rem = ZSTD_compressStream2(w->cctx, &out, &in, mode);
        if (ZSTD_isError(rem)) { errno = EIO; as_die(AS_EXIT_ENV, "zstd: %s", ZSTD_getErrorName(rem)); }
        if (out.pos && fwrite(w->out, 1, out.pos, w->f) != out.pos) wdie(w, "write error");
        if (mode == ZSTD_e_continue ? in.pos == in.size : rem == 0) break;
    }
}

msgpack_packer *as_writer_pk(as_writer *w)
{
    msgpack_sbuffer_clear(&w->sb);
    return &w->pk;
}

void as_writer_end_record(as_writer *w)
{
    compress(w, w->sb.data, w->sb.size, ZSTD_e_continue);
    msgpack_sbuffer_clear(&w->sb);
    if (w->sb.alloc > ((size_t)64 << 20)) {  /* do not keep a huge buffer around */
        msgpack_sbuffer_destroy(&w->sb);
        msgpack_sbuffer_init(&w->sb);
    }
}

void as_writer_raw(as_writer *w, const void *p, size_t n)
{
    compress(w, p, n, ZSTD_e_continue);
}

void as_writer_header(as_writer *w, const char *tool, int argc, char **argv)
{
    as_writer_header_extra(w, tool, argc, argv, 0, NULL, NULL);
}

void as_writer_header_extra(as_writer *w, const char *tool, int argc, char **argv, int nextra,
                            void (*extra)(msgpack_packer *, void *), void *ctx)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, (size_t)((argv ? 6 : 5) + (extra ? nextra : 0)));
    as_pack_kv_str(pk, "kind", "header");
    as_pack_kv_str(pk, "schema", AS_SCHEMA);
    as_pack_kv_i64(pk, "version", AS_SCHEMA_VERSION);
    as_pack_kv_str(pk, "tool", tool);
    as_pack_kv_str(pk, "tool_version", AS_VERSION);
    if (argv) {
        as_pack_str(pk, "args");
        msgpack_pack_array(pk, (size_t)argc);
        for (int i = 0; i < argc; i++) as_pack_str(pk, argv[i]);
    }
    if (extra) extra(pk, ctx);
    as_writer_end_record(w);
}

static void writer_free(as_writer *w)
{
    ZSTD_freeCCtx(w->cctx);
    msgpack_sbuffer_destroy(&w->sb);
    free(w->out);
    free(w);
}

void as_writer_close(as_writer *w)
{
    compress(w, NULL, 0, ZSTD_e_end);
    as_out_close(w->o);   /* flush, fsync, rename; exits 3 on error */
    writer_free(w);
}

void as_writer_abort(as_writer *w)
{
    if (!w) return;
    as_out_abort(w->o);
    writer_free(w);
}

/* key, then the array map up to and including the bin header; returns the body's size */
static size_t pack_array_head(msgpack_packer *pk, const char *k, as_dtype dt, int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    size_t nbytes = n * as_dtype_size(dt);
    as_pack_str(pk, k);
    msgpack_pack_map(pk, 3);
    as_pack_kv_str(pk, "dtype", as_dtype_name(dt));
    as_pack_str(pk, "shape");
    msgpack_pack_array(pk, (size_t)ndim);
    for (int i = 0; i < ndim; i++) msgpack_pack_int64(pk, shape[i]);
    as_pack_str(pk, "data");
    msgpack_pack_bin(pk, nbytes);
    return nbytes;
}

void as_writer_kv_array(as_writer *w, const char *k, as_dtype dt, const void *data, int ndim, const int64_t *shape)
{
    size_t nbytes = pack_array_head(&w->pk, k, dt, ndim, shape);
    /* what is packed so far goes out first, then the body itself */
    compress(w, w->sb.data, w->sb.size, ZSTD_e_continue);
    msgpack_sbuffer_clear(&w->sb);
    if (nbytes) compress(w, data, nbytes, ZSTD_e_continue);
}

void as_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

void as_pack_kv_str(msgpack_packer *pk, const char *k, const char *v) { as_pack_str(pk, k); as_pack_str(pk, v); }
void as_pack_kv_i64(msgpack_packer *pk, const char *k, int64_t v) { as_pack_str(pk, k); msgpack_pack_int64(pk, v); }
void as_pack_kv_f64(msgpack_packer *pk, const char *k, double v) { as_pack_str(pk, k); msgpack_pack_double(pk, v); }

void as_pack_kv_f64_list(msgpack_packer *pk, const char *k, const double *v, int n)
{
    as_pack_str(pk, k);
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_double(pk, v[i]);
}

void as_pack_kv_array(msgpack_packer *pk, const char *k, as_dtype dt, const void *data, int ndim, const int64_t *shape)
{
    size_t nbytes = pack_array_head(pk, k, dt, ndim, shape);
    msgpack_pack_bin_body(pk, data, nbytes);
}
