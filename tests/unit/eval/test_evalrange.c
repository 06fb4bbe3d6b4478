/* test_evalrange.c - as-eval --table range (lib/eval/evalrange.h): how far a task's choice
 * holds as the communication's bandwidth and latency change, on two hand-made plans of
 * K = 2 under the bandwidth model at 2 GiB/s.
 *
 * Each plan has one whole table a rank and b bytes of ids in at each (no outputs): a shard's
 * table-wise bytes are its own b plus everyone's 2b over K = 2, 2b, which at 2 GiB/s take
 * b / GiB x 1000 ms; b = C GiB / 1000 makes it C ms at 1x, and C / x at x times the
 * bandwidth (the bandwidth model has no latency: the lat knob changes nothing).
 *   "torchrec"  kernels [10, 9], C = 8: its slowest rank (0) costs 10 + 8 / x
 *   "low-comm"  kernels [14, 13], C = 2: 14 + 2 / x
 * They cost the same at 10 + 8 / x = 14 + 2 / x, x = 1.5 (3 GiB/s): low-comm wins below,
 * torchrec above. At 1x low-comm (16 < 18) is the winner, so the default choice; the
 * reference is torchrec (its label). Over the plausible range (0.5x to 2x along each
 * knob) the worst cases are at the ends: torchrec's at 0.5x, 26 / 18 = 13 / 9; low-comm's
 * at 2x, 15 / 14. */
#include "unit.h"

#include "evalrange.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0
#define BYTES(ms) ((ms) * GIB / 1000.0)   /* ids in at each rank for ms ms at 2 GiB/s */

static int64_t tables_a[2] = { 1, 2 }, tables_b[2] = { 1, 2 }, assign_ab[2] = { 0, 1 };
static double in_a[2] = { BYTES(8), BYTES(8) }, in_b[2] = { BYTES(2), BYTES(2) }, out0[2] = { 0, 0 };
static double cms_a[2] = { 8, 8 }, cost_a[2] = { 18, 17 };
static double cms_b[2] = { 2, 2 }, cost_b[2] = { 16, 15 };

static as_planrec_full plan(const char *alg, int64_t task, int64_t *tables, double *in, double *cms, double *cost)
{
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.run = 0, q.task = task, q.K = 2, q.T = 2, q.feasible = 1;
    snprintf(q.alg, sizeof q.alg, "%s", alg);
    q.tables = tables, q.assign = assign_ab, q.cost = cost;
    q.comm_in = in, q.comm_out = out0, q.comm_ms = cms;
    return q;
}

static as_planrec_full plan_a(int64_t task) { return plan("torchrec", task, tables_a, in_a, cms_a, cost_a); }
static as_planrec_full plan_b(int64_t task) { return plan("low-comm", task, tables_b, in_b, cms_b, cost_b); }

static char *range(as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m, const as_eval_range_cfg *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_range(f, fmt, p, n, m, c);
    fclose(f);
    return buf;
}

#define HEAD "run,task,what,knob,x_from,x_to,alg,value\n"

/* CSV: the choice (the winner at 1x), each knob's segments with the change of winner at
 * 1.5x, the crossing against the reference there (-1: the choice is the faster below it),
 * each candidate's worst case and the robust pick (the choice, which does not hold: at 2x
 * torchrec is 1 / 15 faster) */
