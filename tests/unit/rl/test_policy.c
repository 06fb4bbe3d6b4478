/* test_policy.c - the policy network (lib/rl/policy.h): LSTM and whole-loss gradients against
 * finite differences, V-trace against a hand-computed example, episodes and masking. */
#include "unit.h"

#include "common.h"
#include "nn.h"
#include "policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_st = 777;
static float frand(void) { return (float)(2.0 * ((double)(as_splitmix64(&g_st) >> 11) * 0x1.0p-53) - 1.0); }

/* ---- LSTM: 2 rows, 6 steps, loss = sum_t w_t . h_t ---------------------------------------- */

enum { LN = 2, LI = 3, LH = 4, LT = 6 };

static double lstm_loss(const float *x, const float *Wih, const float *Whh, const float *b, const float *w,
                        const float *h0, const float *c0)
{
    float h[LT][LN * LH], c[LT][LN * LH], g[LN * 4 * LH];
    double s = 0;
    for (int t = 0; t < LT; t++) {
        as_nn_lstm_fwd(h[t], c[t], g, x + t * LN * LI, t ? h[t - 1] : h0, t ? c[t - 1] : c0, Wih, Whh, b, LN, LI, LH);
        for (int i = 0; i < LN * LH; i++) s += (double)w[t * LN * LH + i] * h[t][i];
    }
    return s;
}

TEST(nn_lstm_bptt_grad_fd)
{
    float x[LT * LN * LI], Wih[4 * LH * LI], Whh[4 * LH * LH], b[4 * LH], w[LT * LN * LH], h0[LN * LH], c0[LN * LH];
    float *all[] = { x, Wih, Whh, b, w, h0, c0 };
    int len[] = { LT * LN * LI, 4 * LH * LI, 4 * LH * LH, 4 * LH, LT * LN * LH, LN * LH, LN * LH };
    for (int a = 0; a < 7; a++) for (int i = 0; i < len[a]; i++) all[a][i] = frand();
    /* forward, keeping everything */
    float h[LT][LN * LH], c[LT][LN * LH], g[LT][LN * 4 * LH];
    for (int t = 0; t < LT; t++)
        as_nn_lstm_fwd(h[t], c[t], g[t], x + t * LN * LI, t ? h[t - 1] : h0, t ? c[t - 1] : c0, Wih, Whh, b, LN, LI, LH);
    /* backward through time */
    float dx[LT * LN * LI] = { 0 }, dWih[4 * LH * LI] = { 0 }, dWhh[4 * LH * LH] = { 0 }, db[4 * LH] = { 0 };
    float dh0[LN * LH] = { 0 }, dc0[LN * LH] = { 0 }, dhn[LN * LH] = { 0 }, dcn[LN * LH] = { 0 }, dz[LN * 4 * LH];
    for (int t = LT - 1; t >= 0; t--) {
        float dh[LN * LH], dhp[LN * LH] = { 0 }, dcp[LN * LH] = { 0 };
        for (int i = 0; i < LN * LH; i++) dh[i] = w[t * LN * LH + i] + dhn[i];
        as_nn_lstm_bwd(dx + t * LN * LI, dhp, dcp, dWih, dWhh, db, dz, dh, dcn, g[t], c[t], t ? c[t - 1] : c0,
                       x + t * LN * LI, t ? h[t - 1] : h0, Wih, Whh, LN, LI, LH);
        memcpy(dhn, dhp, sizeof dhn);
        memcpy(dcn, dcp, sizeof dcn);
    }
    memcpy(dh0, dhn, sizeof dh0);
    memcpy(dc0, dcn, sizeof dc0);
    float *grads[] = { dx, Wih /* unused */, dWhh, db, NULL, dh0, dc0 };
    grads[1] = dWih;
    int bad = 0, checked = 0;
    for (int a = 0; a < 7; a++) {
        if (a == 4) continue;
        for (int i = 0; i < len[a]; i++) {
            float keep = all[a][i];
            double eps = 1e-2;
            all[a][i] = keep + (float)eps;
            double lp = lstm_loss(x, Wih, Whh, b, w, h0, c0);
            all[a][i] = keep - (float)eps;
            double lm = lstm_loss(x, Wih, Whh, b, w, h0, c0);
            all[a][i] = keep;
            double fd = (lp - lm) / (2 * eps), an = grads[a][i];
            checked++;
            if (fabs(fd - an) > 1e-3 + 1e-2 * fabs(fd)) {
                if (bad++ < 5) fprintf(stderr, "  lstm block %d [%d]: fd %.6f analytic %.6f\n", a, i, fd, an);
            }
        }
    }
    CHECK(checked > 100);
    CHECK_EQ_I64(bad, 0);
}

