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
    CHECK_NEAR(m.alpha_us[AS_COLL_RING], 10.8, 1e-12);
    CHECK_NEAR(m.beta_gbs[AS_COLL_RING], 370, 0);
    CHECK_NEAR(m.alpha_us[AS_COLL_AR], 15.0, 1e-12);
    CHECK_NEAR(m.beta_gbs[AS_COLL_AR], 480, 0);
    CHECK_EQ_I64(m.max_ranks, 8);
    CHECK_STR(m.name, "nvlink8");
    CHECK_EQ_I64(as_comm_model_parse("1/100,2.5/200,0/4e2", &m, err, sizeof err), 0);
    CHECK_NEAR(m.alpha_us[0], 1, 0);
    CHECK_NEAR(m.beta_gbs[0], 100, 0);
    CHECK_NEAR(m.alpha_us[1], 2.5, 0);
    CHECK_NEAR(m.beta_gbs[1], 200, 0);
    CHECK_NEAR(m.alpha_us[2], 0, 0);
    CHECK_NEAR(m.beta_gbs[2], 400, 0);
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
    CHECK(m.alpha_us[0] == 0.1 && m.beta_gbs[0] == 0.2 && m.alpha_us[2] == 0.5 && m.beta_gbs[2] == 0.6);
    /* six numbers of 17 significant digits: longer than a record's name may be */
    const char *longspec = "1.2345678901234567e-5/2.2345678901234567e-5,3.2345678901234567e-5/4.2345678901234567e-5,"
                           "5.2345678901234567e-5/6.2345678901234567e-5";
    m.ab = 7;
    CHECK_EQ_I64(as_comm_model_parse(longspec, &m, err, sizeof err), -1);
    CHECK(strstr(err, "longer than 127 bytes") != NULL);
    CHECK_EQ_I64(m.ab, 7);
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
    char json[512];
    snprintf(json, sizeof json, "{\"comm_model\":\"%0200d/2,3/4,5/6\"}", 1);
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

/* a shard's time by hand: alpha 10 / 20 / 30 us, beta 100 / 200 / 400 GB/s, i.e. 1e8, 2e8,
   4e8 bytes a ms */
TEST(comm_shard_ms_by_hand)
{
    as_comm_model m;
    char err[256];
    CHECK_EQ_I64(as_comm_model_parse("10/100,20/200,30/400", &m, err, sizeof err), 0);
    /* K = 4: 3/4 of the all-to-all and ring bytes leave the rank */
    const double b[AS_NSH] = { 1e6, 0, 2e6, 4e6 };
    int has[AS_NSH] = { 1, 0, 1, 1 };
    double parts[AS_NSH];
    /* table-wise: 3 x 10 us + 1e6 x 3/4 / 1e8 = 0.03 + 0.0075 ms; column-wise: none;
       row-wise: 10 + 2 x 20 us + 2e6 x 3/4 / 2e8 = 0.05 + 0.0075; data-parallel: 30 us +
       4e6 / 4e8 (already the ring's bytes: no 3/4) = 0.03 + 0.01 */
    const double t = as_comm_shard_ms(&m, 4, b, has, parts);
    CHECK_NEAR(parts[AS_SH_TW], 0.0375, 1e-12);
    CHECK_NEAR(parts[AS_SH_CW], 0, 0);
    CHECK_NEAR(parts[AS_SH_RW], 0.0575, 1e-12);
    CHECK_NEAR(parts[AS_SH_DP], 0.04, 1e-12);
    CHECK_NEAR(t, 0.135, 1e-12);
    /* a type the plan has costs every rank its alphas, bytes or not: column-wise 3 x 10 us */
    has[AS_SH_CW] = 1;
    CHECK_NEAR(as_comm_shard_ms(&m, 4, b, has, parts), 0.165, 1e-12);
    CHECK_NEAR(parts[AS_SH_CW], 0.03, 1e-12);
    /* one rank: nothing moves */
    CHECK_NEAR(as_comm_shard_ms(&m, 1, b, has, parts), 0, 0);
    /* the item time a local search weighs: no alpha */
    CHECK_NEAR(as_comm_item_ms(&m, 4, AS_SH_RW, 2e6), 0.0075, 1e-12);
    CHECK_NEAR(as_comm_item_ms(&m, 4, AS_SH_DP, 4e6), 0.01, 1e-12);
    /* the bandwidth model: every byte at G GiB/s, whatever the type and K, no alpha */
    const as_comm_model bw = as_comm_bandwidth(1.0);
    const double G = 1073741824.0 / 1e3;
    CHECK_NEAR(as_comm_shard_ms(&bw, 4, b, has, parts), 7e6 / G, 1e-12);
    CHECK_NEAR(parts[AS_SH_RW], 2e6 / G, 1e-12);
    CHECK_NEAR(as_comm_shard_ms(&bw, 1, b, has, NULL), 7e6 / G, 1e-12);
    const as_comm_model none = as_comm_bandwidth(0);
    CHECK_NEAR(as_comm_shard_ms(&none, 4, b, has, NULL), 0, 0);
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
