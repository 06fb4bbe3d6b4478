/* rl.h - training the sharding policy (lib/rl/policy.h) with IMPALA: actors play episodes on
 * training tasks with a snapshot of the policy, one learner applies V-trace updates over
 * batches of B1 trajectories (Adam, linear learning-rate decay, global gradient clipping),
 * and, with measured rewards, trains the cost model on a buffer of measured shards
 * (AutoShard's Algorithm 1). Dimension letters: T tables of a task, K shards, B1 batch.
 *
 * Rewards (the last step of an episode; 0 before):
 *   model  min/max of the cost model's predicted shard costs (the estimated MDP)
 *   bench  min/max of the shard costs measured with lib/bench (the paper's algorithm)
 * An episode that meets a table fitting on no shard ends there with reward -1.
 *
 * Measured refinement (rl_cfg.refine_every; the cost-model half of Algorithm 1 at a
 * measurement budget): with model rewards, every N episodes the plans the policy makes for
 * some training tasks (as as-plan makes them) are measured, the cost model is trained on them together with the cost dataset, and
 * the policy goes on learning against the corrected model. The policy file then holds the
 * refined model, which as-plan uses for the policy's inputs and its choice among candidates.
 *
 * Determinism: episode e draws its task and its actions from stream e of the seed, so one
 * actor gives the same policy for the same inputs, and a resumed run continues exactly.
 * Several actors run ahead of the learner with stale snapshots (V-trace corrects for it);
 * the result then depends on thread timing.
 */
#ifndef AS_RL_H
#define AS_RL_H

#include <signal.h>
#include <stdint.h>

#include "bench.h"
#include "progress.h"
#include "costmodel.h"
#include "policy.h"

typedef struct {
    int64_t id;
    const as_features **t;          /* T tables, pointers into as_rl_cfg.feat */
    int64_t n, K;
    uint64_t cap;                   /* 0 = none */
} as_rl_task;

typedef struct {
    int bench;                      /* 1: measured rewards (needs pool) */
    int64_t episodes;               /* total episodes (0: minutes decide) */
    double minutes;                 /* wall-clock budget (0: episodes decide) */
    int actors;
    uint64_t seed;
    double lr, entropy, baseline, clip;
    int batch;                      /* trajectories per update (B1) */
    int64_t imitate;                /* the first N episodes follow cost-greedy and train the
                                       policy to imitate it (cross-entropy; values regress on
                                       the return) before reinforcement learning takes over */
    double pieces;                  /* model rewards: this share of the episodes places the
                                       task with its costliest tables cut into column pieces
                                       (1..T/8 tables, 2 or 4 pieces each, drawn), as the
                                       split search hands them to the policy; 0: whole
                                       tables only (the paper; as-rl's default AS_RL_PIECES) */
    int cost_steps, cost_batch;     /* cost-model updates per policy update (I), batch */
    int64_t buffer;                 /* measured shards kept for the cost model */
    /* measured refinement (either reward): every refine_every episodes (on multiples of it,
       not at the end of the run) plan refine_tasks training tasks with the current policy as
       as-plan does (the best of the automatic number of candidates by the current model), a
       window that moves on by refine_tasks each round; measure every shard of the feasible
       plans, add the quiet ones to the buffer and train the cost model refine_steps steps on
       the buffer; model selection starts again (earlier scores came from another model).
       0: never */
    int64_t refine_every, refine_tasks;
    int refine_steps;
    /* measured shards the buffer starts with (the input's `cost` records, e.g. the cost
       dataset the model was fitted on): shard j = seed_pos[seed_off[j] .. seed_off[j+1]),
       positions in feat, measured seed_cost[j] ms. Used only when starting (a checkpoint
       holds its own buffer) */
    int64_t nseed;
    const int64_t *seed_off, *seed_pos;
    const double *seed_cost;
    int64_t eval_every;             /* greedy evaluation on multiples of N episodes and after
                                       the last update of the run (0: never) */
    int64_t eval_tasks;             /* training tasks evaluated (the first N) */
    int64_t select_every;           /* model selection: every N episodes (on multiples of N) and
                                       at the end of a finished run, plan the first select_tasks
                                       training tasks greedily and score the policy by their mean
                                       predicted balance; the best-scoring weights (and cost
                                       model) are what p and cm hold when training ends.
                                       Training itself is unchanged (it goes on from the latest
                                       weights). 0: keep the last weights */
    int64_t select_tasks;
    const char *ckpt;               /* checkpoint file (NULL: none) */
    int64_t ckpt_every;             /* episodes between checkpoints (0: only at the end) */
    int64_t halt_after;             /* stop (with a checkpoint) after this many episodes, 0: no */
    const as_features *feat;        /* the cost buffer's items: every table of the input and
                                       the pieces of tables its cost records hold, each piece
                                       with its own features (feat[i].piece; lib/rl/rlinput.h);
                                       a checkpoint names them by table id and piece */
    int64_t nfeat;
    const as_bench_cfg *bcfg;       /* measurement (NULL: none) */
    const as_bpool *pool;
    const int64_t *ref_ids;         /* measurement: the reference shard of drift correction
                                       (benchnoise.h; each plan's shards and it are one group);
                                       NULL: none */
    int64_t ref_n;
    as_writer *log;                 /* `train` records (NULL: none); when resuming, the
                                       checkpoint's records up to its episode come first */
    int64_t run_id;                 /* the run's identity when starting (0: a new one); a
                                       resumed run keeps its checkpoint's */
    int progress;                   /* progress on stderr (as-rl: --progress or a terminal) */
    int argc;                       /* the command line, for the log's header (0: none) */
    char **argv;
    volatile sig_atomic_t *stop;    /* set asynchronously to stop after the current update */
} as_rl_cfg;

