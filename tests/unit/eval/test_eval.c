/* test_eval.c - plan evaluation figures checked by hand on a small example: balance,
 * speedup over random, mean ± std per algorithm (over plans and over runs), exclusions;
 * Student t quantiles, t-intervals and geometric means; noise fields, the paired ranking
 * and its verdict; negative costs; the cost model's held-out quality; `train` records and
 * the rows of the training-curve table; as-eval's input reader (runs by file and seed, the
 * cost-kind checks, train-record order) and the estimate with a cost model's features. */
#include "unit.h"

#include "common.h"
#include "fixtures.h"
#include "eval.h"
#include "evalcomm.h"
#include "evalinput.h"
#include "evalplot.h"
#include "modelgate.h"
#include "reclimits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_planrec_full P(int64_t run, int64_t task, const char *alg, int K, const double *cost)
{
    as_planrec_full p;
    memset(&p, 0, sizeof p);
    p.run = run;
    p.task = task;
    snprintf(p.alg, sizeof p.alg, "%s", alg);
    p.K = K;
    p.T = K;
    p.tables = as_malloc((size_t)K * sizeof *p.tables);
    p.assign = as_malloc((size_t)K * sizeof *p.assign);
    p.cost = as_malloc((size_t)K * sizeof *p.cost);
    p.mem = as_malloc((size_t)K * sizeof *p.mem);
    for (int k = 0; k < K; k++) {
        p.tables[k] = k;
        p.assign[k] = k;
        p.cost[k] = cost[k];
        p.mem[k] = (uint64_t)(1000 * (k + 1));
    }
    p.feasible = 1;
    p.cost_kind = 1;
    p.noise_threshold = NAN;
    p.floor = p.over_floor = p.floor_margin = NAN;   /* no floor (tests of it set one) */
    p.floor_unknown = K;
    p.at_floor = -1;
    return p;
}

/* plan p's items made T entries (tables and assign unset, every piece whole), for plans of
   pieces or of other item counts than P's one table per shard */
static void items(as_planrec_full *p, int T)
{
    free(p->tables);
    free(p->assign);
    free(p->pieces);
    p->T = T;
    p->tables = as_malloc((size_t)T * sizeof *p->tables);
    p->assign = as_malloc((size_t)T * sizeof *p->assign);
    p->pieces = as_malloc((size_t)T * sizeof *p->pieces);
    for (int i = 0; i < T; i++) p->pieces[i] = AS_PIECE_WHOLE;
}

/* P with cost_noisy flags (and a spread of 0.3 on noisy shards, 0.01 elsewhere) */
static as_planrec_full PN(int64_t run, int64_t task, const char *alg, int K, const double *cost, const int *noisy)
{
    as_planrec_full p = P(run, task, alg, K, cost);
    p.noisy = as_malloc((size_t)K);
    p.spread = as_malloc((size_t)K * sizeof *p.spread);
    for (int k = 0; k < K; k++) {
        p.noisy[k] = (unsigned char)noisy[k];
        p.spread[k] = noisy[k] ? 0.3 : 0.01;
    }
    p.noise_threshold = 0.05;
    return p;
}

static const as_eval_alg *find(const as_eval_alg *a, int64_t n, const char *alg)
{
    for (int64_t i = 0; i < n; i++) if (!strcmp(a[i].alg, alg)) return &a[i];
    return NULL;
}

/* run 0, task 0: random [4, 2] (max 4, min 2, mean 3, balance 0.5); lookup [3, 3] (balance
 *   1, speedup 4/3)
 * run 0, task 1: random [6, 3, 3] (balance 0.5); lookup [2, 1, 3] (balance 1/3, speedup 2)
 * lookup over plans: balance (1 + 1/3)/2 = 2/3 ± 1/3; speedup (4/3 + 2)/2 = 5/3 ± 1/3 */
TEST(eval_by_hand)
{
    as_planrec_full p[6];
    p[0] = P(0, 0, "random", 2, (double[]){ 4, 2 });
    p[1] = P(0, 0, "lookup-greedy", 2, (double[]){ 3, 3 });
    p[2] = P(0, 1, "lookup-greedy", 3, (double[]){ 2, 1, 3 });
    p[3] = P(0, 1, "random", 3, (double[]){ 6, 3, 3 });
    /* an infeasible plan and one with an unmeasured shard: listed, not in the statistics */
    p[4] = P(0, 1, "dim-greedy", 3, (double[]){ 1, 1, 1 });
    p[4].feasible = 0;
    p[5] = P(0, 0, "dim-greedy", 2, (double[]){ 1, NAN });
    as_eval_compute(p, 6);
    CHECK_NEAR(p[0].max, 4, 0);
    CHECK_NEAR(p[0].min, 2, 0);
    CHECK_NEAR(p[0].mean, 3, 0);
    CHECK_NEAR(p[0].balance, 0.5, 0);
    CHECK_NEAR(p[0].speedup, 1, 0);
    CHECK_NEAR(p[1].balance, 1, 0);
    CHECK_NEAR(p[1].speedup, 4.0 / 3, 1e-15);
    CHECK_NEAR(p[2].balance, 1.0 / 3, 1e-15);
    CHECK_NEAR(p[2].speedup, 2, 0);
    CHECK_NEAR(p[2].mean, 2, 0);
    CHECK_EQ_I64(p[2].mem_max, 3000);
    CHECK_EQ_I64(p[2].mem_min, 1000);
    CHECK(!p[4].ok && isnan(p[4].balance) && isnan(p[4].speedup));
    CHECK(!p[5].ok && isnan(p[5].max) && isnan(p[5].balance));

    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 6, 0, &a, &na);
    CHECK_EQ_I64(na, 3);
    CHECK_STR(a[0].alg, "random");          /* canonical order */
    CHECK_STR(a[1].alg, "dim-greedy");
    CHECK_STR(a[2].alg, "lookup-greedy");
    const as_eval_alg *l = find(a, na, "lookup-greedy"), *r = find(a, na, "random"), *d = find(a, na, "dim-greedy");
    CHECK_EQ_I64(l->plans, 2);
    CHECK_EQ_I64(l->nbal, 2);
    CHECK_NEAR(l->bal_mean, 2.0 / 3, 1e-12);
    CHECK_NEAR(l->bal_std, 1.0 / 3, 1e-12);
    CHECK_NEAR(l->spd_mean, 5.0 / 3, 1e-12);
    CHECK_NEAR(l->spd_std, 1.0 / 3, 1e-12);
    CHECK_NEAR(l->max_mean, 3, 1e-12);
    /* geometric mean of 4/3 and 2 = √(8/3); 95 % interval exp(mean log ± t(1) · s/√2) with
     * t(1) = tan(0.475π) = 12.7062, s = |ln(3/2)|/√2: [0.124239179, 21.4639754] */
    CHECK_NEAR(l->spd_gmean, sqrt(8.0 / 3), 1e-12);
    CHECK_NEAR(l->spd_lo, 0.124239179, 1e-8);
    CHECK_NEAR(l->spd_hi, 21.4639754, 1e-6);
    /* balance 2/3 ± 12.7062 · (√2/3)/√2: clipped to [0, 1] */
    CHECK_NEAR(l->bal_lo, 0, 0);
    CHECK_NEAR(l->bal_hi, 1, 0);
    CHECK_EQ_I64(l->shards, 0);     /* no noise fields: unknown */
    CHECK_NEAR(r->bal_mean, 0.5, 0);
    CHECK_NEAR(r->bal_std, 0, 0);
    CHECK_NEAR(r->spd_mean, 1, 0);
    CHECK_NEAR(r->max_mean, 5, 0);
    CHECK_EQ_I64(d->plans, 2);
    CHECK_EQ_I64(d->infeasible, 1);
    CHECK_EQ_I64(d->unmeasured, 1);
    CHECK_EQ_I64(d->nbal, 0);
    CHECK(isnan(d->bal_mean));
    free(a);

    /* the text, markdown and CSV tables print the figures */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_summary(p, 6, 0, &a, &na);
    as_eval_print_summary(f, AS_EVAL_MARKDOWN, a, na, "measured", 0);
    as_eval_print_summary(f, AS_EVAL_CSV, a, na, "measured", 0);
    as_eval_print_plans(f, AS_EVAL_TEXT, p, 6, "measured");
    fclose(f);
    CHECK(strstr(buf, "| lookup-greedy | 2 | 0 | 66.7 ± 33.3 | [0.0, 100.0] | 1.633 | [0.124, 21.464] | 3.0000 |") != NULL);
    CHECK(strstr(buf, "lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3,"
                      "0,1,1.63299316,0.124239179,21.4639754,,,,0,,0,0,0,0\n") != NULL);   /* no model_quality */
    CHECK(strstr(buf, "costs measured") != NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 6; i++) as_planrec_full_free(&p[i]);
}

/* runs: run 1 adds task 0 with random [2, 2] and lookup [1, 2] (balance 0.5, speedup 1).
 * Over plans: balance of lookup = mean(1, 1/3, 1/2) = 11/18; over runs: run means 2/3 and
 * 1/2 -> 7/12 ± 1/12. Speedup compares within a run only. */
TEST(eval_runs)
{
    as_planrec_full p[6];
    p[0] = P(0, 0, "random", 2, (double[]){ 4, 2 });
    p[1] = P(0, 0, "lookup-greedy", 2, (double[]){ 3, 3 });
    p[2] = P(0, 1, "lookup-greedy", 3, (double[]){ 2, 1, 3 });
    p[3] = P(0, 1, "random", 3, (double[]){ 6, 3, 3 });
    p[4] = P(1, 0, "random", 2, (double[]){ 2, 2 });
    p[5] = P(1, 0, "lookup-greedy", 2, (double[]){ 1, 2 });
    as_eval_compute(p, 6);
    CHECK_NEAR(p[5].speedup, 1, 0);
    CHECK_NEAR(p[5].balance, 0.5, 0);
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 6, 0, &a, &na);
    const as_eval_alg *l = find(a, na, "lookup-greedy");
    CHECK_NEAR(l->bal_mean, 11.0 / 18, 1e-12);
    CHECK_EQ_I64(l->nbal, 3);
    free(a);
    as_eval_summary(p, 6, 1, &a, &na);
    l = find(a, na, "lookup-greedy");
    CHECK_EQ_I64(l->nbal, 2);
    CHECK_NEAR(l->bal_mean, 7.0 / 12, 1e-12);
    CHECK_NEAR(l->bal_std, 1.0 / 12, 1e-12);
    CHECK_NEAR(l->spd_mean, (5.0 / 3 + 1) / 2, 1e-12);
    /* over runs the speedup is the geometric mean of each run's geometric mean: run 0
     * √(8/3), run 1 1 -> (8/3)^(1/4) */
    CHECK_NEAR(l->spd_gmean, pow(8.0 / 3, 0.25), 1e-12);
    free(a);
    for (int i = 0; i < 6; i++) as_planrec_full_free(&p[i]);
}

/* no random plan: no speedup; an unknown algorithm comes after the canonical ones */
TEST(eval_no_random)
{
    as_planrec_full p[2];
    p[0] = P(0, 0, "mine", 2, (double[]){ 1, 2 });
    p[1] = P(0, 0, "size-greedy", 2, (double[]){ 2, 2 });
    as_eval_compute(p, 2);
    CHECK(isnan(p[0].speedup));
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 2, 0, &a, &na);
    CHECK_EQ_I64(na, 2);
    CHECK_STR(a[0].alg, "size-greedy");
    CHECK_STR(a[1].alg, "mine");
    CHECK_EQ_I64(a[1].nspd, 0);
    free(a);
    for (int i = 0; i < 2; i++) as_planrec_full_free(&p[i]);
    double v[] = { 1, 2, 3, 4, NAN }, m, s;
    CHECK_EQ_I64(as_stats_meanstd(v, 5, &m, &s), 4);
    CHECK_NEAR(m, 2.5, 0);
    CHECK_NEAR(s, sqrt(1.25), 1e-15);
}

