/* as-costfit - train the neural shard cost model on measured costs (as-bench) joined with
 * table features (as-features), evaluate it on held-out shards against two baselines, and
 * predict shard costs with a trained model. Dimension letters: K shards, T tables. */
#include "cli.h"
#include "common.h"
#include "costdata.h"
#include "costmodel.h"
#include "costpredict.h"
#include "nn.h"
#include "stream.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the output form of new models (docs/RESULTS.md "Constrained cost-model output") */
#define AS_COSTFIT_DEFAULT_OUTPUT AS_CM_OUT_SOFTPLUS
/* --ensemble: models at most */
#define AS_COSTFIT_MAX_ENSEMBLE 32
#define AS_COSTFIT_MAX_FOLDS 10

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
    "      --steps auto|N     how long to train (default auto): auto chooses the step\n"
    "                         count on validation parts of the training shards (--folds\n"
    "                         disjoint parts of --val-frac each, table sets kept whole): per\n"
    "                         part a model trained on the rest is scored on it every 10\n"
    "                         steps, to at most --max-steps, and stops once its loss has not\n"
    "                         fallen for max(200, half the best's steps) steps (not before\n"
    "                         100); the model is then trained afresh on all the training\n"
    "                         shards for as many epochs as the parts' best scores took on\n"
    "                         average (too few shards, under 20 in a part or its rest:\n"
    "                         --epochs instead); N: exactly N optimiser steps\n"
    "      --epochs N         exactly N passes over the training shards instead (300 where\n"
    "                         auto has too few shards)\n"
    "      --max-steps N      auto's limit (default 4000)\n"
    "      --val-frac F       auto's validation part, a share of the training shards\n"
    "                         (default 0.2)\n"
    "      --folds K          auto's validation runs, each on another part (default 3;\n"
    "                         1..10, K x F <= 1): one run's choice is noisy on small data\n"
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
    "      --drop-features G  leave features out (each 0 after the normalisation, its training\n"
    "                         mean), comma-separated: dim, rows (the hash size), pooling, size,\n"
    "                         distribution (the 17 access-count bins) or a feature's name: the\n"
    "                         feature ablations of AutoShard's Table 2 (pipelines/q3-ablation);\n"
    "                         the model records them and applies them wherever it predicts, and\n"
    "                         a policy trained on it (as-rl) leaves them out of its inputs too\n"
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
    "Choose what to measure next (active learning: pipelines/active-costs):\n"
    "      --select N         read `features`, `shard` records (candidates, e.g. as-bench\n"
    "                         --sample --draw-only) and `cost` records (shards measured\n"
    "                         already); write only the N candidates the --ensemble models\n"
    "                         disagree on most (the standard deviation of their\n"
    "                         predictions, in ms), in input order, each with `pred_ms`\n"
    "                         (the models' mean) and `pred_sd_ms` (their spread); a\n"
    "                         candidate of the same tables and pieces as a cost record or\n"
    "                         an earlier candidate is left out. Fewer when fewer remain\n"
    "      --ensemble MODEL   a model of the ensemble (at least two: e.g. as-costfit fits\n"
    "                         of the same costs with different --seed, each holding out\n"
    "                         another part of them)\n"
    "\n"
    "Cost records with an error or no cost_ms are skipped (counted on stderr); a cost_ms that\n"
    "is not a finite number above 0 is bad data (exit 1). A cost or shard\n"
    "whose tables have no `features` record is an error (exit 1).\n";

enum { OPT_EPOCHS = AS_OPT_TOOL_BASE, OPT_STEPS, OPT_MAXSTEPS, OPT_VALFRAC, OPT_FOLDS, OPT_LR, OPT_BATCH, OPT_HIDDEN, OPT_CLIP,
       OPT_YSCALE, OPT_LOGF, OPT_SEED, OPT_DEVICE, OPT_THREADS, OPT_INIT, OPT_SPLIT, OPT_TESTFRAC, OPT_REPORT, OPT_PREDICT, OPT_OUTFORM, OPT_DROP,
       OPT_SELECT, OPT_ENSEMBLE };

/* training progress on stderr */
typedef struct { as_progress p; } prog_ctx;
static void on_step(void *ctx, int64_t step, int64_t steps, double loss)
{
    as_progress_update(&((prog_ctx *)ctx)->p, (double)step);
}

