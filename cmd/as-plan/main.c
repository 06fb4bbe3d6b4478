/* as-plan - sharding plans for tasks: the heuristic baselines and the cost-model greedy,
 * optionally refined by a local search on the cost model, with memory caps, the 2D-parallel rank map, and TorchRec / text renderings. */
#include "cli.h"
#include "common.h"
#include "costmodel.h"
#include "featurize.h"
#include "modelgate.h"
#include "reclimits.h"
#include "plan.h"
#include "planmodel.h"
#include "planrun.h"
#include "policy.h"
#include "refine.h"
#include "trplanread.h"
#include "stream.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --help up to the planners (their lines come from the registry, lib/records/planners.def) */
static const char HELP_HEAD[] =
    "Read `features` and `task` records (as-features) and write one `plan` record per task and\n"
    "algorithm: the shard of every table, weight memory per shard, the predicted cost per shard\n"
    "when a model is given, the algorithm, its options and the planning time. Input records\n"
    "pass through (features, tasks, others), so stages compose; plans follow at the end.\n"
    "\n"
    "Algorithms (--alg, comma-separated, or `all`):\n"
    ;

/* the rest of --help, after the planners' lines (as_plan_help) */
static const char HELP_TAIL[] =
    "  all                 every algorithm above but torchrec (cost-greedy only with --model,\n"
    "                      autoshard only with --policy); `all,torchrec` adds the baseline\n"
    "\n"
    "Options:\n"
    "      --alg LIST         algorithms (required)\n"
    "      --model FILE       cost model (as-costfit): enables cost-greedy and adds pred_ms\n"
    "      --min-model-r2 X   the quality gate on --model: a model whose held-out R² (stored\n"
    "                         in it by as-costfit) is below X (0..1, default 0.9) or below the\n"
    "                         linear baseline's R² on the same shards is weak: a warning on\n"
    "                         stderr, and the plans it places (cost-greedy, ALG+split,\n"
    "                         ALG+refine, --repair's) carry model_quality with weak true; a\n"
    "                         model without held-out metrics (trained with --test-frac 0, or\n"
    "                         further by as-rl) is of unknown quality: a warning, weak nil.\n"
    "                         off (or -inf): no gate, no warning, weak nil\n"
    "      --require-model-quality\n"
    "                         a weak model, or one of unknown quality, is an error (exit 1,\n"
    "                         the warning's words) before any plan is made\n"
    "      --policy FILE      policy (as-rl): enables autoshard; its inputs come from the cost\n"
    "                         model stored with it, pred_ms from --model as for every algorithm\n"
    "      --samples N        autoshard: candidate plans per task, the greedy one and N-1 drawn\n"
    "                         from the policy (seeded by --seed and the task's tables); the best\n"
    "                         by the policy's cost model is kept: feasible, then highest\n"
    "                         predicted balance, then lowest predicted max. Default `auto`:\n"
    "                         102400 / (tables x (48 + shards)), 1 to 64, about 0.1 s of\n"
    "                         planning per task (22 for 80 tables on 8 shards, 1 for 800 on\n"
    "                         80); 1 = the greedy plan only\n"
    "      --refine           after each algorithm, a local search on the cost model (needs\n"
    "                         --model): while it lowers the predicted max over shards (then the\n"
    "                         sum of squares of the shard costs), move a table off the slowest\n"
    "                         shard or, when no move helps, swap one of its tables with one\n"
    "                         elsewhere, the best step each time, never over the memory cap; a\n"
    "                         table left unplaced is placed once a step makes room for it. The\n"
    "                         plan's alg becomes ALG+refine (e.g. cost-greedy+refine), its\n"
    "                         `refine` field counts the steps; plan_ms includes the search\n"
    "      --refine-ms MS     wall-clock budget of the search per plan (default 100; 0 = none:\n"
    "                         run to a local optimum). A budget that stops the search makes the\n"
    "                         plan depend on the machine's speed; --refine-steps does not\n"
    "      --refine-steps N   at most N improving steps per plan (default 0 = no limit)\n"
    "      --keep-unrefined   with --refine, also write each algorithm's plan as it made it,\n"
    "                         before the refined one (one run gives both, to compare)\n"
    "      --no-dp            --alg torchrec without data_parallel (TorchRec's planner kept to\n"
    "                         table_wise, column_wise and row_wise)\n"
    "      --replicate        (needs --model) after each planner but torchrec, make whole tables\n"
    "                         data parallel (on every shard, each its 1/K of the batch, the\n"
    "                         gradient all-reduced) one at a time while that lowers the\n"
    "                         predicted slowest shard, communication charged at --comm-gbps\n"
    "                         (lib/plan/replicate.h); with --refine the plan is refined before\n"
    "                         and after; the plan's alg gains \"+dp\" (e.g.\n"
    "                         cost-greedy+split+dp+refine)\n"
    "      --split-tables     split tables (needs --model): a beam search over splits, each\n"
    "                         candidate placed with the algorithm and scored by the model's\n"
    "                         predicted slowest shard; a table is split by columns (2, 4, 8..\n"
    "                         equal pieces while their width stays a multiple of 4) or by\n"
    "                         rows (TorchRec's blocks of ceil(rows/N) rows, for N = 2, 4, 8\n"
    "                         whose features the input holds: as-features --row-pieces 2,4,8).\n"
    "                         The plan's alg becomes ALG+split, its `pieces` say which piece\n"
    "                         each entry is (docs/FORMAT.md); with --refine the refined split\n"
    "                         plan is ALG+split+refine. The search keeps no split when none\n"
    "                         is predicted faster, communication included (--comm-gbps),\n"
    "                         and its plan is never predicted slower, that way, than ALG's\n"
    "                         own (as made without --split-tables).\n"
    "                         lib/plan/split.h has the search's rules\n"
    "      --comm-gbps G      the bandwidth the split search (and --replicate, and given\n"
    "                         with --refine the refinement of every plan, TorchRec's too)\n"
    "                         charges communication at, GiB/s,\n"
    "                         0 or in [0.001, 1e6]\n"
    "                         (default 600: one host of NVLink GPUs, TorchRec's planner's\n"
    "                         intra-node figure; 0: not charged): each item's ids in (8 bytes\n"
    "                         per lookup) and pooled outputs out and their gradients back (2 x\n"
    "                         batch x dim x 4 bytes); split plans carry comm_in_bytes and\n"
    "                         comm_out_bytes per shard\n"
    "      --comm-model M     charge the split search, --replicate and the refinement of split\n"
    "                         plans by a model of each collective instead of --comm-gbps:\n"
    "                         nvlink8 (one host of 8 NVLink 4 GPUs, published NCCL constants;\n"
    "                         at most 8 shards), h100-ib (hosts of 8 H100 over 400 Gb/s\n"
    "                         InfiniBand; 8 or a multiple of 8 shards), torchrec[:L] (TorchRec's\n"
    "                         planner's own estimate, hosts of L GPUs, default all),\n"
    "                         nccl:FILE,FILE,... (your cluster's nccl-tests output:\n"
    "                         alltoall_perf and one or more of reduce_scatter_perf,\n"
    "                         all_gather_perf, all_reduce_perf, run on the plan's shard count;\n"
    "                         a2a=FILE, rs=, ag=, ar= name a file's collective; a file that is\n"
    "                         not a whole run is bad data, exit 1, naming file and line), or\n"
    "                         A/B,A/B,A/B (alpha us / bus GB/s of the all-to-all, the ring\n"
    "                         collectives, the all-reduce); any with @bw=X,a2a-bw=X,lat=Y\n"
    "                         (bandwidths, latency scaled). Each sharding type pays its\n"
    "                         collectives' calls on every shard once the plan has it, so a\n"
    "                         first row piece or data-parallel table must save more than that\n"
    "                         (lib/records/comm.h; the plans carry comm_model in its canonical\n"
    "                         form: each number as it reads back, no spaces, at most 1023 bytes)\n"
    "      --split-ms MS      wall-clock budget of the search per plan (default 1000, less\n"
    "                         --refine-ms with --refine (at least 100), so that both searches\n"
    "                         take at most a second; 0 = none); a budget that cuts it makes\n"
    "                         the plan machine-dependent\n"
    "      --threads N        threads placing the split search's candidates of a level at once\n"
    "                         (default: OMP_NUM_THREADS, else every core); the plans are the\n"
    "                         same for any number unless --split-ms cuts the search\n"
    "      --split-steps N    levels of the search (default 10); --split-beam W nodes kept per\n"
    "                         level (default 3); --split-cands C tables tried per node\n"
    "                         (default 6: those whose costliest item is predicted costliest)\n"
    "      --split-cols N     column splits of at most N pieces (0, the default: as many as\n"
    "                         keep each piece's width a multiple of 4, up to 64); make plan\n"
    "                         gives the most its cost dataset measured (4: as-bench\n"
    "                         --sample-pieces draws column halves and quarters), so that no\n"
    "                         split rests on the cost model's extrapolation\n"
    "      --split-rows LIST  row splits considered, comma-separated (default row_wise):\n"
    "                         row_wise  TorchRec's row_wise: K blocks of ceil(rows / K) rows,\n"
    "                                   block i on rank i, charged to every rank (the blocks'\n"
    "                                   features from as-features --row-pieces K); under a\n"
    "                                   --comm-model of hosts of L GPUs (h100-ib,\n"
    "                                   torchrec:L; K a multiple of L above it) also\n"
    "                                   TorchRec's table_row_wise: L blocks on one host's\n"
    "                                   ranks, block i on its rank i (--row-pieces L), and\n"
    "                                   a search from every table so\n"
    "                         N         N blocks placed anywhere: plans TorchRec CANNOT load\n"
    "                                   (said on stderr; N = K is row_wise's cut, pinned)\n"
    "                         none      column splits only\n"
    "                         Column splits are equal pieces on any ranks (TorchRec's\n"
    "                         column_wise): without N every split plan is one\n"
    "                         construct_module_sharding_plan loads\n"
    "      --split-seed S     where the search starts besides every table whole: torchrec\n"
    "                         (also from TorchRec's planner's splits of the task, its\n"
    "                         row_wise and column_wise tables: a second search, each under\n"
    "                         half the budget, the better plan kept, so that the split plan\n"
    "                         is never predicted slower than that start placed by the\n"
    "                         algorithm), none, or auto (default: torchrec for tasks of at\n"
    "                         most 256 tables, where TorchRec's planner takes well under the\n"
    "                         search's budget; its time counts in each split plan's plan_ms)\n"
    "      --seed S           seed of the random plans (default 0); task t uses stream t\n"
    "      --mem-cap SIZE     memory cap per shard for every task (bytes, K/M/G suffixes;\n"
    "                         0 = none), instead of the task's mem_cap\n"
    "      --shards K         shards per task, instead of the task's\n"
    "      --split S          plan only tasks of split S (train or test)\n"
    "      --world-size W     2D parallelism (TorchRec DMPCollection): W ranks in G = W/K\n"
    "                         replicas of the K-shard group; group i holds ranks i, G+i, ...,\n"
    "                         (K-1)G+i, so shard k lives on ranks k*G+i, i = 0..G-1 (`ranks`)\n"
    "      --format F         stream (default), text (a per-shard summary; a model config's\n"
    "                         tables by name, with each shard's memory by TorchRec's terms:\n"
    "                         weights, optimizer state, pipeline buffers) or torchrec (one\n"
    "                         JSON ShardingPlan per line; see pipelines/torchrec_plan.py; a\n"
    "                         split table is column_wise, row_wise or grid_shard with a shard\n"
    "                         per piece)\n"
    "      --local-size L     torchrec: GPUs per host, placement rank:r/cuda:r%L (default: the\n"
    "                         input's model-config record's, as-convert --config; else 8)\n"
    "      --module NAME      torchrec: the EmbeddingBagCollection's path in the model, the\n"
    "                         plan's key (e.g. sparse_arch.embedding_bag_collection in\n"
    "                         TorchRec's DLRM; default: the model-config's module_path, else\n"
    "                         \"\": the model is the collection itself); tables are keyed by\n"
    "                         their names in the model where the features carry them\n"
    "                         (as-convert --config), else t<id>\n"
    "      --repair FILE      instead of planning: refine the measured plans of FILE (as-bench's\n"
    "                         output on plans) on their measured costs (needs --model, not\n"
    "                         --alg): each plan of the input's tasks is rebuilt on its items'\n"
    "                         features (pieces too), each shard's predicted kernel cost is\n"
    "                         scaled by its measured / predicted cost, and the --refine search\n"
    "                         moves and swaps items off the slowest shard while that lowers\n"
    "                         the max (the plan's own communication charge included), within\n"
    "                         --refine-ms / --refine-steps. Written as ALG+refine+measured\n"
    "                         (e.g. cost-greedy+split+refine+measured); measure them again\n"
    "                         with as-bench to see what the round gained. With --alg, only the\n"
    "                         plans of those algorithms (all their variants) or labels (as\n"
    "                         --export's: a token with '+' or =LABEL that label exactly), an\n"
    "                         imported plan's (e.g. torchrec-own) skipped (without --alg it is\n"
    "                         an error: --alg all,torchrec repairs every planner's); two plans\n"
    "                         of a task whose repairs would share a label (ALG+split and\n"
    "                         ALG+split+refine) are an error: pick one with --alg; with\n"
    "                         --keep-unrefined, each plan also as it was measured, first (to\n"
    "                         measure both in one as-bench run). Plans without measured\n"
    "                         costs, and other tasks' plans, are skipped. A repaired plan\n"
    "                         repaired again (measured again first) is ALG...+measured2, and\n"
    "                         so on. The cap is --mem-cap, else the plan's own mem_cap (the\n"
    "                         cap it was made under; its task's when it has none)\n"
    "      --repair-round N   with --repair: only the plans of round N-1 (1: those not\n"
    "                         repaired yet, 2: the +measured ones, ...), written as round N\n"
    "      --export FILE      instead of planning: write the plans of FILE (as-plan's, as-bench's\n"
    "                         measured ones, repaired ones) in --format torchrec or text, each\n"
    "                         rebuilt on the input's features (pieces too) with its placement,\n"
    "                         pieces and label as they are: the plan you chose after measuring,\n"
    "                         for TorchRec. --alg selects labels (=LABEL that label exactly,\n"
    "                         ours or an imported plan's, e.g. =torchrec-own; it runs to the\n"
    "                         end of the list, commas and all, so it comes last; a name with '+'\n"
    "                         exactly, e.g. cost-greedy+split+refine; a bare algorithm every\n"
    "                         label of it),\n"
    "                         --task N one task's; the cap is --mem-cap or the plan's own\n"
    "                         (a shard over it is an error); with --model, text shows the\n"
    "                         predictions. --repair and --export read plans as as-eval does\n"
    "                         (a malformed field: exit 1 naming it), and a table's pieces must\n"
    "                         cover it exactly, to its last column and row (its size from the\n"
    "                         features)\n"
    "      --task N           with --export: only the plans of task N\n"
    "      --import FILE      instead of planning: read TorchRec plans, one JSON document per\n"
    "                         line in the form --format torchrec writes (docs/FORMAT.md; FILE\n"
    "                         - is standard input when the input stream is a named file), and\n"
    "                         write each as the `plan` record of its task (in the input) as if\n"
    "                         one of our planners had made it: a shard per entry on the rank\n"
    "                         of its placement, a partial shard as a piece, tables by their\n"
    "                         names or t<id>; derived fields (memory, counts, communication,\n"
    "                         pred_ms with --model) as for every plan, --format as for others.\n"
    "                         The label is the document's alg (default torchrec-import). No\n"
    "                         planner runs: --alg is not used with it. A data_parallel table\n"
    "                         (no shards, every rank) is imported on every shard (assign -2).\n"
    "                         Exit 1 naming the line, table and field: bad JSON, a line over\n"
    "                         64 MiB, a task not in the input, world_size not its shards,\n"
    "                         local_size not in 1..65536 (AS_MAX_SHARDS), a table unknown, not\n"
    "                         the task's or missing, a rank outside 0..K-1, a placement not\n"
    "                         rank:R/cuda:D (D = R % local_size when it is given), shards that\n"
    "                         do not tile a table exactly, a shard over the cap\n"
    "      --plans-only       write only the plans, not the input records\n"
    "\n"
    "Memory is fp16 weight bytes, or TorchRec's memory model for a model config's tables\n"
    "(as-convert --config: weights in their data type, optimizer state, pipeline buffers).\n"
    "A cap is never exceeded: a table that fits on no shard is left unplaced (assign -1), the\n"
    "plan is written with feasible = false and its unplaced tables, a message goes to stderr,\n"
    "and once every plan is written as-plan exits with status 1 and the message\n"
    "\"N of M plans infeasible\".\n"
    "\n"
    "Example:\n"
    "  as-features pool.ast --tasks 100 | as-plan --alg all --model cost.model > plans.ast\n"
    "  as-plan --alg all --model cost.model --refine --keep-unrefined ft.ast > plans.ast\n"
    "  as-bench --tables pool.ast plans.ast > measured.ast\n"
    "  as-plan --model cost.model --repair measured.ast --plans-only ft.ast > repaired.ast\n"
    "  as-plan --export measured.ast --task 3 --alg cost-greedy+split --format torchrec ft.ast\n"
    "  as-plan --import plans.json ft.ast > imported.ast\n";

