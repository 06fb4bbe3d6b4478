/* trplanread.c - as-plan --import (trplanread.h). */
#include "trplanread.h"

#include "common.h"
#include "jsonparse.h"
#include "msgobj.h"
#include "piece.h"
#include "reclimits.h"
#include "planrec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one shard of the plan: the position of its table in the task, its piece and rank */
typedef struct {
    int64_t ti;
    as_piece pc;
    int64_t rank;
} ientry;

/* one document under import */
typedef struct {
    char where[384];                /* "FILE: line 3", then ": task 7 (torchrec)" */
    char *err;
    size_t errlen;
    int64_t local;                  /* the document's local_size (0: not given) */
    int64_t odd_kernels;            /* tables of a compute_kernel other than fused or dense */
    char odd[160];                  /* the first of them: "'t3' (fused_uvm_caching)" */
} ictx;

static int fail(ictx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ictx *x, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(x->err, x->errlen, "%s: %s", x->where, msg);
    return -1;
}

/* a JSON value as a message shows it: short, one line, nothing unprintable */
static const char *show(const msgpack_object *o, char *buf, size_t len)
{
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: snprintf(buf, len, "%" PRIu64, o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: snprintf(buf, len, "%" PRId64, o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: snprintf(buf, len, "%g", o->via.f64); break;
    case MSGPACK_OBJECT_BOOLEAN: snprintf(buf, len, "%s", o->via.boolean ? "true" : "false"); break;
    case MSGPACK_OBJECT_NIL: snprintf(buf, len, "null"); break;
    case MSGPACK_OBJECT_ARRAY: snprintf(buf, len, "an array"); break;
    case MSGPACK_OBJECT_MAP: snprintf(buf, len, "an object"); break;
    case MSGPACK_OBJECT_STR: {
        size_t o2 = 0;
        if (len < 8) { snprintf(buf, len, "\"\""); break; }
        buf[o2++] = '\'';
        for (uint32_t i = 0; i < o->via.str.size && o2 < len - 5; i++) {
            const unsigned char ch = (unsigned char)o->via.str.ptr[i];
            buf[o2++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        }
        if (o2 >= len - 5) { buf[o2++] = '.'; buf[o2++] = '.'; }
        buf[o2++] = '\'';
        buf[o2] = 0;
        break;
    }
    default: snprintf(buf, len, "a value of another kind"); break;
    }
    return buf;
}

/* an integer JSON value in lo..hi into *v: 0, or -1 */
static int int_val(const msgpack_object *o, int64_t lo, int64_t hi, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (uint64_t)INT64_MAX) *v = (int64_t)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) *v = o->via.i64;
    else return -1;
    return *v < lo || *v > hi ? -1 : 0;
}

/* the integer field key of map (what: its name in messages) in lo..hi: 0, 1 absent (and
 * not required), or -1 with the error */
static int get_int(ictx *x, const msgpack_object *map, const char *key, const char *what, int64_t lo, int64_t hi,
                   int64_t *v, int required)
{
    const msgpack_object *o = as_obj_get(map, key);
    if (!o) return required ? fail(x, "'%s' is missing (an integer in %" PRId64 "..%" PRId64 ")", what, lo, hi) : 1;
    char b[64];
    if (int_val(o, lo, hi, v))
        return fail(x, "'%s' = %s is not an integer in %" PRId64 "..%" PRId64, what, show(o, b, sizeof b), lo, hi);
    return 0;
}

/* "rank:R/cuda:D" (decimal, no sign, no leading zeros) into *rank and *dev: 0, or -1 */
static int parse_placement(const msgpack_object *o, int64_t *rank, int64_t *dev)
{
    if (o->type != MSGPACK_OBJECT_STR) return -1;
    const char *s = o->via.str.ptr, *e = s + o->via.str.size;
    int64_t v[2];
    static const char *const pre[2] = { "rank:", "/cuda:" };
    for (int q = 0; q < 2; q++) {
        const size_t pl = strlen(pre[q]);
        if ((size_t)(e - s) < pl || memcmp(s, pre[q], pl)) return -1;
        s += pl;
        if (s == e || *s < '0' || *s > '9' || (*s == '0' && s + 1 < e && s[1] >= '0' && s[1] <= '9')) return -1;
        v[q] = 0;
        for (; s < e && *s >= '0' && *s <= '9'; s++) {
            if (v[q] > (INT64_MAX - 9) / 10) return -1;
            v[q] = v[q] * 10 + (*s - '0');
        }
    }
    if (s != e) return -1;
    *rank = v[0];
    *dev = v[1];
    return 0;
}

