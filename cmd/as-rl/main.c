/* as-rl - train the learned sharding policy (LSTM policy-value network, IMPALA / V-trace)
 * on the training tasks of a features-and-tasks stream, with rewards from the cost model
 * or from real measurements. */
#include "bench.h"
#include "cli.h"
#include "common.h"
#include "costmodel.h"
#include "featurize.h"
#include "plan.h"
#include "policy.h"
#include "reclimits.h"
#include "rl.h"
#include "rlinput.h"
#include "stream.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char HELP[] =
    "Train the sharding policy on the `train` tasks of the input (features and tasks from\n"
    "as-features) and write it as a policy file: a stream holding the `policy` record and the\n"
    "`model` record of the cost model it was trained with (docs/FORMAT.md). Plan with it:\n"
    "as-plan --alg autoshard --policy FILE.\n"
    "\n"
    "Episodes place a task's tables one per step (sorted by predicted single-table cost,\n"
    "descending) on the shards where they fit; the reward at the end is min/max of the shard\n"
    "costs (-1 when a table fits nowhere). Every B1 episodes the learner applies V-trace\n"
    "(gamma 1, rho and c clipped at 1), Adam with linear decay, gradient-norm clip.\n"
    "\n"
    "Options:\n"
    "      --model FILE       cost model (as-costfit); required unless --resume\n"
    "      --reward R         model (default): rewards from the cost model (the estimated MDP);\n"
    "                         bench: shard costs measured in-process (needs --tables), and every\n"
    "                         measured shard trains the cost model (AutoShard's Algorithm 1)\n"
    "      --episodes N       training episodes (default 2000)\n"
    "      --minutes M        train for M minutes of wall time instead\n"
    "      --actors N         actor threads (default 1: deterministic for a seed; more run\n"
    "                         ahead of the learner with stale snapshots, corrected by V-trace)\n"
    "      --seed S           seed (default 0): episode e uses stream e\n"
    "      --tables FILE      table data (as-convert) for measurements\n"
    "      --device D         measuring device: auto (default), cpu, cuda, cuda:N\n"
    "      --eval-every N     every N episodes (on multiples of N, the same episodes when\n"
    "                         resumed) and after the last update, plan the first --eval-tasks\n"
    "                         training tasks greedily; log their predicted balance, and the\n"
    "                         measured one when --tables is given (default 0: never)\n"
    "      --eval-tasks N     tasks per evaluation (default 4)\n"
    "      --select-every N   model selection: every N episodes, and at the end, plan the first\n"
    "                         --select-tasks training tasks greedily with the cost model; the\n"
    "                         policy written is the one that scored the best mean predicted\n"
    "                         balance (training goes on from the latest; the checkpoint keeps\n"
    "                         both). Guards against a run that degrades late (default 100;\n"
    "                         0: write the last policy). A greedy plan that leaves a shard\n"
    "                         empty scores 0 (its predicted cost is 0): early in training the\n"
    "                         policy is near uniform, its sampled plans (the rewards) spread\n"
    "                         the tables while its argmax may pile them onto one shard; the\n"
    "                         closing message counts such plans of the policy kept\n"
    "      --select-tasks N   tasks per selection (default 8)\n"
    "      --log FILE         the training log: `train` records (as-eval --curve plots them).\n"
    "                         With --resume the log holds the run's records up to the\n"
    "                         checkpoint (the checkpoint carries them), then the new ones; a\n"
    "                         file there that is not this run's log (its header names the\n"
    "                         run) is refused (exit 2) and left as it is\n"
    "      --checkpoint FILE  write a checkpoint (atomically) at the end, every\n"
    "                         --checkpoint-every N episodes, and on SIGINT/SIGTERM (it may\n"
    "                         be the --resume file; no other input)\n"
    "      --resume FILE      continue a checkpoint exactly, with its seed and the options that\n"
    "                         decide what is learned (--reward --lr --batch --entropy\n"
    "                         --baseline --clip --imitate --pieces --cost-steps --buffer --select-every\n"
    "                         --select-tasks --refine-every --refine-tasks --refine-steps): one\n"
    "                         left out takes the checkpoint's value, one given with another\n"
    "                         value is a usage error (exit 2); its budget unless\n"
    "                         --episodes/--minutes is given (the learning rate then decays\n"
    "                         over the new budget)\n"
    "      --halt-after N     stop after N episodes in all, with a checkpoint (to split a run)\n"
    "Learning (defaults: the paper's):\n"
    "      --lr X             Adam learning rate, decayed linearly to 0 (1e-3)\n"
    "      --batch N          trajectories per update, B1 (8)\n"
    "      --imitate N        the first N episodes imitate cost-greedy (behaviour cloning: the\n"
    "                         policy learns the cost-greedy choice, the value its return), then\n"
    "                         reinforcement learning takes over (default 0, the paper's RL from\n"
    "                         scratch: a sixth imitating cost-greedy trailed it further here)\n"
    "      --no-cost-state    AutoShard's \"w/o cost modeling\" ablation (its Table 2;\n"
    "                         pipelines/q3-ablation): the policy's state without the cost\n"
    "                         model's predictions (its cost features but the shard's memory\n"
    "                         are 0) and its table encoder trained from a fresh start; the\n"
    "                         episode order and the rewards stay the cost model's (or measured).\n"
    "                         The policy records it and as-plan plans with it the same way.\n"
    "                         A cost model trained with as-costfit --drop-features gives its\n"
    "                         policy the same features left out (the feature ablations)\n"
    "      --pieces P         model rewards: this share of the episodes (0..1) places the task\n"
    "                         with its costliest tables (1 to T/8, drawn) cut into 2 or 4 column\n"
    "                         pieces, as as-plan --split-tables hands them to the policy, so that\n"
    "                         it learns to place pieces too (default 0.5; 0 with --reward\n"
    "                         bench, whose measured shards hold whole tables; 0: whole tables\n"
    "                         only, the paper)\n"
    "      --entropy X        entropy cost (0.001)\n"
    "      --baseline X       value-loss cost (0.5)\n"
    "      --clip X           global gradient-norm clip (40)\n"
    "      --cost-steps N     bench: cost-model updates per policy update, I (20)\n"
    "      --buffer N         bench: measured shards kept for the cost model (5000)\n"
    "Measured refinement (the cost-model half of AutoShard's Algorithm 1 at a small measurement\n"
    "budget; needs --tables):\n"
    "      --refine-every N   every N episodes (not at the end of the run) plan --refine-tasks\n"
    "                         training tasks with the current policy as as-plan does (the best\n"
    "                         of its automatic number of candidates), measure every\n"
    "                         shard, add them to the buffer and train the cost model\n"
    "                         --refine-steps steps on it; the policy then learns against the\n"
    "                         refined model, which the policy file keeps (as-plan uses it for\n"
    "                         the policy's inputs and its choice among candidates); model\n"
    "                         selection starts again after each round (default 0: never)\n"
    "      --refine-tasks N   plans measured per round, a window moving over the training\n"
    "                         tasks (16)\n"
    "      --refine-steps N   cost-model steps per round, minibatches of 512 from the buffer\n"
    "                         (200)\n"
    "  `cost` records in the input (as-bench; e.g. the cost dataset the model was fitted on)\n"
    "  fill the buffer first, so the model keeps fitting them while it learns the plans'\n"
    "  shards (with --reward bench too). A record's pieces of tables (its `pieces`: as-bench\n"
    "  --sample-pieces, split plans) are joined to the pieces' own features, as as-costfit\n"
    "  joins them (as-features --row-pieces writes row pieces'); a record with a piece or a\n"
    "  table whose features are not in the input is skipped and counted on stderr.\n"
    "Measurement (as as-bench): --warmup N (5) --runs N (10) --trim N (2) --flush SIZE\n"
    "      --threads N (CPU threads; default all). A plan's shards are measured together in\n"
    "      interleaved rounds with as-bench's automatic reference shard (--interleave 16\n"
    "      --reference auto): costs are divided by its drift, so plans measured minutes\n"
    "      apart share one scale\n"
    "\n"
    "Environment: AS_BENCH_FAKE_NOISE=SPEC, the fake timer of as-bench (a test hook: the\n"
    "measurements become deterministic figures; see as-bench --help).\n"
    "\n"
    "Progress on stderr. Exit status 130/143 when stopped by SIGINT/SIGTERM (the checkpoint\n"
    "and the policy are written first).\n"
    "\n"
    "Example:\n"
    "  as-rl --model cost.ast --episodes 3000 --log train.ast ft.ast -o policy.ast\n";

