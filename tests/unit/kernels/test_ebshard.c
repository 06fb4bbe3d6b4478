/* test_ebshard.c - the op's weight types and optimizers (lib/kernels/ebshard.h): their names
 * both ways, element sizes, optimizer state sizes, and Adam's bias corrections and the range
 * checks of as_eb_opt_prepare, with values worked out by hand. */
#include "unit.h"

#include "ebshard.h"

#include <math.h>
#include <string.h>

TEST(ebshard_names_round_trip)
{
    static const char *const dt[] = { "fp16", "fp32", "bf16" };
    static const char *const op[] = { "sgd", "exact_rowwise_adagrad", "adam" };
    for (int i = 0; i < AS_EB_NDTYPE; i++) {
        as_eb_dtype d = (as_eb_dtype)-1;
        CHECK_EQ_I64(as_eb_dtype_parse(dt[i], &d), 0);
        CHECK_EQ_I64(d, i);
        CHECK_STR(as_eb_dtype_name(d), dt[i]);
    }
    for (int i = 0; i < AS_EB_NOPTIM; i++) {
        as_eb_optim o = (as_eb_optim)-1;
        CHECK_EQ_I64(as_eb_optim_parse(op[i], &o), 0);
        CHECK_EQ_I64(o, i);
        CHECK_STR(as_eb_optim_name(o), op[i]);
    }
    CHECK_EQ_I64(AS_EB_F16, 0);
    CHECK_EQ_I64(AS_EB_ROWWISE_ADAGRAD, 1);
    /* TorchRec's other spelling of Adagrad reads as the exact one; its name stays the exact one */
    as_eb_optim o = AS_EB_SGD;
    CHECK_EQ_I64(as_eb_optim_parse("rowwise_adagrad", &o), 0);
    CHECK_EQ_I64(o, AS_EB_ROWWISE_ADAGRAD);
    CHECK_STR(as_eb_optim_name(o), "exact_rowwise_adagrad");
}

TEST(ebshard_names_unknown)
{
    as_eb_dtype d = AS_EB_BF16;
    as_eb_optim o = AS_EB_ADAM;
    /* unknown, case or prefix differences, empty and NULL: -1, the output untouched */
    const char *bad[] = { "fp8", "FP16", "fp1", "fp166", "", "int8" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK_EQ_I64(as_eb_dtype_parse(bad[i], &d), -1);
    CHECK_EQ_I64(as_eb_dtype_parse(NULL, &d), -1);
    CHECK_EQ_I64(d, AS_EB_BF16);
    const char *badopt[] = { "Adam", "adagrad", "rowwise", "sgd ", "" };
    for (size_t i = 0; i < sizeof badopt / sizeof *badopt; i++) CHECK_EQ_I64(as_eb_optim_parse(badopt[i], &o), -1);
    CHECK_EQ_I64(as_eb_optim_parse(NULL, &o), -1);
    CHECK_EQ_I64(o, AS_EB_ADAM);
    /* names of values out of range */
    CHECK_STR(as_eb_dtype_name(AS_EB_NDTYPE), "?");
    CHECK_STR(as_eb_dtype_name((as_eb_dtype)-1), "?");
    CHECK_STR(as_eb_optim_name(AS_EB_NOPTIM), "?");
    CHECK_STR(as_eb_optim_name((as_eb_optim)-1), "?");
}

/* fp32 takes two 2-byte units, fp16 and bf16 one; state: SGD none, row-wise Adagrad one
 * float a row (E), Adam two a weight (2 E D) */
TEST(ebshard_sizes)
{
    CHECK_EQ_I64(as_eb_dtype_units(AS_EB_F16), 1);
    CHECK_EQ_I64(as_eb_dtype_units(AS_EB_F32), 2);
    CHECK_EQ_I64(as_eb_dtype_units(AS_EB_BF16), 1);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_SGD, 1000, 64), 0);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ROWWISE_ADAGRAD, 1000, 64), 1000);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ADAM, 1000, 64), 128000);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ADAM, 3, 5), 30);
    /* large tables: no 32-bit overflow (2 x 3e9 x 128) */
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ADAM, 3000000000LL, 128), 768000000000LL);
    CHECK_EQ_I64(as_eb_opt_state(AS_EB_ROWWISE_ADAGRAD, 3000000000LL, 128), 3000000000LL);
}

