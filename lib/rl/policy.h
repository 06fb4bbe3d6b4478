/* policy.h - the learned sharding policy (AutoShard's LSTM policy-value network): the
 * network, its forward pass over an episode (one table per step), the backward pass of the
 * IMPALA loss with V-trace targets through time, greedy planning, and the `policy` record.
 * Dimension letters: T tables of a task (steps of an episode), L steps taken (L < T when an
 * episode ends infeasible), K shards, F = 21 table features, H LSTM hidden size.
 *
 * Network (sizes of the paper; the encoder sizes follow the cost model it starts from):
 *   table encoder   e = relu(W2 relu(W1 x + b1) + b2)       x: the 21 normalised features,
 *                                                             21 -> E1 (128) -> E2 (32)
 *   step feature    u = relu(ws * (t / T) + bs)               1 -> SD (32)
 *   LSTM            2 layers, hidden H (64), input [e_t | u_t]; state s_t = h of layer 2
 *   action k        a_k = [sum of e over the tables on shard k | relu(Wc cf_k + bc)]
 *                   (E2 + CD = H), cf_k the NCF cost features of shard k (below)
 *   policy logit    MLP over [s | a_k | s*a_k] (3H -> 128 -> 128 -> 64 -> 1, ReLU), one
 *                   matrix product over the K shards; softmax over the shards where the
 *                   table fits (memory mask)
 *   value           relu(Wv1 s + bv1) (H -> 64) -> 1
 *
 * Cost features of shard k at a step (NCF = 7), all from the cost model (as_plan_model),
 * in units of the step's scale = the largest predicted shard cost after the step over the
 * shards where the table fits (so that small differences between shards stay visible):
 *   0 predicted cost of k now, 1 predicted cost of k with the current table added,
 *   2 the largest and 4 the smallest predicted shard cost now, 3 k's weight bytes / cap (0
 *   without a cap), 5 the predicted single costs of the tables not yet placed (this one
 *   included) / their sum over the task, 6 where feature 1 lies between its smallest and
 *   largest value over the allowed shards (0 = the cost-greedy choice, 1 the worst).
 * (The paper feeds the predicted cost and, in its prototype, the size sum; the others are
 * this project's additions: they let the policy see the effect of its action on the
 * slowest and fastest shard and how much is left to place.)
 *
 * Episodes: the task's tables sorted by predicted single-table cost, descending (ties:
 * larger weight bytes, then larger id), as cost-greedy. Training samples from the masked
 * softmax; planning takes the argmax (ties: lower shard).
 *
 * The policy owns its table encoder (initialised from the cost model's 21->128->32 MLP and
 * then trained by the policy loss); the cost model that gives the rewards and the cost
 * features is kept separate, so the policy gradient never changes the reward model.
 *
 * Parameter buffer (PyTorch nn.Linear layout, W[out, in]), in this order:
 *   ew1 eb1 ew2 eb2 | sw sb | l1wi l1wh l1b | l2wi l2wh l2b | cw cb |
 *   hw1 hb1 hw2 hb2 hw3 hb3 hw4 hb4 | vw1 vb1 vw2 vb2
 * (an LSTM layer: wi[4H,in] wh[4H,H] b[4H], gates i f g o).
 *
 * Everything runs on the CPU (OpenBLAS, one thread): a step is a product of K <= a few
 * hundred rows, where a GPU launch would cost more than the arithmetic.
 */
#ifndef AS_POLICY_H
#define AS_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "costmodel.h"
#include "featurize.h"
#include "plan.h"
#include "stream.h"

#define AS_POLICY_VERSION 1   /* the `policy` record's format_version */
#define AS_POLICY_NCF 7       /* cost features per shard */
#define AS_POLICY_MAX_DIM 4096   /* every size of dims (as_policy_dims), H = E2 + CD included */
/* the ranges of the training fields of a `policy` record, which are as-rl's option ranges */
#define AS_POLICY_MAX_EPISODES (INT64_MAX / 4)   /* episodes (and --episodes, --halt-after, ...) */
#define AS_POLICY_MAX_LR 10.0                    /* lr */
#define AS_POLICY_MAX_LOSS_COST 100.0            /* entropy_cost, baseline_cost */
#define AS_POLICY_MAX_CLIP 1e12                  /* clip */
#define AS_POLICY_MAX_BATCH 100000               /* batch */
#define AS_POLICY_MAX_ACTORS 1024                /* actors */

typedef struct {
    int f, e1, e2, sd, h, cd, p1, p2, p3, vh;
} as_policy_dims;

/* what a policy knows about its training (stored in the record) */
typedef struct {
    uint64_t seed;
    int64_t episodes, updates, steps;   /* cumulative */
    int64_t evals;                      /* shard measurements used (bench rewards, evaluations) */
    char reward[16];                    /* "model" or "bench" */
    int64_t train_tasks, task_tables, task_shards;
    double lr, entropy, baseline, clip;
    int64_t batch, actors;
    double final_reward;                /* mean reward of the last update */
    int64_t selected_episode;           /* model selection: the episode whose weights these are
                                           (-1: no selection, the last weights) */
    double selected_balance;            /* their score: mean predicted balance of greedy plans */
    int64_t select_tasks;               /* of the first select_tasks training tasks */
} as_policy_info;

