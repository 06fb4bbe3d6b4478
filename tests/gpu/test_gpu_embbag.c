/* test_gpu_embbag.c - the CUDA embedding-bag op (lib/kernels/embbag.cu) against the CPU references
 * as_eb_forward_ref / as_eb_backward_sgd_ref. Dimension letters: B batch, L pooling, D dim,
 * E rows, T tables.
 *
 * Run on a GPU machine by `make gpu-test`; tests named *_small are re-run under
 * compute-sanitizer memcheck and racecheck. Without a CUDA device every test fails with
 * "no CUDA device" (these tests are only meant to run where one is).
 *
 * Outputs and weights must be bit-exact, every element (the padding between tables in W
 * included): the kernels sum in the reference's order and round the SGD update as it does
 * (embbag.h), so any difference is a bug. A mismatch report gives the count, the first few
 * positions with both values and, for the output, the largest relative difference. Guard
 * words around the device buffers must stay untouched. The gpu_eb_chunked_* tests give
 * rows runs of chosen lengths around AS_EB_CHUNK, with gradients that make the backward's
 * summation order show in the weights (mk_runs_shard). */
#include "ebopt.h"
#include "embbag.h"
#include "half.h"
#include "shardgen.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shards (tests/support/shardgen.h: PRNG and layout) ------------------------------------- */

enum { DIST_UNIFORM, DIST_HOT, DIST_ZIPF };

typedef tsup_shard shard_t;

/* bag sizes uniform in [lmin, lmax]; DIST_HOT sends a fraction `hot` of lookups to row
 * hot_row % E; DIST_ZIPF draws ranks ~ 1/r^1.05 scattered over the rows. w_pad adds that
 * many elements between tables in W (misaligns table starts). */
static shard_t *mk_shard(int T, int64_t B, const int32_t *dims, const int64_t *rows, int lmin, int lmax, int dist,
                         double hot, int w_pad, uint64_t seed)
{
    uint64_t st = seed;
    shard_t *h = calloc(1, sizeof *h);
    if (!h || tsup_shard_layout(h, T, B, rows, 0, dims, w_pad)) abort();
    int64_t n = 0;
    for (int64_t g = 0; g < T * B; g++) {
        n += lmin + (int64_t)tsup_below(&st, (uint64_t)(lmax - lmin + 1));
        h->offsets[g + 1] = n;
    }
    if (tsup_shard_data(h, T, B)) abort();
    for (int t = 0; t < T; t++) {
        int64_t E = rows[t];
        tsup_zipf z;
        tsup_zipf_init(&z, E, 1.05);
        for (int64_t p = h->offsets[t * B]; p < h->offsets[(t + 1) * B]; p++) {
            int64_t r;
            if (dist == DIST_HOT && tsup_unif(&st) < hot) r = 7 % E;
            else if (dist == DIST_ZIPF) r = tsup_zipf_row(&z, tsup_unif(&st));
            else r = (int64_t)tsup_below(&st, (uint64_t)E);
            h->indices[p] = (int32_t)r;
        }
    }
    for (int64_t i = 0; i < h->nW; i++) h->W[i] = as_float_to_half((float)(tsup_unif(&st) * 2.0 - 1.0));
    tsup_fill_unit(h->grad, B * h->sumD, &st);
    return h;
}

static void free_shard(shard_t *h)
{
    if (!h) return;
    tsup_shard_free(h);
    free(h);
}

/* ---- comparisons ------------------------------------------------------------------------------ */

static int cmp_out(const float *gpu, const float *cpu, size_t n, const char *what)
{
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t ua, ub;
        memcpy(&ua, &gpu[i], 4);
        memcpy(&ub, &cpu[i], 4);
        if (ua == ub) continue;
        if (bad < 3)
            fprintf(stderr, "  %s: [%zu] gpu %.9g (0x%08x) cpu %.9g (0x%08x)\n", what, i, gpu[i], ua, cpu[i], ub);
        double rel = fabs((double)gpu[i] - (double)cpu[i]) / fmax(fabs((double)cpu[i]), 1e-30);
        if (!(rel <= worst)) worst = rel;   /* NaN sticks */
        bad++;
    }
    if (bad) fprintf(stderr, "  %s: %zu of %zu elements not bit-exact (largest relative difference %.3g)\n", what,
                     bad, n, worst);
    else fprintf(stderr, "  %s: %zu/%zu bit-exact\n", what, n, n);
    CHECK_EQ_I64(bad, 0);
    return bad == 0;
}

