/* test_split.c - as_split_search (lib/plan/split.h) on hand-made tasks and a hand-made model whose
 * answers can be worked out: a shard costs the sum of lookups x dim of its items (rep 1,
 * head the identity), so a column piece costs its share of the columns and a row piece its
 * share of the lookups. Checked: a dominant table is split and the pieces cover it once;
 * the result is deterministic, never predicted slower than no split (nor, communication
 * charged, than the algorithm's plan placed without the charge), never over a memory cap;
 * row splits only where the row pieces' features are known; a model is required. */
#include "unit.h"

#include "common.h"
#include "featindex.h"
#include "plan.h"
#include "split.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows, int64_t lookups)
{
    return tsup_features(id, dim, rows, (double)lookups / 100, 100, lookups);
}

static void lk_embed(void *ctx, const as_features *f, float *out) { out[0] = (float)(f->lookups * f->dim); }
static double lk_head(void *ctx, const float *s) { return s[0]; }
static const as_plan_model LK = { NULL, 1, lk_embed, lk_head, 0, NULL, NULL };

static double pmax(const as_plan *p)
{
    double m = 0;
    for (int64_t k = 0; k < p->shards; k++) if (p->pred[k] > m) m = p->pred[k];
    return m;
}

typedef struct {
    const as_features *f;
    int64_t n;
} sizes_ctx;

static int size_of(void *ctx, int64_t id, int64_t *rows, int64_t *dim)
{
    const sizes_ctx *s = ctx;
    for (int64_t i = 0; i < s->n; i++)
        if (s->f[i].id == id) {
            *rows = s->f[i].rows;
            *dim = s->f[i].dim;
            return 0;
        }
    return -1;
}

/* the items cover each table of f[0..n) exactly once, each table's in one place */
static void check_items_cover(const as_features *items, int64_t P, const as_features *f, int64_t n)
{
    int64_t *ids = malloc((size_t)P * sizeof *ids);
    as_piece *pc = malloc((size_t)P * sizeof *pc);
    for (int64_t j = 0; j < P; j++) {
        ids[j] = items[j].id;
        pc[j] = items[j].piece;
    }
    char err[512];
    if (!CHECK_EQ_I64(as_pieces_check_cover(ids, pc, P, err, sizeof err), 0)) fprintf(stderr, "    %s\n", err);
    sizes_ctx sc = { f, n };
    if (!CHECK_EQ_I64(as_pieces_check_dims(ids, pc, P, size_of, &sc, err, sizeof err), 0)) fprintf(stderr, "    %s\n", err);
    /* every table present, in task order */
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++) {
        CHECK(j < P && items[j].id == f[i].id);
        while (j < P && items[j].id == f[i].id) {
            /* a piece's features are the piece's: dim and rows follow */
            const as_piece q = as_piece_full(&items[j].piece, f[i].rows, f[i].dim);
            CHECK_EQ_I64(items[j].dim, q.c1 - q.c0);
            CHECK_EQ_I64(items[j].rows, q.r1 - q.r0);
            j++;
        }
    }
    CHECK_EQ_I64(j, P);
    free(ids);
    free(pc);
}

static int search(as_alg alg, int64_t K, uint64_t cap, const as_plan_model *m, const as_featidx *ft, const as_features *f,
                  int64_t n, const as_split_cfg *sc, as_features **items, int64_t *P, as_plan *p, as_split_info *info,
                  char *err)
{
    const as_features *t[64];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_plan_cfg c = { alg, K, cap, 7, 3, m, NULL, 0, NULL, 0, NULL };
    return as_split_search(&c, sc, ft, t, n, items, P, p, info, err, 512);
}

static double unsplit_max(as_alg alg, int64_t K, uint64_t cap, const as_features *f, int64_t n, int *feasible)
{
    const as_features *t[64];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_plan_cfg c = { alg, K, cap, 7, 3, &LK, NULL, 0, NULL, 0, NULL };
    as_plan p;
    char err[256];
    CHECK_EQ_I64(as_plan_make(&p, &c, t, n, err, sizeof err), 0);
    const double m = pmax(&p);
    *feasible = p.feasible;
    as_plan_free(&p);
    return m;
}