/* as-rl's default --pieces with model rewards: half the episodes place pieces */
#define AS_RL_PIECES 0.5

/* ranges of a checkpoint's fields and of as-rl's options (docs/FORMAT.md) */
#define AS_RL_MAX_BUFFER 100000000          /* measured shards kept (--buffer, rl_buffer) */
#define AS_RL_MAX_MINUTES 1e7               /* --minutes, a checkpoint's minutes */
#define AS_RL_MAX_WALL 1e12                 /* a checkpoint's wall_s, seconds */
#define AS_RL_MAX_STEP (INT64_C(1) << 53)   /* the cost model's Adam step, cm_adam_t */
#define AS_RL_MAX_STEPS 1000000             /* --cost-steps, --refine-steps */
#define AS_RL_MAX_TRAIN_RECORD 65536        /* bytes of one `train` record in a checkpoint */

/* the options that decide what a run learns (as_rl_cfg's fields of the same names): a
 * checkpoint stores them and a resumed run continues with them (as-rl: an option not given
 * takes the checkpoint's value, one that differs is refused) */
typedef struct {
    int bench;
    uint64_t seed;
    double lr, entropy, baseline, clip;
    int batch;
    int64_t imitate;
    int cost_steps;
    int64_t buffer;
    int64_t select_every, select_tasks;
    int64_t refine_every, refine_tasks;
    int refine_steps;
    double pieces;
} as_rl_hparams;

/* training state beyond the policy weights; lives in checkpoints */
typedef struct as_rl_state as_rl_state;

/* Train p (and, with bench rewards or refinement, cm) on tasks[0..n). state: from as_rl_load_checkpoint
 * to resume, or NULL to start. Returns 0 when the budget was used up, 1 when stopped early
 * (halt_after or *stop), -1 with err. */
int as_rl_train(as_policy *p, as_costmodel *cm, const as_rl_task *tasks, int64_t n, const as_rl_cfg *c,
                as_rl_state *state, char *err, size_t errlen);

/* A checkpoint: a header naming the run (run_id), the `policy` record with the optimiser
 * state and the hyperparameters, the cost model's `model` record, one `rl_buffer` record and
 * the run's `train` records so far. The file is a valid policy file too. Every field is
 * range-checked (docs/FORMAT.md). 0 ok, -1 with err naming the record and field. */
int as_rl_load_checkpoint(const char *path, as_policy **p, as_costmodel **cm, as_rl_state **st, char *err,
                          size_t errlen);
void as_rl_state_free(as_rl_state *st);
/* what a checkpoint says about the run it came from */
int64_t as_rl_state_best_episode(const as_rl_state *st);   /* -1: no selection yet */
int64_t as_rl_state_total_episodes(const as_rl_state *st);
double as_rl_state_minutes(const as_rl_state *st);
const as_rl_hparams *as_rl_state_hparams(const as_rl_state *st);
int64_t as_rl_state_run_id(const as_rl_state *st);

/* A run's identity: a random number in 1..2^63-1 (not from the seed: two runs of one seed
 * are two runs). The headers of a run's checkpoints and log carry it (`run_id`). */
int64_t as_rl_new_run_id(void);
/* the header of a file of run run_id (a log or a checkpoint): as_writer_header's, with run_id */
void as_rl_log_header(as_writer *w, int argc, char **argv, int64_t run_id);
/* --log FILE of a resumed run: 0 when path does not exist, is not a regular file, or is a
 * log of run run_id (every header names it; it is then replaced by the checkpoint's records
 * and the new ones); -1 with err when it is another run's log or no log at all (nothing may
 * overwrite it) */
int as_rl_log_check(const char *path, int64_t run_id, char *err, size_t errlen);

/* write a policy file: header, `policy` record, the cost model's `model` record */
void as_rl_write_policy(as_writer *w, const as_policy *p, const as_costmodel *cm);


/* The greedy plans (argmax at every step) of the first n of tasks[0..ntasks), as model
 * selection (rl_cfg.select_every) scores them: balance is their mean predicted balance, the
 * score. A plan scores 0 when a table fits on no shard (infeasible) and when it leaves a shard
 * empty: an empty shard's predicted cost is 0, so min/max is exactly 0. That happens early in
 * training: the policy is still near uniform, so the rewards' sampled plans spread the tables,
 * while its argmax follows a small preference for the shard already loaded and piles every
 * table onto one shard; and after a collapse (the case selection guards against). */
typedef struct {
    int64_t tasks;          /* plans made */
    double balance;         /* their mean predicted balance (NAN when no task) */
    double cost_greedy;     /* cost-greedy's plans of the same tasks by the same model: their
                               mean predicted balance (NAN when no task): what the policy must
                               beat to have paid off */
    int64_t infeasible;     /* plans with a table that fits on no shard */
    int64_t empty;          /* feasible plans that leave a shard empty */
    int64_t shards, used;   /* the plans' shards, and those that hold a table (sums) */
} as_rl_greedy;
int as_rl_greedy_plans(const as_policy *p, const as_costmodel *cm, const as_rl_task *tasks, int64_t ntasks, int64_t n,
                       as_rl_greedy *g, char *err, size_t errlen);

#endif
