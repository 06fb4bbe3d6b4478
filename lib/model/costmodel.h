/* costmodel.h - the neural cost model of a shard's kernel time (the paper's architecture):
 * per table the 21 features (dim, rows, pooling z-scored with statistics of the training
 * tables; size and the 17 bins raw) -> shared MLP 21->128->32 (ReLU) -> sum over the
 * shard's tables -> MLP 32->64->1 = predicted shard cost in ms.
 * Dimension letters: T tables per shard, F = 21 features, K shards, H1/H2/H3 hidden sizes.
 *
 * A model travels as a stream (header + one `model` record, docs/FORMAT.md) holding the
 * weights (one contiguous float32 parameter buffer), the normalisation statistics, the
 * feature order, the device the costs were measured on and training metadata.
 *
 * The network's last layer gives one number z per shard; the model's output form (record
 * field `output`) turns it into a cost in ms, never negative:
 *   "softplus"  cost = y_scale * softplus(beta z) / beta, beta = AS_COSTMODEL_SOFTPLUS_BETA
 *               (20): a smooth max(0, y_scale z), linear above ~0.1 y_scale; loss: MSE of
 *               cost / y_scale (ms^2 up to the constant y_scale^2)
 *   "log"       cost = y_scale * exp(z) (z capped at AS_COSTMODEL_MAX_LOG); the network learns
 *               log(cost / y_scale), loss: MSE of those logs (relative errors); y_scale
 *               defaults to the geometric mean training cost
 *   "linear"    the first models' unconstrained output, cost = y_scale * z, loss as softplus;
 *               kept to read older models (absent field) and for comparison; predictions
 *               are clamped at 0 (as_costmodel_out), so a legacy model never shows a
 *               negative cost, but its training loss and gradient see the raw z.
 * y_scale (stored with the model, by default the mean training cost) only rescales the
 * target so one learning rate suits costs of any magnitude (GPU shards of 0.1 ms, CPU
 * shards of 100 ms). Predictions are always in ms.
 *
 * Parameter buffer layout (PyTorch's nn.Linear layout, weight [out, in]):
 *   w1[H1,F] b1[H1] w2[H2,H1] b2[H2] w3[H3,H2] b3[H3] w4[1,H3] b4[1]
 *
 * Prediction is on the CPU, thread-safe on a const model (scratch per call).
 */
#ifndef AS_COSTMODEL_H
#define AS_COSTMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "featurize.h"
#include "nn.h"
#include "stream.h"

#define AS_COSTMODEL_VERSION 1   /* the `model` record's format_version */

/* output forms (as_costmodel_info.output; record field `output`) */
enum { AS_CM_OUT_LINEAR = 0, AS_CM_OUT_SOFTPLUS = 1, AS_CM_OUT_LOG = 2, AS_CM_OUT_COUNT };
#define AS_COSTMODEL_MAX_LOG 80.0   /* "log": z above this predicts y_scale * e^80 (finite) */
#ifndef AS_COSTMODEL_SOFTPLUS_BETA
#define AS_COSTMODEL_SOFTPLUS_BETA 20.0   /* "softplus": y_scale * softplus(20 z) / 20 */
#endif
/* "linear", "softplus", "log" (NULL for another value) */
const char *as_costmodel_output_name(int output);
/* the form named s, or -1 */
int as_costmodel_output_parse(const char *s);

/* metrics of predictions p against measurements y over i in [0, n) with (mask == NULL ||
 * mask[i]): n, MAE, MSE, MAPE (% over y != 0), R^2 = 1 - MSE / variance of y (population);
 * NAN where undefined (no element; R^2 with constant y; MAPE with every y == 0) */
typedef struct { int64_t n; double mae, mse, mape, r2; } as_costmodel_metrics;
as_costmodel_metrics as_costmodel_metrics_of(const double *y, const double *p, const char *mask, int64_t n);

/* the held-out evaluation stored with a model (record field `heldout`, docs/FORMAT.md) */
typedef struct {
    int present;                    /* 0: no test split (record: nil) */
    char split[16];                 /* "shards" / "tables" */
    int64_t test_shards;
    as_costmodel_metrics model, linear, sum_single;   /* on the test shards; sum_single on
                                                         the covered ones */
    double coverage;                /* fraction of test shards sum_single covers */
} as_costmodel_heldout;

typedef struct as_costmodel as_costmodel;

/* load the `model` record of a model stream file; checks kind, version, feature order and
 * sizes; reads the whole stream (a truncated file is an error); 0 ok, -1 with err */
int as_costmodel_load(as_costmodel **m, const char *path, char *err, size_t errlen);
void as_costmodel_free(as_costmodel *m);

/* predicted cost (ms, >= 0) of one shard made of tables f[0..n) (n may be 0: an empty
 * shard, cost 0) */
double as_costmodel_predict(const as_costmodel *m, const as_features *const *f, int n);

/* the device the model's training costs were measured on ("cpu: ...", "NVIDIA H100 ...") */
const char *as_costmodel_device(const as_costmodel *m);

/* ---- batches, training, serialisation ----------------------------------------------------- */

