/* test_gpu_nn.c - the CUDA nn ops (lib/nn/nn_cuda.cu) against the CPU references (lib/nn/nn.c),
 * op by op, and the cost model trained a few steps on each device. Dimension letters: N
 * rows, I inputs, O outputs, S sets, C channels.
 *
 * Run on a GPU machine by `make gpu-test` (tests named *_small also under
 * compute-sanitizer). Without a CUDA device every test fails with "no CUDA device".
 * Tolerance: |gpu - cpu| <= 1e-5 + 1e-4 |cpu| for the layers (cuBLAS in pedantic fp32 may
 * sum in another order than OpenBLAS); elementwise ops and sum-pooling must match exactly,
 * except softplus (CUDA's expf/log1pf/expm1f: 1e-5 relative); training a few steps (each
 * output form): parameters within 1e-3 relative. */
#include "common.h"
#include "costmodel.h"
#include "nn.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_st = 777;
static float frand(void)
{
    return (float)((double)(as_splitmix64(&g_st) >> 11) * 0x1.0p-53 * 2 - 1);
}

static const as_nn_ops *gpu(void)
{
    char err[256];
    const as_nn_ops *o = as_nn_cuda(0, err, sizeof err);
    if (!o) fprintf(stderr, "  no CUDA device: %s\n", err);
    return o;
}

static float *up(const as_nn_ops *g, const float *h, size_t n)
{
    float *d = g->alloc(n * sizeof *d);
    g->upload(d, h, n * sizeof *d);
    return d;
}

/* count elements outside tolerance */
static int64_t cmp(const float *cpu, const as_nn_ops *g, const float *dev, size_t n, double atol, double rtol)
{
    float *h = malloc(n * sizeof *h);
    g->download(h, dev, n * sizeof *h);
    int64_t bad = 0;
    if (g->error()) {   /* a failed op records its error and the rest do nothing (nn.h) */
        fprintf(stderr, "  %s\n", g->error());
        free(h);
        return (int64_t)n;
    }
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)h[i] - cpu[i]) <= atol + rtol * fabs(cpu[i]))) {
            if (bad < 3) fprintf(stderr, "  [%zu] gpu %.9g cpu %.9g\n", i, h[i], cpu[i]);
            bad++;
        }
    free(h);
    return bad;
}

static void linear_case(int N, int I, int O)
{
    const as_nn_ops *g = gpu();
    CHECK(g != NULL);
    if (!g) return;
    size_t nx = (size_t)N * I, nw = (size_t)O * I, ny = (size_t)N * O;
    float *x = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc(O * 4), *y = malloc(ny * 4), *dy = malloc(ny * 4);
    float *dx = malloc(nx * 4), *dW = malloc(nw * 4), *db = malloc(O * 4);
    for (size_t i = 0; i < nx; i++) { x[i] = frand(); dx[i] = frand(); }
    for (size_t i = 0; i < nw; i++) { W[i] = frand(); dW[i] = frand(); }
    for (int i = 0; i < O; i++) { b[i] = frand(); db[i] = frand(); }
    for (size_t i = 0; i < ny; i++) dy[i] = frand();
    float *gx = up(g, x, nx), *gW = up(g, W, nw), *gb = up(g, b, O), *gy = g->alloc(ny * 4), *gdy = up(g, dy, ny);
    float *gdx = up(g, dx, nx), *gdW = up(g, dW, nw), *gdb = up(g, db, O);
    as_nn_linear_fwd(y, x, W, b, N, I, O);
    g->linear_fwd(gy, gx, gW, gb, N, I, O);
    CHECK_EQ_I64(cmp(y, g, gy, ny, 1e-5, 1e-4), 0);
    as_nn_linear_bwd(dx, dW, db, dy, x, W, N, I, O);
    g->linear_bwd(gdx, gdW, gdb, gdy, gx, gW, N, I, O);
    CHECK_EQ_I64(cmp(dx, g, gdx, nx, 1e-5, 1e-4), 0);
    CHECK_EQ_I64(cmp(dW, g, gdW, nw, 1e-4, 1e-4), 0);
    CHECK_EQ_I64(cmp(db, g, gdb, O, 1e-4, 1e-4), 0);
    float *all[] = { gx, gW, gb, gy, gdy, gdx, gdW, gdb };
    for (int i = 0; i < 8; i++) g->free(all[i]);
    free(x); free(W); free(b); free(y); free(dy); free(dx); free(dW); free(db);
}

