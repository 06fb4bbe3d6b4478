/* bench.h - the micro-benchmark: time the fused embedding-bag op (embbag.h) of a shard
 * with the paper's protocol (W warm-up iterations, R timed runs each after a cache flush,
 * drop the `trim` highest and lowest, mean of the rest) on the CPU or a CUDA device.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables, K shards.
 *
 * A session (one per process) measures any number of shards of one pool: it keeps its
 * buffers and grows them on demand, checks each table once, and on a GPU keeps the pool's
 * offsets and indices on the device (as_eb_gpu_ctx) and generates each shard's weights and
 * gradients there. The data a shard is measured on is the same on both devices: bags
 * concatenated from the pool tables, weights and gradients from ebgen.h's counter-based
 * hash of (seed, table id, element), in as_ebg_layout's layout.
 *
 * Beside it: the pool of table data (benchpool.h), the fake timer behind the session's timer
 * hook (benchfake.h), the quiet-machine check (benchcalib.h). */
#ifndef AS_BENCH_H
#define AS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "benchfake.h"   /* as_bench_fake: the fake timer (tests) */
#include "benchpool.h"   /* as_bpool: the table data a session measures */
#include "costrec.h"
#include "embbag.h"
#include "piece.h"
#include "stream.h"

typedef struct {
    int warmup, runs, trim;
    int cuda;               /* 0: CPU, 1: CUDA */
    int device;             /* CUDA device */
    int threads;            /* CPU threads (<= 0: all) */
    float lr;
    uint64_t seed;
    uint64_t max_bytes;     /* CPU: memory budget of the measurement: the pool's table data,
                             * the cache-flush sweep and the shards held at once (0: no limit;
                             * as_bench_session_run_group); as-bench's default is
                             * as_bench_default_budget() */
    uint64_t group_bytes;   /* CPU: at most this much shard data held by a part of more than
                             * one shard (0: what max_bytes leaves); a shard alone may use all
                             * that max_bytes leaves. as-bench's default: 1/AS_BENCH_GROUP_SHARE
                             * of the memory available at the start */
    uint64_t flush_bytes;   /* CPU cache-flush sweep (0: 2 x the last-level cache, at least 64 MiB) */
    int per_shard_upload;   /* CUDA: 1 = upload each shard's table data when it is set up; 0 = keep
                             * the pool's data on the device when it fits (the default) */
    const as_bench_fake *fake;  /* NULL: the real timer; else the fake one (tests) */
    int64_t row_cap;        /* the pool's tables above this many rows are measured capped
                             * (as_bpool_cap_rows, made by the caller); 0: none. Written into
                             * the records (row_cap) */
    /* what the shards train (ebopt.h; on CUDA the typed kernels): wtype the weight type of every table
     * (as_eb_dtype; 0 fp16, the paper's protocol) or AS_BENCH_WTYPE_TABLES, each table's
     * own data_type (its table record's; fp16 without one); optim the optimizer (0: exact
     * SGD) with eps AS_BENCH_EPS and Adam's betas AS_BENCH_BETA1/2 (FBGEMM's defaults).
     * Written into the records (weights_type, optimizer) when not fp16 with SGD */
    int wtype;
    as_eb_optim optim;
} as_bench_cfg;

#define AS_BENCH_WTYPE_TABLES 100
#define AS_BENCH_EPS 1e-8f
#define AS_BENCH_BETA1 0.9f
#define AS_BENCH_BETA2 0.999f

/* the most passes (as-bench --passes) a result keeps apart */
#define AS_BENCH_PASS_MAX 16

