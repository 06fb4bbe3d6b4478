/* costdata.c - the cost model's data set, split, baselines, noise and report; see
 * costdata.h. Dimension letters: K shards, T tables. */
#include "costdata.h"
#include "common.h"
#include "costrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading and the join ---------------------------------------------------------------- */

static int dev_index(as_costdata *d, const char *dev, const char *kind)
{
    for (int i = 0; i < d->ndevices; i++) if (!strcmp(d->devices[i], dev)) return i;
    d->devices = as_realloc(d->devices, (size_t)(d->ndevices + 1) * sizeof *d->devices);
    d->devkinds = as_realloc(d->devkinds, (size_t)(d->ndevices + 1) * sizeof *d->devkinds);
    d->devices[d->ndevices] = as_strdup(dev);
    d->devkinds[d->ndevices] = as_strdup(kind);
    return d->ndevices++;
}

/* the record's kind trained, "WEIGHTS + OPTIMIZER", counted among d->trains */
static void train_kind(as_costdata *d, const as_costrec *r)
{
    char w[16] = "fp16", opt[32] = "sgd", k[64];
    if (r->weights_type.s) snprintf(w, sizeof w, "%s", r->weights_type.s);
    if (r->optimizer.s) snprintf(opt, sizeof opt, "%s", r->optimizer.s);
    snprintf(k, sizeof k, "%s + %s", w, opt);
    for (int i = 0; i < d->ntrains; i++) if (!strcmp(d->trains[i], k)) return;
    d->trains = as_realloc(d->trains, (size_t)(d->ntrains + 1) * sizeof *d->trains);
    d->trains[d->ntrains++] = as_strdup(k);
}

static int read_cost(as_costdata *d, const msgpack_object *o, as_costshard *c, char *err, size_t errlen)
{
    /* a measured cost is training data: finite and positive, or the input is bad */
    as_costrec r;
    if (as_costrec_read(o, &r, err, errlen)) return -1;
    if (!r.measured || r.n == 0) {
        if (!r.measured) d->nskipped++;   /* not measured */
        else d->nempty++;
        as_costrec_free(&r);
        return 0;
    }
    char dev[256] = "", kind[16] = "", why[96];
    if (r.device.s) snprintf(dev, sizeof dev, "%s", r.device.s);
    if (r.device_kind.s) snprintf(kind, sizeof kind, "%s", r.device_kind.s);
    /* the device names the model's cost_device (reports, terminals): the names' rule */
    const char *badk = dev[0] && as_name_bad(dev, strlen(dev), why, sizeof why)     ? "device"
                       : kind[0] && as_name_bad(kind, strlen(kind), why, sizeof why) ? "device_kind" : NULL;
    if (badk) {
        snprintf(err, errlen, "cost record: '%s' %s", badk, why);
        as_costrec_free(&r);
        return -1;
    }
    memset(c, 0, sizeof *c);
    c->cost = r.cost_ms.v;
    c->ids = r.tables;
    c->n = r.n;
    c->pieces = r.pieces;
    r.tables = NULL;
    r.pieces = NULL;
    c->rel_std = r.rel_std.has == AS_F_SET ? r.rel_std.v : NAN;
    c->dev = dev_index(d, dev, kind);
    train_kind(d, &r);
    as_costrec_free(&r);
    return 1;
}

/* a new input, numbered in reading order; returns its number */
static int add_input(as_costdata *d, const char *name)
{
    int file = d->nnames++;
    d->names = as_realloc(d->names, (size_t)d->nnames * sizeof *d->names);
    d->names[file] = as_strdup(name);
    return file;
}

/* one record of input `file`: `features` into the index, a usable `cost` into the shards;
 * 0 or -1 with err */