enum { OPT_ALG = AS_OPT_TOOL_BASE, OPT_MODEL, OPT_SEED, OPT_CAP, OPT_SHARDS, OPT_SPLIT, OPT_WORLD, OPT_FORMAT,
       OPT_LOCAL, OPT_MODULE, OPT_PLANS_ONLY, OPT_POLICY, OPT_SAMPLES, OPT_REFINE, OPT_REFINE_MS, OPT_REFINE_STEPS,
       OPT_KEEP_UNREFINED, OPT_SPLIT_TABLES, OPT_SPLIT_MS, OPT_SPLIT_STEPS, OPT_SPLIT_BEAM, OPT_SPLIT_CANDS, OPT_SPLIT_COLS, OPT_COMM, OPT_REPAIR, OPT_REPAIR_ROUND, OPT_SPLIT_ROWS, OPT_SPLIT_SEED,
       OPT_EXPORT, OPT_TASK, OPT_MIN_R2, OPT_REQUIRE_QUALITY, OPT_IMPORT, OPT_NO_DP, OPT_REPLICATE, OPT_COMM_MODEL, OPT_THREADS };


/* the options, checked; *cfg gets everything but the model, the policy and the outputs */
typedef struct {
    const char *alg, *model, *policy, *split, *repair, *export_file, *import_file;
    int64_t rowp[16];               /* --split-rows */
    int fmt, plans_only;            /* fmt: 0 stream, 1 text, 2 torchrec */
    const char *refine_opt;         /* the first --refine-* option given, for the message */
    const char *split_opt;          /* the first --split-* option given */
    int split_ms_given;
    as_split_cfg scfg;
    as_comm_model comm_model;       /* --comm-model (scfg.comm_model points here) */
    int comm_gbps_given;
    as_torchrec_opts tro;
    int module_given, local_given;
    double min_r2;                  /* --min-model-r2; NaN: off */
    int min_r2_given, require_quality;
} args;

