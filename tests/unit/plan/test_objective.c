/* test_objective.c - the planners' one objective (lib/plan/objective.h) and the pins of
 * TorchRec's row_wise (lib/plan/pins.h): the incremental state after random puts and takes
 * equals a recomputation from scratch, and both equal the definition worked out here (kernel:
 * the model's cost of the shard's summed vector; communication: own bytes plus the share of
 * everyone's, the all-reduce, each type's alphas); row_wise blocks are pinned, kept on their
 * ranks by every planner and by the refinement. */
#include "unit.h"

#include "common.h"
#include "comm.h"
#include "fixtures.h"
#include "objective.h"
#include "pins.h"
#include "plan.h"
#include "reclimits.h"
#include "refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a model with a split head: rep [dim x pooling / 100, rows / 1e5], pre the identity,
 * post sqrt(z0^2 + 1) + z1 / 2: not linear, so sums matter */
static void nl_embed(void *ctx, const as_features *f, float *out)
{
    (void)ctx;
    out[0] = (float)(f->dim * f->pooling / 100.0);
    out[1] = (float)(f->rows / 1e5);
}
static double nl_post(void *ctx, const float *z)
{
    (void)ctx;
    return sqrt((double)z[0] * z[0] + 1.0) + 0.5 * z[1];
}
static void nl_pre(void *ctx, const float *s, float *z)
{
    (void)ctx;
    z[0] = s[0];
    z[1] = s[1];
}
static double nl_head(void *ctx, const float *s) { return nl_post(ctx, s); }
static const as_plan_model NL = { NULL, 2, nl_embed, nl_head, 2, nl_pre, nl_post };

/* items: 6 whole tables, table 10 in 4 row_wise blocks (K = 4), table 11 in 2 column pieces */
static int64_t make_items(as_features *it)
{
    as_rng r;
    as_rng_seed(&r, 9, 0);
    int64_t n = 0;
    for (int i = 0; i < 6; i++) it[n++] = tsup_random_features(&r, i);
    as_features big = tsup_features(10, 32, 1000, 20, 100, 2000), wide = tsup_features(11, 64, 500, 5, 100, 500);
    as_piece bl[4];
    const int64_t nb = as_piece_row_blocks(big.rows, big.dim, 4, bl);
    for (int64_t j = 0; j < nb; j++) {
        it[n] = big;
        it[n].piece = bl[j];
        it[n].rows = bl[j].r1 - bl[j].r0;
        it[n].bytes_fp16 = it[n].rows * big.dim * 2;
        it[n].lookups = big.lookups / 4;
        n++;
    }
    for (int j = 0; j < 2; j++) CHECK_EQ_I64(as_features_cols(&it[n++], &wide, 32 * j, 32 * (j + 1)), 0);
    for (int64_t i = 0; i < n; i++) it[i].batch = 100 + 10 * i;
    return n;
}

/* shard k's cost worked out from the definition, for the assignment a[] */
static double by_definition(const as_plan_cfg *c, const as_comm_model *cm, const as_features *const *t, int64_t n,
                            const int64_t *a, int64_t k)
{
    const int64_t K = c->shards;
    float s[2] = { 0, 0 }, d[2] = { 0, 0 };
    int64_t cnt = 0, ndp = 0;
    as_comm_load l;
    memset(&l, 0, sizeof l);
    as_shtype type[32];
    as_comm_types(t, n, type);
    for (int64_t i = 0; i < n; i++) {
        float e[2];
        NL.embed(NULL, t[i], e);
        if (a[i] == AS_DP) {
            d[0] += e[0], d[1] += e[1];
            ndp++;
            l.ar += as_plan_dp_comm_bytes(t[i], K);
            continue;
        }
        if (a[i] < 0) continue;
        double bi, bo;
        as_comm_bytes(t[i], &bi, &bo);
        l.all_in[type[i]] += bi;
        l.all_out[type[i]] += bo;
        l.has[type[i]] = 1;
        if (a[i] == k) {
            s[0] += e[0], s[1] += e[1];
            cnt++;
            l.own_in[type[i]] += bi;
            l.own_out[type[i]] += bo;
        }
    }
    l.has[AS_SH_DP] = ndp > 0;
    return (cnt ? nl_post(NULL, s) : 0) + (ndp ? nl_post(NULL, d) / (double)K : 0) + as_comm_plan_shard_ms(cm, K, &l, NULL);
}

