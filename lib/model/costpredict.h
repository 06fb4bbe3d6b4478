/* costpredict.h - cost-model predictions added to a stream (as-costfit --predict): `shard`
 * and `cost` records get `pred_ms`, `plan` records `pred_ms` per shard and `pred_max_ms`;
 * every other record passes through unchanged, in input order. Dimension letters: K shards,
 * T tables.
 *
 * Use: as_costpred_read_files on the inputs (the records are kept, the `features`
 * indexed), then as_featidx_build(&p->ft, ...), then as_costpred_write
 * once the output is open. Functions return -1 with a message for bad data and never exit.
 */
#ifndef AS_COSTPREDICT_H
#define AS_COSTPREDICT_H

#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "featindex.h"
#include "stream.h"

typedef struct {
    as_featidx ft;          /* the inputs' `features` records */
    char *buf;              /* every record but headers, encoded, in input order */
    size_t len, cap;
    size_t *off;            /* record i is buf[off[i] .. off[i+1]) */
    uint64_t *rec;          /* its record number in its input */
    int *file;              /* its input number */
    int64_t n, ncap;
    char **names;           /* names[file]: the inputs as messages name them */
    int nnames;
} as_costpred;

typedef struct {
    int64_t shards, costs, plans;   /* records annotated */
    double model_s;                 /* seconds in the model */
} as_costpred_stats;

/* keep the records of files[0..nfiles) in turn (as_read_records: none = standard input),
 * each opened here; 0, or -1 with err (a file that cannot be opened: "FILE: strerror"; the
 * reader's message, or "FILE: record N: features ...") */
int as_costpred_read_files(as_costpred *p, char *const *files, int nfiles, char *err, size_t errlen);
/* write every kept record to w, predicted where it is a shard, cost or plan (an existing
 * `pred_ms` / `pred_max_ms` is replaced). An infeasible plan's shards are predicted from the
 * tables placed on them; its `pred_max_ms` is nil. 0, or -1 with err ("FILE: record N: table 7 has no `features` record"); the
 * caller then drops the output. */
int as_costpred_write(as_costpred *p, const as_costmodel *m, as_writer *w, as_costpred_stats *st, char *err,
                      size_t errlen);

/* as-costfit --select: which shards to measure next (pipelines/active-costs) */
typedef struct {
    int64_t candidates;     /* `shard` records read */
    int64_t measured;       /* `cost` records read (shards measured already) */
    int64_t dropped;        /* candidates of a table set (with its pieces) measured already
                             * or drawn before them */
    int64_t chosen;
    double sd_all, sd_chosen;   /* the mean spread of the candidates kept, of the chosen (ms) */
    double model_s;
} as_costsel_stats;

/* Of the kept `shard` records (candidates), the nsel on whose cost the models ms[0..nm)
 * (nm >= 2: an ensemble) disagree most: each candidate predicted by every model, its spread
 * the standard deviation of the nm predictions (ms, so that the shards that weigh most in
 * a squared error come first); the largest first, ties by input order. A candidate whose
 * tables and pieces (in any order) equal a kept `cost` record's (measured) or an earlier
 * candidate's is dropped. The chosen are written to w in input order, each its record
 * with `pred_ms` (the models' mean) and `pred_sd_ms` (the spread); nothing else is
 * written. 0, or -1 with err (a bad shard or cost record, a table with no features). */
int as_costpred_select(as_costpred *p, as_costmodel *const *ms, int nm, int64_t nsel, as_writer *w, as_costsel_stats *st,
                       char *err, size_t errlen);
void as_costpred_free(as_costpred *p);

#endif
