/* cli.h - the command-line behaviour every autoshard tool shares.
 *
 * Common options: -h/--help and --version (stdout, exit 0), -o/--output FILE, -q/--quiet,
 * -v/--verbose, --force (write binary to a terminal), --progress (progress on stderr even
 * when it is not a TTY). Usage errors print "as-x: msg", the usage line and a hint, exit 2.
 * A tool lists its own options in a getopt_long table ending with AS_CLI_COMMON_OPTIONS
 * and forwards unknown codes to as_cli_common().
 */
#ifndef AS_CLI_H
#define AS_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "output.h"
#include "progress.h"
#include "stream.h"

enum { AS_OPT_FORCE = 1000, AS_OPT_PROGRESS, AS_OPT_VERSION, AS_OPT_ZLEVEL, AS_OPT_ZWORKERS, AS_OPT_TOOL_BASE = 1100 };

#define AS_CLI_COMMON_OPTIONS \
    { "help", no_argument, 0, 'h' }, \
    { "version", no_argument, 0, AS_OPT_VERSION }, \
    { "output", required_argument, 0, 'o' }, \
    { "quiet", no_argument, 0, 'q' }, \
    { "verbose", no_argument, 0, 'v' }, \
    { "force", no_argument, 0, AS_OPT_FORCE }, \
    { "progress", no_argument, 0, AS_OPT_PROGRESS }, \
    { "zstd-level", required_argument, 0, AS_OPT_ZLEVEL }, \
    { "zstd-workers", required_argument, 0, AS_OPT_ZWORKERS }, \
    { 0, 0, 0, 0 }
/* the leading ':' makes getopt report a missing value as ':' ("option -x needs a value") */
#define AS_CLI_COMMON_SHORT ":ho:qv"

/* the text printed under "Common options:" in every --help: HEAD, the two zstd options
 * with the tool's defaults (as_cli_zstd_defaults), TAIL */
#define AS_CLI_COMMON_HELP_HEAD \
    "Common options:\n" \
    "  -o, --output FILE   write to FILE instead of standard output, atomically: under\n" \
    "                      a temporary name FILE.tmp.PID renamed to FILE at the end, so\n" \
    "                      FILE holds its old content or the complete new one, never a\n" \
    "                      part; an error or SIGINT/SIGTERM/SIGHUP removes the temporary\n" \
    "                      (SIGKILL cannot); FILE, like every file a tool writes,\n" \
    "                      must not be one of its inputs (standard input included)\n" \
    "  -q, --quiet         no messages but errors\n" \
    "  -v, --verbose       more messages\n" \
    "      --progress      progress on stderr even when it is not a terminal\n" \
    "      --force         write binary output even to a terminal\n"
#define AS_CLI_COMMON_HELP_TAIL \
    "  -h, --help          this help\n" \
    "      --version       version and build information\n" \
    "\n" \
    "Exit status: 0 success, 1 bad input data, 2 usage error,\n" \
    "3 environment failure (write error, out of memory, no device).\n"

#define AS_CLI_MAX_FILES 16

typedef struct {
    const char *tool;       /* "as-convert" */
    const char *usage;      /* "as-convert [options] FILE" */
    const char *help;       /* full help text (printed after the usage line) */
    const char *output;     /* -o FILE or NULL */
    int force;
    int zlevel, zworkers;   /* -1 = not given */
    int zlevel_def, zworkers_def;   /* the tool's defaults (as_cli_zstd_defaults) */
    int progress;           /* 1 when progress should be shown */
    int argc;
    char **argv;
    as_out *text;           /* the open text output (as_cli_open_text) */
    /* the files named by options so far, read (as_cli_input_arg) and written
     * (as_cli_output_arg; -o is c->output), so that no output can replace an input */
    struct { const char *opt, *path, *may_replace; } in[AS_CLI_MAX_FILES], out[AS_CLI_MAX_FILES];
    int nin, nout;
    int finished;           /* as_cli_finish has run: the positional inputs are known */
} as_cli;

