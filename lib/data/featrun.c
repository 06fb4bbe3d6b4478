/* featrun.c - as-features' pass over its input; see featrun.h */
#include "featrun.h"
#include "common.h"
#include "mcfgrec.h"
#include "planrec.h"
#include "modelcfg.h"
#include "piece.h"
#include "table.h"
#include "tasks.h"
#include "trmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the features of every row block of rows x dim (block counts c->rowp), written */
static int row_pieces(as_featrun *st, const as_featrun_cfg *c, as_writer *w, const as_features *f, int64_t id,
                      int64_t rows, int64_t dim, const as_array *off, const as_array *idx, const char *src,
                      double elem, char *err, size_t errlen)
{
    /* the listed counts, then the task's K (TorchRec's row_wise) when not listed */
    int64_t K = c->rw_shards < 0 ? st->world : c->rw_shards;
    for (size_t q = 0; q < c->nrowp && K >= 2; q++)
        if (c->rowp[q] == K) K = 0;
    for (size_t q = 0; q < c->nrowp + (K >= 2 && c->nrowp); q++) {
        const int64_t cnt = q < c->nrowp ? c->rowp[q] : K;
        as_piece *bl = as_malloc((size_t)cnt * sizeof *bl);
        const int64_t nb = as_piece_row_blocks(rows, dim, cnt, bl);
        for (int64_t j = 0; j < nb && nb > 1; j++) {
            as_features pf;
            if (as_features_row_piece(&pf, &st->scratch, id, rows, dim, off, idx, bl[j].r0, bl[j].r1, err, errlen)) {
                free(bl);
                return -1;
            }
            snprintf(pf.source, sizeof pf.source, "%s", src);
            memcpy(pf.name, f->name, sizeof pf.name);
            memcpy(pf.data_type, f->data_type, sizeof pf.data_type);
            if (st->batch && elem > 0)   /* a row-wise shard: its rows, the table's ids */
                as_trmem_shard(&pf.mem, bl[j].r1 - bl[j].r0, dim, dim, elem, st->opt, st->pipe, f->pooling, st->batch,
                               st->world, 1);
            as_features_write(w, &pf);
            st->npieces++;
        }
        free(bl);
    }
    return 0;
}

/* a table record: its features (and its row blocks') written into *f; 0 or -1 with err */
static int table_rec(as_featrun *st, const as_featrun_cfg *c, as_writer *w, const as_record *rec, as_features *f,
                     char *err, size_t errlen)
{
    int64_t id, rows, batch, dim;
    as_array off, idx;
    char src[128];
    double tc0 = as_now();
    int bad = as_table_parse(&rec->obj, &id, &rows, &batch, &dim, &off, &idx, src, sizeof src, err, errlen) ||
              as_features_compute(f, &st->scratch, id, rows, dim, &off, &idx, err, errlen);
    st->tcomp += as_now() - tc0;
    if (bad) return -1;
    snprintf(f->source, sizeof f->source, "%s", src);
    /* a model's table keeps its name and data type (as-convert --config) */
    char e2[160];
    if (as_obj_name(&rec->obj, "name", f->name, sizeof f->name, e2, sizeof e2) < 0) {   /* printed raw in plans' text */
        snprintf(err, errlen, "table %" PRId64 ": %s", id, e2);
        return -1;
    }
    if (as_table_data_type(&rec->obj, f->data_type, sizeof f->data_type, e2, sizeof e2)) {
        snprintf(err, errlen, "table %" PRId64 ": %s", id, e2);
        return -1;
    }
    const double elem = f->data_type[0] ? as_mcfg_dtype_bytes(f->data_type) : 0;
    if (st->batch && elem > 0) {
        /* a model's table: TorchRec's memory of it as one table-wise shard */
        as_trmem_shard(&f->mem, rows, dim, dim, elem, st->opt, st->pipe, f->pooling, st->batch, st->world, 0);
        st->ids_per_rank += f->pooling * (double)st->batch;
    }
    as_features_write(w, f);
    if (row_pieces(st, c, w, f, id, rows, dim, &off, &idx, src, elem, err, errlen)) return -1;
    st->lookups += (uint64_t)f->lookups;
    return 0;
}

