/* unit.h - a tiny C unit-test harness. Each tests/unit/test_*.c defines tests with
 *   TEST(name) { CHECK(cond); CHECK_EQ_I64(a, b); CHECK_NEAR(a, b, tol); ... }
 * Tests register themselves; tests/unit/runner.c runs them all (or those whose name
 * contains one of the command-line arguments), prints "N passed, N failed" and exits
 * non-zero when any failed. Fixture paths: ut_fixture("pt/x.pt") resolves under
 * $AS_FIXTURES (default tests/fixtures/torch-save, relative to the repository root). Scratch files: ut_tmpdir(). */
#ifndef AS_UNIT_H
#define AS_UNIT_H

#include <stdint.h>
#include <stdio.h>

typedef void (*ut_fn)(void);
void ut_register(const char *name, ut_fn fn, const char *file);
int ut_check(int ok, const char *expr, const char *file, int line);
int ut_check_i64(int64_t a, int64_t b, const char *ea, const char *eb, const char *file, int line);
int ut_check_near(double a, double b, double tol, const char *ea, const char *eb, const char *file, int line);
int ut_check_str(const char *a, const char *b, const char *ea, const char *eb, const char *file, int line);
const char *ut_fixture(const char *rel);  /* static buffer, valid until next call */
const char *ut_tmpdir(void);             /* per-run scratch dir, removed at exit */
/* buf = ut_tmpdir()/name; returns buf */
const char *ut_tmppath(char *buf, size_t len, const char *name);

#define TEST(name) \
    static void name(void); \
    __attribute__((constructor)) static void ut_reg_##name(void) { ut_register(#name, name, __FILE__); } \
    static void name(void)

#define CHECK(c) ut_check(!!(c), #c, __FILE__, __LINE__)
#define CHECK_EQ_I64(a, b) ut_check_i64((int64_t)(a), (int64_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, tol) ut_check_near((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__, __LINE__)
#define CHECK_STR(a, b) ut_check_str((a), (b), #a, #b, __FILE__, __LINE__)

#endif
