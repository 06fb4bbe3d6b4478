/* objective.c - the planners' one objective; see objective.h */
#include "objective.h"
#include "pins.h"
#include "common.h"
#include "reclimits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void as_obj_init(as_objective *o, const as_plan_cfg *c, const as_features *const *t, int64_t n)
{
    memset(o, 0, sizeof *o);
    const int64_t K = c->shards;
    const size_t n1 = (size_t)(n ? n : 1), K1 = (size_t)(K ? K : 1);
    if (c->model) as_plan_items_init(&o->it, c->model, t, n, NULL, NULL);
    o->n = n, o->K = K, o->W = c->model ? o->it.W : 0, o->R = c->model ? o->it.R : 0;
    o->cm = c->comm_model && c->comm_model->ab ? *c->comm_model : as_comm_bandwidth(c->comm_gbps);
    o->scale = c->shard_scale;
    o->type = as_malloc(n1 * sizeof *o->type);
    o->bin = as_malloc(n1 * sizeof *o->bin);
    o->bout = as_malloc(n1 * sizeof *o->bout);
    o->arb = as_malloc(n1 * sizeof *o->arb);
    o->own_ms = as_malloc(n1 * sizeof *o->own_ms);
    o->where = as_malloc(n1 * sizeof *o->where);
    as_comm_types(t, n, o->type);
    /* TorchRec's table_row_wise blocks (pins.h): their own sharding type, under a model of hosts */
    o->local = as_comm_local(&o->cm);
    if (o->local > 0) {
        int64_t *pin = as_malloc(n1 * sizeof *pin);
        unsigned char *tw = as_malloc(n1);
        as_plan_pins_hosts(t, n, K, o->local, NULL, pin, tw);
        for (int64_t i = 0; i < n; i++) if (tw[i]) o->type[i] = AS_SH_TWRW;
        free(pin);
        free(tw);
    }
    for (int64_t i = 0; i < n; i++) {
        as_comm_bytes(t[i], &o->bin[i], &o->bout[i]);
        o->arb[i] = as_plan_dp_comm_bytes(t[i], K);
        o->own_ms[i] = as_comm_item_ms(&o->cm, K, o->type[i], o->bin[i], o->bout[i]);
        o->where[i] = -1;
    }
    o->S = as_calloc(K1 * (size_t)o->W, sizeof *o->S);
    o->cnt = as_calloc(K1, sizeof *o->cnt);
    o->kcache = as_calloc(K1, sizeof *o->kcache);
    o->kfresh = as_calloc(K1, sizeof *o->kfresh);
    o->own_in = as_calloc(K1 * AS_NSH, sizeof *o->own_in);
    o->own_out = as_calloc(K1 * AS_NSH, sizeof *o->own_out);
    o->D = as_calloc((size_t)o->R, sizeof *o->D);
    o->tmp = as_malloc((size_t)(o->W > o->R ? o->W : o->R ? o->R : 1) * sizeof *o->tmp);
}

