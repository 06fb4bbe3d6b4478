/* test_synth.c - unit tests for lib/data/synth.c: determinism, invariants, table parameters,
 * and the shape of the whole-pool reuse histogram on a small pool.
 * Dimension letters: B batch, L pooling, E rows (hash size), T tables. */
#include "unit.h"
#include "synth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static as_synth_cfg small_cfg(void)
{
    as_synth_cfg c;
    as_synth_defaults(&c);
    c.tables = 40;
    c.batch = 512;
    c.row_scale = 0.001;
    return c;
}

static int same_table(const as_synth_table *a, const as_synth_table *b)
{
    if (a->id != b->id || a->rows != b->rows || a->batch != b->batch || a->lookups != b->lookups) return 0;
    if (memcmp(a->offsets, b->offsets, (size_t)(a->batch + 1) * sizeof *a->offsets)) return 0;
    return a->lookups == 0 || !memcmp(a->indices, b->indices, (size_t)a->lookups * sizeof *a->indices);
}

TEST(synth_defaults)
{
    as_synth_cfg c;
    as_synth_defaults(&c);
    CHECK_EQ_I64(c.tables, 856);
    CHECK_EQ_I64(c.batch, 65536);
    CHECK_EQ_I64((int64_t)c.seed, 0);
    CHECK_NEAR(c.row_scale, 1.0, 0);
    CHECK_NEAR(c.pool_scale, 1.0, 0);
}

TEST(synth_same_seed_same_tables)
{
    as_synth_cfg c = small_cfg();
    for (int64_t t = 0; t < c.tables; t += 7) {
        as_synth_table a, b;
        CHECK_EQ_I64(as_synth_table_gen(&c, t, &a), 0);
        CHECK_EQ_I64(as_synth_table_gen(&c, t, &b), 0);
        CHECK(same_table(&a, &b));
        as_synth_free(&a);
        as_synth_free(&b);
    }
}

TEST(synth_different_seed_differs)
{
    as_synth_cfg c = small_cfg(), d = small_cfg();
    d.seed = 1;
    int differ = 0;
    for (int64_t t = 0; t < 10; t++) {
        as_synth_table a, b;
        CHECK_EQ_I64(as_synth_table_gen(&c, t, &a), 0);
        CHECK_EQ_I64(as_synth_table_gen(&d, t, &b), 0);
        differ += !same_table(&a, &b);
        as_synth_free(&a);
        as_synth_free(&b);
    }
    CHECK_EQ_I64(differ, 10);
    /* and different tables of one seed differ too */
    as_synth_table a, b;
    CHECK_EQ_I64(as_synth_table_gen(&c, 3, &a), 0);
    CHECK_EQ_I64(as_synth_table_gen(&c, 4, &b), 0);
    CHECK(!same_table(&a, &b));
    as_synth_free(&a);
    as_synth_free(&b);
}

TEST(synth_table_alone_equals_in_sequence)
{
    /* table 7 of a 40-table pool generated after 0..6 equals table 7 generated alone in an
     * 8-table pool */
    as_synth_cfg c = small_cfg(), d = small_cfg();
    d.tables = 8;
    as_synth_table seq[8];
    for (int64_t t = 0; t < 8; t++) CHECK_EQ_I64(as_synth_table_gen(&c, t, &seq[t]), 0);
    as_synth_table alone;
    CHECK_EQ_I64(as_synth_table_gen(&d, 7, &alone), 0);
    CHECK(same_table(&seq[7], &alone));
    as_synth_free(&alone);
    for (int64_t t = 0; t < 8; t++) as_synth_free(&seq[t]);
}

TEST(synth_smaller_batch_is_a_prefix)
{
    as_synth_cfg c = small_cfg(), d = small_cfg();
    d.batch = 200;
    for (int64_t t = 0; t < 12; t++) {
        as_synth_params p, q;
        CHECK_EQ_I64(as_synth_table_params(&c, t, &p), 0);
        CHECK_EQ_I64(as_synth_table_params(&d, t, &q), 0);
        CHECK(p.hash == q.hash && p.pooling == q.pooling && p.zipf == q.zipf && p.zipf2 == q.zipf2 &&
              p.knee == q.knee);
        as_synth_table a, b;
        CHECK_EQ_I64(as_synth_table_gen(&c, t, &a), 0);
        CHECK_EQ_I64(as_synth_table_gen(&d, t, &b), 0);
        CHECK(!memcmp(a.offsets, b.offsets, (size_t)(b.batch + 1) * sizeof *a.offsets));
        CHECK(b.lookups <= a.lookups);
        CHECK(b.lookups == 0 || !memcmp(a.indices, b.indices, (size_t)b.lookups * sizeof *a.indices));
        as_synth_free(&a);
        as_synth_free(&b);
    }
}

