/* modelgate.c - the quality gate on the cost model; see modelgate.h */
#include "modelgate.h"

#include "msgobj.h"
#include "stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* weak as the numbers say: r2 below the threshold or below the linear baseline's */
static int weak_of(double r2, double linear_r2, double min_r2)
{
    return r2 < min_r2 || (isfinite(linear_r2) && r2 < linear_r2);
}

void as_mgate_judge(as_mgate *g, const as_costmodel_heldout *h, double min_r2)
{
    const int have = h && h->present;
    g->r2 = have && isfinite(h->model.r2) ? h->model.r2 : NAN;
    g->linear_r2 = have && isfinite(h->linear.r2) ? h->linear.r2 : NAN;
    g->min_r2 = isfinite(min_r2) ? min_r2 : NAN;
    g->judged = isfinite(g->r2) && isfinite(g->min_r2);
    g->weak = g->judged && weak_of(g->r2, g->linear_r2, g->min_r2);
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

static void pack_num(msgpack_packer *pk, const char *key, double v)
{
    as_pack_str(pk, key);
    if (isfinite(v)) msgpack_pack_double(pk, v);
    else msgpack_pack_nil(pk);
}

void as_mgate_pack(msgpack_packer *pk, const as_mgate *g)
{
    as_pack_str(pk, "model_quality");
    msgpack_pack_map(pk, 4);
    pack_num(pk, "r2", g->r2);
    pack_num(pk, "linear_r2", g->linear_r2);
    pack_num(pk, "min_r2", g->min_r2);
    as_pack_str(pk, "weak");
    if (!g->judged) msgpack_pack_nil(pk);
    else if (g->weak) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
}

/* key of o: a number (its range checked by ok) or nil / absent (NaN); 0, or -1 */
static int read_num(const msgpack_object *o, const char *key, double lo, double hi, double *v)
{
    const msgpack_object *x = as_obj_get(o, key);
    *v = NAN;
    if (!x) return 0;
    int rc = as_obj_num(x, v);
    return rc > 0 || (!rc && isfinite(*v) && *v >= lo && *v <= hi) ? 0 : -1;
}

int as_mgate_read(const msgpack_object *o, as_mgate *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    if (o->type != MSGPACK_OBJECT_MAP) {
        snprintf(err, errlen, "'model_quality' is not a map of r2, linear_r2, min_r2 and weak");
        return -1;
    }
    static const char *const key[2] = { "r2", "linear_r2" };
    double *dst[2] = { &g->r2, &g->linear_r2 };
    for (int i = 0; i < 2; i++)
        if (read_num(o, key[i], -INFINITY, 1, dst[i])) {
            snprintf(err, errlen, "model_quality.%s is not an R² (a finite number <= 1) or nil", key[i]);
            return -1;
        }
    if (read_num(o, "min_r2", 0, 1, &g->min_r2)) {
        snprintf(err, errlen, "model_quality.min_r2 is not a threshold in 0..1 or nil");
        return -1;
    }
    const msgpack_object *w = as_obj_get(o, "weak");
    if (w && w->type != MSGPACK_OBJECT_NIL && w->type != MSGPACK_OBJECT_BOOLEAN) {
        snprintf(err, errlen, "model_quality.weak is not true, false or nil");
        return -1;
    }
    g->judged = w && w->type == MSGPACK_OBJECT_BOOLEAN;
    g->weak = g->judged && w->via.boolean;
    /* judged exactly when r2 and min_r2 are known, and then as they say */
    const int can = isfinite(g->r2) && isfinite(g->min_r2);
    if (g->judged != can || (can && g->weak != weak_of(g->r2, g->linear_r2, g->min_r2))) {
        snprintf(err, errlen, "model_quality.weak is %s, which its r2, linear_r2 and min_r2 do not say",
                 !g->judged ? "nil" : g->weak ? "true" : "false");
        return -1;
    }
    return 0;
}
