/* as-bench - micro-benchmark shards: the fused multi-table embedding-bag forward + backward
 * + exact SGD, on a CUDA GPU or the CPU, with the paper's protocol. Writes `cost` records
 * (the cost model's training data) and passes plans on annotated with per-shard costs. */
#include "bench.h"
#include "benchcalib.h"
#include "benchnoise.h"
#include "benchrun.h"
#include "cli.h"
#include "ebopt.h"
#include "common.h"
#include "reclimits.h"
#include "stream.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char HELP[] =
    "Benchmark shards of embedding tables: one iteration is the fused multi-table\n"
    "embedding-bag forward (fp16 weights, fp32 accumulation and output, pooled sum) and the\n"
    "backward with an exact SGD update of every touched row, over the tables' real indices\n"
    "and offsets. Protocol: W warm-up iterations, then R timed runs each after a cache\n"
    "flush; drop the `trim` highest and lowest, mean of the rest = the shard's cost (ms).\n"
    "\n"
    "Input records (standard input or FILEs):\n"
    "  plan    every shard of the plan is measured; the plan passes on with `cost_ms`,\n"
    "          `cost_spread` and `cost_noisy` (one per shard), `cost_device` and\n"
    "          `noise_threshold`, and a `cost` record is written per shard; a plan's\n"
    "          data-parallel tables (assign -2) are measured per shard as a kernel of\n"
    "          their own over the shard's share of the batch, added to its cost and\n"
    "          given in `cost_dp_ms` (no `cost` record for them)\n"
    "  shard   {\"tables\": [ids]}: a `cost` record is written\n"
    "  others  pass through unchanged\n"
    "\n"
    "Options:\n"
    "      --tables FILE      the table data (as-convert output); required\n"
    "      --sample N         no input: measure N random shards drawn from the pool\n"
    "      --max-tables M     tables per sampled shard: uniform in 1..M (default 10)\n"
    "      --sample-from LIST draw sampled shards only from these table ids (e.g. 0-63)\n"
    "      --singles          with --sample: first measure every table of the pool alone\n"
    "                         (origin \"single\"), then the N samples\n"
    "      --draw-only        with --sample: measure nothing; write the drawn shards (the\n"
    "                         singles first with --singles, pieces with --sample-pieces)\n"
    "                         as `shard` records, the same draws --sample measures with\n"
    "                         these options: candidates for pipelines/active-costs, which\n"
    "                         lets as-costfit --select choose the ones to measure\n"
    "      --piece-singles    with plans as input: also measure every distinct piece of\n"
    "                         their split tables alone (one `shard` record each, added after\n"
    "                         the input; its cost record, origin \"shard\", is the piece's\n"
    "                         single cost: as-eval's floor of split plans)\n"
    "      --sample-pieces P  with --sample: each table of a drawn shard (not the singles)\n"
    "                         becomes, with probability P (0..1, default 0), a piece of it,\n"
    "                         so that the cost model learns pieces: a column half or quarter\n"
    "                         (width a multiple of 4) or a row block (--piece-blocks), drawn\n"
    "                         uniformly; the cost records carry `pieces` (docs/FORMAT.md)\n"
    "      --col-singles N    with --sample: after the drawn shards, the first column half and\n"
    "                         quarter of the N tables of the most lookups x dim, each alone\n"
    "                         (origin \"sample\"): what the heaviest tables' column splits cost,\n"
    "                         which random draws rarely show (make plan: COL_SINGLES)\n"
    "      --piece-blocks LIST  the row blocks for --sample-pieces (default 2,4,8: use the\n"
    "                         counts of as-features --row-pieces, whose features they need)\n"
    "      --seed S           sampling and weight seed (default 0)\n"
    "      --device D         auto (a working GPU, else the CPU), cpu, cuda, cuda:N\n"
    "      --threads N        CPU threads (default: all cores)\n"
    "      --warmup W         warm-up iterations (default 5)\n"
    "      --runs R           timed runs (default 10)\n"
    "      --trim K           drop K highest and K lowest runs (default 2)\n"
    "      --lr X             the optimizer's learning rate (default 0.01)\n"
    "      --weights-type T   the tables' weights: fp16 (default, the paper's protocol), fp32,\n"
    "                         bf16, or tables: each table's own data_type (its table record's,\n"
    "                         as a model config gives it, any case; fp16 without one; int8,\n"
    "                         int4 or int2 are not measured: exit 1 naming the table)\n"
    "      --optimizer O      what the backward updates them with: sgd (default, exact SGD),\n"
    "                         exact_rowwise_adagrad (one fp32 state per row), adam (two fp32\n"
    "                         moments per weight); eps 1e-8, Adam's betas 0.9 and 0.999\n"
    "                         (FBGEMM's defaults). The cost records say what they measured\n"
    "                         (weights_type, optimizer; lib/kernels/ebopt.h has the arithmetic). On a\n"
    "                         GPU other than fp16 with SGD runs the typed CUDA kernels\n"
    "                         (bit-exact with the CPU's; docs/GPU.md)\n"
    "      --max-mem SIZE     CPU: the memory measuring may hold: 32 MiB for the process,\n"
    "                         the table data loaded from --tables, the cache-flush sweep\n"
    "                         (--flush) and the shards set up together (their tables' weights\n"
    "                         once, each shard's output, gradient and bags, the sort buffers).\n"
    "                         Default: a shard alone may use half the memory available when\n"
    "                         as-bench starts (MemAvailable, else the RAM), shards set up\n"
    "                         together 1/8 of it. Groups (--interleave) are cut at whole plans\n"
    "                         to fit; a plan that does not fit alone is measured in parts that\n"
    "                         do, one after another; a shard that does not fit alone is not\n"
    "                         measured (its `error`: \"does not fit\"); a SIZE that leaves\n"
    "                         nothing for shards is a usage error. -v prints the share-out\n"
    "      --flush SIZE       CPU: bytes read to flush the caches before each timed run\n"
    "                         (default: twice the last-level cache, at least 64M)\n"
    "      --part I/N         only every N-th unit of work, starting at the I-th (1-based):\n"
    "                         plans, shards or samples; for fan-out over devices and hosts\n"
    "      --no-resident      CUDA: upload each shard's table data when it is measured\n"
    "                         (default: the tables' offsets and indices are uploaded once\n"
    "                         and stay on the GPU when they fit in half its free memory)\n"
    "      --row-cap R        measure every table and piece of more than R rows over R rows:\n"
    "                         the distinct rows its lookups name, in ascending order, spread\n"
    "                         evenly over [0, R) (which lookups share a row, and the rows'\n"
    "                         order, kept while they are at most R); its weights take R rows.\n"
    "                         For tables larger than the device's memory, or than a CPU run\n"
    "                         can afford; keep R far beyond every cache (R x dim x 2 bytes).\n"
    "                         The records carry it (cost: row_cap, capped; plans:\n"
    "                         cost_row_cap); the costs are of the capped tables, comparable\n"
    "                         only with costs measured under the same cap\n"
    "\n"
    "Noise-aware measurement (docs/BENCHMARKS.md):\n"
    "      --noise-threshold X  a shard whose spread (std / mean of the R - 2K runs the\n"
    "                         trimmed mean keeps) is above X is measured again (default\n"
    "                         0.10: 98 % of the H100 reference shards' rel_std is below; at\n"
    "                         10 % the standard error of a trimmed mean of 6 runs is about\n"
    "                         4 %); 0: never re-measure, never flag\n"
    "      --retries N        re-measuring rounds at most (default 2; 0: flag, do not\n"
    "                         re-measure). A shard still above X is flagged `noisy`\n"
    "      --window N         units of work (plans, shards or samples) measured before the\n"
    "                         re-measuring rounds of their noisy shards (default 64; 0: the\n"
    "                         whole input): a burst of load meets a shard's attempts a\n"
    "                         window's time apart, not all at once. Records come out in\n"
    "                         input order whatever the window\n"
    "      --passes N         measure each window N times (1-16), one pass after another,\n"
    "                         each in fresh memory (CPU: the shards' weights and buffers\n"
    "                         allocated anew) and with its own re-measuring rounds, and\n"
    "                         write each shard's passes combined: geometric means of the\n"
    "                         times, `passes` in the records (default 1), and each pass\n"
    "                         apart: `pass_ms` and `pass_spread` (std / mean over the\n"
    "                         passes) in cost records, `cost_pass_ms` (each pass's costs)\n"
    "                         and `cost_pass_spread` (each shard's spread over the passes\n"
    "                         with the plan's level in each pass taken out) in plans, for\n"
    "                         as-eval to rank on the variation between passes. On a\n"
    "                         shared machine the same plans measured twice disagree far\n"
    "                         beyond one run's spread (the project's VM: 5-7 % per shard,\n"
    "                         against under 1 % within a run): the state of other tenants\n"
    "                         changes for tens of seconds how shards of different kinds\n"
    "                         compare, which neither a shard's runs nor the reference\n"
    "                         correct; passes a window's time apart (with --window 0, the\n"
    "                         whole input's) measure and average it. N times the time\n"
    "      --interleave N     CPU: shards measured together, at most N (default 16; 1: one\n"
    "                         at a time): set up at once, then their timed runs go in\n"
    "                         rounds, each round running every shard once. A burst of\n"
    "                         load then slows all of them alike and their ratios (a\n"
    "                         plan's balance) stay. A plan's shards are always measured\n"
    "                         together, whatever N, unless they do not fit --max-mem\n"
    "                         together (then in parts); sampled and bare shards go N at a\n"
    "                         time. A group holds each of its tables once: shards naming\n"
    "                         the same table share its weights (and its SGD updates).\n"
    "                         `together` in the records: how many were (1: alone). CUDA:\n"
    "                         one shard after another (the device holds one shard at a\n"
    "                         time; a shard that does not fit its free memory is not\n"
    "                         measured)\n"
    "      --reference R      drift correction: auto (default), none, or table ids (e.g.\n"
    "                         3,17,40). The machine's speed moves over minutes (other\n"
    "                         tenants, clocks), by tens of per cent on a shared VM, which\n"
    "                         skews costs measured at different times (a cost dataset,\n"
    "                         speedups between plans). Every group of shards measured\n"
    "                         together (--interleave; on CUDA the same groups, one shard\n"
    "                         after another) also times a reference shard of these tables,\n"
    "                         and each cost is divided by its group's reference cost over\n"
    "                         the run's reference level (the median of the first window's);\n"
    "                         `drift` in the records is that factor (nil: not corrected).\n"
    "                         A shard whose group's reference was noisy is measured again\n"
    "                         in the re-measuring rounds, so that a plan's shards are not\n"
    "                         left some corrected and some raw.\n"
    "                         auto: 4 tables of --tables at evenly spaced positions of its\n"
    "                         ids in ascending order, so every run and part on the same\n"
    "                         table data times the same reference. It costs one more shard\n"
    "                         per group (about 1/16 more time at --interleave 16)\n"
    "      --reference-level L  the reference level to correct to, instead of this run's\n"
    "                         first window: FILE, an earlier as-bench output on the same\n"
    "                         table data and reference (its cost records carry\n"
    "                         `reference`: the tables and the level; another reference\n"
    "                         shard is an error, exit 1), or a level in ms, 1e-6 to 1e6\n"
    "                         (what reads as a number is a level). Costs of both\n"
    "                         runs then share one scale, e.g. a cost dataset and shards\n"
    "                         measured later to extend it, when the machine's speed has\n"
    "                         moved by tens of per cent between them\n"
    "      --drift-bound F    a group's reference cost outside 1/F..F of its window's\n"
    "                         level (the median of the window's first-round references,\n"
    "                         or the run's first level when the window has fewer than 3)\n"
    "                         (default 2: 0.5x-2x) is a failed measurement, not drift:\n"
    "                         the group is measured again in the re-measuring rounds,\n"
    "                         and a shard whose kept attempt still has it keeps its raw\n"
    "                         times, `drift` nil and `drift_refused` true; stderr says\n"
    "                         how many groups were refused. Quiet runs of a shared 2-core\n"
    "                         VM corrected by 0.75x-1.84x; a busy one saw 0.44x-245x.\n"
    "                         0: no bound\n"
    "      --no-calibrate     skip the quiet-machine check\n"
    "\n"
    "Each shard keeps the figures of its attempt with the lowest spread; `attempts` counts\n"
    "them all. With --interleave above 1 a plan is re-measured whole (all its shards when\n"
    "one is noisy) and keeps one attempt for all of them, the one whose largest spread is\n"
    "the lowest, so that its costs always come from one group. With fewer than 2 runs kept\n"
    "after trimming (e.g. --runs 3 --trim 1) a shard has no spread (nil) and asks for no\n"
    "re-measurement. Before measuring, a quiet-machine check\n"
    "(well under a second: a fixed CPU kernel on the measuring threads, or on CUDA a small\n"
    "shard of the pool, timed 30 / 20 times; on the CPU also how much of this process's\n"
    "CPUs other processes used meanwhile, from /proc/stat) warns on stderr when the machine\n"
    "looks loaded (its line is printed with -v when quiet). At the end, a second summary\n"
    "line: shards with a spread, median spread, re-measured and noisy shards, and a warning\n"
    "when more than 10 % of them stayed noisy. -q silences all of these but errors; the\n"
    "records keep `spread`, `attempts` and `noisy` whatever the verbosity.\n"
    "\n"
    "Weights and gradients are generated from --seed, the table id and the element by a\n"
    "counter-based hash (on the GPU itself with --device cuda): the same values on every\n"
    "device. At the end a summary on stderr (not with -q): shards per second and the\n"
    "device's busy fraction, the kernel time of all warm-up and timed iterations over the\n"
    "wall time of the measuring loop.\n"
    "\n"
    "A shard that cannot run (does not fit in memory, tables of different batch sizes) is\n"
    "reported on stderr and in its record (`error`), not crashed on. A table whose indices do\n"
    "not all lie in [0, rows) is bad input, as in as-features: exit 1 naming the table; so\n"
    "is a data_type that names no data type (nil, \"\", a number; docs/FORMAT.md).\n"
    "\n"
    "Environment:\n"
    "  AS_BENCH_FAKE_NOISE=SPEC  test hook, the fake timer: the kernels run but their timed\n"
    "                         runs are replaced by deterministic figures (0.1 ms + 1e-5 ms\n"
    "                         per lookup). SPEC is a comma list: quiet (no attempt noisy),\n"
    "                         first (a hit shard's first attempt noisy, the others quiet),\n"
    "                         always (every attempt of a hit shard noisy), shards=P (fraction\n"
    "                         of shards hit, by a hash of their table ids; default 1),\n"
    "                         factor=F (a noisy attempt's odd-numbered runs are about F\n"
    "                         times slower; default 10), calib=noisy|quiet (the\n"
    "                         quiet-machine check's runs; default quiet; /proc/stat is not\n"
    "                         read under the fake timer), drift=F (every group of shards\n"
    "                         measured together is slower by a factor in 1..F, from a hash\n"
    "                         of its number). Never set it for real figures\n"
    "\n"
    "Example:\n"
    "  as-convert --synth --preset small -o pool.ast\n"
    "  as-bench --tables pool.ast --sample 100 --max-tables 10 > costs.ast\n";

