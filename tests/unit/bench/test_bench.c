/* test_bench.c - the micro-benchmark's session on the CPU (lib/bench/bench.c): the data a shard is
 * measured on, workspace reuse across shards, errors, the measuring loop's figures.
 * Dimension letters: B batch, D dim, E rows, T tables. */
#include "bench.h"
#include "benchcalib.h"
#include "benchnoise.h"
#include "common.h"
#include "ebgen.h"
#include "ebopt.h"
#include "half.h"
#include "embbag.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* an in-memory pool: table ids 10, 11, ... (n tables, batch B), dims and rows cycling
 * through the lists, bags of 0..lmax lookups, ~30 % of them on row 0 (runs of all lengths) */
static void mk_pool(as_bpool *p, int n, int64_t B, const int64_t *dims, const int64_t *rows, int nd, int lmax,
                    uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->t = calloc((size_t)n, sizeof *p->t);
    p->n = p->cap = n;
    p->maxid = 10 + n - 1;
    p->index = calloc((size_t)p->maxid + 1, sizeof *p->index);
    for (int i = 0; i < n; i++) {
        as_btable *t = &p->t[i];
        t->id = 10 + i;
        t->rows = rows[i % nd];
        t->dim = dims[i % nd];
        t->batch = B;
        t->offsets = malloc(sizeof(int64_t) * (size_t)(B + 1));
        t->offsets[0] = 0;
        for (int64_t b = 0; b < B; b++) t->offsets[b + 1] = t->offsets[b] + (int64_t)(as_splitmix64(&seed) % (uint64_t)(lmax + 1));
        t->lookups = t->offsets[B];
        t->indices = malloc(sizeof(int32_t) * (size_t)(t->lookups + 1));
        for (int64_t k = 0; k < t->lookups; k++)
            t->indices[k] = as_splitmix64(&seed) % 10 < 3 ? 0 : (int32_t)(as_splitmix64(&seed) % (uint64_t)t->rows);
        p->index[t->id] = i + 1;
    }
}

static as_bench_cfg cpu_cfg(void)
{
    as_bench_cfg c;
    memset(&c, 0, sizeof c);
    c.warmup = 2;
    c.runs = 3;
    c.trim = 1;
    c.lr = 0.05f;
    c.seed = 7;
    c.threads = 2;
    c.flush_bytes = 1 << 20;
    return c;
}

/* the data the session measured, recomputed from scratch: the shard assembled by ebgen.c,
 * warm-up + timed iterations of the naive references. Every table's weights (wherever the
 * session's layout puts them: a group shares one buffer) and out must equal bit for bit. */
