/* fixtures.c - test support: hand-made records; see fixtures.h. */
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "tasks.h"

as_array tsup_array(const void *v, int64_t n, as_dtype dt)
{
    as_array a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.ndim = 1;
    a.shape[0] = n;
    a.n = n;
    a.data = v;
    a.nbytes = (size_t)n * as_dtype_size(dt);
    return a;
}

as_features tsup_features(int64_t id, int64_t dim, int64_t rows, double pooling, int64_t batch, int64_t lookups)
{
    as_features f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.dim = dim;
    f.rows = rows;
    f.pooling = pooling;
    f.batch = batch;
    f.lookups = lookups;
    f.bytes_fp16 = rows * dim * 2;
    f.bytes_fp32 = rows * dim * 4;
    f.size_gib = (double)f.bytes_fp16 / (1 << 30);
    return f;
}

as_features tsup_random_features(as_rng *r, int64_t id)
{
    const double pooling = 30 * as_rng_uniform(r);
    const int64_t rows = 1 + (int64_t)as_rng_below(r, 2000000);
    const int64_t dim = 16 << as_rng_below(r, 3);
    as_features f = tsup_features(id, dim, rows, pooling, 0, 0);
    double left = 1;
    for (int k = 0; k < AS_NBINS; k++) { f.bins[k] = left * as_rng_uniform(r) * 0.5; left -= f.bins[k]; }
    return f;
}

int tsup_plan_input(as_plan_input *in, const char *path, const as_features *f, int n, int64_t K, char *err,
                    size_t errlen)
{
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    int64_t *tables = malloc((size_t)(n ? n : 1) * sizeof *tables);
    for (int i = 0; i < n; i++) {
        as_features_write(w, &f[i]);
        tables[i] = f[i].id;
    }
    as_task_cfg tc;
    memset(&tc, 0, sizeof tc);
    tc.unseen_ratio = -1;
    as_task t = { 5, 1, tables, n, K, 0, 0 };
    as_task_write(w, &tc, &t);
    as_writer_close(w);
    free(tables);
    char *files[] = { (char *)path };
    return as_plan_input_read(in, files, 1, NULL, NULL, err, errlen);
}

static void toy_embed(void *ctx, const as_features *f, float *out)
{
    (void)ctx;
    out[0] = (float)(f->dim * f->pooling);
}

static double toy_head(void *ctx, const float *s)
{
    (void)ctx;
    return s[0];
}

const as_plan_model tsup_toy_model = { NULL, 1, toy_embed, toy_head, 0, NULL, NULL };

void tsup_put_cost(as_writer *w, const tsup_cost *c)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 2 + (c->pieces != NULL) + c->has_cost + c->has_rel_std + c->has_error + c->has_device);
    as_pack_kv_str(pk, "kind", "cost");
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)c->n);
    for (int i = 0; i < c->n; i++) msgpack_pack_int64(pk, c->ids[i]);
    if (c->pieces) {
        as_pack_str(pk, "pieces");
        as_pack_pieces(pk, c->pieces, c->n);
    }
    if (c->has_cost) {
        as_pack_str(pk, "cost_ms");
        if (isnan(c->cost)) msgpack_pack_nil(pk);
        else msgpack_pack_double(pk, c->cost);
    }
    if (c->has_rel_std) as_pack_kv_f64(pk, "rel_std", c->rel_std);
    if (c->has_error) {
        as_pack_str(pk, "error");
        if (c->error) as_pack_str(pk, c->error);
        else msgpack_pack_nil(pk);
    }
    if (c->has_device) as_pack_kv_str(pk, "device", c->device);
    as_writer_end_record(w);
}

void tsup_put_plan2(as_writer *w, const tsup_plan2 *p)
{
    const int dev = p->device && *p->device;
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 6 + (p->seed >= 0) + !!p->split + (p->cost_kind ? 2 : 0) + dev);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", p->task);
    as_pack_kv_str(pk, "alg", p->alg);
    as_pack_kv_i64(pk, "shards", 2);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 7); msgpack_pack_int(pk, 8);
    as_pack_str(pk, "assign");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 0); msgpack_pack_int(pk, 1);
    if (p->seed >= 0) as_pack_kv_i64(pk, "seed", p->seed);
    if (p->split) as_pack_kv_str(pk, "split", p->split);
    if (p->cost_kind) {
        as_pack_str(pk, "cost_ms");
        msgpack_pack_array(pk, (uint32_t)p->ncost);
        if (p->ncost > 0) msgpack_pack_double(pk, p->c0);
        if (p->ncost > 1) msgpack_pack_double(pk, p->c1);
        as_pack_kv_str(pk, "cost_kind", p->cost_kind);
    }
    if (dev) as_pack_kv_str(pk, "cost_device", p->device);
    as_writer_end_record(w);
}
