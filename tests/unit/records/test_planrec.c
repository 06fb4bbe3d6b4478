/* test_planrec.c - the `task` and `plan` records (lib/plan/planrec.c; plan.h): a plan written
 * with as_plan_write and read back, field by field (counts, memory, each shard's
 * communication bytes, the all-reduce of a data-parallel table, names, item predictions,
 * the 2D ranks, the refinement), and the readers' errors on hand-made records. */
#include "unit.h"

#include "fixtures.h"
#include "plan.h"
#include "planrec.h"
#include "reclimits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- as_plan_write, read back ------------------------------------------------------------ */

static int64_t arr_i(const msgpack_object *rec, const char *key, int i)
{
    const msgpack_object *o = as_obj_get(rec, key);
    if (!CHECK(o && o->type == MSGPACK_OBJECT_ARRAY && (uint32_t)i < o->via.array.size)) return -999;
    return o->via.array.ptr[i].via.i64;
}
static double arr_f(const msgpack_object *rec, const char *key, int i)
{
    const msgpack_object *o = as_obj_get(rec, key);
    if (!CHECK(o && o->type == MSGPACK_OBJECT_ARRAY && (uint32_t)i < o->via.array.size)) return NAN;
    return o->via.array.ptr[i].via.f64;
}
static int64_t arr_n(const msgpack_object *rec, const char *key)
{
    const msgpack_object *o = as_obj_get(rec, key);
    return o && o->type == MSGPACK_OBJECT_ARRAY ? (int64_t)o->via.array.size : -1;
}
static int str_is(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) && !memcmp(o->via.str.ptr, s, strlen(s));
}

/* K = 2, tables 10, 11, 12 of task 4 (split "train"): 10 (dim 4, batch 8, 16 lookups: 128
 * bytes of ids, 2 x 8 x 4 x 4 = 256 of outputs and gradients) on shard 1; 11 (50 x 2, named
 * "dp_t") data parallel: each shard sends 2 (K - 1) / K x 50 x 2 x 2 = 200 bytes in its
 * all-reduce; 12 unplaced. World 4: shard k on ranks 2k, 2k + 1. Refined: 2 moves, 1 swap */
static int on_written(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (!as_rec_is(rec, "plan")) return 0;
    (*(int *)ctx)++;
    const msgpack_object *o = &rec->obj;
    as_planrec p;
    char e[256] = "";
    if (!CHECK_EQ_I64(as_planrec_read(o, &p, 0, e, sizeof e), 0)) { fprintf(stderr, "    %s\n", e); return 0; }
    CHECK_EQ_I64(p.task, 4);
    CHECK(p.has_task);
    CHECK_EQ_I64(p.shards, 2);
    CHECK_EQ_I64(p.n, 3);
    const int64_t want_t[3] = { 10, 11, 12 }, want_a[3] = { 1, AS_DP, -1 };
    for (int i = 0; i < 3 && p.n == 3; i++) {
        CHECK_EQ_I64(p.tables[i], want_t[i]);
        CHECK_EQ_I64(p.assign[i], want_a[i]);
    }
    CHECK_EQ_I64(p.unplaced, 1);
    CHECK_EQ_I64(p.ndp, 1);
    CHECK(p.pieces == NULL);   /* every entry whole: no `pieces` */
    as_planrec_free(&p);
    CHECK(str_is(as_obj_get(o, "alg"), "size-greedy+refine"));
    CHECK(str_is(as_obj_get(o, "split"), "train"));
    CHECK_EQ_I64(arr_i(o, "counts", 0), 0);
    CHECK_EQ_I64(arr_i(o, "counts", 1), 1);
    CHECK_EQ_I64(arr_i(o, "mem_bytes", 0), 200);
    CHECK_EQ_I64(arr_i(o, "mem_bytes", 1), 1000);
    CHECK_EQ_I64(arr_i(o, "comm_in_bytes", 0), 0);
    CHECK_EQ_I64(arr_i(o, "comm_in_bytes", 1), 128);
    CHECK_EQ_I64(arr_i(o, "comm_out_bytes", 0), 0);
    CHECK_EQ_I64(arr_i(o, "comm_out_bytes", 1), 256);
    CHECK_EQ_I64(arr_i(o, "comm_ar_bytes", 0), 200);
    CHECK_EQ_I64(arr_i(o, "comm_ar_bytes", 1), 200);
    CHECK_EQ_I64(arr_n(o, "comm_rw_bytes"), -1);   /* no row pieces */
    CHECK(str_is(&as_obj_get(o, "names")->via.array.ptr[1], "dp_t"));
    CHECK(str_is(&as_obj_get(o, "names")->via.array.ptr[0], ""));
    CHECK(arr_f(o, "pred_ms", 0) == 1.5 && arr_f(o, "pred_ms", 1) == 2.5);
    CHECK(arr_f(o, "item_pred_ms", 0) == 0.5 && arr_f(o, "item_pred_ms", 1) == 0.25);
    CHECK(as_obj_get(o, "feasible")->type == MSGPACK_OBJECT_BOOLEAN && !as_obj_get(o, "feasible")->via.boolean);
    CHECK_EQ_I64(arr_n(o, "infeasible_tables"), 1);
    CHECK_EQ_I64(arr_i(o, "infeasible_tables", 0), 12);
    const msgpack_object *rk = as_obj_get(o, "ranks");
    if (CHECK(rk && rk->via.array.size == 2)) {
        CHECK_EQ_I64(rk->via.array.ptr[1].via.array.size, 2);
        CHECK_EQ_I64(rk->via.array.ptr[1].via.array.ptr[0].via.i64, 2);
        CHECK_EQ_I64(rk->via.array.ptr[1].via.array.ptr[1].via.i64, 3);
    }
    as_plan_refined rf;
    CHECK_EQ_I64(as_planrec_refine_read(o, &rf, e, sizeof e), 0);
    CHECK(rf.done);
    CHECK_EQ_I64(rf.moves, 2);
    CHECK_EQ_I64(rf.swaps, 1);
    CHECK(rf.ms == 0.5 && rf.max_before == 3.0 && rf.budget_ms == 10);
    CHECK_EQ_I64(rf.budget_steps, 100);
    CHECK_STR(rf.stop, "steps");
    return 0;
}

