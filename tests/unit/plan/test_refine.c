/* test_refine.c - as_plan_refine (lib/plan/refine.h) on hand-made tasks with answers worked out by
 * hand: a move that fixes a greedy plan, a plan only a swap fixes, memory caps, a step that
 * makes room for an unplaced table; then on random tasks with the real cost model: never a
 * higher predicted max, consistent bookkeeping, determinism, the split head agreeing with
 * the plain one, the budgets. */
#include "planmodel.h"
#include "unit.h"

#include "common.h"
#include "costmodel.h"
#include "plan.h"
#include "refine.h"
#include "rl.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows, double pooling) { return tsup_features(id, dim, rows, pooling, 0, 0); }

/* a hand-made model: rep = [dim*pooling, 1]; a shard costs its load plus penalty * count^2.
 * The split form: pre = [s0 + s1, s1] (linear), post(z) = (z0 - z1) + penalty * z1^2. Every
 * value is a small integer, so both forms are exact and agree bit for bit. */
static double penalty;
static void toy_embed(void *ctx, const as_features *f, float *out)
{
    out[0] = (float)(f->dim * f->pooling);
    out[1] = 1;
}
static double toy_head(void *ctx, const float *s) { return s[0] + penalty * s[1] * s[1]; }
static void toy_pre(void *ctx, const float *s, float *z)
{
    z[0] = s[0] + s[1];
    z[1] = s[1];
}
static double toy_post(void *ctx, const float *z) { return (z[0] - z[1]) + penalty * z[1] * z[1]; }
static const as_plan_model TOY = { NULL, 2, toy_embed, toy_head, 0, NULL, NULL };
static const as_plan_model TOY_SPLIT = { NULL, 2, toy_embed, toy_head, 2, toy_pre, toy_post };

/* a "policy" that places the tables as given: plans of any hand-made assignment */
static int place_given(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                       char *err, size_t errlen)
{
    memcpy(assign, ctx, (size_t)n * sizeof *assign);
    return 0;
}

