/* evalfloor.c - the floor of sharding plans; see evalfloor.h.
 * Dimension letters: T tables (items) of a plan. */
#include "evalfloor.h"

#include "common.h"
#include "costrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double as_eval_floor(const double *single, int64_t n, int64_t *unknown)
{
    double fl = n > 0 ? -INFINITY : NAN;
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(single[i])) u++;
        else if (single[i] > fl) fl = single[i];
    }
    if (unknown) *unknown = u;
    return u ? NAN : fl;
}

/* ---- single-table costs ------------------------------------------------------------------ */

static int dev_index(as_eval_singles *s, const char *dev)
{
    for (int i = 0; i < s->ndevices; i++) if (!strcmp(s->devices[i], dev)) return i;
    s->devices = as_realloc(s->devices, (size_t)(s->ndevices + 1) * sizeof *s->devices);
    s->devices[s->ndevices] = as_strdup(dev);
    return s->ndevices++;
}

static void singles_put(as_eval_singles *s, int64_t id, const as_costrec *c);

int as_eval_singles_take(as_eval_singles *s, const msgpack_object *rec, char *err, size_t errlen)
{
    if (!as_costrec_is(rec)) return 0;
    as_costrec c;
    if (as_costrec_read(rec, &c, err, errlen)) return -1;
    const int64_t id = c.n == 1 ? c.tables[0] : -1;
    /* a piece of the table alone is not the table's single cost */
    const int piece = c.n == 1 && c.pieces && !as_piece_whole(&c.pieces[0]);
    const as_piece pq = piece ? c.pieces[0] : AS_PIECE_WHOLE;
    if (c.n != 1) {   /* a shard of several tables (or none): not a single cost */
        as_costrec_free(&c);
        return 0;
    }
    if (piece) {
        /* a piece alone: into the nested set, keyed by the index of (id, piece) */
        int64_t q = 0;
        while (q < s->npk && !(s->pkid[q] == id && as_piece_eq(&s->pkey[q], &pq))) q++;
        if (q == s->npk) {
            if (s->npk == s->pkcap) {
                s->pkcap = s->pkcap ? 2 * s->pkcap : 64;
                s->pkid = as_realloc(s->pkid, (size_t)s->pkcap * sizeof *s->pkid);
                s->pkey = as_realloc(s->pkey, (size_t)s->pkcap * sizeof *s->pkey);
            }
            s->pkid[q] = id;
            s->pkey[q] = pq;
            s->npk++;
        }
        if (!s->pieces) s->pieces = as_calloc(1, sizeof *s->pieces);
        singles_put(s->pieces, q, &c);
    } else {
        singles_put(s, id, &c);
    }
    as_costrec_free(&c);
    return 0;
}

/* a single record's cost and device under key id */
static void singles_put(as_eval_singles *s, int64_t id, const as_costrec *c)
{
    if (!c->measured) {
        s->skipped++;   /* not measured */
        return;
    }
    char dev[256] = "";
    if (c->device.s) snprintf(dev, sizeof dev, "%s", c->device.s);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->ids = as_realloc(s->ids, (size_t)s->cap * sizeof *s->ids);
        s->cost = as_realloc(s->cost, (size_t)s->cap * sizeof *s->cost);
        s->dev = as_realloc(s->dev, (size_t)s->cap * sizeof *s->dev);
    }
    s->ids[s->n] = id;
    s->cost[s->n] = c->cost_ms.v;
    s->dev[s->n] = dev_index(s, dev);
    s->n++;
}

static int singles_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (!as_costrec_is(&rec->obj)) return 0;
    char msg[768];
    if (as_eval_singles_take(ctx, &rec->obj, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": cost: %s", as_reader_name(r), rec->index, msg);
        return -1;
    }
    return 0;
}

int as_eval_singles_file(as_eval_singles *s, const char *path, char *err, size_t errlen)
{
    char *files[] = { (char *)path };
    return as_read_records(files, 1, singles_rec, s, err, errlen);
}

/* (id, cost) pairs ordered by id, then cost */
typedef struct {
    int64_t id;
    double cost;
} id_cost;

static int cmp_id_cost(const void *a, const void *b)
{
    const id_cost *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->cost > y->cost) - (x->cost < y->cost);
}

