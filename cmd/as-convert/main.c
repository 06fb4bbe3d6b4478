/* as-convert - torch.save files (MetaSyn, the prototype's processed data) or a synthetic
 * MetaSyn-like pool into an autoshard stream of `table` records; --list/--dump inspect
 * any torch.save file. */
#include "cli.h"
#include "common.h"
#include "convert.h"
#include "reclimits.h"
#include "stream.h"
#include "synth.h"
#include "torchsave.h"

#include <stdlib.h>
#include <string.h>

static const char HELP[] =
    "Convert embedding-lookup data into an autoshard stream: one `table` record per table\n"
    "(id, rows, batch, lookups, pooling, dim, offsets re-based at 0, indices).\n"
    "\n"
    "Inputs (FILE may be '-' for standard input; .pt.gz is detected by content):\n"
    "  as-convert [options] FILE       a MetaSyn file (tuple of indices, offsets, lengths) or\n"
    "                                  the prototype's dict {'lS_indices', 'lS_offsets'};\n"
    "                                  zip or legacy torch.save format, plain or gzip'd\n"
    "  as-convert --synth [options]    a synthetic MetaSyn-like pool, no input file\n"
    "  as-convert --config FILE        a model config (JSON: the tables of a TorchRec model\n"
    "                                  and its topology; docs/FORMAT.md, pipelines/models/)\n"
    "  as-convert --list FILE          one line per tensor: path, dtype, shape (text)\n"
    "  as-convert --dump FILE          as --list, then every value in row-major order (text)\n"
    "\n"
    "Options:\n"
    "      --dims LIST     dims to draw each table's dim from (default 16,32); MetaSyn has none\n"
    "      --seed S        seed for the dims and the synthetic pool (default 0)\n"
    "      --tables LIST   convert only these table ids, in this order (e.g. 3,17,42 or 0-9);\n"
    "                      with --synth: the number of tables in the pool (default 856)\n"
    "      --first N       only the first N tables\n"
    "\n"
    "Synthetic pool (--synth), calibrated to MetaSyn's published statistics (docs/SYNTH.md):\n"
    "      --batch B       batch size (default 65536)\n"
    "      --row-scale X   multiply every hash size by X (default 1; laptops: 0.01)\n"
    "      --pool-scale X  multiply every pooling factor by X (default 1)\n"
    "      --preset NAME   tiny (32 tables, batch 512, rows x1/128), small (128 tables,\n"
    "                      batch 2048, rows x1/32) or full (the defaults); later options win.\n"
    "                      Shrink batch and rows together to keep MetaSyn's reuse statistics\n"
    "\n"
    "Model config (--config FILE): a `model-config` record (the topology: world size, local\n"
    "size, HBM per device, batch size per rank, optimizer, pipeline, module path), then one\n"
    "table record per table, in the file's order (id = position), with its name, data type\n"
    "and feature names, rows = num_embeddings and dim = embedding_dim. Lookups are those of\n"
    "table k of a torch.save file where the table says \"lookups\": {\"file\": F, \"table\":\n"
    "k} (F relative to the config's folder; that file's batch), else synthetic:\n"
    "batch_size_per_rank x world_size bags (a table-wise shard's kernel sees every rank's\n"
    "samples; --batch B instead) of the table's pooling_factor (default 1; bag \"geometric\"\n"
    "lengths of that mean, or \"fixed\"), rows drawn by a Zipf law of exponent `skew`\n"
    "(default 0.8, MetaSyn's head exponents lie in 0.74-0.89; 0: uniform) and scattered over\n"
    "the table, seeded by --seed and the table's position. A bad config (JSON syntax, a\n"
    "missing or unknown field, a size out of range, a repeated name, an\n"
    "unknown data type; synthetic lookups, batch x pooling_factor, above the cap on one\n"
    "record, AS_MAX_RECORD) is exit 1 naming the table and the field; the config file and\n"
    "its lookups files are inputs, which -o may not name (exit 2).\n"
    "\n"
    "Offsets, lengths and indices are validated (offsets start at 0, never decrease, end at\n"
    "the number of indices and agree with lengths; indices are non-negative); the first\n"
    "violation is reported precisely. gzip'd and piped inputs are decompressed once into an\n"
    "unlinked file under $TMPDIR, so memory stays bounded by the largest table; piped bytes\n"
    "that do not start as a torch.save file (zip, legacy, gzip) are refused at once. A named\n"
    "FILE (and a config's lookups file) must be a regular file: a device or a FIFO is exit 2\n"
    "(in a config exit 1); stream one on standard input: as-convert - < FIFO.\n"
    "\n"
    "Limits on one input (exit 1 when exceeded; docs/FORMAT.md; 0 = no limit):\n"
    "  AS_MAX_SPOOL       bytes a gzip'd or piped input may take in $TMPDIR (default 16G)\n"
    "  AS_MAX_GZIP_RATIO  gzip expansion beyond the first 16 MiB (default 100 times)\n"
    "  AS_MAX_TENSORS     tensors in the file, shared containers once per path (default 65536)\n"
    "Expanded (stride-0) data tensors, and data tensors holding more elements than the file\n"
    "has bytes (overlapping or shared storages), are refused.\n"
    "\n"
    "Output: zstd level 1, compressed by one thread per core (at most 16) while the reading\n"
    "and checking of the next table goes on, by default; the bytes are the same whatever\n"
    "the number of threads (--zstd-workers 1 or more). Memory: the largest table's indices\n"
    "and offsets, plus zstd's buffers: at level 1 about 10 MB for the first compression\n"
    "thread and 4 MB for each further one (more at higher levels).\n"
    "\n"
    "Examples:\n"
    "  as-convert fbgemm_t856_bs65536.pt.gz -o pool.ast\n"
    "  as-convert --synth --preset small | as-show | head\n"
    "  as-convert --list data.pt\n"
    "  as-convert --config pipelines/models/dlrm-dcnv2-criteo1tb.json -o dcnv2.ast\n";

