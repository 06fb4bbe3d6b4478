/* planrec.h - the `task` and `plan` records (docs/FORMAT.md): read (the structural reader
 * every tool shares; as-eval's strict one, lib/eval/evalplan.h, checks more) and written,
 * with what a plan record carries besides the plan (as_plan_meta). Dimension letters: T
 * tables of a task, K shards. */
#ifndef AS_PLANREC_H
#define AS_PLANREC_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "piece.h"
#include "stream.h"

/* a `task` record (docs/FORMAT.md) */
typedef struct {
    int64_t id;
    int64_t *tables;                /* T ids, malloc'd */
    int64_t ntables;
    int64_t shards;
    uint64_t mem_cap;               /* 0 = no cap */
    char split[16];                 /* "train", "test" or "" */
} as_ptask;

/* parse a task record: tables (distinct ids, at most AS_MAX_TABLES, each within
 * AS_MAX_TABLE_ID), shards in 1..AS_MAX_SHARDS, tables x shards within AS_MAX_PAIRS,
 * optional mem_cap >= 0 and split. 0 ok, -1 with err */
int as_ptask_read(const msgpack_object *rec, as_ptask *t, char *err, size_t errlen);
void as_ptask_free(as_ptask *t);

/* The placement in a `plan` record, as every reader of plans sees it (as-bench, as-costfit
 * --predict, as-eval): shards within AS_MAX_SHARDS, table ids within the limits, tables x
 * shards within AS_MAX_PAIRS, assign parallel to tables with each entry a shard in 0..K-1
 * or -1 (unplaced: an infeasible plan). */
typedef struct {
    int64_t task;                   /* -1 when the record has none */
    int has_task;
    int64_t shards;                 /* K >= 1 */
    int64_t n;                      /* T */
    int64_t *tables;                /* [T] ids, malloc'd */
    int64_t *assign;                /* [T] shard or -1, malloc'd */
    int64_t unplaced;               /* entries of assign that are -1 */
    as_piece *pieces;               /* [T] the piece of each entry (piece.h), malloc'd; NULL
                                     * when the record has no `pieces`: every entry whole */
    int64_t ndp;                    /* entries of assign that are AS_DP: data parallel */
} as_planrec;

/* With `pieces`, an entry may be a piece of its table; the entries of one table cover a
 * rectangle once (as_pieces_check_cover); without, a table listed twice is an error. A
 * data-parallel entry (assign AS_DP) is a whole table (its piece nil). That
 * the cover is all of each table needs the tables' sizes: the reader that has them checks
 * it (as_pieces_check_dims).
 * 0 ok, -1 with err ("plan of task 3: 'shards' = ... exceeds the limit ...") */
int as_planrec_read(const msgpack_object *rec, as_planrec *p, char *err, size_t errlen);
void as_planrec_free(as_planrec *p);
/* as_plan_group on a plan record */
void as_planrec_group(const as_planrec *p, int64_t *start, int64_t *order);
/* The refinement a plan record carries (refine: moves, swaps, placed, ms, pred_max_before,
 * stop; options: refine_ms, refine_steps) into *rf, done 1; all zero when it carries none. 0,
 * or -1 with err ("refine: 'swaps' = -1 is outside 0..") */
int as_planrec_refine_read(const msgpack_object *rec, as_plan_refined *rf, char *err, size_t errlen);

/* what a plan record carries besides the plan itself */
typedef struct {
    const as_ptask *task;
    as_alg alg;
    uint64_t seed;
    uint64_t mem_cap;               /* the cap used (task's or the override) */
    int64_t world;                  /* 0: no 2D rank map */
    const char *model;              /* model file name or NULL */
    const char *model_device;       /* what the model's costs were measured on, or NULL */
    const char *policy;             /* autoshard: the policy file, else NULL */
    int64_t samples;                /* autoshard: candidates per task (the policy's), else 0 */
    const as_features *const *items; /* the plan's items (their features), for every plan's
                                       communication bytes, their names and TorchRec memory
                                       terms; NULL: not written */
    const double *item_pred;        /* [T] the cost model's prediction of each item alone, ms
                                     * (the tables that make a shard slow); NULL: no model */
    const as_mgate *model_quality;  /* the quality gate's judgement of the cost model that
                                       placed the plan (lib/model/modelgate.h), written as
                                       `model_quality`; NULL: none (placed without it) */
    const char *label;              /* the `alg` label written instead of as_plan_alg_label's
                                       (an imported plan's own, as-plan --import); NULL: that */
} as_plan_meta;

/* the `alg` label a plan's outputs carry: m->label when set, else as_plan_alg_label's */
const char *as_plan_meta_label(const as_plan *p, const as_plan_meta *m, char *buf, size_t len);

/* write a `plan` record (docs/FORMAT.md) */
void as_plan_write(as_writer *w, const as_plan *p, const as_plan_meta *m);

#endif
