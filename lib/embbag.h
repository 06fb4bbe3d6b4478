/* embbag.h - the fused multi-table embedding-bag op the micro-benchmark times, on the CPU
 * (embbag.c, plain C + OpenMP) and on CUDA GPUs (embbag.cu).
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * A shard holds T tables; table t has E_t rows of D_t fp16 weights, stored row-major at
 * element offset w_off[t] of one weight buffer W. One batch: B bags per table, offsets
 * table-major (bag (t,b) is indices[offsets[t*B+b] : offsets[t*B+b+1]]), indices are row
 * ids within their table.
 *
 * forward:  out[b*sumD + d_off[t] + j] = sum over i in bag(t,b), in lookup order, of
 *           float(W[w_off[t] + idx_i*D_t + j]); fp32 accumulation, fp32 output [B, sumD]
 * backward + exact SGD: for every row r of table t touched in the batch,
 *           W_t[r][j] = half(float(W_t[r][j]) - lr * G), G = sum over lookups i with
 *           idx_i = r, in ascending lookup order, of grad[b_i*sumD + d_off[t] + j] (fp32);
 *           one fp16 rounding (to nearest even) per updated element.
 * Bags with no lookups give zero rows. Index bounds are validated by as_eb_validate
 * before any kernel runs: an out-of-range index is an error, never a wild write.
 */
#ifndef AS_EMBBAG_H
#define AS_EMBBAG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t T;
    int64_t B;
    const int64_t *rows;      /* [T] E_t >= 1 */
    const int32_t *dims;      /* [T] D_t >= 1 */
    const int64_t *w_off;     /* [T+1] element offset of table t in W; w_off[T] = total elements */
    const int32_t *d_off;     /* [T+1] column of table t in the output; d_off[T] = sumD */
    const int64_t *offsets;   /* [T*B+1] table-major, offsets[0] = 0, non-decreasing */
    const int32_t *indices;   /* [offsets[T*B]] */
} as_eb_shard;

/* 0 if offsets are well formed and every index lies in [0, E_t); else -1 and err names
 * the first violation (table, bag, position) */
int as_eb_validate(const as_eb_shard *s, char *err, size_t errlen);

/* fp16 <-> fp32, round to nearest even, subnormals/inf/nan handled */
float as_half_to_float(uint16_t h);
uint16_t as_float_to_half(float f);
/* bfloat16 <-> fp32 (bf16 is the top half of a float32), round to nearest even */
float as_bf16_to_float(uint16_t h);
uint16_t as_float_to_bf16(float f);

/* ---- CPU ------------------------------------------------------------------------------ */

/* nthreads <= 0: OpenMP's default */
void as_eb_forward_cpu(float *out, const uint16_t *W, const as_eb_shard *s, int nthreads);

typedef struct as_eb_cpu_ws as_eb_cpu_ws;   /* sort buffers, sized for one shard */
as_eb_cpu_ws *as_eb_cpu_ws_new(const as_eb_shard *s);
void as_eb_cpu_ws_free(as_eb_cpu_ws *ws);
void as_eb_backward_sgd_cpu(uint16_t *W, const float *grad, const as_eb_shard *s, float lr,
                            as_eb_cpu_ws *ws, int nthreads);

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
/* copy the output [B, sumD] and the weights back (tests) */
int as_eb_gpu_download(as_eb_gpu *g, float *out, uint16_t *W, char *err, size_t errlen);
/* device name, SM clock (MHz, 0 if unknown) and measured device-to-device copy GB/s */
int as_eb_gpu_info(as_eb_gpu *g, char *name, size_t namelen, int *sm_clock_mhz, double *copy_gbps);
void as_eb_gpu_destroy(as_eb_gpu *g);
/* test hook, defined only when built with AS_HAVE_CUDA (no CPU stub: call it under
 * #ifdef AS_HAVE_CUDA): 0 if the guard words the device code places before and after the
 * output [B, sumD] and the weights are untouched; else -1 and err names the first bad one.
 * Before the first forward the output holds the guard pattern too (a NaN), so an element
 * the forward fails to write shows up as NaN in the downloaded output. */
int as_eb_gpu_check_guards(as_eb_gpu *g, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