static void check_member(as_bench_session *S, int j, const as_bench_cfg *c, const as_bpool *p, const int64_t *ids,
                         int T, const char *what)
{
    as_eb_shard s;
    const uint16_t *W;
    const float *grad, *out;
    char err[256] = "";
    int rc = j < 0 ? as_bench_session_last(S, &s, &W, &grad, &out, err, sizeof err)
                   : as_bench_session_group_data(S, j, &s, &W, &grad, &out, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: %s\n", what, err);
    CHECK(rc == 0);
    if (rc) return;
    const as_eb_table *tb[16];
    as_eb_table v[16];
    for (int t = 0; t < T; t++) {
        const as_btable *bt = as_bpool_get(p, ids[t]);
        as_eb_table x = { bt->id, bt->rows, bt->batch, bt->dim, bt->lookups, bt->offsets, bt->indices };
        v[t] = x;
        tb[t] = &v[t];
    }
    int64_t rows[16], w_off[17], n = 0;
    int32_t dims[16], d_off[17];
    int64_t wn = as_ebg_layout(tb, T, rows, dims, w_off, d_off), B = tb[0]->batch;
    for (int t = 0; t < T; t++) n += tb[t]->lookups;
    int64_t *off = malloc(sizeof(int64_t) * (size_t)(T * B + 1));
    int32_t *ind = malloc(sizeof(int32_t) * (size_t)(n + 1));
    as_ebg_gather(off, ind, tb, T, B, 1);
    as_eb_shard r = { T, B, rows, dims, w_off, d_off, off, ind };
    CHECK_EQ_I64(s.T, T);
    CHECK_EQ_I64(s.B, B);
    CHECK(as_eb_validate(&s, err, sizeof err) == 0);
    for (int t = 0; t < T; t++) {
        CHECK_EQ_I64(s.rows[t], rows[t]);
        CHECK_EQ_I64(s.dims[t], dims[t]);
        CHECK_EQ_I64(s.w_off[t] % AS_EBG_W_ALIGN, 0);   /* every table on a cache line */
    }
    CHECK(memcmp(s.d_off, d_off, sizeof(int32_t) * (size_t)(T + 1)) == 0);
    CHECK(memcmp(s.offsets, off, sizeof(int64_t) * (size_t)(T * B + 1)) == 0);
    CHECK(n == 0 || memcmp(s.indices, ind, sizeof(int32_t) * (size_t)n) == 0);
    uint16_t *Wr = malloc(2 * (size_t)(wn + 1));
    float *gr = malloc(4 * (size_t)(B * d_off[T] + 1)), *outr = malloc(4 * (size_t)(B * d_off[T] + 1));
    as_ebg_fill_weights(Wr, &r, ids, c->seed, 1);
    as_ebg_fill_grad(gr, &r, ids, c->seed, 1);
    CHECK(memcmp(grad, gr, 4 * (size_t)(B * d_off[T])) == 0);
    for (int i = 0; i < c->warmup + c->runs; i++) {
        as_eb_forward_ref(outr, Wr, &r);
        as_eb_backward_sgd_ref(Wr, gr, &r, c->lr);
    }
    int64_t bw = 0, bo = 0;
    for (int t = 0; t < T; t++)
        for (int64_t e = 0; e < rows[t] * dims[t]; e++) bw += W[s.w_off[t] + e] != Wr[w_off[t] + e];
    for (int64_t e = 0; e < B * d_off[T]; e++) bo += memcmp(&out[e], &outr[e], 4) != 0;
    if (bw || bo) fprintf(stderr, "  %s: %lld weights, %lld outputs differ\n", what, (long long)bw, (long long)bo);
    CHECK_EQ_I64(bw, 0);
    CHECK_EQ_I64(bo, 0);
    free(off); free(ind); free(Wr); free(gr); free(outr);
}

static void check_last(as_bench_session *S, const as_bench_cfg *c, const as_bpool *p, const int64_t *ids, int T,
                       const char *what)
{
    check_member(S, -1, c, p, ids, T, what);
}

TEST(bench_session_measures_the_generated_shard)
{
    as_bpool p;
    int64_t dims[4] = {16, 5, 32, 1}, rows[4] = {500, 40, 3000, 1};
    mk_pool(&p, 8, 96, dims, rows, 4, 9, 1);
    as_bench_cfg c = cpu_cfg();
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    int64_t ids[3] = {12, 11, 17};
    as_bench_result r;
    as_bench_session_run(S, ids, 3, &r);
    if (!r.ok) fprintf(stderr, "  %s\n", r.error);
    CHECK(r.ok);
    CHECK(r.cost_ms > 0);
    CHECK(r.busy_ms > 0);
    CHECK(r.wall_ms >= r.busy_ms);
    /* the busy time is every warm-up and timed iteration: at least the timed runs' sum */
    CHECK(r.busy_ms >= 3 * r.min_ms);
    CHECK_EQ_I64(r.lookups, p.t[2].lookups + p.t[1].lookups + p.t[7].lookups);
    CHECK_EQ_I64(r.sum_dim, 32 + 5 + 1);
    /* bytes: as the session holds the shard: each table's weights on a cache line (3000 x
       32, 40 x 5 -> 224 and 1 x 1 -> 32 halves), output and gradient [96, 38] fp32, offsets
       [3 x 96 + 1] and indices, each from a cache line, and the sort buffers for its largest
       table */
    int64_t maxn = p.t[2].lookups;
    if (p.t[1].lookups > maxn) maxn = p.t[1].lookups;
    if (p.t[7].lookups > maxn) maxn = p.t[7].lookups;
    const int64_t want = (96000 + 224 + 32) * 2 + 2 * 14592 + 2368 + (r.lookups * 4 + 63) / 64 * 64 +
                         (int64_t)as_eb_cpu_ws_size(maxn, 32);
    CHECK_EQ_I64(r.bytes, want);
    as_bench_shardref alone = { ids, 3, 0 };
    CHECK_EQ_I64(as_bench_session_need(S, &alone, 1), want);
    check_last(S, &c, &p, ids, 3, "first shard");
    as_bench_session_free(S);
    as_bpool_free(&p);
}

TEST(bench_session_reuses_and_grows_its_workspace)
{
    as_bpool p;
    int64_t dims[3] = {8, 24, 3}, rows[3] = {200, 1000, 50};
    mk_pool(&p, 9, 64, dims, rows, 3, 12, 2);
    as_bench_cfg c = cpu_cfg();
    c.threads = 3;   /* more threads than cores: results must not depend on it */
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    as_bench_result r;
    as_bench_session_info i0, i1, i2, i3;
    int64_t big[5] = {10, 11, 13, 14, 16}, small[1] = {12}, other[4] = {18, 15, 17, 11};
    as_bench_session_run(S, big, 5, &r);
    CHECK(r.ok);
    check_last(S, &c, &p, big, 5, "big");
    as_bench_session_info_get(S, &i0);
    CHECK(i0.grows > 0);
    CHECK(i0.bytes > 0);
    /* a smaller shard, then one no larger than the first: no new allocation, same results as
     * made from scratch (nothing left over from the shard before) */
    as_bench_session_run(S, small, 1, &r);
    CHECK(r.ok);
    check_last(S, &c, &p, small, 1, "small after big");
    as_bench_session_info_get(S, &i1);
    CHECK_EQ_I64(i1.grows, i0.grows);
    as_bench_session_run(S, other, 4, &r);
    CHECK(r.ok);
    check_last(S, &c, &p, other, 4, "other");
    as_bench_session_info_get(S, &i2);
    CHECK_EQ_I64(i2.grows, i0.grows);
    CHECK_EQ_I64(i2.shards, 3);
    /* the whole pool: larger than anything before, so it grows */
    int64_t all[9] = {18, 17, 16, 15, 14, 13, 12, 11, 10};
    as_bench_session_run(S, all, 9, &r);
    CHECK(r.ok);
    check_last(S, &c, &p, all, 9, "all");
    as_bench_session_info_get(S, &i3);
    CHECK(i3.grows > i2.grows);
    CHECK(i3.bytes > i2.bytes);
    /* the same shard twice gives the same data */
    as_bench_session_run(S, small, 1, &r);
    check_last(S, &c, &p, small, 1, "small again");
    as_bench_session_free(S);
    as_bpool_free(&p);
}

TEST(bench_session_errors)
{
    as_bpool p;
    int64_t dims[1] = {4}, rows[1] = {30};
    mk_pool(&p, 3, 16, dims, rows, 1, 4, 3);
    p.t[1].indices[0] = 30;             /* table 11: an out-of-range index */
    p.t[2].batch = 8;                   /* table 12: another batch size */
    as_bench_cfg c = cpu_cfg();
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    as_bench_result r;
    int64_t bad[2] = {10, 11};
    as_bench_session_run(S, bad, 2, &r);
    CHECK(!r.ok);
    CHECK(strstr(r.error, "table 11") != NULL && strstr(r.error, "out-of-range") != NULL);
    CHECK(r.wall_ms >= 0);
    CHECK_EQ_I64((int64_t)r.busy_ms, 0);
    int64_t mixed[2] = {10, 12};
    as_bench_session_run(S, mixed, 2, &r);
    CHECK(!r.ok);
    CHECK(strstr(r.error, "different batch sizes") != NULL);
    int64_t missing[1] = {99};
    as_bench_session_run(S, missing, 1, &r);
    CHECK(!r.ok);
    CHECK(strstr(r.error, "table 99 is not in the table data") != NULL);
    as_bench_session_run(S, missing, 0, &r);
    CHECK(!r.ok);
    CHECK(strstr(r.error, "empty shard") != NULL);
    const uint16_t *W;
    const float *g, *o;
    as_eb_shard s;
    CHECK(as_bench_session_last(S, &s, &W, &g, &o, err, sizeof err) == -1);
    /* a memory budget too small for the shard */
    as_bench_session_free(S);
    c.max_bytes = 1000;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    int64_t one[1] = {10};
    as_bench_session_run(S, one, 1, &r);
    CHECK(!r.ok);
    CHECK(strncmp(r.error, "does not fit", 12) == 0);
    /* the good table still measures once the budget allows */
    as_bench_session_free(S);
    c.max_bytes = 0;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    as_bench_session_run(S, one, 1, &r);
    CHECK(r.ok);
    check_last(S, &c, &p, one, 1, "good table");
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* one session measures a shard again (its workspace kept); a session of one thread too */
TEST(bench_session_measures_again)
{
    as_bpool p;
    int64_t dims[2] = {8, 16}, rows[2] = {100, 70};
    mk_pool(&p, 4, 32, dims, rows, 2, 5, 4);
    as_bench_cfg c = cpu_cfg();
    as_bench_result r1, r2;
    int64_t ids[2] = {13, 10};
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    as_bench_session_run(S, ids, 2, &r1);
    CHECK(r1.ok);
    as_bench_session_run(S, ids, 2, &r2);
    CHECK(r2.ok);
    CHECK_EQ_I64(r1.lookups, r2.lookups);
    as_bench_session_free(S);
    c.threads = 1;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    as_bench_session_run(S, ids, 2, &r2);
    CHECK(r2.ok);
    CHECK_EQ_I64(r1.lookups, r2.lookups);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

TEST(bench_tally_and_summary)
{
    as_bench_tally t;
    memset(&t, 0, sizeof t);
    as_bench_result r;
    memset(&r, 0, sizeof r);
    r.ok = 1;
    r.busy_ms = 300;
    as_bench_tally_add(&t, &r);
    r.busy_ms = 200;
    as_bench_tally_add(&t, &r);
    r.ok = 0;
    r.busy_ms = 0;
    as_bench_tally_add(&t, &r);
    CHECK_EQ_I64(t.shards, 3);
    CHECK_EQ_I64(t.ok, 2);
    CHECK_NEAR(as_bench_busy_fraction(&t, 2.0), 0.25, 1e-12);
    CHECK_NEAR(as_bench_shards_per_s(&t, 2.0), 1.5, 1e-12);
    CHECK_NEAR(as_bench_busy_fraction(&t, 0), 0, 0);
    char line[256];
    as_bench_summary(line, sizeof line, &t, 2.0);
    CHECK(strstr(line, "3 shards in 2.00 s") != NULL);
    CHECK(strstr(line, "1.50 shards/s") != NULL);
    CHECK(strstr(line, "busy 25.0 %") != NULL);
    CHECK(strstr(line, "kernels 0.50 s") != NULL);
    CHECK(strstr(line, "1 not measured") != NULL);
    /* a real loop on the CPU: busy <= wall, and the tally is the sum of the shards' */
    as_bpool p;
    int64_t dims[1] = {16}, rows[1] = {400};
    mk_pool(&p, 3, 128, dims, rows, 1, 6, 5);
    as_bench_cfg c = cpu_cfg();
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    as_bench_tally_free(&t);
    memset(&t, 0, sizeof t);
    double sum = 0, t0 = as_now();
    for (int64_t id = 10; id <= 12; id++) {
        as_bench_session_run(S, &id, 1, &r);
        CHECK(r.ok);
        sum += r.busy_ms;
        as_bench_tally_add(&t, &r);
    }
    double wall = as_now() - t0;
    CHECK_NEAR(t.busy_ms, sum, 1e-9);
    double f = as_bench_busy_fraction(&t, wall);
    CHECK(f > 0 && f <= 1);
    as_bench_tally_free(&t);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* dims whose sum passes int32 (the layout's type): refused, never wrapped (issue 11) */
TEST(bench_session_dims_sum_overflow)
{
    as_bpool p;
    int64_t dims[1] = { ((int64_t)1 << 30) + 5 }, rows[1] = { 1 };
    mk_pool(&p, 2, 1, dims, rows, 1, 0, 5);
    as_bench_cfg c = cpu_cfg();
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    as_bench_result r;
    int64_t both[2] = { 10, 11 };
    as_bench_session_run(S, both, 2, &r);
    CHECK(!r.ok);
    CHECK(strstr(r.error, "the dims of its tables sum to 2147483658") != NULL);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* ---- noise-aware measurement (issue 12) ---------------------------------------------- */

TEST(bench_fake_timer_parse_and_factor)
{
    as_bench_fake f;
    char err[256] = "";
    CHECK(as_bench_fake_parse("always,shards=0.25,factor=4,calib=noisy", &f, err, sizeof err) == 0);
    CHECK(f.on && f.mode == AS_FAKE_ALWAYS && f.shards == 0.25 && f.factor == 4 && f.calib_noisy);
    CHECK(as_bench_fake_parse("first", &f, err, sizeof err) == 0);
    CHECK(f.mode == AS_FAKE_FIRST && f.shards == 1 && f.factor == 10 && !f.calib_noisy);
    CHECK(as_bench_fake_parse("sometimes", &f, err, sizeof err) == -1);
    CHECK(strstr(err, "'sometimes' is not") != NULL);
    CHECK(as_bench_fake_parse("first,shards=2", &f, err, sizeof err) == -1);
    CHECK(as_bench_fake_parse("factor=1", &f, err, sizeof err) == -1);
    CHECK(as_bench_fake_parse("factor=x", &f, err, sizeof err) == -1);

    int64_t a[3] = { 4, 9, 2 }, b[3] = { 2, 9, 4 };
    as_bench_fake q = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 }, fi = { 1, AS_FAKE_FIRST, 1, 10, 0, 0, { 0 }, 0, 0 }, al = { 1, AS_FAKE_ALWAYS, 1, 10, 0, 0, { 0 }, 0, 0 };
    for (int r = 0; r < 10; r++) {
        double m = as_bench_fake_factor(&q, a, 3, 0, r);
        CHECK(m >= 1 && m < 1.01);
        /* first: attempt 0's odd runs are 10 to 15 times slower, its even runs and every
           run of attempt 1 quiet */
        m = as_bench_fake_factor(&fi, a, 3, 0, r);
        CHECK(r % 2 ? m >= 10 && m < 15 : m >= 1 && m < 1.01);
        m = as_bench_fake_factor(&fi, a, 3, 1, r);
        CHECK(m >= 1 && m < 1.01);
        m = as_bench_fake_factor(&al, a, 3, 2, r);
        CHECK(r % 2 ? m >= 10 && m < 15 : m >= 1 && m < 1.01);
        /* deterministic; seeded by the tables in order, the attempt and the run */
        CHECK(as_bench_fake_factor(&al, a, 3, 2, r) == m);
    }
    CHECK(as_bench_fake_factor(&al, a, 3, 0, 1) != as_bench_fake_factor(&al, b, 3, 0, 1));
    CHECK(as_bench_fake_factor(&al, a, 3, 0, 1) != as_bench_fake_factor(&al, a, 3, 1, 1));
    CHECK(as_bench_fake_factor(&al, a, 3, 0, 1) != as_bench_fake_factor(&al, a, 3, 0, 3));
    CHECK(as_bench_fake_factor(NULL, a, 3, 0, 1) == 1);
    /* shards=P hits about a fraction P of the shards; 0 none */
    as_bench_fake half = al, none = al;
    half.shards = 0.5;
    none.shards = 0;
    int hit = 0;
    for (int64_t id = 0; id < 400; id++) {
        hit += as_bench_fake_factor(&half, &id, 1, 0, 1) > 2;
        CHECK(as_bench_fake_factor(&none, &id, 1, 0, 1) < 1.01);
    }
    CHECK(hit > 150 && hit < 250);
}

/* the session under the fake timer: the figures are the fake clock's */
TEST(bench_fake_timer_in_the_session)
{
    as_bpool p;
    int64_t dims[2] = { 8, 16 }, rows[2] = { 100, 70 };
    mk_pool(&p, 4, 32, dims, rows, 2, 5, 4);
    as_bench_cfg c = cpu_cfg();
    c.runs = 5;
    c.trim = 1;
    as_bench_fake q = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 }, al = { 1, AS_FAKE_ALWAYS, 1, 10, 0, 0, { 0 }, 0, 0 };
    c.fake = &q;
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    int64_t ids[2] = { 11, 13 };
    as_bench_result r;
    as_bench_session_run(S, ids, 2, &r);
    CHECK(r.ok);
    CHECK_EQ_I64(r.attempts, 1);
    CHECK(!r.noisy);
    const double base = 0.1 + 1e-5 * (double)r.lookups;
    CHECK(r.cost_ms >= base && r.cost_ms < base * 1.01);
    CHECK(r.min_ms >= base && r.max_ms < base * 1.01);
    CHECK(r.spread >= 0 && r.spread < 0.01);
    /* forward a third, backward two thirds */
    CHECK_NEAR(r.fwd_ms / r.cost_ms, 1.0 / 3.0, 1e-9);
    /* the kernels still ran: the data is the real measurement's */
    check_last(S, &c, &p, ids, 2, "fake timer");
    as_bench_session_free(S);
    c.fake = &al;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    as_bench_session_run_attempt(S, ids, 2, 1, &r);
    CHECK(r.ok);
    /* runs 0..4 sorted: 3 quiet about base, 2 slow (x10..15); kept: 2 quiet and 1 slow */
    CHECK(r.spread > 0.9 && r.spread < 1.5);
    CHECK(r.max_ms >= 10 * base);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

typedef struct {
    as_bench_session *S;
    int64_t calls, bad;
    int64_t rcalls, rk, rm;     /* re-measuring progress: calls, the last k and m */
    int rround;
} order_ctx;

/* called after each re-measurement: rounds in order, k counting 1..m within a round, m
 * fixed for the round, and the session has measured the first attempts plus every
 * re-measurement so far */
static void retried_cb(void *ctx, int round, int64_t k, int64_t m)
{
    order_ctx *o = ctx;
    as_bench_session_info si;
    as_bench_session_info_get(o->S, &si);
    if (k == 1) {
        if (round <= o->rround || (o->rround && o->rk != o->rm)) o->bad++;   /* the previous round ended at m */
        o->rround = round;
        o->rm = m;
    } else if (round != o->rround || k != o->rk + 1 || m != o->rm) o->bad++;
    if (k < 1 || k > m) o->bad++;
    o->rk = k;
    o->rcalls++;
    if (si.shards != o->calls + o->rcalls) o->bad++;
}

/* called after each job's first attempt: the session has measured exactly i + 1 shards so
 * far (no re-measurement before the window's first attempts are done) */
static void order_cb(void *ctx, int64_t i)
{
    order_ctx *o = ctx;
    as_bench_session_info si;
    as_bench_session_info_get(o->S, &si);
    if (i != o->calls || si.shards != i + 1) o->bad++;
    o->calls++;
}

/* the noise tests' set-up: a pool of 8 tables (ids 10..17), shards of up to 3 of them
 * (ids[i][k] = 10 + (i + 3k) mod 8), and a one-thread CPU config of `runs` timed runs,
 * trim 1, no warm-up, on fake timer f */
static void noise_pool(as_bpool *p)
{
    int64_t dims[2] = { 8, 16 }, rows[2] = { 100, 70 };
    mk_pool(p, 8, 32, dims, rows, 2, 5, 9);
}

static void noise_ids(int64_t ids[][3], int n)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) ids[i][k] = 10 + (i + 3 * k) % 8;
}

static as_bench_cfg noise_cfg(int runs, const as_bench_fake *f)
{
    as_bench_cfg c = cpu_cfg();
    c.runs = runs;
    c.trim = 1;
    c.warmup = 0;
    c.threads = 1;
    c.fake = f;
    return c;
}

static int64_t run_noise(const as_bench_fake *f, double threshold, int retries, as_noise_job *jobs, int64_t n,
                         int64_t ids[][3], const as_bpool *p, int64_t *measured, int64_t *bad)
{
    as_bench_cfg c = noise_cfg(6, f);
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, p, err, sizeof err);
    for (int64_t i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].ids = ids[i];
        jobs[i].n = 1 + i % 3;
    }
    as_noise_cfg nc = { threshold, retries, retried_cb, 0, NULL, 0, NULL, 0, NULL, NULL };
    order_ctx o = { .S = S };
    int64_t again = as_noise_measure(S, jobs, n, &nc, order_cb, &o, NULL);
    if (o.rcalls != again || (o.rround && o.rk != o.rm)) o.bad++;
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    *measured = si.shards;
    *bad = o.bad + (o.calls != n);
    as_bench_session_free(S);
    return again;
}

TEST(bench_noise_rounds)
{
    as_bpool p;
    noise_pool(&p);
    enum { N = 8 };
    int64_t ids[N][3];
    noise_ids(ids, N);
    as_noise_job jobs[N];
    int64_t measured, bad;
    as_bench_fake q = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 }, fi = { 1, AS_FAKE_FIRST, 1, 10, 0, 0, { 0 }, 0, 0 }, al = { 1, AS_FAKE_ALWAYS, 1, 10, 0, 0, { 0 }, 0, 0 };

    /* quiet: one attempt each, nothing noisy */
    CHECK_EQ_I64(run_noise(&q, 0.1, 2, jobs, N, ids, &p, &measured, &bad), 0);
    CHECK_EQ_I64(measured, N);
    CHECK_EQ_I64(bad, 0);
    for (int i = 0; i < N; i++) CHECK(jobs[i].r.ok && jobs[i].r.attempts == 1 && !jobs[i].r.noisy);

    /* noisy on the first attempt only: every shard measured again once, in a second round
       after all first attempts, and it keeps the quiet attempt's figures */
    CHECK_EQ_I64(run_noise(&fi, 0.1, 2, jobs, N, ids, &p, &measured, &bad), N);
    CHECK_EQ_I64(measured, 2 * N);
    CHECK_EQ_I64(bad, 0);
    for (int i = 0; i < N; i++) {
        const as_bench_result *r = &jobs[i].r;
        CHECK(r->ok && r->attempts == 2 && !r->noisy && r->spread < 0.01);
        const double base = 0.1 + 1e-5 * (double)r->lookups;
        CHECK(r->cost_ms >= base && r->cost_ms < 1.01 * base);
        CHECK(r->busy_ms > 0 && r->wall_ms > 0);
    }

    /* always noisy: retries + 1 attempts, flagged */
    CHECK_EQ_I64(run_noise(&al, 0.1, 2, jobs, N, ids, &p, &measured, &bad), 2 * N);
    CHECK_EQ_I64(measured, 3 * N);
    CHECK_EQ_I64(bad, 0);
    for (int i = 0; i < N; i++) CHECK(jobs[i].r.attempts == 3 && jobs[i].r.noisy && jobs[i].r.spread > 0.1);
    /* 5 retries: 6 attempts */
    run_noise(&al, 0.1, 5, jobs, N, ids, &p, &measured, &bad);
    for (int i = 0; i < N; i++) CHECK(jobs[i].r.attempts == 6 && jobs[i].r.noisy);

    /* retries 0: flagged, not re-measured; threshold 0: neither */
    CHECK_EQ_I64(run_noise(&al, 0.1, 0, jobs, N, ids, &p, &measured, &bad), 0);
    CHECK_EQ_I64(measured, N);
    for (int i = 0; i < N; i++) CHECK(jobs[i].r.attempts == 1 && jobs[i].r.noisy);
    CHECK_EQ_I64(run_noise(&al, 0, 2, jobs, N, ids, &p, &measured, &bad), 0);
    for (int i = 0; i < N; i++) CHECK(jobs[i].r.attempts == 1 && !jobs[i].r.noisy && jobs[i].r.spread > 0.1);
    /* a threshold above the noisy spread (about 1.1): nothing to re-measure */
    CHECK_EQ_I64(run_noise(&al, 5, 2, jobs, N, ids, &p, &measured, &bad), 0);

    /* half the shards hit, always: exactly those re-measured and flagged */
    as_bench_fake half = al;
    half.shards = 0.5;
    run_noise(&half, 0.1, 2, jobs, N, ids, &p, &measured, &bad);
    int64_t nhit = 0;
    for (int i = 0; i < N; i++) {
        int hit = as_bench_fake_factor(&half, jobs[i].ids, jobs[i].n, 0, 1) > 2;
        nhit += hit;
        CHECK(jobs[i].r.attempts == (hit ? 3 : 1) && jobs[i].r.noisy == hit);
    }
    CHECK_EQ_I64(measured, N + 2 * nhit);
    CHECK(nhit > 0 && nhit < N);

    /* a shard that cannot be measured, and one without a spread, are never re-measured */
    as_bench_cfg c = cpu_cfg();
    c.fake = &al;
    c.runs = 3;
    c.trim = 1;
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    int64_t missing = 99, one = 12;
    as_noise_job j2[2] = { { &missing, 1, { 0 }, 0 }, { &one, 1, { 0 }, 1 } };
    as_noise_cfg nc = { 0.1, 2, NULL, 0, NULL, 0, NULL, 0, NULL, NULL };
    double rs = 0;
    CHECK_EQ_I64(as_noise_measure(S, j2, 2, &nc, NULL, NULL, &rs), 0);
    CHECK(rs >= 0 && rs < 1);
    CHECK(!j2[0].r.ok && j2[0].r.attempts == 1 && !j2[0].r.noisy);
    CHECK(j2[1].r.ok && isnan(j2[1].r.spread) && j2[1].r.attempts == 1 && !j2[1].r.noisy);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

TEST(bench_noise_tally_summary_and_warning)
{
    as_bench_tally t;
    memset(&t, 0, sizeof t);
    as_bench_result r;
    memset(&r, 0, sizeof r);
    r.ok = 1;
    const double sp[4] = { 0.3, 0.01, 0.2, 0.05 };
    const int att[4] = { 3, 1, 3, 2 }, noisy[4] = { 1, 0, 1, 0 };
    for (int i = 0; i < 4; i++) {
        r.spread = sp[i];
        r.attempts = att[i];
        r.noisy = noisy[i];
        as_bench_tally_add(&t, &r);
    }
    /* one without a spread, one not measured: counted as shards, not in the noise figures */
    r.spread = NAN;
    r.attempts = 1;
    r.noisy = 0;
    as_bench_tally_add(&t, &r);
    r.ok = 0;
    r.spread = 0.5;
    as_bench_tally_add(&t, &r);
    CHECK_EQ_I64(t.shards, 6);
    CHECK_EQ_I64(t.nspread, 4);
    CHECK_EQ_I64(t.remeasured, 3);
    CHECK_EQ_I64(t.extra, 5);
    CHECK_EQ_I64(t.noisy, 2);
    /* median of {0.01, 0.05, 0.2, 0.3} */
    CHECK_NEAR(as_noise_median_spread(&t), 0.125, 1e-15);
    as_noise_cfg nc = { 0.1, 2, NULL, 0, NULL, 0, NULL, 0, NULL, NULL };
    char line[512];
    as_noise_summary(line, sizeof line, &t, &nc, -1);
    CHECK(strstr(line, "noise: 4 shards with a spread, median spread 12.5 %") != NULL);
    CHECK(strstr(line, "3 re-measured (5 extra attempts), 2 noisy (spread above 10.0 % after up to 2 re-measurements)") != NULL);
    /* 2 of 4 noisy: above 10 %, a warning */
    CHECK(as_noise_warning(line, sizeof line, &t, &nc) == 1);
    CHECK(strstr(line, "warning: 2 of 4 shards (50 %) are still noisy") != NULL);
    as_noise_summary(line, sizeof line, &t, &nc, 1.234);
    CHECK(strstr(line, "(5 extra attempts, 1.23 s), 2 noisy") != NULL);
    nc.threshold = 0;
    as_noise_summary(line, sizeof line, &t, &nc, -1);
    CHECK(strstr(line, "nothing re-measured or flagged") != NULL);
    CHECK(as_noise_warning(line, sizeof line, &t, &nc) == 0 && line[0] == 0);
    as_bench_tally_free(&t);
    /* 1 noisy of 10: exactly 10 %, no warning; 2 of 10: a warning */
    memset(&t, 0, sizeof t);
    r.ok = 1;
    r.spread = 0.01;
    for (int i = 0; i < 10; i++) { r.noisy = i == 0; as_bench_tally_add(&t, &r); }
    nc.threshold = 0.1;
    CHECK(as_noise_warning(line, sizeof line, &t, &nc) == 0);
    t.noisy = 2;
    CHECK(as_noise_warning(line, sizeof line, &t, &nc) == 1);
    as_bench_tally_free(&t);
    memset(&t, 0, sizeof t);
    as_noise_summary(line, sizeof line, &t, &nc, -1);
    CHECK(strstr(line, "no shard with a spread") != NULL);
    CHECK(isnan(as_noise_median_spread(&t)));
}

TEST(bench_calibrate)
{
    as_bpool p;
    int64_t dims[1] = { 16 }, rows[1] = { 200 };
    mk_pool(&p, 3, 16, dims, rows, 1, 4, 2);
    as_bench_cfg c = cpu_cfg();
    char err[256], line[512];
    as_bench_calib cal;
    /* the real timer: a median, a spread; the verdict depends on the machine */
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    double t0 = as_now();
    CHECK(as_bench_calibrate(S, &cal, err, sizeof err) == 0);
    CHECK(as_now() - t0 < 2.0);   /* cheap (about 0.1 s on a 2-vCPU VM) */
    CHECK(cal.runs == 30 && cal.median_ms > 0 && isfinite(cal.spread) && cal.slowest >= 1);
    CHECK(cal.ncpu >= 1);
    as_bench_calib_line(line, sizeof line, &cal);
    CHECK(strstr(line, "quiet-machine check: a fixed CPU kernel on 2 threads: 30 runs") != NULL);
    as_bench_session_free(S);
    /* the fake timer: quiet, then noisy; /proc/stat is not read */
    as_bench_fake f = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 };
    c.fake = &f;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(as_bench_calibrate(S, &cal, err, sizeof err) == 0);
    CHECK(!cal.loaded && cal.spread < 0.01 && isnan(cal.other_cpu));
    as_bench_calib_line(line, sizeof line, &cal);
    CHECK(strstr(line, ": quiet") != NULL);
    CHECK(strstr(line, "other processes") == NULL);
    f.calib_noisy = 1;
    CHECK(as_bench_calibrate(S, &cal, err, sizeof err) == 0);
    CHECK(cal.loaded && cal.spread > AS_CALIB_SPREAD_MAX);
    as_bench_calib_line(line, sizeof line, &cal);
    CHECK(strstr(line, "the machine looks loaded (spread above 5 %); the costs will be noisy") != NULL);
    /* the calibration is not one of the session's shards */
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    CHECK_EQ_I64(si.shards, 0);
    as_bench_session_free(S);
    /* the verdict from other processes' share alone */
    memset(&cal, 0, sizeof cal);
    snprintf(cal.what, sizeof cal.what, "x");
    cal.runs = 30;
    cal.spread = 0.01;
    cal.slowest = 1.1;
    cal.median_ms = 2;
    cal.other_cpu = 0.2;
    cal.ncpu = 2;
    CHECK(!as_bench_calib_loaded(&cal));
    cal.other_cpu = NAN;
    CHECK(!as_bench_calib_loaded(&cal));
    cal.spread = 0.06;
    CHECK(as_bench_calib_loaded(&cal));
    cal.spread = 0.01;
    cal.other_cpu = 0.5;
    CHECK(as_bench_calib_loaded(&cal));
    cal.loaded = 1;
    as_bench_calib_line(line, sizeof line, &cal);
    CHECK(strstr(line, "other processes used 50 % of 2 CPUs: the machine looks loaded (other work above 25 % of the CPUs)") != NULL);
    as_bpool_free(&p);
}

