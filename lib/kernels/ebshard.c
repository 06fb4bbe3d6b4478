/* ebshard.c - the names, sizes and constants of the op's weight types and optimizers; see
 * ebshard.h */
#include "ebshard.h"

#include "errbuf.h"

#include <math.h>
#include <string.h>

static const char *const dtype_names[AS_EB_NDTYPE] = { "fp16", "fp32", "bf16" };
static const char *const optim_names[AS_EB_NOPTIM] = { "sgd", "exact_rowwise_adagrad", "adam" };

int as_eb_dtype_parse(const char *s, as_eb_dtype *d)
{
    for (int i = 0; s && i < AS_EB_NDTYPE; i++)
        if (!strcmp(s, dtype_names[i])) { *d = (as_eb_dtype)i; return 0; }
    return -1;
}

int as_eb_optim_parse(const char *s, as_eb_optim *o)
{
    if (s && !strcmp(s, "rowwise_adagrad")) { *o = AS_EB_ROWWISE_ADAGRAD; return 0; }
    for (int i = 0; s && i < AS_EB_NOPTIM; i++)
        if (!strcmp(s, optim_names[i])) { *o = (as_eb_optim)i; return 0; }
    return -1;
}

const char *as_eb_dtype_name(as_eb_dtype d) { return d >= 0 && d < AS_EB_NDTYPE ? dtype_names[d] : "?"; }
const char *as_eb_optim_name(as_eb_optim o) { return o >= 0 && o < AS_EB_NOPTIM ? optim_names[o] : "?"; }

int as_eb_dtype_units(as_eb_dtype d) { return d == AS_EB_F32 ? 2 : 1; }
int as_eb_dtype_bytes(as_eb_dtype d) { return 2 * as_eb_dtype_units(d); }

int64_t as_eb_opt_state(as_eb_optim o, int64_t E, int64_t D)
{
    return o == AS_EB_ROWWISE_ADAGRAD ? E : o == AS_EB_ADAM ? 2 * E * D : 0;
}

int as_eb_opt_prepare(as_eb_opt *o, char *err, size_t errlen)
{
    if (o->kind < 0 || o->kind >= AS_EB_NOPTIM) { as_errbuf(err, errlen, "unknown optimizer %d", (int)o->kind); return -1; }
    if (!isfinite(o->lr) || o->lr < 0) { as_errbuf(err, errlen, "learning rate %g is not finite and >= 0", (double)o->lr); return -1; }
    if (o->kind != AS_EB_SGD && (!isfinite(o->eps) || o->eps < 0)) {
        as_errbuf(err, errlen, "eps %g is not finite and >= 0", (double)o->eps);
        return -1;
    }
    o->c1 = o->c2 = 1.0f;
    if (o->kind != AS_EB_ADAM) return 0;
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1)) {
        as_errbuf(err, errlen, "Adam's betas %g, %g are not in [0, 1)", (double)o->beta1, (double)o->beta2);
        return -1;
    }
    if (o->step < 1) { as_errbuf(err, errlen, "Adam's step %lld is not >= 1", (long long)o->step); return -1; }
    o->c1 = (float)(1.0 - pow((double)o->beta1, (double)o->step));
    o->c2 = (float)(1.0 - pow((double)o->beta2, (double)o->step));
    if (!(o->c1 > 0) || !(o->c2 > 0)) {
        as_errbuf(err, errlen, "Adam's bias correction is 0 at step %lld (betas %g, %g)", (long long)o->step,
                  (double)o->beta1, (double)o->beta2);
        return -1;
    }
    return 0;
}
