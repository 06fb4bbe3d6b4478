/* test_evalplan.c - a `plan` record as as-eval reads it (lib/eval/evalplan.h) on records packed
 * here (docs/FORMAT.md "plan"): a record with every field as-plan and as-bench write, each
 * read as stated; an older record without the optional fields; feasibility, nil and
 * clamped estimated costs; hostile records (wrong types, negative or inconsistent lengths,
 * NaN and infinite costs) each -1 with a message naming the field; as_planrec_full_free. */
#include "unit.h"

#include "planrec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- packing --------------------------------------------------------------------------------- */

static void pk_s(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void pk_ints(msgpack_packer *pk, size_t n, const int64_t *v)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) msgpack_pack_int64(pk, v[i]);
}

static void pk_dbls(msgpack_packer *pk, size_t n, const double *v)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) msgpack_pack_double(pk, v[i]);
}

#define INTS(...) pk_ints(pk, sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), (int64_t[]){ __VA_ARGS__ })
#define DBLS(...) pk_dbls(pk, sizeof((double[]){ __VA_ARGS__ }) / sizeof(double), (double[]){ __VA_ARGS__ })
/* a value packer */
#define V(name, ...) static void name(msgpack_packer *pk) { __VA_ARGS__; }

typedef void (*valfn)(msgpack_packer *);
typedef struct {
    const char *key;
    valfn val;
} field;

/* the good record: task 3, 2 shards, 3 entries: table 4 whole on shard 0, table 5 in two
 * column halves [0, 8) on shard 0 and [8, 16) on shard 1 */
V(v_kind, pk_s(pk, "plan"))
V(v_task, msgpack_pack_int64(pk, 3))
V(v_alg, pk_s(pk, "cost-greedy+split"))
V(v_split, pk_s(pk, "test"))
V(v_seed, msgpack_pack_int64(pk, 7))
V(v_shards, msgpack_pack_int64(pk, 2))
V(v_tables, INTS(4, 5, 5))
V(v_assign, INTS(0, 0, 1))
V(v_pieces, msgpack_pack_array(pk, 3); msgpack_pack_nil(pk); INTS(0, 8, 0, 10); INTS(8, 16, 0, 10))
V(v_feasible, msgpack_pack_true(pk))
V(v_mem_bytes, INTS(100, 200))
V(v_counts, INTS(2, 1))
V(v_cost_ms, DBLS(1.5, 2.5))
V(v_cost_kind, pk_s(pk, "measured"))
V(v_cost_device, pk_s(pk, "cuda:H100"))
V(v_cost_spread, msgpack_pack_array(pk, 2); msgpack_pack_double(pk, 0.01); msgpack_pack_nil(pk))
V(v_cost_noisy, msgpack_pack_array(pk, 2); msgpack_pack_false(pk); msgpack_pack_true(pk))
V(v_noise_threshold, msgpack_pack_double(pk, 0.05))
V(v_comm_in, INTS(64, 128))
V(v_comm_out, INTS(512, 1024))
V(v_comm_gbps, msgpack_pack_double(pk, 600))
V(v_pred_ms, DBLS(1.25, 2.0))
V(v_item_pred_ms, DBLS(0.5, 0.75, 2.0))
V(v_names, msgpack_pack_array(pk, 3); pk_s(pk, "a"); pk_s(pk, "b"); pk_s(pk, "b"))
V(v_mem_terms, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); INTS(60, 120); pk_s(pk, "optimizer"); INTS(30, 60);
  pk_s(pk, "pipeline"); INTS(10, 20))
V(v_mem_cap, msgpack_pack_int64(pk, 1000))
V(v_plan_ms, msgpack_pack_double(pk, 0.3))
V(v_model_quality, msgpack_pack_map(pk, 4); pk_s(pk, "r2"); msgpack_pack_double(pk, 0.41); pk_s(pk, "linear_r2");
  msgpack_pack_double(pk, 0.3); pk_s(pk, "min_r2"); msgpack_pack_double(pk, 0.9); pk_s(pk, "weak"); msgpack_pack_true(pk))

static const field GOOD[] = {
    { "kind", v_kind }, { "task", v_task }, { "alg", v_alg }, { "split", v_split }, { "seed", v_seed },
    { "shards", v_shards }, { "tables", v_tables }, { "assign", v_assign }, { "pieces", v_pieces },
    { "feasible", v_feasible }, { "mem_bytes", v_mem_bytes }, { "counts", v_counts }, { "cost_ms", v_cost_ms },
    { "cost_kind", v_cost_kind }, { "cost_device", v_cost_device }, { "cost_spread", v_cost_spread },
    { "cost_noisy", v_cost_noisy }, { "noise_threshold", v_noise_threshold }, { "comm_in_bytes", v_comm_in },
    { "comm_out_bytes", v_comm_out }, { "comm_gbps", v_comm_gbps }, { "pred_ms", v_pred_ms },
    { "item_pred_ms", v_item_pred_ms }, { "names", v_names }, { "mem_terms", v_mem_terms }, { "mem_cap", v_mem_cap },
    { "plan_ms", v_plan_ms }, { "model_quality", v_model_quality },
};
#define NGOOD ((int)(sizeof GOOD / sizeof GOOD[0]))

/* an older as-plan's record: no optional field */
static const field OLD[] = {
    { "kind", v_kind }, { "task", v_task }, { "alg", v_alg }, { "shards", v_shards }, { "tables", v_tables },
    { "assign", v_assign }, { "pieces", v_pieces },
};
#define NOLD ((int)(sizeof OLD / sizeof OLD[0]))

/* a record of base[0..n) with key's value from val (NULL: key dropped; a key not in base:
 * added), read by as_planrec_full_read into p; its return, err filled */