typedef struct {
    int ok;                 /* 0: not measured (error says why) */
    char error[256];
    double cost_ms;         /* trimmed mean of fwd+bwd */
    double fwd_ms, bwd_ms;  /* trimmed means of each phase */
    double median_ms, min_ms, max_ms, rel_std;
    double spread;          /* population std / mean of the runs the trimmed mean keeps (of
                             * fwd+bwd); NaN when fewer than 2 runs are kept (nil in records) */
    int attempts;           /* protocol runs made for the shard (1: not re-measured) */
    int passes;             /* measurements of the whole input combined into these figures
                             * (as_noise_passes_combine; 0 or 1: one) */
    int npass;              /* passes made (as_noise_passes_combine: measured or not; 0: one) */
    double pass_ms[16];     /* with npass > 1: each pass's cost_ms, drift-corrected as that
                             * pass was (NaN: not measured in that pass); AS_BENCH_PASS_MAX */
    int together;           /* shards measured together with it in interleaved rounds,
                             * itself included (1: alone; as_bench_session_run_group) */
    int noisy;              /* spread still above the threshold after the retries */
    double ref_ms;          /* the reference shard's cost measured in this shard's group
                             * (benchnoise.h; NaN: no reference, or it failed) */
    int ref_noisy;          /* that reference's spread was above the noise threshold */
    double drift;           /* the factor the times were divided by (as_bench_result_scale):
                             * the group's reference cost / the run's reference level; NaN:
                             * not corrected (nil in records) */
    double ref_level;       /* the level the drift bound judged that reference by (benchnoise.h;
                             * 0: none) */
    int ref_bad;            /* that reference's factor (its cost / ref_level) lay outside
                             * the drift bound (benchnoise.h): a failed measurement, not
                             * drift; the factor is not applied (drift NaN) */
    double gbps;            /* FBGEMM formula: (fwd bytes + 2 x fwd bytes) / total time */
    int64_t lookups, batch, sum_dim;
    int64_t capped;         /* the shard's tables measured over capped rows (as_bpool_cap_rows) */
    char wtype[8];          /* its tables' weight type ("fp16", "fp32", "bf16"; "mixed") */
    uint64_t bytes;         /* memory the shard needs alone, as a part holds it: its tables'
                             * weights (each start on a cache line), output, gradient, bags,
                             * the backward's sort buffers; what the budget is checked against */
    char device[128];
    int threads;
    int sm_clock_mhz;
    /* not in the cost record: for the measuring loop's summary (as_bench_tally) */
    double busy_ms;         /* kernel time of all warm-up iterations and timed phases (CUDA
                             * events; CPU: the as_now()-timed calls), flushes not included */
    double wall_ms;         /* wall time of the whole measurement call, setup included */
    /* CUDA: device time outside busy_ms (as_eb_gpu_overhead): the shard's set-up kernels, the
     * cache flushes before its timed runs, and its share of its group's reference shard
     * (benchnoise: the reference's busy + set-up + flush time over the group's shards) */
    double setup_ms, flush_ms, refdev_ms;
} as_bench_result;

typedef struct as_bench_session as_bench_session;

/* whether the kernels measure every table of pool p under c->wtype (AS_BENCH_WTYPE_TABLES:
 * each table's data_type, fp16 without one; the kernels measure fp32, fp16 and bf16): 0, or
 * -1 with err naming the first table they do not ("table 7: its weights are int8; ...").
 * Bad data (as-bench exits 1), checked before a session: as_bench_session_new fails on it too. */
int as_bench_check_types(const as_bench_cfg *c, const as_bpool *p, char *err, size_t errlen);

/* a session measuring shards of pool p (which must outlive it, unchanged) with config c
 * (copied). On CUDA this sets up the device context (and uploads the pool when it stays on
 * the device). NULL with err when the device cannot be set up. */
as_bench_session *as_bench_session_new(const as_bench_cfg *c, const as_bpool *p, char *err, size_t errlen);
/* Benchmark the shard made of tables ids[0..n). Never exits (but out of host memory, the
 * rule of common.h); a shard that cannot run (does
 * not fit, bad data) gives ok = 0 and a reason. attempts = 1, noisy = 0 (the re-measuring
 * rounds of benchnoise.h set them). */
void as_bench_session_run(as_bench_session *s, const int64_t *ids, int64_t n, as_bench_result *r);
/* the same, as attempt number `attempt` (0 = the first) of the shard: only the fake timer
 * cares which */
void as_bench_session_run_attempt(as_bench_session *s, const int64_t *ids, int64_t n, int attempt, as_bench_result *r);
/* one shard of a group: tables ids[0..n), measured as attempt number `attempt` (0 = the
 * first; only the fake timer cares which) */
