/* eval.c - plan evaluation: figures, summaries, tables and the verdict; see eval.h (the plots:
 * evalplot.c).
 * Dimension letters: K shards, T tables of a plan. */
#include "eval.h"
#include "common.h"
#include "evalfloor.h"
#include "planrec.h"
#include "reclimits.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* whether q carries every communication byte count it has: comm_in / comm_out (all-to-all),
 * and with data-parallel entries over K > 1 shards comm_ar (their all-reduce; a plan from
 * before comm_ar_bytes lacks it); a plan of data-parallel entries alone exchanges nothing
 * all-to-all */
static int comm_complete(const as_planrec_full *q)
{
    int a2a = q->comm_in != NULL;
    if (!a2a) {
        a2a = 1;
        for (int64_t i = 0; i < q->T; i++) a2a &= q->assign[i] == AS_DP;
    }
    return a2a && (q->comm_ar || !q->ndp || q->K < 2);
}

/* entries of q by table id (qsort_r's ctx: the plan) */
static int by_table(const void *a, const void *b, void *ctx)
{
    const as_planrec_full *q = ctx;
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (q->tables[x] != q->tables[y]) return q->tables[x] < q->tables[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* each entry's sharding type, from the pieces and the placement (as as_comm_types does with
   features): a whole table table-wise; the pieces of a table whose row ranges differ
   row-wise, or table-row-wise when they all lie on one host of L ranks (L > 0, K > L); other
   pieces column-wise */
static void entry_types(const as_planrec_full *q, int64_t L, as_shtype *type)
{
    const int64_t T = q->T;
    int64_t *ord = as_malloc((size_t)(T ? T : 1) * sizeof *ord);
    for (int64_t i = 0; i < T; i++) ord[i] = i;
    qsort_r(ord, (size_t)T, sizeof *ord, by_table, (void *)q);
    for (int64_t a = 0, b; a < T; a = b) {
        int cut = 0, host = L > 0 && q->K > L;
        const as_piece *first = NULL;
        int64_t h = -1;
        for (b = a; b < T && q->tables[ord[b]] == q->tables[ord[a]]; b++) {
            const int64_t i = ord[b];
            if (!q->pieces || as_piece_whole(&q->pieces[i])) continue;
            if (!first) first = &q->pieces[i];
            else cut |= q->pieces[i].r0 != first->r0 || q->pieces[i].r1 != first->r1;
            if (q->assign[i] < 0 || (h >= 0 && q->assign[i] / L != h)) host = 0;
            else if (host) h = q->assign[i] / L;
        }
        for (int64_t c = a; c < b; c++) {
            const int64_t i = ord[c];
            type[i] = !q->pieces || as_piece_whole(&q->pieces[i]) ? AS_SH_TW : !cut ? AS_SH_CW : host ? AS_SH_TWRW : AS_SH_RW;
        }
    }
    free(ord);
}

/* shard j's bytes of each sharding type, ids and outputs apart (a plan without the ids' part
   of its row and column pieces' bytes: split as the shard's ids to outputs); its row bytes
   split between row-wise and table-row-wise as its row pieces are */
static void shard_bytes(const as_planrec_full *q, int64_t j, const int64_t nrow[2], double in[AS_NSH], double out[AS_NSH])
{
    const double tot_in = q->comm_in[j], tot = q->comm_in[j] + q->comm_out[j], f = tot > 0 ? tot_in / tot : 0;
    const double rw = q->comm_rw ? q->comm_rw[j] : 0, cw = q->comm_cw ? q->comm_cw[j] : 0;
    const double rin = q->comm_rw_in ? q->comm_rw_in[j] : rw * f;
    in[AS_SH_CW] = q->comm_cw_in ? q->comm_cw_in[j] : cw * f;
    out[AS_SH_CW] = cw - in[AS_SH_CW];
    const double tw = nrow[0] + nrow[1] > 0 ? (double)nrow[1] / (double)(nrow[0] + nrow[1]) : 0;
    in[AS_SH_TWRW] = rin * tw, out[AS_SH_TWRW] = (rw - rin) * tw;
    in[AS_SH_RW] = rin - in[AS_SH_TWRW], out[AS_SH_RW] = rw - rin - out[AS_SH_TWRW];
    in[AS_SH_TW] = fmax(0, tot_in - rin - in[AS_SH_CW]);
    out[AS_SH_TW] = fmax(0, q->comm_out[j] - (rw - rin) - out[AS_SH_CW]);
    in[AS_SH_DP] = out[AS_SH_DP] = 0;
}

int as_eval_comm_loads(const as_planrec_full *q, int64_t local, as_comm_load *l)
{
    const int64_t K = q->K, T = q->T;
    if (!q->comm_in && !q->comm_ar) return -1;
    as_shtype *type = as_malloc((size_t)(T ? T : 1) * sizeof *type);
    int64_t *nrow = as_calloc((size_t)(2 * K + 2), sizeof *nrow);   /* [K][2]: row-wise, table-row-wise */
    int has[AS_NSH] = { 0 };
    entry_types(q, local, type);
    for (int64_t i = 0; i < T; i++) {
        if (q->assign[i] < 0) continue;
        has[type[i]] = 1;
        if (type[i] == AS_SH_RW || type[i] == AS_SH_TWRW) nrow[2 * q->assign[i] + (type[i] == AS_SH_TWRW)]++;
    }
    has[AS_SH_DP] = q->ndp > 0;
    double all_in[AS_NSH] = { 0 }, all_out[AS_NSH] = { 0 };
    for (int64_t j = 0; j < K; j++) {
        memset(&l[j], 0, sizeof l[j]);
        if (q->comm_in) shard_bytes(q, j, nrow + 2 * j, l[j].own_in, l[j].own_out);
        for (int s = 0; s < AS_NSH; s++) all_in[s] += l[j].own_in[s], all_out[s] += l[j].own_out[s];
    }
    for (int64_t j = 0; j < K; j++) {
        memcpy(l[j].all_in, all_in, sizeof all_in);
        memcpy(l[j].all_out, all_out, sizeof all_out);
        memcpy(l[j].has, has, sizeof has);
        l[j].ar = q->comm_ar ? q->comm_ar[j] : 0;
        l[j].local = local;
    }
    free(type);
    free(nrow);
    return 0;
}

int as_eval_comm_ms(const as_planrec_full *q, int64_t k, const as_comm_model *m, double *ms, double parts[AS_NSH])
{
    if (parts)
        for (int s = 0; s < AS_NSH; s++) parts[s] = 0;
    *ms = 0;
    if ((!q->comm_in && !q->comm_ar) || k < 0 || k >= q->K) return -1;
    as_comm_load *l = as_malloc((size_t)q->K * sizeof *l);
    as_eval_comm_loads(q, as_comm_local(m), l);
    *ms = as_comm_plan_shard_ms(m, q->K, &l[k], parts);
    free(l);
    return 0;
}

int as_eval_charge_comm(as_planrec_full *p, int64_t n, const as_comm_model *m, int64_t *missing, int64_t *have,
                        double *bytes_sum, int64_t *bytes_n, double *bytes_max, char *err, size_t errlen)
{
    int64_t mis = 0, hv = 0, bn = 0;
    double bs = 0, bm = 0;
    for (int64_t j = 0; j < n; j++) {
        int costed = 0;
        for (int64_t k = 0; k < p[j].K; k++) costed |= !isnan(p[j].cost[k]);
        if (!p[j].comm_in && !p[j].comm_ar) { mis += costed; continue; }
        if (!comm_complete(&p[j])) mis += costed;
        hv++;
        for (int64_t k = 0; k < p[j].K; k++) {
            const double b = (p[j].comm_in ? p[j].comm_in[k] + p[j].comm_out[k] : 0) + (p[j].comm_ar ? p[j].comm_ar[k] : 0);
            bs += b;
            bn++;
            if (b > bm) bm = b;
        }
    }
    if (missing) *missing = mis;
    if (have) *have = hv;
    if (bytes_sum) *bytes_sum = bs;
    if (bytes_n) *bytes_n = bn;
    if (bytes_max) *bytes_max = bm;
    if (!as_comm_on(m) || mis || !hv) return 0;
    for (int64_t j = 0; j < n; j++) {
        char e[512];
        if (as_comm_model_check(m, p[j].K, e, sizeof e)) {
            snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", p[j].task, p[j].alg, e);
            return -1;
        }
    }
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        if ((!q->comm_in && !q->comm_ar) || !q->K) continue;
        free(q->comm_ms);
        q->comm_ms = as_malloc((size_t)q->K * sizeof *q->comm_ms);
        as_comm_load *l = as_malloc((size_t)q->K * sizeof *l);
        as_eval_comm_loads(q, as_comm_local(m), l);
        for (int64_t k = 0; k < q->K; k++) {
            /* its own side of each collective, its share of everyone's, and what it sends in
               the all-reduce of its data-parallel tables' gradients (its own: no share) */
            q->comm_ms[k] = as_comm_plan_shard_ms(m, q->K, &l[k], NULL);
            if (!isnan(q->cost[k])) q->cost[k] += q->comm_ms[k];
        }
        free(l);
    }
    return 1;
}

/* q's balance in each pass (ok plans with passes): each pass's costs with the same
 * communication charge as cost; a pass with an unmeasured shard leaves them all NaN */
static void pass_balances(as_planrec_full *q)
{
    q->pass_bal_lo = q->pass_bal_hi = NAN;
    q->pass_flip = 0;
    if (!q->ok || q->npass < 2 || !q->pass_cost || q->K < 1) return;
    double lo = INFINITY, hi = -INFINITY;
    for (int p = 0; p < q->npass; p++) {
        double mx = 0, mn = INFINITY;
        for (int64_t k = 0; k < q->K; k++) {
            const double c = q->pass_cost[(int64_t)p * q->K + k] + (q->comm_ms ? q->comm_ms[k] : 0);
            if (isnan(c)) return;
            if (c > mx) mx = c;
            if (c < mn) mn = c;
        }
        q->pass_max[p] = mx;
        q->pass_bal[p] = mx > 0 ? mn / mx : NAN;
        if (!isfinite(q->pass_bal[p])) return;
        if (q->pass_bal[p] < lo) lo = q->pass_bal[p];
        if (q->pass_bal[p] > hi) hi = q->pass_bal[p];
    }
    q->pass_bal_lo = lo;
    q->pass_bal_hi = hi;
}

void as_eval_compute(as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        q->max = q->min = q->mean = q->balance = q->speedup = q->over_floor = q->kmax = NAN;
        q->at_floor = -1;
        q->ok = q->feasible;
        q->nnoisy = -1;
        q->shaky = 0;
        double mx = 0, mn = INFINITY, s = 0;
        int64_t kmax = -1, kmin = -1;
        for (int64_t k = 0; k < q->K; k++) {
            if (isnan(q->cost[k])) { q->ok = 0; continue; }
            if (kmax < 0 || q->cost[k] > mx) { mx = q->cost[k]; kmax = k; }
            if (kmin < 0 || q->cost[k] < mn) { mn = q->cost[k]; kmin = k; }
            s += q->cost[k];
        }
        if (q->mem) {
            q->mem_max = 0;
            q->mem_min = UINT64_MAX;
            for (int64_t k = 0; k < q->K; k++) {
                if (q->mem[k] > q->mem_max) q->mem_max = q->mem[k];
                if (q->mem[k] < q->mem_min) q->mem_min = q->mem[k];
            }
        }
        if (q->noisy) {
            q->nnoisy = 0;
            for (int64_t k = 0; k < q->K; k++) q->nnoisy += q->noisy[k] != 0;
        }
        int known = 1;
        for (int64_t k = 0; k < q->K; k++) if (isnan(q->cost[k])) known = 0;
        if (!known || !q->K) continue;
        q->max = mx;
        q->kmax = mx;
        if (q->comm_ms) {
            q->kmax = 0;
            for (int64_t k = 0; k < q->K; k++)
                if (q->cost[k] - q->comm_ms[k] > q->kmax) q->kmax = q->cost[k] - q->comm_ms[k];
        }
        q->min = mn;
        q->mean = s / (double)q->K;
        if (q->ok && mx > 0) q->balance = mn / mx;
        if (q->ok && q->noisy) q->shaky = q->noisy[kmax] || q->noisy[kmin];
        if (q->ok && isfinite(q->floor) && q->floor > 0) q->over_floor = q->kmax / q->floor;
        pass_balances(q);
    }
    /* a plan whose order by balance against another plan of its run and task is not the
       same in every pass */
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = j + 1; i < n; i++) {
            as_planrec_full *x = &p[j], *y = &p[i];
            if (x->run != y->run || x->task != y->task || !isfinite(x->pass_bal_lo) || !isfinite(y->pass_bal_lo) ||
                x->npass != y->npass)
                continue;
            int pos = 0, neg = 0;
            for (int q = 0; q < x->npass; q++) {
                pos |= x->pass_bal[q] > y->pass_bal[q];
                neg |= x->pass_bal[q] < y->pass_bal[q];
            }
            if (pos && neg) x->pass_flip = y->pass_flip = 1;
        }
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        if (!q->ok) continue;
        const as_planrec_full *r = NULL;
        for (int64_t i = 0; i < n && !r; i++)
            if (p[i].run == q->run && p[i].task == q->task && !strcmp(p[i].alg, "random")) r = &p[i];
        if (r && r->ok && r->max > 0 && q->max > 0) q->speedup = r->max / q->max;
    }
}

