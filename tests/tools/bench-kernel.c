/* bench-kernel.c - micro-benchmark of the fused embedding-bag op over a grid of
 * representative shards: the CUDA kernels (lib/kernels/embbag.cu), or with --cpu the CPU path
 * (lib/kernels/embbag.c, OpenMP). Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * For each shard (every dim x pooling x distribution of the lists given, plus one shard of
 * mixed dims per pooling x distribution unless --no-mixed): T tables of E fp16 rows, B bags
 * of exactly L lookups per table, rows uniform or power-law (Zipf exponent --alpha over the
 * ranks, ranks scattered over the rows by a multiplicative permutation), a random fp32 grad.
 * W/B/R protocol: --warmup iterations, then --iters timed ones; every iteration is
 * flush, forward, flush, backward+SGD (on the GPU the flush reads a buffer >= 2x L2 on the
 * same stream and phases are timed with CUDA events; on the CPU every thread sweeps a buffer
 * of 2x the last-level cache, at least 64 MiB, and phases are timed with the monotonic
 * clock; so each phase starts cold). Per phase: the mean after dropping the --drop highest and
 * --drop lowest ("ms"), the median, min, max and relative std-dev of all timed iterations.
 * GB/s by FBGEMM's formula: forward bytes = sum_t 4*B*D_t + 2*B*D_t*L_t, backward credited 2x,
 * total = 3x forward bytes over forward+backward time; % of the measured device copy rate
 * (GPU only; 0 on the CPU).
 *
 * stdout: '#' comment lines (device, clock, copy GB/s, seed, protocol), then a tab-separated
 * table with a header line. --dump DIR writes per shard DIR/<name>.json plus
 * DIR/<name>.offsets.i64 and DIR/<name>.indices.i32 (raw little-endian) and appends the name
 * to DIR/index.txt, for pipelines/bench-torch.py.
 * Exit: 0 ok, 2 usage, 3 environment (GPU: built without CUDA, no device; out of memory). */
#include "bench.h"
#include "common.h"
#include "ebopt.h"
#include "embbag.h"
#include "half.h"
#include "shardgen.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VERSION "bench-kernel 0.1"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench-kernel [--cpu] [options]\n"
            "  --cpu             time the CPU path (OpenMP) instead of the CUDA kernels\n"
            "  --threads N       CPU threads, 0 = OpenMP's default (0)\n"
            "  --flush-mb M      CPU cache-flush sweep in MiB (2x the last-level cache, >= 64)\n"
            "  --tables T        tables per shard (8)\n"
            "  --rows E          rows per table (1000000)\n"
            "  --batch B         bags per table (65536)\n"
            "  --dims LIST       comma-separated dims (16,32,64,128)\n"
            "  --pooling LIST    comma-separated pooling factors (1,15,100)\n"
            "  --dist LIST       uniform,powerlaw (both)\n"
            "  --alpha A         power-law exponent (1.05)\n"
            "  --no-mixed        skip the mixed-dims shards (dims of the list, cycled over tables)\n"
            "  --only NAME       run only shards whose name contains NAME\n"
            "  --quick           small shards: --tables 4 --rows 100000 --batch 8192\n"
            "  --warmup W        warm-up iterations (5)\n"
            "  --iters R         timed iterations (10)\n"
            "  --drop K          drop K highest and K lowest (2)\n"
            "  --lr X            the optimizer's learning rate (0.01)\n"
            "  --weights T       the weights' type, fp16 (default), fp32 or bf16\n"
            "  --optimizer O     sgd (default, exact SGD), exact_rowwise_adagrad or adam\n"
            "                    (lib/kernels/ebopt.h; on CUDA the typed kernels, bit-exact on an H200)\n"
            "  --seed S          PRNG seed (1)\n"
            "  --device N        CUDA device (0; GPU only)\n"
            "  --dump DIR        write each shard's offsets/indices + JSON for bench-torch.py\n"
            "  -h, --help        this help;  --version  the version\n"
            "Shard names: d<D>-l<L>-<dist> and mixed-l<L>-<dist>.\n"
            "Exit status: 0 ok, 2 usage error, 3 environment error (GPU: no CUDA build or\n"
            "device, not enough device memory; out of host memory, write error).\n");
}