static int cmp_w(const uint16_t *gpu, const uint16_t *cpu, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (gpu[i] == cpu[i]) continue;
        if (bad < 3)
            fprintf(stderr, "  %s: [%zu] gpu 0x%04x (%.6g) cpu 0x%04x (%.6g)\n", what, i, gpu[i],
                    as_half_to_float(gpu[i]), cpu[i], as_half_to_float(cpu[i]));
        bad++;
    }
    if (bad) fprintf(stderr, "  %s: %zu of %zu weights not bit-exact\n", what, bad, n);
    else fprintf(stderr, "  %s: %zu/%zu bit-exact\n", what, n, n);
    CHECK_EQ_I64(bad, 0);
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

/* the tables placed in W in reverse order, gap[k] elements of padding before the k-th placed
 * table (and gap[T] after the last); the padding holds a NaN pattern that must come back */
static void relayout_reversed(shard_t *h, const int64_t *gap)
{
    const int T = h->s.T;
    int64_t *w_off = malloc(sizeof(int64_t) * (T + 1));
    int64_t pos = 0;
    for (int k = 0; k < T; k++) {
        int t = T - 1 - k;
        pos += gap[k];
        w_off[t] = pos;
        pos += h->rows[t] * h->dims[t];
    }
    pos += gap[T];
    w_off[T] = pos;
    uint16_t *W = malloc(sizeof(uint16_t) * (pos + 1));
    for (int64_t i = 0; i < pos; i++) W[i] = 0x7e5a;
    for (int t = 0; t < T; t++)
        memcpy(W + w_off[t], h->W + h->w_off[t], sizeof(uint16_t) * (size_t)(h->rows[t] * h->dims[t]));
    free(h->W);
    free(h->w_off);
    h->W = W;
    h->w_off = w_off;
    h->s.w_off = w_off;
    h->nW = pos;
}

TEST(gpu_eb_permuted_layout_small)
{
    /* tables out of order in W with gaps of 0, 5, 8 and 3 elements: some starts aligned for
     * the vector paths, some not */
    int32_t d[4] = {8, 16, 3, 32};
    int64_t e[4] = {200, 100, 50, 300};
    shard_t *h = mk_shard(4, 64, d, e, 0, 24, DIST_HOT, 0.4, 0, 16);
    relayout_reversed(h, (const int64_t[]){0, 5, 8, 3, 7});
    run_case(h, 0.05f, 2, "permuted layout");
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

/* ---- long runs: the chunked summation order (embbag.h, AS_EB_CHUNK) ---------------------------
 * Rows hit exactly len[i] times, one lookup per bag and table (B = sum of len), in shuffled
 * order. A row's gradients are +64 for its first half of lookups and -64 for the second,
 * plus noise in [-1/8, 1/8]: partial sums grow to ~32*len while G stays near the noise sum,
 * so summing in another order than AS_EB_CHUNK-lookup chunks combined left to right changes
 * the fp16 weights (lr 1), which plain_order_differs checks on the CPU. */
static shard_t *mk_runs_shard(int T, const int32_t *dims, const int64_t *len, int nlen, int w_pad, uint64_t seed)
{
    uint64_t st = seed;
    int64_t N = 0;
    for (int i = 0; i < nlen; i++) N += len[i];
    const int64_t E = 3 * (int64_t)nlen;   /* rows (i*7+3) % E are hit; the others are not */
    shard_t *h = calloc(1, sizeof *h);
    if (!h || tsup_shard_layout(h, T, N, NULL, E, dims, w_pad)) abort();
    for (int64_t k = 0; k <= T * N; k++) h->offsets[k] = k;
    if (tsup_shard_data(h, T, N)) abort();
    const int32_t dof = (int32_t)h->sumD;
    int *which = malloc(sizeof(int) * N);
    int64_t *seen = malloc(sizeof(int64_t) * nlen);
    for (int t = 0; t < T; t++) {
        int64_t p = 0;
        for (int i = 0; i < nlen; i++)
            for (int64_t k = 0; k < len[i]; k++) which[p++] = i;
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = (int64_t)tsup_below(&st, (uint64_t)i + 1);
            int x = which[i]; which[i] = which[j]; which[j] = x;
        }
        memset(seen, 0, sizeof(int64_t) * nlen);
        for (int64_t b = 0; b < N; b++) {
            const int i = which[b];
            h->indices[t * N + b] = (int32_t)((i * 7 + 3) % E);
            const float sign = 2 * seen[i]++ < len[i] ? 64.0f : -64.0f;
            for (int j = 0; j < dims[t]; j++)
                h->grad[b * dof + h->d_off[t] + j] = sign + (float)(tsup_unif(&st) - 0.5) * 0.25f;
        }
    }
    free(which);
    free(seen);
    for (int64_t i = 0; i < h->nW; i++) h->W[i] = as_float_to_half((float)(tsup_unif(&st) * 2.0 - 1.0));
    return h;
}

