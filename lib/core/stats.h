/* stats.h - the statistics every stage uses, in one place: medians (as-bench's timings and
 * noise, as-rl's drift scale, as-eval's floors), mean and standard deviation, Student-t
 * intervals of a mean (the incomplete beta function behind them) and geometric means with
 * their intervals (as-eval). A foundation: no autoshard dependency. */
#ifndef AS_STATS_H
#define AS_STATS_H

#include <stdint.h>

/* qsort comparator of doubles, ascending (NaN compares equal to everything: keep them out) */
int as_stats_cmp(const void *a, const void *b);
/* the median of sorted s[0..n) (n >= 1): the middle value, or the mean of the two middle ones */
double as_stats_median_sorted(const double *s, int64_t n);
/* the median of v[0..n) (n >= 1, no NaN); v is sorted in place */
double as_stats_median(double *v, int64_t n);

/* mean and population standard deviation of the finite values of v[0..n); returns how many */
int64_t as_stats_meanstd(const double *v, int64_t n, double *mean, double *std);

/* the 0.975 quantile of Student's t distribution with df degrees of freedom (df >= 1):
 * the half-width factor of a two-sided 95 % interval; NaN for df < 1 */
double as_stats_t975(int64_t df);

/* 95 % t-interval of the mean of the finite values of v[0..n): mean ± t975(m-1) · s/√m
 * with s the sample standard deviation; lo = hi = NaN when fewer than 2 values. Returns m. */
int64_t as_stats_ci(const double *v, int64_t n, double *mean, double *lo, double *hi);

/* geometric mean of the finite values > 0 of v[0..n) and the 95 % interval: the t-interval
 * of the mean of their logarithms, exponentiated (NaN when fewer than 2). Returns how many. */
int64_t as_stats_gmean_ci(const double *v, int64_t n, double *gmean, double *lo, double *hi);

/* median of the finite values of v[0..n) (NaN when none); v is reordered */
double as_stats_median_finite(double *v, int64_t n);

/* the benchmark protocol's statistics over n timings (sorted copy inside); mean of the middle after
 * dropping trim from each end; rel_std over all runs */
void as_stats_trimmed(const double *v, int n, int trim, double *trimmed_mean, double *median,
                    double *min, double *max, double *rel_std);
/* the relative spread of the runs the trimmed mean keeps: population standard deviation /
 * mean of the sorted runs trim..n-trim-1 (trim clamped as in as_stats_trimmed); NaN when fewer
 * than 2 runs are kept or their mean is not above 0 */
double as_stats_trimmed_spread(const double *v, int n, int trim);

#endif
