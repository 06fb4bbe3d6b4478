/* test_comm.c - an item's communication (lib/records/comm.h) by hand: the bytes of a whole table, of
 * a row piece (its own lookups, full-width outputs) and of a column piece (every lookup,
 * its share of the outputs); the milliseconds at a bandwidth, 0 at none. */
#include "unit.h"

#include "comm.h"
#include "fixtures.h"
#include "jsonparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* --comm-model's values: the built-in nvlink8's constants (lib/records/comm.h: 10.5 us + 370 GB/s,
   6.6 + 7 x 0.6 us + 370 GB/s, 6.6 + 14 x 0.6 us + 480 GB/s), a user's own, and values refused
   with a reason */
TEST(comm_model_parse)
{
    as_comm_model m;
    char err[512];
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &m, err, sizeof err), 0);
    CHECK_EQ_I64(m.ab, 1);
    CHECK_NEAR(m.alpha_us[AS_COLL_A2A], 10.5, 0);
    CHECK_NEAR(m.beta_gbs[AS_COLL_A2A], 370, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_RS], 10.8, 1e-12);
    CHECK_NEAR(m.beta_gbs[AS_COLL_RS], 370, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_AG], 10.8, 1e-12);
    CHECK_NEAR(m.beta_gbs[AS_COLL_AG], 370, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_AR], 15.0, 1e-12);
    CHECK_NEAR(m.beta_gbs[AS_COLL_AR], 480, 0);
    CHECK_EQ_I64(m.max_ranks, 8);
    CHECK_STR(m.name, "nvlink8");
    CHECK_EQ_I64(as_comm_model_parse("1/100,2.5/200,0/4e2", &m, err, sizeof err), 0);
    CHECK_NEAR(m.alpha_us[0], 1, 0);
    CHECK_NEAR(m.beta_gbs[0], 100, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_RS], 2.5, 0);
    CHECK_NEAR(m.beta_gbs[AS_COLL_AG], 200, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_AR], 0, 0);
    CHECK_NEAR(m.beta_gbs[AS_COLL_AR], 400, 0);
    CHECK_EQ_I64(m.max_ranks, 0);
    CHECK_STR(m.name, "1/100,2.5/200,0/400");   /* canonical: 4e2 is 400 */
    /* the name parses back to the same model (plan records carry it) */
    as_comm_model again;
    CHECK_EQ_I64(as_comm_model_parse(m.name, &again, err, sizeof err), 0);
    CHECK(!memcmp(again.alpha_us, m.alpha_us, sizeof m.alpha_us) && !memcmp(again.beta_gbs, m.beta_gbs, sizeof m.beta_gbs));
    static const char *const bad[] = { "", "nvlink", "1/100", "1/100,2/200", "1/100,2/200,3/300,", "1/100,2/200,3/300x",
                                       "-1/100,2/200,3/300", "1/0,2/200,3/300", "1/100,2/-5,3/300", "nan/1,2/2,3/3",
                                       "1/inf,2/2,3/3", "1,100,2,200,3,300", "1/100;2/200;3/300" };
    for (size_t j = 0; j < sizeof bad / sizeof *bad; j++) {
        err[0] = 0;
        m.ab = 7;
        CHECK_EQ_I64(as_comm_model_parse(bad[j], &m, err, sizeof err), -1);
        CHECK(err[0] != 0);
        CHECK_EQ_I64(m.ab, 7);      /* untouched */
    }
    CHECK_EQ_I64(as_comm_model_parse("1/100", &m, err, sizeof err), -1);
    CHECK(strstr(err, "all-to-all's beta") != NULL && strstr(err, "followed by ','") != NULL);
    /* nvlink8 holds for one host of 8 GPUs at most; a user's model for any K; bandwidth too */
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &m, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 8, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 9, err, sizeof err), -1);
    CHECK(strstr(err, "at most 8 GPUs, not 9 ranks") != NULL);
    CHECK_EQ_I64(as_comm_model_parse("1/1,1/1,1/1", &m, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 1024, err, sizeof err), 0);
    as_comm_model bw = as_comm_bandwidth(600);
    CHECK_EQ_I64(as_comm_model_check(&bw, 1024, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(NULL, 1024, err, sizeof err), 0);
    CHECK(as_comm_on(&bw));
    bw = as_comm_bandwidth(0);
    CHECK(!as_comm_on(&bw));
    CHECK(!as_comm_on(NULL));
}

