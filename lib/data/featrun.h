/* featrun.h - as-features' pass over its input, record by record: a `table` becomes its
 * `features` record (and, with row blocks asked for, one per block), written at once; a
 * model's table (as-convert --config: name and data type, after its `model-config` record)
 * carries TorchRec's memory model (trmem.h); `features` records pass through; the
 * `model-config` record is checked and passes; `task` records pass unless dropped; others
 * pass. The pool's whole tables (ids, fp16 weight bytes) and the model's topology are kept
 * for the tasks made afterwards (tasks.h).
 * Dimension letters: B batch, L pooling. */
#ifndef AS_FEATRUN_H
#define AS_FEATRUN_H

#include <stddef.h>
#include <stdint.h>

#include "featurize.h"
#include "stream.h"
#include "tasks.h"

typedef struct {
    const int64_t *rowp;            /* --row-pieces: block counts (NULL: none) */
    size_t nrowp;
    int drop_tasks;                 /* --drop-tasks: the input's task records are not passed */
    int64_t rw_shards;              /* with rowp: also the blocks of this count (as-features
                                       --model-task: its task's K, TorchRec's row_wise cut);
                                       -1: the model-config record's world size when there is
                                       one; 0: none */
} as_featrun_cfg;

typedef struct {
    int64_t *ids, *bytes;           /* [npool] the pool's whole tables: id, fp16 weight bytes */
    int64_t npool, cap;
    /* the input's model-config record's (0 / "": none) */
    int64_t world, hbm, dense, batch;
    char opt[32], pipe[32];
    double ids_per_rank;            /* sum over the model's tables of L x batch_size_per_rank */
    uint64_t nrec, lookups;         /* records read; lookups of the tables featurized */
    int64_t npieces;                /* row blocks' features written */
    double tcomp;                   /* seconds in table parsing and features */
    as_feat_scratch scratch;
} as_featrun;

/* one record of reader r through the pass (headers skipped), its output to w: 0, or -1 with
 * err ("FILE: record N: table 7: offsets decrease at bag 3"; a bad model-config record) */
int as_featrun_record(as_featrun *st, const as_featrun_cfg *c, as_writer *w, const as_reader *r, const as_record *rec,
                      char *err, size_t errlen);
void as_featrun_free(as_featrun *st);   /* NULL: nothing */

/* --model-task, after the pass: one test task of every table of the pool (as_task_whole,
 * tasks.h) written to w, onto tc->shards shards, else the model-config record's world size;
 * its cap tc->mem_cap, else (set into tc) the HBM less TorchRec's reservation (trmem.h
 * as_trmem_cap: 15 %, the dense part and the ids' copies) when the tables carry its memory
 * model, else the HBM. 0, or -1 with err and nothing written: no table, no shard count (no
 * --shards and no model-config record), or a reservation that leaves nothing */
int as_featrun_model_task(const as_featrun *st, as_task_cfg *tc, as_writer *w, char *err, size_t errlen);

#endif