static void check_random_walk(const as_comm_model *cm)
{
    as_features f[32];
    const as_features *t[32];
    const int64_t n = make_items(f), K = 4;
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    const as_plan_cfg c = { .shards = K, .model = &NL, .comm_gbps = cm->ab ? 0 : cm->gbps, .comm_model = cm->ab ? cm : NULL };
    as_objective o;
    as_obj_init(&o, &c, t, n);
    int64_t a[32];
    for (int64_t i = 0; i < n; i++) a[i] = -1;
    as_rng r;
    as_rng_seed(&r, 17, 1);
    int bad = 0;
    for (int step = 0; step < 400 && !bad; step++) {
        const int64_t i = (int64_t)as_rng_below(&r, (uint64_t)n);
        if (a[i] != -1 && as_rng_below(&r, 3) == 0) {
            as_obj_take(&o, i);
            a[i] = -1;
        } else {
            /* a whole table may go data parallel */
            const int64_t k = as_piece_whole(&f[i].piece) && as_rng_below(&r, 5) == 0 ? AS_DP : (int64_t)as_rng_below(&r, K);
            as_obj_take(&o, i);
            as_obj_put(&o, i, k);
            a[i] = k;
        }
        /* from scratch, and by the definition */
        as_objective z;
        as_obj_init(&z, &c, t, n);
        as_obj_load(&z, a);
        for (int64_t k = 0; k < K; k++) {
            as_obj_cost br;
            const double inc = as_obj_shard(&o, k, &br), full = as_obj_shard(&z, k, NULL), def = by_definition(&c, cm, t, n, a, k);
            double parts = br.kernel + br.dp;
            for (int q = 0; q < AS_NSH; q++) parts += br.comm[q];
            bad |= !CHECK_NEAR(inc, full, 1e-9 * (1 + fabs(full)));
            bad |= !CHECK_NEAR(inc, def, 1e-6 * (1 + fabs(def)));
            bad |= !CHECK_NEAR(parts, br.total, 1e-12 * (1 + fabs(parts)));
            /* the local search's split of it: kernel + own items' part + shared + dp, equal
               under the bandwidth model, a bound from above under the collectives' */
            double ownsum = 0;
            for (int64_t j = 0; j < n; j++)
                if (a[j] == k) ownsum += as_obj_own_ms(&o, j);
            const double split = as_obj_kernel_with(&o, k, -1, -1) + ownsum + as_obj_shared_ms(&o) + as_obj_dp_ms(&o);
            if (cm->ab) bad |= !CHECK(inc <= split + 1e-9 * (1 + fabs(inc)));
            else bad |= !CHECK_NEAR(inc, split, 1e-9 * (1 + fabs(inc)));
        }
        int64_t s, s2;
        const double mx = as_obj_max(&o, NULL, &s), mz = as_obj_max(&z, NULL, &s2);
        bad |= !CHECK_NEAR(mx, mz, 1e-9 * (1 + mz));
        bad |= !CHECK_NEAR(mx, as_obj_shard(&o, s, NULL), 0);
        as_obj_free(&z);
    }
    as_obj_free(&o);
}

TEST(objective_incremental_equals_recomputed_bandwidth)
{
    const as_comm_model cm = as_comm_bandwidth(0.5);
    check_random_walk(&cm);
}

TEST(objective_incremental_equals_recomputed_alpha_beta)
{
    as_comm_model cm;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &cm, err, sizeof err), 0);
    check_random_walk(&cm);
}

