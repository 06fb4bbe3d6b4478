/* costdata.h - the cost model's data set (as-costfit): `features` and `cost` records joined
 * into measured shards, the train/test split, the two baselines the model is judged
 * against, the metrics, the benchmark's own noise, and the `costfit-report` record
 * (docs/FORMAT.md). Dimension letters: K shards, T tables.
 *
 * Use: as_costdata_read_files on the inputs (or as_costdata_read_record on each record),
 * as_costdata_index, as_costdata_check, as_costdata_join; then a split (as_costdata_split_shards / _tables), the model's
 * statistics (as_costdata_stats), training (lib/model/costmodel.h on d->set), as_costeval_run and
 * as_costfit_report_pack. Functions return -1 with a message for bad data and never exit;
 * allocation failure ends the process (as_malloc).
 */
#ifndef AS_COSTDATA_H
#define AS_COSTDATA_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#include "costmodel.h"
#include "featindex.h"
#include "stream.h"

/* one measured shard: a usable `cost` record */
typedef struct {
    int64_t *ids, n;        /* its table ids in record order, n >= 1 */
    as_piece *pieces;       /* [n] the piece of each (piece.h), NULL: every table whole */
    double cost;            /* cost_ms: finite, > 0 */
    double rel_std;         /* the record's rel_std, NAN when absent */
    int dev;                /* index into as_costdata.devices */
    uint64_t rec;           /* record number in its input (messages) */
    int file;               /* input number, in reading order (messages) */
} as_costshard;

typedef struct {
    as_featidx ft;          /* `features` by id (as_costdata_index builds it) */
    as_costshard *cs;       /* usable `cost` records, input order */
    int64_t ncs, capcs;
    int64_t nskipped;       /* `cost` records with an error or no cost_ms (not measured) */
    int64_t nempty;         /* `cost` records of empty shards */
    int64_t nnofeat;        /* as_costdata_join_known: shards left out, a table without features */
    int64_t nnopiece;       /* ... and a piece whose features are not known (its table's are) */
    char **devices, **devkinds;   /* distinct `device` strings, their `device_kind` */
    int ndevices;
    char **trains;          /* distinct kinds trained: "WEIGHTS + OPTIMIZER" (the records'
                             * weights_type and optimizer; absent: "fp16 + sgd") */
    int ntrains;
    /* after as_costdata_join: shard k is items f[idx[off[k] .. off[k+1])], cost[k], where
     * f[0..nf) = ft.f (the tables, ft.n of them) then the features of the pieces the shards
     * hold (as_featidx_piece), each once */
    as_features *f;
    int64_t nf;
    int64_t *off, *idx;
    double *cost;
    as_costset set;         /* the same, for lib/model/costmodel.h */
    char **names;           /* names[file]: the inputs as messages name them */
    int nnames;
} as_costdata;

/* Read files[0..nfiles) in turn (as_read_records: none = standard input), each opened
 * here: `features` records into the index, `cost` records into the shards; others are ignored. A cost record with a non-nil `error` or a
 * missing or nil `cost_ms` is skipped (nskipped), one of an empty shard too (nempty); a
 * cost_ms that is not a finite number above 0, bad `tables` or bad `pieces` (not one
 * piece or nil per table, lib/records/piece.h) is an error. 0 at the end of
 * the input; -1 with err ("FILE: record N: cost: 'cost_ms' = 0 is not a positive cost",
 * the reader's own message, or "FILE: strerror" for a file that cannot be opened). */
int as_costdata_read_files(as_costdata *d, char *const *files, int nfiles, char *err, size_t errlen);
/* One record rec of reader r, as as_costdata_read_files reads each, for a reader that takes
 * other records too (lib/rl/rlinput.h: as-rl's `task` records), so that as-costfit and as-rl
 * read `cost` records and join them to features by one rule: pass every record of the
 * input (the header included: an input is named at its first record); `features` and
 * `cost` records are read, others ignored. 0 or -1 with err as above. d zeroed before the
 * first. */
