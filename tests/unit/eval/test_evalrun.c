/* test_evalrun.c - as-eval's run (lib/eval/evalrun.h) on hand-made streams of measured plan
 * records: as_eval_run_read computes each plan's figures (balance = the fastest shard over
 * the slowest, speedup = random's slowest over the plan's), as_eval_run_prints says whether
 * tables are asked for, as_eval_run_print writes the header, the tables in order and the
 * verdict, as_eval_run_plots writes only what is asked for; a malformed record or input
 * without what is asked for is the data's exit code with a message naming the file and the
 * record.
 *
 * The plans (task 1, K = 2, tables 7 and 8 one a shard):
 *   random       costs [2, 1]:     max 2,   min 1,   mean 1.5,  balance 0.5,  speedup 1
 *   cost-greedy  costs [1.5, 1.2]: max 1.5, min 1.2, mean 1.35, balance 0.8,  speedup 4/3
 * and of task 2:
 *   random       costs [4, 1]:     balance 0.25, speedup 1
 *   cost-greedy  costs [2, 2]:     balance 1,    speedup 2
 * cost-greedy's mean balance 0.9, random's 0.375. */
#include "unit.h"

#include "common.h"
#include "fixtures.h"
#include "evalrun.h"
#include "msgobj.h"
#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a measured plan of task, K = 2, tables 7 and 8 on shards 0 and 1, costs c0, c1 (ncost:
 * how many of them the record carries) */
static void put_plan(as_writer *w, int64_t task, const char *alg, double c0, double c1, int ncost)
{
    tsup_put_plan2(w, &(tsup_plan2){ task, alg, -1, NULL, "measured", c0, c1, ncost, NULL });
}

/* the four plans above into the stream at name; its path */
static const char *write_plans(char *path, size_t len, const char *name)
{
    as_writer *w = as_writer_open(ut_tmppath(path, len, name), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 2, 1, 2);
    put_plan(w, 1, "cost-greedy", 1.5, 1.2, 2);
    put_plan(w, 2, "random", 4, 1, 2);
    put_plan(w, 2, "cost-greedy", 2, 2, 2);
    as_writer_close(w);
    return path;
}

/* as-eval's defaults (cmd/as-eval), nothing charged for communication */
static void defaults(as_eval_run *x)
{
    memset(x, 0, sizeof *x);
    x->o = (as_eval_opts){ .fmt = AS_EVAL_TEXT, .show_plans = 1, .show_summary = 1, .plot_task = -1, .floor_margin = -1,
                           .tie = 0.01 };
    x->o.comm = as_comm_bandwidth(0);
}

/* what as_eval_run_print writes (its return into *rc); a heap copy of the memory stream's
   text (so that the compiler sees no pointer into a local) */
static char *printed(const as_eval_run *x, int *rc, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = as_eval_run_print(f, x, err, errlen);
    fclose(f);
    char *s = as_strdup(buf);
    free(buf);
    return s;
}

TEST(evalrun_read_figures)
{
    char path[512], err[1024];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-plans.ast") };
    as_eval_run x;
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(x.in.nplans, 4);
    CHECK_STR(x.label, "measured");
    CHECK_EQ_I64(x.charged, 0);
    if (x.in.nplans == 4) {
        const as_planrec_full *p = x.in.plans;
        CHECK_NEAR(p[0].max, 2, 0);
        CHECK_NEAR(p[0].min, 1, 0);
        CHECK_NEAR(p[0].mean, 1.5, 1e-15);
        CHECK_NEAR(p[0].balance, 0.5, 1e-15);
        CHECK_NEAR(p[0].speedup, 1, 1e-15);
        CHECK_NEAR(p[1].max, 1.5, 0);
        CHECK_NEAR(p[1].min, 1.2, 0);
        CHECK_NEAR(p[1].mean, 1.35, 1e-12);
        CHECK_NEAR(p[1].balance, 0.8, 1e-12);
        CHECK_NEAR(p[1].speedup, 2 / 1.5, 1e-12);
        CHECK_NEAR(p[2].balance, 0.25, 1e-15);
        CHECK_NEAR(p[3].balance, 1, 0);
        CHECK_NEAR(p[3].speedup, 2, 1e-15);
    }
    /* the summary: an algorithm each, its mean balance over the two tasks */
    CHECK_EQ_I64(x.nsum, 2);
    for (int64_t i = 0; i < x.nsum; i++) {
        if (!strcmp(x.sum[i].alg, "cost-greedy")) CHECK_NEAR(x.sum[i].bal_mean, 0.9, 1e-12);
        else if (!strcmp(x.sum[i].alg, "random")) CHECK_NEAR(x.sum[i].bal_mean, 0.375, 1e-12);
        else CHECK(!"an algorithm not in the input");
    }
    as_eval_run_free(&x);
    CHECK(x.sum == NULL && x.cm == NULL);
}