/* 1 when the backward in plain sequential order (G = 0.0f + g + g + ... over all of a row's
 * lookups) gives other weights than the CPU reference, i.e. the shard tells the orders apart */
static int plain_order_differs(const shard_t *h, float lr)
{
    const as_eb_shard *s = &h->s;
    const size_t wn = (size_t)s->w_off[s->T];
    uint16_t *a = malloc(sizeof(uint16_t) * (wn + 1)), *b = malloc(sizeof(uint16_t) * (wn + 1));
    memcpy(a, h->W, sizeof(uint16_t) * wn);
    memcpy(b, h->W, sizeof(uint16_t) * wn);
    as_eb_backward_sgd_ref(a, h->grad, s, lr);
    const int64_t sumD = s->d_off[s->T];
    for (int t = 0; t < s->T; t++) {
        const int64_t D = s->dims[t], *o = s->offsets + (int64_t)t * s->B;
        for (int64_t r = 0; r < s->rows[t]; r++)
            for (int64_t j = 0; j < D; j++) {
                float G = 0.0f;
                int hit = 0;
                for (int64_t bg = 0; bg < s->B; bg++)
                    for (int64_t p = o[bg]; p < o[bg + 1]; p++)
                        if (s->indices[p] == r) {
                            G += h->grad[bg * sumD + s->d_off[t] + j];
                            hit = 1;
                        }
                if (!hit) continue;
                uint16_t *w = b + s->w_off[t] + r * D + j;
                volatile float u = lr * G;
                *w = as_float_to_half(as_half_to_float(*w) - u);
            }
    }
    int differs = memcmp(a, b, sizeof(uint16_t) * wn) != 0;
    free(a);
    free(b);
    return differs;
}

TEST(gpu_eb_chunked_runs_small)
{
    /* runs around the short/long boundary (AS_LONG_RUN = 64) and the chunk boundaries; dims
     * giving the long-run kernels V = 4 with 1 slice (128) and 2 slices (200), V = 4 with 24
     * lanes (96), V = 2 (64), V = 1 (5; 35 in 2 slices); padded, misaligned table starts */
    const int64_t C = AS_EB_CHUNK;
    int64_t len[9] = {1, 64, 65, C - 1, C, C + 1, 2 * C, 2 * C + 1, 3 * C + 7};
    int32_t d[6] = {128, 200, 64, 5, 35, 96};
    shard_t *h = mk_runs_shard(6, d, len, 9, 3, 17);
    CHECK(plain_order_differs(h, 1.0f));
    run_case(h, 1.0f, 2, "chunked runs");
    free_shard(h);
}