/* the key TorchRec JSON gives table f: its name in the model, else t<id> */
static const char *table_key(const as_features *f, char *buf, size_t len)
{
    if (f->name[0]) return f->name;
    snprintf(buf, len, "t%" PRId64, f->id);
    return buf;
}

static int key_is(const msgpack_object *k, const char *s)
{
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(s) && !memcmp(k->via.str.ptr, s, k->via.str.size);
}

/* the sharding types TorchRec writes; what each requires of its shards */
enum { ST_TABLE, ST_COLUMN, ST_ROW, ST_GRID };
static int sharding_kind(const msgpack_object *o)
{
    static const struct { const char *name; int kind; } types[] = {
        { "table_wise", ST_TABLE }, { "column_wise", ST_COLUMN }, { "table_column_wise", ST_COLUMN },
        { "row_wise", ST_ROW }, { "table_row_wise", ST_ROW }, { "grid_shard", ST_GRID },
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (key_is(o, types[i].name)) return types[i].kind;
    return -1;
}

/* append one entry */
static void push(ientry **e, int64_t *n, int64_t *cap, ientry v)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *e = as_realloc(*e, (size_t)*cap * sizeof **e);
    }
    (*e)[(*n)++] = v;
}

/* a data_parallel table (TorchRec: no sharding_spec, the table on every rank): "ranks"
 * absent or every rank 0..K-1 once, "shards" absent, null or empty; one entry on AS_DP */
static int read_dp(ictx *x, const msgpack_object *s, int64_t ti, const char *name, int64_t K, ientry **e, int64_t *n,
                   int64_t *cap)
{
    char b[96];
    const msgpack_object *sh = as_obj_get(s, "shards"), *rk = as_obj_get(s, "ranks");
    if (sh && sh->type != MSGPACK_OBJECT_NIL && !(sh->type == MSGPACK_OBJECT_ARRAY && sh->via.array.size == 0))
        return fail(x, "table '%s': data_parallel with 'shards' %s: a data_parallel table has none (it is whole on every rank)",
                    name, show(sh, b, sizeof b));
    if (rk) {
        if (rk->type != MSGPACK_OBJECT_ARRAY || (int64_t)rk->via.array.size != K)
            return fail(x, "table '%s': data_parallel: 'ranks' is not an array of all %" PRId64 " ranks", name, K);
        uint8_t *got = as_calloc((size_t)K, 1);
        for (uint32_t j = 0; j < rk->via.array.size; j++) {
            int64_t r;
            if (int_val(&rk->via.array.ptr[j], 0, K - 1, &r) || got[r]) {
                free(got);
                return fail(x, "table '%s': data_parallel: ranks[%u] = %s is not a rank of 0..%" PRId64 " listed once", name, j,
                            show(&rk->via.array.ptr[j], b, sizeof b), K - 1);
            }
            got[r] = 1;
        }
        free(got);
    }
    push(e, n, cap, (ientry){ ti, AS_PIECE_WHOLE, AS_DP });
    return 0;
}

/* shards[j]'s rank (of table name, world_size K) from its placement pl: "rank:R/cuda:D" with R
 * in 0..K-1, R its ranks[j] (rj; NULL: not checked), and, when the document gives
 * local_size L, D = R % L, the device TorchRec places rank R on (as pipelines/torchrec_plan.py
 * --check requires); 0, or -1 with the error */