/* a model's name is its canonical form: spaces around the value and its numbers, other
   spellings of a number, any length of the spec given; parsed again, the same model and the
   same name. A canonical form over AS_COMM_NAME_MAX - 1 bytes is refused, never cut. */
TEST(comm_model_canonical)
{
    as_comm_model m, again;
    char err[1024];
    static const struct { const char *spec, *name; } ok[] = {
        { " nvlink8 ", "nvlink8" },
        { "\tnvlink8", "nvlink8" },
        { "1/2, 3/4,5/6", "1/2,3/4,5/6" },
        { " 1 / 2 ,3/4 , 5/6 ", "1/2,3/4,5/6" },
        { "1e1/0x10,3.50/4,5/6e0", "10/16,3.5/4,5/6" },
        { "-0/1,0.1/1e6,0.000001/0.001", "0/1,0.1/1e+06,1e-06/0.001" },
        { "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000001/2,3/4,5/6",
          "1/2,3/4,5/6" },
        { "0.1234567890123456789/1,2/3,4/5", "0.12345678901234568/1,2/3,4/5" },
    };
    for (size_t j = 0; j < sizeof ok / sizeof *ok; j++) {
        CHECK_EQ_I64(as_comm_model_parse(ok[j].spec, &m, err, sizeof err), 0);
        CHECK_STR(m.name, ok[j].name);
        CHECK_EQ_I64(as_comm_model_parse(m.name, &again, err, sizeof err), 0);
        CHECK_STR(again.name, m.name);
        CHECK(!memcmp(again.alpha_us, m.alpha_us, sizeof m.alpha_us) && !memcmp(again.beta_gbs, m.beta_gbs, sizeof m.beta_gbs));
    }
    CHECK_EQ_I64(as_comm_model_parse("0.1/0.2,0.3/0.4,0.5/0.6", &m, err, sizeof err), 0);
    CHECK(m.alpha_us[AS_COLL_A2A] == 0.1 && m.beta_gbs[AS_COLL_A2A] == 0.2 && m.alpha_us[AS_COLL_AR] == 0.5 &&
          m.beta_gbs[AS_COLL_AR] == 0.6);
    /* file names longer than a record's name may be: refused before any is read */
    char longspec[1200] = "nccl:";
    memset(longspec + 5, 'a', 1100);
    longspec[1105] = 0;
    m.ab = 7;
    CHECK_EQ_I64(as_comm_model_parse(longspec, &m, err, sizeof err), -1);
    CHECK(strstr(err, "longer than 1023 bytes") != NULL);
    CHECK_EQ_I64(m.ab, 7);
    /* the factors: canonical, in their order, 1 left out; refused out of range or unknown */
    static const struct { const char *spec, *name; } fac[] = {
        { "nvlink8@bw=0.50", "nvlink8@bw=0.5" },
        { "nvlink8@lat=2,a2a-bw=3,bw=1", "nvlink8@a2a-bw=3,lat=2" },
        { "1/2,3/4,5/6 @ bw=2", "1/2,3/4,5/6@bw=2" },
        { "torchrec:8@bw=0.25", "torchrec:8@bw=0.25" },
        { "h100-ib@lat=0", "h100-ib@lat=0" },
    };
    for (size_t j = 0; j < sizeof fac / sizeof *fac; j++) {
        CHECK_EQ_I64(as_comm_model_parse(fac[j].spec, &m, err, sizeof err), 0);
        CHECK_STR(m.name, fac[j].name);
        CHECK_EQ_I64(as_comm_model_parse(m.name, &again, err, sizeof err), 0);
        CHECK_STR(again.name, m.name);
        CHECK(again.bw == m.bw && again.a2a_bw == m.a2a_bw && again.lat == m.lat);
    }
    static const char *const badf[] = { "nvlink8@bw=0", "nvlink8@bw=-1", "nvlink8@lat=-1", "nvlink8@bw=", "nvlink8@bw=2,",
                                        "nvlink8@bwx=2", "nvlink8@lat=1e7", "torchrec:0", "torchrec:1.5", "torchrec8" };
    for (size_t j = 0; j < sizeof badf / sizeof *badf; j++) {
        err[0] = 0;
        CHECK_EQ_I64(as_comm_model_parse(badf[j], &m, err, sizeof err), -1);
        CHECK(err[0] != 0);
    }
    /* spaces inside a number, or a spec of spaces only */
    CHECK_EQ_I64(as_comm_model_parse("1 0/2,3/4,5/6", &m, err, sizeof err), -1);
    CHECK_EQ_I64(as_comm_model_parse("  ", &m, err, sizeof err), -1);
    CHECK(strstr(err, "empty") == err);
    CHECK_EQ_I64(as_comm_model_parse("nvlink 8", &m, err, sizeof err), -1);
}

