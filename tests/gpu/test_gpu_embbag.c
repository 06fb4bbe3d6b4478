/* test_gpu_embbag.c - the CUDA embedding-bag op (lib/embbag.cu) against the CPU references
 * as_eb_forward_ref / as_eb_backward_sgd_ref. Dimension letters: B batch, L pooling, D dim,
 * E rows, T tables.
 *
 * Run on a GPU machine by `make gpu-test`; tests named *_small are re-run under
 * compute-sanitizer memcheck and racecheck. Without a CUDA device every test fails with
 * "no CUDA device" (these tests are only meant to run where one is).
 *
 * Outputs: |gpu - cpu| <= 1e-6 + 1e-3*|cpu| per element, NaN/Inf must match; the kernels sum
 * in the reference's order, so we also require >= 99% bit-exact elements. Weights: within one
 * fp16 ulp, >= 99% bit-exact. Guard words around the device buffers must stay untouched. */
#include "embbag.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a seeded PRNG (splitmix64) ---------------------------------------------------------- */

static uint64_t sm64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double unif(uint64_t *s) { return (double)(sm64(s) >> 11) * (1.0 / 9007199254740992.0); }
static uint64_t below(uint64_t *s, uint64_t n) { return n ? sm64(s) % n : 0; }

/* ---- shards ---------------------------------------------------------------------------------- */

enum { DIST_UNIFORM, DIST_HOT, DIST_ZIPF };

typedef struct {
    as_eb_shard s;
    int64_t *rows, *w_off, *offsets;
    int32_t *dims, *d_off, *indices;
    uint16_t *W;
    float *grad;
} shard_t;

/* bag sizes uniform in [lmin, lmax]; DIST_HOT sends a fraction `hot` of lookups to row
 * hot_row % E; DIST_ZIPF draws ranks ~ 1/r^1.05 scattered over the rows. w_pad adds that
 * many elements between tables in W (misaligns table starts). */
static shard_t *mk_shard(int T, int64_t B, const int32_t *dims, const int64_t *rows, int lmin, int lmax, int dist,
                         double hot, int w_pad, uint64_t seed)
{
    uint64_t st = seed;
    shard_t *h = calloc(1, sizeof *h);
    h->rows = malloc(sizeof(int64_t) * T);
    h->dims = malloc(sizeof(int32_t) * T);
    h->w_off = malloc(sizeof(int64_t) * (T + 1));
    h->d_off = malloc(sizeof(int32_t) * (T + 1));
    h->offsets = malloc(sizeof(int64_t) * (T * B + 1));
    int64_t wo = 0;
    int32_t dof = 0;
    for (int t = 0; t < T; t++) {
        h->rows[t] = rows[t];
        h->dims[t] = dims[t];
        h->w_off[t] = wo;
        h->d_off[t] = dof;
        wo += rows[t] * dims[t] + w_pad;
        dof += dims[t];
    }
    h->w_off[T] = wo;
    h->d_off[T] = dof;
    int64_t n = 0;
    h->offsets[0] = 0;
    for (int64_t g = 0; g < T * B; g++) {
        n += lmin + (int64_t)below(&st, (uint64_t)(lmax - lmin + 1));
        h->offsets[g + 1] = n;
    }
    h->indices = malloc(sizeof(int32_t) * (n + 1));
    for (int t = 0; t < T; t++) {
        int64_t E = rows[t];
        for (int64_t p = h->offsets[t * B]; p < h->offsets[(t + 1) * B]; p++) {
            int64_t r;
            if (dist == DIST_HOT && unif(&st) < hot) r = 7 % E;
            else if (dist == DIST_ZIPF) {
                double a = 1.05, u = unif(&st);
                double x = pow((pow((double)E, 1.0 - a) - 1.0) * u + 1.0, 1.0 / (1.0 - a));
                int64_t rank = (int64_t)x - 1;
                if (rank < 0) rank = 0;
                if (rank >= E) rank = E - 1;
                r = (int64_t)(((uint64_t)rank * 2654435761ULL) % (uint64_t)E);
            } else r = (int64_t)below(&st, (uint64_t)E);
            h->indices[p] = (int32_t)r;
        }
    }
    h->W = malloc(sizeof(uint16_t) * (wo + 1));
    for (int64_t i = 0; i < wo; i++) h->W[i] = as_float_to_half((float)(unif(&st) * 2.0 - 1.0));
    h->grad = malloc(sizeof(float) * (B * dof + 1));
    for (int64_t i = 0; i < B * dof; i++) h->grad[i] = (float)(unif(&st) * 2.0 - 1.0);
    h->s.T = T;
    h->s.B = B;
    h->s.rows = h->rows;
    h->s.dims = h->dims;
    h->s.w_off = h->w_off;
    h->s.d_off = h->d_off;
    h->s.offsets = h->offsets;
    h->s.indices = h->indices;
    return h;
}