static const as_split_cfg SC = { .steps = AS_SPLIT_STEPS, .beam = AS_SPLIT_BEAM, .cands = AS_SPLIT_CANDS };

/* (a)'s task: a dominant table and four small ones */
static void dominant5(as_features *f)
{
    f[0] = F(10, 64, 1000, 1000);
    for (int i = 1; i < 5; i++) f[i] = F(10 + i, 16, 1000, 500);
}

/* (a) table 0 costs 64 x 1000 = 64000, the four others 16 x 500 = 8000 each (32000 in
 * all): unsplit the max is table 0's; split in 4 columns, 16000 a piece, 24000 a shard */
TEST(split_dominant_table)
{
    as_features f[5];
    dominant5(f);
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    for (int a = 0; a < 4; a++) {
        const as_alg alg = (as_alg[]){ AS_ALG_COST, AS_ALG_LOOKUP, AS_ALG_DIM, AS_ALG_SIZE }[a];
        int feas;
        CHECK_NEAR(unsplit_max(alg, 4, 0, f, 5, &feas), 64000, 0);
        as_features *items;
        int64_t P;
        as_plan p;
        as_split_info info;
        if (!CHECK_EQ_I64(search(alg, 4, 0, &LK, &ft, f, 5, &SC, &items, &P, &p, &info, err), 0)) {
            fprintf(stderr, "    %s\n", err);
            continue;
        }
        CHECK_NEAR(info.pred_before, 64000, 0);
        CHECK(info.pred_after < 64000);
        CHECK_NEAR(info.pred_after, pmax(&p), 0);
        CHECK(p.feasible);
        CHECK_EQ_I64(p.n, P);
        CHECK_EQ_I64(info.items, P);
        CHECK(P > 5);
        CHECK(info.split >= 1);
        CHECK(info.nodes > 0);
        if (alg == AS_ALG_COST || alg == AS_ALG_LOOKUP) CHECK_NEAR(info.pred_after, 24000, 0);
        /* table 0 is split (the plan is of the items: pieces and split are as-plan's to set) */
        int64_t n10 = 0;
        for (int64_t j = 0; j < P; j++) {
            n10 += items[j].id == 10;
            CHECK(p.assign[j] >= 0 && p.assign[j] < 4);
        }
        CHECK(n10 >= 2);
        check_items_cover(items, P, f, 5);
        /* the plan's predicted costs are the model's on its shards */
        double sum[4] = { 0 };
        for (int64_t j = 0; j < P; j++) sum[p.assign[j]] += (double)(items[j].lookups * items[j].dim);
        for (int k = 0; k < 4; k++) CHECK_NEAR(p.pred[k], sum[k], 0);
        free(items);
        as_plan_free(&p);
    }
    as_featidx_free(&ft);
}

static as_features RF(as_rng *r, int64_t id)
{
    const int64_t dims[5] = { 4, 8, 16, 32, 128 };
    return F(id, dims[as_rng_below(r, 5)], 100 + (int64_t)as_rng_below(r, 5000), 1 + (int64_t)as_rng_below(r, 3000));
}

/* (b) two runs give the same items and the same assignment; (c) never predicted slower
 * than no split; (d) never over the cap */