TEST(synth_invariants)
{
    as_synth_cfg c = small_cfg();
    c.tables = 120;
    c.batch = 700;
    c.row_scale = 0.01;
    int64_t empty = 0, nonempty = 0;
    for (int64_t t = 0; t < c.tables; t++) {
        as_synth_table tb;
        if (!CHECK_EQ_I64(as_synth_table_gen(&c, t, &tb), 0)) continue;
        CHECK_EQ_I64(tb.id, t);
        CHECK_EQ_I64(tb.batch, c.batch);
        CHECK_EQ_I64(tb.offsets[0], 0);
        CHECK_EQ_I64(tb.offsets[c.batch], tb.lookups);
        int mono = 1, inrange = 1;
        for (int64_t b = 0; b < c.batch; b++) mono &= tb.offsets[b + 1] >= tb.offsets[b];
        int32_t mx = -1;
        for (int64_t i = 0; i < tb.lookups; i++) {
            inrange &= tb.indices[i] >= 0 && tb.indices[i] < tb.rows;
            if (tb.indices[i] > mx) mx = tb.indices[i];
        }
        CHECK(mono);
        CHECK(inrange);
        CHECK(tb.rows >= 1);
        if (tb.lookups > 0) { CHECK_EQ_I64(tb.rows, (int64_t)mx + 1); nonempty++; }
        else { CHECK_EQ_I64(tb.rows, 1); empty++; }
        as_synth_params p;
        CHECK_EQ_I64(as_synth_table_params(&c, t, &p), 0);
        CHECK(tb.rows <= p.hash);
        CHECK(p.zipf > 0 && p.zipf2 >= p.zipf && p.knee >= 1 && p.pooling >= 0 && p.pooling <= 193);
        as_synth_free(&tb);
    }
    CHECK(nonempty > 100);
    CHECK_EQ_I64(empty + nonempty, c.tables);
}

TEST(synth_scales_and_bad_config)
{
    as_synth_cfg c;
    as_synth_defaults(&c);
    as_synth_params p, q;
    /* full-scale parameters: hash sizes within [1, 12543670], pooling within [0, 193] */
    int64_t emax = 0, emin = INT64_MAX;
    double esum = 0, lsum = 0;
    for (int64_t t = 0; t < c.tables; t++) {
        CHECK_EQ_I64(as_synth_table_params(&c, t, &p), 0);
        if (p.hash > emax) emax = p.hash;
        if (p.hash < emin) emin = p.hash;
        esum += (double)p.hash;
        lsum += p.pooling;
    }
    CHECK_EQ_I64(emax, 12543670);
    CHECK(emin >= 1 && emin < 1000);
    CHECK_NEAR(esum / (double)c.tables, 4.1e6, 0.4e6);
    CHECK_NEAR(lsum / (double)c.tables, 15.5, 1.5);

    as_synth_cfg d = c;
    d.row_scale = 0.001;
    d.pool_scale = 0.5;
    CHECK_EQ_I64(as_synth_table_params(&c, 5, &p), 0);
    CHECK_EQ_I64(as_synth_table_params(&d, 5, &q), 0);
    CHECK(q.hash >= 1 && q.hash <= p.hash / 1000 + 1);
    CHECK_NEAR(q.pooling, 0.5 * p.pooling, 1e-12);
    CHECK_NEAR(q.zipf, p.zipf, 0);

    as_synth_table tb;
    CHECK_EQ_I64(as_synth_table_gen(&c, -1, &tb), -EINVAL);
    CHECK_EQ_I64(as_synth_table_gen(&c, c.tables, &tb), -EINVAL);
    d = c; d.batch = 0;
    CHECK_EQ_I64(as_synth_table_gen(&d, 0, &tb), -EINVAL);
    d = c; d.row_scale = 0;
    CHECK_EQ_I64(as_synth_table_params(&d, 0, &p), -EINVAL);
    d = c; d.pool_scale = -1;
    CHECK_EQ_I64(as_synth_table_params(&d, 0, &p), -EINVAL);
    as_synth_free(&tb); /* safe on a failed table */

    /* pool_scale 0: every table empty, rows 1 */
    d = small_cfg(); d.pool_scale = 0;
    CHECK_EQ_I64(as_synth_table_gen(&d, 3, &tb), 0);
    CHECK_EQ_I64(tb.lookups, 0);
    CHECK_EQ_I64(tb.rows, 1);
    as_synth_free(&tb);
}

/* Scaling rows and batch by the same factor keeps the distinct-row reuse histogram close
 * to MetaSyn's published one; 200 tables at 1% give ~2M lookups. */
TEST(synth_reuse_histogram_shape)
{
    static const double pub[10] = {0.473, 0.152, 0.139, 0.112, 0.072, 0.032, 0.011, 0.005, 0.002, 0.001};
    as_synth_cfg c;
    as_synth_defaults(&c);
    c.tables = 200;
    c.batch = 655;
    c.row_scale = 0.01;
    int64_t bins[17] = {0}, distinct = 0, lookups = 0;
    uint32_t *cnt = calloc(200000, sizeof *cnt);
    if (!CHECK(cnt != NULL)) return;
    for (int64_t t = 0; t < c.tables; t++) {
        as_synth_table tb;
        if (!CHECK_EQ_I64(as_synth_table_gen(&c, t, &tb), 0)) continue;
        if (!CHECK(tb.rows <= 200000)) { as_synth_free(&tb); continue; }
        for (int64_t i = 0; i < tb.lookups; i++) cnt[tb.indices[i]]++;
        for (int64_t i = 0; i < tb.lookups; i++) {
            uint32_t k = cnt[tb.indices[i]];
            if (!k) continue;
            int b = k <= 1 ? 0 : k > 32768 ? 16 : 32 - __builtin_clz(k - 1);
            bins[b]++;
            distinct++;
            cnt[tb.indices[i]] = 0;
        }
        lookups += tb.lookups;
        as_synth_free(&tb);
    }
    free(cnt);
    CHECK(lookups > 1000000);
    CHECK(distinct > 100000);
    for (int b = 0; b < 10; b++) CHECK_NEAR((double)bins[b] / (double)distinct, pub[b], 0.02);
    for (int b = 10; b < 17; b++) CHECK((double)bins[b] / (double)distinct < 0.003);
}
