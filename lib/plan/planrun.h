/* planrun.h - as-plan's stage: the algorithm list, the input (`features` and `task` records)
 * read into the planner's inputs, and the plans of every task over the algorithm list
 * written as `plan` records, text or TorchRec JSON (lib/plan/plan.h makes and renders one plan).
 * Dimension letters: T tables of a task, K shards.
 *
 * Errors: every function returns -1 with a message in err and never exits; the command
 * line reports it (as-plan: exit 1 for all of them). Infeasible plans are not errors: each
 * is written, a line goes to stderr (as_plan_infeasible_msg), and they are counted.
 */
#ifndef AS_PLANRUN_H
#define AS_PLANRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "progress.h"
#include "featindex.h"
#include "plan.h"
#include "planrec.h"
#include "trplanwrite.h"
#include "split.h"
#include "stream.h"

/* as-plan's --help: head, a line (or more) for every planner of the registry (its name,
 * its help), tail; malloc'd (out of memory: exit 3) */
char *as_plan_help(const char *head, const char *tail);

/* Parse an --alg list: comma-separated names (as_alg_parse) or `all` (every algorithm,
 * cost-greedy only when has_model, autoshard only when has_policy) into want[AS_ALG_COUNT]
 * (zeroed here), *n = the algorithms chosen. 0, or -1 with err: "--alg cost-greedy needs
 * --model FILE", "--alg autoshard needs --policy FILE", "--alg: unknown algorithm 'x'",
 * "--alg: no algorithm given". */
int as_plan_alg_list(int *want, int *n, const char *list, int has_model, int has_policy, char *err, size_t errlen);

/* What the planner reads: the tables' features (lib/records/featindex.h) and the tasks in input
 * order. */
typedef struct {
    as_featidx ft;
    as_taskrec *tasks;                /* [ntasks] */
    int64_t ntasks;
    /* the first `model-config` record's (as-convert --config): the EmbeddingBagCollection's
     * path in the model ("" none) and the GPUs per host (0 none) */
    char module_path[256];
    int64_t local_size;
} as_plan_input;

/* Read files[0..nfiles) ("-" or none: standard input) into in (zeroed here): every
 * `features` record, and the `task` records of the given split (NULL: all). Every record
 * but headers is copied to pass as it is read (pass NULL: none). 0, or -1 with err: a file
 * that cannot be read ("FILE: strerror"), a bad stream or record ("FILE: record N: ..."),
 * two different features of one table. No task record is not an error here (planning
 * needs tasks, --export does not). */
int as_plan_input_read(as_plan_input *in, char *const *files, int nfiles, const char *split, as_writer *pass,
                       char *err, size_t errlen);
void as_plan_input_free(as_plan_input *in);   /* also after a failed read */

/* The features of task t's tables into f[0..T), in task order; 0, or -1 with err ("task 3:
 * table 7 has no features record in the input"). */
int as_plan_task_features(const as_plan_input *in, const as_taskrec *t, const as_features **f, char *err,
                          size_t errlen);

/* "task 3: size-greedy: plan infeasible: 2 tables fit on no shard under the 100-byte cap
 * (7, 9)": the table ids of p->infeasible listed while they fit in about 230 characters,
 * then ", ..." (the stderr line of an infeasible plan, without the program name). */
void as_plan_infeasible_msg(char *buf, size_t len, int64_t task, as_alg a, const as_plan *p, uint64_t cap);

typedef enum { AS_PLAN_OUT_STREAM, AS_PLAN_OUT_TEXT, AS_PLAN_OUT_TORCHREC } as_plan_out;