static int shard_rank(ictx *x, const msgpack_object *pl, const msgpack_object *rj, const char *name, uint32_t j, int64_t K,
                      int64_t *rank)
{
    char b[96];
    int64_t dev, rr;
    if (!pl || parse_placement(pl, rank, &dev))
        return fail(x, "table '%s': shards[%u]: 'placement' %s is not \"rank:R/cuda:D\"", name, j,
                    pl ? show(pl, b, sizeof b) : "(missing)");
    if (*rank >= K)
        return fail(x, "table '%s': shards[%u]: placement %s: rank %" PRId64 " is outside 0..%" PRId64 " (world_size %" PRId64 ")",
                    name, j, show(pl, b, sizeof b), *rank, K - 1, K);
    if (rj && (int_val(rj, 0, INT64_MAX, &rr) || rr != *rank))
        return fail(x, "table '%s': ranks[%u] = %s but shards[%u] is placed on rank %" PRId64, name, j, show(rj, b, sizeof b), j,
                    *rank);
    if (x->local > 0 && dev != *rank % x->local)
        return fail(x, "table '%s': shards[%u]: placement %s is not rank:%" PRId64 "/cuda:%" PRId64 ": TorchRec places rank %"
                    PRId64 " on its host's GPU %" PRId64 " (rank %% local_size %" PRId64 ")", name, j, show(pl, b, sizeof b),
                    *rank, *rank % x->local, *rank, *rank % x->local, x->local);
    return 0;
}

/* the shards of task table ti (features f, key name) from its sharding s, appended to *e */
static int read_table(ictx *x, const msgpack_object *s, int64_t ti, const as_features *f, const char *name, int64_t K,
                      ientry **e, int64_t *n, int64_t *cap)
{
    char b[96];
    if (s->type != MSGPACK_OBJECT_MAP) return fail(x, "table '%s': its sharding is not a JSON object", name);
    const msgpack_object *st = as_obj_get(s, "sharding_type");
    if (!st) return fail(x, "table '%s': 'sharding_type' is missing", name);
    if (key_is(st, "data_parallel")) return read_dp(x, s, ti, name, K, e, n, cap);
    const int kind = sharding_kind(st);
    if (kind < 0)
        return fail(x, "table '%s': sharding_type %s is not table_wise, column_wise, table_column_wise, row_wise, "
                    "table_row_wise or grid_shard", name, show(st, b, sizeof b));
    const msgpack_object *ck = as_obj_get(s, "compute_kernel");
    if (ck && ck->type != MSGPACK_OBJECT_STR) return fail(x, "table '%s': 'compute_kernel' is not a string", name);
    if (ck && !key_is(ck, "fused") && !key_is(ck, "dense") && !x->odd_kernels++)
        snprintf(x->odd, sizeof x->odd, "'%s' (%s)", name, show(ck, b, sizeof b));
    const msgpack_object *sh = as_obj_get(s, "shards");
    if (!sh || sh->type != MSGPACK_OBJECT_ARRAY || sh->via.array.size < 1 || sh->via.array.size > AS_PIECES_PER_TABLE)
        return fail(x, "table '%s': 'shards' is not an array of 1..%d shards", name, AS_PIECES_PER_TABLE);
    const uint32_t ns = sh->via.array.size;
    const msgpack_object *rk = as_obj_get(s, "ranks");
    if (!rk || rk->type != MSGPACK_OBJECT_ARRAY || rk->via.array.size != ns)   /* as torchrec_plan.py --check */
        return fail(x, "table '%s': 'ranks' is %s an array of %u ranks, one per shard", name, rk ? "not" : "missing, not", ns);
    int64_t used = 0;
    const int64_t n0 = *n;
    for (uint32_t j = 0; j < ns; j++) {
        const msgpack_object *o = &sh->via.array.ptr[j];
        if (o->type != MSGPACK_OBJECT_MAP) return fail(x, "table '%s': shards[%u] is not a JSON object", name, j);
        const msgpack_object *off = as_obj_get(o, "shard_offsets"), *sz = as_obj_get(o, "shard_sizes"),
                             *pl = as_obj_get(o, "placement");
        int64_t v[4];
        for (int q = 0; q < 2; q++) {
            const msgpack_object *a = q ? sz : off;
            const char *fld = q ? "shard_sizes" : "shard_offsets";
            if (!a || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != 2 ||
                int_val(&a->via.array.ptr[0], 0, INT64_MAX, &v[2 * q]) || int_val(&a->via.array.ptr[1], 0, INT64_MAX, &v[2 * q + 1]))
                return fail(x, "table '%s': shards[%u]: '%s' is not [rows, columns] of integers >= 0", name, j, fld);
        }
        const int64_t r0 = v[0], c0 = v[1], rows = v[2], cols = v[3];
        int64_t rank = 0;
        if (shard_rank(x, pl, rk ? &rk->via.array.ptr[j] : NULL, name, j, K, &rank)) return -1;
        if (r0 > f->rows || rows > f->rows - r0 || c0 > f->dim || cols > f->dim - c0)
            return fail(x, "table '%s': shards[%u]: rows %" PRId64 "..%" PRId64 " x columns %" PRId64 "..%" PRId64
                        " reach outside the table's %" PRId64 " rows x %" PRId64 " columns", name, j, r0,
                        r0 + (rows < INT64_MAX - r0 ? rows : 0), c0, c0 + (cols < INT64_MAX - c0 ? cols : 0), f->rows, f->dim);
        if (!rows || !cols) continue;   /* an empty shard (TorchRec's last row blocks) holds nothing */
        if (kind == ST_COLUMN && rows != f->rows)
            return fail(x, "table '%s': shards[%u]: a %s shard of rows %" PRId64 "..%" PRId64 ", not all %" PRId64 " rows",
                        name, j, st->via.str.ptr[0] == 'c' ? "column_wise" : "table_column_wise", r0, r0 + rows, f->rows);
        if (kind == ST_ROW && cols != f->dim)
            return fail(x, "table '%s': shards[%u]: a %s shard of columns %" PRId64 "..%" PRId64 ", not all %" PRId64 " columns",
                        name, j, st->via.str.ptr[0] == 'r' ? "row_wise" : "table_row_wise", c0, c0 + cols, f->dim);
        if (kind == ST_TABLE && ++used > 1)
            return fail(x, "table '%s': table_wise with more than one shard", name);
        as_piece pc = { c0, c0 + cols, r0, r0 + rows };
        if (as_piece_covers(&pc, f->rows, f->dim)) pc = AS_PIECE_WHOLE;
        push(e, n, cap, (ientry){ ti, pc, rank });
    }
    if (*n == n0)   /* shards of 0 rows or columns only: the table would be lost */
        return fail(x, "table '%s': every shard is empty (0 rows or columns): none holds its %" PRId64 " rows x %" PRId64
                    " columns", name, f->rows, f->dim);
    return 0;
}

