/* nn.c - the CPU layers of nn.h (OpenBLAS for the products) and device selection.
 * Dimension letters: N rows, I inputs, O outputs, S sets, C channels. */
#include "nn.h"

#include "common.h"
#include "device.h"

#include <cblas.h>
#undef I   /* complex.h (pulled in by cblas.h) defines I; nn.h uses it as a dimension */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* no fused multiply-add: these functions are the references of lib/nn/nn_cuda.cu's kernels,
 * which round every product and every sum separately (GCC contracts a * b + c by default
 * on targets with FMA, e.g. aarch64; on x86-64 without -mfma there is nothing to fuse) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* y[N,O] = beta y + x[N,I] W^T (W [O, ldw]); one row is a product of W and a vector (sgemv):
 * OpenBLAS's sgemm packs the whole of W for it, which cost the policy's steps 5-7x the
 * product itself (a step's LSTM and head rows are single) */
static void prod_nt(float *y, const float *x, const float *W, int ldw, float beta, int N, int I, int O)
{
    if (N == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, O, I, 1.0f, W, ldw, x, 1, beta, y, 1);
    else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, O, I, 1.0f, x, I, W, ldw, beta, y, O);
}

void as_nn_linear_fwd_ld(float *y, const float *x, const float *W, int ldw, const float *b, int N, int I, int O)
{
    if (N <= 0 || O <= 0) return;
    if (b)
        for (int n = 0; n < N; n++) memcpy(y + (size_t)n * O, b, (size_t)O * sizeof *y);
    if (I <= 0) {
        if (!b) memset(y, 0, (size_t)N * O * sizeof *y);
        return;
    }
    prod_nt(y, x, W, ldw, b ? 1.0f : 0.0f, N, I, O);
}

void as_nn_linear_fwd(float *y, const float *x, const float *W, const float *b, int N, int I, int O)
{
    as_nn_linear_fwd_ld(y, x, W, I, b, N, I, O);
}

void as_nn_linear_bwd(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                      int N, int I, int O)
{
    if (N <= 0 || O <= 0) return;
    if (I > 0) {
        if (dx) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, I, O, 1.0f, dy, O, W, I, 1.0f, dx, I);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, N, 1.0f, dy, O, x, I, 1.0f, dW, I);
    }
    if (db)
        for (int o = 0; o < O; o++) {
            float s = 0;
            for (int n = 0; n < N; n++) s += dy[(size_t)n * O + o];
            db[o] += s;
        }
}

void as_nn_relu_fwd(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f;
}

void as_nn_relu_bwd(float *dx, const float *dy, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (y[i] > 0) dx[i] += dy[i];
}

void as_nn_softplus_fwd(float *y, const float *x, int64_t n, float beta)
{
    for (int64_t i = 0; i < n; i++) {
        float u = beta * x[i];
        y[i] = (u > 0 ? u + log1pf(expf(-u)) : log1pf(expf(u))) / beta;
    }
}

void as_nn_softplus_bwd(float *dx, const float *dy, const float *y, int64_t n, float beta)
{
    for (int64_t i = 0; i < n; i++) {
        float s = -expm1f(-(beta * y[i]));   /* sigmoid(beta x) */
        dx[i] += dy[i] * s;
    }
}

void as_nn_sumpool_fwd(float *y, const float *x, const int32_t *off, int S, int C)
{
    for (int s = 0; s < S; s++) {
        float *ys = y + (size_t)s * C;
        for (int c = 0; c < C; c++) ys[c] = 0;
        for (int32_t r = off[s]; r < off[s + 1]; r++) {
            const float *xr = x + (size_t)r * C;
            for (int c = 0; c < C; c++) ys[c] += xr[c];
        }
    }
}

void as_nn_sumpool_bwd(float *dx, const float *dy, const int32_t *off, int S, int C)
{
    for (int s = 0; s < S; s++) {
        const float *ds = dy + (size_t)s * C;
        for (int32_t r = off[s]; r < off[s + 1]; r++) {
            float *dr = dx + (size_t)r * C;
            for (int c = 0; c < C; c++) dr[c] += ds[c];
        }
    }
}