enum { OPT_TABLES = AS_OPT_TOOL_BASE, OPT_SAMPLE, OPT_MAXT, OPT_SEED, OPT_DEVICE, OPT_THREADS, OPT_WARMUP,
       OPT_RUNS, OPT_TRIM, OPT_LR, OPT_MAXMEM, OPT_PART, OPT_FLUSH, OPT_SINGLES, OPT_FROM, OPT_NORES, OPT_SPIECES, OPT_PBLOCKS, OPT_COLSINGLES,
       OPT_NOISE, OPT_RETRIES, OPT_WINDOW, OPT_NOCALIB, OPT_INTERLEAVE, OPT_REFERENCE, OPT_PASSES, OPT_PSINGLES, OPT_REFLEVEL, OPT_DRIFTBOUND, OPT_ROWCAP,
       OPT_WTYPE, OPT_OPTIM, OPT_DRAWONLY };

static as_cli cli;
static as_progress prog;    /* units of work whose first attempts are all made */
static as_progress rprog;   /* the re-measuring rounds have their own line (a round can take
                               minutes on a loaded machine while the units' count stands still) */

static void progress(void *ctx, int64_t units)
{
    (void)ctx;
    as_progress_update(&prog, (double)units);
}

static void retried(void *ctx, int round, int64_t k, int64_t m)
{
    static char label[64];
    (void)ctx;
    if (k == 1) {
        snprintf(label, sizeof label, "noisy shards re-measured (round %d)", round);
        as_progress_start(&rprog, &cli, label, (double)m);
    }
    as_progress_update(&rprog, (double)k);
}

