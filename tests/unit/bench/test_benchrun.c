/* test_benchrun.c - as-bench's run (lib/bench/benchrun.h): the sampling pool and --sample-from,
 * the draws (determinism, sizes, singles first), reading the input's units, the plan passed
 * on with its costs, data-parallel tables (bag slices, their part of each shard's cost); and the --device parser every tool shares (lib/core/device.h). */
#include "unit.h"
#include "benchrun.h"
#include "common.h"
#include "device.h"
#include "nn.h"
#include "plan.h"
#include "reclimits.h"
#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a pool of table ids only (what the sampling reads) */
static as_bpool ids_pool(as_btable *t, const int64_t *ids, int64_t n)
{
    memset(t, 0, (size_t)n * sizeof *t);
    for (int64_t i = 0; i < n; i++) t[i].id = ids[i];
    as_bpool p = { .t = t, .n = n };
    return p;
}

TEST(benchrun_sample_pool_from)
{
    as_btable t[6];
    const int64_t ids[6] = { 5, 2, 9, 4, 0, 7 };
    as_bpool p = ids_pool(t, ids, 6);
    int64_t *out, n;
    char err[256];
    /* no list: every table, in the pool's order */
    CHECK(as_bsample_pool(&out, &n, &p, NULL, 0, "pool.ast", err, sizeof err) == 0);
    CHECK_EQ_I64(n, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(out[i], ids[i]);
    free(out);
    /* "4-5,9" (a range and an id): the listed tables, in the pool's order (5, 9, 4) */
    int64_t *from;
    size_t nfrom;
    CHECK(as_parse_i64_list("4-5,9", 0, INT32_MAX, &from, &nfrom) == 0);
    CHECK_EQ_I64(nfrom, 3);
    CHECK(as_bsample_pool(&out, &n, &p, from, nfrom, "pool.ast", err, sizeof err) == 0);
    CHECK_EQ_I64(n, 3);
    CHECK(out[0] == 5 && out[1] == 9 && out[2] == 4);
    free(out);
    free(from);
    /* "0-3": 1 and 3 are not in the pool: the first one missing is the error */
    CHECK(as_parse_i64_list("0-3", 0, INT32_MAX, &from, &nfrom) == 0);
    CHECK(as_bsample_pool(&out, &n, &p, from, nfrom, "pool.ast", err, sizeof err) == -1);
    CHECK_STR(err, "table 1 is not in pool.ast");
    free(from);
    /* a repeated id keeps its table once */
    const int64_t twice[3] = { 7, 7, 2 };
    CHECK(as_bsample_pool(&out, &n, &p, twice, 3, "pool.ast", err, sizeof err) == 0);
    CHECK(n == 2 && out[0] == 2 && out[1] == 7);
    free(out);
}

TEST(benchrun_sample_draws)
{
    const int64_t pool[5] = { 8, 3, 6, 1, 4 };
    as_bsample a, b, c;
    /* the same seed draws the same shards; sizes in 1..min(max_tables, pool); distinct ids
     * from the pool */
    as_bsample_draw(&a, pool, 5, 40, 3, 7, 0);
    as_bsample_draw(&b, pool, 5, 40, 3, 7, 0);
    CHECK_EQ_I64(a.n, 40);
    CHECK_EQ_I64(a.nsingles, 0);
    int64_t maxid = -1, sizes[4] = { 0 };
    int same = 1;
    for (int64_t i = 0; i < a.n; i++) {
        CHECK(a.len[i] >= 1 && a.len[i] <= 3);
        sizes[a.len[i]]++;
        same &= a.len[i] == b.len[i] && !memcmp(a.ids[i], b.ids[i], (size_t)a.len[i] * sizeof **a.ids);
        for (int64_t j = 0; j < a.len[i]; j++) {
            int in = 0;
            for (int q = 0; q < 5; q++) in |= pool[q] == a.ids[i][j];
            CHECK(in);
            for (int64_t j2 = 0; j2 < j; j2++) CHECK(a.ids[i][j2] != a.ids[i][j]);
            if (a.ids[i][j] > maxid) maxid = a.ids[i][j];
        }
    }
    CHECK(same);
    CHECK_EQ_I64(a.maxid, maxid);
    CHECK(sizes[1] > 0 && sizes[2] > 0 && sizes[3] > 0);   /* 40 draws of 3 sizes: all occur */
    /* another seed, other shards */
    as_bsample_draw(&c, pool, 5, 40, 3, 8, 0);
    int differ = 0;
    for (int64_t i = 0; i < c.n; i++)
        differ |= c.len[i] != a.len[i] || memcmp(c.ids[i], a.ids[i], (size_t)(c.len[i] < a.len[i] ? c.len[i] : a.len[i]) * sizeof **c.ids);
    CHECK(differ);
    as_bsample_free(&b);
    as_bsample_free(&c);
    /* --singles: every table alone first, ascending, then the very same draws */
    as_bsample_draw(&b, pool, 5, 40, 3, 7, 1);
    CHECK_EQ_I64(b.n, 45);
    CHECK_EQ_I64(b.nsingles, 5);
    const int64_t asc[5] = { 1, 3, 4, 6, 8 };
    for (int i = 0; i < 5; i++) CHECK(b.len[i] == 1 && b.ids[i][0] == asc[i]);
    same = 1;
    for (int64_t i = 0; i < a.n; i++)
        same &= b.len[5 + i] == a.len[i] && !memcmp(b.ids[5 + i], a.ids[i], (size_t)a.len[i] * sizeof **a.ids);
    CHECK(same);
    CHECK_EQ_I64(b.maxid, 8);
    as_bsample_free(&a);
    as_bsample_free(&b);
    /* a pool of one table: every shard is that table */
    const int64_t one[1] = { 42 };
    as_bsample_draw(&a, one, 1, 5, 10, 3, 1);
    CHECK_EQ_I64(a.n, 6);
    for (int64_t i = 0; i < a.n; i++) CHECK(a.len[i] == 1 && a.ids[i][0] == 42);
    as_bsample_free(&a);
}

/* the documented draw, step by step: k = 1 + below(min(M, P)), then position j of a fresh
 * copy of the pool swapped with j + below(P - j), j = 0..k-1 */
TEST(benchrun_sample_draw_steps)
{
    const int64_t pool[4] = { 10, 20, 30, 40 };
    as_bsample s;
    as_bsample_draw(&s, pool, 4, 3, 2, 11, 0);
    as_rng r;
    as_rng_seed(&r, 11, 0x73616d706c65ULL);
    for (int i = 0; i < 3; i++) {
        int64_t k = 1 + (int64_t)as_rng_below(&r, 2);
        int64_t perm[4] = { 10, 20, 30, 40 };
        CHECK_EQ_I64(s.len[i], k);
        for (int64_t j = 0; j < k && j < s.len[i]; j++) {
            int64_t q = j + (int64_t)as_rng_below(&r, (uint64_t)(4 - j));
            int64_t tmp = perm[j]; perm[j] = perm[q]; perm[q] = tmp;
            CHECK_EQ_I64(s.ids[i][j], perm[j]);
        }
    }
    as_bsample_free(&s);
}

/* ---- the input's units -------------------------------------------------------------------- */

static char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ & 3];
    snprintf(b, 512, "%s/%s", ut_tmpdir(), name);
    return b;
}