TEST(planrec_write_read_back)
{
    as_features f[3] = { tsup_features(10, 4, 100, 2, 8, 16), tsup_features(11, 2, 50, 1, 8, 8),
                         tsup_features(12, 4, 100000, 1, 8, 8) };
    snprintf(f[1].name, sizeof f[1].name, "dp_t");
    const as_features *it[3] = { &f[0], &f[1], &f[2] };
    int64_t tables[3] = { 10, 11, 12 }, assign[3] = { 1, AS_DP, -1 }, count[2] = { 0, 1 }, inf[1] = { 12 };
    uint64_t mem[2] = { 200, 1000 };
    double key[2] = { 0, 0 }, pred[2] = { 1.5, 2.5 }, ipred[3] = { 0.5, 0.25, 0 };
    as_plan p = { .n = 3, .shards = 2, .assign = assign, .mem = mem, .count = count, .key = key, .pred = pred,
                  .feasible = 0, .ninfeasible = 1, .infeasible = inf, .ndp = 1 };
    p.refine = (as_plan_refined){ .done = 1, .moves = 2, .swaps = 1, .ms = 0.5, .max_before = 3.0, .budget_ms = 10,
                                  .budget_steps = 100, .stop = "steps" };
    as_taskrec task = { .id = 4, .tables = tables, .ntables = 3, .shards = 2 };
    snprintf(task.split, sizeof task.split, "train");
    as_plan_meta m = { .task = &task, .alg = AS_ALG_SIZE, .world = 4, .items = it, .item_pred = ipred,
                       .dp_ar_bytes = as_plan_dp_comm_bytes(&f[1], 2) };
    char path[512], err[256];
    ut_tmppath(path, sizeof path, "planrec.ast");
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_plan_write(w, &p, &m);
    as_writer_close(w);
    int n = 0;
    char *files[] = { path };
    CHECK_EQ_I64(as_read_records(files, 1, on_written, &n, err, sizeof err), 0);
    CHECK_EQ_I64(n, 1);
}

/* ---- the readers on hand-made records ------------------------------------------------------ */

/* a plan record of task 3: shards K, tables, assign (na entries), pieces (NULL: none; an entry
 * with c1 0 written nil) */