static int read_record(as_costdata *d, int file, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (as_rec_is(rec, "features")) return as_featidx_read(&d->ft, rec, as_reader_name(r), err, errlen) ? -1 : 0;
    if (!as_costrec_is(&rec->obj)) return 0;
    as_costshard c;
    char e2[768];
    int k = read_cost(d, &rec->obj, &c, e2, sizeof e2);
    if (k < 0) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": cost: %s", as_reader_name(r), rec->index, e2);
        return -1;
    }
    if (!k) return 0;
    c.rec = rec->index;
    c.file = file;
    if (d->ncs == d->capcs) {
        d->capcs = d->capcs ? 2 * d->capcs : 1024;
        d->cs = as_realloc(d->cs, (size_t)d->capcs * sizeof *d->cs);
    }
    d->cs[d->ncs++] = c;
    return 0;
}

int as_costdata_read_record(as_costdata *d, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (rec->index == 1) add_input(d, as_reader_name(r));   /* an input is added at its first record */
    return read_record(d, d->nnames - 1, r, rec, err, errlen);
}

/* as_costdata_read_files' record */
static int files_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    return as_costdata_read_record(ctx, r, rec, err, errlen);
}

int as_costdata_read_files(as_costdata *d, char *const *files, int nfiles, char *err, size_t errlen)
{
    return as_read_records(files, nfiles, files_rec, d, err, errlen);
}

int as_costdata_index(as_costdata *d, char *err, size_t errlen)
{
    return as_featidx_build(&d->ft, err, errlen);
}

int as_costdata_check(const as_costdata *d, char *err, size_t errlen)
{
    if (d->ncs == 0) {
        snprintf(err, errlen, "no usable `cost` records in the input (%" PRId64 " skipped)", d->nskipped);
        return -1;
    }
    if (d->ndevices > 1) {
        snprintf(err, errlen, "the costs were measured on %d different devices ('%s', '%s'%s): train one model per device",
                 d->ndevices, d->devices[0], d->devices[1], d->ndevices > 2 ? ", ..." : "");
        return -1;
    }
    if (d->ntrains > 1) {
        snprintf(err, errlen, "the costs were measured training %d different kinds ('%s', '%s'%s): different kernels; "
                              "fit one model per kind (as-bench --weights-type, --optimizer)",
                 d->ntrains, d->trains[0], d->trains[1], d->ntrains > 2 ? ", ..." : "");
        return -1;
    }
    return 0;
}

/* the item of one entry of a shard, table id with piece q (NULL: whole), into *pos: the
 * table's position in d->f, or the piece's (added at the end of d->f the first time, found
 * again by a linear search among the pieces added so far). 0; 1: the table has no
 * `features` record; 2: it has, but the piece's features are not known (as_featidx_piece) */
static int join_item(as_costdata *d, int64_t *capf, int64_t id, const as_piece *q, int64_t *pos)
{
    int64_t k = as_featidx_find(&d->ft, id);
    if (k < 0) return 1;
    if (q && !as_piece_covers(q, d->ft.f[k].rows, d->ft.f[k].dim)) {
        int64_t m = d->ft.n;
        while (m < d->nf && !(d->f[m].id == id && as_piece_eq(&d->f[m].piece, q))) m++;
        if (m == d->nf) {
            as_features pf;
            if (as_featidx_piece(&d->ft, id, q, &pf)) return 2;
            if (d->nf == *capf) {
                *capf *= 2;
                d->f = as_realloc(d->f, (size_t)*capf * sizeof *d->f);
            }
            d->f[d->nf++] = pf;
        }
        k = m;
    }
    *pos = k;
    return 0;
}

/* as_costdata_join (skip 0: a missing table or piece is an error) and
 * as_costdata_join_known (skip 1: that shard is left out and counted) */