/* as_comm_record_read on the JSON text of a record: 0 or -1, with err */
static int record_read(const char *json, double *gbps, as_comm_model *m, int *has, char *err, size_t errlen)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 1024);
    msgpack_object o;
    int rc = as_jsonp_parse(json, strlen(json), &z, &o, err, errlen);
    CHECK_EQ_I64(rc, 0);
    if (!rc) rc = as_comm_record_read(&o, gbps, m, has, err, errlen);
    msgpack_zone_destroy(&z);
    return rc;
}

/* a plan record's comm_gbps and comm_model: absent, good, and every bad value refused with the
   field named (never read as 0) */
TEST(comm_record_read)
{
    double g = -1;
    as_comm_model m;
    int has = -1;
    char err[1024];
    CHECK_EQ_I64(record_read("{\"kind\":\"plan\"}", &g, &m, &has, err, sizeof err), 0);
    CHECK(g == 0 && has == 0);
    CHECK_EQ_I64(record_read("{\"comm_gbps\":600}", &g, &m, &has, err, sizeof err), 0);
    CHECK(g == 600 && has == 0);
    CHECK_EQ_I64(record_read("{\"comm_gbps\":0.5,\"comm_model\":\"nvlink8\"}", &g, &m, &has, err, sizeof err), 0);
    CHECK(g == 0.5 && has == 1 && m.ab == 1 && m.max_ranks == 8);
    CHECK_EQ_I64(record_read("{\"comm_gbps\":0,\"comm_model\":\" 1/2, 3/4,5/6\"}", &g, &m, &has, err, sizeof err), 0);
    CHECK(g == 0 && has == 1);
    CHECK_STR(m.name, "1/2,3/4,5/6");
    static const struct { const char *json, *want; } bad[] = {
        { "{\"comm_gbps\":-5}", "'comm_gbps' = -5, not a bandwidth (0: not charged, or GiB/s in [0.001, 1e+06])" },
        { "{\"comm_gbps\":\"600\"}", "'comm_gbps' is a string, not a bandwidth" },
        { "{\"comm_gbps\":null}", "'comm_gbps' is nil, not a bandwidth" },
        { "{\"comm_gbps\":true}", "'comm_gbps' is a boolean, not a bandwidth" },
        { "{\"comm_gbps\":1e7}", "'comm_gbps' = 1e+07, not a bandwidth" },
        { "{\"comm_gbps\":0.0001}", "'comm_gbps' = 0.0001, not a bandwidth" },
        { "{\"comm_model\":7}", "'comm_model' is not a communication model (not a string)" },
        { "{\"comm_model\":\"nvlink9\"}", "'comm_model' is not a communication model ('nvlink9': the all-to-all's alpha" },
        { "{\"comm_model\":\"1/2,3/4,5/6\\u0000\"}", "'comm_model' is not a communication model (a NUL byte in it)" },
    };
    for (size_t j = 0; j < sizeof bad / sizeof *bad; j++) {
        err[0] = 0;
        CHECK_EQ_I64(record_read(bad[j].json, &g, &m, &has, err, sizeof err), -1);
        CHECK(strstr(err, bad[j].want) == err);
        if (strstr(err, bad[j].want) != err) fprintf(stderr, "  %s: %s\n", bad[j].json, err);
    }
    /* a name longer than any model's: the 80-byte cut of old was a different model */
    char json[1400];
    snprintf(json, sizeof json, "{\"comm_model\":\"%01100d/2,3/4,5/6\"}", 1);
    CHECK_EQ_I64(record_read(json, &g, &m, &has, err, sizeof err), -1);
    CHECK(strstr(err, "'comm_model' is not a communication model (longer than any model's name)") == err);
    /* NaN, which JSON cannot write */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "comm_gbps", 9);
    msgpack_pack_double(&pk, NAN);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_I64(as_comm_record_read(&up.data, &g, &m, &has, err, sizeof err), -1);
    CHECK(strstr(err, "'comm_gbps' = nan, not a bandwidth") == err);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