/* --predict: every record back, shards, costs and plans with their predictions */
static void predict_mode(as_cli *cli, const char *model_path, char **files, int nfiles)
{
    char err[1024];
    as_costmodel *m;
    if (as_costmodel_load(&m, model_path, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    as_costpred p = { 0 };
    if (as_costpred_read_files(&p, files, nfiles, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    if (as_featidx_build(&p.ft, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    as_writer *w = as_cli_open_output(cli);
    as_costpred_stats st;
    double t0 = as_now();
    if (as_costpred_write(&p, m, w, &st, err, sizeof err)) { as_writer_abort(w); as_die(AS_EXIT_DATA, "%s", err); }
    as_writer_close(w);
    as_info("predicted %" PRId64 " shard(s), %" PRId64 " cost(s), %" PRId64 " plan(s) with a model of costs on %s "
            "(%.3f s, %.1f us in the model)", st.shards, st.costs, st.plans, as_costmodel_device(m)[0] ? as_costmodel_device(m) : "?",
            as_now() - t0, 1e6 * st.model_s);
    as_costmodel_free(m);
    as_costpred_free(&p);
}

/* --select: the candidates the --ensemble models disagree on most */
static void select_mode(as_cli *cli, int64_t nsel, char *const *models, int nm, char **files, int nfiles)
{
    char err[1024];
    as_costmodel **ms = as_calloc((size_t)nm, sizeof *ms);
    for (int k = 0; k < nm; k++)
        if (as_costmodel_load(&ms[k], models[k], err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    as_costpred p = { 0 };
    if (as_costpred_read_files(&p, files, nfiles, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    if (as_featidx_build(&p.ft, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    as_writer *w = as_cli_open_output(cli);
    as_costsel_stats st;
    if (as_costpred_select(&p, ms, nm, nsel, w, &st, err, sizeof err)) { as_writer_abort(w); as_die(AS_EXIT_DATA, "%s", err); }
    as_writer_close(w);
    as_info("--select: %" PRId64 " of %" PRId64 " candidate shard(s) chosen (%" PRId64 " dropped: measured already (%" PRId64
            " cost records) or drawn twice); the %d models' spread %.4g ms on the chosen, %.4g ms on all kept",
            st.chosen, st.candidates, st.dropped, st.measured, nm, st.sd_chosen, st.sd_all);
    for (int k = 0; k < nm; k++) as_costmodel_free(ms[k]);
    free(ms);
    as_costpred_free(&p);
}

/* the command line */
typedef struct {
    int64_t epochs, steps, batch, threads, hidden[3];
    int auto_steps;                 /* --steps auto (the default unless --steps N or --epochs) */
    int64_t max_steps;              /* its limit */
    int64_t folds;                  /* its validation runs (--folds) */
    double lr, clip, yscale, test_frac, val_frac;
    int log_feats, split_tables, out_form;
    uint32_t drop;                  /* --drop-features */
    uint64_t seed;
    const char *device, *init, *report, *predict;
    int64_t select;                 /* --select N */
    char *ensemble[AS_COSTFIT_MAX_ENSEMBLE];
    int nensemble;
} costfit_args;

static void check_args(as_cli *cli, const costfit_args *a, int hidden_given, int out_given);

/* the options of how long to train: --epochs, --steps, --max-steps, --val-frac, --folds
   (*auto_opts set by the last three); 1 when opt was one of them */
static int parse_length(as_cli *cli, costfit_args *a, int opt, const char *arg, int *auto_opts)
{
    switch (opt) {
    case OPT_EPOCHS:
        a->epochs = as_cli_i64(cli, "--epochs", arg, 1, 100000000);
        a->auto_steps = 0;
        a->steps = 0;
        return 1;
    case OPT_STEPS:
        a->auto_steps = !strcmp(arg, "auto");
        a->steps = a->auto_steps ? 0 : as_cli_i64(cli, "--steps", arg, 1, 1000000000);
        return 1;
    case OPT_MAXSTEPS: a->max_steps = as_cli_i64(cli, "--max-steps", arg, 1, 1000000000); *auto_opts = 1; return 1;
    case OPT_VALFRAC: a->val_frac = as_cli_f64(cli, "--val-frac", arg, 0.01, 0.9); *auto_opts = 1; return 1;
    case OPT_FOLDS: a->folds = as_cli_i64(cli, "--folds", arg, 1, AS_COSTFIT_MAX_FOLDS); *auto_opts = 1; return 1;
    default: return 0;
    }
}

/* the long options */
static const struct option fit_long_opts[] = {
    { "epochs", required_argument, 0, OPT_EPOCHS },
    { "steps", required_argument, 0, OPT_STEPS },
    { "max-steps", required_argument, 0, OPT_MAXSTEPS },
    { "val-frac", required_argument, 0, OPT_VALFRAC },
    { "folds", required_argument, 0, OPT_FOLDS },
    { "lr", required_argument, 0, OPT_LR },
    { "batch", required_argument, 0, OPT_BATCH },
    { "hidden", required_argument, 0, OPT_HIDDEN },
    { "clip", required_argument, 0, OPT_CLIP },
    { "y-scale", required_argument, 0, OPT_YSCALE },
    { "log-features", no_argument, 0, OPT_LOGF },
    { "drop-features", required_argument, 0, OPT_DROP },
    { "seed", required_argument, 0, OPT_SEED },
    { "device", required_argument, 0, OPT_DEVICE },
    { "threads", required_argument, 0, OPT_THREADS },
    { "init", required_argument, 0, OPT_INIT },
    { "split", required_argument, 0, OPT_SPLIT },
    { "test-frac", required_argument, 0, OPT_TESTFRAC },
    { "report", required_argument, 0, OPT_REPORT },
    { "predict", required_argument, 0, OPT_PREDICT },
    { "output-form", required_argument, 0, OPT_OUTFORM },
    { "select", required_argument, 0, OPT_SELECT },
    { "ensemble", required_argument, 0, OPT_ENSEMBLE },
    AS_CLI_COMMON_OPTIONS
};

static void parse_args(as_cli *cli, int argc, char **argv, costfit_args *a)
{
    *a = (costfit_args){ .epochs = 300, .auto_steps = 1, .max_steps = 4000, .val_frac = 0.2, .folds = 3, .batch = 512, .threads = 1,
                         .hidden = { 128, 32, 64 }, .lr = 1e-3, .test_frac = 0.2, .out_form = AS_COSTFIT_DEFAULT_OUTPUT,
                         .device = "cpu" };
    int hidden_given = 0, out_given = 0, auto_opts = 0, opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, fit_long_opts, NULL)) != -1) {
        switch (opt) {
        case OPT_LR: a->lr = as_cli_f64(cli, "--lr", optarg, 1e-12, 10); break;
        case OPT_BATCH: a->batch = as_cli_i64(cli, "--batch", optarg, 1, 1000000); break;
        case OPT_HIDDEN: {
            int64_t *v;
            size_t nv;
            if (as_parse_i64_list(optarg, 1, 65536, &v, &nv) || nv != 3)
                as_cli_usage(cli, "--hidden: '%s' is not three sizes H1,H2,H3 in 1..65536", optarg);
            for (int i = 0; i < 3; i++) a->hidden[i] = v[i];
            free(v);
            hidden_given = 1;
            break;
        }
        case OPT_CLIP: a->clip = as_cli_f64(cli, "--clip", optarg, 0, 1e30); break;
        case OPT_YSCALE: a->yscale = as_cli_f64(cli, "--y-scale", optarg, 1e-30, 1e30); break;
        case OPT_LOGF: a->log_feats = 1; break;
        case OPT_DROP: {
            char e[256];
            if (as_costmodel_drop_parse(optarg, &a->drop, e, sizeof e)) as_cli_usage(cli, "--drop-features: %s", e);
            break;
        }
        case OPT_SEED: a->seed = (uint64_t)as_cli_i64(cli, "--seed", optarg, 0, INT64_MAX); break;
        case OPT_DEVICE: a->device = optarg; break;
        case OPT_THREADS: a->threads = as_cli_i64(cli, "--threads", optarg, 1, 1024); break;
        case OPT_INIT: a->init = optarg; break;
        case OPT_SPLIT:
            if (!strcmp(optarg, "tables")) a->split_tables = 1;
            else if (!strcmp(optarg, "shards")) a->split_tables = 0;
            else as_cli_usage(cli, "--split: '%s' is not shards or tables", optarg);
            break;
        case OPT_TESTFRAC: a->test_frac = as_cli_f64(cli, "--test-frac", optarg, 0, 0.99); break;
        case OPT_REPORT: a->report = optarg; break;
        case OPT_PREDICT: a->predict = optarg; break;
        case OPT_SELECT: a->select = as_cli_i64(cli, "--select", optarg, 1, 100000000); break;
        case OPT_ENSEMBLE:
            if (a->nensemble == AS_COSTFIT_MAX_ENSEMBLE) as_cli_usage(cli, "--ensemble: at most %d models", AS_COSTFIT_MAX_ENSEMBLE);
            a->ensemble[a->nensemble++] = optarg;
            break;
        case OPT_OUTFORM:
            if ((a->out_form = as_costmodel_output_parse(optarg)) < 0)
                as_cli_usage(cli, "--output-form: '%s' is not softplus, log or linear", optarg);
            out_given = 1;
            break;
        default:
            if (!parse_length(cli, a, opt, optarg, &auto_opts) && !as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
        }
    }
    as_cli_finish(cli);
    if (auto_opts && !a->auto_steps)
        as_cli_usage(cli, "--max-steps, --val-frac and --folds are --steps auto's: not with --steps N or --epochs N");
    if ((double)a->folds * a->val_frac > 1 + 1e-9)
        as_cli_usage(cli, "--folds %" PRId64 " parts of --val-frac %g are more than all the training shards (folds x val-frac <= 1)",
                     a->folds, a->val_frac);
    check_args(cli, a, hidden_given, out_given);
}

/* the options' combinations, after parsing: usage errors (exit 2) */
static void check_args(as_cli *cli, const costfit_args *a, int hidden_given, int out_given)
{
    as_cli_input_arg(cli, "--init", a->init);
    as_cli_input_arg(cli, "--predict", a->predict);
    as_cli_output_arg(cli, "--report", a->report);
    for (int k = 0; k < a->nensemble; k++) as_cli_input_arg(cli, "--ensemble", a->ensemble[k]);
    if (a->select && a->nensemble < 2) as_cli_usage(cli, "--select needs --ensemble MODEL at least twice (the models whose disagreement chooses)");
    if (a->nensemble && !a->select) as_cli_usage(cli, "--ensemble needs --select N");
    if (a->select && (a->predict || a->init || a->report)) as_cli_usage(cli, "--select does not train or predict: no --predict, --init or --report");
    if (a->predict && (a->init || a->report)) as_cli_usage(cli, "--predict does not train: no --init or --report");
    if (a->init && hidden_given) as_cli_usage(cli, "--init keeps the model's sizes: no --hidden");
    if (a->init && a->drop) as_cli_usage(cli, "--init keeps the model's features: no --drop-features");
    if (a->predict && a->drop) as_cli_usage(cli, "--predict does not train: no --drop-features");
    if (a->init && out_given) as_cli_usage(cli, "--init keeps the model's output form: no --output-form");
    if (a->predict && out_given) as_cli_usage(cli, "--predict uses the model's output form: no --output-form");
}

/* --device: the ops to train with; a bad name is a usage error, a missing device exit 3 */
static const as_nn_ops *open_device(as_cli *cli, const char *device)
{
    char err[1024];
    int code;
    const as_nn_ops *ops = as_nn_device(device, &code, err, sizeof err);
    if (!ops) {
        if (code == AS_EXIT_USAGE) as_cli_usage(cli, "%s", err);
        as_die(AS_EXIT_ENV, "%s", err);
    }
    return ops;
}

/* a data error once the output is open: its temporary removed, exit 1 */
static _Noreturn void die_data(as_writer *w, const char *err)
{
    as_writer_abort(w);
    as_die(AS_EXIT_DATA, "%s", err);
}

/* the data: features and costs joined into shards (m: --init's model, for its device) */
static void read_data(as_costdata *d, char **files, int nfiles, const as_costmodel *m, as_writer *w)
{
    char err[1024];
    if (as_costdata_read_files(d, files, nfiles, err, sizeof err)) die_data(w, err);
    if (as_costdata_index(d, err, sizeof err)) die_data(w, err);
    if (d->nskipped) as_info("skipped %" PRId64 " cost record(s) with an error or no cost_ms", d->nskipped);
    if (d->nempty) as_info("skipped %" PRId64 " cost record(s) of empty shards", d->nempty);
    if (as_costdata_check(d, err, sizeof err)) die_data(w, err);
    if (m && as_costmodel_device(m)[0] && strcmp(as_costmodel_device(m), d->devices[0]))
        as_err("warning: --init model was trained on costs from '%s', these are from '%s'", as_costmodel_device(m), d->devices[0]);
    if (as_costdata_join(d, err, sizeof err)) die_data(w, err);
}

/* the shards split into train and test, by tables or at random */
static void split_data(as_costsplit *s, as_costdata *d, const costfit_args *a, as_writer *w)
{
    if (a->split_tables) {
        as_costdata_split_tables(d, s);
        as_info("split by tables: ids below %" PRId64 " train, the rest test; %" PRId64 " train, %" PRId64 " test shards, %"
                PRId64 " mixing both dropped", s->cut, s->ntrain, s->ntest, s->ndropped);
    } else {
        as_costdata_split_shards(d, a->test_frac, a->seed, s);
    }
    if (s->ntrain == 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "no training shards after the split (%" PRId64 " usable costs)", d->ncs); }
}

/* one training run's state, shared by its phases */
typedef struct {
    const costfit_args *a;
    const as_nn_ops *ops;
    as_costmodel *m;
    as_writer *w;                   /* the output, open */
    as_costdata d;
    as_costsplit s;
    int64_t B, nsteps;              /* batch, steps */
    double ttrain, sps;             /* seconds, samples per second */
    const char *rule;               /* how the steps were set: auto, auto-epochs, steps, epochs */
    int folds;                      /* --steps auto's validation runs */
    as_costfit_stop stop[AS_COSTFIT_MAX_FOLDS];     /* where each stopped */
    int64_t nfit[AS_COSTFIT_MAX_FOLDS], nval[AS_COSTFIT_MAX_FOLDS];   /* its shards: trained on, scored on */
    double tval;                    /* their seconds */
    as_costeval e;
} fit_run;

/* a model to train, with the training shards' statistics: m when not NULL (--init's, loaded
   already), else --init's loaded again or a new one of the options' sizes */
static as_costmodel *make_model(fit_run *x, as_costmodel *m)
{
    const costfit_args *a = x->a;
    char err[1024];
    if (!m && a->init) {
        if (as_costmodel_load(&m, a->init, err, sizeof err)) die_data(x->w, err);
    } else if (!m) {
        m = as_costmodel_new((int)a->hidden[0], (int)a->hidden[1], (int)a->hidden[2], a->seed);
        as_costmodel_meta(m)->log_feats = a->log_feats;
        as_costmodel_meta(m)->drop = a->drop;
        as_costmodel_meta(m)->output = a->out_form;
    }
    as_costdata_stats(m, &x->d, &x->s, a->yscale, a->init != NULL, a->split_tables ? "tables" : a->test_frac > 0 ? "shards" : "none");
    return m;
}

/* a training that failed: the output's temporary removed; a device that failed is the
   environment's fault (exit 3), anything else the data's (1) */
static _Noreturn void die_training(fit_run *x, const as_costfit_opts *o, const char *err)
{
    as_writer_abort(x->w);
    as_die(o->ops && o->ops->error && o->ops->error() ? AS_EXIT_ENV : AS_EXIT_DATA, "%s", err);
}

/* optimiser steps per epoch over n shards in batches of at most b */
static int64_t per_epoch(int64_t n, int64_t b)
{
    const int64_t B = b < n ? b : n;
    return B > 0 ? (n + B - 1) / B : 1;
}

/* --steps auto's validation run of fold f: a model trained on the rest of the training shards,
   scored on the fold's part every 10 steps, stopped by the patience rule (x->stop[f]); the
   steps it took, scaled to as many epochs on all n training shards */
static double validation_run(fit_run *x, as_cli *cli, int f, int64_t *keep, int64_t *val)
{
    const costfit_args *a = x->a;
    char err[1024], what[64];
    const int64_t n = x->s.ntrain;
    as_costdata_split_part(&x->d, x->s.train, n, a->val_frac, f, a->seed, keep, &x->nfit[f], val, &x->nval[f]);
    as_costmodel *m = make_model(x, NULL);
    prog_ctx pc = { 0 };
    snprintf(what, sizeof what, "steps (validation run %d of %d, at most)", f + 1, x->folds);
    as_progress_start(&pc.p, cli, what, (double)a->max_steps);
    as_costfit_opts o = { .steps = a->max_steps, .lr = a->lr, .batch = (int)a->batch, .clip = a->clip, .seed = a->seed + (uint64_t)f,
                          .ops = x->ops, .progress = on_step, .ctx = &pc, .val = val, .nval = x->nval[f],
                          .eval_every = 10, .patience = 200, .min_steps = 100, .stop = &x->stop[f] };
    const int rc = as_costmodel_train(m, &x->d.set, keep, x->nfit[f], &o, err, sizeof err);
    as_progress_end(&pc.p);
    as_costmodel_free(m);
    if (rc) die_training(x, &o, err);
    return (double)x->stop[f].best_step * (double)per_epoch(n, a->batch) / (double)per_epoch(x->nfit[f], a->batch);
}

/* --steps auto: the steps to train on all the training shards, the mean of --folds validation
   runs' (each scoring another part of them, x->stop[f], ...); 0 when a part or its rest has
   fewer than AUTO_MIN_SHARDS shards (then the epochs decide) */
#define AUTO_MIN_SHARDS 20
static int64_t choose_steps(fit_run *x, as_cli *cli)
{
    const costfit_args *a = x->a;
    const int64_t n = x->s.ntrain;
    int64_t *keep = as_malloc((size_t)n * sizeof *keep), *val = as_malloc((size_t)n * sizeof *val);
    x->folds = (int)a->folds;
    for (int f = 0; f < x->folds; f++) {   /* every part and its rest large enough, before any run */
        as_costdata_split_part(&x->d, x->s.train, n, a->val_frac, f, a->seed, keep, &x->nfit[f], val, &x->nval[f]);
        if (x->nfit[f] < AUTO_MIN_SHARDS || x->nval[f] < AUTO_MIN_SHARDS) {
            as_info("--steps auto: %" PRId64 " training shards are too few for %d validation parts (part %d: %" PRId64 " and %" PRId64
                    ", each needs %d): %" PRId64 " epochs", n, x->folds, f + 1, x->nfit[f], x->nval[f], AUTO_MIN_SHARDS, a->epochs);
            x->folds = 0;
            free(keep);
            free(val);
            return 0;
        }
    }
    double sum = 0;
    const double t0 = as_now();
    for (int f = 0; f < x->folds; f++) {
        sum += validation_run(x, cli, f, keep, val);
    }
    free(keep);
    free(val);
    x->tval = as_now() - t0;
    const int64_t steps = (int64_t)llround(sum / x->folds);
    char list[AS_COSTFIT_MAX_FOLDS * 32] = "";   /* a step count (<= 10 digits), ", ", " (limit)" */
    for (int k = 0, o = 0; k < x->folds; k++)
        o += snprintf(list + o, sizeof list - (size_t)o, "%s%" PRId64 "%s", k ? ", " : "", x->stop[k].best_step, x->stop[k].early ? "" : " (limit)");
    as_info("--steps auto: the validation loss lowest at steps %s of %d runs (about %" PRId64 " validation shards each, %.2f s); "
            "%" PRId64 " steps on all %" PRId64 " training shards", list, x->folds, x->nval[0], x->tval, steps, n);
    return steps > 0 ? steps : 1;
}

/* train x->m on the split's training shards, with progress */
static void train(fit_run *x, as_cli *cli)
{
    const costfit_args *a = x->a;
    char err[1024];
    prog_ctx pc = { 0 };
    const int64_t steps = a->auto_steps ? choose_steps(x, cli) : a->steps;
    x->rule = !a->auto_steps ? (a->steps > 0 ? "steps" : "epochs") : steps > 0 ? "auto" : "auto-epochs";
    int64_t B = a->batch < x->s.ntrain ? a->batch : x->s.ntrain;
    int64_t nsteps = steps > 0 ? steps : a->epochs * per_epoch(x->s.ntrain, a->batch);
    as_progress_start(&pc.p, cli, "steps", (double)nsteps);
    as_costfit_opts o = { .epochs = a->epochs, .steps = steps, .lr = a->lr, .batch = (int)a->batch, .clip = a->clip, .seed = a->seed,
                          .ops = x->ops, .progress = on_step, .ctx = &pc };
    double t0 = as_now();
    if (as_costmodel_train(x->m, &x->d.set, x->s.train, x->s.ntrain, &o, err, sizeof err)) {
        as_progress_end(&pc.p);
        die_training(x, &o, err);
    }
    double ttrain = as_now() - t0;
    as_progress_end(&pc.p);
    x->B = B;
    x->nsteps = nsteps;
    x->ttrain = ttrain;
    x->sps = ttrain > 0 ? (double)nsteps * (double)B / ttrain : 0;
}

/* evaluate: the model and the baselines on the held-out shards, on stderr */
static void evaluate(fit_run *x)
{
    as_costmodel_info *info = as_costmodel_meta(x->m);
    as_costeval_run(&x->e, x->m, &x->d, &x->s);
    as_info("%" PRId64 " train / %" PRId64 " test shards (split %s), %" PRId64 " tables with features; costs on %s",
            x->s.ntrain, x->s.ntest, info->split, x->d.ft.n, x->d.devices[0]);
    as_info("trained %" PRId64 " steps (batch %" PRId64 ") in %.2f s on %s: %.0f samples/s; output %s, final train loss %.4g %s",
            x->nsteps, x->B, x->ttrain, x->ops->name, x->sps, as_costmodel_output_name(info->output),
            info->nlosses ? info->losses[info->nlosses - 1] : NAN, info->output == AS_CM_OUT_LOG ? "(log ratio)^2" : "ms^2");
    as_costeval_log(&x->e, x->m);
    if (as_costeval_heldout(&x->e, info->split, &info->heldout))
        as_err("warning: the cost model predicts held-out shards worse than the linear baseline "
               "(test R^2 %.4f, linear(dim*pooling) %.4f)", x->e.model_test.r2, x->e.lin_test_m.r2);
}

/* write: the model, then the report after it or into --report */
static void write_outputs(fit_run *x, as_cli *cli, int argc, char **argv)
{
    const costfit_args *a = x->a;
    as_costmodel_info *info = as_costmodel_meta(x->m);
    as_costmodel_write(x->m, x->w);
    as_writer *wr = x->w;
    if (a->report) {
        wr = as_writer_open(a->report, cli->zlevel > 0 ? cli->zlevel : 0, cli->zworkers > 0 ? cli->zworkers : 0);
        as_writer_header(wr, "as-costfit", argc, argv);
    }
    as_costfit_report_info ri = { info->split, a->split_tables ? 0 : a->test_frac, a->seed, x->d.devices[0], x->ops->name,
                                  x->d.ncs, x->d.nskipped + x->d.nempty, x->s.ndropped, x->nsteps, x->ttrain, x->sps,
                                  info->losses, info->nlosses, x->rule, !strcmp(x->rule, "auto") ? x->folds : 0,
                                  x->stop, x->nfit, x->nval, x->tval };
    as_costfit_report_pack(as_writer_pk(wr), &ri, &x->e);
    as_writer_end_record(wr);
    if (a->report) as_writer_close(wr);
    as_writer_close(x->w);
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-costfit", "as-costfit [options] [FILE...]", HELP);
    costfit_args a;
    parse_args(&cli, argc, argv, &a);
    as_nn_set_threads((int)a.threads);
    char *none[] = { "-" };
    char **files = optind < argc ? argv + optind : none;
    int nfiles = optind < argc ? argc - optind : 1;
    if (a.predict) { predict_mode(&cli, a.predict, files, nfiles); return 0; }
    if (a.select) { select_mode(&cli, a.select, a.ensemble, a.nensemble, files, nfiles); return 0; }

    char err[1024];
    static fit_run x;
    x.a = &a;
    x.ops = open_device(&cli, a.device);
    if (a.init && as_costmodel_load(&x.m, a.init, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    /* open the output early: a TTY is refused before any work */
    x.w = as_cli_open_output(&cli);

    /* the data: features and costs joined into shards, then split */
    read_data(&x.d, files, nfiles, x.m, x.w);
    split_data(&x.s, &x.d, &a, x.w);

    /* the model: a new one, or --init's continued */
    x.m = make_model(&x, x.m);

    train(&x, &cli);
    evaluate(&x);
    write_outputs(&x, &cli, argc, argv);

    as_costeval_free(&x.e);
    as_costsplit_free(&x.s);
    as_costdata_free(&x.d);
    as_costmodel_free(x.m);
    return 0;
}