double as_nn_mse_fwd(const float *pred, const float *target, int n)
{
    if (n <= 0) return 0;
    double s = 0;
    for (int i = 0; i < n; i++) {
        double d = (double)pred[i] - (double)target[i];
        s += d * d;
    }
    return s / n;
}

void as_nn_mse_bwd(float *dpred, const float *pred, const float *target, int n)
{
    if (n <= 0) return;
    float k = 2.0f / (float)n;
    for (int i = 0; i < n; i++) dpred[i] += k * (pred[i] - target[i]);
}

double as_nn_grad_norm(const float *g, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

void as_nn_scale(float *g, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++) g[i] *= s;
}

double as_nn_clip(float *g, int64_t n, double max_norm)
{
    double norm = as_nn_grad_norm(g, n);
    if (max_norm > 0 && norm > max_norm) as_nn_scale(g, n, (float)(max_norm / norm));
    return norm;
}

/* ---- LSTM cell ------------------------------------------------------------------------------ */

static inline float sigm(float z) { return 1.0f / (1.0f + expf(-z)); }

void as_nn_lstm_fwd(float *h, float *c, float *gates, const float *x, const float *h_prev, const float *c_prev,
                    const float *Wih, const float *Whh, const float *b, int N, int I, int H)
{
    int G = 4 * H;
    as_nn_linear_fwd(gates, x, Wih, b, N, I, G);
    if (h_prev)
        prod_nt(gates, h_prev, Whh, H, 1.0f, N, H, G);
    for (int n = 0; n < N; n++) {
        float *z = gates + (size_t)n * G, *hn = h + (size_t)n * H, *cn = c + (size_t)n * H;
        const float *cp = c_prev ? c_prev + (size_t)n * H : NULL;
        for (int j = 0; j < H; j++) {
            float i = sigm(z[j]), f = sigm(z[H + j]), g = tanhf(z[2 * H + j]), o = sigm(z[3 * H + j]);
            z[j] = i; z[H + j] = f; z[2 * H + j] = g; z[3 * H + j] = o;
            float cc = i * g + (cp ? f * cp[j] : 0.0f);
            cn[j] = cc;
            hn[j] = o * tanhf(cc);
        }
    }
}

void as_nn_lstm_bwd(float *dx, float *dh_prev, float *dc_prev, float *dWih, float *dWhh, float *db, float *dz,
                    const float *dh, const float *dc, const float *gates, const float *c, const float *c_prev,
                    const float *x, const float *h_prev, const float *Wih, const float *Whh, int N, int I, int H)
{
    int G = 4 * H;
    for (int n = 0; n < N; n++) {
        const float *z = gates + (size_t)n * G, *cn = c + (size_t)n * H, *dhn = dh + (size_t)n * H;
        const float *dcn = dc ? dc + (size_t)n * H : NULL, *cp = c_prev ? c_prev + (size_t)n * H : NULL;
        float *d = dz + (size_t)n * G;
        for (int j = 0; j < H; j++) {
            float i = z[j], f = z[H + j], g = z[2 * H + j], o = z[3 * H + j];
            float tc = tanhf(cn[j]);
            float dct = dhn[j] * o * (1.0f - tc * tc) + (dcn ? dcn[j] : 0.0f);
            float cpj = cp ? cp[j] : 0.0f;
            d[j] = dct * g * i * (1.0f - i);
            d[H + j] = dct * cpj * f * (1.0f - f);
            d[2 * H + j] = dct * i * (1.0f - g * g);
            d[3 * H + j] = dhn[j] * tc * o * (1.0f - o);
            if (dc_prev) dc_prev[(size_t)n * H + j] += dct * f;
        }
    }
    as_nn_linear_bwd(dx, dWih, db, dz, x, Wih, N, I, G);
    if (h_prev) as_nn_linear_bwd(dh_prev, dWhh, NULL, dz, h_prev, Whh, N, H, G);
}

