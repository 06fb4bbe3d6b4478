/* reclimits.c - record limits and range-checked fields; see reclimits.h */
#include "reclimits.h"
#include "common.h"
#include "msgobj.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *env, *what;
    int64_t def, hard;
} LIM[AS_LIM_COUNT] = {
    [AS_LIM_TABLE_ID] = { "AS_MAX_TABLE_ID", "largest table id", ((int64_t)1 << 20) - 1, INT32_MAX },
    [AS_LIM_TABLES] = { "AS_MAX_TABLES", "tables per task, plan, shard or cost record", (int64_t)1 << 16, (int64_t)1 << 20 },
    [AS_LIM_SHARDS] = { "AS_MAX_SHARDS", "shards per task or plan", (int64_t)1 << 16, (int64_t)1 << 20 },
    [AS_LIM_PAIRS] = { "AS_MAX_PAIRS", "tables x shards per task or plan", (int64_t)1 << 22, (int64_t)1 << 32 },
    [AS_LIM_ROWS] = { "AS_MAX_ROWS", "rows per table", (int64_t)1 << 36, (int64_t)1 << 40 },
    [AS_LIM_DIM] = { "AS_MAX_DIM", "dim per table", (int64_t)1 << 16, (int64_t)1 << 24 },
    [AS_LIM_OBJECTS] = { "AS_MAX_OBJECTS", "msgpack objects per record", (int64_t)1 << 22, (int64_t)1 << 30 },
};

static int64_t cached[AS_LIM_COUNT];   /* 0: not read yet (a limit is never 0) */

void as_limit_reset(void)
{
    memset(cached, 0, sizeof cached);
}

/* the environment's value of limit l into *v (the default when unset or empty); -1 with err
 * when it is not a count in 1..hard */
static int env_limit(as_limit_id l, int64_t *v, char *err, size_t errlen)
{
    *v = LIM[l].def;
    const char *e = getenv(LIM[l].env);
    if (!e || !*e) return 0;
    uint64_t u;
    if (as_parse_size(e, &u) || u < 1 || u > (uint64_t)LIM[l].hard) {
        snprintf(err, errlen, "%s: '%s' is not a count in 1..%" PRId64 " (the limit on %s)", LIM[l].env, e,
                 LIM[l].hard, LIM[l].what);
        return -1;
    }
    *v = (int64_t)u;
    return 0;
}

int as_limits_check(char *err, size_t errlen)
{
    for (int l = 0; l < AS_LIM_COUNT; l++) {
        int64_t v;
        if (env_limit((as_limit_id)l, &v, err, errlen)) return -1;
    }
    return 0;
}

int64_t as_limit(as_limit_id l)
{
    if ((unsigned)l >= AS_LIM_COUNT) return 0;
    int64_t v = __atomic_load_n(&cached[l], __ATOMIC_RELAXED);
    if (v) return v;
    char err[256];
    if (env_limit(l, &v, err, sizeof err)) v = LIM[l].def;   /* refused by as_limits_check */
    __atomic_store_n(&cached[l], v, __ATOMIC_RELAXED);
    return v;
}

int64_t as_limit_default(as_limit_id l) { return (unsigned)l < AS_LIM_COUNT ? LIM[l].def : 0; }
const char *as_limit_env(as_limit_id l) { return (unsigned)l < AS_LIM_COUNT ? LIM[l].env : "?"; }
const char *as_limit_what(as_limit_id l) { return (unsigned)l < AS_LIM_COUNT ? LIM[l].what : "?"; }

/* ---- fields ---------------------------------------------------------------------------- */

/* an integer object into *v (any int that fits int64); 0 ok, -1 not an integer or too big */
static int obj_int(const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > INT64_MAX) return -1;
        *v = (int64_t)o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) { *v = o->via.i64; return 0; }
    return -1;
}

static int big_or_small(const msgpack_object *o, char *err, size_t errlen, const char *key, int64_t lo, int64_t hi)
{
    /* an integer outside int64 (a uint64 above INT64_MAX): outside any range */
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        snprintf(err, errlen, "'%s' = %" PRIu64 " is outside %" PRId64 "..%" PRId64, key, o->via.u64, lo, hi);
        return -1;
    }
    snprintf(err, errlen, "'%s' is not an integer", key);
    return -1;
}