/* a plan record: costs with a nil, cost_kind, mem_bytes, unplaced tables */
TEST(eval_plan_read)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 9);
    as_pack_kv_str(&pk, "kind", "plan");
    as_pack_kv_i64(&pk, "task", 3);
    as_pack_kv_str(&pk, "alg", "random");
    as_pack_kv_i64(&pk, "shards", 2);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 7); msgpack_pack_int(&pk, 8); msgpack_pack_int(&pk, 9);
    as_pack_str(&pk, "assign");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 0); msgpack_pack_int(&pk, 1); msgpack_pack_int(&pk, -1);
    as_pack_str(&pk, "cost_ms");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.5); msgpack_pack_nil(&pk);
    as_pack_kv_str(&pk, "cost_kind", "measured");
    as_pack_str(&pk, "mem_bytes");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 10); msgpack_pack_int(&pk, 20);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    as_planrec_full p;
    char err[256];
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.task, 3);
    CHECK_EQ_I64(p.K, 2);
    CHECK_EQ_I64(p.T, 3);
    CHECK_NEAR(p.cost[0], 1.5, 0);
    CHECK(isnan(p.cost[1]));
    CHECK_EQ_I64(p.cost_kind, 1);
    CHECK_EQ_I64(p.mem[1], 20);
    CHECK(!p.feasible);   /* table 9 unplaced */
    as_planrec_full_free(&p);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

/* a `train` record as as-rl --log writes it; pred_balance NaN, an optional field nil */
static void pack_train(msgpack_sbuffer *sb, int with_eval)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, with_eval ? 10 : 8);
    as_pack_kv_str(&pk, "kind", "train");
    as_pack_kv_i64(&pk, "episode", 16);
    as_pack_kv_i64(&pk, "update", 2);
    as_pack_kv_i64(&pk, "evals", 6);
    as_pack_kv_f64(&pk, "wall_s", 1.25);
    as_pack_kv_str(&pk, "reward_source", "bench");
    as_pack_kv_f64(&pk, "reward", -1);
    as_pack_kv_f64(&pk, "pred_balance", NAN);
    if (with_eval) {
        as_pack_kv_f64(&pk, "eval_pred_balance", 0.75);
        as_pack_str(&pk, "eval_meas_balance");
        msgpack_pack_nil(&pk);
    }
}

TEST(eval_train_read)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_train(&sb, 1);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    as_eval_train t;
    char err[256];
    CHECK_EQ_I64(as_eval_train_read(&up.data, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.episode, 16);
    CHECK_EQ_I64(t.update, 2);
    CHECK_EQ_I64(t.evals, 6);
    CHECK_NEAR(t.wall_s, 1.25, 0);
    CHECK_STR(t.reward_source, "bench");
    CHECK(isnan(t.pred_balance));
    CHECK(isnan(t.meas_balance));               /* absent */
    CHECK_NEAR(t.eval_pred_balance, 0.75, 0);
    CHECK(isnan(t.eval_meas_balance));          /* nil */
    CHECK_NEAR(as_eval_train_balance(&t), -1, 0);   /* no feasible episode: the reward */
    t.pred_balance = 0.5;
    CHECK_NEAR(as_eval_train_balance(&t), 0.5, 0);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    /* without wall_s: refused */
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    as_pack_kv_str(&pk, "kind", "train");
    as_pack_kv_i64(&pk, "episode", 8);
    as_pack_kv_i64(&pk, "evals", 0);
    as_pack_kv_f64(&pk, "reward", 0.5);
    as_pack_kv_f64(&pk, "pred_balance", 0.5);
    msgpack_unpacked_init(&up);
    off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    CHECK_EQ_I64(as_eval_train_read(&up.data, &t, err, sizeof err), -1);
    CHECK(strstr(err, "wall_s") != NULL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

static as_eval_train TR(int64_t episode, double pred, double ev)
{
    as_eval_train t;
    memset(&t, 0, sizeof t);
    t.episode = episode;
    t.update = episode / 8;
    t.wall_s = (double)episode / 100;
    t.evals = 0;
    snprintf(t.reward_source, sizeof t.reward_source, "model");
    t.reward = pred;
    t.pred_balance = pred;
    t.meas_balance = t.eval_meas_balance = NAN;
    t.eval_pred_balance = ev;
    return t;
}

/* the rows of the curve table: the evaluations; without any, every ceil(n/max)-th record
 * counted back from the last */
TEST(eval_curve_rows)
{
    as_eval_train t[45];
    int64_t rows[45];
    for (int i = 0; i < 45; i++) t[i] = TR(8 * (i + 1), 0.5, NAN);
    CHECK_EQ_I64(as_eval_curve_rows(t, 45, 20, rows), 15);     /* step 3 */
    CHECK_EQ_I64(rows[0], 2);
    CHECK_EQ_I64(rows[1], 5);
    CHECK_EQ_I64(rows[14], 44);
    CHECK_EQ_I64(as_eval_curve_rows(t, 6, 20, rows), 6);       /* few: all */
    CHECK_EQ_I64(rows[5], 5);
    CHECK_EQ_I64(as_eval_curve_rows(t, 41, 20, rows), 14);     /* step 3: 40, 37, ..., 1 */
    CHECK_EQ_I64(rows[0], 1);
    CHECK_EQ_I64(rows[13], 40);
    CHECK_EQ_I64(as_eval_curve_rows(t, 0, 20, rows), 0);
    t[9].eval_pred_balance = 0.75;
    t[19].eval_meas_balance = 0.5;
    CHECK_EQ_I64(as_eval_curve_rows(t, 45, 20, rows), 2);
    CHECK_EQ_I64(rows[0], 9);
    CHECK_EQ_I64(rows[1], 19);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_curve(f, AS_EVAL_CSV, t, 45);
    as_eval_print_curve(f, AS_EVAL_MARKDOWN, t, 45);
    as_eval_print_curve(f, AS_EVAL_TEXT, t, 3);
    fclose(f);
    static const char csv[] = "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance\n"
                              "80,0.8,0,0.5,0.5,0.75,\n160,1.6,0,0.5,0.5,,0.5\n";
    CHECK(!strncmp(buf, csv, strlen(csv)));
    CHECK(strstr(buf, "| 80 | 0.800 | 0 | 0.5000 | 0.5000 | 0.7500 | n/a |\n") != NULL);
    CHECK(strstr(buf, "(3 train records, reward model;") != NULL);
    CHECK(strstr(buf, "      24      0.240       0    0.5000    0.5000       n/a       n/a\n") != NULL);
    free(buf);
}

/* Student t quantiles: df 1 and 2 in closed form (tan(0.475π); (2p−1)/√(2p(1−p)) at
 * p = 0.975), df 10 and 30 from the tables, large df tends to the normal 1.959964 */
TEST(eval_t975)
{
    CHECK_NEAR(as_stats_t975(1), 12.706204736174696, 1e-9);
    CHECK_NEAR(as_stats_t975(2), 4.302652729749464, 1e-10);
    CHECK_NEAR(as_stats_t975(10), 2.228138852, 1e-8);
    CHECK_NEAR(as_stats_t975(30), 2.042272456, 1e-8);
    CHECK_NEAR(as_stats_t975(1000000), 1.959966, 1e-5);
    CHECK(isnan(as_stats_t975(0)));
}

/* intervals by hand: {1, 2, 3}: mean 2, s 1, half-width t(2)/√3 = 2.484138; speedups
 * {1, 2, 4}: geometric mean 2, log interval ln 2 ± t(2) · ln 2/√3, i.e. [0.357462, 11.19];
 * NaN and (for the geometric mean) values <= 0 are left out; one value: no interval */
TEST(eval_intervals)
{
    double m, lo, hi;
    CHECK_EQ_I64(as_stats_ci((double[]){ 1, NAN, 2, 3 }, 4, &m, &lo, &hi), 3);
    CHECK_NEAR(m, 2, 0);
    CHECK_NEAR(lo, -0.48413771175033116, 1e-9);
    CHECK_NEAR(hi, 4.484137711750331, 1e-9);
    CHECK_EQ_I64(as_stats_gmean_ci((double[]){ 1, 2, 0, 4, -1 }, 5, &m, &lo, &hi), 3);
    CHECK_NEAR(m, 2, 1e-12);
    CHECK_NEAR(lo, 0.3574621235894745, 1e-9);
    CHECK_NEAR(hi, 11.189996746602946, 1e-8);
    CHECK_EQ_I64(as_stats_ci((double[]){ 5 }, 1, &m, &lo, &hi), 1);
    CHECK_NEAR(m, 5, 0);
    CHECK(isnan(lo) && isnan(hi));
    CHECK_EQ_I64(as_stats_gmean_ci((double[]){ NAN }, 1, &m, &lo, &hi), 0);
    CHECK(isnan(m));
    double v[] = { 3, 1, NAN, 2, 10 };
    CHECK_NEAR(as_stats_median_finite(v, 5), 2.5, 0);
    double w[] = { 3, 1, 2 };
    CHECK_NEAR(as_stats_median_finite(w, 3), 2, 0);
    CHECK(isnan(as_stats_median_finite(w, 0)));
}

/* algorithm A against B on three tasks: balances 0.9/0.5, 0.8/0.6, 0.85/0.55 (differences
 * 0.4, 0.2, 0.3: mean 0.3, s 0.1, interval 0.3 ± t(2) · 0.1/√3 = [0.051586, 0.548414]); A's
 * slowest shard is half B's: speedup ratio 2 */
static void three_tasks(as_planrec_full *p, const int *noisy_a)
{
    static const double a[3][2] = { { 5, 4.5 }, { 5, 4 }, { 10, 8.5 } }, b[3][2] = { { 10, 5 }, { 10, 6 }, { 20, 11 } };
    static const double r[3][2] = { { 40, 4 }, { 40, 4 }, { 40, 4 } };
    for (int t = 0; t < 3; t++) {
        int none[2] = { 0, 0 };
        p[3 * t] = PN(0, t, "random", 2, r[t], none);
        p[3 * t + 1] = PN(0, t, "A", 2, a[t], noisy_a ? noisy_a + 2 * t : none);
        p[3 * t + 2] = PN(0, t, "B", 2, b[t], none);
    }
    as_eval_compute(p, 9);
}

TEST(eval_rank)
{
    as_planrec_full p[9];
    three_tasks(p, NULL);
    as_eval_cmp c;
    as_eval_compare(p, 9, "A", "B", 0, &c);
    CHECK_EQ_I64(c.n, 3);
    CHECK_NEAR(c.bal_diff, 0.3, 1e-12);
    CHECK_NEAR(c.bal_lo, 0.051586228824966884, 1e-9);
    CHECK_NEAR(c.bal_hi, 0.5484137711750331, 1e-9);
    CHECK_NEAR(c.ratio, 2, 1e-12);
    CHECK_NEAR(c.ratio_lo, 2, 1e-9);
    CHECK_EQ_I64(c.shards, 12);
    CHECK_EQ_I64(c.noisy, 0);
    CHECK(!c.all_equal);
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 9, 0, &a, &na);
    CHECK_STR(a[0].alg, "random");
    CHECK_STR(a[1].alg, "A");
    CHECK_NEAR(a[1].spd_gmean, cbrt(8.0 * 8 * 4), 1e-12);   /* speedups 40/5, 40/5, 40/10 */
    as_eval_rank r;
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_RESOLVED);
    int64_t order[3];
    CHECK_EQ_I64(as_eval_order(a, na, order), 3);
    CHECK(order[0] == 1 && order[1] == 2 && order[2] == 0);
    CHECK_EQ_I64(r.winner, 1);
    CHECK_EQ_I64(r.runner, 2);
    CHECK(!r.too_noisy);

    /* the verdict says it in words; with a noisy slowest shard on two of A's plans (2 of 12
     * flagged shards = 16.7 % > 10 %): too noisy to rank, and those plans are marked */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_verdict_info vi = { .label = "measured", .device = "cpu", .runs = 1, .plot = "p.svg" };
    as_eval_print_verdict(f, AS_EVAL_MARKDOWN, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "- **A** won on measured balance: mean 85.0 %") != NULL);
    CHECK(strstr(buf, "+30.0 points of balance (paired 95 % CI +5.2 to +54.8 over 3 tasks) and a speedup of 2.000x over it") != NULL);
    CHECK(strstr(buf, "The ranking is resolved: the interval lies above 0 and 0 of their 12 shards are noisy.") != NULL);
    CHECK(strstr(buf, "not that between measurements: on a shared machine the same plans measured again can move") != NULL);
    CHECK(strstr(buf, "Ahead of **random**") != NULL);
    CHECK(strstr(buf, "0 of 18 measured shards (0.0 %) stayed noisy after re-measuring (spread above 5.0 %); median spread 1.0 %") != NULL);
    CHECK(strstr(buf, "Cost model: no held-out quality in the input") != NULL);
    /* B against random: balances 0.5, 0.6, 0.55 against 0.1 each: resolved too */
    CHECK(strstr(buf, "- Ranking by mean balance (> resolved, ≈ not resolved: too noisy, too few tasks or a tie): "
                      "A (85.0 %) > B (55.0 %) > random (10.0 %).\n") != NULL);
    CHECK(strstr(buf, "Plots: `p.svg`") != NULL);
    free(buf);
    /* estimated costs have no measurement to repeat: no such caveat */
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_verdict_info ve = vi;
    ve.label = "estimated";
    as_eval_print_verdict(f, AS_EVAL_MARKDOWN, p, 9, a, na, &ve);
    fclose(f);
    CHECK(strstr(buf, "The ranking is resolved") != NULL);
    CHECK(strstr(buf, "between measurements") == NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 9; i++) as_planrec_full_free(&p[i]);

    int noisy[6] = { 1, 0, 0, 0, 1, 0 };
    three_tasks(p, noisy);
    CHECK(p[1].shaky && !p[4].shaky && p[7].shaky);
    CHECK_EQ_I64(p[1].nnoisy, 1);
    as_eval_summary(p, 9, 0, &a, &na);
    CHECK_EQ_I64(a[1].noisy, 2);
    CHECK_EQ_I64(a[1].shards, 6);
    CHECK_EQ_I64(a[1].shaky, 2);
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_NOISY);
    CHECK(r.too_noisy);
    as_eval_noise nz;
    as_eval_noise_of(p, 9, NULL, &nz);
    CHECK_EQ_I64(nz.shards, 18);
    CHECK_EQ_I64(nz.noisy, 2);
    CHECK_EQ_I64(nz.spreads, 18);
    CHECK_NEAR(nz.median_spread, 0.01, 0);
    CHECK_NEAR(nz.threshold, 0.05, 0);
    CHECK_EQ_I64(nz.shaky, 2);
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_print_verdict(f, AS_EVAL_TEXT, p, 9, a, na, &vi);
    as_eval_print_plans(f, AS_EVAL_TEXT, p, 9, "measured");
    as_eval_print_verdict(f, AS_EVAL_CSV, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "The measurements were too noisy to rank A and B: 2 of their 12 shards (16.7 %) stayed noisy, more than 10 %.") != NULL);
    CHECK(strstr(buf, "2 of 9 plans rest on a noisy shard (marked * in the plans table)") != NULL);
    CHECK(strstr(buf, "  90.0%*") != NULL);
    CHECK(strstr(buf, "\n* its slowest or fastest shard stayed noisy") != NULL);
    CHECK(strstr(buf, "A,B,noisy,3,0.3,0.0515862288,0.548413771,2,2,2,18,2,0.01,0.05,,,,A ≈ B > random,3,0,0,0,\n") != NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 9; i++) as_planrec_full_free(&p[i]);

    /* A's balance on task 2 down to 0.25: differences 0.4, 0.2, -0.3 (mean 0.1, s 0.36):
     * the interval includes 0 */
    three_tasks(p, NULL);
    p[7].cost[1] = 2.5;
    as_eval_compute(p, 9);
    as_eval_summary(p, 9, 0, &a, &na);
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_NOISY);
    CHECK(!r.too_noisy);
    CHECK(r.cmp.bal_lo < 0 && r.cmp.bal_hi > 0);
    free(a);
    for (int i = 0; i < 9; i++) as_planrec_full_free(&p[i]);

    /* the same plans twice: a tie; one task only: too few */
    as_planrec_full q[4];
    q[0] = P(0, 0, "random", 2, (double[]){ 4, 2 });
    q[1] = P(0, 0, "x", 2, (double[]){ 3, 3 });
    q[2] = P(0, 0, "y", 2, (double[]){ 3, 3 });
    q[3] = P(0, 0, "z", 2, (double[]){ 2, 3 });
    as_eval_compute(q, 4);
    as_eval_summary(q, 3, 0, &a, &na);
    as_eval_rank_algs(q, 3, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_TIE);
    free(a);
    as_planrec_full z[2] = { q[0], q[3] };
    as_eval_summary(z, 2, 0, &a, &na);
    as_eval_rank_algs(z, 2, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_FEW);
    CHECK_STR(a[r.winner].alg, "z");
    free(a);
    for (int i = 0; i < 4; i++) as_planrec_full_free(&q[i]);
}