static void pack_ints(msgpack_packer *pk, const char *key, const int64_t *v, int n)
{
    as_pack_str(pk, key);
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, v[i]);
}

/* header, other, plan (tables 3, 12, 5 on 2 shards), shard (4, 7), other; bad_shard: the
 * shard has no tables */
static void write_units(const char *path, int bad_shard)
{
    as_writer *w = as_writer_open(path, 3, 0);
    as_writer_header(w, "test", 0, NULL);
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2);
    as_pack_kv_str(pk, "kind", "other");
    as_pack_kv_i64(pk, "x", 1);
    as_writer_end_record(w);
    pk = as_writer_pk(w);
    msgpack_pack_map(pk, 4);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "shards", 2);
    pack_ints(pk, "tables", (const int64_t[]){ 3, 12, 5 }, 3);
    pack_ints(pk, "assign", (const int64_t[]){ 1, -1, 1 }, 3);
    as_writer_end_record(w);
    pk = as_writer_pk(w);
    msgpack_pack_map(pk, bad_shard ? 1 : 2);
    as_pack_kv_str(pk, "kind", "shard");
    if (!bad_shard) pack_ints(pk, "tables", (const int64_t[]){ 4, 7 }, 2);
    as_writer_end_record(w);
    pk = as_writer_pk(w);
    msgpack_pack_map(pk, 1);
    as_pack_kv_str(pk, "kind", "other");
    as_writer_end_record(w);
    as_writer_close(w);
}

TEST(benchrun_input_units)
{
    char *path = tpath("units.ast"), err[1024];
    write_units(path, 0);
    as_binput in;
    char *files[2] = { path, path };
    /* two files: their records one after the other, the headers dropped */
    CHECK(as_binput_read(&in, files, 2, err, sizeof err) == 0);
    CHECK_EQ_I64(in.n, 8);
    CHECK_EQ_I64(in.units, 4);
    CHECK_EQ_I64(in.maxid, 12);   /* the unplaced table counts: every id must exist */
    const int kinds[4] = { AS_BREC_OTHER, AS_BREC_PLAN, AS_BREC_SHARD, AS_BREC_OTHER };
    for (int i = 0; i < 8; i++) CHECK_EQ_I64(in.rec[i].kind, kinds[i % 4]);
    CHECK_EQ_I64(as_brun_part_units(in.units, 1, 1), 4);
    CHECK_EQ_I64(as_brun_part_units(in.units, 2, 3), 1);   /* units 0..3: only unit 1 */
    CHECK_EQ_I64(as_brun_part_units(in.units, 1, 3), 2);   /* units 0 and 3 */
    as_binput_free(&in);
    /* a bad unit: the file and record number */
    char *bad = tpath("bad.ast");
    write_units(bad, 1);
    CHECK(as_binput_read(&in, &bad, 1, err, sizeof err) == -1);
    char want[700];
    snprintf(want, sizeof want, "%s: record 4: shard: 'tables' must be a list of table ids", bad);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    as_binput_free(&in);
    /* a file that cannot be opened */
    char *none = tpath("absent.ast");
    CHECK(as_binput_read(&in, &none, 1, err, sizeof err) == -1);
    snprintf(want, sizeof want, "%s: No such file or directory", none);
    CHECK_STR(err, want);
    as_binput_free(&in);
}

/* ---- the plan passed on ------------------------------------------------------------------- */

