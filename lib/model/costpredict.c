/* costpredict.c - cost-model predictions added to a stream; see costpredict.h.
 * Dimension letters: K shards, T tables. */
#include "costpredict.h"
#include "common.h"
#include "costdata.h"
#include "costrec.h"
#include "planrec.h"
#include "planrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void keep_raw(as_costpred *p, const as_record *r, int file)
{
    if (p->len + r->rawlen > p->cap) {
        p->cap = (p->len + r->rawlen) * 2 + 4096;
        p->buf = as_realloc(p->buf, p->cap);
    }
    if (p->n + 1 >= p->ncap) {
        p->ncap = p->ncap ? 2 * p->ncap : 1024;
        p->off = as_realloc(p->off, (size_t)(p->ncap + 1) * sizeof *p->off);
        p->rec = as_realloc(p->rec, (size_t)p->ncap * sizeof *p->rec);
        p->file = as_realloc(p->file, (size_t)p->ncap * sizeof *p->file);
    }
    if (p->n == 0) p->off[0] = 0;
    memcpy(p->buf + p->len, r->raw, r->rawlen);
    p->len += r->rawlen;
    p->rec[p->n] = r->index;
    p->file[p->n] = file;
    p->off[++p->n] = p->len;
}

/* one record of input `file`: kept, a `features` one indexed too; 0 or -1 with err */
static int read_record(as_costpred *p, int file, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (as_rec_is(rec, "header")) return 0;
    if (as_rec_is(rec, "features") && as_featidx_read(&p->ft, rec, as_reader_name(r), err, errlen)) return -1;
    keep_raw(p, rec, file);
    return 0;
}

static void add_name(as_costpred *p, const char *name)
{
    p->names = as_realloc(p->names, (size_t)(p->nnames + 1) * sizeof *p->names);
    p->names[p->nnames++] = as_strdup(name);
}

/* as_costpred_read_files' record: an input's name is kept at its first record */
static int files_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    as_costpred *p = ctx;
    if (rec->index == 1) add_name(p, as_reader_name(r));
    return read_record(p, p->nnames - 1, r, rec, err, errlen);
}

int as_costpred_read_files(as_costpred *p, char *const *files, int nfiles, char *err, size_t errlen)
{
    return as_read_records(files, nfiles, files_rec, p, err, errlen);
}

/* the features of ids[0..n) with pieces pc (NULL: whole tables), malloc'd: n pointers, then
 * the pieces' features they point to (one block: free the pointers); NULL with err naming
 * the record when one is missing */
static const as_features **lookup(const as_featidx *ft, const int64_t *ids, const as_piece *pc, int64_t n, const char *name,
                                  uint64_t rec, char *err, size_t errlen)
{
    const size_t head = ((size_t)(n + 1) * sizeof(as_features *) + 63) & ~(size_t)63;
    const as_features **f = as_malloc(head + (size_t)(pc ? n + 1 : 0) * sizeof(as_features));
    as_features *own = (as_features *)((char *)f + head);
    for (int64_t i = 0; i < n; i++) {
        const int piece = pc && !as_piece_whole(&pc[i]);
        if (piece ? as_featidx_piece(ft, ids[i], &pc[i], &own[i]) != 0 : !(f[i] = as_featidx_get(ft, ids[i]))) {
            char nb[96];
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s %s has no `features` record", name, rec, piece ? "piece" : "table",
                     as_piece_name(nb, sizeof nb, ids[i], piece ? &pc[i] : NULL) + 1);
            free(f);
            return NULL;
        }
        if (piece) f[i] = &own[i];
    }
    return f;
}

/* the map entries of o except the keys skip[0..nskip): packed when pk is not NULL; counted */
static int copy_except(msgpack_packer *pk, const msgpack_object *o, const char *const *skip, int nskip)
{
    int kept = 0;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        int drop = 0;
        for (int s = 0; s < nskip; s++) drop |= as_obj_streq(&kv->key, skip[s]);
        if (drop) continue;
        if (pk) {
            msgpack_pack_object(pk, kv->key);
            msgpack_pack_object(pk, kv->val);
        }
        kept++;
    }
    return kept;
}

/* a shard or cost record o with its tables ids[0..n): o and pred_ms */
static int write_shard(as_writer *w, const as_costmodel *m, const as_featidx *ft, const msgpack_object *o,
                       const int64_t *ids, const as_piece *pc, int64_t n, const char *name, uint64_t rec, double *model_s, char *err,
                       size_t errlen)
{
    const as_features **f = lookup(ft, ids, pc, n, name, rec, err, errlen);
    if (!f) return -1;
    msgpack_packer *pk = as_writer_pk(w);
    static const char *const skip[] = { "pred_ms" };
    msgpack_pack_map(pk, (size_t)copy_except(NULL, o, skip, 1) + 1);
    copy_except(pk, o, skip, 1);
    double t1 = as_now();
    double y = as_costmodel_predict(m, (const as_features *const *)f, (int)n);
    *model_s += as_now() - t1;
    as_pack_kv_f64(pk, "pred_ms", y);
    free(f);
    return 0;
}

