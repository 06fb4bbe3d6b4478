/* split.c - the beam search over table splits; see split.h. Dimension letters: T tables, P
 * items, L levels of a table. */
#include "split.h"
#include "common.h"
#include "objective.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a level's kind: the whole table; equal column pieces (on any ranks); row blocks placed
   freely (--split-rows LIST: not loadable); TorchRec's row_wise (K blocks, block i on rank i:
   pinned, pins.h); TorchRec's table_row_wise (L blocks on the L ranks of one host, under a
   model of hosts of L: pinned, pins.h) */
enum { LV_WHOLE, LV_COLS, LV_ROWS, LV_RW, LV_TWRW };

typedef struct {
    int kind;               /* LV_* */
    int64_t npc;            /* its pieces */
    as_features *f;         /* [npc] */
    double worst;           /* the costliest piece's predicted cost alone (ms) */
} level;

typedef struct {
    level *lv;              /* [nlv]: lv[0] the whole table, then its column levels, then its
                             * row levels, each kind in ascending piece count */
    int nlv;
} tsplit;

/* the predicted cost of one item alone */
static double alone(const as_plan_model *m, const as_features *f, float *rep)
{
    m->embed(m->ctx, f, rep);
    return m->head(m->ctx, rep);
}

static void add_level(tsplit *s, int kind, as_features *f, int64_t npc, const as_plan_model *m, float *rep)
{
    level *l = &s->lv[s->nlv++];
    l->kind = kind;
    l->npc = npc;
    l->f = f;
    l->worst = 0;
    for (int64_t j = 0; j < npc; j++) {
        double y = alone(m, &f[j], rep);
        if (y > l->worst) l->worst = y;
    }
}

/* the row level of table f in nb blocks (TorchRec's cut, as_piece_row_blocks) from the
   blocks' features in ft, of kind `kind`; nothing when a block has no features */
static void add_rows(tsplit *s, int kind, const as_features *f, const as_featidx *ft, int64_t nb, const as_plan_model *m,
                     float *rep)
{
    /* table_row_wise cuts a table of fewer rows than a host's ranks too: a row a block */
    if (nb < 2 || f->rows < 2 || (nb > f->rows && kind != LV_TWRW)) return;
    as_piece *bl = as_malloc((size_t)nb * sizeof *bl);
    const int64_t k = as_piece_row_blocks(f->rows, f->dim, nb, bl);
    as_features *pc = as_malloc((size_t)(k ? k : 1) * sizeof *pc);
    int ok = k >= 2;
    for (int64_t j = 0; j < k && ok; j++) ok = as_featidx_piece(ft, f->id, &bl[j], &pc[j]) == 0;
    free(bl);
    if (!ok) { free(pc); return; }
    add_level(s, kind, pc, k, m, rep);
}

/* the levels of table f (at most 4 + log2 dim + nrowp of them): whole, its column levels (of
   at most sc->max_cols pieces), TorchRec's row_wise over K ranks (unless sc->no_row_wise), its table_row_wise over a host of L ranks (L >= 2:
   K a multiple of L above it, else none), the free row levels rowp other than K and L */
static void make_levels(tsplit *s, const as_features *f, const as_featidx *ft, const as_split_cfg *sc, int64_t K,
                        int64_t L, const as_plan_model *m, float *rep)
{
    const int64_t *rowp = sc->rowp, maxc = sc->max_cols > 0 ? sc->max_cols : 64;
    const int nrowp = sc->rowp ? sc->nrowp : 0;
    s->lv = as_calloc((size_t)(4 + 64 + nrowp), sizeof *s->lv);
    s->nlv = 0;
    as_features *w = as_malloc(sizeof *w);
    *w = *f;
    add_level(s, LV_WHOLE, w, 1, m, rep);
    if (!as_piece_whole(&f->piece)) return;     /* a task's tables are whole */
    for (int64_t c = 2; c <= maxc && f->dim % (4 * c) == 0; c *= 2) {
        as_features *pc = as_malloc((size_t)c * sizeof *pc);
        const int64_t d = f->dim / c;
        int ok = 1;
        for (int64_t j = 0; j < c && ok; j++) ok = as_features_cols(&pc[j], f, j * d, (j + 1) * d) == 0;
        if (!ok) { free(pc); break; }
        add_level(s, LV_COLS, pc, c, m, rep);
    }
    if (!sc->no_row_wise) add_rows(s, LV_RW, f, ft, K, m, rep);
    if (L >= 2) add_rows(s, LV_TWRW, f, ft, L, m, rep);
    for (int q = 0; q < nrowp; q++)   /* K or L blocks: row_wise's or table_row_wise's cut, pinned */
        if (rowp[q] != K && (L < 2 || rowp[q] != L)) add_rows(s, LV_ROWS, f, ft, rowp[q], m, rep);
}

