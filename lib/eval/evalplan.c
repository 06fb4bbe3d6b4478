/* evalplan.c - decoding a `plan` record for as-eval; see evalplan.h */
#include "evalplan.h"
#include "common.h"
#include "plan.h"
#include "planrec.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_eval_plan_free(as_eval_plan *p)
{
    if (!p) return;
    free(p->tables);
    free(p->pieces);
    free(p->assign);
    free(p->cost);
    free(p->mem);
    free(p->spread);
    free(p->noisy);
    free(p->pass_cost);
    free(p->pass_spread);
    free(p->comm_in);
    free(p->comm_out);
    free(p->comm_ms);
    free(p->cost_dp);
    free(p->comm_ar);
    free(p->comm_rw);
    free(p->comm_cw);
    free(p->comm_rw_in);
    free(p->comm_cw_in);
    free(p->pred);
    free(p->item_pred);
    free(p->names);
    free(p->mterm);
    memset(p, 0, sizeof *p);
}

/* a msgpack array of integers into a malloc'd int64 list */
static int get_ints(const msgpack_object *rec, const char *key, int64_t **out, int64_t *n)
{
    const msgpack_object *a = as_obj_get(rec, key);
    *out = NULL;
    *n = 0;
    if (!a || a->type != MSGPACK_OBJECT_ARRAY) return -1;
    int64_t m = a->via.array.size;
    int64_t *v = as_malloc((size_t)(m ? m : 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++) {
        const msgpack_object *o = &a->via.array.ptr[i];
        if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) v[i] = (int64_t)o->via.u64;
        else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) v[i] = o->via.i64;
        else { free(v); return -1; }
    }
    *out = v;
    *n = m;
    return 0;
}

/* a per-shard list of communication bytes (numbers >= 0), absent or nil: NULL */
static int read_comm(const msgpack_object *rec, const char *key, as_eval_plan *p, double **out, char *err, size_t errlen)
{
    *out = NULL;
    const msgpack_object *o = as_obj_get(rec, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->K) {
        snprintf(err, errlen, "plan of task %" PRId64 ": '%s' must be a list with one entry per shard", p->task, key);
        return -1;
    }
    double *v = as_malloc((size_t)(p->K ? p->K : 1) * sizeof *v);
    for (int64_t k = 0; k < p->K; k++) {
        int rc = as_obj_num(&o->via.array.ptr[k], &v[k]);
        if (rc != 0 || !(isfinite(v[k]) && v[k] >= 0 && v[k] < 1e18)) {
            snprintf(err, errlen, "plan of task %" PRId64 ": %s[%" PRId64 "] is not a byte count >= 0", p->task, key, k);
            free(v);
            return -1;
        }
    }
    *out = v;
    return 0;
}

/* o (field key), a list of n finite numbers (absent or nil: NULL) */
static int read_nums(const msgpack_object *o, const char *key, int64_t n, const char *per, as_eval_plan *p,
                     double **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != n) {
        snprintf(err, errlen, "plan of task %" PRId64 ": '%s' must be a list with one entry per %s", p->task, key, per);
        return -1;
    }
    double *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        if (as_obj_num(&o->via.array.ptr[i], &v[i]) != 0 || !isfinite(v[i])) {
            snprintf(err, errlen, "plan of task %" PRId64 ": %s[%" PRId64 "] is not a finite number", p->task, key, i);
            free(v);
            return -1;
        }
    *out = v;
    return 0;
}

/* the label or name under key (absent or nil: "") into buf: a string of 1..len-1 bytes that
 * the names' rule (as_name_bad, msgobj.h) passes (as-bench's cost_* fields may also be "": no
 * shard measured); 0, or -1 with err ("plan of task 3: 'cost_device' holds a control
 * character (byte 0x0a at offset 3)") */