static int read_with(const field *base, int n, const char *key, valfn val, as_planrec_full *p, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int found = 0;
    for (int i = 0; i < n; i++) found |= key && !strcmp(base[i].key, key);
    msgpack_pack_map(&pk, (size_t)(n - (found && !val) + (!found && key && val)));
    for (int i = 0; i < n; i++) {
        const int here = key && !strcmp(base[i].key, key);
        if (here && !val) continue;
        pk_s(&pk, base[i].key);
        (here ? val : base[i].val)(&pk);
    }
    if (!found && key && val) {
        pk_s(&pk, key);
        val(&pk);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = -2;
    if (msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS) {
        err[0] = 0;
        rc = as_planrec_full_read(&up.data, p, err, errlen);
    }
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* values of the tests below */
V(tabs, INTS(4, 5, 6))
V(nil, msgpack_pack_nil(pk))
V(unplaced, INTS(0, -1, -1))
V(single, msgpack_pack_nil(pk))
V(no, msgpack_pack_false(pk))
V(one_nil, msgpack_pack_array(pk, 2); msgpack_pack_nil(pk); msgpack_pack_int64(pk, 2))
V(est, pk_s(pk, "estimated"))
V(neg, DBLS(-0.5, -0.25))
V(mixed, DBLS(-0.5, 3.0))
V(zero, DBLS(0.0, 1.0))
V(zero_last, DBLS(1.0, 2.0, 0.0))
V(three, msgpack_pack_int64(pk, 3))
V(t0, msgpack_pack_int64(pk, 0))

/* ---- good records ---------------------------------------------------------------------------- */

TEST(planrec_full_every_field)
{
    as_planrec_full p;
    char err[512];
    CHECK_EQ_I64(read_with(GOOD, NGOOD, NULL, NULL, &p, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_EQ_I64(p.run, 0);                        /* the caller's to set */
    CHECK_EQ_I64(p.task, 3);
    CHECK_STR(p.alg, "cost-greedy+split");
    CHECK_STR(p.split, "test");
    CHECK_EQ_I64(p.seed, 7);
    CHECK_EQ_I64(p.K, 2);
    CHECK_EQ_I64(p.T, 3);
    CHECK(p.tables && p.tables[0] == 4 && p.tables[1] == 5 && p.tables[2] == 5);
    CHECK(p.assign && p.assign[0] == 0 && p.assign[1] == 0 && p.assign[2] == 1);
    CHECK(p.pieces != NULL);
    if (p.pieces) {
        CHECK(as_piece_whole(&p.pieces[0]));
        CHECK(as_piece_eq(&p.pieces[1], &(as_piece){ 0, 8, 0, 10 }));
        CHECK(as_piece_eq(&p.pieces[2], &(as_piece){ 8, 16, 0, 10 }));
    }
    CHECK(p.cost && p.cost[0] == 1.5 && p.cost[1] == 2.5);
    CHECK(p.mem && p.mem[0] == 100 && p.mem[1] == 200);
    CHECK_EQ_I64(p.feasible, 1);
    CHECK_EQ_I64(p.cost_kind, 1);                  /* measured */
    CHECK_STR(p.device, "cuda:H100");
    CHECK(p.spread && p.spread[0] == 0.01 && isnan(p.spread[1]));   /* nil: unknown */
    CHECK(p.noisy && p.noisy[0] == 0 && p.noisy[1] == 1);
    CHECK_NEAR(p.noise_threshold, 0.05, 0);
    CHECK_EQ_I64(p.clamped, 0);
    CHECK(p.comm_in && p.comm_in[0] == 64 && p.comm_in[1] == 128);
    CHECK(p.comm_out && p.comm_out[0] == 512 && p.comm_out[1] == 1024);
    CHECK(p.comm_ms == NULL);                      /* nothing charged yet */
    CHECK(p.pred && p.pred[0] == 1.25 && p.pred[1] == 2.0);
    CHECK(p.item_pred && p.item_pred[0] == 0.5 && p.item_pred[1] == 0.75 && p.item_pred[2] == 2.0);
    CHECK(p.names != NULL);
    if (p.names) {
        CHECK_STR(p.names[0], "a");
        CHECK_STR(p.names[1], "b");
        CHECK_STR(p.names[2], "b");
    }
    /* mem_terms [3K]: weights of shards 0, 1; optimizer; pipeline */
    CHECK(p.mterm != NULL);
    if (p.mterm) {
        const uint64_t want[6] = { 60, 120, 30, 60, 10, 20 };
        for (int i = 0; i < 6; i++) CHECK_EQ_I64(p.mterm[i], want[i]);
    }
    CHECK_EQ_I64(p.mem_cap, 1000);
    /* the cost model that placed it: weak */
    CHECK_EQ_I64(p.has_mq, 1);
    CHECK(p.mq.judged && p.mq.weak && p.mq.r2 == 0.41 && p.mq.linear_r2 == 0.3 && p.mq.min_r2 == 0.9);
    /* the floor unknown, nothing computed */
    CHECK(isnan(p.floor));
    CHECK_EQ_I64(p.floor_unknown, 3);              /* every entry without a single cost */
    CHECK(isnan(p.over_floor));
    CHECK_EQ_I64(p.at_floor, -1);
    CHECK(isnan(p.floor_margin));
    as_planrec_full_free(&p);
    CHECK(p.tables == NULL && p.cost == NULL && p.names == NULL && p.mterm == NULL && p.K == 0);
}

TEST(planrec_full_older_record)
{
    as_planrec_full p;
    char err[512];
    CHECK_EQ_I64(read_with(OLD, NOLD, NULL, NULL, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.task, 3);
    CHECK_STR(p.alg, "cost-greedy+split");
    CHECK_STR(p.split, "");                        /* none */
    CHECK_EQ_I64(p.seed, -1);
    CHECK_EQ_I64(p.K, 2);
    CHECK_EQ_I64(p.T, 3);
    CHECK_EQ_I64(p.feasible, 1);                   /* every entry placed */
    CHECK(p.mem == NULL);
    CHECK(p.cost && isnan(p.cost[0]) && isnan(p.cost[1]));   /* unknown */
    CHECK_EQ_I64(p.cost_kind, 0);
    CHECK_STR(p.device, "");
    CHECK(p.spread == NULL && p.noisy == NULL);
    CHECK(isnan(p.noise_threshold));
    CHECK(p.comm_in == NULL && p.comm_out == NULL && p.comm_ms == NULL);
    CHECK(p.pred == NULL && p.item_pred == NULL && p.names == NULL && p.mterm == NULL);
    CHECK_EQ_I64(p.mem_cap, 0);
    CHECK_EQ_I64(p.has_mq, 0);                     /* placed without a cost model */
    CHECK(isnan(p.floor));
    as_planrec_full_free(&p);
    /* without pieces: every entry whole (distinct tables then) */
    field older[NOLD];
    memcpy(older, OLD, sizeof older);
    older[4].val = tabs;
    CHECK_EQ_I64(read_with(older, NOLD, "pieces", NULL, &p, err, sizeof err), 0);
    CHECK(p.pieces == NULL);
    CHECK(p.tables && p.tables[2] == 6);
    as_planrec_full_free(&p);
    /* the optional fields nil: as absent */
    static const char *const opt[] = { "cost_ms", "cost_spread", "cost_noisy", "noise_threshold", "comm_in_bytes",
                                       "pred_ms", "item_pred_ms", "names", "mem_terms", "model_quality" };
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        field f[NGOOD];
        memcpy(f, GOOD, sizeof f);
        for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, opt[i])) f[k].val = nil;
        /* comm_in_bytes and comm_out_bytes come together */
        if (!strcmp(opt[i], "comm_in_bytes")) for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, "comm_out_bytes")) f[k].val = nil;
        int rc = read_with(f, NGOOD, NULL, NULL, &p, err, sizeof err);
        if (!CHECK_EQ_I64(rc, 0)) fprintf(stderr, "    %s nil: %s\n", opt[i], err);
        if (rc) continue;
        if (!strcmp(opt[i], "cost_ms")) CHECK(isnan(p.cost[0]) && isnan(p.cost[1]) && p.cost_kind == 0 && !p.device[0]);
        if (!strcmp(opt[i], "cost_spread")) CHECK(p.spread == NULL);
        if (!strcmp(opt[i], "cost_noisy")) CHECK(p.noisy == NULL);
        if (!strcmp(opt[i], "noise_threshold")) CHECK(isnan(p.noise_threshold));
        if (!strcmp(opt[i], "comm_in_bytes")) CHECK(p.comm_in == NULL && p.comm_out == NULL);
        if (!strcmp(opt[i], "pred_ms")) CHECK(p.pred == NULL);
        if (!strcmp(opt[i], "item_pred_ms")) CHECK(p.item_pred == NULL);
        if (!strcmp(opt[i], "names")) CHECK(p.names == NULL);
        if (!strcmp(opt[i], "mem_terms")) CHECK(p.mterm == NULL);
        if (!strcmp(opt[i], "model_quality")) CHECK(!p.has_mq);
        as_planrec_full_free(&p);
    }
}