static int join(as_costdata *d, int skip, char *err, size_t errlen)
{
    int64_t tot = 0;
    for (int64_t i = 0; i < d->ncs; i++) tot += d->cs[i].n;
    d->off = as_malloc((size_t)(d->ncs + 1) * sizeof *d->off);
    d->idx = as_malloc((size_t)(tot + 1) * sizeof *d->idx);
    d->cost = as_malloc((size_t)(d->ncs + 1) * sizeof *d->cost);
    /* the items: the tables, then each piece once */
    int64_t capf = d->ft.n + 16;
    d->f = as_malloc((size_t)capf * sizeof *d->f);
    if (d->ft.n) memcpy(d->f, d->ft.f, (size_t)d->ft.n * sizeof *d->f);
    d->nf = d->ft.n;
    d->off[0] = 0;
    int64_t w = 0;   /* shards kept; cs[i] moves to cs[w] */
    for (int64_t i = 0; i < d->ncs; i++) {
        as_costshard c = d->cs[i];
        int64_t nf0 = d->nf, j;
        int why = 0;
        for (j = 0; j < c.n; j++)
            if ((why = join_item(d, &capf, c.ids[j], c.pieces ? &c.pieces[j] : NULL, &d->idx[d->off[w] + j]))) break;
        if (why && !skip) {
            char nb[96];
            if (why == 2)
                snprintf(err, errlen, "%s: record %" PRIu64 ": cost of a shard with piece %s, which has no `features` "
                         "record (as-features --row-pieces writes row pieces' features)", d->names[c.file], c.rec,
                         as_piece_name(nb, sizeof nb, c.ids[j], &c.pieces[j]));
            else
                snprintf(err, errlen, "%s: record %" PRIu64 ": cost of a shard with table %" PRId64 ", which has no `features` "
                         "record%s", d->names[c.file], c.rec, c.ids[j],
                         d->ft.n ? "" : " (the input holds no features at all: cat features.ast costs.ast | as-costfit)");
            return -1;   /* nothing was left out (skip 0): cs is whole for as_costdata_free */
        }
        if (why) {
            d->nf = nf0;   /* the pieces this shard added are no item of any shard */
            if (why == 2) d->nnopiece++;
            else d->nnofeat++;
            free(c.ids);
            free(c.pieces);
            continue;
        }
        d->cs[w] = c;
        d->off[w + 1] = d->off[w] + c.n;
        d->cost[w] = c.cost;
        w++;
    }
    d->ncs = w;
    d->set = (as_costset){ d->f, d->nf, d->off, d->idx, d->cost, d->ncs };
    return 0;
}

int as_costdata_join(as_costdata *d, char *err, size_t errlen)
{
    return join(d, 0, err, errlen);
}

void as_costdata_join_known(as_costdata *d)
{
    join(d, 1, NULL, 0);
}

void as_costdata_free(as_costdata *d)
{
    if (!d) return;
    as_featidx_free(&d->ft);
    for (int64_t i = 0; i < d->ncs; i++) { free(d->cs[i].ids); free(d->cs[i].pieces); }
    free(d->f);
    free(d->cs);
    for (int i = 0; i < d->ndevices; i++) {
        free(d->devices[i]);
        free(d->devkinds[i]);
    }
    for (int i = 0; i < d->ntrains; i++) free(d->trains[i]);
    free(d->trains);
    free(d->devices);
    free(d->devkinds);
    for (int i = 0; i < d->nnames; i++) free(d->names[i]);
    free(d->names);
    free(d->off);
    free(d->idx);
    free(d->cost);
    memset(d, 0, sizeof *d);
}

/* a shard's set hash with its pieces: as_costdata_set_hash of its ids when every entry is
 * whole, else that mixed with an order-independent sum over its pieces */
static uint64_t shard_hash(const as_costshard *c)
{
    uint64_t h = as_costdata_set_hash(c->ids, c->n), sum = 0;
    if (!c->pieces || !as_pieces_any(c->pieces, c->n)) return h;
    for (int64_t j = 0; j < c->n; j++) {
        const as_piece *q = &c->pieces[j];
        uint64_t s = (uint64_t)c->ids[j] * 0x9e3779b97f4a7c15ULL;
        const int64_t v[4] = { q->c0, q->c1, q->r0, q->r1 };
        for (int i = 0; i < 4; i++) {
            s ^= (uint64_t)v[i];
            s = as_splitmix64(&s);
        }
        sum += s;
    }
    uint64_t x = h ^ sum;
    return as_splitmix64(&x);
}

