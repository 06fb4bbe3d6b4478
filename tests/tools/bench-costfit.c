/* bench-costfit - speed of the cost model (lib/model/costmodel.h): training samples (shards) per
 * second on the CPU and, when one works, the GPU; prediction latency for one shard and for
 * a batch of 1000 shards (CPU, the library call the planner uses). Synthetic tables and
 * shards of T tables (default 10, the paper's). Dimension letters: T tables per shard, K
 * shards. Prints a TSV: what, device, value, unit.
 *   bench-costfit [--shards K] [--tables-per-shard T] [--steps N] [--batch B] [--threads N] */
#include "common.h"
#include "costmodel.h"
#include "device.h"
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct { int64_t K, T, steps, batch, threads; } opts_t;

/* the command line into *o; -1 to run, 0 after --help; a usage error exits 2 */
static int parse_options(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){ .K = 5000, .T = 10, .steps = 200, .batch = 512, .threads = 1 };
    for (int i = 1; i < argc; i++) {
        int64_t *dst = NULL;
        if (!strcmp(argv[i], "--shards")) dst = &o->K;
        else if (!strcmp(argv[i], "--tables-per-shard")) dst = &o->T;
        else if (!strcmp(argv[i], "--steps")) dst = &o->steps;
        else if (!strcmp(argv[i], "--batch")) dst = &o->batch;
        else if (!strcmp(argv[i], "--threads")) dst = &o->threads;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: bench-costfit [--shards K] [--tables-per-shard T] [--steps N] [--batch B] [--threads N]\n");
            return 0;
        }
        if (!dst || i + 1 >= argc || as_parse_i64(argv[++i], 1, 100000000, dst)) as_die(AS_EXIT_USAGE, "usage: bench-costfit --help");
    }
    return -1;
}

/* NT random tables, drawn from *st */
static as_features *make_tables(int64_t NT, uint64_t *st)
{
    as_features *tab = as_calloc((size_t)NT, sizeof *tab);
    for (int64_t i = 0; i < NT; i++) {
        tab[i].id = i;
        tab[i].dim = 16 * (1 + (int64_t)(as_splitmix64(st) % 16));
        tab[i].rows = 1000 + (int64_t)(as_splitmix64(st) % 4000000);
        tab[i].pooling = 1 + (double)(as_splitmix64(st) % 100);
        tab[i].size_gib = (double)tab[i].rows * tab[i].dim * 2 / 1073741824.0;
        tab[i].bins[as_splitmix64(st) % 17] = 1;
    }
    return tab;
}

/* K shards of T random tables each (shard k is tables idx[off[k] .. off[k+1])), with a cost
 * that grows with dim x pooling */
typedef struct { int64_t *off, *idx; double *cost; } shards_t;

static void make_shards(shards_t *s, int64_t K, int64_t T, const as_features *tab, int64_t NT, uint64_t *st)
{
    int64_t *off = as_malloc((size_t)(K + 1) * sizeof *off), *idx = as_malloc((size_t)(K * T) * sizeof *idx);
    double *cost = as_malloc((size_t)K * sizeof *cost);
    off[0] = 0;
    for (int64_t k = 0; k < K; k++) {
        cost[k] = 0.1;
        for (int64_t j = 0; j < T; j++) {
            int64_t t = (int64_t)(as_splitmix64(st) % (uint64_t)NT);
            idx[k * T + j] = t;
            cost[k] += 1e-4 * tab[t].dim * tab[t].pooling;
        }
        off[k + 1] = off[k] + T;
    }
    s->off = off;
    s->idx = idx;
    s->cost = cost;
}

/* training speed on the CPU and, when one works, the GPU (a warm-up of 3 steps, then
 * --steps timed); returns the first device's model */
