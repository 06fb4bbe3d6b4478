/* eval.h - evaluation of sharding plans: per plan the max / min / mean shard cost, the degree
 * of balance (min/max) and memory per shard; per task the speedup of every algorithm over the
 * random plan of the same task and run (max C random / max C plan); per algorithm the mean and
 * standard deviation of balance and speedup across tasks and runs (the paper's Figure 8).
 * Dimension letters: K shards, T tables of a plan.
 *
 * Costs are either all measured (as-bench) or all estimated (a cost model); the two are
 * never mixed in one evaluation. Standard deviations are population ones (divide by n);
 * confidence intervals are 95 % Student t-intervals (sample standard deviation, n - 1
 * degrees of freedom). Speedups aggregate by the geometric mean: the t-interval of the mean
 * log speedup, exponentiated.
 *
 * Noise (as-bench's cost_spread, cost_noisy, noise_threshold on a plan): a plan "rests on a
 * noisy shard" when its slowest or fastest shard (the two its balance is made of) stayed
 * noisy after as-bench's re-measuring. Two algorithms are ranked by a paired comparison of
 * their balance over the same tasks (as_eval_compare, as_eval_rank).
 *
 * Also the training curve of the learned policy from as-rl's `train` records: a table of
 * balance against episodes and wall time (its gnuplot plots, and the plans': evalplot.h).
 */
#ifndef AS_EVAL_H
#define AS_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "evaltext.h"
#include "planrec.h"
#include "stats.h"
#include "piece.h"
#include "stream.h"

/* Charge communication by model m (lib/records/comm.h) to the plans' shard costs, as as-plan
 * --split-tables scores it (lib/plan/split.h): a shard's bytes of each sharding type are its own
 * items' (ids in + outputs out) plus the sum of every shard's over K, its side of the
 * collective; with data-parallel entries also the bytes it sends in their gradients'
 * all-reduce (comm_ar_bytes), its own (not shared over K). The bandwidth model charges them
 * / G; a model of each collective each type's calls (every shard, when the plan has
 * the type) plus the bytes over their bus bandwidth (as_comm_shard_ms).
 * Only when every plan with a known cost carries the communication bytes (never a mix; a
 * plan with data-parallel entries over K > 1 shards needs comm_ar_bytes too, one of them
 * alone needs no comm_in_bytes): returns 1 charged, 0 not (m charges nothing, or *missing
 * plans without the bytes, or some of them, *have with some), -1 with err when m does not
 * hold for a plan's K (as_comm_model_check).
 * The byte totals per shard (in + out + all-reduce) are summed into *bytes_sum / *bytes_n / *bytes_max
 * (either may be NULL) whether charged or not, for the report. */
int as_eval_charge_comm(as_planrec_full *p, int64_t n, const as_comm_model *m, int64_t *missing, int64_t *have,
                        double *bytes_sum, int64_t *bytes_n, double *bytes_max, char *err, size_t errlen);

/* plan q's shard k: its communication under m into *ms (each type's part into parts, NULL: not
 * wanted), by the one definition (as_comm_plan_shard_ms: its own bytes of each sharding type
 * and its share of everyone's, what it sends in the all-reduce), the types the plan has from
 * its entries' pieces (so that a plan from before comm_rw_bytes / comm_cw_bytes, whose pieces'
 * bytes are counted table-wise, still pays each type's alphas). -1 (*ms 0) when the plan
 * carries no communication bytes or k is out of range, else 0 */
/* each shard's load of plan q (comm.h as_comm_load: its bytes by sharding type, everyone's,
 * its all-reduce bytes, the types the plan has; a table's row pieces all on one host of
 * local ranks table-row-wise, local > 0 and K > local) into l[0..K); -1 when q carries no
 * communication bytes. What as_eval_comm_ms and the charge evaluate a model on. */
int as_eval_comm_loads(const as_planrec_full *q, int64_t local, as_comm_load *l);
int as_eval_comm_ms(const as_planrec_full *q, int64_t k, const as_comm_model *m, double *ms, double parts[AS_NSH]);

/* per-plan figures (over_floor from a floor set before), then per (run, task) the speedup over that run's first random plan of
 * the task (random plans themselves: 1); plans without a usable random plan (or one whose
 * slowest shard costs 0): NaN */
void as_eval_compute(as_planrec_full *p, int64_t n);