TEST(benchrun_pack_plan)
{
    /* the input plan carries kind, task, an old cost_ms, alg and an old noise_threshold */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    as_pack_kv_str(&pk, "kind", "plan");
    as_pack_kv_i64(&pk, "task", 3);
    as_pack_str(&pk, "cost_ms");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_double(&pk, 9);
    as_pack_kv_str(&pk, "alg", "x");
    as_pack_kv_f64(&pk, "noise_threshold", 7);
    msgpack_unpacked in;
    msgpack_unpacked_init(&in);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&in, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);

    /* K = 4: shard 0 measured (1.5 ms, spread 2 %, noisy), shard 1 empty, shard 2 not
     * measured (on device B), shard 3 measured without a spread */
    as_bench_result r0 = { .ok = 1, .cost_ms = 1.5, .spread = 0.02, .noisy = 1 }, r2 = { .ok = 0 },
                    r3 = { .ok = 1, .cost_ms = 0.25, .spread = NAN };
    snprintf(r0.device, sizeof r0.device, "cpu: A");
    snprintf(r2.device, sizeof r2.device, "cpu: B");
    snprintf(r3.device, sizeof r3.device, "cpu: C");
    const as_bench_result *rk[4] = { &r0, NULL, &r2, &r3 };
    msgpack_sbuffer ob;
    msgpack_sbuffer_init(&ob);
    msgpack_packer opk;
    msgpack_packer_init(&opk, &ob, msgpack_sbuffer_write);
    as_brun_pack_plan(&opk, &in.data, 4, rk, NULL, 0.1, 0, AS_EB_SGD);
    msgpack_unpacked out;
    msgpack_unpacked_init(&out);
    off = 0;
    CHECK(msgpack_unpack_next(&out, ob.data, ob.size, &off) == MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *o = &out.data;
    /* the record's other fields in order, then ours, the old ones replaced */
    const char *keys[12] = { "kind", "task", "alg", "cost_ms", "cost_device", "cost_kind", "cost_spread", "cost_noisy",
                             "noise_threshold", "cost_pass_ms", "cost_pass_spread", "cost_row_cap" };
    CHECK(o->type == MSGPACK_OBJECT_MAP);
    CHECK_EQ_I64(o->via.map.size, 12);
    for (uint32_t f = 0; f < o->via.map.size && f < 12; f++) CHECK(as_obj_streq(&o->via.map.ptr[f].key, keys[f]));
    /* one pass: no passes; no row cap: nil */
    CHECK(o->via.map.ptr[9].val.type == MSGPACK_OBJECT_NIL && o->via.map.ptr[10].val.type == MSGPACK_OBJECT_NIL);
    CHECK(o->via.map.ptr[11].val.type == MSGPACK_OBJECT_NIL);
    char s[64];
    int64_t task;
    CHECK(as_obj_i64(o, "task", &task) == 0 && task == 3);
    CHECK(as_obj_str(o, "alg", s, sizeof s) == 0 && !strcmp(s, "x"));
    /* cost_ms: the cost, 0 for the empty shard, nil for the one not measured */
    const msgpack_object *c = &o->via.map.ptr[3].val;
    CHECK(c->type == MSGPACK_OBJECT_ARRAY && c->via.array.size == 4);
    CHECK(c->via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT64 && c->via.array.ptr[0].via.f64 == 1.5);
    CHECK(c->via.array.ptr[1].type == MSGPACK_OBJECT_FLOAT64 && c->via.array.ptr[1].via.f64 == 0);
    CHECK(c->via.array.ptr[2].type == MSGPACK_OBJECT_NIL);
    CHECK(c->via.array.ptr[3].via.f64 == 0.25);
    /* cost_device: the last non-empty shard's; cost_kind: measured */
    CHECK(as_obj_str(o, "cost_device", s, sizeof s) == 0 && !strcmp(s, "cpu: C"));
    CHECK(as_obj_str(o, "cost_kind", s, sizeof s) == 0 && !strcmp(s, "measured"));
    /* cost_spread: only the measured shard with a spread */
    const msgpack_object *sp = &o->via.map.ptr[6].val;
    CHECK(sp->type == MSGPACK_OBJECT_ARRAY && sp->via.array.size == 4);
    CHECK(sp->via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT64 && sp->via.array.ptr[0].via.f64 == 0.02);
    for (int k = 1; k < 4; k++) CHECK(sp->via.array.ptr[k].type == MSGPACK_OBJECT_NIL);
    /* cost_noisy: K booleans */
    const msgpack_object *nz = &o->via.map.ptr[7].val;
    CHECK(nz->type == MSGPACK_OBJECT_ARRAY && nz->via.array.size == 4);
    CHECK(nz->via.array.ptr[0].type == MSGPACK_OBJECT_BOOLEAN && nz->via.array.ptr[0].via.boolean);
    for (int k = 1; k < 4; k++) CHECK(nz->via.array.ptr[k].type == MSGPACK_OBJECT_BOOLEAN && !nz->via.array.ptr[k].via.boolean);
    const msgpack_object *th = &o->via.map.ptr[8].val;
    CHECK(th->type == MSGPACK_OBJECT_FLOAT64 && th->via.f64 == 0.1);
    msgpack_unpacked_destroy(&out);
    msgpack_sbuffer_destroy(&ob);

    /* passes: each pass's costs (0 for the empty shard, nil unmeasured) and each shard's spread
       over the passes with the plan's level in each pass taken out: pass 1 is the plan 2x
       slower throughout (no spread), but for shard 3, which moved against shard 0 */
    r0.npass = r3.npass = 2;
    r0.pass_ms[0] = 1.0; r0.pass_ms[1] = 2.0;
    r3.pass_ms[0] = 0.25; r3.pass_ms[1] = 0.5 * 1.21;
    msgpack_sbuffer_init(&ob);
    msgpack_packer_init(&opk, &ob, msgpack_sbuffer_write);
    as_brun_pack_plan(&opk, &in.data, 4, rk, NULL, 0.1, 0, AS_EB_SGD);
    msgpack_unpacked_init(&out);
    off = 0;
    CHECK(msgpack_unpack_next(&out, ob.data, ob.size, &off) == MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *pm = as_obj_get(&out.data, "cost_pass_ms"), *ps = as_obj_get(&out.data, "cost_pass_spread");
    CHECK(pm && pm->type == MSGPACK_OBJECT_ARRAY && pm->via.array.size == 2);
    CHECK(ps && ps->type == MSGPACK_OBJECT_ARRAY && ps->via.array.size == 4);
    if (pm && pm->type == MSGPACK_OBJECT_ARRAY && pm->via.array.size == 2 && ps && ps->via.array.size == 4) {
        const msgpack_object *p1 = &pm->via.array.ptr[1];
        CHECK(p1->type == MSGPACK_OBJECT_ARRAY && p1->via.array.size == 4);
        CHECK(p1->via.array.ptr[0].via.f64 == 2.0 && p1->via.array.ptr[1].via.f64 == 0 &&
              p1->via.array.ptr[2].type == MSGPACK_OBJECT_NIL && fabs(p1->via.array.ptr[3].via.f64 - 0.605) < 1e-12);
        /* levels: sqrt(1 x 0.25) = 0.5, sqrt(2 x 0.605) = 1.1; shard 0: 2 and 1.818.., shard 3:
           0.5 and 0.55: the same relative spread, (1.1 - 1) / (1.1 + 1) */
        double s0, s3;
        CHECK(as_obj_num(&ps->via.array.ptr[0], &s0) == 0 && as_obj_num(&ps->via.array.ptr[3], &s3) == 0);
        CHECK(fabs(s0 - 0.1 / 2.1) < 1e-9 && fabs(s3 - 0.1 / 2.1) < 1e-9);
        CHECK(ps->via.array.ptr[1].type == MSGPACK_OBJECT_NIL && ps->via.array.ptr[2].type == MSGPACK_OBJECT_NIL);
    }
    msgpack_unpacked_destroy(&out);
    msgpack_sbuffer_destroy(&ob);
    r0.npass = r3.npass = 0;

    /* every shard empty: costs 0, no device */
    const as_bench_result *empty[2] = { NULL, NULL };
    msgpack_sbuffer_init(&ob);
    msgpack_packer_init(&opk, &ob, msgpack_sbuffer_write);
    as_brun_pack_plan(&opk, &in.data, 2, empty, NULL, 0.25, 0, AS_EB_SGD);
    msgpack_unpacked_init(&out);
    off = 0;
    CHECK(msgpack_unpack_next(&out, ob.data, ob.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK(as_obj_str(&out.data, "cost_device", s, sizeof s) == 0 && !strcmp(s, ""));
    c = &out.data.via.map.ptr[3].val;
    CHECK(c->via.array.size == 2 && c->via.array.ptr[0].via.f64 == 0 && c->via.array.ptr[1].via.f64 == 0);
    msgpack_unpacked_destroy(&out);
    msgpack_sbuffer_destroy(&ob);
    msgpack_unpacked_destroy(&in);
    msgpack_sbuffer_destroy(&sb);
}

/* cost_dp_ms: written after cost_ms with a data-parallel part (0 none, nil failed), an old
 * one dropped without; the kind (cost_weights_type, cost_optimizer) written when it is not
 * fp16 + SGD (the shards' type, mixed when they differ), an old one dropped when it is */
TEST(benchrun_pack_plan_dp)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "kind", "plan");
    pack_ints(&pk, "cost_dp_ms", (const int64_t[]){ 9 }, 1);
    as_pack_kv_str(&pk, "cost_optimizer", "adam");
    msgpack_unpacked in;
    msgpack_unpacked_init(&in);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&in, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    as_bench_result r0 = { .ok = 1, .cost_ms = 3, .spread = NAN }, d0 = { .ok = 1, .cost_ms = 1, .spread = NAN },
                    d2 = { .ok = 0 };
    const as_bench_result *rk[3] = { &r0, NULL, &d2 }, *dk[3] = { &d0, NULL, &d2 };
    for (int with = 0; with < 4; with++) {
        msgpack_sbuffer ob;
        msgpack_sbuffer_init(&ob);
        msgpack_packer opk;
        msgpack_packer_init(&opk, &ob, msgpack_sbuffer_write);
        /* with 2: fp32 shards with row-wise Adagrad; with 3: fp32 and bf16 shards with SGD */
        snprintf(r0.wtype, sizeof r0.wtype, "%s", with >= 2 ? "fp32" : "");
        snprintf(d0.wtype, sizeof d0.wtype, "%s", with == 3 ? "bf16" : with == 2 ? "fp32" : "");
        const as_bench_result *rx[3] = { &r0, with == 3 ? &d0 : NULL, &d2 };
        as_brun_pack_plan(&opk, &in.data, 3, with == 3 ? rx : rk, with ? dk : NULL, 0.1, with ? 4096 : 0,
                          with == 2 ? AS_EB_ROWWISE_ADAGRAD : AS_EB_SGD);
        msgpack_unpacked out;
        msgpack_unpacked_init(&out);
        off = 0;
        CHECK(msgpack_unpack_next(&out, ob.data, ob.size, &off) == MSGPACK_UNPACK_SUCCESS);
        const msgpack_object *o = &out.data, *d = as_obj_get(o, "cost_dp_ms");
        CHECK_EQ_I64(o->via.map.size, with >= 2 ? 13 : with ? 11 : 10);
        char wt[16] = "", op[32] = "";
        as_obj_str(o, "cost_weights_type", wt, sizeof wt);
        as_obj_str(o, "cost_optimizer", op, sizeof op);
        CHECK_STR(wt, with == 2 ? "fp32" : with == 3 ? "mixed" : "");
        CHECK_STR(op, with == 2 ? "exact_rowwise_adagrad" : with == 3 ? "sgd" : "");
        /* the row cap measured under: given, or nil */
        int64_t rcap = 0;
        const msgpack_object *rc = as_obj_get(o, "cost_row_cap");
        CHECK(rc != NULL);
        if (with) CHECK(as_obj_i64(o, "cost_row_cap", &rcap) == 0 && rcap == 4096);
        else CHECK(rc && rc->type == MSGPACK_OBJECT_NIL);
        if (!with) CHECK(d == NULL);
        else {
            CHECK(as_obj_streq(&o->via.map.ptr[2].key, "cost_dp_ms"));
            CHECK(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size == 3);
            if (d && d->via.array.size == 3)
                CHECK(d->via.array.ptr[0].via.f64 == 1 && d->via.array.ptr[1].via.f64 == 0 &&
                      d->via.array.ptr[2].type == MSGPACK_OBJECT_NIL);
        }
        msgpack_unpacked_destroy(&out);
        msgpack_sbuffer_destroy(&ob);
    }
    msgpack_unpacked_destroy(&in);
    msgpack_sbuffer_destroy(&sb);
}

/* ---- data-parallel tables: bag slices and their measurement ------------------------------- */

/* a table file of n tables, ids 0..n-1, table i of batch B[i], rows 50 + 10 i, dim 8, bag b
 * of (7 i + 3 b) % 5 lookups, index (13 b + 7 l + i) % rows */
static void write_dp_tables(const char *path, int n, const int64_t *B)
{
    as_writer *w = as_writer_open(path, 3, 0);
    as_writer_header(w, "test", 0, NULL);
    for (int i = 0; i < n; i++) {
        const int64_t rows = 50 + 10 * i;
        int64_t *off = malloc((size_t)(B[i] + 1) * sizeof *off);
        off[0] = 0;
        for (int64_t b = 0; b < B[i]; b++) off[b + 1] = off[b] + (7 * i + 3 * b) % 5;
        int32_t *idx = malloc((size_t)(off[B[i]] + 1) * sizeof *idx);
        for (int64_t b = 0; b < B[i]; b++)
            for (int64_t l = off[b]; l < off[b + 1]; l++) idx[l] = (int32_t)((13 * b + 7 * (l - off[b]) + i) % rows);
        as_write_table(w, i, rows, B[i], 8, off, idx, AS_DT_I32, "test");
        free(off);
        free(idx);
    }
    as_writer_close(w);
}

TEST(benchrun_bag_slice)
{
    char *path = tpath("dp-tables.ast"), err[512];
    const int64_t B[3] = { 10, 10, 7 };
    write_dp_tables(path, 3, B);
    as_bpool p;
    CHECK(as_bpool_load(&p, path, NULL, 0, 0, err, sizeof err) == 0);
    const uint64_t bytes0 = as_bpool_bytes(&p);
    /* bags [3, 7) of table 1: batch 4, its rows and dim, offsets rebased, the same lookups */
    const int64_t s = as_bpool_slice(&p, 1, 3, 7, err, sizeof err);
    CHECK(s > 2);
    const as_btable *t = as_bpool_get(&p, 1), *d = as_bpool_get(&p, s);
    CHECK(d && d->batch == 4 && d->rows == t->rows && d->dim == t->dim && d->parent == 1 && d->b0 == 3 && d->b1 == 7);
    CHECK(!d->is_piece && d->borrowed == AS_BT_BORROW_INDICES);
    CHECK_EQ_I64(d->lookups, t->offsets[7] - t->offsets[3]);
    for (int64_t b = 0; d && b <= 4; b++) CHECK_EQ_I64(d->offsets[b], t->offsets[3 + b] - t->offsets[3]);
    for (int64_t l = 0; d && l < d->lookups; l++) CHECK_EQ_I64(d->indices[l], t->indices[t->offsets[3] + l]);
    /* the pool holds its offsets and one more entry of the id index; the indices are borrowed */
    CHECK_EQ_I64(as_bpool_bytes(&p) - bytes0, 5 * sizeof(int64_t) + sizeof(int64_t));
    /* found again, not made twice; all bags: the table itself; its origin: the table, whole */
    CHECK_EQ_I64(as_bpool_slice(&p, 1, 3, 7, err, sizeof err), s);
    CHECK_EQ_I64(as_bpool_slice_id(&p, 1, 3, 7), s);
    CHECK_EQ_I64(as_bpool_slice_id(&p, 1, 3, 8), -1);
    CHECK_EQ_I64(as_bpool_slice(&p, 1, 0, 10, err, sizeof err), 1);
    CHECK_EQ_I64(as_bpool_slice_id(&p, 1, 0, 10), 1);
    int64_t tb;
    as_piece q;
    as_bpool_origin(&p, s, &tb, &q);
    CHECK(tb == 1 && as_piece_whole(&q));
    /* errors: empty or outside the batch, a table not loaded, a slice of a slice; nor is a
       slice a table to cut pieces from */
    CHECK(as_bpool_slice(&p, 1, 4, 4, err, sizeof err) == -1);
    CHECK_STR(err, "bags [4, 4) of table 1: not a non-empty range of its batch of 10");
    CHECK(as_bpool_slice(&p, 2, 5, 8, err, sizeof err) == -1);
    CHECK(as_bpool_slice(&p, 9, 0, 1, err, sizeof err) == -1);
    CHECK_STR(err, "table 9 is not in the table data");
    CHECK(as_bpool_slice(&p, s, 0, 1, err, sizeof err) == -1);
    as_piece half = { 0, 4, 0, 0 };
    CHECK(as_bpool_piece(&p, s, &half, err, sizeof err) == -1);
    /* a piece of all rows of the table beside it: both borrow, neither frees the other's */
    as_piece cols = { 0, 4, 0, 0 };
    CHECK(as_bpool_piece(&p, 1, &cols, err, sizeof err) > s);
    /* measured, the slice is a table of its own: its lookups, its batch */
    as_bench_cfg c = { .warmup = 0, .runs = 3, .trim = 1, .lr = 0.05f, .seed = 7, .threads = 1, .flush_bytes = 1 << 20 };
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    as_bench_result r;
    const int64_t one[1] = { s };
    as_bench_session_run(S, one, 1, &r);
    CHECK(r.ok && r.batch == 4 && r.lookups == d->lookups);
    as_bench_session_free(S);
    as_bpool_free(&p);
}

/* the row cap's remap: into [0, cap), the rows' order kept; while the distinct rows are at
 * most cap, which lookups share a row kept exactly; above it, every capped row used */
TEST(bench_rowcap_remap)
{
    enum { N = 5000 };
    static int32_t in[N], out[N];
    uint64_t s = 11;
    for (int i = 0; i < N; i++) in[i] = (int32_t)(as_splitmix64(&s) % 1000000);
    for (int i = 0; i < N; i += 7) in[i] = 42;   /* a hot row */
    int64_t kept = -1;
    const int64_t D = as_rowcap_remap(in, N, 100000, out, &kept);
    CHECK(D > 100 && D < N && kept == D);
    int ok_range = 1, ok_eq = 1, ok_order = 1;
    for (int i = 0; i < N; i++) {
        ok_range &= out[i] >= 0 && out[i] < 100000;
        const int j = (int)(as_splitmix64(&s) % N);
        ok_eq &= (in[i] == in[j]) == (out[i] == out[j]);
        ok_order &= (in[i] < in[j]) == (out[i] < out[j]);
    }
    CHECK(ok_range && ok_eq && ok_order);
    /* more distinct rows than the cap: neighbours merge, the order is kept, all cap rows used */
    const int64_t D2 = as_rowcap_remap(in, N, 64, out, &kept);
    CHECK(D2 == D && kept == 64);
    unsigned char used[64] = { 0 };
    int mono = 1;
    for (int i = 0; i < N; i++) {
        CHECK(out[i] >= 0 && out[i] < 64);
        if (out[i] >= 0 && out[i] < 64) used[out[i]] = 1;
        const int j = (int)(as_splitmix64(&s) % N);
        if (in[i] < in[j]) mono &= out[i] <= out[j];
    }
    CHECK(mono);
    int all = 1;
    for (int k = 0; k < 64; k++) all &= used[k];
    CHECK(all);
    /* in place; nothing */
    memcpy(out, in, sizeof in);
    CHECK_EQ_I64(as_rowcap_remap(out, N, 100000, out, NULL), D);
    CHECK_EQ_I64(as_rowcap_remap(in, 0, 10, out, &kept), 0);
    CHECK_EQ_I64(kept, 0);
}

/* as_bpool_cap_rows: the tables, pieces and slices above the cap measured over it, their own
 * data kept; a session measures the capped rows (less memory, the same lookups) */
TEST(bench_row_cap)
{
    char *path = tpath("cap-tables.ast"), err[512];
    const int64_t B[3] = { 10, 10, 10 };
    write_dp_tables(path, 3, B);   /* rows 50, 60, 70 */
    as_bpool p, q;
    CHECK(as_bpool_load(&p, path, NULL, 0, 0, err, sizeof err) == 0);
    CHECK(as_bpool_load(&q, path, NULL, 0, 0, err, sizeof err) == 0);
    as_piece lo = { 0, 4, 0, 55 }, hi = { 0, 4, 55, 70 };
    const int64_t pl = as_bpool_piece(&p, 2, &lo, err, sizeof err), ph = as_bpool_piece(&p, 2, &hi, err, sizeof err);
    const int64_t sl = as_bpool_slice(&p, 1, 2, 9, err, sizeof err);
    CHECK(pl > 2 && ph > 2 && sl > 2);
    const uint64_t bytes0 = as_bpool_bytes(&p);
    CHECK_EQ_I64(as_bpool_cap_rows(&p, 0), 0);
    /* tables 0 (50 rows), 1 (60), 2 (70), the slice of 1 (60) and the piece of rows [0, 55)
       (55) are above 52; the piece of rows [55, 70) (15) is not */
    CHECK_EQ_I64(as_bpool_cap_rows(&p, 52), 0 + 5 - 1 + 0);
    const as_btable *t2 = as_bpool_get(&p, 2), *tl = as_bpool_get(&p, pl), *th = as_bpool_get(&p, ph), *ts = as_bpool_get(&p, sl);
    CHECK(t2->cap_rows == 52 && t2->rows == 70 && as_bt_mrows(t2) == 52);
    CHECK(tl->cap_rows == 52 && tl->rows == 55 && th->cap_rows == 0 && as_bt_mrows(th) == 15);
    CHECK(ts->cap_rows == 52 && as_bt_mindices(th) == th->indices);
    for (int64_t l = 0; l < t2->lookups; l++) CHECK(as_bt_mindices(t2)[l] >= 0 && as_bt_mindices(t2)[l] < 52);
    /* the pieces are still found by their rows of the table */
    CHECK_EQ_I64(as_bpool_piece_id(&p, 2, &lo), pl);
    CHECK_EQ_I64(as_bpool_piece_id(&p, 2, &hi), ph);
    int64_t capped_lookups = 0;
    for (int64_t i = 0; i < p.n; i++) capped_lookups += p.t[i].cap_rows ? (p.t[i].lookups ? p.t[i].lookups : 1) : 0;
    CHECK_EQ_I64(as_bpool_bytes(&p) - bytes0, capped_lookups * (int64_t)sizeof(int32_t));
    /* capped twice: nothing more */
    CHECK_EQ_I64(as_bpool_cap_rows(&p, 52), 0);
    /* measured: table 2 alone, capped and not: the same lookups, less memory, `capped` counted */
    as_bench_cfg c = { .warmup = 0, .runs = 3, .trim = 1, .lr = 0.05f, .seed = 7, .threads = 1, .flush_bytes = 1 << 20, .row_cap = 52 };
    as_bench_session *S = as_bench_session_new(&c, &p, err, sizeof err);
    as_bench_result r, u, r1;
    const int64_t two[2] = { 2, ph };
    as_bench_session_run(S, two, 2, &r);
    as_bench_session_run(S, two, 1, &r1);
    as_bench_session_free(S);
    c.row_cap = 0;
    S = as_bench_session_new(&c, &q, err, sizeof err);
    as_bench_session_run(S, two, 1, &u);
    as_bench_session_free(S);
    CHECK(r.ok && u.ok);
    CHECK_EQ_I64(r.capped, 1);
    CHECK_EQ_I64(u.capped, 0);
    CHECK_EQ_I64(r.lookups, t2->lookups + th->lookups);
    CHECK_EQ_I64(u.lookups, t2->lookups);
    CHECK(r1.ok && r1.lookups == u.lookups && r1.bytes < u.bytes);
    as_bpool_free(&p);
    as_bpool_free(&q);
}

/* what run_dp_plans read back from as_brun_input's output */
typedef struct {
    int nplan, ncost;
    int64_t K[2];
    double cost[2][16], dp[2][16];      /* NAN: nil; -1: absent */
    int has_dp[2];
    int64_t cost_shard[16];             /* the cost records' shards */
    double cost_rec[16];
    double pass[2][2][16];              /* cost_pass_ms */
    int npass[2];
} dp_out;

static double num_or_nan(const msgpack_object *o)
{
    double v;
    return o->type == MSGPACK_OBJECT_NIL || as_obj_num(o, &v) ? NAN : v;
}

static int dp_read(void *ctx, const as_reader *rd, const as_record *rec, char *err, size_t errlen)
{
    (void)rd; (void)err; (void)errlen;
    dp_out *o = ctx;
    if (as_rec_is(rec, "cost") && o->ncost < 16) {
        as_obj_i64(&rec->obj, "shard", &o->cost_shard[o->ncost]);
        as_obj_f64(&rec->obj, "cost_ms", &o->cost_rec[o->ncost]);
        o->ncost++;
    }
    if (!as_rec_is(rec, "plan") || o->nplan >= 2) return 0;
    const int i = o->nplan++;
    as_obj_i64(&rec->obj, "shards", &o->K[i]);
    const msgpack_object *c = as_obj_get(&rec->obj, "cost_ms"), *d = as_obj_get(&rec->obj, "cost_dp_ms"),
                         *pm = as_obj_get(&rec->obj, "cost_pass_ms");
    o->has_dp[i] = d != NULL;
    for (uint32_t k = 0; c && k < c->via.array.size && k < 16; k++) o->cost[i][k] = num_or_nan(&c->via.array.ptr[k]);
    for (uint32_t k = 0; d && k < d->via.array.size && k < 16; k++) o->dp[i][k] = num_or_nan(&d->via.array.ptr[k]);
    o->npass[i] = pm && pm->type == MSGPACK_OBJECT_ARRAY ? (int)pm->via.array.size : 0;
    for (int p = 0; p < o->npass[i] && p < 2; p++)
        for (uint32_t k = 0; k < pm->via.array.ptr[p].via.array.size && k < 16; k++)
            o->pass[i][p][k] = num_or_nan(&pm->via.array.ptr[p].via.array.ptr[k]);
    return 0;
}

typedef struct {
    int n;
    int64_t first;
    char error[512];
} dp_fail;

static void dp_failed(void *ctx, const int64_t *ids, int64_t n, const char *error)
{
    dp_fail *f = ctx;
    f->n++;
    f->first = n ? ids[0] : -1;
    snprintf(f->error, sizeof f->error, "%s", error);
}

/* write the plans (the msgpack of JSON-like specs is too long by hand: packed here), measure
 * them on the table file with the quiet fake timer over `passes` passes, read them back */
static void pack_plan(as_writer *w, int64_t K, const int64_t *tables, const int64_t *assign, int n)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 5);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_str(pk, "alg", "dp");
    as_pack_kv_i64(pk, "shards", K);
    pack_ints(pk, "tables", tables, n);
    pack_ints(pk, "assign", assign, n);
    as_writer_end_record(w);
}

