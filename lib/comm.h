/* comm.h - the bytes an item of a plan (a table or a piece of one, by its features) moves
 * between GPUs per iteration, and the time they take: the owner's side of the all-to-all
 * that every plan's shard pays (split.h charges it in the split search, refine.h in the
 * local search, plan records carry it per shard, as-eval charges it). */
#ifndef AS_COMM_H
#define AS_COMM_H

#include "featurize.h"

#define AS_COMM_GBPS 600.0   /* one host of NVLink GPUs, TorchRec's planner's intra-node figure */

/* item f's bytes: *in its ids (lookups x 8), *out its pooled outputs and their gradients
 * (2 x batch x dim x 4; a row piece's are full-width partial sums) */
void as_comm_bytes(const as_features *f, double *in, double *out);
/* the milliseconds item f's bytes (in + out) take at gbps GiB/s (0 when gbps <= 0) */
double as_comm_ms(const as_features *f, double gbps);

#endif
