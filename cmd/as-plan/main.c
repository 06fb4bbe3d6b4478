/* as-plan - sharding plans for tasks: the heuristic baselines and the cost-model greedy,
 * with memory caps, the 2D-parallel rank map, and TorchRec / text renderings. */
#include "cli.h"
#include "common.h"
#include "costmodel.h"
#include "featindex.h"
#include "featurize.h"
#include "reclimits.h"
#include "plan.h"
#include "policy.h"
#include "rl.h"
#include "stream.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char HELP[] =
    "Read `features` and `task` records (as-features) and write one `plan` record per task and\n"
    "algorithm: the shard of every table, weight memory per shard, the predicted cost per shard\n"
    "when a model is given, the algorithm, its options and the planning time. Input records\n"
    "pass through (features, tasks, others), so stages compose; plans follow at the end.\n"
    "\n"
    "Algorithms (--alg, comma-separated, or `all`):\n"
    "  random              each table on a shard drawn uniformly (seeded) from those where it fits\n"
    "  size-greedy         key rows*dim      \\  sort by key, descending (ties: larger bytes, then\n"
    "  dim-greedy          key dim            | larger table id); each table goes to the shard\n"
    "  lookup-greedy       key dim*pooling    | with the smallest key sum where it fits (ties:\n"
    "  size-lookup-greedy  key dim*pooling*log10(rows) / smaller bytes sum, then lower shard)\n"
    "  cost-greedy         tables by predicted single-table cost, descending; each where the\n"
    "                      predicted cost of the resulting shard is lowest (needs --model)\n"
    "  autoshard           the learned policy (as-rl; needs --policy): tables in the cost-greedy\n"
    "                      order, each on the shard of the highest policy logit where it fits;\n"
    "                      with --samples N, N-1 more plans drawn from the policy and the one\n"
    "                      of best predicted balance kept\n"
    "  all                 every algorithm above (cost-greedy only with --model, autoshard\n"
    "                      only with --policy)\n"
    "\n"
    "Options:\n"
    "      --alg LIST         algorithms (required)\n"
    "      --model FILE       cost model (as-costfit): enables cost-greedy and adds pred_ms\n"
    "      --policy FILE      policy (as-rl): enables autoshard; its inputs come from the cost\n"
    "                         model stored with it, pred_ms from --model as for every algorithm\n"
    "      --samples N        autoshard: candidate plans per task, the greedy one and N-1 drawn\n"
    "                         from the policy (seeded by --seed and the task's tables); the best\n"
    "                         by the policy's cost model is kept: feasible, then highest\n"
    "                         predicted balance, then lowest predicted max. Default `auto`:\n"
    "                         102400 / (tables x (48 + shards)), 1 to 64, about 0.1 s of\n"
    "                         planning per task (22 for 80 tables on 8 shards, 1 for 800 on\n"
    "                         80); 1 = the greedy plan only\n"
    "      --seed S           seed of the random plans (default 0); task t uses stream t\n"
    "      --mem-cap SIZE     memory cap per shard for every task (bytes, K/M/G suffixes;\n"
    "                         0 = none), instead of the task's mem_cap\n"
    "      --shards K         shards per task, instead of the task's\n"
    "      --split S          plan only tasks of split S (train or test)\n"
    "      --world-size W     2D parallelism (TorchRec DMPCollection): W ranks in G = W/K\n"
    "                         replicas of the K-shard group; group i holds ranks i, G+i, ...,\n"
    "                         (K-1)G+i, so shard k lives on ranks k*G+i, i = 0..G-1 (`ranks`)\n"
    "      --format F         stream (default), text (a per-shard summary) or torchrec (one\n"
    "                         JSON ShardingPlan per line; see pipelines/torchrec_plan.py)\n"
    "      --local-size L     torchrec: GPUs per host, placement rank:r/cuda:r%L (default 8)\n"
    "      --module NAME      torchrec: the module fqn (default embedding_bags)\n"
    "      --plans-only       write only the plans, not the input records\n"
    "\n"
    "Memory is fp16 weight bytes. A cap is never exceeded: a table that fits on no shard is\n"
    "left unplaced (assign -1), the plan is written with feasible = false and its unplaced\n"
    "tables, a message goes to stderr, and once every plan is written as-plan exits with\n"
    "status 1 and \"N of M plans infeasible\".\n"
    "\n"
    "Example:\n"
    "  as-features pool.ast --tasks 100 | as-plan --alg all --model cost.model > plans.ast\n";

