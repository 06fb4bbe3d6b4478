/* test_features.c - features computed by hand on small tables; sharding tasks. */
#include "unit.h"
#include "featurize.h"
#include "tasks.h"
#include "common.h"
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

static as_array arr32(const int32_t *v, int64_t n) { return tsup_array(v, n, AS_DT_I32); }

static as_array arr64(const int64_t *v, int64_t n) { return tsup_array(v, n, AS_DT_I64); }

TEST(features_count_bins)
{
    CHECK_EQ_I64(as_count_bin(1), 0);
    CHECK_EQ_I64(as_count_bin(2), 1);
    CHECK_EQ_I64(as_count_bin(3), 2);
    CHECK_EQ_I64(as_count_bin(4), 2);
    CHECK_EQ_I64(as_count_bin(5), 3);
    CHECK_EQ_I64(as_count_bin(8), 3);
    CHECK_EQ_I64(as_count_bin(9), 4);
    CHECK_EQ_I64(as_count_bin(16384), 14);
    CHECK_EQ_I64(as_count_bin(16385), 15);
    CHECK_EQ_I64(as_count_bin(32768), 15);
    CHECK_EQ_I64(as_count_bin(32769), 16);
    CHECK_EQ_I64(as_count_bin(1u << 30), 16);
}

TEST(features_hand_computed_table)
{
    /* 4 bags, the second empty; row 1 is used 5 times, rows 2, 3, 4 once */
    int32_t off[] = { 0, 3, 3, 7, 8 };
    int32_t idx[] = { 1, 1, 2, 3, 1, 1, 4, 1 };
    as_array o = arr32(off, 5), i = arr32(idx, 8);
    as_feat_scratch s = { 0 };
    as_features f;
    char err[256];
    CHECK_EQ_I64(as_features_compute(&f, &s, 7, 10, 16, &o, &i, err, sizeof err), 0);
    CHECK_EQ_I64(f.id, 7);
    CHECK_EQ_I64(f.rows, 10);
    CHECK_EQ_I64(f.batch, 4);
    CHECK_EQ_I64(f.lookups, 8);
    CHECK_EQ_I64(f.distinct, 4);
    CHECK_EQ_I64(f.max_bag, 4);
    CHECK_NEAR(f.pooling, 2.0, 0);
    CHECK_EQ_I64(f.bytes_fp16, 320);
    CHECK_EQ_I64(f.bytes_fp32, 640);
    CHECK_NEAR(f.size_gib, 320.0 / 1073741824.0, 1e-18);
    double want[AS_NBINS] = { 0.75, 0, 0, 0.25 };
    double wantl[AS_NBINS] = { 3.0 / 8, 0, 0, 5.0 / 8 };
    double sum = 0;
    for (int k = 0; k < AS_NBINS; k++) {
        CHECK_NEAR(f.bins[k], want[k], 0);
        CHECK_NEAR(f.lookup_bins[k], wantl[k], 0);
        sum += f.bins[k];
    }
    CHECK_NEAR(sum, 1.0, 1e-12);
    double v[AS_NFEATURES];
    as_features_vector(&f, v);
    CHECK_NEAR(v[0], 16, 0);
    CHECK_NEAR(v[1], 10, 0);
    CHECK_NEAR(v[2], 2, 0);
    CHECK_NEAR(v[3], f.size_gib, 0);
    CHECK_NEAR(v[4], 0.75, 0);
    CHECK_NEAR(v[7], 0.25, 0);
    /* the scratch counts are clean again: the same table gives the same answer */
    as_features g;
    CHECK_EQ_I64(as_features_compute(&g, &s, 7, 10, 16, &o, &i, err, sizeof err), 0);
    CHECK(memcmp(f.bins, g.bins, sizeof f.bins) == 0);
    as_feat_scratch_free(&s);
}

TEST(features_one_row_no_lookups_and_int64)
{
    as_feat_scratch s = { 0 };
    as_features f;
    char err[256];
    int64_t off1[] = { 0, 2, 2, 5 };
    int64_t idx1[] = { 0, 0, 0, 0, 0 };
    as_array o = arr64(off1, 4), i = arr64(idx1, 5);
    CHECK_EQ_I64(as_features_compute(&f, &s, 0, 1, 32, &o, &i, err, sizeof err), 0);
    CHECK_EQ_I64(f.distinct, 1);
    CHECK_NEAR(f.bins[3], 1.0, 0);      /* 5 accesses: (4,8] */
    CHECK_NEAR(f.lookup_bins[3], 1.0, 0);
    CHECK_EQ_I64(f.max_bag, 3);
    int32_t off0[] = { 0, 0, 0 };
    as_array o0 = arr32(off0, 3), i0 = arr32(NULL, 0);
    CHECK_EQ_I64(as_features_compute(&f, &s, 1, 100, 16, &o0, &i0, err, sizeof err), 0);
    CHECK_EQ_I64(f.lookups, 0);
    CHECK_EQ_I64(f.distinct, 0);
    CHECK_NEAR(f.pooling, 0, 0);
    for (int k = 0; k < AS_NBINS; k++) CHECK_NEAR(f.bins[k], 0, 0);
    as_feat_scratch_free(&s);
}