static int read_name(const msgpack_object *rec, const char *key, char *buf, size_t len, const as_eval_plan *p, char *err,
                     size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, key);
    char why[96];
    buf[0] = 0;
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type == MSGPACK_OBJECT_STR && !o->via.str.size && !strncmp(key, "cost_", 5)) return 0;
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= len || memchr(o->via.str.ptr, 0, o->via.str.size)) {
        snprintf(err, errlen, "plan of task %" PRId64 ": '%s' is not a label (a string of at most %zu bytes)", p->task, key,
                 len - 1);
        return -1;
    }
    if (as_name_bad(o->via.str.ptr, o->via.str.size, why, sizeof why)) {
        snprintf(err, errlen, "plan of task %" PRId64 ": '%s' %s", p->task, key, why);
        return -1;
    }
    memcpy(buf, o->via.str.ptr, o->via.str.size);
    buf[o->via.str.size] = 0;
    return 0;
}

/* task, alg, split and comm_model (its text: the model itself is as-plan's to parse) by the
 * names' rule; a bare plan (AS_EVAL_READ_BARE) may leave task and alg out, one that is there
 * is read as always. 0, or -1 with err */
static int read_labels(const msgpack_object *rec, as_eval_plan *p, int has_task, int flags, char *err, size_t errlen)
{
    const msgpack_object *alg = as_obj_get(rec, "alg");
    const int bare = flags & AS_EVAL_READ_BARE;
    if (((!bare || has_task) && p->task < 0) || ((!bare || alg) && (!alg || alg->type != MSGPACK_OBJECT_STR))) {
        snprintf(err, errlen, "plan needs 'task' (an id >= 0) and 'alg'");
        return -1;
    }
    if (alg && !alg->via.str.size) {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'alg' is empty (the label of the algorithm that made it)", p->task);
        return -1;
    }
    char comm[AS_COMM_NAME_MAX];
    return read_name(rec, "alg", p->alg, sizeof p->alg, p, err, errlen) ||
           read_name(rec, "split", p->split, sizeof p->split, p, err, errlen) ||
           read_name(rec, "comm_model", comm, sizeof comm, p, err, errlen) ? -1 : 0;
}

/* the planner's view: pred_ms, item_pred_ms, names, mem_terms, mem_cap, model_quality (all
 * optional) */
/* the plan's `names` (one per entry, printable): 0, or -1 with err */
static int read_names(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "names");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->T) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'names' must be a list with one entry per entry of 'tables'", p->task);
            return -1;
        }
        p->names = as_calloc((size_t)(p->T ? p->T : 1), sizeof *p->names);
        for (int64_t i = 0; i < p->T; i++) {
            const msgpack_object *x = &o->via.array.ptr[i];
            if (x->type != MSGPACK_OBJECT_STR || x->via.str.size == 0 || x->via.str.size >= sizeof p->names[0] ||
                memchr(x->via.str.ptr, 0, x->via.str.size)) {
                snprintf(err, errlen, "plan of task %" PRId64 ": names[%" PRId64 "] is not a name (a string of 1-127 bytes)", p->task, i);
                return -1;
            }
            char why[96];
            if (as_name_bad(x->via.str.ptr, x->via.str.size, why, sizeof why)) {   /* printed raw by --table ranks */
                snprintf(err, errlen, "plan of task %" PRId64 ": names[%" PRId64 "] %s", p->task, i, why);
                return -1;
            }
            memcpy(p->names[i], x->via.str.ptr, x->via.str.size);
        }
    }
    return 0;
}