int as_costdata_read_record(as_costdata *d, const as_reader *r, const as_record *rec, char *err, size_t errlen);

/* build the features index (lib/records/featindex.h: its duplicate rule); 0 or -1 with err */
int as_costdata_index(as_costdata *d, char *err, size_t errlen);
/* usable data: at least one measured shard, all from one device; 0 or -1 with err */
int as_costdata_check(const as_costdata *d, char *err, size_t errlen);
/* Every shard's entries to their features: a whole table (or a piece covering it) to the
 * table's record, a piece to its own (lib/records/featindex.h as_featidx_piece: the `features`
 * record of that piece, as as-features --row-pieces writes them, or, for a column piece,
 * derived from the table's or its row piece's record), never a piece to its whole table.
 * 0, or -1 with err when a table has no `features` record ("FILE: record N: cost of a
 * shard with table 7, which has no `features` record") or a piece's features are not
 * known ("... with piece t3[c 0:8, r 0:250), which has no `features` record (as-features
 * --row-pieces writes row pieces' features)"). */
int as_costdata_join(as_costdata *d, char *err, size_t errlen);
/* as_costdata_join for readers that leave such shards out (as-rl): a shard with a table
 * that has no `features` record is dropped from cs and counted in nnofeat, one with a
 * piece whose features are not known in nnopiece (the table's features are; the first
 * entry that fails decides); the rest are joined as as_costdata_join joins them */
void as_costdata_join_known(as_costdata *d);
void as_costdata_free(as_costdata *d);   /* NULL: nothing */

/* an order-independent hash of a set of table ids (the same set in any order, the same hash) */
uint64_t as_costdata_set_hash(const int64_t *ids, int64_t n);

/* ---- the split ------------------------------------------------------------------------- */

typedef struct {
    int64_t *train, *test;  /* shard numbers, ascending */
    int64_t ntrain, ntest;
    int64_t ndropped;       /* tables split: shards mixing both halves */
    int64_t cut;            /* tables split: the first test id */
} as_costsplit;

/* by shards: each shard is a test shard when u < test_frac, u in [0, 1) from the hash of its
 * table set and the seed, so repeats of one table set land on one side */
void as_costdata_split_shards(const as_costdata *d, double test_frac, uint64_t seed, as_costsplit *s);
/* shards[0..n) (of d->cs) in two, as the split by shards does but with another hash: a
 * shard goes to part[0..*npart) when fold * frac <= u < (fold + 1) * frac, else to
 * keep[0..*nkeep) (each room for n), so folds 0, 1, ... (fold * frac < 1) are disjoint parts
 * for one seed; as-costfit's validation parts of the training shards */
void as_costdata_split_part(const as_costdata *d, const int64_t *shards, int64_t n, double frac, int fold, uint64_t seed, int64_t *keep,
                            int64_t *nkeep, int64_t *part, int64_t *npart);
/* by tables (unseen tables): cut = the id of the distinct table at position n/2 in id order
 * (0 without tables); shards of ids all below cut train, all at or above test, the rest
 * are dropped */
void as_costdata_split_tables(const as_costdata *d, as_costsplit *s);
void as_costsplit_free(as_costsplit *s);

/* the model's normalisation statistics and y_scale from the training shards (y_scale <= 0:
 * the output form's default); keep = 1 (a model continued with --init) keeps the model's
 * own statistics and y_scale and only counts the training tables. Then the metadata that
 * describes the data: the cost device, the split name and the shard counts. */
void as_costdata_stats(as_costmodel *m, const as_costdata *d, const as_costsplit *s, double y_scale, int keep,
                       const char *split);

/* ---- baselines and noise ----------------------------------------------------------------- */

/* baseline (a), sum of single costs: per test shard the sum over its tables of the mean
 * measured cost of the 1-table shards of that table over all of d; a 1-table test shard
 * leaves its own measurement out (it must not predict itself). out[i] = NAN and cov[i] = 0
 * where a table has no (other) 1-table measurement, else cov[i] = 1. Returns the covered
 * count. */
