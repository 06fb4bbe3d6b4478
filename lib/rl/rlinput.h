/* rlinput.h - as-rl's input: the `features` records (one per table, lib/records/featindex.h), the
 * training `task` records and the `cost` records (measured shards, e.g. the cost dataset),
 * joined into what as_rl_train takes (lib/rl/rl.h). Dimension letters: T tables of a task.
 *
 * Test tasks are left out. The `features` and `cost` records are read and joined by
 * lib/model/costdata.h, the reader as-costfit uses (as_costdata_read_record,
 * as_costdata_join_known), so both tools read a cost record by one rule: an entry of a
 * record's `pieces` that is a piece of its table (as-bench --sample-pieces, plans split by
 * as-plan --split-tables) is joined to that piece's features (its `features` record from
 * as-features --row-pieces, or derived for a column piece), never to its whole table's.
 * Cost records with an `error`, no `cost_ms` or no tables are skipped (counted,
 * cost_skipped); so is one with a table that has no features record (cost_nofeat) and one
 * with a piece whose features are not in the input (cost_nopiece: as-costfit refuses that
 * record; as-rl learns from the others). A cost_ms that is not a positive finite number
 * and bad `tables` or `pieces` are errors: measured costs are training data.
 */
#ifndef AS_RLINPUT_H
#define AS_RLINPUT_H

#include <stddef.h>
#include <stdint.h>

#include "benchnoise.h"
#include "costdata.h"
#include "plan.h"
#include "planrec.h"
#include "rl.h"

typedef struct {
    as_costdata cd;                 /* the features and cost records, joined (costdata.h) */
    /* the items, as_rl_cfg.feat: feat[0..ntables) the tables in ascending id order, then the
       npieces distinct pieces of tables the cost records hold, each with its own features
       (feat[i].piece; an entry that covers its whole table is the table) */
    const as_features *feat;
    int64_t nfeat, ntables, npieces;
    as_taskrec *ptask;                /* [ntasks] the training task records */
    as_rl_task *tasks;              /* [ntasks] their tables, pointers into feat */
    int64_t ntasks;
    /* the cost records: shard j = seed_pos[seed_off[j] .. seed_off[j+1]), positions in feat,
       measured seed_cost[j] ms (as_rl_cfg.seed_*) */
    int64_t nseed;
    const int64_t *seed_off, *seed_pos;
    const double *seed_cost;
    int64_t seed_pieces;            /* of those, shards holding a piece */
    int64_t cost_skipped;           /* cost records with an error, no cost_ms or no tables */
    int64_t cost_nofeat;            /* cost records with a table that has no features record */
    int64_t cost_nopiece;           /* cost records with a piece whose features are not in the input */
} as_rl_input;

/* read files[0..nfiles) ("-" or none: standard input) into in (zeroed here). 0, or -1 with
 * err: a file that cannot be read, a bad record ("FILE: record N: ..."), no training task,
 * a task's table without features */
int as_rl_input_read(as_rl_input *in, char *const *files, int nfiles, char *err, size_t errlen);
void as_rl_input_free(as_rl_input *in);   /* also after a failed read */

/* load into pool (as_bpool_load) the tables of the training tasks that will be measured:
 * all of them when `all` is set, else the first `first`, and those of the reference shard
 * of drift correction (benchnoise.h), as_noise_ref_pool of the file,
 * as as-bench --reference auto chooses it: ref[0..*nref); *nloaded = the tasks' tables.
 * 0, or -1 with err (the file, or a table it lacks) */
int as_rl_input_load_pool(const as_rl_input *in, int all, int64_t first, const char *tables, as_bpool *pool,
                          int64_t *nloaded, int64_t ref[AS_NOISE_REF_TABLES], int64_t *nref, char *err, size_t errlen);

#endif
