/* planrec.c - the `task` and `plan` records (docs/FORMAT.md): read and written; see
 * planrec.h. Dimension letters: T tables of a task, K shards. */
#include "planrec.h"
#include "comm.h"
#include "common.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a plan in memory -------------------------------------------------------------- */

const char *as_plan_alg_label(const as_plan *p, as_alg a, char *buf, size_t len)
{
    return as_plan_label_format(a, p && p->split, p && p->replicated, p && p->refine.done, p ? p->measured : 0, buf, len);
}

void as_plan_group(int64_t *start, int64_t *order, const int64_t *assign, int64_t n, int64_t K)
{
    for (int64_t k = 0; k <= K; k++) start[k] = 0;
    for (int64_t i = 0; i < n; i++)
        if (assign[i] >= 0) start[assign[i] + 1]++;
    for (int64_t k = 0; k < K; k++) start[k + 1] += start[k];
    if (!order) return;
    /* stable: tables of a shard keep their plan order */
    for (int64_t k = K; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
    for (int64_t i = 0; i < n; i++)
        if (assign[i] >= 0) order[start[assign[i] + 1]++] = i;
}

int64_t as_plan_ranks(int64_t world, int64_t shards, int64_t k, int64_t *out)
{
    if (shards < 1 || world < shards || world % shards) return -1;
    int64_t G = world / shards;
    if (out)
        for (int64_t i = 0; i < G; i++) out[i] = as_plan_rank(G, k, i);
    return G;
}

void as_plan_dp_bags(int64_t B, int64_t K, int64_t k, int64_t *b0, int64_t *b1)
{
    const int64_t blk = K > 0 ? (B + K - 1) / K : B;
    *b0 = k * blk < B ? k * blk : B;
    *b1 = *b0 + blk < B ? *b0 + blk : B;
}

/* ---- model_quality ------------------------------------------------------------------ */

int as_mgate_weak(double r2, double linear_r2, double min_r2)
{
    return r2 < min_r2 || (isfinite(linear_r2) && r2 < linear_r2);
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
    if (g->judged != can || (can && g->weak != as_mgate_weak(g->r2, g->linear_r2, g->min_r2))) {
        snprintf(err, errlen, "model_quality.weak is %s, which its r2, linear_r2 and min_r2 do not say",
                 !g->judged ? "nil" : g->weak ? "true" : "false");
        return -1;
    }
    return 0;
}

int as_taskrec_is(const msgpack_object *rec)
{
    return as_obj_streq(as_obj_get(rec, "kind"), "task");
}

int as_planrec_is(const msgpack_object *rec)
{
    return as_obj_streq(as_obj_get(rec, "kind"), "plan");
}

void as_taskrec_write(as_writer *w, const as_taskrec *t)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 10);
    as_pack_kv_str(pk, "kind", "task");
    as_pack_kv_i64(pk, "id", t->id);
    as_pack_kv_str(pk, "split", t->split);
    as_pack_kv_str(pk, "setting", t->setting);
    as_pack_kv_i64(pk, "shards", t->shards);
    as_pack_kv_i64(pk, "mem_cap", (int64_t)t->mem_cap);
    as_pack_str(pk, "bytes");
    msgpack_pack_uint64(pk, t->bytes);
    as_pack_kv_i64(pk, "unseen", t->unseen);
    as_pack_kv_i64(pk, "seed", (int64_t)t->seed);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)t->ntables);
    for (int64_t k = 0; k < t->ntables; k++) msgpack_pack_int64(pk, t->tables[k]);
    as_writer_end_record(w);
}

