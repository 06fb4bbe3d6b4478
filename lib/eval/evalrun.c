/* evalrun.c - as-eval's run; see evalrun.h. */
#include "evalrun.h"
#include "common.h"
#include "evalfloor.h"
#include "evalplot.h"
#include "evalcomm.h"
#include "evalranks.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* every plan's floor: the cost model's prediction of each table alone (--model), or the
 * median of the tables' single-table cost records (measured costs: the input's and
 * --singles FILE's, those of the plans' device); estimated costs without the model: none */
static int set_floors(const as_eval_opts *o, as_eval_input *in, const as_costmodel *cm, const char *label, char *err,
                      size_t errlen)
{
    if (cm) {
        if (o->singles) as_info("--singles %s: not used: with --model the floor is the model's prediction for each table alone",
                                o->singles);
        as_eval_floor_estimated(in->plans, in->nplans, cm, &in->ft);
        return 0;
    }
    if (strcmp(label, "measured")) {
        if (o->singles) as_info("--singles %s: not used: the plans' costs are estimated; give the model with --model for "
                                "their floor", o->singles);
        as_eval_floor_none(in->plans, in->nplans);
        return 0;
    }
    if (o->singles && as_eval_singles_file(&in->singles, o->singles, err, errlen)) return AS_EXIT_DATA;
    as_eval_singles_build(&in->singles, in->device);
    if (in->singles.other_device)
        as_info("warning: %" PRId64 " single-table cost records were measured on another device than the plans (%s); the "
                "floor does not use them", in->singles.other_device, in->device);
    as_eval_floor_measured(in->plans, in->nplans, &in->singles);
    return 0;
}

/* a plan table, the verdict or a plot is asked for: the input must hold plans */
static int want_plans(const as_eval_opts *o)
{
    return o->show_plans || o->show_shards || o->show_ranks || o->show_comm || o->show_range || o->show_summary ||
           o->show_verdict || o->plot;
}

/* the plans' costs (estimated with --model), communication, floors and the summary; 0, or
 * an exit code with err */
static int compute_plans(as_eval_run *x, char *err, size_t errlen)
{
    const as_eval_opts *o = &x->o;
    as_planrec_full *pl = x->in.plans;
    const int64_t np = x->in.nplans;
    if (x->in.devices_differ) as_info("warning: the plans' costs were measured on different devices");
    if (x->in.trained_differ)
        as_info("warning: the plans' costs were measured training different weight types or optimizers "
                "(cost_weights_type, cost_optimizer): they do not compare");
    if (o->model_path && as_eval_estimate(pl, np, x->cm, &x->in.ft, err, errlen)) return AS_EXIT_DATA;
    for (int64_t j = 0; j < np; j++) {
        x->clamped += pl[j].clamped;
        x->dp_plans += pl[j].ndp > 0;
        if (pl[j].cost_kind == 2) for (int64_t k = 0; k < pl[j].K; k++) x->estimated += isfinite(pl[j].cost[k]);
    }
    if (x->clamped)
        as_info("warning: %" PRId64 " of %" PRId64 " estimated shard costs were negative (an unconstrained cost model); "
                "counted as 0 ms", x->clamped, x->estimated);
    x->charged = as_eval_charge_comm(pl, np, &o->comm, &x->comm_missing, &x->comm_have, &x->comm_bytes, &x->comm_n,
                                     &x->comm_max, err, errlen);
    if (x->charged < 0) return AS_EXIT_DATA;
    if (x->comm_have && x->comm_missing)
        as_info("warning: communication not charged: %" PRId64 " plans carry no communication bytes, %" PRId64
                " do (plans from before as-plan wrote them?); every cost is the kernel's alone", x->comm_missing, x->comm_have);
    const int rc = set_floors(o, &x->in, x->cm, x->label, err, errlen);
    if (rc) return rc;
    as_eval_compute(pl, np);
    x->floor_margin = o->floor_margin >= 0 ? o->floor_margin
                    : !strcmp(x->label, "estimated") ? AS_EVAL_FLOOR_MARGIN_ESTIMATED : AS_EVAL_FLOOR_MARGIN_MEASURED;
    as_eval_floor_mark(pl, np, x->floor_margin);
    as_eval_summary(pl, np, o->over_runs, &x->sum, &x->nsum);
    return 0;
}

/* the lines above the tables (as_eval_print_header): what the costs are, the communication
 * charged, the clamped estimates, the cost model's quality */