/* the plan's `mem_terms` (weights, optimizer, pipeline bytes per shard): 0, or -1 with err */
static int read_mem_terms(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "mem_terms");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        static const char *const term[3] = { "weights", "optimizer", "pipeline" };
        if (o->type != MSGPACK_OBJECT_MAP) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'mem_terms' must be a map of weights, optimizer and pipeline", p->task);
            return -1;
        }
        p->mterm = as_malloc((size_t)(3 * p->K + 1) * sizeof *p->mterm);
        for (int j = 0; j < 3; j++) {
            double *v;
            char key[32];
            snprintf(key, sizeof key, "mem_terms.%s", term[j]);
            const msgpack_object *a = as_obj_get(o, term[j]);
            if (!a) {
                snprintf(err, errlen, "plan of task %" PRId64 ": '%s' is missing", p->task, key);
                return -1;
            }
            if (read_nums(a, key, p->K, "shard", p, &v, err, errlen)) return -1;
            if (!v) {
                snprintf(err, errlen, "plan of task %" PRId64 ": '%s' is nil", p->task, key);
                return -1;
            }
            for (int64_t k = 0; k < p->K; k++) {
                if (!(v[k] >= 0 && v[k] < 1e18) || v[k] != floor(v[k])) {
                    snprintf(err, errlen, "plan of task %" PRId64 ": %s[%" PRId64 "] is not a byte count >= 0", p->task, key, k);
                    free(v);
                    return -1;
                }
                p->mterm[j * p->K + k] = (uint64_t)v[k];
            }
            free(v);
        }
    }
    return 0;
}

static int read_planner(const msgpack_object *rec, as_eval_plan *p, int flags, char *err, size_t errlen)
{
    if (read_nums(flags & AS_EVAL_READ_NO_PRED ? NULL : as_obj_get(rec, "pred_ms"), "pred_ms", p->K, "shard", p, &p->pred,
                  err, errlen) ||
        read_nums(as_obj_get(rec, "item_pred_ms"), "item_pred_ms", p->T, "entry of 'tables'", p, &p->item_pred, err, errlen))
        return -1;
    /* predictions are costs: the cost model's softplus never goes below 0 */
    for (int j = 0; j < 2; j++) {
        const double *v = j ? p->item_pred : p->pred;
        for (int64_t i = 0; v && i < (j ? p->T : p->K); i++)
            if (v[i] < 0) {
                snprintf(err, errlen, "plan of task %" PRId64 ": %s[%" PRId64 "] is negative (%g ms): a predicted cost is >= 0",
                         p->task, j ? "item_pred_ms" : "pred_ms", i, v[i]);
                return -1;
            }
    }
    int64_t cap;
    const msgpack_object *c = as_obj_get(rec, "mem_cap");
    if (c && c->type != MSGPACK_OBJECT_NIL) {
        if (as_obj_i64(rec, "mem_cap", &cap) || cap < 0) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'mem_cap' is not a byte count (an integer >= 0)", p->task);
            return -1;
        }
        if (cap > 0) p->mem_cap = (uint64_t)cap;
    }
    if (read_names(rec, p, err, errlen) || read_mem_terms(rec, p, err, errlen)) return -1;
    const msgpack_object *o = as_obj_get(rec, "model_quality");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        char e2[256];
        if (as_mgate_read(o, &p->mq, e2, sizeof e2)) {
            snprintf(err, errlen, "plan of task %" PRId64 ": %s", p->task, e2);
            return -1;
        }
        p->has_mq = 1;
    }
    return 0;
}

/* the entries p places on shard k alone (a measured 0 is only an empty shard's); its
 * data-parallel entries are not counted: a shard's slice of the batch is empty when the
 * batch has fewer bags than the plan has shards (as_plan_dp_bags), and nothing is looked up */
static int64_t shard_entries(const as_eval_plan *p, int64_t k)
{
    int64_t n = 0;
    for (int64_t i = 0; i < p->T; i++) n += p->assign[i] == k;
    return n;
}

/* as-bench --passes (docs/FORMAT.md): cost_pass_ms, a list of 2..AS_EVAL_PASS_MAX passes,
 * each a list of K costs (numbers >= 0, or nil: unmeasured), and cost_pass_spread, K
 * numbers >= 0 or nil; each may be absent or nil */
