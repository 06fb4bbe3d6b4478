/* benchrun.h - as-bench's run: its units of work (shards sampled from the table pool, or the
 * plan and shard records of its input), the tables they need, and their measurement window
 * by window with benchnoise.h's rounds, written in order as `cost` records and as plans
 * passed on with their shards' costs (docs/FORMAT.md). Dimension letters: T tables, K shards.
 *
 * The units are numbered 0, 1, ... in order (samples: the singles, then the draws; input:
 * its plan and shard records, other records are not units); part I of N (1 <= I <= N)
 * takes the units u with u % N == I - 1. A window is `window` units of the part (0: all of
 * them): their shards are measured once each, then the noisy ones re-measured in rounds
 * (as_noise_measure), then the window's records are written. Records come out in input
 * order whatever the window. */
#ifndef AS_BENCHRUN_H
#define AS_BENCHRUN_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "benchnoise.h"
#include "stream.h"
#include "planrec.h"

/* ---- sampled shards (--sample, --sample-from, --singles) ------------------------------- */

typedef struct {
    int64_t n;              /* shards */
    int64_t nsingles;       /* the first nsingles are single tables (origin "single") */
    int64_t **ids;          /* [n] each shard's table ids, in draw order */
    int64_t *len;           /* [n] */
    int64_t maxid;          /* the largest table id of any shard (-1: none) */
    as_piece **pc;          /* NULL, or [n]: each shard's pieces (NULL: its tables whole),
                             * parallel to ids (as_bsample_pieces) */
} as_bsample;

/* The sampling pool: *out (malloc'd) = the ids of p's tables in p's order; with nfrom > 0
 * only those listed in from[0..nfrom), each of which must be one of p's tables: else -1
 * with err "table ID is not in NAME" (name: the pool's file, for the message). *n = the
 * count. 0, or -1 with err (nothing allocated). */
int as_bsample_pool(int64_t **out, int64_t *n, const as_bpool *p, const int64_t *from, size_t nfrom,
                    const char *name, char *err, size_t errlen);

/* Draw count shards from ids[0..npool) (npool >= 1) with seed (stream "sample"): shard i
 * has k tables, k uniform in 1..min(max_tables, npool), then its tables are the first k
 * steps of a Fisher-Yates shuffle of ids (in ids' order, anew for every shard): position j
 * swapped with one uniform in j..npool-1. singles: first every id alone, ascending, then
 * the count draws (s->n = npool + count, s->nsingles = npool). Free with as_bsample_free. */
void as_bsample_draw(as_bsample *s, const int64_t *ids, int64_t npool, int64_t count, int64_t max_tables,
                     uint64_t seed, int singles);
/* the most column pieces a drawn piece's table is cut into (halves, then quarters: 2, 4):
 * as_bsample_pieces' and as_bsample_col_singles' column levels (make plan's SPLIT_COLS) */
#define AS_BSAMPLE_MAX_COLS 4

/* Pieces into the cost dataset: every entry of the draws (not the singles) becomes, with
 * probability frac, a piece of its table (meta: the tables' rows and dims): one of its
 * levels drawn uniformly, then one piece of it uniformly. Levels: the column halvings into
 * 2 .. AS_BSAMPLE_MAX_COLS equal pieces whose width stays a multiple of 4, and the row blocks of
 * as_piece_row_blocks for each count of blocks[0..nblocks) the table has rows for. A table
 * with no level stays whole. Seeded by seed (stream "pieces"); frac 0 draws nothing. */
void as_bsample_pieces(as_bsample *s, const as_bpool *meta, double frac, const int64_t *blocks, int nblocks, uint64_t seed);
/* as-bench --col-singles N: after the draws, the first column half and quarter (while the
 * width stays a multiple of 4) of the N tables of ids[0..npool) with the most lookups x dim
 * (ties: the lower id; tables whose dim is not a multiple of 8 have none), each a shard alone,
 * half then quarter, heaviest table first: the cost model sees what the costliest tables' column
 * splits cost alone (on a CPU a half costs far more than half its table), which the random
 * draws rarely show. Returns the shards added. */
int64_t as_bsample_col_singles(as_bsample *s, const as_bpool *meta, const int64_t *ids, int64_t npool, int64_t top);
/* as-bench --draw-only: every shard of s (before as_bsample_tables) to w as a `shard` record,
 * {"kind": "shard", "tables": [ids]} and, where it has pieces, "pieces" (one per table,
 * whole ones included), in order: what as-bench would measure, to measure later as input */
