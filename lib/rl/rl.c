/* rl.c - IMPALA training of the sharding policy (rl.h): actors, the V-trace learner, the
 * cost-model buffer of measured shards, evaluation, `train` log records and checkpoints.
 * Dimension letters: T tables, K shards, B1 trajectories per update. */
#include "rl.h"
#include "planmodel.h"
#include "stats.h"

#include "benchnoise.h"
#include "common.h"
#include "reclimits.h"
#include "nn.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static as_costmodel *cm_clone(const as_costmodel *cm)
{
    const as_costmodel_info *ci = as_costmodel_cmeta(cm);
    as_costmodel *c = as_costmodel_new(ci->h1, ci->h2, ci->h3, 0);
    as_costmodel_info *di = as_costmodel_meta(c);
    *di = *ci;
    di->losses = NULL;
    di->nlosses = 0;
    int64_t n;
    float *dst = as_costmodel_params(c, &n);
    memcpy(dst, as_costmodel_params((as_costmodel *)cm, NULL), (size_t)n * sizeof *dst);
    return c;
}

static void cm_copy_params(as_costmodel *dst, const as_costmodel *src)
{
    int64_t n;
    float *d = as_costmodel_params(dst, &n);
    memcpy(d, as_costmodel_params((as_costmodel *)src, NULL), (size_t)n * sizeof *d);
}

/* ---- state -------------------------------------------------------------------------------- */

typedef struct {
    int64_t n;
    int64_t *pos;           /* positions in cfg->feat (tables or pieces of tables) */
    as_piece *pc;           /* read from a checkpoint: each entry's piece until as_rl_train
                               resolves it with its table id (NULL: every entry whole) */
    double cost;            /* measured ms */
} buf_entry;

struct as_rl_state {
    int64_t np, t;          /* policy Adam */
    float *m, *v;
    int64_t cnp, ct;        /* cost-model Adam */
    float *cm_m, *cm_v;
    double wall;            /* training seconds so far */
    int64_t total_episodes;
    double minutes;
    buf_entry *buf;         /* ring of measured shards */
    int64_t nbuf, cap, head;
    /* model selection: the best-scoring weights so far (best_episode -1: none yet) */
    float *best_w, *best_cm;
    double best_score;
    int64_t best_episode;
    as_rl_hparams hp;       /* what the run learns with */
    int64_t run_id;         /* the run's identity (checkpoint and log headers) */
    /* the run's `train` records so far, encoded: a checkpoint carries them, so a resumed
       run's log holds the records up to the checkpoint whatever happened to the log file */
    char *log;
    size_t loglen, logcap;
    int64_t nlog, log_episode;   /* records; the episode of the last */
};

void as_rl_state_free(as_rl_state *st)
{
    if (!st) return;
    free(st->m); free(st->v); free(st->cm_m); free(st->cm_v); free(st->best_w); free(st->best_cm); free(st->log);
    for (int64_t i = 0; i < st->nbuf; i++) { free(st->buf[i].pos); free(st->buf[i].pc); }
    free(st->buf);
    free(st);
}

int64_t as_rl_state_total_episodes(const as_rl_state *st) { return st->total_episodes; }
double as_rl_state_minutes(const as_rl_state *st) { return st->minutes; }
int64_t as_rl_state_best_episode(const as_rl_state *st) { return st->best_episode; }
const as_rl_hparams *as_rl_state_hparams(const as_rl_state *st) { return &st->hp; }
int64_t as_rl_state_run_id(const as_rl_state *st) { return st->run_id; }

int64_t as_rl_new_run_id(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        x ^= (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&ts;
    }
    x = as_splitmix64(&x) & (uint64_t)INT64_MAX;
    return x ? (int64_t)x : 1;
}

/* append one encoded record to the run's log */
static void log_append(as_rl_state *st, const char *rec, size_t n, int64_t episode)
{
    if (st->loglen + n > st->logcap) {
        st->logcap = 2 * (st->loglen + n) + 4096;
        st->log = as_realloc(st->log, st->logcap);
    }
    memcpy(st->log + st->loglen, rec, n);
    st->loglen += n;
    st->nlog++;
    st->log_episode = episode;
}

static as_rl_state *state_new(int64_t np, int64_t cnp, int64_t cap)
{
    as_rl_state *s = as_calloc(1, sizeof *s);
    s->np = np;
    s->m = as_calloc((size_t)np, sizeof *s->m);
    s->v = as_calloc((size_t)np, sizeof *s->v);
    s->cnp = cnp;
    s->cm_m = as_calloc((size_t)(cnp ? cnp : 1), sizeof *s->cm_m);
    s->cm_v = as_calloc((size_t)(cnp ? cnp : 1), sizeof *s->cm_v);
    s->cap = cap > 0 ? cap : 1;
    s->buf = as_calloc((size_t)s->cap, sizeof *s->buf);
    s->best_w = as_calloc((size_t)(np ? np : 1), sizeof *s->best_w);
    s->best_cm = as_calloc((size_t)(cnp ? cnp : 1), sizeof *s->best_cm);
    s->best_score = -INFINITY;
    s->best_episode = -1;
    return s;
}

static void buf_push(as_rl_state *s, const int64_t *pos, int64_t n, double cost)
{
    buf_entry *e;
    if (s->nbuf < s->cap) e = &s->buf[s->nbuf++];
    else { e = &s->buf[s->head]; s->head = (s->head + 1) % s->cap; free(e->pos); free(e->pc); }
    e->n = n;
    e->pc = NULL;
    e->pos = as_malloc((size_t)(n ? n : 1) * sizeof *e->pos);
    memcpy(e->pos, pos, (size_t)n * sizeof *pos);
    e->cost = cost;
}

/* ---- episodes ------------------------------------------------------------------------------ */

typedef struct {
    as_traj tr;
    int64_t episode, task;
    double pred_balance, meas_balance;   /* meas: NaN when not measured */
    int64_t measured;                    /* shards measured */
    /* measured shards for the cost buffer: shard k = pos[off[k] .. off[k+1]), cost[k] */
    int64_t K, *off, *pos;
    double *cost;
    uint8_t *noisy;                      /* [K] the shard's spread stayed above the threshold */
    float *fvs, *fadv;                   /* imitation: fixed V-trace targets */
} rl_ep;

static void ep_free(rl_ep *e)
{
    as_traj_free(&e->tr);
    free(e->off); free(e->pos); free(e->cost); free(e->noisy); free(e->fvs); free(e->fadv);
    memset(e, 0, sizeof *e);
}

typedef struct {
    const as_rl_cfg *c;
    const as_rl_task *tasks;
    int64_t ntasks;
    pthread_mutex_t measure_mu;     /* one measurement at a time */
    as_bench_session *sess;         /* measurements (NULL: none) */
    double ref_base;                /* drift correction's reference level (0: not yet) */
    double own_level;               /* the drift bound's level (benchnoise.h; 0: not yet) */
} rl_ctx;

/* a plan's tables grouped by shard (as_plan_group): shard k holds the tables
 * t->t[order[start[k] .. start[k+1])]; both malloc'd */
static void group_plan(const as_rl_task *t, const int64_t *assign, int64_t **start, int64_t **order)
{
    *start = as_malloc((size_t)(t->K + 2) * sizeof **start);
    *order = as_malloc((size_t)(t->n ? t->n : 1) * sizeof **order);
    as_plan_group(*start, *order, assign, t->n, t->K);
}

/* measure the shards of a plan as as-bench does: shards whose spread stays above the noise
 * threshold are measured again, up to AS_NOISE_RETRIES rounds; costs[K] (0 for an empty
 * shard), noisy[K] (may be NULL) 1 where the spread stayed above it; 0 ok, -1 with err */
static int measure_plan(rl_ctx *x, const as_rl_task *t, const int64_t *assign, double *costs, uint8_t *noisy,
                        int64_t *nmeas, char *err, size_t errlen)
{
    int64_t K = t->K;
    int64_t *ids = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *ids);
    as_noise_job *jobs = as_calloc((size_t)K, sizeof *jobs);
    int64_t *shard = as_malloc((size_t)K * sizeof *shard);
    int64_t *start, *order, nj = 0;
    group_plan(t, assign, &start, &order);
    for (int64_t k = 0; k < K; k++) {
        costs[k] = 0;
        if (noisy) noisy[k] = 0;
        if (start[k + 1] == start[k]) continue;
        for (int64_t j = start[k]; j < start[k + 1]; j++) ids[j] = t->t[order[j]]->id;
        jobs[nj].ids = ids + start[k];
        jobs[nj].n = start[k + 1] - start[k];
        shard[nj++] = k;
    }
    free(start); free(order);
    as_noise_cfg nc = { .threshold = AS_NOISE_THRESHOLD, .retries = AS_NOISE_RETRIES, .interleave = AS_NOISE_INTERLEAVE,
                        .ref_ids = x->c->ref_ids, .ref_n = x->c->ref_n, .ref_base = &x->ref_base,
                        .drift_bound = AS_NOISE_DRIFT_BOUND, .own_level = &x->own_level };
    pthread_mutex_lock(&x->measure_mu);
    as_noise_measure(x->sess, jobs, nj, &nc, NULL, NULL, NULL);
    pthread_mutex_unlock(&x->measure_mu);
    int rc = 0;
    for (int64_t j = 0; j < nj && !rc; j++) {
        const as_bench_result *r = &jobs[j].r;
        if (!r->ok) {
            snprintf(err, errlen, "task %" PRId64 ": measuring shard %" PRId64 ": %s", t->id, shard[j], r->error);
            rc = -1;
        }
        costs[shard[j]] = r->cost_ms;
        if (noisy) noisy[shard[j]] = (uint8_t)r->noisy;
        (*nmeas)++;
    }
    free(ids); free(jobs); free(shard);
    return rc;
}

static double balance_of(const double *c, int64_t K)
{
    double mn = INFINITY, mx = 0;
    for (int64_t k = 0; k < K; k++) { if (c[k] < mn) mn = c[k]; if (c[k] > mx) mx = c[k]; }
    return mx > 0 ? mn / mx : 0;
}

/* the pieces of an episode (rl_cfg.pieces): the task's m costliest tables (by the cost
 * model alone; 1 <= m <= max(1, T / 8), drawn) each cut into c equal column pieces (c = 2 or
 * 4, drawn, while the pieces' width stays a multiple of 4: the split search's column
 * levels), the other tables as they are. *items (malloc'd [*n]) holds them, *tp the
 * pointers; 0 when no table could be cut (the task as it is) */
typedef struct {
    as_features *items;
    const as_features **tp;
    int64_t n;
} ep_pieces;