static void free_shard(shard_t *h)
{
    if (!h) return;
    free(h->rows); free(h->dims); free(h->w_off); free(h->d_off); free(h->offsets); free(h->indices);
    free(h->W); free(h->grad); free(h);
}

/* ---- comparisons ------------------------------------------------------------------------------ */

static int cmp_out(const float *gpu, const float *cpu, size_t n, const char *what)
{
    size_t exact = 0, bad = 0, first = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        float a = gpu[i], b = cpu[i];
        uint32_t ua, ub;
        memcpy(&ua, &a, 4);
        memcpy(&ub, &b, 4);
        if (ua == ub) { exact++; continue; }
        int ok;
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) ok = 0; /* bitwise-different non-finite */
        else ok = fabs((double)a - (double)b) <= 1e-6 + 1e-3 * fabs((double)b);
        if (!ok) { if (first == (size_t)-1) first = i; bad++; }
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu elements out of tolerance; first at %zu: gpu %.9g cpu %.9g\n", what, bad,
                n, first, gpu[first], cpu[first]);
    fprintf(stderr, "  %s: %zu/%zu bit-exact\n", what, exact, n);
    CHECK(bad == 0);
    CHECK(n == 0 || (double)exact >= 0.99 * (double)n);
    return bad == 0;
}

static int h_ord(uint16_t h) { return (h & 0x8000) ? -(int)(h & 0x7fff) : (int)(h & 0x7fff); }
static int h_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff); }
static int h_inf(uint16_t h) { return (h & 0x7fff) == 0x7c00; }

static int cmp_w(const uint16_t *gpu, const uint16_t *cpu, size_t n, const char *what)
{
    size_t exact = 0, bad = 0, first = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        uint16_t a = gpu[i], b = cpu[i];
        if (a == b) { exact++; continue; }
        int ok = !(h_nan(a) || h_nan(b) || h_inf(a) || h_inf(b)) && abs(h_ord(a) - h_ord(b)) <= 1;
        if (!ok) { if (first == (size_t)-1) first = i; bad++; }
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu weights off by more than 1 ulp; first at %zu: gpu 0x%04x cpu 0x%04x\n",
                what, bad, n, first, gpu[first], cpu[first]);
    fprintf(stderr, "  %s: %zu/%zu bit-exact\n", what, exact, n);
    CHECK(bad == 0);
    CHECK(n == 0 || (double)exact >= 0.99 * (double)n);
    return bad == 0;
}

static int guards_ok(as_eb_gpu *g)
{
#ifdef AS_HAVE_CUDA
    char err[256] = "";
    int rc = as_eb_gpu_check_guards(g, err, sizeof err);
    if (rc) fprintf(stderr, "  guards: %s\n", err);
    CHECK(rc == 0);
    return rc == 0;
#else
    (void)g;
    return 1;
#endif
}

/* forward + backward `iters` times on the GPU and on the CPU; compare after each. The CPU
 * side is the naive reference (O(n^2) backward) for small shards and the OpenMP CPU path
 * (same summation order, itself tested against the reference) for large ones. */
