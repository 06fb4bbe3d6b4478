/* stats.c - the statistics every stage uses; see stats.h */
#include "stats.h"
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t as_stats_meanstd(const double *v, int64_t n, double *mean, double *std)
{
    int64_t m = 0;
    double s = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(v[i])) { s += v[i]; m++; }
    if (!m) { *mean = *std = NAN; return 0; }
    *mean = s / (double)m;
    double ss = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(v[i])) ss += (v[i] - *mean) * (v[i] - *mean);
    *std = sqrt(ss / (double)m);
    return m;
}

/* regularised incomplete beta function I_x(a, b), by its continued fraction (modified
 * Lentz), on the side of x where the fraction converges fast */
static double incbeta(double x, double a, double b)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    if (x > (a + 1) / (a + b + 2)) return 1 - incbeta(1 - x, b, a);
    const double tiny = 1e-300;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x)) / a;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        /* even step d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m)), odd step d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) */
        double num[2] = { m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)) };
        double del = 1;
        for (int i = 0; i < 2; i++) {
            d = 1 + num[i] * d;
            if (fabs(d) < tiny) d = tiny;
            c = 1 + num[i] / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1 / d;
            del = d * c;
            h *= del;
        }
        if (fabs(del - 1) < 1e-15) break;
    }
    return front * h;
}

double as_stats_t975(int64_t df)
{
    if (df < 1) return NAN;
    /* P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2) falls from 1 at t = 0; find where it is 0.05 */
    double nu = (double)df, lo = 0, hi = 1000;
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
        double t = 0.5 * (lo + hi);
        if (incbeta(nu / (nu + t * t), nu / 2, 0.5) > 0.05) lo = t;
        else hi = t;
    }
    return 0.5 * (lo + hi);
}

int64_t as_stats_ci(const double *v, int64_t n, double *mean, double *lo, double *hi)
{
    double pstd;
    int64_t m = as_stats_meanstd(v, n, mean, &pstd);
    *lo = *hi = NAN;
    if (m < 2) return m;
    /* sample std = population std · √(m/(m−1)); half-width t · s/√m */
    double half = as_stats_t975(m - 1) * pstd * sqrt((double)m / (double)(m - 1)) / sqrt((double)m);
    *lo = *mean - half;
    *hi = *mean + half;
    return m;
}

int64_t as_stats_gmean_ci(const double *v, int64_t n, double *gmean, double *lo, double *hi)
{
    double *l = as_malloc((size_t)(n ? n : 1) * sizeof *l);
    for (int64_t i = 0; i < n; i++) l[i] = isfinite(v[i]) && v[i] > 0 ? log(v[i]) : NAN;
    double m, a, b;
    int64_t got = as_stats_ci(l, n, &m, &a, &b);
    free(l);
    *gmean = got ? exp(m) : NAN;
    *lo = exp(a);
    *hi = exp(b);
    return got;
}

int as_stats_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double as_stats_median_sorted(const double *s, int64_t n)
{
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double as_stats_median(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, as_stats_cmp);
    return as_stats_median_sorted(v, n);
}

double as_stats_median_finite(double *v, int64_t n)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(v[i])) v[m++] = v[i];
    if (!m) return NAN;
    return as_stats_median(v, m);
}

void as_stats_trimmed(const double *v, int n, int trim, double *tmean, double *median, double *min, double *max, double *rel_std)
{
    double *s = as_malloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, as_stats_cmp);
    if (2 * trim >= n) trim = (n - 1) / 2;
    double sum = 0;
    for (int i = trim; i < n - trim; i++) sum += s[i];
    *tmean = sum / (n - 2 * trim);
    *median = as_stats_median_sorted(s, n);
    *min = s[0];
    *max = s[n - 1];
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += s[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
    *rel_std = n > 1 && mean > 0 ? sqrt(var / (n - 1)) / mean : 0;
    free(s);
}

double as_stats_trimmed_spread(const double *v, int n, int trim)
{
    if (n < 2) return NAN;
    double *s = as_malloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, as_stats_cmp);
    if (2 * trim >= n) trim = (n - 1) / 2;
    const int m = n - 2 * trim;
    double mean = 0, var = 0;
    for (int i = trim; i < n - trim; i++) mean += s[i];
    mean /= m;
    for (int i = trim; i < n - trim; i++) var += (s[i] - mean) * (s[i] - mean);
    free(s);
    if (m < 2 || !(mean > 0)) return NAN;
    return sqrt(var / m) / mean;
}