static int field_i64(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out, as_limit_id lim,
                     int opt, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || (opt && o->type == MSGPACK_OBJECT_NIL)) {
        if (opt) return 0;
        snprintf(err, errlen, "missing field '%s'", key);
        return -1;
    }
    int64_t v;
    if (obj_int(o, &v)) return big_or_small(o, err, errlen, key, lo, hi);
    if (v < lo || v > hi) {
        if ((unsigned)lim < AS_LIM_COUNT && v > hi)
            snprintf(err, errlen, "'%s' = %" PRId64 " exceeds the limit of %" PRId64 " %s (%s raises it)", key, v, hi,
                     as_limit_what(lim), as_limit_env(lim));
        else
            snprintf(err, errlen, "'%s' = %" PRId64 " is outside %" PRId64 "..%" PRId64, key, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int as_field_i64(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err, size_t errlen)
{
    return field_i64(map, key, lo, hi, out, AS_LIM_COUNT, 0, err, errlen);
}

int as_field_i64_opt(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err, size_t errlen)
{
    return field_i64(map, key, lo, hi, out, AS_LIM_COUNT, 1, err, errlen);
}

int as_field_lim(const msgpack_object *map, const char *key, int64_t lo, as_limit_id l, int64_t *out, char *err, size_t errlen)
{
    return field_i64(map, key, lo, as_limit(l), out, l, 0, err, errlen);
}

static int num_in(const char *key, long idx, double v, double lo, double hi, char *err, size_t errlen)
{
    char name[96];
    if (idx >= 0) snprintf(name, sizeof name, "%s[%ld]", key, idx);
    else snprintf(name, sizeof name, "%s", key);
    if (!isfinite(v)) { snprintf(err, errlen, "'%s' is not finite (%g)", name, v); return -1; }
    if (v < lo || v > hi) { snprintf(err, errlen, "'%s' = %.17g is outside %g..%g", name, v, lo, hi); return -1; }
    return 0;
}

int as_field_f64(const msgpack_object *map, const char *key, double lo, double hi, double *out, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    double v;
    if (!o) { snprintf(err, errlen, "missing field '%s'", key); return -1; }
    if (as_obj_num(o, &v)) { snprintf(err, errlen, "'%s' is not a number", key); return -1; }
    if (num_in(key, -1, v, lo, hi, err, errlen)) return -1;
    *out = v;
    return 0;
}

int as_field_f64_opt(const msgpack_object *map, const char *key, double lo, double hi, double *out, char *err,
                     size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type == MSGPACK_OBJECT_NIL) return 0;
    return as_field_f64(map, key, lo, hi, out, err, errlen);
}

int as_field_str_opt(const msgpack_object *map, const char *key, const char *const *names, char *out, size_t len,
                     char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return 0;
    for (int i = 0; names[i]; i++)
        if (as_obj_streq(o, names[i]) && strlen(names[i]) < len) {
            snprintf(out, len, "%s", names[i]);
            return 0;
        }
    int n = snprintf(err, errlen, "'%s' is not", key);
    for (int i = 0; names[i] && n >= 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s \"%s\"", i ? (names[i + 1] ? "," : " or") : "", names[i]);
    return -1;
}

int as_field_f32_array(const msgpack_object *map, const char *key, int64_t n, float lo, float hi, float *out,
                       char *err, size_t errlen)
{
    as_array a;
    char e2[256];
    if (as_obj_array(map, key, &a, e2, sizeof e2)) { snprintf(err, errlen, "%s", e2); return -1; }
    if (a.dtype != AS_DT_F32 || a.ndim != 1 || a.n != n) {
        snprintf(err, errlen, "'%s' must be float32 [%" PRId64 "]", key, n);
        return -1;
    }
    memcpy(out, a.data, (size_t)n * sizeof *out);   /* little-endian host */
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(out[i]) || out[i] < lo || out[i] > hi) {
            if (!isfinite(out[i])) snprintf(err, errlen, "'%s[%" PRId64 "]' is not finite (%g)", key, i, (double)out[i]);
            else snprintf(err, errlen, "'%s[%" PRId64 "]' = %.9g is outside %g..%g", key, i, (double)out[i], (double)lo, (double)hi);
            return -1;
        }
    return 0;
}

