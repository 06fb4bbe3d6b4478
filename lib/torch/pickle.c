/* pickle.c - a small, restricted Python pickle interpreter; see pickle.h.
 * No dimension letters here: this file knows nothing about tensors.
 */
#include "pickle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK_MIN 32      /* objects in the first block; blocks double up to BLOCK_MAX */
#define BLOCK_MAX 4096
#define WINDOW_MIN (64 * 1024)

struct block {
    struct block *next;
    size_t n, cap;
    as_pickle_obj objs[];
};

struct as_pickle {
    as_pickle_hooks hooks;
    char err[512];
    /* objects, in a list of blocks of growing size */
    struct block *blocks;
    size_t nobjs;
    size_t items, strbytes;          /* totals, for the caps */
    as_pickle_obj *none, *yes, *no;  /* singletons */
    /* machine state for one load */
    as_pickle_obj **stack;
    size_t sp, stackcap;
    size_t *marks;
    size_t nmarks, markcap;
    as_pickle_obj **memo;
    size_t memocap, memolen;
    /* input */
    const uint8_t *mem;
    int fd;
    uint64_t pos, end, oppos;
    uint8_t *win;
    size_t wincap, winlen;
    uint64_t winstart;
};

/* ---------------------------------------------------------------- errors and objects */

void *as_pickle_fail(as_pickle *p, const char *fmt, ...)
{
    va_list ap;
    if (p->err[0]) return NULL;   /* keep the first error */
    memcpy(p->err, "pickle: ", 8);
    va_start(ap, fmt);
    vsnprintf(p->err + 8, sizeof p->err - 8, fmt, ap);
    va_end(ap);
    return NULL;
}

const char *as_pickle_error(const as_pickle *p)
{
    return p->err[0] ? p->err : "pickle: unknown error";
}

