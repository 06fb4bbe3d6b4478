/* benchrun.c - as-bench's run: sampling, the input's units, the windowed measuring loop and
 * the records it writes (benchrun.h) */
#include "benchrun.h"
#include "common.h"
#include "costrec.h"
#include "planrec.h"
#include "planrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sampled shards ------------------------------------------------------------------------ */

int as_bsample_pool(int64_t **out, int64_t *n, const as_bpool *p, const int64_t *from, size_t nfrom,
                    const char *name, char *err, size_t errlen)
{
    for (size_t q = 0; q < nfrom; q++) {
        int found = 0;
        for (int64_t j = 0; j < p->n && !found; j++) found = p->t[j].id == from[q];
        if (!found) {
            snprintf(err, errlen, "table %" PRId64 " is not in %s", from[q], name);
            return -1;
        }
    }
    int64_t *ids = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *ids), k = 0;
    for (int64_t j = 0; j < p->n; j++) {
        int keep = !nfrom;
        for (size_t q = 0; q < nfrom && !keep; q++) keep = from[q] == p->t[j].id;
        if (keep) ids[k++] = p->t[j].id;
    }
    *out = ids;
    *n = k;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void as_bsample_draw(as_bsample *s, const int64_t *ids, int64_t npool, int64_t count, int64_t max_tables,
                     uint64_t seed, int singles)
{
    const int64_t ns = singles ? npool : 0;
    memset(s, 0, sizeof *s);
    s->n = ns + count;
    s->nsingles = ns;
    s->maxid = -1;
    s->ids = as_malloc((size_t)(s->n ? s->n : 1) * sizeof *s->ids);
    s->len = as_malloc((size_t)(s->n ? s->n : 1) * sizeof *s->len);
    /* every table alone first, in id order */
    int64_t *sorted = as_malloc((size_t)(ns ? ns : 1) * sizeof *sorted);
    if (ns) memcpy(sorted, ids, (size_t)ns * sizeof *sorted);
    qsort(sorted, (size_t)ns, sizeof *sorted, cmp_i64);
    for (int64_t j = 0; j < ns; j++) {
        s->ids[j] = as_malloc(sizeof **s->ids);
        s->ids[j][0] = sorted[j];
        s->len[j] = 1;
    }
    free(sorted);
    /* then the draws: k tables without replacement */
    as_rng r;
    as_rng_seed(&r, seed, 0x73616d706c65ULL);
    int64_t *perm = as_malloc((size_t)(npool ? npool : 1) * sizeof *perm);
    for (int64_t i = ns; i < s->n; i++) {
        int64_t k = 1 + (int64_t)as_rng_below(&r, (uint64_t)(max_tables < npool ? max_tables : npool));
        memcpy(perm, ids, (size_t)npool * sizeof *perm);
        s->ids[i] = as_malloc((size_t)k * sizeof **s->ids);
        for (int64_t j = 0; j < k; j++) {
            int64_t q = j + (int64_t)as_rng_below(&r, (uint64_t)(npool - j));
            int64_t tmp = perm[j]; perm[j] = perm[q]; perm[q] = tmp;
            s->ids[i][j] = perm[j];
        }
        s->len[i] = k;
    }
    free(perm);
    for (int64_t i = 0; i < s->n; i++)
        for (int64_t j = 0; j < s->len[i]; j++)
            if (s->ids[i][j] > s->maxid) s->maxid = s->ids[i][j];
}

void as_bsample_pieces(as_bsample *s, const as_bpool *meta, double frac, const int64_t *blocks, int nblocks, uint64_t seed)
{
    if (!(frac > 0)) return;
    as_rng r;
    as_rng_seed(&r, seed, 0x706965636573ULL);
    for (int64_t i = s->nsingles; i < s->n; i++)
        for (int64_t j = 0; j < s->len[i]; j++) {
            /* one draw per entry, whatever the table, so the stream stays aligned */
            const double u = (double)(as_rng_below(&r, (uint64_t)1 << 53)) * 0x1.0p-53;
            const uint64_t pick = as_rng_below(&r, (uint64_t)1 << 62);
            if (u >= frac) continue;
            const as_btable *t = as_bpool_get(meta, s->ids[i][j]);
            if (!t) continue;
            /* the levels: column halvings (2, 4), then row blocks */
            int64_t lv[2 + 64], nlv = 0;
            for (int64_t c = 2; c <= AS_BSAMPLE_MAX_COLS; c *= 2)
                if (t->dim % (4 * c) == 0) lv[nlv++] = -c;
            for (int q = 0; q < nblocks && nlv < 66; q++)
                if (blocks[q] >= 2 && blocks[q] <= t->rows) lv[nlv++] = blocks[q];
            if (!nlv) continue;
            const int64_t L = lv[pick % (uint64_t)nlv], np = L < 0 ? -L : L;
            const int64_t k = (int64_t)((pick / (uint64_t)nlv) % (uint64_t)np);
            as_piece q;
            if (L < 0) {
                const int64_t d = t->dim / np;
                q = (as_piece){ k * d, (k + 1) * d, 0, t->rows };
            } else {
                as_piece *bl = as_malloc((size_t)np * sizeof *bl);
                const int64_t nb = as_piece_row_blocks(t->rows, t->dim, np, bl);
                q = bl[k < nb ? k : nb - 1];
                free(bl);
            }
            if (!s->pc) s->pc = as_calloc((size_t)s->n, sizeof *s->pc);
            if (!s->pc[i]) s->pc[i] = as_calloc((size_t)s->len[i], sizeof **s->pc);
            s->pc[i][j] = q;
        }
}

/* the weight of pool table t for as_bsample_col_singles: lookups x dim, what its kernel moves */
static double col_weight(const as_btable *t) { return (double)t->lookups * (double)t->dim; }