int as_field_f64_list(const msgpack_object *map, const char *key, int n, double lo, double hi, double *out,
                      char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || (int64_t)o->via.array.size != n) {
        snprintf(err, errlen, "'%s' must be a list of %d numbers", key, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (as_obj_num(&o->via.array.ptr[i], &out[i])) { snprintf(err, errlen, "'%s[%d]' is not a number", key, i); return -1; }
        if (num_in(key, i, out[i], lo, hi, err, errlen)) return -1;
    }
    return 0;
}

int as_field_table_ids(const msgpack_object *map, const char *key, int64_t **ids, int64_t *n, char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type != MSGPACK_OBJECT_ARRAY) { snprintf(err, errlen, "'%s' must be a list of table ids", key); return -1; }
    int64_t m = o->via.array.size, maxn = as_limit(AS_LIM_TABLES), maxid = as_limit(AS_LIM_TABLE_ID);
    if (m > maxn) {
        snprintf(err, errlen, "'%s' lists %" PRId64 " tables, more than the limit of %" PRId64 " %s (%s raises it)", key, m,
                 maxn, as_limit_what(AS_LIM_TABLES), as_limit_env(AS_LIM_TABLES));
        return -1;
    }
    int64_t *v = as_malloc((size_t)(m ? m : 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++) {
        const msgpack_object *x = &o->via.array.ptr[i];
        int64_t id;
        if (obj_int(x, &id) || id < 0) {
            if (x->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                snprintf(err, errlen, "%s[%" PRId64 "] = %" PRIu64 " exceeds the largest table id %" PRId64 " (%s raises it)",
                         key, i, x->via.u64, maxid, as_limit_env(AS_LIM_TABLE_ID));
            else
                snprintf(err, errlen, "%s[%" PRId64 "] is not a table id (a non-negative integer)", key, i);
            free(v);
            return -1;
        }
        if (id > maxid) {
            snprintf(err, errlen, "%s[%" PRId64 "] = %" PRId64 " exceeds the largest table id %" PRId64 " (%s raises it)", key, i,
                     id, maxid, as_limit_env(AS_LIM_TABLE_ID));
            free(v);
            return -1;
        }
        v[i] = id;
    }
    *ids = v;
    *n = m;
    return 0;
}

int as_field_assign(const msgpack_object *map, const char *key, int64_t n, int64_t K, int64_t **out, int64_t *unplaced,
                    char *err, size_t errlen)
{
    *out = NULL;
    *unplaced = 0;
    const msgpack_object *o = as_obj_get(map, key);
    if (!o || o->type != MSGPACK_OBJECT_ARRAY) { snprintf(err, errlen, "'%s' must be a list of shards", key); return -1; }
    if ((int64_t)o->via.array.size != n) {
        snprintf(err, errlen, "'%s' has %u entries but 'tables' has %" PRId64, key, o->via.array.size, n);
        return -1;
    }
    int64_t *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        int64_t a;
        if (obj_int(&o->via.array.ptr[i], &a)) {
            snprintf(err, errlen, "%s[%" PRId64 "] is not an integer", key, i);
            free(v);
            return -1;
        }
        if (a < AS_DP || a >= K) {
            snprintf(err, errlen, "%s[%" PRId64 "] = %" PRId64 " is not a shard of 0..%" PRId64 ", -1 (unplaced) or -2 (data parallel)",
                     key, i, a, K - 1);
            free(v);
            return -1;
        }
        if (a == -1) (*unplaced)++;
        v[i] = a;
    }
    *out = v;
    return 0;
}