enum { FIG_BALANCE, FIG_SPEEDUP, FIG_MAX, FIG_SPEEDUP_GEO, FIG_OVER_FLOOR };

static double figure(const as_planrec_full *q, int which)
{
    switch (which) {
    case FIG_BALANCE: return q->balance;
    case FIG_SPEEDUP: case FIG_SPEEDUP_GEO: return q->speedup;
    case FIG_OVER_FLOOR: return q->over_floor;
    default: return q->ok ? q->max : NAN;
    }
}

/* the values behind one figure's statistics for algorithm alg: per plan, or with over_runs
 * one per run (the arithmetic mean of its plans' values; FIG_SPEEDUP_GEO: the geometric
 * mean); *out is malloc'd, NaN where undefined; returns how many */
static int64_t values(const as_planrec_full *p, int64_t n, const char *alg, int which, int over_runs, double **out)
{
    double *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    int64_t m = 0;
    if (!over_runs) {
        for (int64_t j = 0; j < n; j++)
            if (!strcmp(p[j].alg, alg)) v[m++] = figure(&p[j], which);
    } else {
        int64_t maxrun = -1;
        for (int64_t j = 0; j < n; j++) if (p[j].run > maxrun) maxrun = p[j].run;
        for (int64_t r = 0; r <= maxrun; r++) {
            double s = 0;
            int64_t c = 0;
            for (int64_t j = 0; j < n; j++) {
                if (p[j].run != r || strcmp(p[j].alg, alg)) continue;
                double x = figure(&p[j], which);
                if (which == FIG_SPEEDUP_GEO) x = x > 0 ? log(x) : NAN;
                if (isfinite(x)) { s += x; c++; }
            }
            if (c) v[m++] = which == FIG_SPEEDUP_GEO ? exp(s / (double)c) : s / (double)c;
        }
    }
    *out = v;
    return m;
}

/* x's balance over the passes: when every usable plan of x carries the same npass >= 2
 * passes, the mean balance of each pass over the plans, its lowest and highest */
static void alg_passes(const as_planrec_full *p, int64_t n, as_eval_alg *x)
{
    double sum[AS_PLANREC_PASS_MAX] = { 0 };
    int P = 0;
    int64_t m = 0;
    x->npass = 0;
    x->bal_pass_lo = x->bal_pass_hi = NAN;
    x->pass_flips = 0;
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *q = &p[j];
        if (strcmp(q->alg, x->alg) || !q->ok || !isfinite(q->balance)) continue;
        if (!isfinite(q->pass_bal_lo) || (m && q->npass != P)) return;
        P = q->npass;
        for (int k = 0; k < P; k++) sum[k] += q->pass_bal[k];
        x->pass_flips += q->pass_flip;
        m++;
    }
    if (!m) return;
    x->npass = P;
    for (int k = 0; k < P; k++) {
        const double v = sum[k] / (double)m;
        if (!k || v < x->bal_pass_lo) x->bal_pass_lo = v;
        if (!k || v > x->bal_pass_hi) x->bal_pass_hi = v;
    }
}

void as_eval_summary(const as_planrec_full *p, int64_t n, int over_runs, as_eval_alg **out, int64_t *nout)
{
    as_eval_alg *a = as_calloc((size_t)(n ? n : 1), sizeof *a);
    int64_t na = 0;
    /* canonical order first, each algorithm followed by its refined plans (ALG+refine),
     * then the others by first appearance */
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < (pass ? 1 : 2 * AS_ALG_COUNT); c++) {
            for (int64_t j = 0; j < n; j++) {
                const char *name = p[j].alg;
                as_alg alg;
                int refined, known = !as_alg_parse_label(name, &alg, &refined);
                if (!pass && (!known || (int)alg != c / 2 || refined != c % 2)) continue;
                if (pass && known) continue;
                int64_t i;
                for (i = 0; i < na; i++) if (!strcmp(a[i].alg, name)) break;
                if (i == na) snprintf(a[na++].alg, sizeof a->alg, "%s", name);
            }
        }
    }
    for (int64_t i = 0; i < na; i++) {
        for (int64_t j = 0; j < n; j++) {
            if (strcmp(p[j].alg, a[i].alg)) continue;
            a[i].plans++;
            if (!p[j].feasible) a[i].infeasible++;
            else if (!p[j].ok) a[i].unmeasured++;
        }
        as_eval_alg *x = &a[i];
        double *v, dummy;
        int64_t m = values(p, n, x->alg, FIG_BALANCE, over_runs, &v);
        x->nbal = as_stats_ci(v, m, &x->bal_mean, &x->bal_lo, &x->bal_hi);
        as_stats_meanstd(v, m, &x->bal_mean, &x->bal_std);
        if (x->bal_lo < 0) x->bal_lo = 0;
        if (x->bal_hi > 1) x->bal_hi = 1;
        free(v);
        m = values(p, n, x->alg, FIG_SPEEDUP, over_runs, &v);
        x->nspd = as_stats_meanstd(v, m, &x->spd_mean, &x->spd_std);
        free(v);
        m = values(p, n, x->alg, FIG_SPEEDUP_GEO, over_runs, &v);
        as_stats_gmean_ci(v, m, &x->spd_gmean, &x->spd_lo, &x->spd_hi);
        free(v);
        m = values(p, n, x->alg, FIG_MAX, over_runs, &v);
        as_stats_meanstd(v, m, &x->max_mean, &dummy);
        free(v);
        m = values(p, n, x->alg, FIG_OVER_FLOOR, over_runs, &v);
        as_stats_meanstd(v, m, &x->floor_ratio_mean, &dummy);
        free(v);
        x->floor_margin = NAN;
        for (int64_t j = 0; j < n; j++) {
            if (strcmp(p[j].alg, x->alg) || p[j].at_floor < 0) continue;
            x->nfloor++;
            x->at_floor += p[j].at_floor == 1;
            if (isnan(x->floor_margin)) x->floor_margin = p[j].floor_margin;
        }
        as_eval_noise nz;
        as_eval_noise_of(p, n, x->alg, &nz);
        x->shards = nz.shards;
        x->noisy = nz.noisy;
        x->shaky = nz.shaky;
        for (int64_t j = 0; j < n; j++) {
            if (strcmp(p[j].alg, x->alg) || !p[j].has_mq) continue;
            x->mq_plans++;
            x->mq_weak += p[j].mq.judged && p[j].mq.weak;
            x->mq_unjudged += !p[j].mq.judged;
        }
        alg_passes(p, n, x);
    }
    *out = a;
    *nout = na;
}

/* ---- noise and ranking ------------------------------------------------------------------ */

/* shard k of plan q carries a noise flag that counts: measured and not empty */
static int flagged(const as_planrec_full *q, int64_t k)
{
    return q->noisy && isfinite(q->cost[k]) && q->cost[k] > 0;
}

void as_eval_noise_of(const as_planrec_full *p, int64_t n, const char *alg, as_eval_noise *out)
{
    memset(out, 0, sizeof *out);
    out->threshold = out->median_spread = NAN;
    int64_t cap = 0;
    for (int64_t j = 0; j < n; j++) if (p[j].spread) cap += p[j].K;
    double *sp = as_malloc((size_t)(cap ? cap : 1) * sizeof *sp);
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *q = &p[j];
        if (alg && strcmp(q->alg, alg)) continue;
        if (isnan(out->threshold) && isfinite(q->noise_threshold)) out->threshold = q->noise_threshold;
        if (q->ok) {
            out->plans++;
            out->shaky += q->shaky;
        }
        for (int64_t k = 0; k < q->K; k++) {
            if (flagged(q, k)) {
                out->shards++;
                out->noisy += q->noisy[k] != 0;
            }
            if (q->spread && isfinite(q->spread[k])) sp[out->spreads++] = q->spread[k];
        }
    }
    out->median_spread = as_stats_median_finite(sp, out->spreads);
    free(sp);
}

void as_eval_compare(const as_planrec_full *p, int64_t n, const char *a, const char *b, int over_runs, as_eval_cmp *c)
{
    memset(c, 0, sizeof *c);
    size_t sz = (size_t)(n ? n : 1);
    double *d = as_malloc(sz * sizeof *d), *r = as_malloc(sz * sizeof *r);
    int64_t *run = as_malloc(sz * sizeof *run), m = 0;
    double psum[AS_PLANREC_PASS_MAX] = { 0 };
    int P = 0;
    c->all_equal = 1;
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *x = &p[j], *y = NULL;
        if (strcmp(x->alg, a) || !x->ok || !isfinite(x->balance)) continue;
        for (int64_t i = 0; i < n && !y; i++)
            if (p[i].run == x->run && p[i].task == x->task && !strcmp(p[i].alg, b)) y = &p[i];
        if (!y || !y->ok || !isfinite(y->balance)) continue;
        d[m] = x->balance - y->balance;
        r[m] = x->max > 0 && y->max > 0 ? log(y->max / x->max) : NAN;
        if (d[m] != 0 || x->max != y->max) c->all_equal = 0;
        run[m++] = x->run;
        const as_planrec_full *both[2] = { x, y };
        for (int t = 0; t < 2; t++)
            for (int64_t k = 0; k < both[t]->K; k++)
                if (flagged(both[t], k)) {
                    c->shards++;
                    c->noisy += both[t]->noisy[k] != 0;
                }
        /* the passes: every pair must have them, all the same count */
        if (isfinite(x->pass_bal_lo) && isfinite(y->pass_bal_lo) && x->npass == y->npass &&
            (!c->pass_pairs || x->npass == P)) {
            P = x->npass;
            int pos = 0, neg = 0;
            for (int q = 0; q < P; q++) {
                const double dq = x->pass_bal[q] - y->pass_bal[q];
                psum[q] += dq;
                pos |= dq > 0;
                neg |= dq < 0;
            }
            c->flips += pos && neg;
            c->pass_pairs++;
        }
    }
    if (!m) c->all_equal = 0;
    c->pass_lo = c->pass_hi = NAN;
    if (m && c->pass_pairs == m && P >= 2) {
        c->npass = P;
        for (int q = 0; q < P; q++) {
            const double v = psum[q] / (double)m;
            if (!q || v < c->pass_lo) c->pass_lo = v;
            if (!q || v > c->pass_hi) c->pass_hi = v;
        }
    }
    if (over_runs && m) {
        /* one value per run: the mean difference and the mean log ratio of its pairs */
        int64_t maxrun = -1, k = 0;
        for (int64_t i = 0; i < m; i++) if (run[i] > maxrun) maxrun = run[i];
        for (int64_t q = 0; q <= maxrun; q++) {
            double sd = 0, sr = 0;
            int64_t cd = 0, cr = 0;
            for (int64_t i = 0; i < m; i++) {
                if (run[i] != q) continue;
                sd += d[i];
                cd++;
                if (isfinite(r[i])) { sr += r[i]; cr++; }
            }
            if (!cd) continue;
            d[k] = sd / (double)cd;
            r[k++] = cr ? sr / (double)cr : NAN;
        }
        m = k;
    }
    c->n = as_stats_ci(d, m, &c->bal_diff, &c->bal_lo, &c->bal_hi);
    if (c->bal_lo < -1) c->bal_lo = -1;   /* a balance difference lies in [-1, 1] */
    if (c->bal_hi > 1) c->bal_hi = 1;
    double lm, llo, lhi;
    if (as_stats_ci(r, m, &lm, &llo, &lhi)) {
        c->ratio = exp(lm);
        c->ratio_lo = exp(llo);
        c->ratio_hi = exp(lhi);
    } else c->ratio = c->ratio_lo = c->ratio_hi = NAN;
    if (!m) c->bal_diff = c->bal_lo = c->bal_hi = NAN;
    free(d);
    free(r);
    free(run);
}

