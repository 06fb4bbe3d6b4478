/* rlinput.c - as-rl's input joined (rlinput.h). */
#include "rlinput.h"

#include "common.h"
#include "reclimits.h"
#include "planrec.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    as_rl_input *in;
    int64_t cap_t;
} rd_ctx;

/* a `task` record here; `features` and `cost` records (and every other) to costdata */
static int on_record(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    rd_ctx *x = ctx;
    as_rl_input *in = x->in;
    if (!as_taskrec_is(&rec->obj)) return as_costdata_read_record(&in->cd, r, rec, err, errlen);
    as_taskrec t;
    char e2[768];
    if (as_taskrec_read(&rec->obj, &t, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
        return -1;
    }
    if (!strcmp(t.split, "test")) { as_taskrec_free(&t); return 0; }
    if (in->ntasks == x->cap_t) {
        x->cap_t = x->cap_t ? 2 * x->cap_t : 64;
        in->ptask = as_realloc(in->ptask, (size_t)x->cap_t * sizeof *in->ptask);
    }
    in->ptask[in->ntasks++] = t;
    return 0;
}

int as_rl_input_read(as_rl_input *in, char *const *files, int nfiles, char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    rd_ctx x = { in, 0 };
    as_costdata *d = &in->cd;
    if (as_read_records(files, nfiles, on_record, &x, err, errlen) || as_costdata_index(d, err, errlen)) return -1;
    if (!in->ntasks) {
        snprintf(err, errlen, "no training task records in the input (make them with as-features --tasks)");
        return -1;
    }
    /* the cost records joined as as-costfit joins them, those it would refuse left out */
    as_costdata_join_known(d);
    in->cost_skipped = d->nskipped + d->nempty;
    in->cost_nofeat = d->nnofeat;
    in->cost_nopiece = d->nnopiece;
    in->feat = d->f;
    in->nfeat = d->nf;
    in->ntables = d->ft.n;
    in->npieces = d->nf - d->ft.n;
    in->nseed = d->ncs;
    in->seed_off = d->off;
    in->seed_pos = d->idx;
    in->seed_cost = d->cost;
    for (int64_t j = 0; j < d->ncs; j++) {
        int64_t i = d->off[j];
        while (i < d->off[j + 1] && d->idx[i] < d->ft.n) i++;
        in->seed_pieces += i < d->off[j + 1];
    }
    in->tasks = as_calloc((size_t)in->ntasks, sizeof *in->tasks);
    for (int64_t ti = 0; ti < in->ntasks; ti++) {
        const as_taskrec *t = &in->ptask[ti];
        as_rl_task *rt = &in->tasks[ti];
        rt->id = t->id;
        rt->n = t->ntables;
        rt->K = t->shards;
        rt->cap = t->mem_cap;
        rt->t = as_malloc((size_t)(t->ntables ? t->ntables : 1) * sizeof *rt->t);
        for (int64_t i = 0; i < t->ntables; i++) {
            int64_t pos = as_featidx_find(&d->ft, t->tables[i]);
            if (pos < 0) {
                snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " has no features record in the input", t->id,
                         t->tables[i]);
                return -1;
            }
            rt->t[i] = &in->feat[pos];   /* d->f[0..ft.n) is ft.f */
        }
    }
    return 0;
}

void as_rl_input_free(as_rl_input *in)
{
    if (!in) return;
    for (int64_t ti = 0; ti < in->ntasks; ti++) {
        if (in->tasks) free(in->tasks[ti].t);
        as_taskrec_free(&in->ptask[ti]);
    }
    free(in->tasks);
    free(in->ptask);
    as_costdata_free(&in->cd);
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
    for (int64_t i = 0; i < in->ntables; i++) if (in->feat[i].id > maxid) maxid = in->feat[i].id;
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
