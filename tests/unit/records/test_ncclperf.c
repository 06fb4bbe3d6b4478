/* test_ncclperf.c - nccl-tests' output read (lib/records/ncclperf.h): the columns, the
   collective, the interpolation, and every kind of bad file refused naming file and line */
#include "unit.h"

#include "ncclperf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* an alltoall_perf run on 4 ranks as nccl-tests 2.17 prints it; times chosen by hand, algbw
   and busbw as it computes them (size / time / 1e3, x 3/4) */
static const char *const HEAD =
    "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
    "# Collective test starting: alltoall_perf\n"
    "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 32(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  11 on h device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  12 on h device  1 [0000:43:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  13 on h device  2 [0000:52:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  14 on h device  3 [0000:61:00] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n";
static const char *const ROWS =
    "        1024            64     float    none      -1    10.00    0.10    0.08       0    10.50    0.10    0.07    N/A\n"
    "       32768          2048     float    none      -1    20.00    1.64    1.23       0    21.00    1.56    1.17    N/A\n"
    "     1048576         65536     float    none      -1   110.00    9.53    7.15       0   111.00    9.45    7.08    N/A\n";
static const char *const TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2.8 \n#\n"
                                "# Collective test concluded: alltoall_perf\n#\n";

static int parse(const char *text, int coll, as_nccl_table *t, char *err, size_t errlen)
{
    err[0] = 0;
    return as_nccl_parse("run.txt", text, strlen(text), coll, t, err, errlen);
}

TEST(nccl_reads_a_run)
{
    char text[4096], err[512];
    snprintf(text, sizeof text, "%s%s%s", HEAD, ROWS, TAIL);
    as_nccl_table t;
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.coll, AS_COLL_A2A);
    CHECK_EQ_I64(t.ranks, 4);
    CHECK_EQ_I64(t.n, 3);
    CHECK_NEAR(t.size[2], 1048576, 0);
    CHECK_NEAR(t.us[1], 20, 0);   /* the out-of-place time */
    /* measured sizes exactly; between, linearly; above, the largest's rate; below, the line
       through the two smallest, never below the smallest's rate */
    CHECK_NEAR(as_nccl_us(&t, 32768), 20, 0);
    CHECK_NEAR(as_nccl_us(&t, (32768 + 1048576) / 2.0), 65, 1e-9);
    CHECK_NEAR(as_nccl_us(&t, 2 * 1048576.0), 220, 1e-9);
    const double slope = 10.0 / (32768 - 1024);
    CHECK_NEAR(as_nccl_us(&t, 0), 10 - 1024 * slope, 1e-9);
    CHECK_NEAR(as_nccl_us(&t, 512), 10 - 512 * slope, 1e-9);
    as_nccl_free(&t);
    /* srun --label's prefix, NCCL's own lines, debug lines: read through */
    char lab[8192] = "NCCL version 2.21.5+cuda12.4\nh:1:1 [0] NCCL INFO Bootstrap\n";
    size_t at = strlen(lab);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        at += (size_t)snprintf(lab + at, sizeof lab - at, " 0: %.*s\n", (int)(nl - p), p);
        p = nl + 1;
    }
    CHECK_EQ_I64(parse(lab, AS_COLL_A2A, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.n, 3);
    as_nccl_free(&t);
}

