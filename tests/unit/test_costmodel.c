/* test_costmodel.c - the cost model (lib/costmodel.h): save/load round trip, refusal of
 * truncated, other-version and other-feature-order model files, training on a small
 * synthetic problem (loss falls, deterministic for a seed). Dimension letters: T tables,
 * K shards. */
#include "common.h"
#include "costmodel.h"
#include "stream.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NT = 24, K = 300 };

typedef struct {
    as_features tab[NT];
    int64_t off[K + 1], idx[K * 5];
    double cost[K];
    as_costset d;
} synth;

/* tables of varied dim/rows/pooling; shards of 1..5 tables; cost = sum 0.002 dim pooling + 0.05 */
static void mk_synth(synth *s)
{
    uint64_t st = 99;
    for (int i = 0; i < NT; i++) {
        as_features *f = &s->tab[i];
        memset(f, 0, sizeof *f);
        f->id = i;
        f->dim = 16 * (1 + (int64_t)(as_splitmix64(&st) % 8));
        f->rows = 1000 + (int64_t)(as_splitmix64(&st) % 100000);
        f->pooling = 1 + (double)(as_splitmix64(&st) % 40);
        f->size_gib = (double)f->rows * f->dim * 2 / 1073741824.0;
        f->bins[0] = 0.5;
        f->bins[1 + i % 10] = 0.5;
    }
    s->off[0] = 0;
    for (int k = 0; k < K; k++) {
        int n = 1 + (int)(as_splitmix64(&st) % 5);
        double c = 0.05;
        for (int j = 0; j < n; j++) {
            int t = (int)(as_splitmix64(&st) % NT);
            s->idx[s->off[k] + j] = t;
            c += 0.002 * (double)s->tab[t].dim * s->tab[t].pooling;
        }
        s->off[k + 1] = s->off[k] + n;
        s->cost[k] = c;
    }
    s->d = (as_costset){ s->tab, NT, s->off, s->idx, s->cost, K };
}

static void save(const as_costmodel *m, const char *path)
{
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costmodel_write(m, w);
    as_writer_close(w);
}

static const char *tmp(const char *name)
{
    static char buf[16][512];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", ut_tmpdir(), name);
    return buf[k];
}

static as_costmodel *trained(synth *s, uint64_t seed, int epochs)
{
    as_costmodel *m = as_costmodel_new(32, 16, 16, seed);
    as_costmodel_fit_stats(m, &s->d, NULL, K, 0);
    as_costfit_opts o = { epochs, 0, 3e-3, 64, 0, seed, NULL, NULL, NULL };
    char err[256];
    CHECK(as_costmodel_train(m, &s->d, NULL, K, &o, err, sizeof err) == 0);
    return m;
}

TEST(costmodel_train_reduces_loss_deterministic)
{
    static synth s;
    mk_synth(&s);
    as_costmodel *m = trained(&s, 5, 60), *m2 = trained(&s, 5, 60), *m3 = trained(&s, 6, 60);
    const as_costmodel_info *in = as_costmodel_cmeta(m);
    CHECK_EQ_I64(in->nlosses, 60);
    CHECK_EQ_I64(in->steps, 60 * ((K + 63) / 64));
    CHECK(in->losses[in->nlosses - 1] < in->losses[0] / 10);
    int64_t np, np2, np3;
    float *p = as_costmodel_params(m, &np), *p2 = as_costmodel_params(m2, &np2), *p3 = as_costmodel_params(m3, &np3);
    CHECK(np == np2 && !memcmp(p, p2, (size_t)np * sizeof *p));
    CHECK(memcmp(p, p3, (size_t)np * sizeof *p) != 0);
    /* predictions are close to the truth on the training shards */
    double pred[K], err = 0, tot = 0;
    as_costmodel_predict_batch(m, &s.d, NULL, K, pred);
    for (int k = 0; k < K; k++) { err += fabs(pred[k] - s.cost[k]); tot += s.cost[k]; }
    CHECK(err / tot < 0.15);
    /* single and batch predictions agree; an empty shard costs 0 */
    const as_features *f[5];
    for (int64_t j = s.off[7]; j < s.off[8]; j++) f[j - s.off[7]] = &s.tab[s.idx[j]];
    CHECK_NEAR(as_costmodel_predict(m, f, (int)(s.off[8] - s.off[7])), pred[7], 1e-6 * fabs(pred[7]) + 1e-9);
    CHECK_NEAR(as_costmodel_predict(m, f, 0), 0, 0);
    /* continued training (as --init) keeps going from the weights and appends losses */
    as_costfit_opts o = { 5, 0, 1e-3, 64, 1.0, 5, NULL, NULL, NULL };
    char e2[256];
    CHECK(as_costmodel_train(m, &s.d, NULL, K, &o, e2, sizeof e2) == 0);
    CHECK_EQ_I64(as_costmodel_cmeta(m)->nlosses, 65);
    as_costmodel_free(m);
    as_costmodel_free(m2);
    as_costmodel_free(m3);
}