/* algorithm x ranks above y (y < 0: none yet): higher mean balance; equal: higher
 * geometric-mean speedup */
static int better(const as_eval_alg *a, int64_t x, int64_t y)
{
    if (y < 0) return 1;
    if (a[x].bal_mean != a[y].bal_mean) return a[x].bal_mean > a[y].bal_mean;
    if (isfinite(a[x].spd_gmean) && !isfinite(a[y].spd_gmean)) return 1;
    return a[x].spd_gmean > a[y].spd_gmean;
}

int64_t as_eval_order(const as_eval_alg *a, int64_t na, int64_t *order)
{
    int64_t m = 0;
    for (int64_t i = 0; i < na; i++) {
        if (!isfinite(a[i].bal_mean)) continue;
        int64_t j = m++;
        for (; j > 0 && better(a, i, order[j - 1]); j--) order[j] = order[j - 1];   /* stable: equals keep summary order */
        order[j] = i;
    }
    return m;
}

void as_eval_rank_pair(const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t x, int64_t y, int over_runs,
                       as_eval_rank *r)
{
    memset(r, 0, sizeof *r);
    r->winner = x;
    r->runner = y;
    as_eval_compare(p, n, a[x].alg, a[y].alg, over_runs, &r->cmp);
    r->too_noisy = r->cmp.shards > 0 && (double)r->cmp.noisy > AS_EVAL_NOISY_MAX * (double)r->cmp.shards;
    if (r->cmp.all_equal) r->kind = AS_RANK_TIE;
    else if (r->too_noisy) r->kind = AS_RANK_NOISY;
    else if (r->cmp.n < 2 || !isfinite(r->cmp.bal_lo)) r->kind = AS_RANK_FEW;
    else if (r->cmp.bal_lo <= 0) r->kind = AS_RANK_NOISY;
    else if (r->cmp.npass >= 2 && !(r->cmp.pass_lo > 0)) {
        r->kind = AS_RANK_NOISY;     /* above 0 over the tasks, but not in every pass */
        r->pass_flip = 1;
    } else r->kind = AS_RANK_RESOLVED;
}

void as_eval_rank_algs(const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na, int over_runs,
                       as_eval_rank *r)
{
    int64_t *order = as_malloc((size_t)(na ? na : 1) * sizeof *order);
    int64_t m = as_eval_order(a, na, order);
    if (m >= 2) as_eval_rank_pair(p, n, a, order[0], order[1], over_runs, r);
    else {
        memset(r, 0, sizeof *r);
        r->winner = m ? order[0] : -1;
        r->runner = -1;
        r->kind = m ? AS_RANK_SINGLE : AS_RANK_NONE;
    }
    free(order);
}

/* ---- the cost model's quality ----------------------------------------------------------- */

/* a metrics map into m (nil or absent: all unknown); 0 ok, -1 not a metrics map */
static int read_metrics(const msgpack_object *o, as_eval_metrics *m)
{
    static const char *const key[4] = { "mae", "mse", "mape", "r2" };
    double *dst[4] = { &m->mae, &m->mse, &m->mape, &m->r2 };
    m->n = -1;
    for (int i = 0; i < 4; i++) *dst[i] = NAN;
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_MAP) return -1;
    const msgpack_object *nn = as_obj_get(o, "n");
    if (nn && nn->type != MSGPACK_OBJECT_NIL && (as_obj_i64(o, "n", &m->n) || m->n < 0)) return -1;
    for (int i = 0; i < 4; i++) {
        const msgpack_object *v = as_obj_get(o, key[i]);
        if (v && as_obj_num(v, dst[i]) < 0) return -1;
    }
    return 0;
}

int as_eval_quality_read(const msgpack_object *rec, as_eval_quality *q, char *err, size_t errlen)
{
    as_eval_quality z;
    memset(&z, 0, sizeof z);
    z.test_shards = -1;
    z.coverage = NAN;
    read_metrics(NULL, &z.model);
    read_metrics(NULL, &z.linear);
    read_metrics(NULL, &z.sum_single);
    const msgpack_object *kind = as_obj_get(rec, "kind");
    if (kind && as_obj_streq(kind, "model")) {
        const msgpack_object *h = as_obj_get(rec, "heldout");
        if (!h) return 1;
        snprintf(z.source, sizeof z.source, "model");
        snprintf(z.output, sizeof z.output, "linear");   /* absent: the old unconstrained output */
        as_obj_str(rec, "output", z.output, sizeof z.output);
        if (h->type == MSGPACK_OBJECT_NIL) {
            as_obj_str(rec, "split", z.split, sizeof z.split);
            z.have = 2;
            *q = z;
            return 0;
        }
        if (h->type != MSGPACK_OBJECT_MAP) { snprintf(err, errlen, "model record: 'heldout' is not a map or nil"); return -1; }
        as_obj_str(h, "split", z.split, sizeof z.split);
        if (as_obj_get(h, "test_shards") && (as_obj_i64(h, "test_shards", &z.test_shards) || z.test_shards < 0)) {
            snprintf(err, errlen, "model record: heldout 'test_shards' is not an integer >= 0");
            return -1;
        }
        const msgpack_object *ss = as_obj_get(h, "sum_single");
        if (read_metrics(as_obj_get(h, "model"), &z.model) || read_metrics(as_obj_get(h, "linear"), &z.linear) ||
            read_metrics(ss, &z.sum_single)) {
            snprintf(err, errlen, "model record: heldout 'model', 'linear' and 'sum_single' must be metrics maps or nil");
            return -1;
        }
        if (ss && ss->type == MSGPACK_OBJECT_MAP && as_obj_get(ss, "coverage")) as_obj_num(as_obj_get(ss, "coverage"), &z.coverage);
    } else {
        const msgpack_object *mo = as_obj_get(rec, "model"), *li = as_obj_get(rec, "linear"), *ss = as_obj_get(rec, "sum_single");
        if (!mo) return 1;
        snprintf(z.source, sizeof z.source, "costfit-report");
        as_obj_str(rec, "split", z.split, sizeof z.split);
        if (as_obj_get(rec, "test_shards")) as_obj_i64(rec, "test_shards", &z.test_shards);
        if (mo->type != MSGPACK_OBJECT_MAP || (li && li->type != MSGPACK_OBJECT_MAP) || (ss && ss->type != MSGPACK_OBJECT_MAP) ||
            read_metrics(as_obj_get(mo, "test"), &z.model) || read_metrics(li ? as_obj_get(li, "test") : NULL, &z.linear) ||
            read_metrics(ss ? as_obj_get(ss, "test") : NULL, &z.sum_single)) {
            snprintf(err, errlen, "costfit-report: 'model', 'linear' and 'sum_single' must be maps whose 'test' is a metrics map");
            return -1;
        }
        if (ss && as_obj_get(ss, "coverage")) as_obj_num(as_obj_get(ss, "coverage"), &z.coverage);
    }
    char why[96];   /* printed in the tables' heading: the names' rule (msgobj.h) */
    const char *bad = z.split[0] && as_name_bad(z.split, strlen(z.split), why, sizeof why) ? "split"
                    : z.output[0] && as_name_bad(z.output, strlen(z.output), why, sizeof why) ? "output" : NULL;
    if (bad) {
        snprintf(err, errlen, "%s: '%s' %s", z.source, bad, why);
        return -1;
    }
    if (z.test_shards < 0 && z.model.n >= 0) z.test_shards = z.model.n;
    z.have = z.test_shards == 0 ? 2 : 1;
    *q = z;
    return 0;
}

int as_eval_quality_worse(const as_eval_quality *q)
{
    if (!q || q->have != 1) return -1;
    int known = 0, worse = 0;
    if (isfinite(q->model.r2) && isfinite(q->linear.r2)) { known = 1; worse |= q->model.r2 < q->linear.r2; }
    if (isfinite(q->model.mae) && isfinite(q->linear.mae)) { known = 1; worse |= q->model.mae > q->linear.mae; }
    return known ? worse : -1;
}

static void fmt_num(char *buf, size_t len, const char *cfmt, double v)
{
    if (isfinite(v)) snprintf(buf, len, cfmt, v);
    else snprintf(buf, len, "n/a");
}

/* the quality in words (no line end) */
static void quality_words(FILE *f, const as_eval_quality *q)
{
    if (!q || !q->have) { fprintf(f, "its held-out quality is not in the input (no `model` record with `heldout`, no `costfit-report`)"); return; }
    if (q->have == 2) { fprintf(f, "trained without a held-out split (split %s): its quality is unknown", q->split[0] ? q->split : "none"); return; }
    char r2[32], mape[32], mae[32], lr2[32], lmape[32], lmae[32], n[32];
    fmt_num(r2, sizeof r2, "%.3f", q->model.r2);
    fmt_num(mape, sizeof mape, "%.1f %%", q->model.mape);
    fmt_num(mae, sizeof mae, "%.3g ms", q->model.mae);
    fmt_num(lr2, sizeof lr2, "%.3f", q->linear.r2);
    fmt_num(lmape, sizeof lmape, "%.1f %%", q->linear.mape);
    fmt_num(lmae, sizeof lmae, "%.3g ms", q->linear.mae);
    if (q->test_shards >= 0) snprintf(n, sizeof n, "%" PRId64, q->test_shards);
    else snprintf(n, sizeof n, "?");
    fprintf(f, "held-out R² %s, MAPE %s, MAE %s on %s shards (split %s%s%s); linear baseline R² %s, MAPE %s, MAE %s",
            r2, mape, mae, n, q->split[0] ? q->split : "?", q->output[0] ? ", output " : "", q->output, lr2, lmape, lmae);
}

static const char WORSE_WORDS[] = "the cost model predicts held-out shards worse than a straight line; its estimates, "
                                  "and the plans built on them, should not be trusted";
static const char NEG_R2_WORDS[] = "the cost model's held-out R² is below 0: it predicts worse than the mean cost would";

void as_eval_print_quality(FILE *f, as_eval_format fmt, const as_eval_quality *q)
{
    if (fmt == AS_EVAL_CSV || !q || !q->have) return;
    fprintf(f, fmt == AS_EVAL_MARKDOWN ? "**Cost model:** " : "# cost model: ");
    quality_words(f, q);
    fputc('\n', f);
    const char *warn = as_eval_quality_worse(q) == 1 ? WORSE_WORDS
                     : q->have == 1 && isfinite(q->model.r2) && q->model.r2 < 0 ? NEG_R2_WORDS : NULL;
    if (warn) fprintf(f, fmt == AS_EVAL_MARKDOWN ? "\n**Warning:** %s.\n" : "# WARNING: %s\n", warn);
    fputc('\n', f);
}

/* ---- tables ---------------------------------------------------------------------------- */

/* a text cell: right-aligned in width columns (text), "| s |" (markdown), ",s" (CSV);
 * utf8 extra: bytes beyond one per column (± is two bytes, one column) */
