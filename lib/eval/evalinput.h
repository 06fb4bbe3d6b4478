/* evalinput.h - as-eval's input: the `plan` records (lib/eval/eval.h) grouped into runs by
 * (input file, plan seed), the `train` records of as-rl's log in input order, the
 * `features` records (when a cost model estimates the costs), the single-table `cost`
 * records (the floor, lib/eval/evalfloor.h, when it does not), the cost model's held-out
 * quality (`model` / `costfit-report` records) and a costfit-report's predicted and
 * measured test costs; and the estimate of every plan's shard costs with a cost model.
 * Dimension letters: K shards, T tables of a plan.
 *
 * Costs are either all measured or all estimated: without a cost model every plan must
 * carry costs of one kind. Nothing here exits; errors return -1 with a message.
 */
#ifndef AS_EVALINPUT_H
#define AS_EVALINPUT_H

#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "eval.h"
#include "evalfloor.h"
#include "featindex.h"
#include "stream.h"

/* the held-out quality in a stream: its first `model` record with `heldout` and its first
 * `costfit-report` (older files); the model's wins (as_eval_quality_pick) */
typedef struct {
    as_eval_quality model, report;
} as_eval_quality_src;

/* take the quality of rec when it is the first `model` or `costfit-report` of its kind
 * (other records: nothing). 0, or -1 with err ("NAME: record N: ...") on a malformed one */
int as_eval_quality_take(as_eval_quality_src *qs, const as_record *rec, const char *name, char *err, size_t errlen);
/* the model record's quality, else the costfit-report's, else NULL */
const as_eval_quality *as_eval_quality_pick(const as_eval_quality_src *qs);
/* the quality in the file path (a cost model file): every record through
 * as_eval_quality_take. 0, or -1 with err (the file, a bad stream or record) */
int as_eval_quality_file(as_eval_quality_src *qs, const char *path, char *err, size_t errlen);

typedef struct {
    as_planrec_full *plans;        /* [nplans], run set; of split only when one is given */
    int64_t nplans;
    int64_t nruns;              /* (file, seed) pairs in order of appearance: plans[].run */
    as_eval_train *train;       /* [ntrain] in input order */
    int64_t ntrain;
    int64_t back_at, back_from; /* the first train record whose episode does not grow:
                                   episode back_at after back_from; back_at -1 none */
    char device[128];           /* the first plan's cost_device (without a model; "" none) */
    int devices_differ;         /* plans measured on different devices */
    char trained[48];           /* the first plan's kind, "WEIGHTS OPTIMIZER" ("fp16 sgd" when
                                   it carries none); "" before a measured plan */
    int trained_differ;         /* plans measured training different kinds */
    as_featidx ft;              /* the `features` records, built */
    as_eval_singles singles;    /* single-table `cost` records (not estimate), not yet built */
    as_eval_quality_src quality;/* of the input */
    double *pred, *meas;        /* [nscatter] the first costfit-report's test_pred and
                                   test_measured (equal length > 0); NULL when none */
    int64_t nscatter;
} as_eval_input;

/* Read files[0..nfiles) ("-" or none: standard input) into in (zeroed here). split: keep only
 * the plans of tasks of that split (NULL: all). The `features` records are kept (in->ft,
 * built), and every plan's pieces are checked against the sizes of the tables they give
 * (as_featidx_check_cover: a piece outside its table, a table covered short of its last
 * column or row is an error naming the plan's record). estimate: the costs will come from a
 * cost model (the plans' costs are not checked). Without it every
 * plan must have costs, all of one kind, and single-table `cost` records are kept for the
 * floor (a bad one is an error). A costfit-report without usable test arrays is said
 * with as_info (no scatter plot). 0, or -1 with err: a file that cannot be read, a bad
 * stream, a bad record ("FILE: record N: ..."), a plan without costs, mixed cost kinds. */
int as_eval_input_read(as_eval_input *in, char *const *files, int nfiles, const char *split, int estimate,
                       char *err, size_t errlen);
void as_eval_input_free(as_eval_input *in);   /* also after a failed read */

/* Estimate every shard cost of plans p[0..n) with cm, the tables' features from ft (built
 * here; as_eval_input_read's is built already, and building it again changes nothing):
 * cost_kind becomes estimated, the noise fields are dropped (estimates carry none), and a
 * shard with tables an unconstrained (output linear) model prices at 0 (a negative
 * prediction clamped) counts in clamped. 0, or -1 with err: ft's build fails, a plan's
 * table without a features record. */
int as_eval_estimate(as_planrec_full *p, int64_t n, const as_costmodel *cm, as_featidx *ft, char *err, size_t errlen);

#endif
