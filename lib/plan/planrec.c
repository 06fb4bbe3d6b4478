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

void as_ptask_free(as_ptask *t)
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

int as_ptask_read(const msgpack_object *rec, as_ptask *t, char *err, size_t errlen)
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
        as_ptask_free(t);
        return -1;
    }
    t->mem_cap = (uint64_t)cap;
    if (t->ntables == 0) {
        snprintf(err, errlen, "task %" PRId64 ": 'tables' must be a non-empty list of table ids", t->id);
        as_ptask_free(t);
        return -1;
    }
    if (as_obj_name(rec, "split", t->split, sizeof t->split, e2, sizeof e2) < 0) {   /* the names' rule (msgobj.h) */
        snprintf(err, errlen, "task %" PRId64 ": %s", t->id, e2);
        as_ptask_free(t);
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
            as_ptask_free(t);
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

int as_planrec_read(const msgpack_object *rec, as_planrec *p, char *err, size_t errlen)
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
        double ar = 0;
        for (int64_t i = 0; i < p->n; i++)
            if (p->assign[i] == AS_DP) ar += as_plan_dp_comm_bytes(m->items[i], K);
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
