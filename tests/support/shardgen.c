/* shardgen.c - test support: PRNG and synthetic-shard scaffolding; see shardgen.h. */
#include "shardgen.h"
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tsup_unif(uint64_t *s) { return (double)(as_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

uint64_t tsup_below(uint64_t *s, uint64_t n) { return n ? as_splitmix64(s) % n : 0; }

void tsup_fill_unit(float *v, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) v[i] = (float)(2.0 * tsup_unif(s) - 1.0);
}

void tsup_zipf_init(tsup_zipf *z, int64_t E, double alpha)
{
    z->E = E;
    z->c1 = pow((double)E, 1.0 - alpha) - 1.0;
    z->ia = 1.0 / (1.0 - alpha);
}

int64_t tsup_zipf_row(const tsup_zipf *z, double u)
{
    double x = pow(z->c1 * u + 1.0, z->ia);
    int64_t rank = (int64_t)x - 1;
    if (rank < 0) rank = 0;
    if (rank >= z->E) rank = z->E - 1;
    return (int64_t)(((uint64_t)rank * 2654435761ULL) % (uint64_t)z->E);
}

int tsup_shard_layout(tsup_shard *x, int T, int64_t B, const int64_t *rows, int64_t E, const int32_t *dims,
                      int64_t w_pad)
{
    memset(x, 0, sizeof *x);
    x->rows = calloc((size_t)T + 1, sizeof *x->rows);
    x->dims = calloc((size_t)T + 1, sizeof *x->dims);
    x->w_off = calloc((size_t)T + 1, sizeof *x->w_off);
    x->d_off = calloc((size_t)T + 1, sizeof *x->d_off);
    x->offsets = calloc((size_t)T * (size_t)B + 1, sizeof *x->offsets);
    if (!x->rows || !x->dims || !x->w_off || !x->d_off || !x->offsets) return -1;
    for (int t = 0; t < T; t++) {
        x->rows[t] = rows ? rows[t] : E;
        x->dims[t] = dims[t];
        x->w_off[t + 1] = x->w_off[t] + x->rows[t] * dims[t] + w_pad;
        x->d_off[t + 1] = x->d_off[t] + dims[t];
    }
    x->nW = x->w_off[T];
    x->sumD = x->d_off[T];
    return 0;
}

int tsup_shard_data(tsup_shard *x, int T, int64_t B)
{
    x->nidx = x->offsets[(int64_t)T * B];
    x->indices = malloc(sizeof *x->indices * (size_t)(x->nidx + 1));
    x->W = malloc(sizeof *x->W * (size_t)(x->nW + 1));
    x->grad = malloc(sizeof *x->grad * (size_t)(B * x->sumD + 1));
    if (!x->indices || !x->W || !x->grad) return -1;
    x->s = (as_eb_shard){ .T = T, .B = B, .rows = x->rows, .dims = x->dims, .w_off = x->w_off,
                          .d_off = x->d_off, .offsets = x->offsets, .indices = x->indices };
    return 0;
}

void tsup_shard_free(tsup_shard *x)
{
    free(x->rows); free(x->dims); free(x->w_off); free(x->d_off);
    free(x->offsets); free(x->indices); free(x->W); free(x->grad);
    memset(x, 0, sizeof *x);
}