/* the next level of table s after level L for a split of kind `kind` (LV_COLS, LV_ROWS or
 * LV_RW from the whole table), or -1 */
static int next_level(const tsplit *s, int L, int kind)
{
    const int want = L == 0 ? kind : s->lv[L].kind;
    for (int j = L + 1; j < s->nlv; j++)
        if (s->lv[j].kind == want) return j;
    return -1;
}

typedef struct {
    int *lvl;               /* [T] the level of each table */
    double score;
    int64_t items;
    int64_t order;          /* made-order, for ties */
} node;

/* the items of node lvl into it[] (pointers into the levels); returns P */
static int64_t node_items(const tsplit *s, const int *lvl, int64_t n, const as_features **it)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const level *l = &s[i].lv[lvl[i]];
        for (int64_t j = 0; j < l->npc; j++) it[m++] = &l->f[j];
    }
    return m;
}

/* the plan's score: its slowest shard's predicted cost (its pred: the kernel and the
   data-parallel part), plus its communication when charged (sc: the bandwidth or the
   model of each collective) by the one objective (objective.h) */
static double plan_score(const as_plan *p, const as_features *const *it, const as_split_cfg *sc)
{
    if (!p->feasible || !p->pred) return INFINITY;
    const as_plan_cfg cc = { .shards = p->shards, .comm_gbps = sc->comm_gbps, .comm_model = sc->comm_model };
    as_objective o;
    as_obj_init(&o, &cc, it, p->n);
    as_obj_load(&o, p->assign);
    const double mx = as_obj_max(&o, p->pred, NULL);
    as_obj_free(&o);
    return mx;
}

static int node_better(const node *a, const node *b)
{
    if (a->score != b->score) return a->score < b->score;
    if (a->items != b->items) return a->items < b->items;
    return a->order < b->order;
}

/* the cands tables (their positions into cand[], costliest item first; ties: lower
   position) whose costliest item at their level lvl[i] is costliest and that can go one
   level further; cworst[cands] scratch. Returns how many. */
static int64_t pick_cands(const tsplit *s, const int *lvl, int64_t n, int cands, int64_t *cand, double *cworst)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const int L = lvl[i];
        int more = 0;
        for (int kind = LV_COLS; kind <= LV_TWRW; kind++) more |= next_level(&s[i], L, kind) >= 0;
        if (!more) continue;
        const double w = s[i].lv[L].worst;
        int64_t q = m < cands ? m++ : cands;
        if (q == cands) {
            if (!(w > cworst[cands - 1])) continue;
            q = cands - 1;
        }
        while (q > 0 && w > cworst[q - 1]) { cand[q] = cand[q - 1]; cworst[q] = cworst[q - 1]; q--; }
        cand[q] = i;
        cworst[q] = w;
    }
    return m;
}

/* the beam best of kids[0..nk) (finite scores) into cur[0..beam), best first (selection by
   insertion; node_better); returns how many */
static int keep_beam(node *cur, int beam, const node *kids, int nk, int64_t n)
{
    int ncur = 0;
    for (int d = 0; d < nk; d++) {
        if (!isfinite(kids[d].score)) continue;
        int q = ncur < beam ? ncur++ : beam;
        if (q == beam) {
            if (!node_better(&kids[d], &cur[beam - 1])) continue;
            q = beam - 1;
        }
        while (q > 0 && node_better(&kids[d], &cur[q - 1])) {
            node tmp = cur[q];
            cur[q] = cur[q - 1];
            cur[q - 1] = tmp;
            q--;
        }
        memcpy(cur[q].lvl, kids[d].lvl, (size_t)n * sizeof(int));
        cur[q].score = kids[d].score;
        cur[q].items = kids[d].items;
        cur[q].order = kids[d].order;
    }
    return ncur;
}