/* ---- option parsing ----------------------------------------------------------------------- */

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int parse_list(const char *s, int *vals, int max, int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int64_t v;
        if (*n == max || parse_i64(tok, 1, 100000, &v)) return -1;
        vals[(*n)++] = (int)v;
    }
    return *n ? 0 : -1;
}

/* ---- statistics ---------------------------------------------------------------------------- */

typedef struct { double trim, med, min, max, rsd; } stats_t;

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stats_t stats(const double *v, int n, int drop)
{
    stats_t s = {0, 0, 0, 0, 0};
    if (n <= 0) return s;
    double *w = malloc(sizeof(double) * n);
    memcpy(w, v, sizeof(double) * n);
    qsort(w, n, sizeof(double), cmpd);
    int lo = drop, hi = n - drop;
    if (hi <= lo) { lo = 0; hi = n; }
    double sum = 0;
    for (int i = lo; i < hi; i++) sum += w[i];
    s.trim = sum / (hi - lo);
    s.med = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
    s.min = w[0];
    s.max = w[n - 1];
    double m = 0, q = 0;
    for (int i = 0; i < n; i++) m += w[i];
    m /= n;
    for (int i = 0; i < n; i++) q += (w[i] - m) * (w[i] - m);
    s.rsd = n > 1 && m > 0 ? sqrt(q / (n - 1)) / m : 0;
    free(w);
    return s;
}

/* ---- shards -------------------------------------------------------------------------------- */

typedef struct {
    char name[64];
    const char *dist;
    int L;
    tsup_shard x;   /* tests/support/shardgen.h */
    int64_t unique;
} shard_t;

static void free_shard(shard_t *h)
{
    tsup_shard_free(&h->x);
    memset(h, 0, sizeof *h);
}

static int make_shard(shard_t *h, int T, int64_t E, int64_t B, const int32_t *dims, int L, int powerlaw, double alpha,
                      uint64_t seed)
{
    uint64_t st = seed;
    tsup_shard *x = &h->x;
    h->L = L;
    h->dist = powerlaw ? "powerlaw" : "uniform";
    if (tsup_shard_layout(x, T, B, NULL, E, dims, 0)) return -1;
    for (int64_t g = 0; g <= (int64_t)T * B; g++) x->offsets[g] = g * L;
    if (tsup_shard_data(x, T, B)) return -1;
    int64_t n = x->nidx;
    tsup_zipf z;
    tsup_zipf_init(&z, E, alpha);
    for (int64_t p = 0; p < n; p++) {
        int64_t r;
        if (powerlaw) r = tsup_zipf_row(&z, tsup_unif(&st));
        else r = (int64_t)(as_splitmix64(&st) % (uint64_t)E);
        x->indices[p] = (int32_t)r;
    }
    /* unique rows over the shard */
    int64_t sumE = (int64_t)T * E;
    uint64_t *bits = calloc((size_t)(sumE + 63) / 64, 8);
    if (!bits) return -1;
    h->unique = 0;
    for (int t = 0; t < T; t++)
        for (int64_t p = (int64_t)t * B * L; p < (int64_t)(t + 1) * B * L; p++) {
            uint64_t k = (uint64_t)(t * E + x->indices[p]);
            if (!(bits[k >> 6] >> (k & 63) & 1)) { bits[k >> 6] |= 1ULL << (k & 63); h->unique++; }
        }
    free(bits);
    /* weights: random fp16 of magnitude in [2^-7, 1) with random sign, straight from bits */
    for (int64_t i = 0; i < x->nW; i += 4) {
        uint64_t zz = as_splitmix64(&st);
        for (int k = 0; k < 4 && i + k < x->nW; k++) {
            uint16_t v = (uint16_t)(zz >> (16 * k));
            x->W[i + k] = (uint16_t)((v & 0x8000) | (0x2000 + (v & 0x1bff)));
        }
    }
    tsup_fill_unit(x->grad, B * x->sumD, &st);
    return 0;
}

