/* test_evalcomm.c - as-eval --table comm (lib/eval/evalcomm.h): each sharding type's time at a
 * shard, from the bytes a plan carries, and the table of every plan's slowest rank, on
 * hand-made plans at 1 GiB/s (1 MiB = 1000 / 1024 ms). */
#include "unit.h"

#include "evalcomm.h"
#include "reclimits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB 1048576.0
#define MS_MIB (1000.0 / 1024.0)   /* ms of 1 MiB at 1 GiB/s */

/* plan A: K = 2, three whole tables; ids in [1, 2] MiB, outputs out [3, 0] MiB (all 6);
 * table-wise at shard k: own in + out + all / K: shard 0 4 + 3 = 7 MiB, shard 1 2 + 3 = 5 MiB.
 * Kernels 10, 12 ms, the communication charged: costs 16.8359375, 16.8828125: rank 1 slowest */
static int64_t a_tables[3] = { 1, 2, 3 }, a_assign[3] = { 0, 1, 1 };
static double a_in[2] = { 1 * MIB, 2 * MIB }, a_out[2] = { 3 * MIB, 0 };
static double a_cms[2] = { 7 * MS_MIB, 5 * MS_MIB }, a_cost[2] = { 10 + 7 * MS_MIB, 12 + 5 * MS_MIB };

static as_planrec_full plan_a(void)
{
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.run = 0, q.task = 5, q.K = 2, q.T = 3, q.feasible = 1;
    snprintf(q.alg, sizeof q.alg, "size-greedy");
    q.tables = a_tables, q.assign = a_assign, q.cost = a_cost;
    q.comm_in = a_in, q.comm_out = a_out, q.comm_ms = a_cms;
    return q;
}

/* plan B: one data-parallel table on K = 2, no ids or outputs, 0.5 MiB each in the
 * all-reduce; costs 5, 4 (nothing charged): rank 0 slowest, 0.48828125 ms of it data-parallel */
static int64_t b_tables[1] = { 9 }, b_assign[1] = { AS_DP };
static double b_ar[2] = { 0.5 * MIB, 0.5 * MIB }, b_cost[2] = { 5, 4 };

static as_planrec_full plan_b(void)
{
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.run = 1, q.task = 6, q.K = 2, q.T = 1, q.feasible = 1, q.ndp = 1;
    snprintf(q.alg, sizeof q.alg, "a,b|c");
    q.tables = b_tables, q.assign = b_assign, q.cost = b_cost, q.comm_ar = b_ar;
    return q;
}

