/* test_costdata.c - the cost data set of as-costfit on hand-made records: the features index
 * and its duplicate rule, reading and joining costs (skips, bad records, the same messages
 * as before the move), both splits, both baselines (leave-one-out, coverage, the
 * least-squares line), the metrics, the noise statistics and the report record; all
 * against values worked out by hand. And the predictions as-costfit --predict adds. */
#include "unit.h"

#include "common.h"
#include "costdata.h"
#include "costpredict.h"
#include "featindex.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static as_features F(int64_t id, int64_t dim, double pooling)
{
    as_features f = tsup_features(id, dim, 100, pooling, 8, (int64_t)(pooling * 8));
    f.bins[0] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}

/* ---- the features index ------------------------------------------------------------------- */

TEST(featidx_sorted_distinct_first_kept)
{
    as_featidx x = { 0 };
    as_features a = F(3, 8, 1), b = F(1, 4, 2), c = F(3, 8, 1), d = F(2, 16, 0.5);
    snprintf(c.source, sizeof c.source, "other-name.ast");   /* the label may differ */
    as_featidx_add(&x, &a);
    as_featidx_add(&x, &b);
    as_featidx_add(&x, &c);
    as_featidx_add(&x, &d);
    char err[256];
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), 0);
    CHECK_EQ_I64(x.n, 3);
    CHECK_EQ_I64(x.f[0].id, 1);
    CHECK_EQ_I64(x.f[1].id, 2);
    CHECK_EQ_I64(x.f[2].id, 3);
    CHECK_STR(x.f[2].source, "pool.ast");   /* the first of the two in input order */
    CHECK_EQ_I64(as_featidx_find(&x, 2), 1);
    CHECK_EQ_I64(as_featidx_find(&x, 0), -1);
    CHECK_EQ_I64(as_featidx_find(&x, 4), -1);
    CHECK(as_featidx_get(&x, 3) == &x.f[2]);
    CHECK(as_featidx_get(&x, 7) == NULL);
    as_featidx_free(&x);
    /* an empty index finds nothing */
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), 0);
    CHECK_EQ_I64(x.n, 0);
    CHECK(as_featidx_get(&x, 0) == NULL);
    as_featidx_free(&x);
}

TEST(featidx_check_cover_against_sizes)
{
    /* table 5: 100 rows x 32 columns; table 9 has no features (not checked) */
    as_featidx x = { 0 };
    as_features f = F(5, 32, 1);
    as_featidx_add(&x, &f);
    char err[256];
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), 0);
    const int64_t ids[2] = { 5, 9 };
    as_piece p[2] = { { 0, 32, 0, 50 }, { 0, 4, 0, 7 } };
    /* half the rows: a gap, named with the table's size */
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, p, 2, err, sizeof err), -1);
    CHECK_STR(err, "table 5: its pieces cover columns 0..32 x rows 0..50 of 32 x 100 (a gap)");
    /* half the columns */
    p[0] = (as_piece){ 0, 16, 0, 100 };
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, p, 2, err, sizeof err), -1);
    CHECK_STR(err, "table 5: its pieces cover columns 0..16 x rows 0..100 of 32 x 100 (a gap)");
    /* past the last column */
    p[0] = (as_piece){ 0, 64, 0, 100 };
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, p, 2, err, sizeof err), -1);
    CHECK_STR(err, "piece t5[c 0:64, r 0:100) lies outside table 5 (100 rows x 32 columns)");
    /* all of it, in one piece or whole; no pieces at all */
    p[0] = (as_piece){ 0, 32, 0, 100 };
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, p, 2, err, sizeof err), 0);
    p[0] = AS_PIECE_WHOLE;
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, p, 2, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_check_cover(&x, ids, NULL, 2, err, sizeof err), 0);
    as_featidx_free(&x);
}

TEST(featidx_conflicting_duplicates)
{
    /* any number differing is a conflict: one of the 21 (a bin), a plan field (bytes), an
       extra (max_bag, a lookup bin) */
    for (int v = 0; v < 4; v++) {
        as_featidx x = { 0 };
        as_features a = F(5, 8, 1), b = a;
        if (v == 0) b.bins[3] = 0.25;
        else if (v == 1) b.bytes_fp16 += 2;
        else if (v == 2) b.max_bag = 9;
        else b.lookup_bins[16] = 0.5;
        CHECK(!as_features_same(&a, &b));
        as_features other = F(1, 4, 1);
        as_featidx_add(&x, &other);
        as_featidx_add(&x, &a);
        as_featidx_add(&x, &b);
        char err[256] = "";
        CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), -1);
        CHECK_STR(err, "table 5 has two different `features` records (features of two pools mixed?)");
        as_featidx_free(&x);
    }
}

/* ---- reading and joining -------------------------------------------------------------------- */

/* a scratch path (the last 8 stay valid) */
static char g_path[8][512];
static int g_k;
#define tmp(name) (snprintf(g_path[g_k % 8], 512, "%s/%s", ut_tmpdir(), (name)), g_path[g_k++ % 8])