/* ---- V-trace by hand ------------------------------------------------------------------------ */

TEST(vtrace_hand_example)
{
    /* rho = 2 (truncated to 1), 0.5, 1.5 (truncated), 0.8; the episode ends at step 1 and a
     * new one runs to a bootstrap value 0.6; gamma 0.9. Worked by hand:
     *   t=3: delta = .8(1 + .9*.6 - .4) = .912, vs = 1.312, adv = .912
     *   t=2: delta = 2 + .9*.4 - .2 = 2.16, acc = 2.16 + .9*.912 = 2.9808, vs = 3.1808,
     *        adv = 2 + .9*1.312 - .2 = 2.9808
     *   t=1: done: delta = .5(0 - 1) = -.5, vs = .5, adv = -.5
     *   t=0: delta = 1 + .9*1 - .5 = 1.4, acc = 1.4 + .9*(-.5) = .95, vs = 1.45,
     *        adv = 1 + .9*.5 - .5 = .95 */
    float logrho[4] = { logf(2.0f), logf(0.5f), logf(1.5f), logf(0.8f) };
    float r[4] = { 1, 0, 2, 1 }, done[4] = { 0, 1, 0, 0 }, V[4] = { 0.5f, 1.0f, 0.2f, 0.4f };
    float vs[4], adv[4];
    as_vtrace_cfg c = { 0.9f, 1.0f, 1.0f, 0.5f, 0.001f };
    as_vtrace(vs, adv, logrho, r, done, V, 0.6f, 4, &c);
    float evs[4] = { 1.45f, 0.5f, 3.1808f, 1.312f }, eadv[4] = { 0.95f, -0.5f, 2.9808f, 0.912f };
    for (int t = 0; t < 4; t++) {
        CHECK_NEAR(vs[t], evs[t], 1e-5);
        CHECK_NEAR(adv[t], eadv[t], 1e-5);
    }
    /* on-policy, gamma 1, one terminal reward: vs_t = r (a Monte-Carlo return) */
    float lr0[3] = { 0, 0, 0 }, r0[3] = { 0, 0, 0.7f }, d0[3] = { 0, 0, 1 }, V0[3] = { 0.1f, 0.3f, 0.9f };
    as_vtrace_cfg c1 = { 1, 1, 1, 0.5f, 0.001f };
    as_vtrace(vs, adv, lr0, r0, d0, V0, 5.0f, 3, &c1);
    for (int t = 0; t < 3; t++) CHECK_NEAR(vs[t], 0.7, 1e-6);
    CHECK_NEAR(adv[0], 0.7 - 0.1, 1e-6);
    CHECK_NEAR(adv[2], 0.7 - 0.9, 1e-6);
}

/* ---- a hand-made cost model: rep = [pooling, rows/1000]; cost = s0^0.9 + 0.05 s1 + 0.1 ---- */

static void hm_embed(void *ctx, const as_features *f, float *out)
{
    (void)ctx;
    out[0] = (float)f->pooling;
    out[1] = (float)f->rows / 1000.0f;
}
static double hm_head(void *ctx, const float *s)
{
    (void)ctx;
    return pow(fabs((double)s[0]), 0.9) + 0.05 * s[1] + 0.1;
}
static const as_plan_model HM = { NULL, 2, hm_embed, hm_head, 0, NULL, NULL };