int64_t as_bsample_col_singles(as_bsample *s, const as_bpool *meta, const int64_t *ids, int64_t npool, int64_t top)
{
    int64_t *pick = as_malloc((size_t)(npool ? npool : 1) * sizeof *pick), np = 0;
    for (int64_t i = 0; i < npool; i++) {
        const as_btable *t = as_bpool_get(meta, ids[i]);
        if (t && t->dim % (4 * 2) == 0) pick[np++] = ids[i];   /* a table with a column half */
    }
    /* the top tables by weight (ties: the lower id), by selection: top is small */
    int64_t nt = top < np ? top : np;
    for (int64_t a = 0; a < nt; a++)
        for (int64_t b = a + 1; b < np; b++) {
            const double wa = col_weight(as_bpool_get(meta, pick[a])), wb = col_weight(as_bpool_get(meta, pick[b]));
            if (wb > wa || (wb == wa && pick[b] < pick[a])) { const int64_t x = pick[a]; pick[a] = pick[b]; pick[b] = x; }
        }
    /* room for every column level of each (its first piece), then s->n at what was made */
    int64_t nlev = 0, i = s->n;
    for (int64_t c = 2; c <= AS_BSAMPLE_MAX_COLS; c *= 2) nlev++;
    const int64_t n0 = s->n, room = n0 + nt * nlev;
    if (nt > 0) {
        s->ids = as_realloc(s->ids, (size_t)room * sizeof *s->ids);
        s->len = as_realloc(s->len, (size_t)room * sizeof *s->len);
        s->pc = s->pc ? as_realloc(s->pc, (size_t)room * sizeof *s->pc) : as_calloc((size_t)room, sizeof *s->pc);
    }
    for (int64_t a = 0; a < nt; a++) {
        const as_btable *t = as_bpool_get(meta, pick[a]);
        for (int64_t c = 2; c <= AS_BSAMPLE_MAX_COLS && t->dim % (4 * c) == 0; c *= 2, i++) {
            s->ids[i] = as_malloc(sizeof **s->ids);
            s->ids[i][0] = t->id;
            s->len[i] = 1;
            s->pc[i] = as_malloc(sizeof **s->pc);
            s->pc[i][0] = (as_piece){ 0, t->dim / c, 0, t->rows };
            if (t->id > s->maxid) s->maxid = t->id;
        }
    }
    s->n = i;
    const int64_t add = i - n0;
    free(pick);
    return add;
}

void as_bsample_write(as_writer *w, const as_bsample *s)
{
    for (int64_t i = 0; i < s->n; i++) {
        const int pieces = s->pc && s->pc[i];
        msgpack_packer *pk = as_writer_pk(w);
        msgpack_pack_map(pk, 2 + (size_t)pieces);
        as_pack_kv_str(pk, "kind", "shard");
        as_pack_str(pk, "tables");
        msgpack_pack_array(pk, (size_t)s->len[i]);
        for (int64_t j = 0; j < s->len[i]; j++) msgpack_pack_int64(pk, s->ids[i][j]);
        if (pieces) {
            as_pack_str(pk, "pieces");
            as_pack_pieces(pk, s->pc[i], s->len[i]);
        }
        as_writer_end_record(w);
    }
}

void as_bsample_free(as_bsample *s)
{
    if (!s) return;
    for (int64_t i = 0; s->pc && i < s->n; i++) free(s->pc[i]);
    free(s->pc);
    for (int64_t i = 0; i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    free(s->len);
    memset(s, 0, sizeof *s);
}

/* load the tables of FILE marked in want[0..n); each of them must be there */
static int load_wanted(as_bpool *p, const char *file, const uint8_t *want, int64_t n, char *err, size_t errlen)
{
    if (as_bpool_load(p, file, want, n, 0, err, errlen)) return -1;
    for (int64_t id = 0; id < n; id++)
        if (want[id] && !as_bpool_get(p, id)) {
            snprintf(err, errlen, "table %" PRId64 " is not in the table data %s", id, file);
            as_bpool_free(p);
            return -1;
        }
    return 0;
}

/* the want[] array for ids up to maxid and the extra ids (>= 0), extras marked; *n its size */
static uint8_t *want_new(int64_t maxid, const int64_t *extra, int64_t nextra, int64_t *n)
{
    for (int64_t i = 0; i < nextra; i++) if (extra[i] > maxid) maxid = extra[i];
    uint8_t *want = as_calloc((size_t)(maxid + 1), 1);
    for (int64_t i = 0; i < nextra; i++) if (extra[i] >= 0) want[extra[i]] = 1;
    *n = maxid + 1;
    return want;
}

int as_bsample_tables(as_bpool *p, const char *file, const as_bsample *s, int64_t part_i, int64_t part_n,
                      const int64_t *extra, int64_t nextra, char *err, size_t errlen)
{
    int64_t nw;
    uint8_t *want = want_new(s->maxid, extra, nextra, &nw);
    for (int64_t i = 0; i < s->n; i++)
        if ((i % part_n) == part_i - 1)
            for (int64_t j = 0; j < s->len[i]; j++) want[s->ids[i][j]] = 1;
    int rc = load_wanted(p, file, want, nw, err, errlen);
    free(want);
    for (int64_t i = 0; !rc && s->pc && i < s->n; i++) {
        if ((i % part_n) != part_i - 1 || !s->pc[i]) continue;
        for (int64_t j = 0; j < s->len[i] && !rc; j++) {
            if (as_piece_whole(&s->pc[i][j])) continue;
            const int64_t v = as_bpool_piece(p, s->ids[i][j], &s->pc[i][j], err, errlen);
            if (v < 0) rc = -1;
            else s->ids[i][j] = v;
        }
    }
    if (rc && p->t) as_bpool_free(p);
    return rc;
}

/* ---- the input's records ------------------------------------------------------------------ */

static int read_one(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    as_binput *in = ctx;
    if (as_rec_is(rec, "header")) return 0;
    int kind = as_planrec_is(&rec->obj) ? AS_BREC_PLAN : as_rec_is(rec, "shard") ? AS_BREC_SHARD : AS_BREC_OTHER;
    if (kind) {
        /* every field checked here, once: the measuring loop re-reads records that passed */
        char e2[768];
        as_planrec pr;
        int64_t *ids = NULL, n = 0;
        as_piece *pc = NULL;
        /* a plan: its placement, and the fields it carries through the measurement read as
         * as-eval reads them (lib/records/planrec.h): refused now rather than after the measuring */
        if (kind == AS_BREC_PLAN ? as_planrec_read(&rec->obj, &pr, AS_PLANREC_STRICT | AS_PLANREC_BARE | AS_PLANREC_NO_COSTS,
                                                   e2, sizeof e2)
                                 : as_field_table_ids(&rec->obj, "tables", &ids, &n, e2, sizeof e2) ||
                                       as_field_pieces(&rec->obj, "pieces", n, &pc, e2, sizeof e2)) {
            free(ids);
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s%s", as_reader_name(r), rec->index,
                     kind == AS_BREC_PLAN ? "" : "shard: ", e2);
            return -1;
        }
        if (kind == AS_BREC_PLAN) { ids = pr.tables; n = pr.n; }
        for (int64_t i = 0; i < n; i++) if (ids[i] > in->maxid) in->maxid = ids[i];
        if (kind == AS_BREC_PLAN) as_planrec_free(&pr);
        else free(ids);
        free(pc);
        in->units++;
    }
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 64;
        in->rec = as_realloc(in->rec, (size_t)in->cap * sizeof *in->rec);
    }
    as_brec *h = &in->rec[in->n++];
    h->raw = as_malloc(rec->rawlen);
    memcpy(h->raw, rec->raw, rec->rawlen);
    h->len = rec->rawlen;
    h->kind = kind;
    return 0;
}

int as_binput_read(as_binput *in, char *const *files, int nfiles, char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    in->maxid = -1;
    return as_read_records(files, nfiles, read_one, in, err, errlen);
}

/* (table id, piece) pairs, ordered */
typedef struct {
    int64_t id;
    as_piece p;
} id_piece;

