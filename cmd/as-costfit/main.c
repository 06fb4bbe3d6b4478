/* as-costfit - train the neural shard cost model on measured costs (as-bench) joined with
 * table features (as-features), evaluate it on held-out shards against two baselines, and
 * predict shard costs with a trained model. Dimension letters: K shards, T tables. */
#include "cli.h"
#include "common.h"
#include "costmodel.h"
#include "featurize.h"
#include "nn.h"
#include "plan.h"
#include "reclimits.h"
#include "stream.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the output form of new models (docs/RESULTS.md "Constrained cost-model output") */
#define AS_COSTFIT_DEFAULT_OUTPUT AS_CM_OUT_SOFTPLUS

static const char HELP[] =
    "Train: read `features` records (as-features) and `cost` records (as-bench) and write a\n"
    "cost model: a stream with one `model` record (weights, normalisation statistics, feature\n"
    "order, the device the costs were measured on, training metadata) followed by a\n"
    "`costfit-report` record (held-out errors, baselines; docs/FORMAT.md).\n"
    "  cat features.ast costs.ast | as-costfit [options] > model.ast\n"
    "\n"
    "Model (the paper's): per table the 21 features (dim, rows, pooling z-scored with the\n"
    "training tables' statistics; size, bins raw) -> 21->H1->H2 MLP (ReLU) -> sum over the\n"
    "shard's tables -> H2->H3->1 MLP -> z -> shard cost in ms (the output form). Adam.\n"
    "      --output-form F    how z becomes a cost (never negative) and what the loss is:\n"
    "                         softplus: cost = y_scale * softplus(20 z) / 20, a smooth\n"
    "                           max(0, y_scale z); MSE in ms^2 (default);\n"
    "                         log: cost = y_scale * exp(z), MSE of log(cost/y_scale):\n"
    "                           relative errors; y_scale defaults to the geometric mean;\n"
    "                         linear: cost = y_scale * z, MSE in ms^2, unconstrained (the\n"
    "                           first models' form, for comparison; predictions below 0\n"
    "                           are shown as 0)\n"
    "                         (docs/RESULTS.md \"Constrained cost-model output\" compares them)\n"
    "      --epochs N         passes over the training shards (default 300)\n"
    "      --steps N          optimiser steps instead of epochs\n"
    "      --lr X             Adam learning rate (default 1e-3)\n"
    "      --batch N          shards per step (default 512)\n"
    "      --hidden H1,H2,H3  hidden sizes (default 128,32,64)\n"
    "      --clip X           global gradient-norm clip (default 0 = none)\n"
    "      --y-scale X        the cost scale of the output form (default: the mean training\n"
    "                         cost, for log the geometric mean; 1 trains on raw ms as the\n"
    "                         paper)\n"
    "      --seed S           initialisation, split and shuffling seed (default 0);\n"
    "                         training on the CPU is deterministic for a seed\n"
    "      --device D         auto (a working GPU, else the CPU), cpu, cuda, cuda:N (default cpu)\n"
    "      --threads N        BLAS threads on the CPU (default 1)\n"
    "      --log-features     z-score log1p(dim), log1p(rows), log1p(pooling) instead of the raw\n"
    "                         values (the paper z-scores raw values; heavy-tailed hash sizes\n"
    "                         generalise better to unseen tables in log space)\n"
    "      --init MODEL       continue training MODEL (keeps its sizes, statistics, y-scale,\n"
    "                         output form)\n"
    "\n"
    "Evaluation (errors on stderr, in the model record's `heldout` and in the\n"
    "`costfit-report` record; a warning when the model predicts the test shards worse\n"
    "than the linear baseline):\n"
    "      --split shards     hold out a random fraction of the shards (default); identical\n"
    "                         table sets stay on one side\n"
    "      --split tables     unseen tables (the paper's Table 3): train on shards made only\n"
    "                         of the first half of the table ids, test on shards made only of\n"
    "                         the second half; shards mixing both are dropped\n"
    "      --test-frac F      held-out fraction for --split shards (default 0.2; 0 = none)\n"
    "      --report FILE      write the report record to FILE instead of after the model\n"
    "  Baselines on the same test shards: the sum of the measured costs of 1-table shards of\n"
    "  the same tables (where the data has them all; coverage reported) and a least-squares\n"
    "  line cost = a + b * sum(dim x pooling) fitted on the training shards. Metrics: MAE,\n"
    "  MSE (ms, ms^2), MAPE (%), R^2.\n"
    "\n"
    "Predict:\n"
    "      --predict MODEL    read `features` records and `shard`, `cost` and `plan` records;\n"
    "                         write every record back in order, shards and costs with\n"
    "                         `pred_ms` added, plans with `pred_ms` per shard and\n"
    "                         `pred_max_ms`; an infeasible plan's shards are predicted from\n"
    "                         the tables placed on them and its `pred_max_ms` is nil;\n"
    "                         every prediction is >= 0 (a legacy linear model's negative\n"
    "                         outputs are shown as 0)\n"
    "\n"
    "Cost records with an error or no cost_ms are skipped (counted on stderr); a cost_ms that\n"
    "is not a finite number above 0 is bad data (exit 1). A cost or shard\n"
    "whose tables have no `features` record is an error (exit 1).\n";

enum { OPT_EPOCHS = AS_OPT_TOOL_BASE, OPT_STEPS, OPT_LR, OPT_BATCH, OPT_HIDDEN, OPT_CLIP, OPT_YSCALE, OPT_LOGF, OPT_SEED,
       OPT_DEVICE, OPT_THREADS, OPT_INIT, OPT_SPLIT, OPT_TESTFRAC, OPT_REPORT, OPT_PREDICT, OPT_OUTFORM };