void as_bsample_write(as_writer *w, const as_bsample *s);
void as_bsample_free(as_bsample *s);
/* Load into p (free with as_bpool_free) the tables of FILE that the shards of part I/N of
 * s need, and extra[0..nextra) (the reference shard's); the pieces of s are made in p
 * (as_bpool_piece) and their entries of s->ids replaced by the pool's piece ids. 0, or -1
 * with err (as_bpool_load's; "table ID is not in the table data FILE") */
int as_bsample_tables(as_bpool *p, const char *file, const as_bsample *s, int64_t part_i, int64_t part_n,
                      const int64_t *extra, int64_t nextra, char *err, size_t errlen);

/* ---- the input's records ------------------------------------------------------------------ */

enum { AS_BREC_OTHER = 0, AS_BREC_PLAN = 1, AS_BREC_SHARD = 2 };
typedef struct {
    char *raw;              /* the record's msgpack bytes */
    size_t len;
    int kind;               /* AS_BREC_* */
} as_brec;
typedef struct {
    as_brec *rec;           /* [n] the input's records but its headers, in order */
    int64_t n, cap;
    int64_t units;          /* plan and shard records */
    int64_t maxid;          /* the largest table id of any unit (-1: none) */
} as_binput;

/* Read files[0..nfiles) (as_read_records: none = standard input) into in (zeroed first),
 * checking every plan (as_planrec_read) and shard record (`tables`: a list of table ids)
 * once. 0, or -1 with err ("FILE: record N: ..."). Free with as_binput_free. */
int as_binput_read(as_binput *in, char *const *files, int nfiles, char *err, size_t errlen);
void as_binput_free(as_binput *in);   /* NULL: nothing */
/* as-bench --piece-singles: append to in one `shard` record per distinct piece (not a whole
 * table) of its plans, {"kind": "shard", "tables": [id], "pieces": [piece]}, in (id, piece)
 * order, so that each piece is measured alone (its cost record, origin "shard", is the
 * piece's single cost: as-eval's floor of split plans). Returns how many were added. */
int64_t as_binput_add_piece_singles(as_binput *in);
/* Load into p (free with as_bpool_free) the tables of FILE that the units of part I/N of
 * in need, and extra[0..nextra); make the pieces they name and, for each plan's
 * data-parallel tables, each shard's slice of bags (as_plan_dp_bags, as_bpool_slice; none
 * for an empty one). 0, or -1 with err (as_bpool_load's; "table ID is not in the table
 * data FILE"; a piece outside its table) */
int as_binput_tables(as_bpool *p, const char *file, const as_binput *in, int64_t part_i, int64_t part_n,
                     const int64_t *extra, int64_t nextra, char *err, size_t errlen);

/* ---- the measuring loop ------------------------------------------------------------------- */

typedef struct {
    const as_bench_cfg *bench;  /* the session's config (the cost records' protocol fields) */
    as_noise_cfg noise;         /* threshold, retries, interleave, the reference shard (its
                                 * retried hook and ref_base are not used: below, and
                                 * as_brun_stats.ref_base) */
    int64_t part_i, part_n;     /* this run's part (1 of 1: every unit) */
    int64_t window;             /* units per window (0: one window) */
    int passes;                 /* each window measured this many times, each shard's passes
                                 * combined (as_noise_passes_combine; <= 1: once) */
    /* hooks, each may be NULL, called with ctx */
    void *ctx;
    void (*progress)(void *ctx, int64_t units);       /* unit-passes done: units of the windows
                                                       * done x passes, plus the units whose
                                                       * first attempts are all made in this
                                                       * window's passes so far */
    void (*retried)(void *ctx, int round, int64_t k, int64_t m);    /* as as_noise_cfg.retried */
    void (*failed)(void *ctx, const int64_t *ids, int64_t n, const char *error);
                                /* a shard that could not be measured, as its record is written */
} as_brun_cfg;

