/* planrec.h - the `task` and `plan` records (docs/FORMAT.md), their one home: a plan in
 * memory (as_plan, what the planners make), its `model_quality` (as_mgate), the writer
 * (as_plan_write), and the readers: the placement every tool reads (as_planrec_read, strict
 * with AS_PLANREC_STRICT) and the whole record with its costs (as_planrec_full, as-eval's,
 * and the strict check every tool runs before it adds to a plan). Dimension letters: T
 * tables of a task, K shards, W world size, G = W/K replicas. */
#ifndef AS_PLANREC_H
#define AS_PLANREC_H

#include <stddef.h>
#include <stdint.h>

#include "featurize.h"
#include "msgobj.h"
#include "piece.h"
#include "planlabel.h"
#include "stream.h"

/* ---- a plan in memory -------------------------------------------------------------- */

/* What as_plan_refine (lib/plan/refine.h) did to a plan; all zero on a plan it did not refine. */
typedef struct {
    int done;                       /* 1: refined (its alg label ends in "+refine") */
    int64_t moves, swaps;           /* improving steps taken of each kind */
    int64_t placed;                 /* unplaced tables that a step made room for, placed */
    double ms;                      /* wall-clock time of the search (part of plan_ms) */
    double max_before;              /* predicted max (ms) of the plan as the algorithm made it */
    double budget_ms;               /* the budgets it ran under: 0 = none */
    int64_t budget_steps;
    const char *stop;               /* "optimum" (no improving step left), "time", "steps" */
} as_plan_refined;

/* a plan as the planners make it (lib/plan/plan.h: as_plan_make, as_plan_free) and
 * as_plan_write writes it */
typedef struct {
    int64_t n, shards;              /* T, K */
    int64_t *assign;                /* [T] shard of each table, -1 = fits nowhere */
    uint64_t *mem;                  /* [K] weight bytes per shard */
    int64_t *count;                 /* [K] tables per shard */
    double *key;                    /* [K] running sum of the algorithm's key (random: 0;
                                       cost-greedy: predicted single-table costs) */
    double *pred;                   /* [K] predicted cost (ms), NULL without a model */
    int feasible;
    int64_t ninfeasible;
    int64_t *infeasible;            /* table ids that fit nowhere, in placement order */
    double plan_ms;                 /* planning time (wall clock), refinement included */
    as_plan_refined refine;
    as_piece *pieces;               /* [T] with --split-tables: each item's piece (the items
                                       are then pieces and whole tables); NULL: none. Owned:
                                       as_plan_free frees it */
    int split;                      /* made by the split search: "+split" in its label */
    int measured;                   /* rounds of refinement on measured costs (as-plan
                                       --repair): "+measured" at the end of its label for
                                       one, "+measuredN" for N > 1 */
    double comm_gbps;               /* split plans: the bandwidth their search charged
                                       (0: none); the record then carries each shard's
                                       communication bytes (lib/plan/split.h) */
    const char *comm_model;         /* the alpha-beta model (lib/records/comm.h) their search charged
                                       instead of comm_gbps: its name, written as comm_model
                                       (not owned); NULL: none */
    int64_t ndp;                    /* entries data parallel (assign AS_DP): on every shard,
                                       in mem[] of each, not in count[] */
    int replicated;                 /* our planner's plan searched for tables to replicate
                                       (as_plan_replicate, as-plan --replicate): "+dp" in its
                                       label, after "+split" */
} as_plan;

/* the plan's alg label into buf: as_alg_name(a), plus "+split" when p->split, plus "+dp"
 * when p->replicated, plus "+refine" when p->refine.done, plus "+measured" when p->measured is 1, "+measuredN" when
 * it is N > 1 */
const char *as_plan_alg_label(const as_plan *p, as_alg a, char *buf, size_t len);

/* A plan's tables grouped by shard, the one way every tool does it: assign[0..T) holds each
 * table's shard in 0..K-1 or -1 (unplaced: left out). Shard k holds the table positions
 * order[start[k] .. start[k+1]), ascending (plan order); start[K] = the placed tables.
 * start[K+1], order[T] (only its first start[K] entries are written). order NULL: only
 * start is filled (shard k then holds start[k+1] - start[k] tables). */