void as_taskrec_free(as_taskrec *t)
{
    if (!t) return;
    free(t->tables);
    memset(t, 0, sizeof *t);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int as_taskrec_read(const msgpack_object *rec, as_taskrec *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char e2[512];
    if (as_field_i64(rec, "id", 0, INT64_MAX, &t->id, e2, sizeof e2)) {
        snprintf(err, errlen, "task: %s", e2);
        return -1;
    }
    int64_t cap = 0;
    if (as_field_lim(rec, "shards", 1, AS_LIM_SHARDS, &t->shards, e2, sizeof e2) ||
        as_field_i64_opt(rec, "mem_cap", 0, INT64_MAX, &cap, e2, sizeof e2) ||
        as_field_table_ids(rec, "tables", &t->tables, &t->ntables, e2, sizeof e2) ||
        as_check_pairs(t->ntables, t->shards, e2, sizeof e2)) {
        snprintf(err, errlen, "task %" PRId64 ": %s", t->id, e2);
        as_taskrec_free(t);
        return -1;
    }
    t->mem_cap = (uint64_t)cap;
    if (t->ntables == 0) {
        snprintf(err, errlen, "task %" PRId64 ": 'tables' must be a non-empty list of table ids", t->id);
        as_taskrec_free(t);
        return -1;
    }
    if (as_obj_name(rec, "split", t->split, sizeof t->split, e2, sizeof e2) < 0) {   /* the names' rule (msgobj.h) */
        snprintf(err, errlen, "task %" PRId64 ": %s", t->id, e2);
        as_taskrec_free(t);
        return -1;
    }
    int64_t n = t->ntables;
    int64_t *s = as_malloc((size_t)n * sizeof *s);
    memcpy(s, t->tables, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_i64);
    for (int64_t i = 1; i < n; i++)
        if (s[i] == s[i - 1]) {
            snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " is listed twice", t->id, s[i]);
            free(s);
            as_taskrec_free(t);
            return -1;
        }
    free(s);
    return 0;
}

void as_planrec_free(as_planrec *p)
{
    if (!p) return;
    free(p->tables);
    free(p->pieces);
    free(p->assign);
    memset(p, 0, sizeof *p);
}

static int read_place(const msgpack_object *rec, as_planrec *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->task = -1;
    char e2[512];
    if (as_field_i64_opt(rec, "task", -1, INT64_MAX, &p->task, e2, sizeof e2)) {
        snprintf(err, errlen, "plan: %s", e2);
        return -1;
    }
    p->has_task = as_obj_get(rec, "task") != NULL;
    if (as_field_lim(rec, "shards", 1, AS_LIM_SHARDS, &p->shards, e2, sizeof e2) ||
        as_field_table_ids(rec, "tables", &p->tables, &p->n, e2, sizeof e2) ||
        as_check_pairs(p->n, p->shards, e2, sizeof e2) ||
        as_field_assign(rec, "assign", p->n, p->shards, &p->assign, &p->unplaced, e2, sizeof e2) ||
        as_field_pieces(rec, "pieces", p->n, &p->pieces, e2, sizeof e2) ||
        as_pieces_check_cover(p->tables, p->pieces, p->n, e2, sizeof e2)) {
        snprintf(err, errlen, "plan of task %" PRId64 ": %s", p->task, e2);
        as_planrec_free(p);
        return -1;
    }
    for (int64_t i = 0; i < p->n; i++) {
        if (p->assign[i] != AS_DP) continue;
        p->ndp++;
        if (p->pieces && !as_piece_whole(&p->pieces[i])) {
            char nb[96];
            snprintf(err, errlen, "plan of task %" PRId64 ": entry %" PRId64 " (%s) is data parallel (assign -2) but a piece: "
                     "a data-parallel table is held whole by every shard", p->task, i, as_piece_name(nb, sizeof nb, p->tables[i], &p->pieces[i]));
            as_planrec_free(p);
            return -1;
        }
    }
    return 0;
}

int as_planrec_read(const msgpack_object *rec, as_planrec *p, int flags, char *err, size_t errlen)
{
    if (read_place(rec, p, err, errlen)) return -1;
    if ((flags & AS_PLANREC_STRICT) && as_planrec_check(rec, flags & ~AS_PLANREC_STRICT, err, errlen)) {
        as_planrec_free(p);
        return -1;
    }
    return 0;
}

void as_planrec_group(const as_planrec *p, int64_t *start, int64_t *order)
{
    as_plan_group(start, order, p->assign, p->n, p->shards);
}

