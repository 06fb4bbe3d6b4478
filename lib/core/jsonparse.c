/* jsonparse.c - a strict JSON decoder into msgpack objects; see jsonparse.h
 *
 * One pass over the text without recursion: open containers are frames on a fixed stack of
 * AS_JSONP_MAX_DEPTH; finished values wait on a growable slot stack (a map's keys and
 * values alternate there) until their container closes, which copies them into the zone in
 * one piece. Strings are decoded into a scratch buffer, then copied into the zone. */
#include "jsonparse.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    msgpack_object o;
    size_t pos;             /* offset of the value's first byte (for a key's messages) */
} slot;

typedef struct {
    int map;                /* 1: object, 0: array */
    size_t start;           /* its first slot */
    size_t pos;             /* offset of the opening bracket */
} frame;

typedef struct {
    const char *p;
    uint32_t len, idx;
} keyref;

typedef struct {
    const unsigned char *s;
    size_t n, i;
    msgpack_zone *zone;
    slot *st;               /* finished values not yet in a container */
    size_t nst, capst;
    char *buf;              /* scratch: a string being decoded, a number for strtod */
    size_t nbuf, capbuf;
    keyref *keys;           /* scratch: a large object's keys, sorted to find repeats */
    size_t capkeys;
    char *err;
    size_t errlen;
} parser;

__attribute__((format(printf, 3, 4)))
static int fail(parser *p, size_t at, const char *fmt, ...)
{
    if (!p->err || !p->errlen) return -1;
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < p->n; k++) {
        if (p->s[k] == '\n') { line++; col = 1; }
        else col++;
    }
    int w = snprintf(p->err, p->errlen, "line %zu, column %zu: ", line, col);
    if (w >= 0 && (size_t)w < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + w, p->errlen - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

static int push(parser *p, const msgpack_object *o, size_t pos)
{
    if (p->nst == p->capst) {
        size_t cap = p->capst ? p->capst * 2 : 64;
        slot *st = realloc(p->st, cap * sizeof *st);
        if (!st) return fail(p, pos, "out of memory");
        p->st = st;
        p->capst = cap;
    }
    p->st[p->nst].o = *o;
    p->st[p->nst].pos = pos;
    p->nst++;
    return 0;
}

static int buf_add(parser *p, const void *d, size_t k, size_t pos)
{
    if (k > p->capbuf - p->nbuf) {
        size_t cap = p->capbuf ? p->capbuf : 256;
        while (k > cap - p->nbuf) {
            if (cap > SIZE_MAX / 2) return fail(p, pos, "out of memory");
            cap *= 2;
        }
        char *b = realloc(p->buf, cap);
        if (!b) return fail(p, pos, "out of memory");
        p->buf = b;
        p->capbuf = cap;
    }
    memcpy(p->buf + p->nbuf, d, k);
    p->nbuf += k;
    return 0;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* the 4 hex digits of a \u escape whose backslash is at `at`: 1 with *cp, 0 when the input
 * ends first, -1 (message set) when one is not a hex digit */
static int hex4(parser *p, size_t at, unsigned *cp)
{
    unsigned v = 0;
    for (size_t k = 0; k < 4; k++) {
        if (at + 2 + k >= p->n) return 0;
        int h = hexval(p->s[at + 2 + k]);
        if (h < 0) return fail(p, at, "invalid \\u escape: expected 4 hex digits");
        v = v << 4 | (unsigned)h;
    }
    *cp = v;
    return 1;
}

static int put_utf8(parser *p, unsigned cp, size_t pos)
{
    unsigned char u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (unsigned char)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (unsigned char)(0xc0 | cp >> 6); u[1] = (unsigned char)(0x80 | (cp & 0x3f)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | cp >> 18);
        u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    return buf_add(p, u, k, pos);
}

/* the escape whose backslash is at p->i, appended to the scratch buffer; q: the opening quote */
static int escape(parser *p, size_t q)
{
    const size_t at = p->i;
    if (at + 1 >= p->n) return fail(p, q, "unterminated string");
    unsigned char e = p->s[at + 1], c;
    switch (e) {
    case '"': c = '"'; break;
    case '\\': c = '\\'; break;
    case '/': c = '/'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'n': c = '\n'; break;
    case 'r': c = '\r'; break;
    case 't': c = '\t'; break;
    case 'u': {
        unsigned cp, lo;
        int r = hex4(p, at, &cp);
        if (r <= 0) return r < 0 ? -1 : fail(p, q, "unterminated string");
        if (cp >= 0xdc00 && cp <= 0xdfff)
            return fail(p, at, "lone surrogate \\u%04X (a low surrogate without a high one before it)", cp);
        if (cp >= 0xd800 && cp <= 0xdbff) {
            for (size_t k = 6; k < 8; k++) {   /* "\\u" next, or the surrogate is alone */
                if (at + k >= p->n) return fail(p, q, "unterminated string");
                if (p->s[at + k] != (k == 6 ? '\\' : 'u'))
                    return fail(p, at, "lone surrogate \\u%04X (a high surrogate must be followed by a low one)", cp);
            }
            r = hex4(p, at + 6, &lo);
            if (r <= 0) return r < 0 ? -1 : fail(p, q, "unterminated string");
            if (lo < 0xdc00 || lo > 0xdfff)
                return fail(p, at, "lone surrogate \\u%04X (a high surrogate must be followed by a low one)", cp);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p->i = at + 12;
        } else p->i = at + 6;
        return put_utf8(p, cp, at);
    }
    default:
        if (e >= 0x20 && e < 0x7f) return fail(p, at, "invalid escape '\\%c'", e);
        return fail(p, at, "invalid escape (byte 0x%02X after '\\')", e);
    }
    p->i = at + 2;
    return buf_add(p, &c, 1, at);
}

/* the multi-byte UTF-8 sequence whose lead byte is at p->i; q: the opening quote */
static int utf8_seq(parser *p, size_t q)
{
    const size_t at = p->i;
    const unsigned char c = p->s[at];
    unsigned char lo = 0x80, hi = 0xbf;
    size_t k;
    if (c >= 0xc2 && c <= 0xdf) k = 1;
    else if (c >= 0xe0 && c <= 0xef) {
        k = 2;
        if (c == 0xe0) lo = 0xa0;        /* no overlong forms */
        else if (c == 0xed) hi = 0x9f;   /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 3;
        if (c == 0xf0) lo = 0x90;
        else if (c == 0xf4) hi = 0x8f;   /* nothing above U+10FFFF */
    } else return fail(p, at, "invalid UTF-8 in a string (byte 0x%02X)", c);
    for (size_t j = 1; j <= k; j++) {
        if (at + j >= p->n) return fail(p, q, "unterminated string");
        const unsigned char b = p->s[at + j];
        if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xbf))
            return fail(p, at, "invalid UTF-8 in a string (byte 0x%02X then 0x%02X)", c, b);
    }
    p->i = at + k + 1;
    return buf_add(p, p->s + at, k + 1, at);
}

