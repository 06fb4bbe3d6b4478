/* rlinput.h - as-rl's input: the `features` records (one per table, lib/featindex.h), the
 * training `task` records and the `cost` records (measured shards, e.g. the cost dataset),
 * joined into what as_rl_train takes (lib/rl.h). Dimension letters: T tables of a task.
 *
 * Test tasks are left out. Cost records with an `error`, no `cost_ms` or no tables are
 * skipped (counted); so is one with a table that has no features record (counted). A
 * cost_ms that is not a positive finite number is an error: measured costs are training
 * data.
 */
#ifndef AS_RLINPUT_H
#define AS_RLINPUT_H

#include <stddef.h>
#include <stdint.h>

#include "benchnoise.h"
#include "featindex.h"
#include "plan.h"
#include "rl.h"

typedef struct {
    as_featidx fx;                  /* the tables; fx.f is as_rl_cfg.feat */
    as_ptask *ptask;                /* [ntasks] the training task records */
    as_rl_task *tasks;              /* [ntasks] their tables, pointers into fx.f */
    int64_t ntasks;
    /* the cost records: shard j = seed_pos[seed_off[j] .. seed_off[j+1]), positions in fx.f,
       measured seed_cost[j] ms (as_rl_cfg.seed_*) */
    int64_t nseed;
    int64_t *seed_off, *seed_pos;
    double *seed_cost;
    int64_t cost_skipped;           /* cost records with an error, no cost_ms or no tables */
    int64_t cost_nofeat;            /* cost records with a table that has no features record */
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
