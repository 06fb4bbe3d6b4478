/* refine.h - local search on the cost model after any planning algorithm (as-plan --refine).
 * Dimension letters: T items of a plan, K shards, W the width of a shard's summed vector
 * (the model's hid with the split head, else its rep).
 *
 * Items: t[0..T) are what the plan places, each with its own features; nothing here looks at
 * table ids except to keep p->infeasible, so items may be pieces of one table (ids repeat).
 *
 * Objective: the one objective (lib/plan/objective.h), the predicted cost of the slowest
 * shard (max over shards of head(sum of its items' embeddings), 0 for an empty shard, plus
 * with communication charged (c->comm_gbps > 0 or a model of each collective, c->comm_model) its items' own
 * communication, as_obj_own_ms each, and the part every shard pays alike, as_obj_shared_ms:
 * the share of everyone's bytes, the alphas, the all-reduce; moves and swaps leave that part
 * as it is, placing an unplaced item updates it), then the sum of squares of the shard costs,
 * so that a step can make progress when several shards tie at the max. With c->shard_scale,
 * shard k's predicted kernel cost is multiplied by shard_scale[k] throughout (as-plan
 * --repair: each shard's measured over predicted cost, so the search starts from the
 * measured costs and judges a step by the model's change, scaled). A step improves when
 * it lowers the max by more than one part in a million, or leaves the max no higher and
 * lowers the sum of squares by more than one part in a million (the max never rises, so the
 * search ends).
 *
 * Pinned items (TorchRec's row_wise blocks, lib/plan/pins.h) never move: a step moves or
 * swaps only the others, and an unplaced block may only go to its rank.
 *
 * Steps, all involving the slowest shard a (the lowest id among ties):
 *   move  an item of a to another shard b;
 *   swap  an item of a with an item of another shard b.
 * Only steps that keep both shards within the memory cap (as_plan_fits; 0 = none) count.
 * Every move is tried first; the best improving one is taken (lowest new max, then lowest
 * sum of squares; ties: the first in the order items of a in plan order, shards b
 * ascending, items of b in plan order). Swaps are tried only when no move improves, and the
 * best improving swap is taken the same way. The search stops at a local optimum (no
 * improving move or swap), after budget_steps steps, or when budget_ms of wall clock is
 * spent (checked between candidates, so a step in progress is dropped, never half done).
 * Without randomness the result depends only on the plan, the items, the model and the
 * budgets; a time budget that cuts the search makes it depend on the machine's speed too.
 *
 * Unplaced items (assign -1): after every step, each (in the order of p->infeasible) that
 * now fits somewhere is placed where the predicted cost of the resulting shard is lowest
 * (ties: smaller bytes, then lower shard), as cost-greedy would; this may raise the max,
 * a feasible plan being worth more than a balanced one.
 *
 * With the split head (model->hid > 0, pre and post set) a shard's vector is the sum of its
 * items' pre(embed) and a candidate costs one post; otherwise it is the sum of embeddings and
 * a candidate costs one head. Shard sums are kept in double precision.
 *
 * Afterwards p->assign, mem, count, key, pred, feasible, ninfeasible, infeasible and refine
 * describe the refined plan, and plan_ms includes the search. pred is recomputed as
 * as_plan_make computes it (head of the float sum of embeddings in plan order); should that
 * make the max higher than the input's (rounding, when the steps' gains were tiny), the
 * input plan is kept unchanged (refine.done = 1 with no steps counted). key keeps its
 * algorithm's meaning: the running sum of the items' keys (as_plan_key, or cost-greedy's
 * predicted single-item cost, or 0 for random and autoshard) over each shard's items.
 */
#ifndef AS_REFINE_H
#define AS_REFINE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define AS_REFINE_DEFAULT_MS 100.0     /* as-plan --refine-ms default */
#define AS_REFINE_MAX_MS 3600000.0     /* --refine-ms: at most an hour */
#define AS_REFINE_MAX_STEPS 1000000000 /* --refine-steps */

/* Refine p (made by as_plan_make with c on t[0..n)) in place. c->model is needed; c->shards,
 * c->mem_cap and c->alg (for key) are those p was made with. budget_ms: wall clock, 0 =
 * none; budget_steps: improving steps, 0 = none. Returns 0, or -1 with err (no model, a bad
 * model width, a plan of other dimensions than c and n). */
int as_plan_refine(as_plan *p, const as_plan_cfg *c, const as_features *const *t, int64_t n, double budget_ms,
                   int64_t budget_steps, char *err, size_t errlen);

#endif
