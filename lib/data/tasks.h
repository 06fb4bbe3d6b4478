/* tasks.h - sharding tasks as the paper builds them: random subsets of the pool's tables,
 * K shards each (default T/10), an optional memory cap per shard; disjoint training and
 * test sets; the transfer setting (training tables from the first half of the pool, test
 * tasks with a given ratio of tables from the unseen second half). Deterministic in the
 * seed and the pool (the set of table ids), whatever order the tables arrived in.
 * Dimension letters: T tables per task, K shards. */
#ifndef AS_TASKS_H
#define AS_TASKS_H

#include <stdint.h>

#include "stream.h"

typedef struct {
    int64_t ntasks;        /* total tasks (default 100) */
    int64_t ntest;         /* of which test tasks (default ntasks / 10) */
    int64_t tables;        /* T per task (default 80) */
    int64_t shards;        /* K (0: T / 10, at least 1) */
    uint64_t seed;
    uint64_t mem_cap;      /* bytes per shard, 0 = no cap */
    double unseen_ratio;   /* < 0: the standard setting; 0..1: the transfer setting */
} as_task_cfg;

typedef struct {
    int64_t id;
    int test;              /* 0 train, 1 test */
    int64_t *tables;       /* T table ids, ascending */
    int64_t ntables;
    int64_t shards;
    int64_t unseen;        /* tables from the unseen half (transfer setting) */
    uint64_t bytes;        /* total weight bytes of its tables */
} as_task;

/* Build the tasks. pool_ids: the pool's table ids (any order, distinct); pool_bytes: each
 * table's weight bytes. Returns 0, or -1 with err (too few tables, a task that cannot fit
 * in K x cap, ...). *out is malloc'd: free with as_tasks_free. */
int as_tasks_make(const as_task_cfg *c, const int64_t *pool_ids, const int64_t *pool_bytes, int64_t npool,
                  as_task **out, char *err, size_t errlen);
void as_tasks_free(as_task *t, int64_t n);
/* write task t as a `task` record (lib/records/planrec.h as_taskrec_write) */
void as_task_write(as_writer *w, const as_task_cfg *c, const as_task *t);
/* One test task (id 0) of all n tables ids[] (any order; weight bytes bytes[]) onto K
 * shards: a model's one task (as-features --model-task). t->tables is malloc'd, ascending:
 * free it with free() (t is the caller's; as_tasks_free would free t itself) */
void as_task_whole(as_task *t, const int64_t *ids, const int64_t *bytes, int64_t n, int64_t K);

#endif
