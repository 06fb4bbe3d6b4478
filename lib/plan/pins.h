/* pins.h - the items of a plan that have one rank: the blocks of TorchRec's row_wise. Dimension
 * letters: T items of a plan, K shards (ranks).
 *
 * TorchRec trains a row-wise table only as K blocks of ceil(E / K) rows, block i on rank i
 * (sharding_plan.py row_wise(); lib/plan/plantorchrec.h): a planner may choose to shard a table
 * so, not where its blocks go. A table's items are TorchRec's row_wise when they are all its
 * columns and exactly the row blocks as_piece_row_blocks(E, D, K) makes (E the rows they
 * cover, fewer than K blocks when the last ones would be empty): each is then pinned to the
 * rank of its block. Every planner (as_plan_make), the refinement and the policy's rollouts
 * keep pinned items on their rank, so every plan they make with such a split is one
 * construct_module_sharding_plan loads. Row blocks cut any other way (as-plan --split-rows
 * with block counts other than K) are not pinned: placed freely, not loadable.
 *
 * TorchRec's table_row_wise (sharding_plan.py table_row_wise(host_index)) trains a table as L
 * blocks of ceil(E / L) rows on the L ranks of one host h, block i on rank h L + i, for
 * hosts of L ranks (K a multiple of L, K > L). With L given (as_plan_pins_hosts), a table's
 * items that are exactly its L row blocks are pinned so (a table of at most L rows, whose L
 * and K blocks are the same, too), each table to
 * a host of its own choosing: the tables by their work (the sum of work[] over their items:
 * as_plan_make's, each item's predicted kernel and communication; without it the bytes they
 * move, ids in, outputs and gradients out, comm.h as_comm_bytes), the most first (ties: the
 * lower id), each onto the host of the least work so far (ties: the lowest host). Which
 * items are table-row-wise is a function of the items alone; their hosts, of the work too. The
 * choice is a function of the items alone, so every planner, the refinement and the export
 * see the same hosts. */
#ifndef AS_PINS_H
#define AS_PINS_H

#include <stdint.h>

#include "featurize.h"

/* pin[0..n) = the rank each item t[0..n) must sit on in a plan of K ranks, -1 for an item
 * the planner places. Returns how many are pinned (0: pin is all -1). */
int64_t as_plan_pins(const as_features *const *t, int64_t n, int64_t K, int64_t *pin);
/* the same with hosts of L ranks (L < 2, or K not a multiple of L above L: as as_plan_pins);
 * work (NULL: bytes) [n] each item's work; twrw (NULL: not wanted) [n] gets 1 for a
 * table-row-wise item, else 0 */
int64_t as_plan_pins_hosts(const as_features *const *t, int64_t n, int64_t K, int64_t L, const double *work, int64_t *pin,
                           unsigned char *twrw);

#endif