uint64_t as_costdata_set_hash(const int64_t *ids, int64_t n)
{
    /* order-independent: sort a copy */
    int64_t *c = as_malloc((size_t)(n + 1) * sizeof *c);
    memcpy(c, ids, (size_t)n * sizeof *c);
    for (int64_t i = 1; i < n; i++)
        for (int64_t j = i; j > 0 && c[j - 1] > c[j]; j--) { int64_t t = c[j]; c[j] = c[j - 1]; c[j - 1] = t; }
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        uint64_t s = h ^ (uint64_t)c[i];
        h = as_splitmix64(&s);
    }
    free(c);
    return h;
}

/* ---- the split ----------------------------------------------------------------------------- */

static void split_alloc(const as_costdata *d, as_costsplit *s)
{
    memset(s, 0, sizeof *s);
    s->train = as_malloc((size_t)(d->ncs + 1) * sizeof *s->train);
    s->test = as_malloc((size_t)(d->ncs + 1) * sizeof *s->test);
}

void as_costdata_split_shards(const as_costdata *d, double test_frac, uint64_t seed, as_costsplit *s)
{
    split_alloc(d, s);
    /* groups of identical table sets go to one side: decide per group from its hash */
    for (int64_t i = 0; i < d->ncs; i++) {
        uint64_t h = shard_hash(&d->cs[i]) ^ (seed * 0x2545f4914f6cdd1dULL) ^ 0x73706c6974ULL;
        double u = (double)(as_splitmix64(&h) >> 11) * 0x1.0p-53;
        if (u < test_frac) s->test[s->ntest++] = i;
        else s->train[s->ntrain++] = i;
    }
}

void as_costdata_split_part(const as_costdata *d, const int64_t *shards, int64_t n, double frac, int fold, uint64_t seed, int64_t *keep,
                            int64_t *nkeep, int64_t *part, int64_t *npart)
{
    *nkeep = *npart = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = shard_hash(&d->cs[shards[i]]) ^ (seed * 0x9e3779b97f4a7c15ULL) ^ 0x76616c6964ULL;   /* "valid" */
        double u = (double)(as_splitmix64(&h) >> 11) * 0x1.0p-53;
        if (u >= fold * frac && u < (fold + 1) * frac) part[(*npart)++] = shards[i];
        else keep[(*nkeep)++] = shards[i];
    }
}

void as_costdata_split_tables(const as_costdata *d, as_costsplit *s)
{
    split_alloc(d, s);
    const as_featidx *ft = &d->ft;
    int64_t half = ft->n / 2;
    s->cut = ft->n > 0 ? ft->f[half < ft->n ? half : ft->n - 1].id : 0;
    /* ids < cut: the first half (training); >= cut: the second (test) */
    for (int64_t i = 0; i < d->ncs; i++) {
        int lo = 0, hi = 0;
        for (int64_t j = 0; j < d->cs[i].n; j++) {
            if (d->cs[i].ids[j] < s->cut) lo = 1;
            else hi = 1;
        }
        if (lo && !hi) s->train[s->ntrain++] = i;
        else if (hi && !lo) s->test[s->ntest++] = i;
        else s->ndropped++;
    }
}

void as_costsplit_free(as_costsplit *s)
{
    if (!s) return;
    free(s->train);
    free(s->test);
    memset(s, 0, sizeof *s);
}

void as_costdata_stats(as_costmodel *m, const as_costdata *d, const as_costsplit *s, double y_scale, int keep,
                       const char *split)
{
    if (!keep) {
        as_costmodel_fit_stats(m, &d->set, s->train, s->ntrain, y_scale);
    } else {
        /* keep its statistics and y_scale; count the training tables */
        as_costmodel_info old = *as_costmodel_meta(m);
        as_costmodel_fit_stats(m, &d->set, s->train, s->ntrain, 1);
        as_costmodel_info *in = as_costmodel_meta(m);
        memcpy(in->mean, old.mean, sizeof in->mean);
        memcpy(in->std, old.std, sizeof in->std);
        in->y_scale = old.y_scale;
    }
    as_costmodel_info *info = as_costmodel_meta(m);
    snprintf(info->cost_device, sizeof info->cost_device, "%s", d->devices[0]);
    snprintf(info->cost_device_kind, sizeof info->cost_device_kind, "%s", d->devkinds[0]);
    snprintf(info->split, sizeof info->split, "%s", split);
    info->train_shards = s->ntrain;
    info->test_shards = s->ntest;
}