/* the text tables' alg column: 20 characters, wider for a longer name (ALG+refine) */
static int alg_width(const as_planrec_full *p, int64_t n)
{
    int w = 20;
    for (int64_t j = 0; j < n; j++) if ((int)strlen(p[j].alg) > w) w = (int)strlen(p[j].alg);
    return w;
}

static void cell(FILE *f, as_eval_format fmt, int width, const char *s, int utf8_extra)
{
    if (fmt == AS_EVAL_TEXT) fprintf(f, " %*s", width + utf8_extra, s);
    else if (fmt == AS_EVAL_MARKDOWN) fprintf(f, " %s |", s);
    else fprintf(f, ",%s", s);
}

static void num(FILE *f, as_eval_format fmt, int width, const char *cfmt, double v)
{
    char buf[64];
    if (isfinite(v)) snprintf(buf, sizeof buf, cfmt, v);
    else snprintf(buf, sizeof buf, fmt == AS_EVAL_CSV ? "" : "n/a");
    cell(f, fmt, width, buf, 0);
}

static void pm(FILE *f, as_eval_format fmt, int width, const char *cfmt, double m, double s, double scale)
{
    char buf[96], a[40], b[40];
    if (!isfinite(m)) snprintf(buf, sizeof buf, "n/a");
    else {
        snprintf(a, sizeof a, cfmt, m * scale);
        snprintf(b, sizeof b, cfmt, s * scale);
        snprintf(buf, sizeof buf, "%s ± %s", a, b);
    }
    cell(f, fmt, width, buf, isfinite(m));
}

/* a speedup or ratio: three decimals, or three significant digits when it is large or
 * tiny (an interval over two tasks can span orders of magnitude) */
static void fmt_x(char *buf, size_t len, double v)
{
    if (!isfinite(v)) snprintf(buf, len, "n/a");
    else if (v >= 1000 || (v > 0 && v < 0.001)) snprintf(buf, len, "%.3g", v);
    else snprintf(buf, len, "%.3f", v);
}

/* an interval "[lo, hi]" (n/a when unknown); cfmt NULL: fmt_x */
static void interval(FILE *f, as_eval_format fmt, int width, const char *cfmt, double lo, double hi, double scale)
{
    char buf[96], a[40], b[40];
    if (!isfinite(lo) || !isfinite(hi)) snprintf(buf, sizeof buf, "n/a");
    else {
        if (cfmt) {
            snprintf(a, sizeof a, cfmt, lo * scale);
            snprintf(b, sizeof b, cfmt, hi * scale);
        } else {
            fmt_x(a, sizeof a, lo * scale);
            fmt_x(b, sizeof b, hi * scale);
        }
        snprintf(buf, sizeof buf, "[%s, %s]", a, b);
    }
    cell(f, fmt, width, buf, 0);
}

/* some plan has passes (cost_pass_ms) / a between-pass spread (cost_pass_spread) */
static int any_passes(const as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) if (p[j].npass >= 2) return 1;
    return 0;
}

static int any_pass_spread(const as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) if (p[j].pass_spread) return 1;
    return 0;
}

/* whether shard k of q is the slowest in some of its passes but not in all (the shard that
 * sets the plan's balance changes between passes); 0 without passes */
static int slowest_flips(const as_planrec_full *q, int64_t k)
{
    if (q->npass < 2 || !q->pass_cost) return 0;
    int some = 0, all = 1;
    for (int p = 0; p < q->npass; p++) {
        const double *c = q->pass_cost + (int64_t)p * q->K;
        int64_t arg = -1;
        for (int64_t j = 0; j < q->K; j++)
            if (isfinite(c[j]) && (arg < 0 || c[j] > c[arg])) arg = j;
        some |= arg == k;
        all &= arg == k;
    }
    return some && !all;
}

/* a plan's balance over its passes: "80.1-82.3%" and "↕" when its order against another
 * plan of its task flips between passes; "n/a" */
static int pass_cell(char *b, size_t len, const as_planrec_full *q)
{
    if (!isfinite(q->pass_bal_lo)) { snprintf(b, len, "n/a"); return 0; }
    snprintf(b, len, "%.1f-%.1f%%%s", 100 * q->pass_bal_lo, 100 * q->pass_bal_hi, q->pass_flip ? " ↕" : "");
    return q->pass_flip ? 2 : 0;
}

static int any_noise(const as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) if (p[j].noisy || p[j].spread) return 1;
    return 0;
}

/* some plan has a known floor */
static int any_floor(const as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) if (isfinite(p[j].floor)) return 1;
    return 0;
}

/* what the floor columns mean, or that the floor is unknown (one line) */
static void floor_legend(FILE *f, const as_planrec_full *p, int64_t n, const char *label)
{
    int estimated = !strcmp(label, "estimated");
    if (!any_floor(p, n)) {
        if (estimated) fprintf(f, "floor: unknown (estimated costs without the cost model that made them: give it with --model "
                                  "to price each table alone)\n");
        else fprintf(f, "floor: unknown (no single-table cost for the tasks' tables: give the cost dataset of as-bench "
                        "--singles with --singles FILE or in the input)\n");
        return;
    }
    int64_t unknown = 0;
    for (int64_t j = 0; j < n; j++) unknown += !isfinite(p[j].floor);
    fprintf(f, "floor: the costliest of the task's tables alone (%s), no table-wise plan can go below it; max/floor: "
               "the slowest shard over it%s%s\n",
            estimated ? "the cost model's prediction for each table alone" : "the median of each table's single-table cost records",
            estimated ? "" : " (below 1: measurement noise)", unknown ? "; n/a: a table without a single cost" : "");
}

static const char SHAKY_LEGEND[] = "its slowest or fastest shard stayed noisy after as-bench's re-measuring: its balance "
                                   "and speedup are not trustworthy";

/* the plans table as CSV: a row per plan, every figure at full precision */
static void print_plans_csv(FILE *f, const as_planrec_full *p, int64_t n, const char *label)
{
    const as_eval_format fmt = AS_EVAL_CSV;
    const int passes = any_passes(p, n);
    fprintf(f, "run,task,split,alg,shards,tables,cost_kind,max_ms,min_ms,mean_ms,balance,speedup,mem_max_bytes,mem_min_bytes,feasible,"
               "noisy_shards,rests_on_noisy,floor_ms,max_over_floor,at_floor%s\n",
            passes ? ",passes,balance_pass_lo,balance_pass_hi,pass_flip,max_ms_passes" : "");
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *q = &p[j];
        fprintf(f, "%" PRId64 ",%" PRId64 ",", q->run, q->task);
        as_eval_csv_field(f, q->split);
        fputc(',', f);
        as_eval_csv_field(f, q->alg);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%s", q->K, q->T, label);
        num(f, fmt, 0, "%.9g", q->max);
        num(f, fmt, 0, "%.9g", q->min);
        num(f, fmt, 0, "%.9g", q->mean);
        num(f, fmt, 0, "%.9g", q->balance);
        num(f, fmt, 0, "%.9g", q->speedup);
        if (q->mem) fprintf(f, ",%" PRIu64 ",%" PRIu64, q->mem_max, q->mem_min);
        else fprintf(f, ",,");
        fprintf(f, ",%s", q->feasible ? "true" : "false");
        if (q->nnoisy >= 0) fprintf(f, ",%" PRId64 ",%s", q->nnoisy, q->shaky ? "true" : "false");
        else fprintf(f, ",,");
        num(f, fmt, 0, "%.9g", q->floor);
        num(f, fmt, 0, "%.9g", q->over_floor);
        fprintf(f, ",%s", q->at_floor < 0 ? "" : q->at_floor ? "true" : "false");
        if (passes) {
            fprintf(f, ",%d", q->npass);
            num(f, fmt, 0, "%.9g", q->pass_bal_lo);
            num(f, fmt, 0, "%.9g", q->pass_bal_hi);
            fprintf(f, ",%s", isfinite(q->pass_bal_lo) ? (q->pass_flip ? "true" : "false") : "");
            fputc(',', f);   /* each pass's slowest shard, ';'-separated (empty: no passes) */
            for (int k = 0; isfinite(q->pass_bal_lo) && k < q->npass; k++)
                fprintf(f, "%s%.9g", k ? ";" : "", q->pass_max[k]);
        }
        fputc('\n', f);
    }
}

/* what the text and markdown plans tables show: which columns, the alg column's width */
typedef struct {
    int noise, fl, aw, passes;
} plans_cols;

/* plan q's row of the text or markdown plans table */
static void print_plan_row(FILE *f, as_eval_format fmt, const as_planrec_full *q, const plans_cols *pc)
{
    const double MiB = 1024.0 * 1024.0;
    const int noise = pc->noise, fl = pc->fl, aw = pc->aw, passes = pc->passes;
    if (fmt == AS_EVAL_TEXT) fprintf(f, "%4" PRId64 " %5" PRId64 " %-*s %5" PRId64, q->run, q->task, aw, q->alg, q->K);
    else {
        fprintf(f, "| %" PRId64 " | %" PRId64 " | ", q->run, q->task);
        as_eval_md_cell(f, q->alg);
        fprintf(f, " | %" PRId64 " |", q->K);
    }
    num(f, fmt, 10, "%.4f", q->max);
    num(f, fmt, 10, "%.4f", q->min);
    num(f, fmt, 10, "%.4f", q->mean);
    char b[40];
    if (isfinite(q->balance)) snprintf(b, sizeof b, "%.1f%%%s", q->balance * 100, q->shaky ? "*" : "");
    else snprintf(b, sizeof b, "n/a");
    cell(f, fmt, 7, b, 0);
    if (passes) {
        char pb[48];
        const int extra = pass_cell(pb, sizeof pb, q);
        cell(f, fmt, 19, pb, extra);
    }
    num(f, fmt, 8, "%.3f", q->speedup);
    if (fl) {
        num(f, fmt, 10, "%.4f", q->floor);
        num(f, fmt, 9, "%.3f", q->over_floor);
    }
    num(f, fmt, 12, "%.3f", q->mem ? q->mem_max / MiB : NAN);
    num(f, fmt, 12, "%.3f", q->mem ? q->mem_min / MiB : NAN);
    char nz[32] = "";
    if (noise) {
        if (q->nnoisy >= 0) snprintf(nz, sizeof nz, "%" PRId64, q->nnoisy);
        else snprintf(nz, sizeof nz, "n/a");
    }
    if (fmt == AS_EVAL_TEXT) {
        if (noise) fprintf(f, "  %-8s %5s\n", q->feasible ? "yes" : "NO", nz);
        else fprintf(f, "  %s\n", q->feasible ? "yes" : "NO");
    } else {
        fprintf(f, " %s |", q->feasible ? "yes" : "no");
        if (noise) fprintf(f, " %s |", nz);
        fputc('\n', f);
    }
}

