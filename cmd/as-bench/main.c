/* as-bench - micro-benchmark shards: the fused multi-table embedding-bag forward + backward
 * + exact SGD, on a CUDA GPU or the CPU, with the paper's protocol. Writes `cost` records
 * (the cost model's training data) and passes plans on annotated with per-shard costs. */
#include "bench.h"
#include "benchnoise.h"
#include "plan.h"
#include "reclimits.h"
#include "cli.h"
#include "common.h"
#include "device.h"
#include "stream.h"

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
    "          `noise_threshold`, and a `cost` record is written per shard\n"
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
    "      --seed S           sampling and weight seed (default 0)\n"
    "      --device D         auto (a working GPU, else the CPU), cpu, cuda, cuda:N\n"
    "      --threads N        CPU threads (default: all cores)\n"
    "      --warmup W         warm-up iterations (default 5)\n"
    "      --runs R           timed runs (default 10)\n"
    "      --trim K           drop K highest and K lowest runs (default 2)\n"
    "      --lr X             SGD learning rate (default 0.01)\n"
    "      --max-mem SIZE     CPU: refuse shards needing more (default: half the RAM)\n"
    "      --flush SIZE       CPU: bytes read to flush the caches before each timed run\n"
    "                         (default: twice the last-level cache, at least 64M)\n"
    "      --part I/N         only every N-th unit of work, starting at the I-th (1-based):\n"
    "                         plans, shards or samples; for fan-out over devices and hosts\n"
    "      --no-resident      CUDA: upload each shard's table data when it is measured\n"
    "                         (default: the tables' offsets and indices are uploaded once\n"
    "                         and stay on the GPU when they fit in half its free memory)\n"
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
    "      --no-calibrate     skip the quiet-machine check\n"
    "\n"
    "Each shard keeps the figures of its attempt with the lowest spread; `attempts` counts\n"
    "them all. With fewer than 2 runs kept after trimming (e.g. --runs 3 --trim 1) a shard\n"
    "has no spread (nil) and is never re-measured. Before measuring, a quiet-machine check\n"
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
    "reported on stderr and in its record (`error`), not crashed on.\n"
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
    "                         read under the fake timer). Never set it for real figures\n"
    "\n"
    "Example:\n"
    "  as-convert --synth --preset small -o pool.ast\n"
    "  as-bench --tables pool.ast --sample 100 --max-tables 10 > costs.ast\n";

enum { OPT_TABLES = AS_OPT_TOOL_BASE, OPT_SAMPLE, OPT_MAXT, OPT_SEED, OPT_DEVICE, OPT_THREADS, OPT_WARMUP,
       OPT_RUNS, OPT_TRIM, OPT_LR, OPT_MAXMEM, OPT_PART, OPT_FLUSH, OPT_SINGLES, OPT_FROM, OPT_NORES,
       OPT_NOISE, OPT_RETRIES, OPT_WINDOW, OPT_NOCALIB };

typedef struct {
    char *raw;
    size_t len;
    int kind;       /* 0 other, 1 plan, 2 shard */
} held;

/* one unit of work of a window: a sample, a shard record or a plan record */
typedef struct {
    int kind;               /* 1 plan, 2 shard, 3 sample */
    int64_t rec;            /* its index in the input records (plan, shard) or the samples */
    const int64_t *ids;     /* sample: its tables (not owned) */
    int64_t n;
    /* filled by run_window from the record */
    msgpack_unpacked up;
    int64_t *own_ids;       /* shard record: its tables */
    int64_t task, sid;
    as_planrec pr;
    char alg[64];
    int64_t *start, *order, *flat;  /* plan: shard k's tables are flat[start[k] .. start[k+1]) */
    int64_t job0;           /* its first job; a plan's non-empty shards are consecutive jobs */
} unit;

static as_cli cli;
static as_bench_cfg cfg;
static void retried(void *ctx, int round, int64_t k, int64_t m);
static as_noise_cfg ncfg = { AS_NOISE_THRESHOLD, AS_NOISE_RETRIES, retried };
static int64_t nfailed;
static as_bench_tally tally;
static as_bench_session *sess;
static as_progress prog;
static int64_t units_done;          /* progress: units whose first attempts are all made */
static double retry_s;              /* wall seconds of the re-measuring rounds */
static held *in;
static int64_t part_i = 1;