TEST(evalrange_csv_default_choice)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    const as_eval_range_cfg c = { .tie = 0.01 };
    char *s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK_STR(s, HEAD
                 "0,3,chosen,,,,low-comm,1\n"
                 "0,3,segment,bw,0.0625,1.5,low-comm,0\n"
                 "0,3,segment,bw,1.5,16,torchrec,0\n"
                 "0,3,crossing,bw,1.5,,low-comm,-1\n"
                 "0,3,segment,a2a-bw,0.0625,1.5,low-comm,0\n"
                 "0,3,segment,a2a-bw,1.5,16,torchrec,0\n"
                 "0,3,crossing,a2a-bw,1.5,,low-comm,-1\n"
                 "0,3,segment,lat,0.0625,16,low-comm,0\n"
                 "0,3,worst,,,,torchrec,1.44444\n"
                 "0,3,worst,,,,low-comm,1.07143\n"
                 "0,3,robust,,,,low-comm,0\n");
    free(s);
    /* the plans' order does not change the choice or the crossing, only the worst rows' */
    const as_planrec_full r[2] = { plan_b(3), plan_a(3) };
    s = range(AS_EVAL_CSV, r, 2, &m, &c);
    CHECK(strstr(s, "0,3,chosen,,,,low-comm,1\n0,3,segment,bw,0.0625,1.5,low-comm,0\n") != NULL);
    CHECK(strstr(s, "0,3,crossing,bw,1.5,,low-comm,-1\n") != NULL);
    CHECK(strstr(s, "0,3,worst,,,,low-comm,1.07143\n0,3,worst,,,,torchrec,1.44444\n") != NULL);
    free(s);
    /* at 1 GiB/s every plan moves twice as long: 10 + 16 / x = 14 + 4 / x at x = 3, the
       same 3 GiB/s */
    const as_comm_model m1 = as_comm_bandwidth(1);
    s = range(AS_EVAL_CSV, p, 2, &m1, &c);
    CHECK(strstr(s, "0,3,segment,bw,0.0625,3,low-comm,0\n0,3,segment,bw,3,16,torchrec,0\n0,3,crossing,bw,3,,low-comm,-1\n")
          != NULL);
    free(s);
}

/* the chosen plan given (--chosen torchrec --versus low-comm): the crossing's sign turns
 * (+1: the choice is the faster above 1.5x); the robust pick is low-comm (15 / 14 < 13 / 9) */
TEST(evalrange_csv_chosen_and_versus)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    const as_eval_range_cfg c = { .chosen = "torchrec", .versus = "low-comm", .tie = 0.01 };
    char *s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK(strncmp(s, HEAD "0,3,chosen,,,,torchrec,1\n", strlen(HEAD) + 25) == 0);
    CHECK(strstr(s, "0,3,segment,bw,0.0625,1.5,low-comm,0\n0,3,segment,bw,1.5,16,torchrec,0\n") != NULL);
    CHECK(strstr(s, "0,3,crossing,bw,1.5,,torchrec,1\n") != NULL);
    CHECK(strstr(s, "0,3,crossing,a2a-bw,1.5,,torchrec,1\n") != NULL);
    CHECK(strstr(s, "crossing,lat") == NULL);
    CHECK(strstr(s, "0,3,robust,,,,low-comm,0\n") != NULL);
    free(s);
    /* the reference the choice itself: no crossing */
    const as_eval_range_cfg same = { .chosen = "torchrec", .versus = "torchrec", .tie = 0.01 };
    s = range(AS_EVAL_CSV, p, 2, &m, &same);
    CHECK(strstr(s, "crossing") == NULL);
    free(s);
}

/* the choice holds when it is within tie of the best at every point: low-comm's worst is
 * 15 / 14 = 1.0714 at 2x, so it holds within 8 %, not within 7 % */
TEST(evalrange_holds_within_tie)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    as_eval_range_cfg c = { .tie = 0.08 };
    char *s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK(strstr(s, "0,3,robust,,,,low-comm,1\n") != NULL);
    free(s);
    s = range(AS_EVAL_TEXT, p, 2, &m, &c);
    CHECK(strstr(s, "#   over the plausible range (each knob 0.5x to 2x): the choice low-comm is the best everywhere "
                    "(within 8 %)\n") != NULL);
    free(s);
    c.tie = 0.07;
    s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK(strstr(s, "0,3,robust,,,,low-comm,0\n") != NULL);
    free(s);
}

/* the words: each knob's winners with the all-to-all's bandwidth in brackets (1x = 2 GiB/s,
 * the crossing at 3 GiB/s), the crossing against the reference, the worst case */