static int read_passes(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "cost_pass_ms");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 2 || o->via.array.size > AS_EVAL_PASS_MAX) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_pass_ms' must be a list of 2 to %d passes", p->task,
                     AS_EVAL_PASS_MAX);
            return -1;
        }
        const int P = (int)o->via.array.size;
        p->pass_cost = as_malloc((size_t)P * (size_t)(p->K ? p->K : 1) * sizeof *p->pass_cost);
        p->npass = P;
        for (int q = 0; q < P; q++) {
            const msgpack_object *a = &o->via.array.ptr[q];
            if (a->type != MSGPACK_OBJECT_ARRAY || (int64_t)a->via.array.size != p->K) {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_pass_ms[%d] must be a list with one entry per shard",
                         p->task, q);
                return -1;
            }
            for (int64_t k = 0; k < p->K; k++) {
                double *v = &p->pass_cost[(int64_t)q * p->K + k];
                int rc = as_obj_num(&a->via.array.ptr[k], v);
                if (rc < 0 || (!rc && !(isfinite(*v) && *v >= 0))) {
                    snprintf(err, errlen, "plan of task %" PRId64 ": cost_pass_ms[%d][%" PRId64 "] is not a number >= 0 or nil",
                             p->task, q, k);
                    return -1;
                }
                if (rc) *v = NAN;
                else if (*v == 0) {
                    /* as cost_ms: 0 is an empty shard's (as-bench measures none) */
                    const int64_t n = shard_entries(p, k);
                    if (n) {
                        snprintf(err, errlen, "plan of task %" PRId64 ": cost_pass_ms[%d][%" PRId64 "] is 0 for a shard of %" PRId64
                                 " entries: a measured time is above 0 (0 is an empty shard's, nil an unmeasured one's); bad data",
                                 p->task, q, k, n);
                        return -1;
                    }
                }
            }
        }
    }
    o = as_obj_get(rec, "cost_pass_spread");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->K) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_pass_spread' must be a list with one entry per shard", p->task);
            return -1;
        }
        p->pass_spread = as_malloc((size_t)(p->K ? p->K : 1) * sizeof *p->pass_spread);
        for (int64_t k = 0; k < p->K; k++) {
            int rc = as_obj_num(&o->via.array.ptr[k], &p->pass_spread[k]);
            if (rc < 0 || (!rc && !(isfinite(p->pass_spread[k]) && p->pass_spread[k] >= 0))) {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_pass_spread[%" PRId64 "] is not a number >= 0 or nil", p->task, k);
                return -1;
            }
            if (rc) p->pass_spread[k] = NAN;
        }
    }
    return 0;
}

/* the noise fields of as-bench (docs/FORMAT.md): cost_spread, cost_noisy, noise_threshold;
 * each may be absent or nil (unknown) */
static int read_noise(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "cost_spread");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->K) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_spread' must be a list with one entry per shard", p->task);
            return -1;
        }
        p->spread = as_malloc((size_t)(p->K ? p->K : 1) * sizeof *p->spread);
        for (int64_t k = 0; k < p->K; k++) {
            int rc = as_obj_num(&o->via.array.ptr[k], &p->spread[k]);
            if (rc < 0 || (!rc && !(isfinite(p->spread[k]) && p->spread[k] >= 0))) {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_spread[%" PRId64 "] is not a number >= 0 or nil", p->task, k);
                return -1;
            }
        }
    }
    o = as_obj_get(rec, "cost_noisy");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->K) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_noisy' must be a list with one entry per shard", p->task);
            return -1;
        }
        p->noisy = as_malloc((size_t)(p->K ? p->K : 1));
        for (int64_t k = 0; k < p->K; k++) {
            const msgpack_object *e = &o->via.array.ptr[k];
            if (e->type == MSGPACK_OBJECT_BOOLEAN) p->noisy[k] = e->via.boolean;
            else if (e->type == MSGPACK_OBJECT_NIL) p->noisy[k] = 0;
            else {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_noisy[%" PRId64 "] is not a bool", p->task, k);
                return -1;
            }
        }
    }
    o = as_obj_get(rec, "noise_threshold");
    if (o) {
        int rc = as_obj_num(o, &p->noise_threshold);
        if (rc < 0 || (!rc && !(isfinite(p->noise_threshold) && p->noise_threshold >= 0))) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'noise_threshold' is not a number >= 0 or nil", p->task);
            return -1;
        }
    }
    return 0;
}