static void failed(void *ctx, const int64_t *ids, int64_t n, const char *error)
{
    (void)ctx;
    as_err("shard of %" PRId64 " table(s) (first %" PRId64 ") not measured: %s", n, n ? ids[0] : -1, error);
}

/* the quiet-machine check, on stderr (a loaded machine warns at the default verbosity) */
static void check_quiet(as_bench_session *sess)
{
    as_bench_calib cal;
    char line[512], err[1024];
    if (as_bench_calibrate(sess, &cal, err, sizeof err)) as_die(AS_EXIT_ENV, "quiet-machine check: %s", err);
    as_bench_calib_line(line, sizeof line, &cal);
    if (cal.loaded) as_info("warning: %s", line);
    else as_debug("%s", line);
}

/* the summary on stderr: the measuring loop, then the noise */
static void report(const as_bench_session *sess, const as_bench_cfg *cfg, const as_brun_cfg *rc, const as_brun_stats *st,
                   double loop_s, double setup_s)
{
    char line[1024];
    as_bench_session_info si;
    as_bench_session_info_get(sess, &si);
    as_bench_summary(line, sizeof line, &st->tally, loop_s);
    as_info("%s; setup %.2f s%s", line, setup_s,
            cfg->cuda ? (si.resident ? ", table data resident on the GPU" : ", table data uploaded per shard") : "");
    as_noise_summary(line, sizeof line, &st->tally, &rc->noise, st->retry_s);
    as_info("%s", line);
    if (as_noise_warning(line, sizeof line, &st->tally, &rc->noise)) as_info("%s", line);
    if (rc->noise.ref_n > 0) {
        char ids[256] = "";
        size_t k = 0;
        for (int64_t i = 0; i < rc->noise.ref_n && k < sizeof ids - 24; i++)
            k += (size_t)snprintf(ids + k, sizeof ids - k, "%s%" PRId64, i ? "," : "", rc->noise.ref_ids[i]);
        if (st->ndrift)
            as_info("drift: reference shard (tables %s) at %.4g ms; %" PRId64 " shard(s) corrected by factors "
                    "%.3f to %.3f", ids, st->ref_base, st->ndrift, st->drift_min, st->drift_max);
        else as_info("drift: reference shard (tables %s): no shard corrected (the reference shard could not be measured, or stayed noisy)", ids);
        if (st->refused_groups)
            as_info("drift: %" PRId64 " group(s) refused: their reference measured %.3gx to %.3gx the level of its window, outside "
                    "%.3gx-%.3gx (--drift-bound) after up to %d re-measuring round(s); a failed measurement, not drift: their "
                    "%" PRId64 " shard(s) keep their raw times (drift_refused)", st->refused_groups, st->refused_min,
                    st->refused_max, 1 / rc->noise.drift_bound, rc->noise.drift_bound, rc->noise.retries, st->nrefused);
    }
}

