/* test_evalranks.c - the per-rank planner statistics (lib/eval/evalranks.h) on a hand-made plan:
 * which rank is the slowest (by cost, else by prediction when no cost is known, never the two
 * mixed, else none), the memory terms and the slowest rank's items by their cost alone in
 * the text and CSV tables. */
#include "unit.h"

#include "evalranks.h"
#include "reclimits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2 ranks: a (rank 0), b's two row blocks on ranks 0 and 1, c (rank 1) */
static int64_t TABLES[4] = { 0, 1, 1, 2 }, ASSIGN[4] = { 0, 0, 1, 1 };
static as_piece PIECES[4] = { { 0, 0, 0, 0 }, { 0, 8, 0, 50 }, { 0, 8, 50, 100 }, { 0, 0, 0, 0 } };
static char NAMES[4][128] = { "a", "b", "b", "c" };

static as_planrec_full hand(double *cost, double *pred, double *item_pred, uint64_t *mterm)
{
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.task = 3;
    snprintf(q.alg, sizeof q.alg, "x");
    q.K = 2;
    q.T = 4;
    q.tables = TABLES;
    q.assign = ASSIGN;
    q.pieces = PIECES;
    q.names = NAMES;
    q.cost = cost;
    q.pred = pred;
    q.item_pred = item_pred;
    q.mterm = mterm;
    q.mem_cap = 1000;
    q.feasible = 1;
    return q;
}

static char *print(const as_planrec_full *q, as_eval_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_ranks(f, fmt, q, 1, "measured", NULL);
    fclose(f);
    return buf;
}

TEST(evalranks_slowest_rank)
{
    double cost[2] = { 1.0, 2.0 }, pred[2] = { 3.0, 1.0 };
    as_planrec_full q = hand(cost, pred, NULL, NULL);
    const char *by = NULL;
    CHECK_EQ_I64(as_eval_slowest_rank(&q, "measured", &by), 1);     /* by cost */
    CHECK_STR(by, "measured");
    cost[0] = cost[1] = NAN;                                         /* no cost known: by prediction */
    CHECK_EQ_I64(as_eval_slowest_rank(&q, "measured", &by), 0);
    CHECK_STR(by, "predicted");
    q.pred = NULL;                                                   /* neither: none */
    CHECK_EQ_I64(as_eval_slowest_rank(&q, "measured", &by), -1);
}

/* one rank measured, the other not (nil): predicted and measured are never compared, so no
   rank is the slowest, neither the unmeasured rank by its prediction nor the measured one */
TEST(evalranks_slowest_rank_never_mixes_predicted_and_measured)
{
    double cost[2] = { NAN, 5.0 }, pred[2] = { 3.0, 1.0 };
    as_planrec_full q = hand(cost, pred, NULL, NULL);
    const char *by = NULL;
    CHECK_EQ_I64(as_eval_slowest_rank(&q, "measured", &by), -1);
    cost[0] = 9.0;
    cost[1] = NAN;
    CHECK_EQ_I64(as_eval_slowest_rank(&q, "measured", &by), -1);
    cost[0] = NAN;
    cost[1] = 5.0;
    char *t = print(&q, AS_EVAL_TEXT);
    CHECK(strstr(t, "no slowest rank: rank 0's cost is unknown (nil) and a prediction is not compared with the other "
                    "ranks' measured costs") != NULL);
    CHECK(strstr(t, "\n *") == NULL);                                  /* no rank starred */
    free(t);
    char *c = print(&q, AS_EVAL_CSV);
    CHECK(strstr(c, ",measured,,,\"a;b[c 0:8, r 0:50)\"") != NULL);  /* rank 0: no cost, slowest empty */
    CHECK(strstr(c, ",measured,5,,\"b[c 0:8, r 50:100);c\"") != NULL);
    CHECK(strstr(c, "predicted") == NULL);
    free(c);
}

