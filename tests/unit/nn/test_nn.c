/* test_nn.c - the CPU layers of lib/nn/nn.h: every gradient against central finite
 * differences, Adam against a hand-computed step, clipping, and the whole cost model's
 * gradient end to end. Dimension letters: N rows, I inputs, O outputs, S sets, C channels. */
#include "common.h"
#include "costmodel.h"
#include "nn.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_st = 12345;
static float frand(void)   /* uniform in [-1, 1) */
{
    return (float)((double)(as_splitmix64(&g_st) >> 11) * 0x1.0p-53 * 2 - 1);
}
static void fill(float *x, int n) { for (int i = 0; i < n; i++) x[i] = frand(); }

/* relative closeness for gradient checks */
static int close_rel(double a, double b, double rtol, double atol) { return fabs(a - b) <= atol + rtol * fabs(b); }

/* ---- linear ---- */

enum { N = 5, I_ = 7, O_ = 4 };

/* L = sum r .* y */
static double lin_loss(const float *x, const float *W, const float *b, const float *r)
{
    float y[N * O_];
    as_nn_linear_fwd(y, x, W, b, N, I_, O_);
    double s = 0;
    for (int i = 0; i < N * O_; i++) s += (double)r[i] * y[i];
    return s;
}

TEST(nn_linear_forward_by_hand)
{
    float x[2 * 3] = { 1, 2, 3, -1, 0, 2 }, W[2 * 3] = { 1, 0, -1, 0.5f, 0.5f, 0.5f }, b[2] = { 10, -10 }, y[4];
    as_nn_linear_fwd(y, x, W, b, 2, 3, 2);
    CHECK_NEAR(y[0], 1 - 3 + 10, 1e-6);
    CHECK_NEAR(y[1], 3 - 10, 1e-6);
    CHECK_NEAR(y[2], -1 - 2 + 10, 1e-6);
    CHECK_NEAR(y[3], 0.5 - 10, 1e-6);
    as_nn_linear_fwd(y, x, W, NULL, 2, 3, 2);
    CHECK_NEAR(y[0], -2, 1e-6);
}

TEST(nn_linear_grad_fd)
{
    float x[N * I_], W[O_ * I_], b[O_], r[N * O_];
    fill(x, N * I_); fill(W, O_ * I_); fill(b, O_); fill(r, N * O_);
    float dx[N * I_], dW[O_ * I_], db[O_];
    /* accumulation: start from 1s, subtract afterwards */
    for (int i = 0; i < N * I_; i++) dx[i] = 1;
    for (int i = 0; i < O_ * I_; i++) dW[i] = 1;
    for (int i = 0; i < O_; i++) db[i] = 1;
    as_nn_linear_bwd(dx, dW, db, r, x, W, N, I_, O_);
    const float h = 1e-2f;
    int bad = 0;
    for (int i = 0; i < N * I_; i++) {
        float s = x[i];
        x[i] = s + h; double lp = lin_loss(x, W, b, r);
        x[i] = s - h; double lm = lin_loss(x, W, b, r);
        x[i] = s;
        bad += !close_rel(dx[i] - 1, (lp - lm) / (2 * h), 1e-3, 1e-4);
    }
    for (int i = 0; i < O_ * I_; i++) {
        float s = W[i];
        W[i] = s + h; double lp = lin_loss(x, W, b, r);
        W[i] = s - h; double lm = lin_loss(x, W, b, r);
        W[i] = s;
        bad += !close_rel(dW[i] - 1, (lp - lm) / (2 * h), 1e-3, 1e-4);
    }
    for (int i = 0; i < O_; i++) {
        float s = b[i];
        b[i] = s + h; double lp = lin_loss(x, W, b, r);
        b[i] = s - h; double lm = lin_loss(x, W, b, r);
        b[i] = s;
        bad += !close_rel(db[i] - 1, (lp - lm) / (2 * h), 1e-3, 1e-4);
    }
    CHECK_EQ_I64(bad, 0);
}

/* ---- relu ---- */

