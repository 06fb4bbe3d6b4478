/* as-eval - evaluate sharding plans: balance, speedup over random, memory, feasibility,
 * measurement noise, the floor (the costliest table alone), the per-algorithm summary (the paper's Figure 8) with intervals, a
 * verdict in words, as tables and gnuplot plots; and the training curve of as-rl's log
 * (`train` records). */
#include "cli.h"
#include "common.h"
#include "evalplot.h"
#include "evalrun.h"
#include "split.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --comm-gbps: 0, or a rate in GiB/s in these bounds */
#define COMM_GBPS_MIN 1e-3
#define COMM_GBPS_MAX 1e6

static const char HELP[] =
    "Read `plan` records annotated with measured per-shard costs (as-bench: cost_ms, cost_kind\n"
    "\"measured\"), or estimate every shard's cost with --model (then every figure is labelled\n"
    "\"estimated\"; measured and estimated costs are never mixed in one evaluation), and print:\n"
    "  plans    per plan: max, min and mean shard cost, degree of balance = min/max, speedup =\n"
    "           max cost of the random plan of the same task and run / max cost of the plan,\n"
    "           largest and smallest shard memory, feasibility; with as-bench's noise fields,\n"
    "           its noisy shards, and a * after the balance of a plan whose slowest or\n"
    "           fastest shard stayed noisy (its balance and speedup are not trustworthy);\n"
    "           with single-table costs, the task's floor and max/floor (see Floor)\n"
    "  shards   per shard: tables, cost, memory; with the noise fields, spread and noisy\n"
    "  ranks    the planner's statistics per plan, rank by rank (like TorchRec's planner's\n"
    "           stats table): items (tables, pieces; by name for a model config's tables),\n"
    "           memory by TorchRec's terms (weights, optimizer state, pipeline buffers) and\n"
    "           share of the cap, the cost model's prediction, the cost and cost/pred (the\n"
    "           kernel's, without charged communication); then what makes the slowest rank\n"
    "           slow: its cost against the mean rank and the next, and its items by their\n"
    "           cost alone, predicted (plans of as-plan --model) and measured (single-item\n"
    "           cost records: the input's and --singles FILE's). The slowest rank is the\n"
    "           costliest when every rank has a cost, the most predicted when none has;\n"
    "           with some ranks unmeasured (nil) there is none: a prediction is never\n"
    "           compared with a measurement\n"
    "  summary  per algorithm: balance mean ± std with the 95 % interval of the mean, speedup\n"
    "           as the geometric mean with its 95 % interval (the paper's Figure 8), and the\n"
    "           noisy shards; CSV adds the arithmetic speedup mean ± std (older columns);\n"
    "           with floors, the mean max/floor and the plans at their floor, then the\n"
    "           floor-bound sentence (see Floor); when plans carry model_quality, the cost\n"
    "           model column (see Cost model; CSV: model_plans, model_weak, model_unjudged)\n"
    "  verdict  the closing summary in words: the winner by mean balance and its speedup, by\n"
    "           how much it leads the runner-up, cost-greedy and random (paired over the same\n"
    "           tasks), whether that ranking is resolved or too noisy, the order of all\n"
    "           algorithms (> between a resolved neighbour pair, ≈ otherwise), how noisy the\n"
    "           measurement was, how many tasks are floor-bound, which algorithms' plans\n"
    "           rest on a cost model as-plan marked weak, how good the cost model is, where\n"
    "           the plots are\n"
    "  curve    the training curve of `train` records (as-rl --log): episode, wall_s, evals,\n"
    "           reward, pred_balance and the greedy evaluation's eval_pred_balance and\n"
    "           eval_meas_balance, for the records with an evaluation (without any: every\n"
    "           Nth record, at most 20 rows)\n"
    "Infeasible plans and plans with an unmeasured shard count in `plans` but not in the\n"
    "statistics. A run is one input file and plan seed: give several runs (files, or plans with\n"
    "different seeds) and the statistics pool them. std is the population standard deviation.\n"
    "\n"
    "Statistics: 95 % intervals are Student t-intervals of the mean (sample std, n-1 degrees\n"
    "of freedom; n/a with fewer than 2 values); the speedup's is the t-interval of the mean log\n"
    "speedup, exponentiated; a balance interval is clipped to [0, 100] %. With --over runs each\n"
    "run is first reduced to one value per algorithm (balance: the mean over its tasks;\n"
    "speedup: the geometric mean) and the statistics are over runs.\n"
    "\n"
    "Ranking (verdict): the winner has the highest mean balance (ties: the higher speedup),\n"
    "the runner-up the next. They are compared per task (same run and task; with --over runs,\n"
    "per run): the 95 % interval of the mean balance difference. The ranking is resolved when\n"
    "that interval lies above 0 and at most 10 % of the two algorithms' flagged shards are\n"
    "noisy (cost_noisy); otherwise the verdict says plainly that the measurements cannot rank\n"
    "them: too noisy (more than 10 % noisy shards) or a difference within the variation over\n"
    "tasks (the interval includes 0); one paired task: too few to rank; equal plans: a tie.\n"
    "Plans measured in passes (as-bench --passes: the same plans measured apart, in time and\n"
    "in fresh memory; cost_pass_ms) are also ranked on the variation between passes: the\n"
    "ranking is resolved only when the winner's mean lead is above 0 in every pass, and the\n"
    "verdict says so; otherwise it cannot rank them and says that the lead does not hold in\n"
    "every pass. The plans table shows each plan's balance per pass (lowest-highest) and marks\n"
    "with ↕ a plan whose order against another plan of its task flips between passes; the\n"
    "summary the per-pass mean balance (lowest-highest); the shards table each shard's spread\n"
    "over the passes (cost_pass_spread). A resolved ranking of one measurement without\n"
    "passes (not --over runs) adds that its interval covers the tasks, not a second\n"
    "measurement of the same plans, which on a shared machine can move by a few points.\n"
    "\n"
    "Floor: a shard holding a table costs at least that table alone, so no table-wise plan\n"
    "of a task has a slowest shard below its costliest table alone: the task's floor; only\n"
    "splitting tables goes lower. Measured plans: a table's single cost is the median of its\n"
    "single-table `cost` records (as-bench --singles writes one per table; any cost record\n"
    "of one table counts, those of the plans too) measured on the plans' device (any, when\n"
    "the plans name none), from the input and --singles FILE. Estimated plans (--model):\n"
    "the model's prediction for each table alone. A table without a single cost leaves its\n"
    "task's floor unknown (n/a), never guessed. max/floor is the plan's slowest shard over\n"
    "its floor, printed as it is (measurement noise can put it below 1). A task is\n"
    "floor-bound when its best plan (the lowest slowest shard over all algorithms) has its\n"
    "slowest shard at most the margin above the floor, or below it: 2 % for measured costs\n"
    "(the CPU's noise), 0 for estimated ones (--floor-margin). With several runs the counts\n"
    "are over task runs.\n"
    "\n"
    "Communication: plans from as-plan carry each shard's bytes in and out (comm_in_bytes:\n"
    "its tables' ids, 8 bytes a lookup; comm_out_bytes: their pooled outputs and gradients,\n"
    "2 x batch x dim x 4 bytes; a column piece moves all its table's ids, a row piece\n"
    "full-width partial sums; comm_ar_bytes: the ring all-reduce of the data-parallel\n"
    "tables' gradients). At --comm-gbps G > 0 every shard's cost gains its bytes / G\n"
    "plus every shard's bytes / K / G (its side of the all-to-all), the terms as-plan\n"
    "--split-tables charges (modelled, not measured: measured kernel costs plus modelled\n"
    "communication, said above the tables). --comm-model charges each sharding type's\n"
    "collectives instead (alpha per call plus bytes over their bus bandwidth; below).\n"
    "Charged only when every plan carries the bytes; a mix is not charged and said so.\n"
    "Floors compare the kernel cost alone.\n"
    "\n"
    "Cost model: its held-out quality (R², MAPE, MAE on the test shards, and the linear\n"
    "baseline's) comes from a `model` record's `heldout` or, in older files, a\n"
    "`costfit-report` (model.test, linear.test): of the --model file, else of the input; it is\n"
    "printed above the tables. A model worse than the linear baseline (lower R² or higher MAE)\n"
    "is called untrustworthy in words. Plans placed by a cost model carry as-plan's judgement\n"
    "of it (model_quality: its held-out R², the linear baseline's, the threshold, weak):\n"
    "the verdict names the algorithms whose plans rest on a weak model (CSV: weak_model_algs)\n"
    "or on one of unjudged quality; a malformed model_quality is bad data (exit 1).\n"
    "\n"
    "Negative costs: a negative measured cost is bad data (exit 1); a negative estimated cost\n"
    "(an unconstrained cost model) counts as 0 ms, said once on stderr and above the tables.\n"
    "\n"
    "Options:\n"
    "      --model FILE       estimate shard costs with this cost model (needs the tables'\n"
    "                         `features` records in the input)\n"
    "      --singles FILE     single-table `cost` records (the cost dataset of as-bench\n"
    "                         --singles) for the floor, besides those of the input; the\n"
    "                         file's other records are ignored\n"
    "      --floor-margin X   floor-bound: the best plan's slowest shard <= floor x (1 + X),\n"
    "                         X in [0, 1] (default 0.02 measured, 0 estimated)\n"
    "      --comm-gbps G      charge communication at G GiB/s, G in [0.001, 1e6] (default\n"
    "                         600: one host of NVLink GPUs, TorchRec's intra-node figure);\n"
    "                         0: report the bytes only\n"
    "      --comm-model M     charge communication by a model of each collective instead:\n"
    "                         nvlink8 (one host of 8 NVLink 4 GPUs, published NCCL figures:\n"
    "                         all-to-all 10.5 us + 370 GB/s busbw, reduce-scatter 10.8 us + 370\n"
    "                         GB/s, all-reduce 15 us + 480 GB/s; at most 8 ranks), h100-ib\n"
    "                         (hosts of 8 H100, one 400 Gb/s InfiniBand NIC a GPU; 8 or a\n"
    "                         multiple of 8 ranks), torchrec[:L] (TorchRec's planner's own\n"
    "                         estimate, hosts of L GPUs), nccl:FILE,... (your cluster's\n"
    "                         nccl-tests output, run on the plans' ranks: each call its\n"
    "                         measured time at its message), or A/B,A/B,A/B: your own alpha\n"
    "                         (us) / bus bandwidth (GB/s) of the all-to-all, ring collectives\n"
    "                         and all-reduce; any with @bw=X,a2a-bw=X,lat=Y. Per iteration\n"
    "                         TorchRec's table- and column-wise sharding run 3 all-to-alls\n"
    "                         each, row-wise 1 and a reduce-scatter and an all-gather,\n"
    "                         data-parallel 1 all-reduce; every rank pays the calls of each\n"
    "                         type the plan has, its message the larger of its own side and\n"
    "                         its share of everyone's (lib/records/comm.h)\n"
    "      --chosen ALG       --table range: the choice (default: each task's fastest)\n"
    "      --versus ALG       --table range: the reference (default torchrec-own, else torchrec)\n"
    "      --candidates FILE  --table range: only these plans (labels, one a line)\n"
    "      --range-model M    --table range: another model the worst case runs over (up to 8)\n"
    "      --tie X            --table range: the choice holds within X of the best (default\n"
    "                         0.01)\n"
    "      --format F         text (default), markdown or csv\n"
    "      --table LIST       which tables, comma-separated: plans, shards, ranks, comm (each\n"
    "                         plan's slowest rank: its communication by sharding type,\n"
    "                         table-wise, column-wise, row-wise, data-parallel, and its share\n"
    "                         of the rank's time), range (how far each task's choice holds:\n"
    "                         the winner as every collective's bandwidth, the all-to-all's\n"
    "                         alone and the latency go from 1/16 to 16 times the model's, the\n"
    "                         crossings against TorchRec's own plan, and each plan's worst\n"
    "                         case over 0.5x-2x and --range-model's: lib/eval/evalrange.h),\n"
    "                         summary, curve, verdict,\n"
    "                         printed in that order whatever the order given\n"
    "                         (default plans,summary; with --curve and no plans in the\n"
    "                         input: none)\n"
    "      --over W           summary statistics over `plans` (every task of every run, the\n"
    "                         default) or `runs` (each run's figure over its tasks)\n"
    "      --split S          only plans of tasks of split S (train or test)\n"
    "      --plot FILE        plots with gnuplot, in the format of FILE's extension (.png,\n"
    "                         .svg or .pdf; anything else is a usage error): balance (mean ±\n"
    "                         std) and speedup (geometric mean, 95 % interval) per algorithm\n"
    "                         with error bars inside the axes, per-shard costs of every\n"
    "                         algorithm on one task (a log axis when the bars span more than\n"
    "                         30x), and the cost model's predicted vs measured test costs when\n"
    "                         a `costfit-report` record is in the input\n"
    "      --plot-task ID     the task of the per-shard bars (default: the first plan's)\n"
    "      --curve FILE       the training curve of the `train` records with gnuplot (.png,\n"
    "                         .svg or .pdf): balance against episodes and against training\n"
    "                         wall time (wall_s); series: the training episodes' predicted\n"
    "                         balance (their reward where an update had no feasible episode),\n"
    "                         their measured balance (bench rewards), the greedy evaluations'\n"
    "                         predicted and measured balance\n"
    "\n"
    "A stream of `train` records alone is valid input for --table curve and --curve. The\n"
    "records are one run, in input order (as-rl --resume continues a log); when episodes go\n"
    "back (logs of several runs concatenated) a warning says so.\n"
    "\n"
    "Exit status 1 also when there are no plans (and plan tables or --plot are asked for), no\n"
    "train records (and the curve is asked for), a plan has no costs (and no --model), the\n"
    "input mixes measured and estimated costs, or a single-table cost record is bad (a\n"
    "cost_ms that is not a number above 0). A failing gnuplot is exit 3.\n"
    "\n"
    "Example:\n"
    "  as-plan --alg all ft.ast | as-bench --tables pool.ast | as-eval --format markdown\n"
    "  cat measured.ast model.ast | as-eval --format markdown --table plans,summary,verdict \\\n"
    "      --singles costs.ast --plot plots.svg\n"
    "  as-eval --table curve --curve curve.png train.ast\n";