static as_costmodel *time_training(const as_costset *d, const opts_t *op)
{
    const int64_t K = op->K, steps = op->steps, batch = op->batch;
    const as_nn_ops *devs[2] = { as_nn_cpu(), NULL };
    char err[256];
    if (as_cuda_device_count() > 0) devs[1] = as_nn_cuda(0, err, sizeof err);
    as_costmodel *m = NULL;
    for (int di = 0; di < 2; di++) {
        if (!devs[di]) { if (di == 1) fprintf(stderr, "bench-costfit: no GPU: training on CUDA not measured\n"); continue; }
        as_costmodel *x = as_costmodel_new(128, 32, 64, 1);
        as_costmodel_fit_stats(x, d, NULL, K, 0);
        as_costfit_opts o = { .steps = 3, .lr = 1e-3, .batch = (int)batch, .seed = 1, .ops = devs[di] };
        if (as_costmodel_train(x, d, NULL, K, &o, err, sizeof err)) as_die(1, "%s", err);   /* warm-up */
        o.steps = steps;
        double t0 = as_now();
        if (as_costmodel_train(x, d, NULL, K, &o, err, sizeof err)) as_die(1, "%s", err);
        double dt = as_now() - t0;
        printf("train_samples_per_s\t%s\t%.0f\tshards/s\n", devs[di]->name, (double)steps * batch / dt);
        printf("train_step_ms\t%s\t%.3f\tms\n", devs[di]->name, 1e3 * dt / steps);
        if (!m) m = x;
        else as_costmodel_free(x);
    }
    return m;
}

/* prediction latency of one shard of T tables: the median of 2000 calls */
static void time_predict_one(const as_costmodel *m, const as_features **f, int64_t T, double *sink)
{
    enum { R = 2000 };
    double lat[R];
    for (int r = 0; r < R; r++) {
        double t0 = as_now();
        *sink += as_costmodel_predict(m, f, (int)T);
        lat[r] = as_now() - t0;
    }
    qsort(lat, R, sizeof *lat, cmp_d);
    printf("predict_1_shard\tcpu\t%.2f\tus\n", 1e6 * lat[R / 2]);
}

/* prediction latency of a batch of 1000 shards (or K): the median of 20 calls */
static void time_predict_batch(const as_costmodel *m, const as_costset *d, int64_t K, double *sink)
{
    enum { RB = 20 };
    int64_t nb = K < 1000 ? K : 1000;
    double *out = as_malloc((size_t)nb * sizeof *out), bl[RB];
    for (int r = 0; r < RB; r++) {
        double t0 = as_now();
        as_costmodel_predict_batch(m, d, NULL, nb, out);
        bl[r] = as_now() - t0;
        *sink += out[0];
    }
    qsort(bl, RB, sizeof *bl, cmp_d);
    printf("predict_%lld_shards_batch\tcpu\t%.3f\tms\n", (long long)nb, 1e3 * bl[RB / 2]);
    printf("predict_per_shard_in_batch\tcpu\t%.2f\tus\n", 1e6 * bl[RB / 2] / nb);
    free(out);
}

int main(int argc, char **argv)
{
    as_set_prog("bench-costfit");
    opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    const int64_t K = o.K, T = o.T, NT = 200;
    as_nn_set_threads((int)o.threads);
    uint64_t st = 42;
    as_features *tab = make_tables(NT, &st);
    shards_t s;
    make_shards(&s, K, T, tab, NT, &st);
    as_costset d = { tab, NT, s.off, s.idx, s.cost, K };
    printf("what\tdevice\tvalue\tunit\n");
    as_costmodel *m = time_training(&d, &o);
    /* prediction latency: one shard of T tables (median of 2000 calls), a batch of 1000 */
    const as_features **f = as_malloc((size_t)T * sizeof *f);
    for (int64_t j = 0; j < T; j++) f[j] = &tab[s.idx[j]];
    double sink = 0;
    time_predict_one(m, f, T, &sink);
    time_predict_batch(m, &d, K, &sink);
    if (!isfinite(sink)) fprintf(stderr, "bench-costfit: non-finite predictions\n");
    as_costmodel_free(m);
    free(tab); free(s.off); free(s.idx); free(s.cost); free(f);
    return 0;
}