static void unpack_one(msgpack_sbuffer *sb, msgpack_unpacked *up);

/* plan q given passes: pass p's costs are q's times mul[p], but for pass `odd`, whose costs
 * are odd_cost (NULL: none odd) */
static void give_passes(as_planrec_full *q, int P, const double *mul, int odd, const double *odd_cost)
{
    q->npass = P;
    q->pass_cost = as_malloc((size_t)P * (size_t)q->K * sizeof *q->pass_cost);
    for (int p = 0; p < P; p++)
        for (int64_t k = 0; k < q->K; k++)
            q->pass_cost[p * q->K + k] = odd_cost && p == odd ? odd_cost[k] : q->cost[k] * mul[p];
}

/* passes: a lead that holds in every pass stays resolved (and says its range); one that one
 * pass reverses is not, and the plans whose order flips are marked */
TEST(eval_rank_passes)
{
    as_planrec_full p[9];
    three_tasks(p, NULL);
    const double mul[2] = { 1, 1.1 };
    for (int i = 0; i < 9; i++) give_passes(&p[i], 2, mul, -1, NULL);
    as_eval_compute(p, 9);
    CHECK_NEAR(p[1].pass_bal_lo, 0.9, 1e-12);
    CHECK_NEAR(p[1].pass_bal_hi, 0.9, 1e-12);
    CHECK(!p[1].pass_flip && !p[2].pass_flip);
    as_eval_cmp c;
    as_eval_compare(p, 9, "A", "B", 0, &c);
    CHECK_EQ_I64(c.npass, 2);
    CHECK_NEAR(c.pass_lo, 0.3, 1e-12);
    CHECK_NEAR(c.pass_hi, 0.3, 1e-12);
    CHECK_EQ_I64(c.flips, 0);
    CHECK_EQ_I64(c.pass_pairs, 3);
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 9, 0, &a, &na);
    as_eval_rank r;
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_RESOLVED);
    CHECK(!r.pass_flip);
    CHECK_EQ_I64(a[1].npass, 2);
    CHECK_NEAR(a[1].bal_pass_lo, 0.85, 1e-12);
    free(a);
    /* pass 1 measures A's plans at 40 % balance: over the tasks (the combined costs) A still
       leads, but not in pass 1 (0.40 - 0.55): not resolved, every task's pair flips */
    for (int t = 0; t < 3; t++) {
        as_planrec_full *x = &p[3 * t + 1];
        free(x->pass_cost);
        const double odd[2] = { 5, 2 };
        give_passes(x, 2, mul, 1, odd);
    }
    as_eval_compute(p, 9);
    CHECK_NEAR(p[1].pass_bal_lo, 0.4, 1e-12);
    CHECK(p[1].pass_flip && p[2].pass_flip);
    CHECK(!p[0].pass_flip);     /* random: below both in both passes */
    as_eval_compare(p, 9, "A", "B", 0, &c);
    CHECK_NEAR(c.pass_lo, 0.4 - 0.55, 1e-12);
    CHECK_NEAR(c.pass_hi, 0.3, 1e-12);
    CHECK_EQ_I64(c.flips, 3);
    as_eval_summary(p, 9, 0, &a, &na);
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_NOISY);
    CHECK(r.pass_flip);
    CHECK_NEAR(a[1].bal_pass_lo, 0.4, 1e-12);
    CHECK_NEAR(a[1].bal_pass_hi, 0.85, 1e-12);
    CHECK_EQ_I64(a[1].pass_flips, 3);
    /* the verdict says it in words */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_verdict_info vi = { .label = "measured", .device = "cpu" };
    as_eval_print_verdict(f, AS_EVAL_TEXT, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "the lead does not hold in every one (-15.0 to +30.0 points)") != NULL);
    CHECK(strstr(buf, "on 3 of the 3 tasks the two plans' order flips between passes") != NULL);
    free(buf);
    free(a);
    /* a plan without passes among them: no between-pass figures, the tasks decide */
    free(p[4].pass_cost);
    p[4].pass_cost = NULL;
    p[4].npass = 0;
    as_eval_compute(p, 9);
    as_eval_compare(p, 9, "A", "B", 0, &c);
    CHECK_EQ_I64(c.npass, 0);
    as_eval_summary(p, 9, 0, &a, &na);
    as_eval_rank_algs(p, 9, a, na, 0, &r);
    CHECK_EQ_I64(r.kind, AS_RANK_RESOLVED);
    CHECK_EQ_I64(a[1].npass, 0);
    free(a);
    for (int i = 0; i < 9; i++) as_planrec_full_free(&p[i]);
}

/* cost_pass_ms and cost_pass_spread read, and refused when malformed, naming the field */
TEST(eval_plan_read_passes)
{
    for (int c = 0; c < 7; c++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 8);
        as_pack_kv_str(&pk, "kind", "plan");
        as_pack_kv_i64(&pk, "task", 1);
        as_pack_kv_str(&pk, "alg", "x");
        as_pack_kv_i64(&pk, "shards", 2);
        as_pack_str(&pk, "tables");
        msgpack_pack_array(&pk, 2);
        msgpack_pack_int(&pk, 7); msgpack_pack_int(&pk, 8);
        as_pack_str(&pk, "assign");
        msgpack_pack_array(&pk, 2);
        msgpack_pack_int(&pk, 0); msgpack_pack_int(&pk, 1);
        as_pack_str(&pk, "cost_pass_ms");
        const int npass = c == 1 ? 1 : c == 2 ? 17 : 2;
        msgpack_pack_array(&pk, (size_t)npass);
        for (int q = 0; q < npass; q++) {
            msgpack_pack_array(&pk, c == 3 && q == 1 ? 3 : 2);
            msgpack_pack_double(&pk, 1 + q);
            if (c == 4 && q == 1) msgpack_pack_double(&pk, -1);
            else if (c == 5 && q == 1) as_pack_str(&pk, "x");
            else msgpack_pack_nil(&pk);
            if (c == 3 && q == 1) msgpack_pack_double(&pk, 1);
        }
        as_pack_str(&pk, "cost_pass_spread");
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, c == 6 ? -0.5 : 0.01);
        msgpack_pack_nil(&pk);
        msgpack_unpacked up;
        unpack_one(&sb, &up);
        as_planrec_full q;
        memset(&q, 0, sizeof q);
        char err[256] = "";
        int rc = as_planrec_full_read(&up.data, &q, err, sizeof err);
        static const char *const want[7] = { NULL, "'cost_pass_ms' must be a list of 2 to 16 passes",
                                             "'cost_pass_ms' must be a list of 2 to 16 passes",
                                             "cost_pass_ms[1] must be a list with one entry per shard",
                                             "cost_pass_ms[1][1] is not a number >= 0 or nil",
                                             "cost_pass_ms[1][1] is not a number >= 0 or nil",
                                             "cost_pass_spread[0] is not a number >= 0 or nil" };
        if (!want[c]) {
            CHECK_EQ_I64(rc, 0);
            CHECK_EQ_I64(q.npass, 2);
            CHECK(q.pass_cost && q.pass_cost[2] == 2 && isnan(q.pass_cost[3]));
            CHECK(q.pass_spread && q.pass_spread[0] == 0.01 && isnan(q.pass_spread[1]));
            as_planrec_full_free(&q);
        } else {
            CHECK_EQ_I64(rc, -1);
            CHECK(strstr(err, want[c]) != NULL);
        }
        msgpack_unpacked_destroy(&up);
        msgpack_sbuffer_destroy(&sb);
    }
}