/* shards measured together in interleaved rounds: each gets the protocol's W + R iterations
 * on its own data (bit for bit those of the naive references), the same fake-timer figures
 * as alone, `together` = how many ran together; a shard that cannot run leaves the others
 * be; the memory budget splits the group */
TEST(bench_group_interleaved_rounds)
{
    as_bpool p;
    int64_t dims[4] = {16, 5, 32, 1}, rows[4] = {500, 40, 3000, 1};
    mk_pool(&p, 8, 96, dims, rows, 4, 9, 3);
    as_bench_cfg c = cpu_cfg();
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    int64_t a[3] = {12, 11, 17}, b[2] = {10, 13}, d[3] = {14, 15, 16}, bad[1] = {99};
    as_bench_shardref g[3] = { { a, 3, 0 }, { b, 2, 0 }, { d, 3, 0 } };
    as_bench_result r[3];
    as_bench_session_run_group(S, g, 3, r);
    for (int j = 0; j < 3; j++) {
        if (!r[j].ok) fprintf(stderr, "  %s\n", r[j].error);
        CHECK(r[j].ok && r[j].cost_ms > 0 && r[j].busy_ms > 0 && r[j].wall_ms > 0);
        CHECK_EQ_I64(r[j].together, 3);
        CHECK_EQ_I64(r[j].attempts, 1);
    }
    check_member(S, 0, &c, &p, a, 3, "group shard 0");
    check_member(S, 1, &c, &p, b, 2, "group shard 1");
    check_member(S, 2, &c, &p, d, 3, "group shard 2");
    check_last(S, &c, &p, d, 3, "group: the last shard");
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    CHECK_EQ_I64(si.shards, 3);
    /* alone: together = 1, and its data as before */
    as_bench_result one;
    as_bench_session_run(S, b, 2, &one);
    CHECK(one.ok && one.together == 1);
    check_last(S, &c, &p, b, 2, "alone after a group");
    CHECK(as_bench_session_group_data(S, 1, NULL, NULL, NULL, NULL, err, sizeof err) == -1);

    /* a shard that cannot run, in the middle: the other two run together */
    as_bench_shardref g2[3] = { { a, 3, 0 }, { bad, 1, 0 }, { d, 3, 0 } };
    as_bench_session_run_group(S, g2, 3, r);
    CHECK(r[0].ok && r[2].ok && !r[1].ok);
    CHECK(strstr(r[1].error, "table 99 is not in the table data") != NULL);
    CHECK_EQ_I64(r[0].together, 2);
    CHECK_EQ_I64(r[2].together, 2);
    check_member(S, 0, &c, &p, a, 3, "with a bad shard: shard 0");
    check_member(S, 2, &c, &p, d, 3, "with a bad shard: shard 2");
    as_bench_session_free(S);

    /* a budget that holds each shard but no two (beside the table data and the flush
       sweep): one at a time, all measured, data intact; the data of the parts before the
       last are gone, and the session never held more than the budget */
    as_bench_session_run_group(S = as_bench_session_new(&c, &p, err, sizeof err), g, 3, r);
    uint64_t big = 0;
    for (int j = 0; j < 3; j++) if (r[j].bytes > big) big = r[j].bytes;
    CHECK(as_bench_session_need(S, g, 2) > big + 1);
    as_bench_session_free(S);
    const uint64_t fixed = AS_BENCH_PROCESS_BYTES + as_bpool_bytes(&p) + as_bench_flush_bytes(&c);
    as_bench_cfg c2 = c;
    c2.max_bytes = fixed + big + 1;
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    CHECK_EQ_I64(as_bench_session_room(S), big + 1);
    as_bench_session_run_group(S, g, 3, r);
    for (int j = 0; j < 3; j++) CHECK(r[j].ok && r[j].together == 1);
    check_last(S, &c2, &p, d, 3, "budget: the last shard");
    check_member(S, 2, &c2, &p, d, 3, "budget: the last shard's part");
    CHECK(as_bench_session_group_data(S, 0, NULL, NULL, NULL, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "went with its part") != NULL);
    as_bench_session_info_get(S, &si);
    CHECK(si.bytes <= big + 1);
    as_bench_session_free(S);
    /* a budget for the first two together */
    c2.max_bytes = fixed + as_bench_session_need(S = as_bench_session_new(&c, &p, err, sizeof err), g, 2);
    as_bench_session_free(S);
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    as_bench_session_run_group(S, g, 3, r);
    CHECK(r[0].ok && r[1].ok && r[2].ok);
    CHECK(r[0].together == 2 && r[1].together == 2 && r[2].together == 1);
    check_member(S, 2, &c2, &p, d, 3, "budget: the third alone");
    as_bench_session_info_get(S, &si);
    CHECK(si.bytes <= as_bench_session_room(S));
    as_bench_session_free(S);
    /* a group budget (group_bytes) below what two need together, a shard budget that holds
       all three: each shard alone, as under the small budget above, and a shard larger than
       group_bytes still runs (alone); group_bytes above the room changes nothing */
    c2.max_bytes = fixed + as_bench_session_need(S = as_bench_session_new(&c, &p, err, sizeof err), g, 3);
    as_bench_session_free(S);
    c2.group_bytes = big - 1;
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    CHECK_EQ_I64(as_bench_session_group_room(S), big - 1);
    CHECK(as_bench_session_room(S) > big);
    CHECK(!as_bench_session_fits(S, g, 2));
    for (int j = 0; j < 3; j++) CHECK(as_bench_session_fits(S, &g[j], 1));
    as_bench_session_run_group(S, g, 3, r);
    for (int j = 0; j < 3; j++) CHECK(r[j].ok && r[j].together == 1);
    check_member(S, 2, &c2, &p, d, 3, "group budget: the last shard alone");
    as_bench_session_free(S);
    c2.group_bytes = c2.max_bytes;
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    CHECK_EQ_I64(as_bench_session_group_room(S), as_bench_session_room(S));
    as_bench_session_run_group(S, g, 3, r);
    for (int j = 0; j < 3; j++) CHECK(r[j].ok && r[j].together == 3);
    as_bench_session_free(S);
    c2.group_bytes = 0;
    /* a budget that leaves nothing beside the table data and the sweep: nothing fits */
    c2.max_bytes = fixed;
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    as_bench_session_run_group(S, g, 3, r);
    for (int j = 0; j < 3; j++) CHECK(!r[j].ok && strncmp(r[j].error, "does not fit: needs ", 20) == 0);
    CHECK(strstr(r[0].error, "leaves 0 B beside the process, the table data and the cache-flush sweep") != NULL);
    as_bench_session_free(S);

    /* the fake timer: the same figures together as alone */
    as_bench_fake q = { 1, AS_FAKE_FIRST, 0.5, 10, 0, 0, { 0 }, 0, 0 };
    as_bench_cfg cf = c;
    cf.fake = &q;
    cf.runs = 6;
    S = as_bench_session_new(&cf, &p, err, sizeof err);
    as_bench_shardref g3[3] = { { a, 3, 0 }, { b, 2, 1 }, { d, 3, 0 } };
    as_bench_session_run_group(S, g3, 3, r);
    for (int j = 0; j < 3; j++) {
        as_bench_session_run_attempt(S, g3[j].ids, g3[j].n, g3[j].attempt, &one);
        CHECK(r[j].ok && one.ok);
        CHECK(r[j].cost_ms == one.cost_ms && r[j].median_ms == one.median_ms && r[j].fwd_ms == one.fwd_ms);
        CHECK((isnan(r[j].spread) && isnan(one.spread)) || r[j].spread == one.spread);
    }
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* a shard's own data as a part holds it (bench.c): output and gradient [B, sumD] fp32, offsets
 * [T*B + 1], indices, each from a cache line */
static int64_t line64(int64_t x) { return (x + 63) / 64 * 64; }
static int64_t own_bytes(const as_bpool *p, const int64_t *ids, int T)
{
    int64_t B = as_bpool_get(p, ids[0])->batch, sumD = 0, n = 0;
    for (int t = 0; t < T; t++) {
        sumD += as_bpool_get(p, ids[t])->dim;
        n += as_bpool_get(p, ids[t])->lookups;
    }
    return 2 * line64(B * sumD * 4) + line64((T * B + 1) * 8) + line64((n ? n : 1) * 4);
}
/* one copy of a table's weights: rows x dim halves, to a multiple of 32 */
static int64_t copy_bytes(const as_bpool *p, int64_t id)
{
    const as_btable *t = as_bpool_get(p, id);
    return (t->rows * t->dim + 31) / 32 * 32 * 2;
}

/* The rounds of a group replayed with the naive references, the group's tables held once:
 * each shard's warm-up iterations in order, then round i runs shard (i + q) % k for q =
 * 0..k-1 (as_bench_session_run_group, all k shards in one part). A table that two shards
 * name is one copy both update; one that a shard names twice, two copies of its own. Every
 * shard's output and every table's weights must equal the session's bit for bit. */
static void check_group_replay(as_bench_session *S, const as_bench_cfg *c, const as_bpool *p, const as_bench_shardref *g,
                               int k, const char *what)
{
    enum { MAXT = 8, MAXR = 64 };
    int64_t rid[MAXR], rocc[MAXR], roff[MAXR + 1] = { 0 };
    int nr = 0;
    int64_t *woff[8], *rows[8], *off[8];
    int32_t *dims[8], *doff[8], *ind[8];
    float *grad[8], *out[8];
    as_eb_shard rs[8];
    CHECK(k <= 8);
    for (int j = 0; j < k; j++) {
        const int T = (int)g[j].n;
        CHECK(T <= MAXT);
        woff[j] = malloc(sizeof(int64_t) * (size_t)(T + 1));
        rows[j] = malloc(sizeof(int64_t) * (size_t)T);
        dims[j] = malloc(sizeof(int32_t) * (size_t)T);
        doff[j] = malloc(sizeof(int32_t) * (size_t)(T + 1));
        const as_eb_table *tb[MAXT];
        as_eb_table v[MAXT];
        int64_t n = 0;
        doff[j][0] = 0;
        for (int t = 0; t < T; t++) {
            const as_btable *bt = as_bpool_get(p, g[j].ids[t]);
            as_eb_table x = { bt->id, bt->rows, bt->batch, bt->dim, bt->lookups, bt->offsets, bt->indices };
            v[t] = x;
            tb[t] = &v[t];
            rows[j][t] = bt->rows;
            dims[j][t] = (int32_t)bt->dim;
            doff[j][t + 1] = doff[j][t] + (int32_t)bt->dim;
            n += bt->lookups;
            /* the region of this table's occurrence: its first copy, or another for a repeat */
            int64_t occ = 0;
            for (int u = 0; u < t; u++) occ += g[j].ids[u] == bt->id;
            int r = 0;
            while (r < nr && !(rid[r] == bt->id && rocc[r] == occ)) r++;
            if (r == nr) {
                rid[nr] = bt->id;
                rocc[nr] = occ;
                roff[nr + 1] = roff[nr] + bt->rows * bt->dim;
                nr++;
            }
            woff[j][t] = roff[r];
        }
        const int64_t B = tb[0]->batch;
        off[j] = malloc(sizeof(int64_t) * (size_t)(T * B + 1));
        ind[j] = malloc(sizeof(int32_t) * (size_t)(n + 1));
        as_ebg_gather(off[j], ind[j], tb, T, B, 1);
        grad[j] = malloc(sizeof(float) * (size_t)(B * doff[j][T] + 1));
        out[j] = malloc(sizeof(float) * (size_t)(B * doff[j][T] + 1));
        as_eb_shard sj = { T, B, rows[j], dims[j], woff[j], doff[j], off[j], ind[j] };
        rs[j] = sj;
        as_ebg_fill_grad(grad[j], &rs[j], g[j].ids, c->seed, 1);
    }
    for (int j = 0; j < k; j++) woff[j][g[j].n] = roff[nr];
    uint16_t *Wr = malloc(2 * (size_t)(roff[nr] + 1));
    for (int r = 0; r < nr; r++) {
        const uint64_t key = as_ebg_key(c->seed, rid[r], AS_EBG_WEIGHTS);
        for (int64_t e = 0; e < roff[r + 1] - roff[r]; e++) Wr[roff[r] + e] = as_ebg_weight(key, (uint64_t)e);
    }
    for (int j = 0; j < k; j++)
        for (int i = 0; i < c->warmup; i++) {
            as_eb_forward_ref(out[j], Wr, &rs[j]);
            as_eb_backward_sgd_ref(Wr, grad[j], &rs[j], c->lr);
        }
    for (int i = 0; i < c->runs; i++)
        for (int q = 0; q < k; q++) {
            const int j = (i + q) % k;
            as_eb_forward_ref(out[j], Wr, &rs[j]);
            as_eb_backward_sgd_ref(Wr, grad[j], &rs[j], c->lr);
        }
    for (int j = 0; j < k; j++) {
        as_eb_shard s;
        const uint16_t *W;
        const float *gs, *os;
        char err[256] = "";
        int rc = as_bench_session_group_data(S, j, &s, &W, &gs, &os, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: shard %d: %s\n", what, j, err);
        CHECK(rc == 0);
        if (rc) continue;
        CHECK(as_eb_validate(&s, err, sizeof err) == 0);
        const int64_t nout = rs[j].B * doff[j][g[j].n];
        int64_t bw = 0, bo = 0;
        for (int t = 0; t < g[j].n; t++)
            for (int64_t e = 0; e < rows[j][t] * dims[j][t]; e++) bw += W[s.w_off[t] + e] != Wr[woff[j][t] + e];
        for (int64_t e = 0; e < nout; e++) bo += memcmp(&os[e], &out[j][e], 4) != 0;
        CHECK(memcmp(gs, grad[j], 4 * (size_t)nout) == 0);
        if (bw || bo) fprintf(stderr, "  %s: shard %d: %lld weights, %lld outputs differ\n", what, j, (long long)bw, (long long)bo);
        CHECK_EQ_I64(bw, 0);
        CHECK_EQ_I64(bo, 0);
    }
    for (int j = 0; j < k; j++) { free(woff[j]); free(rows[j]); free(dims[j]); free(doff[j]); free(off[j]); free(ind[j]); free(grad[j]); free(out[j]); }
    free(Wr);
}

/* a group's shards hold each table once: the memory counted (as_bench_session_need, a
 * table named by two shards once, one named twice by a shard twice), the shared weights
 * updated by every shard that names them in the rounds' order, and a budget that the
 * group fits only because its tables are held once measures it whole */
TEST(bench_group_shares_tables)
{
    as_bpool p;
    int64_t dims[3] = {16, 8, 24}, rows[3] = {300, 900, 50};
    mk_pool(&p, 6, 48, dims, rows, 3, 7, 5);
    as_bench_cfg c = cpu_cfg();
    char err[256] = "";
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    if (!S) return;
    int64_t a[3] = {10, 11, 12}, b[2] = {11, 13}, d[3] = {12, 11, 14}, e[3] = {13, 15, 15};
    as_bench_shardref g[4] = { { a, 3, 0 }, { b, 2, 0 }, { d, 3, 0 }, { e, 3, 0 } };
    /* by hand: tables 10..15 once, 15 a second time (e names it twice), each shard's own
       data, one set of sort buffers for the largest table and dim */
    int64_t want = 0, maxn = 0;
    for (int64_t id = 10; id <= 15; id++) {
        want += copy_bytes(&p, id);
        if (as_bpool_get(&p, id)->lookups > maxn) maxn = as_bpool_get(&p, id)->lookups;
    }
    want += copy_bytes(&p, 15);
    want += own_bytes(&p, a, 3) + own_bytes(&p, b, 2) + own_bytes(&p, d, 3) + own_bytes(&p, e, 3);
    want += (int64_t)as_eb_cpu_ws_size(maxn, 24);
    CHECK_EQ_I64(as_bench_session_need(S, g, 4), want);
    /* shards that cannot be laid out count nothing */
    int64_t bad[1] = {99};
    as_bench_shardref g5[5] = { g[0], g[1], g[2], g[3], { bad, 1, 0 } };
    CHECK_EQ_I64(as_bench_session_need(S, g5, 5), want);
    CHECK_EQ_I64(as_bench_session_need(S, g5 + 4, 1), 0);
    as_bench_result r[4];
    as_bench_session_run_group(S, g, 4, r);
    uint64_t sum = 0;
    for (int j = 0; j < 4; j++) {
        CHECK(r[j].ok && r[j].together == 4);
        sum += r[j].bytes;
    }
    CHECK(sum > (uint64_t)want);
    check_group_replay(S, &c, &p, g, 4, "shared tables");
    /* one buffer: table 11 at one place for shards 0, 1, 2; e's two copies of 15 apart */
    as_eb_shard s0, s1, s3;
    const uint16_t *W0, *W1, *W3;
    const float *gg, *oo;
    CHECK(as_bench_session_group_data(S, 0, &s0, &W0, &gg, &oo, err, sizeof err) == 0);
    CHECK(as_bench_session_group_data(S, 1, &s1, &W1, &gg, &oo, err, sizeof err) == 0);
    CHECK(as_bench_session_group_data(S, 3, &s3, &W3, &gg, &oo, err, sizeof err) == 0);
    CHECK(W0 == W1 && W1 == W3);
    CHECK_EQ_I64(s0.w_off[1], s1.w_off[0]);
    CHECK(s3.w_off[1] != s3.w_off[2]);
    /* alone, each shard is laid out as as_ebg_layout does and matches the references */
    as_bench_result one;
    as_bench_session_run(S, e, 3, &one);
    CHECK(one.ok);
    check_last(S, &c, &p, e, 3, "a table twice, alone");
    as_bench_session_free(S);
    /* a budget the group fits only with its tables held once: one part of 4 */
    as_bench_cfg c2 = c;
    c2.max_bytes = AS_BENCH_PROCESS_BYTES + as_bpool_bytes(&p) + as_bench_flush_bytes(&c) + (uint64_t)want;
    CHECK(sum > (uint64_t)want);
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    CHECK(as_bench_session_fits(S, g, 4));
    as_bench_session_run_group(S, g, 4, r);
    for (int j = 0; j < 4; j++) CHECK(r[j].ok && r[j].together == 4);
    check_group_replay(S, &c2, &p, g, 4, "shared tables, at the budget");
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    CHECK(si.bytes <= as_bench_session_room(S));
    /* a byte less: two parts, never more than the budget held */
    as_bench_session_free(S);
    c2.max_bytes--;
    S = as_bench_session_new(&c2, &p, err, sizeof err);
    CHECK(!as_bench_session_fits(S, g, 4));
    as_bench_session_run_group(S, g, 4, r);
    int parts_ok = 1;
    for (int j = 0; j < 4; j++) parts_ok &= r[j].ok && r[j].together < 4;
    CHECK(parts_ok);
    as_bench_session_info_get(S, &si);
    CHECK(si.bytes <= as_bench_session_room(S));
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* which shards go together under a memory budget: whole units, as many as fit with the
 * reference shard; a unit too big alone is a group of its own */
TEST(bench_noise_groups_fit_the_budget)
{
    as_bpool p;
    noise_pool(&p);
    int64_t ids[9][3], ref[2] = { 11, 14 };
    noise_ids(ids, 9);
    as_noise_job j[9];
    memset(j, 0, sizeof j);
    const int64_t unit[9] = { 0, 0, 0, 1, 2, 2, 3, 4, 4 };
    for (int i = 0; i < 9; i++) {
        j[i].ids = ids[i];
        j[i].n = 1 + i % 3;
        j[i].unit = unit[i];
    }
    as_bench_cfg c = cpu_cfg();
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    /* the need of jobs [i, e) and the reference */
    as_bench_shardref sh[10];
#define NEED(i, e, withref) ({ int k_ = 0; for (int q_ = (i); q_ < (e); q_++) { as_bench_shardref r_ = { j[q_].ids, j[q_].n, 0 }; sh[k_++] = r_; } \
                               if (withref) { as_bench_shardref r_ = { ref, 2, 0 }; sh[k_++] = r_; } as_bench_session_need(S, sh, k_); })
    const uint64_t u01 = NEED(0, 4, 1), u012 = NEED(0, 6, 1), u0 = NEED(0, 3, 1), u0n = NEED(0, 3, 0), u01n = NEED(0, 4, 0);
    const uint64_t u23 = NEED(4, 7, 1), u234 = NEED(4, 9, 1);
    CHECK(u0 < u01 && u01 < u012 && u23 < u234);
    as_noise_cfg nc = { 0.1, 2, NULL, 100, ref, 2, NULL, 0, NULL, NULL };
    /* no budget: as_noise_group_end's groups */
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nc), 9);
    as_bench_session_free(S);
    const uint64_t fixed = AS_BENCH_PROCESS_BYTES + as_bpool_bytes(&p) + as_bench_flush_bytes(&c);
    as_bench_cfg cb = c;
    /* room for units 0 and 1 with the reference, not for unit 2 as well */
    cb.max_bytes = fixed + u01;
    S = as_bench_session_new(&cb, &p, err, sizeof err);
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nc), 4);
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 4, &nc), u234 <= u01 ? 9 : u23 <= u01 ? 7 : 6);
    /* the interleave still limits: 2 shards, unit 0 (3 shards) alone */
    nc.interleave = 2;
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nc), 3);
    nc.interleave = 100;
    as_bench_session_free(S);
    /* room for unit 0 alone without the reference: still a group of its own */
    cb.max_bytes = fixed + u0n;
    S = as_bench_session_new(&cb, &p, err, sizeof err);
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nc), 3);
    /* without the reference units 0 and 1 would fit a budget of u01n */
    as_bench_session_free(S);
    cb.max_bytes = fixed + u01n;
    S = as_bench_session_new(&cb, &p, err, sizeof err);
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nc), u01 <= u01n ? 4 : 3);
    as_noise_cfg nr = nc;
    nr.ref_ids = NULL;
    nr.ref_n = 0;
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, 9, 0, &nr), 4);
    /* over a selection: jobs 1, 2, 5, 6, 8 (units 0, 0, 2, 3, 4) */
    const int64_t sel[5] = { 1, 2, 5, 6, 8 };
    CHECK(as_noise_group_end_fit(S, j, sel, 5, 0, &nr) >= 2);
    as_bench_session_free(S);