static void mk_tables(as_features *f, const as_features **fp, int n, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        memset(&f[i], 0, sizeof f[i]);
        f[i].id = i;
        f[i].dim = (as_splitmix64(&st) & 1) ? 32 : 16;
        f[i].rows = 1000 + (int64_t)(as_splitmix64(&st) % 50000);
        f[i].batch = 512;
        f[i].pooling = 1.0 + (double)(as_splitmix64(&st) % 1000) / 100.0;
        f[i].bytes_fp16 = f[i].rows * f[i].dim * 2;
        f[i].size_gib = (double)f[i].bytes_fp16 / 1073741824.0;
        f[i].bins[0] = 0.5; f[i].bins[1] = 0.3; f[i].bins[2 + i % 5] = 0.2;
        fp[i] = &f[i];
    }
}

TEST(policy_loss_grad_fd_every_block)
{
    enum { N = 7, K = 3 };
    as_features f[N];
    const as_features *fp[N];
    mk_tables(f, fp, N, 5);
    as_nn_set_threads(1);   /* one BLAS thread: the same summation order in every call */
    /* seed 1: an instance without a ReLU kink within the FD step (seeds 2 and 3 have one:
     * central differences then disagree on every block upstream of it) */
    as_policy *p = as_policy_new(NULL, 1, NULL, 0);
    int64_t np;
    float *w = as_policy_params(p, &np);
    /* larger weights than the init so that every block matters in the loss */
    for (int64_t i = 0; i < np; i++) w[i] *= 1.5f;
    as_traj tr[2];
    as_traj *trp[2] = { &tr[0], &tr[1] };
    int64_t assign[N];
    char err[256];
    float fv[2][N], fa[2][N];
    for (int e = 0; e < 2; e++) {
        as_rng rng;
        as_rng_seed(&rng, 11, (uint64_t)e);
        as_rollout ro = { .cm = &HM, .t = fp, .n = N, .K = K, .rng = &rng, .tr = &tr[e], .assign = assign };
        CHECK(as_policy_rollout(p, &ro, err, sizeof err) == 0);
        CHECK_EQ_I64(tr[e].L, N);
        /* behaviour log-probs off the current policy (rho != 1) and arbitrary fixed targets */
        for (int t = 0; t < N; t++) {
            tr[e].logp[t] += 0.3f * frand();
            fv[e][t] = frand();
            fa[e][t] = frand();
        }
        tr[e].fixed_vs = fv[e];
        tr[e].fixed_adv = fa[e];
    }
    as_vtrace_cfg vc = { 1, 1, 1, 0.5f, 0.05f };
    float *g = calloc((size_t)np, sizeof *g);
    as_policy_loss_grad(p, trp, 2, &vc, g, NULL, NULL);
    int bad = 0, checked = 0;
    uint64_t st = 99;
    const char *name;
    int64_t off, len;
    for (int b = 0; (name = as_policy_block(p, b, &off, &len)); b++) {
        int nb = 0, nonzero = 0;
        for (int s = 0; s < 6; s++) {
            int64_t i = off + (int64_t)(as_splitmix64(&st) % (uint64_t)len);
            float keep = w[i];
            double eps = 1e-4;   /* small: ReLU kinks of the many head rows are near */
            w[i] = keep + (float)eps;
            double lp = as_policy_loss_grad(p, trp, 2, &vc, NULL, NULL, NULL);
            w[i] = keep - (float)eps;
            double lm = as_policy_loss_grad(p, trp, 2, &vc, NULL, NULL, NULL);
            w[i] = keep;
            double fd = (lp - lm) / (2 * eps);
            checked++;
            if (g[i] != 0) nonzero++;
            if (fabs(fd - g[i]) > 2e-3 + 2e-2 * fabs(fd)) {
                nb++;
                fprintf(stderr, "  block %s [%lld]: fd %.6f analytic %.6f\n", name, (long long)(i - off), fd, g[i]);
            }
        }
        if (nb) bad++;
        (void)nonzero;
    }
    CHECK_EQ_I64(checked, 26 * 6);
    CHECK_EQ_I64(bad, 0);
    /* every block receives some gradient */
    for (int b = 0; (name = as_policy_block(p, b, &off, &len)); b++) {
        double s = 0;
        for (int64_t i = off; i < off + len; i++) s += fabs(g[i]);
        if (!CHECK(s > 0)) fprintf(stderr, "  block %s has no gradient\n", name);
    }
    free(g);
    as_traj_free(&tr[0]);
    as_traj_free(&tr[1]);
    as_policy_free(p);
}

