/* bench-plan.c - planning time of every algorithm (lib/plan/plan.h) on a synthetic task: T tables
 * with random dims (16/32/64), rows (1..2M), pooling (0..30) and bins onto K shards, one
 * thread. autoshard uses a policy of the paper's sizes with random weights (the work per
 * step does not depend on training) or --policy FILE. cost-greedy uses a cost model of the paper's sizes (128,32,64) with random
 * weights (its speed does not depend on training) or --model FILE. Prints, per algorithm,
 * the best and median wall time of --reps plans, in ms, tab-separated; then, per algorithm,
 * the time of as_plan_refine (lib/plan/refine.h) run to a local optimum on its plan, the steps
 * and the predicted max before and after.
 * Dimension letters: T tables, K shards.
 * usage: bench-plan [--tables T] [--shards K] [--reps N] [--seed S] [--model FILE] [--policy FILE] */
#include "planmodel.h"
#include "common.h"
#include "costmodel.h"
#include "plan.h"
#include "plantorchrec.h"
#include "featindex.h"
#include "policy.h"
#include "refine.h"
#include "rl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t T, K, reps;
    uint64_t seed;
    const char *model, *policy, *only;
} opts_t;

/* the command line into *o; 0, or 2 after the usage line */
static int parse_options(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){ .T = 800, .K = 80, .reps = 7, .seed = 0, .model = NULL, .policy = NULL, .only = NULL };
    for (int i = 1; i < argc; i++) {
        int64_t v;
        if (i + 1 < argc && !strcmp(argv[i], "--tables") && !as_parse_i64(argv[i + 1], 1, 10000000, &v)) o->T = v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--shards") && !as_parse_i64(argv[i + 1], 1, 1000000, &v)) o->K = v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--reps") && !as_parse_i64(argv[i + 1], 1, 1000, &v)) o->reps = v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--seed") && !as_parse_i64(argv[i + 1], 0, INT64_MAX, &v)) o->seed = (uint64_t)v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--model")) o->model = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--policy")) o->policy = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--alg")) o->only = argv[++i];
        else {
            fprintf(stderr, "usage: bench-plan [--tables T] [--shards K] [--reps N] [--seed S] [--model FILE] [--policy FILE] [--alg NAME]\n");
            return 2;
        }
    }
    return 0;
}

/* the synthetic task: T tables of random dims, rows, pooling and bins; p[i] = &f[i] */
static void make_task(const opts_t *o, as_features *f, const as_features **p)
{
    as_rng r;
    as_rng_seed(&r, o->seed, 0);
    for (int64_t i = 0; i < o->T; i++) {
        f[i].id = i;
        f[i].dim = 16 << as_rng_below(&r, 3);
        f[i].rows = 1 + (int64_t)as_rng_below(&r, 2000000);
        f[i].pooling = 30 * as_rng_uniform(&r);
        f[i].bytes_fp16 = f[i].rows * f[i].dim * 2;
        f[i].size_gib = f[i].bytes_fp16 / 1073741824.0;
        double left = 1;
        for (int k = 0; k < AS_NBINS; k++) { f[i].bins[k] = left * 0.5 * as_rng_uniform(&r); left -= f[i].bins[k]; }
        p[i] = &f[i];
    }
}

/* the cost model (pm) and the policy with its own model (ppm), read or random */
typedef struct {
    as_costmodel *cm, *pcm;
    as_plan_model pm, ppm;
    as_policy *pol;
    as_policy_planner pplan, pquick;
    as_plan_policy pp;
} models_t;

/* --model or a random cost model, --policy or a random policy; 0, or 1 after a message */
static int load_models(models_t *m, const opts_t *o, char *err, size_t errsize)
{
    m->cm = NULL;
    if (o->model) {
        if (as_costmodel_load(&m->cm, o->model, err, errsize)) { fprintf(stderr, "bench-plan: %s: %s\n", o->model, err); return 1; }
    } else {
        m->cm = as_costmodel_new(128, 32, 64, o->seed);
    }
    as_plan_model_of(&m->pm, m->cm);
    m->pol = NULL;
    m->pcm = NULL;
    m->ppm = m->pm;
    if (o->policy) {
        if (as_policy_load(o->policy, &m->pol, &m->pcm, err, errsize)) { fprintf(stderr, "bench-plan: %s\n", err); return 1; }
        as_plan_model_of(&m->ppm, m->pcm);
    } else {
        if (!(m->pol = as_policy_new(m->cm, o->seed, err, errsize))) { fprintf(stderr, "bench-plan: %s\n", err); return 1; }
        as_plan_model_of(&m->ppm, m->cm);
    }
    return 0;
}

/* torchrec's own search (lib/plan/plantorchrec.h), reps times; its row; 0, or 1 after a message */
static int time_torchrec(const opts_t *o, const as_features **p, double *t, char *err, size_t errsize)
{
    const int64_t reps = o->reps;
    const as_alg a = AS_ALG_TORCHREC;
    /* no row blocks' features here: table_wise and column_wise only */
    as_featidx none;
    memset(&none, 0, sizeof none);
    if (as_featidx_build(&none, err, errsize)) { fprintf(stderr, "bench-plan: %s\n", err); return 1; }
    for (int64_t q = 0; q < reps; q++) {
        as_plan_cfg c = { a, o->K, 0, o->seed, 0, NULL, NULL, 0, NULL, 0, NULL };
        as_features *items;
        int64_t ni, *asg;
        as_tr_info info;
        if (as_tr_plan(&c, &none, p, o->T, &items, &ni, &asg, &info, err, errsize)) {
            fprintf(stderr, "bench-plan: %s\n", err);
            return 1;
        }
        t[q] = info.ms;
        free(items);
        free(asg);
    }
    as_featidx_free(&none);
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    printf("%s\t%.3f\t%.3f\t-\n", as_alg_name(a), t[0], t[reps / 2]);
    return 0;
}

