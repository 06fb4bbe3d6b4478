/* benchnoise.h - noise-aware measurement on top of bench.h's protocol.
 * Dimension letters: T tables, K shards.
 *
 * A window of shards is measured once each (round 0), in groups measured together in
 * interleaved rounds (as_bench_session_run_group; as_noise_group_end_fit: whole units, as
 * many as the interleave and the memory budget allow); then the retry units
 * with a shard whose relative spread (as_stats_trimmed_spread: population std / mean of the runs the
 * trimmed mean keeps) is above the threshold are measured again, in window order and groups
 * of their own, in round 1; then those still above it in round 2, and so on, `retries`
 * rounds at most. A retry unit is a unit of jobs (a plan's shards) when interleave > 1, so
 * that a plan's kept figures come from one group and keep their ratios; else every shard
 * alone. A burst of load on the machine thus meets a unit's attempts at different times (a
 * whole window's measurements apart) rather than all of them at once. A retry unit keeps
 * the figures of its attempt with the lowest largest spread over its shards (the first of
 * equal ones), all its shards the same attempt: that attempt's trimmed means, statistics,
 * spreads and devices; `attempts` counts them all, `busy_ms` and `wall_ms` are summed over
 * all, and `noisy` is set where the kept spread is still above the threshold. A shard that
 * could not be measured (ok = 0) or whose spread is undefined (fewer than 2 kept runs) asks
 * for no re-measurement and is never noisy; an attempt in which a shard of the unit failed,
 * or none has a spread, never replaces a measured one.
 *
 * Drift: the machine's speed moves over seconds to minutes (other tenants, clocks), more
 * than the noise of one shard's runs. A plan's shards share one group and so keep their
 * ratios, but shards of different groups (a cost dataset, plans compared by speedup) do
 * not. With a reference shard (ref_n > 0) every group also times that same shard in its
 * rounds; at the end every result is divided by its group's reference cost over the run's
 * reference level (as_bench_result_scale: `drift`). The level, *ref_base, is set by the
 * first call that finds it 0 and measures a quiet reference: the median of that call's
 * quiet reference costs (spread not above the threshold); later calls (windows) keep it, so
 * a run's costs share one scale. A shard whose group's reference was measured but noisy is
 * measured again in the rounds like a noisy shard (else it would sit on another scale than
 * its plan's other shards), and a retry unit keeps the attempt whose reference corrects it
 * best (quiet, then noisy, then none: the worst of its shards), then the one with the lowest
 * largest spread; one left with a noisy reference is corrected by it all the same. A shard
 * whose group's reference failed, or measured while there is no level, keeps its raw times
 * (drift NaN).
 *
 * Memory: a group holds whole units that fit the budget together with the reference shard,
 * each table's weights once. A unit that does not fit alone (a plan whose tables together
 * pass the budget) is a group of its own, which as_bench_session_run_group measures in
 * consecutive parts that fit, one after another: its shards' `together` counts their part,
 * the reference is timed with the last part only (the earlier parts are corrected by it
 * too), and re-measured it is still a retry unit: all its shards again, part by part, all
 * keeping the same attempt. Its shards then keep one attempt but were not timed in the same
 * rounds: a burst of load during one part is not shared by the others. */
#ifndef AS_BENCHNOISE_H
#define AS_BENCHNOISE_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

typedef struct {
    double threshold;   /* spread above which a shard is re-measured and flagged; 0: neither */
    int retries;        /* re-measuring rounds at most (0: flag, never re-measure) */
    /* progress of the rounds (may be NULL): called with as_noise_measure's ctx after each
     * re-measurement, k of the m shards this round re-measures (1 <= k <= m) */
    void (*retried)(void *ctx, int round, int64_t k, int64_t m);
    int interleave;     /* shards measured together (as_bench_session_run_group) at most,
                         * but a unit is never split (as_noise_group_end; only the memory
                         * budget splits one, as_noise_group_end_fit); <= 1: one at a time */
    const int64_t *ref_ids;     /* the reference shard's tables (above); NULL: none */
    int64_t ref_n;
    double *ref_base;   /* the run's reference level in ms, in and out (required with a
                         * reference; 0 until set) */
    double drift_bound; /* a group's reference cost over the level outside [1/b, b] is a
                         * failed measurement, not drift (b > 1; <= 1: no bound; as-bench's
                         * default AS_NOISE_DRIFT_BOUND) */
    int64_t *refused;   /* out (may be NULL): the groups whose reference stayed outside
                         * the bound (their shards left uncorrected) are added to it */
    double *own_level;  /* in and out (may be NULL): the run's own reference level, which
                         * the bound judges by when a call has too few references of its own
                         * (0 until the first call sets it) */
} as_noise_cfg;

/* The drift bound: the machine's speed moves by tens of per cent over minutes on a shared
 * VM (quiet runs of the project's 2-core VM corrected by 0.75x-1.84x), but a reference shard
 * measured at 0.44x or 245x the run's level (seen with the machine busy) is a broken
 * measurement, and dividing a group's costs by it wrecks them (a cost model fitted on such
 * costs had a held-out R² of -0.64). Outside [1/2, 2] the group's reference is refused: the
 * group's shards ask to be measured again in the re-measuring rounds (as a noisy reference
 * does); one whose kept attempt still has it keeps its raw times, drift nil and
 * `drift_refused` true in its record. The level it is judged against is local in time: the
 * median of this call's (an as-bench window's) first-round quiet reference costs when there
 * are at least AS_NOISE_DRIFT_LOCAL of them, else the run's own level (the first call's
 * median, kept in *own_level); never the level corrected to, which may be another run's
 * (--reference-level): a whole run slower than an earlier one is drift, which the correction
 * is for, and so is a machine that speeds up 2.5x over a run (seen on the project's VM on a
 * busy day: judged against the first window's level, 76 sound groups were refused). */
