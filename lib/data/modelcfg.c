/* modelcfg.c - model configs (as-convert --config); see modelcfg.h.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. */
#include "modelcfg.h"
#include "trmem.h"
#include "common.h"
#include "jsonparse.h"
#include "reclimits.h"
#include "stream.h"
#include "table.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MCFG_MAX_FILE ((size_t)64 << 20)

/* TorchRec's EmbOptimType names (lower case) that the memory model knows */
static const char *const optimizers[] = {
    "sgd", "exact_sgd", "adam", "partial_rowwise_adam", "adagrad", "exact_adagrad", "rowwise_adagrad",
    "exact_rowwise_adagrad",
};
/* TorchRec's PipelineType names (lower case) */
static const char *const pipelines[] = { "none", "train_base", "train_sparse_dist", "train_prefetch_sparse_dist" };

double as_mcfg_dtype_bytes(const char *name)
{
    return as_table_dtype_bytes(name);   /* the one list of data types (table.h) */
}

/* where an error is: "" at the top, "topology: ", "table 3 (\"cat_3\"): " */
typedef struct {
    char *err;
    size_t errlen;
    char where[AS_MCFG_NAME + 48];
} ctx;

__attribute__((format(printf, 3, 4)))
static int fail(ctx *x, const char *field, const char *fmt, ...)
{
    int w = snprintf(x->err, x->errlen, "%s%s%s", x->where, field ? field : "", field ? ": " : "");
    if (w >= 0 && (size_t)w < x->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err + w, x->errlen - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int key_is(const msgpack_object_kv *kv, const char *k)
{
    return kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == strlen(k) &&
           !memcmp(kv->key.via.str.ptr, k, kv->key.via.str.size);
}

/* every key of map is one of keys[] */
static int known_keys(ctx *x, const msgpack_object *map, const char *const *keys, int nkeys)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        int ok = 0;
        for (int k = 0; k < nkeys && !ok; k++) ok = key_is(kv, keys[k]);
        if (!ok) {
            const int n = kv->key.type == MSGPACK_OBJECT_STR ? (int)(kv->key.via.str.size < 64 ? kv->key.via.str.size : 64) : 0;
            char list[512] = "";
            size_t m = 0;
            for (int k = 0; k < nkeys && m < sizeof list - 40; k++)
                m += (size_t)snprintf(list + m, sizeof list - m, "%s%s", k ? ", " : "", keys[k]);
            return fail(x, NULL, "unknown field \"%.*s\" (known: %s)", n, n ? kv->key.via.str.ptr : "", list);
        }
    }
    return 0;
}

/* a string field into buf: 1 absent (buf untouched), 0 ok, -1 error */
static int get_str(ctx *x, const msgpack_object *map, const char *key, char *buf, size_t len, int required)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return required ? fail(x, key, "missing (required)") : 1;
    if (o->type != MSGPACK_OBJECT_STR) return fail(x, key, "must be a string");
    if (o->via.str.size >= len) return fail(x, key, "longer than %zu bytes", len - 1);
    if (memchr(o->via.str.ptr, 0, o->via.str.size)) return fail(x, key, "holds a NUL character");
    memcpy(buf, o->via.str.ptr, o->via.str.size);
    buf[o->via.str.size] = 0;
    return 0;
}

/* an integer field in [lo, hi]: 1 absent, 0 ok, -1 error */
static int get_int(ctx *x, const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out, int required)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return required ? fail(x, key, "missing (required)") : 1;
    int ok = 0;
    int64_t v = 0;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (uint64_t)INT64_MAX) { v = (int64_t)o->via.u64; ok = 1; }
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) { v = o->via.i64; ok = 1; }
    if (!ok || v < lo || v > hi) return fail(x, key, "must be an integer in %" PRId64 "..%" PRId64, lo, hi);
    *out = v;
    return 0;
}