/* the model-config record's topology; 0 or -1 */
static int model_config(as_featrun *st, const as_record *rec)
{
    double fi, fo;
    as_mcfgrec m;
    as_mcfgrec_read(&rec->obj, &m);
    int bad = m.world_size.has != AS_F_SET || m.world_size.v < 1 || m.hbm_bytes.has != AS_F_SET || m.hbm_bytes.v < 0 ||
              m.batch_size_per_rank.has != AS_F_SET || m.batch_size_per_rank.v < 1 || m.optimizer.has != AS_F_SET ||
              m.pipeline.has != AS_F_SET ||
              /* dense_bytes: absent in records of before 2026-11-26 (then 0) */
              (m.dense_bytes.has != AS_F_ABSENT && (m.dense_bytes.has != AS_F_SET || m.dense_bytes.v < 0));
    if (!bad) {
        snprintf(st->opt, sizeof st->opt, "%s", m.optimizer.s);
        snprintf(st->pipe, sizeof st->pipe, "%s", m.pipeline.s);
        bad = as_trmem_opt_mult(st->opt, 1) < 0 || as_trmem_pipeline(st->pipe, &fi, &fo);
    }
    if (!bad) {
        st->world = m.world_size.v;
        st->hbm = m.hbm_bytes.v;
        st->batch = m.batch_size_per_rank.v;
        if (m.dense_bytes.has == AS_F_SET) st->dense = m.dense_bytes.v;
    }
    as_mcfgrec_free(&m);
    return bad ? -1 : 0;
}

int as_featrun_record(as_featrun *st, const as_featrun_cfg *c, as_writer *w, const as_reader *r, const as_record *rec,
                      char *err, size_t errlen)
{
    if (as_rec_is(rec, "header")) return 0;
    as_features f;
    int have = 0;
    char e2[900];
    if (as_rec_is(rec, "table")) {
        if (table_rec(st, c, w, rec, &f, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
        have = 1;
    } else if (as_rec_is(rec, "features")) {
        if (as_features_read(&rec->obj, &f, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
        as_writer_raw(w, rec->raw, rec->rawlen);
        have = as_piece_whole(&f.piece);
        /* a model's table already featurized: its ids count in TorchRec's reservation */
        if (have && st->batch && as_features_has_mem(&f)) st->ids_per_rank += f.pooling * (double)st->batch;
    } else if (as_mcfgrec_is(&rec->obj)) {
        if (model_config(st, rec)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": model-config: world_size and batch_size_per_rank (>= 1), "
                     "hbm_bytes (>= 0), dense_bytes (>= 0, optional), a known optimizer and pipeline are required",
                     as_reader_name(r), rec->index);
            return -1;
        }
        as_writer_raw(w, rec->raw, rec->rawlen);
    } else if (!c->drop_tasks || !as_taskrec_is(&rec->obj)) {
        as_writer_raw(w, rec->raw, rec->rawlen);
    }
    if (have) {
        if (st->npool == st->cap) {
            st->cap = st->cap ? 2 * st->cap : 1024;
            st->ids = as_realloc(st->ids, (size_t)st->cap * sizeof *st->ids);
            st->bytes = as_realloc(st->bytes, (size_t)st->cap * sizeof *st->bytes);
        }
        st->ids[st->npool] = f.id;
        st->bytes[st->npool] = f.bytes_fp16;
        st->npool++;
    }
    st->nrec++;
    return 0;
}

void as_featrun_free(as_featrun *st)
{
    if (!st) return;
    free(st->ids);
    free(st->bytes);
    as_feat_scratch_free(&st->scratch);
    memset(st, 0, sizeof *st);
}

int as_featrun_model_task(const as_featrun *st, as_task_cfg *tc, as_writer *w, char *err, size_t errlen)
{
    if (!st->npool) { snprintf(err, errlen, "--model-task: the input holds no table"); return -1; }
    as_task t;
    as_task_whole(&t, st->ids, st->bytes, st->npool, tc->shards ? tc->shards : st->world);
    if (!t.shards) {
        free(t.tables);
        snprintf(err, errlen, "--model-task: no model-config record in the input (as-convert --config writes one): give --shards");
        return -1;
    }
    /* the HBM less TorchRec's reservation (15 %, the dense part and the ids' copies) when the
     * tables carry its memory model, as its planner would leave them */
    if (!tc->mem_cap)
        tc->mem_cap = st->ids_per_rank > 0 ? as_trmem_cap((uint64_t)st->hbm, st->ids_per_rank, (uint64_t)st->dense)
                                           : (uint64_t)st->hbm;
    if (!tc->mem_cap && st->hbm) {
        free(t.tables);
        snprintf(err, errlen, "--model-task: TorchRec's reservation (15 %% of %" PRId64 " bytes of HBM, %" PRId64 " bytes for "
                 "the dense part and 20 copies of %.0f ids per rank) leaves nothing for the tables", st->hbm, st->dense,
                 st->ids_per_rank);
        return -1;
    }
    as_task_write(w, tc, &t);
    free(t.tables);
    return 0;
}