/* structural errors carry the opcode's offset */
#define VMFAIL(p, fmt, ...) \
    as_pickle_fail((p), fmt " (opcode at byte %llu)", ##__VA_ARGS__, (unsigned long long)(p)->oppos)

as_pickle *as_pickle_new(const as_pickle_hooks *hooks)
{
    as_pickle *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (hooks) p->hooks = *hooks;
    p->fd = -1;
    return p;
}

static void free_payload(as_pickle_obj *o)
{
    switch (o->kind) {
    case AS_PK_STR: case AS_PK_BYTES: case AS_PK_GLOBAL:
        free(o->u.s.p);
        break;
    case AS_PK_TUPLE: case AS_PK_LIST: case AS_PK_DICT: case AS_PK_SET:
        free(o->u.c.v);
        break;
    default:
        break;
    }
}

void as_pickle_free(as_pickle *p)
{
    if (!p) return;
    for (struct block *b = p->blocks, *nb; b; b = nb) {
        for (size_t i = 0; i < b->n; i++) free_payload(&b->objs[i]);
        nb = b->next;
        free(b);
    }
    free(p->stack);
    free(p->marks);
    free(p->memo);
    free(p->win);
    free(p);
}

as_pickle_obj *as_pickle_obj_new(as_pickle *p, int kind)
{
    if (p->nobjs >= AS_PICKLE_MAX_OBJECTS)
        return as_pickle_fail(p, "more than %d objects", AS_PICKLE_MAX_OBJECTS);
    struct block *b = p->blocks;
    if (!b || b->n == b->cap) {
        size_t cap = b ? (b->cap < BLOCK_MAX ? 2 * b->cap : BLOCK_MAX) : BLOCK_MIN;
        struct block *nb = malloc(sizeof *nb + cap * sizeof(as_pickle_obj));
        if (!nb) return as_pickle_fail(p, "out of memory");
        nb->next = b;
        nb->n = 0;
        nb->cap = cap;
        p->blocks = b = nb;
    }
    as_pickle_obj *o = &b->objs[b->n++];
    p->nobjs++;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    return o;
}

/* STR/BYTES/GLOBAL payload: a NUL-terminated copy */
static as_pickle_obj *new_bytes(as_pickle *p, int kind, const void *data, size_t len)
{
    if (len > AS_PICKLE_MAX_STRBYTES - p->strbytes)
        return as_pickle_fail(p, "strings exceed %zu bytes in total", (size_t)AS_PICKLE_MAX_STRBYTES);
    as_pickle_obj *o = as_pickle_obj_new(p, AS_PK_NONE);
    if (!o) return NULL;
    char *s = malloc(len + 1);
    if (!s) return as_pickle_fail(p, "out of memory");
    if (len) memcpy(s, data, len);
    s[len] = 0;
    p->strbytes += len;
    o->kind = kind;
    o->u.s.p = s;
    o->u.s.len = len;
    return o;
}

as_pickle_obj *as_pickle_global(as_pickle *p, const char *module, const char *name, int id)
{
    size_t lm = strlen(module), ln = strlen(name);
    char *buf = malloc(lm + ln + 2);
    if (!buf) return as_pickle_fail(p, "out of memory");
    memcpy(buf, module, lm);
    buf[lm] = ' ';
    memcpy(buf + lm + 1, name, ln + 1);
    as_pickle_obj *o = new_bytes(p, AS_PK_GLOBAL, buf, lm + ln + 1);
    free(buf);
    if (o) o->tag = id;
    return o;
}

int as_pickle_is_str(const as_pickle_obj *o, const char *s)
{
    return o && o->kind == AS_PK_STR && o->u.s.len == strlen(s) && !memcmp(o->u.s.p, s, o->u.s.len);
}

const char *as_pickle_kind_name(int kind)
{
    static const char *names[] = {"None", "bool", "int", "int", "int", "float", "str", "bytes",
                                  "tuple", "list", "dict", "set", "global"};
    if (kind >= 0 && kind < (int)(sizeof names / sizeof names[0])) return names[kind];
    return "object";
}

static as_pickle_obj *new_int(as_pickle *p, int64_t v)
{
    as_pickle_obj *o = as_pickle_obj_new(p, AS_PK_INT);
    if (o) o->u.i = v;
    return o;
}

static as_pickle_obj *new_big(as_pickle *p, __int128 v)
{
    if (v >= INT64_MIN && v <= INT64_MAX) return new_int(p, (int64_t)v);
    as_pickle_obj *o = as_pickle_obj_new(p, AS_PK_BIGINT);
    if (o) o->u.big = v;
    return o;
}

static as_pickle_obj *singleton(as_pickle *p, as_pickle_obj **slot, int kind, int64_t v)
{
    if (!*slot) {
        *slot = as_pickle_obj_new(p, kind);
        if (*slot) (*slot)->u.i = v;
    }
    return *slot;
}

static as_pickle_obj *new_container(as_pickle *p, int kind, as_pickle_obj **items, size_t n)
{
    if (n > AS_PICKLE_MAX_ITEMS - p->items)
        return as_pickle_fail(p, "containers exceed %d items in total", AS_PICKLE_MAX_ITEMS);
    as_pickle_obj *o = as_pickle_obj_new(p, AS_PK_NONE);
    if (!o) return NULL;
    if (n) {
        o->u.c.v = malloc(n * sizeof *items);
        if (!o->u.c.v) return as_pickle_fail(p, "out of memory");
        memcpy(o->u.c.v, items, n * sizeof *items);
    }
    o->kind = kind;
    o->u.c.n = o->u.c.cap = (uint32_t)n;
    p->items += n;
    return o;
}

static int add_items(as_pickle *p, as_pickle_obj *c, as_pickle_obj **items, size_t n)
{
    if (n > AS_PICKLE_MAX_ITEMS - p->items) {
        as_pickle_fail(p, "containers exceed %d items in total", AS_PICKLE_MAX_ITEMS);
        return -1;
    }
    size_t need = (size_t)c->u.c.n + n;
    if (need > c->u.c.cap) {
        size_t nc = c->u.c.cap ? c->u.c.cap : 4;
        while (nc < need) nc *= 2;
        as_pickle_obj **nv = realloc(c->u.c.v, nc * sizeof *nv);
        if (!nv) { as_pickle_fail(p, "out of memory"); return -1; }
        c->u.c.v = nv;
        c->u.c.cap = (uint32_t)nc;
    }
    if (n) memcpy(c->u.c.v + c->u.c.n, items, n * sizeof *items);
    c->u.c.n = (uint32_t)need;
    p->items += n;
    return 0;
}

/* ---------------------------------------------------------------- input */

/* make bytes [pos, pos+n) available (n <= end - pos checked by the caller) */
static const uint8_t *ensure(as_pickle *p, size_t n)
{
    if (p->mem) return p->mem + p->pos;
    if (p->pos >= p->winstart && p->pos + n <= p->winstart + p->winlen)
        return p->win + (p->pos - p->winstart);
    size_t want = n > WINDOW_MIN ? n : WINDOW_MIN;
    if (want > p->end - p->pos) want = (size_t)(p->end - p->pos);
    if (want > p->wincap) {
        uint8_t *nw = realloc(p->win, want);
        if (!nw) return as_pickle_fail(p, "out of memory");
        p->win = nw;
        p->wincap = want;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(p->fd, p->win + got, want - got, (off_t)(p->pos + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return as_pickle_fail(p, "read error: %s", strerror(errno));
        if (r == 0) return as_pickle_fail(p, "unexpected end of file");
        got += (size_t)r;
    }
    p->winstart = p->pos;
    p->winlen = want;
    return p->win;
}

/* consume n bytes */
static const uint8_t *take(as_pickle *p, uint64_t n)
{
    if (n > p->end - p->pos)
        return VMFAIL(p, "truncated: needs %llu more bytes, %llu left",
                      (unsigned long long)n, (unsigned long long)(p->end - p->pos));
    const uint8_t *b = ensure(p, (size_t)n);
    if (b) p->pos += n;
    return b;
}

/* consume a line up to '\n'; *len excludes the newline */
static const uint8_t *take_line(as_pickle *p, size_t max, size_t *len)
{
    size_t l = 256;
    for (;;) {
        uint64_t left = p->end - p->pos;
        if (l > left) l = (size_t)left;
        if (l > max + 1) l = max + 1;
        const uint8_t *b = ensure(p, l);
        if (!b) return NULL;
        const uint8_t *nl = memchr(b, '\n', l);
        if (nl) {
            *len = (size_t)(nl - b);
            p->pos += *len + 1;
            return b;
        }
        if (l == left) return VMFAIL(p, "truncated: line without newline");
        if (l >= max + 1) return VMFAIL(p, "line longer than %zu bytes", max);
        l *= 2;
    }
}

static uint32_t rd_u32(const uint8_t *b) { return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t rd_u64(const uint8_t *b) { return rd_u32(b) | (uint64_t)rd_u32(b + 4) << 32; }

/* ---------------------------------------------------------------- stack, marks, memo */

static size_t fence(const as_pickle *p) { return p->nmarks ? p->marks[p->nmarks - 1] : 0; }

static int push(as_pickle *p, as_pickle_obj *o)
{
    if (!o) return -1;
    if (p->sp == p->stackcap) {
        if (p->stackcap >= AS_PICKLE_MAX_STACK) { VMFAIL(p, "stack deeper than %d", AS_PICKLE_MAX_STACK); return -1; }
        size_t nc = p->stackcap ? 2 * p->stackcap : 64;
        as_pickle_obj **ns = realloc(p->stack, nc * sizeof *ns);
        if (!ns) { as_pickle_fail(p, "out of memory"); return -1; }
        p->stack = ns;
        p->stackcap = nc;
    }
    p->stack[p->sp++] = o;
    return 0;
}

static as_pickle_obj *pop(as_pickle *p)
{
    if (p->sp <= fence(p)) return VMFAIL(p, "stack underflow");
    return p->stack[--p->sp];
}

static as_pickle_obj *top(as_pickle *p)
{
    if (p->sp <= fence(p)) return VMFAIL(p, "stack underflow");
    return p->stack[p->sp - 1];
}

static int push_mark(as_pickle *p)
{
    if (p->nmarks == p->markcap) {
        if (p->markcap >= AS_PICKLE_MAX_MARKS) { VMFAIL(p, "more than %d nested marks", AS_PICKLE_MAX_MARKS); return -1; }
        size_t nc = p->markcap ? 2 * p->markcap : 16;
        size_t *nm = realloc(p->marks, nc * sizeof *nm);
        if (!nm) { as_pickle_fail(p, "out of memory"); return -1; }
        p->marks = nm;
        p->markcap = nc;
    }
    p->marks[p->nmarks++] = p->sp;
    return 0;
}

/* pop the top mark; returns its stack position or -1 */
static int64_t pop_mark(as_pickle *p)
{
    if (!p->nmarks) { VMFAIL(p, "no mark on the stack"); return -1; }
    return (int64_t)p->marks[--p->nmarks];
}

static int memo_put(as_pickle *p, uint64_t idx)
{
    as_pickle_obj *o = top(p);
    if (!o) return -1;
    if (idx >= AS_PICKLE_MAX_MEMO) { VMFAIL(p, "memo index %llu too large", (unsigned long long)idx); return -1; }
    if (idx >= p->memocap) {
        size_t nc = p->memocap ? p->memocap : 64;
        while (nc <= idx) nc *= 2;
        as_pickle_obj **nm = realloc(p->memo, nc * sizeof *nm);
        if (!nm) { as_pickle_fail(p, "out of memory"); return -1; }
        memset(nm + p->memocap, 0, (nc - p->memocap) * sizeof *nm);
        p->memo = nm;
        p->memocap = nc;
    }
    if (!p->memo[idx]) p->memolen++;
    p->memo[idx] = o;
    return 0;
}

static int memo_get(as_pickle *p, uint64_t idx)
{
    if (idx >= p->memocap || !p->memo[idx]) {
        VMFAIL(p, "memo entry %llu is not set", (unsigned long long)idx);
        return -1;
    }
    return push(p, p->memo[idx]);
}

/* ---------------------------------------------------------------- text forms (protocol 0) */

/* decimal (optionally signed) to a 128-bit value; -1 when malformed, 1 when too large */
static int parse_dec(const uint8_t *s, size_t n, __int128 *out)
{
    int neg = 0;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i == n) return -1;
    unsigned __int128 v = 0, lim = (unsigned __int128)1 << 127;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        unsigned d = s[i] - '0';
        if (v > (lim - d) / 10) return 1;
        v = v * 10 + d;
    }
    if (!neg && v == lim) return 1;
    *out = neg ? (__int128)(0 - v) : (__int128)v;
    return 0;
}

static as_pickle_obj *text_int(as_pickle *p, const uint8_t *s, size_t n, int is_long)
{
    if (is_long && n && s[n - 1] == 'L') n--;
    if (!is_long && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
        return singleton(p, s[1] == '1' ? &p->yes : &p->no, AS_PK_BOOL, s[1] == '1');
    __int128 v;
    int r = parse_dec(s, n, &v);
    if (r < 0) return VMFAIL(p, "malformed integer");
    if (r > 0) return as_pickle_obj_new(p, AS_PK_HUGEINT);
    return new_big(p, v);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(uint8_t *o, uint32_t c)
{
    if (c < 0x80) { o[0] = (uint8_t)c; return 1; }
    if (c < 0x800) { o[0] = 0xc0 | c >> 6; o[1] = 0x80 | (c & 63); return 2; }
    if (c < 0x10000) { o[0] = 0xe0 | c >> 12; o[1] = 0x80 | (c >> 6 & 63); o[2] = 0x80 | (c & 63); return 3; }
    o[0] = 0xf0 | c >> 18; o[1] = 0x80 | (c >> 12 & 63); o[2] = 0x80 | (c >> 6 & 63); o[3] = 0x80 | (c & 63);
    return 4;
}

/* STRING: a quoted Python 2 literal with backslash escapes */
static as_pickle_obj *text_string(as_pickle *p, const uint8_t *s, size_t n)
{
    if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
        return VMFAIL(p, "STRING opcode argument must be quoted");
    s++; n -= 2;
    uint8_t *o = malloc(n + 1);
    if (!o) return as_pickle_fail(p, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) { o[k++] = s[i]; continue; }
        uint8_t c = s[++i];
        switch (c) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case '0': o[k++] = 0; break;
        case '\\': case '\'': case '"': o[k++] = c; break;
        case 'x':
            if (i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
                o[k++] = (uint8_t)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
                i += 2;
                break;
            }
            /* fall through */
        default: o[k++] = '\\'; o[k++] = c; break;
        }
    }
    as_pickle_obj *r = new_bytes(p, AS_PK_STR, o, k);
    free(o);
    return r;
}

/* UNICODE: raw-unicode-escape (latin-1 bytes, \uXXXX and \UXXXXXXXX) to UTF-8 */
static as_pickle_obj *text_unicode(as_pickle *p, const uint8_t *s, size_t n)
{
    uint8_t *o = malloc(2 * n + 4);
    if (!o) return as_pickle_fail(p, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
            size_t nd = s[i + 1] == 'u' ? 4 : 8;
            uint32_t c = 0;
            int ok = i + 1 + nd < n;
            for (size_t d = 0; ok && d < nd; d++) {
                int h = hexval(s[i + 2 + d]);
                if (h < 0) ok = 0;
                else c = c * 16 + (uint32_t)h;
            }
            if (ok && c <= 0x10ffff) {
                k += put_utf8(o + k, c);
                i += 1 + nd;
                continue;
            }
        }
        k += put_utf8(o + k, s[i]);
    }
    as_pickle_obj *r = new_bytes(p, AS_PK_STR, o, k);
    free(o);
    return r;
}

/* LONG1 / LONG4 payload: little-endian two's complement */
static as_pickle_obj *bin_long(as_pickle *p, const uint8_t *b, size_t n)
{
    if (n == 0) return new_int(p, 0);
    int neg = b[n - 1] >> 7;
    while (n > 1 && b[n - 1] == (neg ? 0xff : 0x00) && (b[n - 2] >> 7) == neg) n--;
    if (n > 16) return as_pickle_obj_new(p, AS_PK_HUGEINT);
    unsigned __int128 v = neg ? ~(unsigned __int128)0 : 0;
    for (size_t i = 0; i < n; i++) {
        v &= ~((unsigned __int128)0xff << (8 * i));
        v |= (unsigned __int128)b[i] << (8 * i);
    }
    return new_big(p, (__int128)v);
}

/* ---------------------------------------------------------------- hooks */

static as_pickle_obj *find_class(as_pickle *p, const char *module, size_t lm, const char *name, size_t ln)
{
    if (strlen(module) != lm || strlen(name) != ln || lm > 256 || ln > 256)
        return as_pickle_fail(p, "malformed global name");
    if (!p->hooks.find_class) return as_pickle_fail(p, "global '%s %s' is not allowed", module, name);
    return p->hooks.find_class(p, p->hooks.ctx, module, name);
}

static as_pickle_obj *call(as_pickle *p, as_pickle_obj *fn, as_pickle_obj *args)
{
    if (args->kind != AS_PK_TUPLE) return VMFAIL(p, "call arguments must be a tuple, not %s", as_pickle_kind_name(args->kind));
    if (fn->kind != AS_PK_GLOBAL) return VMFAIL(p, "cannot call a %s", as_pickle_kind_name(fn->kind));
    if (!p->hooks.call) return as_pickle_fail(p, "calling '%s' is not allowed", fn->u.s.p);
    return p->hooks.call(p, p->hooks.ctx, fn, args);
}

static as_pickle_obj *persid(as_pickle *p, as_pickle_obj *pid)
{
    if (!p->hooks.persistent_load) return as_pickle_fail(p, "persistent ids are not supported");
    return p->hooks.persistent_load(p, p->hooks.ctx, pid);
}

/* ---------------------------------------------------------------- the machine */

/* container from the items above the top mark */
static as_pickle_obj *from_mark(as_pickle *p, int kind)
{
    int64_t k = pop_mark(p);
    if (k < 0) return NULL;
    size_t n = p->sp - (size_t)k;
    if (kind == AS_PK_DICT && n % 2) return VMFAIL(p, "odd number of items for a dict");
    as_pickle_obj *o = new_container(p, kind, p->stack + k, n);
    p->sp = (size_t)k;
    return o;
}

/* APPENDS / SETITEMS / ADDITEMS: items above the top mark go into the object below it */
static int extend_mark(as_pickle *p, int kind)
{
    int64_t k = pop_mark(p);
    if (k < 0) return -1;
    size_t n = p->sp - (size_t)k;
    if ((size_t)k <= fence(p)) { VMFAIL(p, "stack underflow"); return -1; }
    as_pickle_obj *c = p->stack[k - 1];
    if (c->kind != kind) {
        VMFAIL(p, "cannot add items to a %s", as_pickle_kind_name(c->kind));
        return -1;
    }
    if (kind == AS_PK_DICT && n % 2) { VMFAIL(p, "odd number of items for a dict"); return -1; }
    if (add_items(p, c, p->stack + k, n)) return -1;
    p->sp = (size_t)k;
    return 0;
}

static int tuple_n(as_pickle *p, size_t n)
{
    if (p->sp < fence(p) + n) { VMFAIL(p, "stack underflow"); return -1; }
    as_pickle_obj *o = new_container(p, AS_PK_TUPLE, p->stack + p->sp - n, n);
    if (!o) return -1;
    p->sp -= n;
    return push(p, o);
}

/* the number opcodes: INT, BININT, BININT1, BININT2, LONG, LONG1, LONG4, FLOAT, BINFLOAT */
static int op_number(as_pickle *p, int op)
{
    const uint8_t *b;
    size_t len;
    as_pickle_obj *o, *o2;
    (void)len; (void)o; (void)o2;
    switch (op) {
    case 'J':
        if (!(b = take(p, 4))) return -1;
        return push(p, new_int(p, (int32_t)rd_u32(b)));
    case 'K':
        if (!(b = take(p, 1))) return -1;
        return push(p, new_int(p, b[0]));
    case 'M':
        if (!(b = take(p, 2))) return -1;
        return push(p, new_int(p, b[0] | b[1] << 8));
    case 0x8a: /* LONG1 */
        if (!(b = take(p, 1))) return -1;
        len = b[0];
        if (!(b = take(p, len))) return -1;
        return push(p, bin_long(p, b, len));
    case 0x8b: { /* LONG4 */
        if (!(b = take(p, 4))) return -1;
        int32_t n = (int32_t)rd_u32(b);
        if (n < 0) { VMFAIL(p, "negative LONG4 length"); return -1; }
        if (!(b = take(p, (uint64_t)n))) return -1;
        return push(p, bin_long(p, b, (size_t)n));
    }
    case 'G': { /* BINFLOAT, big-endian */
        if (!(b = take(p, 8))) return -1;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | b[i];
        if (!(o = as_pickle_obj_new(p, AS_PK_FLOAT))) return -1;
        memcpy(&o->u.f, &u, 8);
        return push(p, o);
    }
    case 'I': case 'L':
        if (!(b = take_line(p, 4096, &len))) return -1;
        return push(p, text_int(p, b, len, op == 'L'));
    case 'F': {
        char tmp[128];
        if (!(b = take_line(p, sizeof tmp - 1, &len))) return -1;
        memcpy(tmp, b, len);
        tmp[len] = 0;
        char *end;
        double d = strtod(tmp, &end);
        if (end == tmp) { VMFAIL(p, "malformed float"); return -1; }
        if (!(o = as_pickle_obj_new(p, AS_PK_FLOAT))) return -1;
        o->u.f = d;
        return push(p, o);
    }

    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

/* the string and bytes opcodes, text and binary */
static int op_string(as_pickle *p, int op)
{
    const uint8_t *b;
    size_t len;
    as_pickle_obj *o, *o2;
    (void)len; (void)o; (void)o2;
    switch (op) {
    case 'S':
        if (!(b = take_line(p, AS_PICKLE_MAX_LINE, &len))) return -1;
        return push(p, text_string(p, b, len));
    case 'V':
        if (!(b = take_line(p, AS_PICKLE_MAX_LINE, &len))) return -1;
        return push(p, text_unicode(p, b, len));
    case 'X': case 'T': case 'B': /* BINUNICODE, BINSTRING, BINBYTES: 4-byte length */
    case 0x8c: case 'U': case 'C': /* SHORT_BINUNICODE, SHORT_BINSTRING, SHORT_BINBYTES */
    case 0x8d: case 0x8e: case 0x96: { /* BINUNICODE8, BINBYTES8, BYTEARRAY8 */
        uint64_t n;
        if (op == 0x8c || op == 'U' || op == 'C') {
            if (!(b = take(p, 1))) return -1;
            n = b[0];
        } else if (op == 'X' || op == 'T' || op == 'B') {
            if (!(b = take(p, 4))) return -1;
            n = rd_u32(b);
            if (op == 'T' && (int32_t)n < 0) { VMFAIL(p, "negative BINSTRING length"); return -1; }
        } else {
            if (!(b = take(p, 8))) return -1;
            n = rd_u64(b);
        }
        if (n > p->end - p->pos) {
            VMFAIL(p, "string of %llu bytes runs past the end (%llu left)",
                   (unsigned long long)n, (unsigned long long)(p->end - p->pos));
            return -1;
        }
        if (n > AS_PICKLE_MAX_STRBYTES - p->strbytes) {
            VMFAIL(p, "string of %llu bytes is too long", (unsigned long long)n);
            return -1;
        }
        if (!(b = take(p, n))) return -1;
        int kind = (op == 'B' || op == 'C' || op == 0x8e || op == 0x96) ? AS_PK_BYTES : AS_PK_STR;
        return push(p, new_bytes(p, kind, b, (size_t)n));
    }

    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

/* the memo opcodes: PUT, GET and their binary forms, MEMOIZE */
static int op_memo(as_pickle *p, int op)
{
    const uint8_t *b;
    size_t len;
    as_pickle_obj *o, *o2;
    (void)len; (void)o; (void)o2;
    switch (op) {
    case 'p': {
        if (!(b = take_line(p, 64, &len))) return -1;
        __int128 v;
        if (parse_dec(b, len, &v) || v < 0) { VMFAIL(p, "malformed PUT index"); return -1; }
        return memo_put(p, v > AS_PICKLE_MAX_MEMO ? AS_PICKLE_MAX_MEMO : (uint64_t)v);
    }
    case 'g': {
        if (!(b = take_line(p, 64, &len))) return -1;
        __int128 v;
        if (parse_dec(b, len, &v) || v < 0) { VMFAIL(p, "malformed GET index"); return -1; }
        return memo_get(p, v > AS_PICKLE_MAX_MEMO ? AS_PICKLE_MAX_MEMO : (uint64_t)v);
    }
    case 'q':
        if (!(b = take(p, 1))) return -1;
        return memo_put(p, b[0]);
    case 'r':
        if (!(b = take(p, 4))) return -1;
        return memo_put(p, rd_u32(b));
    case 0x94: return memo_put(p, p->memolen);
    case 'h':
        if (!(b = take(p, 1))) return -1;
        return memo_get(p, b[0]);
    case 'j':
        if (!(b = take(p, 4))) return -1;
        return memo_get(p, rd_u32(b));

    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

/* globals, calls and persistent ids: GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, NEWOBJ_EX, BUILD, BINPERSID, PERSID */
static int op_call(as_pickle *p, int op)
{
    const uint8_t *b;
    size_t len;
    as_pickle_obj *o, *o2;
    (void)len; (void)o; (void)o2;
    switch (op) {
    case 'c': {
        char mod[260], name[260];
        size_t lm, ln;
        if (!(b = take_line(p, 256, &lm))) return -1;
        memcpy(mod, b, lm);
        mod[lm] = 0;
        if (!(b = take_line(p, 256, &ln))) return -1;
        memcpy(name, b, ln);
        name[ln] = 0;
        return push(p, find_class(p, mod, lm, name, ln));
    }
    case 0x93: /* STACK_GLOBAL */
        if (!(o2 = pop(p)) || !(o = pop(p))) return -1;
        if (o->kind != AS_PK_STR || o2->kind != AS_PK_STR) { VMFAIL(p, "STACK_GLOBAL needs two strings"); return -1; }
        return push(p, find_class(p, o->u.s.p, o->u.s.len, o2->u.s.p, o2->u.s.len));
    case 'R': case 0x81: /* REDUCE, NEWOBJ */
        if (!(o2 = pop(p)) || !(o = pop(p))) return -1;
        return push(p, call(p, o, o2));
    case 0x92: { /* NEWOBJ_EX: cls, args, kwargs (must be empty) */
        as_pickle_obj *kw;
        if (!(kw = pop(p)) || !(o2 = pop(p)) || !(o = pop(p))) return -1;
        if (kw->kind != AS_PK_DICT || kw->u.c.n) { VMFAIL(p, "NEWOBJ_EX with keyword arguments is not supported"); return -1; }
        return push(p, call(p, o, o2));
    }
    case 'b': /* BUILD: state is dropped, the object stays as it is */
        if (!pop(p) || !top(p)) return -1;
        return 0;
    case 'Q': /* BINPERSID */
        if (!(o = pop(p))) return -1;
        return push(p, persid(p, o));
    case 'P':
        if (!(b = take_line(p, 4096, &len))) return -1;
        if (!(o = new_bytes(p, AS_PK_STR, b, len))) return -1;
        return push(p, persid(p, o));

    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

/* the protocol, framing, STOP and the stack's marks, POP and DUP */
static int op_control(as_pickle *p, int op, int *stop)
{
    const uint8_t *b;
    as_pickle_obj *o;
    switch (op) {
    case 0x80: /* PROTO */
        if (!(b = take(p, 1))) return -1;
        if (b[0] > 5) { VMFAIL(p, "unsupported protocol %d", b[0]); return -1; }
        return 0;
    case 0x95: /* FRAME: framing is only a hint for buffering */
        if (!(b = take(p, 8))) return -1;
        if (rd_u64(b) > p->end - p->pos) { VMFAIL(p, "frame of %llu bytes runs past the end", (unsigned long long)rd_u64(b)); return -1; }
        return 0;
    case '.': /* STOP */
        *stop = 1;
        return 0;
    case '(': return push_mark(p);
    case '0': /* POP */
        if (p->sp > fence(p)) { p->sp--; return 0; }
        if (p->nmarks) { p->nmarks--; return 0; }
        VMFAIL(p, "stack underflow");
        return -1;
    case '1': { /* POP_MARK */
        int64_t k = pop_mark(p);
        if (k < 0) return -1;
        p->sp = (size_t)k;
        return 0;
    }
    case '2': /* DUP */
        if (!(o = top(p))) return -1;
        return push(p, o);
    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

/* tuples, lists, dicts and sets: empty, from the mark, of 1-3 items, and added to */
static int op_container(as_pickle *p, int op)
{
    as_pickle_obj *o, *o2;
    switch (op) {
    case ')': return push(p, new_container(p, AS_PK_TUPLE, NULL, 0));
    case ']': return push(p, new_container(p, AS_PK_LIST, NULL, 0));
    case '}': return push(p, new_container(p, AS_PK_DICT, NULL, 0));
    case 0x8f: return push(p, new_container(p, AS_PK_SET, NULL, 0));
    case 't': return push(p, from_mark(p, AS_PK_TUPLE));
    case 'l': return push(p, from_mark(p, AS_PK_LIST));
    case 'd': return push(p, from_mark(p, AS_PK_DICT));
    case 0x91: return push(p, from_mark(p, AS_PK_SET)); /* FROZENSET */
    case 0x85: return tuple_n(p, 1);
    case 0x86: return tuple_n(p, 2);
    case 0x87: return tuple_n(p, 3);
    case 'a': /* APPEND */
        if (!(o = pop(p)) || !(o2 = top(p))) return -1;
        if (o2->kind != AS_PK_LIST) { VMFAIL(p, "APPEND to a %s", as_pickle_kind_name(o2->kind)); return -1; }
        return add_items(p, o2, &o, 1);
    case 'e': return extend_mark(p, AS_PK_LIST);
    case 0x90: return extend_mark(p, AS_PK_SET);
    case 'u': return extend_mark(p, AS_PK_DICT);
    case 's': { /* SETITEM */
        as_pickle_obj *kv[2];
        if (!(kv[1] = pop(p)) || !(kv[0] = pop(p)) || !(o = top(p))) return -1;
        if (o->kind != AS_PK_DICT) { VMFAIL(p, "SETITEM on a %s", as_pickle_kind_name(o->kind)); return -1; }
        return add_items(p, o, kv, 2);
    }
    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

static int step(as_pickle *p, int *stop)
{
    const uint8_t *b;
    p->oppos = p->pos;
    if (!(b = take(p, 1))) return -1;
    int op = b[0];
    switch (op) {
    case 0x80: case 0x95: case '.': case '(': case '0': case '1': case '2':
        return op_control(p, op, stop);

    /* ---- constants */
    case 'N': return push(p, singleton(p, &p->none, AS_PK_NONE, 0));
    case 0x88: return push(p, singleton(p, &p->yes, AS_PK_BOOL, 1));
    case 0x89: return push(p, singleton(p, &p->no, AS_PK_BOOL, 0));
    case 'J': case 'K': case 'M': case 0x8a: case 0x8b: case 'G': case 'I': case 'L': case 'F':
        return op_number(p, op);

    /* ---- strings */
    case 'S': case 'V': case 'X': case 'T': case 'B': case 0x8c: case 'U': case 'C': case 0x8d: case 0x8e: case 0x96:
        return op_string(p, op);

    /* ---- containers */
    case ')': case ']': case '}': case 0x8f: case 't': case 'l': case 'd': case 0x91: case 0x85: case 0x86: case 0x87:
    case 'a': case 'e': case 0x90: case 'u': case 's':
        return op_container(p, op);

    /* ---- memo */
    case 'p': case 'g': case 'q': case 'r': case 0x94: case 'h': case 'j':
        return op_memo(p, op);

    /* ---- globals, calls, persistent ids */
    case 'c': case 0x93: case 'R': case 0x81: case 0x92: case 'b': case 'Q': case 'P':
        return op_call(p, op);

    case 'i': case 'o': VMFAIL(p, "opcode %s is not supported", op == 'i' ? "INST" : "OBJ"); return -1;
    case 0x82: case 0x83: case 0x84: VMFAIL(p, "extension registry opcodes are not supported"); return -1;
    case 0x97: case 0x98: VMFAIL(p, "out-of-band buffers are not supported"); return -1;
    default:
        VMFAIL(p, "unknown opcode 0x%02x", op);
        return -1;
    }
}

as_pickle_obj *as_pickle_load(as_pickle *p, const void *buf, size_t len, int fd,
                              uint64_t start, uint64_t end, uint64_t *next)
{
    p->err[0] = 0;
    p->sp = p->nmarks = p->memolen = 0;
    if (!p->stack) {   /* never NULL, so stack + k is always defined */
        if (!(p->stack = malloc(64 * sizeof *p->stack))) return as_pickle_fail(p, "out of memory");
        p->stackcap = 64;
    }
    if (p->memo) memset(p->memo, 0, p->memocap * sizeof *p->memo);
    p->mem = buf;
    if (buf) {
        p->pos = 0;
        p->end = len;
    } else {
        p->fd = fd;
        p->pos = start;
        p->end = end < start ? start : end;
        p->winlen = 0;
        p->winstart = 0;
    }
    int stop = 0;
    while (!stop)
        if (step(p, &stop)) {
            if (!p->err[0]) as_pickle_fail(p, "internal error");
            return NULL;
        }
    as_pickle_obj *r = pop(p);
    if (r && next) *next = p->pos;
    return r;
}