void as_obj_free(as_objective *o)
{
    if (!o) return;
    as_plan_items_free(&o->it);
    free(o->type);
    free(o->bin);
    free(o->bout);
    free(o->arb);
    free(o->own_ms);
    free(o->where);
    free(o->S);
    free(o->cnt);
    free(o->kcache);
    free(o->kfresh);
    free(o->own_in);
    free(o->own_out);
    free(o->D);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

/* item i in (sign 1) or out (-1) of shard k or AS_DP */
static void move(as_objective *o, int64_t i, int64_t k, double sign)
{
    if (k == AS_DP) {
        for (int d = 0; d < o->R; d++) o->D[d] += sign * o->it.rep[(size_t)i * o->R + d];
        o->ndp += (int64_t)sign;
        o->ar += sign * o->arb[i];
        if (!o->ndp) { memset(o->D, 0, (size_t)o->R * sizeof *o->D); o->ar = 0; }   /* none: exactly nothing */
        return;
    }
    double *s = o->S + (size_t)k * o->W;
    o->cnt[k] += (int64_t)sign;
    o->kfresh[k] = 0;
    if (o->cnt[k]) for (int d = 0; d < o->W; d++) s[d] += sign * o->it.w[(size_t)i * o->W + d];
    else if (o->W) memset(s, 0, (size_t)o->W * sizeof *s);
    const as_shtype t = o->type[i];
    o->own_in[(size_t)k * AS_NSH + t] += sign * o->bin[i];
    o->own_out[(size_t)k * AS_NSH + t] += sign * o->bout[i];
    o->all_in[t] += sign * o->bin[i];
    o->all_out[t] += sign * o->bout[i];
    o->ntype[t] += (int64_t)sign;
    if (!o->ntype[t]) o->all_in[t] = o->all_out[t] = 0;
    if (!o->cnt[k])
        for (int y = 0; y < AS_NSH; y++) o->own_in[(size_t)k * AS_NSH + y] = o->own_out[(size_t)k * AS_NSH + y] = 0;
}

void as_obj_put(as_objective *o, int64_t i, int64_t k)
{
    move(o, i, k, 1);
    o->where[i] = k;
}

void as_obj_take(as_objective *o, int64_t i)
{
    if (o->where[i] == -1) return;
    move(o, i, o->where[i], -1);
    o->where[i] = -1;
}

void as_obj_load(as_objective *o, const int64_t *assign)
{
    for (int64_t i = 0; i < o->n; i++) {
        as_obj_take(o, i);
        if (assign[i] >= 0 || assign[i] == AS_DP) as_obj_put(o, i, assign[i]);
    }
}

double as_obj_kernel_vec(const as_objective *o, int64_t k, const float *v)
{
    if (!o->it.m) return 0;
    const double y = as_plan_items_cost(&o->it, v);
    return o->scale ? o->scale[k] * y : y;
}

double as_obj_kernel_with(const as_objective *o, int64_t k, int64_t add, int64_t sub)
{
    const int whole = add < 0 && sub < 0;   /* the shard as it is: its cached kernel */
    if (whole && o->kfresh[k]) return o->kcache[k];
    const int64_t c = o->cnt[k] + (add >= 0) - (sub >= 0);
    if (c <= 0) return 0;
    const int W = o->W;
    const double *s = o->S + (size_t)k * W;
    const float *a = add >= 0 ? o->it.w + (size_t)add * W : NULL, *b = sub >= 0 ? o->it.w + (size_t)sub * W : NULL;
    for (int d = 0; d < W; d++) o->tmp[d] = (float)(s[d] + (a ? a[d] : 0.0) - (b ? b[d] : 0.0));
    const double y = as_obj_kernel_vec(o, k, o->tmp);
    if (whole) {
        o->kcache[k] = y;
        o->kfresh[k] = 1;
    }
    return y;
}

double as_obj_own_ms(const as_objective *o, int64_t i)
{
    return o->own_ms[i];
}

/* the data-parallel items' kernel on every shard */
static double dp_kernel(const as_objective *o)
{
    if (!o->ndp || !o->it.m) return 0;
    for (int d = 0; d < o->R; d++) o->tmp[d] = (float)o->D[d];
    return o->it.m->head(o->it.m->ctx, o->tmp) / (double)(o->K > 0 ? o->K : 1);
}

/* shard k's communication, each type's part into parts */
static double comm_of(const as_objective *o, int64_t k, double parts[AS_NSH])
{
    as_comm_load l;
    memset(&l, 0, sizeof l);
    for (int s = 0; s < AS_NSH; s++) {
        l.has[s] = o->ntype[s] > 0;
        l.all_in[s] = o->all_in[s];
        l.all_out[s] = o->all_out[s];
        if (k >= 0) l.own_in[s] = o->own_in[(size_t)k * AS_NSH + s], l.own_out[s] = o->own_out[(size_t)k * AS_NSH + s];
    }
    l.has[AS_SH_DP] = o->ndp > 0;
    l.ar = o->ar;
    l.local = o->local;
    return as_comm_plan_shard_ms(&o->cm, o->K, &l, parts);
}

double as_obj_shared_ms(const as_objective *o)
{
    return comm_of(o, -1, NULL);
}

double as_obj_dp_ms(const as_objective *o)
{
    return dp_kernel(o);
}

double as_obj_shard(const as_objective *o, int64_t k, as_obj_cost *c)
{
    as_obj_cost v = { 0 };
    v.kernel = as_obj_kernel_with(o, k, -1, -1);
    v.dp = dp_kernel(o);
    v.total = v.kernel + v.dp + comm_of(o, k, v.comm);
    if (c) *c = v;
    return v.total;
}

double as_obj_comm(const as_objective *o, int64_t k, double parts[AS_NSH])
{
    return comm_of(o, k, parts);
}

double as_obj_max(const as_objective *o, const double *kern, int64_t *arg)
{
    double mx = 0;
    int64_t a = 0;
    const double dp = kern ? 0 : dp_kernel(o);
    for (int64_t k = 0; k < o->K; k++) {
        const double y = (kern ? kern[k] : as_obj_kernel_with(o, k, -1, -1) + dp) + comm_of(o, k, NULL);
        if (k == 0 || y > mx) { mx = y; a = k; }
    }
    if (arg) *arg = a;
    return mx;
}