TEST(policy_rollout_masking_and_greedy)
{
    enum { N = 30, K = 4 };
    as_features f[N];
    const as_features *fp[N];
    mk_tables(f, fp, N, 8);
    uint64_t total = 0;
    for (int i = 0; i < N; i++) total += (uint64_t)f[i].bytes_fp16;
    as_policy *p = as_policy_new(NULL, 1, NULL, 0);
    int64_t a1[N], a2[N];
    char err[256];
    /* a cap with 20% slack: sampled plans never exceed it */
    uint64_t cap = total / K + total / 5;
    for (int e = 0; e < 20; e++) {
        as_rng rng;
        as_rng_seed(&rng, 4, (uint64_t)e);
        as_traj tr;
        as_rollout ro = { .cm = &HM, .t = fp, .n = N, .K = K, .cap = cap, .rng = &rng, .tr = &tr, .assign = a1 };
        CHECK(as_policy_rollout(p, &ro, err, sizeof err) == 0);
        uint64_t mem[K] = { 0 };
        for (int i = 0; i < N; i++) if (a1[i] >= 0) mem[a1[i]] += (uint64_t)f[i].bytes_fp16;
        for (int k = 0; k < K; k++) CHECK(mem[k] <= cap);
        if (ro.feasible) CHECK_EQ_I64(tr.L, N);
        else { CHECK(tr.L < N); CHECK(tr.reward == -1.0f); }
        as_traj_free(&tr);
    }
    /* greedy: deterministic, complete without a cap */
    as_rollout g1 = { .cm = &HM, .t = fp, .n = N, .K = K, .assign = a1 };
    as_rollout g2 = { .cm = &HM, .t = fp, .n = N, .K = K, .assign = a2 };
    CHECK(as_policy_rollout(p, &g1, err, sizeof err) == 0);
    CHECK(as_policy_rollout(p, &g2, err, sizeof err) == 0);
    CHECK(g1.feasible);
    CHECK(memcmp(a1, a2, sizeof a1) == 0);
    for (int i = 0; i < N; i++) CHECK(a1[i] >= 0 && a1[i] < K);
    /* an impossible cap: the plan reports unplaced tables, never an over-cap shard */
    as_rollout g3 = { .cm = &HM, .t = fp, .n = N, .K = K, .cap = total / (2 * K), .assign = a1 };
    CHECK(as_policy_rollout(p, &g3, err, sizeof err) == 0);
    CHECK(!g3.feasible);
    uint64_t mem[K] = { 0 };
    int unplaced = 0;
    for (int i = 0; i < N; i++) { if (a1[i] >= 0) mem[a1[i]] += (uint64_t)f[i].bytes_fp16; else unplaced++; }
    for (int k = 0; k < K; k++) CHECK(mem[k] <= total / (2 * K));
    CHECK(unplaced > 0);
    as_policy_free(p);
}