#undef NEED
    as_bpool_free(&p);
}

/* a plan (a unit) whose tables do not fit the budget together: measured in parts, one after
 * another; re-measured whole when a shard is noisy; all its shards keep the same attempt
 * and the one reference measurement (its last part's) */
TEST(bench_noise_unit_over_budget)
{
    as_bpool p;
    noise_pool(&p);
    enum { N = 6 };
    int64_t ids[N][3], ref[2] = { 11, 14 };
    noise_ids(ids, N);
    as_bench_fake f = { 1, AS_FAKE_FIRST, 0.3, 10, 0, 0, { 0 }, 0, 0 };
    as_bench_cfg c = noise_cfg(5, &f);
    char err[256];
    as_noise_job j[N];
    as_bench_shardref sh[N + 1];
    for (int64_t i = 0; i < N; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].ids = ids[i];
        j[i].n = 1 + i % 3;
        j[i].unit = 0;
        as_bench_shardref r = { ids[i], 1 + i % 3, 0 };
        sh[i] = r;
    }
    as_bench_shardref rr = { ref, 2, 0 };
    sh[N] = rr;
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    /* room for any shard with the reference, not for all of them */
    uint64_t two = 0;
    for (int i = 0; i < N; i++) {
        as_bench_shardref pair[2] = { sh[i], rr };
        const uint64_t x = as_bench_session_need(S, pair, 2);
        if (x > two) two = x;
    }
    const uint64_t all = as_bench_session_need(S, sh, N + 1);
    as_bench_session_free(S);
    as_bench_cfg cb = c;
    cb.max_bytes = AS_BENCH_PROCESS_BYTES + as_bpool_bytes(&p) + as_bench_flush_bytes(&c) + two;
    CHECK(two < all);
    S = as_bench_session_new(&cb, &p, err, sizeof err);
    double base = 0;
    as_noise_cfg nc = { 0.1, 2, NULL, 16, ref, 2, &base, 0, NULL, NULL };
    CHECK_EQ_I64(as_noise_group_end_fit(S, j, NULL, N, 0, &nc), N);
    const int64_t again = as_noise_measure(S, j, N, &nc, NULL, NULL, NULL);
    as_bench_session_info si;
    as_bench_session_info_get(S, &si);
    CHECK(si.bytes <= as_bench_session_room(S));
    as_bench_session_free(S);
    int hit = 0;
    for (int i = 0; i < N; i++) hit |= as_bench_fake_factor(&f, ids[i], 1 + i % 3, 0, 1) > 2;
    CHECK(hit);
    CHECK_EQ_I64(again, N);
    for (int i = 0; i < N; i++) {
        if (!j[i].r.ok) fprintf(stderr, "  shard %d: %s\n", i, j[i].r.error);
        CHECK(j[i].r.ok && !j[i].r.noisy);
        CHECK_EQ_I64(j[i].r.attempts, 2);
        CHECK(j[i].r.together >= 1 && j[i].r.together < N);
        CHECK(isfinite(j[i].r.ref_ms) && j[i].r.ref_ms == j[0].r.ref_ms);
        CHECK(j[i].r.drift == j[0].r.drift);
        /* the kept (second, quiet) attempt: the fake clock's quiet figure within 1 % */
        const double x = j[i].r.cost_ms / (0.1 + 1e-5 * (double)j[i].r.lookups);
        CHECK(x >= 0.99 && x < 1.02);
    }
    as_bpool_free(&p);
}

