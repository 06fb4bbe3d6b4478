/* evalinput.c - as-eval's input and the cost-model estimate; see evalinput.h */
#include "evalinput.h"

#include "common.h"
#include "costrec.h"
#include "planrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int as_eval_quality_take(as_eval_quality_src *qs, const as_record *rec, const char *name, char *err, size_t errlen)
{
    int is_model = as_rec_is(rec, "model");
    if (!is_model && !as_rec_is(rec, "costfit-report")) return 0;
    as_eval_quality *dst = is_model ? &qs->model : &qs->report;
    if (dst->have) return 0;
    char msg[256];
    as_eval_quality q;
    int rc = as_eval_quality_read(&rec->obj, &q, msg, sizeof msg);
    if (rc < 0) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", name, rec->index, msg);
        return -1;
    }
    if (!rc) *dst = q;
    return 0;
}

const as_eval_quality *as_eval_quality_pick(const as_eval_quality_src *qs)
{
    return qs->model.have ? &qs->model : qs->report.have ? &qs->report : NULL;
}

static int quality_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    return as_eval_quality_take(ctx, rec, as_reader_name(r), err, errlen);
}

int as_eval_quality_file(as_eval_quality_src *qs, const char *path, char *err, size_t errlen)
{
    char *files[] = { (char *)path };
    return as_read_records(files, 1, quality_rec, qs, err, errlen);
}

/* numbers of a costfit-report field: a msgpack array of numbers or an array map; their
 * count, or -1 (*out NULL) when absent or of another form */
static int64_t report_list(const msgpack_object *rec, const char *key, double **out)
{
    const msgpack_object *o = as_obj_get(rec, key);
    *out = NULL;
    if (!o) return -1;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        int64_t n = o->via.array.size;
        double *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++) {
            const msgpack_object *e = &o->via.array.ptr[i];
            if (e->type == MSGPACK_OBJECT_FLOAT32 || e->type == MSGPACK_OBJECT_FLOAT64) v[i] = e->via.f64;
            else if (e->type == MSGPACK_OBJECT_POSITIVE_INTEGER) v[i] = (double)e->via.u64;
            else { free(v); return -1; }
        }
        *out = v;
        return n;
    }
    as_array a;
    char err[256];
    if (o->type == MSGPACK_OBJECT_MAP && !as_obj_array(rec, key, &a, err, sizeof err) && a.ndim == 1 &&
        a.dtype >= AS_DT_F32) {
        double *v = as_malloc((size_t)(a.n ? a.n : 1) * sizeof *v);
        as_array_get_f64(&a, 0, a.n, v);
        *out = v;
        return a.n;
    }
    return -1;
}

typedef struct {
    as_eval_input *in;
    const char *split;
    int estimate;
    /* which input file a record is from: a new file starts where the reader changes or the
       record numbers start again */
    const as_reader *last_r;
    uint64_t last_index;
    int64_t file;
    int64_t (*runs)[2];         /* (file, seed) of run i */
    int64_t capp, capr, capt;
    /* where each plan of in->plans came from, for the checks made after the whole input
       (its pieces against the tables' sizes): its file's name and its record number */
    char (*fname)[256];         /* [file + 1] */
    int64_t capf;
    int64_t *pfile;             /* [capp] */
    uint64_t *prec;             /* [capp] */
} read_ctx;

static int read_plan(read_ctx *c, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    as_eval_input *in = c->in;
    if (in->nplans == c->capp) {
        c->capp = c->capp ? 2 * c->capp : 64;
        in->plans = as_realloc(in->plans, (size_t)c->capp * sizeof *in->plans);
        c->pfile = as_realloc(c->pfile, (size_t)c->capp * sizeof *c->pfile);
        c->prec = as_realloc(c->prec, (size_t)c->capp * sizeof *c->prec);
    }
    as_planrec_full *q = &in->plans[in->nplans];
    char msg[1024];
    if (as_planrec_full_read(&rec->obj, q, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, msg);
        return -1;
    }
    if (c->split && strcmp(q->split, c->split)) { as_planrec_full_free(q); return 0; }
    if (!c->estimate) {
        if (!q->cost_kind) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": plan of task %" PRId64 " (%s) has no costs: measure it with "
                     "as-bench or give --model", as_reader_name(r), rec->index, q->task, q->alg);
            as_planrec_full_free(q);
            return -1;
        }
        if (in->nplans && q->cost_kind != in->plans[0].cost_kind) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": the input mixes measured and estimated costs; "
                     "evaluate them separately", as_reader_name(r), rec->index);
            as_planrec_full_free(q);
            return -1;
        }
        if (q->device[0]) {
            if (!in->device[0]) snprintf(in->device, sizeof in->device, "%s", q->device);
            else if (strcmp(in->device, q->device)) in->devices_differ = 1;
        }
        if (q->cost_kind == 1) {
            char t[48];
            snprintf(t, sizeof t, "%s %s", q->wtype[0] ? q->wtype : "fp16", q->optim[0] ? q->optim : "sgd");
            if (!in->trained[0]) snprintf(in->trained, sizeof in->trained, "%s", t);
            else if (strcmp(in->trained, t)) in->trained_differ = 1;
        }
    }
    int64_t ri;
    for (ri = 0; ri < in->nruns; ri++) if (c->runs[ri][0] == c->file && c->runs[ri][1] == q->seed) break;
    if (ri == in->nruns) {
        if (in->nruns == c->capr) {
            c->capr = c->capr ? 2 * c->capr : 8;
            c->runs = as_realloc(c->runs, (size_t)c->capr * sizeof *c->runs);
        }
        c->runs[in->nruns][0] = c->file;
        c->runs[in->nruns][1] = q->seed;
        in->nruns++;
    }
    q->run = ri;
    c->pfile[in->nplans] = c->file;
    c->prec[in->nplans] = rec->index;
    in->nplans++;
    return 0;
}