void as_plan_group(int64_t *start, int64_t *order, const int64_t *assign, int64_t n, int64_t K);

/* 2D parallelism (TorchRec DMPCollection): W ranks in G = W/K replicas of a sharding group
 * of K ranks; group i (0 <= i < G) holds global ranks i, G+i, 2G+i, ..., (K-1)G+i, so
 * shard k of the plan lives on ranks k*G + i for i = 0..G-1. Fills out[G]; returns G, or -1
 * when W is not a positive multiple of K. */
int64_t as_plan_ranks(int64_t world, int64_t shards, int64_t k, int64_t *out);
/* the 2D rank map: the global rank of replica i of shard k, with G replicas a shard */
static inline int64_t as_plan_rank(int64_t G, int64_t k, int64_t i) { return k * G + i; }

/* Data parallel (AS_DP, reclimits.h): a whole table on every one of the K shards, shard k
 * looking up bags [b0, b1) of the batch of B, in blocks of ceil(B / K) (TorchRec: each rank
 * its own batch), its gradient all-reduced. A shard runs its data-parallel tables as a
 * kernel of their own, after its other tables (TorchRec looks them up in a module of their
 * own): as-bench measures both and adds them. Shard k's bags into *b0, *b1 (b1 == b0: none,
 * when B < K). */
void as_plan_dp_bags(int64_t B, int64_t K, int64_t k, int64_t *b0, int64_t *b1);

/* ---- the task record -------------------------------------------------------------- */

/* a `task` record (docs/FORMAT.md) */
typedef struct {
    int64_t id;
    int64_t *tables;                /* T ids, malloc'd */
    int64_t ntables;
    int64_t shards;
    uint64_t mem_cap;               /* 0 = no cap */
    char split[16];                 /* "train", "test" or "" */
    /* written, not read back (what as-features made it of; the planners need none of it) */
    char setting[16];               /* "standard" or "transfer" */
    uint64_t bytes;                 /* its tables' weight bytes */
    int64_t unseen;                 /* tables from the unseen half (the transfer setting) */
    uint64_t seed;                  /* the seed the tasks were drawn with */
} as_taskrec;

/* 1 when rec is a task record (the kind's name is this module's) */
int as_taskrec_is(const msgpack_object *rec);
/* write a task record (docs/FORMAT.md): every field above */
void as_taskrec_write(as_writer *w, const as_taskrec *t);

/* parse a task record: tables (distinct ids, at most AS_MAX_TABLES, each within
 * AS_MAX_TABLE_ID), shards in 1..AS_MAX_SHARDS, tables x shards within AS_MAX_PAIRS,
 * optional mem_cap >= 0 and split. 0 ok, -1 with err */
int as_taskrec_read(const msgpack_object *rec, as_taskrec *t, char *err, size_t errlen);
void as_taskrec_free(as_taskrec *t);

/* ---- the placement in a plan record ---------------------------------------------------- */

/* 1 when rec is a plan record (the kind's name is this module's) */
int as_planrec_is(const msgpack_object *rec);

/* The placement in a `plan` record, as every reader of plans sees it (as-bench, as-costfit
 * --predict, as-eval): shards within AS_MAX_SHARDS, table ids within the limits, tables x
 * shards within AS_MAX_PAIRS, assign parallel to tables with each entry a shard in 0..K-1
 * or -1 (unplaced: an infeasible plan). */
typedef struct {
    int64_t task;                   /* -1 when the record has none */
    int has_task;
    int64_t shards;                 /* K >= 1 */
    int64_t n;                      /* T */
    int64_t *tables;                /* [T] ids, malloc'd */
    int64_t *assign;                /* [T] shard or -1, malloc'd */
    int64_t unplaced;               /* entries of assign that are -1 */
    as_piece *pieces;               /* [T] the piece of each entry (piece.h), malloc'd; NULL
                                     * when the record has no `pieces`: every entry whole */
    int64_t ndp;                    /* entries of assign that are AS_DP: data parallel */
} as_planrec;