enum { OPT_ALG = AS_OPT_TOOL_BASE, OPT_MODEL, OPT_SEED, OPT_CAP, OPT_SHARDS, OPT_SPLIT, OPT_WORLD, OPT_FORMAT,
       OPT_LOCAL, OPT_MODULE, OPT_PLANS_ONLY, OPT_POLICY, OPT_SAMPLES };


int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-plan", "as-plan --alg ALG [options] [FILE...]", HELP);
    static const struct option opts[] = {
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
        AS_CLI_COMMON_OPTIONS
    };
    const char *alg_arg = NULL, *model_path = NULL, *split = NULL, *policy_path = NULL;
    int fmt = 0, plans_only = 0, cap_given = 0, samples = 0;   /* fmt 0 stream, 1 text, 2 torchrec; samples 0 = auto */
    uint64_t seed = 0, cap = 0;
    int64_t shards = 0, world = 0;
    as_torchrec_opts tro = { "embedding_bags", 8 };
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, opts, NULL)) != -1) {
        switch (opt) {
        case OPT_ALG: alg_arg = optarg; break;
        case OPT_MODEL: model_path = optarg; break;
        case OPT_SEED: seed = (uint64_t)as_cli_i64(&cli, "--seed", optarg, 0, INT64_MAX); break;
        case OPT_CAP:
            if (as_parse_size(optarg, &cap) || cap > INT64_MAX)
                as_cli_usage(&cli, "--mem-cap: '%s' is not a size (e.g. 2G, 512M, 1000000; 0 = none)", optarg);
            cap_given = 1;
            break;
        case OPT_SHARDS: shards = as_cli_lim(&cli, "--shards", optarg, 1, AS_LIM_SHARDS); break;
        case OPT_SPLIT:
            if (strcmp(optarg, "train") && strcmp(optarg, "test")) as_cli_usage(&cli, "--split: '%s' is not train or test", optarg);
            split = optarg;
            break;
        case OPT_WORLD: world = as_cli_i64(&cli, "--world-size", optarg, 1, 100000000); break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "stream")) fmt = 0;
            else if (!strcmp(optarg, "text")) fmt = 1;
            else if (!strcmp(optarg, "torchrec")) fmt = 2;
            else as_cli_usage(&cli, "--format: '%s' is not stream, text or torchrec", optarg);
            break;
        case OPT_LOCAL: tro.local_size = as_cli_i64(&cli, "--local-size", optarg, 1, 1000000); break;
        case OPT_MODULE:
            if (!*optarg) as_cli_usage(&cli, "--module: empty name");
            tro.module = optarg;
            break;
        case OPT_PLANS_ONLY: plans_only = 1; break;
        case OPT_POLICY: policy_path = optarg; break;
        case OPT_SAMPLES:
            if (strcmp(optarg, "auto")) samples = (int)as_cli_i64(&cli, "--samples", optarg, 1, 100000);
            break;
        default:
            if (!as_cli_common(&cli, opt, optarg)) as_cli_usage(&cli, "unknown option");
        }
    }
    as_cli_finish(&cli);
    as_cli_inputs(&cli, (const char *const[]){ model_path, policy_path }, 2);
    if (!alg_arg) as_cli_usage(&cli, "--alg is required (e.g. --alg all)");
    int want[AS_ALG_COUNT] = { 0 }, nalg = 0;
    {
        char *s = as_strdup(alg_arg), *save = NULL;
        for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            as_alg a;
            if (!strcmp(tok, "all")) {
                for (int q = 0; q < AS_ALG_COUNT; q++)
                    if ((q != AS_ALG_COST || model_path) && (q != AS_ALG_AUTOSHARD || policy_path)) want[q] = 1;
            } else if (!as_alg_parse(tok, &a)) {
                if (a == AS_ALG_COST && !model_path) as_cli_usage(&cli, "--alg cost-greedy needs --model FILE");
                if (a == AS_ALG_AUTOSHARD && !policy_path) as_cli_usage(&cli, "--alg autoshard needs --policy FILE");
                want[a] = 1;
            } else {
                as_cli_usage(&cli, "--alg: unknown algorithm '%s'", tok);
            }
        }
        free(s);
        for (int q = 0; q < AS_ALG_COUNT; q++) nalg += want[q];
        if (!nalg) as_cli_usage(&cli, "--alg: no algorithm given");
    }
    if (world && shards && (world < shards || world % shards))
        as_cli_usage(&cli, "--world-size %" PRId64 " is not a multiple of --shards %" PRId64, world, shards);

    char err[1024];
    as_costmodel *cm = NULL;
    as_plan_model pm = { 0 };
    if (model_path) {
        if (as_costmodel_load(&cm, model_path, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);   /* err names the file */
        as_rl_plan_model(&pm, cm);   /* embed, head and the split head */
    }
    as_policy *pol = NULL;
    as_costmodel *pcm = NULL;
    as_plan_model ppm = { 0 };
    as_policy_planner pplan = { 0 };
    as_plan_policy pp = { &pplan, as_policy_place };
    if (policy_path) {
        if (as_policy_load(policy_path, &pol, &pcm, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        as_rl_plan_model(&ppm, pcm);
        as_nn_set_threads(1);   /* the policy's small products: one core */
        pplan.pol = pol;
        pplan.cm = &ppm;
        pplan.samples = samples;
        pplan.seed = seed;
    }

    as_writer *w = NULL;
    FILE *tf = NULL;
    if (fmt == 0) w = as_cli_open_output(&cli);
    else tf = as_cli_open_text(&cli);

    /* read: features and tasks are kept; everything but headers passes through */
    char *none[] = { "-" };
    char **files = optind < argc ? argv + optind : none;
    int nfiles = optind < argc ? argc - optind : 1;
    as_featidx ft = { 0 };
    int64_t ntask = 0, capt = 0;
    as_ptask *tasks = NULL;
    for (int fi = 0; fi < nfiles; fi++) {
        as_reader *r = as_reader_open(files[fi]);
        if (!r) { if (w) as_writer_abort(w); exit(AS_EXIT_DATA); }
        as_record rec;
        int rc;
        while ((rc = as_reader_next(r, &rec)) == 1) {
            if (as_rec_is(&rec, "header")) continue;
            if (as_rec_is(&rec, "features")) {
                if (as_featidx_read(&ft, &rec, as_reader_name(r), err, sizeof err)) {
                    if (w) as_writer_abort(w);
                    as_die(AS_EXIT_DATA, "%s", err);
                }
            } else if (as_rec_is(&rec, "task")) {
                as_ptask t;
                if (as_ptask_read(&rec.obj, &t, err, sizeof err)) {
                    if (w) as_writer_abort(w);
                    as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec.index, err);
                }
                if (split && strcmp(t.split, split)) as_ptask_free(&t);
                else {
                    if (ntask == capt) { capt = capt ? 2 * capt : 64; tasks = as_realloc(tasks, (size_t)capt * sizeof *tasks); }
                    tasks[ntask++] = t;
                }
            }
            if (w && !plans_only) as_writer_raw(w, rec.raw, rec.rawlen);
        }
        if (rc < 0) { if (w) as_writer_abort(w); as_die(AS_EXIT_DATA, "%s", as_reader_error(r)); }
        as_reader_close(r);
    }
    if (!ntask) {
        if (w) as_writer_abort(w);
        as_die(AS_EXIT_DATA, "no %stask records in the input (make them with as-features --tasks)", split ? "matching " : "");
    }
    /* features by id; the same table twice must agree (lib/featindex.h) */
    if (as_featidx_build(&ft, err, sizeof err)) {
        if (w) as_writer_abort(w);
        as_die(AS_EXIT_DATA, "%s", err);
    }

    as_progress p;
    as_progress_start(&p, &cli, "plans", (double)ntask * nalg);
    int64_t nplans = 0, ninf = 0;
    double tplan = 0;
    for (int64_t ti = 0; ti < ntask; ti++) {
        as_ptask *t = &tasks[ti];
        const as_features **tf_ = as_malloc((size_t)t->ntables * sizeof *tf_);
        for (int64_t i = 0; i < t->ntables; i++) {
            if (!(tf_[i] = as_featidx_get(&ft, t->tables[i]))) {
                if (w) as_writer_abort(w);
                as_die(AS_EXIT_DATA, "task %" PRId64 ": table %" PRId64 " has no features record in the input", t->id, t->tables[i]);
            }
        }
        int64_t K = shards ? shards : t->shards;
        if (world && (world < K || world % K)) {
            if (w) as_writer_abort(w);
            as_die(AS_EXIT_DATA, "task %" PRId64 ": --world-size %" PRId64 " is not a multiple of its %" PRId64 " shards", t->id, world, K);
        }
        as_ptask tk = *t;
        tk.shards = K;
        uint64_t mcap = cap_given ? cap : t->mem_cap;
        for (int a = 0; a < AS_ALG_COUNT; a++) {
            if (!want[a]) continue;
            as_plan_cfg pc = { (as_alg)a, K, mcap, seed, t->id, model_path ? &pm : NULL, policy_path ? &pp : NULL };
            as_plan pl;
            if (as_plan_make(&pl, &pc, tf_, t->ntables, err, sizeof err)) {
                if (w) as_writer_abort(w);
                as_die(AS_EXIT_DATA, "task %" PRId64 ": %s: %s", t->id, as_alg_name((as_alg)a), err);
            }
            tplan += pl.plan_ms;
            as_plan_meta meta = { &tk, (as_alg)a, seed, mcap, world, model_path, cm ? as_costmodel_device(cm) : NULL,
                                  a == AS_ALG_AUTOSHARD ? policy_path : NULL,
                                  a == AS_ALG_AUTOSHARD ? (samples ? samples : as_policy_auto_samples(t->ntables, K)) : 0 };
            if (!pl.feasible) {
                ninf++;
                char list[256] = "";
                size_t o = 0;
                for (int64_t i = 0; i < pl.ninfeasible && o < sizeof list - 24; i++)
                    o += (size_t)snprintf(list + o, sizeof list - o, "%s%" PRId64, i ? ", " : "", pl.infeasible[i]);
                if (o >= sizeof list - 24 && pl.ninfeasible > 1) snprintf(list + o, sizeof list - o, ", ...");
                as_err("task %" PRId64 ": %s: plan infeasible: %" PRId64 " table%s fit on no shard under the %" PRIu64
                       "-byte cap (%s)", t->id, as_alg_name((as_alg)a), pl.ninfeasible, pl.ninfeasible == 1 ? "" : "s",
                       mcap, list);
            }
            if (fmt == 0) as_plan_write(w, &pl, &meta);
            else if (fmt == 1) as_plan_print_text(tf, &pl, &meta, tf_);
            else if (as_plan_print_torchrec(tf, &pl, &meta, tf_, &tro))
                as_err("task %" PRId64 ": %s: infeasible plan left out of the torchrec output", t->id, as_alg_name((as_alg)a));
            as_plan_free(&pl);
            nplans++;
            as_progress_update(&p, (double)nplans);
        }
        free(tf_);
    }
    as_progress_end(&p);
    if (w) as_writer_close(w);
    else as_cli_close_text(&cli, tf);
    as_debug("%" PRId64 " plans in %.3f ms of planning", nplans, tplan);
    for (int64_t ti = 0; ti < ntask; ti++) as_ptask_free(&tasks[ti]);
    free(tasks);
    as_featidx_free(&ft);
    if (cm) as_costmodel_free(cm);
    as_policy_free(pol);
    as_costmodel_free(pcm);
    if (ninf) as_die(AS_EXIT_DATA, "%" PRId64 " of %" PRId64 " plans infeasible", ninf, nplans);
    return 0;
}