/* ---- input ---------------------------------------------------------------------------------- */

typedef struct {
    as_features *f;
    int64_t n, cap;
    int64_t nall;      /* records read (f[0..nall)); n = distinct ids after ftab_index */
    int64_t *sorted;   /* positions sorted by id, after reading */
} ftab;

typedef struct {
    int64_t *ids;
    int64_t n;
    double cost, rel_std;
    int dev;            /* index into devices */
    uint64_t rec;
    int file;
} costrec;

static char **devices, **devkinds;
static int ndevices;

static int dev_index(const char *d, const char *kind)
{
    for (int i = 0; i < ndevices; i++) if (!strcmp(devices[i], d)) return i;
    devices = as_realloc(devices, (size_t)(ndevices + 1) * sizeof *devices);
    devkinds = as_realloc(devkinds, (size_t)(ndevices + 1) * sizeof *devkinds);
    devices[ndevices] = as_strdup(d);
    devkinds[ndevices] = as_strdup(kind);
    return ndevices++;
}

static const ftab *g_ft;
static int cmp_fid(const void *a, const void *b)
{
    int64_t x = g_ft->f[*(const int64_t *)a].id, y = g_ft->f[*(const int64_t *)b].id;
    return x < y ? -1 : x > y;
}

static void ftab_add(ftab *t, const as_features *f)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->f = as_realloc(t->f, (size_t)t->cap * sizeof *t->f);
    }
    t->f[t->n++] = *f;
}

/* sort, drop exact duplicates, fail on conflicting duplicates */
static void ftab_index(ftab *t)
{
    t->nall = t->n;
    t->sorted = as_malloc((size_t)(t->n + 1) * sizeof *t->sorted);
    for (int64_t i = 0; i < t->n; i++) t->sorted[i] = i;
    g_ft = t;
    qsort(t->sorted, (size_t)t->n, sizeof *t->sorted, cmp_fid);
    int64_t w = 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (w > 0 && t->f[t->sorted[w - 1]].id == t->f[t->sorted[i]].id) {
            double a[AS_NFEATURES], b[AS_NFEATURES];
            as_features_vector(&t->f[t->sorted[w - 1]], a);
            as_features_vector(&t->f[t->sorted[i]], b);
            if (memcmp(a, b, sizeof a))
                as_die(AS_EXIT_DATA, "table %" PRId64 " has two different `features` records (features of two pools mixed?)",
                       t->f[t->sorted[i]].id);
            continue;
        }
        t->sorted[w++] = t->sorted[i];
    }
    t->n = w;   /* t->f keeps every record; sorted[0..n) are the distinct ones */
}

static int64_t ftab_find(const ftab *t, int64_t id)
{
    int64_t lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2, v = t->f[t->sorted[mid]].id;
        if (v == id) return t->sorted[mid];
        if (v < id) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* ---- metrics ---------------------------------------------------------------------------------- */

typedef as_costmodel_metrics metrics;

/* over i with (mask == NULL || mask[i]) */
static metrics measure(const double *y, const double *p, const char *mask, int64_t n)
{
    return as_costmodel_metrics_of(y, p, mask, n);
}

static void pack_num(msgpack_packer *pk, double v)
{
    if (isfinite(v)) msgpack_pack_double(pk, v);
    else msgpack_pack_nil(pk);
}

static void pack_metrics(msgpack_packer *pk, const char *k, metrics m)
{
    as_pack_str(pk, k);
    msgpack_pack_map(pk, 5);
    as_pack_kv_i64(pk, "n", m.n);
    as_pack_str(pk, "mae"); pack_num(pk, m.mae);
    as_pack_str(pk, "mse"); pack_num(pk, m.mse);
    as_pack_str(pk, "mape"); pack_num(pk, m.mape);
    as_pack_str(pk, "r2"); pack_num(pk, m.r2);
}

static void print_metrics(const char *label, metrics m)
{
    if (m.n == 0) { as_info("  %-26s %7s", label, "-"); return; }
    as_info("  %-26s %7" PRId64 " %10.4g %10.4g %8.2f %8.4f", label, m.n, m.mae, m.mse, m.mape, m.r2);
}

/* ---- progress --------------------------------------------------------------------------------- */

typedef struct { as_progress p; double last_loss; } prog_ctx;

static void on_step(void *ctx, int64_t step, int64_t steps, double loss)
{
    prog_ctx *c = ctx;
    c->last_loss = loss;
    as_progress_update(&c->p, (double)step);
}

/* an input's name in messages, as the stream reader names it: "-" is "<stdin>" */
static const char *input_name(const char *path)
{
    return strcmp(path, "-") ? path : "<stdin>";
}

/* ---- predict mode ------------------------------------------------------------------------------ */

typedef struct { char *buf; size_t len, cap; size_t *off; int64_t n, ncap; uint64_t *rec; int *file; } rawlist;

static void raw_add(rawlist *l, const as_record *r, int file)
{
    if (l->len + r->rawlen > l->cap) {
        l->cap = (l->len + r->rawlen) * 2 + 4096;
        l->buf = as_realloc(l->buf, l->cap);
    }
    if (l->n + 1 >= l->ncap) {
        l->ncap = l->ncap ? 2 * l->ncap : 1024;
        l->off = as_realloc(l->off, (size_t)(l->ncap + 1) * sizeof *l->off);
        l->rec = as_realloc(l->rec, (size_t)l->ncap * sizeof *l->rec);
        l->file = as_realloc(l->file, (size_t)l->ncap * sizeof *l->file);
    }
    if (l->n == 0) l->off[0] = 0;
    memcpy(l->buf + l->len, r->raw, r->rawlen);
    l->len += r->rawlen;
    l->rec[l->n] = r->index;
    l->file[l->n] = file;
    l->off[++l->n] = l->len;
}

/* the features of ids (exit 1 naming the record when one is missing) */
static const as_features **lookup(const ftab *ft, const int64_t *ids, int64_t n, const char *fname, uint64_t rec,
                                  as_writer *w)
{
    const as_features **f = as_malloc((size_t)(n + 1) * sizeof *f);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ftab_find(ft, ids[i]);
        if (k < 0) {
            if (w) as_writer_abort(w);
            as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": table %" PRId64 " has no `features` record", fname, rec, ids[i]);
        }
        f[i] = &ft->f[k];
    }
    return f;
}

