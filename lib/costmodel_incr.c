/* costmodel_incr.c - incremental prediction with the cost model (declared in costmodel.h):
 * a table's representation (the shared per-table MLP) and the head on a summed
 * representation, so a planner can try a table on K shards with K small head evaluations.
 * Built only on costmodel.h's documented public parts: the parameter layout (PyTorch
 * nn.Linear, W[out, in]: w1[H1,F] b1 w2[H2,H1] b2 w3[H3,H2] b3 w4[1,H3] b4), the z-scores of
 * dim, rows, pooling, and as_costmodel_out (the output form and y_scale);
 * tests/unit/test_plan.c and test_costmodel.c check it against as_costmodel_predict. Dimension letters: F = 21 features, H1/H2/H3 hidden sizes. */
#include "costmodel.h"

#include <stdlib.h>

#define F AS_NFEATURES

/* the parameter buffer (the accessor takes a non-const model; nothing is written) */
static const float *params(const as_costmodel *m)
{
    return as_costmodel_params((as_costmodel *)m, NULL);
}

int as_costmodel_rep(const as_costmodel *m)
{
    return as_costmodel_cmeta(m)->h2;
}

void as_costmodel_embed(const as_costmodel *m, const as_features *f, float *out)
{
    const as_costmodel_info *in = as_costmodel_cmeta(m);
    int h1 = in->h1, h2 = in->h2;
    const float *w1 = params(m), *b1 = w1 + (size_t)h1 * F, *w2 = b1 + h1, *b2 = w2 + (size_t)h2 * h1;
    double v[F];
    float x[F];
    as_costmodel_table_vector(m, f, v);
    for (int k = 0; k < F; k++) x[k] = (float)v[k];
    float *a1 = malloc((size_t)h1 * sizeof *a1);
    for (int o = 0; o < h1; o++) {
        float s = b1[o];
        const float *w = w1 + (size_t)o * F;
        for (int i = 0; i < F; i++) s += w[i] * x[i];
        a1[o] = s > 0 ? s : 0;
    }
    for (int o = 0; o < h2; o++) {
        float s = b2[o];
        const float *w = w2 + (size_t)o * h1;
        for (int i = 0; i < h1; i++) s += w[i] * a1[i];
        out[o] = s > 0 ? s : 0;
    }
    free(a1);
}

double as_costmodel_head(const as_costmodel *m, const float *sum)
{
    const as_costmodel_info *in = as_costmodel_cmeta(m);
    int h1 = in->h1, h2 = in->h2, h3 = in->h3;
    const float *w3 = params(m) + (size_t)h1 * F + h1 + (size_t)h2 * h1 + h2, *b3 = w3 + (size_t)h3 * h2,
                *w4 = b3 + h3, *b4 = w4 + h3;
    float y = b4[0];
    for (int o = 0; o < h3; o++) {
        float s = b3[o];
        const float *w = w3 + (size_t)o * h2;
        for (int i = 0; i < h2; i++) s += w[i] * sum[i];
        if (s > 0) y += w4[o] * s;
    }
    return as_costmodel_out(m, (double)y);
}

void as_costmodel_head_pre(const as_costmodel *m, const float *sum, float *out)
{
    const as_costmodel_info *in = as_costmodel_cmeta(m);
    int h1 = in->h1, h2 = in->h2, h3 = in->h3;
    const float *w3 = params(m) + (size_t)h1 * F + h1 + (size_t)h2 * h1 + h2;
    for (int o = 0; o < h3; o++) {
        float s = 0;
        const float *w = w3 + (size_t)o * h2;
        for (int i = 0; i < h2; i++) s += w[i] * sum[i];
        out[o] = s;
    }
}

double as_costmodel_head_post(const as_costmodel *m, const float *z)
{
    const as_costmodel_info *in = as_costmodel_cmeta(m);
    int h1 = in->h1, h2 = in->h2, h3 = in->h3;
    const float *b3 = params(m) + (size_t)h1 * F + h1 + (size_t)h2 * h1 + h2 + (size_t)h3 * h2, *w4 = b3 + h3, *b4 = w4 + h3;
    float y = b4[0];
    for (int o = 0; o < h3; o++) {
        float s = z[o] + b3[o];
        if (s > 0) y += w4[o] * s;
    }
    return as_costmodel_out(m, (double)y);
}