void as_eval_print_plans(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label)
{
    if (fmt == AS_EVAL_CSV) {
        print_plans_csv(f, p, n, label);
        return;
    }
    int noise = any_noise(p, n), shaky = 0, fl = any_floor(p, n), aw = alg_width(p, n), passes = any_passes(p, n), flips = 0;
    if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Plans (costs %s, ms):\n", label);
        fprintf(f, "%4s %5s %-*s %5s %10s %10s %10s %8s%s %8s", "run", "task", aw, "alg", "K", "max", "min", "mean", "balance",
                passes ? "    balance per pass" : "", "speedup");
        if (fl) fprintf(f, " %10s %9s", "floor", "max/floor");
        fprintf(f, " %12s %12s  %-8s%s\n", "mem max MiB", "mem min MiB", "feasible", noise ? " noisy" : "");
    } else {
        fprintf(f, "**Plans** (costs %s, ms)\n\n", label);
        fprintf(f, "| run | task | alg | K | max | min | mean | balance (%%) |%s speedup |%s mem max (MiB) | mem min (MiB) | feasible |%s\n",
                passes ? " balance per pass (%) |" : "", fl ? " floor | max/floor |" : "", noise ? " noisy shards |" : "");
        fprintf(f, "|---:|---:|---|---:|---:|---:|---:|---:|%s---:|%s---:|---:|---|%s\n", passes ? "---:|" : "",
                fl ? "---:|---:|" : "", noise ? "---:|" : "");
    }
    const plans_cols pc = { noise, fl, aw, passes };
    for (int64_t j = 0; j < n; j++) {
        print_plan_row(f, fmt, &p[j], &pc);
        shaky |= p[j].shaky;
        flips |= passes && p[j].pass_flip;
    }
    if (shaky) fprintf(f, "%s* %s\n", fmt == AS_EVAL_MARKDOWN ? "\n\\" : "", SHAKY_LEGEND);
    if (passes)
        fprintf(f, "%sbalance per pass: the lowest and highest of the plan's balance in each pass (as-bench --passes: "
                   "measured apart, in time and in fresh memory)%s\n", fmt == AS_EVAL_MARKDOWN ? "\n\\" : "",
                flips ? "; ↕: its order against another plan of the same task flips between passes (the "
                        "measurement does not rank them)" : "");
    if (fmt == AS_EVAL_MARKDOWN) fputc('\n', f);
    floor_legend(f, p, n, label);
    fputc('\n', f);
}

void as_eval_print_shards(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label)
{
    const double MiB = 1024.0 * 1024.0;
    int noise = any_noise(p, n), aw = alg_width(p, n), ps = any_pass_spread(p, n), flips = 0;
    if (fmt == AS_EVAL_CSV) fprintf(f, "run,task,alg,shard,tables,cost_kind,cost_ms,mem_bytes,spread,noisy%s\n",
                                    ps ? ",pass_spread,slowest_flips" : "");
    else if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Shards (costs %s):\n", label);
        fprintf(f, "%4s %5s %-*s %5s %6s %12s %12s%s%s\n", "run", "task", aw, "alg", "shard", "tables", "cost ms", "mem MiB",
                noise ? "   spread %  noisy" : "", ps ? "  pass spread %" : "");
    } else {
        fprintf(f, "**Shards** (costs %s)\n\n| run | task | alg | shard | tables | cost (ms) | mem (MiB) |%s%s\n", label,
                noise ? " spread (%) | noisy |" : "", ps ? " pass spread (%) |" : "");
        fprintf(f, "|---:|---:|---|---:|---:|---:|---:|%s%s\n", noise ? "---:|---|" : "", ps ? "---:|" : "");
    }
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *q = &p[j];
        int64_t *start = as_malloc((size_t)(q->K + 1) * sizeof *start);
        as_plan_group(start, NULL, q->assign, q->T, q->K);
        for (int64_t k = 0; k < q->K; k++) {
            const int64_t c = start[k + 1] - start[k] + q->ndp;   /* its data-parallel tables too */
            double sp = q->spread ? q->spread[k] : NAN;
            const char *nz = q->noisy ? (q->noisy[k] ? "yes" : "") : "n/a";
            if (fmt == AS_EVAL_CSV) {
                fprintf(f, "%" PRId64 ",%" PRId64 ",", q->run, q->task);
                as_eval_csv_field(f, q->alg);
                fprintf(f, ",%" PRId64 ",%" PRId64 ",%s", k, c, label);
                num(f, fmt, 0, "%.9g", q->cost[k]);
                if (q->mem) fprintf(f, ",%" PRIu64, q->mem[k]);
                else fprintf(f, ",");
                num(f, fmt, 0, "%.9g", sp);
                fprintf(f, ",%s", q->noisy ? (q->noisy[k] ? "true" : "false") : "");
                if (ps) {
                    num(f, fmt, 0, "%.9g", q->pass_spread ? q->pass_spread[k] : NAN);
                    fprintf(f, ",%s", q->npass >= 2 ? (slowest_flips(q, k) ? "true" : "false") : "");
                }
                fputc('\n', f);
                continue;
            }
            if (fmt == AS_EVAL_TEXT) fprintf(f, "%4" PRId64 " %5" PRId64 " %-*s %5" PRId64 " %6" PRId64, q->run, q->task, aw, q->alg, k, c);
            else {
                fprintf(f, "| %" PRId64 " | %" PRId64 " | ", q->run, q->task);
                as_eval_md_cell(f, q->alg);
                fprintf(f, " | %" PRId64 " | %" PRId64 " |", k, c);
            }
            num(f, fmt, 12, "%.4f", q->cost[k]);
            num(f, fmt, 12, "%.3f", q->mem ? q->mem[k] / MiB : NAN);
            if (noise) {
                num(f, fmt, 10, "%.1f", sp * 100);
                cell(f, fmt, 6, nz, 0);
            }
            if (ps) {
                char b[40];
                const double v = q->pass_spread ? q->pass_spread[k] : NAN;
                const int fl = slowest_flips(q, k);
                if (isfinite(v)) snprintf(b, sizeof b, "%.1f%s", 100 * v, fl ? " ↕" : "");
                else snprintf(b, sizeof b, "n/a%s", fl ? " ↕" : "");
                flips |= fl;
                cell(f, fmt, 15, b, fl ? 2 : 0);
            }
            fputc('\n', f);
        }
        free(start);
    }
    if (flips && fmt != AS_EVAL_CSV)
        fprintf(f, "%s↕: the slowest shard of its plan in some passes but not in all (the shard that sets the plan's "
                   "balance changes between passes)\n", fmt == AS_EVAL_MARKDOWN ? "\n" : "");
    fputc('\n', f);
}

/* the summary's CSV: a header line, a row per algorithm */
static void summary_csv(FILE *f, as_eval_format fmt, const as_eval_alg *a, int64_t n, const char *label, const char *over)
{
    int passes = 0;
    for (int64_t i = 0; i < n; i++) passes |= a[i].npass >= 2;
    fprintf(f, "alg,cost_kind,plans,infeasible,unmeasured,over,n_balance,balance_mean,balance_std,n_speedup,speedup_mean,speedup_std,max_ms_mean,"
               "balance_lo,balance_hi,speedup_geomean,speedup_lo,speedup_hi,shards,noisy_shards,noisy_plans,n_floor,max_over_floor_mean,"
               "at_floor,model_plans,model_weak,model_unjudged%s\n", passes ? ",passes,balance_pass_lo,balance_pass_hi,pass_flips" : "");
    for (int64_t i = 0; i < n; i++) {
        as_eval_csv_field(f, a[i].alg);
        fprintf(f, ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64, label, a[i].plans, a[i].infeasible, a[i].unmeasured,
                over, a[i].nbal);
        num(f, fmt, 0, "%.9g", a[i].bal_mean);
        num(f, fmt, 0, "%.9g", a[i].bal_std);
        fprintf(f, ",%" PRId64, a[i].nspd);
        num(f, fmt, 0, "%.9g", a[i].spd_mean);
        num(f, fmt, 0, "%.9g", a[i].spd_std);
        num(f, fmt, 0, "%.9g", a[i].max_mean);
        num(f, fmt, 0, "%.9g", a[i].bal_lo);
        num(f, fmt, 0, "%.9g", a[i].bal_hi);
        num(f, fmt, 0, "%.9g", a[i].spd_gmean);
        num(f, fmt, 0, "%.9g", a[i].spd_lo);
        num(f, fmt, 0, "%.9g", a[i].spd_hi);
        if (a[i].shards) fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64, a[i].shards, a[i].noisy, a[i].shaky);
        else fprintf(f, ",,,");
        fprintf(f, ",%" PRId64, a[i].nfloor);
        num(f, fmt, 0, "%.9g", a[i].floor_ratio_mean);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, a[i].at_floor, a[i].mq_plans, a[i].mq_weak,
                a[i].mq_unjudged);
        if (passes) {
            fprintf(f, ",%d", a[i].npass);
            num(f, fmt, 0, "%.9g", a[i].bal_pass_lo);
            num(f, fmt, 0, "%.9g", a[i].bal_pass_hi);
            fprintf(f, ",%" PRId64, a[i].pass_flips);
        }
        fputc('\n', f);
    }
}

/* the cost model column of an algorithm: the quality as-plan's gate gave the model that
   placed its plans ("" none placed by one; "weak", "weak 2/5", "unjudged", "ok") */
static void model_cell(char *b, size_t len, const as_eval_alg *a)
{
    const int64_t k = a->mq_weak ? a->mq_weak : a->mq_unjudged;
    const char *w = a->mq_weak ? "weak" : a->mq_unjudged ? "unjudged" : "ok";
    if (!a->mq_plans) snprintf(b, len, "%s", "");
    else if (!k || k == a->mq_plans) snprintf(b, len, "%s", w);
    else snprintf(b, len, "%s %" PRId64 "/%" PRId64, w, k, a->mq_plans);
}

/* one algorithm's row of the summary table (text, markdown); fl, noise, mq, passes: the
 * floor, the noise, the cost model and the between-pass columns */
static void summary_row(FILE *f, as_eval_format fmt, const as_eval_alg *a, int aw, int fl, int noise, int mq, int passes)
{
    if (fmt == AS_EVAL_TEXT) fprintf(f, "%-*s %6" PRId64 " %10" PRId64, aw, a->alg, a->plans, a->infeasible);
    else {
        fputs("| ", f);
        as_eval_md_cell(f, a->alg);
        fprintf(f, " | %" PRId64 " | %" PRId64 " |", a->plans, a->infeasible);
    }
    pm(f, fmt, 16, "%.1f", a->bal_mean, a->bal_std, 100);
    interval(f, fmt, 14, "%.1f", a->bal_lo, a->bal_hi, 100);
    if (passes) interval(f, fmt, 14, "%.1f", a->bal_pass_lo, a->bal_pass_hi, 100);
    num(f, fmt, 9, "%.3f", a->spd_gmean);
    interval(f, fmt, 16, NULL, a->spd_lo, a->spd_hi, 1);
    num(f, fmt, 12, "%.4f", a->max_mean);
    if (fl) {
        char b[48];
        num(f, fmt, 10, "%.3f", a->floor_ratio_mean);
        if (a->nfloor) snprintf(b, sizeof b, "%" PRId64 "/%" PRId64, a->at_floor, a->nfloor);
        else snprintf(b, sizeof b, "n/a");
        cell(f, fmt, 9, b, 0);
    }
    if (noise) {
        char b[48];
        if (a->shards) snprintf(b, sizeof b, "%" PRId64 "/%" PRId64, a->noisy, a->shards);
        else snprintf(b, sizeof b, "n/a");
        cell(f, fmt, 13, b, 0);
    }
    if (mq) {
        char b[48];
        model_cell(b, sizeof b, a);
        cell(f, fmt, 12, b, 0);
    }
    fputc('\n', f);
}

