/* benchfake.h - the fake timer, a test hook of the micro-benchmark (bench.h): the kernels
 * run as usual but the times of their timed runs are replaced by deterministic figures.
 * The session's timing core knows only the hook (as_bench_timer); the fake timer is one. */
#ifndef AS_BENCHFAKE_H
#define AS_BENCHFAKE_H

#include <stddef.h>
#include <stdint.h>

/* The fake timer, a test hook (environment AS_BENCH_FAKE_NOISE, as_bench_fake_parse): the
 * kernels run as usual but their timed runs are replaced by deterministic figures, so that
 * tests can inject noise without real load. A shard's quiet time is 0.1 ms + 1e-5 ms per
 * lookup (a third forward, two thirds backward); in a noisy attempt every timed run is
 * multiplied by 1 + (factor - 1) u, u in [0, 1) from a hash of (the shard's table ids in
 * order, the attempt, the run index). */
enum { AS_FAKE_QUIET = 0, AS_FAKE_FIRST, AS_FAKE_ALWAYS };
typedef struct {
    int on;
    int mode;               /* AS_FAKE_QUIET: no attempt noisy; _FIRST: only a shard's first
                             * attempt (attempt 0); _ALWAYS: every attempt */
    double shards;          /* fraction of shards hit, chosen by the hash of their table ids
                             * (1: all) */
    double factor;          /* > 1 */
    int calib_noisy;        /* the quiet-machine check's runs are noisy too */
    double drift;           /* > 1: every timed run of the session's group number g
                             * (as_bench_session_run_group calls, counted from 0) is also
                             * multiplied by 1 + (drift - 1) u_g, u_g in [0, 1) from a hash of
                             * g: the whole machine slower for a while, alike for the group's
                             * shards (0: off) */
    int64_t spike_group[8]; /* spike=G:F: the last shard of group number G (where benchnoise
                             * times the reference shard) has every timed run multiplied by
                             * spike (a reference measurement that failed: far outside what
                             * drift can be); spike=G/H/...:F (up to 8 groups); spike=all:F:
                             * of every group (nspike -1) */
    int nspike;
    double spike;
} as_bench_fake;
/* parse "ITEM[,ITEM...]": quiet | first | always, shards=P (0..1), factor=F (1..1e6),
 * calib=quiet|noisy, drift=F (1..1e6), spike=G[/H...]:F (group numbers >= 0, up to 8, or all; F in 1e-6..1e6). 0, or -1 with
 * err */
int as_bench_fake_parse(const char *spec, as_bench_fake *f, char *err, size_t errlen);
/* the multiplier the fake timer applies to timed run `run` of `attempt` of the shard ids[0..n)
 * (1 when that attempt is quiet); exposed for tests */
double as_bench_fake_factor(const as_bench_fake *f, const int64_t *ids, int64_t n, int attempt, int run);

/* what the timing core tells a timer hook about the timed runs it measured */
typedef struct {
    const int64_t *ids;     /* the shard's tables ids[0..n) */
    int64_t n;
    int attempt;            /* as_bench_session_run_attempt's attempt */
    int64_t lookups;        /* the shard's lookups */
    int64_t group;          /* the session's group number (run_group calls, from 0) */
    int calibrating;        /* the runs are the quiet-machine check's (CUDA: a shard) */
    int last;               /* the shard is its group's last (benchnoise's reference shard,
                             * when there is one) */
} as_bench_timed;
/* A timer hook (a session's; NULL functions: the real timer). runs: may replace the R timed
 * runs' forward, backward and total milliseconds of a shard; calib_run: run i of the CPU's
 * quiet-machine check. Each returns 1 when it replaced the times, 0 when it left them. */
typedef struct {
    int (*runs)(const void *ctx, const as_bench_timed *t, double *fw, double *bw, double *tot, int R);
    int (*calib_run)(const void *ctx, int i, double *ms);
    const void *ctx;
} as_bench_timer;
/* the hook of fake timer f (f NULL: the real timer); f is read at every call (its `on`
 * included), so it must outlive the session */
void as_bench_fake_timer(const as_bench_fake *f, as_bench_timer *t);

#endif