static as_plan make(as_alg alg, int64_t K, uint64_t cap, const as_features *f, int n, const as_plan_model *m,
                    const int64_t *given, as_plan_cfg *cfg)
{
    const as_features *p[64];
    for (int i = 0; i < n; i++) p[i] = &f[i];
    static as_plan_policy pol;
    pol = (as_plan_policy){ (void *)given, place_given, 0, NULL, NULL };
    *cfg = (as_plan_cfg){ alg, K, cap, 7, 3, m, given ? &pol : NULL, 0, NULL, 0, NULL };
    as_plan pl;
    char err[256];
    int rc = as_plan_make(&pl, cfg, p, n, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    return pl;
}

static int refine(as_plan *pl, const as_plan_cfg *c, const as_features *f, int n, double ms, int64_t steps)
{
    const as_features *p[64];
    for (int i = 0; i < n; i++) p[i] = &f[i];
    char err[256];
    int rc = as_plan_refine(pl, c, p, n, ms, steps, err, sizeof err);
    if (rc) fprintf(stderr, "    refine: %s\n", err);
    return rc;
}

static void check_assign(const as_plan *p, const int64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        if (!CHECK_EQ_I64(p->assign[i], want[i])) fprintf(stderr, "    at table %d\n", i);
}

static double pmax(const as_plan *p)
{
    double m = p->pred[0];
    for (int64_t k = 1; k < p->shards; k++) if (p->pred[k] > m) m = p->pred[k];
    return m;
}

TEST(refine_alg_labels)
{
    as_alg a;
    int r;
    CHECK_EQ_I64(as_alg_parse_label("cost-greedy+refine", &a, &r), 0);
    CHECK_EQ_I64(a, AS_ALG_COST);
    CHECK_EQ_I64(r, 1);
    CHECK_EQ_I64(as_alg_parse_label("size-lookup-greedy", &a, &r), 0);
    CHECK_EQ_I64(a, AS_ALG_SIZE_LOOKUP);
    CHECK_EQ_I64(r, 0);
    CHECK_EQ_I64(as_alg_parse_label("autoshard+refine", &a, &r), 0);
    CHECK_EQ_I64(a, AS_ALG_AUTOSHARD);
    CHECK_EQ_I64(as_alg_parse_label("+refine", &a, &r), -1);
    CHECK_EQ_I64(as_alg_parse_label("greedy+refine", &a, &r), -1);
    CHECK_EQ_I64(as_alg_parse_label("random+refine+refine", &a, &r), -1);
    CHECK_EQ_I64(as_alg_parse("random+refine", &a), -1);   /* --alg takes plain names */
    as_plan p;
    memset(&p, 0, sizeof p);
    char b[64];
    CHECK_STR(as_plan_alg_label(&p, AS_ALG_DIM, b, sizeof b), "dim-greedy");
    p.refine.done = 1;
    CHECK_STR(as_plan_alg_label(&p, AS_ALG_DIM, b, sizeof b), "dim-greedy+refine");
}

/* (a) one move: loads (dim*pooling) 1, 4, 4 with sizes 300, 200, 100 rows. size-greedy puts
 * 300 on s0, 200 on s1, 100 on s1 (key sums 300 vs 200): loads 1 / 8. Refine: the slowest
 * shard is s1; moving table 1 or table 2 to s0 both give 5 / 4 (max 5, squares 41): the
 * first, table 1, moves. Then s0 = 5 is the slowest: moving table 0 gives 4 / 5 (no gain),
 * table 1 back 1 / 8; swapping 0 with 2 gives 8 / 1, 1 with 2 gives 5 / 4: a local optimum. */
TEST(refine_one_move_fixes_size_greedy)
{
    penalty = 0;
    as_features f[] = { F(0, 1, 300, 1), F(1, 1, 200, 4), F(2, 1, 100, 4) };
    as_plan_cfg c;
    as_plan p = make(AS_ALG_SIZE, 2, 0, f, 3, &TOY, NULL, &c);
    const int64_t greedy[] = { 0, 1, 1 }, want[] = { 0, 0, 1 };
    check_assign(&p, greedy, 3);
    CHECK_NEAR(p.pred[1], 8, 0);
    double made_ms = p.plan_ms;
    CHECK_EQ_I64(refine(&p, &c, f, 3, 0, 0), 0);
    check_assign(&p, want, 3);
    CHECK(p.refine.done);
    CHECK_EQ_I64(p.refine.moves, 1);
    CHECK_EQ_I64(p.refine.swaps, 0);
    CHECK_EQ_I64(p.refine.placed, 0);
    CHECK_STR(p.refine.stop, "optimum");
    CHECK_NEAR(p.refine.max_before, 8, 0);
    CHECK_NEAR(p.pred[0], 5, 0);
    CHECK_NEAR(p.pred[1], 4, 0);
    CHECK_EQ_I64(p.count[0], 2);
    CHECK_EQ_I64(p.count[1], 1);
    CHECK_EQ_I64(p.mem[0], (300 + 200) * 2);
    CHECK_EQ_I64(p.mem[1], 100 * 2);
    CHECK_NEAR(p.key[0], 500, 0);   /* size-greedy's keys rows*dim, summed over the new shards */
    CHECK_NEAR(p.key[1], 100, 0);
    CHECK(p.refine.ms >= 0);
    CHECK_NEAR(p.plan_ms, made_ms + p.refine.ms, 1e-9);
    CHECK(p.feasible);
    as_plan_free(&p);
}

/* (b) only a swap: loads A 5, B 3 on s0 (8) and C 4, D 2 on s1 (6). Every move makes it worse
 * (A over: 3 / 11, B over: 5 / 9); swapping A with C (or B with D) gives 7 / 7. The first in
 * the search order, A with C, is taken; then nothing improves. */
TEST(refine_only_a_swap_helps)
{
    penalty = 0;
    as_features f[] = { F(0, 1, 100, 5), F(1, 1, 100, 3), F(2, 1, 100, 4), F(3, 1, 100, 2) };
    const int64_t given[] = { 0, 0, 1, 1 }, want[] = { 1, 0, 0, 1 };
    as_plan_cfg c;
    as_plan p = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, given, &c);
    CHECK_NEAR(pmax(&p), 8, 0);
    /* with one step allowed it is the swap, not a move */
    CHECK_EQ_I64(refine(&p, &c, f, 4, 0, 1), 0);
    check_assign(&p, want, 4);
    CHECK_EQ_I64(p.refine.moves, 0);
    CHECK_EQ_I64(p.refine.swaps, 1);
    CHECK_STR(p.refine.stop, "steps");
    CHECK_NEAR(p.pred[0], 7, 0);
    CHECK_NEAR(p.pred[1], 7, 0);
    CHECK_NEAR(p.key[0], 0, 0);   /* autoshard has no key */
    as_plan_free(&p);
    p = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, given, &c);
    CHECK_EQ_I64(refine(&p, &c, f, 4, 0, 0), 0);
    check_assign(&p, want, 4);
    CHECK_EQ_I64(p.refine.moves, 0);
    CHECK_EQ_I64(p.refine.swaps, 1);
    CHECK_STR(p.refine.stop, "optimum");
    as_plan_free(&p);
    /* items are not tables: the same with every id equal (pieces of one table) */
    as_features g[4];
    for (int i = 0; i < 4; i++) { g[i] = f[i]; g[i].id = 9; }
    p = make(AS_ALG_AUTOSHARD, 2, 0, g, 4, &TOY, given, &c);
    CHECK_EQ_I64(refine(&p, &c, g, 4, 0, 0), 0);
    check_assign(&p, want, 4);
    as_plan_free(&p);
}