static int write_file(const char *path, const void *p, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, bytes, f);
    int bad = w != bytes;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* raw little-endian arrays (this tool runs on little-endian hosts only: x86-64, aarch64) */
static int dump_shard(const char *dir, const shard_t *h, double alpha, uint64_t seed, float lr)
{
    char path[4096];
    const as_eb_shard *s = &h->x.s;
    int64_t n = s->offsets[(int64_t)s->T * s->B];
    snprintf(path, sizeof path, "%s/%s.offsets.i64", dir, h->name);
    if (write_file(path, s->offsets, sizeof(int64_t) * ((size_t)s->T * s->B + 1))) return -1;
    snprintf(path, sizeof path, "%s/%s.indices.i32", dir, h->name);
    if (write_file(path, s->indices, sizeof(int32_t) * (size_t)n)) return -1;
    snprintf(path, sizeof path, "%s/%s.json", dir, h->name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"name\": \"%s\", \"T\": %d, \"B\": %lld, \"pooling\": %d, \"dist\": \"%s\", \"alpha\": %g, "
               "\"seed\": %llu, \"lr\": %g, \"lookups\": %lld, \"unique\": %lld,\n \"rows\": [",
            h->name, s->T, (long long)s->B, h->L, h->dist, alpha, (unsigned long long)seed, lr, (long long)n,
            (long long)h->unique);
    for (int t = 0; t < s->T; t++) fprintf(f, "%s%lld", t ? ", " : "", (long long)s->rows[t]);
    fprintf(f, "],\n \"dims\": [");
    for (int t = 0; t < s->T; t++) fprintf(f, "%s%d", t ? ", " : "", s->dims[t]);
    fprintf(f, "],\n \"offsets\": \"%s.offsets.i64\", \"indices\": \"%s.indices.i32\"}\n", h->name, h->name);
    if (fclose(f)) return -1;
    snprintf(path, sizeof path, "%s/index.txt", dir);
    f = fopen(path, "a");
    if (!f) return -1;
    fprintf(f, "%s\n", h->name);
    return fclose(f) ? -1 : 0;
}

/* ---- the CPU path ------------------------------------------------------------------------------ */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* read one word of every cache line of the buffer, with every thread */
static volatile uint64_t flush_sink;
static void cpu_flush(const uint64_t *buf, size_t words, int nt)
{
    uint64_t s = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : s) schedule(static)
    for (size_t i = 0; i < words; i += 8) s += buf[i];
    flush_sink += s;
}

/* ---- options ---------------------------------------------------------------------------------- */

typedef struct {
    int64_t T, E, B, warm, iters, drop, device, seedv;
    int64_t threads, flush_mb;
    int cpu;
    int dims[16], ndims, pools[16], npools;
    int do_uniform, do_power, mixed;
    double alpha, lr;
    const char *dump, *only;
    as_eb_dtype wtype;      /* --weights */
    as_eb_optim optim;      /* --optimizer */
} opts_t;

/* the command line into *o; -1 to run the benchmark, else the exit status (--help, --version: 0;
 * usage error: 2, after the message) */
static int parse_options(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){ .T = 8, .E = 1000000, .B = 65536, .warm = 5, .iters = 10, .drop = 2, .device = 0, .seedv = 1,
                   .threads = 0, .flush_mb = 0, .cpu = 0, .dims = {16, 32, 64, 128}, .ndims = 4,
                   .pools = {1, 15, 100}, .npools = 3, .do_uniform = 1, .do_power = 1, .mixed = 1,
                   .alpha = 1.05, .lr = 0.01, .dump = NULL, .only = NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "bench-kernel: %s needs a value\nusage: see bench-kernel --help\n", a); return 2; } i++; } while (0)