static int cut_pieces(const as_rl_task *t, const as_plan_model *pm, as_rng *rng, ep_pieces *ep)
{
    const int64_t n = t->n;
    memset(ep, 0, sizeof *ep);
    if (n < 1) return 0;
    double *single = as_malloc((size_t)n * sizeof *single);
    float *rep = as_malloc((size_t)pm->rep * sizeof *rep);
    for (int64_t i = 0; i < n; i++) {
        pm->embed(pm->ctx, t->t[i], rep);
        single[i] = pm->head(pm->ctx, rep);
    }
    free(rep);
    const int64_t mmax = n / 8 > 1 ? n / 8 : 1, m = 1 + (int64_t)as_rng_below(rng, (uint64_t)mmax);
    uint8_t *cut = as_calloc((size_t)n, 1);
    int64_t extra = 0;
    for (int64_t q = 0; q < m; q++) {   /* the m costliest (ties: the earlier) */
        int64_t b = -1;
        for (int64_t i = 0; i < n; i++)
            if (!cut[i] && (b < 0 || single[i] > single[b])) b = i;
        const int64_t c = 2 << as_rng_below(rng, 2), dim = t->t[b]->dim;
        int64_t cc = 1;   /* chosen; 1: it stays whole (a piece already, or too narrow) */
        if (as_piece_whole(&t->t[b]->piece)) cc = dim % (4 * c) == 0 ? c : dim % 8 == 0 ? 2 : 1;
        cut[b] = (uint8_t)cc;
        extra += cc - 1;
    }
    free(single);
    if (!extra) { free(cut); return 0; }
    ep->items = as_malloc((size_t)(n + extra) * sizeof *ep->items);
    ep->tp = as_malloc((size_t)(n + extra) * sizeof *ep->tp);
    for (int64_t i = 0; i < n; i++) {
        const as_features *f = t->t[i];
        const int64_t c = cut[i] > 1 ? cut[i] : 1, d = f->dim / c;
        for (int64_t j = 0; j < c; j++) {
            as_features *g = &ep->items[ep->n];
            const int whole = c == 1 || as_features_cols(g, f, j * d, (j + 1) * d);
            if (whole) *g = *f;   /* (as_features_cols refuses nothing cut here; whole if it did) */
            ep->tp[ep->n++] = g;
            if (whole) break;
        }
    }
    free(cut);
    return 1;
}

/* episode e played into out; ws: the rollout's buffers (one arena per thread) */
static int play(rl_ctx *x, int64_t e, const as_policy *p, const as_costmodel *cm, rl_ep *out, as_arena *ws, char *err,
                size_t errlen)
{
    const as_rl_cfg *c = x->c;
    memset(out, 0, sizeof *out);
    out->episode = e;
    out->meas_balance = NAN;
    as_rng rng;
    as_rng_seed(&rng, c->seed, (uint64_t)e);
    int64_t ti = (int64_t)as_rng_below(&rng, (uint64_t)x->ntasks);
    const as_rl_task *t = &x->tasks[ti];
    out->task = ti;
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    /* model rewards: a share of the episodes place the task with its costliest tables in
       column pieces, as the split search hands them to the policy (the draw only then, so
       runs without it keep their streams) */
    ep_pieces pcs = { 0 };
    const int cut = !c->bench && c->pieces > 0 && as_rng_uniform(&rng) < c->pieces && cut_pieces(t, &pm, &rng, &pcs);
    const int64_t n = cut ? pcs.n : t->n;
    int64_t *assign = as_malloc((size_t)(n ? n : 1) * sizeof *assign);
    as_rollout ro = { .cm = &pm, .t = cut ? pcs.tp : t->t, .n = n, .K = t->K, .cap = t->cap, .rng = &rng,
                      .tr = &out->tr, .assign = assign, .teacher = e < c->imitate, .ws = ws };
    int rc = as_policy_rollout(p, &ro, err, errlen);
    free(pcs.items);
    free(pcs.tp);
    if (rc) { free(assign); return -1; }
    out->tr.task = ti;
    out->pred_balance = ro.pred_balance;
    if (c->bench && ro.feasible) {
        int64_t K = t->K;
        out->K = K;
        out->cost = as_malloc((size_t)K * sizeof *out->cost);
        out->noisy = as_malloc((size_t)K * sizeof *out->noisy);
        if (measure_plan(x, t, assign, out->cost, out->noisy, &out->measured, err, errlen)) { free(assign); return -1; }
        out->meas_balance = balance_of(out->cost, K);
        out->tr.reward = (float)out->meas_balance;
        int64_t *order;
        group_plan(t, assign, &out->off, &order);   /* off: start, K + 2 entries */
        out->pos = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *out->pos);
        for (int64_t j = 0; j < out->off[K]; j++) out->pos[j] = t->t[order[j]] - c->feat;
        free(order);
    }
    free(assign);
    if (e < c->imitate && out->tr.L > 0) {
        /* behaviour cloning of the teacher: -log pi(a*) for every step (advantage 1), and
         * the value of every state = the episode's return */
        int L = out->tr.L;
        out->fvs = as_malloc((size_t)L * sizeof *out->fvs);
        out->fadv = as_malloc((size_t)L * sizeof *out->fadv);
        for (int s = 0; s < L; s++) { out->fvs[s] = out->tr.reward; out->fadv[s] = 1.0f; }
        out->tr.fixed_vs = out->fvs;
        out->tr.fixed_adv = out->fadv;
    }
    return 0;
}

/* ---- actors on threads --------------------------------------------------------------------- */

typedef struct {
    rl_ctx *x;
    pthread_mutex_t mu;
    pthread_cond_t items, space;
    /* the published snapshot */
    float *snap;
    int64_t np;
    as_costmodel *cm_snap;
    int64_t version;
    int64_t next, limit;
    int done;
    rl_ep **q;
    int qcap, qn, qhead;
    as_policy *shape;               /* a private copy the actors clone (never written) */
    char err[512];
    int failed;
} rl_pool;

typedef struct {
    rl_pool *pl;
    pthread_t th;
} rl_actor;

static void *actor_main(void *arg)
{
    rl_actor *a = arg;
    rl_pool *pl = a->pl;
    as_policy *p = as_policy_clone(pl->shape);
    as_costmodel *cm = cm_clone(pl->cm_snap);
    int64_t myver = -1;
    char err[512];
    as_arena ws = { 0 };
    as_nn_set_threads(1);
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->done && pl->qn == pl->qcap) pthread_cond_wait(&pl->space, &pl->mu);
        if (pl->done || pl->next >= pl->limit) break;
        int64_t e = pl->next++;
        if (myver != pl->version) {
            memcpy(as_policy_params(p, NULL), pl->snap, (size_t)pl->np * sizeof(float));
            cm_copy_params(cm, pl->cm_snap);
            myver = pl->version;
        }
        pthread_mutex_unlock(&pl->mu);
        rl_ep *ep = as_malloc(sizeof *ep);
        int rc = play(pl->x, e, p, cm, ep, &ws, err, sizeof err);
        pthread_mutex_lock(&pl->mu);
        if (rc) {
            if (!pl->failed) { pl->failed = 1; snprintf(pl->err, sizeof pl->err, "%s", err); }
            ep_free(ep);
            free(ep);
            pl->done = 1;
            pthread_cond_broadcast(&pl->items);
            break;
        }
        while (!pl->done && pl->qn == pl->qcap) pthread_cond_wait(&pl->space, &pl->mu);
        if (pl->done) { ep_free(ep); free(ep); break; }
        pl->q[(pl->qhead + pl->qn) % pl->qcap] = ep;
        pl->qn++;
        pthread_cond_signal(&pl->items);
    }
    pthread_mutex_unlock(&pl->mu);
    as_arena_free(&ws);
    as_policy_free(p);
    as_costmodel_free(cm);
    return NULL;
}

/* ---- evaluation ---------------------------------------------------------------------------- */

/* the greedy plan of task t into assign[t->n] (-1: fits nowhere), or with teacher cost-greedy's;
 * its predicted balance (0 when infeasible or when a shard is left empty: an empty shard's
 * predicted cost is 0), whether it is feasible, and the shards that hold a table; 0 or -1 with err */
static int greedy_or_teacher(const as_policy *p, const as_plan_model *pm, const as_rl_task *t, int teacher, int64_t *assign,
                             double *bal, int *feasible, int64_t *used, char *err, size_t errlen)
{
    as_rollout ro = { .cm = pm, .t = t->t, .n = t->n, .K = t->K, .cap = t->cap, .assign = assign, .teacher = teacher };
    if (as_policy_rollout(p, &ro, err, errlen)) return -1;
    *bal = ro.pred_balance;
    *feasible = ro.feasible;
    uint8_t *has = as_calloc((size_t)t->K, 1);
    *used = 0;
    for (int64_t j = 0; j < t->n; j++)
        if (assign[j] >= 0 && assign[j] < t->K && !has[assign[j]]) { has[assign[j]] = 1; (*used)++; }
    free(has);
    return 0;
}

/* the greedy plan of task t into assign[t->n] (-1: fits nowhere): its predicted balance (0 when
 * infeasible or when a shard is left empty: an empty shard's predicted cost is 0), whether it
 * is feasible, and the shards that hold a table; 0 or -1 with err */
static int greedy_plan(const as_policy *p, const as_plan_model *pm, const as_rl_task *t, int64_t *assign, double *bal,
                       int *feasible, int64_t *used, char *err, size_t errlen)
{
    return greedy_or_teacher(p, pm, t, 0, assign, bal, feasible, used, err, errlen);
}

/* cost-greedy's plan of task t with the same model (the rollout's teacher: each table where
   the predicted cost after it is lowest): its predicted balance, as greedy_plan's */
static double cost_greedy_balance(const as_policy *p, const as_plan_model *pm, const as_rl_task *t, char *err, size_t errlen)
{
    int64_t *assign = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *assign), used;
    double b;
    int feasible;
    int rc = greedy_or_teacher(p, pm, t, 1, assign, &b, &feasible, &used, err, errlen);
    free(assign);
    return rc ? NAN : b;
}

int as_rl_greedy_plans(const as_policy *p, const as_costmodel *cm, const as_rl_task *tasks, int64_t ntasks, int64_t n,
                       as_rl_greedy *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->balance = g->cost_greedy = NAN;
    double scg = 0;
    if (n > ntasks) n = ntasks;
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    double sp = 0;
    for (int64_t i = 0; i < n; i++) {
        const as_rl_task *t = &tasks[i];
        int64_t *assign = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *assign), used;
        double b;
        int feasible;
        int rc = greedy_plan(p, &pm, t, assign, &b, &feasible, &used, err, errlen);
        free(assign);
        if (rc) return -1;
        const double cg = cost_greedy_balance(p, &pm, t, err, errlen);
        if (isnan(cg)) return -1;
        sp += b;
        scg += cg;
        g->tasks++;
        g->shards += t->K;
        g->used += used;
        if (!feasible) g->infeasible++;
        else if (used < t->K) g->empty++;
    }
    if (n > 0) g->balance = sp / n, g->cost_greedy = scg / n;
    return 0;
}

/* greedy plans of the first ntasks training tasks: their mean predicted balance (an
 * infeasible plan counts 0) and, when measure is set and a device and the tables are given,
 * the mean measured balance of the feasible ones (NAN when none) */
static int evaluate(rl_ctx *x, const as_policy *p, const as_costmodel *cm, int64_t ntasks, int measure,
                    double *pred_bal, double *meas_bal, int64_t *nmeas, double *cg_bal, char *err, size_t errlen)
{
    const as_rl_cfg *c = x->c;
    int64_t n = ntasks < x->ntasks ? ntasks : x->ntasks;
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    double sp = 0, sm = 0, scg = 0;
    int64_t nm = 0;
    for (int64_t i = 0; i < n; i++) {
        const as_rl_task *t = &x->tasks[i];
        int64_t *assign = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *assign), used;
        double *costs = as_malloc((size_t)t->K * sizeof *costs), b;
        int feasible;
        int rc = greedy_plan(p, &pm, t, assign, &b, &feasible, &used, err, errlen);
        if (!rc && cg_bal) {
            const double cg = cost_greedy_balance(p, &pm, t, err, errlen);
            if (isnan(cg)) rc = -1;
            scg += cg;
        }
        if (!rc) {
            sp += b;
            if (measure && c->bcfg && c->pool && feasible) {
                rc = measure_plan(x, t, assign, costs, NULL, nmeas, err, errlen);
                if (!rc) { sm += balance_of(costs, t->K); nm++; }
            }
        }
        free(assign);
        free(costs);
        if (rc) return -1;
    }
    *pred_bal = n ? sp / n : NAN;
    *meas_bal = nm ? sm / nm : NAN;
    if (cg_bal) *cg_bal = n ? scg / n : NAN;
    return 0;
}

