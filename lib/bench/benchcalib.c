/* benchcalib.c - the quiet-machine check; see benchcalib.h. */
#include "benchcalib.h"
#include "bench.h"
#include "common.h"
#include "stats.h"

#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CALIB_ITERS 400000       /* one run: a dependent chain of this many multiply-adds per thread */
#define CALIB_WARMUP 2
#define CALIB_RUNS 30
#define CALIB_TRIM 3

static volatile double calib_sink[64];

/* the fixed CPU kernel: each of `threads` threads runs a dependent multiply-add chain (no
 * vectorisation, no reassociation without -ffast-math): the region lasts as long as its
 * slowest thread, so a core shared with other work stretches it */
static void calib_kernel(int threads)
{
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        double x = 1.0 + tid * 1e-3;
        for (int i = 0; i < CALIB_ITERS; i++) x = x * 0.9999999 + 1e-7;
        calib_sink[tid & 63] = x;
    }
}

/* busy jiffies (not idle, not iowait) of the CPUs in this process's affinity mask, from
 * /proc/stat, and how many they are; -1 when unreadable */
static int64_t cpu_busy_jiffies(int *ncpu)
{
    cpu_set_t set;
    int have_set = sched_getaffinity(0, sizeof set, &set) == 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    char line[512];
    int64_t busy = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int cpu;
        unsigned long long us, ni, sy, id, io, irq, sirq, st;
        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9') continue;
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &us, &ni, &sy, &id, &io, &irq, &sirq, &st) != 9)
            continue;
        if (have_set && (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))) continue;
        busy += (int64_t)(us + ni + sy + irq + sirq + st);
        n++;
    }
    fclose(f);
    *ncpu = n;
    return n ? busy : -1;
}

static double self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return NAN;
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* CUDA: a small shard of the pool (its first tables, up to 4), timed with CUDA events */
static int calib_cuda(as_bench_session *S, as_bench_calib *out, char *err, size_t errlen)
{
    const as_bpool *p = as_bench_session_pool(S);
    int64_t ids[4], n = 0;
    for (int64_t i = 0; i < p->n && n < 4; i++) ids[n++] = p->t[i].id;
    if (!n) { snprintf(err, errlen, "no tables to calibrate on"); return -1; }
    as_bench_result r;
    as_bench_session_run_check(S, ids, n, CALIB_WARMUP, 20, 2, &r);
    if (!r.ok) { snprintf(err, errlen, "calibration shard: %s", r.error); return -1; }
    snprintf(out->what, sizeof out->what, "a shard of %" PRId64 " table%s of the pool", n, n == 1 ? "" : "s");
    out->runs = 20;
    out->trim = 2;
    out->median_ms = r.median_ms;
    out->spread = r.spread;
    out->slowest = r.median_ms > 0 ? r.max_ms / r.median_ms : NAN;
    return 0;
}

/* the clocks at the check's start: this process's CPU time, the wall time, the busy
 * jiffies of its CPUs (and how many they are) */
typedef struct {
    double cpu0, w0;
    int64_t j0;
    int ncpu;
} calib_clocks;

/* CPU: the fixed kernel on the session's threads; the timer hook (the fake timer) may
 * replace the runs' times, and then other processes' share is not read */
static void calib_cpu(as_bench_session *S, as_bench_calib *out, const calib_clocks *k)
{
    const int threads = as_bench_session_threads(S);
    const as_bench_timer *timer = as_bench_session_timer(S);
    int replaced = 0;           /* a timer hook (the fake timer) replaced the runs' times */
    double v[CALIB_RUNS];
    for (int i = 0; i < CALIB_WARMUP; i++) calib_kernel(threads);
    for (int i = 0; i < CALIB_RUNS; i++) {
        double t0 = as_now();
        calib_kernel(threads);
        v[i] = (as_now() - t0) * 1e3;
        if (timer->calib_run && timer->calib_run(timer->ctx, i, &v[i])) replaced = 1;
    }
    snprintf(out->what, sizeof out->what, "a fixed CPU kernel on %d thread%s", threads, threads == 1 ? "" : "s");
    out->runs = CALIB_RUNS;
    out->trim = CALIB_TRIM;
    double tm, med, mn, mx, rs;
    as_stats_trimmed(v, CALIB_RUNS, CALIB_TRIM, &tm, &med, &mn, &mx, &rs);
    out->median_ms = med;
    out->spread = as_stats_trimmed_spread(v, CALIB_RUNS, CALIB_TRIM);
    out->slowest = med > 0 ? mx / med : NAN;
    /* other processes' share of our CPUs meanwhile (not under the fake timer: tests
       must not depend on the machine's load) */
    int n1 = 0;
    const int64_t j1 = cpu_busy_jiffies(&n1);
    const double cpu1 = self_cpu_s(), w1 = as_now();
    const long hz = sysconf(_SC_CLK_TCK);
    const int ncpu = k->ncpu;
    if (!replaced && k->j0 >= 0 && j1 >= k->j0 && n1 == ncpu && ncpu > 0 && hz > 0 && isfinite(k->cpu0) && isfinite(cpu1) &&
        w1 > k->w0) {
        double other = ((double)(j1 - k->j0) / (double)hz - (cpu1 - k->cpu0)) / ((w1 - k->w0) * ncpu);
        out->other_cpu = other < 0 ? 0 : other > 1 ? 1 : other;
    }
}

int as_bench_calibrate(as_bench_session *S, as_bench_calib *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->spread = out->other_cpu = out->median_ms = out->slowest = NAN;
    calib_clocks k;
    k.ncpu = 0;
    k.cpu0 = self_cpu_s();
    k.w0 = as_now();
    k.j0 = cpu_busy_jiffies(&k.ncpu);
    out->ncpu = k.ncpu;
    if (as_bench_session_cfg(S)->cuda) {
        if (calib_cuda(S, out, err, errlen)) return -1;
    } else
        calib_cpu(S, out, &k);
    out->loaded = as_bench_calib_loaded(out);
    return 0;
}

int as_bench_calib_loaded(const as_bench_calib *c)
{
    return (isfinite(c->spread) && c->spread > AS_CALIB_SPREAD_MAX) || (isfinite(c->other_cpu) && c->other_cpu > AS_CALIB_OTHER_MAX);
}

void as_bench_calib_line(char *buf, size_t len, const as_bench_calib *c)
{
    size_t k = 0;
#define ADD(...) do { int m_ = snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__); if (m_ > 0) k += (size_t)m_; if (k >= len) k = len ? len - 1 : 0; } while (0)
    if (len) buf[0] = 0;
    ADD("quiet-machine check: %s: %d runs, median %.3g ms, spread %.1f %%, slowest %.2fx the median",
        c->what, c->runs, c->median_ms, 100 * c->spread, c->slowest);
    if (isfinite(c->other_cpu)) ADD("; other processes used %.0f %% of %d CPU%s", 100 * c->other_cpu, c->ncpu, c->ncpu == 1 ? "" : "s");
    if (!c->loaded) ADD(": quiet");
    else {
        ADD(": the machine looks loaded (");
        int both = isfinite(c->spread) && c->spread > AS_CALIB_SPREAD_MAX;
        if (both) ADD("spread above %.0f %%", 100 * AS_CALIB_SPREAD_MAX);
        if (isfinite(c->other_cpu) && c->other_cpu > AS_CALIB_OTHER_MAX)
            ADD("%sother work above %.0f %% of the CPUs", both ? ", " : "", 100 * AS_CALIB_OTHER_MAX);
        ADD("); the costs will be noisy");
    }
#undef ADD
}
