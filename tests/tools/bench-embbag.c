/* bench-embbag.c - CPU micro-benchmark of the fused embedding-bag op (lib/kernels/embbag.h) on a
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

typedef struct {
    int64_t T, B, D, L, E;
    int64_t threads, runs, warmup, trim, flush_mb, header, huge;
    uint64_t seed;
    double alpha, lr;
    int zipf;
} opts_t;

/* the command line into *o; -1 to run the benchmark, else the exit status (--help: 0, usage
 * errors: 2 after the message) */
static int parse_options(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){ .T = 4, .B = 8192, .D = 64, .L = 15, .E = 1000000, .threads = 0, .runs = 10, .warmup = 5,
                   .trim = 2, .flush_mb = 0, .header = 1, .huge = 0, .seed = 1, .alpha = 1.05, .lr = 0.01,
                   .zipf = 0 };
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
        case 'T': o->T = parse_opt("tables", optarg, 1, 100000); break;
        case 'B': o->B = parse_opt("batch", optarg, 1, (int64_t)1 << 31); break;
        case 'D': o->D = parse_opt("dim", optarg, 1, 4096); break;
        case 'L': o->L = parse_opt("pooling", optarg, 0, 100000); break;
        case 'E': o->E = parse_opt("rows", optarg, 1, (int64_t)1 << 31); break;
        case 'd':
            if (!strcmp(optarg, "uniform")) o->zipf = 0;
            else if (!strcmp(optarg, "zipf")) o->zipf = 1;
            else { fprintf(stderr, "bench-embbag: --dist: uniform or zipf\n"); return AS_EXIT_USAGE; }
            break;
        case 'a':
            if (as_parse_f64(optarg, 0, 10, &o->alpha)) { fprintf(stderr, "bench-embbag: --alpha: bad value\n"); return AS_EXIT_USAGE; }
            break;
        case 't': o->threads = parse_opt("threads", optarg, 0, 4096); break;
        case 'R': o->runs = parse_opt("runs", optarg, 1, 100000); break;
        case 'W': o->warmup = parse_opt("warmup", optarg, 0, 100000); break;
        case 'k': o->trim = parse_opt("trim", optarg, 0, 100000); break;
        case 'f': o->flush_mb = parse_opt("flush-mb", optarg, 0, 1 << 20); break;
        case 'H': o->huge = 1; break;
        case 'l':
            if (as_parse_f64(optarg, 0, 1e6, &o->lr)) { fprintf(stderr, "bench-embbag: --lr: bad value\n"); return AS_EXIT_USAGE; }
            break;
        case 's': o->seed = (uint64_t)parse_opt("seed", optarg, 0, INT64_MAX); break;
        case 'n': o->header = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return AS_EXIT_USAGE;
        }
    }
    if (optind < argc) { fprintf(stderr, "bench-embbag: unexpected argument '%s'\n", argv[optind]); return AS_EXIT_USAGE; }
    return -1;
}

/* the synthetic shard, its weights, gradient and output */
typedef struct {
    int64_t *rows, *w_off, *offsets;
    int32_t *dims, *d_off, *indices;
    int64_t sumD, nW, nidx;
    as_eb_shard s;
    uint16_t *W;
    float *grad, *out;
    int64_t unique;             /* distinct rows, summed over the tables */
} bench_shard;

/* T tables of E rows of D; B bags of exactly L lookups per table */
static void shard_layout(bench_shard *h, const opts_t *o)
{
    const int64_t T = o->T, B = o->B, D = o->D, L = o->L, E = o->E;
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
    h->sumD = d_off[T];
    h->nW = w_off[T];
    h->nidx = T * B * L;
    for (int64_t k = 0; k <= T * B; k++) offsets[k] = k * L;
    h->rows = rows; h->w_off = w_off; h->dims = dims; h->d_off = d_off;
    h->offsets = offsets; h->indices = indices;
}

/* the rows looked up: uniform, or Zipf ranks scattered by a multiplicative permutation */
static void draw_indices(bench_shard *h, const opts_t *o, as_rng *rng)
{
    const int64_t E = o->E, nidx = h->nidx;
    const double alpha = o->alpha;
    const int zipf = o->zipf;
    int32_t *indices = h->indices;
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
            double u = as_rng_uniform(rng);
            int64_t lo = 0, hi = E - 1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > u) hi = mid; else lo = mid + 1;
            }
            r = (int64_t)(((unsigned __int128)lo * mult + 12345) % (uint64_t)E);
        } else {
            r = (int64_t)as_rng_below(rng, (uint64_t)E);
        }
        indices[i] = (int32_t)r;
    }
    free(cdf);
}

