/* test_output.c - atomic outputs (lib/records/output.c): the temporary appears only with the first
 * byte, the old file stays intact until the commit, and nothing is left behind after an
 * abort, an error exit or a fatal signal; path checks; the binary writer on top of it;
 * the progress line's ETA (lib/cli/cli.c). */
#include "unit.h"
#include "common.h"
#include "cli.h"
#include "output.h"
#include "stream.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *opath(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ & 7];
    snprintf(b, 512, "%s/%s", ut_tmpdir(), name);
    return b;
}

static void put(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    fputs(s, f);
    fclose(f);
}

/* the file's content (static buffer), "" when missing */
static const char *get(const char *path)
{
    static char buf[4096];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return "(missing)";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* number of temporaries NAME.tmp.* in the scratch directory */
static int ntmp(const char *name)
{
    char pre[256];
    snprintf(pre, sizeof pre, "%s.tmp.", name);
    DIR *d = opendir(ut_tmpdir());
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += !strncmp(e->d_name, pre, strlen(pre));
    closedir(d);
    return n;
}

TEST(output_temporary_is_late_and_commit_atomic)
{
    const char *p = opath("late.txt");
    put(p, "old\n");
    as_out *o = as_out_open(p);
    FILE *f = as_out_file(o);
    fprintf(f, "new line\n");
    CHECK_EQ_I64(ntmp("late.txt"), 0);          /* buffered: no temporary yet */
    CHECK_STR(get(p), "old\n");
    CHECK(fflush(f) == 0);
    CHECK_EQ_I64(ntmp("late.txt"), 1);          /* the first byte made it */
    CHECK_STR(get(p), "old\n");                 /* the old content until the commit */
    fprintf(f, "more\n");
    as_out_close(o);
    CHECK_EQ_I64(ntmp("late.txt"), 0);
    CHECK_STR(get(p), "new line\nmore\n");
}

TEST(output_empty_output_replaces_the_file)
{
    const char *p = opath("empty.txt");
    put(p, "old\n");
    as_out *o = as_out_open(p);
    as_out_close(o);
    CHECK_STR(get(p), "");
    CHECK_EQ_I64(ntmp("empty.txt"), 0);
    const char *q = opath("fresh.txt");
    o = as_out_open(q);
    fputs("x", as_out_file(o));
    as_out_close(o);
    CHECK_STR(get(q), "x");
}

TEST(output_abort_keeps_the_old_file)
{
    const char *p = opath("abort.txt");
    put(p, "old\n");
    as_out *o = as_out_open(p);
    FILE *f = as_out_file(o);
    for (int i = 0; i < 100000; i++) fprintf(f, "line %d\n", i);   /* well past the buffer */
    CHECK_EQ_I64(ntmp("abort.txt"), 1);
    as_out_abort(o);
    CHECK_EQ_I64(ntmp("abort.txt"), 0);
    CHECK_STR(get(p), "old\n");
    /* nothing written at all: nothing created */
    const char *q = opath("never.txt");
    o = as_out_open(q);
    as_out_abort(o);
    CHECK_STR(get(q), "(missing)");
}

/* run fn in a child; returns its wait status */
static int in_child(void (*fn)(const char *), const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        fn(path);
        _exit(99);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static void write_then_die(const char *path)
{
    as_out *o = as_out_open(path);
    FILE *f = as_out_file(o);
    for (int i = 0; i < 100000; i++) fprintf(f, "line %d\n", i);
    as_die(AS_EXIT_DATA, "bad data at the end (a test)");
}

static void buffered_then_die(const char *path)
{
    as_out *o = as_out_open(path);
    fprintf(as_out_file(o), "only buffered\n");
    exit(AS_EXIT_DATA);   /* exit() flushes stdio after the atexit handlers */
}

TEST(output_error_exit_removes_the_temporary)
{
    const char *p = opath("die.txt");
    put(p, "old\n");
    int st = in_child(write_then_die, p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == AS_EXIT_DATA);
    CHECK_EQ_I64(ntmp("die.txt"), 0);
    CHECK_STR(get(p), "old\n");
    st = in_child(buffered_then_die, p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == AS_EXIT_DATA);
    CHECK_EQ_I64(ntmp("die.txt"), 0);
    CHECK_STR(get(p), "old\n");
}

static int kill_sig;
static void write_then_signal(const char *path)
{
    signal(kill_sig, SIG_DFL);
    as_out *o = as_out_open(path);
    FILE *f = as_out_file(o);
    for (int i = 0; i < 100000; i++) fprintf(f, "line %d\n", i);
    fflush(f);
    raise(kill_sig);
    _exit(98);   /* not reached: the signal kills */
}

TEST(output_fatal_signals_remove_the_temporary)
{
    const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE };
    for (int i = 0; i < 4; i++) {
        const char *p = opath("sig.txt");
        put(p, "old\n");
        kill_sig = sigs[i];
        int st = in_child(write_then_signal, p);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i]);   /* died of it, default action */
        CHECK_EQ_I64(ntmp("sig.txt"), 0);
        CHECK_STR(get(p), "old\n");
    }
}

static void ignored_signal(const char *path)
{
    signal(SIGHUP, SIG_IGN);   /* e.g. under nohup: stays ignored */
    as_out *o = as_out_open(path);
    FILE *f = as_out_file(o);
    for (int i = 0; i < 100000; i++) fprintf(f, "line %d\n", i);
    raise(SIGHUP);
    fputs("end\n", f);
    as_out_close(o);
    _exit(0);
}

