/* evalrange.h - as-eval --table range: how far each task's choice holds when the communication
 * costs otherwise, and the candidate whose worst case is best. Dimension letters: P plans of a
 * task, K ranks, G the grid's points.
 *
 * A plan's cost under a model is its slowest rank's kernel (its cost before the charge: measured,
 * or as-eval --model's estimate) plus that rank's communication under the model
 * (as_eval_comm_ms), over the rank of the highest sum. For each task, over its candidates
 * (feasible plans of known costs and communication bytes; --candidates: those labels only):
 *
 *   the winner along each knob   the model with every collective's bandwidth (bw), the
 *                                all-to-all's alone (a2a-bw) and every call's latency (lat)
 *                                scaled by x (comm.h's @ factors), x from 1/16 to 16 on a grid
 *                                of 16 points an octave, each change of winner found to 0.1 %
 *                                by bisection: segments [x0, x1) and their winner;
 *   the crossings                where the chosen plan (--chosen, else the winner at 1x) and
 *                                the reference (--versus, else torchrec-own, else torchrec)
 *                                cost the same along each knob: the x at which the comparison
 *                                flips, and which is faster on each side;
 *   the worst case               each candidate's largest cost over the best candidate's, over
 *                                the plausible range (each knob at 0.5x, 1x, 2x: the grid's
 *                                points in it) and the extra models (--range-model: e.g.
 *                                TorchRec's estimate, a preset); the candidate of the least
 *                                worst case (ties: the chosen, then the earlier plan) is the
 *                                robust pick. The chosen plan holds when it is the best at
 *                                every one of those points (within tie, relative).
 */
#ifndef AS_EVALRANGE_H
#define AS_EVALRANGE_H

#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "eval.h"

#define AS_RANGE_MAX_MODELS 8

typedef struct {
    const char *chosen, *versus;            /* labels, or NULL (above) */
    const char *const *only;                /* the candidates' labels, NULL: every plan */
    int64_t nonly;
    const as_comm_model *extra;             /* [nextra] the worst case's other models */
    int64_t nextra;
    double tie;                             /* the chosen plan holds within this of the best (0.01: 1 %) */
} as_eval_range_cfg;

/* The range of each task of p[0..n) (after as_eval_charge_comm and as_eval_compute) under m:
 * text and markdown say it in words (the model's all-to-all bandwidth where it has one, the
 * crossings, the winners outside the plausible range, the worst case); CSV has a row per
 * segment, crossing and candidate:
 *   run,task,what,knob,x_from,x_to,alg,value
 *   what: segment (alg wins on [x_from, x_to)), crossing (at x_from the chosen (alg) and the
 *   reference cost the same; value: +1 when the chosen is the faster above it, -1 below),
 *   worst (alg's worst case, value: its largest cost over the best's), robust (the robust
 *   pick, value 1 when the chosen holds, 0 when not), chosen (value: 1) */
void as_eval_print_range(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m,
                         const as_eval_range_cfg *c);

#endif
