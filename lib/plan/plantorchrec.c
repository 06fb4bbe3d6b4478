/* plantorchrec.c - TorchRec's default planner for one host as a baseline; see plantorchrec.h.
 * Dimension letters: T tables, K shards (GPUs), O options of a table, S shards of an option. */
#include "plantorchrec.h"

#include "common.h"
#include "modelcfg.h"
#include "reclimits.h"
#include "trmem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TR_TW, TR_CW, TR_RW, TR_DP };
/* compute kernels, the order they are listed; dense: data_parallel's only one */
enum { TR_FUSED, TR_CACHING, TR_UVM, TR_NKERN, TR_DENSE = TR_NKERN };
#define TR_MAXOPT (3 * TR_NKERN + 1)
#define TR_CROSS_BW (12.5 * 1073741824.0 / 1000.0)   /* constants.py CROSS_NODE_BANDWIDTH, bytes/ms */
#define TR_DP_OPT_FACTOR 9.22                        /* constants.py DP_ELEMENTWISE_KERNELS_PERF_FACTOR */

/* the terms of a shard's perf (Perf in planner/types.py), ms; prefetch_compute is 0 here */
typedef struct {
    double fc, fm, bc, bm;  /* forward compute, forward comms, backward compute, backward comms */
} tr_pf;

/* Perf.total, summed in its order */
static double pf_total(const tr_pf *p)
{
    return p->fc + p->bc + p->fm + p->bm + 0.0;
}

typedef struct {
    int kind;               /* TR_* */
    int kern;               /* TR_FUSED .. TR_UVM */
    int twin;               /* column_wise of one shard: table_wise's twin */
    int64_t nsh;            /* shards: 1 (TW), D / d (CW), K (RW) */
    tr_pf *pc;              /* [nsh] perf terms */
    double *perf;           /* [nsh] their totals, ms */
    uint64_t *fit;          /* [nsh] bytes counted against the cap (as_plan_table_bytes) */
    double *hbm, *ddr;      /* [nsh] TorchRec's storage estimate, bytes */
    int64_t *item;          /* [nsh] index into the table's piece features, -1: no piece
                               (an empty row block) */
    double depth, sum;      /* max and sum of perf */
    double hbm_max, hbm_sum, ddr_max, ddr_sum;
} tr_opt;

typedef struct {
    int nopt;
    tr_opt opt[TR_MAXOPT];
    int by_depth[TR_MAXOPT], by_sum[TR_MAXOPT];   /* option indices sorted by depth / by sum, stable */
    as_features *pf;        /* the features of this table's pieces over all options */
    int64_t npf;
} tr_table;

#define TR_HBM_BW (AS_TR_HBM_GBPS * 1073741824.0 / 1000.0)
#define TR_INTRA_BW (AS_TR_INTRA_GBPS * 1073741824.0 / 1000.0)
#define TR_H2D_BW (AS_TR_HBM_TO_DDR_GBPS * 1073741824.0 / 1000.0)

/* the kernel's device bandwidth, bytes/ms (constants.py kernel_bw_lookup, cuda); prefetch:
 * a prefetch pipeline (then fused_uvm_caching reads at HBM speed) */
static double kern_bw(int kern, int prefetch)
{
    if (kern == TR_DENSE) return 0.5 * TR_HBM_BW;
    if (kern == TR_FUSED || (kern == TR_CACHING && prefetch)) return TR_HBM_BW;
    if (kern == TR_CACHING) return (AS_TR_CACHE_RATIO * TR_HBM_BW + (1 - AS_TR_CACHE_RATIO) * TR_H2D_BW) / 10.0;
    return TR_H2D_BW / 10.0;
}

/* the perf terms of one shard of width d (kind TR_RW: a row block of a table of dim d), the
 * table's pooling L, brank the batch per rank, elem its element size, bw the kernel's; the
 * arithmetic in the order of estimator/estimator.py so that equal estimates tie as there */