/* which shards go together: whole units, packed up to the limit */
TEST(bench_noise_groups)
{
    as_noise_job j[9];
    memset(j, 0, sizeof j);
    const int64_t unit[9] = { 0, 0, 0, 1, 2, 2, 3, 4, 4 };
    for (int i = 0; i < 9; i++) j[i].unit = unit[i];
    /* limit 4: {0,0,0,1} {2,2,3} {4,4} */
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 0, 4), 4);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 4, 4), 7);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 7, 4), 9);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 9, 4), 9);
    /* limit 2: a unit of 3 stays whole; then {1} (unit 2 would make 3), {2,2}, {3}, {4,4} */
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 0, 2), 3);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 3, 2), 4);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 4, 2), 6);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 6, 2), 7);
    /* limit 1 or 0: every shard alone, even within a unit */
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 0, 1), 1);
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 1, 0), 2);
    /* large: everything */
    CHECK_EQ_I64(as_noise_group_end(j, NULL, 9, 0, 100), 9);
    /* over a selection (re-measuring rounds): jobs 1, 2, 5, 6, 8 -> units 0,0,2,3,4 */
    const int64_t sel[5] = { 1, 2, 5, 6, 8 };
    CHECK_EQ_I64(as_noise_group_end(j, sel, 5, 0, 3), 3);
    CHECK_EQ_I64(as_noise_group_end(j, sel, 5, 3, 3), 5);
    CHECK_EQ_I64(as_noise_group_end(j, sel, 5, 0, 2), 2);
}