/* mem_bytes when present (and not nil): a list of integers, one per shard, negative read
 * as 0; 0, or -1 with err */
static int read_mem(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    int64_t nm;
    int64_t *mem;
    const msgpack_object *o = as_obj_get(rec, "mem_bytes");
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (get_ints(rec, "mem_bytes", &mem, &nm)) {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'mem_bytes' must be a list of integers, one per shard", p->task);
        return -1;
    }
    if (nm != p->K) { free(mem); snprintf(err, errlen, "plan of task %" PRId64 ": 'mem_bytes' must have one entry per shard", p->task); return -1; }
    for (int64_t k = 0; k < p->K; k++)
        if (mem[k] < 0) {
            snprintf(err, errlen, "plan of task %" PRId64 ": mem_bytes[%" PRId64 "] is %" PRId64 ", not a byte count >= 0",
                     p->task, k, mem[k]);
            free(mem);
            return -1;
        }
    p->mem = as_malloc((size_t)p->K * sizeof *p->mem);
    for (int64_t k = 0; k < p->K; k++) p->mem[k] = (uint64_t)mem[k];
    free(mem);
    return 0;
}

/* the data-parallel fields: as-bench's cost_dp_ms (each shard's part of cost_ms that its
 * data-parallel slices took: numbers >= 0 or nil, none above its shard's cost_ms; skipped
 * with AS_EVAL_READ_NO_COSTS) and as-plan's comm_ar_bytes (as comm_in_bytes); both absent
 * or nil in plans from before them. A plan without data-parallel entries has none of
 * either: a value above 0 there is bad data. 0, or -1 with err */
static int read_dp(const msgpack_object *rec, as_eval_plan *p, int flags, char *err, size_t errlen)
{
    if (read_comm(rec, "comm_ar_bytes", p, &p->comm_ar, err, errlen)) return -1;
    for (int64_t k = 0; p->comm_ar && !p->ndp && k < p->K; k++)
        if (p->comm_ar[k] > 0) {
            snprintf(err, errlen, "plan of task %" PRId64 ": comm_ar_bytes[%" PRId64 "] is %.0f but the plan has no "
                     "data-parallel entries (assign -2) to all-reduce", p->task, k, p->comm_ar[k]);
            return -1;
        }
    const msgpack_object *o = flags & AS_EVAL_READ_NO_COSTS ? NULL : as_obj_get(rec, "cost_dp_ms");
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != p->K) {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_dp_ms' must be a list with one entry per shard", p->task);
        return -1;
    }
    p->cost_dp = as_malloc((size_t)(p->K ? p->K : 1) * sizeof *p->cost_dp);
    for (int64_t k = 0; k < p->K; k++) {
        double *v = &p->cost_dp[k];
        int rc = as_obj_num(&o->via.array.ptr[k], v);
        if (rc < 0 || (!rc && !(isfinite(*v) && *v >= 0))) {
            snprintf(err, errlen, "plan of task %" PRId64 ": cost_dp_ms[%" PRId64 "] is not a number >= 0 or nil", p->task, k);
            return -1;
        }
        if (rc) { *v = NAN; continue; }
        if (*v > 0 && !p->ndp) {
            snprintf(err, errlen, "plan of task %" PRId64 ": cost_dp_ms[%" PRId64 "] is %g ms but the plan has no "
                     "data-parallel entries (assign -2); bad data", p->task, k, *v);
            return -1;
        }
        /* a part of the shard's measured cost (its other entries' kernel plus this): never
           above it */
        if (p->cost_kind == 1 && isfinite(p->cost[k]) && *v > p->cost[k] * (1 + 1e-9)) {
            snprintf(err, errlen, "plan of task %" PRId64 ": cost_dp_ms[%" PRId64 "] = %g ms is above cost_ms[%" PRId64
                     "] = %g ms, of which it is a part; bad data", p->task, k, *v, k, p->cost[k]);
            return -1;
        }
    }
    return 0;
}

