/* test_stats.c - the shared statistics (lib/core/stats.h): medians of odd and even counts, the
 * comparator's order; the intervals are tested in test_eval.c, where they are reported. */
#include "unit.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>

TEST(stats_medians)
{
    double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };
    CHECK_NEAR(as_stats_median(odd, 5), 3, 0);
    CHECK_NEAR(as_stats_median(even, 4), 2.5, 0);     /* the mean of the two middle values */
    CHECK_NEAR(as_stats_median(one, 1), 7, 0);
    for (int i = 0; i < 4; i++) CHECK_NEAR(odd[i], i + 1, 0);   /* sorted in place */
    double s[] = { -2, 0.5, 0.5, 9 };
    CHECK_NEAR(as_stats_median_sorted(s, 4), 0.5, 0);
    CHECK_NEAR(as_stats_median_sorted(s, 3), 0.5, 0);
    double a = 1, b = 2;
    CHECK(as_stats_cmp(&a, &b) < 0 && as_stats_cmp(&b, &a) > 0 && as_stats_cmp(&a, &a) == 0);
    /* the finite values only */
    double f[] = { NAN, 3, INFINITY, 1 };
    CHECK_NEAR(as_stats_median_finite(f, 4), 2, 0);
}

/* the spread: population std / mean of the runs the trimmed mean keeps, by hand */
TEST(stats_trimmed_spread_hand_values)
{
    /* {2,3,4} kept of {100,2,4,1,3}: mean 3, variance (1 + 0 + 1) / 3 */
    double v1[5] = { 100, 2, 4, 1, 3 };
    CHECK_NEAR(as_stats_trimmed_spread(v1, 5, 1), sqrt(2.0 / 3.0) / 3.0, 1e-15);
    /* no trim: {2,4}: mean 3, std 1 */
    double v2[2] = { 4, 2 };
    CHECK_NEAR(as_stats_trimmed_spread(v2, 2, 0), 1.0 / 3.0, 1e-15);
    /* trim clamped as in as_stats_trimmed: 4 runs keep at least 2: {2,3} of {5,1,3,2} */
    double v3[4] = { 5, 1, 3, 2 };
    CHECK_NEAR(as_stats_trimmed_spread(v3, 4, 5), 0.5 / 2.5, 1e-15);
    /* equal runs: 0 */
    double v4[4] = { 7, 7, 7, 7 };
    CHECK_NEAR(as_stats_trimmed_spread(v4, 4, 1), 0, 0);
    /* fewer than 2 kept, one run, mean 0: undefined (nil in records) */
    double v5[3] = { 1, 2, 3 };
    CHECK(isnan(as_stats_trimmed_spread(v5, 3, 1)));
    CHECK(isnan(as_stats_trimmed_spread(v5, 1, 0)));
    double v6[2] = { 0, 0 };
    CHECK(isnan(as_stats_trimmed_spread(v6, 2, 0)));
    /* the input is left as it was (a sorted copy inside) */
    CHECK(v1[0] == 100 && v1[4] == 3);
    /* rel_std is unchanged: sample std over all runs. {1,2,3,4,100}: mean 22, sum of
       squares 441 + 400 + 361 + 324 + 6084 = 7610, / 4 = 1902.5 */
    double tm, med, mn, mx, rs;
    as_stats_trimmed(v1, 5, 1, &tm, &med, &mn, &mx, &rs);
    CHECK_NEAR(tm, 3, 1e-15);
    CHECK_NEAR(rs, sqrt(1902.5) / 22, 1e-12);
}