static int cmp_id_piece(const void *a, const void *b)
{
    const id_piece *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return as_piece_cmp(&x->p, &y->p);
}

int64_t as_binput_add_piece_singles(as_binput *in)
{
    id_piece *v = NULL;
    int64_t nv = 0, cap = 0;
    for (int64_t i = 0; i < in->n; i++) {
        if (in->rec[i].kind != AS_BREC_PLAN) continue;
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t off = 0;
        if (msgpack_unpack_next(&u, in->rec[i].raw, in->rec[i].len, &off) == MSGPACK_UNPACK_SUCCESS) {
            as_planrec pr;
            char e2[256];
            if (as_planrec_read(&u.data, &pr, 0, e2, sizeof e2) == 0) {   /* read once before: it passes */
                for (int64_t j = 0; j < pr.n && pr.pieces; j++) {
                    if (as_piece_whole(&pr.pieces[j])) continue;
                    if (nv == cap) {
                        cap = cap ? 2 * cap : 64;
                        v = as_realloc(v, (size_t)cap * sizeof *v);
                    }
                    v[nv++] = (id_piece){ pr.tables[j], pr.pieces[j] };
                }
                as_planrec_free(&pr);
            }
        }
        msgpack_unpacked_destroy(&u);
    }
    if (nv) qsort(v, (size_t)nv, sizeof *v, cmp_id_piece);
    int64_t added = 0;
    for (int64_t a = 0; a < nv; a++) {
        if (a && !cmp_id_piece(&v[a], &v[a - 1])) continue;
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 3);
        as_pack_kv_str(&pk, "kind", "shard");
        as_pack_str(&pk, "tables");
        msgpack_pack_array(&pk, 1);
        msgpack_pack_int64(&pk, v[a].id);
        as_pack_str(&pk, "pieces");
        as_pack_pieces(&pk, &v[a].p, 1);
        if (in->n == in->cap) {
            in->cap = in->cap ? 2 * in->cap : 64;
            in->rec = as_realloc(in->rec, (size_t)in->cap * sizeof *in->rec);
        }
        as_brec *h = &in->rec[in->n++];
        h->raw = as_malloc(sb.size ? sb.size : 1);
        memcpy(h->raw, sb.data, sb.size);
        h->len = sb.size;
        h->kind = AS_BREC_SHARD;
        msgpack_sbuffer_destroy(&sb);
        in->units++;
        added++;
    }
    free(v);
    return added;
}

void as_binput_free(as_binput *in)
{
    if (!in) return;
    for (int64_t i = 0; i < in->n; i++) free(in->rec[i].raw);
    free(in->rec);
    memset(in, 0, sizeof *in);
}

/* unpack held record h into up (destroy it after) */
static const msgpack_object *unpack(msgpack_unpacked *up, const as_brec *h)
{
    size_t off = 0;
    msgpack_unpacked_init(up);
    msgpack_unpack_next(up, h->raw, h->len, &off);
    return &up->data;
}

/* a loaded table's size (as_pieces_check_dims) */
static int pool_size(void *ctx, int64_t id, int64_t *rows, int64_t *dim)
{
    const as_btable *t = as_bpool_get(ctx, id);
    if (!t || t->is_piece || t->b1) return -1;
    *rows = t->rows;
    *dim = t->dim;
    return 0;
}

/* the bag slices of plan pr's data-parallel entries (as_plan_dp_bags), made in p for every
 * shard whose slice is not empty. 0, or -1 with err */
static int make_dp_slices(as_bpool *p, const as_planrec *pr, char *err, size_t errlen)
{
    for (int64_t j = 0; j < pr->n; j++) {
        if (pr->assign[j] != AS_DP) continue;
        const as_btable *t = as_bpool_get(p, pr->tables[j]);
        if (!t) {
            snprintf(err, errlen, "table %" PRId64 " is not in the table data", pr->tables[j]);
            return -1;
        }
        const int64_t B = t->batch;     /* t moves as slices are added */
        for (int64_t k = 0; k < pr->shards; k++) {
            int64_t b0, b1;
            as_plan_dp_bags(B, pr->shards, k, &b0, &b1);
            if (b1 == b0) break;        /* the batch is used up: the later shards' are empty too */
            if (as_bpool_slice(p, pr->tables[j], b0, b1, err, errlen) < 0) return -1;
        }
    }
    return 0;
}

int as_binput_tables(as_bpool *p, const char *file, const as_binput *in, int64_t part_i, int64_t part_n,
                     const int64_t *extra, int64_t nextra, char *err, size_t errlen)
{
    /* for input records, every referenced id must exist: mark them all */
    int64_t nw;
    uint8_t *want = want_new(in->maxid, extra, nextra, &nw);
    int64_t u = 0;
    for (int64_t i = 0; i < in->n; i++) {
        if (!in->rec[i].kind) continue;
        if ((u++ % part_n) != part_i - 1) continue;
        msgpack_unpacked up;
        int64_t *ids, n;
        char e2[512];
        if (as_field_table_ids(unpack(&up, &in->rec[i]), "tables", &ids, &n, e2, sizeof e2)) {
            snprintf(err, errlen, "internal: %s", e2);
            msgpack_unpacked_destroy(&up);
            free(want);
            return -1;
        }
        for (int64_t j = 0; j < n; j++) want[ids[j]] = 1;
        free(ids);
        msgpack_unpacked_destroy(&up);
    }
    int rc = load_wanted(p, file, want, nw, err, errlen);
    free(want);
    if (rc) return -1;
    /* the pieces the units name and the bag slices of the plans' data-parallel tables: made
       now, before a session holds the pool; each piece within its table, and a plan's pieces
       of a table all of it */
    u = 0;
    for (int64_t i = 0; i < in->n && !rc; i++) {
        if (!in->rec[i].kind) continue;
        if ((u++ % part_n) != part_i - 1) continue;
        msgpack_unpacked up;
        const msgpack_object *rec = unpack(&up, &in->rec[i]);
        as_planrec pr;
        int64_t *ids = NULL, n = 0;
        as_piece *pc = NULL;
        char e2[512];
        const int plan = in->rec[i].kind == AS_BREC_PLAN;
        if (plan ? as_planrec_read(rec, &pr, 0, e2, sizeof e2)
                 : as_field_table_ids(rec, "tables", &ids, &n, e2, sizeof e2) || as_field_pieces(rec, "pieces", n, &pc, e2, sizeof e2)) {
            snprintf(err, errlen, "internal: %s", e2);
            free(ids);
            msgpack_unpacked_destroy(&up);
            as_bpool_free(p);
            return -1;
        }
        if (plan) { ids = pr.tables; n = pr.n; pc = pr.pieces; }
        for (int64_t j = 0; pc && j < n && !rc; j++)
            if (!as_piece_whole(&pc[j]) && as_bpool_piece(p, ids[j], &pc[j], e2, sizeof e2) < 0) rc = -1;
        if (!rc && plan && pc && as_pieces_check_dims(ids, pc, n, pool_size, p, e2, sizeof e2)) rc = -1;
        if (!rc && plan && pr.ndp && make_dp_slices(p, &pr, e2, sizeof e2)) rc = -1;
        if (rc) snprintf(err, errlen, "input %s %" PRId64 " (against the table data %s): %s", plan ? "plan" : "shard", u, file, e2);
        if (plan) as_planrec_free(&pr);
        else { free(ids); free(pc); }
        msgpack_unpacked_destroy(&up);
    }
    if (rc) as_bpool_free(p);
    return rc;
}

