/* test_common.c - lib/core/common.h's arena and allocation count (the rest of common is
 * exercised by every test and tool). */
#include "unit.h"

#include "common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

TEST(arena_takes_aligned_zeroed_and_reuses_one_block)
{
    as_arena a = { 0 };
    /* a pass larger than one block: pieces aligned, apart, writable; ztake zeroes */
    unsigned char *p[40];
    for (int i = 0; i < 40; i++) {
        p[i] = i % 2 ? as_arena_ztake(&a, 5000 + (size_t)i) : as_arena_take(&a, 5000 + (size_t)i);
        CHECK((uintptr_t)p[i] % 64 == 0);
        if (i % 2) {
            int zero = 1;
            for (size_t k = 0; k < 5000 + (size_t)i; k++) zero &= p[i][k] == 0;
            CHECK(zero);
        }
        memset(p[i], i + 1, 5000 + (size_t)i);
    }
    int kept = 1;
    for (int i = 0; i < 40; i++) kept &= p[i][0] == i + 1 && p[i][4999] == i + 1;
    CHECK(kept);   /* no piece overlaps another */
    const size_t total = a.total;
    CHECK(total >= 40 * 5000);
    /* after the reset the pass's blocks are one of their size: the same pass again
       allocates nothing, and neither does a smaller one; zero bytes is a piece too */
    as_arena_reset(&a);
    CHECK_EQ_I64((int64_t)a.total, (int64_t)total);
    const uint64_t before = as_alloc_count();
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < 40; i++) CHECK(as_arena_take(&a, 5000 + (size_t)i) != NULL);
        CHECK(as_arena_take(&a, 0) != NULL);
        as_arena_reset(&a);
    }
    CHECK_EQ_I64((int64_t)(as_alloc_count() - before), 0);
    /* a larger pass grows it again, once */
    as_arena_take(&a, total + 1);
    CHECK(as_alloc_count() - before == 1);
    as_arena_free(&a);
    CHECK(a.blk == NULL && a.total == 0);
    as_arena_free(NULL);
    as_arena_free(&a);   /* twice: nothing */
}

TEST(alloc_count_counts_the_wrappers)
{
    const uint64_t c0 = as_alloc_count();
    void *x = as_malloc(10), *y = as_calloc(2, 3);
    x = as_realloc(x, 20);
    char *s = as_strdup("abc");
    CHECK_EQ_I64((int64_t)(as_alloc_count() - c0), 4);
    free(x);
    free(y);
    free(s);
}
