/* modelgate.c - the quality gate on the cost model; see modelgate.h */
#include "modelgate.h"

#include "msgobj.h"
#include "stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_mgate_judge(as_mgate *g, const as_costmodel_heldout *h, double min_r2)
{
    const int have = h && h->present;
    g->r2 = have && isfinite(h->model.r2) ? h->model.r2 : NAN;
    g->linear_r2 = have && isfinite(h->linear.r2) ? h->linear.r2 : NAN;
    g->min_r2 = isfinite(min_r2) ? min_r2 : NAN;
    g->judged = isfinite(g->r2) && isfinite(g->min_r2);
    g->weak = g->judged && as_mgate_weak(g->r2, g->linear_r2, g->min_r2);
}

/* an R² in 3 decimals, more where 3 would round it up to the bound it lies below */
static void r2_str(char *buf, size_t len, double v, double bound)
{
    snprintf(buf, len, "%.3f", v);
    if (v < bound && strtod(buf, NULL) >= bound) snprintf(buf, len, "%.6g", v);
}

int as_mgate_words(char *buf, size_t len, const char *file, const as_mgate *g)
{
    buf[0] = 0;
    if (!isfinite(g->min_r2) || (g->judged && !g->weak)) return 0;
    if (!g->judged) {
        snprintf(buf, len, "%s: the cost model's held-out quality is unknown (it carries no held-out R²: trained without "
                 "a test split, as-costfit --test-frac 0, or trained further by as-rl): plans made with it rest on an "
                 "unchecked model", file);
        return 1;
    }
    const int below_min = g->r2 < g->min_r2, below_lin = isfinite(g->linear_r2) && g->r2 < g->linear_r2;
    char r2[32], lin[32], why[160] = "";
    r2_str(r2, sizeof r2, g->r2, below_min ? g->min_r2 : g->linear_r2);
    r2_str(lin, sizeof lin, g->linear_r2, INFINITY);
    if (below_min) snprintf(why, sizeof why, ", below %g (--min-model-r2)", g->min_r2);
    if (below_lin)
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s below the linear baseline's %s%s", below_min ? " and" : ",",
                 lin, below_min ? "" : " (a straight line predicts the held-out shards better)");
    snprintf(buf, len, "%s: the cost model's held-out R² is %s%s: plans made with it rest on a weak model", file, r2, why);
    return 1;
}

