/* comm.c - an item's communication, and the models of its time; see comm.h */
#include "comm.h"

#include "common.h"
#include "msgobj.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const as_comm_type_name[AS_NSH] = { "table-wise", "column-wise", "row-wise", "data-parallel", "table-row-wise" };

int64_t as_comm_local(const as_comm_model *m)
{
    return m && (m->kind == AS_COMM_HOSTS || m->kind == AS_COMM_TORCHREC) ? m->local : 0;
}

#define GIB 1073741824.0
/* TorchRec's estimator's constants (planner/constants.py at 376cac6): GiB/s */
#define TR_INTRA_GIBS 600.0
#define TR_CROSS_GIBS 12.5
#define TR_HBM_GIBS 897.0
#define TR_COPY_FACTOR 2.455     /* BATCHED_COPY_PERF_FACTOR: row-wise outputs' batched copy */
#define TR_DP_FACTOR 9.22        /* DP_ELEMENTWISE_KERNELS_PERF_FACTOR: its optimizer's kernels */
/* h100-ib across hosts (comm.h): each collective's line through nccl-tests' times at 32 MiB and
 * 16 GiB on 2 hosts of 8 H100 (tests/fixtures/nccl/SOURCES.md), alpha us and beta GB/s:
 *   all-to-all  99 us, 40 GB/s a GPU across hosts: alltoall_perf on 16 ranks, 516.6 us at 32
 *               MiB, 214134 us at 16 GiB (75.2 GB/s busbw; xxrjun/nccl-tests-cluster d7e013c1,
 *               fabric not stated); the 10-host run of the same repository (455de4f8) fits
 *               46 GB/s, 216 us
 *   all-reduce  134 us, 470 GB/s busbw: all_reduce_perf on 2 hosts of 8 H100, one 400 Gb/s
 *               ConnectX-7 InfiniBand NIC a GPU, 267.9 us at 32 MiB, 68652 us at 16 GiB
 *               (NVIDIA/nccl-tests issue 309)
 *   ring        the all-reduce's ring at the same busbw, half its latency
 * The alphas are the lines' (mid-size messages); a message of a few KiB takes 25-35 us across
 * 2-4 hosts (issue 309), and the alphas grow with the hosts (10 hosts: 590 us for the ring's) */
#define AS_COMM_IB_A2A_US 99.0
#define AS_COMM_IB_A2A_GBS 40.0
#define AS_COMM_IB_AR_US 134.0
#define AS_COMM_IB_AR_GBS 470.0
#define AS_COMM_IB_RING_US (AS_COMM_IB_AR_US / 2)
#define AS_COMM_IB_RING_GBS AS_COMM_IB_AR_GBS

as_comm_model as_comm_bandwidth(double gbps)
{
    as_comm_model m;
    memset(&m, 0, sizeof m);
    m.kind = AS_COMM_BANDWIDTH;
    m.gbps = gbps > 0 ? gbps : 0;
    m.bw = m.a2a_bw = m.lat = 1;
    snprintf(m.name, sizeof m.name, "%g GiB/s", m.gbps);
    return m;
}

int as_comm_on(const as_comm_model *m)
{
    return m && (m->ab || m->gbps > 0);
}

static void collectives(as_comm_model *m, as_comm_kind kind)
{
    memset(m, 0, sizeof *m);
    m->ab = 1;
    m->kind = kind;
    m->bw = m->a2a_bw = m->lat = 1;
}

/* one host of 8 NVLink 4 GPUs (comm.h) */
static void nvlink8_ab(double alpha[AS_NCOLL], double beta[AS_NCOLL])
{
    alpha[AS_COLL_A2A] = 10.5, beta[AS_COLL_A2A] = 370;
    alpha[AS_COLL_RS] = alpha[AS_COLL_AG] = 6.6 + 7 * 0.6, beta[AS_COLL_RS] = beta[AS_COLL_AG] = 370;
    alpha[AS_COLL_AR] = 6.6 + 14 * 0.6, beta[AS_COLL_AR] = 480;
}

/* v as the shortest "%.Ng" (N 1..17; of two as short, the smaller N) that reads back as v: the
 * canonical form of a number (10 is "10", not "1e+01") */
