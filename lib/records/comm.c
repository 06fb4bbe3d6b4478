/* comm.c - an item's communication, and the models of its time; see comm.h */
#include "comm.h"

#include "common.h"
#include "msgobj.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const as_comm_type_name[AS_NSH] = { "table-wise", "column-wise", "row-wise", "data-parallel" };

/* calls of each collective per iteration, by sharding type (comm.h) */
static const int calls[AS_NSH][AS_NCOLL] = {
    [AS_SH_TW] = { 3, 0, 0 },
    [AS_SH_CW] = { 3, 0, 0 },
    [AS_SH_RW] = { 1, 2, 0 },
    [AS_SH_DP] = { 0, 0, 1 },
};
/* the collective that carries each type's bytes */
static const as_coll carrier[AS_NSH] = { AS_COLL_A2A, AS_COLL_A2A, AS_COLL_RING, AS_COLL_AR };

as_comm_model as_comm_bandwidth(double gbps)
{
    as_comm_model m;
    memset(&m, 0, sizeof m);
    m.gbps = gbps > 0 ? gbps : 0;
    snprintf(m.name, sizeof m.name, "%g GiB/s", m.gbps);
    return m;
}

int as_comm_on(const as_comm_model *m)
{
    return m && (m->ab || m->gbps > 0);
}

static void nvlink8(as_comm_model *m)
{
    memset(m, 0, sizeof *m);
    m->ab = 1;
    m->alpha_us[AS_COLL_A2A] = 10.5, m->beta_gbs[AS_COLL_A2A] = 370;
    m->alpha_us[AS_COLL_RING] = 6.6 + 7 * 0.6, m->beta_gbs[AS_COLL_RING] = 370;
    m->alpha_us[AS_COLL_AR] = 6.6 + 14 * 0.6, m->beta_gbs[AS_COLL_AR] = 480;
    m->max_ranks = 8;
    snprintf(m->name, sizeof m->name, "nvlink8");
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

/* "A/B,A/B,A/B" (spaces and tabs allowed around each number) into x; 0, or -1 with err */
static int parse_ab(const char *s, as_comm_model *x, char *err, size_t errlen)
{
    static const char *const what[AS_NCOLL] = { "all-to-all", "ring", "all-reduce" };
    const char *p = s;
    for (int c = 0; c < AS_NCOLL; c++) {
        double v[2];
        for (int q = 0; q < 2; q++) {
            const char want = q == 0 ? '/' : c + 1 < AS_NCOLL ? ',' : '\0';
            const char *end = strchr(p, want);   /* want '\0': the end of s */
            size_t n = end ? (size_t)(end - p) : 0;
            const char *tok = p;
            trim(&tok, &n);
            char *num = NULL, *e = NULL;
            if (end && n > 0) {
                num = as_malloc(n + 1);
                memcpy(num, tok, n);
                num[n] = 0;
                v[q] = strtod(num, &e);
            }
            const int whole = e && !*e;
            free(num);
            const int ok = whole && isfinite(v[q]) && (q == 0 ? v[q] >= 0 && v[q] <= 1e6 : v[q] > 0 && v[q] <= 1e6);
            if (!ok) {
                if (q == 0)
                    snprintf(err, errlen, "'%s': the %s's alpha is not a number of us in [0, 1e6] followed by '/' (nvlink8, "
                             "or A/B,A/B,A/B)", s, what[c]);
                else
                    snprintf(err, errlen, "'%s': the %s's beta is not a rate in (0, 1e6] GB/s%s (nvlink8, or A/B,A/B,A/B)", s,
                             what[c], c + 1 < AS_NCOLL ? " followed by ','" : " ending the value");
                return -1;
            }
            p = end + (want != '\0');
        }
        x->alpha_us[c] = v[0] + 0.0, x->beta_gbs[c] = v[1];   /* + 0.0: -0 is 0 */
    }
    return 0;
}

int as_comm_model_parse(const char *s, as_comm_model *m, char *err, size_t errlen)
{
    size_t n = s ? strlen(s) : 0;
    const char *t = s;
    trim(&t, &n);
    if (!n) {
        snprintf(err, errlen, "empty: give nvlink8 or A/B,A/B,A/B (alpha us / beta GB/s for the all-to-all, ring, all-reduce)");
        return -1;
    }
    if (n == 7 && !memcmp(t, "nvlink8", 7)) {
        nvlink8(m);
        return 0;
    }
    as_comm_model x;
    memset(&x, 0, sizeof x);
    x.ab = 1;
    if (parse_ab(s, &x, err, errlen)) return -1;
    /* the canonical form: the numbers as they read back, nothing else, so that a record's
       comm_model is the very model charged, however the spec was written */
    char num[2 * AS_NCOLL][32];
    for (int c = 0; c < AS_NCOLL; c++) {
        shortest(num[2 * c], sizeof num[0], x.alpha_us[c]);
        shortest(num[2 * c + 1], sizeof num[0], x.beta_gbs[c]);
    }
    const int len = snprintf(x.name, sizeof x.name, "%s/%s,%s/%s,%s/%s", num[0], num[1], num[2], num[3], num[4], num[5]);
    if (len < 0 || (size_t)len >= sizeof x.name) {
        snprintf(err, errlen, "'%s': its canonical form %s/%s,%s/%s,%s/%s is longer than %d bytes (give the numbers with "
                 "fewer digits)", s, num[0], num[1], num[2], num[3], num[4], num[5], AS_COMM_NAME_MAX - 1);
        return -1;
    }
    *m = x;
    return 0;
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
    if (m && m->ab && m->max_ranks > 0 && K > m->max_ranks) {
        snprintf(err, errlen, "the communication model %s holds for one host of at most %lld GPUs, not %lld ranks "
                              "(give your cluster's own: --comm-model A/B,A/B,A/B, or --comm-gbps)",
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

double as_comm_item_ms(const as_comm_model *m, int64_t K, as_shtype s, double b)
{
    if (!as_comm_on(m)) return 0;
    if (!m->ab) return b / (m->gbps * 1073741824.0) * 1e3;
    if (K <= 1) return 0;
    const double f = s == AS_SH_DP ? 1.0 : (double)(K - 1) / (double)K;
    return b * f / (m->beta_gbs[carrier[s]] * 1e6);
}

double as_comm_shard_ms(const as_comm_model *m, int64_t K, const double b[AS_NSH], const int has[AS_NSH], double parts[AS_NSH])
{
    double t = 0;
    for (int s = 0; s < AS_NSH; s++) {
        double v = as_comm_item_ms(m, K, (as_shtype)s, b[s]);
        if (m && m->ab && K > 1 && has[s])
            for (int c = 0; c < AS_NCOLL; c++) v += calls[s][c] * m->alpha_us[c] * 1e-3;
        if (parts) parts[s] = v;
        t += v;
    }
    return t;
}

double as_comm_plan_shard_ms(const as_comm_model *m, int64_t K, const double own[AS_NSH], const double all[AS_NSH], double ar,
                             const int has[AS_NSH], double parts[AS_NSH])
{
    double b[AS_NSH];
    for (int s = AS_SH_TW; s <= AS_SH_RW; s++) b[s] = own[s] + all[s] / (double)(K > 0 ? K : 1);
    b[AS_SH_DP] = ar;
    return as_comm_shard_ms(m, K, b, has, parts);
}