/* the options' combinations, after parsing: usage errors (exit 2) for what does not go
   together; the split search's default budget with --refine */
static void check_args(as_cli *cli, args *a, as_plan_run_cfg *cfg)
{
    as_cli_input_arg(cli, "--model", a->model);
    as_cli_input_arg(cli, "--policy", a->policy);
    if (cfg->repair_round && !a->repair) as_cli_usage(cli, "--repair-round needs --repair FILE");
    if (cfg->export_task >= 0 && !a->export_file) as_cli_usage(cli, "--task needs --export FILE");
    if (cfg->replicate && (a->import_file || a->export_file || a->repair))
        as_cli_usage(cli, "--replicate is for the planners (--alg): not with --import, --export or --repair");
    if (a->import_file) {
        as_cli_input_arg(cli, "--import", a->import_file);
        if (a->export_file || a->repair) as_cli_usage(cli, "--import does not go with --export or --repair");
        if (a->alg) as_cli_usage(cli, "--import writes the plans of FILE: no --alg planner runs with it");
        if (cfg->split || a->split_opt || cfg->refine || a->refine_opt)
            as_cli_usage(cli, "--import writes plans as they are: --split-tables and --refine are not used with it");
        if (a->policy) as_cli_usage(cli, "--import places nothing: --policy is not used with it");
    } else if (a->export_file) {
        as_cli_input_arg(cli, "--export", a->export_file);
        if (a->repair) as_cli_usage(cli, "--export and --repair do not go together");
        if (cfg->split || a->split_opt || cfg->refine || a->refine_opt)
            as_cli_usage(cli, "--export writes plans as they are: --split-tables and --refine are not used with it");
        if (a->fmt == 0) as_cli_usage(cli, "--export needs --format torchrec or text (the plans of FILE are a stream already)");
        if (a->policy) as_cli_usage(cli, "--export places nothing: --policy is not used with it");
    } else if (a->repair) {
        as_cli_input_arg(cli, "--repair", a->repair);
        if (!a->model) as_cli_usage(cli, "--repair needs --model FILE (it searches on the cost model)");
        if (cfg->split || a->split_opt) as_cli_usage(cli, "--repair keeps each plan's split: --split-tables is not used with it");
        if (cfg->refine) as_cli_usage(cli, "--repair refines already: --refine is not used with it");
    } else if (!a->alg) as_cli_usage(cli, "--alg is required (e.g. --alg all)");
    if (cfg->refine && !a->model) as_cli_usage(cli, "--refine needs --model FILE (it searches on the cost model)");
    if (a->min_r2_given && !a->model) as_cli_usage(cli, "--min-model-r2 needs --model FILE (it judges the cost model)");
    if (a->require_quality && !a->model) as_cli_usage(cli, "--require-model-quality needs --model FILE (it judges the cost model)");
    if (a->require_quality && isnan(a->min_r2))
        as_cli_usage(cli, "--require-model-quality needs the gate: --min-model-r2 off turns it off");
    if (!cfg->refine && !a->repair && a->refine_opt) as_cli_usage(cli, "%s needs --refine or --repair", a->refine_opt);
    if (cfg->split && !a->model) as_cli_usage(cli, "--split-tables needs --model FILE (it searches on the cost model)");
    if (cfg->replicate && !a->model) as_cli_usage(cli, "--replicate needs --model FILE (it decides on the cost model)");
    const int comm_opt = a->split_opt && (!strcmp(a->split_opt, "--comm-gbps") || !strcmp(a->split_opt, "--comm-model"));
    if (!cfg->split && a->split_opt && !((cfg->replicate || cfg->refine) && comm_opt))
        as_cli_usage(cli, "%s needs --split-tables%s", a->split_opt, comm_opt ? ", --replicate or --refine" : "");
    /* communication given: the refinement charges it on every plan, TorchRec's included */
    cfg->refine_comm = comm_opt;
    if (a->scfg.comm_model && a->comm_gbps_given)
        as_cli_usage(cli, "--comm-model and --comm-gbps are two models of the communication: give one");
    /* with --refine and no --split-ms, the two searches share the default second per plan */
    if (cfg->split && cfg->refine && !a->split_ms_given && cfg->refine_ms > 0)
        a->scfg.budget_ms = AS_SPLIT_MS - cfg->refine_ms > 100 ? AS_SPLIT_MS - cfg->refine_ms : 100;
    if (cfg->split && a->scfg.nrowp)
        as_info("--split-rows with block counts: row blocks placed on ranks of the search's choosing make plans "
                "TorchRec cannot load (its row_wise is K blocks, block i on rank i); they are for measuring, not "
                "for training");
    cfg->split_cfg = &a->scfg;
}

