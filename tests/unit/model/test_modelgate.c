/* test_modelgate.c - the quality gate on the cost model (lib/model/modelgate.h): held-out metrics
 * judged against the threshold and the linear baseline (below either, both, neither, at the
 * threshold, unknown, the gate off), the words as-plan says of each, the `model_quality`
 * field packed and read back, and hostile values refused naming the field. */
#include "unit.h"

#include "modelgate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* a held-out evaluation with the model's and the linear baseline's R² (NaN: undefined) */
static as_costmodel_heldout HO(double r2, double linear_r2)
{
    as_costmodel_heldout h;
    memset(&h, 0, sizeof h);
    h.present = 1;
    snprintf(h.split, sizeof h.split, "shards");
    h.test_shards = 100;
    h.model = (as_costmodel_metrics){ 100, 0.1, 0.02, 9.0, r2 };
    h.linear = (as_costmodel_metrics){ 100, 0.2, 0.05, 20.0, linear_r2 };
    h.sum_single = (as_costmodel_metrics){ 0, NAN, NAN, NAN, NAN };
    h.coverage = NAN;
    return h;
}

TEST(modelgate_judge)
{
    as_mgate g;
    as_costmodel_heldout h = HO(0.41, 0.3);
    /* below the threshold only */
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(g.judged && g.weak);
    CHECK_NEAR(g.r2, 0.41, 0);
    CHECK_NEAR(g.linear_r2, 0.3, 0);
    CHECK_NEAR(g.min_r2, 0.9, 0);
    /* at or above the threshold and the line: not weak */
    h = HO(0.9, 0.85);
    as_mgate_judge(&g, &h, 0.9);
    CHECK(g.judged && !g.weak);
    h = HO(0.97, 0.869);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(g.judged && !g.weak);
    /* above the threshold but below the linear baseline: weak */
    h = HO(0.93, 0.95);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(g.judged && g.weak);
    /* a lower threshold passes a model the default fails */
    h = HO(0.85, 0.6);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(g.weak);
    as_mgate_judge(&g, &h, 0.8);
    CHECK(g.judged && !g.weak);
    /* a baseline of undefined R²: the threshold alone */
    h = HO(0.95, NAN);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(g.judged && !g.weak && isnan(g.linear_r2));
    /* unknown: no held-out split, none given, an undefined R² */
    h.present = 0;
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(!g.judged && !g.weak && isnan(g.r2) && isnan(g.linear_r2) && g.min_r2 == 0.9);
    as_mgate_judge(&g, NULL, AS_MGATE_MIN_R2);
    CHECK(!g.judged && isnan(g.r2));
    h = HO(NAN, 0.5);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK(!g.judged && isnan(g.r2) && g.linear_r2 == 0.5);
    /* the gate off: nothing judged, the figures kept */
    h = HO(-0.64, 0.87);
    as_mgate_judge(&g, &h, NAN);
    CHECK(!g.judged && !g.weak && g.r2 == -0.64 && g.linear_r2 == 0.87 && isnan(g.min_r2));
}

TEST(modelgate_words)
{
    as_mgate g;
    char buf[512];
    as_costmodel_heldout h = HO(0.41, 0.3);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "model.ast", &g), 1);
    CHECK_STR(buf, "model.ast: the cost model's held-out R² is 0.410, below 0.9 (--min-model-r2): plans made with it rest on "
                   "a weak model");
    h = HO(-0.64, 0.87);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 1);
    CHECK_STR(buf, "m.ast: the cost model's held-out R² is -0.640, below 0.9 (--min-model-r2) and below the linear baseline's "
                   "0.870: plans made with it rest on a weak model");
    h = HO(0.93, 0.95);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 1);
    CHECK_STR(buf, "m.ast: the cost model's held-out R² is 0.930, below the linear baseline's 0.950 (a straight line predicts "
                   "the held-out shards better): plans made with it rest on a weak model");
    /* three decimals would round 0.8996 up to the threshold: more digits */
    h = HO(0.8996, 0.5);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 1);
    CHECK(strstr(buf, "R² is 0.8996, below 0.9") != NULL);
    /* unknown quality */
    h.present = 0;
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 1);
    CHECK(strstr(buf, "m.ast: the cost model's held-out quality is unknown (it carries no held-out R²") == buf);
    CHECK(strstr(buf, "plans made with it rest on an unchecked model") != NULL);
    /* nothing to say: a good model, the gate off */
    h = HO(0.97, 0.869);
    as_mgate_judge(&g, &h, AS_MGATE_MIN_R2);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 0);
    CHECK_STR(buf, "");
    h = HO(-0.64, 0.87);
    as_mgate_judge(&g, &h, NAN);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 0);
    h.present = 0;
    as_mgate_judge(&g, &h, NAN);
    CHECK_EQ_I64(as_mgate_words(buf, sizeof buf, "m.ast", &g), 0);
}