static void write_cost(as_writer *w, const int64_t *ids, int64_t n, const as_bench_result *r, const char *origin,
                       int64_t task, const char *alg, int64_t shard)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 6 + AS_BENCH_RESULT_FIELDS);
    as_pack_kv_str(pk, "kind", "cost");
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)n);
    for (int64_t i = 0; i < n; i++) msgpack_pack_int64(pk, ids[i]);
    as_pack_kv_str(pk, "origin", origin);
    as_pack_kv_i64(pk, "task", task);
    as_pack_str(pk, "alg");
    if (alg) as_pack_str(pk, alg); else msgpack_pack_nil(pk);
    as_pack_kv_i64(pk, "shard", shard);
    as_bench_pack_result(pk, &cfg, r);
    as_writer_end_record(w);
    as_bench_tally_add(&tally, r);
    if (!r->ok) {
        nfailed++;
        as_err("shard of %" PRId64 " table(s) (first %" PRId64 ") not measured: %s", n, n ? ids[0] : -1, r->error);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    const int64_t *done_after;      /* [jobs] units complete once job j is measured */
} prog_ctx;

static void first_done(void *ctx, int64_t j)
{
    const prog_ctx *pc = ctx;
    as_progress_update(&prog, (double)(units_done + pc->done_after[j]));
}

/* the re-measuring rounds have their own progress line (a round can take minutes on a
 * loaded machine while the units' count stands still) */
static as_progress rprog;
static char rlabel[64];

static void retried(void *ctx, int round, int64_t k, int64_t m)
{
    (void)ctx;
    if (k == 1) {
        snprintf(rlabel, sizeof rlabel, "noisy shards re-measured (round %d)", round);
        as_progress_start(&rprog, &cli, rlabel, (double)m);
    }
    as_progress_update(&rprog, (double)k);
}

/* Measure the units win[0..nwin) (as_noise_measure's rounds over all their shards), then
 * write, in input order, the records in[lo..hi) (stream mode: units of this part with their
 * costs, other records passed through by part 1, units of other parts left out) or, for
 * samples (lo = hi = 0), the samples' cost records. */
