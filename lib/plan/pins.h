/* pins.h - the items of a plan that have one rank: the blocks of TorchRec's row_wise. Dimension
 * letters: T items of a plan, K shards (ranks).
 *
 * TorchRec trains a row-wise table only as K blocks of ceil(E / K) rows, block i on rank i
 * (sharding_plan.py row_wise(); lib/plan/torchrec.h): a planner may choose to shard a table
 * so, not where its blocks go. A table's items are TorchRec's row_wise when they are all its
 * columns and exactly the row blocks as_piece_row_blocks(E, D, K) makes (E the rows they
 * cover, fewer than K blocks when the last ones would be empty): each is then pinned to the
 * rank of its block. Every planner (as_plan_make), the refinement and the policy's rollouts
 * keep pinned items on their rank, so every plan they make with such a split is one
 * construct_module_sharding_plan loads. Row blocks cut any other way (as-plan --split-rows
 * with block counts other than K) are not pinned: placed freely, not loadable. */
#ifndef AS_PINS_H
#define AS_PINS_H

#include <stdint.h>

#include "featurize.h"

/* pin[0..n) = the rank each item t[0..n) must sit on in a plan of K ranks, -1 for an item
 * the planner places. Returns how many are pinned (0: pin is all -1). */
int64_t as_plan_pins(const as_features *const *t, int64_t n, int64_t K, int64_t *pin);

#endif
