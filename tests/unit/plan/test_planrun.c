/* test_planrun.c - as-plan's stage (lib/plan/planrun.h) on hand-made inputs: the --alg list, a
 * task's features, --repair (a measured plan rebuilt and refined on a hand-made cost model
 * whose answer is worked out by hand; skips, filters and errors) and --export (labels and
 * tasks wanted, caps). test_plan.c covers the input read and as_plan_run. */
#include "unit.h"

#include "common.h"
#include "msgobj.h"
#include "planrun.h"
#include "stream.h"
#include "tasks.h"
#include "fixtures.h"
#include "planrec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(planrun_alg_list)
{
    int want[AS_ALG_COUNT], n = -1;
    char err[256];
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "size-greedy,random", 0, 0, err, sizeof err), 0);
    CHECK_EQ_I64(n, 2);
    CHECK(want[AS_ALG_SIZE] && want[AS_ALG_RANDOM] && !want[AS_ALG_DIM] && !want[AS_ALG_COST]);
    /* all: cost-greedy only with a model, autoshard only with a policy */
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all", 0, 0, err, sizeof err), 0);
    CHECK(!want[AS_ALG_COST] && !want[AS_ALG_AUTOSHARD] && want[AS_ALG_LOOKUP]);
    const int without = n;
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all", 1, 1, err, sizeof err), 0);
    CHECK(want[AS_ALG_COST] && want[AS_ALG_AUTOSHARD]);
    CHECK_EQ_I64(n, without + 2);
    /* the errors its header names */
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "cost-greedy", 0, 1, err, sizeof err), -1);
    CHECK_STR(err, "--alg cost-greedy needs --model FILE");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "autoshard", 1, 0, err, sizeof err), -1);
    CHECK_STR(err, "--alg autoshard needs --policy FILE");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "size-greedy,x", 1, 1, err, sizeof err), -1);
    CHECK_STR(err, "--alg: unknown algorithm 'x'");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "", 1, 1, err, sizeof err), -1);
    CHECK_STR(err, "--alg: no algorithm given");
}

/* a table of dim d, 100 rows, pooling 1 (fp16 bytes 200 d) */
static as_features PF(int64_t id, int64_t dim)
{
    as_features f = tsup_features(id, dim, 100, 1, 8, 8);
    f.bins[0] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}


/* features of tables 1 (dim 4), 2 (dim 8), 3 (dim 2) and task 5 of all three on 2 shards,
 * read back into in */
static void toy_input(as_plan_input *in)
{
    char path[512], err[512];
    const as_features f[3] = { PF(1, 4), PF(2, 8), PF(3, 2) };
    CHECK_EQ_I64(tsup_plan_input(in, ut_tmppath(path, sizeof path, "planrun-toy.ast"), f, 3, 2, err, sizeof err), 0);
}

/* a plan record of tables 1, 2, 3 on 2 shards; kind NULL: no costs; ncost: cost_ms's length */
static void put_plan(as_writer *w, int64_t task, const char *alg, const int64_t *assign, const char *kind, int ncost,
                     double c0, double c1)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 6 + (kind ? 2 : 0));
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", task);
    as_pack_kv_str(pk, "alg", alg);
    as_pack_kv_i64(pk, "shards", 2);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 3);
    for (int i = 1; i <= 3; i++) msgpack_pack_int(pk, i);
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++) msgpack_pack_int64(pk, assign[i]);
    if (kind) {
        as_pack_str(pk, "cost_ms");
        msgpack_pack_array(pk, (uint32_t)ncost);
        for (int k = 0; k < ncost; k++) msgpack_pack_double(pk, k ? c1 : c0);
        as_pack_kv_str(pk, "cost_kind", kind);
    }
    as_writer_end_record(w);
}

/* the plan records of a stream: each one's alg label and assignment */
typedef struct { char alg[8][64]; int64_t assign[8][3]; int n; } plans_read;
static int on_plan(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    (void)r;
    plans_read *x = ctx;
    if (!as_rec_is(rec, "plan") || x->n == 8) return 0;
    as_planrec pr;
    if (as_planrec_read(&rec->obj, &pr, 0, err, errlen)) return -1;
    as_obj_str(&rec->obj, "alg", x->alg[x->n], sizeof x->alg[x->n]);
    for (int64_t i = 0; i < 3 && i < pr.n; i++) x->assign[x->n][i] = pr.assign[i];
    x->n++;
    as_planrec_free(&pr);
    return 0;
}

static void read_plans(const char *path, plans_read *pr)
{
    char err[512];
    memset(pr, 0, sizeof *pr);
    char *files[] = { (char *)path };
    CHECK_EQ_I64(as_read_records(files, 1, on_plan, pr, err, sizeof err), 0);
}