#define BAD() do { fprintf(stderr, "bench-kernel: bad value for %s: %s\nusage: see bench-kernel --help\n", a, v); return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--version")) { printf("%s\n", VERSION); return 0; }
        else if (!strcmp(a, "--tables")) { NEED(); if (parse_i64(v, 1, 4096, &o->T)) BAD(); }
        else if (!strcmp(a, "--rows")) { NEED(); if (parse_i64(v, 1, 2000000000LL, &o->E)) BAD(); }
        else if (!strcmp(a, "--batch")) { NEED(); if (parse_i64(v, 1, 1LL << 24, &o->B)) BAD(); }
        else if (!strcmp(a, "--dims")) { NEED(); if (parse_list(v, o->dims, 16, &o->ndims)) BAD(); }
        else if (!strcmp(a, "--pooling")) { NEED(); if (parse_list(v, o->pools, 16, &o->npools)) BAD(); }
        else if (!strcmp(a, "--dist")) {
            NEED();
            o->do_uniform = strstr(v, "uniform") != NULL;
            o->do_power = strstr(v, "powerlaw") != NULL;
            if (!o->do_uniform && !o->do_power) BAD();
        } else if (!strcmp(a, "--alpha")) {
            NEED();
            char *end;
            o->alpha = strtod(v, &end);
            if (*end || end == v || !(o->alpha > 0) || fabs(o->alpha - 1.0) < 1e-9 || o->alpha > 10) BAD();
        } else if (!strcmp(a, "--lr")) {
            NEED();
            char *end;
            o->lr = strtod(v, &end);
            if (*end || end == v || !(o->lr >= 0) || o->lr > 1e6) BAD();
        } else if (!strcmp(a, "--no-mixed")) o->mixed = 0;
        else if (!strcmp(a, "--only")) { NEED(); o->only = v; }
        else if (!strcmp(a, "--quick")) { o->T = 4; o->E = 100000; o->B = 8192; }
        else if (!strcmp(a, "--warmup")) { NEED(); if (parse_i64(v, 0, 1000, &o->warm)) BAD(); }
        else if (!strcmp(a, "--iters")) { NEED(); if (parse_i64(v, 1, 100000, &o->iters)) BAD(); }
        else if (!strcmp(a, "--drop")) { NEED(); if (parse_i64(v, 0, 1000, &o->drop)) BAD(); }
        else if (!strcmp(a, "--seed")) { NEED(); if (parse_i64(v, 0, INT64_MAX, &o->seedv)) BAD(); }
        else if (!strcmp(a, "--device")) { NEED(); if (parse_i64(v, 0, 1024, &o->device)) BAD(); }
        else if (!strcmp(a, "--dump")) { NEED(); o->dump = v; }
        else if (!strcmp(a, "--weights")) { NEED(); if (as_eb_dtype_parse(v, &o->wtype)) BAD(); }
        else if (!strcmp(a, "--optimizer")) { NEED(); if (as_eb_optim_parse(v, &o->optim)) BAD(); }
        else if (!strcmp(a, "--cpu")) o->cpu = 1;
        else if (!strcmp(a, "--threads")) { NEED(); if (parse_i64(v, 0, 4096, &o->threads)) BAD(); }
        else if (!strcmp(a, "--flush-mb")) { NEED(); if (parse_i64(v, 1, 1 << 20, &o->flush_mb)) BAD(); }
        else {
            fprintf(stderr, "bench-kernel: unknown option %s\nusage: see bench-kernel --help\n", a);
            return 2;
        }
#undef NEED
#undef BAD
    }
    return -1;
}

/* ---- the run ------------------------------------------------------------------------------------ */

typedef struct {
    const opts_t *o;
    uint64_t seed;
    int nt;                 /* CPU threads */
    uint64_t *fbuf;         /* the CPU flush buffer */
    size_t fwords;
    int dist_list[2], ndist;
    int header_done;
    double copy_gbps;
} bench_t;

/* the timed path of one shard: the CUDA kernels (g) or the CPU workspace and output; with
 * --weights / --optimizer other than fp16 + sgd (CPU) the shard's weights in their type in
 * W (2-byte units, ebopt.h), the optimizer's state S, and the shard laid out over them */
