/* bench-embbag.c - CPU micro-benchmark of the fused embedding-bag op (lib/embbag.h) on a
 * synthetic shard. Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * Builds T tables of E fp16 rows of D, B bags of exactly L lookups per table (uniform or
 * Zipf rows, hot rows scattered by a multiplicative permutation), a random fp32 gradient,
 * then times forward and backward + SGD with the W/B/R protocol: W warm-up iterations, R
 * timed ones, each phase started cold (a read sweep of a buffer >= 2x the last-level cache
 * before it), drop the `trim` highest and lowest, mean of the rest. Bandwidth by FBGEMM's
 * formula: forward bytes = 4*B*sumD (fp32 out) + 2*B*sumD*L (fp16 rows), backward credited
 * twice the forward bytes. One result line on stdout (a header first unless --no-header);
 * progress and notes on stderr. Pin threads with OMP_PROC_BIND=close OMP_PLACES=cores. */
#include "common.h"
#include "embbag.h"

#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: bench-embbag [options]\n"
        "  --tables T      tables in the shard (4)\n"
        "  --batch B       bags per table (8192)\n"
        "  --dim D         embedding dim of every table (64)\n"
        "  --pooling L     lookups per bag (15)\n"
        "  --rows E        rows per table (1000000)\n"
        "  --dist uniform|zipf   row distribution (uniform)\n"
        "  --alpha A       Zipf exponent (1.05)\n"
        "  --threads N     OpenMP threads, 0 = OpenMP default (0)\n"
        "  --runs R        timed runs (10)\n"
        "  --warmup W      warm-up runs (5)\n"
        "  --trim K        drop the K highest and K lowest runs (2)\n"
        "  --flush-mb M    cache-flush buffer in MiB (2x the last-level cache, at least 64)\n"
        "  --hugepages     madvise(MADV_HUGEPAGE) the weights and gradient\n"
        "  --lr X          SGD learning rate (0.01)\n"
        "  --seed S        PRNG seed (1)\n"
        "  --no-header     print only the result line\n"
        "  -h, --help      this help\n"
        "exit: 0 ok, 1 bad result, 2 usage, 3 out of memory\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *big_alloc(size_t n, int huge)
{
    size_t align = huge ? (size_t)2 << 20 : 64;
    size_t sz = (n + align - 1) / align * align;
    void *p = aligned_alloc(align, sz ? sz : align);
    if (!p) as_die(AS_EXIT_ENV, "out of memory (%zu bytes)", n);
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, sz, MADV_HUGEPAGE);
#endif
    return p;
}