TEST(split_random_tasks_deterministic_no_worse_capped)
{
    as_rng r;
    as_rng_seed(&r, 42, 0);
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    int improved = 0, capped = 0;
    for (int trial = 0; trial < 40; trial++) {
        const int64_t n = 3 + (int64_t)as_rng_below(&r, 10), K = 2 + (int64_t)as_rng_below(&r, 4);
        as_features f[16];
        uint64_t total = 0, biggest = 0;
        for (int64_t i = 0; i < n; i++) {
            f[i] = RF(&r, 100 + i * 3);
            total += (uint64_t)f[i].bytes_fp16;
            if ((uint64_t)f[i].bytes_fp16 > biggest) biggest = (uint64_t)f[i].bytes_fp16;
        }
        /* every other trial a cap: some below the biggest table */
        uint64_t cap = 0;
        if (trial % 2) cap = trial % 4 == 1 ? biggest * 3 / 4 : total / (uint64_t)K + biggest / 2;
        const as_alg alg = (as_alg[]){ AS_ALG_COST, AS_ALG_LOOKUP, AS_ALG_SIZE, AS_ALG_DIM }[trial % 4];
        as_split_cfg sc = SC;
        sc.beam = 1 + trial % 3;
        sc.cands = 1 + trial % 5;
        as_features *it1, *it2;
        int64_t P1, P2;
        as_plan p1, p2;
        as_split_info i1, i2;
        if (!CHECK_EQ_I64(search(alg, K, cap, &LK, &ft, f, n, &sc, &it1, &P1, &p1, &i1, err), 0)) {
            fprintf(stderr, "    %s\n", err);
            continue;
        }
        CHECK_EQ_I64(search(alg, K, cap, &LK, &ft, f, n, &sc, &it2, &P2, &p2, &i2, err), 0);
        /* (b) */
        CHECK_EQ_I64(P1, P2);
        if (P1 == P2)
            for (int64_t j = 0; j < P1; j++) {
                CHECK_EQ_I64(it1[j].id, it2[j].id);
                CHECK(as_piece_eq(&it1[j].piece, &it2[j].piece));
                CHECK_EQ_I64(p1.assign[j], p2.assign[j]);
            }
        CHECK_EQ_I64(i1.nodes, i2.nodes);
        /* (c) */
        int feas;
        const double before = unsplit_max(alg, K, cap, f, n, &feas);
        if (feas) {
            CHECK_NEAR(i1.pred_before, before, 0);
            CHECK(p1.feasible);
            if (!CHECK(i1.pred_after <= before)) fprintf(stderr, "    trial %d: %g > %g\n", trial, i1.pred_after, before);
            improved += i1.pred_after < before;
        } else
            CHECK(isinf(i1.pred_before));
        if (p1.feasible) CHECK_NEAR(i1.pred_after, pmax(&p1), 0);
        /* (d) */
        for (int64_t k = 0; k < K; k++) {
            uint64_t used = 0;
            for (int64_t j = 0; j < P1; j++) if (p1.assign[j] == k) used += (uint64_t)it1[j].bytes_fp16;
            CHECK_EQ_I64(p1.mem[k], used);
            if (cap && !CHECK(p1.mem[k] <= cap)) fprintf(stderr, "    trial %d: shard %d holds %llu > cap %llu\n", trial, (int)k,
                                                         (unsigned long long)p1.mem[k], (unsigned long long)cap);
        }
        capped += cap && !feas && p1.feasible;
        check_items_cover(it1, P1, f, n);
        free(it1);
        free(it2);
        as_plan_free(&p1);
        as_plan_free(&p2);
    }
    /* the search did something on these tasks */
    CHECK(improved > 0);
    CHECK(capped > 0);
    as_featidx_free(&ft);
}

/* (d) a table over the cap fits once split: infeasible unsplit, feasible split */
TEST(split_makes_room_under_cap)
{
    /* table 0: 1000 x 64 x 2 = 128000 bytes; the others 32000; cap 100000 */
    as_features f[5] = { F(0, 64, 1000, 10), F(1, 16, 1000, 500), F(2, 16, 1000, 500), F(3, 16, 1000, 500),
                         F(4, 16, 1000, 500) };
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    int feas;
    unsplit_max(AS_ALG_LOOKUP, 4, 100000, f, 5, &feas);
    CHECK(!feas);
    as_features *items;
    int64_t P;
    as_plan p;
    as_split_info info;
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 4, 100000, &LK, &ft, f, 5, &SC, &items, &P, &p, &info, err), 0);
    CHECK(isinf(info.pred_before));
    CHECK(p.feasible);
    CHECK(isfinite(info.pred_after));
    for (int k = 0; k < 4; k++) CHECK(p.mem[k] <= 100000);
    for (int64_t j = 0; j < P; j++) CHECK(p.assign[j] >= 0);
    check_items_cover(items, P, f, 5);
    free(items);
    as_plan_free(&p);
    as_featidx_free(&ft);
}

/* the row pieces of table `t` in n blocks, their lookups shared out as the rows (hand-made
 * features, as as-features --row-pieces would write them); `skip`: a block left out */