/* ---- the measuring loop ------------------------------------------------------------------- */

int64_t as_brun_part_units(int64_t units, int64_t part_i, int64_t part_n)
{
    int64_t mine = 0;
    for (int64_t i = 0; i < units; i++) mine += (i % part_n) == part_i - 1;
    return mine;
}

/* one unit of work of a window: a sample, a shard record or a plan record */
enum { UNIT_PLAN = AS_BREC_PLAN, UNIT_SHARD = AS_BREC_SHARD, UNIT_SAMPLE };
typedef struct {
    int kind;               /* UNIT_* */
    int64_t rec;            /* its index in the input records (plan, shard) or the samples */
    const int64_t *ids;     /* sample, shard record: its tables */
    int64_t n;
    /* filled by run_window from the record */
    msgpack_unpacked up;
    int64_t *own_ids;       /* shard record: its tables */
    int64_t task, sid;
    as_planrec pr;
    char alg[64];
    int64_t *start, *order, *flat;  /* plan: shard k's tables are flat[start[k] .. start[k+1]) */
    int64_t *dpstart, *dpflat;      /* plan: shard k's slices of the data-parallel tables are
                                     * dpflat[dpstart[k] .. dpstart[k+1]) (pool ids) */
    int64_t job0;           /* its first job; a plan's jobs are consecutive: for each shard k,
                             * its tables' (when it has any), then its slices' (when it has
                             * any) */
} unit;

typedef struct {
    as_writer *w;
    as_bench_session *sess;
    const as_brun_cfg *c;
    as_noise_cfg noise;     /* c->noise with the retried hook below */
    as_brun_stats *st;
    const as_binput *in;    /* NULL for samples */
    int64_t nsingles;
    int64_t units_done;     /* units of the windows done (all passes) */
    const int64_t *done_after;  /* this window: [jobs] units complete once job j is measured */
    int pass, passes;       /* this window's pass of passes */
    int64_t nwin;           /* this window's units */
} runner;

static void first_done(void *ctx, int64_t j)
{
    const runner *R = ctx;
    if (R->c->progress)
        R->c->progress(R->c->ctx, R->units_done * R->passes + (int64_t)R->pass * R->nwin + R->done_after[j]);
}

static void retried(void *ctx, int round, int64_t k, int64_t m)
{
    const runner *R = ctx;
    R->c->retried(R->c->ctx, round, k, m);
}

/* count result r of a job measured on tables ids[0..n) (pool ids) in the run's figures; a
 * failure goes to the `failed` hook with the tables' ids in the table data and its error
 * after `what` */
static void count_result(runner *R, const int64_t *ids, int64_t n, const as_bench_result *r, const char *what)
{
    as_brun_stats *st = R->st;
    as_bench_tally_add(&st->tally, r);
    if (r->ok && isfinite(r->drift)) {
        if (!st->ndrift || r->drift < st->drift_min) st->drift_min = r->drift;
        if (!st->ndrift || r->drift > st->drift_max) st->drift_max = r->drift;
        st->ndrift++;
    }
    if (r->ok && r->ref_bad && r->ref_level > 0) {
        const double f = r->ref_ms / r->ref_level;
        if (!st->nrefused || f < st->refused_min) st->refused_min = f;
        if (!st->nrefused || f > st->refused_max) st->refused_max = f;
        st->nrefused++;
    }
    if (r->ok) return;
    st->failed++;
    if (!R->c->failed) return;
    const as_bpool *pool = as_bench_session_pool(R->sess);
    int64_t *tb = as_malloc((size_t)(n ? n : 1) * sizeof *tb);
    for (int64_t i = 0; i < n; i++) {
        as_piece q;
        as_bpool_origin(pool, ids[i], &tb[i], &q);
    }
    char e[512];
    snprintf(e, sizeof e, "%s%s", what, r->error);
    R->c->failed(R->c->ctx, tb, n, e);
    free(tb);
}

static void write_cost(runner *R, const int64_t *ids, int64_t n, const as_bench_result *r, const char *origin,
                       int64_t task, const char *alg, int64_t shard)
{
    /* ids of pieces stand for (table, piece): written as the table and `pieces` */
    const as_bpool *pool = as_bench_session_pool(R->sess);
    int pieces = 0;
    for (int64_t i = 0; i < n && !pieces; i++) {
        const as_btable *t = as_bpool_get(pool, ids[i]);
        pieces = t && t->is_piece;
    }
    as_costrec c = { 0 };
    as_bench_costrec(&c, R->c->bench, r);
    c.n = n;
    c.tables = as_malloc((size_t)(n ? n : 1) * sizeof *c.tables);
    c.pieces = pieces ? as_malloc((size_t)n * sizeof *c.pieces) : NULL;
    for (int64_t i = 0; i < n; i++) {
        as_piece q;
        as_bpool_origin(pool, ids[i], &c.tables[i], &q);
        if (pieces) c.pieces[i] = q;
    }
    c.origin = (as_fstr){ origin, AS_F_SET };
    c.task = (as_fint){ task, AS_F_SET };
    c.alg = (as_fstr){ alg, alg ? AS_F_SET : AS_F_NIL };
    c.shard = (as_fint){ shard, AS_F_SET };
    /* the run's reference level, so that a later run can share its scale (--reference-level) */
    if (r->ok && isfinite(r->drift) && R->st->ref_base > 0 && R->noise.ref_n > 0) {
        c.ref_has = AS_F_SET;
        c.ref_tables = (int64_t *)R->noise.ref_ids;
        c.nref = R->noise.ref_n;
        c.ref_level_ms = R->st->ref_base;
    }
    as_costrec_pack(as_writer_pk(R->w), &c);
    free(c.tables);
    free(c.pieces);
    as_writer_end_record(R->w);
    count_result(R, ids, n, r, "");
}

/* a plan's passes (as-bench --passes): `cost_pass_ms`, each pass's costs of the K shards
 * (0 for an empty shard, nil unmeasured), and `cost_pass_spread`, each shard's spread over
 * the passes after each pass's level of the plan is taken out (its cost over the geometric
 * mean of the plan's measured shards in that pass), so that only what moves the plan's
 * balance counts; both nil with one pass */
