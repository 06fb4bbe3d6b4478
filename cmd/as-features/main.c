/* as-features - per-table features (the paper's 21, plus cheap extras) from `table`
 * records, and sharding tasks built from them. */
#include "cli.h"
#include "common.h"
#include "featrun.h"
#include "featurize.h"
#include "modelcfg.h"
#include "reclimits.h"
#include "stream.h"
#include "tasks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char HELP[] =
    "Read `table` records (as-convert) and write one `features` record per table: dim, rows,\n"
    "pooling, size (GiB at fp16) and the 17 index-distribution bins (the paper's 21 features,\n"
    "in order, also as the vector `features`), plus lookups, distinct rows, the fraction of\n"
    "lookups per bin, max/mean bag length and weight bytes at fp16/fp32. The index data is\n"
    "not passed on. `features` records in the input pass through (and count as the pool for\n"
    "--tasks), as do records of other kinds.\n"
    "\n"
    "Bins: for each distinct row, count its accesses c in the batch; bin k holds c in\n"
    "(2^(k-1), 2^k] for k = 0..15 ((0,1], (1,2], (2,4], ..., (16384,32768]), bin 16 holds\n"
    "c > 32768; the feature is the fraction of distinct rows per bin (all 0 when a table has\n"
    "no lookups). Normalisation (z-scores of dim, rows, pooling) is left to the consumer, which\n"
    "computes it over the tables it trains on and stores it with its model.\n"
    "\n"
    "Pieces (for as-plan --split-tables and as-bench; docs/FORMAT.md):\n"
    "      --row-pieces LIST  also write, after each table's record, the features of its row\n"
    "                         pieces when cut in N blocks for every N of LIST (e.g. 2,4,8;\n"
    "                         N in 2..1024): TorchRec's row-wise blocks of ceil(rows/N) rows,\n"
    "                         counted exactly from the lookups that fall in each block. Each\n"
    "                         is a `features` record with `piece` [0, dim, r0, r1]; a table of\n"
    "                         fewer than N rows gets fewer blocks, one of 1 row none. Column\n"
    "                         pieces need no records: their features follow from the table's.\n"
    "                         With --model-task the task's shard count K is cut too, when\n"
    "                         not listed (TorchRec's row_wise: as-plan --split-rows row_wise)\n"
    "                         Piece records never count as tables of the pool for --tasks\n"
    "\n"
    "Sharding tasks (written after the features, when --tasks is given):\n"
    "      --tasks N          number of tasks (training and test together)\n"
    "      --test-tasks M     how many of them are test tasks (default N/10, e.g. 90 + 10)\n"
    "      --task-tables T    tables per task (default 80)\n"
    "      --shards K         shards per task (default T/10)\n"
    "      --mem-cap SIZE     memory cap per shard, bytes with optional K/M/G suffix (binary);\n"
    "                         a task whose tables cannot fit in K x SIZE is refused\n"
    "      --unseen-ratio R   the transfer setting: training tasks use only the first half of\n"
    "                         the pool (by id); test tasks take round(R*T) tables from the\n"
    "                         second half, the rest from the first (R in 0..1)\n"
    "      --seed S           seed (default 0): the same seed and pool give the same tasks\n"
    "                         on any machine\n"
    "      --drop-tasks       leave the input's `task` records out (to make new tasks over an\n"
    "                         existing features stream)\n"
    "      --model-task       instead of --tasks: one test task (id 0) of every table of the\n"
    "                         input, the model of as-convert --config: K = its world_size\n"
    "                         and the cap its HBM per device, from its `model-config` record\n"
    "                         (--shards and --mem-cap override them). A model's tables carry\n"
    "                         TorchRec's memory model (`torchrec_memory`: weights in their\n"
    "                         data type, optimizer state, pipeline buffers), which the\n"
    "                         planners count against the cap; the cap is the HBM less\n"
    "                         TorchRec's reservation (15 %, the dense part: 6 x the dense\n"
    "                         parameters' bytes or the config's dense_tensor_estimate, and\n"
    "                         20 copies of the ids)\n"
    "\n"
    "Example:\n"
    "  as-convert --synth --preset small | as-features --tasks 100 --seed 0 > feats.ast\n"
    "  as-convert --config pipelines/models/dlrm-criteo-kaggle.json | as-features --model-task > kaggle.ast\n";

