/* replicate.h - our planners' data-parallel tables (as-plan --replicate): after a plan is
 * made, whole tables are made data parallel (AS_DP, plan.h: the table on every shard, each
 * looking up its 1/K of the batch, its gradient all-reduced) one at a time while that lowers
 * the predicted slowest shard. HET-GMP's replication of hot embeddings (seed 004) at table
 * granularity; TorchRec's data_parallel. Dimension letters: T items of a plan, K shards,
 * R the cost model's representation width.
 *
 * Objective (what the step must lower, by more than one part in a million): the one objective
 * (lib/plan/objective.h), the predicted slowest shard, max over k of
 *   kernel_k  head(sum of the embeddings of shard k's own items) (0 for an empty shard)
 *   + dp      head(sum of the embeddings of the data-parallel items) / K (as_plan_dp_pred)
 *   + comm_k  at gbps: (own_k + all / K + ar) / gbps, own_k the bytes of shard k's items
 *             (as_comm_bytes: ids in, pooled outputs and their gradients), all their sum
 *             over the shards (every shard's side of the all-to-all, as as-eval charges it),
 *             ar the all-reduce bytes each shard sends for the data-parallel items
 *             (as_plan_dp_comm_bytes); 0 when gbps <= 0. With c->comm_model a model of each collective
 *             (lib/records/comm.h) instead: each sharding type's bytes over its collective's bus
 *             bandwidth and the alphas of the types the plan has, so that the first
 *             data-parallel table pays the all-reduce's alpha on every shard and the last
 *             table-wise one takes the all-to-alls' with it.
 * Step: of the placed items that are whole tables, the one whose replication gives the
 * lowest objective (ties: the first in plan order), taken when it lowers the objective and
 * every shard keeps within the cap (the table's as_plan_dp_bytes on every shard, its own
 * bytes off its shard). Repeated until no item lowers it. A large table is not chosen where
 * its all-reduce costs more than its kernel and all-to-all save; a tiny hot one is.
 *
 * Afterwards p->assign (AS_DP for the replicated), ndp, count, mem, key (the shard loses the
 * item's key: its predicted single cost for cost-greedy, as_plan_key otherwise) and pred (as
 * as_plan_make computes it: the own items' head plus the data-parallel part) describe the
 * plan; p->replicated = 1 (its label gains "+dp"), plan_ms includes the search; with an
 * c->comm_model of each collective, p->comm_model names it (its record's comm_model) and p->comm_gbps
 * is 0. Deterministic.
 */
#ifndef AS_REPLICATE_H
#define AS_REPLICATE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* Replicate items of plan p (made by c->alg over items t[0..n), c->model needed) as above,
 * communication charged at gbps (<= 0: none). *made gets the tables replicated. 0, or -1
 * with err (no model, n not the plan's). */
int as_plan_replicate(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, double gbps,
                      int64_t *made, char *err, size_t errlen);

#endif
