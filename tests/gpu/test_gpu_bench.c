/* test_gpu_bench.c - the benchmark context on CUDA (as_eb_gpu_ctx, lib/kernels/embbag.cu) and the
 * CUDA bench session (lib/bench/bench.c) against their CPU references, bit for bit:
 *   the device gather of a shard's bags      vs as_ebg_gather (concatenation on the host)
 *   device-generated weights and gradients   vs as_ebg_fill_weights / as_ebg_fill_grad
 *   a whole shard measured through the context (as_eb_gpu_measure: warm-ups, flushes, timed
 *   runs) vs as many forward + backward iterations of the CPU reference on the CPU's data
 *   a CUDA bench session vs a CPU bench session on the same shard (same seed and protocol)
 * with the pool resident on the device and uploaded per shard, shards of growing and
 * shrinking size in one context, odd dims, one-row tables, empty bags, hot rows.
 * Dimension letters: B batch, D dim, E rows, T tables.
 *
 * Run on a GPU machine by `make gpu-test`; *_small tests are re-run under compute-sanitizer.
 * Without a CUDA device every test fails (they are only meant to run where one is). */
#include "bench.h"
#include "benchcalib.h"
#include "benchnoise.h"
#include "common.h"
#include "ebgen.h"
#include "ebopt.h"
#include "embbag.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a pool ------------------------------------------------------------------------------------ */

#define MAXT 16

typedef struct {
    int n;
    as_eb_table t[MAXT];
    int64_t *off[MAXT];
    int32_t *ind[MAXT];
} pool_t;

/* table i: id 200+i, dims[i], rows[i], batch B, bags of 0..lmax lookups; a fraction hot[i] of
 * them on row 3 % E (long runs) */
static pool_t *mk_pool(int n, int64_t B, const int64_t *dims, const int64_t *rows, const int *lmax, const double *hot,
                       uint64_t seed)
{
    pool_t *p = calloc(1, sizeof *p);
    p->n = n;
    for (int i = 0; i < n; i++) {
        p->off[i] = malloc(sizeof(int64_t) * (size_t)(B + 1));
        p->off[i][0] = 0;
        for (int64_t b = 0; b < B; b++)
            p->off[i][b + 1] = p->off[i][b] + (lmax[i] ? (int64_t)(as_splitmix64(&seed) % (uint64_t)(lmax[i] + 1)) : 0);
        int64_t L = p->off[i][B];
        p->ind[i] = malloc(sizeof(int32_t) * (size_t)(L + 1));
        for (int64_t k = 0; k < L; k++) {
            double u = (double)(as_splitmix64(&seed) >> 11) / 9007199254740992.0;
            p->ind[i][k] = u < hot[i] ? (int32_t)(3 % rows[i]) : (int32_t)(as_splitmix64(&seed) % (uint64_t)rows[i]);
        }
        as_eb_table t = { 200 + i, rows[i], B, dims[i], L, p->off[i], p->ind[i] };
        p->t[i] = t;
    }
    return p;
}

static void free_pool(pool_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) { free(p->off[i]); free(p->ind[i]); }
    free(p);
}

/* ---- the CPU's version of a shard -------------------------------------------------------------- */

typedef struct {
    as_eb_shard s;
    int64_t rows[MAXT], w_off[MAXT + 1], ids[MAXT], n, wn, outn;
    int32_t dims[MAXT], d_off[MAXT + 1];
    int64_t *off;
    int32_t *ind;
    uint16_t *W;
    float *grad;
} cshard_t;

static cshard_t *cpu_shard(const pool_t *p, const int64_t *pos, int T, uint64_t seed)
{
    cshard_t *h = calloc(1, sizeof *h);
    const as_eb_table *tb[MAXT];
    for (int t = 0; t < T; t++) { tb[t] = &p->t[pos[t]]; h->ids[t] = tb[t]->id; h->n += tb[t]->lookups; }
    int64_t B = tb[0]->batch;
    h->wn = as_ebg_layout(tb, T, h->rows, h->dims, h->w_off, h->d_off);
    h->outn = B * h->d_off[T];
    h->off = malloc(sizeof(int64_t) * (size_t)(T * B + 1));
    h->ind = malloc(sizeof(int32_t) * (size_t)(h->n + 1));
    as_ebg_gather(h->off, h->ind, tb, T, B, 0);
    as_eb_shard s = { T, B, h->rows, h->dims, h->w_off, h->d_off, h->off, h->ind };
    h->s = s;
    h->W = malloc(sizeof(uint16_t) * (size_t)(h->wn + 1));
    h->grad = malloc(sizeof(float) * (size_t)(h->outn + 1));
    as_ebg_fill_weights(h->W, &h->s, h->ids, seed, 0);
    as_ebg_fill_grad(h->grad, &h->s, h->ids, seed, 0);
    return h;
}

static void free_cshard(cshard_t *h)
{
    if (!h) return;
    free(h->off); free(h->ind); free(h->W); free(h->grad); free(h);
}

/* iters forward + backward iterations on the CPU: the naive references for small shards,
 * the OpenMP path (same summation order, tested against them) for large ones; out gets the
 * last forward */
static void cpu_iters(cshard_t *h, float *out, float lr, int iters, int fast)
{
    as_eb_cpu_ws *ws = fast ? as_eb_cpu_ws_new(&h->s) : NULL;
    for (int i = 0; i < iters; i++) {
        if (fast) {
            as_eb_forward_cpu(out, h->W, &h->s, 0);
            as_eb_backward_sgd_cpu(h->W, h->grad, &h->s, lr, ws, 0);
        } else {
            as_eb_forward_ref(out, h->W, &h->s);
            as_eb_backward_sgd_ref(h->W, h->grad, &h->s, lr);
        }
    }
    as_eb_cpu_ws_free(ws);
}