typedef struct {
    const int64_t *ids;
    int64_t n;
    int attempt;
} as_bench_shardref;
/* Benchmark the shards sh[0..k) together, results in r[0..k). CPU: every shard is set up
 * (its data held at once) and warmed up, then the R timed runs go in interleaved rounds:
 * round i runs each shard once (after a cache flush), starting one shard further along
 * each round. A burst of load on the machine then falls on every shard of the group
 * alike instead of on whichever shard was being timed, so the shards' costs keep their
 * ratios (a plan's balance) although their absolute level moves.
 *
 * Memory: the shards set up together hold each of their tables' weights once (a table two
 * shards name is one copy, which both shards' SGD updates change, in the rounds' order; a
 * table one shard names twice is two copies), besides each shard's output, gradient and
 * bags, and one set of sort buffers (as_bench_session_need counts the same). When that
 * passes the budget (max_bytes, when set, and group_bytes for several shards held at once;
 * as_bench_session_group_room) the group is measured in parts: runs of
 * consecutive shards that fit (a shard alone always may: one that does not is ok = 0,
 * "does not fit"), one part after another, each part's data replacing the previous one's,
 * so the data held never pass the budget. `together` = the shards of the part (1: alone).
 * A shard that cannot run gives ok = 0 and a reason and leaves the others be. CUDA: one
 * shard after another, each with the whole protocol (as as_bench_session_run); the
 * device's memory holds one shard at a time (and the pool when it stays resident), and the
 * context refuses a shard that does not fit in the device's free memory. */
void as_bench_session_run_group(as_bench_session *s, const as_bench_shardref *sh, int k, as_bench_result *r);
/* the bytes the shards sh[0..k) need held together on the CPU (above; shards that cannot be
 * laid out count nothing; 0 for none) */
uint64_t as_bench_session_need(as_bench_session *s, const as_bench_shardref *sh, int k);
/* whether they fit the session's budget together: 1 without a budget, and on CUDA (one
 * shard at a time) */
int as_bench_session_fits(as_bench_session *s, const as_bench_shardref *sh, int k);
/* the budget (max_bytes; 0: none, and always 0 on CUDA). It bounds all the session holds
 * for measuring: the process itself (AS_BENCH_PROCESS_BYTES), the pool's table data
 * (as_bpool_bytes), the CPU's cache-flush sweep (as_bench_flush_bytes) and the shard data
 * held at once; */
uint64_t as_bench_session_budget(const as_bench_session *s);
/* what it leaves for the shard data (0: nothing, or no budget): a shard alone may use all of
 * it */
uint64_t as_bench_session_room(const as_bench_session *s);
/* what a part of several shards may hold (the room, or group_bytes when less; 0: no budget) */
uint64_t as_bench_session_group_room(const as_bench_session *s);
/* the memory the process itself needs beside what it measures (program, libraries, threads'
 * stacks, output buffers); it comes off the budget too */
#define AS_BENCH_PROCESS_BYTES ((uint64_t)32 << 20)
/* as-bench's default group budget (group_bytes): this share of the memory available */
#define AS_BENCH_GROUP_SHARE 8
/* bytes of the CPU's cache-flush sweep under c (0 on CUDA) */
uint64_t as_bench_flush_bytes(const as_bench_cfg *c);
/* the memory available now (MemAvailable of /proc/meminfo), else the physical memory; 0 when
 * neither can be read. as-bench's defaults: max_bytes half of it, group_bytes
 * 1/AS_BENCH_GROUP_SHARE */
uint64_t as_bench_mem_available(void);
typedef struct {
    int64_t shards;         /* shards set up so far */
    int64_t grows;          /* times a workspace buffer was (re)allocated */
    uint64_t bytes;         /* bytes the workspace holds (host, or device for CUDA) */
    int resident;           /* CUDA: the pool's data is on the device */
} as_bench_session_info;
/* the pool the session measures */
const as_bpool *as_bench_session_pool(const as_bench_session *s);
void as_bench_session_info_get(const as_bench_session *s, as_bench_session_info *info);
/* what the quiet-machine check (benchcalib.h) needs of a session: its configuration, its
 * CPU threads, its timer hook (benchfake.h) */
const as_bench_cfg *as_bench_session_cfg(const as_bench_session *s);
int as_bench_session_threads(const as_bench_session *s);
const as_bench_timer *as_bench_session_timer(const as_bench_session *s);
/* the check's shard (CUDA): as as_bench_session_run with these protocol values instead of
 * the session's, its times given to the timer hook as the check's (calibrating), and not
 * counted among the shards measured */