/* the beam search's state */
typedef struct {
    const as_plan_cfg *c;           /* the final placement's configuration */
    as_plan_cfg qc;                 /* the candidates': c, or c with the policy's quicker
                                       placement (plan.h as_plan_policy.search_ctx) */
    as_plan_policy qp;
    const as_split_cfg *sc;
    as_split_info *info;
    int64_t n;
    double t0;                      /* when the search began */
    float *rep;                     /* [R] scratch of the levels' costs */
    tsplit *s;                      /* [T] each table's levels */
    const as_features **it;         /* [threads, maxp] each thread's node's items (room for
                                       the most any node has) */
    int64_t maxp;
    int threads;                    /* the children of a level are placed in parallel */
    int *krc;                       /* [maxkids] each child's status: 1 scored, 0 not (the
                                       budget was spent first), -1 failed */
    int beam, cands, maxkids;
    node *cur, *kids;               /* [beam] the beam; [maxkids] its children of a step */
    int *best;                      /* [T] the best node's levels */
    double best_score;
    int64_t made;                   /* nodes made, for their order */
    double f0, fw;                  /* its share of the whole search (progress): from f0, fw wide */
    int64_t *cand;                  /* [T] pick_cands' tables */
    double *cworst;                 /* [T] its scratch */
} search;

/* every table's levels, and the search's buffers; the root (every table whole) is cur[0] */
static void search_init(search *S, const as_plan_cfg *c, const as_split_cfg *sc, const as_featidx *ft,
                        const as_features *const *t, int64_t n, as_split_info *info)
{
    const size_t n1 = (size_t)(n ? n : 1);
    memset(S, 0, sizeof *S);
    S->c = c, S->sc = sc, S->info = info, S->n = n;
    S->qc = *c;
    if (c->policy && c->policy->search_ctx) {
        S->qp = *c->policy;
        S->qp.ctx = c->policy->search_ctx;
        S->qc.policy = &S->qp;
    }
    S->t0 = as_now();
    S->rep = as_malloc((size_t)c->model->rep * sizeof *S->rep);
    S->s = as_calloc(n1, sizeof *S->s);
    /* table_row_wise under a model of hosts (not for a learned policy, whose rollouts pin
       row_wise alone) */
    const int64_t K = c->shards, L = as_comm_local(c->comm_model);
    const int hosts = !sc->no_row_wise && L >= 2 && K > L && K % L == 0 && !(as_planner_of(c->alg)->needs & AS_PLANNER_POLICY);
    int64_t maxp = 0;
    for (int64_t i = 0; i < n; i++) {
        make_levels(&S->s[i], t[i], ft, sc, K, hosts ? L : 0, c->model, S->rep);
        int64_t mp = 1;
        for (int L = 0; L < S->s[i].nlv; L++) if (S->s[i].lv[L].npc > mp) mp = S->s[i].lv[L].npc;
        maxp += mp;
    }
    S->maxp = maxp ? maxp : 1;
    S->threads = sc->threads > 0 ? sc->threads : omp_get_max_threads();
    if (S->threads < 1) S->threads = 1;
    S->it = as_malloc((size_t)S->threads * (size_t)S->maxp * sizeof *S->it);
    S->beam = sc->beam > 0 ? sc->beam : 1, S->cands = sc->cands > 0 ? sc->cands : 1;
    S->maxkids = S->beam * S->cands * 4;
    S->krc = as_malloc((size_t)S->maxkids * sizeof *S->krc);
    S->cur = as_calloc((size_t)S->beam, sizeof *S->cur), S->kids = as_calloc((size_t)S->maxkids, sizeof *S->kids);
    for (int b = 0; b < S->beam; b++) S->cur[b].lvl = as_calloc(n1, sizeof(int));
    for (int b = 0; b < S->maxkids; b++) S->kids[b].lvl = as_malloc(n1 * sizeof(int));
    S->best = as_calloc(n1, sizeof *S->best);
    S->cand = as_malloc(n1 * sizeof *S->cand);
    S->cworst = as_malloc(n1 * sizeof *S->cworst);
}