TEST(nn_relu_grad_fd)
{
    enum { n = 40 };
    float x[n], y[n], r[n], dx[n];
    fill(x, n); fill(r, n);
    for (int i = 0; i < n; i++) if (fabsf(x[i]) < 0.05f) x[i] = 0.3f;   /* away from the kink */
    as_nn_relu_fwd(y, x, n);
    memset(dx, 0, sizeof dx);
    as_nn_relu_bwd(dx, r, y, n);
    int bad = 0;
    const float h = 1e-3f;
    for (int i = 0; i < n; i++) {
        float yp = x[i] + h > 0 ? x[i] + h : 0, ym = x[i] - h > 0 ? x[i] - h : 0;
        bad += !close_rel(dx[i], r[i] * (yp - ym) / (2 * h), 1e-3, 1e-4);
        bad += y[i] != (x[i] > 0 ? x[i] : 0);
    }
    CHECK_EQ_I64(bad, 0);
    /* in place */
    as_nn_relu_fwd(x, x, n);
    CHECK(!memcmp(x, y, sizeof y));
}

/* ---- sum pool ---- */

TEST(nn_sumpool_fwd_bwd)
{
    enum { C = 3, S = 4, R = 6 };
    int32_t off[S + 1] = { 0, 2, 2, 5, 6 };   /* set 1 is empty */
    float x[R * C], y[S * C], dy[S * C], dx[R * C];
    fill(x, R * C); fill(dy, S * C);
    as_nn_sumpool_fwd(y, x, off, S, C);
    for (int c = 0; c < C; c++) {
        CHECK_NEAR(y[0 * C + c], x[0 * C + c] + x[1 * C + c], 1e-6);
        CHECK_NEAR(y[1 * C + c], 0, 0);
        CHECK_NEAR(y[2 * C + c], x[2 * C + c] + x[3 * C + c] + x[4 * C + c], 1e-6);
        CHECK_NEAR(y[3 * C + c], x[5 * C + c], 0);
    }
    /* L = sum dy .* y is linear in x: dL/dx[r] = dy[set of r], checked by differences */
    for (int i = 0; i < R * C; i++) dx[i] = 0.5f;
    as_nn_sumpool_bwd(dx, dy, off, S, C);
    int bad = 0;
    for (int i = 0; i < R * C; i++) {
        float s = x[i], yy[S * C];
        double lp = 0, lm = 0;
        x[i] = s + 0.01f; as_nn_sumpool_fwd(yy, x, off, S, C); for (int k = 0; k < S * C; k++) lp += (double)dy[k] * yy[k];
        x[i] = s - 0.01f; as_nn_sumpool_fwd(yy, x, off, S, C); for (int k = 0; k < S * C; k++) lm += (double)dy[k] * yy[k];
        x[i] = s;
        bad += !close_rel(dx[i] - 0.5f, (lp - lm) / 0.02, 1e-3, 1e-4);
    }
    CHECK_EQ_I64(bad, 0);
}

/* ---- mse ---- */

TEST(nn_mse_grad_fd)
{
    enum { n = 9 };
    float p[n], t[n], dp[n];
    fill(p, n); fill(t, n);
    memset(dp, 0, sizeof dp);
    double l = as_nn_mse_fwd(p, t, n), ref = 0;
    for (int i = 0; i < n; i++) ref += ((double)p[i] - t[i]) * ((double)p[i] - t[i]);
    CHECK_NEAR(l, ref / n, 1e-12);
    as_nn_mse_bwd(dp, p, t, n);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float s = p[i];
        p[i] = s + 1e-2f; double lp = as_nn_mse_fwd(p, t, n);
        p[i] = s - 1e-2f; double lm = as_nn_mse_fwd(p, t, n);
        p[i] = s;
        bad += !close_rel(dp[i], (lp - lm) / 2e-2, 1e-3, 1e-5);
    }
    CHECK_EQ_I64(bad, 0);
}

/* ---- adam and clipping ---- */