/* (c) the cap: loads 1, 3, 4 with sizes 600, 400, 200 bytes; size-greedy gives 1 / 7. The
 * best move is table 1 to s0 (4 / 4), then a local optimum. Under an 800-byte cap it would
 * put s0 at 1000 bytes: table 2 moves instead (5 / 3, s0 exactly full); moving table 0
 * over (4 / 4) or swapping 2 with 1 (4 / 4) would break the cap, so it stops there. */
TEST(refine_memory_cap)
{
    penalty = 0;
    as_features f[] = { F(0, 1, 300, 1), F(1, 1, 200, 3), F(2, 1, 100, 4) };
    as_plan_cfg c;
    as_plan p = make(AS_ALG_SIZE, 2, 0, f, 3, &TOY, NULL, &c);
    CHECK_EQ_I64(refine(&p, &c, f, 3, 0, 0), 0);
    const int64_t free_want[] = { 0, 0, 1 }, cap_want[] = { 0, 1, 0 };
    check_assign(&p, free_want, 3);
    CHECK_NEAR(pmax(&p), 4, 0);
    as_plan_free(&p);
    p = make(AS_ALG_SIZE, 2, 800, f, 3, &TOY, NULL, &c);
    const int64_t greedy[] = { 0, 1, 1 };
    check_assign(&p, greedy, 3);
    CHECK_EQ_I64(refine(&p, &c, f, 3, 0, 0), 0);
    check_assign(&p, cap_want, 3);
    CHECK_EQ_I64(p.refine.moves, 1);
    CHECK_EQ_I64(p.refine.swaps, 0);
    CHECK_NEAR(p.pred[0], 5, 0);
    CHECK_NEAR(p.pred[1], 3, 0);
    CHECK_EQ_I64(p.mem[0], 800);
    CHECK_EQ_I64(p.mem[1], 400);
    as_plan_free(&p);
}

/* an unplaced table that a step makes room for: cap 1000 bytes; s0 = A (600 B, load 1) + B
 * (200 B, load 6), s1 = C (400 B, load 1), D (700 B, load 1) fits nowhere. The step moves A
 * to s1 (6 / 2, s1 now full); D then fits on s0 only and is placed there; the plan becomes
 * feasible. Nothing else fits under the cap. */
TEST(refine_places_what_now_fits)
{
    penalty = 0;
    as_features f[] = { F(10, 1, 300, 1), F(11, 1, 100, 6), F(12, 1, 200, 1), F(13, 1, 350, 1) };
    const int64_t given[] = { 0, 0, 1, -1 }, want[] = { 1, 0, 1, 0 };
    as_plan_cfg c;
    as_plan p = make(AS_ALG_AUTOSHARD, 2, 1000, f, 4, &TOY, given, &c);
    CHECK(!p.feasible);
    CHECK_EQ_I64(p.ninfeasible, 1);
    CHECK_EQ_I64(refine(&p, &c, f, 4, 0, 0), 0);
    check_assign(&p, want, 4);
    CHECK_EQ_I64(p.refine.moves, 1);
    CHECK_EQ_I64(p.refine.placed, 1);
    CHECK(p.feasible);
    CHECK_EQ_I64(p.ninfeasible, 0);
    CHECK_EQ_I64(p.mem[0], 900);
    CHECK_EQ_I64(p.mem[1], 1000);
    CHECK_NEAR(p.pred[0], 7, 0);
    CHECK_NEAR(p.pred[1], 2, 0);
    as_plan_free(&p);
    /* a policy that left out a table that fits: placed before the search */
    const int64_t lazy[] = { 0, 1, 1, -1 };
    p = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, lazy, &c);
    CHECK_EQ_I64(refine(&p, &c, f, 4, 0, 0), 0);
    CHECK(p.feasible);
    CHECK(p.assign[3] >= 0);
    CHECK_EQ_I64(p.refine.placed, 1);
    as_plan_free(&p);
}