static const struct option plan_opts[] = {
    { "alg", required_argument, 0, OPT_ALG },
    { "model", required_argument, 0, OPT_MODEL },
    { "seed", required_argument, 0, OPT_SEED },
    { "mem-cap", required_argument, 0, OPT_CAP },
    { "shards", required_argument, 0, OPT_SHARDS },
    { "split", required_argument, 0, OPT_SPLIT },
    { "world-size", required_argument, 0, OPT_WORLD },
    { "format", required_argument, 0, OPT_FORMAT },
    { "local-size", required_argument, 0, OPT_LOCAL },
    { "module", required_argument, 0, OPT_MODULE },
    { "plans-only", no_argument, 0, OPT_PLANS_ONLY },
    { "policy", required_argument, 0, OPT_POLICY },
    { "samples", required_argument, 0, OPT_SAMPLES },
    { "refine", no_argument, 0, OPT_REFINE },
    { "refine-ms", required_argument, 0, OPT_REFINE_MS },
    { "refine-steps", required_argument, 0, OPT_REFINE_STEPS },
    { "keep-unrefined", no_argument, 0, OPT_KEEP_UNREFINED },
    { "split-tables", no_argument, 0, OPT_SPLIT_TABLES },
    { "no-dp", no_argument, 0, OPT_NO_DP },
    { "replicate", no_argument, 0, OPT_REPLICATE },
    { "split-ms", required_argument, 0, OPT_SPLIT_MS },
    { "threads", required_argument, 0, OPT_THREADS },
    { "split-steps", required_argument, 0, OPT_SPLIT_STEPS },
    { "split-beam", required_argument, 0, OPT_SPLIT_BEAM },
    { "split-cands", required_argument, 0, OPT_SPLIT_CANDS },
    { "split-cols", required_argument, 0, OPT_SPLIT_COLS },
    { "split-rows", required_argument, 0, OPT_SPLIT_ROWS },
    { "split-seed", required_argument, 0, OPT_SPLIT_SEED },
    { "comm-gbps", required_argument, 0, OPT_COMM },
    { "comm-model", required_argument, 0, OPT_COMM_MODEL },
    { "repair", required_argument, 0, OPT_REPAIR },
    { "repair-round", required_argument, 0, OPT_REPAIR_ROUND },
    { "export", required_argument, 0, OPT_EXPORT },
    { "task", required_argument, 0, OPT_TASK },
    { "import", required_argument, 0, OPT_IMPORT },
    { "min-model-r2", required_argument, 0, OPT_MIN_R2 },
    { "require-model-quality", no_argument, 0, OPT_REQUIRE_QUALITY },
    AS_CLI_COMMON_OPTIONS
};