static tr_pf perf_terms(int kind, double pooling, double brank, int64_t K, int64_t d, double elem, double bw)
{
    const double bin = pooling * 1.0 * brank, bout = (pooling < 1.0 ? pooling : 1.0) * 1.0 * brank;
    const double Kd = (double)K, dd = (double)d;
    tr_pf p;
    if (kind == TR_RW) {
        const double in = ceil(bin / Kd * Kd * 8.0), lk = bin / Kd * Kd * dd * elem, out = bout * Kd * dd * elem;
        p.fc = (in + lk + out + 0.0) / bw;
        p.fm = out / TR_INTRA_BW;
        p.bc = p.fc * 2.0 + 0.0;
        p.bm = out / TR_INTRA_BW + out * 2.455 / bw;
        return p;
    }
    const double in = ceil(bin * Kd * 8.0), lk = bin * Kd * (double)(d > 32 ? d : 32) * elem,
                 out = bout * Kd * dd * elem;
    const double pen = d >= 128 ? 1.0 : d >= 64 ? 1.15 : 1.75;
    p.fc = (in + lk + out + 0.0) * pen / bw;
    p.fm = out / TR_INTRA_BW;
    p.bc = p.fc * 2.0 + 0.0;
    p.bm = out / TR_INTRA_BW;
    return p;
}

/* the perf terms of a data_parallel shard (estimator.py DataParallelEvaluator, one host of K
 * GPUs): the rank's own batch, no forward communication; backward: the all-reduce of the
 * table's gradient, rows x dim x elem bytes at the all-reduce bandwidth (BasicCommsBandwidths:
 * CROSS_NODE_BANDWIDTH x local world size; one host: (2 x 1 - 1) / 1 of the bytes), and the
 * dense optimizer's elementwise kernels, 9.22 x the bytes at the kernel's bandwidth */
static tr_pf perf_dp(double pooling, double brank, int64_t K, int64_t rows, int64_t d, double elem, double bw)
{
    const double bin = pooling * 1.0 * brank, bout = (pooling < 1.0 ? pooling : 1.0) * 1.0 * brank, dd = (double)d;
    const double in = ceil(bin * 8.0), lk = bin * dd * elem, out = bout * dd * elem;
    const double tsize = (double)rows * dd * elem;
    tr_pf p;
    p.fc = (in + lk + out + 0.0) / bw;
    p.fm = 0;
    p.bc = p.fc * 2.0 + 0.0;
    p.bm = tsize * (2.0 * 1.0 - 1.0) / 1.0 / (TR_CROSS_BW * (double)K) + tsize * TR_DP_OPT_FACTOR / bw;
    return p;
}

double as_tr_perf(int kind, double lookups, double batch, int64_t d, int64_t K)
{
    const tr_pf p = perf_terms(kind == 1 ? TR_RW : TR_TW, batch > 0 ? lookups / batch : 0, batch / (double)K, K, d, 2.0,
                               TR_HBM_BW);
    return pf_total(&p);
}

/* the smallest divisor of D in [128, D) that is a multiple of 4, else D */
static int64_t cw_width(int64_t D)
{
    for (int64_t w = AS_TR_MIN_CW_DIM; w < D; w++)
        if (D % w == 0 && w % 4 == 0) return w;
    return D;
}

static void opt_finish(tr_opt *o)
{
    o->depth = o->sum = 0;
    o->hbm_max = o->hbm_sum = o->ddr_max = o->ddr_sum = 0;
    for (int64_t s = 0; s < o->nsh; s++) {
        if (o->perf[s] > o->depth) o->depth = o->perf[s];
        o->sum += o->perf[s];
        if (o->hbm[s] > o->hbm_max) o->hbm_max = o->hbm[s];
        o->hbm_sum += o->hbm[s];
        if (o->ddr[s] > o->ddr_max) o->ddr_max = o->ddr[s];
        o->ddr_sum += o->ddr[s];
    }
}

static void opt_alloc(tr_opt *o, int kind, int kern, int64_t nsh)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->kern = kern;
    o->nsh = nsh;
    o->pc = as_calloc((size_t)nsh, sizeof *o->pc);
    o->perf = as_calloc((size_t)nsh, sizeof *o->perf);
    o->fit = as_calloc((size_t)nsh, sizeof *o->fit);
    o->hbm = as_calloc((size_t)nsh, sizeof *o->hbm);
    o->ddr = as_calloc((size_t)nsh, sizeof *o->ddr);
    o->item = as_malloc((size_t)nsh * sizeof *o->item);
}

static int64_t add_piece(tr_table *tb, const as_features *f)
{
    tb->pf = as_realloc(tb->pf, (size_t)(tb->npf + 1) * sizeof *tb->pf);
    tb->pf[tb->npf] = *f;
    return tb->npf++;
}