int as_table_bytes(int64_t rows, int64_t dim, int64_t elt, int64_t *out, char *err, size_t errlen)
{
    int64_t maxr = as_limit(AS_LIM_ROWS), maxd = as_limit(AS_LIM_DIM), e, b;
    if (rows < 1 || rows > maxr) {
        snprintf(err, errlen, "rows = %" PRId64 " is outside 1..%" PRId64 " (%s raises the limit)", rows, maxr, as_limit_env(AS_LIM_ROWS));
        return -1;
    }
    if (dim < 1 || dim > maxd) {
        snprintf(err, errlen, "dim = %" PRId64 " is outside 1..%" PRId64 " (%s raises the limit)", dim, maxd, as_limit_env(AS_LIM_DIM));
        return -1;
    }
    if (__builtin_mul_overflow(rows, dim, &e) || e > AS_MAX_TABLE_ELEMENTS || __builtin_mul_overflow(e, elt, &b)) {
        snprintf(err, errlen, "rows x dim = %" PRId64 " x %" PRId64 " exceeds the limit of 2^40 weight elements per table", rows, dim);
        return -1;
    }
    *out = b;
    return 0;
}

int as_check_pairs(int64_t T, int64_t K, char *err, size_t errlen)
{
    int64_t p, lim = as_limit(AS_LIM_PAIRS);
    if (__builtin_mul_overflow(T, K, &p) || p > lim) {
        snprintf(err, errlen, "%" PRId64 " tables x %" PRId64 " shards exceeds the limit of %" PRId64 " %s (%s raises it)", T, K,
                 lim, as_limit_what(AS_LIM_PAIRS), as_limit_env(AS_LIM_PAIRS));
        return -1;
    }
    return 0;
}

int as_parse_table_ids(const char *s, int64_t **ids, size_t *n)
{
    return as_parse_i64_list(s, 0, as_limit(AS_LIM_TABLE_ID), ids, n);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int as_table_ids_duplicate(const int64_t *ids, size_t n, int64_t *dup)
{
    if (n < 2) return 0;
    int64_t *v = as_malloc(n * sizeof *v);
    memcpy(v, ids, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_id);
    int found = 0;
    for (size_t i = 1; i < n && !found; i++)
        if (v[i] == v[i - 1]) { *dup = v[i]; found = 1; }
    free(v);
    return found;
}

/* ---- fields as they stand ------------------------------------------------------------------ */

as_fhas as_fhas_of(const msgpack_object *o, int set)
{
    return !o ? AS_F_ABSENT : o->type == MSGPACK_OBJECT_NIL ? AS_F_NIL : set ? AS_F_SET : AS_F_OTHER;
}

void as_fread_num(const msgpack_object *map, const char *key, as_fnum *f)
{
    const msgpack_object *o = as_obj_get(map, key);
    f->v = NAN;
    const int set = o && as_obj_f64(map, key, &f->v) == 0;
    f->has = as_fhas_of(o, set);
}

void as_fread_int(const msgpack_object *map, const char *key, as_fint *f)
{
    const msgpack_object *o = as_obj_get(map, key);
    f->v = 0;
    const int set = o && as_obj_i64(map, key, &f->v) == 0;
    if (!set) f->v = 0;
    f->has = as_fhas_of(o, set);
}

void as_fread_bool(const msgpack_object *map, const char *key, as_fint *f)
{
    const msgpack_object *o = as_obj_get(map, key);
    const int set = o && o->type == MSGPACK_OBJECT_BOOLEAN;
    f->v = set && o->via.boolean;
    f->has = as_fhas_of(o, set);
}

void as_fread_str(const msgpack_object *map, const char *key, as_fstr *f)
{
    const msgpack_object *o = as_obj_get(map, key);
    const int set = o && o->type == MSGPACK_OBJECT_STR;
    f->s = NULL;
    if (set) {
        char *s = as_malloc((size_t)o->via.str.size + 1);
        memcpy(s, o->via.str.ptr, o->via.str.size);
        s[o->via.str.size] = 0;
        f->s = s;
    }
    f->has = as_fhas_of(o, set);
}

void as_fstr_free(as_fstr *f)
{
    if (!f) return;
    free((char *)f->s);
    f->s = NULL;
}