/* the name of a table that is not the task's, when some features record gives it: 1 */
static int known_elsewhere(const as_plan_input *in, const msgpack_object *k)
{
    char kb[32];
    for (int64_t i = 0; i < in->ft.n; i++)
        if (key_is(k, table_key(&in->ft.f[i], kb, sizeof kb))) return 1;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    const ientry *x = a, *y = b;
    if (x->ti != y->ti) return x->ti < y->ti ? -1 : 1;
    int c = as_piece_cmp(&x->pc, &y->pc);
    if (c) return c;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* the module's tables of task t (features f) into entries, sorted (task order, piece
 * order); every table of the task present */
static int read_tables(ictx *x, const as_plan_input *in, const as_taskrec *t, const as_features **f,
                       const msgpack_object *tabs, int64_t K, ientry **e, int64_t *n)
{
    char kb[32], b[96];
    int64_t cap = 0;
    *e = NULL;
    *n = 0;
    if (tabs->type != MSGPACK_OBJECT_MAP) return fail(x, "'plan' is not {module: {table: sharding}}");
    uint8_t *seen = as_calloc((size_t)(t->ntables ? t->ntables : 1), 1);
    int rc = 0;
    for (uint32_t i = 0; i < tabs->via.map.size && !rc; i++) {
        const msgpack_object *k = &tabs->via.map.ptr[i].key;
        int64_t ti = -1;
        for (int64_t q = 0; q < t->ntables && ti < 0; q++)
            if (!seen[q] && key_is(k, table_key(f[q], kb, sizeof kb))) ti = q;
        if (ti < 0) {
            rc = known_elsewhere(in, k)
                ? fail(x, "table %s: not one of task %" PRId64 "'s tables", show(k, b, sizeof b), t->id)
                : fail(x, "table %s: unknown: no features record of the input names it (a model config's table name, "
                       "else t<id>)", show(k, b, sizeof b));
            break;
        }
        seen[ti] = 1;
        rc = read_table(x, &tabs->via.map.ptr[i].val, ti, f[ti], table_key(f[ti], kb, sizeof kb), K, e, n, &cap);
    }
    for (int64_t q = 0; q < t->ntables && !rc; q++)
        if (!seen[q])
            rc = fail(x, "table '%s' of task %" PRId64 " is missing from the plan", table_key(f[q], kb, sizeof kb), t->id);
    free(seen);
    if (!rc) qsort(*e, (size_t)*n, sizeof **e, entry_cmp);
    return rc;
}