/* a shard's time by hand: alpha 10 / 20 / 30 us, beta 100 / 200 / 400 GB/s (1e5, 2e5, 4e5
   bytes a us), K = 4: 3/4 of an all-to-all's or ring's message leaves the rank, 2 x 3/4 of an
   all-reduce's (nccl-tests' bus factors) */
TEST(comm_shard_ms_by_hand)
{
    as_comm_model m;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("10/100,20/200,30/400", &m, err, sizeof err), 0);
    as_comm_load l;
    memset(&l, 0, sizeof l);
    l.own_in[AS_SH_TW] = 1e5, l.own_out[AS_SH_TW] = 8e5, l.all_in[AS_SH_TW] = 2e5, l.all_out[AS_SH_TW] = 16e5;
    l.own_in[AS_SH_RW] = 0, l.own_out[AS_SH_RW] = 2e6, l.all_in[AS_SH_RW] = 4e5, l.all_out[AS_SH_RW] = 4e6;
    l.ar = 3e6;   /* 2 x 3/4 x 2e6 bytes of gradients */
    l.has[AS_SH_TW] = l.has[AS_SH_RW] = l.has[AS_SH_DP] = 1;
    double parts[AS_NSH];
    /* table-wise: ids max(1e5, 2e5 / 4) = 1e5, outputs max(8e5, 4e5) / 2 = 4e5 a call: 3 x 10 us
       + (1e5 + 2 x 4e5) x 3/4 / 1e5 = 36.75 us; row-wise: ids max(0, 1e5), outputs max(2e6, 1e6)
       / 2 = 1e6 reduce-scattered and all-gathered: 10 + 0.75 + 2 x (20 + 1e6 x 3/4 / 2e5) =
       58.25 us; data-parallel: the all-reduce of 2e6 bytes, 30 + 2e6 x 1.5 / 4e5 = 37.5 us */
    const double t = as_comm_plan_shard_ms(&m, 4, &l, parts);
    CHECK_NEAR(parts[AS_SH_TW], 0.03675, 1e-12);
    CHECK_NEAR(parts[AS_SH_CW], 0, 0);
    CHECK_NEAR(parts[AS_SH_RW], 0.05825, 1e-12);
    CHECK_NEAR(parts[AS_SH_DP], 0.0375, 1e-12);
    CHECK_NEAR(t, 0.1325, 1e-12);
    /* a shard below its share pays its share (the side it receives): own outputs 2e5 */
    l.own_out[AS_SH_TW] = 2e5;
    as_comm_plan_shard_ms(&m, 4, &l, parts);
    CHECK_NEAR(parts[AS_SH_TW], (30 + (1e5 + 4e5) * 0.75 / 1e5) * 1e-3, 1e-12);
    l.own_out[AS_SH_TW] = 8e5;
    /* a type the plan has costs every rank its calls, bytes or not: column-wise 3 x 10 us */
    l.has[AS_SH_CW] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 4, &l, parts), 0.1625, 1e-12);
    CHECK_NEAR(parts[AS_SH_CW], 0.03, 1e-12);
    /* one rank: nothing moves */
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 1, &l, parts), 0, 0);
    /* the item time a local search weighs: no alpha; the row piece's ids over the all-to-all,
       its outputs over the ring */
    CHECK_NEAR(as_comm_item_ms(&m, 4, AS_SH_RW, 1e5, 2e6), (0.75 + 7.5) * 1e-3, 1e-12);
    CHECK_NEAR(as_comm_item_ms(&m, 4, AS_SH_DP, 0, 4e6), 0.01, 1e-12);
    CHECK_NEAR(as_comm_item_ms(&m, 4, AS_SH_TW, 1e5, 8e5), 9e5 * 0.75 / 1e5 * 1e-3, 1e-12);
    /* a call: alpha + S x f / beta */
    CHECK_NEAR(as_comm_call_us(&m, 4, AS_COLL_AR, 2e6), 37.5, 1e-9);
    CHECK_NEAR(as_comm_call_us(&m, 1, AS_COLL_AR, 2e6), 0, 0);
    /* the factors: bw halves every rate, a2a-bw the all-to-all's alone, lat scales the alphas */
    as_comm_model h = as_comm_scaled(&m, 0.5, 1, 1);
    CHECK_STR(h.name, "10/100,20/200,30/400@bw=0.5");
    CHECK_NEAR(as_comm_call_us(&h, 4, AS_COLL_AR, 2e6), 30 + 15, 1e-9);
    h = as_comm_scaled(&m, 1, 0.5, 3);
    CHECK_STR(h.name, "10/100,20/200,30/400@a2a-bw=0.5,lat=3");
    CHECK_NEAR(as_comm_call_us(&h, 4, AS_COLL_A2A, 1e5), 30 + 1.5, 1e-9);
    CHECK_NEAR(as_comm_call_us(&h, 4, AS_COLL_RS, 2e5), 60 + 0.75, 1e-9);
    /* the bandwidth model: every byte at G GiB/s, both sides summed, whatever the type and K */
    const as_comm_model bw = as_comm_bandwidth(1.0);
    const double G = 1073741824.0 / 1e3;
    CHECK_NEAR(as_comm_plan_shard_ms(&bw, 4, &l, parts), (13.5e5 + 3.1e6 + 3e6) / G, 1e-12);
    CHECK_NEAR(parts[AS_SH_RW], 3.1e6 / G, 1e-12);
    CHECK_NEAR(as_comm_plan_shard_ms(&bw, 1, &l, NULL), (27e5 + 6.4e6 + 3e6) / G, 1e-12);   /* all / 1 */
    const as_comm_model none = as_comm_bandwidth(0);
    CHECK_NEAR(as_comm_plan_shard_ms(&none, 4, &l, NULL), 0, 0);
    CHECK_STR(as_comm_scaled(&bw, 2, 3, 1).name, "6 GiB/s");
}

