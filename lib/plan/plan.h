/* plan.h - sharding plans: the planners (their registry, lib/records/planners.def, and what a
 * planner is: as_planner below), the heuristic baselines of the paper (prototype
 * semantics, with memory caps honoured; plangreedy.c, planrandom.c), the cost-model greedy
 * (plangreedy.c) and the 2D-parallel rank map; the `task` and `plan` records are planrec.h's,
 * a plan as text planreport.h's. Dimension letters: T
 * tables of a task, K shards, W world size, G = W/K replicas.
 *
 * Greedy heuristics: sort the task's tables by a cost key, descending (ties: larger weight
 * bytes, then larger table id); put each on the shard with the smallest running sum of keys
 * among the shards where it still fits under the memory cap (ties: smaller bytes sum, then
 * lower shard id). Keys: size-greedy rows*dim, dim-greedy dim, lookup-greedy dim*pooling,
 * size-lookup-greedy dim*pooling*log10(rows). random: each table, in task order, on a shard
 * drawn uniformly from those where it still fits (all K without a cap: the prototype).
 * cost-greedy: tables ordered by the model's predicted single-table cost (ties as above),
 * each placed where the predicted cost of the resulting shard is lowest among the shards
 * where it fits (ties: smaller bytes sum, then lower shard id).
 *
 * autoshard: the learned policy (lib/rl/policy.h), through an as_plan_policy callback.
 * torchrec: TorchRec's default planner (lib/plan/plantorchrec.h), which also splits tables; its
 * placement of the items reaches as_plan_make through the same callback.
 *
 * A table that fits on no shard is left unplaced (assign -1) and the plan is infeasible:
 * caps are never exceeded. Memory is fp16 weight bytes (rows*dim*2).
 *
 * TorchRec's row_wise (lib/plan/pins.h): the K row blocks of a table, block i on rank i, are
 * pinned. as_plan_make puts them on their ranks before the planner places the rest (a block
 * that does not fit on its rank stays unplaced); the learned policy and a placement must put
 * them there or leave them unplaced. So every plan of such items is one TorchRec loads.
 */
#ifndef AS_PLAN_H
#define AS_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "common.h"
#include "featindex.h"
#include "featurize.h"
#include "modelgate.h"
#include "planlabel.h"
#include "planrec.h"
#include "stream.h"

/* as_alg, the planners' names and the plan labels (ALG+split+dp+refine+measuredN):
 * planlabel.h */

/* The cost model as the planner sees it: a per-table representation of width rep that is
 * summed over a shard, and a head mapping a summed representation to the shard's cost
 * (ms). lib/model/costmodel.h provides one (as_costmodel_embed / as_costmodel_head); the tests
 * use hand-made ones. */
typedef struct {
    void *ctx;
    int rep;                                                          /* >= 1 */
    void (*embed)(void *ctx, const as_features *f, float *out);      /* out[rep] */
    double (*head)(void *ctx, const float *sum);                      /* sum[rep] -> ms */
    /* optional split of the head for incremental use: head(sum) == post(pre(sum)) where pre
     * is linear (no bias) into hid values, so pre(a + b) = pre(a) + pre(b)
     * up to rounding; a planner caches pre of every table and every shard */
    int hid;
    void (*pre)(void *ctx, const float *sum, float *out);            /* out[hid] */
    double (*post)(void *ctx, const float *z);                       /* z[hid] -> ms */
} as_plan_model;

/* A learned planner (lib/rl/policy.h provides one): fills assign[0..n) with a shard in 0..K-1,
 * or -1 for a table that fits nowhere under cap; 0 ok, -1 with err. */