TEST(gpu_eb_chunked_long_run)
{
    /* one run of 80 chunks plus a partial one, and shorter long runs beside it */
    const int64_t C = AS_EB_CHUNK;
    int64_t len[5] = {80 * C + 300, 5 * C, 3 * C + 1, 200, 7};
    int32_t d[2] = {128, 16};
    shard_t *h = mk_runs_shard(2, d, len, 5, 0, 18);
    run_case_fast(h, 1.0f, 2, "chunked long run");
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

/* ---- the typed op (ebopt.h): weight types and optimizers ------------------------------------
 * Each case re-lays a shard out in 2-byte units with the given types (tables from an odd
 * unit, a fp32 table moved to an even one, one unit of NaN-pattern padding after each), its
 * weights the fp16 values converted, and optimizer state from a pattern (non-zero, so that
 * reading it counts); then two (or more) iterations on the GPU and on the CPU, and the
 * output, every unit of W and every state float compared bit for bit. Adam's step counts
 * 1, 2, ... on both sides. */

#define AS_GUARD_PAD 0x7dadu   /* a fp16 NaN pattern in the padding, which must come back */

typedef struct {
    as_eb_shard s;
    int64_t *woff, *st_off;
    uint16_t *W;
    float *S;
    int64_t nw, ns;
} typed_t;

static void typed_make(typed_t *x, const shard_t *h, const uint8_t *dt, as_eb_optim o)
{
    const int T = h->s.T;
    memset(x, 0, sizeof *x);
    x->woff = malloc(sizeof(int64_t) * (T + 1));
    x->st_off = malloc(sizeof(int64_t) * (T + 1));
    int64_t u = 1, st = 0;
    for (int t = 0; t < T; t++) {
        if (dt[t] == AS_EB_F32 && (u & 1)) u++;
        x->woff[t] = u;
        u += h->s.rows[t] * h->s.dims[t] * as_eb_dtype_units((as_eb_dtype)dt[t]) + 1;
        x->st_off[t] = st;
        st += as_eb_opt_state(o, h->s.rows[t], h->s.dims[t]);
    }
    x->woff[T] = u;
    x->st_off[T] = st;
    x->nw = u;
    x->ns = st;
    x->s = h->s;
    x->s.w_off = x->woff;
    x->W = malloc(sizeof(uint16_t) * (size_t)(u + 1));
    for (int64_t i = 0; i < u; i++) x->W[i] = AS_GUARD_PAD;
    for (int t = 0; t < T; t++)
        for (int64_t e = 0; e < h->s.rows[t] * h->s.dims[t]; e++)
            as_eb_weight_set(x->W, &x->s, dt, t, e, as_half_to_float(h->W[h->s.w_off[t] + e]));
    x->S = malloc(sizeof(float) * (size_t)(st + 1));
    for (int64_t i = 0; i < st; i++) x->S[i] = (float)(i % 7) * 0.01f;
}

static void typed_free(typed_t *x)
{
    free(x->woff); free(x->st_off); free(x->W); free(x->S);
    memset(x, 0, sizeof *x);
}

static int cmp_units(const uint16_t *gpu, const uint16_t *cpu, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (gpu[i] == cpu[i]) continue;
        if (bad < 3) fprintf(stderr, "  %s: unit [%zu] gpu 0x%04x cpu 0x%04x\n", what, i, gpu[i], cpu[i]);
        bad++;
    }
    if (bad) fprintf(stderr, "  %s: %zu of %zu units not bit-exact\n", what, bad, n);
    CHECK_EQ_I64(bad, 0);
    return bad == 0;
}

/* iters iterations of the typed op on the GPU against the reference (fast = 0) or the
 * multithreaded CPU path (fast = 1, itself tested equal to the reference: tests/unit) */