/* every table's shards tile it exactly (no overlap, no gap, nothing outside) */
static int check_tiles(ictx *x, const as_plan_input *in, const ientry *e, int64_t n, const int64_t *ids,
                       const as_piece *pcs, const as_features **f)
{
    char e2[512], kb[32];
    for (int64_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && e[b].ti == e[a].ti; b++) {}
        if (as_pieces_check_cover(ids + a, pcs + a, b - a, e2, sizeof e2) ||
            as_featidx_check_cover(&in->ft, ids + a, pcs + a, b - a, e2, sizeof e2))
            return fail(x, "table '%s': shards do not tile it exactly: %s", table_key(f[e[a].ti], kb, sizeof kb), e2);
    }
    return 0;
}

/* the plan's 2D rank map: --world-size, else the document's dmp_collection world_size */
static int doc_world(ictx *x, const as_plan_run_cfg *c, const msgpack_object *root, int64_t K, int64_t *world)
{
    *world = c->world;
    if (c->world) {
        if (c->world < K || c->world % K)
            return fail(x, "--world-size %" PRId64 " is not a multiple of its %" PRId64 " shards", c->world, K);
        return 0;
    }
    const msgpack_object *d = as_obj_get(root, "dmp_collection");
    if (!d) return 0;
    if (d->type != MSGPACK_OBJECT_MAP) return fail(x, "'dmp_collection' is not a JSON object");
    if (get_int(x, d, "world_size", "dmp_collection.world_size", 1, 100000000, world, 1)) return -1;
    if (*world < K || *world % K)
        return fail(x, "'dmp_collection.world_size' = %" PRId64 " is not a multiple of world_size %" PRId64, *world, K);
    return 0;
}

/* the module's table map: the one entry of 'plan', under the document's 'module' when it
 * names one */
static int doc_module(ictx *x, const msgpack_object *root, const msgpack_object **tabs)
{
    char b[96];
    const msgpack_object *mod = as_obj_get(root, "module"), *plan = as_obj_get(root, "plan");
    if (mod && mod->type != MSGPACK_OBJECT_STR) return fail(x, "'module' is not a string");
    if (!plan) return fail(x, "'plan' is missing");
    if (plan->type != MSGPACK_OBJECT_MAP || plan->via.map.size != 1)
        return fail(x, "'plan' is not {module: {table: sharding}} with one module");
    const msgpack_object *k = &plan->via.map.ptr[0].key;
    if (mod && (k->type != MSGPACK_OBJECT_STR || k->via.str.size != mod->via.str.size ||
                memcmp(k->via.str.ptr, mod->via.str.ptr, mod->via.str.size)))
        return fail(x, "'plan' holds module %s, not the document's 'module' %s", show(k, b, sizeof b),
                    show(mod, b + 48, sizeof b - 48));
    *tabs = &plan->via.map.ptr[0].val;
    return 0;
}

