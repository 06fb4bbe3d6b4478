/* nn_cuda.cu - the CUDA implementation of the nn.h ops table: cuBLAS for the products, one
 * small kernel per other op. Dimension letters: N rows, I inputs, O outputs, S sets, C
 * channels. Every kernel has its CPU reference in nn.c (same operations, same order per
 * element where possible); tests/gpu/test_gpu_nn.c compares them.
 *
 * Row-major A[r, c] is column-major A^T, so y = x W^T (row-major) is y^T = W x^T in cuBLAS's
 * column-major terms: gemm(T, N, O, N, I, W, ld I, x, ld I, y, ld O).
 * No atomics: sums over rows (bias gradients, pooling, the gradient norm) are loops or
 * fixed-shape tree reductions, so results are deterministic from run to run.
 * No contraction: nvcc fuses a * b + c into one FMA (one rounding) by default, where nn.c
 * rounds the product and then the sum. Every elementwise kernel that multiplies and adds
 * spells its operations with round-to-nearest intrinsics (__fmul_rn, __fadd_rn, ...), which
 * nvcc never fuses, in the CPU's order: mse_bwd, scale and Adam round exactly as nn.c does.
 * The other kernels only copy, compare or add, and have nothing to fuse.
 * Errors (a failed launch, copy or cuBLAS call, out of device memory) never print or exit:
 * the first is kept for as_nn_ops.error() and every later op does nothing (nn.h). */
#include "nn.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cublasHandle_t g_blas;
static int g_dev = -1;
static char g_name[32];
static double *g_norm;   /* device scalar for the gradient norm */

static char g_err[256];   /* the first failure ("" while none); then every op does nothing */

static void fail(const char *what, const char *msg)
{
    if (!g_err[0]) snprintf(g_err, sizeof g_err, "CUDA %s: %s", what, msg);
}
static const char *g_error(void) { return g_err[0] ? g_err : NULL; }

/* in the void ops: record a failure and return */
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fail(#x, cudaGetErrorString(e_)); return; } } while (0)
#define CKB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { char b_[32]; snprintf(b_, sizeof b_, "status %d", (int)s_); fail(#x, b_); return; } } while (0)
#define CKL() CK(cudaGetLastError())
/* at the top of every op: after a failure, do nothing */
#define DEAD() do { if (g_err[0]) return; } while (0)

static unsigned nblk(int64_t n, int t) { int64_t b = (n + t - 1) / t; return (unsigned)(b < 1 ? 1 : (b > 65535 * 32 ? 65535 * 32 : b)); }

/* ---- memory ---------------------------------------------------------------------------- */

static void *g_alloc(size_t bytes)
{
    void *p = NULL;
    if (g_err[0]) return NULL;
    if (cudaMalloc(&p, bytes ? bytes : 4) != cudaSuccess) {
        cudaGetLastError();
        fail("cudaMalloc", "out of device memory");
        return NULL;
    }
    cudaError_t e = cudaMemset(p, 0, bytes ? bytes : 4);
    if (e != cudaSuccess) {
        fail("cudaMemset", cudaGetErrorString(e));
        cudaFree(p);
        return NULL;
    }
    return p;
}
static void g_free(void *p) { if (p) cudaFree(p); }
static void g_upload(void *d, const void *h, size_t bytes) { DEAD(); if (bytes) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice)); }
static void g_download(void *h, const void *d, size_t bytes) { DEAD(); if (bytes) CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost)); }
static void g_zero(void *p, size_t bytes) { DEAD(); if (bytes) CK(cudaMemset(p, 0, bytes)); }
static void g_sync(void) { DEAD(); CK(cudaDeviceSynchronize()); }

/* ---- kernels --------------------------------------------------------------------------- */

/* y[n, o] = b[o] */
__global__ void k_bias_bcast(float *y, const float *b, int64_t N, int O)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N * O; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = b ? b[i % O] : 0.0f;
}

/* db[o] += sum_n dy[n, o], sequential over n like the CPU */
__global__ void k_bias_grad(float *db, const float *dy, int N, int O)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= O) return;
    float s = 0;
    for (int n = 0; n < N; n++) s += dy[(size_t)n * O + o];
    db[o] += s;
}

__global__ void k_relu_fwd(float *y, const float *x, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0 ? x[i] : 0.0f;
}