/* algorithm a's row: best and median plan time, then (but for cost and autoshard, which
 * always use it) the median with the cost model's predictions; 0, or 1 after a message */
static int time_alg(const opts_t *o, const models_t *m, int a, const as_features **p, double *t, char *err,
                    size_t errsize)
{
    const int64_t reps = o->reps;
    double with_pred = 0;
    for (int withm = 0; withm < 2; withm++) {
        if (withm && (a == AS_ALG_COST || a == AS_ALG_AUTOSHARD)) break;
        for (int64_t q = 0; q < reps; q++) {
            as_plan_cfg c = { (as_alg)a, o->K, 0, o->seed, 0, (a == AS_ALG_COST || withm) ? &m->pm : NULL, &m->pp, 0, NULL, 0, NULL };
            as_plan pl;
            if (as_plan_make(&pl, &c, p, o->T, err, errsize)) { fprintf(stderr, "bench-plan: %s\n", err); return 1; }
            t[q] = pl.plan_ms;
            as_plan_free(&pl);
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_d);
        if (withm) with_pred = t[reps / 2];
        else if (a != AS_ALG_COST && a != AS_ALG_AUTOSHARD) { printf("%s\t%.3f\t%.3f", as_alg_name((as_alg)a), t[0], t[reps / 2]); }
        else printf("%s\t%.3f\t%.3f\t-\n", as_alg_name((as_alg)a), t[0], t[reps / 2]);
    }
    if (a != AS_ALG_COST && a != AS_ALG_AUTOSHARD) printf("\t%.3f\n", with_pred);
    return 0;
}

/* refine's row after algorithm a: the search's best and median time, its moves and swaps,
 * the predicted max before and after (of the last repetition); 0, or 1 after a message */
static int time_refine(const opts_t *o, const models_t *m, int a, const as_features **p, double *t, char *err,
                       size_t errsize)
{
    const int64_t reps = o->reps, K = o->K;
    int64_t moves = 0, swaps = 0;
    double before = 0, after = 0;
    for (int64_t q = 0; q < reps; q++) {
        as_plan_cfg c = { (as_alg)a, K, 0, o->seed, 0, &m->pm, &m->pp, 0, NULL, 0, NULL };
        as_plan pl;
        if (as_plan_make(&pl, &c, p, o->T, err, errsize) || as_plan_refine(&pl, &c, p, o->T, 0, 0, err, errsize)) {
            fprintf(stderr, "bench-plan: %s\n", err);
            return 1;
        }
        t[q] = pl.refine.ms;
        moves = pl.refine.moves;
        swaps = pl.refine.swaps;
        before = pl.refine.max_before;
        after = 0;
        for (int64_t k = 0; k < K; k++) if (pl.pred[k] > after) after = pl.pred[k];
        as_plan_free(&pl);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    printf("%s\t%.3f\t%.3f\t%lld\t%lld\t%.4f\t%.4f\n", as_alg_name((as_alg)a), t[0], t[reps / 2], (long long)moves,
           (long long)swaps, before, after);
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse_options(argc, argv, &o)) return 2;
    const int64_t T = o.T;
    as_features *f = as_calloc((size_t)T, sizeof *f);
    const as_features **p = as_malloc((size_t)T * sizeof *p);
    make_task(&o, f, p);
    char err[1024];
    models_t m;
    if (load_models(&m, &o, err, sizeof err)) return 1;
    as_nn_set_threads(1);
    m.pplan = (as_policy_planner){ m.pol, &m.ppm, 0, 0 };   /* samples: auto, as as-plan */
    m.pquick = (as_policy_planner){ m.pol, &m.ppm, 1, 0 };   /* the split search's candidates, as as-plan */
    m.pp = (as_plan_policy){ &m.pplan, as_policy_place, 0, &m.pquick, as_policy_samples };
    printf("# %lld tables onto %lld shards, one thread, %lld repetitions; cost model %s; policy %s\n", (long long)T,
           (long long)o.K, (long long)o.reps, o.model ? o.model : "128,32,64 (random weights)",
           o.policy ? o.policy : "the paper's sizes (random weights)");
    printf("alg\tbest_ms\tmedian_ms\twith_pred_ms\n");
    double *t = as_malloc((size_t)o.reps * sizeof *t);
    for (int a = 0; a < AS_ALG_COUNT; a++) {
        if (o.only && strcmp(o.only, as_alg_name((as_alg)a))) continue;
        int rc = a == AS_ALG_TORCHREC ? time_torchrec(&o, p, t, err, sizeof err) : time_alg(&o, &m, a, p, t, err, sizeof err);
        if (rc) return rc;
    }
    /* refine (lib/plan/refine.h) after each algorithm, to a local optimum (no budget): its time
     * (the search alone, not the plan) and what it gained */
    printf("# refine to a local optimum after each algorithm (no budget): the search's time alone\n");
    printf("alg\trefine_best_ms\trefine_median_ms\tmoves\tswaps\tpred_max_before\tpred_max_after\n");
    for (int a = 0; a < AS_ALG_COUNT; a++) {
        if (o.only && strcmp(o.only, as_alg_name((as_alg)a))) continue;
        if (a == AS_ALG_TORCHREC) continue;   /* not made by as_plan_make */
        if (time_refine(&o, &m, a, p, t, err, sizeof err)) return 1;
    }
    free(t);
    free(f);
    free(p);
    as_costmodel_free(m.cm);
    as_policy_free(m.pol);
    as_costmodel_free(m.pcm);
    return 0;
}