int as_planrec_refine_read(const msgpack_object *rec, as_plan_refined *rf, char *err, size_t errlen)
{
    static const char *const stops[] = { "optimum", "time", "steps", NULL };
    memset(rf, 0, sizeof *rf);
    const msgpack_object *o = as_obj_get(rec, "options");
    const msgpack_object *r = as_obj_get(rec, "refine");
    if (!r || r->type == MSGPACK_OBJECT_NIL) return 0;
    char e2[256], stop[16] = "optimum";
    if (r->type != MSGPACK_OBJECT_MAP) {
        snprintf(err, errlen, "'refine' is not a map");
        return -1;
    }
    if (as_field_i64(r, "moves", 0, INT64_MAX, &rf->moves, e2, sizeof e2) ||
        as_field_i64(r, "swaps", 0, INT64_MAX, &rf->swaps, e2, sizeof e2) ||
        as_field_i64_opt(r, "placed", 0, INT64_MAX, &rf->placed, e2, sizeof e2) ||
        as_field_f64_opt(r, "ms", 0, 1e15, &rf->ms, e2, sizeof e2) ||
        as_field_f64(r, "pred_max_before", 0, 1e300, &rf->max_before, e2, sizeof e2) ||
        as_field_str_opt(r, "stop", stops, stop, sizeof stop, e2, sizeof e2) ||
        as_field_f64_opt(o, "refine_ms", 0, 1e15, &rf->budget_ms, e2, sizeof e2) ||
        as_field_i64_opt(o, "refine_steps", 0, INT64_MAX, &rf->budget_steps, e2, sizeof e2)) {
        snprintf(err, errlen, "refine: %s", e2);
        return -1;
    }
    for (int i = 0; stops[i]; i++) if (!strcmp(stop, stops[i])) rf->stop = stops[i];
    rf->done = 1;
    return 0;
}

/* each shard's ids in and pooled outputs out (forward) and their gradients (backward):
   comm_in_bytes, comm_out_bytes, comm_gbps */
static void pack_comm(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m, const as_shtype *type)
{
    const int64_t K = p->shards;
    double *in = as_calloc((size_t)K + 1, sizeof *in), *out = as_calloc((size_t)K + 1, sizeof *out);
    double *rw = as_calloc((size_t)K + 1, sizeof *rw), *cw = as_calloc((size_t)K + 1, sizeof *cw);
    double *rwi = as_calloc((size_t)K + 1, sizeof *rwi), *cwi = as_calloc((size_t)K + 1, sizeof *cwi);
    int rows = 0, cols = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->assign[i] >= 0) {
            double bi, bo;
            as_comm_bytes(m->items[i], &bi, &bo);
            in[p->assign[i]] += bi;
            out[p->assign[i]] += bo;
            if (type[i] == AS_SH_RW) {
                rw[p->assign[i]] += bi + bo;
                rwi[p->assign[i]] += bi;
                rows = 1;
            } else if (type[i] == AS_SH_CW) {
                cw[p->assign[i]] += bi + bo;
                cwi[p->assign[i]] += bi;
                cols = 1;
            }
        }
    as_pack_str(pk, "comm_in_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)in[k]);
    as_pack_str(pk, "comm_out_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)out[k]);
    as_pack_kv_f64(pk, "comm_gbps", p->comm_gbps);
    if (p->comm_model) as_pack_kv_str(pk, "comm_model", p->comm_model);
    if (rows) {
        /* the row pieces' share: their ids and their partial sums (reduce-scattered) */
        as_pack_str(pk, "comm_rw_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)rw[k]);
        as_pack_str(pk, "comm_rw_in_bytes");   /* their ids' part */
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)rwi[k]);
    }
    if (cols) {
        /* the column pieces' share: TorchRec's column_wise has its own all-to-alls */
        as_pack_str(pk, "comm_cw_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)cw[k]);
        as_pack_str(pk, "comm_cw_in_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)cwi[k]);
    }
    if (p->ndp) {
        /* the all-reduce of the data-parallel tables' gradients: every shard sends as much */
        const double ar = m->dp_ar_bytes;
        as_pack_str(pk, "comm_ar_bytes");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, (int64_t)ar);
    }
    free(in);
    free(out);
    free(rw);
    free(cw);
    free(rwi);
    free(cwi);
}

/* TorchRec's memory model per shard, by term (trmem.h): mem_terms */
static void pack_mem_terms(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m)
{
    const int64_t K = p->shards;
    double *v = as_calloc((size_t)(3 * K + 1), sizeof *v);
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t k = p->assign[i];
        if ((k < 0 && k != AS_DP) || !as_features_has_mem(m->items[i])) continue;
        const as_trmem *x = &m->items[i]->mem;
        const double io = as_trmem_io(x);
        /* a data-parallel table on every shard, its buffers for 1/K of the batch */
        for (int64_t j = k == AS_DP ? 0 : k; j < (k == AS_DP ? K : k + 1); j++) {
            v[j] += x->weights;
            v[K + j] += x->optimizer;
            v[2 * K + j] += k == AS_DP ? io / (double)K : io;
        }
    }
    static const char *const term[3] = { "weights", "optimizer", "pipeline" };
    as_pack_str(pk, "mem_terms");
    msgpack_pack_map(pk, 3);
    for (int j = 0; j < 3; j++) {
        as_pack_str(pk, term[j]);
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_uint64(pk, (uint64_t)llround(v[j * K + k]));
    }
    free(v);
}

