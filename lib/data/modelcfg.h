/* modelcfg.h - a model description users already have (as-convert --config): a JSON file
 * shaped like a list of TorchRec EmbeddingBagConfig (name, num_embeddings, embedding_dim,
 * feature_names, data_type) with the lookups' pooling factor and skew, plus the topology it
 * trains on (world size, local size, HBM per device, batch size per rank, optimizer,
 * pipeline). docs/FORMAT.md "Model configs" is the schema; pipelines/models/ ships real ones.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * Strict: unknown keys are errors (a misspelt field is not silently dropped), every number
 * is range-checked, table names are unique. Errors name the table (index and name) and the
 * field: "table 3 (\"cat_3\"): num_embeddings: must be an integer in 1..2147483647". */
#ifndef AS_MODELCFG_H
#define AS_MODELCFG_H

#include <stddef.h>
#include <stdint.h>

#define AS_MCFG_NAME 128            /* bytes of a name, its NUL included */
#define AS_MCFG_MAX_FEATURES 64     /* feature names per table */
#define AS_MCFG_SKEW 0.8            /* default Zipf exponent of the synthetic lookups */
#define AS_MCFG_HBM_GIB 32.0        /* default HBM per device: TorchRec's planner's HBM_CAP */
#define AS_MCFG_MAX_BATCH ((int64_t)1 << 24)  /* lookups batch (global) at most */

typedef struct {
    char name[AS_MCFG_NAME];
    int64_t rows;                   /* E: num_embeddings */
    int64_t dim;                    /* D: embedding_dim */
    char (*features)[AS_MCFG_NAME]; /* feature_names (default: the table's name) */
    int nfeatures;
    char data_type[16];             /* fp32 (default), fp16, bf16, int8, int4, int2 */
    double pooling;                 /* L: mean lookups per sample (default 1) */
    int fixed;                      /* bag "fixed": every bag exactly L long (L an integer);
                                     * 0: "geometric" lengths of mean L (default) */
    double skew;                    /* Zipf exponent of the rows' popularity (0: uniform) */
    char lookups_file[1024];        /* "lookups": {"file", "table"}: real lookups, those of
                                     * table lookups_table of this torch.save file (relative
                                     * to the config's folder); "" synthetic */
    int64_t lookups_table;
} as_mcfg_table;

typedef struct {
    char name[AS_MCFG_NAME];
    char source[1024];              /* where the sizes come from (free text, cited) */
    char module_path[256];          /* the EmbeddingBagCollection's path in the model ("" none) */
    int64_t world_size, local_size; /* ranks in all, ranks per host */
    double hbm_gib;                 /* HBM per device, GiB */
    int64_t batch_per_rank;         /* samples per rank per iteration */
    char optimizer[32];             /* sgd (default), adam, adagrad, rowwise_adagrad, ... */
    char pipeline[32];              /* none (default), train_base, train_sparse_dist,
                                     * train_prefetch_sparse_dist */
    int64_t dense_parameters;       /* the model's dense (non-embedding) parameters, fp32; 0
                                     * not given */
    int64_t dense_estimate;         /* dense_tensor_estimate: bytes TorchRec reserves for the
                                     * dense part in place of 6 x their bytes; 0 not given */
    as_mcfg_table *tables;
    int64_t n;
} as_mcfg;

/* bytes per element of a data type name (fp32 4, fp16 2, bf16 2, int8 1, int4 0.5, int2
 * 0.25); 0 for an unknown name */
double as_mcfg_dtype_bytes(const char *name);

/* Parse JSON text[0..n) into c (free with as_mcfg_free, also after an error). 0, or -1 with
 * err ("line 3, column 5: ..." for JSON syntax, else the table and field). */
int as_mcfg_parse(as_mcfg *c, const char *text, size_t n, char *err, size_t errlen);
/* as_mcfg_parse on the file at path (at most 64 MiB); err starts with the path */
int as_mcfg_load(as_mcfg *c, const char *path, char *err, size_t errlen);
void as_mcfg_free(as_mcfg *c);

/* the dense reservation in bytes (trmem.h): dense_estimate when given, else 6 x 4 bytes x
 * dense_parameters (0 when neither is given) */
uint64_t as_mcfg_dense_bytes(const as_mcfg *c);

/* the synthetic lookups of every table, batch B (batch > 0: as-convert --batch, else
 * as_mcfg_batch) x its pooling_factor, within the cap on one record's size that every tool
 * reads (AS_MAX_RECORD, stream.h): 0, or -1 with err naming the table and the product
 * ("table 0 (\"a\"): pooling_factor: 10000 x batch_size_per_rank 256 x world_size 65536 =
 * 1.68e+11 lookups, ..."), checked before any lookups are made. Tables whose lookups come
 * from a file are not checked. */
int as_mcfg_check_lookups(const as_mcfg *c, int64_t batch, char *err, size_t errlen);

/* the lookups batch B of every table: batch_per_rank x world_size (a table-wise shard's
 * kernel sees the samples of every rank), or -1 when above AS_MCFG_MAX_BATCH */
int64_t as_mcfg_batch(const as_mcfg *c);

#endif