/* what TorchRec's planner sees of a table */
typedef struct {
    double elem;            /* element size of its weights (bytes) */
    double pooling, brank;  /* its pooling factor, the batch per rank */
    double wtab;            /* its weights' bytes */
    int prefetch;           /* under a prefetch pipeline */
} tr_view;

static tr_view table_view(const as_features *f, int64_t K)
{
    tr_view v;
    v.elem = f->data_type[0] ? as_mcfg_dtype_bytes(f->data_type) : 2.0;
    if (!(v.elem > 0)) v.elem = 2.0;
    v.pooling = f->pooling;
    v.brank = nearbyint((double)f->batch / (double)K);
    if (v.brank < 1) v.brank = 1;
    v.wtab = as_features_has_mem(f) ? f->mem.weights : ceil((double)f->rows * (double)f->dim * v.elem);
    v.prefetch = as_features_has_mem(f) && f->mem.in_factor == 3;
    return v;
}

/* TorchRec's storage of one shard, piece p of the table seen as v (shard_estimators.py
 * calculate_shard_storages): a model config's tables carry its terms (trmem.h), other
 * tables get them here as torchrec_planner.py describes them to it (fp16, no optimizer,
 * no pipeline) */
static void shard_storage(const as_features *p, const as_features *f, const tr_view *v, int64_t K, int kind, int kern,
                          double *hbm, double *ddr)
{
    as_trmem m;
    /* data_parallel: the rank's own batch (_calculate_dp_shard_io_sizes): a world of one */
    const int64_t world = kind == TR_DP ? 1 : K;
    if (as_features_has_mem(p)) {
        m = p->mem;
        if (kind == TR_DP) { m.input /= (double)K; m.output /= (double)K; }
    } else if (as_trmem_shard(&m, p->rows, p->dim, f->dim, v->elem, "sgd", "none", v->pooling, (int64_t)v->brank, world,
                              kind == TR_RW)) memset(&m, 0, sizeof m);
    const double io = ceil(m.in_factor * m.input) + ceil(m.out_factor * m.output), w = m.weights + m.optimizer;
    if (kern == TR_FUSED || kern == TR_DENSE) { *hbm = w + io; *ddr = 0; return; }
    *ddr = w;
    if (kern == TR_UVM) { *hbm = io; return; }
    /* fused_uvm_caching: a share of the weights (and their optimizer state) cached in HBM,
       rows x (4 + 16 x ratio) bytes of cache state, and under a prefetch pipeline 7 x input */
    double c = v->wtab > 0 ? ceil(nearbyint(v->wtab * AS_TR_CACHE_RATIO) * m.weights / v->wtab) : 0;
    c += m.weights > 0 ? ceil(c * (m.optimizer / m.weights)) : 0;
    c += ceil((double)p->rows * (4 + 16 * AS_TR_CACHE_RATIO));
    *hbm = c + io + (v->prefetch ? floor(7.0 * m.input) : 0);
}

/* the kernels' options of one sharding type from its pieces pc[0..ns) (RW: K blocks, those
 * past nb empty); each shard's perf of width w */
static void add_kind(tr_table *tb, int kind, int twin, const as_features *f, const tr_view *v, int64_t K,
                     const as_features *pc, const int64_t *pidx, int64_t ns, int64_t nb, int64_t w)
{
    for (int kern = 0; kern < TR_NKERN; kern++) {
        tr_opt *o = &tb->opt[tb->nopt++];
        opt_alloc(o, kind, kern, ns);
        o->twin = twin;
        const double bw = kern_bw(kern, v->prefetch);
        for (int64_t s = 0; s < ns; s++) {
            o->pc[s] = perf_terms(kind, v->pooling, v->brank, K, w, v->elem, bw);
            o->perf[s] = pf_total(&o->pc[s]);
            o->item[s] = s < nb ? pidx[s] : -1;
            if (s < nb) {
                o->fit[s] = as_plan_table_bytes(&pc[s]);
                shard_storage(&pc[s], f, v, K, kind, kern, &o->hbm[s], &o->ddr[s]);
            }
        }
        opt_finish(o);
    }
}

/* the data_parallel option of table f (its features at index whole): K shards, shard s on
 * GPU s, each the whole table with the rank's own batch */