static void pack_plan_passes(msgpack_packer *pk, int64_t K, const as_bench_result *const *r)
{
    int P = 0;
    for (int64_t k = 0; k < K; k++)
        if (r[k] && r[k]->ok && r[k]->npass > P) P = r[k]->npass;
    as_pack_str(pk, "cost_pass_ms");
    if (P < 2) {
        msgpack_pack_nil(pk);
        as_pack_str(pk, "cost_pass_spread");
        msgpack_pack_nil(pk);
        return;
    }
    double lvl[AS_BENCH_PASS_MAX];
    msgpack_pack_array(pk, (size_t)P);
    for (int p = 0; p < P; p++) {
        double lg = 0;
        int64_t m = 0;
        msgpack_pack_array(pk, (size_t)K);
        for (int64_t k = 0; k < K; k++) {
            const double v = r[k] && r[k]->ok && p < r[k]->npass ? r[k]->pass_ms[p] : NAN;
            if (!r[k]) msgpack_pack_double(pk, 0);
            else if (isfinite(v) && v > 0) { msgpack_pack_double(pk, v); lg += log(v); m++; }
            else msgpack_pack_nil(pk);
        }
        lvl[p] = m ? exp(lg / (double)m) : NAN;
    }
    as_pack_str(pk, "cost_pass_spread");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) {
        double v[AS_BENCH_PASS_MAX];
        for (int p = 0; p < P; p++)
            v[p] = r[k] && r[k]->ok && p < r[k]->npass && isfinite(lvl[p]) ? r[k]->pass_ms[p] / lvl[p] : NAN;
        const double sp = r[k] ? as_bench_pass_spread(v, P) : NAN;
        if (isfinite(sp)) msgpack_pack_double(pk, sp); else msgpack_pack_nil(pk);
    }
}

/* `key`: [K] each shard's cost (0 where r[k] is NULL: nothing to measure; nil where it failed) */
static void pack_costs(msgpack_packer *pk, const char *key, int64_t K, const as_bench_result *const *r)
{
    as_pack_str(pk, key);
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) {
        if (!r[k]) msgpack_pack_double(pk, 0);
        else if (r[k]->ok) msgpack_pack_double(pk, r[k]->cost_ms);
        else msgpack_pack_nil(pk);
    }
}

/* the weight type of the plan's measured shards: theirs when they agree ("fp16" when none
   says), else "mixed" */
static void plan_wtype(char *w, size_t n, int64_t K, const as_bench_result *const *r)
{
    snprintf(w, n, "fp16");
    int seen = 0;
    for (int64_t k = 0; k < K; k++) {
        if (!r[k] || !r[k]->ok) continue;
        const char *x = r[k]->wtype[0] ? r[k]->wtype : "fp16";
        if (!seen++) snprintf(w, n, "%s", x);
        else if (strcmp(w, x)) snprintf(w, n, "mixed");
    }
}

void as_brun_pack_plan(msgpack_packer *pk, const msgpack_object *rec, int64_t K, const as_bench_result *const *r,
                       const as_bench_result *const *dp, double threshold, int64_t row_cap, as_eb_optim optim)
{
    /* the last three written only when they apply (dp; a kind other than fp16 + SGD), but
       old ones always dropped */
    static const char *const mine[] = { "cost_ms", "cost_device", "cost_kind", "cost_spread", "cost_noisy", "noise_threshold",
                                        "cost_pass_ms", "cost_pass_spread", "cost_row_cap", "cost_dp_ms",
                                        "cost_weights_type", "cost_optimizer" };
    const int nmine = (int)(sizeof mine / sizeof *mine);
    char dev[128] = "", wtype[8];
    for (int64_t k = 0; k < K; k++)
        if (r[k]) snprintf(dev, sizeof dev, "%s", r[k]->device);
    plan_wtype(wtype, sizeof wtype, K, r);
    const int kind = strcmp(wtype, "fp16") || optim != AS_EB_SGD;
    uint32_t keep = 0;
    for (uint32_t f = 0; f < rec->via.map.size; f++) {
        int drop = 0;
        for (int m = 0; m < nmine && !drop; m++) drop = as_obj_streq(&rec->via.map.ptr[f].key, mine[m]);
        keep += !drop;
    }
    msgpack_pack_map(pk, keep + (uint32_t)nmine - 3 + !!dp + (kind ? 2 : 0));
    for (uint32_t f = 0; f < rec->via.map.size; f++) {
        const msgpack_object_kv *kv = &rec->via.map.ptr[f];
        int drop = 0;
        for (int m = 0; m < nmine && !drop; m++) drop = as_obj_streq(&kv->key, mine[m]);
        if (drop) continue;
        msgpack_pack_object(pk, kv->key);
        msgpack_pack_object(pk, kv->val);
    }
    pack_costs(pk, "cost_ms", K, r);
    if (dp) pack_costs(pk, "cost_dp_ms", K, dp);
    as_pack_kv_str(pk, "cost_device", dev);
    as_pack_kv_str(pk, "cost_kind", "measured");
    as_pack_str(pk, "cost_spread");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) {
        if (r[k] && r[k]->ok && isfinite(r[k]->spread)) msgpack_pack_double(pk, r[k]->spread);
        else msgpack_pack_nil(pk);
    }
    as_pack_str(pk, "cost_noisy");
    msgpack_pack_array(pk, (size_t)K);
    for (int64_t k = 0; k < K; k++) {
        if (r[k] && r[k]->ok && r[k]->noisy) msgpack_pack_true(pk);
        else msgpack_pack_false(pk);
    }
    as_pack_kv_f64(pk, "noise_threshold", threshold);
    pack_plan_passes(pk, K, r);
    as_pack_str(pk, "cost_row_cap");
    if (row_cap > 0) msgpack_pack_int64(pk, row_cap); else msgpack_pack_nil(pk);
    if (kind) {
        as_pack_kv_str(pk, "cost_weights_type", wtype);
        as_pack_kv_str(pk, "cost_optimizer", as_eb_optim_name(optim));
    }
}

/* out[i] = the pool's id of piece pc[i] of table ids[i] (pc NULL: the ids); out may be ids.
 * -1 with err when a piece was not made (as_binput_tables makes them) */
static int map_pieces(const as_bpool *pool, const int64_t *ids, const as_piece *pc, int64_t n, int64_t *out, char *err,
                      size_t errlen)
{
    for (int64_t i = 0; pc && i < n; i++) {
        const int64_t v = as_bpool_piece_id(pool, ids[i], &pc[i]);
        if (v < 0) {
            char nb[96];
            snprintf(err, errlen, "piece %s was not prepared", as_piece_name(nb, sizeof nb, ids[i], &pc[i]));
            return -1;
        }
        out[i] = v;
    }
    return 0;
}

/* what plan unit un holds (unit_open's), freed */
static void plan_free(unit *un)
{
    free(un->start); free(un->order); free(un->flat);
    free(un->dpstart); free(un->dpflat);
    un->start = un->order = un->flat = un->dpstart = un->dpflat = NULL;
    as_planrec_free(&un->pr);
    free(un->own_ids);
    un->own_ids = NULL;
    msgpack_unpacked_destroy(&un->up);
}

