/* as-bench - micro-benchmark shards: the fused multi-table embedding-bag forward + backward
 * + exact SGD, on a CUDA GPU or the CPU, with the paper's protocol. Writes `cost` records
 * (the cost model's training data) and passes plans on annotated with per-shard costs. */
#include "bench.h"
#include "plan.h"
#include "reclimits.h"
#include "cli.h"
#include "common.h"
#include "device.h"
#include "stream.h"

#include <inttypes.h>
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
    "  plan    every shard of the plan is measured; the plan passes on with `cost_ms` (one\n"
    "          per shard) and `cost_device`, and a `cost` record is written per shard\n"
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
    "Weights and gradients are generated from --seed, the table id and the element by a\n"
    "counter-based hash (on the GPU itself with --device cuda): the same values on every\n"
    "device. At the end a summary on stderr (not with -q): shards per second and the\n"
    "device's busy fraction, the kernel time of all warm-up and timed iterations over the\n"
    "wall time of the measuring loop.\n"
    "\n"
    "A shard that cannot run (does not fit in memory, tables of different batch sizes) is\n"
    "reported on stderr and in its record (`error`), not crashed on.\n"
    "\n"
    "Example:\n"
    "  as-convert --synth --preset small -o pool.ast\n"
    "  as-bench --tables pool.ast --sample 100 --max-tables 10 > costs.ast\n";

enum { OPT_TABLES = AS_OPT_TOOL_BASE, OPT_SAMPLE, OPT_MAXT, OPT_SEED, OPT_DEVICE, OPT_THREADS, OPT_WARMUP,
       OPT_RUNS, OPT_TRIM, OPT_LR, OPT_MAXMEM, OPT_PART, OPT_FLUSH, OPT_SINGLES, OPT_FROM, OPT_NORES };

typedef struct {
    char *raw;
    size_t len;
    int kind;       /* 0 other, 1 plan, 2 shard */
} held;