/* With `pieces`, an entry may be a piece of its table; the entries of one table cover a
 * rectangle once (as_pieces_check_cover); without, a table listed twice is an error. A
 * data-parallel entry (assign AS_DP) is a whole table (its piece nil). That
 * the cover is all of each table needs the tables' sizes: the reader that has them checks
 * it (as_pieces_check_dims).
 * flags 0: the placement only; AS_PLANREC_STRICT: then the whole record checked as
 * as_planrec_check(rec, flags) checks it (the tools that add to a plan refuse what as-eval would
 * refuse, before minutes of measuring).
 * 0 ok, -1 with err ("plan of task 3: 'shards' = ... exceeds the limit ...") */
#define AS_PLANREC_STRICT 8
int as_planrec_read(const msgpack_object *rec, as_planrec *p, int flags, char *err, size_t errlen);
void as_planrec_free(as_planrec *p);
/* as_plan_group on a plan record */
void as_planrec_group(const as_planrec *p, int64_t *start, int64_t *order);
/* The refinement a plan record carries (refine: moves, swaps, placed, ms, pred_max_before,
 * stop; options: refine_ms, refine_steps) into *rf, done 1; all zero when it carries none. 0,
 * or -1 with err ("refine: 'swaps' = -1 is outside 0..") */
int as_planrec_refine_read(const msgpack_object *rec, as_plan_refined *rf, char *err, size_t errlen);


/* ---- the model_quality field: the quality gate's judgement of the cost model that placed a
 * plan (lib/model/modelgate.h judges it) ---- */
typedef struct {
    double r2;                  /* the model's held-out R²; NaN unknown */
    double linear_r2;           /* the linear baseline's on the same shards; NaN unknown */
    double min_r2;              /* the threshold judged against (0..1); NaN: the gate is off */
    int judged;                 /* r2 and min_r2 known: weak says whether it is weak */
    int weak;                   /* judged, and r2 < min_r2 or r2 < linear_r2 */
} as_mgate;

/* weak as the numbers say: r2 below min_r2 or below a finite linear_r2 */
int as_mgate_weak(double r2, double linear_r2, double min_r2);
/* the `model_quality` field (key and value): {"r2", "linear_r2", "min_r2": number or nil,
 * "weak": bool, nil when not judged} */
void as_mgate_pack(msgpack_packer *pk, const as_mgate *g);

/* Read a `model_quality` value o into g. r2 and linear_r2 finite numbers <= 1 or nil
 * (absent: nil), min_r2 a number in 0..1 or nil, weak true, false or nil, and weak as its
 * numbers say (nil exactly when r2 or min_r2 is nil). 0, or -1 with err naming the field
 * ("model_quality.r2 is not ..."). */
int as_mgate_read(const msgpack_object *o, as_mgate *g, char *err, size_t errlen);

/* ---- the writer ----------------------------------------------------------------------- */

/* what a plan record carries besides the plan itself */
typedef struct {
    const as_taskrec *task;
    as_alg alg;
    uint64_t seed;
    uint64_t mem_cap;               /* the cap used (task's or the override) */
    int64_t world;                  /* 0: no 2D rank map */
    const char *model;              /* model file name or NULL */
    const char *model_device;       /* what the model's costs were measured on, or NULL */
    const char *policy;             /* autoshard: the policy file, else NULL */
    int64_t samples;                /* autoshard: candidates per task (the policy's), else 0 */
    const as_features *const *items; /* the plan's items (their features), for every plan's
                                       communication bytes, their names and TorchRec memory
                                       terms; NULL: not written */
    const double *item_pred;        /* [T] the cost model's prediction of each item alone, ms
                                     * (the tables that make a shard slow); NULL: no model */
    const as_mgate *model_quality;  /* the quality gate's judgement of the cost model that
                                       placed the plan (lib/model/modelgate.h), written as
                                       `model_quality`; NULL: none (placed without it) */
    const char *label;              /* the `alg` label written instead of as_plan_alg_label's
                                       (an imported plan's own, as-plan --import); NULL: that */
    double dp_ar_bytes;             /* with items and data-parallel entries: the bytes each
                                       shard sends in the all-reduce of their gradients
                                       (lib/plan/plan.h as_plan_dp_comm_bytes summed over
                                       them), written as comm_ar_bytes */
} as_plan_meta;