/* the string whose opening quote is at p->i, into *o (its bytes in the zone) */
static int string(parser *p, msgpack_object *o)
{
    const size_t q = p->i++;
    p->nbuf = 0;
    for (;;) {
        size_t j = p->i;
        while (j < p->n && p->s[j] >= 0x20 && p->s[j] < 0x80 && p->s[j] != '"' && p->s[j] != '\\') j++;
        if (j > p->i && buf_add(p, p->s + p->i, j - p->i, p->i)) return -1;
        p->i = j;
        if (j == p->n) return fail(p, q, "unterminated string");
        const unsigned char c = p->s[j];
        if (c == '"') { p->i++; break; }
        if (c == '\\') { if (escape(p, q)) return -1; }
        else if (c == 0) return fail(p, j, "NUL byte in a string (write it as \\u0000)");
        else if (c < 0x20) return fail(p, j, "control character 0x%02X in a string (escape it)", c);
        else if (utf8_seq(p, q)) return -1;
    }
    if (p->nbuf > UINT32_MAX) return fail(p, q, "string longer than 4 GiB");
    o->type = MSGPACK_OBJECT_STR;
    o->via.str.size = (uint32_t)p->nbuf;
    if (!p->nbuf) { o->via.str.ptr = ""; return 0; }
    char *d = msgpack_zone_malloc_no_align(p->zone, p->nbuf);
    if (!d) return fail(p, q, "out of memory");
    memcpy(d, p->buf, p->nbuf);
    o->via.str.ptr = d;
    return 0;
}

static int is_digit(parser *p, size_t at) { return at < p->n && p->s[at] >= '0' && p->s[at] <= '9'; }

