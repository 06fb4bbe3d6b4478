/* comm.c - an item's communication, and the models of its time; see comm.h */
#include "comm.h"

#include "common.h"

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

int as_comm_model_parse(const char *s, as_comm_model *m, char *err, size_t errlen)
{
    if (!s || !*s) {
        snprintf(err, errlen, "empty: give nvlink8 or A/B,A/B,A/B (alpha us / beta GB/s for the all-to-all, ring, all-reduce)");
        return -1;
    }
    if (!strcmp(s, "nvlink8")) {
        nvlink8(m);
        return 0;
    }
    as_comm_model x;
    memset(&x, 0, sizeof x);
    x.ab = 1;
    static const char *const what[AS_NCOLL] = { "all-to-all", "ring", "all-reduce" };
    const char *p = s;
    for (int c = 0; c < AS_NCOLL; c++) {
        char *e;
        const double a = strtod(p, &e);
        if (e == p || *e != '/' || !isfinite(a) || a < 0 || a > 1e6) {
            snprintf(err, errlen, "'%s': the %s's alpha is not a number of us in [0, 1e6] followed by '/' (nvlink8, or A/B,A/B,A/B)",
                     s, what[c]);
            return -1;
        }
        p = e + 1;
        const double b = strtod(p, &e);
        if (e == p || !isfinite(b) || !(b > 0) || b > 1e6 || *e != (c + 1 < AS_NCOLL ? ',' : '\0')) {
            snprintf(err, errlen, "'%s': the %s's beta is not a rate in (0, 1e6] GB/s%s (nvlink8, or A/B,A/B,A/B)", s, what[c],
                     c + 1 < AS_NCOLL ? " followed by ','" : " ending the value");
            return -1;
        }
        x.alpha_us[c] = a, x.beta_gbs[c] = b;
        p = e + 1;
    }
    snprintf(x.name, sizeof x.name, "%.80s", s);
    *m = x;
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