typedef struct as_policy as_policy;

/* a fresh policy: PyTorch default init from seed; the encoder copied from the cost model's
 * table MLP (and its normalisation) when cm is given (its widths then set e1/e2, and H =
 * E2 + 32 when E2 >= 64). NULL with err when those sizes exceed AS_POLICY_MAX_DIM (a cost
 * model with H1 > 4096 or H2 > 4064): the one limit on the sizes a policy takes from its
 * cost model. Nothing else bounds them: every buffer is sized from the policy's dims and the
 * cost model's widths. */
as_policy *as_policy_new(const as_costmodel *cm, uint64_t seed, char *err, size_t errlen);
as_policy *as_policy_clone(const as_policy *p);
/* AutoShard's "w/o cost modeling" ablation (its Table 2; pipelines/q3-ablation): the state
 * without the cost model's outputs (cost features 0-2 and 4-6 are 0; 3, the shard's memory,
 * stays) and the encoder trained from a fresh start (seeded from the policy's seed) instead of
 * the cost model's table MLP. The policy record says so ("cost_state": "none"). The episode
 * order and the rewards are still the cost model's (as-rl --reward model) or measured
 * (--reward bench). A policy's dropped features (as-costfit --drop-features) are its cost
 * model's, copied by as_policy_new and recorded ("dropped_features"). */
void as_policy_drop_cost(as_policy *p);
int as_policy_cost_state(const as_policy *p);   /* 0 after as_policy_drop_cost */
void as_policy_free(as_policy *p);
float *as_policy_params(as_policy *p, int64_t *n);
const as_policy_dims *as_policy_cdims(const as_policy *p);
as_policy_info *as_policy_meta(as_policy *p);
const as_policy_info *as_policy_cmeta(const as_policy *p);
/* name and [offset, offset+len) of parameter block i (0..), NULL after the last */
const char *as_policy_block(const as_policy *p, int i, int64_t *off, int64_t *len);

/* the normalised 21-vector the policy sees for a table */
void as_policy_table_vector(const as_policy *p, const as_features *f, float out[AS_NFEATURES]);

/* ---- episodes --------------------------------------------------------------------------- */

/* One episode as an actor saw it; everything the learner needs to replay it. */
typedef struct {
    int64_t task;                   /* caller's task index */
    int T, K, L;                    /* tables, shards, steps taken */
    float *x;                       /* [T,F] normalised features, in step order */
    float *cf;                      /* [L,K,NCF] cost features at each step */
    uint8_t *mask;                  /* [L,K] 1 where the table fits */
    int32_t *act;                   /* [L] chosen shard */
    float *logp;                    /* [L] behaviour log-probability of act */
    float reward;                   /* the final reward, at step L-1 */
    int feasible;
    double pred_balance;            /* min/max of the predicted shard costs (feasible only) */
    /* set by tests to replace the V-trace targets (NULL: computed) */
    const float *fixed_vs, *fixed_adv;
    int64_t cap_n, cap_k;           /* the arrays hold cap_n tables on cap_k shards: a rollout
                                       with keep_tr that records into a trajectory holding its
                                       task's sizes reuses them */
} as_traj;

void as_traj_free(as_traj *t);

typedef struct {
    const as_plan_model *cm;        /* cost model: ordering, cost features, predictions */
    const as_features *const *t;    /* the task's tables */
    int64_t n, K;
    uint64_t cap;                   /* bytes per shard, 0 = none */
    as_rng *rng;                    /* sample with it; NULL = greedy argmax */
    int teacher;                    /* act as cost-greedy (lowest predicted cost after the
                                       step; ties: fewer bytes, lower shard) instead of the
                                       policy; recorded log-probabilities stay the policy's */
    as_traj *tr;                    /* record into it (needs rng); NULL = do not record.
                                       Recording stops at the first table that fits nowhere. */
    int keep_tr;                    /* tr is zeroed or holds an earlier recording, whose
                                       arrays it reuses when they are large enough (else tr
                                       is overwritten: the caller frees it, as_traj_free) */
    const int64_t *pin;             /* [n] a rank each table must go to (TorchRec's row_wise
                                       blocks, lib/plan/pins.h), -1 free; NULL: none. A
                                       pinned table's only candidate is its rank (unplaced
                                       when it does not fit there) */
    as_arena *ws;                   /* the rollout's buffers, kept for the next rollout (one
                                       arena per thread): no allocation in a rollout no
                                       larger than one before; NULL: its own, freed */
    /* outputs */
    int64_t *assign;                /* [n] shard per table (task order), -1 = fits nowhere */
    double *pred;                   /* [K] predicted shard costs at the end (may be NULL) */
    int feasible;
    double pred_balance;            /* min/max of pred (0 when infeasible) */
} as_rollout;

