/* ncclperf.c - nccl-tests' output read as a collective's measured times; see ncclperf.h */
#include "ncclperf.h"

#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const as_coll_short[AS_NCOLL] = { "a2a", "rs", "ag", "ar" };
const char *const as_coll_test[AS_NCOLL] = { "alltoall", "reduce_scatter", "all_gather", "all_reduce" };

#define NCOLS 13
#define MAX_FILE ((size_t)64 << 20)   /* bytes of one file: nccl-tests prints a few KiB */

static int fail(char *err, size_t errlen, const char *path, int64_t line, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(err, errlen, "%s:%lld: %s", path, (long long)line, what);
    else snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

/* the collective a name speaks of (nccl-tests' test name or a file name), or -1 */
static int coll_of_name(const char *s, size_t n)
{
    char low[512];
    size_t m = 0;
    for (size_t i = 0; i < n && m + 1 < sizeof low; i++)
        if (s[i] != '_' && s[i] != '-') low[m++] = (char)tolower((unsigned char)s[i]);
    low[m] = 0;
    static const char *const key[AS_NCOLL] = { "alltoall", "reducescatter", "allgather", "allreduce" };
    int found = -1;
    for (int c = 0; c < AS_NCOLL; c++)
        if (strstr(low, key[c])) {
            if (found >= 0) return -1;   /* two names: neither */
            found = c;
        }
    return found;
}

/* a whole token as a finite double / as an integer */
static int tok_num(const char *s, double *v)
{
    char *e;
    errno = 0;
    *v = strtod(s, &e);
    return e != s && !*e && !errno && isfinite(*v);
}

static int tok_int(const char *s, long long *v)
{
    char *e;
    errno = 0;
    *v = strtoll(s, &e, 10);
    return e != s && !*e && !errno;
}

typedef struct {
    const char *path;
    int coll;                  /* named by the caller, or -1 */
    int test;                  /* named by the file's "Collective test starting" line, or -1 */
    int64_t ranks, n, cap;
    double *size, *us;
    int trailer;               /* "# Avg bus bandwidth" seen */
} reader;

/* a '#' line: the ranks, the test's name, the trailer */
static int header_line(reader *r, const char *s, int64_t ln, char *err, size_t errlen)
{
    const char *p = s + 1;
    while (*p == ' ' || *p == '\t') p++;
    if (!strncmp(p, "Rank ", 5) && isdigit((unsigned char)p[5 + strspn(p + 5, " ")])) r->ranks++;
    else if (!strncmp(p, "Collective test starting:", 25)) {
        const char *q = p + 25;
        r->test = coll_of_name(q, strlen(q));
        if (r->test < 0) return fail(err, errlen, r->path, ln, "a test of no collective this reads (%s): give alltoall_perf, "
                                     "reduce_scatter_perf, all_gather_perf or all_reduce_perf output", q + strspn(q, " "));
    } else if (!strncmp(p, "Out of bounds values", 20)) {
        const char *q = strchr(p, ':');
        long long v;
        char num[32] = "", word[16] = "";
        if (!q || sscanf(q + 1, "%31s %15s", num, word) != 2 || !tok_int(num, &v) || v != 0 || strcmp(word, "OK"))
            return fail(err, errlen, r->path, ln, "the run failed its check (%s): a failed run's times are not charged", p);
    } else if (!strncmp(p, "Avg bus bandwidth", 17)) {
        if (!r->n) return fail(err, errlen, r->path, ln, "the trailer before any measurement");
        r->trailer = 1;
    }
    return 0;
}

/* the 13 columns' tokens of a data line into tok; their count */
static int tokens(char *s, char *tok[NCOLS + 1])
{
    int n = 0;
    for (char *p = strtok(s, " \t\r"); p; p = strtok(NULL, " \t\r")) {
        if (n == NCOLS + 1) return n;
        tok[n++] = p;
    }
    return n;
}

/* one timing's three columns and its #wrong: time, algbw, busbw, wrong */
static int timing(reader *r, char *const *t, double size, int64_t ln, const char *which, double *us, char *err, size_t errlen)
{
    double tm, alg, bus;
    if (!tok_num(t[0], &tm) || !tok_num(t[1], &alg) || !tok_num(t[2], &bus))
        return fail(err, errlen, r->path, ln, "the %s time, algbw and busbw are not numbers (%s %s %s): not nccl-tests' columns", which,
                    t[0], t[1], t[2]);
    if (!(tm > 0) || alg < 0 || bus < 0)
        return fail(err, errlen, r->path, ln, "the %s time %s us is not positive (or a bandwidth is negative)", which, t[0]);
    /* algbw is size / time, printed with two decimals: a column out of place does not pass */
    const double want = size / (tm * 1e3);
    if (fabs(alg - want) > 0.011 + 0.02 * want)
        return fail(err, errlen, r->path, ln, "the %s algbw %s GB/s is not size / time (%.4g GB/s): not nccl-tests' columns", which,
                    t[1], want);
    double w;
    if (strcmp(t[3], "N/A") && (!tok_num(t[3], &w) || w != 0))
        return fail(err, errlen, r->path, ln, "#wrong = %s in the %s run: a failed run's times are not charged", t[3], which);
    *us = tm;
    return 0;
}

static int data_line(reader *r, char *s, int64_t ln, char *err, size_t errlen)
{
    char *t[NCOLS + 1];
    const int n = tokens(s, t);
    if (n != NCOLS)
        return fail(err, errlen, r->path, ln, "%d columns where nccl-tests prints %d (size count type redop root, then time "
                    "algbw busbw #wrong out of place and in place): cut, or another tool's", n, NCOLS);
    long long size, count, root;
    if (!tok_int(t[0], &size) || size < 0 || !tok_int(t[1], &count) || count < 0 || !tok_int(t[4], &root))
        return fail(err, errlen, r->path, ln, "size, count and root (%s %s %s) are not whole numbers", t[0], t[1], t[4]);
    if (r->n && (double)size <= r->size[r->n - 1])
        return fail(err, errlen, r->path, ln, "size %lld is not above the line before's (%.0f): one run a file", size, r->size[r->n - 1]);
    double out, in;
    if (timing(r, t + 5, (double)size, ln, "out-of-place", &out, err, errlen) ||
        timing(r, t + 9, (double)size, ln, "in-place", &in, err, errlen))
        return -1;
    if (r->n == AS_NCCL_MAX_POINTS) return fail(err, errlen, r->path, ln, "more than %d sizes", AS_NCCL_MAX_POINTS);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->size = as_realloc(r->size, (size_t)r->cap * sizeof *r->size);
        r->us = as_realloc(r->us, (size_t)r->cap * sizeof *r->us);
    }
    r->size[r->n] = (double)size;
    r->us[r->n++] = out;
    return 0;
}