TEST(evalrange_text)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    const as_eval_range_cfg c = { .tie = 0.01 };
    char *s = range(AS_EVAL_TEXT, p, 2, &m, &c);
    CHECK_STR(s, "# task 3 (run 0), the choice low-comm of 2 candidates, as the communication by 2 GiB/s changes:\n"
                 "#   every collective's bandwidth (x the model's; in brackets the all-to-all's, GiB/s, 1x = 2): "
                 "low-comm below 1.5x (3), torchrec from 1.5x (3)\n"
                 "#     against torchrec: the choice is faster below, slower above 1.5x (3) (the crossing)\n"
                 "#   the all-to-all's bandwidth (x the model's; in brackets the all-to-all's, GiB/s, 1x = 2): "
                 "low-comm below 1.5x (3), torchrec from 1.5x (3)\n"
                 "#     against torchrec: the choice is faster below, slower above 1.5x (3) (the crossing)\n"
                 "#   every call's latency (x the model's): low-comm wins from 0.0625x to 16x\n"
                 "#   over the plausible range (each knob 0.5x to 2x): another candidate wins in part of it; the worst "
                 "case over the best: the choice low-comm 1.071x (still the least worst case)\n"
                 "\n");
    free(s);
    /* the other choice: the least worst case is another plan's */
    const as_eval_range_cfg o = { .chosen = "torchrec", .versus = "low-comm", .tie = 0.01 };
    s = range(AS_EVAL_TEXT, p, 2, &m, &o);
    CHECK(strstr(s, "#     against low-comm: the choice is slower below, faster above 1.5x (3) (the crossing)\n") != NULL);
    CHECK(strstr(s, "the choice torchrec 1.444x, low-comm 1.071x (the least worst case)\n") != NULL);
    free(s);
}

TEST(evalrange_markdown)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    const as_eval_range_cfg c = { .tie = 0.01 };
    char *s = range(AS_EVAL_MARKDOWN, p, 2, &m, &c);
    const char *first = "**How far the choice holds**, task 3 (run 0), the choice `low-comm` of 2 candidates, as the "
                        "communication by 2 GiB/s changes:\n\n";
    CHECK(strncmp(s, first, strlen(first)) == 0);
    CHECK(strstr(s, "\n- every collective's bandwidth (x the model's; in brackets the all-to-all's, GiB/s, 1x = 2): "
                    "`low-comm` below 1.5x (3), `torchrec` from 1.5x (3)\n") != NULL);
    CHECK(strstr(s, "\n  - against `torchrec`: the choice is faster below, slower above 1.5x (3) (the crossing)\n") != NULL);
    CHECK(strstr(s, "\n- every call's latency (x the model's): `low-comm` wins from 0.0625x to 16x\n") != NULL);
    CHECK(strstr(s, "the choice `low-comm` 1.071x (still the least worst case)\n\n") != NULL);
    free(s);
}

/* --range-model: another model's point in the worst case. 0.5 GiB/s is 0.25x: torchrec
 * 10 + 32 = 42, low-comm 14 + 8 = 22, torchrec's worst 42 / 22 = 1.90909. A model that
 * does not hold for K = 2 (nvlink8 cut to one GPU here) is left out, and named */
TEST(evalrange_extra_models)
{
    const as_comm_model m = as_comm_bandwidth(2);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    as_comm_model extra[2];
    extra[0] = as_comm_bandwidth(0.5);
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &extra[1], err, sizeof err), 0);
    extra[1].max_ranks = 1;
    as_eval_range_cfg c = { .extra = extra, .nextra = 1, .tie = 0.01 };
    char *s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK(strstr(s, "0,3,worst,,,,torchrec,1.90909\n0,3,worst,,,,low-comm,1.07143\n0,3,robust,,,,low-comm,0\n") != NULL);
    /* the segments are the grid's alone */
    CHECK(strstr(s, "0,3,segment,bw,0.0625,1.5,low-comm,0\n") != NULL);
    free(s);
    s = range(AS_EVAL_TEXT, p, 2, &m, &c);
    CHECK(strstr(s, "#   over the plausible range (each knob 0.5x to 2x, and 1 other model): ") != NULL);
    free(s);
    c.nextra = 2;
    s = range(AS_EVAL_CSV, p, 2, &m, &c);
    CHECK(strstr(s, "0,3,worst,,,,torchrec,1.90909\n") != NULL);
    free(s);
    s = range(AS_EVAL_TEXT, p, 2, &m, &c);
    CHECK(strstr(s, "(each knob 0.5x to 2x, and 1 other model): ") != NULL);
    CHECK(strstr(s, "; left out, not holding for 2 ranks: nvlink8\n") != NULL);
    free(s);
}