/* the fake timer (AS_BENCH_FAKE_NOISE) and the device: usage errors exit 2, a missing
 * device 3 */
static void setup_device(as_bench_cfg *cfg, const char *device)
{
    static as_bench_fake fake;
    const char *spec = getenv("AS_BENCH_FAKE_NOISE");
    char err[512];
    if (spec && *spec) {
        if (as_bench_fake_parse(spec, &fake, err, sizeof err)) as_cli_usage(&cli, "AS_BENCH_FAKE_NOISE: %s", err);
        cfg->fake = &fake;
    }
    int code = as_bench_device(device, cfg, err, sizeof err);
    if (code == AS_EXIT_USAGE) as_cli_usage(&cli, "%s", err);
    if (code) as_die(code, "%s", err);
}

/* --reference-level: a level in ms, or an earlier run's from its cost records */
static double reference_level(const char *arg, const int64_t *ids, int64_t n, int64_t row_cap)
{
    if (!n) as_cli_usage(&cli, "--reference-level needs a reference shard (not --reference none)");
    char *end;
    errno = 0;
    const double v = strtod(arg, &end);
    /* what reads whole as a number is a level, never a file name: 1e-308 underflows (ERANGE),
       1e308 would make costs of 1e307 ms */
    if (end != arg && !*end) {
        if (errno || !isfinite(v) || !(v >= AS_BRUN_REF_LEVEL_MIN && v <= AS_BRUN_REF_LEVEL_MAX))
            as_cli_usage(&cli, "--reference-level: '%s' is not a level in [%g, %g] ms (a number is a level, not a file name)",
                         arg, AS_BRUN_REF_LEVEL_MIN, AS_BRUN_REF_LEVEL_MAX);
        return v;
    }
    char err[1024];
    double level;
    if (as_brun_ref_level_read(arg, ids, n, row_cap, &level, err, sizeof err)) as_die(AS_EXIT_DATA, "--reference-level: %s", err);
    as_debug("--reference-level: %.4g ms, from %s", level, arg);
    return level;
}