typedef struct {
    as_eb_gpu *g;
    as_eb_cpu_ws *ws;
    float *out;
    int typed;
    uint16_t *W;
    float *S;
    int64_t *w_off, *st_off;
    uint8_t *dt;
    as_eb_shard s;
    as_eb_opt opt;
} backend_t;

/* the typed copy of shard h (its fp16 weights converted); 0, or -1 out of memory */
static int typed_setup(const opts_t *o, const shard_t *h, backend_t *be)
{
    const as_eb_shard *s = &h->x.s;
    const int32_t T = s->T;
    be->typed = 1;
    be->w_off = calloc((size_t)T + 1, sizeof *be->w_off);
    be->st_off = calloc((size_t)T + 1, sizeof *be->st_off);
    be->dt = calloc((size_t)T + 1, 1);
    if (!be->w_off || !be->st_off || !be->dt) return -1;
    for (int32_t t = 0; t < T; t++) {
        const int64_t n = s->rows[t] * s->dims[t];
        be->dt[t] = (uint8_t)o->wtype;
        be->w_off[t + 1] = be->w_off[t] + (n * as_eb_dtype_units(o->wtype) + 31) / 32 * 32;
        be->st_off[t + 1] = be->st_off[t] + as_eb_opt_state(o->optim, s->rows[t], s->dims[t]);
    }
    be->W = malloc((size_t)be->w_off[T] * 2 + 64);
    be->S = calloc((size_t)be->st_off[T] + 1, sizeof *be->S);
    if (!be->W || !be->S) return -1;
    be->s = *s;
    be->s.w_off = be->w_off;
    for (int32_t t = 0; t < T; t++)
        for (int64_t e = 0; e < s->rows[t] * s->dims[t]; e++)
            as_eb_weight_set(be->W, &be->s, be->dt, t, e, as_half_to_float(h->x.W[s->w_off[t] + e]));
    be->opt = (as_eb_opt){ o->optim, (float)o->lr, 1e-8f, 0.9f, 0.999f, 0, 1, 1 };
    return 0;
}

/* the CPU path's flush buffer: 2x the last-level cache (at least 64 MiB) or --flush-mb */
static int alloc_flush_buffer(bench_t *bk)
{
    const int nt = bk->nt;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (llc <= 0) llc = 32L << 20;
    size_t fb = bk->o->flush_mb > 0 ? (size_t)bk->o->flush_mb << 20 : 2 * (size_t)llc;
    if (bk->o->flush_mb == 0 && fb < ((size_t)64 << 20)) fb = (size_t)64 << 20;
    size_t fwords = fb / 8;
    uint64_t *fbuf = malloc(fwords * 8);
    if (!fbuf) { fprintf(stderr, "bench-kernel: out of host memory (flush buffer)\n"); return -1; }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (size_t i = 0; i < fwords; i++) fbuf[i] = i;
    bk->fbuf = fbuf;
    bk->fwords = fwords;
    return 0;
}

/* --dump: start a fresh DIR/index.txt */
static int start_dump_index(const char *dump)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.txt", dump);
    FILE *f = fopen(path, "w"); /* start a fresh index */
    if (!f || fclose(f)) { fprintf(stderr, "bench-kernel: %s: %s\n", path, strerror(errno)); return -1; }
    return 0;
}

/* shape si's dims per table and its name: one dim of the list, or the list cycled (mixed) */
static void shard_shape(const opts_t *o, int si, int L, int pw, int32_t *tdims, char *name, size_t nsize)
{
    const int64_t T = o->T;
    if (si < o->ndims) {
        for (int t = 0; t < T; t++) tdims[t] = o->dims[si];
        snprintf(name, nsize, "d%d-l%d-%s", o->dims[si], L, pw ? "powerlaw" : "uniform");
    } else {
        for (int t = 0; t < T; t++) tdims[t] = o->dims[t % o->ndims];
        snprintf(name, nsize, "mixed-l%d-%s", L, pw ? "powerlaw" : "uniform");
    }
}

