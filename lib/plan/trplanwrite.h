/* trplanwrite.h - a plan written as TorchRec's ShardingPlan serialises (as-plan --format
 * torchrec), for pipelines/torchrec_plan.py to load into TorchRec; its reverse, TorchRec
 * plans imported, is trplanread.h. */
#ifndef AS_TRPLANWRITE_H
#define AS_TRPLANWRITE_H

#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "planrec.h"

typedef struct {
    const char *module;             /* the collection's path in the model ("": the model) */
    int64_t local_size;             /* GPUs per host: placement cuda:{r % local_size} */
} as_torchrec_opts;

/* One line of JSON holding the plan in the shape TorchRec's ShardingPlan serialises to:
 * {"task","alg","world_size","local_size","module","plan":{module:{"t<id>":{"sharding_type":
 * "table_wise","compute_kernel":"fused","ranks":[r],"shards":[{"shard_offsets":[0,0],
 * "shard_sizes":[rows,dim],"placement":"rank:r/cuda:r%L"}]}}}}, rank r = shard k of the
 * sharding group (world_size K); with m->world, "dmp_collection" adds the global world size
 * and every shard's ranks across the W/K replicas. A split table (items t[] that are pieces
 * of it, as --split-tables makes) is one key with a shard per piece, ordered by (r0, c0):
 * "ranks" the pieces' ranks, "shard_offsets" [r0, c0], "shard_sizes" [r1 - r0, c1 - c0],
 * and "sharding_type" "column_wise" (every piece all rows), "row_wise" (every piece all
 * columns) or "grid_shard". A plan with unplaced tables cannot be
 * written: returns -1 (nothing printed), else 0. */
int as_plan_print_torchrec(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t,
                           const as_torchrec_opts *o);

#endif