static int read_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    read_ctx *c = ctx;
    as_eval_input *in = c->in;
    if (r != c->last_r || rec->index <= c->last_index) {
        c->file++;
        if (c->file >= c->capf) {
            c->capf = c->capf ? 2 * c->capf : 8;
            c->fname = as_realloc(c->fname, (size_t)c->capf * sizeof *c->fname);
        }
        snprintf(c->fname[c->file], sizeof c->fname[0], "%s", as_reader_name(r));
    }
    c->last_r = r;
    c->last_index = rec->index;
    if (as_planrec_is(&rec->obj)) return read_plan(c, r, rec, err, errlen);
    if (as_rec_is(rec, "train")) {
        if (in->ntrain == c->capt) {
            c->capt = c->capt ? 2 * c->capt : 256;
            in->train = as_realloc(in->train, (size_t)c->capt * sizeof *in->train);
        }
        as_eval_train *t = &in->train[in->ntrain];
        char msg[1024];
        if (as_eval_train_read(&rec->obj, t, msg, sizeof msg)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, msg);
            return -1;
        }
        if (in->ntrain && t->episode <= t[-1].episode && in->back_at < 0) {
            in->back_at = t->episode;
            in->back_from = t[-1].episode;
        }
        in->ntrain++;
        return 0;
    }
    /* the tables' sizes (every plan's pieces are checked against them) and, with a cost
       model, their features */
    if (as_rec_is(rec, "features")) return as_featidx_read(&in->ft, rec, as_reader_name(r), err, errlen);
    if (as_costrec_is(&rec->obj)) {
        if (c->estimate) return 0;
        char msg[768];
        if (as_eval_singles_take(&in->singles, &rec->obj, msg, sizeof msg)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": cost: %s", as_reader_name(r), rec->index, msg);
            return -1;
        }
        return 0;
    }
    if (as_rec_is(rec, "model")) return as_eval_quality_take(&in->quality, rec, as_reader_name(r), err, errlen);
    if (as_rec_is(rec, "costfit-report")) {
        if (as_eval_quality_take(&in->quality, rec, as_reader_name(r), err, errlen)) return -1;
        if (in->nscatter) return 0;
        double *pp, *mm;
        int64_t a = report_list(&rec->obj, "test_pred", &pp), b = report_list(&rec->obj, "test_measured", &mm);
        if (a > 0 && a == b) {
            in->pred = pp;
            in->meas = mm;
            in->nscatter = a;
        } else {
            free(pp);
            free(mm);
            as_info("%s: record %" PRIu64 ": costfit-report without equal-length test_pred and test_measured "
                    "arrays: no predicted-vs-measured plot", as_reader_name(r), rec->index);
        }
    }
    return 0;
}

int as_eval_input_read(as_eval_input *in, char *const *files, int nfiles, const char *split, int estimate,
                       char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    in->back_at = -1;
    read_ctx c = { .in = in, .split = split, .estimate = estimate, .file = -1 };
    int rc = as_read_records(files, nfiles, read_rec, &c, err, errlen);
    if (!rc) rc = as_featidx_build(&in->ft, err, errlen);
    /* the pieces of every plan against the sizes of the tables the input has features of:
       nothing outside a table, no table covered short of its last column or row */
    for (int64_t j = 0; j < in->nplans && !rc; j++) {
        const as_planrec_full *q = &in->plans[j];
        char e2[512];
        if (as_featidx_check_cover(&in->ft, q->tables, q->pieces, q->T, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": plan of task %" PRId64 " (%s): %s", c.fname[c.pfile[j]], c.prec[j],
                     q->task, q->alg, e2);
            rc = -1;
        }
    }
    free(c.runs);
    free(c.fname);
    free(c.pfile);
    free(c.prec);
    return rc;
}