/* the CPU workspace and output, or the GPU's copy of the shard; -1 after a message */
static void close_backend(backend_t *be)
{
    as_eb_gpu_destroy(be->g);
    as_eb_cpu_ws_free(be->ws);
    free(be->out);
    free(be->W); free(be->S); free(be->w_off); free(be->st_off); free(be->dt);
}

static int open_backend(const bench_t *bk, shard_t *h, backend_t *be, char *err, size_t errsize)
{
    const char *name = h->name;
    const int64_t T = bk->o->T, B = bk->o->B;
    if (bk->o->cpu) {
        if (as_eb_validate(&h->x.s, err, errsize)) {
            fprintf(stderr, "bench-kernel: %s: %s\n", name, err);
            return -1;
        }
        be->ws = as_eb_cpu_ws_new(&h->x.s);
        be->out = malloc(sizeof(float) * ((size_t)B * h->x.s.d_off[T] + 1));
        if (!be->ws || !be->out ||
            ((bk->o->wtype != AS_EB_F16 || bk->o->optim != AS_EB_SGD) && typed_setup(bk->o, h, be))) {
            fprintf(stderr, "bench-kernel: %s: out of host memory\n", name);
            close_backend(be);
            return -1;
        }
    } else if (bk->o->wtype != AS_EB_F16 || bk->o->optim != AS_EB_SGD) {
        /* the typed kernels: the typed copy on the device, the optimizer from step 1 */
        if (typed_setup(bk->o, h, be)) {
            fprintf(stderr, "bench-kernel: %s: out of host memory\n", name);
            close_backend(be);
            return -1;
        }
        as_eb_opt op = be->opt;
        op.step = 1;
        if (as_eb_gpu_create(&be->g, &be->s, be->W, h->x.grad, (int)bk->o->device, err, errsize) ||
            as_eb_gpu_set_typed(be->g, &be->s, be->dt, &op, be->st_off, be->S, err, errsize)) {
            fprintf(stderr, "bench-kernel: %s: %s\n", name, err);
            close_backend(be);
            return -1;
        }
    } else if (as_eb_gpu_create(&be->g, &h->x.s, h->x.W, h->x.grad, (int)bk->o->device, err, errsize)) {
        fprintf(stderr, "bench-kernel: %s: %s\n", name, err);
        return -1;
    }
    return 0;
}


/* the '#' comment lines (device, clock or threads, copy GB/s, seed, protocol) and the header */
static void print_header(bench_t *bk, as_eb_gpu *g)
{
    const opts_t *o = bk->o;
    char dev[256];
    int mhz = 0;
    if (o->cpu) {
        as_cpu_name(dev, sizeof dev, bk->nt);
        printf("# device: %s\n# threads: %d\n# flush_mib: %.0f\n# copy_gbps: 0 (not measured "
               "on the CPU)\n", dev, bk->nt, bk->fwords * 8 / 1048576.0);
    } else {
        as_eb_gpu_info(g, dev, sizeof dev, &mhz, &bk->copy_gbps);
        printf("# device: %s\n# sm_clock_mhz: %d\n# copy_gbps: %.1f\n", dev, mhz, bk->copy_gbps);
    }
    printf("# weights: %s  optimizer: %s (lib/kernels/ebopt.h)\n", as_eb_dtype_name(o->wtype), as_eb_optim_name(o->optim));
    printf("# seed: %llu  tables: %lld  rows: %lld  batch: %lld  alpha: %g  lr: %g\n",
           (unsigned long long)bk->seed, (long long)o->T, (long long)o->E, (long long)o->B, o->alpha, o->lr);
    printf("# protocol: %lld warm-up, %lld timed, each phase after a cache flush; ms = mean "
           "without %lld highest and %lld lowest\n",
           (long long)o->warm, (long long)o->iters, (long long)o->drop, (long long)o->drop);
    printf("name\tdims\tpooling\tdist\tlookups\tunique\tfwd_ms\tfwd_med\tfwd_min\tfwd_max\tfwd_rsd\t"
           "bwd_ms\tbwd_med\tbwd_min\tbwd_max\tbwd_rsd\ttotal_ms\tfwd_gbps\tbwd_gbps\ttotal_gbps\t"
           "fwd_pct_copy\ttotal_pct_copy\n");
    fflush(stdout);
    bk->header_done = 1;
}

