/* test_plan.c - the heuristics and the cost-model greedy on hand-made tasks with answers
 * worked out by hand (ties and memory caps included), the 2D rank map, task parsing. */
#include "unit.h"

#include "common.h"
#include "plan.h"
#include "planreport.h"
#include "planrec.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, int64_t rows, double pooling) { return tsup_features(id, dim, rows, pooling, 0, 0); }

/* plan tables f[0..n) and check the assignment */
static as_plan run(as_alg alg, int64_t K, uint64_t cap, const as_features *f, int n, const as_plan_model *m)
{
    const as_features *p[64];
    for (int i = 0; i < n; i++) p[i] = &f[i];
    as_plan_cfg c = { alg, K, cap, 7, 3, m, NULL, 0, NULL, 0, NULL };
    as_plan pl;
    char err[256];
    int rc = as_plan_make(&pl, &c, p, n, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    return pl;
}

static void check_assign(const as_plan *p, const int64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        if (!CHECK_EQ_I64(p->assign[i], want[i])) fprintf(stderr, "    at table %d\n", i);
}

TEST(plan_alg_names)
{
    as_alg a;
    for (int i = 0; i < AS_ALG_COUNT; i++) {
        CHECK_EQ_I64(as_alg_parse(as_alg_name((as_alg)i), &a), 0);
        CHECK_EQ_I64(a, i);
    }
    CHECK_EQ_I64(as_alg_parse("greedy", &a), -1);
    CHECK_STR(as_alg_name(AS_ALG_SIZE_LOOKUP), "size-lookup-greedy");
}

TEST(plan_keys)
{
    as_features f = F(0, 16, 1000, 2.5);
    CHECK_NEAR(as_plan_key(AS_ALG_SIZE, &f), 16000, 0);
    CHECK_NEAR(as_plan_key(AS_ALG_DIM, &f), 16, 0);
    CHECK_NEAR(as_plan_key(AS_ALG_LOOKUP, &f), 40, 0);
    CHECK_NEAR(as_plan_key(AS_ALG_SIZE_LOOKUP, &f), 120, 1e-9);
    CHECK_NEAR(as_plan_key(AS_ALG_RANDOM, &f), 0, 0);
}

/* keys 160 320 80 64 16 on 2 shards: 320 -> s0; 160 -> s1; 80, 64, 16 -> s1 (sum stays
 * below 320): key sums 320 / 320 */
TEST(plan_lookup_greedy_by_hand)
{
    as_features f[] = { F(0, 16, 100, 10), F(1, 32, 100, 10), F(2, 16, 100, 5), F(3, 32, 100, 2), F(4, 16, 100, 1) };
    as_plan p = run(AS_ALG_LOOKUP, 2, 0, f, 5, NULL);
    int64_t want[] = { 1, 0, 1, 1, 1 };
    check_assign(&p, want, 5);
    CHECK_NEAR(p.key[0], 320, 0);
    CHECK_NEAR(p.key[1], 320, 0);
    CHECK_EQ_I64(p.count[0], 1);
    CHECK_EQ_I64(p.count[1], 4);
    CHECK_EQ_I64(p.mem[0], 100 * 32 * 2);
    CHECK_EQ_I64(p.mem[1], 100 * (16 + 16 + 32 + 16) * 2);
    CHECK(p.feasible);
    CHECK(p.pred == NULL);
    CHECK(p.plan_ms >= 0);
    as_plan_free(&p);
}

/* equal keys: larger size first, then larger id; equal key sums: smaller bytes sum, then
 * lower shard */
TEST(plan_ties)
{
    /* same size: order C(2), B(1), A(0); C -> s0 (all tied: lowest shard), B -> s1, A: key
       sums 16/16 and bytes tied -> s0 */
    as_features a[] = { F(0, 16, 200, 1), F(1, 16, 200, 1), F(2, 16, 200, 1) };
    as_plan p = run(AS_ALG_LOOKUP, 2, 0, a, 3, NULL);
    int64_t w1[] = { 0, 1, 0 };
    check_assign(&p, w1, 3);
    as_plan_free(&p);
    /* sizes 100, 300, 200: order B(300), C(200), A(100); B -> s0, C -> s1, A: key sums tie,
       s1 holds fewer bytes -> s1 */
    as_features b[] = { F(0, 16, 100, 1), F(1, 16, 300, 1), F(2, 16, 200, 1) };
    p = run(AS_ALG_LOOKUP, 2, 0, b, 3, NULL);
    int64_t w2[] = { 1, 0, 1 };
    check_assign(&p, w2, 3);
    as_plan_free(&p);
    /* dim-greedy on all-equal dims: order by size, so the same as above */
    p = run(AS_ALG_DIM, 2, 0, b, 3, NULL);
    check_assign(&p, w2, 3);
    as_plan_free(&p);
}

/* size-greedy: keys rows*dim 1600, 6400, 3200, 800 on 2 shards: 6400 -> s0, 3200 -> s1,
 * 1600 -> s1 (4800), 800 -> s1 (5600 < 6400) */
TEST(plan_size_greedy_by_hand)
{
    as_features f[] = { F(0, 16, 100, 50), F(1, 32, 200, 1), F(2, 16, 200, 9), F(3, 8, 100, 3) };
    as_plan p = run(AS_ALG_SIZE, 2, 0, f, 4, NULL);
    int64_t want[] = { 1, 0, 1, 1 };
    check_assign(&p, want, 4);
    CHECK_NEAR(p.key[0], 6400, 0);
    CHECK_NEAR(p.key[1], 5600, 0);
    as_plan_free(&p);
}

/* dim-greedy: dims 64, 16, 32, 16, 8 on 3 shards: 64 -> s0; 32 -> s1; 16 (id 3 first: ties
 * by size are equal, larger id first) -> s2; 16 (id 1) -> s2 (16 < 32); 8 -> s1 (32 < 64,
 * tie with s2 = 32: s1 holds 32*100*2 bytes, s2 2*16*100*2: equal, lower shard) */
TEST(plan_dim_greedy_by_hand)
{
    as_features f[] = { F(0, 64, 100, 1), F(1, 16, 100, 1), F(2, 32, 100, 1), F(3, 16, 100, 1), F(4, 8, 100, 1) };
    as_plan p = run(AS_ALG_DIM, 3, 0, f, 5, NULL);
    int64_t want[] = { 0, 2, 1, 2, 1 };
    check_assign(&p, want, 5);
    CHECK_NEAR(p.key[0], 64, 0);
    CHECK_NEAR(p.key[1], 40, 0);
    CHECK_NEAR(p.key[2], 32, 0);
    as_plan_free(&p);
}

/* size-lookup-greedy: keys dim*pooling*log10(rows) = 480, 160, 160, 0; the tie 160/160
 * goes to the larger table (id 2) first: 480 -> s0, id2 -> s1, id1 -> s1 (320), id3 -> s1 */
TEST(plan_size_lookup_greedy_by_hand)
{
    as_features f[] = { F(0, 16, 1000, 10), F(1, 16, 10, 10), F(2, 32, 100000, 1), F(3, 16, 1, 50) };
    CHECK_NEAR(as_plan_key(AS_ALG_SIZE_LOOKUP, &f[1]), as_plan_key(AS_ALG_SIZE_LOOKUP, &f[2]), 0);
    as_plan p = run(AS_ALG_SIZE_LOOKUP, 2, 0, f, 4, NULL);
    int64_t want[] = { 0, 1, 1, 1 };
    check_assign(&p, want, 4);
    CHECK_NEAR(p.key[0], 480, 1e-9);
    CHECK_NEAR(p.key[1], 320, 1e-9);
    as_plan_free(&p);
}

/* the cap redirects: cap 4800 bytes; keys 160 (3200 B), 16 (1600 B), 32 (1600 B),
 * 320 (3200 B): 320 -> s0, 160 -> s1, 32 -> s1 (exactly full), 16 -> s1 is full -> s0 */
TEST(plan_memory_cap_redirects)
{
    as_features f[] = { F(0, 16, 100, 10), F(1, 16, 50, 1), F(2, 16, 50, 2), F(3, 16, 100, 20) };
    as_plan p = run(AS_ALG_LOOKUP, 2, 4800, f, 4, NULL);
    int64_t want[] = { 1, 0, 1, 0 };
    check_assign(&p, want, 4);
    CHECK_EQ_I64(p.mem[0], 4800);
    CHECK_EQ_I64(p.mem[1], 4800);
    CHECK(p.feasible);
    /* without the cap, the last table would go to s1 */
    as_plan q = run(AS_ALG_LOOKUP, 2, 0, f, 4, NULL);
    CHECK_EQ_I64(q.assign[1], 1);
    as_plan_free(&p);
    as_plan_free(&q);
}

/* infeasible: two 3200-byte tables fill both 3200-byte shards; the third fits nowhere and
 * stays unplaced; the cap is never exceeded, for every algorithm */
TEST(plan_infeasible)
{
    as_features f[] = { F(0, 16, 100, 1), F(1, 16, 100, 1), F(2, 16, 50, 1) };
    as_plan p = run(AS_ALG_SIZE, 2, 3200, f, 3, NULL);
    int64_t want[] = { 1, 0, -1 };
    check_assign(&p, want, 3);
    CHECK(!p.feasible);
    CHECK_EQ_I64(p.ninfeasible, 1);
    CHECK_EQ_I64(p.infeasible[0], 2);
    as_plan_free(&p);
    for (int a = 0; a < AS_ALG_COST; a++) {
        p = run((as_alg)a, 2, 3200, f, 3, NULL);
        CHECK(!p.feasible);
        CHECK_EQ_I64(p.ninfeasible, 1);
        CHECK(p.mem[0] <= 3200 && p.mem[1] <= 3200);
        as_plan_free(&p);
    }
    /* a table larger than the cap on its own */
    as_features g[] = { F(5, 16, 1000, 1) };
    p = run(AS_ALG_LOOKUP, 4, 3200, g, 1, NULL);
    CHECK(!p.feasible);
    CHECK_EQ_I64(p.assign[0], -1);
    CHECK_EQ_I64(p.infeasible[0], 5);
    as_plan_free(&p);
}

/* random: table i, in task order, on as_rng_below(K) of stream `stream` of the seed (no
 * cap); roughly uniform; a cap is honoured */
TEST(plan_random)
{
    enum { N = 60 };
    as_features f[N];
    for (int i = 0; i < N; i++) f[i] = F(i, 16, 100 + i, 1 + i % 7);
    as_plan p = run(AS_ALG_RANDOM, 4, 0, f, N, NULL);
    as_rng r;
    as_rng_seed(&r, 7, 3);
    int64_t cnt[4] = { 0 };
    for (int i = 0; i < N; i++) {
        CHECK_EQ_I64(p.assign[i], (int64_t)as_rng_below(&r, 4));
        cnt[p.assign[i]]++;
    }
    for (int k = 0; k < 4; k++) CHECK(cnt[k] >= 5 && cnt[k] <= 25);
    as_plan q = run(AS_ALG_RANDOM, 4, 0, f, N, NULL);
    CHECK(!memcmp(p.assign, q.assign, N * sizeof *p.assign));
    as_plan_free(&q);
    /* another stream (task) gives another plan */
    const as_features *pp[N];
    for (int i = 0; i < N; i++) pp[i] = &f[i];
    as_plan_cfg c = { AS_ALG_RANDOM, 4, 0, 7, 4, NULL, NULL, 0, NULL, 0, NULL };
    char err[128];
    CHECK_EQ_I64(as_plan_make(&q, &c, pp, N, err, sizeof err), 0);
    CHECK(memcmp(p.assign, q.assign, N * sizeof *p.assign) != 0);
    as_plan_free(&q);
    as_plan_free(&p);
    /* a cap that just fits the tables in two shards' worth of room each */
    uint64_t tot = 0;
    for (int i = 0; i < N; i++) tot += (uint64_t)f[i].bytes_fp16;
    p = run(AS_ALG_RANDOM, 4, tot / 3, f, N, NULL);
    for (int k = 0; k < 4; k++) CHECK(p.mem[k] <= tot / 3);
    CHECK(p.feasible);
    as_plan_free(&p);
}

/* a hand-made cost model: rep = [dim*pooling, 1]; cost = rep0 + c * rep1^2 (c = 0: additive) */
static double penalty;
static void toy_embed(void *ctx, const as_features *f, float *out)
{
    out[0] = (float)(f->dim * f->pooling);
    out[1] = 1;
}
static double toy_head(void *ctx, const float *s) { return s[0] + penalty * s[1] * s[1]; }

TEST(plan_cost_greedy_additive_is_lookup_greedy)
{
    as_plan_model m = { NULL, 2, toy_embed, toy_head, 0, NULL, NULL };
    penalty = 0;
    enum { N = 40 };
    as_features f[N];
    for (int i = 0; i < N; i++) f[i] = F(i, 16 << (i % 3), 100 + 37 * i, (double)(1 + (i * 7) % 11));
    as_plan a = run(AS_ALG_COST, 5, 0, f, N, &m), b = run(AS_ALG_LOOKUP, 5, 0, f, N, &m);
    CHECK(!memcmp(a.assign, b.assign, N * sizeof *a.assign));
    for (int k = 0; k < 5; k++) {
        CHECK_NEAR(a.pred[k], b.pred[k], 1e-3);
        CHECK_NEAR(a.pred[k], b.key[k], 1e-3);   /* the predicted cost is the key sum here */
    }
    as_plan_free(&a);
    as_plan_free(&b);
}

/* non-additive: cost = sum(dim*pooling) + 20 * count^2. Keys 100, 10, 10, 10 (single costs
 * 120, 30, 30, 30); order id0, then id3, id2, id1 (ties: larger id). id0 -> s0 (tie 120/120);
 * id3: s0 would be 190, s1 30 -> s1; id2: s0 190, s1 100 -> s1; id1: s0 190, s1 210 -> s0.
 * lookup-greedy puts id1 on s1 instead. Predicted: s0 190, s1 100. */
TEST(plan_cost_greedy_by_hand)
{
    as_plan_model m = { NULL, 2, toy_embed, toy_head, 0, NULL, NULL };
    penalty = 20;
    as_features f[] = { F(0, 10, 100, 10), F(1, 10, 100, 1), F(2, 10, 100, 1), F(3, 10, 100, 1) };
    as_plan p = run(AS_ALG_COST, 2, 0, f, 4, &m);
    int64_t want[] = { 0, 0, 1, 1 };
    check_assign(&p, want, 4);
    CHECK_NEAR(p.pred[0], 190, 1e-4);
    CHECK_NEAR(p.pred[1], 100, 1e-4);
    CHECK_NEAR(p.key[0], 150, 1e-4);   /* single-table costs 120 + 30 */
    as_plan_free(&p);
    as_plan q = run(AS_ALG_LOOKUP, 2, 0, f, 4, &m);
    int64_t wl[] = { 0, 1, 1, 1 };
    check_assign(&q, wl, 4);
    CHECK_NEAR(q.pred[1], 30 + 180, 1e-4);
    as_plan_free(&q);
    /* an empty shard is predicted 0 */
    q = run(AS_ALG_COST, 6, 0, f, 4, &m);
    int empty = 0;
    for (int k = 0; k < 6; k++) if (!q.count[k]) { empty++; CHECK_NEAR(q.pred[k], 0, 0); }
    CHECK_EQ_I64(empty, 2);
    as_plan_free(&q);
    /* the cap applies to cost-greedy too: cap of one table per shard -> infeasible */
    q = run(AS_ALG_COST, 2, 2000, f, 4, &m);
    CHECK(!q.feasible);
    CHECK_EQ_I64(q.ninfeasible, 2);
    as_plan_free(&q);
    penalty = 0;
}

TEST(plan_errors)
{
    as_features f = F(0, 16, 10, 1);
    const as_features *p[] = { &f };
    as_plan pl;
    char err[256];
    as_plan_cfg c = { AS_ALG_COST, 2, 0, 0, 0, NULL, NULL, 0, NULL, 0, NULL };
    CHECK_EQ_I64(as_plan_make(&pl, &c, p, 1, err, sizeof err), -1);
    CHECK(strstr(err, "needs a cost model") != NULL);
    as_plan_cfg d = { AS_ALG_LOOKUP, 0, 0, 0, 0, NULL, NULL, 0, NULL, 0, NULL };
    CHECK_EQ_I64(as_plan_make(&pl, &d, p, 1, err, sizeof err), -1);
    as_plan_cfg e = { AS_ALG_AUTOSHARD, 2, 0, 0, 0, NULL, NULL, 0, NULL, 0, NULL };
    CHECK_EQ_I64(as_plan_make(&pl, &e, p, 1, err, sizeof err), -1);
    CHECK(strstr(err, "needs a policy") != NULL);
}

/* DMPCollection: W = 8, K = 4 -> G = 2 replicas; group 0 = ranks 0,2,4,6, group 1 =
 * 1,3,5,7 (group i holds i, G+i, ..., (K-1)G+i); shard k (local rank k) is on 2k, 2k+1 */
TEST(plan_ranks_2d)
{
    int64_t r[8];
    CHECK_EQ_I64(as_plan_ranks(8, 4, 1, r), 2);
    CHECK_EQ_I64(r[0], 2);
    CHECK_EQ_I64(r[1], 3);
    CHECK_EQ_I64(as_plan_ranks(8, 4, 3, r), 2);
    CHECK_EQ_I64(r[0], 6);
    CHECK_EQ_I64(r[1], 7);
    /* every rank exactly once; group i's k-th member is shard k */
    int seen[64] = { 0 };
    int64_t W = 24, K = 6, G = 4;
    for (int64_t k = 0; k < K; k++) {
        CHECK_EQ_I64(as_plan_ranks(W, K, k, r), G);
        for (int64_t i = 0; i < G; i++) {
            seen[r[i]]++;
            CHECK_EQ_I64(r[i], i + k * G);   /* [i, G+i, 2G+i, ...][k] */
        }
    }
    for (int i = 0; i < W; i++) CHECK_EQ_I64(seen[i], 1);
    CHECK_EQ_I64(as_plan_ranks(4, 4, 0, r), 1);   /* one replica: plain DMP */
    CHECK_EQ_I64(r[0], 0);
    CHECK_EQ_I64(as_plan_ranks(6, 4, 0, r), -1);
    CHECK_EQ_I64(as_plan_ranks(2, 4, 0, r), -1);
}

/* task records: the fields, and clear errors */
static int parse_task(const char *json_like_fields, as_taskrec *t, char *err, size_t errlen, int variant)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int dup = variant == 1, noshards = variant == 2;
    msgpack_pack_map(&pk, noshards ? 4 : 6);
    as_pack_kv_str(&pk, "kind", "task");
    as_pack_kv_i64(&pk, "id", 5);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 4);
    msgpack_pack_int(&pk, dup ? 4 : 9);
    msgpack_pack_int(&pk, 11);
    if (!noshards) {
        as_pack_kv_i64(&pk, "shards", 2);
        as_pack_kv_i64(&pk, "mem_cap", 12345);
    }
    as_pack_kv_str(&pk, "split", "test");
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    int rc = as_taskrec_read(&up.data, t, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(plan_task_read)
{
    as_taskrec t;
    char err[256];
    CHECK_EQ_I64(parse_task(NULL, &t, err, sizeof err, 0), 0);
    CHECK_EQ_I64(t.id, 5);
    CHECK_EQ_I64(t.ntables, 3);
    CHECK_EQ_I64(t.tables[1], 9);
    CHECK_EQ_I64(t.shards, 2);
    CHECK_EQ_I64(t.mem_cap, 12345);
    CHECK_STR(t.split, "test");
    as_taskrec_free(&t);
    CHECK_EQ_I64(parse_task(NULL, &t, err, sizeof err, 1), -1);
    CHECK(strstr(err, "table 4 is listed twice") != NULL);
    CHECK_EQ_I64(parse_task(NULL, &t, err, sizeof err, 2), -1);
    CHECK(strstr(err, "'shards'") != NULL);
}

/* ---- with the real cost model (lib/model/costmodel.h) ----------------------------------------- */
#include "costmodel.h"

static void cm_embed(void *ctx, const as_features *f, float *out) { as_costmodel_embed(ctx, f, out); }
static double cm_head(void *ctx, const float *sum) { return as_costmodel_head(ctx, sum); }

/* predict(shard) == head(sum of embeds), and cost-greedy's pred_ms are the model's
 * predictions of the shards it made */
TEST(plan_costmodel_incremental)
{
    as_costmodel *m = as_costmodel_new(128, 32, 64, 5);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->mean[0] = 24; in->std[0] = 8;
    in->mean[1] = 1e6; in->std[1] = 5e5;
    in->mean[2] = 15; in->std[2] = 9;
    in->y_scale = 3.5;
    CHECK_EQ_I64(as_costmodel_rep(m), 32);
    as_rng r;
    as_rng_seed(&r, 11, 0);
    enum { N = 30 };
    as_features f[N];
    const as_features *p[N];
    for (int i = 0; i < N; i++) { f[i] = tsup_random_features(&r, i); p[i] = &f[i]; }
    for (int n = 1; n <= N; n += 7) {
        float sum[32] = { 0 }, e[32];
        for (int i = 0; i < n; i++) {
            as_costmodel_embed(m, p[i], e);
            for (int d = 0; d < 32; d++) sum[d] += e[d];
        }
        double a = as_costmodel_predict(m, p, n), b = as_costmodel_head(m, sum);
        CHECK_NEAR(a, b, 1e-4 * (fabs(a) + 1));
    }
    as_plan_model pm = { m, 32, cm_embed, cm_head, 0, NULL, NULL };
    as_plan pl = run(AS_ALG_COST, 4, 0, f, N, &pm);
    CHECK(pl.feasible);
    for (int k = 0; k < 4; k++) {
        const as_features *sh[N];
        int c = 0;
        for (int i = 0; i < N; i++) if (pl.assign[i] == k) sh[c++] = &f[i];
        double want = as_costmodel_predict(m, sh, c);
        CHECK_NEAR(pl.pred[k], want, 1e-4 * (fabs(want) + 1));
    }
    as_plan_free(&pl);
    as_costmodel_free(m);
}

/* ---- as_plan_group: a plan's tables by shard ---------------------------------------------- */

TEST(plan_group_by_shard)
{
    /* 7 tables on K = 4: shard 0 holds positions 2, 4; shard 1 none; shard 2 holds 0, 3, 6
     * (in plan order); shard 3 none; positions 1 and 5 are unplaced (-1) */
    const int64_t assign[7] = { 2, -1, 0, 2, 0, -1, 2 };
    int64_t start[5], order[7] = { -7, -7, -7, -7, -7, -7, -7 };
    as_plan_group(start, order, assign, 7, 4);
    const int64_t want_start[5] = { 0, 2, 2, 5, 5 }, want_order[5] = { 2, 4, 0, 3, 6 };
    for (int k = 0; k <= 4; k++) CHECK_EQ_I64(start[k], want_start[k]);
    for (int q = 0; q < 5; q++) CHECK_EQ_I64(order[q], want_order[q]);
    CHECK_EQ_I64(order[5], -7);     /* only the placed tables are written */
    CHECK_EQ_I64(order[6], -7);
    /* counts only: the same start */
    int64_t s2[5];
    as_plan_group(s2, NULL, assign, 7, 4);
    for (int k = 0; k <= 4; k++) CHECK_EQ_I64(s2[k], want_start[k]);
    /* no table placed, and no table at all: every shard empty */
    const int64_t none[3] = { -1, -1, -1 };
    int64_t s3[3] = { 9, 9, 9 };
    as_plan_group(s3, order, none, 3, 2);
    CHECK(s3[0] == 0 && s3[1] == 0 && s3[2] == 0);
    as_plan_group(s3, order, NULL, 0, 2);
    CHECK(s3[0] == 0 && s3[1] == 0 && s3[2] == 0);
    /* one shard: every placed table in plan order */
    const int64_t one[4] = { 0, 0, -1, 0 };
    int64_t s4[2], o4[4];
    as_plan_group(s4, o4, one, 4, 1);
    CHECK(s4[0] == 0 && s4[1] == 3 && o4[0] == 0 && o4[1] == 1 && o4[2] == 3);
    /* the plan-record form gives the same */
    as_planrec pr = { .shards = 4, .n = 7, .assign = (int64_t *)assign };
    int64_t s5[5], o5[7];
    as_planrec_group(&pr, s5, o5);
    for (int k = 0; k <= 4; k++) CHECK_EQ_I64(s5[k], want_start[k]);
    for (int q = 0; q < 5; q++) CHECK_EQ_I64(o5[q], want_order[q]);
}

/* the text summary lists each shard's table ids from the same grouping */
TEST(plan_text_shard_ids)
{
    as_features f[5];
    const as_features *t[5];
    for (int i = 0; i < 5; i++) {
        memset(&f[i], 0, sizeof f[i]);
        f[i].id = 10 + i;
        f[i].rows = 100;
        f[i].dim = 4;
        t[i] = &f[i];
    }
    int64_t assign[5] = { 1, -1, 1, 0, 1 }, count[3] = { 1, 3, 0 };
    uint64_t mem[3] = { 800, 2400, 0 };
    double key[3] = { 0, 0, 0 };
    int64_t inf[1] = { 11 };
    as_plan p = { .n = 5, .shards = 3, .assign = assign, .mem = mem, .count = count, .key = key,
                  .feasible = 0, .ninfeasible = 1, .infeasible = inf };
    as_taskrec task = { .id = 7 };
    as_plan_meta m = { .task = &task, .alg = AS_ALG_SIZE };
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    as_plan_print_text(mf, &p, &m, t);
    fclose(mf);
    /* shard 0: table 13; shard 1: 10, 12, 14 in plan order; shard 2: none */
    CHECK(strstr(buf, "  13\n") != NULL);
    CHECK(strstr(buf, "  10,12,14\n") != NULL);
    CHECK(strstr(buf, "  -\n") != NULL);
    free(buf);
}

/* ---- as-plan's stage (lib/plan/planrun.h) ------------------------------------------------------ */
#include "planrun.h"
#include "tasks.h"

TEST(planrun_alg_list)
{
    int want[AS_ALG_COUNT], n;
    char err[256];
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "size-greedy,random,size-greedy", 0, 0, err, sizeof err), 0);
    CHECK_EQ_I64(n, 2);
    CHECK(want[AS_ALG_RANDOM] && want[AS_ALG_SIZE] && !want[AS_ALG_DIM] && !want[AS_ALG_COST]);
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all", 0, 0, err, sizeof err), 0);
    CHECK_EQ_I64(n, 5);   /* the five heuristics: no model, no policy */
    CHECK(!want[AS_ALG_COST] && !want[AS_ALG_AUTOSHARD]);
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all", 1, 0, err, sizeof err), 0);
    CHECK_EQ_I64(n, 6);
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all", 1, 1, err, sizeof err), 0);
    CHECK_EQ_I64(n, 7);
    CHECK(!want[AS_ALG_TORCHREC]);   /* the baseline is named, not part of all */
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "all,torchrec", 0, 0, err, sizeof err), 0);
    CHECK_EQ_I64(n, 6);
    CHECK(want[AS_ALG_TORCHREC]);
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "random,cost-greedy", 0, 1, err, sizeof err), -1);
    CHECK_STR(err, "--alg cost-greedy needs --model FILE");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "autoshard", 1, 0, err, sizeof err), -1);
    CHECK_STR(err, "--alg autoshard needs --policy FILE");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, "random,greedy", 0, 0, err, sizeof err), -1);
    CHECK_STR(err, "--alg: unknown algorithm 'greedy'");
    CHECK_EQ_I64(as_plan_alg_list(want, &n, ",,", 0, 0, err, sizeof err), -1);
    CHECK_STR(err, "--alg: no algorithm given");
}