enum { OPT_MODEL = AS_OPT_TOOL_BASE, OPT_REWARD, OPT_EPISODES, OPT_MINUTES, OPT_ACTORS, OPT_SEED, OPT_TABLES,
       OPT_DEVICE, OPT_EVAL_EVERY, OPT_EVAL_TASKS, OPT_LOG, OPT_CKPT, OPT_CKPT_EVERY, OPT_RESUME, OPT_HALT,
       OPT_LR, OPT_BATCH, OPT_ENTROPY, OPT_BASELINE, OPT_CLIP, OPT_COST_STEPS, OPT_BUFFER, OPT_WARMUP, OPT_RUNS,
       OPT_TRIM, OPT_FLUSH, OPT_THREADS, OPT_IMITATE, OPT_SELECT_EVERY, OPT_SELECT_TASKS, OPT_REFINE_EVERY,
       OPT_REFINE_TASKS, OPT_REFINE_STEPS, OPT_NO_COST_STATE, OPT_PIECES };

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

/* what the command line says */
typedef struct {
    as_rl_cfg c;
    as_bench_cfg bc;
    const char *model_path, *tables, *device, *log_path, *resume;
    int episodes_given, minutes_given;
    int no_cost_state;      /* --no-cost-state */
    uint64_t given;         /* bit o - AS_OPT_TOOL_BASE: option o was given */
} args;