static void search_free(search *S)
{
    free(S->cand);
    free(S->cworst);
    free(S->krc);
    for (int b = 0; b < S->beam; b++) free(S->cur[b].lvl);
    for (int b = 0; b < S->maxkids; b++) free(S->kids[b].lvl);
    free(S->cur);
    free(S->kids);
    free(S->best);
    free(S->it);
    for (int64_t i = 0; i < S->n; i++) {
        for (int L = 0; L < S->s[i].nlv; L++) free(S->s[i].lv[L].f);
        free(S->s[i].lv);
    }
    free(S->s);
    free(S->rep);
}

/* node k's items (into it[maxp]) planned, its score and item count set; 0, or -1 with err */
static int node_score(search *S, node *k, const as_features **it, char *err, size_t errlen)
{
    as_plan pl;
    int64_t P = node_items(S->s, k->lvl, S->n, it);
    if (as_plan_make(&pl, &S->qc, it, P, err, errlen)) return -1;
    k->score = plan_score(&pl, it, S->sc);
    k->items = P;
    as_plan_free(&pl);
    return 0;
}

/* the children of beam node cur[b] into kids[*nk..]: each candidate table one level
 * further, by columns or by rows, duplicates of earlier children left out (not scored) */
static void expand(search *S, int b, int *nk)
{
    const tsplit *s = S->s;
    const int64_t n = S->n;
    const int *lvl = S->cur[b].lvl;
    const int64_t m = pick_cands(s, lvl, n, S->cands, S->cand, S->cworst);
    for (int64_t ci = 0; ci < m; ci++) {
        const int64_t i = S->cand[ci];
        for (int kind = LV_COLS; kind <= LV_TWRW && *nk < S->maxkids; kind++) {
            const int L = lvl[i];
            if (L != 0 && s[i].lv[L].kind != kind) continue;
            const int nx = next_level(&s[i], L, kind);
            if (nx < 0) continue;
            node *k = &S->kids[*nk];
            memcpy(k->lvl, lvl, (size_t)n * sizeof(int));
            k->lvl[i] = nx;
            int dup = 0;
            for (int d = 0; d < *nk && !dup; d++) dup = !memcmp(S->kids[d].lvl, k->lvl, (size_t)n * sizeof(int));
            if (!dup) (*nk)++;
        }
    }
}

/* the children kids[0..nk) placed and scored, in parallel (S->threads; each thread its own
 * items buffer; the placements share nothing they write but the models' memo, which
 * locks), a child not begun once the time budget is spent left out (info->cut); then, in
 * the children's order, each counted and the best so far kept (the result does not depend
 * on the threads unless the budget cuts the level). Returns how many are left in kids, or
 * -1 with err (the first failing child's) */
static int score_kids(search *S, int nk, char *err, size_t errlen)
{
    as_split_info *info = S->info;
    const double budget = S->sc->budget_ms;
    int efirst = nk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(S->threads)
    for (int d = 0; d < nk; d++) {
        char e2[512];
        S->krc[d] = 0;
        if (budget > 0 && (as_now() - S->t0) * 1e3 >= budget) continue;
        const as_features **it = S->it + (size_t)omp_get_thread_num() * (size_t)S->maxp;
        S->krc[d] = node_score(S, &S->kids[d], it, e2, sizeof e2) ? -1 : 1;
        if (S->krc[d] < 0) {
#pragma omp critical(split_err)
            if (d < efirst) {
                efirst = d;
                snprintf(err, errlen, "%s", e2);
            }
        }
    }
    if (efirst < nk) return -1;
    int kept = 0;
    for (int d = 0; d < nk; d++) {
        if (!S->krc[d]) {
            info->cut = 1;
            continue;
        }
        node *k = &S->kids[d];
        k->order = S->made++;
        info->nodes++;
        if (k->score < S->best_score) {
            S->best_score = k->score;
            memcpy(S->best, k->lvl, (size_t)S->n * sizeof(int));
        }
        if (kept != d) {   /* kids[kept] (left out) and kids[d] swap their level arrays */
            node t = S->kids[kept];
            S->kids[kept] = *k;
            *k = t;
        }
        kept++;
    }
    if (budget > 0 && (as_now() - S->t0) * 1e3 >= budget) info->cut = 1;
    return kept;
}

