/* evalfloor.h - the floor of a sharding plan. A shard holding an item (today a whole table;
 * later a piece of one) costs at least what that item costs alone, so no plan of a task can
 * have a slowest shard below the costliest of its items alone: its floor. A table-wise
 * planner is stuck at the floor of the task's costliest table, whatever it does; only
 * splitting tables lowers it.
 * Dimension letters: T tables (items) of a plan.
 *
 * Single-item costs: for measured plans, from single-table `cost` records (as-bench
 * --singles writes one per table alone; any `cost` record whose `tables` holds one id
 * counts, but one whose entry is a piece of the table), the median of a table's records
 * measured on the plans' device; a piece's, from the `cost` records of that piece alone
 * (as-bench --piece-singles measures every piece of its input plans alone); for estimated
 * plans, the cost model's prediction for the item alone (a piece: the piece's, from its
 * features). An item without a single cost makes the floor unknown: never guessed.
 * A data-parallel table (assign -2: whole on every shard, each looking up 1/K of the batch)
 * counts as its single cost over K, an approximation of one shard's slice of it alone.
 *
 * Floor-bound (a task of a run): the best plan of the task - the lowest slowest shard over
 * all algorithms' usable plans - has its slowest shard <= floor x (1 + margin); the margin
 * covers the measurement noise (as-eval: 2 % for measured costs, 0 for estimated ones).
 * A measured slowest shard can lie below its floor by noise: ratios are reported as they
 * are and such a task counts as floor-bound.
 */
#ifndef AS_EVALFLOOR_H
#define AS_EVALFLOOR_H

#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "evaltext.h"
#include "planrec.h"
#include "featindex.h"
#include "stream.h"

/* the default floor margins (as-eval --help states them as 2 % and 0) */
#define AS_EVAL_FLOOR_MARGIN_MEASURED 0.02
#define AS_EVAL_FLOOR_MARGIN_ESTIMATED 0.0

/* The floor of one plan from the single costs of its items single[0..n): their maximum;
 * NaN when n is 0 or any single cost is unknown (NaN). *unknown (when not NULL): how many
 * are unknown. Pieces of tables plug in here: pass the pieces' single costs. */
double as_eval_floor(const double *single, int64_t n, int64_t *unknown);

/* ---- single-table costs from `cost` records ------------------------------------------- */

typedef struct as_eval_singles_s {
    /* every usable single-table record as read */
    int64_t *ids;               /* [n] the table */
    double *cost;               /* [n] its cost_ms: finite, > 0 */
    int *dev;                   /* [n] index into devices */
    int64_t n, cap;
    char **devices;             /* distinct `device` strings ("" when a record has none) */
    int ndevices;
    int64_t skipped;            /* single-table records not measured (error, nil cost_ms) */
    /* after as_eval_singles_build: per distinct table id (ascending), the median */
    int64_t *uid, *ucount;      /* [nu] id, records behind its median */
    double *umedian;            /* [nu] */
    int64_t nu;
    int64_t used, other_device; /* records used; records of another device, not used */
    /* one-piece records (a piece of a table alone: as-bench --piece-singles): kept apart,
       in a nested set keyed by the index of (table, piece) in pkid/pkey */
    struct as_eval_singles_s *pieces;
    int64_t *pkid;
    as_piece *pkey;
    int64_t npk, pkcap;
} as_eval_singles;

/* Take a `cost` record (others: nothing) into s when its `tables` holds exactly one id.
 * One with an `error` or a missing / nil cost_ms is skipped (not measured); a cost_ms that
 * is not a finite number above 0, or bad `tables`, is bad data. 0, or -1 with err. */
int as_eval_singles_take(as_eval_singles *s, const msgpack_object *rec, char *err, size_t errlen);
/* the `cost` records of path through as_eval_singles_take (others ignored); 0, or -1 with
 * err ("FILE: record N: cost: ..." or the reader's message) */
int as_eval_singles_file(as_eval_singles *s, const char *path, char *err, size_t errlen);
/* Per table the median of its records' costs (an even count: the mean of the two middle
 * ones). device non-empty: only records measured on it (or naming no device) count, the
 * others are counted in other_device. Call again to rebuild. */
void as_eval_singles_build(as_eval_singles *s, const char *device);
/* the median single cost of table id (NaN when it has none); *count (when not NULL): the
 * records behind it */
double as_eval_singles_get(const as_eval_singles *s, int64_t id, int64_t *count);
/* the same for piece p of table id (its one-piece records); NaN when it has none */
double as_eval_singles_get_piece(const as_eval_singles *s, int64_t id, const as_piece *p, int64_t *count);
void as_eval_singles_free(as_eval_singles *s);

/* ---- floors of plans ---------------------------------------------------------------------- */

/* every plan's floor (floor, floor_unknown) from the built singles s over its tables */
void as_eval_floor_measured(as_planrec_full *p, int64_t n, const as_eval_singles *s);
/* every plan's floor from the cost model's prediction for each table alone, the features
 * from ft (built: after as_eval_estimate); a table without features leaves the floor
 * unknown */
void as_eval_floor_estimated(as_planrec_full *p, int64_t n, const as_costmodel *cm, const as_featidx *ft);
/* no floor for any plan (estimated costs without the model that made them) */
void as_eval_floor_none(as_planrec_full *p, int64_t n);

/* After as_eval_compute: each plan's at_floor (-1 unknown: not usable or no floor; 1 its
 * slowest shard <= floor x (1 + margin); else 0) and floor_margin. */
void as_eval_floor_mark(as_planrec_full *p, int64_t n, double margin);

/* the floor-bound count over the (run, task) pairs with a usable plan */
typedef struct {
    int64_t tasks;              /* (run, task) pairs with a usable plan */
    int64_t known;              /* of which with a known floor */
    int64_t bound;              /* of which floor-bound */
    int64_t runs;               /* distinct runs among them */
    double margin;
} as_eval_floorbound;

/* The task's floor is the largest known floor of its plans (whole-table plans of a task
 * all have the same); floor-bound as in the top comment. */
void as_eval_floor_bound(const as_planrec_full *p, int64_t n, double margin, as_eval_floorbound *fb);

/* the floor-bound sentence (no line end; markdown: bold count): how many tasks are
 * floor-bound and what that means, or that the floor is unknown; label "measured" or
 * "estimated" says where the floor comes from */
void as_eval_floor_words(FILE *f, as_eval_format fmt, const as_eval_floorbound *fb, const char *label);
/* the sentence as a paragraph of its own (text, markdown; CSV: nothing, the verdict's
 * columns carry the counts) */
void as_eval_print_floor(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, double margin, const char *label);

#endif