/* the candidates: feasible plans of every cost known and communication bytes, of the
 * labels given (--candidates); a task per run and task, its plans wherever they lie; a task
 * without one counted */
TEST(evalrange_candidates_and_tasks)
{
    const as_comm_model m = as_comm_bandwidth(2);
    double nan_cost[2] = { NAN, 15 };
    as_planrec_full p[6] = { plan_a(3), plan_a(4), plan_b(4), plan_b(3), plan_b(5), plan_a(5) };
    p[1].feasible = 0;              /* task 4: torchrec infeasible, low-comm's cost unknown */
    p[2].cost = nan_cost;
    p[4].comm_in = p[4].comm_out = NULL;   /* task 5: low-comm without bytes */
    const as_eval_range_cfg c = { .tie = 0.01 };
    char *s = range(AS_EVAL_TEXT, p, 6, &m, &c);
    CHECK(strstr(s, "# task 3 (run 0), the choice low-comm of 2 candidates") != NULL);
    CHECK(strstr(s, "# task 4 ") == NULL);
    /* task 5: torchrec alone, the winner everywhere; it holds */
    CHECK(strstr(s, "# task 5 (run 0), the choice torchrec of 1 candidate, as") != NULL);
    CHECK(strstr(s, "#   every collective's bandwidth (x the model's; in brackets the all-to-all's, GiB/s, 1x = 2): "
                    "torchrec wins from 0.0625x to 16x\n") != NULL);
    CHECK(strstr(s, "the choice torchrec is the best everywhere (within 1 %)\n") != NULL);
    CHECK(strstr(s, "\n# 1 task without a candidate (feasible, every cost known, communication bytes)\n\n") != NULL);
    free(s);
    s = range(AS_EVAL_CSV, p, 6, &m, &c);
    CHECK(strstr(s, "0,5,worst,,,,torchrec,1\n0,5,robust,,,,torchrec,1\n") != NULL);
    CHECK(strstr(s, ",4,") == NULL);
    CHECK(strstr(s, "without") == NULL);
    free(s);
    /* --candidates low-comm: task 3's low-comm alone; tasks 4 and 5 have none */
    const char *const only[1] = { "low-comm" };
    const as_eval_range_cfg oc = { .only = only, .nonly = 1, .tie = 0.01 };
    s = range(AS_EVAL_TEXT, p, 6, &m, &oc);
    CHECK(strstr(s, "# task 3 (run 0), the choice low-comm of 1 candidate") != NULL);
    CHECK(strstr(s, "torchrec") == NULL);
    CHECK(strstr(s, "# 2 tasks without a candidate (feasible, every cost known, communication bytes, one of --candidates)\n")
          != NULL);
    free(s);
    /* another run is another task */
    as_planrec_full r[2] = { plan_a(3), plan_b(3) };
    r[1].run = 1;
    s = range(AS_EVAL_CSV, r, 2, &m, &c);
    CHECK(strstr(s, "0,3,chosen,,,,torchrec,1\n") != NULL);
    CHECK(strstr(s, "1,3,chosen,,,,low-comm,1\n") != NULL);
    free(s);
}

/* nothing charged: one line in words, nothing in CSV */
TEST(evalrange_not_modelled)
{
    const as_comm_model off = as_comm_bandwidth(0);
    const as_planrec_full p[2] = { plan_a(3), plan_b(3) };
    const as_eval_range_cfg c = { .tie = 0.01 };
    char *s = range(AS_EVAL_TEXT, p, 2, &off, &c);
    CHECK_STR(s, "# how far the choice holds: communication not modelled (--comm-gbps 0)\n\n");
    free(s);
    s = range(AS_EVAL_MARKDOWN, p, 2, &off, &c);
    CHECK_STR(s, "how far the choice holds: communication not modelled (--comm-gbps 0)\n\n");
    free(s);
    s = range(AS_EVAL_CSV, p, 2, &off, &c);
    CHECK_STR(s, "");
    free(s);
    /* no plans: the header alone */
    const as_comm_model m = as_comm_bandwidth(2);
    s = range(AS_EVAL_CSV, p, 0, &m, &c);
    CHECK_STR(s, HEAD);
    free(s);
}
