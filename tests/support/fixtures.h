/* fixtures.h - test support: the hand-made records that the unit tests build, one builder
 * each, so a test file keeps only its own constants.
 */
#ifndef AS_TESTS_FIXTURES_H
#define AS_TESTS_FIXTURES_H

#include <stdint.h>

#include "common.h"
#include "featurize.h"
#include "msgobj.h"

/* a 1-D array over v[0..n) of dtype dt (AS_DT_I32, AS_DT_I64, ...): n elements of
 * as_dtype_size(dt) bytes; v is not copied */
as_array tsup_array(const void *v, int64_t n, as_dtype dt);

/* a table's features: id, dim, rows, pooling, batch and lookups as given, its weight bytes
 * (fp16, fp32) and size_gib derived from rows x dim; every other field 0 (no bins, source,
 * name, piece or TorchRec memory) */
as_features tsup_features(int64_t id, int64_t dim, int64_t rows, double pooling, int64_t batch, int64_t lookups);

/* a random table from r: pooling in [0, 30), 1..2e6 rows and dim 16, 32 or 64, drawn in
 * that order (the order in which GCC drew them when they were one call's arguments, so the
 * tests' random tasks stay what they were), no batch, then the bins, each a random part
 * of at most half what the bins before it left */
as_features tsup_random_features(as_rng *r, int64_t id);

#endif