/* the plans table in CSV: each plan's figures as computed by hand */
TEST(evalrun_print_csv_plans)
{
    char path[512], err[1024];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-csv.ast") };
    as_eval_run x;
    defaults(&x);
    x.o.fmt = AS_EVAL_CSV;
    x.o.show_summary = 0;
    x.o.table_given = 1;
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_eval_run_prints(&x), 1);
    int rc;
    char *s = printed(&x, &rc, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    /* no header in CSV: the table's first line first */
    const char *head = "run,task,split,alg,shards,tables,cost_kind,max_ms,min_ms,mean_ms,balance,speedup,";
    CHECK(strncmp(s, head, strlen(head)) == 0);
    CHECK(strstr(s, "\n0,1,,random,2,2,measured,2,1,1.5,0.5,1,") != NULL);
    CHECK(strstr(s, "\n0,1,,cost-greedy,2,2,measured,1.5,1.2,1.35,0.8,1.33333333,") != NULL);
    CHECK(strstr(s, "\n0,2,,random,2,2,measured,4,1,2.5,0.25,1,") != NULL);
    CHECK(strstr(s, "\n0,2,,cost-greedy,2,2,measured,2,2,2,1,2,") != NULL);
    free(s);
    as_eval_run_free(&x);
}

/* text: the header, then the tables asked for in order (plans, summary), then the verdict;
 * the summary's speedup of cost-greedy the geometric mean of 4/3 and 2, sqrt(8/3) = 1.633,
 * its slowest shard's mean (1.5 + 2) / 2 */