/* score the current weights; keep them when they score at least as well as the best so far */
static int select_step(rl_ctx *x, as_policy *p, as_costmodel *cm, as_rl_state *st, int64_t episode, double *score,
                       char *err, size_t errlen)
{
    /* scoring measures nothing and draws no random number: it never changes the run */
    double sc, unused;
    if (evaluate(x, p, cm, x->c->select_tasks, 0, &sc, &unused, NULL, NULL, err, errlen)) return -1;
    *score = sc;
    if (sc >= st->best_score) {
        int64_t np, cnp;
        const float *w = as_policy_params(p, &np);
        const float *cw = as_costmodel_params(cm, &cnp);
        memcpy(st->best_w, w, (size_t)np * sizeof *w);
        memcpy(st->best_cm, cw, (size_t)cnp * sizeof *cw);
        st->best_score = sc;
        st->best_episode = episode;
    }
    return 0;
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

typedef struct {
    const as_rl_state *st;
} ck_ctx;

static void pack_f32(msgpack_packer *pk, const char *k, const float *v, int64_t n)
{
    int64_t shape[1] = { n };
    as_pack_kv_array(pk, k, AS_DT_F32, v, 1, shape);
}

#define CK_EXTRA 19
#define CK_EXTRA_BEST 4
static void ck_extra(msgpack_packer *pk, void *ctx)
{
    const as_rl_state *s = ((ck_ctx *)ctx)->st;
    if (s->best_episode >= 0) {
        pack_f32(pk, "best_params", s->best_w, s->np);
        pack_f32(pk, "best_cm_params", s->best_cm, s->cnp);
        as_pack_kv_f64(pk, "best_score", s->best_score);
        as_pack_kv_i64(pk, "best_episode", s->best_episode);
    }
    pack_f32(pk, "adam_m", s->m, s->np);
    pack_f32(pk, "adam_v", s->v, s->np);
    as_pack_kv_i64(pk, "adam_t", s->t);
    pack_f32(pk, "cm_adam_m", s->cm_m, s->cnp);
    pack_f32(pk, "cm_adam_v", s->cm_v, s->cnp);
    as_pack_kv_i64(pk, "cm_adam_t", s->ct);
    as_pack_kv_f64(pk, "wall_s", s->wall);
    as_pack_kv_i64(pk, "total_episodes", s->total_episodes);
    as_pack_kv_f64(pk, "minutes", s->minutes);
    /* the hyperparameters the policy record does not carry */
    as_pack_kv_i64(pk, "imitate", s->hp.imitate);
    as_pack_kv_f64(pk, "pieces", s->hp.pieces);
    as_pack_kv_i64(pk, "cost_steps", s->hp.cost_steps);
    as_pack_kv_i64(pk, "buffer", s->hp.buffer);
    as_pack_kv_i64(pk, "select_every", s->hp.select_every);
    as_pack_kv_i64(pk, "select_tasks", s->hp.select_tasks);
    as_pack_kv_i64(pk, "refine_every", s->hp.refine_every);
    as_pack_kv_i64(pk, "refine_tasks", s->hp.refine_tasks);
    as_pack_kv_i64(pk, "refine_steps", s->hp.refine_steps);
    as_pack_kv_str(pk, "checkpoint", "as-rl");
}

void as_rl_write_policy(as_writer *w, const as_policy *p, const as_costmodel *cm)
{
    as_policy_write(p, w, 0, NULL, NULL);
    as_costmodel_write(cm, w);
}

static void pack_run_id(msgpack_packer *pk, void *ctx) { as_pack_kv_i64(pk, "run_id", *(const int64_t *)ctx); }

void as_rl_log_header(as_writer *w, int argc, char **argv, int64_t run_id)
{
    as_writer_header_extra(w, "as-rl", argc, argv, 1, pack_run_id, &run_id);
}

/* path's records through as_read_records, path read as the file it names ("-" too: a file
 * of that name here, not standard input, as when these readers opened it themselves) */
static int read_file(const char *path, as_record_fn fn, void *ctx, char *err, size_t errlen)
{
    char *const files[1] = { (char *)(strcmp(path, "-") ? path : "./-") };
    return as_read_records(files, 1, fn, ctx, err, errlen);
}

/* as_rl_log_check's reading: the first header that names no run or another run stops it */
typedef struct {
    const char *path;
    int64_t run_id, id;
    int other;              /* such a header was found: err says so */
} log_check_ctx;

static int log_check_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    log_check_ctx *x = ctx;
    if (!as_rec_is(rec, "header") || (!as_obj_i64(&rec->obj, "run_id", &x->id) && x->id == x->run_id)) return 0;
    x->other = 1;
    if (!as_obj_get(&rec->obj, "run_id"))
        snprintf(err, errlen, "--log %s: a log of another run (its header names no run, the checkpoint's is run %" PRId64
                 "); it is left as it is: move it away or give another --log", x->path, x->run_id);
    else
        snprintf(err, errlen, "--log %s: the log of another run (run %" PRId64 ", the checkpoint's is run %" PRId64
                 "); it is left as it is: move it away or give another --log", x->path, x->id, x->run_id);
    return 1;
}

int as_rl_log_check(const char *path, int64_t run_id, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode)) return 0;   /* nothing there, or a device */
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "--log %s: %s", path, strerror(errno)); return -1; }
    fclose(f);
    log_check_ctx x = { path, run_id, 0, 0 };
    char e2[1600];   /* a reader's message */
    if (!read_file(path, log_check_rec, &x, e2, sizeof e2)) return 0;
    if (x.other) snprintf(err, errlen, "%s", e2);
    else
        snprintf(err, errlen, "--log %s: not a training log of this run (%s); it is left as it is: move it away or "
                 "give another --log", path, e2);
    return -1;
}

static void write_checkpoint(const as_rl_cfg *c, const as_policy *p, const as_costmodel *cm, const as_rl_state *st)
{
    as_writer *w = as_writer_open(c->ckpt, 0, 0);
    as_rl_log_header(w, c->argc, c->argv, st->run_id);
    ck_ctx cc = { st };
    as_policy_write(p, w, CK_EXTRA + (st->best_episode >= 0 ? CK_EXTRA_BEST : 0), ck_extra, &cc);
    as_costmodel_write(cm, w);
    /* the buffer of measured shards, oldest first, as table ids and, when some entry is a
       piece of its table, the pieces ([c0, c1, r0, r1] per id, zeros: the whole table) */
    msgpack_packer *pk = as_writer_pk(w);
    int64_t tot = 0;
    for (int64_t i = 0; i < st->nbuf; i++) tot += st->buf[i].n;
    int64_t *off = as_malloc((size_t)(st->nbuf + 1) * sizeof *off), *ids = as_malloc((size_t)(tot ? tot : 1) * sizeof *ids);
    int64_t *pcs = as_malloc((size_t)(tot ? tot : 1) * 4 * sizeof *pcs);
    double *cost = as_malloc((size_t)(st->nbuf ? st->nbuf : 1) * sizeof *cost);
    int64_t o = 0;
    int anyp = 0;
    for (int64_t j = 0; j < st->nbuf; j++) {
        const buf_entry *e = &st->buf[(st->head + j) % st->cap];
        off[j] = o;
        for (int64_t i = 0; i < e->n; i++) {
            const as_features *f = &c->feat[e->pos[i]];
            const int64_t q[4] = { f->piece.c0, f->piece.c1, f->piece.r0, f->piece.r1 };
            memcpy(pcs + 4 * o, q, sizeof q);
            anyp |= !as_piece_whole(&f->piece);
            ids[o++] = f->id;
        }
        cost[j] = e->cost;
    }
    off[st->nbuf] = o;
    int64_t s1[1] = { st->nbuf + 1 }, s2[1] = { tot }, s3[1] = { st->nbuf }, s4[2] = { tot, 4 };
    msgpack_pack_map(pk, 4 + anyp);
    as_pack_kv_str(pk, "kind", "rl_buffer");
    as_pack_kv_array(pk, "off", AS_DT_I64, off, 1, s1);
    as_pack_kv_array(pk, "ids", AS_DT_I64, ids, 1, s2);
    if (anyp) as_pack_kv_array(pk, "pieces", AS_DT_I64, pcs, 2, s4);
    as_pack_kv_array(pk, "cost_ms", AS_DT_F64, cost, 1, s3);
    as_writer_end_record(w);
    free(off); free(ids); free(pcs); free(cost);
    /* the run's log so far */
    if (st->loglen) as_writer_raw(w, st->log, st->loglen);
    as_writer_close(w);
}

/* the optimiser and run state of a checkpoint's `policy` record (the policy itself, p, was
 * read by as_policy_read); every field range-checked, 0 or -1 with err */
