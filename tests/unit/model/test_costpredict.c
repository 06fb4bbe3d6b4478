/* test_costpredict.c - unit tests for lib/model/costpredict.c (as-costfit --predict) on hand-made
 * streams: several inputs read in one call (as_costpred_read_files) and one call per input
 * keep the same records, numbered per input; every record passes through
 * in input order with `cost` and `shard` records predicted; a plan's maximum; the messages
 * for a missing file, a bad stream, a bad cost record and a table without features.
 */
#include "unit.h"

#include "common.h"
#include "costpredict.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static as_features feat(int64_t id, int64_t dim, double pooling)
{
    as_features f = tsup_features(id, dim, 1000, pooling, 16, (int64_t)(pooling * 16));
    f.bins[1] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}

static char g_path[8][512];
static int g_k;
#define tmp(name) (snprintf(g_path[g_k % 8], 512, "%s/%s", ut_tmpdir(), (name)), g_path[g_k++ % 8])

/* a record of this kind with tables ids[0..n) (n < 0: no tables field) */
static void put_tables(as_writer *w, const char *kind, const int64_t *ids, int n, double cost)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 1 + (n >= 0) + !isnan(cost));
    as_pack_kv_str(pk, "kind", kind);
    if (n >= 0) {
        as_pack_str(pk, "tables");
        msgpack_pack_array(pk, (size_t)n);
        for (int i = 0; i < n; i++) msgpack_pack_int64(pk, ids[i]);
    }
    if (!isnan(cost)) as_pack_kv_f64(pk, "cost_ms", cost);
    as_writer_end_record(w);
}

/* a plan of task 3 on 2 shards: tables ids[0..n) assigned to assign[] */
static void put_plan(as_writer *w, const int64_t *ids, const int64_t *assign, int n)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 5);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", 3);
    as_pack_kv_i64(pk, "shards", 2);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, ids[i]);
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, assign[i]);
    as_writer_end_record(w);
}

/* input one: the features of tables 0..2, a cost record, a record of another kind;
 * input two: a shard, a plan */