/* cost_ms (NaN where absent or nil) with its cost_kind and cost_device; a negative
 * estimate counts as 0 (clamped), a negative measurement is bad data, and so is a measured
 * 0 on a shard with entries (0 is an empty shard's); 0, or -1 with err */
static int read_costs(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    p->cost = as_malloc((size_t)p->K * sizeof *p->cost);
    for (int64_t k = 0; k < p->K; k++) p->cost[k] = NAN;
    const msgpack_object *c = as_obj_get(rec, "cost_ms");
    if (!c || c->type == MSGPACK_OBJECT_NIL) return 0;
    if (c->type != MSGPACK_OBJECT_ARRAY || (int64_t)c->via.array.size != p->K) {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_ms' must be a list with one entry per shard", p->task);
        return -1;
    }
    char kind[32] = "";
    as_obj_str(rec, "cost_kind", kind, sizeof kind);
    if (!strcmp(kind, "measured")) p->cost_kind = 1;
    else if (!strcmp(kind, "estimated")) p->cost_kind = 2;
    else {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_ms' without a cost_kind of \"measured\" or \"estimated\"", p->task);
        return -1;
    }
    for (int64_t k = 0; k < p->K; k++) {
        int rc = as_obj_num(&c->via.array.ptr[k], &p->cost[k]);
        if (rc > 0) continue;   /* nil: not measured, stays NaN */
        if (rc < 0) {
            snprintf(err, errlen, "plan of task %" PRId64 ": cost_ms[%" PRId64 "] is not a number or nil", p->task, k);
            return -1;
        }
        if (!isfinite(p->cost[k])) {
            snprintf(err, errlen, "plan of task %" PRId64 ": cost_ms[%" PRId64 "] is not finite (an unmeasured shard is nil)", p->task, k);
            return -1;
        }
        if (p->cost[k] < 0) {
            if (p->cost_kind == 1) {
                snprintf(err, errlen, "plan of task %" PRId64 ": measured cost_ms[%" PRId64 "] is negative (%g ms): a measured "
                         "time cannot be; bad data", p->task, k, p->cost[k]);
                return -1;
            }
            p->cost[k] = 0;   /* an unconstrained cost model's estimate: no shard costs less than nothing */
            p->clamped++;
        }
        if (p->cost[k] == 0 && p->cost_kind == 1) {
            /* 0 is an empty shard's cost (as-bench measures none); a shard with entries takes time */
            const int64_t n = shard_entries(p, k);
            if (n) {
                snprintf(err, errlen, "plan of task %" PRId64 ": measured cost_ms[%" PRId64 "] is 0 for a shard of %" PRId64
                         " entries: a measured time is above 0 (0 is an empty shard's, nil an unmeasured one's); bad data",
                         p->task, k, n);
                return -1;
            }
        }
    }
    if (read_name(rec, "cost_device", p->device, sizeof p->device, p, err, errlen) ||
        read_name(rec, "cost_weights_type", p->wtype, sizeof p->wtype, p, err, errlen) ||
        read_name(rec, "cost_optimizer", p->optim, sizeof p->optim, p, err, errlen))
        return -1;
    return 0;
}

int as_eval_plan_read(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    return as_eval_plan_read_ex(rec, p, 0, err, errlen);
}

int as_eval_plan_check(const msgpack_object *rec, int flags, char *err, size_t errlen)
{
    as_eval_plan p;
    if (as_eval_plan_read_ex(rec, &p, flags, err, errlen)) return -1;
    as_eval_plan_free(&p);
    return 0;
}

