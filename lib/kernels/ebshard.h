/* ebshard.h - the data of the fused embedding-bag op (embbag.h): a shard of T tables laid
 * out in one weight buffer with their batch of bags (the layout rule is embbag.h's top
 * comment), and one table of a pool, the unit a shard is assembled from; what a shard
 * trains (weight types, optimizers: their names, sizes and Adam's constants; ebopt.h has
 * the arithmetic). The kernels (embbag), their references (ebopt) and their deterministic
 * data (ebgen) all build on them.
 * Dimension letters: B batch, D dim, E rows, T tables. */
#ifndef AS_EBSHARD_H
#define AS_EBSHARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t T;
    int64_t B;
    const int64_t *rows;      /* [T] E_t >= 1 */
    const int32_t *dims;      /* [T] D_t >= 1 */
    const int64_t *w_off;     /* [T+1] element offset of table t in W; w_off[T] = elements of W
                               * (padding included; see the layout rule above) */
    const int32_t *d_off;     /* [T+1] column of table t in the output; d_off[T] = sumD */
    const int64_t *offsets;   /* [T*B+1] table-major, offsets[0] = 0, non-decreasing */
    const int32_t *indices;   /* [offsets[T*B]] */
} as_eb_shard;

/* one table of a pool (as-bench's table data), the unit a shard is assembled from
 * (ebgen.h: layout and concatenation; as_eb_gpu_ctx: the same on the device) */
typedef struct {
    int64_t id;               /* table id: keys its generated weights and gradients */
    int64_t rows, batch, dim, lookups;
    const int64_t *offsets;   /* [batch+1]: 0 .. lookups, non-decreasing */
    const int32_t *indices;   /* [lookups], each in [0, rows) */
} as_eb_table;

/* each table's weight type and the shard's optimizer (ebopt.h has the rules) */
typedef enum { AS_EB_F16 = 0, AS_EB_F32 = 1, AS_EB_BF16 = 2, AS_EB_NDTYPE } as_eb_dtype;
typedef enum { AS_EB_SGD = 0, AS_EB_ROWWISE_ADAGRAD = 1, AS_EB_ADAM = 2, AS_EB_NOPTIM } as_eb_optim;

typedef struct {
    as_eb_optim kind;
    float lr;
    float eps;                /* Adagrad, Adam */
    float beta1, beta2;       /* Adam */
    int64_t step;             /* Adam: t >= 1 */
    float c1, c2;             /* Adam: set by as_eb_opt_prepare (below) */
} as_eb_opt;

/* the names as model configs and records write them: "fp16", "fp32", "bf16"; "sgd",
 * "exact_rowwise_adagrad" (also "rowwise_adagrad"), "adam". 0, or -1 when unknown */
int as_eb_dtype_parse(const char *s, as_eb_dtype *d);
int as_eb_optim_parse(const char *s, as_eb_optim *o);
const char *as_eb_dtype_name(as_eb_dtype d);
const char *as_eb_optim_name(as_eb_optim o);
/* 2-byte units of W one element takes (fp32 2, else 1); bytes of one element (fp32 4, else 2:
 * the one list of the weight types' sizes, lib/records/table.c's too) */
int as_eb_dtype_units(as_eb_dtype d);
int as_eb_dtype_bytes(as_eb_dtype d);
/* fp32 state elements a table of E x D needs under optimizer o */
int64_t as_eb_opt_state(as_eb_optim o, int64_t E, int64_t D);
/* Adam's bias corrections for o->step into o->c1, o->c2; 0, or -1 with err when the
 * optimizer's constants are out of range (lr, eps finite and >= 0; betas in [0, 1); step >= 1) */
int as_eb_opt_prepare(as_eb_opt *o, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
