/* trmem.c - TorchRec's memory model of a shard; see trmem.h.
 * Dimension letters: B batch (per rank), L pooling, D dim, E rows, W world size. */
#include "trmem.h"

#include <math.h>
#include <string.h>

int as_trmem_pipeline(const char *pipeline, double *in_factor, double *out_factor)
{
    if (!strcmp(pipeline, "train_sparse_dist")) { *in_factor = 2; *out_factor = 0; return 0; }
    if (!strcmp(pipeline, "train_prefetch_sparse_dist")) { *in_factor = 3; *out_factor = 0; return 0; }
    if (!strcmp(pipeline, "none") || !strcmp(pipeline, "train_base")) { *in_factor = 1; *out_factor = 1; return 0; }
    return -1;
}

double as_trmem_opt_mult(const char *optimizer, int64_t dim)
{
    if (!strcmp(optimizer, "sgd") || !strcmp(optimizer, "exact_sgd")) return 0;
    if (!strcmp(optimizer, "adam")) return 2;
    if (!strcmp(optimizer, "rowwise_adagrad") || !strcmp(optimizer, "exact_rowwise_adagrad"))
        return dim > 0 ? 1.0 / (double)dim : -1;
    if (!strcmp(optimizer, "partial_rowwise_adam") || !strcmp(optimizer, "adagrad") || !strcmp(optimizer, "exact_adagrad"))
        return 1;
    return -1;
}

int as_trmem_shard(as_trmem *m, int64_t rows, int64_t cols, int64_t dim, double elem, const char *optimizer,
                   const char *pipeline, double pooling, int64_t batch, int64_t world, int row_wise)
{
    memset(m, 0, sizeof *m);
    const double mult = as_trmem_opt_mult(optimizer, dim);
    if (mult < 0 || as_trmem_pipeline(pipeline, &m->in_factor, &m->out_factor)) return -1;
    m->weights = ceil((double)rows * (double)cols * elem);
    m->optimizer = ceil(m->weights * mult);
    const double ids = pooling * (double)batch;
    m->input = ceil((row_wise ? ids : ids * (double)world) * 8.0);
    m->output = ceil((pooling < 1 ? pooling : 1.0) * (double)batch * (double)world * (double)cols * elem);
    return 0;
}

uint64_t as_trmem_total(const as_trmem *m)
{
    return (uint64_t)(m->weights + m->optimizer + ceil(m->in_factor * m->input) + ceil(m->out_factor * m->output));
}

void as_trmem_cols(as_trmem *out, const as_trmem *m, int64_t c0, int64_t c1, int64_t cols)
{
    *out = *m;
    if (cols <= 0 || c1 - c0 == cols) return;
    const double f = (double)(c1 - c0) / (double)cols;
    out->weights = ceil(m->weights * f);
    out->optimizer = ceil(m->optimizer * f);
    out->output = ceil(m->output * f);
}

uint64_t as_trmem_dense(int64_t params, double elem)
{
    return params > 0 ? (uint64_t)llround(AS_TRMEM_DENSE_MULT * (double)params * elem) : 0;
}

uint64_t as_trmem_cap(uint64_t hbm, double ids_per_rank, uint64_t dense)
{
    const double usable = floor((1.0 - AS_TRMEM_RESERVE) * (double)hbm);
    const double kjt = ceil(ids_per_rank * 8.0) * AS_TRMEM_KJT_COPIES;
    return usable > kjt + (double)dense ? (uint64_t)(usable - kjt - (double)dense) : 0;
}

double as_trmem_io(const as_trmem *m)
{
    return (double)as_trmem_total(m) - m->weights - m->optimizer;
}