/* Adam's corrections: c1 = 1 - beta1^t, c2 = 1 - beta2^t; betas 0.5, 0.75 at step 2: 0.75,
 * 0.4375 (exact in binary); at step 1: 0.5, 0.25. Other optimizers: 1, 1. */
TEST(ebshard_opt_prepare_adam)
{
    char err[256] = "";
    as_eb_opt o = { .kind = AS_EB_ADAM, .lr = 0.01f, .eps = 1e-8f, .beta1 = 0.5f, .beta2 = 0.75f, .step = 2 };
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
    CHECK(o.c1 == 0.75f);
    CHECK(o.c2 == 0.4375f);
    o.step = 1;
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
    CHECK(o.c1 == 0.5f);
    CHECK(o.c2 == 0.25f);
    /* PyTorch's defaults at step 10: 1 - 0.9^10, 1 - 0.999^10 (float rounding of a pow) */
    o.beta1 = 0.9f;
    o.beta2 = 0.999f;
    o.step = 10;
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
    CHECK_NEAR(o.c1, 1 - pow(0.9, 10), 1e-6);
    CHECK_NEAR(o.c2, 1 - pow(0.999, 10), 1e-6);
    /* beta 0: no correction needed, c = 1 */
    o.beta1 = 0;
    o.beta2 = 0;
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
    CHECK(o.c1 == 1.0f && o.c2 == 1.0f);
    /* SGD and Adagrad: both 1, whatever was there before; their betas and step are not looked at */
    as_eb_opt s = { .kind = AS_EB_SGD, .lr = 0.1f, .beta1 = 7, .step = -3, .c1 = 9, .c2 = 9 };
    CHECK_EQ_I64(as_eb_opt_prepare(&s, err, sizeof err), 0);
    CHECK(s.c1 == 1.0f && s.c2 == 1.0f);
    as_eb_opt a = { .kind = AS_EB_ROWWISE_ADAGRAD, .lr = 0, .eps = 0, .beta2 = 2, .c1 = 5, .c2 = 5 };
    CHECK_EQ_I64(as_eb_opt_prepare(&a, err, sizeof err), 0);
    CHECK(a.c1 == 1.0f && a.c2 == 1.0f);
}

/* a bad constant: -1 with a message naming it */
static void bad(as_eb_opt o, const char *want)
{
    char err[256] = "";
    if (!CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), -1)) return;
    if (!CHECK(strstr(err, want) != NULL)) fprintf(stderr, "    err: %s (want %s)\n", err, want);
}

TEST(ebshard_opt_prepare_errors)
{
    const as_eb_opt ok = { .kind = AS_EB_ADAM, .lr = 0.01f, .eps = 1e-8f, .beta1 = 0.9f, .beta2 = 0.999f, .step = 1 };
    as_eb_opt o = ok;
    o.kind = AS_EB_NOPTIM;
    bad(o, "unknown optimizer 3");
    o.kind = (as_eb_optim)-1;
    bad(o, "unknown optimizer -1");
    o = ok, o.lr = -0.5f;
    bad(o, "learning rate -0.5 is not finite and >= 0");
    o = ok, o.lr = NAN;
    bad(o, "learning rate");
    o = ok, o.lr = INFINITY;
    bad(o, "learning rate inf");
    o = ok, o.eps = -1e-3f;
    bad(o, "eps -0.001 is not finite and >= 0");
    o = ok, o.eps = NAN;
    bad(o, "eps");
    o = ok, o.beta1 = 1;
    bad(o, "Adam's betas 1, 0.999");
    o = ok, o.beta2 = -0.25f;
    bad(o, "Adam's betas 0.9, -0.25 are not in [0, 1)");
    o = ok, o.beta1 = NAN;
    bad(o, "Adam's betas");
    o = ok, o.step = 0;
    bad(o, "Adam's step 0 is not >= 1");
    /* the eps rule is Adagrad's too, not SGD's */
    as_eb_opt a = { .kind = AS_EB_ROWWISE_ADAGRAD, .lr = 0.1f, .eps = -1 };
    bad(a, "eps -1");
    as_eb_opt s = { .kind = AS_EB_SGD, .lr = 0.1f, .eps = -1 };
    char err[64];
    CHECK_EQ_I64(as_eb_opt_prepare(&s, err, sizeof err), 0);
    /* the boundaries: lr 0, eps 0 and beta 0 are allowed */
    o = ok, o.lr = 0, o.eps = 0, o.beta1 = 0;
    CHECK_EQ_I64(as_eb_opt_prepare(&o, err, sizeof err), 0);
}