static int parse_lines(reader *r, char *buf, size_t len, char *err, size_t errlen)
{
    int64_t ln = 0;
    for (char *s = buf, *end = buf + len; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl) nl = end;
        *nl = 0;
        ln++;
        if (memchr(s, 0, (size_t)(nl - s))) return fail(err, errlen, r->path, ln, "a NUL byte: not text");
        const char *p = s + strspn(s, " \t\r");
        /* srun --label's "N: " before every line */
        const size_t dg = strspn(p, "0123456789");
        if (dg && p[dg] == ':' && (p[dg + 1] == ' ' || !p[dg + 1])) {
            s = (char *)p + dg + 1;
            p = s + strspn(s, " \t\r");
        }
        int rc = 0;
        if (r->trailer && *p && *p != '#')
            rc = fail(err, errlen, r->path, ln, "a line after the trailer (\"# Avg bus bandwidth\"): two runs in one file?");
        else if (*p == '#') rc = header_line(r, p, ln, err, errlen);
        else if (!*p || strstr(p, "NCCL INFO") || !strncmp(p, "NCCL version", 12)) rc = 0;
        else if (isdigit((unsigned char)*p)) rc = data_line(r, s, ln, err, errlen);
        else rc = fail(err, errlen, r->path, ln, "not a line nccl-tests prints: %.60s", p);
        if (rc) return -1;
        s = nl + 1;
    }
    return 0;
}

