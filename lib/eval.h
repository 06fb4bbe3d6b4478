/* eval.h - evaluation of sharding plans: per plan the max / min / mean shard cost, the degree
 * of balance (min/max) and memory per shard; per task the speedup of every algorithm over the
 * random plan of the same task and run (max C random / max C plan); per algorithm the mean and
 * standard deviation of balance and speedup across tasks and runs (the paper's Figure 8).
 * Dimension letters: K shards, T tables of a plan.
 *
 * Costs are either all measured (as-bench) or all estimated (a cost model); the two are
 * never mixed in one evaluation. Standard deviations are population ones (divide by n).
 *
 * Also the training curve of the learned policy from as-rl's `train` records: a table and
 * gnuplot plots of balance against episodes and wall time.
 */
#ifndef AS_EVAL_H
#define AS_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "stream.h"

typedef struct {
    /* from the record */
    int64_t run;                /* run index: input file and plan seed (set by the reader's caller) */
    int64_t task;
    char alg[64];
    char split[16];             /* "" when the plan carries none */
    int64_t seed;               /* -1 when the plan carries none */
    int64_t K, T;
    int64_t *tables, *assign;   /* [T] */
    double *cost;               /* [K] ms, NaN where unknown */
    uint64_t *mem;              /* [K] bytes; NULL when the plan carries none */
    int feasible;
    int cost_kind;              /* 0 none, 1 measured, 2 estimated */
    char device[128];           /* cost_device (measured) */
    /* figures (as_eval_compute); NaN when undefined */
    int ok;                     /* feasible and every shard's cost known */
    double max, min, mean, balance, speedup;
    uint64_t mem_max, mem_min;
} as_eval_plan;

/* Parse a `plan` record (costs from cost_ms when present). 0 ok, -1 with err. */
int as_eval_plan_read(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen);
void as_eval_plan_free(as_eval_plan *p);

/* per-plan figures, then per (run, task) the speedup over that run's first random plan of
 * the task (random plans themselves: 1); plans without a usable random plan: NaN */
void as_eval_compute(as_eval_plan *p, int64_t n);

typedef struct {
    char alg[64];
    int64_t plans;              /* plans of this algorithm */
    int64_t infeasible;         /* of which infeasible */
    int64_t unmeasured;         /* feasible, but some shard has no cost */
    int64_t nbal, nspd;         /* values behind the statistics (or runs, with over_runs) */
    double bal_mean, bal_std;   /* balance as a fraction (1 = perfect) */
    double spd_mean, spd_std;
    double max_mean;            /* mean slowest-shard cost, ms */
} as_eval_alg;

/* Summary per algorithm, in the canonical order (random, size-greedy, dim-greedy,
 * lookup-greedy, size-lookup-greedy, cost-greedy), then others by first appearance.
 * over_runs: average each run's tasks first, then mean and std over runs; otherwise over
 * all plans. *out is malloc'd. */
void as_eval_summary(const as_eval_plan *p, int64_t n, int over_runs, as_eval_alg **out, int64_t *nout);

/* mean and population standard deviation of the finite values of v[0..n); returns how many */
int64_t as_eval_meanstd(const double *v, int64_t n, double *mean, double *std);

typedef enum { AS_EVAL_TEXT, AS_EVAL_MARKDOWN, AS_EVAL_CSV } as_eval_format;

/* label: "measured" or "estimated" (every figure is printed with it) */
void as_eval_print_plans(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, const char *label);
void as_eval_print_shards(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, const char *label);
void as_eval_print_summary(FILE *f, as_eval_format fmt, const as_eval_alg *a, int64_t n, const char *label,
                           int over_runs);

/* Plots with gnuplot (pngcairo when available, else png) into png: per-shard cost bars of
 * every algorithm's plan of task `task` (first run), balance and speedup per algorithm with
 * error bars, and, when pred/meas are given, predicted against measured shard cost. 0 ok;
 * -1 with err (gnuplot missing or failing: the caller treats it as an environment error). */
int as_eval_plot(const char *png, const as_eval_plan *p, int64_t n, const as_eval_alg *a, int64_t na,
                 int64_t task, const char *label, const double *pred, const double *meas, int64_t nscatter,
                 char *err, size_t errlen);

/* ---- training curves (as-rl --log) ------------------------------------------------------- */

/* one `train` record (docs/FORMAT.md); NaN where a number is absent or undefined */
typedef struct {
    int64_t episode;            /* cumulative episodes after the update */
    int64_t update;             /* -1 when absent */
    int64_t evals;              /* shards measured so far */
    double wall_s;              /* cumulative training seconds */
    char reward_source[16];     /* "model", "bench"; "" when absent */
    double reward;              /* mean final reward of the update's episodes */
    double pred_balance;        /* mean predicted balance of the feasible episodes */
    double meas_balance;        /* mean measured balance (bench rewards) */
    double eval_pred_balance;   /* greedy evaluation on training tasks */
    double eval_meas_balance;
} as_eval_train;

/* Parse a `train` record: integers episode and evals, numbers wall_s, reward and
 * pred_balance (nil reads as NaN) are required; the optional numbers, when present, must be
 * numbers or nil. 0 ok, -1 with err. */
int as_eval_train_read(const msgpack_object *rec, as_eval_train *t, char *err, size_t errlen);

/* the balance the training curve shows for a record: pred_balance, or the reward when the
 * update had no feasible episode (pred_balance NaN) */
double as_eval_train_balance(const as_eval_train *t);

/* The records the curve table shows, as indices into t[0..n) (rows[n]): every record that
 * carries an evaluation; when none does, every ceil(n/max)-th counted back from the last
 * (so at most max rows, the last record always among them). Returns how many. */
int64_t as_eval_curve_rows(const as_eval_train *t, int64_t n, int64_t max, int64_t *rows);

/* the curve table (rows of as_eval_curve_rows with max 20): episode, wall_s, evals, reward,
 * pred_balance, eval_pred_balance, eval_meas_balance */
void as_eval_print_curve(FILE *f, as_eval_format fmt, const as_eval_train *t, int64_t n);

/* The training curve with gnuplot (pngcairo when available, else png) into png: balance
 * against episodes and against wall time (wall_s), series training episodes (as_eval_train_
 * balance), their measured balance, and the greedy evaluations' predicted and measured
 * balance, each where present. 0 ok; -1 with err (gnuplot missing or failing). */
int as_eval_plot_curve(const char *png, const as_eval_train *t, int64_t n, char *err, size_t errlen);

#endif