void as_cli_init(as_cli *c, int argc, char **argv, const char *tool, const char *usage, const char *help);
/* workers: one compression thread per core this process may run on, at most this many */
#define AS_ZSTD_WORKERS_AUTO (-1)
#define AS_ZSTD_AUTO_MAX 16
/* The tool's defaults for its binary output, before option parsing (--help prints them):
 * a zstd level (1-19) and compression threads (0: in the calling thread;
 * AS_ZSTD_WORKERS_AUTO). Without this call: level 3, 0 threads. AS_ZSTD_LEVEL and
 * AS_ZSTD_WORKERS override the defaults, --zstd-level and --zstd-workers both. */
void as_cli_zstd_defaults(as_cli *c, int level, int workers);
/* the compression threads AS_ZSTD_WORKERS_AUTO stands for here: the cores in this
 * process's affinity mask (else the online ones), 1 to AS_ZSTD_AUTO_MAX. At least one
 * worker, so the compressed bytes are the same on every machine (zstd's output does not
 * depend on the number of workers, once there is one) */
int as_cli_zstd_auto_workers(void);
/* handle a common option; returns 1 if handled (may exit for --help/--version), 0 if the
 * code is not a common one (then the tool reports a usage error) */
int as_cli_common(as_cli *c, int opt, const char *arg);
_Noreturn void as_cli_usage(const as_cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* after option parsing: decide progress (TTY / --progress / -q); check -o FILE before any
 * work: an empty name or a directory is a usage error (exit 2), a missing or unwritable
 * directory exit 3, and FILE naming an existing input (same device and inode as a
 * positional argument, or standard input when there are none or '-') exit 2; then the record
 * limits' environment variables (as_limits_check, reclimits.h): one that is not a count is
 * a usage error, exit 2 */
void as_cli_finish(as_cli *c);
/* Every file a tool writes is checked against every file it reads, whatever the order in
 * which they are named: an output (-o, or an option's file such as --log or --report) that is
 * an existing input (same device and inode: a positional argument, standard input when it is
 * read, or an option's input file) is a usage error, exit 2, before any work; so are two
 * outputs naming one file.
 * An input given as an option value (--model FILE ...); NULL is skipped. */
void as_cli_input_arg(as_cli *c, const char *opt, const char *path);
/* the same for several, unnamed in messages ("an input") */
void as_cli_inputs(as_cli *c, const char *const *paths, int n);
/* an output file given as an option value (--report FILE ...), checked as -o is (empty name,
 * directory, missing directory) and against every input and every other output */
void as_cli_output_arg(as_cli *c, const char *opt, const char *path);
/* as as_cli_output_arg, but the output may be the same file as the input `may_replace` (an
 * option value): as-rl's --checkpoint replacing the --resume file it continues */
void as_cli_output_arg_over(as_cli *c, const char *opt, const char *path, const char *may_replace);
/* open the binary output stream (refusing a terminal unless --force) and write the header */
as_writer *as_cli_open_output(as_cli *c);
/* open a text output (-o FILE or stdout), atomic as the binary one (output.h) */
FILE *as_cli_open_text(as_cli *c);
/* flush, commit (rename into place) and close it; exits 3 on a write error */
void as_cli_close_text(as_cli *c, FILE *f);

/* option-value parsing with usage errors */
int64_t as_cli_i64(const as_cli *c, const char *opt, const char *arg, int64_t lo, int64_t hi);
/* as as_cli_i64 with hi = the record limit l (an as_limit_id, reclimits.h) in force: an
 * option whose value would make records the other tools refuse is a usage error naming the
 * limit's environment variable */
int64_t as_cli_lim(const as_cli *c, const char *opt, const char *arg, int64_t lo, int l);
double as_cli_f64(const as_cli *c, const char *opt, const char *arg, double lo, double hi);

/* progress on stderr (progress.h), on when the tool was given --progress or stderr is a
 * terminal (and not --quiet); c NULL: silent */
void as_progress_start(as_progress *p, const as_cli *c, const char *label, double total);

/* "CUDA: ..." build/runtime line used by --version */
const char *as_build_info(void);

#endif
