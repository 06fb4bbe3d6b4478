/* nn.h - small dense layers as plain forward/backward functions (llm.c style), for the
 * cost model now and the RL policy (an LSTM) later.
 * Dimension letters: N rows of a layer's input (tables or shards of a batch), I input
 * features, O output features, S sets (shards) pooled, C channels of a pooled row.
 *
 * Rules every function follows:
 *   - outputs first, then inputs and weights, then dims; no allocation, no I/O;
 *   - row-major float32; a linear layer's weight is W[O, I] (PyTorch's layout), bias b[O];
 *   - backward functions ACCUMULATE into their gradient outputs (dx += ..., dW += ...):
 *     zero them yourself (as_nn_ops.zero) before a step;
 *   - a model keeps one contiguous parameter buffer; gradients and the Adam moments mirror
 *     it, so Adam, clipping, copies and I/O are flat loops over n floats.
 *
 * Two implementations compute the same numbers within float tolerance: the CPU one below
 * (OpenBLAS cblas_sgemm for the products, sequential loops for the rest, sums in a fixed
 * order: deterministic for a given thread count) and the CUDA one in nn_cuda.cu (cuBLAS
 * cublasSgemm, one small kernel per op, no atomics: deterministic too). Code that should run
 * on either goes through an as_nn_ops table, whose pointers are device pointers on CUDA.
 */
#ifndef AS_NN_H
#define AS_NN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU layers ------------------------------------------------------------------------- */

/* y[N,O] = x[N,I] W[O,I]^T + b[O]  (b may be NULL) */
void as_nn_linear_fwd(float *y, const float *x, const float *W, const float *b, int N, int I, int O);
/* y[N,O] = x[N,I] W^T + b for a weight whose rows lie ldw floats apart (a column block of a
 * wider W; b may be NULL) */
void as_nn_linear_fwd_ld(float *y, const float *x, const float *W, int ldw, const float *b, int N, int I, int O);
/* dx[N,I] += dy W; dW[O,I] += dy^T x; db[O] += sum_n dy. dx and db may be NULL. */
void as_nn_linear_bwd(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                      int N, int I, int O);
/* y = max(x, 0) over n elements (y may alias x) */
void as_nn_relu_fwd(float *y, const float *x, int64_t n);
/* dx += dy * (y > 0); y is the forward OUTPUT (so the input need not be kept) */
void as_nn_relu_bwd(float *dx, const float *dy, const float *y, int64_t n);
/* y = softplus(beta x) / beta = log(1 + e^(beta x)) / beta (beta > 0), computed stably
 * (u + log1p(e^-u) for u = beta x > 0); y may alias x. A smooth max(x, 0): positive for
 * every x, ~x once beta x >> 1. The cost model's constrained output. */
void as_nn_softplus_fwd(float *y, const float *x, int64_t n, float beta);
/* dx += dy * sigmoid(beta x), with sigmoid(beta x) = 1 - e^(-beta y) = -expm1(-beta y) from
 * the forward OUTPUT y (as relu_bwd: the input need not be kept) */
void as_nn_softplus_bwd(float *dx, const float *dy, const float *y, int64_t n, float beta);
/* y[S,C]: y[s] = sum of rows x[off[s] .. off[s+1]) of x[off[S], C]; an empty set gives 0 */
void as_nn_sumpool_fwd(float *y, const float *x, const int32_t *off, int S, int C);
/* dx[r] += dy[s] for every row r of set s */
void as_nn_sumpool_bwd(float *dx, const float *dy, const int32_t *off, int S, int C);
/* mean squared error (1/n) sum (pred - target)^2, summed in double */
double as_nn_mse_fwd(const float *pred, const float *target, int n);
/* dpred += 2 (pred - target) / n */
void as_nn_mse_bwd(float *dpred, const float *pred, const float *target, int n);
/* sqrt(sum g^2), summed in double */
double as_nn_grad_norm(const float *g, int64_t n);
/* g *= s */
void as_nn_scale(float *g, int64_t n, float s);
/* global gradient-norm clipping: when ||g|| > max_norm > 0, g *= max_norm / ||g||.
 * Returns the norm before clipping. */
double as_nn_clip(float *g, int64_t n, double max_norm);

/* LSTM cell (PyTorch's gate order i, f, g, o; one bias b[4H] = b_ih + b_hh) on N rows:
 *   z[N,4H] = x[N,I] Wih[4H,I]^T + h_prev[N,H] Whh[4H,H]^T + b
 *   i = sigmoid(z_i), f = sigmoid(z_f), g = tanh(z_g), o = sigmoid(z_o)
 *   c = f*c_prev + i*g;   h = o*tanh(c)
 * gates[N,4H] keeps the activated gates for the backward. h_prev/c_prev NULL = zeros. */