void as_eval_print_summary(FILE *f, as_eval_format fmt, const as_eval_alg *a, int64_t n, const char *label,
                           int over_runs)
{
    const char *over = over_runs ? "runs" : "plans";
    if (fmt == AS_EVAL_CSV) {
        summary_csv(f, fmt, a, n, label, over);
        return;
    }
    int noise = 0, fl = 0, mq = 0, aw = 20, passes = 0;
    double margin = NAN;
    for (int64_t i = 0; i < n; i++) {
        passes |= a[i].npass >= 2;
        noise |= a[i].shards > 0;
        mq |= a[i].mq_plans > 0;
        fl |= a[i].nfloor > 0;
        if (isnan(margin)) margin = a[i].floor_margin;
        if ((int)strlen(a[i].alg) > aw) aw = (int)strlen(a[i].alg);
    }
    if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Summary per algorithm (costs %s; over %s):\n", label, over);
        fprintf(f, "%-*s %6s %10s %16s %14s%s %9s %16s %12s%s%s%s\n", aw, "alg", "plans", "infeasible", "balance %", "balance 95% CI",
                passes ? "   passes lo-hi" : "", "speedup", "speedup 95% CI", "max ms", fl ? "  max/floor  at floor" : "",
                noise ? "  noisy shards" : "", mq ? "   cost model" : "");
    } else {
        fprintf(f, "**Summary per algorithm** (costs %s; over %s)\n\n", label, over);
        fprintf(f, "| alg | plans | infeasible | balance (%%) | balance 95 %% CI |%s speedup (geomean) | speedup 95 %% CI | max (ms) |%s%s%s\n"
                   "|---|---:|---:|---:|---:|%s---:|---:|---:|%s%s%s\n", passes ? " balance per pass, lo-hi (%) |" : "",
                fl ? " max/floor | at floor |" : "", noise ? " noisy shards |" : "", mq ? " cost model |" : "", passes ? "---:|" : "",
                fl ? "---:|---:|" : "", noise ? "---:|" : "", mq ? "---|" : "");
    }
    for (int64_t i = 0; i < n; i++) summary_row(f, fmt, &a[i], aw, fl, noise, mq, passes);
    fprintf(f, "%sbalance: mean ± std over %s, with the 95 %% t-interval of the mean; speedup over random: geometric mean, "
               "with the 95 %% interval (t-interval of the mean log speedup); n/a: fewer than 2 values",
            fmt == AS_EVAL_MARKDOWN ? "\n" : "", over);
    if (passes)
        fprintf(f, "; passes lo-hi: the mean balance of each pass (as-bench --passes: the same plans measured apart, in "
                   "time and in fresh memory), the lowest and the highest: the variation between measurements, which the "
                   "95 %% CI over the tasks does not hold");
    if (fl) {
        char m[48];
        if (margin > 0) snprintf(m, sizeof m, "at most %g %% above", 100 * margin);
        else snprintf(m, sizeof m, "at or below");
        fprintf(f, "; max/floor: mean slowest shard over the task's floor (the costliest table alone); at floor: plans whose "
                   "slowest shard is %s their floor, of those with a known floor", m);
    }
    if (mq)
        fprintf(f, "; cost model: what as-plan's quality gate said of the cost model that placed the plans (their "
                   "model_quality): weak (held-out R² below its threshold or below the linear baseline's), ok, or unjudged "
                   "(no held-out R², or the gate off); blank: placed without one");
    fprintf(f, "\n\n");
}

/* ---- the verdict ------------------------------------------------------------------------ */

/* a range in words: "60.9 to 72.7"; cfmt NULL: fmt_x and an "x" after each */
static void range_words(char *buf, size_t len, const char *cfmt, double lo, double hi, double scale)
{
    char a[40], b[40];
    if (!isfinite(lo) || !isfinite(hi)) { snprintf(buf, len, "n/a"); return; }
    if (cfmt) {
        snprintf(a, sizeof a, cfmt, lo * scale);
        snprintf(b, sizeof b, cfmt, hi * scale);
        snprintf(buf, len, "%s to %s", a, b);
    } else {
        fmt_x(a, sizeof a, lo * scale);
        fmt_x(b, sizeof b, hi * scale);
        snprintf(buf, len, "%sx to %sx", a, b);
    }
}

static const char *rank_word(as_eval_rank_kind k)
{
    static const char *const w[] = { "none", "single", "resolved", "noisy", "few", "tie" };
    return w[k];
}

static int64_t find_alg(const as_eval_alg *a, int64_t na, const char *alg)
{
    for (int64_t i = 0; i < na; i++) if (!strcmp(a[i].alg, alg)) return i;
    return -1;
}

/* "ahead of OTHER ... by X points of balance (...) and a speedup of Rx over it (...)" */
static void lead_words(FILE *f, as_eval_format fmt, const char *other, double other_bal, const as_eval_cmp *c, int over_runs)
{
    const char *B = fmt == AS_EVAL_MARKDOWN ? "**" : "";
    char lo_hi[96], r_lo_hi[96];
    range_words(lo_hi, sizeof lo_hi, "%+.1f", c->bal_lo, c->bal_hi, 100);
    range_words(r_lo_hi, sizeof r_lo_hi, NULL, c->ratio_lo, c->ratio_hi, 1);
    fprintf(f, "%s%s%s (mean balance %.1f %%): ", B, other, B, 100 * other_bal);
    if (!c->n) { fprintf(f, "no task where both have a usable plan"); return; }
    fprintf(f, "%+.1f points of balance (paired 95 %% CI %s", 100 * c->bal_diff, lo_hi);
    fprintf(f, " over %" PRId64 " %s%s)", c->n, over_runs ? "run" : "task", c->n == 1 ? "" : "s");
    char x[40];
    fmt_x(x, sizeof x, c->ratio);
    if (isfinite(c->ratio)) fprintf(f, " and a speedup of %sx over it (geometric mean, 95 %% CI %s)", x, r_lo_hi);
}

/* the order of the algorithms by mean balance, each neighbour pair compared: "a (85.0 %) >
 * b (55.0 %) ≈ c (54.0 %)" (CSV: without the balances); nothing with fewer than 2 */
static void order_words(FILE *f, int csv, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na, int over_runs)
{
    int64_t *order = as_malloc((size_t)(na ? na : 1) * sizeof *order), m = as_eval_order(a, na, order);
    for (int64_t i = 0; i < m && m >= 2; i++) {
        if (i) {
            as_eval_rank pr;
            as_eval_rank_pair(p, n, a, order[i - 1], order[i], over_runs, &pr);
            fprintf(f, " %s ", pr.kind == AS_RANK_RESOLVED ? ">" : "≈");
        }
        if (csv) fprintf(f, "%s", a[order[i]].alg);
        else fprintf(f, "%s (%.1f %%)", a[order[i]].alg, 100 * a[order[i]].bal_mean);
    }
    free(order);
}

/* the verdict's CSV: one row of the ranking, noise, model and floor figures */
static void verdict_csv(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na,
                        const as_eval_verdict_info *v, const as_eval_rank *r, const as_eval_noise *nz,
                        const as_eval_floorbound *fb)
{
    fprintf(f, "winner,runner_up,ranking,n,balance_diff,balance_diff_lo,balance_diff_hi,speedup_ratio,speedup_ratio_lo,speedup_ratio_hi,"
               "shards,noisy_shards,median_spread,noise_threshold,model_r2,linear_r2,model_worse,order,floor_tasks,floor_known,floor_bound,"
               "floor_margin,weak_model_algs\n");
    as_eval_csv_field(f, r->winner >= 0 ? a[r->winner].alg : "");
    fputc(',', f);
    as_eval_csv_field(f, r->runner >= 0 ? a[r->runner].alg : "");
    fprintf(f, ",%s,%" PRId64, rank_word(r->kind), r->cmp.n);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.bal_diff : NAN);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.bal_lo : NAN);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.bal_hi : NAN);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.ratio : NAN);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.ratio_lo : NAN);
    num(f, fmt, 0, "%.9g", r->runner >= 0 ? r->cmp.ratio_hi : NAN);
    if (nz->shards) fprintf(f, ",%" PRId64 ",%" PRId64, nz->shards, nz->noisy);
    else fprintf(f, ",,");
    num(f, fmt, 0, "%.9g", nz->median_spread);
    num(f, fmt, 0, "%.9g", nz->threshold);
    const as_eval_quality *q = v->quality && v->quality->have == 1 ? v->quality : NULL;
    num(f, fmt, 0, "%.9g", q ? q->model.r2 : NAN);
    num(f, fmt, 0, "%.9g", q ? q->linear.r2 : NAN);
    int w = as_eval_quality_worse(v->quality);
    fprintf(f, ",%s,", w < 0 ? "" : w ? "true" : "false");
    /* the order and the weak algorithms are fields of several labels: each quoted whole */
    char *fld = NULL;
    size_t fl = 0;
    FILE *m = open_memstream(&fld, &fl);
    if (!m) as_oom("a CSV field");
    order_words(m, 1, p, n, a, na, v->over_runs);
    fclose(m);
    as_eval_csv_field(f, fld);
    free(fld);
    fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.9g,", fb->tasks, fb->known, fb->bound, fb->margin);
    /* the algorithms whose plans a cost model marked weak placed, ';'-separated */
    if (!(m = open_memstream(&fld, &fl))) as_oom("a CSV field");
    for (int64_t i = 0, k = 0; i < na; i++)
        if (a[i].mq_weak) fprintf(m, "%s%s", k++ ? ";" : "", a[i].alg);
    fclose(m);
    as_eval_csv_field(f, fld);
    free(fld);
    fputc('\n', f);
}

/* an algorithm's plans of one judgement of their cost model: 0 weak, 1 unjudged, 2 passed */
static int64_t mq_count(const as_eval_alg *a, int which)
{
    return which == 0 ? a->mq_weak : which == 1 ? a->mq_unjudged : a->mq_plans - a->mq_weak - a->mq_unjudged;
}

/* the algorithms of a[] with plans of that judgement (mq_count), in words: "a, b and c";
   returns how many plans they hold of it */
static int64_t alg_list(FILE *f, const as_eval_alg *a, int64_t na, int which)
{
    int64_t m = 0, k = 0, plans = 0;
    for (int64_t i = 0; i < na; i++) m += mq_count(&a[i], which) > 0;
    for (int64_t i = 0; i < na; i++) {
        const int64_t c = mq_count(&a[i], which);
        if (c <= 0) continue;
        fprintf(f, "%s%s", !k ? "" : k == m - 1 ? " and " : ", ", a[i].alg);
        k++;
        plans += c;
    }
    return plans;
}

/* the first plan with a model_quality whose judgement is what want says (1 weak, 0 ok); *same:
   every such plan carries the same figures */
static const as_planrec_full *first_mq(const as_planrec_full *p, int64_t n, int want, int *same)
{
    const as_planrec_full *q = NULL;
    *same = 1;
    for (int64_t j = 0; j < n; j++) {
        if (!p[j].has_mq || !p[j].mq.judged || p[j].mq.weak != want) continue;
        if (!q) q = &p[j];
        else if (p[j].mq.r2 != q->mq.r2 || p[j].mq.min_r2 != q->mq.min_r2 ||
                 !(p[j].mq.linear_r2 == q->mq.linear_r2 || (isnan(p[j].mq.linear_r2) && isnan(q->mq.linear_r2))))
            *same = 0;
    }
    return q;
}

/* the verdict's lines on the cost model the plans were placed with (as-plan's model_quality):
   which algorithms' plans rest on a weak model, on one of unjudged quality, or on one the gate
   passed; nothing when no plan carries it */
static void verdict_model_marks(FILE *f, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na, const char *B,
                                const char *li)
{
    int64_t weak = 0, unjudged = 0, marked = 0, mplans = 0;
    for (int64_t i = 0; i < na; i++) {
        weak += a[i].mq_weak;
        unjudged += a[i].mq_unjudged;
        marked += a[i].mq_plans > 0;
        mplans += a[i].mq_plans;
    }
    if (!marked) return;
    int same;
    if (weak) {
        const as_planrec_full *q = first_mq(p, n, 1, &same);
        fprintf(f, "%s%sWeak cost model:%s the plans of ", li, B, B);
        const int64_t k = alg_list(f, a, na, 0);
        fprintf(f, " (%" PRId64 " plan%s) were placed with a cost model as-plan marked weak (model_quality; %sheld-out R² %.3f",
                k, k == 1 ? "" : "s", same ? "" : "the first: ", q->mq.r2);
        if (q->mq.r2 < q->mq.min_r2) fprintf(f, ", below the threshold %g", q->mq.min_r2);
        if (isfinite(q->mq.linear_r2) && q->mq.r2 < q->mq.linear_r2)
            fprintf(f, "%s below the linear baseline's %.3f", q->mq.r2 < q->mq.min_r2 ? " and" : ",", q->mq.linear_r2);
        fprintf(f, "): %stheir balance, and their place in the ranking, rest on a weak model%s.\n", B, B);
    }
    if (unjudged) {
        fprintf(f, "%sThe plans of ", li);
        const int64_t k = alg_list(f, a, na, 1);
        fprintf(f, " (%" PRId64 " plan%s) were placed with a cost model whose quality as-plan did not judge (model_quality "
                   "weak nil: no held-out R² in the model, or as-plan --min-model-r2 off).\n", k, k == 1 ? "" : "s");
    }
    if (mplans > weak + unjudged) {
        const as_planrec_full *q = first_mq(p, n, 0, &same);
        fprintf(f, "%sThe cost model that placed the %splans of ", li, weak + unjudged ? "other " : "");
        alg_list(f, a, na, 2);
        fprintf(f, " passed as-plan's quality gate (model_quality; %sheld-out R² %.3f, threshold %g", same ? "" : "the first: ",
                q->mq.r2, q->mq.min_r2);
        if (isfinite(q->mq.linear_r2)) fprintf(f, ", linear baseline %.3f", q->mq.linear_r2);
        fprintf(f, ").\n");
    }
}

