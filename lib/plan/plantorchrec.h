/* plantorchrec.h - `as-plan --alg torchrec`: TorchRec's default embedding sharding planner
 * (EmbeddingShardingPlanner) for one host of K GPUs, training, re-implemented from its code
 * at meta-pytorch/torchrec 376cac6 as a baseline (nothing of its code is used). Dimension
 * letters: T tables, K shards (= GPUs, world size), B batch, L pooling, D dim, E rows.
 * Checked against TorchRec's own planner (pipelines/torchrec_planner.py, its defaults): the
 * same sharding type for every table, data_parallel included, of the DLRM Kaggle (26/26,
 * 9 data_parallel) and DCNv2 (26/26) configs and of the demo's synthetic test tasks (800 of
 * 800 a seed; the same ranks too for all but 9 of 2,400); without data_parallel (--no-dp)
 * against --sharding-types table_wise,row_wise,column_wise (issue 38, item 6).
 *
 *   data_parallel (first, as the sharder lists it; not with cfg->no_dp) K shards, the whole
 *                table on GPU i each, its one compute kernel dense (0.5 x HBM bandwidth):
 *                fwd = (bL 8 + bL D e + b min(1, L) D e) / bw (the rank's own batch);
 *                bwd = 2 fwd; comms = E D e / (12.5 GiB/s x K) (the all-reduce on one host,
 *                CROSS_NODE_BANDWIDTH x local world size) + 9.22 E D e / bw (the dense
 *                optimizer's kernels); storage the whole table and its buffers for the
 *                rank's batch; placed with row_wise, shard i on GPU i. Our plan gets one
 *                entry on AS_DP (plan.h).
 *
 * Options per table (planner/enumerators.py; sharding_plan.py shard sizes), each other sharding
 * type with TorchRec's three default compute kernels, fused, fused_uvm_caching, fused_uvm:
 *   table_wise   one shard [E, D];
 *   column_wise  D / d shards [E, d], d the smallest divisor of D in [128, D) that is a
 *                multiple of 4 (MIN_CW_DIM 128), else one shard [E, D]: table_wise's twin,
 *                the same shard but options of their own to the proposers, as in TorchRec;
 *   row_wise     K shards of ceil(E / K) rows, shard i on GPU i (an empty last block is
 *                no piece here); needs the features of those row blocks (as-features
 *                --row-pieces K), else the table has no row_wise option.
 * The UVM kernels matter to the search (they are steps of the greedy proposers' walks, and
 * TorchRec keeps them where they tie), not to our plans: every table of a plan is held in
 * HBM, so a table kept at a UVM kernel (as_tr_info.uvm) is placed as TorchRec places it and
 * counted whole against the cap. Left out: table_row_wise and table_column_wise (on one host the same figures and placement as
 * row_wise / column_wise), grid_shard (only on user constraints).
 *
 * Perf of a shard, ms (planner/estimator/estimator.py, its default HardwarePerfConfig;
 * constants.py: HBM_MEM_BW 897, HBM_TO_DDR_MEM_BW 32, INTRA_NODE_BANDWIDTH 600, all GiB/s as
 * 2^30 x value / 1000 bytes/ms; BWD_COMPUTE_MULTIPLIER 2, BATCHED_COPY_PERF_FACTOR 2.455).
 * e: the table's element size (its model config's data_type, else fp16: 2 bytes), ids 8
 * bytes; TorchRec's batch inputs and outputs per rank b x L and b x min(1, L), b = B / K
 * (rounded) the batch per rank; bw the kernel's: fused HBM, fused_uvm_caching
 * (0.2 HBM + 0.8 HBM_TO_DDR) / 10 (HBM under a prefetch pipeline), fused_uvm HBM_TO_DDR / 10:
 *   table_wise / column_wise shard of width d:
 *     in = bL K 8, lk = bL K max(d, 32) e, out = b min(1, L) K d e,
 *     fwd = (in + lk + out) x pen(d) / bw, pen = 1 (d >= 128), 1.15 (64 <= d < 128), 1.75;
 *     bwd = 2 fwd; comms = 2 out / INTRA (the output all-to-all, forward and backward);
 *   row_wise shard (every one of the K, empty or not), of a table of dim D:
 *     in = bL 8, lk = bL D e, out = b min(1, L) K D e,
 *     fwd = (in + lk + out) / bw; bwd = 2 fwd; comms = 2 out / INTRA + 2.455 out / bw.
 *   The total is fwd + bwd + comms (TorchRec leaves the input distribution out, so does
 *   this), summed term by term in TorchRec's order so that equal estimates tie as there.
 * Storage of a shard, TorchRec's estimate (shard_estimators.py calculate_shard_storages): a
 * model config's tables carry its terms (trmem.h); other tables get them as
 * torchrec_planner.py describes them to TorchRec (fp16 weights, no optimizer, no pipeline:
 * weights + ids' and outputs' buffers). fused: all in HBM; fused_uvm: weights and optimizer
 * state in DDR, the buffers in HBM; fused_uvm_caching: as fused_uvm plus 0.2 of the weights
 * and their optimizer state cached in HBM and E x (4 + 16 x 0.2) bytes of cache state (plus
 * 7 x the ids' buffer under a prefetch pipeline). Empty row blocks hold nothing.
 * Memory against the task's cap: a shard fits on a GPU when TorchRec's HBM estimate fits
 * under the cap (its DDR under TorchRec's DDR_CAP, 128 GiB) and our bytes (as_plan_table_bytes,
 * every table in HBM) fit too. A cap of 0 is no cap (TorchRec's default would be 32 GB).
 *
 * Search (planner/planners.py, proposers.py, partitioners.py): each table's options sorted
 * by their perf (ascending, stable; options listed table_wise, column_wise, row_wise, each
 * kernel fused, fused_uvm_caching, fused_uvm: TorchRec's order comes from Python sets, so
 * where estimates tie, e.g. tables of pooling 0, its own plan varies from run to run);
 * proposals in this order, each partitioned and rated, the lowest rating kept (strictly
 * lower: the first wins ties):
 *   grid search: every combination, when there are at most 10,000 (else none);
 *   greedy by the costliest shard, then greedy by the sum over shards: all tables at their
 *     cheapest option, then repeatedly the table whose current option holds the most (by
 *     TorchRec's storage estimate: the largest shard's HBM, all HBM, the largest shard's DDR,
 *     all DDR) among those with a next option moves to it;
 *   uniform: one proposal per sharding type every table has, each table at that type's
 *     option of least depth.
 * Partition (GreedyPerfPartitioner, by storage): row_wise shards first, shard i on GPU i;
 * then the other tables in descending storage estimate (HBM, then DDR; stable), each shard
 * on the GPU with the least perf so far (ties: lower GPU) where it fits. Rating
 * (NoopPerfModel): the largest sum of perf on one GPU. A proposal whose shard fits nowhere
 * is infeasible; when none is feasible the first proposal's placement is returned with its
 * unplaced items (an infeasible plan).
 */