#define AS_NOISE_DRIFT_BOUND 2.0
#define AS_NOISE_DRIFT_LOCAL 3
/* whether factor f (a reference cost over the level) is outside bound b (b > 1) */
int as_noise_drift_out(double f, double b);

/* the automatic reference shard: up to AS_NOISE_REF_TABLES of the ids[0..n) (any order,
 * distinct), those at evenly spaced positions of their ascending order (positions
 * floor((2i+1) n / 2m), i < m = min(n, AS_NOISE_REF_TABLES)), into out, ascending. Returns m. */
#define AS_NOISE_REF_TABLES 4
int64_t as_noise_ref_auto(const int64_t *ids, int64_t n, int64_t out[AS_NOISE_REF_TABLES]);
/* the automatic reference of the table data p (as-bench --reference auto): as_noise_ref_auto
 * over the ids of all its tables. Returns m (0: no tables). */
int64_t as_noise_ref_pool(const as_bpool *p, int64_t out[AS_NOISE_REF_TABLES]);

/* the default threshold: 10 % (the runs' spread; see docs/BENCHMARKS.md) */
#define AS_NOISE_THRESHOLD 0.10
#define AS_NOISE_RETRIES 2
/* as_noise_warning's limit: warn when more than this fraction of the shards stays noisy */
#define AS_NOISE_WARN_FRACTION 0.10

/* one shard of a window: its tables (the caller's memory), the unit of work it belongs to
 * (a plan's shards share one; the jobs of a unit are consecutive) and, out, its kept result */
typedef struct {
    const int64_t *ids;
    int64_t n;
    as_bench_result r;
    int64_t unit;
} as_noise_job;

/* The groups of shards measured together: over the jobs jobs[sel[0..m)] (sel NULL: jobs
 * 0..m-1 in order), the group starting at position i ends before the returned position. A
 * group holds whole units: the unit at i (however many shards it has), then the units that
 * follow as long as the group stays within `interleave` shards. interleave <= 1: every
 * shard alone. */
int64_t as_noise_group_end(const as_noise_job *jobs, const int64_t *sel, int64_t m, int64_t i, int interleave);
/* The groups as_noise_measure measures: as_noise_group_end's, then cut to the memory budget
 * of session s (as_bench_session_fits): the group starting at position i holds as many
 * whole units as fit held together with the reference shard (nc's, when it has one), each
 * table's weights once; at least the unit at i, which as_bench_session_run_group measures in
 * parts when it does not fit alone. Without a budget (and on CUDA) as_noise_group_end. */
int64_t as_noise_group_end_fit(as_bench_session *s, const as_noise_job *jobs, const int64_t *sel, int64_t m, int64_t i,
                               const as_noise_cfg *nc);
/* the default for interleave: a plan of 8 shards, or 16 sampled shards, per group */
#define AS_NOISE_INTERLEAVE 16

/* Measure jobs[0..n) on session s as above. first_done (may be NULL) is called after each
 * job's first attempt, in order (for progress). Returns the number of re-measurements made;
 * *retry_s (may be NULL) gets the wall seconds the re-measuring rounds took added. */
int64_t as_noise_measure(as_bench_session *s, as_noise_job *jobs, int64_t n, const as_noise_cfg *nc,
                         void (*first_done)(void *ctx, int64_t i), void *ctx, double *retry_s);
/* Passes: the whole input (a window, as-bench --passes) measured n times, minutes apart,
 * each pass with its own rounds, and each shard's results of the passes r[0..n) combined
 * into out: the machine's state (other tenants) can change how shards of different kinds
 * compare for tens of seconds (docs/BENCHMARKS.md), which neither a shard's runs nor the
 * reference shard average out, but passes at different times do. Of the passes that
 * measured the shard (ok), out gets the geometric means of cost_ms, fwd_ms, bwd_ms,
 * median_ms, gbps, ref_ms and drift (drift and ref_ms NaN unless every such pass has
 * one), the smallest min_ms and largest max_ms, the arithmetic means of rel_std and of
 * the defined spreads (NaN: none), noisy and ref_noisy when any pass has them, attempts,
 * busy_ms and wall_ms summed over all passes, passes = how many were combined, and the
 * rest (together, device, ...) from the first of them. None ok: out = r[0] (its error). */
void as_noise_passes_combine(as_bench_result *out, const as_bench_result *r, int n);

/* whether result r is noisy under nc (ok, finite spread, threshold > 0 and spread above it) */
int as_noise_is_noisy(const as_bench_result *r, const as_noise_cfg *nc);

/* the median of the tally's spreads (NaN when none) */
double as_noise_median_spread(const as_bench_tally *t);
/* one line: "noise: N shards with a spread, median M %; R re-measured (E extra attempts),
 * K noisy (spread above X % after up to N re-measurements)"; with retry_s >= 0 the extra
 * attempts' time follows them: "(E extra attempts, S s)" */
void as_noise_summary(char *buf, size_t len, const as_bench_tally *t, const as_noise_cfg *nc, double retry_s);
/* a warning line (returns 1) when more than AS_NOISE_WARN_FRACTION of the shards with a
 * spread stayed noisy; else 0 and an empty buf */
int as_noise_warning(char *buf, size_t len, const as_bench_tally *t, const as_noise_cfg *nc);

#endif
