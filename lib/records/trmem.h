/* trmem.h - TorchRec's memory model of one shard of an embedding table, term by term, so that
 * memory caps mean what they mean to TorchRec (a plan that fits our cap fits its planner's).
 * Dimension letters: B batch (per rank), L pooling, D dim, E rows, W world size.
 *
 * From meta-pytorch/torchrec (HEAD of 2026-08-21, commit 376cac6),
 * torchrec/distributed/planner/shard_estimators.py, for a training shard of a fused
 * (HBM-resident) kernel on a GPU:
 *   weights   = ceil(rows x cols x element size)                     (_calculate_tensor_sizes)
 *   optimizer = ceil(weights x m): m = 0 for SGD, 2 for Adam, 1 / D for row-wise Adagrad
 *               (D the table's full dim), 1 for any other optimizer  (_get_optimizer_multipler)
 *   input     = ceil(L x B x W x 8) for table-wise and column-wise shards, ceil(L x B x 8)
 *               for row-wise ones (8-byte ids)      (_calculate_tw/cw/rw_shard_io_sizes)
 *   output    = ceil(min(1, L) x B x W x cols x element size) (pooled outputs)
 *   pipeline  = 2 x input for train_sparse_dist, 3 x input for train_prefetch_sparse_dist
 *               (its prefetch term is 0 for HBM-resident tables), input + output otherwise
 *               (none, train_base); outputs are ephemeral under the pipelines and not
 *               counted (count_ephemeral_storage_cost defaults to False)
 *                                                                   (calculate_pipeline_io_cost)
 *   shard's HBM = weights + optimizer + pipeline.
 * And per device, storage_reservations.py HeuristicalStorageReservation with planners.py's
 * default percentage 0.15: what the shards may use is
 *   int(0.85 x HBM) - dense - kjt, kjt = ceil(sum over tables of L x B x 8) x 20
 * (two pipelined batches with ten copies each), dense = round(6 x the dense parameters'
 * bytes) (_reserve_dense_storage: parameter_multiplier 6, "parameter + optimizer (~2x
 * parameter) + ddp (~3x parameter)"), or the user's dense_tensor_estimate in its place. The
 * dense parameters are not in the embedding tables: a model config gives their count. */
#ifndef AS_TRMEM_H
#define AS_TRMEM_H

#include <stdint.h>

typedef struct {
    double weights, optimizer;      /* bytes */
    double input, output;           /* the shard's input (ids) and pooled output buffers, bytes */
    double in_factor, out_factor;   /* the pipeline's: HBM = ... + in x input + out x output */
} as_trmem;                          /* all 0: not given */

#define AS_TRMEM_RESERVE 0.15       /* planners.py: heuristical_storage_reservation_percentage */
#define AS_TRMEM_KJT_COPIES 20      /* storage_reservations.py: 2 pipelined batches x 10 copies */
#define AS_TRMEM_DENSE_MULT 6.0     /* storage_reservations.py: HeuristicalStorageReservation's
                                     * parameter_multiplier */

/* the pipeline's factors; -1 for an unknown name */
int as_trmem_pipeline(const char *pipeline, double *in_factor, double *out_factor);
/* the optimizer state per weight byte for a table of full dim D; -1 for an unknown name */
double as_trmem_opt_mult(const char *optimizer, int64_t dim);
/* The terms of a shard of rows x cols of a table of full dim, weights of elem bytes per
 * element, row_wise: a row-wise shard (else table- or column-wise); pooling L, batch B per
 * rank, world size W. 0, or -1 for an unknown optimizer or pipeline. */
int as_trmem_shard(as_trmem *m, int64_t rows, int64_t cols, int64_t dim, double elem, const char *optimizer,
                   const char *pipeline, double pooling, int64_t batch, int64_t world, int row_wise);
/* the shard's HBM in bytes: weights + optimizer + in x input + out x output */
uint64_t as_trmem_total(const as_trmem *m);
/* the pipeline's buffers of the model: the total less the weights and the optimizer state */
double as_trmem_io(const as_trmem *m);
/* the terms of columns [c0, c1) of a shard of dim cols: weights, optimizer and output in
 * proportion, the input (every id) whole, as _calculate_cw_shard_io_sizes */
void as_trmem_cols(as_trmem *out, const as_trmem *m, int64_t c0, int64_t c1, int64_t cols);
/* the dense reservation of a model of params dense parameters of elem bytes each:
 * round(6 x params x elem) */
uint64_t as_trmem_dense(int64_t params, double elem);
/* What the shards of one device may use: int((1 - 0.15) x hbm) - dense - kjt, kjt =
 * ceil(ids x 8) x 20 for ids = sum over tables of L x B (per rank); 0 when that is not
 * above 0. */
uint64_t as_trmem_cap(uint64_t hbm, double ids_per_rank, uint64_t dense);

#endif