void as_eval_input_free(as_eval_input *in)
{
    if (!in) return;
    for (int64_t j = 0; j < in->nplans; j++) as_planrec_full_free(&in->plans[j]);
    free(in->plans);
    free(in->train);
    as_featidx_free(&in->ft);
    as_eval_singles_free(&in->singles);
    free(in->pred);
    free(in->meas);
    memset(in, 0, sizeof *in);
    in->back_at = -1;
}

/* the features of entries ent[0..m) of q into sh[] (a piece's made in pf[i]); 0, or -1 with
 * err naming the first entry without a features record (a data-parallel one: its whole
 * table) */
static int entry_features(const as_planrec_full *q, const int64_t *ent, int64_t m, as_featidx *ft, const as_features **sh,
                          as_features *pf, char *err, size_t errlen)
{
    for (int64_t g = 0; g < m; g++) {
        const int64_t i = ent[g];
        const as_piece *pc = q->pieces ? &q->pieces[i] : NULL;
        if (!pc || as_piece_whole(pc) ? !(sh[g] = as_featidx_get(ft, q->tables[i]))
                                      : as_featidx_piece(ft, q->tables[i], pc, &pf[i]) ? 1 : !(sh[g] = &pf[i])) {
            char nb[96];
            snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s %s%s has no features record in the input", q->task,
                     q->alg, pc && !as_piece_whole(pc) ? "piece" : "table", as_piece_name(nb, sizeof nb, q->tables[i], pc) + 1,
                     q->assign[i] == AS_DP ? " (data parallel)" : "");
            return -1;
        }
    }
    return 0;
}

/* q's shard costs by cm: each shard's own entries as one kernel, plus, with data-parallel
 * entries, their kernel over the whole batch by cm over K (each shard looks up 1/K of the
 * batch: an approximation of its slice, as as-plan's item_pred_ms of them), which is also
 * q->cost_dp; 0, or -1 with err */
static int estimate_plan(as_planrec_full *q, const as_costmodel *cm, as_featidx *ft, int linear, char *err, size_t errlen)
{
    const as_features **sh = as_malloc((size_t)(q->T ? q->T : 1) * sizeof *sh);
    as_features *pf = as_malloc((size_t)(q->T ? q->T : 1) * sizeof *pf);
    int64_t *start = as_malloc((size_t)(q->K + 1) * sizeof *start);
    int64_t *order = as_malloc((size_t)(q->T ? q->T : 1) * sizeof *order);
    int rc = 0;
    double dp = 0;
    free(q->cost_dp);
    q->cost_dp = NULL;
    if (q->ndp) {
        int64_t m = 0;
        for (int64_t i = 0; i < q->T; i++) if (q->assign[i] == AS_DP) order[m++] = i;
        rc = entry_features(q, order, m, ft, sh, pf, err, errlen);
        if (!rc) dp = as_costmodel_predict(cm, sh, (int)m) / (double)q->K;
        if (!rc) q->cost_dp = as_malloc((size_t)q->K * sizeof *q->cost_dp);
    }
    as_plan_group(start, order, q->assign, q->T, q->K);
    for (int64_t k = 0; k < q->K && !rc; k++) {
        const int64_t m = start[k + 1] - start[k];
        if ((rc = entry_features(q, order + start[k], m, ft, sh, pf, err, errlen))) break;
        q->cost[k] = as_costmodel_predict(cm, sh, (int)m);
        /* an unconstrained (output "linear") model's negative predictions come back as 0
         * (as_costmodel_out): a table shard (or data-parallel kernel) it prices at 0 was one
         * of them */
        if (linear && ((m > 0 && q->cost[k] == 0) || (q->cost_dp && dp == 0))) q->clamped++;
        if (q->cost_dp) {
            q->cost_dp[k] = dp;
            q->cost[k] += dp;
        }
    }
    free(sh);
    free(pf);
    free(start);
    free(order);
    return rc;
}

int as_eval_estimate(as_planrec_full *p, int64_t n, const as_costmodel *cm, as_featidx *ft, char *err, size_t errlen)
{
    if (as_featidx_build(ft, err, errlen)) return -1;   /* as_eval_input_read's: a no-op */
    const int linear = as_costmodel_cmeta(cm)->output == AS_CM_OUT_LINEAR;
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        if (estimate_plan(q, cm, ft, linear, err, errlen)) return -1;
        q->cost_kind = 2;
        /* estimates carry no measurement noise: the plan's as-bench noise fields do not
         * describe these costs */
        free(q->spread);
        free(q->noisy);
        q->spread = NULL;
        q->noisy = NULL;
        q->noise_threshold = NAN;
    }
    return 0;
}
