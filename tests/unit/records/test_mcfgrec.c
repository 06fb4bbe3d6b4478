/* test_mcfgrec.c - the `model-config` record (lib/records/mcfgrec.h): written then read back
 * field by field; a record with wrong types, out-of-range and missing fields read as it
 * stands (each field's as_fhas), for its readers to refuse. */
#include "unit.h"

#include "mcfgrec.h"
#include "msgobj.h"
#include "stream.h"

#include <string.h>

TEST(mcfgrec_roundtrip_every_field)
{
    const as_mcfgrec w = {
        .name = { "dlrm-test", AS_F_SET }, .source = { "a paper, table 2", AS_F_SET }, .module_path = { "model.sparse.ebc", AS_F_SET },
        .world_size = { 16, AS_F_SET }, .local_size = { 8, AS_F_SET }, .hbm_bytes = { (int64_t)80 << 30, AS_F_SET },
        .batch_size_per_rank = { 512, AS_F_SET }, .optimizer = { "rowwise_adagrad", AS_F_SET },
        .pipeline = { "train_sparse_dist", AS_F_SET }, .dense_bytes = { 123456789, AS_F_SET },
        .tables = { 26, AS_F_SET }, .batch = { 8192, AS_F_SET },
    };
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    as_mcfgrec_pack(&pk, &w);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_I64(off, sb.size);
    CHECK(as_mcfgrec_is(&up.data));
    CHECK_EQ_I64(up.data.via.map.size, 13);
    /* the field order as-convert has always written */
    static const char *const keys[13] = { "kind", "name", "source", "module_path", "world_size", "local_size",
                                          "hbm_bytes", "batch_size_per_rank", "optimizer", "pipeline", "dense_bytes",
                                          "tables", "batch" };
    for (uint32_t i = 0; i < 13 && i < up.data.via.map.size; i++) {
        const msgpack_object *k = &up.data.via.map.ptr[i].key;
        CHECK(as_obj_streq(k, keys[i]));
    }
    as_mcfgrec r;
    as_mcfgrec_read(&up.data, &r);
    const as_fstr *rs[] = { &r.name, &r.source, &r.module_path, &r.optimizer, &r.pipeline };
    const as_fstr *ws[] = { &w.name, &w.source, &w.module_path, &w.optimizer, &w.pipeline };
    for (size_t i = 0; i < 5; i++) {
        CHECK_EQ_I64(rs[i]->has, AS_F_SET);
        CHECK_STR(rs[i]->s, ws[i]->s);
    }
    const as_fint *ri[] = { &r.world_size, &r.local_size, &r.hbm_bytes, &r.batch_size_per_rank, &r.dense_bytes,
                            &r.tables, &r.batch };
    const as_fint *wi[] = { &w.world_size, &w.local_size, &w.hbm_bytes, &w.batch_size_per_rank, &w.dense_bytes,
                            &w.tables, &w.batch };
    for (size_t i = 0; i < 7; i++) {
        CHECK_EQ_I64(ri[i]->has, AS_F_SET);
        CHECK_EQ_I64(ri[i]->v, wi[i]->v);
    }
    /* written again from what was read: the same bytes */
    msgpack_sbuffer sb2;
    msgpack_sbuffer_init(&sb2);
    msgpack_packer_init(&pk, &sb2, msgpack_sbuffer_write);
    as_mcfgrec_pack(&pk, &r);
    CHECK(sb2.size == sb.size && !memcmp(sb2.data, sb.data, sb.size));
    msgpack_sbuffer_destroy(&sb2);
    as_mcfgrec_free(&r);
    CHECK(r.name.s == NULL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(mcfgrec_hostile_fields_as_they_stand)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 7);
    as_pack_kv_str(&pk, "kind", "model-config");
    as_pack_kv_str(&pk, "world_size", "16");            /* wrong type */
    as_pack_kv_f64(&pk, "local_size", 8.0);             /* a float is no integer */
    as_pack_str(&pk, "hbm_bytes");
    msgpack_pack_uint64(&pk, UINT64_MAX);               /* beyond int64 */
    as_pack_kv_i64(&pk, "batch_size_per_rank", -4);     /* out of range: for the reader */
    as_pack_str(&pk, "dense_bytes");
    msgpack_pack_nil(&pk);
    as_pack_kv_i64(&pk, "optimizer", 3);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    as_mcfgrec r;
    as_mcfgrec_read(&up.data, &r);
    CHECK_EQ_I64(r.world_size.has, AS_F_OTHER);
    CHECK_EQ_I64(r.world_size.v, 0);
    CHECK_EQ_I64(r.local_size.has, AS_F_OTHER);
    CHECK_EQ_I64(r.hbm_bytes.has, AS_F_OTHER);
    CHECK_EQ_I64(r.batch_size_per_rank.has, AS_F_SET);
    CHECK_EQ_I64(r.batch_size_per_rank.v, -4);
    CHECK_EQ_I64(r.dense_bytes.has, AS_F_NIL);
    CHECK_EQ_I64(r.optimizer.has, AS_F_OTHER);
    CHECK(r.optimizer.s == NULL);
    CHECK_EQ_I64(r.pipeline.has, AS_F_ABSENT);
    CHECK_EQ_I64(r.module_path.has, AS_F_ABSENT);
    as_mcfgrec_free(&r);
    /* truncated: refused by the unpacker before any reader */
    msgpack_unpacked_destroy(&up);
    msgpack_unpacked_init(&up);
    off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size - 2, &off) != MSGPACK_UNPACK_SUCCESS);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    /* another kind */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    as_pack_kv_str(&pk, "kind", "model-configs");
    msgpack_unpacked_init(&up);
    off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK(!as_mcfgrec_is(&up.data));
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}
