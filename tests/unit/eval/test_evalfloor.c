/* test_evalfloor.c - the floor of sharding plans (lib/eval/evalfloor.h) by hand: as_eval_floor
 * with known and unknown single costs; the single-cost table from `cost` records packed
 * here (which records count, medians of odd and even counts, devices, one-piece records
 * kept apart, bad data); the floors of hand-made plans from it; at_floor marking with a
 * margin; the floor-bound count over (run, task) pairs and its sentence. */
#include "unit.h"

#include "evalfloor.h"
#include "reclimits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(evalfloor_floor_of_singles)
{
    int64_t u = -1;
    const double a[3] = { 2.0, 5.0, 3.0 };
    CHECK_NEAR(as_eval_floor(a, 3, &u), 5.0, 0);      /* the costliest alone */
    CHECK_EQ_I64(u, 0);
    CHECK_NEAR(as_eval_floor(a, 1, NULL), 2.0, 0);    /* unknown may be NULL */
    const double b[4] = { 2.0, NAN, 9.0, NAN };
    u = -1;
    CHECK(isnan(as_eval_floor(b, 4, &u)));           /* any unknown: the floor unknown, never guessed */
    CHECK_EQ_I64(u, 2);
    CHECK(isnan(as_eval_floor(b, 4, NULL)));
    u = -1;
    CHECK(isnan(as_eval_floor(b + 1, 1, &u)));
    CHECK_EQ_I64(u, 1);
    u = -1;
    CHECK(isnan(as_eval_floor(a, 0, &u)));           /* no items: NaN */
    CHECK_EQ_I64(u, 0);
    const double z[2] = { 0.0, 0.0 };
    CHECK_NEAR(as_eval_floor(z, 2, &u), 0.0, 0);     /* empty shards alone cost 0 */
    CHECK_EQ_I64(u, 0);
}

/* ---- cost records ------------------------------------------------------------------------- */

enum { COST, COST_NIL, COST_NONE };
typedef struct {
    const char *kind;           /* NULL: "cost" */
    int ntab;
    int64_t tab[2];
    int mode;                   /* COST: cost_ms = cost; COST_NIL: nil; COST_NONE: absent */
    double cost;
    const char *device;         /* NULL: none */
    const as_piece *piece;      /* NULL: no `pieces`; else pieces = [piece] (whole: nil) */
    const char *error;          /* NULL: none */
} crec;

