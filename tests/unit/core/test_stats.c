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