static void shortest(char *buf, size_t len, double v)
{
    char t[32];
    buf[0] = 0;
    for (int prec = 17; prec >= 1; prec--) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v && (!buf[0] || strlen(t) <= strlen(buf))) snprintf(buf, len, "%s", t);
    }
}

/* s[0..n) without the spaces and tabs around it */
static void trim(const char **s, size_t *n)
{
    while (*n && ((*s)[0] == ' ' || (*s)[0] == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

/* a whole number token s[0..n) (spaces and tabs around it) into *v; 1 when it is one */
static int num_of(const char *s, size_t n, double *v)
{
    trim(&s, &n);
    if (!n || n > 511) return 0;
    char buf[512], *e;
    memcpy(buf, s, n);
    buf[n] = 0;
    *v = strtod(buf, &e);
    return !*e && isfinite(*v);
}

/* "A/B,A/B,A/B" (s[0..len)) into x: the all-to-all, the ring collectives, the all-reduce */
static int parse_ab(const char *s, size_t len, as_comm_model *x, char *err, size_t errlen)
{
    static const char *const what[3] = { "all-to-all", "ring", "all-reduce" };
    const char *p = s, *end = s + len;
    for (int c = 0; c < 3; c++) {
        double v[2];
        for (int q = 0; q < 2; q++) {
            const char want = q == 0 ? '/' : c + 1 < 3 ? ',' : '\0';
            const char *e = want ? memchr(p, want, (size_t)(end - p)) : end;
            const int ok = e && num_of(p, (size_t)(e - p), &v[q]) &&
                           (q == 0 ? v[q] >= 0 && v[q] <= 1e6 : v[q] > 0 && v[q] <= 1e6);
            if (!ok) {
                if (q == 0)
                    snprintf(err, errlen, "'%.*s': the %s's alpha is not a number of us in [0, 1e6] followed by '/' (a "
                             "model's name, or A/B,A/B,A/B)", (int)len, s, what[c]);
                else
                    snprintf(err, errlen, "'%.*s': the %s's beta is not a rate in (0, 1e6] GB/s%s (a model's name, or "
                             "A/B,A/B,A/B)", (int)len, s, what[c], c + 1 < 3 ? " followed by ','" : " ending the value");
                return -1;
            }
            p = e + (want != '\0');
        }
        const as_coll to[2] = { c == 0 ? AS_COLL_A2A : c == 1 ? AS_COLL_RS : AS_COLL_AR, c == 1 ? AS_COLL_AG : (as_coll)-1 };
        for (int i = 0; i < 2; i++)
            if ((int)to[i] >= 0) x->alpha_us[to[i]] = v[0] + 0.0, x->beta_gbs[to[i]] = v[1];   /* + 0.0: -0 is 0 */
    }
    char num[6][32];
    const as_coll col[3] = { AS_COLL_A2A, AS_COLL_RS, AS_COLL_AR };
    for (int c = 0; c < 3; c++) {
        shortest(num[2 * c], sizeof num[0], x->alpha_us[col[c]]);
        shortest(num[2 * c + 1], sizeof num[0], x->beta_gbs[col[c]]);
    }
    snprintf(x->name, sizeof x->name, "%s/%s,%s/%s,%s/%s", num[0], num[1], num[2], num[3], num[4], num[5]);
    return 0;
}

/* the tables read so far, by file and the collective it was given as: a model holds
   pointers into them for the process's life (a plan's records name the model again) */
typedef struct {
    char *path;
    int coll;
    as_nccl_table t;
} cached;
static cached cache[64];
static int ncache;

static const as_nccl_table *table_of(const char *path, int coll, char *err, size_t errlen)
{
    for (int i = 0; i < ncache; i++)
        if (cache[i].coll == coll && !strcmp(cache[i].path, path)) return &cache[i].t;
    if (ncache == (int)(sizeof cache / sizeof cache[0])) {
        snprintf(err, errlen, "%s: more than %d nccl-tests files in one run", path, ncache);
        return NULL;
    }
    as_nccl_table t;
    if (as_nccl_read(path, coll, &t, err, errlen)) return NULL;
    cache[ncache].path = as_strdup(path);
    cache[ncache].coll = coll;
    cache[ncache].t = t;
    return &cache[ncache++].t;
}

/* "nccl:[KIND=]FILE,..." after its "nccl:" (s[0..len)) into x */
static int parse_nccl(const char *s, size_t len, as_comm_model *x, char *err, size_t errlen)
{
    size_t used = (size_t)snprintf(x->name, sizeof x->name, "nccl:");
    for (const char *p = s, *end = s + len; p <= end;) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        if (!e) e = end;
        size_t n = (size_t)(e - p);
        const char *f = p;
        trim(&f, &n);
        int coll = -1;
        for (int c = 0; c < AS_NCOLL && n; c++) {
            const size_t k = strlen(as_coll_short[c]);
            if (n > k + 1 && !strncmp(f, as_coll_short[c], k) && f[k] == '=') { coll = c; f += k + 1; n -= k + 1; }
        }
        if (!n || n >= 4096) {
            snprintf(err, errlen, "nccl:%.*s: %s (nccl:FILE[,FILE...], each nccl-tests' output, a2a=FILE to name its "
                     "collective)", (int)len, s, n ? "a file name too long" : "an empty file name");
            return -1;
        }
        if (used + 5 + n >= sizeof x->name) {   /* the name "...,KIND=FILE" would not fit: refused unread */
            snprintf(err, errlen, "nccl:%.60s...: its canonical form is longer than %d bytes (shorter paths, please)", s,
                     AS_COMM_NAME_MAX - 1);
            return -1;
        }
        char path[4096];
        memcpy(path, f, n);
        path[n] = 0;
        const as_nccl_table *t = table_of(path, coll, err, errlen);
        if (!t) return -2;   /* the file's fault, not the spec's */
        if (x->tab[t->coll]) {
            snprintf(err, errlen, "%s: a second %s_perf output (one file a collective)", path, as_coll_test[t->coll]);
            return -1;
        }
        if (x->ranks && t->ranks != x->ranks) {
            snprintf(err, errlen, "%s: ran on %lld ranks where the files before it ran on %lld: one cluster's runs, please",
                     path, (long long)t->ranks, (long long)x->ranks);
            return -1;
        }
        x->tab[t->coll] = t;
        x->ranks = t->ranks;
        used += (size_t)snprintf(x->name + used, sizeof x->name - used, "%s%s=%s", p == s ? "" : ",", as_coll_short[t->coll],
                                 path);
        p = e + 1;
    }
    if (!x->tab[AS_COLL_A2A] || (!x->tab[AS_COLL_RS] && !x->tab[AS_COLL_AG] && !x->tab[AS_COLL_AR])) {
        snprintf(err, errlen, "nccl:%.*s: give alltoall_perf's output and one of reduce_scatter_perf, all_gather_perf or "
                 "all_reduce_perf's (%s missing)", (int)len, s, !x->tab[AS_COLL_A2A] ? "the all-to-all" : "all three");
        return -1;
    }
    x->max_ranks = x->ranks;
    return 0;
}

/* hosts of 8 H100 over InfiniBand (comm.h h100-ib): across hosts, AS_COMM_IB_* */
static void h100_ib(as_comm_model *x)
{
    collectives(x, AS_COMM_HOSTS);
    nvlink8_ab(x->alpha_us, x->beta_gbs);
    const double xa[AS_NCOLL] = { AS_COMM_IB_A2A_US, AS_COMM_IB_RING_US, AS_COMM_IB_RING_US, AS_COMM_IB_AR_US };
    const double xb[AS_NCOLL] = { AS_COMM_IB_A2A_GBS, AS_COMM_IB_RING_GBS, AS_COMM_IB_RING_GBS, AS_COMM_IB_AR_GBS };
    memcpy(x->xalpha_us, xa, sizeof xa);
    memcpy(x->xbeta_gbs, xb, sizeof xb);
    x->local = 8;
    snprintf(x->name, sizeof x->name, "h100-ib");
}

/* the model s[0..n) names, without its factors, into x */
static int parse_base(const char *s, size_t n, as_comm_model *x, char *err, size_t errlen)
{
    if (n == 7 && !memcmp(s, "nvlink8", 7)) {
        collectives(x, AS_COMM_AB);
        nvlink8_ab(x->alpha_us, x->beta_gbs);
        x->max_ranks = 8;
        snprintf(x->name, sizeof x->name, "nvlink8");
        return 0;
    }
    if (n == 7 && !memcmp(s, "h100-ib", 7)) {
        h100_ib(x);
        return 0;
    }
    if (n >= 8 && !memcmp(s, "torchrec", 8)) {
        collectives(x, AS_COMM_TORCHREC);
        double L = 0;
        if (n > 8 && (s[8] != ':' || !num_of(s + 9, n - 9, &L) || L < 1 || L > 1048576 || L != floor(L))) {
            snprintf(err, errlen, "'%.*s': torchrec's GPUs a host is not a whole number in 1..1048576 (torchrec, or "
                     "torchrec:L)", (int)n, s);
            return -1;
        }
        x->local = (int64_t)L;
        if (L > 0) snprintf(x->name, sizeof x->name, "torchrec:%lld", (long long)L);
        else snprintf(x->name, sizeof x->name, "torchrec");
        return 0;
    }
    if (n >= 5 && !memcmp(s, "nccl:", 5)) {
        collectives(x, AS_COMM_NCCL);
        return parse_nccl(s + 5, n - 5, x, err, errlen);
    }
    collectives(x, AS_COMM_AB);
    return parse_ab(s, n, x, err, errlen);
}

/* the factors' suffix "@bw=X,a2a-bw=X,lat=Y" (s[0..n), after the '@') into x */
static int parse_factors(const char *s, size_t n, as_comm_model *x, char *err, size_t errlen)
{
    for (const char *p = s, *end = s + n; p <= end;) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        if (!e) e = end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        double v = NAN;
        const char *k = p;
        size_t kn = eq ? (size_t)(eq - p) : 0;
        trim(&k, &kn);
        double *to = NULL;
        if (kn == 2 && !memcmp(k, "bw", 2)) to = &x->bw;
        else if (kn == 6 && !memcmp(k, "a2a-bw", 6)) to = &x->a2a_bw;
        else if (kn == 3 && !memcmp(k, "lat", 3)) to = &x->lat;
        const int ok = to && num_of(eq + 1, (size_t)(e - eq - 1), &v) && v <= 1e6 && (to == &x->lat ? v >= 0 : v > 0);
        if (!ok) {
            snprintf(err, errlen, "'@%.*s': not bw=X, a2a-bw=X or lat=Y joined by ',' (X in (0, 1e6], Y in [0, 1e6])",
                     (int)n, s);
            return -1;
        }
        *to = v + 0.0;
        p = e + 1;
    }
    return 0;
}

/* x's name: its base's (base) and its factors other than 1 */
static int canonical(as_comm_model *x, const char *base, char *err, size_t errlen)
{
    char f[3][40], out[AS_COMM_NAME_MAX + 128];
    const double v[3] = { x->bw, x->a2a_bw, x->lat };
    static const char *const key[3] = { "bw", "a2a-bw", "lat" };
    int len = snprintf(out, sizeof out, "%s", base), first = 1;
    for (int i = 0; i < 3; i++) {
        if (v[i] == 1) continue;
        shortest(f[i], sizeof f[i], v[i]);
        len += snprintf(out + len, sizeof out - (size_t)len, "%s%s=%s", first ? "@" : ",", key[i], f[i]);
        first = 0;
    }
    if ((size_t)len >= sizeof x->name) {
        snprintf(err, errlen, "the model's canonical form %.80s... is longer than %d bytes", out, AS_COMM_NAME_MAX - 1);
        return -1;
    }
    memcpy(x->name, out, (size_t)len + 1);
    return 0;
}

int as_comm_model_parse(const char *s, as_comm_model *m, char *err, size_t errlen)
{
    size_t n = s ? strlen(s) : 0;
    const char *t = s;
    trim(&t, &n);
    if (!n) {
        snprintf(err, errlen, "empty: give nvlink8, h100-ib, torchrec, nccl:FILE,... or A/B,A/B,A/B (alpha us / beta GB/s "
                 "for the all-to-all, ring, all-reduce)");
        return -1;
    }
    /* the factors: after the last '@' when what follows names one */
    const char *at = NULL;
    for (const char *p = t; p < t + n; p++) if (*p == '@') at = p;
    const char *key = at ? at + 1 + strspn(at + 1, " \t") : NULL;
    if (at && !(!strncmp(key, "bw", 2) || !strncmp(key, "a2a-bw", 6) || !strncmp(key, "lat", 3))) at = NULL;
    as_comm_model x;
    char base[AS_COMM_NAME_MAX];
    size_t bn = at ? (size_t)(at - t) : n;
    const char *b = t;
    trim(&b, &bn);
    const int rc = parse_base(b, bn, &x, err, errlen);
    if (rc) return rc;
    snprintf(base, sizeof base, "%s", x.name);
    if (at && parse_factors(at + 1, (size_t)(t + n - at - 1), &x, err, errlen)) return -1;
    if (canonical(&x, base, err, errlen)) return -1;
    *m = x;
    return 0;
}

as_comm_model as_comm_scaled(const as_comm_model *m, double bw, double a2a_bw, double lat)
{
    as_comm_model x = *m;
    if (!m->ab) {   /* the bandwidth model: its rate times bw x a2a_bw */
        return as_comm_bandwidth(m->gbps * bw * a2a_bw);
    }
    char base[AS_COMM_NAME_MAX], err[256];
    snprintf(base, sizeof base, "%s", m->name);
    char *at = strrchr(base, '@');
    if (at && (m->bw != 1 || m->a2a_bw != 1 || m->lat != 1)) *at = 0;
    x.bw = bw, x.a2a_bw = a2a_bw, x.lat = lat;
    if (canonical(&x, base, err, sizeof err)) snprintf(x.name, sizeof x.name, "%s", base);
    return x;
}

int as_comm_record_read(const msgpack_object *rec, double *gbps, as_comm_model *m, int *has_model, char *err,
                        size_t errlen)
{
    *gbps = 0;
    *has_model = 0;
    const msgpack_object *g = as_obj_get(rec, "comm_gbps"), *o = as_obj_get(rec, "comm_model");
    if (g) {
        double v = NAN;
        const int num = g->type == MSGPACK_OBJECT_POSITIVE_INTEGER || g->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ||
                        g->type == MSGPACK_OBJECT_FLOAT32 || g->type == MSGPACK_OBJECT_FLOAT64;
        if (num) as_obj_num(g, &v);
        if (!num || !isfinite(v) || !(v == 0 || (v >= AS_COMM_GBPS_MIN && v <= AS_COMM_GBPS_MAX))) {
            char shown[48];
            if (num) snprintf(shown, sizeof shown, "= %g", v);
            else snprintf(shown, sizeof shown, "is %s", g->type == MSGPACK_OBJECT_STR ? "a string" : g->type == MSGPACK_OBJECT_NIL
                          ? "nil" : g->type == MSGPACK_OBJECT_BOOLEAN ? "a boolean" : "not a number");
            snprintf(err, errlen, "'comm_gbps' %s, not a bandwidth (0: not charged, or GiB/s in [%g, %g])", shown,
                     AS_COMM_GBPS_MIN, AS_COMM_GBPS_MAX);
            return -1;
        }
        *gbps = v;
    }
    if (!o) return 0;
    char spec[AS_COMM_NAME_MAX], e2[512];
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= sizeof spec || memchr(o->via.str.ptr, 0, o->via.str.size)) {
        snprintf(err, errlen, "'comm_model' is not a communication model (%s)", o->type != MSGPACK_OBJECT_STR ? "not a string"
                 : o->via.str.size >= sizeof spec ? "longer than any model's name" : "a NUL byte in it");
        return -1;
    }
    memcpy(spec, o->via.str.ptr, o->via.str.size);
    spec[o->via.str.size] = 0;
    if (as_comm_model_parse(spec, m, e2, sizeof e2)) {
        snprintf(err, errlen, "'comm_model' is not a communication model (%s)", e2);
        return -1;
    }
    *has_model = 1;
    return 0;
}