static void pk_s(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_cost(msgpack_packer *pk, const crec *c)
{
    msgpack_pack_map(pk, 2 + (c->mode != COST_NONE) + !!c->device + !!c->piece + !!c->error);
    pk_s(pk, "kind");
    pk_s(pk, c->kind ? c->kind : "cost");
    pk_s(pk, "tables");
    msgpack_pack_array(pk, (size_t)c->ntab);
    for (int i = 0; i < c->ntab; i++) msgpack_pack_int64(pk, c->tab[i]);
    if (c->mode == COST) { pk_s(pk, "cost_ms"); msgpack_pack_double(pk, c->cost); }
    if (c->mode == COST_NIL) { pk_s(pk, "cost_ms"); msgpack_pack_nil(pk); }
    if (c->device) { pk_s(pk, "device"); pk_s(pk, c->device); }
    if (c->piece) {
        pk_s(pk, "pieces");
        msgpack_pack_array(pk, 1);
        as_pack_piece(pk, c->piece);
    }
    if (c->error) { pk_s(pk, "error"); pk_s(pk, c->error); }
}

/* as_eval_singles_take on the record c, packed here */
static int take(as_eval_singles *s, const crec *c, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_cost(&pk, c);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = -2;
    if (msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS) rc = as_eval_singles_take(s, &up.data, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static const as_piece LEFT = { 0, 8, 0, 10 }, RIGHT = { 8, 16, 0, 10 }, QUARTER = { 0, 4, 0, 10 }, WHOLE = { 0, 0, 0, 0 };

/* the records of the tests below */
static const crec RECS[] = {
    /* table 1 on cpu three times: median 2 (odd count) */
    { NULL, 1, { 1 }, COST, 3.0, "cpu", NULL, NULL },
    { NULL, 1, { 1 }, COST, 1.0, "cpu", NULL, NULL },
    { NULL, 1, { 1 }, COST, 2.0, "cpu", NULL, NULL },
    /* table 2: 4 and 6 on cpu (median 5, even count), 100 on gpu */
    { NULL, 1, { 2 }, COST, 6.0, "cpu", NULL, NULL },
    { NULL, 1, { 2 }, COST, 100.0, "gpu", NULL, NULL },
    { NULL, 1, { 2 }, COST, 4.0, "cpu", NULL, NULL },
    /* table 3: no device (counts on any); table 4: gpu only */
    { NULL, 1, { 3 }, COST, 7.0, NULL, NULL, NULL },
    { NULL, 1, { 4 }, COST, 9.0, "gpu", NULL, NULL },
    /* table 5: not measured, three ways (skipped) */
    { NULL, 1, { 5 }, COST, 1.0, "cpu", NULL, "out of memory" },
    { NULL, 1, { 5 }, COST_NIL, 0, "cpu", NULL, NULL },
    { NULL, 1, { 5 }, COST_NONE, 0, "cpu", NULL, NULL },
    /* a shard of two tables, an empty one, and other kinds: not single costs, ignored */
    { NULL, 2, { 6, 7 }, COST, 1.0, "cpu", NULL, NULL },
    { NULL, 0, { 0 }, COST, 1.0, "cpu", NULL, NULL },
    { "plan", 1, { 6 }, COST, 1.0, "cpu", NULL, NULL },
    { "features", 1, { 6 }, COST, 1.0, "cpu", NULL, NULL },
    /* table 8 with `pieces` [nil]: the whole table */
    { NULL, 1, { 8 }, COST, 2.5, "cpu", &WHOLE, NULL },
    /* pieces of table 1 alone: [0, 8) twice (median 0.6), [8, 16) once; never table 1's */
    { NULL, 1, { 1 }, COST, 0.5, "cpu", &LEFT, NULL },
    { NULL, 1, { 1 }, COST, 0.7, "cpu", &LEFT, NULL },
    { NULL, 1, { 1 }, COST, 0.9, "cpu", &RIGHT, NULL },
    /* a piece measured on gpu, and a piece's unmeasured record */
    { NULL, 1, { 1 }, COST, 50.0, "gpu", &RIGHT, NULL },
    { NULL, 1, { 1 }, COST_NIL, 0, "cpu", &QUARTER, NULL },
};
#define NRECS ((int)(sizeof RECS / sizeof RECS[0]))

static void load(as_eval_singles *s)
{
    memset(s, 0, sizeof *s);
    char err[512];
    for (int i = 0; i < NRECS; i++) {
        err[0] = 0;
        int rc = take(s, &RECS[i], err, sizeof err);
        if (!CHECK_EQ_I64(rc, 0)) fprintf(stderr, "    record %d: %s\n", i, err);
    }
}

TEST(evalfloor_singles_take)
{
    as_eval_singles s;
    load(&s);
    /* whole-table records: tables 1 (3), 2 (3), 3, 4, 8 */
    CHECK_EQ_I64(s.n, 9);
    CHECK_EQ_I64(s.skipped, 3);                     /* table 5's */
    const int64_t ids[9] = { 1, 1, 1, 2, 2, 2, 3, 4, 8 };
    const double cost[9] = { 3, 1, 2, 6, 100, 4, 7, 9, 2.5 };
    for (int i = 0; i < 9 && i < s.n; i++) {
        CHECK_EQ_I64(s.ids[i], ids[i]);
        CHECK_NEAR(s.cost[i], cost[i], 0);
    }
    /* the devices in order of appearance: cpu, gpu, "" */
    CHECK_EQ_I64(s.ndevices, 3);
    if (s.ndevices == 3) {
        CHECK_STR(s.devices[0], "cpu");
        CHECK_STR(s.devices[1], "gpu");
        CHECK_STR(s.devices[2], "");
        CHECK_EQ_I64(s.dev[4], 1);
        CHECK_EQ_I64(s.dev[6], 2);
    }
    /* one-piece records apart: (1, [0,8)), (1, [8,16)) and (1, [0,4)), keyed 0, 1, 2 */
    CHECK(s.pieces != NULL);
    CHECK_EQ_I64(s.npk, 3);
    if (s.pieces && s.npk == 3) {
        CHECK(s.pkid[0] == 1 && as_piece_eq(&s.pkey[0], &LEFT));
        CHECK(s.pkid[1] == 1 && as_piece_eq(&s.pkey[1], &RIGHT));
        CHECK(s.pkid[2] == 1 && as_piece_eq(&s.pkey[2], &QUARTER));
        CHECK_EQ_I64(s.pieces->n, 4);
        CHECK_EQ_I64(s.pieces->skipped, 1);
        CHECK_EQ_I64(s.pieces->ids[0], 0);
        CHECK_EQ_I64(s.pieces->ids[2], 1);
    }
    as_eval_singles_free(&s);
    CHECK(s.n == 0 && s.ids == NULL && s.pieces == NULL && s.devices == NULL);
    as_eval_singles_free(&s);                        /* again: harmless */
}

TEST(evalfloor_singles_build_and_get)
{
    as_eval_singles s;
    load(&s);
    int64_t cnt = -1;
    /* any device: every record */
    as_eval_singles_build(&s, NULL);
    CHECK_EQ_I64(s.nu, 5);
    CHECK_EQ_I64(s.used, 9);
    CHECK_EQ_I64(s.other_device, 0);
    const int64_t uid[5] = { 1, 2, 3, 4, 8 };
    for (int i = 0; i < 5 && i < s.nu; i++) CHECK_EQ_I64(s.uid[i], uid[i]);   /* ascending */
    CHECK_NEAR(as_eval_singles_get(&s, 1, &cnt), 2.0, 0);     /* 1, 2, 3 */
    CHECK_EQ_I64(cnt, 3);
    CHECK_NEAR(as_eval_singles_get(&s, 2, &cnt), 6.0, 0);     /* 4, 6, 100 */
    CHECK_EQ_I64(cnt, 3);
    CHECK_NEAR(as_eval_singles_get(&s, 4, &cnt), 9.0, 0);
    CHECK_EQ_I64(cnt, 1);
    CHECK_NEAR(as_eval_singles_get(&s, 8, NULL), 2.5, 0);
    CHECK(isnan(as_eval_singles_get(&s, 5, &cnt)));           /* only unmeasured records */
    CHECK_EQ_I64(cnt, 0);
    CHECK(isnan(as_eval_singles_get(&s, 6, &cnt)));           /* only in a shard of two */
    CHECK_EQ_I64(cnt, 0);
    CHECK(isnan(as_eval_singles_get(&s, 0, NULL)));
    CHECK(isnan(as_eval_singles_get(&s, 100, NULL)));
    /* pieces, any device: [8, 16) of 0.9 and 50: mean of the two */
    CHECK_NEAR(as_eval_singles_get_piece(&s, 1, &LEFT, &cnt), 0.6, 1e-15);
    CHECK_EQ_I64(cnt, 2);
    CHECK_NEAR(as_eval_singles_get_piece(&s, 1, &RIGHT, &cnt), 25.45, 1e-12);
    CHECK_EQ_I64(cnt, 2);

    /* cpu: its records and those naming no device; gpu's counted apart */
    as_eval_singles_build(&s, "cpu");
    CHECK_EQ_I64(s.nu, 4);                                    /* 1, 2, 3, 8 */
    CHECK_EQ_I64(s.used, 7);
    CHECK_EQ_I64(s.other_device, 2);                          /* table 2's 100, table 4's 9 */
    CHECK_NEAR(as_eval_singles_get(&s, 2, &cnt), 5.0, 0);     /* (4 + 6) / 2 */
    CHECK_EQ_I64(cnt, 2);
    CHECK_NEAR(as_eval_singles_get(&s, 3, &cnt), 7.0, 0);     /* no device: counts */
    CHECK_EQ_I64(cnt, 1);
    CHECK(isnan(as_eval_singles_get(&s, 4, &cnt)));           /* measured on gpu only */
    CHECK_EQ_I64(cnt, 0);
    CHECK_NEAR(as_eval_singles_get_piece(&s, 1, &LEFT, &cnt), 0.6, 1e-15);
    CHECK_EQ_I64(cnt, 2);
    CHECK_NEAR(as_eval_singles_get_piece(&s, 1, &RIGHT, &cnt), 0.9, 0);
    CHECK_EQ_I64(cnt, 1);
    CHECK(isnan(as_eval_singles_get_piece(&s, 1, &QUARTER, &cnt)));   /* unmeasured */
    CHECK_EQ_I64(cnt, 0);
    CHECK(isnan(as_eval_singles_get_piece(&s, 2, &LEFT, &cnt)));      /* another table's */
    CHECK_EQ_I64(cnt, 0);
    CHECK(isnan(as_eval_singles_get_piece(&s, 1, &WHOLE, &cnt)));     /* the whole is no piece */
    CHECK_EQ_I64(cnt, 0);

    /* a device no record names: only the records naming none */
    as_eval_singles_build(&s, "tpu");
    CHECK_EQ_I64(s.nu, 1);
    CHECK_EQ_I64(s.used, 1);
    CHECK_EQ_I64(s.other_device, 8);
    CHECK_NEAR(as_eval_singles_get(&s, 3, NULL), 7.0, 0);
    CHECK(isnan(as_eval_singles_get(&s, 1, NULL)));
    /* "" is any device, as NULL */
    as_eval_singles_build(&s, "");
    CHECK_EQ_I64(s.used, 9);
    CHECK_NEAR(as_eval_singles_get(&s, 2, NULL), 6.0, 0);
    as_eval_singles_free(&s);

    /* nothing taken: everything unknown */
    memset(&s, 0, sizeof s);
    as_eval_singles_build(&s, "cpu");
    CHECK_EQ_I64(s.nu, 0);
    CHECK(isnan(as_eval_singles_get(&s, 1, &cnt)));
    CHECK_EQ_I64(cnt, 0);
    cnt = -1;
    CHECK(isnan(as_eval_singles_get_piece(&s, 1, &LEFT, &cnt)));
    CHECK_EQ_I64(cnt, 0);
    as_eval_singles_free(&s);
}

TEST(evalfloor_singles_bad_data)
{
    as_eval_singles s;
    memset(&s, 0, sizeof s);
    char err[512];
    /* a measured cost must be finite and above 0 */
    crec c = { NULL, 1, { 1 }, COST, 0.0, "cpu", NULL, NULL };
    CHECK_EQ_I64(take(&s, &c, err, sizeof err), -1);
    CHECK_STR(err, "'cost_ms' = 0 is not a positive cost");
    c.cost = -2.5;
    CHECK_EQ_I64(take(&s, &c, err, sizeof err), -1);
    CHECK_STR(err, "'cost_ms' = -2.5 is not a positive cost");
    c.cost = NAN;
    CHECK_EQ_I64(take(&s, &c, err, sizeof err), -1);
    CHECK_STR(err, "'cost_ms' is not finite (nan)");
    c.cost = INFINITY;
    CHECK_EQ_I64(take(&s, &c, err, sizeof err), -1);
    CHECK_STR(err, "'cost_ms' is not finite (inf)");
    /* bad tables: a negative id */
    crec d = { NULL, 1, { -1 }, COST, 1.0, "cpu", NULL, NULL };
    CHECK_EQ_I64(take(&s, &d, err, sizeof err), -1);
    CHECK_STR(err, "tables[0] is not a table id (a non-negative integer)");
    /* bad pieces: c1 not above c0 */
    const as_piece bad = { 4, 4, 0, 10 };
    crec e = { NULL, 1, { 1 }, COST, 1.0, "cpu", &bad, NULL };
    CHECK_EQ_I64(take(&s, &e, err, sizeof err), -1);
    CHECK(strstr(err, "pieces[0]: piece columns [4, 4) are not a range") == err);
    /* nothing taken from them */
    CHECK_EQ_I64(s.n, 0);
    CHECK_EQ_I64(s.skipped, 0);
    CHECK(s.pieces == NULL || s.pieces->n == 0);
    /* an unmeasured record's cost is not looked at */
    crec f = { NULL, 1, { 1 }, COST, -1.0, "cpu", NULL, "timeout" };
    CHECK_EQ_I64(take(&s, &f, err, sizeof err), 0);
    CHECK_EQ_I64(s.skipped, 1);
    as_eval_singles_free(&s);
}

TEST(evalfloor_singles_file)
{
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/singles.ast", ut_tmpdir());
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    for (int i = 0; i < 8; i++) {
        pack_cost(as_writer_pk(w), &RECS[i]);
        as_writer_end_record(w);
    }
    as_writer_close(w);
    as_eval_singles s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_I64(as_eval_singles_file(&s, path, err, sizeof err), 0);
    CHECK_EQ_I64(s.n, 8);
    as_eval_singles_build(&s, "cpu");
    CHECK_NEAR(as_eval_singles_get(&s, 1, NULL), 2.0, 0);
    CHECK_NEAR(as_eval_singles_get(&s, 2, NULL), 5.0, 0);
    as_eval_singles_free(&s);
    /* a bad record: the file, the record and the message */
    w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    pack_cost(as_writer_pk(w), &RECS[0]);
    as_writer_end_record(w);
    crec bad = { NULL, 1, { 1 }, COST, 0.0, "cpu", NULL, NULL };
    pack_cost(as_writer_pk(w), &bad);
    as_writer_end_record(w);
    as_writer_close(w);
    memset(&s, 0, sizeof s);
    CHECK_EQ_I64(as_eval_singles_file(&s, path, err, sizeof err), -1);
    /* the third record, 1-based, the header first */
    char want[700];
    snprintf(want, sizeof want, "%s: record 3: cost: 'cost_ms' = 0 is not a positive cost", path);
    CHECK_STR(err, want);
    as_eval_singles_free(&s);
}

/* ---- floors of plans -------------------------------------------------------------------- */

TEST(evalfloor_measured_floors)
{
    as_eval_singles s;
    load(&s);
    as_eval_singles_build(&s, "cpu");
    /* A: tables 1 and 2 whole: max(2, 5); B: table 1 in two column halves: max(0.6, 0.9),
     * never table 1's 2; C: tables 1 and 4 (no cpu cost): unknown; D: no tables */
    int64_t ta[2] = { 1, 2 }, tb[2] = { 1, 1 }, tc[2] = { 1, 4 };
    as_piece pb[2] = { LEFT, RIGHT }, pe[2] = { WHOLE, QUARTER };
    as_planrec_full p[5];
    memset(p, 0, sizeof p);
    p[0].T = 2; p[0].tables = ta;
    p[1].T = 2; p[1].tables = tb; p[1].pieces = pb;
    p[2].T = 2; p[2].tables = tc;
    p[3].T = 0;
    /* E: table 2 whole and an unmeasured piece of table 1 */
    int64_t te[2] = { 2, 1 };
    p[4].T = 2; p[4].tables = te; p[4].pieces = pe;
    as_eval_floor_measured(p, 5, &s);
    CHECK_NEAR(p[0].floor, 5.0, 0);
    CHECK_EQ_I64(p[0].floor_unknown, 0);
    CHECK_NEAR(p[1].floor, 0.9, 0);
    CHECK_EQ_I64(p[1].floor_unknown, 0);
    CHECK(isnan(p[2].floor));
    CHECK_EQ_I64(p[2].floor_unknown, 1);
    CHECK(isnan(p[3].floor));
    CHECK_EQ_I64(p[3].floor_unknown, 0);
    CHECK(isnan(p[4].floor));
    CHECK_EQ_I64(p[4].floor_unknown, 1);
    /* any device: table 4 known (9), table 2's median 6 */
    as_eval_singles_build(&s, NULL);
    as_eval_floor_measured(p, 3, &s);
    CHECK_NEAR(p[0].floor, 6.0, 0);
    CHECK_NEAR(p[1].floor, 25.45, 1e-12);
    CHECK_NEAR(p[2].floor, 9.0, 0);
    CHECK_EQ_I64(p[2].floor_unknown, 0);
    /* no floor at all */
    as_eval_floor_none(p, 5);
    for (int j = 0; j < 5; j++) {
        CHECK(isnan(p[j].floor));
        CHECK_EQ_I64(p[j].floor_unknown, p[j].T);
    }
    as_eval_singles_free(&s);
}

/* a data-parallel table (assign -2) alone on a shard: its single cost over K, an
   approximation of its slice of the batch */
TEST(evalfloor_data_parallel)
{
    as_eval_singles s;
    load(&s);
    as_eval_singles_build(&s, "cpu");
    int64_t t[2] = { 1, 2 }, a[2] = { 0, AS_DP }, b[2] = { AS_DP, 1 };
    as_planrec_full p[2];
    memset(p, 0, sizeof p);
    p[0].T = p[1].T = 2;
    p[0].K = p[1].K = 2;
    p[0].tables = p[1].tables = t;
    p[0].assign = a;                    /* table 2 (5 ms alone) on both: 2.5, above table 1's 2 */
    p[1].assign = b;                    /* table 1 (2 ms) on both: 1; table 2 on shard 1: 5 */
    as_eval_floor_measured(p, 2, &s);
    CHECK_NEAR(p[0].floor, 2.5, 0);
    CHECK_EQ_I64(p[0].floor_unknown, 0);
    CHECK_NEAR(p[1].floor, 5.0, 0);
    p[0].K = 4;                         /* over 4 shards: 1.25, table 1's 2 is the costliest */
    as_eval_floor_measured(p, 1, &s);
    CHECK_NEAR(p[0].floor, 2.0, 0);
    as_eval_singles_free(&s);
}

static as_planrec_full marked(int ok, double kmax, double floor)
{
    as_planrec_full q;
    memset(&q, 0, sizeof q);
    q.ok = ok;
    q.kmax = kmax;
    q.floor = floor;
    q.at_floor = 7;
    return q;
}

TEST(evalfloor_mark)
{
    as_planrec_full p[7] = {
        marked(1, 5.05, 5.0),   /* 1 % above: within 2 % */
        marked(1, 5.2, 5.0),    /* 4 % above */
        marked(1, 4.0, 5.0),    /* below its floor (noise): at the floor */
        marked(0, 5.0, 5.0),    /* not usable */
        marked(1, 5.0, NAN),    /* floor unknown */
        marked(1, NAN, 5.0),    /* no kernel cost */
        marked(1, 5.0, 5.0),    /* exactly at it */
    };
    as_eval_floor_mark(p, 7, 0.02);
    const int want[7] = { 1, 0, 1, -1, -1, -1, 1 };
    for (int j = 0; j < 7; j++) {
        CHECK_EQ_I64(p[j].at_floor, want[j]);
        CHECK_NEAR(p[j].floor_margin, 0.02, 0);
    }
    /* margin 0 (estimated costs): 1 % above is above */
    as_eval_floor_mark(p, 7, AS_EVAL_FLOOR_MARGIN_ESTIMATED);
    const int want0[7] = { 0, 0, 1, -1, -1, -1, 1 };
    for (int j = 0; j < 7; j++) {
        CHECK_EQ_I64(p[j].at_floor, want0[j]);
        CHECK_NEAR(p[j].floor_margin, 0, 0);
    }
    CHECK_NEAR(AS_EVAL_FLOOR_MARGIN_MEASURED, 0.02, 0);
}

static as_planrec_full bplan(int64_t run, int64_t task, int ok, double kmax, double floor)
{
    as_planrec_full q = marked(ok, kmax, floor);
    q.run = run;
    q.task = task;
    return q;
}

/* the (run, task) pairs of the bound tests, plans interleaved:
 *   run 0 task 0: best 5.05 (of 5.05, 7), floor 5: bound within 2 %, not at margin 0
 *   run 0 task 1: best 10 (the 3 is not usable), floor 4: not bound
 *   run 0 task 2: best 3, floor unknown
 *   run 1 task 0: no usable plan: not counted
 *   run 1 task 1: best 2, floor 2.5 (the one known): bound
 *   run 2 task 0: best 3.5, floors 3 and 4: the task's is the largest, 4: bound (over 3 it
 *                 would not be: 3.5 > 3.06) */
static void bound_plans(as_planrec_full p[11])
{
    p[0] = bplan(0, 0, 1, 5.05, 5.0);
    p[1] = bplan(0, 1, 1, 10.0, 4.0);
    p[2] = bplan(1, 1, 1, 2.0, NAN);
    p[3] = bplan(2, 0, 1, 3.5, 3.0);
    p[4] = bplan(0, 0, 1, 7.0, 5.0);
    p[5] = bplan(0, 1, 0, 3.0, 4.0);
    p[6] = bplan(0, 2, 1, 3.0, NAN);
    p[7] = bplan(1, 0, 0, 1.0, 1.0);
    p[8] = bplan(1, 1, 1, 3.0, 2.5);
    p[9] = bplan(2, 0, 1, 3.9, 4.0);
    p[10] = bplan(1, 0, 1, NAN, 1.0);   /* ok but no cost: not usable either */
}

TEST(evalfloor_bound)
{
    as_planrec_full p[11];
    bound_plans(p);
    as_eval_floorbound fb;
    memset(&fb, 0x5a, sizeof fb);
    as_eval_floor_bound(p, 11, 0.02, &fb);
    CHECK_EQ_I64(fb.tasks, 5);
    CHECK_EQ_I64(fb.known, 4);
    CHECK_EQ_I64(fb.bound, 3);
    CHECK_EQ_I64(fb.runs, 3);
    CHECK_NEAR(fb.margin, 0.02, 0);
    as_eval_floor_bound(p, 11, 0, &fb);
    CHECK_EQ_I64(fb.tasks, 5);
    CHECK_EQ_I64(fb.known, 4);
    CHECK_EQ_I64(fb.bound, 2);                     /* run 0 task 0 is 1 % above */
    CHECK_NEAR(fb.margin, 0, 0);
    /* run 0 alone: its three tasks, one with no floor, one bound */
    as_planrec_full q[4] = { p[0], p[1], p[4], p[6] };
    as_eval_floor_bound(q, 4, 0.02, &fb);
    CHECK_EQ_I64(fb.tasks, 3);
    CHECK_EQ_I64(fb.known, 2);
    CHECK_EQ_I64(fb.bound, 1);
    CHECK_EQ_I64(fb.runs, 1);
    /* no plans */
    as_eval_floor_bound(p, 0, 0.02, &fb);
    CHECK_EQ_I64(fb.tasks, 0);
    CHECK_EQ_I64(fb.known, 0);
    CHECK_EQ_I64(fb.bound, 0);
    CHECK_EQ_I64(fb.runs, 0);
}

static char *words(const as_eval_floorbound *fb, as_eval_format fmt, const char *label)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_floor_words(f, fmt, fb, label);
    fclose(f);
    return buf;
}

TEST(evalfloor_words)
{
    as_planrec_full p[11];
    bound_plans(p);
    as_eval_floorbound fb;
    as_eval_floor_bound(p, 11, 0.02, &fb);
    char *t = words(&fb, AS_EVAL_TEXT, "measured");
    CHECK_STR(t, "Floor-bound: 3 of 4 task runs (the best plan's slowest shard is at most 2 % above the floor, the costliest "
                 "table measured alone, or below it): in those, no table-wise plan can go below the floor, whatever the "
                 "planner, so balance and speedup cannot improve much; splitting tables is what can; the floor is unknown "
                 "for 1 more task run (tables without a single-table cost)");
    free(t);
    t = words(&fb, AS_EVAL_MARKDOWN, "measured");
    CHECK(strstr(t, "**Floor-bound: 3 of 4 task runs**") == t);
    free(t);
    /* one run, margin 0, none bound, estimated */
    as_eval_floorbound one = { 2, 2, 0, 1, 0.0 };
    t = words(&one, AS_EVAL_TEXT, "estimated");
    CHECK_STR(t, "Floor-bound: 0 of 2 tasks (the best plan's slowest shard is at or below the floor, the costliest table "
                 "predicted alone): every best plan is above its floor, so table-wise planning still has room");
    free(t);
    /* unknown everywhere */
    as_eval_floorbound none = { 1, 0, 0, 1, 0.02 };
    t = words(&none, AS_EVAL_TEXT, "measured");
    CHECK(strstr(t, "Floor: unknown for the one task: no single-table cost for their tables") == t);
    free(t);
    none.tasks = 4;
    t = words(&none, AS_EVAL_TEXT, "estimated");
    CHECK(strstr(t, "Floor: unknown for all 4 tasks: no cost model prices the tables alone") == t);
    free(t);
    /* the paragraph: the sentence, a full stop, a blank line; CSV: nothing */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_eval_print_floor(f, AS_EVAL_CSV, p, 11, 0.02, "measured");
    fclose(f);
    CHECK_EQ_I64(len, 0);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    as_eval_print_floor(f, AS_EVAL_TEXT, p, 11, 0.02, "measured");
    fclose(f);
    CHECK(strstr(buf, "Floor-bound: 3 of 4 task runs") == buf);
    CHECK(len > 4 && !strcmp(buf + len - 4, ").\n\n"));
    free(buf);
}