/* --comm-model torchrec against the expected values of TorchRec's own tests of its
   estimator (torchrec/distributed/planner/tests/test_shard_estimators.py at 376cac6: world
   size 2, one host, batch 512 a rank, pooling 1, dim 10, fp32): a table-wise shard's forward
   and backward communication 6.357828776041667e-05 ms each, a row-wise shard's backward
   1.6798276699240525e-04 (with its forward, the table-wise's), a data-parallel 100 x 10 table's
   2.25593945387348e-04 */
TEST(comm_torchrec_estimator)
{
    as_comm_model m;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("torchrec", &m, err, sizeof err), 0);
    as_comm_load l;
    memset(&l, 0, sizeof l);
    const double out = 2.0 * 1024 * 10 * 4;   /* as_comm_bytes: 2 x the global batch x dim x 4 */
    l.own_out[AS_SH_TW] = out, l.own_in[AS_SH_TW] = 1024 * 8, l.all_out[AS_SH_TW] = out, l.all_in[AS_SH_TW] = 1024 * 8;
    l.has[AS_SH_TW] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 2, &l, NULL), 2 * 6.357828776041667e-05, 1e-15);
    memset(&l, 0, sizeof l);
    l.own_out[AS_SH_RW] = out;
    l.has[AS_SH_RW] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 2, &l, NULL), 6.357828776041667e-05 + 1.6798276699240525e-04, 1e-15);
    memset(&l, 0, sizeof l);
    l.ar = 2.0 * 1 / 2 * 100 * 10 * 4;   /* as_plan_dp_comm_bytes at K = 2 */
    l.has[AS_SH_DP] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 2, &l, NULL), 2.25593945387348e-04, 1e-15);
    CHECK_NEAR(as_comm_item_ms(&m, 2, AS_SH_DP, 0, l.ar), 2.25593945387348e-04, 1e-15);
    /* table_row_wise on one host is its row_wise (TorchRec's test: the same backward) */
    memset(&l, 0, sizeof l);
    l.own_out[AS_SH_TWRW] = out;
    l.has[AS_SH_TWRW] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 2, &l, NULL), 6.357828776041667e-05 + 1.6798276699240525e-04, 1e-15);
    /* over 2 hosts of 8 its 1/8 crosses at 12.5 GiB/s */
    CHECK_EQ_I64(as_comm_model_parse("torchrec:8", &m, err, sizeof err), 0);
    const double gib = 1073741824.0 / 1e3;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 16, &l, NULL), out / (600 * gib) + out / 8 / (12.5 * gib) + out / 2 * 2.455 / (897 * gib),
               1e-15);
    /* beyond a host (torchrec:1 over 2 ranks): 12.5 GiB/s, 48 x slower than 600 */
    CHECK_EQ_I64(as_comm_model_parse("torchrec:1", &m, err, sizeof err), 0);
    memset(&l, 0, sizeof l);
    l.own_out[AS_SH_TW] = out;
    l.has[AS_SH_TW] = 1;
    CHECK_NEAR(as_comm_plan_shard_ms(&m, 2, &l, NULL), 48 * 2 * 6.357828776041667e-05, 1e-13);
}

