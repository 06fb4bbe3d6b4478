/* costrec.c - the `cost` record's writer and reader; see costrec.h.
 * Dimension letters: T table entries, P passes. */
#include "costrec.h"

#include "common.h"
#include "msgobj.h"
#include "reclimits.h"
#include "stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIND "cost"

int as_costrec_is(const msgpack_object *rec)
{
    return as_obj_streq(as_obj_get(rec, "kind"), KIND);
}

/* ---- the writer ---------------------------------------------------------------------------- */

static void pack_num(msgpack_packer *pk, const char *key, const as_fnum *f)
{
    as_pack_str(pk, key);
    if (f->has == AS_F_SET) msgpack_pack_double(pk, f->v);
    else msgpack_pack_nil(pk);
}

static void pack_bool(msgpack_packer *pk, const char *key, const as_fint *f)
{
    as_pack_str(pk, key);
    if (f->v) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
}

/* a string, or nil where it is not SET */
static void pack_str_nil(msgpack_packer *pk, const char *key, const as_fstr *f)
{
    as_pack_str(pk, key);
    if (f->has == AS_F_SET && f->s) as_pack_str(pk, f->s);
    else msgpack_pack_nil(pk);
}

/* the measurement's fields, cost_ms to error */
static void pack_figures(msgpack_packer *pk, const as_costrec *c)
{
    pack_num(pk, "cost_ms", &c->cost_ms);
    pack_num(pk, "fwd_ms", &c->fwd_ms);
    pack_num(pk, "bwd_ms", &c->bwd_ms);
    pack_num(pk, "median_ms", &c->median_ms);
    pack_num(pk, "min_ms", &c->min_ms);
    pack_num(pk, "max_ms", &c->max_ms);
    pack_num(pk, "rel_std", &c->rel_std);
    pack_num(pk, "gbps", &c->gbps);
    pack_num(pk, "spread", &c->spread);
    as_pack_kv_i64(pk, "attempts", c->attempts.v);
    as_pack_kv_i64(pk, "passes", c->passes.v);
    as_pack_kv_i64(pk, "together", c->together.v);
    pack_num(pk, "drift", &c->drift);
    pack_bool(pk, "noisy", &c->noisy);
    pack_bool(pk, "drift_refused", &c->drift_refused);
    as_pack_str(pk, "pass_ms");
    if (c->pass_has == AS_F_SET) {
        msgpack_pack_array(pk, (size_t)c->npass);
        for (int64_t i = 0; i < c->npass; i++)
            if (isfinite(c->pass_ms[i])) msgpack_pack_double(pk, c->pass_ms[i]); else msgpack_pack_nil(pk);
    } else msgpack_pack_nil(pk);
    pack_num(pk, "pass_spread", &c->pass_spread);
    as_pack_kv_i64(pk, "lookups", c->lookups.v);
    as_pack_str(pk, "row_cap");
    if (c->row_cap.has == AS_F_SET) msgpack_pack_int64(pk, c->row_cap.v); else msgpack_pack_nil(pk);
    as_pack_kv_i64(pk, "capped", c->capped.v);
    as_pack_kv_i64(pk, "batch", c->batch.v);
    as_pack_kv_i64(pk, "sum_dim", c->sum_dim.v);
    as_pack_kv_i64(pk, "bytes", c->bytes.v);
    as_pack_kv_str(pk, "device", c->device.s ? c->device.s : "");
    as_pack_kv_str(pk, "device_kind", c->device_kind.s ? c->device_kind.s : "");
    as_pack_kv_i64(pk, "threads", c->threads.v);
    as_pack_kv_i64(pk, "sm_clock_mhz", c->sm_clock_mhz.v);
    as_pack_str(pk, "protocol");
    msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++) msgpack_pack_int(pk, c->protocol[i]);
    pack_str_nil(pk, "error", &c->error);
}