int as_comm_model_check(const as_comm_model *m, int64_t K, char *err, size_t errlen)
{
    if (!m || !m->ab) return 0;
    if (m->kind == AS_COMM_NCCL && K > 1 && K != m->ranks) {
        snprintf(err, errlen, "the communication model %.200s was measured on %lld ranks, not the plan's %lld (run "
                 "nccl-tests on %lld ranks)", m->name, (long long)m->ranks, (long long)K, (long long)K);
        return -1;
    }
    if (m->kind == AS_COMM_HOSTS && K > m->local && K % m->local) {
        snprintf(err, errlen, "the communication model %.200s is hosts of %lld GPUs: %lld ranks are not whole hosts",
                 m->name, (long long)m->local, (long long)K);
        return -1;
    }
    if (m->kind == AS_COMM_AB && m->max_ranks > 0 && K > m->max_ranks) {
        snprintf(err, errlen, "the communication model %.200s holds for one host of at most %lld GPUs, not %lld ranks "
                              "(h100-ib for hosts of 8 H100, or your cluster's own: --comm-model nccl:FILE,... or A/B,A/B,A/B)",
                 m->name, (long long)m->max_ranks, (long long)K);
        return -1;
    }
    return 0;
}

void as_comm_bytes(const as_features *f, double *in, double *out)
{
    *in = (double)f->lookups * 8.0;
    *out = 2.0 * (double)f->batch * (double)f->dim * 4.0;
}