static void add_row_pieces(as_featidx *x, const as_features *t, int64_t n, int64_t skip)
{
    as_piece bl[16];
    const int64_t k = as_piece_row_blocks(t->rows, t->dim, n, bl);
    for (int64_t j = 0; j < k; j++) {
        if (j == skip) continue;
        as_features g = F(t->id, t->dim, bl[j].r1 - bl[j].r0, t->lookups * (bl[j].r1 - bl[j].r0) / t->rows);
        g.piece = bl[j];
        as_featidx_add(x, &g);
    }
}

/* (e) table 0 (dim 4: no column level) is costly; a row split only with its pieces' features */
TEST(split_rows_need_piece_features)
{
    as_features f[4] = { F(0, 4, 1000, 12000), F(1, 4, 500, 2000), F(2, 4, 500, 2000), F(3, 4, 500, 2000) };
    char err[512];
    as_features *items;
    int64_t P;
    as_plan p;
    as_split_info info;

    /* no row pieces in the index: nothing to split (dim 4 has no column level) */
    as_featidx none = { 0 };
    for (int i = 0; i < 4; i++) as_featidx_add(&none, &f[i]);
    CHECK_EQ_I64(as_featidx_build(&none, err, sizeof err), 0);
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 4, 0, &LK, &none, f, 4, &SC, &items, &P, &p, &info, err), 0);
    CHECK_EQ_I64(P, 4);
    CHECK_EQ_I64(info.split, 0);
    CHECK_EQ_I64(info.nodes, 0);
    CHECK_NEAR(info.pred_after, info.pred_before, 0);
    CHECK_NEAR(info.pred_after, 48000, 0);
    for (int64_t j = 0; j < P; j++) CHECK(as_piece_whole(&items[j].piece));
    free(items);
    as_plan_free(&p);

    /* one block of the 2 missing (and no 4 or 8): still no split */
    as_featidx part = { 0 };
    for (int i = 0; i < 4; i++) as_featidx_add(&part, &f[i]);
    add_row_pieces(&part, &f[0], 2, 1);
    CHECK_EQ_I64(as_featidx_build(&part, err, sizeof err), 0);
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 4, 0, &LK, &part, f, 4, &SC, &items, &P, &p, &info, err), 0);
    CHECK_EQ_I64(P, 4);
    CHECK_EQ_I64(info.split, 0);
    free(items);
    as_plan_free(&p);

    /* the blocks of 2 and 4: table 0 split by rows, 12000 in 4 blocks of 3000 */
    as_featidx rows = { 0 };
    for (int i = 0; i < 4; i++) as_featidx_add(&rows, &f[i]);
    add_row_pieces(&rows, &f[0], 2, -1);
    add_row_pieces(&rows, &f[0], 4, -1);
    CHECK_EQ_I64(as_featidx_build(&rows, err, sizeof err), 0);
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 4, 0, &LK, &rows, f, 4, &SC, &items, &P, &p, &info, err), 0);
    CHECK(info.split == 1);
    CHECK(info.pred_after < 48000);
    /* 4 blocks of 3000 x 4 = 12000, one a shard; the small tables (8000) on three of them: 20000 */
    CHECK_NEAR(info.pred_after, 20000, 0);
    int64_t rowpc = 0;
    for (int64_t j = 0; j < P; j++) {
        if (as_piece_whole(&items[j].piece)) continue;
        CHECK_EQ_I64(items[j].id, 0);
        CHECK_EQ_I64(items[j].piece.c0, 0);
        CHECK_EQ_I64(items[j].piece.c1, 4);
        rowpc++;
    }
    CHECK_EQ_I64(rowpc, 4);
    check_items_cover(items, P, f, 4);
    free(items);
    as_plan_free(&p);

    /* a wide table with no row features is split by columns only; restricting the row
       levels to blocks the index lacks changes nothing */
    as_features g[3] = { F(5, 64, 1000, 6000), F(6, 4, 100, 1000), F(7, 4, 100, 1000) };
    as_featidx gi = { 0 };
    for (int i = 0; i < 3; i++) as_featidx_add(&gi, &g[i]);
    add_row_pieces(&gi, &g[0], 2, -1);
    CHECK_EQ_I64(as_featidx_build(&gi, err, sizeof err), 0);
    as_split_cfg sc = SC;
    const int64_t only8[1] = { 8 };
    sc.rowp = only8;
    sc.nrowp = 1;
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 3, 0, &LK, &gi, g, 3, &sc, &items, &P, &p, &info, err), 0);
    CHECK(info.split == 1);
    for (int64_t j = 0; j < P; j++) {
        const as_piece q = as_piece_full(&items[j].piece, items[j].id == 5 ? 1000 : 100, items[j].id == 5 ? 64 : 4);
        CHECK_EQ_I64(q.r0, 0);
        CHECK_EQ_I64(q.r1, items[j].id == 5 ? 1000 : 100);
    }
    check_items_cover(items, P, g, 3);
    free(items);
    as_plan_free(&p);
    as_featidx_free(&none);
    as_featidx_free(&part);
    as_featidx_free(&rows);
    as_featidx_free(&gi);
}