/* balance of a complete plan under the hand-made model (empty shard: cost 0) */
static double hm_balance(const as_features *const *fp, int n, int K, const int64_t *a)
{
    double mn = INFINITY, mx = 0;
    for (int k = 0; k < K; k++) {
        float s[2] = { 0, 0 };
        int cnt = 0;
        for (int i = 0; i < n; i++)
            if (a[i] == k) { float r[2]; hm_embed(NULL, fp[i], r); s[0] += r[0]; s[1] += r[1]; cnt++; }
        double c = cnt ? hm_head(NULL, s) : 0;
        if (c < mn) mn = c;
        if (c > mx) mx = c;
    }
    return mx > 0 ? mn / mx : 0;
}

TEST(policy_place_keeps_the_best_of_its_samples)
{
    enum { N = 24, K = 4 };
    as_features f[N];
    const as_features *fp[N];
    mk_tables(f, fp, N, 21);
    as_policy *p = as_policy_new(NULL, 3, NULL, 0);   /* untrained: its samples differ a lot */
    char err[256];
    int64_t g[N], a1[N], a8[N], a16[N], b16[N];
    as_rollout gr = { .cm = &HM, .t = fp, .n = N, .K = K, .assign = g };
    CHECK(as_policy_rollout(p, &gr, err, sizeof err) == 0);
    as_policy_planner pl = { p, &HM, 1, 7 };
    CHECK(as_policy_place(&pl, fp, N, K, 0, a1, err, sizeof err) == 0);
    CHECK(memcmp(a1, g, sizeof g) == 0);   /* one sample: the greedy plan */
    pl.samples = 8;
    CHECK(as_policy_place(&pl, fp, N, K, 0, a8, err, sizeof err) == 0);
    pl.samples = 16;
    CHECK(as_policy_place(&pl, fp, N, K, 0, a16, err, sizeof err) == 0);
    CHECK(as_policy_place(&pl, fp, N, K, 0, b16, err, sizeof err) == 0);
    CHECK(memcmp(a16, b16, sizeof a16) == 0);   /* seeded: the same plan again */
    for (int i = 0; i < N; i++) CHECK(a16[i] >= 0 && a16[i] < K);
    /* the candidates of 8 samples are the first of 16 (same stream), so the kept balance
     * can only grow; the untrained greedy plan is poor, so some sample beats it */
    double b1 = hm_balance(fp, N, K, a1), b8 = hm_balance(fp, N, K, a8), bb = hm_balance(fp, N, K, a16);
    CHECK_NEAR(b1, gr.pred_balance, 1e-5);
    CHECK(b8 >= b1);
    CHECK(bb >= b8);
    CHECK(bb > b1);
    /* under a cap the kept plan respects it */
    uint64_t total = 0;
    for (int i = 0; i < N; i++) total += (uint64_t)f[i].bytes_fp16;
    uint64_t cap = total / K + total / 4, mem[K] = { 0 };
    CHECK(as_policy_place(&pl, fp, N, K, cap, a16, err, sizeof err) == 0);
    for (int i = 0; i < N; i++) if (a16[i] >= 0) mem[a16[i]] += (uint64_t)f[i].bytes_fp16;
    for (int k = 0; k < K; k++) CHECK(mem[k] <= cap);
    /* auto: 102400 / (tables x (48 + shards)), 1..64 */
    CHECK_EQ_I64(as_policy_auto_samples(80, 8), 22);
    CHECK_EQ_I64(as_policy_auto_samples(160, 16), 10);
    CHECK_EQ_I64(as_policy_auto_samples(320, 32), 4);
    CHECK_EQ_I64(as_policy_auto_samples(10, 2), 64);
    CHECK_EQ_I64(as_policy_auto_samples(1, INT64_MAX), 1);
    CHECK_EQ_I64(as_policy_auto_samples(800, 80), 1);
    CHECK_EQ_I64(as_policy_auto_samples(0, 8), 1);
    CHECK_EQ_I64(as_policy_auto_samples(INT64_MAX, 3), 1);
    as_policy_free(p);
}

/* ---- sizes: every buffer follows the policy's dims (issue 23) ------------------------------ */