/* a cost record: tables ids[0..n), cost_ms (NAN: nil, -1: absent), rel_std (NAN: absent),
   error (NULL: nil) */
static void put_cost(as_writer *w, const int64_t *ids, int n, double cost, double rel_std, const char *error,
                     const char *device)
{
    tsup_put_cost(w, &(tsup_cost){ .ids = ids, .n = n, .has_cost = cost != -1, .cost = cost, .has_rel_std = !isnan(rel_std),
                                   .rel_std = rel_std, .has_error = 1, .error = error, .has_device = 1, .device = device });
}

/* The hand-made data set of the baseline tests. Tables (dim x pooling = x):
 *   A = 0: 4 x 0.5 = 2     B = 1: 8 x 1 = 8     C = 2: 2 x 3 = 6
 * shards (k: tables = cost ms, rel_std):
 *   0: A = 1 (0.1)   1: A = 3 (-)   2: B = 2 (0.2)   3: A,B = 5 (0.4)   4: C,A = 4 (-)   5: B,A = 7 (0.3)
 * plus skipped records: an error, a nil cost_ms, no cost_ms, an empty shard */
static void write_set(const char *path)
{
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features fa = F(0, 4, 0.5), fb = F(1, 8, 1), fc = F(2, 2, 3);
    as_features_write(w, &fb);
    as_features_write(w, &fa);
    as_features_write(w, &fc);
    as_features_write(w, &fa);   /* a repeat: kept once */
    const int64_t A[] = { 0 }, B[] = { 1 }, AB[] = { 0, 1 }, CA[] = { 2, 0 }, BA[] = { 1, 0 };
    put_cost(w, A, 1, 1, 0.1, NULL, "cpu: x");
    put_cost(w, A, 1, 9, NAN, "out of memory", "cpu: x");   /* skipped: an error */
    put_cost(w, A, 1, 3, NAN, NULL, "cpu: x");
    put_cost(w, B, 1, NAN, NAN, NULL, "cpu: x");             /* skipped: nil */
    put_cost(w, B, 1, 2, 0.2, NULL, "cpu: x");
    put_cost(w, AB, 2, 5, 0.4, NULL, "cpu: x");
    put_cost(w, B, 1, -1, NAN, NULL, "cpu: x");              /* skipped: absent */
    put_cost(w, CA, 2, 4, NAN, NULL, "cpu: x");
    put_cost(w, AB, 0, 6, NAN, NULL, "cpu: x");              /* an empty shard */
    put_cost(w, BA, 2, 7, 0.3, NULL, "cpu: x");
    as_writer_close(w);
}

static int load(as_costdata *d, const char *path, char *err, size_t errlen)
{
    char *files[] = { (char *)path };
    return as_costdata_read_files(d, files, 1, err, errlen);
}