/* one msgpack record from a packing function into up (sb keeps its bytes) */
static void unpack_one(msgpack_sbuffer *sb, msgpack_unpacked *up)
{
    msgpack_unpacked_init(up);
    size_t off = 0;
    msgpack_unpack_next(up, sb->data, sb->size, &off);
}

/* a plan of two shards with the given cost kind and costs, and as-bench's noise fields */
static void pack_plan(msgpack_sbuffer *sb, const char *kind, double c0, double c1, int noise)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, noise ? 11 : 8);
    as_pack_kv_str(&pk, "kind", "plan");
    as_pack_kv_i64(&pk, "task", 1);
    as_pack_kv_str(&pk, "alg", "cost-greedy");
    as_pack_kv_i64(&pk, "shards", 2);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 7); msgpack_pack_int(&pk, 8);
    as_pack_str(&pk, "assign");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 0); msgpack_pack_int(&pk, 1);
    as_pack_str(&pk, "cost_ms");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, c0); msgpack_pack_double(&pk, c1);
    as_pack_kv_str(&pk, "cost_kind", kind);
    if (noise) {
        as_pack_str(&pk, "cost_spread");
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 0.25); msgpack_pack_nil(&pk);
        as_pack_str(&pk, "cost_noisy");
        msgpack_pack_array(&pk, 2);
        msgpack_pack_true(&pk); msgpack_pack_false(&pk);
        as_pack_kv_f64(&pk, "noise_threshold", 0.1);
    }
}

/* the noise fields are read; a negative measured cost is bad data, a negative estimated one
 * counts as 0 (and is counted) */
/* as-plan's model_quality on the plans: counted per algorithm (summary column, CSV), the
 * algorithms whose plans rest on a weak model named by the verdict (CSV: weak_model_algs),
 * those of unjudged quality, and those the gate passed */
static void mark(as_planrec_full *p, double r2, double linear_r2, double min_r2)
{
    as_costmodel_heldout h;
    memset(&h, 0, sizeof h);
    h.present = 1;
    h.model.r2 = r2;
    h.linear.r2 = linear_r2;
    p->has_mq = 1;
    as_mgate_judge(&p->mq, &h, min_r2);
}

TEST(eval_model_quality_marks)
{
    as_planrec_full p[9];
    three_tasks(p, NULL);
    /* A: every plan weak (R² 0.41 below 0.9 and the line's 0.6); B: tasks 0, 1 passed, task 2
       unjudged (no held-out R²); random: placed without a model */
    for (int t = 0; t < 3; t++) mark(&p[3 * t + 1], 0.41, 0.6, 0.9);
    mark(&p[2], 0.97, 0.87, 0.9);
    mark(&p[5], 0.97, 0.87, 0.9);
    mark(&p[8], NAN, NAN, 0.9);
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 9, 0, &a, &na);
    const as_eval_alg *ra = find(a, na, "random"), *aa = find(a, na, "A"), *ba = find(a, na, "B");
    CHECK(ra && ra->mq_plans == 0 && ra->mq_weak == 0 && ra->mq_unjudged == 0);
    CHECK(aa && aa->mq_plans == 3 && aa->mq_weak == 3 && aa->mq_unjudged == 0);
    CHECK(ba && ba->mq_plans == 3 && ba->mq_weak == 0 && ba->mq_unjudged == 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_verdict_info vi = { .label = "measured", .device = "cpu", .runs = 1 };
    as_eval_print_summary(f, AS_EVAL_TEXT, a, na, "measured", 0);
    as_eval_print_summary(f, AS_EVAL_MARKDOWN, a, na, "measured", 0);
    as_eval_print_summary(f, AS_EVAL_CSV, a, na, "measured", 0);
    as_eval_print_verdict(f, AS_EVAL_MARKDOWN, p, 9, a, na, &vi);
    as_eval_print_verdict(f, AS_EVAL_CSV, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "  noisy shards   cost model\n") != NULL);
    CHECK(strstr(buf, "          0/6         weak\n") != NULL);           /* A */
    CHECK(strstr(buf, "          0/6 unjudged 1/3\n") != NULL);            /* B */
    CHECK(strstr(buf, "          0/6" "             \n") != NULL);        /* random: none */
    CHECK(strstr(buf, " noisy shards | cost model |\n") != NULL);
    CHECK(strstr(buf, " 0/6 | weak |\n") != NULL);
    CHECK(strstr(buf, ",noisy_plans,n_floor,max_over_floor_mean,at_floor,model_plans,model_weak,model_unjudged\n") != NULL);
    CHECK(strstr(buf, ",0,,0,3,3,0\n") != NULL);                         /* A */
    CHECK(strstr(buf, ",0,,0,3,0,1\n") != NULL);                         /* B */
    CHECK(strstr(buf, "; cost model: what as-plan's quality gate said of the cost model that placed the plans") != NULL);
    CHECK(strstr(buf, "- **Weak cost model:** the plans of A (3 plans) were placed with a cost model as-plan marked weak "
                      "(model_quality; held-out R² 0.410, below the threshold 0.9 and below the linear baseline's 0.600): "
                      "**their balance, and their place in the ranking, rest on a weak model**.\n") != NULL);
    CHECK(strstr(buf, "- The plans of B (1 plan) were placed with a cost model whose quality as-plan did not judge") != NULL);
    CHECK(strstr(buf, "- The cost model that placed the other plans of B passed as-plan's quality gate (model_quality; held-out "
                      "R² 0.970, threshold 0.9, linear baseline 0.870).\n") != NULL);
    CHECK(strstr(buf, ",floor_margin,weak_model_algs\n") != NULL);
    CHECK(strstr(buf, "A > B > random,3,0,0,0,A\n") != NULL);
    free(buf);
    free(a);
    /* no plan marked weak: no such line, the CSV column empty; no plan marked: no column */
    for (int t = 0; t < 3; t++) mark(&p[3 * t + 1], 0.95, 0.6, 0.9);
    as_eval_summary(p, 9, 0, &a, &na);
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_print_verdict(f, AS_EVAL_TEXT, p, 9, a, na, &vi);
    as_eval_print_verdict(f, AS_EVAL_CSV, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "Weak cost model") == NULL);
    /* B's unjudged plan: "the other plans"; A's and B's figures differ: "the first" */
    CHECK(strstr(buf, "- The cost model that placed the other plans of A and B passed as-plan's quality gate (model_quality; "
                      "the first: held-out R² 0.950, threshold 0.9, linear baseline 0.600).\n") != NULL);
    CHECK(strstr(buf, "A > B > random,3,0,0,0,\n") != NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 9; i++) p[i].has_mq = 0;
    as_eval_summary(p, 9, 0, &a, &na);
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_print_summary(f, AS_EVAL_TEXT, a, na, "measured", 0);
    as_eval_print_verdict(f, AS_EVAL_TEXT, p, 9, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "cost model\n") == NULL);
    CHECK(strstr(buf, "quality gate") == NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 9; i++) as_planrec_full_free(&p[i]);
}

TEST(eval_plan_noise_negative)
{
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    as_planrec_full p;
    char err[256];
    msgpack_sbuffer_init(&sb);
    pack_plan(&sb, "measured", 2, 1, 1);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), 0);
    CHECK(p.spread && p.noisy);
    CHECK_NEAR(p.spread[0], 0.25, 0);
    CHECK(isnan(p.spread[1]));
    CHECK(p.noisy[0] && !p.noisy[1]);
    CHECK_NEAR(p.noise_threshold, 0.1, 0);
    as_eval_compute(&p, 1);
    CHECK_EQ_I64(p.nnoisy, 1);
    CHECK(p.shaky);                         /* the slowest shard is the noisy one */
    as_planrec_full_free(&p);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    msgpack_sbuffer_init(&sb);
    pack_plan(&sb, "measured", 2, -0.5, 0);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), -1);
    CHECK(strstr(err, "measured cost_ms[1] is negative (-0.5 ms)") != NULL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    msgpack_sbuffer_init(&sb);
    pack_plan(&sb, "estimated", 2, -0.5, 0);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.clamped, 1);
    CHECK_NEAR(p.cost[1], 0, 0);
    CHECK(!p.spread && !p.noisy && isnan(p.noise_threshold));
    as_eval_compute(&p, 1);
    CHECK_NEAR(p.balance, 0, 0);            /* never below 0 */
    CHECK_EQ_I64(p.nnoisy, -1);
    as_planrec_full_free(&p);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

static void pack_metrics(msgpack_packer *pk, const char *key, int64_t n, double mae, double r2)
{
    as_pack_str(pk, key);
    msgpack_pack_map(pk, 5);
    as_pack_kv_i64(pk, "n", n);
    as_pack_kv_f64(pk, "mae", mae);
    as_pack_kv_f64(pk, "mse", mae * mae);
    as_pack_str(pk, "mape");
    msgpack_pack_nil(pk);
    as_pack_kv_f64(pk, "r2", r2);
}

/* held-out quality from a model record's heldout and from a costfit-report; worse than the
 * line on R² or on MAE */
TEST(eval_quality)
{
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    msgpack_packer pk;
    as_eval_quality q;
    char err[256];
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "kind", "model");
    as_pack_kv_str(&pk, "output", "softplus");
    as_pack_str(&pk, "heldout");
    msgpack_pack_map(&pk, 5);
    as_pack_kv_str(&pk, "split", "shards");
    as_pack_kv_i64(&pk, "test_shards", 120);
    pack_metrics(&pk, "model", 120, 0.5, -0.15);
    pack_metrics(&pk, "linear", 120, 0.4, 0.3);
    as_pack_str(&pk, "sum_single");
    msgpack_pack_nil(&pk);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_eval_quality_read(&up.data, &q, err, sizeof err), 0);
    CHECK_EQ_I64(q.have, 1);
    CHECK_STR(q.source, "model");
    CHECK_STR(q.output, "softplus");
    CHECK_EQ_I64(q.test_shards, 120);
    CHECK_NEAR(q.model.r2, -0.15, 0);
    CHECK(isnan(q.model.mape));
    CHECK_NEAR(q.linear.mae, 0.4, 0);
    CHECK_EQ_I64(q.sum_single.n, -1);
    CHECK_EQ_I64(as_eval_quality_worse(&q), 1);
    q.model.r2 = 0.5;                        /* better R², worse MAE: still worse */
    CHECK_EQ_I64(as_eval_quality_worse(&q), 1);
    q.model.mae = 0.3;
    CHECK_EQ_I64(as_eval_quality_worse(&q), 0);
    q.model.mae = q.model.r2 = NAN;
    CHECK_EQ_I64(as_eval_quality_worse(&q), -1);
    q.model.r2 = -0.15;
    q.model.mae = 0.5;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_quality(f, AS_EVAL_MARKDOWN, &q);
    fclose(f);
    CHECK(strstr(buf, "**Cost model:** held-out R² -0.150, MAPE n/a, MAE 0.5 ms on 120 shards (split shards, output softplus); "
                      "linear baseline R² 0.300, MAPE n/a, MAE 0.4 ms\n") != NULL);
    CHECK(strstr(buf, "**Warning:** the cost model predicts held-out shards worse than a straight line; its estimates, and "
                      "the plans built on them, should not be trusted.") != NULL);
    free(buf);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    /* a model without heldout: nothing; heldout nil: no split */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    as_pack_kv_str(&pk, "kind", "model");
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_eval_quality_read(&up.data, &q, err, sizeof err), 1);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "kind", "model");
    as_pack_kv_str(&pk, "split", "none");
    as_pack_str(&pk, "heldout");
    msgpack_pack_nil(&pk);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_eval_quality_read(&up.data, &q, err, sizeof err), 0);
    CHECK_EQ_I64(q.have, 2);
    CHECK_EQ_I64(as_eval_quality_worse(&q), -1);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    /* a costfit-report (older files): model.test and linear.test */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    as_pack_kv_str(&pk, "kind", "costfit-report");
    as_pack_kv_str(&pk, "split", "tables");
    as_pack_kv_i64(&pk, "test_shards", 40);
    as_pack_str(&pk, "model");
    msgpack_pack_map(&pk, 1);
    pack_metrics(&pk, "test", 40, 0.1, 0.9);
    as_pack_str(&pk, "linear");
    msgpack_pack_map(&pk, 1);
    pack_metrics(&pk, "test", 40, 0.2, 0.8);
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_eval_quality_read(&up.data, &q, err, sizeof err), 0);
    CHECK_EQ_I64(q.have, 1);
    CHECK_STR(q.source, "costfit-report");
    CHECK_STR(q.split, "tables");
    CHECK_NEAR(q.model.r2, 0.9, 0);
    CHECK_NEAR(q.linear.r2, 0.8, 0);
    CHECK_EQ_I64(as_eval_quality_worse(&q), 0);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(eval_plot_format)
{
    CHECK_EQ_I64(as_eval_plot_format("a/b.png"), 0);
    CHECK_EQ_I64(as_eval_plot_format("x.SVG"), 1);
    CHECK_EQ_I64(as_eval_plot_format("x.pdf"), 2);
    CHECK_EQ_I64(as_eval_plot_format("x.jpg"), -1);
    CHECK_EQ_I64(as_eval_plot_format("png"), -1);
    CHECK_EQ_I64(as_eval_plot_format("dir.png/x"), -1);
}