TEST(planrec_full_feasible_and_costs)
{
    as_planrec_full p;
    char err[512];
    /* an unplaced entry makes the plan infeasible whatever `feasible` says */
    field f[NGOOD];
    memcpy(f, GOOD, sizeof f);
    for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, "pieces")) f[k].val = single;   /* nil: all whole */
    for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, "tables")) f[k].val = tabs;
    CHECK_EQ_I64(read_with(f, NGOOD, "assign", unplaced, &p, err, sizeof err), 0);
    CHECK(p.pieces == NULL);
    CHECK_EQ_I64(p.feasible, 0);
    CHECK(p.assign && p.assign[1] == -1 && p.assign[2] == -1);
    as_planrec_full_free(&p);
    CHECK_EQ_I64(read_with(OLD, NOLD, "feasible", no, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.feasible, 0);                   /* as written */
    as_planrec_full_free(&p);
    /* no `feasible` and an unplaced entry: infeasible */
    field g[NOLD];
    memcpy(g, OLD, sizeof g);
    g[4].val = tabs;
    g[6].val = single;
    CHECK_EQ_I64(read_with(g, NOLD, "assign", unplaced, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.feasible, 0);
    as_planrec_full_free(&p);

    /* nil costs: not measured, NaN */
    CHECK_EQ_I64(read_with(GOOD, NGOOD, "cost_ms", one_nil, &p, err, sizeof err), 0);
    CHECK(isnan(p.cost[0]) && p.cost[1] == 2.0);   /* an integer cost reads as a number */
    CHECK_EQ_I64(p.clamped, 0);
    as_planrec_full_free(&p);
    /* estimated: a negative cost is set to 0 and counted */
    memcpy(f, GOOD, sizeof f);
    for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, "cost_kind")) f[k].val = est;
    CHECK_EQ_I64(read_with(f, NGOOD, "cost_ms", neg, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.cost_kind, 2);
    CHECK(p.cost[0] == 0 && p.cost[1] == 0);
    CHECK_EQ_I64(p.clamped, 2);
    as_planrec_full_free(&p);
    CHECK_EQ_I64(read_with(f, NGOOD, "cost_ms", mixed, &p, err, sizeof err), 0);
    CHECK(p.cost[0] == 0 && p.cost[1] == 3.0);
    CHECK_EQ_I64(p.clamped, 1);
    as_planrec_full_free(&p);
    /* a zero cost: an empty shard's, measured or not; an estimate of 0 on any shard */
    field e[NOLD + 2];
    memcpy(e, OLD, sizeof OLD);
    e[3].val = three;                                  /* shards: 3, shard 2 empty */
    e[NOLD] = (field){ "cost_ms", zero_last };
    e[NOLD + 1] = (field){ "cost_kind", v_cost_kind };
    CHECK_EQ_I64(read_with(e, NOLD + 2, NULL, NULL, &p, err, sizeof err), 0);
    CHECK(p.cost[0] == 1.0 && p.cost[1] == 2.0 && p.cost[2] == 0);
    CHECK_EQ_I64(p.clamped, 0);
    as_planrec_full_free(&p);
    memcpy(f, GOOD, sizeof f);
    for (int k = 0; k < NGOOD; k++) if (!strcmp(f[k].key, "cost_kind")) f[k].val = est;
    CHECK_EQ_I64(read_with(f, NGOOD, "cost_ms", zero, &p, err, sizeof err), 0);
    CHECK(p.cost[0] == 0 && p.cost[1] == 1.0);
    as_planrec_full_free(&p);
    /* measured 0 on a shard with entries: no time measured is 0 (bad data) */
    CHECK_EQ_I64(read_with(GOOD, NGOOD, "cost_ms", zero, &p, err, sizeof err), -1);
    CHECK(strstr(err, "plan of task 3: measured cost_ms[0] is 0 for a shard of 2 entries") != NULL);
    /* task 0 and -1 entries of a one-shard plan */
    CHECK_EQ_I64(read_with(GOOD, NGOOD, "task", t0, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.task, 0);
    as_planrec_full_free(&p);
}

/* ---- hostile records ------------------------------------------------------------------------- */

/* the good record with key's value from val (NULL: dropped) is refused with want in err */
static void hostile(const char *key, valfn val, const char *want)
{
    as_planrec_full p;
    memset(&p, 0x5a, sizeof p);
    char err[512];
    int rc = read_with(GOOD, NGOOD, key, val, &p, err, sizeof err);
    CHECK_EQ_I64(rc, -1);
    if (!CHECK(strstr(err, want) != NULL)) fprintf(stderr, "    %s: err \"%s\", want \"%s\"\n", key, err, want);
    /* nothing left behind: the struct freed and zeroed */
    if (rc == -1) CHECK(p.tables == NULL && p.assign == NULL && p.cost == NULL && p.spread == NULL && p.names == NULL &&
                        p.mterm == NULL && p.comm_in == NULL);
    else if (rc == 0) as_planrec_full_free(&p);
}

V(h_str, pk_s(pk, "x"))
V(h_int, msgpack_pack_int64(pk, 3))
V(h_map, msgpack_pack_map(pk, 0))
V(h_nan2, DBLS(1.0, NAN))
V(h_inf2, DBLS(INFINITY, 1.0))
V(h_len1, DBLS(1.0))
V(h_len3, DBLS(1.0, 2.0, 3.0))
V(h_strel, msgpack_pack_array(pk, 2); msgpack_pack_double(pk, 1); pk_s(pk, "a"))
V(h_neg2, DBLS(1.0, -2.0))
V(h_kind_bad, pk_s(pk, "guessed"))
V(h_ints1, INTS(100))
V(h_spread_neg, DBLS(-0.1, 0.0))
V(h_spread_nan, DBLS(0.1, NAN))
V(h_noisy_int, msgpack_pack_array(pk, 2); msgpack_pack_int64(pk, 1); msgpack_pack_false(pk))
V(h_noisy_1, msgpack_pack_array(pk, 1); msgpack_pack_false(pk))
V(h_neg_num, msgpack_pack_double(pk, -1))
V(h_nan, msgpack_pack_double(pk, NAN))
V(h_comm_neg, INTS(-1, 0))
V(h_comm_huge, DBLS(1e19, 0))
V(h_item_str, msgpack_pack_array(pk, 3); pk_s(pk, "a"); msgpack_pack_double(pk, 1); msgpack_pack_double(pk, 1))
V(h_item_len, DBLS(1.0, 2.0))
V(h_names_short, msgpack_pack_array(pk, 2); pk_s(pk, "a"); pk_s(pk, "b"))
V(h_names_int, msgpack_pack_array(pk, 3); msgpack_pack_int64(pk, 7); pk_s(pk, "b"); pk_s(pk, "b"))
V(h_names_long, msgpack_pack_array(pk, 3); pk_s(pk, "a");
  pk_s(pk, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  pk_s(pk, "b"))
V(h_names_nul, msgpack_pack_array(pk, 3); pk_s(pk, "a"); msgpack_pack_str(pk, 3); msgpack_pack_str_body(pk, "b\0c", 3);
  pk_s(pk, "b"))
V(h_terms_no_opt, msgpack_pack_map(pk, 2); pk_s(pk, "weights"); INTS(60, 120); pk_s(pk, "pipeline"); INTS(10, 20))
V(h_terms_neg, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); INTS(-1, 120); pk_s(pk, "optimizer"); INTS(30, 60);
  pk_s(pk, "pipeline"); INTS(10, 20))
V(h_terms_nil, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); msgpack_pack_nil(pk); pk_s(pk, "optimizer"); INTS(30, 60);
  pk_s(pk, "pipeline"); INTS(10, 20))
