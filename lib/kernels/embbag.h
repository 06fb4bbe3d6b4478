/* embbag.h - the fused multi-table embedding-bag op the micro-benchmark times, on the CPU
 * (embbag.c, plain C + OpenMP) and on CUDA GPUs (embbag.cu).
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * A shard holds T tables; table t has E_t rows of D_t fp16 weights, stored row-major at
 * element offset w_off[t] of one weight buffer W. One batch: B bags per table, offsets
 * table-major (bag (t,b) is indices[offsets[t*B+b] : offsets[t*B+b+1]]), indices are row
 * ids within their table.
 *
 * Weight layout rule (checked by as_eb_validate): W holds w_off[T] >= 0 elements; table t
 * occupies the region [w_off[t], w_off[t] + E_t*D_t), which must lie within [0, w_off[T]);
 * no two tables' regions may overlap. Nothing else is required: regions may come in any
 * order, and elements outside every region (padding before, between or after tables, e.g.
 * to align table starts) are allowed; no forward or backward reads or writes them (the GPU
 * path uploads them with W and as_eb_gpu_download returns them unchanged). The packed
 * layout w_off[0] = 0, w_off[t+1] = w_off[t] + E_t*D_t is one such layout. The output and
 * the gradient [B, sumD] are packed: d_off[0] = 0, d_off[t+1] = d_off[t] + D_t.
 *
 * forward:  out[b*sumD + d_off[t] + j] = sum over i in bag(t,b), in lookup order, of
 *           float(W[w_off[t] + idx_i*D_t + j]); fp32 accumulation, fp32 output [B, sumD]
 * backward + exact SGD: for every row r of table t touched in the batch,
 *           W_t[r][j] = half(float(W_t[r][j]) - lr * G), with lr * G rounded to fp32
 *           before the subtraction (no fused multiply-add) and one fp16 rounding (to
 *           nearest even) per updated element. G is summed in this canonical order, the
 *           same on the CPU and the GPU (so they agree bit for bit): the row's lookups i
 *           with idx_i = r, in ascending lookup order, are cut into chunks of AS_EB_CHUNK
 *           consecutive lookups (the last one may be shorter); chunk k's partial sum P_k
 *           is the fp32 sum, from 0.0f, of grad[b_i*sumD + d_off[t] + j] over its lookups
 *           in order; G = P_0, then G += P_1, G += P_2, ... left to right. A row with at
 *           most AS_EB_CHUNK lookups has G = the plain sequential sum from 0.0f.
 * fp16 <-> fp32 conversion (and bf16) is half.h's.
 * Bags with no lookups give zero rows. Index bounds are validated by as_eb_validate
 * before any kernel runs: an out-of-range index is an error, never a wild write.
 */
#ifndef AS_EMBBAG_H
#define AS_EMBBAG_H

#include <stddef.h>
#include <stdint.h>

#include "ebshard.h"   /* as_eb_shard, as_eb_table */

/* lookups per chunk in the backward's canonical summation order (above). 512: a hot row's
 * chunks are independent GPU work items (a 447k-lookup row gives 874), each short enough
 * for one warp (512 grad rows, a few in flight at a time), while the GPU's scratch for
 * partial sums stays at most ~2*n/512 chunk rows (n lookups) and the left-to-right combine
 * of a row is 1/512 of its lookups. Changing it changes results for rows with more lookups. */
#define AS_EB_CHUNK 512