/* the collective: the file's own line, else its name, else the caller's; they must agree */
TEST(nccl_collective)
{
    char text[4096], err[512];
    as_nccl_table t;
    const char *head = strstr(HEAD, "# nThread");
    snprintf(text, sizeof text, "%s%s%s", head, ROWS, TAIL);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: which collective") == err);
    CHECK_EQ_I64(parse(text, AS_COLL_RS, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.coll, AS_COLL_RS);
    as_nccl_free(&t);
    CHECK_EQ_I64(as_nccl_parse("logs/all_gather_perf-16.txt", text, strlen(text), -1, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.coll, AS_COLL_AG);
    as_nccl_free(&t);
    CHECK_EQ_I64(as_nccl_parse("AllReduce.log", text, strlen(text), -1, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.coll, AS_COLL_AR);
    as_nccl_free(&t);
    snprintf(text, sizeof text, "%s%s%s", HEAD, ROWS, TAIL);
    CHECK_EQ_I64(parse(text, AS_COLL_AR, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: it is alltoall_perf's output, given as ar") == err);
}

/* every bad file: exit with a message naming the file and the line, nothing read */
TEST(nccl_hostile)
{
    char rows_bad[2048], text[8192], err[512];
    as_nccl_table t;
    static const struct { const char *from, *to, *want; } bad[] = {
        /* a failed run */
        { "       0    10.50", "       3    10.50", "run.txt:13: #wrong = 3 in the out-of-place run" },
        { "       0    21.00", "     0.5    21.00", "run.txt:14: #wrong = 0.5" },
        /* other columns: one missing, one more, two swapped */
        { "    float    none      -1    10.00", "    float    none    10.00", "run.txt:13: 12 columns" },
        { "    1.23       0", "    1.23    1.23       0", "run.txt:14: 14 columns" },
        { "    9.53    7.15", "    7.15    9.53", "run.txt:15: the out-of-place algbw 7.15 GB/s is not size / time" },
        /* sizes out of order (two runs in one file), not numbers, not positive */
        { "       32768          2048", "         512          2048", "run.txt:14: size 512 is not above" },
        { "        1024            64", "        10x4            64", "run.txt:13: size, count and root" },
        { "   20.00    1.64", "   -20.0    1.64", "run.txt:14: the out-of-place time -20.0 us is not positive" },
        { "   20.00    1.64", "     nan    1.64", "run.txt:14: the out-of-place time, algbw and busbw are not numbers" },
        /* a hard failure's message in the middle */
        { "       32768          2048     float    none      -1    20.00    1.64    1.23       0    21.00    1.56    1.17    N/A\n",
          "h: Test NCCL failure common.cu:1 'unhandled system error'\n", "run.txt:14: not a line nccl-tests prints" },
    };
    for (size_t j = 0; j < sizeof bad / sizeof *bad; j++) {
        const char *at = strstr(ROWS, bad[j].from);
        CHECK(at != NULL);
        snprintf(rows_bad, sizeof rows_bad, "%.*s%s%s", (int)(at - ROWS), ROWS, bad[j].to, at + strlen(bad[j].from));
        snprintf(text, sizeof text, "%s%s%s", HEAD, rows_bad, TAIL);
        t.n = -7;
        CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
        if (!CHECK(strstr(err, bad[j].want) == err)) fprintf(stderr, "  case %zu: %s\n", j, err);
        CHECK_EQ_I64(t.n, -7);   /* untouched */
    }
    /* cut: in a line, after a line, before the trailer; no rank lines; the check failed */
    snprintf(text, sizeof text, "%s%.*s", HEAD, (int)(strlen(ROWS) - 30), ROWS);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt:15: ") == err && strstr(err, "columns") != NULL);
    snprintf(text, sizeof text, "%s%s", HEAD, ROWS);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: no trailer") == err);
    snprintf(text, sizeof text, "%s", HEAD);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: no measurements") == err);
    CHECK_EQ_I64(parse("", -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: no measurements") == err);
    snprintf(text, sizeof text, "# Collective test starting: alltoall_perf\n%s%s", ROWS, TAIL);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt: no rank lines") == err);
    snprintf(text, sizeof text, "%s%s# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 2.8 \n", HEAD, ROWS);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt:16: the run failed its check") == err);
    /* two runs in one file; a NUL; a test of something else */
    snprintf(text, sizeof text, "%s%s%s%s", HEAD, ROWS, TAIL, ROWS);
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt:21: a line after the trailer") == err);
    snprintf(text, sizeof text, "%s%s%s", HEAD, ROWS, TAIL);
    text[strlen(HEAD) + 3] = 0;
    CHECK_EQ_I64(as_nccl_parse("run.txt", text, strlen(HEAD) + strlen(ROWS) + strlen(TAIL), -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt:13: a NUL byte") == err);
    snprintf(text, sizeof text, "# Collective test starting: sendrecv_perf\n%s", strstr(HEAD, "# nThread"));
    CHECK_EQ_I64(parse(text, -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "run.txt:1: a test of no collective this reads") == err);
    /* a file that is not there */
    CHECK_EQ_I64(as_nccl_read("/nonexistent/a2a.txt", -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "/nonexistent/a2a.txt: cannot open") == err);
}

/* the published runs of tests/fixtures/nccl (SOURCES.md): each read whole, its collective and
   ranks; the one paste without rank lines refused */
TEST(nccl_published_runs)
{
    static const struct { const char *file; int coll; int64_t ranks, n; } runs[] = {
        { "h100x8-alltoall.txt", AS_COLL_A2A, 8, 10 },
        { "h100x8-all_reduce.txt", AS_COLL_AR, 8, 10 },
        { "h100x8-all_gather.txt", AS_COLL_AG, 8, 10 },
        { "h100x8-reduce_scatter.txt", AS_COLL_RS, 8, 10 },
        { "h100x16-2host-alltoall.txt", AS_COLL_A2A, 16, 3 },
        { "h100x16-2host-alltoall-older-format.txt", AS_COLL_A2A, 16, 10 },
        { "h100x80-10host-alltoall.txt", AS_COLL_A2A, 80, 10 },
        { "h100x80-10host-all_reduce.txt", AS_COLL_AR, 80, 10 },
        { "h100x80-10host-all_gather.txt", AS_COLL_AG, 80, 10 },
        { "h100x80-10host-reduce_scatter.txt", AS_COLL_RS, 80, 10 },
        { "gh-nccl-tests-290-h100x8-all_reduce.txt", AS_COLL_AR, 8, -1 },
        { "gh-nccl-tests-290-h100x16-2host-ib-all_reduce.txt", AS_COLL_AR, 16, -1 },
        { "gh-nccl-tests-309-h100x16-2host-ib-all_reduce.txt", AS_COLL_AR, 16, 32 },
        { "gh-nccl-tests-309-h100x32-4host-ib-all_reduce.txt", AS_COLL_AR, 32, 32 },
    };
    char rel[256], err[512];
    for (size_t j = 0; j < sizeof runs / sizeof *runs; j++) {
        snprintf(rel, sizeof rel, "../nccl/%s", runs[j].file);
        as_nccl_table t;
        if (!CHECK_EQ_I64(as_nccl_read(ut_fixture(rel), -1, &t, err, sizeof err), 0)) {
            fprintf(stderr, "  %s\n", err);
            continue;
        }
        CHECK_EQ_I64(t.coll, runs[j].coll);
        CHECK_EQ_I64(t.ranks, runs[j].ranks);
        if (runs[j].n > 0) CHECK_EQ_I64(t.n, runs[j].n);
        for (int64_t i = 0; i < t.n; i++) CHECK_NEAR(as_nccl_us(&t, t.size[i]), t.us[i], 0);
        as_nccl_free(&t);
    }
    as_nccl_table t;
    CHECK_EQ_I64(as_nccl_read(ut_fixture("../nccl/gh-nccl-tests-78-v100x64-ib-alltoall-legacy.txt"), -1, &t, err, sizeof err), -1);
    CHECK(strstr(err, "no rank lines") != NULL || strstr(err, "columns") != NULL);
}