/* what a run measured; zero it first, as_bench_tally_free(&st->tally) after */
typedef struct {
    as_bench_tally tally;       /* every shard written */
    int64_t failed;             /* shards not measured */
    double retry_s;             /* wall seconds of the re-measuring rounds */
    double ref_base;            /* the reference shard's level (ms; 0: none, or not set); set
                                 * above 0 before the run, it is kept (an earlier run's level,
                                 * as-bench --reference-level), else the first window sets it */
    int64_t ndrift;             /* shards written with a drift correction */
    double drift_min, drift_max;    /* their range */
    int64_t refused_groups;     /* groups whose reference stayed outside the drift bound */
    double own_level;           /* the run's own reference level, the drift bound's (benchnoise.h) */
    int64_t nrefused;           /* shards written with drift_refused */
    double refused_min, refused_max;    /* their references' factors (cost / the level judged by) */
} as_brun_stats;

/* the number of units of part I/N among units 0..units-1 */
int64_t as_brun_part_units(int64_t units, int64_t part_i, int64_t part_n);

/* Measure the shards of part I/N of smp on session s and write a `cost` record for each, in
 * order: origin "single" (shard -1) for the singles, "sample" (shard = its draw number)
 * for the draws; task -1, alg nil. */
void as_brun_samples(as_writer *w, as_bench_session *s, const as_brun_cfg *c, const as_bsample *smp,
                     as_brun_stats *st);
/* Measure the units of part I/N of in on session s and write in input order: a shard
 * record gives a `cost` record (origin "shard", its task and id or -1); a plan gives one
 * per shard k with tables (origin "plan", its task and alg, shard k; unplaced tables are not
 * measured), then passes on (as_brun_pack_plan). A plan's data-parallel tables (assign
 * AS_DP) are measured as a job of their own on each shard k whose bags of them are not
 * empty (their slices, as_binput_tables), added to shard k's cost and given no cost record
 * (a slice of the batch is no shape of the cost dataset); a failed one is reported through
 * c->failed. Other records pass through in part 1 only
 * (so that merged parts hold them once); units of other parts are left out. 0, or -1 with
 * err ("internal: ...": a record that changed since as_binput_read checked it). */
int as_brun_input(as_writer *w, as_bench_session *s, const as_brun_cfg *c, const as_binput *in, as_brun_stats *st,
                  char *err, size_t errlen);

/* a reference level (--reference-level L, or an earlier run's level_ms) is a cost in
 * [AS_BRUN_REF_LEVEL_MIN, AS_BRUN_REF_LEVEL_MAX] ms: every cost is divided by the drift, the
 * reference's cost over it, so a level of 1e308 ms would make costs of 1e307 ms */
#define AS_BRUN_REF_LEVEL_MIN 1e-6
#define AS_BRUN_REF_LEVEL_MAX 1e6

/* The reference level of an earlier run: the `reference` of the first cost record of FILE
 * that has one ({"tables": [ids], "level_ms": L}, written by as_brun_samples / as_brun_input
 * when drift correction set a level). Its tables must be ids[0..n) in that order (the same
 * reference shard) and its record's row_cap row_cap (0: none), else the levels are not
 * comparable. 0 with *level = L, or -1 with err (unreadable FILE, a malformed `reference`,
 * another reference shard or row cap, none found). */
int as_brun_ref_level_read(const char *file, const int64_t *ids, int64_t n, int64_t row_cap, double *level, char *err,
                           size_t errlen);

/* Pack plan record rec (a map) passed on with the results r[0..K) of its shards (r[k]
 * NULL: an empty shard; with data-parallel tables, a shard's result is its tables' and its
 * data-parallel slices' added): its other fields in order, then cost_ms (K: the cost, 0 for
 * an empty shard, nil for one not measured), with dp (a plan with data-parallel tables)
 * cost_dp_ms (K: each shard's data-parallel part dp[k], 0 when NULL: none of its bags, nil
 * when not measured), cost_device (the device of the last non-empty shard's result, ""
 * when none), cost_kind "measured", cost_spread (K: the spread, nil when empty, not measured
 * or without one), cost_noisy (K booleans), noise_threshold, cost_pass_ms and
 * cost_pass_spread, cost_row_cap (row_cap > 0: the rows its tables above it were measured
 * over, as-bench --row-cap; else nil), and what the shards trained when it is not fp16 with
 * SGD: cost_weights_type (the measured shards' weight type, "mixed" when they differ) and
 * cost_optimizer (optim's name); these replace any of them the record had (cost_dp_ms and
 * the kind too, when not written). */
void as_brun_pack_plan(msgpack_packer *pk, const msgpack_object *rec, int64_t K, const as_bench_result *const *r,
                       const as_bench_result *const *dp, double threshold, int64_t row_cap, as_eb_optim optim);

#endif