double as_comm_ms(const as_features *f, double gbps)
{
    if (!(gbps > 0)) return 0;
    double in, out;
    as_comm_bytes(f, &in, &out);
    return (in + out) / (gbps * 1073741824.0) * 1e3;
}

static int by_id(const void *a, const void *b, void *ctx)
{
    const as_features *const *it = ctx;
    const int64_t x = it[*(const int64_t *)a]->id, y = it[*(const int64_t *)b]->id;
    if (x != y) return x < y ? -1 : 1;
    return (*(const int64_t *)a > *(const int64_t *)b) - (*(const int64_t *)a < *(const int64_t *)b);
}

void as_comm_types(const as_features *const *it, int64_t n, as_shtype *type)
{
    int64_t *ord = as_malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    for (int64_t i = 0; i < n; i++) ord[i] = i;
    qsort_r(ord, (size_t)(n > 0 ? n : 0), sizeof *ord, by_id, (void *)it);
    for (int64_t a = 0, b; a < n; a = b) {
        int cut = 0;
        const as_piece *first = NULL;
        for (b = a; b < n && it[ord[b]]->id == it[ord[a]]->id; b++) {
            const as_piece *q = &it[ord[b]]->piece;
            if (as_piece_whole(q)) continue;
            if (!first) first = q;
            else cut |= q->r0 != first->r0 || q->r1 != first->r1;
        }
        for (int64_t c = a; c < b; c++)
            type[ord[c]] = as_piece_whole(&it[ord[c]]->piece) ? AS_SH_TW : cut ? AS_SH_RW : AS_SH_CW;
    }
    free(ord);
}