/* read one word of every cache line of the buffer, with every thread */
static volatile uint64_t flush_sink;
static void flush_caches(const uint64_t *buf, size_t words, int nthreads)
{
    uint64_t s = 0;
#pragma omp parallel for num_threads(nthreads) reduction(+ : s) schedule(static)
    for (size_t i = 0; i < words; i += 8) s += buf[i];
    flush_sink += s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct { double mean, median, min, max, rsd; } stats;

static stats summarize(const double *v, int n, int trim)
{
    double *s = malloc(sizeof(double) * (size_t)n);
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    stats r = { 0, 0, s[0], s[n - 1], 0 };
    int lo = trim, hi = n - trim;
    if (hi <= lo) { lo = 0; hi = n; }
    for (int i = lo; i < hi; i++) r.mean += s[i];
    r.mean /= hi - lo;
    double var = 0;
    for (int i = lo; i < hi; i++) var += (s[i] - r.mean) * (s[i] - r.mean);
    r.rsd = hi - lo > 1 ? sqrt(var / (hi - lo - 1)) / r.mean : 0;
    r.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return r;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

static int64_t parse_opt(const char *name, const char *v, int64_t lo, int64_t hi)
{
    int64_t x;
    if (as_parse_i64(v, lo, hi, &x)) {
        fprintf(stderr, "bench-embbag: --%s: bad value '%s' (%lld..%lld)\n", name, v, (long long)lo, (long long)hi);
        fprintf(stderr, "try 'bench-embbag --help'\n");
        exit(AS_EXIT_USAGE);
    }
    return x;
}

int main(int argc, char **argv)
{
    as_set_prog("bench-embbag");
    int64_t T = 4, B = 8192, D = 64, L = 15, E = 1000000;
    int64_t threads = 0, runs = 10, warmup = 5, trim = 2, flush_mb = 0, header = 1, huge = 0;
    uint64_t seed = 1;
    double alpha = 1.05, lr = 0.01;
    int zipf = 0;
    static const struct option opts[] = {
        { "tables", 1, 0, 'T' }, { "batch", 1, 0, 'B' }, { "dim", 1, 0, 'D' }, { "pooling", 1, 0, 'L' },
        { "rows", 1, 0, 'E' }, { "dist", 1, 0, 'd' }, { "alpha", 1, 0, 'a' }, { "threads", 1, 0, 't' },
        { "runs", 1, 0, 'R' }, { "warmup", 1, 0, 'W' }, { "trim", 1, 0, 'k' }, { "flush-mb", 1, 0, 'f' },
        { "hugepages", 0, 0, 'H' }, { "lr", 1, 0, 'l' }, { "seed", 1, 0, 's' }, { "no-header", 0, 0, 'n' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'T': T = parse_opt("tables", optarg, 1, 100000); break;
        case 'B': B = parse_opt("batch", optarg, 1, (int64_t)1 << 31); break;
        case 'D': D = parse_opt("dim", optarg, 1, 4096); break;
        case 'L': L = parse_opt("pooling", optarg, 0, 100000); break;
        case 'E': E = parse_opt("rows", optarg, 1, (int64_t)1 << 31); break;
        case 'd':
            if (!strcmp(optarg, "uniform")) zipf = 0;
            else if (!strcmp(optarg, "zipf")) zipf = 1;
            else { fprintf(stderr, "bench-embbag: --dist: uniform or zipf\n"); return AS_EXIT_USAGE; }
            break;
        case 'a':
            if (as_parse_f64(optarg, 0, 10, &alpha)) { fprintf(stderr, "bench-embbag: --alpha: bad value\n"); return AS_EXIT_USAGE; }
            break;
        case 't': threads = parse_opt("threads", optarg, 0, 4096); break;
        case 'R': runs = parse_opt("runs", optarg, 1, 100000); break;
        case 'W': warmup = parse_opt("warmup", optarg, 0, 100000); break;
        case 'k': trim = parse_opt("trim", optarg, 0, 100000); break;
        case 'f': flush_mb = parse_opt("flush-mb", optarg, 0, 1 << 20); break;
        case 'H': huge = 1; break;
        case 'l':
            if (as_parse_f64(optarg, 0, 1e6, &lr)) { fprintf(stderr, "bench-embbag: --lr: bad value\n"); return AS_EXIT_USAGE; }
            break;
        case 's': seed = (uint64_t)parse_opt("seed", optarg, 0, INT64_MAX); break;
        case 'n': header = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return AS_EXIT_USAGE;
        }
    }
    if (optind < argc) { fprintf(stderr, "bench-embbag: unexpected argument '%s'\n", argv[optind]); return AS_EXIT_USAGE; }
    const int nt = threads > 0 ? (int)threads : omp_get_max_threads();

    /* ---- the shard ---- */
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)T), *w_off = malloc(sizeof(int64_t) * (size_t)(T + 1));
    int32_t *dims = malloc(sizeof(int32_t) * (size_t)T), *d_off = malloc(sizeof(int32_t) * (size_t)(T + 1));
    int64_t *offsets = malloc(sizeof(int64_t) * (size_t)(T * B + 1));
    int32_t *indices = malloc(sizeof(int32_t) * (size_t)(T * B * L + 1));
    if (!rows || !w_off || !dims || !d_off || !offsets || !indices) as_die(AS_EXIT_ENV, "out of memory");
    w_off[0] = 0;
    d_off[0] = 0;
    for (int64_t t = 0; t < T; t++) {
        rows[t] = E;
        dims[t] = (int32_t)D;
        w_off[t + 1] = w_off[t] + E * D;
        d_off[t + 1] = d_off[t] + (int32_t)D;
    }
    const int64_t sumD = d_off[T], nW = w_off[T], nidx = T * B * L;
    for (int64_t k = 0; k <= T * B; k++) offsets[k] = k * L;

    as_rng rng;
    as_rng_seed(&rng, seed, 0);
    double *cdf = NULL;
    uint64_t mult = 1;
    if (zipf) {
        cdf = malloc(sizeof(double) * (size_t)E);
        if (!cdf) as_die(AS_EXIT_ENV, "out of memory");
        double acc = 0;
        for (int64_t i = 0; i < E; i++) cdf[i] = acc += pow((double)(i + 1), -alpha);
        for (int64_t i = 0; i < E; i++) cdf[i] /= acc;
        mult = 2654435761u % (uint64_t)E;
        if (mult == 0) mult = 1;
        while (gcd_u64(mult, (uint64_t)E) != 1) mult++;
    }
    for (int64_t i = 0; i < nidx; i++) {
        int64_t r;
        if (zipf) {
            double u = as_rng_uniform(&rng);
            int64_t lo = 0, hi = E - 1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > u) hi = mid; else lo = mid + 1;
            }
            r = (int64_t)(((unsigned __int128)lo * mult + 12345) % (uint64_t)E);
        } else {
            r = (int64_t)as_rng_below(&rng, (uint64_t)E);
        }
        indices[i] = (int32_t)r;
    }
    free(cdf);
    as_eb_shard s = { (int32_t)T, B, rows, dims, w_off, d_off, offsets, indices };
    char err[256];
    if (as_eb_validate(&s, err, sizeof err)) as_die(AS_EXIT_DATA, "shard: %s", err);

    uint16_t *W = big_alloc(sizeof(uint16_t) * (size_t)nW, (int)huge);
    float *grad = big_alloc(sizeof(float) * (size_t)(B * sumD), (int)huge);
    float *out = big_alloc(sizeof(float) * (size_t)(B * sumD), 0);
    for (int64_t i = 0; i < nW; i++) {   /* random halves in about [-1, 1] */
        uint64_t u = as_rng_next(&rng);
        W[i] = (uint16_t)((u & 0x83ffu) | ((8 + (u >> 32) % 7) << 10));
    }
    for (int64_t i = 0; i < B * sumD; i++) grad[i] = (float)(as_rng_uniform(&rng) * 2 - 1);

    /* unique rows */
    int64_t unique = 0;
    {
        uint8_t *seen = calloc((size_t)E, 1);
        if (!seen) as_die(AS_EXIT_ENV, "out of memory");
        for (int64_t t = 0; t < T; t++) {
            memset(seen, 0, (size_t)E);
            for (int64_t p = offsets[t * B]; p < offsets[(t + 1) * B]; p++)
                if (!seen[indices[p]]) { seen[indices[p]] = 1; unique++; }
        }
        free(seen);
    }

    /* forward check against the reference */
    {
        float *ref = malloc(sizeof(float) * (size_t)(B * sumD));
        if (!ref) as_die(AS_EXIT_ENV, "out of memory");
        as_eb_forward_ref(ref, W, &s);
        as_eb_forward_cpu(out, W, &s, nt);
        if (memcmp(ref, out, sizeof(float) * (size_t)(B * sumD))) {
            fprintf(stderr, "bench-embbag: forward differs from the reference\n");
            return AS_EXIT_DATA;
        }
        free(ref);
    }

    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&s);
    if (!ws) as_die(AS_EXIT_ENV, "out of memory (workspace)");

    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (llc <= 0) llc = 32 << 20;
    size_t flush_bytes = flush_mb > 0 ? (size_t)flush_mb << 20 : (size_t)llc * 2;
    if (flush_mb == 0 && flush_bytes < ((size_t)64 << 20)) flush_bytes = (size_t)64 << 20;
    uint64_t *fbuf = big_alloc(flush_bytes, 0);
    const size_t fwords = flush_bytes / 8;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (size_t i = 0; i < fwords; i++) fbuf[i] = i;

    /* ---- timing ---- */
    const int total = (int)(warmup + runs);
    double *tf = malloc(sizeof(double) * (size_t)runs), *tb = malloc(sizeof(double) * (size_t)runs);
    for (int it = 0; it < total; it++) {
        flush_caches(fbuf, fwords, nt);
        double t0 = now_s();
        as_eb_forward_cpu(out, W, &s, nt);
        double t1 = now_s();
        flush_caches(fbuf, fwords, nt);
        double t2 = now_s();
        as_eb_backward_sgd_cpu(W, grad, &s, (float)lr, ws, nt);
        double t3 = now_s();
        if (it >= warmup) {
            tf[it - warmup] = (t1 - t0) * 1e3;
            tb[it - warmup] = (t3 - t2) * 1e3;
        }
    }
    stats sf = summarize(tf, (int)runs, (int)trim), sb = summarize(tb, (int)runs, (int)trim);
    const double fwd_bytes = 4.0 * (double)B * (double)sumD + 2.0 * (double)B * (double)sumD * (double)L;
    const double fgbs = fwd_bytes / (sf.mean * 1e-3) / 1e9;
    const double bgbs = 2 * fwd_bytes / (sb.mean * 1e-3) / 1e9;
    const char *bind[] = { "false", "true", "master", "close", "spread" };
    int pb = (int)omp_get_proc_bind();
    if (header)
        printf("%-7s %4s %6s %4s %3s %8s %3s %9s %9s %9s %8s %6s %8s %9s %8s %6s %8s %9s\n", "dist", "T", "B", "D",
               "L", "E", "thr", "lookups", "unique", "fwd_ms", "fwd_GB/s", "/core", "fwd_rsd", "bwd_ms",
               "bwd_GB/s", "/core", "bwd_rsd", "total_ms");
    printf("%-7s %4lld %6lld %4lld %3lld %8lld %3d %9lld %9lld %9.3f %8.2f %6.2f %7.1f%% %9.3f %8.2f %6.2f %7.1f%% %9.3f\n",
           zipf ? "zipf" : "uniform", (long long)T, (long long)B, (long long)D, (long long)L, (long long)E, nt,
           (long long)nidx, (long long)unique, sf.mean, fgbs, fgbs / nt, sf.rsd * 100, sb.mean, bgbs, bgbs / nt,
           sb.rsd * 100, sf.mean + sb.mean);
    fprintf(stderr, "bench-embbag: seed %llu, flush %.0f MiB, proc_bind %s, hugepages %s, fwd median %.3f min %.3f, "
            "bwd median %.3f min %.3f ms\n", (unsigned long long)seed, flush_bytes / 1048576.0,
            pb >= 0 && pb < 5 ? bind[pb] : "?", huge ? "madvise" : "no", sf.median, sf.min, sb.median, sb.min);
    if (fflush(stdout) || ferror(stdout)) return AS_EXIT_ENV;

    as_eb_cpu_ws_free(ws);
    free(tf); free(tb); free(fbuf); free(W); free(grad); free(out);
    free(rows); free(w_off); free(dims); free(d_off); free(offsets); free(indices);
    return 0;
}