/* the `alg` label a plan's outputs carry: m->label when set, else as_plan_alg_label's */
const char *as_plan_meta_label(const as_plan *p, const as_plan_meta *m, char *buf, size_t len);

/* write a `plan` record (docs/FORMAT.md) */
void as_plan_write(as_writer *w, const as_plan *p, const as_plan_meta *m);

/* ---- the whole record, with its costs -------------------------------------------------- */

/* the most passes a plan's cost_pass_ms may hold (as-bench --passes: 16) */
#define AS_PLANREC_PASS_MAX 16

typedef struct {
    /* from the record */
    int64_t run;                /* run index: input file and plan seed (set by the reader's caller) */
    int64_t task;
    int has_task;               /* the record has a task (nil counts) */
    int64_t unplaced;           /* entries of assign that are -1 */
    char alg[64];
    char split[16];             /* "" when the plan carries none */
    int64_t seed;               /* -1 when the plan carries none */
    int64_t K, T;
    int64_t *tables, *assign;   /* [T] */
    as_piece *pieces;           /* [T] each entry's piece; NULL: every table whole */
    double *cost;               /* [K] ms, NaN where unknown */
    uint64_t *mem;              /* [K] bytes; NULL when the plan carries none */
    int feasible;
    int cost_kind;              /* 0 none, 1 measured, 2 estimated */
    char device[128];           /* cost_device (measured) */
    char wtype[8], optim[32];   /* cost_weights_type, cost_optimizer: what the measured shards
                                   trained; "" when the plan carries none (fp16 with SGD) */
    double *spread;             /* [K] cost_spread: relative spread of each shard's timed runs,
                                   NaN where unknown; NULL when the plan carries none */
    unsigned char *noisy;       /* [K] cost_noisy; NULL when the plan carries none */
    /* passes (as-bench --passes, cost_pass_ms): npass >= 2 measurements of the plan made
       apart, pass_cost [npass * K] each pass's costs (pass p's shard k at p * K + k; NaN
       unmeasured); pass_spread [K] cost_pass_spread, each shard's spread over the passes with
       the plan's level taken out (NaN unknown); npass 0 and NULL when the plan carries none */
    int npass;
    double *pass_cost, *pass_spread;
    double noise_threshold;     /* noise_threshold; NaN when absent */
    int64_t clamped;            /* estimated shard costs below 0 that were set to 0 */
    /* communication (as-plan: comm_in_bytes, comm_out_bytes; lib/plan/split.h's terms): NULL when
       the plan carries none; comm_ms [K] what as_eval_charge_comm added to cost, NULL when
       nothing was charged */
    double *comm_in, *comm_out, *comm_ms;
    /* data parallel (assign AS_DP, lib/plan/plan.h): ndp such entries, each held whole by every
       shard (shard k looks up its share of the batch; the gradients are all-reduced).
       cost_dp [K] as-bench's cost_dp_ms: each shard's data-parallel part of cost (ms; 0
       where none, NaN unmeasured), NULL when the plan carries none; comm_ar [K]
       comm_ar_bytes: the bytes each shard sends in the all-reduce of those tables'
       gradients (as-plan), NULL when the plan carries none */
    int64_t ndp;
    double *cost_dp, *comm_ar;
    /* comm_rw_bytes [K]: the row pieces' share of comm_in_bytes + comm_out_bytes (as-plan, when
       the plan has row pieces: their ids and their partial sums, reduce-scattered); NULL when
       the plan carries none */
    double *comm_rw;
    /* comm_cw_bytes [K]: the column pieces' share likewise (their own all-to-alls in
       TorchRec's column_wise); NULL when the plan carries none (then counted table-wise) */
    double *comm_cw;
    /* comm_rw_in_bytes, comm_cw_in_bytes [K]: the ids' part of comm_rw / comm_cw (as-plan
       since 2026-11-29); NULL when the plan carries none (then split as the shard's
       comm_in_bytes to comm_out_bytes) */
    double *comm_rw_in, *comm_cw_in;
    /* the planner's view, for the per-rank statistics (lib/eval/evalranks.h); NULL when absent */
    double *pred;               /* [K] pred_ms: the cost model's prediction per shard */
    double *item_pred;          /* [T] item_pred_ms: each entry's prediction alone */
    char (*names)[128];         /* [T] names: a model's table names */
    uint64_t *mterm;            /* [3K] mem_terms: weights, optimizer, pipeline bytes per shard */
    uint64_t mem_cap;           /* bytes per shard; 0 none */
    /* the quality gate's judgement of the cost model that placed it (as-plan's
       model_quality, lib/model/modelgate.h): has_mq 0 when the plan carries none */
    int has_mq;
    as_mgate mq;
    /* figures (as_eval_compute); NaN when undefined */
    int ok;                     /* feasible and every shard's cost known */
    double max, min, mean, balance, speedup;
    double kmax;                /* the slowest shard's kernel cost alone (max less its charged
                                   communication; = max when none): what floors compare */
    uint64_t mem_max, mem_min;
    int64_t nnoisy;             /* noisy shards; -1 when unknown (no cost_noisy) */
    int shaky;                  /* ok, and its slowest or fastest shard is noisy */
    /* the floor (lib/eval/evalfloor.h): set before as_eval_compute, NaN unknown */
    double floor;               /* ms: the costliest of its tables alone */
    int64_t floor_unknown;      /* its tables without a single cost */
    double over_floor;          /* as_eval_compute: max / floor (ok, floor known and > 0); NaN */
    /* as_eval_compute with passes (ok and npass >= 2): each pass's balance (with the same
       communication charge as cost), their lowest and highest; NaN without */
    double pass_bal[AS_PLANREC_PASS_MAX];
    double pass_max[AS_PLANREC_PASS_MAX];  /* each pass's slowest shard (with the same charge) */
    double pass_bal_lo, pass_bal_hi;
    int pass_flip;              /* as_eval_compute: its order by balance against another plan
                                   of its run and task flips between passes */
    int at_floor;               /* as_eval_floor_mark: max <= floor x (1 + margin); -1 unknown */
    double floor_margin;        /* the margin at_floor was judged with */
} as_planrec_full;