/* the number starting at p->i ('-' or a digit) into *o */
static int number(parser *p, msgpack_object *o)
{
    const size_t start = p->i;
    const int neg = p->s[p->i] == '-';
    if (neg) p->i++;
    uint64_t mag = 0;
    int big = 0, isint = 1;
    if (!is_digit(p, p->i)) return fail(p, p->i, "invalid number: expected a digit after '-'");
    if (p->s[p->i] == '0') {
        p->i++;
        if (is_digit(p, p->i)) return fail(p, p->i, "invalid number: leading zero");
    } else
        for (; is_digit(p, p->i); p->i++) {
            const unsigned d = (unsigned)(p->s[p->i] - '0');
            if (mag > (UINT64_MAX - d) / 10) big = 1;
            else mag = mag * 10 + d;
        }
    if (p->i < p->n && p->s[p->i] == '.') {
        isint = 0;
        p->i++;
        if (!is_digit(p, p->i)) return fail(p, p->i, "invalid number: expected a digit after '.'");
        while (is_digit(p, p->i)) p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        isint = 0;
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (!is_digit(p, p->i)) return fail(p, p->i, "invalid number: expected a digit in the exponent");
        while (is_digit(p, p->i)) p->i++;
    }
    if (isint && !big && mag <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
        if (neg && mag) {
            o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
            o->via.i64 = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
        } else {
            o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
            o->via.u64 = mag;
        }
        return 0;
    }
    /* strtod on a NUL-terminated copy of the token (the grammar above is a subset of its) */
    const char nul = 0;
    p->nbuf = 0;
    if (buf_add(p, p->s + start, p->i - start, start) || buf_add(p, &nul, 1, start)) return -1;
    char *end;
    const double v = strtod(p->buf, &end);
    if (end != p->buf + (p->i - start)) return fail(p, start, "invalid number");
    if (isinf(v)) return fail(p, start, "number out of range (beyond a double)");
    o->type = MSGPACK_OBJECT_FLOAT64;
    o->via.f64 = v;
    return 0;
}

static int key_eq(const msgpack_object *a, const msgpack_object *b)
{
    return a->via.str.size == b->via.str.size && !memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size);
}