/* the result: the best node's items, in task order, into *items, and its plan into p; 0,
 * or -1 with err */
static int result(search *S, as_features **items, int64_t *nitems, as_plan *p, char *err, size_t errlen)
{
    char e2[512];
    const as_features **it = S->it;
    int64_t P = node_items(S->s, S->best, S->n, it);
    *items = as_malloc((size_t)(P ? P : 1) * sizeof **items);
    for (int64_t j = 0; j < P; j++) (*items)[j] = *it[j];
    *nitems = P;
    for (int64_t j = 0; j < P; j++) it[j] = &(*items)[j];
    /* the final placement; with a quicker one for the candidates, the plan of the better
       score (ties: the final placement's) */
    int rc = as_plan_make(p, S->c, it, P, e2, sizeof e2);
    double sc = rc ? INFINITY : plan_score(p, it, S->sc);
    if (!rc && S->qc.policy != S->c->policy && sc > S->best_score) {
        as_plan_free(p);
        rc = as_plan_make(p, &S->qc, it, P, e2, sizeof e2);
        sc = rc ? INFINITY : plan_score(p, it, S->sc);
    }
    if (rc) {
        snprintf(err, errlen, "%s", e2);
        free(*items);
        *items = NULL;
        *nitems = 0;
        return -1;
    }
    S->info->items = P;
    for (int64_t i = 0; i < S->n; i++) S->info->split += S->best[i] != 0;
    S->info->pred_after = sc;
    return 0;
}

/* ALG's own plan of the whole tables t[0..n), as as-plan makes it without --split-tables:
 * placed with the communication not charged (cost-greedy places by the charge when c sets
 * one, and a greedy placement by it can score worse by it than the one without), scored as
 * the nodes are (plan_score, the charge included). When it is feasible and scores at most
 * the result's (*items, *p: info->pred_after), it is the result: the whole tables, that
 * plan. Nothing when c charges nothing (the root is then that plan). 0, or -1 with err */