static int read_plan(as_planrec *p, int64_t K, const int64_t *tables, int n, const int64_t *assign, int na,
                     const as_piece *pieces, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5 + (pieces != NULL));
    as_pack_kv_str(&pk, "kind", "plan");
    as_pack_kv_i64(&pk, "task", 3);
    as_pack_kv_i64(&pk, "shards", K);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(&pk, tables[i]);
    as_pack_str(&pk, "assign");
    msgpack_pack_array(&pk, (size_t)na);
    for (int i = 0; i < na; i++) msgpack_pack_int64(&pk, assign[i]);
    if (pieces) {
        as_pack_str(&pk, "pieces");
        msgpack_pack_array(&pk, (size_t)n);
        for (int i = 0; i < n; i++) {
            if (as_piece_whole(&pieces[i])) { msgpack_pack_nil(&pk); continue; }
            msgpack_pack_array(&pk, 4);
            msgpack_pack_int64(&pk, pieces[i].c0);
            msgpack_pack_int64(&pk, pieces[i].c1);
            msgpack_pack_int64(&pk, pieces[i].r0);
            msgpack_pack_int64(&pk, pieces[i].r1);
        }
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    const int rc = as_planrec_read(&up.data, p, 0, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static void read_fails(int64_t K, const int64_t *tables, int n, const int64_t *assign, int na, const as_piece *pieces,
                       const char *want)
{
    as_planrec p;
    char err[512] = "";
    if (!CHECK_EQ_I64(read_plan(&p, K, tables, n, assign, na, pieces, err, sizeof err), -1)) { as_planrec_free(&p); return; }
    CHECK(!strncmp(err, "plan of task 3: ", 16));
    if (!CHECK(strstr(err, want) != NULL)) fprintf(stderr, "    err: %s (want %s)\n", err, want);
    CHECK(p.tables == NULL && p.assign == NULL && p.pieces == NULL);   /* freed */
}

TEST(planrec_read_pieces_and_dp)
{
    /* table 1 in two column pieces on shards 0 and 2, table 2 data parallel, table 3 unplaced */
    const int64_t tables[4] = { 1, 1, 2, 3 }, assign[4] = { 0, 2, AS_DP, -1 };
    const as_piece pieces[4] = { { 0, 8, 0, 100 }, { 8, 16, 0, 100 }, AS_PIECE_WHOLE, AS_PIECE_WHOLE };
    as_planrec p;
    char err[512] = "";
    if (!CHECK_EQ_I64(read_plan(&p, 3, tables, 4, assign, 4, pieces, err, sizeof err), 0)) {
        fprintf(stderr, "    %s\n", err);
        return;
    }
    CHECK_EQ_I64(p.ndp, 1);
    CHECK_EQ_I64(p.unplaced, 1);
    CHECK(p.pieces != NULL && p.pieces[1].c0 == 8 && p.pieces[1].c1 == 16 && as_piece_whole(&p.pieces[2]));
    int64_t start[4], order[4];
    as_planrec_group(&p, start, order);   /* shard 0: entry 0; shard 1: none; shard 2: entry 1 */
    CHECK(start[0] == 0 && start[1] == 1 && start[2] == 1 && start[3] == 2 && order[0] == 0 && order[1] == 1);
    as_planrec_free(&p);
    CHECK(p.tables == NULL && p.n == 0);
}

TEST(planrec_read_errors)
{
    const int64_t t3[3] = { 1, 2, 3 }, a_ok[3] = { 0, 1, 0 }, a_far[3] = { 0, 2, 0 }, a_neg[3] = { 0, -3, 0 };
    read_fails(2, t3, 3, a_far, 3, NULL, "assign[1] = 2 is not a shard of 0..1");
    read_fails(2, t3, 3, a_neg, 3, NULL, "assign[1] = -3 is not a shard");
    read_fails(2, t3, 3, a_ok, 2, NULL, "'assign' has 2 entries but 'tables' has 3");
    read_fails(0, t3, 3, a_ok, 3, NULL, "'shards' = 0 is outside 1..");
    const int64_t twice[3] = { 1, 2, 1 };
    read_fails(2, twice, 3, a_ok, 3, NULL, "table 1 is listed twice");
    /* a data-parallel entry that is a piece */
    const int64_t t2[2] = { 1, 1 }, a_dp[2] = { AS_DP, 0 };
    const as_piece halves[2] = { { 0, 8, 0, 100 }, { 8, 16, 0, 100 } };
    read_fails(2, t2, 2, a_dp, 2, halves, "entry 0 (");
    read_fails(2, t2, 2, a_dp, 2, halves, "is data parallel (assign -2) but a piece");
    /* overlapping pieces of one table */
    const as_piece overlap[2] = { { 0, 8, 0, 100 }, { 4, 16, 0, 100 } };
    const int64_t a2[2] = { 0, 1 };
    read_fails(2, t2, 2, a2, 2, overlap, "table 1: pieces t1[c 0:8, r 0:100) and t1[c 4:16, r 0:100) overlap");
}

/* ---- the refinement a record carries -------------------------------------------------------- */

static int refine_of(const char *stop, int64_t swaps, int with, int nil, as_plan_refined *rf, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, with ? 3 : 1);
    as_pack_kv_str(&pk, "kind", "plan");
    if (with) {
        as_pack_str(&pk, "options");
        msgpack_pack_map(&pk, 2);
        as_pack_kv_f64(&pk, "refine_ms", 250);
        as_pack_kv_i64(&pk, "refine_steps", 0);
        as_pack_str(&pk, "refine");
        if (nil) msgpack_pack_nil(&pk);
        else if (with == 2) msgpack_pack_int(&pk, 7);
        else {
            msgpack_pack_map(&pk, stop ? 5 : 4);
            as_pack_kv_i64(&pk, "moves", 3);
            as_pack_kv_i64(&pk, "swaps", swaps);
            as_pack_kv_f64(&pk, "ms", 1.25);
            as_pack_kv_f64(&pk, "pred_max_before", 9.5);
            if (stop) as_pack_kv_str(&pk, "stop", stop);
        }
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    const int rc = as_planrec_refine_read(&up.data, rf, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(planrec_refine_read)
{
    as_plan_refined rf;
    char err[256] = "";
    /* none, or nil: all zero */
    CHECK_EQ_I64(refine_of(NULL, 0, 0, 0, &rf, err, sizeof err), 0);
    CHECK(!rf.done && rf.moves == 0 && rf.stop == NULL);
    CHECK_EQ_I64(refine_of(NULL, 0, 1, 1, &rf, err, sizeof err), 0);
    CHECK(!rf.done);
    /* a refinement without a stop: "optimum"; placed absent: 0 */
    CHECK_EQ_I64(refine_of(NULL, 4, 1, 0, &rf, err, sizeof err), 0);
    CHECK(rf.done);
    CHECK_EQ_I64(rf.moves, 3);
    CHECK_EQ_I64(rf.swaps, 4);
    CHECK_EQ_I64(rf.placed, 0);
    CHECK(rf.ms == 1.25 && rf.max_before == 9.5 && rf.budget_ms == 250 && rf.budget_steps == 0);
    CHECK_STR(rf.stop, "optimum");
    CHECK_EQ_I64(refine_of("time", 0, 1, 0, &rf, err, sizeof err), 0);
    CHECK_STR(rf.stop, "time");
    /* errors */
    CHECK_EQ_I64(refine_of("never", 0, 1, 0, &rf, err, sizeof err), -1);
    CHECK(!strncmp(err, "refine: ", 8) && strstr(err, "stop") != NULL);
    CHECK_EQ_I64(refine_of(NULL, -1, 1, 0, &rf, err, sizeof err), -1);
    CHECK(!strncmp(err, "refine: ", 8) && strstr(err, "swaps") != NULL);
    CHECK_EQ_I64(refine_of(NULL, 0, 2, 0, &rf, err, sizeof err), -1);
    CHECK_STR(err, "'refine' is not a map");
}

/* task records: what test_plan.c's plan_task_read leaves out */
static int read_task(int64_t shards, int ntables, as_taskrec *t, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    as_pack_kv_str(&pk, "kind", "task");
    as_pack_kv_i64(&pk, "id", 8);
    as_pack_kv_i64(&pk, "shards", shards);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, (size_t)ntables);
    for (int i = 0; i < ntables; i++) msgpack_pack_int(&pk, 20 - i);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, sb.data, sb.size, &off);
    const int rc = as_taskrec_read(&up.data, t, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(planrec_task_read)
{
    as_taskrec t;
    char err[256] = "";
    CHECK_EQ_I64(read_task(3, 2, &t, err, sizeof err), 0);
    CHECK_EQ_I64(t.id, 8);
    CHECK_EQ_I64(t.shards, 3);
    CHECK_EQ_I64(t.mem_cap, 0);      /* absent: no cap */
    CHECK_STR(t.split, "");
    CHECK(t.ntables == 2 && t.tables[0] == 20 && t.tables[1] == 19);   /* in the record's order */
    as_taskrec_free(&t);
    CHECK(t.tables == NULL);
    CHECK_EQ_I64(read_task(3, 0, &t, err, sizeof err), -1);
    CHECK_STR(err, "task 8: 'tables' must be a non-empty list of table ids");
    CHECK_EQ_I64(read_task(0, 2, &t, err, sizeof err), -1);
    CHECK(!strncmp(err, "task 8: ", 8) && strstr(err, "'shards'") != NULL);
    as_taskrec_free(NULL);
    as_planrec_free(NULL);
}