TEST(evalrun_print_text)
{
    char path[512], err[1024];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-text.ast") };
    as_eval_run x;
    defaults(&x);
    x.o.show_verdict = 1;
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    int rc;
    char *s = printed(&x, &rc, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    CHECK(strncmp(s, "# costs measured; 4 plans, 1 run\n", 33) == 0);
    const char *plans = strstr(s, "\nPlans (costs measured, ms):\n"), *sum = strstr(s, "\nSummary per algorithm (costs measured; over plans):\n"),
               *verdict = strstr(s, "\nVerdict (costs measured; 2 tasks):\n");
    CHECK(plans && sum && verdict && plans < sum && sum < verdict);
    CHECK(strstr(s, "   0     1 cost-greedy              2     1.5000     1.2000     1.3500   80.0%    1.333 ") != NULL);
    CHECK(strstr(s, "   0     2 random                   2     4.0000     1.0000     2.5000   25.0%    1.000 ") != NULL);
    CHECK(strstr(s, "\nrandom                    2          0      37.5 ") != NULL);
    CHECK(strstr(s, "\ncost-greedy               2          0      90.0 ") != NULL);
    CHECK(strstr(s, "     1.633 ") != NULL);
    CHECK(strstr(s, "       1.7500\n") != NULL);
    CHECK(strstr(s, "- cost-greedy won on measured balance: mean 90.0 %") != NULL);
    free(s);
    as_eval_run_free(&x);

    /* the verdict alone: no plans table, no summary */
    defaults(&x);
    x.o.show_plans = x.o.show_summary = 0;
    x.o.show_verdict = x.o.table_given = 1;
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    s = printed(&x, &rc, err, sizeof err);
    CHECK(strstr(s, "Plans (") == NULL && strstr(s, "Summary per") == NULL);
    CHECK(strstr(s, "\nVerdict (costs measured; 2 tasks):\n") != NULL);
    free(s);
    as_eval_run_free(&x);
}

/* CSV: the tables separated by an empty line, no header lines */
TEST(evalrun_print_csv_tables)
{
    char path[512], err[1024];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-csv2.ast") };
    as_eval_run x;
    defaults(&x);
    x.o.fmt = AS_EVAL_CSV;
    x.o.show_shards = 1;
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    int rc;
    char *s = printed(&x, &rc, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    CHECK(strncmp(s, "run,task,split,alg,", 19) == 0);
    CHECK(strstr(s, "#") == NULL);
    /* plans, then shards (task 2's random: shard 0 4 ms, shard 1 1 ms), then the summary */
    const char *shards = strstr(s, "\n\nrun,task,alg,shard,tables,cost_kind,cost_ms,");
    CHECK(shards != NULL);
    CHECK(shards && strstr(shards, "\n0,2,random,0,1,measured,4,") != NULL);
    CHECK(shards && strstr(shards, "\n0,2,random,1,1,measured,1,") != NULL);
    CHECK(shards && strstr(shards + 2, "\n\n") != NULL);
    free(s);
    as_eval_run_free(&x);
}

/* which runs print: any table or the verdict; the plots alone do not */
TEST(evalrun_prints)
{
    as_eval_run x;
    memset(&x, 0, sizeof x);
    CHECK_EQ_I64(as_eval_run_prints(&x), 0);
    x.o.plot = "p.png";
    x.o.curve = "c.png";
    CHECK_EQ_I64(as_eval_run_prints(&x), 0);
    int *flag[] = { &x.o.show_plans, &x.o.show_shards, &x.o.show_ranks, &x.o.show_comm, &x.o.show_range,
                    &x.o.show_summary, &x.o.show_verdict, &x.o.show_curve };
    for (size_t i = 0; i < sizeof flag / sizeof *flag; i++) {
        *flag[i] = 1;
        CHECK_EQ_I64(as_eval_run_prints(&x), 1);
        *flag[i] = 0;
    }
}

/* a hostile or malformed record: the data's exit code, the message naming the file and the
 * record */
TEST(evalrun_read_malformed)
{
    char path[512], err[1024], want[1600];
    as_writer *w = as_writer_open(ut_tmppath(path, sizeof path, "evalrun-bad.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 1, "random", 2, 1, 2);
    put_plan(w, 1, "cost-greedy", 1.5, 0, 1);   /* record 3: one cost for two shards */
    as_writer_close(w);
    char *files[] = { path };
    as_eval_run x;
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    snprintf(want, sizeof want, "%s: record 3: plan of task 1: 'cost_ms' must be a list with one entry per shard", path);
    CHECK_STR(err, want);
    as_eval_run_free(&x);

    /* not a stream at all */
    FILE *f = fopen(ut_tmppath(path, sizeof path, "evalrun-garbage.ast"), "wb");
    fputs("not zstd, not msgpack\n", f);
    fclose(f);
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    snprintf(want, sizeof want, "%s: not an autoshard stream (no zstd frame magic)", path);
    CHECK_STR(err, want);
    as_eval_run_free(&x);

    /* a task that is a string */
    w = as_writer_open(ut_tmppath(path, sizeof path, "evalrun-task.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_str(pk, "task", "one");
    as_writer_end_record(w);
    as_writer_close(w);
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    snprintf(want, sizeof want, "%s: record 2: plan: 'task' is not an integer", path);
    CHECK_STR(err, want);
    as_eval_run_free(&x);
}

/* input without what is asked for: no plans for the plans' tables, no train records for the
 * curve */
TEST(evalrun_read_nothing_asked_for)
{
    char path[512], err[1024];
    as_writer *w = as_writer_open(ut_tmppath(path, sizeof path, "evalrun-empty.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_writer_close(w);
    char *files[] = { path };
    as_eval_run x;
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    CHECK_STR(err, "no plan records in the input");
    as_eval_run_free(&x);
    defaults(&x);
    x.o.split = "test";
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    CHECK_STR(err, "no matching plan records in the input");
    as_eval_run_free(&x);
    /* the curve alone: the plans' tables dropped; no train records */
    defaults(&x);
    x.o.curve = "curve.png";
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), AS_EXIT_DATA);
    CHECK_STR(err, "no train records in the input (as-rl --log FILE writes them)");
    CHECK_EQ_I64(x.o.show_plans, 0);
    as_eval_run_free(&x);
}

/* --table range with --candidates FILE that cannot be opened: the data's exit code */
TEST(evalrun_print_candidates_missing)
{
    char path[512], cand[512], err[1024], want[1200];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-range.ast") };
    as_eval_run x;
    defaults(&x);
    x.o.show_plans = x.o.show_summary = 0;
    x.o.show_range = x.o.table_given = 1;
    x.o.candidates = ut_tmppath(cand, sizeof cand, "evalrun-no-such-candidates");
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    int rc;
    char *s = printed(&x, &rc, err, sizeof err);
    CHECK_EQ_I64(rc, AS_EXIT_DATA);
    snprintf(want, sizeof want, "--candidates %s: cannot open", cand);
    CHECK_STR(err, want);
    free(s);
    /* an empty file: no candidates, said so */
    FILE *f = fopen(cand, "w");
    fputs("\n\n", f);
    fclose(f);
    s = printed(&x, &rc, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    snprintf(want, sizeof want, "how far the choice holds: no candidates (--candidates %s is empty)\n\n", cand);
    CHECK(strstr(s, want) != NULL);
    free(s);
    as_eval_run_free(&x);
}

/* the plots: none asked for, nothing done; --plot without --plot-task takes the first
 * plan's task, and writes the file (or, without a gnuplot that can, says so) */
TEST(evalrun_plots)
{
    char path[512], png[512], err[1024];
    char *files[] = { (char *)write_plans(path, sizeof path, "evalrun-plot.ast") };
    as_eval_run x;
    defaults(&x);
    CHECK_EQ_I64(as_eval_run_read(&x, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_eval_run_plots(&x, err, sizeof err), 0);
    CHECK_EQ_I64(x.o.plot_task, -1);
    x.o.plot = ut_tmppath(png, sizeof png, "evalrun-plot.png");
    const int rc = as_eval_run_plots(&x, err, sizeof err);
    CHECK_EQ_I64(x.o.plot_task, 1);
    if (rc == 0) CHECK(access(png, F_OK) == 0);
    else {
        CHECK_EQ_I64(rc, AS_EXIT_ENV);
        char want[600];
        snprintf(want, sizeof want, "%s: gnuplot ", png);
        CHECK(strncmp(err, want, strlen(want)) == 0);
    }
    as_eval_run_free(&x);
}