/* ---- baselines and noise ------------------------------------------------------------------- */

int64_t as_costdata_sum_single(const as_costdata *d, const int64_t *test, int64_t ntest, double *out, char *cov)
{
    /* sums of the measured 1-table costs per table (mean over repeats), over the whole data */
    double *single = as_calloc((size_t)d->nf + 1, sizeof *single);
    int64_t *nsingle = as_calloc((size_t)d->nf + 1, sizeof *nsingle);
    for (int64_t i = 0; i < d->ncs; i++)
        if (d->cs[i].n == 1) { single[d->idx[d->off[i]]] += d->cost[i]; nsingle[d->idx[d->off[i]]]++; }
    int64_t ncov = 0;
    for (int64_t i = 0; i < ntest; i++) {
        int64_t k = test[i];
        double s = 0;
        int ok = 1;
        for (int64_t j = d->off[k]; j < d->off[k + 1]; j++) {
            /* a 1-table test shard must not predict itself: leave its own measurement out */
            double sum = single[d->idx[j]];
            int64_t cnt = nsingle[d->idx[j]];
            if (d->cs[k].n == 1) { sum -= d->cost[k]; cnt--; }
            if (cnt <= 0) { ok = 0; break; }
            s += sum / (double)cnt;
        }
        cov[i] = (char)ok;
        out[i] = ok ? s : NAN;
        ncov += ok;
    }
    free(single);
    free(nsingle);
    return ncov;
}

double as_costdata_dimpool(const as_costdata *d, int64_t k)
{
    double x = 0;
    for (int64_t j = d->off[k]; j < d->off[k + 1]; j++) x += (double)d->f[d->idx[j]].dim * d->f[d->idx[j]].pooling;
    return x;
}

void as_costdata_linear_fit(const as_costdata *d, const int64_t *shards, int64_t n, double *a, double *b)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = as_costdata_dimpool(d, shards[i]), y = d->cost[shards[i]];
        sx += x; sy += y; sxx += x * x; sxy += x * y;
    }
    double den = n * sxx - sx * sx;
    *b = den != 0 ? (n * sxy - sx * sy) / den : 0;
    *a = (sy - *b * sx) / n;
}

typedef struct { uint64_t h; int64_t i; } hkey;
static int cmp_hkey(const void *a, const void *b)
{
    const hkey *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h ? 1 : (x->i < y->i ? -1 : x->i > y->i);
}

void as_costdata_noise(const as_costdata *d, const int64_t *test, int64_t ntest, as_costnoise *o)
{
    const as_costshard *cs = d->cs;
    int64_t ncs = d->ncs;
    /* the benchmark's own noise: mean rel_std of the test measurements */
    double srs = 0;
    int64_t nrs = 0;
    for (int64_t i = 0; i < ntest; i++) if (isfinite(cs[test[i]].rel_std)) { srs += cs[test[i]].rel_std; nrs++; }
    if (ntest == 0)
        for (int64_t i = 0; i < ncs; i++) if (isfinite(cs[i].rel_std)) { srs += cs[i].rel_std; nrs++; }
    /* repeats of a table set: groups of equal hashes */
    hkey *hk = as_malloc((size_t)(ncs + 1) * sizeof *hk);
    for (int64_t i = 0; i < ncs; i++) { hk[i].h = shard_hash(&cs[i]); hk[i].i = i; }
    qsort(hk, (size_t)ncs, sizeof *hk, cmp_hkey);
    double rep_abs = 0, rep_rel = 0;
    int64_t rep_n = 0, rep_groups = 0;
    for (int64_t a = 0; a < ncs;) {
        int64_t b = a;
        double mu = 0;
        while (b < ncs && hk[b].h == hk[a].h) mu += d->cost[hk[b++].i];
        if (b - a >= 2) {
            mu /= (double)(b - a);
            rep_groups++;
            for (int64_t q = a; q < b; q++) {
                rep_abs += fabs(d->cost[hk[q].i] - mu);
                if (mu > 0) rep_rel += fabs(d->cost[hk[q].i] - mu) / mu;
                rep_n++;
            }
        }
        a = b;
    }
    free(hk);
    o->mean_rel_std = nrs ? srs / nrs : NAN;
    o->repeat_groups = rep_groups;
    o->repeat_mae = rep_n ? rep_abs / rep_n : NAN;
    o->repeat_mape = rep_n ? 100 * rep_rel / rep_n : NAN;
}