typedef struct {
    int want[AS_ALG_COUNT];         /* the algorithms (as_plan_alg_list), in enum order */
    uint64_t seed;
    int cap_given;                  /* mem_cap for every task instead of the task's */
    uint64_t mem_cap;
    int64_t shards;                 /* > 0: shards for every task instead of the task's */
    int64_t world;                  /* > 0: the 2D rank map; a multiple of every task's K */
    const as_plan_model *model;     /* NULL: no cost model */
    const char *model_path, *model_device;
    const as_mgate *model_quality;  /* the quality gate's judgement of model (lib/model/modelgate.h),
                                       written on every plan model places: cost-greedy,
                                       ALG+split, ALG+refine, repaired plans; NULL: none */
    const as_plan_policy *policy;   /* NULL: no policy (autoshard not wanted) */
    const char *policy_path;
    int samples;                    /* --samples: autoshard candidates, 0 = auto (the policy decides) */
    int refine;                     /* as_plan_refine every plan (needs model) */
    int keep_unrefined;             /* with refine: write each plan before and after */
    double refine_ms;               /* refine's budgets: wall clock per plan, 0 = none */
    int64_t refine_steps;           /* improving steps per plan, 0 = none */
    int split;                      /* as_split_search before refine (needs model) */
    int refine_comm;                /* the refinement charges split_cfg's communication on
                                       every plan (as-plan --comm-gbps / --comm-model given);
                                       0: on split plans only */
    const as_split_cfg *split_cfg;
    as_plan_out out;
    as_writer *w;                   /* AS_PLAN_OUT_STREAM */
    FILE *text;                     /* AS_PLAN_OUT_TEXT and _TORCHREC */
    const as_torchrec_opts *tro;    /* AS_PLAN_OUT_TORCHREC */
    int repair_filter;              /* as_plan_repair_run: only plans of the want[] algorithms */
    const char *repair_labels;      /* as_plan_repair_run: only plans of these labels (as
                                     * export_algs: a token with '+' or =LABEL that label
                                     * exactly, an algorithm's name all its labels); NULL: all */
    int no_dp;                      /* --no-dp: --alg torchrec without data_parallel */
    int replicate;                  /* --replicate: our planners' plans (not torchrec's) searched
                                       for tables to make data parallel (lib/plan/replicate.h),
                                       communication at split_cfg->comm_gbps; "+dp" labels */
    int repair_round;               /* as_plan_repair_run: > 0, only plans of round
                                       repair_round - 1 (0: not repaired yet); 0: all */
    const char *export_algs;        /* as_plan_export_run: comma-separated labels or
                                       algorithms the plans must have (NULL: all) */
    int64_t export_task;            /* as_plan_export_run: only this task's plans (-1: all) */
} as_plan_run_cfg;

typedef struct {
    int64_t nplans, ninfeasible;
    double plan_ms;                 /* planning time summed over the plans */
    int64_t own_row_wise, own_column_wise, own_data_parallel;   /* the planners with their own items
                                       (as_planner.items: --alg torchrec): tables they sharded so */
    int64_t replicated;             /* --replicate: tables our planners made data parallel */
    int64_t own_no_rows;            /* tables they could not shard row_wise (no row-block
                                       features: as-features --row-pieces K) */
    int64_t split_nodes, split_tables, split_cut;   /* --split-tables: plans placed and
                                                       scored, tables split, searches the
                                                       time budget ended */
    int64_t split_seeded;           /* searches that started from TorchRec's plan too (it
                                       split a table) */
} as_plan_run_stats;

/* Plan every task of in with every wanted algorithm, in task then algorithm order, and
 * write each plan (an infeasible one too; torchrec leaves it out with a line on stderr);
 * the plans the cost model placed carry c->model_quality (see as_plan_run_cfg).
 * With c->refine each plan is refined (lib/plan/refine.h) before it is written, its alg label
 * "<alg>+refine"; with c->keep_unrefined too, the algorithm's own plan is written first.
 * st->nplans counts every plan written.
 * p (may be NULL) is updated after every plan. st holds the counts so far, also after an
 * error. 0, or -1 with err: a table without features, a world size that is not a multiple
 * of a task's shards ("task 3: --world-size 6 is not a multiple of its 4 shards"), a planner
 * error ("task 3: cost-greedy: ..."). */
int as_plan_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, as_progress *p,
                char *err, size_t errlen);

/* as-plan --repair FILE: every `plan` record of FILE with measured costs (cost_kind
 * "measured", cost_ms per shard: as-bench's output) whose task is among in's tasks is
 * rebuilt on its items' features (whole tables and pieces, from in), then refined
 * (lib/plan/refine.h) on its measured costs: shard k's predicted kernel cost is scaled by
 * measured_k / predicted_k (a shard without both takes the median factor), so the search
 * starts from what was measured and judges each move or swap by the model's change, under
 * its cap (c->cap_given's, else the record's own mem_cap, else its task's), with the plan's
 * own communication charge (its comm_gbps), within
 * c->refine_ms / refine_steps. Each is written as emit writes plans, its alg label the
 * record's algorithm with "+refine+measured" (and "+split" when it was split), with
 * c->model_quality as its `model_quality`. c->model
 * required; with c->keep_unrefined each plan is also written as it was measured (its
 * label and its record's `model_quality` unchanged) before the refined one, so that one
 * as-bench run measures both; with
 * c->repair_filter only the plans whose algorithm (the label's first part)
 * is in c->want; with c->repair_labels only those labels; with c->repair_round > 0 only the plans of round repair_round - 1 (a
 * label's "+measured" rounds: none 0, "+measured" 1, "+measuredN" N). The written plan
 * carries one round more. Records without measured costs, plans of other tasks or algorithms and
 * infeasible plans are counted and skipped. Every plan record is read first by as-eval's
 * strict reader (as_planrec_full_read: a malformed field, a measured cost that is not a number
 * >= 0 or nil, is an error naming it), and its pieces are checked against the tables' sizes
 * (as_featidx_check_cover). 0, or -1 with err ("FILE: record N: plan of
 * task 3 (cost-greedy+split): table 7 [0:8, 0:16) has no features in the input").
 * On success rs counts the plans. */
