/* torchrec.c - TorchRec's default planner for one host as a baseline; see torchrec.h.
 * Dimension letters: T tables, K shards (GPUs), O options of a table, S shards of an option. */
#include "torchrec.h"

#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TR_TW, TR_CW, TR_RW };

typedef struct {
    int kind;               /* TR_* */
    int64_t nsh;            /* shards: 1 (TW), D / d (CW), K (RW) */
    double *perf;           /* [nsh] ms */
    uint64_t *mem;          /* [nsh] weight bytes */
    int64_t *item;          /* [nsh] index into the table's piece features, -1: no piece
                               (an empty row block) */
    double depth, sum;      /* max and sum of perf */
    uint64_t mem_max, mem_sum;
} tr_opt;

typedef struct {
    int nopt;
    tr_opt opt[3];
    int by_depth[3], by_sum[3];   /* option indices sorted by depth / by sum, stable */
    as_features *pf;        /* the features of this table's pieces over all options */
    int64_t npf;
} tr_table;

double as_tr_perf(int kind, double lookups, double batch, int64_t d, int64_t K)
{
    const double hbm = AS_TR_HBM_GBPS * 1073741824.0 / 1000.0, intra = AS_TR_INTRA_GBPS * 1073741824.0 / 1000.0;
    if (kind == 1) {
        const double in = lookups / (double)K * 8.0, lk = lookups / (double)K * (double)d * 2.0, out = batch * (double)d * 2.0;
        const double fwd = (in + lk + out) / hbm;
        return fwd + 2.0 * fwd + 2.0 * out / intra + 2.455 * out / hbm;
    }
    const double in = lookups * 8.0, lk = lookups * (double)(d > 32 ? d : 32) * 2.0, out = batch * (double)d * 2.0;
    const double pen = d >= 128 ? 1.0 : d >= 64 ? 1.15 : 1.75;
    const double fwd = (in + lk + out) * pen / hbm;
    return fwd + 2.0 * fwd + 2.0 * out / intra;
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
    o->mem_max = o->mem_sum = 0;
    for (int64_t s = 0; s < o->nsh; s++) {
        if (o->perf[s] > o->depth) o->depth = o->perf[s];
        o->sum += o->perf[s];
        if (o->mem[s] > o->mem_max) o->mem_max = o->mem[s];
        o->mem_sum += o->mem[s];
    }
}

static void opt_alloc(tr_opt *o, int kind, int64_t nsh)
{
    o->kind = kind;
    o->nsh = nsh;
    o->perf = as_calloc((size_t)nsh, sizeof *o->perf);
    o->mem = as_calloc((size_t)nsh, sizeof *o->mem);
    o->item = as_malloc((size_t)nsh * sizeof *o->item);
}

static int64_t add_piece(tr_table *tb, const as_features *f)
{
    tb->pf = as_realloc(tb->pf, (size_t)(tb->npf + 1) * sizeof *tb->pf);
    tb->pf[tb->npf] = *f;
    return tb->npf++;
}