static void run_typed(const shard_t *h, const uint8_t *dt, as_eb_optim kind, int iters, const char *name, int fast)
{
    char err[512] = "";
    typed_t x;
    typed_make(&x, h, dt, kind);
    as_eb_opt op = {kind, kind == AS_EB_SGD ? 0.05f : 0.03f, 1e-6f, 0.9f, 0.999f, 1, 0, 0};
    as_eb_gpu *g = NULL;
    int rc = as_eb_validate_typed(&x.s, dt, kind, x.st_off, err, sizeof err);
    if (!rc) rc = as_eb_gpu_create(&g, &x.s, x.W, h->grad, 0, err, sizeof err);
    if (!rc) rc = as_eb_gpu_set_typed(g, &x.s, dt, &op, x.st_off, x.S, err, sizeof err);
    if (rc) fprintf(stderr, "  %s (%s): %s\n", name, as_eb_optim_name(kind), err);
    CHECK(rc == 0);
    if (rc) { as_eb_gpu_destroy(g); typed_free(&x); return; }
    const size_t outn = (size_t)h->s.B * h->s.d_off[h->s.T];
    float *og = malloc(sizeof(float) * (outn + 1)), *oc = malloc(sizeof(float) * (outn + 1));
    uint16_t *wg = malloc(sizeof(uint16_t) * (size_t)(x.nw + 1));
    float *sg = malloc(sizeof(float) * (size_t)(x.ns + 1));
    as_eb_cpu_ws *ws = fast ? as_eb_cpu_ws_new(&x.s) : NULL;
    fprintf(stderr, "  %s, %s:\n", name, as_eb_optim_name(kind));
    for (int it = 0; it < iters; it++) {
        float ms = -1;
        rc = as_eb_gpu_forward(g, &ms, err, sizeof err) || as_eb_gpu_download(g, og, NULL, err, sizeof err);
        if (rc) fprintf(stderr, "  forward: %s\n", err);
        CHECK(rc == 0);
        if (fast) as_eb_forward_typed_cpu(oc, x.W, &x.s, dt, 0);
        else as_eb_forward_typed_ref(oc, x.W, &x.s, dt);
        cmp_out(og, oc, outn, "forward");
        rc = as_eb_gpu_backward_sgd(g, 0.0f, &ms, err, sizeof err) || as_eb_gpu_download(g, NULL, wg, err, sizeof err) ||
             as_eb_gpu_download_state(g, sg, err, sizeof err);
        if (rc) fprintf(stderr, "  backward: %s\n", err);
        CHECK(rc == 0);
        op.step = 1 + it;
        CHECK_EQ_I64(as_eb_opt_prepare(&op, err, sizeof err), 0);
        if (fast) CHECK_EQ_I64(as_eb_backward_typed_cpu(x.W, x.S, h->grad, &x.s, dt, x.st_off, &op, ws, 0), 0);
        else as_eb_backward_typed_ref(x.W, x.S, h->grad, &x.s, dt, x.st_off, &op);
        cmp_units(wg, x.W, (size_t)x.nw, "weights");
        if (x.ns) cmp_out(sg, x.S, (size_t)x.ns, "state");
        guards_ok(g);
        memcpy(x.W, wg, sizeof(uint16_t) * (size_t)x.nw);   /* go on from the GPU's, so later
                                                              iterations test the kernels */
        if (x.ns) memcpy(x.S, sg, sizeof(float) * (size_t)x.ns);
    }
    as_eb_cpu_ws_free(ws);
    free(og); free(oc); free(wg); free(sg);
    as_eb_gpu_destroy(g);
    typed_free(&x);
}

/* every optimizer with all-fp32, all-bf16, all-fp16 and mixed tables (types cycled) */
static void run_typed_all(const shard_t *h, int iters, const char *name, int fast)
{
    const int T = h->s.T;
    uint8_t *dt = malloc((size_t)T);
    for (int combo = 0; combo < 4; combo++) {
        for (int t = 0; t < T; t++)
            dt[t] = combo == 0 ? AS_EB_F32 : combo == 1 ? AS_EB_BF16 : combo == 2 ? AS_EB_F16 : (uint8_t)((t + 1) % 3);
        for (int o = 0; o < AS_EB_NOPTIM; o++) {
            char nm[128];
            snprintf(nm, sizeof nm, "%s, types %s", name,
                     combo == 0 ? "fp32" : combo == 1 ? "bf16" : combo == 2 ? "fp16" : "mixed");
            run_typed(h, dt, (as_eb_optim)o, iters, nm, fast);
        }
    }
    free(dt);
}

TEST(gpu_ebt_odd_dims_hot_small)
{
    /* odd dims (1 .. 100: lanes without columns, several column passes), hot rows, misaligned
       table starts */
    int32_t d[5] = {1, 3, 17, 33, 100};
    int64_t e[5] = {7, 300, 64, 129, 250};
    shard_t *h = mk_shard(5, 96, d, e, 5, 30, DIST_HOT, 0.6, 3, 7);
    run_typed_all(h, 2, "odd dims hot", 0);
    free_shard(h);
}

