/* torchrec.h - `as-plan --alg torchrec`: TorchRec's default embedding sharding planner
 * (EmbeddingShardingPlanner) for one host of K GPUs, training, fused kernels, re-implemented
 * from its documented behaviour as a baseline (nothing of its code is used). Dimension
 * letters: T tables, K shards (= GPUs, world size), B batch, L pooling, D dim, E rows.
 *
 * Options per table (planner/enumerators.py; sharding_plan.py shard sizes):
 *   table_wise   one shard [E, D];
 *   column_wise  D / d shards [E, d], d the smallest divisor of D in [128, D) that is a
 *                multiple of 4 (MIN_CW_DIM 128), else D (then it is table_wise's twin, left
 *                out);
 *   row_wise     K shards of ceil(E / K) rows, shard i on GPU i (an empty last block is
 *                no piece here); needs the features of those row blocks (as-features
 *                --row-pieces K), else the table has no row_wise option.
 * Left out, with why: data_parallel (our plans hold each row once), table_row_wise and
 * table_column_wise (on one host the same figures and placement as row_wise / column_wise),
 * the UVM kernels (HBM-resident tables only), grid_shard (only on user constraints).
 *
 * Perf of a shard, ms (planner/estimator/estimator.py; constants in planner/constants.py:
 * HBM_MEM_BW 897, INTRA_NODE_BANDWIDTH 600, both GiB/s as 2^30 x value / 1000 bytes/ms,
 * BWD_COMPUTE_MULTIPLIER 2, BATCHED_COPY_PERF_FACTOR 2.455), fp16 weights (2 bytes), ids
 * of 8 bytes. Our features give the lookups of the whole batch (TorchRec's per-rank batch x
 * K x pooling) and the batch B:
 *   table_wise / column_wise shard of width d:
 *     in = lookups x 8, lk = lookups x max(d, 32) x 2, out = B x d x 2,
 *     fwd = (in + lk + out) x pen(d) / HBM, pen = 1 (d >= 128), 1.15 (64 <= d < 128), 1.75;
 *     bwd = 2 fwd; comms = 2 out / INTRA (the output all-to-all, forward and backward);
 *   row_wise shard (every one of the K, empty or not):
 *     in = lookups / K x 8, lk = lookups / K x D x 2, out = B x D x 2,
 *     fwd = (in + lk + out) / HBM; bwd = 2 fwd; comms = 2 out / INTRA + 2.455 out / HBM.
 *   (TorchRec leaves the input distribution out of the total, so does this.)
 * Memory: what every planner here counts against the task's cap per shard
 * (as_plan_table_bytes): a model config's tables carry TorchRec's own memory model
 * (weights in their data type, optimizer state, pipeline buffers; trmem.h) and their
 * task's cap is the HBM less its reservation; other tables count their fp16 weights.
 *
 * Search (planner/planners.py, proposers.py, partitioners.py): each table's options sorted
 * by their perf (ascending, stable); proposals in this order, each partitioned and rated,
 * the lowest rating kept (strictly lower: the first wins ties):
 *   grid search: every combination, when there are at most 10,000 (else none);
 *   greedy by the costliest shard, then greedy by the sum over shards: all tables at their
 *     cheapest option, then repeatedly the table whose current option holds the most
 *     memory on one shard (then in all) among those with a next option moves to it;
 *   uniform: one proposal per sharding type, every table at that type's option (column_wise
 *     falls back to table_wise for a table without it; row_wise only when every table has
 *     one).
 * Partition (GreedyPerfPartitioner, by storage): row_wise shards first, shard i on GPU i;
 * then the other tables in descending memory (stable), each shard on the GPU with the least
 * perf so far (ties: lower GPU) where it fits. Rating: the largest sum of perf on one GPU. A
 * proposal whose shard fits nowhere is infeasible; when none is feasible the first
 * proposal's placement is returned with its unplaced items (an infeasible plan).
 */
#ifndef AS_TORCHREC_H
#define AS_TORCHREC_H

#include <stdint.h>

#include "featindex.h"
#include "plan.h"

#define AS_TR_HBM_GBPS 897.0
#define AS_TR_INTRA_GBPS 600.0
#define AS_TR_MIN_CW_DIM 128
#define AS_TR_MAX_GRID 10000

typedef struct {
    int64_t proposals;      /* proposals rated (after duplicates) */
    int64_t feasible;       /* of which feasible */
    double rating;          /* the kept plan's rating (ms), NaN when none is feasible */
    int64_t row_wise, column_wise;   /* tables sharded so in the kept plan */
    int64_t no_rows;        /* tables without row_wise for want of the row blocks' features */
    double ms;              /* planning time, wall clock */
} as_tr_info;

/* Plan tables t[0..n) (whole) onto c->shards GPUs under c->mem_cap. ft gives the row
 * blocks' features. On success *items (malloc'd, [*nitems]: whole tables and pieces in task
 * order, each table's pieces in order) and assign (malloc'd [*nitems], shard or -1). 0 ok,
 * -1 with err. */
int as_tr_plan(const as_plan_cfg *c, const as_featidx *ft, const as_features *const *t, int64_t n, as_features **items,
               int64_t *nitems, int64_t **assign, as_tr_info *info, char *err, size_t errlen);

/* the perf of one shard (ms) by the formulas above: kind 0 table_wise / column_wise of width
 * d, 1 row_wise of a table of dim d; K GPUs */
double as_tr_perf(int kind, double lookups, double batch, int64_t d, int64_t K);

#endif