static void add_dp(tr_table *tb, const as_features *f, const tr_view *v, int64_t K, int64_t whole)
{
    tr_opt *o = &tb->opt[tb->nopt++];
    opt_alloc(o, TR_DP, TR_DENSE, K);
    const double bw = kern_bw(TR_DENSE, v->prefetch);
    for (int64_t s = 0; s < K; s++) {
        o->pc[s] = perf_dp(v->pooling, v->brank, K, f->rows, f->dim, v->elem, bw);
        o->perf[s] = pf_total(&o->pc[s]);
        o->item[s] = whole;
        o->fit[s] = as_plan_dp_bytes(f, K);
        shard_storage(f, f, v, K, TR_DP, TR_DENSE, &o->hbm[s], &o->ddr[s]);
    }
    opt_finish(o);
}

/* the options of table f; returns 1 when it has no row_wise for want of features; dp: with
 * data_parallel */
static int make_options(tr_table *tb, const as_features *f, const as_featidx *ft, int64_t K, int dp)
{
    int no_rows = 0;
    const tr_view v = table_view(f, K);
    tb->nopt = 0;
    int64_t whole = add_piece(tb, f);
    /* data_parallel first, as EmbeddingBagCollectionSharder.sharding_types lists it */
    if (dp) add_dp(tb, f, &v, K, whole);
    /* table_wise */
    add_kind(tb, TR_TW, 0, f, &v, K, f, &whole, 1, 1, f->dim);
    /* column_wise: pieces of cw_width, or one (table_wise's twin: the same shard, but an
       option of its own to the proposers as it is to TorchRec's) */
    const int64_t w = cw_width(f->dim);
    if (w < f->dim) {
        const int64_t ns = f->dim / w;
        as_features *pc = as_malloc((size_t)ns * sizeof *pc);
        int64_t *idx = as_malloc((size_t)ns * sizeof *idx);
        int ok = 1;
        for (int64_t j = 0; j < ns && ok; j++) ok = as_features_cols(&pc[j], f, j * w, (j + 1) * w) == 0;
        if (ok) {
            for (int64_t j = 0; j < ns; j++) idx[j] = add_piece(tb, &pc[j]);
            add_kind(tb, TR_CW, 0, f, &v, K, pc, idx, ns, ns, w);
        }
        free(idx);
        free(pc);
    } else
        add_kind(tb, TR_CW, 1, f, &v, K, f, &whole, 1, 1, f->dim);
    /* row_wise: K blocks of ceil(E / K) rows, each shard charged alike */
    if (K >= 2) {
        as_piece *bl = as_malloc((size_t)K * sizeof *bl);
        const int64_t k = as_piece_row_blocks(f->rows, f->dim, K, bl);
        as_features *pc = as_malloc((size_t)(k ? k : 1) * sizeof *pc);
        int64_t *idx = as_malloc((size_t)(k ? k : 1) * sizeof *idx);
        int ok = k >= 2;
        for (int64_t j = 0; j < k && ok; j++) ok = as_featidx_piece(ft, f->id, &bl[j], &pc[j]) == 0;
        if (k >= 2 && !ok) no_rows = 1;
        if (ok) {
            for (int64_t j = 0; j < k; j++) idx[j] = add_piece(tb, &pc[j]);
            add_kind(tb, TR_RW, 0, f, &v, K, pc, idx, K, k, f->dim);
        }
        free(idx);
        free(pc);
        free(bl);
    }
    /* stable sorts of the options by depth and by sum */
    for (int q = 0; q < tb->nopt; q++) tb->by_depth[q] = tb->by_sum[q] = q;
    for (int q = 1; q < tb->nopt; q++)
        for (int r = q; r > 0 && tb->opt[tb->by_depth[r]].depth < tb->opt[tb->by_depth[r - 1]].depth; r--) {
            int x = tb->by_depth[r]; tb->by_depth[r] = tb->by_depth[r - 1]; tb->by_depth[r - 1] = x;
        }
    for (int q = 1; q < tb->nopt; q++)
        for (int r = q; r > 0 && tb->opt[tb->by_sum[r]].sum < tb->opt[tb->by_sum[r - 1]].sum; r--) {
            int x = tb->by_sum[r]; tb->by_sum[r] = tb->by_sum[r - 1]; tb->by_sum[r - 1] = x;
        }
    return no_rows;
}

