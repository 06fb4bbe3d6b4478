/* costmodel.h - the neural cost model of a shard's kernel time (the paper's architecture):
 * per table the 21 features (dim, rows, pooling z-scored with statistics of the training
 * tables; size and the 17 bins raw) -> shared MLP 21->128->32 (ReLU) -> sum over the
 * shard's tables -> MLP 32->64->1 = predicted shard cost in ms.
 * Dimension letters: T tables per shard, F = 21 features.
 *
 * A model travels as a stream (header + one `model` record, docs/FORMAT.md) holding the
 * weights (one contiguous float32 parameter buffer), the normalisation statistics, the
 * feature order, the device the costs were measured on and training metadata.
 */
#ifndef AS_COSTMODEL_H
#define AS_COSTMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "featurize.h"

typedef struct as_costmodel as_costmodel;

/* load the `model` record of a model stream file; checks kind, version, feature order and
 * sizes; 0 ok, -1 with err */
int as_costmodel_load(as_costmodel **m, const char *path, char *err, size_t errlen);
void as_costmodel_free(as_costmodel *m);

/* predicted cost (ms) of one shard made of tables f[0..n) (n may be 0: an empty shard) */
double as_costmodel_predict(const as_costmodel *m, const as_features *const *f, int n);

/* the device the model's training costs were measured on ("cpu: ...", "NVIDIA H100 ...") */
const char *as_costmodel_device(const as_costmodel *m);

/* Incremental prediction, for planners that grow shards one table at a time (as-plan's
 * cost-greedy). The first MLP acts per table and its outputs are summed, so a shard's
 * prediction is the head applied to the sum of its tables' representations:
 *   as_costmodel_predict(m, f, n) == as_costmodel_head(m, sum_i rep(f[i])) up to rounding.
 * AS_COSTMODEL_REP is the width of a table representation (the shared MLP's output). */
#define AS_COSTMODEL_REP 32
/* one table's representation: its normalised features through the shared MLP 21->128->32 */
void as_costmodel_embed(const as_costmodel *m, const as_features *f, float out[AS_COSTMODEL_REP]);
/* the head MLP 32->64->1 on a summed representation (all zeros = an empty shard): ms */
double as_costmodel_head(const as_costmodel *m, const float sum[AS_COSTMODEL_REP]);

#endif
