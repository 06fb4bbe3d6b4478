/* objective.h - the one objective of our planners: each shard's predicted cost as a breakdown,
 * the plan rated by its slowest shard. Cost-greedy (with communication charged), the split
 * search, the refinement, --replicate and as-eval's charge (lib/records/comm.h,
 * as_comm_plan_shard_ms) share this definition. Dimension letters: T items of a plan (tables
 * and pieces), K shards, W the width of a shard's summed vector (plan.h as_plan_items), R the
 * model's representation width.
 *
 * Shard k's cost, ms (as_obj_cost):
 *   kernel  the cost model of the sum of its own items' vectors (0 when it holds none),
 *           times scale[k] when given (as-plan --repair: measured over predicted)
 *   dp      the data-parallel items' kernel on every shard: the model's cost of their
 *           representations' sum, full batch, over K (as_plan_dp_pred)
 *   comm    as_comm_plan_shard_ms of its load (comm.h as_comm_load): its items' ids and
 *           outputs of each sharding type (table-, column-, row-wise: as_comm_bytes,
 *           as_comm_types), every shard's, and the bytes it sends in the data-parallel
 *           items' all-reduce (as_plan_dp_comm_bytes), over the model charged (any of
 *           comm.h's: each sharding type the plan has costs every shard its collectives'
 *           calls); 0 when none
 * The plan's cost: the largest shard cost, the slowest shard (ties: the lowest k).
 *
 * The state holds each shard's vector sum (double), its bytes by sharding type, and the
 * plan's totals: putting or taking an item costs O(W) (O(R) data parallel); a shard's cost
 * O(W) plus one model evaluation, the kernel then kept until a put or take changes the shard
 * (so as_obj_max after an item moved evaluates the model on the shards it touched only). A shard's communication splits into its own part (its
 * items' bytes: as_obj_own_ms of each, linear) and a part every shard pays alike
 * (as_obj_shared_ms: the share of everyone's bytes, the alphas, the all-reduce), which moving
 * an item between shards does not change: a local search can weigh a move by the two shards'
 * kernels and own parts.
 */
#ifndef AS_OBJECTIVE_H
#define AS_OBJECTIVE_H

#include <stdint.h>

#include "comm.h"
#include "plan.h"

typedef struct {
    double kernel, dp;
    double comm[AS_NSH];            /* each sharding type's time, its alphas included */
    double total;                   /* kernel + dp + the comm parts */
} as_obj_cost;

typedef struct {
    as_plan_items it;               /* the items' vectors (plan.h) */
    int64_t n, K;
    int64_t local;                  /* the model's GPUs a host (comm.h as_comm_local), 0: none */
    int W, R;
    as_comm_model cm;               /* the model charged (as_comm_on: 0 when none) */
    as_shtype *type;                /* [T] each item's sharding type (as_comm_types) */
    double *bin, *bout;             /* [T] its ids in and outputs out (as_comm_bytes) */
    double *arb;                    /* [T] what each shard sends in its all-reduce when data parallel */
    double *own_ms;                 /* [T] its bytes' time on its owner (as_comm_item_ms) */
    int64_t *where;                 /* [T] its shard, AS_DP, or -1 (not in the plan) */
    double *S;                      /* [K x W] each shard's sum of its items' vectors */
    int64_t *cnt;                   /* [K] items on each shard */
    double *own_in, *own_out;       /* [K x AS_NSH] each shard's ids and outputs by sharding type */
    double all_in[AS_NSH], all_out[AS_NSH];   /* their sums over the shards */
    int64_t ntype[AS_NSH];          /* items of each type placed (the alphas' presence) */
    double ar;                      /* all-reduce bytes each shard sends */
    double *D;                      /* [R] the data-parallel items' representations' sum */
    int64_t ndp;
    const double *scale;            /* [K] or NULL */
    double *kcache;                 /* [K] each shard's kernel (scaled) as last computed ... */
    unsigned char *kfresh;          /* [K] ... still valid (no put or take on it since) */
    float *tmp;                     /* [max(W, R)] */
} as_objective;

/* The objective of c's plans over items t[0..n): c->model (NULL: the kernels come from
 * elsewhere, as_obj_max's kern, and the data-parallel kernel counts 0), c->shards, c->shard_scale,
 * the communication c->comm_model when it charges collectives, else the bandwidth c->comm_gbps (0:
 * none). Every item starts out of the plan. Free with as_obj_free. */
void as_obj_init(as_objective *o, const as_plan_cfg *c, const as_features *const *t, int64_t n);
void as_obj_free(as_objective *o);
/* item i (out of the plan) onto shard k in 0..K-1, or AS_DP (on every shard) */
void as_obj_put(as_objective *o, int64_t i, int64_t k);
/* item i out of the plan again */
void as_obj_take(as_objective *o, int64_t i);
/* every item placed as assign[0..n) says (shard, AS_DP, or -1: left out) */
void as_obj_load(as_objective *o, const int64_t *assign);

/* shard k's cost; c (NULL: not wanted) gets the breakdown */
double as_obj_shard(const as_objective *o, int64_t k, as_obj_cost *c);
/* shard k's communication (each type's part into parts, NULL: not wanted) */
double as_obj_comm(const as_objective *o, int64_t k, double parts[AS_NSH]);
/* the slowest shard's cost, its shard into *arg (NULL: not wanted); 0 with *arg 0 for K = 0.
 * kern[K] (NULL: the objective's own) gives each shard's kernel and data-parallel part
 * instead: a plan's pred (as_plan_make), kern[k] + as_obj_comm(k) */
double as_obj_max(const as_objective *o, const double *kern, int64_t *arg);

/* What a local search weighs: shard k's kernel (scaled) with item add joined and item sub
 * gone (-1: none; the result for a shard that would then hold no item is 0), ... */
double as_obj_kernel_with(const as_objective *o, int64_t k, int64_t add, int64_t sub);
/* ... the kernel (scaled) of shard k whose vector sum is v[W] */
double as_obj_kernel_vec(const as_objective *o, int64_t k, const float *v);
/* ... item i's own communication (the time its bytes take on its owner) ... */
double as_obj_own_ms(const as_objective *o, int64_t i);
/* ... the communication every shard pays alike (its share of everyone's bytes, the alphas,
 * the all-reduce) ... */
double as_obj_shared_ms(const as_objective *o);
/* ... and the data-parallel items' kernel on every shard. Shard k's cost is at most
 * as_obj_kernel_with(k, -1, -1) + the own_ms of its items + as_obj_shared_ms + as_obj_dp_ms
 * (equal, up to rounding, under the bandwidth and TorchRec's models). */
double as_obj_dp_ms(const as_objective *o);

#endif