typedef struct {
    const tr_table *tb;
    int64_t n, K;
    uint64_t cap;
    tr_pf *dev;             /* [K] the perf terms placed on each GPU */
    double *tot;            /* [K] their Perf.total */
    double *perf;           /* [K] the rating's sums */
    uint64_t *mem;          /* [K] bytes placed (as_plan_table_bytes) */
    double *hbm, *ddr;      /* [K] TorchRec's storage estimate placed */
    int64_t *order;         /* [T] */
    int64_t **rank;         /* [T][S] the partition's GPU of each shard, -1 unplaced */
} tr_part;

/* shard s of o fits on GPU k: in TorchRec's estimate (HBM under the cap, DDR under its
 * default DDR_CAP) and in ours (our plans hold every row in HBM: a UVM kernel's shard too) */
static int fits(const tr_part *P, int64_t k, const tr_opt *o, int64_t s)
{
    return as_plan_fits(P->cap, P->mem[k], o->fit[s]) &&
           as_plan_fits(P->cap, (uint64_t)P->hbm[k], (uint64_t)o->hbm[s]) &&
           P->ddr[k] + o->ddr[s] <= AS_TR_DDR_CAP;
}

static void place(tr_part *P, int64_t k, const tr_opt *o, int64_t s)
{
    P->mem[k] += o->fit[s];
    P->hbm[k] += o->hbm[s];
    P->ddr[k] += o->ddr[s];
    P->dev[k].fc += o->pc[s].fc;
    P->dev[k].fm += o->pc[s].fm;
    P->dev[k].bc += o->pc[s].bc;
    P->dev[k].bm += o->pc[s].bm;
    P->tot[k] = pf_total(&P->dev[k]);
}

/* a's storage sum above b's (Storage's order: HBM, then DDR) */
static int storage_above(const tr_opt *a, const tr_opt *b)
{
    return a->hbm_sum > b->hbm_sum || (a->hbm_sum == b->hbm_sum && a->ddr_sum > b->ddr_sum);
}

typedef struct {
    const tr_table *tb;
    const int *ch;
} sort_ctx;

/* descending storage estimate, then task order (a stable sort) */
static int by_storage(const void *x, const void *y, void *arg)
{
    const sort_ctx *c = arg;
    const int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    const tr_opt *a = &c->tb[i].opt[c->ch[i]], *b = &c->tb[j].opt[c->ch[j]];
    if (storage_above(a, b)) return -1;
    if (storage_above(b, a)) return 1;
    return i < j ? -1 : i > j;
}

/* partition proposal ch[T] (option indices) as GreedyPerfPartitioner does; returns its
 * rating (NoopPerfModel), INFINITY when a shard fits nowhere (the placement of the rest is
 * still made) */
static double partition(tr_part *P, const int *ch)
{
    const int64_t n = P->n, K = P->K;
    for (int64_t k = 0; k < K; k++) {
        P->dev[k] = (tr_pf){ 0, 0, 0, 0 };
        P->tot[k] = 0;
        P->mem[k] = 0;
        P->perf[k] = P->hbm[k] = P->ddr[k] = 0;
    }
    int ok = 1;
    /* row_wise and data_parallel (uniform) first, in table order: shard i on GPU i */
    for (int64_t i = 0; i < n; i++) {
        const tr_opt *o = &P->tb[i].opt[ch[i]];
        if (o->kind != TR_RW && o->kind != TR_DP) continue;
        for (int64_t s = 0; s < o->nsh; s++) {
            const int64_t k = s % K;
            if (!fits(P, k, o, s)) { P->rank[i][s] = -1; ok = 0; continue; }
            P->rank[i][s] = k;
            place(P, k, o, s);
        }
    }
    /* then the others by TorchRec's storage estimate, descending, stable */
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (P->tb[i].opt[ch[i]].kind != TR_RW && P->tb[i].opt[ch[i]].kind != TR_DP) P->order[m++] = i;
    const sort_ctx sc = { P->tb, ch };
    qsort_r(P->order, (size_t)m, sizeof *P->order, by_storage, (void *)&sc);
    /* each shard on the GPU of least perf (the sum of its terms, Perf.total) where it fits,
       ties to the lower GPU */
    for (int64_t q = 0; q < m; q++) {
        const int64_t i = P->order[q];
        const tr_opt *o = &P->tb[i].opt[ch[i]];
        for (int64_t s = 0; s < o->nsh; s++) {
            int64_t best = -1;
            for (int64_t k = 0; k < K; k++)
                if ((best < 0 || P->tot[k] < P->tot[best]) && fits(P, k, o, s)) best = k;
            P->rank[i][s] = best;
            if (best < 0) { ok = 0; continue; }
            place(P, best, o, s);
        }
    }
    if (!ok) return INFINITY;
    /* the rating: the largest sum of shard totals on one GPU, summed in proposal order */
    for (int64_t i = 0; i < n; i++) {
        const tr_opt *o = &P->tb[i].opt[ch[i]];
        for (int64_t s = 0; s < o->nsh; s++) P->perf[P->rank[i][s]] += o->perf[s];
    }
    double r = 0;
    for (int64_t k = 0; k < K; k++) if (P->perf[k] > r) r = P->perf[k];
    return r;
}

