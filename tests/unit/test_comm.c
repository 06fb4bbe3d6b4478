/* test_comm.c - an item's communication (lib/comm.h) by hand: the bytes of a whole table, of
 * a row piece (its own lookups, full-width outputs) and of a column piece (every lookup,
 * its share of the outputs); the milliseconds at a bandwidth, 0 at none. */
#include "unit.h"

#include "comm.h"
#include "fixtures.h"

#include <math.h>
#include <string.h>

static as_array arr32(const int32_t *v, int64_t n) { return tsup_array(v, n, AS_DT_I32); }

/* table 5 of 10 rows x 16 columns, 4 bags (the second empty), 8 lookups: row 1 five times,
 * rows 2, 3, 4 once */
static const int32_t OFF[] = { 0, 3, 3, 7, 8 };
static const int32_t IDX[] = { 1, 1, 2, 3, 1, 1, 4, 1 };

TEST(comm_whole_table_bytes)
{
    as_array o = arr32(OFF, 5), i = arr32(IDX, 8);
    as_feat_scratch s = { 0 };
    as_features f;
    char err[256];
    memset(&f, 0, sizeof f);
    CHECK_EQ_I64(as_features_compute(&f, &s, 5, 10, 16, &o, &i, err, sizeof err), 0);
    as_feat_scratch_free(&s);
    CHECK_EQ_I64(f.lookups, 8);
    CHECK_EQ_I64(f.batch, 4);
    double in = -1, out = -1;
    as_comm_bytes(&f, &in, &out);
    CHECK_NEAR(in, 64, 0);      /* 8 lookups x 8 bytes */
    CHECK_NEAR(out, 512, 0);    /* 2 x 4 bags x 16 dims x 4 bytes */
    /* 576 bytes at 1 GiB/s: 576 / 2^30 s */
    CHECK_NEAR(as_comm_ms(&f, 1.0), 576.0 / 1073741824.0 * 1e3, 1e-18);
    /* at the default 600 GiB/s */
    CHECK_NEAR(as_comm_ms(&f, AS_COMM_GBPS), 576.0 / (600.0 * 1073741824.0) * 1e3, 1e-20);
    /* twice the bandwidth, half the time */
    CHECK_NEAR(as_comm_ms(&f, 2.0), 0.5 * as_comm_ms(&f, 1.0), 1e-20);
}

TEST(comm_row_and_column_pieces)
{
    as_array o = arr32(OFF, 5), i = arr32(IDX, 8);
    as_feat_scratch s = { 0 };
    as_features w, r, c;
    char err[256];
    memset(&w, 0, sizeof w);
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    CHECK_EQ_I64(as_features_compute(&w, &s, 5, 10, 16, &o, &i, err, sizeof err), 0);
    /* the row piece [0, 2): only the 5 lookups of row 1; its outputs are full-width partial
     * sums over all 4 bags */
    CHECK_EQ_I64(as_features_row_piece(&r, &s, 5, 10, 16, &o, &i, 0, 2, err, sizeof err), 0);
    as_feat_scratch_free(&s);
    CHECK_EQ_I64(r.lookups, 5);
    CHECK_EQ_I64(r.dim, 16);
    double in = -1, out = -1;
    as_comm_bytes(&r, &in, &out);
    CHECK_NEAR(in, 40, 0);      /* 5 x 8 */
    CHECK_NEAR(out, 512, 0);    /* 2 x 4 x 16 x 4: the same as the whole table's */
    /* the row piece [2, 10): the other 3 lookups; the two pieces' ids add up to the table's,
     * their outputs are twice its */
    as_features r2;
    memset(&r2, 0, sizeof r2);
    CHECK_EQ_I64(as_features_row_piece(&r2, &s, 5, 10, 16, &o, &i, 2, 10, err, sizeof err), 0);
    as_feat_scratch_free(&s);
    double in2, out2;
    as_comm_bytes(&r2, &in2, &out2);
    CHECK_NEAR(in2, 24, 0);     /* 3 x 8 */
    CHECK_NEAR(in + in2, 64, 0);
    CHECK_NEAR(out2, 512, 0);
    /* the column piece [4, 12): every lookup, 8 of the 16 columns */
    CHECK_EQ_I64(as_features_cols(&c, &w, 4, 12), 0);
    CHECK_EQ_I64(c.dim, 8);
    CHECK_EQ_I64(c.lookups, 8);
    as_comm_bytes(&c, &in, &out);
    CHECK_NEAR(in, 64, 0);      /* 8 x 8: a column piece receives every id */
    CHECK_NEAR(out, 256, 0);    /* 2 x 4 x 8 x 4 */
    /* (64 + 256) bytes at 2 GiB/s */
    CHECK_NEAR(as_comm_ms(&c, 2.0), 320.0 / (2.0 * 1073741824.0) * 1e3, 1e-20);
    /* the four column quarters' outputs add up to the table's */
    double sum = 0;
    for (int q = 0; q < 4; q++) {
        as_features cq;
        memset(&cq, 0, sizeof cq);
        CHECK_EQ_I64(as_features_cols(&cq, &w, 4 * q, 4 * q + 4), 0);
        as_comm_bytes(&cq, &in, &out);
        CHECK_NEAR(in, 64, 0);
        sum += out;
    }
    CHECK_NEAR(sum, 512, 0);
}

TEST(comm_large_figures_and_no_bandwidth)
{
    /* features set by hand: 65536 x 100 lookups, batch 65536, dim 128 */
    as_features f;
    memset(&f, 0, sizeof f);
    f.lookups = (int64_t)65536 * 100;
    f.batch = 65536;
    f.dim = 128;
    double in, out;
    as_comm_bytes(&f, &in, &out);
    CHECK_NEAR(in, 52428800.0, 0);      /* 6553600 x 8 = 50 MiB */
    CHECK_NEAR(out, 67108864.0, 0);     /* 2 x 65536 x 128 x 4 = 64 MiB */
    /* 114 MiB at 1 GiB/s: 114 / 1024 s = 111.328125 ms */
    CHECK_NEAR(as_comm_ms(&f, 1.0), 111.328125, 1e-9);
    /* at 600 GiB/s: 111.328125 / 600 */
    CHECK_NEAR(as_comm_ms(&f, 600.0), 111.328125 / 600.0, 1e-12);
    /* no bandwidth: nothing charged */
    CHECK(as_comm_ms(&f, 0.0) == 0.0);
    CHECK(as_comm_ms(&f, -5.0) == 0.0);
    CHECK(as_comm_ms(&f, -INFINITY) == 0.0);
    CHECK(as_comm_ms(&f, NAN) == 0.0);      /* not above 0 either */
    /* an item with no lookups still sends its (zero) outputs: only the outputs count */
    f.lookups = 0;
    as_comm_bytes(&f, &in, &out);
    CHECK_NEAR(in, 0, 0);
    CHECK_NEAR(out, 67108864.0, 0);
    CHECK_NEAR(as_comm_ms(&f, 1.0), 62.5, 1e-12);   /* 64 MiB / 1024 MiB/s */
    /* nothing at all: 0 ms at any bandwidth */
    memset(&f, 0, sizeof f);
    CHECK(as_comm_ms(&f, 600.0) == 0.0);
}