/* The option groups below each handle their own codes and return 1, or 0 for a code that
 * is not theirs. */

/* the input, the algorithms and their models, the shards and the memory cap */
static int opt_planning(as_cli *cli, int opt, const char *arg, args *a, as_plan_run_cfg *cfg)
{
    switch (opt) {
    case OPT_ALG: a->alg = arg; return 1;
    case OPT_MODEL: a->model = arg; return 1;
    case OPT_MIN_R2: {
        char *end;
        errno = 0;
        double v = strtod(arg, &end);
        if (!strcmp(arg, "off") || !strcmp(arg, "-inf")) v = NAN;
        else if (!*arg || *end || errno || !(v >= 0 && v <= 1))
            as_cli_usage(cli, "--min-model-r2: '%s' is not an R² in 0..1 or off", arg);
        a->min_r2 = v;
        a->min_r2_given = 1;
        return 1;
    }
    case OPT_REQUIRE_QUALITY: a->require_quality = 1; return 1;
    case OPT_SEED: cfg->seed = (uint64_t)as_cli_i64(cli, "--seed", arg, 0, INT64_MAX); return 1;
    case OPT_CAP:
        if (as_parse_size(arg, &cfg->mem_cap) || cfg->mem_cap > INT64_MAX)
            as_cli_usage(cli, "--mem-cap: '%s' is not a size (e.g. 2G, 512M, 1000000; 0 = none)", arg);
        cfg->cap_given = 1;
        return 1;
    case OPT_SHARDS: cfg->shards = as_cli_lim(cli, "--shards", arg, 1, AS_LIM_SHARDS); return 1;
    case OPT_SPLIT:
        if (strcmp(arg, "train") && strcmp(arg, "test")) as_cli_usage(cli, "--split: '%s' is not train or test", arg);
        a->split = arg;
        return 1;
    case OPT_WORLD: cfg->world = as_cli_i64(cli, "--world-size", arg, 1, 100000000); return 1;
    case OPT_POLICY: a->policy = arg; return 1;
    case OPT_SAMPLES:
        if (strcmp(arg, "auto")) cfg->samples = (int)as_cli_i64(cli, "--samples", arg, 1, 100000);
        return 1;
    default: return 0;
    }
}

/* what is written: the format, TorchRec's module path and GPUs per host, the input's records */
static int opt_output(as_cli *cli, int opt, const char *arg, args *a)
{
    switch (opt) {
    case OPT_FORMAT:
        if (!strcmp(arg, "stream")) a->fmt = 0;
        else if (!strcmp(arg, "text")) a->fmt = 1;
        else if (!strcmp(arg, "torchrec")) a->fmt = 2;
        else as_cli_usage(cli, "--format: '%s' is not stream, text or torchrec", arg);
        return 1;
    case OPT_LOCAL: a->tro.local_size = as_cli_i64(cli, "--local-size", arg, 1, 1000000); a->local_given = 1; return 1;
    case OPT_MODULE:
        a->tro.module = arg;     /* "": the model is the EmbeddingBagCollection itself */
        a->module_given = 1;
        return 1;
    case OPT_PLANS_ONLY: a->plans_only = 1; return 1;
    default: return 0;
    }
}

/* --refine and its budget */
static int opt_refine(as_cli *cli, int opt, const char *arg, args *a, as_plan_run_cfg *cfg)
{
    switch (opt) {
    case OPT_REFINE: cfg->refine = 1; return 1;
    case OPT_REFINE_MS: {
        char *end;
        errno = 0;
        double v = strtod(arg, &end);
        if (!*arg || *end || errno || !(v >= 0 && v <= AS_REFINE_MAX_MS))
            as_cli_usage(cli, "--refine-ms: '%s' is not a number of ms in 0..%.0f", arg, AS_REFINE_MAX_MS);
        cfg->refine_ms = v;
        if (!a->refine_opt) a->refine_opt = "--refine-ms";
        return 1;
    }
    case OPT_REFINE_STEPS:
        cfg->refine_steps = as_cli_i64(cli, "--refine-steps", arg, 0, AS_REFINE_MAX_STEPS);
        if (!a->refine_opt) a->refine_opt = "--refine-steps";
        return 1;
    case OPT_KEEP_UNREFINED:
        cfg->keep_unrefined = 1;
        if (!a->refine_opt) a->refine_opt = "--keep-unrefined";
        return 1;
    default: return 0;
    }
}