/* A set of shards over a table list: shard k is tables tab[idx[off[k] .. off[k+1])],
 * measured cost cost[k] ms (cost may be NULL when only predicting). */
typedef struct {
    const as_features *tab;
    int64_t ntab;
    const int64_t *off, *idx;
    const double *cost;
    int64_t nshards;
} as_costset;

/* predicted cost (ms, >= 0) of shards[0..n) of d (all shards when shards is NULL), into
 * out[n]; an empty shard costs 0 */
void as_costmodel_predict_batch(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n,
                                double *out);
/* the network's raw output z of the same shards (before the output form; 0 for an empty
 * shard): for evaluation, e.g. counting a linear model's negative raw predictions */
void as_costmodel_z_batch(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, double *z);
/* the output form: the cost in ms (>= 0, finite) of a network output z */
double as_costmodel_out(const as_costmodel *m, double z);

/* what a model knows about itself; filled by training, stored in the model record */
typedef struct {
    int h1, h2, h3;                 /* hidden sizes (21 -> h1 -> h2, sum, -> h3 -> 1) */
    double mean[3], std[3];         /* z-score statistics of dim, rows, pooling */
    int log_feats;                  /* 1: z-score log1p(dim, rows, pooling) instead of the raw
                                       values (not the paper's choice; record field "transform") */
    uint32_t drop;                  /* features left out (bit i: feature i is 0 after the
                                       normalisation, its training mean): AutoShard's feature
                                       ablations (as-costfit --drop-features; record field
                                       "dropped_features", absent when 0) */
    double y_scale;                 /* the network predicts cost / y_scale */
    int output;                     /* AS_CM_OUT_*: how z becomes a cost (record "output") */
    char cost_device[256];          /* device the training costs were measured on */
    char cost_device_kind[16];      /* "cpu" / "cuda" */
    char train_device[32];          /* "cpu" / "cuda:0": where it was trained (last) */
    char split[16];                 /* "shards" / "tables" / "none" */
    uint64_t seed;
    int64_t steps, epochs, batch;   /* cumulative over --init continuations */
    double lr, clip;
    int64_t train_shards, test_shards, train_tables;
    double *losses;                 /* mean training loss per epoch, all trainings: ms^2
                                       ("linear", "softplus"), squared log ratio ("log") */
    int64_t nlosses;
    as_costmodel_heldout heldout;   /* set by as-costfit before it writes the model */
} as_costmodel_info;

/* the feature groups of --drop-features (AutoShard's Table 2): "dim", "rows" (the hash
 * size), "pooling", "size", "distribution" (the 17 access-count bins), or one feature's name
 * (as_costmodel_feature_name), comma-separated, into *mask (bit i: feature i); 0, or -1
 * with err naming the word */
int as_costmodel_drop_parse(const char *list, uint32_t *mask, char *err, size_t errlen);
/* the record field "dropped_features" (a list of the features' names) of mask drop (not 0),
 * packed; and read from rec (absent: 0), -1 with err (what names the record) for a list
 * that is not one of feature names. The cost model's and the policy's records share it. */
void as_pack_drop(msgpack_packer *pk, uint32_t drop);
int as_read_drop(const msgpack_object *rec, const char *what, uint32_t *drop, char *err, size_t errlen);
/* the normalised 21-vector the network sees for one table (transform, then z-score; the
 * dropped features 0) */
void as_costmodel_table_vector(const as_costmodel *m, const as_features *f, double out[AS_NFEATURES]);

/* a fresh model with PyTorch's default init from seed; statistics identity, y_scale 1,
 * output "linear" (set info->output before training for another form) */
as_costmodel *as_costmodel_new(int h1, int h2, int h3, uint64_t seed);
as_costmodel_info *as_costmodel_meta(as_costmodel *m);
const as_costmodel_info *as_costmodel_cmeta(const as_costmodel *m);
/* the contiguous parameter buffer and its length */
float *as_costmodel_params(as_costmodel *m, int64_t *n);

/* set mean/std of dim, rows, pooling from the distinct tables of shards[0..n) of d, and
 * y_scale from their mean cost, the geometric mean for the "log" output form (when
 * y_scale <= 0 is given; else that value): set info->output first */
void as_costmodel_fit_stats(as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, double y_scale);

typedef struct {
    int64_t epochs;         /* passes over the training shards (used when steps == 0) */
    int64_t steps;          /* optimiser steps (0 = epochs decide) */
    double lr;              /* Adam learning rate (paper: 1e-3) */
    int batch;              /* shards per step (paper: 512) */
    double clip;            /* global gradient-norm clip, 0 = none */
    uint64_t seed;          /* shuffling */
    const as_nn_ops *ops;   /* device; NULL = CPU */
    /* called after every step (may be NULL) */
    void (*progress)(void *ctx, int64_t step, int64_t steps, double loss);
    void *ctx;
    /* early stopping, when nval > 0: the training loss on val[0..nval) of d (as_costmodel_
     * loss_grad's, on the CPU) is taken every eval_every steps (0: every epoch); training ends
     * once it has not fallen for max(patience, half the step count of its lowest) steps, not
     * before min_steps, at the latest after steps / epochs' count; the model keeps the
     * parameters of the lowest evaluation, and *stop (when not NULL) says where that was */
    const int64_t *val;
    int64_t nval, eval_every, patience, min_steps;
    struct as_costfit_stop *stop;
} as_costfit_opts;

