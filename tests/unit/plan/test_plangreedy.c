/* test_plangreedy.c - the greedy planners (lib/plan/plangreedy.c; their rules in plan.h) on
 * what test_plan.c's hand-worked tasks leave out: an empty task, TorchRec's pinned row blocks
 * placed first into the shards' key sums, cost-greedy's split head (pre / post) and its
 * communication charge (comm_gbps), ties between equal shards by memory, and each
 * heuristic's key order with a cap that leaves a table out. */
#include "unit.h"

#include "common.h"
#include "fixtures.h"
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows, double pooling) { return tsup_features(id, dim, rows, pooling, 0, 0); }

static int make(as_plan *pl, as_alg alg, int64_t K, uint64_t cap, const as_features *f, int n, const as_plan_model *m,
                double gbps)
{
    const as_features *p[16] = { 0 };
    for (int i = 0; i < n; i++) p[i] = &f[i];
    as_plan_cfg c = { .alg = alg, .shards = K, .mem_cap = cap, .model = m, .comm_gbps = gbps };
    char err[256] = "";
    const int rc = as_plan_make(pl, &c, p, n, err, sizeof err);
    if (rc) fprintf(stderr, "    as_plan_make: %s\n", err);
    return rc;
}

static void check_assign(const as_plan *p, const int64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        if (!CHECK_EQ_I64(p->assign[i], want[i])) fprintf(stderr, "    at item %d\n", i);
}

static const as_alg greedy[] = { AS_ALG_SIZE, AS_ALG_DIM, AS_ALG_LOOKUP, AS_ALG_SIZE_LOOKUP, AS_ALG_COST };

/* an empty task: a feasible plan of empty shards, for every greedy planner */
TEST(plangreedy_empty_task)
{
    for (size_t a = 0; a < sizeof greedy / sizeof *greedy; a++) {
        as_plan p;
        if (!CHECK_EQ_I64(make(&p, greedy[a], 3, 100, NULL, 0, &tsup_toy_model, 0), 0)) continue;
        CHECK(p.feasible);
        CHECK_EQ_I64(p.ninfeasible, 0);
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_I64(p.count[k], 0);
            CHECK_EQ_I64(p.mem[k], 0);
            CHECK_NEAR(p.key[k], 0, 0);
        }
        as_plan_free(&p);
    }
}

/* TorchRec's row_wise blocks of table 2 (rows [0, 5) and [5, 10), all 4 columns) are pinned
 * to ranks 0 and 1 and enter the key sums first (4 each under lookup-greedy). Then table 1
 * (key 160): sums 4 / 4 and bytes 40 / 40 tie -> shard 0; table 3 (key 8) -> shard 1 (4 <
 * 164). Key sums 164, 12. Unpinned, the blocks would both follow table 1's lighter shard. */
TEST(plangreedy_pinned_first)
{
    as_features f[4] = { F(1, 16, 100, 10), F(2, 4, 5, 1), F(2, 4, 5, 1), F(3, 8, 100, 1) };
    f[1].piece = (as_piece){ 0, 4, 0, 5 };
    f[2].piece = (as_piece){ 0, 4, 5, 10 };
    as_plan p;
    CHECK_EQ_I64(make(&p, AS_ALG_LOOKUP, 2, 0, f, 4, NULL, 0), 0);
    const int64_t want[4] = { 0, 0, 1, 1 };
    check_assign(&p, want, 4);
    CHECK_NEAR(p.key[0], 164, 0);
    CHECK_NEAR(p.key[1], 12, 0);
    CHECK_EQ_I64(p.count[0], 2);
    CHECK_EQ_I64(p.count[1], 2);
    CHECK_EQ_I64(p.mem[0], 16 * 100 * 2 + 40);
    CHECK_EQ_I64(p.mem[1], 8 * 100 * 2 + 40);
    as_plan_free(&p);
    /* a block that does not fit its rank stays unplaced (cap 3000: table 1's 3200 bytes fit
       nowhere, the blocks' 40 do) */
    CHECK_EQ_I64(make(&p, AS_ALG_LOOKUP, 2, 3000, f, 4, NULL, 0), 0);
    const int64_t want_cap[4] = { -1, 0, 1, 0 };
    check_assign(&p, want_cap, 4);
    CHECK(!p.feasible);
    CHECK_EQ_I64(p.ninfeasible, 1);
    CHECK_EQ_I64(p.infeasible[0], 1);
    as_plan_free(&p);
}

