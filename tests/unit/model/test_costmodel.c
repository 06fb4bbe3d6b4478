/* test_costmodel.c - the cost model (lib/model/costmodel.h): save/load round trip, refusal of
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
    as_costfit_opts o = { .epochs = epochs, .lr = 3e-3, .batch = 64, .seed = seed };
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
    as_costfit_opts o = { .epochs = 5, .lr = 1e-3, .batch = 64, .clip = 1.0, .seed = 5 };
    char e2[256];
    CHECK(as_costmodel_train(m, &s.d, NULL, K, &o, e2, sizeof e2) == 0);
    CHECK_EQ_I64(as_costmodel_cmeta(m)->nlosses, 65);
    as_costmodel_free(m);
    as_costmodel_free(m2);
    as_costmodel_free(m3);
}

/* early stopping (as-costfit --steps auto): a validation set the training data contradicts
   (its costs another shard's) stops the run by the patience rule and the model keeps the
   parameters of the lowest validation loss; a consistent one runs to the step limit */
TEST(costmodel_early_stopping_keeps_best)
{
    static synth s;
    mk_synth(&s);
    enum { NTR = 200 };
    int64_t tr[NTR], va[K - NTR];
    for (int k = 0; k < NTR; k++) tr[k] = k;
    for (int k = NTR; k < K; k++) {
        va[k - NTR] = k;
        s.cost[k] = s.cost[NTR + (k - NTR + 37) % (K - NTR)];   /* another shard's cost */
    }
    as_costmodel *m = as_costmodel_new(32, 16, 16, 3);
    as_costmodel_fit_stats(m, &s.d, tr, NTR, 0);
    as_costfit_stop st;
    as_costfit_opts o = { .steps = 5000, .lr = 3e-3, .batch = 64, .seed = 3, .val = va, .nval = K - NTR, .eval_every = 10,
                          .patience = 50, .min_steps = 30, .stop = &st };
    char err[256];
    CHECK(as_costmodel_train(m, &s.d, tr, NTR, &o, err, sizeof err) == 0);
    CHECK(st.early == 1);
    CHECK(st.ran < 5000 && st.ran >= 30 && st.ran % 10 == 0);
    const int64_t wait = st.best_step / 2 > 50 ? st.best_step / 2 : 50;
    CHECK(st.ran - st.best_step >= wait && st.ran - st.best_step < wait + 10);
    CHECK_EQ_I64(st.evals, st.ran / 10);
    CHECK_EQ_I64(as_costmodel_cmeta(m)->steps, st.ran);
    CHECK(isfinite(st.first_loss) && st.best_loss <= st.first_loss);
    CHECK(as_costmodel_loss_grad(m, &s.d, va, K - NTR, NULL) == st.best_loss);
    as_costmodel_free(m);

    /* the training shards as their own validation: the loss falls to the limit */
    m = as_costmodel_new(32, 16, 16, 3);
    as_costmodel_fit_stats(m, &s.d, tr, NTR, 0);
    o = (as_costfit_opts){ .steps = 200, .lr = 3e-3, .batch = 64, .seed = 3, .val = tr, .nval = NTR, .eval_every = 10,
                           .patience = 1000, .min_steps = 30, .stop = &st };
    CHECK(as_costmodel_train(m, &s.d, tr, NTR, &o, err, sizeof err) == 0);
    CHECK(st.early == 0 && st.ran == 200 && st.evals == 20);
    CHECK(st.best_step > 100 && st.best_loss < st.first_loss / 4);
    CHECK(as_costmodel_loss_grad(m, &s.d, tr, NTR, NULL) == st.best_loss);
    /* 200 shards in batches of at most 64: 4 steps an epoch */
    CHECK_EQ_I64(as_costmodel_cmeta(m)->epochs, 50);
    as_costmodel_free(m);
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

/* copy the model record of src to dst with one key's value replaced by `pack`, or the key
 * left out when pack is NULL */
static void rewrite(const char *src, const char *dst, const char *key, void (*pack)(msgpack_packer *))
{
    as_reader *r = as_reader_open(src);
    as_writer *w = as_writer_open(dst, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_record rec;
    int rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (!as_rec_is(&rec, "model")) continue;
        msgpack_packer *pk = as_writer_pk(w);
        uint32_t n = 0;
        for (uint32_t i = 0; i < rec.obj.via.map.size; i++) n += pack || !as_obj_streq(&rec.obj.via.map.ptr[i].key, key);
        msgpack_pack_map(pk, n);
        for (uint32_t i = 0; i < rec.obj.via.map.size; i++) {
            msgpack_object_kv *kv = &rec.obj.via.map.ptr[i];
            const int hit = as_obj_streq(&kv->key, key);
            if (hit && !pack) continue;
            msgpack_pack_object(pk, kv->key);
            if (hit) pack(pk);
            else msgpack_pack_object(pk, kv->val);
        }
        as_writer_end_record(w);
    }
    CHECK_EQ_I64(rc, 0);
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

/* ---- output forms, never-negative predictions, the held-out record ----------------------- */

TEST(costmodel_metrics_by_hand)
{
    /* errors .5, 0, -1, 1: MAE .625, MSE 2.25/4, MAPE (.5 + 0 + 1/3 + 1/4)/4, R^2 1 - 2.25/5 */
    double y[4] = { 1, 2, 3, 4 }, p[4] = { 1.5, 2, 2, 5 };
    as_costmodel_metrics a = as_costmodel_metrics_of(y, p, NULL, 4);
    CHECK_EQ_I64(a.n, 4);
    CHECK_NEAR(a.mae, 0.625, 1e-12);
    CHECK_NEAR(a.mse, 0.5625, 1e-12);
    CHECK_NEAR(a.mape, 100 * (0.5 + 1.0 / 3 + 0.25) / 4, 1e-10);
    CHECK_NEAR(a.r2, 0.55, 1e-12);
    /* masked: shards 0, 1, 3; mean y 7/3, SST 14/3, SSE 1.25 */
    char mask[4] = { 1, 1, 0, 1 };
    as_costmodel_metrics b = as_costmodel_metrics_of(y, p, mask, 4);
    CHECK_EQ_I64(b.n, 3);
    CHECK_NEAR(b.mae, 0.5, 1e-12);
    CHECK_NEAR(b.mse, 1.25 / 3, 1e-12);
    CHECK_NEAR(b.mape, 25, 1e-10);
    CHECK_NEAR(b.r2, 1 - 1.25 / (14.0 / 3), 1e-12);
    /* undefined: nothing selected; constant measurements (R^2); all zero (MAPE) */
    char none[4] = { 0 };
    as_costmodel_metrics c = as_costmodel_metrics_of(y, p, none, 4);
    CHECK(c.n == 0 && isnan(c.mae) && isnan(c.mse) && isnan(c.mape) && isnan(c.r2));
    double yc[2] = { 2, 2 }, pc[2] = { 1, 3 }, z[2] = { 0, 0 };
    as_costmodel_metrics e = as_costmodel_metrics_of(yc, pc, NULL, 2);
    CHECK(isnan(e.r2) && e.mae == 1 && e.mape == 50);
    CHECK(isnan(as_costmodel_metrics_of(z, pc, NULL, 2).mape));
}

TEST(costmodel_output_function_by_hand)
{
    as_costmodel *m = as_costmodel_new(4, 3, 2, 1);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->y_scale = 2;
    CHECK_STR(as_costmodel_output_name(in->output), "linear");   /* a fresh model's default */
    CHECK_NEAR(as_costmodel_out(m, 0.75), 1.5, 1e-15);
    double neg = as_costmodel_out(m, -0.5);
    CHECK(neg == 0 && !signbit(neg));   /* clamped, and +0: never printed as "-0.0000" */
    CHECK(as_costmodel_out(m, NAN) == 0);
    in->output = AS_CM_OUT_SOFTPLUS;     /* 2 * ln(1 + e^(20 z)) / 20 */
    CHECK_NEAR(as_costmodel_out(m, 0.1), 2 * 2.1269280110429727 / 20, 1e-12);
    CHECK_NEAR(as_costmodel_out(m, -1), 2 * 2.061153620314381e-9 / 20, 1e-20);
    CHECK_NEAR(as_costmodel_out(m, 3), 6, 1e-12);
    CHECK(as_costmodel_out(m, -1e6) >= 0);
    in->output = AS_CM_OUT_LOG;          /* 2 e^z */
    CHECK_NEAR(as_costmodel_out(m, log(3.0)), 6, 1e-12);
    CHECK_NEAR(as_costmodel_out(m, -2), 2 * exp(-2.0), 1e-15);
    CHECK(isfinite(as_costmodel_out(m, 1e4)) && as_costmodel_out(m, 1e4) == 2 * exp(AS_COSTMODEL_MAX_LOG));
    CHECK_EQ_I64(as_costmodel_output_parse("softplus"), AS_CM_OUT_SOFTPLUS);
    CHECK_EQ_I64(as_costmodel_output_parse("log"), AS_CM_OUT_LOG);
    CHECK_EQ_I64(as_costmodel_output_parse("linear"), AS_CM_OUT_LINEAR);
    CHECK_EQ_I64(as_costmodel_output_parse("relu"), -1);
    as_costmodel_free(m);
}

/* per form: the loss is what the header says (recomputed from the raw outputs z), predict ==
 * head(sum of reps) == head_post(head_pre(sum)) == out(z), and predictions are >= 0 */
TEST(costmodel_forms_loss_predict_head)
{
    static synth s;
    mk_synth(&s);
    for (int o = 0; o < AS_CM_OUT_COUNT; o++) {
        as_costmodel *m = as_costmodel_new(16, 8, 8, 7);
        as_costmodel_info *in = as_costmodel_meta(m);
        in->output = o;
        as_costmodel_fit_stats(m, &s.d, NULL, K, 0);
        /* geometric mean for log, arithmetic mean otherwise */
        double sl = 0, sa = 0;
        for (int k = 0; k < K; k++) { sl += log(s.cost[k]); sa += s.cost[k]; }
        CHECK_NEAR(in->y_scale, o == AS_CM_OUT_LOG ? exp(sl / K) : sa / K, 1e-12 * in->y_scale);
        /* push some raw outputs below 0: b4 (the last parameter) down */
        int64_t np;
        float *P = as_costmodel_params(m, &np);
        P[np - 1] -= 0.3f;
        double z[K], pred[K], want = 0;
        as_costmodel_z_batch(m, &s.d, NULL, K, z);
        as_costmodel_predict_batch(m, &s.d, NULL, K, pred);
        int nneg = 0, bad = 0;
        for (int k = 0; k < K; k++) {
            nneg += z[k] < 0;
            double ys = in->y_scale, t = s.cost[k] / ys, v;
            if (o == AS_CM_OUT_LOG) v = z[k] - log(t);
            else if (o == AS_CM_OUT_SOFTPLUS) v = log1p(exp(20 * z[k])) / 20 - t;
            else v = z[k] - t;   /* linear trains on the raw output */
            want += v * v / K;
            bad += !(pred[k] >= 0) || fabs(pred[k] - as_costmodel_out(m, z[k])) > 1e-12 * (pred[k] + 1);
        }
        CHECK(nneg > 0);
        CHECK_EQ_I64(bad, 0);
        double loss = as_costmodel_loss_grad(m, &s.d, NULL, K, NULL);
        CHECK_NEAR(loss, want, 1e-5 * want);
        for (int k = 0; k < K; k += 37) {
            const as_features *f[5];
            float sum[8] = { 0 }, e[8], pre[8];
            int n = (int)(s.off[k + 1] - s.off[k]);
            for (int j = 0; j < n; j++) {
                f[j] = &s.tab[s.idx[s.off[k] + j]];
                as_costmodel_embed(m, f[j], e);
                for (int q = 0; q < 8; q++) sum[q] += e[q];
            }
            double a = as_costmodel_predict(m, f, n), h = as_costmodel_head(m, sum);
            as_costmodel_head_pre(m, sum, pre);
            double hp = as_costmodel_head_post(m, pre);
            CHECK_NEAR(a, h, 1e-5 * (a + 1e-3));
            CHECK_NEAR(h, hp, 1e-5 * (h + 1e-3));
            CHECK(a >= 0 && h >= 0 && hp >= 0);
        }
        as_costmodel_free(m);
    }
}

/* softplus and log train as well as the legacy form on the synthetic problem */
TEST(costmodel_forms_train)
{
    static synth s;
    mk_synth(&s);
    for (int o = AS_CM_OUT_SOFTPLUS; o <= AS_CM_OUT_LOG; o++) {
        as_costmodel *m = as_costmodel_new(32, 16, 16, 5);
        as_costmodel_meta(m)->output = o;
        as_costmodel_fit_stats(m, &s.d, NULL, K, 0);
        as_costfit_opts op = { .epochs = 60, .lr = 3e-3, .batch = 64, .seed = 5 };
        char err[256];
        CHECK(as_costmodel_train(m, &s.d, NULL, K, &op, err, sizeof err) == 0);
        const as_costmodel_info *in = as_costmodel_cmeta(m);
        CHECK(in->losses[in->nlosses - 1] < in->losses[0] / 10);
        double pred[K], e = 0, tot = 0;
        as_costmodel_predict_batch(m, &s.d, NULL, K, pred);
        for (int k = 0; k < K; k++) { e += fabs(pred[k] - s.cost[k]); tot += s.cost[k]; }
        if (!(e / tot < 0.15)) fprintf(stderr, "  %s: relative error %.3f\n", as_costmodel_output_name(o), e / tot);
        CHECK(e / tot < 0.15);
        as_costmodel_free(m);
    }
}

static void pack_relu(msgpack_packer *pk) { as_pack_str(pk, "relu"); }
static void pack_bad_heldout(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    as_pack_kv_str(pk, "split", "shards");
}

TEST(costmodel_output_and_heldout_roundtrip)
{
    static synth s;
    mk_synth(&s);
    as_costmodel *m = trained(&s, 2, 2);
    as_costmodel_info *in = as_costmodel_meta(m);
    in->output = AS_CM_OUT_LOG;
    as_costmodel_heldout *h = &in->heldout;
    h->present = 1;
    snprintf(h->split, sizeof h->split, "tables");
    h->test_shards = 17;
    h->model = (as_costmodel_metrics){ 17, 0.25, 0.125, 12.5, 0.875 };
    h->linear = (as_costmodel_metrics){ 17, 0.5, 0.375, 40, NAN };
    h->sum_single = (as_costmodel_metrics){ 0, NAN, NAN, NAN, NAN };
    h->coverage = 0;
    const char *path = tmp("ho.ast");
    save(m, path);
    as_costmodel *l;
    char err[512];
    CHECK(as_costmodel_load(&l, path, err, sizeof err) == 0);
    if (!l) { fprintf(stderr, "  %s\n", err); return; }
    const as_costmodel_info *li = as_costmodel_cmeta(l);
    CHECK_EQ_I64(li->output, AS_CM_OUT_LOG);
    CHECK(li->heldout.present);
    CHECK_STR(li->heldout.split, "tables");
    CHECK_EQ_I64(li->heldout.test_shards, 17);
    CHECK(li->heldout.model.n == 17 && li->heldout.model.mae == 0.25 && li->heldout.model.r2 == 0.875);
    CHECK(li->heldout.linear.mape == 40 && isnan(li->heldout.linear.r2));
    CHECK(li->heldout.sum_single.n == 0 && isnan(li->heldout.sum_single.mae) && li->heldout.coverage == 0);
    double a[K], b[K];
    as_costmodel_predict_batch(m, &s.d, NULL, K, a);
    as_costmodel_predict_batch(l, &s.d, NULL, K, b);
    CHECK(!memcmp(a, b, sizeof a));
    as_costmodel_free(l);
    /* no held-out evaluation: nil, loads as not present */
    h->present = 0;
    save(m, path);
    CHECK(as_costmodel_load(&l, path, err, sizeof err) == 0);
    if (l) CHECK(!as_costmodel_cmeta(l)->heldout.present);
    as_costmodel_free(l);
    /* an older model without `output` (and without `heldout`) is the linear form */
    const char *old = tmp("old.ast"), *old2 = tmp("old2.ast");
    rewrite(path, old2, "output", NULL);
    rewrite(old2, old, "heldout", NULL);
    CHECK(as_costmodel_load(&l, old, err, sizeof err) == 0);
    if (l) CHECK_EQ_I64(as_costmodel_cmeta(l)->output, AS_CM_OUT_LINEAR);
    as_costmodel_free(l);
    /* an unknown form and a malformed heldout are refused */
    const char *bad = tmp("bad.ast");
    rewrite(path, bad, "output", pack_relu);
    CHECK(as_costmodel_load(&l, bad, err, sizeof err) == -1);
    CHECK(strstr(err, "unknown output form 'relu'") != NULL);
    rewrite(path, bad, "heldout", pack_bad_heldout);
    CHECK(as_costmodel_load(&l, bad, err, sizeof err) == -1);
    CHECK(strstr(err, "heldout") != NULL);
    as_costmodel_free(m);
}

/* a legacy (linear) model whose raw output is below 0 for every shard predicts 0, through
 * every path (single, batch, head, head_post), and its loss still sees the raw output */
TEST(costmodel_legacy_negative_clamped)
{
    static synth s;
    mk_synth(&s);
    as_costmodel *m = trained(&s, 3, 1);
    int64_t np;
    float *P = as_costmodel_params(m, &np);
    P[np - 1] = -1e4f;   /* b4 */
    CHECK_EQ_I64(as_costmodel_cmeta(m)->output, AS_CM_OUT_LINEAR);
    double z[K], pred[K];
    as_costmodel_z_batch(m, &s.d, NULL, K, z);
    as_costmodel_predict_batch(m, &s.d, NULL, K, pred);
    int bad = 0;
    for (int k = 0; k < K; k++) bad += !(z[k] < 0) || pred[k] != 0 || signbit(pred[k]);
    CHECK_EQ_I64(bad, 0);
    const as_features *f[2] = { &s.tab[0], &s.tab[1] };
    float e[16], sum[16] = { 0 }, pre[16];
    for (int j = 0; j < 2; j++) {
        as_costmodel_embed(m, f[j], e);
        for (int q = 0; q < 16; q++) sum[q] += e[q];
    }
    as_costmodel_head_pre(m, sum, pre);
    CHECK(as_costmodel_predict(m, f, 2) == 0 && as_costmodel_head(m, sum) == 0 && as_costmodel_head_post(m, pre) == 0);
    /* the loss: mean of (z - cost / y_scale)^2, about (1e4)^2 */
    CHECK(as_costmodel_loss_grad(m, &s.d, NULL, K, NULL) > 0.9e8);
    as_costmodel_free(m);
}

/* ---- dropped features (AutoShard's feature ablations) --------------------------------------- */

static void pack_drop_num(msgpack_packer *pk) { msgpack_pack_int(pk, 3); }
static void pack_drop_bad(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 2);
    as_pack_str(pk, "pooling");
    as_pack_str(pk, "hash");
}
static void pack_drop_int(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 2);
}
static void pack_drop_long(msgpack_packer *pk)
{
    msgpack_pack_array(pk, AS_NFEATURES + 1);
    for (int i = 0; i <= AS_NFEATURES; i++) as_pack_str(pk, "dim");
}