/* h100-ib: nvlink8 within a host; beyond, whole hosts of 8 only, the all-to-all's message
   split into its part within the host and the part across, the slower setting the time */
TEST(comm_hosts)
{
    as_comm_model m, n8;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("h100-ib", &m, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_parse("nvlink8", &n8, err, sizeof err), 0);
    for (int c = 0; c < AS_NCOLL; c++) CHECK_NEAR(as_comm_call_us(&m, 8, c, 1e6), as_comm_call_us(&n8, 8, c, 1e6), 1e-12);
    CHECK_EQ_I64(as_comm_model_check(&m, 8, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 5, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 128, err, sizeof err), 0);
    CHECK_EQ_I64(as_comm_model_check(&m, 12, err, sizeof err), -1);
    CHECK(strstr(err, "not whole hosts") != NULL);
    /* 16 ranks: 7/16 of the message over NVLink, 8/16 over the NICs */
    const double S = 1e8, a2a = as_comm_call_us(&m, 16, AS_COLL_A2A, S);
    const double in = S * 7 / 16 / (m.beta_gbs[AS_COLL_A2A] * 1e3), out = S * 8 / 16 / (m.xbeta_gbs[AS_COLL_A2A] * 1e3);
    CHECK_NEAR(a2a, m.xalpha_us[AS_COLL_A2A] + fmax(in, out), 1e-9);
    /* more hosts, more of it across: slower per byte at 128 ranks than at 16 */
    CHECK(as_comm_call_us(&m, 128, AS_COLL_A2A, S) > a2a);
    CHECK(as_comm_call_us(&m, 16, AS_COLL_RS, S) > as_comm_call_us(&n8, 8, AS_COLL_RS, S));
}

/* the sharding type of a plan's items: whole tables, a table's column pieces (one row range),
   a table's row pieces (several), a lone piece (column-wise: nothing cut its rows) */
TEST(comm_types_of_a_plan)
{
    as_features f[6];
    memset(f, 0, sizeof f);
    for (int i = 0; i < 6; i++) f[i].id = i < 1 ? 1 : i < 3 ? 2 : i < 5 ? 3 : 4;
    f[1].piece = (as_piece){ 0, 8, 0, 10 };
    f[2].piece = (as_piece){ 8, 16, 0, 10 };
    f[3].piece = (as_piece){ 0, 16, 5, 10 };     /* out of order: the type holds all the same */
    f[4].piece = (as_piece){ 0, 16, 0, 5 };
    f[5].piece = (as_piece){ 0, 4, 0, 7 };
    const as_features *it[6] = { &f[3], &f[0], &f[5], &f[1], &f[4], &f[2] };
    as_shtype t[6];
    as_comm_types(it, 6, t);
    CHECK_EQ_I64(t[0], AS_SH_RW);
    CHECK_EQ_I64(t[1], AS_SH_TW);
    CHECK_EQ_I64(t[2], AS_SH_CW);
    CHECK_EQ_I64(t[3], AS_SH_CW);
    CHECK_EQ_I64(t[4], AS_SH_RW);
    CHECK_EQ_I64(t[5], AS_SH_CW);
    as_comm_types(it, 0, t);    /* nothing: no harm */
    CHECK_STR(as_comm_type_name[AS_SH_DP], "data-parallel");
}