static void run_case_x(shard_t *h, float lr, int iters, const char *name, int fast)
{
    char err[512] = "";
    as_eb_gpu *g = NULL;
    int rc = as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: as_eb_gpu_create: %s\n", name, err);
    CHECK(rc == 0);
    if (rc) return;
    size_t outn = (size_t)h->s.B * h->s.d_off[h->s.T];
    size_t wn = (size_t)h->s.w_off[h->s.T];
    float *out_g = malloc(sizeof(float) * (outn + 1)), *out_c = malloc(sizeof(float) * (outn + 1));
    uint16_t *w_g = malloc(sizeof(uint16_t) * (wn + 1)), *w_c = malloc(sizeof(uint16_t) * (wn + 1));
    memcpy(w_c, h->W, sizeof(uint16_t) * wn);
    for (int it = 0; it < iters; it++) {
        float ms = -1;
        rc = as_eb_gpu_forward(g, &ms, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: forward: %s\n", name, err);
        CHECK(rc == 0);
        CHECK(ms >= 0);
        rc = as_eb_gpu_download(g, out_g, NULL, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: download: %s\n", name, err);
        CHECK(rc == 0);
        if (fast) as_eb_forward_cpu(out_c, w_c, &h->s, 0);
        else as_eb_forward_ref(out_c, w_c, &h->s);
        cmp_out(out_g, out_c, outn, "forward");
        guards_ok(g);

        rc = as_eb_gpu_backward_sgd(g, lr, &ms, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: backward: %s\n", name, err);
        CHECK(rc == 0);
        CHECK(ms >= 0);
        rc = as_eb_gpu_download(g, NULL, w_g, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: download: %s\n", name, err);
        CHECK(rc == 0);
        if (fast) {
            as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&h->s);
            CHECK(ws != NULL);
            if (ws) as_eb_backward_sgd_cpu(w_c, h->grad, &h->s, lr, ws, 0);
            as_eb_cpu_ws_free(ws);
        } else as_eb_backward_sgd_ref(w_c, h->grad, &h->s, lr);
        cmp_w(w_g, w_c, wn, "weights");
        guards_ok(g);
        /* continue from identical weights so later iterations test the kernels, not drift */
        memcpy(w_c, w_g, sizeof(uint16_t) * wn);
    }
    rc = as_eb_gpu_flush_cache(g, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: flush: %s\n", name, err);
    CHECK(rc == 0);
    free(out_g); free(out_c); free(w_g); free(w_c);
    as_eb_gpu_destroy(g);
}

static void run_case(shard_t *h, float lr, int iters, const char *name) { run_case_x(h, lr, iters, name, 0); }
static void run_case_fast(shard_t *h, float lr, int iters, const char *name) { run_case_x(h, lr, iters, name, 1); }

/* ---- cases ---------------------------------------------------------------------------------------- */

TEST(gpu_eb_uniform_small)
{
    int32_t d[3] = {16, 8, 32};
    int64_t e[3] = {100, 50, 1000};
    shard_t *h = mk_shard(3, 64, d, e, 0, 10, DIST_UNIFORM, 0, 0, 1);
    run_case(h, 0.05f, 2, "uniform");
    free_shard(h);
}

TEST(gpu_eb_skewed_small)
{
    /* ~90% of lookups on one row: runs of thousands (several 256-lookup tiles) */
    int32_t d[2] = {16, 64};
    int64_t e[2] = {1000, 500};
    shard_t *h = mk_shard(2, 128, d, e, 15, 25, DIST_HOT, 0.9, 0, 2);
    run_case(h, 0.01f, 2, "skewed");
    free_shard(h);
}

TEST(gpu_eb_empty_bags_small)
{
    /* table 1 has only empty bags, the others many */
    int32_t d[3] = {8, 16, 24};
    int64_t e[3] = {20, 30, 40};
    shard_t *h = mk_shard(3, 33, d, e, 0, 2, DIST_UNIFORM, 0, 0, 3);
    int64_t B = 33, shift = 0;
    int64_t *o = h->offsets;
    /* rebuild offsets with table 1 empty, shifting the indices of table 2 down */
    int64_t t1s = o[B], t1e = o[2 * B];
    shift = t1e - t1s;
    for (int64_t p = t1e; p < o[3 * B]; p++) h->indices[p - shift] = h->indices[p];
    for (int64_t g = B; g <= 2 * B; g++) o[g] = t1s;
    for (int64_t g = 2 * B + 1; g <= 3 * B; g++) o[g] -= shift;
    run_case(h, 0.05f, 1, "empty bags");
    free_shard(h);
}

TEST(gpu_eb_no_lookups_small)
{
    int32_t d[2] = {8, 4};
    int64_t e[2] = {10, 10};
    shard_t *h = mk_shard(2, 16, d, e, 0, 0, DIST_UNIFORM, 0, 0, 4);
    run_case(h, 0.05f, 1, "no lookups");
    free_shard(h);
}

TEST(gpu_eb_one_row_small)
{
    /* a one-row table: every lookup of it hits row 0 (one long run) */
    int32_t d[3] = {32, 16, 8};
    int64_t e[3] = {1, 1000, 1};
    shard_t *h = mk_shard(3, 100, d, e, 0, 12, DIST_UNIFORM, 0, 0, 5);
    run_case(h, 0.01f, 2, "one row");
    free_shard(h);
}

TEST(gpu_eb_odd_dims_small)
{
    /* no vector path applies: odd dims, sumD = 154, odd table offsets in W */
    int32_t d[5] = {1, 3, 17, 33, 100};
    int64_t e[5] = {7, 300, 64, 129, 250};
    shard_t *h = mk_shard(5, 48, d, e, 0, 20, DIST_UNIFORM, 0, 1, 6);
    run_case(h, 0.05f, 2, "odd dims");
    free_shard(h);
}

TEST(gpu_eb_odd_dims_hot_small)
{
    int32_t d[5] = {1, 3, 17, 33, 100};
    int64_t e[5] = {7, 300, 64, 129, 250};
    shard_t *h = mk_shard(5, 96, d, e, 5, 30, DIST_HOT, 0.6, 3, 7);
    run_case(h, 0.01f, 2, "odd dims hot");
    free_shard(h);
}

TEST(gpu_eb_mixed_dims_small)
{
    int32_t d[4] = {16, 32, 64, 128};
    int64_t e[4] = {1000, 2000, 500, 3000};
    shard_t *h = mk_shard(4, 256, d, e, 1, 30, DIST_ZIPF, 0, 0, 8);
    run_case(h, 0.05f, 2, "mixed dims");
    free_shard(h);
}

TEST(gpu_eb_wide_small)
{
    /* D > 256: several column passes in the forward, several 32-column slices for hot rows */
    int32_t d[3] = {264, 1000, 130};
    int64_t e[3] = {50, 40, 60};
    shard_t *h = mk_shard(3, 64, d, e, 0, 40, DIST_HOT, 0.5, 0, 9);
    run_case(h, 0.01f, 2, "wide");
    free_shard(h);
}

TEST(gpu_eb_key64_small)
{
    /* the 64-bit key path, forced on a small shard */
    int32_t d[3] = {16, 20, 64};
    int64_t e[3] = {300, 1, 700};
    shard_t *h = mk_shard(3, 80, d, e, 0, 90, DIST_HOT, 0.3, 0, 10);
    setenv("AS_EB_FORCE_KEY64", "1", 1);
    run_case(h, 0.02f, 2, "key64");
    unsetenv("AS_EB_FORCE_KEY64");
    free_shard(h);
}

TEST(gpu_eb_too_big_small)
{
    /* a shard far larger than any GPU: a clear error, no crash */
    int64_t rows[1] = {(int64_t)1 << 40};
    int32_t dims[1] = {1};
    int64_t w_off[2] = {0, (int64_t)1 << 40};
    int32_t d_off[2] = {0, 1};
    int64_t offsets[2] = {0, 0};
    int32_t indices[1] = {0};
    as_eb_shard s = {1, 1, rows, dims, w_off, d_off, offsets, indices};
    uint16_t w[1] = {0};
    float grad[1] = {0};
    char err[512] = "";
    as_eb_gpu *g = NULL;
    CHECK(as_eb_gpu_bytes_needed(&s) > ((size_t)1 << 40));
    int rc = as_eb_gpu_create(&g, &s, w, grad, 0, err, sizeof err);
    fprintf(stderr, "  too big: %s\n", err);
    CHECK(rc != 0);
    CHECK(g == NULL);
    CHECK(strstr(err, "GiB") != NULL);
}

TEST(gpu_eb_info_small)
{
    int32_t d[1] = {16};
    int64_t e[1] = {10};
    shard_t *h = mk_shard(1, 4, d, e, 1, 2, DIST_UNIFORM, 0, 0, 11);
    char err[512] = "";
    as_eb_gpu *g = NULL;
    int rc = as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err);
    if (rc) fprintf(stderr, "  info: as_eb_gpu_create: %s\n", err);
    CHECK(rc == 0);
    if (!rc) {
        char name[256];
        int mhz = -1;
        double gbps = -1;
        CHECK(as_eb_gpu_info(g, name, sizeof name, &mhz, &gbps) == 0);
        fprintf(stderr, "  device %s, %d MHz, copy %.0f GB/s\n", name, mhz, gbps);
        CHECK(name[0] != 0);
        CHECK(mhz >= 0);
        CHECK(gbps > 0);
        as_eb_gpu_destroy(g);
    }
    free_shard(h);
}

TEST(gpu_eb_bad_device_small)
{
    int32_t d[1] = {16};
    int64_t e[1] = {10};
    shard_t *h = mk_shard(1, 4, d, e, 1, 2, DIST_UNIFORM, 0, 0, 12);
    char err[512] = "";
    as_eb_gpu *g = NULL;
    /* the valid shard works (so that this test fails where no device is present) */
    int rc = as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err);
    if (rc) fprintf(stderr, "  bad device: as_eb_gpu_create: %s\n", err);
    CHECK(rc == 0);
    as_eb_gpu_destroy(g);
    g = NULL;
    CHECK(as_eb_gpu_create(&g, &h->s, h->W, h->grad, 1000, err, sizeof err) != 0);
    CHECK(g == NULL);
    CHECK(err[0] != 0);
    /* an out-of-range index is refused before upload */
    h->indices[0] = 10;
    err[0] = 0;
    CHECK(as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err) != 0);
    CHECK(g == NULL);
    CHECK(err[0] != 0);
    free_shard(h);
}

TEST(gpu_eb_large_uniform)
{
    int32_t d[8] = {16, 32, 64, 128, 16, 32, 64, 128};
    int64_t e[8] = {100000, 200000, 50000, 100000, 300000, 1000, 70000, 250000};
    shard_t *h = mk_shard(8, 4096, d, e, 0, 60, DIST_UNIFORM, 0, 0, 13);
    run_case_fast(h, 0.05f, 1, "large uniform");
    free_shard(h);
}

TEST(gpu_eb_large_zipf)
{
    int32_t d[8] = {128, 64, 32, 16, 128, 64, 32, 16};
    int64_t e[8] = {100000, 100000, 100000, 100000, 10000, 10000, 10000, 10000};
    shard_t *h = mk_shard(8, 8192, d, e, 10, 40, DIST_ZIPF, 0, 0, 14);
    run_case_fast(h, 0.01f, 2, "large zipf");
    free_shard(h);
}

TEST(gpu_eb_large_hot)
{
    /* one row takes 70% of a table's lookups: a run of ~120k lookups */
    int32_t d[2] = {64, 128};
    int64_t e[2] = {1000000, 1000};
    shard_t *h = mk_shard(2, 8192, d, e, 10, 30, DIST_HOT, 0.7, 0, 15);
    run_case_fast(h, 0.001f, 1, "large hot");
    free_shard(h);
}