TEST(refine_errors)
{
    as_features f[] = { F(0, 1, 300, 1), F(1, 1, 200, 3) };
    const as_features *t[] = { &f[0], &f[1] };
    as_plan_cfg c;
    as_plan p = make(AS_ALG_SIZE, 2, 0, f, 2, NULL, NULL, &c);
    char err[256];
    CHECK_EQ_I64(as_plan_refine(&p, &c, t, 2, 0, 0, err, sizeof err), -1);
    CHECK_STR(err, "refine needs a cost model");
    c.model = &TOY;
    CHECK_EQ_I64(as_plan_refine(&p, &c, t, 1, 0, 0, err, sizeof err), -1);
    CHECK(strstr(err, "not 1 on 2") != NULL);
    CHECK_EQ_I64(as_plan_refine(&p, &c, t, 2, -1, 0, err, sizeof err), -1);
    /* a plan made without the model gets its pred here */
    CHECK(p.pred == NULL);
    CHECK_EQ_I64(as_plan_refine(&p, &c, t, 2, 0, 0, err, sizeof err), 0);
    CHECK(p.pred != NULL);
    CHECK_NEAR(p.pred[0] + p.pred[1], 4, 0);
    as_plan_free(&p);
}

/* ---- random tasks, the real cost model ---------------------------------------------------- */

static as_costmodel *real_model(uint64_t seed)
{
    as_costmodel *m = as_costmodel_new(128, 32, 64, seed);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->mean[0] = 24; in->std[0] = 8;
    in->mean[1] = 1e6; in->std[1] = 5e5;
    in->mean[2] = 15; in->std[2] = 9;
    in->y_scale = 3.5;
    return m;
}

/* every field of p agrees with its assignment; the cap holds */
static void check_consistent(const as_plan *p, const as_plan_cfg *c, const as_features *f, int n, as_costmodel *cm)
{
    int64_t K = p->shards, unplaced = 0;
    for (int64_t k = 0; k < K; k++) {
        uint64_t mem = 0;
        int64_t cnt = 0;
        double key = 0;
        const as_features *sh[64];
        for (int i = 0; i < n; i++) {
            if (p->assign[i] != k) continue;
            mem += (uint64_t)f[i].bytes_fp16;
            sh[cnt++] = &f[i];
            key += c->alg == AS_ALG_COST ? as_costmodel_predict(cm, &sh[cnt - 1], 1) : as_plan_key(c->alg, &f[i]);
        }
        CHECK_EQ_I64(p->mem[k], mem);
        CHECK_EQ_I64(p->count[k], cnt);
        CHECK(c->mem_cap == 0 || mem <= c->mem_cap);
        CHECK_NEAR(p->key[k], key, 1e-6 * (fabs(key) + 1));
        double want = cnt ? as_costmodel_predict(cm, sh, (int)cnt) : 0;
        CHECK_NEAR(p->pred[k], want, 1e-4 * (fabs(want) + 1));
    }
    for (int i = 0; i < n; i++) unplaced += p->assign[i] < 0;
    CHECK_EQ_I64(p->ninfeasible, unplaced);
    CHECK_EQ_I64(p->feasible, unplaced == 0);
}

/* (d) never a higher predicted max, for every algorithm, with and without a cap, on both
 * forms of the head; the plan's bookkeeping stays consistent */