enum { OPT_DIMS = AS_OPT_TOOL_BASE, OPT_SEED, OPT_TABLES, OPT_FIRST, OPT_SYNTH, OPT_LIST, OPT_DUMP,
       OPT_BATCH, OPT_ROWSCALE, OPT_POOLSCALE, OPT_PRESET, OPT_CONFIG };

/* the command line */
typedef struct {
    as_synth_cfg sc;
    int64_t default_dims[2];
    as_convert_opts co;
    int64_t *dims, *sel;            /* --dims, --tables LIST (freed at the end) */
    const char *tables_arg;
    int synth, list, dump;
    int64_t seed, batch;
    const char *config;
    int synth_opts;                 /* options that only --synth or a file take */
} conv_args;

static const struct option conv_opts[] = {
    { "dims", required_argument, 0, OPT_DIMS },
    { "seed", required_argument, 0, OPT_SEED },
    { "tables", required_argument, 0, OPT_TABLES },
    { "first", required_argument, 0, OPT_FIRST },
    { "synth", no_argument, 0, OPT_SYNTH },
    { "list", no_argument, 0, OPT_LIST },
    { "dump", no_argument, 0, OPT_DUMP },
    { "batch", required_argument, 0, OPT_BATCH },
    { "row-scale", required_argument, 0, OPT_ROWSCALE },
    { "pool-scale", required_argument, 0, OPT_POOLSCALE },
    { "preset", required_argument, 0, OPT_PRESET },
    { "config", required_argument, 0, OPT_CONFIG },
    AS_CLI_COMMON_OPTIONS
};