/* a `policy` record of dims dv (the layout of policy.h) with small random parameters, as
 * as_policy_read parses it; NULL with err when it refuses */
static as_policy *policy_of_dims_x(const int dv[10], int nextra, void (*extra)(msgpack_packer *), char *err, size_t errlen)
{
    int f = dv[0], e1 = dv[1], e2 = dv[2], sd = dv[3], h = dv[4], cd = dv[5], p1 = dv[6], p2 = dv[7], p3 = dv[8],
        vh = dv[9];
    int64_t n = (int64_t)e1 * f + e1 + (int64_t)e2 * e1 + e2 + 2 * sd + 4LL * h * (e2 + sd) + 4LL * h * h + 4LL * h +
                4LL * h * h + 4LL * h * h + 4LL * h + (int64_t)cd * AS_POLICY_NCF + cd + (int64_t)p1 * 3 * h + p1 +
                (int64_t)p2 * p1 + p2 + (int64_t)p3 * p2 + p3 + p3 + 1 + (int64_t)vh * h + vh + vh + 1;
    float *prm = malloc((size_t)n * sizeof *prm);
    for (int64_t i = 0; i < n; i++) prm[i] = 0.2f * frand();
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, (size_t)(11 + nextra));
    as_pack_kv_str(&pk, "kind", "policy");
    as_pack_kv_str(&pk, "policy", "autoshard-lstm");
    as_pack_kv_i64(&pk, "format_version", AS_POLICY_VERSION);
    as_pack_str(&pk, "features");
    msgpack_pack_array(&pk, AS_NFEATURES);
    for (int i = 0; i < AS_NFEATURES; i++) as_pack_str(&pk, as_costmodel_feature_name(i));
    as_pack_kv_str(&pk, "transform", "none");
    double mean[3] = { 0, 0, 0 }, sdv[3] = { 100, 1e4, 10 };
    as_pack_kv_f64_list(&pk, "norm_mean", mean, 3);
    as_pack_kv_f64_list(&pk, "norm_std", sdv, 3);
    as_pack_str(&pk, "dims");
    msgpack_pack_array(&pk, 10);
    for (int i = 0; i < 10; i++) msgpack_pack_int(&pk, dv[i]);
    as_pack_kv_i64(&pk, "cost_features", AS_POLICY_NCF);
    as_pack_kv_i64(&pk, "nparams", n);
    as_pack_kv_array(&pk, "params", AS_DT_F32, prm, 1, &n);
    if (extra) extra(&pk);
    free(prm);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    as_policy *p = NULL;
    if (msgpack_unpack_next(&u, sb.data, sb.size, NULL) != MSGPACK_UNPACK_SUCCESS) snprintf(err, errlen, "unpack");
    else if (as_policy_read(&p, &u.data, err, errlen)) p = NULL;
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
    return p;
}

static as_policy *policy_of_dims(const int dv[10], char *err, size_t errlen)
{
    return policy_of_dims_x(dv, 0, NULL, err, errlen);
}

/* the ablations' fields (as-rl --no-cost-state, a cost model's dropped features): read,
 * written back, hostile values refused */
static void x_ablate(msgpack_packer *pk)
{
    as_pack_kv_str(pk, "cost_state", "none");
    as_pack_str(pk, "dropped_features");
    msgpack_pack_array(pk, 2);
    as_pack_str(pk, "pooling");
    as_pack_str(pk, "bin3");
}
static void x_bad_state(msgpack_packer *pk) { as_pack_kv_str(pk, "cost_state", "some"); }
static void x_bad_drop(msgpack_packer *pk)
{
    as_pack_str(pk, "dropped_features");
    msgpack_pack_array(pk, 1);
    as_pack_str(pk, "colour");
}
static void x_bad_state_type(msgpack_packer *pk) { as_pack_kv_i64(pk, "cost_state", 0); }