/* --split-rows LIST: row_wise and ascending block counts, or none */
static void split_rows_arg(as_cli *cli, const char *arg, args *a)
{
    a->scfg.nrowp = 0;
    a->scfg.rowp = a->rowp;
    a->scfg.no_row_wise = 1;
    if (strcmp(arg, "none")) {
        char *s = as_strdup(arg), *rest = s;
        for (char *tok; (tok = strsep(&rest, ","));) {
            if (!*tok) as_cli_usage(cli, "--split-rows: an empty block count in '%s'", arg);
            if (!strcmp(tok, "row_wise")) {
                a->scfg.no_row_wise = 0;
                continue;
            }
            if (a->scfg.nrowp == (int)(sizeof a->rowp / sizeof *a->rowp))
                as_cli_usage(cli, "--split-rows: at most %d block counts", (int)(sizeof a->rowp / sizeof *a->rowp));
            if (strspn(tok, "0123456789") != strlen(tok))
                as_cli_usage(cli, "--split-rows: '%s' is not row_wise, none or a block count", tok);
            const int64_t v = as_cli_i64(cli, "--split-rows", tok, 2, 1 << 20);
            if (a->scfg.nrowp && v <= a->rowp[a->scfg.nrowp - 1])
                as_cli_usage(cli, "--split-rows: block counts must ascend (%s)", arg);
            a->rowp[a->scfg.nrowp++] = v;
        }
        free(s);
        if (!a->scfg.nrowp && a->scfg.no_row_wise)
            as_cli_usage(cli, "--split-rows: '%s' is not row_wise, a list of block counts, or none", arg);
    }
}

/* --split-tables and the search's options */
static int opt_split(as_cli *cli, int opt, const char *arg, args *a, as_plan_run_cfg *cfg)
{
    const char *name;
    switch (opt) {
    case OPT_SPLIT_TABLES: cfg->split = 1; return 1;
    case OPT_NO_DP: cfg->no_dp = 1; return 1;
    case OPT_REPLICATE: cfg->replicate = 1; return 1;
    case OPT_SPLIT_MS:
        name = "--split-ms";
        a->scfg.budget_ms = as_cli_f64(cli, name, arg, 0, AS_REFINE_MAX_MS);
        a->split_ms_given = 1;
        break;
    case OPT_THREADS:
        name = "--threads";
        a->scfg.threads = (int)as_cli_i64(cli, name, arg, 1, 4096);
        break;
    case OPT_SPLIT_STEPS:
        name = "--split-steps";
        a->scfg.steps = (int)as_cli_i64(cli, name, arg, 1, 1000);
        break;
    case OPT_SPLIT_BEAM:
        name = "--split-beam";
        a->scfg.beam = (int)as_cli_i64(cli, name, arg, 1, 64);
        break;
    case OPT_SPLIT_ROWS:
        name = "--split-rows";
        split_rows_arg(cli, arg, a);
        break;
    case OPT_SPLIT_SEED:
        name = "--split-seed";
        if (strcmp(arg, "auto") && strcmp(arg, "torchrec") && strcmp(arg, "none"))
            as_cli_usage(cli, "--split-seed: '%s' is not auto, torchrec or none", arg);
        a->scfg.seed_mode = !strcmp(arg, "auto") ? AS_SPLIT_SEED_AUTO : !strcmp(arg, "torchrec") ? AS_SPLIT_SEED_TORCHREC
                                                                                              : AS_SPLIT_SEED_NONE;
        break;
    case OPT_SPLIT_CANDS:
        name = "--split-cands";
        a->scfg.cands = (int)as_cli_i64(cli, name, arg, 1, 1024);
        break;
    case OPT_SPLIT_COLS:
        name = "--split-cols";
        a->scfg.max_cols = (int)as_cli_i64(cli, name, arg, 0, 64);
        break;
    case OPT_COMM:
        name = "--comm-gbps";
        a->scfg.comm_gbps = as_cli_f64(cli, name, arg, 0, 1e6);
        /* as as-eval's: a rate below 1 MiB/s makes every charged cost absurd */
        if (a->scfg.comm_gbps > 0 && a->scfg.comm_gbps < 1e-3)
            as_cli_usage(cli, "--comm-gbps: '%s' is neither 0 (communication not charged) nor a rate in [%g, %g] GiB/s", arg,
                         1e-3, 1e6);
        a->comm_gbps_given = 1;
        break;
    case OPT_COMM_MODEL: {
        char e[512];
        name = "--comm-model";
        const int rc = as_comm_model_parse(arg, &a->comm_model, e, sizeof e);
        if (rc == -2) as_die(AS_EXIT_DATA, "--comm-model: %s", e);
        if (rc) as_cli_usage(cli, "--comm-model: %s", e);
        a->scfg.comm_model = &a->comm_model;
        break;
    }
    default: return 0;
    }
    /* the first of them given names them in "... needs --split-tables" */
    if (!a->split_opt) a->split_opt = name;
    return 1;
}

/* --repair and --export, measured or chosen plans read from a file */
static int opt_repair_export(as_cli *cli, int opt, const char *arg, args *a, as_plan_run_cfg *cfg)
{
    switch (opt) {
    case OPT_REPAIR:
        if (!*arg) as_cli_usage(cli, "--repair: empty file name");
        a->repair = arg;
        return 1;
    case OPT_REPAIR_ROUND: cfg->repair_round = (int)as_cli_i64(cli, "--repair-round", arg, 1, 1000); return 1;
    case OPT_EXPORT:
        if (!*arg) as_cli_usage(cli, "--export: empty file name");
        a->export_file = arg;
        return 1;
    case OPT_IMPORT:
        if (!*arg) as_cli_usage(cli, "--import: empty file name");
        a->import_file = arg;
        return 1;
    case OPT_TASK: cfg->export_task = as_cli_i64(cli, "--task", arg, 0, INT64_MAX); return 1;
    default: return 0;
    }
}

static void parse_args(as_cli *cli, int argc, char **argv, args *a, as_plan_run_cfg *cfg)
{
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, plan_opts, NULL)) != -1) {
        if (opt_planning(cli, opt, optarg, a, cfg) || opt_output(cli, opt, optarg, a) || opt_refine(cli, opt, optarg, a, cfg)
            || opt_split(cli, opt, optarg, a, cfg) || opt_repair_export(cli, opt, optarg, a, cfg))
            continue;
        if (!as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
    }
    as_cli_finish(cli);
    check_args(cli, a, cfg);
}