int as_nccl_parse(const char *path, const char *text, size_t len, int coll, as_nccl_table *t, char *err, size_t errlen)
{
    reader r = { .path = path, .coll = coll, .test = -1 };
    char *buf = as_malloc(len + 1);
    memcpy(buf, text, len);
    buf[len] = 0;
    int rc = parse_lines(&r, buf, len, err, errlen);
    free(buf);
    if (!rc && !r.n) rc = fail(err, errlen, path, 0, "no measurements (no data lines): not nccl-tests' output");
    if (!rc && !r.trailer)
        rc = fail(err, errlen, path, 0, "no trailer (\"# Avg bus bandwidth\"): the output is cut (the run did not end, or the "
                  "file is partial)");
    if (!rc && !r.ranks)
        rc = fail(err, errlen, path, 0, "no rank lines (\"#  Rank  0 Group ...\"): the ranks it ran on are unknown (keep the "
                  "whole output)");
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const int named = coll_of_name(base, strlen(base));
    int c = coll >= 0 ? coll : r.test >= 0 ? r.test : named;
    if (!rc && c < 0)
        rc = fail(err, errlen, path, 0, "which collective it measured is not said (no \"Collective test starting\" line, "
                  "and its name has none of alltoall, reduce_scatter, all_gather, all_reduce): give it as a2a=, rs=, ag= or ar=");
    if (!rc && r.test >= 0 && c != r.test)
        rc = fail(err, errlen, path, 0, "it is %s_perf's output, given as %s", as_coll_test[r.test], as_coll_short[c]);
    if (rc) {
        free(r.size);
        free(r.us);
        return -1;
    }
    t->coll = (as_coll)c;
    t->ranks = r.ranks;
    t->n = r.n;
    t->size = r.size;
    t->us = r.us;
    return 0;
}

int as_nccl_read(const char *path, int coll, as_nccl_table *t, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, 0, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = as_malloc(cap);
    for (size_t got; (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            if (cap >= MAX_FILE) {
                fclose(f);
                free(buf);
                return fail(err, errlen, path, 0, "larger than %zu MiB: not nccl-tests' output", MAX_FILE >> 20);
            }
            cap *= 2;
            buf = as_realloc(buf, cap);
        }
    }
    const int bad = ferror(f);
    fclose(f);
    int rc = bad ? fail(err, errlen, path, 0, "cannot read: %s", strerror(errno ? errno : EIO))
                 : as_nccl_parse(path, buf, len, coll, t, err, errlen);
    free(buf);
    return rc;
}

void as_nccl_free(as_nccl_table *t)
{
    if (!t) return;
    free(t->size);
    free(t->us);
    memset(t, 0, sizeof *t);
}

double as_nccl_us(const as_nccl_table *t, double size)
{
    if (!t->n) return 0;
    const int64_t n = t->n;
    if (size <= t->size[0]) {
        /* below the smallest: the line through the two smallest, never below the smallest's rate */
        if (n < 2 || size >= t->size[0]) return t->us[0];
        const double slope = (t->us[1] - t->us[0]) / (t->size[1] - t->size[0]);
        const double line = t->us[0] - (t->size[0] - size) * slope, rate = t->size[0] > 0 ? t->us[0] * size / t->size[0] : 0;
        return line > rate ? line : rate;
    }
    if (size >= t->size[n - 1]) return t->size[n - 1] > 0 ? t->us[n - 1] * size / t->size[n - 1] : t->us[n - 1];
    int64_t lo = 0, hi = n - 1;   /* size[lo] < size < size[hi] */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (t->size[mid] <= size) lo = mid;
        else hi = mid;
    }
    const double f = (size - t->size[lo]) / (t->size[hi] - t->size[lo]);
    return t->us[lo] + f * (t->us[hi] - t->us[lo]);
}