TEST(planrun_task_features)
{
    as_plan_input in;
    toy_input(&in);
    CHECK_EQ_I64(in.ntasks, 1);
    const as_features *f[3];
    char err[256];
    CHECK_EQ_I64(as_plan_task_features(&in, &in.tasks[0], f, err, sizeof err), 0);
    for (int i = 0; i < 3; i++) CHECK_EQ_I64(f[i]->id, i + 1);   /* in task order */
    CHECK_EQ_I64(f[1]->dim, 8);
    /* a task of a table without features */
    int64_t tables[] = { 3, 9 };
    as_taskrec t = { .id = 6, .tables = tables, .ntables = 2, .shards = 1 };
    CHECK_EQ_I64(as_plan_task_features(&in, &t, f, err, sizeof err), -1);
    CHECK_STR(err, "task 6: table 9 has no features record in the input");
    as_plan_input_free(&in);
}

/* --repair: tables 1, 2 on shard 0 and 3 on shard 1 as measured (12 and 2 ms, just what
 * the model predicts: every scale 1); the refinement moves table 1 (4 ms) to shard 1, 8
 * against 6 ms, and stops there (moving 2 gives 14, swapping it with 3 or 1 is no better) */
TEST(planrun_repair)
{
    as_plan_input in;
    toy_input(&in);
    char mpath[512], opath[512], err[1024];
    as_writer *w = as_writer_open(ut_tmppath(mpath, sizeof mpath, "planrun-measured.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t a[3] = { 0, 0, 1 };
    put_plan(w, 5, "size-greedy", a, "measured", 2, 12, 2);
    put_plan(w, 5, "dim-greedy", a, NULL, 0, 0, 0);            /* no costs: unmeasured */
    put_plan(w, 9, "size-greedy", a, "measured", 2, 12, 2);    /* another task: skipped */
    put_plan(w, 5, "random+measured", a, "measured", 2, 12, 2);
    as_writer_close(w);

    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_STREAM;
    as_plan_run_stats st;
    as_repair_stats rs;
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    CHECK_STR(err, "--repair needs a cost model");

    c.model = &tsup_toy_model;
    c.keep_unrefined = 1;
    c.w = as_writer_open(ut_tmppath(opath, sizeof opath, "planrun-repaired.ast"), 0, 0);
    as_writer_header(c.w, "test", 0, NULL);
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), 0);
    as_writer_close(c.w);
    CHECK_EQ_I64(rs.plans, 2);
    CHECK_EQ_I64(rs.changed, 2);
    CHECK_EQ_I64(rs.steps, 2);
    CHECK_EQ_I64(rs.unmeasured, 1);
    CHECK_EQ_I64(rs.skipped, 1);
    CHECK_EQ_I64(st.nplans, 4);   /* each as measured, then refined */
    plans_read pr;
    read_plans(opath, &pr);
    CHECK_EQ_I64(pr.n, 4);
    static const char *const labels[4] = { "size-greedy", "size-greedy+refine+measured", "random+measured",
                                           "random+refine+measured2" };
    const int64_t moved[3] = { 1, 0, 1 };
    for (int i = 0; i < pr.n && i < 4; i++) {
        CHECK_STR(pr.alg[i], labels[i]);
        for (int j = 0; j < 3; j++) CHECK_EQ_I64(pr.assign[i][j], i % 2 ? moved[j] : a[j]);
    }

    /* filters: the wanted algorithms, then the round (1: plans not repaired yet) */
    c.keep_unrefined = 0;
    c.w = as_writer_open(opath, 0, 0);
    as_writer_header(c.w, "test", 0, NULL);
    c.repair_filter = 1;
    c.want[AS_ALG_RANDOM] = 1;
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), 0);
    CHECK_EQ_I64(rs.plans, 1);
    CHECK_EQ_I64(rs.skipped, 2);
    c.repair_filter = 0;
    c.repair_round = 1;
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), 0);
    CHECK_EQ_I64(rs.plans, 1);
    CHECK_EQ_I64(rs.skipped, 2);
    as_writer_close(c.w);
    read_plans(opath, &pr);
    CHECK_EQ_I64(pr.n, 2);
    CHECK_STR(pr.alg[0], "random+refine+measured2");
    CHECK_STR(pr.alg[1], "size-greedy+refine+measured");
    c.repair_round = 0;

    /* errors: --shards that differ from the plan's, costs not one per shard, an unknown
       algorithm */
    c.out = AS_PLAN_OUT_TEXT;
    c.w = NULL;
    c.text = tmpfile();
    c.shards = 3;
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    CHECK(strstr(err, ": record 2: plan of task 5 (size-greedy): 2 shards, --shards 3") != NULL);
    c.shards = 0;
    w = as_writer_open(mpath, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 5, "size-greedy", a, "measured", 3, 12, 2);
    as_writer_close(w);
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    /* read by as-eval's strict plan reader: its words */
    CHECK(strstr(err, ": record 2: plan of task 5: 'cost_ms' must be a list with one entry per shard") != NULL);
    /* a measured cost that is NaN or negative is refused, not taken as unmeasured */
    w = as_writer_open(mpath, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 5, "size-greedy", a, "measured", 2, NAN, 2);
    as_writer_close(w);
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    CHECK(strstr(err, ": record 2: plan of task 5: cost_ms[0] is not finite (an unmeasured shard is nil)") != NULL);
    w = as_writer_open(mpath, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 5, "size-greedy", a, "measured", 2, 12, -1);
    as_writer_close(w);
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    CHECK(strstr(err, ": record 2: plan of task 5: measured cost_ms[1] is negative (-1 ms)") != NULL);
    w = as_writer_open(mpath, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_plan(w, 5, "bogus+split", a, "measured", 2, 12, 2);
    as_writer_close(w);
    CHECK_EQ_I64(as_plan_repair_run(&st, &rs, &c, &in, mpath, err, sizeof err), -1);
    CHECK(strstr(err, ": record 2: plan of task 5: unknown algorithm 'bogus+split'") != NULL);
    fclose(c.text);
    as_plan_input_free(&in);
}