static void run_dp_plans(const char *tables, const char *in, int passes, dp_out *o, dp_fail *f, as_brun_stats *st)
{
    char err[1024], *files[1] = { (char *)in };
    as_binput bi;
    as_bpool pool;
    CHECK(as_binput_read(&bi, files, 1, err, sizeof err) == 0);
    CHECK(as_binput_tables(&pool, tables, &bi, 1, 1, NULL, 0, err, sizeof err) == 0);
    as_bench_fake quiet = { 1, AS_FAKE_QUIET, 1, 10, 0, 0, { 0 }, 0, 0 };
    as_bench_cfg c = { .warmup = 0, .runs = 3, .trim = 1, .lr = 0.05f, .seed = 7, .threads = 1, .flush_bytes = 1 << 20,
                       .fake = &quiet };
    as_bench_session *S = as_bench_session_new(&c, &pool, err, sizeof err);
    as_brun_cfg rc = { .bench = &c, .noise = { .threshold = 0.1, .retries = 1, .interleave = 4 }, .part_i = 1, .part_n = 1,
                       .window = 1, .passes = passes, .ctx = f, .failed = dp_failed };
    char *out = tpath("dp-out.ast");
    as_writer *w = as_writer_open(out, 3, 0);
    as_writer_header(w, "test", 0, NULL);
    memset(st, 0, sizeof *st);
    CHECK(as_brun_input(w, S, &rc, &bi, st, err, sizeof err) == 0);
    as_writer_close(w);
    memset(o, 0, sizeof *o);
    char *outs[1] = { out };
    CHECK(as_read_records(outs, 1, dp_read, o, err, sizeof err) == 0);
    as_bench_tally_free(&st->tally);
    as_bench_session_free(S);
    as_bpool_free(&pool);
    as_binput_free(&bi);
}