/* plan unit un's data-parallel part (unit.dpstart, .dpflat): for each shard k the pool's ids
 * of its bags of every data-parallel table (as_plan_dp_bags), but the empty ones. 0, or -1
 * with err (a slice not made: as_binput_tables makes them) */
static int unit_dp(unit *un, const as_bpool *pool, char *err, size_t errlen)
{
    const int64_t K = un->pr.shards, *tb = un->pr.tables;
    un->dpstart = as_calloc((size_t)(K + 1), sizeof *un->dpstart);
    un->dpflat = as_malloc((size_t)(un->pr.ndp ? K * un->pr.ndp : 1) * sizeof *un->dpflat);
    if (!un->pr.ndp) return 0;
    for (int64_t k = 0, q = 0; k < K; k++) {
        for (int64_t j = 0; j < un->pr.n; j++) {
            if (un->pr.assign[j] != AS_DP) continue;
            const as_btable *t = as_bpool_get(pool, tb[j]);
            if (!t) {
                snprintf(err, errlen, "data-parallel table %" PRId64 " is not in the table data", tb[j]);
                return -1;
            }
            int64_t b0, b1;
            as_plan_dp_bags(t->batch, K, k, &b0, &b1);
            if (b1 == b0) continue;     /* no bags of it on shard k */
            const int64_t v = as_bpool_slice_id(pool, tb[j], b0, b1);
            if (v < 0) {
                snprintf(err, errlen, "bags [%" PRId64 ", %" PRId64 ") of data-parallel table %" PRId64 " were not prepared",
                         b0, b1, tb[j]);
                return -1;
            }
            un->dpflat[q++] = v;
        }
        un->dpstart[k + 1] = q;
    }
    return 0;
}

/* read unit un's record: its tables, task, id or alg, and a plan's shards (and their
 * data-parallel slices); on error nothing is left to unit_close */
static int unit_open(unit *un, const as_brec *h, const as_bpool *pool, char *err, size_t errlen)
{
    char e2[768];
    const msgpack_object *rec = unpack(&un->up, h);
    un->task = un->sid = -1;
    as_obj_i64(rec, "task", &un->task);
    if (un->kind == UNIT_SHARD) {
        if (as_field_table_ids(rec, "tables", &un->own_ids, &un->n, e2, sizeof e2)) {
            snprintf(err, errlen, "internal: %s", e2);
            msgpack_unpacked_destroy(&un->up);
            return -1;
        }
        as_piece *pc = NULL;
        if (as_field_pieces(rec, "pieces", un->n, &pc, e2, sizeof e2) || map_pieces(pool, un->own_ids, pc, un->n, un->own_ids, e2, sizeof e2)) {
            snprintf(err, errlen, "internal: %s", e2);
            free(pc);
            free(un->own_ids);
            un->own_ids = NULL;
            msgpack_unpacked_destroy(&un->up);
            return -1;
        }
        free(pc);
        un->ids = un->own_ids;
        as_obj_i64(rec, "id", &un->sid);
        return 0;
    }
    un->start = un->order = un->flat = un->dpstart = un->dpflat = NULL;
    if (as_planrec_read(rec, &un->pr, 0, e2, sizeof e2)) {
        snprintf(err, errlen, "internal: %s", e2);
        msgpack_unpacked_destroy(&un->up);
        return -1;
    }
    un->alg[0] = 0;
    as_obj_str(rec, "alg", un->alg, sizeof un->alg);
    const int64_t K = un->pr.shards;
    un->start = as_malloc((size_t)(K + 1) * sizeof *un->start);
    un->order = as_malloc((size_t)(un->pr.n ? un->pr.n : 1) * sizeof *un->order);
    un->flat = as_malloc((size_t)(un->pr.n ? un->pr.n : 1) * sizeof *un->flat);
    /* shard by shard: the tables placed on it (-1: unplaced, not measured) */
    as_planrec_group(&un->pr, un->start, un->order);
    for (int64_t q = 0; q < un->start[K]; q++) un->flat[q] = un->pr.tables[un->order[q]];
    if (un->pr.pieces) {
        as_piece *pc = as_malloc((size_t)(un->start[K] ? un->start[K] : 1) * sizeof *pc);
        for (int64_t q = 0; q < un->start[K]; q++) pc[q] = un->pr.pieces[un->order[q]];
        int rc = map_pieces(pool, un->flat, pc, un->start[K], un->flat, e2, sizeof e2);
        free(pc);
        if (rc) {
            snprintf(err, errlen, "internal: %s", e2);
            plan_free(un);
            return -1;
        }
    }
    if (unit_dp(un, pool, e2, sizeof e2)) {
        snprintf(err, errlen, "internal: %s", e2);
        plan_free(un);
        return -1;
    }
    return 0;
}

static void unit_close(unit *un)
{
    if (un->kind == UNIT_SAMPLE) return;
    if (un->kind == UNIT_PLAN) plan_free(un);
    else {
        free(un->own_ids);
        msgpack_unpacked_destroy(&un->up);
    }
}

/* shard k's result in a plan with data-parallel tables, from its tables' part o and its
 * data-parallel part d (both measured jobs): failed when either failed (its error), else
 * the cost the sum, the spread that of a sum of independent parts, sqrt((s_o c_o)^2 +
 * (s_d c_d)^2) / (c_o + c_d) (NaN when either has none), noisy when either is, each pass's
 * cost the sum (NaN where either has none), forward and backward summed; the rest o's */
static void combine_dp(as_bench_result *out, const as_bench_result *o, const as_bench_result *d)
{
    *out = *o;
    if (!o->ok) return;
    if (!d->ok) {
        out->ok = 0;
        snprintf(out->error, sizeof out->error, "%s", d->error);
        return;
    }
    const double c = o->cost_ms + d->cost_ms;
    out->cost_ms = c;
    out->fwd_ms += d->fwd_ms;
    out->bwd_ms += d->bwd_ms;
    out->spread = isfinite(o->spread) && isfinite(d->spread) && c > 0
                      ? hypot(o->spread * o->cost_ms, d->spread * d->cost_ms) / c : NAN;
    out->noisy = o->noisy || d->noisy;
    out->npass = o->npass > d->npass ? o->npass : d->npass;
    for (int p = 0; p < out->npass && p < AS_BENCH_PASS_MAX; p++)
        out->pass_ms[p] = p < o->npass && p < d->npass ? o->pass_ms[p] + d->pass_ms[p] : NAN;
}

/* write plan unit un: a cost record per shard with tables (their part: a shard's
 * data-parallel slices are no shape of the cost dataset, so they get none), then the plan
 * with each shard's cost, both parts added (combine_dp) */