/* options, plan_ms and (refined plans) refine */
static void pack_options(msgpack_packer *pk, const as_plan *p, const as_plan_meta *m)
{
    const as_plan_refined *rf = &p->refine;
    as_pack_str(pk, "options");
    msgpack_pack_map(pk, 3 + (m->model ? 1 : 0) + (m->policy ? 1 : 0) + (m->policy && m->samples > 0 ? 1 : 0) +
                             (rf->done ? 2 : 0));
    as_pack_kv_i64(pk, "seed", (int64_t)m->seed);
    as_pack_kv_i64(pk, "mem_cap", (int64_t)m->mem_cap);
    as_pack_kv_i64(pk, "world_size", m->world);
    if (m->model) as_pack_kv_str(pk, "model", m->model);
    if (m->policy) as_pack_kv_str(pk, "policy", m->policy);
    if (m->policy && m->samples > 0) as_pack_kv_i64(pk, "samples", m->samples);
    if (rf->done) {
        as_pack_kv_f64(pk, "refine_ms", rf->budget_ms);
        as_pack_kv_i64(pk, "refine_steps", rf->budget_steps);
    }
    as_pack_kv_f64(pk, "plan_ms", p->plan_ms);
    if (rf->done) {
        as_pack_str(pk, "refine");
        msgpack_pack_map(pk, 6);
        as_pack_kv_i64(pk, "moves", rf->moves);
        as_pack_kv_i64(pk, "swaps", rf->swaps);
        as_pack_kv_i64(pk, "placed", rf->placed);
        as_pack_kv_f64(pk, "ms", rf->ms);
        as_pack_kv_f64(pk, "pred_max_before", rf->max_before);
        as_pack_kv_str(pk, "stop", rf->stop ? rf->stop : "optimum");
    }
}

/* each item's sharding type (malloc'd [n]); *rows, *cols: whether a row or a column piece
   is placed (their bytes go apart: comm_rw_bytes, comm_cw_bytes) */
static as_shtype *item_types(const as_plan *p, const as_plan_meta *m, int *rows, int *cols)
{
    as_shtype *type = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *type);
    as_comm_types(m->items, p->n, type);
    for (int64_t i = 0; i < p->n; i++) {
        *rows |= type[i] == AS_SH_RW && p->assign[i] >= 0;
        *cols |= type[i] == AS_SH_CW && p->assign[i] >= 0;
    }
    return type;
}