/* as_noise_measure with groups: the same figures as one at a time under the fake timer,
 * re-measuring rounds included, and `together` set */
TEST(bench_noise_rounds_interleaved)
{
    as_bpool p;
    noise_pool(&p);
    enum { N = 10 };
    int64_t ids[N][3];
    noise_ids(ids, N);
    as_bench_fake half = { 1, AS_FAKE_FIRST, 0.5, 10, 0, 0, { 0 }, 0, 0 };
    as_bench_cfg c = noise_cfg(6, &half);
    as_noise_job a[N], b[N];
    for (int inter = 0; inter < 2; inter++) {
        as_noise_job *jobs = inter ? b : a;
        char err[256];
        as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
        for (int64_t i = 0; i < N; i++) {
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].ids = ids[i];
            jobs[i].n = 1 + i % 3;
            jobs[i].unit = i / 4;       /* units of 4, 4 and 2 shards */
        }
        as_noise_cfg nc = { 0.1, 2, NULL, inter ? 8 : 1, NULL, 0, NULL, 0, NULL, NULL };
        as_noise_measure(S, jobs, N, &nc, NULL, NULL, NULL);
        as_bench_session_free(S);
    }
    /* one at a time (a): every shard is its own retry unit; interleaved (b): a unit with a
       noisy shard is measured again whole, and all its shards keep the same attempt (the
       second: its largest spread is the lower) */
    int64_t again = 0, whole = 0;
    for (int i = 0; i < N; i++) {
        CHECK(a[i].r.ok && b[i].r.ok && !a[i].r.noisy && !b[i].r.noisy);
        CHECK_EQ_I64(a[i].r.together, 1);
        const int hit = as_bench_fake_factor(&half, ids[i], 1 + i % 3, 0, 1) > 2;
        int unit_hit = 0;
        for (int k = i / 4 * 4; k < N && k / 4 == i / 4; k++) unit_hit |= as_bench_fake_factor(&half, ids[k], 1 + k % 3, 0, 1) > 2;
        CHECK_EQ_I64(a[i].r.attempts, hit ? 2 : 1);
        CHECK_EQ_I64(b[i].r.attempts, unit_hit ? 2 : 1);
        again += hit;
        whole += unit_hit && !hit;
        /* the same attempt under the fake timer: the same figures; the other quiet one of a
           shard within the quiet runs' 1 % */
        if (a[i].r.attempts == b[i].r.attempts) CHECK(a[i].r.cost_ms == b[i].r.cost_ms);
        else CHECK(fabs(b[i].r.cost_ms / a[i].r.cost_ms - 1) < 0.011);
        /* first attempts: units 0+1 together (8), unit 2 (2); a re-measured unit's attempt
           ran with the other re-measured units */
        if (b[i].r.attempts == 1) CHECK_EQ_I64(b[i].r.together, i < 8 ? 8 : 2);
    }
    CHECK(again > 0 && again < N);
    CHECK(whole > 0);
    as_bpool_free(&p);
}