TEST(policy_ablation_fields)
{
    const int dv[10] = { AS_NFEATURES, 8, 4, 4, 8, 4, 8, 8, 4, 4 };
    char err[512];
    as_policy *p = policy_of_dims_x(dv, 2, x_ablate, err, sizeof err);
    CHECK(p != NULL);
    if (!p) { fprintf(stderr, "  %s\n", err); return; }
    CHECK_EQ_I64(as_policy_cost_state(p), 0);
    /* the dropped features are 0 in its table vector */
    as_features f = { .id = 1, .dim = 64, .rows = 1000, .pooling = 5, .size_gib = 0.1 };
    f.bins[3] = 0.5;
    f.bins[0] = 0.5;
    float v[AS_NFEATURES];
    as_policy_table_vector(p, &f, v);
    CHECK(v[2] == 0 && v[7] == 0 && v[0] != 0 && v[4] != 0);
    as_policy_free(p);
    void (*bad[3])(msgpack_packer *) = { x_bad_state, x_bad_drop, x_bad_state_type };
    for (int i = 0; i < 3; i++) {
        CHECK(policy_of_dims_x(dv, 1, bad[i], err, sizeof err) == NULL);
        CHECK(strstr(err, i == 1 ? "dropped_features" : "cost_state") != NULL);
    }
}

/* a step feature of 300 and an LSTM of 300 (the reader takes every size up to 4096; the
 * rollout once kept its state in 256-float arrays on the stack): greedy and sampled
 * episodes, the learner's replay, finite results */
TEST(policy_sizes_above_256_plan_and_learn)
{
    enum { N = 9, K = 3 };
    as_features f[N];
    const as_features *fp[N];
    mk_tables(f, fp, N, 3);
    static const int dims[2][10] = {
        { AS_NFEATURES, 8, 20, 300, 52, 32, 16, 16, 8, 8 },    /* SD 300: E2 + SD = 320 */
        { AS_NFEATURES, 8, 268, 4, 300, 32, 16, 16, 8, 8 },    /* H 300 */
    };
    for (int v = 0; v < 2; v++) {
        char err[256] = "";
        as_policy *p = policy_of_dims(dims[v], err, sizeof err);
        if (!CHECK(p != NULL)) { fprintf(stderr, "  dims %d: %s\n", v, err); continue; }
        int64_t a[N], b[N];
        as_rollout g = { .cm = &HM, .t = fp, .n = N, .K = K, .assign = a };
        CHECK(as_policy_rollout(p, &g, err, sizeof err) == 0);
        CHECK(g.feasible);
        as_rollout g2 = { .cm = &HM, .t = fp, .n = N, .K = K, .assign = b };
        CHECK(as_policy_rollout(p, &g2, err, sizeof err) == 0);
        CHECK(memcmp(a, b, sizeof a) == 0);
        as_rng rng;
        as_rng_seed(&rng, 2, 0);
        as_traj tr;
        as_traj *trp = &tr;
        as_rollout s = { .cm = &HM, .t = fp, .n = N, .K = K, .rng = &rng, .tr = &tr, .assign = a };
        CHECK(as_policy_rollout(p, &s, err, sizeof err) == 0);
        CHECK_EQ_I64(tr.L, N);
        int64_t np;
        as_policy_params(p, &np);
        float *gr = calloc((size_t)np, sizeof *gr);
        as_vtrace_cfg vc = { 1, 1, 1, 0.5f, 0.01f };
        double loss = as_policy_loss_grad(p, &trp, 1, &vc, gr, NULL, NULL);
        CHECK(isfinite(loss));
        double gs = 0;
        for (int64_t i = 0; i < np; i++) gs += fabs(gr[i]);
        CHECK(isfinite(gs) && gs > 0);
        free(gr);
        as_traj_free(&tr);
        as_policy_free(p);
    }
    /* above 4096, or E2 + CD != H: refused with the size named */
    int big[10] = { AS_NFEATURES, 8, 20, 4097, 52, 32, 16, 16, 8, 8 }, bad[10] = { AS_NFEATURES, 8, 20, 4, 53, 32, 16, 16, 8, 8 };
    char err[256] = "";
    CHECK(policy_of_dims(big, err, sizeof err) == NULL);
    CHECK(strstr(err, "size 3 of dims is not in 1..4096") != NULL);
    CHECK(policy_of_dims(bad, err, sizeof err) == NULL);
    CHECK(strstr(err, "inconsistent dims") != NULL);
}