static int given(const args *a, int opt) { return (int)(a->given >> (opt - AS_OPT_TOOL_BASE) & 1); }

/* A resumed run learns with its checkpoint's hyperparameters: an option not given takes the
 * checkpoint's value; one given with another value is a usage error naming it. */
static void resume_hparams(const args *a, as_rl_cfg *c, const as_rl_hparams *hp, const char *ck)
{
#define KEEP(opt, name, field, fmt, T)                                                                               \
    do {                                                                                                          \
        if (!given(a, opt)) c->field = hp->field;                                                                 \
        else if (c->field != hp->field)                                                                           \
            as_die(AS_EXIT_USAGE, "--resume %s: %s " fmt " differs from the checkpoint's " fmt                      \
                   " (a resumed run keeps its hyperparameters; leave the option out)", ck, name, (T)c->field, (T)hp->field); \
    } while (0)
    if (!given(a, OPT_REWARD)) c->bench = hp->bench;
    else if (c->bench != hp->bench)
        as_die(AS_EXIT_USAGE, "--resume %s: --reward %s differs from the checkpoint's %s (a resumed run keeps its "
               "hyperparameters; leave the option out)", ck, c->bench ? "bench" : "model", hp->bench ? "bench" : "model");
    KEEP(OPT_SEED, "--seed", seed, "%" PRIu64, uint64_t);
    KEEP(OPT_LR, "--lr", lr, "%.17g", double);
    KEEP(OPT_ENTROPY, "--entropy", entropy, "%.17g", double);
    KEEP(OPT_BASELINE, "--baseline", baseline, "%.17g", double);
    KEEP(OPT_CLIP, "--clip", clip, "%.17g", double);
    KEEP(OPT_BATCH, "--batch", batch, "%d", int);
    KEEP(OPT_IMITATE, "--imitate", imitate, "%" PRId64, int64_t);
    KEEP(OPT_PIECES, "--pieces", pieces, "%g", double);
    KEEP(OPT_COST_STEPS, "--cost-steps", cost_steps, "%d", int);
    KEEP(OPT_BUFFER, "--buffer", buffer, "%" PRId64, int64_t);
    KEEP(OPT_SELECT_EVERY, "--select-every", select_every, "%" PRId64, int64_t);
    KEEP(OPT_SELECT_TASKS, "--select-tasks", select_tasks, "%" PRId64, int64_t);
    KEEP(OPT_REFINE_EVERY, "--refine-every", refine_every, "%" PRId64, int64_t);
    KEEP(OPT_REFINE_TASKS, "--refine-tasks", refine_tasks, "%" PRId64, int64_t);
    KEEP(OPT_REFINE_STEPS, "--refine-steps", refine_steps, "%d", int);
#undef KEEP
}