TEST(planrun_infeasible_msg)
{
    int64_t ids[40];
    as_plan p;
    memset(&p, 0, sizeof p);
    p.infeasible = ids;
    char m[1024];
    ids[0] = 7;
    p.ninfeasible = 1;
    as_plan_infeasible_msg(m, sizeof m, 3, AS_ALG_SIZE, &p, 100);
    CHECK_STR(m, "task 3: size-greedy: plan infeasible: 1 table fit on no shard under the 100-byte cap (7)");
    ids[1] = 9;
    p.ninfeasible = 2;
    as_plan_infeasible_msg(m, sizeof m, 3, AS_ALG_DIM, &p, 100);
    CHECK_STR(m, "task 3: dim-greedy: plan infeasible: 2 tables fit on no shard under the 100-byte cap (7, 9)");
    /* 40 ten-digit ids: the list holds 10 + 12 (k - 1) characters after k ids and goes on
       while that is below 256 - 24 = 232, so 20 ids (238 characters), then ", ..." */
    for (int i = 0; i < 40; i++) ids[i] = 1000000000 + i;
    p.ninfeasible = 40;
    as_plan_infeasible_msg(m, sizeof m, 0, AS_ALG_RANDOM, &p, 5);
    char want[1024], *o = want;
    o += sprintf(o, "task 0: random: plan infeasible: 40 tables fit on no shard under the 5-byte cap (");
    for (int i = 0; i < 20; i++) o += sprintf(o, "%s%d", i ? ", " : "", 1000000000 + i);
    sprintf(o, ", ...)");
    CHECK_STR(m, want);
}