typedef struct {
    void *ctx;
    int (*place)(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                 char *err, size_t errlen);
    int given;      /* 1: a placement taken as it is (an imported or measured plan rebuilt): TorchRec's
                       row_wise pins are not checked on it (TorchRec's table_row_wise cuts a table of
                       fewer rows than ranks into row_wise's blocks, on another host's ranks) */
    void *search_ctx;   /* NULL, or the split search's (split.h) context for its candidates: a
                           quicker placement by the same planner (the policy's greedy rollout
                           alone, where ctx draws samples as well); the search's best node is
                           placed once more with ctx, and the plan of the better score kept */
    int (*samples)(void *ctx, int64_t n, int64_t K);   /* NULL, or the candidate placements
                           place draws for a task of n items on K shards (a plan record's
                           `samples`); the planner is the policy's, as-plan stays below it */
} as_plan_policy;

typedef struct {
    as_alg alg;
    int64_t shards;                 /* K >= 1 */
    uint64_t mem_cap;               /* bytes per shard, 0 = no cap */
    uint64_t seed;                  /* random: the plan of task t draws from stream t of this seed */
    int64_t rng_stream;             /* that random stream: usually the task id */
    const as_plan_model *model;     /* needed by cost-greedy; with any algorithm it also
                                       gives the predicted cost of every shard */
    const as_plan_policy *policy;   /* needed by autoshard */
    double comm_gbps;               /* > 0: the communication charged at this bandwidth by the
                                       one objective (lib/plan/objective.h): as_plan_refine
                                       rates each shard by it, cost-greedy places each item
                                       where the shard's kernel plus its own communication is
                                       lowest (the other planners ignore it); as-plan sets it
                                       for split plans and, given --comm-*, for --refine */
    const double *shard_scale;      /* [K] or NULL: as_plan_refine multiplies shard k's
                                       predicted kernel cost by shard_scale[k] (as-plan
                                       --repair: measured / predicted); as_plan_make ignores it */
    int no_dp;                      /* torchrec: leave data_parallel out of its options
                                       (as-plan --no-dp); 0: TorchRec's default, with it */
    const as_comm_model *comm_model;  /* an alpha-beta model (lib/records/comm.h) charged
                                       instead of comm_gbps, as above (each item's bytes over
                                       its sharding type's collective; the alphas are the
                                       same on every shard); NULL: comm_gbps */
} as_plan_cfg;

/* ---- the planners ------------------------------------------------------------------------
 * Every planner is one line of the registry (planners.def: its as_alg, its name) and one
 * `const as_planner as_planner_IDENT` in a module of its own: plangreedy.c (the heuristics
 * and cost-greedy), planrandom.c, plan.c (autoshard, over the policy's callback), plantorchrec.c. as_plan_make checks
 * what it needs, sets up the plan and calls its make; as-plan runs it per task, lists it
 * in --help and `--alg all`; as-eval orders its plans by the registry. */

/* what a planner needs (as_planner.needs) */
enum {
    AS_PLANNER_MODEL = 1,           /* a cost model (as-plan --model): refused without one,
                                       left out of `all`; its plans carry the model's quality */
    AS_PLANNER_POLICY = 2,          /* a learned policy (--policy): as_plan_cfg.policy places
                                       the tables; refused without one, left out of `all`; its
                                       plans name the policy and its --samples */
    AS_PLANNER_PLACEMENT = 4,       /* its own items and placement, made before as_plan_make
                                       (TorchRec's planner, lib/plan/plantorchrec.h; given through
                                       as_plan_cfg.policy): only by name, not in `all`; as-plan
                                       neither splits nor replicates its plans */
};

/* what a planner's make function works on: the plan p is set up for c->shards shards with
 * every item unplaced (assign -1), mem, count and key zero, room for n infeasible ids */