__global__ void k_relu_bwd(float *dx, const float *dy, const float *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        if (y[i] > 0) dx[i] += dy[i];
}

/* the same float formulas as as_nn_softplus_fwd/bwd; CUDA's expf/log1pf/expm1f are within a
 * few ulp of glibc's, so these agree with the CPU to float tolerance, not bit for bit */
__global__ void k_softplus_fwd(float *y, const float *x, int64_t n, float beta)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float u = __fmul_rn(beta, x[i]);
        y[i] = __fdiv_rn(u > 0 ? __fadd_rn(u, log1pf(expf(-u))) : log1pf(expf(u)), beta);
    }
}

__global__ void k_softplus_bwd(float *dx, const float *dy, const float *y, int64_t n, float beta)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = __fadd_rn(dx[i], __fmul_rn(dy[i], -expm1f(-__fmul_rn(beta, y[i]))));
}

/* one thread per (s, c), rows of the set in order */
__global__ void k_sumpool_fwd(float *y, const float *x, const int32_t *off, int S, int C)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= (int64_t)S * C) return;
    int s = (int)(i / C), c = (int)(i % C);
    float acc = 0;
    for (int32_t r = off[s]; r < off[s + 1]; r++) acc += x[(size_t)r * C + c];
    y[i] = acc;
}

__global__ void k_sumpool_bwd(float *dx, const float *dy, const int32_t *off, int S, int C)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= (int64_t)S * C) return;
    int s = (int)(i / C), c = (int)(i % C);
    float d = dy[i];
    for (int32_t r = off[s]; r < off[s + 1]; r++) dx[(size_t)r * C + c] += d;
}

/* dp[i] += k * (p[i] - t[i]), k = 2/n computed on the host exactly as nn.c does: three
 * roundings (difference, product, sum) like the CPU, never one FMA */
__global__ void k_mse_bwd(float *dp, const float *p, const float *t, int n, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dp[i] = __fadd_rn(dp[i], __fmul_rn(k, __fsub_rn(p[i], t[i])));
}

/* one block of 1024 threads: strided double sums, then a fixed tree */
__global__ void k_sumsq(double *out, const float *g, int64_t n)
{
    __shared__ double sh[1024];
    double s = 0;
    /* the product of two floats is exact in double, so a fused multiply-add would round
     * the same; spelled out anyway so no contraction question arises */
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s = __dadd_rn(s, __dmul_rn((double)g[i], (double)g[i]));
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}

__global__ void k_scale(float *g, int64_t n, float s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        g[i] = __fmul_rn(g[i], s);
}

/* the same float operations as as_nn_adam (no FMA contraction: __fmul_rn/__fadd_rn) */
__global__ void k_adam(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1, float b2,
                       float eps, float wd, float bc1, float bc2)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(__fsub_rn(1.0f, b1), gi));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, b2), gi), gi));
        m[i] = mi;
        v[i] = vi;
        float mhat = __fdiv_rn(mi, bc1), vhat = __fdiv_rn(vi, bc2);
        float upd = __fadd_rn(__fdiv_rn(mhat, __fadd_rn(__fsqrt_rn(vhat), eps)), __fmul_rn(wd, p[i]));
        p[i] = __fsub_rn(p[i], __fmul_rn(lr, upd));
    }
}

/* ---- ops --------------------------------------------------------------------------------- */

static void g_linear_fwd(float *y, const float *x, const float *W, const float *b, int N, int I, int O)
{
    DEAD();
    if (N <= 0 || O <= 0) return;
    k_bias_bcast<<<nblk((int64_t)N * O, 256), 256>>>(y, b, N, O);
    CKL();
    if (I <= 0) return;
    const float one = 1.0f;
    CKB(cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, &one, W, I, x, I, &one, y, O));
}

static void g_linear_bwd(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                         int N, int I, int O)
{
    DEAD();
    if (N <= 0 || O <= 0) return;
    const float one = 1.0f;
    if (I > 0) {
        if (dx) CKB(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, &one, W, I, dy, O, &one, dx, I));
        CKB(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, I, O, N, &one, x, I, dy, O, &one, dW, I));
    }
    if (db) {
        k_bias_grad<<<(O + 127) / 128, 128>>>(db, dy, N, O);
        CKL();
    }
}

static void g_relu_fwd(float *y, const float *x, int64_t n)
{
    DEAD();
    if (n <= 0) return;
    k_relu_fwd<<<nblk(n, 256), 256>>>(y, x, n);
    CKL();
}

