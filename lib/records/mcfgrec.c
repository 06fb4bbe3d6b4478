/* mcfgrec.c - the `model-config` record's writer and reader; see mcfgrec.h. */
#include "mcfgrec.h"

#include "msgobj.h"
#include "stream.h"

#include <string.h>

#define KIND "model-config"

int as_mcfgrec_is(const msgpack_object *rec)
{
    return as_obj_streq(as_obj_get(rec, "kind"), KIND);
}

static const char *str_of(const as_fstr *f) { return f->s ? f->s : ""; }

void as_mcfgrec_pack(msgpack_packer *pk, const as_mcfgrec *c)
{
    msgpack_pack_map(pk, 13);
    as_pack_kv_str(pk, "kind", KIND);
    as_pack_kv_str(pk, "name", str_of(&c->name));
    as_pack_kv_str(pk, "source", str_of(&c->source));
    as_pack_kv_str(pk, "module_path", str_of(&c->module_path));
    as_pack_kv_i64(pk, "world_size", c->world_size.v);
    as_pack_kv_i64(pk, "local_size", c->local_size.v);
    as_pack_kv_i64(pk, "hbm_bytes", c->hbm_bytes.v);
    as_pack_kv_i64(pk, "batch_size_per_rank", c->batch_size_per_rank.v);
    as_pack_kv_str(pk, "optimizer", str_of(&c->optimizer));
    as_pack_kv_str(pk, "pipeline", str_of(&c->pipeline));
    as_pack_kv_i64(pk, "dense_bytes", c->dense_bytes.v);
    as_pack_kv_i64(pk, "tables", c->tables.v);
    as_pack_kv_i64(pk, "batch", c->batch.v);
}

void as_mcfgrec_read(const msgpack_object *rec, as_mcfgrec *c)
{
    memset(c, 0, sizeof *c);
    as_fread_str(rec, "name", &c->name);
    as_fread_str(rec, "source", &c->source);
    as_fread_str(rec, "module_path", &c->module_path);
    as_fread_int(rec, "world_size", &c->world_size);
    as_fread_int(rec, "local_size", &c->local_size);
    as_fread_int(rec, "hbm_bytes", &c->hbm_bytes);
    as_fread_int(rec, "batch_size_per_rank", &c->batch_size_per_rank);
    as_fread_str(rec, "optimizer", &c->optimizer);
    as_fread_str(rec, "pipeline", &c->pipeline);
    as_fread_int(rec, "dense_bytes", &c->dense_bytes);
    as_fread_int(rec, "tables", &c->tables);
    as_fread_int(rec, "batch", &c->batch);
}

void as_mcfgrec_free(as_mcfgrec *c)
{
    if (!c) return;
    as_fstr *s[] = { &c->name, &c->source, &c->module_path, &c->optimizer, &c->pipeline };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) as_fstr_free(s[i]);
    memset(c, 0, sizeof *c);
}