void as_bench_session_run_check(as_bench_session *s, const int64_t *ids, int64_t n, int warmup, int runs, int trim,
                                as_bench_result *r);
/* tests: the data of the last shard measured (ok) by the session, valid until its next run:
 * the shard (concatenated bags; on CUDA as_ebg_layout's layout, on the CPU its part's weight
 * layout: as_ebg_layout's for a shard measured alone), the weights after the measurement's
 * updates, the gradient, the last forward's output. On CUDA they are downloaded from the
 * device first. 0, or -1 with err (no shard measured yet, a CUDA error) */
int as_bench_session_last(as_bench_session *s, as_eb_shard *shard, const uint16_t **W, const float **grad,
                          const float **out, char *err, size_t errlen);
/* tests: as as_bench_session_last for shard j of the last as_bench_session_run_group call
 * (CPU; on CUDA only its last shard); -1 with err when that shard was not measured, or its
 * data went with its part (the group was measured in parts and a later part replaced them).
 * On the CPU the shard's w_off are where its tables lie in its part's weight buffer W,
 * which the part's other shards share */
int as_bench_session_group_data(as_bench_session *s, int j, as_eb_shard *shard, const uint16_t **W,
                                const float **grad, const float **out, char *err, size_t errlen);
/* CPU: let go of the memory shards are laid out in (the arena and the sort buffers), so
 * that the next group is set up in fresh allocations (other physical pages: as-bench
 * --passes samples their placement too); nothing on CUDA */
void as_bench_session_refresh(as_bench_session *s);
void as_bench_session_free(as_bench_session *s);

/* the figures of a measuring loop: add every shard's result, then summarise with the
 * loop's wall time. busy fraction = sum of busy_ms / wall time; shards/s = shards / wall.
 * Zero-initialise; as_bench_tally_free frees the kept spreads. */
typedef struct {
    int64_t shards, ok;
    double busy_ms;
    double setup_ms, flush_ms, refdev_ms;   /* device time outside busy (as_bench_result's) */
    /* noise (benchnoise.h's summary): over the measured shards */
    int64_t remeasured;     /* shards with attempts > 1 (> passes when combined) */
    int64_t extra;          /* attempts beyond the first (of each pass), summed */
    int64_t noisy;          /* shards flagged noisy */
    int64_t nspread, capspread;
    double *spreads;        /* [nspread] the kept attempts' spreads (finite ones) */
} as_bench_tally;
void as_bench_tally_add(as_bench_tally *t, const as_bench_result *r);
void as_bench_tally_free(as_bench_tally *t);
double as_bench_busy_fraction(const as_bench_tally *t, double wall_s);
double as_bench_shards_per_s(const as_bench_tally *t, double wall_s);
/* one line: "N shards in X s: Y shards/s; device busy Z % (warm-up + timed kernels S s)"
 * (and the count of shards not measured when there are any); with device time outside busy
 * (CUDA), what it was: set-up kernels, cache flushes, reference shards, and the rest of the
 * wall time (host work and gaps between kernels) */
void as_bench_summary(char *buf, size_t len, const as_bench_tally *t, double wall_s);

/* Resolve --device for measurement with as_device_parse (device.h: the strings and errors
 * of every tool); sets c->cuda and c->device. Returns 0, or the exit code (2 not a device
 * name, 3 no such device) with err. */
int as_bench_device(const char *spec, as_bench_cfg *c, char *err, size_t errlen);

/* the spread of a shard's passes: population std / mean of the finite, positive v[0..n)
 * (NaN: fewer than 2) */
double as_bench_pass_spread(const double *v, int n);
/* the measurement's fields of r's `cost` record (lib/records/costrec.h: cost_ms to error, and
 * weights_type and optimizer when c measures other than fp16 weights with SGD) into rec, its
 * strings and pass_ms pointing into r and c; the caller sets the shard, origin, task, alg
 * and reference */
void as_bench_costrec(as_costrec *rec, const as_bench_cfg *c, const as_bench_result *r);
/* divide r's times (cost, fwd, bwd, median, min, max) by f > 0, multiply its gbps by f and
 * set drift = f (spread and rel_std are ratios: unchanged); nothing for a failed result */
void as_bench_result_scale(as_bench_result *r, double f);

/* a human name for the CPU ("cpu: <model name> (N threads)") */
void as_cpu_name(char *buf, size_t len, int threads);

#endif