/* (f) a model is required; a budget cuts the search but keeps a result no worse */
TEST(split_needs_model_and_budget)
{
    as_features f[3] = { F(0, 64, 100, 1000), F(1, 8, 100, 10), F(2, 8, 100, 10) };
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_features *items = (as_features *)1;
    int64_t P = 5;
    as_plan p;
    as_split_info info;
    err[0] = 0;
    CHECK_EQ_I64(search(AS_ALG_SIZE, 2, 0, NULL, &ft, f, 3, &SC, &items, &P, &p, &info, err), -1);
    CHECK(strstr(err, "model") != NULL);
    CHECK(items == NULL);
    CHECK_EQ_I64(P, 0);
    /* cost-greedy without a model fails the same way */
    CHECK_EQ_I64(search(AS_ALG_COST, 2, 0, NULL, &ft, f, 3, &SC, &items, &P, &p, &info, err), -1);

    as_split_cfg sc = SC;
    sc.budget_ms = 1e-9;
    CHECK_EQ_I64(search(AS_ALG_LOOKUP, 2, 0, &LK, &ft, f, 3, &sc, &items, &P, &p, &info, err), 0);
    CHECK(info.cut);
    CHECK_EQ_I64(info.nodes, 0);   /* no child begins once the budget is spent */
    CHECK(info.pred_after <= info.pred_before);
    check_items_cover(items, P, f, 3);
    free(items);
    as_plan_free(&p);
    as_featidx_free(&ft);
}

/* communication charged: a split whose added traffic outweighs the kernel time it saves is
 * not chosen; charged cheaply, the same split as without; the score counts it */