static void run_window(as_writer *w, unit *win, int64_t nwin, int64_t lo, int64_t hi, int64_t nsingles)
{
    char e2[768];
    int64_t njobs = 0;
    for (int64_t q = 0; q < nwin; q++) {
        unit *un = &win[q];
        un->job0 = njobs;
        if (un->kind == 3) { njobs++; continue; }
        msgpack_unpacked_init(&un->up);
        size_t off = 0;
        msgpack_unpack_next(&un->up, in[un->rec].raw, in[un->rec].len, &off);
        const msgpack_object *rec = &un->up.data;
        un->task = un->sid = -1;
        as_obj_i64(rec, "task", &un->task);
        if (un->kind == 2) {
            if (as_field_table_ids(rec, "tables", &un->own_ids, &un->n, e2, sizeof e2)) as_die(AS_EXIT_DATA, "internal: %s", e2);
            un->ids = un->own_ids;
            as_obj_i64(rec, "id", &un->sid);
            njobs++;
        } else {
            if (as_planrec_read(rec, &un->pr, e2, sizeof e2)) as_die(AS_EXIT_DATA, "internal: %s", e2);
            un->alg[0] = 0;
            as_obj_str(rec, "alg", un->alg, sizeof un->alg);
            const int64_t K = un->pr.shards;
            un->start = as_malloc((size_t)(K + 1) * sizeof *un->start);
            un->order = as_malloc((size_t)(un->pr.n ? un->pr.n : 1) * sizeof *un->order);
            un->flat = as_malloc((size_t)(un->pr.n ? un->pr.n : 1) * sizeof *un->flat);
            /* shard by shard: the tables placed on it (-1: unplaced, not measured) */
            as_planrec_group(&un->pr, un->start, un->order);
            for (int64_t q2 = 0; q2 < un->start[K]; q2++) un->flat[q2] = un->pr.tables[un->order[q2]];
            for (int64_t k = 0; k < K; k++) njobs += un->start[k + 1] > un->start[k];
        }
    }
    as_noise_job *jobs = as_calloc((size_t)(njobs ? njobs : 1), sizeof *jobs);
    int64_t *done_after = as_calloc((size_t)(njobs ? njobs : 1), sizeof *done_after);
    for (int64_t q = 0; q < nwin; q++) {
        unit *un = &win[q];
        int64_t j = un->job0;
        if (un->kind != 1) {
            jobs[j].ids = un->ids;
            jobs[j].n = un->n;
        } else {
            for (int64_t k = 0; k < un->pr.shards; k++) {
                const int64_t m = un->start[k + 1] - un->start[k];
                if (!m) continue;
                jobs[j].ids = un->flat + un->start[k];
                jobs[j].n = m;
                j++;
            }
        }
    }
    /* done_after[j]: the units all of whose jobs are among jobs[0..j] (a plan without a
       non-empty shard counts with the job before it) */
    for (int64_t q = 0, j = 0; j < njobs; j++) {
        while (q < nwin && (q + 1 < nwin ? win[q + 1].job0 : njobs) <= j + 1) q++;
        done_after[j] = q;
    }
    prog_ctx pc = { done_after };
    as_noise_measure(sess, jobs, njobs, &ncfg, first_done, &pc, &retry_s);
    units_done += nwin;
    as_progress_update(&prog, (double)units_done);

    /* write, in order */
    if (win && nwin && win[0].kind == 3) {
        for (int64_t q = 0; q < nwin; q++) {
            const unit *un = &win[q];
            const int64_t i = un->rec;
            write_cost(w, un->ids, un->n, &jobs[un->job0].r, i < nsingles ? "single" : "sample", -1, NULL, i < nsingles ? -1 : i - nsingles);
        }
    }
    int64_t q = 0;
    for (int64_t i = lo; i < hi; i++) {
        if (q < nwin && win[q].rec == i) {
            unit *un = &win[q++];
            if (un->kind == 2) {
                write_cost(w, un->ids, un->n, &jobs[un->job0].r, "shard", un->task, NULL, un->sid);
                continue;
            }
            const int64_t K = un->pr.shards;
            const as_bench_result **rk = as_calloc((size_t)K, sizeof *rk);
            char dev[128] = "";
            for (int64_t k = 0, j = un->job0; k < K; k++) {
                if (un->start[k + 1] == un->start[k]) continue;   /* an empty shard costs nothing */
                rk[k] = &jobs[j++].r;
                snprintf(dev, sizeof dev, "%s", rk[k]->device);
                write_cost(w, un->flat + un->start[k], un->start[k + 1] - un->start[k], rk[k], "plan", un->task,
                           un->alg, k);
            }
            /* the plan, passed on with its measured costs (fields replaced if present) */
            static const char *const mine[] = { "cost_ms", "cost_device", "cost_kind", "cost_spread", "cost_noisy", "noise_threshold" };
            const int nmine = (int)(sizeof mine / sizeof *mine);
            const msgpack_object *rec = &un->up.data;
            msgpack_packer *pk = as_writer_pk(w);
            uint32_t keep = 0;
            for (uint32_t f = 0; f < rec->via.map.size; f++) {
                int drop = 0;
                for (int m = 0; m < nmine && !drop; m++) drop = as_obj_streq(&rec->via.map.ptr[f].key, mine[m]);
                keep += !drop;
            }
            msgpack_pack_map(pk, keep + (uint32_t)nmine);
            for (uint32_t f = 0; f < rec->via.map.size; f++) {
                const msgpack_object_kv *kv = &rec->via.map.ptr[f];
                int drop = 0;
                for (int m = 0; m < nmine && !drop; m++) drop = as_obj_streq(&kv->key, mine[m]);
                if (drop) continue;
                msgpack_pack_object(pk, kv->key);
                msgpack_pack_object(pk, kv->val);
            }
            as_pack_str(pk, "cost_ms");
            msgpack_pack_array(pk, (size_t)K);
            for (int64_t k = 0; k < K; k++) {
                if (!rk[k]) msgpack_pack_double(pk, 0);
                else if (rk[k]->ok) msgpack_pack_double(pk, rk[k]->cost_ms);
                else msgpack_pack_nil(pk);
            }
            as_pack_kv_str(pk, "cost_device", dev);
            as_pack_kv_str(pk, "cost_kind", "measured");
            as_pack_str(pk, "cost_spread");
            msgpack_pack_array(pk, (size_t)K);
            for (int64_t k = 0; k < K; k++) {
                if (rk[k] && rk[k]->ok && isfinite(rk[k]->spread)) msgpack_pack_double(pk, rk[k]->spread);
                else msgpack_pack_nil(pk);
            }
            as_pack_str(pk, "cost_noisy");
            msgpack_pack_array(pk, (size_t)K);
            for (int64_t k = 0; k < K; k++) {
                if (rk[k] && rk[k]->ok && rk[k]->noisy) msgpack_pack_true(pk);
                else msgpack_pack_false(pk);
            }
            as_pack_kv_f64(pk, "noise_threshold", ncfg.threshold);
            as_writer_end_record(w);
            free(rk);
        } else if (!in[i].kind) {
            /* with --part, other records pass through the first part only, so merged
               outputs hold them once */
            if (part_i == 1) as_writer_raw(w, in[i].raw, in[i].len);
        }
    }
    for (int64_t q2 = 0; q2 < nwin; q2++) {
        unit *un = &win[q2];
        if (un->kind == 3) continue;
        if (un->kind == 1) {
            free(un->start); free(un->order); free(un->flat);
            as_planrec_free(&un->pr);
        }
        free(un->own_ids);
        msgpack_unpacked_destroy(&un->up);
    }
    free(jobs);
    free(done_after);
}