/* the verdict's lines on the winner: its balance and speedup, its lead over the runner-up
   (resolved, too noisy, too few, a tie) and over cost-greedy and random */
/* what the ranking of winner w and runner-up u says, after the lead (r->kind) */
static void rank_words(FILE *f, const as_eval_rank *r, const as_eval_alg *w, const as_eval_alg *u,
                       const as_eval_verdict_info *v, int estimated, const char *B)
{
    switch (r->kind) {
    case AS_RANK_RESOLVED:
        fprintf(f, "The ranking is resolved: the interval lies above 0");
        if (r->cmp.shards) fprintf(f, " and %" PRId64 " of their %" PRId64 " shards are noisy", r->cmp.noisy, r->cmp.shards);
        else if (!estimated) fprintf(f, " (the noise of single shards is unknown: the plans carry no cost_noisy)");
        fprintf(f, ".");
        if (r->cmp.npass >= 2) {
            /* decided on the between-pass variation too */
            char lo[32], hi[32];
            snprintf(lo, sizeof lo, "%+.1f", 100 * r->cmp.pass_lo);
            snprintf(hi, sizeof hi, "%+.1f", 100 * r->cmp.pass_hi);
            fprintf(f, " It holds between measurements too: the plans were measured in %d passes made apart (in "
                       "time and in fresh memory), and the lead is above 0 in every one of them (%s to %s points)",
                    r->cmp.npass, lo, hi);
            if (r->cmp.flips)
                fprintf(f, ", although on %" PRId64 " of the %" PRId64 " tasks the two plans' order flips between passes",
                        r->cmp.flips, r->cmp.pass_pairs);
            fprintf(f, ".");
        } else if (!estimated && !v->over_runs)
            /* one measurement: the tasks share the machine's state while it lasted */
            fprintf(f, " The interval covers the variation over the tasks of this measurement, not that between "
                       "measurements: on a shared machine the same plans measured again can move by a few points "
                       "(measure them in passes, as-bench --passes, or again, or compare several runs with --over "
                       "runs, to confirm a small lead).");
        fprintf(f, "\n");
        break;
    case AS_RANK_NOISY:
        if (r->too_noisy) {
            fprintf(f, "%sThe measurements were too noisy to rank %s and %s%s: ", B, w->alg, u->alg, B);
            fprintf(f, "%" PRId64 " of their %" PRId64 " shards (%.1f %%) stayed noisy, more than %.0f %%.\n", r->cmp.noisy,
                    r->cmp.shards, 100.0 * (double)r->cmp.noisy / (double)r->cmp.shards, 100 * AS_EVAL_NOISY_MAX);
        } else if (r->pass_flip) {
            char lo[32], hi[32];
            snprintf(lo, sizeof lo, "%+.1f", 100 * r->cmp.pass_lo);
            snprintf(hi, sizeof hi, "%+.1f", 100 * r->cmp.pass_hi);
            fprintf(f, "%sThese measurements cannot rank %s and %s%s: over the tasks the interval lies above 0, but "
                       "the plans were measured in %d passes made apart (in time and in fresh memory) and the lead "
                       "does not hold in every one (%s to %s points): the variation between measurements reverses "
                       "it", B, w->alg, u->alg, B, r->cmp.npass, lo, hi);
            if (r->cmp.flips)
                fprintf(f, "; on %" PRId64 " of the %" PRId64 " tasks the two plans' order flips between passes", r->cmp.flips,
                        r->cmp.pass_pairs);
            fprintf(f, ".\n");
        } else {
            /* few noisy shards, but the difference is within what varies from task to task
             * (and run to run): not a ranking either */
            fprintf(f, "%sThese measurements cannot rank %s and %s%s: the interval of their balance difference "
                       "includes 0, so the difference is within the variation over %s and the measurement noise.\n",
                    B, w->alg, u->alg, B, v->over_runs ? "runs" : "tasks");
        }
        break;
    case AS_RANK_FEW:
        fprintf(f, "%sToo few %s to rank %s and %s%s: one paired value gives no interval.\n", B, v->over_runs ? "runs" : "tasks",
                w->alg, u->alg, B);
        break;
    case AS_RANK_TIE:
        fprintf(f, "%s%s and %s tie%s: their plans cost the same on every task.\n", B, w->alg, u->alg, B);
        break;
    default: fputc('\n', f);
    }
}

static void verdict_winner(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_eval_alg *a,
                           int64_t na, const as_eval_verdict_info *v, const as_eval_rank *r, int estimated, const char *B,
                           const char *li)
{
    if (r->kind == AS_RANK_NONE) fprintf(f, "%sNo plan has a balance (every plan infeasible, unmeasured or of zero cost): nothing to rank.\n", li);
    else {
        const as_eval_alg *w = &a[r->winner];
        char bci[96], sci[96];
        range_words(bci, sizeof bci, "%.1f", w->bal_lo, w->bal_hi, 100);
        range_words(sci, sizeof sci, NULL, w->spd_lo, w->spd_hi, 1);
        fprintf(f, "%s%s%s%s won on %s balance: mean %.1f %% (95 %% CI %s %%)", li, B, w->alg, B,
                estimated ? "estimated" : "measured", 100 * w->bal_mean, bci);
        char x[40];
        fmt_x(x, sizeof x, w->spd_gmean);
        if (isfinite(w->spd_gmean)) fprintf(f, ", speedup over random %sx (geometric mean, 95 %% CI %s)", x, sci);
        fprintf(f, ".\n");
        if (r->kind == AS_RANK_SINGLE) fprintf(f, "%sIt is the only algorithm with a balance: nothing to rank it against.\n", li);
        else {
            const as_eval_alg *u = &a[r->runner];
            fprintf(f, "%sAhead of the runner-up, ", li);
            lead_words(f, fmt, u->alg, u->bal_mean, &r->cmp, v->over_runs);
            fprintf(f, ". ");
            rank_words(f, r, w, u, v, estimated, B);
            /* over the baselines */
            static const char *const base[2] = { "cost-greedy", "random" };
            for (int b = 0; b < 2; b++) {
                int64_t i = find_alg(a, na, base[b]);
                if (i < 0 || i == r->winner || i == r->runner || !isfinite(a[i].bal_mean)) continue;
                as_eval_cmp c;
                as_eval_compare(p, n, w->alg, base[b], v->over_runs, &c);
                fprintf(f, "%sAhead of ", li);
                lead_words(f, fmt, base[b], a[i].bal_mean, &c, v->over_runs);
                fprintf(f, ".\n");
            }
        }
    }
}

/* the learned policy against the greedy planner by the same cost model: each autoshard
 * variant beside cost-greedy's of the same variant (autoshard+split+refine and
 * cost-greedy+split+refine), ranked as the winner is (as_eval_rank_pair), and which to trust */
static void verdict_policy(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na,
                           const as_eval_verdict_info *v, const char *B, const char *li)
{
    static const char pol[] = "autoshard", gr[] = "cost-greedy";
    for (int64_t i = 0; i < na; i++) {
        if (strncmp(a[i].alg, pol, sizeof pol - 1) || !isfinite(a[i].bal_mean)) continue;
        char other[128];
        snprintf(other, sizeof other, "%s%s", gr, a[i].alg + sizeof pol - 1);
        const int64_t g = find_alg(a, na, other);
        if (g < 0 || !isfinite(a[g].bal_mean)) continue;
        const int ahead = a[i].bal_mean >= a[g].bal_mean;
        as_eval_rank r;
        as_eval_rank_pair(p, n, a, ahead ? i : g, ahead ? g : i, v->over_runs, &r);
        fprintf(f, "%sThe learned policy against the greedy planner: %s%s%s against ", li, B, a[i].alg, B);
        as_eval_cmp c;
        as_eval_compare(p, n, a[i].alg, other, v->over_runs, &c);
        lead_words(f, fmt, other, a[g].bal_mean, &c, v->over_runs);
        if (r.kind == AS_RANK_RESOLVED && ahead) fprintf(f, ": %sthe learned policy beat the greedy planner%s.\n", B, B);
        else if (r.kind == AS_RANK_RESOLVED)
            fprintf(f, ": %sthe greedy planner beat the learned policy%s; trust %s's plans.\n", B, B, other);
        else if (r.kind == AS_RANK_TIE) fprintf(f, ": they tie.\n");
        else
            fprintf(f, ": not resolved (%s): neither beat the other here; %s is the simpler to trust.\n",
                    r.kind == AS_RANK_FEW ? "too few tasks" : "within the variation and the noise", other);
    }
}

/* the verdict's lines on the measurement noise, the cost model and the plots */
static void verdict_tail(FILE *f, as_eval_format fmt, const as_eval_verdict_info *v, const as_eval_noise *nz, int estimated,
                         const char *B, const char *li)
{
    /* the noise */
    if (estimated) {
        fprintf(f, "%sNo measurement: every cost is an estimate of the cost model", li);
        if (v->clamped)
            fprintf(f, "; %" PRId64 " of %" PRId64 " estimated shard costs were negative (the model's output is unconstrained) "
                       "and were counted as 0 ms", v->clamped, v->estimated);
        fprintf(f, ".\n");
    } else if (nz->shards || nz->spreads) {
        fprintf(f, "%sMeasurement noise: ", li);
        if (nz->shards) {
            fprintf(f, "%" PRId64 " of %" PRId64 " measured shards (%.1f %%) stayed noisy after re-measuring", nz->noisy, nz->shards,
                    100.0 * (double)nz->noisy / (double)nz->shards);
            if (isfinite(nz->threshold)) fprintf(f, " (spread above %.1f %%)", 100 * nz->threshold);
        }
        if (nz->spreads) fprintf(f, "%smedian spread %.1f %% over %" PRId64 " shards", nz->shards ? "; " : "", 100 * nz->median_spread, nz->spreads);
        fprintf(f, "; %" PRId64 " of %" PRId64 " plans rest on a noisy shard%s.\n", nz->shaky, nz->plans,
                nz->shaky ? " (marked * in the plans table)" : "");
    } else fprintf(f, "%sMeasurement noise: unknown (the plans carry no cost_spread or cost_noisy: measured by an as-bench "
                      "without noise tracking).\n", li);
    /* the cost model */
    if (v->quality && v->quality->have) {
        fprintf(f, "%sCost model: ", li);
        quality_words(f, v->quality);
        int worse = as_eval_quality_worse(v->quality);
        if (worse == 1) fprintf(f, ". %s%c%s%s", B, toupper((unsigned char)WORSE_WORDS[0]), WORSE_WORDS + 1, B);
        else if (worse == 0) fprintf(f, ": better than the straight line");
        if (worse != 1 && v->quality->have == 1 && isfinite(v->quality->model.r2) && v->quality->model.r2 < 0)
            fprintf(f, "; but %s", NEG_R2_WORDS);
        fprintf(f, ".\n");
    } else fprintf(f, "%sCost model: no held-out quality in the input (give the model file: a `model` record with `heldout`, "
                      "or a `costfit-report`).\n", li);
    if (v->plot || v->curve) {
        fprintf(f, "%sPlots: ", li);
        if (v->plot) fprintf(f, "%s%s%s (balance, speedup, per-shard costs)", fmt == AS_EVAL_MARKDOWN ? "`" : "", v->plot,
                             fmt == AS_EVAL_MARKDOWN ? "`" : "");
        if (v->curve) fprintf(f, "%straining curve %s%s%s", v->plot ? "; " : "", fmt == AS_EVAL_MARKDOWN ? "`" : "", v->curve,
                              fmt == AS_EVAL_MARKDOWN ? "`" : "");
        fprintf(f, ".\n");
    }
}

