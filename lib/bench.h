/* bench.h - the micro-benchmark: time the fused embedding-bag op (embbag.h) of a shard
 * with the paper's protocol (W warm-up iterations, R timed runs each after a cache flush,
 * drop the `trim` highest and lowest, mean of the rest) on the CPU or a CUDA device.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables, K shards. */
#ifndef AS_BENCH_H
#define AS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

/* one table's data, loaded from a `table` record */
typedef struct {
    int64_t id, rows, batch, dim, lookups;
    int64_t *offsets;      /* B+1 */
    int32_t *indices;      /* lookups */
} as_btable;

/* a pool of loaded tables, looked up by id */
typedef struct {
    as_btable *t;
    int64_t n, cap;
    int64_t *index;        /* id -> position + 1 (0 = absent), size maxid+1 */
    int64_t maxid;
} as_bpool;

/* Load the table records of FILE whose ids are wanted (want == NULL: all). ids_only: keep
 * only the metadata (no offsets/indices). Returns 0, or -1 with err. */
int as_bpool_load(as_bpool *p, const char *file, const uint8_t *want, int64_t want_n, int ids_only,
                  char *err, size_t errlen);
const as_btable *as_bpool_get(const as_bpool *p, int64_t id);
void as_bpool_free(as_bpool *p);

typedef struct {
    int warmup, runs, trim;
    int cuda;               /* 0: CPU, 1: CUDA */
    int device;             /* CUDA device */
    int threads;            /* CPU threads (<= 0: all) */
    float lr;
    uint64_t seed;
    uint64_t max_bytes;     /* memory budget for one shard (0: no limit) */
    uint64_t flush_bytes;   /* CPU cache-flush sweep (0: 2 x the last-level cache, at least 64 MiB) */
} as_bench_cfg;

typedef struct {
    int ok;                 /* 0: not measured (error says why) */
    char error[256];
    double cost_ms;         /* trimmed mean of fwd+bwd */
    double fwd_ms, bwd_ms;  /* trimmed means of each phase */
    double median_ms, min_ms, max_ms, rel_std;
    double gbps;            /* FBGEMM formula: (fwd bytes + 2 x fwd bytes) / total time */
    int64_t lookups, batch, sum_dim;
    uint64_t bytes;         /* memory the shard needed */
    char device[128];
    int threads;
    int sm_clock_mhz;
} as_bench_result;

/* Benchmark the shard made of tables ids[0..n). Never exits; a shard that cannot run
 * (does not fit, bad data) gives ok = 0 and a reason. */
void as_bench_shard(const as_bench_cfg *c, const as_bpool *p, const int64_t *ids, int64_t n, as_bench_result *r);

/* Resolve --device for measurement: "auto" (a working GPU, else the CPU), "cpu", "cuda",
 * "cuda:N"; sets c->cuda and c->device. Returns 0, or the exit code (2 not a device name,
 * 3 no such device) with err. */
int as_bench_device(const char *spec, as_bench_cfg *c, char *err, size_t errlen);

/* the protocol's statistics over n timings (sorted copy inside); mean of the middle after
 * dropping trim from each end; rel_std over all runs */
void as_bench_stats(const double *v, int n, int trim, double *trimmed_mean, double *median,
                    double *min, double *max, double *rel_std);

/* pack the result fields into an open map (caller counts them: AS_BENCH_RESULT_FIELDS) */
#define AS_BENCH_RESULT_FIELDS 18
void as_bench_pack_result(msgpack_packer *pk, const as_bench_cfg *c, const as_bench_result *r);

/* a human name for the CPU ("cpu: <model name> (N threads)") */
void as_cpu_name(char *buf, size_t len, int threads);

#endif