static void write_inputs(const char *p1, const char *p2)
{
    as_writer *w = as_writer_open(p1, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    for (int t = 0; t < 3; t++) {
        as_features f = feat(t, 4 << t, 1 + t);
        as_features_write(w, &f);
    }
    const int64_t c[] = { 2, 0 };
    put_tables(w, "cost", c, 2, 1.5);
    put_tables(w, "note", NULL, -1, NAN);
    as_writer_close(w);
    w = as_writer_open(p2, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t s[] = { 1 }, pt[] = { 0, 1, 2 }, pa[] = { 1, 0, 1 };
    put_tables(w, "shard", s, 1, NAN);
    put_plan(w, pt, pa, 3);
    as_writer_close(w);
}

static void same_kept(const as_costpred *a, const as_costpred *b)
{
    CHECK_EQ_I64(a->n, b->n);
    CHECK_EQ_I64(a->len, b->len);
    CHECK_EQ_I64(a->nnames, b->nnames);
    if (a->n != b->n || a->len != b->len || a->nnames != b->nnames) return;
    CHECK(!memcmp(a->buf, b->buf, a->len));
    for (int64_t i = 0; i < a->n; i++) {
        CHECK_EQ_I64(a->rec[i], b->rec[i]);
        CHECK_EQ_I64(a->file[i], b->file[i]);
    }
    for (int i = 0; i < a->nnames; i++) CHECK_STR(a->names[i], b->names[i]);
}

TEST(costpred_read_files_in_one_call_or_several)
{
    const char *p1 = tmp("cp-cp1.ast"), *p2 = tmp("cp-cp2.ast");
    write_inputs(p1, p2);
    char *files[2] = { (char *)p1, (char *)p2 };
    char err[1024] = "";
    as_costpred a = { 0 }, b = { 0 };
    CHECK_EQ_I64(as_costpred_read_files(&a, files, 2, err, sizeof err), 0);
    for (int i = 0; i < 2; i++) CHECK_EQ_I64(as_costpred_read_files(&b, files + i, 1, err, sizeof err), 0);
    same_kept(&a, &b);
    /* every record but the headers; numbered within its input */
    CHECK_EQ_I64(a.n, 7);
    CHECK_EQ_I64(a.nnames, 2);
    CHECK_STR(a.names[0], p1);
    CHECK_STR(a.names[1], p2);
    CHECK_EQ_I64(a.rec[0], 2);
    CHECK_EQ_I64(a.file[4], 0);
    CHECK_EQ_I64(a.rec[4], 6);   /* the note */
    CHECK_EQ_I64(a.file[5], 1);
    CHECK_EQ_I64(a.rec[5], 2);   /* the shard */
    CHECK_EQ_I64(a.ft.n, 3);
    as_costpred_free(&a);
    as_costpred_free(&b);
}

TEST(costpred_writes_predictions_in_order)
{
    const char *p1 = tmp("cp-cq1.ast"), *p2 = tmp("cp-cq2.ast"), *o = tmp("cp-cq-out.ast");
    write_inputs(p1, p2);
    char *files[2] = { (char *)p1, (char *)p2 };
    char err[1024] = "";
    as_costpred cp = { 0 };
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 2, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    as_costmodel *m = as_costmodel_new(4, 3, 2, 7);
    as_writer *w = as_writer_open(o, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costpred_stats st;
    CHECK_EQ_I64(as_costpred_write(&cp, m, w, &st, err, sizeof err), 0);
    as_writer_close(w);
    CHECK_EQ_I64(st.costs, 1);
    CHECK_EQ_I64(st.shards, 1);
    CHECK_EQ_I64(st.plans, 1);

    const as_features *f0 = as_featidx_get(&cp.ft, 0), *f1 = as_featidx_get(&cp.ft, 1), *f2 = as_featidx_get(&cp.ft, 2);
    const as_features *cost[2] = { f2, f0 }, *shard[1] = { f1 }, *s0[1] = { f1 }, *s1[2] = { f0, f2 };
    static const char *const kinds[] = { "header", "features", "features", "features", "cost", "note", "shard", "plan" };
    as_reader *r = as_reader_open(o);
    as_record rec;
    int n = 0, rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        CHECK(n < 8 && as_rec_is(&rec, kinds[n]));
        double y[2];
        if (as_rec_is(&rec, "cost")) {
            CHECK(!as_obj_f64(&rec.obj, "pred_ms", y));
            CHECK_NEAR(y[0], as_costmodel_predict(m, cost, 2), 1e-9);
            CHECK(!as_obj_f64(&rec.obj, "cost_ms", y));   /* the record's own fields kept */
            CHECK_NEAR(y[0], 1.5, 0);
        } else if (as_rec_is(&rec, "shard")) {
            CHECK(!as_obj_f64(&rec.obj, "pred_ms", y));
            CHECK_NEAR(y[0], as_costmodel_predict(m, shard, 1), 0);
        } else if (as_rec_is(&rec, "plan")) {
            CHECK(!as_obj_f64_list(&rec.obj, "pred_ms", y, 2));
            CHECK_NEAR(y[0], as_costmodel_predict(m, s0, 1), 0);
            CHECK_NEAR(y[1], as_costmodel_predict(m, s1, 2), 1e-9);
            double mx;
            CHECK(!as_obj_f64(&rec.obj, "pred_max_ms", &mx));
            CHECK_NEAR(mx, y[0] > y[1] ? y[0] : y[1], 0);
        } else if (as_rec_is(&rec, "note")) {
            CHECK(as_obj_get(&rec.obj, "pred_ms") == NULL);
        }
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 8);
    as_reader_close(r);
    as_costmodel_free(m);
    as_costpred_free(&cp);
}

TEST(costpred_messages)
{
    char err[1024] = "", want[1200];
    /* a file that is not there */
    const char *none = tmp("cp-no-such.ast");
    char *files[1] = { (char *)none };
    as_costpred cp = { 0 };
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: No such file or directory", none);
    CHECK_STR(err, want);
    as_costpred_free(&cp);
    /* not a stream */
    const char *junk = tmp("cp-junk.ast");
    FILE *f = fopen(junk, "wb");
    CHECK(f != NULL);
    if (f) { fputs("not zstd at all", f); fclose(f); }
    files[0] = (char *)junk;
    memset(&cp, 0, sizeof cp);
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), -1);
    CHECK(strstr(err, junk) == err && strstr(err, "not an autoshard stream"));
    as_costpred_free(&cp);
    /* a cost record with bad tables, and a shard of a table without features: named by
       input and record */
    const char *bad = tmp("cp-bad.ast");
    as_writer *w = as_writer_open(bad, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features fa = feat(0, 8, 2);
    as_features_write(w, &fa);
    const int64_t t9[] = { 9 };
    put_tables(w, "shard", t9, 1, NAN);
    put_tables(w, "cost", NULL, -1, 2);
    as_writer_close(w);
    files[0] = (char *)bad;
    memset(&cp, 0, sizeof cp);
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    as_costmodel *m = as_costmodel_new(4, 3, 2, 7);
    as_costpred_stats st;
    w = as_writer_open(tmp("cp-bad-out.ast"), 0, 0);
    CHECK_EQ_I64(as_costpred_write(&cp, m, w, &st, err, sizeof err), -1);
    as_writer_abort(w);
    snprintf(want, sizeof want, "%s: record 3: table 9 has no `features` record", bad);
    CHECK_STR(err, want);
    as_costpred_free(&cp);
    /* the same input without the shard: the cost record's own message */
    w = as_writer_open(bad, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features_write(w, &fa);
    put_tables(w, "cost", NULL, -1, 2);
    as_writer_close(w);
    memset(&cp, 0, sizeof cp);
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    w = as_writer_open(tmp("cp-bad-out2.ast"), 0, 0);
    CHECK_EQ_I64(as_costpred_write(&cp, m, w, &st, err, sizeof err), -1);
    as_writer_abort(w);
    snprintf(want, sizeof want, "%s: record 3: cost: ", bad);
    CHECK(!strncmp(err, want, strlen(want)));
    as_costpred_free(&cp);
    as_costmodel_free(m);
}

/* --select: the candidates two models disagree on most (their standard deviation), in input
   order; a candidate of a measured shard's tables (in another order) or an earlier
   candidate's is left out */
TEST(costpred_select_by_disagreement)
{
    const char *p = tmp("cp-sel.ast"), *o = tmp("cp-sel-out.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    for (int t = 0; t < 3; t++) {
        as_features f = feat(t, 4 << t, 1 + t);
        as_features_write(w, &f);
    }
    const int64_t c[] = { 2, 0 }, dup[] = { 0, 2 }, one[] = { 1 }, zero[] = { 0 }, two[] = { 2 }, pair[] = { 0, 1 };
    put_tables(w, "cost", c, 2, 1.5);
    put_tables(w, "shard", dup, 2, NAN);      /* measured: left out */
    put_tables(w, "shard", one, 1, NAN);
    put_tables(w, "shard", one, 1, NAN);      /* drawn twice: left out */
    put_tables(w, "shard", zero, 1, NAN);
    put_tables(w, "shard", two, 1, NAN);
    put_tables(w, "shard", pair, 2, NAN);
    as_writer_close(w);
    char *files[1] = { (char *)p };
    char err[1024] = "";
    as_costpred cp = { 0 };
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    as_costmodel *ms[2] = { as_costmodel_new(4, 3, 2, 7), as_costmodel_new(4, 3, 2, 8) };
    /* the kept candidates' spread: half the two predictions' difference */
    const as_features *f0 = as_featidx_get(&cp.ft, 0), *f1 = as_featidx_get(&cp.ft, 1), *f2 = as_featidx_get(&cp.ft, 2);
    const as_features *sets[4][2] = { { f1 }, { f0 }, { f2 }, { f0, f1 } };
    const int nset[4] = { 1, 1, 1, 2 };
    double sd[4];
    for (int i = 0; i < 4; i++)
        sd[i] = fabs(as_costmodel_predict(ms[0], sets[i], nset[i]) - as_costmodel_predict(ms[1], sets[i], nset[i])) / 2;
    int best = 0, second = -1;
    for (int i = 1; i < 4; i++) if (sd[i] > sd[best]) best = i;
    for (int i = 0; i < 4; i++) if (i != best && (second < 0 || sd[i] > sd[second])) second = i;
    w = as_writer_open(o, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costsel_stats st;
    CHECK_EQ_I64(as_costpred_select(&cp, ms, 2, 2, w, &st, err, sizeof err), 0);
    as_writer_close(w);
    CHECK_EQ_I64(st.candidates, 6);
    CHECK_EQ_I64(st.measured, 1);
    CHECK_EQ_I64(st.dropped, 2);
    CHECK_EQ_I64(st.chosen, 2);
    const int want[2] = { best < second ? best : second, best < second ? second : best };
    as_reader *r = as_reader_open(o);
    as_record rec;
    int n = 0, rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (as_rec_is(&rec, "header")) continue;
        CHECK(as_rec_is(&rec, "shard") && n < 2);
        double y;
        CHECK(!as_obj_f64(&rec.obj, "pred_sd_ms", &y));
        if (n < 2) CHECK_NEAR(y, sd[want[n]], 1e-9);
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 2);
    as_reader_close(r);
    as_costmodel_free(ms[0]);
    as_costmodel_free(ms[1]);
    as_costpred_free(&cp);
}