static void check_plot_name(as_cli *cli, const char *opt, const char *path)
{
    if (!*path) as_cli_usage(cli, "%s: empty file name", opt);
    if (as_eval_plot_format(path) < 0)
        as_cli_usage(cli, "%s: '%s': the extension names the format; use %s", opt, path, AS_EVAL_PLOT_FORMATS);
}

enum { OPT_MODEL = AS_OPT_TOOL_BASE, OPT_FORMAT, OPT_TABLE, OPT_OVER, OPT_SPLIT, OPT_PLOT, OPT_PLOT_TASK, OPT_CURVE, OPT_SINGLES,
       OPT_FLOOR_MARGIN, OPT_COMM_GBPS, OPT_COMM_MODEL, OPT_CHOSEN, OPT_VERSUS, OPT_CANDIDATES, OPT_RANGE_MODEL, OPT_TIE };


/* --table LIST: the tables shown, instead of the default plans and summary */
static void table_arg(as_cli *cli, const char *arg, as_eval_opts *o)
{
    o->show_plans = o->show_shards = o->show_ranks = o->show_comm = o->show_summary = o->show_curve = o->show_verdict = 0;
    o->show_range = 0;
    o->table_given = 1;
    char *s = as_strdup(arg), *save = NULL;
    for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "plans")) o->show_plans = 1;
        else if (!strcmp(t, "shards")) o->show_shards = 1;
        else if (!strcmp(t, "ranks")) o->show_ranks = 1;
        else if (!strcmp(t, "comm")) o->show_comm = 1;
        else if (!strcmp(t, "range")) o->show_range = 1;
        else if (!strcmp(t, "summary")) o->show_summary = 1;
        else if (!strcmp(t, "curve")) o->show_curve = 1;
        else if (!strcmp(t, "verdict")) o->show_verdict = 1;
        else as_cli_usage(cli, "--table: '%s' is not plans, shards, ranks, comm, range, summary, verdict or curve", t);
    }
    free(s);
    if (!o->show_plans && !o->show_shards && !o->show_ranks && !o->show_comm && !o->show_range && !o->show_summary &&
        !o->show_curve && !o->show_verdict)
        as_cli_usage(cli, "--table: nothing to show");
}