/* a collective's bus factor over K ranks: nccl-tests' busbw over algbw */
static double bus(as_coll c, int64_t K)
{
    return (c == AS_COLL_AR ? 2.0 : 1.0) * (double)(K - 1) / (double)K;
}

/* a table's time, or the one derived from the others' (comm.h nccl) */
static double table_us(const as_comm_model *m, as_coll c, double S)
{
    const as_nccl_table *const *t = m->tab;
    if (t[c]) return as_nccl_us(t[c], S);
    switch (c) {
    case AS_COLL_RS:
    case AS_COLL_AG: {
        const as_coll other = c == AS_COLL_RS ? AS_COLL_AG : AS_COLL_RS;
        return t[other] ? as_nccl_us(t[other], S) : t[AS_COLL_AR] ? as_nccl_us(t[AS_COLL_AR], S) / 2 : 0;
    }
    case AS_COLL_AR:
        return table_us(m, AS_COLL_RS, S) + table_us(m, AS_COLL_AG, S);
    default:
        return t[AS_COLL_A2A] ? as_nccl_us(t[AS_COLL_A2A], S) : 0;
    }
}

/* a call's time before the factors */
static double base_us(const as_comm_model *m, int64_t K, as_coll c, double S)
{
    if (m->kind == AS_COMM_NCCL) return table_us(m, c, S);
    if (m->kind == AS_COMM_HOSTS && K > m->local) {
        if (c == AS_COLL_A2A) {
            const double in = S * (double)(m->local - 1) / (double)K / (m->beta_gbs[c] * 1e3);
            const double out = S * (double)(K - m->local) / (double)K / (m->xbeta_gbs[c] * 1e3);
            return m->xalpha_us[c] + (in > out ? in : out);
        }
        return m->xalpha_us[c] + S * bus(c, K) / (m->xbeta_gbs[c] * 1e3);
    }
    return m->alpha_us[c] + S * bus(c, K) / (m->beta_gbs[c] * 1e3);
}