/* one of as-convert's own options; 0 for a code that is not one */
static int conv_opt(as_cli *cli, int opt, const char *arg, conv_args *a)
{
    switch (opt) {
    case OPT_DIMS: {
        size_t n;
        a->synth_opts = 1;
        free(a->dims);
        if (as_parse_i64_list(arg, 1, 65536, &a->dims, &n)) as_cli_usage(cli, "--dims: '%s' is not a list of positive integers", arg);
        a->co.dims = a->dims;
        a->co.ndims = n;
        return 1;
    }
    case OPT_SEED: a->seed = as_cli_i64(cli, "--seed", arg, 0, INT64_MAX); return 1;
    case OPT_TABLES: a->tables_arg = arg; return 1;
    case OPT_FIRST: a->co.first = as_cli_i64(cli, "--first", arg, 1, INT64_MAX); return 1;
    case OPT_SYNTH: a->synth = 1; return 1;
    case OPT_LIST: a->list = 1; return 1;
    case OPT_DUMP: a->dump = 1; return 1;
    case OPT_BATCH: a->sc.batch = a->batch = as_cli_i64(cli, "--batch", arg, 1, (int64_t)1 << 24); return 1;
    case OPT_ROWSCALE: a->sc.row_scale = as_cli_f64(cli, "--row-scale", arg, 1e-9, 1e3); a->synth_opts = 1; return 1;
    case OPT_POOLSCALE: a->sc.pool_scale = as_cli_f64(cli, "--pool-scale", arg, 0, 1e3); a->synth_opts = 1; return 1;
    case OPT_CONFIG:
        a->config = arg;
        as_cli_input_arg(cli, "--config", arg);   /* an input: -o may not replace it */
        return 1;
    case OPT_PRESET:
        a->synth_opts = 1;
        /* batch and hash sizes shrink together (batch / row_scale = 65536), which keeps
           the reuse histogram MetaSyn-like (docs/SYNTH.md) */
        if (!strcmp(arg, "tiny")) { a->sc.tables = 32; a->sc.batch = 512; a->sc.row_scale = 1.0 / 128; }
        else if (!strcmp(arg, "small")) { a->sc.tables = 128; a->sc.batch = 2048; a->sc.row_scale = 1.0 / 32; }
        else if (!strcmp(arg, "full")) { as_synth_defaults(&a->sc); }
        else as_cli_usage(cli, "--preset: '%s' is not tiny, small or full", arg);
        return 1;
    default: return 0;
    }
}

/* the options into *a (a->co.dims may point into *a), checked: usage errors exit 2 */
static void parse_args(as_cli *cli, int argc, char **argv, conv_args *a)
{
    *a = (conv_args){ .default_dims = { 16, 32 } };
    as_synth_defaults(&a->sc);
    a->co = (as_convert_opts){ .dims = a->default_dims, .ndims = 2 };
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT, conv_opts, NULL)) != -1)
        if (!conv_opt(cli, opt, optarg, a) && !as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
    as_cli_finish(cli);
    a->co.seed = (uint64_t)a->seed;
    a->sc.seed = (uint64_t)a->seed;
    if (a->synth + a->list + a->dump > 1) as_cli_usage(cli, "--synth, --list and --dump exclude each other");
    if (a->tables_arg) {
        if (a->synth) a->sc.tables = as_cli_i64(cli, "--tables", a->tables_arg, 1, 10000000);
        else {
            if (as_parse_table_ids(a->tables_arg, &a->sel, &a->co.nselect))
                as_cli_usage(cli, "--tables: '%s' is not a list of table ids (e.g. 3,17,42 or 0-9)", a->tables_arg);
            a->co.select = a->sel;
        }
    }
    if (a->co.select && a->co.first) as_cli_usage(cli, "--tables LIST and --first exclude each other");
}

/* --config FILE: a model config's tables */
static void run_config(as_cli *cli, int argc, const conv_args *a)
{
    char err[1024] = "";
    if (a->synth || a->list || a->dump) as_cli_usage(cli, "--config excludes --synth, --list and --dump");
    if (optind < argc) as_cli_usage(cli, "--config takes no input file");
    if (a->synth_opts || a->tables_arg || a->co.first)
        as_cli_usage(cli, "--config takes its tables' sizes from the file: --dims, --tables, --first, --row-scale, "
                     "--pool-scale and --preset do not apply");
    as_mcfg mc;
    if (as_mcfg_load(&mc, a->config, err, sizeof err)) as_die(AS_EXIT_DATA, "%s", err);
    /* every table's lookups file is an input too: -o may not replace it */
    for (int64_t i = 0; i < mc.n; i++) {
        const as_mcfg_table *t = &mc.tables[i];
        if (t->lookups_file[0] && as_out_same_file(cli->output, t->lookups_file))
            as_cli_usage(cli, "-o %s: it is also an input (the lookups of table %lld (\"%s\") of %s); it would be overwritten: "
                         "write elsewhere", cli->output, (long long)i, t->name, a->config);
    }
    /* lookups that no record could hold: refused before any are made */
    if (as_mcfg_check_lookups(&mc, a->batch, err, sizeof err)) as_die(AS_EXIT_DATA, "%s: %s", a->config, err);
    as_writer *w = as_cli_open_output(cli);
    as_progress p;
    as_progress_start(&p, cli, "tables", 0);
    const char *base = strrchr(a->config, '/');
    const int64_t n = as_convert_config(&mc, a->batch, (uint64_t)a->seed, base ? base + 1 : a->config, w, &p, err, sizeof err);
    if (n < 0) { as_writer_abort(w); as_die(n == -2 ? AS_EXIT_ENV : AS_EXIT_DATA, "%s: %s", a->config, err); }
    as_progress_end(&p);
    as_writer_close(w);
    as_debug("wrote %lld tables of %s", (long long)n, mc.name[0] ? mc.name : a->config);
    as_mcfg_free(&mc);
}