int as_eval_plan_read_ex(const msgpack_object *rec, as_eval_plan *p, int flags, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->seed = -1;
    p->noise_threshold = NAN;
    p->floor = p->over_floor = p->floor_margin = NAN;
    p->at_floor = -1;
    as_planrec pr;
    if (as_planrec_read(rec, &pr, err, errlen)) return -1;
    p->task = pr.task;
    p->K = pr.shards;
    p->T = pr.n;
    p->tables = pr.tables;
    p->assign = pr.assign;
    p->pieces = pr.pieces;
    p->floor_unknown = p->T;
    p->ndp = pr.ndp;
    int unplaced = pr.unplaced > 0;
    if (read_labels(rec, p, pr.has_task, flags, err, errlen)) goto bad;
    as_obj_i64(rec, "seed", &p->seed);
    const msgpack_object *fe = as_obj_get(rec, "feasible");
    if (fe && fe->type == MSGPACK_OBJECT_BOOLEAN) p->feasible = fe->via.boolean && !unplaced;
    else p->feasible = !unplaced;
    if (read_mem(rec, p, err, errlen)) goto bad;
    if (!(flags & AS_EVAL_READ_NO_COSTS)) {
        if (read_costs(rec, p, err, errlen) || read_noise(rec, p, err, errlen) || read_passes(rec, p, err, errlen)) goto bad;
    } else {
        p->cost = as_malloc((size_t)p->K * sizeof *p->cost);
        for (int64_t k = 0; k < p->K; k++) p->cost[k] = NAN;
    }
    if (read_comm(rec, "comm_in_bytes", p, &p->comm_in, err, errlen) ||
        read_comm(rec, "comm_out_bytes", p, &p->comm_out, err, errlen) || read_dp(rec, p, flags, err, errlen))
        goto bad;
    if (read_planner(rec, p, flags, err, errlen)) goto bad;
    if (!p->comm_in != !p->comm_out) {
        snprintf(err, errlen, "plan of task %" PRId64 ": 'comm_in_bytes' and 'comm_out_bytes' come together", p->task);
        goto bad;
    }
    if (read_comm(rec, "comm_rw_bytes", p, &p->comm_rw, err, errlen) ||
        read_comm(rec, "comm_cw_bytes", p, &p->comm_cw, err, errlen) ||
        read_comm(rec, "comm_rw_in_bytes", p, &p->comm_rw_in, err, errlen) ||
        read_comm(rec, "comm_cw_in_bytes", p, &p->comm_cw_in, err, errlen))
        goto bad;
    for (int64_t k = 0; (p->comm_rw_in || p->comm_cw_in) && k < p->K; k++) {
        const double *of[2] = { p->comm_rw, p->comm_cw }, *in[2] = { p->comm_rw_in, p->comm_cw_in };
        for (int j = 0; j < 2; j++)
            if (in[j] && (!of[j] || in[j][k] > of[j][k] || in[j][k] > p->comm_in[k])) {
                snprintf(err, errlen, "plan of task %" PRId64 ": %s[%" PRId64 "] is more than its %s[%" PRId64 "] or the "
                         "shard's comm_in_bytes (it is their ids' part)", p->task, j ? "comm_cw_in_bytes" : "comm_rw_in_bytes",
                         k, j ? "comm_cw_bytes" : "comm_rw_bytes", k);
                goto bad;
            }
    }
    for (int64_t k = 0; (p->comm_rw || p->comm_cw) && k < p->K; k++) {
        const double rw = p->comm_rw ? p->comm_rw[k] : 0, cw = p->comm_cw ? p->comm_cw[k] : 0;
        if (!p->comm_in || rw + cw > p->comm_in[k] + p->comm_out[k]) {
            snprintf(err, errlen, "plan of task %" PRId64 ": comm_rw_bytes[%" PRId64 "] + comm_cw_bytes[%" PRId64 "] is more "
                     "than the shard's comm_in_bytes + comm_out_bytes (they are its row and column pieces' share)", p->task, k, k);
            goto bad;
        }
    }
    return 0;
bad:
    as_eval_plan_free(p);
    return -1;
}

void as_eval_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void as_eval_md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}