void as_eval_singles_build(as_eval_singles *s, const char *device)
{
    free(s->uid);
    free(s->ucount);
    free(s->umedian);
    s->uid = s->ucount = NULL;
    s->umedian = NULL;
    s->nu = s->used = s->other_device = 0;
    int want = -1;   /* the device index records must have; -1 any */
    if (device && *device) {
        want = -2;   /* a device no record names: only records without one count */
        for (int i = 0; i < s->ndevices; i++) if (!strcmp(s->devices[i], device)) want = i;
    }
    id_cost *v = as_malloc((size_t)(s->n ? s->n : 1) * sizeof *v);
    int64_t m = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (want != -1 && s->dev[i] != want && s->devices[s->dev[i]][0]) { s->other_device++; continue; }
        v[m].id = s->ids[i];
        v[m++].cost = s->cost[i];
    }
    s->used = m;
    qsort(v, (size_t)m, sizeof *v, cmp_id_cost);
    size_t sz = (size_t)(m ? m : 1);
    s->uid = as_malloc(sz * sizeof *s->uid);
    s->ucount = as_malloc(sz * sizeof *s->ucount);
    s->umedian = as_malloc(sz * sizeof *s->umedian);
    for (int64_t a = 0, b; a < m; a = b) {
        for (b = a; b < m && v[b].id == v[a].id; b++) {}
        int64_t c = b - a;
        s->uid[s->nu] = v[a].id;
        s->ucount[s->nu] = c;
        s->umedian[s->nu++] = c % 2 ? v[a + c / 2].cost : 0.5 * (v[a + c / 2 - 1].cost + v[a + c / 2].cost);
    }
    free(v);
    if (s->pieces) as_eval_singles_build(s->pieces, device);
}

double as_eval_singles_get_piece(const as_eval_singles *s, int64_t id, const as_piece *p, int64_t *count)
{
    if (count) *count = 0;
    if (!s->pieces) return NAN;
    for (int64_t q = 0; q < s->npk; q++)
        if (s->pkid[q] == id && as_piece_eq(&s->pkey[q], p)) return as_eval_singles_get(s->pieces, q, count);
    return NAN;
}

double as_eval_singles_get(const as_eval_singles *s, int64_t id, int64_t *count)
{
    int64_t lo = 0, hi = s->nu;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (s->uid[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    int found = lo < s->nu && s->uid[lo] == id;
    if (count) *count = found ? s->ucount[lo] : 0;
    return found ? s->umedian[lo] : NAN;
}

void as_eval_singles_free(as_eval_singles *s)
{
    if (!s) return;
    if (s->pieces) {
        as_eval_singles_free(s->pieces);
        free(s->pieces);
    }
    free(s->pkid);
    free(s->pkey);
    free(s->ids);
    free(s->cost);
    free(s->dev);
    for (int i = 0; i < s->ndevices; i++) free(s->devices[i]);
    free(s->devices);
    free(s->uid);
    free(s->ucount);
    free(s->umedian);
    memset(s, 0, sizeof *s);
}

/* ---- floors of plans ---------------------------------------------------------------------- */

/* the share of entry i's single (whole-batch) cost that the floor takes: 1, and 1/K for a
 * data-parallel table, whose every shard looks up 1/K of the batch (as_plan_dp_bags). Its
 * slice alone is taken to cost its single cost over K: an approximation (a kernel's fixed
 * costs do not shrink with the bags, so a slice usually costs a little more), the same
 * as as-plan's item_pred_ms of such an entry (its full-batch prediction over K) */
static double dp_share(const as_planrec_full *q, int64_t i)
{
    return q->assign && q->assign[i] == AS_DP && q->K > 0 ? 1.0 / (double)q->K : 1.0;
}

void as_eval_floor_measured(as_planrec_full *p, int64_t n, const as_eval_singles *s)
{
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        double *single = as_malloc((size_t)(q->T ? q->T : 1) * sizeof *single);
        /* a piece: its own single cost (never the table's, which is more), NaN without one;
           a data-parallel table: its single cost over K (dp_share) */
        for (int64_t i = 0; i < q->T; i++)
            single[i] = q->pieces && !as_piece_whole(&q->pieces[i])
                            ? as_eval_singles_get_piece(s, q->tables[i], &q->pieces[i], NULL)
                            : as_eval_singles_get(s, q->tables[i], NULL) * dp_share(q, i);
        q->floor = as_eval_floor(single, q->T, &q->floor_unknown);
        free(single);
    }
}

void as_eval_floor_estimated(as_planrec_full *p, int64_t n, const as_costmodel *cm, const as_featidx *ft)
{
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        double *single = as_malloc((size_t)(q->T ? q->T : 1) * sizeof *single);
        for (int64_t i = 0; i < q->T; i++) {
            /* a piece: the model's price of the piece alone */
            as_features pf;
            const as_features *f = &pf;
            if (as_featidx_piece(ft, q->tables[i], q->pieces ? &q->pieces[i] : &AS_PIECE_WHOLE, &pf)) f = NULL;
            single[i] = f ? as_costmodel_predict(cm, &f, 1) * dp_share(q, i) : NAN;
        }
        q->floor = as_eval_floor(single, q->T, &q->floor_unknown);
        free(single);
    }
}