/* a plan record o: o, pred_ms per shard and pred_max_ms. An infeasible plan (assign -1, as-plan
 * writes them) is predicted too: each shard from the tables placed on it; the plan's maximum
 * is nil, as it has no cost */
static int write_plan(as_writer *w, const as_costmodel *m, const as_featidx *ft, const msgpack_object *o,
                      const as_planrec *pr, const char *name, uint64_t rec, double *model_s, char *err, size_t errlen)
{
    const int64_t K = pr->shards;
    int64_t *start = as_malloc((size_t)(K + 1) * sizeof *start), *order = as_malloc((size_t)(pr->n + 1) * sizeof *order);
    as_planrec_group(pr, start, order);
    int64_t *placed = as_malloc((size_t)(pr->n + 1) * sizeof *placed);
    for (int64_t q = 0; q < start[K]; q++) placed[q] = pr->tables[order[q]];
    as_piece *ppc = NULL;
    if (pr->pieces) {
        ppc = as_malloc((size_t)(pr->n + 1) * sizeof *ppc);
        for (int64_t q = 0; q < start[K]; q++) ppc[q] = pr->pieces[order[q]];
    }
    const as_features **g = lookup(ft, placed, ppc, start[K], name, rec, err, errlen);
    free(ppc);
    /* the data-parallel tables (whole, on every shard): their cost together over K
       (as_plan_dp_pred) added to every shard's */
    int64_t ndp = 0;
    for (int64_t i = 0; i < pr->n; i++)
        if (pr->assign[i] == AS_DP) placed[ndp++] = pr->tables[i];
    const as_features **gd = g && ndp ? lookup(ft, placed, NULL, ndp, name, rec, err, errlen) : NULL;
    int rc = -1;
    if (g && (gd || !ndp)) {
        msgpack_packer *pk = as_writer_pk(w);
        static const char *const skip[] = { "pred_ms", "pred_max_ms" };
        msgpack_pack_map(pk, (size_t)copy_except(NULL, o, skip, 2) + 2);
        copy_except(pk, o, skip, 2);
        as_pack_str(pk, "pred_ms");
        msgpack_pack_array(pk, (size_t)K);
        double mx = 0, t1 = as_now();
        const double dp = ndp ? as_costmodel_predict(m, (const as_features *const *)gd, (int)ndp) / (double)K : 0;
        for (int64_t k = 0; k < K; k++) {
            double y = as_costmodel_predict(m, (const as_features *const *)(g + start[k]), (int)(start[k + 1] - start[k])) + dp;
            if (y > mx) mx = y;
            msgpack_pack_double(pk, y);
        }
        *model_s += as_now() - t1;
        as_pack_str(pk, "pred_max_ms");
        if (pr->unplaced) msgpack_pack_nil(pk);
        else msgpack_pack_double(pk, mx);
        rc = 0;
    }
    free(start);
    free(order);
    free(placed);
    free(g);
    free(gd);
    return rc;
}