double as_comm_call_us(const as_comm_model *m, int64_t K, as_coll c, double S)
{
    if (!m || !m->ab || K <= 1 || m->kind == AS_COMM_TORCHREC) return 0;
    const double x = m->bw * (c == AS_COLL_A2A ? m->a2a_bw : 1.0);
    return base_us(m, K, c, S / x) + (m->lat - 1.0) * base_us(m, K, c, 0);
}

/* TorchRec's estimate of a shard's communication (comm.h torchrec) */
static double torchrec_ms(const as_comm_model *m, int64_t K, const as_comm_load *l, double parts[AS_NSH])
{
    const int64_t L = m->local > 0 ? m->local : K;
    const double gib_ms = GIB / 1e3;   /* bytes a ms at 1 GiB/s */
    const double link = (K <= L ? TR_INTRA_GIBS : TR_CROSS_GIBS) * m->bw * gib_ms, hbm = TR_HBM_GIBS * gib_ms;
    double t = 0;
    for (int s = 0; s < AS_NSH; s++) {
        double v = 0;
        if (s == AS_SH_TW || s == AS_SH_CW) v = l->own_out[s] / (link * m->a2a_bw);
        else if (s == AS_SH_RW) v = l->own_out[s] / link + l->own_out[s] / 2 * TR_COPY_FACTOR / hbm;
        else if (s == AS_SH_TWRW) {
            /* the host's reduce-scatter at the intra-host rate, its 1/L across hosts */
            const double intra = TR_INTRA_GIBS * m->bw * gib_ms, cross = TR_CROSS_GIBS * m->bw * gib_ms * m->a2a_bw;
            v = l->own_out[s] / intra + (K > L ? l->own_out[s] / (double)L / cross : 0) + l->own_out[s] / 2 * TR_COPY_FACTOR / hbm;
        }
        else if (K > 1 && l->ar > 0) {
            const double tb = l->ar * (double)K / (2.0 * (double)(K - 1)), n = fmin((double)K / (double)L, 2.0);
            v = tb * (2 * n - 1) / n / (TR_CROSS_GIBS * m->bw * gib_ms * (double)L) * (K > 2 * L ? 2 : 1) +
                tb * TR_DP_FACTOR / (hbm / 2);
        }
        if (parts) parts[s] = v;
        t += v;
    }
    return t;
}