/* the document's label ("alg", default AS_TRIMPORT_DEFAULT_ALG) and its algorithm */
static int doc_label(ictx *x, const msgpack_object *root, char *label, size_t len, as_alg *alg)
{
    char why[128];
    const msgpack_object *o = as_obj_get(root, "alg");
    snprintf(label, len, "%s", AS_TRIMPORT_DEFAULT_ALG);
    if (o) {
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size < 1 || o->via.str.size >= len)
            return fail(x, "'alg' is not a label of 1..%zu bytes", len - 1);
        if (as_name_bad(o->via.str.ptr, o->via.str.size, why, sizeof why)) return fail(x, "'alg' %s", why);
        memcpy(label, o->via.str.ptr, o->via.str.size);
        label[o->via.str.size] = 0;
    }
    /* its algorithm: the label's first part when it names one of ours, else TorchRec's */
    as_plan_label l;
    as_plan_label_parse(label, &l);
    *alg = l.known ? l.alg : AS_ALG_TORCHREC;
    return 0;
}

/* one document (root) imported and written */
static int import_doc(ictx *x, as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in,
                      const msgpack_object *root)
{
    if (root->type != MSGPACK_OBJECT_MAP) return fail(x, "not a JSON object (a TorchRec plan of as-plan --format torchrec)");
    int64_t tid, ws, ls;
    char label[64];
    as_alg alg = AS_ALG_TORCHREC;
    if (get_int(x, root, "task", "task", 0, INT64_MAX, &tid, 1) || doc_label(x, root, label, sizeof label, &alg))
        return -1;
    const as_taskrec *t = NULL;
    for (int64_t i = 0; i < in->ntasks && !t; i++)
        if (in->tasks[i].id == tid) t = &in->tasks[i];
    if (!t) return fail(x, "task %" PRId64 " (%s): not in the input (no task record of that id)", tid, label);
    const size_t wl = strlen(x->where);
    snprintf(x->where + wl, sizeof x->where - wl, ": task %" PRId64 " (%s)", tid, label);
    const int64_t K = c->shards ? c->shards : t->shards;
    /* local_size as pipelines/torchrec_plan.py --check bounds it: 1..AS_MAX_SHARDS */
    const int lrc = get_int(x, root, "local_size", "local_size", 1, as_limit(AS_LIM_SHARDS), &ls, 0);
    if (get_int(x, root, "world_size", "world_size", 1, INT64_MAX, &ws, 1) || lrc < 0) return -1;
    x->local = lrc == 0 ? ls : 0;
    if (ws != K)
        return fail(x, "'world_size' = %" PRId64 " but the task has %" PRId64 " shards%s", ws, K, c->shards ? " (--shards)" : "");
    int64_t world;
    const msgpack_object *tabs = NULL;
    if (doc_world(x, c, root, K, &world) || doc_module(x, root, &tabs)) return -1;
    const as_features **f = as_malloc((size_t)(t->ntables ? t->ntables : 1) * sizeof *f);
    char e2[768];
    if (as_plan_task_features(in, t, f, e2, sizeof e2)) {
        free(f);
        return fail(x, "%s", e2);
    }
    ientry *e;
    int64_t n;
    int rc = read_tables(x, in, t, f, tabs, K, &e, &n);
    if (!rc && (n > as_limit(AS_LIM_TABLES) || as_check_pairs(n, K, e2, sizeof e2)))
        rc = fail(x, "%" PRId64 " shards of tables: more than a plan record may hold (%s)", n,
                  n > as_limit(AS_LIM_TABLES) ? "AS_MAX_TABLES" : e2);
    int64_t *ids = NULL, *assign = NULL;
    as_piece *pcs = NULL;
    if (!rc) {
        ids = as_malloc((size_t)(n ? n : 1) * sizeof *ids);
        assign = as_malloc((size_t)(n ? n : 1) * sizeof *assign);
        pcs = as_malloc((size_t)(n ? n : 1) * sizeof *pcs);
        for (int64_t i = 0; i < n; i++) {
            ids[i] = t->tables[e[i].ti];
            assign[i] = e[i].rank;
            pcs[i] = e[i].pc;
        }
        rc = check_tiles(x, in, e, n, ids, pcs, f);
    }
    if (!rc) {
        /* finalised as every plan placed elsewhere is (lib/plan/planrun.h): a split plan's label
           carries the split search's communication charge, as the planner's would */
        as_planrec pr = { tid, 1, K, n, ids, assign, 0, as_pieces_any(pcs, n) ? pcs : NULL, 0 };
        for (int64_t i = 0; i < n; i++) pr.ndp += assign[i] == AS_DP;
        const uint64_t mcap = c->cap_given ? c->mem_cap : t->mem_cap;
        as_plan_label l;
        as_plan_label_parse(label, &l);
        const double comm = l.split && c->split_cfg ? c->split_cfg->comm_gbps : 0;
        as_plan_placed pp = { .label = label, .alg = alg, .mem_cap = mcap,
                              .cap_why = c->cap_given ? " of --mem-cap" : " of its task", .comm_gbps = comm,
                              .seed = c->seed, .split = t->split, .world = world, .verbatim = 1 };
        if (x->odd_kernels)
            as_err("warning: %s: %" PRId64 " table%s of a compute_kernel other than fused or dense, e.g. %s: imported as "
                   "tables in GPU memory (a cache or UVM is not modelled)", x->where, x->odd_kernels,
                   x->odd_kernels == 1 ? "" : "s", x->odd);
        if (as_plan_emit_placed(st, c, in, &pr, &pp, e2, sizeof e2)) {
            x->where[wl] = 0;   /* e2 names the task and label */
            rc = fail(x, "%s", e2);
        }
    }
    free(ids); free(assign); free(pcs); free(e); free(f);
    return rc;
}