/* the communication's options and --table range's: 1 when opt is one of them */
static int comm_opt(as_cli *cli, int opt, const char *optarg, as_eval_opts *o)
{
    switch (opt) {
    case OPT_COMM_GBPS:
        /* 0 (not charged) or a rate in [COMM_GBPS_MIN, COMM_GBPS_MAX]: 1e-308 GiB/s would make
           every cost infinite */
        if (as_parse_f64(optarg, 0, COMM_GBPS_MAX, &o->comm_gbps) || (o->comm_gbps > 0 && o->comm_gbps < COMM_GBPS_MIN))
            as_cli_usage(cli, "--comm-gbps: '%s' is neither 0 (communication not charged) nor a rate in [%g, %g] GiB/s",
                         optarg, COMM_GBPS_MIN, COMM_GBPS_MAX);
        o->comm_gbps_given = 1;
        return 1;
    case OPT_COMM_MODEL: {
        char e[512];
        const int rc = as_comm_model_parse(optarg, &o->comm, e, sizeof e);
        if (rc == -2) as_die(AS_EXIT_DATA, "--comm-model: %s", e);
        if (rc) as_cli_usage(cli, "--comm-model: %s", e);
        o->comm_model_arg = optarg;
        return 1;
    }
    case OPT_CHOSEN: o->chosen = optarg; return 1;
    case OPT_VERSUS: o->versus = optarg; return 1;
    case OPT_CANDIDATES: o->candidates = optarg; return 1;
    case OPT_RANGE_MODEL: {
        char e[512];
        if (o->nrange_model == AS_RANGE_MAX_MODELS) as_cli_usage(cli, "--range-model: at most %d", AS_RANGE_MAX_MODELS);
        const int rc = as_comm_model_parse(optarg, &o->range_model[o->nrange_model], e, sizeof e);
        if (rc == -2) as_die(AS_EXIT_DATA, "--range-model: %s", e);
        if (rc) as_cli_usage(cli, "--range-model: %s", e);
        o->nrange_model++;
        return 1;
    }
    case OPT_TIE: o->tie = as_cli_f64(cli, "--tie", optarg, 0, 1); return 1;
    default: return 0;
    }
}