/* --export: the plans wanted by label or algorithm and task, rebuilt as they are */
TEST(planrun_export)
{
    as_plan_input in;
    toy_input(&in);
    char ppath[512], opath[512], err[1024];
    as_writer *w = as_writer_open(ut_tmppath(ppath, sizeof ppath, "planrun-export.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t a[3] = { 0, 1, 1 }, b[3] = { 1, 0, -1 };
    put_plan(w, 5, "size-greedy+refine", a, NULL, 0, 0, 0);
    put_plan(w, 5, "size-greedy", b, NULL, 0, 0, 0);           /* table 3 unplaced: infeasible */
    put_plan(w, 6, "dim-greedy", a, NULL, 0, 0, 0);
    as_writer_close(w);

    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_STREAM;
    c.export_task = -1;
    c.w = as_writer_open(ut_tmppath(opath, sizeof opath, "planrun-exported.ast"), 0, 0);
    as_writer_header(c.w, "test", 0, NULL);
    as_plan_run_stats st;
    int64_t exported = -1, skipped = -1;
    /* tables of task 6's plan have features, so every plan is exported */
    CHECK_EQ_I64(as_plan_export_run(&st, &c, &in, ppath, &exported, &skipped, err, sizeof err), 0);
    CHECK_EQ_I64(exported, 3);
    CHECK_EQ_I64(skipped, 0);
    CHECK_EQ_I64(st.nplans, 3);
    CHECK_EQ_I64(st.ninfeasible, 1);
    /* a label with '+' matches exactly; an algorithm matches all its labels; a task */
    c.export_algs = "size-greedy+refine,dim-greedy";
    CHECK_EQ_I64(as_plan_export_run(&st, &c, &in, ppath, &exported, &skipped, err, sizeof err), 0);
    CHECK_EQ_I64(exported, 2);
    CHECK_EQ_I64(skipped, 1);
    c.export_algs = "size-greedy";
    c.export_task = 5;
    CHECK_EQ_I64(as_plan_export_run(&st, &c, &in, ppath, &exported, &skipped, err, sizeof err), 0);
    CHECK_EQ_I64(exported, 2);
    CHECK_EQ_I64(skipped, 1);
    as_writer_close(c.w);
    plans_read pr;
    read_plans(opath, &pr);
    CHECK_EQ_I64(pr.n, 7);
    static const char *const labels[7] = { "size-greedy+refine", "size-greedy", "dim-greedy", "size-greedy+refine",
                                           "dim-greedy", "size-greedy+refine", "size-greedy" };
    for (int i = 0; i < pr.n && i < 7; i++) CHECK_STR(pr.alg[i], labels[i]);
    for (int j = 0; j < 3; j++) {
        CHECK_EQ_I64(pr.assign[0][j], a[j]);
        CHECK_EQ_I64(pr.assign[1][j], b[j]);
    }

    /* a cap the plan breaks: shard 1 holds tables 2 and 3, 1600 + 400 bytes */
    c.export_algs = NULL;
    c.export_task = -1;
    c.cap_given = 1;
    c.mem_cap = 1800;
    c.out = AS_PLAN_OUT_TEXT;
    c.w = NULL;
    c.text = tmpfile();
    CHECK_EQ_I64(as_plan_export_run(&st, &c, &in, ppath, &exported, &skipped, err, sizeof err), -1);
    CHECK(strstr(err, ": record 2: plan of task 5 (size-greedy+refine): shard 1 holds 2000 bytes, over the 1800-byte "
                      "cap of --mem-cap") != NULL);
    fclose(c.text);
    as_plan_input_free(&in);
}