enum { OPT_TASKS = AS_OPT_TOOL_BASE, OPT_TEST, OPT_TT, OPT_SHARDS, OPT_CAP, OPT_UNSEEN, OPT_SEED, OPT_DROP, OPT_ROWP, OPT_MODELTASK };

/* every record through as-features' pass (featrun.h), with progress */
typedef struct {
    as_featrun *st;
    const as_featrun_cfg *c;
    as_writer *w;
    as_progress p;
} pass_ctx;

static int pass_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    pass_ctx *x = ctx;
    const uint64_t before = x->st->nrec;
    if (as_featrun_record(x->st, x->c, x->w, r, rec, err, errlen)) return -1;
    if (x->st->nrec != before) as_progress_update(&x->p, (double)x->st->nrec);
    return 0;
}

/* the command line */
typedef struct {
    as_task_cfg tc;
    int want_tasks, drop_tasks, model_task;
    int64_t *rowp;                  /* --row-pieces */
    size_t nrowp;
} feat_args;

static const struct option feat_opts[] = {
    { "tasks", required_argument, 0, OPT_TASKS },
    { "test-tasks", required_argument, 0, OPT_TEST },
    { "task-tables", required_argument, 0, OPT_TT },
    { "shards", required_argument, 0, OPT_SHARDS },
    { "mem-cap", required_argument, 0, OPT_CAP },
    { "unseen-ratio", required_argument, 0, OPT_UNSEEN },
    { "seed", required_argument, 0, OPT_SEED },
    { "drop-tasks", no_argument, 0, OPT_DROP },
    { "row-pieces", required_argument, 0, OPT_ROWP },
    { "model-task", no_argument, 0, OPT_MODELTASK },
    AS_CLI_COMMON_OPTIONS
};

/* one of as-features' own options; 0 for a code that is not one */
static int feat_opt(as_cli *cli, int opt, const char *arg, feat_args *a)
{
    switch (opt) {
    case OPT_TASKS: a->tc.ntasks = as_cli_i64(cli, "--tasks", arg, 1, 10000000); a->want_tasks = 1; return 1;
    case OPT_TEST: a->tc.ntest = as_cli_i64(cli, "--test-tasks", arg, 0, 10000000); return 1;
    case OPT_TT: a->tc.tables = as_cli_lim(cli, "--task-tables", arg, 1, AS_LIM_TABLES); return 1;
    case OPT_SHARDS: a->tc.shards = as_cli_lim(cli, "--shards", arg, 1, AS_LIM_SHARDS); return 1;
    case OPT_CAP: {
        uint64_t v;
        if (as_parse_size(arg, &v) || v == 0) as_cli_usage(cli, "--mem-cap: '%s' is not a size (e.g. 2G, 512M, 1000000)", arg);
        a->tc.mem_cap = v;
        return 1;
    }
    case OPT_UNSEEN: a->tc.unseen_ratio = as_cli_f64(cli, "--unseen-ratio", arg, 0, 1); return 1;
    case OPT_DROP: a->drop_tasks = 1; return 1;
    case OPT_MODELTASK: a->model_task = 1; return 1;
    case OPT_ROWP: {
        free(a->rowp);
        a->rowp = NULL;
        size_t k;
        if (as_parse_i64_list(arg, 2, 1024, &a->rowp, &k) || !k) as_cli_usage(cli, "--row-pieces: '%s' is not a list of block counts in 2..1024 (e.g. 2,4,8)", arg);
        a->nrowp = k;
        return 1;
    }
    case OPT_SEED: a->tc.seed = (uint64_t)as_cli_i64(cli, "--seed", arg, 0, INT64_MAX); return 1;
    default: return 0;
    }
}