void as_nn_adam(float *p, const float *g, float *m, float *v, int64_t n, const as_nn_adam_cfg *c, int64_t t)
{
    /* bias corrections in double, then the per-element update in float (the CUDA kernel
     * does the same operations in the same order) */
    float bc1 = (float)(1.0 - pow((double)c->beta1, (double)t));
    float bc2 = (float)(1.0 - pow((double)c->beta2, (double)t));
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = c->beta1 * m[i] + (1.0f - c->beta1) * gi;
        float vi = c->beta2 * v[i] + (1.0f - c->beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        p[i] -= c->lr * (mhat / (sqrtf(vhat) + c->eps) + c->wd * p[i]);
    }
}

void as_nn_init_linear(float *W, float *b, int I, int O, uint64_t *state)
{
    double k = I > 0 ? 1.0 / sqrt((double)I) : 0;
    for (int64_t i = 0; i < (int64_t)O * I; i++)
        W[i] = (float)(k * (2.0 * ((double)(as_splitmix64(state) >> 11) * 0x1.0p-53) - 1.0));
    if (b)
        for (int o = 0; o < O; o++) b[o] = (float)(k * (2.0 * ((double)(as_splitmix64(state) >> 11) * 0x1.0p-53) - 1.0));
}

void as_nn_set_threads(int n)
{
    openblas_set_num_threads(n > 0 ? n : 1);
}

/* ---- the CPU ops table -------------------------------------------------------------------- */

static void *cpu_alloc(size_t bytes) { return as_calloc(1, bytes ? bytes : 1); }
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { if (bytes) memcpy(dst, src, bytes); }
static void cpu_zero(void *p, size_t bytes) { if (bytes) memset(p, 0, bytes); }
static void cpu_sync(void) {}
static const char *cpu_error(void) { return NULL; }

static const as_nn_ops cpu_ops = {
    "cpu", 0, cpu_alloc, cpu_free, cpu_copy, cpu_copy, cpu_zero,
    as_nn_linear_fwd, as_nn_linear_bwd, as_nn_relu_fwd, as_nn_relu_bwd,
    as_nn_sumpool_fwd, as_nn_sumpool_bwd, as_nn_mse_bwd, as_nn_grad_norm, as_nn_scale, as_nn_adam, cpu_sync,
    as_nn_softplus_fwd, as_nn_softplus_bwd, cpu_error,
};

const as_nn_ops *as_nn_cpu(void) { return &cpu_ops; }

#ifdef AS_HAVE_CUDA
const as_nn_ops *as_nn_cuda_ops(int dev, char *err, size_t errlen);   /* nn_cuda.cu */
#endif

const as_nn_ops *as_nn_cuda(int dev, char *err, size_t errlen)
{
#ifdef AS_HAVE_CUDA
    int n = as_cuda_device_count();
    if (n == 0) { snprintf(err, errlen, "no working CUDA device (%s)", as_device_build_info()); return NULL; }
    if (dev < 0 || dev >= n) { snprintf(err, errlen, "only %d CUDA device(s)", n); return NULL; }
    return as_nn_cuda_ops(dev, err, errlen);
#else
    snprintf(err, errlen, "CUDA support was not built (%s)", as_device_build_info());
    (void)dev;
    return NULL;
#endif
}

double as_nn_clip_ops(const as_nn_ops *o, float *g, int64_t n, double max_norm)
{
    double norm = o->grad_norm(g, n);
    if (max_norm > 0 && norm > max_norm) o->scale(g, n, (float)(max_norm / norm));
    return norm;
}

const as_nn_ops *as_nn_device(const char *spec, int *code, char *err, size_t errlen)
{
    int dev;
    *code = as_device_parse(spec, &dev, err, errlen);
    if (*code) return NULL;
    if (dev < 0) return as_nn_cpu();
    char e2[512];
    const as_nn_ops *o = as_nn_cuda(dev, e2, sizeof e2);
    if (o) return o;
    if (!strcmp(spec, "auto")) return as_nn_cpu();  /* auto: the CPU when the GPU cannot be set up */
    snprintf(err, errlen, "--device %s: %s", spec, e2);
    *code = AS_EXIT_ENV;
    return NULL;
}