int as_costpred_write(as_costpred *p, const as_costmodel *m, as_writer *w, as_costpred_stats *st, char *err,
                      size_t errlen)
{
    memset(st, 0, sizeof *st);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = 0;
    for (int64_t i = 0; i < p->n && !rc; i++) {
        const char *raw = p->buf + p->off[i];
        size_t len = p->off[i + 1] - p->off[i], used = 0;
        if (msgpack_unpack_next(&up, raw, len, &used) != MSGPACK_UNPACK_SUCCESS) {
            snprintf(err, errlen, "internal: re-parse failed");
            rc = -1;
            break;
        }
        const msgpack_object *o = &up.data;
        const msgpack_object *kind = as_obj_get(o, "kind");
        const char *name = p->names[p->file[i]];
        int is_shard = as_obj_streq(kind, "shard"), is_cost = as_costrec_is(o), is_plan = as_planrec_is(o);
        if (!is_shard && !is_cost && !is_plan) { as_writer_raw(w, raw, len); continue; }
        /* every field range-checked by the shared readers (lib/records/reclimits.h, lib/plan/plan.h) */
        int64_t *ids = NULL, n = 0;
        as_piece *pc = NULL;
        as_planrec pr;
        char e2[768];
        as_costrec cr = { 0 };
        int bad;
        /* a plan: its placement, and the fields that pass through read as as-eval reads them
         * (lib/records/planrec.h); pred_ms is replaced */
        if (is_plan) bad = as_planrec_read(o, &pr, AS_PLANREC_STRICT | AS_PLANREC_BARE | AS_PLANREC_NO_PRED, e2, sizeof e2);
        else if (is_cost) bad = as_costrec_read(o, &cr, e2, sizeof e2);
        else bad = as_field_table_ids(o, "tables", &ids, &n, e2, sizeof e2) || as_field_pieces(o, "pieces", n, &pc, e2, sizeof e2);
        if (is_cost) {
            ids = cr.tables;
            n = cr.n;
            pc = cr.pieces;
            cr.tables = NULL;
            cr.pieces = NULL;
            as_costrec_free(&cr);
        }
        if (bad) {
            free(ids);
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s%s", name, p->rec[i], is_plan ? "" : is_shard ? "shard: " : "cost: ", e2);
            rc = -1;
            break;
        }
        /* the tables' sizes are known from the features: the pieces must tile each table */
        if (is_plan && as_featidx_check_cover(&p->ft, pr.tables, pr.pieces, pr.n, e2, sizeof e2)) {
            char alg[64] = "", lab[80] = "";
            if (!as_obj_str(o, "alg", alg, sizeof alg)) snprintf(lab, sizeof lab, " (%s)", alg);
            snprintf(err, errlen, "%s: record %" PRIu64 ": plan of task %" PRId64 "%s: %s", name, p->rec[i], pr.task, lab, e2);
            as_planrec_free(&pr);
            rc = -1;
            break;
        }
        if (is_plan) {
            rc = write_plan(w, m, &p->ft, o, &pr, name, p->rec[i], &st->model_s, err, errlen);
            as_planrec_free(&pr);
            st->plans += !rc;
        } else {
            rc = write_shard(w, m, &p->ft, o, ids, pc, n, name, p->rec[i], &st->model_s, err, errlen);
            free(ids);
            free(pc);
            if (!rc) { if (is_shard) st->shards++; else st->costs++; }
        }
        if (!rc) as_writer_end_record(w);
    }
    msgpack_unpacked_destroy(&up);
    return rc;
}

void as_costpred_free(as_costpred *p)
{
    if (!p) return;
    as_featidx_free(&p->ft);
    free(p->buf);
    free(p->off);
    free(p->rec);
    free(p->file);
    for (int i = 0; i < p->nnames; i++) free(p->names[i]);
    free(p->names);
    memset(p, 0, sizeof *p);
}

/* ---- --select: the shards an ensemble disagrees on most ------------------------------------ */