static const struct option rl_opts[] = {
    { "model", required_argument, 0, OPT_MODEL },
    { "reward", required_argument, 0, OPT_REWARD },
    { "episodes", required_argument, 0, OPT_EPISODES },
    { "minutes", required_argument, 0, OPT_MINUTES },
    { "actors", required_argument, 0, OPT_ACTORS },
    { "seed", required_argument, 0, OPT_SEED },
    { "tables", required_argument, 0, OPT_TABLES },
    { "device", required_argument, 0, OPT_DEVICE },
    { "eval-every", required_argument, 0, OPT_EVAL_EVERY },
    { "eval-tasks", required_argument, 0, OPT_EVAL_TASKS },
    { "select-every", required_argument, 0, OPT_SELECT_EVERY },
    { "select-tasks", required_argument, 0, OPT_SELECT_TASKS },
    { "log", required_argument, 0, OPT_LOG },
    { "checkpoint", required_argument, 0, OPT_CKPT },
    { "checkpoint-every", required_argument, 0, OPT_CKPT_EVERY },
    { "resume", required_argument, 0, OPT_RESUME },
    { "halt-after", required_argument, 0, OPT_HALT },
    { "lr", required_argument, 0, OPT_LR },
    { "batch", required_argument, 0, OPT_BATCH },
    { "entropy", required_argument, 0, OPT_ENTROPY },
    { "baseline", required_argument, 0, OPT_BASELINE },
    { "clip", required_argument, 0, OPT_CLIP },
    { "cost-steps", required_argument, 0, OPT_COST_STEPS },
    { "buffer", required_argument, 0, OPT_BUFFER },
    { "warmup", required_argument, 0, OPT_WARMUP },
    { "runs", required_argument, 0, OPT_RUNS },
    { "trim", required_argument, 0, OPT_TRIM },
    { "flush", required_argument, 0, OPT_FLUSH },
    { "threads", required_argument, 0, OPT_THREADS },
    { "imitate", required_argument, 0, OPT_IMITATE },
    { "pieces", required_argument, 0, OPT_PIECES },
    { "no-cost-state", no_argument, 0, OPT_NO_COST_STATE },
    { "refine-every", required_argument, 0, OPT_REFINE_EVERY },
    { "refine-tasks", required_argument, 0, OPT_REFINE_TASKS },
    { "refine-steps", required_argument, 0, OPT_REFINE_STEPS },
    AS_CLI_COMMON_OPTIONS
};

/* The option groups below each handle their own codes and return 1, or 0 for a code that
 * is not theirs. */

/* the run: its inputs, reward, length, actors, seed, device, log and checkpoints */
static int opt_run(as_cli *cli, int opt, const char *arg, args *a)
{
    switch (opt) {
    case OPT_MODEL: a->model_path = arg; return 1;
    case OPT_REWARD:
        if (!strcmp(arg, "model")) a->c.bench = 0;
        else if (!strcmp(arg, "bench")) a->c.bench = 1;
        else as_cli_usage(cli, "--reward: '%s' is not model or bench", arg);
        return 1;
    case OPT_EPISODES: a->c.episodes = as_cli_i64(cli, "--episodes", arg, 1, AS_POLICY_MAX_EPISODES); a->episodes_given = 1; return 1;
    case OPT_MINUTES: a->c.minutes = as_cli_f64(cli, "--minutes", arg, 1e-6, AS_RL_MAX_MINUTES); a->minutes_given = 1; return 1;
    case OPT_ACTORS: a->c.actors = (int)as_cli_i64(cli, "--actors", arg, 1, AS_POLICY_MAX_ACTORS); return 1;
    case OPT_SEED: a->c.seed = (uint64_t)as_cli_i64(cli, "--seed", arg, 0, INT64_MAX); return 1;
    case OPT_TABLES: a->tables = arg; return 1;
    case OPT_DEVICE: a->device = arg; return 1;
    case OPT_LOG: a->log_path = arg; return 1;
    case OPT_CKPT: a->c.ckpt = arg; return 1;
    case OPT_CKPT_EVERY: a->c.ckpt_every = as_cli_i64(cli, "--checkpoint-every", arg, 1, INT64_MAX / 4); return 1;
    case OPT_RESUME: a->resume = arg; return 1;
    case OPT_NO_COST_STATE: a->no_cost_state = 1; return 1;
    case OPT_HALT: a->c.halt_after = as_cli_i64(cli, "--halt-after", arg, 1, INT64_MAX / 4); return 1;
    default: return 0;
    }
}