static void parse_args(as_cli *cli, int argc, char **argv, as_eval_opts *o)
{
    static const struct option opts[] = {
        { "model", required_argument, 0, OPT_MODEL },
        { "format", required_argument, 0, OPT_FORMAT },
        { "table", required_argument, 0, OPT_TABLE },
        { "over", required_argument, 0, OPT_OVER },
        { "split", required_argument, 0, OPT_SPLIT },
        { "plot", required_argument, 0, OPT_PLOT },
        { "plot-task", required_argument, 0, OPT_PLOT_TASK },
        { "curve", required_argument, 0, OPT_CURVE },
        { "singles", required_argument, 0, OPT_SINGLES },
        { "floor-margin", required_argument, 0, OPT_FLOOR_MARGIN },
        { "comm-gbps", required_argument, 0, OPT_COMM_GBPS },
        { "comm-model", required_argument, 0, OPT_COMM_MODEL },
        { "chosen", required_argument, 0, OPT_CHOSEN },
        { "versus", required_argument, 0, OPT_VERSUS },
        { "candidates", required_argument, 0, OPT_CANDIDATES },
        { "range-model", required_argument, 0, OPT_RANGE_MODEL },
        { "tie", required_argument, 0, OPT_TIE },
        AS_CLI_COMMON_OPTIONS
    };
    *o = (as_eval_opts){ .fmt = AS_EVAL_TEXT, .show_plans = 1, .show_summary = 1, .plot_task = -1, .floor_margin = -1,
                        .comm_gbps = AS_SPLIT_COMM_GBPS, .tie = 0.01 };
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, opts, NULL)) != -1) {
        switch (opt) {
        case OPT_MODEL: o->model_path = optarg; break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "text")) o->fmt = AS_EVAL_TEXT;
            else if (!strcmp(optarg, "markdown")) o->fmt = AS_EVAL_MARKDOWN;
            else if (!strcmp(optarg, "csv")) o->fmt = AS_EVAL_CSV;
            else as_cli_usage(cli, "--format: '%s' is not text, markdown or csv", optarg);
            break;
        case OPT_TABLE: table_arg(cli, optarg, o); break;
        case OPT_OVER:
            if (!strcmp(optarg, "plans")) o->over_runs = 0;
            else if (!strcmp(optarg, "runs")) o->over_runs = 1;
            else as_cli_usage(cli, "--over: '%s' is not plans or runs", optarg);
            break;
        case OPT_SPLIT:
            if (strcmp(optarg, "train") && strcmp(optarg, "test")) as_cli_usage(cli, "--split: '%s' is not train or test", optarg);
            o->split = optarg;
            break;
        case OPT_PLOT:
            check_plot_name(cli, "--plot", optarg);
            o->plot = optarg;
            break;
        case OPT_PLOT_TASK: o->plot_task = as_cli_i64(cli, "--plot-task", optarg, 0, INT64_MAX); break;
        case OPT_CURVE:
            check_plot_name(cli, "--curve", optarg);
            o->curve = optarg;
            break;
        case OPT_SINGLES:
            if (!*optarg) as_cli_usage(cli, "--singles: empty file name");
            o->singles = optarg;
            break;
        case OPT_FLOOR_MARGIN: o->floor_margin = as_cli_f64(cli, "--floor-margin", optarg, 0, 1); break;
        default:
            if (comm_opt(cli, opt, optarg, o)) break;
            if (!as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
        }
    }
    as_cli_finish(cli);
    if (o->comm_model_arg && o->comm_gbps_given)
        as_cli_usage(cli, "--comm-model and --comm-gbps are two models of the communication: give one");
    if (!o->comm_model_arg) o->comm = as_comm_bandwidth(o->comm_gbps);
    as_cli_input_arg(cli, "--model", o->model_path);
    as_cli_input_arg(cli, "--singles", o->singles);
    as_cli_input_arg(cli, "--candidates", o->candidates);
    if ((o->chosen || o->versus || o->candidates || o->nrange_model) && !o->show_range)
        as_cli_usage(cli, "--chosen, --versus, --candidates and --range-model are --table range's");
    as_cli_output_arg(cli, "--plot", o->plot);
    as_cli_output_arg(cli, "--curve", o->curve);
    if (o->plot_task >= 0 && !o->plot) as_cli_usage(cli, "--plot-task needs --plot FILE");
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-eval", "as-eval [options] [FILE...]", HELP);
    static as_eval_run x;
    char err[4096];
    parse_args(&cli, argc, argv, &x.o);
    int rc = as_eval_run_read(&x, argv + optind, argc - optind, err, sizeof err);
    if (rc) as_die(rc, "%s", err);
    if (as_eval_run_prints(&x)) {
        FILE *f = as_cli_open_text(&cli);
        if ((rc = as_eval_run_print(f, &x, err, sizeof err))) as_die(rc, "%s", err);
        as_cli_close_text(&cli, f);
    }
    if ((rc = as_eval_run_plots(&x, err, sizeof err))) as_die(rc, "%s", err);
    as_eval_run_free(&x);
    return 0;
}