static as_features PF(int64_t id, int64_t dim)
{
    as_features f = F(id, dim, 100, 1);
    f.batch = 8;
    f.lookups = 8;
    f.bins[0] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}

static void put_task(as_writer *w, int64_t id, int test, int64_t *tables, int64_t n, int64_t K)
{
    as_task_cfg c;
    memset(&c, 0, sizeof c);
    c.unseen_ratio = -1;
    as_task t = { id, test, tables, n, K, 0, 0 };
    as_task_write(w, &c, &t);
}

typedef struct { as_planrec p[8]; int n; } plans_read;
static int on_plan(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    (void)r;
    plans_read *x = ctx;
    if (!as_rec_is(rec, "plan") || x->n == 8) return 0;
    return as_planrec_read(&rec->obj, &x->p[x->n++], 0, err, errlen);
}

TEST(planrun_read_and_plan)
{
    char in_path[512], out_path[512], err[1024];
    snprintf(in_path, sizeof in_path, "%s/planrun-in.ast", ut_tmpdir());
    snprintf(out_path, sizeof out_path, "%s/planrun-out.ast", ut_tmpdir());
    as_writer *w = as_writer_open(in_path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features f1 = PF(1, 4), f2 = PF(2, 8), f3 = PF(3, 2);   /* fp16 bytes 800, 1600, 400 */
    as_features_write(w, &f1);
    as_features_write(w, &f2);
    int64_t t5[] = { 1, 2, 3 }, t6[] = { 1, 3 }, t7[] = { 3, 9 };
    put_task(w, 5, 0, t5, 3, 2);
    put_task(w, 6, 1, t6, 2, 1);
    as_features_write(w, &f3);
    as_features_write(w, &f1);   /* a repeat: kept once */
    put_task(w, 7, 1, t7, 2, 1);
    as_writer_close(w);

    char *files[] = { in_path };
    as_plan_input in;
    CHECK_EQ_I64(as_plan_input_read(&in, files, 1, "train", NULL, err, sizeof err), 0);
    CHECK_EQ_I64(in.ntasks, 1);
    CHECK_EQ_I64(in.tasks[0].id, 5);
    CHECK_EQ_I64(in.ft.n, 3);

    /* size-greedy and dim-greedy both order 2, 1, 3 (keys 800, 400, 200 and 8, 4, 2): table 2
       on shard 0 (both empty: the lower shard), table 1 on shard 1 (key sums 800 vs 0),
       table 3 on shard 1 (400 < 800) */
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.want[AS_ALG_SIZE] = c.want[AS_ALG_DIM] = 1;
    c.out = AS_PLAN_OUT_STREAM;
    c.w = as_writer_open(out_path, 0, 0);
    as_writer_header(c.w, "test", 0, NULL);
    as_plan_run_stats st;
    CHECK_EQ_I64(as_plan_run(&st, &c, &in, NULL, err, sizeof err), 0);
    /* a cap of 1000 bytes: table 2 (1600) fits nowhere, table 1 goes to shard 0, table 3 to
       shard 1 (800 + 400 > 1000 on shard 0) */
    c.cap_given = 1;
    c.mem_cap = 1000;
    as_plan_run_stats st2;
    CHECK_EQ_I64(as_plan_run(&st2, &c, &in, NULL, err, sizeof err), 0);
    as_writer_close(c.w);
    CHECK_EQ_I64(st.nplans, 2);
    CHECK_EQ_I64(st.ninfeasible, 0);
    CHECK_EQ_I64(st2.nplans, 2);
    CHECK_EQ_I64(st2.ninfeasible, 2);

    plans_read pr = { .n = 0 };
    char *outs[] = { out_path };
    CHECK_EQ_I64(as_read_records(outs, 1, on_plan, &pr, err, sizeof err), 0);
    CHECK_EQ_I64(pr.n, 4);
    const int64_t want_free[3] = { 1, 0, 1 }, want_cap[3] = { 0, -1, 1 };
    for (int i = 0; i < pr.n; i++) {
        CHECK_EQ_I64(pr.p[i].task, 5);
        CHECK_EQ_I64(pr.p[i].shards, 2);
        CHECK_EQ_I64(pr.p[i].n, 3);
        for (int j = 0; j < 3 && pr.p[i].n == 3; j++) {
            CHECK_EQ_I64(pr.p[i].tables[j], t5[j]);
            CHECK_EQ_I64(pr.p[i].assign[j], i < 2 ? want_free[j] : want_cap[j]);
        }
        CHECK_EQ_I64(pr.p[i].unplaced, i < 2 ? 0 : 1);
        as_planrec_free(&pr.p[i]);
    }

    /* errors: a world size that does not divide the shards, a table without features */
    c.cap_given = 0;
    c.world = 3;
    c.out = AS_PLAN_OUT_TEXT;
    c.w = NULL;
    c.text = tmpfile();
    CHECK_EQ_I64(as_plan_run(&st, &c, &in, NULL, err, sizeof err), -1);
    CHECK_STR(err, "task 5: --world-size 3 is not a multiple of its 2 shards");
    CHECK_EQ_I64(st.nplans, 0);
    as_plan_input_free(&in);

    CHECK_EQ_I64(as_plan_input_read(&in, files, 1, "test", NULL, err, sizeof err), 0);
    CHECK_EQ_I64(in.ntasks, 2);
    c.world = 0;
    CHECK_EQ_I64(as_plan_run(&st, &c, &in, NULL, err, sizeof err), -1);
    CHECK_STR(err, "task 7: table 9 has no features record in the input");
    CHECK_EQ_I64(st.nplans, 2);   /* task 6's two plans came first */
    CHECK(ftell(c.text) > 0);
    fclose(c.text);
    as_plan_input_free(&in);
}

/* the free functions accept NULL, as their headers say */
#include "bench.h"
#include "benchrun.h"
#include "costdata.h"
#include "featindex.h"
TEST(frees_accept_null)
{
    as_plan_free(NULL);
    as_bpool_free(NULL);
    as_binput_free(NULL);
    as_costdata_free(NULL);
    as_featidx_free(NULL);
    CHECK(1);   /* reached: none of them dereferenced NULL */
}
