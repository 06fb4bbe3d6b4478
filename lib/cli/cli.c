/* cli.c - shared command-line behaviour; see cli.h */
#include "cli.h"
#include "reclimits.h"
#include "common.h"
#include "device.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zlib.h>

void as_cli_init(as_cli *c, int argc, char **argv, const char *tool, const char *usage, const char *help)
{
    memset(c, 0, sizeof *c);
    c->tool = tool;
    c->usage = usage;
    c->help = help;
    c->argc = argc;
    c->argv = argv;
    c->zlevel = c->zworkers = -1;
    c->zlevel_def = 3;
    as_prog = tool;
    opterr = 0;   /* we print our own messages */
}

const char *as_build_info(void)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "stream schema %s v%d; zstd %s; msgpack-c %s; zlib %s; %s",
             AS_SCHEMA, AS_SCHEMA_VERSION, ZSTD_versionString(), msgpack_version(), zlibVersion(),
             as_device_build_info());
    return buf;
}

void as_cli_zstd_defaults(as_cli *c, int level, int workers)
{
    c->zlevel_def = level;
    c->zworkers_def = workers;
}

int as_cli_zstd_auto_workers(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > AS_ZSTD_AUTO_MAX ? AS_ZSTD_AUTO_MAX : (int)n;
}

/* "Common options:" with the tool's zstd defaults */
static void print_common_help(const as_cli *c)
{
    printf("\n%s", AS_CLI_COMMON_HELP_HEAD);
    printf("      --zstd-level N  compression level of binary output, 1-19 (default %d;\n"
           "                      environment AS_ZSTD_LEVEL)\n", c->zlevel_def);
    if (c->zworkers_def == AS_ZSTD_WORKERS_AUTO)
        printf("      --zstd-workers N  compression threads (default: one per core, at most %d;\n"
               "                      0 = in the calling thread; environment AS_ZSTD_WORKERS)\n", AS_ZSTD_AUTO_MAX);
    else if (c->zworkers_def == 0)
        printf("      --zstd-workers N  compression threads (default 0 = in the calling thread;\n"
               "                      environment AS_ZSTD_WORKERS)\n");
    else
        printf("      --zstd-workers N  compression threads (default %d; 0 = in the calling thread;\n"
               "                      environment AS_ZSTD_WORKERS)\n", c->zworkers_def);
    printf("%s", AS_CLI_COMMON_HELP_TAIL);
}

int as_cli_common(as_cli *c, int opt, const char *arg)
{
    switch (opt) {
    case 'h':
        printf("usage: %s\n%s", c->usage, c->help);
        print_common_help(c);
        if (fflush(stdout) || ferror(stdout)) exit(AS_EXIT_ENV);
        exit(0);
    case AS_OPT_VERSION:
        printf("%s %s\n%s\n", c->tool, AS_VERSION, as_build_info());
        if (fflush(stdout) || ferror(stdout)) exit(AS_EXIT_ENV);
        exit(0);
    case 'o':
        if (!*arg) as_cli_usage(c, "-o: empty file name");
        c->output = arg;
        return 1;
    case 'q': as_verbosity = 0; return 1;
    case 'v': as_verbosity = 2; return 1;
    case AS_OPT_FORCE: c->force = 1; return 1;
    case AS_OPT_PROGRESS: c->progress = 2; return 1;
    case AS_OPT_ZLEVEL: c->zlevel = (int)as_cli_i64(c, "--zstd-level", arg, 1, 19); return 1;
    case AS_OPT_ZWORKERS: c->zworkers = (int)as_cli_i64(c, "--zstd-workers", arg, 0, 64); return 1;
    case '?':
        if (optopt >= AS_OPT_FORCE || optopt == 0) as_cli_usage(c, "unknown option '%s'", c->argv[optind - 1]);
        as_cli_usage(c, "unknown option '-%c'", optopt);
    case ':': {
        const char *a = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "";
        if (!strncmp(a, "--", 2)) as_cli_usage(c, "option %.*s needs a value", (int)strcspn(a, "="), a);
        as_cli_usage(c, "option -%c needs a value", optopt);
    }
    default:
        return 0;
    }
}

