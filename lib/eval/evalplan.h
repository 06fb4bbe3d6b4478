/* evalplan.h - a `plan` record as as-eval reads it (docs/FORMAT.md): the plan, its costs
 * (measured or estimated), as-bench's noise fields, the communication bytes, the planner's
 * own view (predictions, names, memory terms, its cost model's quality), and room for the figures the evaluation
 * computes (lib/eval/eval.h) and the floor (lib/eval/evalfloor.h). The decoding; nothing computed.
 * Dimension letters: K shards, T tables of a plan. */
#ifndef AS_EVALPLAN_H
#define AS_EVALPLAN_H

#include <stdint.h>
#include <stdio.h>

#include "modelgate.h"
#include "msgobj.h"
#include "piece.h"

typedef enum { AS_EVAL_TEXT, AS_EVAL_MARKDOWN, AS_EVAL_CSV } as_eval_format;

/* the most passes a plan's cost_pass_ms may hold (as-bench --passes: 16) */
#define AS_EVAL_PASS_MAX 16

typedef struct {
    /* from the record */
    int64_t run;                /* run index: input file and plan seed (set by the reader's caller) */
    int64_t task;
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
    double pass_bal[AS_EVAL_PASS_MAX];
    double pass_max[AS_EVAL_PASS_MAX];  /* each pass's slowest shard (with the same charge) */
    double pass_bal_lo, pass_bal_hi;
    int pass_flip;              /* as_eval_compute: its order by balance against another plan
                                   of its run and task flips between passes */
    int at_floor;               /* as_eval_floor_mark: max <= floor x (1 + margin); -1 unknown */
    double floor_margin;        /* the margin at_floor was judged with */
} as_eval_plan;

/* Parse a `plan` record (costs from cost_ms when present; the noise fields when present;
 * the floor unknown). A data-parallel entry (assign AS_DP) is a whole table; cost_dp_ms
 * holds numbers >= 0 or nil, each at most its shard's cost_ms (its part), and, like
 * comm_ar_bytes, nothing above 0 in a plan without data-parallel entries.
 * A negative measured cost is refused as bad data; a negative estimated cost (cost_kind
 * "estimated") is set to 0 and counted in clamped. 0 ok, -1 with err. */
int as_eval_plan_read(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen);

/* The same strict reader for the tools that read plans to add to them (one reader for every
 * tool, so that what as-eval would refuse is refused before minutes of measuring):
 * AS_EVAL_READ_BARE: a bare plan (no task or alg, or nil: as-bench measures plans made by
 * hand) is taken, but a task or alg that is there must be well-formed;
 * AS_EVAL_READ_NO_COSTS: the fields a measurement replaces (cost_ms, cost_kind, cost_device,
 * cost_spread, cost_noisy, noise_threshold, cost_pass_ms, cost_pass_spread, cost_dp_ms) are
 * not read
 * (as-bench; p->cost all NaN); AS_EVAL_READ_NO_PRED: pred_ms is not read (as-costfit
 * --predict replaces it). Every other field is read as as_eval_plan_read reads it. */
#define AS_EVAL_READ_BARE 1
#define AS_EVAL_READ_NO_COSTS 2
#define AS_EVAL_READ_NO_PRED 4
int as_eval_plan_read_ex(const msgpack_object *rec, as_eval_plan *p, int flags, char *err, size_t errlen);
/* as_eval_plan_read_ex, only the verdict: 0 ok, -1 with err */
int as_eval_plan_check(const msgpack_object *rec, int flags, char *err, size_t errlen);
void as_eval_plan_free(as_eval_plan *p);

/* A label or name (a plan's alg, its split) as one field of as-eval's tables: as_eval_csv_field
 * writes s as an RFC 4180 CSV field (as it is, or in double quotes with its quotes doubled when
 * it holds a comma, a quote, CR or LF); as_eval_md_cell as markdown table text ('|' and '\'
 * escaped with '\'). The names' rule (as_name_bad) keeps control characters out of them. */
void as_eval_csv_field(FILE *f, const char *s);
void as_eval_md_cell(FILE *f, const char *s);

#endif