typedef struct {
    char alg[64];
    int64_t plans;              /* plans of this algorithm */
    int64_t infeasible;         /* of which infeasible */
    int64_t unmeasured;         /* feasible, but some shard has no cost */
    int64_t nbal, nspd;         /* values behind the statistics (or runs, with over_runs) */
    double bal_mean, bal_std;   /* balance as a fraction (1 = perfect) */
    double bal_lo, bal_hi;      /* 95 % t-interval of the mean balance, clipped to [0, 1] */
    double spd_mean, spd_std;   /* arithmetic mean and std of the speedups (CSV only) */
    double spd_gmean;           /* geometric mean speedup */
    double spd_lo, spd_hi;      /* its 95 % interval (t-interval of the mean log speedup) */
    double max_mean;            /* mean slowest-shard cost, ms */
    int64_t shards, noisy;      /* shards of its plans with a cost_noisy flag; of which noisy */
    int64_t shaky;              /* plans resting on a noisy shard (as_planrec_full.shaky) */
    int64_t nfloor;             /* usable plans with a known floor (at_floor >= 0) */
    int64_t at_floor;           /* of which at their floor (at_floor 1) */
    double floor_ratio_mean;    /* mean max / floor (over plans, or runs with over_runs); NaN */
    double floor_margin;        /* the plans' floor margin; NaN when none was judged */
    int64_t mq_plans;           /* plans carrying model_quality (placed by a cost model) */
    int64_t mq_weak, mq_unjudged; /* of which marked weak; not judged (weak nil) */
    /* passes (as-bench --passes): when every usable plan carries the same npass >= 2, the
       mean balance of each pass, lowest and highest (the between-pass interval); else npass
       0 and NaN. pass_flips: its plans whose order against another plan of the same task
       flips between passes */
    int npass;
    double bal_pass_lo, bal_pass_hi;
    int64_t pass_flips;
} as_eval_alg;

/* Summary per algorithm, in the canonical order (random, size-greedy, dim-greedy,
 * lookup-greedy, size-lookup-greedy, cost-greedy), then others by first appearance.
 * over_runs: each run's figure first (balance: the arithmetic mean over its tasks;
 * speedup: the geometric mean, spd_mean the arithmetic one), then the statistics over runs;
 * otherwise over all plans. *out is malloc'd. */
void as_eval_summary(const as_planrec_full *p, int64_t n, int over_runs, as_eval_alg **out, int64_t *nout);

/* ---- noise and ranking ------------------------------------------------------------------ */

/* more than this fraction of noisy shards among two algorithms' plans: too noisy to rank (as-eval
 * --help states it as 10 %) */
#define AS_EVAL_NOISY_MAX 0.10

/* the noise over a set of plans (those of alg; all when alg is NULL) */
typedef struct {
    int64_t shards;             /* shards with a cost_noisy flag (non-empty, measured) */
    int64_t noisy;              /* of which noisy */
    int64_t spreads;            /* shards with a known spread */
    double median_spread;       /* median of those spreads; NaN when none */
    double threshold;           /* the first plan's noise_threshold; NaN when none */
    int64_t plans, shaky;       /* usable plans (ok); of which resting on a noisy shard */
} as_eval_noise;
void as_eval_noise_of(const as_planrec_full *p, int64_t n, const char *alg, as_eval_noise *out);

/* Paired comparison of algorithm a with b over the (run, task) pairs where both have a
 * usable plan (ok); with over_runs the pairs' figures are first averaged per run (balance
 * difference: arithmetic mean; speedup ratio: geometric mean) and the statistics are over
 * runs. NaN where undefined. */
typedef struct {
    int64_t n;                  /* values behind the statistics: pairs, or runs */
    double bal_diff;            /* mean balance of a minus that of b (fraction) */
    double bal_lo, bal_hi;      /* its 95 % t-interval */
    double ratio;               /* geometric mean of max cost of b / max cost of a: a's speedup over b */
    double ratio_lo, ratio_hi;  /* its 95 % interval */
    int all_equal;              /* every pair has the same balance and max cost */
    int64_t shards, noisy;      /* shards of the paired plans of both with a cost_noisy flag; noisy */
    /* passes (as-bench --passes): when every pair's plans carry the same npass >= 2 passes,
       npass and the lowest and highest over the passes of the pass's mean balance difference
       (a minus b, over the pairs); else npass 0 and NaN. flips: pairs whose order is not the
       same in every pass (pass_pairs: pairs with passes) */
    int npass;
    double pass_lo, pass_hi;
    int64_t flips, pass_pairs;
} as_eval_cmp;
void as_eval_compare(const as_planrec_full *p, int64_t n, const char *a, const char *b, int over_runs, as_eval_cmp *c);

typedef enum {
    AS_RANK_NONE,               /* no algorithm with a balance */
    AS_RANK_SINGLE,             /* one algorithm only */
    AS_RANK_RESOLVED,           /* the winner's lead is outside the interval and noise is low */
    AS_RANK_NOISY,              /* the interval includes 0, or too many noisy shards */
    AS_RANK_FEW,                /* fewer than 2 paired values: no interval */
    AS_RANK_TIE,                /* the two made plans of equal cost on every task */
} as_eval_rank_kind;

/* The winner (highest mean balance; ties: higher geometric-mean speedup, then summary
 * order) and the runner-up, compared with as_eval_compare. RESOLVED when the interval of the
 * balance difference lies above 0, at most AS_EVAL_NOISY_MAX of the paired plans'
 * flagged shards are noisy (unknown noise does not block it) and, when the plans were
 * measured in passes (cmp.npass >= 2), the winner's mean lead is above 0 in every pass: the
 * variation between measurements made apart (in time and in memory) is what can reverse a
 * ranking that the tasks' interval calls clear; else NOISY with pass_flip. */