int main(int argc, char **argv)
{
    as_cli_init(&cli, argc, argv, "as-bench", "as-bench --tables FILE [options] [INPUT...]", HELP);
    static const struct option opts[] = {
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
        { "max-mem", required_argument, 0, OPT_MAXMEM },
        { "part", required_argument, 0, OPT_PART },
        { "flush", required_argument, 0, OPT_FLUSH },
        { "singles", no_argument, 0, OPT_SINGLES },
        { "sample-from", required_argument, 0, OPT_FROM },
        { "no-resident", no_argument, 0, OPT_NORES },
        { "noise-threshold", required_argument, 0, OPT_NOISE },
        { "retries", required_argument, 0, OPT_RETRIES },
        { "window", required_argument, 0, OPT_WINDOW },
        { "no-calibrate", no_argument, 0, OPT_NOCALIB },
        AS_CLI_COMMON_OPTIONS
    };
    const char *tables = NULL, *device = "auto";
    int64_t sample = 0, maxt = 10, part_n = 1, window = 64;
    int calibrate = 1;
    int singles = 0;
    int64_t *from = NULL;
    size_t nfrom = 0;
    cfg.warmup = 5; cfg.runs = 10; cfg.trim = 2; cfg.lr = 0.01f; cfg.threads = 0;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    cfg.max_bytes = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 2 : 0;
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, opts, NULL)) != -1) {
        switch (opt) {
        case OPT_TABLES: tables = optarg; break;
        case OPT_SAMPLE: sample = as_cli_i64(&cli, "--sample", optarg, 1, 100000000); break;
        case OPT_MAXT: maxt = as_cli_i64(&cli, "--max-tables", optarg, 1, 1000000); break;
        case OPT_SEED: cfg.seed = (uint64_t)as_cli_i64(&cli, "--seed", optarg, 0, INT64_MAX); break;
        case OPT_DEVICE: device = optarg; break;
        case OPT_THREADS: cfg.threads = (int)as_cli_i64(&cli, "--threads", optarg, 1, 4096); break;
        case OPT_WARMUP: cfg.warmup = (int)as_cli_i64(&cli, "--warmup", optarg, 0, 100000); break;
        case OPT_RUNS: cfg.runs = (int)as_cli_i64(&cli, "--runs", optarg, 1, 100000); break;
        case OPT_TRIM: cfg.trim = (int)as_cli_i64(&cli, "--trim", optarg, 0, 100000); break;
        case OPT_LR: cfg.lr = (float)as_cli_f64(&cli, "--lr", optarg, 0, 1e6); break;
        case OPT_MAXMEM: {
            uint64_t v;
            if (as_parse_size(optarg, &v) || !v) as_cli_usage(&cli, "--max-mem: '%s' is not a size", optarg);
            cfg.max_bytes = v;
            break;
        }
        case OPT_SINGLES: singles = 1; break;
        case OPT_NORES: cfg.per_shard_upload = 1; break;
        case OPT_NOISE: ncfg.threshold = as_cli_f64(&cli, "--noise-threshold", optarg, 0, 100); break;
        case OPT_RETRIES: ncfg.retries = (int)as_cli_i64(&cli, "--retries", optarg, 0, 100); break;
        case OPT_WINDOW: window = as_cli_i64(&cli, "--window", optarg, 0, 100000000); break;
        case OPT_NOCALIB: calibrate = 0; break;
        case OPT_FROM:
            free(from);
            if (as_parse_i64_list(optarg, 0, INT32_MAX, &from, &nfrom))
                as_cli_usage(&cli, "--sample-from: '%s' is not a list of table ids (e.g. 0-63)", optarg);
            break;
        case OPT_FLUSH: {
            uint64_t v;
            if (as_parse_size(optarg, &v) || !v) as_cli_usage(&cli, "--flush: '%s' is not a size", optarg);
            cfg.flush_bytes = v;
            break;
        }
        case OPT_PART: {
            char *slash = strchr(optarg, '/');
            if (!slash) as_cli_usage(&cli, "--part: '%s' is not I/N", optarg);
            *slash = 0;
            part_n = as_cli_i64(&cli, "--part N", slash + 1, 1, 1000000);
            part_i = as_cli_i64(&cli, "--part I", optarg, 1, part_n);
            break;
        }
        default:
            if (!as_cli_common(&cli, opt, optarg)) as_cli_usage(&cli, "unknown option");
        }
    }
    as_cli_finish(&cli);
    as_cli_inputs(&cli, (const char *const[]){ tables }, 1);
    if (!tables) as_cli_usage(&cli, "--tables FILE is required (the table data to benchmark)");
    if (2 * cfg.trim >= cfg.runs) as_cli_usage(&cli, "--trim %d leaves no run of %d", cfg.trim, cfg.runs);
    if (sample && optind < argc) as_cli_usage(&cli, "--sample reads no input");
    if (singles && !sample) as_cli_usage(&cli, "--singles needs --sample N");
    if (from && !sample) as_cli_usage(&cli, "--sample-from needs --sample N");
    static as_bench_fake fake;
    {
        const char *spec = getenv("AS_BENCH_FAKE_NOISE");
        char ferr[256];
        if (spec && *spec) {
            if (as_bench_fake_parse(spec, &fake, ferr, sizeof ferr)) as_cli_usage(&cli, "AS_BENCH_FAKE_NOISE: %s", ferr);
            cfg.fake = &fake;
        }
    }
    /* the device */
    {
        char derr[512];
        int code = as_bench_device(device, &cfg, derr, sizeof derr);
        if (code == AS_EXIT_USAGE) as_cli_usage(&cli, "%s", derr);
        if (code) as_die(code, "%s", derr);
    }

    char err[1024];
    /* read the work: held input records, or sampled shards */
    int64_t nin = 0, capin = 0, nunits = 0, nsingles = 0;
    int64_t maxid = -1;
    int64_t **sh_ids = NULL, *sh_n = NULL;
    as_bpool meta;
    memset(&meta, 0, sizeof meta);
    if (sample) {
        if (as_bpool_load(&meta, tables, NULL, 0, 1, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
        if (meta.n == 0) as_die(AS_EXIT_DATA, "%s: no table records", tables);
        if (from) {
            /* keep only the listed tables in the sampling pool */
            int64_t k = 0;
            for (int64_t j = 0; j < meta.n; j++) {
                int keep = 0;
                for (size_t q = 0; q < nfrom && !keep; q++) keep = from[q] == meta.t[j].id;
                if (keep) meta.t[k++] = meta.t[j];
            }
            for (size_t q = 0; q < nfrom; q++) {
                int found = 0;
                for (int64_t j = 0; j < k && !found; j++) found = meta.t[j].id == from[q];
                if (!found) as_die(AS_EXIT_DATA, "--sample-from: table %" PRId64 " is not in %s", from[q], tables);
            }
            meta.n = k;
        }
        as_rng r;
        as_rng_seed(&r, cfg.seed, 0x73616d706c65ULL);
        sh_ids = as_malloc((size_t)sample * sizeof *sh_ids);
        sh_n = as_malloc((size_t)sample * sizeof *sh_n);
        int64_t *perm = as_malloc((size_t)meta.n * sizeof *perm);
        for (int64_t i = 0; i < sample; i++) {
            int64_t k = 1 + (int64_t)as_rng_below(&r, (uint64_t)(maxt < meta.n ? maxt : meta.n));
            for (int64_t j = 0; j < meta.n; j++) perm[j] = meta.t[j].id;
            sh_ids[i] = as_malloc((size_t)k * sizeof **sh_ids);
            for (int64_t j = 0; j < k; j++) {
                int64_t q = j + (int64_t)as_rng_below(&r, (uint64_t)(meta.n - j));
                int64_t tmp = perm[j]; perm[j] = perm[q]; perm[q] = tmp;
                sh_ids[i][j] = perm[j];
                if (perm[j] > maxid) maxid = perm[j];
            }
            sh_n[i] = k;
        }
        free(perm);
        if (singles) {
            /* every table alone first, in id order, then the samples */
            int64_t ns = meta.n;
            int64_t **ids2 = as_malloc((size_t)(ns + sample) * sizeof *ids2), *n2 = as_malloc((size_t)(ns + sample) * sizeof *n2);
            int64_t *sorted = as_malloc((size_t)ns * sizeof *sorted);
            for (int64_t j = 0; j < ns; j++) sorted[j] = meta.t[j].id;
            qsort(sorted, (size_t)ns, sizeof *sorted, cmp_i64);
            for (int64_t j = 0; j < ns; j++) {
                ids2[j] = as_malloc(sizeof **ids2);
                ids2[j][0] = sorted[j];
                n2[j] = 1;
                if (sorted[j] > maxid) maxid = sorted[j];
            }
            memcpy(ids2 + ns, sh_ids, (size_t)sample * sizeof *ids2);
            memcpy(n2 + ns, sh_n, (size_t)sample * sizeof *n2);
            free(sh_ids);
            free(sh_n);
            free(sorted);
            sh_ids = ids2;
            sh_n = n2;
            nsingles = ns;
            sample += ns;
        }
        nunits = sample;
    } else {
        char *none[] = { "-" };
        char **files = optind < argc ? argv + optind : none;
        int nfiles = optind < argc ? argc - optind : 1;
        for (int fi = 0; fi < nfiles; fi++) {
            as_reader *r = as_reader_open(files[fi]);
            if (!r) exit(AS_EXIT_DATA);
            as_record rec;
            int rc;
            while ((rc = as_reader_next(r, &rec)) == 1) {
                if (as_rec_is(&rec, "header")) continue;
                int kind = as_rec_is(&rec, "plan") ? 1 : as_rec_is(&rec, "shard") ? 2 : 0;
                if (kind) {
                    /* every field checked here, once: the loop below re-reads records that passed */
                    char e2[768];
                    as_planrec pr;
                    int64_t *ids = NULL, n = 0;
                    if (kind == 1 ? as_planrec_read(&rec.obj, &pr, e2, sizeof e2)
                                  : as_field_table_ids(&rec.obj, "tables", &ids, &n, e2, sizeof e2))
                        as_die(AS_EXIT_DATA, "%s: record %" PRIu64 ": %s%s", as_reader_name(r), rec.index, kind == 1 ? "" : "shard: ", e2);
                    if (kind == 1) { ids = pr.tables; n = pr.n; }
                    for (int64_t i = 0; i < n; i++) if (ids[i] > maxid) maxid = ids[i];
                    if (kind == 1) as_planrec_free(&pr);
                    else free(ids);
                    nunits++;
                }
                if (nin == capin) { capin = capin ? 2 * capin : 64; in = as_realloc(in, (size_t)capin * sizeof *in); }
                in[nin].raw = as_malloc(rec.rawlen);
                memcpy(in[nin].raw, rec.raw, rec.rawlen);
                in[nin].len = rec.rawlen;
                in[nin].kind = kind;
                nin++;
            }
            if (rc < 0) as_die(AS_EXIT_DATA, "%s", as_reader_error(r));
            as_reader_close(r);
        }
    }
    /* load only the tables the work needs */
    uint8_t *want = as_calloc((size_t)(maxid + 1), 1);
    for (int64_t i = 0; sample && i < sample; i++)
        if ((i % part_n) == part_i - 1)
            for (int64_t j = 0; j < sh_n[i]; j++) want[sh_ids[i][j]] = 1;
    as_bpool pool;
    /* for input records, every referenced id must exist: mark them all */
    if (!sample) {
        int64_t u = 0;
        for (int64_t i = 0; i < nin; i++) {
            if (!in[i].kind) continue;
            if ((u++ % part_n) != part_i - 1) continue;
            msgpack_unpacked up;
            msgpack_unpacked_init(&up);
            size_t off = 0;
            msgpack_unpack_next(&up, in[i].raw, in[i].len, &off);
            int64_t *ids, n;
            char e2[512];
            if (as_field_table_ids(&up.data, "tables", &ids, &n, e2, sizeof e2)) as_die(AS_EXIT_DATA, "internal: %s", e2);
            for (int64_t j = 0; j < n; j++) want[ids[j]] = 1;
            free(ids);
            msgpack_unpacked_destroy(&up);
        }
    }
    if (as_bpool_load(&pool, tables, want, maxid + 1, 0, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    for (int64_t id = 0; id <= maxid; id++)
        if (want[id] && !as_bpool_get(&pool, id))
            as_die(AS_EXIT_DATA, "table %" PRId64 " is not in the table data %s", id, tables);

    as_writer *w = as_cli_open_output(&cli);
    double setup0 = as_now();
    sess = as_bench_session_new(&cfg, &pool, err, sizeof err);
    if (!sess) as_die(AS_EXIT_ENV, "%s", err);
    int64_t mine = 0;   /* units of work in this part */
    for (int64_t i = 0; i < nunits; i++) mine += (i % part_n) == part_i - 1;
    if (calibrate && mine > 0) {
        /* the quiet-machine check, on stderr (a loaded machine warns at the default verbosity) */
        as_bench_calib cal;
        char line[512];
        if (as_bench_calibrate(sess, &cal, err, sizeof err)) as_die(AS_EXIT_ENV, "quiet-machine check: %s", err);
        as_bench_calib_line(line, sizeof line, &cal);
        if (cal.loaded) as_info("warning: %s", line);
        else as_debug("%s", line);
    }
    double loop0 = as_now();
    as_progress_start(&prog, &cli, sample ? "shards" : "plans and shards", (double)mine);
    unit *win = as_calloc((size_t)(window ? window : (mine ? mine : 1)), sizeof *win);
    int64_t nwin = 0, emit_from = 0;
    if (sample) {
        for (int64_t i = 0; i < sample; i++) {
            if ((i % part_n) != part_i - 1) continue;
            unit *un = &win[nwin++];
            memset(un, 0, sizeof *un);
            un->kind = 3;
            un->rec = i;
            un->ids = sh_ids[i];
            un->n = sh_n[i];
            if (nwin == window) { run_window(w, win, nwin, 0, 0, nsingles); nwin = 0; }
        }
        run_window(w, win, nwin, 0, 0, nsingles);
    } else {
        int64_t u = 0;
        for (int64_t i = 0; i < nin; i++) {
            if (!in[i].kind) continue;
            if ((u++ % part_n) != part_i - 1) continue;
            unit *un = &win[nwin++];
            memset(un, 0, sizeof *un);
            un->kind = in[i].kind;
            un->rec = i;
            if (nwin == window) {
                run_window(w, win, nwin, emit_from, i + 1, 0);
                emit_from = i + 1;
                nwin = 0;
            }
        }
        /* the rest: the last window, and records after the last unit */
        run_window(w, win, nwin, emit_from, nin, 0);
    }
    free(win);
    double loop_s = as_now() - loop0;
    as_progress_end(&prog);
    {
        char line[1024];
        as_bench_session_info si;
        as_bench_session_info_get(sess, &si);
        as_bench_summary(line, sizeof line, &tally, loop_s);
        as_info("%s; setup %.2f s%s", line, loop0 - setup0,
                cfg.cuda ? (si.resident ? ", table data resident on the GPU" : ", table data uploaded per shard") : "");
        as_noise_summary(line, sizeof line, &tally, &ncfg, retry_s);
        as_info("%s", line);
        if (as_noise_warning(line, sizeof line, &tally, &ncfg)) as_info("%s", line);
    }
    as_bench_session_free(sess);
    as_writer_close(w);
    if (nfailed) as_err("%" PRId64 " shard(s) could not be measured (see their 'error')", nfailed);
    as_bench_tally_free(&tally);
    for (int64_t i = 0; i < nin; i++) free(in[i].raw);
    free(in);
    for (int64_t i = 0; i < sample; i++) free(sh_ids[i]);
    free(sh_ids);
    free(sh_n);
    free(want);
    free(from);
    as_bpool_free(&pool);
    as_bpool_free(&meta);
    return 0;
}