static void print_header(FILE *f, const as_eval_run *x)
{
    const as_eval_opts *o = &x->o;
    const as_eval_header h = {
        .model_path = o->model_path, .model_device = o->model_path ? as_costmodel_device(x->cm) : NULL,
        .label = x->label, .device = x->in.device, .devices_differ = x->in.devices_differ,
        .trained = x->in.trained, .trained_differ = x->in.trained_differ, .nplans = x->in.nplans, .nruns = x->in.nruns,
        .comm_model = o->comm.ab ? o->comm.name : NULL, .comm_gbps = o->comm_gbps, .charged = x->charged,
        .dp_plans = x->dp_plans, .comm_have = x->comm_have, .comm_missing = x->comm_missing, .comm_n = x->comm_n,
        .comm_bytes = x->comm_bytes, .comm_max = x->comm_max, .clamped = x->clamped, .estimated = x->estimated,
        .quality = x->quality, .show_quality = o->show_plans || o->show_summary || o->show_verdict,
    };
    as_eval_print_header(f, o->fmt, &h);
}

/* --table range (evalrange.h): --candidates FILE's labels, one a line (empty lines skipped);
 * 0, or an exit code with err */
static int print_range(FILE *f, const as_eval_run *x, char *err, size_t errlen)
{
    const as_eval_opts *o = &x->o;
    char **only = NULL;
    int64_t nonly = 0;
    if (o->candidates) {
        FILE *cf = fopen(o->candidates, "r");
        if (!cf) {
            snprintf(err, errlen, "--candidates %s: cannot open", o->candidates);
            return AS_EXIT_DATA;
        }
        char line[256];
        while (fgets(line, sizeof line, cf)) {
            line[strcspn(line, "\r\n")] = 0;
            if (!line[0]) continue;
            only = as_realloc(only, (size_t)(nonly + 1) * sizeof *only);
            only[nonly++] = as_strdup(line);
        }
        fclose(cf);
    }
    const as_eval_range_cfg rc = { .chosen = o->chosen, .versus = o->versus, .only = (const char *const *)only, .nonly = nonly,
                                   .extra = o->range_model, .nextra = o->nrange_model, .tie = o->tie };
    if (o->candidates && !nonly) {
        if (o->fmt != AS_EVAL_CSV) fprintf(f, "how far the choice holds: no candidates (--candidates %s is empty)\n\n", o->candidates);
        else fprintf(f, "run,task,what,knob,x_from,x_to,alg,value\n");
    } else as_eval_print_range(f, o->fmt, x->in.plans, x->in.nplans, &o->comm, &rc);
    for (int64_t i = 0; i < nonly; i++) free(only[i]);
    free(only);
    return 0;
}

/* the tables asked for, in order, then the verdict; in CSV separated by an empty line. 0,
 * or an exit code with err */
static int print_tables(FILE *f, const as_eval_run *x, char *err, size_t errlen)
{
    const as_eval_opts *o = &x->o;
    const as_eval_format fmt = o->fmt;
    as_planrec_full *pl = x->in.plans;
    const int64_t np = x->in.nplans;
    const char *label = x->label;
    int sep = 0;
    if (o->show_plans) { as_eval_print_plans(f, fmt, pl, np, label); sep = 1; }
    /* CSV: tables separated by an empty line */
    if (o->show_shards) { if (sep && fmt == AS_EVAL_CSV) fputc('\n', f); as_eval_print_shards(f, fmt, pl, np, label); sep = 1; }
    if (o->show_ranks) {
        if (sep && fmt == AS_EVAL_CSV) fputc('\n', f);
        as_eval_print_ranks(f, fmt, pl, np, label, !strcmp(label, "measured") ? &x->in.singles : NULL);
        sep = 1;
    }
    if (o->show_comm) {
        if (sep && fmt == AS_EVAL_CSV) fputc('\n', f);
        as_eval_print_comm(f, fmt, pl, np, &o->comm);
        sep = 1;
    }
    if (o->show_range) {
        if (sep && fmt == AS_EVAL_CSV) fputc('\n', f);
        const int rc = print_range(f, x, err, errlen);
        if (rc) return rc;
        sep = 1;
    }
    if (o->show_summary) {
        if (sep && fmt == AS_EVAL_CSV) fputc('\n', f);
        as_eval_print_summary(f, fmt, x->sum, x->nsum, label, o->over_runs);
        as_eval_print_floor(f, fmt, pl, np, x->floor_margin, label);
        sep = 1;
    }
    if (o->show_curve) { if (sep && fmt == AS_EVAL_CSV) fputc('\n', f); as_eval_print_curve(f, fmt, x->in.train, x->in.ntrain); sep = 1; }
    /* the verdict closes the report */
    if (o->show_verdict) {
        if (sep && fmt == AS_EVAL_CSV) fputc('\n', f);
        as_eval_verdict_info vi = {
            .label = label, .device = o->model_path ? "" : x->in.devices_differ ? "several devices" : x->in.device,
            .over_runs = o->over_runs, .runs = x->in.nruns, .quality = x->quality, .clamped = x->clamped,
            .estimated = x->estimated, .plot = o->plot, .curve = o->curve, .floor_margin = x->floor_margin,
        };
        as_eval_print_verdict(f, fmt, pl, np, x->sum, x->nsum, &vi);
    }
    return 0;
}