static void write_plan(runner *R, const unit *un, const as_noise_job *jobs)
{
    const int64_t K = un->pr.shards;
    const as_bench_result **rk = as_calloc((size_t)K, sizeof *rk), **dk = NULL;
    as_bench_result *sum = NULL;
    if (un->pr.ndp) {
        dk = as_calloc((size_t)K, sizeof *dk);
        sum = as_calloc((size_t)K, sizeof *sum);
    }
    for (int64_t k = 0, j = un->job0; k < K; k++) {
        const as_bench_result *o = NULL, *d = NULL;
        if (un->start[k + 1] > un->start[k]) {      /* an empty shard costs nothing */
            o = &jobs[j++].r;
            write_cost(R, un->flat + un->start[k], un->start[k + 1] - un->start[k], o, "plan", un->task, un->alg, k);
        }
        if (un->dpstart[k + 1] > un->dpstart[k]) {
            d = &jobs[j++].r;
            count_result(R, un->dpflat + un->dpstart[k], un->dpstart[k + 1] - un->dpstart[k], d, "data-parallel tables: ");
            dk[k] = d;
        }
        if (o && d) combine_dp(&sum[k], o, d);
        rk[k] = o && d ? &sum[k] : o ? o : d;
    }
    as_brun_pack_plan(as_writer_pk(R->w), &un->up.data, K, rk, dk, R->c->noise.threshold, R->c->bench->row_cap,
                      R->c->bench->optim);
    as_writer_end_record(R->w);
    free(rk);
    free(dk);
    free(sum);
}

/* open the units win[0..nwin) (samples need nothing), each with its first job's number;
 * their jobs' count in *njobs. 0, or -1 with err (the units opened are closed again) */
static int win_open(runner *R, unit *win, int64_t nwin, int64_t *njobs, char *err, size_t errlen)
{
    int64_t nj = 0;
    int rc = 0;
    int64_t opened = 0;
    for (; opened < nwin; opened++) {
        unit *un = &win[opened];
        un->job0 = nj;
        if (un->kind != UNIT_SAMPLE && unit_open(un, &R->in->rec[un->rec], as_bench_session_pool(R->sess), err, errlen)) { rc = -1; break; }
        if (un->kind != UNIT_PLAN) nj++;
        else
            for (int64_t k = 0; k < un->pr.shards; k++)
                nj += (un->start[k + 1] > un->start[k]) + (un->dpstart[k + 1] > un->dpstart[k]);
    }
    if (rc) {
        for (int64_t q = 0; q < opened; q++) unit_close(&win[q]);
        return -1;
    }
    *njobs = nj;
    return 0;
}

/* the jobs of the units win[0..nwin): a shard or sample each; a plan's non-empty shards,
 * each with its tables, then its data-parallel slices (unit.job0); done_after[j]: the
 * units all of whose jobs are among jobs[0..j] (a plan without a job counts with the job
 * before it) */
static void win_jobs(const unit *win, int64_t nwin, as_noise_job *jobs, int64_t njobs, int64_t *done_after)
{
    for (int64_t q = 0; q < nwin; q++) {
        const unit *un = &win[q];
        int64_t j = un->job0;
        if (un->kind != UNIT_PLAN) {
            jobs[j].ids = un->ids;
            jobs[j].n = un->n;
            jobs[j].unit = q;
        } else {
            for (int64_t k = 0; k < un->pr.shards; k++) {
                const int64_t m = un->start[k + 1] - un->start[k], md = un->dpstart[k + 1] - un->dpstart[k];
                if (m) jobs[j++] = (as_noise_job){ .ids = un->flat + un->start[k], .n = m, .unit = q };
                if (md) jobs[j++] = (as_noise_job){ .ids = un->dpflat + un->dpstart[k], .n = md, .unit = q };
            }
        }
    }
    for (int64_t q = 0, j = 0; j < njobs; j++) {
        while (q < nwin && (q + 1 < nwin ? win[q + 1].job0 : njobs) <= j + 1) q++;
        done_after[j] = q;
    }
}

/* the passes over jobs[0..njobs), each with its own rounds, then each shard's passes
 * combined */
static void win_measure(runner *R, as_noise_job *jobs, int64_t njobs)
{
    const int P = R->passes;
    as_bench_result *pr = P > 1 ? as_malloc((size_t)(njobs ? njobs : 1) * (size_t)P * sizeof *pr) : NULL;
    for (int pass = 0; pass < P; pass++) {
        R->pass = pass;
        if (pass) as_bench_session_refresh(R->sess);   /* each pass in fresh allocations */
        as_noise_measure(R->sess, jobs, njobs, &R->noise, first_done, R, &R->st->retry_s);
        for (int64_t j = 0; j < njobs && pr; j++) pr[j * P + pass] = jobs[j].r;
    }
    for (int64_t j = 0; j < njobs && pr; j++) as_noise_passes_combine(&jobs[j].r, pr + j * P, P);
    free(pr);
}

/* write, in order: the samples' cost records, or the input records in[lo..hi) with the
 * measured units' costs */
static void win_write(runner *R, const unit *win, int64_t nwin, const as_noise_job *jobs, int64_t lo, int64_t hi)
{
    if (!R->in) {
        for (int64_t q = 0; q < nwin; q++) {
            const unit *un = &win[q];
            const int64_t i = un->rec, ns = R->nsingles;
            write_cost(R, un->ids, un->n, &jobs[un->job0].r, i < ns ? "single" : "sample", -1, NULL, i < ns ? -1 : i - ns);
        }
    } else {
        int64_t q = 0;
        for (int64_t i = lo; i < hi; i++) {
            if (q < nwin && win[q].rec == i) {
                const unit *un = &win[q++];
                if (un->kind == UNIT_SHARD) write_cost(R, un->ids, un->n, &jobs[un->job0].r, "shard", un->task, NULL, un->sid);
                else write_plan(R, un, jobs);
            } else if (!R->in->rec[i].kind) {
                /* with a part, other records pass through the first part only, so merged
                   outputs hold them once */
                if (R->c->part_i == 1) as_writer_raw(R->w, R->in->rec[i].raw, R->in->rec[i].len);
            }
        }
    }
}

/* Measure the units win[0..nwin) (as_noise_measure's rounds over all their shards), then
 * write, in input order, the records in[lo..hi) (input: units of this part with their costs,
 * other records passed through by part 1, units of other parts left out) or, for samples,
 * the samples' cost records. */
static int run_window(runner *R, unit *win, int64_t nwin, int64_t lo, int64_t hi, char *err, size_t errlen)
{
    int64_t njobs = 0;
    if (win_open(R, win, nwin, &njobs, err, errlen)) return -1;
    as_noise_job *jobs = as_calloc((size_t)(njobs ? njobs : 1), sizeof *jobs);
    int64_t *done_after = as_calloc((size_t)(njobs ? njobs : 1), sizeof *done_after);
    win_jobs(win, nwin, jobs, njobs, done_after);
    R->done_after = done_after;
    R->nwin = nwin;
    win_measure(R, jobs, njobs);
    R->units_done += nwin;
    if (R->c->progress) R->c->progress(R->c->ctx, R->units_done * R->passes);
    win_write(R, win, nwin, jobs, lo, hi);
    for (int64_t q = 0; q < nwin; q++) unit_close(&win[q]);
    free(jobs);
    free(done_after);
    R->done_after = NULL;
    return 0;
}