/* the fake timer's quiet cost of a job of `lookups` lookups (benchfake.h): each run 0.1 ms +
 * 1e-5 ms per lookup, times 1 + u / 100 (u in [0, 1) from a hash of the job's pool ids) */
static double fake_ms(int64_t lookups) { return 0.1 + 1e-5 * (double)lookups; }
#define CHECK_FAKE(v, base) CHECK((v) >= (base) && (v) <= (base) * 1.01)

/* lookups of bags [b0, b1) of table i of write_dp_tables */
static int64_t dp_lookups(int i, int64_t b0, int64_t b1)
{
    int64_t s = 0;
    for (int64_t b = b0; b < b1; b++) s += (7 * i + 3 * b) % 5;
    return s;
}

TEST(benchrun_plan_data_parallel)
{
    char *tables = tpath("dp-t.ast"), *in = tpath("dp-in.ast");
    const int64_t B[5] = { 10, 10, 10, 10, 7 };
    write_dp_tables(tables, 5, B);
    /* plan 0: K = 3, tables 0 and 2 on shards 0 and 1, 1 and 3 data parallel: shard 2 holds
       only data-parallel tables. Plan 1: K = 12 > B = 10, table 0 on shard 11, table 1 data
       parallel: shards 10 and 11 have no bags of it */
    as_writer *w = as_writer_open(in, 3, 0);
    as_writer_header(w, "test", 0, NULL);
    pack_plan(w, 3, (const int64_t[]){ 0, 1, 2, 3 }, (const int64_t[]){ 0, AS_DP, 1, AS_DP }, 4);
    pack_plan(w, 12, (const int64_t[]){ 0, 1 }, (const int64_t[]){ 11, AS_DP }, 2);
    as_writer_close(w);
    for (int passes = 1; passes <= 2; passes++) {
        dp_out o;
        dp_fail f = { 0 };
        as_brun_stats st;
        run_dp_plans(tables, in, passes, &o, &f, &st);
        CHECK(o.nplan == 2 && f.n == 0 && st.failed == 0);
        /* cost records: the shards with tables only (plan 0: 0, 1; plan 1: 11) */
        CHECK_EQ_I64(o.ncost, 3);
        CHECK(o.cost_shard[0] == 0 && o.cost_shard[1] == 1 && o.cost_shard[2] == 11);
        CHECK_FAKE(o.cost_rec[0], fake_ms(dp_lookups(0, 0, 10)));
        CHECK_FAKE(o.cost_rec[1], fake_ms(dp_lookups(2, 0, 10)));
        /* plan 0: cost = the tables' part (its cost record) + the data-parallel part (bags
           [0,4) [4,8) [8,10) of tables 1 and 3), exactly */
        CHECK(o.has_dp[0] && o.K[0] == 3);
        const int64_t bb[4] = { 0, 4, 8, 10 };
        for (int k = 0; k < 3; k++) {
            const double own = k < 2 ? o.cost_rec[k] : 0, own_base = k < 2 ? fake_ms(dp_lookups(2 * k, 0, 10)) : 0;
            const double dp_base = fake_ms(dp_lookups(1, bb[k], bb[k + 1]) + dp_lookups(3, bb[k], bb[k + 1]));
            CHECK_FAKE(o.dp[0][k], dp_base);
            CHECK(o.cost[0][k] == own + o.dp[0][k]);
            /* each pass's cost: both parts too */
            for (int p = 0; p < o.npass[0] && p < 2; p++) CHECK_FAKE(o.pass[0][p][k], own_base + dp_base);
        }
        CHECK_EQ_I64(o.npass[0], passes == 2 ? 2 : 0);
        /* plan 1: shards 0..9 one bag each; 10 only table 0; 11 nothing of table 1 */
        CHECK(o.has_dp[1] && o.K[1] == 12);
        for (int k = 0; k < 12; k++) {
            if (k < 10) CHECK_FAKE(o.dp[1][k], fake_ms(dp_lookups(1, k, k + 1)));
            else CHECK(o.dp[1][k] == 0);
            CHECK(o.cost[1][k] == o.dp[1][k] + (k == 11 ? o.cost_rec[2] : 0));
        }
        /* every job in the run's figures: plan 0's 2 + 3, plan 1's 1 + 10 */
        CHECK_EQ_I64(st.tally.shards, 16);
    }
}