TEST(costmodel_save_load_roundtrip)
{
    static synth s;
    mk_synth(&s);
    as_costmodel *m = trained(&s, 1, 3);
    snprintf(as_costmodel_meta(m)->cost_device, 256, "cpu: test");
    const char *path = tmp("m.ast");
    save(m, path);
    as_costmodel *l;
    char err[512];
    CHECK(as_costmodel_load(&l, path, err, sizeof err) == 0);
    if (!l) { fprintf(stderr, "  %s\n", err); return; }
    double a[K], b[K];
    as_costmodel_predict_batch(m, &s.d, NULL, K, a);
    as_costmodel_predict_batch(l, &s.d, NULL, K, b);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK_STR(as_costmodel_device(l), "cpu: test");
    const as_costmodel_info *x = as_costmodel_cmeta(m), *y = as_costmodel_cmeta(l);
    CHECK(!memcmp(x->mean, y->mean, sizeof x->mean) && !memcmp(x->std, y->std, sizeof x->std));
    CHECK_EQ_I64(x->steps, y->steps);
    CHECK_EQ_I64(y->nlosses, 3);
    CHECK(y->h1 == 32 && y->h2 == 16 && y->h3 == 16);
    as_costmodel_free(l);
    as_costmodel_free(m);
}

/* copy the model record of src to dst with one key's value replaced by `pack` */
static void rewrite(const char *src, const char *dst, const char *key, void (*pack)(msgpack_packer *))
{
    as_reader *r = as_reader_open(src);
    as_writer *w = as_writer_open(dst, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_record rec;
    while (as_reader_next_or_die(r, &rec) == 1) {
        if (!as_rec_is(&rec, "model")) continue;
        msgpack_packer *pk = as_writer_pk(w);
        msgpack_pack_map(pk, rec.obj.via.map.size);
        for (uint32_t i = 0; i < rec.obj.via.map.size; i++) {
            msgpack_object_kv *kv = &rec.obj.via.map.ptr[i];
            msgpack_pack_object(pk, kv->key);
            if (as_obj_streq(&kv->key, key)) pack(pk);
            else msgpack_pack_object(pk, kv->val);
        }
        as_writer_end_record(w);
    }
    as_reader_close(r);
    as_writer_close(w);
}

static void pack_v2(msgpack_packer *pk) { msgpack_pack_int(pk, 2); }
static void pack_order(msgpack_packer *pk)
{
    msgpack_pack_array(pk, AS_NFEATURES);
    as_pack_str(pk, "rows");   /* swapped */
    as_pack_str(pk, "dim");
    for (int i = 2; i < AS_NFEATURES; i++) as_pack_str(pk, as_costmodel_feature_name(i));
}
static void pack_layers(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 5);
    int v[5] = { 21, 32, 16, 17, 1 };
    for (int i = 0; i < 5; i++) msgpack_pack_int(pk, v[i]);
}

TEST(costmodel_bad_files)
{
    static synth s;
    mk_synth(&s);
    as_costmodel *m = trained(&s, 1, 1), *l = NULL;
    const char *good = tmp("good.ast");
    save(m, good);
    char err[512];
    /* it loads */
    CHECK(as_costmodel_load(&l, good, err, sizeof err) == 0);
    as_costmodel_free(l);
    /* a truncated file */
    FILE *f = fopen(good, "rb");
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *cut = tmp("cut.ast");
    f = fopen(cut, "wb");
    fwrite(buf, 1, n / 2, f);
    fclose(f);
    CHECK(as_costmodel_load(&l, cut, err, sizeof err) == -1 && l == NULL);
    CHECK(strstr(err, "cut.ast") != NULL);
    /* another version */
    const char *v2 = tmp("v2.ast");
    rewrite(good, v2, "format_version", pack_v2);
    CHECK(as_costmodel_load(&l, v2, err, sizeof err) == -1);
    CHECK(strstr(err, "version 2") != NULL);
    /* another feature order */
    const char *fo = tmp("fo.ast");
    rewrite(good, fo, "features", pack_order);
    CHECK(as_costmodel_load(&l, fo, err, sizeof err) == -1);
    CHECK(strstr(err, "feature order") != NULL);
    /* sizes that do not match the parameter count */
    const char *ly = tmp("ly.ast");
    rewrite(good, ly, "layers", pack_layers);
    CHECK(as_costmodel_load(&l, ly, err, sizeof err) == -1);
    CHECK(strstr(err, "nparams") != NULL);
    /* a stream without a model, and a missing file */
    const char *nm = tmp("nm.ast");
    as_writer *w = as_writer_open(nm, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_writer_close(w);
    CHECK(as_costmodel_load(&l, nm, err, sizeof err) == -1);
    CHECK(strstr(err, "no `model` record") != NULL);
    CHECK(as_costmodel_load(&l, tmp("absent.ast"), err, sizeof err) == -1);
    as_costmodel_free(m);
}