static int read_ck_state(const msgpack_object *o, const as_policy *p, as_rl_state *st, char *err, size_t errlen)
{
    const as_policy_info *in = as_policy_cmeta(p);
    char e2[300];
    if (!as_obj_streq(as_obj_get(o, "checkpoint"), "as-rl")) {
        snprintf(err, errlen, "'checkpoint' is not \"as-rl\"");
        return -1;
    }
    /* the training fields as_policy_read takes as optional: a checkpoint continues from them */
    static const char *const need[] = { "seed", "episodes", "updates", "steps", "evals", "reward", "lr", "entropy_cost",
                                        "baseline_cost", "clip", "batch", "actors", NULL };
    for (int i = 0; need[i]; i++)
        if (!as_obj_get(o, need[i])) { snprintf(err, errlen, "missing field '%s'", need[i]); return -1; }
    /* Adam: moments finite, second moments >= 0; the policy's step is its update count */
    if (as_field_f32_array(o, "adam_m", st->np, -FLT_MAX, FLT_MAX, st->m, e2, sizeof e2) ||
        as_field_f32_array(o, "adam_v", st->np, 0, FLT_MAX, st->v, e2, sizeof e2) ||
        as_field_f32_array(o, "cm_adam_m", st->cnp, -FLT_MAX, FLT_MAX, st->cm_m, e2, sizeof e2) ||
        as_field_f32_array(o, "cm_adam_v", st->cnp, 0, FLT_MAX, st->cm_v, e2, sizeof e2) ||
        as_field_i64(o, "adam_t", in->updates, in->updates, &st->t, e2, sizeof e2) ||
        as_field_i64(o, "cm_adam_t", 0, AS_RL_MAX_STEP, &st->ct, e2, sizeof e2) ||
        as_field_f64(o, "wall_s", 0, AS_RL_MAX_WALL, &st->wall, e2, sizeof e2) ||
        as_field_i64(o, "total_episodes", 0, AS_POLICY_MAX_EPISODES, &st->total_episodes, e2, sizeof e2) ||
        as_field_f64(o, "minutes", 0, AS_RL_MAX_MINUTES, &st->minutes, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    /* the hyperparameters: the policy record's (range-checked by as_policy_read) and ours */
    as_rl_hparams *hp = &st->hp;
    int64_t cs, rs;
    hp->bench = !strcmp(in->reward, "bench");
    hp->seed = in->seed;
    hp->lr = in->lr; hp->entropy = in->entropy; hp->baseline = in->baseline; hp->clip = in->clip;
    hp->batch = (int)in->batch;
    if (as_field_i64(o, "imitate", 0, AS_POLICY_MAX_EPISODES, &hp->imitate, e2, sizeof e2) ||
        as_field_i64(o, "cost_steps", 0, AS_RL_MAX_STEPS, &cs, e2, sizeof e2) ||
        as_field_i64(o, "buffer", 1, AS_RL_MAX_BUFFER, &hp->buffer, e2, sizeof e2) ||
        as_field_i64(o, "select_every", 0, AS_POLICY_MAX_EPISODES, &hp->select_every, e2, sizeof e2) ||
        as_field_i64(o, "select_tasks", hp->select_every > 0, AS_POLICY_MAX_EPISODES, &hp->select_tasks, e2, sizeof e2) ||
        as_field_i64(o, "refine_every", 0, AS_POLICY_MAX_EPISODES, &hp->refine_every, e2, sizeof e2) ||
        as_field_i64(o, "refine_tasks", hp->refine_every > 0, AS_POLICY_MAX_EPISODES, &hp->refine_tasks, e2, sizeof e2) ||
        as_field_i64(o, "refine_steps", 0, AS_RL_MAX_STEPS, &rs, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    hp->pieces = 0;   /* absent in a checkpoint of a run without it */
    if (as_obj_get(o, "pieces") && as_field_f64(o, "pieces", 0, 1, &hp->pieces, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    hp->cost_steps = (int)cs;
    hp->refine_steps = (int)rs;
    if ((st->total_episodes > 0) == (st->minutes > 0)) {
        snprintf(err, errlen, "the budget: 'total_episodes' = %" PRId64 " and 'minutes' = %g (exactly one is above 0)",
                 st->total_episodes, st->minutes);
        return -1;
    }
    /* model selection's best weights so far */
    if (as_obj_get(o, "best_episode")) {
        if (!hp->select_every) { snprintf(err, errlen, "model selection: 'best_episode' but 'select_every' = 0"); return -1; }
        if (as_field_i64(o, "best_episode", 0, in->episodes, &st->best_episode, e2, sizeof e2) ||
            as_field_f64(o, "best_score", 0, 1, &st->best_score, e2, sizeof e2) ||
            as_field_f32_array(o, "best_params", st->np, -FLT_MAX, FLT_MAX, st->best_w, e2, sizeof e2) ||
            as_field_f32_array(o, "best_cm_params", st->cnp, -FLT_MAX, FLT_MAX, st->best_cm, e2, sizeof e2)) {
            snprintf(err, errlen, "model selection: %s", e2);
            st->best_episode = -1;
            return -1;
        }
    }
    return 0;
}

/* the optional `pieces` of an `rl_buffer` record of nids ids: int64 [nids, 4], each row
 * zeros (the whole table) or a piece as lib/records/piece.h parses one; *out malloc'd [nids] or
 * NULL (absent: every entry whole). 0 or -1 with err */
static int read_ck_pieces(const msgpack_object *o, int64_t nids, as_piece **out, char *err, size_t errlen)
{
    *out = NULL;
    const msgpack_object *v = as_obj_get(o, "pieces");
    if (!v || v->type == MSGPACK_OBJECT_NIL) return 0;
    as_array a;
    char e2[256];
    if (as_obj_array(o, "pieces", &a, e2, sizeof e2)) {
        snprintf(err, errlen, "rl_buffer: %s", e2);
        return -1;
    }
    if (a.ndim != 2 || a.dtype > AS_DT_U64 || a.shape[0] != nids || a.shape[1] != 4) {
        snprintf(err, errlen, "rl_buffer: 'pieces' must be an integer array [%" PRId64 ", 4], one [c0, c1, r0, r1] per id",
                 nids);
        return -1;
    }
    int64_t *q = as_malloc((size_t)(nids ? nids : 1) * 4 * sizeof *q);
    as_array_get_i64(&a, 0, a.n, q);
    as_piece *p = as_malloc((size_t)(nids ? nids : 1) * sizeof *p);
    const int64_t maxd = as_limit(AS_LIM_DIM), maxr = as_limit(AS_LIM_ROWS);
    for (int64_t i = 0; i < nids; i++) {
        const int64_t *r = q + 4 * i;
        p[i] = (as_piece){ r[0], r[1], r[2], r[3] };
        int whole = !r[0] && !r[1] && !r[2] && !r[3];
        if (!whole && !(r[0] >= 0 && r[1] > r[0] && r[1] <= maxd && r[2] >= 0 && r[3] > r[2] && r[3] <= maxr)) {
            snprintf(err, errlen, "rl_buffer pieces[%" PRId64 "] = [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] is not a "
                     "piece: 0 <= c0 < c1 <= %" PRId64 ", 0 <= r0 < r1 <= %" PRId64 ", or all 0 for the whole table", i, r[0],
                     r[1], r[2], r[3], maxd, maxr);
            free(q);
            free(p);
            return -1;
        }
    }
    free(q);
    *out = p;
    return 0;
}

/* an `rl_buffer` record into st->buf (table ids kept as -1 - id, and the pieces, until
 * as_rl_train resolves them): at most AS_RL_MAX_BUFFER shards of 1..AS_LIM_TABLES tables,
 * ids within AS_LIM_TABLE_ID, pieces as read_ck_pieces reads them, costs finite and above 0
 * (the cost model's training data, as `cost` records); 0 or -1 with err */
static int read_ck_buffer(const msgpack_object *o, as_rl_state *st, char *err, size_t errlen)
{
    as_array a1, a2, a3;
    char e2[256];
    if (as_obj_array(o, "off", &a1, e2, sizeof e2) || as_obj_array(o, "ids", &a2, e2, sizeof e2) ||
        as_obj_array(o, "cost_ms", &a3, e2, sizeof e2)) {
        snprintf(err, errlen, "rl_buffer: %s", e2);
        return -1;
    }
    if (a1.ndim != 1 || a2.ndim != 1 || a3.ndim != 1 || a1.dtype > AS_DT_U64 || a2.dtype > AS_DT_U64 ||
        a3.n != a1.n - 1) {
        snprintf(err, errlen, "rl_buffer: 'off' [n+1] and 'ids' must be integer arrays, 'cost_ms' [n] numbers");
        return -1;
    }
    int64_t nb = a3.n, maxn = as_limit(AS_LIM_TABLES), maxid = as_limit(AS_LIM_TABLE_ID);
    if (nb > AS_RL_MAX_BUFFER) {
        snprintf(err, errlen, "rl_buffer: %" PRId64 " shards, more than %d (--buffer)", nb, AS_RL_MAX_BUFFER);
        return -1;
    }
    int64_t *off = as_malloc((size_t)a1.n * sizeof *off), *ids = as_malloc((size_t)(a2.n ? a2.n : 1) * sizeof *ids);
    double *cost = as_malloc((size_t)(nb ? nb : 1) * sizeof *cost);
    as_piece *pcs = NULL;
    as_array_get_i64(&a1, 0, a1.n, off);
    as_array_get_i64(&a2, 0, a2.n, ids);
    as_array_get_f64(&a3, 0, nb, cost);
    int rc = -1;
    if (off[0] != 0 || off[nb] != a2.n) {
        snprintf(err, errlen, "rl_buffer: 'off' must start at 0 and end at the %" PRId64 " ids", a2.n);
        goto out;
    }
    for (int64_t j = 0; j < nb; j++)
        if (off[j + 1] <= off[j] || off[j + 1] - off[j] > maxn) {
            snprintf(err, errlen, "rl_buffer: shard %" PRId64 " holds %" PRId64 " tables, not 1..%" PRId64 " (%s raises the limit)",
                     j, off[j + 1] - off[j], maxn, as_limit_env(AS_LIM_TABLES));
            goto out;
        }
    for (int64_t i = 0; i < a2.n; i++)
        if (ids[i] < 0 || ids[i] > maxid) {
            snprintf(err, errlen, "rl_buffer ids[%" PRId64 "] = %" PRId64 " is not a table id in 0..%" PRId64, i, ids[i], maxid);
            goto out;
        }
    for (int64_t j = 0; j < nb; j++)
        if (!isfinite(cost[j]) || !(cost[j] > 0)) {
            snprintf(err, errlen, "rl_buffer cost_ms[%" PRId64 "] = %g is not a positive finite cost", j, cost[j]);
            goto out;
        }
    if (read_ck_pieces(o, a2.n, &pcs, err, errlen)) goto out;
    for (int64_t i = 0; i < st->nbuf; i++) { free(st->buf[i].pos); free(st->buf[i].pc); }
    free(st->buf);
    st->cap = nb > 0 ? nb : 1;
    st->buf = as_calloc((size_t)st->cap, sizeof *st->buf);
    st->nbuf = st->head = 0;
    for (int64_t j = 0; j < nb; j++) {
        buf_entry *e = &st->buf[st->nbuf++];
        e->n = off[j + 1] - off[j];
        e->pos = as_malloc((size_t)e->n * sizeof *e->pos);
        for (int64_t i = 0; i < e->n; i++) e->pos[i] = -1 - ids[off[j] + i];
        if (pcs && as_pieces_any(pcs + off[j], e->n)) {
            e->pc = as_malloc((size_t)e->n * sizeof *e->pc);
            memcpy(e->pc, pcs + off[j], (size_t)e->n * sizeof *e->pc);
        }
        e->cost = cost[j];
    }
    rc = 0;
out:
    free(off); free(ids); free(cost); free(pcs);
    return rc;
}

/* as_rl_load_checkpoint's reading of the file as_policy_load read: the headers, the log's
 * `train` records, the first `policy` record's optimiser and run state, the `rl_buffer` */
typedef struct {
    const char *path;
    as_policy *p;
    as_rl_state *st;
    int got, nbuffers;      /* the policy record was read; rl_buffer records */
    int failed;             /* a record was bad: err says which */
    char he[400];           /* a bad header's message, judged at the end */
    int hbad;
} ck_read;

/* the run's identity; every header of the file names the same run (judged once the file is
   known to be a checkpoint, not a policy file) */
static void ck_header(ck_read *x, const as_record *rec)
{
    int64_t id;
    char e3[300];
    if (x->hbad) return;
    if (as_field_i64(&rec->obj, "run_id", 1, INT64_MAX, &id, e3, sizeof e3)) {
        snprintf(x->he, sizeof x->he, "record %" PRIu64 ": checkpoint: header: %s", rec->index, e3);
        x->hbad = 1;
    } else if (x->st->run_id && id != x->st->run_id) {
        snprintf(x->he, sizeof x->he, "record %" PRIu64 ": checkpoint: a header of another run (run_id %" PRId64 ", not %" PRId64 ")",
                 rec->index, id, x->st->run_id);
        x->hbad = 1;
    } else x->st->run_id = id;
}

/* the log up to the checkpoint: one record per update, in order; 0 or -1 with e2 */
static int ck_train(ck_read *x, const as_record *rec, char *e2, size_t e2len)
{
    as_rl_state *st = x->st;
    int64_t u, e;
    char e3[300];
    if (rec->rawlen > AS_RL_MAX_TRAIN_RECORD) {
        snprintf(e2, e2len, "checkpoint: a train record of %zu bytes (at most %d)", rec->rawlen, AS_RL_MAX_TRAIN_RECORD);
        return -1;
    }
    if (as_field_i64(&rec->obj, "update", st->nlog + 1, st->nlog + 1, &u, e3, sizeof e3) ||
        as_field_i64(&rec->obj, "episode", st->log_episode, as_policy_cmeta(x->p)->episodes, &e, e3, sizeof e3)) {
        snprintf(e2, e2len, "checkpoint: train record: %s", e3);
        return -1;
    }
    log_append(st, rec->raw, rec->rawlen, e);
    return 0;
}

/* one record of the checkpoint; a bad one: err "PATH: record N: what" */
static int ck_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    ck_read *x = ctx;
    char e2[512] = "", e3[400];
    int bad = 0;
    if (as_rec_is(rec, "header")) ck_header(x, rec);
    else if (as_rec_is(rec, "train")) bad = ck_train(x, rec, e2, sizeof e2);
    else if (as_rec_is(rec, "policy") && !x->got) {
        /* the first policy record, the one as_policy_load read */
        if (!as_obj_get(&rec->obj, "checkpoint")) { snprintf(e2, sizeof e2, "a policy file, not a checkpoint (no optimiser state)"); bad = 1; }
        else if (read_ck_state(&rec->obj, x->p, x->st, e3, sizeof e3)) { snprintf(e2, sizeof e2, "checkpoint: %s", e3); bad = 1; }
        else x->got = 1;
    } else if (as_rec_is(rec, "rl_buffer")) {
        if (++x->nbuffers > 1) { snprintf(e2, sizeof e2, "checkpoint: a second rl_buffer record (a checkpoint holds one)"); bad = 1; }
        else if (read_ck_buffer(&rec->obj, x->st, e3, sizeof e3)) { snprintf(e2, sizeof e2, "checkpoint: %s", e3); bad = 1; }
    }
    if (!bad) return 0;
    x->failed = 1;
    snprintf(err, errlen, "%s: record %" PRIu64 ": %s", x->path, rec->index, e2);
    return -1;
}

/* the whole checkpoint read (its policy record found): a bad header, the log against the
 * policy's updates, the buffer against its size; 0 or -1 with e2 */
static int ck_check(const ck_read *x, char *e2, size_t e2len)
{
    const as_rl_state *st = x->st;
    const as_policy_info *pin = as_policy_cmeta(x->p);
    if (x->hbad) {
        snprintf(e2, e2len, "%s", x->he);
        return -1;
    }
    if (st->nlog != pin->updates || (st->nlog && st->log_episode != pin->episodes)) {
        snprintf(e2, e2len, "checkpoint: %" PRId64 " train records up to episode %" PRId64 ", but %" PRId64
                 " updates up to episode %" PRId64 " (one record per update)", st->nlog, st->log_episode, pin->updates,
                 pin->episodes);
        return -1;
    }
    if (st->nbuf > st->hp.buffer) {
        snprintf(e2, e2len, "checkpoint: rl_buffer holds %" PRId64 " shards, more than its 'buffer' of %" PRId64, st->nbuf,
                 st->hp.buffer);
        return -1;
    }
    return 0;
}

int as_rl_load_checkpoint(const char *path, as_policy **pp, as_costmodel **cmp, as_rl_state **stp, char *err,
                          size_t errlen)
{
    *pp = NULL; *cmp = NULL; *stp = NULL;
    as_policy *p = NULL;
    as_costmodel *cm = NULL;
    if (as_policy_load(path, &p, &cm, err, errlen)) return -1;
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); goto bad; }
    fclose(f);
    int64_t np, cnp;
    as_policy_params(p, &np);
    as_costmodel_params(cm, &cnp);
    ck_read x = { path, p, state_new(np, cnp, 1), 0, 0, 0, "", 0 };
    char e2[1600];   /* a reader's message, or ck_check's */
    int rc = read_file(path, ck_rec, &x, e2, sizeof e2);
    if (rc && x.failed) snprintf(err, errlen, "%s", e2);
    else if (rc) snprintf(err, errlen, "%s: %.511s", path, e2);   /* as a 512-byte buffer held it */
    else if (!x.got) snprintf(err, errlen, "%s: no policy record", path);
    else if (ck_check(&x, e2, sizeof e2)) { snprintf(err, errlen, "%s: %s", path, e2); rc = -1; }
    if (rc || !x.got) {
        as_rl_state_free(x.st);
        goto bad;
    }
    *pp = p; *cmp = cm; *stp = x.st;
    return 0;
bad:
    as_policy_free(p);
    as_costmodel_free(cm);
    return -1;
}

/* ---- the learner ------------------------------------------------------------------------------ */

/* cfg->feat's items by (table id, piece): a resumed checkpoint's buffer names its entries so */
typedef struct {
    int64_t id;
    as_piece p;
    int64_t pos;            /* in cfg->feat */
} feat_key;

static int cmp_feat_key(const void *a, const void *b)
{
    const feat_key *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return as_piece_cmp(&x->p, &y->p);
}

/* the keys of c->feat[0..nfeat), sorted (malloc'd) */
static feat_key *feat_keys(const as_rl_cfg *c)
{
    feat_key *k = as_malloc((size_t)(c->nfeat ? c->nfeat : 1) * sizeof *k);
    for (int64_t i = 0; i < c->nfeat; i++) k[i] = (feat_key){ c->feat[i].id, c->feat[i].piece, i };
    if (c->nfeat > 1) qsort(k, (size_t)c->nfeat, sizeof *k, cmp_feat_key);
    return k;
}

/* the position in c->feat of table id's piece p (NULL: the whole table), or -1 */
static int64_t feat_pos(const as_rl_cfg *c, const feat_key *k, int64_t id, const as_piece *p)
{
    feat_key want = { id, p ? *p : AS_PIECE_WHOLE, 0 };
    int64_t lo = 0, hi = c->nfeat - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int r = cmp_feat_key(&k[mid], &want);
        if (!r) return k[mid].pos;
        if (r < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* `steps` Adam steps of the cost model on minibatches drawn from the buffer (stream `stream`
 * of the seed's cost-buffer generator); *loss = their mean loss (NaN: no step) */
static void cost_updates(const as_rl_cfg *c, as_costmodel *cm, as_rl_state *st, uint64_t stream, int steps, float *g,
                         double *loss)
{
    int64_t nb = st->nbuf, B = c->cost_batch < nb ? c->cost_batch : nb;
    *loss = NAN;
    if (B < 1 || steps < 1) return;
    int64_t cnp;
    float *w = as_costmodel_params(cm, &cnp);
    int64_t *off = as_malloc((size_t)(B + 1) * sizeof *off), *sh = as_malloc((size_t)B * sizeof *sh);
    int64_t *pick = as_malloc((size_t)B * sizeof *pick);
    double *cost = as_malloc((size_t)B * sizeof *cost);
    int64_t ncap = 0, *idx = NULL;   /* the drawn entries' tables, grown to the largest draw */
    as_rng rng;
    as_rng_seed(&rng, c->seed ^ 0x636f737462756666ULL, stream);
    as_nn_adam_cfg ac = AS_NN_ADAM_DEFAULT((float)1e-3);
    double ls = 0;
    for (int s = 0; s < steps; s++) {
        int64_t o = 0;
        for (int64_t b = 0; b < B; b++) {   /* with replacement */
            pick[b] = (int64_t)as_rng_below(&rng, (uint64_t)nb);
            o += st->buf[pick[b]].n;
        }
        if (o > ncap) {
            ncap = o;
            free(idx);
            idx = as_malloc((size_t)ncap * sizeof *idx);
        }
        o = 0;
        for (int64_t b = 0; b < B; b++) {
            const buf_entry *e = &st->buf[pick[b]];
            off[b] = o;
            memcpy(idx + o, e->pos, (size_t)e->n * sizeof *idx);
            o += e->n;
            cost[b] = e->cost;
            sh[b] = b;
        }
        off[B] = o;
        as_costset set = { c->feat, c->nfeat, off, idx, cost, B };
        memset(g, 0, (size_t)cnp * sizeof *g);
        ls += as_costmodel_loss_grad(cm, &set, sh, B, g);
        st->ct++;
        as_nn_adam(w, g, st->cm_m, st->cm_v, cnp, &ac, st->ct);
    }
    *loss = ls / steps;
    /* new weights: the held-out evaluation as-costfit stored describes the old ones */
    as_costmodel_meta(cm)->heldout.present = 0;
    free(off); free(sh); free(pick); free(cost); free(idx);
}

/* ---- measured refinement ------------------------------------------------------------------ */

typedef struct {
    int64_t round, plans, shards;        /* measured this round (shards: those kept) */
    int64_t noisy;                       /* shards left out: their spread stayed above the
                                            noise threshold */
    double scale;                        /* median measured / predicted cost of those shards
                                            (1 when none): the drift their costs are divided by */
    double mape;                         /* the model's mean |pred - meas| / meas on those
                                            shards after that division, before it trains on
                                            them (held out) */
    double pred_balance, meas_balance;   /* the measured plans' mean predicted and measured balance */
    double loss;                         /* mean cost-model loss of the round's steps */
    double seconds;
} refine_out;

/* the median of cost[i] / pred[i] over the entries with both above 0; 1 when there is none */
static double refine_scale(const double *cost, const double *pred, int64_t n)
{
    double *r = as_malloc((size_t)(n ? n : 1) * sizeof *r);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) if (cost[i] > 0 && pred[i] > 0) r[m++] = cost[i] / pred[i];
    double med = m ? as_stats_median(r, m) : 1;
    free(r);
    return med;
}

/* a refinement round's kept shards: rpos[roff[i] .. roff[i+1]), measured rcost[i], predicted
 * rpred[i]; at most every shard and every table of the round's tasks. sp, sm: the sums of
 * the feasible plans' predicted and measured balances */
typedef struct {
    int64_t nr, npos, *roff, *rpos;
    double *rcost, *rpred;
    double sp, sm;
} refine_kept;

/* task t's plan as as-plan --alg autoshard would make it (best of the automatic number of
 * candidates, judged by this model: the model learns where its choice was wrong), its
 * shards predicted and measured when it is feasible; the quiet ones kept in k. 0, or
 * nonzero with err */
static int refine_task(rl_ctx *x, const as_policy *p, const as_plan_model *pm, const as_costmodel *cm, const as_rl_task *t,
                       refine_out *o, refine_kept *k, int64_t *nmeas, char *err, size_t errlen)
{
    const as_rl_cfg *c = x->c;
    int64_t K = t->K;
    int64_t *assign = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *assign);
    double *pred = as_malloc((size_t)K * sizeof *pred), *costs = as_malloc((size_t)K * sizeof *costs);
    uint8_t *noisy = as_malloc((size_t)K * sizeof *noisy);
    const as_features **fs = as_malloc((size_t)(t->n ? t->n : 1) * sizeof *fs);
    as_policy_planner pp = { p, pm, 0, c->seed };
    int rc = as_policy_place(&pp, t->t, t->n, K, t->cap, assign, err, errlen);
    int feasible = !rc;
    for (int64_t i = 0; i < t->n && feasible; i++) feasible = assign[i] >= 0;
    int64_t *start = NULL, *order = NULL;
    if (feasible) {
        group_plan(t, assign, &start, &order);
        for (int64_t g = 0; g < start[K]; g++) fs[g] = t->t[order[g]];
        for (int64_t s = 0; s < K; s++)
            pred[s] = start[s + 1] > start[s] ? as_costmodel_predict(cm, fs + start[s], (int)(start[s + 1] - start[s])) : 0;
        rc = measure_plan(x, t, assign, costs, noisy, nmeas, err, errlen);
    }
    if (!rc && feasible) {
        o->plans++;
        k->sp += balance_of(pred, K);
        k->sm += balance_of(costs, K);
        for (int64_t s = 0; s < K; s++) {
            if (start[s + 1] == start[s]) continue;
            if (noisy[s]) { o->noisy++; continue; }   /* not training data */
            k->roff[k->nr] = k->npos;
            for (int64_t g = start[s]; g < start[s + 1]; g++) k->rpos[k->npos++] = fs[g] - c->feat;
            k->rcost[k->nr] = costs[s];
            k->rpred[k->nr++] = pred[s];
        }
    }
    free(assign); free(pred); free(costs); free(noisy); free(fs); free(start); free(order);
    return rc;
}

/* the round's kept shards into the buffer. Drift: the machine's speed changes over minutes
 * (other tenants, clocks), so these costs may sit on another scale than the buffer's older
 * ones. Only relative costs decide a plan's balance, so the round's costs are divided by
 * their median ratio to the model's predictions before they join the buffer: the model
 * keeps its scale and learns where it is wrong relative to the other shards */
static void refine_keep(as_rl_state *st, refine_kept *k, refine_out *o)
{
    o->scale = refine_scale(k->rcost, k->rpred, k->nr);
    double se = 0;
    k->roff[k->nr] = k->npos;
    for (int64_t i = 0; i < k->nr; i++) {
        double v = k->rcost[i] / o->scale;
        buf_push(st, k->rpos + k->roff[i], k->roff[i + 1] - k->roff[i], v);
        se += fabs(k->rpred[i] - v) / v;
    }
    o->shards = k->nr;
    o->mape = k->nr ? se / (double)k->nr : NAN;
}

/* round r (1, 2, ...): the plans of training tasks (r-1)n .. rn-1 (mod the number of tasks)
 * as as-plan makes them (as_policy_place: the best of the automatic number of candidates by
 * the current model, seeded by c->seed), every shard of the feasible ones measured and the
 * quiet ones added to the buffer, then
 * refine_steps cost-model steps on the buffer; model selection starts again */
static int refine_round(rl_ctx *x, const as_policy *p, as_costmodel *cm, as_rl_state *st, int64_t round, float *cg,
                        refine_out *o, int64_t *nmeas, char *err, size_t errlen)
{
    const as_rl_cfg *c = x->c;
    memset(o, 0, sizeof *o);
    o->round = round;
    double t0 = as_now();
    int64_t n = c->refine_tasks < x->ntasks ? c->refine_tasks : x->ntasks;
    as_plan_model pm;
    as_plan_model_of(&pm, cm);
    int rc = 0;
    int64_t maxs = 0, maxp = 0;
    /* the round's tasks: (round - 1) n + j modulo the tasks, without overflow */
    uint64_t first = (uint64_t)(round - 1) % (uint64_t)x->ntasks * (uint64_t)n % (uint64_t)x->ntasks;
    for (int64_t j = 0; j < n; j++) {
        const as_rl_task *t = &x->tasks[(first + (uint64_t)j) % (uint64_t)x->ntasks];
        maxs += t->K;
        maxp += t->n;
    }
    refine_kept k = { 0, 0, as_malloc((size_t)(maxs + 1) * sizeof *k.roff), as_malloc((size_t)(maxp ? maxp : 1) * sizeof *k.rpos),
                      as_malloc((size_t)(maxs ? maxs : 1) * sizeof *k.rcost), as_malloc((size_t)(maxs ? maxs : 1) * sizeof *k.rpred),
                      0, 0 };
    for (int64_t j = 0; j < n && !rc; j++)
        rc = refine_task(x, p, &pm, cm, &x->tasks[(first + (uint64_t)j) % (uint64_t)x->ntasks], o, &k, nmeas, err, errlen);
    if (!rc) refine_keep(st, &k, o);
    free(k.roff); free(k.rpos); free(k.rcost); free(k.rpred);
    if (rc) return -1;
    o->pred_balance = o->plans ? k.sp / (double)o->plans : NAN;
    o->meas_balance = o->plans ? k.sm / (double)o->plans : NAN;
    /* streams 2^40 + r: apart from the per-update streams of bench rewards */
    cost_updates(c, cm, st, (UINT64_C(1) << 40) + (uint64_t)round, c->refine_steps, cg, &o->loss);
    st->best_score = -INFINITY;
    st->best_episode = -1;
    o->seconds = as_now() - t0;
    return 0;
}

/* the update's `train` record: kept in st (checkpoints carry the log) and written to c->log */
static void log_record(const as_rl_cfg *c, as_rl_state *st, msgpack_sbuffer *sb, const as_policy *p, double wall,
                       const as_policy_stats *s, double pred_bal, double gnorm, double lr, double ev_pred, double ev_meas,
                       double ev_cg, double meas_bal, double cm_loss, double sel, const refine_out *rf)
{
    const as_policy_info *in = as_policy_cmeta(p);
    msgpack_sbuffer_clear(sb);
    msgpack_packer pk0, *pk = &pk0;
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    int nf = 15 + !isnan(ev_pred) + !isnan(ev_meas) + !isnan(ev_cg) + !isnan(meas_bal) + !isnan(cm_loss) + !isnan(sel) +
             (rf ? 6 + !isnan(rf->mape) + !isnan(rf->pred_balance) + !isnan(rf->meas_balance) + !isnan(rf->loss) : 0);
    msgpack_pack_map(pk, (size_t)nf);
    as_pack_kv_str(pk, "kind", "train");
    as_pack_kv_i64(pk, "episode", in->episodes);
    as_pack_kv_i64(pk, "update", in->updates);
    as_pack_kv_i64(pk, "steps", in->steps);
    as_pack_kv_f64(pk, "wall_s", wall);
    as_pack_kv_i64(pk, "evals", in->evals);
    as_pack_kv_str(pk, "reward_source", in->reward);
    as_pack_kv_f64(pk, "reward", s->episodes ? s->reward / s->episodes : NAN);
    as_pack_kv_f64(pk, "pred_balance", pred_bal);
    as_pack_kv_f64(pk, "loss", s->loss);
    as_pack_kv_f64(pk, "pg_loss", s->pg);
    as_pack_kv_f64(pk, "value_loss", s->value);
    as_pack_kv_f64(pk, "entropy", s->steps ? s->entropy / s->steps : NAN);
    as_pack_kv_f64(pk, "grad_norm", gnorm);
    as_pack_kv_f64(pk, "lr", lr);
    if (!isnan(meas_bal)) as_pack_kv_f64(pk, "meas_balance", meas_bal);
    if (!isnan(ev_pred)) as_pack_kv_f64(pk, "eval_pred_balance", ev_pred);
    if (!isnan(ev_meas)) as_pack_kv_f64(pk, "eval_meas_balance", ev_meas);
    if (!isnan(ev_cg)) as_pack_kv_f64(pk, "eval_cost_greedy_balance", ev_cg);
    if (!isnan(cm_loss)) as_pack_kv_f64(pk, "cost_loss", cm_loss);
    if (!isnan(sel)) as_pack_kv_f64(pk, "select_balance", sel);
    if (rf) {
        as_pack_kv_i64(pk, "refine_round", rf->round);
        as_pack_kv_i64(pk, "refine_plans", rf->plans);
        as_pack_kv_i64(pk, "refine_shards", rf->shards);
        as_pack_kv_i64(pk, "refine_noisy", rf->noisy);
        as_pack_kv_f64(pk, "refine_scale", rf->scale);
        as_pack_kv_f64(pk, "refine_s", rf->seconds);
        if (!isnan(rf->mape)) as_pack_kv_f64(pk, "refine_mape", rf->mape);
        if (!isnan(rf->pred_balance)) as_pack_kv_f64(pk, "refine_pred_balance", rf->pred_balance);
        if (!isnan(rf->meas_balance)) as_pack_kv_f64(pk, "refine_meas_balance", rf->meas_balance);
        if (!isnan(rf->loss)) as_pack_kv_f64(pk, "refine_cost_loss", rf->loss);
    }
    log_append(st, sb->data, sb->size, in->episodes);
    if (c->log) as_writer_raw(c->log, sb->data, sb->size);
}

/* as_rl_train's configuration checked: 0, or -1 with err */
static int check_cfg(const as_rl_cfg *c, int64_t ntasks, char *err, size_t errlen)
{
    if (ntasks < 1) { snprintf(err, errlen, "no training tasks"); return -1; }
    if (c->batch < 1 || c->actors < 1) { snprintf(err, errlen, "batch and actors must be >= 1"); return -1; }
    if ((c->select_every > 0 && c->select_tasks < 1) || (c->refine_every > 0 && c->refine_tasks < 1)) {
        snprintf(err, errlen, "model selection and refinement need at least one task");
        return -1;
    }
    if (!(c->minutes >= 0) || c->episodes < 0 || (c->episodes == 0) == !(c->minutes > 0)) {
        snprintf(err, errlen, "the budget: episodes %" PRId64 ", minutes %g (exactly one above 0)", c->episodes, c->minutes);
        return -1;
    }
    if ((c->bench || c->refine_every > 0) && (!c->bcfg || !c->pool)) {
        snprintf(err, errlen, "measured %s needs a device and the tables", c->bench ? "rewards" : "refinement");
        return -1;
    }
    return 0;
}

/* a resumed run's state (a checkpoint's, in *state): the buffer's table ids resolved
   against this run's features, the ring resized to the configured size, the log's records up
   to the checkpoint written first; moved into *state. 0, or -1 with err */
static int resume_state(as_rl_state *state, const as_rl_task *tasks, int64_t ntasks, const as_rl_cfg *c, int64_t np,
                        int64_t cnp, char *err, size_t errlen)
{
    as_rl_state *st = state;
    /* resolve the buffer's table ids and resize the ring to the configured size */
    as_rl_state *ns = state_new(np, cnp, c->buffer);
    memcpy(ns->m, st->m, (size_t)np * sizeof *ns->m);
    memcpy(ns->v, st->v, (size_t)np * sizeof *ns->v);
    memcpy(ns->cm_m, st->cm_m, (size_t)cnp * sizeof *ns->cm_m);
    memcpy(ns->cm_v, st->cm_v, (size_t)cnp * sizeof *ns->cm_v);
    ns->t = st->t; ns->ct = st->ct; ns->wall = st->wall;
    memcpy(ns->best_w, st->best_w, (size_t)np * sizeof *ns->best_w);
    memcpy(ns->best_cm, st->best_cm, (size_t)cnp * sizeof *ns->best_cm);
    ns->best_score = st->best_score; ns->best_episode = st->best_episode;
    /* a measured shard is a shard of a training task's plan or one of the input's cost
       records: none holds more tables than the largest of those */
    int64_t most = 0;
    for (int64_t i = 0; i < ntasks; i++) if (tasks[i].n > most) most = tasks[i].n;
    for (int64_t j = 0; j < c->nseed; j++) if (c->seed_off[j + 1] - c->seed_off[j] > most) most = c->seed_off[j + 1] - c->seed_off[j];
    for (int64_t j = 0; j < st->nbuf; j++)
        if (st->buf[j].n > most) {
            snprintf(err, errlen, "checkpoint: rl_buffer shard %" PRId64 " holds %" PRId64 " tables, more than any training "
                     "task or cost record of the input (%" PRId64 ")", j, st->buf[j].n, most);
            as_rl_state_free(ns);
            return -1;
        }
    /* a shard whose table or piece this input has no features for is left out: never a
       piece read as its whole table */
    feat_key *keys = feat_keys(c);
    int64_t dropped = 0;
    for (int64_t j = 0; j < st->nbuf; j++) {
        buf_entry *e = &st->buf[j];
        int ok = 1;
        for (int64_t i = 0; i < e->n && ok; i++) {
            int64_t pos = e->pos[i] < 0 ? feat_pos(c, keys, -1 - e->pos[i], e->pc ? &e->pc[i] : NULL) : e->pos[i];
            if (pos < 0) ok = 0;
            else e->pos[i] = pos;
        }
        if (ok) buf_push(ns, e->pos, e->n, e->cost);
        else dropped++;
    }
    free(keys);
    if (dropped)
        as_info("--resume: %" PRId64 " of the checkpoint's %" PRId64 " measured shards left out of the buffer: a table or "
                "piece of a table they hold has no features in the input", dropped, st->nbuf);
    ns->run_id = st->run_id;
    ns->log = st->log; ns->loglen = st->loglen; ns->logcap = st->logcap; ns->nlog = st->nlog; ns->log_episode = st->log_episode;
    st->log = NULL;
    /* the log continues: the records up to the checkpoint first */
    if (c->log && ns->loglen) as_writer_raw(c->log, ns->log, ns->loglen);
    /* the caller owns state: move ours into it */
    as_rl_state tmp = *state;
    *state = *ns;
    *ns = tmp;
    as_rl_state_free(ns);
    return 0;
}

/* the actor threads (c->actors of them) over a pool of episodes: a snapshot of the weights
   and the cost model, episodes from `next` to `limit`; returns the actors */
static rl_actor *actors_start(rl_pool *pl, rl_ctx *x, const as_policy *p, const as_costmodel *cm, const float *w,
                              int64_t np, int64_t next, int64_t limit)
{
    const as_rl_cfg *c = x->c;
    memset(pl, 0, sizeof *pl);
    pl->x = x;
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->items, NULL);
    pthread_cond_init(&pl->space, NULL);
    pl->np = np;
    pl->snap = as_malloc((size_t)np * sizeof *pl->snap);
    memcpy(pl->snap, w, (size_t)np * sizeof *pl->snap);
    pl->cm_snap = cm_clone(cm);
    pl->shape = as_policy_clone(p);
    pl->next = next;
    pl->limit = limit;
    pl->qcap = 2 * c->batch + c->actors;
    pl->q = as_calloc((size_t)pl->qcap, sizeof *pl->q);
    rl_actor *act = as_calloc((size_t)c->actors, sizeof *act);
    for (int i = 0; i < c->actors; i++) {
        act[i].pl = pl;
        pthread_create(&act[i].th, NULL, actor_main, &act[i]);
    }
    return act;
}

/* the actors told to stop, joined; the episodes left in the queue and the pool freed */
static void actors_stop(rl_pool *pl, rl_actor *act, int actors)
{
    pthread_mutex_lock(&pl->mu);
    pl->done = 1;
    pthread_cond_broadcast(&pl->space);
    pthread_cond_broadcast(&pl->items);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < actors; i++) pthread_join(act[i].th, NULL);
    for (int i = 0; i < pl->qn; i++) { rl_ep *e = pl->q[(pl->qhead + i) % pl->qcap]; ep_free(e); free(e); }
    free(pl->q);
    free(pl->snap);
    as_policy_free(pl->shape);
    as_costmodel_free(pl->cm_snap);
    free(act);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->items);
    pthread_cond_destroy(&pl->space);
}

/* B episodes (numbered from first) into eps: played here, or (pl not NULL) taken from the
   actors' queue. 0, or -1 with err */
static int gather(rl_ctx *x, rl_pool *pl, as_policy *p, as_costmodel *cm, int64_t first, int B, rl_ep *eps,
                  as_arena *ws, char *err, size_t errlen)
{
    int rc = 0;
    if (!pl) {
        for (int b = 0; b < B && !rc; b++)
            if (play(x, first + b, p, cm, &eps[b], ws, err, errlen)) rc = -1;
        return rc;
    }
    pthread_mutex_lock(&pl->mu);
    for (int b = 0; b < B; b++) {
        while (!pl->qn && !pl->failed) pthread_cond_wait(&pl->items, &pl->mu);
        if (pl->failed) { snprintf(err, errlen, "%s", pl->err); rc = -1; break; }
        rl_ep *e = pl->q[pl->qhead];
        pl->qhead = (pl->qhead + 1) % pl->qcap;
        pl->qn--;
        eps[b] = *e;
        free(e);
        pthread_cond_signal(&pl->space);
    }
    pthread_mutex_unlock(&pl->mu);
    return rc;
}

/* the end of a run: a finished run scores its last weights too, the checkpoint is written,
   the selected weights are handed back (the checkpoint keeps the latest, to continue from).
   0, or -1 with err */
static int finish(rl_ctx *x, as_policy *p, as_costmodel *cm, as_rl_state *st, int finished, char *err, size_t errlen)
{
    const as_rl_cfg *c = x->c;
    as_policy_info *in = as_policy_meta(p);
    int64_t np, cnp;
    float *w = as_policy_params(p, &np);
    as_costmodel_params(cm, &cnp);
    double last_sel = NAN;
    if (finished && c->select_every > 0 && st->best_episode != in->episodes &&
        select_step(x, p, cm, st, in->episodes, &last_sel, err, errlen))
        return -1;
    if (c->ckpt) write_checkpoint(c, p, cm, st);
    if (c->select_every > 0 && st->best_episode >= 0) {
        if (st->best_episode != in->episodes) {
            int64_t cnp2;
            memcpy(w, st->best_w, (size_t)np * sizeof *w);
            memcpy(as_costmodel_params(cm, &cnp2), st->best_cm, (size_t)cnp * sizeof *st->best_cm);
        }
        in->selected_episode = st->best_episode;
        in->selected_balance = st->best_score;
        in->select_tasks = c->select_tasks < x->ntasks ? c->select_tasks : x->ntasks;
    }
    return 0;
}

/* the batch's trajectories into trs (returns how many), the sums and counts of its predicted
   and measured balances, its measurements counted into *evals; with measured rewards, each
   episode's quiet measured shards go into the cost model's buffer */
static int batch_of(const as_rl_cfg *c, as_rl_state *st, rl_ep *eps, int B, as_traj **trs, double *pb, int *npb,
                    double *mb, int *nmb, int64_t *evals)
{
    int nt = 0;
    *pb = *mb = 0;
    *npb = *nmb = 0;
    for (int b = 0; b < B; b++) {
        if (eps[b].tr.L > 0) trs[nt++] = &eps[b].tr;
        if (eps[b].tr.feasible) { *pb += eps[b].pred_balance; (*npb)++; }
        if (!isnan(eps[b].meas_balance)) { *mb += eps[b].meas_balance; (*nmb)++; }
        *evals += eps[b].measured;
        if (c->bench && eps[b].off)
            for (int64_t k = 0; k < eps[b].K; k++)
                if (eps[b].off[k + 1] > eps[b].off[k] && !eps[b].noisy[k])
                    buf_push(st, eps[b].pos + eps[b].off[k], eps[b].off[k + 1] - eps[b].off[k], eps[b].cost[k]);
    }
    return nt;
}

/* one run of as_rl_train: what its updates share */
typedef struct {
    rl_ctx x;
    const as_rl_cfg *c;
    as_policy *p;
    as_costmodel *cm;
    as_policy_info *in;
    as_rl_state *st;                /* the caller's state (resumed), or the run's own */
    float *w, *g, *cg;              /* the policy's weights, their gradient; the cost model's */
    int64_t np, cnp;
    rl_ep *eps;                     /* [batch] */
    as_traj **trs;                  /* [batch] */
    as_arena play_ws, learn_ws;     /* the rollouts' buffers (one actor), the learner's */
    as_vtrace_cfg vc;
    msgpack_sbuffer lsb;            /* one train record */
    int64_t limit, last_ck;         /* the episodes to stop at; of the last checkpoint */
    double budget, t0, wall0;       /* seconds (0: none); the start, the checkpoint's wall */
    as_progress pr;
    rl_pool pl;
    rl_actor *act;
    int threaded;
} rl_run;

/* an update's figures for its `train` record */
typedef struct {
    as_policy_stats s;
    double pb, mb, gn, lr, cml;     /* balances' sums, gradient norm, learning rate, cost loss */
    int npb, nmb;
} rl_update;

/* the run's state: a fresh one (its buffer the input's measured shards), or the checkpoint's
   in state, resumed (resume_state); NULL with err */
static as_rl_state *run_state(as_rl_state *state, const as_rl_task *tasks, int64_t ntasks, const as_rl_cfg *c, int64_t np,
                              int64_t cnp, char *err, size_t errlen)
{
    if (state) return resume_state(state, tasks, ntasks, c, np, cnp, err, errlen) ? NULL : state;
    as_rl_state *st = state_new(np, cnp, c->buffer);
    st->run_id = c->run_id > 0 ? c->run_id : as_rl_new_run_id();
    for (int64_t j = 0; j < c->nseed; j++)
        buf_push(st, c->seed_pos + c->seed_off[j], c->seed_off[j + 1] - c->seed_off[j], c->seed_cost[j]);
    return st;
}

/* what the run learns with, into the state (checkpoints) and the policy's record */
static void run_hparams(as_rl_state *st, as_policy_info *in, const as_rl_task *tasks, int64_t ntasks, const as_rl_cfg *c)
{
    st->total_episodes = c->episodes;
    st->minutes = c->minutes;
    st->hp = (as_rl_hparams){ c->bench, c->seed, c->lr, c->entropy, c->baseline, c->clip, c->batch, c->imitate, c->cost_steps,
                              c->buffer > 0 ? c->buffer : 1, c->select_every, c->select_tasks, c->refine_every, c->refine_tasks, c->refine_steps,
                              c->pieces };
    snprintf(in->reward, sizeof in->reward, "%s", c->bench ? "bench" : "model");
    in->lr = c->lr; in->entropy = c->entropy; in->baseline = c->baseline; in->clip = c->clip;
    in->batch = c->batch; in->actors = c->actors; in->seed = c->seed;
    in->train_tasks = ntasks; in->task_tables = tasks[0].n; in->task_shards = tasks[0].K;
    in->selected_episode = -1;
}

/* the run set up: its state, the measuring session, the buffers, the actors; 0 or -1 with
   err (nothing left to free) */
static int run_begin(rl_run *R, as_policy *p, as_costmodel *cm, const as_rl_task *tasks, int64_t ntasks,
                     const as_rl_cfg *c, as_rl_state *state, char *err, size_t errlen)
{
    memset(R, 0, sizeof *R);
    R->c = c; R->p = p; R->cm = cm;
    R->w = as_policy_params(p, &R->np);
    as_costmodel_params(cm, &R->cnp);
    if (!(R->st = run_state(state, tasks, ntasks, c, R->np, R->cnp, err, errlen))) return -1;
    R->in = as_policy_meta(p);
    run_hparams(R->st, R->in, tasks, ntasks, c);
    msgpack_sbuffer_init(&R->lsb);
    R->x = (rl_ctx){ c, tasks, ntasks, PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };
    if (c->bcfg && c->pool && !(R->x.sess = as_bench_session_new(c->bcfg, c->pool, err, errlen))) {
        if (R->st != state) as_rl_state_free(R->st);
        msgpack_sbuffer_destroy(&R->lsb);
        return -1;
    }
    R->vc = (as_vtrace_cfg){ 1.0f, 1.0f, 1.0f, (float)c->baseline, (float)c->entropy };
    R->limit = c->episodes > 0 ? c->episodes : INT64_MAX / 2;
    if (c->halt_after > 0 && c->halt_after < R->limit) R->limit = c->halt_after;
    R->budget = c->minutes > 0 ? c->minutes * 60.0 : 0;
    R->t0 = as_now();
    R->wall0 = R->st->wall;
    R->g = as_malloc((size_t)R->np * sizeof *R->g);
    R->cg = as_malloc((size_t)R->cnp * sizeof *R->cg);
    R->eps = as_calloc((size_t)c->batch, sizeof *R->eps);
    R->trs = as_malloc((size_t)c->batch * sizeof *R->trs);
    as_progress_begin(&R->pr, c->progress, "episodes", c->episodes > 0 ? (double)c->episodes : R->budget);
    R->last_ck = R->in->episodes;
    R->threaded = c->actors > 1;
    if (R->threaded) R->act = actors_start(&R->pl, &R->x, p, cm, R->w, R->np, R->in->episodes, R->limit);
    return 0;
}

/* learn from the batch's B episodes: the policy's gradient and Adam step (the learning rate
   decays linearly over the budget), the cost model's steps with measured rewards */
static void learn(rl_run *R, int B, rl_update *u)
{
    const as_rl_cfg *c = R->c;
    as_rl_state *st = R->st;
    as_policy_info *in = R->in;
    const int nt = batch_of(c, st, R->eps, B, R->trs, &u->pb, &u->npb, &u->mb, &u->nmb, &in->evals);
    memset(R->g, 0, (size_t)R->np * sizeof *R->g);
    u->s = (as_policy_stats){ 0 };
    as_policy_loss_grad(R->p, R->trs, nt, &R->vc, R->g, &u->s, &R->learn_ws);
    u->gn = as_nn_clip(R->g, R->np, c->clip);
    double frac = c->episodes > 0 ? (double)in->episodes / (double)c->episodes
                                  : R->budget > 0 ? (R->wall0 + (as_now() - R->t0)) / R->budget : 0;
    if (frac > 1) frac = 1;
    u->lr = c->lr * (1.0 - frac);
    as_nn_adam_cfg ac = AS_NN_ADAM_DEFAULT((float)u->lr);
    st->t++;
    as_nn_adam(R->w, R->g, st->m, st->v, R->np, &ac, st->t);
    u->cml = NAN;
    if (c->bench) cost_updates(c, R->cm, st, (uint64_t)in->updates, c->cost_steps, R->cg, &u->cml);
    in->episodes += B;
    in->updates++;
    in->steps += u->s.steps;
    in->final_reward = u->s.episodes ? u->s.reward / u->s.episodes : 0;
}

/* measured refinement on multiples of refine_every, not at the end of the run: 1 when a
   round ran (*rf), 0 when none was due, -1 with err */
static int refine_due(rl_run *R, int B, refine_out *rf, char *err, size_t errlen)
{
    const as_rl_cfg *c = R->c;
    as_policy_info *in = R->in;
    if (!(c->refine_every > 0 && c->bcfg && c->pool && in->episodes / c->refine_every > (in->episodes - B) / c->refine_every &&
          (c->episodes <= 0 || in->episodes < c->episodes)))
        return 0;
    if (refine_round(&R->x, R->p, R->cm, R->st, in->episodes / c->refine_every, R->cg, rf, &in->evals, err, errlen)) return -1;
    as_info("refinement %" PRId64 " at episode %" PRId64 ": %" PRId64 " shards of %" PRId64 " plans measured "
            "in %.1f s (%" PRId64 " left out as noisy); measured / predicted %.3f (median: the drift taken out); "
            "the model's error on them %.1f %% (MAPE, before training on them); their balance predicted %.3f, "
            "measured %.3f; %d cost-model steps, loss %.4g",
            rf->round, in->episodes, rf->shards + rf->noisy, rf->plans, rf->seconds, rf->noisy, rf->scale, 100 * rf->mape,
            rf->pred_balance, rf->meas_balance, c->refine_steps, rf->loss);
    return 1;
}

/* the actors play on with the new weights and cost model */
static void share_weights(rl_run *R)
{
    rl_pool *pl = &R->pl;
    pthread_mutex_lock(&pl->mu);
    memcpy(pl->snap, R->w, (size_t)R->np * sizeof *pl->snap);
    cm_copy_params(pl->cm_snap, R->cm);
    pl->version++;
    pthread_mutex_unlock(&pl->mu);
}

/* evaluation on multiples of eval_every and after the run's last update (not at a halt), so
   a resumed run evaluates at the episodes of an uninterrupted one; model selection on
   multiples of select_every, so a resumed run scores the same weights as an uninterrupted
   one (*evp, *evm, *sel NaN when not done). 0, or -1 with err */
static int score_update(rl_run *R, int B, double *evp, double *evm, double *evcg, double *sel, char *err, size_t errlen)
{
    const as_rl_cfg *c = R->c;
    as_policy_info *in = R->in;
    *evp = *evm = *evcg = NAN;
    if (c->eval_every > 0 && (in->episodes / c->eval_every > (in->episodes - B) / c->eval_every ||
                              (c->episodes > 0 && in->episodes >= c->episodes))) {
        if (evaluate(&R->x, R->p, R->cm, c->eval_tasks, 1, evp, evm, &in->evals, evcg, err, errlen)) return -1;
        /* whether training has paid off: the policy's greedy plans against cost-greedy's */
        as_info("episode %" PRId64 ": the policy's greedy plans of %" PRId64 " training tasks, mean predicted balance "
                "%.4f; cost-greedy's by the same model %.4f: the policy %s", in->episodes,
                c->eval_tasks < R->x.ntasks ? c->eval_tasks : R->x.ntasks, *evp, *evcg,
                *evp > *evcg ? "ahead" : *evp == *evcg ? "level" : "behind");
    }
    *sel = NAN;
    if (c->select_every > 0 && in->episodes / c->select_every > (in->episodes - B) / c->select_every &&
        select_step(&R->x, R->p, R->cm, R->st, in->episodes, sel, err, errlen))
        return -1;
    return 0;
}

/* a checkpoint every ckpt_every episodes */
static void checkpoint_due(rl_run *R)
{
    const as_rl_cfg *c = R->c;
    if (c->ckpt && c->ckpt_every > 0 && R->in->episodes - R->last_ck >= c->ckpt_every) {
        R->last_ck = R->in->episodes;
        write_checkpoint(c, R->p, R->cm, R->st);
    }
}

/* one update of B episodes: gathered, learnt from, refinement, evaluation and selection when
   due, its `train` record, a checkpoint when due. 0, or -1 with err */
static int one_update(rl_run *R, int B, char *err, size_t errlen)
{
    const as_rl_cfg *c = R->c;
    if (gather(&R->x, R->threaded ? &R->pl : NULL, R->p, R->cm, R->in->episodes, B, R->eps, &R->play_ws, err, errlen)) {
        for (int b = 0; b < B; b++) ep_free(&R->eps[b]);
        return -1;
    }
    rl_update u;
    learn(R, B, &u);
    refine_out rf;
    const int refined = refine_due(R, B, &rf, err, errlen);
    if (refined >= 0 && R->threaded) share_weights(R);
    for (int b = 0; b < B; b++) ep_free(&R->eps[b]);
    if (refined < 0) return -1;
    double evp, evm, evcg, sel;
    if (score_update(R, B, &evp, &evm, &evcg, &sel, err, errlen)) return -1;
    as_rl_state *st = R->st;
    st->wall = R->wall0 + (as_now() - R->t0);
    log_record(c, st, &R->lsb, R->p, st->wall, &u.s, u.npb ? u.pb / u.npb : NAN, u.gn, u.lr, evp, evm, evcg,
               u.nmb ? u.mb / u.nmb : NAN, u.cml, sel, refined ? &rf : NULL);
    checkpoint_due(R);
    as_progress_update(&R->pr, c->episodes > 0 ? (double)R->in->episodes : st->wall);
    return 0;
}

/* the run's end: the actors stopped, a finished run's last scoring and checkpoint (finish),
   everything freed; as as_rl_train returns */
static int run_end(rl_run *R, int rc, int stopped, as_rl_state *state, char *err, size_t errlen)
{
    const as_rl_cfg *c = R->c;
    as_policy_info *in = R->in;
    as_rl_state *st = R->st;
    as_progress_end(&R->pr);
    if (R->threaded) actors_stop(&R->pl, R->act, c->actors);
    st->wall = R->wall0 + (as_now() - R->t0);
    /* a finished run scores its last weights too (a halted or stopped one does not: its
     * continuation will) */
    int finished = c->episodes > 0 ? in->episodes >= c->episodes : R->budget > 0 && st->wall >= R->budget;
    if (!rc) rc = finish(&R->x, R->p, R->cm, st, finished, err, errlen);
    if (!rc && c->halt_after > 0 && in->episodes >= c->halt_after && (c->episodes <= 0 || in->episodes < c->episodes))
        stopped = 1;
    free(R->g); free(R->cg); free(R->eps); free(R->trs);
    as_arena_free(&R->play_ws);
    as_arena_free(&R->learn_ws);
    msgpack_sbuffer_destroy(&R->lsb);
    if (st != state) as_rl_state_free(st);
    pthread_mutex_destroy(&R->x.measure_mu);
    as_bench_session_free(R->x.sess);
    return rc ? -1 : stopped;
}

int as_rl_train(as_policy *p, as_costmodel *cm, const as_rl_task *tasks, int64_t ntasks, const as_rl_cfg *c,
                as_rl_state *state, char *err, size_t errlen)
{
    if (check_cfg(c, ntasks, err, errlen)) return -1;
    as_nn_set_threads(1);   /* small products: one BLAS thread is fastest and deterministic */
    rl_run R;
    if (run_begin(&R, p, cm, tasks, ntasks, c, state, err, errlen)) return -1;
    int rc = 0, stopped = 0;
    while (R.in->episodes < R.limit) {
        double wall = R.wall0 + (as_now() - R.t0);
        if (R.budget > 0 && wall >= R.budget) break;
        if (c->stop && *c->stop) { stopped = 1; break; }
        int B = c->batch;
        if (R.limit - R.in->episodes < B) B = (int)(R.limit - R.in->episodes);
        if ((rc = one_update(&R, B, err, errlen))) break;
    }
    return run_end(&R, rc, stopped, state, err, errlen);
}