/* the options into *a, checked: usage errors exit 2 */
static void parse_args(as_cli *cli, int argc, char **argv, feat_args *a)
{
    a->tc = (as_task_cfg){ 0, -1, 80, 0, 0, 0, -1 };
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, feat_opts, NULL)) != -1)
        if (!feat_opt(cli, opt, optarg, a) && !as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
    as_cli_finish(cli);
    as_task_cfg *tc = &a->tc;
    if (a->model_task && a->want_tasks) as_cli_usage(cli, "--model-task and --tasks exclude each other");
    if (a->model_task && (tc->ntest >= 0 || tc->unseen_ratio >= 0))
        as_cli_usage(cli, "--model-task makes one test task: --test-tasks and --unseen-ratio do not apply");
    if (!a->want_tasks && !a->model_task && (tc->ntest >= 0 || tc->shards || tc->mem_cap || tc->unseen_ratio >= 0))
        as_cli_usage(cli, "task options need --tasks N");
    if (tc->ntest < 0) tc->ntest = tc->ntasks / 10;
    if (tc->ntest > tc->ntasks) as_cli_usage(cli, "--test-tasks %" PRId64 " exceeds --tasks %" PRId64, tc->ntest, tc->ntasks);
}

/* --tasks and --model-task: the tasks of the pool, after its tables */
static void write_tasks(as_writer *w, feat_args *a, const as_featrun *st)
{
    char err[1024];
    if (a->want_tasks) {
        as_task *tasks;
        if (as_tasks_make(&a->tc, st->ids, st->bytes, st->npool, &tasks, err, sizeof err)) {
            as_writer_abort(w);
            as_die(AS_EXIT_DATA, "%s", err);
        }
        for (int64_t i = 0; i < a->tc.ntasks; i++) as_task_write(w, &a->tc, &tasks[i]);
        as_tasks_free(tasks, a->tc.ntasks);
    }
    if (a->model_task && as_featrun_model_task(st, &a->tc, w, err, sizeof err)) {
        as_writer_abort(w);
        as_die(AS_EXIT_DATA, "%s", err);
    }
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-features", "as-features [options] [FILE...]", HELP);
    static feat_args a;     /* static: --row-pieces' list still reachable at as_die */
    parse_args(&cli, argc, argv, &a);

    as_writer *w = as_cli_open_output(&cli);
    /* static: still reachable when a bad record ends the run through as_die (no leak report) */
    static as_featrun st;
    /* --model-task: the task's K blocks too, TorchRec's row_wise (as-plan --split-tables) */
    as_featrun_cfg fc = { a.rowp, a.nrowp, a.drop_tasks, a.model_task ? (a.tc.shards ? a.tc.shards : -1) : 0 };
    pass_ctx x = { &st, &fc, w, { 0 } };
    as_progress_start(&x.p, &cli, "records", 0);
    double t0 = as_now();
    char err[1024];
    if (as_read_records(optind < argc ? argv + optind : NULL, optind < argc ? argc - optind : 0, pass_rec, &x, err, sizeof err)) {
        as_writer_abort(w);
        as_die(AS_EXIT_DATA, "%s", err);
    }
    as_progress_end(&x.p);
    double dt = as_now() - t0;
    as_debug("%" PRId64 " tables, %" PRIu64 " lookups in %.2f s: %.1f M lookups/s end to end, %.1f M lookups/s "
             "counting alone (%.2f s); peak RSS %.0f MB", st.npool, st.lookups, dt, dt > 0 ? st.lookups / dt / 1e6 : 0,
             st.tcomp > 0 ? st.lookups / st.tcomp / 1e6 : 0, st.tcomp, as_peak_rss() / 1e6);
    if (a.nrowp) as_debug("%" PRId64 " row pieces", st.npieces);
    write_tasks(w, &a, &st);
    as_writer_close(w);
    as_featrun_free(&st);
    free(a.rowp);
    return 0;
}