/* the options beyond the benchmark's and the run's configurations */
typedef struct {
    const char *tables, *device;
    int64_t sample, maxt;
    int calibrate, maxmem_given;
    const char *maxmem_arg;
    int singles, psingles, draw_only;
    double spieces;
    int64_t col_singles;            /* --col-singles */
    int64_t *pblocks;               /* --piece-blocks */
    size_t npblocks;
    int ref_auto;                   /* --reference auto (the default) */
    int64_t *ref, ref_auto_ids[AS_NOISE_REF_TABLES];
    size_t nref;
    const char *reflevel;
    int64_t *from;                  /* --sample-from */
    size_t nfrom;
} bargs;

static const struct option bench_opts[] = {
    { "tables", required_argument, 0, OPT_TABLES },
    { "sample", required_argument, 0, OPT_SAMPLE },
    { "max-tables", required_argument, 0, OPT_MAXT },
    { "seed", required_argument, 0, OPT_SEED },
    { "device", required_argument, 0, OPT_DEVICE },
    { "threads", required_argument, 0, OPT_THREADS },
    { "warmup", required_argument, 0, OPT_WARMUP },
    { "runs", required_argument, 0, OPT_RUNS },
    { "trim", required_argument, 0, OPT_TRIM },
    { "lr", required_argument, 0, OPT_LR },
    { "weights-type", required_argument, 0, OPT_WTYPE },
    { "optimizer", required_argument, 0, OPT_OPTIM },
    { "max-mem", required_argument, 0, OPT_MAXMEM },
    { "part", required_argument, 0, OPT_PART },
    { "flush", required_argument, 0, OPT_FLUSH },
    { "singles", no_argument, 0, OPT_SINGLES },
    { "draw-only", no_argument, 0, OPT_DRAWONLY },
    { "piece-singles", no_argument, 0, OPT_PSINGLES },
    { "sample-pieces", required_argument, 0, OPT_SPIECES },
    { "col-singles", required_argument, 0, OPT_COLSINGLES },
    { "piece-blocks", required_argument, 0, OPT_PBLOCKS },
    { "sample-from", required_argument, 0, OPT_FROM },
    { "no-resident", no_argument, 0, OPT_NORES },
    { "row-cap", required_argument, 0, OPT_ROWCAP },
    { "noise-threshold", required_argument, 0, OPT_NOISE },
    { "retries", required_argument, 0, OPT_RETRIES },
    { "window", required_argument, 0, OPT_WINDOW },
    { "passes", required_argument, 0, OPT_PASSES },
    { "interleave", required_argument, 0, OPT_INTERLEAVE },
    { "no-calibrate", no_argument, 0, OPT_NOCALIB },
    { "reference", required_argument, 0, OPT_REFERENCE },
    { "reference-level", required_argument, 0, OPT_REFLEVEL },
    { "drift-bound", required_argument, 0, OPT_DRIFTBOUND },
    AS_CLI_COMMON_OPTIONS
};

/* The option groups below each handle their own codes and return 1, or 0 for a code that
 * is not theirs. */

/* what is measured: the table data, sampled shards and their pieces, single tables */
static int opt_work(as_cli *cli, int opt, const char *arg, bargs *a, as_bench_cfg *cfg)
{
    switch (opt) {
    case OPT_TABLES: a->tables = arg; return 1;
    case OPT_SAMPLE: a->sample = as_cli_i64(cli, "--sample", arg, 1, 100000000); return 1;
    case OPT_MAXT: a->maxt = as_cli_i64(cli, "--max-tables", arg, 1, 1000000); return 1;
    case OPT_SEED: cfg->seed = (uint64_t)as_cli_i64(cli, "--seed", arg, 0, INT64_MAX); return 1;
    case OPT_SINGLES: a->singles = 1; return 1;
    case OPT_DRAWONLY: a->draw_only = 1; return 1;
    case OPT_PSINGLES: a->psingles = 1; return 1;
    case OPT_SPIECES: a->spieces = as_cli_f64(cli, "--sample-pieces", arg, 0, 1); return 1;
    case OPT_COLSINGLES: a->col_singles = as_cli_i64(cli, "--col-singles", arg, 0, 1 << 20); return 1;
    case OPT_PBLOCKS:
        free(a->pblocks);
        a->pblocks = NULL;
        if (as_parse_i64_list(arg, 2, 1024, &a->pblocks, &a->npblocks) || !a->npblocks)
            as_cli_usage(cli, "--piece-blocks: '%s' is not a list of block counts in 2..1024 (e.g. 2,4,8)", arg);
        return 1;
    case OPT_FROM:
        free(a->from);
        if (as_parse_table_ids(arg, &a->from, &a->nfrom))
            as_cli_usage(cli, "--sample-from: '%s' is not a list of table ids (e.g. 0-63)", arg);
        return 1;
    default: return 0;
    }
}

