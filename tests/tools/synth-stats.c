/* synth-stats.c - calibration report for the synthetic MetaSyn-like pool (lib/data/synth.c).
 * Dimension letters: B batch, L pooling, E rows (hash size), T tables.
 *
 * Generates T tables one at a time and prints, next to MetaSyn's published figures for
 * fbgemm_t856_bs65536: hash sizes (rows) max/mean/min, pooling factors max/mean/min and
 * the number of empty tables, total lookups, distinct (table, row) pairs, and the two
 * whole-pool 17-bin reuse histograms (fraction of distinct pairs, fraction of lookups, by
 * per-batch access count (0,1], (1,2], (2,4], ..., (16384,32768], >32768), plus the
 * generation speed (ns per lookup, generation only, wall and CPU time) and peak RSS. Output on stdout.
 * Exit codes: 0 ok, 1 generation failed, 2 usage, 3 out of memory.
 */
#include "common.h"
#include "synth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBIN 17

static const double pub_distinct[NBIN] = {0.473, 0.152, 0.139, 0.112, 0.072, 0.032, 0.011, 0.005,
                                          0.002, 0.001, 0, 0, 0, 0, 0, 0, 0};
static const double pub_lookups[NBIN] = {0.069, 0.044, 0.068, 0.101, 0.121, 0.104, 0.073, 0.058, 0.052,
                                         0.050, 0.049, 0.048, 0.048, 0.043, 0.031, 0.023, 0.019};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: synth-stats [--tables T] [--batch B] [--seed S] [--row-scale X] [--pool-scale X]\n"
            "Generate the synthetic MetaSyn-like pool and compare its statistics with MetaSyn's\n"
            "published ones (856 tables, batch 65536 by default).\n"
            "exit codes: 0 ok, 1 generation failed, 2 usage, 3 out of memory\n");
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* bin of an access count c >= 1: (0,1] -> 0, (1,2] -> 1, (2^(j-1), 2^j] -> j, > 32768 -> 16 */
static int count_bin(uint32_t c)
{
    if (c <= 1) return 0;
    if (c > 32768) return NBIN - 1;
    return 32 - __builtin_clz(c - 1);
}

/* the command line into cfg; -1 to run, else the exit status (--help: 0, usage errors: 2) */
static int parse_options(int argc, char **argv, as_synth_cfg *cfg)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return AS_EXIT_OK; }
        if (i + 1 >= argc) { as_err("%s: missing value or unknown option", a); usage(stderr); return AS_EXIT_USAGE; }
        const char *v = argv[++i];
        int64_t n;
        int bad = 0;
        if (!strcmp(a, "--tables")) { bad = as_parse_i64(v, 1, 1000000, &cfg->tables); }
        else if (!strcmp(a, "--batch")) { bad = as_parse_i64(v, 1, (int64_t)1 << 30, &cfg->batch); }
        else if (!strcmp(a, "--seed")) { bad = as_parse_i64(v, 0, INT64_MAX, &n); cfg->seed = (uint64_t)n; }
        else if (!strcmp(a, "--row-scale")) { bad = as_parse_f64(v, 1e-9, 1e3, &cfg->row_scale); }
        else if (!strcmp(a, "--pool-scale")) { bad = as_parse_f64(v, 0, 1e3, &cfg->pool_scale); }
        else { as_err("unknown option %s", a); usage(stderr); return AS_EXIT_USAGE; }
        if (bad) { as_err("%s: bad value '%s'", a, v); usage(stderr); return AS_EXIT_USAGE; }
    }
    return -1;
}

/* the pool's statistics, summed table by table */
typedef struct {
    int64_t dist_bin[NBIN], look_bin[NBIN];
    int64_t rows_max, rows_min, empty, total, distinct;
    double rows_sum, pool_max, pool_min, pool_sum, gen_s, gen_cpu;
    uint32_t *cnt;          /* access count per row, zero between tables */
    int64_t cnt_n;
} pool_stats;

