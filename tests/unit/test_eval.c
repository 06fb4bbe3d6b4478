/* test_eval.c - plan evaluation figures checked by hand on a small example: balance,
 * speedup over random, mean ± std per algorithm (over plans and over runs), exclusions;
 * `train` records and the rows of the training-curve table. */
#include "unit.h"

#include "common.h"
#include "eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_eval_plan P(int64_t run, int64_t task, const char *alg, int K, const double *cost)
{
    as_eval_plan p;
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
    as_eval_plan p[6];
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
    CHECK(strstr(buf, "| lookup-greedy | 2 | 0 | 66.7 ± 33.3 | 1.667 ± 0.333 | 3.0000 |") != NULL);
    CHECK(strstr(buf, "lookup-greedy,measured,2,0,0,plans,2,0.666666667,0.333333333,2,1.66666667,0.333333333,3\n") != NULL);
    CHECK(strstr(buf, "costs measured") != NULL);
    free(buf);
    free(a);
    for (int i = 0; i < 6; i++) as_eval_plan_free(&p[i]);
}

/* runs: run 1 adds task 0 with random [2, 2] and lookup [1, 2] (balance 0.5, speedup 1).
 * Over plans: balance of lookup = mean(1, 1/3, 1/2) = 11/18; over runs: run means 2/3 and
 * 1/2 -> 7/12 ± 1/12. Speedup compares within a run only. */
TEST(eval_runs)
{
    as_eval_plan p[6];
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
    free(a);
    for (int i = 0; i < 6; i++) as_eval_plan_free(&p[i]);
}

/* no random plan: no speedup; an unknown algorithm comes after the canonical ones */
TEST(eval_no_random)
{
    as_eval_plan p[2];
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
    for (int i = 0; i < 2; i++) as_eval_plan_free(&p[i]);
    double v[] = { 1, 2, 3, 4, NAN }, m, s;
    CHECK_EQ_I64(as_eval_meanstd(v, 5, &m, &s), 4);
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
    as_eval_plan p;
    char err[256];
    CHECK_EQ_I64(as_eval_plan_read(&up.data, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.task, 3);
    CHECK_EQ_I64(p.K, 2);
    CHECK_EQ_I64(p.T, 3);
    CHECK_NEAR(p.cost[0], 1.5, 0);
    CHECK(isnan(p.cost[1]));
    CHECK_EQ_I64(p.cost_kind, 1);
    CHECK_EQ_I64(p.mem[1], 20);
    CHECK(!p.feasible);   /* table 9 unplaced */
    as_eval_plan_free(&p);
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