/* random fp16 weights and fp32 gradient, and the output buffer */
static void fill_weights(bench_shard *h, const opts_t *o, as_rng *rng)
{
    const int64_t B = o->B, sumD = h->sumD, nW = h->nW;
    uint16_t *W = big_alloc(sizeof(uint16_t) * (size_t)nW, (int)o->huge);
    float *grad = big_alloc(sizeof(float) * (size_t)(B * sumD), (int)o->huge);
    float *out = big_alloc(sizeof(float) * (size_t)(B * sumD), 0);
    for (int64_t i = 0; i < nW; i++) {   /* random halves in about [-1, 1] */
        uint64_t u = as_rng_next(rng);
        W[i] = (uint16_t)((u & 0x83ffu) | ((8 + (u >> 32) % 7) << 10));
    }
    for (int64_t i = 0; i < B * sumD; i++) grad[i] = (float)(as_rng_uniform(rng) * 2 - 1);
    h->W = W; h->grad = grad; h->out = out;
}

/* unique rows per table, summed */
static int64_t count_unique(const bench_shard *h, const opts_t *o)
{
    const int64_t T = o->T, B = o->B, E = o->E;
    const int64_t *offsets = h->offsets;
    const int32_t *indices = h->indices;
    int64_t unique = 0;
    uint8_t *seen = calloc((size_t)E, 1);
    if (!seen) as_die(AS_EXIT_ENV, "out of memory");
    for (int64_t t = 0; t < T; t++) {
        memset(seen, 0, (size_t)E);
        for (int64_t p = offsets[t * B]; p < offsets[(t + 1) * B]; p++)
            if (!seen[indices[p]]) { seen[indices[p]] = 1; unique++; }
    }
    free(seen);
    return unique;
}

/* build the shard, validated; the generator's draws in a fixed order (indices, W, grad) */
static void make_shard(bench_shard *h, const opts_t *o)
{
    shard_layout(h, o);
    as_rng rng;
    as_rng_seed(&rng, o->seed, 0);
    draw_indices(h, o, &rng);
    h->s = (as_eb_shard){ (int32_t)o->T, o->B, h->rows, h->dims, h->w_off, h->d_off, h->offsets, h->indices };
    char err[256];
    if (as_eb_validate(&h->s, err, sizeof err)) as_die(AS_EXIT_DATA, "shard: %s", err);
    fill_weights(h, o, &rng);
    h->unique = count_unique(h, o);
}

/* the CPU forward against the reference, bit for bit; 0, or -1 after a message */
static int check_forward(bench_shard *h, const opts_t *o, int nt)
{
    const int64_t B = o->B, sumD = h->sumD;
    float *ref = malloc(sizeof(float) * (size_t)(B * sumD));
    if (!ref) as_die(AS_EXIT_ENV, "out of memory");
    as_eb_forward_ref(ref, h->W, &h->s);
    as_eb_forward_cpu(h->out, h->W, &h->s, nt);
    if (memcmp(ref, h->out, sizeof(float) * (size_t)(B * sumD))) {
        fprintf(stderr, "bench-embbag: forward differs from the reference\n");
        return -1;
    }
    free(ref);
    return 0;
}

/* the flush buffer: --flush-mb, else 2x the last-level cache and at least 64 MiB */
static uint64_t *alloc_flush(const opts_t *o, int nt, size_t *flush_bytes_out)
{
    const int64_t flush_mb = o->flush_mb;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (llc <= 0) llc = 32 << 20;
    size_t flush_bytes = flush_mb > 0 ? (size_t)flush_mb << 20 : (size_t)llc * 2;
    if (flush_mb == 0 && flush_bytes < ((size_t)64 << 20)) flush_bytes = (size_t)64 << 20;
    uint64_t *fbuf = big_alloc(flush_bytes, 0);
    const size_t fwords = flush_bytes / 8;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (size_t i = 0; i < fwords; i++) fbuf[i] = i;
    *flush_bytes_out = flush_bytes;
    return fbuf;
}

/* W/B/R: warmup + runs iterations of flush, forward, flush, backward+SGD; the timed runs'
 * ms into tf and tb */