/* a number field in [lo, hi]: 1 absent, 0 ok, -1 error */
static int get_num(ctx *x, const msgpack_object *map, const char *key, double lo, double hi, double *out, int required)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return required ? fail(x, key, "missing (required)") : 1;
    double v;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) v = (double)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) v = (double)o->via.i64;
    else if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32) v = o->via.f64;
    else return fail(x, key, "must be a number");
    if (!isfinite(v) || v < lo || v > hi) return fail(x, key, "must be a number in %g..%g", lo, hi);
    *out = v;
    return 0;
}

/* a string field that must be one of names[] (case-insensitive; stored lower case) */
static int get_enum(ctx *x, const msgpack_object *map, const char *key, const char *const *names, int n, char *buf,
                    size_t len)
{
    char v[64];
    int rc = get_str(x, map, key, v, sizeof v, 0);
    if (rc) return rc < 0 ? rc : 1;
    for (int i = 0; i < n; i++)
        if (!strcasecmp(v, names[i])) {
            snprintf(buf, len, "%s", names[i]);
            return 0;
        }
    char list[512] = "";
    size_t m = 0;
    for (int i = 0; i < n && m < sizeof list - 40; i++) m += (size_t)snprintf(list + m, sizeof list - m, "%s%s", i ? ", " : "", names[i]);
    return fail(x, key, "unknown value \"%s\" (one of %s)", v, list);
}

static int parse_topology(ctx *x, const msgpack_object *t, as_mcfg *c)
{
    static const char *const keys[] = { "world_size", "local_size", "hbm_gib", "batch_size_per_rank", "optimizer", "pipeline",
                                        "dense_parameters", "dense_tensor_estimate" };
    snprintf(x->where, sizeof x->where, "topology: ");
    if (t->type != MSGPACK_OBJECT_MAP) return fail(x, NULL, "must be an object");
    if (known_keys(x, t, keys, 8)) return -1;
    if (get_int(x, t, "world_size", 1, 65536, &c->world_size, 1) < 0) return -1;
    c->local_size = c->world_size;
    if (get_int(x, t, "local_size", 1, c->world_size, &c->local_size, 0) < 0) return -1;
    if (c->world_size % c->local_size) return fail(x, "local_size", "%" PRId64 " does not divide world_size %" PRId64, c->local_size, c->world_size);
    c->hbm_gib = AS_MCFG_HBM_GIB;
    if (get_num(x, t, "hbm_gib", 1.0 / 1024, 1 << 20, &c->hbm_gib, 0) < 0) return -1;
    if (get_int(x, t, "batch_size_per_rank", 1, AS_MCFG_MAX_BATCH, &c->batch_per_rank, 1) < 0) return -1;
    snprintf(c->optimizer, sizeof c->optimizer, "sgd");
    if (get_enum(x, t, "optimizer", optimizers, (int)(sizeof optimizers / sizeof optimizers[0]), c->optimizer, sizeof c->optimizer) < 0)
        return -1;
    snprintf(c->pipeline, sizeof c->pipeline, "none");
    if (get_enum(x, t, "pipeline", pipelines, (int)(sizeof pipelines / sizeof pipelines[0]), c->pipeline, sizeof c->pipeline) < 0)
        return -1;
    /* the dense part of TorchRec's reservation: at most 2^40 parameters, 2^50 bytes */
    if (get_int(x, t, "dense_parameters", 0, (int64_t)1 << 40, &c->dense_parameters, 0) < 0) return -1;
    if (get_int(x, t, "dense_tensor_estimate", 0, (int64_t)1 << 50, &c->dense_estimate, 0) < 0) return -1;
    return 0;
}

