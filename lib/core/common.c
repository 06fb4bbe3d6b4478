/* common.c - see common.h */
#include "common.h"

#include <sys/mman.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

const char *as_prog = "autoshard";
int as_verbosity = 1;

void as_set_prog(const char *argv0)
{
    const char *s = strrchr(argv0, '/');
    as_prog = s ? s + 1 : argv0;
}

/* the length of the valid UTF-8 sequence at u[0..n) (n >= 1, u[0] >= 0x80; no overlong form,
   surrogate or code point above U+10FFFF), 0 when it is not one */
static size_t utf8_len(const unsigned char *u, size_t n)
{
    const unsigned c = u[0];
    size_t m = 0;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) m = 2;
    else if (c >= 0xe0 && c <= 0xef) { m = 3; if (c == 0xe0) lo = 0xa0; if (c == 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { m = 4; if (c == 0xf0) lo = 0x90; if (c == 0xf4) hi = 0x8f; }
    if (!m || m > n || u[1] < lo || u[1] > hi) return 0;
    for (size_t k = 2; k < m; k++) if (u[k] < 0x80 || u[k] > 0xbf) return 0;
    return m;
}

char *as_text_escape(char *out, size_t outlen, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    const size_t n = strlen(s);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        char e[16];
        size_t m = 1;
        const unsigned c = u[i];
        if (c == '\n' || c == '\t' || c == '\r') snprintf(e, sizeof e, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
        else if (c < 0x20 || c == 0x7f) snprintf(e, sizeof e, "\\x%02x", c);
        else if (c < 0x80) e[0] = (char)c, e[1] = 0;
        else if (!(m = utf8_len(u + i, n - i))) snprintf(e, sizeof e, "\\x%02x", c), m = 1;
        else if (c == 0xc2 && u[i + 1] <= 0x9f) snprintf(e, sizeof e, "\\u%04x", u[i + 1]);
        else if (c == 0xe2 && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9))
            snprintf(e, sizeof e, "\\u%04x", 0x2000u + (u[i + 2] - 0x80u));
        else memcpy(e, s + i, m), e[m] = 0;
        const size_t el = strlen(e);
        if (o + el >= outlen) break;
        memcpy(out + o, e, el);
        o += el;
        i += m;
    }
    if (outlen) out[o < outlen ? o : outlen - 1] = 0;
    return out;
}

static void vmsg(const char *fmt, va_list ap)
{
    char buf[4096], safe[4096 + 2];
    int n = snprintf(buf, sizeof buf, "%s: ", as_prog);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof buf) vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    as_text_escape(safe, sizeof safe - 1, buf);
    const size_t len = strlen(safe);
    safe[len] = '\n';
    safe[len + 1] = 0;
    fputs(safe, stderr);
}

void as_err(const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt); vmsg(fmt, ap); va_end(ap);
}

_Noreturn void as_die(int code, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt); vmsg(fmt, ap); va_end(ap);
    exit(code);
}

void as_info(const char *fmt, ...)
{
    if (as_verbosity < 1) return;
    va_list ap; va_start(ap, fmt); vmsg(fmt, ap); va_end(ap);
}

void as_debug(const char *fmt, ...)
{
    if (as_verbosity < 2) return;
    va_list ap; va_start(ap, fmt); vmsg(fmt, ap); va_end(ap);
}

_Noreturn void as_oom(const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    as_die(AS_EXIT_ENV, "out of memory (%s)", what);
}

static _Atomic uint64_t alloc_calls;

uint64_t as_alloc_count(void)
{
    return alloc_calls;
}

void *as_malloc(size_t n)
{
    alloc_calls++;
    void *p = malloc(n ? n : 1);
    if (!p) as_oom("%zu bytes", n);
    return p;
}

void *as_calloc(size_t n, size_t size)
{
    alloc_calls++;
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) as_oom("%zu x %zu bytes", n, size);
    return p;
}

void *as_realloc(void *q, size_t n)
{
    alloc_calls++;
    void *p = realloc(q, n ? n : 1);
    if (!p) as_oom("%zu bytes", n);
    return p;
}

char *as_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = as_malloc(n);
    memcpy(p, s, n);
    return p;
}

/* under AddressSanitizer every piece is followed by a poisoned red zone and a block's unused
 * rest is poisoned, so that an overflow of one piece is caught as with malloc */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ARENA_RED 64
#else
#define ARENA_RED 0
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#endif

struct as_arena_blk {
    as_arena_blk *prev;
    size_t cap, used;
    _Alignas(64) unsigned char data[];
};

#define ARENA_ALIGN 64
#define ARENA_MIN_BLOCK ((size_t)1 << 16)