/* the options of table f; returns 1 when it has no row_wise for want of features */
static int make_options(tr_table *tb, const as_features *f, const as_featidx *ft, int64_t K)
{
    int no_rows = 0;
    tb->nopt = 0;
    /* table_wise */
    tr_opt *o = &tb->opt[tb->nopt++];
    opt_alloc(o, TR_TW, 1);
    o->perf[0] = as_tr_perf(0, (double)f->lookups, (double)f->batch, f->dim, K);
    o->mem[0] = as_plan_table_bytes(f);
    o->item[0] = add_piece(tb, f);
    opt_finish(o);
    /* column_wise, when it cuts */
    const int64_t w = cw_width(f->dim);
    if (w < f->dim) {
        const int64_t ns = f->dim / w;
        as_features *pc = as_malloc((size_t)ns * sizeof *pc);
        int ok = 1;
        for (int64_t j = 0; j < ns && ok; j++) ok = as_features_cols(&pc[j], f, j * w, (j + 1) * w) == 0;
        if (ok) {
            o = &tb->opt[tb->nopt++];
            opt_alloc(o, TR_CW, ns);
            for (int64_t j = 0; j < ns; j++) {
                o->perf[j] = as_tr_perf(0, (double)pc[j].lookups, (double)pc[j].batch, w, K);
                o->mem[j] = as_plan_table_bytes(&pc[j]);
                o->item[j] = add_piece(tb, &pc[j]);
            }
            opt_finish(o);
        }
        free(pc);
    }
    /* row_wise: K blocks of ceil(E / K) rows, each shard charged alike */
    if (K >= 2) {
        as_piece *bl = as_malloc((size_t)K * sizeof *bl);
        const int64_t k = as_piece_row_blocks(f->rows, f->dim, K, bl);
        as_features *pc = as_malloc((size_t)(k ? k : 1) * sizeof *pc);
        int ok = k >= 2;
        for (int64_t j = 0; j < k && ok; j++) ok = as_featidx_piece(ft, f->id, &bl[j], &pc[j]) == 0;
        if (k >= 2 && !ok) no_rows = 1;
        if (ok) {
            o = &tb->opt[tb->nopt++];
            opt_alloc(o, TR_RW, K);
            const double perf = as_tr_perf(1, (double)f->lookups, (double)f->batch, f->dim, K);
            for (int64_t s = 0; s < K; s++) {
                o->perf[s] = perf;
                o->mem[s] = s < k ? as_plan_table_bytes(&pc[s]) : 0;
                o->item[s] = s < k ? add_piece(tb, &pc[s]) : -1;
            }
            opt_finish(o);
        }
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
    double *perf;           /* [K] */
    uint64_t *mem;          /* [K] */
    int64_t *order;         /* [T] */
    uint64_t *key;          /* [T] */
    int64_t **rank;         /* [T][S] the partition's GPU of each shard, -1 unplaced */
} tr_part;

static int fits(const tr_part *P, int64_t k, uint64_t b)
{
    return as_plan_fits(P->cap, P->mem[k], b);
}

/* partition proposal ch[T] (option indices); returns its rating, INFINITY when a shard fits
 * nowhere (the placement of the rest is still made) */
static double partition(tr_part *P, const int *ch)
{
    const int64_t n = P->n, K = P->K;
    for (int64_t k = 0; k < K; k++) { P->perf[k] = 0; P->mem[k] = 0; }
    int ok = 1;
    /* row_wise (uniform) first, in table order: shard i on GPU i */
    for (int64_t i = 0; i < n; i++) {
        const tr_opt *o = &P->tb[i].opt[ch[i]];
        if (o->kind != TR_RW) continue;
        for (int64_t s = 0; s < o->nsh; s++) {
            const int64_t k = s % K;
            if (!fits(P, k, o->mem[s])) { P->rank[i][s] = -1; ok = 0; continue; }
            P->rank[i][s] = k;
            P->mem[k] += o->mem[s];
            P->perf[k] += o->perf[s];
        }
    }
    /* then the others by total memory, descending, stable */
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (P->tb[i].opt[ch[i]].kind != TR_RW) { P->order[m] = i; P->key[i] = P->tb[i].opt[ch[i]].mem_sum; m++; }
    for (int64_t q = 1; q < m; q++)
        for (int64_t r = q; r > 0 && P->key[P->order[r]] > P->key[P->order[r - 1]]; r--) {
            int64_t x = P->order[r]; P->order[r] = P->order[r - 1]; P->order[r - 1] = x;
        }
    for (int64_t q = 0; q < m; q++) {
        const int64_t i = P->order[q];
        const tr_opt *o = &P->tb[i].opt[ch[i]];
        for (int64_t s = 0; s < o->nsh; s++) {
            int64_t best = -1;
            for (int64_t k = 0; k < K; k++)
                if (fits(P, k, o->mem[s]) && (best < 0 || P->perf[k] < P->perf[best])) best = k;
            P->rank[i][s] = best;
            if (best < 0) { ok = 0; continue; }
            P->mem[best] += o->mem[s];
            P->perf[best] += o->perf[s];
        }
    }
    if (!ok) return INFINITY;
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

/* a greedy proposer: sorted = each table's order (by depth or by sum) */
static void greedy(tr_search *S, const tr_table *tb, int64_t n, int use_depth, int *idx, int *ch)
{
    for (int64_t i = 0; i < n; i++) idx[i] = 0;
    for (;;) {
        for (int64_t i = 0; i < n; i++) ch[i] = use_depth ? tb[i].by_depth[idx[i]] : tb[i].by_sum[idx[i]];
        propose(S, ch);
        int64_t pick = -1;
        uint64_t bm = 0, bs = 0;
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] + 1 >= tb[i].nopt) continue;
            const tr_opt *o = &tb[i].opt[ch[i]];
            if (pick < 0 || o->mem_max > bm || (o->mem_max == bm && o->mem_sum > bs)) {
                pick = i;
                bm = o->mem_max;
                bs = o->mem_sum;
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

/* uniform: one sharding type for every table (ch: [T] scratch) */
static void uniform(tr_search *S, const tr_table *tb, int64_t n, int *ch)
{
    for (int kind = TR_TW; kind <= TR_RW; kind++) {
        int all = 1;
        for (int64_t i = 0; i < n; i++) {
            int pick = -1;
            for (int q = 0; q < tb[i].nopt; q++) if (tb[i].opt[q].kind == kind) pick = q;
            if (pick < 0 && kind == TR_CW) pick = 0;   /* no column cut: its table_wise twin */
            if (pick < 0) { all = 0; break; }
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
    for (int64_t i = 0; i < n; i++) m += tb[i].opt[use[i]].nsh;
    *items = as_malloc((size_t)(m ? m : 1) * sizeof **items);
    *assign = as_malloc((size_t)(m ? m : 1) * sizeof **assign);
    m = 0;
    for (int64_t i = 0; i < n; i++) {
        const tr_opt *o = &tb[i].opt[use[i]];
        info->row_wise += o->kind == TR_RW;
        info->column_wise += o->kind == TR_CW;
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
            free(tb[i].opt[q].perf);
            free(tb[i].opt[q].mem);
            free(tb[i].opt[q].item);
        }
        free(tb[i].pf);
    }
    free(P->rank);
    free(P->perf);
    free(P->mem);
    free(P->order);
    free(P->key);
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
    for (int64_t i = 0; i < n; i++) info->no_rows += make_options(&tb[i], t[i], ft, K);
    tr_part P = { tb, n, K, c->mem_cap, as_calloc((size_t)K, sizeof(double)), as_calloc((size_t)K, sizeof(uint64_t)),
                  as_malloc((size_t)(n ? n : 1) * sizeof(int64_t)), as_malloc((size_t)(n ? n : 1) * sizeof(uint64_t)),
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