TEST(output_ignored_signal_stays_ignored)
{
    const char *p = opath("ign.txt");
    put(p, "old\n");
    int st = in_child(ignored_signal, p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_I64(ntmp("ign.txt"), 0);
    CHECK(strncmp(get(p), "line 0\n", 7) == 0);
}

static void full_disk(const char *path)
{
    as_out *o = as_out_open(path);
    fputs("x", as_out_file(o));
    as_out_close(o);   /* exits 3 */
    _exit(0);
}

TEST(output_write_error_is_exit_3)
{
    int st = in_child(full_disk, "/dev/full");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == AS_EXIT_ENV);
}

TEST(output_registry_is_fixed_and_reusable)
{
    int slots[AS_OUT_MAX];
    for (int i = 0; i < AS_OUT_MAX; i++) {
        slots[i] = as_tmp_register(opath("reg.tmp.x"));
        CHECK(slots[i] >= 0);
    }
    CHECK_EQ_I64(as_tmp_register(opath("reg.tmp.y")), -1);   /* full */
    for (int i = 0; i < AS_OUT_MAX; i++) as_tmp_unregister(slots[i]);
    int s = as_tmp_register(opath("reg.tmp.z"));
    CHECK(s >= 0);
    as_tmp_unregister(s);
}

TEST(output_path_checks)
{
    char err[1024];
    CHECK_EQ_I64(as_out_check_path(NULL, err, sizeof err), 0);
    CHECK_EQ_I64(as_out_check_path("-", err, sizeof err), 0);
    CHECK_EQ_I64(as_out_check_path("", err, sizeof err), AS_EXIT_USAGE);
    CHECK_EQ_I64(as_out_check_path(ut_tmpdir(), err, sizeof err), AS_EXIT_USAGE);
    CHECK(strstr(err, "is a directory") != NULL);
    CHECK_EQ_I64(as_out_check_path(opath("no/such/dir/x"), err, sizeof err), AS_EXIT_ENV);
    CHECK(strstr(err, "No such file or directory") != NULL);
    CHECK_EQ_I64(as_out_check_path(opath("fine.txt"), err, sizeof err), 0);
    CHECK_EQ_I64(as_out_check_path("/dev/null", err, sizeof err), 0);
    CHECK_EQ_I64(as_out_check_path("relative-name.txt", err, sizeof err), 0);   /* "." */

    const char *a = opath("a.txt"), *b = opath("b.txt"), *l = opath("l.txt");
    put(a, "a");
    put(b, "b");
    unlink(l);
    CHECK(link(a, l) == 0);
    CHECK_EQ_I64(as_out_same_file(a, a), 1);
    CHECK_EQ_I64(as_out_same_file(a, l), 1);   /* a hard link is the same file */
    CHECK_EQ_I64(as_out_same_file(a, b), 0);
    CHECK_EQ_I64(as_out_same_file(opath("missing.txt"), a), 0);
    CHECK_EQ_I64(as_out_same_file("/dev/null", "/dev/null"), 0);   /* devices are not files */
}

TEST(output_binary_writer_is_atomic)
{
    const char *p = opath("w.ast");
    put(p, "old\n");
    as_writer *w = as_writer_open(p, 1, 0);
    as_writer_header(w, "test", 0, NULL);
    CHECK_EQ_I64(ntmp("w.ast"), 0);   /* the header is still in the compressor */
    as_writer_abort(w);
    CHECK_EQ_I64(ntmp("w.ast"), 0);
    CHECK_STR(get(p), "old\n");
    w = as_writer_open(p, 1, 0);
    as_writer_header(w, "test", 0, NULL);
    as_writer_close(w);
    CHECK_EQ_I64(ntmp("w.ast"), 0);
    as_reader *r = as_reader_open(p);
    as_record rec;
    CHECK(r && as_reader_next(r, &rec) == 1 && as_rec_is(&rec, "header"));
    as_reader_close(r);
}

TEST(output_keeps_permissions_and_follows_links)
{
    const char *p = opath("mode.txt");
    put(p, "old\n");
    chmod(p, 0600);
    as_out *o = as_out_open(p);
    fputs("new\n", as_out_file(o));
    as_out_close(o);
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_STR(get(p), "new\n");
    const char *l = opath("mode-link.txt");
    unlink(l);
    CHECK(symlink(p, l) == 0);
    o = as_out_open(l);
    fputs("via link\n", as_out_file(o));
    as_out_close(o);
    CHECK(lstat(l, &st) == 0 && S_ISLNK(st.st_mode));   /* the link stays a link */
    CHECK_STR(get(p), "via link\n");
}

/* the ETA of a progress line: the rest of the total at the rate so far */
TEST(progress_eta_from_the_rate_so_far)
{
    char b[48];
    as_progress_eta(b, sizeof b, 30, 25, 100);       /* 30 s for a quarter: 90 s left */
    CHECK_STR(b, ", ETA 1:30");
    as_progress_eta(b, sizeof b, 10, 1, 400);        /* 3990 s left */
    CHECK_STR(b, ", ETA 1:06:30");
    as_progress_eta(b, sizeof b, 2.4, 1, 2);         /* rounded to the second */
    CHECK_STR(b, ", ETA 0:02");
    as_progress_eta(b, sizeof b, 10, 0, 100);        /* nothing done: no estimate */
    CHECK_STR(b, "");
    as_progress_eta(b, sizeof b, 10, 5, 0);          /* no total */
    CHECK_STR(b, "");
    as_progress_eta(b, sizeof b, 10, 100, 100);      /* finished */
    CHECK_STR(b, "");
}