TEST(objective_without_communication_is_the_kernel)
{
    as_features f[32];
    const as_features *t[32];
    const int64_t n = make_items(f);
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    const as_plan_cfg c = { .shards = 3, .model = &NL };
    as_objective o;
    as_obj_init(&o, &c, t, n);
    CHECK_NEAR(as_obj_max(&o, NULL, NULL), 0, 0);   /* nothing placed */
    as_obj_put(&o, 0, 2);
    as_obj_put(&o, 1, 2);
    float e0[2], e1[2];
    nl_embed(NULL, &f[0], e0);
    nl_embed(NULL, &f[1], e1);
    const float s[2] = { e0[0] + e1[0], e0[1] + e1[1] };
    int64_t k;
    CHECK_NEAR(as_obj_max(&o, NULL, &k), nl_post(NULL, s), 1e-9);
    CHECK_EQ_I64(k, 2);
    CHECK_NEAR(as_obj_comm(&o, 2, NULL), 0, 0);
    /* a plan's own kernels given: they replace the model's */
    const double kern[3] = { 5, 1, 2 };
    CHECK_NEAR(as_obj_max(&o, kern, &k), 5, 0);
    CHECK_EQ_I64(k, 0);
    as_obj_free(&o);
}

/* ---- pins ---- */

TEST(pins_are_torchrec_row_wise_blocks)
{
    as_features f[32];
    const as_features *t[32];
    const int64_t n = make_items(f);
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    int64_t pin[32];
    /* K = 4: table 10's 4 blocks, block j on rank j; the rest free */
    CHECK_EQ_I64(as_plan_pins(t, n, 4, pin), 4);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(pin[i], f[i].id == 10 ? (f[i].piece.r0 / 250) : -1);
    /* in any order */
    const as_features *rv[32];
    for (int64_t i = 0; i < n; i++) rv[i] = t[n - 1 - i];
    CHECK_EQ_I64(as_plan_pins(rv, n, 4, pin), 4);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(pin[i], rv[i]->id == 10 ? (rv[i]->piece.r0 / 250) : -1);
    /* other ranks: not TorchRec's cut for K = 8 or 2 */
    CHECK_EQ_I64(as_plan_pins(t, n, 8, pin), 0);
    CHECK_EQ_I64(as_plan_pins(t, n, 2, pin), 0);
    /* a table of fewer rows than ranks: its blocks of one row, on ranks 0..rows-1 */
    as_features small = tsup_features(20, 8, 3, 1, 100, 30), s3[3];
    as_piece bl[8];
    CHECK_EQ_I64(as_piece_row_blocks(3, 8, 8, bl), 3);
    const as_features *ts[3];
    for (int j = 0; j < 3; j++) {
        s3[j] = small;
        s3[j].piece = bl[j];
        s3[j].rows = 1;
        ts[j] = &s3[j];
    }
    CHECK_EQ_I64(as_plan_pins(ts, 3, 8, pin), 3);
    for (int j = 0; j < 3; j++) CHECK_EQ_I64(pin[j], j);
    /* the first block missing: not row_wise (a missing last block is a smaller table's cut:
       the pieces' cover of their table is checked where the tables' sizes are known) */
    CHECK_EQ_I64(as_plan_pins(ts + 1, 2, 8, pin), 0);
}

/* table n's nb row blocks of a table of `rows` rows into out; how many */
static int64_t row_blocks(as_features *out, int64_t id, int64_t rows, int64_t nb, int64_t lookups)
{
    const as_features whole = tsup_features(id, 32, rows, 20, 100, lookups);
    as_piece bl[64];
    const int64_t k = as_piece_row_blocks(rows, 32, nb, bl);
    for (int64_t j = 0; j < k; j++) {
        out[j] = whole;
        out[j].piece = bl[j];
        out[j].rows = bl[j].r1 - bl[j].r0;
        out[j].lookups = lookups / k;
    }
    return k;
}

/* TorchRec's table_row_wise: a table's L blocks on one host of L ranks (K a multiple of L
   above it), the tables spread over the hosts by their work, heaviest first; a table of at
   most L rows counts as table_row_wise under hosts; without hosts, as as_plan_pins */