TEST(gpu_ebt_wide_empty_small)
{
    /* D > 32 * 8 (many column passes), empty bags, a one-row table */
    int32_t d[3] = {264, 1000, 8};
    int64_t e[3] = {50, 40, 1};
    shard_t *h = mk_shard(3, 64, d, e, 0, 40, DIST_HOT, 0.5, 0, 9);
    run_typed_all(h, 2, "wide", 0);
    free_shard(h);
}

TEST(gpu_ebt_chunked_runs_small)
{
    /* runs at the short/long boundary (64, 65) and the chunk boundaries: one-chunk long runs
       and runs of 2-4 chunks, whose G depends on the chunk order (mk_runs_shard) */
    const int64_t C = AS_EB_CHUNK;
    int64_t len[9] = {1, 64, 65, C - 1, C, C + 1, 2 * C, 2 * C + 1, 3 * C + 7};
    int32_t d[4] = {128, 5, 35, 96};
    shard_t *h = mk_runs_shard(4, d, len, 9, 3, 17);
    run_typed_all(h, 2, "chunked runs", 0);
    free_shard(h);
}

TEST(gpu_ebt_key64_small)
{
    int32_t d[3] = {16, 20, 64};
    int64_t e[3] = {300, 1, 700};
    shard_t *h = mk_shard(3, 80, d, e, 0, 90, DIST_HOT, 0.3, 0, 10);
    setenv("AS_EB_FORCE_KEY64", "1", 1);
    run_typed_all(h, 2, "key64", 0);
    unsetenv("AS_EB_FORCE_KEY64");
    free_shard(h);
}

TEST(gpu_ebt_no_lookups_small)
{
    int32_t d[2] = {8, 4};
    int64_t e[2] = {10, 10};
    shard_t *h = mk_shard(2, 16, d, e, 0, 0, DIST_UNIFORM, 0, 0, 4);
    run_typed_all(h, 1, "no lookups", 0);
    free_shard(h);
}

TEST(gpu_ebt_refused_small)
{
    /* set_typed keeps the kernels in bounds: a fp32 table on a fp16 layout would pass the end
       of W; Adagrad without state offsets */
    int32_t d[1] = {8};
    int64_t e[1] = {10};
    shard_t *h = mk_shard(1, 16, d, e, 1, 3, DIST_UNIFORM, 0, 0, 4);
    char err[512] = "";
    as_eb_gpu *g = NULL;
    int rc = as_eb_gpu_create(&g, &h->s, h->W, h->grad, 0, err, sizeof err);
    CHECK(rc == 0);
    if (!rc) {
        const uint8_t f32[1] = {AS_EB_F32}, f16[1] = {AS_EB_F16};
        as_eb_opt op = {AS_EB_SGD, 0.1f, 0, 0, 0, 1, 0, 0};
        CHECK(as_eb_gpu_set_typed(g, &h->s, f32, &op, NULL, NULL, err, sizeof err) != 0);
        fprintf(stderr, "  refused: %s\n", err);
        CHECK(strstr(err, "pass the end of W") != NULL);
        op.kind = AS_EB_ROWWISE_ADAGRAD;
        CHECK(as_eb_gpu_set_typed(g, &h->s, f16, &op, NULL, NULL, err, sizeof err) != 0);
        fprintf(stderr, "  refused: %s\n", err);
        CHECK(strstr(err, "state") != NULL);
        as_eb_gpu_destroy(g);
    }
    free_shard(h);
}

TEST(gpu_ebt_large_zipf)
{
    int32_t d[8] = {128, 64, 32, 16, 128, 64, 32, 16};
    int64_t e[8] = {100000, 100000, 100000, 100000, 10000, 10000, 10000, 10000};
    shard_t *h = mk_shard(8, 8192, d, e, 10, 40, DIST_ZIPF, 0, 0, 14);
    run_typed_all(h, 2, "large zipf", 1);
    free_shard(h);
}

TEST(gpu_ebt_large_hot)
{
    /* a run of ~120k lookups (~230 chunks) */
    int32_t d[2] = {64, 128};
    int64_t e[2] = {1000000, 1000};
    shard_t *h = mk_shard(2, 8192, d, e, 10, 30, DIST_HOT, 0.7, 0, 15);
    run_typed_all(h, 1, "large hot", 1);
    free_shard(h);
}