/* invariants, cheap enough to check on every run; 0 or AS_EXIT_DATA after a message */
static int check_table(const as_synth_table *tb, int64_t t)
{
    int32_t mx = -1;
    for (int64_t i = 0; i < tb->lookups; i++) {
        if (tb->indices[i] < 0 || tb->indices[i] >= tb->rows) { as_err("table %lld: index out of range", (long long)t); return AS_EXIT_DATA; }
        if (tb->indices[i] > mx) mx = tb->indices[i];
    }
    if (tb->offsets[0] != 0 || tb->offsets[tb->batch] != tb->lookups ||
        (tb->lookups > 0 && tb->rows != (int64_t)mx + 1) || (tb->lookups == 0 && tb->rows != 1)) {
        as_err("table %lld: broken offsets/rows", (long long)t);
        return AS_EXIT_DATA;
    }
    return 0;
}

/* hash size, pooling factor, lookups */
static void add_sizes(pool_stats *ps, const as_synth_table *tb)
{
    double pool = (double)tb->lookups / (double)tb->batch;
    ps->rows_sum += (double)tb->rows;
    if (tb->rows > ps->rows_max) ps->rows_max = tb->rows;
    if (tb->rows < ps->rows_min) ps->rows_min = tb->rows;
    ps->pool_sum += pool;
    if (pool > ps->pool_max) ps->pool_max = pool;
    if (pool < ps->pool_min) ps->pool_min = pool;
    if (tb->lookups == 0) ps->empty++;
    ps->total += tb->lookups;
}

/* the reuse histograms; 0 or AS_EXIT_ENV after a message */
static int add_reuse(pool_stats *ps, const as_synth_table *tb)
{
    if (tb->rows > ps->cnt_n) {
        uint32_t *nc = realloc(ps->cnt, (size_t)tb->rows * sizeof *ps->cnt);
        if (!nc) { as_err("out of memory"); return AS_EXIT_ENV; }
        memset(nc + ps->cnt_n, 0, (size_t)(tb->rows - ps->cnt_n) * sizeof *nc);
        ps->cnt = nc;
        ps->cnt_n = tb->rows;
    }
    uint32_t *cnt = ps->cnt;
    /* count, then visit each distinct row once (clearing it), so the work is O(lookups) */
    for (int64_t i = 0; i < tb->lookups; i++) cnt[tb->indices[i]]++;
    for (int64_t i = 0; i < tb->lookups; i++) {
        uint32_t c = cnt[tb->indices[i]];
        if (!c) continue;
        int b = count_bin(c);
        ps->dist_bin[b]++;
        ps->look_bin[b] += c;
        ps->distinct++;
        cnt[tb->indices[i]] = 0;
    }
    return 0;
}

/* generate the tables one at a time (timing the generation alone) and sum their statistics;
 * 0, or the exit status after a message */
static int gen_pool(const as_synth_cfg *cfg, pool_stats *ps)
{
    for (int64_t t = 0; t < cfg->tables; t++) {
        as_synth_table tb;
        double g0 = as_now(), c0 = cpu_now();
        int rc = as_synth_table_gen(cfg, t, &tb);
        ps->gen_s += as_now() - g0;
        ps->gen_cpu += cpu_now() - c0;
        if (rc) {
            as_err("table %lld: %s", (long long)t, strerror(-rc));
            return rc == -ENOMEM ? AS_EXIT_ENV : AS_EXIT_DATA;
        }
        if ((rc = check_table(&tb, t))) return rc;
        add_sizes(ps, &tb);
        if ((rc = add_reuse(ps, &tb))) return rc;
        as_synth_free(&tb);
    }
    return 0;
}