TEST(evalranks_text_and_csv)
{
    double cost[2] = { 4.0, 2.0 }, pred[2] = { 3.0, 2.5 }, item_pred[4] = { 1.0, 3.0, 1.5, 1.0 };
    uint64_t mterm[6] = { 100, 50, 10, 20, 1, 2 };   /* weights of ranks 0, 1; optimizer; pipeline */
    as_planrec_full q = hand(cost, pred, item_pred, mterm);
    char *t = print(&q, AS_EVAL_TEXT);
    /* rank 0 is the slowest: 4 ms, 1.33x the mean of 3, the next 50 % faster; its items by
       prediction alone, b's block before a, shares of their 4 ms */
    CHECK(strstr(t, "slowest rank 0: 4.0000 ms measured (predicted 3.0000 ms), 1.33x the mean rank; the next, rank 1, "
                    "2.0000 ms (50.0 % faster)") != NULL);
    CHECK(strstr(t, "its items by their cost alone: b[c 0:8, r 0:50) (predicted 3.0000 ms, 75 %); a (predicted 1.0000 ms, 25 %)") != NULL);
    CHECK(strstr(t, "a, b[c 0:8, r 0:50)") != NULL);                /* rank 0's items in plan order */
    CHECK(strstr(t, " 1.333") != NULL);                               /* cost/pred of rank 0 */
    free(t);
    char *c = print(&q, AS_EVAL_CSV);
    /* rank 0: 1 piece, memory 100 + 10 + 1, cap 1000 */
    CHECK(strstr(c, "\n0,3,x,0,2,1,100,10,1,111,1000,3,measured,4,measured,\"a;b[c 0:8, r 0:50)\",1;3,\n") != NULL);
    CHECK(strstr(c, "\n0,3,x,1,2,1,50,20,2,72,1000,2.5,measured,2,,\"b[c 0:8, r 50:100);c\",1.5;1,\n") != NULL);
    free(c);
}

/* a data-parallel table (assign -2): listed on every rank, marked (dp), counted among each
   rank's items; the line under the table says so, with the all-reduce bytes and the ranks'
   data-parallel parts; the slowest rank's items include it (its single cost over K) */
TEST(evalranks_data_parallel)
{
    static int64_t tables[3] = { 0, 1, 2 }, assign[3] = { 0, AS_DP, 1 };
    static char names[3][128] = { "a", "b", "c" };
    double cost[2] = { 4.0, 2.0 }, cost_dp[2] = { 1.5, NAN }, comm_ar[2] = { 2.5e6, 2.5e6 };
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.task = 3;
    snprintf(q.alg, sizeof q.alg, "x");
    q.K = 2;
    q.T = 3;
    q.tables = tables;
    q.assign = assign;
    q.names = names;
    q.cost = cost;
    q.feasible = 1;
    q.ndp = 1;
    q.cost_dp = cost_dp;
    q.comm_ar = comm_ar;
    char *t = print(&q, AS_EVAL_TEXT);
    CHECK(strstr(t, "\n *   0     2      0    4.0000  a, b (dp)\n") != NULL);
    CHECK(strstr(t, "\n     1     2      0    2.0000  b (dp), c\n") != NULL);
    CHECK(strstr(t, "  data parallel: 1 table on every rank, marked (dp) (each rank looks up its share of the batch; the "
                    "gradients are all-reduced); all-reduce 2.500 MB sent per rank at most; their part of each rank's "
                    "cost: 1.5000, n/a ms\n") != NULL);
    if (!CHECK(strstr(t, "a, b (dp)") != NULL) || getenv("SHOW")) fprintf(stderr, "%s", t);
    free(t);
    char *c = print(&q, AS_EVAL_CSV);
    CHECK(strstr(c, "\n0,3,x,0,2,0,,,,,,,measured,4,measured,\"a;b (dp)\",,\n") != NULL);
    CHECK(strstr(c, "\n0,3,x,1,2,0,,,,,,,measured,2,,\"b (dp);c\",,\n") != NULL);
    CHECK(strstr(c, "data parallel") == NULL);                    /* CSV: the rows alone */
    free(c);
    /* the slowest rank's items alone: b's single cost of 3 ms counts as 3 / 2 on a rank */
    as_eval_singles s;
    memset(&s, 0, sizeof s);
    s.nu = 2;
    int64_t uid[2] = { 0, 1 }, ucount[2] = { 1, 1 };
    double umed[2] = { 2.0, 3.0 };
    s.uid = uid;
    s.ucount = ucount;
    s.umedian = umed;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_ranks(f, AS_EVAL_TEXT, &q, 1, "measured", &s);
    fclose(f);
    if (!CHECK(strstr(buf, "its items by their cost alone: a (measured 2.0000 ms, 57 %); b (dp) (measured 1.5000 ms, 43 %)") != NULL))
        fprintf(stderr, "%s", buf);
    free(buf);
    /* a plan without data-parallel entries: no such line */
    static int64_t tw[3] = { 0, 0, 1 };
    q.assign = tw;
    q.ndp = 0;
    q.cost_dp = q.comm_ar = NULL;
    t = print(&q, AS_EVAL_TEXT);
    CHECK(strstr(t, "data parallel") == NULL && strstr(t, "(dp)") == NULL);
    free(t);
}