/* ---- evaluation ----------------------------------------------------------------------------- */

void as_costeval_run(as_costeval *e, const as_costmodel *m, const as_costdata *d, const as_costsplit *s)
{
    memset(e, 0, sizeof *e);
    int64_t ntrain = s->ntrain, ntest = s->ntest;
    e->ntrain = ntrain;
    e->ntest = ntest;
    e->ytr = as_malloc((size_t)(ntrain + 1) * sizeof *e->ytr);
    e->ptr = as_malloc((size_t)(ntrain + 1) * sizeof *e->ptr);
    e->yte = as_malloc((size_t)(ntest + 1) * sizeof *e->yte);
    e->pte = as_malloc((size_t)(ntest + 1) * sizeof *e->pte);
    as_costmodel_predict_batch(m, &d->set, s->train, ntrain, e->ptr);
    as_costmodel_predict_batch(m, &d->set, s->test, ntest, e->pte);
    for (int64_t i = 0; i < ntrain; i++) e->ytr[i] = d->cost[s->train[i]];
    for (int64_t i = 0; i < ntest; i++) e->yte[i] = d->cost[s->test[i]];
    e->model_train = as_costmodel_metrics_of(e->ytr, e->ptr, NULL, ntrain);
    e->model_test = as_costmodel_metrics_of(e->yte, e->pte, NULL, ntest);
    /* a linear (legacy) model's raw outputs below 0: predictions show them as 0 */
    if (as_costmodel_cmeta(m)->output == AS_CM_OUT_LINEAR && ntest > 0) {
        double *z = as_malloc((size_t)ntest * sizeof *z);
        as_costmodel_z_batch(m, &d->set, s->test, ntest, z);
        for (int64_t i = 0; i < ntest; i++) e->nneg += z[i] < 0;
        free(z);
    }

    /* baseline (a) */
    e->sum_single = as_malloc((size_t)(ntest + 1) * sizeof *e->sum_single);
    e->covered = as_calloc((size_t)ntest + 1, 1);
    e->ncovered = as_costdata_sum_single(d, s->test, ntest, e->sum_single, e->covered);
    e->sum_single_test = as_costmodel_metrics_of(e->yte, e->sum_single, e->covered, ntest);
    e->model_covered = as_costmodel_metrics_of(e->yte, e->pte, e->covered, ntest);

    /* baseline (b) */
    as_costdata_linear_fit(d, s->train, ntrain, &e->lin_a, &e->lin_b);
    e->lin_train = as_malloc((size_t)(ntrain + 1) * sizeof *e->lin_train);
    e->lin_test = as_malloc((size_t)(ntest + 1) * sizeof *e->lin_test);
    for (int64_t i = 0; i < ntrain; i++) e->lin_train[i] = e->lin_a + e->lin_b * as_costdata_dimpool(d, s->train[i]);
    for (int64_t i = 0; i < ntest; i++) e->lin_test[i] = e->lin_a + e->lin_b * as_costdata_dimpool(d, s->test[i]);
    e->lin_train_m = as_costmodel_metrics_of(e->ytr, e->lin_train, NULL, ntrain);
    e->lin_test_m = as_costmodel_metrics_of(e->yte, e->lin_test, NULL, ntest);

    as_costdata_noise(d, s->test, ntest, &e->noise);
    e->test_ntables = as_malloc((size_t)(ntest + 1) * sizeof *e->test_ntables);
    for (int64_t i = 0; i < ntest; i++) e->test_ntables[i] = (int32_t)d->cs[s->test[i]].n;
}