V(h_terms_len, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); INTS(60, 120); pk_s(pk, "optimizer"); INTS(30, 60);
  pk_s(pk, "pipeline"); INTS(10))
V(h_terms_nan, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); INTS(60, 120); pk_s(pk, "optimizer"); DBLS(30, NAN);
  pk_s(pk, "pipeline"); INTS(10, 20))
V(h_m1, msgpack_pack_int64(pk, -1))
V(h_names_esc, msgpack_pack_array(pk, 3); pk_s(pk, "a"); pk_s(pk, "a\x1b[31mRED"); pk_s(pk, "b"))
V(h_names_nl, msgpack_pack_array(pk, 3); pk_s(pk, "a"); pk_s(pk, "b"); pk_s(pk, "b\nc"))
V(h_names_c1, msgpack_pack_array(pk, 3); pk_s(pk, "\xc2\x9b" "31m"); pk_s(pk, "b"); pk_s(pk, "b"))
V(h_item_neg, DBLS(0.5, 0.75, -0.5))
V(h_zero2, DBLS(1.5, 0.0))
V(h_names_empty, msgpack_pack_array(pk, 3); pk_s(pk, ""); pk_s(pk, "b"); pk_s(pk, "b"))
V(h_terms_frac, msgpack_pack_map(pk, 3); pk_s(pk, "weights"); DBLS(60, 1.5); pk_s(pk, "optimizer"); INTS(30, 60);
  pk_s(pk, "pipeline"); INTS(10, 20))