/* --alg against the mode: the algorithms to run (*nalg of them), --export's labels, or
 * --repair's filter; the world size against the shards: usage errors */
static int check_algs(as_cli *cli, const args *a, as_plan_run_cfg *cfg)
{
    char err[1024];
    int nalg = 0;
    if (!a->repair && !a->export_file && !a->import_file && as_plan_alg_list(cfg->want, &nalg, a->alg, a->model != NULL, a->policy != NULL, err, sizeof err))
        as_cli_usage(cli, "%s", err);
    /* --export (and --repair) with --alg: labels (with '+', or =LABEL) or algorithms, checked by name */
    if ((a->export_file || (a->repair && a->alg && strpbrk(a->alg, "=+"))) && a->alg) {
        const char *p = a->alg;
        char tok[128];
        int rc;
        while ((rc = as_plan_label_next(&p, tok, sizeof tok))) {
            if (rc < 0) as_cli_usage(cli, "--alg: a label of %zu bytes or more (labels are at most 63)", sizeof tok);
            if (tok[0] == '=') {   /* =LABEL: that label exactly (to the end), ours or an imported plan's */
                if (!tok[1]) as_cli_usage(cli, "--alg: '=' needs a plan label after it (e.g. =lookup-greedy)");
                continue;
            }
            as_plan_label l;
            as_plan_label_parse(tok, &l);
            if (!l.known) as_cli_usage(cli, "--alg: '%s' is not an algorithm or a plan label (e.g. cost-greedy+split)", tok);
        }
        if (a->export_file) cfg->export_algs = a->alg;
        else cfg->repair_labels = a->alg;
    }
    /* --repair with --alg of algorithms: only the plans of those algorithms (their policy is not needed) */
    if (a->repair && a->alg && !cfg->repair_labels) {
        if (as_plan_alg_list(cfg->want, &nalg, a->alg, 1, 1, err, sizeof err)) as_cli_usage(cli, "%s", err);
        cfg->repair_filter = 1;
    }
    if (cfg->world && cfg->shards && (cfg->world < cfg->shards || cfg->world % cfg->shards))
        as_cli_usage(cli, "--world-size %" PRId64 " is not a multiple of --shards %" PRId64, cfg->world, cfg->shards);
    return nalg;
}

/* entries of each model's memo of representations: 2^14 (16,384 items, 2.7 MB with the
   paper's widths) holds a split search's tables and pieces many times over */
#define PLAN_MEMO_BITS 14

/* the cost model (--model) and the policy with its own cost model (--policy), loaded */
typedef struct {
    as_costmodel *cm;
    as_plan_model pm;
    as_mgate mq;                    /* the quality gate's judgement of cm */
    as_policy *pol;
    as_costmodel *pcm;
    as_plan_model ppm;
    as_policy_planner pplan;
    as_policy_planner pquick;       /* the split search's candidates: the greedy rollout alone */
    as_plan_policy pp;
    as_embed_memo *memo, *pmemo;    /* the two models' representations, memoised */
} plan_models;