static as_arena_blk *arena_block(size_t cap, as_arena_blk *prev)
{
    if (cap > SIZE_MAX - sizeof(as_arena_blk) - ARENA_ALIGN) as_oom("an arena block of %zu bytes", cap);
    as_arena_blk *b = aligned_alloc(ARENA_ALIGN, (sizeof *b + cap + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN);
    alloc_calls++;
    if (!b) as_oom("an arena block of %zu bytes", cap);
    b->prev = prev;
    b->cap = cap;
    b->used = 0;
    ASAN_POISON_MEMORY_REGION(b->data, cap);
    return b;
}

void *as_arena_take(as_arena *a, size_t n)
{
    if (n > SIZE_MAX - ARENA_ALIGN - ARENA_RED) as_oom("%zu bytes", n);
    const size_t want = n;
    n = (n + ARENA_RED + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (!n) n = ARENA_ALIGN;
    as_arena_blk *b = a->blk;
    if (!b || b->cap - b->used < n) {
        size_t cap = b && b->cap <= SIZE_MAX / 2 ? 2 * b->cap : ARENA_MIN_BLOCK;
        if (cap < n) cap = n;
        a->blk = b = arena_block(cap, b);
        a->total += cap;
    }
    void *p = b->data + b->used;
    b->used += n;
    ASAN_UNPOISON_MEMORY_REGION(p, want);
    return p;
}

void *as_arena_ztake(as_arena *a, size_t n)
{
    void *p = as_arena_take(a, n);
    memset(p, 0, n);
    return p;
}

void as_arena_reset(as_arena *a)
{
    as_arena_blk *b = a->blk;
    if (!b) return;
    if (b->prev) {
        const size_t total = a->total;
        as_arena_free(a);
        a->blk = arena_block(total, NULL);
        a->total = total;
        return;
    }
    b->used = 0;
    ASAN_POISON_MEMORY_REGION(b->data, b->cap);
}

void as_arena_free(as_arena *a)
{
    if (!a) return;
    for (as_arena_blk *b = a->blk, *p; b; b = p) {
        p = b->prev;
        ASAN_UNPOISON_MEMORY_REGION(b->data, b->cap);
        free(b);
    }
    a->blk = NULL;
    a->total = 0;
}

/* strtoll and strtod skip leading white space; a strict parse does not */
static int starts_blank(const char *s)
{
    return isspace((unsigned char)*s);
}

int as_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || starts_blank(s)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s) return -1;
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int as_parse_f64(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s || starts_blank(s)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v)) return -1;
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int as_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || starts_blank(s)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return -1;
    double mul = 1;
    if (*end) {
        char c = *end++;
        switch (c) {
        case 'k': case 'K': mul = 1024.0; break;
        case 'm': case 'M': mul = 1024.0 * 1024; break;
        case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
        case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
        case 'b': case 'B': mul = 1; if (*end) return -1; break;
        default: return -1;
        }
        if (c != 'b' && c != 'B') {
            if (*end == 'i') end++;
            if (*end == 'B' || *end == 'b') end++;
            if (*end) return -1;
        }
    }
    v *= mul;
    if (v > 1.8e19) return -1;
    *out = (uint64_t)(v + 0.5);
    return 0;
}

int as_parse_i64_list(const char *s, int64_t lo, int64_t hi, int64_t **out, size_t *n)
{
    if (!s || !*s) return -1;
    size_t cap = 16, len = 0;
    int64_t *v = as_malloc(cap * sizeof *v);
    char *copy = as_strdup(s), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t a, b;
        char *dash = strchr(tok + (tok[0] == '-'), '-');
        if (dash) {
            *dash = 0;
            if (as_parse_i64(tok, lo, hi, &a) || as_parse_i64(dash + 1, lo, hi, &b) || b < a || b - a > 100000000) { rc = -1; break; }
        } else {
            if (as_parse_i64(tok, lo, hi, &a)) { rc = -1; break; }
            b = a;
        }
        for (int64_t x = a; x <= b; x++) {
            if (len == cap) { cap *= 2; v = as_realloc(v, cap * sizeof *v); }
            v[len++] = x;
        }
    }
    /* reject empty items such as "1,,2" or trailing comma */
    if (rc == 0 && (s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))) rc = -1;
    free(copy);
    if (rc || len == 0) { free(v); return -1; }
    *out = v;
    *n = len;
    return 0;
}

uint64_t as_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void as_rng_seed(as_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t st = seed ^ (stream * 0xd1b54a32d192ed03ULL + 0x632be59bd9b4e019ULL);
    for (int i = 0; i < 4; i++) r->s[i] = as_splitmix64(&st);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t as_rng_next(as_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double as_rng_uniform(as_rng *r)
{
    return (double)(as_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t as_rng_below(as_rng *r, uint64_t n)
{
    /* Lemire's multiply-shift with rejection */
    uint64_t x = as_rng_next(r);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = -n % n;
        while (l < t) {
            x = as_rng_next(r);
            m = (__uint128_t)x * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double as_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t as_peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return (uint64_t)ru.ru_maxrss * 1024;
}

void *as_huge_alloc(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (n < 2 * huge) return posix_memalign(&p, 64, n ? n : 1) ? NULL : p;
    const size_t m = (n + huge - 1) & ~(huge - 1);
    if (posix_memalign(&p, huge, m)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, m, MADV_HUGEPAGE);
#endif
    return p;
}
