/* fixtures.c - test support: hand-made records; see fixtures.h. */
#include "fixtures.h"

#include <string.h>

as_array tsup_array(const void *v, int64_t n, as_dtype dt)
{
    as_array a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.ndim = 1;
    a.shape[0] = n;
    a.n = n;
    a.data = v;
    a.nbytes = (size_t)n * as_dtype_size(dt);
    return a;
}

as_features tsup_features(int64_t id, int64_t dim, int64_t rows, double pooling, int64_t batch, int64_t lookups)
{
    as_features f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.dim = dim;
    f.rows = rows;
    f.pooling = pooling;
    f.batch = batch;
    f.lookups = lookups;
    f.bytes_fp16 = rows * dim * 2;
    f.bytes_fp32 = rows * dim * 4;
    f.size_gib = (double)f.bytes_fp16 / (1 << 30);
    return f;
}

as_features tsup_random_features(as_rng *r, int64_t id)
{
    const double pooling = 30 * as_rng_uniform(r);
    const int64_t rows = 1 + (int64_t)as_rng_below(r, 2000000);
    const int64_t dim = 16 << as_rng_below(r, 3);
    as_features f = tsup_features(id, dim, rows, pooling, 0, 0);
    double left = 1;
    for (int k = 0; k < AS_NBINS; k++) { f.bins[k] = left * as_rng_uniform(r) * 0.5; left -= f.bins[k]; }
    return f;
}