TEST(nn_adam_hand_step)
{
    /* p = 1, lr 0.1, defaults; g = 0.5 then g = -0.25. By hand:
     * t=1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25 -> p = 1 - 0.1 * 0.5/(0.5+1e-8) = 0.9
     * t=2: m = 0.02, v = 0.00031225, mhat = 0.02/0.19, vhat = 0.00031225/0.001999
     *      -> p = 0.9 - 0.1 * 0.105263/(0.395225 + 1e-8) = 0.8733663 */
    float p = 1, g = 0.5f, m = 0, v = 0;
    as_nn_adam_cfg c = AS_NN_ADAM_DEFAULT(0.1f);
    as_nn_adam(&p, &g, &m, &v, 1, &c, 1);
    CHECK_NEAR(m, 0.05, 1e-7);
    CHECK_NEAR(v, 0.00025, 2e-8);   /* 1 - 0.999f is 0.00099999 in float */
    CHECK_NEAR(p, 0.9, 1e-6);
    g = -0.25f;
    as_nn_adam(&p, &g, &m, &v, 1, &c, 2);
    CHECK_NEAR(m, 0.02, 1e-7);
    CHECK_NEAR(v, 0.00031225, 2e-8);
    CHECK_NEAR(p, 0.8733663, 2e-6);
    /* weight decay (AdamW): the extra term is lr * wd * p */
    float p2 = 2, g2 = 0.5f, m2 = 0, v2 = 0;
    as_nn_adam_cfg cw = AS_NN_ADAM_DEFAULT(0.1f);
    cw.wd = 0.5f;
    as_nn_adam(&p2, &g2, &m2, &v2, 1, &cw, 1);
    CHECK_NEAR(p2, 2 - 0.1 * (1 + 0.5 * 2), 1e-6);
}

TEST(nn_clip)
{
    float g[2] = { 3, 4 };
    CHECK_NEAR(as_nn_grad_norm(g, 2), 5, 1e-12);
    CHECK_NEAR(as_nn_clip(g, 2, 10), 5, 1e-12);
    CHECK_NEAR(g[0], 3, 0);
    CHECK_NEAR(as_nn_clip(g, 2, 1), 5, 1e-12);
    CHECK_NEAR(g[0], 0.6, 1e-7);
    CHECK_NEAR(g[1], 0.8, 1e-7);
    CHECK_NEAR(as_nn_grad_norm(g, 2), 1, 1e-6);
    float z[2] = { 3, 4 };
    as_nn_clip_ops(as_nn_cpu(), z, 2, 0);   /* 0 = no clipping */
    CHECK_NEAR(z[1], 4, 0);
}

TEST(nn_init_and_device)
{
    float W[64 * 16], b[64];
    uint64_t s1 = 7, s2 = 7;
    as_nn_init_linear(W, b, 16, 64, &s1);
    float W2[64 * 16], b2[64];
    as_nn_init_linear(W2, b2, 16, 64, &s2);
    CHECK(!memcmp(W, W2, sizeof W));
    int bad = 0;
    for (int i = 0; i < 64 * 16; i++) bad += fabsf(W[i]) > 0.25f;
    CHECK_EQ_I64(bad, 0);
    int code;
    char err[256];
    CHECK(as_nn_device("cpu", &code, err, sizeof err) == as_nn_cpu());
    CHECK(as_nn_device("auto", &code, err, sizeof err) != NULL);
    CHECK(as_nn_device("tpu", &code, err, sizeof err) == NULL);
    CHECK_EQ_I64(code, 2);
    CHECK(as_nn_device("cuda:x", &code, err, sizeof err) == NULL);
    CHECK_EQ_I64(code, 2);
}

/* ---- the whole cost model ---- */

static void mk_table(as_features *f, int64_t id)
{
    memset(f, 0, sizeof *f);
    f->id = id;
    f->dim = 16 << (id % 3);
    f->rows = 1000 + 997 * id;
    f->pooling = 1 + (double)(id % 5) * 3.5;
    f->size_gib = (double)f->rows * f->dim * 2 / 1073741824.0;
    f->bins[id % 4] = 0.6;
    f->bins[4 + id % 7] = 0.4;
}