static void g_relu_bwd(float *dx, const float *dy, const float *y, int64_t n)
{
    DEAD();
    if (n <= 0) return;
    k_relu_bwd<<<nblk(n, 256), 256>>>(dx, dy, y, n);
    CKL();
}

static void g_softplus_fwd(float *y, const float *x, int64_t n, float beta)
{
    DEAD();
    if (n <= 0) return;
    k_softplus_fwd<<<nblk(n, 256), 256>>>(y, x, n, beta);
    CKL();
}

static void g_softplus_bwd(float *dx, const float *dy, const float *y, int64_t n, float beta)
{
    DEAD();
    if (n <= 0) return;
    k_softplus_bwd<<<nblk(n, 256), 256>>>(dx, dy, y, n, beta);
    CKL();
}

static void g_sumpool_fwd(float *y, const float *x, const int32_t *off, int S, int C)
{
    DEAD();
    if (S <= 0 || C <= 0) return;
    k_sumpool_fwd<<<(unsigned)(((int64_t)S * C + 255) / 256), 256>>>(y, x, off, S, C);
    CKL();
}

static void g_sumpool_bwd(float *dx, const float *dy, const int32_t *off, int S, int C)
{
    DEAD();
    if (S <= 0 || C <= 0) return;
    k_sumpool_bwd<<<(unsigned)(((int64_t)S * C + 255) / 256), 256>>>(dx, dy, off, S, C);
    CKL();
}

static void g_mse_bwd(float *dp, const float *p, const float *t, int n)
{
    DEAD();
    if (n <= 0) return;
    const float k = 2.0f / (float)n;   /* as as_nn_mse_bwd */
    k_mse_bwd<<<(n + 255) / 256, 256>>>(dp, p, t, n, k);
    CKL();
}

static double g_grad_norm(const float *g, int64_t n)
{
    double h = 0;
    if (g_err[0]) return NAN;
    k_sumsq<<<1, 1024>>>(g_norm, g, n);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(&h, g_norm, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { fail("k_sumsq", cudaGetErrorString(e)); return NAN; }
    return sqrt(h);
}

static void g_scale(float *g, int64_t n, float s)
{
    DEAD();
    if (n <= 0) return;
    k_scale<<<nblk(n, 256), 256>>>(g, n, s);
    CKL();
}

static void g_adam(float *p, const float *g, float *m, float *v, int64_t n, const as_nn_adam_cfg *c, int64_t t)
{
    DEAD();
    if (n <= 0) return;
    float bc1 = (float)(1.0 - pow((double)c->beta1, (double)t));
    float bc2 = (float)(1.0 - pow((double)c->beta2, (double)t));
    k_adam<<<nblk(n, 256), 256>>>(p, g, m, v, n, c->lr, c->beta1, c->beta2, c->eps, c->wd, bc1, bc2);
    CKL();
}

static as_nn_ops g_ops = {
    g_name, 1, g_alloc, g_free, g_upload, g_download, g_zero,
    g_linear_fwd, g_linear_bwd, g_relu_fwd, g_relu_bwd, g_sumpool_fwd, g_sumpool_bwd, g_mse_bwd,
    g_grad_norm, g_scale, g_adam, g_sync, g_softplus_fwd, g_softplus_bwd, g_error,
};

extern "C" const as_nn_ops *as_nn_cuda_ops(int dev, char *err, size_t errlen)
{
    if (g_dev == dev) return &g_ops;
    if (g_dev >= 0) { snprintf(err, errlen, "the CUDA ops already run on device %d", g_dev); return NULL; }
    if (cudaSetDevice(dev) != cudaSuccess) { cudaGetLastError(); snprintf(err, errlen, "cannot use CUDA device %d", dev); return NULL; }
    if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) { snprintf(err, errlen, "cuBLAS does not start on device %d", dev); return NULL; }
    /* no TF32 and no reduced-precision shortcuts: keep fp32 products close to the CPU's */
    cublasSetMathMode(g_blas, CUBLAS_PEDANTIC_MATH);
    if (cudaMalloc(&g_norm, sizeof(double)) != cudaSuccess) { cudaGetLastError(); snprintf(err, errlen, "out of device memory"); return NULL; }
    g_dev = dev;
    snprintf(g_name, sizeof g_name, "cuda:%d", dev);
    return &g_ops;
}