/* --part I/N: I and N parsed from a copy: arg is argv, which the header records as given */
static void part_arg(as_cli *cli, const char *arg, as_brun_cfg *rc)
{
    const char *slash = strchr(arg, '/');
    if (!slash) as_cli_usage(cli, "--part: '%s' is not I/N", arg);
    char *i_str = as_strdup(arg);
    i_str[slash - arg] = 0;
    rc->part_n = as_cli_i64(cli, "--part N", slash + 1, 1, 1000000);
    rc->part_i = as_cli_i64(cli, "--part I", i_str, 1, rc->part_n);
    free(i_str);
}

/* how it is measured: the device, threads, runs, memory, the cache flush, this run's part */
static int opt_protocol(as_cli *cli, int opt, const char *arg, bargs *a, as_bench_cfg *cfg, as_brun_cfg *rc)
{
    uint64_t v;
    switch (opt) {
    case OPT_DEVICE: a->device = arg; return 1;
    case OPT_THREADS: cfg->threads = (int)as_cli_i64(cli, "--threads", arg, 1, 4096); return 1;
    case OPT_WARMUP: cfg->warmup = (int)as_cli_i64(cli, "--warmup", arg, 0, 100000); return 1;
    case OPT_RUNS: cfg->runs = (int)as_cli_i64(cli, "--runs", arg, 1, 100000); return 1;
    case OPT_TRIM: cfg->trim = (int)as_cli_i64(cli, "--trim", arg, 0, 100000); return 1;
    case OPT_LR: cfg->lr = (float)as_cli_f64(cli, "--lr", arg, 0, 1e6); return 1;
    case OPT_WTYPE: {
        as_eb_dtype d;
        if (!strcmp(arg, "tables")) cfg->wtype = AS_BENCH_WTYPE_TABLES;
        else if (!as_eb_dtype_parse(arg, &d)) cfg->wtype = (int)d;
        else as_cli_usage(cli, "--weights-type: '%s' is not fp16, fp32, bf16 or tables", arg);
        return 1;
    }
    case OPT_OPTIM:
        if (as_eb_optim_parse(arg, &cfg->optim))
            as_cli_usage(cli, "--optimizer: '%s' is not sgd, exact_rowwise_adagrad or adam", arg);
        return 1;
    case OPT_MAXMEM:
        if (as_parse_size(arg, &v) || !v) as_cli_usage(cli, "--max-mem: '%s' is not a size", arg);
        cfg->max_bytes = v;
        cfg->group_bytes = 0;
        a->maxmem_given = 1;
        a->maxmem_arg = arg;
        return 1;
    case OPT_NORES: cfg->per_shard_upload = 1; return 1;
    case OPT_ROWCAP: cfg->row_cap = as_cli_i64(cli, "--row-cap", arg, 1, INT32_MAX); return 1;
    case OPT_FLUSH:
        if (as_parse_size(arg, &v) || !v) as_cli_usage(cli, "--flush: '%s' is not a size", arg);
        cfg->flush_bytes = v;
        return 1;
    case OPT_PART: part_arg(cli, arg, rc); return 1;
    default: return 0;
    }
}

/* --reference: auto, none or table ids, each once */
static void reference_arg(as_cli *cli, const char *arg, bargs *a)
{
    free(a->ref);
    a->ref = NULL;
    a->nref = 0;
    a->ref_auto = !strcmp(arg, "auto");
    if (a->ref_auto || !strcmp(arg, "none")) return;
    if (as_parse_table_ids(arg, &a->ref, &a->nref) || !a->nref)
        as_cli_usage(cli, "--reference: '%s' is not auto, none or a list of table ids (e.g. 3,17,40)", arg);
    int64_t dup;
    if (as_table_ids_duplicate(a->ref, a->nref, &dup))
        as_cli_usage(cli, "--reference: table %" PRId64 " is listed twice (a shard holds a table once)", dup);
}

/* the noise: re-measuring, the window and passes, the quiet-machine check, drift */
static int opt_noise(as_cli *cli, int opt, const char *arg, bargs *a, as_brun_cfg *rc)
{
    switch (opt) {
    case OPT_NOISE: rc->noise.threshold = as_cli_f64(cli, "--noise-threshold", arg, 0, 100); return 1;
    case OPT_RETRIES: rc->noise.retries = (int)as_cli_i64(cli, "--retries", arg, 0, 100); return 1;
    case OPT_WINDOW: rc->window = as_cli_i64(cli, "--window", arg, 0, 100000000); return 1;
    case OPT_PASSES: rc->passes = (int)as_cli_i64(cli, "--passes", arg, 1, AS_BENCH_PASS_MAX); return 1;
    case OPT_INTERLEAVE: rc->noise.interleave = (int)as_cli_i64(cli, "--interleave", arg, 1, 100000); return 1;
    case OPT_NOCALIB: a->calibrate = 0; return 1;
    case OPT_REFERENCE: reference_arg(cli, arg, a); return 1;
    case OPT_REFLEVEL: a->reflevel = arg; return 1;
    case OPT_DRIFTBOUND:
        rc->noise.drift_bound = as_cli_f64(cli, "--drift-bound", arg, 0, 1000);
        if (rc->noise.drift_bound != 0 && !(rc->noise.drift_bound > 1))
            as_cli_usage(cli, "--drift-bound: '%s' is not 0 (no bound) or a factor above 1", arg);
        return 1;
    default: return 0;
    }
}