void as_costeval_free(as_costeval *e)
{
    if (!e) return;
    free(e->ytr); free(e->ptr); free(e->yte); free(e->pte);
    free(e->sum_single); free(e->covered);
    free(e->lin_train); free(e->lin_test);
    free(e->test_ntables);
    memset(e, 0, sizeof *e);
}

static void log_metrics(const char *label, as_costmodel_metrics m)
{
    if (m.n == 0) { as_info("  %-26s %7s", label, "-"); return; }
    as_info("  %-26s %7" PRId64 " %10.4g %10.4g %8.2f %8.4f", label, m.n, m.mae, m.mse, m.mape, m.r2);
}

void as_costeval_log(const as_costeval *e, const as_costmodel *m)
{
    as_info("  %-26s %7s %10s %10s %8s %8s", "", "n", "MAE ms", "MSE ms^2", "MAPE %", "R^2");
    log_metrics("model train", e->model_train);
    log_metrics("model test", e->model_test);
    log_metrics("linear(dim*pooling) train", e->lin_train_m);
    log_metrics("linear(dim*pooling) test", e->lin_test_m);
    char lab[64];
    snprintf(lab, sizeof lab, "sum-single test (%.0f%% cov)", e->ntest ? 100.0 * e->ncovered / e->ntest : 0.0);
    log_metrics(lab, e->sum_single_test);
    log_metrics("model test, same shards", e->model_covered);
    as_info("  noise: mean rel_std %.2f%%; %" PRId64 " repeated table sets: MAE %.4g ms (%.2f%%) to their mean",
            100 * e->noise.mean_rel_std, e->noise.repeat_groups, e->noise.repeat_mae, e->noise.repeat_mape);
    if (as_costmodel_cmeta(m)->output == AS_CM_OUT_LINEAR && e->ntest > 0)
        as_info("  output linear: %" PRId64 " of %" PRId64 " test predictions below 0 ms before clamping to 0", e->nneg,
                e->ntest);
}

int as_costeval_heldout(const as_costeval *e, const char *split, as_costmodel_heldout *ho)
{
    memset(ho, 0, sizeof *ho);
    if (e->ntest == 0) return 0;
    ho->present = 1;
    snprintf(ho->split, sizeof ho->split, "%s", split);
    ho->test_shards = e->ntest;
    ho->model = e->model_test;
    ho->linear = e->lin_test_m;
    ho->sum_single = e->sum_single_test;
    ho->coverage = (double)e->ncovered / e->ntest;
    return isfinite(e->model_test.r2) && isfinite(e->lin_test_m.r2) && e->model_test.r2 < e->lin_test_m.r2;
}

/* ---- the report ------------------------------------------------------------------------------- */

static void pack_num(msgpack_packer *pk, double v)
{
    if (isfinite(v)) msgpack_pack_double(pk, v);
    else msgpack_pack_nil(pk);
}

static void pack_metrics(msgpack_packer *pk, const char *k, as_costmodel_metrics m)
{
    as_pack_str(pk, k);
    msgpack_pack_map(pk, 5);
    as_pack_kv_i64(pk, "n", m.n);
    as_pack_str(pk, "mae"); pack_num(pk, m.mae);
    as_pack_str(pk, "mse"); pack_num(pk, m.mse);
    as_pack_str(pk, "mape"); pack_num(pk, m.mape);
    as_pack_str(pk, "r2"); pack_num(pk, m.r2);
}