/* the loss gradient of a model with output form `output` against central differences */
static void grad_fd_case(int output)
{
    enum { NT = 6, K = 4 };
    as_features tab[NT];
    for (int i = 0; i < NT; i++) mk_table(&tab[i], i);
    int64_t off[K + 1] = { 0, 2, 3, 6, 8 }, idx[8] = { 0, 1, 2, 3, 4, 5, 1, 3 };
    double cost[K] = { 1.5, 0.7, 3.2, 2.0 };
    as_costset d = { tab, NT, off, idx, cost, K };
    as_costmodel *m = as_costmodel_new(8, 5, 6, 3);   /* small hidden sizes */
    as_costmodel_meta(m)->output = output;
    as_costmodel_fit_stats(m, &d, NULL, K, 0);
    int64_t np;
    float *P = as_costmodel_params(m, &np);
    float *G = calloc((size_t)np, sizeof *G);
    as_costmodel_loss_grad(m, &d, NULL, K, G);
    /* biases push every ReLU input away from 0 by at most ~h: use a small h in float and a
     * loose tolerance; count mismatches rather than demand all */
    int bad = 0, checked = 0;
    const float h = 2e-3f;
    for (int64_t i = 0; i < np; i++) {
        float s = P[i];
        P[i] = s + h; double lp = as_costmodel_loss_grad(m, &d, NULL, K, NULL);
        P[i] = s - h; double lm = as_costmodel_loss_grad(m, &d, NULL, K, NULL);
        P[i] = s;
        double fd = (lp - lm) / (2 * h);
        checked++;
        if (!close_rel(G[i], fd, 2e-2, 2e-3)) {
            if (bad < 5)
                fprintf(stderr, "  %s: param %lld: analytic %.6g, differences %.6g\n", as_costmodel_output_name(output),
                        (long long)i, G[i], fd);
            bad++;
        }
    }
    CHECK(checked == np);
    CHECK(bad <= np / 100);   /* the odd ReLU kink crossed by +-h */
    /* the gradient is not trivially zero */
    CHECK(as_nn_grad_norm(G, np) > 1e-3);
    free(G);
    as_costmodel_free(m);
}

TEST(costmodel_grad_fd_end_to_end)
{
    for (int o = 0; o < AS_CM_OUT_COUNT; o++) grad_fd_case(o);
}

/* ---- softplus (the cost model's constrained output) ---- */

TEST(nn_softplus_by_hand_and_grad_fd)
{
    /* log(1 + e^u) / beta by hand: ln 2, ln(1+e), ln(1+e^-1), ln(1+e^2) / 20, ln(1+e^-2) / 20 */
    float x[7] = { 0, 1, -1, 0.1f, -0.1f, 50, -100 }, y[7];
    as_nn_softplus_fwd(y, x, 3, 1.0f);
    as_nn_softplus_fwd(y + 3, x + 3, 2, 20.0f);
    as_nn_softplus_fwd(y + 5, x + 5, 2, 1.0f);
    CHECK_NEAR(y[0], 0.69314718, 1e-6);
    CHECK_NEAR(y[1], 1.31326169, 1e-6);
    CHECK_NEAR(y[2], 0.31326169, 1e-6);
    CHECK_NEAR(y[3], 2.12692801 / 20, 1e-7);
    CHECK_NEAR(y[4], 0.12692801 / 20, 1e-8);
    CHECK_NEAR(y[5], 50, 1e-5);          /* no overflow of e^50 in float */
    CHECK(y[6] >= 0 && y[6] < 1e-40);    /* e^-100, never negative */
    /* gradients against central differences, for beta 1 and 20, in place too */
    enum { n = 40 };
    float beta[2] = { 1.0f, 20.0f };
    for (int b = 0; b < 2; b++) {
        float xs[n], ys[n], r[n], dx[n];
        fill(xs, n); fill(r, n);
        for (int i = 0; i < n; i++) xs[i] *= 3.0f / beta[b];
        as_nn_softplus_fwd(ys, xs, n, beta[b]);
        memset(dx, 0, sizeof dx);
        as_nn_softplus_bwd(dx, r, ys, n, beta[b]);
        int bad = 0;
        const double h = 1e-3 / beta[b];
        for (int i = 0; i < n; i++) {
            double u = beta[b] * xs[i], up = beta[b] * (xs[i] + h), um = beta[b] * (xs[i] - h);
            double sp = log1p(exp(up)) / beta[b], sm = log1p(exp(um)) / beta[b];
            bad += !close_rel(dx[i], r[i] * (sp - sm) / (2 * h), 1e-3, 1e-5);
            bad += !close_rel(ys[i], log1p(exp(u)) / beta[b], 1e-6, 1e-7);
            bad += !(ys[i] > 0);
        }
        CHECK_EQ_I64(bad, 0);
        float in[n];
        memcpy(in, xs, sizeof in);
        as_nn_softplus_fwd(in, in, n, beta[b]);
        CHECK(!memcmp(in, ys, sizeof ys));
    }
    /* the CPU ops table carries them */
    CHECK(as_nn_cpu()->softplus_fwd == as_nn_softplus_fwd && as_nn_cpu()->softplus_bwd == as_nn_softplus_bwd);
}