/* a plan record of task `task` with two shards (tables 7 and 8, one each) into w: seed < 0
 * none, kind NULL no costs, device "" none */
static void put_plan(as_writer *w, int64_t task, const char *alg, int64_t seed, const char *split, const char *kind,
                     double c0, double c1, const char *device)
{
    tsup_put_plan2(w, &(tsup_plan2){ task, alg, seed, split, kind, c0, c1, 2, device });
}

static void put_train(as_writer *w, int64_t episode)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 6);
    as_pack_kv_str(pk, "kind", "train");
    as_pack_kv_i64(pk, "episode", episode);
    as_pack_kv_i64(pk, "evals", 0);
    as_pack_kv_f64(pk, "wall_s", 0.5 * (double)episode);
    as_pack_kv_f64(pk, "reward", 0.5);
    as_pack_kv_f64(pk, "pred_balance", 0.75);
    as_writer_end_record(w);
}

static char g_in_path[8][512];
static int g_in_k;
static const char *in_tmp(const char *name)
{
    char *p = g_in_path[g_in_k++ % 8];
    snprintf(p, 512, "%s/%s", ut_tmpdir(), name);
    return p;
}

/* runs are (file, seed) pairs in order of appearance; --split drops plans; devices; the
 * train records' first step back; the same seed in two files is two runs */
TEST(eval_input_runs)
{
    const char *a = in_tmp("eval-in-a.ast"), *b = in_tmp("eval-in-b.ast");
    as_writer *w = as_writer_open(a, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 3, "test", "measured", 2, 1, "gpu0");
    put_plan(w, 1, "cost-greedy", 3, "test", "measured", 1.5, 1.5, "gpu0");
    put_plan(w, 1, "random", 4, "test", "measured", 3, 1, "gpu0");
    put_plan(w, 2, "random", 3, "train", "measured", 3, 1, "gpu0");   /* another split */
    put_train(w, 10);
    put_train(w, 20);
    put_train(w, 5);                                                     /* back: 5 after 20 */
    put_train(w, 3);
    as_writer_close(w);
    w = as_writer_open(b, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 3, "test", "measured", 4, 1, "gpu1");
    put_plan(w, 1, "random", 4, "test", "measured", 4, 1, "");
    as_writer_close(w);

    char *files[] = { (char *)a, (char *)b, (char *)a };
    char err[1024];
    as_eval_input in;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 3, "test", 0, err, sizeof err), 0);
    CHECK_EQ_I64(in.nplans, 8);             /* 3 + 2 + 3 of split test */
    CHECK_EQ_I64(in.nruns, 6);              /* (a,3) (a,4) (b,3) (b,4) and a again: (a',3) (a',4) */
    const int64_t want_run[] = { 0, 0, 1, 2, 3, 4, 4, 5 };
    for (int j = 0; j < 8 && j < in.nplans; j++) CHECK_EQ_I64(in.plans[j].run, want_run[j]);
    if (in.nplans == 8) CHECK_NEAR(in.plans[7].cost[0], 3, 0);
    CHECK_STR(in.device, "gpu0");
    CHECK_EQ_I64(in.devices_differ, 1);
    CHECK_EQ_I64(in.ntrain, 8);
    CHECK_EQ_I64(in.back_at, 5);
    CHECK_EQ_I64(in.back_from, 20);
    CHECK(!in.pred && !in.meas && in.nscatter == 0);
    CHECK(as_eval_quality_pick(&in.quality) == NULL);
    as_eval_input_free(&in);

    /* one file, no split: one seed, two runs by seed; all 4 plans */
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_I64(in.nplans, 4);
    CHECK_EQ_I64(in.nruns, 2);
    CHECK_EQ_I64(in.devices_differ, 0);
    as_eval_input_free(&in);

    /* a file that is not there: its name and strerror */
    char *missing[] = { (char *)in_tmp("eval-missing.ast") };
    CHECK_EQ_I64(as_eval_input_read(&in, missing, 1, NULL, 0, err, sizeof err), -1);
    char want[1200];
    snprintf(want, sizeof want, "%s: No such file or directory", missing[0]);
    CHECK_STR(err, want);
    as_eval_input_free(&in);
}

/* measured and estimated costs in one input are an error, and so is a plan without costs,
 * unless a cost model estimates them (then the features records are kept) */
TEST(eval_input_cost_kinds)
{
    const char *p = in_tmp("eval-mixed.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 1, NULL, "measured", 2, 1, "");
    put_plan(w, 1, "cost-greedy", 1, NULL, "estimated", 1, 1, "");
    as_writer_close(w);
    char *files[] = { (char *)p };
    char err[1024], want[1200];
    as_eval_input in;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: record 3: the input mixes measured and estimated costs; evaluate them separately", p);
    CHECK_STR(err, want);
    as_eval_input_free(&in);
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 1, err, sizeof err), 0);   /* estimate: no check */
    CHECK_EQ_I64(in.nplans, 2);
    CHECK_EQ_I64(in.nruns, 1);
    as_eval_input_free(&in);

    p = in_tmp("eval-nocost.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 5, "dim-greedy", -1, NULL, NULL, 0, 0, "");
    as_writer_close(w);
    files[0] = (char *)p;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: record 2: plan of task 5 (dim-greedy) has no costs: measure it with as-bench or "
             "give --model", p);
    CHECK_STR(err, want);
    as_eval_input_free(&in);
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 1, err, sizeof err), 0);
    CHECK_EQ_I64(in.nplans, 1);
    CHECK_EQ_I64(in.plans[0].cost_kind, 0);
    CHECK_EQ_I64(in.plans[0].seed, -1);
    as_eval_input_free(&in);
}

/* the estimate: each shard priced by the cost model on its tables' features (the same as
 * asking the model directly), cost_kind estimated, the noise fields dropped; a table
 * without features is an error naming the plan */
TEST(eval_estimate)
{
    as_costmodel *cm = as_costmodel_new(4, 3, 2, 1);
    as_featidx ft = { 0 };
    as_features f7, f8;
    memset(&f7, 0, sizeof f7);
    f7.id = 7; f7.dim = 16; f7.rows = 100; f7.pooling = 2; f7.batch = 8; f7.lookups = 16;
    f8 = f7;
    f8.id = 8; f8.dim = 64; f8.pooling = 5; f8.lookups = 40;
    as_featidx_add(&ft, &f8);
    as_featidx_add(&ft, &f7);
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    as_planrec_full p[2];
    char err[256];
    msgpack_sbuffer_init(&sb);
    pack_plan(&sb, "measured", 2, 1, 1);   /* tables 7 and 8 on shards 0 and 1, noise fields */
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p[0], err, sizeof err), 0);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p[1], err, sizeof err), 0);
    p[1].assign[1] = 0;                      /* both tables on shard 0, shard 1 empty */
    CHECK_EQ_I64(as_eval_estimate(p, 2, cm, &ft, err, sizeof err), 0);
    const as_features *a[] = { &f7 }, *b[] = { &f8 }, *ab[] = { &f7, &f8 };
    double c7 = as_costmodel_predict(cm, a, 1), c8 = as_costmodel_predict(cm, b, 1);
    double c78 = as_costmodel_predict(cm, ab, 2), c0 = as_costmodel_predict(cm, ab, 0);
    CHECK_NEAR(p[0].cost[0], c7, 0);
    CHECK_NEAR(p[0].cost[1], c8, 0);
    CHECK_NEAR(p[1].cost[0], c78, 0);
    CHECK_NEAR(p[1].cost[1], c0, 0);
    CHECK_EQ_I64(p[0].clamped, (c7 == 0) + (c8 == 0));   /* output linear: 0 is a clamped negative */
    CHECK_EQ_I64(p[1].clamped, c78 == 0);                /* the empty shard is not counted */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_I64(p[i].cost_kind, 2);
        CHECK(!p[i].spread && !p[i].noisy && isnan(p[i].noise_threshold));
        as_planrec_full_free(&p[i]);
    }
    as_featidx_free(&ft);

    /* table 8 without features */
    as_featidx only7 = { 0 };
    as_featidx_add(&only7, &f7);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p[0], err, sizeof err), 0);
    CHECK_EQ_I64(as_eval_estimate(p, 1, cm, &only7, err, sizeof err), -1);
    CHECK_STR(err, "plan of task 1 (cost-greedy): table 8 has no features record in the input");
    as_planrec_full_free(&p[0]);
    as_featidx_free(&only7);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    as_costmodel_free(cm);
}

/* ---- communication with data-parallel entries --------------------------------------------------- */

/* a malloc'd list of K = 2 numbers */
static double *two(double a, double b)
{
    double *v = as_malloc(2 * sizeof *v);
    v[0] = a;
    v[1] = b;
    return v;
}

/* at 1 GiB/s (2^30 bytes a second) a shard's charge is its all-to-all bytes (its own side
   and its share of everyone's) plus its own all-reduce bytes, over 2^30, in ms */