/* ---- the field ---------------------------------------------------------------------------- */

typedef void (*valfn)(msgpack_packer *);

/* o = the value packed by val, read by as_mgate_read; its return */
static int read_val(valfn val, as_mgate *g, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    val(&pk);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = -2;
    err[0] = 0;
    if (msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS) rc = as_mgate_read(&up.data, g, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* as_mgate_pack's key and value, the value read back */
static as_mgate packed;
static void v_packed(msgpack_packer *pk)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer p2;
    msgpack_packer_init(&p2, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&p2, 1);
    as_mgate_pack(&p2, &packed);
    /* the map's one value, re-packed on its own */
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    if (msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS && up.data.type == MSGPACK_OBJECT_MAP &&
        up.data.via.map.size == 1) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[0];
        CHECK(kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 13 && !memcmp(kv->key.via.str.ptr, "model_quality", 13));
        msgpack_pack_object(pk, kv->val);
    } else {
        CHECK(0);
        msgpack_pack_nil(pk);
    }
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

TEST(modelgate_pack_read)
{
    static const double cases[][3] = {   /* r2, linear_r2, min_r2 (NaN: nil) */
        { 0.41, 0.3, 0.9 }, { 0.97, 0.869, 0.9 }, { 0.93, 0.95, 0.9 }, { 0.95, NAN, 0.9 }, { NAN, NAN, 0.9 },
        { -0.64, 0.87, NAN }, { NAN, NAN, NAN }, { 1, 1, 1 }, { 0, -3, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        as_costmodel_heldout h = HO(cases[i][0], cases[i][1]);
        as_mgate_judge(&packed, &h, cases[i][2]);
        as_mgate g;
        char err[256];
        int rc = read_val(v_packed, &g, err, sizeof err);
        if (!CHECK_EQ_I64(rc, 0)) fprintf(stderr, "    case %zu: %s\n", i, err);
        CHECK_EQ_I64(g.judged, packed.judged);
        CHECK_EQ_I64(g.weak, packed.weak);
        CHECK((isnan(g.r2) && isnan(packed.r2)) || g.r2 == packed.r2);
        CHECK((isnan(g.linear_r2) && isnan(packed.linear_r2)) || g.linear_r2 == packed.linear_r2);
        CHECK((isnan(g.min_r2) && isnan(packed.min_r2)) || g.min_r2 == packed.min_r2);
    }
}

static void pk_s(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

#define V(name, ...) static void name(msgpack_packer *pk) { __VA_ARGS__; }
/* a map of r2, linear_r2, min_r2 (numbers) and weak (as given) */
#define MQ(name, r2, lin, min, weak) \
    V(name, msgpack_pack_map(pk, 4); pk_s(pk, "r2"); r2; pk_s(pk, "linear_r2"); lin; pk_s(pk, "min_r2"); min; \
      pk_s(pk, "weak"); weak)
#define D(x) msgpack_pack_double(pk, x)
#define NIL msgpack_pack_nil(pk)
#define T msgpack_pack_true(pk)
#define F msgpack_pack_false(pk)

MQ(h_ok_int, msgpack_pack_int(pk, 1), D(0.5), msgpack_pack_int(pk, 0), F)   /* integers are numbers */
V(h_empty, msgpack_pack_map(pk, 0))                                         /* nothing: not judged */
V(h_extra, msgpack_pack_map(pk, 5); pk_s(pk, "r2"); D(0.5); pk_s(pk, "linear_r2"); NIL; pk_s(pk, "min_r2"); D(0.9);
  pk_s(pk, "weak"); T; pk_s(pk, "note"); pk_s(pk, "x"))                     /* an unknown key is ignored */
V(h_array, msgpack_pack_array(pk, 0))
V(h_true, T)
MQ(h_r2_str, pk_s(pk, "0.5"), D(0.5), D(0.9), T)
MQ(h_r2_big, D(1.5), D(0.5), D(0.9), F)
MQ(h_r2_nan, D(NAN), D(0.5), D(0.9), NIL)
MQ(h_r2_inf, D(-INFINITY), D(0.5), D(0.9), T)
MQ(h_lin_bool, D(0.5), T, D(0.9), T)
MQ(h_lin_big, D(0.5), D(2), D(0.9), T)
MQ(h_min_neg, D(0.5), D(0.4), D(-0.1), F)
MQ(h_min_big, D(0.5), D(0.4), D(1.1), T)
MQ(h_min_str, D(0.5), D(0.4), pk_s(pk, "0.9"), T)
MQ(h_weak_str, D(0.5), D(0.4), D(0.9), pk_s(pk, "yes"))
MQ(h_weak_int, D(0.5), D(0.4), D(0.9), msgpack_pack_int(pk, 1))
MQ(h_weak_lie, D(0.5), D(0.4), D(0.9), F)     /* 0.5 < 0.9: weak */
MQ(h_weak_lie2, D(0.95), D(0.4), D(0.9), T)   /* above both: not weak */
MQ(h_weak_lie3, D(0.93), D(0.95), D(0.9), F)  /* below the line: weak */
MQ(h_weak_nil, D(0.5), D(0.4), D(0.9), NIL)   /* judgeable, not judged */
MQ(h_weak_unk, NIL, D(0.4), D(0.9), F)        /* unknown R², judged */
MQ(h_weak_off, D(0.5), D(0.4), NIL, T)        /* the gate off, judged */

TEST(modelgate_read_hostile)
{
    as_mgate g;
    char err[256];
    CHECK_EQ_I64(read_val(h_ok_int, &g, err, sizeof err), 0);
    CHECK(g.judged && !g.weak && g.r2 == 1 && g.min_r2 == 0);
    CHECK_EQ_I64(read_val(h_empty, &g, err, sizeof err), 0);
    CHECK(!g.judged && isnan(g.r2) && isnan(g.linear_r2) && isnan(g.min_r2));
    CHECK_EQ_I64(read_val(h_extra, &g, err, sizeof err), 0);
    CHECK(g.judged && g.weak && isnan(g.linear_r2));
    static const struct {
        valfn val;
        const char *want;
    } bad[] = {
        { h_array, "'model_quality' is not a map of r2, linear_r2, min_r2 and weak" },
        { h_true, "'model_quality' is not a map" },
        { h_r2_str, "model_quality.r2 is not an R² (a finite number <= 1) or nil" },
        { h_r2_big, "model_quality.r2 is not an R²" },
        { h_r2_nan, "model_quality.r2 is not an R²" },
        { h_r2_inf, "model_quality.r2 is not an R²" },
        { h_lin_bool, "model_quality.linear_r2 is not an R²" },
        { h_lin_big, "model_quality.linear_r2 is not an R²" },
        { h_min_neg, "model_quality.min_r2 is not a threshold in 0..1 or nil" },
        { h_min_big, "model_quality.min_r2 is not a threshold" },
        { h_min_str, "model_quality.min_r2 is not a threshold" },
        { h_weak_str, "model_quality.weak is not true, false or nil" },
        { h_weak_int, "model_quality.weak is not true, false or nil" },
        { h_weak_lie, "model_quality.weak is false, which its r2, linear_r2 and min_r2 do not say" },
        { h_weak_lie2, "model_quality.weak is true, which" },
        { h_weak_lie3, "model_quality.weak is false, which" },
        { h_weak_nil, "model_quality.weak is nil, which" },
        { h_weak_unk, "model_quality.weak is false, which" },
        { h_weak_off, "model_quality.weak is true, which" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = read_val(bad[i].val, &g, err, sizeof err);
        CHECK_EQ_I64(rc, -1);
        if (!CHECK(strstr(err, bad[i].want) != NULL)) fprintf(stderr, "    case %zu: err \"%s\", want \"%s\"\n", i, err, bad[i].want);
    }
}