static void time_phases(bench_shard *h, const opts_t *o, as_eb_cpu_ws *ws, const uint64_t *fbuf, size_t fwords,
                        int nt, double *tf, double *tb)
{
    const int64_t warmup = o->warmup;
    const int total = (int)(o->warmup + o->runs);
    const double lr = o->lr;
    for (int it = 0; it < total; it++) {
        flush_caches(fbuf, fwords, nt);
        double t0 = now_s();
        as_eb_forward_cpu(h->out, h->W, &h->s, nt);
        double t1 = now_s();
        flush_caches(fbuf, fwords, nt);
        double t2 = now_s();
        as_eb_backward_sgd_cpu(h->W, h->grad, &h->s, (float)lr, ws, nt);
        double t3 = now_s();
        if (it >= warmup) {
            tf[it - warmup] = (t1 - t0) * 1e3;
            tb[it - warmup] = (t3 - t2) * 1e3;
        }
    }
}

/* the result line (after the header unless --no-header) on stdout, the notes on stderr */
static void report(const bench_shard *h, const opts_t *o, int nt, size_t flush_bytes, const double *tf,
                   const double *tb)
{
    const int64_t T = o->T, B = o->B, D = o->D, L = o->L, E = o->E, sumD = h->sumD;
    stats sf = summarize(tf, (int)o->runs, (int)o->trim), sb = summarize(tb, (int)o->runs, (int)o->trim);
    const double fwd_bytes = 4.0 * (double)B * (double)sumD + 2.0 * (double)B * (double)sumD * (double)L;
    const double fgbs = fwd_bytes / (sf.mean * 1e-3) / 1e9;
    const double bgbs = 2 * fwd_bytes / (sb.mean * 1e-3) / 1e9;
    const char *bind[] = { "false", "true", "master", "close", "spread" };
    int pb = (int)omp_get_proc_bind();
    if (o->header)
        printf("%-7s %4s %6s %4s %3s %8s %3s %9s %9s %9s %8s %6s %8s %9s %8s %6s %8s %9s\n", "dist", "T", "B", "D",
               "L", "E", "thr", "lookups", "unique", "fwd_ms", "fwd_GB/s", "/core", "fwd_rsd", "bwd_ms",
               "bwd_GB/s", "/core", "bwd_rsd", "total_ms");
    printf("%-7s %4lld %6lld %4lld %3lld %8lld %3d %9lld %9lld %9.3f %8.2f %6.2f %7.1f%% %9.3f %8.2f %6.2f %7.1f%% %9.3f\n",
           o->zipf ? "zipf" : "uniform", (long long)T, (long long)B, (long long)D, (long long)L, (long long)E, nt,
           (long long)h->nidx, (long long)h->unique, sf.mean, fgbs, fgbs / nt, sf.rsd * 100, sb.mean, bgbs, bgbs / nt,
           sb.rsd * 100, sf.mean + sb.mean);
    fprintf(stderr, "bench-embbag: seed %llu, flush %.0f MiB, proc_bind %s, hugepages %s, fwd median %.3f min %.3f, "
            "bwd median %.3f min %.3f ms\n", (unsigned long long)o->seed, flush_bytes / 1048576.0,
            pb >= 0 && pb < 5 ? bind[pb] : "?", o->huge ? "madvise" : "no", sf.median, sf.min, sb.median, sb.min);
}

int main(int argc, char **argv)
{
    as_set_prog("bench-embbag");
    opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    const int nt = o.threads > 0 ? (int)o.threads : omp_get_max_threads();

    /* ---- the shard ---- */
    bench_shard h;
    make_shard(&h, &o);
    if (check_forward(&h, &o, nt)) return AS_EXIT_DATA;

    as_eb_cpu_ws *ws = as_eb_cpu_ws_new(&h.s);
    if (!ws) as_die(AS_EXIT_ENV, "out of memory (workspace)");
    size_t flush_bytes;
    uint64_t *fbuf = alloc_flush(&o, nt, &flush_bytes);
    const size_t fwords = flush_bytes / 8;

    /* ---- timing ---- */
    double *tf = malloc(sizeof(double) * (size_t)o.runs), *tb = malloc(sizeof(double) * (size_t)o.runs);
    time_phases(&h, &o, ws, fbuf, fwords, nt, tf, tb);
    report(&h, &o, nt, flush_bytes, tf, tb);
    if (fflush(stdout) || ferror(stdout)) return AS_EXIT_ENV;

    as_eb_cpu_ws_free(ws);
    free(tf); free(tb); free(fbuf); free(h.W); free(h.grad); free(h.out);
    free(h.rows); free(h.w_off); free(h.dims); free(h.d_off); free(h.offsets); free(h.indices);
    return 0;
}
