/* planreport.h - a plan as text (as-plan --format text): per shard its tables, memory, key
 * sum and predicted cost. TorchRec's ShardingPlan is trplanwrite.h's. */
#ifndef AS_PLANREPORT_H
#define AS_PLANREPORT_H

#include <stdio.h>

#include "plan.h"
#include "planrec.h"

/* A readable per-shard summary (like TorchRec's planner statistics): for every shard its
 * tables, weight memory (and share of the cap), key sum and predicted cost; then the
 * predicted max / min / mean and balance when a model was given. t: the task's features, in
 * task order. */
void as_plan_print_text(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t);

#endif