static as_cli cli;
static as_bench_cfg cfg;
static int64_t nfailed;
static as_bench_tally tally;

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
        AS_CLI_COMMON_OPTIONS
    };
    const char *tables = NULL, *device = "auto";
    int64_t sample = 0, maxt = 10, part_i = 1, part_n = 1;
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
    /* the device */
    {
        char derr[512];
        int code = as_bench_device(device, &cfg, derr, sizeof derr);
        if (code == AS_EXIT_USAGE) as_cli_usage(&cli, "%s", derr);
        if (code) as_die(code, "%s", derr);
    }

    char err[1024];
    /* read the work: held input records, or sampled shards */
    held *in = NULL;
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
    as_bench_session *sess = as_bench_session_new(&cfg, &pool, err, sizeof err);
    if (!sess) as_die(AS_EXIT_ENV, "%s", err);
    double loop0 = as_now();
    as_progress p;
    int64_t mine = 0;   /* units of work in this part */
    for (int64_t i = 0; i < nunits; i++) mine += (i % part_n) == part_i - 1;
    as_progress_start(&p, &cli, sample ? "shards" : "plans and shards", (double)mine);
    int64_t done = 0;
    as_bench_result res;
    if (sample) {
        for (int64_t i = 0; i < sample; i++) {
            if ((i % part_n) != part_i - 1) continue;
            as_bench_session_run(sess, sh_ids[i], sh_n[i], &res);
            write_cost(w, sh_ids[i], sh_n[i], &res, i < nsingles ? "single" : "sample", -1, NULL, i < nsingles ? -1 : i - nsingles);
            as_progress_update(&p, (double)++done);
        }
    } else {
        int64_t u = 0;
        for (int64_t i = 0; i < nin; i++) {
            if (!in[i].kind) {
                /* with --part, other records pass through the first part only, so merged
                   outputs hold them once */
                if (part_i == 1) as_writer_raw(w, in[i].raw, in[i].len);
                continue;
            }
            if ((u++ % part_n) != part_i - 1) continue;
            msgpack_unpacked up;
            msgpack_unpacked_init(&up);
            size_t off = 0;
            msgpack_unpack_next(&up, in[i].raw, in[i].len, &off);
            const msgpack_object *rec = &up.data;
            int64_t *ids, n, task = -1, sid = -1;
            char e2[768];
            as_obj_i64(rec, "task", &task);
            if (in[i].kind == 2) {
                if (as_field_table_ids(rec, "tables", &ids, &n, e2, sizeof e2)) as_die(AS_EXIT_DATA, "internal: %s", e2);
                as_obj_i64(rec, "id", &sid);
                as_bench_session_run(sess, ids, n, &res);
                write_cost(w, ids, n, &res, "shard", task, NULL, sid);
                free(ids);
            } else {
                as_planrec pr;
                char alg[64] = "";
                if (as_planrec_read(rec, &pr, e2, sizeof e2)) as_die(AS_EXIT_DATA, "internal: %s", e2);
                as_obj_str(rec, "alg", alg, sizeof alg);
                /* shard by shard: the tables placed on it (-1: unplaced, not measured) */
                const int64_t K = pr.shards;
                int64_t *start = as_malloc((size_t)(K + 1) * sizeof *start), *order = as_malloc((size_t)(pr.n ? pr.n : 1) * sizeof *order);
                as_planrec_group(&pr, start, order);
                double *cost = as_malloc((size_t)K * sizeof *cost);
                int *ok = as_malloc((size_t)K * sizeof *ok);
                int64_t *sh = as_malloc((size_t)(pr.n ? pr.n : 1) * sizeof *sh);
                char dev[128] = "";
                for (int64_t k = 0; k < K; k++) {
                    int64_t m = 0;
                    for (int64_t q = start[k]; q < start[k + 1]; q++) sh[m++] = pr.tables[order[q]];
                    if (m == 0) { cost[k] = 0; ok[k] = 1; continue; }   /* an empty shard costs nothing */
                    as_bench_session_run(sess, sh, m, &res);
                    cost[k] = res.cost_ms;
                    ok[k] = res.ok;
                    snprintf(dev, sizeof dev, "%s", res.device);
                    write_cost(w, sh, m, &res, "plan", task, alg, k);
                }
                /* the plan, passed on with its measured costs (fields replaced if present) */
                msgpack_packer *pk = as_writer_pk(w);
                uint32_t keep = 0;
                for (uint32_t q = 0; q < rec->via.map.size; q++) {
                    const msgpack_object *key = &rec->via.map.ptr[q].key;
                    if (!as_obj_streq(key, "cost_ms") && !as_obj_streq(key, "cost_device") && !as_obj_streq(key, "cost_kind")) keep++;
                }
                msgpack_pack_map(pk, keep + 3);
                for (uint32_t q = 0; q < rec->via.map.size; q++) {
                    const msgpack_object_kv *kv = &rec->via.map.ptr[q];
                    if (as_obj_streq(&kv->key, "cost_ms") || as_obj_streq(&kv->key, "cost_device") || as_obj_streq(&kv->key, "cost_kind")) continue;
                    msgpack_pack_object(pk, kv->key);
                    msgpack_pack_object(pk, kv->val);
                }
                as_pack_str(pk, "cost_ms");
                msgpack_pack_array(pk, (size_t)K);
                for (int64_t k = 0; k < K; k++) { if (ok[k]) msgpack_pack_double(pk, cost[k]); else msgpack_pack_nil(pk); }
                as_pack_kv_str(pk, "cost_device", dev);
                as_pack_kv_str(pk, "cost_kind", "measured");
                as_writer_end_record(w);
                free(cost); free(ok); free(sh); free(start); free(order);
                as_planrec_free(&pr);
            }
            msgpack_unpacked_destroy(&up);
            as_progress_update(&p, (double)++done);
        }
    }
    double loop_s = as_now() - loop0;
    as_progress_end(&p);
    {
        char line[512];
        as_bench_session_info si;
        as_bench_session_info_get(sess, &si);
        as_bench_summary(line, sizeof line, &tally, loop_s);
        as_info("%s; setup %.2f s%s", line, loop0 - setup0,
                cfg.cuda ? (si.resident ? ", table data resident on the GPU" : ", table data uploaded per shard") : "");
    }
    as_bench_session_free(sess);
    as_writer_close(w);
    if (nfailed) as_err("%" PRId64 " shard(s) could not be measured (see their 'error')", nfailed);
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