TEST(split_comm_charged)
{
    /* table 10: the kernel's costliest (64000), but little traffic (batch 10); the others,
       one to a shard (5 shards): cheap kernels (8000), heavy traffic (batch 10000: 320 KB of
       outputs each) and no split (4 columns, no row pieces' features) */
    as_features f[5] = { F(10, 64, 1000, 1000), F(11, 4, 1000, 2000), F(12, 4, 1000, 2000), F(13, 4, 1000, 2000),
                         F(14, 4, 1000, 2000) };
    f[0].batch = 10;
    for (int i = 1; i < 5; i++) f[i].batch = 10000;
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    /* the item's bytes: lookups x 8 in, 2 x batch x dim x 4 out */
    CHECK_NEAR(as_comm_ms(&f[0], 1.0), (1000.0 * 8 + 2.0 * 10 * 64 * 4) / 1073741824.0 * 1e3, 1e-12);
    CHECK_NEAR(as_comm_ms(&f[0], 0), 0, 0);
    as_split_cfg sc = SC;
    as_features *items;
    int64_t P;
    as_plan p;
    as_split_info info;
    /* 1e-6 GiB/s: traffic in ms is thousands of times the kernels'; the slowest shard is a
       heavy-traffic one, and splitting table 10 only adds ids (columns) or outputs (rows)
       to every rank's share: no split is chosen */
    sc.comm_gbps = 1e-6;
    CHECK_EQ_I64(search(AS_ALG_COST, 5, 0, &LK, &ft, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK_EQ_I64(P, 5);
    CHECK_EQ_I64(info.split, 0);
    CHECK(info.pred_before > pmax(&p));
    CHECK_NEAR(info.pred_after, info.pred_before, 0);
    free(items);
    as_plan_free(&p);
    /* 1e9 GiB/s: the traffic is negligible: the split of the uncharged search */
    sc.comm_gbps = 1e9;
    CHECK_EQ_I64(search(AS_ALG_COST, 5, 0, &LK, &ft, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK(P > 5);
    CHECK(pmax(&p) < 64000);
    free(items);
    as_plan_free(&p);
    /* the alpha-beta model, bytes made free: without alphas the same split */
    as_comm_model m;
    CHECK_EQ_I64(as_comm_model_parse("0/1e6,0/1e6,0/1e6", &m, err, sizeof err), 0);
    sc.comm_model = &m;
    CHECK_EQ_I64(search(AS_ALG_COST, 5, 0, &LK, &ft, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK(P > 5);
    CHECK_NEAR(info.pred_after, pmax(&p), 1e-3);
    free(items);
    as_plan_free(&p);
    /* the all-to-all's and the ring's alphas at 1000 ms a call: the whole tables' three
       all-to-alls are in every score (3000 ms), and the split, which still pays here, brings
       its type's on every shard (column-wise 3 all-to-alls, row-wise 1 and 2 ring calls:
       3000 ms either way) */
    CHECK_EQ_I64(as_comm_model_parse("1000000/1e6,1000000/1e6,0/1e6", &m, err, sizeof err), 0);
    CHECK_EQ_I64(search(AS_ALG_COST, 5, 0, &LK, &ft, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK(P > 5);
    CHECK_NEAR(info.pred_before, 64000 + 3000, 1e-3);
    CHECK_NEAR(info.pred_after, pmax(&p) + 6000, 1e-3);
    free(items);
    as_plan_free(&p);
    as_featidx_free(&ft);
}

/* a model whose kernel is an item's rows alone, its traffic (lookups, batch) apart */
static void rows_embed(void *ctx, const as_features *f, float *out)
{
    (void)ctx;
    out[0] = (float)f->rows;
}
static const as_plan_model ROWS = { NULL, 1, rows_embed, lk_head, 0, NULL, NULL };

/* the bandwidth at which 32 bytes take 1 ms; an item of kernel a ms (a rows) whose bytes take
 * b ms at it: dim 4 (no column level), 4 lookups (32 bytes in), batch b - 1 (32 (b - 1)
 * bytes out) */
#define G32 (32e3 / 1073741824.0)
static as_features AB(int64_t id, int64_t a, int64_t b) { return tsup_features(id, 4, a, 1, b - 1, 4); }

/* the search of the whole tables f[0..n) (nothing to split) by cost-greedy on 2 shards, the
 * communication charged at G32 as as-plan charges it (the placement and the score, planrun's
 * pc); *own: cost-greedy's plan without the charge (as-plan without --split-tables) */
static void search_charged(const as_features *f, int64_t n, as_features **items, int64_t *P, as_plan *p,
                           as_split_info *info, as_plan *own)
{
    const as_features *t[8];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    as_plan_cfg c = { .alg = AS_ALG_COST, .shards = 2, .seed = 7, .rng_stream = 3, .model = &ROWS, .comm_gbps = G32 };
    as_split_cfg sc = SC;
    sc.comm_gbps = G32;
    if (!CHECK_EQ_I64(as_split_search(&c, &sc, &ft, t, n, items, P, p, info, err, sizeof err), 0)) fprintf(stderr, "    %s\n", err);
    c.comm_gbps = 0;
    CHECK_EQ_I64(as_plan_make(own, &c, t, n, err, sizeof err), 0);
    as_featidx_free(&ft);
}

/* (h) communication charged: cost-greedy places by the charge too, and its greedy placement
 * can score worse by it than its placement on the kernel alone, ALG's own plan (as-plan
 * without --split-tables): that plan is kept then, so an ALG+split plan is never predicted
 * slower than ALG's (as-eval charging the same). The promise is the score, the charge
 * included: a placement under the charge that scores better is kept though its kernel
 * alone (pred, pred_ms) is above ALG's plan's (tests/pieces.bats compares each at its own
 * charge) */
TEST(split_never_slower_than_uncharged_plan)
{
    const as_features one = AB(1, 50, 10);
    CHECK_NEAR(as_comm_ms(&one, G32), 10, 1e-9);
    as_features *items;
    int64_t P;
    as_plan p, own;
    as_split_info info;
    /* kernels (own traffic) 50 (10), 40 (70), 30 (20), 20 (80), 90 of shared traffic a shard
       (180 / 2): under the charge 50 | 40, 30 on shard 0 (110 < 160), 20 on either (210):
       300; on the kernel alone 50 | 40, 30 on shard 1 (70 < 80), 20 on shard 0 (70 < 90):
       both 70 + 90 + 90 = 250. The root scores 300, nothing splits (dim 4, no row
       pieces): ALG's own plan, 250 */
    const as_features fa[4] = { AB(1, 30, 20), AB(2, 40, 70), AB(3, 20, 80), AB(4, 50, 10) };
    search_charged(fa, 4, &items, &P, &p, &info, &own);
    CHECK_NEAR(info.pred_before, 300, 1e-9);
    if (!CHECK_NEAR(info.pred_after, 250, 1e-9)) fprintf(stderr, "    %g: the charged placement kept\n", info.pred_after);
    CHECK_EQ_I64(info.split, 0);
    CHECK_EQ_I64(info.items, 4);
    CHECK_EQ_I64(P, 4);
    CHECK(p.feasible);
    for (int64_t j = 0; j < P && j < 4; j++) {
        CHECK_EQ_I64(items[j].id, fa[j].id);
        CHECK(as_piece_whole(&items[j].piece));
        CHECK_EQ_I64(p.assign[j], own.assign[j]);
    }
    CHECK_NEAR(pmax(&p), pmax(&own), 0);
    CHECK_NEAR(pmax(&p), 70, 0);
    free(items);
    as_plan_free(&p);
    as_plan_free(&own);
    /* kernels (own traffic) 60 (20), 50 (40), 20 (10), 35 shared: under the charge 60 | 50,
       20 on shard 0 (110 < 120): 110 + 35 = 145, the kernels 80 | 50; on the kernel alone 20
       on shard 1 (70 < 80): 120 + 35 = 155, the kernels 60 | 70. The charged placement
       stays, its slowest kernel 80 above ALG's plan's 70 */
    const as_features fb[3] = { AB(1, 20, 10), AB(2, 60, 20), AB(3, 50, 40) };
    search_charged(fb, 3, &items, &P, &p, &info, &own);
    CHECK_NEAR(info.pred_before, 145, 1e-9);
    CHECK_NEAR(info.pred_after, 145, 1e-9);
    CHECK_EQ_I64(P, 3);
    CHECK_NEAR(pmax(&p), 80, 0);
    CHECK_NEAR(pmax(&own), 70, 0);
    free(items);
    as_plan_free(&p);
    as_plan_free(&own);
}

/* a model where narrow columns cost as 32 (TorchRec's own estimate counts at least 32 columns
 * a lookup): a shard costs the sum of lookups x max(dim, 32) of its items */
static void w32_embed(void *ctx, const as_features *f, float *out)
{
    (void)ctx;
    out[0] = (float)(f->lookups * (f->dim > 32 ? f->dim : 32));
}
static const as_plan_model W32 = { NULL, 1, w32_embed, lk_head, 0, NULL, NULL };

/* (g) only TorchRec's row_wise beats column splits: table 0 (dim 64, 8000 lookups: 512000)
 * split in columns costs at best 2 x 8000 x 32 = 256000 a piece (narrower pieces cost as 32
 * wide); its 4 row_wise blocks 2000 x 64 = 128000 each, block i on rank i, beside the four
 * small tables (8 x 2000 = 64000 each, as 32 wide): the search finds row_wise, the plan's
 * slowest shard 192000, and a search without row_wise cannot go below 256000 */
TEST(split_finds_row_wise_where_columns_cannot)
{
    as_features f[5] = { F(0, 64, 4000, 8000), F(1, 8, 100, 2000), F(2, 8, 100, 2000), F(3, 8, 100, 2000),
                         F(4, 8, 100, 2000) };
    as_featidx x = { 0 };
    for (int i = 0; i < 5; i++) as_featidx_add(&x, &f[i]);
    add_row_pieces(&x, &f[0], 4, -1);
    add_row_pieces(&x, &f[0], 2, -1);
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), 0);
    as_features *items;
    int64_t P;
    as_plan p;
    as_split_info info;
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &W32, &x, f, 5, &SC, &items, &P, &p, &info, err), 0);
    CHECK_NEAR(info.pred_before, 512000, 0);
    CHECK_NEAR(info.pred_after, 192000, 0);
    CHECK_EQ_I64(P, 8);
    for (int64_t j = 0; j < P; j++) {
        if (items[j].id != 0) continue;
        /* all columns, TorchRec's block j on rank j */
        CHECK_EQ_I64(items[j].piece.c0, 0);
        CHECK_EQ_I64(items[j].piece.c1, 64);
        CHECK_EQ_I64(p.assign[j], items[j].piece.r0 / 1000);
    }
    check_items_cover(items, P, f, 5);
    free(items);
    as_plan_free(&p);
    /* without row_wise (and without the free row blocks): columns only, 256000 at best */
    as_split_cfg sc = SC;
    sc.no_row_wise = 1;
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &W32, &x, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK(info.pred_after >= 256000);
    for (int64_t j = 0; j < P; j++) CHECK(as_piece_whole(&items[j].piece) || items[j].piece.r1 == 4000);
    free(items);
    as_plan_free(&p);
    /* seeded with TorchRec's split (table 0 row_wise): a second search from it, one step
       only; the result is never above the seed's own plan */
    const int64_t seed[5] = { -1, 0, 0, 0, 0 }, none[5] = { 0 };
    sc = SC;
    sc.steps = 1;
    sc.seed = seed;
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &W32, &x, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK_EQ_I64(info.seeded, 1);
    CHECK(info.pred_after <= 192000);
    free(items);
    as_plan_free(&p);
    sc.seed = none;   /* every table whole: the root, no second search */
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &W32, &x, f, 5, &sc, &items, &P, &p, &info, err), 0);
    CHECK_EQ_I64(info.seeded, 0);
    free(items);
    as_plan_free(&p);
    as_featidx_free(&x);
}

/* the progress hook: called after each level with the share done, never going back, within
   [0, 1]; the result the same as without it */
typedef struct {
    int calls, backwards;
    double last, lo, hi;
} prog_rec;

static void prog_note(void *ctx, double frac)
{
    prog_rec *r = ctx;
    r->backwards += frac < r->last;
    if (frac < r->lo) r->lo = frac;
    if (frac > r->hi) r->hi = frac;
    r->last = frac;
    r->calls++;
}

TEST(split_reports_progress)
{
    as_features f[5];
    dominant5(f);
    as_featidx ft = { 0 };
    char err[512];
    CHECK_EQ_I64(as_featidx_build(&ft, err, sizeof err), 0);
    prog_rec r = { 0, 0, 0, 2, -1 };
    as_split_cfg sc = SC;
    sc.progress = prog_note, sc.progress_ctx = &r;
    as_features *i1, *i2;
    int64_t P1, P2;
    as_plan p1, p2;
    as_split_info in1, in2;
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &LK, &ft, f, 5, &sc, &i1, &P1, &p1, &in1, err), 0);
    CHECK(r.calls >= 1 && r.calls <= AS_SPLIT_STEPS);
    CHECK_EQ_I64(r.backwards, 0);
    CHECK(r.lo > 0 && r.hi <= 1);
    CHECK_EQ_I64(search(AS_ALG_COST, 4, 0, &LK, &ft, f, 5, &SC, &i2, &P2, &p2, &in2, err), 0);
    CHECK_EQ_I64(P1, P2);
    CHECK(P1 == P2 && !memcmp(p1.assign, p2.assign, (size_t)P1 * sizeof *p1.assign));
    free(i1), free(i2);
    as_plan_free(&p1), as_plan_free(&p2);
    as_featidx_free(&ft);
}