/* --synth: a synthetic pool */
static void run_synth(as_cli *cli, int argc, conv_args *a)
{
    char err[1024] = "";
    if (optind < argc) as_cli_usage(cli, "--synth takes no input file");
    as_writer *w = as_cli_open_output(cli);
    as_progress p;
    as_progress_start(&p, cli, "tables", 0);
    a->co.source = "synth";
    int64_t n = as_convert_synth(&a->sc, &a->co, w, &p, err, sizeof err);
    if (n < 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "%s", err); }
    as_progress_end(&p);
    as_writer_close(w);
    as_debug("wrote %lld synthetic tables", (long long)n);
}

/* a torch.save file: its tables, or with --list / --dump its contents as text */
static void run_file(as_cli *cli, int argc, char **argv, conv_args *a)
{
    char err[1024] = "";
    if (optind >= argc) as_cli_usage(cli, "no input file (use - for standard input, or --synth)");
    if (optind + 1 < argc) as_cli_usage(cli, "one input file at a time");
    const char *path = argv[optind];
    const char *name = strcmp(path, "-") ? path : "<stdin>";
    pt_limits lim;
    if (pt_limits_init(&lim, err, sizeof err)) as_cli_usage(cli, "%s", err);
    int code;
    pt_file *f = pt_open_code(path, &lim, &code, err, sizeof err);
    if (!f && code == AS_EXIT_USAGE)   /* a device, a FIFO */
        as_cli_usage(cli, "%s: %s; stream it on standard input: as-convert %s- < %s", name, err,
                     a->list ? "--list " : a->dump ? "--dump " : "", path);
    if (!f) as_die(code, "%s: %s", name, err);
    if (a->list || a->dump) {
        FILE *out = as_cli_open_text(cli);
        if ((a->dump ? as_convert_dump : as_convert_list)(f, out, err, sizeof err)) as_die(AS_EXIT_DATA, "%s: %s", name, err);
        as_cli_close_text(cli, out);
    } else {
        as_writer *w = as_cli_open_output(cli);
        as_progress p;
        as_progress_start(&p, cli, "tables", 0);
        const char *base = strrchr(path, '/');
        a->co.source = base ? base + 1 : path;
        int64_t n = as_convert_torch(f, &a->co, w, &p, err, sizeof err);
        if (n < 0) { as_writer_abort(w); as_die(AS_EXIT_DATA, "%s: %s", name, err); }
        as_progress_end(&p);
        as_writer_close(w);
        as_debug("wrote %lld tables from %s (%s)", (long long)n, name, pt_format(f));
    }
    pt_close(f);
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-convert", "as-convert [options] FILE | --synth [options] | --config FILE | --list FILE | --dump FILE", HELP);
    as_cli_zstd_defaults(&cli, 1, AS_ZSTD_WORKERS_AUTO);
    conv_args a;
    parse_args(&cli, argc, argv, &a);
    if (a.config) run_config(&cli, argc, &a);
    else if (a.synth) run_synth(&cli, argc, &a);
    else run_file(&cli, argc, argv, &a);
    free(a.dims);
    free(a.sel);
    return 0;
}