/* copy map entries of o except keys in skip[] */
static void copy_except(msgpack_packer *pk, const msgpack_object *o, const char *const *skip, int nskip, int *kept)
{
    *kept = 0;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        int drop = 0;
        for (int s = 0; s < nskip; s++) drop |= as_obj_streq(&kv->key, skip[s]);
        if (drop) continue;
        if (pk) {
            msgpack_pack_object(pk, kv->key);
            msgpack_pack_object(pk, kv->val);
        }
        (*kept)++;
    }
}

static void predict_mode(as_cli *cli, const char *model_path, char **files, int nfiles)
{
    char err[1024];
    as_costmodel *m;
    if (as_costmodel_load(&m, model_path, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    ftab ft = { 0 };
    rawlist raw = { 0 };
    for (int fi = 0; fi < nfiles; fi++) {
        as_reader *r = as_reader_open(files[fi]);
        if (!r) exit(AS_EXIT_DATA);
        as_record rec;
        while (as_reader_next_or_die(r, &rec) == 1) {
            if (as_rec_is(&rec, "header")) continue;
            if (as_rec_is(&rec, "features")) {
                as_features f;
                if (as_features_read(&rec.obj, &f, err, sizeof err))
                    as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec.index, err);
                ftab_add(&ft, &f);
            }
            raw_add(&raw, &rec, fi);
        }
        as_reader_close(r);
    }
    ftab_index(&ft);
    as_writer *w = as_cli_open_output(cli);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int64_t nshard = 0, ncost = 0, nplan = 0;
    double t0 = as_now(), tpred = 0;
    for (int64_t i = 0; i < raw.n; i++) {
        const char *p = raw.buf + raw.off[i];
        size_t len = raw.off[i + 1] - raw.off[i], used = 0;
        if (msgpack_unpack_next(&up, p, len, &used) != MSGPACK_UNPACK_SUCCESS) as_die(AS_EXIT_DATA, "internal: re-parse failed");
        const msgpack_object *o = &up.data;
        const msgpack_object *kind = as_obj_get(o, "kind");
        const char *fname = input_name(files[raw.file[i]]);
        int is_shard = as_obj_streq(kind, "shard"), is_cost = as_obj_streq(kind, "cost"), is_plan = as_obj_streq(kind, "plan");
        if (!is_shard && !is_cost && !is_plan) { as_writer_raw(w, p, len); continue; }
        /* every field range-checked by the shared readers (lib/reclimits.h, lib/plan.h) */
        int64_t *ids = NULL, n = 0;
        as_planrec pr;
        char e2[768];
        if (is_plan ? as_planrec_read(o, &pr, e2, sizeof e2) : as_field_table_ids(o, "tables", &ids, &n, e2, sizeof e2)) {
            as_writer_abort(w);
            as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": %s%s", fname, raw.rec[i], is_plan ? "" : is_shard ? "shard: " : "cost: ", e2);
        }
        const as_features **f = NULL;
        msgpack_packer *pk;
        if (!is_plan) {
            f = lookup(&ft, ids, n, fname, raw.rec[i], w);
            pk = as_writer_pk(w);
            static const char *const skip[] = { "pred_ms" };
            int kept;
            copy_except(NULL, o, skip, 1, &kept);
            msgpack_pack_map(pk, (size_t)kept + 1);
            copy_except(pk, o, skip, 1, &kept);
            double t1 = as_now();
            double y = as_costmodel_predict(m, (const as_features *const *)f, (int)n);
            tpred += as_now() - t1;
            as_pack_kv_f64(pk, "pred_ms", y);
            if (is_shard) nshard++; else ncost++;
        } else {
            /* an infeasible plan (assign -1, as-plan writes them) is predicted too: each shard
               from the tables placed on it; the plan's maximum is nil, as it has no cost */
            const int64_t K = pr.shards;
            int64_t *start = as_malloc((size_t)(K + 1) * sizeof *start), *order = as_malloc((size_t)(pr.n + 1) * sizeof *order);
            as_planrec_group(&pr, start, order);
            int64_t *placed = as_malloc((size_t)(pr.n + 1) * sizeof *placed);
            for (int64_t q = 0; q < start[K]; q++) placed[q] = pr.tables[order[q]];
            const as_features **g = lookup(&ft, placed, start[K], fname, raw.rec[i], w);
            pk = as_writer_pk(w);
            static const char *const skip[] = { "pred_ms", "pred_max_ms" };
            int kept;
            copy_except(NULL, o, skip, 2, &kept);
            msgpack_pack_map(pk, (size_t)kept + 2);
            copy_except(pk, o, skip, 2, &kept);
            as_pack_str(pk, "pred_ms");
            msgpack_pack_array(pk, (size_t)K);
            double mx = 0, t1 = as_now();
            for (int64_t k = 0; k < K; k++) {
                double y = as_costmodel_predict(m, (const as_features *const *)(g + start[k]), (int)(start[k + 1] - start[k]));
                if (y > mx) mx = y;
                msgpack_pack_double(pk, y);
            }
            tpred += as_now() - t1;
            as_pack_str(pk, "pred_max_ms");
            if (pr.unplaced) msgpack_pack_nil(pk);
            else msgpack_pack_double(pk, mx);
            free(start);
            free(order);
            free(placed);
            free(g);
            as_planrec_free(&pr);
            nplan++;
        }
        as_writer_end_record(w);
        free(f);
        free(ids);
    }
    msgpack_unpacked_destroy(&up);
    as_writer_close(w);
    as_info("predicted %" PRId64 " shard(s), %" PRId64 " cost(s), %" PRId64 " plan(s) with a model of costs on %s "
            "(%.3f s, %.1f us in the model)", nshard, ncost, nplan, as_costmodel_device(m)[0] ? as_costmodel_device(m) : "?",
            as_now() - t0, 1e6 * tpred);
    as_costmodel_free(m);
    free(raw.buf); free(raw.off); free(raw.rec); free(raw.file);
    free(ft.f); free(ft.sorted);
}