TEST(pins_table_row_wise_on_a_host)
{
    as_features f[32];
    const as_features *t[32];
    int64_t n = make_items(f);
    /* table 12 in 4 blocks too, with 10 times the lookups */
    n += row_blocks(f + n, 12, 1000, 4, 20000);
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    int64_t pin[32];
    unsigned char tw[32];
    /* K = 8 in hosts of 4: both tables table_row_wise, the heavier (12) on host 0 */
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, NULL, pin, tw), 8);
    for (int64_t i = 0; i < n; i++) {
        const int64_t host = f[i].id == 12 ? 0 : 1, want = f[i].id >= 10 && f[i].id != 11 ? host * 4 + f[i].piece.r0 / 250 : -1;
        CHECK_EQ_I64(pin[i], want);
        CHECK_EQ_I64(tw[i], want >= 0);
    }
    /* work given: table 10 now the heavier, on host 0 */
    double work[32];
    for (int64_t i = 0; i < n; i++) work[i] = f[i].id == 10 ? 100 : 1;
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, work, pin, tw), 8);
    for (int64_t i = 0; i < n; i++)
        if (f[i].id == 10 || f[i].id == 12) CHECK_EQ_I64(pin[i] / 4, f[i].id == 10 ? 0 : 1);
    /* no hosts: K not a multiple of L, or K <= L; K = 4 is the blocks' row_wise */
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 3, NULL, pin, tw), 0);
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 4, 4, NULL, pin, tw), 8);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(tw[i], 0);
    /* a table of 3 rows in 16 ranks, hosts of 8: its blocks of a row are table_row_wise */
    as_features s3[3];
    const as_features *ts[3];
    CHECK_EQ_I64(row_blocks(s3, 20, 3, 8, 300), 3);
    for (int j = 0; j < 3; j++) ts[j] = &s3[j];
    CHECK_EQ_I64(as_plan_pins_hosts(ts, 3, 16, 8, NULL, pin, tw), 3);
    for (int j = 0; j < 3; j++) CHECK(pin[j] == j && tw[j] == 1);
    CHECK_EQ_I64(as_plan_pins_hosts(ts, 3, 16, 0, NULL, pin, tw), 3);
    for (int j = 0; j < 3; j++) CHECK(pin[j] == j && tw[j] == 0);
}

/* every planner keeps the pinned blocks on their ranks; the refinement never moves them; a
 * cap that leaves no room on a block's rank leaves it unplaced */
TEST(pins_kept_by_every_planner_and_the_refinement)
{
    as_features f[32];
    const as_features *t[32];
    const int64_t n = make_items(f), K = 4;
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    int64_t pin[32];
    as_plan_pins(t, n, K, pin);
    const as_alg algs[] = { AS_ALG_RANDOM, AS_ALG_SIZE, AS_ALG_DIM, AS_ALG_LOOKUP, AS_ALG_SIZE_LOOKUP, AS_ALG_COST };
    char err[256];
    for (size_t q = 0; q < sizeof algs / sizeof *algs; q++) {
        for (int comm = 0; comm < 2; comm++) {
            const as_plan_cfg c = { .alg = algs[q], .shards = K, .seed = 3, .model = &NL, .comm_gbps = comm ? 1.0 : 0 };
            as_plan p;
            CHECK_EQ_I64(as_plan_make(&p, &c, t, n, err, sizeof err), 0);
            CHECK(p.feasible);
            for (int64_t i = 0; i < n; i++)
                if (pin[i] >= 0) CHECK_EQ_I64(p.assign[i], pin[i]);
            CHECK_EQ_I64(as_plan_refine(&p, &c, t, n, 0, 0, err, sizeof err), 0);
            for (int64_t i = 0; i < n; i++)
                if (pin[i] >= 0) CHECK_EQ_I64(p.assign[i], pin[i]);
            as_plan_free(&p);
        }
    }
    /* a cap below one block's bytes: no block fits on its rank, each is left unplaced (never
       put on another rank) */
    const uint64_t blk = as_plan_table_bytes(t[6]);
    const as_plan_cfg c = { .alg = AS_ALG_SIZE, .shards = K, .mem_cap = blk - 1, .model = &NL };
    as_plan p;
    CHECK_EQ_I64(as_plan_make(&p, &c, t, n, err, sizeof err), 0);
    CHECK(!p.feasible);
    for (int64_t i = 0; i < n; i++)
        if (pin[i] >= 0) CHECK_EQ_I64(p.assign[i], -1);
    as_plan_free(&p);
}