static void load_models(plan_models *m, const args *a, as_plan_run_cfg *cfg)
{
    char err[1024];
    *m = (plan_models){ .pp = { .ctx = &m->pplan, .place = as_policy_place, .samples = as_policy_samples } };
    if (a->model) {
        if (as_costmodel_load(&m->cm, a->model, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);   /* err names the file */
        /* embed, head and the split head; each table's and piece's representation computed
           once (the split search places the same items in thousands of candidates) */
        m->memo = as_embed_memo_new(m->cm, PLAN_MEMO_BITS);
        as_plan_model_memo(&m->pm, m->memo);
        cfg->model = &m->pm;
        cfg->model_path = a->model;
        cfg->model_device = as_costmodel_device(m->cm);
        /* the quality gate: said before anything is read or written */
        as_mgate_judge(&m->mq, &as_costmodel_cmeta(m->cm)->heldout, a->min_r2);
        if (as_mgate_words(err, sizeof err, a->model, &m->mq)) {
            if (a->require_quality) as_die(AS_EXIT_DATA, "%s; --require-model-quality: no plan made", err);
            as_err("warning: %s", err);
        }
        cfg->model_quality = &m->mq;
    }
    if (a->policy) {
        if (as_policy_load(a->policy, &m->pol, &m->pcm, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        m->pmemo = as_embed_memo_new(m->pcm, PLAN_MEMO_BITS);
        as_plan_model_memo(&m->ppm, m->pmemo);
        as_nn_set_threads(1);   /* the policy's small products: one core */
        m->pplan.pol = m->pol;
        m->pplan.cm = &m->ppm;
        m->pplan.samples = cfg->samples;
        m->pplan.seed = cfg->seed;
        /* the split search places its candidates with the greedy rollout alone (a sampled
           placement of every candidate would leave it a tenth of the candidates in its time
           budget) and its best node with the samples */
        m->pquick = m->pplan;
        m->pquick.samples = 1;
        if (cfg->samples != 1) m->pp.search_ctx = &m->pquick;
        cfg->policy = &m->pp;
        cfg->policy_path = a->policy;
    }
}

static void free_models(plan_models *m)
{
    as_embed_memo_free(m->memo);
    as_embed_memo_free(m->pmemo);
    if (m->cm) as_costmodel_free(m->cm);
    as_policy_free(m->pol);
    as_costmodel_free(m->pcm);
}

/* a data error after the output is open: the stream's temporary removed, exit 1 */
static _Noreturn void die_data(const as_plan_run_cfg *cfg, const char *err)
{
    if (cfg->w) as_writer_abort(cfg->w);
    as_die(AS_EXIT_DATA, "%s", err);
}

/* --export: the chosen plans of a->export_file rebuilt and written */
static void run_export(as_plan_run_stats *st, const args *a, as_plan_run_cfg *cfg, as_plan_input *in)
{
    char err[1024];
    int64_t exported, skipped;
    if (as_plan_export_run(st, cfg, in, a->export_file, &exported, &skipped, err, sizeof err)) die_data(cfg, err);
    as_info("--export: %" PRId64 " plans written, %" PRId64 " of other tasks or algorithms passed over", exported, skipped);
    if (!exported) as_die(AS_EXIT_DATA, "--export: no plan of %s%s", a->export_file,
                          a->alg || cfg->export_task >= 0 ? " matches --alg / --task" : "");
}

/* --import: the TorchRec plans of a->import_file as plan records */
static void run_import(as_plan_run_stats *st, const args *a, as_plan_run_cfg *cfg, as_plan_input *in)
{
    char err[1024];
    int64_t imported;
    if (as_plan_import_run(st, cfg, in, a->import_file, &imported, err, sizeof err)) die_data(cfg, err);
    as_info("--import: %" PRId64 " TorchRec plans imported", imported);
    if (!imported) die_data(cfg, "--import: no TorchRec plan in the file (one JSON document per line)");
}

/* --repair: the measured plans of a->repair refined on their measured costs */
static void run_repair(as_plan_run_stats *st, const args *a, as_plan_run_cfg *cfg, as_plan_input *in)
{
    char err[1024];
    as_repair_stats rs;
    if (as_plan_repair_run(st, &rs, cfg, in, a->repair, err, sizeof err)) die_data(cfg, err);
    as_info("--repair: %" PRId64 " measured plans refined on their measured costs, %" PRId64 " of them changed (%" PRId64
            " moves and swaps); %" PRId64 " plans of other tasks or algorithms or infeasible, %" PRId64 " without measured costs, skipped",
            rs.plans, rs.changed, rs.steps, rs.skipped, rs.unmeasured);
    if (!rs.plans) as_err("warning: --repair: no measured plan of the input's tasks in %s", a->repair);
}

/* every task with every algorithm, with progress */
static void run_plan(as_plan_run_stats *st, as_cli *cli, as_plan_run_cfg *cfg, as_plan_input *in, int nalg)
{
    char err[1024];
    as_progress p;
    as_progress_start(&p, cli, "plans", (double)in->ntasks * nalg * (cfg->refine && cfg->keep_unrefined ? 2 : 1));
    if (as_plan_run(st, cfg, in, &p, err, sizeof err)) die_data(cfg, err);
    as_progress_end(&p);
}

/* the run's statistics on stderr */
static void report(const as_plan_run_cfg *cfg, const as_plan_run_stats *st)
{
    as_debug("%" PRId64 " plans in %.3f ms of planning", st->nplans, st->plan_ms);
    if (cfg->split)
        as_debug("--split-tables: %" PRId64 " candidate plans scored, %" PRId64 " tables split, %" PRId64
                 " searches ended by --split-ms, %" PRId64 " started from TorchRec's plan too", st->split_nodes, st->split_tables,
                 st->split_cut, st->split_seeded);
    if (st->own_row_wise + st->own_column_wise + st->own_no_rows)
        as_debug("torchrec: %" PRId64 " tables row_wise, %" PRId64 " column_wise, %" PRId64 " data_parallel", st->own_row_wise,
                 st->own_column_wise, st->own_data_parallel);
    if (cfg->replicate) as_info("--replicate: %" PRId64 " tables made data parallel in all", st->replicated);
    if (st->own_no_rows)
        as_info("torchrec: %" PRId64 " tables without a row_wise option: no features of their row blocks (as-features "
                "--row-pieces with the shard count)", st->own_no_rows);
}

int main(int argc, char **argv)
{
    as_cli cli;
    char *help = as_plan_help(HELP_HEAD, HELP_TAIL);
    as_cli_init(&cli, argc, argv, "as-plan", "as-plan --alg ALG [options] [FILE...]", help);
    args a = { .tro = { "", 8 }, .min_r2 = AS_MGATE_MIN_R2,
               .scfg = { .steps = AS_SPLIT_STEPS, .beam = AS_SPLIT_BEAM, .cands = AS_SPLIT_CANDS, .budget_ms = AS_SPLIT_MS,
                         .comm_gbps = AS_SPLIT_COMM_GBPS } };
    as_plan_run_cfg cfg = { .refine_ms = AS_REFINE_DEFAULT_MS, .export_task = -1 };
    parse_args(&cli, argc, argv, &a, &cfg);
    const int nalg = check_algs(&cli, &a, &cfg);
    if (a.import_file && !strcmp(a.import_file, "-")) {
        int std_in = optind == argc;
        for (int i = optind; i < argc; i++) std_in |= !strcmp(argv[i], "-");
        if (std_in) as_cli_usage(&cli, "--import -: standard input is the input stream already (name the stream's file)");
    }
    plan_models models;
    load_models(&models, &a, &cfg);

    cfg.out = a.fmt == 0 ? AS_PLAN_OUT_STREAM : a.fmt == 1 ? AS_PLAN_OUT_TEXT : AS_PLAN_OUT_TORCHREC;
    if (a.fmt == 0) cfg.w = as_cli_open_output(&cli);
    else cfg.text = as_cli_open_text(&cli);
    cfg.tro = &a.tro;

    /* read: features and tasks are kept; everything but headers passes through */
    char err[1024];
    as_plan_input in;
    if (as_plan_input_read(&in, argv + optind, argc - optind, a.split, a.plans_only ? NULL : cfg.w, err, sizeof err))
        die_data(&cfg, err);
    if (!in.ntasks && !a.export_file) {
        if (cfg.w) as_writer_abort(cfg.w);
        as_die(AS_EXIT_DATA, "no %stask records in the input (make them with as-features --tasks)", a.split ? "matching " : "");
    }

    /* a model's config (as-convert --config) names its module path and GPUs per host */
    if (!a.module_given && in.module_path[0]) a.tro.module = in.module_path;
    if (!a.local_given && in.local_size > 0) a.tro.local_size = in.local_size;

    as_plan_run_stats st;
    if (a.export_file) run_export(&st, &a, &cfg, &in);
    else if (a.import_file) run_import(&st, &a, &cfg, &in);
    else if (a.repair) run_repair(&st, &a, &cfg, &in);
    else run_plan(&st, &cli, &cfg, &in, nalg);
    if (cfg.w) as_writer_close(cfg.w);
    else as_cli_close_text(&cli, cfg.text);
    report(&cfg, &st);
    as_plan_input_free(&in);
    free_models(&models);
    free(help);
    if (st.ninfeasible) as_die(AS_EXIT_DATA, "%" PRId64 " of %" PRId64 " plans infeasible", st.ninfeasible, st.nplans);
    return 0;
}