/* sizes, pooling and lookups next to MetaSyn's figures */
static void print_sizes(const as_synth_cfg *cfg, const pool_stats *ps)
{
    printf("synth-stats: tables %lld, batch %lld, seed %llu, row-scale %g, pool-scale %g\n",
           (long long)cfg->tables, (long long)cfg->batch, (unsigned long long)cfg->seed, cfg->row_scale, cfg->pool_scale);
    printf("%-22s %14s %14s\n", "", "synthetic", "MetaSyn");
    printf("%-22s %14lld %14s\n", "hash size max", (long long)ps->rows_max, "12543670");
    printf("%-22s %14.0f %14s\n", "hash size mean", ps->rows_sum / (double)cfg->tables, "4107458");
    printf("%-22s %14lld %14s\n", "hash size min", (long long)ps->rows_min, "1");
    printf("%-22s %14.2f %14s\n", "pooling max", ps->pool_max, "193");
    printf("%-22s %14.2f %14s\n", "pooling mean", ps->pool_sum / (double)cfg->tables, "15");
    printf("%-22s %14.2f %14s\n", "pooling min", ps->pool_min, "0");
    printf("%-22s %14lld %14s\n", "empty tables", (long long)ps->empty, "-");
    printf("%-22s %14lld %14s\n", "lookups", (long long)ps->total, "~887M");
    printf("%-22s %14lld %14s\n", "distinct pairs", (long long)ps->distinct, "~128M");
}

/* the two reuse histograms next to MetaSyn's, with the sum and max of |diff| */
static void print_histograms(const pool_stats *ps)
{
    const int64_t distinct = ps->distinct, total = ps->total;
    printf("\nreuse histogram by access count per batch (fractions over the whole pool)\n");
    printf("%-14s %9s %9s %7s   %9s %9s %7s\n", "count", "distinct", "MetaSyn", "diff", "lookups", "MetaSyn", "diff");
    double ed = 0, el = 0, md = 0, ml = 0;
    for (int b = 0; b < NBIN; b++) {
        char lab[32];
        if (b == 0) snprintf(lab, sizeof lab, "(0,1]");
        else if (b == NBIN - 1) snprintf(lab, sizeof lab, ">32768");
        else snprintf(lab, sizeof lab, "(%d,%d]", 1 << (b - 1), 1 << b);
        double fd = distinct ? (double)ps->dist_bin[b] / (double)distinct : 0;
        double fl = total ? (double)ps->look_bin[b] / (double)total : 0;
        double dd = fd - pub_distinct[b], dl = fl - pub_lookups[b];
        ed += dd < 0 ? -dd : dd;
        el += dl < 0 ? -dl : dl;
        if ((dd < 0 ? -dd : dd) > md) md = dd < 0 ? -dd : dd;
        if ((dl < 0 ? -dl : dl) > ml) ml = dl < 0 ? -dl : dl;
        printf("%-14s %9.4f %9.3f %+7.4f   %9.4f %9.3f %+7.4f\n", lab, fd, pub_distinct[b], dd, fl, pub_lookups[b], dl);
    }
    printf("%-14s %9s %9s %7.4f   %9s %9s %7.4f\n", "sum |diff|", "", "", ed, "", "", el);
    printf("%-14s %9s %9s %7.4f   %9s %9s %7.4f\n", "max |diff|", "", "", md, "", "", ml);
}

int main(int argc, char **argv)
{
    as_set_prog("synth-stats");
    as_synth_cfg cfg;
    as_synth_defaults(&cfg);
    int rc = parse_options(argc, argv, &cfg);
    if (rc >= 0) return rc;

    pool_stats ps = { .rows_max = 0, .rows_min = INT64_MAX, .pool_max = 0, .pool_min = 1e300 };
    double t0 = as_now();
    if ((rc = gen_pool(&cfg, &ps))) return rc;
    free(ps.cnt);
    double wall = as_now() - t0;

    print_sizes(&cfg, &ps);
    print_histograms(&ps);
    const double gen_s = ps.gen_s, gen_cpu = ps.gen_cpu;
    const int64_t total = ps.total;
    printf("\ngeneration %.2f s wall (%.2f ns/lookup), %.2f s CPU (%.2f ns/lookup); total %.2f s wall;"
           " peak RSS %.1f MiB\n", gen_s, total ? gen_s * 1e9 / (double)total : 0.0, gen_cpu,
           total ? gen_cpu * 1e9 / (double)total : 0.0, wall, (double)as_peak_rss() / 1048576.0);
    if (fflush(stdout) || ferror(stdout)) { as_err("write error"); return AS_EXIT_ENV; }
    return AS_EXIT_OK;
}