void as_plan_write(as_writer *w, const as_plan *p, const as_plan_meta *m)
{
    msgpack_packer *pk = as_writer_pk(w);
    int64_t K = p->shards;
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    const as_plan_refined *rf = &p->refine;
    const int pieces = p->pieces && as_pieces_any(p->pieces, p->n);
    const int comm = m->items != NULL;
    int names = 0, terms = 0;
    for (int64_t i = 0; comm && i < p->n; i++) {
        names |= m->items[i]->name[0] != 0;
        terms |= as_features_has_mem(m->items[i]);
    }
    const int ipred = m->item_pred != NULL;
    int rows = 0, cols = 0;
    as_shtype *type = comm ? item_types(p, m, &rows, &cols) : NULL;
    uint32_t nf = 14 + (p->pred ? 1 : 0) + (m->task->split[0] ? 1 : 0) + (G > 0 ? 1 : 0) +
                  (m->model_device ? 1 : 0) + (rf->done ? 1 : 0) + pieces + 3 * comm + (comm && p->ndp) + (comm && p->comm_model) + 2 * rows + 2 * cols + names + terms + ipred +
                  (m->model_quality ? 1 : 0);
    char label[64];
    msgpack_pack_map(pk, nf);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", m->task->id);
    as_pack_kv_str(pk, "alg", as_plan_meta_label(p, m, label, sizeof label));
    as_pack_kv_i64(pk, "shards", K);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)p->n);
    for (int64_t i = 0; i < p->n; i++) msgpack_pack_int64(pk, m->task->tables[i]);
    if (pieces) {
        as_pack_str(pk, "pieces");
        as_pack_pieces(pk, p->pieces, p->n);
    }
    if (comm) pack_comm(pk, p, m, type);
    free(type);
    if (names) {
        /* a model's tables by name (as-convert --config), for readers without its features */
        as_pack_str(pk, "names");
        msgpack_pack_array(pk, (size_t)p->n);
        for (int64_t i = 0; i < p->n; i++) as_pack_str(pk, m->items[i]->name);
    }
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, (size_t)p->n);
    for (int64_t i = 0; i < p->n; i++) msgpack_pack_int64(pk, p->assign[i]);
    if (ipred) {
        as_pack_str(pk, "item_pred_ms");
        msgpack_pack_array(pk, (size_t)p->n);
        for (int64_t i = 0; i < p->n; i++) msgpack_pack_double(pk, m->item_pred[i]);
    }
    as_pack_str(pk, "counts");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_int64(pk, p->count[k]);
    as_pack_str(pk, "mem_bytes");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) msgpack_pack_uint64(pk, p->mem[k]);
    as_pack_kv_i64(pk, "mem_cap", (int64_t)m->mem_cap);
    if (terms) pack_mem_terms(pk, p, m);
    if (p->pred) {
        as_pack_str(pk, "pred_ms");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) msgpack_pack_double(pk, p->pred[k]);
    }
    if (m->model_device) as_pack_kv_str(pk, "pred_device", m->model_device);
    if (m->model_quality) as_mgate_pack(pk, m->model_quality);
    as_pack_kv_i64(pk, "seed", (int64_t)m->seed);
    pack_options(pk, p, m);
    as_pack_str(pk, "feasible");
    if (p->feasible) msgpack_pack_true(pk); else msgpack_pack_false(pk);
    as_pack_str(pk, "infeasible_tables");
    msgpack_pack_array(pk, (size_t)p->ninfeasible);
    for (int64_t i = 0; i < p->ninfeasible; i++) msgpack_pack_int64(pk, p->infeasible[i]);
    if (m->task->split[0]) as_pack_kv_str(pk, "split", m->task->split);
    if (G > 0) {
        as_pack_str(pk, "ranks");
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) {
            msgpack_pack_array(pk, (size_t)G);
            for (int64_t i = 0; i < G; i++) msgpack_pack_int64(pk, as_plan_rank(G, k, i));
        }
    }
    as_writer_end_record(w);
}

const char *as_plan_meta_label(const as_plan *p, const as_plan_meta *m, char *buf, size_t len)
{
    return m->label ? m->label : as_plan_alg_label(p, m->alg, buf, len);
}

/* ---- the whole record, with its costs ------------------------------------------------- */

