/* benchnoise.c - noise-aware measurement; see benchnoise.h.
 * Dimension letters: T tables, K shards. */
#include "benchnoise.h"
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int as_noise_is_noisy(const as_bench_result *r, const as_noise_cfg *nc)
{
    return r->ok && nc->threshold > 0 && isfinite(r->spread) && r->spread > nc->threshold;
}

int64_t as_noise_measure(as_bench_session *s, as_noise_job *jobs, int64_t n, const as_noise_cfg *nc,
                         void (*first_done)(void *ctx, int64_t i), void *ctx, double *retry_s)
{
    for (int64_t i = 0; i < n; i++) {
        as_bench_session_run_attempt(s, jobs[i].ids, jobs[i].n, 0, &jobs[i].r);
        jobs[i].r.attempts = 1;
        jobs[i].r.noisy = 0;
        if (first_done) first_done(ctx, i);
    }
    int64_t again = 0;
    as_bench_result r;
    const double t0 = as_now();
    for (int round = 1; round <= nc->retries; round++) {
        /* still noisy after round - 1 re-measurements: the kept spread is above it */
        int64_t left = 0, k = 0;
        for (int64_t i = 0; i < n; i++) left += jobs[i].r.attempts == round && as_noise_is_noisy(&jobs[i].r, nc);
        if (!left) break;
        for (int64_t i = 0; i < n; i++) {
            as_noise_job *j = &jobs[i];
            if (j->r.attempts != round || !as_noise_is_noisy(&j->r, nc)) continue;
            as_bench_session_run_attempt(s, j->ids, j->n, round, &r);
            again++;
            const double busy = j->r.busy_ms + r.busy_ms, wall = j->r.wall_ms + r.wall_ms;
            /* keep the attempt with the lowest spread; a failed attempt (a CUDA error in
               between) or one without a spread never replaces a measured one */
            if (r.ok && isfinite(r.spread) && r.spread < j->r.spread) j->r = r;
            j->r.attempts = round + 1;
            j->r.busy_ms = busy;
            j->r.wall_ms = wall;
            if (nc->retried) nc->retried(ctx, round, ++k, left);
        }
    }
    for (int64_t i = 0; i < n; i++) jobs[i].r.noisy = as_noise_is_noisy(&jobs[i].r, nc);
    if (retry_s) *retry_s += as_now() - t0;
    return again;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double as_noise_median_spread(const as_bench_tally *t)
{
    if (!t->nspread) return NAN;
    double *v = as_malloc((size_t)t->nspread * sizeof *v);
    memcpy(v, t->spreads, (size_t)t->nspread * sizeof *v);
    qsort(v, (size_t)t->nspread, sizeof *v, cmp_d);
    const int64_t n = t->nspread;
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