#ifndef AS_PLANTORCHREC_H
#define AS_PLANTORCHREC_H

#include <stdint.h>

#include "featindex.h"
#include "plan.h"

#define AS_TR_HBM_GBPS 897.0
#define AS_TR_INTRA_GBPS 600.0
#define AS_TR_HBM_TO_DDR_GBPS 32.0   /* constants.py HBM_TO_DDR_MEM_BW */
#define AS_TR_CACHE_RATIO 0.2        /* constants.py UVM_CACHING_RATIO */
#define AS_TR_DDR_CAP 137438953472.0 /* constants.py DDR_CAP (128 GiB a device) */
#define AS_TR_MIN_CW_DIM 128
#define AS_TR_MAX_GRID 10000

typedef struct {
    int64_t proposals;      /* proposals rated (after duplicates) */
    int64_t feasible;       /* of which feasible */
    double rating;          /* the kept plan's rating (ms), NaN when none is feasible */
    int64_t row_wise, column_wise;   /* tables sharded so in the kept plan */
    int64_t data_parallel;  /* tables replicated (data_parallel) in the kept plan */
    int64_t no_rows;        /* tables without row_wise for want of the row blocks' features */
    int64_t uvm;            /* tables whose kept option is a UVM kernel's (placed as TorchRec
                               places them, held in HBM as every table of our plans) */
    double ms;              /* planning time, wall clock */
} as_tr_info;

/* Plan tables t[0..n) (whole) onto c->shards GPUs under c->mem_cap. ft gives the row
 * blocks' features. On success *items (malloc'd, [*nitems]: whole tables and pieces in task
 * order, each table's pieces in order) and assign (malloc'd [*nitems], shard or -1). 0 ok,
 * -1 with err. */
int as_tr_plan(const as_plan_cfg *c, const as_featidx *ft, const as_features *const *t, int64_t n, as_features **items,
               int64_t *nitems, int64_t **assign, as_tr_info *info, char *err, size_t errlen);

/* the perf of one shard (ms) by the formulas above, fp16 and the fused kernel: kind 0
 * table_wise / column_wise of width d, 1 row_wise of a table of dim d; lookups of the whole
 * batch (L = lookups / batch), K GPUs */
double as_tr_perf(int kind, double lookups, double batch, int64_t d, int64_t K);

#endif