/* Parse a `plan` record (costs from cost_ms when present; the noise fields when present;
 * the floor unknown). A data-parallel entry (assign AS_DP) is a whole table; cost_dp_ms
 * holds numbers >= 0 or nil, each at most its shard's cost_ms (its part), and, like
 * comm_ar_bytes, nothing above 0 in a plan without data-parallel entries.
 * A negative measured cost is refused as bad data; a negative estimated cost (cost_kind
 * "estimated") is set to 0 and counted in clamped. 0 ok, -1 with err. */
int as_planrec_full_read(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen);

/* The same strict reader for the tools that read plans to add to them (one reader for every
 * tool, so that what as-eval would refuse is refused before minutes of measuring):
 * AS_PLANREC_BARE: a bare plan (no task or alg, or nil: as-bench measures plans made by
 * hand) is taken, but a task or alg that is there must be well-formed;
 * AS_PLANREC_NO_COSTS: the fields a measurement replaces (cost_ms, cost_kind, cost_device,
 * cost_spread, cost_noisy, noise_threshold, cost_pass_ms, cost_pass_spread, cost_dp_ms) are
 * not read
 * (as-bench; p->cost all NaN); AS_PLANREC_NO_PRED: pred_ms is not read (as-costfit
 * --predict replaces it). Every other field is read as as_planrec_full_read reads it. */
#define AS_PLANREC_BARE 1
#define AS_PLANREC_NO_COSTS 2
#define AS_PLANREC_NO_PRED 4
int as_planrec_full_read_ex(const msgpack_object *rec, as_planrec_full *p, int flags, char *err, size_t errlen);
/* as_planrec_full_read_ex, only the verdict: 0 ok, -1 with err */
int as_planrec_check(const msgpack_object *rec, int flags, char *err, size_t errlen);
void as_planrec_full_free(as_planrec_full *p);
/* the placement of a plan read whole, as as_planrec_read reads it (its arrays copied: free
 * with as_planrec_free) */
void as_planrec_full_place(const as_planrec_full *f, as_planrec *p);

#endif
