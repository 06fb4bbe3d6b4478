/* test_costrec.c - the `cost` record (lib/records/costrec.h): written then read back field by
 * field; the optional fields (pieces, weights_type and optimizer, reference) absent and
 * present; the shard and its measured cost refused when bad (wrong types, out-of-range
 * values, a truncated record), the other fields read as they stand. */
#include "unit.h"

#include "costrec.h"
#include "msgobj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* pack c, unpack it into up (the caller destroys up and sb) */
static const msgpack_object *roundtrip(const as_costrec *c, msgpack_sbuffer *sb, msgpack_unpacked *up)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    as_costrec_pack(&pk, c);
    msgpack_unpacked_init(up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(up, sb->data, sb->size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_I64(off, sb->size);
    return &up->data;
}

/* unpack the bytes b[0..n) into up; 0 or -1 */
static int unpack(const char *b, size_t n, msgpack_unpacked *up)
{
    msgpack_unpacked_init(up);
    size_t off = 0;
    return msgpack_unpack_next(up, b, n, &off) == MSGPACK_UNPACK_SUCCESS ? 0 : -1;
}

static int64_t T[3] = { 4, 9, 17 };
static double PASS[3] = { 1.5, NAN, 1.75 };
static int64_t REF[2] = { 0, 2 };

/* a measured shard of three tables, every field set */
static as_costrec full(void)
{
    as_costrec c = { 0 };
    c.tables = T;
    c.n = 3;
    c.origin = (as_fstr){ "plan", AS_F_SET };
    c.task = (as_fint){ 7, AS_F_SET };
    c.alg = (as_fstr){ "cost-greedy+split", AS_F_SET };
    c.shard = (as_fint){ 1, AS_F_SET };
    c.cost_ms = (as_fnum){ 1.625, AS_F_SET };
    c.fwd_ms = (as_fnum){ 0.5, AS_F_SET };
    c.bwd_ms = (as_fnum){ 1.125, AS_F_SET };
    c.median_ms = (as_fnum){ 1.6, AS_F_SET };
    c.min_ms = (as_fnum){ 1.5, AS_F_SET };
    c.max_ms = (as_fnum){ 1.9, AS_F_SET };
    c.rel_std = (as_fnum){ 0.02, AS_F_SET };
    c.gbps = (as_fnum){ 310.5, AS_F_SET };
    c.spread = (as_fnum){ 0.01, AS_F_SET };
    c.attempts = (as_fint){ 2, AS_F_SET };
    c.passes = (as_fint){ 3, AS_F_SET };
    c.together = (as_fint){ 5, AS_F_SET };
    c.drift = (as_fnum){ 1.25, AS_F_SET };
    c.noisy = (as_fint){ 1, AS_F_SET };
    c.drift_refused = (as_fint){ 0, AS_F_SET };
    c.pass_ms = PASS;
    c.npass = 3;
    c.pass_has = AS_F_SET;
    c.pass_spread = (as_fnum){ 0.07, AS_F_SET };
    c.lookups = (as_fint){ 123456, AS_F_SET };
    c.row_cap = (as_fint){ 4096, AS_F_SET };
    c.capped = (as_fint){ 1, AS_F_SET };
    c.batch = (as_fint){ 512, AS_F_SET };
    c.sum_dim = (as_fint){ 96, AS_F_SET };
    c.bytes = (as_fint){ (int64_t)1 << 33, AS_F_SET };
    c.device = (as_fstr){ "cpu: test (1 threads)", AS_F_SET };
    c.device_kind = (as_fstr){ "cpu", AS_F_SET };
    c.threads = (as_fint){ 1, AS_F_SET };
    c.sm_clock_mhz = (as_fint){ 0, AS_F_SET };
    c.protocol[0] = 1;
    c.protocol[1] = 5;
    c.protocol[2] = 1;
    c.protocol_has = AS_F_SET;
    c.error = (as_fstr){ NULL, AS_F_NIL };
    c.weights_type = (as_fstr){ "fp32", AS_F_SET };
    c.optimizer = (as_fstr){ "adam", AS_F_SET };
    c.ref_tables = REF;
    c.nref = 2;
    c.ref_level_ms = 0.875;
    c.ref_has = AS_F_SET;
    return c;
}

TEST(costrec_roundtrip_every_field)
{
    as_costrec w = full();
    static as_piece pc[3] = { { 0, 0, 0, 0 }, { 0, 8, 0, 100 }, { 8, 16, 0, 100 } };
    w.pieces = pc;
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    const msgpack_object *o = roundtrip(&w, &sb, &up);
    CHECK(as_costrec_is(o));
    CHECK_EQ_I64(o->via.map.size, 35 + 1 + 2 + 1);
    as_costrec r;
    char err[256] = "";
    CHECK_EQ_I64(as_costrec_read(o, &r, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_EQ_I64(r.n, 3);
    for (int i = 0; i < 3; i++) CHECK_EQ_I64(r.tables[i], T[i]);
    CHECK(r.pieces != NULL);
    for (int i = 0; r.pieces && i < 3; i++) CHECK(as_piece_eq(&r.pieces[i], &pc[i]));
    CHECK_EQ_I64(r.measured, 1);
    CHECK_STR(r.origin.s, "plan");
    CHECK_EQ_I64(r.task.v, 7);
    CHECK_STR(r.alg.s, "cost-greedy+split");
    CHECK_EQ_I64(r.shard.v, 1);
    const as_fnum *rn[] = { &r.cost_ms, &r.fwd_ms, &r.bwd_ms, &r.median_ms, &r.min_ms, &r.max_ms, &r.rel_std,
                             &r.gbps, &r.spread, &r.drift, &r.pass_spread };
    const as_fnum *wn[] = { &w.cost_ms, &w.fwd_ms, &w.bwd_ms, &w.median_ms, &w.min_ms, &w.max_ms, &w.rel_std,
                             &w.gbps, &w.spread, &w.drift, &w.pass_spread };
    for (size_t i = 0; i < sizeof rn / sizeof rn[0]; i++) {
        CHECK_EQ_I64(rn[i]->has, AS_F_SET);
        CHECK(rn[i]->v == wn[i]->v);
    }
    const as_fint *ri[] = { &r.attempts, &r.passes, &r.together, &r.noisy, &r.drift_refused, &r.lookups, &r.row_cap,
                             &r.capped, &r.batch, &r.sum_dim, &r.bytes, &r.threads, &r.sm_clock_mhz };
    const as_fint *wi[] = { &w.attempts, &w.passes, &w.together, &w.noisy, &w.drift_refused, &w.lookups, &w.row_cap,
                             &w.capped, &w.batch, &w.sum_dim, &w.bytes, &w.threads, &w.sm_clock_mhz };
    for (size_t i = 0; i < sizeof ri / sizeof ri[0]; i++) {
        CHECK_EQ_I64(ri[i]->has, AS_F_SET);
        CHECK_EQ_I64(ri[i]->v, wi[i]->v);
    }
    CHECK_EQ_I64(r.pass_has, AS_F_SET);
    CHECK_EQ_I64(r.npass, 3);
    CHECK(r.pass_ms[0] == 1.5 && isnan(r.pass_ms[1]) && r.pass_ms[2] == 1.75);
    CHECK_STR(r.device.s, "cpu: test (1 threads)");
    CHECK_STR(r.device_kind.s, "cpu");
    CHECK_EQ_I64(r.protocol_has, AS_F_SET);
    CHECK(r.protocol[0] == 1 && r.protocol[1] == 5 && r.protocol[2] == 1);
    CHECK_EQ_I64(r.error.has, AS_F_NIL);
    CHECK(r.error.s == NULL);
    CHECK_STR(r.weights_type.s, "fp32");
    CHECK_STR(r.optimizer.s, "adam");
    CHECK_EQ_I64(r.ref_has, AS_F_SET);
    CHECK_EQ_I64(r.nref, 2);
    CHECK(r.ref_tables[0] == 0 && r.ref_tables[1] == 2);
    CHECK(r.ref_level_ms == 0.875);

    /* written again from what was read: the same bytes */
    msgpack_sbuffer sb2;
    msgpack_unpacked up2;
    roundtrip(&r, &sb2, &up2);
    CHECK_EQ_I64(sb2.size, sb.size);
    CHECK(sb2.size == sb.size && !memcmp(sb2.data, sb.data, sb.size));
    msgpack_unpacked_destroy(&up2);
    msgpack_sbuffer_destroy(&sb2);
    as_costrec_free(&r);
    CHECK(r.tables == NULL && r.device.s == NULL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(costrec_unmeasured_and_optional_fields_absent)
{
    as_costrec w = full();
    w.pieces = NULL;
    w.weights_type = (as_fstr){ NULL, AS_F_ABSENT };
    w.optimizer = (as_fstr){ NULL, AS_F_ABSENT };
    w.ref_has = AS_F_ABSENT;
    w.alg = (as_fstr){ NULL, AS_F_NIL };
    w.row_cap = (as_fint){ 0, AS_F_NIL };
    w.pass_has = AS_F_NIL;
    as_fnum *nil[] = { &w.cost_ms, &w.fwd_ms, &w.bwd_ms, &w.spread, &w.drift, &w.pass_spread };
    for (size_t i = 0; i < sizeof nil / sizeof nil[0]; i++) *nil[i] = (as_fnum){ NAN, AS_F_NIL };
    w.error = (as_fstr){ "does not fit", AS_F_SET };
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    const msgpack_object *o = roundtrip(&w, &sb, &up);
    CHECK_EQ_I64(o->via.map.size, 35);
    CHECK(as_obj_get(o, "pieces") == NULL && as_obj_get(o, "reference") == NULL && as_obj_get(o, "weights_type") == NULL);
    as_costrec r;
    char err[256] = "";
    CHECK_EQ_I64(as_costrec_read(o, &r, err, sizeof err), 0);
    CHECK_EQ_I64(r.measured, 0);
    CHECK(r.pieces == NULL);
    CHECK_EQ_I64(r.alg.has, AS_F_NIL);
    CHECK_EQ_I64(r.row_cap.has, AS_F_NIL);
    CHECK_EQ_I64(r.pass_has, AS_F_NIL);
    CHECK(r.pass_ms == NULL);
    CHECK_EQ_I64(r.cost_ms.has, AS_F_NIL);
    CHECK(isnan(r.cost_ms.v));
    CHECK_EQ_I64(r.weights_type.has, AS_F_ABSENT);
    CHECK_EQ_I64(r.optimizer.has, AS_F_ABSENT);
    CHECK_EQ_I64(r.ref_has, AS_F_ABSENT);
    CHECK_STR(r.error.s, "does not fit");
    as_costrec_free(&r);

    /* an error and a cost: not measured either (the error wins) */
    w.cost_ms = (as_fnum){ 2.0, AS_F_SET };
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    o = roundtrip(&w, &sb, &up);
    CHECK_EQ_I64(as_costrec_read(o, &r, err, sizeof err), 0);
    CHECK_EQ_I64(r.measured, 0);
    CHECK_EQ_I64(r.cost_ms.has, AS_F_SET);
    as_costrec_free(&r);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

/* a record of the given kind, tables and cost_ms: packed by hand */
static void pack_small(msgpack_sbuffer *sb, const char *kind, int tables_kind, int cost_kind, double cost)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    as_pack_kv_str(&pk, "kind", kind);
    as_pack_str(&pk, "tables");
    if (tables_kind == 0) { msgpack_pack_array(&pk, 2); msgpack_pack_int(&pk, 1); msgpack_pack_int(&pk, 2); }
    else if (tables_kind == 1) as_pack_str(&pk, "1,2");                       /* wrong type */
    else { msgpack_pack_array(&pk, 1); msgpack_pack_int64(&pk, (int64_t)1 << 40); }   /* id out of range */
    as_pack_str(&pk, "cost_ms");
    if (cost_kind == 0) msgpack_pack_double(&pk, cost);
    else as_pack_str(&pk, "fast");
    /* the other fields with the wrong types: read as they stand, never refused */
    as_pack_kv_str(&pk, "passes", "three");
    as_pack_str(&pk, "protocol");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 5);
}

TEST(costrec_bad_shard_or_cost_refused)
{
    msgpack_sbuffer sb;
    msgpack_unpacked up;
    as_costrec r;
    char err[256];
    /* fine: the wrong-typed passes and protocol stand as AS_F_OTHER */
    pack_small(&sb, "cost", 0, 0, 3.5);
    CHECK_EQ_I64(unpack(sb.data, sb.size, &up), 0);
    CHECK(as_costrec_is(&up.data));
    CHECK_EQ_I64(as_costrec_read(&up.data, &r, err, sizeof err), 0);
    CHECK_EQ_I64(r.measured, 1);
    CHECK(r.cost_ms.v == 3.5);
    CHECK_EQ_I64(r.passes.has, AS_F_OTHER);
    CHECK_EQ_I64(r.protocol_has, AS_F_OTHER);
    CHECK_EQ_I64(r.device.has, AS_F_ABSENT);
    as_costrec_free(&r);
    msgpack_unpacked_destroy(&up);
    /* truncated: the bytes end inside the record */
    CHECK(unpack(sb.data, sb.size - 3, &up) != 0);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    const struct { int tables, cost; double v; const char *msg; } bad[] = {
        { 1, 0, 1, "tables" }, { 2, 0, 1, "tables" }, { 0, 1, 0, "'cost_ms' is not a number" },
        { 0, 0, 0, "'cost_ms' = 0 is not a positive cost" }, { 0, 0, -2, "'cost_ms' = -2 is not a positive cost" },
        { 0, 0, INFINITY, "cost_ms" }, { 0, 0, NAN, "cost_ms" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pack_small(&sb, "cost", bad[i].tables, bad[i].cost, bad[i].v);
        CHECK_EQ_I64(unpack(sb.data, sb.size, &up), 0);
        err[0] = 0;
        CHECK_EQ_I64(as_costrec_read(&up.data, &r, err, sizeof err), -1);
        CHECK(strstr(err, bad[i].msg) != NULL);
        CHECK(r.tables == NULL && r.origin.s == NULL);   /* freed */
        msgpack_unpacked_destroy(&up);
        msgpack_sbuffer_destroy(&sb);
    }
    /* another kind is no cost record */
    pack_small(&sb, "shard", 0, 0, 1);
    CHECK_EQ_I64(unpack(sb.data, sb.size, &up), 0);
    CHECK(!as_costrec_is(&up.data));
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(costrec_fields_and_reference_as_they_stand)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    as_pack_kv_str(&pk, "kind", "cost");
    as_pack_kv_str(&pk, "tables", "not read here");
    as_pack_kv_i64(&pk, "row_cap", -5);
    as_pack_str(&pk, "reference");
    msgpack_pack_map(&pk, 2);
    as_pack_str(&pk, "tables");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 3);
    msgpack_pack_int(&pk, -1);
    as_pack_str(&pk, "x");
    as_pack_kv_f64(&pk, "level_ms", 2.5);
    msgpack_unpacked up;
    CHECK_EQ_I64(unpack(sb.data, sb.size, &up), 0);
    as_costrec r;
    as_costrec_read_fields(&up.data, &r);
    CHECK(r.tables == NULL);
    CHECK_EQ_I64(r.row_cap.has, AS_F_SET);
    CHECK_EQ_I64(r.row_cap.v, -5);
    CHECK_EQ_I64(r.ref_has, AS_F_SET);
    CHECK_EQ_I64(r.nref, 3);
    CHECK(r.ref_tables[0] == 3 && r.ref_tables[1] == -1 && r.ref_tables[2] == -1);
    CHECK(r.ref_level_ms == 2.5);
    CHECK_EQ_I64(r.cost_ms.has, AS_F_ABSENT);
    as_costrec_free(&r);
    char err[256] = "";
    CHECK_EQ_I64(as_costrec_read(&up.data, &r, err, sizeof err), -1);   /* its tables are bad */
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);

    /* a reference that is not {tables, level_ms}: OTHER; nil: NIL */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    as_pack_kv_str(&pk, "kind", "cost");
    as_pack_str(&pk, "reference");
    msgpack_pack_map(&pk, 1);
    as_pack_kv_f64(&pk, "level_ms", 2.5);
    as_pack_str(&pk, "drift");
    msgpack_pack_nil(&pk);
    CHECK_EQ_I64(unpack(sb.data, sb.size, &up), 0);
    as_costrec_read_fields(&up.data, &r);
    CHECK_EQ_I64(r.ref_has, AS_F_OTHER);
    CHECK(r.ref_tables == NULL);
    CHECK_EQ_I64(r.drift.has, AS_F_NIL);
    as_costrec_free(&r);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}