/* a split head: rep [dim * pooling, 1], pre the identity, post z0 + 20 z1^2 (head the same).
 * test_plan.c's plan_cost_greedy_by_hand through post(pre(sum)): assign 0, 0, 1, 1, predicted
 * 190 and 100, key sums 150 and 60 */
static void toy_embed(void *ctx, const as_features *f, float *out)
{
    out[0] = (float)(f->dim * f->pooling);
    out[1] = 1;
}
static double toy_head(void *ctx, const float *s) { return s[0] + 20.0 * s[1] * s[1]; }
static int npost;
static void toy_pre(void *ctx, const float *s, float *z) { z[0] = s[0], z[1] = s[1]; }
static double toy_post(void *ctx, const float *z) { npost++; return z[0] + 20.0 * z[1] * z[1]; }

TEST(plangreedy_cost_split_head)
{
    const as_plan_model m = { NULL, 2, toy_embed, toy_head, 2, toy_pre, toy_post };
    as_features f[] = { F(0, 10, 100, 10), F(1, 10, 100, 1), F(2, 10, 100, 1), F(3, 10, 100, 1) };
    as_plan p;
    npost = 0;
    CHECK_EQ_I64(make(&p, AS_ALG_COST, 2, 0, f, 4, &m, 0), 0);
    CHECK(npost > 0);   /* the split head was used */
    const int64_t want[4] = { 0, 0, 1, 1 };
    check_assign(&p, want, 4);
    CHECK_NEAR(p.pred[0], 190, 1e-4);
    CHECK_NEAR(p.pred[1], 100, 1e-4);
    CHECK_NEAR(p.key[0], 150, 1e-4);
    CHECK_NEAR(p.key[1], 60, 1e-4);
    as_plan_free(&p);
}

/* cost-greedy's communication at 1 GiB/s: an additive model (cost = sum of dim * pooling), keys
 * 10, 9, 2, 2 (ids 0..3; 3 before 2 on the tie). Without communication: 0 -> s0, 1 -> s1,
 * 3 -> s1 (11 < 12), 2 -> s0 (12 < 13). Table 0 looks up 2^24 ids (2^27 bytes: 125 ms of
 * its own), the others none: 2 then goes to s1 (13 < 12 + 125). Other planners ignore it. */
TEST(plangreedy_cost_comm)
{
    as_features f[] = { F(0, 10, 100, 1), F(1, 9, 100, 1), F(2, 2, 100, 1), F(3, 2, 100, 1) };
    f[0].lookups = 1 << 24;
    as_plan p;
    CHECK_EQ_I64(make(&p, AS_ALG_COST, 2, 0, f, 4, &tsup_toy_model, 0), 0);
    const int64_t plain[4] = { 0, 1, 0, 1 };
    check_assign(&p, plain, 4);
    CHECK_NEAR(p.pred[0], 12, 1e-5);
    CHECK_NEAR(p.pred[1], 11, 1e-5);
    as_plan_free(&p);
    CHECK_EQ_I64(make(&p, AS_ALG_COST, 2, 0, f, 4, &tsup_toy_model, 1), 0);
    const int64_t comm[4] = { 0, 1, 1, 1 };
    check_assign(&p, comm, 4);
    CHECK_NEAR(p.pred[0], 10, 1e-5);   /* the kernel alone */
    CHECK_NEAR(p.pred[1], 13, 1e-5);
    as_plan_free(&p);
    as_plan q;
    CHECK_EQ_I64(make(&p, AS_ALG_LOOKUP, 2, 0, f, 4, NULL, 0), 0);
    CHECK_EQ_I64(make(&q, AS_ALG_LOOKUP, 2, 0, f, 4, NULL, 1), 0);
    CHECK(!memcmp(p.assign, q.assign, 4 * sizeof *p.assign));
    as_plan_free(&p);
    as_plan_free(&q);
}