void as_costfit_report_pack(msgpack_packer *pk, const as_costfit_report_info *ri, const as_costeval *e)
{
    msgpack_pack_map(pk, 26);
    as_pack_kv_str(pk, "kind", "costfit-report");
    as_pack_kv_str(pk, "split", ri->split);
    as_pack_kv_f64(pk, "test_frac", ri->test_frac);
    as_pack_kv_i64(pk, "seed", (int64_t)ri->seed);
    as_pack_kv_str(pk, "cost_device", ri->cost_device);
    as_pack_kv_str(pk, "train_device", ri->train_device);
    as_pack_kv_i64(pk, "costs", ri->costs);
    as_pack_kv_i64(pk, "skipped", ri->skipped);
    as_pack_kv_i64(pk, "train_shards", e->ntrain);
    as_pack_kv_i64(pk, "test_shards", e->ntest);
    as_pack_kv_i64(pk, "dropped_shards", ri->dropped);
    as_pack_kv_i64(pk, "steps", ri->steps);
    as_pack_kv_str(pk, "steps_rule", ri->steps_rule ? ri->steps_rule : "epochs");
    as_pack_str(pk, "validation");
    if (ri->folds > 0) {
        msgpack_pack_map(pk, 4);
        as_pack_kv_i64(pk, "folds", ri->folds);
        double best = 0;
        for (int f = 0; f < ri->folds; f++) best += (double)ri->stops[f].best_step;
        as_pack_kv_i64(pk, "best_step", (int64_t)llround(best / ri->folds));   /* their mean */
        as_pack_kv_f64(pk, "seconds", ri->val_s);
        as_pack_str(pk, "runs");
        msgpack_pack_array(pk, (size_t)ri->folds);
        for (int f = 0; f < ri->folds; f++) {
            const as_costfit_stop *st = &ri->stops[f];
            msgpack_pack_map(pk, 7);
            as_pack_kv_i64(pk, "fit_shards", ri->fit_shards[f]);
            as_pack_kv_i64(pk, "val_shards", ri->val_shards[f]);
            as_pack_kv_i64(pk, "best_step", st->best_step);
            as_pack_kv_i64(pk, "ran", st->ran);
            as_pack_str(pk, "early");
            if (st->early) msgpack_pack_true(pk);
            else msgpack_pack_false(pk);
            as_pack_str(pk, "loss_first"); pack_num(pk, st->first_loss);
            as_pack_str(pk, "loss_best"); pack_num(pk, st->best_loss);
        }
    } else {
        msgpack_pack_nil(pk);
    }
    as_pack_kv_f64(pk, "train_s", ri->train_s);
    as_pack_kv_f64(pk, "samples_per_s", ri->samples_per_s);
    as_pack_str(pk, "model");
    msgpack_pack_map(pk, 3);
    pack_metrics(pk, "train", e->model_train);
    pack_metrics(pk, "test", e->model_test);
    pack_metrics(pk, "test_covered", e->model_covered);
    as_pack_str(pk, "sum_single");
    msgpack_pack_map(pk, 2);
    as_pack_kv_f64(pk, "coverage", e->ntest ? (double)e->ncovered / e->ntest : 0);
    pack_metrics(pk, "test", e->sum_single_test);
    as_pack_str(pk, "linear");
    msgpack_pack_map(pk, 4);
    as_pack_kv_f64(pk, "a", e->lin_a);
    as_pack_kv_f64(pk, "b", e->lin_b);
    pack_metrics(pk, "train", e->lin_train_m);
    pack_metrics(pk, "test", e->lin_test_m);
    as_pack_str(pk, "noise");
    msgpack_pack_map(pk, 4);
    as_pack_str(pk, "mean_rel_std"); pack_num(pk, e->noise.mean_rel_std);
    as_pack_kv_i64(pk, "repeat_groups", e->noise.repeat_groups);
    as_pack_str(pk, "repeat_mae"); pack_num(pk, e->noise.repeat_mae);
    as_pack_str(pk, "repeat_mape"); pack_num(pk, e->noise.repeat_mape);
    int64_t shp[1] = { e->ntest };
    as_pack_kv_array(pk, "test_measured", AS_DT_F64, e->yte, 1, shp);
    as_pack_kv_array(pk, "test_pred", AS_DT_F64, e->pte, 1, shp);
    as_pack_kv_array(pk, "test_sum_single", AS_DT_F64, e->sum_single, 1, shp);
    as_pack_kv_array(pk, "test_linear", AS_DT_F64, e->lin_test, 1, shp);
    as_pack_kv_array(pk, "test_ntables", AS_DT_I32, e->test_ntables, 1, shp);
    int64_t lshp[1] = { ri->nlosses };
    as_pack_kv_array(pk, "losses", AS_DT_F64, ri->losses ? (const void *)ri->losses : (const void *)"", 1, lshp);
}