TEST(evalcomm_parts_table_wise)
{
    as_comm_model m = as_comm_bandwidth(1);
    as_planrec_full q = plan_a();
    double ms[AS_NSH];
    CHECK_EQ_I64(as_eval_comm_parts(&q, 0, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 7 * MS_MIB, 1e-12);
    for (int s = 1; s < AS_NSH; s++) CHECK_NEAR(ms[s], 0, 0);
    CHECK_EQ_I64(as_eval_comm_parts(&q, 1, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 5 * MS_MIB, 1e-12);
    /* at 2 GiB/s half the time */
    m = as_comm_bandwidth(2);
    CHECK_EQ_I64(as_eval_comm_parts(&q, 1, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 2.5 * MS_MIB, 1e-12);
    /* data parallel: its all-reduce bytes, its own, not shared over K */
    m = as_comm_bandwidth(1);
    as_planrec_full b = plan_b();
    CHECK_EQ_I64(as_eval_comm_parts(&b, 1, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_DP], 0.5 * MS_MIB, 1e-12);
    CHECK_NEAR(ms[AS_SH_TW], 0, 0);
}

/* row pieces: table 7 cut in rows [0, 5) on shard 0, [5, 10) on shard 1, table 8 whole on
 * shard 0. Ids in [2, 1], outputs [2, 2]; the row pieces' share comm_rw [2, 3] of which ids
 * comm_rw_in [1, 1]. Shard 0: row-wise in 1 out 1, table-wise in 1 out 1; shard 1: row-wise
 * in 1 out 2, table-wise nothing. Everyone's: row-wise 5, table-wise 2. Shard 0: table-wise
 * 2 + 2 / 2 = 3 MiB, row-wise 2 + 5 / 2 = 4.5; shard 1: table-wise 1, row-wise 3 + 2.5 = 5.5 */
TEST(evalcomm_parts_row_wise)
{
    int64_t tables[3] = { 7, 7, 8 }, assign[3] = { 0, 1, 0 };
    as_piece pieces[3] = { { 0, 4, 0, 5 }, { 0, 4, 5, 10 }, AS_PIECE_WHOLE };
    double in[2] = { 2 * MIB, 1 * MIB }, out[2] = { 2 * MIB, 2 * MIB };
    double rw[2] = { 2 * MIB, 3 * MIB }, rwi[2] = { 1 * MIB, 1 * MIB }, cost[2] = { 1, 1 };
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.K = 2, q.T = 3, q.feasible = 1, q.tables = tables, q.assign = assign, q.pieces = pieces, q.cost = cost;
    q.comm_in = in, q.comm_out = out, q.comm_rw = rw, q.comm_rw_in = rwi;
    as_comm_model m = as_comm_bandwidth(1);
    double ms[AS_NSH];
    CHECK_EQ_I64(as_eval_comm_parts(&q, 0, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 3 * MS_MIB, 1e-12);
    CHECK_NEAR(ms[AS_SH_RW], 4.5 * MS_MIB, 1e-12);
    CHECK_NEAR(ms[AS_SH_CW] + ms[AS_SH_DP] + ms[AS_SH_TWRW], 0, 0);
    CHECK_EQ_I64(as_eval_comm_parts(&q, 1, &m, ms), 0);
    CHECK_NEAR(ms[AS_SH_TW], 1 * MS_MIB, 1e-12);
    CHECK_NEAR(ms[AS_SH_RW], 5.5 * MS_MIB, 1e-12);
}

/* no bytes, no model, a rank out of range: -1, every part 0 */
TEST(evalcomm_parts_none)
{
    as_comm_model m = as_comm_bandwidth(1), off = as_comm_bandwidth(0);
    as_planrec_full q = plan_a();
    double ms[AS_NSH];
    for (int s = 0; s < AS_NSH; s++) ms[s] = 99;
    CHECK_EQ_I64(as_eval_comm_parts(&q, 0, &off, ms), -1);
    for (int s = 0; s < AS_NSH; s++) CHECK_NEAR(ms[s], 0, 0);
    CHECK_EQ_I64(as_eval_comm_parts(&q, 2, &m, ms), -1);
    CHECK_EQ_I64(as_eval_comm_parts(&q, -1, &m, ms), -1);
    q.comm_in = q.comm_out = NULL;
    for (int s = 0; s < AS_NSH; s++) ms[s] = 99;
    CHECK_EQ_I64(as_eval_comm_parts(&q, 0, &m, ms), -1);
    for (int s = 0; s < AS_NSH; s++) CHECK_NEAR(ms[s], 0, 0);
}

static char *print(as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_comm(f, fmt, p, n, m);
    fclose(f);
    return buf;
}

/* CSV: a row per plan with a known slowest rank: its kernel (cost less the charged
 * communication), each type's ms, the communication's share; infeasible plans and plans with
 * an unknown cost are left out. Plan A: rank 1, kernel 12, 4.8828125 ms table-wise, 28.92 %;
 * plan B: rank 0, kernel 5 (nothing charged), 0.48828125 ms data-parallel, 8.897 % */
TEST(evalcomm_print_csv)
{
    as_comm_model m = as_comm_bandwidth(1);
    as_planrec_full p[4] = { plan_a(), plan_b(), plan_a(), plan_a() };
    p[2].feasible = 0;
    double nan_cost[2] = { NAN, 3 };
    p[3].cost = nan_cost;
    char *s = print(AS_EVAL_CSV, p, 4, &m);
    CHECK_STR(s, "run,task,alg,rank,kernel_ms,table_wise_ms,column_wise_ms,row_wise_ms,data_parallel_ms,"
                 "table_row_wise_ms,comm_pct\n"
                 "0,5,size-greedy,1,12,4.88281,0,0,0,0,28.92\n"
                 "1,6,\"a,b|c\",0,5,0,0,0,0.488281,0,8.897\n");
    free(s);
    /* equal costs: the lower rank is the slowest */
    double tie[2] = { 4, 4 };
    p[1].cost = tie;
    s = print(AS_EVAL_CSV, &p[1], 1, &m);
    CHECK(strstr(s, "\n1,6,\"a,b|c\",0,4,") != NULL);
    free(s);
    /* no plan at all: the header alone */
    s = print(AS_EVAL_CSV, p, 0, &m);
    CHECK_STR(s, "run,task,alg,rank,kernel_ms,table_wise_ms,column_wise_ms,row_wise_ms,data_parallel_ms,"
                 "table_row_wise_ms,comm_pct\n");
    free(s);
}

TEST(evalcomm_print_text_markdown)
{
    as_comm_model m = as_comm_bandwidth(1);
    as_planrec_full p[3] = { plan_a(), plan_b(), plan_a() };
    p[2].feasible = 0;
    char *s = print(AS_EVAL_MARKDOWN, p, 3, &m);
    CHECK(strstr(s, "| 0 | 5 | size-greedy | 1 | 12.0000 | 4.8828 | 0.0000 | 0.0000 | 0.0000 | 0.0000 | 28.9 |\n") != NULL);
    CHECK(strstr(s, "| 1 | 6 | a,b\\|c | 0 | 5.0000 | 0.0000 | 0.0000 | 0.0000 | 0.4883 | 0.0000 | 8.9 |\n") != NULL);
    CHECK(strstr(s, "\n1 plan left out: infeasible, a rank's cost unknown, or no communication bytes\n\n") != NULL);
    free(s);
    s = print(AS_EVAL_TEXT, p, 3, &m);
    CHECK(strncmp(s, "# communication of each plan's slowest rank, by sharding type, modelled ", 72) == 0);
    CHECK(strstr(s, "   0     5  size-greedy                          1    12.0000      4.8828") != NULL);
    CHECK(strstr(s, "# 1 plan left out: infeasible") != NULL);
    free(s);
    p[0].comm_in = p[0].comm_out = NULL;   /* no bytes: left out too */
    s = print(AS_EVAL_TEXT, p, 3, &m);
    CHECK(strstr(s, "# 2 plans left out: infeasible") != NULL);
    CHECK(strstr(s, "size-greedy") == NULL);
    free(s);
    /* nothing charged: one line, none in CSV */
    as_comm_model off = as_comm_bandwidth(0);
    s = print(AS_EVAL_TEXT, p, 3, &off);
    CHECK_STR(s, "# communication by sharding type: not modelled (--comm-gbps 0)\n\n");
    free(s);
    s = print(AS_EVAL_MARKDOWN, p, 3, &off);
    CHECK_STR(s, "communication by sharding type: not modelled (--comm-gbps 0)\n\n");
    free(s);
    s = print(AS_EVAL_CSV, p, 3, &off);
    CHECK_STR(s, "");
    free(s);
}