/* a data-parallel part that cannot be measured (two tables whose slices differ in batch):
 * the shard's cost and its cost_dp_ms nil, reported through `failed` with the tables' ids */
TEST(benchrun_plan_data_parallel_failed)
{
    char *tables = tpath("dpf-t.ast"), *in = tpath("dpf-in.ast");
    const int64_t B[5] = { 10, 10, 10, 10, 7 };
    write_dp_tables(tables, 5, B);
    as_writer *w = as_writer_open(in, 3, 0);
    as_writer_header(w, "test", 0, NULL);
    pack_plan(w, 2, (const int64_t[]){ 0, 1, 4 }, (const int64_t[]){ 0, AS_DP, AS_DP }, 3);
    as_writer_close(w);
    dp_out o;
    dp_fail f = { 0 };
    as_brun_stats st;
    run_dp_plans(tables, in, 1, &o, &f, &st);
    /* bags [0,5) of table 1 and [0,4) of table 4 on shard 0, [5,10) and [4,7) on shard 1 */
    CHECK(o.nplan == 1 && o.has_dp[0]);
    CHECK(isnan(o.cost[0][0]) && isnan(o.cost[0][1]) && isnan(o.dp[0][0]) && isnan(o.dp[0][1]));
    CHECK_EQ_I64(o.ncost, 1);     /* shard 0's tables were measured all the same */
    CHECK(o.cost_rec[0] > 0);
    CHECK(f.n == 2 && st.failed == 2 && f.first == 1);
    CHECK(strncmp(f.error, "data-parallel tables: ", 22) == 0 && strstr(f.error, "have different batch sizes"));
}

