/* test_evalinput.c - as-eval's input (lib/eval/evalinput.h) on hand-made streams: the cost
 * model's held-out quality (the first model record's wins over the first costfit-report's;
 * from the input or a model file; a malformed one), and a costfit-report's predicted and
 * measured test costs for the scatter plot. test_eval.c covers runs, splits, devices, the
 * train records, the cost kinds and the estimate. */
#include "unit.h"

#include "common.h"
#include "evalinput.h"
#include "fixtures.h"
#include "msgobj.h"
#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static void pack_metrics(msgpack_packer *pk, const char *key, int64_t n, double mae, double r2)
{
    as_pack_str(pk, key);
    msgpack_pack_map(pk, 5);
    as_pack_kv_i64(pk, "n", n);
    as_pack_kv_f64(pk, "mae", mae);
    as_pack_kv_f64(pk, "mse", mae * mae);
    as_pack_kv_f64(pk, "mape", 10);
    as_pack_kv_f64(pk, "r2", r2);
}

/* a list of n numbers v0, v0 + 1, ... under key */
static void pack_list(msgpack_packer *pk, const char *key, int n, double v0)
{
    as_pack_str(pk, key);
    msgpack_pack_array(pk, (uint32_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_double(pk, v0 + i);
}

/* a costfit-report: model and linear test metrics on n shards, test_pred of npred and
 * test_measured of nmeas values (0: absent) */
static void put_report(as_writer *w, int64_t n, double model_r2, int npred, int nmeas)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 4 + (npred > 0) + (nmeas > 0));
    as_pack_kv_str(pk, "kind", "costfit-report");
    as_pack_kv_str(pk, "split", "tables");
    as_pack_str(pk, "model");
    msgpack_pack_map(pk, 1);
    pack_metrics(pk, "test", n, 0.5, model_r2);
    as_pack_str(pk, "linear");
    msgpack_pack_map(pk, 1);
    pack_metrics(pk, "test", n, 0.4, 0.8);
    if (npred > 0) pack_list(pk, "test_pred", npred, 1);
    if (nmeas > 0) pack_list(pk, "test_measured", nmeas, 1.5);
    as_writer_end_record(w);
}

/* a model record with a held-out map of test_shards (bad: 'heldout' a string) */
static void put_model(as_writer *w, int64_t test_shards, double r2, int bad)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 3);
    as_pack_kv_str(pk, "kind", "model");
    as_pack_kv_str(pk, "output", "softplus");
    if (bad) {
        as_pack_kv_str(pk, "heldout", "none");
    } else {
        as_pack_str(pk, "heldout");
        msgpack_pack_map(pk, 4);
        as_pack_kv_str(pk, "split", "shards");
        as_pack_kv_i64(pk, "test_shards", test_shards);
        pack_metrics(pk, "model", test_shards, 0.3, r2);
        pack_metrics(pk, "linear", test_shards, 0.4, 0.5);
    }
    as_writer_end_record(w);
}

/* the first model record's quality wins over the first costfit-report's, whatever their
 * order; later ones of each kind are passed over; the same from a model file */
TEST(evalinput_quality)
{
    char path[512], err[1024];
    as_writer *w = as_writer_open(ut_tmppath(path, sizeof path, "evalinput-quality.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_report(w, 50, 0.6, 0, 0);
    /* a measured plan of task 1: tables 7 and 8 on shards 0 and 1 */
    tsup_put_plan2(w, &(tsup_plan2){ .task = 1, .alg = "random", .seed = -1, .cost_kind = "measured", .c0 = 2, .c1 = 1, .ncost = 2 });
    put_model(w, 120, 0.9, 0);
    put_model(w, 7, 0.1, 0);          /* a second model: passed over */
    put_report(w, 9, 0.2, 0, 0);      /* a second report: passed over */
    as_writer_close(w);

    char *files[] = { path };
    as_eval_input in;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_I64(in.nplans, 1);
    CHECK_EQ_I64(in.quality.report.have, 1);
    CHECK_STR(in.quality.report.source, "costfit-report");
    CHECK_EQ_I64(in.quality.report.test_shards, 50);   /* the model's n, without test_shards */
    CHECK_NEAR(in.quality.report.model.r2, 0.6, 0);
    CHECK_EQ_I64(in.quality.model.have, 1);
    const as_eval_quality *q = as_eval_quality_pick(&in.quality);
    CHECK(q == &in.quality.model);
    if (q) {
        CHECK_STR(q->source, "model");
        CHECK_STR(q->output, "softplus");
        CHECK_STR(q->split, "shards");
        CHECK_EQ_I64(q->test_shards, 120);
        CHECK_NEAR(q->model.r2, 0.9, 0);
        CHECK_NEAR(q->linear.mae, 0.4, 0);
    }
    CHECK(!in.pred && !in.meas && in.nscatter == 0);   /* the report has no test arrays */
    as_eval_input_free(&in);

    as_eval_quality_src qs;
    memset(&qs, 0, sizeof qs);
    CHECK_EQ_I64(as_eval_quality_file(&qs, path, err, sizeof err), 0);
    q = as_eval_quality_pick(&qs);
    CHECK(q == &qs.model);
    if (q) CHECK_EQ_I64(q->test_shards, 120);

    /* only a report: it is picked; nothing: NULL */
    memset(&qs, 0, sizeof qs);
    CHECK(as_eval_quality_pick(&qs) == NULL);
    qs.report.have = 1;
    CHECK(as_eval_quality_pick(&qs) == &qs.report);

    /* a malformed model record: the file, the record and what is wrong */
    w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_model(w, 0, 0, 1);
    as_writer_close(w);
    memset(&qs, 0, sizeof qs);
    CHECK_EQ_I64(as_eval_quality_file(&qs, path, err, sizeof err), -1);
    char want[1200];
    snprintf(want, sizeof want, "%s: record 2: model record: 'heldout' is not a map or nil", path);
    CHECK_STR(err, want);
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), -1);
    CHECK_STR(err, want);
    as_eval_input_free(&in);
}

/* the first costfit-report with equal-length test_pred and test_measured gives the
 * scatter; one without (or of unequal lengths) gives none and is passed over */
TEST(evalinput_scatter)
{
    char path[512], err[1024];
    as_writer *w = as_writer_open(ut_tmppath(path, sizeof path, "evalinput-scatter.ast"), 0, 0);
    as_writer_header(w, "test", 0, NULL);
    /* a measured plan of task 1: tables 7 and 8 on shards 0 and 1 */
    tsup_put_plan2(w, &(tsup_plan2){ .task = 1, .alg = "random", .seed = -1, .cost_kind = "measured", .c0 = 2, .c1 = 1, .ncost = 2 });
    put_report(w, 3, 0.7, 3, 2);      /* unequal lengths: no scatter */
    put_report(w, 3, 0.7, 3, 3);
    put_report(w, 4, 0.7, 4, 4);      /* after the first usable one: passed over */
    as_writer_close(w);
    char *files[] = { path };
    as_eval_input in;
    CHECK_EQ_I64(as_eval_input_read(&in, files, 1, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_I64(in.nscatter, 3);
    for (int i = 0; i < 3 && in.nscatter == 3; i++) {
        CHECK_NEAR(in.pred[i], 1 + i, 0);
        CHECK_NEAR(in.meas[i], 1.5 + i, 0);
    }
    CHECK_EQ_I64(in.quality.report.test_shards, 3);   /* the first report's quality */
    as_eval_input_free(&in);
}