#ifdef __cplusplus
extern "C" {
#endif

/* 0 if rows and dims are >= 1, the weight layout follows the rule above, d_off is packed,
 * offsets are well formed and every index lies in [0, E_t); else -1 and err names the first
 * violation (table, bag, position; the two tables whose weights overlap) */
int as_eb_validate(const as_eb_shard *s, char *err, size_t errlen);

/* ---- CPU ------------------------------------------------------------------------------ */

/* nthreads <= 0: OpenMP's default */
void as_eb_forward_cpu(float *out, const uint16_t *W, const as_eb_shard *s, int nthreads);

typedef struct as_eb_cpu_ws as_eb_cpu_ws;   /* sort buffers, sized for one shard */
/* NULL when out of memory: a caller that times the backward must check it, since a NULL
 * workspace (or one sized for smaller tables) makes the backward take the exact but
 * O(lookups^2) reference path for those tables */
as_eb_cpu_ws *as_eb_cpu_ws_new(const as_eb_shard *s);
void as_eb_cpu_ws_free(as_eb_cpu_ws *ws);
/* the bytes as_eb_cpu_ws_new allocates for a shard whose largest table has n lookups and
 * whose largest dim is D (a caller's memory budget counts them) */
size_t as_eb_cpu_ws_size(int64_t n, int64_t D);
void as_eb_backward_sgd_cpu(uint16_t *W, const float *grad, const as_eb_shard *s, float lr,
                            as_eb_cpu_ws *ws, int nthreads);

/* the op with each table's weight type and the shard's optimizer (ebopt.h: the layout in
 * 2-byte units, the state, the rules; as_eb_validate_typed checks a shard), multithreaded,
 * bit for bit ebopt.h's reference. dtype NULL (every table fp16) with SGD is the fp16 op
 * above. The backward takes a workspace from as_eb_cpu_ws_new (one that does not fit the
 * shard, or NULL, makes it allocate its own for the call); 0, or -1 out of memory */
void as_eb_forward_typed_cpu(float *out, const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int nthreads);
int as_eb_backward_typed_cpu(uint16_t *W, float *S, const float *grad, const as_eb_shard *s, const uint8_t *dtype,
                             const int64_t *st_off, const as_eb_opt *o, as_eb_cpu_ws *ws, int nthreads);

/* row-wise Adagrad's sum of squares of G[0..D) in a warp's order (ebopt.h): lane l's partial
 * over columns l, l + 32, ... from 0.0f, then p_l = p_l + p_(l xor o) for o = 16, 8, 4, 2, 1 */
float as_eb_row_sumsq(const float *G, int64_t D);

/* naive single-threaded references, obviously correct, for tests */
void as_eb_forward_ref(float *out, const uint16_t *W, const as_eb_shard *s);
void as_eb_backward_sgd_ref(uint16_t *W, const float *grad, const as_eb_shard *s, float lr);

/* ---- CUDA (only when built with AS_HAVE_CUDA; otherwise these return errors) ---------- */

typedef struct as_eb_gpu as_eb_gpu;

/* device bytes a shard needs (weights, indices, offsets, output, grad, sort/work space) */
size_t as_eb_gpu_bytes_needed(const as_eb_shard *s);
/* upload the shard, W and grad to device `device`; checks free memory first and fails
 * with a clear message ("needs 3.2 GiB, 1.1 GiB free") rather than crashing; 0 ok */
int as_eb_gpu_create(as_eb_gpu **g, const as_eb_shard *s, const uint16_t *W, const float *grad,
                     int device, char *err, size_t errlen);
/* one forward, one backward+SGD; each returns its time in ms through CUDA events */
int as_eb_gpu_forward(as_eb_gpu *g, float *ms, char *err, size_t errlen);
int as_eb_gpu_backward_sgd(as_eb_gpu *g, float lr, float *ms, char *err, size_t errlen);
/* read a >= 2x L2 buffer on the same stream so the next timed run starts cold */
int as_eb_gpu_flush_cache(as_eb_gpu *g, char *err, size_t errlen);
/* copy the output [B, sumD] and the weights (all w_off[T] elements of W) back (tests) */
int as_eb_gpu_download(as_eb_gpu *g, float *out, uint16_t *W, char *err, size_t errlen);
/* copy the shard's inputs back (tests): offsets [T*B+1], indices [offsets[T*B]], the
 * gradient [B, sumD]; any pointer may be NULL */
int as_eb_gpu_download_inputs(as_eb_gpu *g, int64_t *offsets, int32_t *indices, float *grad, char *err,
                              size_t errlen);
/* device name, SM clock (MHz, 0 if unknown) and measured device-to-device copy GB/s */
int as_eb_gpu_info(as_eb_gpu *g, char *name, size_t namelen, int *sm_clock_mhz, double *copy_gbps);
void as_eb_gpu_destroy(as_eb_gpu *g);
/* test hook, defined only when built with AS_HAVE_CUDA (no CPU stub: call it under
 * #ifdef AS_HAVE_CUDA): 0 if the guard words the device code places before and after the
 * output [B, sumD] and the weights are untouched; else -1 and err names the first bad one.
 * Before the first forward the output holds the guard pattern too (a NaN), so an element
 * the forward fails to write shows up as NaN in the downloaded output. */
int as_eb_gpu_check_guards(as_eb_gpu *g, char *err, size_t errlen);

/* the measurement protocol on the device, enqueued at once on the handle's stream with one
 * synchronisation at the end: `warmup` forward + backward iterations, then `runs` times a
 * cache flush (as_eb_gpu_flush_cache's sweep), the forward and the backward, with CUDA
 * events between the phases. fwd_ms and bwd_ms [runs] get each timed phase; busy_ms (may
 * be NULL) the event time of all warm-up iterations plus all timed phases, flushes not
 * included. Works on any handle. 0 ok */
int as_eb_gpu_measure(as_eb_gpu *g, int warmup, int runs, float lr, double *fwd_ms, double *bwd_ms,
                      double *busy_ms, char *err, size_t errlen);
/* as_eb_gpu_measure in two halves, so the host can work while the device measures:
 * _start enqueues the protocol and returns at once; _end waits for the oldest started
 * measurement and reads its times (the same outputs as as_eb_gpu_measure; fwd_ms and
 * bwd_ms [runs] of its start). At most two are started at a time: while shard A is
 * measured, as_eb_gpu_ctx_shard of the context may set up shard B and _start queue B's
 * measurement behind A's (nothing else may be called on the handle until A's _end); the
 * device then runs A, B's set-up and B without waiting for the host. as_eb_gpu_overhead
 * after an _end reports that measurement's flushes and the set-up that preceded its start.
 * _end without a started measurement, or a third _start, is an error. 0 ok, -1 with err
 * (after a failed _start, that measurement is not started) */
int as_eb_gpu_measure_start(as_eb_gpu *g, int warmup, int runs, float lr, char *err, size_t errlen);
int as_eb_gpu_measure_end(as_eb_gpu *g, double *fwd_ms, double *bwd_ms, double *busy_ms, char *err, size_t errlen);
/* device time the last as_eb_gpu_measure spent outside busy_ms: *flush_ms its cache flushes,
 * *setup_ms the set-up of the context's shard enqueued just before it (gather, generated
 * weights and gradients, guards; 0 on a handle not from a context). Either may be NULL. */
void as_eb_gpu_overhead(const as_eb_gpu *g, double *setup_ms, double *flush_ms);

/* the op with weight types and an optimizer (ebopt.h) on a handle from as_eb_gpu_create,
 * whose W was laid out in 2-byte units (s: the same shard, validated by the caller with
 * ebopt.h's as_eb_validate_typed; here only what keeps the kernels in bounds): dtype [T]
 * (NULL: all fp16), the optimizer o (its kind, rate and constants; o->step the step of the
 * next backward, >= 1), st_off [T+1] (NULL for SGD) and the initial state S [st_off[T]]
 * (NULL: zeros). From then on the handle's forward, backward and measurement run the typed
 * kernels, bit for bit as_eb_forward_typed_ref / as_eb_backward_typed_ref: each backward
 * takes the optimizer's step and counts it up; the lr argument of as_eb_gpu_backward_sgd
 * and as_eb_gpu_measure is not used (o->lr is). 0, or -1 with err (the handle unchanged) */
int as_eb_gpu_set_typed(as_eb_gpu *g, const as_eb_shard *s, const uint8_t *dtype, const as_eb_opt *o,
                        const int64_t *st_off, const float *S, char *err, size_t errlen);
/* copy the optimizer state [st_off[T]] of a typed handle back (tests); 0 ok */
int as_eb_gpu_download_state(as_eb_gpu *g, float *S, char *err, size_t errlen);

/* ---- CUDA: the benchmark context, one per process --------------------------------------
 * It holds what outlives a shard: the pool's offsets and indices, uploaded once and kept on
 * the device when they fit (else each shard's tables are uploaded through pinned staging
 * when the shard is set up), one workspace grown on demand and reused by every shard
 * (weights, output, gradients, bags, sort buffers, events), pinned staging buffers, a
 * per-table cache of forward work items, the cache-flush buffer. A shard is set up on the
 * device without any weight byte crossing PCIe: its bags gathered from the pool (equal to
 * as_ebg_gather's), its weights and gradients generated by ebgen.h's hash (equal to
 * as_ebg_fill_weights / as_ebg_fill_grad), in as_ebg_layout's layout, the output filled
 * with the guard pattern. */
typedef struct as_eb_gpu_ctx as_eb_gpu_ctx;

/* tabs[0..ntab): the pool (descriptors copied; the host arrays they point to must outlive
 * the context). resident = 1: keep the pool on the device when it takes at most half of
 * the free device memory (uploaded here); 0, or when it does not fit: upload the tables of
 * each shard when it is set up. A table is checked (as_ebg_check_table) when a shard first
 * uses it. 0 ok, -1 with err */
int as_eb_gpu_ctx_create(as_eb_gpu_ctx **ctx, int device, const as_eb_table *tabs, int64_t ntab, int resident,
                         char *err, size_t errlen);
/* 1 while the pool is on the device: a shard that does not fit beside it evicts it, and
 * the context goes on uploading per shard */
int as_eb_gpu_ctx_resident(const as_eb_gpu_ctx *ctx);
/* set up the shard made of the pool tables pos[0..T) (positions in tabs, one batch size)
 * with `seed`; *g is a handle owned by the context, valid until the next as_eb_gpu_ctx_shard
 * or as_eb_gpu_ctx_destroy (as_eb_gpu_destroy on it does nothing). The setup is enqueued on
 * the handle's stream; what the handle does next orders after it. 0 ok; -1 with err (a
 * table fails its check, mixed batch sizes, "shard needs X GiB of device memory, Y GiB free") */
int as_eb_gpu_ctx_shard(as_eb_gpu_ctx *ctx, const int64_t *pos, int32_t T, uint64_t seed, as_eb_gpu **g,
                        char *err, size_t errlen);
/* what the context's shards train (ebopt.h): dtype [ntab] each pool table's weight type
 * (NULL: all fp16) and the optimizer o (its constants; the step is counted per shard from
 * 1, as a CPU part counts it). Unless every table is fp16 and o is SGD, the shards set up
 * from then on are laid out in 2-byte units (each table's region rounded to AS_EBG_W_ALIGN
 * units), their weights the generated fp16 values stored in their types, their state
 * zeroed, and their handles run the typed kernels (as_eb_gpu_set_typed). 0, or -1 with err */
int as_eb_gpu_ctx_set_kind(as_eb_gpu_ctx *ctx, const uint8_t *dtype, const as_eb_opt *o, char *err, size_t errlen);
/* device bytes the context holds (pool, workspace, flush buffer), how many times the
 * workspace was (re)allocated, and shards set up so far; any pointer may be NULL */
void as_eb_gpu_ctx_stats(const as_eb_gpu_ctx *ctx, size_t *bytes, int64_t *grows, int64_t *shards);
void as_eb_gpu_ctx_destroy(as_eb_gpu_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