/* the options' combinations, after parsing: usage errors (exit 2) */
static void check_args(as_cli *cli, int argc, const bargs *a, const as_bench_cfg *cfg)
{
    as_cli_inputs(cli, (const char *const[]){ a->tables }, 1);
    if (!a->tables) as_cli_usage(cli, "--tables FILE is required (the table data to benchmark)");
    if (2 * cfg->trim >= cfg->runs) as_cli_usage(cli, "--trim %d leaves no run of %d", cfg->trim, cfg->runs);
    if (a->sample && optind < argc) as_cli_usage(cli, "--sample reads no input");
    if (a->singles && !a->sample) as_cli_usage(cli, "--singles needs --sample N");
    if (a->draw_only && !a->sample) as_cli_usage(cli, "--draw-only needs --sample N");
    if (a->psingles && a->sample) as_cli_usage(cli, "--piece-singles measures the pieces of input plans; --sample reads no input");
    if ((a->spieces > 0 || a->pblocks) && !a->sample) as_cli_usage(cli, "--sample-pieces and --piece-blocks need --sample N");
    if (a->col_singles > 0 && !a->sample) as_cli_usage(cli, "--col-singles needs --sample N");
    if (a->from && !a->sample) as_cli_usage(cli, "--sample-from needs --sample N");
}

/* the options into *a, cfg and rc, checked: usage errors exit 2 */
static void parse_args(as_cli *cli, int argc, char **argv, bargs *a, as_bench_cfg *cfg, as_brun_cfg *rc)
{
    *a = (bargs){ .device = "auto", .maxt = 10, .calibrate = 1, .ref_auto = 1 };
    cfg->warmup = 5; cfg->runs = 10; cfg->trim = 2; cfg->lr = 0.01f; cfg->threads = 0;
    const uint64_t avail = as_bench_mem_available();
    cfg->max_bytes = avail / 2;
    cfg->group_bytes = avail / AS_BENCH_GROUP_SHARE;
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, bench_opts, NULL)) != -1) {
        if (opt_work(cli, opt, optarg, a, cfg) || opt_protocol(cli, opt, optarg, a, cfg, rc) || opt_noise(cli, opt, optarg, a, rc))
            continue;
        if (!as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
    }
    as_cli_finish(cli);
    check_args(cli, argc, a, cfg);
}

/* the work: sampled shards (*smp) or the input's records (*in), then only the tables it
   needs (*pool); the reference's ids and level into rc and *ref_level */