TEST(gpu_nn_linear_small) { linear_case(7, 21, 5); linear_case(1, 1, 1); linear_case(33, 128, 32); }
TEST(gpu_nn_linear_large) { linear_case(5000, 21, 128); linear_case(5000, 128, 32); linear_case(512, 32, 64); }

TEST(gpu_nn_elementwise_small)
{
    const as_nn_ops *g = gpu();
    CHECK(g != NULL);
    if (!g) return;
    enum { n = 1001 };
    float x[n], y[n], dy[n], dx[n], t[n];
    for (int i = 0; i < n; i++) { x[i] = frand(); dy[i] = frand(); dx[i] = frand(); t[i] = frand(); }
    float *gx = up(g, x, n), *gy = g->alloc(n * 4), *gdy = up(g, dy, n), *gdx = up(g, dx, n), *gt = up(g, t, n);
    as_nn_relu_fwd(y, x, n);
    g->relu_fwd(gy, gx, n);
    CHECK_EQ_I64(cmp(y, g, gy, n, 0, 0), 0);
    as_nn_relu_bwd(dx, dy, y, n);
    g->relu_bwd(gdx, gdy, gy, n);
    CHECK_EQ_I64(cmp(dx, g, gdx, n, 0, 0), 0);
    as_nn_mse_bwd(dx, x, t, n);
    g->mse_bwd(gdx, gx, gt, n);
    CHECK_EQ_I64(cmp(dx, g, gdx, n, 0, 0), 0);
    CHECK_NEAR(g->grad_norm(gx, n), as_nn_grad_norm(x, n), 1e-9 * as_nn_grad_norm(x, n));
    as_nn_clip(x, n, 0.5);
    as_nn_clip_ops(g, gx, n, 0.5);
    CHECK_EQ_I64(cmp(x, g, gx, n, 1e-7, 1e-6), 0);
    /* Adam, three steps */
    float p[n], m[n], v[n];
    for (int i = 0; i < n; i++) { p[i] = frand(); m[i] = 0; v[i] = 0; }
    float *gp = up(g, p, n), *gm = g->alloc(n * 4), *gv = g->alloc(n * 4);
    as_nn_adam_cfg c = AS_NN_ADAM_DEFAULT(1e-2f);
    c.wd = 0.01f;
    for (int s = 1; s <= 3; s++) {
        as_nn_adam(p, dy, m, v, n, &c, s);
        g->adam(gp, gdy, gm, gv, n, &c, s);
    }
    CHECK_EQ_I64(cmp(p, g, gp, n, 1e-7, 1e-6), 0);
    CHECK_EQ_I64(cmp(m, g, gm, n, 0, 1e-6), 0);
    CHECK_EQ_I64(cmp(v, g, gv, n, 0, 1e-6), 0);
    float *all[] = { gx, gy, gdy, gdx, gt, gp, gm, gv };
    for (int i = 0; i < 8; i++) g->free(all[i]);
}

/* softplus(beta x) / beta and its backward: CUDA's expf/log1pf/expm1f are within a few ulp of
 * glibc's, so a relative tolerance, not equality; inputs over the whole range (saturated,
 * the knee, linear) for beta 1 and 20 */
TEST(gpu_nn_softplus_small)
{
    const as_nn_ops *g = gpu();
    CHECK(g != NULL);
    if (!g) return;
    enum { n = 1001 };
    float beta[2] = { 1.0f, 20.0f };
    for (int b = 0; b < 2; b++) {
        float x[n], y[n], dy[n], dx[n];
        for (int i = 0; i < n; i++) { x[i] = 30.0f * frand() / beta[b]; dy[i] = frand(); dx[i] = frand(); }
        float *gx = up(g, x, n), *gy = g->alloc(n * 4), *gdy = up(g, dy, n), *gdx = up(g, dx, n);
        as_nn_softplus_fwd(y, x, n, beta[b]);
        g->softplus_fwd(gy, gx, n, beta[b]);
        CHECK_EQ_I64(cmp(y, g, gy, n, 1e-30, 1e-5), 0);
        as_nn_softplus_bwd(dx, dy, y, n, beta[b]);
        g->softplus_bwd(gdx, gdy, gy, n, beta[b]);
        CHECK_EQ_I64(cmp(dx, g, gdx, n, 1e-6, 1e-5), 0);
        /* in place, as the cost model uses it */
        g->softplus_fwd(gx, gx, n, beta[b]);
        CHECK_EQ_I64(cmp(y, g, gx, n, 1e-30, 1e-5), 0);
        g->free(gx); g->free(gy); g->free(gdy); g->free(gdx);
    }
}