/* ---- --device ----------------------------------------------------------------------------- */

TEST(device_parse_strings)
{
    char err[512];
    int dev = 7;
    CHECK(as_device_parse("cpu", &dev, err, sizeof err) == 0 && dev == -1);
    CHECK(as_device_parse("auto", &dev, err, sizeof err) == 0);
    CHECK_EQ_I64(dev, as_cuda_device_count() > 0 ? 0 : -1);
    CHECK_EQ_I64(as_device_parse("tpu", &dev, err, sizeof err), AS_EXIT_USAGE);
    CHECK_STR(err, "--device: 'tpu' is not auto, cpu, cuda or cuda:N");
    CHECK_EQ_I64(as_device_parse("cudax", &dev, err, sizeof err), AS_EXIT_USAGE);
    CHECK_EQ_I64(as_device_parse("cuda:x", &dev, err, sizeof err), AS_EXIT_USAGE);
    CHECK_STR(err, "--device: 'cuda:x' is not cuda:N");
    CHECK_EQ_I64(as_device_parse("cuda:", &dev, err, sizeof err), AS_EXIT_USAGE);
    CHECK_EQ_I64(as_device_parse("cuda:1025", &dev, err, sizeof err), AS_EXIT_USAGE);
    /* cuda:1024 names a device (there is none that high): an environment error */
    CHECK_EQ_I64(as_device_parse("cuda:1024", &dev, err, sizeof err), AS_EXIT_ENV);
    int n = as_cuda_device_count();
    if (n == 0) {
        CHECK_EQ_I64(as_device_parse("cuda", &dev, err, sizeof err), AS_EXIT_ENV);
        CHECK(strncmp(err, "--device cuda: no working CUDA device (", 39) == 0);
    } else {
        CHECK(as_device_parse("cuda", &dev, err, sizeof err) == 0 && dev == 0);
        CHECK(as_device_parse("cuda:1024", &dev, err, sizeof err) == AS_EXIT_ENV && strstr(err, "CUDA device(s)"));
    }
    /* the bench and nn front ends agree with it */
    as_bench_cfg bc = { 0 };
    CHECK(as_bench_device("cpu", &bc, err, sizeof err) == 0 && bc.cuda == 0);
    CHECK_EQ_I64(as_bench_device("tpu", &bc, err, sizeof err), AS_EXIT_USAGE);
    CHECK_STR(err, "--device: 'tpu' is not auto, cpu, cuda or cuda:N");
    int code = -1;
    CHECK(as_nn_device("cpu", &code, err, sizeof err) == as_nn_cpu() && code == 0);
    CHECK(as_nn_device("cuda:x", &code, err, sizeof err) == NULL && code == AS_EXIT_USAGE);
    CHECK_STR(err, "--device: 'cuda:x' is not cuda:N");
    if (n == 0) {
        CHECK(as_nn_device("cuda", &code, err, sizeof err) == NULL && code == AS_EXIT_ENV);
        CHECK(strncmp(err, "--device cuda: no working CUDA device (", 39) == 0);
        CHECK(as_nn_device("auto", &code, err, sizeof err) == as_nn_cpu() && code == 0);
    }
}
