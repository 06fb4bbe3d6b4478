/* rlinput.c - as-rl's input joined (rlinput.h). */
#include "rlinput.h"

#include "common.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    as_rl_input *in;
    int64_t cap_t, cap_c, nid, cap_id;
    int64_t *ids;                   /* the cost records' table ids, concatenated */
} rd_ctx;

static int on_record(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    rd_ctx *x = ctx;
    as_rl_input *in = x->in;
    char e2[768];
    if (as_rec_is(rec, "features")) return as_featidx_read(&in->fx, rec, as_reader_name(r), err, errlen);
    if (as_rec_is(rec, "task")) {
        as_ptask t;
        if (as_ptask_read(&rec->obj, &t, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
        if (!strcmp(t.split, "test")) { as_ptask_free(&t); return 0; }
        if (in->ntasks == x->cap_t) {
            x->cap_t = x->cap_t ? 2 * x->cap_t : 64;
            in->ptask = as_realloc(in->ptask, (size_t)x->cap_t * sizeof *in->ptask);
        }
        in->ptask[in->ntasks++] = t;
        return 0;
    }
    if (!as_rec_is(rec, "cost")) return 0;
    const msgpack_object *e = as_obj_get(&rec->obj, "error"), *cv = as_obj_get(&rec->obj, "cost_ms");
    if ((e && e->type != MSGPACK_OBJECT_NIL) || !cv || cv->type == MSGPACK_OBJECT_NIL) { in->cost_skipped++; return 0; }
    double v;
    int64_t *ids, n;
    if (as_field_f64(&rec->obj, "cost_ms", -INFINITY, INFINITY, &v, e2, sizeof e2) ||
        as_field_table_ids(&rec->obj, "tables", &ids, &n, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": cost: %s", as_reader_name(r), rec->index, e2);
        return -1;
    }
    if (!(v > 0)) {
        free(ids);
        snprintf(err, errlen, "%s: record %" PRIu64 ": cost: 'cost_ms' = %g is not a positive cost", as_reader_name(r),
                 rec->index, v);
        return -1;
    }
    if (!n) { free(ids); in->cost_skipped++; return 0; }
    if (in->nseed + 1 >= x->cap_c) {
        x->cap_c = x->cap_c ? 2 * x->cap_c : 1024;
        in->seed_off = as_realloc(in->seed_off, (size_t)x->cap_c * sizeof *in->seed_off);
        in->seed_cost = as_realloc(in->seed_cost, (size_t)x->cap_c * sizeof *in->seed_cost);
    }
    while (x->nid + n > x->cap_id) {
        x->cap_id = x->cap_id ? 2 * x->cap_id : 4096;
        x->ids = as_realloc(x->ids, (size_t)x->cap_id * sizeof *x->ids);
    }
    in->seed_off[in->nseed] = x->nid;
    memcpy(x->ids + x->nid, ids, (size_t)n * sizeof *ids);
    x->nid += n;
    in->seed_cost[in->nseed++] = v;
    in->seed_off[in->nseed] = x->nid;
    free(ids);
    return 0;
}

int as_rl_input_read(as_rl_input *in, char *const *files, int nfiles, char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    rd_ctx x = { in, 0, 0, 0, 0, NULL };
    if (as_read_records(files, nfiles, on_record, &x, err, errlen) || as_featidx_build(&in->fx, err, errlen)) {
        free(x.ids);
        return -1;
    }
    if (!in->ntasks) {
        free(x.ids);
        snprintf(err, errlen, "no training task records in the input (make them with as-features --tasks)");
        return -1;
    }
    const as_features *f0 = in->fx.f;
    in->tasks = as_calloc((size_t)in->ntasks, sizeof *in->tasks);
    for (int64_t ti = 0; ti < in->ntasks; ti++) {
        const as_ptask *t = &in->ptask[ti];
        as_rl_task *rt = &in->tasks[ti];
        rt->id = t->id;
        rt->n = t->ntables;
        rt->K = t->shards;
        rt->cap = t->mem_cap;
        rt->t = as_malloc((size_t)(t->ntables ? t->ntables : 1) * sizeof *rt->t);
        for (int64_t i = 0; i < t->ntables; i++) {
            int64_t pos = as_featidx_find(&in->fx, t->tables[i]);
            if (pos < 0) {
                free(x.ids);
                snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " has no features record in the input", t->id,
                         t->tables[i]);
                return -1;
            }
            rt->t[i] = &f0[pos];
        }
    }
    /* the cost records' table ids as positions; positions overwrite ids in place (the
       write index never passes the read index) */
    int64_t nseed = 0, npos = 0;
    for (int64_t j = 0; j < in->nseed; j++) {
        int64_t o = npos, ok = 1;
        for (int64_t i = in->seed_off[j]; i < in->seed_off[j + 1] && ok; i++) {
            int64_t pos = as_featidx_find(&in->fx, x.ids[i]);
            if (pos < 0) ok = 0;
            else x.ids[npos++] = pos;
        }
        if (!ok) { npos = o; in->cost_nofeat++; continue; }
        in->seed_off[nseed] = o;
        in->seed_cost[nseed++] = in->seed_cost[j];
    }
    if (in->nseed) in->seed_off[nseed] = npos;
    in->nseed = nseed;
    in->seed_pos = x.ids;
    return 0;
}

void as_rl_input_free(as_rl_input *in)
{
    for (int64_t ti = 0; ti < in->ntasks; ti++) {
        if (in->tasks) free(in->tasks[ti].t);
        as_ptask_free(&in->ptask[ti]);
    }
    free(in->tasks);
    free(in->ptask);
    free(in->seed_off);
    free(in->seed_pos);
    free(in->seed_cost);
    as_featidx_free(&in->fx);
    memset(in, 0, sizeof *in);
}

int as_rl_input_load_pool(const as_rl_input *in, int all, int64_t first, const char *tables, as_bpool *pool,
                          int64_t *nloaded, int64_t ref[AS_NOISE_REF_TABLES], int64_t *nref, char *err, size_t errlen)
{
    /* the reference shard: from every table id of the file */
    as_bpool meta;
    if (as_bpool_load(&meta, tables, NULL, 0, 1, err, errlen)) return -1;
    *nref = as_noise_ref_pool(&meta, ref);
    as_bpool_free(&meta);
    int64_t maxid = 0;
    for (int64_t i = 0; i < in->fx.n; i++) if (in->fx.f[i].id > maxid) maxid = in->fx.f[i].id;
    for (int64_t i = 0; i < *nref; i++) if (ref[i] > maxid) maxid = ref[i];
    uint8_t *want = as_calloc((size_t)maxid + 1, 1);
    int64_t nwant = 0;
    for (int64_t ti = 0; ti < in->ntasks; ti++)
        if (all || ti < first)
            for (int64_t i = 0; i < in->tasks[ti].n; i++) {
                int64_t id = in->tasks[ti].t[i]->id;
                if (!want[id]) { want[id] = 1; nwant++; }
            }
    *nloaded = nwant;
    for (int64_t i = 0; i < *nref; i++) want[ref[i]] = 1;
    int rc = as_bpool_load(pool, tables, want, maxid + 1, 0, err, errlen);
    for (int64_t id = 0; !rc && id <= maxid; id++)
        if (want[id] && !as_bpool_get(pool, id)) {
            snprintf(err, errlen, "%s: no table record for table %" PRId64, tables, id);
            rc = -1;
        }
    free(want);
    return rc;
}
