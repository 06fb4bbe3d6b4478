/* runner.c - runs the registered unit tests; see unit.h */
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UT_MAX 1024
static struct { const char *name; ut_fn fn; const char *file; } tests[UT_MAX];
static int ntests;
static int cur_failed;
static char tmpdir[256];
static pid_t tmpdir_pid;   /* forked children (tests/unit/records/test_output.c) leave it alone */

void ut_register(const char *name, ut_fn fn, const char *file)
{
    if (ntests == UT_MAX) { fprintf(stderr, "too many tests\n"); exit(2); }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    tests[ntests].file = file;
    ntests++;
}

int ut_check(int ok, const char *expr, const char *file, int line)
{
    if (!ok) {
        fprintf(stderr, "  %s:%d: check failed: %s\n", file, line, expr);
        cur_failed = 1;
    }
    return ok;
}

int ut_check_i64(int64_t a, int64_t b, const char *ea, const char *eb, const char *file, int line)
{
    if (a != b) {
        fprintf(stderr, "  %s:%d: %s == %s failed: %lld != %lld\n", file, line, ea, eb, (long long)a, (long long)b);
        cur_failed = 1;
        return 0;
    }
    return 1;
}

int ut_check_near(double a, double b, double tol, const char *ea, const char *eb, const char *file, int line)
{
    if (!(fabs(a - b) <= tol)) {
        fprintf(stderr, "  %s:%d: %s ~ %s failed: %.9g vs %.9g (tol %g)\n", file, line, ea, eb, a, b, tol);
        cur_failed = 1;
        return 0;
    }
    return 1;
}

int ut_check_str(const char *a, const char *b, const char *ea, const char *eb, const char *file, int line)
{
    if (!a || !b || strcmp(a, b)) {
        fprintf(stderr, "  %s:%d: %s == %s failed: \"%s\" != \"%s\"\n", file, line, ea, eb, a ? a : "(null)", b ? b : "(null)");
        cur_failed = 1;
        return 0;
    }
    return 1;
}

const char *ut_fixture(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("AS_FIXTURES");
    if (root) { snprintf(buf, sizeof buf, "%s/%s", root, rel); return buf; }
    /* the repository's own fixtures: the binary lives in <repo>/<build dir>/, so look two
     * levels up from it; from the repository root as a fallback */
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up < 2; up++) { char *s = strrchr(exe, '/'); if (s) *s = 0; }
        snprintf(buf, sizeof buf, "%s/tests/fixtures/torch-save/%s", exe, rel);
        if (access(buf, R_OK) == 0) return buf;
    }
    snprintf(buf, sizeof buf, "tests/fixtures/torch-save/%s", rel);
    return buf;
}

static void rm_tmpdir(void)
{
    if (tmpdir[0] && getpid() == tmpdir_pid) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd)) { /* best effort */ }
    }
}

const char *ut_tmppath(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", ut_tmpdir(), name);
    return buf;
}

const char *ut_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/as-unit-XXXXXX", t ? t : "/tmp");
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); exit(2); }
        tmpdir_pid = getpid();
        atexit(rm_tmpdir);
    }
    return tmpdir;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1) {
            int want = 0;
            for (int a = 1; a < argc; a++)
                if (strstr(tests[i].name, argv[a]) || strstr(tests[i].file, argv[a])) want = 1;
            if (!want) continue;
        }
        cur_failed = 0;
        tests[i].fn();
        if (cur_failed) { failed++; fprintf(stderr, "FAIL %s (%s)\n", tests[i].name, tests[i].file); }
        else passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