static void runner_init(runner *R, as_writer *w, as_bench_session *s, const as_brun_cfg *c, as_brun_stats *st)
{
    memset(R, 0, sizeof *R);
    R->w = w;
    R->sess = s;
    R->c = c;
    R->noise = c->noise;
    R->noise.retried = c->retried ? retried : NULL;
    R->noise.ref_base = &st->ref_base;
    R->noise.refused = &st->refused_groups;
    R->noise.own_level = &st->own_level;
    R->st = st;
    R->passes = c->passes > 1 ? c->passes : 1;
}

static unit *window_new(const as_brun_cfg *c, int64_t units)
{
    const int64_t mine = as_brun_part_units(units, c->part_i, c->part_n);
    return as_calloc((size_t)(c->window ? c->window : (mine ? mine : 1)), sizeof(unit));
}

void as_brun_samples(as_writer *w, as_bench_session *s, const as_brun_cfg *c, const as_bsample *smp,
                     as_brun_stats *st)
{
    runner R;
    runner_init(&R, w, s, c, st);
    R.nsingles = smp->nsingles;
    unit *win = window_new(c, smp->n);
    int64_t nwin = 0;
    char err[8];    /* samples open no record: run_window cannot fail */
    for (int64_t i = 0; i < smp->n; i++) {
        if ((i % c->part_n) != c->part_i - 1) continue;
        unit *un = &win[nwin++];
        memset(un, 0, sizeof *un);
        un->kind = UNIT_SAMPLE;
        un->rec = i;
        un->ids = smp->ids[i];
        un->n = smp->len[i];
        if (nwin == c->window) { run_window(&R, win, nwin, 0, 0, err, sizeof err); nwin = 0; }
    }
    run_window(&R, win, nwin, 0, 0, err, sizeof err);
    free(win);
}

int as_brun_input(as_writer *w, as_bench_session *s, const as_brun_cfg *c, const as_binput *in, as_brun_stats *st,
                  char *err, size_t errlen)
{
    runner R;
    runner_init(&R, w, s, c, st);
    R.in = in;
    unit *win = window_new(c, in->units);
    int64_t nwin = 0, emit_from = 0, u = 0;
    int rc = 0;
    for (int64_t i = 0; i < in->n && !rc; i++) {
        if (!in->rec[i].kind) continue;
        if ((u++ % c->part_n) != c->part_i - 1) continue;
        unit *un = &win[nwin++];
        memset(un, 0, sizeof *un);
        un->kind = in->rec[i].kind;
        un->rec = i;
        if (nwin == c->window) {
            rc = run_window(&R, win, nwin, emit_from, i + 1, err, errlen);
            emit_from = i + 1;
            nwin = 0;
        }
    }
    /* the rest: the last window, and records after the last unit */
    if (!rc) rc = run_window(&R, win, nwin, emit_from, in->n, err, errlen);
    free(win);
    return rc;
}

/* ---- a reference level of an earlier run ------------------------------------------------- */

typedef struct {
    const int64_t *ids;
    int64_t n;
    double level;
    int found;
    int64_t row_cap;
} reflev_ctx;

/* a cost record's reference (c read by as_costrec_read_fields) against this run's: 0 when it
 * has none (absent or nil) or the same shard's over the same rows, else -1 with err */
static int reflev_check(const reflev_ctx *x, const as_costrec *c, const char *name, char *err, size_t errlen)
{
    if (c->ref_has == AS_F_ABSENT || c->ref_has == AS_F_NIL) return 0;
    const double level = c->ref_level_ms;
    if (c->ref_has != AS_F_SET || !isfinite(level) || !(level >= AS_BRUN_REF_LEVEL_MIN && level <= AS_BRUN_REF_LEVEL_MAX)) {
        snprintf(err, errlen, "%s: cost record: `reference` is not {\"tables\": [ids], \"level_ms\": a level in [%g, %g] ms}",
                 name, AS_BRUN_REF_LEVEL_MIN, AS_BRUN_REF_LEVEL_MAX);
        return -1;
    }
    int same = c->nref == x->n;
    for (int64_t i = 0; same && i < c->nref; i++) same = c->ref_tables[i] == x->ids[i];
    if (!same) {
        char a[160] = "", b[160] = "";
        size_t ka = 0, kb = 0;
        for (int64_t i = 0; i < c->nref && ka < sizeof a - 24; i++)
            ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%" PRId64, i ? "," : "", c->ref_tables[i]);
        for (int64_t i = 0; i < x->n && kb < sizeof b - 24; i++)
            kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%" PRId64, i ? "," : "", x->ids[i]);
        snprintf(err, errlen, "%s: measured against the reference shard of tables %s, this run's is %s: their levels "
                 "are not comparable (the same --tables and --reference give the same shard)", name, a, b);
        return -1;
    }
    /* the reference measured over the same rows: the same --row-cap (none: nil or absent) */
    const int64_t theirs = c->row_cap.has == AS_F_SET && c->row_cap.v >= 0 ? c->row_cap.v : 0;
    if (theirs != x->row_cap) {
        char ra[32] = "none", rb[32] = "none";
        if (theirs) snprintf(ra, sizeof ra, "%" PRId64, theirs);
        if (x->row_cap) snprintf(rb, sizeof rb, "%" PRId64, x->row_cap);
        snprintf(err, errlen, "%s: measured with --row-cap %s, this run with %s: their reference levels are not comparable",
                 name, ra, rb);
        return -1;
    }
    return 0;
}

static int reflev_record(void *ctx, const as_reader *rd, const as_record *rec, char *err, size_t errlen)
{
    reflev_ctx *x = ctx;
    if (x->found || !as_costrec_is(&rec->obj)) return 0;
    as_costrec c;
    as_costrec_read_fields(&rec->obj, &c);
    const int rc = reflev_check(x, &c, as_reader_name(rd), err, errlen);
    if (!rc && c.ref_has == AS_F_SET) {
        x->level = c.ref_level_ms;
        x->found = 1;
    }
    as_costrec_free(&c);
    return rc;
}

int as_brun_ref_level_read(const char *file, const int64_t *ids, int64_t n, int64_t row_cap, double *level, char *err,
                           size_t errlen)
{
    reflev_ctx x = { ids, n, 0, 0, row_cap > 0 ? row_cap : 0 };
    char *files[1] = { (char *)file };
    if (as_read_records(files, 1, reflev_record, &x, err, errlen)) return -1;
    if (!x.found) {
        snprintf(err, errlen, "%s: no cost record carries a reference level (measured with --reference none, with no "
                 "quiet reference, or by an older as-bench)", file);
        return -1;
    }
    *level = x.level;
    return 0;
}