static int parse_table(ctx *x, const msgpack_object *o, int64_t i, as_mcfg_table *t)
{
    static const char *const keys[] = { "name", "num_embeddings", "embedding_dim", "feature_names", "data_type",
                                        "pooling_factor", "bag", "skew", "lookups" };
    snprintf(x->where, sizeof x->where, "table %" PRId64 ": ", i);
    if (o->type != MSGPACK_OBJECT_MAP) return fail(x, NULL, "must be an object");
    if (get_str(x, o, "name", t->name, sizeof t->name, 1) < 0) return -1;
    char why[96];
    if (as_name_bad(t->name, strlen(t->name), why, sizeof why))   /* plans and reports print it */
        return fail(x, "name", "%s", why);
    snprintf(x->where, sizeof x->where, "table %" PRId64 " (\"%s\"): ", i, t->name);
    if (known_keys(x, o, keys, 9)) return -1;
    if (get_int(x, o, "num_embeddings", 1, INT32_MAX, &t->rows, 1) < 0) return -1;
    if (get_int(x, o, "embedding_dim", 1, as_limit(AS_LIM_DIM), &t->dim, 1) < 0) return -1;
    const msgpack_object *fn = as_obj_get(o, "feature_names");
    if (fn) {
        if (fn->type != MSGPACK_OBJECT_ARRAY || fn->via.array.size == 0 || fn->via.array.size > AS_MCFG_MAX_FEATURES)
            return fail(x, "feature_names", "must be an array of 1..%d strings", AS_MCFG_MAX_FEATURES);
        t->nfeatures = (int)fn->via.array.size;
        t->features = as_calloc((size_t)t->nfeatures, sizeof *t->features);
        for (int k = 0; k < t->nfeatures; k++) {
            const msgpack_object *s = &fn->via.array.ptr[k];
            if (s->type != MSGPACK_OBJECT_STR || s->via.str.size == 0 || s->via.str.size >= AS_MCFG_NAME ||
                memchr(s->via.str.ptr, 0, s->via.str.size))
                return fail(x, "feature_names", "entry %d is not a name of 1..%d bytes", k, AS_MCFG_NAME - 1);
            if (as_name_bad(s->via.str.ptr, s->via.str.size, why, sizeof why))
                return fail(x, "feature_names", "entry %d %s", k, why);
            memcpy(t->features[k], s->via.str.ptr, s->via.str.size);
            t->features[k][s->via.str.size] = 0;
        }
    } else {
        t->nfeatures = 1;
        t->features = as_calloc(1, sizeof *t->features);
        snprintf(t->features[0], AS_MCFG_NAME, "%s", t->name);
    }
    char dt[16] = "fp32";
    if (get_str(x, o, "data_type", dt, sizeof dt, 0) < 0) return -1;
    if (!as_mcfg_dtype_bytes(dt)) return fail(x, "data_type", "unknown data type \"%s\" (fp32, fp16, bf16, int8, int4, int2)", dt);
    for (size_t k = 0; dt[k]; k++) dt[k] = (char)((dt[k] >= 'A' && dt[k] <= 'Z') ? dt[k] - 'A' + 'a' : dt[k]);
    snprintf(t->data_type, sizeof t->data_type, "%s", dt);
    t->pooling = 1.0;
    if (get_num(x, o, "pooling_factor", 0, 1e4, &t->pooling, 0) < 0) return -1;
    static const char *const bags[] = { "geometric", "fixed" };
    char bag[16] = "geometric";
    if (get_enum(x, o, "bag", bags, 2, bag, sizeof bag) < 0) return -1;
    t->fixed = !strcmp(bag, "fixed");
    if (t->fixed && t->pooling != floor(t->pooling))
        return fail(x, "bag", "\"fixed\" needs an integer pooling_factor (it is %g)", t->pooling);
    t->skew = AS_MCFG_SKEW;
    if (get_num(x, o, "skew", 0, 4, &t->skew, 0) < 0) return -1;
    const msgpack_object *lk = as_obj_get(o, "lookups");
    if (lk) {
        static const char *const lkeys[] = { "file", "table" };
        const size_t w = strlen(x->where);
        if (lk->type != MSGPACK_OBJECT_MAP) return fail(x, "lookups", "must be an object {\"file\": ..., \"table\": ...}");
        snprintf(x->where + w, sizeof x->where - w, "lookups: ");
        if (known_keys(x, lk, lkeys, 2) || get_str(x, lk, "file", t->lookups_file, sizeof t->lookups_file, 1) < 0 ||
            get_int(x, lk, "table", 0, as_limit(AS_LIM_TABLE_ID), &t->lookups_table, 1) < 0)
            return -1;
        if (!t->lookups_file[0]) return fail(x, "file", "is empty");
        x->where[w] = 0;
    }
    return 0;
}