double as_comm_plan_shard_ms(const as_comm_model *m, int64_t K, const as_comm_load *l, double parts[AS_NSH])
{
    double p[AS_NSH] = { 0 }, t = 0;
    const double k1 = (double)(K > 0 ? K : 1);
    if (m && !m->ab && m->gbps > 0) {
        for (int s = 0; s < AS_NSH; s++)
            if (s != AS_SH_DP) p[s] = (l->own_in[s] + l->own_out[s] + (l->all_in[s] + l->all_out[s]) / k1) / (m->gbps * GIB) * 1e3;
        p[AS_SH_DP] = l->ar / (m->gbps * GIB) * 1e3;
    } else if (m && m->kind == AS_COMM_TORCHREC) {
        torchrec_ms(m, K, l, p);
    } else if (m && m->ab && K > 1) {
        for (int s = 0; s < AS_NSH; s++) {
            if (!l->has[s] || s == AS_SH_DP) continue;
            const double in = fmax(l->own_in[s], l->all_in[s] / k1), out = fmax(l->own_out[s], l->all_out[s] / k1) / 2;
            double us = as_comm_call_us(m, K, AS_COLL_A2A, in);
            if (s == AS_SH_RW) us += as_comm_call_us(m, K, AS_COLL_RS, out) + as_comm_call_us(m, K, AS_COLL_AG, out);
            else if (s == AS_SH_TWRW) {
                const int64_t L = l->local > 0 && l->local < K ? l->local : K;
                us += as_comm_call_us(m, L, AS_COLL_RS, out) + as_comm_call_us(m, L, AS_COLL_AG, out) +
                      (L < K ? 2 * as_comm_call_us(m, K, AS_COLL_A2A, out / (double)L) : 0);
            } else us += 2 * as_comm_call_us(m, K, AS_COLL_A2A, out);
            p[s] = us * 1e-3;
        }
        if (l->has[AS_SH_DP]) p[AS_SH_DP] = as_comm_call_us(m, K, AS_COLL_AR, l->ar * k1 / (2.0 * (k1 - 1))) * 1e-3;
    }
    for (int s = 0; s < AS_NSH; s++) {
        if (parts) parts[s] = p[s];
        t += p[s];
    }
    return t;
}