TEST(eval_charge_comm_data_parallel)
{
    const as_comm_model BW1 = as_comm_bandwidth(1.0);
    char err[512];
    const double G = 1073741824.0, c[2] = { 1.0, 2.0 };
    as_planrec_full p[3];
    /* a: table-wise, in 2^29 and out 2^28 on shard 0, out 2^29 on shard 1 (all 2^30 + 2^28) */
    p[0] = P(0, 1, "a", 2, c);
    p[0].comm_in = two(G / 2, 0);
    p[0].comm_out = two(G / 4, G / 2);
    /* b: table 1 data parallel, all-reduce 2^30 per shard beside the same all-to-all bytes */
    p[1] = P(0, 1, "b", 2, c);
    p[1].assign[1] = AS_DP;
    p[1].ndp = 1;
    p[1].comm_in = two(G / 2, 0);
    p[1].comm_out = two(G / 4, G / 2);
    p[1].comm_ar = two(G, G);
    /* c: both tables data parallel, only the all-reduce bytes (nothing all-to-all) */
    p[2] = P(0, 1, "c", 2, c);
    p[2].assign[0] = p[2].assign[1] = AS_DP;
    p[2].ndp = 2;
    p[2].comm_ar = two(G / 8, G / 8);
    int64_t mis = -1, hv = -1, bn = -1;
    double bs = -1, bm = -1;
    CHECK_EQ_I64(as_eval_charge_comm(p, 3, &BW1, &mis, &hv, &bs, &bn, &bm, err, sizeof err), 1);
    CHECK_EQ_I64(mis, 0);
    CHECK_EQ_I64(hv, 3);
    CHECK_EQ_I64(bn, 6);
    /* bytes per shard: a 0.75G, 0.5G; b 1.75G, 1.5G; c 0.125G, 0.125G */
    CHECK_NEAR(bs, G * (0.75 + 0.5 + 1.75 + 1.5 + 0.25), 0);
    CHECK_NEAR(bm, G * 1.75, 0);
    /* a: shard 0 (0.75 + 1.25 / 2) G = 1.375 s, shard 1 (0.5 + 0.625) G = 1.125 s, as before */
    CHECK_NEAR(p[0].comm_ms[0], 1375.0, 0);
    CHECK_NEAR(p[0].comm_ms[1], 1125.0, 0);
    CHECK_NEAR(p[0].cost[0], 1376.0, 0);
    CHECK_NEAR(p[0].cost[1], 1127.0, 0);
    /* b: the same plus 1 s of all-reduce each (its own, not a share of everyone's 2 s) */
    CHECK_NEAR(p[1].comm_ms[0], 2375.0, 0);
    CHECK_NEAR(p[1].comm_ms[1], 2125.0, 0);
    CHECK_NEAR(p[1].cost[0], 2376.0, 0);
    CHECK_NEAR(p[1].cost[1], 2127.0, 0);
    /* c: 1/8 s of all-reduce each */
    CHECK_NEAR(p[2].comm_ms[0], 125.0, 0);
    CHECK_NEAR(p[2].cost[1], 127.0, 0);
    /* b without its all-reduce bytes (a plan from before comm_ar_bytes): its bytes are not
       all known, nothing is charged (never a mix) */
    for (int j = 0; j < 3; j++) as_planrec_full_free(&p[j]);
    p[0] = P(0, 1, "a", 2, c);
    p[0].comm_in = two(G / 2, 0);
    p[0].comm_out = two(G / 4, G / 2);
    p[1] = P(0, 1, "b", 2, c);
    p[1].assign[1] = AS_DP;
    p[1].ndp = 1;
    p[1].comm_in = two(G / 2, 0);
    p[1].comm_out = two(G / 4, G / 2);
    CHECK_EQ_I64(as_eval_charge_comm(p, 2, &BW1, &mis, &hv, NULL, NULL, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(mis, 1);
    CHECK_EQ_I64(hv, 2);
    CHECK(p[0].comm_ms == NULL && p[1].comm_ms == NULL && p[1].cost[0] == 1.0);
    /* on one shard a data-parallel table has no all-reduce: not missing */
    as_planrec_full_free(&p[1]);
    const double c1[1] = { 1.0 };
    p[1] = P(0, 2, "b", 1, c1);
    p[1].assign[0] = AS_DP;
    p[1].ndp = 1;
    CHECK_EQ_I64(as_eval_charge_comm(p + 1, 1, &BW1, &mis, &hv, NULL, NULL, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(mis, 1);                          /* carries no bytes at all */
    p[1].comm_in = as_calloc(1, sizeof(double));
    p[1].comm_out = as_calloc(1, sizeof(double));
    CHECK_EQ_I64(as_eval_charge_comm(p + 1, 1, &BW1, &mis, &hv, NULL, NULL, NULL, err, sizeof err), 1);
    CHECK_EQ_I64(mis, 0);
    CHECK_NEAR(p[1].cost[0], 1.0, 0);
    for (int j = 0; j < 2; j++) as_planrec_full_free(&p[j]);
}

/* the estimate of a plan with a data-parallel table: each shard's own kernel plus the
   data-parallel tables' kernel over the whole batch / K (its slice), also in cost_dp */
TEST(eval_estimate_data_parallel)
{
    as_costmodel *cm = as_costmodel_new(4, 3, 2, 1);
    as_featidx ft = { 0 };
    as_features f7, f8;
    memset(&f7, 0, sizeof f7);
    f7.id = 7; f7.dim = 16; f7.rows = 100; f7.pooling = 2; f7.batch = 8; f7.lookups = 16;
    f8 = f7;
    f8.id = 8; f8.dim = 64; f8.pooling = 5; f8.lookups = 40;
    as_featidx_add(&ft, &f8);
    as_featidx_add(&ft, &f7);
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    as_planrec_full p;
    char err[256];
    msgpack_sbuffer_init(&sb);
    pack_plan(&sb, "measured", 2, 1, 1);   /* tables 7 and 8 on shards 0 and 1 */
    unpack_one(&sb, &up);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), 0);
    p.assign[1] = AS_DP;                   /* table 8 on both shards */
    p.ndp = 1;
    CHECK_EQ_I64(as_eval_estimate(&p, 1, cm, &ft, err, sizeof err), 0);
    const as_features *a[] = { &f7 }, *b[] = { &f8 };
    const double c7 = as_costmodel_predict(cm, a, 1), c8 = as_costmodel_predict(cm, b, 1);
    CHECK_NEAR(p.cost[0], c7 + c8 / 2, 0);
    CHECK_NEAR(p.cost[1], c8 / 2, 0);     /* no table of its own: its slice alone */
    CHECK(p.cost_dp && p.cost_dp[0] == c8 / 2 && p.cost_dp[1] == c8 / 2);
    as_planrec_full_free(&p);
    /* its table without features: said, as data parallel */
    as_featidx only7 = { 0 };
    as_featidx_add(&only7, &f7);
    CHECK_EQ_I64(as_planrec_full_read(&up.data, &p, err, sizeof err), 0);
    p.assign[1] = AS_DP;
    p.ndp = 1;
    CHECK_EQ_I64(as_eval_estimate(&p, 1, cm, &only7, err, sizeof err), -1);
    CHECK_STR(err, "plan of task 1 (cost-greedy): table 8 (data parallel) has no features record in the input");
    as_planrec_full_free(&p);
    as_featidx_free(&only7);
    as_featidx_free(&ft);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    as_costmodel_free(cm);
}

/* ---- the floor (lib/eval/evalfloor.h) ------------------------------------------------------------ */

/* a `cost` record of the tables ids[0..n) into a fresh sb: cost < 0 nil (not measured), error
 * non-NULL an error, device "" none */
static void pack_cost(msgpack_sbuffer *sb, const int64_t *ids, int n, double cost, const char *error, const char *device)
{
    msgpack_sbuffer_clear(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3 + !!error + !!*device);
    as_pack_kv_str(&pk, "kind", "cost");
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(&pk, ids[i]);
    as_pack_str(&pk, "cost_ms");
    if (cost < 0) msgpack_pack_nil(&pk);
    else msgpack_pack_double(&pk, cost);
    if (error) as_pack_kv_str(&pk, "error", error);
    if (*device) as_pack_kv_str(&pk, "device", device);
}

/* take one hand-made cost record into s; the take's return */
static int take_cost(as_eval_singles *s, const int64_t *ids, int n, double cost, const char *error, const char *device,
                     char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_cost(&sb, ids, n, cost, error, device);
    msgpack_unpacked up;
    unpack_one(&sb, &up);
    int rc = as_eval_singles_take(s, &up.data, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* the floor of a list of single costs: their maximum, unknown when one is */
TEST(eval_floor_of_singles)
{
    int64_t u = -1;
    CHECK_NEAR(as_eval_floor((double[]){ 1, 3, 2 }, 3, &u), 3, 0);
    CHECK_EQ_I64(u, 0);
    CHECK(isnan(as_eval_floor((double[]){ 1, NAN, 2, NAN }, 4, &u)));
    CHECK_EQ_I64(u, 2);
    CHECK(isnan(as_eval_floor(NULL, 0, &u)));
    CHECK_EQ_I64(u, 0);
    CHECK_NEAR(as_eval_floor((double[]){ 0.5 }, 1, NULL), 0.5, 0);
}

/* single-table cost records: the median per table (odd and even counts), records of several
 * tables and unmeasured ones left out, another device's left out and counted, a bad cost
 * refused; the plans' floors from them, unknown where a table has none */
TEST(eval_floor_singles_median)
{
    as_eval_singles s = { 0 };
    char err[256];
    const int64_t t5[] = { 5 }, t6[] = { 6 }, t7[] = { 7 }, t56[] = { 5, 6 };
    CHECK_EQ_I64(take_cost(&s, t5, 1, 3.0, NULL, "cpu", err, sizeof err), 0);
    CHECK_EQ_I64(take_cost(&s, t5, 1, 1.0, NULL, "cpu", err, sizeof err), 0);
    CHECK_EQ_I64(take_cost(&s, t5, 1, 2.0, NULL, "cpu", err, sizeof err), 0);
    CHECK_EQ_I64(take_cost(&s, t5, 1, 100.0, NULL, "gpu", err, sizeof err), 0);   /* another device */
    CHECK_EQ_I64(take_cost(&s, t6, 1, 4.0, NULL, "cpu", err, sizeof err), 0);
    CHECK_EQ_I64(take_cost(&s, t6, 1, 8.0, NULL, "", err, sizeof err), 0);        /* no device: counts */
    CHECK_EQ_I64(take_cost(&s, t56, 2, 1.0, NULL, "cpu", err, sizeof err), 0);    /* two tables: not a single */
    CHECK_EQ_I64(take_cost(&s, t7, 1, -1, NULL, "cpu", err, sizeof err), 0);      /* nil cost_ms: not measured */
    CHECK_EQ_I64(take_cost(&s, t7, 1, 9.0, "does not fit", "cpu", err, sizeof err), 0);
    CHECK_EQ_I64(s.n, 6);
    CHECK_EQ_I64(s.skipped, 2);
    CHECK_EQ_I64(take_cost(&s, t7, 1, 0.0, NULL, "cpu", err, sizeof err), -1);
    CHECK_STR(err, "'cost_ms' = 0 is not a positive cost");

    int64_t c = -1;
    as_eval_singles_build(&s, "cpu");
    CHECK_EQ_I64(s.other_device, 1);
    CHECK_EQ_I64(s.used, 5);
    CHECK_NEAR(as_eval_singles_get(&s, 5, &c), 2, 0);   /* median of 1, 2, 3 */
    CHECK_EQ_I64(c, 3);
    CHECK_NEAR(as_eval_singles_get(&s, 6, &c), 6, 0);   /* even count: mean of 4 and 8 */
    CHECK_EQ_I64(c, 2);
    CHECK(isnan(as_eval_singles_get(&s, 7, &c)));
    CHECK_EQ_I64(c, 0);
    CHECK(isnan(as_eval_singles_get(&s, 4, NULL)));
    /* every device: the gpu record joins table 5's (1, 2, 3, 100: median 2.5) */
    as_eval_singles_build(&s, "");
    CHECK_EQ_I64(s.other_device, 0);
    CHECK_NEAR(as_eval_singles_get(&s, 5, NULL), 2.5, 0);
    as_eval_singles_build(&s, "cpu");

    /* plans over tables {5, 6}: floor 6; over {5, 7}: unknown, one table without a single cost */
    as_planrec_full p[2];
    p[0] = P(0, 0, "random", 2, (double[]){ 7, 1 });
    p[0].tables[0] = 5;
    p[0].tables[1] = 6;
    p[1] = P(0, 1, "random", 2, (double[]){ 7, 1 });
    p[1].tables[0] = 5;
    p[1].tables[1] = 7;
    as_eval_floor_measured(p, 2, &s);
    CHECK_NEAR(p[0].floor, 6, 0);
    CHECK_EQ_I64(p[0].floor_unknown, 0);
    CHECK(isnan(p[1].floor));
    CHECK_EQ_I64(p[1].floor_unknown, 1);
    as_eval_compute(p, 2);
    CHECK_NEAR(p[0].over_floor, 7.0 / 6.0, 1e-15);
    CHECK(isnan(p[1].over_floor));
    as_eval_floor_none(p, 2);
    CHECK(isnan(p[0].floor));
    CHECK_EQ_I64(p[0].floor_unknown, 2);
    for (int j = 0; j < 2; j++) as_planrec_full_free(&p[j]);
    as_eval_singles_free(&s);
}

/* one-piece cost records (as-bench --piece-singles): kept apart from the table's singles,
 * looked up by (table, piece); a split plan's floor is its costliest item alone */
TEST(eval_floor_piece_singles)
{
    as_eval_singles s = { 0 };
    char err[256];
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    const as_piece half0 = { 0, 16, 0, 100 }, half1 = { 16, 32, 0, 100 };
    const double costs[] = { 1.5, 2.5, 1.0, 3.0 };
    const as_piece *pcs[] = { &half0, &half0, &half1, NULL };
    for (int q = 0; q < 4; q++) {
        msgpack_sbuffer_clear(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 3 + (pcs[q] != NULL));
        as_pack_kv_str(&pk, "kind", "cost");
        as_pack_str(&pk, "tables");
        msgpack_pack_array(&pk, 1);
        msgpack_pack_int64(&pk, q < 3 ? 5 : 6);
        as_pack_str(&pk, "cost_ms");
        msgpack_pack_double(&pk, costs[q]);
        if (pcs[q]) {
            as_pack_str(&pk, "pieces");
            as_pack_pieces(&pk, pcs[q], 1);
        }
        msgpack_unpacked up;
        unpack_one(&sb, &up);
        CHECK_EQ_I64(as_eval_singles_take(&s, &up.data, err, sizeof err), 0);
        msgpack_unpacked_destroy(&up);
    }
    msgpack_sbuffer_destroy(&sb);
    as_eval_singles_build(&s, "");
    int64_t c = -1;
    CHECK(isnan(as_eval_singles_get(&s, 5, NULL)));               /* no record of table 5 whole */
    CHECK_NEAR(as_eval_singles_get_piece(&s, 5, &half0, &c), 2.0, 0);   /* median of 1.5, 2.5 */
    CHECK_EQ_I64(c, 2);
    CHECK_NEAR(as_eval_singles_get_piece(&s, 5, &half1, NULL), 1.0, 0);
    const as_piece rows = { 0, 32, 0, 50 };
    CHECK(isnan(as_eval_singles_get_piece(&s, 5, &rows, NULL)));
    CHECK_NEAR(as_eval_singles_get(&s, 6, NULL), 3.0, 0);
    /* a plan of table 5's two halves and table 6: floor 3 (table 6); without table 6's
       single, 2 would be wrong: unknown */
    as_planrec_full p = P(0, 0, "cost-greedy+split", 2, (double[]){ 4, 3 });
    items(&p, 3);
    const int64_t ids[3] = { 5, 5, 6 }, as[3] = { 0, 1, 1 };
    for (int i = 0; i < 3; i++) { p.tables[i] = ids[i]; p.assign[i] = as[i]; }
    p.pieces[0] = half0;
    p.pieces[1] = half1;
    p.pieces[2] = AS_PIECE_WHOLE;
    as_eval_floor_measured(&p, 1, &s);
    CHECK_NEAR(p.floor, 3.0, 0);
    CHECK_EQ_I64(p.floor_unknown, 0);
    p.tables[2] = 7;
    as_eval_floor_measured(&p, 1, &s);
    CHECK(isnan(p.floor));
    CHECK_EQ_I64(p.floor_unknown, 1);
    as_planrec_full_free(&p);
    as_eval_singles_free(&s);
}

/* floor-bound tasks: the best plan of the task at most margin above its floor (or below it);
 * unknown floors are not counted as known; the per-algorithm at-floor counts and mean
 * max/floor; the sentence */
TEST(eval_floor_bound)
{
    as_planrec_full p[7];
    /* task 0, floor 6: random 8, cost-greedy 6.1 (1.7 % above) */
    p[0] = P(0, 0, "random", 2, (double[]){ 8, 2 });
    p[1] = P(0, 0, "cost-greedy", 2, (double[]){ 6.1, 3 });
    /* task 1, floor 6: random 9, cost-greedy 5.9 (below the floor: noise) */
    p[2] = P(0, 1, "random", 2, (double[]){ 9, 1 });
    p[3] = P(0, 1, "cost-greedy", 2, (double[]){ 5.9, 5 });
    /* task 2, floor 4: random 8, cost-greedy 5 (25 % above) */
    p[4] = P(0, 2, "random", 2, (double[]){ 8, 2 });
    p[5] = P(0, 2, "cost-greedy", 2, (double[]){ 5, 5 });
    /* task 3: floor unknown */
    p[6] = P(0, 3, "cost-greedy", 2, (double[]){ 5, 5 });
    const double fl[7] = { 6, 6, 6, 6, 4, 4, NAN };
    for (int j = 0; j < 7; j++) p[j].floor = fl[j];
    as_eval_compute(p, 7);
    as_eval_floorbound fb;
    as_eval_floor_bound(p, 7, 0.02, &fb);
    CHECK_EQ_I64(fb.tasks, 4);
    CHECK_EQ_I64(fb.known, 3);
    CHECK_EQ_I64(fb.bound, 2);   /* tasks 0 and 1 */
    CHECK_EQ_I64(fb.runs, 1);
    as_eval_floor_bound(p, 7, 0, &fb);
    CHECK_EQ_I64(fb.bound, 1);   /* task 1 only: 6.1 > 6 */
    as_eval_floor_bound(p, 7, 0.25, &fb);
    CHECK_EQ_I64(fb.bound, 3);   /* task 2 too: 5 <= 4 x 1.25 */

    as_eval_floor_mark(p, 7, 0.02);
    CHECK_EQ_I64(p[0].at_floor, 0);
    CHECK_EQ_I64(p[1].at_floor, 1);
    CHECK_EQ_I64(p[3].at_floor, 1);
    CHECK_EQ_I64(p[5].at_floor, 0);
    CHECK_EQ_I64(p[6].at_floor, -1);
    as_eval_alg *a;
    int64_t na;
    as_eval_summary(p, 7, 0, &a, &na);
    const as_eval_alg *g = find(a, na, "cost-greedy"), *r = find(a, na, "random");
    CHECK(g && r);
    if (g && r) {
        CHECK_EQ_I64(g->nfloor, 3);
        CHECK_EQ_I64(g->at_floor, 2);
        CHECK_NEAR(g->floor_ratio_mean, (6.1 / 6 + 5.9 / 6 + 5.0 / 4) / 3, 1e-12);
        CHECK_NEAR(g->floor_margin, 0.02, 0);
        CHECK_EQ_I64(r->nfloor, 3);
        CHECK_EQ_I64(r->at_floor, 0);
        CHECK_NEAR(r->floor_ratio_mean, (8.0 / 6 + 9.0 / 6 + 8.0 / 4) / 3, 1e-12);
    }

    /* the sentence, the tables' columns and the verdict's */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_floor(f, AS_EVAL_TEXT, p, 7, 0.02, "measured");
    as_eval_print_summary(f, AS_EVAL_CSV, a, na, "measured", 0);
    as_eval_print_plans(f, AS_EVAL_CSV, p, 7, "measured");
    as_eval_verdict_info vi = { .label = "measured", .runs = 1, .floor_margin = 0.02 };
    as_eval_print_verdict(f, AS_EVAL_MARKDOWN, p, 7, a, na, &vi);
    as_eval_print_verdict(f, AS_EVAL_CSV, p, 7, a, na, &vi);
    fclose(f);
    CHECK(strstr(buf, "Floor-bound: 2 of 3 tasks (the best plan's slowest shard is at most 2 % above the floor, the costliest "
                      "table measured alone, or below it): in those, no table-wise plan can go below the floor, whatever the "
                      "planner, so balance and speedup cannot improve much; splitting tables is what can; the floor is unknown "
                      "for 1 more task (tables without a single-table cost).\n") != NULL);
    CHECK(strstr(buf, "\nrandom,measured,3,0,0,plans,3,0.203703704,0.0654728501,3,1,0,8.33333333,0.00450681807,0.402900589,1,1,1,,,,"
                      "3,1.61111111,0,0,0,0\n") != NULL);                /* n_floor, mean max/floor, at floor */
    CHECK(strstr(buf, "0,1,,cost-greedy,2,2,measured,5.9,5,5.45,0.847457627,1.52542373,2000,1000,true,,,6,0.983333333,true\n") != NULL);
    CHECK(strstr(buf, "0,3,,cost-greedy,2,2,measured,5,5,5,1,,2000,1000,true,,,,,\n") != NULL);
    CHECK(strstr(buf, "- **Floor-bound: 2 of 3 tasks** (the best plan's slowest shard") != NULL);
    CHECK(strstr(buf, "cost-greedy ≈ random,4,3,2,0.02,\n") != NULL);   /* tasks, known, floor-bound, margin */
    free(buf);

    /* estimated, margin 0; no floor known at all */
    as_eval_floorbound e = { .tasks = 2, .known = 2, .bound = 0, .runs = 1, .margin = 0 };
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_floor_words(f, AS_EVAL_TEXT, &e, "estimated");
    fputc('\n', f);
    e.known = 0;
    as_eval_floor_words(f, AS_EVAL_TEXT, &e, "measured");
    fputc('\n', f);
    fclose(f);
    CHECK_STR(buf, "Floor-bound: 0 of 2 tasks (the best plan's slowest shard is at or below the floor, the costliest table "
                   "predicted alone): every best plan is above its floor, so table-wise planning still has room\n"
                   "Floor: unknown for all 2 tasks: no single-table cost for their tables (give the cost dataset of as-bench "
                   "--singles with --singles FILE or in the input)\n");
    free(buf);
    free(a);
    for (int j = 0; j < 7; j++) as_planrec_full_free(&p[j]);
}

/* as-eval's input keeps the single-table cost records (not with a cost model); a bad one
 * names its record */
TEST(eval_input_singles)
{
    const char *path = in_tmp("eval-singles.ast");
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 1, NULL, "measured", 2, 1, "cpu");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    const int64_t t7[] = { 7 }, t8[] = { 8 }, t78[] = { 7, 8 };
    const double cost[4] = { 1.5, 0.5, 2.5, 3.0 };
    const int64_t *ids[4] = { t7, t8, t7, t78 };
    for (int i = 0; i < 4; i++) {
        pack_cost(&sb, ids[i], i == 3 ? 2 : 1, cost[i], NULL, "cpu");
        as_writer_raw(w, sb.data, sb.size);
    }
    as_writer_close(w);
    char *files[] = { (char *)path };
    char err[1024];
    as_eval_input in;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_I64(in.singles.n, 3);
    as_eval_singles_build(&in.singles, in.device);
    CHECK_NEAR(as_eval_singles_get(&in.singles, 7, NULL), 2.0, 0);   /* median of 1.5 and 2.5 */
    as_eval_floor_measured(in.plans, in.nplans, &in.singles);
    CHECK_NEAR(in.plans[0].floor, 2.0, 0);
    as_eval_input_free(&in);
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 1, err, sizeof err), 0);   /* estimate: not kept */
    CHECK_EQ_I64(in.singles.n, 0);
    as_eval_input_free(&in);

    const char *bad = in_tmp("eval-singles-bad.ast");
    w = as_writer_open(bad, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    pack_cost(&sb, t7, 1, 0.0, NULL, "cpu");   /* 0 ms: bad data */
    as_writer_raw(w, sb.data, sb.size);
    as_writer_close(w);
    files[0] = (char *)bad;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), -1);
    char want[1200];
    snprintf(want, sizeof want, "%s: record 2: cost: 'cost_ms' = 0 is not a positive cost", bad);
    CHECK_STR(err, want);
    as_eval_input_free(&in);
    /* --singles FILE reads the same records */
    as_eval_singles s = { 0 };
    CHECK_EQ_I64(as_eval_singles_file(&s, path, err, sizeof err), 0);
    CHECK_EQ_I64(s.n, 3);
    CHECK_EQ_I64(as_eval_singles_file(&s, bad, err, sizeof err), -1);
    CHECK_STR(err, want);
    as_eval_singles_free(&s);
    msgpack_sbuffer_destroy(&sb);
}