static int keyref_cmp(const void *x, const void *y)
{
    const keyref *a = x, *b = y;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    int c = memcmp(a->p, b->p, a->len);
    if (c) return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* key s[0..n) for a message: quoted, escaped, at most ~48 bytes of it */
static void key_text(char *dst, size_t cap, const char *s, size_t n)
{
    size_t w = 0, lim = n;
    if (lim > 48) {
        lim = 48;
        while (lim && ((unsigned char)s[lim] & 0xc0) == 0x80) lim--;   /* not inside a character */
    }
    for (size_t k = 0; k < lim && w + 8 < cap; k++) {
        const unsigned char c = (unsigned char)s[k];
        if (c == '"' || c == '\\') { dst[w++] = '\\'; dst[w++] = (char)c; }
        else if (c < 0x20 || c == 0x7f) w += (size_t)snprintf(dst + w, cap - w, "\\u%04X", c);
        else dst[w++] = (char)c;
    }
    if (lim < n && w + 4 < cap) { memcpy(dst + w, "...", 3); w += 3; }
    dst[w] = 0;
}

/* a repeated key among the m keys of the object whose slots start at `start`: the earliest
 * key (in the text) equal to one before it. -1 with the message, or 0 */
static int check_keys(parser *p, size_t start, size_t m)
{
    size_t dup = SIZE_MAX;
    if (m <= 16) {
        for (size_t j = 1; j < m && dup == SIZE_MAX; j++)
            for (size_t i = 0; i < j; i++)
                if (key_eq(&p->st[start + 2 * i].o, &p->st[start + 2 * j].o)) { dup = j; break; }
    } else {
        if (m > p->capkeys) {
            keyref *k = realloc(p->keys, m * sizeof *k);
            if (!k) return fail(p, p->st[start].pos, "out of memory");
            p->keys = k;
            p->capkeys = m;
        }
        for (size_t j = 0; j < m; j++) {
            const msgpack_object *o = &p->st[start + 2 * j].o;
            p->keys[j].p = o->via.str.ptr;
            p->keys[j].len = o->via.str.size;
            p->keys[j].idx = (uint32_t)j;
        }
        qsort(p->keys, m, sizeof *p->keys, keyref_cmp);
        /* within a run of equal keys the indices ascend: the earliest repeat of each key is
           its run's second entry, and later entries are later still */
        for (size_t r = 1; r < m; r++)
            if (p->keys[r].len == p->keys[r - 1].len && !memcmp(p->keys[r].p, p->keys[r - 1].p, p->keys[r].len) &&
                p->keys[r].idx < dup)
                dup = p->keys[r].idx;
    }
    if (dup == SIZE_MAX) return 0;
    const slot *k = &p->st[start + 2 * dup];
    char name[400];
    key_text(name, sizeof name, k->o.via.str.ptr, k->o.via.str.size);
    return fail(p, k->pos, "duplicate key \"%s\"", name);
}

/* close the container f: its slots become one array or map in the zone, on the stack */
static int close_frame(parser *p, const frame *f)
{
    const size_t count = p->nst - f->start;
    msgpack_object o;
    if (!f->map) {
        if (count > UINT32_MAX) return fail(p, f->pos, "array of more than 2^32-1 elements");
        o.type = MSGPACK_OBJECT_ARRAY;
        o.via.array.size = (uint32_t)count;
        o.via.array.ptr = NULL;
        if (count) {
            msgpack_object *a = msgpack_zone_malloc(p->zone, count * sizeof *a);
            if (!a) return fail(p, f->pos, "out of memory");
            for (size_t k = 0; k < count; k++) a[k] = p->st[f->start + k].o;
            o.via.array.ptr = a;
        }
    } else {
        const size_t m = count / 2;
        if (m > UINT32_MAX) return fail(p, f->pos, "object of more than 2^32-1 members");
        if (check_keys(p, f->start, m)) return -1;
        o.type = MSGPACK_OBJECT_MAP;
        o.via.map.size = (uint32_t)m;
        o.via.map.ptr = NULL;
        if (m) {
            msgpack_object_kv *kv = msgpack_zone_malloc(p->zone, m * sizeof *kv);
            if (!kv) return fail(p, f->pos, "out of memory");
            for (size_t k = 0; k < m; k++) {
                kv[k].key = p->st[f->start + 2 * k].o;
                kv[k].val = p->st[f->start + 2 * k + 1].o;
            }
            o.via.map.ptr = kv;
        }
    }
    p->nst = f->start;
    return push(p, &o, f->pos);
}

/* a member's key and its ':' (after '{' or ','); first: right after '{' */
static int key(parser *p, int first)
{
    skip_ws(p);
    if (p->i == p->n) return fail(p, p->n, "unexpected end of input, expected a string key");
    const unsigned char c = p->s[p->i];
    if (c != '"') {
        if (c == '}') return fail(p, p->i, "expected a string key after ',' (trailing commas are not allowed)");
        if (c == '\'') return fail(p, p->i, "expected a string key in double quotes");
        if (c == '/') return fail(p, p->i, "expected a string key (comments are not allowed)");
        if (c == 0) return fail(p, p->i, "unexpected NUL byte, expected a string key");
        return fail(p, p->i, first ? "expected a string key or '}'" : "expected a string key");
    }
    const size_t at = p->i;
    msgpack_object k;
    if (string(p, &k) || push(p, &k, at)) return -1;
    skip_ws(p);
    if (p->i == p->n) return fail(p, p->n, "unexpected end of input, expected ':' after a key");
    if (p->s[p->i] != ':') return fail(p, p->i, "expected ':' after a key");
    p->i++;
    return 0;
}

static int literal(parser *p, const char *word, msgpack_object *o)
{
    const size_t k = strlen(word);
    if (p->n - p->i < k || memcmp(p->s + p->i, word, k))
        return fail(p, p->i, "invalid literal (expected true, false or null)");
    p->i += k;
    if (word[0] == 'n') o->type = MSGPACK_OBJECT_NIL;
    else {
        o->type = MSGPACK_OBJECT_BOOLEAN;
        o->via.boolean = word[0] == 't';
    }
    return 0;
}

/* the start of a value at p->i: 1 when a whole value was pushed (a scalar, an empty
 * container), 0 when a container opened (its first value or key comes next), -1 */
static int value(parser *p, frame *fr, int *depth, int after_comma)
{
    skip_ws(p);
    if (p->i == p->n) return fail(p, p->n, "unexpected end of input, expected a value");
    const size_t at = p->i;
    const unsigned char c = p->s[at];
    msgpack_object o;
    int r;
    switch (c) {
    case '[':
    case '{':
        if (*depth == AS_JSONP_MAX_DEPTH) return fail(p, at, "nesting deeper than %d", AS_JSONP_MAX_DEPTH);
        fr[*depth].map = c == '{';
        fr[*depth].start = p->nst;
        fr[*depth].pos = at;
        ++*depth;
        p->i++;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == (c == '{' ? '}' : ']')) {
            p->i++;
            --*depth;
            return close_frame(p, &fr[*depth]) ? -1 : 1;
        }
        if (c == '{') return key(p, 1) ? -1 : 0;
        return 0;
    case '"': r = string(p, &o); break;
    case 't': r = literal(p, "true", &o); break;
    case 'f': r = literal(p, "false", &o); break;
    case 'n': r = literal(p, "null", &o); break;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        r = number(p, &o);
        break;
    case '+': case '.': return fail(p, at, "invalid number: a number starts with '-' or a digit");
    case 0: return fail(p, at, "unexpected NUL byte, expected a value");
    case '/': return fail(p, at, "expected a value (comments are not allowed)");
    case '\'': return fail(p, at, "expected a value (strings take double quotes)");
    case ']':
    case '}':
        if (after_comma) return fail(p, at, "expected a value after ',' (trailing commas are not allowed)");
        return fail(p, at, "expected a value");
    default: return fail(p, at, "expected a value");
    }
    if (r) return -1;
    return push(p, &o, at) ? -1 : 1;
}