void as_eval_floor_none(as_planrec_full *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        p[j].floor = NAN;
        p[j].floor_unknown = p[j].T;
    }
}

void as_eval_floor_mark(as_planrec_full *p, int64_t n, double margin)
{
    for (int64_t j = 0; j < n; j++) {
        as_planrec_full *q = &p[j];
        q->floor_margin = margin;
        q->at_floor = q->ok && isfinite(q->floor) && isfinite(q->kmax) ? q->kmax <= q->floor * (1 + margin) : -1;
    }
}

void as_eval_floor_bound(const as_planrec_full *p, int64_t n, double margin, as_eval_floorbound *fb)
{
    memset(fb, 0, sizeof *fb);
    fb->margin = margin;
    char *seen = as_calloc((size_t)(n ? n : 1), 1);
    int64_t maxrun = -1;
    for (int64_t j = 0; j < n; j++) if (p[j].run > maxrun) maxrun = p[j].run;
    char *run_seen = as_calloc((size_t)(maxrun + 2), 1);
    for (int64_t j = 0; j < n; j++) {
        if (seen[j]) continue;
        /* the (run, task) pair of plan j: its best usable plan and its floor */
        double best = INFINITY, fl = NAN;
        int usable = 0;
        for (int64_t i = j; i < n; i++) {
            if (p[i].run != p[j].run || p[i].task != p[j].task) continue;
            seen[i] = 1;
            if (isfinite(p[i].floor) && !(p[i].floor <= fl)) fl = p[i].floor;
            if (p[i].ok && isfinite(p[i].kmax)) {
                usable = 1;
                if (p[i].kmax < best) best = p[i].kmax;
            }
        }
        if (!usable) continue;
        fb->tasks++;
        if (p[j].run >= 0 && !run_seen[p[j].run]) { run_seen[p[j].run] = 1; fb->runs++; }
        if (isnan(fl)) continue;
        fb->known++;
        fb->bound += best <= fl * (1 + margin);
    }
    free(seen);
    free(run_seen);
}

/* "task", "tasks", "task run", "task runs": n of them, over one run or several */
static const char *task_word(int64_t n, int64_t runs)
{
    if (runs > 1) return n == 1 ? "task run" : "task runs";
    return n == 1 ? "task" : "tasks";
}

void as_eval_floor_words(FILE *f, as_eval_format fmt, const as_eval_floorbound *fb, const char *label)
{
    const char *B = fmt == AS_EVAL_MARKDOWN ? "**" : "";
    int estimated = label && !strcmp(label, "estimated");
    if (!fb->known) {
        char all[64];
        if (fb->tasks == 1) snprintf(all, sizeof all, "the one %s", task_word(1, fb->runs));
        else snprintf(all, sizeof all, "all %" PRId64 " %s", fb->tasks, task_word(fb->tasks, fb->runs));
        if (estimated) fprintf(f, "Floor: unknown for %s: no cost model prices the tables alone (give the model with --model)", all);
        else fprintf(f, "Floor: unknown for %s: no single-table cost for their tables (give the cost dataset of as-bench "
                        "--singles with --singles FILE or in the input)", all);
        return;
    }
    char within[64];
    if (fb->margin > 0) snprintf(within, sizeof within, "at most %g %% above", 100 * fb->margin);
    else snprintf(within, sizeof within, "at or below");
    fprintf(f, "%sFloor-bound: %" PRId64 " of %" PRId64 " %s%s (the best plan's slowest shard is %s the floor, the "
               "costliest table %s alone%s)", B, fb->bound, fb->known, task_word(fb->known, fb->runs), B, within,
            estimated ? "predicted" : "measured", fb->margin > 0 ? ", or below it" : "");
    if (fb->bound)
        fprintf(f, ": in those, no table-wise plan can go below the floor, whatever the planner, so balance and speedup "
                   "cannot improve much; splitting tables is what can");
    else fprintf(f, ": every best plan is above its floor, so table-wise planning still has room");
    if (fb->known < fb->tasks)
        fprintf(f, "; the floor is unknown for %" PRId64 " more %s (%s)", fb->tasks - fb->known,
                task_word(fb->tasks - fb->known, fb->runs),
                estimated ? "tables the cost model cannot price alone" : "tables without a single-table cost");
}

void as_eval_print_floor(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, double margin, const char *label)
{
    if (fmt == AS_EVAL_CSV) return;
    as_eval_floorbound fb;
    as_eval_floor_bound(p, n, margin, &fb);
    as_eval_floor_words(f, fmt, &fb, label);
    fprintf(f, ".\n\n");
}
