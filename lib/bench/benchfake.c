/* benchfake.c - the fake timer (tests); see benchfake.h. */
#include "benchfake.h"
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit_of(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

static uint64_t ids_hash(const int64_t *ids, int64_t n)
{
    uint64_t h = 0x66616b652d6e6fULL;
    for (int64_t i = 0; i < n; i++) h = mix64(h ^ (uint64_t)ids[i]);
    return mix64(h ^ (uint64_t)n);
}

/* a noisy attempt multiplies the odd-numbered runs by factor x (1 + u/2) and the even ones
 * by (1 + u/100); a quiet one every run by (1 + u/100). With half the runs slow, the runs a
 * trimmed mean keeps (at least 2, centred) hold slow and fast ones: the spread is large. */
static double fake_mult(const as_bench_fake *f, uint64_t h, int noisy, int attempt, int run)
{
    double u = unit_of(mix64(h ^ mix64(((uint64_t)(uint32_t)attempt << 32) ^ (uint64_t)(uint32_t)run ^ 0x72756eULL)));
    if (noisy && (run & 1)) return f->factor * (1 + u / 2);
    return 1 + u / 100;
}

double as_bench_fake_factor(const as_bench_fake *f, const int64_t *ids, int64_t n, int attempt, int run)
{
    if (!f || !f->on) return 1;
    uint64_t h = ids_hash(ids, n);
    int hit = unit_of(mix64(h ^ 0x7368617264ULL)) < f->shards;
    int noisy = hit && (f->mode == AS_FAKE_ALWAYS || (f->mode == AS_FAKE_FIRST && attempt == 0));
    return fake_mult(f, h, noisy, attempt, run);
}

/* the fake timer's slowdown of the whole machine during group g (drift=F) */
static double fake_group_factor(const as_bench_fake *f, int64_t g)
{
    if (!f || !f->on || !(f->drift > 1)) return 1;
    return 1 + (f->drift - 1) * unit_of(mix64((uint64_t)g ^ 0x6472696674ULL));
}

static double fake_calib_factor(const as_bench_fake *f, int run)
{
    return fake_mult(f, ids_hash(NULL, 0) ^ 0x63616c6962ULL, f->calib_noisy, 0, run);
}

/* spike=GROUPS:FACTOR into f; 0, or -1 */
static int fake_spike(as_bench_fake *f, const char *arg)
{
    char buf[256];
    if (strlen(arg) >= sizeof buf) return -1;
    strcpy(buf, arg);
    char *colon = strrchr(buf, ':');
    if (!colon || as_parse_f64(colon + 1, 1e-6, 1e6, &f->spike)) return -1;
    *colon = 0;
    f->nspike = 0;
    if (!strcmp(buf, "all")) { f->nspike = -1; return 0; }
    char *save = NULL;
    for (char *g = strtok_r(buf, "/", &save); g; g = strtok_r(NULL, "/", &save)) {
        if (f->nspike == 8 || as_parse_i64(g, 0, INT64_MAX, &f->spike_group[f->nspike])) return -1;
        f->nspike++;
    }
    return f->nspike ? 0 : -1;
}

/* whether group g's last shard is spiked */
static int fake_spiked(const as_bench_fake *f, int64_t g)
{
    if (f->nspike < 0) return 1;
    for (int i = 0; i < f->nspike; i++)
        if (f->spike_group[i] == g) return 1;
    return 0;
}

int as_bench_fake_parse(const char *spec, as_bench_fake *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->on = 1;
    f->mode = AS_FAKE_QUIET;
    f->shards = 1;
    f->factor = 10;
    char *dup = as_strdup(spec), *save = NULL;
    int rc = 0;
    for (char *it = strtok_r(dup, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        if (!strcmp(it, "quiet")) f->mode = AS_FAKE_QUIET;
        else if (!strcmp(it, "first")) f->mode = AS_FAKE_FIRST;
        else if (!strcmp(it, "always")) f->mode = AS_FAKE_ALWAYS;
        else if (!strncmp(it, "shards=", 7)) {
            if (as_parse_f64(it + 7, 0, 1, &f->shards)) { snprintf(err, errlen, "'%s': shards= takes a fraction 0..1", it); rc = -1; break; }
        } else if (!strncmp(it, "factor=", 7)) {
            if (as_parse_f64(it + 7, 1, 1e6, &f->factor) || !(f->factor > 1)) { snprintf(err, errlen, "'%s': factor= takes a number above 1", it); rc = -1; break; }
        } else if (!strncmp(it, "drift=", 6)) {
            if (as_parse_f64(it + 6, 1, 1e6, &f->drift)) { snprintf(err, errlen, "'%s': drift= takes a number 1..1e6", it); rc = -1; break; }
        } else if (!strncmp(it, "spike=", 6)) {
            if (fake_spike(f, it + 6)) {
                snprintf(err, errlen, "'%s': spike= takes GROUPS:FACTOR (group numbers >= 0 joined by /, up to 8, or all; "
                         "a factor 1e-6..1e6)", it);
                rc = -1;
                break;
            }
        } else if (!strcmp(it, "calib=noisy")) f->calib_noisy = 1;
        else if (!strcmp(it, "calib=quiet")) f->calib_noisy = 0;
        else { snprintf(err, errlen, "'%s' is not quiet, first, always, shards=P, factor=F, drift=F, spike=G:F or calib=quiet|noisy", it); rc = -1; break; }
    }
    free(dup);
    return rc;
}

/* ---- the hook --------------------------------------------------------------------------- */

/* the kernels ran, their times are replaced: the shard's quiet time times the attempt's and
 * the group's factors (the quiet-machine check's factor for its shard) */
static int fake_runs(const void *ctx, const as_bench_timed *t, double *fw, double *bw, double *tot, int R)
{
    const as_bench_fake *f = ctx;
    if (!f->on) return 0;
    const double base = 0.1 + 1e-5 * (double)t->lookups;
    const double spike = !t->calibrating && t->last && fake_spiked(f, t->group) ? f->spike : 1;
    for (int i = 0; i < R; i++) {
        double m = t->calibrating ? fake_calib_factor(f, i)
                                  : as_bench_fake_factor(f, t->ids, t->n, t->attempt, i) * fake_group_factor(f, t->group) * spike;
        fw[i] = base / 3 * m;
        bw[i] = 2 * base / 3 * m;
        tot[i] = fw[i] + bw[i];
    }
    return 1;
}

/* run i of the CPU's quiet-machine check: 1 ms times the check's factor */
static int fake_calib_run(const void *ctx, int i, double *ms)
{
    const as_bench_fake *f = ctx;
    if (!f->on) return 0;
    *ms = 1.0 * fake_calib_factor(f, i);
    return 1;
}

void as_bench_fake_timer(const as_bench_fake *f, as_bench_timer *t)
{
    memset(t, 0, sizeof *t);
    if (!f) return;
    t->runs = fake_runs;
    t->calib_run = fake_calib_run;
    t->ctx = f;
}