void as_eval_print_verdict(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_eval_alg *a,
                           int64_t na, const as_eval_verdict_info *v)
{
    as_eval_rank r;
    as_eval_rank_algs(p, n, a, na, v->over_runs, &r);
    as_eval_noise nz;
    as_eval_noise_of(p, n, NULL, &nz);
    int estimated = !strcmp(v->label, "estimated");
    as_eval_floorbound fb;
    as_eval_floor_bound(p, n, v->floor_margin, &fb);
    if (fmt == AS_EVAL_CSV) {
        verdict_csv(f, fmt, p, n, a, na, v, &r, &nz, &fb);
        return;
    }
    const char *B = fmt == AS_EVAL_MARKDOWN ? "**" : "";
    int64_t tasks = 0;   /* distinct task ids */
    for (int64_t j = 0; j < n; j++) {
        int first = 1;
        for (int64_t i = 0; i < j && first; i++) if (p[i].task == p[j].task) first = 0;
        tasks += first;
    }
    if (fmt == AS_EVAL_MARKDOWN) fprintf(f, "**Verdict**");
    else fprintf(f, "Verdict");
    fprintf(f, " (costs %s%s%s; %" PRId64 " task%s", v->label, v->device && v->device[0] ? " on " : "",
            v->device ? v->device : "", tasks, tasks == 1 ? "" : "s");
    if (v->runs > 1) fprintf(f, ", %" PRId64 " runs, statistics over %s", v->runs, v->over_runs ? "runs" : "plans");
    fprintf(f, ")%s\n\n", fmt == AS_EVAL_MARKDOWN ? "" : ":");
    const char *li = "- ";
    /* the winner */
    verdict_winner(f, fmt, p, n, a, na, v, &r, estimated, B, li);
    /* the whole order, each neighbour pair compared like the winner and the runner-up */
    int64_t *order = as_malloc((size_t)(na ? na : 1) * sizeof *order), m = as_eval_order(a, na, order);
    free(order);
    if (m >= 3) {
        fprintf(f, "%sRanking by mean balance (> resolved, ≈ not resolved: too noisy, too few tasks or a tie): ", li);
        order_words(f, 0, p, n, a, na, v->over_runs);
        fprintf(f, ".\n");
    }
    /* the floor: where no table-wise plan can go lower */
    fprintf(f, "%s", li);
    as_eval_floor_words(f, fmt, &fb, v->label);
    fprintf(f, ".\n");
    verdict_policy(f, fmt, p, n, a, na, v, B, li);
    verdict_model_marks(f, p, n, a, na, B, li);
    verdict_tail(f, fmt, v, &nz, estimated, B, li);
    fputc('\n', f);
}

/* ---- training curves -------------------------------------------------------------------- */

/* a number field: 0 a number (NaN for nil), 1 absent, -1 something else */
static int get_num(const msgpack_object *rec, const char *key, double *v)
{
    const msgpack_object *o = as_obj_get(rec, key);
    *v = NAN;
    if (!o) return 1;
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    return as_obj_f64(rec, key, v) ? -1 : 0;
}

int as_eval_train_read(const msgpack_object *rec, as_eval_train *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->update = -1;
    if (as_obj_i64(rec, "episode", &t->episode) || t->episode < 0 || as_obj_i64(rec, "evals", &t->evals) || t->evals < 0) {
        snprintf(err, errlen, "train record needs integers 'episode' and 'evals' >= 0");
        return -1;
    }
    if (get_num(rec, "wall_s", &t->wall_s) || !isfinite(t->wall_s) || t->wall_s < 0) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": needs a number 'wall_s' >= 0", t->episode);
        return -1;
    }
    if (get_num(rec, "reward", &t->reward) || get_num(rec, "pred_balance", &t->pred_balance)) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": needs numbers 'reward' and 'pred_balance'", t->episode);
        return -1;
    }
    static const char *const opt[3] = { "meas_balance", "eval_pred_balance", "eval_meas_balance" };
    double *dst[3] = { &t->meas_balance, &t->eval_pred_balance, &t->eval_meas_balance };
    for (int i = 0; i < 3; i++)
        if (get_num(rec, opt[i], dst[i]) < 0) {
            snprintf(err, errlen, "train record of episode %" PRId64 ": '%s' is not a number", t->episode, opt[i]);
            return -1;
        }
    if (as_obj_get(rec, "update") && (as_obj_i64(rec, "update", &t->update) || t->update < 0)) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": 'update' is not an integer >= 0", t->episode);
        return -1;
    }
    as_obj_str(rec, "reward_source", t->reward_source, sizeof t->reward_source);
    return 0;
}

double as_eval_train_balance(const as_eval_train *t)
{
    return isnan(t->pred_balance) ? t->reward : t->pred_balance;
}

static int has_eval(const as_eval_train *t)
{
    return isfinite(t->eval_pred_balance) || isfinite(t->eval_meas_balance);
}

int64_t as_eval_curve_rows(const as_eval_train *t, int64_t n, int64_t max, int64_t *rows)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) if (has_eval(&t[i])) rows[m++] = i;
    if (m || n < 1) return m;
    if (max < 1) max = 1;
    int64_t step = (n + max - 1) / max;
    for (int64_t i = n - 1; i >= 0; i -= step) rows[m++] = i;
    for (int64_t a = 0, b = m - 1; a < b; a++, b--) { int64_t x = rows[a]; rows[a] = rows[b]; rows[b] = x; }
    return m;
}

void as_eval_print_curve(FILE *f, as_eval_format fmt, const as_eval_train *t, int64_t n)
{
    int64_t *rows = as_malloc((size_t)(n ? n : 1) * sizeof *rows);
    int64_t m = as_eval_curve_rows(t, n, 20, rows);
    if (fmt == AS_EVAL_CSV) fprintf(f, "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance\n");
    else {
        char which[64];
        int evals = m && has_eval(&t[rows[0]]);
        int64_t step = (n + 19) / 20;
        if (evals) snprintf(which, sizeof which, "the records with a greedy evaluation");
        else if (step > 1) snprintf(which, sizeof which, "one record in %" PRId64 ", ending with the last", step);
        else snprintf(which, sizeof which, "every record");
        const char *src = n && t[0].reward_source[0] ? t[0].reward_source : "?";
        if (fmt == AS_EVAL_TEXT) {
            fprintf(f, "Training curve (%" PRId64 " train records, reward %s; balance = min/max shard cost; %s):\n", n, src, which);
            fprintf(f, "%8s %10s %7s %9s %9s %9s %9s\n", "episode", "wall s", "evals", "reward", "pred bal", "eval pred", "eval meas");
        } else {
            fprintf(f, "**Training curve** (%" PRId64 " train records, reward %s; balance = min/max shard cost; %s)\n\n", n, src, which);
            fprintf(f, "| episode | wall (s) | evals | reward | pred balance | eval pred balance | eval meas balance |\n");
            fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|\n");
        }
    }
    for (int64_t j = 0; j < m; j++) {
        const as_eval_train *r = &t[rows[j]];
        const char *cf = fmt == AS_EVAL_CSV ? "%.9g" : "%.4f";
        if (fmt == AS_EVAL_CSV) fprintf(f, "%" PRId64, r->episode);
        else if (fmt == AS_EVAL_TEXT) fprintf(f, "%8" PRId64, r->episode);
        else fprintf(f, "| %" PRId64 " |", r->episode);
        num(f, fmt, 10, fmt == AS_EVAL_CSV ? "%.9g" : "%.3f", r->wall_s);
        if (fmt == AS_EVAL_CSV) fprintf(f, ",%" PRId64, r->evals);
        else if (fmt == AS_EVAL_TEXT) fprintf(f, " %7" PRId64, r->evals);
        else fprintf(f, " %" PRId64 " |", r->evals);
        num(f, fmt, 9, cf, r->reward);
        num(f, fmt, 9, cf, r->pred_balance);
        num(f, fmt, 9, cf, r->eval_pred_balance);
        num(f, fmt, 9, cf, r->eval_meas_balance);
        fputc('\n', f);
    }
    if (fmt != AS_EVAL_CSV) fputc('\n', f);
    free(rows);
}

void as_eval_print_header(FILE *f, as_eval_format fmt, const as_eval_header *h)
{
    const char *device = h->device ? h->device : "";
    if (h->model_path) fprintf(f, "%scosts estimated by the cost model %s (trained on costs measured on %s)\n\n",
                               fmt == AS_EVAL_MARKDOWN ? "" : "# ", h->model_path, h->model_device ? h->model_device : "");
    else {
        /* what the shards trained, when not the paper's protocol (fp16 weights, SGD) */
        char train[96] = "";
        if (h->trained_differ) snprintf(train, sizeof train, " (training different weight types or optimizers)");
        else if (h->trained && h->trained[0] && strcmp(h->trained, "fp16 sgd")) {
            char w[48];
            snprintf(w, sizeof w, "%s", h->trained);
            char *sp = strchr(w, ' ');
            if (sp) *sp = 0;
            snprintf(train, sizeof train, " (training %s weights with %s)", w, sp ? sp + 1 : "sgd");
        }
        fprintf(f, "%scosts %s%s%s%s; %" PRId64 " plans, %" PRId64 " run%s\n\n", fmt == AS_EVAL_MARKDOWN ? "" : "# ",
                h->label, device[0] ? " on " : "", device[0] ? (h->devices_differ ? "several devices" : device) : "",
                train, h->nplans, h->nruns, h->nruns == 1 ? "" : "s");
    }
    const char *nt = fmt == AS_EVAL_MARKDOWN ? "**Communication:** " : "# communication: ";
    char how[AS_COMM_NAME_MAX + 160];
    as_comm_words_of(h->comm_model, h->comm_gbps, how, sizeof how);
    if (h->charged)
        fprintf(f, "%s%s kernel costs plus communication modelled %s (ids in, pooled outputs and "
                   "gradients out, each shard's own and its 1/K share of the all-to-all%s%s; %.1f MB per shard on "
                   "average, at most %.1f MB); floors compare the kernel alone\n\n", nt, h->label, how,
                h->dp_plans ? ", and the all-reduce of the data-parallel tables' gradients" : "",
                h->comm_model ? ", each call's message the larger of the two" : "",
                h->comm_n ? h->comm_bytes / (double)h->comm_n / 1e6 : 0.0, h->comm_max / 1e6);
    else if (h->comm_have && !h->comm_missing)
        fprintf(f, "%snot charged (--comm-gbps 0): %.1f MB per shard on average, at most %.1f MB (ids in, "
                   "pooled outputs and gradients out)\n\n", nt, h->comm_n ? h->comm_bytes / (double)h->comm_n / 1e6 : 0.0,
                h->comm_max / 1e6);
    else if (h->comm_have)
        fprintf(f, "%snot charged: %" PRId64 " plans carry no communication bytes; kernel costs alone\n\n", nt,
                h->comm_missing);
    if (h->clamped)
        fprintf(f, "%s%" PRId64 " of %" PRId64 " estimated shard costs were negative (the cost model's output is "
                   "unconstrained) and are counted as 0 ms\n\n", fmt == AS_EVAL_MARKDOWN ? "**Note:** " : "# note: ",
                h->clamped, h->estimated);
    if (h->quality && h->show_quality) {
        if (h->quality->have) as_eval_print_quality(f, fmt, h->quality);
        else fprintf(f, "%sits held-out quality is not in the model file (no `model` record with `heldout`, no "
                        "`costfit-report`)\n\n", fmt == AS_EVAL_MARKDOWN ? "**Cost model:** " : "# cost model: ");
    }
}
