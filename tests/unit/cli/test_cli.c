/* test_cli.c - the command-line behaviour every tool shares (lib/cli/cli.h): the common options
 * a tool forwards (-o, -q, -v, --force, --progress, --zstd-level, --zstd-workers; 0 for a
 * code that is not common), option values parsed with range checks (integers, record
 * limits, numbers; a bad value is a usage error: exit 2 with "as-x: OPT: 'V' is not ...",
 * the usage line and a hint, checked in a child process), the files named by options
 * recorded, progress decided by as_cli_finish, a tool's zstd defaults, the build line. */
#include "unit.h"

#include "cli.h"
#include "common.h"
#include "reclimits.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *argv0[] = { "as-test", NULL };

/* a fresh command line with no arguments, the global verbosity and program name kept */
static void cli_new(as_cli *c)
{
    as_cli_init(c, 1, argv0, "as-test", "as-test [options] [FILE...]", "help text\n");
}

TEST(cli_init_and_common_options)
{
    const char *prog = as_prog;
    const int verb = as_verbosity;
    as_cli c;
    cli_new(&c);
    CHECK_STR(c.tool, "as-test");
    CHECK_STR(as_prog, "as-test");
    CHECK(c.output == NULL && c.force == 0 && c.progress == 0 && c.nin == 0 && c.nout == 0 && !c.finished);
    CHECK_EQ_I64(c.zlevel, -1);
    CHECK_EQ_I64(c.zworkers, -1);
    CHECK(as_cli_common(&c, 'o', "out.ast") == 1);
    CHECK_STR(c.output, "out.ast");
    CHECK(as_cli_common(&c, 'q', NULL) == 1);
    CHECK_EQ_I64(as_verbosity, 0);
    CHECK(as_cli_common(&c, 'v', NULL) == 1);
    CHECK_EQ_I64(as_verbosity, 2);
    CHECK(as_cli_common(&c, AS_OPT_FORCE, NULL) == 1);
    CHECK_EQ_I64(c.force, 1);
    CHECK(as_cli_common(&c, AS_OPT_PROGRESS, NULL) == 1);
    CHECK_EQ_I64(c.progress, 2);
    CHECK(as_cli_common(&c, AS_OPT_ZLEVEL, "19") == 1);
    CHECK_EQ_I64(c.zlevel, 19);
    CHECK(as_cli_common(&c, AS_OPT_ZWORKERS, "0") == 1);
    CHECK_EQ_I64(c.zworkers, 0);
    /* a tool's own code is not common: the tool reports it */
    CHECK(as_cli_common(&c, AS_OPT_TOOL_BASE, "x") == 0);
    CHECK(as_cli_common(&c, 'k', "x") == 0);
    as_verbosity = verb;
    as_prog = prog;
}

TEST(cli_number_values_in_range)
{
    const char *prog = as_prog;
    as_cli c;
    cli_new(&c);
    CHECK_EQ_I64(as_cli_i64(&c, "--n", "0", 0, 5), 0);
    CHECK_EQ_I64(as_cli_i64(&c, "--n", "5", 0, 5), 5);
    CHECK_EQ_I64(as_cli_i64(&c, "--n", "-3", -10, 10), -3);
    CHECK_EQ_I64(as_cli_i64(&c, "--n", "9223372036854775807", 0, INT64_MAX), INT64_MAX);
    CHECK_NEAR(as_cli_f64(&c, "--x", "0.25", 0, 1), 0.25, 0);
    CHECK_NEAR(as_cli_f64(&c, "--x", "1e3", 0, 1e3), 1000, 0);
    CHECK_NEAR(as_cli_f64(&c, "--x", "0", 0, 1), 0, 0);
    /* a record limit's bound: the limit in force */
    const int64_t lim = as_limit(AS_LIM_SHARDS);
    CHECK_EQ_I64(as_cli_lim(&c, "--shards", "1", 1, AS_LIM_SHARDS), 1);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)lim);
    CHECK_EQ_I64(as_cli_lim(&c, "--shards", buf, 1, AS_LIM_SHARDS), lim);
    as_prog = prog;
}

/* fn run in a child with stderr into a file: its exit status (-1: killed; 0 also when fn
 * returns), its message into msg */