V(h_mem_frac, DBLS(1.5, 2.0))
V(h_alg_long, pk_s(pk, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"))
V(h_alg_nul, msgpack_pack_str(pk, 3); msgpack_pack_str_body(pk, "a\0b", 3))
V(h_m2, msgpack_pack_int64(pk, -2))
V(h_zero, msgpack_pack_int64(pk, 0))
V(h_tables_neg, INTS(4, -5, 5))
V(h_tables_2, INTS(4, 5))
V(h_assign_2, INTS(0, 0))
V(h_assign_k, INTS(0, 2, 1))
V(h_assign_m2, INTS(0, -2, 1))
V(h_assign_m3, INTS(0, -3, 1))
V(h_pieces_2, msgpack_pack_array(pk, 2); msgpack_pack_nil(pk); INTS(0, 8, 0, 10))
V(h_pieces_overlap, msgpack_pack_array(pk, 3); msgpack_pack_nil(pk); INTS(0, 8, 0, 10); INTS(4, 16, 0, 10))
V(h_pieces_bad, msgpack_pack_array(pk, 3); msgpack_pack_nil(pk); INTS(8, 8, 0, 10); INTS(8, 16, 0, 10))
V(h_mq_lie, msgpack_pack_map(pk, 4); pk_s(pk, "r2"); msgpack_pack_double(pk, 0.41); pk_s(pk, "linear_r2");
  msgpack_pack_double(pk, 0.3); pk_s(pk, "min_r2"); msgpack_pack_double(pk, 0.9); pk_s(pk, "weak"); msgpack_pack_false(pk))
V(h_mq_r2, msgpack_pack_map(pk, 2); pk_s(pk, "r2"); msgpack_pack_double(pk, 2.0); pk_s(pk, "weak"); msgpack_pack_nil(pk))
V(h_mq_min, msgpack_pack_map(pk, 2); pk_s(pk, "min_r2"); pk_s(pk, "high"); pk_s(pk, "weak"); msgpack_pack_nil(pk))
V(h_mq_weak, msgpack_pack_map(pk, 1); pk_s(pk, "weak"); pk_s(pk, "yes"))

TEST(planrec_full_hostile_costs)
{
    hostile("cost_ms", h_nan2, "plan of task 3: cost_ms[1] is not finite (an unmeasured shard is nil)");
    hostile("cost_ms", h_inf2, "plan of task 3: cost_ms[0] is not finite");
    hostile("cost_ms", h_str, "plan of task 3: 'cost_ms' must be a list with one entry per shard");
    hostile("cost_ms", h_map, "'cost_ms' must be a list with one entry per shard");
    hostile("cost_ms", h_len1, "'cost_ms' must be a list with one entry per shard");
    hostile("cost_ms", h_len3, "'cost_ms' must be a list with one entry per shard");
    hostile("cost_ms", h_strel, "plan of task 3: cost_ms[1] is not a number or nil");
    hostile("cost_ms", h_neg2, "plan of task 3: measured cost_ms[1] is negative (-2 ms)");
    hostile("cost_kind", NULL, "'cost_ms' without a cost_kind of \"measured\" or \"estimated\"");
    hostile("cost_kind", h_kind_bad, "'cost_ms' without a cost_kind");
    hostile("cost_kind", h_int, "'cost_ms' without a cost_kind");
    hostile("mem_bytes", h_ints1, "plan of task 3: 'mem_bytes' must have one entry per shard");
    hostile("cost_spread", h_len1, "plan of task 3: 'cost_spread' must be a list with one entry per shard");
    hostile("cost_spread", h_str, "'cost_spread' must be a list");
    hostile("cost_spread", h_spread_neg, "plan of task 3: cost_spread[0] is not a number >= 0 or nil");
    hostile("cost_spread", h_spread_nan, "cost_spread[1] is not a number >= 0 or nil");
    hostile("cost_noisy", h_noisy_int, "plan of task 3: cost_noisy[0] is not a bool");
    hostile("cost_noisy", h_noisy_1, "plan of task 3: 'cost_noisy' must be a list with one entry per shard");
    hostile("noise_threshold", h_str, "plan of task 3: 'noise_threshold' is not a number >= 0 or nil");
    hostile("noise_threshold", h_neg_num, "'noise_threshold' is not a number >= 0 or nil");
    hostile("noise_threshold", h_nan, "'noise_threshold' is not a number >= 0 or nil");
}

TEST(planrec_full_hostile_planner_fields)
{
    hostile("comm_in_bytes", h_ints1, "plan of task 3: 'comm_in_bytes' must be a list with one entry per shard");
    hostile("comm_out_bytes", h_str, "'comm_out_bytes' must be a list with one entry per shard");
    hostile("comm_in_bytes", h_comm_neg, "plan of task 3: comm_in_bytes[0] is not a byte count >= 0");
    hostile("comm_out_bytes", h_comm_huge, "comm_out_bytes[0] is not a byte count >= 0");
    hostile("comm_out_bytes", h_nan2, "comm_out_bytes[1] is not a byte count >= 0");
    hostile("comm_out_bytes", NULL, "plan of task 3: 'comm_in_bytes' and 'comm_out_bytes' come together");
    hostile("comm_in_bytes", NULL, "'comm_in_bytes' and 'comm_out_bytes' come together");
    hostile("pred_ms", h_len1, "plan of task 3: 'pred_ms' must be a list with one entry per shard");
    hostile("pred_ms", h_nan2, "plan of task 3: pred_ms[1] is not a finite number");
    hostile("item_pred_ms", h_item_len, "plan of task 3: 'item_pred_ms' must be a list with one entry per entry of 'tables'");
    hostile("item_pred_ms", h_item_str, "plan of task 3: item_pred_ms[0] is not a finite number");
    hostile("names", h_names_short, "plan of task 3: 'names' must be a list with one entry per entry of 'tables'");
    hostile("names", h_str, "'names' must be a list");
    hostile("names", h_names_int, "plan of task 3: names[0] is not a name");
    hostile("names", h_names_long, "plan of task 3: names[1] is not a name (a string of 1-127 bytes)");
    hostile("names", h_names_nul, "names[1] is not a name");
    hostile("mem_terms", h_int, "plan of task 3: 'mem_terms' must be a map of weights, optimizer and pipeline");
    hostile("mem_terms", h_names_short, "'mem_terms' must be a map");
    hostile("mem_terms", h_terms_no_opt, "plan of task 3: 'mem_terms.optimizer' is missing");
    hostile("mem_terms", h_terms_neg, "plan of task 3: mem_terms.weights[0] is not a byte count >= 0");
    hostile("mem_terms", h_terms_nil, "plan of task 3: 'mem_terms.weights' is nil");
    hostile("mem_terms", h_terms_len, "plan of task 3: 'mem_terms.pipeline' must be a list with one entry per shard");
    hostile("mem_terms", h_terms_nan, "mem_terms.optimizer[1] is not a finite number");
    hostile("names", h_names_empty, "plan of task 3: names[0] is not a name (a string of 1-127 bytes)");
    hostile("names", h_names_esc, "plan of task 3: names[1] holds a control character (byte 0x1b at offset 1)");
    hostile("names", h_names_nl, "plan of task 3: names[2] holds a control character (byte 0x0a at offset 1)");
    hostile("names", h_names_c1, "plan of task 3: names[0] holds a control character (U+009B at offset 0)");
    hostile("pred_ms", h_neg2, "plan of task 3: pred_ms[1] is negative (-2 ms): a predicted cost is >= 0");
    hostile("item_pred_ms", h_item_neg, "plan of task 3: item_pred_ms[2] is negative (-0.5 ms)");
    hostile("cost_ms", h_zero2, "plan of task 3: measured cost_ms[1] is 0 for a shard of 1 entries");
    hostile("mem_terms", h_terms_frac, "plan of task 3: mem_terms.weights[1] is not a byte count >= 0");
    hostile("mem_cap", h_str, "plan of task 3: 'mem_cap' is not a byte count (an integer >= 0)");
    hostile("mem_cap", h_m1, "plan of task 3: 'mem_cap' is not a byte count (an integer >= 0)");
    hostile("mem_cap", h_nan, "'mem_cap' is not a byte count");
    hostile("mem_bytes", h_str, "plan of task 3: 'mem_bytes' must be a list of integers, one per shard");
    hostile("mem_bytes", h_mem_frac, "'mem_bytes' must be a list of integers, one per shard");
    hostile("alg", h_alg_long, "plan of task 3: 'alg' is not a label (a string of at most 63 bytes)");
    hostile("alg", h_alg_nul, "'alg' is not a label");
    hostile("model_quality", h_int, "plan of task 3: 'model_quality' is not a map of r2, linear_r2, min_r2 and weak");
    hostile("model_quality", h_names_short, "plan of task 3: 'model_quality' is not a map");
    hostile("model_quality", h_mq_lie, "plan of task 3: model_quality.weak is false, which its r2, linear_r2 and min_r2 do not say");
    hostile("model_quality", h_mq_r2, "plan of task 3: model_quality.r2 is not an R² (a finite number <= 1) or nil");
    hostile("model_quality", h_mq_min, "plan of task 3: model_quality.min_r2 is not a threshold in 0..1 or nil");
    hostile("model_quality", h_mq_weak, "plan of task 3: model_quality.weak is not true, false or nil");
}

TEST(planrec_full_hostile_placement)
{
    hostile("task", NULL, "plan needs 'task' (an id >= 0) and 'alg'");
    hostile("task", h_m1, "plan needs 'task' (an id >= 0)");
    hostile("task", h_m2, "plan: 'task' = -2 is outside -1..");
    hostile("task", h_str, "plan: 'task' is not an integer");
    hostile("alg", NULL, "plan needs 'task' (an id >= 0) and 'alg'");
    hostile("alg", h_int, "and 'alg'");
    hostile("shards", NULL, "plan of task 3: missing field 'shards'");
    hostile("shards", h_zero, "plan of task 3: 'shards' = 0 is outside 1..");
    hostile("shards", h_m2, "plan of task 3: 'shards' = -2 is outside 1..");
    hostile("shards", h_str, "plan of task 3: 'shards' is not an integer");
    hostile("tables", h_str, "plan of task 3: 'tables' must be a list of table ids");
    hostile("tables", h_tables_neg, "plan of task 3: tables[1] is not a table id");
    hostile("tables", h_tables_2, "plan of task 3: 'assign' has 3 entries but 'tables' has 2");
    hostile("assign", NULL, "plan of task 3: 'assign' must be a list of shards");
    hostile("assign", h_assign_2, "plan of task 3: 'assign' has 2 entries but 'tables' has 3");
    hostile("assign", h_assign_k, "plan of task 3: assign[1] = 2 is not a shard of 0..1, -1 (unplaced) or -2 (data parallel)");
    hostile("assign", h_assign_m3, "plan of task 3: assign[1] = -3 is not a shard of 0..1, -1 (unplaced) or -2");
    /* data parallel (-2) is a whole table: entry 1 is a piece */
    hostile("assign", h_assign_m2, "plan of task 3: entry 1 (t5[c 0:8, r 0:10)) is data parallel (assign -2) but a piece: "
                                   "a data-parallel table is held whole by every shard");
    hostile("assign", h_str, "plan of task 3: 'assign' must be a list of shards");
    hostile("pieces", h_pieces_2, "plan of task 3: 'pieces' must be a list of 3 pieces");
    hostile("pieces", h_pieces_bad, "plan of task 3: pieces[1]: piece columns [8, 8) are not a range");
    hostile("pieces", h_pieces_overlap, "plan of task 3: table 5: pieces t5[c 0:8, r 0:10) and t5[c 4:16, r 0:10) overlap");
    hostile("pieces", NULL, "plan of task 3: table 5 is listed twice");   /* whole twice: it overlaps itself */
}

/* ---- data parallel (assign -2) ----------------------------------------------------------------- */

/* the good record made data parallel: tables 4, 5, 6 whole, 5 on every shard (assign -2),
 * as-bench's cost_dp_ms (shard 1's unmeasured) and as-plan's comm_ar_bytes */
V(dp_assign, INTS(0, -2, 1))
V(dp_cost_dp, msgpack_pack_array(pk, 2); msgpack_pack_double(pk, 0.5); msgpack_pack_nil(pk))
V(dp_comm_ar, INTS(3000, 3000))
static field DP[NGOOD + 2];

static void dp_base(void)
{
    memcpy(DP, GOOD, sizeof GOOD);
    for (int k = 0; k < NGOOD; k++) {
        if (!strcmp(DP[k].key, "tables")) DP[k].val = tabs;
        if (!strcmp(DP[k].key, "pieces")) DP[k].val = nil;
        if (!strcmp(DP[k].key, "assign")) DP[k].val = dp_assign;
    }
    DP[NGOOD] = (field){ "cost_dp_ms", dp_cost_dp };
    DP[NGOOD + 1] = (field){ "comm_ar_bytes", dp_comm_ar };
}

/* the data-parallel record with key's value from val (NULL: dropped) is refused with want */
static void hostile_dp(const char *key, valfn val, const char *want)
{
    as_planrec_full p;
    char err[512];
    dp_base();
    int rc = read_with(DP, NGOOD + 2, key, val, &p, err, sizeof err);
    CHECK_EQ_I64(rc, -1);
    if (!CHECK(strstr(err, want) != NULL)) fprintf(stderr, "    %s: err \"%s\", want \"%s\"\n", key, err, want);
    if (rc == -1) CHECK(p.tables == NULL && p.cost_dp == NULL && p.comm_ar == NULL);
    else if (rc == 0) as_planrec_full_free(&p);
}

V(dp_cost_dp_zero, DBLS(0.0, 0.0))
V(dp_comm_ar_zero, INTS(0, 0))
V(dp_cost_dp_over, DBLS(1.5000001, 1.0))
V(dp_only_tabs, INTS(5))
V(dp_only_assign, INTS(-2))
V(dp_only_nil, msgpack_pack_array(pk, 1); msgpack_pack_nil(pk))
V(dp_only_cost, DBLS(0.5, 0.25))
V(dp_only_ar, INTS(70, 70))

TEST(planrec_full_data_parallel)
{
    as_planrec_full p;
    char err[512];
    dp_base();
    CHECK_EQ_I64(read_with(DP, NGOOD + 2, NULL, NULL, &p, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_EQ_I64(p.ndp, 1);
    CHECK(p.assign && p.assign[0] == 0 && p.assign[1] == -2 && p.assign[2] == 1);
    CHECK_EQ_I64(p.feasible, 1);                   /* -2 is placed, on every shard */
    CHECK(p.cost_dp && p.cost_dp[0] == 0.5 && isnan(p.cost_dp[1]));   /* nil: unmeasured */
    CHECK(p.comm_ar && p.comm_ar[0] == 3000 && p.comm_ar[1] == 3000);
    CHECK(p.comm_in && p.comm_in[0] == 64);        /* beside the all-to-all bytes */
    as_planrec_full_free(&p);
    CHECK(p.cost_dp == NULL && p.comm_ar == NULL && p.ndp == 0);
    /* both optional: absent or nil; comm_ar_bytes without comm_in_bytes / comm_out_bytes */
    CHECK_EQ_I64(read_with(DP, NGOOD + 2, "cost_dp_ms", NULL, &p, err, sizeof err), 0);
    CHECK(p.cost_dp == NULL && p.comm_ar != NULL);
    as_planrec_full_free(&p);
    CHECK_EQ_I64(read_with(DP, NGOOD + 2, "comm_ar_bytes", nil, &p, err, sizeof err), 0);
    CHECK(p.comm_ar == NULL && p.cost_dp != NULL);
    as_planrec_full_free(&p);
    for (int k = 0; k < NGOOD; k++)
        if (!strcmp(DP[k].key, "comm_in_bytes") || !strcmp(DP[k].key, "comm_out_bytes")) DP[k].val = nil;
    CHECK_EQ_I64(read_with(DP, NGOOD + 2, NULL, NULL, &p, err, sizeof err), 0);
    CHECK(p.comm_in == NULL && p.comm_out == NULL && p.comm_ar && p.comm_ar[1] == 3000);
    as_planrec_full_free(&p);
    /* a plan without data-parallel entries may carry zeros (none) */
    CHECK_EQ_I64(read_with(GOOD, NGOOD, "cost_dp_ms", dp_cost_dp_zero, &p, err, sizeof err), 0);
    CHECK(p.ndp == 0 && p.cost_dp && p.cost_dp[1] == 0);
    as_planrec_full_free(&p);
    CHECK_EQ_I64(read_with(GOOD, NGOOD, "comm_ar_bytes", dp_comm_ar_zero, &p, err, sizeof err), 0);
    CHECK(p.ndp == 0 && p.comm_ar && p.comm_ar[0] == 0);
    as_planrec_full_free(&p);
    /* one table, data parallel on both shards: each shard's cost its slice; no entry of its
       own, and a measured time of its slice alone is still above 0 */
    field one[NOLD + 4];
    memcpy(one, OLD, sizeof OLD);
    for (int k = 0; k < NOLD; k++) {
        if (!strcmp(one[k].key, "tables")) one[k].val = dp_only_tabs;
        if (!strcmp(one[k].key, "assign")) one[k].val = dp_only_assign;
        if (!strcmp(one[k].key, "pieces")) one[k].val = dp_only_nil;
    }
    one[NOLD] = (field){ "cost_ms", dp_only_cost };
    one[NOLD + 1] = (field){ "cost_kind", v_cost_kind };
    one[NOLD + 2] = (field){ "cost_dp_ms", dp_only_cost };
    one[NOLD + 3] = (field){ "comm_ar_bytes", dp_only_ar };
    CHECK_EQ_I64(read_with(one, NOLD + 4, NULL, NULL, &p, err, sizeof err), 0);
    if (!CHECK_STR(err, "")) fprintf(stderr, "    %s\n", err);
    CHECK(p.ndp == 1 && p.T == 1 && p.feasible && p.cost_dp && p.cost_dp[1] == 0.25);
    as_planrec_full_free(&p);
}

TEST(planrec_full_hostile_data_parallel)
{
    hostile_dp("cost_dp_ms", h_str, "plan of task 3: 'cost_dp_ms' must be a list with one entry per shard");
    hostile_dp("cost_dp_ms", h_len1, "plan of task 3: 'cost_dp_ms' must be a list with one entry per shard");
    hostile_dp("cost_dp_ms", h_len3, "'cost_dp_ms' must be a list with one entry per shard");
    hostile_dp("cost_dp_ms", h_neg2, "plan of task 3: cost_dp_ms[1] is not a number >= 0 or nil");
    hostile_dp("cost_dp_ms", h_nan2, "plan of task 3: cost_dp_ms[1] is not a number >= 0 or nil");
    hostile_dp("cost_dp_ms", h_inf2, "plan of task 3: cost_dp_ms[0] is not a number >= 0 or nil");
    hostile_dp("cost_dp_ms", h_strel, "plan of task 3: cost_dp_ms[1] is not a number >= 0 or nil");
    hostile_dp("cost_dp_ms", dp_cost_dp_over, "plan of task 3: cost_dp_ms[0] = 1.5 ms is above cost_ms[0] = 1.5 ms, "
                                              "of which it is a part; bad data");
    hostile_dp("comm_ar_bytes", h_ints1, "plan of task 3: 'comm_ar_bytes' must be a list with one entry per shard");
    hostile_dp("comm_ar_bytes", h_str, "'comm_ar_bytes' must be a list with one entry per shard");
    hostile_dp("comm_ar_bytes", h_comm_neg, "plan of task 3: comm_ar_bytes[0] is not a byte count >= 0");
    hostile_dp("comm_ar_bytes", h_comm_huge, "plan of task 3: comm_ar_bytes[0] is not a byte count >= 0");
    hostile_dp("comm_ar_bytes", h_nan2, "comm_ar_bytes[1] is not a byte count >= 0");
    /* a plan without data-parallel entries has no all-reduce and no data-parallel part */
    hostile("comm_ar_bytes", dp_comm_ar, "plan of task 3: comm_ar_bytes[0] is 3000 but the plan has no data-parallel "
                                         "entries (assign -2) to all-reduce");
    hostile("cost_dp_ms", dp_cost_dp, "plan of task 3: cost_dp_ms[0] is 0.5 ms but the plan has no data-parallel "
                                      "entries (assign -2); bad data");
}

TEST(planrec_full_free)
{
    as_planrec_full p;
    memset(&p, 0, sizeof p);
    as_planrec_full_free(&p);                          /* a zeroed struct: nothing to free */
    CHECK(p.tables == NULL && p.K == 0 && p.T == 0);
    as_planrec_full_free(&p);                          /* and again */
    char err[512];
    CHECK_EQ_I64(read_with(GOOD, NGOOD, NULL, NULL, &p, err, sizeof err), 0);
    as_planrec_full_free(&p);
    as_planrec_full z;
    memset(&z, 0, sizeof z);
    CHECK(!memcmp(&p, &z, sizeof p));               /* freed: all zero */
    as_planrec_full_free(&p);                          /* freeing a freed plan is harmless */
}