static void load_set(as_costdata *d)
{
    const char *path = tmp("set.ast");
    write_set(path);
    char err[1024];
    memset(d, 0, sizeof *d);
    CHECK_EQ_I64(load(d, path, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_check(d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_join(d, err, sizeof err), 0);
}

TEST(costdata_read_join)
{
    as_costdata d;
    load_set(&d);
    CHECK_EQ_I64(d.ncs, 6);
    CHECK_EQ_I64(d.nskipped, 3);
    CHECK_EQ_I64(d.nempty, 1);
    CHECK_EQ_I64(d.ft.n, 3);
    CHECK_EQ_I64(d.ndevices, 1);
    CHECK_STR(d.devices[0], "cpu: x");
    /* shard 4 is C,A: positions 2, 0 of the index; shard 5 B,A: 1, 0 */
    CHECK_EQ_I64(d.off[4], 5);
    CHECK_EQ_I64(d.idx[5], 2);
    CHECK_EQ_I64(d.idx[6], 0);
    CHECK_EQ_I64(d.idx[7], 1);
    CHECK_EQ_I64(d.off[6], 9);
    CHECK_NEAR(d.cost[5], 7, 0);
    CHECK_NEAR(d.cs[0].rel_std, 0.1, 0);
    CHECK(isnan(d.cs[1].rel_std));
    CHECK_EQ_I64(d.cs[2].rec, 10);   /* after the header, 4 features and 5 costs */
    CHECK_EQ_I64(d.set.nshards, 6);
    CHECK(d.set.tab == d.f && d.nf == d.ft.n && !memcmp(d.f, d.ft.f, (size_t)d.nf * sizeof *d.f));
    /* one table set, any order, one hash; another set, another hash */
    int64_t x[3] = { 3, 1, 2 }, y[3] = { 1, 2, 3 }, z[2] = { 1, 2 };
    CHECK(as_costdata_set_hash(x, 3) == as_costdata_set_hash(y, 3));
    CHECK(as_costdata_set_hash(x, 3) != as_costdata_set_hash(z, 2));
    as_costdata_free(&d);
}

TEST(costdata_bad_input_messages)
{
    char err[1024];
    const int64_t AB[] = { 0, 1 }, A9[] = { 0, 9 };
    as_features fa = F(0, 4, 0.5), fb = F(1, 8, 1);
    /* cost_ms not a positive number */
    const double bad[3] = { 0, -1.5, NAN };
    for (int i = 0; i < 2; i++) {
        const char *p = tmp("bad.ast");
        as_writer *w = as_writer_open(p, 0, 0);
        as_writer_header(w, "test", 0, NULL);
        put_cost(w, AB, 2, bad[i], NAN, NULL, "d");
        as_writer_close(w);
        as_costdata d = { 0 };
        CHECK_EQ_I64(load(&d, p, err, sizeof err), -1);
        char want[1024];
        snprintf(want, sizeof want, "%s: record 2: cost: 'cost_ms' = %g is not a positive cost", p, bad[i]);
        CHECK_STR(err, want);
        as_costdata_free(&d);
    }
    /* a table without features; no features at all; two devices; nothing usable */
    const char *p = tmp("miss.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features_write(w, &fa);
    as_features_write(w, &fb);
    put_cost(w, AB, 2, 1, NAN, NULL, "d");
    put_cost(w, A9, 2, 1, NAN, NULL, "d");
    as_writer_close(w);
    as_costdata d = { 0 };
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_join(&d, err, sizeof err), -1);
    char want[1024];
    snprintf(want, sizeof want, "%s: record 5: cost of a shard with table 9, which has no `features` record", p);
    CHECK_STR(err, want);
    as_costdata_free(&d);

    p = tmp("nofeat.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_cost(w, AB, 2, 1, NAN, NULL, "d");
    put_cost(w, AB, 2, 1, NAN, NULL, "e");
    put_cost(w, AB, 2, 1, NAN, NULL, "f");
    as_writer_close(w);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_check(&d, err, sizeof err), -1);
    CHECK_STR(err, "the costs were measured on 3 different devices ('d', 'e', ...): train one model per device");
    CHECK_EQ_I64(as_costdata_join(&d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: record 2: cost of a shard with table 0, which has no `features` record (the input "
             "holds no features at all: cat features.ast costs.ast | as-costfit)", p);
    CHECK_STR(err, want);
    as_costdata_free(&d);

    p = tmp("none.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    put_cost(w, AB, 2, 1, NAN, "busy", "d");
    as_writer_close(w);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_check(&d, err, sizeof err), -1);
    CHECK_STR(err, "no usable `cost` records in the input (1 skipped)");
    as_costdata_free(&d);

    /* truncated: the reader's own message; conflicting features: the index's */
    const char *s = tmp("set.ast");
    write_set(s);
    FILE *f = fopen(s, "rb");
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *c = tmp("cut.ast");
    f = fopen(c, "wb");
    fwrite(buf, 1, n - 20, f);
    fclose(f);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, c, err, sizeof err), -1);
    CHECK(strstr(err, c) == err && strstr(err, "truncated") != NULL);
    as_costdata_free(&d);
    p = tmp("two.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features_write(w, &fa);
    fa.max_bag = 3;
    as_features_write(w, &fa);
    as_writer_close(w);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), -1);
    CHECK_STR(err, "table 0 has two different `features` records (features of two pools mixed?)");
    as_costdata_free(&d);
    /* a bad features record: the input and record named, then the reader of features */
    p = tmp("badfeat.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    fa.rows = 0;
    as_features_write(w, &fa);
    as_writer_close(w);
    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, p, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: record 2: features of table 0: ", p);
    CHECK(!strncmp(err, want, strlen(want)));
    as_costdata_free(&d);
}

/* cost records with pieces (issue 37): as_costdata_join joins each piece to its own
 * features and refuses one whose features are not known, naming it; as_costdata_join_known
 * (as-rl) joins the same by the same rule and leaves such shards out, counted */
static void put_cost_pieces(as_writer *w, const int64_t *ids, const as_piece *p, int n, double cost)
{
    tsup_put_cost(w, &(tsup_cost){ .ids = ids, .pieces = p, .n = n, .has_cost = 1, .cost = cost, .has_device = 1, .device = "d" });
}

TEST(costdata_pieces_join_and_join_known)
{
    /* tables 0 (dim 4) and 1 (dim 8), 100 rows; the record of table 1's rows [0, 50) */
    const char *p = tmp("pieces.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features fa = F(0, 4, 0.5), fb = F(1, 8, 1), fr = F(1, 8, 0.25);
    fr.rows = 50;
    fr.piece = (as_piece){ 0, 8, 0, 50 };
    as_features_write(w, &fa);
    as_features_write(w, &fb);
    as_features_write(w, &fr);
    const int64_t s0[] = { 1, 0 }, s1[] = { 0 }, s2[] = { 9 }, s3[] = { 0 };
    const as_piece p0[] = { { 0, 8, 0, 50 }, AS_PIECE_WHOLE }, p1[] = { { 0, 4, 0, 40 } }, p2[] = { AS_PIECE_WHOLE },
                   p3[] = { { 0, 2, 0, 100 } };
    put_cost_pieces(w, s0, p0, 2, 2.0);   /* record 5: a row piece with its record, a table */
    put_cost_pieces(w, s1, p1, 1, 1.0);   /* record 6: a row piece without features */
    put_cost_pieces(w, s2, p2, 1, 1.5);   /* record 7: a table without features */
    put_cost_pieces(w, s3, p3, 1, 0.5);   /* record 8: a column piece, derived */
    as_writer_close(w);
    char err[1024], want[1024];
    as_costdata d = { 0 };
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_join(&d, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: record 6: cost of a shard with piece t0[c 0:4, r 0:40), which has no `features` "
             "record (as-features --row-pieces writes row pieces' features)", p);
    CHECK_STR(err, want);
    CHECK_EQ_I64(d.ncs, 4);   /* nothing left out */
    as_costdata_free(&d);

    memset(&d, 0, sizeof d);
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), 0);
    as_costdata_join_known(&d);
    CHECK_EQ_I64(d.nnopiece, 1);
    CHECK_EQ_I64(d.nnofeat, 1);
    /* records 5 and 8 kept, in order; the items: tables 0, 1, then the two pieces */
    CHECK_EQ_I64(d.ncs, 2);
    CHECK_EQ_I64(d.set.nshards, 2);
    CHECK_EQ_I64(d.cs[0].rec, 5);
    CHECK_EQ_I64(d.cs[1].rec, 8);
    CHECK_EQ_I64(d.nf, 4);
    CHECK_EQ_I64(d.off[1], 2);
    CHECK_EQ_I64(d.off[2], 3);
    CHECK_NEAR(d.cost[1], 0.5, 0);
    const as_features *r = &d.f[d.idx[0]], *a = &d.f[d.idx[1]], *c = &d.f[d.idx[2]];
    CHECK(d.idx[0] == 2 && r->id == 1 && r->rows == 50 && r->dim == 8 && r->pooling == 0.25);
    CHECK(d.idx[1] == 0 && a->id == 0 && as_piece_whole(&a->piece));
    CHECK(d.idx[2] == 3 && c->id == 0 && c->rows == 100 && c->dim == 2 && c->pooling == 0.5);
    as_costdata_free(&d);
}

/* ---- the splits ----------------------------------------------------------------------------- */

TEST(costdata_split_tables_rule)
{
    /* tables 0, 2, 4, 7, 9: n/2 = 2, so the cut is id 4 (a position, not a value) */
    const char *p = tmp("split.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t ids[5] = { 9, 0, 7, 2, 4 };
    for (int i = 0; i < 5; i++) { as_features f = F(ids[i], 4, 1); as_features_write(w, &f); }
    const int64_t s0[] = { 0, 2 }, s1[] = { 4 }, s2[] = { 2, 7 }, s3[] = { 9, 7 }, s4[] = { 0 }, s5[] = { 4, 0 };
    put_cost(w, s0, 2, 1, NAN, NULL, "d");   /* train */
    put_cost(w, s1, 1, 1, NAN, NULL, "d");   /* test: 4 is the cut */
    put_cost(w, s2, 2, 1, NAN, NULL, "d");   /* dropped */
    put_cost(w, s3, 2, 1, NAN, NULL, "d");   /* test */
    put_cost(w, s4, 1, 1, NAN, NULL, "d");   /* train */
    put_cost(w, s5, 2, 1, NAN, NULL, "d");   /* dropped */
    as_writer_close(w);
    as_costdata d = { 0 };
    char err[1024];
    CHECK_EQ_I64(load(&d, p, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_index(&d, err, sizeof err), 0);
    CHECK_EQ_I64(as_costdata_join(&d, err, sizeof err), 0);
    as_costsplit s;
    as_costdata_split_tables(&d, &s);
    CHECK_EQ_I64(s.cut, 4);
    CHECK_EQ_I64(s.ntrain, 2);
    CHECK_EQ_I64(s.train[0], 0);
    CHECK_EQ_I64(s.train[1], 4);
    CHECK_EQ_I64(s.ntest, 2);
    CHECK_EQ_I64(s.test[0], 1);
    CHECK_EQ_I64(s.test[1], 3);
    CHECK_EQ_I64(s.ndropped, 2);
    as_costsplit_free(&s);
    as_costdata_free(&d);
}

TEST(costdata_split_shards_rule)
{
    as_costdata d;
    load_set(&d);
    as_costsplit s;
    /* fraction 0: all train, in order */
    as_costdata_split_shards(&d, 0, 1, &s);
    CHECK_EQ_I64(s.ntrain, 6);
    CHECK_EQ_I64(s.ntest, 0);
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(s.train[i], i);
    as_costsplit_free(&s);
    /* any fraction and seed: the repeats of one table set (A: 0, 1; A,B and B,A: 3, 5) on one
       side; every shard on exactly one side; the same seed, the same split */
    int seen_test = 0, seen_train = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        as_costdata_split_shards(&d, 0.5, seed, &s);
        char side[6] = { 0 };
        for (int64_t i = 0; i < s.ntest; i++) side[s.test[i]] = 't';
        for (int64_t i = 0; i < s.ntrain; i++) side[s.train[i]] = 'r';
        CHECK_EQ_I64(s.ntrain + s.ntest, 6);
        for (int i = 0; i < 6; i++) CHECK(side[i]);
        CHECK(side[0] == side[1]);
        CHECK(side[3] == side[5]);
        seen_test |= s.ntest > 0;
        seen_train |= s.ntrain > 0;
        as_costsplit t;
        as_costdata_split_shards(&d, 0.5, seed, &t);
        CHECK(t.ntest == s.ntest && !memcmp(t.test, s.test, (size_t)s.ntest * sizeof *s.test));
        as_costsplit_free(&t);
        as_costsplit_free(&s);
    }
    CHECK(seen_test && seen_train);
    as_costdata_free(&d);
}

/* as-costfit --folds: the parts of one seed are disjoint, each with its rest is every shard, the
   repeats of a table set in one part, the parts of frac 1/K together all the shards */
TEST(costdata_split_part_folds)
{
    as_costdata d;
    load_set(&d);
    const int64_t all[6] = { 0, 1, 2, 3, 4, 5 };
    int64_t keep[6], part[6], nkeep, npart;
    int nonempty = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        int owner[6] = { -1, -1, -1, -1, -1, -1 };
        for (int f = 0; f < 4; f++) {
            as_costdata_split_part(&d, all, 6, 0.25, f, seed, keep, &nkeep, part, &npart);
            CHECK_EQ_I64(nkeep + npart, 6);
            char side[6] = { 0 };
            for (int64_t i = 0; i < npart; i++) {
                CHECK(owner[part[i]] == -1);   /* in no other part */
                owner[part[i]] = f;
                side[part[i]] = 'p';
            }
            for (int64_t i = 0; i < nkeep; i++) side[keep[i]] = 'k';
            for (int i = 0; i < 6; i++) CHECK(side[i]);
            CHECK(side[0] == side[1]);
            CHECK(side[3] == side[5]);
            nonempty += npart > 0 && nkeep > 0;
        }
        for (int i = 0; i < 6; i++) CHECK(owner[i] >= 0);   /* 4 parts of 1/4: every shard in one */
        /* fold 0 of frac 0.25 is what the first quarter of a larger fraction's fold 0 holds */
        int64_t keep2[6], part2[6], nk2, np2;
        as_costdata_split_part(&d, all, 6, 0.5, 0, seed, keep2, &nk2, part2, &np2);
        for (int i = 0; i < 6; i++) {
            if (owner[i] != 0) continue;
            int in = 0;
            for (int64_t j = 0; j < np2; j++) in |= part2[j] == i;
            CHECK(in);
        }
    }
    CHECK(nonempty > 0);
    as_costdata_free(&d);
}

/* ---- baselines, noise, metrics, report -------------------------------------------------------- */

TEST(costdata_sum_single_leave_one_out)
{
    as_costdata d;
    load_set(&d);
    /* 1-table costs: A 1, 3 (mean 2), B 2; C none.
     *   shard 0 (A = 1): its own measurement left out: 3 / 1 = 3
     *   shard 3 (A,B):   2 + 2 = 4
     *   shard 4 (C,A):   C has none: not covered
     *   shard 2 (B = 2): the only B left out: none left, not covered */
    const int64_t test[4] = { 0, 3, 4, 2 };
    double out[4];
    char cov[4];
    CHECK_EQ_I64(as_costdata_sum_single(&d, test, 4, out, cov), 2);
    CHECK_NEAR(out[0], 3, 1e-15);
    CHECK_NEAR(out[1], 4, 1e-15);
    CHECK(isnan(out[2]) && isnan(out[3]));
    CHECK(cov[0] == 1 && cov[1] == 1 && cov[2] == 0 && cov[3] == 0);
    as_costdata_free(&d);
}

TEST(costdata_linear_line_by_hand)
{
    as_costdata d;
    load_set(&d);
    /* x = sum dim x pooling: shards 2, 2, 8, 10, 8, 10; costs 1, 3, 2, 5, 4, 7 */
    const double xs[6] = { 2, 2, 8, 10, 8, 10 };
    for (int k = 0; k < 6; k++) CHECK_NEAR(as_costdata_dimpool(&d, k), xs[k], 0);
    /* all six: n 6, sx 40, sy 22, sxx 336, sxy 176; den 6*336 - 40^2 = 416;
       b = (6*176 - 40*22) / 416 = 176/416 = 11/26; a = (22 - 40 b) / 6 = 11/13 */
    const int64_t all[6] = { 0, 1, 2, 3, 4, 5 };
    double a, b;
    as_costdata_linear_fit(&d, all, 6, &a, &b);
    CHECK_NEAR(b, 11.0 / 26, 1e-14);
    CHECK_NEAR(a, 11.0 / 13, 1e-14);
    /* shards 0, 1: one x, no slope; the line is the mean cost */
    as_costdata_linear_fit(&d, all, 2, &a, &b);
    CHECK_NEAR(b, 0, 0);
    CHECK_NEAR(a, 2, 1e-15);
    as_costdata_free(&d);
}

TEST(costdata_noise_by_hand)
{
    as_costdata d;
    load_set(&d);
    as_costnoise o;
    /* test shards 0, 3, 4, 2: rel_std 0.1, 0.4, -, 0.2 -> 0.7 / 3 */
    const int64_t test[4] = { 0, 3, 4, 2 };
    as_costdata_noise(&d, test, 4, &o);
    CHECK_NEAR(o.mean_rel_std, 0.7 / 3, 1e-15);
    /* repeats: A {1, 3} mean 2, |dev| 1, 1 (rel .5, .5); {A,B} = {B,A} {5, 7} mean 6, |dev| 1, 1
       (rel 1/6, 1/6): MAE 4/4 = 1 ms, MAPE 100 (1 + 1/3) / 4 */
    CHECK_EQ_I64(o.repeat_groups, 2);
    CHECK_NEAR(o.repeat_mae, 1, 1e-15);
    CHECK_NEAR(o.repeat_mape, 100 * (4.0 / 3) / 4, 1e-12);
    /* no test shards: rel_std over all: 0.1, 0.2, 0.4, 0.3 -> 0.25 */
    as_costdata_noise(&d, NULL, 0, &o);
    CHECK_NEAR(o.mean_rel_std, 0.25, 1e-15);
    /* no rel_std at all, no repeats: NAN */
    const int64_t one[1] = { 4 };
    as_costdata_noise(&d, one, 1, &o);
    CHECK(isnan(o.mean_rel_std));
    as_costdata_free(&d);
}

TEST(costdata_eval_and_report_by_hand)
{
    as_costdata d;
    load_set(&d);
    /* train 0, 1, 2, 3, 4, 5 minus the tests; a split made by hand: train {1, 5}, test {0, 3, 4, 2} */
    as_costsplit s = { 0 };
    int64_t train[2] = { 1, 5 }, test[4] = { 0, 3, 4, 2 };
    s.train = train;
    s.ntrain = 2;
    s.test = test;
    s.ntest = 4;
    as_costmodel *m = as_costmodel_new(4, 3, 2, 5);
    as_costmodel_meta(m)->output = AS_CM_OUT_LINEAR;
    as_costdata_stats(m, &d, &s, 0, 0, "shards");
    CHECK_STR(as_costmodel_cmeta(m)->split, "shards");
    CHECK_STR(as_costmodel_cmeta(m)->cost_device, "cpu: x");
    CHECK_EQ_I64(as_costmodel_cmeta(m)->train_shards, 2);
    CHECK_EQ_I64(as_costmodel_cmeta(m)->test_shards, 4);
    CHECK_EQ_I64(as_costmodel_cmeta(m)->train_tables, 2);   /* A and B */
    CHECK_NEAR(as_costmodel_cmeta(m)->y_scale, 5, 1e-15);    /* mean of 3 and 7 */
    as_costeval e;
    as_costeval_run(&e, m, &d, &s);
    /* measured */
    CHECK_NEAR(e.yte[0], 1, 0); CHECK_NEAR(e.yte[1], 5, 0); CHECK_NEAR(e.yte[2], 4, 0); CHECK_NEAR(e.yte[3], 2, 0);
    CHECK_EQ_I64(e.test_ntables[2], 2);
    /* baseline (a) on shards 0, 3 (covered): predictions 3, 4 for 1, 5: errors 2, -1:
       MAE 1.5, MSE 2.5, MAPE 100 (2/1 + 1/5) / 2 = 110, R^2 1 - 5 / 8 (mean 3, SST 8) */
    CHECK_EQ_I64(e.ncovered, 2);
    CHECK_EQ_I64(e.sum_single_test.n, 2);
    CHECK_NEAR(e.sum_single_test.mae, 1.5, 1e-15);
    CHECK_NEAR(e.sum_single_test.mse, 2.5, 1e-15);
    CHECK_NEAR(e.sum_single_test.mape, 110, 1e-12);
    CHECK_NEAR(e.sum_single_test.r2, 0.375, 1e-15);
    CHECK_EQ_I64(e.model_covered.n, 2);
    /* baseline (b): train shards 1 (x 2, y 3) and 5 (x 10, y 7): b = 4/8 = 0.5, a = 2;
       test x 2, 10, 8, 8 -> 3, 7, 6, 6 against 1, 5, 4, 2: errors 2, 2, 2, 4:
       MAE 2.5, MSE 7, MAPE 100 (2 + 0.4 + 0.5 + 2) / 4 = 122.5, R^2 1 - 28 / 10 = -1.8 */
    CHECK_NEAR(e.lin_b, 0.5, 1e-15);
    CHECK_NEAR(e.lin_a, 2, 1e-15);
    CHECK_NEAR(e.lin_test[3], 6, 1e-15);
    CHECK_NEAR(e.lin_test_m.mae, 2.5, 1e-15);
    CHECK_NEAR(e.lin_test_m.mse, 7, 1e-14);
    CHECK_NEAR(e.lin_test_m.mape, 122.5, 1e-12);
    CHECK_NEAR(e.lin_test_m.r2, -1.8, 1e-14);
    CHECK_NEAR(e.lin_train_m.mae, 0, 1e-15);   /* a line through both training points */
    /* the model's metrics are those of its predictions */
    as_costmodel_metrics mt = as_costmodel_metrics_of(e.yte, e.pte, NULL, 4);
    CHECK_NEAR(e.model_test.mae, mt.mae, 0);
    CHECK_EQ_I64(e.model_test.n, 4);
    CHECK(e.nneg >= 0 && e.nneg <= 4);
    /* heldout: coverage 2 / 4 */
    as_costmodel_heldout ho;
    int worse = as_costeval_heldout(&e, "shards", &ho);
    CHECK(ho.present);
    CHECK_NEAR(ho.coverage, 0.5, 0);
    CHECK_NEAR(ho.linear.mae, 2.5, 1e-15);
    CHECK_EQ_I64(worse, isfinite(e.model_test.r2) && e.model_test.r2 < -1.8);

    /* the report record: fields by hand, NAN as nil */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    double losses[2] = { 0.5, 0.25 };
    as_costfit_stop stops[2] = { { .best_step = 40, .ran = 250, .evals = 25, .best_loss = 0.125, .first_loss = NAN, .early = 1 },
                                 { .best_step = 60, .ran = 400, .evals = 40, .best_loss = 0.25, .first_loss = 1.5, .early = 0 } };
    const int64_t nfit[2] = { 30, 29 }, nval[2] = { 8, 9 };
    as_costfit_report_info ri = { "shards", 0.2, 7, "cpu: x", "cpu", 6, 4, 0, 12, 1.5, 100, losses, 2, "auto", 2, stops, nfit, nval, 0.5 };
    e.noise.repeat_mae = NAN;
    as_costfit_report_pack(&pk, &ri, &e);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *r = &up.data;
    CHECK_EQ_I64(r->via.map.size, 26);
    char kind[32] = "";
    as_obj_str(r, "kind", kind, sizeof kind);
    CHECK_STR(kind, "costfit-report");
    int64_t v;
    CHECK(!as_obj_i64(r, "skipped", &v) && v == 4);
    CHECK(!as_obj_i64(r, "test_shards", &v) && v == 4);
    CHECK(!as_obj_i64(r, "seed", &v) && v == 7);
    double x;
    const msgpack_object *lin = as_obj_get(r, "linear"), *ss = as_obj_get(r, "sum_single"), *no = as_obj_get(r, "noise");
    CHECK(lin && !as_obj_f64(lin, "b", &x) && x == 0.5);
    CHECK(ss && !as_obj_f64(ss, "coverage", &x) && x == 0.5);
    CHECK(no && !as_obj_i64(no, "repeat_groups", &v) && v == 2);
    CHECK(no && as_obj_get(no, "repeat_mae")->type == MSGPACK_OBJECT_NIL);
    const msgpack_object *st = ss ? as_obj_get(ss, "test") : NULL;
    CHECK(st && !as_obj_f64(st, "mape", &x) && fabs(x - 110) < 1e-12);
    as_array arr;
    char err[256];
    CHECK(!as_obj_array(r, "test_sum_single", &arr, err, sizeof err) && arr.n == 4);
    double tss[4];
    as_array_get_f64(&arr, 0, 4, tss);
    CHECK(tss[0] == 3 && tss[1] == 4 && isnan(tss[2]) && isnan(tss[3]));
    CHECK(!as_obj_array(r, "losses", &arr, err, sizeof err) && arr.n == 2);
    /* --steps auto's two validation runs, the first one's undefined first loss nil */
    char rule[32] = "";
    as_obj_str(r, "steps_rule", rule, sizeof rule);
    CHECK_STR(rule, "auto");
    const msgpack_object *va = as_obj_get(r, "validation");
    CHECK(va && va->type == MSGPACK_OBJECT_MAP && va->via.map.size == 4);
    CHECK(va && !as_obj_i64(va, "folds", &v) && v == 2);
    CHECK(va && !as_obj_i64(va, "best_step", &v) && v == 50);
    CHECK(va && !as_obj_f64(va, "seconds", &x) && x == 0.5);
    const msgpack_object *runs = va ? as_obj_get(va, "runs") : NULL;
    CHECK(runs && runs->type == MSGPACK_OBJECT_ARRAY && runs->via.array.size == 2);
    if (runs && runs->type == MSGPACK_OBJECT_ARRAY && runs->via.array.size == 2) {
        const msgpack_object *r0 = &runs->via.array.ptr[0], *r1 = &runs->via.array.ptr[1];
        CHECK(r0->type == MSGPACK_OBJECT_MAP && r0->via.map.size == 7);
        CHECK(!as_obj_i64(r0, "best_step", &v) && v == 40);
        CHECK(!as_obj_i64(r0, "ran", &v) && v == 250);
        CHECK(!as_obj_i64(r0, "fit_shards", &v) && v == 30);
        CHECK(!as_obj_i64(r0, "val_shards", &v) && v == 8);
        CHECK(!as_obj_f64(r0, "loss_best", &x) && x == 0.125);
        CHECK(as_obj_get(r0, "loss_first")->type == MSGPACK_OBJECT_NIL);
        CHECK(as_obj_get(r0, "early")->type == MSGPACK_OBJECT_BOOLEAN && as_obj_get(r0, "early")->via.boolean);
        CHECK(!as_obj_i64(r1, "best_step", &v) && v == 60);
        CHECK(!as_obj_i64(r1, "val_shards", &v) && v == 9);
        CHECK(!as_obj_f64(r1, "loss_first", &x) && x == 1.5);
        CHECK(as_obj_get(r1, "early")->type == MSGPACK_OBJECT_BOOLEAN && !as_obj_get(r1, "early")->via.boolean);
    }
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    /* fixed epochs: no validation run */
    msgpack_sbuffer_init(&sb);
    ri.steps_rule = "epochs";
    ri.folds = 0;
    as_costfit_report_pack(&pk, &ri, &e);
    msgpack_unpacked_init(&up);
    off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    as_obj_str(&up.data, "steps_rule", rule, sizeof rule);
    CHECK_STR(rule, "epochs");
    CHECK(as_obj_get(&up.data, "validation") && as_obj_get(&up.data, "validation")->type == MSGPACK_OBJECT_NIL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    as_costeval_free(&e);
    as_costmodel_free(m);
    as_costdata_free(&d);
}

/* ---- --predict -------------------------------------------------------------------------------- */

TEST(costpred_annotates_and_refuses_missing)
{
    const char *p = tmp("pred.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features fa = F(0, 4, 0.5), fb = F(1, 8, 1);
    as_features_write(w, &fa);
    as_features_write(w, &fb);
    msgpack_packer *pk = as_writer_pk(w);   /* a shard with an old pred_ms */
    msgpack_pack_map(pk, 3);
    as_pack_kv_str(pk, "kind", "shard");
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 1);
    msgpack_pack_int(pk, 0);
    as_pack_kv_f64(pk, "pred_ms", -5);
    as_writer_end_record(w);
    pk = as_writer_pk(w);   /* an infeasible plan: table 1 unplaced */
    msgpack_pack_map(pk, 5);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", 0);
    as_pack_kv_i64(pk, "shards", 2);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, 1);
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 1);
    msgpack_pack_int(pk, -1);
    as_writer_end_record(w);
    as_writer_close(w);

    as_costmodel *m = as_costmodel_new(4, 3, 2, 1);
    as_costpred cp = { 0 };
    char err[1024];
    char *files[] = { (char *)p };
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    CHECK_EQ_I64(cp.n, 4);   /* two features, the shard, the plan; no header */
    const char *o = tmp("pred-out.ast");
    w = as_writer_open(o, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costpred_stats st;
    CHECK_EQ_I64(as_costpred_write(&cp, m, w, &st, err, sizeof err), 0);
    as_writer_close(w);
    CHECK_EQ_I64(st.shards, 1);
    CHECK_EQ_I64(st.plans, 1);
    as_costpred_free(&cp);
    /* read back: the shard's pred_ms replaced by the model's; the plan's shard 0 empty (0),
       shard 1 holds table 0; no maximum for an infeasible plan */
    as_reader *r = as_reader_open(o);
    as_record rec;
    const as_features *fs[2] = { &fb, &fa }, *f0[1] = { &fa };
    int n = 0, rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (as_rec_is(&rec, "shard")) {
            double y;
            CHECK(!as_obj_f64(&rec.obj, "pred_ms", &y));
            CHECK_NEAR(y, as_costmodel_predict(m, fs, 2), 0);
            CHECK_EQ_I64(rec.obj.via.map.size, 3);
            n++;
        } else if (as_rec_is(&rec, "plan")) {
            double y[2];
            CHECK(!as_obj_f64_list(&rec.obj, "pred_ms", y, 2));
            CHECK_NEAR(y[0], 0, 0);
            CHECK_NEAR(y[1], as_costmodel_predict(m, f0, 1), 0);
            CHECK(as_obj_get(&rec.obj, "pred_max_ms")->type == MSGPACK_OBJECT_NIL);
            n++;
        }
    }
    CHECK_EQ_I64(rc, 0);
    as_reader_close(r);
    CHECK_EQ_I64(n, 2);

    /* a table without features: the record named */
    p = tmp("pred-miss.ast");
    w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features_write(w, &fa);
    pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2);
    as_pack_kv_str(pk, "kind", "cost");
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 4);
    as_writer_end_record(w);
    as_writer_close(w);
    memset(&cp, 0, sizeof cp);
    files[0] = (char *)p;
    CHECK_EQ_I64(as_costpred_read_files(&cp, files, 1, err, sizeof err), 0);
    CHECK_EQ_I64(as_featidx_build(&cp.ft, err, sizeof err), 0);
    w = as_writer_open(tmp("pred-out2.ast"), 0, 0);
    CHECK_EQ_I64(as_costpred_write(&cp, m, w, &st, err, sizeof err), -1);
    as_writer_abort(w);
    char want[1024];
    snprintf(want, sizeof want, "%s: record 3: table 4 has no `features` record", p);
    CHECK_STR(err, want);
    as_costpred_free(&cp);
    as_costmodel_free(m);
}