int as_jsonp_parse(const char *text, size_t n, msgpack_zone *zone, msgpack_object *out, char *err, size_t errlen)
{
    parser p = { .s = (const unsigned char *)text, .n = n, .zone = zone, .err = err, .errlen = errlen };
    frame fr[AS_JSONP_MAX_DEPTH];
    int depth = 0, rc = -1, after_comma = 0;
    out->type = MSGPACK_OBJECT_NIL;
    if (err && errlen) err[0] = 0;
    /* a byte order mark (an editor's, or PowerShell's Out-File) is no JSON: say so, rather
     * than "expected a value" at a column the user cannot see */
    if (n >= 3 && p.s[0] == 0xEF && p.s[1] == 0xBB && p.s[2] == 0xBF)
        return fail(&p, 0, "a UTF-8 byte order mark (bytes EF BB BF) starts the text: JSON has none; save the file "
                    "without it (\"UTF-8\", not \"UTF-8 with BOM\")");
    if (n >= 2 && ((p.s[0] == 0xFE && p.s[1] == 0xFF) || (p.s[0] == 0xFF && p.s[1] == 0xFE)))
        return fail(&p, 0, "a UTF-16 byte order mark (bytes %02X %02X) starts the text: JSON is read as UTF-8; save "
                    "the file as UTF-8", p.s[0], p.s[1]);
    for (;;) {
        const int r = value(&p, fr, &depth, after_comma);
        if (r < 0) goto done;
        if (r == 0) { after_comma = 0; continue; }
        /* after a whole value: the end, ',' or the close of its container */
        for (;;) {
            skip_ws(&p);
            if (depth == 0) {
                if (p.i < p.n)
                    fail(&p, p.i, p.s[p.i] ? "unexpected data after the value (only one value is allowed)"
                                           : "unexpected NUL byte after the value");
                else {
                    *out = p.st[0].o;
                    rc = 0;
                }
                goto done;
            }
            const frame *f = &fr[depth - 1];
            if (p.i == p.n) {
                fail(&p, p.n, f->map ? "unexpected end of input, expected ',' or '}' after a member"
                                     : "unexpected end of input, expected ',' or ']' after an element");
                goto done;
            }
            const unsigned char c = p.s[p.i];
            if (c == ',') {
                p.i++;
                if (f->map && key(&p, 0)) goto done;
                after_comma = !f->map;
                break;
            }
            if (c != (f->map ? '}' : ']')) {
                fail(&p, p.i, f->map ? "expected ',' or '}' after a member" : "expected ',' or ']' after an element");
                goto done;
            }
            p.i++;
            depth--;
            if (close_frame(&p, f)) goto done;
        }
    }
done:
    free(p.st);
    free(p.buf);
    free(p.keys);
    return rc;
}