TEST(refine_never_worse_random_tasks)
{
    as_costmodel *cm = real_model(5);
    as_plan_model split, plain;
    as_plan_model_of(&split, cm);
    CHECK(split.hid > 0 && split.pre && split.post);
    plain = split;
    plain.hid = 0;
    plain.pre = NULL;
    plain.post = NULL;
    as_rng r;
    as_rng_seed(&r, 21, 0);
    int improved = 0, total = 0;
    for (int rep = 0; rep < 12; rep++) {
        enum { N = 40 };
        as_features f[N];
        uint64_t tot = 0;
        for (int i = 0; i < N; i++) { f[i] = tsup_random_features(&r, i); tot += (uint64_t)f[i].bytes_fp16; }
        int64_t K = 2 + rep % 7;
        uint64_t cap = rep % 3 == 2 ? tot / (uint64_t)K + tot / (uint64_t)(2 * K) : 0;
        for (int a = 0; a < AS_ALG_AUTOSHARD; a++) {
            as_plan_cfg c;
            const as_plan_model *m = rep % 2 ? &split : &plain;
            as_plan p = make((as_alg)a, K, cap, f, N, m, NULL, &c);
            double before = pmax(&p);
            int feasible = p.feasible;
            CHECK_EQ_I64(refine(&p, &c, f, N, 0, 0), 0);
            CHECK(pmax(&p) <= before);
            CHECK_NEAR(p.refine.max_before, before, 0);
            CHECK_STR(p.refine.stop, "optimum");
            CHECK(p.feasible >= feasible);
            check_consistent(&p, &c, f, N, cm);
            total++;
            improved += pmax(&p) < before;
            as_plan_free(&p);
        }
    }
    CHECK(improved > total / 2);   /* not vacuous: most plans get better */
    as_costmodel_free(cm);
}

/* (e) the same input gives the same plan, and (f) the split head gives what the plain head
 * gives (the toy model is exact in both forms) */
TEST(refine_deterministic_and_split_agrees)
{
    as_costmodel *cm = real_model(8);
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    as_rng r;
    as_rng_seed(&r, 3, 0);
    enum { N = 60 };
    as_features f[N];
    for (int i = 0; i < N; i++) f[i] = tsup_random_features(&r, i);
    for (int a = 0; a < AS_ALG_AUTOSHARD; a++) {
        as_plan_cfg c;
        as_plan p = make((as_alg)a, 6, 0, f, N, &pm, NULL, &c), q = make((as_alg)a, 6, 0, f, N, &pm, NULL, &c);
        CHECK_EQ_I64(refine(&p, &c, f, N, 0, 0), 0);
        CHECK_EQ_I64(refine(&q, &c, f, N, 0, 0), 0);
        CHECK(!memcmp(p.assign, q.assign, N * sizeof *p.assign));
        CHECK(!memcmp(p.pred, q.pred, 6 * sizeof *p.pred));
        CHECK_EQ_I64(p.refine.moves, q.refine.moves);
        CHECK_EQ_I64(p.refine.swaps, q.refine.swaps);
        as_plan_free(&p);
        as_plan_free(&q);
    }
    as_costmodel_free(cm);

    /* integer loads 1..64 (dims 1, 2, 4 times pooling 1..16), penalty 3 per count^2 */
    penalty = 3;
    int steps = 0;
    for (int rep = 0; rep < 10; rep++) {
        as_features g[N];
        for (int i = 0; i < N; i++)
            g[i] = F(i % 17, 1 << as_rng_below(&r, 3), 1 + (int64_t)as_rng_below(&r, 1000), 1 + (double)as_rng_below(&r, 16));
        int64_t K = 3 + rep;
        uint64_t cap = rep % 2 ? 0 : 4000 * (uint64_t)N / (uint64_t)K;
        for (int a = 0; a < AS_ALG_AUTOSHARD; a++) {
            as_plan_cfg c1, c2;
            as_plan p = make((as_alg)a, K, cap, g, N, &TOY, NULL, &c1), q = make((as_alg)a, K, cap, g, N, &TOY_SPLIT, NULL, &c2);
            CHECK(!memcmp(p.assign, q.assign, N * sizeof *p.assign));
            CHECK_EQ_I64(refine(&p, &c1, g, N, 0, 0), 0);
            CHECK_EQ_I64(refine(&q, &c2, g, N, 0, 0), 0);
            CHECK(!memcmp(p.assign, q.assign, N * sizeof *p.assign));
            CHECK(!memcmp(p.pred, q.pred, (size_t)K * sizeof *p.pred));
            CHECK_EQ_I64(p.refine.moves, q.refine.moves);
            CHECK_EQ_I64(p.refine.swaps, q.refine.swaps);
            steps += (int)(p.refine.moves + p.refine.swaps);
            as_plan_free(&p);
            as_plan_free(&q);
        }
    }
    CHECK(steps > 20);
    penalty = 0;
}