/* what happens every N episodes: evaluation, selection, refinement; imitation first */
static int opt_schedule(as_cli *cli, int opt, const char *arg, args *a)
{
    switch (opt) {
    case OPT_EVAL_EVERY: a->c.eval_every = as_cli_i64(cli, "--eval-every", arg, 0, INT64_MAX / 4); return 1;
    case OPT_EVAL_TASKS: a->c.eval_tasks = as_cli_i64(cli, "--eval-tasks", arg, 1, INT64_MAX / 4); return 1;
    case OPT_SELECT_EVERY: a->c.select_every = as_cli_i64(cli, "--select-every", arg, 0, INT64_MAX / 4); return 1;
    case OPT_SELECT_TASKS: a->c.select_tasks = as_cli_i64(cli, "--select-tasks", arg, 1, INT64_MAX / 4); return 1;
    case OPT_REFINE_EVERY: a->c.refine_every = as_cli_i64(cli, "--refine-every", arg, 0, INT64_MAX / 4); return 1;
    case OPT_REFINE_TASKS: a->c.refine_tasks = as_cli_i64(cli, "--refine-tasks", arg, 1, INT64_MAX / 4); return 1;
    case OPT_REFINE_STEPS: a->c.refine_steps = (int)as_cli_i64(cli, "--refine-steps", arg, 0, AS_RL_MAX_STEPS); return 1;
    case OPT_IMITATE: a->c.imitate = as_cli_i64(cli, "--imitate", arg, 0, INT64_MAX / 4); return 1;
    case OPT_PIECES: a->c.pieces = as_cli_f64(cli, "--pieces", arg, 0, 1); return 1;
    default: return 0;
    }
}

/* the learner's hyperparameters and the cost model's training */
static int opt_learn(as_cli *cli, int opt, const char *arg, args *a)
{
    switch (opt) {
    case OPT_LR: a->c.lr = as_cli_f64(cli, "--lr", arg, 0, AS_POLICY_MAX_LR); return 1;
    case OPT_BATCH: a->c.batch = (int)as_cli_i64(cli, "--batch", arg, 1, AS_POLICY_MAX_BATCH); return 1;
    case OPT_ENTROPY: a->c.entropy = as_cli_f64(cli, "--entropy", arg, 0, AS_POLICY_MAX_LOSS_COST); return 1;
    case OPT_BASELINE: a->c.baseline = as_cli_f64(cli, "--baseline", arg, 0, AS_POLICY_MAX_LOSS_COST); return 1;
    case OPT_CLIP: a->c.clip = as_cli_f64(cli, "--clip", arg, 0, AS_POLICY_MAX_CLIP); return 1;
    case OPT_COST_STEPS: a->c.cost_steps = (int)as_cli_i64(cli, "--cost-steps", arg, 0, AS_RL_MAX_STEPS); return 1;
    case OPT_BUFFER: a->c.buffer = as_cli_i64(cli, "--buffer", arg, 1, AS_RL_MAX_BUFFER); return 1;
    default: return 0;
    }
}

/* the measurements' protocol (as-bench's options) */
static int opt_bench(as_cli *cli, int opt, const char *arg, args *a)
{
    switch (opt) {
    case OPT_WARMUP: a->bc.warmup = (int)as_cli_i64(cli, "--warmup", arg, 0, 100000); return 1;
    case OPT_RUNS: a->bc.runs = (int)as_cli_i64(cli, "--runs", arg, 1, 100000); return 1;
    case OPT_TRIM: a->bc.trim = (int)as_cli_i64(cli, "--trim", arg, 0, 100000); return 1;
    case OPT_THREADS: a->bc.threads = (int)as_cli_i64(cli, "--threads", arg, 1, 4096); return 1;
    case OPT_FLUSH: {
        uint64_t v;
        if (as_parse_size(arg, &v) || !v) as_cli_usage(cli, "--flush: '%s' is not a size", arg);
        a->bc.flush_bytes = v;
        return 1;
    }
    default: return 0;
    }
}

/* the files against each other and the options' combinations: usage errors, exit 2 */
static void check_args(as_cli *cli, args *a)
{
    as_cli_input_arg(cli, "--model", a->model_path);
    as_cli_input_arg(cli, "--tables", a->tables);
    if (a->resume && !strcmp(a->resume, "-"))
        as_cli_usage(cli, "--resume -: a checkpoint is read from a file, not from standard input");
    as_cli_input_arg(cli, "--resume", a->resume);
    as_cli_output_arg(cli, "--log", a->log_path);
    /* the checkpoint may replace the one a run resumes from, after reading it */
    as_cli_output_arg_over(cli, "--checkpoint", a->c.ckpt, a->resume);
    if (!a->model_path && !a->resume) as_cli_usage(cli, "--model FILE is required (a cost model from as-costfit)");
    if (a->resume && a->no_cost_state) as_cli_usage(cli, "--resume keeps the checkpoint's policy: no --no-cost-state");
    if (a->c.bench && a->c.pieces > 0) as_cli_usage(cli, "--pieces needs --reward model (a measured shard holds whole tables)");
    if (a->episodes_given && a->minutes_given) as_cli_usage(cli, "--episodes and --minutes exclude each other");
    if (a->c.bench && !a->tables) as_cli_usage(cli, "--reward bench needs --tables FILE (the table data to measure)");
    if (a->c.refine_every && !a->tables) as_cli_usage(cli, "--refine-every needs --tables FILE (the table data to measure)");
    if (2 * a->bc.trim >= a->bc.runs) as_cli_usage(cli, "--trim %d leaves no run of %d", a->bc.trim, a->bc.runs);
    if (a->c.ckpt_every && !a->c.ckpt) as_cli_usage(cli, "--checkpoint-every needs --checkpoint FILE");
    if (a->c.halt_after && !a->c.ckpt) as_cli_usage(cli, "--halt-after needs --checkpoint FILE");
    if (!cli->output && isatty(1) && !cli->force) as_cli_usage(cli, "refusing to write the binary policy to a terminal (use -o FILE or --force)");
}