/* collective c's time per byte (us), its latency left out: between no message and 1 GB */
static double per_byte_us(const as_comm_model *m, int64_t K, as_coll c)
{
    return (as_comm_call_us(m, K, c, 1e9) - as_comm_call_us(m, K, c, 0)) / 1e9;
}

double as_comm_item_ms(const as_comm_model *m, int64_t K, as_shtype s, double in, double out)
{
    if (!as_comm_on(m)) return 0;
    if (!m->ab) return (in + out) / (m->gbps * GIB) * 1e3;
    if (m->kind == AS_COMM_TORCHREC) {
        as_comm_load l;
        memset(&l, 0, sizeof l);
        if (s == AS_SH_DP) l.ar = out;
        else l.own_out[s] = out;
        l.has[s] = 1;
        return torchrec_ms(m, K, &l, NULL);
    }
    if (K <= 1) return 0;
    if (s == AS_SH_DP) return out * (double)K / (2.0 * (double)(K - 1)) * per_byte_us(m, K, AS_COLL_AR) * 1e-3;
    const double o = s == AS_SH_RW || s == AS_SH_TWRW ? (per_byte_us(m, K, AS_COLL_RS) + per_byte_us(m, K, AS_COLL_AG)) / 2
                                                     : per_byte_us(m, K, AS_COLL_A2A);
    return (in * per_byte_us(m, K, AS_COLL_A2A) + out * o) * 1e-3;
}

void as_comm_words(const as_comm_model *m, char *buf, size_t len)
{
    static const char *const how[] = {
        [AS_COMM_AB] = "each call its latency plus its message over its bus bandwidth",
        [AS_COMM_HOSTS] = "hosts of 8 H100 SXM: nvlink8 within a host, one 400 Gb/s InfiniBand NIC a GPU across",
        [AS_COMM_NCCL] = "the cluster's nccl-tests tables: each call its measured time at its message",
        [AS_COMM_TORCHREC] = "TorchRec's planner's own estimate: each shard its outputs over 600 GiB/s within a host, 12.5 "
                             "across",
    };
    if (!m || !m->ab) snprintf(buf, len, "at %g GiB/s", m ? m->gbps : 0.0);
    else snprintf(buf, len, "by %s (%s)", m->name, how[m->kind]);
}

void as_comm_words_of(const char *name, double gbps, char *buf, size_t len)
{
    as_comm_model m = as_comm_bandwidth(gbps);
    char err[512];
    if (name && as_comm_model_parse(name, &m, err, sizeof err)) {
        snprintf(buf, len, "by %s", name);
        return;
    }
    as_comm_words(&m, buf, len);
}