/* table indices by name, then index; arg: the tables */
static int cmp_name(const void *a, const void *b, void *arg)
{
    const as_mcfg_table *t = arg;
    const int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const int d = strcmp(t[i].name, t[j].name);
    return d ? d : (i > j) - (i < j);
}

/* a name given twice: the later table is the error, naming the earlier */
static int dup_name(ctx *x, const as_mcfg *c)
{
    int64_t *ord = as_malloc((size_t)c->n * sizeof *ord);
    for (int64_t i = 0; i < c->n; i++) ord[i] = i;
    qsort_r(ord, (size_t)c->n, sizeof *ord, cmp_name, c->tables);
    int64_t a = -1, b = -1;
    for (int64_t k = 1; k < c->n; k++)
        if (!strcmp(c->tables[ord[k - 1]].name, c->tables[ord[k]].name) && (b < 0 || ord[k] < b)) {
            a = ord[k - 1];
            b = ord[k];
        }
    free(ord);
    if (b < 0) return 0;
    snprintf(x->where, sizeof x->where, "table %" PRId64 " (\"%s\"): ", b, c->tables[b].name);
    return fail(x, "name", "repeats the name of table %" PRId64 " (names are unique: TorchRec keys its plan by them)", a);
}

/* an optional name of the config (its own name, source, module_path: "" none) by the names'
   rule (as_name_bad, msgobj.h: the records and TorchRec's JSON carry them); 0 or -1 */
static int opt_name(ctx *x, const char *key, const char *s)
{
    char why[96];
    return s[0] && as_name_bad(s, strlen(s), why, sizeof why) ? fail(x, key, "%s", why) : 0;
}

int as_mcfg_parse(as_mcfg *c, const char *text, size_t n, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    ctx x = { err, errlen, "" };
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object root;
    int rc = -1;
    if (as_jsonp_parse(text, n, &zone, &root, err, errlen)) goto out;
    static const char *const keys[] = { "name", "source", "module_path", "topology", "tables" };
    if (root.type != MSGPACK_OBJECT_MAP) { fail(&x, NULL, "the config must be a JSON object"); goto out; }
    if (known_keys(&x, &root, keys, 5) || get_str(&x, &root, "name", c->name, sizeof c->name, 0) < 0 ||
        get_str(&x, &root, "source", c->source, sizeof c->source, 0) < 0 ||
        get_str(&x, &root, "module_path", c->module_path, sizeof c->module_path, 0) < 0 ||
        opt_name(&x, "name", c->name) || opt_name(&x, "source", c->source) || opt_name(&x, "module_path", c->module_path))
        goto out;
    const msgpack_object *topo = as_obj_get(&root, "topology"), *tabs = as_obj_get(&root, "tables");
    if (!topo) { fail(&x, "topology", "missing (required)"); goto out; }
    if (parse_topology(&x, topo, c)) goto out;
    x.where[0] = 0;
    if (!tabs) { fail(&x, "tables", "missing (required)"); goto out; }
    const int64_t maxt = as_limit(AS_LIM_TABLE_ID) + 1;
    if (tabs->type != MSGPACK_OBJECT_ARRAY || tabs->via.array.size == 0 || (int64_t)tabs->via.array.size > maxt) {
        fail(&x, "tables", "must be an array of 1..%" PRId64 " tables", maxt);
        goto out;
    }
    c->n = (int64_t)tabs->via.array.size;
    c->tables = as_calloc((size_t)c->n, sizeof *c->tables);
    for (int64_t i = 0; i < c->n; i++)
        if (parse_table(&x, &tabs->via.array.ptr[i], i, &c->tables[i])) goto out;
    /* names are unique: the tables' indices sorted by name, then neighbours */
    if (dup_name(&x, c)) goto out;
    if (as_mcfg_batch(c) < 0) {
        snprintf(x.where, sizeof x.where, "topology: ");
        fail(&x, "batch_size_per_rank", "times world_size is above %" PRId64 " lookups per bag set (as-convert --batch sets a smaller one)",
             AS_MCFG_MAX_BATCH);
        goto out;
    }
    rc = 0;
out:
    msgpack_zone_destroy(&zone);
    return rc;
}