void as_planrec_full_free(as_planrec_full *p)
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
static int read_comm(const msgpack_object *rec, const char *key, as_planrec_full *p, double **out, char *err, size_t errlen)
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
static int read_nums(const msgpack_object *o, const char *key, int64_t n, const char *per, as_planrec_full *p,
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
static int read_name(const msgpack_object *rec, const char *key, char *buf, size_t len, const as_planrec_full *p, char *err,
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
 * names' rule; a bare plan (AS_PLANREC_BARE) may leave task and alg out, one that is there
 * is read as always. 0, or -1 with err */
static int read_labels(const msgpack_object *rec, as_planrec_full *p, int has_task, int flags, char *err, size_t errlen)
{
    const msgpack_object *alg = as_obj_get(rec, "alg");
    const int bare = flags & AS_PLANREC_BARE;
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
static int read_names(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
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
static int read_mem_terms(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
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

static int read_planner(const msgpack_object *rec, as_planrec_full *p, int flags, char *err, size_t errlen)
{
    if (read_nums(flags & AS_PLANREC_NO_PRED ? NULL : as_obj_get(rec, "pred_ms"), "pred_ms", p->K, "shard", p, &p->pred,
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
static int64_t shard_entries(const as_planrec_full *p, int64_t k)
{
    int64_t n = 0;
    for (int64_t i = 0; i < p->T; i++) n += p->assign[i] == k;
    return n;
}

/* as-bench --passes (docs/FORMAT.md): cost_pass_ms, a list of 2..AS_PLANREC_PASS_MAX passes,
 * each a list of K costs (numbers >= 0, or nil: unmeasured), and cost_pass_spread, K
 * numbers >= 0 or nil; each may be absent or nil */
static int read_passes(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
{
    const msgpack_object *o = as_obj_get(rec, "cost_pass_ms");
    if (o && o->type != MSGPACK_OBJECT_NIL) {
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 2 || o->via.array.size > AS_PLANREC_PASS_MAX) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_pass_ms' must be a list of 2 to %d passes", p->task,
                     AS_PLANREC_PASS_MAX);
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
static int read_noise(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
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
static int read_mem(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
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
 * with AS_PLANREC_NO_COSTS) and as-plan's comm_ar_bytes (as comm_in_bytes); both absent
 * or nil in plans from before them. A plan without data-parallel entries has none of
 * either: a value above 0 there is bad data. 0, or -1 with err */
static int read_dp(const msgpack_object *rec, as_planrec_full *p, int flags, char *err, size_t errlen)
{
    if (read_comm(rec, "comm_ar_bytes", p, &p->comm_ar, err, errlen)) return -1;
    for (int64_t k = 0; p->comm_ar && !p->ndp && k < p->K; k++)
        if (p->comm_ar[k] > 0) {
            snprintf(err, errlen, "plan of task %" PRId64 ": comm_ar_bytes[%" PRId64 "] is %.0f but the plan has no "
                     "data-parallel entries (assign -2) to all-reduce", p->task, k, p->comm_ar[k]);
            return -1;
        }
    const msgpack_object *o = flags & AS_PLANREC_NO_COSTS ? NULL : as_obj_get(rec, "cost_dp_ms");
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
static int read_costs(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
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

int as_planrec_full_read(const msgpack_object *rec, as_planrec_full *p, char *err, size_t errlen)
{
    return as_planrec_full_read_ex(rec, p, 0, err, errlen);
}

int as_planrec_check(const msgpack_object *rec, int flags, char *err, size_t errlen)
{
    as_planrec_full p;
    if (as_planrec_full_read_ex(rec, &p, flags, err, errlen)) return -1;
    as_planrec_full_free(&p);
    return 0;
}

int as_planrec_full_read_ex(const msgpack_object *rec, as_planrec_full *p, int flags, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->seed = -1;
    p->noise_threshold = NAN;
    p->floor = p->over_floor = p->floor_margin = NAN;
    p->at_floor = -1;
    as_planrec pr;
    if (read_place(rec, &pr, err, errlen)) return -1;
    p->task = pr.task;
    p->has_task = pr.has_task;
    p->unplaced = pr.unplaced;
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
    if (!(flags & AS_PLANREC_NO_COSTS)) {
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
    as_planrec_full_free(p);
    return -1;
}

void as_planrec_full_place(const as_planrec_full *f, as_planrec *p)
{
    memset(p, 0, sizeof *p);
    p->task = f->task;
    p->has_task = f->has_task;
    p->shards = f->K;
    p->n = f->T;
    p->unplaced = f->unplaced;
    p->ndp = f->ndp;
    const size_t n = (size_t)(f->T ? f->T : 1);
    p->tables = as_malloc(n * sizeof *p->tables);
    p->assign = as_malloc(n * sizeof *p->assign);
    if (f->T) {
        memcpy(p->tables, f->tables, (size_t)f->T * sizeof *p->tables);
        memcpy(p->assign, f->assign, (size_t)f->T * sizeof *p->assign);
    }
    if (f->pieces) {
        p->pieces = as_malloc(n * sizeof *p->pieces);
        if (f->T) memcpy(p->pieces, f->pieces, (size_t)f->T * sizeof *p->pieces);
    }
}