typedef struct {
    as_plan *p;
    const as_plan_cfg *c;
    const as_features *const *t;    /* the items (tables or pieces), n of them */
    int64_t n;
    const uint64_t *bytes;          /* [n] each item's memory (as_plan_table_bytes) */
    const float *rep;               /* [n x c->model->rep] the cost model's representation of
                                       each item; NULL without a model */
    float *sum;                     /* [K x c->model->rep] zeros: a planner that sums its
                                       shards' representations while placing leaves them here
                                       and sets summed (else as_plan_make sums them, for the
                                       shards' predicted costs); NULL without a model */
    int summed;
    const int64_t *pin;             /* [n] the rank of each item TorchRec's row_wise fixes
                                       (lib/plan/pins.h), -1 for the others; NULL: none.
                                       For a planner without AS_PLANNER_POLICY or _PLACEMENT
                                       as_plan_make has put the pinned items on their ranks
                                       already (those that fit; the others unplaced): its make
                                       places the others around them. A policy or a placement
                                       must put each on its rank or leave it unplaced. */
} as_plan_ctx;

/* each item's work for the hosts of TorchRec's table_row_wise blocks (pins.h
 * as_plan_pins_hosts): its predicted cost alone (rep[n x R], the model's representations)
 * plus its communication as table-row-wise (comm.h as_comm_item_ms); NULL without a cost
 * model, rep or a communication model of hosts (pins.h then weighs the bytes). as_plan_make
 * and the refinement pin with it, so they choose the same hosts. Free it. */
double *as_plan_pin_work(const as_plan_cfg *c, const as_features *const *t, int64_t n, const float *rep);

/* 1 when item i of x is pinned (placed by as_plan_make, not by the planner) */
static inline int as_plan_pinned(const as_plan_ctx *x, int64_t i) { return x->pin && x->pin[i] >= 0; }

/* what a planner with its own items made of a task's tables (as_planner.items) */
typedef struct {
    int64_t row_wise, column_wise;  /* tables sharded so */
    int64_t data_parallel;          /* tables replicated on every shard */
    int64_t no_rows;                /* tables not sharded row_wise for want of the row blocks'
                                       features (as-features --row-pieces) */
    double ms;                      /* its planning time, wall clock */
} as_plan_items_info;

typedef struct {
    unsigned needs;                 /* AS_PLANNER_* */
    const char *help;               /* its lines in as-plan --help after the name column
                                       (continuation lines indented to column 23) */
    double (*key)(const as_features *f);  /* its sort key of an item (the greedy
                                       heuristics; the refinement and the replication keep
                                       the shards' key sums with it); NULL: 0 */
    int key_cost;                   /* the sort key is the model's cost of the item alone */
    int (*make)(as_plan_ctx *x, char *err, size_t errlen);  /* place the items: 0 ok, -1 err */
    /* AS_PLANNER_PLACEMENT: its own items of the task's whole tables t[0..n) (tables and
       pieces, in task order, each table's pieces together; ft gives the pieces' features),
       *items and their placement *assign (shard or -1) malloc'd [*nitems], made under c's
       shards and cap before as_plan_make takes the placement as given; what it made in
       *info; 0, or -1 with err */
    int (*items)(const as_plan_cfg *c, const as_featidx *ft, const as_features *const *t, int64_t n, as_features **items,
                 int64_t *nitems, int64_t **assign, as_plan_items_info *info, char *err, size_t errlen);
} as_planner;

/* the planner of a (NULL when a is out of range) */
const as_planner *as_planner_of(as_alg a);
/* item i's place in a planner's work: on shard k (its bytes added to k's memory, one more
 * item on k) or unplaced (its id among the plan's infeasible) */
void as_plan_put(as_plan_ctx *x, int64_t i, int64_t k);
void as_plan_unplaced(as_plan_ctx *x, int64_t i);
/* the sort key of item f under c's planner: rep is its model representation (used when the
 * planner's key is the model's cost) */
double as_plan_item_key(const as_plan_cfg *c, const as_features *f, const float *rep);
/* The items of a task as the cost model sees them, for the planners that fill shards item
 * by item and ask what a shard would cost with one more (cost-greedy, the policy's
 * rollouts, the refinement): each item's representation rep[n x R] and the vector
 * w[n x W] that a shard's running sum adds up: pre(rep) when the model's head is split
 * (split, W = hid), else rep itself (W = R). as_plan_items_cost is the predicted cost of
 * a shard from such a sum. The arrays come from arena A (NULL: malloc'd, freed by
 * as_plan_items_free); rep, when given, is the items' representations computed already
 * (kept, not copied). */