/* the budgets: N steps stop after exactly N; a spent time budget leaves the plan as it was */
TEST(refine_budgets)
{
    as_costmodel *cm = real_model(2);
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    as_rng r;
    as_rng_seed(&r, 4, 0);
    enum { N = 50 };
    as_features f[N];
    for (int i = 0; i < N; i++) f[i] = tsup_random_features(&r, i);
    as_plan_cfg c;
    as_plan full = make(AS_ALG_RANDOM, 5, 0, f, N, &pm, NULL, &c);
    CHECK_EQ_I64(refine(&full, &c, f, N, 0, 0), 0);
    int64_t nsteps = full.refine.moves + full.refine.swaps;
    CHECK(nsteps >= 3);
    as_plan p = make(AS_ALG_RANDOM, 5, 0, f, N, &pm, NULL, &c);
    CHECK_EQ_I64(refine(&p, &c, f, N, 0, 2), 0);
    CHECK_EQ_I64(p.refine.moves + p.refine.swaps, 2);
    CHECK_STR(p.refine.stop, "steps");
    CHECK_EQ_I64(p.refine.budget_steps, 2);
    CHECK(pmax(&p) >= pmax(&full));
    as_plan_free(&p);
    p = make(AS_ALG_RANDOM, 5, 0, f, N, &pm, NULL, &c);
    int64_t a0[N];
    memcpy(a0, p.assign, sizeof a0);
    CHECK_EQ_I64(refine(&p, &c, f, N, 1e-9, 0), 0);
    CHECK_STR(p.refine.stop, "time");
    CHECK_EQ_I64(p.refine.moves + p.refine.swaps, 0);
    CHECK(!memcmp(a0, p.assign, sizeof a0));
    CHECK_NEAR(p.refine.budget_ms, 1e-9, 0);
    as_plan_free(&p);
    as_plan_free(&full);
    as_costmodel_free(cm);
}

/* shard_scale (as-plan --repair): the same plan is at an optimum on the model's costs, but
 * once shard 0 is measured at twice its prediction a move off it pays, and the search judges
 * it on the scaled costs; scales of 1 change nothing; the label gets "+measured" */
TEST(refine_shard_scale)
{
    penalty = 0;
    /* loads 4+4 | 4+4: balanced on the model */
    as_features f[4] = { F(1, 4, 10, 1), F(2, 4, 10, 1), F(3, 4, 10, 1), F(4, 4, 10, 1) };
    const int64_t given[4] = { 0, 0, 1, 1 };
    as_plan_cfg c;
    as_plan pl = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, given, &c);
    CHECK_EQ_I64(refine(&pl, &c, f, 4, 0, 0), 0);
    CHECK_EQ_I64(pl.refine.moves + pl.refine.swaps, 0);
    const int64_t same[4] = { 0, 0, 1, 1 };
    check_assign(&pl, same, 4);
    as_plan_free(&pl);
    /* scales of 1: nothing changes either */
    const double one[2] = { 1, 1 };
    pl = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, given, &c);
    c.shard_scale = one;
    CHECK_EQ_I64(refine(&pl, &c, f, 4, 0, 0), 0);
    CHECK_EQ_I64(pl.refine.moves + pl.refine.swaps, 0);
    as_plan_free(&pl);
    /* shard 0 measured at 2x: scaled costs 16 | 8; moving one table gives 8 | 12 (max 12):
       one move, then no step lowers the max (back: 16 | 4; the other: 0 | 16) */
    const double two[2] = { 2, 1 };
    pl = make(AS_ALG_AUTOSHARD, 2, 0, f, 4, &TOY, given, &c);
    c.shard_scale = two;
    CHECK_EQ_I64(refine(&pl, &c, f, 4, 0, 0), 0);
    CHECK_EQ_I64(pl.refine.moves, 1);
    CHECK_EQ_I64(pl.refine.swaps, 0);
    CHECK_EQ_I64(pl.count[0], 1);
    CHECK_EQ_I64(pl.count[1], 3);
    CHECK(fabs(pl.refine.max_before - 16) < 1e-9);
    /* pred stays the model's (unscaled): 4 | 12 */
    CHECK(fabs(pl.pred[0] - 4) < 1e-9 && fabs(pl.pred[1] - 12) < 1e-9);
    pl.measured = 1;
    char b[64];
    CHECK_STR(as_plan_alg_label(&pl, AS_ALG_COST, b, sizeof b), "cost-greedy+refine+measured");
    pl.split = 1;
    CHECK_STR(as_plan_alg_label(&pl, AS_ALG_COST, b, sizeof b), "cost-greedy+split+refine+measured");
    pl.measured = 3;
    CHECK_STR(as_plan_alg_label(&pl, AS_ALG_COST, b, sizeof b), "cost-greedy+split+refine+measured3");
    as_plan_free(&pl);
}
