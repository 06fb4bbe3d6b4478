/* test_planrandom.c - the random planner (lib/plan/planrandom.c): each item, in task order, on a
 * shard drawn uniformly from those where it still fits, from stream rng_stream of seed; what
 * fits nowhere unplaced (no draw); TorchRec's pinned row blocks left on their ranks. What
 * test_plan.c's plan_random (the draws without a cap) leaves out. */
#include "unit.h"

#include "common.h"
#include "fixtures.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows) { return tsup_features(id, dim, rows, 1, 0, 0); }

static int make(as_plan *pl, int64_t K, uint64_t cap, uint64_t seed, int64_t stream, const as_features *f, int n)
{
    const as_features *p[64] = { 0 };
    for (int i = 0; i < n; i++) p[i] = &f[i];
    as_plan_cfg c = { .alg = AS_ALG_RANDOM, .shards = K, .mem_cap = cap, .seed = seed, .rng_stream = stream };
    char err[256] = "";
    const int rc = as_plan_make(pl, &c, p, n, err, sizeof err);
    if (rc) fprintf(stderr, "    as_plan_make: %s\n", err);
    return rc;
}

TEST(planrandom_empty_and_one_shard)
{
    as_plan p;
    CHECK_EQ_I64(make(&p, 4, 0, 1, 0, NULL, 0), 0);
    CHECK(p.feasible);
    for (int k = 0; k < 4; k++) CHECK_EQ_I64(p.count[k], 0);
    as_plan_free(&p);
    /* one shard: everything on it; under a cap of 2000 bytes table 0 (1600 bytes) fits, then
       table 1 (800) and table 2 (1600) would overflow it: both unplaced */
    as_features f[3] = { F(0, 8, 100), F(1, 8, 50), F(2, 8, 100) };
    CHECK_EQ_I64(make(&p, 1, 0, 1, 0, f, 3), 0);
    for (int i = 0; i < 3; i++) CHECK_EQ_I64(p.assign[i], 0);
    CHECK_EQ_I64(p.mem[0], 4000);
    CHECK_NEAR(p.key[0], 0, 0);   /* random keeps no key */
    as_plan_free(&p);
    CHECK_EQ_I64(make(&p, 1, 2000, 1, 0, f, 3), 0);
    const int64_t want[3] = { 0, -1, -1 };
    for (int i = 0; i < 3; i++) CHECK_EQ_I64(p.assign[i], want[i]);
    CHECK_EQ_I64(p.ninfeasible, 2);
    CHECK_EQ_I64(p.infeasible[0], 1);
    CHECK_EQ_I64(p.infeasible[1], 2);
    CHECK_EQ_I64(p.mem[0], 1600);
    as_plan_free(&p);
}

/* three 3200-byte tables on two 3200-byte shards: the first anywhere, the second on the other
 * shard (the only one it fits), the third nowhere: for every stream */
TEST(planrandom_cap_forces)
{
    as_features f[3] = { F(7, 16, 100), F(8, 16, 100), F(9, 16, 100) };
    int seen[2] = { 0, 0 };
    for (int64_t s = 0; s < 40; s++) {
        as_plan p;
        if (!CHECK_EQ_I64(make(&p, 2, 3200, 3, s, f, 3), 0)) return;
        CHECK(p.assign[0] == 0 || p.assign[0] == 1);
        CHECK_EQ_I64(p.assign[1], 1 - p.assign[0]);
        CHECK_EQ_I64(p.assign[2], -1);
        CHECK(!p.feasible);
        CHECK_EQ_I64(p.ninfeasible, 1);
        CHECK_EQ_I64(p.infeasible[0], 9);
        seen[p.assign[0] & 1]++;
        as_plan_free(&p);
    }
    CHECK(seen[0] > 0 && seen[1] > 0);
}

/* the draw is over the shards where the item fits, uniformly: a 3200-byte table fills its
 * shard under the cap, so the next (1600 bytes) lands on each of the other two about half the
 * time over 400 streams (binomial: 200 +- 10; 150 is 5 sigma), never on the full one */
TEST(planrandom_uniform_over_fitting)
{
    as_features f[2] = { F(0, 16, 100), F(1, 16, 50) };
    int64_t on[3][3] = { { 0 } };   /* [first's shard][second's shard] */
    for (int64_t s = 0; s < 400; s++) {
        as_plan p;
        if (!CHECK_EQ_I64(make(&p, 3, 3200, 11, s, f, 2), 0)) return;
        CHECK(p.feasible);
        on[p.assign[0]][p.assign[1]]++;
        as_plan_free(&p);
    }
    int64_t other[2] = { 0, 0 };
    for (int a = 0; a < 3; a++) {
        CHECK_EQ_I64(on[a][a], 0);
        /* the other two shards, lower first */
        other[0] += on[a][a == 0 ? 1 : 0];
        other[1] += on[a][a == 2 ? 1 : 2];
    }
    CHECK(other[0] >= 150 && other[1] >= 150);
    CHECK_EQ_I64(other[0] + other[1], 400);
}

/* a table that fits nowhere takes no draw: the other tables' shards are those of the same task
 * without it */
TEST(planrandom_unplaced_draws_nothing)
{
    as_features with[7], without[6];
    for (int i = 0, j = 0; i < 7; i++) {
        with[i] = i == 3 ? F(100, 64, 1000) : F(i, 8, 50);   /* 128000 bytes vs 800 */
        if (i != 3) without[j++] = with[i];
    }
    as_plan a, b;
    CHECK_EQ_I64(make(&a, 4, 10000, 5, 2, with, 7), 0);
    CHECK_EQ_I64(make(&b, 4, 10000, 5, 2, without, 6), 0);
    CHECK_EQ_I64(a.assign[3], -1);
    CHECK_EQ_I64(a.ninfeasible, 1);
    CHECK_EQ_I64(a.infeasible[0], 100);
    for (int i = 0, j = 0; i < 7; i++)
        if (i != 3) CHECK_EQ_I64(a.assign[i], b.assign[j++]);
    as_plan_free(&a);
    as_plan_free(&b);
    /* another seed, same stream: another plan */
    as_features g[30];
    for (int i = 0; i < 30; i++) g[i] = F(i, 8, 50);
    CHECK_EQ_I64(make(&a, 4, 0, 5, 2, g, 30), 0);
    CHECK_EQ_I64(make(&b, 4, 0, 6, 2, g, 30), 0);
    CHECK(memcmp(a.assign, b.assign, 30 * sizeof *a.assign) != 0);
    as_plan_free(&a);
    as_plan_free(&b);
}

/* TorchRec's row_wise blocks of table 5 (rows [0, 4) and [4, 8), all 2 columns) stay on
 * ranks 0 and 1, whatever the draws */
TEST(planrandom_pinned_stay)
{
    as_features f[4] = { F(1, 8, 50), F(5, 2, 4), F(5, 2, 4), F(2, 8, 50) };
    f[1].piece = (as_piece){ 0, 2, 0, 4 };
    f[2].piece = (as_piece){ 0, 2, 4, 8 };
    for (int64_t s = 0; s < 20; s++) {
        as_plan p;
        if (!CHECK_EQ_I64(make(&p, 2, 0, 9, s, f, 4), 0)) return;
        CHECK_EQ_I64(p.assign[1], 0);
        CHECK_EQ_I64(p.assign[2], 1);
        CHECK(p.feasible);
        CHECK_EQ_I64(p.count[0] + p.count[1], 4);
        as_plan_free(&p);
    }
}