static int keep_unsplit(const as_plan_cfg *c, const as_split_cfg *sc, const as_features *const *t, int64_t n,
                        as_features **items, int64_t *nitems, as_plan *p, as_split_info *info, char *err, size_t errlen)
{
    if (!(c->comm_gbps > 0) && !c->comm_model) return 0;
    as_plan_cfg u = *c;
    u.comm_gbps = 0;
    u.comm_model = NULL;
    as_plan q;
    char e2[512];
    if (as_plan_make(&q, &u, t, n, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    const double s = plan_score(&q, t, sc);
    if (!isfinite(s) || !(s <= info->pred_after)) {
        as_plan_free(&q);
        return 0;
    }
    as_features *w = as_malloc((size_t)(n ? n : 1) * sizeof *w);
    for (int64_t i = 0; i < n; i++) w[i] = *t[i];
    free(*items);
    as_plan_free(p);
    *items = w;
    *nitems = n;
    *p = q;
    info->items = n;
    info->split = 0;
    info->pred_after = s;
    return 0;
}

/* the levels of sc->seed (a table's split elsewhere: 0 whole, -1 TorchRec's row_wise, c >= 2
 * c equal column pieces) into lvl, each the level of that split where the table has it, else
 * whole; 1 when they differ from the root's (every table whole) */
static int seed_levels(const search *S, const int64_t *seed, int *lvl)
{
    int differs = 0;
    for (int64_t i = 0; i < S->n; i++) {
        const tsplit *t = &S->s[i];
        lvl[i] = 0;
        for (int L = 1; L < t->nlv && seed[i]; L++)
            if ((seed[i] < 0 && t->lv[L].kind == LV_RW) || (seed[i] > 1 && t->lv[L].kind == LV_COLS && t->lv[L].npc == seed[i]))
                lvl[i] = L;
        differs |= lvl[i] != 0;
    }
    return differs;
}

/* one beam search from the levels start[T] (NULL: the root, every table whole): cur[0] is
 * scored, then the levels; its best node in S->best. 0, or -1 with err */
static int run_search(search *S, const int *start, char *err, size_t errlen)
{
    as_split_info *info = S->info;
    if (start) memcpy(S->cur[0].lvl, start, (size_t)S->n * sizeof(int));
    if (node_score(S, &S->cur[0], S->it, err, errlen)) return -1;
    S->best_score = S->cur[0].score;
    memcpy(S->best, S->cur[0].lvl, (size_t)S->n * sizeof(int));
    if (!start) info->pred_before = S->best_score;
    int ncur = 1;
    for (int step = 0; step < S->sc->steps && ncur > 0 && !info->cut; step++) {
        int nk = 0;
        for (int b = 0; b < ncur; b++) expand(S, b, &nk);
        if ((nk = score_kids(S, nk, err, errlen)) < 0) return -1;
        ncur = keep_beam(S->cur, S->beam, S->kids, nk, S->n);
        if (S->sc->progress) {
            const double budget = S->sc->budget_ms;
            double f = (double)(step + 1) / S->sc->steps, ft = budget > 0 ? (as_now() - S->t0) * 1e3 / budget : 0;
            f = ft > f ? ft : f;
            S->sc->progress(S->sc->progress_ctx, S->f0 + S->fw * (f < 1 ? f : 1));
        }
    }
    return 0;
}

/* the levels where every table that has one is TorchRec's table_row_wise (the other tables
 * whole) into lvl; 1 when some table has it */
static int twrw_levels(const search *S, int *lvl)
{
    int any = 0;
    for (int64_t i = 0; i < S->n; i++) {
        lvl[i] = 0;
        for (int L = 1; L < S->s[i].nlv; L++)
            if (S->s[i].lv[L].kind == LV_TWRW) lvl[i] = L;
        any |= lvl[i] != 0;
    }
    return any;
}

int as_split_search(const as_plan_cfg *c, const as_split_cfg *sc, const as_featidx *ft, const as_features *const *t, int64_t n,
                    as_features **items, int64_t *nitems, as_plan *p, as_split_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    *items = NULL;
    *nitems = 0;
    if (!c->model) {
        snprintf(err, errlen, "splitting tables needs a cost model (--model)");
        return -1;
    }
    const double t0 = as_now();
    enum { NSTART = 3 };
    search S[NSTART];
    search_init(&S[0], c, sc, ft, t, n, info);
    /* the searches: from the root (every table whole); from the seed, when it splits a table;
       under a model of hosts, from every table table_row_wise; each under an equal share of
       the budget; the best best wins (ties: the earlier) */
    int *start[NSTART] = { NULL, NULL, NULL };
    const size_t n1 = (size_t)(n ? n : 1);
    int ns = 1;
    if (sc->seed) {
        start[ns] = as_malloc(n1 * sizeof(int));
        if (seed_levels(&S[0], sc->seed, start[ns])) ns++;
        else { free(start[ns]); start[ns] = NULL; }
    }
    start[ns] = as_malloc(n1 * sizeof(int));
    int twrw = twrw_levels(&S[0], start[ns]);
    if (twrw) ns++;
    else { free(start[ns]); start[ns] = NULL; }
    as_split_cfg part = *sc;
    part.budget_ms = sc->budget_ms / ns;
    S[0].sc = &part;
    S[0].fw = 1.0 / ns;
    int rc = run_search(&S[0], NULL, err, errlen), w = 0, cut = info->cut, made = 1;
    for (int q = 1; q < ns && !rc; q++) {
        info->cut = 0;
        search_init(&S[q], c, &part, ft, t, n, info);
        S[q].f0 = (double)q / ns, S[q].fw = 1.0 / ns;
        made++;
        S[q].made = S[q - 1].made;
        rc = run_search(&S[q], start[q], err, errlen);
        cut |= info->cut;
        if (!rc && S[q].best_score < S[w].best_score) w = q;
    }
    info->cut = cut;
    info->seeded = sc->seed && ns > 1 + twrw;
    if (!rc) rc = result(&S[w], items, nitems, p, err, errlen);
    if (!rc && (rc = keep_unsplit(c, sc, t, n, items, nitems, p, info, err, errlen))) {
        free(*items);
        *items = NULL;
        *nitems = 0;
        as_plan_free(p);
    }
    info->ms = (as_now() - t0) * 1e3;
    if (!rc) p->plan_ms = info->ms;
    for (int q = 0; q < ns; q++) {
        if (q < made) search_free(&S[q]);
        free(start[q]);
    }
    return rc;
}
