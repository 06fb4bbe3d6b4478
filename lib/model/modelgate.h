/* modelgate.h - the quality gate on the cost model: its held-out R² (the `model` record's
 * `heldout`, written by as-costfit) judged against a threshold and against the linear
 * baseline's R² on the same test shards, the words as-plan says when it plans with a weak or
 * unchecked model, and the `model_quality` field of the plans made with it (docs/FORMAT.md
 * "plan"): packed by as-plan, read back (hostile values refused) by as-eval.
 *
 * A model is weak when its held-out R² is below the threshold (AS_MGATE_MIN_R2 unless
 * as-plan --min-model-r2 says otherwise) or below the linear baseline's R² (a straight line
 * on sum dim x pooling predicts the held-out shards better). Its quality is unknown when it
 * carries no held-out R² (trained without a test split, trained further by as-rl, or an
 * undefined R²); then nothing is judged. With the gate off (threshold NaN) nothing is judged
 * either.
 */
#ifndef AS_MODELGATE_H
#define AS_MODELGATE_H

#include <stddef.h>

#include <msgpack.h>

#include "costmodel.h"
#include "planrec.h"

/* the held-out R² below which a cost model is weak, by default (as-plan --min-model-r2):
 * the demo's models reach 0.97-0.995 (docs/RESULTS.md), one trained on a noisy set 0.77 */
#define AS_MGATE_MIN_R2 0.9

/* as_mgate, the `model_quality` field of a plan record: lib/records/planrec.h */

/* judge a model's held-out evaluation h (NULL, or not present: quality unknown) against
 * min_r2 (NaN: the gate off) into g */
void as_mgate_judge(as_mgate *g, const as_costmodel_heldout *h, double min_r2);

/* What as-plan says of the model in file (no program name, no line end), e.g. "m.ast: the
 * cost model's held-out R² is 0.410, below 0.9 (--min-model-r2): plans made with it rest on
 * a weak model". Returns 1 with buf filled for a weak model or one of unknown quality under
 * the gate; 0 (buf "") when there is nothing to say: judged and not weak, or the gate off. */
int as_mgate_words(char *buf, size_t len, const char *file, const as_mgate *g);


#endif