/* a set of proposals seen (64-bit hashes of the choice vectors), open addressing */
typedef struct {
    uint64_t *h;
    int64_t cap, n;
} seen_set;

static uint64_t hash_choice(const int *ch, int64_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) { h ^= (uint64_t)(ch[i] + 1); h *= 1099511628211ULL; }
    return h ? h : 1;
}

/* 1 when new (and now added) */
static int seen_add(seen_set *s, uint64_t h)
{
    if (2 * (s->n + 1) > s->cap) {
        int64_t nc = s->cap ? 2 * s->cap : 1024;
        uint64_t *nh = as_calloc((size_t)nc, sizeof *nh);
        for (int64_t i = 0; i < s->cap; i++)
            if (s->h[i]) {
                int64_t j = (int64_t)(s->h[i] % (uint64_t)nc);
                while (nh[j]) j = (j + 1) % nc;
                nh[j] = s->h[i];
            }
        free(s->h);
        s->h = nh;
        s->cap = nc;
    }
    int64_t j = (int64_t)(h % (uint64_t)s->cap);
    while (s->h[j]) {
        if (s->h[j] == h) return 0;
        j = (j + 1) % s->cap;
    }
    s->h[j] = h;
    s->n++;
    return 1;
}

typedef struct {
    tr_part *P;
    seen_set seen;
    int *best;              /* [T] the kept proposal */
    int *first;             /* [T] the first proposal (for an infeasible plan) */
    int have_first;
    double best_rating;
    as_tr_info *info;
} tr_search;

static void propose(tr_search *S, const int *ch)
{
    const int64_t n = S->P->n;
    if (!seen_add(&S->seen, hash_choice(ch, n))) return;
    if (!S->have_first) { memcpy(S->first, ch, (size_t)n * sizeof *ch); S->have_first = 1; }
    const double r = partition(S->P, ch);
    S->info->proposals++;
    if (!isfinite(r)) return;
    S->info->feasible++;
    if (r < S->best_rating) {
        S->best_rating = r;
        memcpy(S->best, ch, (size_t)n * sizeof *ch);
    }
}

/* a greedy proposer (GreedyProposer): sorted = each table's order (by depth or by sum); each
 * step moves the table whose current option holds the most (TorchRec's storage estimate:
 * largest shard's HBM, then all HBM, then largest shard's DDR, then all DDR; strictly more
 * than the tables before it) among those with a next option */
static void greedy(tr_search *S, const tr_table *tb, int64_t n, int use_depth, int *idx, int *ch)
{
    for (int64_t i = 0; i < n; i++) idx[i] = 0;
    for (;;) {
        for (int64_t i = 0; i < n; i++) ch[i] = use_depth ? tb[i].by_depth[idx[i]] : tb[i].by_sum[idx[i]];
        propose(S, ch);
        int64_t pick = -1;
        double b[4] = { 0, 0, 0, 0 };
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] + 1 >= tb[i].nopt) continue;
            const tr_opt *o = &tb[i].opt[ch[i]];
            const double c[4] = { o->hbm_max, o->hbm_sum, o->ddr_max, o->ddr_sum };
            int gt = 0;
            for (int j = 0; j < 4; j++)
                if (c[j] != b[j]) { gt = c[j] > b[j]; break; }
            if (gt) {
                pick = i;
                memcpy(b, c, sizeof b);
            }
        }
        if (pick < 0) break;
        idx[pick]++;
    }
}