static void parse_args(int argc, char **argv, as_cli *cli, args *a)
{
    memset(a, 0, sizeof *a);
    a->device = "auto";
    a->c.actors = 1; a->c.lr = 1e-3; a->c.entropy = 0.001; a->c.baseline = 0.5; a->c.clip = 40; a->c.batch = 8;
    a->c.cost_steps = 20; a->c.cost_batch = 512; a->c.buffer = 5000; a->c.eval_tasks = 4;
    a->c.select_every = 100; a->c.select_tasks = 8;
    a->c.refine_tasks = 16; a->c.refine_steps = 200;
    a->bc.warmup = 5; a->bc.runs = 10; a->bc.trim = 2; a->bc.lr = 0.01f;
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, rl_opts, NULL)) != -1) {
        if (opt >= AS_OPT_TOOL_BASE && opt < AS_OPT_TOOL_BASE + 64) a->given |= UINT64_C(1) << (opt - AS_OPT_TOOL_BASE);
        if (opt_run(cli, opt, optarg, a) || opt_schedule(cli, opt, optarg, a) || opt_learn(cli, opt, optarg, a)
            || opt_bench(cli, opt, optarg, a))
            continue;
        if (!as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
    }
    as_cli_finish(cli);
    check_args(cli, a);
}

/* the fake timer (AS_BENCH_FAKE_NOISE) and, with --tables, the device that measures:
 * usage errors exit 2, a missing device 3 */
static void setup_bench(as_cli *cli, const args *a, as_bench_cfg *bc)
{
    char err[1024];
    static as_bench_fake fake;
    const char *spec = getenv("AS_BENCH_FAKE_NOISE");
    if (spec && *spec) {
        if (as_bench_fake_parse(spec, &fake, err, sizeof err)) as_cli_usage(cli, "AS_BENCH_FAKE_NOISE: %s", err);
        bc->fake = &fake;
    }
    if (a->tables) {
        int code = as_bench_device(a->device, bc, err, sizeof err);
        if (code == AS_EXIT_USAGE) as_cli_usage(cli, "%s", err);
        if (code) as_die(code, "%s", err);
    }
}

/* the policy and its cost model: fresh, or from --resume's checkpoint (*st, with the run's
 * hyperparameters and length) */