void as_nn_lstm_fwd(float *h, float *c, float *gates, const float *x, const float *h_prev, const float *c_prev,
                    const float *Wih, const float *Whh, const float *b, int N, int I, int H);
/* Backward of one cell, given dh[N,H] (everything reaching h) and dc[N,H] (reaching c from
 * the next step; may be NULL). ACCUMULATES dx[N,I], dh_prev[N,H], dc_prev[N,H] (each may be
 * NULL), dWih, dWhh, db. dz[N,4H] is scratch. h_prev/c_prev NULL = zeros (as forward). */
void as_nn_lstm_bwd(float *dx, float *dh_prev, float *dc_prev, float *dWih, float *dWhh, float *db, float *dz,
                    const float *dh, const float *dc, const float *gates, const float *c, const float *c_prev,
                    const float *x, const float *h_prev, const float *Wih, const float *Whh, int N, int I, int H);

/* Adam (Kingma & Ba) with bias correction, step t >= 1, optional decoupled weight decay wd
 * (AdamW; 0 = plain Adam):
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd p ) */
typedef struct {
    float lr, beta1, beta2, eps, wd;
} as_nn_adam_cfg;
#define AS_NN_ADAM_DEFAULT(lr_) ((as_nn_adam_cfg){ (lr_), 0.9f, 0.999f, 1e-8f, 0.0f })
void as_nn_adam(float *p, const float *g, float *m, float *v, int64_t n, const as_nn_adam_cfg *c, int64_t t);

/* PyTorch's default nn.Linear init from a seeded stream: W, b ~ U(-1/sqrt(I), 1/sqrt(I)).
 * state: a splitmix64 state advanced by the call. */
void as_nn_init_linear(float *W, float *b, int I, int O, uint64_t *state);

/* BLAS threads for the CPU path (OpenBLAS; 1 is deterministic and best for small layers) */
void as_nn_set_threads(int n);

/* ---- one interface over both devices ----------------------------------------------------- */

typedef struct as_nn_ops {
    const char *name;   /* "cpu" or "cuda:N" */
    int cuda;
    /* memory: alloc returns zeroed memory (CPU: out of host memory ends the process, the
     * allocation rule of common.h; CUDA: NULL and error() set when the device has none) */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    void (*upload)(void *dev, const void *host, size_t bytes);
    void (*download)(void *host, const void *dev, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    /* the layers above, same semantics */
    void (*linear_fwd)(float *y, const float *x, const float *W, const float *b, int N, int I, int O);
    void (*linear_bwd)(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                       int N, int I, int O);
    void (*relu_fwd)(float *y, const float *x, int64_t n);
    void (*relu_bwd)(float *dx, const float *dy, const float *y, int64_t n);
    void (*sumpool_fwd)(float *y, const float *x, const int32_t *off, int S, int C);
    void (*sumpool_bwd)(float *dx, const float *dy, const int32_t *off, int S, int C);
    void (*mse_bwd)(float *dpred, const float *pred, const float *target, int n);
    double (*grad_norm)(const float *g, int64_t n);
    void (*scale)(float *g, int64_t n, float s);
    void (*adam)(float *p, const float *g, float *m, float *v, int64_t n, const as_nn_adam_cfg *c, int64_t t);
    void (*sync)(void);
    void (*softplus_fwd)(float *y, const float *x, int64_t n, float beta);
    void (*softplus_bwd)(float *dx, const float *dy, const float *y, int64_t n, float beta);
    /* the first failure since the ops were set up ("CUDA cudaMalloc: out of memory"), or
     * NULL. The CUDA ops never exit: a failed call, launch or copy is recorded here and
     * every later op does nothing (alloc returns NULL, grad_norm NAN), so a caller checks
     * error() at its sync points (after a step, after a download) and returns -1 with the
     * message; the failure is an environment one (exit 3). Always NULL on the CPU. */
    const char *(*error)(void);
} as_nn_ops;

const as_nn_ops *as_nn_cpu(void);
/* the CUDA implementation on device dev, or NULL (err set) when CUDA was not built, the
 * device does not work or cuBLAS cannot start */
const as_nn_ops *as_nn_cuda(int dev, char *err, size_t errlen);
/* clipping through an ops table; returns the norm before clipping */
double as_nn_clip_ops(const as_nn_ops *o, float *g, int64_t n, double max_norm);

/* Resolve a --device value with as_device_parse (device.h: the strings and errors of every
 * tool); "auto" also falls back to the CPU when the GPU's ops cannot be set up. Returns the
 * ops, or NULL with err and *code = 2 (not a device name) or 3 (no such device, or its ops
 * cannot be set up). */
const as_nn_ops *as_nn_device(const char *spec, int *code, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