typedef struct {
    int64_t plans;                  /* refined and written */
    int64_t changed;                /* of them, changed by at least one step */
    int64_t steps;                  /* moves and swaps taken */
    int64_t unmeasured, skipped;    /* plan records without measured costs; other tasks' or
                                       algorithms' or infeasible plans */
} as_repair_stats;
int as_plan_repair_run(as_plan_run_stats *st, as_repair_stats *rs, const as_plan_run_cfg *c, const as_plan_input *in,
                       const char *file, char *err, size_t errlen);

/* as-plan --export FILE: every `plan` record of FILE (as-plan's, as-bench's measured ones,
 * repaired ones) whose label is wanted - c->export_algs: a token with a '+' matches a label
 * exactly, one without matches every label of that algorithm - and whose task is
 * c->export_task (when >= 0) is rebuilt on its items' features from in (whole tables and
 * pieces) with its placement, pieces and label as they are, and written as emit writes
 * plans (c->out text or torchrec; with c->model its predictions). Its cap is --mem-cap
 * (c->cap_given) or the record's mem_cap; a shard over it is an error. Plan records are
 * read and their pieces checked as --repair's are. *exported and
 * *skipped count the plans written and passed over. 0, or -1 with err ("FILE: record N:
 * plan of task 3 (cost-greedy+split): t7[c 0:8, r 0:16) has no features in the input"). */
int as_plan_export_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const char *file,
                       int64_t *exported, int64_t *skipped, char *err, size_t errlen);

/* A placement made elsewhere, rebuilt and written as every plan is: the one finaliser of
 * --export's plans and --import's (lib/plan/trplanread.h). pr's entries (tables, pieces, assign;
 * its task and shards) are checked as --export's are - the pieces' cover against the
 * tables' sizes (as_featidx_check_cover), every item's features in in (row pieces need as-features
 * --row-pieces), every shard within o->mem_cap (0: none) - then placed as they are
 * (as_plan_make with a fixed placement: counts, mem_bytes, pred_ms with c->model) and
 * written as plan_task writes plans (c->out; names, mem_terms, comm bytes, item_pred_ms,
 * options). The label's "+split", "+refine" and "+measured" parts set the plan's. 0, or -1
 * with err ("plan of task 3 (torchrec): shard 1 holds 900 bytes, over the 800-byte cap of
 * its task"). */
typedef struct {
    const char *label;              /* the plan's alg label */
    as_alg alg;                     /* its algorithm (the label's first part) */
    uint64_t mem_cap;               /* the cap it is checked and written under (0: none) */
    const char *cap_why;            /* whose cap, for the message: " of --mem-cap", ... */
    double comm_gbps;               /* its communication charge (0: none) */
    double plan_ms;                 /* its planning time */
    uint64_t seed;
    const char *split;              /* its task's split ("" or NULL: none) */
    int64_t world;                  /* > 0: the 2D rank map */
    int verbatim;                   /* 1: label written as it is (an imported plan's own,
                                       which need not name one of our algorithms) */
    const as_comm_model *comm_model;  /* a model of each collective charged instead of comm_gbps
                                       (lib/records/comm.h); NULL: none */
} as_plan_placed;
int as_plan_emit_placed(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const as_planrec *pr,
                        const as_plan_placed *o, char *err, size_t errlen);
/* as_plan_emit_placed with a refined plan's refinement as its record carries it (--export:
 * moves, swaps, predicted max before; as_planrec_refine_read), kept when its label says
 * "+refine"; rf NULL: none (a "+refine" label's figures are then 0) */
int as_plan_emit_refined(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const as_planrec *pr,
                         const as_plan_placed *o, const as_plan_refined *rf, char *err, size_t errlen);

#endif