void as_costrec_pack(msgpack_packer *pk, const as_costrec *c)
{
    const int pieces = c->pieces != NULL, trained = c->weights_type.has == AS_F_SET, ref = c->ref_has == AS_F_SET;
    msgpack_pack_map(pk, 35 + (uint32_t)pieces + 2 * (uint32_t)trained + (uint32_t)ref);
    as_pack_kv_str(pk, "kind", KIND);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)c->n);
    for (int64_t i = 0; i < c->n; i++) msgpack_pack_int64(pk, c->tables[i]);
    if (pieces) {
        as_pack_str(pk, "pieces");
        msgpack_pack_array(pk, (size_t)c->n);
        for (int64_t i = 0; i < c->n; i++) as_pack_piece(pk, &c->pieces[i]);
    }
    as_pack_kv_str(pk, "origin", c->origin.s ? c->origin.s : "");
    as_pack_kv_i64(pk, "task", c->task.v);
    pack_str_nil(pk, "alg", &c->alg);
    as_pack_kv_i64(pk, "shard", c->shard.v);
    pack_figures(pk, c);
    if (trained) {
        as_pack_kv_str(pk, "weights_type", c->weights_type.s);
        as_pack_kv_str(pk, "optimizer", c->optimizer.s ? c->optimizer.s : "");
    }
    if (ref) {
        as_pack_str(pk, "reference");
        msgpack_pack_map(pk, 2);
        as_pack_str(pk, "tables");
        msgpack_pack_array(pk, (size_t)c->nref);
        for (int64_t i = 0; i < c->nref; i++) msgpack_pack_int64(pk, c->ref_tables[i]);
        as_pack_kv_f64(pk, "level_ms", c->ref_level_ms);
    }
}

/* ---- the reader ---------------------------------------------------------------------------- */

/* pass_ms: an array of numbers and nils (NAN) */
static void read_passes(const msgpack_object *rec, as_costrec *c)
{
    const msgpack_object *o = as_obj_get(rec, "pass_ms");
    int set = o && o->type == MSGPACK_OBJECT_ARRAY;
    if (set) {
        c->npass = o->via.array.size;
        c->pass_ms = as_malloc((size_t)(c->npass ? c->npass : 1) * sizeof *c->pass_ms);
        for (int64_t i = 0; i < c->npass && set; i++)
            set = as_obj_num(&o->via.array.ptr[i], &c->pass_ms[i]) >= 0;
        if (!set) {
            free(c->pass_ms);
            c->pass_ms = NULL;
            c->npass = 0;
        }
    }
    c->pass_has = as_fhas_of(o, set);
}

static void read_protocol(const msgpack_object *rec, as_costrec *c)
{
    const msgpack_object *o = as_obj_get(rec, "protocol");
    int set = o && o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 3;
    for (int i = 0; i < 3 && set; i++) {
        const msgpack_object *e = &o->via.array.ptr[i];
        set = (e->type == MSGPACK_OBJECT_POSITIVE_INTEGER && e->via.u64 <= INT32_MAX) ||
              (e->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && e->via.i64 >= INT32_MIN);
        if (set) c->protocol[i] = (int)e->via.i64;
    }
    if (!set) memset(c->protocol, 0, sizeof c->protocol);
    c->protocol_has = as_fhas_of(o, set);
}

/* reference: {"tables": [ids], "level_ms": L} */
static void read_reference(const msgpack_object *rec, as_costrec *c)
{
    const msgpack_object *o = as_obj_get(rec, "reference");
    const msgpack_object *t = o && o->type == MSGPACK_OBJECT_MAP ? as_obj_get(o, "tables") : NULL;
    const int set = t && t->type == MSGPACK_OBJECT_ARRAY && !as_obj_f64(o, "level_ms", &c->ref_level_ms);
    if (set) {
        c->nref = t->via.array.size;
        c->ref_tables = as_malloc((size_t)(c->nref ? c->nref : 1) * sizeof *c->ref_tables);
        for (int64_t i = 0; i < c->nref; i++) {
            const msgpack_object *e = &t->via.array.ptr[i];
            c->ref_tables[i] = e->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)e->via.u64 : -1;
        }
    } else c->ref_level_ms = NAN;
    c->ref_has = as_fhas_of(o, set);
}