/* ---- comparisons ------------------------------------------------------------------------------- */

static int same_bits(const void *a, const void *b, size_t n, size_t elt, const char *what)
{
    size_t bad = 0, first = 0;
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (memcmp(x + i * elt, y + i * elt, elt)) { if (!bad) first = i; bad++; }
    if (bad) fprintf(stderr, "  %s: %zu of %zu elements differ (first at %zu)\n", what, bad, n, first);
    else fprintf(stderr, "  %s: %zu/%zu bit-exact\n", what, n, n);
    CHECK_EQ_I64(bad, 0);
    return bad == 0;
}

static void guards_ok(as_eb_gpu *g)
{
#ifdef AS_HAVE_CUDA
    char err[256] = "";
    int rc = as_eb_gpu_check_guards(g, err, sizeof err);
    if (rc) fprintf(stderr, "  guards: %s\n", err);
    CHECK(rc == 0);
#else
    (void)g;
#endif
}

/* what the context set up for the shard equals the CPU's: bags, weights (padding included),
 * gradients; the output holds the guard pattern everywhere */
static void check_setup(as_eb_gpu *g, const cshard_t *h, const char *what)
{
    char err[256] = "";
    int64_t *off = malloc(sizeof(int64_t) * (size_t)(h->s.T * h->s.B + 1));
    int32_t *ind = malloc(sizeof(int32_t) * (size_t)(h->n + 1));
    float *grad = malloc(sizeof(float) * (size_t)(h->outn + 1)), *out = malloc(sizeof(float) * (size_t)(h->outn + 1));
    uint16_t *W = malloc(sizeof(uint16_t) * (size_t)(h->wn + 1));
    int rc = as_eb_gpu_download_inputs(g, off, ind, grad, err, sizeof err);
    if (!rc) rc = as_eb_gpu_download(g, out, W, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: download: %s\n", what, err);
    CHECK(rc == 0);
    if (!rc) {
        fprintf(stderr, "  %s:\n", what);
        same_bits(off, h->off, (size_t)(h->s.T * h->s.B + 1), 8, "gathered offsets");
        same_bits(ind, h->ind, (size_t)h->n, 4, "gathered indices");
        same_bits(W, h->W, (size_t)h->wn, 2, "generated weights");
        same_bits(grad, h->grad, (size_t)h->outn, 4, "generated gradients");
        size_t notguard = 0;
        for (int64_t i = 0; i < h->outn; i++) {
            uint32_t u;
            memcpy(&u, &out[i], 4);
            notguard += u != 0x7fbadbadu;
        }
        CHECK_EQ_I64(notguard, 0);
        guards_ok(g);
    }
    free(off); free(ind); free(grad); free(out); free(W);
}

/* forward + backward `iters` times through the handle, each compared with the CPU */
static void check_iters(as_eb_gpu *g, cshard_t *h, float lr, int iters, int fast, const char *what)
{
    char err[256] = "";
    float *out = malloc(sizeof(float) * (size_t)(h->outn + 1)), *outc = malloc(sizeof(float) * (size_t)(h->outn + 1));
    uint16_t *W = malloc(sizeof(uint16_t) * (size_t)(h->wn + 1));
    for (int it = 0; it < iters; it++) {
        float ms = -1;
        int rc = as_eb_gpu_forward(g, &ms, err, sizeof err);
        if (!rc) rc = as_eb_gpu_backward_sgd(g, lr, &ms, err, sizeof err);
        if (!rc) rc = as_eb_gpu_download(g, out, W, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: %s\n", what, err);
        CHECK(rc == 0);
        if (rc) break;
        cpu_iters(h, outc, lr, 1, fast);
        fprintf(stderr, "  %s, iteration %d:\n", what, it + 1);
        same_bits(out, outc, (size_t)h->outn, 4, "forward");
        same_bits(W, h->W, (size_t)h->wn, 2, "weights");
        guards_ok(g);
    }
    free(out); free(outc); free(W);
}

/* the protocol through as_eb_gpu_measure, then the weights and the last forward compared
 * with warmup + runs CPU iterations */
static void check_measure(as_eb_gpu *g, cshard_t *h, float lr, int warmup, int runs, int fast, const char *what)
{
    char err[256] = "";
    double fw[16], bw[16], busy = -1;
    int rc = as_eb_gpu_measure(g, warmup, runs, lr, fw, bw, &busy, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: measure: %s\n", what, err);
    CHECK(rc == 0);
    if (rc) return;
    double timed = 0;
    for (int r = 0; r < runs; r++) {
        CHECK(fw[r] >= 0 && bw[r] >= 0);
        timed += fw[r] + bw[r];
    }
    CHECK(busy >= timed * (1 - 1e-6));
    fprintf(stderr, "  %s: measured %d runs, busy %.3f ms (timed %.3f ms)\n", what, runs, busy, timed);
    float *out = malloc(sizeof(float) * (size_t)(h->outn + 1)), *outc = malloc(sizeof(float) * (size_t)(h->outn + 1));
    uint16_t *W = malloc(sizeof(uint16_t) * (size_t)(h->wn + 1));
    rc = as_eb_gpu_download(g, out, W, err, sizeof err);
    CHECK(rc == 0);
    cpu_iters(h, outc, lr, warmup + runs, fast);
    same_bits(out, outc, (size_t)h->outn, 4, "forward after the protocol");
    same_bits(W, h->W, (size_t)h->wn, 2, "weights after the protocol");
    guards_ok(g);
    free(out); free(outc); free(W);
}

/* odd dims, a one-row table, a table without lookups, empty bags, a hot row */
static pool_t *odd_pool(void)
{
    int64_t dims[7] = {1, 3, 17, 33, 100, 8, 64}, rows[7] = {7, 300, 1, 129, 250, 40, 1000};
    int lmax[7] = {3, 20, 6, 0, 9, 30, 12};
    double hot[7] = {0, 0, 0, 0, 0.1, 0.8, 0.3};
    return mk_pool(7, 48, dims, rows, lmax, hot, 1);
}

/* ---- cases ------------------------------------------------------------------------------------- */

TEST(gpu_ctx_setup_small)
{
    pool_t *p = odd_pool();
    for (int resident = 1; resident >= 0; resident--) {
        char err[256] = "";
        as_eb_gpu_ctx *ctx = NULL;
        int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, resident, err, sizeof err);
        if (rc) fprintf(stderr, "  ctx: %s\n", err);
        CHECK(rc == 0);
        if (rc) break;
        CHECK_EQ_I64(as_eb_gpu_ctx_resident(ctx), resident);
        int64_t pos[5] = {4, 0, 3, 2, 6};
        as_eb_gpu *g = NULL;
        rc = as_eb_gpu_ctx_shard(ctx, pos, 5, 11, &g, err, sizeof err);
        if (rc) fprintf(stderr, "  shard: %s\n", err);
        CHECK(rc == 0 && g != NULL);
        if (!rc) {
            cshard_t *h = cpu_shard(p, pos, 5, 11);
            check_setup(g, h, resident ? "resident pool" : "uploaded per shard");
            free_cshard(h);
        }
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}

TEST(gpu_ctx_shard_small)
{
    pool_t *p = odd_pool();
    char err[256] = "";
    as_eb_gpu_ctx *ctx = NULL;
    int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, 1, err, sizeof err);
    if (rc) fprintf(stderr, "  ctx: %s\n", err);
    CHECK(rc == 0);
    if (!rc) {
        int64_t pos[6] = {6, 5, 1, 0, 4, 2};
        as_eb_gpu *g = NULL;
        /* forward and backward step by step */
        CHECK(as_eb_gpu_ctx_shard(ctx, pos, 6, 3, &g, err, sizeof err) == 0);
        cshard_t *h = cpu_shard(p, pos, 6, 3);
        check_iters(g, h, 0.05f, 2, 0, "step by step");
        free_cshard(h);
        /* the same shard again (set up anew), through the whole protocol */
        CHECK(as_eb_gpu_ctx_shard(ctx, pos, 6, 3, &g, err, sizeof err) == 0);
        h = cpu_shard(p, pos, 6, 3);
        check_measure(g, h, 0.05f, 2, 3, 0, "protocol");
        free_cshard(h);
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}

/* data-parallel bag slices (lib/bench/benchpool.c as_bpool_slice): a table's bags [b0, b1) with
 * its offsets rebased to 0 and its indices borrowed from the parent's array at offsets[b0];
 * a shard of slices of different tables, resident and uploaded per shard, set up and run
 * bit-exact against the CPU, beside the parents in the same pool */
TEST(gpu_ctx_slice_small)
{
    pool_t *p = odd_pool();
    const int par[3] = {4, 6, 1};
    const int64_t b0[3] = {0, 24, 17}, b1[3] = {24, 48, 41};
    for (int k = 0; k < 3; k++) {
        int i = p->n++;
        const as_eb_table *q = &p->t[par[k]];
        int64_t nb = b1[k] - b0[k], base = q->offsets[b0[k]];
        p->off[i] = malloc(sizeof(int64_t) * (size_t)(nb + 1));
        for (int64_t b = 0; b <= nb; b++) p->off[i][b] = q->offsets[b0[k] + b] - base;
        p->ind[i] = NULL;   /* borrowed */
        as_eb_table t = { 300 + k, q->rows, nb, q->dim, p->off[i][nb], p->off[i], q->indices + base };
        p->t[i] = t;
    }
    for (int resident = 1; resident >= 0; resident--) {
        char err[256] = "";
        as_eb_gpu_ctx *ctx = NULL;
        int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, resident, err, sizeof err);
        if (rc) fprintf(stderr, "  ctx: %s\n", err);
        CHECK(rc == 0);
        if (rc) break;
        const char *what = resident ? "slices, resident pool" : "slices, uploaded per shard";
        int64_t pos[3] = {8, 7, 9}, whole[2] = {4, 6};
        as_eb_gpu *g = NULL;
        rc = as_eb_gpu_ctx_shard(ctx, pos, 3, 5, &g, err, sizeof err);
        if (rc) fprintf(stderr, "  shard: %s\n", err);
        CHECK(rc == 0 && g != NULL);
        if (!rc) {
            cshard_t *h = cpu_shard(p, pos, 3, 5);
            check_setup(g, h, what);
            free_cshard(h);
            CHECK(as_eb_gpu_ctx_shard(ctx, pos, 3, 5, &g, err, sizeof err) == 0);
            h = cpu_shard(p, pos, 3, 5);
            check_measure(g, h, 0.05f, 2, 3, 0, what);
            free_cshard(h);
            /* the parents whole after their slices: their own bags, not the slices' */
            CHECK(as_eb_gpu_ctx_shard(ctx, whole, 2, 5, &g, err, sizeof err) == 0);
            h = cpu_shard(p, whole, 2, 5);
            check_iters(g, h, 0.05f, 1, 0, "the slices' parents whole");
            free_cshard(h);
        }
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}

TEST(gpu_ctx_reuse_small)
{
    pool_t *p = odd_pool();
    for (int resident = 0; resident <= 1; resident++) {
        char err[256] = "";
        as_eb_gpu_ctx *ctx = NULL;
        int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, resident, err, sizeof err);
        CHECK(rc == 0);
        if (rc) break;
        const int64_t all[7] = {0, 1, 2, 3, 4, 5, 6}, one[1] = {6}, two[2] = {3, 1}, five[5] = {6, 5, 4, 2, 0};
        const int64_t *shards[5] = {all, one, two, five, all};
        int Ts[5] = {7, 1, 2, 5, 7};
        int64_t grows_after_first = -1, grows = 0, nsh = 0;
        size_t bytes = 0;
        for (int k = 0; k < 5; k++) {
            as_eb_gpu *g = NULL;
            rc = as_eb_gpu_ctx_shard(ctx, shards[k], Ts[k], 100 + k, &g, err, sizeof err);
            if (rc) fprintf(stderr, "  shard %d: %s\n", k, err);
            CHECK(rc == 0);
            if (rc) break;
            cshard_t *h = cpu_shard(p, shards[k], Ts[k], 100 + k);
            check_setup(g, h, "reused context");
            check_iters(g, h, 0.02f, 1, 0, "reused context");
            free_cshard(h);
            as_eb_gpu_ctx_stats(ctx, &bytes, &grows, &nsh);
            if (k == 0) grows_after_first = grows;
        }
        /* the first (largest) shard sized the workspace: nothing was allocated after it */
        CHECK_EQ_I64(grows, grows_after_first);
        CHECK_EQ_I64(nsh, 5);
        CHECK(bytes > 0);
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}

TEST(gpu_ctx_errors_small)
{
    pool_t *p = odd_pool();
    p->ind[1][5] = 300;                /* table 201: index out of range */
    char err[256] = "";
    as_eb_gpu_ctx *ctx = NULL;
    int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, 1, err, sizeof err);
    CHECK(rc == 0);
    if (!rc) {
        as_eb_gpu *g = NULL;
        int64_t bad[2] = {0, 1};
        CHECK(as_eb_gpu_ctx_shard(ctx, bad, 2, 1, &g, err, sizeof err) == -1);
        CHECK(g == NULL);
        CHECK(strstr(err, "table 201") != NULL);
        int64_t nowhere[1] = {7};
        CHECK(as_eb_gpu_ctx_shard(ctx, nowhere, 1, 1, &g, err, sizeof err) == -1);
        CHECK(as_eb_gpu_ctx_shard(ctx, nowhere, 0, 1, &g, err, sizeof err) == -1);
        /* a good shard afterwards, and as_eb_gpu_destroy on the context's handle does nothing */
        int64_t good[2] = {4, 5};
        CHECK(as_eb_gpu_ctx_shard(ctx, good, 2, 1, &g, err, sizeof err) == 0);
        as_eb_gpu_destroy(g);
        cshard_t *h = cpu_shard(p, good, 2, 1);
        check_iters(g, h, 0.05f, 1, 0, "after errors");
        free_cshard(h);
        as_eb_gpu_ctx_destroy(ctx);
    }
    /* mixed batch sizes */
    int64_t d1[2] = {8, 8}, r1[2] = {10, 10};
    int l1[2] = {3, 3};
    double h1[2] = {0, 0};
    pool_t *q = mk_pool(2, 16, d1, r1, l1, h1, 2);
    q->t[1].batch = 8;
    q->t[1].lookups = q->off[1][8];
    rc = as_eb_gpu_ctx_create(&ctx, 0, q->t, q->n, 0, err, sizeof err);
    CHECK(rc == 0);
    if (!rc) {
        as_eb_gpu *g = NULL;
        int64_t both[2] = {0, 1};
        CHECK(as_eb_gpu_ctx_shard(ctx, both, 2, 1, &g, err, sizeof err) == -1);
        CHECK(strstr(err, "batch") != NULL);
        as_eb_gpu_ctx_destroy(ctx);
    }
    CHECK(as_eb_gpu_ctx_create(&ctx, 1000, q->t, q->n, 1, err, sizeof err) == -1);
    CHECK(ctx == NULL);
    free_pool(q);
    free_pool(p);
}

/* the pipelined halves (as_eb_gpu_measure_start/_end): shard B set up and its measurement
 * started while shard A's runs leave both right: A's times come back, then B's, B's data
 * after its protocol equal the CPU's bit for bit, the set-up times stay with their
 * shards; a third start is refused; also when B grows the workspace (a synchronisation
 * inside its set-up) and with the pool uploaded per shard */
TEST(gpu_ctx_pipelined_small)
{
    pool_t *p = odd_pool();
    for (int resident = 1; resident >= 0; resident--) {
        char err[256] = "";
        as_eb_gpu_ctx *ctx = NULL;
        int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, resident, err, sizeof err);
        CHECK(rc == 0);
        if (rc) break;
        const int64_t big[6] = {6, 5, 1, 0, 4, 2}, small[2] = {3, 1}, all[7] = {0, 1, 2, 3, 4, 5, 6};
        /* big then small (no growth), then small then all (the workspace grows) */
        const int64_t *first[2] = {big, small}, *second[2] = {small, all};
        const int T1[2] = {6, 2}, T2[2] = {2, 7};
        for (int c = 0; c < 2; c++) {
            as_eb_gpu *g = NULL, *g2 = NULL;
            CHECK(as_eb_gpu_ctx_shard(ctx, first[c], T1[c], 30 + c, &g, err, sizeof err) == 0);
            rc = as_eb_gpu_measure_start(g, 1, 3, 0.05f, err, sizeof err);
            if (rc) fprintf(stderr, "  start A: %s\n", err);
            CHECK(rc == 0);
            if (rc) break;
            rc = as_eb_gpu_ctx_shard(ctx, second[c], T2[c], 40 + c, &g2, err, sizeof err);
            if (rc) fprintf(stderr, "  set up B: %s\n", err);
            CHECK(rc == 0 && g2 == g);
            rc = as_eb_gpu_measure_start(g, 2, 2, 0.05f, err, sizeof err);
            if (rc) fprintf(stderr, "  start B: %s\n", err);
            CHECK(rc == 0);
            if (rc) break;
            /* a third start is refused; the two go on */
            CHECK(as_eb_gpu_measure_start(g, 1, 1, 0.05f, err, sizeof err) == -1);
            double fw[3], bw[3], busy = -1, setup = -1, flush = -1;
            for (int m = 0; m < 2; m++) {
                const int runs = m ? 2 : 3;
                rc = as_eb_gpu_measure_end(g, fw, bw, &busy, err, sizeof err);
                if (rc) fprintf(stderr, "  end %c: %s\n", "AB"[m], err);
                CHECK(rc == 0);
                double timed = 0;
                for (int r = 0; r < runs && !rc; r++) {
                    CHECK(fw[r] > 0 && bw[r] > 0);
                    timed += fw[r] + bw[r];
                }
                CHECK(busy >= timed * (1 - 1e-6));
                as_eb_gpu_overhead(g, &setup, &flush);
                CHECK(setup > 0 && flush > 0);
                fprintf(stderr, "  case %d (%s), shard %c: busy %.3f ms, set-up %.3f ms, flushes %.3f ms\n", c,
                        resident ? "resident" : "uploaded", "AB"[m], busy, setup, flush);
            }
            /* none is started now */
            CHECK(as_eb_gpu_measure_end(g, fw, bw, &busy, err, sizeof err) == -1);
            /* B's weights and last forward after its 2 + 2 iterations, queued behind A's */
            cshard_t *h = cpu_shard(p, second[c], T2[c], 40 + c);
            float *out = malloc(sizeof(float) * (size_t)(h->outn + 1)), *outc = malloc(sizeof(float) * (size_t)(h->outn + 1));
            uint16_t *W = malloc(sizeof(uint16_t) * (size_t)(h->wn + 1));
            rc = as_eb_gpu_download(g, out, W, err, sizeof err);
            CHECK(rc == 0);
            if (!rc) {
                cpu_iters(h, outc, 0.05f, 4, 0);
                same_bits(out, outc, (size_t)h->outn, 4, "B's forward after its protocol, behind A's");
                same_bits(W, h->W, (size_t)h->wn, 2, "B's weights after its protocol, behind A's");
                guards_ok(g);
            }
            free(out); free(outc); free(W);
            free_cshard(h);
            /* and the handle measures alone again */
            CHECK(as_eb_gpu_ctx_shard(ctx, first[c], T1[c], 50 + c, &g, err, sizeof err) == 0);
            h = cpu_shard(p, first[c], T1[c], 50 + c);
            check_measure(g, h, 0.05f, 1, 2, 0, "measured alone after it");
            free_cshard(h);
        }
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}

TEST(gpu_measure_created_small)
{
    /* as_eb_gpu_measure on a handle of as_eb_gpu_create (host data uploaded) */
    pool_t *p = odd_pool();
    int64_t pos[3] = {5, 2, 4};
    cshard_t *h = cpu_shard(p, pos, 3, 8);
    char err[256] = "";
    as_eb_gpu *g = NULL;
    int rc = as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err);
    if (rc) fprintf(stderr, "  create: %s\n", err);
    CHECK(rc == 0);
    if (!rc) {
        check_measure(g, h, 0.05f, 1, 2, 0, "created handle");
        double fw[1], bw[1];
        CHECK(as_eb_gpu_measure(g, 0, 1, 0.05f, NULL, bw, NULL, err, sizeof err) == -1);
        CHECK(as_eb_gpu_measure(g, 0, 0, 0.05f, fw, bw, NULL, err, sizeof err) == 0);
        as_eb_gpu_destroy(g);
    }
    free_cshard(h);
    free_pool(p);
}

/* the bench pool (lib/bench/bench.h) over odd_pool()'s tables, ids 200..; free bp.t and bp.index
 * (the table data stays p's) */
static void bench_pool(as_bpool *bp, const pool_t *p)
{
    memset(bp, 0, sizeof *bp);
    bp->n = bp->cap = p->n;
    bp->t = calloc((size_t)p->n, sizeof *bp->t);
    bp->maxid = 200 + p->n - 1;
    bp->index = calloc((size_t)bp->maxid + 1, sizeof *bp->index);
    for (int i = 0; i < p->n; i++) {
        as_btable t;
        memset(&t, 0, sizeof t);
        t.id = p->t[i].id;
        t.rows = p->t[i].rows;
        t.batch = p->t[i].batch;
        t.dim = p->t[i].dim;
        t.lookups = p->t[i].lookups;
        t.offsets = p->off[i];
        t.indices = p->ind[i];
        bp->t[i] = t;
        bp->index[t.id] = i + 1;
    }
}

/* a bench session on CUDA measures exactly what one on the CPU does */
/* the single runs (two shards, then the first again) on the CPU session sc and the CUDA
   session sg: the same lookups and bytes, the same data bit for bit */
static void session_singles(as_bench_session *sc, as_bench_session *sg, const int64_t *s1, const int64_t *s2)
{
    char err[256] = "";
    const int64_t *shards[3] = {s1, s2, s1};
    int Ts[3] = {4, 2, 4};
    for (int k = 0; k < 3; k++) {
        as_bench_result rc_, rg;
        as_bench_session_run(sc, shards[k], Ts[k], &rc_);
        as_bench_session_run(sg, shards[k], Ts[k], &rg);
        if (!rg.ok) fprintf(stderr, "  cuda: %s\n", rg.error);
        CHECK(rc_.ok && rg.ok);
        if (!rc_.ok || !rg.ok) continue;
        CHECK(rg.device[0] != 0);
        CHECK(rg.cost_ms > 0);
        CHECK(rg.busy_ms > 0 && rg.busy_ms <= rg.wall_ms);
        CHECK_EQ_I64(rg.lookups, rc_.lookups);
        CHECK_EQ_I64(rg.bytes, rc_.bytes);
        fprintf(stderr, "  shard %d: cuda %.3f ms (busy %.2f of %.2f ms wall), cpu %.3f ms\n", k, rg.cost_ms,
                rg.busy_ms, rg.wall_ms, rc_.cost_ms);
        as_eb_shard a, b;
        const uint16_t *Wa, *Wb;
        const float *ga, *gb, *oa, *ob;
        CHECK(as_bench_session_last(sc, &a, &Wa, &ga, &oa, err, sizeof err) == 0);
        int r2 = as_bench_session_last(sg, &b, &Wb, &gb, &ob, err, sizeof err);
        if (r2) fprintf(stderr, "  last: %s\n", err);
        CHECK(r2 == 0);
        if (r2) continue;
        int64_t T = a.T, B = a.B, n = a.offsets[T * B], outn = B * a.d_off[T];
        CHECK_EQ_I64(b.T, T);
        same_bits(b.offsets, a.offsets, (size_t)(T * B + 1), 8, "session offsets");
        same_bits(b.indices, a.indices, (size_t)n, 4, "session indices");
        same_bits(gb, ga, (size_t)outn, 4, "session gradients");
        same_bits(ob, oa, (size_t)outn, 4, "session last forward");
        same_bits(Wb, Wa, (size_t)a.w_off[T], 2, "session weights after the protocol");
    }
}

/* a group of three on CUDA (pipelined: the next shard set up while one is measured): each
   shard's lookups and bytes as the CPU's single runs, the last shard's data bit for bit
   against a CPU run of it, the group's wall time shared out without overlap */
static void session_group(as_bench_session *sc, as_bench_session *sg, const int64_t *s1, const int64_t *s2)
{
    char err[256] = "";
    const int64_t s3[1] = {202};
    as_bench_shardref grp[3] = { { s2, 2, 0 }, { s1, 4, 0 }, { s3, 1, 0 } };
    as_bench_result gc[3], gg[3];
    const double tc = as_now();
    as_bench_session_run_group(sg, grp, 3, gg);
    const double wall = (as_now() - tc) * 1e3;
    for (int j = 0; j < 3; j++) as_bench_session_run(sc, grp[j].ids, grp[j].n, &gc[j]);
    double wsum = 0, bsum = 0;
    for (int j = 0; j < 3; j++) {
        if (!gg[j].ok) fprintf(stderr, "  group shard %d: %s\n", j, gg[j].error);
        CHECK(gc[j].ok && gg[j].ok);
        CHECK_EQ_I64(gg[j].lookups, gc[j].lookups);
        CHECK_EQ_I64(gg[j].bytes, gc[j].bytes);
        CHECK(gg[j].busy_ms > 0);
        CHECK(gg[j].setup_ms > 0);
        wsum += gg[j].wall_ms;
        bsum += gg[j].busy_ms;
    }
    CHECK(wsum <= wall * (1 + 1e-6));
    CHECK(bsum <= wsum);
    fprintf(stderr, "  group of 3: walls sum %.3f ms of %.3f ms\n", wsum, wall);
    as_eb_shard a, b;
    const uint16_t *Wa, *Wb;
    const float *ga, *gb, *oa, *ob;
    CHECK(as_bench_session_last(sc, &a, &Wa, &ga, &oa, err, sizeof err) == 0);
    CHECK(as_bench_session_group_data(sg, 0, &b, &Wb, &gb, &ob, err, sizeof err) == -1);
    int r2 = as_bench_session_group_data(sg, 2, &b, &Wb, &gb, &ob, err, sizeof err);
    if (r2) fprintf(stderr, "  group data: %s\n", err);
    CHECK(r2 == 0);
    if (!r2) {
        int64_t T = a.T, B = a.B, outn = B * a.d_off[T];
        CHECK_EQ_I64(b.T, T);
        same_bits(ob, oa, (size_t)outn, 4, "group's last shard: last forward");
        same_bits(Wb, Wa, (size_t)a.w_off[T], 2, "group's last shard: weights after the protocol");
    }
}

/* the CPU session's config the session tests compare the CUDA one against */
static as_bench_cfg session_cfg(void)
{
    as_bench_cfg c;
    memset(&c, 0, sizeof c);
    c.warmup = 2;
    c.runs = 3;
    c.trim = 1;
    c.lr = 0.03f;
    c.seed = 5;
    c.threads = 2;
    c.flush_bytes = 1 << 20;
    return c;
}

static void session_pair(int per_shard_upload)
{
    pool_t *p = odd_pool();
    as_bpool bp;
    bench_pool(&bp, p);
    as_bench_cfg c = session_cfg();
    c.per_shard_upload = per_shard_upload;
    as_bench_cfg cg = c;
    cg.cuda = 1;
    char err[256] = "";
    as_bench_session *sc = as_bench_session_new(&c, &bp, err, sizeof err);
    as_bench_session *sg = as_bench_session_new(&cg, &bp, err, sizeof err);
    if (!sg) fprintf(stderr, "  session: %s\n", err);
    CHECK(sc != NULL && sg != NULL);
    if (sc && sg) {
        as_bench_session_info si;
        as_bench_session_info_get(sg, &si);
        CHECK_EQ_I64(si.resident, !per_shard_upload);
        const int64_t s1[4] = {206, 203, 200, 204}, s2[2] = {205, 201};
        session_singles(sc, sg, s1, s2);
        session_group(sc, sg, s1, s2);
    }
    as_bench_session_free(sc);
    as_bench_session_free(sg);
    free(bp.t);
    free(bp.index);
    free_pool(p);
}

/* a typed CUDA session (weights of type wtype, optimizer optim: the typed kernels) against
   a CPU session of the same kind: each single shard's last forward and its tables' weights
   after the protocol bit for bit (each side's layout: the CPU's part, the device's packed
   units), the records' kind the same */
static void session_typed(int wtype, as_eb_optim optim)
{
    pool_t *p = odd_pool();
    as_bpool bp;
    bench_pool(&bp, p);
    as_bench_cfg c = session_cfg();
    c.wtype = wtype;
    c.optim = optim;
    as_bench_cfg cg = c;
    cg.cuda = 1;
    char err[256] = "";
    as_bench_session *sc = as_bench_session_new(&c, &bp, err, sizeof err);
    as_bench_session *sg = as_bench_session_new(&cg, &bp, err, sizeof err);
    if (!sg) fprintf(stderr, "  typed session: %s\n", err);
    CHECK(sc != NULL && sg != NULL);
    const int units = as_eb_dtype_units((as_eb_dtype)wtype);
    const int64_t s1[4] = {206, 203, 200, 204}, s2[2] = {205, 201};
    const int64_t *shards[2] = {s1, s2};
    const int Ts[2] = {4, 2};
    for (int k = 0; k < 2 && sc && sg; k++) {
        as_bench_result rc_, rg;
        as_bench_session_run(sc, shards[k], Ts[k], &rc_);
        as_bench_session_run(sg, shards[k], Ts[k], &rg);
        if (!rg.ok) fprintf(stderr, "  cuda: %s\n", rg.error);
        CHECK(rc_.ok && rg.ok);
        if (!rc_.ok || !rg.ok) continue;
        CHECK(strcmp(rg.wtype, rc_.wtype) == 0);
        fprintf(stderr, "  %s + %s, shard %d: cuda %.3f ms, cpu %.3f ms\n", rg.wtype,
                as_eb_optim_name(optim), k, rg.cost_ms, rc_.cost_ms);
        as_eb_shard a, b;
        const uint16_t *Wa, *Wb;
        const float *ga, *gb, *oa, *ob;
        CHECK(as_bench_session_last(sc, &a, &Wa, &ga, &oa, err, sizeof err) == 0);
        int r2 = as_bench_session_last(sg, &b, &Wb, &gb, &ob, err, sizeof err);
        if (r2) fprintf(stderr, "  last: %s\n", err);
        CHECK(r2 == 0);
        if (r2) continue;
        const int64_t T = a.T, outn = a.B * a.d_off[T];
        CHECK_EQ_I64(b.T, T);
        same_bits(gb, ga, (size_t)outn, 4, "typed session gradients");
        same_bits(ob, oa, (size_t)outn, 4, "typed session last forward");
        for (int64_t t = 0; t < T; t++)
            same_bits(Wb + b.w_off[t], Wa + a.w_off[t], (size_t)(a.rows[t] * a.dims[t] * units), 2,
                      "typed session table weights after the protocol");
    }
    as_bench_session_free(sc);
    as_bench_session_free(sg);
    free(bp.t);
    free(bp.index);
    free_pool(p);
}

TEST(gpu_bench_session_typed_small)
{
    session_typed(AS_EB_F32, AS_EB_SGD);
    session_typed(AS_EB_F32, AS_EB_ROWWISE_ADAGRAD);
    session_typed(AS_EB_BF16, AS_EB_ADAM);
    session_typed(AS_EB_F16, AS_EB_ROWWISE_ADAGRAD);
}

TEST(gpu_bench_session_small) { session_pair(0); }
TEST(gpu_bench_session_per_shard_small) { session_pair(1); }

/* noise-aware measurement on CUDA (issue 12), the real timer: a spread for each shard; the
 * check returns figures; the re-measuring rounds without and with the reference shard */
static void noise_real_timer(const as_bench_cfg *c, const as_bpool *bp)
{
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(c, bp, err, sizeof err);
    if (!S) fprintf(stderr, "  session: %s\n", err);
    CHECK(S != NULL);
    if (!S) return;
    as_bench_calib cal;
    int rc = as_bench_calibrate(S, &cal, err, sizeof err);
    if (rc) fprintf(stderr, "  calibrate: %s\n", err);
    CHECK(rc == 0);
    CHECK(cal.runs == 20 && cal.median_ms > 0 && isfinite(cal.spread) && isnan(cal.other_cpu));
    char line[512];
    as_bench_calib_line(line, sizeof line, &cal);
    fprintf(stderr, "  %s\n", line);
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    CHECK_EQ_I64(si.shards, 0);
    const int64_t s1[4] = {206, 203, 200, 204}, s2[2] = {205, 201};
    as_noise_job jobs[2] = { { s1, 4, { 0 }, 0 }, { s2, 2, { 0 }, 0 } };
    /* one unit, interleaving asked for: on CUDA still one shard after another */
    as_noise_cfg nc = { .threshold = 0.10, .retries = 2, .interleave = AS_NOISE_INTERLEAVE };
    as_noise_measure(S, jobs, 2, &nc, NULL, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(jobs[i].r.ok && isfinite(jobs[i].r.spread) && jobs[i].r.attempts >= 1 && jobs[i].r.attempts <= 3);
        CHECK_EQ_I64(jobs[i].r.together, 1);
        CHECK(jobs[i].r.noisy == (jobs[i].r.spread > 0.10));
    }
    /* with the reference shard (drift correction): it is timed with the group, one shard
       after another, and the costs are divided by its factor. The level is set only by
       a quiet reference (spread at most 0.10): on the H200 the 2-table reference of
       0.01 ms stayed above it in every round, so the reference is the pool's largest
       shard, and a level left unset must leave every cost uncorrected (drift NaN). The
       factor is the reference's time now over its level: positive and finite, its size
       the machine's. Under compute-sanitizer memcheck on the H200 (2026-11-30) the
       level was set while the instrumented kernels were still slow and later groups
       ran 7x faster (drift 0.14), so no range of it is a promise of the code. */
    const int64_t ref[4] = {206, 203, 200, 204};
    double base = 0;
    as_noise_job rj[2] = { { s1, 4, { 0 }, 0 }, { s2, 2, { 0 }, 0 } };
    as_noise_cfg rc2 = { .threshold = 0.10, .retries = 2, .interleave = AS_NOISE_INTERLEAVE, .ref_ids = ref, .ref_n = 4,
                         .ref_base = &base };
    as_noise_measure(S, rj, 2, &rc2, NULL, NULL, NULL);
    fprintf(stderr, "  reference level %.4f ms%s\n", base, base > 0 ? "" : " (never quiet: no level)");
    for (int i = 0; i < 2; i++) {
        CHECK(rj[i].r.ok && rj[i].r.together == 1);
        /* NaN only where the group's reference stayed noisy or there is no level */
        if (base > 0) CHECK(isnan(rj[i].r.drift) || (isfinite(rj[i].r.drift) && rj[i].r.drift > 0));
        else CHECK(isnan(rj[i].r.drift));
        fprintf(stderr, "  reference: shard %d cost %.4f ms, spread %.3f, drift %.4f\n", i, rj[i].r.cost_ms,
                rj[i].r.spread, rj[i].r.drift);
    }
    as_bench_session_free(S);
}

/* the fake timer: first attempts noisy -> 2 attempts, quiet; always -> 3, noisy */
static void noise_fake_timer(const as_bench_cfg *cfg, const as_bpool *bp)
{
    as_bench_cfg c = *cfg;
    char err[256] = "";
    as_bench_session *S;
    as_bench_fake fi = { .on = 1, .mode = AS_FAKE_FIRST, .shards = 1, .factor = 10, .calib_noisy = 1 },
                  al = { .on = 1, .mode = AS_FAKE_ALWAYS, .shards = 1, .factor = 10 };
    const as_bench_fake *fakes[2] = { &fi, &al };
    for (int f = 0; f < 2; f++) {
        c.fake = fakes[f];
        S = as_bench_session_new(&c, bp, err, sizeof err);
        CHECK(S != NULL);
        if (!S) continue;
        as_bench_calib cal;
        CHECK(as_bench_calibrate(S, &cal, err, sizeof err) == 0);
        CHECK(cal.loaded == (f == 0));
        const int64_t s1[4] = {206, 203, 200, 204}, s2[2] = {205, 201};
        as_noise_job jobs[2] = { { s1, 4, { 0 }, 0 }, { s2, 2, { 0 }, 1 } };
        as_noise_cfg nc = { .threshold = 0.10, .retries = 2 };
        CHECK_EQ_I64(as_noise_measure(S, jobs, 2, &nc, NULL, NULL, NULL), f == 0 ? 2 : 4);
        for (int i = 0; i < 2; i++) {
            CHECK(jobs[i].r.ok && jobs[i].r.attempts == (f == 0 ? 2 : 3) && jobs[i].r.noisy == (f == 1));
            const double base = 0.1 + 1e-5 * (double)jobs[i].r.lookups;
            if (f == 0) CHECK(jobs[i].r.cost_ms >= base && jobs[i].r.cost_ms < 1.01 * base);
        }
        as_bench_session_free(S);
    }
}

/* noise-aware measurement on CUDA (issue 12): the re-measuring rounds are device-agnostic;
 * the quiet-machine check times a small shard of the pool with events */
TEST(gpu_bench_noise_small)
{
    pool_t *p = odd_pool();
    as_bpool bp;
    bench_pool(&bp, p);
    as_bench_cfg c;
    memset(&c, 0, sizeof c);
    c.warmup = 1;
    c.runs = 5;
    c.trim = 1;
    c.lr = 0.03f;
    c.seed = 5;
    c.cuda = 1;
    noise_real_timer(&c, &bp);
    noise_fake_timer(&c, &bp);
    free(bp.t);
    free(bp.index);
    free_pool(p);
}

TEST(gpu_ctx_large)
{
    /* production-like sizes: 6 tables up to 1M rows, batch 4096, skewed, through the protocol */
    int64_t dims[6] = {128, 64, 32, 16, 96, 4}, rows[6] = {1000000, 200000, 500000, 100000, 50000, 7};
    int lmax[6] = {40, 20, 30, 60, 10, 5};
    double hot[6] = {0.3, 0.05, 0.6, 0, 0.1, 0};
    pool_t *p = mk_pool(6, 4096, dims, rows, lmax, hot, 3);
    char err[256] = "";
    as_eb_gpu_ctx *ctx = NULL;
    int rc = as_eb_gpu_ctx_create(&ctx, 0, p->t, p->n, 1, err, sizeof err);
    CHECK(rc == 0);
    if (!rc) {
        int64_t pos[6] = {2, 0, 5, 3, 1, 4};
        as_eb_gpu *g = NULL;
        rc = as_eb_gpu_ctx_shard(ctx, pos, 6, 21, &g, err, sizeof err);
        if (rc) fprintf(stderr, "  shard: %s\n", err);
        CHECK(rc == 0);
        if (!rc) {
            cshard_t *h = cpu_shard(p, pos, 6, 21);
            check_setup(g, h, "large");
            free_cshard(h);
            CHECK(as_eb_gpu_ctx_shard(ctx, pos, 6, 21, &g, err, sizeof err) == 0);
            h = cpu_shard(p, pos, 6, 21);
            check_measure(g, h, 0.01f, 2, 3, 1, "large protocol");
            free_cshard(h);
        }
        as_eb_gpu_ctx_destroy(ctx);
    }
    free_pool(p);
}