/* estimated plans: the floor is the cost model's prediction for the costliest table alone */
TEST(eval_floor_estimated)
{
    as_costmodel *cm = as_costmodel_new(4, 3, 2, 1);
    as_featidx ft = { 0 };
    as_features f7, f8;
    memset(&f7, 0, sizeof f7);
    f7.id = 7; f7.dim = 16; f7.rows = 100; f7.pooling = 2; f7.batch = 8; f7.lookups = 16;
    f8 = f7;
    f8.id = 8; f8.dim = 64; f8.pooling = 5; f8.lookups = 40;
    as_featidx_add(&ft, &f7);
    as_featidx_add(&ft, &f8);
    char err[256];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_planrec_full p[2];
    p[0] = P(0, 0, "cost-greedy", 2, (double[]){ 1, 1 });
    p[0].tables[0] = 7;
    p[0].tables[1] = 8;
    p[1] = P(0, 1, "cost-greedy", 2, (double[]){ 1, 1 });
    p[1].tables[0] = 7;
    p[1].tables[1] = 9;   /* no features */
    as_eval_floor_estimated(p, 2, cm, &ft);
    const as_features *a[] = { &f7 }, *b[] = { &f8 };
    double c7 = as_costmodel_predict(cm, a, 1), c8 = as_costmodel_predict(cm, b, 1);
    CHECK_NEAR(p[0].floor, c7 > c8 ? c7 : c8, 0);
    CHECK_EQ_I64(p[0].floor_unknown, 0);
    CHECK(isnan(p[1].floor));
    CHECK_EQ_I64(p[1].floor_unknown, 1);
    for (int j = 0; j < 2; j++) as_planrec_full_free(&p[j]);
    as_featidx_free(&ft);
    as_costmodel_free(cm);
}