/* W/B/R: warm-up then timed iterations of flush, forward, flush, backward+SGD; the timed
 * ones' ms into tf, tb and tt (their sum); non-zero on a GPU error (message in err) */
static int time_shard(const bench_t *bk, shard_t *h, backend_t *be, double *tf, double *tb, double *tt,
                      char *err, size_t errsize)
{
    const int64_t warm = bk->o->warm, iters = bk->o->iters;
    const double lr = bk->o->lr;
    const int nt = bk->nt;
    as_eb_gpu *g = be->g;
    int rc = 0;
    for (int64_t it = 0; it < warm + iters && !rc; it++) {
        double fms = 0, bms = 0;
        if (bk->o->cpu) {
            cpu_flush(bk->fbuf, bk->fwords, nt);
            double t0 = now_ms();
            if (be->typed) as_eb_forward_typed_cpu(be->out, be->W, &be->s, be->dt, nt);
            else as_eb_forward_cpu(be->out, h->x.W, &h->x.s, nt);
            fms = now_ms() - t0;
            cpu_flush(bk->fbuf, bk->fwords, nt);
            if (be->typed) {
                be->opt.step++;
                if (be->opt.kind == AS_EB_ADAM) (void)as_eb_opt_prepare(&be->opt, err, errsize);
            }
            t0 = now_ms();
            if (be->typed) rc = as_eb_backward_typed_cpu(be->W, be->S, h->x.grad, &be->s, be->dt, be->st_off, &be->opt, be->ws, nt);
            else as_eb_backward_sgd_cpu(h->x.W, h->x.grad, &h->x.s, (float)lr, be->ws, nt);
            bms = now_ms() - t0;
            if (rc) snprintf(err, errsize, "out of host memory (the backward's sort buffers)");
        } else {
            float f1 = 0, b1 = 0;
            rc = as_eb_gpu_flush_cache(g, err, errsize) || as_eb_gpu_forward(g, &f1, err, errsize) ||
                 as_eb_gpu_flush_cache(g, err, errsize) ||
                 as_eb_gpu_backward_sgd(g, (float)lr, &b1, err, errsize);
            fms = f1;
            bms = b1;
        }
        if (!rc && it >= warm) {
            tf[it - warm] = fms;
            tb[it - warm] = bms;
            tt[it - warm] = fms + bms;
        }
    }
    return rc;
}

/* one table row: the statistics of each phase and FBGEMM's GB/s; -1 on a write error */
static int report_shard(const bench_t *bk, const shard_t *h, const int32_t *tdims, int si,
                        const double *tf, const double *tb, const double *tt)
{
    const opts_t *o = bk->o;
    const int64_t T = o->T, B = o->B, iters = o->iters, drop = o->drop;
    const double copy_gbps = bk->copy_gbps;
    stats_t sf = stats(tf, (int)iters, (int)drop), sb = stats(tb, (int)iters, (int)drop);
    stats_t st = stats(tt, (int)iters, (int)drop);
    double fbytes = 0;
    int64_t n = h->x.s.offsets[T * B];
    for (int t = 0; t < T; t++) {
        double Lt = (double)(h->x.s.offsets[(t + 1) * B] - h->x.s.offsets[t * B]) / (double)B;
        fbytes += 4.0 * B * tdims[t] + 2.0 * B * tdims[t] * Lt;
    }
    double fg = sf.trim > 0 ? fbytes / (sf.trim * 1e-3) / 1e9 : 0;
    double bg = sb.trim > 0 ? 2 * fbytes / (sb.trim * 1e-3) / 1e9 : 0;
    double tg = st.trim > 0 ? 3 * fbytes / (st.trim * 1e-3) / 1e9 : 0;
    char dl[64];
    if (si < o->ndims) snprintf(dl, sizeof dl, "%d", o->dims[si]);
    else snprintf(dl, sizeof dl, "mixed");
    printf("%s\t%s\t%d\t%s\t%lld\t%lld\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t"
           "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n",
           h->name, dl, h->L, h->dist, (long long)n, (long long)h->unique, sf.trim, sf.med, sf.min, sf.max,
           sf.rsd, sb.trim, sb.med, sb.min, sb.max, sb.rsd, st.trim, fg, bg, tg,
           copy_gbps > 0 ? 100 * fg / copy_gbps : 0, copy_gbps > 0 ? 100 * tg / copy_gbps : 0);
    if (fflush(stdout)) { fprintf(stderr, "bench-kernel: write error\n"); return -1; }
    return 0;
}