/* a plan's kept figures come from one group: with drift, a reference and shards noisy on
 * their first attempt, every unit's shards share their attempt, group size, reference cost
 * and drift factor, and so their ratios are those of the quiet machine */
TEST(bench_noise_unit_kept_from_one_group)
{
    as_bpool p;
    noise_pool(&p);
    enum { N = 12, U = 4 };
    int64_t ids[N][3], ref[2] = { 11, 14 };
    noise_ids(ids, N);
    as_bench_fake f = { 1, AS_FAKE_FIRST, 0.2, 10, 0, 1.8, { 0 }, 0, 0 };
    as_bench_cfg c = noise_cfg(5, &f);
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    CHECK(S != NULL);
    as_noise_job j[N];
    for (int64_t i = 0; i < N; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].ids = ids[i];
        j[i].n = 1 + i % 3;
        j[i].unit = i / U;
    }
    double base = 0;
    as_noise_cfg nc = { 0.1, 2, NULL, 8, ref, 2, &base, 0, NULL, NULL };
    const int64_t again = as_noise_measure(S, j, N, &nc, NULL, NULL, NULL);
    as_bench_session_free(S);
    int64_t units_again = 0;
    double lo = INFINITY, hi = 0;
    for (int u = 0; u < N / U; u++) {
        const as_bench_result *a = &j[u * U].r;
        units_again += a->attempts > 1;
        for (int q = 0; q < U; q++) {
            const as_bench_result *r = &j[u * U + q].r;
            CHECK(r->ok && !r->noisy && !r->ref_noisy);
            CHECK_EQ_I64(r->attempts, a->attempts);
            CHECK_EQ_I64(r->together, a->together);
            CHECK(r->ref_ms == a->ref_ms && r->drift == a->drift);
            /* the quiet figures on the run's level, within the quiet runs' 1 % (corrected
               by the reference, itself within 1 %) */
            const double x = r->cost_ms / (0.1 + 1e-5 * (double)r->lookups);
            if (x < lo) lo = x;
            if (x > hi) hi = x;
        }
    }
    CHECK(hi / lo < 1.025);
    CHECK(units_again > 0 && units_again < N / U);
    CHECK_EQ_I64(again, units_again * U);
    as_bpool_free(&p);
}

/* passes combined: geometric means of the times, extremes of min and max, means of the
 * spreads, flags of any pass, counts summed; failed passes left out */
TEST(bench_noise_passes_combine)
{
    as_bench_result r[3];
    memset(r, 0, sizeof r);
    const double cost[3] = { 1, 2, 4 }, spread[3] = { 0.02, NAN, 0.04 }, drift[3] = { 0.5, 1, 2 };
    for (int i = 0; i < 3; i++) {
        r[i].ok = 1;
        r[i].cost_ms = cost[i];
        r[i].fwd_ms = cost[i] / 4;
        r[i].bwd_ms = 3 * cost[i] / 4;
        r[i].median_ms = 1.1 * cost[i];
        r[i].min_ms = 0.9 * cost[i];
        r[i].max_ms = 1.2 * cost[i];
        r[i].rel_std = 0.01 * (i + 1);
        r[i].spread = spread[i];
        r[i].gbps = 8 / cost[i];
        r[i].drift = drift[i];
        r[i].ref_ms = 3 * drift[i];
        r[i].attempts = i + 1;
        r[i].busy_ms = 10;
        r[i].wall_ms = 20;
        r[i].together = 5 + i;
        r[i].noisy = i == 2;
        snprintf(r[i].device, sizeof r[i].device, "dev%d", i);
    }
    as_bench_result o;
    as_noise_passes_combine(&o, r, 3);
    CHECK(o.ok);
    CHECK_EQ_I64(o.passes, 3);
    CHECK_NEAR(o.cost_ms, 2, 1e-12);
    CHECK_NEAR(o.fwd_ms, 0.5, 1e-12);
    CHECK_NEAR(o.bwd_ms, 1.5, 1e-12);
    CHECK_NEAR(o.median_ms, 2.2, 1e-12);
    CHECK_NEAR(o.min_ms, 0.9, 1e-12);
    CHECK_NEAR(o.max_ms, 4.8, 1e-12);
    CHECK_NEAR(o.rel_std, 0.02, 1e-12);
    CHECK_NEAR(o.spread, 0.03, 1e-12);      /* the defined ones */
    CHECK_NEAR(o.gbps, 4, 1e-12);
    CHECK_NEAR(o.drift, 1, 1e-12);
    CHECK_NEAR(o.ref_ms, 3, 1e-12);
    CHECK_EQ_I64(o.attempts, 6);
    CHECK_NEAR(o.busy_ms, 30, 1e-12);
    CHECK_NEAR(o.wall_ms, 60, 1e-12);
    CHECK_EQ_I64(o.together, 5);
    CHECK(o.noisy);
    CHECK(strcmp(o.device, "dev0") == 0);
    /* a failed pass is left out but counted in attempts and time; a pass without a drift
       leaves the combined one undefined */
    r[0].ok = 0;
    r[1].drift = NAN;
    as_noise_passes_combine(&o, r, 3);
    CHECK(o.ok);
    CHECK_EQ_I64(o.passes, 2);
    CHECK_NEAR(o.cost_ms, sqrt(8), 1e-12);
    CHECK(isnan(o.drift));
    CHECK_NEAR(o.spread, 0.04, 1e-12);
    CHECK_EQ_I64(o.attempts, 6);
    CHECK_EQ_I64(o.together, 6);
    CHECK(strcmp(o.device, "dev1") == 0);
    /* none measured: the first's error */
    r[1].ok = r[2].ok = 0;
    snprintf(r[0].error, sizeof r[0].error, "does not fit");
    as_noise_passes_combine(&o, r, 3);
    CHECK(!o.ok && strcmp(o.error, "does not fit") == 0);
    CHECK_EQ_I64(o.attempts, 6);
    /* one pass: itself */
    r[2].ok = 1;
    as_noise_passes_combine(&o, r + 2, 1);
    CHECK(o.ok && o.cost_ms == 4 && o.passes == 1 && o.spread == 0.04);
}

/* the automatic reference shard: evenly spaced positions of the ascending ids */
TEST(bench_noise_ref_auto)
{
    int64_t ids[8] = { 5, 1, 9, 3, 7, 2, 8, 0 }, out[AS_NOISE_REF_TABLES];
    CHECK_EQ_I64(as_noise_ref_auto(ids, 8, out), 4);
    CHECK(out[0] == 1 && out[1] == 3 && out[2] == 7 && out[3] == 9);
    int64_t two[2] = { 6, 4 };
    CHECK_EQ_I64(as_noise_ref_auto(two, 2, out), 2);
    CHECK(out[0] == 4 && out[1] == 6);
    int64_t five[5] = { 10, 11, 12, 13, 14 };
    CHECK_EQ_I64(as_noise_ref_auto(five, 5, out), 4);    /* positions 0, 1, 3, 4 */
    CHECK(out[0] == 10 && out[1] == 11 && out[2] == 13 && out[3] == 14);
    CHECK_EQ_I64(as_noise_ref_auto(ids, 0, out), 0);
}

/* drift correction: under the fake timer's drift (each group slower by its own factor) the
 * shards' costs keep their quiet ratios exactly when every group times the reference too;
 * without it they do not. The level carries over to a second call; a level of 0 with no
 * usable reference corrects nothing. */