int64_t as_costdata_sum_single(const as_costdata *d, const int64_t *test, int64_t ntest, double *out, char *cov);
/* baseline (b)'s regressor of shard k: the sum over its tables of dim x pooling */
double as_costdata_dimpool(const as_costdata *d, int64_t k);
/* the least-squares line cost = a + b x (x = as_costdata_dimpool) over shards[0..n), n >= 1;
 * b = 0 when every x is the same */
void as_costdata_linear_fit(const as_costdata *d, const int64_t *shards, int64_t n, double *a, double *b);

/* the benchmark's own noise: the mean rel_std of the test shards' measurements (of every
 * shard when there are no test shards; NAN when none has one), and the spread of repeated
 * measurements: over every member of the groups of >= 2 shards of one table set (any
 * order), the mean of |cost - group mean| (repeat_mae, ms) and the mean of |cost - group
 * mean| / group mean (repeat_mape, %; a member of a group of mean 0 adds 0); NAN without
 * repeats */
typedef struct {
    double mean_rel_std;
    int64_t repeat_groups;
    double repeat_mae, repeat_mape;
} as_costnoise;
void as_costdata_noise(const as_costdata *d, const int64_t *test, int64_t ntest, as_costnoise *o);

/* ---- evaluation and the report --------------------------------------------------------- */

typedef struct {
    int64_t ntrain, ntest;
    double *ytr, *ptr;                  /* training shards: measured, predicted [ntrain] */
    double *yte, *pte;                  /* test shards: measured, predicted [ntest] */
    as_costmodel_metrics model_train, model_test;
    double *sum_single;                 /* baseline (a) on the test shards [ntest], NAN uncovered */
    char *covered;                      /* [ntest] */
    int64_t ncovered;
    as_costmodel_metrics sum_single_test, model_covered;   /* on the covered test shards */
    double lin_a, lin_b;                /* baseline (b) */
    double *lin_train, *lin_test;       /* its predictions [ntrain], [ntest] */
    as_costmodel_metrics lin_train_m, lin_test_m;
    as_costnoise noise;
    int64_t nneg;                       /* output "linear": test shards with a raw output < 0 */
    int32_t *test_ntables;              /* [ntest] */
} as_costeval;

/* the model and both baselines on the split (ntrain >= 1) */
void as_costeval_run(as_costeval *e, const as_costmodel *m, const as_costdata *d, const as_costsplit *s);
void as_costeval_free(as_costeval *e);
/* the table of errors, the noise line and (output "linear") the count of negative raw
 * predictions, on stderr (as_info) */
void as_costeval_log(const as_costeval *e, const as_costmodel *m);
/* the model record's `heldout` from the test shards (present = 0 without any); returns 1
 * when the model's test R^2 is below the linear baseline's */
int as_costeval_heldout(const as_costeval *e, const char *split, as_costmodel_heldout *ho);

/* what the report says besides the evaluation */
typedef struct {
    const char *split;              /* "shards", "tables", "none" */
    double test_frac;               /* 0 for the tables split */
    uint64_t seed;
    const char *cost_device, *train_device;
    int64_t costs, skipped, dropped, steps;
    double train_s, samples_per_s;
    const double *losses;           /* per epoch, [nlosses] */
    int64_t nlosses;
    const char *steps_rule;         /* "auto", "auto-epochs" (too few shards), "steps", "epochs" */
    int folds;                      /* "auto": its validation runs, else 0 */
    const as_costfit_stop *stops;   /* [folds]: where each stopped */
    const int64_t *fit_shards, *val_shards;   /* [folds]: each run's shards, trained on, scored on */
    double val_s;                   /* their seconds */
} as_costfit_report_info;

/* pack the `costfit-report` record (one map; docs/FORMAT.md) */
void as_costfit_report_pack(msgpack_packer *pk, const as_costfit_report_info *ri, const as_costeval *e);

#endif