int as_eval_run_plots(as_eval_run *x, char *err, size_t errlen)
{
    as_eval_opts *o = &x->o;
    as_planrec_full *pl = x->in.plans;
    const int64_t np = x->in.nplans;
    char e2[4096];
    if (o->plot) {
        if (o->plot_task < 0) o->plot_task = pl[0].task;
        int found = 0;
        for (int64_t j = 0; j < np; j++) found |= pl[j].task == o->plot_task;
        if (!found) as_info("--plot-task %" PRId64 ": no plan of that task; no per-shard bars", o->plot_task);
        if (as_eval_plot(o->plot, pl, np, x->sum, x->nsum, o->plot_task, x->label, x->in.pred, x->in.meas, x->in.nscatter,
                         e2, sizeof e2)) {
            snprintf(err, errlen, "%s: %s", o->plot, e2);
            return AS_EXIT_ENV;
        }
    }
    if (o->curve && as_eval_plot_curve(o->curve, x->in.train, x->in.ntrain, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: %s", o->curve, e2);
        return AS_EXIT_ENV;
    }
    return 0;
}

/* the model and the input read; what they hold checked against what is asked for; 0, or an
 * exit code with err */
static int read_input(as_eval_run *x, char **files, int nfiles, char *err, size_t errlen)
{
    as_eval_opts *o = &x->o;
    if (o->model_path && as_costmodel_load(&x->cm, o->model_path, err, errlen)) return AS_EXIT_DATA;   /* err names the file */
    /* the quality of the model that estimates (--model), or of the one in the input */
    if (o->model_path && as_eval_quality_file(&x->qs_model, o->model_path, err, errlen)) return AS_EXIT_DATA;
    if (as_eval_input_read(&x->in, files, nfiles, o->split, !!o->model_path, err, errlen)) return AS_EXIT_DATA;
    const int64_t np = x->in.nplans, ntr = x->in.ntrain;
    /* plan tables by default, unless only the curve is asked for and there are no plans */
    if (!o->table_given && o->curve && !np) o->show_plans = o->show_summary = 0;
    if (want_plans(o) && !np) {
        snprintf(err, errlen, "no %splan records in the input%s", o->split ? "matching " : "",
                 ntr && !o->table_given ? " (a training log: --table curve or --curve FILE.png)" : "");
        return AS_EXIT_DATA;
    }
    if ((o->show_curve || o->curve) && !ntr) {
        snprintf(err, errlen, "no train records in the input (as-rl --log FILE writes them)");
        return AS_EXIT_DATA;
    }
    if (x->in.back_at >= 0 && (o->show_curve || o->curve))
        as_info("warning: the train records are not one run (episode %" PRId64 " after %" PRId64 "); the curve shows "
                "them in input order", x->in.back_at, x->in.back_from);
    x->label = np ? (o->model_path ? "estimated" : x->in.plans[0].cost_kind == 1 ? "measured" : "estimated") : "";
    return 0;
}

int as_eval_run_read(as_eval_run *x, char **files, int nfiles, char *err, size_t errlen)
{
    const as_eval_opts *o = &x->o;
    int rc = read_input(x, files, nfiles, err, errlen);
    if (!rc && want_plans(o)) rc = compute_plans(x, err, errlen);
    if (rc) return rc;
    x->quality = as_eval_quality_pick(o->model_path ? &x->qs_model : &x->in.quality);
    if (o->model_path && !x->quality) x->quality = &x->no_quality;   /* estimates from a model: say its quality is unknown */
    return 0;
}

int as_eval_run_prints(const as_eval_run *x)
{
    const as_eval_opts *o = &x->o;
    return o->show_plans || o->show_shards || o->show_ranks || o->show_comm || o->show_range || o->show_summary ||
           o->show_verdict || o->show_curve;
}

int as_eval_run_print(FILE *f, const as_eval_run *x, char *err, size_t errlen)
{
    const as_eval_opts *o = &x->o;
    if (o->fmt != AS_EVAL_CSV && (o->show_plans || o->show_shards || o->show_ranks || o->show_comm || o->show_range ||
                                  o->show_summary || o->show_verdict))
        print_header(f, x);
    return print_tables(f, x, err, errlen);
}

void as_eval_run_free(as_eval_run *x)
{
    if (!x) return;
    as_eval_input_free(&x->in);
    free(x->sum);
    x->sum = NULL;
    if (x->cm) as_costmodel_free(x->cm);
    x->cm = NULL;
}