static int in_child(void (*fn)(void), char *msg, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cli-stderr.txt", ut_tmpdir());
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(path, "w", stderr)) _exit(9);
        fn();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    msg[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(msg, 1, len - 1, f);
        msg[n] = 0;
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void i64_too_big(void) { as_cli c; cli_new(&c); as_cli_i64(&c, "--n", "6", 0, 5); }
static void i64_not_a_number(void) { as_cli c; cli_new(&c); as_cli_i64(&c, "--n", "5x", 0, 5); }
static void i64_empty(void) { as_cli c; cli_new(&c); as_cli_i64(&c, "--n", "", 0, 5); }
static void f64_below(void) { as_cli c; cli_new(&c); as_cli_f64(&c, "--x", "-0.5", 0, 1); }
static void f64_nan(void) { as_cli c; cli_new(&c); as_cli_f64(&c, "--x", "nan", 0, 1); }
static void f64_underflow(void) { as_cli c; cli_new(&c); as_cli_f64(&c, "--x", "1e-308", 0, 1e6); }
static void f64_underflow0(void) { as_cli c; cli_new(&c); as_cli_f64(&c, "--x", "-1e-400", -1, 1); }
static void f64_overflow(void) { as_cli c; cli_new(&c); as_cli_f64(&c, "--x", "1e309", 0, 1e6); }
static void lim_over(void) { as_cli c; cli_new(&c); as_cli_lim(&c, "--shards", "99999999999", 1, AS_LIM_SHARDS); }
static void zlevel_over(void) { as_cli c; cli_new(&c); as_cli_common(&c, AS_OPT_ZLEVEL, "20"); }
static void empty_output(void) { as_cli c; cli_new(&c); as_cli_common(&c, 'o', ""); }

TEST(cli_bad_values_are_usage_errors)
{
    char msg[2048];
    CHECK_EQ_I64(in_child(i64_too_big, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK_STR(msg, "as-test: --n: '6' is not an integer in [0, 5]\nusage: as-test [options] [FILE...]\n"
                   "Try 'as-test --help' for more information.\n");
    CHECK_EQ_I64(in_child(i64_not_a_number, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --n: '5x' is not an integer in [0, 5]\n") == msg);
    CHECK_EQ_I64(in_child(i64_empty, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --n: '' is not an integer in [0, 5]\n") == msg);
    CHECK_EQ_I64(in_child(f64_below, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --x: '-0.5' is not a number in [0, 1]\n") == msg);
    CHECK_EQ_I64(in_child(f64_nan, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --x: 'nan' is not a number in [0, 1]\n") == msg);
    /* in the range as written, but not as a double: the message says why, and the bounds */
    CHECK_EQ_I64(in_child(f64_underflow, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --x: '1e-308' underflows a double (a number other than 0 below 2.22507e-308 in size "
                      "cannot be represented): give a number in [0, 1e+06]\n") == msg);
    CHECK_EQ_I64(in_child(f64_underflow0, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --x: '-1e-400' underflows a double") == msg);
    CHECK_EQ_I64(in_child(f64_overflow, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --x: '1e309' is too large to be represented (it overflows a double): give a number in "
                      "[0, 1e+06]\n") == msg);
    CHECK_EQ_I64(in_child(lim_over, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --shards: '99999999999' is not an integer in [1, ") == msg);
    CHECK(strstr(msg, as_limit_env(AS_LIM_SHARDS)) != NULL);   /* names the limit's variable */
    CHECK_EQ_I64(in_child(zlevel_over, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --zstd-level: '20' is not an integer in [1, 19]\n") == msg);
    CHECK_EQ_I64(in_child(empty_output, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: -o: empty file name\n") == msg);
}

TEST(cli_files_named_by_options)
{
    const char *prog = as_prog;
    as_cli c;
    cli_new(&c);
    char in[512], out[512], other[512];
    snprintf(in, sizeof in, "%s/cli-in.ast", ut_tmpdir());
    snprintf(out, sizeof out, "%s/cli-out.ast", ut_tmpdir());
    snprintf(other, sizeof other, "%s/cli-report.ast", ut_tmpdir());
    FILE *f = fopen(in, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    as_cli_input_arg(&c, "--model", NULL);   /* an option not given: skipped */
    CHECK_EQ_I64(c.nin, 0);
    as_cli_input_arg(&c, "--model", in);
    CHECK_EQ_I64(c.nin, 1);
    CHECK_STR(c.in[0].opt, "--model");
    CHECK_STR(c.in[0].path, in);
    as_cli_output_arg(&c, "--log", NULL);
    CHECK_EQ_I64(c.nout, 0);
    as_cli_output_arg(&c, "--log", out);
    as_cli_output_arg_over(&c, "--checkpoint", other, in);
    CHECK_EQ_I64(c.nout, 2);
    CHECK_STR(c.out[0].opt, "--log");
    CHECK(c.out[0].may_replace == NULL);
    CHECK_STR(c.out[1].path, other);
    CHECK(c.out[1].may_replace == in);
    const char *paths[] = { other, NULL };   /* an unnamed input; NULL skipped */
    as_cli_inputs(&c, (const char *const *)paths, 2);
    CHECK_EQ_I64(c.nin, 2);
    CHECK(c.in[1].opt == NULL);
    as_prog = prog;
}

static void output_is_input(void)
{
    as_cli c;
    cli_new(&c);
    char in[512];
    snprintf(in, sizeof in, "%s/cli-in2.ast", ut_tmpdir());
    FILE *f = fopen(in, "w");
    if (f) fclose(f);
    as_cli_input_arg(&c, "--model", in);
    as_cli_output_arg(&c, "--report", in);
}

static void two_outputs_one_file(void)
{
    as_cli c;
    cli_new(&c);
    char out[512];
    snprintf(out, sizeof out, "%s/cli-out2.ast", ut_tmpdir());
    as_cli_output_arg(&c, "--log", out);
    as_cli_output_arg(&c, "--report", out);
}

TEST(cli_output_over_an_input_is_a_usage_error)
{
    char msg[2048];
    CHECK_EQ_I64(in_child(output_is_input, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, "as-test: --report ") == msg && strstr(msg, ": it is also an input (--model "));
    CHECK_EQ_I64(in_child(two_outputs_one_file, msg, sizeof msg), AS_EXIT_USAGE);
    CHECK(strstr(msg, ": the same file as --log; give each output its own file\n") != NULL);
}

TEST(cli_finish_decides_progress)
{
    const char *prog = as_prog;
    const int verb = as_verbosity, saved_optind = optind;
    as_cli c;
    optind = 1;   /* no positional argument: standard input is the input */
    cli_new(&c);
    as_verbosity = 1;
    c.progress = 2;   /* --progress */
    as_cli_finish(&c);
    CHECK_EQ_I64(c.progress, 1);
    CHECK(c.finished);
    cli_new(&c);
    as_verbosity = 0;   /* -q wins over --progress */
    c.progress = 2;
    as_cli_finish(&c);
    CHECK_EQ_I64(c.progress, 0);
    cli_new(&c);
    as_verbosity = 1;   /* neither: on when stderr is a terminal */
    as_cli_finish(&c);
    CHECK_EQ_I64(c.progress, isatty(2));
    as_verbosity = verb;
    as_prog = prog;
    optind = saved_optind;
}

TEST(cli_zstd_defaults)
{
    const char *prog = as_prog;
    as_cli c;
    cli_new(&c);
    CHECK_EQ_I64(c.zlevel_def, 3);
    CHECK_EQ_I64(c.zworkers_def, 0);
    as_cli_zstd_defaults(&c, 1, AS_ZSTD_WORKERS_AUTO);
    CHECK_EQ_I64(c.zlevel_def, 1);
    CHECK_EQ_I64(c.zworkers_def, AS_ZSTD_WORKERS_AUTO);
    CHECK_EQ_I64(c.zlevel, -1);   /* the options are still not given */
    CHECK_EQ_I64(c.zworkers, -1);
    /* the cores this process may run on, at least 1, at most AS_ZSTD_AUTO_MAX */
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    const int n = CPU_COUNT(&set), w = as_cli_zstd_auto_workers();
    CHECK_EQ_I64(w, n < 1 ? 1 : n > AS_ZSTD_AUTO_MAX ? AS_ZSTD_AUTO_MAX : n);
    as_prog = prog;
}

TEST(cli_build_info)
{
    const char *s = as_build_info();
    CHECK(s != NULL && strstr(s, "stream schema ") == s);
    CHECK(strstr(s, "; zstd ") != NULL && strstr(s, "; msgpack-c ") != NULL && strstr(s, "; zlib ") != NULL);
}
