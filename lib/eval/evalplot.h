/* evalplot.h - as-eval's plots: gnuplot scripts and their data files, written to a
 * temporary directory and run through gnuplot into a .png, .svg or .pdf. The plans'
 * figures (balance, speedup, per-shard costs) and the training curve of as-rl's `train`
 * records; the statistics behind them are eval.h's.
 * Dimension letters: K shards of a plan. */
#ifndef AS_EVALPLOT_H
#define AS_EVALPLOT_H

#include <stddef.h>
#include <stdint.h>

#include "eval.h"
#include "planrec.h"

/* the plot format a file name asks for by its extension (case-insensitive): 0 .png, 1
 * .svg, 2 .pdf; -1 anything else */
int as_eval_plot_format(const char *path);
#define AS_EVAL_PLOT_FORMATS ".png, .svg or .pdf"

/* a shard-cost bar chart switches to a log y axis when its largest bar is more than this
 * many times its smallest non-zero one (as-eval --help states it as 30x) */
#define AS_EVAL_LOG_RATIO 30.0

/* Plots with gnuplot into out, in the format of its extension (png: pngcairo when
 * available, else png; svg; pdf: pdfcairo): per-shard cost bars of every algorithm's plan
 * of task `task` (first run; log y axis when the bars span more than AS_EVAL_LOG_RATIO),
 * balance per algorithm (mean ± std, clipped to [0, 100] %) and speedup (geometric mean with
 * its 95 % interval) with error bars inside the axes, and, when pred/meas are given,
 * predicted against measured shard cost. 0 ok; -1 with err (gnuplot missing or failing: the
 * caller treats it as an environment error). */
int as_eval_plot(const char *out, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na,
                 int64_t task, const char *label, const double *pred, const double *meas, int64_t nscatter,
                 char *err, size_t errlen);

/* The training curve with gnuplot into out (its format as for as_eval_plot): balance
 * against episodes and against wall time (wall_s), series training episodes (as_eval_train_
 * balance), their measured balance, and the greedy evaluations' predicted and measured
 * balance, each where present. 0 ok; -1 with err (gnuplot missing or failing). */
int as_eval_plot_curve(const char *out, const as_eval_train *t, int64_t n, char *err, size_t errlen);

#endif
