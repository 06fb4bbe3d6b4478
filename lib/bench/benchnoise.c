/* benchnoise.c - noise-aware measurement; see benchnoise.h.
 * Dimension letters: T tables, K shards. */
#include "benchnoise.h"
#include "stats.h"
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int as_noise_drift_out(double f, double b)
{
    return b > 1 && isfinite(f) && f > 0 && (f > b || f < 1 / b);
}

int as_noise_is_noisy(const as_bench_result *r, const as_noise_cfg *nc)
{
    return r->ok && nc->threshold > 0 && isfinite(r->spread) && r->spread > nc->threshold;
}

int64_t as_noise_group_end(const as_noise_job *jobs, const int64_t *sel, int64_t m, int64_t i, int interleave)
{
#define JOB(p) (&jobs[sel ? sel[p] : (p)])
    if (i >= m) return m;
    if (interleave <= 1) return i + 1;
    int64_t e = i + 1;
    while (e < m && JOB(e)->unit == JOB(i)->unit) e++;
    while (e < m) {
        int64_t f = e + 1;
        while (f < m && JOB(f)->unit == JOB(e)->unit) f++;
        if (f - i > interleave) break;
        e = f;
    }
    return e;
#undef JOB
}

int64_t as_noise_group_end_fit(as_bench_session *s, const as_noise_job *jobs, const int64_t *sel, int64_t m, int64_t i,
                               const as_noise_cfg *nc)
{
#define JOB(p) (&jobs[sel ? sel[p] : (p)])
    const int64_t e = as_noise_group_end(jobs, sel, m, i, nc->interleave);
    if (e - i <= 0 || !as_bench_session_budget(s)) return e;
    /* the group's shards, then the reference shard */
    const int ref = nc->ref_ids && nc->ref_n > 0;
    const int64_t n = e - i;
    if (n + ref > INT32_MAX) return e;
    as_bench_shardref *sh = as_malloc((size_t)(n + ref) * sizeof *sh);
    for (int64_t p = i; p < e; p++) {
        as_bench_shardref r = { JOB(p)->ids, JOB(p)->n, 0 };
        sh[p - i] = r;
    }
    /* the most whole units from i that fit with the reference; the first unit stays even
       when it does not (as_bench_session_run_group measures it in parts) */
    int64_t best = i + 1;
    while (best < e && JOB(best)->unit == JOB(i)->unit) best++;
    for (int64_t f = best; f <= e;) {
        const int64_t k = f - i;
        /* the reference after the first k shards, in place of shard k for the check */
        as_bench_shardref keep = k < n ? sh[k] : sh[0];
        if (ref) {
            as_bench_shardref r = { nc->ref_ids, nc->ref_n, 0 };
            sh[k] = r;
        }
        const int fits = as_bench_session_fits(s, sh, (int)(k + ref));
        if (ref && k < n) sh[k] = keep;
        if (!fits) break;
        best = f;
        if (f == e) break;
        f++;
        while (f < e && JOB(f)->unit == JOB(f - 1)->unit) f++;
    }
    free(sh);
    return best;
#undef JOB
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t as_noise_ref_auto(const int64_t *ids, int64_t n, int64_t out[AS_NOISE_REF_TABLES])
{
    if (n <= 0) return 0;
    int64_t *v = as_malloc((size_t)n * sizeof *v);
    memcpy(v, ids, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    const int64_t m = n < AS_NOISE_REF_TABLES ? n : AS_NOISE_REF_TABLES;
    for (int64_t i = 0; i < m; i++) out[i] = v[(2 * i + 1) * n / (2 * m)];
    free(v);
    return m;
}

int64_t as_noise_ref_pool(const as_bpool *p, int64_t out[AS_NOISE_REF_TABLES])
{
    int64_t *ids = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *ids);
    for (int64_t i = 0; i < p->n; i++) ids[i] = p->t[i].id;
    const int64_t m = as_noise_ref_auto(ids, p->n, out);
    free(ids);
    return m;
}

/* the usable reference costs of one as_noise_measure call */
typedef struct {
    double *v;
    int64_t n, cap;
} ref_list;

/* measure the jobs jobs[sel[0..m)] as attempt `attempt`, group by group (each with the
 * reference shard last, when there is one), results into rs; the usable reference costs
 * are added to refs */
static void measure_groups(as_bench_session *s, const as_noise_job *jobs, const int64_t *sel, int64_t m, int attempt,
                           const as_noise_cfg *nc, as_bench_result *rs, ref_list *refs,
                           void (*done)(void *ctx, int64_t i), void *ctx)
{
    const int ref = nc->ref_ids && nc->ref_n > 0;
    as_bench_shardref *sh = as_malloc((size_t)(m + 1) * sizeof *sh);
    as_bench_shardref *gsh = ref ? as_malloc((size_t)(m + 1) * sizeof *gsh) : NULL;
    as_bench_result *grs = ref ? as_malloc((size_t)(m + 1) * sizeof *grs) : NULL;
    for (int64_t p = 0; p < m; p++) {
        const as_noise_job *j = &jobs[sel ? sel[p] : p];
        as_bench_shardref r = { j->ids, j->n, attempt };
        sh[p] = r;
    }
    for (int64_t i = 0; i < m;) {
        int64_t e = as_noise_group_end_fit(s, jobs, sel, m, i, nc);
        if (e - i > INT32_MAX - 1) e = i + INT32_MAX - 1;
        const int k = (int)(e - i);
        if (!ref) as_bench_session_run_group(s, sh + i, k, rs + i);
        else {
            memcpy(gsh, sh + i, (size_t)k * sizeof *gsh);
            as_bench_shardref r = { nc->ref_ids, nc->ref_n, attempt };
            gsh[k] = r;
            as_bench_session_run_group(s, gsh, k + 1, grs);
            /* a reference that failed corrects nothing; a noisy one sets no level */
            const double ref_ms = grs[k].ok && grs[k].cost_ms > 0 ? grs[k].cost_ms : NAN;
            const int ref_noisy = isfinite(ref_ms) && as_noise_is_noisy(&grs[k], nc);
            const double refdev = (grs[k].busy_ms + grs[k].setup_ms + grs[k].flush_ms) / (k > 0 ? k : 1);
            for (int q = 0; q < k; q++) {
                rs[i + q] = grs[q];
                rs[i + q].ref_ms = ref_ms;
                rs[i + q].ref_noisy = ref_noisy;
                rs[i + q].refdev_ms += refdev;
            }
            if (isfinite(ref_ms) && !ref_noisy) {
                if (refs->n == refs->cap) {
                    refs->cap = refs->cap ? 2 * refs->cap : 16;
                    refs->v = as_realloc(refs->v, (size_t)refs->cap * sizeof *refs->v);
                }
                refs->v[refs->n++] = ref_ms;
            }
        }
        for (int64_t p = i; p < e; p++)
            if (done) done(ctx, p);
        i = e;
    }
    free(sh);
    free(gsh);
    free(grs);
}


typedef struct {
    as_noise_job *jobs;
    const as_bench_result *rs;
    const as_noise_cfg *nc;
    void *ctx;
    void (*first_done)(void *ctx, int64_t i);
    int round;
    int64_t k, left;
} merge_ctx;

static void first_cb(void *p, int64_t i)
{
    merge_ctx *M = p;
    M->jobs[i].r = M->rs[i];
    M->jobs[i].r.attempts = 1;
    M->jobs[i].r.noisy = 0;
    if (M->first_done) M->first_done(M->ctx, i);
}

static void retry_cb(void *p, int64_t pos)
{
    (void)pos;
    merge_ctx *M = p;
    if (M->nc->retried) M->nc->retried(M->ctx, M->round, ++M->k, M->left);
}

/* how well an attempt's group reference corrects it: 2 a quiet reference, 1 a noisy one,
 * 0 none (no reference, it failed, or it lies outside the drift bound) */
static int ref_rank(const as_bench_result *r)
{
    return !isfinite(r->ref_ms) || r->ref_bad ? 0 : r->ref_noisy ? 1 : 2;
}

/* r's reference judged against level lvl (0: unknown, nothing refused) */
static void mark_ref(as_bench_result *r, double lvl, const as_noise_cfg *nc)
{
    r->ref_level = lvl;
    r->ref_bad = r->ok && lvl > 0 && isfinite(r->ref_ms) && as_noise_drift_out(r->ref_ms / lvl, nc->drift_bound);
}

/* whether job result r asks for its retry unit to be measured again: it is noisy, or (with
 * a reference) its group's reference was measured but noisy or outside the drift bound,
 * which would leave it on another scale than the shards corrected by good ones (a plan's
 * other shards) */
static int wants_retry(const as_bench_result *r, const as_noise_cfg *nc)
{
    return as_noise_is_noisy(r, nc) || (nc->ref_ids && nc->ref_n > 0 && r->ok && (ref_rank(r) == 1 || r->ref_bad));
}

/* the end of the retry unit starting at job i of n: with interleaving, the jobs of one unit
 * (a plan's shards are measured again together, so that a plan's kept figures come from one
 * group); without, every shard alone */
static int64_t retry_unit_end(const as_noise_job *jobs, int64_t n, int64_t i, const as_noise_cfg *nc)
{
    int64_t e = i + 1;
    if (nc->interleave > 1)
        while (e < n && jobs[e].unit == jobs[i].unit) e++;
    return e;
}

/* an attempt of a retry unit, results r[0..m), scored for keeping: *rank is the worst
 * ref_rank of its shards, *spread the largest spread (undefined ones left out); returns 0
 * when a shard failed or none has a spread (such an attempt never replaces a measured one) */
static int unit_score(const as_bench_result *const *r, int64_t m, int *rank, double *spread)
{
    int any = 0;
    *rank = 2;
    *spread = 0;
    for (int64_t q = 0; q < m; q++) {
        if (!r[q]->ok) return 0;
        const int a = ref_rank(r[q]);
        if (a < *rank) *rank = a;
        if (isfinite(r[q]->spread)) {
            any = 1;
            if (r[q]->spread > *spread) *spread = r[q]->spread;
        }
    }
    return any;
}

/* round's re-measurements rs[0..left) of the jobs sel[0..left) (whole retry units, in
 * order): each unit keeps its better attempt; every job counts the attempt and its time */
static void keep_best(as_noise_job *jobs, int64_t n, const int64_t *sel, int64_t left, const as_bench_result *rs,
                      const as_bench_result **ra, const as_bench_result **rb, int round, const as_noise_cfg *nc)
{
    /* a retry unit keeps the attempt whose reference corrects it best (a quiet one, then
       a noisy one, then none; all alike without a reference), then the one with the
       lowest largest spread; all its shards keep the same attempt */
    for (int64_t a = 0; a < left;) {
        const int64_t ue = retry_unit_end(jobs, n, sel[a], nc);
        int64_t b = a + 1;
        while (b < left && sel[b] < ue) b++;
        for (int64_t q = a; q < b; q++) {
            ra[q - a] = &rs[q];
            rb[q - a] = &jobs[sel[q]].r;
        }
        int rka, rkb;
        double spa, spb;
        const int take = unit_score(ra, b - a, &rka, &spa) &&
                         (!unit_score(rb, b - a, &rkb, &spb) || rka > rkb || (rka == rkb && spa < spb));
        for (int64_t q = a; q < b; q++) {
            as_noise_job *j = &jobs[sel[q]];
            const double busy = j->r.busy_ms + rs[q].busy_ms, wall = j->r.wall_ms + rs[q].wall_ms;
            const double su = j->r.setup_ms + rs[q].setup_ms, fl = j->r.flush_ms + rs[q].flush_ms,
                         rd = j->r.refdev_ms + rs[q].refdev_ms;
            if (take) j->r = rs[q];
            j->r.attempts = round + 1;
            j->r.busy_ms = busy;
            j->r.wall_ms = wall;
            j->r.setup_ms = su;
            j->r.flush_ms = fl;
            j->r.refdev_ms = rd;
        }
        a = b;
    }
}

/* drift: each kept attempt divided by its group's reference over the run's level, but for a
 * factor outside the bound: refused (a failed measurement), counted by group (refs: the
 * quiet references measured, lvl: the level they are judged against) */
static void drift_correct(as_noise_job *jobs, int64_t n, const as_noise_cfg *nc, ref_list *refs, double lvl)
{
    if (!(*nc->ref_base > 0) && refs->n) {
        /* the level: the median of the quiet references within the bound of the first
           round's level (all of them when none is) */
        int64_t m = 0;
        for (int64_t q = 0; q < refs->n; q++)
            if (!(lvl > 0) || !as_noise_drift_out(refs->v[q] / lvl, nc->drift_bound)) refs->v[m++] = refs->v[q];
        *nc->ref_base = as_stats_median(refs->v, m ? m : refs->n);
    }
    const double base = *nc->ref_base;
    double last_bad = NAN;
    for (int64_t i = 0; i < n && base > 0; i++) {
        as_bench_result *r = &jobs[i].r;
        if (!r->ok || !isfinite(r->ref_ms)) continue;
        mark_ref(r, lvl, nc);
        if (!r->ref_bad) as_bench_result_scale(r, r->ref_ms / base);
        else {
            /* a group's shards share its reference cost: a new value, a new group */
            if (nc->refused && r->ref_ms != last_bad) ++*nc->refused;
            last_bad = r->ref_ms;
        }
    }
}

int64_t as_noise_measure(as_bench_session *s, as_noise_job *jobs, int64_t n, const as_noise_cfg *nc,
                         void (*first_done)(void *ctx, int64_t i), void *ctx, double *retry_s)
{
    as_bench_result *rs = as_malloc((size_t)(n ? n : 1) * sizeof *rs);
    int64_t *sel = as_malloc((size_t)(n ? n : 1) * sizeof *sel);
    const as_bench_result **ra = as_malloc((size_t)(n ? n : 1) * sizeof *ra);
    const as_bench_result **rb = as_malloc((size_t)(n ? n : 1) * sizeof *rb);
    merge_ctx M = { jobs, rs, nc, ctx, first_done, 0, 0, 0 };
    ref_list refs = { 0 };
    measure_groups(s, jobs, NULL, n, 0, nc, rs, &refs, first_cb, &M);
    /* the level the references are judged against: this call's (window's) own, the median of
       its first round's quiet references when it has at least AS_NOISE_DRIFT_LOCAL of them (a
       failed reference is an outlier among its neighbours in time; drift moves them all, and
       over a run by more than 2x on a busy VM), else the run's own first level; never the
       level corrected to, which may be another run's or a number */
    const int ref = nc->ref_ids && nc->ref_n > 0 && nc->ref_base;
    double lvl = 0;
    if (ref) {
        const double here = refs.n ? as_stats_median(refs.v, refs.n) : 0;
        const double run = nc->own_level && *nc->own_level > 0 ? *nc->own_level : 0;
        lvl = refs.n >= AS_NOISE_DRIFT_LOCAL || !(run > 0) ? here : run;
        if (nc->own_level && !(run > 0) && here > 0) *nc->own_level = here;
    }
    for (int64_t i = 0; i < n && ref; i++) mark_ref(&jobs[i].r, lvl, nc);
    int64_t again = 0;
    const double t0 = as_now();
    for (int round = 1; round <= nc->retries; round++) {
        /* the retry units with a shard still noisy after round - 1 re-measurements (the
           kept spread is above it) or kept with a noisy reference: all their shards */
        int64_t left = 0;
        for (int64_t i = 0; i < n;) {
            const int64_t e = retry_unit_end(jobs, n, i, nc);
            int want = 0;
            for (int64_t j = i; j < e; j++) want |= jobs[j].r.attempts == round && wants_retry(&jobs[j].r, nc);
            for (int64_t j = i; j < e && want; j++) sel[left++] = j;
            i = e;
        }
        if (!left) break;
        M.round = round;
        M.k = 0;
        M.left = left;
        measure_groups(s, jobs, sel, left, round, nc, rs, &refs, retry_cb, &M);
        for (int64_t q = 0; q < left && ref; q++) mark_ref(&rs[q], lvl, nc);
        again += left;
        keep_best(jobs, n, sel, left, rs, ra, rb, round, nc);
    }
    for (int64_t i = 0; i < n; i++) jobs[i].r.noisy = as_noise_is_noisy(&jobs[i].r, nc);
    if (retry_s) *retry_s += as_now() - t0;
    if (ref) drift_correct(jobs, n, nc, &refs, lvl);
    free(refs.v);
    free(rs);
    free(sel);
    free(ra);
    free(rb);
    return again;
}

void as_noise_passes_combine(as_bench_result *out, const as_bench_result *r, int n)
{
    int first = -1, m = 0, ms = 0, md = 0, mr = 0, attempts = 0;
    double lc = 0, lf = 0, lb = 0, lm = 0, lg = 0, ld = 0, lr = 0, rel = 0, sp = 0, busy = 0, wall = 0;
    double su = 0, fl = 0, rd = 0;
    double mn = INFINITY, mx = -INFINITY;
    int noisy = 0, ref_noisy = 0, ref_bad = 0;
    double pass_ms[AS_BENCH_PASS_MAX];
    for (int i = 0; i < n && i < AS_BENCH_PASS_MAX; i++) pass_ms[i] = r[i].ok ? r[i].cost_ms : NAN;
    for (int i = 0; i < n; i++) {
        attempts += r[i].attempts;
        busy += r[i].busy_ms;
        wall += r[i].wall_ms;
        su += r[i].setup_ms;
        fl += r[i].flush_ms;
        rd += r[i].refdev_ms;
        if (!r[i].ok) continue;
        if (first < 0) first = i;
        m++;
        lc += log(r[i].cost_ms);
        lf += log(r[i].fwd_ms);
        lb += log(r[i].bwd_ms);
        lm += log(r[i].median_ms);
        lg += log(r[i].gbps);
        if (r[i].min_ms < mn) mn = r[i].min_ms;
        if (r[i].max_ms > mx) mx = r[i].max_ms;
        rel += r[i].rel_std;
        if (isfinite(r[i].spread)) { sp += r[i].spread; ms++; }
        if (isfinite(r[i].drift) && r[i].drift > 0) { ld += log(r[i].drift); md++; }
        if (isfinite(r[i].ref_ms) && r[i].ref_ms > 0) { lr += log(r[i].ref_ms); mr++; }
        noisy |= r[i].noisy;
        ref_noisy |= r[i].ref_noisy;
        ref_bad |= r[i].ref_bad;
    }
    if (first < 0) {
        *out = r[0];
        out->attempts = attempts;
        out->busy_ms = busy;
        out->wall_ms = wall;
        out->setup_ms = su;
        out->flush_ms = fl;
        out->refdev_ms = rd;
        return;
    }
    *out = r[first];
    out->cost_ms = exp(lc / m);
    out->fwd_ms = exp(lf / m);
    out->bwd_ms = exp(lb / m);
    out->median_ms = exp(lm / m);
    out->gbps = exp(lg / m);
    out->min_ms = mn;
    out->max_ms = mx;
    out->rel_std = rel / m;
    out->spread = ms ? sp / ms : NAN;
    out->drift = md == m ? exp(ld / m) : NAN;
    out->ref_ms = mr == m ? exp(lr / m) : NAN;
    out->noisy = noisy;
    out->ref_noisy = ref_noisy;
    out->attempts = attempts;
    out->busy_ms = busy;
    out->wall_ms = wall;
    out->setup_ms = su;
    out->flush_ms = fl;
    out->refdev_ms = rd;
    out->passes = m;
    out->ref_bad = ref_bad;
    out->npass = n < AS_BENCH_PASS_MAX ? n : AS_BENCH_PASS_MAX;
    memcpy(out->pass_ms, pass_ms, (size_t)out->npass * sizeof *pass_ms);
}

double as_noise_median_spread(const as_bench_tally *t)
{
    if (!t->nspread) return NAN;
    double *v = as_malloc((size_t)t->nspread * sizeof *v);
    memcpy(v, t->spreads, (size_t)t->nspread * sizeof *v);
    double m = as_stats_median(v, t->nspread);
    free(v);
    return m;
}

void as_noise_summary(char *buf, size_t len, const as_bench_tally *t, const as_noise_cfg *nc, double retry_s)
{
    const double med = as_noise_median_spread(t);
    int k;
    if (t->nspread)
        k = snprintf(buf, len, "noise: %" PRId64 " shard%s with a spread, median spread %.1f %%", t->nspread,
                     t->nspread == 1 ? "" : "s", 100 * med);
    else
        k = snprintf(buf, len, "noise: no shard with a spread (fewer than 2 runs kept after trimming)");
    if (k < 0 || (size_t)k >= len) return;
    if (nc->threshold > 0) {
        char secs[48] = "";
        if (retry_s >= 0) snprintf(secs, sizeof secs, ", %.2f s", retry_s);
        snprintf(buf + k, len - (size_t)k, "; %" PRId64 " re-measured (%" PRId64 " extra attempt%s%s), %" PRId64
                 " noisy (spread above %.1f %% after up to %d re-measurement%s)", t->remeasured, t->extra,
                 t->extra == 1 ? "" : "s", secs, t->noisy, 100 * nc->threshold, nc->retries, nc->retries == 1 ? "" : "s");
    }
    else
        snprintf(buf + k, len - (size_t)k, "; no threshold: nothing re-measured or flagged");
}

int as_noise_warning(char *buf, size_t len, const as_bench_tally *t, const as_noise_cfg *nc)
{
    if (len) buf[0] = 0;
    if (!t->nspread || nc->threshold <= 0 || (double)t->noisy <= AS_NOISE_WARN_FRACTION * (double)t->nspread) return 0;
    snprintf(buf, len, "warning: %" PRId64 " of %" PRId64 " shards (%.0f %%) are still noisy (spread above %.1f %%) "
             "after up to %d re-measurement%s: the machine looks busy; their costs (flagged `noisy`) may not "
             "rank plans reliably: measure again on a quiet machine", t->noisy, t->nspread,
             100.0 * (double)t->noisy / (double)t->nspread, 100 * nc->threshold, nc->retries, nc->retries == 1 ? "" : "s");
    return 1;
}