/* where early stopping stopped */
typedef struct as_costfit_stop {
    int64_t best_step;      /* the step (from 1) of the lowest validation loss */
    int64_t ran;            /* the steps run */
    int64_t evals;          /* validation losses taken */
    double best_loss, first_loss;   /* the lowest and the first (units of the training loss) */
    int early;              /* 1: stopped by the patience rule, 0: ran to the step limit */
} as_costfit_stop;

/* minibatch Adam on the output form's loss over shards[0..n) of d (costs required, > 0 for
 * "log"); continues from the
 * model's current weights (fresh Adam moments). An epoch's batches are of equal size (within
 * one shard): ceil(n / batch) of them. Appends per-epoch losses to the metadata.
 * 0 ok, -1 with err: bad data or a diverged loss, or a failure of the device (then
 * opts->ops->error() is set too: an environment failure, exit 3). */
int as_costmodel_train(as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n,
                       const as_costfit_opts *o, char *err, size_t errlen);

/* the training loss over shards[0..n) of d on the CPU: for "linear" and "softplus" the MSE
 * of the cost / y_scale the model predicts against the measured one (units of y_scale^2),
 * for "log" the MSE of z against log(cost / y_scale) (a cost <= 0 counts as 1e-30 y_scale);
 * when grad is not NULL, its gradient with respect to the parameter buffer is ACCUMULATED
 * into grad[nparams]. For tests and for callers that run their own optimiser (as-rl). */
double as_costmodel_loss_grad(const as_costmodel *m, const as_costset *d, const int64_t *shards, int64_t n, float *grad);

/* pack the `model` record into w */
void as_costmodel_write(const as_costmodel *m, as_writer *w);
/* parse a `model` record; 0 ok, -1 with err */
/* The header of a network record (a cost `model` or a `policy`): its kind, its `kind`-named
 * field equal to name ("costmodel", "autoshard-lstm"), format_version equal to version and
 * the 21 features in this build's order. 0, or -1 with err naming what ("cost model",
 * "policy") and the field. */
int as_net_header_check(const msgpack_object *rec, const char *kind, const char *name, int version, const char *what,
                        char *err, size_t errlen);
int as_costmodel_read(as_costmodel **m, const msgpack_object *rec, char *err, size_t errlen);

/* the feature names in the model's order ("dim", "rows", "pooling", "size", "bin0".."bin16") */
const char *as_costmodel_feature_name(int i);

/* ---- incremental prediction (used by as-plan's cost-greedy, lib/plan/plan.h) ------------------- */
/* The first MLP acts per table and its outputs are summed, so a shard's prediction is the
 * head applied to the sum of its tables' representations: for n >= 1,
 *   as_costmodel_predict(m, f, n) == as_costmodel_head(m, rep(f[0]) + ... + rep(f[n-1]))
 * up to float rounding. A planner caches every table's representation and every shard's
 * running sum, so trying a table on a shard costs one evaluation of the small head. */
/* width of a table representation (h2, 32 for the paper's model) */
int as_costmodel_rep(const as_costmodel *m);
/* one table's representation: normalised features through the shared MLP, out[rep] */
void as_costmodel_embed(const as_costmodel *m, const as_features *f, float *out);
/* A memo of as_costmodel_embed's results, keyed by the normalised feature vector (all the
 * representation depends on): a table or piece met again (the split search places the same
 * items in thousands of candidate plans) costs a lookup, and the result is bit-identical to
 * as_costmodel_embed's. 2^bits entries (1..24), direct-mapped: a new item replaces the one in
 * its slot. Thread-safe (a lock); valid while m lives and its parameters do not change
 * (as-plan's models, not as-rl's, which trains them). */
typedef struct as_embed_memo as_embed_memo;
as_embed_memo *as_embed_memo_new(const as_costmodel *m, int bits);
void as_embed_memo_free(as_embed_memo *c);
void as_embed_memo_get(as_embed_memo *c, const as_features *f, float *out);
const as_costmodel *as_embed_memo_model(const as_embed_memo *c);
void as_embed_memo_stats(const as_embed_memo *c, int64_t *hits, int64_t *misses);
/* the head (rep -> h3 -> 1, then the output form: as_costmodel_out) on a summed
 * representation sum[rep]: ms, >= 0 */
double as_costmodel_head(const as_costmodel *m, const float *sum);
/* the head in two parts: head(sum) = head_post(head_pre(sum)); head_pre is the linear
 * W3 sum (out[h3], no bias), head_post adds b3, applies ReLU, W4, b4 and the output form */
void as_costmodel_head_pre(const as_costmodel *m, const float *sum, float *out);
double as_costmodel_head_post(const as_costmodel *m, const float *z);

#endif