/* the next line of fp into *line (its newline cut, NUL-terminated; *cap grown as needed, to
 * at most max + 1 bytes), its length in *len: 1 a line, 0 the end of the file, 2 a line
 * longer than max bytes (read no further: /dev/zero has no newline) */
static int read_line(FILE *fp, char **line, size_t *cap, size_t *len, size_t max)
{
    size_t n = 0;
    int ch = EOF;
    while ((ch = getc_unlocked(fp)) != EOF && ch != '\n') {
        if (n == max) return 2;
        if (n + 1 >= *cap) {
            *cap = *cap ? (2 * *cap < max + 1 ? 2 * *cap : max + 1) : 4096;
            *line = as_realloc(*line, *cap);
        }
        (*line)[n++] = (char)ch;
    }
    if (ch == EOF && n == 0) return 0;
    if (!*line) *line = as_calloc(*cap = 1, 1);
    (*line)[n] = 0;
    *len = n;
    return 1;
}

int as_plan_import_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const char *file,
                       int64_t *imported, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    *imported = 0;
    const int std = !strcmp(file, "-");
    FILE *fp = std ? stdin : fopen(file, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, n = 0;
    int rc = 0, got;
    for (int64_t ln = 1; !rc && (got = read_line(fp, &line, &cap, &n, AS_TRIMPORT_MAX_LINE)); ln++) {
        ictx x = { "", err, errlen, 0, 0, "" };
        snprintf(x.where, sizeof x.where, "%s: line %" PRId64, file, ln);
        if (got == 2) {
            rc = fail(&x, "longer than %zu MiB (one TorchRec plan a line, as as-plan --format torchrec writes them)",
                      AS_TRIMPORT_MAX_LINE >> 20);
            break;
        }
        while (n && line[n - 1] == '\r') n--;
        size_t sp = 0;
        while (sp < n && (line[sp] == ' ' || line[sp] == '\t')) sp++;
        if (sp == n) continue;   /* a blank line */
        msgpack_zone zone;
        msgpack_zone_init(&zone, 4096);
        msgpack_object root;
        char e2[512];
        if (as_jsonp_parse(line, n, &zone, &root, e2, sizeof e2))
            /* jsonparse's "line 1, column C: ..." is the document's column */
            rc = fail(&x, "bad JSON: %s", strncmp(e2, "line 1, ", 8) ? e2 : e2 + 8);
        else if (!(rc = import_doc(&x, st, c, in, &root)))
            (*imported)++;
        msgpack_zone_destroy(&zone);
    }
    if (!rc && ferror(fp)) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        rc = -1;
    }
    free(line);
    if (!std) fclose(fp);
    return rc;
}