/* --table comm: a shard's charge split by collective (all-to-all, row pieces, all-reduce);
   at 1 GiB/s, bytes / 2^30 in s */
TEST(eval_comm_by_collective)
{
    const as_comm_model BW1 = as_comm_bandwidth(1.0), BW0 = as_comm_bandwidth(0);
    char err[512];
    const double G = 1073741824.0, c[2] = { 1.0, 2.0 };
    as_planrec_full p = P(0, 1, "b", 2, c);
    p.assign[1] = AS_DP;
    p.ndp = 1;
    /* shard 0: in 0.5G, out 0.25G, of which row pieces 0.25G; shard 1: out 0.5G; all-reduce G each */
    p.comm_in = two(G / 2, 0);
    p.comm_out = two(G / 4, G / 2);
    p.comm_rw = two(G / 4, 0);
    p.comm_ar = two(G, G);
    double ms[AS_NSH];
    /* table-wise bytes 0.5G + 0.5G (1G), row pieces' 0.25G, no column pieces: shard 0
       (0.5 + 1/2) s, 0, (0.25 + 0.25/2) s, 1 s; shard 1 (0.5 + 1/2) s, 0, 0.125 s, 1 s */
    CHECK_EQ_I64(as_eval_comm_parts(&p, 0, &BW1, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 1000.0, 1e-9);
    CHECK_NEAR(ms[AS_SH_CW], 0.0, 0);
    CHECK_NEAR(ms[AS_SH_RW], 375.0, 1e-9);
    CHECK_NEAR(ms[AS_SH_DP], 1000.0, 1e-9);
    CHECK_EQ_I64(as_eval_comm_parts(&p, 1, &BW1, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 1000.0, 1e-9);
    CHECK_NEAR(ms[AS_SH_RW], 125.0, 1e-9);
    CHECK_NEAR(ms[AS_SH_DP], 1000.0, 1e-9);
    /* their sum is the charge: 2375 and 2125 ms, as eval_charge_comm_data_parallel's plan b */
    int64_t mis, hv;
    CHECK_EQ_I64(as_eval_charge_comm(&p, 1, &BW1, &mis, &hv, NULL, NULL, NULL, err, sizeof err), 1);
    CHECK_NEAR(p.comm_ms[0], 2375.0, 1e-9);
    CHECK_NEAR(p.comm_ms[1], 2125.0, 1e-9);
    as_eval_compute(&p, 1);
    /* the table: the slowest rank 0 (2376 ms), kernel 1 ms, 99.96 % communication */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_comm(f, AS_EVAL_CSV, &p, 1, &BW1);
    fclose(f);
    CHECK_STR(buf, "run,task,alg,rank,kernel_ms,table_wise_ms,column_wise_ms,row_wise_ms,data_parallel_ms,table_row_wise_ms,"
                   "comm_pct\n0,1,b,0,1,1000,0,375,1000,0,99.96\n");
    free(buf);
    /* no bytes, or no bandwidth: nothing to split */
    CHECK_EQ_I64(as_eval_comm_parts(&p, 0, &BW0, ms), -1);
    as_planrec_full_free(&p);
    p = P(0, 1, "a", 2, c);
    CHECK_EQ_I64(as_eval_comm_parts(&p, 0, &BW1, ms), -1);
    as_planrec_full_free(&p);
}

/* the sharding types a plan has come from its pieces, so that a plan from before
   comm_rw_bytes / comm_cw_bytes (every byte counted table-wise) still pays each type's
   alphas: 4 entries on 4 ranks, table 0 whole, table 1 in two column pieces, table 2 in two
   row pieces (here 5 entries over 4 ranks) */
TEST(eval_comm_types_from_pieces)
{
    const double c[4] = { 1, 1, 1, 1 };
    as_planrec_full p = P(0, 0, "x", 4, c);
    items(&p, 5);
    static const int64_t tb[5] = { 0, 1, 1, 2, 2 }, as[5] = { 0, 1, 2, 3, 0 };
    memcpy(p.tables, tb, sizeof tb);
    memcpy(p.assign, as, sizeof as);
    p.pieces[1] = (as_piece){ 0, 8, 0, 10 };
    p.pieces[2] = (as_piece){ 8, 16, 0, 10 };
    p.pieces[3] = (as_piece){ 0, 16, 0, 5 };
    p.pieces[4] = (as_piece){ 0, 16, 5, 10 };
    p.comm_in = as_calloc(4, sizeof(double));
    p.comm_out = as_calloc(4, sizeof(double));
    for (int k = 0; k < 4; k++) p.comm_in[k] = 1e6;
    /* every byte table-wise: 1e6 own + 4e6 / 4, at 1 GiB/s */
    const as_comm_model g1 = as_comm_bandwidth(1.0);
    double t, pt[AS_NSH];
    CHECK_EQ_I64(as_eval_comm_ms(&p, 0, &g1, &t, pt), 0);
    CHECK_NEAR(t, 2e6 / 1073741824.0 * 1e3, 1e-12);
    CHECK_NEAR(pt[AS_SH_TW], t, 0);
    CHECK_NEAR(pt[AS_SH_CW] + pt[AS_SH_RW] + pt[AS_SH_DP], 0, 0);
    CHECK_EQ_I64(as_eval_comm_ms(&p, 4, &g1, &t, pt), -1);
    /* nvlink8: 3 all-to-alls of each of table- and column-wise, 1 and 2 ring calls of
       row-wise: 6 x 10.5 + 10.5 + 2 x 10.8 us on every rank, whatever its bytes */
    as_comm_model m;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &m, err, sizeof err), 0);
    double ms[AS_NSH];
    CHECK_EQ_I64(as_eval_comm_parts(&p, 2, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_CW], 0.0315, 1e-12);
    CHECK_NEAR(ms[AS_SH_RW], 0.0105 + 0.0216, 1e-12);
    /* its ids' message max(1e6, 4e6 / 4), K = 4: 3/4 leave the rank */
    CHECK_NEAR(ms[AS_SH_TW], 0.0315 + 1e6 * 3.0 / 4.0 / 370e6, 1e-12);
    /* without a row piece left, no row-wise alphas */
    p.pieces[3] = p.pieces[4] = AS_PIECE_WHOLE;
    p.tables[4] = 3;
    CHECK_EQ_I64(as_eval_comm_parts(&p, 2, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_RW], 0, 0);
    as_planrec_full_free(&p);
}

/* a table's row pieces all on one host of the model's GPUs: table-row-wise (h100-ib, torchrec:L);
   spread over hosts, or under a model without hosts: row-wise */
TEST(eval_comm_table_row_wise)
{
    double c[16];
    for (int k = 0; k < 16; k++) c[k] = 1;
    as_planrec_full p = P(0, 0, "x", 16, c);
    items(&p, 9);
    p.comm_in = as_calloc(16, sizeof(double));
    p.comm_out = as_calloc(16, sizeof(double));
    p.comm_rw = as_calloc(16, sizeof(double));
    p.comm_rw_in = as_calloc(16, sizeof(double));
    p.tables[0] = 0, p.assign[0] = 0, p.pieces[0] = AS_PIECE_WHOLE;
    p.comm_in[0] = 1e5, p.comm_out[0] = 1e6;
    for (int i = 1; i < 9; i++) {   /* table 1 in 8 row blocks on ranks 8..15: the second host */
        p.tables[i] = 1, p.assign[i] = 7 + i, p.pieces[i] = (as_piece){ 0, 16, 10 * (i - 1), 10 * i };
        p.comm_in[7 + i] = p.comm_rw_in[7 + i] = 2e5;
        p.comm_out[7 + i] = 4e6;
        p.comm_rw[7 + i] = 4.2e6;
    }
    as_comm_load l[16];
    CHECK_EQ_I64(as_eval_comm_loads(&p, 8, l), 0);
    CHECK(l[9].has[AS_SH_TWRW] && !l[9].has[AS_SH_RW] && l[9].has[AS_SH_TW]);
    CHECK_NEAR(l[9].own_in[AS_SH_TWRW], 2e5, 0);
    CHECK_NEAR(l[9].own_out[AS_SH_TWRW], 4e6, 0);
    CHECK_NEAR(l[9].all_out[AS_SH_TWRW], 32e6, 0);
    CHECK_NEAR(l[0].own_out[AS_SH_TW], 1e6, 0);
    /* h100-ib charges it within the host, and only a 1/8 across */
    as_comm_model ib, n8;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("h100-ib", &ib, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &n8, err, sizeof err), 0);
    double ms, parts[AS_NSH];
    CHECK_EQ_I64(as_eval_comm_ms(&p, 9, &ib, &ms, parts), 0);
    const double want = as_comm_call_us(&ib, 16, AS_COLL_A2A, 2e5) + as_comm_call_us(&n8, 8, AS_COLL_RS, 2e6) +
                        as_comm_call_us(&n8, 8, AS_COLL_AG, 2e6) + 2 * as_comm_call_us(&ib, 16, AS_COLL_A2A, 2e6 / 8);
    CHECK_NEAR(parts[AS_SH_TWRW], want * 1e-3, 1e-12);
    CHECK_NEAR(parts[AS_SH_RW], 0, 0);
    /* without hosts (local 0), or spread over two hosts: row-wise */
    CHECK_EQ_I64(as_eval_comm_loads(&p, 0, l), 0);
    CHECK(l[9].has[AS_SH_RW] && !l[9].has[AS_SH_TWRW]);
    p.assign[1] = 0;
    CHECK_EQ_I64(as_eval_comm_loads(&p, 8, l), 0);
    CHECK(l[9].has[AS_SH_RW] && !l[9].has[AS_SH_TWRW]);
    as_planrec_full_free(&p);
}