/* Run the policy over one task. 0 ok; -1 with err (bad sizes). */
int as_policy_rollout(const as_policy *p, as_rollout *ro, char *err, size_t errlen);

/* ---- learning ----------------------------------------------------------------------------- */

typedef struct {
    float gamma, rho_bar, c_bar;    /* 1, 1, 1 */
    float baseline;                 /* value-loss weight (0.5) */
    float entropy;                  /* entropy-loss weight (0.001) */
} as_vtrace_cfg;

/* V-trace targets over one sequence of L steps (IMPALA, Espeholt et al. 2018):
 * logrho[t] = log pi(a_t|x_t) - log mu(a_t|x_t), r reward, done 1 at an episode end,
 * V value estimates, bootstrap = V(x_L). Writes vs[L] and the policy-gradient advantages
 * adv[L] = min(rho, rho_bar) (r_t + gamma_t vs_{t+1} - V_t) (vs_L = bootstrap). */
void as_vtrace(float *vs, float *adv, const float *logrho, const float *r, const float *done, const float *V,
               float bootstrap, int L, const as_vtrace_cfg *c);

typedef struct {
    double loss, pg, value, entropy;   /* sums over the steps (entropy: of -sum pi log pi) */
    double rho_mean, reward;           /* mean importance ratio and mean final reward */
    int64_t steps, episodes;
} as_policy_stats;

/* The IMPALA loss of trajectories tr[0..n) under the current parameters (sums, not means):
 *   -sum log pi(a_t) adv_t + 0.5 baseline sum (vs_t - V_t)^2 + entropy sum_t sum_k pi log pi
 * with V-trace targets (vs, adv) treated as constants. When grad is not NULL its gradient is
 * ACCUMULATED into grad[nparams]. Returns the loss. ws: the passes' buffers, kept for the
 * next call (no allocation for trajectories no larger than one before); NULL: its own. */
double as_policy_loss_grad(const as_policy *p, as_traj *const *tr, int n, const as_vtrace_cfg *c, float *grad,
                           as_policy_stats *st, as_arena *ws);

/* The learner's log-probabilities of tr's recorded actions, logp[tr->L]: its forward pass
 * over the whole trajectory (the head over every step and shard at once), which the
 * rollout computes step by step with the head's first layer in parts; the two agree to
 * float rounding (tests/unit/rl/test_policy.c). ws as for as_policy_loss_grad. */
void as_policy_replay_logp(const as_policy *p, const as_traj *tr, float *logp, as_arena *ws);

/* ---- records ---------------------------------------------------------------------------- */

/* the `policy` record (docs/FORMAT.md); extra: NULL or a callback packing `nextra` more
 * key/value pairs into the same map (checkpoints add their optimiser state that way) */
void as_policy_write(const as_policy *p, as_writer *w, int nextra, void (*extra)(msgpack_packer *, void *), void *ctx);
int as_policy_read(as_policy **p, const msgpack_object *rec, char *err, size_t errlen);

/* Load a policy file: its `policy` record and the `model` record of the cost model it was
 * trained with (either may be NULL to skip). 0 ok, -1 with err. */
int as_policy_load(const char *path, as_policy **p, as_costmodel **cm, char *err, size_t errlen);

/* as_plan_policy adapter (plan.h), cost features from cm. The greedy rollout (argmax) is
 * always one candidate; with samples > 1, samples - 1 more are drawn from the policy's
 * masked softmax and the plan kept is the best candidate: feasible first, then the highest
 * predicted balance (min/max of the predicted shard costs), then the lowest predicted max,
 * then the earliest (so the greedy plan wins ties). samples = 0 chooses by task size:
 * as_policy_auto_samples. The draws are seeded from seed and the task's table ids, so a
 * task always gets the same plan. */
typedef struct {
    const as_policy *pol;
    const as_plan_model *cm;
    int samples;                    /* candidates per task (>= 1), 0 = auto */
    uint64_t seed;
} as_policy_planner;

#define AS_POLICY_SAMPLE_BUDGET 102400   /* auto: work units of all candidates, at most */
#define AS_POLICY_MAX_SAMPLES 64          /* auto: at most this many candidates */
/* candidates for a task of n tables on K shards when samples = 0: one rollout costs about
 * n (48 + K) work units (a step's LSTM and head setup ~ 48 shards' worth of the per-shard
 * head rows; measured on one core: 80 -> 8 4.2 ms, 800 -> 80 94 ms), so
 * clamp(AS_POLICY_SAMPLE_BUDGET / (n (48 + K)), 1, AS_POLICY_MAX_SAMPLES) keeps a task's
 * planning near the time of one 800 -> 80 rollout: 22 candidates for 80 tables on 8
 * shards, 10 for 160 on 16, 4 for 320 on 32, 1 for 800 on 80 */
int as_policy_auto_samples(int64_t n, int64_t K);
int as_policy_place(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                    char *err, size_t errlen);
/* as_plan_policy's samples: ctx's (as_policy_planner) samples, or as_policy_auto_samples */
int as_policy_samples(void *ctx, int64_t n, int64_t K);

#endif