/* grid search: every combination of the options sorted by depth, when there are at most
 * AS_TR_MAX_GRID (idx, ch: [T] scratch) */
static void grid(tr_search *S, const tr_table *tb, int64_t n, int *idx, int *ch)
{
    double combos = 1;
    for (int64_t i = 0; i < n && combos <= AS_TR_MAX_GRID; i++) combos *= tb[i].nopt;
    if (!n || combos > AS_TR_MAX_GRID) return;
    for (int64_t i = 0; i < n; i++) idx[i] = 0;
    for (;;) {
        for (int64_t i = 0; i < n; i++) ch[i] = tb[i].by_depth[idx[i]];
        propose(S, ch);
        int64_t i = n - 1;   /* the last table moves fastest */
        while (i >= 0 && ++idx[i] == tb[i].nopt) idx[i--] = 0;
        if (i < 0) break;
    }
}

/* uniform (UniformProposer): one sharding type for every table, each at its option of that
 * type of the least depth (ch: [T] scratch) */
static void uniform(tr_search *S, const tr_table *tb, int64_t n, int *ch)
{
    static const int kinds[] = { TR_DP, TR_TW, TR_CW, TR_RW };   /* the sharder's order */
    for (size_t q0 = 0; q0 < sizeof kinds / sizeof *kinds; q0++) {
        const int kind = kinds[q0];
        int all = 1;
        for (int64_t i = 0; i < n && all; i++) {
            int pick = -1;
            for (int q = 0; q < tb[i].nopt; q++) {
                const int o = tb[i].by_depth[q];
                if (tb[i].opt[o].kind == kind) { pick = o; break; }
            }
            if (pick < 0) all = 0;
            ch[i] = pick;
        }
        if (all && n) propose(S, ch);
    }
}

/* the items of the chosen options use[T] (partitioned into P): each table's shards that
 * hold rows, in task order, malloc'd into *items with their ranks in *assign; returns how
 * many */
static int64_t take_items(const tr_table *tb, int64_t n, const int *use, const tr_part *P, as_features **items,
                          int64_t **assign, as_tr_info *info)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m += tb[i].opt[use[i]].kind == TR_DP ? 1 : tb[i].opt[use[i]].nsh;
    *items = as_malloc((size_t)(m ? m : 1) * sizeof **items);
    *assign = as_malloc((size_t)(m ? m : 1) * sizeof **assign);
    m = 0;
    for (int64_t i = 0; i < n; i++) {
        const tr_opt *o = &tb[i].opt[use[i]];
        info->row_wise += o->kind == TR_RW;
        info->column_wise += o->kind == TR_CW && !o->twin;
        info->uvm += o->kern != TR_FUSED && o->kern != TR_DENSE;
        info->data_parallel += o->kind == TR_DP;
        if (o->kind == TR_DP) {
            /* one item, the whole table, on every shard */
            (*items)[m] = tb[i].pf[o->item[0]];
            (*assign)[m++] = AS_DP;
            continue;
        }
        for (int64_t s = 0; s < o->nsh; s++) {
            if (o->item[s] < 0) continue;
            (*items)[m] = tb[i].pf[o->item[s]];
            (*assign)[m] = P->rank[i][s];
            m++;
        }
    }
    return m;
}

/* the tables' options and the partition's buffers freed */
static void tr_free(tr_table *tb, tr_part *P, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        free(P->rank[i]);
        for (int q = 0; q < tb[i].nopt; q++) {
            free(tb[i].opt[q].pc);
            free(tb[i].opt[q].perf);
            free(tb[i].opt[q].fit);
            free(tb[i].opt[q].hbm);
            free(tb[i].opt[q].ddr);
            free(tb[i].opt[q].item);
        }
        free(tb[i].pf);
    }
    free(P->rank);
    free(P->dev);
    free(P->tot);
    free(P->perf);
    free(P->mem);
    free(P->hbm);
    free(P->ddr);
    free(P->order);
    free(tb);
}