typedef struct {
    const as_plan_model *m;
    int R, W, split;
    int64_t n;
    const float *rep;
    const float *w;
    float *own_rep, *own_w;         /* what as_plan_items_free frees */
} as_plan_items;
void as_plan_items_init(as_plan_items *it, const as_plan_model *m, const as_features *const *t, int64_t n,
                        const float *rep, as_arena *A);
/* the predicted cost of a shard whose items' vectors sum to v[W]: post(v) or head(v) */
double as_plan_items_cost(const as_plan_items *it, const float *v);
void as_plan_items_free(as_plan_items *it);   /* NULL: nothing */

/* the make of the planners whose placement comes through c->policy (autoshard, torchrec):
 * the placement checked (shards in range, caps kept, data-parallel entries whole tables) */
int as_plan_make_placed(as_plan_ctx *x, char *err, size_t errlen);

/* the memory a table (or piece) takes on its shard: TorchRec's model (weights, optimizer
 * state, pipeline buffers; trmem.h) when its features carry it (a model config's tables),
 * else its fp16 weight bytes (rows * dim * 2 unless the features carry them) */
uint64_t as_plan_table_bytes(const as_features *f);
/* the memory a data-parallel table takes on each of K shards: its weights and optimizer
 * state whole, its pipeline buffers for the shard's 1/K of the batch (TorchRec's
 * _calculate_dp_shard_io_sizes: the rank's own batch, where a table-wise shard's count the
 * world's); without TorchRec's terms, its fp16 weight bytes */
uint64_t as_plan_dp_bytes(const as_features *f, int64_t K);
/* the bytes each of K shards sends in the ring all-reduce of data-parallel table f's
 * gradient: as_plan_dp_allreduce_bytes of its rows x dim in its data type (fp16 when it has
 * none) */
double as_plan_dp_comm_bytes(const as_features *f, int64_t K);
/* 1 when b more bytes fit on a shard holding used bytes under cap (0 = no cap) */
int as_plan_fits(uint64_t cap, uint64_t used, uint64_t b);
/* order[0..n) = the table indices sorted by key descending, then bytes descending, then
 * table id descending (the greedy planners' order) */
void as_plan_order(int64_t *order, const double *key, const uint64_t *bytes, const as_features *const *t, int64_t n);

/* The cost key of a table for a greedy heuristic (the planner's key; without one: 0). */
double as_plan_key(as_alg a, const as_features *f);

/* The predicted cost on each of K shards of the data-parallel entries (assign AS_DP) of a
 * plan of n items with the model's representations rep[n x m->rep]: the model's cost of
 * them together, full batch, over K (each shard looks up 1/K of the batch; the kernel's
 * fixed cost is not divided, so this is a little low where it matters). 0 when none. */
double as_plan_dp_pred(const as_plan_model *m, const int64_t *assign, const float *rep, int64_t n, int64_t K);

/* Plan tables t[0..n) onto c->shards shards. Returns 0 (an infeasible plan is still 0: check
 * p->feasible), or -1 with err (cost-greedy without a model, K < 1, a bad model width).
 * Free with as_plan_free. */
int as_plan_make(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n,
                 char *err, size_t errlen);
void as_plan_free(as_plan *p);   /* NULL: nothing */

/* the bytes each shard sends in the ring all-reduce of a data-parallel table's gradient,
 * rows x dim elements of elt bytes over K shards: 2 (K - 1) / K x rows x dim x elt (0 for
 * K = 1) */
double as_plan_dp_allreduce_bytes(int64_t rows, int64_t dim, double elt, int64_t K);

#endif