/* the hand-made model with its head split for incremental use: pre the identity (linear, no
 * bias), post the head, so that rollouts take their fast path */
static void hm_pre(void *ctx, const float *s, float *out) { (void)ctx; out[0] = s[0]; out[1] = s[1]; }
static const as_plan_model HMS = { NULL, 2, hm_embed, hm_head, 2, hm_pre, hm_head };

TEST(policy_rollout_and_replay_agree_and_reuse_their_buffers)
{
    enum { N = 12, K = 4, EP = 4 };
    as_features f[N];
    const as_features *fp[N];
    mk_tables(f, fp, N, 5);
    as_policy *p = as_policy_new(NULL, 3, NULL, 0);
    int64_t np;
    as_policy_params(p, &np);
    float *g = calloc((size_t)np, sizeof *g);
    as_vtrace_cfg vc = { 1, 1, 1, 0.5f, 0.01f };
    const as_plan_model *models[2] = { &HM, &HMS };
    char err[256];
    for (int m = 0; m < 2; m++) {
        as_arena play = { 0 }, learn = { 0 };
        as_traj tr = { 0 }, fresh;
        as_traj *trp = &tr;
        int64_t a[N], b[N];
        uint64_t before = 0;
        for (int e = 0; e < EP; e++) {
            /* from the second episode on, the rollout and the learner allocate nothing */
            if (e == 1) before = as_alloc_count();
            as_rng rng;
            as_rng_seed(&rng, 9, (uint64_t)e);
            as_rollout ro = { .cm = models[m], .t = fp, .n = N, .K = K, .rng = &rng, .tr = &tr, .assign = a,
                              .keep_tr = 1, .ws = &play };
            CHECK(as_policy_rollout(p, &ro, err, sizeof err) == 0);
            CHECK_EQ_I64(tr.L, N);
            float lp[N];
            as_policy_replay_logp(p, &tr, lp, &learn);
            as_policy_loss_grad(p, &trp, 1, &vc, g, NULL, &learn);
            if (e < EP - 1) continue;
            CHECK_EQ_I64((int64_t)(as_alloc_count() - before), 0);
            /* the learner's log-probabilities of the actions are the rollout's, to the rounding
               of two orders of summing the head's first layer in fp32 (1e-5 here) */
            double worst = 0;
            for (int t = 0; t < N; t++) worst = fmax(worst, fabs((double)lp[t] - tr.logp[t]));
            if (!CHECK(worst < 1e-4)) fprintf(stderr, "  model %d: worst %g\n", m, worst);
            /* the kept buffers change nothing: a rollout with fresh ones records the same bits */
            as_rng_seed(&rng, 9, (uint64_t)e);
            as_rollout r2 = { .cm = models[m], .t = fp, .n = N, .K = K, .rng = &rng, .tr = &fresh, .assign = b };
            CHECK(as_policy_rollout(p, &r2, err, sizeof err) == 0);
            CHECK(memcmp(a, b, sizeof a) == 0);
            CHECK(fresh.L == tr.L && memcmp(fresh.logp, tr.logp, (size_t)N * sizeof *tr.logp) == 0);
            CHECK(memcmp(fresh.cf, tr.cf, (size_t)N * K * AS_POLICY_NCF * sizeof *tr.cf) == 0);
            as_traj_free(&fresh);
        }
        as_traj_free(&tr);
        as_arena_free(&play);
        as_arena_free(&learn);
    }
    free(g);
    as_policy_free(p);
}