/* cost-greedy's ties: equal predicted costs go to the shard holding fewer bytes, then the
 * lower one. Keys 5 (id 0, 200 rows), 3 (id 1, 100 rows), 3 (id 2, 300 rows), 2 (id 3):
 * order 0, 2, 1, 3; 0 -> s0; 2 -> s1; 1: s0 8, s1 6 -> s1; 3: s0 7, s1 8 -> s0; with 3
 * shards: 0 -> s0, 2 -> s1, 1 -> s2 (empty, 3 < 6), 3: s1 5 and s2 5 tie, s2 holds fewer
 * bytes (100 rows < 300) -> s2 */
TEST(plangreedy_cost_ties)
{
    as_features f[] = { F(0, 5, 200, 1), F(1, 3, 100, 1), F(2, 3, 300, 1), F(3, 2, 100, 1) };
    as_plan p;
    CHECK_EQ_I64(make(&p, AS_ALG_COST, 2, 0, f, 4, &tsup_toy_model, 0), 0);
    const int64_t w2[4] = { 0, 1, 1, 0 };
    check_assign(&p, w2, 4);
    as_plan_free(&p);
    CHECK_EQ_I64(make(&p, AS_ALG_COST, 3, 0, f, 4, &tsup_toy_model, 0), 0);
    const int64_t w3[4] = { 0, 2, 1, 2 };
    check_assign(&p, w3, 4);
    CHECK_NEAR(p.pred[2], 5, 1e-5);
    as_plan_free(&p);
}

/* every heuristic under a cap of 2400 bytes on 2 shards: the 3200-byte table (id 0, 16 x 100)
 * fits nowhere and is the plan's one infeasible table, whatever the key; the others (800
 * bytes each, 8 x 50) all placed, no shard over the cap */
TEST(plangreedy_cap_leaves_out)
{
    as_features f[] = { F(0, 16, 100, 3), F(1, 8, 50, 1), F(2, 8, 50, 2), F(3, 8, 50, 4), F(4, 8, 50, 5) };
    for (size_t a = 0; a < sizeof greedy / sizeof *greedy; a++) {
        as_plan p;
        if (!CHECK_EQ_I64(make(&p, greedy[a], 2, 2400, f, 5, &tsup_toy_model, 0), 0)) continue;
        CHECK(!p.feasible);
        CHECK_EQ_I64(p.ninfeasible, 1);
        CHECK_EQ_I64(p.infeasible[0], 0);
        CHECK_EQ_I64(p.assign[0], -1);
        CHECK_EQ_I64(p.count[0] + p.count[1], 4);
        CHECK(p.mem[0] <= 2400 && p.mem[1] <= 2400);
        CHECK_EQ_I64(p.mem[0] + p.mem[1], 3200);
        as_plan_free(&p);
    }
    /* lookup-greedy by hand: keys 48 (0), 40 (4), 32 (3), 16 (2), 8 (1): 0 fits nowhere,
       4 -> s0, 3 -> s1, 2 -> s1 (48), 1 -> s0 (40 < 48): both at 48 */
    as_plan p;
    CHECK_EQ_I64(make(&p, AS_ALG_LOOKUP, 2, 2400, f, 5, NULL, 0), 0);
    const int64_t want[5] = { -1, 0, 1, 1, 0 };
    check_assign(&p, want, 5);
    CHECK_NEAR(p.key[0], 48, 0);
    CHECK_NEAR(p.key[1], 48, 0);
    as_plan_free(&p);
}