typedef struct {
    as_eval_rank_kind kind;
    int64_t winner, runner;     /* indices into the summary; -1 when none */
    as_eval_cmp cmp;            /* winner against runner-up */
    int too_noisy;              /* the noisy-shard fraction is above AS_EVAL_NOISY_MAX */
    int pass_flip;              /* NOISY because, with passes, the lead is not above 0 in every
                                 * pass although the interval over the tasks is */
} as_eval_rank;
void as_eval_rank_algs(const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na, int over_runs,
                       as_eval_rank *r);

/* the algorithms with a mean balance, best first by the winner's rule (stable); order[na];
 * returns how many */
int64_t as_eval_order(const as_eval_alg *a, int64_t na, int64_t *order);

/* as_eval_rank_algs for a given pair: x the better of the two, y the other */
void as_eval_rank_pair(const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t x, int64_t y, int over_runs,
                       as_eval_rank *r);

/* ---- the cost model's quality ----------------------------------------------------------- */

/* a metrics map {"n", "mae", "mse", "mape", "r2"} (NaN / n -1 where nil or absent) */
typedef struct {
    int64_t n;
    double mae, mse, mape, r2;
} as_eval_metrics;

typedef struct {
    int have;                   /* 0 nothing read; 1 held-out metrics; 2 a model without a test split */
    char source[32];            /* "model" (its heldout) or "costfit-report" */
    char output[32];            /* the model's output form ("linear" when absent; "" unknown) */
    char split[16];
    int64_t test_shards;
    as_eval_metrics model, linear, sum_single;
    double coverage;            /* of the sum-of-singles baseline; NaN unknown */
} as_eval_quality;

/* Read the held-out quality from a `model` record (its `heldout`, docs/FORMAT.md; nil: have
 * 2; absent: returns 1 and leaves q alone, nothing to read) or a `costfit-report` record
 * (model.test, linear.test, sum_single). 0 read, 1 nothing in it, -1 malformed with err. */
int as_eval_quality_read(const msgpack_object *rec, as_eval_quality *q, char *err, size_t errlen);

/* 1 when the model predicts held-out shards worse than the linear baseline: a lower R²
 * or a higher MAE (either, where both are known); 0 not; -1 unknown */
int as_eval_quality_worse(const as_eval_quality *q);

/* the quality in one line (text, markdown: a paragraph; CSV: nothing), and the warning in
 * words when the model is worse than the line */
void as_eval_print_quality(FILE *f, as_eval_format fmt, const as_eval_quality *q);

/* what the lines above as-eval's tables say (as_eval_print_header) */
typedef struct {
    const char *model_path;         /* costs estimated by this model file (NULL: from the plans) */
    const char *model_device;       /* the device its training costs were measured on */
    const char *label;              /* "measured" or "estimated" */
    const char *device;             /* the plans' cost_device ("" none) */
    int devices_differ;
    const char *trained;            /* what the measured shards trained, "WEIGHTS OPTIMIZER" ("" none) */
    int trained_differ;
    int64_t nplans, nruns;
    const char *comm_model;         /* the collectives' model's name, or NULL: comm_gbps */
    double comm_gbps;
    int charged;                    /* communication added to the costs */
    int64_t dp_plans;               /* plans with data-parallel tables */
    int comm_have;                  /* some plan carries communication bytes */
    int64_t comm_missing, comm_n;   /* plans without them; shards with them */
    double comm_bytes, comm_max;    /* their sum and largest */
    int64_t clamped, estimated;     /* estimated shard costs set to 0; estimated shard costs */
    const as_eval_quality *quality; /* the cost model's quality (NULL: no model) */
    int show_quality;               /* a table that rests on it is shown */
} as_eval_header;

/* the lines above the tables: what the costs are (measured on what, training what; or the
 * model that estimated them), the communication charged or not, estimates counted as 0,
 * the cost model's held-out quality */
void as_eval_print_header(FILE *f, as_eval_format fmt, const as_eval_header *h);

/* label: "measured" or "estimated" (every figure is printed with it) */
void as_eval_print_plans(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label);
void as_eval_print_shards(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label);
void as_eval_print_summary(FILE *f, as_eval_format fmt, const as_eval_alg *a, int64_t n, const char *label,
                           int over_runs);

/* what the verdict says besides the plans: NULL / 0 where none */
typedef struct {
    const char *label;          /* "measured" or "estimated" */
    const char *device;         /* where the costs were measured ("" unknown) */
    int over_runs;
    int64_t runs;
    const as_eval_quality *quality;
    int64_t clamped, estimated; /* negative estimated shard costs set to 0, of estimated ones */
    const char *plot, *curve;   /* the --plot and --curve files */
    double floor_margin;        /* the floor-bound margin (lib/eval/evalfloor.h) */
} as_eval_verdict_info;

/* The closing summary in words: which algorithm won by mean balance and speedup, by how
 * much over the runner-up, cost-greedy and random, whether that ranking is resolved or
 * within noise, which algorithms' plans rest on a cost model as-plan marked weak (their
 * model_quality), how noisy the measurement was, how good the cost model is and where the
 * plots are. CSV: one header line and one row of the same figures. */
void as_eval_print_verdict(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_eval_alg *a,
                           int64_t na, const as_eval_verdict_info *v);

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

#endif