static void load_policy(const args *a, as_rl_cfg *c, as_policy **pol, as_costmodel **cm, as_rl_state **st)
{
    char err[1024];
    const char *resume = a->resume;
    if (resume) {
        if (as_rl_load_checkpoint(resume, pol, cm, st, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        if (a->model_path) as_info("--resume: the checkpoint's cost model is used, not %s", a->model_path);
        resume_hparams(a, c, as_rl_state_hparams(*st), resume);
        if ((c->bench || c->refine_every) && !a->tables)
            as_die(AS_EXIT_USAGE, "--resume %s: the run measures (%s); give --tables FILE", resume,
                   c->bench ? "--reward bench" : "--refine-every");
        /* a file at --log must be this run's log (it is replaced: the checkpoint's records,
           then the new ones); another run's is left alone */
        if (a->log_path && as_rl_log_check(a->log_path, as_rl_state_run_id(*st), err, sizeof err)) as_die(AS_EXIT_USAGE, "%s", err);
        if (!a->episodes_given && !a->minutes_given) {
            c->episodes = as_rl_state_total_episodes(*st);
            c->minutes = as_rl_state_minutes(*st);
        }
    } else {
        if (as_costmodel_load(cm, a->model_path, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        if (!(*pol = as_policy_new(*cm, c->seed, err, sizeof err))) as_die(AS_EXIT_DATA, "%s: %s", a->model_path, err);
        if (a->no_cost_state) as_policy_drop_cost(*pol);
    }
    if (!c->episodes && c->minutes <= 0) c->episodes = 2000;
    /* a fresh run with model rewards places pieces in a share of its episodes, as the split
       search hands them to the policy (docs/RESULTS.md, issue 53: trained on whole tables
       alone, its split plans trailed cost-greedy's on unseen tables by 5 points) */
    if (!resume && !given(a, OPT_PIECES)) c->pieces = c->bench ? 0 : AS_RL_PIECES;
}

/* features, training tasks and cost records, into c */
static void read_input(as_rl_input *inp, int argc, char **argv, const args *a, as_rl_cfg *c)
{
    char err[1024];
    if (as_rl_input_read(inp, argv + optind, argc - optind, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    if (inp->cost_skipped) as_info("skipped %" PRId64 " cost record(s) with an error, no cost_ms or no tables", inp->cost_skipped);
    if (inp->cost_nofeat) as_info("skipped %" PRId64 " cost record(s) with a table that has no features record", inp->cost_nofeat);
    if (inp->cost_nopiece)
        as_info("skipped %" PRId64 " cost record(s) with a piece of a table whose features are not in the input "
                "(as-features --row-pieces writes row pieces' features)", inp->cost_nopiece);
    if (inp->seed_pieces)
        as_info("%" PRId64 " of the %" PRId64 " cost records hold pieces of tables (%" PRId64 " distinct), each joined to "
                "the piece's features", inp->seed_pieces, inp->nseed, inp->npieces);
    if (inp->nseed && !c->bench && !c->refine_every)
        as_info("the %" PRId64 " cost records of the input are not used (the cost model trains only with --reward bench "
                "or --refine-every)", inp->nseed);
    if (inp->nseed > c->buffer)
        as_info("--buffer %" PRId64 " keeps only the last %" PRId64 " of the %" PRId64 " cost records", c->buffer, c->buffer, inp->nseed);
    if (a->resume && inp->nseed) as_info("--resume: the checkpoint's buffer of measured shards is used, not the input's cost records");
    c->feat = inp->feat;
    c->nfeat = inp->nfeat;
    c->nseed = inp->nseed;
    c->seed_off = inp->seed_off;
    c->seed_pos = inp->seed_pos;
    c->seed_cost = inp->seed_cost;
}

/* table data for measurements: every training task's with bench rewards or refinement,
   else the evaluated ones'; the reference shard's ids into ref */
static void load_pool(as_bpool *pool, int64_t *ref, int64_t *nref, as_rl_input *inp, const args *a, as_rl_cfg *c,
                      as_bench_cfg *bc)
{
    char err[1024];
    int64_t nloaded;
    if (as_rl_input_load_pool(inp, c->bench || c->refine_every, c->eval_tasks, a->tables, pool, &nloaded, ref, nref,
                              err, sizeof err))
        as_die(AS_EXIT_DATA, "%s", err);
    as_info("loaded %" PRId64 " tables from %s", nloaded, a->tables);
    c->bcfg = bc;
    c->pool = pool;
    c->ref_ids = *nref ? ref : NULL;
    c->ref_n = *nref;
}

/* the run's identity, its log (NULL: none), its command line, SIGINT and SIGTERM */
static as_writer *setup_run(as_cli *cli, int argc, char **argv, const args *a, as_rl_cfg *c, const as_rl_state *st)
{
    /* the run's identity: the checkpoint's, or a new one; the log's header names it */
    c->run_id = a->resume ? as_rl_state_run_id(st) : as_rl_new_run_id();
    as_writer *lw = NULL;
    if (a->log_path) {
        lw = as_writer_open(a->log_path, 0, 0);
        as_rl_log_header(lw, argc, argv, c->run_id);
    }
    c->log = lw;
    c->progress = cli->progress;
    c->argc = cli->argc;
    c->argv = cli->argv;
    c->stop = &g_stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    as_nn_set_threads(1);
    return lw;
}

/* the run's summary on stderr (e0: the episodes before it, t0: its start); with model
 * selection, the kept policy's greedy plans of the scored tasks are made again (as the
 * selection scored them) to say what its score means */
static void report(const as_policy *pol, const as_costmodel *cm, const as_rl_input *inp, const as_rl_cfg *c, int rc,
                   int64_t e0, double t0)
{
    const as_policy_info *in = as_policy_cmeta(pol);
    as_info("%" PRId64 " episodes (%" PRId64 " this run) in %.1f s, %" PRId64 " updates, %" PRId64
            " measured shards; mean reward of the last update %.4f", in->episodes, in->episodes - e0, as_now() - t0,
            in->updates, in->evals, in->final_reward);
    if (in->selected_episode >= 0) {
        as_rl_greedy g;
        char err[512];
        if (as_rl_greedy_plans(pol, cm, inp->tasks, inp->ntasks, in->select_tasks, &g, err, sizeof err)) g.tasks = 0;
        char why[640] = "", inf[160] = "";
        if (g.tasks > 0 && g.infeasible)
            snprintf(inf, sizeof inf, "%" PRId64 " of its %" PRId64 " greedy plans place a table nowhere (infeasible: 0)",
                     g.infeasible, g.tasks);
        if (g.tasks > 0 && g.empty)
            snprintf(why, sizeof why,
                     ": %" PRId64 " of its %" PRId64 " greedy plans leave shards empty (%.1f of %.1f shards used on"
                     " average), which scores 0 (an empty shard's predicted cost is 0)%s%s; the rewards are of sampled"
                     " plans, which spread the tables",
                     g.empty, g.tasks, (double)g.used / (double)g.tasks, (double)g.shards / (double)g.tasks,
                     *inf ? "; " : "", inf);
        else if (*inf)
            snprintf(why, sizeof why, ": %s", inf);
        as_info("kept the policy of episode %" PRId64 " (mean predicted balance %.4f of its greedy plans of %" PRId64
                " training tasks, the best of the selection points%s)%s",
                in->selected_episode, in->selected_balance, in->select_tasks,
                in->selected_balance > 0 ? ""
                : c->refine_every > 0 ? "; every point since the last refinement round scored 0, so the latest was kept"
                                      : "; every point scored 0, so the latest was kept",
                why);
        if (g.tasks > 0)
            as_info("against cost-greedy on those tasks (its plans by the same cost model): %.4f; the learned policy is %s "
                    "(%+.1f points)%s", g.cost_greedy, g.balance > g.cost_greedy ? "ahead" : g.balance == g.cost_greedy ? "level" : "behind",
                    100 * (g.balance - g.cost_greedy), g.balance < g.cost_greedy ? ": plan with cost-greedy, or train longer" : "");
    }
    if (rc == 1) as_info("stopped at episode %" PRId64 "; continue with --resume %s", in->episodes, c->ckpt ? c->ckpt : "(no checkpoint)");
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-rl", "as-rl --model COSTMODEL [options] [FILE...] -o POLICY", HELP);
    args a;
    parse_args(argc, argv, &cli, &a);
    as_rl_cfg c = a.c;
    as_bench_cfg bc = a.bc;
    char err[1024];
    setup_bench(&cli, &a, &bc);
    as_policy *pol = NULL;
    as_costmodel *cm = NULL;
    as_rl_state *st = NULL;
    load_policy(&a, &c, &pol, &cm, &st);
    as_rl_input inp;
    read_input(&inp, argc, argv, &a, &c);
    as_bpool pool;
    memset(&pool, 0, sizeof pool);
    int64_t ref[AS_NOISE_REF_TABLES], nref = 0;
    if (a.tables) load_pool(&pool, ref, &nref, &inp, &a, &c, &bc);
    as_writer *lw = setup_run(&cli, argc, argv, &a, &c, st);

    as_info("training on %" PRId64 " tasks (%" PRId64 " tables onto %" PRId64 " shards in the first), reward %s, %s, "
            "%d actor%s, seed %" PRIu64, inp.ntasks, inp.tasks[0].n, inp.tasks[0].K, c.bench ? "bench (measured)" : "model (predicted)",
            c.episodes > 0 ? "episodes" : "minutes", c.actors, c.actors == 1 ? "" : "s", c.seed);
    int64_t e0 = as_policy_cmeta(pol)->episodes;
    double t0 = as_now();
    int rc = as_rl_train(pol, cm, inp.tasks, inp.ntasks, &c, st, err, sizeof err);
    if (rc < 0) {
        if (lw) as_writer_abort(lw);
        as_die(AS_EXIT_DATA, "%s", err);
    }
    if (lw) as_writer_close(lw);
    as_writer *w = as_cli_open_output(&cli);
    as_rl_write_policy(w, pol, cm);
    as_writer_close(w);
    report(pol, cm, &inp, &c, rc, e0, t0);
    as_rl_input_free(&inp);
    if (a.tables) as_bpool_free(&pool);
    as_policy_free(pol);
    as_costmodel_free(cm);
    as_rl_state_free(st);
    if (g_stop) return 128 + (int)g_stop;
    return 0;
}