_Noreturn void as_cli_usage(const as_cli *c, const char *fmt, ...)
{
    va_list ap;
    char msg[4096], safe[4096];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s", c->tool, as_text_escape(safe, sizeof safe, msg));   /* an argument's control characters escaped */
    fprintf(stderr, "\nusage: %s\nTry '%s --help' for more information.\n", c->usage, c->tool);
    exit(AS_EXIT_USAGE);
}

static void check_output(as_cli *c, const char *opt, const char *path)
{
    char err[1024];
    int code = as_out_check_path(path, err, sizeof err);
    if (code == AS_EXIT_USAGE) as_cli_usage(c, "%s%s%s", opt ? opt : "", opt ? ": " : "", err);
    if (code) as_die(code, "%s", err);
}

static const char *in_name(const char *in)
{
    return !in || !strcmp(in, "-") ? "<stdin>" : in;
}

/* the output `path` (named by `oopt`, NULL for -o) is the existing input `in` (named by iopt,
 * NULL for a positional argument or standard input): a usage error */
static void clash(as_cli *c, const char *oopt, const char *path, const char *iopt, const char *in,
                  const char *may_replace)
{
    if (!path || !in) return;
    if (may_replace && in == may_replace) return;
    if (!as_out_same_file(path, in)) return;
    as_cli_usage(c, "%s %s: it is also an input (%s%s%s); it would be overwritten: write elsewhere", oopt ? oopt : "-o",
                 path, iopt ? iopt : "", iopt ? " " : "", in_name(in));
}

/* an output against the positional inputs (or standard input when there are none) */
static void clash_positional(as_cli *c, const char *oopt, const char *path)
{
    if (optind >= c->argc) clash(c, oopt, path, NULL, "-", NULL);
    for (int i = optind; i < c->argc; i++) clash(c, oopt, path, NULL, c->argv[i], NULL);
}

static void output_arg(as_cli *c, const char *opt, const char *path, const char *may_replace)
{
    if (!path) return;
    if (!*path) as_cli_usage(c, "%s: empty file name", opt);
    if (c->output && as_out_same_target(path, c->output))
        as_cli_usage(c, "%s %s: the same file as -o; give each output its own file", opt, path);
    for (int i = 0; i < c->nout; i++)
        if (as_out_same_target(path, c->out[i].path))
            as_cli_usage(c, "%s %s: the same file as %s; give each output its own file", opt, path, c->out[i].opt);
    for (int i = 0; i < c->nin; i++) clash(c, opt, path, c->in[i].opt, c->in[i].path, may_replace);
    if (c->finished) clash_positional(c, opt, path);
    if (c->nout == AS_CLI_MAX_FILES) as_die(AS_EXIT_USAGE, "%s: more than %d output files", c->tool, AS_CLI_MAX_FILES);
    c->out[c->nout].opt = opt;
    c->out[c->nout].path = path;
    c->out[c->nout].may_replace = may_replace;
    c->nout++;
    check_output(c, opt, path);
}

void as_cli_output_arg(as_cli *c, const char *opt, const char *path)
{
    output_arg(c, opt, path, NULL);
}

void as_cli_output_arg_over(as_cli *c, const char *opt, const char *path, const char *may_replace)
{
    output_arg(c, opt, path, may_replace);
}

void as_cli_input_arg(as_cli *c, const char *opt, const char *path)
{
    if (!path) return;
    clash(c, NULL, c->output, opt, path, NULL);
    for (int i = 0; i < c->nout; i++) clash(c, c->out[i].opt, c->out[i].path, opt, path, c->out[i].may_replace);
    if (c->nin == AS_CLI_MAX_FILES) as_die(AS_EXIT_USAGE, "%s: more than %d input files named by options", c->tool, AS_CLI_MAX_FILES);
    c->in[c->nin].opt = opt;
    c->in[c->nin].path = path;
    c->nin++;
}

void as_cli_inputs(as_cli *c, const char *const *paths, int n)
{
    for (int i = 0; i < n; i++) as_cli_input_arg(c, NULL, paths[i]);
}

/* a limit's environment variable that is not a count: a usage error, before any work */
static void check_limits(void)
{
    char err[512];
    if (as_limits_check(err, sizeof err)) as_die(AS_EXIT_USAGE, "%s", err);
}

