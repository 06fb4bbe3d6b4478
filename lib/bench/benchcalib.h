/* benchcalib.h - the micro-benchmark's quiet-machine check (bench.h's sessions): a fixed
 * calibration timed a few times, other processes' use of this process's CPUs, the verdict
 * and its line. */
#ifndef AS_BENCHCALIB_H
#define AS_BENCHCALIB_H

#include <stddef.h>

typedef struct as_bench_session as_bench_session;   /* bench.h */

/* The quiet-machine check: before measuring, time a fixed calibration a few times and
 * look at the spread (and, on the CPU, at how much of this process's CPUs other processes
 * used meanwhile, from /proc/stat). CPU: a fixed floating-point chain on the session's
 * threads (OpenMP), 2 warm-up + 30 timed runs of about 1-2 ms each; CUDA: a small shard of
 * the pool (its first tables, up to 4), 2 warm-up + 20 timed runs with events. */
typedef struct {
    char what[96];          /* what was timed */
    int runs, trim;
    double median_ms;       /* of one run */
    double spread;          /* as as_stats_trimmed_spread (NaN: could not time) */
    double slowest;         /* slowest run / median */
    double other_cpu;       /* CPU: fraction of the CPUs this process may use that other
                             * processes kept busy during the check (NaN: unknown, or the
                             * fake timer, or CUDA) */
    int ncpu;               /* CPUs this process may use */
    int loaded;             /* the verdict: spread above AS_CALIB_SPREAD_MAX or other_cpu
                             * above AS_CALIB_OTHER_MAX */
} as_bench_calib;
#define AS_CALIB_SPREAD_MAX 0.05
#define AS_CALIB_OTHER_MAX 0.25
/* the verdict from c's spread and other_cpu (NaN ones do not count) */
int as_bench_calib_loaded(const as_bench_calib *c);
/* 0, or -1 with err (a CUDA error; nothing measured) */
int as_bench_calibrate(as_bench_session *s, as_bench_calib *out, char *err, size_t errlen);
/* one line: "quiet-machine check: <what>: 30 runs, median 1.23 ms, spread 0.8 %, slowest
 * 1.05x the median; other processes used 3 % of 2 CPUs: quiet" ("looks loaded" with why) */
void as_bench_calib_line(char *buf, size_t len, const as_bench_calib *c);

#endif