static void load_work(bargs *a, as_bench_cfg *cfg, as_brun_cfg *rc, int argc, char **argv, as_bsample *smp,
                      as_binput *in, as_bpool *pool, double *ref_level)
{
    char err[1024];
    size_t nref = a->nref;
    if (a->sample || a->ref_auto || nref) {
        as_bpool meta;
        int64_t *ids, npool;
        if (as_bpool_load(&meta, a->tables, NULL, 0, 1, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        if (a->sample && meta.n == 0) as_die(AS_EXIT_DATA, "%s: no table records", a->tables);
        /* the reference: from the whole table data, whatever --sample-from or the input */
        if (a->ref_auto) nref = (size_t)as_noise_ref_pool(&meta, a->ref_auto_ids);
        for (size_t i = 0; i < nref && !a->ref_auto; i++)
            if (!as_bpool_get(&meta, a->ref[i])) as_cli_usage(&cli, "--reference: table %" PRId64 " is not in %s", a->ref[i], a->tables);
        if (a->sample) {
            if (as_bsample_pool(&ids, &npool, &meta, a->from, a->nfrom, a->tables, err, sizeof err))
                as_die(AS_EXIT_DATA, "--sample-from: %s", err);
            as_bsample_draw(smp, ids, npool, a->sample, a->maxt, cfg->seed, a->singles);
            static const int64_t blocks_default[] = { 2, 4, 8 };
            as_bsample_pieces(smp, &meta, a->spieces, a->pblocks ? a->pblocks : blocks_default, a->pblocks ? (int)a->npblocks : 3, cfg->seed);
            if (a->col_singles > 0) as_bsample_col_singles(smp, &meta, ids, npool, a->col_singles);
            free(ids);
        }
        as_bpool_free(&meta);
    }
    if (a->draw_only) {
        /* the draws as shard records, nothing measured (no device, no table data) */
        as_writer *w = as_cli_open_output(&cli);
        as_bsample_write(w, smp);
        as_writer_close(w);
        as_info("--draw-only: %" PRId64 " shard(s) drawn, none measured", smp->n);
        as_bsample_free(smp);
        exit(0);
    }
    if (!a->sample && as_binput_read(in, argv + optind, argc - optind, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    if (a->psingles) {
        const int64_t np = as_binput_add_piece_singles(in);
        as_debug("--piece-singles: %" PRId64 " distinct pieces of the plans, each measured alone", np);
    }
    const int64_t *ref_ids = a->ref_auto ? a->ref_auto_ids : a->ref;
    rc->noise.ref_ids = nref ? ref_ids : NULL;
    rc->noise.ref_n = (int64_t)nref;
    *ref_level = a->reflevel ? reference_level(a->reflevel, ref_ids, (int64_t)nref, cfg->row_cap) : 0;
    if (a->sample ? as_bsample_tables(pool, a->tables, smp, rc->part_i, rc->part_n, ref_ids, (int64_t)nref, err, sizeof err)
               : as_binput_tables(pool, a->tables, in, rc->part_i, rc->part_n, ref_ids, (int64_t)nref, err, sizeof err))
        as_die(AS_EXIT_DATA, "%s", err);
}

int main(int argc, char **argv)
{
    as_cli_init(&cli, argc, argv, "as-bench", "as-bench --tables FILE [options] [INPUT...]", HELP);
    /* static: what the options allocate stays reachable when a usage error exits */
    static bargs a;
    as_bench_cfg cfg = { 0 };
    as_brun_cfg rc = { .bench = &cfg, .noise = { .threshold = AS_NOISE_THRESHOLD, .retries = AS_NOISE_RETRIES, .interleave = AS_NOISE_INTERLEAVE,
                                                   .drift_bound = AS_NOISE_DRIFT_BOUND }, .part_i = 1,
                       .part_n = 1, .window = 64, .progress = progress, .retried = retried, .failed = failed };
    parse_args(&cli, argc, argv, &a, &cfg, &rc);
    setup_device(&cfg, a.device);
    as_bsample smp = { 0 };
    as_binput in = { 0 };
    as_bpool pool;
    double ref_level;
    load_work(&a, &cfg, &rc, argc, argv, &smp, &in, &pool, &ref_level);
    char err[1024];
    /* a table of a type the kernels do not measure (int8, ...) is bad data, before any work */
    if (as_bench_check_types(&cfg, &pool, err, sizeof err)) as_die(AS_EXIT_DATA, "%s: %s", a.tables, err);
    if (cfg.row_cap > 0) {
        /* after every piece and slice is made, before the session holds the pool */
        const int64_t k = as_bpool_cap_rows(&pool, cfg.row_cap);
        int64_t lost = 0, dist = 0;
        for (int64_t i = 0; i < pool.n; i++)
            if (pool.t[i].cap_rows) { dist += pool.t[i].cap_distinct; lost += pool.t[i].cap_distinct - pool.t[i].cap_kept; }
        as_info("--row-cap %" PRId64 ": %" PRId64 " table%s or piece%s above it, measured over that many rows%s", cfg.row_cap, k,
                k == 1 ? "" : "s", k == 1 ? "" : "s",
                !k ? "" : lost ? "; some distinct rows share one under the cap" : "; every distinct row kept apart");
        if (lost) as_info("--row-cap: %" PRId64 " of %" PRId64 " distinct rows of the capped tables merged into others", lost, dist);
    }
    /* before the output is opened: a --max-mem that leaves nothing measures nothing */
    if (a.maxmem_given && !cfg.cuda) {
        const uint64_t fixed = AS_BENCH_PROCESS_BYTES + as_bpool_bytes(&pool) + as_bench_flush_bytes(&cfg);
        if (fixed >= cfg.max_bytes)
            as_cli_usage(&cli, "--max-mem %s leaves nothing for the shards: the process (%.1f MiB), the table data "
                         "(%.1f MiB) and the cache-flush sweep (--flush, %.1f MiB) take it", a.maxmem_arg,
                         AS_BENCH_PROCESS_BYTES / 1048576.0, as_bpool_bytes(&pool) / 1048576.0,
                         as_bench_flush_bytes(&cfg) / 1048576.0);
    }
    as_writer *w = as_cli_open_output(&cli);
    double setup0 = as_now();
    as_bench_session *sess = as_bench_session_new(&cfg, &pool, err, sizeof err);
    if (!sess) as_die(AS_EXIT_ENV, "%s", err);
    if (as_bench_session_budget(sess)) {
        as_debug("memory: budget %.1f MiB (%s): process %.1f MiB, table data %.1f MiB, cache-flush sweep %.1f MiB, "
                 "shard data at most %.1f MiB, %.1f MiB for shards set up together", cfg.max_bytes / 1048576.0,
                 a.maxmem_given ? "--max-mem" : "half the available memory", AS_BENCH_PROCESS_BYTES / 1048576.0,
                 as_bpool_bytes(&pool) / 1048576.0, as_bench_flush_bytes(&cfg) / 1048576.0,
                 as_bench_session_room(sess) / 1048576.0, as_bench_session_group_room(sess) / 1048576.0);
    }
    const int64_t mine = as_brun_part_units(a.sample ? smp.n : in.units, rc.part_i, rc.part_n);
    if (a.calibrate && mine > 0) check_quiet(sess);
    double loop0 = as_now();
    as_progress_start(&prog, &cli, rc.passes > 1 ? (a.sample ? "shard passes" : "plan and shard passes") : a.sample ? "shards" : "plans and shards",
                      (double)mine * (rc.passes > 1 ? rc.passes : 1));
    as_brun_stats st = { 0 };
    st.ref_base = ref_level;
    if (a.sample) as_brun_samples(w, sess, &rc, &smp, &st);
    else if (as_brun_input(w, sess, &rc, &in, &st, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    double loop_s = as_now() - loop0;
    as_progress_end(&prog);
    report(sess, &cfg, &rc, &st, loop_s, loop0 - setup0);
    as_bench_session_free(sess);
    as_writer_close(w);
    if (st.failed) as_err("%" PRId64 " shard(s) could not be measured (see their 'error')", st.failed);
    as_bench_tally_free(&st.tally);
    as_bsample_free(&smp);
    as_binput_free(&in);
    free(a.from);
    free(a.ref);
    as_bpool_free(&pool);
    return 0;
}