int as_tr_plan(const as_plan_cfg *c, const as_featidx *ft, const as_features *const *t, int64_t n, as_features **items,
               int64_t *nitems, int64_t **assign, as_tr_info *info, char *err, size_t errlen)
{
    const double t0 = as_now();
    memset(info, 0, sizeof *info);
    info->rating = NAN;
    *items = NULL;
    *nitems = 0;
    *assign = NULL;
    const int64_t K = c->shards;
    if (K < 1) { snprintf(err, errlen, "a plan needs at least one shard"); return -1; }
    for (int64_t i = 0; i < n; i++)
        if (!as_piece_whole(&t[i]->piece)) {
            snprintf(err, errlen, "torchrec: table %" PRId64 " of the task is a piece", t[i]->id);
            return -1;
        }
    tr_table *tb = as_calloc((size_t)(n ? n : 1), sizeof *tb);
    for (int64_t i = 0; i < n; i++) info->no_rows += make_options(&tb[i], t[i], ft, K, !c->no_dp);
    tr_part P = { tb, n, K, c->mem_cap, as_calloc((size_t)K, sizeof(tr_pf)), as_calloc((size_t)K, sizeof(double)),
                  as_calloc((size_t)K, sizeof(double)),
                  as_calloc((size_t)K, sizeof(uint64_t)), as_calloc((size_t)K, sizeof(double)),
                  as_calloc((size_t)K, sizeof(double)), as_malloc((size_t)(n ? n : 1) * sizeof(int64_t)),
                  as_malloc((size_t)(n ? n : 1) * sizeof(int64_t *)) };
    for (int64_t i = 0; i < n; i++) {
        int64_t mx = 1;
        for (int q = 0; q < tb[i].nopt; q++) if (tb[i].opt[q].nsh > mx) mx = tb[i].opt[q].nsh;
        P.rank[i] = as_malloc((size_t)mx * sizeof(int64_t));
    }
    tr_search S = { &P, { 0 }, as_calloc((size_t)(n ? n : 1), sizeof(int)), as_calloc((size_t)(n ? n : 1), sizeof(int)),
                    0, INFINITY, info };
    int *idx = as_calloc((size_t)(n ? n : 1), sizeof(int)), *ch = as_calloc((size_t)(n ? n : 1), sizeof(int));
    grid(&S, tb, n, idx, ch);
    greedy(&S, tb, n, 1, idx, ch);
    greedy(&S, tb, n, 0, idx, ch);
    uniform(&S, tb, n, ch);
    const int *use = isfinite(S.best_rating) ? S.best : S.first;
    if (isfinite(S.best_rating)) info->rating = S.best_rating;
    if (n) partition(&P, use);
    /* the items: each table's shards that hold rows, in task order */
    *nitems = take_items(tb, n, use, &P, items, assign, info);
    info->ms = (as_now() - t0) * 1e3;
    free(idx);
    free(ch);
    free(S.best);
    free(S.first);
    free(S.seen.h);
    tr_free(tb, &P, n);
    return 0;
}

/* as_planner.items: as_tr_plan, what it made counted */
static int tr_items(const as_plan_cfg *c, const as_featidx *ft, const as_features *const *t, int64_t n, as_features **items,
                    int64_t *nitems, int64_t **assign, as_plan_items_info *info, char *err, size_t errlen)
{
    as_tr_info tri;
    if (as_tr_plan(c, ft, t, n, items, nitems, assign, &tri, err, errlen)) return -1;
    *info = (as_plan_items_info){ .row_wise = tri.row_wise, .column_wise = tri.column_wise,
                                  .data_parallel = tri.data_parallel, .no_rows = tri.no_rows, .ms = tri.ms };
    return 0;
}

/* the torchrec planner: its items and placement are made by tr_items before as_plan_make
 * (as-plan gives the placement as c->policy) */
const as_planner as_planner_torchrec = {
    .needs = AS_PLANNER_PLACEMENT,
    .help = "TorchRec's default planner for one host (lib/plan/plantorchrec.h): per table\n"
            "data_parallel (the table on every GPU, each its own batch; not\n"
            "with --no-dp), table_wise, column_wise (pieces of the smallest divisor of dim in\n"
            "[128, dim)) or row_wise (K row blocks, block i on GPU i; needs\n"
            "the blocks' features: as-features --row-pieces K), chosen and\n"
            "placed by its analytic perf model (897 GiB/s HBM, 600 GiB/s\n"
            "intra-host), its grid, greedy and uniform proposers and its\n"
            "greedy perf partitioner; a baseline, not split by --split-tables",
    .make = as_plan_make_placed,
    .items = tr_items,
};