/* shard (pooling pi, distribution di, shape si): generate, dump, time, report; 0 or exit 3 */
static int run_shard(bench_t *bk, int pi, int di, int si)
{
    const opts_t *o = bk->o;
    const int64_t iters = o->iters;
    int L = o->pools[pi], pw = bk->dist_list[di];
    int32_t tdims[4096];
    char name[64];
    shard_shape(o, si, L, pw, tdims, name, sizeof name);
    if (o->only && !strstr(name, o->only)) return 0;
    shard_t h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "%s", name);
    uint64_t sseed = bk->seed ^ (0x1000193ULL * (uint64_t)(pi * 64 + di * 16 + si + 1));
    fprintf(stderr, "bench-kernel: %s: generating\n", name);
    if (make_shard(&h, (int)o->T, o->E, o->B, tdims, L, pw, o->alpha, sseed)) {
        fprintf(stderr, "bench-kernel: %s: out of host memory\n", name);
        free_shard(&h);
        return 3;
    }
    if (o->dump && dump_shard(o->dump, &h, o->alpha, sseed, (float)o->lr)) {
        fprintf(stderr, "bench-kernel: %s: cannot write: %s\n", o->dump, strerror(errno));
        free_shard(&h);
        return 3;
    }
    char err[512] = "";
    backend_t be;
    memset(&be, 0, sizeof be);
    if (open_backend(bk, &h, &be, err, sizeof err)) {
        free_shard(&h);
        return 3;
    }
    if (!bk->header_done) print_header(bk, be.g);
    double *tf = calloc((size_t)iters, sizeof(double)), *tb = calloc((size_t)iters, sizeof(double));
    double *tt = calloc((size_t)iters, sizeof(double));
    int rc = time_shard(bk, &h, &be, tf, tb, tt, err, sizeof err);
    close_backend(&be);
    if (rc) {
        fprintf(stderr, "bench-kernel: %s: %s\n", name, err);
        free(tf); free(tb); free(tt);
        free_shard(&h);
        return 3;
    }
    if (report_shard(bk, &h, tdims, si, tf, tb, tt)) return 3;
    free(tf); free(tb); free(tt);
    free_shard(&h);
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    if (2 * o.drop >= o.iters) fprintf(stderr, "bench-kernel: note: --drop %lld leaves nothing; using all\n", (long long)o.drop);
    bench_t bk = { .o = &o, .seed = (uint64_t)o.seedv };
    /* the CPU path: threads and the flush buffer */
    bk.nt = o.threads > 0 ? (int)o.threads : omp_get_max_threads();
    if (o.cpu && alloc_flush_buffer(&bk)) return 3;
    if (o.do_uniform) bk.dist_list[bk.ndist++] = 0;
    if (o.do_power) bk.dist_list[bk.ndist++] = 1;
    if (o.dump && start_dump_index(o.dump)) return 3;
    int nshape = o.ndims + (o.mixed ? 1 : 0);
    for (int pi = 0; pi < o.npools; pi++)
        for (int di = 0; di < bk.ndist; di++)
            for (int si = 0; si < nshape; si++)
                if ((rc = run_shard(&bk, pi, di, si))) return rc;
    free(bk.fbuf);
    if (fflush(stdout) || ferror(stdout)) { fprintf(stderr, "bench-kernel: write error\n"); return 3; }
    return 0;
}