void as_cli_finish(as_cli *c)
{
    if (as_verbosity == 0) c->progress = 0;
    else if (c->progress == 2) c->progress = 1;
    else c->progress = isatty(2);
    check_output(c, NULL, c->output);
    clash_positional(c, NULL, c->output);
    for (int i = 0; i < c->nin; i++) clash(c, NULL, c->output, c->in[i].opt, c->in[i].path, NULL);
    for (int i = 0; i < c->nout; i++) clash_positional(c, c->out[i].opt, c->out[i].path);
    c->finished = 1;
    check_limits();
}

as_writer *as_cli_open_output(as_cli *c)
{
    if ((!c->output || !strcmp(c->output, "-")) && isatty(1) && !c->force)
        as_cli_usage(c, "refusing to write binary output to a terminal (use -o FILE, a pipe, or --force)");
    int level = c->zlevel_def, workers = c->zworkers_def;
    const char *e = getenv("AS_ZSTD_LEVEL");
    int64_t v;
    if (e && as_parse_i64(e, 1, 19, &v) == 0) level = (int)v;
    e = getenv("AS_ZSTD_WORKERS");
    if (e && as_parse_i64(e, 0, 64, &v) == 0) workers = (int)v;
    if (c->zlevel > 0) level = c->zlevel;
    if (c->zworkers >= 0) workers = c->zworkers;
    if (workers == AS_ZSTD_WORKERS_AUTO) workers = as_cli_zstd_auto_workers();
    as_debug("zstd level %d, %d compression thread(s)", level, workers);
    as_writer *w = as_writer_open(c->output, level, workers);
    as_writer_header(w, c->tool, c->argc, c->argv);
    return w;
}

FILE *as_cli_open_text(as_cli *c)
{
    c->text = as_out_open(c->output);
    return as_out_file(c->text);
}

void as_cli_close_text(as_cli *c, FILE *f)
{
    (void)f;
    as_out_close(c->text);
    c->text = NULL;
}

int64_t as_cli_i64(const as_cli *c, const char *opt, const char *arg, int64_t lo, int64_t hi)
{
    int64_t v;
    if (as_parse_i64(arg, lo, hi, &v))
        as_cli_usage(c, "%s: '%s' is not an integer in [%lld, %lld]", opt, arg, (long long)lo, (long long)hi);
    return v;
}

int64_t as_cli_lim(const as_cli *c, const char *opt, const char *arg, int64_t lo, int l)
{
    check_limits();
    int64_t v, hi = as_limit((as_limit_id)l);
    if (as_parse_i64(arg, lo, hi, &v))
        as_cli_usage(c, "%s: '%s' is not an integer in [%lld, %lld] (%s, the limit on %s, changes the bound)", opt, arg,
                     (long long)lo, (long long)hi, as_limit_env((as_limit_id)l), as_limit_what((as_limit_id)l));
    return v;
}

double as_cli_f64(const as_cli *c, const char *opt, const char *arg, double lo, double hi)
{
    double v;
    if (!as_parse_f64(arg, lo, hi, &v)) return v;
    /* a number strtod reads whole but cannot hold: say so, not "not a number" */
    char *end = (char *)arg;
    errno = 0;
    const double x = arg && *arg ? strtod(arg, &end) : 0;
    if (arg && *arg && end != arg && !*end && errno == ERANGE) {
        if (fabs(x) < DBL_MIN)
            as_cli_usage(c, "%s: '%s' underflows a double (a number other than 0 below %g in size cannot be "
                            "represented): give a number in [%g, %g]", opt, arg, DBL_MIN, lo, hi);
        as_cli_usage(c, "%s: '%s' is too large to be represented (it overflows a double): give a number in [%g, %g]",
                     opt, arg, lo, hi);
    }
    as_cli_usage(c, "%s: '%s' is not a number in [%g, %g]", opt, arg, lo, hi);
}

void as_progress_start(as_progress *p, const as_cli *c, const char *label, double total)
{
    as_progress_begin(p, c ? c->progress : 0, label, total);   /* no command line (library callers): silent */
}