TEST(features_index_out_of_range_is_an_error)
{
    as_feat_scratch s = { 0 };
    as_features f;
    char err[256] = "";
    int32_t off[] = { 0, 2, 4 };
    int32_t idx[] = { 1, 2, 9, 0 };
    as_array o = arr32(off, 3), i = arr32(idx, 4);
    CHECK_EQ_I64(as_features_compute(&f, &s, 3, 5, 16, &o, &i, err, sizeof err), -1);
    CHECK(strstr(err, "indices[2] = 9 is outside [0, rows = 5)") != NULL);
    int32_t neg[] = { 1, -1, 2, 0 };
    i = arr32(neg, 4);
    CHECK_EQ_I64(as_features_compute(&f, &s, 3, 5, 16, &o, &i, err, sizeof err), -1);
    /* nothing left behind in the scratch counts */
    int32_t ok[] = { 1, 1, 1, 1 };
    i = arr32(ok, 4);
    CHECK_EQ_I64(as_features_compute(&f, &s, 3, 5, 16, &o, &i, err, sizeof err), 0);
    CHECK_EQ_I64(f.distinct, 1);
    CHECK_NEAR(f.bins[2], 1.0, 0);
    int32_t dec[] = { 0, 3, 2 };
    o = arr32(dec, 3);
    i = arr32(ok, 2);
    CHECK_EQ_I64(as_features_compute(&f, &s, 3, 5, 16, &o, &i, err, sizeof err), -1);
    as_feat_scratch_free(&s);
}

static void pool(int64_t n, int64_t *ids, int64_t *bytes)
{
    for (int64_t i = 0; i < n; i++) { ids[i] = i; bytes[i] = 1000 + 10 * i; }
}

TEST(tasks_deterministic_disjoint_and_well_formed)
{
    int64_t ids[200], bytes[200];
    pool(200, ids, bytes);
    as_task_cfg c = { 100, 10, 80, 0, 42, 0, -1 };
    as_task *a, *b;
    char err[256];
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 200, &a, err, sizeof err), 0);
    /* the same pool in another order gives the same tasks */
    int64_t rid[200], rbytes[200];
    for (int i = 0; i < 200; i++) { rid[i] = ids[199 - i]; rbytes[i] = bytes[199 - i]; }
    CHECK_EQ_I64(as_tasks_make(&c, rid, rbytes, 200, &b, err, sizeof err), 0);
    int ntest = 0;
    for (int t = 0; t < 100; t++) {
        CHECK_EQ_I64(a[t].ntables, 80);
        CHECK_EQ_I64(a[t].shards, 8);
        CHECK(memcmp(a[t].tables, b[t].tables, 80 * sizeof(int64_t)) == 0);
        uint64_t sum = 0;
        for (int k = 0; k < 80; k++) {
            if (k) CHECK(a[t].tables[k] > a[t].tables[k - 1]);
            sum += (uint64_t)(1000 + 10 * a[t].tables[k]);
        }
        CHECK_EQ_I64(a[t].bytes, sum);
        ntest += a[t].test;
        if (a[t].test)
            for (int u = 0; u < 90; u++) CHECK(memcmp(a[t].tables, a[u].tables, 80 * sizeof(int64_t)) != 0);
    }
    CHECK_EQ_I64(ntest, 10);
    CHECK(!a[89].test && a[90].test);
    as_tasks_free(b, 100);
    c.seed = 43;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 200, &b, err, sizeof err), 0);
    CHECK(memcmp(a[0].tables, b[0].tables, 80 * sizeof(int64_t)) != 0);
    as_tasks_free(a, 100);
    as_tasks_free(b, 100);
}

TEST(tasks_transfer_setting)
{
    int64_t ids[300], bytes[300];
    pool(300, ids, bytes);
    as_task_cfg c = { 20, 5, 80, 0, 1, 0, 0.25 };
    as_task *a;
    char err[256];
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 300, &a, err, sizeof err), 0);
    for (int t = 0; t < 20; t++) {
        int unseen = 0;
        for (int k = 0; k < 80; k++) unseen += a[t].tables[k] >= 150;
        CHECK_EQ_I64(unseen, a[t].test ? 20 : 0);
        CHECK_EQ_I64(a[t].unseen, unseen);
    }
    as_tasks_free(a, 20);
    c.unseen_ratio = 1.0;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 300, &a, err, sizeof err), 0);
    for (int k = 0; k < 80; k++) CHECK(a[19].tables[k] >= 150);
    as_tasks_free(a, 20);
}

TEST(tasks_refusals)
{
    int64_t ids[100], bytes[100];
    pool(100, ids, bytes);
    as_task *a;
    char err[256] = "";
    as_task_cfg c = { 10, 1, 120, 0, 0, 0, -1 };
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), -1);
    CHECK(strstr(err, "the pool, which has 100") != NULL);
    c.tables = 80;
    c.unseen_ratio = 0.5;   /* 40 seen + 40 unseen fine, but training needs 80 seen of 50 */
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), -1);
    c.unseen_ratio = -1;
    c.mem_cap = 1000;       /* every table is >= 1000 bytes, 8 shards hold 8000 < 80 tables */
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), -1);
    CHECK(strstr(err, "is larger than a shard's memory cap") != NULL);
    c.mem_cap = 11000;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), -1);
    CHECK(strstr(err, "8 shards x the cap hold") != NULL);
    c.mem_cap = 200000;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), 0);
    as_tasks_free(a, 10);
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 0, &a, err, sizeof err), -1);
    ids[5] = 4;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 100, &a, err, sizeof err), -1);
    CHECK(strstr(err, "appears twice") != NULL);
}
