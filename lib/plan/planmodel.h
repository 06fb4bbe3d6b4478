/* planmodel.h - the cost model as the planners see it: an as_costmodel (costmodel.h)
 * behind plan.h's as_plan_model (a per-table representation summed over a shard, the head
 * that maps the sum to a cost, and the head split for incremental use), for the planners of
 * as-plan, the policy's training (as-rl) and the tests. */
#ifndef AS_PLANMODEL_H
#define AS_PLANMODEL_H

#include "costmodel.h"
#include "plan.h"

/* pm over cm (ctx = cm, which must outlive pm): embed, head, and the split head (pre, post)
 * when the model has one (h3 > 0) */
void as_plan_model_of(as_plan_model *pm, const as_costmodel *cm);

/* pm over memo's model with its representations memoised (costmodel.h as_embed_memo: the same
 * numbers, each distinct table or piece embedded once; the model fixed) */
void as_plan_model_memo(as_plan_model *pm, as_embed_memo *memo);

#endif