TEST(costmodel_dropped_features)
{
    uint32_t mask;
    char err[512];
    CHECK_EQ_I64(as_costmodel_drop_parse("pooling,distribution", &mask, err, sizeof err), 0);
    CHECK_EQ_I64(mask, (1u << 2) | (((1u << 17) - 1) << 4));
    CHECK_EQ_I64(as_costmodel_drop_parse("dim,bin3", &mask, err, sizeof err), 0);
    CHECK_EQ_I64(mask, 1u | (1u << 7));
    CHECK_EQ_I64(as_costmodel_drop_parse("pooling,hash", &mask, err, sizeof err), -1);
    CHECK(strstr(err, "'hash'") != NULL);
    CHECK_EQ_I64(as_costmodel_drop_parse("size,", &mask, err, sizeof err), 0);
    CHECK_EQ_I64(mask, 1u << 3);
    CHECK_EQ_I64(as_costmodel_drop_parse(",", &mask, err, sizeof err), -1);

    /* a model without pooling: the feature is 0, the prediction does not depend on it */
    static synth s;
    mk_synth(&s);
    as_costmodel *m = as_costmodel_new(32, 16, 16, 5);
    as_costmodel_meta(m)->drop = 1u << 2;
    as_costmodel_fit_stats(m, &s.d, NULL, K, 0);
    double v[AS_NFEATURES];
    as_features f = s.tab[0];
    as_costmodel_table_vector(m, &f, v);
    CHECK(v[2] == 0 && v[0] != 0);
    float r1[16], r2[16];
    as_costmodel_embed(m, &f, r1);
    f.pooling *= 7;
    as_costmodel_embed(m, &f, r2);
    CHECK(!memcmp(r1, r2, sizeof r1));
    f.dim *= 2;
    as_costmodel_embed(m, &f, r2);
    CHECK(memcmp(r1, r2, sizeof r1) != 0);
    /* recorded and read back */
    const char *good = tmp("drop.ast");
    save(m, good);
    as_costmodel *l = NULL;
    CHECK(as_costmodel_load(&l, good, err, sizeof err) == 0);
    if (l) CHECK_EQ_I64(as_costmodel_cmeta(l)->drop, 1u << 2);
    as_costmodel_free(l);
    /* hostile: not a list, an unknown name, a number, too long */
    void (*bad[4])(msgpack_packer *) = { pack_drop_num, pack_drop_bad, pack_drop_int, pack_drop_long };
    for (int i = 0; i < 4; i++) {
        const char *b = tmp("dropbad.ast");
        rewrite(good, b, "dropped_features", bad[i]);
        l = NULL;
        CHECK(as_costmodel_load(&l, b, err, sizeof err) == -1 && l == NULL);
        CHECK(strstr(err, "dropped_features") != NULL);
    }
    /* the memo gives the model's own numbers */
    as_embed_memo *mm = as_embed_memo_new(m, 4);
    float r3[16];
    for (int rep = 0; rep < 3; rep++)
        for (int t = 0; t < NT; t++) {
            as_costmodel_embed(m, &s.tab[t], r1);
            as_embed_memo_get(mm, &s.tab[t], r3);
            CHECK(!memcmp(r1, r3, sizeof r1));
        }
    int64_t hits, misses;
    as_embed_memo_stats(mm, &hits, &misses);
    CHECK_EQ_I64(hits + misses, 3 * NT);
    CHECK(hits > 0);
    as_embed_memo_free(mm);
    as_costmodel_free(m);
}