TEST(bench_noise_reference_drift)
{
    as_bpool p;
    noise_pool(&p);
    enum { N = 12 };
    int64_t ids[N][3], ref[2] = { 11, 14 };
    noise_ids(ids, N);
    as_bench_fake quiet = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 }, drift = { 1, AS_FAKE_QUIET, 1, 10, 0, 1.8, { 0 }, 0, 0 };
    as_bench_cfg c = noise_cfg(5, NULL);
    as_noise_job q[N], d[N], r[N], r2[N];
    as_noise_job *sets[4] = { q, d, r, r2 };
    double base = 0;
    for (int v = 0; v < 4; v++) {
        as_noise_job *jobs = sets[v];
        c.fake = v == 0 ? &quiet : &drift;
        char err[256];
        as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
        CHECK(S != NULL);
        for (int64_t i = 0; i < N; i++) {
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].ids = ids[i];
            jobs[i].n = 1 + i % 3;
            jobs[i].unit = i;
        }
        /* v 2 and 3: the reference, the second call keeping the first's level */
        as_noise_cfg nc = { 0.1, 2, NULL, 4, v >= 2 ? ref : NULL, v >= 2 ? 2 : 0, &base, 0, NULL, NULL };
        as_noise_measure(S, jobs, N, &nc, NULL, NULL, NULL);
        if (v == 2) CHECK(base > 0);
        as_bench_session_free(S);
    }
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { 0, 0, 0 };
    for (int i = 0; i < N; i++) {
        CHECK(q[i].r.ok && d[i].r.ok && r[i].r.ok && r2[i].r.ok);
        CHECK(isnan(q[i].r.drift) && isnan(d[i].r.drift) && isnan(q[i].r.ref_ms));
        CHECK(isfinite(r[i].r.drift) && r[i].r.drift > 0 && isfinite(r[i].r.ref_ms));
        CHECK_EQ_I64(r[i].r.together, 5);   /* 4 shards and the reference */
        CHECK_EQ_I64(d[i].r.together, 4);
        const double x[3] = { d[i].r.cost_ms / q[i].r.cost_ms, r[i].r.cost_ms / q[i].r.cost_ms, r2[i].r.cost_ms / q[i].r.cost_ms };
        for (int k = 0; k < 3; k++) { if (x[k] < lo[k]) lo[k] = x[k]; if (x[k] > hi[k]) hi[k] = x[k]; }
        /* the raw figures times the factor: the drifted ones */
        CHECK_NEAR(r[i].r.cost_ms * r[i].r.drift, d[i].r.cost_ms, 1e-12 * d[i].r.cost_ms);
        CHECK_NEAR(r[i].r.gbps / r[i].r.drift, d[i].r.gbps, 1e-9 * d[i].r.gbps);
        CHECK(r[i].r.spread == d[i].r.spread);
    }
    CHECK(hi[0] / lo[0] > 1.05);                /* drift without a reference */
    CHECK(hi[1] / lo[1] < 1 + 1e-12);           /* corrected: one scale */
    CHECK(hi[2] / lo[2] < 1 + 1e-12);           /* the second call on the first's level */
    CHECK_NEAR(lo[2], lo[1], 1e-12);
    /* a reference that is always noisy: no level, nothing corrected */
    as_bench_fake noisy = { 1, AS_FAKE_ALWAYS, 1, 10, 0, 0, { 0 }, 0, 0 };
    c.fake = &noisy;
    char err[256];
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    double b0 = 0;
    for (int64_t i = 0; i < N; i++) { memset(&r[i], 0, sizeof r[i]); r[i].ids = ids[i]; r[i].n = 1 + i % 3; r[i].unit = i; }
    as_noise_cfg nc = { 0.1, 1, NULL, 4, ref, 2, &b0, 0, NULL, NULL };
    as_noise_measure(S, r, N, &nc, NULL, NULL, NULL);
    CHECK(b0 == 0);
    for (int i = 0; i < N; i++) CHECK(r[i].r.ok && isnan(r[i].r.drift) && isfinite(r[i].r.ref_ms) && r[i].r.ref_noisy);
    as_bench_session_free(S);

    /* a reference noisy on its first attempt (the fake timer's `first`, a reference that is
       hit) while the shards are quiet: they are measured again, with a quiet reference, so
       that all of them end corrected on one level */
    as_bench_fake half = { 1, AS_FAKE_FIRST, 0.5, 10, 0, 0, { 0 }, 0, 0 };
    int64_t hit[1] = { -1 };
    for (int64_t id = 10; id < 18 && hit[0] < 0; id++) {
        int64_t one[1] = { id };
        if (as_bench_fake_factor(&half, one, 1, 0, 1) > 2) hit[0] = id;
    }
    CHECK(hit[0] >= 0);
    c.fake = &half;
    S = as_bench_session_new(&c, &p, err, sizeof err);
    double b1 = 0;
    int64_t quiet_ids[N][1];
    int nq = 0;
    for (int64_t id = 10; id < 18 && nq < 4; id++) {   /* shards the fake timer leaves quiet */
        int64_t one[1] = { id };
        if (as_bench_fake_factor(&half, one, 1, 0, 1) < 1.5) { quiet_ids[nq][0] = id; nq++; }
    }
    CHECK(nq >= 2);
    for (int i = 0; i < nq; i++) { memset(&r[i], 0, sizeof r[i]); r[i].ids = quiet_ids[i]; r[i].n = 1; r[i].unit = i; }
    as_noise_cfg nh = { 0.1, 2, NULL, 4, hit, 1, &b1, 0, NULL, NULL };
    CHECK_EQ_I64(as_noise_measure(S, r, nq, &nh, NULL, NULL, NULL), nq);   /* each once more */
    CHECK(b1 > 0);
    for (int i = 0; i < nq; i++) {
        CHECK(r[i].r.ok && !r[i].r.noisy && r[i].r.attempts == 2 && !r[i].r.ref_noisy);
        CHECK_NEAR(r[i].r.drift, 1, 1e-12);     /* the quiet reference: the level itself */
    }
    /* without the reference they are measured once */
    for (int i = 0; i < nq; i++) { memset(&r[i], 0, sizeof r[i]); r[i].ids = quiet_ids[i]; r[i].n = 1; r[i].unit = i; }
    as_noise_cfg nn = { 0.1, 2, NULL, 4, NULL, 0, NULL, 0, NULL, NULL };
    CHECK_EQ_I64(as_noise_measure(S, r, nq, &nn, NULL, NULL, NULL), 0);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* a session measuring fp32 or bf16 weights with row-wise Adagrad or Adam: after the warm-up
   and timed iterations its weights are those of ebopt.h's reference run as many times from
   the same generated data (the fp16 values widened or rounded to the type), bit for bit; its
   memory counts the weights in their type and the optimizer's state */
TEST(bench_typed_session_is_the_reference)
{
    const int64_t dims[3] = { 32, 5, 1 }, rows[3] = { 3000, 40, 1 };
    as_bpool p;
    mk_pool(&p, 8, 96, dims, rows, 3, 6, 11);
    const int64_t ids[3] = { 10, 11, 12 };   /* 3000 x 32, 40 x 5, 1 x 1 */
    static const struct { int wt; as_eb_optim o; } kinds[] = {
        { AS_EB_F32, AS_EB_ROWWISE_ADAGRAD }, { AS_EB_BF16, AS_EB_ADAM }, { AS_EB_F32, AS_EB_SGD } };
    uint64_t bytes[3];
    for (int k = 0; k < 3; k++) {
        as_bench_cfg c = cpu_cfg();
        c.wtype = kinds[k].wt;
        c.optim = kinds[k].o;
        char err[256];
        as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
        if (!CHECK(S != NULL)) { printf("  %s\n", err); continue; }
        as_bench_result r;
        as_bench_session_run(S, ids, 3, &r);
        if (!CHECK(r.ok)) { printf("  %s\n", r.error); as_bench_session_free(S); continue; }
        CHECK_STR(r.wtype, as_eb_dtype_name((as_eb_dtype)kinds[k].wt));
        bytes[k] = r.bytes;
        as_eb_shard s;
        const uint16_t *W;
        const float *grad, *out;
        CHECK_EQ_I64(as_bench_session_last(S, &s, &W, &grad, &out, err, sizeof err), 0);
        /* the reference: the same tables packed in units, fp16 values converted */
        const as_eb_table *tb[3];
        as_eb_table v[3];
        for (int t = 0; t < 3; t++) {
            const as_btable *bt = as_bpool_get(&p, ids[t]);
            v[t] = (as_eb_table){ bt->id, bt->rows, bt->batch, bt->dim, bt->lookups, bt->offsets, bt->indices };
            tb[t] = &v[t];
        }
        int64_t rw[3], wo[4], wu[4], so[4] = { 0 };
        int32_t dm[3], doff[4];
        const int64_t wn = as_ebg_layout(tb, 3, rw, dm, wo, doff), B = 96;
        uint8_t dt[3];
        wu[0] = 0;
        for (int t = 0; t < 3; t++) {
            dt[t] = (uint8_t)kinds[k].wt;
            wu[t + 1] = wu[t] + rw[t] * dm[t] * as_eb_dtype_units((as_eb_dtype)dt[t]) + 1;   /* + 1: odd padding */
            if (dt[t] == AS_EB_F32 && (wu[t + 1] & 1)) wu[t + 1]++;
            so[t + 1] = so[t] + as_eb_opt_state(kinds[k].o, rw[t], dm[t]);
        }
        int64_t n = 0;
        for (int t = 0; t < 3; t++) n += tb[t]->lookups;
        int64_t *off = malloc(sizeof(int64_t) * (size_t)(3 * B + 1));
        int32_t *ind = malloc(sizeof(int32_t) * (size_t)(n + 1));
        as_ebg_gather(off, ind, tb, 3, B, 1);
        as_eb_shard h = { 3, B, rw, dm, wo, doff, off, ind }, u = { 3, B, rw, dm, wu, doff, off, ind };
        uint16_t *Wh = calloc((size_t)wn + 1, 2), *Wr = calloc((size_t)wu[3] + 1, 2);
        float *S0 = calloc((size_t)so[3] + 1, 4), *gr = malloc(4 * (size_t)(B * doff[3])), *outr = malloc(4 * (size_t)(B * doff[3]));
        as_ebg_fill_weights(Wh, &h, ids, c.seed, 1);
        as_ebg_fill_grad(gr, &h, ids, c.seed, 1);
        for (int t = 0; t < 3; t++)
            for (int64_t e = 0; e < rw[t] * dm[t]; e++) as_eb_weight_set(Wr, &u, dt, t, e, as_half_to_float(Wh[wo[t] + e]));
        CHECK_EQ_I64(as_eb_validate_typed(&u, dt, kinds[k].o, so, err, sizeof err), 0);
        for (int i = 1; i <= c.warmup + c.runs; i++) {
            as_eb_opt o = { kinds[k].o, c.lr, AS_BENCH_EPS, AS_BENCH_BETA1, AS_BENCH_BETA2, i, 1, 1 };
            CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
            as_eb_forward_typed_ref(outr, Wr, &u, dt);
            as_eb_backward_typed_ref(Wr, S0, gr, &u, dt, so, &o);
        }
        int64_t bw = 0, bo = 0;
        for (int t = 0; t < 3; t++)
            for (int64_t e = 0; e < rw[t] * dm[t]; e++) {
                const float a = as_eb_weight_get(W, &s, dt, t, e), b = as_eb_weight_get(Wr, &u, dt, t, e);
                bw += memcmp(&a, &b, 4) != 0;
            }
        for (int64_t e = 0; e < B * doff[3]; e++) bo += memcmp(&out[e], &outr[e], 4) != 0;
        if (bw || bo) printf("  %s + %s: %lld weights, %lld outputs differ\n", as_eb_dtype_name((as_eb_dtype)kinds[k].wt),
                             as_eb_optim_name(kinds[k].o), (long long)bw, (long long)bo);
        CHECK_EQ_I64(bw, 0);
        CHECK_EQ_I64(bo, 0);
        free(off); free(ind); free(Wh); free(Wr); free(S0); free(gr); free(outr);
        as_bench_session_free(S);
    }
    /* the state: Adagrad a float a row (each table's from a cache line), Adam two a weight */
    CHECK(bytes[0] - bytes[2] == ((3000 + 15) / 16 * 16 + (40 + 15) / 16 * 16 + 16) * 4);
    CHECK(bytes[1] > bytes[0] + (3000 * 32 + 40 * 5) * 4);
    as_bpool_free(&p);
}