TEST(gpu_nn_sumpool_small)
{
    const as_nn_ops *g = gpu();
    CHECK(g != NULL);
    if (!g) return;
    enum { S = 50, C = 32 };
    int32_t off[S + 1];
    off[0] = 0;
    for (int s = 0; s < S; s++) off[s + 1] = off[s] + (s % 7);   /* some empty sets */
    int R = off[S];
    float *x = malloc((size_t)R * C * 4), *dx = malloc((size_t)R * C * 4), y[S * C], dy[S * C];
    for (int i = 0; i < R * C; i++) { x[i] = frand(); dx[i] = frand(); }
    for (int i = 0; i < S * C; i++) dy[i] = frand();
    float *gx = up(g, x, (size_t)R * C), *gdx = up(g, dx, (size_t)R * C), *gy = g->alloc(S * C * 4), *gdy = up(g, dy, S * C);
    int32_t *goff = g->alloc(sizeof off);
    g->upload(goff, off, sizeof off);
    as_nn_sumpool_fwd(y, x, off, S, C);
    g->sumpool_fwd(gy, gx, goff, S, C);
    CHECK_EQ_I64(cmp(y, g, gy, S * C, 0, 0), 0);
    as_nn_sumpool_bwd(dx, dy, off, S, C);
    g->sumpool_bwd(gdx, gdy, goff, S, C);
    CHECK_EQ_I64(cmp(dx, g, gdx, (size_t)R * C, 0, 0), 0);
    g->free(gx); g->free(gdx); g->free(gy); g->free(gdy); g->free(goff);
    free(x); free(dx);
}

/* the cost model (output form `output`) trained 20 steps from the same init on each device */
static void costmodel_train_case(int output)
{
    const as_nn_ops *g = gpu();
    CHECK(g != NULL);
    if (!g) return;
    enum { NT = 40, K = 600 };
    static as_features tab[NT];
    static int64_t off[K + 1], idx[K * 10];
    static double cost[K];
    uint64_t st = 5;
    for (int i = 0; i < NT; i++) {
        memset(&tab[i], 0, sizeof tab[i]);
        tab[i].id = i;
        tab[i].dim = 16 * (1 + (int64_t)(as_splitmix64(&st) % 8));
        tab[i].rows = 1000 + (int64_t)(as_splitmix64(&st) % 100000);
        tab[i].pooling = 1 + (double)(as_splitmix64(&st) % 40);
        tab[i].bins[i % 17] = 1;
    }
    off[0] = 0;
    for (int k = 0; k < K; k++) {
        int n = 1 + (int)(as_splitmix64(&st) % 10);
        cost[k] = 0.1;
        for (int j = 0; j < n; j++) {
            int t = (int)(as_splitmix64(&st) % NT);
            idx[off[k] + j] = t;
            cost[k] += 0.001 * tab[t].dim * tab[t].pooling;
        }
        off[k + 1] = off[k] + n;
    }
    as_costset d = { tab, NT, off, idx, cost, K };
    as_costmodel *a = as_costmodel_new(128, 32, 64, 1), *b = as_costmodel_new(128, 32, 64, 1);
    as_costmodel_meta(a)->output = output;
    as_costmodel_meta(b)->output = output;
    as_costmodel_fit_stats(a, &d, NULL, K, 0);
    as_costmodel_fit_stats(b, &d, NULL, K, 0);
    as_costfit_opts oa = { .steps = 20, .lr = 1e-3, .batch = 128, .seed = 1, .ops = as_nn_cpu() }, ob = oa;
    ob.ops = g;
    char err[256];
    CHECK(as_costmodel_train(a, &d, NULL, K, &oa, err, sizeof err) == 0);
    CHECK(as_costmodel_train(b, &d, NULL, K, &ob, err, sizeof err) == 0);
    int64_t np;
    float *pa = as_costmodel_params(a, &np), *pb = as_costmodel_params(b, NULL);
    int64_t bad = 0;
    for (int64_t i = 0; i < np; i++) if (!(fabs(pa[i] - pb[i]) <= 1e-4 + 1e-3 * fabs(pa[i]))) bad++;
    CHECK(bad <= np / 1000);
    const as_costmodel_info *ia = as_costmodel_cmeta(a), *ib = as_costmodel_cmeta(b);
    CHECK_NEAR(ib->losses[ib->nlosses - 1], ia->losses[ia->nlosses - 1], 1e-3 * ia->losses[ia->nlosses - 1]);
    as_costmodel_free(a);
    as_costmodel_free(b);
}

TEST(gpu_nn_costmodel_train)
{
    for (int o = 0; o < AS_CM_OUT_COUNT; o++) costmodel_train_case(o);
}