/* ---- training mode ------------------------------------------------------------------------------ */

static uint64_t set_hash(const int64_t *ids, int64_t n)
{
    /* order-independent: sort a copy */
    int64_t *c = as_malloc((size_t)(n + 1) * sizeof *c);
    memcpy(c, ids, (size_t)n * sizeof *c);
    for (int64_t i = 1; i < n; i++)
        for (int64_t j = i; j > 0 && c[j - 1] > c[j]; j--) { int64_t t = c[j]; c[j] = c[j - 1]; c[j - 1] = t; }
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        uint64_t s = h ^ (uint64_t)c[i];
        h = as_splitmix64(&s);
    }
    free(c);
    return h;
}

typedef struct { uint64_t h; int64_t i; } hkey;
static int cmp_hkey(const void *a, const void *b)
{
    const hkey *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h ? 1 : (x->i < y->i ? -1 : x->i > y->i);
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-costfit", "as-costfit [options] [FILE...]", HELP);
    static const struct option opts[] = {
        { "epochs", required_argument, 0, OPT_EPOCHS },
        { "steps", required_argument, 0, OPT_STEPS },
        { "lr", required_argument, 0, OPT_LR },
        { "batch", required_argument, 0, OPT_BATCH },
        { "hidden", required_argument, 0, OPT_HIDDEN },
        { "clip", required_argument, 0, OPT_CLIP },
        { "y-scale", required_argument, 0, OPT_YSCALE },
        { "log-features", no_argument, 0, OPT_LOGF },
        { "seed", required_argument, 0, OPT_SEED },
        { "device", required_argument, 0, OPT_DEVICE },
        { "threads", required_argument, 0, OPT_THREADS },
        { "init", required_argument, 0, OPT_INIT },
        { "split", required_argument, 0, OPT_SPLIT },
        { "test-frac", required_argument, 0, OPT_TESTFRAC },
        { "report", required_argument, 0, OPT_REPORT },
        { "predict", required_argument, 0, OPT_PREDICT },
        { "output-form", required_argument, 0, OPT_OUTFORM },
        AS_CLI_COMMON_OPTIONS
    };
    int64_t epochs = 300, steps = 0, batch = 512, threads = 1, hidden[3] = { 128, 32, 64 };
    double lr = 1e-3, clip = 0, yscale = 0, test_frac = 0.2;
    int log_feats = 0;
    uint64_t seed = 0;
    const char *device = "cpu", *init = NULL, *report = NULL, *predict = NULL;
    int split_tables = 0, hidden_given = 0, out_form = AS_COSTFIT_DEFAULT_OUTPUT, out_given = 0, opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, opts, NULL)) != -1) {
        switch (opt) {
        case OPT_EPOCHS: epochs = as_cli_i64(&cli, "--epochs", optarg, 1, 100000000); break;
        case OPT_STEPS: steps = as_cli_i64(&cli, "--steps", optarg, 1, 1000000000); break;
        case OPT_LR: lr = as_cli_f64(&cli, "--lr", optarg, 1e-12, 10); break;
        case OPT_BATCH: batch = as_cli_i64(&cli, "--batch", optarg, 1, 1000000); break;
        case OPT_HIDDEN: {
            int64_t *v;
            size_t nv;
            if (as_parse_i64_list(optarg, 1, 65536, &v, &nv) || nv != 3)
                as_cli_usage(&cli, "--hidden: '%s' is not three sizes H1,H2,H3 in 1..65536", optarg);
            for (int i = 0; i < 3; i++) hidden[i] = v[i];
            free(v);
            hidden_given = 1;
            break;
        }
        case OPT_CLIP: clip = as_cli_f64(&cli, "--clip", optarg, 0, 1e30); break;
        case OPT_YSCALE: yscale = as_cli_f64(&cli, "--y-scale", optarg, 1e-30, 1e30); break;
        case OPT_LOGF: log_feats = 1; break;
        case OPT_SEED: seed = (uint64_t)as_cli_i64(&cli, "--seed", optarg, 0, INT64_MAX); break;
        case OPT_DEVICE: device = optarg; break;
        case OPT_THREADS: threads = as_cli_i64(&cli, "--threads", optarg, 1, 1024); break;
        case OPT_INIT: init = optarg; break;
        case OPT_SPLIT:
            if (!strcmp(optarg, "tables")) split_tables = 1;
            else if (!strcmp(optarg, "shards")) split_tables = 0;
            else as_cli_usage(&cli, "--split: '%s' is not shards or tables", optarg);
            break;
        case OPT_TESTFRAC: test_frac = as_cli_f64(&cli, "--test-frac", optarg, 0, 0.99); break;
        case OPT_REPORT: report = optarg; break;
        case OPT_PREDICT: predict = optarg; break;
        case OPT_OUTFORM:
            if ((out_form = as_costmodel_output_parse(optarg)) < 0)
                as_cli_usage(&cli, "--output-form: '%s' is not softplus, log or linear", optarg);
            out_given = 1;
            break;
        default:
            if (!as_cli_common(&cli, opt, optarg)) as_cli_usage(&cli, "unknown option");
        }
    }
    as_cli_finish(&cli);
    as_cli_inputs(&cli, (const char *const[]){ init, predict }, 2);
    if (report) as_cli_output_arg(&cli, "--report", report);
    if (predict && (init || report)) as_cli_usage(&cli, "--predict does not train: no --init or --report");
    if (init && hidden_given) as_cli_usage(&cli, "--init keeps the model's sizes: no --hidden");
    if (init && out_given) as_cli_usage(&cli, "--init keeps the model's output form: no --output-form");
    if (predict && out_given) as_cli_usage(&cli, "--predict uses the model's output form: no --output-form");
    as_nn_set_threads((int)threads);
    char *none[] = { "-" };
    char **files = optind < argc ? argv + optind : none;
    int nfiles = optind < argc ? argc - optind : 1;
    if (predict) { predict_mode(&cli, predict, files, nfiles); return 0; }

    char err[1024];
    int code;
    const as_nn_ops *ops = as_nn_device(device, &code, err, sizeof err);
    if (!ops) {
        if (code == AS_EXIT_USAGE) as_cli_usage(&cli, "%s", err);
        as_die(AS_EXIT_ENV, "%s", err);
    }
    as_costmodel *m = NULL;
    if (init && as_costmodel_load(&m, init, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    /* open the output early: a TTY is refused before any work */
    as_writer *w = as_cli_open_output(&cli);

    /* ---- read ---- */
    ftab ft = { 0 };
    costrec *cs = NULL;
    int64_t ncs = 0, capcs = 0, nskipped = 0, nempty = 0;
    for (int fi = 0; fi < nfiles; fi++) {
        as_reader *r = as_reader_open(files[fi]);
        if (!r) { as_writer_abort(w); exit(AS_EXIT_DATA); }
        as_record rec;
        int rc;
        while ((rc = as_reader_next(r, &rec)) == 1) {
            if (as_rec_is(&rec, "features")) {
                as_features f;
                if (as_features_read(&rec.obj, &f, err, sizeof err)) {
                    as_writer_abort(w);
                    as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec.index, err);
                }
                ftab_add(&ft, &f);
            } else if (as_rec_is(&rec, "cost")) {
                costrec c = { 0 };
                const msgpack_object *e = as_obj_get(&rec.obj, "error"), *cm = as_obj_get(&rec.obj, "cost_ms");
                if ((e && e->type != MSGPACK_OBJECT_NIL) || !cm || cm->type == MSGPACK_OBJECT_NIL) {
                    nskipped++;   /* not measured */
                    continue;
                }
                /* a measured cost is training data: finite and positive, or the input is bad */
                char e2[768];
                int bad = as_field_f64(&rec.obj, "cost_ms", -INFINITY, INFINITY, &c.cost, e2, sizeof e2);
                if (!bad && !(c.cost > 0)) {
                    snprintf(e2, sizeof e2, "'cost_ms' = %g is not a positive cost", c.cost);
                    bad = 1;
                }
                if (bad || as_field_table_ids(&rec.obj, "tables", &c.ids, &c.n, e2, sizeof e2)) {
                    as_writer_abort(w);
                    as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": cost: %s", as_reader_name(r), rec.index, e2);
                }
                if (c.n == 0) { nempty++; free(c.ids); continue; }
                if (as_obj_f64(&rec.obj, "rel_std", &c.rel_std)) c.rel_std = NAN;
                char dev[256] = "", kind[16] = "";
                as_obj_str(&rec.obj, "device", dev, sizeof dev);
                as_obj_str(&rec.obj, "device_kind", kind, sizeof kind);
                c.dev = dev_index(dev, kind);
                c.rec = rec.index;
                c.file = fi;
                if (ncs == capcs) {
                    capcs = capcs ? 2 * capcs : 1024;
                    cs = as_realloc(cs, (size_t)capcs * sizeof *cs);
                }
                cs[ncs++] = c;
            }
        }
        if (rc < 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "%s", as_reader_error(r)); }
        as_reader_close(r);
    }
    ftab_index(&ft);
    if (nskipped) as_info("skipped %" PRId64 " cost record(s) with an error or no cost_ms", nskipped);
    if (nempty) as_info("skipped %" PRId64 " cost record(s) of empty shards", nempty);
    if (ncs == 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "no usable `cost` records in the input (%" PRId64 " skipped)", nskipped); }
    if (ndevices > 1) {
        as_writer_abort(w);
        as_die(AS_EXIT_DATA, "the costs were measured on %d different devices ('%s', '%s'%s): train one model per device",
               ndevices, devices[0], devices[1], ndevices > 2 ? ", ..." : "");
    }
    if (m && as_costmodel_device(m)[0] && strcmp(as_costmodel_device(m), devices[0]))
        as_err("warning: --init model was trained on costs from '%s', these are from '%s'", as_costmodel_device(m), devices[0]);

    /* ---- join: the shard set ---- */
    int64_t tot = 0;
    for (int64_t i = 0; i < ncs; i++) tot += cs[i].n;
    int64_t *off = as_malloc((size_t)(ncs + 1) * sizeof *off), *idx = as_malloc((size_t)(tot + 1) * sizeof *idx);
    double *cost = as_malloc((size_t)ncs * sizeof *cost);
    off[0] = 0;
    for (int64_t i = 0; i < ncs; i++) {
        for (int64_t j = 0; j < cs[i].n; j++) {
            int64_t k = ftab_find(&ft, cs[i].ids[j]);
            if (k < 0) {
                as_writer_abort(w);
                as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": cost of a shard with table %" PRId64 ", which has no `features` record%s",
                       input_name(files[cs[i].file]), cs[i].rec, cs[i].ids[j], ft.n ? "" : " (the input holds no features at all: cat features.ast costs.ast | as-costfit)");
            }
            idx[off[i] + j] = k;
        }
        off[i + 1] = off[i] + cs[i].n;
        cost[i] = cs[i].cost;
    }
    as_costset d = { ft.f, ft.nall, off, idx, cost, ncs };
    (void)tot;

    /* ---- split ---- */
    int64_t *train = as_malloc((size_t)ncs * sizeof *train), *test = as_malloc((size_t)ncs * sizeof *test);
    int64_t ntrain = 0, ntest = 0, ndropped = 0;
    if (split_tables) {
        int64_t half = ft.n / 2, cut = ft.n > 0 ? ft.f[ft.sorted[half < ft.n ? half : ft.n - 1]].id : 0;
        /* ids < cut: the first half (training); >= cut: the second (test) */
        for (int64_t i = 0; i < ncs; i++) {
            int lo = 0, hi = 0;
            for (int64_t j = 0; j < cs[i].n; j++) { if (cs[i].ids[j] < cut) lo = 1; else hi = 1; }
            if (lo && !hi) train[ntrain++] = i;
            else if (hi && !lo) test[ntest++] = i;
            else ndropped++;
        }
        as_info("split by tables: ids below %" PRId64 " train, the rest test; %" PRId64 " train, %" PRId64 " test shards, %"
                PRId64 " mixing both dropped", cut, ntrain, ntest, ndropped);
    } else {
        /* groups of identical table sets go to one side: decide per group from its hash */
        for (int64_t i = 0; i < ncs; i++) {
            uint64_t s = set_hash(cs[i].ids, cs[i].n) ^ (seed * 0x2545f4914f6cdd1dULL) ^ 0x73706c6974ULL;
            double u = (double)(as_splitmix64(&s) >> 11) * 0x1.0p-53;
            if (u < test_frac) test[ntest++] = i;
            else train[ntrain++] = i;
        }
    }
    if (ntrain == 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "no training shards after the split (%" PRId64 " usable costs)", ncs); }

    /* ---- model ---- */
    if (!m) {
        m = as_costmodel_new((int)hidden[0], (int)hidden[1], (int)hidden[2], seed);
        as_costmodel_meta(m)->log_feats = log_feats;
        as_costmodel_meta(m)->output = out_form;
        as_costmodel_fit_stats(m, &d, train, ntrain, yscale);
    } else {
        /* keep its statistics and y_scale; count the training tables */
        as_costmodel_info keep = *as_costmodel_meta(m);
        as_costmodel_fit_stats(m, &d, train, ntrain, 1);
        as_costmodel_info *in = as_costmodel_meta(m);
        memcpy(in->mean, keep.mean, sizeof in->mean);
        memcpy(in->std, keep.std, sizeof in->std);
        in->y_scale = keep.y_scale;
    }
    as_costmodel_info *info = as_costmodel_meta(m);
    snprintf(info->cost_device, sizeof info->cost_device, "%s", devices[0]);
    snprintf(info->cost_device_kind, sizeof info->cost_device_kind, "%s", devkinds[0]);
    snprintf(info->split, sizeof info->split, "%s", split_tables ? "tables" : test_frac > 0 ? "shards" : "none");
    info->train_shards = ntrain;
    info->test_shards = ntest;

    /* ---- train ---- */
    prog_ctx pc = { 0 };
    int64_t B = batch < ntrain ? batch : ntrain, per_epoch = (ntrain + B - 1) / B;
    int64_t nsteps = steps > 0 ? steps : epochs * per_epoch;
    as_progress_start(&pc.p, &cli, "steps", (double)nsteps);
    as_costfit_opts o = { epochs, steps, lr, (int)batch, clip, seed, ops, on_step, &pc };
    double t0 = as_now();
    if (as_costmodel_train(m, &d, train, ntrain, &o, err, sizeof err)) {
        as_progress_end(&pc.p);
        as_writer_abort(w);
        as_die(AS_EXIT_DATA, "%s", err);
    }
    double ttrain = as_now() - t0;
    as_progress_end(&pc.p);
    double sps = ttrain > 0 ? (double)nsteps * (double)B / ttrain : 0;

    /* ---- evaluate ---- */
    double *ytr = as_malloc((size_t)ntrain * sizeof *ytr), *ptr = as_malloc((size_t)ntrain * sizeof *ptr);
    double *yte = as_malloc((size_t)(ntest + 1) * sizeof *yte), *pte = as_malloc((size_t)(ntest + 1) * sizeof *pte);
    as_costmodel_predict_batch(m, &d, train, ntrain, ptr);
    as_costmodel_predict_batch(m, &d, test, ntest, pte);
    for (int64_t i = 0; i < ntrain; i++) ytr[i] = cost[train[i]];
    for (int64_t i = 0; i < ntest; i++) yte[i] = cost[test[i]];
    metrics mtr = measure(ytr, ptr, NULL, ntrain), mte = measure(yte, pte, NULL, ntest);
    /* a linear (legacy) model's raw outputs below 0: predictions show them as 0 */
    int64_t nneg = 0;
    if (info->output == AS_CM_OUT_LINEAR && ntest > 0) {
        double *z = as_malloc((size_t)ntest * sizeof *z);
        as_costmodel_z_batch(m, &d, test, ntest, z);
        for (int64_t i = 0; i < ntest; i++) nneg += z[i] < 0;
        free(z);
    }

    /* baseline (a): sums of measured 1-table costs (mean over repeats), over the whole data */
    double *single = as_calloc((size_t)ft.nall + 1, sizeof *single);
    int64_t *nsingle = as_calloc((size_t)ft.nall + 1, sizeof *nsingle);
    for (int64_t i = 0; i < ncs; i++)
        if (cs[i].n == 1) { single[idx[off[i]]] += cost[i]; nsingle[idx[off[i]]]++; }
    double *sste = as_malloc((size_t)(ntest + 1) * sizeof *sste);
    char *cov = as_calloc((size_t)ntest + 1, 1);
    int64_t ncov = 0;
    for (int64_t i = 0; i < ntest; i++) {
        int64_t k = test[i];
        double s = 0;
        int ok = 1;
        for (int64_t j = off[k]; j < off[k + 1]; j++) {
            /* a 1-table test shard must not predict itself: leave its own measurement out */
            double sum = single[idx[j]];
            int64_t cnt = nsingle[idx[j]];
            if (cs[k].n == 1) { sum -= cost[k]; cnt--; }
            if (cnt <= 0) { ok = 0; break; }
            s += sum / (double)cnt;
        }
        cov[i] = (char)ok;
        sste[i] = ok ? s : NAN;
        ncov += ok;
    }
    metrics msum = measure(yte, sste, cov, ntest), mcov = measure(yte, pte, cov, ntest);

    /* baseline (b): cost = a + b * sum(dim x pooling), least squares on the training shards */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    double *xs = as_malloc((size_t)ncs * sizeof *xs);
    for (int64_t i = 0; i < ncs; i++) {
        double x = 0;
        for (int64_t j = off[i]; j < off[i + 1]; j++) x += (double)ft.f[idx[j]].dim * ft.f[idx[j]].pooling;
        xs[i] = x;
    }
    for (int64_t i = 0; i < ntrain; i++) {
        double x = xs[train[i]], y = cost[train[i]];
        sx += x; sy += y; sxx += x * x; sxy += x * y;
    }
    double den = ntrain * sxx - sx * sx;
    double lb = den != 0 ? (ntrain * sxy - sx * sy) / den : 0, la = (sy - lb * sx) / ntrain;
    double *ltr = as_malloc((size_t)ntrain * sizeof *ltr), *lte = as_malloc((size_t)(ntest + 1) * sizeof *lte);
    for (int64_t i = 0; i < ntrain; i++) ltr[i] = la + lb * xs[train[i]];
    for (int64_t i = 0; i < ntest; i++) lte[i] = la + lb * xs[test[i]];
    metrics lmtr = measure(ytr, ltr, NULL, ntrain), lmte = measure(yte, lte, NULL, ntest);

    /* the benchmark's own noise: mean rel_std of the test measurements; repeats of a table set */
    double srs = 0;
    int64_t nrs = 0;
    for (int64_t i = 0; i < ntest; i++) if (isfinite(cs[test[i]].rel_std)) { srs += cs[test[i]].rel_std; nrs++; }
    if (ntest == 0)
        for (int64_t i = 0; i < ncs; i++) if (isfinite(cs[i].rel_std)) { srs += cs[i].rel_std; nrs++; }
    hkey *hk = as_malloc((size_t)ncs * sizeof *hk);
    for (int64_t i = 0; i < ncs; i++) { hk[i].h = set_hash(cs[i].ids, cs[i].n); hk[i].i = i; }
    qsort(hk, (size_t)ncs, sizeof *hk, cmp_hkey);
    double rep_abs = 0, rep_rel = 0;
    int64_t rep_n = 0, rep_groups = 0;
    for (int64_t a = 0; a < ncs;) {
        int64_t b = a;
        double mu = 0;
        while (b < ncs && hk[b].h == hk[a].h) mu += cost[hk[b++].i];
        if (b - a >= 2) {
            mu /= (double)(b - a);
            rep_groups++;
            for (int64_t q = a; q < b; q++) {
                rep_abs += fabs(cost[hk[q].i] - mu);
                if (mu > 0) rep_rel += fabs(cost[hk[q].i] - mu) / mu;
                rep_n++;
            }
        }
        a = b;
    }
    double mean_rel_std = nrs ? srs / nrs : NAN;
    double rep_mae = rep_n ? rep_abs / rep_n : NAN, rep_mape = rep_n ? 100 * rep_rel / rep_n : NAN;

    as_info("%" PRId64 " train / %" PRId64 " test shards (split %s), %" PRId64 " tables with features; costs on %s",
            ntrain, ntest, info->split, ft.n, devices[0]);
    as_info("trained %" PRId64 " steps (batch %" PRId64 ") in %.2f s on %s: %.0f samples/s; output %s, final train loss %.4g %s",
            nsteps, B, ttrain, ops->name, sps, as_costmodel_output_name(info->output),
            info->nlosses ? info->losses[info->nlosses - 1] : NAN, info->output == AS_CM_OUT_LOG ? "(log ratio)^2" : "ms^2");
    as_info("  %-26s %7s %10s %10s %8s %8s", "", "n", "MAE ms", "MSE ms^2", "MAPE %", "R^2");
    print_metrics("model train", mtr);
    print_metrics("model test", mte);
    print_metrics("linear(dim*pooling) train", lmtr);
    print_metrics("linear(dim*pooling) test", lmte);
    char lab[64];
    snprintf(lab, sizeof lab, "sum-single test (%.0f%% cov)", ntest ? 100.0 * ncov / ntest : 0.0);
    print_metrics(lab, msum);
    print_metrics("model test, same shards", mcov);
    as_info("  noise: mean rel_std %.2f%%; %" PRId64 " repeated table sets: MAE %.4g ms (%.2f%%) to their mean",
            100 * mean_rel_std, rep_groups, rep_mae, rep_mape);
    if (info->output == AS_CM_OUT_LINEAR && ntest > 0)
        as_info("  output linear: %" PRId64 " of %" PRId64 " test predictions below 0 ms before clamping to 0", nneg, ntest);

    /* the held-out evaluation goes into the model record (docs/FORMAT.md `heldout`) */
    as_costmodel_heldout *ho = &info->heldout;
    memset(ho, 0, sizeof *ho);
    if (ntest > 0) {
        ho->present = 1;
        snprintf(ho->split, sizeof ho->split, "%s", info->split);
        ho->test_shards = ntest;
        ho->model = mte;
        ho->linear = lmte;
        ho->sum_single = msum;
        ho->coverage = (double)ncov / ntest;
        if (isfinite(mte.r2) && isfinite(lmte.r2) && mte.r2 < lmte.r2)
            as_err("warning: the cost model predicts held-out shards worse than the linear baseline "
                   "(test R^2 %.4f, linear(dim*pooling) %.4f)", mte.r2, lmte.r2);
    }

    /* ---- write ---- */
    as_costmodel_write(m, w);
    as_writer *wr = w;
    if (report) {
        wr = as_writer_open(report, cli.zlevel > 0 ? cli.zlevel : 0, cli.zworkers > 0 ? cli.zworkers : 0);
        as_writer_header(wr, "as-costfit", argc, argv);
    }
    msgpack_packer *pk = as_writer_pk(wr);
    msgpack_pack_map(pk, 24);
    as_pack_kv_str(pk, "kind", "costfit-report");
    as_pack_kv_str(pk, "split", info->split);
    as_pack_kv_f64(pk, "test_frac", split_tables ? 0 : test_frac);
    as_pack_kv_i64(pk, "seed", (int64_t)seed);
    as_pack_kv_str(pk, "cost_device", devices[0]);
    as_pack_kv_str(pk, "train_device", ops->name);
    as_pack_kv_i64(pk, "costs", ncs);
    as_pack_kv_i64(pk, "skipped", nskipped + nempty);
    as_pack_kv_i64(pk, "train_shards", ntrain);
    as_pack_kv_i64(pk, "test_shards", ntest);
    as_pack_kv_i64(pk, "dropped_shards", ndropped);
    as_pack_kv_i64(pk, "steps", nsteps);
    as_pack_kv_f64(pk, "train_s", ttrain);
    as_pack_kv_f64(pk, "samples_per_s", sps);
    as_pack_str(pk, "model");
    msgpack_pack_map(pk, 3);
    pack_metrics(pk, "train", mtr);
    pack_metrics(pk, "test", mte);
    pack_metrics(pk, "test_covered", mcov);
    as_pack_str(pk, "sum_single");
    msgpack_pack_map(pk, 2);
    as_pack_kv_f64(pk, "coverage", ntest ? (double)ncov / ntest : 0);
    pack_metrics(pk, "test", msum);
    as_pack_str(pk, "linear");
    msgpack_pack_map(pk, 4);
    as_pack_kv_f64(pk, "a", la);
    as_pack_kv_f64(pk, "b", lb);
    pack_metrics(pk, "train", lmtr);
    pack_metrics(pk, "test", lmte);
    as_pack_str(pk, "noise");
    msgpack_pack_map(pk, 4);
    as_pack_str(pk, "mean_rel_std"); pack_num(pk, mean_rel_std);
    as_pack_kv_i64(pk, "repeat_groups", rep_groups);
    as_pack_str(pk, "repeat_mae"); pack_num(pk, rep_mae);
    as_pack_str(pk, "repeat_mape"); pack_num(pk, rep_mape);
    int64_t shp[1] = { ntest };
    as_pack_kv_array(pk, "test_measured", AS_DT_F64, yte, 1, shp);
    as_pack_kv_array(pk, "test_pred", AS_DT_F64, pte, 1, shp);
    as_pack_kv_array(pk, "test_sum_single", AS_DT_F64, sste, 1, shp);
    as_pack_kv_array(pk, "test_linear", AS_DT_F64, lte, 1, shp);
    int32_t *nt = as_malloc((size_t)(ntest + 1) * sizeof *nt);
    for (int64_t i = 0; i < ntest; i++) nt[i] = (int32_t)cs[test[i]].n;
    as_pack_kv_array(pk, "test_ntables", AS_DT_I32, nt, 1, shp);
    int64_t lshp[1] = { info->nlosses };
    as_pack_kv_array(pk, "losses", AS_DT_F64, info->losses ? (const void *)info->losses : (const void *)"", 1, lshp);
    as_writer_end_record(wr);
    if (report) as_writer_close(wr);
    as_writer_close(w);

    as_costmodel_free(m);
    for (int64_t i = 0; i < ncs; i++) free(cs[i].ids);
    free(cs); free(off); free(idx); free(cost); free(train); free(test); free(ytr); free(ptr); free(yte); free(pte);
    free(single); free(nsingle); free(sste); free(cov); free(xs); free(ltr); free(lte); free(hk); free(nt);
    free(ft.f); free(ft.sorted);
    return 0;
}
