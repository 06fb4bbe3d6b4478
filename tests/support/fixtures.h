/* fixtures.h - test support: the hand-made records that the unit tests build, one builder
 * each, so a test file keeps only its own constants.
 */
#ifndef AS_TESTS_FIXTURES_H
#define AS_TESTS_FIXTURES_H

#include <stdint.h>

#include "common.h"
#include "featurize.h"
#include "msgobj.h"
#include "planrun.h"
#include "stream.h"

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

/* as-plan's input of a hand-made task: the features f[0..n) and task 5 of their ids (in
 * order) on K shards, no cap, written to path and read back into in (as_plan_input_read);
 * 0, or -1 with err */
int tsup_plan_input(as_plan_input *in, const char *path, const as_features *f, int n, int64_t K, char *err,
                    size_t errlen);

/* a hand-made cost model: an item's representation is [dim x pooling], a shard's cost their
 * sum */
extern const as_plan_model tsup_toy_model;

/* a hand-made `cost` record for the readers' tests: its tables ids[0..n) and their pieces
 * (NULL: none written), cost_ms (NAN: nil), rel_std, error, device; each written only when
 * its has_ flag is set (error NULL then: nil) */
typedef struct {
    const int64_t *ids;
    const as_piece *pieces;
    int n;
    int has_cost, has_rel_std, has_error, has_device;
    double cost, rel_std;
    const char *error, *device;
} tsup_cost;
void tsup_put_cost(as_writer *w, const tsup_cost *c);

/* a hand-made `plan` record of two shards for as-eval's tests: tables 7 and 8 on shards 0
 * and 1 of task `task`, labelled alg; seed when >= 0, split when not NULL; with cost_kind
 * (not NULL) the first ncost of the costs c0, c1 as cost_ms and cost_kind; cost_device when
 * device is not NULL or "" */
typedef struct {
    int64_t task;
    const char *alg;
    int64_t seed;
    const char *split, *cost_kind;
    double c0, c1;
    int ncost;
    const char *device;
} tsup_plan2;
void tsup_put_plan2(as_writer *w, const tsup_plan2 *p);

#endif
