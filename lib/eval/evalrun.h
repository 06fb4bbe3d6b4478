/* evalrun.h - as-eval's run, as featrun, benchrun and planrun are their tools': the cost
 * model and the input read and checked against what is asked for, the plans' costs
 * (estimated with a model), communication, floors and summary computed, the tables and the
 * verdict printed, the plots written. cmd/as-eval parses the options into as_eval_opts and
 * calls these in order; a failure returns its exit code (AS_EXIT_DATA: the input;
 * AS_EXIT_ENV: the plots could not be made) with the message in err, and as-eval exits with
 * it. Warnings go to stderr (as_info). */
#ifndef AS_EVALRUN_H
#define AS_EVALRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "costmodel.h"
#include "eval.h"
#include "evalinput.h"
#include "evalrange.h"

/* the options (as-eval --help) */
typedef struct {
    const char *model_path, *split, *plot, *curve, *singles;
    double floor_margin;        /* < 0: the default of the cost kind */
    double comm_gbps;           /* 0: communication reported, not charged */
    int comm_gbps_given;
    const char *comm_model_arg; /* --comm-model; NULL: the bandwidth model at comm_gbps */
    as_comm_model comm;         /* what is charged (lib/records/comm.h) */
    as_eval_format fmt;
    int show_plans, show_shards, show_ranks, show_comm, show_summary, show_curve, show_verdict, table_given, over_runs;
    int show_range;
    int64_t plot_task;          /* < 0: the first plan's task */
    const char *chosen, *versus, *candidates;   /* --table range's (evalrange.h) */
    as_comm_model range_model[AS_RANGE_MAX_MODELS];
    int64_t nrange_model;
    double tie;
} as_eval_opts;

/* one run's state, shared by its phases: the options, the model, the input and what is
 * computed from the plans for the tables and the verdict. Zeroed before the options are set */
typedef struct {
    as_eval_opts o;
    as_costmodel *cm;
    as_eval_quality_src qs_model;   /* the quality of --model's cost model */
    as_eval_input in;
    const char *label;              /* "measured", "estimated" or "" (no plans) */
    as_eval_alg *sum;
    int64_t nsum, clamped, estimated, comm_missing, comm_have, comm_n;
    int64_t dp_plans;               /* plans with data-parallel tables (their all-reduce charged) */
    double comm_bytes, comm_max;
    int charged;
    double floor_margin;
    const as_eval_quality *quality;
    as_eval_quality no_quality;
} as_eval_run;

/* the model (--model) and the files (none: standard input) read, what they hold checked
 * against what x->o asks for, and with plans asked for, everything computed from them; the
 * cost model's quality picked. 0, or an exit code with err */
int as_eval_run_read(as_eval_run *x, char **files, int nfiles, char *err, size_t errlen);

/* 1 when the run prints tables (then as_eval_run_print writes them to a text output) */
int as_eval_run_prints(const as_eval_run *x);

/* the header (not in CSV), the tables asked for in order, then the verdict. 0, or an exit
 * code with err (--candidates FILE cannot be read) */
int as_eval_run_print(FILE *f, const as_eval_run *x, char *err, size_t errlen);

/* --plot and --curve: their files. 0, or an exit code with err */
int as_eval_run_plots(as_eval_run *x, char *err, size_t errlen);

void as_eval_run_free(as_eval_run *x);

#endif