void as_costrec_read_fields(const msgpack_object *rec, as_costrec *c)
{
    memset(c, 0, sizeof *c);
    as_fread_str(rec, "origin", &c->origin);
    as_fread_int(rec, "task", &c->task);
    as_fread_str(rec, "alg", &c->alg);
    as_fread_int(rec, "shard", &c->shard);
    static const char *const nums[] = { "cost_ms", "fwd_ms", "bwd_ms", "median_ms", "min_ms", "max_ms", "rel_std",
                                        "gbps", "spread" };
    as_fnum *const numv[] = { &c->cost_ms, &c->fwd_ms, &c->bwd_ms, &c->median_ms, &c->min_ms, &c->max_ms,
                               &c->rel_std, &c->gbps, &c->spread };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) as_fread_num(rec, nums[i], numv[i]);
    as_fread_int(rec, "attempts", &c->attempts);
    as_fread_int(rec, "passes", &c->passes);
    as_fread_int(rec, "together", &c->together);
    as_fread_num(rec, "drift", &c->drift);
    as_fread_bool(rec, "noisy", &c->noisy);
    as_fread_bool(rec, "drift_refused", &c->drift_refused);
    read_passes(rec, c);
    as_fread_num(rec, "pass_spread", &c->pass_spread);
    static const char *const ints[] = { "lookups", "row_cap", "capped", "batch", "sum_dim", "bytes", "threads",
                                        "sm_clock_mhz" };
    as_fint *const intv[] = { &c->lookups, &c->row_cap, &c->capped, &c->batch, &c->sum_dim, &c->bytes, &c->threads,
                               &c->sm_clock_mhz };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) as_fread_int(rec, ints[i], intv[i]);
    as_fread_str(rec, "device", &c->device);
    as_fread_str(rec, "device_kind", &c->device_kind);
    read_protocol(rec, c);
    as_fread_str(rec, "error", &c->error);
    as_fread_str(rec, "weights_type", &c->weights_type);
    as_fread_str(rec, "optimizer", &c->optimizer);
    read_reference(rec, c);
}

/* the measured cost: 0 none (an `error`, or `cost_ms` absent or nil), 1 with *ms, -1 with
 * err for a cost_ms that is not a finite number above 0 */
static int measured(const msgpack_object *rec, double *ms, char *err, size_t errlen)
{
    const msgpack_object *e = as_obj_get(rec, "error"), *cm = as_obj_get(rec, "cost_ms");
    if ((e && e->type != MSGPACK_OBJECT_NIL) || !cm || cm->type == MSGPACK_OBJECT_NIL) return 0;
    if (as_field_f64(rec, "cost_ms", -INFINITY, INFINITY, ms, err, errlen)) return -1;
    if (!(*ms > 0)) {
        snprintf(err, errlen, "'cost_ms' = %g is not a positive cost", *ms);
        return -1;
    }
    return 1;
}

int as_costrec_read(const msgpack_object *rec, as_costrec *c, char *err, size_t errlen)
{
    as_costrec_read_fields(rec, c);
    double ms = NAN;
    int k = -1;
    if (!as_field_table_ids(rec, "tables", &c->tables, &c->n, err, errlen) &&
        !as_field_pieces(rec, "pieces", c->n, &c->pieces, err, errlen))
        k = measured(rec, &ms, err, errlen);
    if (k < 0) {
        as_costrec_free(c);
        return -1;
    }
    c->measured = k;
    if (k) c->cost_ms.v = ms;
    return 0;
}

void as_costrec_free(as_costrec *c)
{
    if (!c) return;
    free(c->tables);
    free(c->pieces);
    free(c->pass_ms);
    free(c->ref_tables);
    as_fstr *s[] = { &c->origin, &c->alg, &c->device, &c->device_kind, &c->error, &c->weights_type, &c->optimizer };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) as_fstr_free(s[i]);
    memset(c, 0, sizeof *c);
}