int as_mcfg_load(as_mcfg *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = as_malloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= MCFG_MAX_FILE) {
                snprintf(err, errlen, "%s: larger than %zu MiB: not a model config", path, MCFG_MAX_FILE >> 20);
                if (f != stdin) fclose(f);
                free(buf);
                return -1;
            }
            cap *= 2;
            buf = as_realloc(buf, cap);
        }
        const size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    const int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        return -1;
    }
    char e2[1024];
    const int rc = as_mcfg_parse(c, buf, n, e2, sizeof e2);
    free(buf);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, e2);
        return rc;
    }
    /* lookups files relative to the config's folder */
    const char *slash = strrchr(path, '/');
    for (int64_t i = 0; i < c->n && slash; i++) {
        as_mcfg_table *t = &c->tables[i];
        if (!t->lookups_file[0] || t->lookups_file[0] == '/') continue;
        char full[sizeof t->lookups_file];
        const int k = snprintf(full, sizeof full, "%.*s/%s", (int)(slash - path), path, t->lookups_file);
        if (k < 0 || (size_t)k >= sizeof full) {
            snprintf(err, errlen, "%s: table %" PRId64 " (\"%s\"): lookups: file: the path is too long", path, i, t->name);
            return -1;
        }
        memcpy(t->lookups_file, full, sizeof full);
    }
    return 0;
}

void as_mcfg_free(as_mcfg *c)
{
    if (!c) return;
    for (int64_t i = 0; i < c->n && c->tables; i++) free(c->tables[i].features);
    free(c->tables);
    memset(c, 0, sizeof *c);
}

uint64_t as_mcfg_dense_bytes(const as_mcfg *c)
{
    return c->dense_estimate > 0 ? (uint64_t)c->dense_estimate : as_trmem_dense(c->dense_parameters, 4.0);
}

int64_t as_mcfg_batch(const as_mcfg *c)
{
    if (c->batch_per_rank <= 0 || c->world_size <= 0 || c->batch_per_rank > AS_MCFG_MAX_BATCH / c->world_size) return -1;
    return c->batch_per_rank * c->world_size;
}

int as_mcfg_check_lookups(const as_mcfg *c, int64_t batch, char *err, size_t errlen)
{
    const int64_t B = batch > 0 ? batch : as_mcfg_batch(c);
    if (B <= 0) return 0;   /* as_mcfg_parse refuses that batch */
    const double cap = (double)as_record_cap();
    for (int64_t i = 0; i < c->n; i++) {
        const as_mcfg_table *t = &c->tables[i];
        if (t->lookups_file[0]) continue;   /* the file's lookups: as many as it holds */
        const double n = (double)B * t->pooling;
        /* int32 indices, and offsets of int32 (int64 from 2^31 lookups) for B + 1 bags */
        const double bytes = 4.0 * n + (n >= (double)INT32_MAX ? 8.0 : 4.0) * (double)(B + 1);
        if (bytes <= cap) continue;
        char by[160];
        if (batch > 0) snprintf(by, sizeof by, "batch %" PRId64 " (--batch)", B);
        else
            snprintf(by, sizeof by, "batch_size_per_rank %" PRId64 " x world_size %" PRId64, c->batch_per_rank,
                     c->world_size);
        snprintf(err, errlen,
                 "table %" PRId64 " (\"%s\"): pooling_factor: %g x %s = %.3g lookups, a table record of about %.3g GB: above the "
                 "%.0f-byte cap on one record (AS_MAX_RECORD) that the tools read: lower the pooling_factor or the batch "
                 "(as-convert --batch)",
                 i, t->name, t->pooling, by, n, bytes / 1e9, cap);
        return -1;
    }
    return 0;
}