typedef struct {
    char *key;          /* the shard's table set with its pieces (shard_key) */
    int64_t rec;        /* its record's index in p */
    int cand;           /* 1: a `shard` record (a candidate), 0: a `cost` record (measured) */
    int keep;           /* a candidate not measured and not drawn before */
    double mean, sd;    /* the ensemble's predictions' mean and standard deviation (ms) */
} sel_item;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* a shard's key: its entries' names (as_piece_name) sorted and joined, so that the same
 * tables with the same pieces, in any order, give the same key (malloc'd) */
static char *shard_key(const int64_t *ids, const as_piece *pc, int64_t n)
{
    char **v = as_malloc((size_t)(n ? n : 1) * sizeof *v), nb[96];
    size_t len = 1;
    for (int64_t i = 0; i < n; i++) {
        v[i] = as_strdup(as_piece_name(nb, sizeof nb, ids[i], pc && !as_piece_whole(&pc[i]) ? &pc[i] : NULL));
        len += strlen(v[i]) + 1;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    char *k = as_malloc(len);
    k[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        strcat(strcat(k, v[i]), ",");
        free(v[i]);
    }
    free(v);
    return k;
}

/* record i's shard or cost into *it (other kinds: it->key NULL); a shard predicted by every
 * model of ms[0..nm). 0, or -1 with err */
static int sel_scan(as_costpred *p, int64_t i, const msgpack_object *o, as_costmodel *const *ms, int nm, sel_item *it,
                    double *model_s, char *err, size_t errlen)
{
    const msgpack_object *kind = as_obj_get(o, "kind");
    const int cand = as_obj_streq(kind, "shard");
    memset(it, 0, sizeof *it);
    if (!cand && !as_costrec_is(o)) return 0;
    const char *name = p->names[p->file[i]];
    char e2[768];
    as_costrec cr = { 0 };
    int bad = cand ? as_field_table_ids(o, "tables", &cr.tables, &cr.n, e2, sizeof e2) || as_field_pieces(o, "pieces", cr.n, &cr.pieces, e2, sizeof e2)
                   : as_costrec_read(o, &cr, e2, sizeof e2);
    if (bad) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s%s", name, p->rec[i], cand ? "shard: " : "cost: ", e2);
        as_costrec_free(&cr);
        return -1;
    }
    *it = (sel_item){ shard_key(cr.tables, cr.pieces, cr.n), i, cand, 0, 0, 0 };
    const as_features **f = cand ? lookup(&p->ft, cr.tables, cr.pieces, cr.n, name, p->rec[i], err, errlen) : NULL;
    int rc = cand && !f ? -1 : 0;
    if (f) {
        double s = 0, s2 = 0, t1 = as_now();
        for (int k = 0; k < nm; k++) {
            const double y = as_costmodel_predict(ms[k], (const as_features *const *)f, (int)cr.n);
            s += y;
            s2 += y * y;
        }
        *model_s += as_now() - t1;
        it->mean = s / nm;
        it->sd = sqrt(fmax(0, s2 / nm - it->mean * it->mean));
    }
    free(f);
    as_costrec_free(&cr);
    return rc;
}

static int cmp_key(const void *a, const void *b)
{
    const sel_item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    if (x->cand != y->cand) return x->cand - y->cand;   /* the measured first */
    return (x->rec > y->rec) - (x->rec < y->rec);
}

static int cmp_sd(const void *a, const void *b)
{
    const sel_item *x = a, *y = b;
    if (x->keep != y->keep) return y->keep - x->keep;
    if (x->sd != y->sd) return x->sd < y->sd ? 1 : -1;
    return (x->rec > y->rec) - (x->rec < y->rec);
}

static int cmp_rec(const void *a, const void *b)
{
    const sel_item *x = a, *y = b;
    return (x->rec > y->rec) - (x->rec < y->rec);
}

/* it[0..n): the candidates kept (neither measured nor drawn before), the nsel of them with the
 * largest spread first, the others after; the chosen's count */
static int64_t sel_choose(sel_item *it, int64_t n, int64_t nsel, as_costsel_stats *st)
{
    qsort(it, (size_t)n, sizeof *it, cmp_key);
    for (int64_t i = 0; i < n; i++) {
        if (!it[i].cand) { st->measured++; continue; }
        st->candidates++;
        it[i].keep = i == 0 || strcmp(it[i].key, it[i - 1].key);
        st->dropped += !it[i].keep;
    }
    qsort(it, (size_t)n, sizeof *it, cmp_sd);
    int64_t k = 0;
    while (k < n && k < nsel && it[k].keep) k++;
    double all = 0;
    for (int64_t i = 0; i < n && it[i].keep; i++) {
        all += it[i].sd;
        if (i < k) st->sd_chosen += it[i].sd / (double)k;
    }
    st->sd_all = st->candidates > st->dropped ? all / (double)(st->candidates - st->dropped) : 0;
    st->chosen = k;
    qsort(it, (size_t)k, sizeof *it, cmp_rec);
    return k;
}

/* the record of it: its map with pred_ms (the mean) and pred_sd_ms */
static void sel_write(as_writer *w, const msgpack_object *o, const sel_item *it)
{
    msgpack_packer *pk = as_writer_pk(w);
    static const char *const skip[] = { "pred_ms", "pred_sd_ms" };
    msgpack_pack_map(pk, (size_t)copy_except(NULL, o, skip, 2) + 2);
    copy_except(pk, o, skip, 2);
    as_pack_kv_f64(pk, "pred_ms", it->mean);
    as_pack_kv_f64(pk, "pred_sd_ms", it->sd);
    as_writer_end_record(w);
}

/* record i of p, unpacked into up; 0, or -1 with err */
static int unpack_rec(const as_costpred *p, int64_t i, msgpack_unpacked *up, char *err, size_t errlen)
{
    size_t used = 0;
    if (msgpack_unpack_next(up, p->buf + p->off[i], p->off[i + 1] - p->off[i], &used) == MSGPACK_UNPACK_SUCCESS) return 0;
    snprintf(err, errlen, "internal: re-parse failed");
    return -1;
}

int as_costpred_select(as_costpred *p, as_costmodel *const *ms, int nm, int64_t nsel, as_writer *w, as_costsel_stats *st,
                       char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    sel_item *it = as_calloc((size_t)(p->n ? p->n : 1), sizeof *it);
    int64_t n = 0;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = 0;
    for (int64_t i = 0; i < p->n && !rc; i++) {
        rc = unpack_rec(p, i, &up, err, errlen) || sel_scan(p, i, &up.data, ms, nm, &it[n], &st->model_s, err, errlen) ? -1 : 0;
        if (it[n].key) n++;
    }
    const int64_t k = rc ? 0 : sel_choose(it, n, nsel, st);
    for (int64_t q = 0; q < k && !rc; q++) {
        rc = unpack_rec(p, it[q].rec, &up, err, errlen);
        if (!rc) sel_write(w, &up.data, &it[q]);
    }
    msgpack_unpacked_destroy(&up);
    for (int64_t i = 0; i < n; i++) free(it[i].key);
    free(it);
    return rc;
}
